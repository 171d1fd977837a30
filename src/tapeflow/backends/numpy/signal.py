"""NumPy kernels of the spectral ops: complex and real FFTs over the innermost axes, by
NumPy's pocketfft (which keeps single precision: complex64 in, complex64 out). One axis
goes through np.fft.fft and friends: the n-dimensional functions take ~3x longer."""
import numpy as np

from ._kernel import kernel


def _axes(rank: int) -> tuple:
    return tuple(range(-rank, 0))


def _empty_result(x: np.ndarray, shape: tuple, dtype) -> np.ndarray | None:
    """Zeros of `shape` when there is nothing to transform (pocketfft refuses a length of
    0; TensorFlow returns zeros of the result's shape), else None."""
    if x.size == 0 or 0 in shape:
        return np.zeros(shape, dtype)
    return None


@kernel("FFT")
def fft(inputs, attrs, backend):
    """The complex DFT over the last `rank` axes."""
    x = inputs["x"]
    empty = _empty_result(x, x.shape, x.dtype)
    if empty is not None:
        return empty
    rank = attrs["rank"]
    out = np.fft.fft(x) if rank == 1 else np.fft.fftn(x, axes=_axes(rank))
    return out.astype(x.dtype, copy=False)


@kernel("IFFT")
def ifft(inputs, attrs, backend):
    """The inverse complex DFT (scaled by 1/n) over the last `rank` axes."""
    x = inputs["x"]
    empty = _empty_result(x, x.shape, x.dtype)
    if empty is not None:
        return empty
    rank = attrs["rank"]
    out = np.fft.ifft(x) if rank == 1 else np.fft.ifftn(x, axes=_axes(rank))
    return out.astype(x.dtype, copy=False)


_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}
_REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


@kernel("RFFT")
def rfft(inputs, attrs, backend):
    """The DFT of a real signal over the last `rank` axes; the last axis keeps its
    n // 2 + 1 non-negative frequencies."""
    x = inputs["x"]
    out_dtype = _COMPLEX_OF[x.dtype]
    shape = x.shape[:-1] + (x.shape[-1] // 2 + 1 if x.shape[-1] else 0,)
    empty = _empty_result(x, shape, out_dtype)
    if empty is not None:
        return empty
    rank = attrs["rank"]
    out = np.fft.rfft(x) if rank == 1 else np.fft.rfftn(x, axes=_axes(rank))
    return out.astype(out_dtype, copy=False)


@kernel("IRFFT")
def irfft(inputs, attrs, backend):
    """The real signal of `fft_length` samples (per transformed axis) whose half spectrum
    is `x`; the imaginary parts a real signal cannot have are ignored, as pocketfft and
    TensorFlow do."""
    x, lengths = inputs["x"], tuple(attrs["fft_length"])
    out_dtype = _REAL_OF[x.dtype]
    shape = x.shape[:x.ndim - len(lengths)] + lengths
    empty = _empty_result(x, shape, out_dtype)
    if empty is not None:
        return empty
    if len(lengths) == 1:
        out = np.fft.irfft(x, lengths[0])
    else:
        out = np.fft.irfftn(x, s=lengths, axes=_axes(len(lengths)))
    return out.astype(out_dtype, copy=False)
