"""Keras 3's losses beyond the cross-entropies: focal, hinge, KL, log-cosh, MAPE, MSLE,
Poisson, cosine, Dice, Tversky; every reduction, sample weights, edge cases, names, configs
and gradients. Expected values come from real Keras 3 (keras_losses_more.json, written by
fixtures/make_losses_more.py)."""
import json
import os

import numpy as np
import pytest

import tapeflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "keras_losses_more.json")) as f:
    KERAS = json.load(f)

REDUCTIONS = ["sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None]
WEIGHTS = np.array([0.5, 2.0, 0.0, 1.0], np.float32)
TOL = dict(rtol=2e-5, atol=2e-6)
L = tf.keras.losses

FUNCTIONS = {
    "BinaryFocalCrossentropy": L.binary_focal_crossentropy,
    "CategoricalFocalCrossentropy": L.categorical_focal_crossentropy,
    "Hinge": L.hinge, "SquaredHinge": L.squared_hinge, "CategoricalHinge": L.categorical_hinge,
    "KLDivergence": L.kl_divergence, "LogCosh": L.log_cosh,
    "MeanAbsolutePercentageError": L.mean_absolute_percentage_error,
    "MeanSquaredLogarithmicError": L.mean_squared_logarithmic_error, "Poisson": L.poisson,
    "CosineSimilarity": L.cosine_similarity, "Dice": L.dice, "Tversky": L.tversky}


@pytest.mark.parametrize("case", sorted(KERAS["cases"]))
def test_loss_matches_keras_for_every_reduction(case):
    rec = KERAS["cases"][case]
    cls = getattr(L, rec["class"])
    y_true, y_pred = np.array(rec["y_true"], np.float32), np.array(rec["y_pred"], np.float32)
    np.testing.assert_allclose(FUNCTIONS[rec["class"]](y_true, y_pred, **rec["kwargs"]),
                               rec["function"], **TOL)
    for red in REDUCTIONS:
        expect = rec["reductions"][str(red)]
        loss = cls(reduction=red, **rec["kwargs"])
        np.testing.assert_allclose(loss(y_true, y_pred).numpy(), expect["plain"], **TOL)
        if expect["weighted"] is not None:
            got = loss(y_true, y_pred, sample_weight=WEIGHTS).numpy()
            np.testing.assert_allclose(got, expect["weighted"], **TOL)


@pytest.mark.parametrize("case", sorted(KERAS["cases"]))
def test_loss_config_as_keras_and_round_trip(case):
    rec = KERAS["cases"][case]
    cls = getattr(L, rec["class"])
    config = cls(**rec["kwargs"]).get_config()
    assert config == rec["config"]
    again = cls.from_config(config)
    assert again.get_config() == config


@pytest.mark.parametrize("name", sorted(KERAS["edge"]))
def test_loss_edge_cases_as_keras(name):
    """[N] labels with [N, 1] predictions (element by element), (N,) weights on them,
    all-zero inputs, perfect predictions and an empty batch."""
    rec, cls = KERAS["edge"][name], getattr(L, name)
    t1 = np.array([1.0, 0.0, 1.0], np.float32)
    p1 = np.array([[0.8], [0.3], [0.6]], np.float32)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cls()(t1, p1).numpy(), rec["rank_mismatch"], **tol)
    np.testing.assert_allclose(
        cls(reduction="none")(t1, p1, sample_weight=np.array([1.0, 2.0, 3.0])).numpy(),
        rec["rank_mismatch_weighted"], **tol)
    zeros = np.zeros((2, 3), np.float32)
    np.testing.assert_allclose(cls()(zeros, zeros).numpy(), rec["zeros"], **tol)
    binary = np.array(KERAS["cases"]["dice"]["y_true"], np.float32)
    np.testing.assert_allclose(cls()(binary, binary).numpy(), rec["perfect"], **tol)
    empty = cls()(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert list(empty.shape) == rec["empty"]


def test_get_gives_keras_names():
    for name, kind in KERAS["names"].items():
        got = L.get(name)
        if kind[0].isupper():
            assert type(got).__name__ == kind, name
        else:
            assert got is getattr(L, kind), name


def test_invalid_reduction_is_a_value_error():
    with pytest.raises(ValueError, match="reduction"):
        L.Hinge(reduction="avg")


def test_mean_with_sample_weight_divides_by_the_weights():
    # closed form: sum(w * per) / sum(w)
    t = np.array([[0.0], [1.0], [2.0]], np.float32)
    p = np.array([[1.0], [1.0], [4.0]], np.float32)
    w = np.array([1.0, 3.0, 0.5], np.float32)
    per = (p - t)[:, 0] ** 2
    got = L.MeanSquaredError(reduction="mean_with_sample_weight")(t, p, sample_weight=w)
    np.testing.assert_allclose(got.numpy(), (w * per).sum() / w.sum(), rtol=1e-6)
    zero = L.MeanSquaredError(reduction="mean_with_sample_weight")(t, p, sample_weight=0 * w)
    assert float(zero) == 0.0  # divide_no_nan


def test_focal_loss_takes_the_logits_of_a_sigmoid_output():
    # a saturated sigmoid: Keras computes the cross-entropy from the carried logits
    x = tf.constant([[30.0, -30.0]])
    probs = tf.keras.activations.sigmoid(x)
    got = L.binary_focal_crossentropy([[0.0, 1.0]], probs, gamma=0.0)
    np.testing.assert_allclose(got.numpy(), [30.0], rtol=1e-5)


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("name,kw,kind", [
    ("binary_focal_crossentropy", {"apply_class_balancing": True}, "binary"),
    ("binary_focal_crossentropy", {"from_logits": True}, "binary_logits"),
    ("categorical_focal_crossentropy", {}, "onehot"),
    ("categorical_focal_crossentropy", {"from_logits": True}, "onehot_logits"),
    ("hinge", {}, "binary_logits"), ("squared_hinge", {}, "binary_logits"),
    ("categorical_hinge", {}, "onehot_logits"), ("kl_divergence", {}, "onehot"),
    ("log_cosh", {}, "regression"), ("mean_absolute_percentage_error", {}, "regression"),
    ("mean_squared_logarithmic_error", {}, "positive"), ("poisson", {}, "positive"),
    ("cosine_similarity", {}, "regression"), ("dice", {}, "binary"),
    ("tversky", {"alpha": 0.3, "beta": 0.7}, "binary")])
def test_loss_gradient_matches_central_differences(name, kw, kind):
    rng = np.random.default_rng(5)
    if kind.startswith("onehot"):
        t = np.eye(3)[[0, 2, 1]]
    elif kind.startswith("binary"):
        t = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    else:
        t = rng.uniform(0.5, 2.0, (3, 3))
    if kind.endswith("logits") or kind == "regression":
        p = rng.normal(0.3, 1.0, (3, 3))
    elif kind == "onehot":
        p = rng.uniform(0.1, 0.9, (3, 3))
        p /= p.sum(-1, keepdims=True)
    else:
        p = rng.uniform(0.1, 0.9, (3, 3))
    fn = getattr(L, name)

    def total(v):
        return float(tf.reduce_sum(fn(tf.constant(t), tf.constant(v), **kw)))
    x = tf.Variable(p)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(tf.constant(t), x, **kw))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _numeric_grad(total, p),
                               rtol=1e-5, atol=1e-7)


def test_losses_trace_with_an_unknown_batch():
    rng = np.random.default_rng(3)
    t = (rng.uniform(size=(3, 4)) > 0.5).astype(np.float32)
    p = rng.uniform(size=(3, 4)).astype(np.float32)

    def total(t, p):
        weight = tf.ones([tf.shape(t)[0]])
        return (L.Tversky()(t, p) + L.BinaryFocalCrossentropy()(t, p)
                + L.Hinge(reduction="mean_with_sample_weight")(t, p, sample_weight=weight)
                + L.LogCosh(reduction="mean")(t, p))
    spec = tf.TensorSpec([None, 4], tf.float32)
    traced = tf.function(total, input_signature=[spec, spec])
    np.testing.assert_allclose(float(traced(t, p)), float(total(t, p)), rtol=1e-6)


# Keras 3.15: rng = np.random.default_rng(7)
# logits = np.round(rng.normal(0, 1.5, (4, 6, 4)), 2).astype(np.float32)
# labels = [[1, 2, 0], [3, 3, 0], [1, 2, 3], [0, 0, 0]]; keras.losses.ctc(labels, logits)
CTC_PER_EXAMPLE = [8.581259727478027, 6.34344482421875, 4.412284851074219, 12.58639907836914]
CTC_MEAN = 7.980847358703613  # keras.losses.CTC()(labels, logits)
CTC_WEIGHTED_SUM = 20.577552795410156  # CTC(reduction="sum"), weights [1, .5, 2, 0]


def test_ctc_matches_keras():
    logits = np.round(np.random.default_rng(7).normal(0, 1.5, (4, 6, 4)), 2).astype(
        np.float32)
    labels = np.array([[1, 2, 0], [3, 3, 0], [1, 2, 3], [0, 0, 0]], np.int32)
    np.testing.assert_allclose(L.ctc(labels, logits).numpy(), CTC_PER_EXAMPLE, rtol=1e-5)
    np.testing.assert_allclose(float(L.CTC()(labels, logits)), CTC_MEAN, rtol=1e-5)
    got = L.CTC(reduction="sum")(labels, logits, sample_weight=np.array([1.0, 0.5, 2.0, 0.0]))
    np.testing.assert_allclose(float(got), CTC_WEIGHTED_SUM, rtol=1e-5)
    assert L.CTC().get_config() == {"name": "ctc", "reduction": "sum_over_batch_size"}
    assert isinstance(L.get("CTC"), L.CTC) and L.get("ctc") is L.ctc
    # one label, two uniform steps: paths "1 1", "1 _", "_ 1" of 4: -log(3/4)
    np.testing.assert_allclose(L.ctc([[1]], np.zeros((1, 2, 2), np.float32)).numpy(),
                               [-np.log(0.75)], rtol=1e-6)
    with pytest.raises(ValueError, match="y_pred"):
        L.ctc(labels, logits[0])
    # gradient against central differences, float64
    x64 = logits[:2].astype(np.float64)

    def total(v):
        return float(tf.reduce_sum(L.ctc(labels[:2], tf.constant(v))))
    var = tf.Variable(x64)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(L.ctc(labels[:2], var))
    np.testing.assert_allclose(tape.gradient(y, var).numpy(), _numeric_grad(total, x64),
                               rtol=1e-5, atol=1e-7)
