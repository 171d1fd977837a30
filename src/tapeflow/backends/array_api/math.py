"""Array-API kernels of elementwise math (the special functions erf, lgamma, digamma and
polygamma have no standard function: they fall back to NumPy/SciPy)."""
from ._kernel import binary, unary, xp_kernel

for _op, _fn in [("Add", "add"), ("Sub", "subtract"), ("Mul", "multiply"),
                 ("RealDiv", "divide"), ("Pow", "pow"), ("Maximum", "maximum"),
                 ("Minimum", "minimum"), ("Equal", "equal"), ("NotEqual", "not_equal"),
                 ("Less", "less"), ("LessEqual", "less_equal"), ("Greater", "greater"),
                 ("GreaterEqual", "greater_equal"), ("LogicalAnd", "logical_and"),
                 ("LogicalOr", "logical_or"), ("LogicalXor", "logical_xor")]:
    binary(_op, _fn)

for _op, _fn in [("Neg", "negative"), ("Abs", "abs"), ("ComplexAbs", "abs"),
                 ("Square", "square"), ("Exp", "exp"), ("Expm1", "expm1"), ("Log", "log"),
                 ("Log1p", "log1p"), ("Sqrt", "sqrt"), ("Sin", "sin"), ("Cos", "cos"),
                 ("Tan", "tan"), ("Asin", "asin"), ("Acos", "acos"), ("Atan", "atan"),
                 ("Sinh", "sinh"), ("Cosh", "cosh"), ("Tanh", "tanh"), ("Asinh", "asinh"),
                 ("Acosh", "acosh"), ("Atanh", "atanh"), ("Floor", "floor"), ("Ceil", "ceil"),
                 ("Round", "round"), ("IsNan", "isnan"), ("IsInf", "isinf"),
                 ("IsFinite", "isfinite"), ("LogicalNot", "logical_not"), ("Conj", "conj"),
                 ("Real", "real"), ("Imag", "imag")]:
    unary(_op, _fn)


@xp_kernel("Reciprocal")
def reciprocal(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.ones_like(x) / x


@xp_kernel("Sign")
def sign(inputs, attrs, b):
    return b.xp.sign(inputs["x"])


@xp_kernel("ComplexSign")
def complex_sign(inputs, attrs, b):
    return b.xp.sign(inputs["x"])  # the standard's sign of a complex number is x / |x|


@xp_kernel("Rsqrt")
def rsqrt(inputs, attrs, b):
    return 1 / b.xp.sqrt(inputs["x"])


@xp_kernel("Atan2")
def atan2(inputs, attrs, b):
    return b.xp.atan2(inputs["y"], inputs["x"])


@xp_kernel("Angle")
def angle(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.atan2(b.xp.imag(x), b.xp.real(x))


def _no_int_zero(op, x, y, xp):
    if xp.isdtype(x.dtype, "integral") and bool(xp.any(y == 0)):
        raise ZeroDivisionError(f"{op}: integer division by zero")


@xp_kernel("FloorDiv")
def floor_div(inputs, attrs, b):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("floordiv", x, y, b.xp)
    return b.xp.floor_divide(x, y)


@xp_kernel("FloorMod")
def floor_mod(inputs, attrs, b):
    x, y = inputs["x"], inputs["y"]
    _no_int_zero("floormod", x, y, b.xp)
    return b.xp.remainder(x, y)


@xp_kernel("SquaredDifference")
def squared_difference(inputs, attrs, b):
    d = inputs["x"] - inputs["y"]
    return d * d


@xp_kernel("Sigmoid")
def sigmoid(inputs, attrs, b):
    x = inputs["x"]
    xp = b.xp
    if xp.isdtype(x.dtype, "complex floating"):
        return 1 / (1 + xp.exp(-x))
    # e^-|x| never overflows: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


@xp_kernel("Softplus")
def softplus(inputs, attrs, b):
    x, xp = inputs["x"], b.xp
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large |x|
    return xp.maximum(x, xp.zeros_like(x)) + xp.log1p(xp.exp(-xp.abs(x)))


@xp_kernel("Softsign")
def softsign(inputs, attrs, b):
    x = inputs["x"]
    return x / (1 + b.xp.abs(x))


@xp_kernel("Complex")
def complex_(inputs, attrs, b):
    xp = b.xp
    re, im = inputs["real"], inputs["imag"]
    dt = xp.complex64 if re.dtype == xp.float32 else xp.complex128
    return xp.astype(re, dt) + xp.astype(im, dt) * xp.asarray(1j, dtype=dt)


@xp_kernel("Cast")
def cast(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    dt = attrs["dtype"]
    if xp.isdtype(x.dtype, "complex floating") and not dt.is_complex:
        x = xp.real(x)
    if dt.is_bool and x.dtype != xp.bool:  # numbers to bool: compare with 0
        return x != xp.zeros_like(x)
    return xp.astype(x, b.dtype(dt))


@xp_kernel("TanhGrad")
def tanh_grad(inputs, attrs, b):
    y = inputs["y"]
    return (1 - y * y) * inputs["dy"]


@xp_kernel("SigmoidGrad")
def sigmoid_grad(inputs, attrs, b):
    y = inputs["y"]
    return y * (1 - y) * inputs["dy"]
