"""`keras.ops` math functions (Keras 3's `keras.src.ops.math`): `logsumexp`, ...

Example:
    >>> round(float(tf.keras.ops.logsumexp(tf.constant([0.0, 0.0]))), 4)
    0.6931
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ...ops import (array as _array, creation as _creation, indexing as _indexing,
                    linalg as _linalg, math as _math, reduction as _reduction)
from .operation import floatx_of, keras_op, promoted, tensor

__all__ = ["logsumexp", "segment_sum", "segment_max", "segment_min", "segment_prod",
           "top_k", "in_top_k", "extract_sequences", "rsqrt", "erf", "erfc", "erfinv",
           "logdet", "cdist", "fft", "fft2", "ifft2", "rfft", "irfft", "stft", "istft",
           "view_as_complex", "view_as_real"]


@keras_op("math", config=("axis", "keepdims"))
def logsumexp(x, axis=None, keepdims=False):
    """`log(sum(exp(x)))` over `axis`, computed stably."""
    x = tensor(x)
    x = x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))
    return _reduction.reduce_logsumexp(
        x, list(axis) if isinstance(axis, (list, tuple)) else axis, keepdims)


def _floats(x):
    x = tensor(x)
    return x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))


# --------------------------------------------------------------------------- segments
def _segments(name, data, segment_ids, num_segments):
    data = tensor(data)
    ids = _math.cast(tensor(segment_ids), _dt.int32)
    if num_segments is None:
        num_segments = int(_reduction.reduce_max(ids)) + 1 if ids.shape[0] else 0
    return data, ids, num_segments


def _segment_reduce(data, ids, num_segments, reduce, empty):
    # rows of segment s are those whose id is s: a (segments, rows) mask over the data
    mask = _math.equal(_array.expand_dims(_creation.range(num_segments), 1),
                       _array.expand_dims(ids, 0))
    mask = _array.reshape(mask, [num_segments, -1] + [1] * (data.ndim - 1))
    filler = tensor(empty, data.dtype)
    picked = _indexing.where(mask, _array.expand_dims(data, 0), filler)
    return reduce(picked, 1)


def _extreme(dtype, high):
    if dtype.is_floating:
        info = np.finfo(dtype.as_numpy_dtype)
    else:
        info = np.iinfo(dtype.as_numpy_dtype)
    return info.max if high else info.min


@keras_op("math", config=("num_segments", "sorted"))
def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The sums of the rows of `data` by `segment_ids` (empty segments: 0).

    Example:
        >>> tf.keras.ops.segment_sum(tf.constant([1, 2, 3]), tf.constant([0, 0, 1])).numpy()
        array([3, 3], dtype=int32)
    """
    data, ids, n = _segments("segment_sum", data, segment_ids, num_segments)
    return _indexing.unsorted_segment_sum(data, ids, n)


@keras_op("math", config=("num_segments", "sorted"))
def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The maxima of the rows of `data` by `segment_ids` (empty segments: the dtype's
    lowest value, as TensorFlow)."""
    data, ids, n = _segments("segment_max", data, segment_ids, num_segments)
    low = _extreme(data.dtype, False)
    return _segment_reduce(data, ids, n, _reduction.reduce_max, low)


@keras_op("math", config=("num_segments", "sorted"))
def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The minima of the rows of `data` by `segment_ids` (empty segments: the dtype's
    highest value)."""
    data, ids, n = _segments("segment_min", data, segment_ids, num_segments)
    return _segment_reduce(data, ids, n, _reduction.reduce_min, _extreme(data.dtype, True))


@keras_op("math", config=("num_segments", "sorted"))
def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The products of the rows of `data` by `segment_ids` (empty segments: 1)."""
    data, ids, n = _segments("segment_prod", data, segment_ids, num_segments)
    return _segment_reduce(data, ids, n, _reduction.reduce_prod, 1)


# --------------------------------------------------------------------------- ranking
@keras_op("math", config=("k", "sorted"))
def top_k(x, k, sorted=True):  # noqa: A002 - Keras's name
    """The `k` largest entries along the last axis and their indices (int32).

    Example:
        >>> values, indices = tf.keras.ops.top_k(tf.constant([1.0, 4.0, 2.0]), 2)
        >>> values.numpy(), indices.numpy()
        (array([4., 2.], dtype=float32), array([1, 2], dtype=int32))
    """
    found = _reduction.top_k(tensor(x), k=k, sorted=sorted)
    return found[0], found[1]


@keras_op("math", config=("k",))
def in_top_k(targets, predictions, k):
    """Whether each target class is among the `k` highest predictions of its row (ties
    with the k-th value count as in, as TensorFlow)."""
    p = tensor(predictions)
    t = _math.cast(tensor(targets), _dt.int32)
    target_value = _indexing.gather(p, _array.expand_dims(t, 1), axis=1, batch_dims=1)
    higher = _reduction.reduce_sum(_math.cast(_math.greater(p, target_value), _dt.int32), 1)
    finite = _math.is_finite(target_value[:, 0]) if p.dtype.is_floating else None
    inside = _math.less(higher, k)
    return inside if finite is None else _math.logical_and(inside, finite)


# --------------------------------------------------------------------------- sequences
@keras_op("math", config=("sequence_length", "sequence_stride"))
def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of `sequence_length` along the last axis every `sequence_stride`:
    (..., frames, sequence_length).

    Example:
        >>> tf.keras.ops.extract_sequences(tf.range(5), 2, 2).numpy()
        array([[0, 1],
               [2, 3]], dtype=int32)
    """
    x = tensor(x)
    n = x.shape[-1]
    frames = 1 + (n - sequence_length) // sequence_stride
    index = (np.arange(frames)[:, None] * sequence_stride
             + np.arange(sequence_length)[None, :]).astype(np.int32)
    return _indexing.gather(x, tensor(index), axis=x.ndim - 1)


# --------------------------------------------------------------------------- elementwise
@keras_op("math")
def rsqrt(x):
    """`1 / sqrt(x)`."""
    return _math.rsqrt(_floats(x))


@keras_op("math")
def erf(x):
    """The error function."""
    return _math.erf(_floats(x))


@keras_op("math")
def erfc(x):
    """`1 - erf(x)`, accurate for large `x`."""
    return _math.erfc(_floats(x))


@keras_op("math")
def erfinv(x):
    """The inverse error function (Giles's approximation polished by two Newton steps).

    Example:
        >>> round(float(tf.keras.ops.erfinv(tf.constant(0.5))), 4)
        0.4769
    """
    x = _floats(x)
    work = _math.cast(x, _dt.float64)
    w = -_math.log((1.0 - work) * (1.0 + work))
    small = w - 2.5
    large = _math.sqrt(_math.maximum(w, tensor(5.0, _dt.float64))) - 3.0
    p_small, p_large = tensor(2.81022636e-08, _dt.float64), tensor(-0.000200214257,
                                                                  _dt.float64)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p_small = p_small * small + c
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        p_large = p_large * large + c
    y = _indexing.where(_math.less(w, 5.0), p_small, p_large) * work
    two_over_sqrt_pi = 2.0 / np.sqrt(np.pi)
    for _ in range(2):  # Newton on erf(y) = x
        y = y - (_math.erf(y) - work) / (two_over_sqrt_pi * _math.exp(-_math.square(y)))
    # +-1 map to +-inf; a constant there, so no inf * 0 reaches the gradient
    ends = _array.stop_gradient(work) * np.inf
    y = _indexing.where(_math.equal(_math.abs(work), 1.0), ends, y)
    return _math.cast(y, x.dtype)


@keras_op("math")
def logdet(x):
    """The log-determinant of Hermitian positive-definite matrices."""
    return _linalg.logdet(_floats(x))


@keras_op("math", name="CDist")
def cdist(x, y):
    """The Euclidean distances between the rows of `x` (..., n, d) and `y` (..., m, d).
    """
    a, b = promoted(x, y)
    a, b = _floats(a), _floats(b)
    diff = _array.expand_dims(a, -2) - _array.expand_dims(b, -3)
    return _math.sqrt(_reduction.reduce_sum(_math.square(diff), -1))


# --------------------------------------------------------------------------- Fourier
# Discrete Fourier transforms as products with the (static) DFT matrices, on
# (real, imaginary) pairs as Keras's functions take and give them.
def _pair(x, name):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"keras.ops.{name}: x must be a (real, imaginary) pair of "
                         f"tensors, got {type(x).__name__}")
    real, imag = promoted(*x)
    real = _floats(real)
    return real, _math.cast(imag, real.dtype)


def _dft(real, imag, inverse):
    """The DFT of (real, imag) along the last axis (the inverse scaled by 1/n)."""
    n = real.shape[-1]
    k = np.arange(n)
    angle = 2 * np.pi * np.outer(k, k) / n
    cos = tensor(np.cos(angle), real.dtype)
    sin = tensor(np.sin(angle) * (1.0 if inverse else -1.0), real.dtype)

    def mm(a, m):
        return _linalg.tensordot(a, m, [[a.ndim - 1], [0]])
    out_r = mm(real, cos) - mm(imag, sin)
    out_i = mm(real, sin) + mm(imag, cos)
    if inverse:
        out_r, out_i = out_r / float(n), out_i / float(n)
    return out_r, out_i


def _swap_last(t):
    perm = list(range(t.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _array.transpose(t, perm)


@keras_op("math", name="FFT")
def fft(x):
    """The DFT along the last axis of `x = (real, imag)`, as a (real, imag) pair.

    Example:
        >>> r, i = tf.keras.ops.fft((tf.constant([1.0, 0.0]), tf.constant([0.0, 0.0])))
        >>> r.numpy()
        array([1., 1.], dtype=float32)
    """
    return _dft(*_pair(x, "fft"), inverse=False)


def _dft2(x, name, inverse):
    real, imag = _pair(x, name)
    r, i = _dft(real, imag, inverse)
    r, i = _dft(_swap_last(r), _swap_last(i), inverse)
    return _swap_last(r), _swap_last(i)


@keras_op("math", name="FFT2")
def fft2(x):
    """The 2-D DFT over the last two axes of `x = (real, imag)`."""
    return _dft2(x, "fft2", False)


@keras_op("math", name="IFFT2")
def ifft2(x):
    """The inverse 2-D DFT over the last two axes of `x = (real, imag)`."""
    return _dft2(x, "ifft2", True)


def _fit_length(x, n):
    size = x.shape[-1]
    if size > n:
        return x[..., :n]
    if size < n:
        return _array.pad(x, [[0, 0]] * (x.ndim - 1) + [[0, n - size]])
    return x


@keras_op("math", config=("fft_length",), name="RFFT")
def rfft(x, fft_length=None):
    """The DFT of the real `x` along its last axis (cut or zero-padded to
    `fft_length`): the `n // 2 + 1` non-negative frequencies as a (real, imag) pair."""
    x = _floats(x)
    n = x.shape[-1] if fft_length is None else fft_length
    x = _fit_length(x, n)
    k = np.arange(n // 2 + 1)
    angle = 2 * np.pi * np.outer(np.arange(n), k) / n
    return (_last_axis_product(x, np.cos(angle)), _last_axis_product(x, -np.sin(angle)))


def _last_axis_product(x, matrix):
    """`x @ matrix` over the last axis of `x` (of any rank)."""
    return _linalg.tensordot(x, tensor(matrix, x.dtype), [[x.ndim - 1], [0]])


@keras_op("math", config=("fft_length",), name="IRFFT")
def irfft(x, fft_length=None):
    """The real signal whose `rfft` is `x = (real, imag)` (length `fft_length`, or
    2 * (bins - 1))."""
    real, imag = _pair(x, "irfft")
    n = 2 * (real.shape[-1] - 1) if fft_length is None else fft_length
    bins = n // 2 + 1
    real, imag = _fit_length(real, bins), _fit_length(imag, bins)
    # the negative frequencies mirror the positive ones: interior bins count twice
    weight = np.full(bins, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    angle = 2 * np.pi * np.outer(np.arange(bins), np.arange(n)) / n
    cos = tensor(weight[:, None] * np.cos(angle) / n, real.dtype)
    sin = tensor(-weight[:, None] * np.sin(angle) / n, real.dtype)
    return _linalg.tensordot(real, cos, [[real.ndim - 1], [0]]) + \
        _linalg.tensordot(imag, sin, [[imag.ndim - 1], [0]])


def _window(window, length, dtype):
    if window is None:
        return None
    if isinstance(window, str):
        k = np.arange(length)
        # TensorFlow's "periodic" windows: periodic for even lengths, symmetric for odd
        period = length if length % 2 == 0 else max(length - 1, 1)
        if window == "hann":
            w = 0.5 - 0.5 * np.cos(2 * np.pi * k / period)
        elif window == "hamming":
            w = 0.54 - 0.46 * np.cos(2 * np.pi * k / period)
        else:
            raise ValueError(f"keras.ops.stft: window must be 'hann', 'hamming', a tensor "
                             f"or None, got {window!r}")
        return tensor(w, dtype)
    return tensor(window, dtype)


@keras_op("math", config=("sequence_length", "sequence_stride", "fft_length", "window",
                          "center"), name="STFT")
def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """The short-time Fourier transform of the real `x` along its last axis: frames of
    `sequence_length` every `sequence_stride`, windowed (periodic 'hann'/'hamming'),
    centred in `fft_length` and transformed; `center` reflect-pads by fft_length // 2.
    """
    x = _floats(x)
    if center:
        pad = fft_length // 2
        x = _array.pad(x, [[0, 0]] * (x.ndim - 1) + [[pad, pad]], mode="REFLECT")
    # frames of fft_length, the window (of sequence_length) centred in each, as Keras's
    frames = extract_sequences(x, fft_length, sequence_stride)
    w = _window(window, sequence_length, x.dtype)
    if w is None:
        w = _creation.ones([sequence_length], dtype=x.dtype)
    left = (fft_length - sequence_length) // 2
    w = _array.pad(w, [[left, fft_length - sequence_length - left]])
    return rfft(frames * w, fft_length)


@keras_op("math", config=("sequence_length", "sequence_stride", "fft_length", "length",
                          "window", "center"), name="ISTFT")
def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann",
          center=True):
    """The inverse of `stft`: each frame of `x = (real, imag)` transformed back,
    windowed by the forward window over its overlap sum of squares, and overlap-added;
    `center` drops the fft_length // 2 padding; `length` cuts the result."""
    real, imag = _pair(x, "istft")
    frames = irfft((real, imag), fft_length)                   # (..., n_frames, fft)
    n_frames = frames.shape[-2]
    step = sequence_stride
    w = _window(window, sequence_length, frames.dtype)
    if w is not None:
        if w.shape != (sequence_length,):
            raise ValueError(f"keras.ops.istft: window must have shape [{sequence_length}], "
                             f"got {w.shape}")
        left = (fft_length - sequence_length) // 2
        w = _array.pad(w, [[left, fft_length - sequence_length - left]])
        # TensorFlow's inverse_stft_window_fn: w over the sum of the squared windows
        # that overlap each sample
        overlaps = -(-fft_length // step)
        squares = _array.pad(_math.square(w), [[0, overlaps * step - fft_length]])
        per_phase = _reduction.reduce_sum(_array.reshape(squares, [overlaps, step]), 0)
        denom = _array.reshape(_array.tile(_array.expand_dims(per_phase, 0),
                                           [overlaps, 1]), [-1])[:fft_length]
        frames = frames * (w / denom)
    total = fft_length + step * (n_frames - 1)
    places = (np.arange(n_frames)[:, None] * step + np.arange(fft_length)[None, :])
    lead = list(range(frames.ndim - 2))
    by_place = _array.transpose(_array.reshape(frames, [-1, n_frames * fft_length]), [1, 0])
    summed = _indexing.unsorted_segment_sum(by_place, tensor(places.reshape(-1), _dt.int32),
                                            total)
    signal = _array.reshape(_array.transpose(summed, [1, 0]),
                            [frames.shape[i] for i in lead] + [total])
    start = fft_length // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = total - fft_length // 2
    else:
        end = total
    return signal[..., start:end]


@keras_op("math")
def view_as_complex(x):
    """The complex tensor of the (..., 2) real tensor `x` (last axis: real, imag)."""
    x = _floats(x)
    if x.shape[-1] != 2:
        raise ValueError(f"keras.ops.view_as_complex: the last axis must have size 2, got "
                         f"shape {x.shape}")
    return _math.complex(x[..., 0], x[..., 1])


@keras_op("math")
def view_as_real(x):
    """The (..., 2) real tensor of the complex `x` (last axis: real, imag)."""
    x = tensor(x)
    return _array.stack([_math.real(x), _math.imag(x)], axis=-1)
