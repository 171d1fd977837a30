"""Matrix products split by rows over the intra-op threads, each part one call of the BLAS
NumPy itself calls (the OpenBLAS bundled in NumPy's wheels, found by its exported CBLAS
symbols), all parts started from one numba parallel loop.

Why not NumPy from a thread pool: handing work to a pool thread costs about 0.1 ms on a
virtual machine (the thread must wake and take the GIL), as much as splitting a 25 M
multiply-add product saves; OpenMP threads under numba's `prange` start in microseconds.
Why not OpenBLAS's own threads: they split some products along K, which changes the sums'
rounding with the thread count. A row of the product is the same BLAS computation whatever
rows its part holds, so the results equal `np.matmul`'s bit for bit, split or not
(tests/backends/test_gemm.py).

    >>> out = product(x, y)             # x @ y, or None where this path does not apply
    >>> update(w, x.T, dy, -1.0)        # w -= x^T dy in one product, or False
"""
from __future__ import annotations

import ctypes
import glob
import os
import time

import numpy as np

from ..._core.context import intra_op_threads
from ..._core.jit import Loop, set_threads
from ..._core.threads import choice_for

SPLIT_FROM = 1 << 22  # multiply-adds: smaller products run as one np.matmul
# Parts start on multiples of this many rows: BLAS computes rows in blocks of a few (its
# kernel's unroll) and the rows left over at the end of a call in another kernel, whose
# sums may round differently (float64: 1e-14 apart); aligned, every row is computed by
# the same kernel as in one call.
ROWS = 64
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS enums


def _numpy_blas() -> tuple | None:
    """(sgemm, dgemm, get_num_threads, set_num_threads) of NumPy's bundled OpenBLAS as
    ctypes functions (ILP64: 64-bit sizes), or None (another BLAS, another build:
    products run as np.matmul)."""
    here = os.path.dirname(np.__file__)
    for path in (glob.glob(os.path.join(here + ".libs", "*openblas*"))
                 + glob.glob(os.path.join(here, ".dylibs", "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)  # (already loaded by NumPy: the same library)
        except OSError:
            continue
        found = []
        for name, real in (("scipy_cblas_sgemm64_", ctypes.c_float),
                           ("scipy_cblas_dgemm64_", ctypes.c_double)):
            fn = getattr(lib, name, None)
            if fn is None:
                break
            i32, i64, ptr = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p
            fn.argtypes = [i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64, real,
                           ptr, i64]
            fn.restype = None
            found.append(fn)
        get = getattr(lib, "scipy_openblas_get_num_threads64_", None)
        put = getattr(lib, "scipy_openblas_set_num_threads64_", None)
        if len(found) == 2 and get is not None and put is not None:
            get.restype, put.argtypes, put.restype = ctypes.c_int, [ctypes.c_int], None
            return (*found, get, put)
    return None


_BLAS = _numpy_blas()
_SGEMM, _DGEMM = _BLAS[:2] if _BLAS is not None else (None, None)


def blas_threads() -> int | None:
    """The threads NumPy's BLAS uses for one product (OPENBLAS_NUM_THREADS, or as set
    since), or None when its BLAS is not the one this module knows."""
    return None if _BLAS is None else int(_BLAS[2]())


def set_blas_threads(n: int) -> None:
    """Set NumPy's BLAS threads (tests; threadpoolctl does this for users)."""
    if _BLAS is not None:
        _BLAS[3](int(n))


# The loops run only compiled by numba (jit.Loop with parallel=True binds `prange` to
# numba's); as plain Python, a range.
prange = range


def _split_sgemm(ta, tb, m, n, k, alpha, a, lda, a_row, b, ldb, beta, c,
                 parts):  # pragma: no cover (numba runs it)
    """C = alpha op(A) op(B) + beta C by rows [lo, hi) per part (starts rounded to
    multiples of ROWS); op(A)'s rows start `a_row` bytes apart."""
    for p in prange(parts):
        lo = 0 if p == 0 else (m * p // parts + ROWS // 2) // ROWS * ROWS
        hi = m if p == parts - 1 else (m * (p + 1) // parts + ROWS // 2) // ROWS * ROWS
        _SGEMM(_ROW_MAJOR, ta, tb, hi - lo, n, k, np.float32(alpha), a + lo * a_row, lda, b,
               ldb, np.float32(beta), c + lo * n * 4, n)


def _split_dgemm(ta, tb, m, n, k, alpha, a, lda, a_row, b, ldb, beta, c,
                 parts):  # pragma: no cover (numba runs it)
    for p in prange(parts):
        lo = 0 if p == 0 else (m * p // parts + ROWS // 2) // ROWS * ROWS
        hi = m if p == parts - 1 else (m * (p + 1) // parts + ROWS // 2) // ROWS * ROWS
        _DGEMM(_ROW_MAJOR, ta, tb, hi - lo, n, k, alpha, a + lo * a_row, lda, b, ldb, beta,
               c + lo * n * 8, n)


# (not cached on disk: a compiled call to a C function holds its address in this process)
_LOOPS = {} if _BLAS is None else {
    np.dtype(np.float32): Loop(_split_sgemm, parallel=True, cache=False),
    np.dtype(np.float64): Loop(_split_dgemm, parallel=True, cache=False)}
_choices: dict = {}  # (shapes, layouts, dtype) -> ThreadChoice
# Large products seen per dtype: the split loop is compiled (in the background, about a
# second: numba's parallel pipeline holds its compiler lock, so a fused kernel loading
# from the disk cache meanwhile waits) only once a program has run several, not during
# the first call of a traced function.
COMPILE_AFTER = 3
_seen: dict = {}


def _loop_ready(dtype, args):
    """The compiled split loop for `dtype`, or None (not yet asked for, compiling)."""
    seen = _seen.get(dtype, 0)
    if seen < COMPILE_AFTER:
        _seen[dtype] = seen + 1
        return None
    return _LOOPS[dtype].ready(*args)


def _operand(x, rows: int, cols: int) -> tuple | None:
    """(transpose flag, leading dimension, bytes between rows) of a 2-D operand as BLAS
    reads it in place, or None (not contiguous either way)."""
    if x.flags.c_contiguous:
        return _NO_TRANS, max(cols, 1), cols * x.itemsize
    if x.flags.f_contiguous:  # the transpose of a row-major array
        return _TRANS, max(rows, 1), x.itemsize
    return None


def _gemm(x, y, out, alpha: float, beta: float, split_from: int) -> bool:
    """out = alpha x @ y + beta out through NumPy's BLAS, its rows split over the
    intra-op threads when the product has at least `split_from` multiply-adds and that
    was measured faster (ThreadChoice); False (nothing done) where BLAS cannot read the
    operands in place or this BLAS is not the known one."""
    if _BLAS is None or x.dtype not in _LOOPS or y.dtype != x.dtype or out.dtype != x.dtype:
        return False
    m, k = x.shape
    n = y.shape[1]
    a, b = _operand(x, m, k), _operand(y, k, n)
    if a is None or b is None or not out.flags.c_contiguous or 0 in (m, n, k):
        return False
    args = (a[0], b[0], m, n, k, alpha, x.ctypes.data, a[1], a[2], y.ctypes.data, b[1], beta,
            out.ctypes.data)
    parts = min(intra_op_threads(), m // ROWS)
    # (a BLAS running threads of its own splits large products itself, its own way)
    run = None
    if parts > 1 and m * k * n >= split_from and blas_threads() == 1:
        run = _loop_ready(x.dtype, args + (1,))
    if run is None:  # one BLAS call from here
        (_SGEMM if x.dtype == np.float32 else _DGEMM)(
            _ROW_MAJOR, a[0], b[0], m, n, k, alpha, x.ctypes.data, a[1], y.ctypes.data, b[1],
            beta, out.ctypes.data, n)
        return True
    choice = choice_for(_choices, (x.shape, y.shape, a[0], b[0], x.dtype, beta))
    several = choice.several()
    start = time.perf_counter()
    if several:
        set_threads(parts)
        run(*args, parts)
    else:
        run(*args, 1)
    choice.record(several, time.perf_counter() - start)
    return True


def product(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """`x @ y` for large 2-D operands of one real float dtype, its rows split over the
    intra-op threads when that was measured faster (until the split loop has compiled,
    one call of the same BLAS np.matmul calls); None where the split cannot apply (small,
    not contiguous, no known BLAS, a BLAS with threads of its own): the caller computes
    the product (np.matmul) itself."""
    m, k = x.shape
    if (x.dtype not in _LOOPS or m * k * y.shape[1] < SPLIT_FROM or blas_threads() != 1
            or min(intra_op_threads(), m // ROWS) < 2):
        return None
    out = np.empty((m, y.shape[1]), x.dtype)
    return out if _gemm(x, y, out, 1.0, 0.0, SPLIT_FROM) else None


def update(ref: np.ndarray, x: np.ndarray, y: np.ndarray, sign: float) -> bool:
    """`ref += sign * (x @ y)` as one BLAS product accumulating into `ref` (C = alpha A B
    + C: no product array, no second pass over it), split over the intra-op threads for
    large products; False (nothing done) where BLAS cannot (another dtype, layout or
    BLAS): the caller does it in two steps. Equal to the two steps up to rounding (BLAS
    may add `ref` in before the last block of the sums)."""
    return _gemm(x, y, ref, float(sign), 1.0, SPLIT_FROM)
