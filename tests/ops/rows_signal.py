"""Rows for tf.signal: the four FFT kernels (FFT, IFFT, RFFT, IRFFT, at ranks 1 to 3 and
with fft_length cropping and padding) against numpy.fft, and the composites built on them
(frame, stft, inverse_stft) against NumPy formulas. Values against TensorFlow itself are in
test_signal.py, with the composites that need static inner dimensions (overlap_and_add's
frame length, the DCTs' and MFCCs' last axis, fftshift's axes), which the table's traced
run with every dimension unknown could not run: their derivatives are checked there.

Real-to-complex rows run one dtype each (the value test expects the output dtype of the
row's `out_dtype`). IRFFT ignores the imaginary parts of the DC and Nyquist bins, so its
derivative along them is 0, which the finite differences see too."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row

COMPLEX = ("complex64", "complex128")
S = tf.signal


def normal(*shapes):
    """Standard normal arrays of `shapes` (complex for complex dtypes)."""
    def sample(rng, dtype):
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            if np.dtype(dtype).kind == "c":
                x = x + 1j * rng.standard_normal(s)
            out.append(x.astype(dtype))
        return out
    return sample


def half_spectrum(*shapes):
    """Complex inputs for the inverse real FFTs, whatever dtype the row names (float32
    and float64 rows give complex64 and complex128 spectra)."""
    def sample(rng, dtype):
        cdtype = np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) \
            else np.complex128
        return [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(cdtype)
                for s in shapes]
    return sample


def _axes(rank):
    return tuple(range(-rank, 0))


def _cast(x, like):
    return np.asarray(x).astype(like.dtype)


def _real_of(x):
    return np.float32 if x.dtype == np.complex64 else np.float64


def np_frame(x, length, step, pad_end=False, pad_value=0.0, axis=-1):
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    frames = -(-n // step) if pad_end else max(0, 1 + (n - length) // step)
    if pad_end:
        extra = max(0, length + step * (frames - 1) - n)
        x = np.concatenate([x, np.full(x.shape[:-1] + (extra,), pad_value, x.dtype)], -1)
    out = np.stack([x[..., f * step:f * step + length] for f in range(frames)], -2) \
        if frames else np.zeros(x.shape[:-1] + (0, length), x.dtype)
    return np.moveaxis(out, (-2, -1), (axis - 1 if axis < 0 else axis,
                                       axis if axis < 0 else axis + 1))


def np_overlap_and_add(x, step):
    frames, length = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + ((frames - 1) * step + length,), x.dtype)
    for f in range(frames):
        out[..., f * step:f * step + length] += x[..., f, :]
    return out


def np_hann(n):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def np_stft(x, length, step, fft_length):
    frames = np_frame(x, length, step) * np_hann(length).astype(x.dtype)
    spectrum = np.fft.rfft(frames, fft_length)
    return spectrum.astype(np.complex64 if x.dtype == np.float32 else np.complex128)


def np_inverse_stft(s, length, step, fft_length):
    frames = np.fft.irfft(s, fft_length)[..., :length] * np_hann(length)
    return np_overlap_and_add(frames, step).astype(_real_of(s))


_EMPTY_IRFFT = ("empty: numpy.fft.irfft of zero bins returns uninitialized memory; the op pads "
                "them with zeros (as TensorFlow) and test_signal.py has no empty case either")

ROWS = [
    # complex FFTs
    Row("signal.fft/vector", S.fft, lambda x: np.fft.fft(x), normal((8,)), kernels=("FFT",),
        dtypes=COMPLEX),
    Row("signal.fft/batched_odd", S.fft, lambda x: np.fft.fft(x), normal((2, 3, 7)),
        kernels=("FFT",), dtypes=COMPLEX),
    Row("signal.ifft/batched", S.ifft, lambda x: np.fft.ifft(x), normal((3, 6)),
        kernels=("IFFT",), dtypes=COMPLEX),
    Row("signal.fft2d/batched", S.fft2d, lambda x: np.fft.fft2(x), normal((2, 3, 4)),
        kernels=("FFT",), dtypes=COMPLEX),
    Row("signal.ifft2d/matrix", S.ifft2d, lambda x: np.fft.ifft2(x), normal((4, 5)),
        kernels=("IFFT",), dtypes=COMPLEX),
    Row("signal.fft3d/cube", S.fft3d, lambda x: np.fft.fftn(x, axes=_axes(3)),
        normal((2, 3, 2, 4)), kernels=("FFT",), dtypes=COMPLEX),
    Row("signal.ifft3d/cube", S.ifft3d, lambda x: np.fft.ifftn(x, axes=_axes(3)),
        normal((3, 2, 4)), kernels=("IFFT",), dtypes=COMPLEX),
    # real FFTs (one row per dtype: the output dtype follows the input's)
    Row("signal.rfft/even_f32", S.rfft, lambda x: np.fft.rfft(x), normal((3, 8)),
        kernels=("RFFT",), dtypes=("float32",), out_dtype="complex64", grad=False),
    Row("signal.rfft/even", S.rfft, lambda x: np.fft.rfft(x), normal((3, 8)),
        kernels=("RFFT",), dtypes=("float64",), out_dtype="complex128"),
    Row("signal.rfft/odd", S.rfft, lambda x: np.fft.rfft(x), normal((2, 7)),
        kernels=("RFFT",), dtypes=("float64",), out_dtype="complex128"),
    Row("signal.rfft/fft_length_pads", lambda x: S.rfft(x, [10]),
        lambda x: np.fft.rfft(x, 10), normal((2, 7)), kernels=("RFFT",),
        dtypes=("float64",), out_dtype="complex128"),
    Row("signal.rfft/fft_length_crops", lambda x: S.rfft(x, [5]),
        lambda x: np.fft.rfft(x, 5), normal((2, 7)), kernels=("RFFT",),
        dtypes=("float64",), out_dtype="complex128"),
    Row("signal.rfft2d/batched", S.rfft2d, lambda x: np.fft.rfftn(x, axes=_axes(2)),
        normal((2, 3, 6)), kernels=("RFFT",), dtypes=("float64",), out_dtype="complex128"),
    Row("signal.rfft2d/f32_lengths", lambda x: S.rfft2d(x, [4, 5]),
        lambda x: np.fft.rfftn(x, (4, 5), axes=_axes(2)), normal((3, 6)),
        kernels=("RFFT",), dtypes=("float32",), out_dtype="complex64", grad=False),
    Row("signal.rfft3d/cube", S.rfft3d, lambda x: np.fft.rfftn(x, axes=_axes(3)),
        normal((2, 3, 5)), kernels=("RFFT",), dtypes=("float64",), out_dtype="complex128"),
    Row("signal.irfft/even", lambda x: S.irfft(x, [8]), lambda x: np.fft.irfft(x, 8),
        half_spectrum((3, 5)), kernels=("IRFFT",), dtypes=("float32", "float64"), empty=False,
        note=_EMPTY_IRFFT),
    Row("signal.irfft/odd", lambda x: S.irfft(x, [9]), lambda x: np.fft.irfft(x, 9),
        half_spectrum((2, 5)), kernels=("IRFFT",), dtypes=("float32", "float64"), empty=False,
        note=_EMPTY_IRFFT),
    Row("signal.irfft/fft_length_crops", lambda x: S.irfft(x, [4]),
        lambda x: np.fft.irfft(x, 4), half_spectrum((2, 5)), kernels=("IRFFT",),
        dtypes=("float64",)),
    Row("signal.irfft/fft_length_pads", lambda x: S.irfft(x, [14]),
        lambda x: np.fft.irfft(x, 14), half_spectrum((2, 5)), kernels=("IRFFT",),
        dtypes=("float64",)),
    Row("signal.irfft2d/batched", lambda x: S.irfft2d(x, [3, 6]),
        lambda x: np.fft.irfftn(x, (3, 6), axes=_axes(2)), half_spectrum((2, 3, 4)),
        kernels=("IRFFT",), dtypes=("float32", "float64"), empty=False,
        note=_EMPTY_IRFFT),
    Row("signal.irfft3d/cube", lambda x: S.irfft3d(x, [2, 3, 5]),
        lambda x: np.fft.irfftn(x, (2, 3, 5), axes=_axes(3)), half_spectrum((2, 3, 3)),
        kernels=("IRFFT",), dtypes=("float64",)),
    # framing
    Row("signal.frame/last_axis", lambda x: S.frame(x, 4, 3), lambda x: np_frame(x, 4, 3),
        normal((2, 11)), kernels=("GatherV2",), empty=False),
    Row("signal.frame/pad_end", lambda x: S.frame(x, 4, 3, pad_end=True, pad_value=0.5),
        lambda x: np_frame(x, 4, 3, True, 0.5), normal((2, 10)), kernels=("GatherV2",),
        empty=False),
    Row("signal.frame/axis0", lambda x: S.frame(x, 3, 2, axis=0),
        lambda x: np_frame(x, 3, 2, axis=0), normal((7, 3)), kernels=("GatherV2",),
        empty=False),
    # spectra
    Row("signal.stft/f32", lambda x: S.stft(x, 16, 8), lambda x: np_stft(x, 16, 8, 16),
        normal((2, 60)), kernels=("RFFT",), dtypes=("float32",), out_dtype="complex64",
        grad=False, rtol=1e-4, atol=1e-5, size1=False, empty=False),
    Row("signal.stft/padded_fft", lambda x: S.stft(x, 12, 5), lambda x: np_stft(x, 12, 5, 16),
        normal((2, 50)), kernels=("RFFT",), dtypes=("float64",), out_dtype="complex128",
        size1=False, empty=False),
    Row("signal.inverse_stft/default_window", lambda s: S.inverse_stft(s, 12, 4),
        lambda s: np_inverse_stft(s, 12, 4, 16), half_spectrum((2, 5, 9)),
        kernels=("IRFFT",), dtypes=("float32", "float64"), rtol=1e-4, atol=1e-5,
        size1=False, empty=False),
]
