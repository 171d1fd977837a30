"""Gradients and edge values that are exact (issue #28): eigh's gradient for an op that reads
only the lower triangle, cumprod's derivatives at exact zeros, unsorted_segment_sum's
negative ids, fold_in's dtype, the matrix 2-norm of non-finite input, and errors that name
the op the user called. Truth is independent of the code under test: central differences
in float64 (exact up to rounding where the function is multilinear, as cumprod is), closed
forms, NumPy, and the values TensorFlow documents."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops.indexing import _segment_sum

from .errors import check_raises

RNG = np.random.default_rng(28)


# --------------------------------------------------------------------------- helpers


def _value(f, x: np.ndarray) -> np.ndarray:
    return np.asarray(f(tf.constant(x)).numpy(), dtype=np.float64)


def fd_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f(x) / d x by central differences: [f's size, x's size]."""
    cols = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        cols.append(((_value(f, x + step) - _value(f, x - step)) / (2 * eps)).ravel())
    return np.stack(cols, axis=1) if cols else np.zeros((_value(f, x).size, 0))


def vjp(f, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt)
    out = tape.gradient(y, xt, output_gradients=tf.constant(g.reshape(y.shape)))
    return np.zeros_like(x) if out is None else tf.convert_to_tensor(out).numpy()


def jvp(f, x: np.ndarray, t: np.ndarray) -> np.ndarray:
    xt = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(xt, tf.constant(t)) as acc:
        y = f(xt)
    out = acc.jvp(y)
    return np.zeros(y.shape) if out is None else out.numpy()


def check_derivatives(f, x: np.ndarray, *, rtol=1e-7, atol=1e-8, eps=1e-6) -> np.ndarray:
    """VJP and JVP of f at x against central differences in random directions; returns the
    finite-difference Jacobian for further checks."""
    jac = fd_jacobian(f, x, eps)
    g = RNG.standard_normal(jac.shape[0])
    t = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(vjp(f, x, g).ravel(), jac.T @ g, rtol=rtol, atol=atol)
    np.testing.assert_allclose(jvp(f, x, t).ravel(), jac @ t.ravel(), rtol=rtol, atol=atol)
    return jac


# --------------------------------------------------------------------------- eigh


def _separated_nonsymmetric(shape) -> np.ndarray:
    """A matrix whose lower triangle describes well separated eigenvalues, with an upper
    triangle that disagrees with it (so reading it would show)."""
    n = shape[-1]
    q, _ = np.linalg.qr(RNG.standard_normal(shape))
    sym = q @ (np.arange(1, n + 1) * 1.5 * np.eye(n)) @ np.swapaxes(q, -1, -2)
    return np.tril(sym) + np.triu(RNG.standard_normal(shape), 1)


def test_eigh_reads_the_lower_triangle_only():
    a = _separated_nonsymmetric((4, 4))
    e, v = tf.linalg.eigh(tf.constant(a))
    want_e, want_v = np.linalg.eigh(np.tril(a) + np.tril(a, -1).T)
    np.testing.assert_allclose(e.numpy(), want_e, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(want_v), rtol=1e-10, atol=1e-10)


def test_eigvalsh_gradient_of_a_2x2_is_the_closed_form_not_the_symmetrised_one():
    # A = [[a, u], [b, c]] (u unread): lambda_max = (a + c) / 2 + r, r = sqrt(((a-c)/2)^2 + b^2)
    a, u, b, c = 1.0, 7.0, 0.5, -2.0
    r = np.hypot((a - c) / 2, b)
    x = tf.constant([[a, u], [b, c]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        top = tf.linalg.eigvalsh(x)[1]
    grad = tape.gradient(top, x).numpy()
    want = [[0.5 + (a - c) / (4 * r), 0.0], [b / r, 0.5 - (a - c) / (4 * r)]]
    np.testing.assert_allclose(grad, want, rtol=1e-12)  # b / r, not b / (2 r) twice
    tangent = tf.constant([[0.0, 1.0], [1.0, 0.0]], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tangent) as acc:
        top = tf.linalg.eigvalsh(x)[1]
    np.testing.assert_allclose(acc.jvp(top).numpy(), b / r, rtol=1e-12)  # u's 1 not read


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh_derivatives_match_finite_differences(shape):
    a = _separated_nonsymmetric(shape)
    jac = check_derivatives(lambda x: tf.linalg.eigvalsh(x), a, rtol=1e-6, atol=1e-7)
    # nothing above the diagonal is read; an entry below counts twice as much as a
    # symmetrised gradient says
    n = shape[-1]
    upper = np.triu(np.ones(shape), 1).astype(bool).ravel()
    np.testing.assert_allclose(jac[:, upper], 0.0, atol=1e-7)
    assert np.abs(jac[:, ~upper]).max() > 0.1
    # eigenvectors (squared: their signs are arbitrary)
    check_derivatives(lambda x: tf.square(tf.linalg.eigh(x)[1]), a, rtol=1e-5, atol=1e-7)
    # both outputs at once: the gradients add
    check_derivatives(lambda x: tf.linalg.eigh(x)[0][..., :1] * 2.0
                      + tf.reduce_sum(tf.square(tf.linalg.eigh(x)[1]) * np.arange(float(n)), -1),
                      a, rtol=1e-5, atol=1e-7)


def test_eigh_gradient_matches_tensorflows_rule():
    # TensorFlow's SelfAdjointEigV2 gradient: G = V (diag(ge) + F o V^T gV) V^T, then
    # tril(G + G^T) with the diagonal halved.
    a = _separated_nonsymmetric((3, 3))
    ge, gv = RNG.standard_normal(3), RNG.standard_normal((3, 3))
    x = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        e, v = tf.linalg.eigh(x)
    grad = tape.gradient([e, v], x, output_gradients=[tf.constant(ge), tf.constant(gv)])
    e, v = e.numpy(), v.numpy()
    diff = e[None, :] - e[:, None]
    f = np.where(np.eye(3) == 1, 0.0, 1.0 / np.where(np.eye(3) == 1, 1.0, diff))
    g = v @ (np.diag(ge) + f * (v.T @ gv)) @ v.T
    want = np.tril(g + g.T)
    want[np.diag_indices(3)] /= 2
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- cumprod

SCANS = [(False, False), (True, False), (False, True), (True, True)]
ZERO_PATTERNS = [
    [1.5, 0.0, 2.0],
    [0.0, 1.5, 2.0, -0.5],
    [1.5, 2.0, -3.0, 0.0],
    [2.0, 0.0, 3.0, 0.0, 5.0],
    [0.0, 0.0, 2.0],
    [1.5, -2.0, 0.5, 3.0],
]


def test_cumprod_gradient_at_a_zero_is_the_closed_form():
    # d/dx sum(x0, x0 x1, x0 x1 x2) = [1 + x1 + x1 x2, x0 + x0 x2, x0 x1] = [1, 4.5, 0]
    for dtype in (tf.float32, tf.float64):
        x = tf.constant([1.5, 0.0, 2.0], dtype)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.math.cumprod(x))
        grad = tape.gradient(y, x)
        assert grad.dtype == dtype
        np.testing.assert_array_equal(grad.numpy(), [1.0, 4.5, 0.0])
    # exclusive (1, x0, x0 x1): [1 + x1, x0, 0]; reverse (x0 x1 x2, x1 x2, x2):
    # [x1 x2, x0 x2 + x2, x0 x1 + x1 + 1]
    x = tf.constant([1.5, 0.0, 2.0], tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        ex = tf.reduce_sum(tf.math.cumprod(x, exclusive=True))
        rev = tf.reduce_sum(tf.math.cumprod(x, reverse=True))
    np.testing.assert_array_equal(tape.gradient(ex, x).numpy(), [1.0, 1.5, 0.0])
    np.testing.assert_array_equal(tape.gradient(rev, x).numpy(), [0.0, 3.0 + 2.0, 1.0])


@pytest.mark.parametrize("exclusive,reverse", SCANS)
@pytest.mark.parametrize("values", ZERO_PATTERNS)
def test_cumprod_derivatives_with_zeros_match_finite_differences(values, exclusive, reverse):
    x = np.array(values)
    check_derivatives(lambda v: tf.math.cumprod(v, exclusive=exclusive, reverse=reverse), x)


@pytest.mark.parametrize("exclusive,reverse", SCANS)
def test_cumprod_derivatives_along_an_inner_axis_with_mixed_zero_patterns(exclusive, reverse):
    x = np.array([[[1.5, 0.0, 2.0, 3.0], [0.5, 2.0, -1.0, 0.0]],
                  [[0.0, 0.0, 1.0, 2.0], [1.0, -2.0, 3.0, 0.5]]]).transpose(0, 2, 1)
    check_derivatives(lambda v: tf.math.cumprod(v, axis=1, exclusive=exclusive,
                                                reverse=reverse), x)


@pytest.mark.parametrize("exclusive,reverse", SCANS)
def test_cumprod_second_order_with_one_zero_matches_finite_differences(exclusive, reverse):
    # the gradient (a polynomial in x) differentiated again, in both modes
    x = np.array([1.5, -2.0, 0.0, 3.0, 0.5])
    w = RNG.standard_normal(5)

    def grad(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(tf.math.cumprod(v, exclusive=exclusive, reverse=reverse) * w)
        return tape.gradient(y, v)

    check_derivatives(grad, x)


def test_cumprod_batched_tangents_and_complex_values_at_zeros():
    # every basis tangent at once (ForwardAccumulator's use_batch) gives the Jacobian
    x = np.array([[1.5, 0.0, 2.0], [0.0, 2.0, 0.0]])
    f = lambda v: tf.math.cumprod(v, axis=1, exclusive=True, reverse=True)  # noqa: E731
    xt = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(xt, tf.constant(np.eye(6).reshape(6, 2, 3)),
                                        use_batch=True) as acc:
        y = f(xt)
    np.testing.assert_allclose(acc.jvp(y).numpy().reshape(6, 6).T, fd_jacobian(f, x),
                               atol=1e-9)
    # complex: the holomorphic Jacobian J (by central differences along the real axis);
    # the gradient is conj(J)^T g and the tangent J t
    z = np.array([1 + 2j, 0.0, 2 - 1j, 0.5j])
    jac = np.stack([(np.cumprod(z + 1e-6 * e) - np.cumprod(z - 1e-6 * e)) / 2e-6
                    for e in np.eye(4)], axis=1)
    g = np.array([1 - 1j, 2.0, 0.5j, 1.0])
    np.testing.assert_allclose(vjp(tf.math.cumprod, z, g), jac.conj().T @ g, atol=1e-9)
    np.testing.assert_allclose(jvp(tf.math.cumprod, z, g), jac @ g, atol=1e-9)


def test_reduce_prod_hessian_at_a_zero_is_the_closed_form():
    # d^2 prod / dx_i dx_j = the product of the others: at [2, 0, 3] that is
    # H01 = 3, H02 = 0, H12 = 2 (reduce_prod's gradient is built from exclusive cumprods)
    x = tf.constant([2.0, 0.0, 3.0], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_prod(x)
        g = inner.gradient(y, x)
    np.testing.assert_array_equal(g.numpy(), [0.0, 6.0, 0.0])
    hessian = outer.jacobian(g, x).numpy()
    np.testing.assert_array_equal(hessian, [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])


def test_cumprod_gradient_traced_empty_and_integer_free():
    f = tf.function(lambda v: tf.math.cumprod(v, reverse=True))
    x = tf.constant([2.0, 0.0, 3.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    # (x0 x1 x2, x1 x2, x2): [x1 x2, x0 x2 + x2, x0 x1 + x1 + 1]
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 6.0 + 3.0, 1.0])
    empty = tf.zeros([0, 3], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(empty)
        y = tf.reduce_sum(tf.math.cumprod(empty, axis=1))
    assert tape.gradient(y, empty).shape == (0, 3)


# --------------------------------------------------------------------------- segment sums


def test_unsorted_segment_sum_drops_negative_ids():
    # TensorFlow: "If the given segment ID i is negative, the value is dropped"
    out = tf.math.unsorted_segment_sum([1.0, 2.0, 3.0, 4.0], [0, -1, 1, -5], 2)
    np.testing.assert_array_equal(out.numpy(), [1.0, 3.0])
    c = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8], [4, 3, 2, 1]])
    out = tf.math.unsorted_segment_sum(c, [0, -1, 0], num_segments=2)
    assert out.numpy().tolist() == [[5, 5, 5, 5], [0, 0, 0, 0]]
    # ids of rank 2 (a prefix of data's shape)
    data = np.arange(12.0).reshape(2, 3, 2)
    ids = np.array([[1, -1, 0], [-2, 1, 1]])
    want = np.zeros((2, 2))
    for (i, j), s in np.ndenumerate(ids):
        if s >= 0:
            want[s] += data[i, j]
    np.testing.assert_array_equal(tf.math.unsorted_segment_sum(data, ids, 2).numpy(), want)
    # every id dropped, no segment at all
    assert tf.math.unsorted_segment_sum(tf.ones([3, 2]), [-1, -1, -2], 0).shape == (0, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("axis, run", [(0, 3), (1, 2), (2, 1)])
def test_segment_sum_of_repeated_ids_adds_in_order_like_add_at(dtype, axis, run):
    """Ids 0, 0, 1, 1, ... (a repeat's gradient) add strided views one run position at a
    time: the sums of np.add.at, bit for bit (from zero, each run in order; -0.0 sums to
    0.0), at the sizes where that path runs, and so does tf.repeat's gradient."""
    from tapeflow.backends.numpy import indexing as np_indexing
    shape = [32, 16, 96]
    shape[axis] = 12 * run
    data = (RNG.standard_normal(shape) * 1e3).astype(dtype)
    data[(slice(None),) * axis + (slice(0, run),)] = -0.0  # (segment 0: all -0.0)
    assert data.size >= np_indexing.SORTED_SUM_FROM
    ids = np.repeat(np.arange(12), run)
    attrs = {"num_segments": 12, "axis": axis, "batch_dims": 0}
    got = np_indexing.unsorted_segment_sum({"data": data, "segment_ids": ids}, attrs, None)
    moved = np.moveaxis(data, axis, 0)
    want = np.zeros((12,) + moved.shape[1:], dtype)
    np.add.at(want, ids, moved)
    want = np.moveaxis(want, 0, axis)
    assert got.dtype == dtype and got.tobytes() == want.tobytes()
    assert not np.signbit(got[(slice(None),) * axis + (0,)]).any()
    # the same ids out of order take np.add.at's path: still the same sums
    perm = RNG.permutation(ids.size)
    shuffled = np_indexing.unsorted_segment_sum(
        {"data": np.take(data, perm, axis=axis), "segment_ids": ids[perm]}, attrs, None)
    np.testing.assert_allclose(shuffled, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-2 if dtype == np.float32 else 0)
    # tf.repeat's gradient: each input element gets the sum of its copies' gradients
    x = tf.constant(RNG.standard_normal((4, 16, 64)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.repeat(x, 3, axis=1)
    g = RNG.standard_normal(y.shape)
    dx = tape.gradient(y, x, output_gradients=tf.constant(g)).numpy()
    np.testing.assert_allclose(dx, g.reshape(4, 16, 3, 64).sum(axis=2), rtol=1e-12)


def test_unsorted_segment_sum_derivatives_with_negative_ids():
    ids = [2, -1, 0, 2, -3]
    x = RNG.standard_normal((5, 2))
    jac = check_derivatives(lambda d: tf.math.unsorted_segment_sum(d, ids, 4), x)
    # the closed form: output row s is the sum of the rows with id s
    want = np.zeros((4, 2, 5, 2))
    for i, s in enumerate(ids):
        if s >= 0:
            want[s, :, i, :] = np.eye(2)
    np.testing.assert_allclose(jac.reshape(want.shape), want, atol=1e-9)
    # an infinite cotangent of a kept segment does not leak into dropped rows
    g = np.array([[np.inf, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    grad = vjp(lambda d: tf.math.unsorted_segment_sum(d, ids, 4), x, g)
    np.testing.assert_array_equal(grad[[1, 4]], 0.0)
    np.testing.assert_array_equal(grad[2], [np.inf, 1.0])


def test_unsorted_segment_sum_gradient_with_no_segments():
    x = tf.ones([3, 2], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.unsorted_segment_sum(x, [-1, -1, -2], 0))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.zeros((3, 2)))


def test_unsorted_segment_sum_negative_ids_traced():
    f = tf.function(lambda d, i: tf.math.unsorted_segment_sum(d, i, 3),
                    input_signature=[tf.TensorSpec([None], tf.float64),
                                     tf.TensorSpec([None], tf.int32)])
    d = tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)
    ids = tf.constant([2, -1, 2, 0])
    with tf.GradientTape() as tape:
        tape.watch(d)
        y = f(d, ids)
        loss = tf.reduce_sum(y * tf.constant([10.0, 20.0, 30.0], tf.float64))
    np.testing.assert_array_equal(y.numpy(), [4.0, 0.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(loss, d).numpy(), [30.0, 0.0, 30.0, 10.0])


def test_segment_sum_layout_with_batch_dims_drops_negative_ids():
    # the kernel's batched layout (data B + M + I + R, ids B + I): a dropped id must not
    # land in a neighbouring batch's segments
    data = RNG.standard_normal((2, 3, 4, 2))
    ids = np.array([[0, -1, 2, -1], [-1, 1, 1, 0]])
    out = _segment_sum(tf.constant(data), tf.constant(ids), 3, axis=2, batch_dims=1).numpy()
    want = np.zeros((2, 3, 3, 2))
    for b in range(2):
        for i, s in enumerate(ids[b]):
            if s >= 0:
                want[b, :, s] += data[b, :, i]
    np.testing.assert_allclose(out, want, rtol=1e-14)


def test_unsorted_segment_sum_id_past_num_segments_raises_naming_the_op():
    # TensorFlow's CPU kernel: "segment_ids[i] = x is out of range [0, num_segments)"
    check_raises(lambda: tf.math.unsorted_segment_sum([1.0, 2.0], [0, 2], 2),
                 "UnsortedSegmentSum", "segment_ids[1] = 2", "out of range [0, 2)")
    check_raises(lambda: tf.math.unsorted_segment_sum([1.0, 2.0], [-1, 0], 0),
                 "UnsortedSegmentSum", "segment_ids[1] = 0", "[0, 0)")


# --------------------------------------------------------------------------- fold_in


def test_fold_in_has_the_dtype_of_data():
    # TF: "It will have the same dtype as data (if data doesn't have an explicit dtype,
    # the dtype will be determined by tf.convert_to_tensor)"
    a = tf.random.fold_in(tf.constant([1, 2], tf.int64), 3)
    assert a.dtype == tf.int32 and a.numpy()[1] == 3
    b = tf.random.fold_in(tf.constant([1, 2], tf.int32), tf.constant(3, tf.int64))
    assert b.dtype == tf.int64 and b.numpy()[1] == 3
    big = tf.random.fold_in([1, 2], np.int64(2**40))
    assert big.dtype == tf.int64 and big.numpy()[1] == 2**40


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_fold_in_draws_the_first_number_as_tensorflow_defines_it(dtype):
    # TF: seed1 = stateless_random_uniform([], seed, dtype=data.dtype, minval=None,
    # maxval=None); the result is stack([seed1, data]); the seed's own dtype does not matter
    want = tf.random.stateless_uniform([], seed=[4, 5], minval=None, maxval=None,
                                       dtype=dtype).numpy()
    for seed_dtype in (tf.int32, tf.int64):
        out = tf.random.fold_in(tf.constant([4, 5], seed_dtype), tf.constant(9, dtype))
        assert out.dtype == dtype
        assert out.numpy().tolist() == [want, 9]


def test_fold_in_rejects_other_data_dtypes_naming_itself():
    check_raises(lambda: tf.random.fold_in([1, 2], tf.constant(3, tf.int16)),
                 "fold_in", "data", "int16")
    check_raises(lambda: tf.random.fold_in([1, 2], 1.5), "fold_in", "data", "float32")


# --------------------------------------------------------------------------- non-finite SVD


def test_matrix_2_norm_of_nan_or_inf_is_nan_not_an_svd_error():
    # TensorFlow's SVD kernel fills its outputs with NaN where Eigen's BDCSVD fails (it
    # reports non-finite input as invalid), so tf.norm(ord=2) of such a matrix is NaN
    good = np.array([[1.0, 2.0], [3.0, 4.0]])
    batch = np.stack([good, [[1.0, np.nan], [2.0, 3.0]], [[np.inf, 1.0], [1.0, 1.0]], 2 * good])
    out = tf.norm(tf.constant(batch), ord=2, axis=[-2, -1]).numpy()
    np.testing.assert_allclose(out[[0, 3]], [np.linalg.norm(good, 2), 2 * np.linalg.norm(good, 2)],
                               rtol=1e-12)
    assert np.isnan(out[1]) and np.isnan(out[2])
    single = tf.norm(tf.constant([[1.0, np.nan], [2.0, 3.0]], tf.float32), ord=2, axis=[0, 1])
    assert single.dtype == tf.float32 and np.isnan(single.numpy())
    assert np.isnan(tf.norm(tf.constant([[np.nan, 1.0]])).numpy())  # euclidean, as before


@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_of_non_finite_matrices_is_nan_and_leaves_the_others(full_matrices):
    a = RNG.standard_normal((3, 3, 3))
    a[1, 0, 2] = np.nan
    s, u, v = tf.linalg.svd(tf.constant(a), full_matrices=full_matrices)
    s, u, v = s.numpy(), u.numpy(), v.numpy()
    assert np.isnan(s[1]).all() and np.isnan(u[1]).all() and np.isnan(v[1]).all()
    for k in (0, 2):
        np.testing.assert_allclose((u[k] * s[k]) @ v[k].T, a[k], atol=1e-12)
    np.testing.assert_allclose(tf.linalg.svd(tf.constant(a), compute_uv=False).numpy()[[0, 2]],
                               s[[0, 2]], rtol=1e-12)


def test_svd_that_does_not_converge_gives_nan_for_that_matrix_only(monkeypatch):
    # NumPy raises LinAlgError for the whole batch; TensorFlow gives NaN for the matrix
    a = RNG.standard_normal((3, 2, 2))
    real_svd = np.linalg.svd

    def flaky(x, *args, **kwargs):
        if np.any(x == a[1, 0, 0]):
            raise np.linalg.LinAlgError("SVD did not converge")
        return real_svd(x, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", flaky)
    s = tf.linalg.svd(tf.constant(a), compute_uv=False).numpy()
    monkeypatch.undo()
    assert np.isnan(s[1]).all()
    np.testing.assert_allclose(s[[0, 2]], real_svd(a[[0, 2]], compute_uv=False), rtol=1e-12)


# --------------------------------------------------------------------------- error names


@pytest.mark.parametrize("call,words", [
    (lambda: tf.linalg.global_norm([tf.ones([2], tf.int32)]), ("global_norm", "int32")),
    (lambda: tf.linalg.global_norm([tf.ones([2]), tf.ones([2], tf.float64)]),
     ("global_norm", "float32[2]", "float64[2]")),
    (lambda: tf.math.count_nonzero(tf.ones([2, 3]), axis=2), ("count_nonzero", "axis=2")),
    (lambda: tf.math.reduce_euclidean_norm(tf.ones([2, 3]), axis=-3),
     ("EuclideanNorm", "axis=-3")),
    (lambda: tf.norm(tf.ones([2, 3]), axis=[0, 2]), ("norm", "axis")),
])
def test_errors_name_the_op_the_user_called(call, words):
    message = check_raises(call, *words)
    for inner in ("reduce_sum", "sqrt:", "add_n", "Svd"):
        assert inner not in message
