"""Layers that change shapes: Flatten, Reshape."""
from __future__ import annotations

import numpy as np

from ...ops import array as _array
from ._base import Stateless

__all__ = ["Flatten", "Reshape"]


class Flatten(Stateless):
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


class Reshape(Stateless):
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
