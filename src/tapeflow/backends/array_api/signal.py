"""Array-API kernels of the spectral ops, by the standard's fft extension (xp.fft): the
same four kernels as NumPy's (FFT, IFFT, RFFT, IRFFT over the innermost `rank` axes)."""
from ._kernel import xp_kernel


def _axes(rank: int) -> tuple:
    return tuple(range(-rank, 0))


def _transform(b, x, fn, shape, dtype, **kwargs):
    """`fn(x, axes=..., **kwargs)` in `dtype`, or zeros of `shape` when there is nothing
    to transform (as NumPy's kernel: the standard leaves a length of 0 undefined)."""
    xp = b.xp
    if 0 in x.shape or 0 in shape:
        return xp.zeros(shape, dtype=dtype)
    return xp.astype(fn(x, **kwargs), dtype)


@xp_kernel("FFT")
def fft(inputs, attrs, b):
    x = inputs["x"]
    return _transform(b, x, b.xp.fft.fftn, x.shape, x.dtype, axes=_axes(attrs["rank"]))


@xp_kernel("IFFT")
def ifft(inputs, attrs, b):
    x = inputs["x"]
    return _transform(b, x, b.xp.fft.ifftn, x.shape, x.dtype, axes=_axes(attrs["rank"]))


@xp_kernel("RFFT")
def rfft(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    dtype = xp.complex64 if x.dtype == xp.float32 else xp.complex128
    shape = tuple(x.shape[:-1]) + (x.shape[-1] // 2 + 1 if x.shape[-1] else 0,)
    return _transform(b, x, xp.fft.rfftn, shape, dtype, axes=_axes(attrs["rank"]))


@xp_kernel("IRFFT")
def irfft(inputs, attrs, b):
    xp, x, lengths = b.xp, inputs["x"], tuple(attrs["fft_length"])
    dtype = xp.float32 if x.dtype == xp.complex64 else xp.float64
    shape = tuple(x.shape[:len(x.shape) - len(lengths)]) + lengths
    return _transform(b, x, xp.fft.irfftn, shape, dtype, s=lengths,
                      axes=_axes(len(lengths)))
