"""Keras 3's convolution layers (plain, transposed, depthwise, separable; 1-D to 3-D)
against real Keras's outputs (fixtures/keras_conv.npz, written by
fixtures/make_keras_conv.py), plus gradients against central differences, configs,
`.keras` files, the functional API and tracing with unknown dimensions."""
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras

layers = keras.layers
_DATA = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "keras_conv.npz"))
_CASES = json.loads(str(_DATA["configs"]))
_WEIGHT_NAMES = {"SeparableConv1D": ["depthwise_kernel", "pointwise_kernel", "bias"],
                 "SeparableConv2D": ["depthwise_kernel", "pointwise_kernel", "bias"]}


def _weights(i: int) -> list:
    n = sum(1 for k in _DATA.files if k.startswith(f"{i}/w"))
    return [_DATA[f"{i}/w{j}"] for j in range(n)]


@pytest.mark.parametrize("i", range(len(_CASES)),
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(_CASES)])
def test_matches_keras(i):
    name, kwargs = _CASES[i]
    x, expected, weights = _DATA[f"{i}/x"], _DATA[f"{i}/y"], _weights(i)
    layer = getattr(layers, name)(**kwargs)
    layer.build(x.shape)  # then set_weights: Keras's arrays fit as they are
    names = [n for n in _WEIGHT_NAMES.get(name, ["kernel", "bias"])
             if n != "bias" or kwargs.get("use_bias", True)]
    assert [v.name.split("/")[-1].split(":")[0] for v in layer.weights] == names
    assert [tuple(v.shape) for v in layer.weights] == [w.shape for w in weights]
    layer.set_weights(weights)
    y = layer(x)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y.numpy(), expected, atol=1e-5, rtol=1e-5)
    # the same from a layer built by its first call
    again = getattr(layers, name)(**kwargs)
    again(x)
    again.set_weights(weights)
    np.testing.assert_allclose(again(x).numpy(), expected, atol=1e-5, rtol=1e-5)


def test_config_keys_match_keras_and_round_trip():
    keys = json.loads(str(_DATA["config_keys"]))
    assert len(keys) == 10
    for name, expected in keys.items():
        kwargs = {} if name.startswith("Depthwise") else {"filters": 2}
        layer = getattr(layers, name)(kernel_size=2, **kwargs)
        config = layer.get_config()
        assert sorted(config) == expected, name
        copy = type(layer).from_config(config)
        assert copy.get_config() == config
    conv = layers.Conv2DTranspose(3, (2, 3), strides=2, output_padding=(1, 0),
                                  data_format="channels_first", activation="relu",
                                  name="up")
    config = conv.get_config()
    assert (config["kernel_size"], config["strides"], config["output_padding"],
            config["data_format"], config["activation"]) == \
        ((2, 3), (2, 2), (1, 0), "channels_first", "relu")
    assert layers.Conv1D(4, 3, groups=2).get_config()["groups"] == 2


def test_aliases_are_keras_3s():
    assert layers.Convolution1D is layers.Conv1D and layers.Convolution2D is layers.Conv2D
    assert layers.Convolution3D is layers.Conv3D
    assert layers.Convolution2DTranspose is layers.Conv2DTranspose
    assert layers.Convolution1DTranspose is layers.Conv1DTranspose
    assert layers.Convolution3DTranspose is layers.Conv3DTranspose
    assert layers.SeparableConvolution1D is layers.SeparableConv1D
    assert layers.SeparableConvolution2D is layers.SeparableConv2D


def _loss_and_grads(layer, x, r):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x) * r)
    return loss, tape.gradient(loss, [x] + layer.trainable_weights)


# one layer per family, tiny and in float64, so central differences are exact to ~1e-8
@pytest.mark.parametrize("make, shape", [
    (lambda: layers.Conv3D(2, (2, 2, 1), strides=(2, 1, 1), padding="same", groups=2,
                           dtype="float64"), (1, 3, 2, 2, 2)),
    (lambda: layers.Conv1D(2, 2, padding="causal", dilation_rate=2, dtype="float64"),
     (2, 4, 2)),
    (lambda: layers.Conv3DTranspose(2, 2, strides=(2, 1, 1), padding="same",
                                    dtype="float64"), (1, 2, 2, 1, 2)),
    (lambda: layers.Conv1DTranspose(2, 3, strides=2, output_padding=1, dtype="float64"),
     (1, 3, 2)),
    (lambda: layers.DepthwiseConv2D(2, strides=2, depth_multiplier=2, padding="same",
                                    dtype="float64"), (1, 3, 3, 2)),
    (lambda: layers.SeparableConv1D(2, 2, depth_multiplier=2, dtype="float64"), (2, 4, 2)),
])
def test_gradients_match_central_differences(make, shape):
    rng = np.random.RandomState(3)
    layer = make()
    x = rng.randn(*shape)
    layer.build(shape)
    layer.set_weights([rng.randn(*w.shape) for w in layer.get_weights()])
    r = rng.randn(*layer(x).shape)
    _, grads = _loss_and_grads(layer, x, r)
    arrays = [x] + layer.get_weights()
    eps = 1e-6

    def loss_at(values):
        layer.set_weights(values[1:])
        return float(np.sum(layer(values[0]).numpy() * r))

    for k, (a, g) in enumerate(zip(arrays, grads)):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (loss_at(plus) - loss_at(minus)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), numeric, atol=1e-6, rtol=1e-6)
    layer.set_weights(arrays[1:])


def test_keras_file_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    model = keras.Sequential([
        keras.Input((8, 8, 3)),
        layers.Conv2D(4, 3, padding="same", groups=1, activation="relu"),
        layers.SeparableConv2D(6, 3, depth_multiplier=2, strides=2, padding="same"),
        layers.DepthwiseConv2D(2, data_format="channels_first"),
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=1),
    ])
    x = rng.randn(2, 8, 8, 3).astype(np.float32)
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "conv.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert [type(la).__name__ for la in loaded.layers] == \
        ["Conv2D", "SeparableConv2D", "DepthwiseConv2D", "Conv2DTranspose"]
    assert [w.shape for w in loaded.get_weights()] == [w.shape for w in model.get_weights()]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, atol=1e-6)
    # 1-D and 3-D layers too
    seq = keras.Sequential([keras.Input((9, 3)), layers.Conv1D(4, 3, padding="causal"),
                            layers.DepthwiseConv1D(2, depth_multiplier=2),
                            layers.SeparableConv1D(2, 2), layers.Conv1DTranspose(3, 2, 2)])
    vol = keras.Sequential([keras.Input((4, 4, 4, 2)), layers.Conv3D(4, 2, groups=2),
                            layers.Conv3DTranspose(2, 2, strides=2)])
    for m, shape in ((seq, (2, 9, 3)), (vol, (1, 4, 4, 4, 2))):
        x = rng.randn(*shape).astype(np.float32)
        m.save(path)
        np.testing.assert_allclose(keras.models.load_model(path).predict(x, verbose=0),
                                   m.predict(x, verbose=0), atol=1e-6)


def test_functional_model():
    inputs = tf.keras.Input((6, 6, 2))
    a = layers.Conv2D(4, 3, padding="same", name="a")(inputs)
    b = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2, name="b")(inputs)
    c = layers.Concatenate()([a, b])
    outputs = layers.Conv2DTranspose(3, 2, strides=2, name="up")(c)
    model = tf.keras.Model(inputs, outputs)
    assert outputs.shape == (None, 12, 12, 3)
    x = np.random.RandomState(1).randn(2, 6, 6, 2).astype(np.float32)
    direct = model.get_layer("up")(tf.concat([model.get_layer("a")(x),
                                              model.get_layer("b")(x)], -1))
    np.testing.assert_allclose(model(x).numpy(), direct.numpy(), atol=1e-6)
    steps = tf.keras.Input((None, 3))  # an unknown length stays unknown
    assert layers.Conv1D(2, 3, strides=2, padding="same")(steps).shape == (None, None, 2)
    # kernel 2: the functional API probes unknown dims with sizes 2 and 3 (keras/layer.py)
    assert layers.SeparableConv1D(2, 2)(steps).shape == (None, None, 2)


@pytest.mark.parametrize("layer, spec", [
    (layers.Conv1D(2, 3, padding="causal"), [None, None, 3]),
    (layers.Conv2D(3, 3, groups=3), [None, None, None, 3]),
    (layers.Conv3D(2, 2), [None, None, 4, 4, 3]),
    (layers.DepthwiseConv2D(3, padding="same"), [None, None, None, 3]),
    (layers.SeparableConv1D(2, 3, data_format="channels_first"), [None, 3, None]),
    (layers.Conv2DTranspose(2, 3, strides=2), [None, 4, 5, 3]),
])
def test_traced_with_unknown_dims(layer, spec):
    shape = [2] + [6 if d is None else d for d in spec[1:]]
    x = np.random.RandomState(2).randn(*shape).astype(np.float32)
    eager = layer(x)
    traced = tf.function(layer, input_signature=[tf.TensorSpec(spec, tf.float32)])
    np.testing.assert_allclose(traced(x).numpy(), eager.numpy(), atol=1e-6)


def test_constraints_regularizers_and_activity():
    def clip(w):
        return tf.clip_by_value(w, -0.1, 0.1)

    conv = layers.Conv2D(2, 2, kernel_constraint=clip, kernel_regularizer="l2",
                         activity_regularizer=keras.regularizers.L1(0.5))
    x = np.ones((4, 3, 3, 1), np.float32)
    y = conv(x)
    assert conv.kernel.constraint is clip and conv.bias.constraint is None
    kernel = conv.kernel.numpy()
    # the kernel's L2 penalty (0.01 sum w^2) and the activity's, per example
    losses = sorted(float(v) for v in conv.losses)
    expected = sorted([0.01 * float(np.sum(kernel ** 2)),
                       0.5 * float(np.abs(y.numpy()).sum()) / 4])
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    sep = layers.SeparableConv1D(2, 2, pointwise_constraint=clip)
    sep(np.ones((1, 4, 2), np.float32))
    assert sep.pointwise_kernel.constraint is clip
    assert sep.depthwise_kernel.constraint is None


@pytest.mark.parametrize("make, match", [
    (lambda: layers.Conv2D(2, 3, padding="causal"), "padding"),
    (lambda: layers.Conv1DTranspose(2, 3, padding="causal"), "padding"),
    (lambda: layers.Conv2D(3, 3, groups=2), "divisible"),
    (lambda: layers.Conv3D(2, 3, strides=2, dilation_rate=2), "dilation_rate"),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, output_padding=2), "output_padding"),
    (lambda: layers.Conv2D(0, 3), "filters"),
    (lambda: layers.DepthwiseConv2D(3, depth_multiplier=0), "depth_multiplier"),
    (lambda: layers.Conv2D(2, (3, 3, 3)), "kernel_size"),
    (lambda: layers.Conv1D(2, 3, data_format="NWC"), "data_format"),
])
def test_argument_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_input_errors():
    with pytest.raises(ValueError, match="divisible"):
        layers.Conv2D(4, 3, groups=2)(np.ones((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match="5-D"):
        layers.Conv3D(2, 2)(np.ones((1, 5, 5, 3), np.float32))
    conv = layers.SeparableConv2D(2, 2)
    conv(np.ones((1, 4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="3 channels"):
        conv(np.ones((1, 4, 4, 2), np.float32))


@pytest.mark.parametrize("key", ["2d", "3d"])
def test_loads_keras_files_written_by_keras(key):
    path = os.path.join(os.path.dirname(__file__), "fixtures", f"keras_conv_{key}.keras")
    model = keras.models.load_model(path)
    x, expected = _DATA[f"model_{key}/x"], _DATA[f"model_{key}/y"]
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, atol=1e-5, rtol=1e-5)


def test_nn_composites_agree_with_their_definitions():
    """tf.nn.conv3d / convolution (grouped) / the transposes, which the layers use,
    against what they are defined as: channel-order moves, splits into groups, adjoints."""
    rng = np.random.RandomState(5)
    x = rng.randn(2, 4, 5, 3, 4)
    w = rng.randn(2, 3, 2, 2, 6)  # two groups of two input channels
    y = tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME").numpy()
    halves = [tf.nn.conv3d(x[..., 2 * g:2 * g + 2], w[..., 3 * g:3 * g + 3],
                           [1, 2, 1, 1, 1], "SAME") for g in range(2)]
    np.testing.assert_allclose(y, np.concatenate(halves, -1), atol=1e-12)
    first = tf.nn.conv3d(x.transpose(0, 4, 1, 2, 3), w, [1, 1, 2, 1, 1], "SAME",
                         data_format="NCDHW").numpy()
    np.testing.assert_allclose(first.transpose(0, 2, 3, 4, 1), y, atol=1e-12)
    x1, w1 = rng.randn(2, 7, 6), rng.randn(3, 2, 6)  # three groups, two filters each
    y1 = tf.nn.convolution(x1, w1, padding="SAME").numpy()
    thirds = [tf.nn.conv1d(x1[..., 2 * g:2 * g + 2], w1[..., 2 * g:2 * g + 2], 1, "SAME")
              for g in range(3)]
    np.testing.assert_allclose(y1, np.concatenate(thirds, -1), atol=1e-12)
    # a transposed convolution is the adjoint: <conv(a), b> == <a, conv_transpose(b)>
    a, k = rng.randn(1, 5, 4, 6, 2), rng.randn(3, 2, 3, 2, 3)
    b = rng.randn(1, 3, 2, 3, 3)
    lhs = np.sum(tf.nn.conv3d(a, k, 2, "SAME").numpy() * b)
    rhs = np.sum(a * tf.nn.conv3d_transpose(b, k, a.shape, 2, "SAME").numpy())
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    a1, k1, b1 = rng.randn(2, 9, 3), rng.randn(3, 3, 2), rng.randn(2, 4, 2)
    lhs = np.sum(tf.nn.conv1d(a1, k1, 2, "VALID").numpy() * b1)
    rhs = np.sum(a1 * tf.nn.conv1d_transpose(b1, k1, a1.shape, 2, "VALID").numpy())
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple"):
        tf.nn.conv3d(x, rng.randn(2, 2, 2, 3, 4), 1, "VALID")
