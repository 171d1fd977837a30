"""Keras 3's activation functions beyond the ops tapeflow has as kernels (relu, tanh, ...):
each is written with public ops, so it differentiates and traces like them. Layers find
them by name through `train.layers.get_activation`; `tf.keras.activations` re-exports them.

Example:
    >>> from tapeflow.train import activations
    >>> activations.hard_sigmoid(tf.constant([-4.0, 0.0, 1.5])).numpy()
    array([0.  , 0.5 , 0.75], dtype=float32)
"""
from __future__ import annotations

from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..ops import array as _array, creation as _creation, indexing as _indexing, \
    math as _math, nn as _nn, reduction as _reduction

__all__ = ["celu", "elu", "gelu", "glu", "hard_shrink", "hard_sigmoid", "hard_silu",
           "hard_swish", "hard_tanh", "leaky_relu", "log_sigmoid", "mish", "soft_shrink",
           "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink",
           "threshold", "ACTIVATIONS"]


def _float(x) -> Tensor:
    x = convert_to_tensor(x)
    return x if x.dtype.is_floating else _math.cast(x, "float32")


def elu(x, alpha: float = 1.0) -> Tensor:
    """`x` for `x > 0`, else `alpha * (exp(x) - 1)`.

    Example:
        >>> elu(tf.constant([-1.0, 2.0]), alpha=0.5).numpy().round(5)
        array([-0.31606,  2.     ], dtype=float32)
    """
    x = _float(x)
    if alpha == 1.0:
        return _nn.elu(x)
    return _indexing.where(x > 0.0, x, alpha * _math.expm1(_math.minimum(x, 0.0)))


def leaky_relu(x, negative_slope: float = 0.2) -> Tensor:
    """`x` for `x > 0`, else `negative_slope * x`.

    Example:
        >>> leaky_relu(tf.constant([-1.0, 2.0])).numpy()
        array([-0.2,  2. ], dtype=float32)
    """
    return _nn.leaky_relu(_float(x), alpha=negative_slope)


def gelu(x, approximate: bool = False) -> Tensor:
    """The Gaussian error linear unit `x * Phi(x)` (the tanh approximation with
    `approximate=True`).

    Example:
        >>> gelu(tf.constant([1.0])).numpy()
        array([0.8413447], dtype=float32)
    """
    return _nn.gelu(_float(x), approximate=approximate)


def celu(x, alpha: float = 1.0) -> Tensor:
    """`max(x, 0) + alpha * expm1(min(x, 0) / alpha)` (continuously differentiable ELU).

    Example:
        >>> celu(tf.constant([-1.0, 2.0])).numpy()
        array([-0.63212055,  2.        ], dtype=float32)
    """
    x = _float(x)
    return _math.maximum(x, 0.0) + alpha * _math.expm1(_math.minimum(x, 0.0) / alpha)


def glu(x, axis: int = -1) -> Tensor:
    """The gated linear unit: `a * sigmoid(b)` for the two halves `a`, `b` of `x` along
    `axis` (whose size must be even).

    Example:
        >>> glu(tf.constant([[1.0, 2.0, 0.0, 0.0]])).numpy()
        array([[0.5, 1. ]], dtype=float32)
    """
    x = _float(x)
    size = x._shape[axis] if x.ndim else None
    if size is None or size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be divisible by 2, got "
                         f"x.shape={list(x._shape)}")
    first, second = _array.split(x, 2, axis=axis)
    return first * _math.sigmoid(second)


def hard_shrink(x, threshold: float = 0.5) -> Tensor:
    """`x` where `|x| > threshold`, else 0.

    Example:
        >>> hard_shrink(tf.constant([-1.0, 0.3, 0.6])).numpy()
        array([-1. ,  0. ,  0.6], dtype=float32)
    """
    x = _float(x)
    return _indexing.where(_math.abs(x) > threshold, x, _creation.zeros_like(x))


def soft_shrink(x, threshold: float = 0.5) -> Tensor:
    """`x - threshold` above `threshold`, `x + threshold` below `-threshold`, else 0.

    Example:
        >>> soft_shrink(tf.constant([-1.0, 0.3, 0.75])).numpy()
        array([-0.5 ,  0.  ,  0.25], dtype=float32)
    """
    x = _float(x)
    zeros = _creation.zeros_like(x)
    return _indexing.where(x > threshold, x - threshold,
                           _indexing.where(x < -threshold, x + threshold, zeros))


def hard_sigmoid(x) -> Tensor:
    """`relu6(x + 3) / 6`: 0 below -3, 1 above 3, linear between.

    Example:
        >>> hard_sigmoid(tf.constant([-4.0, 0.0, 1.5])).numpy()
        array([0.  , 0.5 , 0.75], dtype=float32)
    """
    x = _float(x)
    return _nn.relu6(x + 3.0) / 6.0


def hard_silu(x) -> Tensor:
    """`x * hard_sigmoid(x)` (also `hard_swish`).

    Example:
        >>> hard_silu(tf.constant([-4.0, 1.5])).numpy()
        array([-0.   ,  1.125], dtype=float32)
    """
    x = _float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def hard_tanh(x) -> Tensor:
    """`x` clipped to [-1, 1].

    Example:
        >>> hard_tanh(tf.constant([-2.0, 0.5])).numpy()
        array([-1. ,  0.5], dtype=float32)
    """
    return _math.clip_by_value(_float(x), -1.0, 1.0)


def log_sigmoid(x) -> Tensor:
    """`log(sigmoid(x))`, stable for large `|x|`.

    Example:
        >>> log_sigmoid(tf.constant([0.0])).numpy()
        array([-0.6931472], dtype=float32)
    """
    return _math.log_sigmoid(_float(x))


def mish(x) -> Tensor:
    """`x * tanh(softplus(x))`.

    Example:
        >>> mish(tf.constant([1.0])).numpy().round(5)
        array([0.8651], dtype=float32)
    """
    x = _float(x)
    return x * _math.tanh(_math.softplus(x))


def sparse_plus(x) -> Tensor:
    """0 for `x <= -1`, `(x + 1)² / 4` for `-1 < x < 1`, `x` from 1 on.

    Example:
        >>> sparse_plus(tf.constant([-2.0, 0.0, 2.0])).numpy()
        array([0.  , 0.25, 2.  ], dtype=float32)
    """
    x = _float(x)
    middle = 0.25 * _math.square(x + 1.0)
    return _indexing.where(x <= -1.0, _creation.zeros_like(x),
                           _indexing.where(x < 1.0, middle, x))


def sparse_sigmoid(x) -> Tensor:
    """0 for `x <= -1`, `(x + 1) / 2` for `-1 < x < 1`, 1 from 1 on.

    Example:
        >>> sparse_sigmoid(tf.constant([-2.0, 0.0, 2.0])).numpy()
        array([0. , 0.5, 1. ], dtype=float32)
    """
    x = _float(x)
    return _indexing.where(x <= -1.0, _creation.zeros_like(x),
                           _indexing.where(x >= 1.0, _creation.ones_like(x), 0.5 * (x + 1.0)))


def squareplus(x, b: float = 4) -> Tensor:
    """`(x + sqrt(x² + b)) / 2`, a smooth relu.

    Example:
        >>> squareplus(tf.constant([0.0])).numpy()
        array([1.], dtype=float32)
    """
    x = _float(x)
    return (x + _math.sqrt(_math.square(x) + _math.cast(b, x.dtype))) / 2.0


def tanh_shrink(x) -> Tensor:
    """`x - tanh(x)`.

    Example:
        >>> tanh_shrink(tf.constant([0.0])).numpy()
        array([0.], dtype=float32)
    """
    x = _float(x)
    return x - _math.tanh(x)


def threshold(x, threshold: float, default_value: float) -> Tensor:
    """`x` where `x > threshold`, else `default_value`.

    Example:
        >>> threshold(tf.constant([0.5, 2.0]), 1.0, -1.0).numpy()
        array([-1.,  2.], dtype=float32)
    """
    x = _float(x)
    return _indexing.where(x > threshold, x, _math.cast(default_value, x.dtype))


def sparsemax(x, axis: int = -1) -> Tensor:
    """Keras 3's sparsemax along `axis`: `max(x - tau, 0)`, tau from the sorted entries in
    the support `z_(k) > (cumsum_k - 1) / k`. As Keras 3 (every backend) computes it, tau
    is `(sum over the support of the cumulative sums - 1) / |support|`, which equals the
    paper's `(cumsum_|support| - 1) / |support|` only for a support of one entry; the
    numbers are Keras's, so a model ported from Keras predicts the same.

    Example:
        >>> sparsemax(tf.constant([[2.0, 0.5, 0.0]])).numpy()
        array([[1., 0., 0.]], dtype=float32)
    """
    x = _float(x)
    ndim = x.ndim
    if ndim == 0:
        raise ValueError("sparsemax: x must have at least one axis, got shape []")
    axis = axis % ndim
    ordered = _array.sort(x, axis=axis, direction="DESCENDING")
    cumulative = _reduction.cumsum(ordered, axis=axis)
    count = x._shape[axis]
    if count is None:  # traced with an unknown size along axis
        count = _array.shape(x)[axis]
    ranks = _math.cast(_creation.range(1, count + 1), x.dtype)
    ranks = _array.reshape(ranks, [-1 if i == axis else 1 for i in range(ndim)])
    support = ordered - (cumulative - 1.0) / ranks > 0.0
    size = _reduction.reduce_sum(_math.cast(support, x.dtype), axis=axis, keepdims=True)
    kept = _indexing.where(support, cumulative, _creation.zeros_like(cumulative))
    tau = (_reduction.reduce_sum(kept, axis=axis, keepdims=True) - 1.0) / size
    return _math.maximum(x - tau, 0.0)


# by Keras 3's names; relu, tanh, softmax, ... resolve in train.layers' own table
ACTIVATIONS: dict = {
    "celu": celu, "elu": elu, "gelu": gelu, "glu": glu, "hard_shrink": hard_shrink,
    "hard_sigmoid": hard_sigmoid, "hard_silu": hard_silu, "hard_swish": hard_silu,
    "hard_tanh": hard_tanh, "leaky_relu": leaky_relu, "log_sigmoid": log_sigmoid,
    "mish": mish, "soft_shrink": soft_shrink, "sparse_plus": sparse_plus,
    "sparse_sigmoid": sparse_sigmoid, "sparsemax": sparsemax, "squareplus": squareplus,
    "tanh_shrink": tanh_shrink, "threshold": threshold,
}
