"""Vectorizable float32 exp, tanh, log, log1p, expm1, erf and erfc for fused kernels
(function/fuse.py).

numba compiles `np.exp`, `np.log` and the rest on scalars to calls of the C library's scalar
functions, which keep LLVM from vectorizing a loop: a large fused region holding one ran
as NumPy blocks instead (NumPy's loops are SIMD). These are the same functions in
straight-line arithmetic (Cephes's float32 polynomials), which LLVM vectorizes like any
other expression, so such a region is one fused loop again, reading each input once.

- `vexp`: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is exact), e^r by a
  polynomial, and 2^n put into exponent bits in two halves (so results in the subnormal
  range, and overflow to inf, come out as IEEE arithmetic makes them); within 1 ulp of
  the correctly rounded result where it is normal.
- `vtanh`: an odd polynomial for |x| < 0.625, 1 - 2 / (e^(2|x|) + 1) above (with the
  sign of x); within 2 ulp.
- `vlog`: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled up first, exponent
  and mantissa taken from the bits), log(m) by a polynomial in m - 1, e ln2 added in two
  parts; within 1 ulp. 0 gives -inf, negative numbers NaN, inf inf.
- `vlog1p` and `vexpm1`: Goldberg's and Kahan's forms, u = 1 + x and log(u) x / (u - 1),
  u = e^x and (u - 1) x / log(u), whose rounding errors cancel; within 2 ulp.
- `verf` and `verfc`: x P(x^2) below |x| = 0.875, above it erfc(|x|) = e^(-x^2) S(1/|x|)
  / |x| with e^(-x^2) as e^(-h^2) e^(-(|x| - h)(|x| + h)) for h, |x| to 12 bits (so the
  exponent is exact); P and S fitted here (Chebyshev least squares in float64, evaluated
  around their interval's middle); erf within 2 ulp, erfc within 6 ulp where normal.
NaN gives NaN; -inf and inf give 0 and inf, -1 and 1 (tanh), -1 and inf (expm1).

`PRELUDE` is their source, put at the top of a generated float32 module that uses them
(fuse.generate): numba caches a module's functions with it, and a change here changes
the generated source, so its kernels compile anew.
"""
from __future__ import annotations

import numpy as np

from .._core import jit

# np.exp and np.tanh in generated expressions become these in the float32 numba loops of
# a region holding an op declared `vector_math` (its Pointwise facts, with the op)
RENAMES = (("np.exp(", "vexp("), ("np.tanh(", "vtanh("), ("np.log(", "vlog("),
           ("np.log1p(", "vlog1p("), ("np.expm1(", "vexpm1("), ("np.erf(", "verf("),
           ("np.erfc(", "verfc("))

def _float32s(*values: float) -> tuple:
    return tuple(float(np.float32(v)) for v in values)


# each polynomial's float32 coefficients, highest degree first (Horner's order): one table
# for the compiled functions (PRELUDE) and their NumPy twins, which must give the same bits
EXP_P = _float32s(1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                  1.6666665459e-1, 5.0000001201e-1)
TANH_P = _float32s(-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                   -3.33332819422e-1)
LOG_P = _float32s(7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                  1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                  3.3333331174e-1)
ERF_P = _float32s(8.69237701408565e-05, -0.0006216394831426442, 0.0038257536944001913,
                  -0.019994746893644333, 0.0861339420080185, -0.3004601001739502,
                  0.9995275139808655)
ERFC_S = _float32s(-0.07197382301092148, 0.04431256279349327, 0.05384807288646698,
                   -0.06854980438947678, 0.04346204549074173, -0.02283419296145439,
                   -0.009101738221943378, 0.04960223659873009, -0.07906045764684677,
                   0.07338732481002808, -0.0021817469969391823, -0.17157159745693207,
                   0.4902225136756897)


def _horner(var: str, x: str, coefficients: tuple) -> str:
    """Horner's rule as compiled statements: `var = c0`, then `var = var * x + c`."""
    return "".join([f"    {var} = np.float32({coefficients[0]!r})\n"] + [
        f"    {var} = {var} * {x} + np.float32({c!r})\n" for c in coefficients[1:]])


def _constant(value) -> np.ndarray:
    """A float32 constant of the NumPy formulations (below): a 0-d array, which a ufunc
    takes at half the cost of a NumPy scalar (whose conversion dominates on small arrays)."""
    return np.array(value, np.float32)


_HORNER: dict = {}  # coefficients -> their 0-d arrays


def _horner_numpy(x: np.ndarray, coefficients: tuple, out: np.ndarray | None = None
                  ) -> np.ndarray:
    """Horner's rule over a float32 array into `out` (new if None; not `x`): the compiled
    statements' operations in order. Their `var = c0; var = var * x + c1` is computed
    as x * c0 + c1: the product is correctly rounded whichever operand comes first."""
    cs = _HORNER.get(coefficients)
    if cs is None:
        cs = _HORNER[coefficients] = tuple(_constant(c) for c in coefficients)
    y = np.multiply(x, cs[0], out=out)
    np.add(y, cs[1], out=y)
    for c in cs[2:]:
        np.multiply(y, x, out=y)
        np.add(y, c, out=y)
    return y


PRELUDE = (
    '''
from tapeflow._core.jit import lazy_intrinsic as _intrinsic


@_intrinsic
def _float32_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 `bits` (an LLVM bitcast)."""
    from llvmlite import ir  # (numba is imported only when the module compiles)
    from numba import types

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@_intrinsic
def _int32_bits(typingctx, value):
    """The int32 bit pattern of the float32 `value` (an LLVM bitcast)."""
    from llvmlite import ir
    from numba import types

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@njit(inline="always", error_model="numpy", cache=True)
def vexp(x):
    x = np.float32(x)
    c = min(max(x, np.float32(-104.0)), np.float32(89.0))  # (beyond: 0 or inf)
    n = np.floor(c * np.float32(1.44269504088896341) + np.float32(0.5))  # round(c / ln2)
    r = c - n * np.float32(0.693359375)
    r = r + n * np.float32(2.12194440e-4)
'''
    + _horner('p', 'r', EXP_P)
    + '''    p = p * (r * r) + r + np.float32(1.0)
    k = np.int32(n)  # (NaN: any value; the result is NaN through p)
    half = k >> np.int32(1)  # 2^n as 2^half * 2^(n - half), each a normal float32
    s1 = _float32_bits((half + np.int32(127)) << np.int32(23))
    s2 = _float32_bits((k - half + np.int32(127)) << np.int32(23))
    y = p * s1 * s2
    y = np.float32(0.0) if x < c else y  # (NaN compares false: it stays NaN)
    return np.float32(np.inf) if x > c else y


@njit(inline="always", error_model="numpy", cache=True)
def vtanh(x):
    x = np.float32(x)
    a = abs(x)
    z = x * x
'''
    + _horner('small', 'z', TANH_P)
    + '''    small = small * z * x + x
    large = np.float32(1.0) - np.float32(2.0) / (vexp(a + a) + np.float32(1.0))
    large = large if x >= np.float32(0.0) else -large
    return small if a < np.float32(0.625) else large


@njit(inline="always", error_model="numpy", cache=True)
def vlog(x):
    x = np.float32(x)
    tiny = x < np.float32(1.17549435e-38)  # (subnormal: scaled by 2^25 first)
    bits = _int32_bits(x * np.float32(33554432.0) if tiny else x)
    e = ((bits >> np.int32(23)) & np.int32(255)) - np.int32(126)
    e = e - np.int32(25) if tiny else e
    m = _float32_bits((bits & np.int32(8388607)) | np.int32(1056964608))  # in [1/2, 1)
    low = m < np.float32(0.707106781186547524)
    e = e - np.int32(1) if low else e
    f = (m + m) - np.float32(1.0) if low else m - np.float32(1.0)
    z = f * f
'''
    + _horner('y', 'f', LOG_P)
    + '''    y = y * f * z
    fe = np.float32(e)
    y = y + fe * np.float32(-2.12194440e-4)
    y = y + z * np.float32(-0.5)
    r = f + y
    r = r + fe * np.float32(0.693359375)
    r = np.float32(np.inf) if x == np.float32(np.inf) else r
    r = np.float32(-np.inf) if x == np.float32(0.0) else r
    return np.float32(np.nan) if x < np.float32(0.0) or x != x else r


@njit(inline="always", error_model="numpy", cache=True)
def vlog1p(x):
    x = np.float32(x)
    u = np.float32(1.0) + x
    d = u - np.float32(1.0)
    r = vlog(u) * (x / d)
    r = x if d == np.float32(0.0) else r
    r = u if u == np.float32(np.inf) else r
    return np.float32(np.nan) if r != r else r  # (one NaN: not an operand's payload)


@njit(inline="always", error_model="numpy", cache=True)
def vexpm1(x):
    x = np.float32(x)
    u = vexp(x)
    d = u - np.float32(1.0)
    r = d * (x / vlog(u))
    r = x if u == np.float32(1.0) else r
    r = d if d == np.float32(-1.0) else r
    r = u if u == np.float32(np.inf) else r
    return np.float32(np.nan) if r != r else r  # (one NaN: not an operand's payload)


@njit(inline="always", error_model="numpy", cache=True)
def _verf_parts(x):
    """(|x|, erf(x) for |x| < 0.875, erfc(|x|) for |x| >= 0.875)"""
    a = abs(x)
    u = x * x - np.float32(0.3828125)
'''
    + _horner('p', 'u', ERF_P)
    + '''    small = x * p
    t = np.float32(1.0) / a
    v = t - np.float32(0.6209335327148438)
'''
    + _horner('s', 'v', ERFC_S)
    + '''    high = _float32_bits(_int32_bits(a) & np.int32(-4096))  # a^2 = high^2 + low, exactly
    low = (a - high) * (a + high)
    tail = s * t * (vexp(-(high * high)) * vexp(-low))
    tail = np.float32(0.0) if a >= np.float32(10.1) else tail  # (rounds to 0; inf too)
    return a, small, tail


@njit(inline="always", error_model="numpy", cache=True)
def verf(x):
    x = np.float32(x)
    a, small, tail = _verf_parts(x)
    large = np.float32(1.0) - tail
    large = large if x >= np.float32(0.0) else -large
    r = small if a < np.float32(0.875) else large
    return np.float32(np.nan) if r != r else r


@njit(inline="always", error_model="numpy", cache=True)
def verfc(x):
    x = np.float32(x)
    a, small, tail = _verf_parts(x)
    large = tail if x >= np.float32(0.0) else np.float32(2.0) - tail
    r = np.float32(1.0) - small if a < np.float32(0.875) else large
    return np.float32(np.nan) if r != r else r
'''
)


# ------------------------------------------------ the same functions for NumPy blocks
# A fused region runs as NumPy blocks until its compiled loop is ready (and a large one
# with the C library's transcendental functions always does). NumPy's own exp or sin are
# not the C library's (nor these polynomials): the blocks call the functions the
# compiled loops call, so a region gives the same bits whichever way it ran (API 6.7):
# the float32 polynomials as the same float32 operations in NumPy (`_NUMPY`: nothing to
# compile, so a program's first steps need no compiler), the C library's functions each
# as a small compiled loop over an array (one per function and dtype, on the machine's
# disk cache after its first compile, tenths of a second).
ELEMENTARY = ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "erf", "erfc")  # libm's
# (NumPy has no erf: a region's expression says `np.erf(...)`, which the loops of a region
# without vmath's functions call as the C library's)
LOOP_RENAMES = (("np.erf(", "math.erf("), ("np.erfc(", "math.erfc("))
VECTOR = ("vexp", "vtanh", "vlog", "vlog1p", "vexpm1", "verf", "verfc")  # (float32, above)


# The NumPy formulations run a program's first steps, before any compile, on arrays of
# a few thousand elements, where each NumPy call's fixed cost is most of its time: they
# compute in place, with 0-d constants, and in fewer calls than the compiled statements
# where that gives the same bits (tests/function/test_vmath.py checks every function on
# random bit patterns against the compiled loops). Each takes a 1-d float32 array
# (`_apply` flattens: on 0-d arrays ufuncs would return scalars, which `out=` refuses).
_EXP_LOW, _EXP_HIGH = _constant(-150.0), _constant(129.0)
_LOG2E, _LN2_HIGH, _LN2_LOW = (_constant(1.44269504088896341), _constant(0.693359375),
                               _constant(2.12194440e-4))
_ZERO, _HALF, _ONE, _TWO = _constant(0.0), _constant(0.5), _constant(1.0), _constant(2.0)
_TANH_SMALL = _constant(0.625)
_FLOAT64_BIAS = np.array(1023, np.int64)


def _exp_clamped(c: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """`vexp` of a float32 array `c` already >= -150 (or NaN), in a new array; `c` and
    `scratch` (another array of its shape) are overwritten.

    Where the compiled statements clamp to [-104, 89] and then write 0 and inf below and
    above, this clamps to [-150, 129] and lets the last rounding make them (e^-104 is
    under half the smallest subnormal, e^89 over the largest float32). Where they scale
    by 2^n in two float32 halves (each product exact but the last), this scales in
    float64, exactly, and rounds once to float32: the same correctly rounded product,
    in subnormals and overflow too, in 6 calls instead of 11."""
    np.minimum(c, _EXP_HIGH, out=c)
    n = np.multiply(c, _LOG2E)
    np.add(n, _HALF, out=n)
    np.floor(n, out=n)
    r = np.multiply(n, _LN2_HIGH)
    np.subtract(c, r, out=r)
    t = np.multiply(n, _LN2_LOW, out=c)
    np.add(r, t, out=r)
    p = _horner_numpy(r, EXP_P, out=scratch)
    np.multiply(r, r, out=t)
    np.multiply(p, t, out=p)
    np.add(p, r, out=p)
    np.add(p, _ONE, out=p)
    k = n.astype(np.int64)  # (NaN: any value, as in the loop; the result is NaN)
    np.add(k, _FLOAT64_BIAS, out=k)
    np.left_shift(k, 52, out=k)  # 2^n's float64 bits: n is within [-216, 186]
    y = p.astype(np.float64)
    np.multiply(y, k.view(np.float64), out=y)
    return y.astype(np.float32)


def _vexp_numpy(x: np.ndarray) -> np.ndarray:
    """`vexp` over a 1-d float32 array in NumPy: the compiled loops' bits without
    compiling anything (see _exp_clamped)."""
    return _exp_clamped(np.maximum(x, _EXP_LOW), np.empty_like(x))


def _vtanh_numpy(x: np.ndarray) -> np.ndarray:
    """`vtanh` over a 1-d float32 array in NumPy (the same bits, as `_vexp_numpy`)."""
    a = np.abs(x)
    z = np.multiply(x, x)
    small = _horner_numpy(z, TANH_P)
    np.multiply(small, z, out=small)
    np.multiply(small, x, out=small)
    np.add(small, x, out=small)
    use_small = np.less(a, _TANH_SMALL)
    large = _exp_clamped(np.add(a, a, out=z), a)  # (2|x| >= 0 or NaN: no lower clamp)
    np.add(large, _ONE, out=large)
    np.divide(_TWO, large, out=large)
    np.subtract(_ONE, large, out=large)
    out = np.negative(large)  # (a NaN's sign bit flips, as in the loop)
    np.putmask(out, np.greater_equal(x, _ZERO), large)
    np.putmask(out, use_small, small)
    return out


_LOG_TINY, _LOG_SCALE = _constant(1.17549435e-38), _constant(33554432.0)
_SQRT_HALF, _LOG_LN2_LOW = _constant(0.707106781186547524), _constant(-2.12194440e-4)
_MINUS_HALF, _INF, _NAN = _constant(-0.5), _constant(np.inf), _constant(np.nan)
_MANTISSA, _HALF_BITS = np.array(8388607, np.int32), np.array(1056964608, np.int32)
_EXPONENT_BIAS, _SUBNORMAL_SHIFT = np.array(126, np.int32), np.array(25, np.int32)


def _vlog_numpy(x: np.ndarray) -> np.ndarray:
    """`vlog` over a 1-d float32 array in NumPy (the same bits, as `_vexp_numpy`). Lanes
    whose result the last lines decide (0, negative, inf, NaN) may compute anything
    before: only positive finite lanes follow the compiled statements."""
    tiny = np.less(x, _LOG_TINY)  # (subnormal: scaled by 2^25 first)
    bits = np.multiply(x, np.where(tiny, _LOG_SCALE, _ONE)).view(np.int32)
    e = np.right_shift(bits, 23)
    np.bitwise_and(e, 255, out=e)
    np.subtract(e, _EXPONENT_BIAS, out=e)
    np.subtract(e, np.multiply(tiny, _SUBNORMAL_SHIFT), out=e)
    np.bitwise_and(bits, _MANTISSA, out=bits)
    m = np.bitwise_or(bits, _HALF_BITS, out=bits).view(np.float32)  # in [1/2, 1)
    low = np.less(m, _SQRT_HALF)
    np.subtract(e, low, out=e)
    f = np.multiply(m, low)  # m + m where low, m where not (exact): then - 1
    np.add(f, m, out=f)
    np.subtract(f, _ONE, out=f)
    z = np.multiply(f, f)
    y = _horner_numpy(f, LOG_P)
    np.multiply(y, f, out=y)
    np.multiply(y, z, out=y)
    fe = e.astype(np.float32)
    np.add(y, np.multiply(fe, _LOG_LN2_LOW, out=m), out=y)
    np.add(y, np.multiply(z, _MINUS_HALF, out=z), out=y)
    r = np.add(f, y, out=y)
    np.add(r, np.multiply(fe, _LN2_HIGH, out=fe), out=r)
    if not (np.all(np.greater(x, _ZERO)) and np.all(np.less(x, _INF))):
        np.putmask(r, np.equal(x, _INF), _INF)
        np.putmask(r, np.equal(x, _ZERO), -_INF)
        np.putmask(r, np.less(x, _ZERO) | np.not_equal(x, x), _NAN)
    return r


def _vlog1p_numpy(x: np.ndarray) -> np.ndarray:
    """`vlog1p` over a 1-d float32 array in NumPy (the same bits)."""
    u = np.add(_ONE, x)
    d = np.subtract(u, _ONE)
    r = _vlog_numpy(u)
    np.multiply(r, np.divide(x, d), out=r)
    np.putmask(r, np.equal(d, _ZERO), x)
    np.putmask(r, np.equal(u, _INF), u)
    np.putmask(r, np.not_equal(r, r), _NAN)  # (one NaN: not an operand's payload)
    return r


def _vexpm1_numpy(x: np.ndarray) -> np.ndarray:
    """`vexpm1` over a 1-d float32 array in NumPy (the same bits)."""
    u = _vexp_numpy(x)
    d = np.subtract(u, _ONE)
    r = np.divide(x, _vlog_numpy(u))
    np.multiply(d, r, out=r)
    np.putmask(r, np.equal(u, _ONE), x)
    np.putmask(r, np.equal(d, -_ONE), d)
    np.putmask(r, np.equal(u, _INF), u)
    np.putmask(r, np.not_equal(r, r), _NAN)
    return r


_ERF_SHIFT, _ERFC_SHIFT, _ERF_ZERO_FROM = (_constant(0.3828125), _constant(0.6209335327148438),
                                          _constant(10.1))
_HIGH_BITS = np.array(-4096, np.int32)


def _verf_parts_numpy(x: np.ndarray) -> tuple:
    """`_verf_parts` over a 1-d float32 array in NumPy (the same bits)."""
    a = np.abs(x)
    u = np.multiply(x, x)
    np.subtract(u, _ERF_SHIFT, out=u)
    small = _horner_numpy(u, ERF_P)
    np.multiply(x, small, out=small)
    t = np.divide(_ONE, a)
    v = np.subtract(t, _ERFC_SHIFT)
    tail = _horner_numpy(v, ERFC_S)
    high = np.bitwise_and(a.view(np.int32), _HIGH_BITS).view(np.float32)
    low = np.subtract(a, high, out=u)  # a^2 = high^2 + low, exactly
    np.multiply(low, np.add(a, high, out=v), out=low)
    np.multiply(high, high, out=high)
    scale = _vexp_numpy(np.negative(high, out=high))
    np.multiply(scale, _vexp_numpy(np.negative(low, out=low)), out=scale)
    np.multiply(tail, t, out=tail)
    np.multiply(tail, scale, out=tail)
    np.putmask(tail, np.greater_equal(a, _ERF_ZERO_FROM), _ZERO)  # (rounds to 0; inf too)
    return a, small, tail


_ERF_SMALL = _constant(0.875)


def _verf_numpy(x: np.ndarray) -> np.ndarray:
    """`verf` over a 1-d float32 array in NumPy (the same bits)."""
    a, small, tail = _verf_parts_numpy(x)
    large = np.subtract(_ONE, tail, out=tail)
    r = np.negative(large)  # (a NaN's sign bit flips, as in the loop)
    np.putmask(r, np.greater_equal(x, _ZERO), large)
    np.putmask(r, np.less(a, _ERF_SMALL), small)
    np.putmask(r, np.not_equal(r, r), _NAN)
    return r


def _verfc_numpy(x: np.ndarray) -> np.ndarray:
    """`verfc` over a 1-d float32 array in NumPy (the same bits)."""
    a, small, tail = _verf_parts_numpy(x)
    r = np.subtract(_TWO, tail)
    np.putmask(r, np.greater_equal(x, _ZERO), tail)
    np.putmask(r, np.less(a, _ERF_SMALL), np.subtract(_ONE, small, out=small))
    np.putmask(r, np.not_equal(r, r), _NAN)
    return r


# float32 functions NumPy computes with the compiled loops' bits: no compile needed
_NUMPY = {"vexp": _vexp_numpy, "vtanh": _vtanh_numpy, "vlog": _vlog_numpy,
          "vlog1p": _vlog1p_numpy, "vexpm1": _vexpm1_numpy, "verf": _verf_numpy,
          "verfc": _verfc_numpy}

_ELEMENTARY_PREFIX = dict([(name, "") for name in VECTOR] + [("erf", "math."), ("erfc", "math.")])
_ELEMENTARY_SOURCE = ("# generated by tapeflow: elementary functions over arrays\n"
                      "import math\nimport numpy as np\n"
                      "from tapeflow._core.jit import lazy_njit as njit\n" + PRELUDE + "".join(
                          f"\n\ndef {name}_array(x, out):\n    for i in range(x.shape[0]):\n"
                          f"        out[i] = {_ELEMENTARY_PREFIX.get(name, 'np.')}{name}(x[i])\n"
                          for name in ELEMENTARY + VECTOR))
_loops: dict = {}


def _loop(name: str) -> jit.Loop:
    loop = _loops.get(name)
    if loop is None:
        module = jit.source_module(_ELEMENTARY_SOURCE, "elementary")
        loop = _loops[name] = jit.Loop(getattr(module, f"{name}_array"))
    return loop


def prepare(names) -> None:
    """Start the background compiles of the float32 loops of the functions `names` (from
    VECTOR) a region's NumPy blocks call: asked before the region's own compile, they are
    ready long before it (a loop over an array of one function compiles in a fraction of
    a second; a large region's loop takes seconds), and from then on the blocks call them
    instead of the NumPy formulations, whose two dozen NumPy calls cost more than the
    loop on small arrays (the same bits either way)."""
    one = np.empty(1, np.float32)
    for name in names:
        _loop(name).ready(one, one)


def _apply(name: str, x):
    """`name` of every element of `x` (an array or a NumPy scalar) by its compiled loop."""
    x = np.asarray(x)
    if name in _NUMPY and x.dtype == np.float32:
        run = None
        if jit.bought():  # (before, numba's import would cost more than it saves)
            flat = np.ascontiguousarray(x).reshape(-1)
            out = np.empty_like(flat)
            run = _loop(name).ready(flat, out)
        if run is None:  # (compiling: the NumPy formulation, with the loop's bits)
            with np.errstate(all="ignore"):  # (overflow to inf and NaN as IEEE makes them)
                return _NUMPY[name](x.reshape(-1)).reshape(x.shape)
        run(flat, out)
        return out.reshape(x.shape)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    run = _loop(name).ready_now(flat, out)
    if run is None:  # (numba missing or failing: no region is fused then)
        raise RuntimeError(f"tapeflow: numba could not compile the elementary {name}")
    run(flat, out)
    return out.reshape(x.shape)


class _Elementary:
    """`blocks.exp(x)` and so on: what generated NumPy blocks call (fuse.generate)."""

    def __getattr__(self, name: str):
        if name not in ELEMENTARY + VECTOR:
            raise AttributeError(name)
        return lambda x: _apply(name, x)


blocks = _Elementary()
# the text a generated NumPy block calls for each function, in the order to replace
BLOCK_RENAMES = tuple((f"np.{name}(", f"_vm.blocks.{name}(") for name in ELEMENTARY)
VECTOR_BLOCK_RENAMES = tuple((old, f"_vm.blocks.{new}") for old, new in RENAMES)
