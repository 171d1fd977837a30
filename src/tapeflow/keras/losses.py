"""`tf.keras.losses`: tapeflow's losses (train/losses.py); `get`, which turns an identifier
into a loss as Keras 3's does (a snake-case name gives the per-example function, a class
name an instance); and `as_loss_object`, what `compile` uses (functions wrapped, with
their reduction, in `LossFunctionWrapper`).

Example:
    >>> tf.keras.losses.get("mse")([[0.0], [1.0]], [[1.0], [1.0]]).numpy()   # per example
    array([1., 0.], dtype=float32)
    >>> float(tf.keras.losses.get("MeanSquaredError")([[0.0], [1.0]], [[1.0], [1.0]]))
    0.5
"""
from __future__ import annotations

from ..train.losses import *  # noqa: F401,F403
from ..train import losses as _losses
from ..train.losses import Loss, same_rank

__all__ = list(_losses.__all__) + ["LossFunctionWrapper", "get"]


class LossFunctionWrapper(Loss):
    """A loss function `(y_true, y_pred) -> per-example losses` with a reduction."""

    def __init__(self, fn, reduction: str | None = "sum_over_batch_size",
                 name: str | None = None, dtype=None, **kwargs):
        super().__init__(reduction, name or getattr(fn, "__name__", "loss"), dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = same_rank(y_true, y_pred)
        return self._fn(y_true, y_pred, **self._fn_kwargs)


# Keras 3's names: snake case for the functions (and their short aliases), the class names
# for the Loss classes
_FUNCTIONS = {
    "mse": _losses.mean_squared_error, "mean_squared_error": _losses.mean_squared_error,
    "mae": _losses.mean_absolute_error, "mean_absolute_error": _losses.mean_absolute_error,
    "categorical_crossentropy": _losses.categorical_crossentropy,
    "sparse_categorical_crossentropy": _losses.sparse_categorical_crossentropy,
    "binary_crossentropy": _losses.binary_crossentropy,
    "huber": _losses.huber, "huber_loss": _losses.huber,
    "bce": _losses.binary_crossentropy,
    "binary_focal_crossentropy": _losses.binary_focal_crossentropy,
    "categorical_focal_crossentropy": _losses.categorical_focal_crossentropy,
    "hinge": _losses.hinge, "squared_hinge": _losses.squared_hinge,
    "categorical_hinge": _losses.categorical_hinge,
    "kl_divergence": _losses.kl_divergence, "kld": _losses.kl_divergence,
    "log_cosh": _losses.log_cosh,
    "mean_absolute_percentage_error": _losses.mean_absolute_percentage_error,
    "mape": _losses.mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": _losses.mean_squared_logarithmic_error,
    "msle": _losses.mean_squared_logarithmic_error,
    "poisson": _losses.poisson, "cosine_similarity": _losses.cosine_similarity,
    "dice": _losses.dice, "tversky": _losses.tversky, "ctc": _losses.ctc,
}
_CLASSES = {cls.__name__: cls for cls in (
    _losses.MeanSquaredError, _losses.MeanAbsoluteError, _losses.CategoricalCrossentropy,
    _losses.SparseCategoricalCrossentropy, _losses.BinaryCrossentropy, _losses.Huber,
    _losses.BinaryFocalCrossentropy, _losses.CategoricalFocalCrossentropy, _losses.Hinge,
    _losses.SquaredHinge, _losses.CategoricalHinge, _losses.KLDivergence, _losses.LogCosh,
    _losses.MeanAbsolutePercentageError, _losses.MeanSquaredLogarithmicError,
    _losses.Poisson, _losses.CosineSimilarity, _losses.Dice, _losses.Tversky, _losses.CTC)}


def get(identifier):
    """A loss as Keras 3's `keras.losses.get` gives it: a Loss (as is), a Loss class (an
    instance), a class name ("MeanSquaredError": an instance), a function name ("mse",
    "mean_squared_error": the per-example function), a callable (as is); None for None."""
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        fn = _FUNCTIONS.get(identifier) or _FUNCTIONS.get(identifier.lower())
        if fn is None:
            raise ValueError(f"Unknown loss {identifier!r}; known names: "
                             f"{sorted(_FUNCTIONS) + sorted(_CLASSES)}")
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier {identifier!r}")


def as_loss_object(identifier) -> Loss:
    """`get(identifier)` as a Loss, a function wrapped with the default reduction (what
    `compile` uses, as Keras 3's CompileLoss)."""
    loss = get(identifier)
    if isinstance(loss, Loss):
        return loss
    return LossFunctionWrapper(loss, name=getattr(loss, "__name__", None))


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
