"""FusedBatchNorm / FusedBatchNormGrad (ops/nn.py): Keras's BatchNormalization runs them in
training, with the composite's values; traced equals eager bit for bit; the kernels' sums
run in an order fixed by the shape. (Values and derivatives of every order against NumPy
and finite differences: the op-table rows nn.fused_batch_norm_training*.)"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow.backends.numpy import nn as np_nn
from tapeflow.ops.nn import fused_batch_norm_training


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(1.0, 2.0, shape).astype(np.float32)


@pytest.mark.parametrize("shape, axis", [((8, 5, 5, 16), -1), ((64, 7), -1), ((4, 6, 3, 3), 1),
                                         ((2, 3, 1, 5), -1)])
def test_keras_layer_matches_moments_formula(shape, axis):
    x = _data(shape)
    layer = tf.keras.layers.BatchNormalization(axis=axis, momentum=0.9)
    layer.build(shape)
    layer.gamma.assign(np.linspace(0.5, 1.5, shape[axis]).astype(np.float32))
    layer.beta.assign(np.linspace(-1, 1, shape[axis]).astype(np.float32))
    with tf.GradientTape() as tape:
        xt = tf.constant(x)
        tape.watch(xt)
        y = layer(xt, training=True)
        loss = tf.reduce_sum(y * y * np.float32(0.5) + y)
    dx, dg, db = tape.gradient(loss, [xt, layer.gamma, layer.beta])
    a = axis % len(shape)
    axes = tuple(i for i in range(len(shape)) if i != a)
    bshape = [1] * len(shape)
    bshape[a] = shape[a]
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axes), x64.var(axes)
    inv = 1 / np.sqrt(var + 1e-3)
    xhat = (x64 - mean.reshape(bshape)) * inv.reshape(bshape)
    gamma = layer.gamma.numpy().astype(np.float64).reshape(bshape)
    want = xhat * gamma + layer.beta.numpy().reshape(bshape)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    u = want + 1
    want_dx = gamma * inv.reshape(bshape) * (u - u.mean(axes, keepdims=True)
                                             - xhat * (u * xhat).mean(axes, keepdims=True))
    np.testing.assert_allclose(dx.numpy(), want_dx, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(dg.numpy(), (u * xhat).sum(axes), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(db.numpy(), u.sum(axes), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.9 + 0.1 * var, rtol=1e-5)


def test_keras_training_step_traces_the_fused_ops():
    layer = tf.keras.layers.BatchNormalization()
    x = tf.constant(_data((4, 3, 3, 8)))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, x)

    graph = step.get_concrete_function(x).graph
    ops = {op.type for op in graph.get_operations()}
    assert {"FusedBatchNorm", "FusedBatchNormGrad"} <= ops
    assert "Mean" not in ops  # no moments left beside the fused op


def test_traced_equals_eager_bit_for_bit_and_repeats():
    x, s, o = (tf.constant(_data(shape, seed)) for shape, seed in
               (((16, 6, 6, 12), 1), ((12,), 2), ((12,), 3)))
    u = tf.constant(_data((16, 6, 6, 12), 4))

    def f(x, s, o):
        with tf.GradientTape() as tape:
            tape.watch([x, s, o])
            y, mean, var = fused_batch_norm_training(x, s, o, 1e-3)
        return [y, mean, var] + tape.gradient(y, [x, s, o], output_gradients=u)

    eager = [t.numpy() for t in f(x, s, o)]
    traced = tf.function(f)
    for _ in range(2):
        for a, b in zip(eager, traced(x, s, o)):
            np.testing.assert_array_equal(a, b.numpy())


def test_sum_order_is_fixed_by_the_shape():
    # rows folded k at a time: a float64 sum of float32 data agrees to rounding, and the
    # result does not change between calls
    x = _data((3, 7, 5, 16), 5) * np.float32(1000)
    one = fused_batch_norm_training(x, np.ones(16, np.float32), np.zeros(16, np.float32))
    two = fused_batch_norm_training(x, np.ones(16, np.float32), np.zeros(16, np.float32))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(one[1].numpy(), x.astype(np.float64).mean((0, 1, 2)), rtol=1e-6)


def test_errors_name_the_op_and_dtypes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="fused_batch_norm_training.*int32"):
        fused_batch_norm_training(tf.constant([[1, 2]]), tf.constant([1, 1]),
                                  tf.constant([0, 0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="scale and x's axis 1"):
        fused_batch_norm_training(tf.ones([2, 3]), tf.ones([2]), tf.zeros([3]))


@pytest.mark.parametrize("shape", [(4, 5, 5, 16), (3, 7, 1), (2, 3, 1030), (6, 2, 2, 3)])
def test_loops_give_the_numpy_lines_bits(shape, monkeypatch):
    """The numba loops (one sweep per pass) replace NumPy lines op for op: the same bits,
    signed zeros and NaN included, so a program's first calls equal its later ones."""
    rng = np.random.default_rng(11)
    c = shape[-1]
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)
    x.reshape(-1, c)[:, 0] = 2.0  # a constant feature: zero deviations
    dy.reshape(-1, c)[:, 0] = -1.0  # (so its products are -0.0)
    dy.reshape(-1)[-1] = np.nan
    s, o = rng.uniform(0.5, 2, c).astype(np.float32), rng.normal(size=c).astype(np.float32)
    attrs = {"axis": len(shape) - 1, "epsilon": 1e-3}

    def run():
        y, m, v = np_nn.fused_batch_norm({"x": x, "scale": s, "offset": o}, attrs, None)
        grads = np_nn.fused_batch_norm_grad({"dy": dy, "x": x, "scale": s, "mean": m,
                                             "variance": v}, attrs, None)
        return [a.tobytes() for a in [y, m, v, *grads]]
    monkeypatch.setattr(np_nn, "_loop_calls", {})
    monkeypatch.setattr(np_nn, "_COMPILE_AFTER", 1 << 30)
    twins = run()
    monkeypatch.setattr(np_nn, "_COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    jit.wait_compiled()  # (earlier tests may have started them in the background)
    try:
        assert run() == twins
        assert np_nn._MOMENT._jit is not None or not jit.available()  # (the loops ran)
    finally:
        jit.set_background(before)


@pytest.mark.parametrize("shape, axis", [((3, 4, 5), -1), ((3, 2, 4, 5), 1), ((3, 4, 2), 0)])
def test_vectorized_map_batches_each_element_apart(shape, axis, recwarn):
    rng = np.random.default_rng(3)
    x = tf.constant(rng.random(shape))
    c = shape[1:][axis]
    s, o = tf.constant(rng.random(c)), tf.constant(rng.random(c))
    got = tf.vectorized_map(lambda a: fused_batch_norm_training(a, s, o, 1e-3, axis), x)
    for k, out in enumerate(got):
        want = np.stack([fused_batch_norm_training(x[i], s, o, 1e-3, axis)[k].numpy()
                         for i in range(shape[0])])
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    scales = tf.constant(rng.random((shape[0], c)))
    got = tf.vectorized_map(lambda a: fused_batch_norm_training(x[0], a, o, 1e-3, axis)[0],
                            scales)
    want = np.stack([fused_batch_norm_training(x[0], scales[i], o, 1e-3, axis)[0].numpy()
                     for i in range(shape[0])])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    assert not [w for w in recwarn if "batching rule" in str(w.message)]


def test_jacobian_vectorizes_the_gradient_op():
    x = tf.constant(np.random.default_rng(4).random((3, 4, 5)))
    s, o = tf.constant(np.linspace(0.5, 1.5, 5)), tf.constant(np.linspace(-1, 1, 5))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = tf.square(fused_batch_norm_training(x, s, o)[0])
    vectorized = tape.jacobian(z, x)
    looped = tape.jacobian(z, x, experimental_use_pfor=False)
    np.testing.assert_allclose(vectorized.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)
