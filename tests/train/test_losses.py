"""Losses against NumPy transcriptions of Keras's definitions: values (probabilities and
logits, label smoothing), derivatives against finite differences in float64, edge cases
(0-d, a batch of one, higher rank), shape errors, and the class forms' reductions."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

EPS = 1e-7


def _log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def mse_ref(t, p):
    return ((p - t) ** 2).mean(-1)


def mae_ref(t, p):
    return np.abs(p - t).mean(-1)


def cce_ref(t, p, from_logits=False, label_smoothing=0.0):
    if label_smoothing:
        t = t * (1 - label_smoothing) + label_smoothing / t.shape[-1]
    if from_logits:
        return -(t * _log_softmax(p)).sum(-1)
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return -(t * np.log(p)).sum(-1)


def scce_ref(labels, p, from_logits=False):
    logits = p if from_logits else np.log(np.clip(p, EPS, 1 - EPS))
    ls = _log_softmax(logits)
    return -np.take_along_axis(ls, labels[..., None].astype(int), -1)[..., 0]


def bce_ref(t, p, from_logits=False, label_smoothing=0.0):
    if label_smoothing:
        t = t * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        e = np.maximum(p, 0) - p * t + np.log1p(np.exp(-np.abs(p)))
    else:
        q = np.clip(p, EPS, 1 - EPS)  # Keras 3: clip, then the logs (no EPS inside them)
        e = -(t * np.log(q) + (1 - t) * np.log(1 - q))
    return e.mean(-1)


def huber_ref(t, p, delta=1.0):
    e = p - t
    a = np.abs(e)
    return np.where(a <= delta, 0.5 * e * e, delta * a - 0.5 * delta * delta).mean(-1)


def _probs(rng, shape):
    x = rng.uniform(0.05, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _onehot(rng, shape):
    return np.eye(shape[-1])[rng.integers(0, shape[-1], shape[:-1])]


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3), (1, 5), (2, 3, 4)], ids=["batch", "batch1", "rank3"])
def test_regression_losses(dtype, shape):
    rng = np.random.default_rng(0)
    t, p = rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12)
    for fn, ref in [(tf.losses.mean_squared_error, mse_ref), (tf.losses.MSE, mse_ref),
                    (tf.losses.mse, mse_ref), (tf.losses.mean_absolute_error, mae_ref),
                    (tf.losses.MAE, mae_ref), (tf.losses.mae, mae_ref),
                    (tf.losses.huber, huber_ref)]:
        got = fn(t, p)
        assert got.shape == shape[:-1] and got.dtype == tf.as_dtype(dtype)
        np.testing.assert_allclose(got.numpy(), ref(t, p), **tol)
    for delta in [0.3, 2.5]:
        np.testing.assert_allclose(tf.losses.huber(t, p, delta=delta).numpy(),
                                   huber_ref(t, p, delta), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3), (1, 5), (2, 3, 4)], ids=["batch", "batch1", "rank3"])
def test_crossentropies(dtype, shape):
    rng = np.random.default_rng(1)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12)
    probs = _probs(rng, shape).astype(dtype)
    logits = rng.normal(size=shape).astype(dtype) * 3
    onehot = _onehot(rng, shape).astype(dtype)
    labels = onehot.argmax(-1)
    for smoothing in [0.0, 0.2]:
        np.testing.assert_allclose(
            tf.losses.categorical_crossentropy(onehot, probs, label_smoothing=smoothing).numpy(),
            cce_ref(onehot, probs, label_smoothing=smoothing), **tol)
        np.testing.assert_allclose(
            tf.losses.categorical_crossentropy(onehot, logits, from_logits=True,
                                               label_smoothing=smoothing).numpy(),
            cce_ref(onehot, logits, True, smoothing), **tol)
    # unnormalized probabilities are renormalized, as Keras does
    np.testing.assert_allclose(tf.losses.categorical_crossentropy(onehot, 3 * probs).numpy(),
                               cce_ref(onehot, probs), **tol)
    for lab in [labels, labels[..., None], labels.astype(dtype)]:
        got = tf.losses.sparse_categorical_crossentropy(lab, probs)
        assert got.shape == shape[:-1]
        np.testing.assert_allclose(got.numpy(), scce_ref(labels, probs), **tol)
        np.testing.assert_allclose(
            tf.losses.sparse_categorical_crossentropy(lab, logits, from_logits=True).numpy(),
            scce_ref(labels, logits, True), **tol)
    binary = rng.uniform(0, 1, shape).astype(dtype)
    p01 = rng.uniform(0.01, 0.99, shape).astype(dtype)
    for smoothing in [0.0, 0.1]:
        np.testing.assert_allclose(
            tf.losses.binary_crossentropy(binary, p01, label_smoothing=smoothing).numpy(),
            bce_ref(binary, p01, label_smoothing=smoothing), **tol)
        np.testing.assert_allclose(
            tf.losses.binary_crossentropy(binary, logits, from_logits=True,
                                          label_smoothing=smoothing).numpy(),
            bce_ref(binary, logits, True, smoothing), **tol)


def test_probabilities_are_clipped():
    t = np.array([[1.0, 0.0, 0.0]])
    p = np.array([[0.0, 0.5, 0.5]])
    np.testing.assert_allclose(tf.losses.categorical_crossentropy(t, p).numpy(),
                               [-np.log(EPS)], rtol=1e-6)
    np.testing.assert_allclose(tf.losses.sparse_categorical_crossentropy([0], p).numpy(),
                               scce_ref(np.array([0]), p), rtol=1e-10)
    assert np.isfinite(tf.losses.sparse_categorical_crossentropy([0], p).numpy()).all()
    bce = tf.losses.binary_crossentropy(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])).numpy()
    np.testing.assert_allclose(bce, bce_ref(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])))
    assert np.isfinite(bce).all()
    # large logits stay finite
    big = tf.losses.binary_crossentropy([[1.0, 0.0]], [[-500.0, 500.0]], from_logits=True)
    np.testing.assert_allclose(big.numpy(), [500.0])
    cce = tf.losses.categorical_crossentropy([[1.0, 0.0]], [[-400.0, 400.0]], from_logits=True)
    np.testing.assert_allclose(cce.numpy(), [800.0])


def test_known_values():
    np.testing.assert_allclose(tf.losses.mean_squared_error([[0.0, 1.0]], [[1.0, 1.0]]), [0.5])
    np.testing.assert_allclose(tf.losses.huber([[0.0, 0.0]], [[0.5, 3.0]]), [1.3125])
    np.testing.assert_allclose(
        tf.losses.sparse_categorical_crossentropy([1], [[0.5, 0.5]]), [np.log(2)], rtol=1e-6)


# --------------------------------------------------------------------------- edge cases


def test_zero_d_and_one_d_inputs():
    # 0-d: one example, nothing to reduce; 1-D: the last axis is reduced (as Keras)
    assert tf.losses.mean_squared_error(1.0, 3.0).numpy() == 4.0
    assert tf.losses.mean_absolute_error(1.0, 3.0).numpy() == 2.0
    assert tf.losses.huber(0.0, 3.0).numpy() == 2.5
    np.testing.assert_allclose(tf.losses.binary_crossentropy(1.0, 0.5).numpy(), -np.log(0.5 + EPS),
                               rtol=1e-6)
    one = tf.losses.mean_squared_error([1.0, 2.0], [2.0, 2.0])
    assert one.shape == () and one.numpy() == 0.5
    with pytest.raises(ValueError, match="class axis"):
        tf.losses.categorical_crossentropy(1.0, 0.5)
    with pytest.raises(ValueError, match="class axis"):
        tf.losses.sparse_categorical_crossentropy(0, 0.5)


def test_integer_labels_are_cast():
    got = tf.losses.mean_squared_error(tf.constant([[1, 2]]), tf.constant([[1.5, 2.0]]))
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), [0.125])
    got = tf.losses.categorical_crossentropy(tf.constant([[0, 1]]), [[0.25, 0.75]])
    np.testing.assert_allclose(got.numpy(), [-np.log(0.75)], rtol=1e-6)


def test_mismatched_shapes_raise():
    with pytest.raises(tf.errors.InvalidArgumentError, match="mean_squared_error"):
        tf.losses.mean_squared_error(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="huber"):
        tf.losses.huber(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"categorical_crossentropy.*\[4, 3\].*\[4, 2\]"):
        tf.losses.categorical_crossentropy(np.zeros((4, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="binary_crossentropy"):
        tf.losses.binary_crossentropy(np.zeros((4, 1)), np.ones((4, 2)) / 2)
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        tf.losses.sparse_categorical_crossentropy(np.zeros((3,)), np.ones((4, 2)) / 2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.losses.sparse_categorical_crossentropy([2], [[0.5, 0.5]])  # label out of range
    with pytest.raises(tf.errors.InvalidArgumentError, match="floating"):
        tf.losses.mean_squared_error([1], [2])


# --------------------------------------------------------------------------- derivatives


def _check(f, *args, order=2):
    tf.test.check_gradients(f, [np.asarray(a, np.float64) for a in args], order=order,
                            rtol=1e-5, atol=1e-7)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    t, p = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    _check(tf.losses.mean_squared_error, t, p)
    _check(tf.losses.mean_absolute_error, t, p + 0.1 * np.sign(p - t), order=1)
    e = rng.uniform(0.2, 0.8, (3, 4)) * rng.choice([-1, 1], (3, 4))
    e[0, :2] = [1.7, -2.4]  # both branches, away from the kink at |e| = delta
    _check(lambda a, b: tf.losses.huber(a, b), t, t + e, order=1)
    onehot, probs, logits = _onehot(rng, (3, 4)), _probs(rng, (3, 4)), rng.normal(size=(3, 4))
    _check(tf.losses.categorical_crossentropy, onehot, probs)
    _check(lambda a, b: tf.losses.categorical_crossentropy(a, b, from_logits=True,
                                                           label_smoothing=0.1),
           onehot, logits)
    labels = tf.constant(onehot.argmax(-1))
    _check(lambda b: tf.losses.sparse_categorical_crossentropy(labels, b), probs)
    _check(lambda b: tf.losses.sparse_categorical_crossentropy(labels, b, from_logits=True),
           logits)
    binary = rng.uniform(0, 1, (3, 4))
    _check(tf.losses.binary_crossentropy, binary, rng.uniform(0.1, 0.9, (3, 4)))
    _check(lambda a, b: tf.losses.binary_crossentropy(a, b, from_logits=True), binary, logits)


def test_gradient_values():
    """d mean((p - t)²)/dp = 2 (p - t) / n, and the softmax cross-entropy's logits
    gradient is softmax - labels."""
    rng = np.random.default_rng(6)
    t, p = tf.constant(rng.normal(size=(2, 5))), tf.constant(rng.normal(size=(2, 5)))
    with tf.GradientTape() as tape:
        tape.watch(p)
        loss = tf.reduce_sum(tf.losses.mean_squared_error(t, p))
    np.testing.assert_allclose(tape.gradient(loss, p).numpy(), 2 * (p.numpy() - t.numpy()) / 5)
    onehot = tf.constant(_onehot(rng, (2, 5)))
    with tf.GradientTape() as tape:
        tape.watch(p)
        loss = tf.reduce_sum(tf.losses.categorical_crossentropy(onehot, p, from_logits=True))
    soft = np.exp(_log_softmax(p.numpy()))
    np.testing.assert_allclose(tape.gradient(loss, p).numpy(), soft - onehot.numpy(),
                               rtol=1e-10, atol=1e-12)


def test_traced_losses_equal_eager():
    rng = np.random.default_rng(7)
    t, p = tf.constant(_onehot(rng, (3, 4))), tf.constant(_probs(rng, (3, 4)))
    for fn in [tf.losses.mean_squared_error, tf.losses.categorical_crossentropy,
               tf.losses.binary_crossentropy, tf.losses.huber]:
        np.testing.assert_allclose(tf.function(fn)(t, p).numpy(), fn(t, p).numpy(),
                                   rtol=1e-12)


# --------------------------------------------------------------------------- classes


CLASSES = [
    (tf.losses.MeanSquaredError, {}, mse_ref, "regression"),
    (tf.losses.MeanAbsoluteError, {}, mae_ref, "regression"),
    (tf.losses.Huber, {"delta": 0.5}, lambda t, p: huber_ref(t, p, 0.5), "regression"),
    (tf.losses.CategoricalCrossentropy, {"from_logits": True, "label_smoothing": 0.1},
     lambda t, p: cce_ref(t, p, True, 0.1), "onehot"),
    (tf.losses.SparseCategoricalCrossentropy, {"from_logits": True},
     lambda t, p: scce_ref(t, p, True), "labels"),
    (tf.losses.BinaryCrossentropy, {"from_logits": True}, lambda t, p: bce_ref(t, p, True),
     "binary"),
]


@pytest.mark.parametrize("cls,kw,ref,kind", CLASSES, ids=[c[0].__name__ for c in CLASSES])
def test_loss_classes_reduce(cls, kw, ref, kind):
    rng = np.random.default_rng(8)
    p = rng.normal(size=(4, 3))
    t = {"regression": rng.normal(size=(4, 3)), "onehot": _onehot(rng, (4, 3)),
         "labels": rng.integers(0, 3, 4), "binary": rng.uniform(0, 1, (4, 3))}[kind]
    per = ref(t, p)
    w = np.array([0.5, 1.0, 0.0, 2.0])
    default = cls(**kw)
    assert isinstance(default, tf.losses.Loss)
    # float64 inputs: a loss object computes in floatx (float32), as Keras 3's does
    assert default(t, p).dtype == tf.float32
    tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(default(t, p).numpy(), per.mean(), **tol)
    np.testing.assert_allclose(cls(reduction="sum", **kw)(t, p).numpy(), per.sum(), **tol)
    np.testing.assert_allclose(cls(reduction="none", **kw)(t, p).numpy(), per, **tol)
    np.testing.assert_allclose(cls(reduction="auto", **kw)(t, p).numpy(), per.mean(), **tol)
    np.testing.assert_allclose(default(t, p, sample_weight=w).numpy(), (per * w).sum() / 4,
                               **tol)
    np.testing.assert_allclose(default(t, p, sample_weight=w[:, None]).numpy(),
                               (per * w).sum() / 4, **tol)
    np.testing.assert_allclose(default(t, p, sample_weight=2.0).numpy(), 2 * per.mean(),
                               **tol)
    with pytest.raises(ValueError, match="reduction"):
        cls(reduction="avg", **kw)  # "mean" is one of Keras 3's names


def test_loss_class_names_and_config():
    assert tf.losses.MeanSquaredError().name == "mean_squared_error"
    assert tf.losses.Huber().name == "huber_loss"
    cfg = tf.losses.CategoricalCrossentropy(from_logits=True).get_config()
    assert cfg["from_logits"] is True and cfg["reduction"] == "sum_over_batch_size"


def test_losses_accept_traced_unknown_batch_against_static_labels():
    labels = tf.one_hot([1, 2, 0, 1], 3)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def loss(logits):
        return tf.losses.categorical_crossentropy(labels, logits, from_logits=True)

    logits = np.array([[0.0, 1.0, 2.0]] * 4, np.float32)
    np.testing.assert_allclose(
        loss(tf.constant(logits)).numpy(),
        tf.losses.categorical_crossentropy(labels, logits, from_logits=True).numpy(),
        rtol=1e-6)
    with pytest.raises(ValueError, match=r"categorical_crossentropy.*\[4, 3\].*\[None, 2\]"):
        tf.function(lambda p: tf.losses.categorical_crossentropy(labels, p),
                    input_signature=[tf.TensorSpec([None, 2], tf.float32)])(tf.ones([4, 2]))
