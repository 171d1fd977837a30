"""The functional API's symbolic calls (API §11.1): output shapes from tracing `call`
once into a scratch graph, KerasTensors anywhere in a call's arguments, Sequential's first
call inside tf.function, subclasses built functionally, input/output shapes."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.shape import is_symbolic


class Quarter(tf.keras.layers.Layer):
    """Keeps the first quarter of the steps; counts its calls and what they saw."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, x):
        self.seen.append(is_symbolic(x))
        return x[:, :tf.shape(x)[1] // 4]


def test_output_shape_of_a_dynamic_slice_is_unknown_and_call_runs_once_symbolically():
    x = tf.keras.Input((8, 4))
    layer = Quarter()
    y = layer(x)
    assert y.shape == (None, None, 4)
    assert layer.seen == [True]  # traced once, never run on placeholder values
    model = tf.keras.Model(x, tf.keras.layers.Dense(3)(y))
    out = model(np.arange(2 * 8 * 4, dtype="float32").reshape(2, 8, 4))
    assert out.shape == (2, 2, 3)
    out = model(np.ones((1, 12, 4), "float32"))
    assert out.shape == (1, 3, 3)


def test_unknown_and_known_dims_follow_the_ops():
    x = tf.keras.Input((None, 6))
    y = tf.keras.layers.Dense(5)(x)
    assert y.shape == (None, None, 5)
    z = tf.keras.layers.Reshape((3, 2))(tf.keras.Input((6,)))
    assert z.shape == (None, 3, 2)


class Pair(tf.keras.layers.Layer):
    """A layer with a second tensor argument and a tensor keyword argument."""

    def call(self, a, b, scale=None):
        out = a + 2.0 * b
        return out if scale is None else out * scale


def test_keras_tensors_in_other_arguments_are_graph_inputs():
    a, b, s = tf.keras.Input((3,)), tf.keras.Input((3,)), tf.keras.Input((1,))
    y = Pair()(a, b, scale=s)
    assert y.shape == (None, 3)
    model = tf.keras.Model([a, b, s], y)
    av, bv, sv = (np.array([[1.0, 2.0, 3.0]], "float32"), np.array([[1.0, 0.0, -1.0]], "float32"),
                  np.array([[10.0]], "float32"))
    np.testing.assert_allclose(model([av, bv, sv]).numpy(), (av + 2 * bv) * sv)
    assert len(model.layers) == 4  # three inputs and the layer


def test_symbolic_call_leaves_no_state_behind():
    class Lossy(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x
    bn = tf.keras.layers.BatchNormalization()
    x = tf.keras.Input((2,))
    y = Lossy()(bn(x, training=True))
    assert bn.moving_mean.numpy().tolist() == [0.0, 0.0]
    model = tf.keras.Model(x, y)
    assert model.losses == [] or all(not is_symbolic(t) for t in model.losses)
    model(np.array([[1.0, 2.0]], "float32"))
    assert len(model.losses) == 1
    assert float(model.losses[0]) == pytest.approx(0.0, abs=1e-2)  # normalized: sums to ~0


def test_sequential_first_called_inside_a_function_builds_from_the_spec():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])

    @tf.function
    def f(x):
        return model(x)
    out = f(tf.ones([3, 4]))
    assert out.shape == (3, 2)
    assert model.input_shape == (None, 4) and model.output_shape == (None, 2)
    np.testing.assert_allclose(out.numpy(), model(tf.ones([3, 4])).numpy(), rtol=1e-6)


def test_input_and_output_shapes_as_keras():
    a, b = tf.keras.Input((3,)), tf.keras.Input((5,))
    model = tf.keras.Model([a, b], [tf.keras.layers.Dense(1)(a), tf.keras.layers.Dense(2)(b)])
    assert model.input_shape == [(None, 3), (None, 5)]
    assert model.output_shape == [(None, 1), (None, 2)]
    with pytest.raises(AttributeError, match="no defined output shape"):
        tf.keras.Sequential([tf.keras.layers.Dense(2)]).output_shape


class CustomFit(tf.keras.Model):
    """Keras's "customizing fit" guide: train_step/test_step over a functional graph."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.steps_seen = getattr(self, "steps_seen", 0) + 1
        return {"my_loss": loss}

    def test_step(self, data):
        x, y = data
        return {"my_loss": tf.reduce_mean(tf.abs(self(x) - y))}


def test_a_subclass_built_functionally_uses_its_own_steps():
    x = tf.keras.Input((2,))
    model = CustomFit(x, tf.keras.layers.Dense(1, kernel_initializer="zeros")(x))
    assert isinstance(model, CustomFit) and isinstance(model, tf.keras.Model)
    assert model.output_shape == (None, 1)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), run_eagerly=True)  # counts calls
    data = np.array([[1.0, 0.0], [0.0, 1.0]], "float32"), np.array([[1.0], [2.0]], "float32")
    history = model.fit(*data, epochs=3, batch_size=2, verbose=0)
    assert model.steps_seen == 3
    assert history.history["my_loss"][0] == pytest.approx(2.5)  # mean((0-1)^2, (0-2)^2)
    assert history.history["my_loss"][-1] < 2.5
    result = model.evaluate(*data, verbose=0, return_dict=True)
    pred = model.predict(data[0], verbose=0)
    assert result["my_loss"] == pytest.approx(float(np.mean(np.abs(pred - data[1]))), rel=1e-5)


def test_causal_attention_with_an_unknown_sequence_length():
    # the causal mask is built by ops when the lengths are only known at run time
    mha = tf.keras.layers.MultiHeadAttention(2, 4)
    x = tf.keras.Input((None, 8))
    model = tf.keras.Model(x, mha(x, x, use_causal_mask=True))
    assert model.output_shape == (None, None, 8)
    xs = np.random.RandomState(0).rand(2, 5, 8).astype(np.float32)
    out = model(xs).numpy()
    eager = mha(tf.constant(xs), tf.constant(xs), use_causal_mask=True).numpy()
    np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-6)
    later = xs.copy()
    later[:, 3:] += 1.0  # later steps change: the first three outputs cannot see them
    changed = model(later).numpy()
    np.testing.assert_array_equal(changed[:, :3], out[:, :3])
    assert np.abs(changed[:, 3:] - out[:, 3:]).max() > 1e-3
