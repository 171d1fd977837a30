"""`keras.ops` core functions (Keras 3's `keras.src.ops.core`): `cast`, `shape`,
`convert_to_tensor`, `convert_to_numpy`, on tensors and KerasTensors.

Example:
    >>> tf.keras.ops.shape(tf.ones([2, 3]))
    (2, 3)
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ..._core.shape import is_symbolic
from ..._core.tensor import Tensor
from ...ops import array as _array, math as _math
from ..layer import KerasTensor
from .operation import keras_op, tensor

__all__ = ["cast", "shape", "convert_to_tensor", "convert_to_numpy", "stop_gradient"]


@keras_op("core", config=("dtype",))
def cast(x, dtype):
    """`x` as `dtype`.

    Example:
        >>> tf.keras.ops.cast(tf.constant([1.7]), "int32").numpy()
        array([1], dtype=int32)
    """
    return _math.cast(tensor(x), _dt.as_dtype(dtype))


def shape(x) -> tuple:
    """The shape of `x` as a tuple: ints where known; None (KerasTensor) or a scalar
    tensor (inside a traced function) where not, as Keras 3's TensorFlow backend.

    Example:
        >>> tf.keras.ops.shape(tf.keras.Input((3,)))
        (None, 3)
    """
    if isinstance(x, KerasTensor):
        return tuple(x.shape)
    x = tensor(x)
    static = tuple(x.shape)
    if is_symbolic(x) and None in static:
        dynamic = _array.shape(x)
        return tuple(dynamic[i] if d is None else d for i, d in enumerate(static))
    return static


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """`x` as a tensor (of `dtype` when given); Python floats become float32 and ints
    int32, as Keras's.

    Example:
        >>> tf.keras.ops.convert_to_tensor([1.0, 2.0]).dtype
        tf.float32
    """
    if isinstance(x, KerasTensor):
        return x if dtype is None else cast(x, dtype)
    return tensor(x, dtype)


def convert_to_numpy(x) -> np.ndarray:
    """`x` as a NumPy array.

    Example:
        >>> tf.keras.ops.convert_to_numpy(tf.constant([1, 2]))
        array([1, 2], dtype=int32)
    """
    if isinstance(x, KerasTensor):
        raise ValueError("keras.ops.convert_to_numpy: a KerasTensor is symbolic and has no "
                         "value; call the model on data instead")
    return x.numpy() if isinstance(x, Tensor) else np.asarray(tensor(x).numpy())


@keras_op("core")
def stop_gradient(variable):
    """`variable`'s value, with no gradient flowing back through it."""
    return _array.stop_gradient(tensor(variable))
