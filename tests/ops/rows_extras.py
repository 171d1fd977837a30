"""Op-table rows of issue 31's ops: further special functions (Bessel, inverse error,
incomplete gamma and beta), truncating division, xdivy/xlog1py, and segment reductions."""
import numpy as np
from scipy import special

import tapeflow as tf
from tapeflow._core import prims
from tests.ops.table import Row, uniform

INTS = ("int32", "int64")
REAL = ("float32", "float64", "int32", "int64")
FIXED_IDS = "fixed ids (the reference uses them as they are)"


def _igamma_grad_a_ref(a, x):
    # dP/da by central differences of SciPy's P in float64 (step 1e-5: error ~1e-10)
    a64, x64, h = a.astype(np.float64), x.astype(np.float64), 1e-5
    d = (special.gammainc(a64 + h, x64) - special.gammainc(a64 - h, x64)) / (2 * h)
    return d.astype(a.dtype)


def gamma_args(*shapes):
    def sample(rng, dtype):
        return [rng.uniform(0.5, 3.0, shapes[0]).astype(dtype),
                rng.uniform(0.2, 4.0, shapes[1]).astype(dtype)]
    return sample


def beta_args(shape):
    def sample(rng, dtype):
        return [rng.uniform(0.5, 3.0, shape).astype(dtype),
                rng.uniform(0.5, 3.0, shape).astype(dtype),
                rng.uniform(0.1, 0.9, shape).astype(dtype)]
    return sample


def int_quotients(shape):
    def sample(rng, dtype):
        x = rng.integers(-20, 21, shape).astype(dtype)
        y = (rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)).astype(dtype)
        return [x, y]
    return sample


def float_quotients(shape):
    def sample(rng, dtype):
        y = (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(dtype)
        q = rng.integers(-4, 5, shape) + rng.uniform(0.1, 0.9, shape)
        return [(q * y).astype(dtype), y]
    return sample


def _trunc_div_ref(x, y):
    return np.trunc(x / y).astype(x.dtype) if x.dtype.kind == "f" else \
        (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)


def _xdivy_ref(x, y):
    return np.where(x == 0, 0, x / np.where(x == 0, 1, y)).astype(x.dtype)


def _xlog1py_ref(x, y):
    return np.where(x == 0, 0, x * np.log1p(np.where(x == 0, 0, y))).astype(x.dtype)


def _xy_with_zeros(shape, low, high):
    def sample(rng, dtype):
        x = rng.uniform(-2, 2, shape)
        x[..., 0] = 0.0
        return [x.astype(dtype), rng.uniform(low, high, shape).astype(dtype)]
    return sample


ROWS = [
    Row("bessel_i0e", tf.math.bessel_i0e, special.i0e, uniform((3, 4), low=-4, high=4),
        kernels=("BesselI0e", "BesselI1e")),
    Row("bessel_i1e", tf.math.bessel_i1e, special.i1e, uniform((3, 4), low=-4, high=4),
        kernels=("BesselI1e", "BesselI0e")),
    Row("bessel_i0", tf.math.bessel_i0, special.i0, uniform((5,), low=-3, high=3),
        kernels=("BesselI0e", "BesselI1e")),
    Row("bessel_i1", tf.math.bessel_i1, special.i1, uniform((5,), low=-3, high=3),
        kernels=("BesselI1e", "BesselI0e")),
    Row("erfinv", tf.math.erfinv, special.erfinv, uniform((2, 3), low=-0.9, high=0.9),
        kernels=("Erfinv",)),
    Row("ndtri", tf.math.ndtri, special.ndtri, uniform((2, 3), low=0.05, high=0.95),
        kernels=("Ndtri",)),
    Row("igamma", tf.math.igamma, special.gammainc, gamma_args((2, 3), (2, 3)),
        kernels=("Igamma", "IgammaGradA"), order=1, grad_tol=1e-4,
        note="d/da comes from IgammaGradA, which has no derivative (as in TensorFlow)"),
    Row("igamma/broadcast", tf.math.igamma, special.gammainc, gamma_args((3,), (2, 1)),
        kernels=("Igamma", "IgammaGradA"), order=1, grad_tol=1e-4),
    Row("igammac", tf.math.igammac, special.gammaincc, gamma_args((4,), (4,)),
        kernels=("Igammac", "IgammaGradA"), order=1, grad_tol=1e-4),
    Row("igamma_grad_a", prims.igamma_grad_a, _igamma_grad_a_ref, gamma_args((5,), (5,)),
        kernels=("IgammaGradA",), grad=False, rtol=1e-4, atol=1e-5),
    Row("betainc", tf.math.betainc, special.betainc, beta_args((2, 3)),
        kernels=("Betainc",), diff=(2,), rtol=1e-4, size1=True, rank=False,
        note="only d/dx (TensorFlow's too); no per-input size-1 or rank cases: a, b and x "
             "must be scalars or share one shape, as in TensorFlow"),
    Row("truncatediv/int", tf.truncatediv, _trunc_div_ref, int_quotients((3, 4)),
        kernels=("TruncateDiv",), dtypes=INTS, grad=False),
    Row("truncatediv/float", tf.truncatediv, _trunc_div_ref, float_quotients((3, 4)),
        kernels=("TruncateDiv",), grad=False, note="no gradient in TensorFlow"),
    Row("truncatemod/int", tf.truncatemod, np.fmod, int_quotients((2, 3)),
        kernels=("TruncateMod",), dtypes=INTS, grad=False),
    Row("truncatemod/float", tf.truncatemod, np.fmod, float_quotients((2, 3)),
        kernels=("TruncateMod",), grad=False, note="no gradient in TensorFlow"),
    # TensorFlow's derivative at x = 0 is 0 (not the limit): x = 0 rows check values only
    Row("xdivy/zeros", tf.math.xdivy, _xdivy_ref, _xy_with_zeros((2, 3), 0.5, 2.0),
        grad=False),
    Row("xdivy", tf.math.xdivy, _xdivy_ref, uniform((2, 3), (3,), low=0.5, high=2.0)),
    Row("xlog1py/zeros", tf.math.xlog1py, _xlog1py_ref, _xy_with_zeros((2, 3), -0.5, 2.0),
        grad=False),
    Row("xlog1py", tf.math.xlog1py, _xlog1py_ref, uniform((3,), (2, 3), low=-0.5, high=2.0)),
]


# --------------------------------------------------------------------------- segments


def _np_segment(reduce, empty, data, ids, num=None):
    """A NumPy loop reference: reduce(rows) for each segment id, `empty` where none."""
    num = (int(ids.max()) + 1 if ids.size else 0) if num is None else num
    rest = data.shape[ids.ndim:]
    rows = data.reshape((ids.size,) + rest)
    flat = ids.reshape(-1)
    out = np.full((num,) + rest, empty, data.dtype)
    for s in range(num):
        if (flat == s).any():
            out[s] = reduce(rows[flat == s])
    return out


def _ref(reduce, empty, ids, num=None):
    return lambda d: _np_segment(reduce, empty, d, np.asarray(ids), num)


def distinct(*shape):
    """Shuffled values 0.1 apart: no ties, so max/min are smooth."""
    def sample(rng, dtype):
        n = int(np.prod(shape))
        v = rng.permutation(n) * 0.1 - n * 0.05
        return [v.reshape(shape).astype(dtype)]
    return sample


def _mean(rows):
    return rows.mean(0)


def _sqrt_n(rows):
    return rows.sum(0) / np.sqrt(len(rows))


def _lowest(dtype):
    return np.finfo(dtype).min


SORTED = [0, 0, 1, 3, 3]
UNSORTED = [2, -1, 0, 2, 0]
U2D = np.array([[1, 0, -1], [1, 3, 0]])
# every segment filled: the extrema of empty ones (the dtype's limits) overflow differences
FULL = [2, -1, 0, 1, 0]
FULL_2D = np.array([[1, 0, -1], [1, 2, 0]])
SEGMENT_NOTE = "fixed ids: " + FIXED_IDS

ROWS += [
    Row("segment_mean", lambda d: tf.math.segment_mean(d, SORTED),
        _ref(_mean, 0, SORTED), uniform((5, 2)), kernels=(), size1=False, empty=False,
        rank=False, note=SEGMENT_NOTE),
    Row("segment_max", lambda d: tf.math.segment_max(d, SORTED),
        _ref(lambda r: r.max(0), 0, SORTED), distinct(5, 2), kernels=(), size1=False,
        empty=False, rank=False, note=SEGMENT_NOTE),
    Row("segment_min", lambda d: tf.math.segment_min(d, SORTED),
        _ref(lambda r: r.min(0), 0, SORTED), distinct(5, 3), kernels=(), size1=False,
        empty=False, rank=False, note=SEGMENT_NOTE),
    Row("segment_prod", lambda d: tf.math.segment_prod(d, SORTED),
        _ref(lambda r: r.prod(0), 1, SORTED), uniform((5, 2)), kernels=("SegmentProd",),
        size1=False, empty=False, rank=False, note=SEGMENT_NOTE, dtypes=REAL),
    Row("unsorted_segment_mean", lambda d: tf.math.unsorted_segment_mean(d, UNSORTED, 4),
        _ref(_mean, 0, UNSORTED, 4), uniform((5, 3)), kernels=(), size1=False, empty=False,
        rank=False, note=SEGMENT_NOTE),
    Row("unsorted_segment_sqrt_n",
        lambda d: tf.math.unsorted_segment_sqrt_n(d, UNSORTED, 4),
        _ref(_sqrt_n, 0, UNSORTED, 4), uniform((5,)), kernels=(), size1=False, empty=False,
        rank=False, note=SEGMENT_NOTE),
    Row("unsorted_segment_max/2d_ids", lambda d: tf.math.unsorted_segment_max(d, FULL_2D, 3),
        lambda d: _np_segment(lambda r: r.max(0), _lowest(d.dtype), d, FULL_2D, 3),
        distinct(2, 3, 2), kernels=(), size1=False, empty=False, rank=False,
        note=SEGMENT_NOTE),
    Row("unsorted_segment_min", lambda d: tf.math.unsorted_segment_min(d, FULL, 3),
        lambda d: _np_segment(lambda r: r.min(0), -_lowest(d.dtype), d, np.array(FULL), 3),
        distinct(5, 2), kernels=(), size1=False, empty=False, rank=False, note=SEGMENT_NOTE),
    Row("unsorted_segment_prod", lambda d: tf.math.unsorted_segment_prod(d, UNSORTED, 4),
        _ref(lambda r: r.prod(0), 1, UNSORTED, 4), uniform((5, 2)),
        kernels=("SegmentProd",), size1=False, empty=False, rank=False, note=SEGMENT_NOTE,
        dtypes=REAL),
    Row("unsorted_segment_prod/2d_ids", lambda d: tf.math.unsorted_segment_prod(d, U2D, 4),
        _ref(lambda r: r.prod(0), 1, U2D, 4), uniform((2, 3)), kernels=("SegmentProd",),
        size1=False, empty=False, rank=False, note=SEGMENT_NOTE),
]


# --------------------------------------------------------------------------- linalg
import scipy.linalg as sla  # noqa: E402


def near_identity(shape, scale=3.0, *rhs_shapes):
    """A square matrix near scale * I (distinct, real eigenvalues), then right-hand sides."""
    def sample(rng, dtype):
        n = shape[-1]
        a = np.eye(n) * (scale + np.arange(n)) + rng.uniform(-0.3, 0.3, shape)
        return [a.astype(dtype)] + [rng.uniform(-1, 1, s).astype(dtype) for s in rhs_shapes]
    return sample


def tall(shape, *rhs_shapes):
    def sample(rng, dtype):
        return [rng.uniform(-1, 1, s).astype(dtype) for s in (shape,) + rhs_shapes]
    return sample


def _batched_ref(fn):
    def ref(x):
        flat = x.reshape((-1,) + x.shape[-2:])
        return np.stack([fn(a) for a in flat]).reshape(x.shape).astype(x.dtype) \
            if flat.size else x.copy()
    return ref


def _lstsq_ref(a, b, l2=0.0):
    n = a.shape[-1]
    at = np.swapaxes(a, -1, -2)
    return np.linalg.solve(at @ a + l2 * np.eye(n), at @ b).astype(a.dtype)


def _lstsq_wide_ref(a, b):
    return (np.linalg.pinv(a.astype(np.float64)) @ b).astype(a.dtype)


def _sorted_real_eigvals(x):
    return np.sort(np.linalg.eigvals(x).real, axis=-1).astype(x.dtype)


def _lu_reference_product(x):
    # P^T L U from SciPy's own factorization: x itself
    return x


LINALG_NOTE = "square matrices of fixed sizes"
ROWS += [
    Row("lstsq", tf.linalg.lstsq, _lstsq_ref, tall((2, 5, 3), (2, 5, 2)), kernels=(),
        size1=False, empty=False, rtol=1e-4, note="Cholesky of A^T A needs full rank"),
    Row("lstsq/l2", lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.5),
        lambda a, b: _lstsq_ref(a, b, 0.5), tall((4, 2), (4, 3)), kernels=(), size1=False,
        empty=False, rtol=1e-4),
    Row("lstsq/wide", tf.linalg.lstsq, _lstsq_wide_ref, tall((2, 4), (2, 1)), kernels=(),
        size1=False, empty=False, rtol=1e-4, note="minimum-norm solution"),
    Row("lstsq/slow", lambda a, b: tf.linalg.lstsq(a, b, fast=False), _lstsq_wide_ref,
        tall((5, 3), (5, 2)), kernels=(), size1=False, empty=False, rtol=1e-4),
    # eigenvalues of near-diagonal matrices are real and distinct: compare them sorted
    Row("eigvals", lambda x: tf.sort(tf.math.real(tf.linalg.eigvals(x)), axis=-1),
        _sorted_real_eigvals, near_identity((2, 3, 3)), kernels=("Eig",), size1=False,
        empty=False, rank=False, note=LINALG_NOTE),
    Row("eig/values", lambda x: tf.sort(tf.math.real(tf.linalg.eig(x)[0]), axis=-1),
        _sorted_real_eigvals, near_identity((3, 3)), kernels=("Eig",), size1=False,
        empty=False, rank=False, order=1, note=LINALG_NOTE),
    Row("eig/vectors_invariant",
        lambda x: tf.math.real(tf.reduce_sum(tf.square(tf.linalg.eig(x)[1]), axis=-2)),
        lambda x: np.sum(np.linalg.eig(x)[1] ** 2, axis=-2).real.astype(x.dtype),
        near_identity((3, 3)), kernels=("Eig",), size1=False, empty=False, rank=False,
        order=1, batched_jvp=False, grad=False,
        note="sums of squares of unit real eigenvectors are sign-invariant; no JVP for v"),
    Row("expm", tf.linalg.expm, _batched_ref(sla.expm), uniform((2, 3, 3), low=-1, high=1),
        kernels=(), size1=False, rank=False, rtol=1e-4),
    Row("expm/large_norm", tf.linalg.expm, _batched_ref(sla.expm),
        uniform((3, 3), low=-4, high=4), kernels=(), size1=False, empty=False, rank=False,
        rtol=1e-4, note="squarings"),
    Row("sqrtm", tf.linalg.sqrtm, _batched_ref(sla.sqrtm), near_identity((2, 3, 3)),
        kernels=("MatrixSquareRoot",), size1=False, empty=False, rank=False, rtol=1e-4),
    Row("logm", tf.linalg.logm, _batched_ref(lambda a: sla.logm(a)),
        lambda rng, d: [(near_identity((2, 3, 3))(rng, "float64")[0]
                         + 0.2j * rng.uniform(-1, 1, (2, 3, 3))).astype(d)],
        kernels=("MatrixLogarithm",), dtypes=("complex64", "complex128"), grad=False,
        size1=False, empty=False, rank=False, rtol=1e-4, note="no gradient in TensorFlow"),
    Row("lu/reconstruct", lambda x: tf.linalg.lu_reconstruct(*tf.linalg.lu(x)),
        _lu_reference_product, uniform((2, 4, 4)), kernels=("Lu",), grad=False,
        size1=False, empty=False, rank=False, rtol=1e-4, note="no gradient in TensorFlow"),
    Row("lu/factors", lambda x: tf.linalg.lu(x)[0],
        _batched_ref(lambda a: sla.lu_factor(a)[0]), uniform((3, 3)), kernels=("Lu",),
        grad=False, size1=False, empty=False, rank=False, rtol=1e-4),
    Row("lu_solve", lambda x, b: tf.linalg.lu_solve(*tf.linalg.lu(x), b),
        lambda x, b: np.linalg.solve(x, b).astype(x.dtype), near_identity((3, 3), 3.0, (3, 2)),
        kernels=("Lu",), grad=False, size1=False, empty=False, rank=False, rtol=1e-4),
    Row("matrix_rank", tf.linalg.matrix_rank,
        lambda x: np.linalg.matrix_rank(x).astype(np.int32),
        lambda rng, d: [(rng.uniform(-1, 1, (3, 4, 2)) @ rng.uniform(-1, 1, (3, 2, 5)))
                        .astype(d)], kernels=(), grad=False, out_dtype="int32", size1=False,
        empty=False, rank=False),
]
