"""IndexedSlices: a sparse gradient, rows of a dense tensor (its dense conversion is
registered with convert_to_tensor by ops/indexing.py, where the op that densifies lives)."""
from __future__ import annotations

from . import dtypes as _dt
from .convert import convert_to_tensor
from .tensor import Tensor, TensorShape


class IndexedSlices:
    """A sparse slice gradient: rows `indices` of a `dense_shape` tensor hold `values`.

    Example:
        >>> s = IndexedSlices(tf.ones([1, 2]), tf.constant([1]), tf.constant([3, 2]))
        >>> tf.convert_to_tensor(s).numpy()[1]
        array([1., 1.], dtype=float32)
    """

    _is_tensor_like = True  # tf.is_tensor(slices) is True, as in TensorFlow

    def __init__(self, values, indices, dense_shape=None):
        self.values = convert_to_tensor(values)
        self.indices = convert_to_tensor(indices)
        if dense_shape is not None and not isinstance(dense_shape, Tensor):
            dense_shape = convert_to_tensor(list(dense_shape), dtype=_dt.int64)
        self.dense_shape = dense_shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        if self.dense_shape is None:
            return TensorShape([None] + list(self.values._shape[1:]))
        return TensorShape(int(d) for d in self.dense_shape.numpy())

    @property
    def _shape(self):
        return tuple(self.shape)

    def __neg__(self):
        return IndexedSlices(-self.values, self.indices, self.dense_shape)

    def __mul__(self, scalar):
        return IndexedSlices(self.values * scalar, self.indices, self.dense_shape)

    __rmul__ = __mul__

    def numpy(self):
        return convert_to_tensor(self).numpy()

    def dispose(self) -> None:
        """Release the values, indices and dense shape now (as `tf.dispose` does)."""
        for part in (self.values, self.indices, self.dense_shape):
            if part is not None:
                part.dispose()

    def __repr__(self):
        dense = None if self.dense_shape is None else self.dense_shape.numpy().tolist()
        return (f"IndexedSlices(indices={self.indices.numpy()!r}, values=shape "
                f"{self.values._shape}, dense_shape={dense})")
