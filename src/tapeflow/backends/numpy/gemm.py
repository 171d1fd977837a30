"""Matrix products as tapeflow's kernels run them, on threads chosen from the product's size
and the intra-op threads alone (API 6.7; kernels that call BLAS run in `blas_threads`):

- below BLAS_THREADS_FROM multiply-adds, BLAS on the calling thread: waking other threads
  costs more than they save, on a busy machine a product may wait for one, and BLAS's
  threads spin on a core after each product they share;
- up to SPLIT_FROM, BLAS's own threads, one per intra-op thread;
- from SPLIT_FROM, rows split into two parts per intra-op thread, each one single-threaded
  BLAS call (NumPy's `matmul`, or SciPy's public BLAS wrappers for `C += alpha A B` in
  place, which only ever run on one thread), which the calling thread and the pool's
  take in turn: a thread slowed by
  another process's work delays only the part it took (measured on 2 busy cores: a
  512x512x512 product on BLAS's two threads took 24 ms, 2 quiet).

BLAS's own threads and a split by rows may round a product's last bits differently from
one thread (a BLAS kernel may treat the rows or columns at the end of a call otherwise:
on some CPUs the last bits differ), but the same shapes and thread setting always take
the same way, so give the same bits.

    >>> out = product(x, y)             # x @ y, or None: the caller calls np.matmul
    >>> update(w, x.T, dy, -1.0)        # w -= x^T dy in one product, or False
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas as _blas

from ..._core.context import intra_op_threads
from ..._core.threads import blas_threads, run_parts

# Multiply-adds from which BLAS runs on the intra-op threads. BLAS's idle threads spin
# for a while after each product they share, so one such product per step keeps a core
# busy for good: it starved the compile worker (an LSTM's first 100 steps, 2 threads:
# 6.7 s, 5.4 with this bound) and doubled the process's CPU time. Measured on 2 cores
# with the calling thread busy between products (as in a step): a 64x64x256 product
# (1 M), 46 us on one thread and 44 on two; 512x128x128 (8 M), 222 and 202;
# 256x256x256 (17 M), 395 and 348; 2016x64x256 (33 M), 850 and 494.
BLAS_THREADS_FROM = 1 << 24
# Multiply-adds from which a product splits by rows (handing a part to a pool thread costs
# 0.1-1 ms on a virtual machine: only large products repay it; 134 M: 2.0 ms on BLAS's two
# threads and 2.8 split when quiet, 24 and 12 ms while two other processes ran products).
SPLIT_FROM = 1 << 25
# Parts start on multiples of this many rows (BLAS computes rows in blocks of a few: most
# rows of a part are then computed as in one call).
ROWS = 64
_GEMM = {np.dtype(np.float32): _blas.sgemm, np.dtype(np.float64): _blas.dgemm}


def parts_for(m: int, k: int, n: int) -> int:
    """How many parts a product of [m, k] by [k, n] splits into, from its size and the
    intra-op threads alone: two per thread, so a thread slowed by another process's work
    leaves its second part to the others."""
    threads = intra_op_threads()
    if m * k * n < SPLIT_FROM or threads < 2:
        return 1
    return max(1, min(2 * threads, m // ROWS))


def _run_parts(run, m: int, parts: int) -> None:
    """run(lo, hi) for each part of m rows, inner boundaries on multiples of ROWS (fixed
    by the shape and thread setting), taken by this thread and the pool's in turn."""
    bounds = [0] + [(m * p // parts + ROWS // 2) // ROWS * ROWS for p in range(1, parts)]
    bounds.append(m)
    run_parts(run, list(zip(bounds[:-1], bounds[1:])), intra_op_threads())


def product(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """`x @ y` for 2-D operands on the threads their size asks for (see the module
    docstring), or None for a product small enough for the calling thread: the caller
    calls np.matmul (its kernel holds BLAS to one thread)."""
    m, k = x.shape
    n = y.shape[1]
    parts = parts_for(m, k, n)
    if parts < 2:
        threads = blas_threads_for(m, k, n)
        if threads < 2:
            return None
        with blas_threads(threads):
            return np.matmul(x, y)
    out = np.empty((m, n), np.result_type(x, y))

    def run(lo, hi):
        np.matmul(x[lo:hi], y, out=out[lo:hi])

    _run_parts(run, m, parts)
    return out


def blas_threads_for(m: int, k: int, n: int) -> int:
    """BLAS's threads for an unsplit product of [m, k] by [k, n]."""
    return intra_op_threads() if m * k * n >= BLAS_THREADS_FROM else 1


def _operand(a: np.ndarray) -> tuple | None:
    """(array, transpose flag) for Fortran BLAS reading op(a) = a without a copy: a itself
    when it is column-major, else its transpose (row-major a), or None."""
    if a.flags.f_contiguous:
        return a, 0
    if a.flags.c_contiguous:
        return a.T, 1
    return None


def _accumulate(ref: np.ndarray, x: np.ndarray, y: np.ndarray, alpha: float) -> bool:
    """ref += alpha x @ y in ref's buffer through one BLAS gemm, or False."""
    gemm = _GEMM.get(ref.dtype)
    # BLAS sees row-major ref as column-major ref.T: ref.T += alpha y.T @ x.T
    a, b = _operand(y.T), _operand(x.T)
    if gemm is None or a is None or b is None or not ref.flags.c_contiguous:
        return False
    out = gemm(alpha, a[0], b[0], beta=1.0, c=ref.T, trans_a=a[1], trans_b=b[1],
               overwrite_c=1)
    if not np.shares_memory(out, ref):  # (SciPy copied: a layout it would not take)
        ref[...] = out.T
    return True


def update(ref: np.ndarray, x: np.ndarray, y: np.ndarray, sign: float) -> bool:
    """`ref += sign * (x @ y)` as BLAS products accumulating into `ref` (C = alpha A B + C:
    no product array, no second pass over it), split by rows like `product`; False
    (nothing done) where BLAS cannot (another dtype or layout): the caller does it in two
    steps. Equal to the two steps up to rounding (BLAS may add `ref` in before the last
    block of the sums)."""
    if (ref.ndim != 2 or x.ndim != 2 or y.ndim != 2 or ref.dtype not in _GEMM
            or x.dtype != ref.dtype or y.dtype != ref.dtype or not ref.flags.c_contiguous
            or 0 in x.shape + y.shape):
        return False
    m, k = x.shape
    parts = parts_for(m, k, y.shape[1])
    if parts < 2:
        threads = blas_threads_for(m, k, y.shape[1])
        if threads < 2:
            return _accumulate(ref, x, y, sign)
        # BLAS's threads: NumPy's BLAS, the product then an add. SciPy's BLAS (another
        # OpenBLAS, with a thread pool of its own) only ever runs on one thread here:
        # its idle threads, spinning after a product, took the cores from NumPy's next
        # one (a 128x784x256 product took 3 ms instead of 0.4)
        with blas_threads(threads):
            product = np.matmul(x, y)
        if sign != 1.0:
            np.multiply(product, sign, out=product)
        np.add(ref, product, out=ref)
        return True
    if _operand(y.T) is None or _operand(x[:ROWS].T) is None:
        return False
    _run_parts(lambda lo, hi: _accumulate(ref[lo:hi], x[lo:hi], y, sign), m, parts)
    return True


# ------------------------------------------------------------------ two-operand einsum
class _Plan:
    """How one two-operand einsum runs as one (batched) matrix product: each operand
    transposed to (batch, free, contracted) letters and its free and contracted letters
    merged, the product written straight into the output's layout where a strided view
    of it can take it."""
    __slots__ = ("x_first", "x_sum", "y_sum", "x_perm", "y_perm", "x_shape", "y_shape",
                 "out_shape", "mid_perm", "mid_shape", "m", "k", "n", "flat")

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


_PLANS: dict = {}
_PLANS_MAX = 4096


def _letters_plan(equation: str, a_shape: tuple, b_shape: tuple) -> _Plan | None:
    """The plan of `equation` ('...' expanded, explicit output) for operands of these
    shapes, or None where it is not a product (a letter repeated in one operand, or a
    free or contracted letter broadcast between the operands)."""
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    ta, tb = terms
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(ta) != len(a_shape) \
            or len(tb) != len(b_shape):
        return None
    size_a, size_b = dict(zip(ta, a_shape)), dict(zip(tb, b_shape))
    batch = [c for c in out if c in size_a and c in size_b]
    shared = [c for c in ta if c in size_b and c not in out]
    # (batch letters broadcast in the product; any other letter must agree. With nothing
    # contracted it is no product: np.einsum multiplies.)
    if not shared or any(size_a[c] != size_b[c] for c in shared):
        return None
    if any(size_a[c] != size_b[c] and 1 not in (size_a[c], size_b[c]) for c in batch):
        return None
    a_free = [c for c in out if c in size_a and c not in size_b]
    b_free = [c for c in out if c in size_b and c not in size_a]
    # The left operand is the one whose free letters come first in the output: the
    # product's rows then lead, as they do in the output, so often no transpose remains.
    rest = [c for c in out if c not in batch]
    x_first = not rest or rest[0] in size_a
    tx, ty, fx, fy = (ta, tb, a_free, b_free) if x_first else (tb, ta, b_free, a_free)
    sx, sy = (size_a, size_b) if x_first else (size_b, size_a)
    x_sum = tuple(i for i, c in enumerate(tx) if c not in out and c not in sy)
    y_sum = tuple(i for i, c in enumerate(ty) if c not in out and c not in sx)
    kept_x = [c for c in tx if c in out or c in sy]
    kept_y = [c for c in ty if c in out or c in sx]
    m = math.prod(sx[c] for c in fx)
    k = math.prod(sx[c] for c in shared)
    n = math.prod(sy[c] for c in fy)
    mid = batch + fx + fy
    out_size = {**size_a, **size_b}
    for c in batch:
        out_size[c] = size_b[c] if size_a[c] == 1 else size_a[c]
    out_shape = tuple(out_size[c] for c in out)
    x_perm = tuple(kept_x.index(c) for c in batch + fx + shared)
    y_perm = tuple(kept_y.index(c) for c in batch + shared + fy)
    return _Plan(
        x_first=x_first, x_sum=x_sum, y_sum=y_sum,
        x_perm=None if x_perm == tuple(range(len(x_perm))) else x_perm,
        y_perm=None if y_perm == tuple(range(len(y_perm))) else y_perm,
        x_shape=tuple(sx[c] for c in batch) + (m, k),
        y_shape=tuple(sy[c] for c in batch) + (k, n),
        out_shape=out_shape,
        mid_perm=None if mid == list(out) else tuple(out.index(c) for c in mid),
        mid_shape=tuple(out_size[c] for c in batch) + (m, n),
        m=m, k=k, n=n, flat=not batch)


def _blasable(x: np.ndarray) -> bool:
    """Whether NumPy's matmul hands x's matrices to BLAS as they lie (one unit stride,
    the other a whole number of items past the row): else it loops without BLAS."""
    s = x.itemsize
    r, c = x.strides[-2:]
    rows, cols = x.shape[-2:]
    return ((c == s or cols == 1) and r % s == 0 and r // s >= cols) or \
        ((r == s or rows == 1) and c % s == 0 and c // s >= rows)


def _matrices(x: np.ndarray, summed: tuple, perm: tuple, shape: tuple) -> np.ndarray:
    """x with its lone letters summed, transposed and merged into [batch..., rows, cols]:
    a view where its strides allow, and BLAS-ready."""
    if summed:
        x = np.add.reduce(x, axis=summed)
    if perm is not None:
        x = x.transpose(perm)
    if x.shape != shape:
        x = x.reshape(shape)  # (a view where the merged axes' strides allow)
    return x if _blasable(x) else np.ascontiguousarray(x)


def contract(equation: str, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`np.einsum(equation, a, b)` ('...' expanded, explicit output) as one matrix
    product, batched over the letters of both operands and the output: no path search,
    no copy of an operand whose strides BLAS takes as they are (a transposed or sliced
    view), the product written into the output's layout; None where the equation is not
    such a product (the caller calls np.einsum).

    Example: contract("btd,dhk->bthk", x, w) is x.reshape(-1, d) @ w.reshape(d, -1).
    """
    key = (equation, a.shape, b.shape)
    plan = _PLANS.get(key)
    if plan is None:
        if key in _PLANS:
            return None
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[key] = _letters_plan(equation, a.shape, b.shape)
        if plan is None:
            return None
    x, y = (a, b) if plan.x_first else (b, a)
    x = _matrices(x, plan.x_sum, plan.x_perm, plan.x_shape)
    y = _matrices(y, plan.y_sum, plan.y_perm, plan.y_shape)
    if plan.mid_perm is None:
        if plan.flat and plan.m * plan.k * plan.n >= BLAS_THREADS_FROM:
            product_ = product(x, y)  # large: on the intra-op threads
            if product_ is not None:
                return product_.reshape(plan.out_shape)
        return np.matmul(x, y).reshape(plan.out_shape)
    out = np.empty(plan.out_shape, np.result_type(x, y))
    view = np.transpose(out, plan.mid_perm)
    try:
        target = np.reshape(view, plan.mid_shape, copy=False)
    except ValueError:  # the output's letters interleave: the product, then a copy
        target = None
    if target is not None and _blasable(target):
        np.matmul(x, y, out=target)
    else:
        np.copyto(view, np.matmul(x, y).reshape(view.shape))
    return out
