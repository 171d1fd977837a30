"""`tf.keras.activations`: the activation functions layers take by name, and `get`.

Example:
    >>> tf.keras.activations.relu(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
"""
from __future__ import annotations

from ..ops.math import exp, softplus, softsign, tanh  # noqa: F401
from ..ops.nn import elu, gelu, leaky_relu, log_softmax, relu6, selu, silu  # noqa: F401
from ..ops.nn import relu as _relu
from ..train.layers import get_activation, keras_sigmoid, keras_softmax
from .layers.activations import ReLU

__all__ = ["relu", "relu6", "elu", "selu", "gelu", "leaky_relu", "silu", "swish", "tanh",
           "sigmoid", "softmax", "log_softmax", "softplus", "softsign", "exponential",
           "linear", "get"]


def relu(x, negative_slope: float = 0.0, max_value=None, threshold: float = 0.0):
    """`max(x, 0)` (Keras's relu; the other arguments as in layers.ReLU)."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return _relu(x)
    return ReLU(max_value, negative_slope, threshold)(x)


def softmax(x, axis: int = -1):
    """Softmax over `axis` (its output carries the logits, for cross-entropy losses)."""
    return keras_softmax(x, axis=axis)


def sigmoid(x):
    """1 / (1 + exp(-x)) (its output carries the logits, for cross-entropy losses)."""
    return keras_sigmoid(x)


def linear(x):
    """The identity."""
    return x


swish = silu
exponential = exp


def get(identifier):
    """The activation function for a name, a callable (as is) or None (linear)."""
    return get_activation(identifier)
