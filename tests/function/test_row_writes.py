"""Row writes in traced loops (function/control.py RowWrites): a loop variable whose only
update is one row written at an index (a TensorArray write, tensor_scatter_nd_update at
[[i]]) is written in place by the loop runtime and its gradient loop feeds the
cotangent's row. Values must equal eager ones (to rounding where a fused kernel
computes a transcendental function) and gradients central
finite differences in float64, also when the body reads the buffer, the index is not the
loop counter, the loop is nested, run in forward mode or vectorized."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.function import control

from ..numeric import numeric_grad as _numeric_grad

RNG = np.random.default_rng(7)


def _while_nodes(fn, *args) -> list:
    cf = fn.get_concrete_function(*args)
    return [n for n in cf.graph.nodes if n.op == "While"]


def _rows_found(fn, *args) -> list:
    return [control.row_writes(n.attrs["body"], len(n.inputs["loop_vars"]))
            for n in _while_nodes(fn, *args)]


def _ta_loop(x, w, index=lambda i, n: i):
    """sum over rows of tanh(h_t) written into a TensorArray at index(t, n)."""
    n = x.shape[0]
    ta = tf.TensorArray(tf.float64, size=n)

    def body(i, h, ta):
        h = tf.tanh(tf.matmul(h, w) + tf.gather(x, i))
        return i + 1, h, ta.write(index(i, n), h * h)

    _, h, ta = tf.while_loop(lambda i, h, ta: i < n, body,
                             (tf.constant(0), tf.zeros([2, 3], tf.float64), ta))
    return ta.stack()


def _loss(fn, x, w):
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        out = fn(x, w)
        weights = tf.range(1, 1 + tf.size(out), dtype=tf.int32)
        loss = tf.reduce_sum(out * tf.cast(tf.reshape(weights, tf.shape(out)), out.dtype))
    return out, loss, tape.gradient(loss, [x, w])


@pytest.mark.parametrize("index", [lambda i, n: i, lambda i, n: n - 1 - i,
                                   lambda i, n: tf.constant(1)],
                         ids=["counter", "reversed", "fixed"])
def test_tensor_array_rows_traced_equal_eager_and_finite_differences(index):
    x = RNG.standard_normal((5, 2, 3))
    w = RNG.standard_normal((3, 3)) * 0.5

    def fn(x, w):
        return _ta_loop(x, w, index)

    traced = tf.function(lambda x, w: _loss(fn, x, w))
    xt, wt = tf.constant(x), tf.constant(w)
    assert all(r is not None for r in _rows_found(traced, xt, wt))
    got, eager = traced(xt, wt), _loss(fn, xt, wt)
    # (equal to rounding: a traced body's fused tanh is not NumPy's)
    for a, b in zip([got[0], got[1], *got[2]], [eager[0], eager[1], *eager[2]]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, atol=1e-15)
    plain = tf.function(lambda x, w: tf.reduce_sum(
        fn(x, w) * np.arange(1.0, 31.0).reshape(5, 2, 3)))
    gx = _numeric_grad(lambda v: plain(tf.constant(v), wt), x)
    gw = _numeric_grad(lambda v: plain(xt, tf.constant(v)), w)
    np.testing.assert_allclose(got[2][0].numpy(), gx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[2][1].numpy(), gw, rtol=1e-6, atol=1e-8)


def test_initial_buffer_is_not_changed_and_rows_not_written_keep_it():
    base = tf.constant(RNG.standard_normal((4, 3)))
    keep = base.numpy().copy()

    @tf.function
    def f(base, v):
        def body(i, buf):
            return i + 1, tf.tensor_scatter_nd_update(buf, tf.reshape(i, [1, 1]),
                                                      tf.expand_dims(v * tf.cast(i, v.dtype),
                                                                     0))
        with tf.GradientTape() as tape:
            tape.watch([base, v])
            _, out = tf.while_loop(lambda i, b: i < 3, body, (tf.constant(1), base))
            loss = tf.reduce_sum(out * out)
        return out, tape.gradient(loss, [base, v])

    v = tf.constant([1.0, 2.0, 3.0], tf.float64)
    assert all(r is not None for r in _rows_found(f, base, v))
    out, (gb, gv) = f(base, v)
    np.testing.assert_array_equal(base.numpy(), keep)
    want = keep.copy()
    want[1], want[2] = v.numpy(), 2 * v.numpy()
    np.testing.assert_array_equal(out.numpy(), want)
    # rows 1 and 2 were overwritten: their gradient is zero, row 0 and 3 keep 2*base
    np.testing.assert_array_equal(gb.numpy(), np.where(np.arange(4)[:, None] % 3 == 0,
                                                       2 * keep, 0.0))
    np.testing.assert_allclose(gv.numpy(), 2 * v.numpy() * (1 + 4), rtol=1e-14)
    out2, _ = f(base, v)  # a second run starts from the input again
    np.testing.assert_array_equal(out2.numpy(), want)


def test_a_body_that_reads_its_buffer_is_left_functional():
    x = RNG.standard_normal((4, 3))

    def fn(x):
        ta = tf.TensorArray(tf.float64, size=5, clear_after_read=False)
        ta = ta.write(0, tf.ones([3], tf.float64))

        def body(i, ta):
            return i + 1, ta.write(i + 1, tf.sin(ta.read(i) * tf.gather(x, i)))
        return tf.while_loop(lambda i, ta: i < 4, body, (tf.constant(0), ta))[1].stack()

    traced = tf.function(lambda x: _loss(lambda x, w: fn(x), x, tf.constant(0.0,
                                                                           tf.float64)))
    xt = tf.constant(x)
    assert _rows_found(traced, xt) and all(r is None for r in _rows_found(traced, xt))
    got, eager = traced(xt), _loss(lambda x, w: fn(x), xt, tf.constant(0.0, tf.float64))
    np.testing.assert_allclose(got[0].numpy(), eager[0].numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got[2][0].numpy(), eager[2][0].numpy(), rtol=1e-13,
                               atol=1e-15)


def test_a_cond_that_reads_the_buffer_sees_each_write():
    @tf.function
    def f(v):
        def body(i, buf):
            return i + 1, tf.tensor_scatter_nd_update(buf, tf.reshape(i, [1, 1]),
                                                      tf.reshape(v, [1, 1]))
        with tf.GradientTape() as tape:
            tape.watch(v)
            i, buf = tf.while_loop(lambda i, buf: tf.reduce_sum(buf) < 10.0, body,
                                   (tf.constant(0), tf.zeros([8, 1], tf.float64)))
            loss = tf.reduce_sum(buf * buf)
        return i, buf, tape.gradient(loss, v)

    i, buf, g = f(tf.constant(3.0, tf.float64))
    assert int(i) == 4  # 3, 6, 9, 12: stops after the fourth write
    np.testing.assert_array_equal(buf.numpy()[:, 0], [3, 3, 3, 3, 0, 0, 0, 0])
    np.testing.assert_allclose(float(g), 4 * 2 * 3.0, rtol=1e-14)


def test_nested_loops_and_retracing_per_length():
    def fn(x):
        n = tf.shape(x)[0]
        outer = tf.TensorArray(tf.float64, size=n)

        def obody(i, outer):
            inner = tf.TensorArray(tf.float64, size=3)

            def ibody(j, inner):
                return j + 1, inner.write(j, tf.gather(x, i) * tf.cast(j + 1, tf.float64))
            inner = tf.while_loop(lambda j, t: j < 3, ibody, (tf.constant(0), inner))[1]
            return i + 1, outer.write(i, tf.reduce_prod(inner.stack(), 0))
        return tf.while_loop(lambda i, o: i < n, obody, (tf.constant(0), outer))[1].stack()

    traced = tf.function(lambda x: _loss(lambda x, w: fn(x), x, tf.constant(0.0,
                                                                           tf.float64)),
                         input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    for n in (3, 5):
        x = RNG.standard_normal((n, 2))
        xt = tf.constant(x)
        got = traced(xt)
        np.testing.assert_allclose(got[0].numpy(), x ** 3 * 6.0, rtol=1e-14)
        weights = np.arange(1.0, 1.0 + 2 * n).reshape(n, 2)
        np.testing.assert_allclose(got[2][0].numpy(), 18.0 * x ** 2 * weights, rtol=1e-13)


def test_forward_mode_and_jacobian_through_row_writes():
    x = RNG.standard_normal((3, 2))
    w = tf.constant(np.pad(RNG.standard_normal((2, 2)) * 0.5, ((0, 1), (0, 1))))

    def fn(v):  # rows of v, [3, 2], made [3, 2, 3] steps for _ta_loop
        return _ta_loop(tf.pad(tf.reshape(v, [3, 1, 2]) * tf.ones([1, 2, 1], tf.float64),
                               [[0, 0], [0, 0], [0, 1]]), w)

    @tf.function
    def jac(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.jacobian(y, x)

    @tf.function
    def jvp(x, t):
        with tf.autodiff.ForwardAccumulator(x, t) as acc:
            y = fn(x)
        return acc.jvp(y)

    eps = 1e-6
    want = np.stack([(fn(tf.constant(x + d)).numpy() - fn(tf.constant(x - d)).numpy())
                     / (2 * eps) for d in np.eye(6).reshape(6, 3, 2) * eps], -1)
    want = want.reshape((3, 2, 3, 3, 2))
    np.testing.assert_allclose(jac(tf.constant(x)).numpy(), want, rtol=1e-6, atol=1e-8)
    t = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(jvp(tf.constant(x), tf.constant(t)).numpy(),
                               np.tensordot(want, t, 2), rtol=1e-6, atol=1e-8)


def test_vectorized_map_over_a_loop_with_row_writes():
    xs = RNG.standard_normal((4, 3, 2))

    def one(x):
        ta = tf.TensorArray(tf.float64, size=3)
        ta = tf.while_loop(lambda i, ta: i < 3,
                           lambda i, ta: (i + 1, ta.write(i, tf.exp(tf.gather(x, i)))),
                           (tf.constant(0), ta))[1]
        return ta.stack()

    got = tf.function(lambda xs: tf.vectorized_map(one, xs))(tf.constant(xs))
    np.testing.assert_array_equal(got.numpy(), np.exp(xs))


def test_a_bad_index_raises_as_the_functional_write():
    @tf.function
    def f(k):
        def body(i, buf):
            return i + 1, tf.tensor_scatter_nd_update(buf, tf.reshape(i * k, [1, 1]),
                                                      tf.ones([1, 2]))
        return tf.while_loop(lambda i, b: i < 3, body, (tf.constant(0), tf.zeros([4, 2])))[1]

    np.testing.assert_array_equal(f(tf.constant(1)).numpy()[:3], np.ones((3, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorScatterNdUpdate"):
        f(tf.constant(3))  # the second write is at row 3, the third at 6


@pytest.mark.parametrize("shape", [(5,), (5, 3), (4, 2, 3)])
@pytest.mark.parametrize("nested", [True, False])
def test_one_row_gather_and_update_kernels_match_numpy(shape, nested):
    # (the NumPy kernels' short path for one index of depth 1, which row writes use)
    x = RNG.standard_normal(shape)
    idx = np.array([[2]] if nested else [2], np.int32)
    row = RNG.standard_normal(((1,) if nested else ()) + shape[1:])
    got = tf.gather_nd(tf.constant(x), idx).numpy()
    assert np.shape(got) == row.shape
    np.testing.assert_array_equal(got, x[2:3] if nested else x[2])
    want = x.copy()
    want[2] = row[0] if nested else row
    out = tf.tensor_scatter_nd_update(tf.constant(x), idx, tf.constant(row)).numpy()
    np.testing.assert_array_equal(out, want)
    for bad in (5, -1):
        with pytest.raises(tf.errors.InvalidArgumentError, match="GatherNd"):
            tf.gather_nd(tf.constant(x), np.array([[bad]] if nested else [bad]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="TensorScatterNdUpdate"):
            tf.tensor_scatter_nd_update(tf.constant(x), np.array([[bad]] if nested else [bad]),
                                        tf.constant(row))
