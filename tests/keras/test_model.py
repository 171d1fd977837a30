"""tf.keras models: Sequential, the functional API and subclassing; structure, weights,
summary."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


@pytest.fixture(autouse=True)
def _fresh_names_and_seeds():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)  # the same initial weights and shuffles every run


def test_sequential_from_list_and_add_build_with_input():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="relu")])
    model.add(layers.Dense(2))
    assert model.built and [layer.name for layer in model.layers] == ["dense", "dense_1"]
    assert model.count_params() == 3 * 4 + 4 + 4 * 2 + 2
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    w1, b1, w2, b2 = model.get_weights()
    np.testing.assert_allclose(model(x).numpy(), np.maximum(x @ w1 + b1, 0) @ w2 + b2,
                               rtol=1e-5, atol=1e-6)
    assert model.get_layer("dense_1") is model.layers[1]
    assert model.get_layer(index=0) is model.layers[0]
    with pytest.raises(ValueError, match="No such layer: nope"):
        model.get_layer("nope")


def test_sequential_pop_and_input_shape_argument():
    model = keras.Sequential()
    model.add(layers.Dense(4, input_shape=(6,)))
    model.add(layers.Dense(1))
    assert model.built and model.outputs[0].shape == (None, 1)
    last = model.pop()
    assert last.name == "dense_1" and len(model.layers) == 1


def test_unbuilt_sequential_builds_on_first_call_and_summary_shows_it_unbuilt(capsys):
    model = keras.Sequential([layers.Dense(2)])
    model.summary()  # as Keras 3 (TF 2.21): the layer's shape and count are unknown yet
    out = capsys.readouterr().out
    assert "│ dense (Dense)" in out and "│ ?" in out and "0 (unbuilt) │" in out
    assert " Total params: 0 (0.00 B)" in out
    model(np.ones((3, 5)))
    assert model.built and model.count_params() == 12


def test_summary_layout(capsys):
    model = keras.Sequential([keras.Input((28, 28)), layers.Flatten(),
                              layers.Dense(128, activation="relu"), layers.Dropout(0.2),
                              layers.Dense(10)])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "sequential"'
    assert lines[1].startswith("┏") and lines[-4].startswith("└")
    assert re.search(r"┃ Layer \(type\) +┃ Output Shape +┃ +Param # ┃", text)
    assert re.search(r"│ dense \(Dense\) +│ \(None, 128\) +│ +100,480 │", text)
    assert re.search(r"│ dense_1 \(Dense\) +│ \(None, 10\) +│ +1,290 │", text)
    assert re.search(r"│ flatten \(Flatten\) +│ \(None, 784\) +│ +0 │", text)
    assert lines[-3:] == [" Total params: 101,770 (397.54 KB)",
                          " Trainable params: 101,770 (397.54 KB)",
                          " Non-trainable params: 0 (0.00 B)"]
    widths = {len(line) for line in lines[1:-3]}
    assert len(widths) == 1  # every row of the table lines up
    model.summary()
    assert capsys.readouterr().out.splitlines()[0] == 'Model: "sequential"'


def test_summary_counts_non_trainable_and_wraps_long_names():
    model = keras.Sequential([keras.Input((3,)), layers.BatchNormalization()])
    lines = []
    model.summary(line_length=76, print_fn=lines.append)
    assert any("│ batch_normalization" in line for line in lines)
    assert any("(BatchNormalization)" in line and "batch_normalization" not in line
               for line in lines)
    assert lines[-3:] == [" Total params: 12 (48.00 B)", " Trainable params: 6 (24.00 B)",
                          " Non-trainable params: 6 (24.00 B)"]


def test_functional_multiple_inputs_outputs_and_shared_layer():
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = layers.Dense(3, name="shared")
    ha, hb = shared(a), shared(b)  # the same weights for both inputs
    merged = layers.Concatenate()([ha, hb])
    out1 = layers.Dense(1, name="out1")(merged)
    out2 = layers.Add(name="out2")([ha, hb])
    model = keras.Model(inputs=[a, b], outputs=[out1, out2])
    assert isinstance(model, keras.Model) and model.name == "functional"
    assert [layer.name for layer in model.layers] == ["a", "shared", "b", "concatenate",
                                                      "out1", "out2"]
    assert model.output_names == ["out1", "out2"]
    xa, xb = np.ones((2, 4), np.float32), np.arange(8, dtype=np.float32).reshape(2, 4)
    y1, y2 = model([xa, xb])
    w, bias = shared.get_weights()
    wo, bo = model.get_layer("out1").get_weights()
    ha_np, hb_np = xa @ w + bias, xb @ w + bias
    np.testing.assert_allclose(y2.numpy(), ha_np + hb_np, rtol=1e-5)
    np.testing.assert_allclose(y1.numpy(), np.concatenate([ha_np, hb_np], 1) @ wo + bo,
                               rtol=1e-5)
    assert model.count_params() == 15 + 7
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Connected to" in text and "shared[0][0]" in text and "shared[1][0]" in text
    assert re.search(r"│ a \(InputLayer\) +│ \(None, 4\) +│ +0 │ - ", text)


def test_functional_dict_inputs_and_disconnected_graph():
    x = keras.Input((2,), name="x")
    model = keras.Model({"x": x}, layers.Dense(1)(x))
    assert model({"x": np.ones((3, 2))}).shape == (3, 1)
    other = keras.Input((2,))
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(x, layers.Add()([x, other]))
    with pytest.raises(ValueError, match="expects 1 input"):
        keras.Model(x, layers.Dense(1)(x))([np.ones((1, 2)), np.ones((1, 2))])


def test_nested_models_are_layers():
    inner = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    x = keras.Input((3,))
    outer = keras.Model(x, layers.Dense(1)(inner(x)))
    assert len(outer.weights) == 4 and outer.count_params() == 8 + 3
    np.testing.assert_allclose(outer(np.ones((1, 3))).numpy(),
                               outer.layers[2](inner(np.ones((1, 3)))).numpy())


class TwoLayer(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(8, activation="relu")
        self.drop = layers.Dropout(0.5)
        self.out = layers.Dense(2)
        self.seen_training = []

    def call(self, inputs, training=None):
        self.seen_training.append(training)
        return self.out(self.drop(self.hidden(inputs), training=training))


def test_subclassed_model_layers_weights_and_training_flag():
    model = TwoLayer()
    x = np.ones((4, 3), np.float32)
    y = model(x)
    assert y.shape == (4, 2) and model.name == "two_layer"
    assert [layer.name for layer in model.layers] == ["dense", "dropout", "dense_1"]
    assert [w.shape for w in model.weights] == [(3, 8), (8,), (8, 2), (2,)]
    np.testing.assert_allclose(model(x, training=False).numpy(), y.numpy())
    dropped = model(np.ones((64, 3), np.float32), training=True).numpy()
    assert model.seen_training[-1] is True
    assert not np.allclose(dropped, dropped[0])  # dropout acted in training
    weights = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in weights])
    assert np.all(model(x).numpy() == 0)


def test_building_a_graph_changes_no_state_and_keeps_call_arguments():
    x = keras.Input((2,))
    bn = layers.BatchNormalization()
    y = bn(x, training=True)  # recorded: the model always calls it in training mode
    assert bn.get_weights()[2].tolist() == [0.0, 0.0]  # moving mean untouched by building
    model = keras.Model(x, y)
    model(np.array([[1.0, 2.0], [3.0, 6.0]]), training=False)  # the graph's True wins
    np.testing.assert_allclose(bn.get_weights()[2], [0.02, 0.04], rtol=1e-5)


def test_nested_python_lists_are_one_input():
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    w, b = model.get_weights()
    np.testing.assert_allclose(model([[1.0, 2.0]]).numpy(), np.array([[1.0, 2.0]]) @ w + b,
                               rtol=1e-6)
    assert layers.Flatten()([[1.0, 2.0], [3.0, 4.0]]).shape == (2, 2)
    np.testing.assert_allclose(layers.Add()([np.ones(2), [1.0, 2.0]]).numpy(), [2.0, 3.0])


def test_an_input_one_rank_off_is_adjusted_as_keras_does():
    """A (batch,) column for an Input of shape (1,) gets its trailing axis (the regression
    tutorial's `predict(horsepower[:10])`), an extra trailing 1 is dropped; other ranks
    are refused."""
    model = keras.Sequential([keras.Input((1,)), layers.Dense(1)])
    column = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(model.predict(column, verbose=0),
                               model.predict(column[:, None], verbose=0))
    assert model.predict(column, verbose=0).shape == (4, 1)
    np.testing.assert_allclose(model(column[:, None, None]).numpy(),
                               model(column[:, None]).numpy())
    with pytest.raises(ValueError, match=r"invalid input shape \[4, 2, 3\] for input"):
        model(np.ones((4, 2, 3), np.float32))
    a, b = keras.Input((3,)), keras.Input((1,))
    functional = keras.Model([a, b], layers.Concatenate()([a, b]))
    out = functional([np.ones((2, 3), np.float32), np.array([5.0, 6.0], np.float32)])
    np.testing.assert_array_equal(out.numpy()[:, 3], [5.0, 6.0])
