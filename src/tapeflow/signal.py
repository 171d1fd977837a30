"""`tapeflow.signal`: FFTs, framing, windows, STFTs, mel matrices, DCTs and MFCCs, as
TensorFlow's tf.signal."""
from .ops.signal import (dct, fft, fft2d, fft3d, fftshift, frame,  # noqa: F401
                         hamming_window, hann_window, idct, ifft, ifft2d, ifft3d, ifftshift,
                         inverse_mdct, inverse_stft, inverse_stft_window_fn, irfft, irfft2d,
                         irfft3d, kaiser_bessel_derived_window, kaiser_window,
                         linear_to_mel_weight_matrix, mdct, mfccs_from_log_mel_spectrograms,
                         overlap_and_add, rfft, rfft2d, rfft3d, stft, vorbis_window)

__all__ = ["dct", "fft", "fft2d", "fft3d", "fftshift", "frame", "hamming_window",
           "hann_window", "idct", "ifft", "ifft2d", "ifft3d", "ifftshift", "inverse_mdct",
           "inverse_stft", "inverse_stft_window_fn", "irfft", "irfft2d", "irfft3d",
           "kaiser_bessel_derived_window", "kaiser_window", "linear_to_mel_weight_matrix",
           "mdct", "mfccs_from_log_mel_spectrograms", "overlap_and_add", "rfft", "rfft2d",
           "rfft3d", "stft", "vorbis_window"]
