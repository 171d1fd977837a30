"""Spectral ops (tf.signal): FFTs as four kernels with their shape, VJP and JVP rules, and
framing, windows, STFTs, mel matrices, DCTs and MFCCs as composites of public ops.

The kernels transform the innermost `rank` axes: FFT and IFFT (complex to complex), RFFT
(real to the half spectrum, n // 2 + 1 bins on the last axis) and IRFFT (back, to
`fft_length` samples). The public functions crop or zero-pad their input to `fft_length`
with public ops (pad, slicing), so the kernels never see a length they must change and
the gradients of cropping and padding come from those ops. Everything else is built
from public ops, so its derivatives come for free. Values, dtypes (float32 -> complex64,
float64 -> complex128), argument names and defaults are TensorFlow 2.21's.

Derivatives use TensorFlow's convention for complex values (a VJP is the adjoint applied
to the cotangent): FFT's VJP is conj(FFT(conj(g))) = n * IFFT(g); RFFT's is the real
part of the adjoint of the half-spectrum map (TensorFlow's formula with its extra terms
for the bins Hermitian symmetry drops, as one inverse real FFT); IRFFT's is RFFT(g)
weighted 1, 2, ..., 2, (1) / n, since each inner bin stands for two.
"""
from __future__ import annotations

import math as _pymath
from typing import Callable

import numpy as np

from .._core import dtypes as _dt
from .._core.dispatch import run_kernel
from .._core.errors import InvalidArgumentError, describe
from .._core.shape import dims_of, dims_product, is_dim, num_elements
from .._core.tensor import Tensor
from ._args import int_arg, int_list, to_tensor
from ._batching import batch_elementwise
from ._define import composite, conjugate, defop
from .array import (concat, expand_dims, pad, reshape, reverse, roll, shape as _shape, split,
                    tile)
from .creation import constant, ones, range as _range, zeros, zeros_like
from .indexing import gather, where
from .math import (bessel_i0e, cast, complex as _complex, equal, exp, log, maximum, minimum,
                   pow as _pow, real, rsqrt, sin, sqrt, square)
from .reduction import add_n, cumsum, reduce_sum

__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d",
           "irfft2d", "rfft3d", "irfft3d", "fftshift", "ifftshift", "frame",
           "overlap_and_add", "hann_window", "hamming_window", "vorbis_window",
           "kaiser_window", "kaiser_bessel_derived_window", "stft", "inverse_stft",
           "inverse_stft_window_fn", "linear_to_mel_weight_matrix",
           "mfccs_from_log_mel_spectrograms", "dct", "idct", "mdct", "inverse_mdct"]

_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


# --------------------------------------------------------------------------- kernels' rules


def _check_operand(op: str, shape, dtype, rank: int, allowed, what: str) -> None:
    if dtype not in allowed:
        raise InvalidArgumentError(f"{op}: input must be {what}, got {dtype.name}")
    if len(shape) < rank:
        raise InvalidArgumentError(
            f"{op}: input must have rank >= {rank} (the transformed axes are the last "
            f"{rank}), got shape {list(shape)}")


def _fft_shape(op: str):
    def rule(shapes, dtypes, attrs):
        s, d = shapes["x"], dtypes["x"]
        _check_operand(op, s, d, attrs["rank"], _REAL_OF, "complex64 or complex128")
        return [(tuple(s), d)]
    return rule


def _rfft_shape(shapes, dtypes, attrs):
    s, d = shapes["x"], dtypes["x"]
    _check_operand("RFFT", s, d, attrs["rank"], _COMPLEX_OF, "float32 or float64")
    # (an empty signal has no bins, as in TensorFlow: not the one bin of 0 // 2 + 1)
    last = None if s[-1] is None else s[-1] // 2 + 1 if s[-1] else 0
    return [(tuple(s[:-1]) + (last,), _COMPLEX_OF[d])]


def _irfft_shape(shapes, dtypes, attrs):
    s, d, lengths = shapes["x"], dtypes["x"], tuple(attrs["fft_length"])
    _check_operand("IRFFT", s, d, len(lengths), _REAL_OF, "complex64 or complex128")
    return [(tuple(s[:len(s) - len(lengths)]) + lengths, _REAL_OF[d])]


def _fft(x: Tensor, rank: int) -> Tensor:
    return run_kernel("FFT", {"x": x}, {"rank": rank})


def _ifft(x: Tensor, rank: int) -> Tensor:
    return run_kernel("IFFT", {"x": x}, {"rank": rank})


def _rfft(x: Tensor, rank: int) -> Tensor:
    return run_kernel("RFFT", {"x": x}, {"rank": rank})


def _irfft(x: Tensor, lengths: tuple) -> Tensor:
    return run_kernel("IRFFT", {"x": x}, {"fft_length": tuple(lengths)})


# conj(F conj(g)) is F^H g = n * IFFT(g) without n, which a traced graph may not know.
defop("FFT", ["x"], shape=_fft_shape("FFT"),
      vjp={"x": lambda g, *, rank: conjugate(_fft(conjugate(g), rank))},
      jvp={"x": lambda t, *, rank: _fft(t, rank)}, batch=batch_elementwise)
defop("IFFT", ["x"], shape=_fft_shape("IFFT"),
      vjp={"x": lambda g, *, rank: conjugate(_ifft(conjugate(g), rank))},
      jvp={"x": lambda t, *, rank: _ifft(t, rank)}, batch=batch_elementwise)


def _rfft_vjp(g, x_shape, *, rank):
    """Re(A^H g) for the half-spectrum DFT A: n * IRFFT(g * w) with w = 1 for the DC and
    (even n) Nyquist bins and 1/2 for the others, which IRFFT counts twice (TensorFlow's
    formula in one transform). With lengths known only when a traced graph runs: the
    cotangent zero-filled over the dropped bins, then one full FFT (conj(F conj(g)) and
    F conj(g) share their real part)."""
    inner = tuple(x_shape[len(x_shape) - rank:])
    if any(is_dim(d) for d in inner) or g._shape[-1] is None:
        g = concat([conjugate(g), zeros(x_shape, g.dtype)], -1)
        size = num_elements(x_shape, (len(x_shape) - 1,))
        return real(_fft(gather(g, _range(size), axis=len(x_shape) - 1), rank))
    n = inner[-1]
    weights = np.full(n // 2 + 1 if n else 0, 0.5)
    if n:
        weights[0] = 1.0
        if n % 2 == 0:
            weights[-1] = 1.0
    scale = constant((weights * _pymath.prod(inner)).astype(g.dtype.as_numpy_dtype))
    return _irfft(g * scale, inner)


def _irfft_vjp(g, *, fft_length):
    """RFFT(g) weighted by how many bins of the full spectrum each kept bin stands for
    (1 for DC and, at even lengths, Nyquist; 2 for the others), over the signal size."""
    n = fft_length[-1]
    bins = n // 2 + 1
    weights = np.full(bins, 2.0)
    weights[0] = 1.0
    if n % 2 == 0 and bins > 1:
        weights[-1] = 1.0
    size = _pymath.prod(fft_length)
    spectrum = _rfft(g, len(fft_length))
    scale = weights / size if size else np.zeros(bins)
    return spectrum * constant(scale.astype(spectrum.dtype.as_numpy_dtype))


defop("RFFT", ["x"], shape=_rfft_shape, vjp={"x": _rfft_vjp},
      jvp={"x": lambda t, *, rank: _rfft(t, rank)}, batch=batch_elementwise)
defop("IRFFT", ["x"], shape=_irfft_shape, vjp={"x": _irfft_vjp},
      jvp={"x": lambda t, *, fft_length: _irfft(t, fft_length)}, batch=batch_elementwise)


# --------------------------------------------------------------------------- FFT functions


def _operand(op: str, x, rank: int, allowed, what: str, arg: str) -> Tensor:
    x = to_tensor(x, None, op, arg)
    if x.dtype not in allowed:
        raise InvalidArgumentError(f"{op}: {arg} must be {what}, got {describe(x)}")
    if len(x._shape) < rank:
        raise InvalidArgumentError(
            f"{op}: {arg} must have rank >= {rank}, got {describe(x)}")
    return x


def _complex_fft(op: str, kernel: str, rank: int) -> Callable:
    def transform(input, name=None) -> Tensor:  # noqa: A002 - TensorFlow's argument name
        x = _operand(op, input, rank, _REAL_OF, "complex64 or complex128", "input")
        return run_kernel(kernel, {"x": x}, {"rank": rank})
    return transform


def _lengths(op: str, fft_length, rank: int) -> tuple:
    lengths = int_list(op, fft_length, "fft_length", minimum=0)
    if len(lengths) != rank:
        raise InvalidArgumentError(
            f"{op}: fft_length must hold {rank} length(s), one per transformed axis, got "
            f"{list(lengths)}")
    return lengths


def _fit_inner(x: Tensor, lengths: tuple) -> Tensor:
    """`x` cropped or zero-padded at the end of its last len(lengths) axes to `lengths`.
    An axis of unknown length (a traced graph) is padded by its target length and then
    cropped to it: the first samples of the zero-extended signal, whatever its length."""
    r = len(lengths)
    inner = x._shape[len(x._shape) - r:]
    lead = [[0, 0]] * (len(x._shape) - r)
    grow = [L - d if d is not None and d < L else L if d is None else 0
            for d, L in zip(inner, lengths)]
    if any(grow):
        x = pad(x, lead + [[0, a] for a in grow])
    if any(d is None or d > L for d, L in zip(inner, lengths)):
        x = x[(Ellipsis,) + tuple(slice(None, L) for L in lengths)]
    return x


def _real_fft(op: str, rank: int) -> Callable:
    def transform(input_tensor, fft_length=None, name=None) -> Tensor:
        x = _operand(op, input_tensor, rank, _COMPLEX_OF, "float32 or float64",
                     "input_tensor")
        if fft_length is not None:
            x = _fit_inner(x, _lengths(op, fft_length, rank))
        return _rfft(x, rank)
    return transform


def _inverse_real_fft(op: str, rank: int) -> Callable:
    def transform(input_tensor, fft_length=None, name=None) -> Tensor:
        x = _operand(op, input_tensor, rank, _REAL_OF, "complex64 or complex128",
                     "input_tensor")
        if fft_length is None:
            inner = x._shape[len(x._shape) - rank:]
            if None in inner:
                raise InvalidArgumentError(
                    f"{op}: the input's last {rank} dimension(s) are unknown here "
                    f"({describe(x)}); pass fft_length")
            lengths = tuple(inner[:-1]) + (max(0, 2 * (inner[-1] - 1)),)
        else:
            lengths = _lengths(op, fft_length, rank)
        x = _fit_inner(x, lengths[:-1] + (lengths[-1] // 2 + 1,))
        return _irfft(x, lengths)
    return transform


fft = _complex_fft("fft", "FFT", 1)
ifft = _complex_fft("ifft", "IFFT", 1)
fft2d = _complex_fft("fft2d", "FFT", 2)
ifft2d = _complex_fft("ifft2d", "IFFT", 2)
fft3d = _complex_fft("fft3d", "FFT", 3)
ifft3d = _complex_fft("ifft3d", "IFFT", 3)
rfft = _real_fft("rfft", 1)
rfft2d = _real_fft("rfft2d", 2)
rfft3d = _real_fft("rfft3d", 3)
irfft = _inverse_real_fft("irfft", 1)
irfft2d = _inverse_real_fft("irfft2d", 2)
irfft3d = _inverse_real_fft("irfft3d", 3)

_DOCS = {
    "fft": ("the discrete Fourier transform over the last axis (complex input)",
            "tf.signal.fft(tf.constant([1+0j, 0j, 0j, 0j])) -> [1+0j, 1+0j, 1+0j, 1+0j]"),
    "ifft": ("the inverse DFT over the last axis (complex input, scaled by 1/n)",
             "tf.signal.ifft(tf.constant([4+0j, 0j])) -> [2+0j, 2+0j]"),
    "fft2d": ("the DFT over the last two axes", "tf.signal.fft2d(tf.ones([2, 2], "
              "tf.complex64)) -> [[4+0j, 0j], [0j, 0j]]"),
    "ifft2d": ("the inverse DFT over the last two axes", "tf.signal.ifft2d(tf.constant("
               "[[4+0j, 0j], [0j, 0j]])) -> [[1+0j, 1+0j], [1+0j, 1+0j]]"),
    "fft3d": ("the DFT over the last three axes", "tf.signal.fft3d(tf.ones([1, 1, 2], "
              "tf.complex64)) -> [[[2+0j, 0j]]]"),
    "ifft3d": ("the inverse DFT over the last three axes", "tf.signal.ifft3d(tf.ones("
               "[1, 1, 2], tf.complex64)) -> [[[1+0j, 0j]]]"),
    "rfft": ("the DFT of a real signal over its last axis: fft_length // 2 + 1 bins; the "
             "input is cropped or zero-padded to fft_length (default: its length); "
             "float32 -> complex64, float64 -> complex128",
             "tf.signal.rfft([1., 1., 1., 1.]) -> [4+0j, 0j, 0j]"),
    "rfft2d": ("rfft over the last two axes (the last axis keeps n // 2 + 1 bins)",
               "tf.signal.rfft2d(tf.ones([2, 2])) -> [[4+0j, 0j], [0j, 0j]]"),
    "rfft3d": ("rfft over the last three axes", "tf.signal.rfft3d(tf.ones([1, 1, 2])) -> "
               "[[[2+0j, 0j]]]"),
    "irfft": ("the real signal of fft_length samples (default 2 * (bins - 1)) whose half "
              "spectrum is the input (cropped or zero-padded to fft_length // 2 + 1 bins)",
              "tf.signal.irfft(tf.constant([4+0j, 0j, 0j])) -> [1., 1., 1., 1.]"),
    "irfft2d": ("irfft over the last two axes", "tf.signal.irfft2d(tf.constant([[4+0j, "
                "0j], [0j, 0j]])) -> [[1., 1.], [1., 1.]]"),
    "irfft3d": ("irfft over the last three axes", "tf.signal.irfft3d(tf.constant([[[2+0j, "
                "0j]]])) -> [[[1., 1.]]]"),
}
for _name, (_what, _example) in _DOCS.items():
    _fn = globals()[_name]
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = f"{_what[0].upper()}{_what[1:]}.\n\n    Example: `{_example}`.\n    "


def _shift(op: str, x, axes, sign: int) -> Tensor:
    x = to_tensor(x, None, op, "x")
    rank = len(x._shape)
    axes = tuple(range(rank)) if axes is None else int_list(op, axes, "axes")
    dims = [x._shape[a] for a in axes]
    if None in dims:
        raise InvalidArgumentError(f"{op}: the shifted axes of {describe(x)} must be known")
    if not axes:
        return x
    return roll(x, [sign * (d // 2) for d in dims], list(axes))


def fftshift(x, axes=None, name=None) -> Tensor:
    """The spectrum rolled so that frequency 0 sits in the middle of each axis in `axes`
    (default: all).

    Example: `tf.signal.fftshift([0., 1., 2., -2., -1.])` -> [-2., -1., 0., 1., 2.].
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None, name=None) -> Tensor:
    """The inverse of fftshift (they differ for odd lengths).

    Example: `tf.signal.ifftshift([-2., -1., 0., 1., 2.])` -> [0., 1., 2., -2., -1.].
    """
    return _shift("ifftshift", x, axes, -1)


# --------------------------------------------------------------------------- framing


@composite("frame")
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1,
          name=None) -> Tensor:
    """Frames of `frame_length` samples every `frame_step` along `axis`: that axis becomes
    [frames, frame_length]. With `pad_end`, frames running past the end are kept, filled
    with `pad_value` (ceil(n / step) frames); else only whole frames (1 + (n - length) //
    step, at least 0).

    Example: `tf.signal.frame(tf.range(6), 3, 2).numpy()` -> [[0, 1, 2], [2, 3, 4]].
    """
    x = to_tensor(signal, None, "frame", "signal")
    rank = len(x._shape)
    if rank < 1:
        raise InvalidArgumentError(
            f"frame: signal must have rank >= 1, got {describe(x)}")
    length = int_arg("frame", frame_length, "frame_length", minimum=0)
    step = int_arg("frame", frame_step, "frame_step", minimum=1)
    ax = int_arg("frame", axis, "axis")
    if not -rank <= ax < rank:
        raise InvalidArgumentError(f"frame: axis {ax} is out of range for {describe(x)}")
    ax %= rank
    n = x._shape[ax]
    value = pad_value
    if pad_end and isinstance(value, Tensor) and value._shape != ():
        raise InvalidArgumentError(f"frame: pad_value must be a scalar, got {describe(value)}")
    if n is not None:
        frames = -(-n // step) if pad_end else max(0, 1 + (n - length) // step)
        if pad_end:
            extra = max(0, length + step * (frames - 1) - n)
            if extra:
                paddings = [[0, 0]] * rank
                paddings[ax] = [0, extra]
                x = pad(x, paddings, constant_values=value)
        starts = np.arange(frames, dtype=np.int32)[:, None] * step
        indices = constant(starts + np.arange(length, dtype=np.int32)[None, :])
        return gather(x, indices, axis=ax)
    # the frame axis's length is known only when the traced graph runs
    total = _shape(x)[ax]
    if pad_end:
        frames = (total + (step - 1)) // step
        paddings = [[0, 0]] * rank
        paddings[ax] = [0, length]  # enough for the last frame, whatever the length
        x = pad(x, paddings, constant_values=value)
    else:
        frames = maximum(1 + (total - length) // step, 0)
    indices = (expand_dims(_range(frames) * step, 1)
               + expand_dims(_range(length), 0))
    return gather(x, indices, axis=ax)


@composite("overlap_and_add")
def overlap_and_add(signal, frame_step, name=None) -> Tensor:
    """The frames of `signal` ([..., frames, frame_length]) added back together, each
    `frame_step` samples after the previous: [..., (frames - 1) * frame_step +
    frame_length].

    Example: `tf.signal.overlap_and_add(tf.ones([3, 2]), 1).numpy()` -> [1., 2., 2., 1.].
    """
    x = to_tensor(signal, None, "overlap_and_add", "signal")
    if len(x._shape) < 2:
        raise InvalidArgumentError(
            f"overlap_and_add: signal must have rank >= 2 ([..., frames, frame_length]), "
            f"got {describe(x)}")
    step = int_arg("overlap_and_add", frame_step, "frame_step", minimum=1)
    length = x._shape[-1]
    if length is None:
        raise InvalidArgumentError(
            f"overlap_and_add: the frame length (last dimension) of {describe(x)} must be "
            f"known")
    outer = dims_of(x)[:-2]
    frames = x._shape[-2]
    if length == step:  # frames that just touch: the output is the frames in a row
        return reshape(x, outer + (-1 if frames is None else frames * length,))
    pieces = -(-length // step)  # each frame as this many hops of `step` samples
    # one leading axis for all outer ones: the hop axis below then fits at any rank
    x = reshape(x, (dims_product(outer),) + dims_of(x)[-2:])
    lead = [[0, 0]] * 2
    if pieces * step > length:
        x = pad(x, lead + [[0, pieces * step - length]])
    x = reshape(x, dims_of(x)[:-1] + (pieces, step))
    # hop k of frame f lands on output hop f + k: shift each hop's column and add them
    hops = [pad(x[..., k, :], lead[:-1] + [[k, pieces - 1 - k], [0, 0]])
            for k in range(pieces)]
    total = -1 if frames is None else (frames + pieces - 1) * step
    out = reshape(add_n(hops) if len(hops) > 1 else hops[0], outer + (total,))
    if frames is not None:
        return out[..., :max(0, length + step * (frames - 1))]
    extra = pieces * step - length
    return out[..., :-extra] if extra else out


# --------------------------------------------------------------------------- windows


def _float_dtype(dtype):
    d = _dt.as_dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {d}")
    return d


def _raised_cosine(op: str, window_length, periodic, dtype, a: float, b: float) -> Tensor:
    dtype = _float_dtype(dtype)
    length = int_arg(op, window_length, "window_length", minimum=0)
    if length == 1:
        return ones([1], dtype)
    if isinstance(periodic, Tensor):
        periodic = bool(periodic.numpy())
    # TensorFlow's periodic window of odd length is its symmetric one
    denominator = length + int(bool(periodic)) * (1 - length % 2) - 1
    # a constant, made here in the window's precision with TensorFlow's order of
    # operations: a traced graph then holds the same bits as an eager call
    real = np.dtype(dtype._np).type if dtype in (_dt.float16, _dt.float32, _dt.float64) \
        else np.float32
    angle = real(2 * np.pi) * np.arange(length).astype(real) / real(denominator)
    window = real(a) - real(b) * np.cos(angle)
    return constant(window.astype(dtype._np), dtype)


def hann_window(window_length, periodic=True, dtype=_dt.float32, name=None) -> Tensor:
    """The Hann window 0.5 - 0.5 cos(2 pi n / N), N = length (periodic, even length) or
    length - 1.

    Example: `tf.signal.hann_window(4).numpy()` -> [0., 0.5, 1., 0.5].
    """
    return _raised_cosine("hann_window", window_length, periodic, dtype, 0.5, 0.5)


def hamming_window(window_length, periodic=True, dtype=_dt.float32, name=None) -> Tensor:
    """The Hamming window 0.54 - 0.46 cos(2 pi n / N), N as in hann_window.

    Example: `tf.signal.hamming_window(4).numpy()` -> [0.08, 0.54, 1., 0.54].
    """
    return _raised_cosine("hamming_window", window_length, periodic, dtype, 0.54, 0.46)


def _window_length(op: str, window_length, dtype):
    dtype = _float_dtype(dtype)
    return int_arg(op, window_length, "window_length", minimum=0), dtype


def vorbis_window(window_length, dtype=_dt.float32, name=None) -> Tensor:
    """The Vorbis power-complementary window sin(pi / 2 sin^2(pi (n + 0.5) / N)).

    Example: `tf.signal.vorbis_window(4).numpy()` -> [0.228, 0.9737, 0.9737, 0.228].
    """
    length, dtype = _window_length("vorbis_window", window_length, dtype)
    n = cast(_range(length), dtype)
    inner = sin(np.pi / constant(float(length), dtype) * (n + 0.5))
    return sin(np.pi / 2.0 * _pow(inner, 2.0))


def kaiser_window(window_length, beta=12.0, dtype=_dt.float32, name=None) -> Tensor:
    """The Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta), computed
    with exponentially scaled Bessel functions as TensorFlow does.

    Example: `tf.signal.kaiser_window(3, beta=0.0).numpy()` -> [1., 1., 1.].
    """
    length, dtype = _window_length("kaiser_window", window_length, dtype)
    if length == 1:
        return ones([1], dtype)
    half = (float(np.float32(length)) - 1.0) / 2.0
    # TensorFlow steps a float32 range from -half to half + 0.1
    arg = cast(_range(constant(-half, _dt.float32), half + 0.1, 1.0, dtype=_dt.float32),
               dtype)
    beta = constant(float(beta), dtype)
    ratio = arg / constant(half, dtype)
    num = beta * sqrt(maximum(1.0 - square(ratio), 0.0))
    return exp(num - beta) * (bessel_i0e(num) / bessel_i0e(beta))


def kaiser_bessel_derived_window(window_length, beta=12.0, dtype=_dt.float32,
                                 name=None) -> Tensor:
    """The Kaiser-Bessel-derived window: the square root of the Kaiser window's running
    sum over half the length, mirrored (power complementary, for MDCTs).

    Example: `tf.signal.kaiser_bessel_derived_window(4, beta=0.0).numpy()` -> [0.5774,
    0.8165, 0.8165, 0.5774].
    """
    length, dtype = _window_length("kaiser_bessel_derived_window", window_length, dtype)
    kaiser = kaiser_window(length // 2 + 1, beta, dtype=dtype)
    running = cumsum(kaiser)
    half = sqrt(running[:-1] / running[-1])
    return concat([half, reverse(half, [0])], 0)


# --------------------------------------------------------------------------- STFT


def _enclosing_power_of_two(value: int) -> int:
    """2**k for the least k with 2**k >= value (as TensorFlow computes it)."""
    if value <= 0:
        return 0
    return int(2 ** np.ceil(np.log(value) / np.log(2.0)))


@composite("stft")
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None) -> Tensor:
    """The short-time Fourier transform of real `signals` [..., samples]: windowed frames'
    rfft, [..., frames, fft_length // 2 + 1]; fft_length defaults to the least power of
    two >= frame_length.

    Example: `tf.signal.stft(tf.zeros([1000]), 256, 128).shape` -> [6, 129].
    """
    x = to_tensor(signals, None, "stft", "signals")
    length = int_arg("stft", frame_length, "frame_length", minimum=0)
    step = int_arg("stft", frame_step, "frame_step", minimum=1)
    fft_length = (_enclosing_power_of_two(length) if fft_length is None
                  else int_arg("stft", fft_length, "fft_length", minimum=0))
    framed = frame(x, length, step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(length, dtype=framed.dtype)
    return rfft(framed, [fft_length])


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window,
                           name=None) -> Callable:
    """A window function for inverse_stft that undoes `forward_window_fn`'s overlapped
    weighting: the forward window over the sum of its squares at each hop offset.

    Example: `tf.signal.inverse_stft_window_fn(2)(4, dtype=tf.float32)` -> [0., 1., 1., 1.].
    """
    step = int_arg("inverse_stft_window_fn", frame_step, "frame_step", minimum=1)

    def window_fn(frame_length, dtype) -> Tensor:
        length = int_arg("inverse_stft_window_fn", frame_length, "frame_length", minimum=0)
        forward = forward_window_fn(length, dtype=dtype)
        overlaps = -(-length // step)
        denominator = pad(square(forward), [[0, overlaps * step - length]])
        denominator = reduce_sum(reshape(denominator, [overlaps, step]), 0, keepdims=True)
        denominator = reshape(tile(denominator, [overlaps, 1]), [overlaps * step])[:length]
        return where(equal(denominator, 0.0), zeros_like(forward), forward / denominator)
    return window_fn


@composite("inverse_stft")
def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None) -> Tensor:
    """The signal whose stft is `stfts` [..., frames, bins]: each frame's irfft, cropped or
    padded to frame_length, windowed, then overlapped and added. For an exact inverse pass
    `window_fn=tf.signal.inverse_stft_window_fn(frame_step)`.

    Example: `tf.signal.inverse_stft(tf.signal.stft(x, 8, 2), 8, 2,
    window_fn=tf.signal.inverse_stft_window_fn(2))` -> x away from its ends.
    """
    s = to_tensor(stfts, None, "inverse_stft", "stfts")
    if len(s._shape) < 2:
        raise InvalidArgumentError(
            f"inverse_stft: stfts must have rank >= 2 ([..., frames, bins]), got "
            f"{describe(s)}")
    length = int_arg("inverse_stft", frame_length, "frame_length", minimum=0)
    step = int_arg("inverse_stft", frame_step, "frame_step", minimum=1)
    fft_length = (_enclosing_power_of_two(length) if fft_length is None
                  else int_arg("inverse_stft", fft_length, "fft_length", minimum=0))
    frames = irfft(s, [fft_length])
    if fft_length > length:
        frames = frames[..., :length]
    elif fft_length < length:
        frames = pad(frames, [[0, 0]] * (len(frames._shape) - 1) + [[0, length - fft_length]])
    if window_fn is not None:
        frames = frames * window_fn(length, dtype=frames.dtype)
    return overlap_and_add(frames, step)


# --------------------------------------------------------------------------- mel scale

_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(hertz: Tensor) -> Tensor:
    return _MEL_HIGH_FREQUENCY_Q * log(1.0 + hertz / _MEL_BREAK_FREQUENCY_HERTZ)


def _linspace(start: Tensor, stop: Tensor, num: int) -> Tensor:
    """num points from start to stop, both ends exact, the others start + i * delta
    (TensorFlow's arithmetic, so mel band edges agree to the last bit)."""
    if num <= 1:
        return reshape(start, [1])[:num]
    delta = (stop - start) / constant(num - 1, start.dtype)
    middle = start + cast(_range(1, num - 1), start.dtype) * delta
    return concat([reshape(start, [1]), middle, reshape(stop, [1])], 0)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0,
                                dtype=_dt.float32, name=None) -> Tensor:
    """The [num_spectrogram_bins, num_mel_bins] matrix taking linear-frequency spectra
    (bins spread over [0, sample_rate / 2]) to `num_mel_bins` triangular mel bands
    between the edges (HTK's mel scale, 1127 ln(1 + f / 700)); the DC bin gets no weight.

    Example: `tf.signal.linear_to_mel_weight_matrix().shape` -> [129, 20].
    """
    if isinstance(sample_rate, Tensor):
        sample_rate = sample_rate.numpy().item()
    num_mel_bins = int_arg("linear_to_mel_weight_matrix", num_mel_bins, "num_mel_bins")
    bins = int_arg("linear_to_mel_weight_matrix", num_spectrogram_bins,
                   "num_spectrogram_bins", minimum=0)
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz:.1f} >= upper_edge_hertz "
                         f"{upper_edge_hertz:.1f}")
    if sample_rate <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
    if upper_edge_hertz > sample_rate / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency "
                         f"(sample_rate / 2). Got {upper_edge_hertz} for sample_rate: "
                         f"{sample_rate}")
    dtype = _dt.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {dtype}")
    zero = constant(0.0, dtype)
    nyquist = constant(sample_rate, dtype) / 2.0
    frequencies = _linspace(zero, nyquist, bins)[1:]  # the DC bin is dropped, then zero
    spectrum_mel = expand_dims(_hertz_to_mel(frequencies), 1)
    edges = _linspace(_hertz_to_mel(constant(lower_edge_hertz, dtype)),
                      _hertz_to_mel(constant(upper_edge_hertz, dtype)), num_mel_bins + 2)
    lower = reshape(edges[:num_mel_bins], [1, num_mel_bins])
    center = reshape(edges[1:num_mel_bins + 1], [1, num_mel_bins])
    upper = reshape(edges[2:], [1, num_mel_bins])
    rising = (spectrum_mel - lower) / (center - lower)
    falling = (upper - spectrum_mel) / (upper - center)
    weights = maximum(zero, minimum(rising, falling))
    return pad(weights, [[1, 0], [0, 0]])


# --------------------------------------------------------------------------- DCT, MFCC


def _dct_arguments(op: str, x: Tensor, dct_type, n, axis, norm) -> None:
    """TensorFlow's checks, with its messages."""
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None and n < 1:
        raise ValueError("n should be a positive integer or None")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        if x._shape and x._shape[-1] is not None and x._shape[-1] < 2:
            raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    if x.dtype not in _COMPLEX_OF:
        raise InvalidArgumentError(f"{op}: input must be float32 or float64, got "
                                   f"{describe(x)}")
    if not x._shape or x._shape[-1] is None:
        raise InvalidArgumentError(f"{op}: input needs a known last dimension, got "
                                   f"{describe(x)}")


def _edge_weights(first: Tensor, rest: Tensor, size: int) -> Tensor:
    """[first, rest, rest, ...] of `size` entries."""
    return concat([reshape(first, [1]), ones([size - 1], first.dtype) * rest], 0)


def _dct(x: Tensor, dct_type: int, n, norm) -> Tensor:
    """TensorFlow's DCTs through a 2N-point real FFT (Makhoul), scipy's scaling."""
    if n is not None:
        x = _fit_inner(x, (n,))
    size = x._shape[-1]
    size_f = constant(float(size), x.dtype)
    if dct_type == 1:
        return real(rfft(concat([x, reverse(x[..., 1:-1], [-1])], -1)))
    if dct_type == 2:
        angle = -cast(_range(size), x.dtype) * np.pi * 0.5 / size_f
        scale = 2.0 * exp(_complex(zeros_like(angle), angle))
        out = real(rfft(x, [2 * size])[..., :size] * scale)
        if norm == "ortho":
            first = 0.5 * rsqrt(size_f)
            out = out * _edge_weights(first, first * _pymath.sqrt(2.0), size)
        return out
    if dct_type == 3:
        if norm == "ortho":
            first = sqrt(size_f)
            x = x * _edge_weights(first, first * _pymath.sqrt(0.5), size)
        else:
            x = x * size_f
        angle = cast(_range(size), x.dtype) * np.pi * 0.5 / size_f
        scale = 2.0 * exp(_complex(zeros_like(angle), angle))
        spectrum = scale * _complex(x, zeros_like(x))
        return real(irfft(spectrum, [2 * size]))[..., :size]
    out = _dct(x, 2, 2 * size, None)[..., 1::2]
    if norm == "ortho":
        out = out * (_pymath.sqrt(0.5) * rsqrt(size_f))
    return out


def dct(input, type=2, n=None, axis=-1, norm=None, name=None) -> Tensor:  # noqa: A002
    """The DCT of type 1, 2, 3 or 4 over the last axis (scipy.fft.dct's definitions; norm
    None or "ortho"); `n` crops or zero-pads the input first.

    Example: `tf.signal.dct([1., 1.]).numpy()` -> [4., 0.].
    """
    x = to_tensor(input, None, "dct", "input")
    _dct_arguments("dct", x, type, n, axis, norm)
    return _dct(x, type, n, norm)


def idct(input, type=2, n=None, axis=-1, norm=None, name=None) -> Tensor:  # noqa: A002
    """The inverse DCT: the DCT of the inverse type (2 <-> 3; 1 and 4 their own), so
    idct(dct(x)) = 2N x without norm and x with norm="ortho".

    Example: `tf.signal.idct(tf.signal.dct([1., 2.], norm="ortho"), norm="ortho")` ->
    [1., 2.].
    """
    x = to_tensor(input, None, "idct", "input")
    _dct_arguments("idct", x, type, n, axis, norm)
    return _dct(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None) -> Tensor:
    """MFCCs of [..., num_mel_bins] log-mel spectrograms: their DCT-II scaled by
    1 / sqrt(2 num_mel_bins) (HTK's near-orthonormal scaling, as TensorFlow).

    Example: `tf.signal.mfccs_from_log_mel_spectrograms(tf.ones([1, 4]))` -> [[2.828..., 0.,
    0., 0.]].
    """
    x = to_tensor(log_mel_spectrograms, None, "mfccs_from_log_mel_spectrograms",
                  "log_mel_spectrograms")
    if x._shape and x._shape[-1] == 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {x}")
    _dct_arguments("mfccs_from_log_mel_spectrograms", x, 2, None, -1, None)
    bins = x._shape[-1]
    out = _dct(x, 2, None, None)
    return out * rsqrt(constant(float(bins), out.dtype) * 2.0)


# --------------------------------------------------------------------------- MDCT


@composite("mdct")
def mdct(signals, frame_length, window_fn=vorbis_window, pad_end=False, norm=None,
         name=None) -> Tensor:
    """The modified DCT of real `signals` [..., samples]: frames of `frame_length` (a
    multiple of 4) every frame_length / 2, windowed (1 / sqrt(2) without a window), folded
    and transformed by a type-4 DCT: [..., frames, frame_length // 2].

    Example: `tf.signal.mdct(tf.zeros([16]), 8).shape` -> [3, 4].
    """
    x = to_tensor(signals, None, "mdct", "signals")
    if len(x._shape) < 1:
        raise InvalidArgumentError(f"mdct: signals must have rank >= 1, got {describe(x)}")
    length = int_arg("mdct", frame_length, "frame_length", minimum=0)
    if length % 4:
        raise ValueError("The frame length must be a multiple of 4.")
    framed = frame(x, length, length // 2, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(length, dtype=framed.dtype)
    else:
        framed = framed * (1.0 / np.sqrt(2))
    a, b, c, d = split(framed, 4, axis=-1)
    folded = concat([-reverse(c, [-1]) - d, a - reverse(b, [-1])], -1)
    return dct(folded, type=4, norm=norm)


@composite("inverse_mdct")
def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name=None) -> Tensor:
    """The signal whose mdct is `mdcts` [..., frames, frame_length // 2]: type-4 DCT,
    unfolded, windowed (1 / sqrt(2) without a window) and overlapped by half a frame.

    Example: `tf.signal.inverse_mdct(tf.zeros([3, 4])).shape` -> [16].
    """
    x = to_tensor(mdcts, None, "inverse_mdct", "mdcts")
    if len(x._shape) < 2:
        raise InvalidArgumentError(
            f"inverse_mdct: mdcts must have rank >= 2, got {describe(x)}")
    half = x._shape[-1]
    if norm is None:
        coefficients = (0.5 / constant(float(half), x.dtype)) * dct(x, type=4)
    elif norm == "ortho":
        coefficients = dct(x, type=4, norm="ortho")
    else:
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    first, second = split(coefficients, 2, axis=-1)
    frames = concat([second, -reverse(second, [-1]), -reverse(first, [-1]), -first], -1)
    if window_fn is not None:
        frames = frames * window_fn(2 * half, dtype=x.dtype)
    else:
        frames = frames * (1.0 / np.sqrt(2))
    return overlap_and_add(frames, half)
