"""`keras.ops` NumPy-style functions (Keras 3's `keras.src.ops.numpy`), over tapeflow's
ops: Keras's argument names, defaults and dtype rules (`operation.result_type`), on
tensors and, through `keras_op`, on KerasTensors.

Example:
    >>> tf.keras.ops.mean(tf.constant([1, 2])).numpy()   # ints average in floatx
    1.5
"""
from __future__ import annotations

import builtins

from ..._core import dtypes as _dt
from ...ops import (array as _array, creation as _creation, indexing as _indexing,
                    linalg as _linalg, math as _math, reduction as _reduction)
from .operation import floatx_of, keras_op, promoted, result_type, tensor

__all__ = ["abs", "absolute", "add", "all", "any", "arange", "argmax", "argmin", "clip",
           "concatenate", "cumsum", "divide", "einsum", "equal", "exp", "expand_dims",
           "get_item", "greater", "greater_equal", "less", "less_equal", "log", "matmul",
           "max", "maximum", "mean", "min", "minimum", "multiply", "negative", "not_equal",
           "ones_like", "power", "reshape", "sqrt", "square", "squeeze", "stack", "subtract",
           "sum", "take", "transpose", "true_divide", "where", "zeros_like", "floor_divide",
           "mod", "logical_and", "logical_or", "logical_not", "logical_xor", "round"]


def _axes(axis):
    return None if axis is None else list(axis) if isinstance(axis, (list, tuple)) else axis


# --------------------------------------------------------------------------- elementwise
def _binary(tf_op):
    def compute(x1, x2):
        a, b = promoted(x1, x2)
        return tf_op(a, b)
    return compute


@keras_op()
def add(x1, x2):
    """`x1 + x2` with broadcasting and Keras's dtype promotion.

    Example:
        >>> tf.keras.ops.add(tf.constant([1, 2]), 0.5).numpy()
        array([1.5, 2.5], dtype=float32)
    """
    return _binary(_math.add)(x1, x2)


@keras_op()
def subtract(x1, x2):
    """`x1 - x2` with broadcasting."""
    return _binary(_math.subtract)(x1, x2)


@keras_op()
def multiply(x1, x2):
    """`x1 * x2` with broadcasting."""
    return _binary(_math.multiply)(x1, x2)


@keras_op()
def divide(x1, x2):
    """`x1 / x2`; integers divide in floatx, as Keras's `divide`."""
    dtype = floatx_of(result_type(x1, x2))
    return _math.divide(tensor(x1, dtype), tensor(x2, dtype))


@keras_op()
def true_divide(x1, x2):
    """Same as `divide`."""
    return divide(x1, x2)


@keras_op()
def floor_divide(x1, x2):
    """`x1 // x2` (rounding down)."""
    return _binary(_math.floordiv)(x1, x2)


@keras_op()
def mod(x1, x2):
    """The remainder of `x1 / x2` with the sign of `x2` (Python's `%`)."""
    return _binary(_math.floormod)(x1, x2)


@keras_op()
def power(x1, x2):
    """`x1 ** x2`."""
    return _binary(_math.pow)(x1, x2)


@keras_op()
def maximum(x1, x2):
    """The elementwise maximum."""
    return _binary(_math.maximum)(x1, x2)


@keras_op()
def minimum(x1, x2):
    """The elementwise minimum."""
    return _binary(_math.minimum)(x1, x2)


def _comparison(tf_op):
    def compute(x1, x2):
        a, b = promoted(x1, x2)
        return tf_op(a, b)
    return compute


@keras_op()
def equal(x1, x2):
    """`x1 == x2` elementwise (bool)."""
    return _comparison(_math.equal)(x1, x2)


@keras_op()
def not_equal(x1, x2):
    """`x1 != x2` elementwise (bool)."""
    return _comparison(_math.not_equal)(x1, x2)


@keras_op()
def greater(x1, x2):
    """`x1 > x2` elementwise (bool)."""
    return _comparison(_math.greater)(x1, x2)


@keras_op()
def greater_equal(x1, x2):
    """`x1 >= x2` elementwise (bool)."""
    return _comparison(_math.greater_equal)(x1, x2)


@keras_op()
def less(x1, x2):
    """`x1 < x2` elementwise (bool)."""
    return _comparison(_math.less)(x1, x2)


@keras_op()
def less_equal(x1, x2):
    """`x1 <= x2` elementwise (bool)."""
    return _comparison(_math.less_equal)(x1, x2)


@keras_op()
def logical_and(x1, x2):
    """Elementwise AND of the truth values."""
    return _math.logical_and(tensor(x1, _dt.bool), tensor(x2, _dt.bool))


@keras_op()
def logical_or(x1, x2):
    """Elementwise OR of the truth values."""
    return _math.logical_or(tensor(x1, _dt.bool), tensor(x2, _dt.bool))


@keras_op()
def logical_xor(x1, x2):
    """Elementwise XOR of the truth values."""
    return _math.logical_xor(tensor(x1, _dt.bool), tensor(x2, _dt.bool))


@keras_op()
def logical_not(x):
    """Elementwise NOT of the truth values."""
    return _math.logical_not(tensor(x, _dt.bool))


@keras_op()
def negative(x):
    """`-x`."""
    return _math.negative(tensor(x))


@keras_op()
def abs(x):  # noqa: A001 - Keras's name
    """`|x|` elementwise.

    Example:
        >>> tf.keras.ops.abs(tf.constant([-1.0, 2.0])).numpy()
        array([1., 2.], dtype=float32)
    """
    return _math.abs(tensor(x))


absolute = abs


def _floating_unary(tf_op):
    def compute(x):
        x = tensor(x)
        return tf_op(x if x.dtype.is_floating or x.dtype.is_complex
                     else _math.cast(x, floatx_of(x.dtype)))
    return compute


@keras_op()
def sqrt(x):
    """The square root; integers in floatx."""
    return _floating_unary(_math.sqrt)(x)


@keras_op()
def exp(x):
    """`e ** x`; integers in floatx."""
    return _floating_unary(_math.exp)(x)


@keras_op()
def log(x):
    """The natural logarithm; integers in floatx."""
    return _floating_unary(_math.log)(x)


@keras_op()
def square(x):
    """`x * x` (bools as int32)."""
    x = tensor(x)
    return _math.square(_math.cast(x, _dt.int32) if x.dtype.is_bool else x)


@keras_op(config=("decimals",))
def round(x, decimals=0):  # noqa: A001 - Keras's name
    """Round half to even, to `decimals` places."""
    x = tensor(x)
    if decimals == 0:
        return _math.round(x)
    factor = 10.0 ** decimals
    dtype = floatx_of(x.dtype)
    return _math.cast(_math.round(_math.cast(x, dtype) * factor) / factor, x.dtype)


@keras_op(config=("x_min", "x_max"))
def clip(x, x_min, x_max):
    """`x` limited to `[x_min, x_max]` (bools as int32).

    Example:
        >>> tf.keras.ops.clip(tf.constant([-2.0, 0.5, 3.0]), 0.0, 1.0).numpy()
        array([0. , 0.5, 1. ], dtype=float32)
    """
    x = tensor(x)
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.int32)
    return _math.clip_by_value(x, tensor(x_min, x.dtype), tensor(x_max, x.dtype))


@keras_op()
def where(condition, x1=None, x2=None):
    """`x1` where `condition`, else `x2` (both broadcast); with neither, the indices of
    the true entries as a tuple of int64 vectors per axis (NumPy's `nonzero`)."""
    condition = tensor(condition, _dt.bool)
    if x1 is None and x2 is None:
        found = _indexing.where(condition)
        return tuple(found[:, i] for i in builtins.range(condition.ndim))
    if x1 is None or x2 is None:
        raise ValueError("keras.ops.where: give both x1 and x2, or neither")
    a, b = promoted(x1, x2)
    return _indexing.where(condition, a, b)


# --------------------------------------------------------------------------- reductions
@keras_op(config=("axis", "keepdims"))
def mean(x, axis=None, keepdims=False):
    """The mean over `axis` (all by default); integers average in floatx.

    Example:
        >>> tf.keras.ops.mean(tf.constant([[1.0, 3.0]]), axis=1).numpy()
        array([2.], dtype=float32)
    """
    x = tensor(x)
    return _reduction.reduce_mean(_math.cast(x, floatx_of(x.dtype)), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def sum(x, axis=None, keepdims=False):  # noqa: A001 - Keras's name
    """The sum over `axis`; bools and small ints sum as int32."""
    x = tensor(x)
    if x.dtype.is_bool or x.dtype.is_integer and x.dtype.size < 4:
        x = _math.cast(x, _dt.int32)
    return _reduction.reduce_sum(x, _axes(axis), keepdims)


def _extreme(reduce, x, axis, keepdims, initial, pick):
    x = tensor(x)
    if axis is None and x.ndim and 0 in x.shape and initial is None:
        raise ValueError("Cannot compute the max/min of an empty tensor without `initial`")
    out = reduce(x, _axes(axis), keepdims)
    return out if initial is None else pick(out, tensor(initial, x.dtype))


@keras_op(config=("axis", "keepdims", "initial"))
def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001 - Keras's name
    """The maximum over `axis`, at least `initial` when given."""
    return _extreme(_reduction.reduce_max, x, axis, keepdims, initial, _math.maximum)


@keras_op(config=("axis", "keepdims", "initial"))
def min(x, axis=None, keepdims=False, initial=None):  # noqa: A001 - Keras's name
    """The minimum over `axis`, at most `initial` when given."""
    return _extreme(_reduction.reduce_min, x, axis, keepdims, initial, _math.minimum)


@keras_op(config=("axis", "keepdims"))
def all(x, axis=None, keepdims=False):  # noqa: A001 - Keras's name
    """Whether every entry over `axis` is true."""
    return _reduction.reduce_all(tensor(x, _dt.bool), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def any(x, axis=None, keepdims=False):  # noqa: A001 - Keras's name
    """Whether some entry over `axis` is true."""
    return _reduction.reduce_any(tensor(x, _dt.bool), _axes(axis), keepdims)


def _arg(reduce, x, axis, keepdims):
    x = tensor(x)
    if axis is None:
        flat = _array.reshape(x, [-1])
        out = _math.cast(reduce(flat, axis=0), _dt.int32)
        return _array.reshape(out, [1] * x.ndim) if keepdims else out
    out = _math.cast(reduce(x, axis=axis), _dt.int32)
    return _array.expand_dims(out, axis) if keepdims else out


@keras_op(config=("axis", "keepdims"))
def argmax(x, axis=None, keepdims=False):
    """The index of the largest entry along `axis` (of the flattened tensor when None),
    int32 as Keras's.

    Example:
        >>> tf.keras.ops.argmax(tf.constant([[1.0, 5.0, 2.0]]), axis=-1).numpy()
        array([1], dtype=int32)
    """
    return _arg(_reduction.argmax, x, axis, keepdims)


@keras_op(config=("axis", "keepdims"))
def argmin(x, axis=None, keepdims=False):
    """The index of the smallest entry along `axis` (flattened when None), int32."""
    return _arg(_reduction.argmin, x, axis, keepdims)


@keras_op(config=("axis", "dtype"))
def cumsum(x, axis=None, dtype=None):
    """Running sums along `axis` (of the flattened tensor when None)."""
    x = tensor(x, dtype)
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.int32)
    if axis is None:
        return _reduction.cumsum(_array.reshape(x, [-1]), axis=0)
    return _reduction.cumsum(x, axis=axis)


# --------------------------------------------------------------------------- shapes
@keras_op(config=("newshape",))
def reshape(x, newshape):
    """`x` with shape `newshape` (one entry may be -1).

    Example:
        >>> tf.keras.ops.reshape(tf.range(6), (2, 3)).shape
        TensorShape([2, 3])
    """
    return _array.reshape(tensor(x), list(newshape) if isinstance(newshape, (list, tuple))
                          else [newshape])


@keras_op(config=("axes",))
def transpose(x, axes=None):
    """`x` with its axes permuted (reversed when `axes` is None)."""
    return _array.transpose(tensor(x), None if axes is None else list(axes))


@keras_op(config=("axis",))
def expand_dims(x, axis):
    """`x` with new size-1 axes at `axis` (an int or several)."""
    x = tensor(x)
    if isinstance(axis, (list, tuple)):
        rank = x.ndim + len(axis)
        for a in sorted(a % rank for a in axis):
            x = _array.expand_dims(x, a)
        return x
    return _array.expand_dims(x, axis)


@keras_op(config=("axis",))
def squeeze(x, axis=None):
    """`x` without its size-1 axes (those of `axis` only, when given)."""
    x = tensor(x)
    if axis is None:
        return _array.squeeze(x)
    return _array.squeeze(x, list(axis) if isinstance(axis, (list, tuple)) else [axis])


@keras_op(config=("axis",))
def concatenate(xs, axis=0):
    """The tensors of `xs` joined along `axis` (None: flattened first), in their common
    dtype."""
    parts = promoted(*xs)
    if axis is None:
        parts, axis = [_array.reshape(p, [-1]) for p in parts], 0
    return _array.concat(parts, axis=axis)


@keras_op(config=("axis",))
def stack(x, axis=0):
    """The tensors of `x` stacked along a new `axis`."""
    return _array.stack(promoted(*x), axis=axis)


@keras_op(config=("axis",))
def take(x, indices, axis=None):
    """The entries of `x` at `indices` along `axis` (of the flattened `x` when None);
    negative indices count from the end.

    Example:
        >>> tf.keras.ops.take(tf.constant([[1, 2], [3, 4]]), [1, -1], axis=1).numpy()
        array([[2, 2],
               [4, 4]], dtype=int32)
    """
    x = tensor(x)
    indices = tensor(indices)
    if not indices.dtype.is_integer:
        indices = _math.cast(indices, _dt.int32)
    if axis is None:
        x, axis = _array.reshape(x, [-1]), 0
    size = _array.shape(x, out_type=indices.dtype)[axis]
    indices = _indexing.where(_math.less(indices, 0), indices + size, indices)
    return _indexing.gather(x, indices, axis=axis)


@keras_op()
def get_item(x, key):
    """`x[key]` (what `kt[...]` on a KerasTensor records)."""
    if isinstance(key, list) and builtins.all(
            k is None or k is Ellipsis or isinstance(k, (int, builtins.slice)) for k in key):
        key = tuple(key)  # a tuple key comes back from a .keras file as a list
    return tensor(x)[key]


# --------------------------------------------------------------------------- products
@keras_op()
def matmul(x1, x2):
    """The matrix product (batched over leading axes; 1-D operands as NumPy's)."""
    a, b = promoted(x1, x2)
    if a.ndim == 1 and b.ndim == 1:
        return _reduction.reduce_sum(a * b)
    if a.ndim == 1:
        return _array.squeeze(_linalg.matmul(_array.expand_dims(a, 0), b), [-2])
    if b.ndim == 1:
        return _array.squeeze(_linalg.matmul(a, _array.expand_dims(b, -1)), [-1])
    if a.dtype.is_bool or a.dtype.is_integer and a.dtype.size < 4:
        a, b = _math.cast(a, _dt.int32), _math.cast(b, _dt.int32)
    return _linalg.matmul(a, b)


@keras_op(config=("subscripts",))
def einsum(subscripts, *operands):
    """Einstein summation over `operands` as `subscripts` says.

    Example:
        >>> tf.keras.ops.einsum("ij,j->i", tf.ones([2, 3]), tf.ones([3])).numpy()
        array([3., 3.], dtype=float32)
    """
    return _linalg.einsum(subscripts, *promoted(*operands))


# --------------------------------------------------------------------------- creation
def arange(start=0, stop=None, step=1, dtype=None):
    """Evenly spaced values in `[start, stop)`; int32 for ints, floatx for floats.

    Example:
        >>> tf.keras.ops.arange(3).numpy()
        array([0, 1, 2], dtype=int32)
    """
    if stop is None:
        start, stop = 0, start
    dtype = _dt.as_dtype(dtype) if dtype is not None else result_type(start, stop, step)
    return _creation.range(tensor(start, dtype), tensor(stop, dtype), tensor(step, dtype),
                           dtype=dtype)


@keras_op(config=("dtype",))
def ones_like(x, dtype=None):
    """Ones shaped as `x` (its dtype unless given)."""
    x = tensor(x)
    return _creation.ones_like(x, dtype=dtype or x.dtype)


@keras_op(config=("dtype",))
def zeros_like(x, dtype=None):
    """Zeros shaped as `x` (its dtype unless given)."""
    x = tensor(x)
    return _creation.zeros_like(x, dtype=dtype or x.dtype)
