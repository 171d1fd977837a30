"""Layers that merge a list of inputs: Add, Multiply, Concatenate."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import array as _array, math as _math, reduction as _reduction
from ...ops.creation import zeros as _zeros
from ._base import Stateless

__all__ = ["Add", "Concatenate", "Multiply"]


class _Merge(Stateless):
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


class Concatenate(Stateless):
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
