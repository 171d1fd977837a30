"""Issue #30 ("wrong with no error"), losses and metrics: each test pins a value Keras 3
gives (its documented result or one worked out by hand) where tapeflow used to return a
different number without complaint."""
import numpy as np
import pytest

import tapeflow as tf

K = tf.keras


# --------------------------------------------------------------------------- losses


def test_regression_loss_functions_align_labels_n_with_predictions_n_1():
    # Keras 3's mse/mae/huber squeeze_or_expand_to_same_rank: [N] labels against [N, 1]
    # predictions compare element by element (they used to broadcast to [N, N])
    got = K.losses.mean_squared_error([0.0, 1.0], [[0.0], [1.0]])
    assert got.shape == (2,)
    np.testing.assert_allclose(got.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(K.losses.mae([0.0, 1.0], [[1.0], [1.0]]).numpy(), [1.0, 0.0])
    # huber, delta 1: 0.5 * 0.5² = 0.125; 1 * (3 - 0.5) = 2.5
    np.testing.assert_allclose(K.losses.huber([0.0, 0.0], [[0.5], [3.0]]).numpy(),
                               [0.125, 2.5])
    # the reverse ([N, 1] labels, [N] predictions) too
    np.testing.assert_allclose(K.losses.mse([[0.0], [1.0]], [0.0, 3.0]).numpy(), [0.0, 4.0])


def test_binary_crossentropy_function_still_requires_equal_ranks():
    # Keras 3's binary_crossentropy function does not align ranks (its backend op raises);
    # the BinaryCrossentropy object does
    with pytest.raises(ValueError):
        K.losses.binary_crossentropy([0.0, 1.0], [[0.2], [0.7]])
    expected = -(np.log(0.8) + np.log(0.7)) / 2
    np.testing.assert_allclose(float(K.losses.BinaryCrossentropy()([0.0, 1.0],
                                                                   [[0.2], [0.7]])),
                               expected, rtol=1e-6)


def test_binary_crossentropy_uses_keras3_formula():
    # Keras 3's documented example: [0.916, 0.714]
    got = K.losses.binary_crossentropy([[0.0, 1.0], [0.0, 0.0]], [[0.6, 0.4], [0.4, 0.6]])
    np.testing.assert_allclose(got.numpy(), [-(np.log(0.4) + np.log(0.4)) / 2,
                                             -(np.log(0.6) + np.log(0.4)) / 2], rtol=1e-6)
    np.testing.assert_allclose(got.numpy(), [0.916, 0.714], atol=1e-3)
    # saturated: clip to [1e-7, 1 - 1e-7] then the logs (no 1e-7 inside them, Keras 2's):
    # -log(1 - float32(1 - 1e-7)) = 15.942385, -log(1e-7) = 16.118095
    np.testing.assert_allclose(K.losses.binary_crossentropy([[0.0]], [[1.0]]).numpy(),
                               [15.942385], rtol=1e-6)
    np.testing.assert_allclose(K.losses.binary_crossentropy([[1.0]], [[0.0]]).numpy(),
                               [16.118095], rtol=1e-6)


def test_loss_objects_compute_in_float32_functions_keep_the_dtype():
    t = np.array([[0.0, 1.0]], np.float64)
    p = np.array([[0.5, 0.25]], np.float64)
    for cls in (K.losses.MeanSquaredError, K.losses.MeanAbsoluteError, K.losses.Huber,
                K.losses.BinaryCrossentropy, K.losses.CategoricalCrossentropy):
        got = cls()(t, p)
        assert got.dtype == tf.float32, cls
    np.testing.assert_allclose(float(K.losses.MeanSquaredError()(t, p)),
                               (0.25 + 0.5625) / 2, rtol=1e-7)
    assert K.losses.SparseCategoricalCrossentropy()(np.array([1]), p).dtype == tf.float32
    assert K.losses.mean_squared_error(t, p).dtype == tf.float64


# --------------------------------------------------------------------------- metrics


def _result(metric, *args, **kwargs) -> float:
    metric.update_state(*args, **kwargs)
    return float(metric.result())


def test_accuracy_metrics_align_labels_n_with_predictions_n_1():
    # used to broadcast to [N, N] and report about 0.5 where Keras reports 1.0
    assert _result(K.metrics.BinaryAccuracy(), [1.0, 0.0, 1.0, 0.0],
                   [[0.9], [0.2], [0.7], [0.1]]) == 1.0
    assert _result(K.metrics.Accuracy(), [1, 2, 3], [[1], [2], [3]]) == 1.0
    assert _result(K.metrics.Accuracy(), [[1], [2], [3]], [1, 2, 0]) == pytest.approx(2 / 3)
    # one miss in four, per-example weights [N] with [N, 1] predictions
    assert _result(K.metrics.BinaryAccuracy(), [1.0, 0.0, 1.0, 0.0],
                   [[0.9], [0.2], [0.3], [0.1]],
                   sample_weight=[1.0, 1.0, 2.0, 0.0]) == pytest.approx(2 / 4)


def test_binary_accuracy_function_is_element_wise():
    # Keras 3: one value per entry (the metric's mean averages them)
    got = K.metrics.binary_accuracy([[1.0, 0.0], [1.0, 1.0]], [[0.9, 0.8], [0.6, 0.2]])
    assert got.shape == (2, 2)
    np.testing.assert_array_equal(got.numpy(), [[1.0, 0.0], [1.0, 0.0]])
    assert _result(K.metrics.BinaryAccuracy(), [[1.0, 0.0], [1.0, 1.0]],
                   [[0.9, 0.8], [0.6, 0.2]]) == 0.5


def test_error_metrics_align_labels_n_with_predictions_n_1():
    # Keras: 0.0 (tapeflow used to give 0.5, the mean over the [N, N] broadcast)
    assert _result(K.metrics.MeanSquaredError(), [0.0, 1.0], [[0.0], [1.0]]) == 0.0
    # errors 1 and 0
    assert _result(K.metrics.MeanAbsoluteError(), [0.0, 1.0], [[1.0], [1.0]]) == 0.5
    # errors 2 and 1 squared: (4 + 1) / 2
    assert _result(K.metrics.MeanSquaredError(), [[0.0], [1.0]], [2.0, 2.0]) == 2.5


def test_confusion_metrics_take_n_weights_with_n_1_predictions():
    # labels [0, 1, 1, 0], scores [.9, .8, .2, .1], weights [1, 2, 3, 4]: at 0.5
    # FP = 1, TP = 2, FN = 3, TN = 4
    args = ([0, 1, 1, 0], [[0.9], [0.8], [0.2], [0.1]])
    w = [1.0, 2.0, 3.0, 4.0]
    assert _result(K.metrics.Precision(), *args, sample_weight=w) == pytest.approx(2 / 3)
    assert _result(K.metrics.Recall(), *args, sample_weight=w) == pytest.approx(2 / 5)
    # weighted share of (positive, negative) pairs ranked right: (2*4 + 3*4) / (5*5)
    assert _result(K.metrics.AUC(), *args, sample_weight=w) == pytest.approx(0.8, abs=1e-6)
    # [N, 1] weights too
    assert _result(K.metrics.Recall(), *args,
                   sample_weight=np.array(w)[:, None]) == pytest.approx(2 / 5)


def test_top_k_accuracy_with_n_1_labels_and_sequence_scores():
    scores = [[0.1, 0.9, 0.0], [0.2, 0.3, 0.5]]
    got = K.metrics.sparse_top_k_categorical_accuracy([[1], [0]], scores, k=1)
    np.testing.assert_array_equal(np.reshape(got.numpy(), -1), [1.0, 0.0])
    # [N, T] labels with [N, T, classes] scores: each label with its own row (they used to
    # broadcast against every row)
    got = K.metrics.sparse_top_k_categorical_accuracy([[1], [0]], [[s] for s in scores], k=1)
    assert got.shape == (2, 1)
    np.testing.assert_array_equal(got.numpy(), [[1.0], [0.0]])
    got = K.metrics.top_k_categorical_accuracy([[[0, 1, 0]], [[1, 0, 0]]],
                                               [[s] for s in scores], k=2)
    np.testing.assert_array_equal(got.numpy(), [[1.0], [0.0]])
    assert _result(K.metrics.SparseTopKCategoricalAccuracy(k=1), [[1], [0]], scores) == 0.5


def test_losses_get_gives_what_keras_3_gives():
    fn = tf.keras.losses.get("mse")
    np.testing.assert_allclose(fn([[0.0], [1.0]], [[1.0], [1.0]]).numpy(), [1.0, 0.0])
    assert fn is tf.keras.losses.get("mean_squared_error")
    assert isinstance(tf.keras.losses.get("MeanSquaredError"), tf.keras.losses.MeanSquaredError)
    loss = tf.keras.losses.Huber()
    assert tf.keras.losses.get(loss) is loss and tf.keras.losses.get(None) is None
    with pytest.raises(ValueError, match="Unknown loss 'msq'"):
        tf.keras.losses.get("msq")
    # compile still reduces a named function, and "accuracy" follows the named loss
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Softmax()])
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]], "float32")
    logs = model.evaluate(x, np.array([0, 1, 1]), return_dict=True, verbose=0)
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    want = -np.mean(np.log(p[[0, 1, 2], [0, 1, 1]]))
    assert logs["loss"] == pytest.approx(want, rel=1e-5)
    assert logs["accuracy"] == pytest.approx(2 / 3)


def test_cross_entropies_of_keras_softmax_and_sigmoid_outputs_use_their_logits():
    """Keras 3 (TensorFlow backend): a softmax/sigmoid output carries its logits, and the
    cross-entropies use them, so a saturated output keeps its exact loss and gradient."""
    keras = tf.keras
    logits = tf.Variable([[30.0, -30.0]])
    with tf.GradientTape() as tape:
        loss = keras.losses.CategoricalCrossentropy()([[0.0, 1.0]],
                                                      keras.activations.softmax(logits))
    assert float(loss) == pytest.approx(60.0)  # Keras 3's value; clipped: 16.1
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), [[1.0, -1.0]], atol=1e-6)
    sparse = keras.losses.SparseCategoricalCrossentropy()([1], keras.layers.Softmax()(logits))
    assert float(sparse) == pytest.approx(60.0)
    dense = keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones",
                               bias_initializer="zeros")
    out = dense(tf.constant([[40.0]]))
    assert float(keras.losses.BinaryCrossentropy()([[0.0]], out)) == pytest.approx(40.0)
    # from_logits=True on such an output warns (as Keras) and still uses the logits
    with pytest.warns(UserWarning, match="from_logits=True"):
        again = keras.losses.categorical_crossentropy(
            [[0.0, 1.0]], keras.activations.softmax(logits), from_logits=True)
    assert float(again[0]) == pytest.approx(60.0)
    # probabilities from elsewhere are clipped as before
    plain = keras.losses.categorical_crossentropy([[0.0, 1.0]], [[1.0, 0.0]])
    assert float(plain[0]) == pytest.approx(-np.log(1e-7), rel=1e-4)
