"""Pooling layers, local and global, 1-D and 2-D, with Keras's aliases."""
from __future__ import annotations

from ...ops import array as _array, conv as _conv, math as _math, reduction as _reduction
from ...train import layers as _layers
from ._base import Stateless, int_one

__all__ = ["AveragePooling1D", "AveragePooling2D", "AvgPool1D", "AvgPool2D",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "MaxPool1D", "MaxPool2D", "MaxPooling1D", "MaxPooling2D"]


class _Pooling1D(Stateless):
    """1-D pooling over [batch, steps, channels], as a 2-D pool of height 1."""
    _op = None

    def __init__(self, pool_size=2, strides=None, padding: str = "valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        kind = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{kind}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.pool_size = (int_one(kind, "pool_size", pool_size),)
        self.strides = self.pool_size if strides is None else \
            (int_one(kind, "strides", strides),)
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


class _GlobalPooling(Stateless):
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


class _Pooling2D(Stateless):
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


# Keras's aliases
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
