"""Losses (`tapeflow.losses`) as Keras defines them: functions returning per-example losses
(reduced over the last axis; reduce the batch with `reduce_mean`), and classes applying a
reduction ("sum_over_batch_size", "mean", "mean_with_sample_weight", "sum", "none" or None)
and optional sample weights.

Probabilities are clipped to [1e-7, 1 - 1e-7] before logarithms, as Keras does.
"""
from __future__ import annotations

import warnings

from .._core.convert import convert_to_tensor
from .._core.errors import InvalidArgumentError
from .._core.shape import compatible
from .._core.tensor import Tensor
from ..ops._define import composite
from ..ops.array import concat, expand_dims, reshape, shape, size, squeeze, stack
from ..ops.creation import zeros_like
from ..ops.indexing import gather, where
from ..ops.math import (abs as _abs, cast, clip_by_value, divide_no_nan, equal, exp, log,
                        logical_and, logical_or, maximum, minimum, not_equal, pow as _pow,
                        rsqrt, sigmoid, softplus, square, squared_difference)
from ..ops.nn import (log_softmax, sigmoid_cross_entropy_with_logits, softmax,
                      softmax_cross_entropy_with_logits,
                      sparse_softmax_cross_entropy_with_logits)
from ..ops.reduction import reduce_all, reduce_max, reduce_mean, reduce_sum

__all__ = ["mean_squared_error", "mean_absolute_error", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "huber", "MSE", "MAE",
           "mse", "mae", "Loss", "MeanSquaredError", "MeanAbsoluteError",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "BinaryCrossentropy",
           "Huber", "binary_focal_crossentropy", "categorical_focal_crossentropy", "hinge",
           "squared_hinge", "categorical_hinge", "kl_divergence", "log_cosh",
           "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "poisson",
           "cosine_similarity", "dice", "tversky", "ctc", "MAPE", "MSLE", "KLD", "mape",
           "msle", "kld", "CTC",
           "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "Hinge", "SquaredHinge",
           "CategoricalHinge", "KLDivergence", "LogCosh", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "Poisson", "CosineSimilarity", "Dice", "Tversky"]

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
    Keras 2's, which also added 1e-7 inside the logs) or logits. `label_smoothing` pulls
    the labels towards 0.5.

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


def _hinge_labels(y_true: Tensor) -> Tensor:
    # Keras: labels that are all 0 or 1 mean {-1, 1}; any other labels are taken as given
    binary = reduce_all(logical_or(equal(y_true, 0.0), equal(y_true, 1.0)))
    return where(binary, 2.0 * y_true - 1.0, y_true)


@composite("hinge")
def hinge(y_true, y_pred) -> Tensor:
    """`mean(maximum(1 - y_true * y_pred, 0), axis=-1)`; labels all in {0, 1} are read as
    {-1, 1} first.

    Example:
        >>> tf.losses.hinge([[1., 0.]], [[0.5, -2.]]).numpy()
        array([0.25], dtype=float32)
    """
    y_true, y_pred = _operands("hinge", y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return _last_axis_mean(maximum(1.0 - y_true * y_pred, 0.0))


@composite("squared_hinge")
def squared_hinge(y_true, y_pred) -> Tensor:
    """`mean(maximum(1 - y_true * y_pred, 0)², axis=-1)`, labels as in `hinge`.

    Example:
        >>> tf.losses.squared_hinge([[1., 0.]], [[0.5, -2.]]).numpy()
        array([0.125], dtype=float32)
    """
    y_true, y_pred = _operands("squared_hinge", y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return _last_axis_mean(square(maximum(1.0 - y_true * y_pred, 0.0)))


@composite("categorical_hinge")
def categorical_hinge(y_true, y_pred) -> Tensor:
    """`maximum(neg - pos + 1, 0)` with `pos = sum(y_true * y_pred)` and
    `neg = max((1 - y_true) * y_pred)` over the last axis.

    Example:
        >>> tf.losses.categorical_hinge([[0., 1.]], [[0.5, 0.2]]).numpy()
        array([1.3], dtype=float32)
    """
    y_true, y_pred = _operands("categorical_hinge", y_true, y_pred)
    pos = reduce_sum(y_true * y_pred, axis=-1)
    neg = reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return maximum(neg - pos + 1.0, 0.0)


@composite("kl_divergence")
def kl_divergence(y_true, y_pred) -> Tensor:
    """`sum(y_true * log(y_true / y_pred), axis=-1)`, both clipped to [1e-7, 1] first.

    Example:
        >>> tf.losses.kl_divergence([[0.5, 0.5]], [[0.25, 0.75]]).numpy().round(5)
        array([0.14384], dtype=float32)
    """
    y_true, y_pred = _operands("kl_divergence", y_true, y_pred)
    y_true = clip_by_value(y_true, EPSILON, 1.0)
    y_pred = clip_by_value(y_pred, EPSILON, 1.0)
    return reduce_sum(y_true * log(y_true / y_pred), axis=-1)


@composite("log_cosh")
def log_cosh(y_true, y_pred) -> Tensor:
    """`mean(log(cosh(y_pred - y_true)), axis=-1)`, computed as
    `e + softplus(-2 e) - log 2`, which does not overflow for large errors.

    Example:
        >>> tf.losses.log_cosh([[0., 1.], [0., 0.]], [[1., 1.], [0., 0.]]).numpy().round(5)
        array([0.21689, 0.     ], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("log_cosh", y_true, y_pred))
    error = y_pred - y_true
    log2 = convert_to_tensor(0.6931471805599453, dtype=error.dtype)
    return _last_axis_mean(error + softplus(error * -2.0) - log2)


@composite("mean_absolute_percentage_error")
def mean_absolute_percentage_error(y_true, y_pred) -> Tensor:
    """`100 * mean(|y_true - y_pred| / maximum(|y_true|, 1e-7), axis=-1)`.

    Example:
        >>> tf.losses.mean_absolute_percentage_error([[2., 4.]], [[1., 5.]]).numpy()
        array([37.5], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("mean_absolute_percentage_error", y_true, y_pred))
    diff = _abs((y_true - y_pred) / maximum(_abs(y_true), EPSILON))
    return 100.0 * _last_axis_mean(diff)


@composite("mean_squared_logarithmic_error")
def mean_squared_logarithmic_error(y_true, y_pred) -> Tensor:
    """`mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))², axis=-1)`.

    Example:
        >>> tf.losses.mean_squared_logarithmic_error([[0., 1.]], [[1., 1.]]).numpy()
        array([0.24022643], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("mean_squared_logarithmic_error", y_true, y_pred))
    first = log(maximum(y_pred, EPSILON) + 1.0)
    second = log(maximum(y_true, EPSILON) + 1.0)
    return _last_axis_mean(square(first - second))


@composite("poisson")
def poisson(y_true, y_pred) -> Tensor:
    """`mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)`.

    Example:
        >>> tf.losses.poisson([[1., 0.]], [[1., 2.]]).numpy()
        array([1.5], dtype=float32)
    """
    y_true, y_pred = _operands("poisson", y_true, y_pred)
    return _last_axis_mean(y_pred - y_true * log(y_pred + EPSILON))


def _l2_normalize(x: Tensor, axis) -> Tensor:
    # Keras's ops.normalize: x * min(rsqrt(sum x²), 1 / eps), so a zero vector stays zero
    inv_norm = minimum(rsqrt(reduce_sum(square(x), axis=axis, keepdims=True)), 1.0 / EPSILON)
    return x * inv_norm


@composite("cosine_similarity")
def cosine_similarity(y_true, y_pred, axis: int = -1) -> Tensor:
    """`-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`: -1 for parallel vectors,
    0 for orthogonal ones or where either is zero.

    Example:
        >>> tf.losses.cosine_similarity([[0., 1.], [1., 1.]], [[1., 0.], [1., 1.]]).numpy()
        array([-0.        , -0.99999994], dtype=float32)
    """
    y_true, y_pred = same_rank(*_operands("cosine_similarity", y_true, y_pred))
    return -reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


@composite("dice")
def dice(y_true, y_pred, axis=None) -> Tensor:
    """`1 - 2 sum(y_true y_pred) / (sum(y_true) + sum(y_pred) + 1e-7)` over `axis` (None:
    every axis, one value for the whole batch, as Keras).

    Example:
        >>> round(float(tf.losses.dice([[1., 0.]], [[1., 1.]])), 5)
        0.33333
    """
    y_true, y_pred = _operands("dice", y_true, y_pred)
    intersection = reduce_sum(y_true * y_pred, axis=axis)
    union = reduce_sum(y_true, axis=axis) + reduce_sum(y_pred, axis=axis) + EPSILON
    return 1.0 - 2.0 * intersection / union


@composite("tversky")
def tversky(y_true, y_pred, alpha: float = 0.5, beta: float = 0.5, axis=None) -> Tensor:
    """`1 - tp / (tp + alpha fp + beta fn + 1e-7)` with Keras's sums over `axis`:
    `tp = sum(y_true y_pred)`, `fp = sum((1 - y_pred) y_true)`, `fn = sum(y_pred (1 - y_true))`.

    Example:
        >>> round(float(tf.losses.tversky([[1., 0.]], [[1., 1.]])), 5)
        0.33333
    """
    y_true, y_pred = _operands("tversky", y_true, y_pred)
    tp = reduce_sum(y_true * y_pred, axis=axis)
    fp = reduce_sum((1.0 - y_pred) * y_true, axis=axis)
    fn = reduce_sum(y_pred * (1.0 - y_true), axis=axis)
    return 1.0 - tp / (tp + fp * alpha + fn * beta + EPSILON)


@composite("binary_focal_crossentropy")
def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Tensor:
    """Binary cross-entropy scaled by `(1 - p_t) ** gamma` (`p_t` the probability given to
    the true label) and, with `apply_class_balancing`, by `alpha` for positives and
    `1 - alpha` for negatives; mean over `axis`.

    Example:
        >>> tf.losses.binary_focal_crossentropy([[0., 1.]], [[0.6, 0.4]], gamma=2.0).numpy()
        array([0.32986468], dtype=float32)
    """
    op = "binary_focal_crossentropy"
    y_pred, from_logits = _carried_logits(op, y_pred, from_logits, "Sigmoid")
    y_true, y_pred = _operands(op, y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        # Keras takes the sigmoid, whose output carries its logits to the cross-entropy
        bce = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
        y_pred = sigmoid(y_pred)
    else:
        p = clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        bce = -(y_true * log(p) + (1.0 - y_true) * log(1.0 - p))
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = _pow(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return reduce_mean(focal, axis=axis) if focal.ndim else focal


@composite("categorical_focal_crossentropy")
def categorical_focal_crossentropy(y_true, y_pred, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, label_smoothing: float = 0.0,
                                   axis: int = -1) -> Tensor:
    """`sum(-alpha (1 - p) ** gamma y_true log p, axis)` for the predictions renormalized
    to sum to 1 (softmax of logits with `from_logits`) and clipped to [1e-7, 1 - 1e-7].

    Example:
        >>> tf.losses.categorical_focal_crossentropy([[0., 1.]], [[0.4, 0.6]]).numpy().round(5)
        array([0.02043], dtype=float32)
    """
    op = "categorical_focal_crossentropy"
    if isinstance(axis, bool):
        raise ValueError(f"{op}: axis must be an int, got {axis!r}")
    y_true, y_pred = _operands(op, y_true, y_pred)
    if y_pred.ndim == 0:
        raise ValueError(f"{op}: y_pred must have a class axis, got shape []")
    if y_pred._shape[-1] == 1:
        warnings.warn(f"{op}: expected y_pred of shape (batch_size, num_classes) with "
                      f"num_classes > 1, got {list(y_pred._shape)}; consider "
                      "binary_crossentropy for 2 classes", SyntaxWarning, stacklevel=3)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true._shape[-1]
    if from_logits:
        y_pred = softmax(y_pred, axis=axis)
    output = y_pred / reduce_sum(y_pred, axis=axis, keepdims=True)
    output = clip_by_value(output, EPSILON, 1.0 - EPSILON)
    cce = -y_true * log(output)
    return reduce_sum(_pow(1.0 - output, gamma) * alpha * cce, axis=axis)


_CTC_NEG = -1e30  # log(0) for the CTC recursion: finite, so no inf - inf in gradients


def _logsumexp3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    top = maximum(maximum(a, b), c)
    return top + log(exp(a - top) + exp(b - top) + exp(c - top))


@composite("ctc")
def ctc(y_true, y_pred) -> Tensor:
    """The connectionist temporal classification loss of integer label sequences
    `y_true` [batch, max_length] (0 is the blank and pads the end) and logits `y_pred`
    [batch, time, classes], by the forward algorithm in log space (as Keras 3's, which
    takes every time step and labels up to their first padding 0).

    Example:
        >>> round(float(tf.losses.ctc([[1]], [[[0.0, 0.0], [0.0, 0.0]]])[0]), 4)
        0.2877
    """
    y_pred = convert_to_tensor(y_pred)
    labels = convert_to_tensor(y_true)
    if labels.ndim != 2:
        raise ValueError("ctc: targets `y_true` are expected to be a tensor of shape "
                         "(batch_size, max_length) in integer format. Received: "
                         f"y_true.shape={list(labels._shape)}")
    if y_pred.ndim != 3:
        raise ValueError("ctc: logits `y_pred` are expected to be a tensor of shape "
                         "(batch_size, max_length, num_classes). Received: "
                         f"y_pred.shape={list(y_pred._shape)}")
    if not y_pred.dtype.is_floating:
        y_pred = cast(y_pred, FLOATX)
    labels = cast(labels, "int32")
    steps, max_length = y_pred._shape[1], labels._shape[1]
    if steps is None or max_length is None:
        raise ValueError("ctc: the number of time steps and the labels' length must be "
                         "known (static)")
    log_probs = log_softmax(y_pred, axis=-1)
    batch = shape(labels)[0]
    # the extended labels: blank, l1, blank, l2, ..., blank (2 * max_length + 1)
    blanks = zeros_like(labels)
    ext = reshape(stack([blanks, labels], axis=2), [batch, 2 * max_length])
    ext = concat([ext, zeros_like(labels[:, :1])], axis=1)
    size_ext = 2 * max_length + 1
    # a label may skip the blank before it unless it repeats the label two places back
    previous = concat([zeros_like(ext[:, :2]), ext[:, :-2]], axis=1)
    odd = convert_to_tensor([i % 2 == 1 for i in range(size_ext)])
    can_skip = logical_and(odd, not_equal(ext, previous))
    length = reduce_sum(cast(not_equal(labels, 0), "int32"), axis=1)
    emit = gather(log_probs, ext, axis=2, batch_dims=1)  # [batch, time, size_ext]
    neg = emit[:, 0, :] * 0.0 + _CTC_NEG
    start = convert_to_tensor([i < 2 for i in range(size_ext)])
    alpha = where(start, emit[:, 0, :], neg)
    pad1 = neg[:, :1]
    pad2 = neg[:, :2]
    for t in range(1, steps):
        stay = alpha
        step = concat([pad1, alpha[:, :-1]], axis=1)
        skip = where(can_skip, concat([pad2, alpha[:, :-2]], axis=1), neg)
        alpha = _logsumexp3(stay, step, skip) + emit[:, t, :]
    last = gather(alpha, expand_dims(2 * length, 1), axis=1, batch_dims=1)[:, 0]
    before = gather(alpha, expand_dims(maximum(2 * length - 1, 0), 1), axis=1,
                    batch_dims=1)[:, 0]
    before = where(length > 0, before, last * 0.0 + _CTC_NEG)
    top = maximum(last, before)
    return -(top + log(exp(last - top) + exp(before - top)))


MAPE = mape = mean_absolute_percentage_error
MSLE = msle = mean_squared_logarithmic_error
KLD = kld = kl_divergence


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


def _as_dtype(x, dtype: str = FLOATX) -> Tensor:
    x = convert_to_tensor(x)
    if x.dtype.name == dtype:
        return x
    out = cast(x, dtype)
    logits = getattr(x, "_keras_logits", None)
    if logits is not None:  # (the probabilities' logits come along)
        out._keras_logits = cast(logits, dtype)
    return out


# Keras 3's reductions; "auto" (Keras 2's name for the batch mean) is still taken
_REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "mean", "mean_with_sample_weight",
               "none", None)
_MEANS = ("auto", "sum_over_batch_size", "mean", "mean_with_sample_weight")


def reduce_weighted_values(values, sample_weight=None,
                           reduction: str | None = "sum_over_batch_size") -> Tensor:
    """Weigh per-example losses and reduce them as Keras 3's losses do: weights lined up
    with the values (`same_rank`) then broadcast; "sum"; a mean ("sum_over_batch_size",
    "mean": the weighted sum over the number of values; "mean_with_sample_weight": over
    the sum of the weights; 0 where the divisor is 0); "none"/None, a 0-d value or an
    empty batch of shape [0]: the values as they are."""
    values = convert_to_tensor(values)
    if sample_weight is not None:
        weight = cast(sample_weight, values.dtype)
        values, weight = same_rank(values, weight)
        values = values * weight
    if reduction in (None, "none") or values.ndim == 0 or tuple(values._shape) == (0,):
        return values
    total = reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = reduce_sum(weight)
    elif None in tuple(values._shape):  # traced with an unknown batch size
        divisor = cast(size(values), total.dtype)
    else:
        count = 1
        for d in values._shape:
            count *= d
        divisor = convert_to_tensor(float(count), dtype=total.dtype)
    return divide_no_nan(total, divisor)


class Loss:
    """A loss function with a reduction: "sum_over_batch_size" (also "auto" and "mean";
    the sum of the weighted per-example losses divided by their number),
    "mean_with_sample_weight" (divided by the sum of the weights), "sum", "none" or None.
    The operands are converted to `dtype` (floatx, float32, by default) first.

    Example:
        >>> float(tf.losses.MeanSquaredError()([[0.], [1.]], [[1.], [1.]]))
        0.5
    """

    def __init__(self, reduction: str | None = "sum_over_batch_size",
                 name: str | None = None, dtype=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: invalid reduction {reduction!r}; "
                             f"expected one of {list(_REDUCTIONS)}")
        self.reduction = reduction
        self.name = name or type(self).__name__
        self._dtype = FLOATX if dtype is None else getattr(dtype, "name", dtype)

    @property
    def dtype(self) -> str:
        """The dtype the operands are converted to (floatx unless `dtype=` was given)."""
        return self._dtype

    def call(self, y_true, y_pred) -> Tensor:
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None) -> Tensor:
        # Keras 3's Loss converts both operands to its dtype (floatx, float32) first, so a
        # loss object gives float32 for float64 (or float16) inputs; the functions keep
        # y_pred's dtype. Integer labels come back exactly (class ids < 2**24).
        y_true, y_pred = _as_dtype(y_true, self._dtype), _as_dtype(y_pred, self._dtype)
        return reduce_weighted_values(self.call(y_true, y_pred), sample_weight,
                                      self.reduction)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        return cls(**config)


class _Wrapper(Loss):
    _fn = None
    _config_options = True  # whether get_config lists the function's options (as Keras)

    def __init__(self, reduction: str | None = "sum_over_batch_size",
                 name: str | None = None, dtype=None, **options):
        super().__init__(reduction, name, dtype)
        self._options = options

    def call(self, y_true, y_pred) -> Tensor:
        y_true, y_pred = same_rank(y_true, y_pred)
        return type(self)._fn(y_true, y_pred, **self._options)

    def get_config(self) -> dict:
        if not self._config_options:
            return super().get_config()
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


class BinaryFocalCrossentropy(_Wrapper):
    """`binary_focal_crossentropy` with a reduction.

    Example:
        >>> loss = tf.losses.BinaryFocalCrossentropy(gamma=2.0)
        >>> round(float(loss([[0., 1.]], [[0.6, 0.4]])), 4)
        0.3299
    """
    _fn = staticmethod(binary_focal_crossentropy)

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str | None = "sum_over_batch_size",
                 name: str = "binary_focal_crossentropy", dtype=None):
        super().__init__(reduction, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis,
                         apply_class_balancing=apply_class_balancing, alpha=alpha,
                         gamma=gamma)


class CategoricalFocalCrossentropy(_Wrapper):
    """`categorical_focal_crossentropy` with a reduction.

    Example:
        >>> loss = tf.losses.CategoricalFocalCrossentropy()
        >>> round(float(loss([[0., 1.]], [[0.4, 0.6]])), 5)
        0.02043
    """
    _fn = staticmethod(categorical_focal_crossentropy)

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str | None = "sum_over_batch_size",
                 name: str = "categorical_focal_crossentropy", dtype=None):
        super().__init__(reduction, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis, alpha=alpha,
                         gamma=gamma)


class _Plain(_Wrapper):
    """A loss function without options, with a reduction."""
    _config_options = False
    _default_name = ""

    def __init__(self, reduction: str | None = "sum_over_batch_size",
                 name: str | None = None, dtype=None):
        super().__init__(reduction, name or self._default_name, dtype)


class Hinge(_Plain):
    """`hinge` with a reduction.

    Example:
        >>> float(tf.losses.Hinge()([[1., 0.]], [[0.5, -2.]]))
        0.25
    """
    _fn, _default_name = staticmethod(hinge), "hinge"


class SquaredHinge(_Plain):
    """`squared_hinge` with a reduction.

    Example:
        >>> float(tf.losses.SquaredHinge()([[1., 0.]], [[0.5, -2.]]))
        0.125
    """
    _fn, _default_name = staticmethod(squared_hinge), "squared_hinge"


class CategoricalHinge(_Plain):
    """`categorical_hinge` with a reduction.

    Example:
        >>> round(float(tf.losses.CategoricalHinge()([[0., 1.]], [[0.5, 0.2]])), 4)
        1.3
    """
    _fn, _default_name = staticmethod(categorical_hinge), "categorical_hinge"


class KLDivergence(_Plain):
    """`kl_divergence` with a reduction.

    Example:
        >>> round(float(tf.losses.KLDivergence()([[0.5, 0.5]], [[0.25, 0.75]])), 4)
        0.1438
    """
    _fn, _default_name = staticmethod(kl_divergence), "kl_divergence"


class LogCosh(_Plain):
    """`log_cosh` with a reduction.

    Example:
        >>> round(float(tf.losses.LogCosh()([[0., 1.], [0., 0.]], [[1., 1.], [0., 0.]])), 4)
        0.1084
    """
    _fn, _default_name = staticmethod(log_cosh), "log_cosh"


class MeanAbsolutePercentageError(_Plain):
    """`mean_absolute_percentage_error` with a reduction.

    Example:
        >>> float(tf.losses.MeanAbsolutePercentageError()([[2., 4.]], [[1., 5.]]))
        37.5
    """
    _fn = staticmethod(mean_absolute_percentage_error)
    _default_name = "mean_absolute_percentage_error"


class MeanSquaredLogarithmicError(_Plain):
    """`mean_squared_logarithmic_error` with a reduction.

    Example:
        >>> round(float(tf.losses.MeanSquaredLogarithmicError()([[0., 1.]], [[1., 1.]])), 4)
        0.2402
    """
    _fn = staticmethod(mean_squared_logarithmic_error)
    _default_name = "mean_squared_logarithmic_error"


class Poisson(_Plain):
    """`poisson` with a reduction.

    Example:
        >>> float(tf.losses.Poisson()([[1., 0.]], [[1., 2.]]))
        1.5
    """
    _fn, _default_name = staticmethod(poisson), "poisson"


class CosineSimilarity(_Wrapper):
    """`cosine_similarity` along `axis` with a reduction (Keras lists no `axis` in its
    config).

    Example:
        >>> round(float(tf.losses.CosineSimilarity()([[0., 1.], [1., 1.]],
        ...                                          [[1., 0.], [1., 1.]])), 4)
        -0.5
    """
    _fn = staticmethod(cosine_similarity)
    _config_options = False

    def __init__(self, axis: int = -1, reduction: str | None = "sum_over_batch_size",
                 name: str = "cosine_similarity", dtype=None):
        super().__init__(reduction, name, dtype, axis=axis)


class Dice(_Wrapper):
    """`dice` over `axis` (None: the whole batch, one value) with a reduction.

    Example:
        >>> round(float(tf.losses.Dice()([[1., 0.]], [[1., 1.]])), 4)
        0.3333
    """
    _fn = staticmethod(dice)

    def __init__(self, reduction: str | None = "sum_over_batch_size", name: str = "dice",
                 axis=None, dtype=None):
        super().__init__(reduction, name, dtype, axis=axis)


class Tversky(_Wrapper):
    """`tversky` over `axis` (None: the whole batch, one value) with a reduction.

    Example:
        >>> round(float(tf.losses.Tversky()([[1., 0.]], [[1., 1.]])), 4)
        0.3333
    """
    _fn = staticmethod(tversky)

    def __init__(self, alpha: float = 0.5, beta: float = 0.5,
                 reduction: str | None = "sum_over_batch_size", name: str = "tversky",
                 axis=None, dtype=None):
        super().__init__(reduction, name, dtype, alpha=alpha, beta=beta, axis=axis)


class CTC(_Plain):
    """`ctc` with a reduction.

    Example:
        >>> round(float(tf.losses.CTC()([[1]], [[[0.0, 0.0], [0.0, 0.0]]])), 4)
        0.2877
    """
    _fn, _default_name = staticmethod(ctc), "ctc"
