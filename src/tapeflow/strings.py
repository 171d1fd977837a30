"""`tapeflow.strings` (`tf.strings`): operations on string tensors.

Example:
    >>> import tapeflow as tf
    >>> tf.strings.upper(tf.strings.join(["a", "b"], separator="-")).numpy()
    b'A-B'
"""
from .ops.strings import (as_string, bytes_split, format, join, length,  # noqa: F401,A004
                          lower, reduce_join, regex_full_match, regex_replace, split, strip,
                          substr, to_hash_bucket_fast, to_hash_bucket_strong, to_number,
                          unicode_decode, unicode_encode, unicode_split, upper)

__all__ = ["as_string", "bytes_split", "format", "join", "length", "lower", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr",
           "to_hash_bucket_fast", "to_hash_bucket_strong", "to_number", "unicode_decode",
           "unicode_encode", "unicode_split", "upper"]
