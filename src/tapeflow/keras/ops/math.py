"""`keras.ops` math functions (Keras 3's `keras.src.ops.math`): `logsumexp`, ...

Example:
    >>> round(float(tf.keras.ops.logsumexp(tf.constant([0.0, 0.0]))), 4)
    0.6931
"""
from __future__ import annotations

from ...ops import math as _math, reduction as _reduction
from .operation import floatx_of, keras_op, tensor

__all__ = ["logsumexp"]


@keras_op("math", config=("axis", "keepdims"))
def logsumexp(x, axis=None, keepdims=False):
    """`log(sum(exp(x)))` over `axis`, computed stably."""
    x = tensor(x)
    x = x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))
    return _reduction.reduce_logsumexp(
        x, list(axis) if isinstance(axis, (list, tuple)) else axis, keepdims)
