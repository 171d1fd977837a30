"""Keras 3's metrics beyond accuracy and cross-entropy: confusion counts, Precision and
Recall with top_k/class_id, AUC (ROC, PR, PRGAIN; interpolation, minoring, majoring;
multi_label, label_weights), the at-constraint metrics, IoU family, F-scores, R2,
regression, correlation, hinge, KL and Poisson metrics. Every case runs its batches (with
sample weights, (N,) weights on (N, 1) predictions) and compares the result, the config
and the state names with real Keras 3's (keras_metrics_more.json, written by
fixtures/make_metrics_more.py), then checks reset_state."""
import json
import os
import re

import numpy as np
import pytest

import tapeflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "keras_metrics_more.json")) as f:
    KERAS = json.load(f)
M = tf.keras.metrics


def _run(rec):
    metric = getattr(M, rec["class"])(**rec["kwargs"])
    for t, p, w in rec["batches"]:
        metric.update_state(np.array(t, np.float32), np.array(p, np.float32),
                            sample_weight=None if w is None else np.array(w, np.float32))
    return metric


@pytest.mark.filterwarnings("ignore:More independent predictors")  # (as Keras warns)
@pytest.mark.parametrize("case", sorted(KERAS))
def test_metric_matches_keras(case):
    rec = KERAS[case]
    metric = _run(rec)
    np.testing.assert_allclose(np.asarray(metric.result()), rec["result"], rtol=2e-5,
                               atol=2e-6)
    assert [v.name.split("/")[-1].split(":")[0] for v in metric.variables] == \
        rec["variables"]
    config = metric.get_config()
    assert set(config) == set(rec["config"])
    for key, value in rec["config"].items():
        if key == "dtype":
            assert str(config[key]) == str(value)
        elif key == "name":  # (Keras numbered the later instances: "recall_2")
            assert config[key] == re.sub(r"_\d+$", "", value)
        elif key == "thresholds" and value is not None and case.startswith("auc"):
            np.testing.assert_allclose(config[key], value, rtol=1e-6)
        else:
            assert config[key] == value, key
    metric.reset_state()
    np.testing.assert_allclose(np.asarray(metric.result()), rec["after_reset"], rtol=1e-6)


@pytest.mark.parametrize("case", ["auc", "precision_thresholds", "iou", "r2", "f1",
                                  "rmse", "pearson"])
def test_metric_round_trips_through_config(case):
    rec = KERAS[case]
    cls = getattr(M, rec["class"])
    again = cls(**_run(rec).get_config())
    for t, p, w in rec["batches"]:
        again.update_state(np.array(t, np.float32), np.array(p, np.float32),
                           sample_weight=None if w is None else np.array(w, np.float32))
    np.testing.assert_allclose(np.asarray(again.result()), rec["result"], rtol=2e-5,
                               atol=2e-6)


def test_metric_get_names():
    for name, cls in [("rmse", None), ("root_mean_squared_error", M.RootMeanSquaredError),
                      ("r2_score", M.R2Score), ("f1_score", M.F1Score),
                      ("pearson_correlation", M.PearsonCorrelation), ("mape",
                      M.MeanAbsolutePercentageError), ("kld", M.KLDivergence),
                      ("log_cosh_error", M.LogCoshError), ("AUC", M.AUC),
                      ("RootMeanSquaredError", M.RootMeanSquaredError),
                      ("true_positives", M.TruePositives)]:
        if cls is None:
            with pytest.raises(ValueError):
                M.get(name)
        else:
            assert isinstance(M.get(name), cls), name


def test_closed_forms():
    # RootMeanSquaredError: sqrt(sum(w e²) / sum(w)) for per-example weights
    e = np.array([1.0, 2.0, 3.0])
    w = np.array([1.0, 0.0, 2.0])
    m = M.RootMeanSquaredError()
    m.update_state(np.zeros((3, 1)), e[:, None], sample_weight=w)
    np.testing.assert_allclose(float(m.result()), np.sqrt((w * e ** 2).sum() / w.sum()),
                               rtol=1e-6)
    # perfect predictions: R2 1, IoU 1, F1 1, AUC 1, concordance 1
    y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], np.float32)
    for metric, expect in [(M.R2Score(), 1.0), (M.F1Score(average="macro"), 1.0),
                           (M.AUC(), 1.0), (M.OneHotMeanIoU(2), 1.0),
                           (M.Precision(top_k=1), 1.0)]:
        metric.update_state(y, y)
        np.testing.assert_allclose(float(metric.result()), expect, atol=1e-5)
    # nothing seen: 0 (Keras's divide_no_nan), AUC 0
    for metric in [M.TruePositives(), M.Precision(), M.AUC(curve="PR"), M.MeanIoU(2),
                   M.PrecisionAtRecall(0.5), M.RootMeanSquaredError(), M.Hinge()]:
        assert float(metric.result()) == 0.0, type(metric).__name__


def test_masked_predictions_weigh_zero_in_mean_metrics():
    # as Keras's MeanMetricWrapper: a Keras mask on y_pred multiplies the sample weights
    y_true = tf.constant([[1.0, 2.0, 3.0]])
    y_pred = tf.constant([[1.0, 5.0, 9.0]])
    y_pred._keras_mask = tf.constant([[True, True, False]])
    mae = M.MeanMetricWrapper(lambda t, p: tf.abs(t - p))
    mae.update_state(y_true, y_pred)
    np.testing.assert_allclose(float(mae.result()), (0.0 + 3.0) / 2)
    mae.reset_state()
    mae.update_state(y_true, y_pred, sample_weight=[[2.0, 1.0, 5.0]])
    np.testing.assert_allclose(float(mae.result()), (0.0 + 3.0) / 3)


def test_errors_as_keras():
    with pytest.raises(ValueError, match="Threshold values must be in"):
        M.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match="class_id"):
        M.Precision(class_id=0).update_state([1.0, 0.0], [0.4, 0.9])
    with pytest.raises(ValueError, match="num_labels"):
        M.AUC(num_labels=3)
    with pytest.raises(ValueError, match="curve"):
        M.AUC(curve="XY")
    with pytest.raises(ValueError, match="beta"):
        M.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="2D"):
        M.R2Score().update_state([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="out of range"):
        M.IoU(num_classes=2, target_class_ids=[2])
    with pytest.raises(ValueError, match="recall"):
        M.PrecisionAtRecall(1.5)


def test_confusion_metric_updates_inside_a_traced_step():
    m = M.AUC(curve="PR")
    step = tf.function(lambda t, p: m.update_state(t, p))
    t = np.array(KERAS["auc_pr"]["batches"][0][0], np.float32)
    p = np.array(KERAS["auc_pr"]["batches"][0][1], np.float32)
    w = np.array(KERAS["auc_pr"]["batches"][0][2], np.float32)
    m2 = M.AUC(curve="PR")
    m2.update_state(t, p, sample_weight=w)
    step(t, p)
    eager = M.AUC(curve="PR")
    eager.update_state(t, p)
    np.testing.assert_allclose(float(m.result()), float(eager.result()), rtol=1e-6)
    np.testing.assert_allclose(float(m2.result()), KERAS["auc_pr"]["result"], rtol=2e-5)


def test_metric_functions_keras_lists():
    # `[n for n in dir(keras.metrics) if n[0].islower()]` in Keras 3.15, less get,
    # serialize, deserialize
    names = ["binary_accuracy", "binary_crossentropy", "binary_focal_crossentropy",
             "categorical_accuracy", "categorical_crossentropy",
             "categorical_focal_crossentropy", "categorical_hinge", "concordance_correlation",
             "hinge", "huber", "kl_divergence", "log_cosh", "mean_absolute_error",
             "mean_absolute_percentage_error", "mean_squared_error",
             "mean_squared_logarithmic_error", "pearson_correlation", "poisson",
             "sparse_categorical_accuracy", "sparse_categorical_crossentropy",
             "sparse_top_k_categorical_accuracy", "squared_hinge", "top_k_categorical_accuracy"]
    for name in names:
        assert callable(getattr(M, name)), name
    # keras.metrics.pearson_correlation([[1,2,3]], [[2,4,7]]) -> [0.99339914]
    np.testing.assert_allclose(M.pearson_correlation([[1., 2., 3.]], [[2., 4., 7.]]).numpy(),
                               [0.99339914], rtol=1e-5)
