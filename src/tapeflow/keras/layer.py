"""Keras's `Layer` over tapeflow's (train/layers.py), and the symbolic side of the
functional API: `Input` returns a `KerasTensor` (a shape and a dtype), and calling a layer
on KerasTensors records a `Node` instead of computing.

A keras layer IS a tapeflow layer (same variables, building, name scopes, checkpoints);
this class adds Keras's conventions: unique automatic names ("dense", "dense_1"),
float32 by default, `trainable`, `weights`/`get_weights`/`set_weights`, `count_params`,
`get_config`/`from_config`, `add_weight(shape=..., initializer=...)` and the order in
which sublayers were assigned (Keras lists weights in that order).

Output shapes of a symbolic call come from tracing the layer's `call` once into a
scratch graph whose placeholders have the KerasTensors' shapes (unknown dims None), as
Keras 3's TensorFlow backend does: the user's code never runs on placeholder values, a
size computed from `tf.shape` stays unknown, and nothing the trace does (variable
updates, losses) outlives it. The trace also builds the layer, as Keras does.
"""
from __future__ import annotations

import functools
import inspect
import re
import threading
import warnings
from typing import Any

import numpy as np

from .._core import dtypes as _dt, nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.shape import known_dims
from .._core.tensor import Tensor, TensorShape
from .._core.variable import Variable
from ..function.graph import FuncGraph, tracing
from ..train import layers as _layers
from . import constraints as _constraints, mixed_precision as _mp, regularizers as _regularizers

__all__ = ["Layer", "InputLayer", "Input", "KerasTensor", "clear_session",
           "get_keras_mask", "set_keras_mask"]

_NAME_COUNTS: dict = {}


class _CallDepth(threading.local):
    """How deep in layer calls this thread is: the outermost call resets add_loss."""
    value = 0


_CALL_DEPTH = _CallDepth()


def clear_session() -> None:
    """Restart automatic layer and model names ("dense", "dense_1", ...) from scratch."""
    _NAME_COUNTS.clear()


def snake_case(name: str) -> str:
    """Keras's class-name rule: 'MaxPooling2D' -> 'max_pooling2d', 'Conv2D' -> 'conv2d'."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(name: str | None, cls: type) -> str:
    """`name` as given, or the next automatic one for the class ("dense", "dense_1")."""
    if name is not None:
        return name
    base = snake_case(cls.__name__)
    count = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def get_keras_mask(x):
    """The mask a Keras layer attached to `x` (`x._keras_mask`), or None."""
    return getattr(x, "_keras_mask", None)


def set_keras_mask(x, mask) -> None:
    """Attach `mask` to `x` as `x._keras_mask` (None clears it); values that take no
    attributes (NumPy arrays, Python numbers) carry no mask, as in Keras."""
    try:
        x._keras_mask = mask
    except AttributeError:
        pass


def _masks_of(inputs):
    """The masks attached to `inputs`, in the same structure (a list for a list)."""
    if isinstance(inputs, (list, tuple)):
        return [_masks_of(x) for x in inputs]
    return get_keras_mask(inputs)


def _any_mask(masks) -> bool:
    if isinstance(masks, list):
        return any(_any_mask(m) for m in masks)
    return masks is not None


_TAKES_MASK: dict = {}


def _takes_mask(cls: type) -> bool:
    """Whether `cls.call` has a `mask` argument (Keras's rule for passing one), cached."""
    if cls not in _TAKES_MASK:
        _TAKES_MASK[cls] = "mask" in inspect.signature(cls.call).parameters
    return _TAKES_MASK[cls]


class KerasTensor:
    """A symbolic tensor of the functional API: a shape whose None entries are unknown
    (the batch first), a dtype and the node that made it.

    Example:
        >>> x = tf.keras.Input((28, 28))
        >>> x.shape, x.dtype
        ((None, 28, 28), tf.float32)
    """

    _keras_mask = None  # a boolean KerasTensor where a layer's output carries a mask

    def __init__(self, shape, dtype, name: str | None = None, node=None, index: int = 0):
        self._shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name
        self.node = node
        self.index = index

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self._shape}, dtype={self.dtype.name}, name={self.name}>"


class Node:
    """One call of `layer` in a functional graph: its first argument `inputs`, the other
    arguments `args`/`kwargs` (any of which may hold KerasTensors too, as
    `attention(query, value)`) and its KerasTensor `outputs`."""

    def __init__(self, layer, inputs, outputs, args: tuple, kwargs: dict):
        self.layer, self.inputs, self.outputs = layer, inputs, outputs
        self.args, self.kwargs = args, kwargs

    @property
    def keras_inputs(self) -> list:
        """Every KerasTensor the call was given, in argument order."""
        return keras_tensors((self.inputs, self.args, self.kwargs))

    @property
    def parents(self) -> list:
        return [kt.node for kt in self.keras_inputs]


def keras_tensors(value) -> list:
    """The KerasTensors in a nest of lists, tuples and dicts (dicts in key order)."""
    if isinstance(value, KerasTensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [kt for v in value for kt in keras_tensors(v)]
    if isinstance(value, dict):
        return [kt for v in value.values() for kt in keras_tensors(v)]
    return []


def map_keras_tensors(fn, value):
    """`value` with each KerasTensor replaced by `fn(kt)`, everything else kept."""
    if isinstance(value, KerasTensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        items = [map_keras_tensors(fn, v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: map_keras_tensors(fn, v) for k, v in value.items()}
    return value


def _has_keras_tensor(value) -> bool:
    if isinstance(value, KerasTensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_keras_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_has_keras_tensor(v) for v in value.values())
    return False


def is_several(inputs) -> bool:
    """Whether a list or tuple holds several inputs (arrays, tensors), not one input
    written as nested Python numbers (`[[1.0, 2.0]]`)."""
    return isinstance(inputs, (list, tuple)) and any(
        hasattr(x, "shape") or isinstance(x, (list, tuple, dict)) and is_several(x)
        for x in inputs)


def is_symbolic(inputs) -> bool:
    """Whether `inputs` (a nest) holds a KerasTensor: a call that draws a functional graph."""
    return _has_keras_tensor(inputs)


def _marking_built(build):
    """`build` that, once it returns, marks its layer built. Called directly (outside
    `__call__`, which names weights under the layer's scope) it enters the layer's name
    scope as a call would, so `dense/kernel:0` is named the same either way."""
    @functools.wraps(build)
    def wrapper(self, *args, **kwargs):
        scopes = ctx.name_scopes
        if scopes and scopes[-1].endswith(f"{self.name}/"):
            result = build(self, *args, **kwargs)
        else:
            with self.name_scope:
                result = build(self, *args, **kwargs)
        self.built = True
        return result
    wrapper._marks_built = True
    return wrapper


def _noting_dtype(init):
    """`__init__` that first notes whether it was given a `dtype` (not None): the
    layers that pass a float32 default down on their own (not None) take the global
    dtype policy when the user gave none, as Keras's `dtype=None` does."""
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        self.__dict__["_dtype_given"] = kwargs.get("dtype") is not None
        init(self, *args, **kwargs)
    wrapper._notes_dtype = True
    return wrapper


class Layer(_layers.Layer):
    """The base of Keras layers; subclass it with `build(input_shape)` (weights from
    `add_weight`), `call(inputs, training=None)` and, to be rebuilt from config,
    `get_config`.

    Example:
        >>> class Scale(tf.keras.layers.Layer):
        ...     def build(self, input_shape):
        ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")
        ...     def call(self, x):
        ...         return x * self.w
        >>> Scale()(tf.ones([2, 3])).shape
        TensorShape([2, 3])
    """

    _CHECKPOINT_LAST = frozenset({"_weights", "_tracked_layers", "_weight_regularizers"})
    # Keras 3's rule: any string without "/" ("" and "my layer" too)
    _NAME_RULE = (re.compile(r"^[^/]*$"), "a layer name cannot contain '/'")
    # Keras's mask protocol (one implementation for Sequential, functional and subclassed
    # models, all of which just call layers): a mask rides on a tensor as `_keras_mask`;
    # `__call__` passes the input's mask to `call(..., mask=)` when `call` takes one and,
    # when `supports_masking`, attaches `compute_mask(inputs, mask)` to the outputs; a
    # layer that does not support masking drops the mask, with a warning
    @property
    def supports_masking(self) -> bool:
        """Whether the layer puts `compute_mask` on its outputs (else a mask stops here,
        with a warning). As Keras 3: True for a layer that overrides `compute_mask`,
        unless set."""
        value = self.__dict__.get("_supports_masking")
        return type(self).compute_mask is not Layer.compute_mask if value is None else value

    @supports_masking.setter
    def supports_masking(self, value: bool) -> None:
        self.__dict__["_supports_masking"] = bool(value)

    def compute_mask(self, inputs, previous_mask=None):
        """The mask of this layer's output: the input's, for layers that support masking.

        Example:
            >>> mask = tf.constant([[True, False, True]])
            >>> tf.keras.layers.Dense(2).compute_mask(tf.ones([1, 3, 4]), mask) is mask
            True
        """
        return previous_mask if self.supports_masking else None

    def __init_subclass__(cls, **kwargs):
        # Keras 3 wraps every `build`: called directly (`layer.build(shape)`, then
        # `set_weights`), it marks the layer built, so the first call does not build a
        # second, freshly initialized set of weights next to the first
        super().__init_subclass__(**kwargs)
        build = cls.build
        if not getattr(build, "_marks_built", False):
            cls.build = _marking_built(build)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_notes_dtype", False):
            cls.__init__ = _noting_dtype(init)

    # weights read in the compute dtype inside a call (mixed precision)
    _VARIABLE_CLASS = _mp.AutocastVariable

    def __init__(self, trainable: bool = True, name: str | None = None, dtype=None,
                 **kwargs):
        _layers.Layer.__init__(self, name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, kwargs)

    # ----------------------------------------------------------------- dtypes
    def _set_dtype(self, dtype) -> None:
        """`dtype=` as Keras 3 takes it: a DTypePolicy, a policy name ("mixed_float16"),
        a dtype, a serialized policy, or None (the global policy). `_dtype` is the compute
        dtype (inputs are cast to it), `_variable_dtype` the weights'."""
        if dtype is not None and not self.__dict__.get("_dtype_given", True) and \
                _mp.get(dtype).name == "float32":
            dtype = None  # a float32 default passed down by the layer, not by the user
        self._use_policy(_mp.get(dtype))

    def _use_policy(self, policy: _mp.DTypePolicy) -> None:
        self.__dict__["_dtype_policy"] = policy
        self._dtype = _dt.as_dtype(policy.compute_dtype)
        self._variable_dtype = _dt.as_dtype(policy.variable_dtype)

    @property
    def dtype_policy(self) -> _mp.DTypePolicy:
        """The layer's DTypePolicy (settable; weights made before keep their dtype)."""
        return self.__dict__["_dtype_policy"]

    @dtype_policy.setter
    def dtype_policy(self, value) -> None:
        self.__dict__["_dtype_given"] = True
        self._set_dtype(value)

    @property
    def compute_dtype(self) -> str:
        """The dtype of the layer's computations: floating inputs are cast to it."""
        return self.dtype_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights."""
        return self.dtype_policy.variable_dtype

    @property
    def input_dtype(self) -> str:
        """The dtype floating inputs are cast to (the compute dtype), as Keras 3."""
        return self.dtype_policy.compute_dtype

    @property
    def dtype(self):
        """The dtype of the layer's weights (the policy's variable dtype), as Keras 3."""
        return self._variable_dtype

    @property
    def autocast(self) -> bool:
        """Whether the layer's weights are read in the compute dtype inside its call."""
        return self.__dict__.get("_autocast", True)

    def _autocast_target(self):
        """(whether to change the autocast scope, the dtype to read weights in), by
        Keras 3's rule: a layer whose weights and computation differ opens a scope in its
        compute dtype; inside an open one, each layer reads in its own compute dtype
        (or as stored, when it does not autocast or computes in a non-float dtype)."""
        current = _mp.autocast_dtype()
        compute = self._dtype
        if current is None and compute is self._variable_dtype:
            return False, None
        target = compute if self.autocast and compute is not None and \
            compute.is_floating else None
        return target is not current, target

    def _keras_init(self, trainable: bool = True, kwargs: dict | None = None) -> None:
        """What every keras layer's constructor ends with: `trainable` and the
        `input_shape`/`input_dim`/`batch_size` arguments a first Sequential layer takes."""
        kwargs = dict(kwargs or {})
        self.__dict__.setdefault("_tracked_layers", [])
        self.trainable = bool(trainable)
        self._inbound_nodes: list = []
        shape = kwargs.pop("input_shape", None)
        if "input_dim" in kwargs:
            shape = (kwargs.pop("input_dim"),)
        batch_size = kwargs.pop("batch_size", None)
        self._batch_input_shape = None if shape is None else (batch_size, *shape)
        if kwargs.get("batch_input_shape") is not None:  # Keras 2's spelling of both
            self._batch_input_shape = tuple(kwargs.pop("batch_input_shape"))
        kwargs.pop("batch_input_shape", None)
        self.__dict__["_autocast"] = bool(kwargs.pop("autocast", True))
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unrecognized keyword arguments: "
                            f"{sorted(kwargs)}")

    def __setattr__(self, key: str, value: Any) -> None:
        # Keras orders sublayers (and so weights) by assignment; remember that order
        if not key.startswith("_") and isinstance(value, (Layer, list, tuple, dict)):
            tracked = self.__dict__.setdefault("_tracked_layers", [])
            for item in nest.flatten(value) if not isinstance(value, Layer) else [value]:
                if isinstance(item, Layer) and item is not self and \
                        not any(item is t for t in tracked):
                    tracked.append(item)
        object.__setattr__(self, key, value)

    # ----------------------------------------------------------------- calling
    def __call__(self, inputs, *args, **kwargs):
        if _has_keras_tensor(inputs) or (args or kwargs) and _has_keras_tensor((args, kwargs)):
            return self._call_symbolic(inputs, args, kwargs)
        if _CALL_DEPTH.value == 0:  # losses added in call() are those of the latest call
            for layer in [self, *self._all_sublayers()]:
                layer.__dict__["_added_losses"] = []
        _CALL_DEPTH.value += 1
        try:
            return self._call_masked(inputs, args, kwargs)
        finally:
            _CALL_DEPTH.value -= 1

    def _call_masked(self, inputs, args: tuple, kwargs: dict):
        """Call with Keras's mask protocol (see `supports_masking`)."""
        explicit = kwargs.get("mask")
        previous = explicit if explicit is not None else _masks_of(inputs)
        if explicit is None and _any_mask(previous) and _takes_mask(type(self)):
            kwargs = {**kwargs, "mask": previous}
        change, dtype = self._autocast_target()
        if change:
            with _mp.autocast_scope(dtype):
                outputs = _layers.Layer.__call__(self, inputs, *args, **kwargs)
        else:
            outputs = _layers.Layer.__call__(self, inputs, *args, **kwargs)
        if self.supports_masking:
            if previous is None and type(self).compute_mask is Layer.compute_mask:
                return outputs  # the common case: no mask in, none to pass on
            flat = nest.flatten(outputs)
            if not all(get_keras_mask(y) is not None for y in flat):
                masks = self.compute_mask(inputs, previous)
                for y, mask in zip(flat, nest.flatten(masks)):
                    if mask is not None and get_keras_mask(y) is None:
                        set_keras_mask(y, mask)
        elif _any_mask(previous):
            warnings.warn(f"Layer {self.name!r} (of type {type(self).__name__}) was passed "
                          "an input with a mask attached to it. However, this layer does "
                          "not support masking and will therefore destroy the mask "
                          "information. Downstream layers will not see the mask.",
                          UserWarning, stacklevel=3)
        return outputs

    def _convert_input(self, inputs):
        if not self.autocast:  # Keras 3: a layer made with autocast=False casts nothing
            return [convert_to_tensor(x) for x in inputs] if is_several(inputs) \
                else convert_to_tensor(inputs)
        if is_several(inputs):
            return [_layers.Layer._convert_input(self, x) for x in inputs]
        return super()._convert_input(inputs)

    def _call_symbolic(self, inputs, args: tuple, kwargs: dict):
        """Record a Node and return KerasTensors shaped as `call`'s outputs, found by
        tracing it once into a scratch graph (see the module docstring)."""
        graph = FuncGraph(f"{self.name}_symbolic_call")
        kept_losses = {id(layer): layer.__dict__.get("_added_losses")
                       for layer in [self, *self._all_sublayers()]}
        try:
            with tracing(graph):
                def placeholder(kt: KerasTensor) -> Tensor:
                    ph = graph.placeholder(kt.shape, kt.dtype, "keras_tensor")
                    if kt._keras_mask is not None:
                        set_keras_mask(ph, graph.placeholder(kt._keras_mask.shape, _dt.bool,
                                                             "keras_mask"))
                    return ph
                traced_inputs, traced_args, traced_kwargs = map_keras_tensors(
                    placeholder, (inputs, args, kwargs))
                traced = nest.flatten(self._call_masked(traced_inputs, traced_args,
                                                        traced_kwargs))
        finally:
            # losses added by the trace are graph tensors: none of them outlives it
            for layer in [self, *self._all_sublayers()]:
                if id(layer) in kept_losses and kept_losses[id(layer)] is not None:
                    layer.__dict__["_added_losses"] = kept_losses[id(layer)]
                else:
                    layer.__dict__.pop("_added_losses", None)
        node = Node(self, inputs, None, args, kwargs)
        outputs = []
        for i, y in enumerate(traced):
            if not isinstance(y, Tensor):
                raise TypeError(f"Layer {self.name!r} ({type(self).__name__}) returned "
                                f"{y!r} from a symbolic call; a layer's call must return "
                                "tensors (or nests of them)")
            kt = KerasTensor(known_dims(y._shape), y.dtype, name=self.name, node=node,
                             index=i)
            mask = get_keras_mask(y)
            if isinstance(mask, Tensor):
                kt._keras_mask = KerasTensor(known_dims(mask._shape), _dt.bool)
            outputs.append(kt)
        # several outputs come back as a list, as the layers here return them
        node.outputs = outputs[0] if len(outputs) == 1 else outputs
        self._inbound_nodes.append(node)
        return node.outputs

    # ----------------------------------------------------------------- weights
    def add_weight(self, *args, **kwargs) -> Variable:
        """A new weight: `add_weight(shape=None, initializer=None, dtype=None,
        trainable=True, name=None)` in Keras 3's order, or Keras 2's `add_weight(name,
        shape, initializer, trainable, dtype)` when the first argument is a string. The
        initializer defaults to "glorot_uniform" for floats and "zeros" otherwise.

        Example: `self.w = self.add_weight(shape=(3, 4), initializer="random_normal")`.
        """
        order = ("name", "shape", "initializer", "trainable", "dtype") \
            if args and isinstance(args[0], str) else \
            ("shape", "initializer", "dtype", "trainable", "name")
        for key, value in zip(order, args):
            if key in kwargs:
                raise TypeError(f"add_weight got multiple values for argument {key!r}")
            kwargs[key] = value
        # the optimizer projects a constrained weight after each update (Keras 3)
        constraint = _constraints.get(kwargs.pop("constraint", None)) or \
            self.__dict__.get("_constraint_for", {}).get(kwargs.get("name"))
        # the built-in layers name their regularizers by weight ("kernel", "bias")
        regularizer = _regularizers.get(kwargs.pop("regularizer", None)) or \
            self.__dict__.get("_regularizer_for", {}).get(kwargs.get("name"))
        autocast = bool(kwargs.pop("autocast", True))
        for ignored in ("aggregation", "synchronization", "overwrite_with_gradient"):
            kwargs.pop(ignored, None)  # distribution details tapeflow decides itself
        unknown = set(kwargs) - {"shape", "initializer", "dtype", "trainable", "name"}
        if unknown:
            raise TypeError(f"add_weight: unrecognized keyword arguments {sorted(unknown)}")
        dtype = kwargs.get("dtype")
        dtype = _dt.as_dtype(dtype) if dtype is not None else \
            (self._variable_dtype or self._dtype or _dt.float32)
        initializer = kwargs.get("initializer")
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        shape = kwargs.get("shape")
        variable = _layers.Layer.add_weight(self, kwargs.get("name") or "variable",
                                            () if shape is None else shape, initializer,
                                            kwargs.get("trainable", True), dtype)
        if regularizer is not None:
            self.__dict__.setdefault("_weight_regularizers", []).append(
                (regularizer, variable))
        if constraint is not None:
            variable.constraint = constraint
        if not autocast:
            variable._autocast = False
        return variable

    def add_loss(self, loss) -> None:
        """Add a loss tensor (from `call`) to `losses`; `fit` adds `losses` to the loss it
        minimizes. Each outermost call starts the list afresh."""
        self.__dict__.setdefault("_added_losses", []).append(convert_to_tensor(loss))

    @property
    def losses(self) -> list:
        """This layer's and its sublayers' losses: those added with `add_loss` in the
        latest call, and the weight regularizers' penalties (computed now)."""
        found = []
        for layer in [self, *self._all_sublayers()]:
            found += layer.__dict__.get("_added_losses", [])
            found += [regularizer(v) for regularizer, v in
                      layer.__dict__.get("_weight_regularizers", [])]
        return found

    def _sublayers(self) -> list:
        return list(self.__dict__.get("_tracked_layers", []))

    @property
    def weights(self) -> list:
        """The layer's own weights in creation order, then its sublayers', each once."""
        out: list = []
        for v in self._weights:
            if not any(v is w for w in out):
                out.append(v)
        for layer in self._sublayers():
            for v in layer.weights:
                if not any(v is w for w in out):
                    out.append(v)
        for v in self.variables:  # any variable assigned directly as an attribute
            if not any(v is w for w in out):
                out.append(v)
        return out

    @property
    def trainable_weights(self) -> list:
        """`weights` that training updates (none when `trainable` is False)."""
        if not self.trainable:
            return []
        frozen = [v for layer in self._all_sublayers() if not layer.trainable
                  for v in layer.weights]
        return [v for v in self.weights if v.trainable and not any(v is f for f in frozen)]

    @property
    def non_trainable_weights(self) -> list:
        trainable = self.trainable_weights
        return [v for v in self.weights if not any(v is t for t in trainable)]

    @property
    def trainable(self) -> bool:
        """Whether training updates this layer's weights. Setting it sets it on every
        sublayer too, as Keras 3 does: a frozen model's BatchNormalization layers then run
        in inference mode.

        Example:
            >>> block = tf.keras.Sequential([tf.keras.layers.Dense(2)])
            >>> block.trainable = False
            >>> block.layers[0].trainable
            False
        """
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        value = bool(value)
        self.__dict__["_trainable"] = value
        for layer in self._all_sublayers():
            layer.__dict__["_trainable"] = value

    def _all_sublayers(self) -> list:
        out = []
        for layer in self._sublayers():
            out.append(layer)
            out += layer._all_sublayers() if isinstance(layer, Layer) else []
        return out

    def get_weights(self) -> list:
        """The weights' values as NumPy arrays, in `weights` order."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights) -> None:
        """Assign NumPy arrays (as `get_weights` returns them) to the weights, checking
        the count and every shape before changing anything."""
        own = self.weights
        weights = list(weights)
        if len(weights) != len(own):
            raise ValueError(f"Layer {self.name!r}: set_weights expected a list of "
                             f"{len(own)} arrays, got {len(weights)}")
        values = [np.asarray(w) for w in weights]
        for v, w in zip(own, values):
            if tuple(v.shape) != w.shape:
                raise ValueError(f"Layer {self.name!r}: weight {v.name} has shape "
                                 f"{tuple(v.shape)}, the array given has shape {w.shape}")
        for v, w in zip(own, values):
            v.assign(w.astype(v.dtype.as_numpy_dtype))

    def count_params(self) -> int:
        """The number of scalars in the weights (the layer must be built)."""
        if not self.built and not self.weights:
            raise ValueError(f"You tried to call `count_params` on layer {self.name!r}, but "
                             "the layer isn't built. Call it on an input first.")
        return int(sum(int(np.prod(v.shape)) for v in self.weights))

    # ----------------------------------------------------------------- config
    def get_config(self) -> dict:
        """The constructor arguments that rebuild this layer (`from_config`). As Keras 3's,
        without the `input_shape` a first Sequential layer was given: the model's config
        holds it (an InputLayer entry), and Keras refuses the key in a layer's."""
        # the policy by name ("mixed_float16"); Keras writes it as a DTypePolicy dict,
        # which `from_config` and the `.keras` reader take too
        return {"name": self.name, "trainable": self.trainable,
                "dtype": self.dtype_policy.name}

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        shape = config.pop("batch_input_shape", None)
        if shape is not None:
            config["input_shape"] = tuple(shape[1:])
            if shape[0] is not None:
                config["batch_size"] = shape[0]
        return cls(**config)

    @property
    def output(self):
        """The KerasTensor of this layer's first symbolic call."""
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name!r} has never been called and thus has "
                                 "no defined output.")
        return self._inbound_nodes[0].outputs

    @property
    def input(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name!r} is not connected, no input to return.")
        return self._inbound_nodes[0].inputs


class InputLayer(Layer):
    """The layer an `Input` belongs to (first in a functional model's `layers`)."""

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, **kwargs):
        if batch_shape is None:
            if shape is None:
                raise ValueError("InputLayer: give `shape` (without the batch) or "
                                 "`batch_shape`")
            batch_shape = (batch_size, *tuple(shape))
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        self.built = True
        tensor = KerasTensor(self.batch_shape, self._dtype, name=self.name)
        node = Node(self, [], tensor, (), {})
        tensor.node = node
        self._inbound_nodes.append(node)

    def _set_dtype(self, dtype) -> None:
        # an input is float32 unless given a dtype, whatever the global policy (Keras's)
        self._use_policy(_mp.get("float32" if dtype is None else dtype))

    def call(self, inputs):
        return inputs

    def get_config(self) -> dict:
        return {"batch_shape": self.batch_shape, "dtype": self._dtype.name, "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None,
          **kwargs) -> KerasTensor:
    """A symbolic input of `shape` (without the batch dimension) to build a functional
    model from.

    Example:
        >>> inputs = tf.keras.Input(shape=(784,))
        >>> outputs = tf.keras.layers.Dense(10)(inputs)
        >>> model = tf.keras.Model(inputs, outputs)
    """
    if shape is not None and not isinstance(shape, (tuple, list, TensorShape)):
        shape = (shape,)
    layer = InputLayer(shape=None if shape is None else tuple(shape), batch_size=batch_size,
                       dtype=dtype, name=name, batch_shape=batch_shape, **kwargs)
    return layer.output
