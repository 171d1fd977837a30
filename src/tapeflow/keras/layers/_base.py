"""Helpers the layer modules share: argument parsing, configs, the weightless base."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import math as _math
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers, \
    serialization_lib as _utils
from ..layer import Layer, is_several


def _builtin_activation(name) -> bool:
    try:
        _layers.get_activation(name)
    except ValueError:
        return False
    return True


def get_activation(identifier):
    """The activation function a layer's `activation=` argument names, as Keras's
    `activations.get` finds it: a built-in name, a serialized function (Keras 3 writes a
    user's function as `{"class_name": "function", "config": "<name>", ...}`), a name in
    the active `custom_object_scope` or registry (as `load_model(custom_objects=...)`
    sets one), a callable (as is) or None (the identity)."""
    if isinstance(identifier, dict):
        fn = _utils.deserialize_keras_object(identifier)
        if not callable(fn):
            raise ValueError(f"Could not interpret activation function identifier: "
                             f"{identifier!r}")
        return fn
    if isinstance(identifier, str) and not _builtin_activation(identifier):
        found = _utils.get_registered_object(identifier)
        if callable(found):
            return found
    return _layers.get_activation(identifier)


def activation_name(identifier):
    """An activation as a layer's config holds it (Keras 3's `activations.serialize`):
    a built-in one by name, a user's function as its serialized entry, which names it
    for `custom_objects` and the registry."""
    if identifier is None:
        return "linear"
    if isinstance(identifier, dict):
        return identifier
    if isinstance(identifier, str):
        return identifier.lower() if _builtin_activation(identifier) else identifier
    name = getattr(identifier, "__name__", None)
    if isinstance(name, str) and _builtin_activation(name):
        return name
    return _utils.serialize_keras_object(identifier)


def base_kwargs(kwargs: dict) -> tuple:
    """(name, dtype, the rest) of a layer's keyword arguments."""
    kwargs = dict(kwargs)
    return kwargs.pop("name", None), kwargs.pop("dtype", None) or _dt.float32, kwargs


def kernel_config(layer) -> dict:
    """The config entries every layer with a kernel and a bias shares (Dense, Conv1D,
    Conv2D): activation, use_bias, initializers, regularizers."""
    return {"activation": layer._activation_id, "use_bias": layer.use_bias,
            "kernel_initializer": _init.serialize(layer.kernel_initializer),
            "bias_initializer": _init.serialize(layer.bias_initializer),
            "kernel_regularizer": _regularizers.serialize(layer._regularizer_for["kernel"]),
            "bias_regularizer": _regularizers.serialize(layer._regularizer_for["bias"]),
            **{f"{w}_constraint": _constraints.serialize(c)
               for w, c in getattr(layer, "_constraint_for", {}).items()}}


def int_one(layer: str, arg: str, value) -> int:
    """A positive int, or a 1-tuple of one (Keras writes `(3,)` in configs)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{layer}: {arg} must be an int or a tuple of 1 int, got "
                             f"{value!r}")
        value = value[0]
    return _layers._positive_int(layer, arg, value)


class Stateless(Layer):
    """A layer without weights whose inputs keep their dtype."""

    def _convert_input(self, inputs):
        if is_several(inputs):
            return [self._convert_input(x) for x in inputs]
        x = convert_to_tensor(inputs)
        # floats follow the layer's dtype as elsewhere; other dtypes pass unchanged
        return _math.cast(x, self._dtype) if x.dtype.is_floating and \
            x.dtype is not self._dtype else x
