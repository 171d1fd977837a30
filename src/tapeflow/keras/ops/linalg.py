"""`keras.ops` linear algebra (Keras 3's `keras.src.ops.linalg`): `norm`, ...

Example:
    >>> float(tf.keras.ops.norm(tf.constant([3.0, 4.0])))
    5.0
"""
from __future__ import annotations

from ...ops import linalg as _linalg, math as _math, reduction as _reduction
from .operation import floatx_of, keras_op, tensor

__all__ = ["norm"]


@keras_op("linalg", config=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - Keras's name
    """NumPy's `linalg.norm`: the 2-norm of vectors (or of the flattened tensor when
    `axis` is None and `ord` is None), the Frobenius norm of matrices; `ord` as NumPy's."""
    x = tensor(x)
    x = x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))
    if axis is None and ord is None:
        return _reduction.reduce_euclidean_norm(x, None, keepdims) if not keepdims else \
            _math.sqrt(_reduction.reduce_sum(_math.square(x), None, keepdims=True))
    if isinstance(axis, int):
        axis = [axis]
    if axis is None:
        axis = list(range(x.ndim))
    if len(axis) == 1:
        a = axis[0]
        if ord is None or ord == 2:
            return _math.sqrt(_reduction.reduce_sum(_math.square(x), a, keepdims))
        if ord == float("inf"):
            return _reduction.reduce_max(_math.abs(x), a, keepdims)
        if ord == -float("inf"):
            return _reduction.reduce_min(_math.abs(x), a, keepdims)
        if ord == 0:
            return _reduction.reduce_sum(_math.cast(_math.not_equal(x, 0), x.dtype), a,
                                         keepdims)
        if isinstance(ord, str):
            raise ValueError(f"keras.ops.norm: invalid ord {ord!r} for a vector norm")
        p = float(ord)
        return _math.pow(_reduction.reduce_sum(_math.pow(_math.abs(x), p), a, keepdims),
                         1.0 / p)
    if len(axis) != 2:
        raise ValueError(f"keras.ops.norm: axis must be None, an int or a pair, got {axis}")
    if ord in (None, "fro"):
        return _math.sqrt(_reduction.reduce_sum(_math.square(x), list(axis), keepdims))
    return _linalg.norm(x, ord=ord, axis=tuple(axis), keepdims=keepdims)
