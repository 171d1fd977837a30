"""Elementwise math ops: public functions with their shape, VJP and JVP rules."""
from __future__ import annotations

import math as _pymath

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.memory import scalar_constant, wrap_native
from .._core.registry import Pointwise
from .._core.shape import broadcast_shapes
from .._core.tensor import Tensor
from ._args import binary_operands, dtype_arg, to_tensor
from . import _onnx
from ._define import defop, elementwise, linear, nondifferentiable, passthrough
from ._tangents import align_tangent
from ._batching import batch_broadcasting, batch_elementwise

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "mod",
    "negative", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square",
    "pow", "reciprocal", "squared_difference", "maximum", "minimum", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "sigmoid", "softplus", "softsign", "erf", "erfc", "lgamma", "digamma", "polygamma",
    "floor", "ceil", "round", "is_nan", "is_inf", "is_finite", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_not",
    "logical_xor", "real", "imag", "conj", "angle", "complex", "cast", "clip_by_value",
]

# --------------------------------------------------------------------------- dtype classes

_FLOATS = frozenset(d for d in _dt.ALL if d.is_floating)
_COMPLEX = frozenset(d for d in _dt.ALL if d.is_complex)
_INTS = frozenset(d for d in _dt.ALL if d.is_integer)
_FC = _FLOATS | _COMPLEX
_REAL = _FLOATS | _INTS
_NUMBER = _FC | _INTS
_BOOL = frozenset({_dt.bool})
_BOOL_DT = _dt.bool
_STRING_DT = _dt.string
_WHAT = {_FLOATS: "floating", _FC: "floating or complex", _REAL: "a real number (float or int)",
         _NUMBER: "numeric (not bool)", _BOOL: "bool",
         _COMPLEX: "complex"}
_INT_RANGE = {d: (int(np.iinfo(d._np).min), int(np.iinfo(d._np).max)) for d in _INTS}
_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}
# TensorFlow's truediv: small ints divide in float32, int32/int64 in float64.
_DIV_FLOAT = {d: (_dt.float32 if d.size <= 2 else _dt.float64) for d in _INTS}


def _dtype_error(op: str, t: Tensor, allowed, arg: str = "x") -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{op}: argument {arg!r} must be {_WHAT.get(allowed, 'a supported dtype')}, "
        f"got {describe(t)}")


def _unary(op: str, x, allowed) -> Tensor:
    """`x` as a tensor whose dtype is in `allowed` (else InvalidArgumentError)."""
    if type(x) is not Tensor:
        x = to_tensor(x, None, op, "x")
    if x.dtype not in allowed:
        raise _dtype_error(op, x, allowed)
    return x


def _scalar(op: str, v, dtype):
    """A Python int/float operand as a (cached) tensor of `dtype`; None for the generic path."""
    if dtype.is_floating or dtype.is_complex:
        if v == 0 and type(v) is float and _pymath.copysign(1.0, v) < 0:
            # -0.0 == 0.0 as a cache key, but 1 / -0.0 is -inf: keep the sign.
            return wrap_native(np.array(v, dtype._np))
        return scalar_constant(v, dtype)
    if type(v) is int and dtype.is_integer:
        lo, hi = _INT_RANGE[dtype]
        if not lo <= v <= hi:
            raise InvalidArgumentError(
                f"{op}: the Python int {v} does not fit in {dtype.name} (the other operand's "
                f"dtype); cast the tensor to a wider dtype first")
        return scalar_constant(v, dtype)
    return None


def _operands(op: str, x, y) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of one dtype; the common cases skip all generic work."""
    if type(x) is Tensor:
        if type(y) is Tensor:
            if x.dtype is y.dtype:
                return x, y
        elif type(y) is float or type(y) is int:
            s = _scalar(op, y, x.dtype)
            if s is not None:
                return x, s
    elif type(y) is Tensor and (type(x) is float or type(x) is int):
        s = _scalar(op, x, y.dtype)
        if s is not None:
            return s, y
    return binary_operands(op, x, y)


def _binary(op: str, x, y, allowed) -> tuple[Tensor, Tensor]:
    x, y = _operands(op, x, y)
    if x.dtype not in allowed:
        raise _dtype_error(op, x, allowed)
    return x, y


# --------------------------------------------------------------------------- shape rules


def _same_shape(shapes, dtypes, attrs):
    return [(shapes["x"], dtypes["x"])]


def _unary_shape(out):
    """Shape rule of a unary op whose output dtype is `out(input dtype)`."""
    def rule(shapes, dtypes, attrs):
        return [(shapes["x"], out(dtypes["x"]))]
    return rule


def _bool_out(d):
    return _dt.bool


def _real_out(d):
    return d.real_dtype


def _binary_shape(op: str, a: str = "x", b: str = "y", out=None):
    """Shape rule of a broadcasting binary op; `out(dtype)` gives the output dtype."""
    def rule(shapes, dtypes, attrs):
        da, db = dtypes[a], dtypes[b]
        if da is not db:
            raise InvalidArgumentError(
                f"{op}: {a} and {b} must have the same dtype, got {da.name} and {db.name}")
        return [(broadcast_shapes(op, shapes[a], shapes[b]), da if out is None else out(da))]
    return rule


def _mask(cond: Tensor, like: Tensor) -> Tensor:
    """A boolean condition as 0/1 in `like`'s dtype (used by piecewise gradients)."""
    return cast(cond, like.dtype)


# --------------------------------------------------------------------------- arithmetic


def add(x, y, name=None) -> Tensor:
    """x + y with broadcasting. Example: `tf.add([1.0], [2.0])` -> [3.0]."""
    x, y = _operands("add", x, y)
    if x.dtype is _BOOL_DT:
        raise _dtype_error("add", x, _NUMBER)
    return run_kernel("Add", {"x": x, "y": y})


defop("Add", ["x", "y"], shape=_binary_shape("add"),
      vjp={"x": passthrough, "y": passthrough},
      jvp={"x": lambda t: t, "y": lambda t: t}, batch=batch_broadcasting,
      pointwise=Pointwise("{x} + {y}", ufunc=np.add), onnx=_onnx.binary("Add"))


def subtract(x, y, name=None) -> Tensor:
    """x - y with broadcasting. Example: `tf.subtract(3.0, 1.0)` -> 2.0."""
    x, y = _operands("subtract", x, y)
    if x.dtype is _BOOL_DT or x.dtype is _STRING_DT:
        raise _dtype_error("subtract", x, _NUMBER)
    return run_kernel("Sub", {"x": x, "y": y})


defop("Sub", ["x", "y"], shape=_binary_shape("subtract"),
      vjp={"x": passthrough, "y": lambda g: negative(g)},
      jvp={"x": lambda t: t, "y": lambda t: negative(t)}, batch=batch_broadcasting,
      pointwise=Pointwise("{x} - {y}", ufunc=np.subtract), onnx=_onnx.binary("Sub"))


def multiply(x, y, name=None) -> Tensor:
    """x * y with broadcasting. Example: `tf.multiply(2.0, 3.0)` -> 6.0."""
    x, y = _operands("multiply", x, y)
    if x.dtype is _BOOL_DT or x.dtype is _STRING_DT:
        raise _dtype_error("multiply", x, _NUMBER)
    return run_kernel("Mul", {"x": x, "y": y})


defop("Mul", ["x", "y"], shape=_binary_shape("multiply"),
      vjp={"x": lambda g, y: g * conj(y), "y": lambda g, x: conj(x) * g},
      jvp={"x": lambda t, x, y: align_tangent(t, x, y.ndim) * y,
           "y": lambda t, x, y: x * align_tangent(t, y, x.ndim)}, batch=batch_broadcasting,
      pointwise=Pointwise("{x} * {y}", ufunc=np.multiply), onnx=_onnx.binary("Mul"))


def truediv(x, y, name=None) -> Tensor:
    """x / y; integers are divided in floating point (int32 -> float64, like TF).

    Example: `tf.truediv(1, 2)` -> 0.5 (float64).
    """
    x, y = _operands("truediv", x, y)
    d = x.dtype
    if not d.is_floating:
        if d.is_integer:
            d = _DIV_FLOAT[d]
            x, y = cast(x, d), cast(y, d)
        elif not d.is_complex:
            raise _dtype_error("truediv", x, _NUMBER)
    return run_kernel("RealDiv", {"x": x, "y": y})


def divide(x, y, name=None) -> Tensor:
    """x / y (same as `truediv`). Example: `tf.math.divide(6.0, 3.0)` -> 2.0."""
    return truediv(x, y)


defop("RealDiv", ["x", "y"], shape=_binary_shape("truediv"),
      vjp={"x": lambda g, y: g / conj(y), "y": lambda g, y, ans: -g * conj(ans / y)},
      jvp={"x": lambda t, x, y: align_tangent(t, x, y.ndim) / y,
           "y": lambda t, x, y, ans: -align_tangent(t, y, x.ndim) * ans / y},
      batch=batch_broadcasting, pointwise=Pointwise("{x} / {y}", ufunc=np.true_divide),
      onnx=_onnx.binary("Div"))


def floordiv(x, y, name=None) -> Tensor:
    """floor(x / y) elementwise; integer division by zero raises.

    Example: `tf.math.floordiv(7, -2)` -> -4.
    """
    x, y = _binary("floordiv", x, y, _REAL)
    return run_kernel("FloorDiv", {"x": x, "y": y})


def _onnx_floor_div(e, node):
    x, y = e.input(node, "x"), e.input(node, "y")
    if node.outputs[0].dtype.is_integer:  # ONNX's integer Div truncates toward zero
        exact = e.add1("Sub", [x, e.add1("Mod", [x, y], fmod=0)])
        e.add("Div", [exact, y], e.outputs(node))
        return
    e.add("Floor", [e.add1("Div", [x, y])], e.outputs(node))


# Piecewise constant: its derivative is zero almost everywhere (a symbolic zero here).
defop("FloorDiv", ["x", "y"], shape=_binary_shape("floordiv"), vjp={}, jvp={},
      batch=batch_broadcasting, onnx=_onnx_floor_div)


def floormod(x, y, name=None) -> Tensor:
    """x - floor(x / y) * y: the remainder takes the sign of `y` (Python's %).

    Example: `tf.math.floormod(-7, 3)` -> 2.
    """
    x, y = _binary("floormod", x, y, _REAL)
    return run_kernel("FloorMod", {"x": x, "y": y})


mod = floormod


def _onnx_floor_mod(e, node):
    x, y = e.input(node, "x"), e.input(node, "y")
    if node.outputs[0].dtype.is_integer:  # ONNX's integer Mod takes the divisor's sign
        e.add("Mod", [x, y], e.outputs(node), fmod=0)
        return
    floor = e.add1("Floor", [e.add1("Div", [x, y])])
    e.add("Sub", [x, e.add1("Mul", [floor, y])], e.outputs(node))


defop("FloorMod", ["x", "y"], shape=_binary_shape("floormod"),
      vjp={"x": passthrough, "y": lambda g, x, y: -g * floordiv(x, y)},
      jvp={"x": lambda t: t,
           "y": lambda t, x, y: -align_tangent(t, y, x.ndim) * floordiv(x, y)},
      batch=batch_broadcasting, onnx=_onnx_floor_mod)


def negative(x, name=None) -> Tensor:
    """-x. Example: `tf.negative(2.0)` -> -2.0."""
    x = _unary("negative", x, _NUMBER)
    return run_kernel("Neg", {"x": x})


defop("Neg", ["x"], shape=_same_shape,
      vjp={"x": lambda g: negative(g)}, **linear(negative), batch=batch_elementwise,
      pointwise=Pointwise("-{x}", ufunc=np.negative), onnx=_onnx.unary("Neg"))


def abs(x, name=None) -> Tensor:  # noqa: A001 - TensorFlow's public name
    """|x|; for complex x the modulus (a real tensor). Example: `tf.abs(-2)` -> 2."""
    x = _unary("abs", x, _NUMBER)
    if x.dtype.is_complex:
        return run_kernel("ComplexAbs", {"x": x})
    return run_kernel("Abs", {"x": x})


defop("Abs", ["x"], shape=_same_shape, **elementwise(lambda x: sign(x)), batch=batch_elementwise,
      pointwise=Pointwise("np.abs({x})", ufunc=np.abs), onnx=_onnx.unary("Abs"))
# d|z| = Re(conj(s) dz) with s = sign(z) = z / |z|; the VJP (TF convention) is g * s.
# Through sign, both are 0 at z = 0 (TF's div_no_nan) and differentiate again correctly.
defop("ComplexAbs", ["x"], shape=_unary_shape(_real_out),
      vjp={"x": lambda g, x: complex(g, 0.0) * sign(x)},
      jvp={"x": lambda t, x: real(t * conj(sign(x)))}, batch=batch_elementwise)


def sign(x, name=None) -> Tensor:
    """-1, 0 or 1 by the sign of x (x / |x| for complex). Example: `tf.sign(-3.0)` -> -1.0."""
    x = _unary("sign", x, _NUMBER)
    if x.dtype.is_complex:
        return run_kernel("ComplexSign", {"x": x})
    return run_kernel("Sign", {"x": x})


defop("Sign", ["x"], shape=_same_shape, vjp={}, jvp={},  # piecewise constant
      batch=batch_elementwise,
      # (+0: NumPy's sign of -0.0 is 0.0, numba's -0.0)
      pointwise=Pointwise("np.sign({x}) + T(0)", ufunc=np.sign), onnx=_onnx.unary("Sign"))


# s = z / |z| moves with z: ds = (dz - s Re(conj(s) dz)) / |z|, and the VJP (TF's
# convention for non-holomorphic maps) is (g - s Re(conj(g) s)) / |z|.
def _complex_sign_vjp(g, x, ans):
    return (g - complex(real(conj(g) * ans), 0.0) * ans) / complex(abs(x), 0.0)


def _complex_sign_jvp(t, x, ans):
    return (t - complex(real(conj(ans) * t), 0.0) * ans) / complex(abs(x), 0.0)


defop("ComplexSign", ["x"], shape=_same_shape,
      vjp={"x": _complex_sign_vjp}, jvp={"x": _complex_sign_jvp}, batch=batch_elementwise)


def exp(x, name=None) -> Tensor:
    """e**x. Example: `tf.exp(0.0)` -> 1.0."""
    return run_kernel("Exp", {"x": _unary("exp", x, _FC)})


defop("Exp", ["x"], shape=_same_shape, **elementwise(lambda ans: ans), batch=batch_elementwise,
      pointwise=Pointwise("np.exp({x})", ufunc=np.exp, vector_math=True), onnx=_onnx.unary("Exp"))


def expm1(x, name=None) -> Tensor:
    """exp(x) - 1, accurate near 0. Example: `tf.math.expm1(0.0)` -> 0.0."""
    return run_kernel("Expm1", {"x": _unary("expm1", x, _FC)})


defop("Expm1", ["x"], shape=_same_shape, **elementwise(lambda ans: ans + 1),
      batch=batch_elementwise,
      pointwise=Pointwise("np.expm1({x})", ufunc=np.expm1, vector_math=True))


def log(x, name=None) -> Tensor:
    """Natural logarithm. Example: `tf.math.log(1.0)` -> 0.0."""
    return run_kernel("Log", {"x": _unary("log", x, _FC)})


defop("Log", ["x"], shape=_same_shape, **elementwise(lambda x: reciprocal(x)),
      batch=batch_elementwise, pointwise=Pointwise("np.log({x})", ufunc=np.log, vector_math=True),
      onnx=_onnx.unary("Log"))


def log1p(x, name=None) -> Tensor:
    """log(1 + x), accurate near 0. Example: `tf.math.log1p(0.0)` -> 0.0."""
    return run_kernel("Log1p", {"x": _unary("log1p", x, _FC)})


defop("Log1p", ["x"], shape=_same_shape, **elementwise(lambda x: reciprocal(x + 1)),
      batch=batch_elementwise,
      pointwise=Pointwise("np.log1p({x})", ufunc=np.log1p, vector_math=True))


def sqrt(x, name=None) -> Tensor:
    """Square root. Example: `tf.sqrt(4.0)` -> 2.0."""
    return run_kernel("Sqrt", {"x": _unary("sqrt", x, _FC)})


defop("Sqrt", ["x"], shape=_same_shape, **elementwise(lambda ans: 0.5 / ans),
      batch=batch_elementwise, pointwise=Pointwise("np.sqrt({x})", ufunc=np.sqrt),
      onnx=_onnx.unary("Sqrt"))


def rsqrt(x, name=None) -> Tensor:
    """1 / sqrt(x). Example: `tf.math.rsqrt(4.0)` -> 0.5."""
    return run_kernel("Rsqrt", {"x": _unary("rsqrt", x, _FC)})


def _onnx_rsqrt(e, node):
    e.add("Reciprocal", [e.add1("Sqrt", [e.input(node, "x")])], e.outputs(node))


defop("Rsqrt", ["x"], shape=_same_shape,
      **elementwise(lambda ans: -0.5 * ans * square(ans)), batch=batch_elementwise,
      pointwise=Pointwise("T(1) / np.sqrt({x})", multi_pass=True), onnx=_onnx_rsqrt)


def square(x, name=None) -> Tensor:
    """x * x. Example: `tf.square(3)` -> 9."""
    return run_kernel("Square", {"x": _unary("square", x, _NUMBER)})


def _onnx_square(e, node):
    x = e.input(node, "x")
    e.add("Mul", [x, x], e.outputs(node))


defop("Square", ["x"], shape=_same_shape, **elementwise(lambda x: 2 * x), batch=batch_elementwise,
      pointwise=Pointwise("{x} * {x}", ufunc=np.square), onnx=_onnx_square)


def reciprocal(x, name=None) -> Tensor:
    """1 / x. Example: `tf.math.reciprocal(4.0)` -> 0.25."""
    return run_kernel("Reciprocal", {"x": _unary("reciprocal", x, _FC)})


defop("Reciprocal", ["x"], shape=_same_shape, **elementwise(lambda ans: -square(ans)),
      batch=batch_elementwise, pointwise=Pointwise("T(1) / {x}", ufunc=np.reciprocal),
      onnx=_onnx.unary("Reciprocal"))


def _safe_log(x: Tensor) -> Tensor:
    """log(x) where x > 0 (x != 0 for complex), 0 elsewhere: d(x**y)/dy as TF defines it."""
    ok = _mask(not_equal(x, 0) if x.dtype.is_complex else greater(x, 0), x)
    return log(x * ok + (1 - ok)) * ok


def pow(x, y, name=None) -> Tensor:  # noqa: A001 - TensorFlow's public name
    """x ** y with broadcasting. Example: `tf.pow(2.0, 3.0)` -> 8.0."""
    x, y = _binary("pow", x, y, _NUMBER)
    return run_kernel("Pow", {"x": x, "y": y})


defop("Pow", ["x", "y"], shape=_binary_shape("pow"),
      vjp={"x": lambda g, x, y: g * conj(y * pow(x, y - 1)),
           "y": lambda g, x, ans: g * conj(ans * _safe_log(x))},
      jvp={"x": lambda t, x, y: align_tangent(t, x, y.ndim) * (y * pow(x, y - 1)),
           "y": lambda t, x, y, ans: align_tangent(t, y, x.ndim) * (ans * _safe_log(x))},
      batch=batch_broadcasting, onnx=_onnx.binary("Pow"))


def squared_difference(x, y, name=None) -> Tensor:
    """(x - y) ** 2 with broadcasting. Example: `tf.math.squared_difference(3.0, 1.0)` -> 4.0."""
    x, y = _binary("squared_difference", x, y, _REAL)
    return run_kernel("SquaredDifference", {"x": x, "y": y})


def _onnx_squared_difference(e, node):
    d = e.add1("Sub", [e.input(node, "x"), e.input(node, "y")])
    e.add("Mul", [d, d], e.outputs(node))


defop("SquaredDifference", ["x", "y"], shape=_binary_shape("squared_difference"),
      vjp={"x": lambda g, x, y: (2 * g) * (x - y), "y": lambda g, x, y: (-2 * g) * (x - y)},
      jvp={"x": lambda t, x, y: (2 * align_tangent(t, x, y.ndim)) * (x - y),
           "y": lambda t, x, y: (-2 * align_tangent(t, y, x.ndim)) * (x - y)},
      batch=batch_broadcasting,
      pointwise=Pointwise("({x} - {y}) * ({x} - {y})", multi_pass=True),
      onnx=_onnx_squared_difference)


def maximum(x, y, name=None) -> Tensor:
    """Elementwise max; at ties the gradient goes to x (TF). Example: `tf.maximum(1, 2)` -> 2."""
    x, y = _binary("maximum", x, y, _REAL)
    return run_kernel("Maximum", {"x": x, "y": y})


# Where x == y (0.0 and -0.0), NumPy's maximum and minimum give y (x86), numba's the first
# argument: the fused expressions name y first.
defop("Maximum", ["x", "y"], shape=_binary_shape("maximum"),
      vjp={"x": lambda g, x, y: g * _mask(greater_equal(x, y), g),
           "y": lambda g, x, y: g * _mask(less(x, y), g)},
      jvp={"x": lambda t, x, y: align_tangent(t, x, y.ndim) * _mask(greater_equal(x, y), t),
           "y": lambda t, x, y: align_tangent(t, y, x.ndim) * _mask(less(x, y), t)},
      batch=batch_broadcasting, pointwise=Pointwise("np.maximum({y}, {x})", ufunc=np.maximum),
      onnx=_onnx.binary("Max"))


def minimum(x, y, name=None) -> Tensor:
    """Elementwise min; at ties the gradient goes to x (TF). Example: `tf.minimum(1, 2)` -> 1."""
    x, y = _binary("minimum", x, y, _REAL)
    return run_kernel("Minimum", {"x": x, "y": y})


defop("Minimum", ["x", "y"], shape=_binary_shape("minimum"),
      vjp={"x": lambda g, x, y: g * _mask(less_equal(x, y), g),
           "y": lambda g, x, y: g * _mask(greater(x, y), g)},
      jvp={"x": lambda t, x, y: align_tangent(t, x, y.ndim) * _mask(less_equal(x, y), t),
           "y": lambda t, x, y: align_tangent(t, y, x.ndim) * _mask(greater(x, y), t)},
      batch=batch_broadcasting, pointwise=Pointwise("np.minimum({y}, {x})", ufunc=np.minimum),
      onnx=_onnx.binary("Min"))


# --------------------------------------------------------------------------- trigonometric


def sin(x, name=None) -> Tensor:
    """sin(x). Example: `tf.sin(0.0)` -> 0.0."""
    return run_kernel("Sin", {"x": _unary("sin", x, _FC)})


defop("Sin", ["x"], shape=_same_shape, **elementwise(lambda x: cos(x)), batch=batch_elementwise,
      pointwise=Pointwise("np.sin({x})", ufunc=np.sin), onnx=_onnx.unary("Sin"))


def cos(x, name=None) -> Tensor:
    """cos(x). Example: `tf.cos(0.0)` -> 1.0."""
    return run_kernel("Cos", {"x": _unary("cos", x, _FC)})


defop("Cos", ["x"], shape=_same_shape, **elementwise(lambda x: -sin(x)), batch=batch_elementwise,
      pointwise=Pointwise("np.cos({x})", ufunc=np.cos), onnx=_onnx.unary("Cos"))


def tan(x, name=None) -> Tensor:
    """tan(x). Example: `tf.math.tan(0.0)` -> 0.0."""
    return run_kernel("Tan", {"x": _unary("tan", x, _FC)})


defop("Tan", ["x"], shape=_same_shape, **elementwise(lambda ans: 1 + square(ans)),
      batch=batch_elementwise)


def asin(x, name=None) -> Tensor:
    """arcsin(x). Example: `tf.math.asin(0.0)` -> 0.0."""
    return run_kernel("Asin", {"x": _unary("asin", x, _FC)})


defop("Asin", ["x"], shape=_same_shape, **elementwise(lambda x: rsqrt(1 - square(x))),
      batch=batch_elementwise)


def acos(x, name=None) -> Tensor:
    """arccos(x). Example: `tf.math.acos(1.0)` -> 0.0."""
    return run_kernel("Acos", {"x": _unary("acos", x, _FC)})


defop("Acos", ["x"], shape=_same_shape, **elementwise(lambda x: -rsqrt(1 - square(x))),
      batch=batch_elementwise)


def atan(x, name=None) -> Tensor:
    """arctan(x). Example: `tf.math.atan(0.0)` -> 0.0."""
    return run_kernel("Atan", {"x": _unary("atan", x, _FC)})


defop("Atan", ["x"], shape=_same_shape, **elementwise(lambda x: reciprocal(1 + square(x))),
      batch=batch_elementwise)


def atan2(y, x, name=None) -> Tensor:
    """The angle of the point (x, y): arctan(y / x) in the right quadrant.

    Example: `tf.math.atan2(1.0, 1.0)` -> 0.785...
    """
    y, x = _binary("atan2", y, x, _FLOATS)
    return run_kernel("Atan2", {"y": y, "x": x})


def _atan2_vjp(g, y, x):
    scale = g / (square(x) + square(y))
    return {"y": scale * x, "x": -scale * y}


def _atan2_jvp_y(t, y, x):
    return align_tangent(t, y, x.ndim) * x / (square(x) + square(y))


def _atan2_jvp_x(t, y, x):
    return -align_tangent(t, x, y.ndim) * y / (square(x) + square(y))


defop("Atan2", ["y", "x"], shape=_binary_shape("atan2", "y", "x"),
      vjp=_atan2_vjp, jvp={"y": _atan2_jvp_y, "x": _atan2_jvp_x}, batch=batch_broadcasting)


def sinh(x, name=None) -> Tensor:
    """Hyperbolic sine. Example: `tf.math.sinh(0.0)` -> 0.0."""
    return run_kernel("Sinh", {"x": _unary("sinh", x, _FC)})


defop("Sinh", ["x"], shape=_same_shape, **elementwise(lambda x: cosh(x)), batch=batch_elementwise)


def cosh(x, name=None) -> Tensor:
    """Hyperbolic cosine. Example: `tf.math.cosh(0.0)` -> 1.0."""
    return run_kernel("Cosh", {"x": _unary("cosh", x, _FC)})


defop("Cosh", ["x"], shape=_same_shape, **elementwise(lambda x: sinh(x)), batch=batch_elementwise)


def tanh(x, name=None) -> Tensor:
    """Hyperbolic tangent. Example: `tf.tanh(0.0)` -> 0.0."""
    return run_kernel("Tanh", {"x": _unary("tanh", x, _FC)})


def _tanh_grad(y, dy) -> Tensor:
    """dy * (1 - y**2): tanh's backward step as one fused kernel (y = tanh(x), real)."""
    return run_kernel("TanhGrad", {"y": y, "dy": dy})


# Real inputs take the fused kernel; complex ones the generic conj(dfdx) form.
defop("Tanh", ["x"], shape=_same_shape, jvp=elementwise(lambda ans: 1 - square(ans))["jvp"],
      vjp={"x": lambda g, ans: _tanh_grad(ans, g) if not ans.dtype.is_complex
           else g * conj(1 - square(ans))}, batch=batch_elementwise,
      pointwise=Pointwise("np.tanh({x})", ufunc=np.tanh, vector_math=True),
      onnx=_onnx.unary("Tanh"))


def _fused_grad_shape(op: str):
    """Shape rule of a fused gradient kernel: y and dy broadcast."""
    def rule(shapes, dtypes, attrs):
        return [(broadcast_shapes(op, shapes["y"], shapes["dy"]), dtypes["y"])]
    return rule


defop("TanhGrad", ["y", "dy"], shape=_fused_grad_shape("TanhGrad"),
      vjp={"dy": lambda g, y: _tanh_grad(y, g), "y": lambda g, y, dy: -2.0 * y * dy * g},
      jvp={"dy": lambda t, y, dy: _tanh_grad(y, align_tangent(t, dy, y.ndim)),
           "y": lambda t, y, dy: -2.0 * y * dy * align_tangent(t, y, dy.ndim)},
      pointwise=Pointwise("(T(1) - {y} * {y}) * {dy}", multi_pass=True))


def asinh(x, name=None) -> Tensor:
    """Inverse hyperbolic sine. Example: `tf.math.asinh(0.0)` -> 0.0."""
    return run_kernel("Asinh", {"x": _unary("asinh", x, _FC)})


defop("Asinh", ["x"], shape=_same_shape, **elementwise(lambda ans: reciprocal(cosh(ans))),
      batch=batch_elementwise)


def acosh(x, name=None) -> Tensor:
    """Inverse hyperbolic cosine (x >= 1). Example: `tf.math.acosh(1.0)` -> 0.0."""
    return run_kernel("Acosh", {"x": _unary("acosh", x, _FC)})


defop("Acosh", ["x"], shape=_same_shape, **elementwise(lambda ans: reciprocal(sinh(ans))),
      batch=batch_elementwise)


def atanh(x, name=None) -> Tensor:
    """Inverse hyperbolic tangent (|x| < 1). Example: `tf.math.atanh(0.0)` -> 0.0."""
    return run_kernel("Atanh", {"x": _unary("atanh", x, _FC)})


defop("Atanh", ["x"], shape=_same_shape, **elementwise(lambda x: reciprocal(1 - square(x))),
      batch=batch_elementwise)


# --------------------------------------------------------------------------- activations


def sigmoid(x, name=None) -> Tensor:
    """1 / (1 + exp(-x)). Example: `tf.sigmoid(0.0)` -> 0.5."""
    return run_kernel("Sigmoid", {"x": _unary("sigmoid", x, _FC)})


def _sigmoid_grad(y, dy) -> Tensor:
    """dy * y * (1 - y): sigmoid's backward step as one fused kernel (y = sigmoid(x))."""
    return run_kernel("SigmoidGrad", {"y": y, "dy": dy})


defop("Sigmoid", ["x"], shape=_same_shape,
      jvp=elementwise(lambda ans: ans * (1 - ans))["jvp"],
      vjp={"x": lambda g, ans: _sigmoid_grad(ans, g) if not ans.dtype.is_complex
           else g * conj(ans * (1 - ans))}, batch=batch_elementwise,
      pointwise=Pointwise("T(1) / (T(1) + np.exp(-{x}))", multi_pass=True, vector_math=True),
      onnx=_onnx.unary("Sigmoid"))


defop("SigmoidGrad", ["y", "dy"], shape=_fused_grad_shape("SigmoidGrad"),
      vjp={"dy": lambda g, y: _sigmoid_grad(y, g), "y": lambda g, y, dy: (1 - 2.0 * y) * dy * g},
      jvp={"dy": lambda t, y, dy: _sigmoid_grad(y, align_tangent(t, dy, y.ndim)),
           "y": lambda t, y, dy: (1 - 2.0 * y) * dy * align_tangent(t, y, dy.ndim)},
      pointwise=Pointwise("((T(1) - {y}) * {y}) * {dy}", multi_pass=True))


def softplus(features, name=None) -> Tensor:
    """log(1 + exp(x)), computed without overflow. Example: `tf.math.softplus(0.0)` -> 0.693."""
    return run_kernel("Softplus", {"x": _unary("softplus", features, _FLOATS)})


defop("Softplus", ["x"], shape=_same_shape, **elementwise(lambda x: sigmoid(x)),
      batch=batch_elementwise, onnx=_onnx.unary("Softplus"),
      pointwise=Pointwise("np.maximum({x}, T(0)) + np.log1p(np.exp(-np.abs({x})))",
                          multi_pass=True, vector_math=True))


def softsign(features, name=None) -> Tensor:
    """x / (1 + |x|). Example: `tf.math.softsign(1.0)` -> 0.5."""
    return run_kernel("Softsign", {"x": _unary("softsign", features, _FLOATS)})


defop("Softsign", ["x"], shape=_same_shape,
      **elementwise(lambda x: reciprocal(square(1 + abs(x)))), batch=batch_elementwise,
      pointwise=Pointwise("{x} / (T(1) + np.abs({x}))"))


# --------------------------------------------------------------------------- special functions

_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)


def erf(x, name=None) -> Tensor:
    """The error function. Example: `tf.math.erf(0.0)` -> 0.0."""
    return run_kernel("Erf", {"x": _unary("erf", x, _FLOATS)})


defop("Erf", ["x"], shape=_same_shape,
      **elementwise(lambda x: _TWO_OVER_SQRT_PI * exp(-square(x))), batch=batch_elementwise,
      onnx=_onnx.unary("Erf"),
      pointwise=Pointwise("np.erf({x})", multi_pass=True, vector_math=True))


def erfc(x, name=None) -> Tensor:
    """1 - erf(x), accurate for large x. Example: `tf.math.erfc(0.0)` -> 1.0."""
    return run_kernel("Erfc", {"x": _unary("erfc", x, _FLOATS)})


def _onnx_erfc(e, node):
    x = e.input(node, "x")
    one = e.const(np.ones((), node.outputs[0].dtype.name))
    e.add("Sub", [one, e.add1("Erf", [x])], e.outputs(node))


defop("Erfc", ["x"], shape=_same_shape,
      **elementwise(lambda x: -_TWO_OVER_SQRT_PI * exp(-square(x))), batch=batch_elementwise,
      onnx=_onnx_erfc, pointwise=Pointwise("np.erfc({x})", multi_pass=True, vector_math=True))


def lgamma(x, name=None) -> Tensor:
    """log|Gamma(x)|. Example: `tf.math.lgamma(3.0)` -> 0.693 (log 2)."""
    return run_kernel("Lgamma", {"x": _unary("lgamma", x, _FLOATS)})


defop("Lgamma", ["x"], shape=_same_shape, **elementwise(lambda x: digamma(x)),
      batch=batch_elementwise)


def digamma(x, name=None) -> Tensor:
    """d/dx log Gamma(x). Example: `tf.math.digamma(1.0)` -> -0.5772."""
    return run_kernel("Digamma", {"x": _unary("digamma", x, _FLOATS)})


defop("Digamma", ["x"], shape=_same_shape, **elementwise(lambda x: polygamma(1.0, x)),
      batch=batch_elementwise)


def polygamma(a, x, name=None) -> Tensor:
    """The a-th derivative of digamma (a a non-negative integer value; NaN otherwise).

    Example: `tf.math.polygamma(1.0, 1.0)` -> 1.6449 (pi**2 / 6).
    """
    a, x = _binary("polygamma", a, x, _FLOATS)
    return run_kernel("Polygamma", {"a": a, "x": x})


# Like TF, no derivative with respect to the order `a` (it is integer-valued).
defop("Polygamma", ["a", "x"], shape=_binary_shape("polygamma", "a", "x"),
      vjp={"x": lambda g, a, x: g * polygamma(a + 1, x)},
      jvp={"x": lambda t, a, x: align_tangent(t, x, a.ndim) * polygamma(a + 1, x)},
      batch=batch_broadcasting)


# --------------------------------------------------------------------------- rounding


def floor(x, name=None) -> Tensor:
    """Largest integer value <= x. Example: `tf.floor(1.5)` -> 1.0."""
    return run_kernel("Floor", {"x": _unary("floor", x, _FLOATS)})


def ceil(x, name=None) -> Tensor:
    """Smallest integer value >= x. Example: `tf.math.ceil(1.5)` -> 2.0."""
    return run_kernel("Ceil", {"x": _unary("ceil", x, _FLOATS)})


def round(x, name=None) -> Tensor:  # noqa: A001 - TensorFlow's public name
    """Round to the nearest integer, halves to even (banker's rounding, like TF).

    Example: `tf.round([0.5, 1.5, 2.5])` -> [0.0, 2.0, 2.0].
    """
    return run_kernel("Round", {"x": _unary("round", x, _REAL)})


# Piecewise constant: zero derivative almost everywhere (a symbolic zero).
defop("Floor", ["x"], shape=_same_shape, vjp={}, jvp={}, batch=batch_elementwise,
      pointwise=Pointwise("np.floor({x})", ufunc=np.floor), onnx=_onnx.unary("Floor"))
defop("Ceil", ["x"], shape=_same_shape, vjp={}, jvp={}, batch=batch_elementwise,
      pointwise=Pointwise("np.ceil({x})", ufunc=np.ceil), onnx=_onnx.unary("Ceil"))
defop("Round", ["x"], shape=_same_shape, vjp={}, jvp={}, batch=batch_elementwise,
      pointwise=Pointwise("np.rint({x})"), onnx=_onnx.unary("Round"))  # (half to even, as np.round)


# --------------------------------------------------------------------------- predicates


def is_nan(x, name=None) -> Tensor:
    """True where x is NaN. Example: `tf.math.is_nan(float('nan'))` -> True."""
    return run_kernel("IsNan", {"x": _unary("is_nan", x, _FLOATS)})


def is_inf(x, name=None) -> Tensor:
    """True where x is +-inf. Example: `tf.math.is_inf(float('inf'))` -> True."""
    return run_kernel("IsInf", {"x": _unary("is_inf", x, _FLOATS)})


def is_finite(x, name=None) -> Tensor:
    """True where x is neither NaN nor +-inf. Example: `tf.math.is_finite(1.0)` -> True."""
    return run_kernel("IsFinite", {"x": _unary("is_finite", x, _FLOATS)})


for _name in ("IsNan", "IsInf", "IsFinite"):
    defop(_name, ["x"], shape=_unary_shape(_bool_out), **nondifferentiable(),
          batch=batch_elementwise)


def equal(x, y, name=None) -> Tensor:
    """x == y elementwise (bool). Example: `tf.equal([1, 2], 2)` -> [False, True]."""
    if y is None:  # `tensor == None` is False, as in TF's Tensor.__eq__
        return False
    x, y = _operands("equal", x, y)
    return run_kernel("Equal", {"x": x, "y": y})


def not_equal(x, y, name=None) -> Tensor:
    """x != y elementwise (bool). Example: `tf.not_equal([1, 2], 2)` -> [True, False]."""
    if y is None:
        return True
    x, y = _operands("not_equal", x, y)
    return run_kernel("NotEqual", {"x": x, "y": y})


def less(x, y, name=None) -> Tensor:
    """x < y elementwise (bool). Example: `tf.less(1, 2)` -> True."""
    x, y = _binary("less", x, y, _REAL)
    return run_kernel("Less", {"x": x, "y": y})


def less_equal(x, y, name=None) -> Tensor:
    """x <= y elementwise (bool). Example: `tf.less_equal(2, 2)` -> True."""
    x, y = _binary("less_equal", x, y, _REAL)
    return run_kernel("LessEqual", {"x": x, "y": y})


def greater(x, y, name=None) -> Tensor:
    """x > y elementwise (bool). Example: `tf.greater(1, 2)` -> False."""
    x, y = _binary("greater", x, y, _REAL)
    return run_kernel("Greater", {"x": x, "y": y})


def greater_equal(x, y, name=None) -> Tensor:
    """x >= y elementwise (bool). Example: `tf.greater_equal(2, 2)` -> True."""
    x, y = _binary("greater_equal", x, y, _REAL)
    return run_kernel("GreaterEqual", {"x": x, "y": y})


def logical_and(x, y, name=None) -> Tensor:
    """x AND y for bool tensors. Example: `tf.logical_and(True, False)` -> False."""
    x, y = _binary("logical_and", x, y, _BOOL)
    return run_kernel("LogicalAnd", {"x": x, "y": y})


def logical_or(x, y, name=None) -> Tensor:
    """x OR y for bool tensors. Example: `tf.logical_or(True, False)` -> True."""
    x, y = _binary("logical_or", x, y, _BOOL)
    return run_kernel("LogicalOr", {"x": x, "y": y})


def logical_xor(x, y, name=None) -> Tensor:
    """x XOR y for bool tensors. Example: `tf.math.logical_xor(True, True)` -> False."""
    x, y = _binary("logical_xor", x, y, _BOOL)
    return run_kernel("LogicalXor", {"x": x, "y": y})


def logical_not(x, name=None) -> Tensor:
    """NOT x for a bool tensor. Example: `tf.logical_not(True)` -> False."""
    return run_kernel("LogicalNot", {"x": _unary("logical_not", x, _BOOL)})


# (NotEqual and LogicalXor have no ONNX lowering yet)
_ONNX_PREDICATES = {"Equal": _onnx.binary("Equal"), "Less": _onnx.binary("Less"),
                    "LessEqual": _onnx.binary("LessOrEqual"),
                    "Greater": _onnx.binary("Greater"),
                    "GreaterEqual": _onnx.binary("GreaterOrEqual"),
                    "LogicalAnd": _onnx.binary("And"), "LogicalOr": _onnx.binary("Or")}
for _name, _public in (("Equal", "equal"), ("NotEqual", "not_equal"), ("Less", "less"),
                   ("LessEqual", "less_equal"), ("Greater", "greater"),
                   ("GreaterEqual", "greater_equal"), ("LogicalAnd", "logical_and"),
                   ("LogicalOr", "logical_or"), ("LogicalXor", "logical_xor")):
    defop(_name, ["x", "y"], shape=_binary_shape(_public, out=_bool_out), **nondifferentiable(),
          batch=batch_broadcasting, onnx=_ONNX_PREDICATES.get(_name))
defop("LogicalNot", ["x"], shape=_unary_shape(_bool_out), **nondifferentiable(),
      batch=batch_elementwise, onnx=_onnx.unary("Not"))


# --------------------------------------------------------------------------- complex numbers


def real(input, name=None) -> Tensor:  # noqa: A002 - TensorFlow's argument name
    """The real part (the input itself for real tensors). Example: `tf.math.real(1 + 2j)` -> 1.0."""
    x = _unary("real", input, _NUMBER)
    if not x.dtype.is_complex:
        return x
    return run_kernel("Real", {"x": x})


# Real and Imag are R-linear: the cotangent g (real) maps back to g and i*g.
defop("Real", ["x"], shape=_unary_shape(_real_out),
      vjp={"x": lambda g: complex(g, 0.0)}, **linear(real), batch=batch_elementwise)


def imag(input, name=None) -> Tensor:  # noqa: A002
    """The imaginary part (zeros for real tensors). Example: `tf.math.imag(1 + 2j)` -> 2.0."""
    x = _unary("imag", input, _NUMBER)
    if not x.dtype.is_complex:
        return prims.zeros_like(x)
    return run_kernel("Imag", {"x": x})


defop("Imag", ["x"], shape=_unary_shape(_real_out),
      vjp={"x": lambda g: complex(0.0, g)}, **linear(imag), batch=batch_elementwise)


def conj(x, name=None) -> Tensor:
    """Complex conjugate (the input itself for real tensors). Example: `tf.math.conj(1j)` -> -1j."""
    if type(x) is not Tensor:
        x = to_tensor(x, None, "conj", "x")
    if not x.dtype.is_complex:
        if x.dtype is _BOOL_DT or x.dtype is _STRING_DT:  # TF: conj takes numbers only
            raise _dtype_error("conj", x, _NUMBER)
        return x
    return run_kernel("Conj", {"x": x})


defop("Conj", ["x"], shape=_same_shape,
      vjp={"x": lambda g: conj(g)}, **linear(conj), batch=batch_elementwise)


def angle(input, name=None) -> Tensor:  # noqa: A002
    """The argument of a complex number (pi for negative reals, else 0).

    Example: `tf.math.angle(1j)` -> 1.5707...
    """
    x = _unary("angle", input, _NUMBER)
    if not x.dtype.is_complex:
        # TF's definition for real input; piecewise constant, so no gradient.
        return cast(less(x, 0), x.dtype if x.dtype.is_floating else _dt.float32) * _pymath.pi
    return run_kernel("Angle", {"x": x})


# d angle(z) = Im(dz / z); the VJP (TF convention) is i * g / conj(z).
defop("Angle", ["x"], shape=_unary_shape(_real_out),
      vjp={"x": lambda g, x: complex(0.0, g) / conj(x)},
      jvp={"x": lambda t, x: imag(t / x)}, batch=batch_elementwise)


def complex(real, imag, name=None) -> Tensor:  # noqa: A001 - TensorFlow's public name
    """real + i * imag from two float tensors (float32 -> complex64, float64 -> complex128).

    Example: `tf.complex(1.0, 2.0)` -> (1+2j).
    """
    re, im = _operands("complex", real, imag)
    if re.dtype not in _COMPLEX_OF:
        raise InvalidArgumentError(
            f"complex: real and imag must be float32 or float64, got real: {describe(re)} "
            f"and imag: {describe(im)}")
    return run_kernel("Complex", {"real": re, "imag": im})


def _complex_out(d):
    if d not in _COMPLEX_OF:
        raise InvalidArgumentError(f"complex: real and imag must be float32 or float64, "
                                   f"got {d.name}")
    return _COMPLEX_OF[d]


defop("Complex", ["real", "imag"], shape=_binary_shape("complex", "real", "imag", _complex_out),
      vjp={"real": lambda g: real(g), "imag": lambda g: imag(g)},
      jvp={"real": lambda t: complex(t, 0.0), "imag": lambda t: complex(0.0, t)},
      batch=batch_broadcasting)


# --------------------------------------------------------------------------- cast and clip


def cast(x, dtype, name=None) -> Tensor:
    """`x` converted to `dtype` (complex -> real keeps the real part; float -> int truncates).

    Example: `tf.cast([1.7, -1.7], tf.int32)` -> [1, -1].
    """
    dtype = dtype_arg("cast", dtype)  # None raises, as in TF: there is no default dtype
    if type(x) is not Tensor:
        x = to_tensor(x, None, "cast", "x")
    if x.dtype is dtype:
        return x
    if x.dtype is _STRING_DT or dtype is _STRING_DT:  # TF: Cast has no string kernel
        raise InvalidArgumentError(
            f"cast: casting {x.dtype.name} to {dtype.name} is not supported; use "
            f"tf.strings.to_number or tf.strings.as_string")
    return run_kernel("Cast", {"x": x}, {"dtype": dtype, "source_dtype": x.dtype})


def _cast_vjp(g, *, dtype, source_dtype):
    # Only recorded between trainable dtypes; the cotangent goes back to the source dtype.
    return cast(g, source_dtype) if source_dtype.is_trainable else None


def _cast_jvp(t, *, dtype, source_dtype):
    return cast(t, dtype) if dtype.is_trainable else None


def _onnx_cast(e, node):
    e.add("Cast", [e.input(node, "x")], e.outputs(node),
          to=e.dtype_code(node.outputs[0].dtype))


defop("Cast", ["x"], shape=lambda shapes, dtypes, attrs: [(shapes["x"], attrs["dtype"])],
      vjp={"x": _cast_vjp}, jvp={"x": _cast_jvp}, batch=batch_elementwise, onnx=_onnx_cast)


def clip_by_value(t, clip_value_min, clip_value_max, name=None) -> Tensor:
    """min(max(t, clip_value_min), clip_value_max); the bounds must broadcast to t's shape.

    Example: `tf.clip_by_value([-2.0, 0.5, 3.0], 0.0, 1.0)` -> [0.0, 0.5, 1.0].
    """
    t = _unary("clip_by_value", t, _REAL)
    lo = to_tensor(clip_value_min, t.dtype, "clip_by_value", "clip_value_min")
    hi = to_tensor(clip_value_max, t.dtype, "clip_by_value", "clip_value_max")
    for arg, b in (("clip_value_min", lo), ("clip_value_max", hi)):
        if b.dtype is not t.dtype or broadcast_shapes("clip_by_value", t._shape,
                                                      b._shape) != t._shape:
            raise InvalidArgumentError(
                f"clip_by_value: {arg} must have t's dtype and broadcast to t's shape without "
                f"enlarging it, got t: {describe(t)} and {arg}: {describe(b)}")
    # TF's composition: at a bound the gradient goes to t (Minimum/Maximum tie rule).
    return maximum(minimum(t, hi), lo)


# --------------------------------------------------------------------------- safe composites
# Built from the public ops above (and `where`), so their VJP/JVP come from those ops'.
# The unselected branch of each `where` is computed on a safe operand (1 in place of the
# zero divisor / log argument) so its derivative is finite and `where` zeroes it.

__all__ += ["divide_no_nan", "xlogy", "log_sigmoid"]


def divide_no_nan(x, y, name=None) -> Tensor:
    """`x / y`, or 0 where `y` is 0 (even if `x` is 0, inf or nan).

    Example: `tf.math.divide_no_nan([3., 1.], [0., 2.])` -> [0., 0.5].
    """
    x, y = _binary("DivNoNan", x, y, _FC)
    zero = equal(y, 0)
    q = truediv(x, prims.select_v2(zero, prims.ones_like(y), y))
    return prims.select_v2(zero, prims.zeros_like(q), q)


def xlogy(x, y, name=None) -> Tensor:
    """`x * log(y)`, or 0 where `x` is 0 (even if `y` is 0).

    Example: `tf.math.xlogy([0., 2.], [0., 1.])` -> [0., 0.].
    """
    x, y = _binary("Xlogy", x, y, _FC)
    zero = equal(x, 0)
    p = multiply(x, log(prims.select_v2(zero, prims.ones_like(y), y)))
    return prims.select_v2(zero, prims.zeros_like(p), p)


def log_sigmoid(x, name=None) -> Tensor:
    """`log(sigmoid(x)) = -softplus(-x)`, stable for large |x|.

    Example: `tf.math.log_sigmoid([0.])` -> [-0.6931472].
    """
    x = _unary("LogSigmoid", x, _FLOATS)
    return negative(softplus(negative(x)))


# --------------------------------------------------------------------------- special functions II
# TensorFlow's further special functions (issue 31). Kernels only where no composite of the
# ops above exists (Bessel, inverse error, incomplete gamma and beta functions); their
# derivatives, and the exponentially scaled functions' unscaled forms, are composites.

__all__ += ["bessel_i0e", "bessel_i1e", "bessel_i0", "bessel_i1", "erfinv", "ndtri", "igamma",
            "igammac", "betainc", "xdivy", "xlog1py", "truncatediv", "truncatemod"]

_SQRT_PI_OVER_2 = _pymath.sqrt(_pymath.pi) / 2.0
_SQRT_2PI = _pymath.sqrt(2.0 * _pymath.pi)


def bessel_i0e(x, name=None) -> Tensor:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0.

    Example: `tf.math.bessel_i0e(0.0)` -> 1.0.
    """
    return run_kernel("BesselI0e", {"x": _unary("bessel_i0e", x, _FLOATS)})


def bessel_i1e(x, name=None) -> Tensor:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1.

    Example: `tf.math.bessel_i1e(0.0)` -> 0.0.
    """
    return run_kernel("BesselI1e", {"x": _unary("bessel_i1e", x, _FLOATS)})


def _i1e_over_x(x, ans):
    # i1e(x) / x, which tends to 1/2 at 0: the safe operand keeps both branches finite
    zero = equal(x, 0)
    safe = prims.select_v2(zero, prims.ones_like(x), x)
    return prims.select_v2(zero, prims.zeros_like(x) + 0.5, ans / safe)


# i0e' = i1e - sign(x) i0e;  i1e' = i0e - i1e (sign(x) + 1/x), 1/2 at x = 0 (as TF)
defop("BesselI0e", ["x"], shape=_same_shape,
      **elementwise(lambda x, ans: bessel_i1e(x) - sign(x) * ans), batch=batch_elementwise)
defop("BesselI1e", ["x"], shape=_same_shape,
      **elementwise(lambda x, ans: bessel_i0e(x) - ans * sign(x) - _i1e_over_x(x, ans)),
      batch=batch_elementwise)


def bessel_i0(x, name=None) -> Tensor:
    """I0(x), the modified Bessel function of order 0 (i0e(x) exp(|x|)).

    Example: `tf.math.bessel_i0(0.0)` -> 1.0.
    """
    x = _unary("bessel_i0", x, _FLOATS)
    return bessel_i0e(x) * exp(abs(x))


def bessel_i1(x, name=None) -> Tensor:
    """I1(x), the modified Bessel function of order 1 (i1e(x) exp(|x|)).

    Example: `tf.math.bessel_i1(0.0)` -> 0.0.
    """
    x = _unary("bessel_i1", x, _FLOATS)
    return bessel_i1e(x) * exp(abs(x))


def erfinv(x, name=None) -> Tensor:
    """The inverse error function on [-1, 1] (NaN outside, -inf/inf at -1/1).

    Example: `tf.math.erfinv(0.0)` -> 0.0.
    """
    return run_kernel("Erfinv", {"x": _unary("erfinv", x, _FLOATS)})


def ndtri(x, name=None) -> Tensor:
    """The standard normal quantile function (inverse of its CDF) on [0, 1].

    Example: `tf.math.ndtri(0.5)` -> 0.0.
    """
    return run_kernel("Ndtri", {"x": _unary("ndtri", x, _FLOATS)})


defop("Erfinv", ["x"], shape=_same_shape,
      **elementwise(lambda ans: _SQRT_PI_OVER_2 * exp(square(ans))), batch=batch_elementwise)
defop("Ndtri", ["x"], shape=_same_shape,
      **elementwise(lambda ans: _SQRT_2PI * exp(0.5 * square(ans))), batch=batch_elementwise)


def igamma(a, x, name=None) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x) (NaN for a <= 0 or x < 0).

    Example: `tf.math.igamma(1.0, 1.0)` -> 0.6321 (1 - exp(-1)).
    """
    a, x = _binary("igamma", a, x, _FLOATS)
    return run_kernel("Igamma", {"a": a, "x": x})


def igammac(a, x, name=None) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    Example: `tf.math.igammac(1.0, 1.0)` -> 0.3679 (exp(-1)).
    """
    a, x = _binary("igammac", a, x, _FLOATS)
    return run_kernel("Igammac", {"a": a, "x": x})


def _igamma_dx(a, x):
    # dP/dx = x^(a-1) exp(-x) / Gamma(a), in logs so large a and x do not overflow
    return exp((a - 1) * log(x) - x - lgamma(a))


# dP/da has no closed form: TensorFlow's kernel for it (IgammaGradA), itself without a
# derivative.
def _igamma_grad_a(a, x):
    return run_kernel("IgammaGradA", {"a": a, "x": x})


defop("IgammaGradA", ["a", "x"], shape=_binary_shape("igamma", "a", "x"),
      vjp={}, jvp={}, batch=batch_broadcasting)
defop("Igamma", ["a", "x"], shape=_binary_shape("igamma", "a", "x"),
      vjp={"a": lambda g, a, x: g * _igamma_grad_a(a, x),
           "x": lambda g, a, x: g * _igamma_dx(a, x)},
      jvp={"a": lambda t, a, x: align_tangent(t, a, x.ndim) * _igamma_grad_a(a, x),
           "x": lambda t, a, x: align_tangent(t, x, a.ndim) * _igamma_dx(a, x)},
      batch=batch_broadcasting)
defop("Igammac", ["a", "x"], shape=_binary_shape("igammac", "a", "x"),
      vjp={"a": lambda g, a, x: -g * _igamma_grad_a(a, x),
           "x": lambda g, a, x: -g * _igamma_dx(a, x)},
      jvp={"a": lambda t, a, x: -align_tangent(t, a, x.ndim) * _igamma_grad_a(a, x),
           "x": lambda t, a, x: -align_tangent(t, x, a.ndim) * _igamma_dx(a, x)},
      batch=batch_broadcasting)


def betainc(a, b, x, name=None) -> Tensor:
    """The regularized incomplete beta function I_x(a, b) (a, b > 0, 0 <= x <= 1).

    Differentiable in x only, as in TensorFlow. Example: `tf.math.betainc(1., 1., 0.5)` -> 0.5.
    """
    a, b = _binary("betainc", a, b, _FLOATS)
    a, x = _binary("betainc", a, x, _FLOATS)
    inputs = {"a": a, "b": b, "x": x}
    # eager calls skip shape rules: TensorFlow's shape check is wanted here too
    _betainc_shape({k: v._shape for k, v in inputs.items()},
                   {k: v.dtype for k, v in inputs.items()}, {})
    return run_kernel("Betainc", inputs)


def _betainc_shape(shapes, dtypes, attrs):
    if not dtypes["a"] is dtypes["b"] is dtypes["x"]:
        raise InvalidArgumentError(
            f"betainc: a, b and x must have one dtype, got {dtypes['a'].name}, "
            f"{dtypes['b'].name} and {dtypes['x'].name}")
    # TensorFlow's rule: each of a, b, x is a scalar or has the one common shape
    shaped = [(k, tuple(shapes[k])) for k in ("a", "b", "x") if len(shapes[k])]
    out = ()
    for k, s in shaped:
        if out and (len(s) != len(out) or any(
                p is not None and q is not None and p != q for p, q in zip(s, out))):
            raise InvalidArgumentError(
                f"betainc: a, b and x must be scalars or have one shape, got {shaped[0][0]} "
                f"of shape {list(shaped[0][1])} and {k} of shape {list(s)}")
        out = s if not out else out
    return [(out, dtypes["x"])]


def _betainc_dx(a, b, x):
    # x^(a-1) (1-x)^(b-1) / B(a, b), in logs (xlogy keeps a = 1 or b = 1 finite at the ends)
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    return exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - log_beta)


defop("Betainc", ["a", "b", "x"], shape=_betainc_shape,
      vjp={"x": lambda g, a, b, x: g * _betainc_dx(a, b, x)},
      jvp={"x": lambda t, a, b, x: align_tangent(t, x, max(a.ndim, b.ndim))
           * _betainc_dx(a, b, x)})


def xdivy(x, y, name=None) -> Tensor:
    """`x / y`, or 0 where `x` is 0 (even if `y` is 0).

    Example: `tf.math.xdivy([0., 2.], [0., 4.])` -> [0., 0.5].
    """
    x, y = _binary("Xdivy", x, y, _FC)
    zero = equal(x, 0)
    q = truediv(x, prims.select_v2(zero, prims.ones_like(y), y))
    return prims.select_v2(zero, prims.zeros_like(q), q)


def xlog1py(x, y, name=None) -> Tensor:
    """`x * log1p(y)`, or 0 where `x` is 0 (even if `y` is -1).

    Example: `tf.math.xlog1py([0., 2.], [-1., 1.])` -> [0., 1.3862944].
    """
    x, y = _binary("Xlog1py", x, y, _FC)
    zero = equal(x, 0)
    p = multiply(x, log1p(prims.select_v2(zero, prims.zeros_like(y), y)))
    return prims.select_v2(zero, prims.zeros_like(p), p)


def truncatediv(x, y, name=None) -> Tensor:
    """x / y rounded toward zero (C division); integer division by zero raises.

    Example: `tf.truncatediv(-7, 2)` -> -3.
    """
    x, y = _binary("truncatediv", x, y, _REAL)
    return run_kernel("TruncateDiv", {"x": x, "y": y})


def truncatemod(x, y, name=None) -> Tensor:
    """The remainder of `truncatediv`: it takes the sign of `x` (C's fmod).

    Example: `tf.truncatemod(-7, 2)` -> -1.
    """
    x, y = _binary("truncatemod", x, y, _REAL)
    return run_kernel("TruncateMod", {"x": x, "y": y})


# TensorFlow registers no gradient for either (its tape raises LookupError): the tape
# stops here, so a gradient through them is None.
defop("TruncateDiv", ["x", "y"], shape=_binary_shape("truncatediv"), **nondifferentiable(),
      batch=batch_broadcasting)
defop("TruncateMod", ["x", "y"], shape=_binary_shape("truncatemod"), **nondifferentiable(),
      batch=batch_broadcasting)
