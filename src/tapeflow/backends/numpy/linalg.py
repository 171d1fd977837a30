"""NumPy kernels of linear algebra: BLAS through np.matmul/np.einsum, LAPACK through
numpy.linalg (batched over leading axes) and scipy.linalg (unbatched triangular solves)."""
import math
import warnings

import numpy as np
import scipy.linalg as sla

from ..._core.dispatch import Alias
from . import gemm
from ._kernel import MAX_RANK, broadcast_shapes, check_rank, kernel

# NumPy's linalg gufuncs need the loop dims and every operand's core dims to fit in its
# maximum rank (a full SVD fails from rank 62): past this many batch dims, kernels flatten
# the batch into one dimension first.
_GUFUNC_BATCH = 30


def _flat_batch(xs, cores):
    """The broadcast batch shape of `xs` (all but their last `cores[k]` dims) and each x
    broadcast to it and flattened into one leading dimension. Batch dims that are 1 for
    every x are dropped first, so the broadcast stays within NumPy's maximum rank."""
    batch = broadcast_shapes(*(x.shape[:x.ndim - c] for x, c in zip(xs, cores)))
    keep = [k for k, d in enumerate(batch) if d != 1]
    n = math.prod(batch)
    flat = []
    for x, c in zip(xs, cores):
        lead, core = x.shape[:x.ndim - c], x.shape[x.ndim - c:]
        off = len(batch) - len(lead)
        x = x.reshape(tuple(lead[k - off] if k >= off else 1 for k in keep) + core)
        flat.append(np.broadcast_to(x, tuple(batch[k] for k in keep) + core)
                    .reshape((n,) + core))
    return batch, flat


def _batched(fn, *xs, core=2):
    """`fn(*xs)` for a linalg gufunc whose operands have `core` core dims each, at any
    rank: a batch of more than _GUFUNC_BATCH dims is flattened into one (_flat_batch) and
    the results' batch restored."""
    if max(x.ndim for x in xs) - core <= _GUFUNC_BATCH:
        return fn(*xs)
    batch, flat = _flat_batch(xs, [core] * len(xs))
    out = fn(*flat)
    if isinstance(out, tuple):  # (the named tuples of qr, svd, eigh, slogdet)
        return [o.reshape(batch + o.shape[1:]) for o in out]
    return out.reshape(batch + out.shape[1:])


def _adjoint(x):
    """Conjugate transpose of the last two axes (a view for real dtypes)."""
    x = np.swapaxes(x, -1, -2)
    return x.conj() if x.dtype.kind == "c" else x


def _matmul_call(attrs):
    adjoint_a, adjoint_b = attrs["adjoint_a"], attrs["adjoint_b"]

    def run(x, y):
        if x.ndim == 2 and y.ndim == 2:  # (the common case: no inputs dict, no checks)
            return (_product(_adjoint(x) if adjoint_a else x,
                             _adjoint(y) if adjoint_b else y),)
        return (matmul({"a": x, "b": y}, attrs, None),)
    return run


@kernel("MatMul", blas=True, direct=_matmul_call)
def matmul(inputs, attrs, backend):
    x, y = inputs["a"], inputs["b"]
    if attrs["adjoint_a"]:
        x = _adjoint(x)
    if attrs["adjoint_b"]:
        y = _adjoint(y)
    if y.ndim == 2 and x.ndim > 2 and x.shape[-1] == y.shape[0]:
        # One matrix for every matrix of a batch (x @ W in a dense layer over a sequence):
        # the batch's rows stacked as one product, not one BLAS call per matrix
        rows = _stacked_rows(x)
        if rows is not None:
            return _product(rows, y).reshape(x.shape[:-1] + (y.shape[1],))
    if x.ndim == 2 and y.ndim == 2:
        return _product(x, y)
    return np.matmul(x, y)


def _stacked_rows(x: np.ndarray) -> np.ndarray | None:
    """x [..., m, k] as one [rows, k] matrix, a view; None when its strides forbid it."""
    try:
        return np.reshape(x, (-1, x.shape[-1]), copy=False)
    except ValueError:
        return None


def _product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x @ y for matrices: large products on the intra-op threads (gemm.product), the
    rest straight to np.matmul on the calling thread."""
    if (x.shape[0] * x.shape[1] * y.shape[1] >= gemm.BLAS_THREADS_FROM
            and x.dtype == y.dtype and x.dtype.kind in "fc"):
        out = gemm.product(x, y)  # rows split over the intra-op threads when large
        if out is not None:
            return out
    return np.matmul(x, y)


@kernel("InplaceAddMatMul", blas=True)
def inplace_add_matmul(inputs, attrs, backend):
    """ref += sign * alpha * (op(a) @ op(b)), in ref's buffer: one BLAS product
    accumulating into it where BLAS reads the operands in place (gemm.update), else the
    product, scaled, then an in-place add."""
    ref, x, y, alpha = inputs["ref"], inputs["a"], inputs["b"], inputs["alpha"]
    if attrs["adjoint_a"]:
        x = _adjoint(x)
    if attrs["adjoint_b"]:
        y = _adjoint(y)
    sign = attrs["sign"]
    if ref.dtype.kind != "f" or not gemm.update(ref, x, y, sign * float(alpha)):
        product = np.multiply(np.matmul(x, y), alpha)
        (np.add if sign > 0 else np.subtract)(ref, product, out=ref, casting="unsafe")
    return Alias("ref", ref.shape)


@kernel("Einsum", blas=True)
def einsum(inputs, attrs, backend):
    xs = inputs["inputs"]
    if len(xs) == 2 and xs[0].dtype == xs[1].dtype:
        out = gemm.contract(attrs["equation"], xs[0], xs[1])
        if out is not None:
            return out
    # (optimize=True: a path of pairwise products for three or more operands)
    out = np.einsum(attrs["equation"], *xs, optimize=len(xs) > 1)
    return np.asarray(out, dtype=xs[0].dtype)


def _diag_dims(n, k, rows, cols):
    if rows == -1 and cols == -1:
        return n + abs(k), n + abs(k)
    if rows == -1:
        rows = n + max(-k, 0)
    if cols == -1:
        cols = n + max(k, 0)
    return rows, cols


@kernel("MatrixDiag")
def matrix_diag(inputs, attrs, backend):
    d = inputs["diagonal"]
    check_rank("matrix_diag", d.ndim + 1)
    k = attrs["k"]
    n = d.shape[-1]
    rows, cols = _diag_dims(n, k, attrs["num_rows"], attrs["num_cols"])
    out = np.full(d.shape[:-1] + (rows, cols), attrs["padding_value"], dtype=d.dtype)
    idx = np.arange(n)
    out[..., idx + max(-k, 0), idx + max(k, 0)] = d
    return out


@kernel("MatrixDiagPart")
def matrix_diag_part(inputs, attrs, backend):
    return np.diagonal(inputs["input"], attrs["k"], -2, -1).copy()


@kernel("MatrixBandPart")
def matrix_band_part(inputs, attrs, backend):
    x = inputs["input"]
    lower, upper = attrs["num_lower"], attrs["num_upper"]
    m, n = x.shape[-2:]
    offset = np.arange(n)[None, :] - np.arange(m)[:, None]  # column minus row
    keep = np.ones((m, n), dtype=bool)
    if lower >= 0:
        keep &= offset >= -lower
    if upper >= 0:
        keep &= offset <= upper
    return np.where(keep, x, np.zeros((), dtype=x.dtype))


@kernel("MatrixInverse", blas=True)
def matrix_inverse(inputs, attrs, backend):
    return _batched(np.linalg.inv, inputs["input"])


@kernel("MatrixDeterminant", blas=True)
def matrix_determinant(inputs, attrs, backend):
    x = inputs["input"]
    return np.asarray(_batched(np.linalg.det, x), dtype=x.dtype)


@kernel("LogMatrixDeterminant", blas=True)
def log_matrix_determinant(inputs, attrs, backend):
    x = inputs["input"]
    sign, logabs = _batched(np.linalg.slogdet, x)
    return [np.asarray(sign, dtype=x.dtype), np.asarray(logabs, dtype=x.dtype)]


@kernel("MatrixSolve", blas=True)
def matrix_solve(inputs, attrs, backend):
    m = inputs["matrix"]
    return _batched(np.linalg.solve, _adjoint(m) if attrs["adjoint"] else m, inputs["rhs"])


@kernel("Cholesky", blas=True)
def cholesky(inputs, attrs, backend):
    return _batched(np.linalg.cholesky, inputs["input"])  # reads the lower triangle only


@kernel("MatrixTriangularSolve", blas=True)
def matrix_triangular_solve(inputs, attrs, backend):
    m, rhs = inputs["matrix"], inputs["rhs"]
    lower, adjoint = attrs["lower"], attrs["adjoint"]
    if m.ndim == 2:
        # One matrix for every right-hand side: fold the batch into the columns and
        # make a single trsm call.
        n = m.shape[-1]
        batch, k = rhs.shape[:-2], rhs.shape[-1]
        # (the column count spelled out: -1 is ambiguous when n is 0)
        flat = np.moveaxis(rhs, -2, 0).reshape(n, int(np.prod(batch, dtype=np.int64)) * k)
        x = sla.solve_triangular(m, flat, lower=lower, trans="C" if adjoint else "N",
                                 check_finite=False)
        out = np.moveaxis(x.reshape((n,) + batch + (k,)), 0, -2)
        return np.ascontiguousarray(out, dtype=np.result_type(m, rhs))
    tri = np.tril(m) if lower else np.triu(m)
    return _batched(np.linalg.solve, _adjoint(tri) if adjoint else tri, rhs)


@kernel("Qr", blas=True)
def qr(inputs, attrs, backend):
    mode = "complete" if attrs["full_matrices"] else "reduced"
    q, r = _batched(lambda x: np.linalg.qr(x, mode=mode), inputs["input"])
    return [q, r]


@kernel("SelfAdjointEig", blas=True)
def self_adjoint_eig(inputs, attrs, backend):
    x = inputs["input"]
    e, v = _batched(np.linalg.eigh, x)  # reads the lower triangle only
    return [e.astype(x.dtype), v]


def _svd_or_nan(y, full: bool, compute_uv: bool) -> tuple:
    """np.linalg.svd of the matrices in y (as a tuple), all of whose outputs are NaN for a
    matrix with a NaN or infinite entry or whose SVD does not converge: TensorFlow's
    kernel fills them so (Eigen's BDCSVD reports such input as invalid) where NumPy
    raises or returns NaN depending on the matrix."""
    def one(a):
        out = np.linalg.svd(a, full_matrices=full, compute_uv=compute_uv)
        return tuple(out) if compute_uv else (out,)

    bad = ~np.isfinite(y).all(axis=(-2, -1))
    clean = np.where(bad[..., None, None], np.zeros((), y.dtype), y) if bad.any() else y
    try:
        out = one(clean)
    except np.linalg.LinAlgError:  # finite but not converging: find which, one by one
        bad = bad.copy()
        flat_bad = bad.reshape(-1)  # (a view: bad is a fresh contiguous array)
        parts = []
        for k, a in enumerate(clean.reshape((-1,) + y.shape[-2:])):
            try:
                parts.append(one(a))
            except np.linalg.LinAlgError:
                flat_bad[k] = True
                parts.append(one(np.zeros_like(a)))
        out = tuple(np.stack(o).reshape(y.shape[:-2] + o[0].shape) for o in zip(*parts))
    if bad.any():
        for o in out:
            o[bad] = np.nan
    return out


@kernel("Svd", blas=True)
def svd(inputs, attrs, backend):
    x = inputs["input"]
    if not attrs["compute_uv"]:
        (s,) = _batched(lambda y: _svd_or_nan(y, False, False), x)
        return s.astype(x.dtype)
    full = attrs["full_matrices"]
    u, s, vh = _batched(lambda y: _svd_or_nan(y, full, True), x)
    return [s.astype(x.dtype), u, np.ascontiguousarray(_adjoint(vh))]


@kernel("MatVec", blas=True)
def matvec(inputs, attrs, backend):
    m, v = inputs["a"], inputs["b"]
    adjoint = attrs["adjoint_a"]
    if m.ndim == 2:
        # One matrix for every vector: a single BLAS call (gemv, or gemm over the batch).
        if v.ndim == 1 and not adjoint:
            return m @ v
        if not adjoint:
            return v @ m.T
        if m.dtype.kind == "c":  # A^H v = conj(conj(v) A): conjugate vectors, not A
            return np.conj(np.conj(v) @ m)
        return m.T @ v if v.ndim == 1 else v @ m
    m = _adjoint(m) if adjoint else m
    if v.ndim < MAX_RANK:
        return np.matmul(m, v[..., None])[..., 0]
    # v[..., None] would have too many dims: a flat batch of matrices times columns
    batch, (m, v) = _flat_batch([m, v], [2, 1])
    return np.matmul(m, v[..., None])[..., 0].reshape(batch + m.shape[-2:-1])


# --------------------------------------------------------------------------- further linalg

_COMPLEX_FOR = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
                np.dtype(np.complex64): np.complex64, np.dtype(np.complex128): np.complex128}


@kernel("Eig", blas=True)
def eig(inputs, attrs, backend):
    x = inputs["input"]
    out = _COMPLEX_FOR[x.dtype]
    if not attrs["compute_v"]:
        return _batched(np.linalg.eigvals, x).astype(out)
    e, v = _batched(np.linalg.eig, x)
    return [e.astype(out), v.astype(out)]


def _per_matrix(fn, x, dtype=None):
    """fn on each matrix of x ([..., n, n]), unbatched SciPy routines."""
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.empty(flat.shape, dtype or x.dtype)
    for k, a in enumerate(flat):
        out[k] = fn(a)
    return out.reshape(x.shape)


@kernel("MatrixLogarithm", blas=True)
def matrix_logarithm(inputs, attrs, backend):
    x = inputs["input"]
    with warnings.catch_warnings():  # SciPy's "result may be inaccurate" estimate notes
        warnings.simplefilter("ignore")
        return _per_matrix(sla.logm, x)


@kernel("MatrixSquareRoot", blas=True)
def matrix_square_root(inputs, attrs, backend):
    x = inputs["input"]
    if x.shape[-1] == 0:
        return x.copy()

    def one(a):
        root = sla.sqrtm(a)
        root = root[0] if isinstance(root, tuple) else root
        if x.dtype.kind != "c" and np.iscomplexobj(root):
            # a real matrix without a real principal root: NaN (TensorFlow's kernel fails)
            return np.where(np.abs(root.imag) > 0, np.nan, root.real)
        return root
    return _per_matrix(one, x)


@kernel("Lu", blas=True)
def lu(inputs, attrs, backend):
    x = inputs["input"]
    idx = attrs["output_idx_type"]._np
    n = x.shape[-1]
    flat = x.reshape((-1, n, n))
    factors = np.empty(flat.shape, x.dtype)
    perms = np.empty((flat.shape[0], n), idx)
    for k, a in enumerate(flat):
        packed, pivots = sla.lu_factor(a, check_finite=False)
        factors[k] = packed
        order = np.arange(n)
        for i, j in enumerate(pivots):  # LAPACK's row swaps as one permutation
            order[i], order[j] = order[j], order[i]
        perms[k] = order
    return [factors.reshape(x.shape), perms.reshape(x.shape[:-1])]
