"""tf.keras reshaping, merging, activation, normalization and regularization layers beyond
the core set (UpSampling, ZeroPadding, Cropping, RepeatVector, Permute, Subtract, Maximum,
Minimum, Average, Dot, ELU, PReLU, GroupNormalization, UnitNormalization, GaussianNoise,
GaussianDropout, AlphaDropout, SpatialDropout, ActivityRegularization): values, weights
and configs against real Keras (fixtures/keras_misc_layers.npz, written by
fixtures/make_keras_misc_layers.py), noise statistics, gradients against central
differences, traced calls with unknown batch sizes, functional models and `.keras` files.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras_misc_layers.npz")
DATA = np.load(FIXTURE)
META = json.loads(str(DATA["meta"]))
RANDOM = {"GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
          "SpatialDropout2D", "SpatialDropout3D"}


@pytest.fixture(autouse=True)
def _fresh_names_and_seeds():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _plain(value):
    """A config compared loosely: tuples as lists, no Keras module bookkeeping."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()
                if k not in ("module", "registered_name")}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _case(name):
    meta = META[name]
    layer = getattr(layers, meta["class"])(**meta.get("kwargs", {}))
    xs = [DATA[f"{name}/x{i}"] for i in range(meta["inputs"])]
    return meta, layer, xs


# --------------------------------------------------------------------- against Keras
@pytest.mark.parametrize("name", [n for n, m in META.items() if "kwargs" in m])
def test_outputs_weights_and_configs_match_keras(name):
    meta, layer, xs = _case(name)
    inputs = xs if meta["several"] else xs[0]
    if meta["weights"] or meta["class"] in ("PReLU", "GroupNormalization"):
        layer.build([tf.TensorShape(x.shape) for x in xs] if meta["several"]
                    else tf.TensorShape(xs[0].shape))
        layer.set_weights([DATA[f"{name}/w{i}"] for i in range(meta["weights"])])
    y = layer(inputs)
    np.testing.assert_allclose(y.numpy(), DATA[f"{name}/y"], rtol=2e-5, atol=2e-6)
    assert y.shape == DATA[f"{name}/y"].shape
    assert [v.name.split("/")[-1].split(":")[0] for v in layer.weights] == \
        meta["weight_names"]
    ours = _plain(layer.get_config())
    theirs = _plain(meta["config"])
    assert set(ours) == set(theirs), name
    for key in set(theirs) - {"name"}:
        assert ours[key] == theirs[key], (name, key)
    if f"{name}/loss" in DATA:
        assert len(layer.losses) == 1
        np.testing.assert_allclose(layer.losses[0].numpy(), DATA[f"{name}/loss"], rtol=1e-6)
    # rebuilt from its config, the layer computes the same
    again = type(layer).from_config(layer.get_config())
    if layer.weights:
        again.build(tf.TensorShape(xs[0].shape))
        again.set_weights(layer.get_weights())
    np.testing.assert_allclose(again(inputs).numpy(), y.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", [n for n, m in META.items() if "kwargs" not in m])
def test_masked_merges_match_keras(name):
    meta = META[name]
    xs = []
    for i in range(meta["inputs"]):
        x = tf.constant(DATA[f"{name}/x{i}"])
        x._keras_mask = tf.constant(DATA[f"{name}/m{i}"])
        xs.append(x)
    y = getattr(layers, meta["class"])()(xs)
    np.testing.assert_allclose(y.numpy(), DATA[f"{name}/y"], rtol=1e-6)
    np.testing.assert_array_equal(y._keras_mask.numpy(), DATA[f"{name}/mask"])


def test_bilinear_upsampling_is_the_identity_on_constant_and_halves_between_pixels():
    # closed form: rows of [0, 2] doubled with half-pixel centers -> 0, .5, 1.5, 2
    x = np.array([0.0, 2.0], np.float32).reshape(1, 1, 2, 1)
    y = layers.UpSampling2D((1, 2), interpolation="bilinear")(x).numpy().ravel()
    np.testing.assert_allclose(y, [0.0, 0.5, 1.5, 2.0], rtol=1e-6)


# --------------------------------------------------------------------- noise
def test_noise_layers_are_the_identity_unless_training():
    x = np.linspace(-1, 1, 2 * 3 * 3 * 4, dtype=np.float32).reshape(2, 3, 3, 4)
    for layer in (layers.GaussianNoise(0.5), layers.GaussianDropout(0.5),
                  layers.AlphaDropout(0.5), layers.SpatialDropout2D(0.5),
                  layers.ActivityRegularization(0.1)):
        np.testing.assert_array_equal(layer(x).numpy(), x)
        np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
        assert layer.supports_masking


def test_spatial_dropout_drops_whole_channels_and_scales_the_rest():
    rate = 0.4
    x = np.ones((64, 5, 5, 8), np.float32)
    y = layers.SpatialDropout2D(rate, seed=3)(x, training=True).numpy()
    per_channel = y.reshape(64, 25, 8)
    # each (example, channel) is all zero or all 1 / (1 - rate)
    assert np.all(per_channel.min(axis=1) == per_channel.max(axis=1))
    assert set(np.unique(y)) == {0.0, np.float32(1 / (1 - rate))}
    dropped = (per_channel[:, 0, :] == 0).mean()
    assert abs(dropped - rate) < 0.1  # 512 decisions: 4 standard deviations is ~0.09
    # channels_first: one decision per (example, axis 1); 1-D: per (example, last axis)
    y = layers.SpatialDropout2D(rate, data_format="channels_first", seed=3)(
        x, training=True).numpy()
    assert np.all(y.reshape(64, 5, -1).min(axis=2) == y.reshape(64, 5, -1).max(axis=2))
    y = layers.SpatialDropout1D(rate, seed=3)(np.ones((32, 7, 6), np.float32),
                                              training=True).numpy()
    assert np.all(y.min(axis=1) == y.max(axis=1))
    y = layers.SpatialDropout3D(rate, seed=3)(np.ones((8, 2, 3, 4, 5), np.float32),
                                              training=True).numpy()
    flat = y.reshape(8, 24, 5)
    assert np.all(flat.min(axis=1) == flat.max(axis=1))


def test_gaussian_noise_and_dropout_statistics():
    x = np.full((200, 100), 2.0, np.float32)
    noisy = layers.GaussianNoise(0.5, seed=1)(x, training=True).numpy()
    assert abs(noisy.mean() - 2.0) < 0.02 and abs(noisy.std() - 0.5) < 0.02
    rate = 0.2
    mult = layers.GaussianDropout(rate, seed=1)(x, training=True).numpy() / 2.0
    assert abs(mult.mean() - 1.0) < 0.02
    assert abs(mult.std() - math.sqrt(rate / (1 - rate))) < 0.02


def test_alpha_dropout_keeps_mean_and_variance_of_standard_inputs():
    rate = 0.3
    x = np.random.RandomState(0).randn(400, 250).astype(np.float32)
    y = layers.AlphaDropout(rate, seed=2)(x, training=True).numpy()
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    kept = np.isclose(y, a * x + b, atol=1e-5)
    dropped = np.isclose(y, a * alpha_p + b, atol=1e-5)
    assert np.all(kept | dropped)
    assert abs(dropped.mean() - rate) < 0.01
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    # noise_shape [None, 1]: one decision per row
    y = layers.AlphaDropout(rate, noise_shape=[None, 1], seed=2)(
        np.zeros((50, 6), np.float32), training=True).numpy()
    assert np.all(y.min(axis=1) == y.max(axis=1))


def test_seeded_noise_is_reproducible_and_fresh_per_call():
    # as Keras 3's: each layer has its own SeedGenerator(seed)
    x = np.ones((4, 3, 5), np.float32)
    for make in (lambda seed: layers.GaussianNoise(0.3, seed=seed),
                 lambda seed: layers.GaussianDropout(0.3, seed=seed),
                 lambda seed: layers.AlphaDropout(0.3, seed=seed),
                 lambda seed: layers.SpatialDropout1D(0.5, seed=seed)):
        layer = make(7)
        assert layer.weights == []  # the generator's state is no weight, as in Keras
        first, second = layer(x, training=True).numpy(), layer(x, training=True).numpy()
        assert not np.array_equal(first, second)
        np.testing.assert_array_equal(make(7)(x, training=True).numpy(), first)
        assert not np.array_equal(make(8)(x, training=True).numpy(), first)
        # unseeded: reproducible after set_random_seed
        keras.utils.set_random_seed(5)
        unseeded = make(None)(x, training=True).numpy()
        keras.utils.set_random_seed(5)
        np.testing.assert_array_equal(make(None)(x, training=True).numpy(), unseeded)


def test_activity_regularization_adds_per_example_penalty_to_losses():
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    layer = layers.ActivityRegularization(l1=0.1, l2=0.01)
    layer(x)
    expected = (0.1 * np.abs(x).sum() + 0.01 * (x ** 2).sum()) / 2
    np.testing.assert_allclose(layer.losses[0].numpy(), expected, rtol=1e-6)
    layer(x[:1])  # each call replaces the previous call's penalty
    assert len(layer.losses) == 1
    inputs = keras.Input((2,))
    model = keras.Model(inputs, layers.ActivityRegularization(l2=1.0)(
        layers.Dense(2, kernel_initializer="ones")(inputs)))
    model(x)
    dense = x.sum(axis=1, keepdims=True) * np.ones((1, 2))
    np.testing.assert_allclose(sum(v.numpy() for v in model.losses),
                               (dense ** 2).sum() / 2, rtol=1e-5)


# --------------------------------------------------------------------- gradients
def _numeric_grad(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.PReLU(alpha_initializer=keras.initializers.Constant(0.3),
                          shared_axes=[1], dtype="float64"), (2, 3, 2)),
    (lambda: layers.GroupNormalization(groups=2, gamma_initializer="random_normal",
                                       beta_initializer="random_normal",
                                       dtype="float64"), (2, 3, 4)),
    (lambda: layers.UnitNormalization(dtype="float64"), (2, 3)),
])
def test_gradients_match_central_differences(make, shape):
    rng = np.random.RandomState(1)
    x = rng.randn(*shape)
    x[np.abs(x) < 0.05] = 0.3  # away from PReLU's kink
    layer = make()
    layer(x)
    weights = rng.randn(*shape)  # a fixed projection: a scalar to differentiate

    def loss(x_value):
        return float(np.sum(layer(x_value).numpy() * weights))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = tf.reduce_sum(layer(xt) * weights)
    grads = tape.gradient(out, [xt, *layer.trainable_weights])
    np.testing.assert_allclose(grads[0].numpy(), _numeric_grad(loss, x), rtol=1e-5,
                               atol=1e-7)
    for v, g in zip(layer.trainable_weights, grads[1:]):
        start = v.numpy()

        def loss_w(w_value, v=v):
            v.assign(w_value)
            return loss(x)

        numeric = _numeric_grad(loss_w, start)
        v.assign(start)
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------- tracing
TRACED = [
    (lambda: layers.UpSampling1D(2), (None, 3, 2), (4, 3, 2)),
    (lambda: layers.UpSampling1D(2), (None, None, 2), (4, 3, 2)),
    (lambda: layers.UpSampling2D(2, interpolation="bilinear"), (None, 3, 2, 2), (2, 3, 2, 2)),
    (lambda: layers.UpSampling3D(2), (None, 1, 2, 2, 1), (2, 1, 2, 2, 1)),
    (lambda: layers.ZeroPadding2D(1), (None, None, 2, 3), (2, 3, 2, 3)),
    (lambda: layers.Cropping1D((1, 1)), (None, None, 2), (2, 4, 2)),
    (lambda: layers.Cropping2D(((1, 0), (0, 1))), (None, 3, 3, 2), (2, 3, 3, 2)),
    (lambda: layers.RepeatVector(3), (None, 2), (5, 2)),
    (lambda: layers.Permute((2, 1)), (None, 3, 2), (2, 3, 2)),
    (lambda: layers.Flatten(), (None, None, 2), (2, 3, 2)),
    (lambda: layers.ELU(0.5), (None, 3), (2, 3)),
    (lambda: layers.PReLU(), (None, 3), (2, 3)),
    (lambda: layers.GroupNormalization(2), (None, 3, 4), (2, 3, 4)),
    (lambda: layers.GroupNormalization(2), (None, None, 4), (2, 3, 4)),
    (lambda: layers.UnitNormalization(), (None, 3), (2, 3)),
    (lambda: layers.GaussianNoise(0.2, seed=1), (None, 3), (2, 3)),
    (lambda: layers.GaussianDropout(0.2, seed=1), (None, 3), (2, 3)),
    (lambda: layers.AlphaDropout(0.2, seed=1), (None, 3), (2, 3)),
    (lambda: layers.AlphaDropout(0.5, noise_shape=(None, 1), seed=1), (None, 3), (16, 3)),
    (lambda: layers.SpatialDropout1D(0.5, seed=1), (None, None, 3), (2, 4, 3)),
    (lambda: layers.SpatialDropout2D(0.5, seed=1), (None, 2, 2, 3), (2, 2, 2, 3)),
    (lambda: layers.ActivityRegularization(0.1), (None, 3), (2, 3)),
]


@pytest.mark.parametrize("make,spec,shape", TRACED)
def test_calls_trace_with_unknown_dims(make, spec, shape):
    layer = make()
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    eager = layer(x).numpy()
    traced = tf.function(lambda t: layer(t), input_signature=[tf.TensorSpec(spec)])
    np.testing.assert_allclose(traced(x).numpy(), eager, rtol=1e-6, atol=1e-7)
    if type(layer).__name__ in RANDOM:
        training = tf.function(lambda t: layer(t, training=True),
                               input_signature=[tf.TensorSpec(spec)])
        first, second = training(x).numpy(), training(x).numpy()
        assert first.shape == shape and not np.array_equal(first, second)


@pytest.mark.parametrize("make,specs,shapes", [
    (lambda: layers.Subtract(), [(None, 3), (None, 3)], [(2, 3), (2, 3)]),
    (lambda: layers.Maximum(), [(None, 3), (None, 3)], [(2, 3), (2, 3)]),
    (lambda: layers.Average(), [(None, 2, 3), (None, 3)], [(2, 2, 3), (2, 3)]),
    (lambda: layers.Dot(axes=(1, 2)), [(None, 4, 3), (None, 5, 4)], [(2, 4, 3), (2, 5, 4)]),
    (lambda: layers.Dot(axes=-1, normalize=True), [(None, None, 4), (None, 4)],
     [(2, 3, 4), (2, 4)]),
])
def test_merges_trace_with_unknown_dims(make, specs, shapes):
    layer = make()
    rng = np.random.RandomState(0)
    xs = [rng.randn(*s).astype(np.float32) for s in shapes]
    eager = layer(xs).numpy()
    traced = tf.function(lambda a, b: layer([a, b]),
                         input_signature=[tf.TensorSpec(s) for s in specs])
    np.testing.assert_allclose(traced(*xs).numpy(), eager, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------- models and files
def _model():
    seq = keras.Input((6, 4), name="seq")
    other = keras.Input((4,), name="other")
    h = layers.ZeroPadding1D((1, 1))(seq)
    h = layers.Cropping1D((0, 2))(h)
    h = layers.UpSampling1D(2)(h)
    h = layers.PReLU(alpha_initializer=keras.initializers.Constant(0.2), shared_axes=[1])(h)
    h = layers.GroupNormalization(groups=2)(h)
    h = layers.SpatialDropout1D(0.3, seed=1)(h)
    h = layers.GaussianNoise(0.1, seed=2)(h)
    h = layers.Permute((2, 1))(h)
    h = layers.Reshape((4, 6, 2))(h)
    h = layers.UpSampling2D((1, 2), interpolation="bilinear")(h)
    h = layers.ZeroPadding2D(((0, 1), (1, 0)))(h)
    h = layers.Cropping2D(((1, 0), (1, 0)))(h)
    h = layers.Reshape((-1, 4))(h)
    r = layers.RepeatVector(24)(layers.ELU(0.5)(other))
    m = layers.Maximum()([h, r])
    s = layers.Subtract()([h, r])
    a = layers.Average()([m, s])
    a = layers.UnitNormalization()(a)
    a = layers.ActivityRegularization(l2=0.01)(a)
    d = layers.Dot(axes=(1, 1))([a, layers.GaussianDropout(0.1)(a)])
    out = layers.Minimum()([layers.Flatten()(d), layers.AlphaDropout(0.1)(
        layers.Flatten()(d))])
    return keras.Model([seq, other], out)


def test_functional_model_infers_shapes_and_round_trips_a_keras_file(tmp_path):
    model = _model()
    assert model.outputs[0].shape == (None, 16)
    rng = np.random.RandomState(0)
    x = [rng.randn(3, 6, 4).astype(np.float32), rng.randn(3, 4).astype(np.float32)]
    prelu = next(layer for layer in model.layers if isinstance(layer, layers.PReLU))
    prelu.set_weights([np.array([[0.1, -0.2, 0.3, 0.4]], np.float32)])
    expected = model.predict(x, verbose=0)
    assert expected.shape == (3, 16)
    path = str(tmp_path / "misc.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert [type(layer).__name__ for layer in loaded.layers] == \
        [type(layer).__name__ for layer in model.layers]
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    for layer, again in zip(model.layers, loaded.layers):
        assert _plain(again.get_config()) == _plain(layer.get_config())
    # a training step runs through every layer (noise included) and moves the weights
    model.compile("sgd", "mse")
    before = model.get_weights()
    model.fit(x, np.zeros((3, 16), np.float32), epochs=1, verbose=0)
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


# --------------------------------------------------------------------- errors
@pytest.mark.parametrize("make,message", [
    (lambda: layers.UpSampling1D(0), "positive"),
    (lambda: layers.UpSampling2D((2, 0)), "size"),
    (lambda: layers.UpSampling2D(data_format="nhwc"), "data_format"),
    (lambda: layers.ZeroPadding2D((1, 2, 3)), "padding"),
    (lambda: layers.ZeroPadding1D(-1), "padding"),
    (lambda: layers.Cropping2D(-1), "negative"),
    (lambda: layers.RepeatVector(0), "positive"),
    (lambda: layers.Permute((1, 3)), "consecutive"),
    (lambda: layers.Dot(axes=(1, 2, 3)), "two elements"),
    (lambda: layers.GroupNormalization(0), "groups"),
    (lambda: layers.GaussianNoise(1.5), "stddev"),
    (lambda: layers.GaussianDropout(-0.1), "rate"),
    (lambda: layers.AlphaDropout(2), "rate"),
    (lambda: layers.PReLU(shared_axes=[0]), "shared_axes"),
])
def test_bad_arguments_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_raise_value_error_naming_the_problem():
    with pytest.raises(ValueError, match="cropping"):
        layers.Cropping1D((2, 2))(np.ones((1, 4, 2), np.float32))
    with pytest.raises(ValueError, match="cropping"):
        layers.Cropping2D(((1, 1), (2, 1)))(np.ones((1, 4, 3, 2), np.float32))
    with pytest.raises(ValueError, match="multiple"):
        layers.GroupNormalization(3)(np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="more than"):
        layers.GroupNormalization(8)(np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="incompatible shapes"):
        layers.Maximum()([np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)])
    with pytest.raises(ValueError, match="batch sizes"):
        layers.Average()([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        layers.Subtract()([np.ones((2, 3), np.float32)] * 3)
    with pytest.raises(ValueError, match="list of"):
        layers.Minimum()(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="axis values 3"):
        layers.Dot(axes=1)([np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)])
    with pytest.raises(ValueError, match="incompatible"):
        layers.RepeatVector(2)(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="incompatible"):
        layers.SpatialDropout2D(0.5)(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="total size"):
        layers.Reshape((-1, 5))(keras.Input((12,)))  # caught with an unknown batch too
    prelu = layers.PReLU()
    prelu(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="incompatible"):
        prelu(np.ones((2, 4), np.float32))


def test_keras_defaults():
    assert layers.UpSampling2D().size == (2, 2)
    assert layers.UpSampling3D().size == (2, 2, 2)
    assert layers.ZeroPadding1D().padding == (1, 1)
    assert layers.ZeroPadding3D().padding == ((1, 1),) * 3
    assert layers.Cropping1D().cropping == (1, 1)
    assert layers.Cropping2D().cropping == ((0, 0), (0, 0))
    assert layers.Cropping3D().cropping == ((1, 1),) * 3
    assert layers.ELU().alpha == 1.0
    assert layers.GroupNormalization().groups == 32
    assert layers.PReLU().name == "p_re_lu"
    assert layers.PReLU().get_config()["alpha_initializer"]["class_name"] == "Zeros"
    # groups=-1 becomes one group per channel once built, as Keras's config shows
    layer = layers.GroupNormalization(-1)
    layer(np.ones((1, 6), np.float32))
    assert layer.get_config()["groups"] == 6
