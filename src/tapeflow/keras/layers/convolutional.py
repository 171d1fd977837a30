"""Convolution layers as Keras 3's: plain (Conv1D/2D/3D), transposed, depthwise and
separable, each family a base class over `_Conv`, which holds what they all share
(window arguments, data format, bias, activation, activity regularizer, constraints).

Every layer computes channels-last: a "channels_first" layer moves the channels last on
the way in and back on the way out, so the ops underneath see one layout.
"""
from __future__ import annotations

import numpy as np

from ..._core.shape import dims_of
from ...ops import array as _array, conv as _conv, math as _math, nn as _nn
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers
from ..layer import Layer
from ._base import activation_name, base_kwargs, get_activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D",
           "SeparableConv2D", "Convolution1D", "Convolution2D", "Convolution3D",
           "Convolution1DTranspose", "Convolution2DTranspose", "Convolution3DTranspose",
           "SeparableConvolution1D", "SeparableConvolution2D"]


# --------------------------------------------------------------------------- arguments


def _int_tuple(layer: str, arg: str, value, rank: int, allow_zero: bool = False) -> tuple:
    """An int or `rank` ints -> a tuple of `rank` ints (Keras's standardize_tuple)."""
    values = (value,) * rank if isinstance(value, (int, np.integer)) else value
    if not isinstance(values, (tuple, list)) or len(values) != rank or any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
            for v in values):
        raise ValueError(f"{layer}: the `{arg}` argument must be an int or a tuple of "
                         f"{rank} ints, got {arg}={value!r}")
    lowest = 0 if allow_zero else 1
    if any(v < lowest for v in values):
        raise ValueError(f"{layer}: the `{arg}` argument must hold "
                         f"{'non-negative' if allow_zero else 'positive'} ints, got "
                         f"{arg}={value!r}")
    return tuple(int(v) for v in values)


def _get_constraint(layer: str, arg: str, value):
    """A constraint (a callable applied to a weight after each update) or None: through
    keras.constraints.get where that module has one, else callables only."""
    get = getattr(_constraints, "get", None)
    if get is not None:
        return get(value)
    if value is None or callable(value):
        return value
    raise ValueError(f"{layer}: {arg} must be a callable or None, got {value!r}")


def _constraint_config(constraint):
    if constraint is None:
        return None
    serialize = getattr(_constraints, "serialize", None)
    if serialize is not None:
        return serialize(constraint)
    config = constraint.get_config() if hasattr(constraint, "get_config") else {}
    return {"class_name": type(constraint).__name__, "config": config}


# --------------------------------------------------------------------------- shared base


class _Conv(Layer):
    """What every convolution layer shares; a family sets `_FAMILY_PADDINGS` and
    `_STRIDES_WITH_DILATION`, builds its weights in `build` and convolves channels-last
    inputs in `_convolve`."""

    _FAMILY_PADDINGS = ("valid", "same")
    _STRIDES_WITH_DILATION = False  # Keras refuses both > 1 for plain and transposed

    def _setup(self, rank: int, kernel_size, strides, padding, data_format, dilation_rate,
               activation, use_bias, bias_initializer, bias_regularizer,
               activity_regularizer, bias_constraint, kwargs: dict) -> None:
        cls = type(self).__name__
        trainable = kwargs.pop("trainable", True)
        name, dtype, rest = base_kwargs(kwargs)
        Layer.__init__(self, trainable=trainable, name=name, dtype=dtype, **rest)
        self.rank = rank
        self.kernel_size = _int_tuple(cls, "kernel_size", kernel_size, rank)
        self.strides = _int_tuple(cls, "strides", strides, rank)
        self.dilation_rate = _int_tuple(cls, "dilation_rate", dilation_rate, rank)
        if not self._STRIDES_WITH_DILATION and max(self.strides) > 1 and \
                max(self.dilation_rate) > 1:
            raise ValueError(f"{cls}: `strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`, got strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        if not isinstance(padding, str) or padding.lower() not in self._FAMILY_PADDINGS:
            raise ValueError(f"{cls}: the `padding` argument must be one of "
                             f"{list(self._FAMILY_PADDINGS)}, got padding={padding!r}")
        self.padding = padding.lower()
        data_format = "channels_last" if data_format is None else data_format
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"{cls}: data_format must be 'channels_last' or "
                             f"'channels_first', got {data_format!r}")
        self.data_format = data_format
        self.activation = get_activation(activation)
        self._activation_id = activation_name(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = _init.get(bias_initializer)
        self.bias_regularizer = _regularizers.get(bias_regularizer)
        self.activity_regularizer = _regularizers.get(activity_regularizer)
        self.bias_constraint = _get_constraint(cls, "bias_constraint", bias_constraint)

    def _weight(self, name: str, shape, initializer, regularizer, constraint):
        variable = self.add_weight(shape=tuple(shape), initializer=initializer,
                                   regularizer=regularizer, name=name)
        # Keras keeps a weight's constraint on the variable; optimizers apply it
        variable.constraint = constraint
        return variable

    def _add_bias(self, size: int) -> None:
        self.bias = self._weight("bias", (size,), self.bias_initializer,
                                 self.bias_regularizer, self.bias_constraint) \
            if self.use_bias else None

    def _channels(self, input_shape) -> int:
        """The input's channel count, checking its rank (build's check)."""
        shape = list(input_shape)
        axis = -1 if self.data_format == "channels_last" else 1
        if len(shape) != self.rank + 2 or shape[axis] is None:
            spatial = ", ".join(["steps"] if self.rank == 1 else
                                ["depth", "height", "width"][3 - self.rank:])
            layout = f"[batch, {spatial}, channels]" \
                if self.data_format == "channels_last" else f"[batch, channels, {spatial}]"
            raise ValueError(f"{type(self).__name__} {self.name!r}: inputs must be "
                             f"{self.rank + 2}-D {layout} with known channels, got shape "
                             f"{shape}")
        return int(shape[axis])

    def call(self, x):
        last = self.data_format == "channels_last"
        if x.ndim != self.rank + 2 or x._shape[-1 if last else 1] != self._in_channels:
            raise self._input_error(f"a {self.rank + 2}-D input with {self._in_channels} "
                                    f"channels ({self.data_format})", x)
        if not last:
            x = _array.transpose(x, (0, *range(2, self.rank + 2), 1))
        y = self._convolve(x)
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        y = self.activation(y)
        if not last:
            y = _array.transpose(y, (0, self.rank + 1, *range(1, self.rank + 1)))
        if self.activity_regularizer is not None:
            # as Keras 3: the penalty per example, so it does not grow with the batch
            batch = _math.cast(_array.shape(y)[0], y.dtype)
            self.add_loss(self.activity_regularizer(y) / batch)
        return y

    def _common_config(self) -> dict:
        return {"kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate}


# --------------------------------------------------------------------------- convolution


class BaseConv(_Conv):
    """N-D convolution (cross-correlation) with `filters` outputs, optionally grouped:
    kernel [*kernel_size, in_channels // groups, filters], bias [filters]."""

    def __init__(self, rank: int, filters: int, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, groups: int = 1, activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        cls = type(self).__name__
        self._setup(rank, kernel_size, strides, padding, data_format, dilation_rate,
                    activation, use_bias, bias_initializer, bias_regularizer,
                    activity_regularizer, bias_constraint, kwargs)
        self.filters = _layers._positive_int(cls, "filters", filters)
        self.groups = _layers._positive_int(cls, "groups", groups)
        if self.filters % self.groups:
            raise ValueError(f"{cls}: the number of filters must be evenly divisible by "
                             f"the number of groups, got groups={self.groups}, "
                             f"filters={self.filters}")
        self.kernel_initializer = _init.get(kernel_initializer)
        self.kernel_regularizer = _regularizers.get(kernel_regularizer)
        self.kernel_constraint = _get_constraint(cls, "kernel_constraint",
                                                 kernel_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        if channels % self.groups:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the number of input "
                             f"channels must be evenly divisible by the number of groups, "
                             f"got groups={self.groups} and input shape "
                             f"{list(input_shape)}")
        self._in_channels = channels
        self.kernel = self._weight(
            "kernel", self.kernel_size + (channels // self.groups, self.filters),
            self.kernel_initializer, self.kernel_regularizer, self.kernel_constraint)
        self._add_bias(self.filters)

    def _convolve(self, x):
        return _conv.convolution(x, self.kernel, self.strides, self.padding.upper(),
                                 dilations=self.dilation_rate)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, **self._common_config(),
                "groups": self.groups, "activation": self._activation_id,
                "use_bias": self.use_bias,
                "kernel_initializer": _init.serialize(self.kernel_initializer),
                "bias_initializer": _init.serialize(self.bias_initializer),
                "kernel_regularizer": _regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": _regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": _regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": _constraint_config(self.kernel_constraint),
                "bias_constraint": _constraint_config(self.bias_constraint)}


class Conv1D(BaseConv):
    """1-D convolution over [batch, steps, channels] inputs, kernel of shape
    [kernel_size, in_channels // groups, filters]; `padding="causal"` pads only the start,
    so output step t sees inputs up to t.

    Example:
        >>> tf.keras.layers.Conv1D(4, 3, padding="causal")(tf.ones([2, 7, 3])).shape
        TensorShape([2, 7, 4])
    """

    _FAMILY_PADDINGS = ("valid", "same", "causal")

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 data_format=None, dilation_rate=1, groups: int = 1, activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, kernel_initializer,
                         bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)

    def _convolve(self, x):
        if self.padding != "causal":
            return super()._convolve(x)
        # (kernel_size - 1) * dilation zeros before the first step, none after
        left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
        x = _array.pad(x, [[0, 0], [left, 0], [0, 0]])
        return _conv.convolution(x, self.kernel, self.strides, "VALID",
                                 dilations=self.dilation_rate)


class Conv2D(BaseConv):
    """2-D convolution over [batch, height, width, channels] images, kernel of shape
    [kh, kw, in_channels // groups, filters].

    Example:
        >>> tf.keras.layers.Conv2D(8, 3, padding="same")(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 5, 5, 8])
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                 data_format=None, dilation_rate=(1, 1), groups: int = 1, activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, kernel_initializer,
                         bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)


class Conv3D(BaseConv):
    """3-D convolution over [batch, depth, height, width, channels] volumes, kernel of
    shape [kd, kh, kw, in_channels // groups, filters].

    Example:
        >>> tf.keras.layers.Conv3D(2, 3)(tf.ones([1, 4, 5, 6, 3])).shape
        TensorShape([1, 2, 3, 4, 2])
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1, 1), padding: str = "valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups: int = 1,
                 activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, groups, activation, use_bias, kernel_initializer,
                         bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)


# --------------------------------------------------------------------------- transposed


def _transposed_size(n: int, k: int, s: int, d: int, padding: str, extra) -> int:
    """Keras's output size of a transposed convolution along one axis (`extra` is the
    output_padding, or None for Keras's default)."""
    ke = (k - 1) * d + 1
    if padding == "valid":
        return (n - 1) * s + ke + (max(ke, s) - ke if extra is None else extra)
    return n * s if extra is None else (n - 1) * s + ke % 2 + extra


class BaseConvTranspose(_Conv):
    """N-D transposed convolution (the adjoint of a convolution, as a decoder's
    upsampling): kernel [*kernel_size, filters, in_channels], bias [filters]."""

    def __init__(self, rank: int, filters: int, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1, activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        cls = type(self).__name__
        self._setup(rank, kernel_size, strides, padding, data_format, dilation_rate,
                    activation, use_bias, bias_initializer, bias_regularizer,
                    activity_regularizer, bias_constraint, kwargs)
        self.filters = _layers._positive_int(cls, "filters", filters)
        self.output_padding = None if output_padding is None else \
            _int_tuple(cls, "output_padding", output_padding, rank, allow_zero=True)
        if self.output_padding is not None:
            for i, (extra, s) in enumerate(zip(self.output_padding, self.strides)):
                if extra >= s:
                    raise ValueError(f"{cls}: `output_padding` must be strictly less than "
                                     f"`strides` in every dimension; at dimension {i} "
                                     f"output_padding is {extra} and strides is {s} "
                                     f"(output_padding={self.output_padding}, "
                                     f"strides={self.strides})")
        self.kernel_initializer = _init.get(kernel_initializer)
        self.kernel_regularizer = _regularizers.get(kernel_regularizer)
        self.kernel_constraint = _get_constraint(cls, "kernel_constraint",
                                                 kernel_constraint)

    def build(self, input_shape):
        channels = self._in_channels = self._channels(input_shape)
        self.kernel = self._weight("kernel", self.kernel_size + (self.filters, channels),
                                   self.kernel_initializer, self.kernel_regularizer,
                                   self.kernel_constraint)
        self._add_bias(self.filters)

    def _convolve(self, x):
        spatial = x._shape[1:-1]
        if None in spatial:
            raise self._input_error("known spatial sizes (a transposed convolution's "
                                    "output size follows from them)", x)
        extra = self.output_padding or (None,) * self.rank
        out = [_transposed_size(n, k, s, d, self.padding, e) for n, k, s, d, e in
               zip(spatial, self.kernel_size, self.strides, self.dilation_rate, extra)]
        shape = [dims_of(x)[0], *out, self.filters]
        fn = {1: _conv.conv1d_transpose, 2: _conv.conv2d_transpose,
              3: _conv.conv3d_transpose}[self.rank]
        return fn(x, self.kernel, shape, self.strides, self.padding.upper(),
                  dilations=self.dilation_rate)

    def get_config(self) -> dict:
        config = {**super().get_config(), "filters": self.filters,
                  **self._common_config(), "output_padding": self.output_padding,
                  "activation": self._activation_id, "use_bias": self.use_bias,
                  "kernel_initializer": _init.serialize(self.kernel_initializer),
                  "bias_initializer": _init.serialize(self.bias_initializer),
                  "kernel_regularizer": _regularizers.serialize(self.kernel_regularizer),
                  "bias_regularizer": _regularizers.serialize(self.bias_regularizer),
                  "activity_regularizer": _regularizers.serialize(
                      self.activity_regularizer),
                  "kernel_constraint": _constraint_config(self.kernel_constraint),
                  "bias_constraint": _constraint_config(self.bias_constraint)}
        return config


class Conv1DTranspose(BaseConvTranspose):
    """1-D transposed convolution, kernel of shape [kernel_size, filters, in_channels].

    Example:
        >>> tf.keras.layers.Conv1DTranspose(4, 3, strides=2)(tf.ones([2, 5, 3])).shape
        TensorShape([2, 11, 4])
    """

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 output_padding=None, data_format=None, dilation_rate=1, activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer,
                         bias_regularizer, activity_regularizer, kernel_constraint,
                         bias_constraint, **kwargs)


class Conv2DTranspose(BaseConvTranspose):
    """2-D transposed convolution, kernel of shape [kh, kw, filters, in_channels].

    Example:
        >>> layer = tf.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same")
        >>> layer(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 10, 10, 4])
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1),
                 activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer,
                         bias_regularizer, activity_regularizer, kernel_constraint,
                         bias_constraint, **kwargs)


class Conv3DTranspose(BaseConvTranspose):
    """3-D transposed convolution, kernel of shape [kd, kh, kw, filters, in_channels].
    Its input's spatial sizes must be known (its output size follows from them).

    Example:
        >>> layer = tf.keras.layers.Conv3DTranspose(2, 2, strides=2)
        >>> layer(tf.ones([1, 2, 3, 4, 3])).shape
        TensorShape([1, 4, 6, 8, 2])
    """

    # Keras 3 puts data_format before output_padding here (only here)
    def __init__(self, filters: int, kernel_size, strides=(1, 1, 1), padding: str = "valid",
                 data_format=None, output_padding=None, dilation_rate=(1, 1, 1),
                 activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, output_padding,
                         data_format, dilation_rate, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer,
                         bias_regularizer, activity_regularizer, kernel_constraint,
                         bias_constraint, **kwargs)


# --------------------------------------------------------------------------- depthwise


class _DepthwiseArgs(_Conv):
    """The depthwise half both depthwise and separable layers have: `depth_multiplier`
    filters per input channel, kernel [*kernel_size, in_channels, depth_multiplier]."""

    _STRIDES_WITH_DILATION = True

    def _depthwise_setup(self, depth_multiplier, depthwise_initializer,
                         depthwise_regularizer, depthwise_constraint) -> None:
        cls = type(self).__name__
        self.depth_multiplier = _layers._positive_int(cls, "depth_multiplier",
                                                      depth_multiplier)
        self.depthwise_initializer = _init.get(depthwise_initializer)
        self.depthwise_regularizer = _regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = _get_constraint(cls, "depthwise_constraint",
                                                    depthwise_constraint)

    def _depthwise(self, x, kernel):
        """Each channel of channels-last `x` with its own depth_multiplier filters."""
        if self.rank == 2:
            return _conv.depthwise_conv2d(x, kernel, self.strides, self.padding.upper(),
                                          dilations=self.dilation_rate)
        # 1-D: a depthwise convolution of height 1
        xs = dims_of(x)
        y = _conv.depthwise_conv2d(_array.reshape(x, (xs[0], 1) + xs[1:]),
                                   _array.reshape(kernel, (1,) + tuple(kernel.shape)),
                                   (1,) + self.strides, self.padding.upper(),
                                   dilations=(1,) + self.dilation_rate)
        ys = dims_of(y)
        return _array.reshape(y, ys[:1] + ys[2:])

    def _depthwise_config(self) -> dict:
        return {"depthwise_initializer": _init.serialize(self.depthwise_initializer),
                "depthwise_regularizer": _regularizers.serialize(self.depthwise_regularizer),
                "depthwise_constraint": _constraint_config(self.depthwise_constraint)}


class BaseDepthwiseConv(_DepthwiseArgs):
    """Depthwise convolution: kernel [*kernel_size, in_channels, depth_multiplier] (named
    "kernel" as in Keras 3), bias [in_channels * depth_multiplier]; output channel
    c * depth_multiplier + m is input channel c with its m-th filter."""

    def __init__(self, rank: int, kernel_size, strides=1, padding="valid",
                 depth_multiplier: int = 1, data_format=None, dilation_rate=1,
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        self._setup(rank, kernel_size, strides, padding, data_format, dilation_rate,
                    activation, use_bias, bias_initializer, bias_regularizer,
                    activity_regularizer, bias_constraint, kwargs)
        self._depthwise_setup(depth_multiplier, depthwise_initializer,
                              depthwise_regularizer, depthwise_constraint)

    def build(self, input_shape):
        channels = self._in_channels = self._channels(input_shape)
        self.kernel = self._weight("kernel", self.kernel_size + (channels,
                                                                 self.depth_multiplier),
                                   self.depthwise_initializer, self.depthwise_regularizer,
                                   self.depthwise_constraint)
        self._add_bias(channels * self.depth_multiplier)

    def _convolve(self, x):
        return self._depthwise(x, self.kernel)

    def get_config(self) -> dict:
        config = self._depthwise_config()
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                **self._common_config(), "activation": self._activation_id,
                "use_bias": self.use_bias,
                "depthwise_initializer": config["depthwise_initializer"],
                "bias_initializer": _init.serialize(self.bias_initializer),
                "depthwise_regularizer": config["depthwise_regularizer"],
                "bias_regularizer": _regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": _regularizers.serialize(self.activity_regularizer),
                "depthwise_constraint": config["depthwise_constraint"],
                "bias_constraint": _constraint_config(self.bias_constraint)}


class DepthwiseConv1D(BaseDepthwiseConv):
    """Depthwise 1-D convolution: each input channel with its own `depth_multiplier`
    filters; kernel [kernel_size, in_channels, depth_multiplier].

    Example:
        >>> layer = tf.keras.layers.DepthwiseConv1D(3, depth_multiplier=2)
        >>> layer(tf.ones([2, 7, 3])).shape
        TensorShape([2, 5, 6])
    """

    def __init__(self, kernel_size, strides=1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format=None, dilation_rate=1,
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(1, kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint,
                         **kwargs)


class DepthwiseConv2D(BaseDepthwiseConv):
    """Depthwise 2-D convolution: each input channel with its own `depth_multiplier`
    filters; kernel [kh, kw, in_channels, depth_multiplier].

    Example:
        >>> tf.keras.layers.DepthwiseConv2D(3, padding="same")(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 5, 5, 3])
    """

    def __init__(self, kernel_size, strides=(1, 1), padding: str = "valid",
                 depth_multiplier: int = 1, data_format=None, dilation_rate=(1, 1),
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(2, kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint,
                         **kwargs)


# --------------------------------------------------------------------------- separable


class BaseSeparableConv(_DepthwiseArgs):
    """Separable convolution: a depthwise convolution (depthwise_kernel [*kernel_size,
    in_channels, depth_multiplier]) then a pointwise one (pointwise_kernel [1, ...,
    in_channels * depth_multiplier, filters]), then the bias [filters]."""

    def __init__(self, rank: int, filters: int, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, depth_multiplier: int = 1,
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        cls = type(self).__name__
        self._setup(rank, kernel_size, strides, padding, data_format, dilation_rate,
                    activation, use_bias, bias_initializer, bias_regularizer,
                    activity_regularizer, bias_constraint, kwargs)
        self.filters = _layers._positive_int(cls, "filters", filters)
        self._depthwise_setup(depth_multiplier, depthwise_initializer,
                              depthwise_regularizer, depthwise_constraint)
        self.pointwise_initializer = _init.get(pointwise_initializer)
        self.pointwise_regularizer = _regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = _get_constraint(cls, "pointwise_constraint",
                                                    pointwise_constraint)

    def build(self, input_shape):
        channels = self._in_channels = self._channels(input_shape)
        self.depthwise_kernel = self._weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            self.depthwise_initializer, self.depthwise_regularizer,
            self.depthwise_constraint)
        self.pointwise_kernel = self._weight(
            "pointwise_kernel", (1,) * self.rank + (channels * self.depth_multiplier,
                                                    self.filters),
            self.pointwise_initializer, self.pointwise_regularizer,
            self.pointwise_constraint)
        self._add_bias(self.filters)

    def _convolve(self, x):
        y = self._depthwise(x, self.depthwise_kernel)
        return _conv.convolution(y, self.pointwise_kernel, 1, "VALID")

    def get_config(self) -> dict:
        config = self._depthwise_config()
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                "filters": self.filters, **self._common_config(),
                "activation": self._activation_id, "use_bias": self.use_bias,
                "depthwise_initializer": config["depthwise_initializer"],
                "pointwise_initializer": _init.serialize(self.pointwise_initializer),
                "bias_initializer": _init.serialize(self.bias_initializer),
                "depthwise_regularizer": config["depthwise_regularizer"],
                "pointwise_regularizer": _regularizers.serialize(
                    self.pointwise_regularizer),
                "bias_regularizer": _regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": _regularizers.serialize(self.activity_regularizer),
                "depthwise_constraint": config["depthwise_constraint"],
                "pointwise_constraint": _constraint_config(self.pointwise_constraint),
                "bias_constraint": _constraint_config(self.bias_constraint)}


class SeparableConv1D(BaseSeparableConv):
    """Separable 1-D convolution: depthwise over the steps, then pointwise across the
    channels (weights depthwise_kernel, pointwise_kernel, bias).

    Example:
        >>> tf.keras.layers.SeparableConv1D(4, 3)(tf.ones([2, 7, 3])).shape
        TensorShape([2, 5, 4])
    """

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid",
                 data_format=None, dilation_rate=1, depth_multiplier: int = 1,
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, depth_multiplier, activation, use_bias,
                         depthwise_initializer, pointwise_initializer, bias_initializer,
                         depthwise_regularizer, pointwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, pointwise_constraint,
                         bias_constraint, **kwargs)


class SeparableConv2D(BaseSeparableConv):
    """Separable 2-D convolution: depthwise over height and width, then pointwise across
    the channels (weights depthwise_kernel, pointwise_kernel, bias).

    Example:
        >>> tf.keras.layers.SeparableConv2D(4, 3)(tf.ones([1, 5, 5, 3])).shape
        TensorShape([1, 3, 3, 4])
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
                 data_format=None, dilation_rate=(1, 1), depth_multiplier: int = 1,
                 activation=None, use_bias: bool = True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, depth_multiplier, activation, use_bias,
                         depthwise_initializer, pointwise_initializer, bias_initializer,
                         depthwise_regularizer, pointwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, pointwise_constraint,
                         bias_constraint, **kwargs)


# Keras 3's other names for the same classes
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
