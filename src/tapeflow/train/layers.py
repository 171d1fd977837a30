"""Layers: Modules that create their variables on the first call, from the input's shape.

`Layer.__call__` converts the input, builds the layer once (inside its name scope, so the
variables are named like Keras's: "dense/kernel:0") and runs `call`. Variables are created
from callables, so a layer first called inside a `tapeflow.function` trace creates them
eagerly, once (the tracer lifts them out of the graph).

The layer's dtype is `dtype=` when given; otherwise the first input's dtype when it is
floating (float64 inputs give a float64 layer), else float32. Floating inputs are cast to
the layer's dtype.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.tensor import SYMBOLIC, Tensor, TensorShape
from .._core.variable import Variable
from ..function.control_flow import cond
from ..ops import (array as _array, conv as _conv, creation as _creation,
                   indexing as _indexing, linalg as _linalg, math as _math, nn as _nn,
                   random as _random)
from . import activations as _activations, initializers as _init
from .module import Module

__all__ = ["Layer", "Dense", "Conv2D", "Embedding", "LayerNorm", "BatchNorm", "Dropout",
           "LayerNormalization", "BatchNormalization", "get_activation"]


# --------------------------------------------------------------------------- activations


def _linear(x):
    return x


def keras_softmax(x, axis: int = -1):
    """softmax(x) over `axis`, marked with its logits `x` as Keras 3's TensorFlow backend
    marks it: cross-entropy losses given this output use the logits (exact where the
    probabilities saturate)."""
    out = _nn.softmax(x, axis=axis)
    out._keras_logits = convert_to_tensor(x)
    return out


def keras_sigmoid(x):
    """sigmoid(x), marked with its logits `x` (as `keras_softmax`)."""
    out = _math.sigmoid(x)
    out._keras_logits = convert_to_tensor(x)
    return out


_ACTIVATIONS: dict = {
    "linear": _linear, "relu": _nn.relu, "relu6": _nn.relu6, "elu": _nn.elu,
    "selu": _nn.selu, "gelu": _nn.gelu, "leaky_relu": _nn.leaky_relu, "tanh": _math.tanh,
    "sigmoid": keras_sigmoid, "softmax": keras_softmax, "log_softmax": _nn.log_softmax,
    "softplus": _math.softplus, "softsign": _math.softsign, "silu": _nn.silu,
    "swish": _nn.silu, "exponential": _math.exp,
}


def get_activation(identifier) -> Callable:
    """The activation function for a name ("relu", "tanh", "sigmoid", "softmax", "gelu",
    ...), a callable (returned as is) or None (the identity).

    Example: `tf.layers.get_activation("relu")(tf.constant([-1.0, 2.0]))` -> [0., 2.].
    """
    if identifier is None:
        return _linear
    if isinstance(identifier, str):
        name = identifier.lower()
        # the ops-backed table first, then Keras 3's other names (train/activations.py)
        fn = _ACTIVATIONS.get(name) or _activations.ACTIVATIONS.get(name)
        if fn is None:
            raise ValueError(f"Unknown activation function {identifier!r}; known names: "
                             f"{sorted({*_ACTIVATIONS, *_activations.ACTIVATIONS})}")
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation identifier {identifier!r}: expected a "
                     "name, a callable or None")


# --------------------------------------------------------------------------- arguments


def _positive_int(layer: str, arg: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value <= 0:
        raise ValueError(f"{layer}: {arg} must be a positive integer, got {value!r}")
    return int(value)


def _int_pair(layer: str, arg: str, value) -> tuple:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{layer}: {arg} must be a positive integer or a pair of them, got "
                         f"{value!r}")
    return tuple(_positive_int(layer, arg, v) for v in value)


def _axes(layer: str, axis, ndim: int) -> tuple:
    """`axis` (an int or a list of ints) as sorted non-negative axes of a rank-`ndim` input."""
    raw = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in raw:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) \
                or not -ndim <= a < ndim:
            raise ValueError(f"{layer}: invalid axis {a!r} for an input of rank {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{layer}: duplicate axis in {axis!r}")
    return tuple(sorted(out))


def _training(layer: str, training) -> bool | Tensor:
    """A Python bool, or a symbolic bool tensor (inside a trace) to branch on with cond."""
    if training is None:
        return False
    if isinstance(training, Tensor):
        if training.ndim != 0 or training.dtype is not _dt.bool:
            raise TypeError(f"{layer}: training must be a scalar bool, got shape "
                            f"{list(training._shape)} ({training.dtype.name})")
        return training if training._buf == SYMBOLIC else bool(training)
    if isinstance(training, (bool, np.bool_, int, np.integer)):
        return bool(training)
    raise TypeError(f"{layer}: training must be a bool, a bool tensor or None, got "
                    f"{training!r}")


def _input_shape(x):
    """The shape `build` gets: a TensorShape, or a list of them for a list of inputs (the
    merging layers of keras/ take several)."""
    if isinstance(x, (list, tuple)):
        return [_input_shape(item) for item in x]
    return TensorShape(x._shape)


@functools.lru_cache(maxsize=None)
def _accepts_training(call) -> bool:
    params = inspect.signature(call).parameters.values()
    return any(p.name == "training" or p.kind is p.VAR_KEYWORD for p in params)


# --------------------------------------------------------------------------- base class


class Layer(Module):
    """A Module built on its first call: subclasses implement `build(input_shape)` (create
    variables with `add_weight`) and `call(inputs, ...)`.

    Example:
        >>> class Scale(tf.layers.Layer):
        ...     def build(self, input_shape):
        ...         self.w = self.add_weight("w", [input_shape[-1]], "ones")
        ...     def call(self, x):
        ...         return x * self.w
        >>> Scale()(tf.ones([2, 3])).shape
        TensorShape([2, 3])
    """

    # `_weights` lists the variables in creation order (so `variables` gives kernel before
    # bias, as Keras does); checkpoints name them by their own attributes first
    _CHECKPOINT_LAST = frozenset({"_weights"})
    # the class of the weights `add_weight` makes (keras's layers make ones that read in
    # the compute dtype inside a call: keras/mixed_precision.py)
    _VARIABLE_CLASS = Variable

    def __init__(self, name: str | None = None, dtype=None):
        super().__init__(name=name)
        self._weights: list = []
        self.built = False
        self._set_dtype(dtype)

    def _set_dtype(self, dtype) -> None:
        """Take `dtype=`: `_dtype` is what floating inputs are cast to and what the layer
        computes in; `_variable_dtype` (None: the same) is its weights' dtype. Keras's
        layers take dtype policies here, where the two differ ("mixed_float16")."""
        self._dtype = None if dtype is None else _dt.as_dtype(dtype)
        self._variable_dtype = None

    @property
    def dtype(self):
        """The dtype of the layer's variables (None before the first call if not given)."""
        return self._variable_dtype or self._dtype

    def add_weight(self, name: str, shape, initializer="glorot_uniform",
                   trainable: bool = True, dtype=None) -> Variable:
        """A new variable `name` of `shape`, initialized by `initializer` (a name, an
        initializer or a callable `(shape, dtype) -> value`)."""
        init = _init.get(initializer)
        shape = tuple(int(d) for d in shape)
        dtype = _dt.as_dtype(dtype) if dtype is not None else \
            (self._variable_dtype or self._dtype or _dt.float32)
        # a callable initial value: inside a trace the variable is made eagerly, once
        v = self._VARIABLE_CLASS(lambda: init(shape, dtype=dtype), trainable=trainable,
                                 name=name, dtype=dtype)
        self._weights.append(v)
        return v

    def build(self, input_shape: TensorShape) -> None:
        """Create the variables (called once, before the first `call`)."""

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement call()")

    def _convert_input(self, inputs) -> Tensor:
        x = convert_to_tensor(inputs)
        if self._dtype is None:
            self._dtype = x.dtype if x.dtype.is_floating else _dt.float32
        if x.dtype.is_floating and x.dtype is not self._dtype:
            x = _math.cast(x, self._dtype)
        return x

    def __call__(self, inputs, *args, **kwargs):
        if "training" in kwargs and not _accepts_training(type(self).call):
            del kwargs["training"]  # as Keras: every layer may be called with training=
        x = self._convert_input(inputs)
        with self.name_scope:
            if not self.built:
                made = len(self._weights)
                try:
                    self.build(_input_shape(x))
                except BaseException:
                    del self._weights[made:]  # a failed build leaves nothing half made
                    raise
                self.built = True
            return self.call(x, *args, **kwargs)

    def _input_error(self, expected: str, x: Tensor) -> ValueError:
        return ValueError(f"Input of layer {self.name!r} ({type(self).__name__}) is "
                          f"incompatible with the layer: expected {expected}, got shape "
                          f"{list(x._shape)} ({x.dtype.name})")


def _rank_at_least(layer: Layer, x: Tensor, rank: int) -> None:
    if x.ndim < rank:
        raise layer._input_error(f"rank >= {rank}", x)


# --------------------------------------------------------------------------- layers


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` over the last axis of inputs of rank >= 2.

    Example:
        >>> layer = tf.layers.Dense(4, activation="relu")
        >>> layer(tf.ones([2, 3])).shape, layer.kernel.name
        (TensorShape([2, 4]), 'dense/kernel:0')
    """

    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name: str | None = None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.units = _positive_int("Dense", "units", units)
        self.activation = get_activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)

    def _convert_input(self, inputs) -> Tensor:
        x = super()._convert_input(inputs)
        # as Keras's Dense: integer inputs are cast too
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)

    def build(self, input_shape):
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(f"Dense {self.name!r}: inputs need rank >= 2 and a known last "
                             f"dimension, got shape {input_shape.as_list()}")
        self.kernel = self.add_weight("kernel", [input_shape[-1], self.units],
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", [self.units], self.bias_initializer) \
            if self.use_bias else None

    def call(self, x):
        _rank_at_least(self, x, 2)
        if x._shape[-1] != self.kernel.shape[0]:
            raise self._input_error(f"last dimension {self.kernel.shape[0]}", x)
        y = _linalg.matmul(x, self.kernel)
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        return self.activation(y)


class Conv2D(Layer):
    """2-D convolution over NHWC inputs: `activation(conv2d(x, kernel) + bias)`, kernel of
    shape [kh, kw, in_channels, filters].

    Example:
        >>> conv = tf.layers.Conv2D(8, 3, padding="same")
        >>> conv(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 5, 5, 8])
    """

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 activation=None, use_bias: bool = True, dilation_rate=1,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name: str | None = None, dtype=None):
        super().__init__(name="conv2d" if name is None else name, dtype=dtype)
        self.filters = _positive_int("Conv2D", "filters", filters)
        self.kernel_size = _int_pair("Conv2D", "kernel_size", kernel_size)
        self.strides = _int_pair("Conv2D", "strides", strides)
        self.dilation_rate = _int_pair("Conv2D", "dilation_rate", dilation_rate)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"Conv2D: strides > 1 and dilation_rate > 1 cannot be combined, "
                             f"got strides={self.strides}, dilation_rate={self.dilation_rate}")
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
            raise ValueError(f"Conv2D: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding.lower()
        self.activation = get_activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ValueError(f"Conv2D {self.name!r}: inputs must be 4-D [batch, height, width, "
                             f"channels] with known channels, got shape "
                             f"{input_shape.as_list()}")
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, input_shape[-1], self.filters],
            self.kernel_initializer)
        self.bias = self.add_weight("bias", [self.filters], self.bias_initializer) \
            if self.use_bias else None

    def call(self, x):
        if x.ndim != 4 or x._shape[-1] != self.kernel.shape[2]:
            raise self._input_error(f"a 4-D NHWC input with {self.kernel.shape[2]} channels", x)
        y = _conv.conv2d(x, self.kernel, strides=list(self.strides),
                         padding=self.padding.upper(), dilations=list(self.dilation_rate))
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        return self.activation(y)


class Embedding(Layer):
    """Rows of an `[input_dim, output_dim]` table looked up by integer ids; the table's
    gradient is an `IndexedSlices` (only the looked-up rows).

    Example:
        >>> emb = tf.layers.Embedding(10, 4)
        >>> emb(tf.constant([[1, 2], [3, 4]])).shape
        TensorShape([2, 2, 4])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 name: str | None = None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.input_dim = _positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = _positive_int("Embedding", "output_dim", output_dim)
        self.embeddings_initializer = _init.get(embeddings_initializer)

    def _convert_input(self, inputs) -> Tensor:
        x = convert_to_tensor(inputs)
        if self._dtype is None:
            self._dtype = _dt.float32
        if not x.dtype.is_integer:  # Keras casts float ids
            if not (x.dtype.is_floating or x.dtype is _dt.bool):
                raise self._input_error("integer ids", x)
            x = _math.cast(x, _dt.int32)
        return x

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", [self.input_dim, self.output_dim],
                                          self.embeddings_initializer)

    def call(self, ids):
        return _indexing.gather(self.embeddings, ids)


class _Normalization(Layer):
    """Shared by LayerNorm and BatchNorm: `axis` names the feature axes that own a gamma
    and a beta; `_param(v)` reshapes such a variable to broadcast against the input."""

    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                 name, dtype):
        super().__init__(name=name, dtype=dtype)
        kind = type(self).__name__
        if isinstance(axis, (list, tuple)):
            if not axis or any(isinstance(a, bool) or not isinstance(a, (int, np.integer))
                               for a in axis):
                raise ValueError(f"{kind}: axis must be an int or a non-empty list of ints, "
                                 f"got {axis!r}")
            axis = [int(a) for a in axis]
        elif isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"{kind}: axis must be an int or a list of ints, got {axis!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or epsilon < 0:
            raise ValueError(f"{kind}: epsilon must be a non-negative number, got {epsilon!r}")
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = _init.get(beta_initializer)
        self.gamma_initializer = _init.get(gamma_initializer)

    def _build_axes(self, input_shape):
        kind = type(self).__name__
        if len(input_shape) == 0:
            raise ValueError(f"{kind} {self.name!r}: inputs must have rank >= 1, got a scalar")
        self._ndim = len(input_shape)
        self._feature_axes = _axes(kind, self.axis, self._ndim)
        dims = [input_shape[a] for a in self._feature_axes]
        if any(d is None for d in dims):
            raise ValueError(f"{kind} {self.name!r}: the dimensions at axis {self.axis} must "
                             f"be known, got shape {input_shape.as_list()}")
        self._feature_dims = tuple(dims)
        self.gamma = self.add_weight("gamma", dims, self.gamma_initializer) \
            if self.scale else None
        self.beta = self.add_weight("beta", dims, self.beta_initializer) \
            if self.center else None

    def _check(self, x: Tensor) -> None:
        if x.ndim != self._ndim or tuple(x._shape[a] for a in self._feature_axes) \
                != self._feature_dims:
            want = ["?"] * self._ndim
            for a, d in zip(self._feature_axes, self._feature_dims):
                want[a] = d
            raise self._input_error(f"rank {self._ndim} with shape {want}", x)

    def _param(self, v):
        if v is None or self._feature_axes == tuple(range(self._ndim - len(
                self._feature_axes), self._ndim)):
            return v  # trailing axes broadcast as they are
        shape = [1] * self._ndim
        for a, d in zip(self._feature_axes, self._feature_dims):
            shape[a] = d
        return _array.reshape(v, shape)


class LayerNorm(_Normalization):
    """Normalizes each example over `axis` (Keras's LayerNormalization):
    `gamma * (x - mean) / sqrt(var + epsilon) + beta`, with mean and (biased) variance
    taken over `axis`; gamma and beta have the shape of those axes.

    Example:
        >>> ln = tf.layers.LayerNorm()
        >>> ln(tf.constant([[1.0, 2.0, 3.0]])).numpy().round(3)
        array([[-1.224,  0.   ,  1.224]], dtype=float32)
    """

    def __init__(self, axis=-1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 name: str | None = None, dtype=None):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                         name, dtype)

    def build(self, input_shape):
        self._build_axes(input_shape)

    def call(self, x):
        self._check(x)
        mean, variance = _nn.moments(x, list(self._feature_axes), keepdims=True)
        return _nn.batch_normalization(x, mean, variance, self._param(self.beta),
                                       self._param(self.gamma), self.epsilon)


class BatchNorm(_Normalization):
    """Batch normalization over every axis but `axis` (Keras's BatchNormalization).

    `layer(x, training=True)` normalizes with the batch mean and (biased) variance and
    moves the non-trainable `moving_mean`/`moving_variance` towards them
    (`moving = moving * momentum + batch * (1 - momentum)`, by assignment, so it also runs
    inside traced functions); `training=False` (the default) uses the moving statistics.

    Example:
        >>> bn = tf.layers.BatchNorm()
        >>> y = bn(tf.constant([[0.0], [2.0]]), training=True)   # [[-1.], [1.]] roughly
        >>> bn.moving_mean.numpy()
        array([0.01], dtype=float32)
    """

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", name: str | None = None, dtype=None):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                         name, dtype)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
                or not 0 <= momentum <= 1:
            raise ValueError(f"BatchNorm: momentum must be a number in [0, 1], got "
                             f"{momentum!r}")
        self.momentum = float(momentum)
        self.moving_mean_initializer = _init.get(moving_mean_initializer)
        self.moving_variance_initializer = _init.get(moving_variance_initializer)

    def build(self, input_shape):
        self._build_axes(input_shape)
        dims = list(self._feature_dims)
        self.moving_mean = self.add_weight("moving_mean", dims, self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", dims,
                                               self.moving_variance_initializer,
                                               trainable=False)

    def call(self, x, training=None):
        self._check(x)
        training = _training("BatchNorm", training)
        if isinstance(training, Tensor):
            return cond(training, lambda: self._train(x), lambda: self._infer(x))
        return self._train(x) if training else self._infer(x)

    def _infer(self, x):
        return _nn.batch_normalization(x, self._param(self.moving_mean),
                                       self._param(self.moving_variance),
                                       self._param(self.beta), self._param(self.gamma),
                                       self.epsilon)

    def _train(self, x, moments: tuple | None = None):
        """Normalize with the batch's statistics (or the (mean, variance) `moments` given,
        such as Keras's masked ones) and move the moving statistics towards them."""
        reduce = [a for a in range(self._ndim) if a not in self._feature_axes]
        mean, variance = _nn.moments(x, reduce) if moments is None else moments
        decay = 1.0 - self.momentum
        # a batch of no rows (a replica's part of a short last batch under tf.distribute)
        # leaves the moving statistics alone and normalizes with finite stand-ins, so its
        # gradients are 0, not NaN (as Keras's BatchNormalization skips empty batches)
        counts = [x._shape[a] for a in reduce]
        if None in counts or 0 in counts:
            rows = _math.greater(_array.size(x), 0)
            mean = _indexing.where(rows, mean, _creation.zeros_like(mean))
            variance = _indexing.where(rows, variance, _creation.ones_like(variance))
            decay = _math.cast(_indexing.where(rows, decay, 0.0), self.moving_mean.dtype)
        # the statistics move without gradient (assignments are not differentiable)
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            moving.assign_sub((moving - _array.stop_gradient(batch)) * decay)
        return _nn.batch_normalization(x, self._param(mean), self._param(variance),
                                       self._param(self.beta), self._param(self.gamma),
                                       self.epsilon)


class Dropout(Layer):
    """Inverted dropout: with `training=True` each entry is zeroed with probability `rate`
    and the others scaled by 1 / (1 - rate); otherwise (the default) the input unchanged.

    Example:
        >>> drop = tf.layers.Dropout(0.5, seed=1)
        >>> drop(tf.ones([4]), training=True)   # entries 0.0 or 2.0
    """

    def __init__(self, rate: float, noise_shape=None, seed=None, name: str | None = None,
                 dtype=None):
        super().__init__(name=name, dtype=dtype)
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating)) \
                or not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be a number in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed

    def _convert_input(self, inputs) -> Tensor:
        return convert_to_tensor(inputs)  # no variables: any floating dtype passes as is

    def call(self, x, training=None):
        training = _training("Dropout", training)
        if isinstance(training, Tensor):
            return cond(training, lambda: self._drop(x), lambda: _array.identity(x))
        return self._drop(x) if training else x

    def _drop(self, x):
        return _random.dropout(x, self.rate, noise_shape=self.noise_shape, seed=self.seed)


# Keras's names for the normalization layers
LayerNormalization = LayerNorm
BatchNormalization = BatchNorm
