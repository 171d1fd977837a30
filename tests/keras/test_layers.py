"""tf.keras layers: values against NumPy, Keras's naming and weight conventions, configs."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


@pytest.fixture(autouse=True)
def _fresh_names_and_seeds():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)  # the same initial weights and shuffles every run


def test_keras_and_its_submodules_are_modules():
    import importlib
    for name in ("tapeflow.keras", "tapeflow.keras.layers", "tapeflow.keras.models",
                 "tapeflow.keras.losses", "tapeflow.keras.metrics", "tapeflow.keras.optimizers",
                 "tapeflow.keras.callbacks", "tapeflow.keras.utils"):
        assert importlib.import_module(name).__name__ == name
    from tapeflow.keras.layers import Dense  # noqa: F401
    assert tf.keras is keras and tf.keras.layers.Dense is Dense


def test_automatic_names_count_per_class_and_name_the_variables():
    a, b, c = layers.Dense(2), layers.Dense(2), layers.MaxPooling2D()
    assert (a.name, b.name, c.name) == ("dense", "dense_1", "max_pooling2d")
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.GlobalAveragePooling2D().name == "global_average_pooling2d"
    assert layers.Dense(1, name="out").name == "out"
    b(tf.ones([1, 3]))
    assert [v.name for v in b.weights] == ["dense_1/kernel:0", "dense_1/bias:0"]


def test_dense_computes_x_w_plus_b_in_float32():
    layer = layers.Dense(3, activation="relu")
    x = np.random.RandomState(0).randn(4, 5)  # float64 in, float32 out (Keras's floatx)
    y = layer(x)
    w, b = layer.get_weights()
    assert y.dtype == tf.float32 and w.shape == (5, 3) and b.shape == (3,)
    np.testing.assert_allclose(y.numpy(), np.maximum(x.astype(np.float32) @ w + b, 0),
                               rtol=1e-5, atol=1e-6)
    assert layer.count_params() == 18


def test_layers_without_weights_match_numpy():
    x = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3) / 10
    np.testing.assert_allclose(layers.Flatten()(x).numpy(), x.reshape(2, -1))
    np.testing.assert_allclose(layers.Reshape((16, 3))(x).numpy(), x.reshape(2, 16, 3))
    pooled = x.reshape(2, 2, 2, 2, 2, 3)
    np.testing.assert_allclose(layers.MaxPooling2D()(x).numpy(), pooled.max(axis=(2, 4)))
    np.testing.assert_allclose(layers.AveragePooling2D()(x).numpy(),
                               pooled.mean(axis=(2, 4)), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(x).numpy(),
                               x.mean(axis=(1, 2)), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(x).numpy(), x.max(axis=(1, 2)))
    pixels = np.array([[0, 128, 255]], np.uint8)
    np.testing.assert_allclose(layers.Rescaling(1 / 255)(pixels).numpy(),
                               pixels / 255, rtol=1e-6)
    np.testing.assert_allclose(layers.Rescaling(2.0, offset=-1.0)([[1.0]]).numpy(), [[1.0]])


def test_activation_relu_softmax_layers():
    v = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(layers.Activation("tanh")(v).numpy(), np.tanh(v), rtol=1e-6)
    np.testing.assert_allclose(layers.ReLU()(v).numpy(), np.maximum(v, 0))
    np.testing.assert_allclose(layers.ReLU(max_value=1.0)(v).numpy(), np.clip(v, 0, 1))
    np.testing.assert_allclose(layers.ReLU(negative_slope=0.1, threshold=1.0)(v).numpy(),
                               np.where(v >= 1.0, v, 0.1 * (v - 1.0)), rtol=1e-6)
    s = layers.Softmax()(v[None]).numpy()
    np.testing.assert_allclose(s, np.exp(v)[None] / np.exp(v).sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="max_value"):
        layers.ReLU(max_value=-1.0)


def test_merging_layers():
    a = np.array([[1.0, 2.0]], np.float32)
    b = np.array([[3.0, 5.0]], np.float32)
    np.testing.assert_allclose(layers.Add()([a, b]).numpy(), a + b)
    np.testing.assert_allclose(layers.Multiply()([a, b]).numpy(), a * b)
    np.testing.assert_allclose(layers.Concatenate()([a, b]).numpy(), [[1, 2, 3, 5]])
    np.testing.assert_allclose(layers.Concatenate(axis=0)([a, b]).numpy(), [[1, 2], [3, 5]])
    with pytest.raises(ValueError, match="list of inputs"):
        layers.Add()(a)


def test_embedding_conv_and_normalization_layers():
    emb = layers.Embedding(5, 2)
    ids = np.array([[0, 4], [2, 2]])
    out = emb(ids)
    table = emb.get_weights()[0]
    np.testing.assert_allclose(out.numpy(), table[ids])
    conv = layers.Conv2D(2, 3, padding="same", activation="relu")
    assert conv(np.ones((1, 5, 5, 3))).shape == (1, 5, 5, 2)
    assert [w.shape for w in conv.get_weights()] == [(3, 3, 3, 2), (2,)]
    ln = layers.LayerNormalization()
    x = np.array([[1.0, 2.0, 6.0]], np.float32)
    np.testing.assert_allclose(ln(x).numpy(), (x - x.mean()) / np.sqrt(x.var() + 1e-3),
                               rtol=1e-5)
    bn = layers.BatchNormalization()
    bn(x, training=True)
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    np.testing.assert_allclose(bn.get_weights()[2], 0.01 * x[0], rtol=1e-5)  # moving mean


def test_dropout_only_in_training():
    drop = layers.Dropout(0.5, seed=3)
    x = np.ones((100,), np.float32)
    np.testing.assert_array_equal(drop(x).numpy(), x)
    kept = drop(x, training=True).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 20 < (kept == 0).sum() < 80


class Linear(layers.Layer):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True, name="w")
        self.b = self.add_weight("b", shape=(self.units,), initializer="zeros")

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_custom_layer_with_build_add_weight_and_config():
    layer = Linear(3)
    x = np.ones((2, 4), np.float32)
    y = layer(x)
    w, b = layer.get_weights()
    np.testing.assert_allclose(y.numpy(), x @ w + b, rtol=1e-6)
    assert [v.name for v in layer.weights] == ["linear/w:0", "linear/b:0"]
    clone = Linear.from_config(layer.get_config())
    assert clone.units == 3 and clone.name == "linear"
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), y.numpy())


def test_layer_of_layers_lists_weights_in_assignment_order_and_freezes():
    class Block(layers.Layer):
        def __init__(self):
            super().__init__()
            self.second = layers.Dense(2)
            self.first = layers.Dense(3)

        def call(self, x):
            return self.first(self.second(x))

    block = Block()
    block(np.ones((1, 4)))
    assert [v.shape for v in block.weights] == [(4, 2), (2,), (2, 3), (3,)]
    block.second.trainable = False
    assert [v.shape for v in block.trainable_weights] == [(2, 3), (3,)]
    assert len(block.non_trainable_weights) == 2
    block.trainable = False
    assert block.trainable_weights == []


def test_set_weights_checks_before_changing_anything():
    layer = layers.Dense(2)
    layer(np.ones((1, 3)))
    before = layer.get_weights()
    with pytest.raises(ValueError, match="expected a list of 2"):
        layer.set_weights([before[0]])
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        layer.set_weights([np.zeros((2, 2)), np.zeros(2)])
    np.testing.assert_array_equal(layer.get_weights()[0], before[0])
    with pytest.raises(ValueError, match="isn't built"):
        layers.Dense(2).count_params()


def test_builtin_configs_round_trip():
    dense = layers.Dense(4, activation="relu", use_bias=False, name="d")
    config = dense.get_config()
    assert (config["units"], config["activation"], config["use_bias"], config["name"]) == \
        (4, "relu", False, "d")
    assert config["kernel_initializer"]["class_name"] == "GlorotUniform"
    again = layers.Dense.from_config(config)
    assert (again.units, again.use_bias, again.name) == (4, False, "d")
    conv = layers.Conv2D.from_config(layers.Conv2D(3, (2, 2), strides=2).get_config())
    assert (conv.filters, conv.kernel_size, conv.strides) == (3, (2, 2), (2, 2))


def test_unknown_keyword_arguments_are_an_error():
    with pytest.raises(TypeError, match="unrecognized keyword arguments.*'units_'"):
        layers.Dense(2, units_=3)


def test_input_and_symbolic_shapes():
    x = keras.Input((28, 28))
    assert x.shape == (None, 28, 28) and x.dtype == tf.float32
    y = layers.Dense(5)(layers.Flatten()(x))
    assert y.shape == (None, 5) and y.node.layer.name == "dense"
    seq = keras.Input((None,), dtype="int32")
    e = layers.Embedding(10, 3)(seq)
    assert e.shape == (None, None, 3)
    fixed = keras.Input(batch_shape=(4, 2))
    assert layers.Dense(1)(fixed).shape == (4, 1)


def test_normalization_adapts_to_arrays_and_datasets():
    data = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 9.0], [2.0, 0.0, 6.0]], np.float32)
    norm = layers.Normalization()
    norm.adapt(data)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(norm.variance.numpy(), data.var(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(norm(data).numpy(), (data - data.mean(0)) / data.std(0),
                               rtol=1e-5, atol=1e-6)
    assert [v.name for v in norm.weights] == ["normalization/mean:0",
                                              "normalization/variance:0",
                                              "normalization/count:0"]
    assert norm.count_params() == 7 and norm.trainable_weights == []
    batched = layers.Normalization()
    batched.adapt(tf.data.Dataset.from_tensor_slices(data).batch(2))
    np.testing.assert_allclose(batched.mean.numpy(), norm.mean.numpy(), rtol=1e-6)
    everything = layers.Normalization(axis=None)
    everything.adapt(data)
    np.testing.assert_allclose(everything(data).numpy(), (data - data.mean()) / data.std(),
                               rtol=1e-5, atol=1e-6)
    fixed = layers.Normalization(mean=2.0, variance=4.0)
    np.testing.assert_allclose(fixed([[4.0]]).numpy(), [[1.0]])
    back = layers.Normalization(mean=2.0, variance=4.0, invert=True)
    np.testing.assert_allclose(back([[1.0]]).numpy(), [[4.0]])
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        layers.Normalization(mean=1.0)


# Conv1D, 1-D pooling and LeakyReLU: expected values computed once with real Keras 3
# (TensorFlow 2.21) on the same input and weights, rounded to 5 decimals
_X1D = np.cos(np.arange(14)).reshape(1, 7, 2).astype(np.float32)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(kernel_size=3, strides=2, padding="valid"),
     [[0.38185, -0.08668], [-0.22766, -0.28426], [0.24649, -0.20317]]),
    (dict(kernel_size=2, strides=2, padding="same"),
     [[1.18286, 0.46636], [-0.57938, -1.13542], [-0.09471, 0.3565], [0.92514, 0.63814]]),
    (dict(kernel_size=3, padding="causal", dilation_rate=2),
     [[0.79542, -0.32818], [0.22686, 0.61848], [-1.60878, -1.35699], [1.23137, -0.80955],
      [1.35844, 2.38203], [-2.57006, -1.46553], [1.06384, -1.72874]]),
    (dict(kernel_size=2, padding="same", dilation_rate=2, activation="relu"),
     [[0.69156, 0.0], [1.00671, 1.53088], [0.0, 0.0], [0.72263, 0.0], [1.4193, 1.52186],
      [0.0, 0.0], [0.10402, 0.0]]),
])
def test_conv1d_matches_keras(kwargs, expected):
    conv = layers.Conv1D(2, **kwargs)
    conv(_X1D)  # builds: kernel [kernel_size, in_channels, filters] as Keras's
    shape = (kwargs["kernel_size"], 2, 2)
    assert [w.shape for w in conv.get_weights()] == [shape, (2,)]
    conv.set_weights([np.sin(np.arange(np.prod(shape))).reshape(shape),
                      np.array([0.1, -0.2])])
    np.testing.assert_allclose(conv(_X1D).numpy(), [expected], atol=2e-5)
    assert conv.name == "conv1d"


def test_conv1d_gradient_causality_and_errors():
    conv = layers.Conv1D(3, 2, padding="causal", use_bias=False)
    x = tf.Variable(np.random.RandomState(1).randn(2, 5, 4).astype(np.float32))
    with tf.GradientTape() as tape:
        y = conv(x)[:, 2]  # output step 2 depends on input steps <= 2 only
        total = tf.reduce_sum(y)
    dx = tape.gradient(total, x).numpy()
    assert y.shape == (2, 3) and len(conv.weights) == 1
    assert np.abs(dx[:, :3]).sum() > 0 and np.all(dx[:, 3:] == 0)
    with pytest.raises(ValueError, match="Conv1D.*padding"):
        layers.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match="dilation_rate"):
        layers.Conv1D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="3-D"):
        layers.Conv1D(2, 3)(np.ones([2, 5, 5, 1], np.float32))
    with pytest.raises(ValueError, match="4 channels"):
        conv(np.ones([2, 5, 3], np.float32))
    assert conv(x).shape == (2, 5, 3)  # the failed call changed nothing


def test_pooling1d_matches_keras():
    np.testing.assert_allclose(layers.MaxPooling1D(3, strides=2, padding="same")(_X1D).numpy(),
                               [[[1.0, 0.5403], [0.96017, 0.7539], [0.96017, 0.7539],
                                 [0.84385, 0.90745]]], atol=2e-5)
    np.testing.assert_allclose(
        layers.AveragePooling1D(3, strides=2, padding="same")(_X1D).numpy(),
        [[[0.29193, -0.22485], [-0.03654, 0.01586], [-0.00813, -0.05093],
          [0.00239, 0.45594]]], atol=2e-5)  # "same": the mean of the steps inside only
    np.testing.assert_allclose(layers.AveragePooling1D(2)(_X1D).numpy(),
                               [[[0.29193, -0.22485], [0.15326, 0.51878],
                                 [-0.49229, -0.45335]]], atol=2e-5)
    np.testing.assert_allclose(layers.MaxPooling1D(2, strides=1)(_X1D).numpy(),
                               np.maximum(_X1D[:, :-1], _X1D[:, 1:]))
    assert layers.MaxPooling1D()(_X1D).shape == (1, 3, 2)  # pool_size 2 by default
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(_X1D).numpy(),
                               _X1D.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D(keepdims=True)(_X1D).numpy(),
                               _X1D.max(axis=1, keepdims=True))
    keras.backend.clear_session()
    names = [layers.MaxPooling1D().name, layers.GlobalMaxPooling1D().name,
             layers.GlobalAveragePooling1D().name, layers.LeakyReLU().name]
    assert names == ["max_pooling1d", "global_max_pooling1d", "global_average_pooling1d",
                     "leaky_re_lu"]
    with pytest.raises(TypeError):
        layers.AveragePooling1D()  # Keras 3 has no default pool_size here
    with pytest.raises(ValueError, match="3-D"):
        layers.GlobalAveragePooling1D()(np.ones([2, 3], np.float32))
    with pytest.raises(ValueError, match="padding"):
        layers.MaxPooling1D(padding="causal")


def test_leaky_relu_layer():
    v = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(layers.LeakyReLU()(v).numpy(), [-0.6, 0.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(layers.LeakyReLU(negative_slope=0.1)(v).numpy(),
                               [-0.2, 0.0, 3.0], rtol=1e-6)
    assert layers.LeakyReLU(alpha=0.5).negative_slope == 0.5  # Keras 2's name
    assert layers.LeakyReLU(0.1).get_config()["negative_slope"] == 0.1
    with pytest.raises(ValueError, match="negative_slope"):
        layers.LeakyReLU(-1.0)


def test_1d_layers_configs_round_trip():
    for layer in (layers.Conv1D(3, 2, strides=2, padding="same", activation="relu"),
                  layers.MaxPooling1D(3, 1, "same"), layers.AveragePooling1D(2),
                  layers.GlobalAveragePooling1D(keepdims=True), layers.GlobalMaxPooling1D(),
                  layers.LeakyReLU(0.2)):
        config = layer.get_config()
        again = type(layer).from_config(config)
        assert again.get_config() == config
    config = layers.Conv1D(3, 2).get_config()
    assert (config["kernel_size"], config["strides"], config["dilation_rate"]) == \
        ((2,), (1,), (1,))
