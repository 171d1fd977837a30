"""`tf.io`: files, tensor serialization, CSV and raw decoding, `tf.train.Example` parsing,
TFRecord writing and `gfile` (see ops/io_files.py).

Example:
    >>> tf.io.parse_tensor(tf.io.serialize_tensor(tf.constant([1, 2])), tf.int32).numpy()
    array([1, 2], dtype=int32)
"""
from .ops.io_files import (FixedLenFeature, FixedLenSequenceFeature, GFile,  # noqa: F401
                           TFRecordOptions, TFRecordWriter, VarLenFeature, decode_csv,
                           decode_raw, gfile, parse_example, parse_single_example,
                           parse_tensor, read_file, serialize_tensor, tf_record_iterator,
                           write_file)

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "GFile",
           "TFRecordOptions", "TFRecordWriter", "decode_csv", "decode_raw", "gfile",
           "parse_example", "parse_single_example", "parse_tensor", "read_file",
           "serialize_tensor", "tf_record_iterator", "write_file"]
