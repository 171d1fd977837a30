"""Layers and initializers: forward values against NumPy, gradients against finite
differences (float64), BatchNorm's moving statistics, Dropout's statistics, tracing, errors."""
import math

import numpy as np
import pytest
from scipy import special

import tapeflow as tf
from tapeflow import initializers, layers


@pytest.fixture(autouse=True)
def _fresh_seed():
    tf.random.set_seed(1234)
    yield
    tf.random.set_seed(None)


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def finite_difference(f, array, eps=1e-6):
    """d f / d array by central differences; f maps the (mutated) array to a float."""
    grad = np.zeros_like(array)
    flat, gflat = array.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f()
        flat[i] = old - eps
        lo = f()
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return grad


def check_layer_gradients(layer, x, call=lambda layer, x: layer(x), rtol=1e-6, atol=1e-8):
    """Tape gradients of sum(sin(layer(x))) with respect to x and every trainable variable
    against central differences, in float64."""
    x = x.copy()
    weights = rand(*call(layer, tf.constant(x)).shape, seed=9)  # a generic cotangent

    def loss_np():
        return float(np.sum(weights * np.sin(call(layer, tf.constant(x)).numpy())))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(weights * tf.sin(call(layer, xt)))
    grads = tape.gradient(loss, [xt, *layer.trainable_variables])
    np.testing.assert_allclose(grads[0].numpy(), finite_difference(loss_np, x), rtol=rtol,
                               atol=atol)
    for v, g in zip(layer.trainable_variables, grads[1:]):
        value = v.numpy()

        def loss_v():
            v.assign(value)
            return loss_np()
        want = finite_difference(loss_v, value)
        v.assign(value)
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), want, rtol=rtol,
                                   atol=atol, err_msg=v.name)


def conv2d_ref(x, k, stride, padding):
    n, h, w, c = x.shape
    kh, kw, _, o = k.shape
    if padding == "same":
        oh, ow = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, o), x.dtype)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


# --------------------------------------------------------------------------- Dense


def test_dense_forward_and_names():
    d = layers.Dense(3, activation="relu")
    x = rand(4, 5, dtype=np.float32)
    y = d(x)
    k, b = d.kernel.numpy(), d.bias.numpy()
    assert (k.shape, b.shape) == ((5, 3), (3,))
    np.testing.assert_allclose(y.numpy(), np.maximum(x @ k + b, 0), rtol=1e-6)
    assert [v.name for v in d.variables] == ["dense/kernel:0", "dense/bias:0"]
    assert d.name == "dense" and d.built and y.dtype == tf.float32
    assert not b.any()                                  # zeros bias
    limit = math.sqrt(6 / (5 + 3))                      # glorot uniform
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0


def test_dense_higher_rank_and_no_bias():
    d = layers.Dense(2, use_bias=False, name="proj")
    x = rand(2, 3, 4)
    y = d(x)
    assert d.bias is None and [v.name for v in d.variables] == ["proj/kernel:0"]
    assert y.dtype == tf.float64 and y.shape == (2, 3, 2)
    np.testing.assert_allclose(y.numpy(), x @ d.kernel.numpy(), rtol=1e-12)


def test_dense_casts_integer_inputs():
    d = layers.Dense(2, dtype="float32")
    y = d(tf.constant([[1, 2]]))
    assert y.dtype == tf.float32
    np.testing.assert_allclose(y.numpy(), np.array([[1.0, 2.0]]) @ d.kernel.numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("name,ref", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("tanh", np.tanh),
    ("sigmoid", special.expit),
    ("softmax", lambda z: special.softmax(z, axis=-1)),
    ("gelu", lambda z: 0.5 * z * (1 + special.erf(z / np.sqrt(2)))),
    (None, lambda z: z),
    ("linear", lambda z: z),
])
def test_activations_by_name(name, ref):
    d = layers.Dense(3, activation=name)
    x = rand(4, 2)
    np.testing.assert_allclose(d(x).numpy(), ref(x @ d.kernel.numpy() + d.bias.numpy()),
                               rtol=1e-10, atol=1e-12)


def test_callable_activation_and_initializer_objects():
    d = layers.Dense(2, activation=lambda z: 2.0 * z,
                     kernel_initializer=initializers.Ones(),
                     bias_initializer=initializers.Constant(0.5))
    y = d(np.ones((1, 3)))
    np.testing.assert_allclose(y.numpy(), [[7.0, 7.0]])
    e = layers.Dense(2, kernel_initializer="zeros", bias_initializer="ones")
    np.testing.assert_allclose(e(np.ones((1, 3))).numpy(), [[1.0, 1.0]])


def test_seeded_and_global_seed_initialization_is_repeatable():
    init = initializers.GlorotUniform(seed=7)
    a = layers.Dense(3, kernel_initializer=init)
    b = layers.Dense(3, kernel_initializer=initializers.GlorotUniform(seed=7))
    a(np.ones((1, 4))), b(np.ones((1, 4)))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    tf.random.set_seed(5)
    c = layers.Dense(3)
    c(np.ones((1, 4)))
    tf.random.set_seed(5)
    d = layers.Dense(3)
    d(np.ones((1, 4)))
    np.testing.assert_array_equal(c.kernel.numpy(), d.kernel.numpy())
    e = layers.Dense(3)     # the next draw differs
    e(np.ones((1, 4)))
    assert not np.array_equal(d.kernel.numpy(), e.kernel.numpy())


def test_dense_gradients_match_finite_differences():
    d = layers.Dense(3, activation="tanh")
    check_layer_gradients(d, rand(4, 2))


def test_dense_errors():
    for bad in (0, -2, 2.5, "3", True, None):
        with pytest.raises(ValueError, match="units must be a positive integer"):
            layers.Dense(bad)
    d = layers.Dense(2)
    with pytest.raises(ValueError, match=r"rank >= 2.*\[3\]"):
        d(tf.ones([3]))
    d(tf.ones([1, 3]))
    with pytest.raises(ValueError, match=r"'dense'.*last dimension 3.*\[1, 4\]"):
        d(tf.ones([1, 4]))
    with pytest.raises(ValueError, match="Unknown activation function 'nope'"):
        layers.Dense(2, activation="nope")
    with pytest.raises(ValueError, match="Could not interpret activation"):
        layers.Dense(2, activation=3)


# --------------------------------------------------------------------------- Conv2D


@pytest.mark.parametrize("padding,strides", [("valid", 1), ("same", 1), ("same", 2),
                                             ("valid", 2)])
def test_conv2d_forward(padding, strides):
    conv = layers.Conv2D(4, 3, strides=strides, padding=padding, activation="relu",
                         bias_initializer=initializers.RandomNormal(seed=3))
    x = rand(2, 7, 6, 3)
    y = conv(x)
    k, b = conv.kernel.numpy(), conv.bias.numpy()
    assert k.shape == (3, 3, 3, 4)
    np.testing.assert_allclose(y.numpy(), np.maximum(conv2d_ref(x, k, strides, padding) + b, 0),
                               rtol=1e-10, atol=1e-12)
    assert [v.name for v in conv.variables] == ["conv2d/kernel:0", "conv2d/bias:0"]


def test_conv2d_rectangular_kernel_and_case_insensitive_padding():
    conv = layers.Conv2D(2, (2, 3), padding="SAME", use_bias=False)
    x = rand(1, 4, 5, 2)
    y = conv(x)
    assert y.shape == (1, 4, 5, 2) and conv.bias is None
    np.testing.assert_allclose(y.numpy(), conv2d_ref(x, conv.kernel.numpy(), 1, "same"),
                               rtol=1e-10)


def test_conv2d_gradients_match_finite_differences():
    conv = layers.Conv2D(2, 2, strides=1, padding="same")
    check_layer_gradients(conv, rand(1, 3, 3, 2))


def test_conv2d_errors():
    with pytest.raises(ValueError, match="filters must be a positive integer"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same'"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match=r"4-D.*\[5, 5, 3\]"):
        layers.Conv2D(2, 3)(tf.ones([5, 5, 3]))
    conv = layers.Conv2D(2, 3)
    conv(tf.ones([1, 5, 5, 3]))
    with pytest.raises(ValueError, match="3 channels"):
        conv(tf.ones([1, 5, 5, 4]))


# --------------------------------------------------------------------------- Embedding


def test_embedding_lookup_and_sparse_gradient():
    emb = layers.Embedding(6, 3)
    ids = np.array([[1, 4], [1, 0]])
    y = emb(ids)
    table = emb.embeddings.numpy()
    assert y.shape == (2, 2, 3) and emb.embeddings.name == "embedding/embeddings:0"
    np.testing.assert_array_equal(y.numpy(), table[ids])
    assert np.abs(table).max() <= 0.05           # Keras's default uniform(-0.05, 0.05)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(emb(ids) * np.arange(12.0).reshape(2, 2, 3).astype(np.float32))
    g = tape.gradient(loss, emb.embeddings)
    assert isinstance(g, tf.IndexedSlices)
    dense = np.zeros((6, 3), np.float32)
    np.add.at(dense, ids.reshape(-1), np.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), dense)


def test_embedding_float_ids_and_errors():
    emb = layers.Embedding(4, 2)
    np.testing.assert_array_equal(emb(np.array([3.0, 0.0])).numpy(),
                                  emb.embeddings.numpy()[[3, 0]])
    with pytest.raises(ValueError):
        emb(np.array([4]))
    with pytest.raises(ValueError, match="input_dim must be a positive integer"):
        layers.Embedding(0, 2)


# --------------------------------------------------------------------------- LayerNorm


def layer_norm_ref(x, axes, eps, gamma=1.0, beta=0.0):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_layer_norm_forward():
    ln = layers.LayerNorm()
    x = rand(3, 4, 5)
    np.testing.assert_allclose(ln(x).numpy(), layer_norm_ref(x, -1, 1e-3), rtol=1e-10)
    assert [v.name for v in ln.variables] == ["layer_norm/gamma:0", "layer_norm/beta:0"]
    assert ln.gamma.shape == (5,)
    ln.gamma.assign(rand(5, seed=1))
    ln.beta.assign(rand(5, seed=2))
    np.testing.assert_allclose(ln(x).numpy(), layer_norm_ref(x, -1, 1e-3, ln.gamma.numpy(),
                                                             ln.beta.numpy()), rtol=1e-10)


def test_layer_norm_several_axes_and_no_params():
    ln = layers.LayerNorm(axis=[1, 2], epsilon=1e-5)
    x = rand(2, 3, 4)
    ln(x)
    assert ln.gamma.shape == (3, 4)
    ln.gamma.assign(rand(3, 4, seed=3))
    np.testing.assert_allclose(ln(x).numpy(),
                               layer_norm_ref(x, (1, 2), 1e-5, ln.gamma.numpy()), rtol=1e-10)
    mid = layers.LayerNorm(axis=1, center=False, scale=False)
    np.testing.assert_allclose(mid(x).numpy(), layer_norm_ref(x, 1, 1e-3), rtol=1e-10)
    assert mid.variables == ()


def test_layer_norm_gradients_match_finite_differences():
    ln = layers.LayerNorm(axis=1)
    ln(rand(2, 4, 3))
    ln.gamma.assign(rand(4, seed=4))
    ln.beta.assign(rand(4, seed=5))
    check_layer_gradients(ln, rand(2, 4, 3, seed=6), rtol=1e-5, atol=1e-7)


def test_layer_norm_errors():
    with pytest.raises(ValueError, match="invalid axis 3"):
        layers.LayerNorm(axis=3)(tf.ones([2, 3]))
    with pytest.raises(ValueError, match="duplicate axis"):
        layers.LayerNorm(axis=[1, -1])(tf.ones([2, 3]))
    ln = layers.LayerNorm()
    ln(tf.ones([2, 3]))
    with pytest.raises(ValueError, match=r"incompatible.*\[2, 4\]"):
        ln(tf.ones([2, 4]))


# --------------------------------------------------------------------------- BatchNorm


def test_batch_norm_training_inference_and_moving_stats():
    bn = layers.BatchNorm(momentum=0.9, epsilon=1e-3)
    xs = [rand(8, 3, seed=s) * (s + 1) + s for s in range(5)]
    mm, mv = np.zeros(3), np.ones(3)
    for x in xs:
        y = bn(x, training=True)
        mean, var = x.mean(0), x.var(0)
        np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
        mm = mm * 0.9 + mean * 0.1
        mv = mv * 0.9 + var * 0.1
        np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-10)
        np.testing.assert_allclose(bn.moving_variance.numpy(), mv, rtol=1e-10)
    x = rand(4, 3, seed=9)
    for y in (bn(x), bn(x, training=False)):  # inference (the default): moving statistics
        np.testing.assert_allclose(y.numpy(), (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-10)  # unchanged
    assert [v.name for v in bn.trainable_variables] == ["batch_norm/gamma:0",
                                                        "batch_norm/beta:0"]
    assert [v.name for v in bn.non_trainable_variables] == [
        "batch_norm/moving_mean:0", "batch_norm/moving_variance:0"]


def test_batch_norm_channels_first_axis():
    bn = layers.BatchNorm(axis=1, momentum=0.5)
    x = rand(2, 3, 4, 5)
    bn(x, training=True)
    bn.gamma.assign(rand(3, seed=1))
    bn.beta.assign(rand(3, seed=2))
    y = bn(x, training=True)
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    g, b = bn.gamma.numpy()[:, None, None], bn.beta.numpy()[:, None, None]
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3) * g + b,
                               rtol=1e-10)
    m = mean.reshape(3)
    np.testing.assert_allclose(bn.moving_mean.numpy(), (0 * 0.5 + m * 0.5) * 0.5 + m * 0.5,
                               rtol=1e-10)
    yi = bn(x)
    mm, mv = bn.moving_mean.numpy()[:, None, None], bn.moving_variance.numpy()[:, None, None]
    np.testing.assert_allclose(yi.numpy(), (x - mm) / np.sqrt(mv + 1e-3) * g + b, rtol=1e-10)


def test_batch_norm_gradients_match_finite_differences():
    bn = layers.BatchNorm()
    bn(rand(5, 3), training=True)
    bn.gamma.assign(rand(3, seed=1))
    bn.beta.assign(rand(3, seed=2))
    check_layer_gradients(bn, rand(5, 3, seed=3), lambda l, x: l(x, training=True),
                          rtol=1e-5, atol=1e-7)
    check_layer_gradients(bn, rand(5, 3, seed=4), lambda l, x: l(x, training=False))


def test_batch_norm_updates_inside_traced_function():
    bn = layers.BatchNorm(momentum=0.8)

    @tf.function
    def step(x):
        return bn(x, training=True)

    mm = np.zeros(2)
    for s in range(3):
        x = rand(6, 2, seed=s)
        y = step(tf.constant(x))
        mm = mm * 0.8 + x.mean(0) * 0.2
        np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-10)
        np.testing.assert_allclose(y.numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3),
                                   rtol=1e-10)
    assert step.experimental_get_tracing_count() == 1 and len(bn.variables) == 4

    @tf.function
    def maybe(x, training):
        return bn(x, training=training)   # a tensor flag: both branches in the graph

    before = bn.moving_mean.numpy()
    maybe(tf.constant(rand(6, 2)), tf.constant(False))
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    maybe(tf.constant(rand(6, 2)), tf.constant(True))
    assert not np.array_equal(bn.moving_mean.numpy(), before)


# the statistics of no rows (0 / 0) are computed in the traced gradient, then not used
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_batch_norm_on_a_batch_of_no_rows_changes_nothing():
    # a replica's part of a short last batch under tf.distribute can have no rows
    bn = layers.BatchNorm(momentum=0.5)
    bn(tf.constant(rand(4, 3)), training=True)
    before = [v.numpy() for v in bn.variables]

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def traced(x):  # the rows unknown while tracing: decided when it runs
        return bn(x, training=True)
    for call in (lambda x: bn(x, training=True), traced):
        empty = tf.constant(np.zeros((0, 3)))
        with tf.GradientTape() as tape:
            tape.watch(empty)
            y = call(empty)
            loss = tf.reduce_sum(y)
        grads = tape.gradient(loss, [bn.gamma, bn.beta, empty])
        assert y.shape == (0, 3)
        assert [g.numpy().tolist() for g in grads[:2]] == [[0.0] * 3] * 2
        assert grads[2].shape == (0, 3)
        for v, b in zip(bn.variables, before):
            np.testing.assert_array_equal(v.numpy(), b)
    traced(tf.constant(rand(4, 3)))  # a batch with rows still moves the statistics
    assert not np.array_equal(bn.moving_mean.numpy(), before[2])


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="momentum must be a number in"):
        layers.BatchNorm(momentum=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        layers.BatchNorm(epsilon=-1.0)
    with pytest.raises(TypeError, match="training must be"):
        layers.BatchNorm()(tf.ones([2, 2]), training="yes")


# --------------------------------------------------------------------------- Dropout


def test_dropout_statistics_and_inference_noop():
    drop = layers.Dropout(0.3)
    x = np.ones(200_000, np.float32)
    y = drop(x, training=True).numpy()
    kept = y != 0
    assert abs(1 - kept.mean() - 0.3) < 0.005
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(y.mean() - 1.0) < 0.01
    xs = rand(3, 4)
    np.testing.assert_array_equal(drop(xs).numpy(), xs)
    np.testing.assert_array_equal(drop(xs, training=False).numpy(), xs)
    assert drop.variables == ()


def test_dropout_seeded_repeatable_and_traced():
    a = layers.Dropout(0.5, seed=3)
    tf.random.set_seed(1)
    first = a(np.ones(64), training=True).numpy()
    second = a(np.ones(64), training=True).numpy()
    tf.random.set_seed(1)
    np.testing.assert_array_equal(a(np.ones(64), training=True).numpy(), first)
    assert not np.array_equal(first, second)

    @tf.function
    def f(x):
        return a(x, training=True)
    r1, r2 = f(tf.ones([64])).numpy(), f(tf.ones([64])).numpy()
    assert set(np.unique(r1)) <= {0.0, 2.0} and not np.array_equal(r1, r2)


def test_dropout_gradient_and_errors():
    drop = layers.Dropout(0.5, seed=1)
    x = tf.constant(rand(100))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = drop(x, training=True)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, np.where(y.numpy() != 0, 2.0, 0.0))
    for bad in (1.0, -0.1, "0.5"):
        with pytest.raises(ValueError, match=r"rate must be a number in \[0, 1\)"):
            layers.Dropout(bad)


# --------------------------------------------------------------------------- initializers


def test_initializers_get_and_defaults():
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("zeros"), initializers.Zeros)
    assert isinstance(initializers.get("ones"), initializers.Ones)
    assert isinstance(initializers.get("random_normal"), initializers.RandomNormal)
    assert initializers.get(None) is None
    ones = initializers.Ones()
    assert initializers.get(ones) is ones
    rn = initializers.get({"class_name": "RandomNormal", "config": {"stddev": 2.0}})
    assert rn.stddev == 2.0
    with pytest.raises(ValueError, match="Unknown initializer 'nope'"):
        initializers.get("nope")
    z = initializers.Zeros()([2, 3], dtype=tf.float64)
    assert z.dtype == tf.float64 and not z.numpy().any()
    np.testing.assert_array_equal(initializers.Ones()([2]).numpy(), [1.0, 1.0])


def test_random_initializers_statistics_and_seeds():
    g = initializers.GlorotUniform(seed=11)
    a, b = g([300, 200]).numpy(), g([300, 200]).numpy()
    np.testing.assert_array_equal(a, b)          # a seeded initializer repeats itself
    limit = math.sqrt(6 / 500)
    assert np.abs(a).max() <= limit
    assert abs(a.var() - limit ** 2 / 3) < 0.02 * limit ** 2
    assert not np.array_equal(a, initializers.GlorotUniform(seed=12)([300, 200]).numpy())
    rn = initializers.RandomNormal(mean=1.0, stddev=0.5, seed=3)([100_000]).numpy()
    assert abs(rn.mean() - 1.0) < 0.01 and abs(rn.std() - 0.5) < 0.01
    assert rn.dtype == np.float32
    # a conv kernel's fans count its receptive field: fan_in = 3*3*4, fan_out = 3*3*8
    k = initializers.GlorotUniform(seed=1)([3, 3, 4, 8]).numpy()
    assert np.abs(k).max() <= math.sqrt(6 / (36 + 72))
    tf.random.set_seed(4)
    u1 = initializers.GlorotUniform()([5]).numpy()
    tf.random.set_seed(4)
    np.testing.assert_array_equal(initializers.GlorotUniform()([5]).numpy(), u1)
    with pytest.raises(ValueError, match="floating"):
        initializers.RandomNormal()([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="seed"):
        initializers.GlorotUniform(seed="x")


# --------------------------------------------------------------------------- tracing


def test_layers_traced_equal_eager_and_build_once():
    conv = layers.Conv2D(3, 2, activation="relu")
    norm = layers.LayerNorm()
    dense = layers.Dense(2)

    def net(x):
        h = norm(conv(x))
        return dense(tf.reshape(h, [x.shape[0], -1]))

    traced = tf.function(net)
    x = rand(2, 4, 4, 2, dtype=np.float32)
    y_traced = traced(tf.constant(x))
    n_vars = len(conv.variables + norm.variables + dense.variables)
    y_eager = net(tf.constant(x))
    np.testing.assert_allclose(y_traced.numpy(), y_eager.numpy(), rtol=1e-5, atol=1e-6)
    traced(tf.constant(x))
    assert n_vars == 6 and len(conv.variables + norm.variables + dense.variables) == 6
    assert traced.experimental_get_tracing_count() == 1


def test_training_flag_is_dropped_for_layers_without_it():
    d = layers.Dense(2, kernel_initializer="ones")
    np.testing.assert_allclose(d(np.ones((1, 2)), training=True).numpy(), [[2.0, 2.0]])
    with pytest.raises(TypeError):
        d(np.ones((1, 2)), flag=True)
