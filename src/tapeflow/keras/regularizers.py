"""`tf.keras.regularizers`: weight penalties a layer adds to `model.losses` (and so to the
loss `fit` minimizes and `fit`/`evaluate` report).

Example:
    >>> float(tf.keras.regularizers.L2(0.1)(tf.constant([1.0, 2.0])))
    0.5
"""
from __future__ import annotations

from ..ops.creation import zeros
from ..ops.math import abs as _abs, square
from ..ops.reduction import reduce_sum

__all__ = ["Regularizer", "L1", "L2", "L1L2", "get", "l1", "l2", "l1_l2"]


class Regularizer:
    """A penalty `regularizer(weight) -> scalar`."""

    def __call__(self, x):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


def _factor(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name}: the factor must be a non-negative number, got {value!r}")
    return float(value)


class L1L2(Regularizer):
    """`l1 * sum(|x|) + l2 * sum(x²)`."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1, self.l2 = _factor("L1L2", l1), _factor("L1L2", l2)

    def __call__(self, x):
        terms = []
        if self.l1:
            terms.append(self.l1 * reduce_sum(_abs(x)))
        if self.l2:
            terms.append(self.l2 * reduce_sum(square(x)))
        if not terms:
            return zeros([], x.dtype)
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """`l1 * sum(|x|)` (l1 = 0.01 by default, as Keras)."""

    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(L1L2):
    """`l2 * sum(x²)` (l2 = 0.01 by default, as Keras).

    Example: `Dense(64, kernel_regularizer=tf.keras.regularizers.L2(0.001))`.
    """

    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}


def get(identifier) -> Regularizer | None:
    """A regularizer for a name ("l1", "l2", "l1_l2"), a Regularizer or callable (as is),
    or None."""
    if identifier is None or isinstance(identifier, Regularizer) or (
            callable(identifier) and not isinstance(identifier, str)):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    if isinstance(identifier, dict) and identifier.get("class_name") in (
            "L1", "L2", "L1L2"):  # what serialize (get_config) wrote
        return {"L1": L1, "L2": L2, "L1L2": L1L2}[identifier["class_name"]](
            **identifier.get("config", {}))
    raise ValueError(f"Could not interpret regularizer identifier {identifier!r}")


def serialize(regularizer) -> dict | None:
    if regularizer is None:
        return None
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
