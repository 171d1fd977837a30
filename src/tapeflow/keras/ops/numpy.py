"""`keras.ops` NumPy-style functions (Keras 3's `keras.src.ops.numpy`), over tapeflow's
ops: Keras's argument names, defaults and dtype rules (`operation.result_type`), on
tensors and, through `keras_op`, on KerasTensors.

Example:
    >>> float(tf.keras.ops.mean(tf.constant([1, 2])))   # ints average in floatx
    1.5
"""
from __future__ import annotations

import builtins
import functools

import numpy as np

from ..._core import dtypes as _dt
from ...ops import (array as _array, creation as _creation, indexing as _indexing,
                    linalg as _linalg, math as _math, reduction as _reduction)
from ...function import map_fn as _map_fn
from ..layer import is_symbolic
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


@keras_op()
def absolute(x):
    """Same as `abs`."""
    return _math.abs(tensor(x))


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


@keras_op(config=("subscripts",), name="Einsum")
def _einsum_op(*operands, subscripts):
    return einsum(subscripts, *operands)


def einsum(subscripts, *operands):
    """Einstein summation over `operands` as `subscripts` says.

    Example:
        >>> tf.keras.ops.einsum("ij,j->i", tf.ones([2, 3]), tf.ones([3])).numpy()
        array([3., 3.], dtype=float32)
    """
    if is_symbolic(operands):
        # the Operation takes the tensors first and the subscripts as its config
        return _einsum_op(*operands, subscripts=subscripts)
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


# =========================================================================== the rest
# Keras 3's remaining NumPy functions. Families of one-argument functions share a
# compute rule, so they are made by `_define`, which names the function (and so its
# Operation, as Keras 3 names it) and lists it in `__all__`.
def _define(name: str, compute, doc: str, config: tuple = (), cls: str | None = None):
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = doc
    op = keras_op("numpy", config=config, name=cls)(compute)
    globals()[name] = op
    __all__.append(name)
    return op


def _float(x):
    """`x` as a tensor in a floating dtype (ints and bools in floatx), as Keras's
    transcendental functions compute."""
    x = tensor(x)
    return x if x.dtype.is_floating or x.dtype.is_complex else \
        _math.cast(x, floatx_of(x.dtype))


def _const(value, like):
    return tensor(value, like.dtype)


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))


def _cbrt(x):
    return _math.sign(x) * _math.pow(_math.abs(x), _const(1.0 / 3.0, x))


def _sinc(x):
    # sin(pi x)/(pi x) with the removable singularity at 0 filled, and a safe
    # denominator so that the gradient at 0 stays finite
    zero = _math.equal(x, 0)
    safe = _indexing.where(zero, _creation.ones_like(x), x) * _const(np.pi, x)
    return _indexing.where(zero, _creation.ones_like(x), _math.sin(safe) / safe)


def _i0(x):
    # the power series of the modified Bessel function I0, summed in float64 for
    # accuracy (terms up to |x| ~ 30 stay far below the float64 range)
    x64 = _math.cast(x, _dt.float64)
    quarter = _math.square(x64) * 0.25
    term, total = _creation.ones_like(x64), _creation.ones_like(x64)
    for k in builtins.range(1, 80):
        term = term * quarter / float(k * k)
        total = total + term
    return _math.cast(total, x.dtype)


def _angle(x):
    if x.dtype.is_complex:
        return _math.angle(x)
    return _math.atan2(_creation.zeros_like(x), x)


def _wide_float(dtype):
    """Keras's `result_type(dtype, float)`: floatx for ints, but float64 for 64-bit ones
    (what a few functions compute in)."""
    return _dt.float64 if dtype.name in ("int64", "uint64") else floatx_of(dtype)


def _wide_unary(tf_op):
    def compute(x):
        x = tensor(x)
        return tf_op(x if x.dtype.is_floating or x.dtype.is_complex
                     else _math.cast(x, _wide_float(x.dtype)))
    return compute


_FLOAT_UNARY = {
    "arccos": (_math.acos, "The inverse cosine."),
    "arccosh": (_math.acosh, "The inverse hyperbolic cosine."),
    "arcsin": (_math.asin, "The inverse sine."),
    "arcsinh": (_math.asinh, "The inverse hyperbolic sine."),
    "arctan": (_math.atan, "The inverse tangent."),
    "arctanh": (_math.atanh, "The inverse hyperbolic tangent."),
    "cos": (_math.cos, "The cosine."), "cosh": (_math.cosh, "The hyperbolic cosine."),
    "sin": (_math.sin, "The sine."), "sinh": (_math.sinh, "The hyperbolic sine."),
    "tan": (_math.tan, "The tangent."), "tanh": (_math.tanh, "The hyperbolic tangent."),
    "expm1": (_math.expm1, "`exp(x) - 1`, accurate near 0."),
    "log1p": (_math.log1p, "`log(1 + x)`, accurate near 0."),
    "log2": (lambda x: _math.log(x) / _const(_LN2, x), "The base-2 logarithm."),
    "log10": (lambda x: _math.log(x) / _const(_LN10, x), "The base-10 logarithm."),
    "exp2": (lambda x: _math.exp(x * _const(_LN2, x)), "`2 ** x`."),
    "cbrt": (_cbrt, "The real cube root."),
    "deg2rad": (lambda x: x * _const(np.pi / 180.0, x), "Degrees to radians."),
    "rad2deg": (lambda x: x * _const(180.0 / np.pi, x), "Radians to degrees."),
    "sinc": (_sinc, "The normalized sinc, `sin(pi x) / (pi x)` (1 at 0)."),
    "i0": (_i0, "The modified Bessel function of the first kind, order 0."),
    "fabs": (_math.abs, "`|x|` in a floating dtype."),
    "floor": (_math.floor, "Rounding down (ints in floatx, as Keras)."),
    "ceil": (_math.ceil, "Rounding up (ints in floatx, as Keras)."),
    "reciprocal": (_math.reciprocal, "`1 / x`."),
    "angle": (_angle, "The complex argument (0 or pi for reals)."),
}


def _float_unary(tf_op):
    def compute(x):
        return tf_op(_float(x))
    return compute


_WIDE = ("cbrt", "deg2rad", "rad2deg", "i0")  # int64 -> float64 in Keras
for _name, (_fn, _doc) in _FLOAT_UNARY.items():
    _define(_name, (_wide_unary if _name in _WIDE else _float_unary)(_fn),
            _doc + " Integers and bools compute in floatx.\n\n"
            f"    Example:\n        >>> tf.keras.ops.{_name}(tf.constant([0.5])).shape\n"
            "        TensorShape([1])\n")


def _trunc(x):
    x = tensor(x)
    if not x.dtype.is_floating:
        return x
    return _math.sign(x) * _math.floor(_math.abs(x))


def _sign(x):
    x = tensor(x)
    return _math.sign(x)


def _real(x):
    x = tensor(x)
    return _math.real(x) if x.dtype.is_complex else x


def _imag(x):
    x = tensor(x)
    return _math.imag(x) if x.dtype.is_complex else _creation.zeros_like(x)


def _conj(x):
    x = tensor(x)
    return _math.conj(x) if x.dtype.is_complex else x


def _copy(x):
    return _array.identity(tensor(x))


def _ravel(x):
    return _array.reshape(tensor(x), [-1])


_SAME_DTYPE_UNARY = {
    "trunc": (_trunc, "Rounding toward zero (ints and bools unchanged)."),
    "sign": (_sign, "-1, 0 or 1 by the sign of `x`, in `x`'s dtype."),
    "real": (_real, "The real part (reals unchanged)."),
    "imag": (_imag, "The imaginary part (zeros for reals)."),
    "conj": (_conj, "The complex conjugate (reals unchanged)."),
    "copy": (_copy, "A copy of `x`."),
    "ravel": (_ravel, "`x` flattened to 1-D."),
}
for _name, (_fn, _doc) in _SAME_DTYPE_UNARY.items():
    _define(_name, _fn, _doc)
_define("conjugate", _conj, "Same as `conj`.")


def _is_float_test(test, ints_are):
    def compute(x):
        x = tensor(x)
        if not (x.dtype.is_floating or x.dtype.is_complex):
            return _creation.fill(_array.shape(x), ints_are)
        return test(x)
    return compute


def _signbit(x):
    x = tensor(x)
    if x.dtype.is_bool:
        return _creation.zeros_like(x)
    negative = _math.less(x, 0)
    if not x.dtype.is_floating:
        return negative
    # -0.0 has its sign bit set: 1 / -0.0 is -inf
    negative_zero = _math.logical_and(_math.equal(x, 0), _math.less(_math.reciprocal(x), 0))
    return _math.logical_or(negative, negative_zero)


_BOOL_UNARY = {
    "isnan": (_is_float_test(_math.is_nan, False), "Whether each entry is NaN."),
    "isinf": (_is_float_test(_math.is_inf, False), "Whether each entry is +-inf."),
    "isfinite": (_is_float_test(_math.is_finite, True), "Whether each entry is finite."),
    "isposinf": (_is_float_test(lambda x: _math.equal(x, _const(np.inf, x)), False),
                 "Whether each entry is +inf."),
    "isneginf": (_is_float_test(lambda x: _math.equal(x, _const(-np.inf, x)), False),
                 "Whether each entry is -inf."),
    "isreal": (lambda x: _math.equal(_imag(x), 0), "Whether each entry has no imaginary "
               "part."),
    "signbit": (_signbit, "Whether each entry's sign bit is set (-0.0 included)."),
}
for _name, (_fn, _doc) in _BOOL_UNARY.items():
    _define(_name, _fn, _doc)


# --------------------------------------------------------------------------- binary
def _float_pair(x1, x2):
    dtype = floatx_of(result_type(x1, x2))
    return tensor(x1, dtype), tensor(x2, dtype)


def _wide_float_pair(x1, x2):
    dtype = _wide_float(result_type(x1, x2))
    return tensor(x1, dtype), tensor(x2, dtype)




def _hypot(a, b):
    return _math.sqrt(_math.square(a) + _math.square(b))


def _logaddexp(a, b):
    big = _math.maximum(a, b)
    # equal infinities: log(2 e^inf) is inf, but inf - inf would be NaN
    diff = _indexing.where(_math.equal(a, b), _creation.zeros_like(a), -_math.abs(a - b))
    return big + _math.log1p(_math.exp(diff))


def _logaddexp2(a, b):
    ln2 = _const(_LN2, a)
    return _logaddexp(a * ln2, b * ln2) / ln2


def _heaviside(a, b):
    zero = _creation.zeros_like(a)
    return _indexing.where(_math.less(a, 0), zero, _indexing.where(
        _math.greater(a, 0), _creation.ones_like(a), b + zero))


def _fminmax(pick):
    def compute(x1, x2):
        a, b = promoted(x1, x2)
        if not a.dtype.is_floating:
            return pick(a, b)
        return _indexing.where(_math.is_nan(a), b, _indexing.where(_math.is_nan(b), a,
                                                                   pick(a, b)))
    return compute


def _fmod(x1, x2):
    a, b = promoted(x1, x2)
    if a.dtype.is_bool:
        a, b = _math.cast(a, _dt.int32), _math.cast(b, _dt.int32)
    r = _math.floormod(a, b)
    # floormod takes the divisor's sign; C's fmod takes the dividend's
    fix = _math.logical_and(_math.not_equal(r, 0),
                            _math.not_equal(_math.less(r, 0), _math.less(a, 0)))
    return _indexing.where(fix, r - b, r)


def _ldexp(x1, x2):
    x2 = tensor(x2)
    if x2.dtype.is_floating:
        raise TypeError("keras.ops.ldexp: x2 must be an integer tensor")
    a = _float(x1) if not isinstance(x1, (int, float)) else tensor(x1, _dt.float32)
    return a * _math.pow(_const(2.0, a), _math.cast(x2, a.dtype))


def _gcd(x1, x2):
    a, b = promoted(x1, x2)
    if a.dtype.is_floating:
        raise TypeError("keras.ops.gcd: the arguments must be integers")
    a, b = _math.abs(a), _math.abs(b)
    a, b = a + _creation.zeros_like(b), b + _creation.zeros_like(a)
    # Euclid's algorithm, enough steps for any 64-bit pair (Fibonacci bound)
    for _ in builtins.range(93):
        nonzero = _math.not_equal(b, 0)
        safe = _indexing.where(nonzero, b, _creation.ones_like(b))
        a, b = (_indexing.where(nonzero, b, a),
                _indexing.where(nonzero, _math.floormod(a, safe), b))
    return a


def _lcm(x1, x2):
    a, b = promoted(x1, x2)
    g = _gcd(a, b)
    safe = _indexing.where(_math.equal(g, 0), _creation.ones_like(g), g)
    return _math.abs(_math.floordiv(a, safe) * b)


def _divide_no_nan(x1, x2):
    a, b = _float_pair(x1, x2)
    return _math.divide_no_nan(a, b)


_FLOAT_BINARY = {
    "arctan2": (_math.atan2, "The angle of the point `(x2, x1)` (quadrant aware)."),

    "logaddexp": (_logaddexp, "`log(exp(x1) + exp(x2))`, computed stably."),
    "logaddexp2": (_logaddexp2, "`log2(2**x1 + 2**x2)`, computed stably."),
}


def _float_binary(tf_op):
    def compute(x1, x2):
        return tf_op(*_float_pair(x1, x2))
    return compute


for _name, (_fn, _doc) in _FLOAT_BINARY.items():
    _define(_name, _float_binary(_fn), _doc + " Integers compute in floatx.")

_BINARY = {
    "heaviside": (lambda x1, x2: _heaviside(*_wide_float_pair(x1, x2)),
                  "The Heaviside step: 0 below 0, 1 above, `x2` at 0 (in floats)."),
    "hypot": (lambda x1, x2: _hypot(*_wide_float_pair(x1, x2)), "`sqrt(x1**2 + x2**2)`."),
    "fmax": (_fminmax(_math.maximum), "The elementwise maximum, ignoring NaNs."),
    "fmin": (_fminmax(_math.minimum), "The elementwise minimum, ignoring NaNs."),
    "fmod": (_fmod, "The remainder of `x1 / x2` with the sign of `x1` (C's fmod)."),
    "ldexp": (_ldexp, "`x1 * 2 ** x2` (`x2` integer)."),
    "gcd": (_gcd, "The greatest common divisor of integers."),
    "lcm": (_lcm, "The least common multiple of integers."),
    "divide_no_nan": (_divide_no_nan, "`x1 / x2`, 0 where `x2` is 0."),
}
for _name, (_fn, _doc) in _BINARY.items():
    _define(_name, _fn, _doc)


def _shift_pair(x, y):
    a, b = promoted(x, y)
    if not a.dtype.is_integer:
        raise TypeError(f"keras.ops: bit shifts need integer tensors, got {a.dtype.name}")
    return a, _math.pow(_const(2, a), b)


@keras_op()
def left_shift(x, y):
    """`x << y` for integers.

    Example:
        >>> tf.keras.ops.left_shift(tf.constant([1, 3]), 2).numpy()
        array([ 4, 12], dtype=int32)
    """
    a, scale = _shift_pair(x, y)
    return a * scale


@keras_op()
def right_shift(x, y):
    """`x >> y` for integers (arithmetic: rounds down)."""
    a, scale = _shift_pair(x, y)
    return _math.floordiv(a, scale)


@keras_op()
def bitwise_left_shift(x, y):
    """Same as `left_shift`."""
    return left_shift(x, y)


@keras_op()
def bitwise_right_shift(x, y):
    """Same as `right_shift`."""
    return right_shift(x, y)


def _invert(x):
    x = tensor(x)
    if x.dtype.is_bool:
        return _math.logical_not(x)
    if not x.dtype.is_integer:
        raise TypeError(f"keras.ops.bitwise_invert: needs integers or bools, got "
                        f"{x.dtype.name}")
    if x.dtype.name.startswith("uint"):
        return _const(np.iinfo(x.dtype.as_numpy_dtype).max, x) - x
    return -x - _const(1, x)  # two's complement: ~x == -x - 1


@keras_op()
def bitwise_invert(x):
    """`~x`: bits flipped (NOT for bools)."""
    return _invert(x)


@keras_op()
def bitwise_not(x):
    """Same as `bitwise_invert`."""
    return _invert(x)


def _bitwise(combine, x, y):
    a, b = promoted(x, y)
    if a.dtype.is_bool:
        return combine(a, b, True)
    if not a.dtype.is_integer:
        raise TypeError(f"keras.ops: bitwise functions need integers, got {a.dtype.name}")
    bits = a.dtype.size * 8
    work = _dt.int64 if bits < 64 else a.dtype
    aw, bw = _math.cast(a, work), _math.cast(b, work)
    out = _creation.zeros_like(aw + bw)
    two = _const(2, aw)
    # bit by bit over the two's complement digits (floor division shifts arithmetically)
    for k in builtins.range(bits):
        scale = _const(2 ** k if k < 63 else -(2 ** 63), aw)
        shift = _const(2 ** k, aw) if k < 63 else None
        abit = _math.floormod(_math.floordiv(aw, shift), two) if shift is not None else \
            _math.cast(_math.less(aw, 0), work)
        bbit = _math.floormod(_math.floordiv(bw, shift), two) if shift is not None else \
            _math.cast(_math.less(bw, 0), work)
        bit = combine(abit, bbit, False)
        if k == bits - 1 and a.dtype.name.startswith("int") and bits < 64:
            scale = _const(-(2 ** k), aw)  # the sign bit
        out = out + bit * scale
    return _math.cast(out, a.dtype)


_BITWISE = {
    "bitwise_and": lambda p, q, b: _math.logical_and(p, q) if b else p * q,
    "bitwise_or": lambda p, q, b: _math.logical_or(p, q) if b else p + q - p * q,
    "bitwise_xor": lambda p, q, b: _math.logical_xor(p, q) if b else _math.abs(p - q),
}
for _name, _combine in _BITWISE.items():
    _define(_name, (lambda c: lambda x, y: _bitwise(c, x, y))(_combine),
            f"`x {dict(bitwise_and='&', bitwise_or='|', bitwise_xor='^')[_name]} y` "
            "elementwise (integers and bools).")


# --------------------------------------------------------------------------- reductions
def _norm_axes(axis, ndim):
    if axis is None:
        return list(builtins.range(ndim))
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    return sorted(a % ndim if ndim else a for a in axes)


def _widened(x):
    """Bools and small ints as Keras's sums and products take them."""
    if x.dtype.is_bool or x.dtype.name in ("int8", "int16"):
        return _math.cast(x, _dt.int32)
    if x.dtype.name in ("uint8", "uint16"):
        return _math.cast(x, _dt.uint32)
    return x


@keras_op(config=("axis", "keepdims", "dtype"))
def prod(x, axis=None, keepdims=False, dtype=None):
    """The product over `axis` (bools and small ints as 32-bit).

    Example:
        >>> tf.keras.ops.prod(tf.constant([[1, 2], [3, 4]]), axis=1).numpy()
        array([ 2, 12], dtype=int32)
    """
    x = _widened(tensor(x, dtype))
    return _reduction.reduce_prod(x, _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def var(x, axis=None, keepdims=False):
    """The population variance over `axis` (floatx for ints)."""
    return _reduction.reduce_variance(_float(x), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def std(x, axis=None, keepdims=False):
    """The population standard deviation over `axis` (floatx for ints)."""
    return _reduction.reduce_std(_float(x), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def amax(x, axis=None, keepdims=False):
    """Same as `max`."""
    return max(x, axis=axis, keepdims=keepdims)


@keras_op(config=("axis", "keepdims"))
def amin(x, axis=None, keepdims=False):
    """Same as `min`."""
    return min(x, axis=axis, keepdims=keepdims)


@keras_op(config=("axis", "keepdims"))
def ptp(x, axis=None, keepdims=False):
    """The range (max - min) over `axis`."""
    x = tensor(x)
    return (_reduction.reduce_max(x, _axes(axis), keepdims)
            - _reduction.reduce_min(x, _axes(axis), keepdims))


@keras_op(config=("axis",))
def count_nonzero(x, axis=None):
    """How many entries over `axis` are not zero (int32)."""
    x = tensor(x)
    return _reduction.reduce_sum(_math.cast(_math.not_equal(x, _creation.zeros_like(x)),
                                            _dt.int32), _axes(axis))


@keras_op(config=("axis",), name="Average")
def _average_op(x, weights=None, *, axis=None):
    return _average(x, axis, weights)


def average(x, axis=None, weights=None):
    """The mean over `axis`, weighted by `weights` (1-D along `axis`, or `x`'s shape).

    Example:
        >>> float(tf.keras.ops.average(tf.constant([1.0, 3.0]), weights=[3.0, 1.0]))
        1.5
    """
    # the Operation's call takes the tensors (x, weights), its config the axis
    return _average_op(x, weights, axis=axis)


def _average(x, axis, weights):
    if weights is None:
        return mean(x, axis=axis)
    dtype = floatx_of(result_type(x, weights))
    x, w = tensor(x, dtype), tensor(weights, dtype)
    if w.ndim == 1 and x.ndim > 1 and axis is not None:
        shape = [1] * x.ndim
        shape[axis % x.ndim] = -1
        w = _array.reshape(w, shape)
    return (_reduction.reduce_sum(x * w, _axes(axis))
            / _reduction.reduce_sum(w + _creation.zeros_like(x), _axes(axis)))


@keras_op(config=("axis", "dtype"))
def cumprod(x, axis=None, dtype=None):
    """Running products along `axis` (of the flattened tensor when None)."""
    x = tensor(x, dtype)
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.int32)
    if axis is None:
        return _reduction.cumprod(_array.reshape(x, [-1]), axis=0)
    return _reduction.cumprod(x, axis=axis)


def _rows_last(x, axis):
    """`x` with the axes of `axis` moved last and merged into one: (kept..., n)."""
    axes = _norm_axes(axis, x.ndim)
    kept = [a for a in builtins.range(x.ndim) if a not in axes]
    moved = _array.transpose(x, kept + axes) if kept + axes != list(
        builtins.range(x.ndim)) else x
    dyn = _array.shape(moved)
    shape = [dyn[i] if x.shape[a] is None else x.shape[a] for i, a in enumerate(kept)]
    return _array.reshape(moved, shape + [-1]), axes


def _quantile(x, q, axis, method, skip_nan):
    x = _float(x)
    q = tensor(q, x.dtype)
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"keras.ops.quantile: method must be one of 'linear', 'lower', "
                         f"'higher', 'midpoint', 'nearest'; got {method!r}")
    rows, _ = _rows_last(x, axis)
    nan = _math.is_nan(rows)
    n_total = _math.cast(_array.shape(rows)[-1], x.dtype)
    if skip_nan:
        rows = _indexing.where(nan, _const(np.inf, rows), rows)
        n = _reduction.reduce_sum(_math.cast(_math.logical_not(nan), x.dtype), -1,
                                  keepdims=True)
    else:
        n = n_total + _reduction.reduce_sum(_creation.zeros_like(rows), -1, keepdims=True)
    ordered = _array.sort(rows, axis=-1)
    qs = _array.reshape(q, [-1])
    pos = (n - 1.0) * qs                     # (..., nq)
    pos = _math.maximum(pos, _creation.zeros_like(pos))
    low, high = _math.floor(pos), _math.ceil(pos)
    if method == "lower":
        high = low
    elif method == "higher":
        low = high
    elif method == "nearest":
        low = high = _math.round(pos)

    def at(index):
        return _indexing.gather(ordered, _math.cast(index, _dt.int32), axis=-1,
                                batch_dims=ordered.ndim - 1)

    lo, hi = at(low), at(high)
    if method == "midpoint":
        out = _indexing.where(_math.equal(low, high), lo, (lo + hi) * 0.5)
    elif method == "linear":
        frac = pos - low
        # weighted, so that an infinite end gives that infinity rather than inf - inf
        out = _indexing.where(_math.equal(low, high), lo, lo * (1.0 - frac) + hi * frac)
    else:
        out = lo
    if skip_nan:  # rows of NaNs only have no quantile
        out = _indexing.where(_math.equal(n + _creation.zeros_like(out), 0),
                              _const(np.nan, out), out)
    else:  # NaN anywhere makes it NaN, as NumPy
        any_nan = _reduction.reduce_any(nan, -1, keepdims=True)
        out = _indexing.where(any_nan & _math.equal(out, out), _const(np.nan, out), out)
    # the q axis comes first, as NumPy's
    order = [out.ndim - 1] + list(builtins.range(out.ndim - 1))
    out = _array.transpose(out, order)
    return out if q.ndim else _array.squeeze(out, [0])


@keras_op(config=("axis", "method", "keepdims"))
def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th quantiles (0 <= q <= 1) over `axis`; the q axis comes first.

    Example:
        >>> float(tf.keras.ops.quantile(tf.constant([1.0, 2.0, 3.0, 4.0]), 0.5))
        2.5
    """
    return _quantile_api(x, q, axis, method, keepdims, False)


def _quantile_api(x, q, axis, method, keepdims, skip_nan):
    x = tensor(x)
    if keepdims:
        axes = _norm_axes(axis, x.ndim)
        out = _quantile(x, q, axis, method, skip_nan)
        lead = 1 if tensor(q).ndim else 0
        for a in axes:
            out = _array.expand_dims(out, a + lead)
        return out
    return _quantile(x, q, axis, method, skip_nan)


@keras_op(config=("axis", "method", "keepdims"))
def percentile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th percentiles (0 <= q <= 100) over `axis`."""
    return _quantile_api(x, tensor(q, floatx_of(result_type(q))) / 100.0, axis, method,
                         keepdims, False)


@keras_op(config=("axis", "keepdims"))
def median(x, axis=None, keepdims=False):
    """The median over `axis` (floatx for ints)."""
    return _quantile_api(x, 0.5, axis, "linear", keepdims, False)


@keras_op(config=("axis", "method", "keepdims"))
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """`quantile` ignoring NaNs."""
    return _quantile_api(x, q, axis, method, keepdims, True)


@keras_op(config=("axis", "method", "keepdims"))
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """`percentile` ignoring NaNs."""
    return _quantile_api(x, tensor(q, floatx_of(result_type(q))) / 100.0, axis, method,
                         keepdims, True)


@keras_op(config=("axis", "keepdims"))
def nanmedian(x, axis=None, keepdims=False):
    """`median` ignoring NaNs."""
    return _quantile_api(x, 0.5, axis, "linear", keepdims, True)


def _nan_filled(x, value):
    x = tensor(x)
    if not x.dtype.is_floating:
        return x, None
    nan = _math.is_nan(x)
    return _indexing.where(nan, _const(value, x), x), nan


@keras_op(config=("axis", "keepdims"))
def nansum(x, axis=None, keepdims=False):
    """`sum` treating NaNs as 0."""
    return _reduction.reduce_sum(_widened(_nan_filled(x, 0.0)[0]), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def nanprod(x, axis=None, keepdims=False):
    """`prod` treating NaNs as 1."""
    return _reduction.reduce_prod(_widened(_nan_filled(x, 1.0)[0]), _axes(axis), keepdims)


@keras_op(config=("axis", "keepdims"))
def nanmean(x, axis=None, keepdims=False):
    """`mean` of the entries that are not NaN."""
    x = _float(x)
    filled, nan = _nan_filled(x, 0.0)
    count = _reduction.reduce_sum(_math.cast(_math.logical_not(nan), x.dtype), _axes(axis),
                                  keepdims)
    return _reduction.reduce_sum(filled, _axes(axis), keepdims) / count


@keras_op(config=("axis", "keepdims"))
def nanvar(x, axis=None, keepdims=False):
    """`var` of the entries that are not NaN."""
    x = _float(x)
    centre = nanmean(x, axis=axis, keepdims=True)
    nan = _math.is_nan(x)
    # NaNs of x are skipped, but inf - inf (an infinite entry) makes the variance NaN
    squares = _indexing.where(nan, _creation.zeros_like(x), _math.square(x - centre))
    count = _reduction.reduce_sum(_math.cast(_math.logical_not(nan), x.dtype), _axes(axis),
                                  keepdims)
    return _reduction.reduce_sum(squares, _axes(axis), keepdims) / count


@keras_op(config=("axis", "keepdims"))
def nanstd(x, axis=None, keepdims=False):
    """`std` of the entries that are not NaN."""
    return _math.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


@keras_op(config=("axis", "keepdims"))
def nanmax(x, axis=None, keepdims=False):
    """`max` ignoring NaNs (NaN where all are NaN)."""
    filled, nan = _nan_filled(x, -np.inf)
    out = _reduction.reduce_max(filled, _axes(axis), keepdims)
    if nan is None:
        return out
    return _indexing.where(_reduction.reduce_all(nan, _axes(axis), keepdims),
                           _const(np.nan, out), out)


@keras_op(config=("axis", "keepdims"))
def nanmin(x, axis=None, keepdims=False):
    """`min` ignoring NaNs (NaN where all are NaN)."""
    filled, nan = _nan_filled(x, np.inf)
    out = _reduction.reduce_min(filled, _axes(axis), keepdims)
    if nan is None:
        return out
    return _indexing.where(_reduction.reduce_all(nan, _axes(axis), keepdims),
                           _const(np.nan, out), out)


@keras_op(config=("axis", "keepdims"))
def nanargmax(x, axis=None, keepdims=False):
    """`argmax` ignoring NaNs."""
    return argmax(_nan_filled(x, -np.inf)[0], axis=axis, keepdims=keepdims)


@keras_op(config=("axis", "keepdims"))
def nanargmin(x, axis=None, keepdims=False):
    """`argmin` ignoring NaNs."""
    return argmin(_nan_filled(x, np.inf)[0], axis=axis, keepdims=keepdims)


@keras_op(config=("axis", "dtype"))
def nancumsum(x, axis=None, dtype=None):
    """`cumsum` treating NaNs as 0."""
    return cumsum(_nan_filled(tensor(x, dtype), 0.0)[0], axis=axis)


@keras_op(config=("axis", "dtype"))
def nancumprod(x, axis=None, dtype=None):
    """`cumprod` treating NaNs as 1."""
    return cumprod(_nan_filled(tensor(x, dtype), 1.0)[0], axis=axis)


# --------------------------------------------------------------------------- shapes
@keras_op(config=("axis",))
def flip(x, axis=None):
    """`x` reversed along `axis` (all axes when None)."""
    x = tensor(x)
    return _array.reverse(x, _norm_axes(axis, x.ndim))


@keras_op()
def fliplr(x):
    """`x` reversed along axis 1."""
    return flip(x, axis=1)


@keras_op()
def flipud(x):
    """`x` reversed along axis 0."""
    return flip(x, axis=0)


@keras_op(config=("k", "axes"))
def rot90(array, k=1, axes=(0, 1)):
    """`array` rotated by 90 degrees `k` times in the plane of `axes`.

    Example:
        >>> tf.keras.ops.rot90(tf.constant([[1, 2], [3, 4]])).numpy()
        array([[2, 4],
               [1, 3]], dtype=int32)
    """
    x = tensor(array)
    a, b = (ax % x.ndim for ax in axes)
    if a == b:
        raise ValueError(f"keras.ops.rot90: axes must differ, got {axes}")
    k %= 4
    perm = list(builtins.range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return _array.transpose(_array.reverse(x, [b]), perm)
    if k == 2:
        return _array.reverse(x, [a, b])
    if k == 3:
        return _array.reverse(_array.transpose(x, perm), [b])
    return x


@keras_op(config=("shift", "axis"))
def roll(x, shift, axis=None):
    """`x` shifted cyclically by `shift` along `axis` (flattened when None)."""
    x = tensor(x)
    if axis is None:
        return _array.reshape(_array.roll(_array.reshape(x, [-1]), shift, 0),
                              _array.shape(x))
    return _array.roll(x, shift, axis)


@keras_op(config=("repeats",))
def tile(x, repeats):
    """`x` repeated `repeats` times per axis (NumPy's rank rules)."""
    x = tensor(x)
    reps = list(repeats) if isinstance(repeats, (list, tuple)) else [repeats]
    while x.ndim < len(reps):
        x = _array.expand_dims(x, 0)
    reps = [1] * (x.ndim - len(reps)) + reps
    return _array.tile(x, reps)


@keras_op(config=("repeats", "axis"))
def repeat(x, repeats, axis=None):
    """Each entry of `x` repeated `repeats` times along `axis` (flattened when None)."""
    x = tensor(x)
    if axis is None:
        x, axis = _array.reshape(x, [-1]), 0
    return _array.repeat(x, repeats, axis=axis)


@keras_op(config=("pad_width", "mode"), name="Pad")
def _pad_op(x, constant_values=None, *, pad_width, mode="constant"):
    return _pad(x, pad_width, mode, constant_values)


def pad(x, pad_width, mode="constant", constant_values=None):
    """`x` padded by `pad_width` ((before, after) per axis, or one pair or int for all)
    with `mode` constant, reflect or symmetric.

    Example:
        >>> tf.keras.ops.pad(tf.ones([2]), ((1, 0),)).numpy()
        array([0., 1., 1.], dtype=float32)
    """
    return _pad_op(x, constant_values, pad_width=pad_width, mode=mode)


def _pad(x, pad_width, mode, constant_values):
    x = tensor(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2)).tolist()
    if mode not in ("constant", "reflect", "symmetric"):
        raise ValueError(f"keras.ops.pad: mode must be 'constant', 'reflect' or "
                         f"'symmetric', got {mode!r}")
    if constant_values is not None and mode != "constant":
        raise ValueError("keras.ops.pad: constant_values only goes with mode='constant'")
    return _array.pad(x, widths, mode=mode.upper(),
                      constant_values=0 if constant_values is None else constant_values)


def _split_points(n, sections, even):
    if isinstance(sections, int):
        if even and n % sections:
            raise ValueError(f"keras.ops.split: an axis of {n} does not split into "
                             f"{sections} equal parts")
        size, extra = divmod(n, sections)
        return [size + (i < extra) for i in builtins.range(sections)]
    bounds = [0] + [builtins.min(builtins.max(int(i) if i >= 0 else n + int(i), 0), n)
                    for i in sections] + [n]
    return [builtins.max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:])]


@keras_op(config=("indices_or_sections", "axis"))
def split(x, indices_or_sections, axis=0):
    """`x` cut along `axis` into equal parts (an int) or at the given indices.

    Example:
        >>> [p.numpy().tolist() for p in tf.keras.ops.split(tf.range(4), [1])]
        [[0], [1, 2, 3]]
    """
    x = tensor(x)
    sizes = _split_points(x.shape[axis], indices_or_sections, True)
    return _array.split(x, sizes, axis=axis)


@keras_op(config=("indices_or_sections", "axis"))
def array_split(x, indices_or_sections, axis=0):
    """`x` cut along `axis` into `indices_or_sections` nearly equal parts (the first
    ones one longer) or at the given indices."""
    x = tensor(x)
    return _array.split(x, _split_points(x.shape[axis], indices_or_sections, False), axis=axis)


@keras_op(config=("indices_or_sections",))
def hsplit(x, indices_or_sections):
    """`split` along axis 1 (axis 0 for 1-D)."""
    x = tensor(x)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


@keras_op(config=("indices_or_sections",))
def vsplit(x, indices_or_sections):
    """`split` along axis 0."""
    return split(x, indices_or_sections, axis=0)


@keras_op(config=("indices_or_sections",))
def dsplit(x, indices_or_sections):
    """`split` along axis 2."""
    return split(x, indices_or_sections, axis=2)


@keras_op(config=("k",))
def diag(x, k=0):
    """The `k`-th diagonal of a matrix, or a matrix with the vector `x` on it."""
    x = tensor(x)
    if x.ndim == 1:
        return _linalg.diag(x, k=k)
    if x.ndim != 2:
        raise ValueError(f"keras.ops.diag: x must be 1-D or 2-D, got shape {x.shape}")
    return _linalg.diag_part(x, k=k)


@keras_op(config=("k",))
def diagflat(x, k=0):
    """A matrix with the flattened `x` on its `k`-th diagonal."""
    return _linalg.diag(_array.reshape(tensor(x), [-1]), k=k)


@keras_op(config=("offset", "axis1", "axis2"))
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal of the planes of `axis1` and `axis2`, as a last axis."""
    x = tensor(x)
    a, b = axis1 % x.ndim, axis2 % x.ndim
    rest = [i for i in builtins.range(x.ndim) if i not in (a, b)]
    return _linalg.diag_part(_array.transpose(x, rest + [a, b]), k=offset)


@keras_op(config=("offset", "axis1", "axis2"))
def trace(x, offset=0, axis1=0, axis2=1):
    """The sum of the `offset` diagonal of the planes of `axis1` and `axis2`."""
    return _reduction.reduce_sum(_widened(diagonal(x, offset, axis1, axis2)), -1)


def _band(x, k, lower):
    x = tensor(x)
    rows = _creation.range(_array.shape(x)[-2])
    cols = _creation.range(_array.shape(x)[-1])
    offset = _array.expand_dims(cols, 0) - _array.expand_dims(rows, 1)
    keep = _math.less_equal(offset, k) if lower else _math.greater_equal(offset, k)
    return _indexing.where(keep, x, _creation.zeros_like(x))


@keras_op(config=("k",))
def tril(x, k=0):
    """`x` with the entries above its `k`-th diagonal zeroed (last two axes)."""
    return _band(x, k, True)


@keras_op(config=("k",))
def triu(x, k=0):
    """`x` with the entries below its `k`-th diagonal zeroed (last two axes)."""
    return _band(x, k, False)


@keras_op(config=("source", "destination"))
def moveaxis(x, source, destination):
    """`x` with the axes `source` moved to the positions `destination`."""
    x = tensor(x)
    src = [s % x.ndim for s in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [d % x.ndim for d in (destination if isinstance(destination, (list, tuple))
                                else [destination])]
    order = [i for i in builtins.range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _array.transpose(x, order)


@keras_op(config=("axis1", "axis2"))
def swapaxes(x, axis1, axis2):
    """`x` with two axes exchanged."""
    x = tensor(x)
    perm = list(builtins.range(x.ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _array.transpose(x, perm)


@keras_op(config=("shape",))
def broadcast_to(x, shape):
    """`x` broadcast to `shape`."""
    return _array.broadcast_to(tensor(x), list(shape))


@keras_op(config=("axis",))
def append(x1, x2, axis=None):
    """`x2` appended to `x1` along `axis` (both flattened when None)."""
    return concatenate([x1, x2], axis=axis)


def _at_least(x, rank):
    x = tensor(x)
    if x.ndim == 0:
        x = _array.reshape(x, [1])
    if rank >= 2 and x.ndim == 1:
        x = _array.expand_dims(x, 0)
    if rank == 3 and x.ndim == 2:
        x = _array.expand_dims(x, -1)
    return x


@keras_op()
def hstack(xs):
    """The tensors joined along axis 1 (axis 0 for 1-D)."""
    parts = promoted(*xs)
    return _array.concat(parts, axis=1 if parts[0].ndim > 1 else 0)


@keras_op()
def vstack(xs):
    """The tensors (1-D ones as rows) joined along axis 0."""
    return _array.concat([_at_least(p, 2) for p in promoted(*xs)], axis=0)


@keras_op()
def dstack(xs):
    """The tensors (as at least 3-D) joined along axis 2."""
    return _array.concat([_at_least(p, 3) for p in promoted(*xs)], axis=2)


@keras_op(config=("axis",))
def take_along_axis(x, indices, axis=None):
    """The entries of `x` at `indices` along `axis` (NumPy's `take_along_axis`;
    negative indices count from the end)."""
    x = tensor(x)
    indices = tensor(indices)
    if axis is None:
        x, axis = _array.reshape(x, [-1]), 0
        indices = _array.reshape(indices, [-1])
    axis %= x.ndim
    # both broadcast over the other axes, then the gather runs along the last axis
    x_shape = list(x.shape)
    i_shape = list(indices.shape)
    if None not in x_shape + i_shape:  # unknown sizes (a batch) must already agree
        shape_x = [builtins.max(a, b) if i != axis else a
                   for i, (a, b) in enumerate(zip(x_shape, i_shape))]
        shape_i = [builtins.max(a, b) if i != axis else b
                   for i, (a, b) in enumerate(zip(x_shape, i_shape))]
        x = _array.broadcast_to(x, shape_x)
        indices = _array.broadcast_to(indices, shape_i)
    size = _array.shape(x, out_type=indices.dtype)[axis]
    indices = _indexing.where(_math.less(indices, 0), indices + size, indices)
    xm = moveaxis(x, axis, -1)
    im = moveaxis(indices, axis, -1)
    out = _indexing.gather(xm, im, axis=-1, batch_dims=xm.ndim - 1)
    return moveaxis(out, -1, axis)


@keras_op()
def size(x):
    """The number of entries of `x` (int32)."""
    return _array.size(tensor(x), out_type=_dt.int32)


@keras_op()
def ndim(x):
    """The rank of `x` (int32)."""
    return tensor(tensor(x).ndim, _dt.int32)


@keras_op(config=("dtype",))
def array(x, dtype=None):
    """`x` as a tensor (of `dtype` when given)."""
    return tensor(x, dtype)


@keras_op()
def select(condlist, choicelist, default=0):
    """From the first true condition of `condlist`, the matching entry of
    `choicelist`; `default` where none holds.

    Example:
        >>> x = tf.range(4)
        >>> tf.keras.ops.select([x < 1, x > 2], [x, x * 10], -1).numpy()
        array([ 0, -1, -1, 30], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"keras.ops.select: condlist ({len(condlist)}) and choicelist "
                         f"({len(choicelist)}) must have the same length")
    choices = promoted(*choicelist, default)
    out = choices[-1]
    for cond, choice in zip(reversed(condlist), reversed(choices[:-1])):
        out = _indexing.where(tensor(cond, _dt.bool), choice, out)
    return out


@keras_op(config=("indexing",))
def meshgrid(*x, indexing="xy"):
    """Coordinate grids of the 1-D tensors `x` ('xy' or 'ij' indexing)."""
    return _array.meshgrid(*[tensor(v) for v in x], indexing=indexing)


@keras_op()
def nonzero(x):
    """The indices of the nonzero entries, one int32 vector per axis."""
    x = tensor(x)
    found = _math.cast(_indexing.where(_math.not_equal(x, _creation.zeros_like(x))),
                       _dt.int32)
    return tuple(found[:, i] for i in builtins.range(x.ndim))


@keras_op(config=("axis",))
def sort(x, axis=-1):
    """`x` sorted along `axis` (bools as ints)."""
    x = tensor(x)
    if x.dtype.is_bool:
        return _math.cast(_array.sort(_math.cast(x, _dt.int32), axis=axis), _dt.bool)
    return _array.sort(x, axis=axis)


@keras_op(config=("axis",))
def argsort(x, axis=-1):
    """The indices that sort `x` along `axis` (int32, stable; flattened when None)."""
    x = tensor(x)
    if axis is None:
        x, axis = _array.reshape(x, [-1]), 0
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.int32)
    return _math.cast(_array.argsort(x, axis=axis, stable=True), _dt.int32)


@keras_op(config=("kth", "axis"))
def argpartition(x, kth, axis=-1):
    """Indices that put the `kth` smallest entry in its sorted place along `axis`, the
    smaller before and the larger after (here: a full stable argsort)."""
    return argsort(x, axis=axis)


@keras_op(config=("shape",))
def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinates in an array of `shape`."""
    indices = tensor(indices)
    coords = []
    for dim in reversed(list(shape)):
        coords.append(_math.floormod(indices, _const(dim, indices)))
        indices = _math.floordiv(indices, _const(dim, indices))
    return tuple(reversed(coords))


# --------------------------------------------------------------------------- products
def _int32_if_small(a, b):
    if a.dtype.is_bool or a.dtype.is_integer and a.dtype.size < 4:
        return _math.cast(a, _dt.int32), _math.cast(b, _dt.int32)
    return a, b


def _products(compute):
    """A product of `x1` and `x2` computed wide enough (bools and small ints as int32)
    and given back in their common dtype, as Keras's `dot`, `inner`, `vdot`."""
    def run(x1, x2):
        a, b = promoted(x1, x2)
        out = compute(*_int32_if_small(a, b))
        return out if out.dtype == a.dtype else _math.cast(out, a.dtype)
    return run


@keras_op(config=("axes",))
def tensordot(x1, x2, axes=2):
    """The sum of products over `axes` (an int: the last of `x1` with the first of
    `x2`; or two lists of axes)."""
    a, b = _int32_if_small(*promoted(x1, x2))
    return _linalg.tensordot(a, b, axes)


@keras_op()
def dot(x1, x2):
    """NumPy's `dot`: products of scalars, inner products of vectors, the last axis of
    `x1` against the second-to-last of `x2` otherwise."""
    return _products(_dot)(x1, x2)


def _dot(a, b):
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim == 1:
        return _linalg.tensordot(a, b, [[a.ndim - 1], [0]])
    return _linalg.tensordot(a, b, [[a.ndim - 1], [b.ndim - 2]])


@keras_op()
def inner(x1, x2):
    """The sum of products over the last axes of `x1` and `x2`."""
    return _products(_inner)(x1, x2)


def _inner(a, b):
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return _linalg.tensordot(a, b, [[a.ndim - 1], [b.ndim - 1]])


@keras_op()
def outer(x1, x2):
    """The outer product of the flattened `x1` and `x2`."""
    return _products(_outer)(x1, x2)


def _outer(a, b):
    return _array.expand_dims(_array.reshape(a, [-1]), 1) * \
        _array.expand_dims(_array.reshape(b, [-1]), 0)


@keras_op()
def vdot(x1, x2):
    """The dot product of the flattened tensors (the first conjugated)."""
    return _products(_vdot)(x1, x2)


def _vdot(a, b):
    return _reduction.reduce_sum(_array.reshape(_conj(a), [-1]) * _array.reshape(b, [-1]))


@keras_op(config=("axisa", "axisb", "axisc", "axis"))
def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (2-vectors as z = 0) along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promoted(x1, x2)
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"keras.ops.cross: the vectors must have 2 or 3 entries, got "
                         f"shapes {a.shape} and {b.shape}")
    two_d = a.shape[-1] == 2 and b.shape[-1] == 2
    if a.shape[-1] == 2:
        a = _array.pad(a, [[0, 0]] * (a.ndim - 1) + [[0, 1]])
    if b.shape[-1] == 2:
        b = _array.pad(b, [[0, 0]] * (b.ndim - 1) + [[0, 1]])
    a, b = a + _creation.zeros_like(b), b + _creation.zeros_like(a)
    out = _linalg.cross(a, b)
    if two_d:
        return out[..., 2]
    return moveaxis(out, -1, axisc)


@keras_op()
def kron(x1, x2):
    """The Kronecker product: blocks of `x2` scaled by the entries of `x1`."""
    a, b = promoted(x1, x2)
    rank = builtins.max(a.ndim, b.ndim)
    a = _array.reshape(a, [1] * (rank - a.ndim) + list(a.shape))
    b = _array.reshape(b, [1] * (rank - b.ndim) + list(b.shape))
    a_inter = _array.reshape(a, [d for n in a.shape for d in (n, 1)])
    b_inter = _array.reshape(b, [d for n in b.shape for d in (1, n)])
    return _array.reshape(a_inter * b_inter, [p * q for p, q in zip(a.shape, b.shape)])


@keras_op(config=("mode",))
def correlate(x1, x2, mode="valid"):
    """The cross-correlation of two 1-D tensors (`valid`, `same` or `full`)."""
    a, b = _float_pair(x1, x2)
    n, m = a.shape[0], b.shape[0]
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"keras.ops.correlate: mode must be 'valid', 'same' or 'full', "
                         f"got {mode!r}")
    if n < m:  # NumPy swaps the operands and reverses the result
        return flip(_conj(correlate(b, a, mode)), 0)
    full_left = m - 1
    left = {"valid": 0, "same": m // 2, "full": full_left}[mode]
    right = {"valid": 0, "same": m - 1 - m // 2, "full": m - 1}[mode]
    padded = _array.pad(a, [[left, right]])
    length = n + left + right - m + 1
    # row i of the window matrix holds padded[i:i + m]
    idx = _array.expand_dims(_creation.range(length), 1) + \
        _array.expand_dims(_creation.range(m), 0)
    return _linalg.matmul(_indexing.gather(padded, idx), _array.expand_dims(b, 1))[:, 0]


@keras_op(config=("N", "increasing"))
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D `x`: columns `x ** k`."""
    x = tensor(x)
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.int32)
    n = x.shape[0] if N is None else N
    powers = _creation.range(n, dtype=x.dtype)
    if not increasing:
        powers = _array.reverse(powers, [0])
    return _math.pow(_array.expand_dims(x, 1), _array.expand_dims(powers, 0))


@keras_op(config=("x", "dx", "axis"))
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` along `axis` by the trapezoidal rule (samples at `x`, or
    spaced `dx`)."""
    y = _float(y)
    n = y.shape[axis]
    first = _indexing.gather(y, _creation.range(n - 1), axis=axis)
    last = _indexing.gather(y, _creation.range(1, n), axis=axis)
    if x is None:
        return _reduction.reduce_sum((first + last) * 0.5, axis) * _const(dx, y)
    xs = tensor(x, y.dtype)
    d = diff(xs, axis=axis if xs.ndim > 1 else 0)
    if d.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[axis % y.ndim] = -1
        d = _array.reshape(d, shape)
    return _reduction.reduce_sum((first + last) * 0.5 * d, axis)


@keras_op(config=("n", "axis"))
def diff(a, n=1, axis=-1):
    """The `n`-th discrete difference along `axis`."""
    a = tensor(a)
    for _ in builtins.range(n):
        size_ = a.shape[axis]
        later = _indexing.gather(a, _creation.range(1, size_), axis=axis)
        earlier = _indexing.gather(a, _creation.range(size_ - 1), axis=axis)
        a = _math.not_equal(later, earlier) if a.dtype.is_bool else later - earlier
    return a


@keras_op()
def corrcoef(x):
    """The Pearson correlation coefficients of the rows of `x`."""
    x = _float(x)
    x = _array.reshape(x, [1, -1]) if x.ndim == 1 else x
    centred = x - _reduction.reduce_mean(x, 1, keepdims=True)
    cov = _linalg.matmul(centred, _conj(_array.transpose(centred)))
    scale = _math.sqrt(_math.real(_linalg.diag_part(cov)) if cov.dtype.is_complex
                       else _linalg.diag_part(cov))
    out = cov / _array.expand_dims(scale, 1) / _array.expand_dims(scale, 0)
    return _math.clip_by_value(out, _const(-1.0, out), _const(1.0, out)) \
        if not out.dtype.is_complex else out


# --------------------------------------------------------------------------- search
@keras_op(config=("side",), name="SearchSorted")
def searchsorted(sorted_sequence, values, side="left"):
    """Where `values` would go in the 1-D `sorted_sequence` to keep it sorted (int32).

    Example:
        >>> tf.keras.ops.searchsorted([1.0, 3.0, 5.0], [3.0, 4.0]).numpy()
        array([1, 2], dtype=int32)
    """
    seq, vals = promoted(sorted_sequence, values)
    if seq.ndim != 1:
        raise ValueError(f"keras.ops.searchsorted: sorted_sequence must be 1-D, got shape "
                         f"{seq.shape}")
    flat = _array.reshape(vals, [1, -1])
    out = _array.searchsorted(_array.expand_dims(seq, 0), flat, side=side,
                              out_type=_dt.int32)
    return _array.reshape(out, _array.shape(vals))


@keras_op()
def digitize(x, bins):
    """The index of the bin of `bins` (increasing) each entry of `x` falls in (int32):
    `bins[i-1] <= x < bins[i]`."""
    return searchsorted(bins, x, side="right")


@keras_op(config=("weights", "minlength", "sparse"))
def bincount(x, weights=None, minlength=0, sparse=False):
    """How often each non-negative int occurs in `x` (weighted sums with `weights`); a
    2-D `x` counts per row.

    Example:
        >>> tf.keras.ops.bincount(tf.constant([0, 2, 2])).numpy()
        array([1, 0, 2], dtype=int32)
    """
    if sparse:
        raise NotImplementedError("keras.ops.bincount: sparse=True is not supported")
    x = tensor(x)
    if weights is not None:
        w = tensor(weights)
        dtype = w.dtype if not w.dtype.is_bool else _dt.int32
        w = _math.cast(w, dtype)
    else:
        dtype = x.dtype if x.dtype.name in ("int32", "int64") else _dt.int32
        w = _creation.ones_like(x, dtype=dtype)
    length = builtins.max(int(_reduction.reduce_max(x)) + 1 if x.shape.num_elements() else 0,
                          minlength)
    hot = _creation.one_hot(_math.cast(x, _dt.int32), length, dtype=dtype)
    return _reduction.reduce_sum(hot * _array.expand_dims(w, -1), x.ndim - 1)


@keras_op(config=("bins", "range"))
def histogram(x, bins=10, range=None):  # noqa: A002 - Keras's name
    """Counts of the 1-D `x` in `bins` equal bins over `range` (its min and max by
    default), and the bin edges."""
    x = _float(x)
    if range is None:
        lo, hi = _reduction.reduce_min(x), _reduction.reduce_max(x)
    else:
        lo, hi = tensor(range[0], x.dtype), tensor(range[1], x.dtype)
    edges = _creation.linspace(lo, hi, bins + 1)
    index = _math.cast(_math.floor((x - lo) / (hi - lo) * float(bins)), _dt.int32)
    index = _indexing.where(_math.equal(x, hi), index - 1, index)  # the last bin is closed
    inside = _math.logical_and(_math.greater_equal(x, lo), _math.less_equal(x, hi))
    hot = _creation.one_hot(index, bins, dtype=_dt.int32)
    counts = _reduction.reduce_sum(hot * _array.expand_dims(_math.cast(inside, _dt.int32),
                                                            -1), 0)
    return _math.cast(counts, x.dtype), edges  # Keras's counts are floats


@keras_op(config=("assume_unique", "invert"), name="IsIn")
def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each entry of `x1` is among the entries of `x2`."""
    a, b = promoted(x1, x2)
    hits = _reduction.reduce_any(_math.equal(_array.expand_dims(a, -1),
                                             _array.reshape(b, [-1])), -1)
    return _math.logical_not(hits) if invert else hits


@keras_op(config=("sorted", "return_index", "return_inverse", "return_counts", "axis",
                  "size", "fill_value"))
def unique(x, sorted=True, return_index=False, return_inverse=False,  # noqa: A002
           return_counts=False, axis=None, size=None, fill_value=None):
    """The distinct entries of the flattened `x`, sorted; with `return_index`,
    `return_inverse`, `return_counts` also where they first occur, how to rebuild `x`,
    and how often they occur; `size` pads (with `fill_value`) or cuts to a fixed length.
    """
    if axis is not None:
        raise NotImplementedError("keras.ops.unique: axis is not supported")
    x = tensor(x)
    flat = _array.reshape(x, [-1])
    found = _array.unique(flat)
    values, inverse = found[0], found[1]
    n = values.shape[0]
    if sorted:
        order = _math.cast(_array.argsort(values, stable=True), _dt.int32)
        values = _indexing.gather(values, order)
        rank = _math.cast(_array.argsort(order, stable=True), _dt.int32)
        inverse = _indexing.gather(rank, inverse)
    hot = _creation.one_hot(inverse, n, dtype=_dt.int32)          # (len, n)
    outputs = [values]
    if return_index:
        positions = _array.expand_dims(_creation.range(flat.shape[0]), 1)
        big = _const(flat.shape[0], positions)
        outputs.append(_reduction.reduce_min(
            _indexing.where(_math.equal(hot, 1), positions + hot * 0, big + hot * 0), 0))
    if return_inverse:
        outputs.append(_array.reshape(inverse, _array.shape(x)))
    if return_counts:
        outputs.append(_reduction.reduce_sum(hot, 0))
    if size is not None:
        def fit(t, fill):
            if t.shape[0] >= size:
                return t[:size]
            return _array.pad(t, [[0, size - t.shape[0]]], constant_values=fill)
        inverse_at = 2 if return_index else 1
        outputs = [o if return_inverse and i == inverse_at else
                   fit(o, (fill_value if fill_value is not None else 0) if i == 0 else 0)
                   for i, o in enumerate(outputs)]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# --------------------------------------------------------------------------- comparison
def _close(x1, x2, rtol, atol, equal_nan):
    a, b = promoted(x1, x2)
    if not a.dtype.is_floating:
        a, b = _math.cast(a, _dt.float32), _math.cast(b, _dt.float32)
    near = _math.less_equal(_math.abs(a - b), atol + rtol * _math.abs(b))
    same_inf = _math.equal(a, b)  # infinities only match themselves
    out = _math.logical_or(near, same_inf)
    if equal_nan:
        out = _math.logical_or(out, _math.logical_and(_math.is_nan(a), _math.is_nan(b)))
    return out


@keras_op(config=("rtol", "atol", "equal_nan"))
def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether `|x1 - x2| <= atol + rtol * |x2|` elementwise."""
    return _close(x1, x2, rtol, atol, equal_nan)


@keras_op(config=("rtol", "atol", "equal_nan"), name="AllClose")
def allclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether `isclose` holds everywhere."""
    return _reduction.reduce_all(_close(x1, x2, rtol, atol, equal_nan))


@keras_op(config=("nan", "posinf", "neginf"))
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """`x` with NaN, +inf and -inf replaced (by 0 and the dtype's extremes by default)."""
    x = tensor(x)
    if not x.dtype.is_floating:
        return x
    big = float(np.finfo(x.dtype.as_numpy_dtype).max)
    x = _indexing.where(_math.is_nan(x), _const(nan, x), x)
    x = _indexing.where(_math.equal(x, _const(np.inf, x)),
                        _const(big if posinf is None else posinf, x), x)
    return _indexing.where(_math.equal(x, _const(-np.inf, x)),
                           _const(-big if neginf is None else neginf, x), x)


@keras_op()
def nextafter(x1, x2):
    """The next representable float after `x1` toward `x2`."""
    a, b = _float_pair(x1, x2)
    info = np.finfo(a.dtype.as_numpy_dtype)
    # step by the spacing of a's binade: eps * 2**floor(log2|a|), subnormals at tiny
    mag = _math.abs(a)
    exponent = _math.floor(_math.log(_math.maximum(mag, _const(info.tiny, a))) / _LN2)
    toward_zero = _math.logical_and(_math.less(b, a), _math.greater(a, 0)) | \
        _math.logical_and(_math.greater(b, a), _math.less(a, 0))
    # at an exact power of two, stepping toward zero uses the finer spacing below it
    at_power = _math.equal(_math.pow(_const(2.0, a), exponent), mag)
    exponent = _indexing.where(_math.logical_and(at_power, toward_zero), exponent - 1,
                               exponent)
    spacing = _math.maximum(_const(info.eps, a) * _math.pow(_const(2.0, a), exponent),
                            _const(info.smallest_subnormal, a))
    step = _indexing.where(_math.greater(b, a), spacing, -spacing)
    out = _indexing.where(_math.equal(a, b), b, a + step)
    return _indexing.where(_math.is_nan(a) | _math.is_nan(b), a + b, out)


# --------------------------------------------------------------------------- creation
# Functions that make tensors from nothing take no tensor argument, so they have no
# Operation: in a functional model their result is a constant.
def _shape_list(shape):
    return [int(s) for s in shape] if isinstance(shape, (list, tuple)) else [int(shape)]


def _dtype_or(dtype, default=_dt.float32):
    return _dt.as_dtype(dtype) if dtype is not None else default


def ones(shape, dtype=None):
    """Ones of `shape` (floatx by default).

    Example:
        >>> tf.keras.ops.ones((2,)).numpy()
        array([1., 1.], dtype=float32)
    """
    return _creation.ones(_shape_list(shape), dtype=_dtype_or(dtype))


def zeros(shape, dtype=None):
    """Zeros of `shape` (floatx by default)."""
    return _creation.zeros(_shape_list(shape), dtype=_dtype_or(dtype))


def empty(shape, dtype=None):
    """A tensor of `shape` (zeros here; Keras leaves the values unspecified)."""
    return zeros(shape, dtype)


@keras_op(config=("dtype",))
def empty_like(x, dtype=None):
    """A tensor shaped as `x` (zeros here)."""
    return zeros_like(x, dtype)


@keras_op(config=("shape", "dtype"), name="Full")
def _full_op(fill_value, *, shape, dtype=None):
    return full(shape, fill_value, dtype)


def full(shape, fill_value, dtype=None):
    """`fill_value` broadcast to `shape` (floatx unless `dtype` is given)."""
    if is_symbolic(fill_value):
        return _full_op(fill_value, shape=shape, dtype=dtype)
    value = tensor(fill_value, dtype or _dt.float32)
    return _array.broadcast_to(value, _shape_list(shape))


@keras_op(config=("dtype",))
def full_like(x, fill_value, dtype=None):
    """`fill_value` broadcast to the shape of `x`, in `x`'s dtype unless given."""
    x = tensor(x)
    value = tensor(fill_value, dtype or x.dtype)
    return _array.broadcast_to(value, _array.shape(x))


def eye(N, M=None, k=0, dtype=None):  # noqa: N803 - Keras's names
    """The `N` x `M` matrix with ones on its `k`-th diagonal (floatx by default)."""
    M = N if M is None else M  # noqa: N806
    rows = np.arange(N)[:, None]
    cols = np.arange(M)[None, :]
    return tensor((cols - rows == k).astype(_dtype_or(dtype).as_numpy_dtype))


def identity(n, dtype=None):
    """The `n` x `n` identity matrix (floatx by default)."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - Keras's names
    """The `N` x `M` matrix with ones at and below its `k`-th diagonal."""
    M = N if M is None else M  # noqa: N806
    rows = np.arange(N)[:, None]
    cols = np.arange(M)[None, :]
    return tensor((cols - rows <= k).astype(_dtype_or(dtype).as_numpy_dtype))


def _spaced(start, stop, num, endpoint, dtype, axis):
    kind = result_type(start, stop)
    work = floatx_of(kind) if dtype is None else floatx_of(_dt.as_dtype(dtype))
    start, stop = tensor(start, work), tensor(stop, work)
    div = (num - 1) if endpoint else num
    steps = _creation.range(num, dtype=work)
    shape = [num] + [1] * builtins.max(start.ndim, stop.ndim)
    steps = _array.reshape(steps, shape)
    step = (stop - start) / float(div) if div > 0 else _creation.zeros_like(stop - start)
    values = start + steps * step
    if endpoint and num > 1:  # the last sample is exactly `stop`
        last = _math.equal(steps, float(num - 1))
        values = _indexing.where(last, stop + _creation.zeros_like(values), values)
    if axis != 0:
        values = moveaxis(values, 0, axis)
    return values, step


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` evenly spaced samples from `start` to `stop` (included when `endpoint`).

    Example:
        >>> tf.keras.ops.linspace(0.0, 1.0, 3).numpy()
        array([0. , 0.5, 1. ], dtype=float32)
    """
    values, step = _spaced(start, stop, num, endpoint, dtype, axis)
    if dtype is not None:
        values = _math.cast(values, _dt.as_dtype(dtype))
    return (values, step) if retstep else values


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """`base ** linspace(start, stop, num)`."""
    exponents, _ = _spaced(start, stop, num, endpoint, dtype, axis)
    values = _math.pow(_const(base, exponents), exponents)
    return values if dtype is None else _math.cast(values, _dt.as_dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`num` samples from `start` to `stop` evenly spaced on a log scale."""
    work = floatx_of(result_type(start, stop) if dtype is None else _dt.as_dtype(dtype))
    a, b = tensor(start, work), tensor(stop, work)
    sign = _math.sign(a)
    exponents, _ = _spaced(_math.log(_math.abs(a)), _math.log(_math.abs(b)), num,
                           endpoint, work, axis)
    values = sign * _math.exp(exponents)
    if endpoint and num > 1:  # exact ends, as NumPy
        first = _math.equal(_creation.range(num, dtype=work), 0.0)
        last = _math.equal(_creation.range(num, dtype=work), float(num - 1))
        shape = [num] + [1] * (values.ndim - 1)
        values = _indexing.where(_array.reshape(first, shape), a + values * 0, values)
        values = _indexing.where(_array.reshape(last, shape), b + values * 0, values)
    return values if dtype is None else _math.cast(values, _dt.as_dtype(dtype))


# --------------------------------------------------------------------------- windows
def _window(name, formula):
    def compute(x):
        n = int(x)
        if n <= 0:
            return zeros((0,))
        if n == 1:
            return ones((1,))
        return tensor(formula(np.arange(n, dtype=np.float64), n).astype(np.float32))
    compute.__name__ = compute.__qualname__ = name
    return compute


def _kaiser(x, beta):
    n = int(x)
    if n == 1:
        return ones((1,))
    k = np.arange(n, dtype=np.float64)
    ratio = tensor(beta * np.sqrt(1.0 - (2.0 * k / (n - 1) - 1.0) ** 2), _dt.float64)
    return _math.cast(_i0(ratio) / _i0(tensor(float(beta), _dt.float64)), _dt.float32)


# window shapes are static: the window is computed from the integer `x` alone
bartlett = _window("bartlett", lambda k, n: 1.0 - np.abs(2.0 * k / (n - 1) - 1.0))
blackman = _window("blackman", lambda k, n: 0.42 - 0.5 * np.cos(2 * np.pi * k / (n - 1))
                   + 0.08 * np.cos(4 * np.pi * k / (n - 1)))
hamming = _window("hamming", lambda k, n: 0.54 - 0.46 * np.cos(2 * np.pi * k / (n - 1)))
hanning = _window("hanning", lambda k, n: 0.5 - 0.5 * np.cos(2 * np.pi * k / (n - 1)))
bartlett.__doc__ = "The Bartlett (triangular) window of length `x`."
blackman.__doc__ = "The Blackman window of length `x`."
hamming.__doc__ = "The Hamming window of length `x`."
hanning.__doc__ = "The Hann window of length `x`."


def kaiser(x, beta):
    """The Kaiser window of length `x` and shape `beta`."""
    return _kaiser(x, beta)


def vectorize(pyfunc, *, excluded=None, signature=None):
    """`pyfunc` (of scalars) made to work elementwise on broadcast tensors.

    Example:
        >>> f = tf.keras.ops.vectorize(lambda a, b: a * b + 1.0)
        >>> f(tf.constant([1.0, 2.0]), tf.constant(3.0)).numpy()
        array([4., 7.], dtype=float32)
    """
    if signature is not None:
        raise NotImplementedError("keras.ops.vectorize: signature is not supported")
    excluded = set(excluded or ())

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        mapped = [i for i in builtins.range(len(args)) if i not in excluded]
        if not mapped:
            return pyfunc(*args, **kwargs)
        tensors = [tensor(args[i]) for i in mapped]
        shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
        flat = [_array.reshape(_array.broadcast_to(t, list(shape)), [-1]) for t in tensors]

        def one(elems):
            call = list(args)
            for i, e in zip(mapped, elems):
                call[i] = e
            return pyfunc(*call, **kwargs)
        out = _map_fn.vectorized_map(one, flat)
        return _array.reshape(out, list(shape))
    return wrapped


@keras_op()
def slogdet(x):
    """The sign and the log of the absolute determinant of square matrices."""
    sign, logabs = _linalg.slogdet(_float(x))
    return sign, logabs



# --------------------------------------------------------------------------- einops
def _einops_side(side: str) -> list:
    """'b (h w) c' as [['b'], ['h', 'w'], ['c']]."""
    groups, current = [], None
    for token in side.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            if current is not None:
                raise ValueError(f"keras.ops.rearrange: nested parentheses in {side!r}")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"keras.ops.rearrange: unbalanced parentheses in {side!r}")
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    if current is not None:
        raise ValueError(f"keras.ops.rearrange: unbalanced parentheses in {side!r}")
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    """The axes of `tensor` reordered, split and merged as the einops `pattern` says
    ('b h w c -> b (h w) c'); `axes_lengths` give the sizes of split axes. On
    KerasTensors it records Keras's Reshape and Transpose operations.

    Example:
        >>> tf.keras.ops.rearrange(tf.ones([2, 3, 4]), "b h w -> b (w h)").shape
        TensorShape([2, 12])
    """
    if "->" not in pattern:
        raise ValueError(f"keras.ops.rearrange: the pattern needs '->', got {pattern!r}")
    left, right = (_einops_side(part) for part in pattern.split("->"))
    x = tensor if hasattr(tensor, "shape") and not isinstance(tensor, (list, tuple)) \
        else globals()["tensor"](tensor)
    shape = list(x.shape)
    if len(shape) != len(left):
        raise ValueError(f"keras.ops.rearrange: the pattern's input has {len(left)} axes, "
                         f"the tensor {len(shape)} (shape {tuple(shape)})")
    sizes = dict(axes_lengths)
    for group, dim in zip(left, shape):
        unknown = [a for a in group if a not in sizes]
        known = 1
        for a in group:
            if a in sizes:
                known *= sizes[a]
        if len(unknown) > 1:
            raise ValueError(f"keras.ops.rearrange: give the lengths of all but one of "
                             f"{group}")
        if unknown:
            sizes[unknown[0]] = None if dim is None else dim // known
    names = [a for group in left for a in group]
    out_names = [a for group in right for a in group]
    if sorted(names) != sorted(out_names):
        raise ValueError(f"keras.ops.rearrange: both sides must name the same axes, got "
                         f"{names} and {out_names}")
    if any(len(group) > 1 for group in left):
        x = reshape(x, [-1 if sizes[a] is None else sizes[a] for a in names])
    order = [names.index(a) for a in out_names]
    if order != list(builtins.range(len(order))):
        x = transpose(x, order)
    if any(len(group) != 1 for group in right):
        target = []
        for group in right:
            dims = [sizes[a] for a in group]
            target.append(-1 if None in dims else int(np.prod(dims, dtype=np.int64)))
        x = reshape(x, target)
    return x

# every public function above that `_define` did not list
__all__ += sorted(
    n for n, v in list(globals().items())
    if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__
    and n not in __all__ and n not in ("keras_op", "floatx_of", "promoted", "result_type",
                                        "tensor", "annotations"))
