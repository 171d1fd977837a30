"""Losses (`tapeflow.losses`) as Keras defines them: functions returning per-example losses
(reduced over the last axis; reduce the batch with `reduce_mean`), and classes applying a
reduction ("sum_over_batch_size", "sum" or "none") and optional sample weights.

Probabilities are clipped to [1e-7, 1 - 1e-7] before logarithms, as Keras does.
"""
from __future__ import annotations

import warnings

from .._core.convert import convert_to_tensor
from .._core.errors import InvalidArgumentError
from .._core.shape import compatible
from .._core.tensor import Tensor
from ..ops._define import composite
from ..ops.array import expand_dims, squeeze
from ..ops.indexing import where
from ..ops.math import abs as _abs, cast, clip_by_value, log, squared_difference
from ..ops.nn import (sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits,
                      sparse_softmax_cross_entropy_with_logits)
from ..ops.reduction import reduce_mean, reduce_sum

__all__ = ["mean_squared_error", "mean_absolute_error", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "huber", "MSE", "MAE",
           "mse", "mae", "Loss", "MeanSquaredError", "MeanAbsoluteError",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "BinaryCrossentropy",
           "Huber"]

EPSILON = 1e-7  # Keras's backend.epsilon()
FLOATX = "float32"  # Keras's backend.floatx(): the dtype loss objects compute in


def _operands(op: str, y_true, y_pred) -> tuple[Tensor, Tensor]:
    y_pred = convert_to_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: y_pred must be floating-point, got "
                                   f"{y_pred.dtype.name}")
    return cast(y_true, y_pred.dtype), y_pred


def _last_axis_mean(x: Tensor) -> Tensor:
    # A 0-d pair is its own single example: nothing to reduce.
    return reduce_mean(x, axis=-1) if x.ndim else x


def _same_shapes(op: str, y_true: Tensor, y_pred: Tensor) -> None:
    if not compatible(y_true._shape, y_pred._shape):  # a traced batch dim may be None
        raise ValueError(f"{op}: y_true of shape {list(y_true._shape)} and y_pred of shape "
                         f"{list(y_pred._shape)} must have the same shape")


# --------------------------------------------------------------------------- functions


@composite("mean_squared_error")
def mean_squared_error(y_true, y_pred) -> Tensor:
    """`mean((y_pred - y_true)², axis=-1)`. Labels [N] and predictions [N, 1] (or the
    reverse) are compared element by element (`same_rank`), as Keras 3 does, not
    broadcast to [N, N].

    Example:
        >>> tf.losses.mean_squared_error([[0., 1.]], [[1., 1.]]).numpy()
        array([0.5], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("mean_squared_error", y_true, y_pred))
    return _last_axis_mean(squared_difference(y_pred, y_true))


@composite("mean_absolute_error")
def mean_absolute_error(y_true, y_pred) -> Tensor:
    """`mean(|y_pred - y_true|, axis=-1)`, ranks aligned as in `mean_squared_error`.

    Example:
        >>> tf.losses.mean_absolute_error([[0., 1.]], [[2., 1.]]).numpy()
        array([1.], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("mean_absolute_error", y_true, y_pred))
    return _last_axis_mean(_abs(y_pred - y_true))


def _carried_logits(op: str, y_pred, from_logits: bool, made_by: str) -> tuple:
    """(y_pred, from_logits), or the logits a Keras softmax/sigmoid output carries and True
    (Keras 3 with TensorFlow: the loss and its gradient stay exact where the probabilities
    saturate, instead of coming from probabilities clipped to [1e-7, 1 - 1e-7])."""
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is None:
        return y_pred, from_logits
    if from_logits:
        warnings.warn(f'"`{op}` received `from_logits=True`, but the `output` argument was '
                      f"produced by a {made_by} activation and thus does not represent "
                      'logits. Was this intended?"', stacklevel=3)
    return logits, True


@composite("categorical_crossentropy")
def categorical_crossentropy(y_true, y_pred, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Cross-entropy between one-hot (or soft) labels and predicted probabilities (or
    logits) along `axis`. `label_smoothing` mixes the labels with the uniform distribution.
    Predictions are renormalized to sum to 1 and clipped to [1e-7, 1 - 1e-7].

    Example:
        >>> tf.losses.categorical_crossentropy([[0., 1.]], [[0.5, 0.5]]).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "categorical_crossentropy"
    y_pred, from_logits = _carried_logits(op, y_pred, from_logits, "Softmax")
    y_true, y_pred = _operands(op, y_true, y_pred)
    _same_shapes(op, y_true, y_pred)
    if y_pred.ndim == 0:
        raise ValueError(f"{op}: y_pred must have a class axis, got shape []")
    if label_smoothing:
        classes = y_pred._shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        return softmax_cross_entropy_with_logits(y_true, y_pred, axis=axis)
    probs = y_pred / reduce_sum(y_pred, axis, keepdims=True)
    probs = clip_by_value(probs, EPSILON, 1.0 - EPSILON)
    return -reduce_sum(y_true * log(probs), axis)


@composite("sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(y_true, y_pred, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy between integer class labels (y_pred's shape without the class axis,
    or with a trailing 1) and predicted probabilities or logits.

    Example:
        >>> tf.losses.sparse_categorical_crossentropy([1], [[0.5, 0.5]]).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "sparse_categorical_crossentropy"
    y_pred, from_logits = _carried_logits(op, y_pred, from_logits, "Softmax")
    y_pred = convert_to_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: y_pred must be floating-point, got "
                                   f"{y_pred.dtype.name}")
    if axis not in (-1, y_pred.ndim - 1):
        raise ValueError(f"{op}: only the last axis may hold the classes, got axis={axis}")
    labels = convert_to_tensor(y_true)
    if y_pred.ndim == 0:
        raise ValueError(f"{op}: y_pred must have a class axis, got shape []")
    if labels.ndim == y_pred.ndim and labels.ndim and labels._shape[-1] == 1:
        labels = squeeze(labels, -1)
    if tuple(labels._shape) != tuple(y_pred._shape[:-1]):
        raise ValueError(f"{op}: y_true of shape {list(convert_to_tensor(y_true)._shape)} "
                         f"does not match y_pred of shape {list(y_pred._shape)} (expected "
                         f"{list(y_pred._shape[:-1])} or {list(y_pred._shape[:-1]) + [1]})")
    if labels.dtype.name not in ("int32", "int64"):  # floats, uint8 labels: as Keras
        labels = cast(labels, "int64")
    if not from_logits:
        # Keras: log of the clipped probabilities, used as logits (so renormalized)
        y_pred = log(clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    return sparse_softmax_cross_entropy_with_logits(labels, y_pred)


@composite("binary_crossentropy")
def binary_crossentropy(y_true, y_pred, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Mean over `axis` of the elementwise binary cross-entropy of labels in [0, 1] and
    probabilities (clipped to [1e-7, 1 - 1e-7], then the logs: Keras 3's formula, not
    Keras 2's, which also added 1e-7 inside the logs) or logits. `label_smoothing` pulls the labels towards 0.5.

    Example:
        >>> tf.losses.binary_crossentropy([[1., 0.]], [[0.5, 0.5]]).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "binary_crossentropy"
    y_pred, from_logits = _carried_logits(op, y_pred, from_logits, "Sigmoid")
    y_true, y_pred = _operands(op, y_true, y_pred)
    _same_shapes(op, y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per_element = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per_element = -(y_true * log(p) + (1.0 - y_true) * log(1.0 - p))
    if per_element.ndim == 0:
        return per_element
    return reduce_mean(per_element, axis=axis)


@composite("huber")
def huber(y_true, y_pred, delta: float = 1.0) -> Tensor:
    """Mean over the last axis of `0.5 e²` where `|e| <= delta`, else
    `delta (|e| - 0.5 delta)`, for `e = y_pred - y_true` (ranks aligned as in
    `mean_squared_error`).

    Example:
        >>> tf.losses.huber([[0., 0.]], [[0.5, 3.]]).numpy()
        array([1.3125], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("huber", y_true, y_pred))
    error = y_pred - y_true
    abs_error = _abs(error)
    delta = convert_to_tensor(delta, dtype=y_pred.dtype)
    quadratic = 0.5 * error * error
    linear = delta * abs_error - 0.5 * delta * delta
    return _last_axis_mean(where(abs_error <= delta, quadratic, linear))


MSE = mse = mean_squared_error
MAE = mae = mean_absolute_error


# --------------------------------------------------------------------------- classes

def same_rank(y_true, y_pred) -> tuple[Tensor, Tensor]:
    """Keras's loss classes line up labels and predictions whose ranks differ by one in a
    last axis of size 1: labels [N] with predictions [N, 1] compare element by element
    (not broadcast to [N, N]); [N] labels with [N, 10] predictions stay as they are."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if y_true.ndim == y_pred.ndim + 1 and y_true._shape[-1] == 1:
        if y_pred.ndim == 1:
            y_pred = expand_dims(y_pred, -1)
        else:
            y_true = squeeze(y_true, -1)
    elif y_pred.ndim == y_true.ndim + 1 and y_pred._shape[-1] == 1:
        if y_true.ndim == 1:
            y_true = expand_dims(y_true, -1)
        else:
            y_pred = squeeze(y_pred, -1)
    return y_true, y_pred


def _as_floatx(x) -> Tensor:
    x = convert_to_tensor(x)
    if x.dtype.name == FLOATX:
        return x
    out = cast(x, FLOATX)
    logits = getattr(x, "_keras_logits", None)
    if logits is not None:  # (the probabilities' logits come along)
        out._keras_logits = cast(logits, FLOATX)
    return out


_REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "none")


class Loss:
    """A loss function with a reduction: "sum_over_batch_size" (also "auto"; the sum of
    the weighted per-example losses divided by their number), "sum" or "none".

    Example:
        >>> float(tf.losses.MeanSquaredError()([[0.], [1.]], [[1.], [1.]]))
        0.5
    """

    def __init__(self, reduction: str = "sum_over_batch_size", name: str | None = None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: invalid reduction {reduction!r}; "
                             f"expected one of {list(_REDUCTIONS)}")
        self.reduction = reduction
        self.name = name or type(self).__name__

    def call(self, y_true, y_pred) -> Tensor:
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None) -> Tensor:
        # Keras 3's Loss converts both operands to its dtype (floatx, float32) first, so a
        # loss object gives float32 for float64 (or float16) inputs; the functions keep
        # y_pred's dtype. Integer labels come back exactly (class ids < 2**24).
        y_true, y_pred = _as_floatx(y_true), _as_floatx(y_pred)
        losses = self.call(y_true, y_pred)
        if sample_weight is not None:
            weight = cast(sample_weight, losses.dtype)
            if weight.ndim == losses.ndim + 1 and weight._shape[-1] == 1:
                weight = squeeze(weight, -1)
            losses = losses * weight
        if self.reduction == "none":
            return losses
        total = reduce_sum(losses)
        if self.reduction == "sum":
            return total
        count = 1
        for d in losses._shape:
            count *= d
        return total / max(count, 1) if count else total

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}


class _Wrapper(Loss):
    _fn = None

    def __init__(self, reduction: str = "sum_over_batch_size", name: str | None = None,
                 **options):
        super().__init__(reduction, name)
        self._options = options

    def call(self, y_true, y_pred) -> Tensor:
        y_true, y_pred = same_rank(y_true, y_pred)
        return type(self)._fn(y_true, y_pred, **self._options)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._options}


class MeanSquaredError(_Wrapper):
    """`mean_squared_error` with a reduction."""
    _fn = staticmethod(mean_squared_error)

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "mean_squared_error"):
        super().__init__(reduction, name)


class MeanAbsoluteError(_Wrapper):
    """`mean_absolute_error` with a reduction."""
    _fn = staticmethod(mean_absolute_error)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_absolute_error"):
        super().__init__(reduction, name)


class CategoricalCrossentropy(_Wrapper):
    """`categorical_crossentropy` with a reduction."""
    _fn = staticmethod(categorical_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = "sum_over_batch_size",
                 name: str = "categorical_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(_Wrapper):
    """`sparse_categorical_crossentropy` with a reduction."""
    _fn = staticmethod(sparse_categorical_crossentropy)

    def __init__(self, from_logits: bool = False, reduction: str = "sum_over_batch_size",
                 name: str = "sparse_categorical_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits)


class BinaryCrossentropy(_Wrapper):
    """`binary_crossentropy` with a reduction."""
    _fn = staticmethod(binary_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = "sum_over_batch_size",
                 name: str = "binary_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class Huber(_Wrapper):
    """`huber` with a reduction."""
    _fn = staticmethod(huber)

    def __init__(self, delta: float = 1.0, reduction: str = "sum_over_batch_size",
                 name: str = "huber_loss"):
        super().__init__(reduction, name, delta=delta)
