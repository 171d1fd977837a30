"""Regularization layers: dropout."""
from __future__ import annotations

from ...train import layers as _layers
from ..layer import Layer, unique_name
from ._base import base_kwargs

__all__ = ["Dropout"]


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
