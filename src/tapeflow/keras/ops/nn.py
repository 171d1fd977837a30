"""`keras.ops` neural-network functions (Keras 3's `keras.src.ops.nn`): activations,
`softmax`, `one_hot`, on tensors and KerasTensors.

Example:
    >>> tf.keras.ops.relu(tf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ..._core.shape import dims_of
from ...ops import (array as _array, conv as _conv, creation as _creation,
                    indexing as _indexing, linalg as _linalg, math as _math, nn as _nn,
                    reduction as _reduction)
from .operation import floatx_of, keras_op, promoted, tensor

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


# =========================================================================== the rest
def _const(value, like):
    return tensor(value, like.dtype)


def _define(name: str, compute, doc: str, config: tuple = ()):
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = doc
    op = keras_op("nn", config=config)(compute)
    globals()[name] = op
    __all__.append(name)
    return op


def _sparse_plus(x):
    zero, one = _creation.zeros_like(x), _creation.ones_like(x)
    return _indexing.where(_math.less_equal(x, -one), zero, _indexing.where(
        _math.greater_equal(x, one), x, _math.square(x + one) * 0.25))


def _sparse_sigmoid(x):
    one = _creation.ones_like(x)
    return _math.clip_by_value((x + one) * 0.5, _creation.zeros_like(x), one)


def _hard_sigmoid(x):
    return _nn.relu6(x + _const(3.0, x)) / _const(6.0, x)


_ACTIVATIONS = {
    "selu": (_nn.selu, "The scaled exponential linear unit."),
    "softplus": (_math.softplus, "`log(1 + exp(x))`."),
    "softsign": (_math.softsign, "`x / (1 + |x|)`."),
    "log_sigmoid": (_math.log_sigmoid, "`log(sigmoid(x))`, computed stably."),
    "hard_sigmoid": (_hard_sigmoid, "`relu6(x + 3) / 6`."),
    "hard_silu": (lambda x: x * _hard_sigmoid(x), "`x * hard_sigmoid(x)`."),
    "hard_tanh": (lambda x: _math.clip_by_value(x, _const(-1.0, x), _const(1.0, x)),
                  "`x` clipped to [-1, 1]."),
    "tanh_shrink": (lambda x: x - _math.tanh(x), "`x - tanh(x)`."),
    "sparse_plus": (_sparse_plus, "0 below -1, `(x + 1)**2 / 4` on [-1, 1], `x` above."),
    "sparse_sigmoid": (_sparse_sigmoid, "0 below -1, `(x + 1) / 2` on [-1, 1], 1 above."),
}


def _activation(tf_op):
    def compute(x):
        return tf_op(_floats(x))
    return compute


for _name, (_fn, _doc) in _ACTIVATIONS.items():
    _define(_name, _activation(_fn), _doc + "\n\n    Example:\n        >>> "
            f"tf.keras.ops.{_name}(tf.constant([0.5])).shape\n        TensorShape([1])\n")
@keras_op("nn")
def relu6(x):
    """`min(max(x, 0), 6)` (ints keep their dtype, as Keras).

    Example:
        >>> tf.keras.ops.relu6(tf.constant([-1, 3, 9])).numpy()
        array([0, 3, 6], dtype=int32)
    """
    x = tensor(x)
    if x.dtype.is_bool:
        x = _math.cast(x, _dt.float32)
    return _math.clip_by_value(x, tensor(0, x.dtype), tensor(6, x.dtype))


hard_swish = globals()["hard_silu"]
__all__.append("hard_swish")


@keras_op("nn", config=("alpha",))
def elu(x, alpha=1.0):
    """`x` above 0, `alpha * (exp(x) - 1)` below."""
    x = _floats(x)
    return _indexing.where(_math.greater(x, 0), x, _math.expm1(x) * _const(alpha, x))


@keras_op("nn", config=("alpha",))
def celu(x, alpha=1.0):
    """`max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)`."""
    x = _floats(x)
    a = _const(alpha, x)
    return _nn.relu(x) + _math.minimum(a * _math.expm1(x / a), _creation.zeros_like(x))


@keras_op("nn", config=("negative_slope",))
def leaky_relu(x, negative_slope=0.2):
    """`x` above 0, `negative_slope * x` below."""
    return _nn.leaky_relu(_floats(x), alpha=negative_slope)


@keras_op("nn", config=("axis",))
def glu(x, axis=-1):
    """The gated linear unit: `a * sigmoid(b)` for the halves `a`, `b` of `x` along
    `axis`."""
    x = _floats(x)
    if x.shape[axis] is not None and x.shape[axis] % 2:
        raise ValueError(f"keras.ops.glu: axis {axis} of x must have an even size, got "
                         f"shape {x.shape}")
    a, b = _array.split(x, 2, axis=axis)
    return a * _math.sigmoid(b)


@keras_op("nn", config=("threshold",))
def hard_shrink(x, threshold=0.5):
    """`x` where `|x| > threshold`, else 0."""
    x = _floats(x)
    return _indexing.where(_math.greater(_math.abs(x), threshold), x, _creation.zeros_like(x))


@keras_op("nn", config=("threshold",))
def soft_shrink(x, threshold=0.5):
    """`x` moved `threshold` toward 0, and 0 where `|x| <= threshold`."""
    x = _floats(x)
    t = _const(threshold, x)
    return _indexing.where(_math.greater(x, t), x - t, _indexing.where(
        _math.less(x, -t), x + t, _creation.zeros_like(x)))


@keras_op("nn", config=("b",))
def squareplus(x, b=4):
    """`(x + sqrt(x**2 + b)) / 2`, a smooth ReLU."""
    x = _floats(x)
    return (x + _math.sqrt(_math.square(x) + _const(b, x))) * 0.5


@keras_op("nn", config=("threshold", "default_value"))
def threshold(x, threshold, default_value):
    """`x` where `x > threshold`, else `default_value`."""
    x = tensor(x)
    return _indexing.where(_math.greater(x, _const(threshold, x)), x,
                           _const(default_value, x) + _creation.zeros_like(x))


@keras_op("nn", config=("axis",))
def sparsemax(x, axis=-1):
    """The Euclidean projection of `x` onto the probability simplex along `axis`:
    like softmax, but with exact zeros."""
    x = _floats(x)
    moved = _array.transpose(x, _last(x.ndim, axis)) if axis % x.ndim != x.ndim - 1 else x
    z = _array.sort(moved, axis=-1, direction="DESCENDING")
    n = z.shape[-1]
    ks = _creation.range(1, n + 1, dtype=x.dtype)
    cum = _reduction.cumsum(z, axis=-1)
    support = _math.greater(1.0 + ks * z, cum)
    k = _reduction.reduce_sum(_math.cast(support, x.dtype), -1, keepdims=True)
    total = _reduction.reduce_sum(_indexing.where(support, z, _creation.zeros_like(z)), -1,
                                  keepdims=True)
    tau = (total - 1.0) / k
    out = _nn.relu(moved - tau)
    return _array.transpose(out, _last(x.ndim, axis)) if axis % x.ndim != x.ndim - 1 else out


def _last(ndim, axis):
    """The permutation that swaps `axis` and the last axis (its own inverse)."""
    perm = list(range(ndim))
    perm[axis % ndim], perm[-1] = perm[-1], perm[axis % ndim]
    return perm


@keras_op("nn")
def polar(abs_, angle):
    """The complex numbers of modulus `abs_` and argument `angle`."""
    r, theta = promoted(abs_, angle)
    r = _floats(r)
    theta = _math.cast(theta, r.dtype)
    return _math.complex(r * _math.cos(theta), r * _math.sin(theta))


# --------------------------------------------------------------------------- normalization
@keras_op("nn", config=("axis", "epsilon"), name="BatchNorm")
def _batch_norm_op(x, mean, variance, offset=None, scale=None, *, axis, epsilon=1e-3):
    return _batch_norm(x, mean, variance, axis, offset, scale, epsilon)


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """`(x - mean) / sqrt(variance + epsilon) * scale + offset`, the statistics (1-D)
    along `axis` of `x`.

    Example:
        >>> tf.keras.ops.batch_normalization(
        ...     tf.constant([[2.0]]), [1.0], [4.0], axis=-1, epsilon=0.0).numpy()
        array([[0.5]], dtype=float32)
    """
    # the Operation's call takes every tensor (None too, to keep their places)
    return _batch_norm_op(x, mean, variance, offset, scale, axis=axis, epsilon=epsilon)


def _batch_norm(x, mean, variance, axis, offset, scale, epsilon):
    x = _floats(x)
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1

    def aligned(v):
        return None if v is None else _array.reshape(tensor(v, x.dtype), shape)
    inv = _math.rsqrt(aligned(variance) + _const(epsilon, x))
    if scale is not None:
        inv = inv * aligned(scale)
    out = (x - aligned(mean)) * inv
    return out if offset is None else out + aligned(offset)


@keras_op("nn", config=("axes", "keepdims", "synchronized"))
def moments(x, axes, keepdims=False, synchronized=False):
    """The mean and variance of `x` over `axes` (float16 computed in float32).

    Example:
        >>> [float(t) for t in tf.keras.ops.moments(tf.constant([1.0, 3.0]), axes=[0])]
        [2.0, 1.0]
    """
    x = _floats(x)
    work = _dt.float32 if x.dtype.size < 4 else x.dtype
    xw = _math.cast(x, work)
    axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    m = _reduction.reduce_mean(xw, axes, keepdims=True)
    v = _reduction.reduce_mean(_math.square(xw - _array.stop_gradient(m)), axes,
                               keepdims=keepdims)
    if not keepdims:
        m = _array.squeeze(m, axes)
    return _math.cast(m, x.dtype), _math.cast(v, x.dtype)


@keras_op("nn", config=("axis", "order", "epsilon"))
def normalize(x, axis=-1, order=2, epsilon=None):
    """`x / max(norm(x), epsilon)` along `axis` (`order` is the norm's)."""
    x = _floats(x)
    eps = 1e-7 if epsilon is None else epsilon
    if order == 2:
        squares = _reduction.reduce_sum(_math.square(x), axis, keepdims=True)
        return x * _math.minimum(_math.rsqrt(squares), _const(1.0 / eps, x))
    norm = _reduction.reduce_sum(_math.abs(x) ** float(order), axis,
                                 keepdims=True) ** (1.0 / order)
    return x / _math.maximum(norm, _const(eps, x))


def _axes_of(axis, ndim):
    return [a % ndim for a in (axis if isinstance(axis, (list, tuple)) else [axis])]


@keras_op("nn", config=("axis", "epsilon", "rms_scaling"), name="LayerNorm")
def _layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=None, rms_scaling=False):
    x = _floats(x)
    original = x.dtype
    x = _math.cast(x, _dt.float32) if x.dtype.size < 4 else x
    eps = 1e-7 if epsilon is None else epsilon
    axes = _axes_of(axis, x.ndim)
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]

    def aligned(v):
        return _array.reshape(tensor(v, x.dtype), shape)
    if rms_scaling:  # Keras's deprecated form: scales by the variance
        variance = _reduction.reduce_variance(x, axes, keepdims=True)
        out = x * _math.rsqrt(variance + eps)
        if gamma is not None:
            out = out * aligned(gamma)
    else:
        mean_, variance = _nn.moments(x, axes, keepdims=True)
        inv = _math.rsqrt(variance + eps)
        if gamma is not None:
            inv = inv * aligned(gamma)
        out = (x - mean_) * inv
        if beta is not None:
            out = out + aligned(beta)
    return _math.cast(out, original)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """Normalizes `x` to zero mean and unit variance over `axis`, then scales by `gamma`
    and shifts by `beta` (Operation `LayerNorm`).

    Example:
        >>> tf.keras.ops.layer_normalization(tf.constant([1.0, 3.0]), epsilon=0.0).numpy()
        array([-1.,  1.], dtype=float32)
    """
    rms_scaling = kwargs.pop("rms_scaling", False)
    if kwargs:
        raise TypeError(f"keras.ops.layer_normalization: unexpected arguments "
                        f"{sorted(kwargs)}")
    # every tensor argument passed (None too) keeps the Operation's call positional order
    return _layer_norm(x, gamma, beta, axis=axis, epsilon=epsilon, rms_scaling=rms_scaling)


@keras_op("nn", config=("axis", "epsilon"), name="RMSNorm")
def _rms_norm(x, scale=None, axis=-1, epsilon=None):
    x = _floats(x)
    eps = 1e-7 if epsilon is None else epsilon
    axes = _axes_of(axis, x.ndim)
    out = x * _math.rsqrt(_reduction.reduce_mean(_math.square(x), axes, keepdims=True)
                          + _const(eps, x))
    if scale is not None:
        shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
        out = out * _array.reshape(tensor(scale, x.dtype), shape)
    return out


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """`x / sqrt(mean(x**2) + epsilon) * scale` over `axis` (Operation `RMSNorm`).

    Example:
        >>> tf.keras.ops.rms_normalization(tf.constant([3.0, 4.0]), epsilon=0.0).shape
        TensorShape([2])
    """
    return _rms_norm(x, scale, axis=axis, epsilon=epsilon)


__all__ += ["layer_normalization", "rms_normalization"]


# --------------------------------------------------------------------------- losses
_EPS = 1e-7


@keras_op("nn", config=("from_logits",))
def binary_crossentropy(target, output, from_logits=False):
    """The elementwise binary cross-entropy of probabilities (or logits) `output`
    against `target` (probabilities clipped to [1e-7, 1 - 1e-7], as Keras).

    Example:
        >>> round(float(tf.keras.ops.binary_crossentropy(1.0, 0.5)), 4)
        0.6931
    """
    t, o = promoted(target, output)
    t, o = _floats(t), _floats(o)
    if from_logits:
        return _nn.sigmoid_cross_entropy_with_logits(labels=t, logits=o)
    o = _math.clip_by_value(o, _const(_EPS, o), _const(1.0 - _EPS, o))
    return -(t * _math.log(o) + (1.0 - t) * _math.log(1.0 - o))


def _check_same_shape(name, t, o):
    if len(t.shape) != len(o.shape) or any(
            a is not None and b is not None and a != b for a, b in zip(t.shape, o.shape)):
        raise ValueError(f"keras.ops.{name}: target and output must have the same shape, "
                         f"got {t.shape} and {o.shape}")


@keras_op("nn", config=("from_logits", "axis"))
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """The cross-entropy of distributions `output` (rescaled to sum to 1; or logits)
    against one-hot/probability `target` along `axis`."""
    t, o = promoted(target, output)
    t, o = _floats(t), _floats(o)
    _check_same_shape("categorical_crossentropy", t, o)
    if from_logits:
        return -_reduction.reduce_sum(t * _nn.log_softmax(o, axis=axis), axis)
    o = o / _reduction.reduce_sum(o, axis, keepdims=True)
    o = _math.clip_by_value(o, _const(_EPS, o), _const(1.0 - _EPS, o))
    return -_reduction.reduce_sum(t * _math.log(o), axis)


@keras_op("nn", config=("from_logits", "axis"))
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """`categorical_crossentropy` with integer class `target`s."""
    o = _floats(output)
    t = tensor(target)
    if t.ndim == o.ndim and t.shape[-1] == 1:
        t = _array.squeeze(t, [-1])
    hot = _creation.one_hot(_math.cast(t, _dt.int32), o.shape[axis], axis=axis, dtype=o.dtype)
    return categorical_crossentropy(hot, o, from_logits=from_logits, axis=axis)


@keras_op("nn", config=("num_classes", "axis", "dtype", "sparse"))
def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """Multi-hot vectors of the class indices in `inputs`' last axis (one row per
    batch entry when 2-D).

    Example:
        >>> tf.keras.ops.multi_hot(tf.constant([[0, 2], [1, 1]]), 3).numpy()
        array([[1., 0., 1.],
               [0., 1., 0.]], dtype=float32)
    """
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
    if num_classes is None:
        raise ValueError("keras.ops.multi_hot: num_classes is required")
    if sparse:
        raise NotImplementedError("keras.ops.multi_hot: sparse=True is not supported")
    x = tensor(inputs)
    hot = _creation.one_hot(x, num_classes, axis=axis,
                            dtype=_dt.as_dtype(dtype) if dtype else _dt.float32)
    return _reduction.reduce_max(hot, 1 if x.ndim > 1 else 0)


@keras_op("nn", config=("max_val",), name="PSNR")
def psnr(x1, x2, max_val):
    """The peak signal-to-noise ratio of `x2` against `x1` in dB: `20 log10(max_val) -
    10 log10(mse)`."""
    a, b = promoted(x1, x2)
    a, b = _floats(a), _floats(b)
    if a.shape != b.shape:
        raise ValueError(f"keras.ops.psnr: x1 and x2 must have the same shape, got "
                         f"{a.shape} and {b.shape}")
    mse = _reduction.reduce_mean(_math.square(a - b))
    ln10 = float(np.log(10.0))
    return 20.0 * _math.log(_const(max_val, mse)) / ln10 - 10.0 * _math.log(mse) / ln10


@keras_op("nn", config=("mask_index",), name="CTCLoss")
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """The CTC loss of label sequences `target` (batch, max_label_length) of lengths
    `target_length` against logits `output` (batch, time, classes) of lengths
    `output_length`, with `mask_index` the blank class (forward algorithm in log space).
    """
    logits = _floats(output)
    labels = _math.cast(tensor(target), _dt.int32)
    target_length = _math.cast(tensor(target_length), _dt.int32)
    output_length = _math.cast(tensor(output_length), _dt.int32)
    steps, max_len = logits.shape[1], labels.shape[1]
    log_probs = _nn.log_softmax(logits, axis=-1)
    batch = _array.shape(labels)[0]
    blank = _creation.zeros_like(labels) + mask_index
    ext = _array.reshape(_array.stack([blank, labels], axis=2), [batch, 2 * max_len])
    ext = _array.concat([ext, blank[:, :1]], axis=1)
    size_ext = 2 * max_len + 1
    previous = _array.concat([blank[:, :1], blank[:, :1], ext[:, :-2]], axis=1)
    odd = tensor(np.arange(size_ext) % 2 == 1)
    can_skip = _math.logical_and(odd, _math.not_equal(ext, previous))
    emit = _indexing.gather(log_probs, ext, axis=2, batch_dims=1)   # (batch, time, ext)
    neg = emit[:, 0, :] * 0.0 - 1e30
    alpha = _indexing.where(tensor(np.arange(size_ext) < 2), emit[:, 0, :], neg)
    for t in range(1, steps):
        step = _array.concat([neg[:, :1], alpha[:, :-1]], axis=1)
        skip = _indexing.where(can_skip, _array.concat([neg[:, :2], alpha[:, :-2]], axis=1),
                               neg)
        stacked = _array.stack([alpha, step, skip], axis=0)
        new = _reduction.reduce_logsumexp(stacked, 0) + emit[:, t, :]
        # sequences already over keep their alphas
        alive = _array.expand_dims(_math.less(t, output_length), 1)
        alpha = _indexing.where(alive, new, alpha)
    end = _array.expand_dims(2 * target_length, 1)
    last = _indexing.gather(alpha, end, axis=1, batch_dims=1)[:, 0]
    before = _indexing.gather(alpha, _math.maximum(end - 1, 0), axis=1, batch_dims=1)[:, 0]
    before = _indexing.where(_math.greater(target_length, 0), before, last * 0.0 - 1e30)
    return -_reduction.reduce_logsumexp(_array.stack([last, before], 0), 0)


# --------------------------------------------------------------------------- convolution
_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _format(data_format, spatial):
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"keras.ops: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    return _FORMATS[spatial][data_format == "channels_first"]


def _tuple(value, n, what):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"keras.ops: {what} must be an int or {n} ints, got {value}")
    return value


def _padding(padding):
    if padding.lower() not in ("valid", "same"):
        raise ValueError(f"keras.ops: padding must be 'valid' or 'same', got {padding!r}")
    return padding.upper()


def _conv_operands(inputs, kernel):
    x, w = promoted(inputs, kernel)
    return _floats(x), _math.cast(_floats(w), _floats(x).dtype)


@keras_op("nn", config=("strides", "padding", "data_format", "dilation_rate"))
def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """N-D convolution (cross-correlation) of `inputs` (batch, *spatial, channels) with
    `kernel` (*window, in_channels, out_channels); grouped when the inputs have a
    multiple of in_channels.

    Example:
        >>> tf.keras.ops.conv(tf.ones([1, 5, 2]), tf.ones([3, 2, 4])).shape
        TensorShape([1, 3, 4])
    """
    x, w = _conv_operands(inputs, kernel)
    n = w.ndim - 2
    return _conv.convolution(x, w, strides=list(_tuple(strides, n, "strides")),
                             padding=_padding(padding), data_format=_format(data_format, n),
                             dilations=list(_tuple(dilation_rate, n, "dilation_rate")))


def _as_2d(x, w, n, data_format, strides, dilation_rate):
    """1-D operands as 2-D ones of height 1 (depthwise convolution is 2-D only)."""
    first = data_format == "channels_first"
    if n == 1:
        x = _array.expand_dims(x, 2 if first else 1)
        w = _array.expand_dims(w, 0)
        strides, dilation_rate = (1,) + strides, (1,) + dilation_rate
    return x, w, strides, dilation_rate


@keras_op("nn", config=("strides", "padding", "data_format", "dilation_rate"))
def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """1-D or 2-D depthwise convolution: each input channel with its own
    `channel_multiplier` filters (`kernel` (*window, in_channels, multiplier))."""
    x, w = _conv_operands(inputs, kernel)
    n = w.ndim - 2
    if n not in (1, 2):
        raise ValueError(f"keras.ops.depthwise_conv: 1-D or 2-D only, got a kernel of "
                         f"shape {w.shape}")
    s, d = _tuple(strides, n, "strides"), _tuple(dilation_rate, n, "dilation_rate")
    x2, w2, s, d = _as_2d(x, w, n, data_format, s, d)
    first = data_format == "channels_first"
    y = _conv.depthwise_conv2d(x2, w2, [1, 1] + list(s) if first else [1] + list(s) + [1],
                               _padding(padding), data_format="NCHW" if first else "NHWC",
                               dilations=list(d))
    return _array.squeeze(y, [2 if first else 1]) if n == 1 else y


@keras_op("nn", config=("strides", "padding", "data_format", "dilation_rate"))
def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid",
                   data_format=None, dilation_rate=1):
    """A depthwise convolution followed by a 1x1 (pointwise) convolution."""
    h = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format,
                       dilation_rate)
    return conv(h, pointwise_kernel, 1, "valid", data_format, 1)


def _deconv_length(length, stride, kernel, dilation, padding, output_padding):
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(kernel - stride, 0)
        return length * stride
    pad = kernel // 2 if padding == "same" else 0
    return (length - 1) * stride + kernel - 2 * pad + output_padding


@keras_op("nn", config=("strides", "padding", "output_padding", "data_format",
                        "dilation_rate"))
def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None,
                   data_format=None, dilation_rate=1):
    """The transposed convolution (the gradient of `conv`) with `kernel` (*window,
    out_channels, in_channels); output lengths as Keras's `Conv*Transpose` layers.

    Example:
        >>> tf.keras.ops.conv_transpose(tf.ones([1, 3, 2]), tf.ones([2, 4, 2]), 2).shape
        TensorShape([1, 6, 4])
    """
    x, w = _conv_operands(inputs, kernel)
    n = w.ndim - 2
    s, d = _tuple(strides, n, "strides"), _tuple(dilation_rate, n, "dilation_rate")
    pads = [None] * n if output_padding is None else _tuple(output_padding, n,
                                                            "output_padding")
    first = data_format == "channels_first"
    spatial = x.shape[2:] if first else x.shape[1:-1]
    lengths = [_deconv_length(spatial[i], s[i], w.shape[i], d[i], padding.lower(), pads[i])
               for i in range(n)]
    batch = dims_of(x)[0]  # an int where known, else a scalar tensor
    out_shape = [batch, w.shape[-2]] + lengths if first else [batch] + lengths + \
        [w.shape[-2]]
    fmt = _format(data_format, n)
    fn = {1: _conv.conv1d_transpose, 2: _conv.conv2d_transpose, 3: _conv.conv3d_transpose}[n]
    full_strides = [1, 1] + list(s) if first else [1] + list(s) + [1]
    y = fn(x, w, out_shape, full_strides,
           padding=_padding(padding), data_format=fmt, dilations=list(d))
    return y


# --------------------------------------------------------------------------- pooling
def _pool(kind, inputs, pool_size, strides, padding, data_format):
    x = _floats(inputs)
    n = x.ndim - 2
    if n not in (1, 2):
        raise NotImplementedError(f"keras.ops.{kind}: only 1-D and 2-D pooling are "
                                  f"supported, got inputs of shape {x.shape}")
    size = _tuple(pool_size, n, "pool_size")
    step = size if strides is None else _tuple(strides, n, "strides")
    fn = _nn.max_pool if kind == "max_pool" else _nn.avg_pool
    return fn(x, list(size), list(step), _padding(padding), _format(data_format, n))


@keras_op("nn", config=("pool_size", "strides", "padding", "data_format"))
def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """The maximum over windows of `pool_size` (1-D or 2-D; strides default to the pool
    size).

    Example:
        >>> tf.keras.ops.max_pool(tf.ones([1, 4, 1]), 2).shape
        TensorShape([1, 2, 1])
    """
    return _pool("max_pool", inputs, pool_size, strides, padding, data_format)


@keras_op("nn", config=("pool_size", "strides", "padding", "data_format"))
def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """The mean over windows of `pool_size` (1-D or 2-D; 'same' windows average the
    entries inside the input)."""
    return _pool("average_pool", inputs, pool_size, strides, padding, data_format)


def _adaptive(kind, inputs, output_size, data_format):
    x = _floats(inputs)
    n = x.ndim - 2
    first = data_format == "channels_first"
    sizes = _tuple(output_size, n, "output_size")
    reduce = _reduction.reduce_max if kind == "max" else _reduction.reduce_mean
    for i in range(n):
        axis = (2 if first else 1) + i
        length = x.shape[axis]
        parts = []
        for j in range(sizes[i]):  # PyTorch's bins: [floor(j L / n), ceil((j+1) L / n))
            start = (j * length) // sizes[i]
            end = -((-(j + 1) * length) // sizes[i])
            window = _indexing.gather(x, _creation.range(start, end), axis=axis)
            parts.append(reduce(window, axis, keepdims=True))
        x = _array.concat(parts, axis=axis)
    return x


@keras_op("nn", config=("output_size", "data_format"))
def adaptive_average_pool(inputs, output_size, data_format=None):
    """Mean pooling to a fixed `output_size`, with PyTorch's bins."""
    return _adaptive("average", inputs, output_size, data_format)


@keras_op("nn", config=("output_size", "data_format"))
def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to a fixed `output_size`, with PyTorch's bins."""
    return _adaptive("max", inputs, output_size, data_format)


# --------------------------------------------------------------------------- rearranging
@keras_op("nn", config=("block_size", "data_format"))
def depth_to_space(x, block_size, data_format="channels_last"):
    """Moves blocks of channels into `block_size` x `block_size` spatial blocks."""
    x = tensor(x)
    first = data_format == "channels_first"
    if first:
        x = _array.transpose(x, [0, 2, 3, 1])
    b = block_size
    dyn = _array.shape(x)
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    y = _array.reshape(x, [dyn[0], h, w, b, b, c // (b * b)])
    y = _array.transpose(y, [0, 1, 3, 2, 4, 5])
    y = _array.reshape(y, [dyn[0], h * b, w * b, c // (b * b)])
    return _array.transpose(y, [0, 3, 1, 2]) if first else y


@keras_op("nn", config=("block_size", "data_format"))
def space_to_depth(x, block_size, data_format="channels_last"):
    """Moves `block_size` x `block_size` spatial blocks into channels."""
    x = tensor(x)
    first = data_format == "channels_first"
    if first:
        x = _array.transpose(x, [0, 2, 3, 1])
    b = block_size
    dyn = _array.shape(x)
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    y = _array.reshape(x, [dyn[0], h // b, b, w // b, b, c])
    y = _array.transpose(y, [0, 1, 3, 2, 4, 5])
    y = _array.reshape(y, [dyn[0], h // b, w // b, c * b * b])
    return _array.transpose(y, [0, 3, 1, 2]) if first else y


def _patch_index(size, kernel, dilation, padding, stride):
    """For PyTorch's unfold/fold over a padded (H, W) plane: the flat position of entry
    k of the kernel at output place l, as a (K, L) array, and the output grid."""
    (h, w), (kh, kw) = size, kernel
    (dh, dw), (ph, pw), (sh, sw) = dilation, padding, stride
    hp, wp = h + 2 * ph, w + 2 * pw
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    ki, kj = np.meshgrid(np.arange(kh) * dh, np.arange(kw) * dw, indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh) * sh, np.arange(ow) * sw, indexing="ij")
    rows = ki.reshape(-1, 1) + oi.reshape(1, -1)
    cols = kj.reshape(-1, 1) + oj.reshape(1, -1)
    return (rows * wp + cols).astype(np.int32), (hp, wp)


@keras_op("nn", config=("kernel_size", "dilation", "padding", "stride"))
def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's unfold (im2col) of `x` (N, C, H, W): the sliding blocks as columns,
    (N, C * kh * kw, L)."""
    x = tensor(x)
    n, c, h, w = x.shape
    kernel, dil = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    pad, step = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    index, (hp, wp) = _patch_index((h, w), kernel, dil, pad, step)
    padded = _array.pad(x, [[0, 0], [0, 0], [pad[0], pad[0]], [pad[1], pad[1]]])
    flat = _array.reshape(padded, [_array.shape(x)[0], c, hp * wp])
    cols = _indexing.gather(flat, tensor(index), axis=2)       # (N, C, K, L)
    return _array.reshape(cols, [_array.shape(x)[0], c * index.shape[0], index.shape[1]])


@keras_op("nn", config=("output_size", "kernel_size", "dilation", "padding", "stride"))
def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's fold (col2im), the adjoint of `unfold`: columns (N, C * kh * kw, L)
    summed back into an (N, C, *output_size) image."""
    x = tensor(x)
    size = _tuple(output_size, 2, "output_size")
    kernel, dil = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    pad, step = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    index, (hp, wp) = _patch_index(size, kernel, dil, pad, step)
    k, length = index.shape
    batch = _array.shape(x)[0]
    c = x.shape[1] // k
    cols = _array.reshape(x, [batch, c, k * length])
    by_place = _array.transpose(cols, [2, 0, 1])                # (K*L, N, C)
    summed = _indexing.unsorted_segment_sum(by_place, tensor(index.reshape(-1)), hp * wp)
    image = _array.reshape(_array.transpose(summed, [1, 2, 0]), [batch, c, hp, wp])
    return image[:, :, pad[0]:pad[0] + size[0], pad[1]:pad[1] + size[1]]


# --------------------------------------------------------------------------- attention
@keras_op("nn", config=("is_causal", "flash_attention", "attn_logits_soft_cap"),
          name="DotProductAttention")
def _attention_op(query, key, value, bias=None, mask=None, scale=None, *, is_causal=False,
                  flash_attention=None, attn_logits_soft_cap=None):
    return _attention(query, key, value, bias, mask, scale, is_causal, flash_attention,
                      attn_logits_soft_cap)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None,
                          is_causal=False, flash_attention=None, attn_logits_soft_cap=None):
    """Scaled dot-product attention over (batch, time, heads, dim) tensors:
    `softmax(q k^T * scale + bias, masked) v`, `scale` 1/sqrt(dim) by default.

    Example:
        >>> q = tf.ones([1, 2, 1, 4])
        >>> tf.keras.ops.dot_product_attention(q, q, q).shape
        TensorShape([1, 2, 1, 4])
    """
    # the Operation's call takes every tensor (None too, to keep their places)
    return _attention_op(query, key, value, bias, mask, scale, is_causal=is_causal,
                         flash_attention=flash_attention,
                         attn_logits_soft_cap=attn_logits_soft_cap)


def _attention(query, key, value, bias, mask, scale, is_causal, flash_attention,
               attn_logits_soft_cap):
    if flash_attention:
        raise NotImplementedError("keras.ops.dot_product_attention: flash_attention is "
                                  "not supported")
    q, k, v = promoted(query, key, value)
    q, k, v = _floats(q), _floats(k), _floats(v)
    if not q.ndim == k.ndim == v.ndim == 4:
        raise ValueError(f"keras.ops.dot_product_attention: query, key and value must be "
                         f"4-D (batch, time, heads, dim), got shapes {q.shape}, {k.shape}, "
                         f"{v.shape}")
    scale = 1.0 / float(np.sqrt(q.shape[-1])) if scale is None else scale
    logits = _linalg.einsum("btnh,bsnh->bnts", q, k) * _const(scale, q)
    if attn_logits_soft_cap is not None:
        cap = _const(attn_logits_soft_cap, logits)
        logits = _math.tanh(logits / cap) * cap
    if bias is not None:
        logits = logits + tensor(bias, logits.dtype)
    keep = None
    if mask is not None:
        keep = tensor(mask, _dt.bool)
    if is_causal:
        t, s = logits.shape[-2], logits.shape[-1]
        causal = tensor(np.tril(np.ones((t, s), bool)))
        keep = causal if keep is None else _math.logical_and(keep, causal)
    if keep is not None:
        logits = _indexing.where(keep, logits,
                                 _const(float(np.finfo(np.float32).min) / 2, logits))
    weights = _nn.softmax(logits, axis=-1)
    out = _linalg.einsum("bnts,bsnh->btnh", weights, v)
    return out


# every public function above not listed yet
__all__ += sorted(
    n for n, v in list(globals().items())
    if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__
    and n not in __all__)


@keras_op("nn", config=("strategy", "beam_width", "top_paths", "merge_repeated",
                        "mask_index"), name="CTCDecode")
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1,
               merge_repeated=True, mask_index=0):
    """Greedy CTC decoding of `inputs` (batch, time, classes): the best class per step
    within `sequence_lengths`, repeats merged, the `mask_index` blanks dropped; returns
    the labels (1, batch, time) padded with -1 and the scores (batch, 1), the negated
    sums of the best values. (Beam search is not supported.)

    Example:
        >>> logits = tf.constant([[[0.0, 5.0], [0.0, 5.0], [5.0, 0.0]]])
        >>> tf.keras.ops.ctc_decode(logits, [3])[0].numpy()
        array([[[ 1, -1, -1]]], dtype=int32)
    """
    if strategy != "greedy":
        raise NotImplementedError(f"keras.ops.ctc_decode: only strategy='greedy' is "
                                  f"supported, got {strategy!r}")
    x = _floats(inputs)
    steps = x.shape[1]
    lengths = _math.cast(tensor(sequence_lengths), _dt.int32)
    best = _math.cast(_reduction.argmax(x, axis=-1), _dt.int32)            # (batch, time)
    inside = _math.less(_creation.range(steps), _array.expand_dims(lengths, 1))
    keep = _math.logical_and(inside, _math.not_equal(best, mask_index))
    if merge_repeated:
        previous = _array.concat([_creation.zeros_like(best[:, :1]) - 1, best[:, :-1]], 1)
        keep = _math.logical_and(keep, _math.not_equal(best, previous))
    # the kept labels moved left, in order: place t goes to (number kept before t)
    place = _reduction.cumsum(_math.cast(keep, _dt.int32), axis=1) - 1
    hot = _creation.one_hot(_indexing.where(keep, place, place * 0 - 1), steps,
                            dtype=_dt.int32)                               # (b, t, slot)
    labels = _reduction.reduce_sum(hot * _array.expand_dims(best, -1), 1)
    filled = _reduction.reduce_sum(hot, 1)
    decoded = _indexing.where(_math.greater(filled, 0), labels, filled * 0 - 1)
    top = _reduction.reduce_max(x, -1)
    scores = -_reduction.reduce_sum(_indexing.where(inside, top, _creation.zeros_like(top)),
                                    1, keepdims=True)
    return _array.expand_dims(decoded, 0), scores


__all__.append("ctc_decode")
