"""Activation layers with arguments or weights of their own: ReLU, LeakyReLU, ELU, PReLU,
Softmax."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import math as _math, nn as _nn
from ...ops.creation import zeros_like as _zeros_like
from ...ops.indexing import where as _where
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers
from ..layer import Layer
from ._base import Stateless

__all__ = ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax"]


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


class ELU(Stateless):
    """The exponential linear unit: `x` where `x > 0`, `alpha * (exp(x) - 1)` elsewhere.

    Example:
        >>> tf.keras.layers.ELU(alpha=2.0)(tf.constant([-1.0, 3.0])).numpy().round(4)
        array([-1.2642,  3.    ], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = alpha

    def call(self, x):
        y = _nn.elu(x)
        if self.alpha == 1.0:
            return y
        # elu(x) is exp(x) - 1 below zero: scaling by alpha there gives Keras's ELU
        return _where(x > 0, y, y * _math.cast(self.alpha, y.dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(Layer):
    """A leaky ReLU whose negative slopes are weights: `x` where `x >= 0`, `alpha * x`
    elsewhere. `alpha` has the input's shape without the batch, with size 1 along the
    `shared_axes` (1-based, e.g. `[1, 2]` to share a slope per channel of images).

    Example:
        >>> layer = tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.1))
        >>> layer(tf.constant([[-2.0, 3.0]])).numpy()
        array([[-0.2,  3. ]], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = _init.get(alpha_initializer)
        self.alpha_regularizer = _regularizers.get(alpha_regularizer)
        self.alpha_constraint = _constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) \
                else [shared_axes]
            if any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in axes):
                raise ValueError(f"PReLU: shared_axes must be axes >= 1 (0 is the batch), "
                                 f"got {shared_axes!r}")
            self.shared_axes = axes

    def build(self, input_shape):
        shape = list(input_shape)[1:]
        for axis in self.shared_axes or []:
            if axis > len(shape):
                raise ValueError(f"PReLU {self.name!r}: shared axis {axis} is out of range "
                                 f"for inputs of shape {list(input_shape)}")
            shape[axis - 1] = 1
        if any(d is None for d in shape):
            raise ValueError(f"PReLU {self.name!r}: the axes that are not shared must have a "
                             f"known size, got inputs of shape {list(input_shape)} and "
                             f"shared_axes={self.shared_axes}")
        extra = {} if self.alpha_constraint is None else {"constraint": self.alpha_constraint}
        self.alpha = self.add_weight(shape=shape, name="alpha",
                                     initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, **extra)

    def call(self, x):
        shape = self.alpha.shape
        if x.ndim != len(shape) + 1 or any(
                a != 1 and d != a for a, d in zip(shape, x.shape[1:])):
            want = ", ".join("?" if a == 1 else str(a) for a in shape)
            raise self._input_error(f"rank {len(shape) + 1} with shape [?, {want}]", x)
        return _nn.relu(x) - self.alpha * _nn.relu(-x)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "alpha_initializer": _init.serialize(self.alpha_initializer),
                "alpha_regularizer": _regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": _constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}
