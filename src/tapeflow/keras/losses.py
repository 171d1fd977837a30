"""`tf.keras.losses`: tapeflow's losses (train/losses.py) and `get`, which turns the names
`compile` takes ("mse", "sparse_categorical_crossentropy", ...) into Loss objects.

Example:
    >>> loss = tf.keras.losses.get("mse")
    >>> float(loss([[0.0], [1.0]], [[1.0], [1.0]]))
    0.5
"""
from __future__ import annotations

from ..train.losses import *  # noqa: F401,F403
from ..train import losses as _losses
from ..train.losses import Loss, same_rank

__all__ = list(_losses.__all__) + ["LossFunctionWrapper", "get"]


class LossFunctionWrapper(Loss):
    """A loss function `(y_true, y_pred) -> per-example losses` with a reduction."""

    def __init__(self, fn, reduction: str = "sum_over_batch_size", name: str | None = None,
                 **kwargs):
        super().__init__(reduction, name or getattr(fn, "__name__", "loss"))
        self._fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = same_rank(y_true, y_pred)
        return self._fn(y_true, y_pred, **self._fn_kwargs)


_BY_NAME = {
    "mse": _losses.MeanSquaredError, "mean_squared_error": _losses.MeanSquaredError,
    "mae": _losses.MeanAbsoluteError, "mean_absolute_error": _losses.MeanAbsoluteError,
    "categorical_crossentropy": _losses.CategoricalCrossentropy,
    "sparse_categorical_crossentropy": _losses.SparseCategoricalCrossentropy,
    "binary_crossentropy": _losses.BinaryCrossentropy,
    "huber": _losses.Huber, "huber_loss": _losses.Huber,
}


def get(identifier) -> Loss:
    """A Loss for a name, a Loss (as is), a Loss class, or a function (wrapped)."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown loss {identifier!r}; known names: {sorted(_BY_NAME)}")
        return cls()
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise ValueError(f"Could not interpret loss identifier {identifier!r}")
