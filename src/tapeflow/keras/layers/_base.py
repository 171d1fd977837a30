"""Helpers the layer modules share: argument parsing, configs, the weightless base."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import math as _math
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers
from ..layer import Layer, is_several


def activation_name(identifier) -> str:
    if identifier is None:
        return "linear"
    return identifier.lower() if isinstance(identifier, str) else identifier.__name__


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
