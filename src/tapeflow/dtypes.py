"""`tapeflow.dtypes`: the DType class, every dtype object, `as_dtype` and casts.

Example:
    >>> import tapeflow as tf
    >>> tf.dtypes.float32 is tf.float32, tf.dtypes.as_dtype("int64")
    (True, tf.int64)
"""
from ._core.dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128,  # noqa: F401
                           float16, float32, float64, int8, int16, int32, int64, uint8,
                           string, uint16, uint32, uint64)
from .ops.image import saturate_cast  # noqa: F401
from .ops.math import cast, complex  # noqa: F401

half = float16
double = float64
