"""Issue #30, "wrong with no error": Keras 3 behaviours the model and layers got silently
wrong (values checked by hand or against Keras's documented results)."""
import numpy as np
import pytest
import tapeflow as tf

keras = tf.keras


# ---------------------------------------------------------- build() marks the layer built

class Scale(keras.layers.Layer):
    """A user's layer: one weight per feature, created in its own build."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal")

    def call(self, x):
        return x * self.w


def _dense_expected(x, kernel, bias):
    return x @ kernel + bias


def _rnn_expected(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], kernel.shape[1]), np.float32)
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
    return h


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _lstm_expected(x, kernel, recurrent, bias):
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units), np.float32)
    c = np.zeros_like(h)
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
    return h


def _gru_expected(x, kernel, recurrent, bias):
    # Keras 3's default GRU: reset_after=True, bias rows [input, recurrent], gates z, r, h
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units), np.float32)
    for t in range(x.shape[1]):
        xi = x[:, t] @ kernel + bias[0]
        hi = h @ recurrent + bias[1]
        z = _sigmoid(xi[:, :units] + hi[:, :units])
        r = _sigmoid(xi[:, units:2 * units] + hi[:, units:2 * units])
        hh = np.tanh(xi[:, 2 * units:] + r * hi[:, 2 * units:])
        h = z * h + (1 - z) * hh
    return h


def _known(weights, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in weights]


@pytest.mark.parametrize("make, shape, expected", [
    (lambda: keras.layers.Dense(3), (2, 4), lambda x, w: _dense_expected(x, *w)),
    (lambda: keras.layers.SimpleRNN(3), (2, 4, 2), lambda x, w: _rnn_expected(x, *w)),
    (lambda: keras.layers.LSTM(3), (2, 4, 2), lambda x, w: _lstm_expected(x, *w)),
    (lambda: keras.layers.GRU(3), (2, 4, 2), lambda x, w: _gru_expected(x, *w)),
    (lambda: Scale(), (2, 4), lambda x, w: x * w[0]),
], ids=["Dense", "SimpleRNN", "LSTM", "GRU", "custom"])
def test_build_then_set_weights_is_what_the_call_uses(make, shape, expected):
    layer = make()
    layer.build(shape)
    assert layer.built
    count = len(layer.weights)
    known = _known(layer.get_weights())
    layer.set_weights(known)
    x = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
    y = layer(x)
    assert len(layer.weights) == count  # no second set built by the call
    np.testing.assert_allclose(y.numpy(), expected(x, known), rtol=1e-5, atol=1e-6)
    for w, k in zip(layer.get_weights(), known):
        np.testing.assert_array_equal(w, k)


def test_conv2d_build_then_set_weights():
    layer = keras.layers.Conv2D(2, 3)
    layer.build((1, 4, 4, 1))
    assert len(layer.weights) == 2
    kernel = np.zeros((3, 3, 1, 2), np.float32)
    kernel[1, 1, 0, 0] = 1.0  # filter 0 picks the centre pixel
    kernel[:, :, 0, 1] = 1.0  # filter 1 sums the 3x3 window
    bias = np.array([0.5, -1.0], np.float32)
    layer.set_weights([kernel, bias])
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    y = layer(x).numpy()
    assert len(layer.weights) == 2
    # the 2x2 'valid' outputs: centres 5, 6, 9, 10; window sums 9 * centre
    np.testing.assert_allclose(y[0, :, :, 0], [[5.5, 6.5], [9.5, 10.5]])
    np.testing.assert_allclose(y[0, :, :, 1], [[44.0, 53.0], [80.0, 89.0]])


def test_direct_build_names_weights_as_a_call_does():
    built = keras.layers.Dense(2, name="probe_dense")
    built.build((1, 3))
    assert [w.name for w in built.weights] == ["probe_dense/kernel:0", "probe_dense/bias:0"]


# ------------------------------------------- dict inputs go by the Inputs' names (Keras 3)

def _zeta_alpha_model():
    zeta = keras.Input((1,), name="zeta")
    alpha = keras.Input((1,), name="alpha")
    return keras.Model([zeta, alpha], keras.layers.Concatenate()([zeta, alpha]))


def test_dict_call_of_a_list_of_named_inputs_goes_by_name():
    model = _zeta_alpha_model()
    # "alpha" sorts first, but "zeta" is the first Input: Keras gives [[1, 2]]
    y = model({"zeta": np.array([[1.0]]), "alpha": np.array([[2.0]])})
    np.testing.assert_array_equal(y.numpy(), [[1.0, 2.0]])
    y = model.predict({"alpha": np.array([[2.0]]), "zeta": np.array([[1.0]])}, verbose=0)
    np.testing.assert_array_equal(y, [[1.0, 2.0]])


def test_dict_call_with_missing_or_unknown_keys_raises_naming_them():
    model = _zeta_alpha_model()
    with pytest.raises(ValueError, match="alpha"):
        model({"zeta": np.array([[1.0]])})
    with pytest.raises(ValueError, match="beta"):
        model({"zeta": np.array([[1.0]]), "alpha": np.array([[2.0]]),
               "beta": np.array([[3.0]])})


def test_fit_and_evaluate_with_dict_data_go_by_name():
    zeta = keras.Input((1,), name="zeta")
    alpha = keras.Input((1,), name="alpha")
    dense = keras.layers.Dense(1, use_bias=False)
    model = keras.Model([zeta, alpha], dense(keras.layers.Concatenate()([zeta, alpha])))
    dense.set_weights([np.array([[1.0], [-1.0]], np.float32)])  # zeta - alpha
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    x = {"alpha": np.array([[1.0], [2.0]]), "zeta": np.array([[3.0], [7.0]])}
    y = np.array([[2.0], [5.0]])  # exactly zeta - alpha: loss 0 (by sorted keys: 16, 100)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(0.0)
    history = model.fit(x, y, epochs=1, batch_size=2, verbose=0)
    assert history.history["loss"][0] == pytest.approx(0.0)


# ------------------------------ only weighted_metrics are weighted by sample_weight (Keras 3)

def _identity_model():
    inputs = keras.Input((2,))
    return keras.Model(inputs, keras.layers.Activation("linear")(inputs))


def test_metrics_are_unweighted_and_weighted_metrics_are_weighted():
    # Keras 3's own CompileMetrics test: two batches, sample_weight [1, 0, 1] each
    y_true = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]] * 2, np.float32)
    y_pred = np.array([[0.4, 0.1], [0.2, 0.6], [0.6, 0.1],
                       [0.3, 0.2], [0.1, 0.4], [0.2, 0.3]], np.float32)
    sample_weight = np.array([1.0, 0.0, 1.0] * 2, np.float32)
    model = _identity_model()
    model.compile(optimizer="sgd", loss="mse", metrics=["mean_squared_error"],
                  weighted_metrics=["mean_squared_error"])
    logs = model.evaluate(y_pred, y_true, sample_weight=sample_weight, batch_size=3,
                          verbose=0, return_dict=True)
    assert logs["mean_squared_error"] == pytest.approx(0.055833336, rel=1e-5)
    assert logs["weighted_mean_squared_error"] == pytest.approx(0.0725, rel=1e-5)


def test_class_weight_does_not_weight_plain_metrics():
    # class_weight {0: 1, 1: 0} zeroes sample 1: only the weighted metric may see that
    model = _identity_model()
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse", metrics=["mae"],
                  weighted_metrics=["mse"])
    x = np.array([[1.0, 0.0], [3.0, 0.0]], np.float32)
    y = np.array([[0.0, 0.0], [0.0, 1.0]], np.float32)  # labels by argmax: 0, 1
    history = model.fit(x, y, batch_size=2, epochs=1, verbose=0,
                        class_weight={0: 1.0, 1: 0.0})
    # |errors|: sample 0 (1, 0), sample 1 (3, 1): mae 5/4 unweighted
    assert history.history["mae"][0] == pytest.approx(1.25)
    # squared: sample 0 mean 0.5, sample 1 mean 5; weighted by class 1 -> 0: 0.5
    assert history.history["mse"][0] == pytest.approx(0.5)


# --------------------------------- Keras masks weigh the compiled loss (Keras 3's apply_mask)

def _masked_tagger(run_eagerly: bool):
    """Embedding(mask_zero) -> Dense logits per step, with known weights."""
    tokens = keras.Input((4,), dtype="int32")
    embedding = keras.layers.Embedding(4, 2, mask_zero=True)
    dense = keras.layers.Dense(3)
    model = keras.Model(tokens, dense(embedding(tokens)))
    embedding.set_weights([np.array([[9.0, -9.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                                    np.float32)])
    dense.set_weights([np.array([[1.0, -1.0, 0.5], [0.0, 2.0, -1.0]], np.float32),
                       np.array([0.1, 0.0, -0.1], np.float32)])
    model.compile(optimizer=keras.optimizers.SGD(0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalCrossentropy(
                      from_logits=True, name="wce")],
                  run_eagerly=run_eagerly)
    return model, embedding.get_weights()[0], dense.get_weights()


def _step_losses(x, y, table, kernel, bias):
    logits = table[x] @ kernel + bias
    logits = logits - logits.max(-1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_p, y[..., None], -1)[..., 0]


@pytest.mark.parametrize("run_eagerly", [True, False], ids=["eager", "traced"])
def test_embedding_mask_zero_masks_the_compiled_loss(run_eagerly):
    model, table, (kernel, bias) = _masked_tagger(run_eagerly)
    x = np.array([[1, 2, 0, 0], [3, 1, 2, 0]])
    y = np.array([[0, 1, 2, 2], [2, 0, 1, 0]])  # labels under padding are arbitrary
    steps = _step_losses(x, y, table, kernel, bias)
    valid = x != 0
    expected = steps[valid].mean()
    assert abs(expected - steps.mean()) > 0.1  # the padding would show
    assert model.evaluate(x, y, verbose=0, return_dict=True)["loss"] == \
        pytest.approx(expected, rel=1e-5)
    assert model.fit(x, y, batch_size=2, verbose=0).history["loss"][0] == \
        pytest.approx(expected, rel=1e-5)
    # with per-sample weights too: sum(loss * mask * w) / valid steps (Keras's apply_mask),
    # and the weighted metric: sum(loss * mask * w) / sum(mask * w)
    w = np.array([1.0, 3.0], np.float32)
    logs = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    weighted = steps * valid * w[:, None]
    assert logs["loss"] == pytest.approx(weighted.sum() / valid.sum(), rel=1e-5)
    assert logs["wce"] == pytest.approx(weighted.sum() / (valid * w[:, None]).sum(),
                                        rel=1e-5)


def test_masking_layer_masks_the_compiled_loss():
    inputs = keras.Input((3, 1))
    dense = keras.layers.Dense(1, use_bias=False)
    model = keras.Model(inputs, dense(keras.layers.Masking(0.0)(inputs)))
    dense.set_weights([np.array([[2.0]], np.float32)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.array([[[1.0], [2.0], [0.0]], [[3.0], [0.0], [0.0]]], np.float32)
    y = np.array([[[1.0], [1.0], [5.0]], [[4.0], [7.0], [7.0]]], np.float32)
    # unmasked steps: (2-1)^2, (4-1)^2, (6-4)^2 -> (1 + 9 + 4) / 3
    assert model.evaluate(x, y, verbose=0) == pytest.approx(14.0 / 3.0, rel=1e-6)


# ------------------------------------- Normalization broadcasts a scalar mean and variance

def test_normalization_with_scalar_mean_and_variance():
    x = np.array([[1.0, 3.0, 5.0], [-1.0, 0.0, 9.0]], np.float32)
    y = keras.layers.Normalization(mean=1.0, variance=4.0)(x)
    np.testing.assert_allclose(y.numpy(), (x - 1.0) / 2.0)
    back = keras.layers.Normalization(mean=1.0, variance=4.0, invert=True)(x)
    np.testing.assert_allclose(back.numpy(), x * 2.0 + 1.0)


def test_normalization_with_per_feature_values_and_config():
    layer = keras.layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 1.0])
    x = np.array([[1.0, 3.0], [5.0, 0.0]], np.float32)
    np.testing.assert_allclose(layer(x).numpy(), [[0.0, 1.0], [2.0, -2.0]])
    again = keras.layers.Normalization.from_config(layer.get_config())
    np.testing.assert_allclose(again(x).numpy(), [[0.0, 1.0], [2.0, -2.0]])
