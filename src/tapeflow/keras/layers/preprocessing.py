"""Preprocessing layers: Rescaling, Normalization."""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.tensor import TensorShape
from ...data.dataset import Dataset
from ...ops import array as _array, math as _math, nn as _nn
from ..layer import Layer
from ._base import Stateless

__all__ = ["Normalization", "Rescaling"]


class Rescaling(Stateless):
    """`inputs * scale + offset` (e.g. `Rescaling(1./255)` for pixels).

    Example:
        >>> tf.keras.layers.Rescaling(0.5, offset=1.0)(tf.constant([2.0])).numpy()
        array([2.], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def _convert_input(self, inputs):
        x = convert_to_tensor(inputs)
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)  # uint8 images

    def call(self, x):
        return x * _math.cast(self.scale, x.dtype) + _math.cast(self.offset, x.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Normalization(Layer):
    """Shifts and scales inputs to zero mean and unit variance per feature of `axis`:
    `(x - mean) / max(sqrt(variance), 1e-7)` (`invert=True`: back again), with `mean` and
    `variance` given or learned by `adapt(data)` from arrays or a dataset of batches.

    Example:
        >>> norm = tf.keras.layers.Normalization()
        >>> norm.adapt(np.array([[1.0, 2.0], [3.0, 6.0]]))
        >>> norm(np.array([[1.0, 2.0]])).numpy()
        array([[-1., -1.]], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, axis=-1, mean=None, variance=None, invert: bool = False, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both `mean` and `variance`, or neither "
                             "(and call adapt())")
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        self.invert = bool(invert)
        self._given = None if mean is None else (mean, variance)

    def build(self, input_shape):
        ndim = len(input_shape)
        kept = tuple(sorted(a % ndim for a in self.axis))
        if any(input_shape[a] is None for a in kept):
            raise ValueError(f"Normalization {self.name!r}: the axes {self.axis} of the "
                             f"input need known sizes, got shape {input_shape.as_list()}")
        self._reduce = [a for a in range(ndim) if a not in kept]
        self._broadcast = [input_shape[a] if a in kept else 1 for a in range(ndim)]
        features = [input_shape[a] for a in kept]
        if self._given is not None:
            # as Keras: a scalar (or any broadcastable) mean and variance are broadcast
            # over the kept axes, then shaped to broadcast against the input
            self._given_arrays = tuple(
                np.broadcast_to(np.asarray(v, np.float64), features).reshape(self._broadcast)
                for v in self._given)
        if self._given is None:
            self.adapt_mean = self.add_weight("mean", features, "zeros", trainable=False)
            self.adapt_variance = self.add_weight("variance", features, "ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False,
                                         dtype=_dt.int64)

    @property
    def mean(self):
        """The mean, shaped to broadcast against the input."""
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[0].astype(self._dtype.name))
        return _array.reshape(self.adapt_mean, self._broadcast)

    @property
    def variance(self):
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[1].astype(self._dtype.name))
        return _array.reshape(self.adapt_variance, self._broadcast)

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Learn the mean and variance of `data` (an array, or a dataset of batches) over
        every axis but `axis`."""
        if isinstance(data, Dataset):
            batches = [self._convert_input(b) for b in data]
            if not batches:
                raise ValueError(f"Normalization {self.name!r}: adapt() got no data")
            x = _array.concat(batches, axis=0)
        else:
            x = self._convert_input(data)
        if not self.built:
            with self.name_scope:
                self.build(TensorShape(x._shape))
            self.built = True
        if self._given is not None:
            raise ValueError(f"Normalization {self.name!r}: adapt() cannot be used with a "
                             "mean and variance given")
        mean, variance = _nn.moments(x, self._reduce)
        self.adapt_mean.assign(mean)
        self.adapt_variance.assign(variance)
        size = 1
        for a in self._reduce:
            size *= x._shape[a]
        self.count.assign(size)

    def call(self, x):
        scale = _math.maximum(_math.sqrt(self.variance), 1e-7)
        if self.invert:
            return x * scale + self.mean
        return (x - self.mean) / scale

    def get_config(self) -> dict:
        config = {**super().get_config(), "axis": self.axis, "invert": self.invert}
        if self._given is not None:  # as Keras: given values come back with the config
            config.update(mean=np.asarray(self._given[0]).tolist(),
                          variance=np.asarray(self._given[1]).tolist())
        return config
