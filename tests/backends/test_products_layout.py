"""Products as the NumPy kernels plan them (backends/numpy/gemm.py `contract`,
backends/numpy/linalg.py MatMul): a two-operand einsum as one batched matrix product
reading strided operands in place and writing into the output's layout, a batch of
matrices by one matrix as one product of stacked rows. Checked against float64 NumPy
(to rounding), central differences in float64, and the eager results (traced bits equal)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends.numpy import gemm

RNG = np.random.default_rng(7)

# (equation, shape a, shape b): attention's projections, scores, context and their
# gradients as MultiHeadAttention writes them, and products whose letters interleave,
# sum alone in one operand, or broadcast over a batch letter
EQUATIONS = [
    ("abc,cde->abde", (4, 5, 6), (6, 2, 3)),
    ("aecd,abcd->acbe", (3, 5, 2, 4), (3, 6, 2, 4)),
    ("acbe,aecd->abcd", (3, 2, 6, 5), (3, 5, 2, 4)),
    ("abcd,cde->abe", (4, 5, 2, 3), (2, 3, 6)),
    ("abde,abc->cde", (4, 5, 2, 3), (4, 5, 6)),
    ("acbe,abcd->aecd", (3, 2, 6, 5), (3, 6, 2, 4)),
    ("ij,jk->ki", (3, 4), (4, 5)),
    ("ij,kj->", (3, 4), (5, 4)),
    ("ijk,k->ij", (2, 3, 4), (4,)),
    ("bij,bjk->bik", (1, 3, 4), (5, 4, 2)),
    ("abc,bd->dca", (2, 3, 4), (3, 5)),
    ("ab,ab->a", (3, 4), (3, 4)),
    ("abc,cd->bda", (2, 3, 4), (4, 5)),
    ("abcd,cbe->aed", (2, 3, 4, 5), (4, 3, 6)),
    ("xab,cb->xca", (2, 3, 4), (5, 4)),
    ("ab,b->", (3, 4), (4,)),
]


def _layouts(x):
    """x as it lies, as a transposed view of a copy laid out the other way, and as a
    strided slice of a larger array."""
    yield x
    if x.ndim >= 2:
        yield np.swapaxes(np.ascontiguousarray(np.swapaxes(x, 0, -1)), 0, -1)
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype) if x.ndim else None
    if big is not None:
        big[..., ::2] = x
        yield big[..., ::2]


@pytest.mark.parametrize("equation, sa, sb", EQUATIONS)
def test_contract_equals_einsum_for_every_layout(equation, sa, sb):
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-5), (np.int64, 0)):
        a = (RNG.standard_normal(sa) * 3).astype(dtype)
        b = (RNG.standard_normal(sb) * 3).astype(dtype)
        want = np.einsum(equation, a.astype(np.float64), b.astype(np.float64))
        for x in _layouts(a):
            for y in _layouts(b):
                got = gemm.contract(equation, x, y)
                assert got is not None and got.dtype == dtype and got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_contract_declines_what_is_no_product():
    a, b = np.ones((2, 2)), np.ones((2, 3))
    assert gemm.contract("ii,ij->j", a, b) is None  # a repeated letter: a diagonal
    assert gemm.contract("ab,ab->ab", a, a) is None  # nothing contracted: a multiply
    assert gemm.contract("ab,cd->abcd", a, b) is None
    # a batch letter of size 1 broadcasts, also against 0
    got = gemm.contract("aj,ajk->ak", np.ones((1, 3)), np.ones((0, 3, 2)))
    assert got.shape == (0, 2)


def test_contract_writes_into_the_output_layout():
    # the context product of attention: [B, H, T, S] x [B, S, H, K] -> [B, T, H, K], a
    # C-contiguous result though the product's rows come out head-major
    p, v = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 5, 3, 6))
    got = gemm.contract("acbe,aecd->abcd", p, v)
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, np.einsum("acbe,aecd->abcd", p, v), rtol=1e-12)


@pytest.mark.parametrize("adjoint_b", [False, True])
def test_matmul_of_a_batch_by_one_matrix(adjoint_b):
    x = RNG.standard_normal((3, 4, 5))
    w = RNG.standard_normal((6, 5) if adjoint_b else (5, 6))
    want = np.matmul(x, w.T if adjoint_b else w)
    for xv in _layouts(x):  # (a transposed view cannot stack its rows: the batched path)
        got = tf.matmul(tf.constant(np.ascontiguousarray(xv) if xv.ndim < 3 else xv),
                        tf.constant(w), transpose_b=adjoint_b)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def _central_difference(f, xs, k, eps=1e-6):
    """d sum(f * r) / d xs[k] by central differences, r a fixed random cotangent."""
    r = RNG.standard_normal(np.shape(f(*xs)))
    grad = np.zeros_like(xs[k])
    for i in np.ndindex(xs[k].shape):
        up = [x.copy() for x in xs]
        down = [x.copy() for x in xs]
        up[k][i] += eps
        down[k][i] -= eps
        grad[i] = np.sum((f(*up) - f(*down)) * r) / (2 * eps)
    return r, grad


@pytest.mark.parametrize("equation, sa, sb", EQUATIONS[:6])
def test_einsum_gradients_against_central_differences(equation, sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)

    def f(x, y):
        return tf.einsum(equation, tf.constant(x), tf.constant(y)).numpy()

    for k in (0, 1):
        r, want = _central_difference(f, [a, b], k)
        xs = [tf.constant(a), tf.constant(b)]
        with tf.GradientTape() as tape:
            tape.watch(xs[k])
            loss = tf.reduce_sum(tf.einsum(equation, *xs) * tf.constant(r))
        np.testing.assert_allclose(tape.gradient(loss, xs[k]).numpy(), want, rtol=1e-6,
                                   atol=1e-8)


def test_traced_products_equal_eager_bits():
    q = tf.constant(RNG.standard_normal((2, 7, 3, 8)).astype(np.float32))
    k = tf.constant(RNG.standard_normal((2, 9, 3, 8)).astype(np.float32))
    w = tf.constant(RNG.standard_normal((3, 8, 16)).astype(np.float32))
    e = tf.constant(RNG.standard_normal((40, 16)).astype(np.float32))

    def f(q, k):
        s = tf.nn.softmax(tf.einsum("aecd,abcd->acbe", k, q))
        o = tf.einsum("abcd,cde->abe", tf.einsum("acbe,aecd->abcd", s, k), w)
        return tf.matmul(o, e, transpose_b=True)

    eager = f(q, k).numpy()
    traced = tf.function(f)
    for _ in range(2):
        np.testing.assert_array_equal(traced(q, k).numpy(), eager)
    np.testing.assert_array_equal(f(q, k).numpy(), eager)


@pytest.mark.parametrize("shape, axes", [((32, 64, 128), (0, 1)), ((70, 300), (0,)),
                                         ((8, 9, 2, 40), (0, 1, 2)), ((63, 200), (0,))])
def test_sums_over_leading_axes(shape, axes):
    # a bias gradient of a dense layer over a sequence: a matrix-vector product from
    # _kernel.WIDE_ROWS_FROM rows (and NumPy's reduction below it)
    x = RNG.standard_normal(shape).astype(np.float32)
    want = np.sum(x.astype(np.float64), axis=axes)
    got = tf.reduce_sum(tf.constant(x), axis=list(axes)).numpy()
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    traced = tf.function(lambda t: tf.reduce_sum(t, axis=list(axes)))
    np.testing.assert_array_equal(traced(tf.constant(x)).numpy(), got)
    np.testing.assert_array_equal(tf.reduce_sum(tf.constant(x), axis=list(axes)).numpy(), got)


@pytest.mark.parametrize("shape, axes", [((32, 32, 64), (2,)), ((6, 7, 300), (1, 2)),
                                         ((40, 3), (1,)), ((5, 1), (1,))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sums_and_means_over_trailing_axes(shape, axes, keepdims):
    # a layer norm's moments, a softmax's normalizer: rows times ones as one product
    # (reduction.TRAILING_COLS_MAX), equal to float64 NumPy to rounding
    x = RNG.standard_normal(shape).astype(np.float32)
    for op, ref in ((tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean)):
        want = ref(x.astype(np.float64), axis=axes, keepdims=keepdims)
        got = op(tf.constant(x), axis=list(axes), keepdims=keepdims).numpy()
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        traced = tf.function(lambda t: op(t, axis=list(axes), keepdims=keepdims))
        np.testing.assert_array_equal(traced(tf.constant(x)).numpy(), got)


def test_layer_norm_gradient_against_central_differences():
    # moments over the last axis forward and backward (Sum and Mean over trailing axes)
    x0 = RNG.standard_normal((3, 4, 9))
    r = RNG.standard_normal((3, 4, 9))

    def f(x):
        m, v = tf.nn.moments(tf.constant(x), axes=[-1], keepdims=True)
        return tf.reduce_sum((tf.constant(x) - m) * tf.math.rsqrt(v + 1e-3) * r).numpy()

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        m, v = tf.nn.moments(x, axes=[-1], keepdims=True)
        loss = tf.reduce_sum((x - m) * tf.math.rsqrt(v + 1e-3) * r)
    got = tape.gradient(loss, x).numpy()
    want = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        want[i] = (f(up) - f(down)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
