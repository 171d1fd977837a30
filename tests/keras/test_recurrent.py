"""SimpleRNN, LSTM, GRU, Bidirectional and MultiHeadAttention: outputs equal real Keras's
with the same weights (fixture from fixtures/make_keras_recurrent.py), Keras's weight
names, shapes and order, training inside fit, gradients, and errors."""
import json
import os
import zipfile

import h5py
import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers
FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "keras_recurrent.npz"))

CASES = {
    "simple_rnn": lambda: L.SimpleRNN(4, return_sequences=True),
    "lstm": lambda: L.LSTM(4, return_state=True),
    "lstm_backwards": lambda: L.LSTM(3, return_sequences=True, go_backwards=True),
    "gru": lambda: L.GRU(4, return_sequences=True, return_state=True),
    "gru_reset_before": lambda: L.GRU(3, reset_after=False, activation="relu"),
    "gru_no_bias": lambda: L.GRU(3, use_bias=False, return_sequences=True),
    "lstm_no_bias": lambda: L.LSTM(3, use_bias=False, activation="sigmoid"),
    "bidirectional_concat": lambda: L.Bidirectional(L.LSTM(3, return_sequences=True)),
    "bidirectional_sum": lambda: L.Bidirectional(L.GRU(3), merge_mode="sum"),
    "bidirectional_mul": lambda: L.Bidirectional(L.SimpleRNN(2), merge_mode="mul"),
    "bidirectional_ave": lambda: L.Bidirectional(L.GRU(2, return_sequences=True),
                                                 merge_mode="ave"),
}


def _stored(prefix: str, kind: str) -> list:
    found = []
    while f"{prefix}/{kind}{len(found)}" in FIXTURE:
        found.append(FIXTURE[f"{prefix}/{kind}{len(found)}"])
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_recurrent_layers_match_keras(name):
    layer = CASES[name]()
    x = FIXTURE["x"]
    layer(x)
    layer.set_weights(_stored(name, "w"))  # fails on any count or shape mismatch
    result = layer(x)
    results = result if isinstance(result, list) else [result]
    expected = _stored(name, "out")
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-5)


def test_multi_head_attention_matches_keras():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5)
    q, v, k = FIXTURE["q"], FIXTURE["v"], FIXTURE["k"]
    mha(q, v, key=k)
    mha.set_weights(_stored("mha", "w"))
    out, scores = mha(q, v, key=k, attention_mask=FIXTURE["mask"],
                      return_attention_scores=True)
    np.testing.assert_allclose(out.numpy(), FIXTURE["mha/out0"], atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), FIXTURE["mha/out1"], atol=1e-5)
    # masked keys get (numerically) no attention
    assert np.all(scores.numpy()[np.broadcast_to(~FIXTURE["mask"][:, None], scores.shape)]
                  < 1e-6)
    causal = mha(q, v, key=k, use_causal_mask=True)
    np.testing.assert_allclose(causal.numpy(), FIXTURE["mha/causal"], atol=1e-5)


def test_weight_names_shapes_and_order_are_keras():
    x = tf.ones([2, 5, 3])
    lstm, gru, rnn = L.LSTM(2, name="lstm"), L.GRU(2, name="gru"), L.SimpleRNN(2)
    for layer in (lstm, gru, rnn):
        layer(x)
    assert [(w.name, tuple(w.shape)) for w in lstm.weights] == [
        ("lstm/lstm_cell/kernel:0", (3, 8)), ("lstm/lstm_cell/recurrent_kernel:0", (2, 8)),
        ("lstm/lstm_cell/bias:0", (8,))]
    assert [tuple(w.shape) for w in gru.weights] == [(3, 6), (2, 6), (2, 6)]
    bi = L.Bidirectional(L.GRU(2, name="gru"), name="bidirectional")
    bi(x)
    assert [w.name for w in bi.weights][::3] == [
        "bidirectional/forward_gru/gru_cell/kernel:0",
        "bidirectional/backward_gru/gru_cell/kernel:0"]
    assert [tuple(w.shape) for w in rnn.weights] == [(3, 2), (2, 2), (2,)]
    # unit_forget_bias: the forget gate's bias starts at one
    np.testing.assert_array_equal(lstm.weights[2].numpy(), [0, 0, 1, 1, 0, 0, 0, 0])
    # the recurrent kernel starts orthogonal
    r = rnn.weights[1].numpy()
    np.testing.assert_allclose(r @ r.T, np.eye(2), atol=1e-5)
    before = L.GRU(2, reset_after=False)
    before(x)
    assert [tuple(w.shape) for w in before.weights] == [(3, 6), (2, 6), (6,)]
    mha = L.MultiHeadAttention(2, 3, name="multi_head_attention")
    mha(tf.ones([1, 4, 6]), tf.ones([1, 5, 6]))
    assert [(w.name, tuple(w.shape)) for w in mha.weights] == [
        ("multi_head_attention/query/kernel:0", (6, 2, 3)),
        ("multi_head_attention/query/bias:0", (2, 3)),
        ("multi_head_attention/key/kernel:0", (6, 2, 3)),
        ("multi_head_attention/key/bias:0", (2, 3)),
        ("multi_head_attention/value/kernel:0", (6, 2, 3)),
        ("multi_head_attention/value/bias:0", (2, 3)),
        ("multi_head_attention/attention_output/kernel:0", (2, 3, 6)),
        ("multi_head_attention/attention_output/bias:0", (6,))]
    assert mha.count_params() == 3 * (36 + 6) + 36 + 6


def test_states_and_edge_cases():
    x = tf.constant(np.random.default_rng(1).normal(size=(3, 4, 2)).astype("float32"))
    lstm = L.LSTM(3, return_sequences=True, return_state=True)
    seq, h, c = lstm(x)
    assert seq.shape == (3, 4, 3) and h.shape == (3, 3) and c.shape == (3, 3)
    np.testing.assert_allclose(seq.numpy()[:, -1], h.numpy())
    # an explicit zero initial state is the default one; a nonzero one changes the output
    zero = np.zeros((3, 3), np.float32)
    np.testing.assert_allclose(lstm(x, initial_state=[zero, zero])[0].numpy(), seq.numpy(),
                               atol=1e-6)
    assert not np.allclose(lstm(x, initial_state=[zero + 1, zero])[0].numpy(), seq.numpy())
    # one time step and a batch of one
    assert L.GRU(2)(tf.ones([1, 1, 2])).shape == (1, 2)
    with pytest.raises(ValueError, match="initial state"):
        lstm(x, initial_state=[zero])
    with pytest.raises(ValueError, match="rank 3"):
        lstm(tf.ones([3, 2]))
    with pytest.raises(ValueError, match="no time steps"):
        L.SimpleRNN(2)(tf.ones([2, 0, 3]))
    with pytest.raises(ValueError, match="units"):
        L.LSTM(0)
    with pytest.raises(ValueError, match="merge_mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="value"):
        L.MultiHeadAttention(2, 3)(tf.ones([1, 2, 3]))
    # after the errors the layer still works
    np.testing.assert_allclose(lstm(x)[0].numpy(), seq.numpy(), atol=1e-6)


def test_config_round_trip():
    gru = L.GRU(3, return_sequences=True, go_backwards=True, reset_after=False)
    again = L.GRU.from_config({**gru.get_config(), "name": "again"})
    assert (again.units, again.return_sequences, again.go_backwards,
            again.cell.reset_after) == (3, True, True, False)
    bi = L.Bidirectional(L.LSTM(2), merge_mode="sum")
    bi2 = L.Bidirectional.from_config(bi.get_config())
    assert bi2.merge_mode == "sum" and bi2.backward_layer.go_backwards
    mha = L.MultiHeadAttention(2, 3, value_dim=4, dropout=0.1)
    assert L.MultiHeadAttention.from_config({**mha.get_config(), "name": "m2"}).value_dim == 4


def test_gradients_flow_through_time():
    x = tf.constant(np.random.default_rng(2).normal(size=(2, 3, 2)))
    layer = L.GRU(2, dtype="float64")
    layer(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x) ** 2)
    grads = tape.gradient(loss, layer.trainable_weights)
    # finite differences on the recurrent kernel's first entry
    w = layer.weights[1]
    base = w.numpy()
    eps = 1e-6
    bumped = base.copy()
    bumped[0, 0] += eps
    w.assign(bumped)
    up = float(tf.reduce_sum(layer(x) ** 2))
    bumped[0, 0] -= 2 * eps
    w.assign(bumped)
    down = float(tf.reduce_sum(layer(x) ** 2))
    w.assign(base)
    np.testing.assert_allclose(grads[1].numpy()[0, 0], (up - down) / (2 * eps), rtol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: [L.LSTM(8), L.Dense(1)],
    lambda: [L.Bidirectional(L.GRU(4, return_sequences=True)), L.SimpleRNN(4), L.Dense(1)],
])
def test_fit_lowers_the_loss(make):
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6, 2)).astype("float32")
    y = x[:, :, 0].sum(1, keepdims=True)  # a running sum: needs the recurrence
    model = tf.keras.Sequential([tf.keras.Input((6, 2)), *make()])
    model.compile(tf.keras.optimizers.Adam(0.02), "mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * before


def test_attention_in_a_functional_model_trains():
    tf.random.set_seed(0)
    inputs = tf.keras.Input((4, 3))
    attended = L.MultiHeadAttention(2, 4)(inputs, inputs)
    model = tf.keras.Model(inputs, L.Dense(1)(L.Flatten()(attended)))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4, 3)).astype("float32")
    y = x.sum((1, 2))[:, None]
    model.compile(tf.keras.optimizers.Adam(0.02), "mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * before


def sequence_model():
    """The model of fixtures/keras_sequence.weights.h5, as make_keras_recurrent.py builds
    it with Keras."""
    inputs = tf.keras.Input((5, 3))
    h = L.Bidirectional(L.LSTM(4, return_sequences=True))(inputs)
    h = L.GRU(4, return_sequences=True)(h)
    h = L.Add()([h, L.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)])
    h = L.SimpleRNN(3)(h)
    return tf.keras.Model(inputs, L.Dense(2)(h))


def test_keras_weights_file_of_a_sequence_model_loads(tmp_path):
    stored = np.load(os.path.join(os.path.dirname(__file__), "fixtures",
                                  "keras_sequence.npz"))
    model = sequence_model()
    model.load_weights(os.path.join(os.path.dirname(__file__), "fixtures",
                                    "keras_sequence.weights.h5"))
    np.testing.assert_allclose(model.predict(stored["x"], verbose=0), stored["prediction"],
                               atol=1e-5)
    # and back: tapeflow's file has the same groups, so a second model reads it
    model.save_weights(str(tmp_path / "again.weights.h5"))
    other = sequence_model()
    other.load_weights(str(tmp_path / "again.weights.h5"))
    np.testing.assert_allclose(other.predict(stored["x"], verbose=0), stored["prediction"],
                               atol=1e-5)
    with h5py.File(tmp_path / "again.weights.h5", "r") as f:
        assert f["layers/bidirectional/backward_layer/cell/vars/0"].shape == (3, 16)
        assert f["layers/multi_head_attention/output_dense/vars/0"].shape == (2, 3, 4)


# ---------------------------------------------------------------------------- masking
MASKING = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "keras_masking.npz"))
MASKED_MODELS = {  # the layers after Embedding(9, 4, mask_zero=True), as the fixture script
    "simple_rnn": lambda: [L.SimpleRNN(3, return_sequences=True)],
    "lstm": lambda: [L.LSTM(3, return_sequences=True)],
    "gru": lambda: [L.GRU(3, return_sequences=True)],
    "lstm_last": lambda: [L.Dropout(0.5), L.LSTM(3)],
    "gru_stacked_backwards": lambda: [L.GRU(3, return_sequences=True),
                                      L.GRU(2, go_backwards=True)],
    "bidirectional_pooled": lambda: [L.Bidirectional(L.SimpleRNN(2, return_sequences=True)),
                                     L.GlobalAveragePooling1D(), L.Dense(1)],
}


def _masked_model(name):
    model = tf.keras.Sequential([tf.keras.Input((5,), dtype="int32"),
                                 L.Embedding(9, 4, mask_zero=True), *MASKED_MODELS[name]()])
    model.set_weights([0.5 * np.sin(np.arange(w.size)).reshape(w.shape)
                       for w in model.get_weights()])
    return model


@pytest.mark.parametrize("name", sorted(MASKED_MODELS))
def test_masking_from_embedding_matches_keras(name):
    """Padding (id 0) at the end, the start and the middle: masked steps keep the previous
    state and output, through Dropout, stacked and backwards layers, Bidirectional and a
    masked GlobalAveragePooling1D, as real Keras computed."""
    model = _masked_model(name)
    np.testing.assert_allclose(model.predict(MASKING["ids"], verbose=0), MASKING[name],
                               rtol=1e-5, atol=1e-6)
    unmasked = tf.keras.Sequential([tf.keras.Input((5,), dtype="int32"), L.Embedding(9, 4),
                                    *MASKED_MODELS[name]()])
    unmasked.set_weights(model.get_weights())
    assert not np.allclose(unmasked.predict(MASKING["ids"], verbose=0), MASKING[name],
                           atol=1e-3)  # the mask changes the result


def test_masking_details():
    emb = L.Embedding(9, 4, mask_zero=True)
    np.testing.assert_array_equal(emb.compute_mask(np.array([[0, 3, 0]])).numpy(),
                                  [[False, True, False]])
    assert L.Embedding(9, 4).compute_mask(np.array([[0, 3]])) is None
    assert L.Embedding.from_config(emb.get_config()).mask_zero
    # a mask given to the call: the same as in the Sequential
    model = _masked_model("lstm")
    ids = MASKING["ids"]
    lstm = model.layers[1]
    direct = lstm(model.layers[0](ids), mask=ids != 0)
    np.testing.assert_allclose(direct.numpy(), MASKING["lstm"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="mask must be"):
        lstm(model.layers[0](ids), mask=np.ones([4, 3], bool))
    # a layer that does not support masking ends the mask, with a warning
    with pytest.warns(UserWarning, match="does not support masking"):  # drawn, and run
        flat = tf.keras.Sequential([tf.keras.Input((5,), dtype="int32"),
                                    L.Embedding(9, 4, mask_zero=True), L.Flatten()])
    with pytest.warns(UserWarning, match="does not support masking"):
        flat.predict(ids, verbose=0)
    # the functional API masks as the Sequential does (the same layers, so the same weights)
    x = tf.keras.Input((5,), dtype="int32")
    functional = tf.keras.Model(x, model.layers[1](model.layers[0](x)))
    np.testing.assert_allclose(functional.predict(ids, verbose=0), MASKING["lstm"],
                               rtol=1e-5, atol=1e-6)


def test_masked_model_trains_and_round_trips(tmp_path):
    model = _masked_model("gru_stacked_backwards")
    model.compile("nadam", "mse")
    ids, y = MASKING["ids"], np.linspace(0, 1, 8).reshape(4, 2)
    losses = model.fit(ids, y, epochs=3, verbose=0).history["loss"]  # the traced step
    assert losses[-1] < losses[0]
    path = str(tmp_path / "masked.keras")
    model.save(path)
    copy = tf.keras.models.load_model(path)
    assert copy.layers[0].mask_zero and type(copy.optimizer) is tf.optimizers.Nadam
    np.testing.assert_array_equal(copy.predict(ids, verbose=0), model.predict(ids, verbose=0))


def test_bidirectional_entry_is_spelled_as_keras_writes_it(tmp_path):
    """The wrapped layer of a Bidirectional is a full layer entry (module "keras.layers",
    nested initializers with their modules), which real Keras needs to load the file
    (checked by hand: Keras loads this model and predicts the same to 6e-8)."""
    path = str(tmp_path / "bi.keras")
    _masked_model("bidirectional_pooled").save(path)
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("config.json"))
    inner = config["config"]["layers"][2]["config"]["layer"]
    assert (inner["module"], inner["class_name"]) == ("keras.layers", "SimpleRNN")
    assert inner["config"]["kernel_initializer"]["module"] == "keras.initializers"
    copy = tf.keras.models.load_model(path)
    np.testing.assert_allclose(copy.predict(MASKING["ids"], verbose=0),
                               MASKING["bidirectional_pooled"], rtol=1e-5, atol=1e-6)

