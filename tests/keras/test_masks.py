"""Keras's mask protocol (masks ride on tensors as `_keras_mask`; `Layer.__call__` hands
them to `call(mask=)` and sets `compute_mask` on the outputs) in functional, subclassed and
Sequential models, the Masking layer, and stateful recurrent layers: values equal what
real Keras computed (fixture from fixtures/make_keras_mask_protocol.py)."""
import os
import warnings

import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers
KERAS = np.load(os.path.join(os.path.dirname(__file__), "fixtures",
                             "keras_mask_protocol.npz"))


def _set_weights(model):
    model.set_weights([0.5 * np.sin(np.arange(w.size)).reshape(w.shape)
                       for w in model.get_weights()])


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- model kinds
def test_functional_model_propagates_masks_as_keras():
    x = tf.keras.Input((5,), dtype="int32")
    h = L.Embedding(9, 4, mask_zero=True)(x)
    assert h._keras_mask.shape == (None, 5) and h._keras_mask.dtype == tf.bool
    h = L.LayerNormalization()(L.Dense(3, activation="tanh")(h))
    seq = L.LSTM(3, return_sequences=True)(h)
    model = tf.keras.Model(x, [seq, L.GlobalAveragePooling1D()(seq)])
    _set_weights(model)
    got_seq, pooled = model(KERAS["ids"])
    _close(got_seq, KERAS["functional_seq"])
    _close(pooled, KERAS["functional_pooled"])
    np.testing.assert_array_equal(got_seq._keras_mask.numpy(), KERAS["functional_mask"])
    assert getattr(pooled, "_keras_mask", None) is None  # the steps are gone
    # the traced predict step computes the same
    _close(model.predict(KERAS["ids"], verbose=0)[1], KERAS["functional_pooled"])


class _Subclassed(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.embed = L.Embedding(9, 4, mask_zero=True)
        self.dense = L.Dense(3)
        self.gru = L.GRU(2, return_sequences=True)

    def call(self, inputs):
        return self.gru(self.dense(self.embed(inputs)))


def test_subclassed_model_calling_layers_propagates_masks():
    model = _Subclassed()
    model(KERAS["ids"])
    _set_weights(model)
    out = model(KERAS["ids"])
    _close(out, KERAS["subclassed"])
    np.testing.assert_array_equal(out._keras_mask.numpy(), KERAS["subclassed_mask"])
    model.compile("sgd", "mse")
    losses = model.fit(KERAS["ids"], np.ones((4, 5, 2)), epochs=2, verbose=0)
    assert np.all(np.isfinite(losses.history["loss"]))


def test_sequential_and_model_mask_argument():
    ids = KERAS["ids"]
    model = tf.keras.Sequential([tf.keras.Input((5,), dtype="int32"),
                                 L.Embedding(9, 4, mask_zero=True), L.Dense(3),
                                 L.GRU(2, return_sequences=True)])
    out = model(ids)
    np.testing.assert_array_equal(out._keras_mask.numpy(), ids != 0)
    # a model's `mask=` is attached to its inputs: an RNN fed floats then masks those steps
    x = tf.keras.Input((5, 3))
    lstm = L.LSTM(2, return_sequences=True)
    functional = tf.keras.Model(x, lstm(x))
    seq = tf.constant(KERAS["seq"])
    mask = np.any(KERAS["seq"] != 0, axis=-1)
    # (a model itself does not support masking: as Keras, it warns that the mask stops)
    with pytest.warns(UserWarning, match="does not support masking"):
        _close(functional(seq, mask=mask), lstm(KERAS["seq"], mask=mask).numpy())
    sequential = tf.keras.Sequential([tf.keras.Input((5, 3)), lstm])
    with pytest.warns(UserWarning, match="does not support masking"):
        _close(sequential(tf.constant(KERAS["seq"]), mask=mask),
               lstm(KERAS["seq"], mask=mask).numpy())
    assert not np.allclose(lstm(KERAS["seq"]).numpy(), lstm(KERAS["seq"], mask=mask).numpy())


def test_layers_that_pass_or_drop_the_mask():
    emb = L.Embedding(9, 4, mask_zero=True)(KERAS["ids"])
    want = KERAS["ids"] != 0
    for layer in [L.Dense(2), L.Dropout(0.5), L.Activation("relu"), L.ReLU(),
                  L.LeakyReLU(), L.LayerNormalization(), L.Rescaling(2.0)]:
        assert layer.supports_masking, layer
        out = layer(emb, training=True)
        assert out._keras_mask is not None, layer
        np.testing.assert_array_equal(out._keras_mask.numpy(), want)
    # Keras's list: these do not support masking and drop it with a warning
    for layer in [L.Flatten(), L.Conv1D(2, 2), L.GlobalMaxPooling1D()]:
        assert not layer.supports_masking
        with pytest.warns(UserWarning, match="does not support masking"):
            out = layer(emb)
        assert getattr(out, "_keras_mask", None) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mask, no warning
        L.Flatten()(np.ones((2, 3, 4)))
    # an RNN returning only its last step, or its states, gives no mask for them
    out, h, c = L.LSTM(2, return_state=True)(emb)
    assert all(getattr(t, "_keras_mask", None) is None for t in (out, h, c))
    out, h = L.GRU(2, return_sequences=True, return_state=True)(emb)
    np.testing.assert_array_equal(out._keras_mask.numpy(), want)
    assert getattr(h, "_keras_mask", None) is None


def test_merge_layers_combine_masks_as_keras():
    a, b = tf.keras.Input((5,), dtype="int32"), tf.keras.Input((5,), dtype="int32")
    ea, eb = L.Embedding(9, 2, mask_zero=True)(a), L.Embedding(9, 2, mask_zero=True)(b)
    concat = L.SimpleRNN(2, return_sequences=True)(L.Concatenate()([ea, eb]))
    added = L.LSTM(2, return_sequences=True)(L.Add()([ea, eb]))
    model = tf.keras.Model([a, b], [concat, added])
    _set_weights(model)
    got_concat, got_added = model([KERAS["ids"], KERAS["ids2"]])
    _close(got_concat, KERAS["merged_concat"])
    _close(got_added, KERAS["merged_add"])
    np.testing.assert_array_equal(got_concat._keras_mask.numpy(),
                                  KERAS["merged_concat_mask"])
    np.testing.assert_array_equal(got_added._keras_mask.numpy(), KERAS["merged_add_mask"])
    # Concatenate along time joins the masks; one unmasked input counts as all True;
    # Add needs every input masked
    x = L.Embedding(9, 2, mask_zero=True)(KERAS["ids"])
    plain = tf.ones([4, 5, 2])
    np.testing.assert_array_equal(L.Concatenate(axis=1)([x, x])._keras_mask.numpy(),
                                  np.concatenate([KERAS["ids"] != 0] * 2, axis=1))
    assert L.Concatenate()([x, plain])._keras_mask.numpy().all()
    assert getattr(L.Add()([x, plain]), "_keras_mask", None) is None
    assert getattr(L.Multiply()([x, x]), "_keras_mask", None) is not None


def test_softmax_mask_argument():
    got = L.Softmax()(KERAS["softmax_logits"], mask=KERAS["softmax_mask"][:, None])
    _close(got, KERAS["softmax"])
    with pytest.raises(ValueError, match="broadcastable"):
        L.Softmax()(KERAS["softmax_logits"], mask=np.ones((2, 3), bool))


# ---------------------------------------------------------------------- Masking
def test_masking_layer_matches_keras():
    x = tf.keras.Input((5, 3))
    masked = L.Masking(0.0)(x)
    model = tf.keras.Model(x, [masked, L.GRU(2, return_sequences=True)(masked)])
    _set_weights(model)
    got_masked, gru = model(KERAS["seq"])
    _close(got_masked, KERAS["masking_out"])
    np.testing.assert_array_equal(got_masked._keras_mask.numpy(), KERAS["masking_mask"])
    _close(gru, KERAS["masking_gru"])


def test_masking_layer_details(tmp_path):
    layer = L.Masking(mask_value=-1.0)
    x = np.array([[[-1.0, -1.0], [-1.0, 2.0], [3.0, 4.0]]], np.float32)
    out = layer(x)
    # only a step whose features ALL equal mask_value is masked, and zeroed
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[False, True, True]])
    np.testing.assert_array_equal(out.numpy(), [[[0, 0], [-1, 2], [3, 4]]])
    np.testing.assert_array_equal(layer.compute_mask(x).numpy(), [[False, True, True]])
    assert layer.get_config()["mask_value"] == -1.0
    assert L.Masking.from_config(layer.get_config()).mask_value == -1.0
    with pytest.raises(ValueError, match="masking"):
        layer(np.ones(3, np.float32))
    model = tf.keras.Sequential([tf.keras.Input((5, 3)), L.Masking(), L.LSTM(2)])
    path = str(tmp_path / "masking.keras")
    model.save(path)
    copy = tf.keras.models.load_model(path)
    assert type(copy.layers[0]) is L.Masking
    _close(copy.predict(KERAS["seq"], verbose=0), model.predict(KERAS["seq"], verbose=0))


def test_multi_head_attention_reads_query_and_value_masks():
    embed_q, embed_v = L.Embedding(9, 4, mask_zero=True), L.Embedding(9, 4, mask_zero=True)
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3)
    mha(embed_q(KERAS["ids"]), embed_v(KERAS["ids2"]))
    for layer in (embed_q, embed_v, mha):
        _set_weights(layer)
    q, v = embed_q(KERAS["ids"]), embed_v(KERAS["ids2"])
    out, scores = mha(q, v, return_attention_scores=True)
    _close(out, KERAS["mha_out"])
    _close(scores, KERAS["mha_scores"])  # masked query steps attend to nothing
    np.testing.assert_array_equal(out._keras_mask.numpy(), KERAS["mha_mask"])
    # the same masks passed as arguments, and inside a functional model
    plain_q, plain_v = tf.identity(q), tf.identity(v)
    _close(mha(plain_q, plain_v, query_mask=KERAS["ids"] != 0,
               value_mask=KERAS["ids2"] != 0), KERAS["mha_out"])
    a, b = tf.keras.Input((5,), dtype="int32"), tf.keras.Input((5,), dtype="int32")
    model = tf.keras.Model([a, b], mha(embed_q(a), embed_v(b)))
    _close(model([KERAS["ids"], KERAS["ids2"]]), KERAS["mha_out"])


def test_masked_steps_output_zeros_in_bidirectional_and_with_zero_output_for_mask():
    x = tf.keras.Input((5,), dtype="int32")
    h = L.Embedding(9, 3, mask_zero=True)(x)
    bidirectional = L.Bidirectional(L.LSTM(2, return_sequences=True))
    gru = L.GRU(2, return_sequences=True, zero_output_for_mask=True)
    model = tf.keras.Model(x, [bidirectional(h), gru(h)])
    _set_weights(model)
    bi, zeroed = model(KERAS["ids"])
    _close(bi, KERAS["bidirectional_seq"])
    _close(zeroed, KERAS["zero_output_gru"])
    assert np.all(zeroed.numpy()[KERAS["ids"] == 0] == 0)
    assert bidirectional.forward_layer.zero_output_for_mask
    assert gru.get_config()["zero_output_for_mask"]


def test_keras_file_with_masking_and_rnn_dropout_loads():
    path = os.path.join(os.path.dirname(__file__), "fixtures", "keras_masked_lstm.keras")
    model = tf.keras.models.load_model(path)
    lstm = model.layers[1]
    assert type(model.layers[0]) is L.Masking
    assert (lstm.cell.dropout, lstm.cell.recurrent_dropout, lstm.cell.seed) == (0.2, 0.1, 5)
    _close(model.predict(KERAS["seq"], verbose=0), KERAS["masked_lstm_file"])


# ---------------------------------------------------------------------- stateful
STATEFUL = {  # the layers after Input((4, 3), batch_size=2), as the fixture script
    "stateful_lstm": lambda: [L.LSTM(3, stateful=True, return_sequences=True)],
    "stateful_gru": lambda: [L.GRU(2, stateful=True)],
    "stateful_simple_rnn": lambda: [L.SimpleRNN(2, stateful=True, return_state=True)],
    "stateful_masked_gru": lambda: [L.Masking(), L.GRU(2, stateful=True,
                                                       return_sequences=True)],
    "stateful_bidirectional": lambda: [L.Bidirectional(L.LSTM(2, stateful=True))],
}


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_stateful_layers_carry_states_between_calls_as_keras(name):
    xs = KERAS["stateful_x"]
    model = tf.keras.Sequential([tf.keras.Input((4, 3), batch_size=2), *STATEFUL[name]()])
    _set_weights(model)
    layer = model.layers[-1]
    assert len(model.weights) == (6 if "bidirectional" in name else 3)  # states aren't
    for i in range(2):  # the second call starts from the first call's last states
        result = model(xs[i])
        for j, got in enumerate(result if isinstance(result, list) else [result]):
            _close(got, KERAS[f"{name}/call{i}_{j}"])
    for j, state in enumerate(layer.states):
        _close(state.numpy(), KERAS[f"{name}/state{j}"])
    layer.reset_states()
    assert all(not s.numpy().any() for s in layer.states)
    again = model(xs[1])
    _close(again[0] if isinstance(again, list) else again, KERAS[f"{name}/reset"])
    entry = model.get_config()["layers"][-1]["config"]
    assert entry.get("layer", {"config": entry})["config"]["stateful"]


def test_stateful_details(tmp_path):
    xs = KERAS["stateful_x"]
    for layer in (L.LSTM(2, stateful=True), L.Bidirectional(L.GRU(2, stateful=True))):
        with pytest.raises(ValueError, match="batch size must be static"):
            tf.keras.Sequential([tf.keras.Input((4, 3)), layer])
    assert L.LSTM(2).states is None
    # Keras 2's batch_input_shape on the first layer fixes the batch too
    lstm = L.LSTM(3, stateful=True, return_sequences=True, batch_input_shape=(2, 4, 3))
    model = tf.keras.Sequential([lstm])
    _set_weights(model)
    assert lstm.states[0].shape == (2, 3) and not lstm.states[0].numpy().any()
    _close(model.predict(xs[0], batch_size=2, verbose=0), KERAS["stateful_lstm/call0_0"])
    with pytest.raises(ValueError, match="batch size"):
        model(np.ones((3, 4, 3), np.float32))
    _close(model(xs[1]), KERAS["stateful_lstm/call1_0"])  # the failed call changed nothing
    # the traced fit step carries the states on too; the file keeps stateful=True
    model.compile("sgd", "mse")
    before = lstm.states[0].numpy()
    model.fit(xs[0], np.zeros((2, 4, 3)), batch_size=2, epochs=1, verbose=0, shuffle=False)
    assert not np.allclose(lstm.states[0].numpy(), before)
    path = str(tmp_path / "stateful.keras")
    model.save(path)
    copy = tf.keras.models.load_model(path)
    assert copy.layers[0].stateful and copy.layers[0].states[0].shape == (2, 3)
    # Bidirectional over a stateful layer keeps and resets both directions' states
    bi = L.Bidirectional(L.GRU(2, stateful=True))
    first = bi(xs[0]).numpy()
    assert len(bi.states) == 2 and not np.allclose(bi(xs[0]).numpy(), first)
    bi.reset_states()
    _close(bi(xs[0]), first)


def test_batch_normalization_statistics_of_unmasked_steps():
    embed = L.Embedding(9, 3, mask_zero=True)
    embed(KERAS["ids"])
    _set_weights(embed)
    bn = L.BatchNormalization()
    out = bn(embed(KERAS["ids"]), training=True)
    _close(out, KERAS["bn_out"])
    _close(bn.moving_mean.numpy(), KERAS["bn_moving_mean"])
    _close(bn.moving_variance.numpy(), KERAS["bn_moving_variance"])
    np.testing.assert_array_equal(out._keras_mask.numpy(), KERAS["ids"] != 0)
    # at inference the moving statistics serve, mask or not
    _close(bn(embed(KERAS["ids"])), bn(tf.identity(embed(KERAS["ids"]))).numpy())
    with pytest.raises(ValueError, match="one dimension less"):
        bn(np.ones((4, 5, 3), np.float32), mask=np.ones((4, 5, 3), bool))


def test_custom_layers_take_part_in_the_protocol():
    class Doubled(L.Layer):  # overrides compute_mask: supports masking (Keras 3's rule)
        def call(self, x):
            return x * 2.0

        def compute_mask(self, inputs, previous_mask=None):
            return previous_mask

    class Seen(L.Layer):
        def __init__(self):
            super().__init__()
            self.supports_masking = True
            self.masks = []

        def call(self, x, mask=None):
            self.masks.append(mask)
            return x

    emb = L.Embedding(9, 4, mask_zero=True)(KERAS["ids"])
    assert Doubled().supports_masking and not L.Flatten().supports_masking
    seen = Seen()
    out = seen(Doubled()(emb))
    np.testing.assert_array_equal(np.asarray(seen.masks[0]), KERAS["ids"] != 0)
    np.testing.assert_array_equal(out._keras_mask.numpy(), KERAS["ids"] != 0)
    seen(np.ones((2, 3), np.float32))
    assert seen.masks[1] is None  # no mask, none passed
    explicit = np.zeros((4, 5), bool)
    seen(emb, mask=explicit)  # a mask given to the call wins
    assert seen.masks[2] is explicit
