"""Activation layers with arguments of their own: ReLU, LeakyReLU, Softmax."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import math as _math, nn as _nn
from ...ops.creation import zeros_like as _zeros_like
from ...ops.indexing import where as _where
from ...train import layers as _layers
from ._base import Stateless

__all__ = ["LeakyReLU", "ReLU", "Softmax"]


class ReLU(Stateless):
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


class LeakyReLU(Stateless):
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


class Softmax(Stateless):
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
