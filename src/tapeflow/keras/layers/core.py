"""Keras's core layers: Dense, Embedding, Masking, Activation, Lambda."""
from __future__ import annotations

import builtins
import codecs
import inspect
import marshal
import sys
import types

from ..._core.convert import convert_to_tensor
from ...ops import array as _array, math as _math, reduction as _reduction
from ...ops.creation import zeros_like as _zeros_like
from ...ops.indexing import where as _where
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers, \
    serialization_lib as _utils
from ..layer import Layer, set_keras_mask, unique_name
from ..saving import in_safe_mode
from ._base import Stateless, activation_name, base_kwargs, get_activation, kernel_config

__all__ = ["Activation", "Dense", "Embedding", "Lambda", "Masking"]


class Dense(Layer, _layers.Dense):
    """A densely connected layer: `activation(inputs @ kernel + bias)`.

    Example:
        >>> layer = tf.keras.layers.Dense(4, activation="relu")
        >>> layer(tf.ones([2, 3])).shape
        TensorShape([2, 4])
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, trainable: bool = True,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        self._constraint_for = {"kernel": _constraints.get(kernel_constraint),
                                "bias": _constraints.get(bias_constraint)}
        _layers.Dense.__init__(self, units, get_activation(activation), use_bias,
                               kernel_initializer, bias_initializer,
                               name=unique_name(name, type(self)), dtype=dtype)
        self._activation_id = activation_name(activation)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                **kernel_config(self)}


class Embedding(Layer, _layers.Embedding):
    """Turns integer ids into dense vectors of size `output_dim`.

    Example:
        >>> tf.keras.layers.Embedding(10, 4)(tf.constant([[1, 2]])).shape
        TensorShape([1, 2, 4])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, mask_zero: bool = False, trainable: bool = True,
                 embeddings_constraint=None, **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        self._regularizer_for = {"embeddings": _regularizers.get(embeddings_regularizer)}
        self._constraint_for = {"embeddings": _constraints.get(embeddings_constraint)}
        self.mask_zero = bool(mask_zero)
        rest.pop("input_length", None)  # Keras 2's argument, ignored as Keras 3 does
        _layers.Embedding.__init__(self, input_dim, output_dim, embeddings_initializer,
                                   name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    @property
    def supports_masking(self) -> bool:
        return self.mask_zero

    def compute_mask(self, inputs, mask=None):
        """With `mask_zero=True`, True where the id is not 0 (the padding); else None."""
        if not self.mask_zero:
            return None
        return _math.not_equal(convert_to_tensor(inputs), 0)

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "embeddings_constraint": _constraints.serialize(
                    self._constraint_for["embeddings"]),
                "embeddings_initializer": _init.serialize(self.embeddings_initializer)}


class Masking(Stateless):
    """Masks the time steps whose features all equal `mask_value`: the output is the
    input with those steps set to zero, carrying the [batch, time] mask (True: kept) that
    the layers after it (LSTM, GRU, GlobalAveragePooling1D, ...) use to skip them.

    Example:
        >>> x = np.array([[[1.0, 2.0], [0.0, 0.0], [0.0, 3.0]]])
        >>> out = tf.keras.layers.Masking(mask_value=0.0)(x)
        >>> out._keras_mask.numpy()
        array([[ True, False,  True]])
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs, previous_mask=None):
        return _reduction.reduce_any(_math.not_equal(
            self._convert_input(inputs), self.mask_value), axis=-1)

    def call(self, x):
        if x.ndim < 2:
            raise self._input_error("rank >= 2 ([batch, ..., features])", x)
        keep = _reduction.reduce_any(_math.not_equal(x, self.mask_value), axis=-1,
                                     keepdims=True)
        out = _where(keep, x, _zeros_like(x))
        set_keras_mask(out, _array.squeeze(keep, [-1]))  # made here: no second comparison
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}


class Activation(Stateless):
    """Applies an activation function given by name or as a callable.

    Example:
        >>> tf.keras.layers.Activation("relu")(tf.constant([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = get_activation(activation)
        self._activation_id = activation_name(activation)

    def call(self, x):
        return self.activation(x)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": self._activation_id}


def _function_config(fn, layer: str):
    """A function as Keras 3's Lambda writes it: a Python lambda as a `__lambda__` entry
    of its marshalled bytecode (base64), defaults and closure values; a named function
    by its registered name (`serialize_keras_object`)."""
    if isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>":
        code = codecs.encode(marshal.dumps(fn.__code__), "base64").decode("ascii")
        closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
        return {"class_name": "__lambda__",
                "config": {"code": code, "defaults": fn.__defaults__, "closure": closure}}
    if callable(fn):
        return _utils.serialize_keras_object(fn)
    raise ValueError(f"Lambda {layer!r}: cannot serialize {fn!r} of type "
                     f"{type(fn).__name__}; expected a callable")


def _is_lambda_entry(value) -> bool:
    return isinstance(value, dict) and value.get("class_name") == "__lambda__"


def _load_lambda(entry: dict, safe_mode: bool):
    """The Python lambda of a `__lambda__` entry: refused in safe mode (it is code)."""
    if safe_mode:
        raise ValueError(
            "Requested the deserialization of a `Lambda` layer whose `function` is a "
            "Python lambda. This carries a potential risk of arbitrary code execution and "
            "thus it is disallowed by default. If you trust the source of the artifact, "
            "you can override this error by passing `safe_mode=False` to the loading "
            "function (`load_model(..., safe_mode=False)`).")
    config = entry.get("config") or {}
    code = marshal.loads(codecs.decode(config["code"].encode("ascii"), "base64"))
    defaults = config.get("defaults")
    closure = config.get("closure")
    # the names it may use: builtins, and `tf` as tapeflow (as the code that made it)
    globs = {"__builtins__": builtins}
    if "tapeflow" in sys.modules:
        globs["tf"] = sys.modules["tapeflow"]
    return types.FunctionType(
        code, globs, code.co_name, None if defaults is None else tuple(defaults),
        None if closure is None else tuple(types.CellType(v) for v in closure))


class Lambda(Stateless):
    """Wraps a function of tensors as a layer: `function(inputs, **arguments)` (also
    given `mask=` and `training=` when it takes them). Its output shape comes from calling
    it; `output_shape` is kept for the config. `mask` is a mask to put on the output, or a
    function `mask(inputs, previous_mask)` computing one.

    Saved as Keras 3 saves it: a named function by its registered name (found again in
    `custom_objects` or the `register_keras_serializable` registry); a Python lambda as
    its marshalled bytecode, which loading runs only when asked explicitly with
    `load_model(..., safe_mode=False)` (or in `SafeModeScope(False)`): by default such a
    file is refused with a ValueError, since loading it executes code from the file.

    Example:
        >>> layer = tf.keras.layers.Lambda(lambda x: x * 2.0 + 1.0)
        >>> layer(tf.constant([[1.0, 2.0]])).numpy()
        array([[3., 5.]], dtype=float32)
    """

    def __init__(self, function, output_shape=None, mask=None, arguments: dict | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError(f"Lambda {self.name!r}: `function` must be callable, got "
                             f"{function!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None
        self._output_shape = output_shape
        try:
            names = inspect.getfullargspec(function).args
        except TypeError:  # a builtin without an inspectable signature
            names = []
        self._fn_expects_mask_arg = "mask" in names
        self._fn_expects_training_arg = "training" in names

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_expects_mask_arg:
            kwargs["mask"] = mask
        if self._fn_expects_training_arg:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, previous_mask=None):
        if callable(self.mask):
            return self.mask(inputs, previous_mask)
        return self.mask

    def get_config(self) -> dict:
        config = {**super().get_config(), "function": _function_config(self.function,
                                                                       self.name)}
        if self._output_shape is not None:
            config["output_shape"] = (_function_config(self._output_shape, self.name)
                                      if callable(self._output_shape)
                                      else self._output_shape)
        if self.mask is not None:
            config["mask"] = (_function_config(self.mask, self.name) if callable(self.mask)
                              else _utils.serialize_keras_object(self.mask))
        config["arguments"] = _utils.serialize_keras_object(self.arguments)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> "Lambda":
        """A Lambda from its config; a Python lambda in it is rebuilt from its bytecode
        only when `safe_mode=False` is given here or by the `SafeModeScope` in force
        (`load_model(..., safe_mode=False)`); otherwise a ValueError."""
        config = dict(config)
        safe = (safe_mode if safe_mode is not None else in_safe_mode()) is not False

        def function(key: str):
            value = config[key]
            if _is_lambda_entry(value):
                return _load_lambda(value, safe)
            return _utils.deserialize_keras_object(value, custom_objects)
        config["function"] = function("function")
        if "output_shape" in config:
            shape = function("output_shape")
            if isinstance(shape, list) and all(isinstance(d, (int, type(None)))
                                               for d in shape):
                shape = tuple(shape)
            config["output_shape"] = shape
        if "mask" in config:
            config["mask"] = function("mask")
        if "arguments" in config:
            config["arguments"] = _utils.deserialize_keras_object(config["arguments"],
                                                                  custom_objects)
        return cls(**config)
