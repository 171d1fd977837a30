"""`tf.keras.metrics`: stateful metrics (`update_state`, `result`, `reset_state`) whose
state lives in Variables, so they update inside a traced training step.

Example:
    >>> m = tf.keras.metrics.SparseCategoricalAccuracy()
    >>> m.update_state([1, 0], [[0.1, 0.9], [0.2, 0.8]])
    >>> float(m.result())
    0.5
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.variable import Variable
from ..distribute.strategy import get_replica_context, get_strategy, has_strategy
from ..ops.array import broadcast_to, expand_dims, reshape, shape, size, squeeze
from ..ops.creation import constant, one_hot, ones_like, zeros, zeros_like
from ..ops.indexing import gather, where
from ..ops.linalg import diag_part, matmul
from ..ops.math import (abs as abs_, cast, divide_no_nan, equal, greater, greater_equal,
                        is_inf, less, log, logical_and, maximum, minimum, not_equal, sigmoid,
                        sqrt, square)
from ..ops.reduction import (argmax, reduce_max, reduce_mean, reduce_std, reduce_sum,
                             reduce_variance, top_k)
from ..train.losses import (EPSILON, binary_crossentropy, binary_focal_crossentropy,
                            categorical_crossentropy, categorical_focal_crossentropy,
                            categorical_hinge, cosine_similarity, hinge, huber, kl_divergence,
                            log_cosh, mean_absolute_error, mean_absolute_percentage_error,
                            mean_squared_error, mean_squared_logarithmic_error, poisson,
                            same_rank, sparse_categorical_crossentropy, squared_hinge)
from ._distributed import combined_results, reading_combined, spans_workers

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "Precision", "Recall", "AUC", "TruePositives", "FalsePositives", "TrueNegatives",
           "FalseNegatives", "PrecisionAtRecall", "RecallAtPrecision",
           "SensitivityAtSpecificity", "SpecificityAtSensitivity", "IoU", "MeanIoU",
           "OneHotIoU", "OneHotMeanIoU", "BinaryIoU", "F1Score", "FBetaScore", "R2Score",
           "RootMeanSquaredError", "PearsonCorrelation", "ConcordanceCorrelation",
           "LogCoshError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "CosineSimilarity", "Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence",
           "Poisson", "get",
           # the per-example functions Keras 3 lists in keras.metrics
           "binary_accuracy", "binary_crossentropy", "binary_focal_crossentropy",
           "categorical_accuracy", "categorical_crossentropy", "categorical_focal_crossentropy",
           "categorical_hinge", "concordance_correlation", "hinge", "huber", "kl_divergence",
           "log_cosh", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_error", "mean_squared_logarithmic_error", "pearson_correlation",
           "poisson", "sparse_categorical_accuracy", "sparse_categorical_crossentropy",
           "sparse_top_k_categorical_accuracy", "squared_hinge", "top_k_categorical_accuracy"]


_AGGREGATIONS = ("sum", "mean", "only_first_replica", "none")


def _combined_across_workers(result):
    """`result` read as TensorFlow reads Keras's sync-on-read metric variables: in a
    cross-replica context of the multi-worker strategy the metric was made under, from
    every worker's states combined; inside that strategy's `run`, this replica's own."""
    @functools.wraps(result)
    def wrapper(self):
        strategy = getattr(self, "_strategy", None)
        if strategy is None or reading_combined() or not spans_workers(strategy):
            return result(self)
        replica = get_replica_context()
        if replica is not None and replica.strategy is strategy:
            return result(self)
        return combined_results([self], strategy)[0]
    wrapper._combines = True
    return wrapper


class Metric:
    """The base of stateful metrics: subclasses create Variables with `add_variable` and
    implement `update_state` and `result`.

    A metric made in the scope of a `MultiWorkerMirroredStrategy` of several workers keeps
    each worker's own state (as Keras's sync-on-read variables do); `result()` outside the
    strategy's `run` combines every worker's state (each variable by its `aggregation`,
    "sum" by default) in one all-reduce, so every worker reports the same value. Every
    worker must then read it alike, as with any collective.

    Example:
        >>> m = tf.keras.metrics.Mean(); m.update_state([1.0, 2.0]); float(m.result())
        1.5
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        result = cls.__dict__.get("result")
        if result is not None and not getattr(result, "_combines", False):
            cls.result = _combined_across_workers(result)

    def __init__(self, name: str | None = None, dtype=None):
        self.name = name or type(self).__name__.lower()
        self.dtype = _dt.as_dtype(dtype or _dt.float32)
        self._variables: list = []
        self._aggregations: list = []
        # the strategy whose scope the state was made in (None: plain variables)
        self._strategy = get_strategy() if has_strategy() else None

    def add_variable(self, name: str, shape=(), *, aggregation: str = "sum") -> Variable:
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"{type(self).__name__}.add_variable: invalid aggregation "
                             f"{aggregation!r} for variable {name!r}; expected one of "
                             f"{list(_AGGREGATIONS)}")
        if self._strategy is None and has_strategy():  # state made lazily in a scope
            self._strategy = get_strategy()
        # a callable initial value: a metric first used inside a trace is made eagerly
        v = Variable(lambda: zeros(list(shape), self.dtype), trainable=False,
                     name=f"{self.name}/{name}", dtype=self.dtype)
        self._variables.append(v)
        self._aggregations.append(aggregation)
        return v

    @property
    def variables(self) -> list:
        return list(self._variables)

    def reset_state(self) -> None:
        """Set every state variable back to zero."""
        for v in self._variables:
            v.assign(zeros(list(v.shape), self.dtype))

    def update_state(self, *args, **kwargs) -> None:
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        """Update the state and return the result."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


class _Reduce(Metric):
    """A (weighted) total and, for means, a count."""

    def __init__(self, name: str | None = None, dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_variable("total")
        self.count = self.add_variable("count")

    def update_state(self, values, sample_weight=None) -> None:
        values = cast(convert_to_tensor(values), self.dtype)
        if sample_weight is None:
            self.total.assign_add(reduce_sum(values))
            size = 1
            for d in values._shape:
                size *= d
            self.count.assign_add(cast(size, self.dtype))
            return
        weight = cast(convert_to_tensor(sample_weight), self.dtype)
        if weight.ndim == values.ndim + 1 and weight._shape[-1] == 1:
            weight = squeeze(weight, -1)
        while weight.ndim < values.ndim:  # per-example weights of per-entry values
            weight = reshape(weight, [*weight._shape, 1])
        weighted = values * weight
        self.total.assign_add(reduce_sum(weighted))
        self.count.assign_add(reduce_sum(weight * (values * 0.0 + 1.0)))


class Mean(_Reduce):
    """The (weighted) mean of the values seen.

    Example:
        >>> m = tf.keras.metrics.Mean(); m.update_state([1.0, 3.0]); float(m.result())
        2.0
    """

    def __init__(self, name: str = "mean", dtype=None):
        super().__init__(name, dtype)

    def result(self):
        return self.total / _maximum_one(self.count)


class Sum(_Reduce):
    """The (weighted) sum of the values seen."""

    def __init__(self, name: str = "sum", dtype=None):
        super().__init__(name, dtype)

    def result(self):
        return self.total.read_value()


def _maximum_one(count):
    # an empty mean is 0, as Keras's divide_no_nan gives
    return count + cast(equal(count, 0.0), count.dtype)


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred)` per example (Keras's MeanMetricWrapper)."""

    def __init__(self, fn, name: str | None = None, dtype=None, **kwargs):
        super().__init__(name or fn.__name__, dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        mask = getattr(y_pred, "_keras_mask", None)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None and mask.ndim == values.ndim:
            # as Keras's apply_mask with the "sum" reduction: masked entries weigh 0 (a
            # 0/1 mask, so a weight the compiled model already masked is unchanged)
            mask = cast(mask, self.dtype)
            if sample_weight is None:
                sample_weight = mask
            else:
                weight = cast(convert_to_tensor(sample_weight), self.dtype)
                mask, weight = same_rank(mask, weight)
                sample_weight = weight * mask
        super().update_state(values, sample_weight)


def accuracy(y_true, y_pred):
    """1.0 where `y_true == y_pred`, element-wise. Labels [N] and predictions [N, 1] (or
    the reverse) are lined up first (`same_rank`, Keras 3's squeeze_or_expand_to_same_rank),
    not broadcast to [N, N]."""
    y_pred = convert_to_tensor(y_pred)
    y_true, y_pred = same_rank(cast(y_true, y_pred.dtype), y_pred)
    return cast(equal(y_true, y_pred), _dt.float32)


def binary_accuracy(y_true, y_pred, threshold: float = 0.5):
    """1.0 where `y_pred > threshold` matches `y_true`, element-wise (Keras 3 no longer
    averages the last axis; the metric's mean does), ranks lined up as in `accuracy`."""
    y_pred = convert_to_tensor(y_pred)
    y_true, y_pred = same_rank(cast(y_true, y_pred.dtype), y_pred)
    return cast(equal(y_true, cast(greater(y_pred, threshold), y_true.dtype)), _dt.float32)


def categorical_accuracy(y_true, y_pred):
    """1.0 where the argmax of `y_pred` is the argmax of the one-hot `y_true`."""
    return cast(equal(argmax(y_true, axis=-1), argmax(y_pred, axis=-1)), _dt.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the argmax of `y_pred` is the integer label `y_true`."""
    y_true = convert_to_tensor(y_true)
    y_pred = convert_to_tensor(y_pred)
    if y_true.ndim == y_pred.ndim and y_true._shape[-1] == 1:
        y_true = squeeze(y_true, -1)
    return cast(equal(cast(y_true, _dt.int64), argmax(y_pred, axis=-1)), _dt.float32)


def _floats(y_pred):
    y_pred = convert_to_tensor(y_pred)
    return y_pred if y_pred.dtype.is_floating else cast(y_pred, _dt.float32)


def _squared_error(y_true, y_pred):
    # the loss function (as Keras 3's metric uses it): it lines up [N] with [N, 1]
    return mean_squared_error(y_true, _floats(y_pred))


def _absolute_error(y_true, y_pred):
    return mean_absolute_error(y_true, _floats(y_pred))


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels.

    Example:
        >>> m = tf.keras.metrics.Accuracy(); m.update_state([1, 2], [1, 3]); float(m.result())
        0.5
    """

    def __init__(self, name: str = "accuracy", dtype=None):
        super().__init__(accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often `y_pred > threshold` matches the binary labels."""

    def __init__(self, name: str = "binary_accuracy", dtype=None, threshold: float = 0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of predictions matches the one-hot labels."""

    def __init__(self, name: str = "categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of predictions matches the integer labels."""

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of the squared errors."""

    def __init__(self, name: str = "mean_squared_error", dtype=None):
        super().__init__(_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of the absolute errors."""

    def __init__(self, name: str = "mean_absolute_error", dtype=None):
        super().__init__(_absolute_error, name, dtype)


class _Crossentropy(MeanMetricWrapper):
    """The mean of a cross-entropy loss function's per-example values (labels and
    predictions of the same rank, as Keras's metrics take them)."""

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


class BinaryCrossentropy(_Crossentropy):
    """The mean binary cross-entropy of labels in [0, 1] and probabilities (or logits,
    with `from_logits=True`).

    Example:
        >>> m = tf.keras.metrics.BinaryCrossentropy()
        >>> m.update_state([[0.0], [1.0]], [[0.5], [0.5]]); round(float(m.result()), 4)
        0.6931
    """

    def __init__(self, name: str = "binary_crossentropy", dtype=None,
                 from_logits: bool = False, label_smoothing: float = 0.0):
        super().__init__(binary_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(_Crossentropy):
    """The mean cross-entropy of one-hot labels and class probabilities (or logits)."""

    def __init__(self, name: str = "categorical_crossentropy", dtype=None,
                 from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1):
        super().__init__(categorical_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(_Crossentropy):
    """The mean cross-entropy of integer labels and class probabilities (or logits)."""

    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype=None,
                 from_logits: bool = False, axis: int = -1):
        super().__init__(sparse_categorical_crossentropy, name, dtype,
                         from_logits=from_logits, axis=axis)


def _top_k_hits(labels, y_pred, k: int):
    """1.0 where the score of the true class is among the k largest (ties count as in).

    As Keras 3 does: the scores are flattened to [-1, classes] and the labels to [-1], so
    [N, 1] labels (or [N, T] labels with [N, T, classes] scores) pair with their own rows
    rather than broadcasting; the hits come back in the labels' shape."""
    y_pred = convert_to_tensor(y_pred)
    labels = cast(convert_to_tensor(labels), _dt.int64)
    depth = y_pred._shape[-1]
    scores = reshape(y_pred, [-1, depth]) if y_pred.ndim != 2 else y_pred
    onehot = cast(equal(reshape(labels, [-1, 1]),
                        constant(np.arange(depth), dtype=_dt.int64)), scores.dtype)
    true_score = reduce_sum(onehot * scores, axis=-1, keepdims=True)
    above = reduce_sum(cast(greater(scores, true_score), _dt.float32), axis=-1)
    hits = cast(greater(float(k), above), _dt.float32)
    return reshape(hits, list(labels._shape)) if labels.ndim > 1 else hits


def top_k_categorical_accuracy(y_true, y_pred, k: int = 5):
    """1.0 where the one-hot label's class is among the top `k` predictions."""
    return _top_k_hits(argmax(y_true, axis=-1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k: int = 5):
    """1.0 where the integer label is among the top `k` predictions: labels [N] or [N, 1]
    with scores [N, classes]; any other labels' shape with matching scores."""
    return _top_k_hits(y_true, y_pred, k)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label's class is among the `k` highest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name, dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the `k` highest predictions."""

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy",
                 dtype=None):
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype, k=k)


NEG_INF = -1e10  # Keras's score for the entries top_k leaves out


def _align(x1, x2, expand_rank_1: bool = True) -> tuple:
    """Keras 3's squeeze_or_expand_to_same_rank: ranks that differ by one in a last axis of
    size 1 line up (the rank-1 side expanded when `expand_rank_1`, else the other
    squeezed)."""
    if x1.ndim == x2.ndim + 1 and x1._shape[-1] == 1:
        if x2.ndim == 1 and expand_rank_1:
            x2 = expand_dims(x2, -1)
        else:
            x1 = squeeze(x1, -1)
    elif x2.ndim == x1.ndim + 1 and x2._shape[-1] == 1:
        if x1.ndim == 1 and expand_rank_1:
            x1 = expand_dims(x1, -1)
        else:
            x2 = squeeze(x2, -1)
    return x1, x2


def _filter_top_k(x, k: int):
    # the k largest scores of each row stay, the others become NEG_INF
    _, idx = top_k(x, k)
    keep = reduce_sum(one_hot(idx, x._shape[-1], dtype=x.dtype), axis=-2)
    return x * keep + NEG_INF * (1.0 - keep)


def _parse_thresholds(thresholds, default) -> list:
    if thresholds is not None:
        listed = list(np.reshape(np.asarray(thresholds, dtype=object), -1))
        bad = [t for t in listed if t is None or t < 0 or t > 1]
        if bad:
            raise ValueError(f"Threshold values must be in [0, 1]. Received: {bad}")
        return [float(t) for t in listed]
    return [float(default)]


def _update_confusion(variables: dict, y_true, y_pred, thresholds, dtype, top_k=None,
                      class_id=None, sample_weight=None, multi_label: bool = False,
                      label_weights=None) -> None:
    """Add the weighted counts of `y_pred > threshold` against `y_true != 0` to the
    variables named "tp", "fp", "tn", "fn", for every threshold at once (Keras 3's
    update_confusion_matrix_variables): variables of shape [thresholds], or
    [thresholds, labels] with `multi_label`. Labels and (N,) weights line up with [N, 1]
    predictions; the weights then broadcast against the predictions' trailing axes."""
    y_true = cast(convert_to_tensor(y_true), dtype)
    y_pred = cast(convert_to_tensor(y_pred), dtype)
    y_pred, y_true = _align(y_pred, y_true)
    weight = None
    if sample_weight is not None:
        weight = expand_dims(cast(convert_to_tensor(sample_weight), dtype), -1)
        _, weight = _align(y_true, weight, expand_rank_1=False)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 1:
            raise ValueError("When class_id is provided, y_pred must be a 2D array with "
                             "shape (num_samples, num_classes), found shape: "
                             f"{list(y_pred._shape)}")
        y_true = gather(y_true, [class_id], axis=-1)
        y_pred = gather(y_pred, [class_id], axis=-1)
    thresholds = constant(np.asarray(thresholds, np.float64), dtype=dtype)
    positive = cast(not_equal(y_true, 0.0), dtype) + y_pred * 0.0  # (broadcast as y_pred)
    if weight is not None:
        weight = broadcast_to(weight, shape(y_pred))
    if label_weights is not None and not multi_label:
        lw = broadcast_to(expand_dims(cast(convert_to_tensor(label_weights), dtype), 0),
                          shape(y_pred))
        weight = lw if weight is None else weight * lw
    if multi_label:
        preds, truth = expand_dims(y_pred, 0), expand_dims(positive, 0)
        above = cast(greater(preds, reshape(thresholds, [-1, 1, 1])), dtype)
        weight = None if weight is None else expand_dims(weight, 0)
    else:
        preds, truth = reshape(y_pred, [1, -1]), reshape(positive, [1, -1])
        above = cast(greater(preds, reshape(thresholds, [-1, 1])), dtype)
        weight = None if weight is None else reshape(weight, [1, -1])
    cells = {"tp": truth * above, "fp": (1.0 - truth) * above,
             "tn": (1.0 - truth) * (1.0 - above), "fn": truth * (1.0 - above)}
    for key, var in variables.items():
        value = cells[key] if weight is None else cells[key] * weight
        var.assign_add(reduce_sum(value, axis=1))


class _ConditionCount(Metric):
    """One weighted confusion count per threshold (Keras's TruePositives & co.)."""
    _cell = ""

    def __init__(self, thresholds=None, name: str | None = None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        self.thresholds = _parse_thresholds(thresholds, 0.5)
        self.accumulator = self.add_variable("accumulator", (len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        _update_confusion({self._cell: self.accumulator}, y_true, y_pred, self.thresholds,
                          self.dtype, sample_weight=sample_weight)

    def result(self):
        return self.accumulator[0] if len(self.thresholds) == 1 else \
            self.accumulator.read_value()

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConditionCount):
    """The weighted number of true positives (`y_pred > threshold` and `y_true != 0`).

    Example:
        >>> m = tf.keras.metrics.TruePositives(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
        >>> float(m.result())
        2.0
    """
    _cell = "tp"

    def __init__(self, thresholds=None, name: str = "true_positives", dtype=None):
        super().__init__(thresholds, name, dtype)


class FalsePositives(_ConditionCount):
    """The weighted number of false positives.

    Example:
        >>> m = tf.keras.metrics.FalsePositives(); m.update_state([0, 1, 0, 0], [0, 0, 1, 1])
        >>> float(m.result())
        2.0
    """
    _cell = "fp"

    def __init__(self, thresholds=None, name: str = "false_positives", dtype=None):
        super().__init__(thresholds, name, dtype)


class TrueNegatives(_ConditionCount):
    """The weighted number of true negatives.

    Example:
        >>> m = tf.keras.metrics.TrueNegatives(); m.update_state([0, 1, 0, 0], [1, 1, 0, 0])
        >>> float(m.result())
        2.0
    """
    _cell = "tn"

    def __init__(self, thresholds=None, name: str = "true_negatives", dtype=None):
        super().__init__(thresholds, name, dtype)


class FalseNegatives(_ConditionCount):
    """The weighted number of false negatives.

    Example:
        >>> m = tf.keras.metrics.FalseNegatives(); m.update_state([0, 1, 1, 1], [0, 1, 0, 0])
        >>> float(m.result())
        2.0
    """
    _cell = "fn"

    def __init__(self, thresholds=None, name: str = "false_negatives", dtype=None):
        super().__init__(thresholds, name, dtype)


def _ratio(num, den):
    return divide_no_nan(num, den)  # 0 where undefined, as Keras


class _PrecisionRecall(Metric):
    _second = ("", "")  # (the confusion cell, the variable's name) besides true positives

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds, self.top_k, self.class_id = thresholds, top_k, class_id
        self.thresholds = _parse_thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        size = (len(self.thresholds),)
        self.true_positives = self.add_variable("true_positives", size)
        setattr(self, self._second[1], self.add_variable(self._second[1], size))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        _update_confusion({"tp": self.true_positives,
                           self._second[0]: getattr(self, self._second[1])},
                          y_true, y_pred, self.thresholds, self.dtype, top_k=self.top_k,
                          class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        other = getattr(self, self._second[1])
        value = _ratio(self.true_positives, self.true_positives + other)
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """true positives / predicted positives, predictions counted positive above
    `thresholds` (0.5); `top_k` counts only each row's k highest scores, `class_id` looks
    at one class's column.

    Example:
        >>> m = tf.keras.metrics.Precision(); m.update_state([0, 1, 1], [1, 1, 0])
        >>> float(m.result())
        0.5
    """
    _second = ("fp", "false_positives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name: str = "precision",
                 dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)


class Recall(_PrecisionRecall):
    """true positives / actual positives, predictions counted positive above `thresholds`
    (0.5); `top_k` and `class_id` as in Precision.

    Example:
        >>> m = tf.keras.metrics.Recall(); m.update_state([0, 1, 1], [1, 1, 0])
        >>> float(m.result())
        0.5
    """
    _second = ("fn", "false_negatives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name: str = "recall",
                 dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)


class _AtConstraint(Metric):
    """The four confusion counts at `num_thresholds` thresholds evenly spaced in [0, 1];
    the result is the best `dependent` rate among thresholds whose `constrained` rate is
    at least `value` (Keras's SensitivitySpecificityBase)."""
    _value_name = ""

    def __init__(self, value: float, num_thresholds: int = 200, class_id=None,
                 name=None, dtype=None):
        if value < 0 or value > 1:
            raise ValueError(f"Argument `{self._value_name}` must be in the range [0, 1]. "
                             f"Received: {self._value_name}={value}")
        if num_thresholds <= 0:
            raise ValueError("Argument `num_thresholds` must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        super().__init__(name, dtype)
        self.value, self.num_thresholds, self.class_id = value, num_thresholds, class_id
        setattr(self, self._value_name, value)
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        size = (len(self.thresholds),)
        self.true_positives = self.add_variable("true_positives", size)
        self.false_positives = self.add_variable("false_positives", size)
        self.true_negatives = self.add_variable("true_negatives", size)
        self.false_negatives = self.add_variable("false_negatives", size)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        _update_confusion({"tp": self.true_positives, "tn": self.true_negatives,
                           "fp": self.false_positives, "fn": self.false_negatives},
                          y_true, y_pred, self.thresholds, self.dtype,
                          class_id=self.class_id, sample_weight=sample_weight)

    def _rates(self) -> dict:
        tp, fp = self.true_positives, self.false_positives
        tn, fn = self.true_negatives, self.false_negatives
        return {"recall": _ratio(tp, tp + fn), "precision": _ratio(tp, tp + fp),
                "specificity": _ratio(tn, tn + fp)}

    def _best(self, constrained, dependent):
        feasible = greater_equal(constrained, self.value)
        return maximum(reduce_max(where(feasible, dependent, zeros_like(dependent))), 0.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._value_name: self.value}


class SensitivityAtSpecificity(_AtConstraint):
    """The best sensitivity (recall) where the specificity is at least `specificity`.

    Example:
        >>> m = tf.keras.metrics.SensitivityAtSpecificity(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]); float(m.result())
        0.5
    """
    _value_name = "specificity"

    def __init__(self, specificity: float, num_thresholds: int = 200, class_id=None,
                 name: str = "sensitivity_at_specificity", dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["specificity"], r["recall"])


class SpecificityAtSensitivity(_AtConstraint):
    """The best specificity where the sensitivity (recall) is at least `sensitivity`.

    Example:
        >>> m = tf.keras.metrics.SpecificityAtSensitivity(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]); float(m.result())
        0.6666666865348816
    """
    _value_name = "sensitivity"

    def __init__(self, sensitivity: float, num_thresholds: int = 200, class_id=None,
                 name: str = "specificity_at_sensitivity", dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["recall"], r["specificity"])


class PrecisionAtRecall(_AtConstraint):
    """The best precision where the recall is at least `recall`.

    Example:
        >>> m = tf.keras.metrics.PrecisionAtRecall(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8]); float(m.result())
        0.5
    """
    _value_name = "recall"

    def __init__(self, recall: float, num_thresholds: int = 200, class_id=None,
                 name: str = "precision_at_recall", dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["recall"], r["precision"])


class RecallAtPrecision(_AtConstraint):
    """The best recall where the precision is at least `precision`.

    Example:
        >>> m = tf.keras.metrics.RecallAtPrecision(0.8)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]); float(m.result())
        0.5
    """
    _value_name = "precision"

    def __init__(self, precision: float, num_thresholds: int = 200, class_id=None,
                 name: str = "recall_at_precision", dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["precision"], r["recall"])


_CURVES = ("ROC", "PR", "PRGAIN")
_SUMMATIONS = ("interpolation", "minoring", "majoring")


class AUC(Metric):
    """The area under the ROC or precision-recall (`curve="PR"`) curve from the confusion
    counts at `num_thresholds` thresholds evenly spaced in [0, 1] (the ends just outside),
    or at `thresholds`; `summation_method` "interpolation" (trapezoids; for PR, Davis &
    Goadrich's interpolation as Keras), "minoring" or "majoring". With `multi_label`, one
    curve per label (columns of [N, labels] predictions), averaged (by `label_weights`).

    Example:
        >>> m = tf.keras.metrics.AUC(); m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> round(float(m.result()), 2)
        0.75
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str = "auc", dtype=None,
                 thresholds=None, multi_label: bool = False, num_labels=None,
                 label_weights=None, from_logits: bool = False):
        curve = str(curve).upper()
        summation_method = str(summation_method).lower()
        if curve not in _CURVES:
            raise ValueError(f'Invalid AUC curve value: "{curve}". Expected values are '
                             f"{list(_CURVES)}")
        if summation_method not in _SUMMATIONS:
            raise ValueError("Invalid AUC summation method value: "
                             f'"{summation_method}". Expected values are '
                             f"{list(_SUMMATIONS)}")
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            self.num_thresholds = len(inner) + 2
        else:
            if num_thresholds <= 1:
                raise ValueError("Argument `num_thresholds` must be an integer > 1. "
                                 f"Received: num_thresholds={num_thresholds}")
            self.num_thresholds = num_thresholds
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.thresholds = [0.0 - 1e-7] + inner + [1.0 + 1e-7]
        super().__init__(name, dtype)
        self.curve, self.summation_method = curve, summation_method
        self.multi_label, self.num_labels = multi_label, num_labels
        self.label_weights = None if label_weights is None else \
            constant(np.asarray(label_weights, np.float64), dtype=self.dtype)
        self.from_logits = from_logits
        self._built = False
        if multi_label:
            if num_labels:
                self._build([None, num_labels])
        else:
            if num_labels:
                raise ValueError("`num_labels` is needed only when `multi_label` is True.")
            self._build(None)

    def _build(self, shape) -> None:
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found "
                                 f"rank {len(shape)}. Full shape received for `y_pred`: "
                                 f"{list(shape)}")
            self._num_labels = shape[1]
            size = (self.num_thresholds, self._num_labels)
        else:
            size = (self.num_thresholds,)
        self.true_positives = self.add_variable("true_positives", size)
        self.false_positives = self.add_variable("false_positives", size)
        self.true_negatives = self.add_variable("true_negatives", size)
        self.false_negatives = self.add_variable("false_negatives", size)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = convert_to_tensor(y_pred)
        if not self._built:
            self._build(list(y_pred._shape))
        if self.from_logits:
            y_pred = sigmoid(y_pred)
        _update_confusion({"tp": self.true_positives, "tn": self.true_negatives,
                           "fp": self.false_positives, "fn": self.false_negatives},
                          y_true, y_pred, self.thresholds, self.dtype,
                          sample_weight=sample_weight, multi_label=self.multi_label,
                          label_weights=None if self.multi_label else self.label_weights)

    def _average(self, by_threshold):
        if not self.multi_label:
            return reduce_sum(by_threshold)
        by_label = reduce_sum(by_threshold, axis=0)
        if self.label_weights is None:
            return reduce_mean(by_label)
        return divide_no_nan(reduce_sum(by_label * self.label_weights),
                             reduce_sum(self.label_weights))

    def _interpolate_pr_auc(self):
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = divide_no_nan(dtp, maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = logical_and(greater(p[:-1], 0.0), greater(p[1:], 0.0))
        p_ratio = where(both, divide_no_nan(p[:-1], maximum(p[1:], 0.0)),
                        ones_like(p[1:]))
        increment = divide_no_nan(slope * (dtp + intercept * log(p_ratio)),
                                  maximum(tp[1:] + fn[1:], 0.0))
        return self._average(increment)

    def result(self):
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc()
        tp, fp = self.true_positives, self.false_positives
        tn, fn = self.true_negatives, self.false_negatives
        recall = _ratio(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _ratio(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, _ratio(tp, tp + fp)
        else:  # PRGAIN
            scale = _ratio(tp + fn, tn + fp)
            no_tp = equal(tp, 0.0)
            recall_gain = where(no_tp, zeros_like(tp), 1.0 - scale * _ratio(fn, tp))
            precision_gain = where(no_tp, ones_like(tp), 1.0 - scale * _ratio(fp, tp))
            x, y = maximum(recall_gain, 0.0), precision_gain
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = minimum(y[:-1], y[1:])
        else:
            heights = maximum(y[:-1], y[1:])
        return self._average((x[:-1] - x[1:]) * heights)

    def reset_state(self) -> None:
        if self._built:
            super().reset_state()

    def get_config(self) -> dict:
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": None if self.label_weights is None
                  else self.label_weights.numpy().tolist(),
                  "from_logits": self.from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config


# --------------------------------------------------------------------------- regression


def _cosine(y_true, y_pred, axis: int = -1):
    """`sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)` (the metric's sign: 1 for
    parallel vectors)."""
    return -cosine_similarity(y_true, _floats(y_pred), axis=axis)


class _LossMean(MeanMetricWrapper):
    """The mean of a loss function's per-example values; config: name and dtype."""
    _loss = None
    _default_name = ""

    def __init__(self, name: str | None = None, dtype=None):
        super().__init__(type(self)._loss, name or self._default_name, dtype)


class Hinge(_LossMean):
    """The mean hinge loss (labels in {0, 1} are read as {-1, 1}).

    Example:
        >>> m = tf.keras.metrics.Hinge(); m.update_state([[1., 0.]], [[0.5, -2.]])
        >>> float(m.result())
        0.25
    """
    _loss, _default_name = staticmethod(hinge), "hinge"


class SquaredHinge(_LossMean):
    """The mean squared hinge loss.

    Example:
        >>> m = tf.keras.metrics.SquaredHinge(); m.update_state([[1., 0.]], [[0.5, -2.]])
        >>> float(m.result())
        0.125
    """
    _loss, _default_name = staticmethod(squared_hinge), "squared_hinge"


class CategoricalHinge(_LossMean):
    """The mean categorical hinge loss.

    Example:
        >>> m = tf.keras.metrics.CategoricalHinge(); m.update_state([[0., 1.]], [[0.5, 0.2]])
        >>> round(float(m.result()), 4)
        1.3
    """
    _loss, _default_name = staticmethod(categorical_hinge), "categorical_hinge"


class KLDivergence(_LossMean):
    """The mean Kullback-Leibler divergence.

    Example:
        >>> m = tf.keras.metrics.KLDivergence(); m.update_state([[.5, .5]], [[.25, .75]])
        >>> round(float(m.result()), 4)
        0.1438
    """
    _loss, _default_name = staticmethod(kl_divergence), "kl_divergence"


class Poisson(_LossMean):
    """The mean Poisson loss `y_pred - y_true * log(y_pred + 1e-7)`.

    Example:
        >>> m = tf.keras.metrics.Poisson(); m.update_state([[1., 0.]], [[1., 2.]])
        >>> float(m.result())
        1.5
    """
    _loss, _default_name = staticmethod(poisson), "poisson"


class LogCoshError(_LossMean):
    """The mean log-cosh error (Keras names it "logcosh").

    Example:
        >>> m = tf.keras.metrics.LogCoshError(); m.update_state([[0., 1.]], [[1., 1.]])
        >>> round(float(m.result()), 4)
        0.2169
    """
    _loss, _default_name = staticmethod(log_cosh), "logcosh"


class MeanAbsolutePercentageError(_LossMean):
    """The mean absolute percentage error.

    Example:
        >>> m = tf.keras.metrics.MeanAbsolutePercentageError()
        >>> m.update_state([[2., 4.]], [[1., 5.]]); float(m.result())
        37.5
    """
    _loss = staticmethod(mean_absolute_percentage_error)
    _default_name = "mean_absolute_percentage_error"


class MeanSquaredLogarithmicError(_LossMean):
    """The mean squared logarithmic error.

    Example:
        >>> m = tf.keras.metrics.MeanSquaredLogarithmicError()
        >>> m.update_state([[0., 1.]], [[1., 1.]]); round(float(m.result()), 4)
        0.2402
    """
    _loss = staticmethod(mean_squared_logarithmic_error)
    _default_name = "mean_squared_logarithmic_error"


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity of labels and predictions along `axis` (config: name
    and dtype, as Keras).

    Example:
        >>> m = tf.keras.metrics.CosineSimilarity()
        >>> m.update_state([[0., 1.], [1., 1.]], [[1., 0.], [1., 1.]]); round(float(m.result()), 4)
        0.5
    """

    def __init__(self, name: str = "cosine_similarity", dtype=None, axis: int = -1):
        super().__init__(_cosine, name, dtype, axis=axis)


class RootMeanSquaredError(Mean):
    """`sqrt` of the (weighted) mean of the squared errors.

    Example:
        >>> m = tf.keras.metrics.RootMeanSquaredError()
        >>> m.update_state([[0.], [0.]], [[3.], [4.]]); round(float(m.result()), 4)
        3.5355
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(convert_to_tensor(y_true), self.dtype)
        y_pred = cast(convert_to_tensor(y_pred), self.dtype)
        y_true, y_pred = _align(y_true, y_pred)
        super().update_state(square(y_pred - y_true), sample_weight)

    def result(self):
        return sqrt(super().result())


def pearson_correlation(y_true, y_pred, axis: int = -1):
    """The Pearson correlation of `y_true` and `y_pred` along `axis`, per example.

    Example:
        >>> tf.keras.metrics.pearson_correlation([[1., 2., 3.]], [[2., 4., 7.]]).numpy().round(4)
        array([0.9934], dtype=float32)
    """
    y_pred = _floats(y_pred)
    y_true = cast(convert_to_tensor(y_true), y_pred.dtype)
    y_true, y_pred = _align(y_true, y_pred)
    t = y_true - reduce_mean(y_true, axis=axis, keepdims=True)
    p = y_pred - reduce_mean(y_pred, axis=axis, keepdims=True)
    t = t / reduce_std(t, axis=axis, keepdims=True)
    p = p / reduce_std(p, axis=axis, keepdims=True)
    return reduce_mean(t * p, axis=axis)


def concordance_correlation(y_true, y_pred, axis: int = -1):
    """Lin's concordance correlation along `axis`, per example, as Keras 3 computes it
    (its covariance term centres `y_true` on the predictions' mean).

    Example:
        >>> tf.keras.metrics.concordance_correlation([[1., 2.]], [[1., 2.]]).numpy().round(4)
        array([1.], dtype=float32)
    """
    y_pred = _floats(y_pred)
    y_true = cast(convert_to_tensor(y_true), y_pred.dtype)
    y_true, y_pred = _align(y_true, y_pred)
    t_mean = reduce_mean(y_true, axis=axis, keepdims=True)
    p_mean = reduce_mean(y_pred, axis=axis, keepdims=True)
    t_var = reduce_variance(y_true - t_mean, axis=axis, keepdims=True)
    p_var = reduce_variance(y_pred - p_mean, axis=axis, keepdims=True)
    covar = (y_true - p_mean) * (y_pred - p_mean)
    norm = t_var + p_var + square(t_mean - p_mean)
    return reduce_mean(2.0 * covar / (norm + EPSILON), axis=axis)


class PearsonCorrelation(MeanMetricWrapper):
    """The mean over examples of the Pearson correlation along `axis`.

    Example:
        >>> m = tf.keras.metrics.PearsonCorrelation()
        >>> m.update_state([[1., 2., 3.]], [[2., 4., 7.]]); round(float(m.result()), 4)
        0.9934
    """

    def __init__(self, name: str = "pearson_correlation", dtype=None, axis: int = -1):
        super().__init__(pearson_correlation, name, dtype, axis=axis)
        self.axis = axis

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class ConcordanceCorrelation(MeanMetricWrapper):
    """The mean over examples of the concordance correlation along `axis`.

    Example:
        >>> m = tf.keras.metrics.ConcordanceCorrelation()
        >>> m.update_state([[1., 2., 3.]], [[1., 2., 3.]]); round(float(m.result()), 4)
        1.0
    """

    def __init__(self, name: str = "concordance_correlation", dtype=None, axis: int = -1):
        super().__init__(concordance_correlation, name, dtype, axis=axis)
        self.axis = axis

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class R2Score(Metric):
    """The coefficient of determination of [N, outputs] predictions, per output and
    aggregated: `class_aggregation` "uniform_average", "variance_weighted_average" or None
    (one score per output); `num_regressors` > 0 gives the adjusted R².

    Example:
        >>> m = tf.keras.metrics.R2Score()
        >>> m.update_state([[1.], [2.], [3.]], [[1.], [2.], [4.]]); float(m.result())
        0.5
    """

    def __init__(self, class_aggregation: str | None = "uniform_average",
                 num_regressors: int = 0, name: str = "r2_score", dtype=None):
        if class_aggregation not in (None, "uniform_average", "variance_weighted_average"):
            raise ValueError("Invalid value for argument `class_aggregation`. Expected one of "
                             "(None, 'uniform_average', 'variance_weighted_average'). "
                             f"Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError("Invalid value for argument `num_regressors`. Expected a value "
                             f">= 0. Received: num_regressors={num_regressors}")
        super().__init__(name, dtype)
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self.num_samples = self.add_variable("num_samples")
        self._built = False

    def _build(self, true_shape, pred_shape) -> None:
        if len(pred_shape) != 2 or len(true_shape) != 2 or pred_shape[-1] is None:
            raise ValueError("R2Score expects 2D inputs with shape (batch_size, output_dim), "
                             "with output_dim fully defined. Received input shapes: "
                             f"y_pred.shape={list(pred_shape)} and "
                             f"y_true.shape={list(true_shape)}.")
        outputs = (pred_shape[-1],)
        self.squared_sum = self.add_variable("squared_sum", outputs)
        self.sum = self.add_variable("sum", outputs)
        self.total_mse = self.add_variable("residual", outputs)
        self.count = self.add_variable("count", outputs)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(convert_to_tensor(y_true), self.dtype)
        y_pred = cast(convert_to_tensor(y_pred), self.dtype)
        y_true, y_pred = _align(y_true, y_pred)
        if not self._built:
            self._build(y_true._shape, y_pred._shape)
        weight = cast(convert_to_tensor(1.0 if sample_weight is None else sample_weight),
                      self.dtype)
        if weight.ndim == 1:
            weight = expand_dims(weight, 1)
        weight = broadcast_to(weight, shape(y_true))
        weighted = y_true * weight
        self.sum.assign_add(reduce_sum(weighted, axis=0))
        self.squared_sum.assign_add(reduce_sum(y_true * weighted, axis=0))
        self.total_mse.assign_add(reduce_sum(square(y_true - y_pred) * weight, axis=0))
        self.count.assign_add(reduce_sum(weight, axis=0))
        self.num_samples.assign_add(cast(size(y_true), self.dtype))

    def result(self):
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        raw = 1.0 - self.total_mse / total
        raw = where(is_inf(raw), zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = reduce_sum(total * raw) / reduce_sum(total)
        else:
            score = raw
        if self.num_regressors:
            n, p = float(self.num_samples.numpy()), float(self.num_regressors)
            if p > n - 1:
                warnings.warn("More independent predictors than datapoints in adjusted R2 "
                              "score. Falling back to standard R2 score.", stacklevel=2)
            elif p == n - 1:
                warnings.warn("Division by zero in Adjusted R2 score. Falling back to "
                              "standard R2 score.", stacklevel=2)
            else:
                score = 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)
        return score

    def reset_state(self) -> None:
        super().reset_state()

    def get_config(self) -> dict:
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


# --------------------------------------------------------------------------- F-scores


class FBetaScore(Metric):
    """The F-beta score of [N, classes] multi-label (or one-hot) predictions: per class
    (`average=None`), "micro" (over all entries), "macro" (the mean of the classes') or
    "weighted" (by each class's weighted number of true labels). A prediction counts
    positive above `threshold`, or, with None, where it is its row's largest (and not 0).

    Example:
        >>> m = tf.keras.metrics.FBetaScore(beta=2.0, average="micro")
        >>> m.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.8, 0.2]]); round(float(m.result()), 4)
        0.5
    """

    def __init__(self, average: str | None = None, beta: float = 1.0, threshold=None,
                 name: str = "fbeta_score", dtype=None):
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: {None, "
                             f"'micro', 'macro', 'weighted'}}. Received: average={average}")
        if not isinstance(beta, float):
            raise ValueError("Invalid `beta` argument value. It should be a Python float. "
                             f"Received: beta={beta} of type '{type(beta)}'")
        if beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. "
                             f"Received: beta={beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError("Invalid `threshold` argument value. It should be a Python "
                                 f"float. Received: threshold={threshold} of type "
                                 f"'{type(threshold)}'")
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError("Invalid `threshold` argument value. It should verify "
                                 f"0 < threshold <= 1. Received: threshold={threshold}")
        super().__init__(name, dtype)
        self.average, self.beta, self.threshold = average, beta, threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def _build(self, true_shape, pred_shape) -> None:
        if len(pred_shape) != 2 or len(true_shape) != 2 or pred_shape[-1] is None:
            raise ValueError(f"{type(self).__name__} expects 2D inputs with shape "
                             "(batch_size, output_dim), with output_dim fully defined. "
                             f"Received input shapes: y_pred.shape={list(pred_shape)} and "
                             f"y_true.shape={list(true_shape)}.")
        size = () if self.average == "micro" else (pred_shape[-1],)
        self.true_positives = self.add_variable("true_positives", size)
        self.false_positives = self.add_variable("false_positives", size)
        self.false_negatives = self.add_variable("false_negatives", size)
        self.intermediate_weights = self.add_variable("intermediate_weights", size)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(convert_to_tensor(y_true), self.dtype)
        y_pred = cast(convert_to_tensor(y_pred), self.dtype)
        if not self._built:
            self._build(y_true._shape, y_pred._shape)
        if self.threshold is None:
            top = reduce_max(y_pred, axis=-1, keepdims=True)
            y_pred = logical_and(greater_equal(y_pred, top), greater(abs_(y_pred), 1e-9))
        else:
            y_pred = greater(y_pred, self.threshold)
        y_pred = cast(y_pred, self.dtype)
        weight = None if sample_weight is None else \
            expand_dims(cast(convert_to_tensor(sample_weight), self.dtype), 1)

        def total(v):
            return reduce_sum(v if weight is None else v * weight, axis=self.axis)
        self.true_positives.assign_add(total(y_pred * y_true))
        self.false_positives.assign_add(total(y_pred * (1.0 - y_true)))
        self.false_negatives.assign_add(total((1.0 - y_pred) * y_true))
        self.intermediate_weights.assign_add(total(y_true))

    def result(self):
        tp = self.true_positives
        precision = tp / (tp + self.false_positives + EPSILON)
        recall = tp / (tp + self.false_negatives + EPSILON)
        b2 = self.beta ** 2
        score = precision * recall / (b2 * precision + recall + EPSILON) * (1.0 + b2)
        if self.average == "weighted":
            w = self.intermediate_weights
            return reduce_sum(score * (w / (reduce_sum(w) + EPSILON)))
        if self.average is not None:
            return reduce_mean(score)
        return score

    def reset_state(self) -> None:
        super().reset_state()

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """The F1 score (FBetaScore with beta 1).

    Example:
        >>> m = tf.keras.metrics.F1Score(threshold=0.5)
        >>> m.update_state([[1, 0], [0, 1]], [[0.9, 0.6], [0.2, 0.7]]); m.result().numpy().round(4)
        array([1.    , 0.6667], dtype=float32)
    """

    def __init__(self, average: str | None = None, threshold=None, name: str = "f1_score",
                 dtype=None):
        super().__init__(average, 1.0, threshold, name, dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config


# --------------------------------------------------------------------------- IoU


class _IoUBase(Metric):
    """A [classes, classes] confusion matrix (rows: labels, columns: predictions) of
    integer class ids (argmax along `axis` where not sparse), weighted by `sample_weight`
    cast to the metric's dtype (int64 by default, as Keras); ids out of range, and
    `ignore_class`, are left out."""

    def __init__(self, num_classes: int, name=None, dtype=None, ignore_class=None,
                 sparse_y_true: bool = True, sparse_y_pred: bool = True, axis: int = -1):
        super().__init__(name, dtype or "int64")
        self.num_classes, self.ignore_class = num_classes, ignore_class
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis
        self.total_cm = self.add_variable("total_confusion_matrix", (num_classes, num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        if not self.sparse_y_true:
            y_true = argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = argmax(y_pred, axis=self.axis)
        y_true = reshape(cast(convert_to_tensor(y_true), self.dtype), [-1])
        y_pred = reshape(cast(convert_to_tensor(y_pred), self.dtype), [-1])
        weight = cast(convert_to_tensor(1 if sample_weight is None else sample_weight),
                      self.dtype)
        if weight.ndim > 1:
            weight = reshape(weight, [-1])
        weight = broadcast_to(weight, shape(y_true))
        n = self.num_classes
        keep = logical_and(logical_and(greater_equal(y_true, 0), less(y_true, n)),
                           logical_and(greater_equal(y_pred, 0), less(y_pred, n)))
        if self.ignore_class is not None:
            keep = logical_and(keep, not_equal(y_true, self.ignore_class))
        # the counts as a product of one-hot matrices, in float64 (exact for integer
        # weights below 2**53), then in the metric's dtype
        weight = cast(where(keep, weight, zeros_like(weight)), _dt.float64)
        rows = one_hot(cast(where(keep, y_true, zeros_like(y_true)), _dt.int64), n,
                       dtype=_dt.float64)
        cols = one_hot(cast(where(keep, y_pred, zeros_like(y_pred)), _dt.int64), n,
                       dtype=_dt.float64)
        cm = matmul(rows * expand_dims(weight, 1), cols, transpose_a=True)
        self.total_cm.assign_add(cast(cm, self.dtype))


class IoU(_IoUBase):
    """The mean over `target_class_ids` of the intersection over union
    `tp / (tp + fp + fn)` of integer class predictions (classes never seen are left out
    of the mean).

    Example:
        >>> m = tf.keras.metrics.IoU(num_classes=2, target_class_ids=[0])
        >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); round(float(m.result()), 4)
        0.3333
    """

    def __init__(self, num_classes: int, target_class_ids, name: str = "io_u", dtype=None,
                 ignore_class=None, sparse_y_true: bool = True, sparse_y_pred: bool = True,
                 axis: int = -1):
        super().__init__(num_classes, name, dtype, ignore_class, sparse_y_true,
                         sparse_y_pred, axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, "
                             f"which is [0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)

    def result(self):
        cm = cast(self.total_cm, _dt.float32)
        tp = diag_part(cm)
        denominator = reduce_sum(cm, axis=0) + reduce_sum(cm, axis=1) - tp
        ids = constant(np.asarray(self.target_class_ids, np.int32))
        tp, denominator = gather(tp, ids), gather(denominator, ids)
        valid = greater(denominator, 1e-9)
        iou = where(valid, tp / (denominator + EPSILON), zeros_like(tp))
        return reduce_sum(iou, axis=self.axis) / (
            reduce_sum(cast(valid, _dt.float32)) + EPSILON)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_classes": self.num_classes,
                "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of binary labels and predictions thresholded at `threshold` (>=), for the
    classes in `target_class_ids` (0, 1 or both).

    Example:
        >>> m = tf.keras.metrics.BinaryIoU(target_class_ids=[1])
        >>> m.update_state([0, 1, 1], [0.2, 0.6, 0.4]); round(float(m.result()), 4)
        0.5
    """

    def __init__(self, target_class_ids=(0, 1), threshold: float = 0.5,
                 name: str = "binary_io_u", dtype=None):
        super().__init__(2, target_class_ids, name, dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = cast(greater_equal(cast(convert_to_tensor(y_pred), _dt.float32),
                                    self.threshold), self.dtype)
        super().update_state(y_true, y_pred, sample_weight)

    def get_config(self) -> dict:
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype.name}


class MeanIoU(IoU):
    """IoU averaged over all `num_classes` classes.

    Example:
        >>> m = tf.keras.metrics.MeanIoU(num_classes=2)
        >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); round(float(m.result()), 4)
        0.3333
    """

    def __init__(self, num_classes: int, name: str = "mean_io_u", dtype=None,
                 ignore_class=None, sparse_y_true: bool = True, sparse_y_pred: bool = True,
                 axis: int = -1):
        super().__init__(num_classes, list(range(num_classes)), name, dtype, ignore_class,
                         sparse_y_true, sparse_y_pred, axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "name": self.name,
                "dtype": self.dtype.name, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class OneHotIoU(IoU):
    """IoU of one-hot labels and class scores (argmax along `axis`).

    Example:
        >>> m = tf.keras.metrics.OneHotIoU(num_classes=2, target_class_ids=[1])
        >>> m.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.4, 0.6]]); round(float(m.result()), 4)
        1.0
    """

    def __init__(self, num_classes: int, target_class_ids, name: str = "one_hot_io_u",
                 dtype=None, ignore_class=None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, target_class_ids, name, dtype, ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "name": self.name, "dtype": self.dtype.name,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    """MeanIoU of one-hot labels and class scores (argmax along `axis`).

    Example:
        >>> m = tf.keras.metrics.OneHotMeanIoU(num_classes=2)
        >>> m.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.4, 0.6]]); round(float(m.result()), 4)
        1.0
    """

    def __init__(self, num_classes: int, name: str = "one_hot_mean_io_u", dtype=None,
                 ignore_class=None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, name, dtype, ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "name": self.name,
                "dtype": self.dtype.name, "ignore_class": self.ignore_class,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}




_BY_NAME = {
    "accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "precision": Precision, "recall": Recall, "auc": AUC,
    "binary_crossentropy": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "bce": BinaryCrossentropy, "hinge": Hinge, "squared_hinge": SquaredHinge,
    "categorical_hinge": CategoricalHinge, "kl_divergence": KLDivergence,
    "kld": KLDivergence, "poisson": Poisson, "log_cosh_error": LogCoshError,
    "mape": MeanAbsolutePercentageError,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "cosine_similarity": CosineSimilarity, "root_mean_squared_error": RootMeanSquaredError,
    "pearson_correlation": PearsonCorrelation,
    "concordance_correlation": ConcordanceCorrelation, "r2_score": R2Score,
    "f1_score": F1Score, "f_beta_score": FBetaScore, "true_positives": TruePositives,
    "false_positives": FalsePositives, "true_negatives": TrueNegatives,
    "false_negatives": FalseNegatives,
}
# class names too ("MeanSquaredError", "AUC", ...), as Keras 3's get takes them
_BY_CLASS = {name: value for name, value in globals().items() if name in __all__
             and isinstance(value, type) and issubclass(value, Metric)}


def get(identifier, name: str | None = None) -> Metric:
    """A metric for a name ("mse", "mae", "sparse_categorical_accuracy", ...), a class
    name ("MeanSquaredError": an instance), a Metric (returned as is) or a function
    `(y_true, y_pred) -> per-example values` (averaged)."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_CLASS:
        metric = _BY_CLASS[identifier]()
        if name:
            metric.name = name
        return metric
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown metric {identifier!r}; known names: "
                             f"{sorted(_BY_NAME)}")
        metric = cls()
        metric.name = name or identifier
        return metric
    if callable(identifier):
        return MeanMetricWrapper(identifier, name=name)
    raise ValueError(f"Could not interpret metric identifier {identifier!r}")


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
