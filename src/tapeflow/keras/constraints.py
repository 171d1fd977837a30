"""`keras.constraints`: projections applied to a weight after each optimizer update.

A layer given `kernel_constraint=` (or `add_weight(constraint=...)`) stores the constraint
on the weight as `variable.constraint`; after each update the optimizer assigns
`constraint(variable)` back to the weight, so the weight stays in the constrained set.

Example:
    >>> tf.keras.constraints.NonNeg()(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    >>> tf.keras.constraints.get("max_norm").get_config()
    {'max_value': 2, 'axis': 0}
"""
from __future__ import annotations

import inspect

from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..ops.math import cast, clip_by_value, maximum, sqrt, square
from ..ops.reduction import reduce_sum
from .serialization_lib import deserialize_keras_object, serialize_keras_object

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "max_norm",
           "min_max_norm", "non_neg", "unit_norm", "get", "serialize", "deserialize"]

_EPSILON = 1e-7  # Keras's backend.epsilon(): keeps a zero column at zero


class Constraint:
    """The base class: a callable `constraint(w) -> projected w` with `get_config`. The
    base constraint leaves the weight unchanged.

    Example:
        >>> class Clip(tf.keras.constraints.Constraint):
        ...     def __call__(self, w):
        ...         return tf.clip_by_value(w, -1.0, 1.0)
    """

    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Constraint":
        return cls(**config)


def _norms(w: Tensor, axis) -> Tensor:
    axis = list(axis) if isinstance(axis, (list, tuple)) else axis
    return sqrt(reduce_sum(square(w), axis=axis, keepdims=True))


def _float(w) -> Tensor:
    w = convert_to_tensor(w)
    return w if w.dtype.is_floating else cast(w, "float32")


class MaxNorm(Constraint):
    """Rescales the weights of each unit so that their L2 norm (over `axis`) is at most
    `max_value`: `w * clip(norm, 0, max_value) / (epsilon + norm)`. For a Dense kernel
    `(input_dim, units)`, `axis=0` bounds each unit's incoming weights.

    Example:
        >>> tf.keras.layers.Dense(4, kernel_constraint=tf.keras.constraints.MaxNorm(2.0))
    """

    def __init__(self, max_value: float = 2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = _float(w)
        norms = _norms(w, self.axis)
        desired = clip_by_value(norms, 0.0, cast(self.max_value, norms.dtype))
        return w * (desired / (_EPSILON + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    """Rescales the weights of each unit towards an L2 norm (over `axis`) in
    `[min_value, max_value]`: the new norm is `rate * clip(norm, min_value, max_value) +
    (1 - rate) * norm` (`rate=1` enforces the bounds at once).

    Example:
        >>> c = tf.keras.constraints.MinMaxNorm(min_value=0.5, max_value=1.0, rate=0.5)
    """

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, \
            axis

    def __call__(self, w):
        w = _float(w)
        norms = _norms(w, self.axis)
        clipped = clip_by_value(norms, cast(self.min_value, norms.dtype),
                                cast(self.max_value, norms.dtype))
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (_EPSILON + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative weights to zero.

    Example:
        >>> tf.keras.constraints.NonNeg()(tf.constant([-0.5, 0.5])).numpy()
        array([0. , 0.5], dtype=float32)
    """

    def __call__(self, w):
        w = convert_to_tensor(w)
        return maximum(w, cast(0, w.dtype))


class UnitNorm(Constraint):
    """Scales the weights of each unit to an L2 norm (over `axis`) of one:
    `w / (epsilon + norm)`.

    Example:
        >>> tf.keras.constraints.UnitNorm()(tf.constant([[3.0], [4.0]])).numpy()
        array([[0.6],
               [0.8]], dtype=float32)
    """

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = _float(w)
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm

_BY_NAME = {"Constraint": Constraint, "MaxNorm": MaxNorm, "MinMaxNorm": MinMaxNorm,
            "NonNeg": NonNeg, "UnitNorm": UnitNorm, "constraint": Constraint, "max_norm": MaxNorm,
            "min_max_norm": MinMaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm}


def serialize(constraint) -> dict | None:
    """A constraint as Keras writes it: `{"module": "keras.constraints", "class_name",
    "config", "registered_name"}` (None stays None)."""
    return serialize_keras_object(constraint)


def deserialize(config, custom_objects: dict | None = None) -> Constraint | None:
    """The constraint a `serialize` dict (or a bare name) describes; custom classes come
    from `custom_objects`, a `custom_object_scope` or `register_keras_serializable`."""
    return deserialize_keras_object(config, custom_objects=custom_objects,
                                    module_objects=_BY_NAME)


def get(identifier) -> Constraint | None:
    """A constraint from a name ("max_norm", "MaxNorm", "non_neg", ...), a config dict, a
    class (instantiated with its defaults), a callable (as is) or None.

    Example:
        >>> tf.keras.constraints.get("unit_norm").get_config()
        {'axis': 0}
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
    elif isinstance(identifier, str):
        obj = _BY_NAME.get(identifier)
    else:
        obj = identifier
    if callable(obj):
        return obj() if inspect.isclass(obj) else obj
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
