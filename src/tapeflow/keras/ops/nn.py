"""`keras.ops` neural-network functions (Keras 3's `keras.src.ops.nn`): activations,
`softmax`, `one_hot`, on tensors and KerasTensors.

Example:
    >>> tf.keras.ops.relu(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
"""
from __future__ import annotations

from ..._core import dtypes as _dt
from ...ops import (array as _array, creation as _creation, math as _math, nn as _nn,
                    reduction as _reduction)
from .operation import floatx_of, keras_op, tensor

__all__ = ["relu", "sigmoid", "gelu", "softmax", "log_softmax", "one_hot", "silu", "swish"]


def _floats(x):
    x = tensor(x)
    return x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))


@keras_op("nn")
def relu(x):
    """`max(x, 0)`."""
    return _nn.relu(_floats(x))


@keras_op("nn")
def sigmoid(x):
    """`1 / (1 + exp(-x))`."""
    return _math.sigmoid(_floats(x))


@keras_op("nn")
def silu(x):
    """`x * sigmoid(x)` (also `swish`)."""
    return _nn.silu(_floats(x))


swish = silu


@keras_op("nn", config=("approximate",))
def gelu(x, approximate=True):
    """The Gaussian error linear unit; Keras's default is the tanh approximation.

    Example:
        >>> round(float(tf.keras.ops.gelu(tf.constant(1.0))), 4)
        0.8412
    """
    return _nn.gelu(_floats(x), approximate=approximate)


@keras_op("nn", config=("axis",))
def softmax(x, axis=-1):
    """`exp(x) / sum(exp(x))` over `axis` (an int, a tuple, or None for all axes)."""
    x = _floats(x)
    if axis is None or isinstance(axis, (list, tuple)):
        from_axes = list(range(x.ndim)) if axis is None else [a % x.ndim for a in axis]
        shifted = x - _array.stop_gradient(_reduction.reduce_max(x, from_axes, keepdims=True))
        e = _math.exp(shifted)
        return e / _reduction.reduce_sum(e, from_axes, keepdims=True)
    return _nn.softmax(x, axis=axis)


@keras_op("nn", config=("axis",))
def log_softmax(x, axis=-1):
    """`log(softmax(x))`, computed stably."""
    return _nn.log_softmax(_floats(x), axis=axis)


@keras_op("nn", config=("num_classes", "axis", "dtype", "sparse"))
def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot vectors of length `num_classes` along a new `axis` (floatx by default);
    out-of-range indices give zeros.

    Example:
        >>> tf.keras.ops.one_hot(tf.constant([0, 2]), 3).numpy()
        array([[1., 0., 0.],
               [0., 0., 1.]], dtype=float32)
    """
    if sparse:
        raise NotImplementedError("keras.ops.one_hot: sparse=True is not supported")
    return _creation.one_hot(tensor(x), num_classes, axis=axis,
                             dtype=_dt.as_dtype(dtype) if dtype else _dt.float32)
