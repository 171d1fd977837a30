"""`tf.keras.layers`: Keras's layer names and arguments.

Layers that tapeflow already has (Dense, Conv2D, Embedding, BatchNormalization,
LayerNormalization, Dropout) are those classes with Keras's conventions mixed in
(keras/layer.py); the layers without variables are written here over tapeflow's ops.

Example:
    >>> from tapeflow.keras.layers import Dense
    >>> Dense(3)(tf.ones([2, 4])).shape
    TensorShape([2, 3])
"""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor, TensorShape
from ..data.dataset import Dataset
from ..function.control_flow import cond as _cond
from ..ops import (array as _array, conv as _conv, math as _math, nn as _nn,
                   reduction as _reduction)
from ..ops.creation import ones_like as _ones_like, zeros as _zeros, zeros_like as _zeros_like
from ..ops.indexing import where as _where
from ..train import initializers as _init, layers as _layers
from . import regularizers as _regularizers
from .attention import MultiHeadAttention
from .layer import Input, InputLayer, KerasTensor, Layer, is_several, set_keras_mask, \
    unique_name
from .recurrent import (GRU, LSTM, Bidirectional, GRUCell, LSTMCell, SimpleRNN,
                        SimpleRNNCell)

__all__ = ["Layer", "Input", "InputLayer", "KerasTensor", "Dense", "Conv2D", "Embedding",
           "BatchNormalization", "LayerNormalization", "Dropout", "Flatten", "Reshape",
           "Activation", "ReLU", "Softmax", "MaxPooling2D", "AveragePooling2D",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "Rescaling", "Add", "Multiply",
           "Concatenate", "Normalization", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D",
           "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell",
           "Bidirectional", "MultiHeadAttention", "Conv1D", "MaxPooling1D", "AveragePooling1D",
           "GlobalAveragePooling1D", "GlobalMaxPooling1D", "LeakyReLU", "MaxPool1D",
           "AvgPool1D", "GlobalAvgPool1D", "GlobalMaxPool1D", "Convolution1D", "Masking"]


def _activation_name(identifier) -> str:
    if identifier is None:
        return "linear"
    return identifier.lower() if isinstance(identifier, str) else identifier.__name__


def _base_kwargs(kwargs: dict) -> tuple:
    """(name, dtype, the rest) of a layer's keyword arguments."""
    kwargs = dict(kwargs)
    return kwargs.pop("name", None), kwargs.pop("dtype", None) or _dt.float32, kwargs


def _kernel_config(layer) -> dict:
    """The config entries every layer with a kernel and a bias shares (Dense, Conv1D,
    Conv2D): activation, use_bias, initializers, regularizers."""
    return {"activation": layer._activation_id, "use_bias": layer.use_bias,
            "kernel_initializer": _init.serialize(layer.kernel_initializer),
            "bias_initializer": _init.serialize(layer.bias_initializer),
            "kernel_regularizer": _regularizers.serialize(layer._regularizer_for["kernel"]),
            "bias_regularizer": _regularizers.serialize(layer._regularizer_for["bias"])}


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
                 **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        _layers.Dense.__init__(self, units, activation, use_bias, kernel_initializer,
                               bias_initializer, name=unique_name(name, type(self)),
                               dtype=dtype)
        self._activation_id = _activation_name(activation)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                **_kernel_config(self)}


class Conv2D(Layer, _layers.Conv2D):
    """2-D convolution over NHWC images.

    Example:
        >>> tf.keras.layers.Conv2D(8, 3, padding="same")(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 5, 5, 8])
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                 activation=None, use_bias: bool = True, dilation_rate=(1, 1),
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        data_format = rest.pop("data_format", None)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv2D: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        _layers.Conv2D.__init__(self, filters, kernel_size, strides, padding, activation,
                                use_bias, dilation_rate, kernel_initializer,
                                bias_initializer, name=unique_name(name, type(self)),
                                dtype=dtype)
        self._activation_id = _activation_name(activation)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "dilation_rate": self.dilation_rate,
                **_kernel_config(self)}


def _int_one(layer: str, arg: str, value) -> int:
    """A positive int, or a 1-tuple of one (Keras writes `(3,)` in configs)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{layer}: {arg} must be an int or a tuple of 1 int, got "
                             f"{value!r}")
        value = value[0]
    return _layers._positive_int(layer, arg, value)


class Conv1D(Layer):
    """1-D convolution over [batch, steps, channels] inputs, kernel of shape
    [kernel_size, in_channels, filters] as Keras's; `padding="causal"` pads only the start,
    so output step t sees inputs up to t.

    Example:
        >>> tf.keras.layers.Conv1D(4, 3, padding="causal")(tf.ones([2, 7, 3])).shape
        TensorShape([2, 7, 4])
    """

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 data_format=None, dilation_rate=1, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        super().__init__(trainable=trainable, name=name, dtype=dtype, **rest)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv1D: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.filters = _layers._positive_int("Conv1D", "filters", filters)
        self.kernel_size = (_int_one("Conv1D", "kernel_size", kernel_size),)
        self.strides = (_int_one("Conv1D", "strides", strides),)
        self.dilation_rate = (_int_one("Conv1D", "dilation_rate", dilation_rate),)
        if self.strides[0] > 1 and self.dilation_rate[0] > 1:
            raise ValueError(f"Conv1D: strides > 1 and dilation_rate > 1 cannot be combined, "
                             f"got strides={self.strides}, dilation_rate={self.dilation_rate}")
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same", "causal"):
            raise ValueError(f"Conv1D: padding must be 'valid', 'same' or 'causal', got "
                             f"{padding!r}")
        self.padding = padding.lower()
        self.activation = _layers.get_activation(activation)
        self._activation_id = _activation_name(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(f"Conv1D {self.name!r}: inputs must be 3-D [batch, steps, "
                             f"channels] with known channels, got shape "
                             f"{input_shape.as_list()}")
        self.kernel = self.add_weight("kernel", [self.kernel_size[0], input_shape[-1],
                                                 self.filters], self.kernel_initializer)
        self.bias = self.add_weight("bias", [self.filters], self.bias_initializer) \
            if self.use_bias else None

    def call(self, x):
        if x.ndim != 3 or x._shape[-1] != self.kernel.shape[1]:
            raise self._input_error(f"a 3-D [batch, steps, channels] input with "
                                    f"{self.kernel.shape[1]} channels", x)
        padding = self.padding.upper()
        if padding == "CAUSAL":
            # (kernel_size - 1) * dilation zeros before the first step, none after
            x = _array.pad(x, [[0, 0], [(self.kernel_size[0] - 1) * self.dilation_rate[0], 0],
                               [0, 0]])
            padding = "VALID"
        y = _conv.conv1d(x, self.kernel, self.strides[0], padding,
                         dilations=self.dilation_rate[0])
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        return self.activation(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "dilation_rate": self.dilation_rate,
                **_kernel_config(self)}


class Embedding(Layer, _layers.Embedding):
    """Turns integer ids into dense vectors of size `output_dim`.

    Example:
        >>> tf.keras.layers.Embedding(10, 4)(tf.constant([[1, 2]])).shape
        TensorShape([1, 2, 4])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, mask_zero: bool = False, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        self._regularizer_for = {"embeddings": _regularizers.get(embeddings_regularizer)}
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
                "embeddings_initializer": _init.serialize(self.embeddings_initializer)}


class BatchNormalization(Layer, _layers.BatchNorm):
    """Normalizes with the batch's statistics in training and moving ones otherwise.

    Example:
        >>> bn = tf.keras.layers.BatchNormalization()
        >>> bn(tf.constant([[0.0], [2.0]]), training=True).shape
        TensorShape([2, 1])
    """

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", trainable: bool = True, **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        _layers.BatchNorm.__init__(self, axis, momentum, epsilon, center, scale,
                                   beta_initializer, gamma_initializer,
                                   moving_mean_initializer, moving_variance_initializer,
                                   name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    supports_masking = True

    def call(self, x, training=None, mask=None):
        # a frozen BatchNormalization runs in inference mode, as Keras's does
        training = training if self.trainable else False
        if mask is None:
            return _layers.BatchNorm.call(self, x, training=training)
        # with a mask ([batch, time] for [batch, time, features]), the batch statistics
        # are those of the unmasked steps, as Keras's
        self._check(x)
        mask = convert_to_tensor(mask)
        if mask.ndim != x.ndim - 1:
            raise ValueError(f"BatchNormalization {self.name!r}: the mask provided should "
                             "be one dimension less than the inputs. Received: "
                             f"mask.shape={list(mask.shape)}, inputs.shape={list(x.shape)}")
        training = _layers._training(type(self).__name__, training)
        if isinstance(training, Tensor):
            return _cond(training, lambda: self._train(x, self._masked_moments(x, mask)),
                         lambda: self._infer(x))
        return self._train(x, self._masked_moments(x, mask)) if training else self._infer(x)

    def _masked_moments(self, x, mask) -> tuple:
        keep = _math.cast(_array.expand_dims(_math.cast(mask, _dt.bool), -1), x.dtype) \
            * _ones_like(x)
        axes = [a for a in range(x.ndim) if a not in self._feature_axes]
        count = _reduction.reduce_sum(keep, axes, keepdims=True) + 1e-7  # Keras's epsilon
        mean = _reduction.reduce_sum(x * keep, axes, keepdims=True) / count
        variance = _reduction.reduce_sum(_math.square((x - mean) * keep), axes,
                                         keepdims=True) / count
        return _array.squeeze(mean, axes), _array.squeeze(variance, axes)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale}


class LayerNormalization(Layer, _layers.LayerNorm):
    """Normalizes each example over `axis`.

    Example:
        >>> tf.keras.layers.LayerNormalization()(tf.constant([[1.0, 3.0]])).numpy().round(2)
        array([[-1.,  1.]], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, axis=-1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 trainable: bool = True, **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        _layers.LayerNorm.__init__(self, axis, epsilon, center, scale, beta_initializer,
                                   gamma_initializer, name=unique_name(name, type(self)),
                                   dtype=dtype)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}


class Dropout(Layer, _layers.Dropout):
    """Zeroes a `rate` fraction of the inputs in training (scaling the rest).

    Example:
        >>> tf.keras.layers.Dropout(0.5)(tf.ones([4])).numpy()   # not training: unchanged
        array([1., 1., 1., 1.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, rate: float, noise_shape=None, seed=None, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = _base_kwargs(kwargs)
        _layers.Dropout.__init__(self, rate, noise_shape, seed,
                                 name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


# --------------------------------------------------------------------------- no weights


class _Stateless(Layer):
    """A layer without weights whose inputs keep their dtype."""

    def _convert_input(self, inputs):
        if is_several(inputs):
            return [self._convert_input(x) for x in inputs]
        x = convert_to_tensor(inputs)
        # floats follow the layer's dtype as elsewhere; other dtypes pass unchanged
        return _math.cast(x, self._dtype) if x.dtype.is_floating and \
            x.dtype is not self._dtype else x


class Masking(_Stateless):
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


class Flatten(_Stateless):
    """Flattens every axis but the batch: [N, a, b] -> [N, a*b].

    Example:
        >>> tf.keras.layers.Flatten()(tf.ones([2, 3, 4])).shape
        TensorShape([2, 12])
    """

    def call(self, x):
        if x.ndim == 0:
            raise self._input_error("rank >= 1", x)
        rest = int(np.prod(x.shape[1:])) if x.ndim > 1 else 1
        return _array.reshape(x, [-1, rest])


class Reshape(_Stateless):
    """Reshapes every axis but the batch to `target_shape` (one entry may be -1).

    Example:
        >>> tf.keras.layers.Reshape((3, 4))(tf.ones([2, 12])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, x):
        return _array.reshape(x, [-1 if x.shape[0] is None else x.shape[0],
                                  *self.target_shape])

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


class Activation(_Stateless):
    """Applies an activation function given by name or as a callable.

    Example:
        >>> tf.keras.layers.Activation("relu")(tf.constant([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = _layers.get_activation(activation)
        self._activation_id = _activation_name(activation)

    def call(self, x):
        return self.activation(x)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": self._activation_id}


class ReLU(_Stateless):
    """`min(max(x, threshold) ... , max_value)` with slope `negative_slope` below
    `threshold` (Keras's ReLU).

    Example:
        >>> tf.keras.layers.ReLU(max_value=1.0)(tf.constant([-1.0, 0.5, 2.0])).numpy()
        array([0. , 0.5, 1. ], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, max_value=None, negative_slope: float = 0.0, threshold: float = 0.0,
                 **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"ReLU: max_value must be >= 0, got {max_value}")
        if negative_slope < 0:
            raise ValueError(f"ReLU: negative_slope must be >= 0, got {negative_slope}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, \
            threshold

    def call(self, x):
        if self.negative_slope == 0 and self.threshold == 0:
            y = _nn.relu(x)
        else:
            y = _where(x >= self.threshold, x, (x - self.threshold) * self.negative_slope)
        return y if self.max_value is None else _math.minimum(y, self.max_value)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(_Stateless):
    """`x` where `x >= 0`, `negative_slope * x` elsewhere (Keras 3's LeakyReLU, default
    slope 0.3).

    Example:
        >>> tf.keras.layers.LeakyReLU(negative_slope=0.5)(tf.constant([-2.0, 3.0])).numpy()
        array([-1.,  3.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, negative_slope: float = 0.3, **kwargs):
        if "alpha" in kwargs:  # Keras 2's name of the slope, still accepted by Keras 3
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"LeakyReLU: negative_slope must be a float >= 0, got "
                             f"{negative_slope!r}")
        self.negative_slope = float(negative_slope)

    def call(self, x):
        return _nn.leaky_relu(x, alpha=self.negative_slope)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


class Softmax(_Stateless):
    """Softmax over `axis`.

    Example:
        >>> tf.keras.layers.Softmax()(tf.constant([[0.0, 0.0]])).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, x, mask=None):
        if mask is None:
            return _layers.keras_softmax(x, axis=self.axis)
        # masked entries (False) get no probability, as Keras's: a large negative logit
        # before, and zero after (in case a whole axis is masked)
        mask = convert_to_tensor(mask)
        if mask.ndim > x.ndim or any(m not in (1, d) for m, d in
                                     zip(mask.shape[::-1], x.shape[::-1])):
            raise ValueError(f"Softmax {self.name!r}: the mask must be broadcastable to "
                             f"the inputs, got mask.shape={list(mask.shape)} and "
                             f"inputs.shape={list(x.shape)}")
        keep = mask if mask.dtype is _dt.bool else _math.greater(mask, 0.5)
        low = -3e4 if x.dtype is _dt.float16 else -1e9
        out = _nn.softmax(_where(keep, x, _math.cast(low, x.dtype)), axis=self.axis)
        return _where(keep, out, _zeros_like(out))

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class _Pooling1D(_Stateless):
    """1-D pooling over [batch, steps, channels], as a 2-D pool of height 1."""
    _op = None

    def __init__(self, pool_size=2, strides=None, padding: str = "valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        kind = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{kind}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.pool_size = (_int_one(kind, "pool_size", pool_size),)
        self.strides = self.pool_size if strides is None else \
            (_int_one(kind, "strides", strides),)
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
            raise ValueError(f"{kind}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding.lower()

    def call(self, x):
        if x.ndim != 3:
            raise self._input_error("a 3-D [batch, steps, channels] input", x)
        y = type(self)._op(_array.expand_dims(x, 1), [1, self.pool_size[0]],
                           [1, self.strides[0]], self.padding.upper())
        return _array.squeeze(y, [1])

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding}


class MaxPooling1D(_Pooling1D):
    """The maximum over `pool_size` windows of steps.

    Example:
        >>> tf.keras.layers.MaxPooling1D()(tf.ones([1, 6, 3])).shape
        TensorShape([1, 3, 3])
    """
    _op = staticmethod(_conv.max_pool2d)


class AveragePooling1D(_Pooling1D):
    """The mean over `pool_size` windows of steps (with "same" padding, of the steps
    inside the input only, as Keras).

    Example:
        >>> tf.keras.layers.AveragePooling1D(2)(tf.ones([1, 6, 3])).shape
        TensorShape([1, 3, 3])
    """
    _op = staticmethod(_conv.avg_pool2d)

    def __init__(self, pool_size, strides=None, padding: str = "valid", data_format=None,
                 **kwargs):
        # Keras 3 has no default pool_size here, unlike MaxPooling1D's 2
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(_Stateless):
    """A reduction over the spatial axes (`_axes`) of a channels-last input of `_rank`."""
    _reduce = None
    _rank, _axes, _what = 3, [1], "a 3-D [batch, steps, channels] input"

    def __init__(self, data_format=None, keepdims: bool = False, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{type(self).__name__}: only data_format='channels_last' is "
                             f"supported, got {data_format!r}")
        self.keepdims = bool(keepdims)

    def call(self, x):
        if x.ndim != self._rank:
            raise self._input_error(self._what, x)
        return type(self)._reduce(x, axis=self._axes, keepdims=self.keepdims)

    def get_config(self) -> dict:
        return {**super().get_config(), "keepdims": self.keepdims}


class _GlobalPooling1D(_GlobalPooling):
    pass


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over steps: [N, steps, C] -> [N, C]; with a mask ([N, steps], e.g. from
    `Embedding(mask_zero=True)`), the mean of the unmasked steps only.

    Example:
        >>> tf.keras.layers.GlobalAveragePooling1D()(tf.ones([2, 4, 5])).shape
        TensorShape([2, 5])
    """
    _reduce = staticmethod(_reduction.reduce_mean)
    supports_masking = True

    def call(self, x, mask=None):
        if mask is None:
            return super().call(x)
        if x.ndim != 3:
            raise self._input_error("a 3-D [batch, steps, channels] input", x)
        weights = _array.expand_dims(_math.cast(mask, x.dtype), -1)
        return (_reduction.reduce_sum(x * weights, axis=1, keepdims=self.keepdims)
                / _reduction.reduce_sum(weights, axis=1, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None  # the steps are gone


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over steps: [N, steps, C] -> [N, C]."""
    _reduce = staticmethod(_reduction.reduce_max)


class _Pooling2D(_Stateless):
    _op = None

    def __init__(self, pool_size=(2, 2), strides=None, padding: str = "valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        kind = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{kind}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.pool_size = _layers._int_pair(kind, "pool_size", pool_size)
        self.strides = self.pool_size if strides is None else \
            _layers._int_pair(kind, "strides", strides)
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
            raise ValueError(f"{kind}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding.lower()

    def call(self, x):
        if x.ndim != 4:
            raise self._input_error("a 4-D NHWC input", x)
        return type(self)._op(x, list(self.pool_size), list(self.strides),
                              self.padding.upper())

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding}


class MaxPooling2D(_Pooling2D):
    """The maximum over `pool_size` windows of NHWC images.

    Example:
        >>> tf.keras.layers.MaxPooling2D()(tf.ones([1, 4, 4, 3])).shape
        TensorShape([1, 2, 2, 3])
    """
    _op = staticmethod(_conv.max_pool2d)


class AveragePooling2D(_Pooling2D):
    """The mean over `pool_size` windows of NHWC images.

    Example:
        >>> tf.keras.layers.AveragePooling2D()(tf.ones([1, 4, 4, 3])).shape
        TensorShape([1, 2, 2, 3])
    """
    _op = staticmethod(_conv.avg_pool2d)


class _GlobalPooling2D(_GlobalPooling):
    _rank, _axes, _what = 4, [1, 2], "a 4-D NHWC input"


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over height and width: [N, H, W, C] -> [N, C].

    Example:
        >>> tf.keras.layers.GlobalAveragePooling2D()(tf.ones([2, 3, 3, 5])).shape
        TensorShape([2, 5])
    """
    _reduce = staticmethod(_reduction.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over height and width: [N, H, W, C] -> [N, C]."""
    _reduce = staticmethod(_reduction.reduce_max)


class Rescaling(_Stateless):
    """`inputs * scale + offset` (e.g. `Rescaling(1./255)` for pixels).

    Example:
        >>> tf.keras.layers.Rescaling(0.5, offset=1.0)(tf.constant([2.0])).numpy()
        array([2.], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def _convert_input(self, inputs):
        x = convert_to_tensor(inputs)
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)  # uint8 images

    def call(self, x):
        return x * _math.cast(self.scale, x.dtype) + _math.cast(self.offset, x.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class _Merge(_Stateless):
    supports_masking = True

    def compute_mask(self, inputs, previous_mask=None):
        """The OR of the inputs' masks when all of them have one (Keras's rule)."""
        masks = previous_mask if isinstance(previous_mask, (list, tuple)) else None
        if not masks or any(m is None for m in masks):
            return None
        out = convert_to_tensor(masks[0])
        for m in masks[1:]:
            out = _math.logical_or(out, convert_to_tensor(m))
        return out

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"A merge layer ({type(self).__name__} {self.name!r}) should be "
                             f"called on a list of inputs, got {type(inputs).__name__}")
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return out


class Add(_Merge):
    """The elementwise sum of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Add()([tf.ones([2]), tf.ones([2])]).numpy()
        array([2., 2.], dtype=float32)
    """

    @staticmethod
    def _merge(x, y):
        return _math.add(x, y)


class Multiply(_Merge):
    """The elementwise product of a list of inputs of the same shape."""

    @staticmethod
    def _merge(x, y):
        return _math.multiply(x, y)


class Concatenate(_Stateless):
    """Concatenates a list of inputs along `axis`.

    Example:
        >>> tf.keras.layers.Concatenate()([tf.ones([2, 1]), tf.zeros([2, 3])]).shape
        TensorShape([2, 4])
    """

    supports_masking = True

    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def compute_mask(self, inputs, previous_mask=None):
        """Keras's rule: the masks (all True for an unmasked input; a [batch, time] mask
        spread over the features) concatenated along `axis`, then any() over the last
        axis; None when no input has a mask."""
        masks = previous_mask if isinstance(previous_mask, (list, tuple)) else None
        if not masks or all(m is None for m in masks):
            return None
        parts = []
        for x, m in zip(inputs, masks):
            x = convert_to_tensor(x)
            if m is None:
                parts.append(_array.ones(x.shape, _dt.bool))
                continue
            m = convert_to_tensor(m)
            if m.ndim < x.ndim:
                m = _math.logical_or(_array.expand_dims(m, -1), _zeros(x.shape, _dt.bool))
            parts.append(m)
        return _reduction.reduce_any(_array.concat(parts, axis=self.axis), axis=-1)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"Concatenate {self.name!r} should be called on a list of "
                             f"inputs, got {type(inputs).__name__}")
        return _array.concat(list(inputs), axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class Normalization(Layer):
    """Shifts and scales inputs to zero mean and unit variance per feature of `axis`:
    `(x - mean) / max(sqrt(variance), 1e-7)` (`invert=True`: back again), with `mean` and
    `variance` given or learned by `adapt(data)` from arrays or a dataset of batches.

    Example:
        >>> norm = tf.keras.layers.Normalization()
        >>> norm.adapt(np.array([[1.0, 2.0], [3.0, 6.0]]))
        >>> norm(np.array([[1.0, 2.0]])).numpy()
        array([[-1., -1.]], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, axis=-1, mean=None, variance=None, invert: bool = False, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both `mean` and `variance`, or neither "
                             "(and call adapt())")
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        self.invert = bool(invert)
        self._given = None if mean is None else (mean, variance)

    def build(self, input_shape):
        ndim = len(input_shape)
        kept = tuple(sorted(a % ndim for a in self.axis))
        if any(input_shape[a] is None for a in kept):
            raise ValueError(f"Normalization {self.name!r}: the axes {self.axis} of the "
                             f"input need known sizes, got shape {input_shape.as_list()}")
        self._reduce = [a for a in range(ndim) if a not in kept]
        self._broadcast = [input_shape[a] if a in kept else 1 for a in range(ndim)]
        features = [input_shape[a] for a in kept]
        if self._given is not None:
            # as Keras: a scalar (or any broadcastable) mean and variance are broadcast
            # over the kept axes, then shaped to broadcast against the input
            self._given_arrays = tuple(
                np.broadcast_to(np.asarray(v, np.float64), features).reshape(self._broadcast)
                for v in self._given)
        if self._given is None:
            self.adapt_mean = self.add_weight("mean", features, "zeros", trainable=False)
            self.adapt_variance = self.add_weight("variance", features, "ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False,
                                         dtype=_dt.int64)

    @property
    def mean(self):
        """The mean, shaped to broadcast against the input."""
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[0].astype(self._dtype.name))
        return _array.reshape(self.adapt_mean, self._broadcast)

    @property
    def variance(self):
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[1].astype(self._dtype.name))
        return _array.reshape(self.adapt_variance, self._broadcast)

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Learn the mean and variance of `data` (an array, or a dataset of batches) over
        every axis but `axis`."""
        if isinstance(data, Dataset):
            batches = [self._convert_input(b) for b in data]
            if not batches:
                raise ValueError(f"Normalization {self.name!r}: adapt() got no data")
            x = _array.concat(batches, axis=0)
        else:
            x = self._convert_input(data)
        if not self.built:
            with self.name_scope:
                self.build(TensorShape(x._shape))
            self.built = True
        if self._given is not None:
            raise ValueError(f"Normalization {self.name!r}: adapt() cannot be used with a "
                             "mean and variance given")
        mean, variance = _nn.moments(x, self._reduce)
        self.adapt_mean.assign(mean)
        self.adapt_variance.assign(variance)
        size = 1
        for a in self._reduce:
            size *= x._shape[a]
        self.count.assign(size)

    def call(self, x):
        scale = _math.maximum(_math.sqrt(self.variance), 1e-7)
        if self.invert:
            return x * scale + self.mean
        return (x - self.mean) / scale

    def get_config(self) -> dict:
        config = {**super().get_config(), "axis": self.axis, "invert": self.invert}
        if self._given is not None:  # as Keras: given values come back with the config
            config.update(mean=np.asarray(self._given[0]).tolist(),
                          variance=np.asarray(self._given[1]).tolist())
        return config


# Keras's aliases
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
Convolution1D = Conv1D
