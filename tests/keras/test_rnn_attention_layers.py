"""RNN over any cell (built-in, stacked, a user's), StackedRNNCells, TimeDistributed,
Bidirectional over RNN(cell), Attention and AdditiveAttention: outputs equal real Keras's
with the same weights (fixtures from fixtures/make_keras_rnn_cells.py, the cases in
fixtures/rnn_cell_cases.py), gradients equal central differences, configs and .keras
files round-trip, and a .keras file written by Keras loads."""
import os
import sys

import numpy as np
import pytest

import tapeflow as tf

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from rnn_cell_cases import build_cases  # noqa: E402

L = tf.keras.layers
FIXTURE = np.load(os.path.join(HERE, "fixtures", "keras_rnn_cells.npz"))


class _Ops:
    matmul = staticmethod(tf.matmul)
    tanh = staticmethod(tf.tanh)

    @staticmethod
    def concat(values):
        return tf.concat(values, -1)


CASES, CUSTOM = build_cases(L, L.Layer, _Ops)


def _stored(prefix: str, kind: str) -> list:
    found = []
    while f"{prefix}/{kind}{len(found)}" in FIXTURE:
        found.append(FIXTURE[f"{prefix}/{kind}{len(found)}"])
    return found


def _flat(result) -> list:
    if isinstance(result, (list, tuple)):
        return [a for r in result for a in _flat(r)]
    return [result.numpy()]


def _call_args(name: str):
    _, inputs, kwargs = CASES[name]
    x = FIXTURE[inputs] if isinstance(inputs, str) else [FIXTURE[n] for n in inputs]
    call = dict(kwargs)
    if "mask" in call:
        given = call["mask"]
        call["mask"] = FIXTURE[given] if isinstance(given, str) else \
            [None if g is None else FIXTURE[g] for g in given]
    if "initial_state" in call:
        call["initial_state"] = _stored(name, "s")
    return x, call


@pytest.mark.parametrize("name", sorted(CASES))
def test_layers_match_keras(name):
    layer = CASES[name][0]()
    x, call = _call_args(name)
    layer(x, **call)
    layer.set_weights(_stored(name, "w"))  # fails on any count or shape mismatch
    results = _flat(layer(x, **call))
    expected = _stored(name, "out")
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=2e-5)


def test_weight_names_shapes_and_order_are_keras():
    x = tf.ones([2, 5, 3])
    rnn = L.RNN(L.StackedRNNCells([L.LSTMCell(4, name="lstm_cell"),
                                   L.GRUCell(3, name="gru_cell")], name="stacked_rnn_cells"),
                name="rnn")
    rnn(x)
    # Keras 3's paths: rnn/stacked_rnn_cells/lstm_cell/kernel, ...
    assert [(w.name, tuple(w.shape)) for w in rnn.weights] == [
        ("rnn/stacked_rnn_cells/lstm_cell/kernel:0", (3, 16)),
        ("rnn/stacked_rnn_cells/lstm_cell/recurrent_kernel:0", (4, 16)),
        ("rnn/stacked_rnn_cells/lstm_cell/bias:0", (16,)),
        ("rnn/stacked_rnn_cells/gru_cell/kernel:0", (4, 9)),
        ("rnn/stacked_rnn_cells/gru_cell/recurrent_kernel:0", (3, 9)),
        ("rnn/stacked_rnn_cells/gru_cell/bias:0", (2, 9))]
    td = L.TimeDistributed(L.Dense(2, name="dense"), name="time_distributed")
    td(x)
    assert [w.name for w in td.weights] == ["time_distributed/dense/kernel:0",
                                            "time_distributed/dense/bias:0"]
    att = L.Attention(use_scale=True, score_mode="concat", name="attention")
    att([x, x])
    assert [(w.name, tuple(w.shape)) for w in att.weights] == [
        ("attention/scale:0", ()), ("attention/concat_score_weight:0", ())]
    assert L.Attention()([x, x]).shape == (2, 5, 3)  # no weights at all by default
    add = L.AdditiveAttention(name="additive_attention")
    add([x, x])
    assert [(w.name, tuple(w.shape)) for w in add.weights] == [
        ("additive_attention/scale:0", (3,))]
    assert L.AdditiveAttention(use_scale=False)([x, x]).shape == (2, 5, 3)


def test_configs_are_keras_and_round_trip():
    # keys as Keras 3's get_config (checked in /tmp/tfv with keras 3.15)
    rnn = L.RNN(L.LSTMCell(4), return_sequences=True, go_backwards=True)
    config = rnn.get_config()
    assert {"return_sequences", "return_state", "go_backwards", "stateful", "unroll",
            "zero_output_for_mask", "cell"} <= set(config)
    assert config["cell"]["class_name"] == "LSTMCell"
    again = L.RNN.from_config(config)
    assert isinstance(again.cell, L.LSTMCell) and again.cell.units == 4 and \
        again.go_backwards and again.return_sequences
    stacked = L.RNN.from_config(L.RNN([L.GRUCell(2), L.SimpleRNNCell(3)]).get_config())
    assert [type(c).__name__ for c in stacked.cell.cells] == ["GRUCell", "SimpleRNNCell"]
    assert stacked.state_size == [2, 3]
    td = L.TimeDistributed.from_config(L.TimeDistributed(L.Dense(5)).get_config())
    assert isinstance(td.layer, L.Dense) and td.layer.units == 5
    att = L.Attention.from_config(L.Attention(use_scale=True, score_mode="concat",
                                              dropout=0.25).get_config())
    assert (att.use_scale, att.score_mode, att.dropout) == (True, "concat", 0.25)
    add = L.AdditiveAttention(use_scale=False, dropout=0.5).get_config()
    assert "score_mode" not in add and add["use_scale"] is False
    assert set(add) >= {"use_scale", "dropout", "seed"}
    bi = L.Bidirectional(L.RNN(L.GRUCell(2), return_sequences=True), merge_mode="mul")
    config = bi.get_config()
    assert config["layer"]["class_name"] == "RNN" and "backward_layer" not in config
    bi2 = L.Bidirectional.from_config(config)
    assert bi2.merge_mode == "mul" and bi2.backward_layer.go_backwards and \
        isinstance(bi2.forward_layer.cell, L.GRUCell)
    # a backward layer given explicitly is kept in the config, and comes back
    bi = L.Bidirectional(L.SimpleRNN(2), backward_layer=L.GRU(3, go_backwards=True),
                         merge_mode="concat")
    bi3 = L.Bidirectional.from_config(bi.get_config())
    assert isinstance(bi3.backward_layer, L.GRU) and bi3.backward_layer.units == 3
    assert bi3(tf.ones([1, 4, 2])).shape == (1, 5)


def test_initial_state_and_get_initial_state():
    x = tf.constant(FIXTURE["x"])
    rnn = L.RNN(L.LSTMCell(3), return_state=True)
    assert [tuple(s.shape) for s in rnn.get_initial_state(3)] == [(3, 3), (3, 3)]
    out, h, c = rnn(x)
    zeros = rnn.get_initial_state(3)
    np.testing.assert_allclose(rnn(x, initial_state=zeros)[0].numpy(), out.numpy(),
                               atol=1e-6)
    with pytest.raises(ValueError, match="initial state"):
        rnn(x, initial_state=[zeros[0]])
    # a custom cell's own get_initial_state is what the sequence starts from
    MinimalRNNCell = CUSTOM["MinimalRNNCell"]

    class OnesStart(MinimalRNNCell):
        def get_initial_state(self, batch_size=None):
            return [tf.ones([batch_size, self.units])]
    cell = OnesStart(2)
    custom = L.RNN(cell, return_state=True)
    _, state = custom(x)
    ones = [np.ones((3, 2), np.float32)]
    np.testing.assert_allclose(custom(x, initial_state=ones)[1].numpy(), state.numpy(),
                               atol=1e-6)
    # stacked: states nested per cell; a flat list of the same states is accepted too
    stacked = L.RNN([L.LSTMCell(2), L.GRUCell(3)], return_state=True)
    out, (h1, c1), (h2,) = stacked(x)
    nested = stacked(x, initial_state=[[h1, c1], [h2]])[0].numpy()
    flat = stacked(x, initial_state=[h1, c1, h2])[0].numpy()
    np.testing.assert_allclose(nested, flat, atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="state_size"):
        L.RNN(L.Dense(2))
    with pytest.raises(ValueError, match="call"):
        L.RNN(object())
    with pytest.raises(ValueError, match="Layer"):
        L.TimeDistributed("dense")
    with pytest.raises(ValueError, match="3 dimensions"):
        L.TimeDistributed(L.Dense(2))(tf.ones([2, 3]))
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="general")
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention()(tf.ones([1, 2, 3]))
    with pytest.raises(ValueError, match="length 2 or 3"):
        L.Attention()([tf.ones([1, 2, 3])])
    with pytest.raises(ValueError, match="mask must be a list"):
        L.Attention()([tf.ones([1, 2, 3]), tf.ones([1, 2, 3])], mask=tf.ones([1, 2], bool))
    with pytest.raises(ValueError, match="go_backwards"):
        L.Bidirectional(L.RNN(L.GRUCell(2)), backward_layer=L.RNN(L.GRUCell(2)))
    with pytest.raises(ValueError, match="return_sequences"):
        L.Bidirectional(L.RNN(L.GRUCell(2)),
                        backward_layer=L.RNN(L.GRUCell(2), go_backwards=True,
                                             return_sequences=True))


def test_masks_propagate_through_time_distributed_and_attention():
    tokens = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    emb = L.Embedding(5, 3, mask_zero=True)
    seq = emb(tokens)
    td = L.TimeDistributed(L.Dense(2))(seq)
    want = tokens != 0
    np.testing.assert_array_equal(td._keras_mask.numpy(), want)
    # the masked value steps get no attention; masked query steps output zeros
    out, scores = L.Attention()([td, td], return_attention_scores=True)
    np.testing.assert_array_equal(out._keras_mask.numpy(), want)
    assert np.all(scores.numpy()[np.broadcast_to(~want[:, None, :], scores.shape)] < 1e-6)
    assert np.all(out.numpy()[~want] == 0)
    # an RNN after TimeDistributed skips the padded steps: the same as the unpadded run
    rnn = L.RNN(L.SimpleRNNCell(2))
    last = rnn(td).numpy()
    np.testing.assert_allclose(last[0], rnn(td[:1, :2]).numpy()[0], atol=1e-6)
    # a per-step mask reaches a wrapped layer that takes one: here an RNN over [time2]
    inner = L.TimeDistributed(L.RNN(L.SimpleRNNCell(2)))
    nested = tf.constant(np.random.default_rng(0).normal(size=(2, 3, 4, 3)).astype("f4"))
    step_mask = np.ones((2, 3, 4), bool)
    step_mask[:, :, 2:] = False
    masked = inner(nested, mask=step_mask).numpy()
    np.testing.assert_allclose(masked, inner(nested[:, :, :2]).numpy(), atol=1e-6)


def test_traced_with_unknown_batch():
    x = FIXTURE["x"]
    for layer in (L.RNN(L.GRUCell(3), return_sequences=True),
                  L.RNN([L.LSTMCell(2), CUSTOM["PairCell"](2)]),
                  L.TimeDistributed(L.Dense(2))):
        eager = layer(x).numpy()
        traced = tf.function(layer, input_signature=[tf.TensorSpec([None, 6, 4])])
        np.testing.assert_allclose(traced(tf.constant(x)).numpy(), eager, atol=1e-6)
    td = L.TimeDistributed(L.Dense(2))
    td(x)
    traced = tf.function(td, input_signature=[tf.TensorSpec([None, None, 4])])
    np.testing.assert_allclose(traced(tf.constant(x)).numpy(), td(x).numpy(), atol=1e-6)
    att = L.AdditiveAttention()
    q, v = FIXTURE["q"], FIXTURE["v"]
    eager = att([q, v], use_causal_mask=True).numpy()
    traced = tf.function(lambda a, b: att([a, b], use_causal_mask=True),
                         input_signature=[tf.TensorSpec([None, None, 4])] * 2)
    np.testing.assert_allclose(traced(tf.constant(q), tf.constant(v)).numpy(), eager,
                               atol=1e-6)


def _central_differences(f, variables, eps=1e-6) -> list:
    grads = []
    for v in variables:
        base = np.array(v.numpy())
        g = np.zeros_like(base)
        for index in np.ndindex(base.shape):
            for sign in (1, -1):
                bumped = base.copy()
                bumped[index] += sign * eps
                v.assign(bumped)
                g[index] += sign * f().numpy() / (2 * eps)
        v.assign(base)
        grads.append(g)
    return grads


def test_gradients_match_central_differences():
    rng = np.random.default_rng(4)
    x = tf.constant(rng.normal(size=(2, 4, 3)))
    mask = np.array([[True, True, False, True], [False, True, True, True]])
    h0 = tf.Variable(rng.normal(size=(2, 2)))
    rnn = L.RNN([L.SimpleRNNCell(2, dtype="float64"), L.GRUCell(2, dtype="float64")],
                return_sequences=True, go_backwards=True, dtype="float64")
    rnn(x, mask=mask, initial_state=[[h0], [h0]])
    for w in rnn.weights:  # nonzero biases so every weight matters
        w.assign(rng.normal(scale=0.5, size=w.shape))

    def loss():
        return tf.reduce_sum(tf.sin(rnn(x, mask=mask, initial_state=[[h0], [h0 * 2.0]])))
    variables = [*rnn.trainable_weights, h0]
    with tf.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, variables)
    for got, want in zip(grads, _central_differences(loss, variables)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)


def test_attention_gradients_match_central_differences():
    rng = np.random.default_rng(5)
    q = tf.constant(rng.normal(size=(1, 2, 3)))
    v = tf.constant(rng.normal(size=(1, 3, 3)))
    for att in (L.Attention(use_scale=True, score_mode="concat", dtype="float64"),
                L.AdditiveAttention(dtype="float64")):
        att([q, v])
        for w in att.weights:
            w.assign(rng.normal(size=w.shape))

        def loss():
            return tf.reduce_sum(att([q, v], mask=[None, [[True, False, True]]]) ** 2)
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, att.trainable_weights)
        for got, want in zip(grads, _central_differences(loss, att.trainable_weights)):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)


def _model():
    inputs = tf.keras.Input((6, 4))
    seq = L.RNN(L.LSTMCell(4), return_sequences=True)(inputs)
    projected = L.TimeDistributed(L.Dense(4))(seq)
    mixed = L.Attention(use_scale=True)([projected, seq])
    return tf.keras.Model(inputs, L.TimeDistributed(L.Dense(1))(mixed))


def test_keras_file_round_trip(tmp_path):
    model = _model()
    x = FIXTURE["model/x"]
    # the same architecture as Keras's: the weights of Keras's file fit, in Keras's order
    keras_file = os.path.join(HERE, "fixtures", "keras_rnn_cells_model.keras")
    model.set_weights(tf.keras.models.load_model(keras_file).get_weights())
    np.testing.assert_allclose(model.predict(x, verbose=0), FIXTURE["model/y"], atol=2e-5)
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert [type(layer).__name__ for layer in loaded.layers] == [
        "InputLayer", "RNN", "TimeDistributed", "Attention", "TimeDistributed"]
    assert isinstance(loaded.layers[1].cell, L.LSTMCell)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), FIXTURE["model/y"], atol=2e-5)


def test_keras_written_file_loads():
    loaded = tf.keras.models.load_model(os.path.join(HERE, "fixtures",
                                                     "keras_rnn_cells_model.keras"))
    np.testing.assert_allclose(loaded.predict(FIXTURE["model/x"], verbose=0),
                               FIXTURE["model/y"], atol=2e-5)


def test_functional_initial_state_and_bidirectional_cell_model():
    inputs = tf.keras.Input((6, 4))
    encoded, h, c = L.RNN(L.LSTMCell(3), return_state=True)(inputs)
    decoded = L.RNN(L.LSTMCell(3), return_sequences=True)(inputs, initial_state=[h, c])
    both = L.Bidirectional(L.RNN(L.GRUCell(2), return_sequences=True))(decoded)
    model = tf.keras.Model(inputs, L.TimeDistributed(L.Dense(1))(both))
    x = FIXTURE["x"]
    y = model.predict(x, verbose=0)
    assert y.shape == (3, 6, 1)
    # the decoder starts from the encoder's states, as the same layers called eagerly
    enc, dec, bi, td = model.layers[1:]
    _, h_val, c_val = enc(x)
    want = td(bi(dec(x, initial_state=[h_val, c_val]))).numpy()
    np.testing.assert_allclose(y, want, atol=1e-6)
    assert not np.allclose(td(bi(dec(x))).numpy(), want, atol=1e-4)
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, np.zeros((3, 6, 1), np.float32), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_custom_cell_model_round_trips_in_a_custom_object_scope(tmp_path):
    inputs = tf.keras.Input((6, 4))
    both = L.Bidirectional(L.RNN(CUSTOM["PairCell"](2), return_sequences=True))(inputs)
    model = tf.keras.Model(inputs, L.RNN(CUSTOM["MinimalRNNCell"](3))(both))
    path = str(tmp_path / "custom.keras")
    model.save(path)
    with tf.keras.utils.custom_object_scope(CUSTOM):
        loaded = tf.keras.models.load_model(path)
    assert type(loaded.layers[1].forward_layer.cell).__name__ == "PairCell"
    x = FIXTURE["x"]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               atol=1e-6)
