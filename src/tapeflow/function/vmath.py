"""Vectorizable float32 exp and tanh for fused kernels (function/fuse.py).

numba compiles `np.exp` and `np.tanh` on scalars to calls of the C library's scalar
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
NaN gives NaN; -inf and inf give 0 and inf, -1 and 1.

`PRELUDE` is their source, put at the top of a generated float32 module that uses them
(fuse.generate): numba caches a module's functions with it, and a change here changes
the generated source, so its kernels compile anew.
"""
from __future__ import annotations

OPS = ("Exp", "Tanh", "Sigmoid")  # the float32 ops whose numba loops use these
# (np.exp and np.tanh in generated expressions become these in float32 numba loops)
RENAMES = (("np.exp(", "vexp("), ("np.tanh(", "vtanh("))

PRELUDE = '''
from llvmlite import ir as _ir
from numba import types as _types
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def _float32_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 `bits` (an LLVM bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _ir.FloatType())
    return _types.float32(_types.int32), codegen


@njit(inline="always", error_model="numpy", cache=True)
def vexp(x):
    x = np.float32(x)
    c = min(max(x, np.float32(-104.0)), np.float32(89.0))  # (beyond: 0 or inf)
    n = np.floor(c * np.float32(1.44269504088896341) + np.float32(0.5))  # round(c / ln2)
    r = c - n * np.float32(0.693359375)
    r = r + n * np.float32(2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * (r * r) + r + np.float32(1.0)
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
    small = np.float32(-5.70498872745e-3)
    small = small * z + np.float32(2.06390887954e-2)
    small = small * z + np.float32(-5.37397155531e-2)
    small = small * z + np.float32(1.33314422036e-1)
    small = small * z + np.float32(-3.33332819422e-1)
    small = small * z * x + x
    large = np.float32(1.0) - np.float32(2.0) / (vexp(a + a) + np.float32(1.0))
    large = large if x >= np.float32(0.0) else -large
    return small if a < np.float32(0.625) else large
'''
