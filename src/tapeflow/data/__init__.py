"""`tf.data`: input pipelines (`Dataset`), read lazily, eagerly or inside `function`.

Example:
    >>> import tapeflow as tf
    >>> ds = tf.data.Dataset.range(6).shuffle(6, seed=0).batch(3)
    >>> sorted(int(x) for b in ds for x in b)
    [0, 1, 2, 3, 4, 5]
"""
import types as _types

from .dataset import Dataset
from .functions import enable_debug_mode as _enable_debug_mode
from .iterator import Iterator, Optional
from .readers import TFRecordDataset, TextLineDataset
from .options import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Options

__all__ = ["Dataset", "Iterator", "Optional", "Options", "AUTOTUNE", "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY", "experimental", "TFRecordDataset", "TextLineDataset"]

# TensorFlow's tf.data.experimental names that code still uses
experimental = _types.SimpleNamespace(
    AUTOTUNE=AUTOTUNE, INFINITE_CARDINALITY=INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY=UNKNOWN_CARDINALITY, enable_debug_mode=_enable_debug_mode,
    cardinality=lambda dataset: dataset.cardinality())
