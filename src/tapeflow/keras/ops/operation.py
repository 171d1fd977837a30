"""Keras 3's `Operation`: a `keras.ops` function applied to KerasTensors becomes a node of
the functional graph, and `keras_op` makes one function serve tensors and KerasTensors.

On tensors (eager or traced) a `keras.ops` function just computes. Given a KerasTensor
anywhere in its arguments it instead calls an `Operation` — a weightless layer named
after the function (`Add`, `Reshape`, `GetItem`, as Keras 3 names them) whose config
holds the function's static arguments (`Reshape(newshape=...)`) and whose call takes the
tensor arguments — so the call is recorded, traced for its output shape like any layer,
saved in `.keras` files as Keras 3 writes operations, and re-run by the model.

Example:
    >>> x = tf.keras.Input((4,))
    >>> y = tf.keras.ops.reshape(x * 2.0, (-1, 2, 2))
    >>> type(y.node.layer).__name__, y.shape
    ('Reshape', (None, 2, 2))
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor as _convert
from ..._core.tensor import Tensor
from ...ops import math as _math
from ..layer import Layer, is_symbolic, unique_name

__all__ = ["Operation", "keras_op", "OPERATIONS", "tensor", "result_type", "floatx_of"]

# Operation classes by class name: what `.keras` files name them by
OPERATIONS: dict[str, type] = {}


class Operation(Layer):
    """A `keras.ops` function as a weightless layer of a functional graph (Keras 3's
    `Operation`): the config holds the function's static arguments, `call` takes the
    tensor arguments in the function's order.

    Example:
        >>> op = tf.keras.ops.operation.OPERATIONS["Softmax"](axis=-1)
        >>> op(tf.constant([[0.0, 0.0]])).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """

    _function: Callable | None = None   # the eager function
    _config_names: tuple = ()           # its static arguments, in the config
    _parameters: tuple = ()             # the function's parameters, in order
    _keras_module = "keras.src.ops.numpy"

    # Keras 3's operations drop masks without a warning (a mask is a layer's business)
    supports_masking = True

    def __init__(self, name: str | None = None, **config):
        unknown = sorted(set(config) - set(self._config_names))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {unknown}; it "
                            f"takes {list(self._config_names)}")
        Layer.__init__(self, name=unique_name(name, type(self)))
        self._op_config = config
        self.built = True  # nothing to build: no weights

    def _convert_input(self, inputs):
        return inputs  # the function converts (and promotes) its own arguments

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def call(self, *args, training=None, **kwargs):
        # `training` reaches every node of a functional model; operations ignore it.
        # The function's arguments are rebuilt in its own order: the tensors given (in
        # order, trailing defaults left out, as Keras writes them) around the config's
        positional, given, keywords = [], list(args), dict(kwargs)
        for param in self._parameters:
            if param.kind is param.VAR_POSITIONAL:
                positional.extend(given)
                given = []
            elif param.kind is param.KEYWORD_ONLY:
                if param.name in self._op_config:
                    keywords[param.name] = self._op_config[param.name]
            elif param.name in self._op_config:
                positional.append(self._op_config[param.name])
            elif given:
                positional.append(given.pop(0))
            elif param.name in keywords:
                positional.append(keywords.pop(param.name))
            elif param.default is not param.empty:
                positional.append(param.default)
            else:
                raise TypeError(f"{type(self).__name__}: missing the tensor argument "
                                f"{param.name!r}")
        if given:
            raise TypeError(f"{type(self).__name__}: {len(given)} argument(s) too many")
        return type(self)._function(*positional, **keywords)

    def get_config(self) -> dict:
        return {"name": self.name, **{k: _plain(v) for k, v in self._op_config.items()}}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


def _plain(value):
    """A config value JSON can hold: tuples as lists, dtypes by name."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, _dt.DType):
        return value.name
    return value


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def keras_op(module: str = "numpy", config: tuple = (), name: str | None = None):
    """Make `fn` a `keras.ops` function: it computes on tensors and, given KerasTensors,
    calls an Operation class named `name` (default: the function's name in CamelCase,
    as Keras 3) whose config is the arguments named in `config`.

    Example:
        >>> @keras_op("numpy", config=("axis",))
        ... def my_cumsum(x, axis=None):
        ...     return tf.cumsum(x, axis=axis)
    """
    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        cls_name = name or _camel(fn.__name__)
        cls = type(cls_name, (Operation,), {
            "_function": staticmethod(fn), "_config_names": tuple(config),
            "_parameters": tuple(signature.parameters.values()),
            "_keras_module": f"keras.src.ops.{module}",
            "__doc__": f"The Operation of `keras.ops.{fn.__name__}` in functional graphs.",
            "__module__": __name__})
        if cls_name in OPERATIONS:
            raise ValueError(f"keras_op: an Operation named {cls_name!r} exists already "
                             f"({OPERATIONS[cls_name]._function.__module__})")
        OPERATIONS[cls_name] = cls

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not is_symbolic((args, kwargs)):
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            # the config lists every static argument, defaults included (as Keras's)
            static = {k: bound.arguments.pop(k) if k in bound.arguments
                      else signature.parameters[k].default for k in config}
            if is_symbolic(static):
                raise ValueError(f"keras.ops.{fn.__name__}: argument(s) {sorted(static)} "
                                 "must be static values, not KerasTensors")
            call_args, call_kwargs, skipped = [], {}, []
            for param in signature.parameters.values():
                if param.name in config:
                    continue
                if param.kind is param.VAR_POSITIONAL:
                    call_args.extend(bound.arguments.get(param.name, ()))
                elif param.kind is param.KEYWORD_ONLY:
                    if param.name in bound.arguments:
                        call_kwargs[param.name] = bound.arguments[param.name]
                elif param.name in bound.arguments:
                    call_args.extend(skipped)  # an optional tensor skipped before a given one
                    skipped = []
                    call_args.append(bound.arguments[param.name])
                else:
                    skipped.append(param.default)
            return cls(**static)(*call_args, **call_kwargs)
        op.Operation = cls
        return op
    return wrap


# --------------------------------------------------------------------------- dtypes
_ORDER = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64"]


def floatx_of(dtype: _dt.DType) -> _dt.DType:
    """`dtype` if floating, else Keras's floatx (float32): what int inputs compute in."""
    return dtype if dtype.is_floating else _dt.float32


def _strong_pair(a: _dt.DType, b: _dt.DType) -> _dt.DType:
    if a is b:
        return a
    if a.is_bool or b.is_bool:
        return b if a.is_bool else a
    if a.is_floating or b.is_floating:
        if a.is_floating and b.is_floating:
            if {a.name, b.name} == {"float16", "bfloat16"}:
                return _dt.float32
            return a if _ORDER.index(a.name) > _ORDER.index(b.name) else b
        return a if a.is_floating else b
    # two integers: the smallest signed type holding both (uint8 + int8 -> int16)
    sa, sb = a.name.startswith("int"), b.name.startswith("int")
    bits = max(a.size * 8, b.size * 8)
    if sa != sb:
        unsigned = a if not sa else b
        signed = b if not sa else a
        bits = max(signed.size * 8, min(unsigned.size * 16, 64))
        return _dt.as_dtype(f"int{bits}")
    return _dt.as_dtype(f"{'int' if sa else 'uint'}{bits}")


def result_type(*values) -> _dt.DType:
    """The dtype Keras 3 computes `values` in: tensors and arrays are strong, Python
    numbers weak (an int takes the tensor's dtype, a float makes ints floatx).

    Example:
        >>> result_type(tf.constant([1, 2]), 0.5).name
        'float32'
    """
    strong, weak = None, set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            weak.add("bool")
        elif isinstance(v, int):
            weak.add("int")
        elif isinstance(v, float):
            weak.add("float")
        else:
            d = v.dtype if isinstance(v, Tensor) or hasattr(v, "dtype") and \
                isinstance(getattr(v, "dtype"), _dt.DType) else _dt.as_dtype(np.asarray(v).dtype)
            if d is _dt.float64 and not isinstance(v, (Tensor, np.ndarray, np.generic)):
                d = _dt.float32  # nested Python floats: floatx
            elif d is _dt.int64 and not isinstance(v, (Tensor, np.ndarray, np.generic)):
                d = _dt.int32
            strong = d if strong is None else _strong_pair(strong, d)
    if strong is None:
        return _dt.float32 if "float" in weak else _dt.int32 if "int" in weak else _dt.bool
    if "float" in weak and not strong.is_floating:
        return _dt.float32
    if "int" in weak and strong.is_bool:
        return _dt.int32
    return strong


def tensor(x, dtype=None) -> Tensor:
    """`x` as a tensor (of `dtype` when given); nested Python floats become float32 and
    ints int32, as Keras's `convert_to_tensor`."""
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype is _dt.as_dtype(dtype) else \
            _math.cast(x, dtype)
    if hasattr(x, "read_value"):  # a Variable
        t = x.read_value()
        return t if dtype is None or t.dtype is _dt.as_dtype(dtype) else _math.cast(t, dtype)
    if dtype is None:
        dtype = result_type(x)
    return _convert(np.asarray(x, dtype=_dt.as_dtype(dtype).as_numpy_dtype)
                    if not isinstance(x, np.ndarray) or x.dtype != _dt.as_dtype(
                        dtype).as_numpy_dtype else x)


def promoted(*values) -> list:
    """`values` as tensors of their common Keras dtype (see `result_type`)."""
    dtype = result_type(*values)
    return [tensor(v, dtype) for v in values]
