"""Regularization layers: Dropout, SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout,
AlphaDropout, ActivityRegularization.

The noisy layers are the identity unless called with `training=True` (as `fit` calls
them). Dropout's `seed` is an op seed with tapeflow's (TensorFlow's) rules; the other
noisy layers draw from a `keras.random.SeedGenerator(seed)` of their own, as Keras 3's:
two layers made with the same seed draw the same noise, successive calls fresh noise
(also inside `tf.function`, the generator's state being a variable), and without a seed
the noise is reproducible after `keras.utils.set_random_seed`.
"""
from __future__ import annotations

import math

from ..._core import dtypes as _dt
from ..._core.shape import dims_of
from ..._core.tensor import Tensor
from ...function.control_flow import cond as _cond
from ...ops import array as _array, math as _math, reduction as _reduction
from ...ops.indexing import where as _where
from ...train import layers as _layers
from .. import random as _krandom
from ..layer import Layer, unique_name
from ._base import Stateless, base_kwargs
from .reshaping import data_format_arg

__all__ = ["ActivityRegularization", "AlphaDropout", "Dropout", "GaussianDropout",
           "GaussianNoise", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]


def _in_training(layer, x, training, noisy):
    """`noisy(x)` when training (a bool, or a traced bool tensor: both branches are
    traced), else x unchanged."""
    training = _layers._training(type(layer).__name__, training)
    if isinstance(training, Tensor):
        return _cond(training, lambda: noisy(x), lambda: _array.identity(x))
    return noisy(x) if training else x


def _rate_arg(layer: str, arg: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 <= value <= 1:
        raise ValueError(f"{layer}: invalid value received for argument `{arg}`. Expected "
                         f"a float value between 0 and 1. Received: {arg}={value!r}")
    return value


class Dropout(Layer, _layers.Dropout):
    """Zeroes a `rate` fraction of the inputs in training (scaling the rest).

    Example:
        >>> tf.keras.layers.Dropout(0.5)(tf.ones([4])).numpy()   # not training: unchanged
        array([1., 1., 1., 1.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, rate: float, noise_shape=None, seed=None, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        _layers.Dropout.__init__(self, rate, noise_shape, seed,
                                 name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class _SpatialDropout(Dropout):
    """Dropout of whole channels: one keep/drop decision per example and channel, shared
    by every step (pixel, voxel); kept channels are scaled by 1 / (1 - rate)."""

    _RANK = 1

    def __init__(self, rate: float, data_format=None, seed=None, name=None, dtype=None):
        self.data_format = data_format_arg(type(self).__name__, data_format)
        spatial = (1,) * self._RANK
        noise_shape = (None, None, *spatial) if self.data_format == "channels_first" \
            else (None, *spatial, None)
        super().__init__(rate, noise_shape=noise_shape, seed=seed, name=name, dtype=dtype)
        self.seed_generator = _krandom.SeedGenerator(seed)

    def call(self, x, training=None):
        if x.ndim != self._RANK + 2:
            raise self._input_error(f"a {self._RANK + 2}-D input", x)
        return super().call(x, training=training)

    def _drop(self, x):
        return _krandom.dropout(x, self.rate, self.noise_shape, seed=self.seed_generator)

    def get_config(self) -> dict:
        # Keras's spatial dropouts write only these keys
        return {"rate": self.rate, "seed": self.seed, "name": self.name,
                "dtype": (self._dtype or _dt.float32).name, "data_format": self.data_format}


class SpatialDropout1D(_SpatialDropout):
    """Drops whole feature channels of [batch, steps, channels] inputs in training (the
    same channels at every step), scaling the kept ones by 1 / (1 - rate).

    Example:
        >>> drop = tf.keras.layers.SpatialDropout1D(0.5, seed=1)
        >>> drop(tf.ones([2, 3, 4]), training=True).shape   # columns of 0.0 or 2.0
        TensorShape([2, 3, 4])
    """

    def __init__(self, rate: float, seed=None, name=None, dtype=None):
        super().__init__(rate, seed=seed, name=name, dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["data_format"]
        return config


class SpatialDropout2D(_SpatialDropout):
    """Drops whole channels (feature maps) of images in training, scaling the kept ones by
    1 / (1 - rate).

    Example:
        >>> drop = tf.keras.layers.SpatialDropout2D(0.5, seed=1)
        >>> drop(tf.ones([2, 3, 3, 4])).shape   # not training: unchanged
        TensorShape([2, 3, 3, 4])
    """

    _RANK = 2


class SpatialDropout3D(_SpatialDropout):
    """Drops whole channels of 5-D inputs in training, scaling the kept ones by
    1 / (1 - rate).

    Example:
        >>> tf.keras.layers.SpatialDropout3D(0.5)(tf.ones([1, 2, 2, 2, 3])).shape
        TensorShape([1, 2, 2, 2, 3])
    """

    _RANK = 3


class GaussianNoise(Stateless):
    """Adds N(0, stddev**2) noise to the inputs in training.

    Example:
        >>> tf.keras.layers.GaussianNoise(0.1)(tf.ones([3])).numpy()   # not training
        array([1., 1., 1.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, stddev: float, seed=None, **kwargs):
        self.stddev = _rate_arg("GaussianNoise", "stddev", stddev)
        self.seed = seed
        super().__init__(**kwargs)
        self.seed_generator = _krandom.SeedGenerator(seed)

    def call(self, x, training=None):
        if self.stddev == 0:
            return x
        return _in_training(self, x, training, lambda x: x + _krandom.normal(
            dims_of(x), stddev=self.stddev, dtype=x.dtype, seed=self.seed_generator))

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Stateless):
    """Multiplies the inputs by N(1, rate / (1 - rate)) noise in training.

    Example:
        >>> tf.keras.layers.GaussianDropout(0.2)(tf.ones([3])).numpy()   # not training
        array([1., 1., 1.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, rate: float, seed=None, **kwargs):
        self.rate = _rate_arg("GaussianDropout", "rate", rate)
        self.seed = seed
        super().__init__(**kwargs)
        self.seed_generator = _krandom.SeedGenerator(seed)

    def call(self, x, training=None):
        if self.rate == 0:
            return x
        if self.rate == 1:
            raise ValueError(f"GaussianDropout {self.name!r}: rate=1 gives noise of infinite "
                             "variance; use a rate below 1")
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return _in_training(self, x, training, lambda x: x * _krandom.normal(
            dims_of(x), mean=1.0, stddev=stddev, dtype=x.dtype, seed=self.seed_generator))

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


# SELU's constants: alpha * scale is the value SELU tends to for large negative inputs
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(Stateless):
    """Dropout that keeps SELU's self-normalization in training: dropped entries are set
    to SELU's negative saturation value, then an affine map restores the inputs' mean and
    variance. `noise_shape` (None entries take the input's sizes) shares decisions. This
    is tf.keras's (legacy) AlphaDropout: its config holds `rate` and `seed`, not
    `noise_shape`.

    Example:
        >>> tf.keras.layers.AlphaDropout(0.2)(tf.ones([3])).numpy()   # not training
        array([1., 1., 1.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, rate: float, noise_shape=None, seed=None, **kwargs):
        self.rate = _rate_arg("AlphaDropout", "rate", rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        super().__init__(**kwargs)
        self.seed_generator = _krandom.SeedGenerator(seed)

    def _noise_shape(self, x):
        dims = dims_of(x)  # unknown sizes as run-time dims
        if self.noise_shape is None:
            return list(dims)
        if len(self.noise_shape) != x.ndim:
            raise self._input_error(f"rank {len(self.noise_shape)} to match noise_shape="
                                    f"{self.noise_shape}", x)
        return [s if d is None else d for d, s in zip(self.noise_shape, dims)]

    def _drop(self, x):
        saturated = -_SELU_ALPHA * _SELU_SCALE
        kept = _math.cast(_krandom.uniform(self._noise_shape(x), dtype=x.dtype,
                                           seed=self.seed_generator) >= self.rate, x.dtype)
        a = ((1 - self.rate) * (1 + self.rate * saturated ** 2)) ** -0.5
        b = -a * saturated * self.rate
        return (x * kept + saturated * (1 - kept)) * a + b

    def call(self, x, training=None):
        if self.rate == 0:
            return x
        return _in_training(self, x, training, self._drop)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class ActivityRegularization(Stateless):
    """The identity that adds `l1 * sum(|x|) + l2 * sum(x**2)`, divided by the batch size,
    to `losses` at every call (which `fit` adds to the loss it minimizes).

    Example:
        >>> layer = tf.keras.layers.ActivityRegularization(l1=0.1)
        >>> _ = layer(tf.constant([[1.0, -2.0], [3.0, 0.0]]))
        >>> round(float(layer.losses[0]), 6)   # 0.1 * 6 / 2
        0.3
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.l1, self.l2 = l1, l2

    def call(self, x):
        loss = _math.cast(0.0, x.dtype)
        if self.l1:
            loss = loss + _math.cast(self.l1, x.dtype) * _reduction.reduce_sum(_math.abs(x))
        if self.l2:
            loss = loss + _math.cast(self.l2, x.dtype) * _reduction.reduce_sum(
                _math.square(x))
        if x.ndim > 0:  # per example, as Keras; an empty batch adds 0, not NaN
            batch = _math.cast(_array.shape(x)[0], x.dtype)
            loss = _where(batch > 0, loss / _math.maximum(batch, 1), 0 * loss)
        self.add_loss(loss)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
