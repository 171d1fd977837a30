"""Convolution layers over channels-last inputs."""
from __future__ import annotations

from ...ops import array as _array, conv as _conv, nn as _nn
from ...train import initializers as _init, layers as _layers
from .. import regularizers as _regularizers
from ..layer import Layer, unique_name
from ._base import activation_name, base_kwargs, int_one, kernel_config

__all__ = ["Conv1D", "Conv2D", "Convolution1D", "Convolution2D"]


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
        name, dtype, rest = base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        super().__init__(trainable=trainable, name=name, dtype=dtype, **rest)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv1D: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.filters = _layers._positive_int("Conv1D", "filters", filters)
        self.kernel_size = (int_one("Conv1D", "kernel_size", kernel_size),)
        self.strides = (int_one("Conv1D", "strides", strides),)
        self.dilation_rate = (int_one("Conv1D", "dilation_rate", dilation_rate),)
        if self.strides[0] > 1 and self.dilation_rate[0] > 1:
            raise ValueError(f"Conv1D: strides > 1 and dilation_rate > 1 cannot be combined, "
                             f"got strides={self.strides}, dilation_rate={self.dilation_rate}")
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same", "causal"):
            raise ValueError(f"Conv1D: padding must be 'valid', 'same' or 'causal', got "
                             f"{padding!r}")
        self.padding = padding.lower()
        self.activation = _layers.get_activation(activation)
        self._activation_id = activation_name(activation)
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
                **kernel_config(self)}


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
        name, dtype, rest = base_kwargs(kwargs)
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
        self._activation_id = activation_name(activation)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "dilation_rate": self.dilation_rate,
                **kernel_config(self)}


Convolution1D = Conv1D
Convolution2D = Conv2D
