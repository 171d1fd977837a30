"""`tf.keras.activations`: every activation Keras 3 lists, with Keras's signatures, and
`get`, `serialize`, `deserialize`. Layers take the same names (`Dense(activation="mish")`).

Example:
    >>> tf.keras.activations.relu(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    >>> tf.keras.activations.get("mish") is tf.keras.activations.mish
    True
"""
from __future__ import annotations

from .._core.convert import convert_to_tensor
from ..ops import indexing as _indexing, math as _math, nn as _nn
from ..train.activations import (celu, elu, gelu, glu, hard_shrink, hard_sigmoid,  # noqa: F401
                                 hard_silu, hard_tanh, leaky_relu, log_sigmoid, mish,
                                 soft_shrink, sparse_plus, sparse_sigmoid, sparsemax,
                                 squareplus, tanh_shrink, threshold)
from ..train.layers import get_activation, keras_sigmoid, keras_softmax

__all__ = ["celu", "elu", "exponential", "gelu", "glu", "hard_shrink", "hard_sigmoid",
           "hard_silu", "hard_swish", "hard_tanh", "leaky_relu", "linear", "log_sigmoid",
           "log_softmax", "mish", "relu", "relu6", "selu", "sigmoid", "silu", "soft_shrink",
           "softmax", "softplus", "softsign", "sparse_plus", "sparse_sigmoid", "sparsemax",
           "squareplus", "swish", "tanh", "tanh_shrink", "threshold", "get", "serialize",
           "deserialize"]


def _float(x):
    x = convert_to_tensor(x)
    return x if x.dtype.is_floating else _math.cast(x, "float32")


def relu(x, negative_slope: float = 0.0, max_value=None, threshold: float = 0.0):
    """Keras's relu: `x` above `threshold` (else 0), clipped to `max_value`, minus
    `negative_slope * relu(threshold - x)`.

    Example:
        >>> relu(tf.constant([-1.0, 0.5, 3.0]), negative_slope=0.1, max_value=2.0).numpy()
        array([-0.1,  0.5,  2. ], dtype=float32)
    """
    x = _float(x)
    if negative_slope != 0.0:
        if max_value is None and threshold == 0:
            return _nn.leaky_relu(x, alpha=negative_slope)
        negative_part = _nn.relu(threshold - x) if threshold != 0 else _nn.relu(-x)
    clip = max_value is not None
    if threshold != 0:
        x = _indexing.where(x > threshold, x, _math.cast(0.0, x.dtype))
    elif max_value == 6:
        x, clip = _nn.relu6(x), False
    else:
        x = _nn.relu(x)
    if clip:
        x = _math.clip_by_value(x, 0.0, _math.cast(max_value, x.dtype))
    if negative_slope != 0.0:
        x = x - negative_slope * negative_part
    return x


def relu6(x):
    """`min(max(x, 0), 6)`.

    Example:
        >>> relu6(tf.constant([-1.0, 7.0])).numpy()
        array([0., 6.], dtype=float32)
    """
    return _nn.relu6(_float(x))


def selu(x):
    """The scaled ELU: `scale * elu(x, alpha)` with Keras's constants.

    Example:
        >>> selu(tf.constant([1.0])).numpy()
        array([1.050701], dtype=float32)
    """
    return _nn.selu(_float(x))


def silu(x):
    """`x * sigmoid(x)` (also `swish`).

    Example:
        >>> silu(tf.constant([1.0])).numpy()
        array([0.7310586], dtype=float32)
    """
    return _nn.silu(_float(x))


swish = silu
hard_swish = hard_silu


def tanh(x):
    """The hyperbolic tangent.

    Example:
        >>> tanh(tf.constant([0.0])).numpy()
        array([0.], dtype=float32)
    """
    return _math.tanh(_float(x))


def softplus(x):
    """`log(1 + exp(x))`.

    Example:
        >>> softplus(tf.constant([0.0])).numpy()
        array([0.6931472], dtype=float32)
    """
    return _math.softplus(_float(x))


def softsign(x):
    """`x / (1 + |x|)`.

    Example:
        >>> softsign(tf.constant([1.0])).numpy()
        array([0.5], dtype=float32)
    """
    return _math.softsign(_float(x))


def softmax(x, axis: int = -1):
    """Softmax over `axis` (its output carries the logits, for cross-entropy losses).

    Example:
        >>> softmax(tf.constant([[0.0, 0.0]])).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """
    return keras_softmax(_float(x), axis=axis)


def log_softmax(x, axis: int = -1):
    """`x - logsumexp(x, axis)`.

    Example:
        >>> log_softmax(tf.constant([[0.0, 0.0]])).numpy()
        array([[-0.6931472, -0.6931472]], dtype=float32)
    """
    return _nn.log_softmax(_float(x), axis=axis)


def sigmoid(x):
    """`1 / (1 + exp(-x))` (its output carries the logits, for cross-entropy losses).

    Example:
        >>> sigmoid(tf.constant([0.0])).numpy()
        array([0.5], dtype=float32)
    """
    return keras_sigmoid(_float(x))


def exponential(x):
    """`exp(x)`.

    Example:
        >>> exponential(tf.constant([0.0])).numpy()
        array([1.], dtype=float32)
    """
    return _math.exp(_float(x))


def linear(x):
    """The identity.

    Example:
        >>> linear(tf.constant([-3.0])).numpy()
        array([-3.], dtype=float32)
    """
    return x


# Keras 3's names; swish and hard_swish are aliases whose serialized names are silu and
# hard_silu
_BY_NAME = {
    "celu": celu, "elu": elu, "exponential": exponential, "gelu": gelu, "glu": glu,
    "hard_shrink": hard_shrink, "hard_sigmoid": hard_sigmoid, "hard_silu": hard_silu,
    "hard_tanh": hard_tanh, "leaky_relu": leaky_relu, "linear": linear,
    "log_sigmoid": log_sigmoid, "log_softmax": log_softmax, "mish": mish, "relu": relu,
    "relu6": relu6, "selu": selu, "sigmoid": sigmoid, "silu": silu,
    "soft_shrink": soft_shrink, "softmax": softmax, "softplus": softplus,
    "softsign": softsign, "sparse_plus": sparse_plus, "sparse_sigmoid": sparse_sigmoid,
    "sparsemax": sparsemax, "squareplus": squareplus, "tanh": tanh,
    "tanh_shrink": tanh_shrink, "threshold": threshold,
}
_ALIASES = {"swish": "silu", "hard_swish": "hard_silu"}


def _name_of(fn) -> str | None:
    """The Keras name of an activation function: one of this module's, or what
    `get_activation` (the layers' lookup) gives for that name."""
    for name, own in _BY_NAME.items():
        if fn is own:
            return name
    for name in _BY_NAME:
        try:
            if get_activation(name) is fn:
                return name
        except ValueError:
            pass
    return None


def get(identifier):
    """The activation for a name (Keras 3's, swish and hard_swish included), a serialized
    config (`{"class_name": "function", "config": "relu", ...}`), a callable (as is) or
    None (`linear`).

    Example:
        >>> tf.keras.activations.get("swish") is tf.keras.activations.silu
        True
    """
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")


def serialize(activation) -> str:
    """The name of an activation function (an alias gives its canonical name: swish ->
    "silu").

    Example:
        >>> tf.keras.activations.serialize(tf.keras.activations.swish)
        'silu'
    """
    name = _name_of(activation)
    if name is None:
        raise ValueError(f"serialize: {activation!r} is not one of Keras's activations; "
                         "register a custom function by name instead")
    return name


def deserialize(config, custom_objects=None):
    """The activation function for a name or a serialized config (`custom_objects` maps
    more names to functions).

    Example:
        >>> tf.keras.activations.deserialize("hard_swish") is tf.keras.activations.hard_silu
        True
    """
    name = config
    if isinstance(config, dict):
        name = config.get("config", config.get("class_name"))
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if not isinstance(name, str):
        raise ValueError(f"Could not interpret activation config {config!r}")
    fn = _BY_NAME.get(_ALIASES.get(name, name))
    if fn is None:
        raise ValueError(f"Unknown activation function: {name!r}; known names: "
                         f"{sorted({*_BY_NAME, *_ALIASES})}")
    return fn



def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
