"""`dropout` and `recurrent_dropout` of SimpleRNN, LSTM and GRU (Keras 3's semantics): in
training only, one mask per sequence reused at every time step (per gate for LSTM and GRU
with `recurrent_dropout`), entries 0 or 1/(1-rate) so the expectation is kept; gradients
through the masks. Random, so structure and statistics are tested, not Keras's values."""
import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers


def _assert_levels(values, rate):
    """Every entry is 0 (dropped) or 1/(1-rate) (kept, scaled), and both occur."""
    values = np.asarray(values, np.float64)
    kept = np.isclose(values, 1 / (1 - rate), rtol=1e-6)
    assert np.all(kept | (values == 0)) and kept.any() and not kept.all()


def _identity_rnn(units, **kwargs):
    """A linear SimpleRNN with identity kernels: h_t = x_t * m + h_{t-1} * r, so its
    outputs show the input mask m and the recurrent mask r."""
    layer = L.SimpleRNN(units, activation=None, use_bias=False, return_sequences=True,
                        **kwargs)
    layer(np.ones((1, 1, units), np.float32))
    layer.set_weights([np.eye(units), np.eye(units)])
    return layer


def test_input_dropout_one_mask_per_sequence():
    rate = 0.3
    layer = L.SimpleRNN(6, activation=None, use_bias=False, return_sequences=True,
                        dropout=rate)
    layer(np.ones((1, 1, 6), np.float32))
    layer.set_weights([np.eye(6), np.zeros((6, 6))])  # h_t = x_t * m
    x = np.ones((3000, 4, 6), np.float32)
    out = layer(x, training=True).numpy()
    # the same mask at every step, entries 0 or 1/(1-rate)
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    _assert_levels(out, rate)
    assert abs(out.mean() - 1.0) < 0.03  # the expectation is kept
    assert abs((out[:, 0] == 0).mean() - rate) < 0.02
    # a fresh mask for every call; none at inference
    again = layer(x, training=True).numpy()
    assert not np.array_equal(again, out)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    np.testing.assert_array_equal(layer(x).numpy(), x)


def test_recurrent_dropout_one_mask_per_sequence():
    rate = 0.25
    layer = _identity_rnn(5, recurrent_dropout=rate)
    x = np.ones((2000, 4, 5), np.float32)
    h = layer(x, training=True).numpy().astype(np.float64)
    step = np.diff(h, axis=1)  # h_t - h_{t-1} = r^(t-1): step t+1 = step t * r
    r = step[:, 0]
    _assert_levels(r, rate)
    np.testing.assert_allclose(step[:, 1], r * r, rtol=1e-5)
    np.testing.assert_allclose(step[:, 2], r * r * r, rtol=1e-5)
    assert abs(r.mean() - 1.0) < 0.04
    np.testing.assert_array_equal(layer(x).numpy()[:, -1], 4 * np.ones((2000, 5)))


@pytest.mark.parametrize("cls, gates", [(L.LSTM, 4), (L.GRU, 3), (L.SimpleRNN, 1)])
def test_masks_per_gate_as_keras(cls, gates):
    x = tf.ones([500, 3])
    only_input = cls(4, dropout=0.5).cell
    masks, recurrent = only_input.dropout_masks(x, training=True)
    assert len(masks) == 1 and recurrent is None  # Keras's fused form: one input mask
    both = cls(4, dropout=0.5, recurrent_dropout=0.5).cell
    masks, recurrent = both.dropout_masks(x, training=True)
    assert len(masks) == gates and len(recurrent) == gates
    assert masks[0].shape == (500, 3) and recurrent[0].shape == (500, 4)
    for group in (masks, recurrent):  # independent draws
        values = [m.numpy() for m in group]
        assert all(not np.array_equal(values[0], v) for v in values[1:])
        assert all(set(np.unique(v)) == {0.0, 2.0} for v in values)
    assert both.dropout_masks(x, training=False) == (None, None)
    assert cls(4, dropout=1.0).cell.dropout_masks(x, training=True) == (None, None)
    config = cls(4, dropout=0.5, recurrent_dropout=0.25, seed=3).get_config()
    assert (config["dropout"], config["recurrent_dropout"], config["seed"]) == (0.5, 0.25, 3)
    assert cls.from_config(config).cell.recurrent_dropout == 0.25


@pytest.mark.parametrize("cls", [L.LSTM, L.GRU])
def test_inference_ignores_dropout(cls):
    x = np.sin(np.arange(2 * 5 * 3)).reshape(2, 5, 3).astype(np.float32)
    plain, dropped = cls(3), cls(3, dropout=0.4, recurrent_dropout=0.4)
    plain(x)
    dropped(x)
    dropped.set_weights(plain.get_weights())
    np.testing.assert_array_equal(dropped(x).numpy(), plain(x).numpy())
    assert not np.allclose(dropped(x, training=True).numpy(), plain(x).numpy())


@pytest.mark.parametrize("cls, extra", [(L.LSTM, {}), (L.GRU, {}),
                                        (L.GRU, {"reset_after": False}), (L.SimpleRNN, {})])
def test_gradients_through_fixed_masks_match_finite_differences(cls, extra):
    """The masked step is differentiable: with the masks held fixed, the tape's gradient
    of a loss over the sequence equals central differences in float64."""
    layer = cls(3, dropout=0.3, recurrent_dropout=0.3, dtype="float64", **extra)
    x = tf.constant(np.sin(np.arange(2 * 4 * 2)).reshape(2, 4, 2))
    layer(x)
    cell = layer.cell
    masks = cell.dropout_masks(x[:, 0], training=True)

    def loss():
        states = None
        total = 0.0
        for t in range(4):
            out, states = cell.step(x[:, t], states, masks)
            total = total + tf.reduce_sum(out * out)
        return total

    with tf.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, [cell.kernel, cell.recurrent_kernel])
    for var, grad in zip([cell.kernel, cell.recurrent_kernel], grads):
        base = var.numpy()
        numeric = np.zeros_like(base)
        for index in np.ndindex(*base.shape):
            for sign in (1, -1):
                shifted = base.copy()
                shifted[index] += sign * 1e-6
                var.assign(shifted)
                numeric[index] += sign * float(loss()) / 2e-6
            var.assign(base)
        np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_fit_with_dropout_trains_and_predicts_deterministically():
    tf.keras.utils.set_random_seed(1)
    x = np.sin(np.arange(32 * 6 * 2)).reshape(32, 6, 2).astype(np.float32)
    y = x.sum(axis=(1, 2))[:, None] / 6
    model = tf.keras.Sequential([tf.keras.Input((6, 2)),
                                 L.Bidirectional(L.GRU(4, dropout=0.2,
                                                       recurrent_dropout=0.2)),
                                 L.Dense(1)])
    model.compile(tf.keras.optimizers.Adam(0.02), "mse")
    losses = model.fit(x, y, epochs=8, batch_size=16, verbose=0).history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))
    # the traced training call draws fresh masks each time it runs
    step = tf.function(lambda v: model(v, training=True))
    assert not np.array_equal(step(x).numpy(), step(x).numpy())
