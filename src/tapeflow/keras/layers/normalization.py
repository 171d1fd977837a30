"""Normalization layers: batch and layer normalization."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.tensor import Tensor
from ...function.control_flow import cond as _cond
from ...ops import array as _array, math as _math, reduction as _reduction
from ...ops.creation import ones_like as _ones_like
from ...train import layers as _layers
from ..layer import Layer, unique_name
from ._base import base_kwargs

__all__ = ["BatchNormalization", "LayerNormalization"]


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
        name, dtype, rest = base_kwargs(kwargs)
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
        name, dtype, rest = base_kwargs(kwargs)
        _layers.LayerNorm.__init__(self, axis, epsilon, center, scale, beta_initializer,
                                   gamma_initializer, name=unique_name(name, type(self)),
                                   dtype=dtype)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}
