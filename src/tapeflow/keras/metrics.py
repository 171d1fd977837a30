"""`tf.keras.metrics`: stateful metrics (`update_state`, `result`, `reset_state`) whose
state lives in Variables, so they update inside a traced training step.

Example:
    >>> m = tf.keras.metrics.SparseCategoricalAccuracy()
    >>> m.update_state([1, 0], [[0.1, 0.9], [0.2, 0.8]])
    >>> float(m.result())
    0.5
"""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.variable import Variable
from ..ops.array import reshape, squeeze
from ..ops.creation import constant, zeros
from ..ops.math import cast, equal, greater, sigmoid
from ..ops.reduction import argmax, reduce_sum
from ..train.losses import binary_crossentropy, categorical_crossentropy, \
    mean_absolute_error, mean_squared_error, same_rank, sparse_categorical_crossentropy

__all__ = ["Metric", "Mean", "Sum", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
           "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "Precision", "Recall", "AUC", "get"]


class Metric:
    """The base of stateful metrics: subclasses create Variables with `add_variable` and
    implement `update_state` and `result`."""

    def __init__(self, name: str | None = None, dtype=None):
        self.name = name or type(self).__name__.lower()
        self.dtype = _dt.as_dtype(dtype or _dt.float32)
        self._variables: list = []

    def add_variable(self, name: str, shape=()) -> Variable:
        # a callable initial value: a metric first used inside a trace is made eagerly
        v = Variable(lambda: zeros(list(shape), self.dtype), trainable=False,
                     name=f"{self.name}/{name}", dtype=self.dtype)
        self._variables.append(v)
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
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)


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


class _Confusion(Metric):
    """Weighted true/false positive/negative counts of `y_pred > threshold` against the
    binary labels, for every threshold at once (variables of shape [thresholds])."""

    def __init__(self, thresholds, name, dtype):
        super().__init__(name, dtype)
        self.thresholds = np.asarray(thresholds, np.float32).reshape(-1)
        self.true_positives = self.add_variable("true_positives", self.thresholds.shape)
        self.false_positives = self.add_variable("false_positives", self.thresholds.shape)
        self.true_negatives = self.add_variable("true_negatives", self.thresholds.shape)
        self.false_negatives = self.add_variable("false_negatives", self.thresholds.shape)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = cast(convert_to_tensor(y_pred), self.dtype)
        positive = cast(convert_to_tensor(y_true), self.dtype)
        # Keras 3 lines up labels and (per-example) weights with the predictions: [N]
        # labels or weights with [N, 1] predictions pair entry by entry
        y_pred, positive = same_rank(y_pred, positive)
        scores = reshape(y_pred, [-1, 1])
        truth = reshape(positive * (y_pred * 0.0 + 1.0), [-1, 1])
        weight = 1.0
        if sample_weight is not None:
            weight = cast(convert_to_tensor(sample_weight), self.dtype)
            if weight.ndim == y_pred.ndim + 1 and weight._shape[-1] == 1:
                weight = squeeze(weight, -1)
            while 0 < weight.ndim < y_pred.ndim:  # per-example weights of [N, ...] scores
                weight = reshape(weight, [*weight._shape, 1])
            weight = reshape(weight * (y_pred * 0.0 + 1.0), [-1, 1])
        above = cast(greater(scores, constant(self.thresholds, dtype=self.dtype)),
                     self.dtype)
        for var, value in ((self.true_positives, truth * above),
                           (self.false_positives, (1.0 - truth) * above),
                           (self.true_negatives, (1.0 - truth) * (1.0 - above)),
                           (self.false_negatives, truth * (1.0 - above))):
            var.assign_add(reduce_sum(value * weight, axis=0))


def _ratio(num, den):
    return num / (den + cast(equal(den, 0.0), den.dtype))  # 0 where undefined, as Keras


class Precision(_Confusion):
    """true positives / predicted positives, predictions counted positive above
    `thresholds` (0.5).

    Example:
        >>> m = tf.keras.metrics.Precision(); m.update_state([0, 1, 1], [1, 1, 0])
        >>> float(m.result())
        0.5
    """

    def __init__(self, thresholds=None, name: str = "precision", dtype=None):
        super().__init__(0.5 if thresholds is None else thresholds, name, dtype)
        self._single = np.ndim(0.5 if thresholds is None else thresholds) == 0

    def result(self):
        value = _ratio(self.true_positives, self.true_positives + self.false_positives)
        return value[0] if self._single else value


class Recall(_Confusion):
    """true positives / actual positives, predictions counted positive above
    `thresholds` (0.5)."""

    def __init__(self, thresholds=None, name: str = "recall", dtype=None):
        super().__init__(0.5 if thresholds is None else thresholds, name, dtype)
        self._single = np.ndim(0.5 if thresholds is None else thresholds) == 0

    def result(self):
        value = _ratio(self.true_positives, self.true_positives + self.false_negatives)
        return value[0] if self._single else value


class AUC(_Confusion):
    """The area under the ROC curve, from the confusion counts at `num_thresholds`
    evenly spaced thresholds in [0, 1] (the ends just outside), by the trapezoidal rule
    (Keras's "interpolation" for ROC).

    Example:
        >>> m = tf.keras.metrics.AUC(); m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> round(float(m.result()), 2)
        0.75
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str = "auc", dtype=None,
                 thresholds=None, from_logits: bool = False):
        if curve != "ROC" or summation_method != "interpolation":
            raise NotImplementedError("AUC: only curve='ROC' with "
                                      "summation_method='interpolation' is supported yet")
        if thresholds is None:
            if num_thresholds <= 1:
                raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds}")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            thresholds = [-1e-7] + inner + [1.0 + 1e-7]
        else:
            thresholds = [-1e-7] + sorted(float(t) for t in thresholds) + [1.0 + 1e-7]
        super().__init__(thresholds, name, dtype)
        self.num_thresholds = len(thresholds)
        self.from_logits = from_logits

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = convert_to_tensor(y_pred)
        if self.from_logits:
            y_pred = sigmoid(y_pred)
        super().update_state(y_true, y_pred, sample_weight)

    def result(self):
        tpr = _ratio(self.true_positives, self.true_positives + self.false_negatives)
        fpr = _ratio(self.false_positives, self.false_positives + self.true_negatives)
        return reduce_sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0)


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
}


def get(identifier, name: str | None = None) -> Metric:
    """A metric for a name ("mse", "mae", "sparse_categorical_accuracy", ...), a Metric
    (returned as is) or a function `(y_true, y_pred) -> per-example values` (averaged)."""
    if isinstance(identifier, Metric):
        return identifier
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
