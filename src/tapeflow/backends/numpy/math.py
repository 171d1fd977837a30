"""NumPy kernels of elementwise math."""
import numpy as np
from scipy import special as _special

from ._kernel import broadcast_shapes, ensure_array, kernel

_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray


# The hot path: a ufunc call and nothing else. On 0-d inputs a ufunc gives a NumPy scalar,
# which the engine wraps as a 0-d array (Backend.to_native) like any other result.
def _unary(name: str, f):
    """Register `f(x)` as the kernel of a unary op named `name`."""
    kernel(name)(lambda inputs, attrs, backend: f(inputs["x"]))


def _binary(name: str, f):
    """Register `f(x, y)` as the kernel of a binary op named `name`."""
    kernel(name)(lambda inputs, attrs, backend: f(inputs["x"], inputs["y"]))


def _special_fn(f):
    """A SciPy special function keeping the input's dtype (float16/bfloat16 via float32)."""
    def run(*xs):
        dt = xs[-1].dtype
        if dt not in _NATIVE_FLOATS:
            return ensure_array(f(*(x.astype(np.float32) for x in xs)).astype(dt))
        out = f(*xs)
        return ensure_array(out if out.dtype == dt else out.astype(dt))
    return run


# --------------------------------------------------------------------------- arithmetic

_binary("Add", np.add)
_binary("Sub", np.subtract)
_binary("Mul", np.multiply)
_binary("RealDiv", np.true_divide)
_binary("Pow", np.power)
_binary("Maximum", np.maximum)
_binary("Minimum", np.minimum)


def _no_int_zero(op, x, y):
    # TF raises where NumPy would return 0 with a warning. Not InvalidArgumentError: the
    # engine wraps other exceptions with the op's context (and re-raising its own kind
    # makes a self-referencing exception that keeps tensors alive until gc runs).
    if x.dtype.kind in "iu" and not np.all(y):
        raise ZeroDivisionError(f"{op}: integer division by zero")


@kernel("FloorDiv")
def floor_div(inputs, attrs, backend):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("floordiv", x, y)
    return ensure_array(np.floor_divide(x, y))


@kernel("FloorMod")
def floor_mod(inputs, attrs, backend):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("floormod", x, y)
    return ensure_array(np.mod(x, y))


@kernel("SquaredDifference")
def squared_difference(inputs, attrs, backend):
    d = ensure_array(np.subtract(inputs["x"], inputs["y"]))
    return np.multiply(d, d, out=d)


_unary("Neg", np.negative)
_unary("Abs", np.abs)
_unary("ComplexAbs", np.abs)
_unary("Square", np.square)
_unary("Reciprocal", np.reciprocal)


_unary("Sign", np.sign)


@kernel("ComplexSign")
def complex_sign(inputs, attrs, backend):
    # x / |x| (0 at 0); NumPy < 2's np.sign used the sign of the real part instead.
    x = inputs["x"]
    m = np.abs(x)
    return np.where(m == 0, 0, x / np.where(m == 0, 1, m)).astype(x.dtype)


# --------------------------------------------------------------------------- transcendental

_unary("Exp", np.exp)
_unary("Expm1", np.expm1)
_unary("Log", np.log)
_unary("Log1p", np.log1p)
_unary("Sqrt", np.sqrt)
_unary("Sin", np.sin)
_unary("Cos", np.cos)
_unary("Tan", np.tan)
_unary("Asin", np.arcsin)
_unary("Acos", np.arccos)
_unary("Atan", np.arctan)
_unary("Sinh", np.sinh)
_unary("Cosh", np.cosh)
_unary("Tanh", np.tanh)
_unary("Asinh", np.arcsinh)
_unary("Acosh", np.arccosh)
_unary("Atanh", np.arctanh)


@kernel("Rsqrt")
def rsqrt(inputs, attrs, backend):
    out = ensure_array(np.sqrt(inputs["x"]))
    return np.reciprocal(out, out=out)


@kernel("Atan2")
def atan2(inputs, attrs, backend):
    return ensure_array(np.arctan2(inputs["y"], inputs["x"]))


_expit = _special_fn(_special.expit)


@kernel("Sigmoid")
def sigmoid(inputs, attrs, backend):
    x = inputs["x"]
    if x.dtype.kind == "c":
        return ensure_array(np.reciprocal(1 + np.exp(-x)))
    return _expit(x)


@kernel("Softplus")
def softplus(inputs, attrs, backend):
    x = inputs["x"]
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|.
    return ensure_array(np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))


@kernel("Softsign")
def softsign(inputs, attrs, backend):
    x = inputs["x"]
    return ensure_array(x / (1 + np.abs(x)))


_unary("Erf", _special_fn(_special.erf))
_unary("Erfc", _special_fn(_special.erfc))
_unary("Lgamma", _special_fn(_special.gammaln))
_unary("Digamma", _special_fn(_special.psi))


def _polygamma(a, x):
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for integer n >= 1; NaN for other orders.
    n = np.broadcast_to(a, broadcast_shapes(a.shape, x.shape))
    valid = (n >= 0) & (n == np.floor(n))
    n = np.where(valid, n, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        higher = (-1.0) ** (n + 1) * _special.gamma(n + 1) * _special.zeta(n + 1, x)
        out = np.where(n == 0, _special.psi(x), higher)
    return np.where(valid, out, np.nan)


_polygamma_kernel = _special_fn(_polygamma)


@kernel("Polygamma")
def polygamma(inputs, attrs, backend):
    return _polygamma_kernel(inputs["a"], inputs["x"])


# --------------------------------------------------------------------------- rounding, tests

_unary("Floor", np.floor)
_unary("Ceil", np.ceil)
_unary("Round", np.round)  # half to even, like TF
_unary("IsNan", np.isnan)
_unary("IsInf", np.isinf)
_unary("IsFinite", np.isfinite)
_binary("Equal", np.equal)
_binary("NotEqual", np.not_equal)
_binary("Less", np.less)
_binary("LessEqual", np.less_equal)
_binary("Greater", np.greater)
_binary("GreaterEqual", np.greater_equal)
_binary("LogicalAnd", np.logical_and)
_binary("LogicalOr", np.logical_or)
_binary("LogicalXor", np.logical_xor)
_unary("LogicalNot", np.logical_not)


# --------------------------------------------------------------------------- complex, cast

# Copies, not views: an output must own its memory for the engine's byte accounting.
_unary("Real", lambda x: np.real(x).copy())
_unary("Imag", lambda x: np.imag(x).copy())
_unary("Conj", np.conjugate)
_unary("Angle", np.angle)


@kernel("Complex")
def complex_(inputs, attrs, backend):
    re, im = inputs["real"], inputs["imag"]
    out = np.empty(broadcast_shapes(re.shape, im.shape),
                   np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real = re
    out.imag = im
    return out


@kernel("Cast")
def cast(inputs, attrs, backend):
    x = inputs["x"]
    dt = attrs["dtype"]._np
    if x.dtype.kind == "c" and dt.kind != "c":
        x = x.real
    if dt.kind in "iu" and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):  # NaN/inf -> int is unspecified, as in TF
            return x.astype(dt)
    return x.astype(dt)


# Fused backward steps: one output allocation instead of three temporaries.
@kernel("TanhGrad")
def _tanh_grad(inputs, attrs, backend):
    y, dy = inputs["y"], inputs["dy"]
    if y.shape != dy.shape:  # broadcasting: the result has rank >= 1, so is an array
        return (1 - y * y) * dy
    out = ensure_array(np.multiply(y, y))
    np.subtract(1, out, out=out)
    np.multiply(out, dy, out=out)
    return out


@kernel("SigmoidGrad")
def _sigmoid_grad(inputs, attrs, backend):
    y, dy = inputs["y"], inputs["dy"]
    if y.shape != dy.shape:  # broadcasting: the result has rank >= 1, so is an array
        return y * (1 - y) * dy
    out = ensure_array(np.subtract(1, y))
    np.multiply(out, y, out=out)
    np.multiply(out, dy, out=out)
    return out


# --------------------------------------------------------------------------- special functions II

_unary("BesselI0e", _special_fn(_special.i0e))
_unary("BesselI1e", _special_fn(_special.i1e))
_unary("Erfinv", _special_fn(_special.erfinv))
_unary("Ndtri", _special_fn(_special.ndtri))


def _incomplete_gamma(f):
    # TensorFlow's domain: NaN for a <= 0 or x < 0 (SciPy gives P(0, x) = 1)
    def run(a, x):
        with np.errstate(invalid="ignore"):
            return np.where((a > 0) & (x >= 0), f(a, x), np.nan)
    return _special_fn(run)


_igamma = _incomplete_gamma(_special.gammainc)
_igammac = _incomplete_gamma(_special.gammaincc)
kernel("Igamma")(lambda inputs, attrs, backend: _igamma(inputs["a"], inputs["x"]))
kernel("Igammac")(lambda inputs, attrs, backend: _igammac(inputs["a"], inputs["x"]))


def _igamma_grad_a(a, x):
    # dP(a, x)/da has no SciPy function: central differences in float64 with one
    # Richardson step (error O(h^4), rounding about 1e-12), steps kept inside a > 0.
    a64, x64 = np.asarray(a, np.float64), np.asarray(x, np.float64)
    h = np.minimum(1e-3 * np.maximum(a64, 1.0), a64 / 4)

    def central(step):
        return (_special.gammainc(a64 + step, x64)
                - _special.gammainc(a64 - step, x64)) / (2 * step)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = (4 * central(h / 2) - central(h)) / 3
        return np.where((a64 > 0) & (x64 >= 0), d, np.nan)


kernel("IgammaGradA")(lambda inputs, attrs, backend: _special_fn(_igamma_grad_a)(
    inputs["a"], inputs["x"]))


@kernel("Betainc")
def _betainc(inputs, attrs, backend):
    a, b, x = inputs["a"], inputs["b"], inputs["x"]
    shape = broadcast_shapes(broadcast_shapes(a.shape, b.shape), x.shape)
    return _special_fn(_special.betainc)(*(np.broadcast_to(v, shape) for v in (a, b, x)))


@kernel("TruncateDiv")
def _truncate_div(inputs, attrs, backend):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("truncatediv", x, y)
    if x.dtype.kind in "iu":
        # exact for integers: remove C's remainder, then the quotient divides evenly
        return ensure_array(np.floor_divide(x - np.fmod(x, y), y))
    with np.errstate(divide="ignore", invalid="ignore"):
        return ensure_array(np.trunc(np.true_divide(x, y)).astype(x.dtype))


@kernel("TruncateMod")
def _truncate_mod(inputs, attrs, backend):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("truncatemod", x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ensure_array(np.fmod(x, y))
