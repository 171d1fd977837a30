"""tf.signal against TensorFlow 2.21: values, dtypes and gradients of every case in
fixtures/signal_cases.py (recorded by fixtures/make_signal.py into signal_tf.npz), the
issue's tone spectrogram, traced use with an unknown batch, gradients of spectrogram
losses against central differences, and TensorFlow's argument errors."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tests.ops.fixtures.signal_cases import CASES, gradient, tone

FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "signal_tf.npz"))


def _outputs(name):
    outs, k = [], 0
    while f"{name}/out{k}" in FIXTURE:
        outs.append(FIXTURE[f"{name}/out{k}"])
        k += 1
    return outs


def _close(got, want, name):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, TensorFlow {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, TensorFlow {want.dtype}"
    single = want.dtype in (np.float32, np.complex64)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4 if single else 1e-9,
                               atol=(2e-5 if single else 1e-11) * scale, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    fn, _ = CASES[name]
    inputs = [FIXTURE[f"{name}/in{k}"] for k in range(len(CASES[name][1]))]
    out = fn(tf, *[tf.constant(x) for x in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    want = _outputs(name)
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        _close(tf.convert_to_tensor(o).numpy(), w, name)


def test_tone_spectrogram_matches_tensorflow_to_1e_4():
    """The issue's check: |stft| of a 440 Hz tone at 16 kHz, frame 256, step 128."""
    x = tone()
    np.testing.assert_array_equal(x, FIXTURE["spectrogram_tone/in0"])
    got = tf.abs(tf.signal.stft(tf.constant(x), frame_length=256, frame_step=128)).numpy()
    want = FIXTURE["spectrogram_tone/out0"]
    assert got.shape == want.shape == (30, 129) and got.dtype == np.float32
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(want)
    # (and the peak is at 440 Hz: bin 440 / (16000 / 256) = 7.04)
    assert set(np.argmax(got, axis=1)) == {7}


def test_traced_with_unknown_batch():
    """stft -> mel -> mfccs and back through inverse_stft under tf.function with a None
    batch (and a None length for frame), one trace serving two batch sizes."""
    mel = tf.signal.linear_to_mel_weight_matrix(40, 129, 16000, 80.0, 7600.0)

    @tf.function(input_signature=[tf.TensorSpec([None, 4000])])
    def features(x):
        spectrogram = tf.abs(tf.signal.stft(x, 256, 128))
        log_mel = tf.math.log(tf.tensordot(spectrogram, mel, 1) + 1e-6)
        return tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :13]

    @tf.function(input_signature=[tf.TensorSpec([None, None, 129], tf.complex64)])
    def resynthesize(s):
        return tf.signal.inverse_stft(s, 256, 128)

    @tf.function(input_signature=[tf.TensorSpec([None, None])])
    def frames(x):
        return tf.signal.frame(x, 5, 2, pad_end=True), tf.signal.frame(x, 5, 2)

    x = np.stack([tone(), tone(hertz=1000.0)])
    want = CASES["mfcc_pipeline"][0](tf, x[:1])
    for batch in (x[:1], x):
        got = features(tf.constant(batch))
        assert got.shape == (len(batch), 30, 13)
        _close(got.numpy()[:1], want.numpy(), "traced mfccs")
    s = tf.signal.stft(tf.constant(x), 256, 128)
    _close(resynthesize(s).numpy(), tf.signal.inverse_stft(s, 256, 128).numpy(), "traced istft")
    for n in (9, 10):
        signal = np.arange(2 * n, dtype=np.float32).reshape(2, n)
        padded, whole = frames(tf.constant(signal))
        np.testing.assert_array_equal(padded.numpy(),
                                      tf.signal.frame(signal, 5, 2, pad_end=True).numpy())
        np.testing.assert_array_equal(whole.numpy(), tf.signal.frame(signal, 5, 2).numpy())


def _central_difference(loss, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (float(loss(tf.constant(up))) - float(loss(tf.constant(down)))) / (2 * eps)
    return grad


def test_spectrogram_loss_gradient_matches_central_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(120)
    w = rng.standard_normal((5, 33))

    def loss(a):
        return tf.reduce_sum(tf.abs(tf.signal.stft(a, 48, 16, fft_length=64)) * w)

    (got,) = gradient(tf, loss, x)
    np.testing.assert_allclose(got.numpy(), _central_difference(loss, x), rtol=1e-6,
                               atol=1e-7)


def test_inverse_stft_gradient_matches_central_differences():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((4, 9)) + 1j * rng.standard_normal((4, 9))
    w = rng.standard_normal(28)

    def loss(re, im):
        return tf.reduce_sum(tf.signal.inverse_stft(tf.complex(re, im), 16, 4) * w)

    got_re, got_im = gradient(tf, loss, s.real.copy(), s.imag.copy())
    want_re = _central_difference(lambda a: loss(a, tf.constant(s.imag)), s.real.copy())
    want_im = _central_difference(lambda a: loss(tf.constant(s.real), a), s.imag.copy())
    np.testing.assert_allclose(got_re.numpy(), want_re, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_im.numpy(), want_im, rtol=1e-6, atol=1e-7)


def test_inverse_stft_reconstructs_the_signal():
    x = np.random.default_rng(5).standard_normal(400).astype(np.float32)
    s = tf.signal.stft(x, 64, 16)
    y = tf.signal.inverse_stft(s, 64, 16, window_fn=tf.signal.inverse_stft_window_fn(16))
    np.testing.assert_allclose(y.numpy()[64:-64], x[64:len(y.numpy()) - 64], atol=1e-5)


@pytest.mark.parametrize("call, error", [
    (lambda: tf.signal.fft(tf.constant([1.0, 2.0])), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.rfft(tf.constant([1 + 1j])), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.fft2d(tf.constant([1j])), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.rfft(tf.ones([4]), [4, 4]), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.hann_window(4, dtype=tf.int32), ValueError),
    (lambda: tf.signal.linear_to_mel_weight_matrix(0), ValueError),
    (lambda: tf.signal.linear_to_mel_weight_matrix(upper_edge_hertz=5000.0), ValueError),
    (lambda: tf.signal.linear_to_mel_weight_matrix(lower_edge_hertz=4000.0), ValueError),
    (lambda: tf.signal.dct(tf.ones([4]), type=5), ValueError),
    (lambda: tf.signal.dct(tf.ones([4]), type=1, norm="ortho"), ValueError),
    (lambda: tf.signal.dct(tf.ones([4]), norm="forward"), ValueError),
    (lambda: tf.signal.dct(tf.ones([4]), axis=0), NotImplementedError),
    (lambda: tf.signal.frame(tf.constant(1.0), 2, 1), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.overlap_and_add(tf.ones([4]), 2), tf.errors.InvalidArgumentError),
    (lambda: tf.signal.mdct(tf.ones([20]), 10), ValueError),
    (lambda: tf.signal.kaiser_window(4, dtype=tf.int64), ValueError),
])
def test_tensorflow_errors(call, error):
    with pytest.raises(error):
        call()


def test_names_and_defaults_are_tensorflows():
    import inspect
    sig = inspect.signature(tf.signal.stft)
    assert list(sig.parameters) == ["signals", "frame_length", "frame_step", "fft_length",
                                    "window_fn", "pad_end", "name"]
    assert sig.parameters["window_fn"].default is tf.signal.hann_window
    sig = inspect.signature(tf.signal.linear_to_mel_weight_matrix)
    assert [p.default for p in sig.parameters.values()][:5] == [20, 129, 8000, 125.0, 3800.0]
    sig = inspect.signature(tf.signal.frame)
    assert list(sig.parameters) == ["signal", "frame_length", "frame_step", "pad_end",
                                    "pad_value", "axis", "name"]
    assert list(inspect.signature(tf.signal.rfft).parameters) == ["input_tensor",
                                                                 "fft_length", "name"]


_rng = np.random.default_rng(11)
COMPOSITES = {  # composites outside the op table (they need static inner dims)
    "overlap_and_add": (lambda x: tf.signal.overlap_and_add(x, 3), _rng.standard_normal(
        (2, 4, 7))),
    "overlap_and_add_touching": (lambda x: tf.signal.overlap_and_add(x, 4),
                                 _rng.standard_normal((3, 4))),
    "dct1": (lambda x: tf.signal.dct(x, type=1), _rng.standard_normal((2, 6))),
    "dct2_ortho": (lambda x: tf.signal.dct(x, norm="ortho"), _rng.standard_normal((2, 7))),
    "dct3": (lambda x: tf.signal.dct(x, type=3), _rng.standard_normal((2, 6))),
    "dct4_ortho": (lambda x: tf.signal.dct(x, type=4, norm="ortho"),
                   _rng.standard_normal((2, 5))),
    "idct2_n": (lambda x: tf.signal.idct(x, n=8), _rng.standard_normal((2, 6))),
    "mfccs": (tf.signal.mfccs_from_log_mel_spectrograms, _rng.standard_normal((2, 3, 10))),
    "fftshift": (tf.signal.fftshift, _rng.standard_normal((4, 5))),
    "mdct_kbd": (lambda x: tf.signal.mdct(
        x, 8, window_fn=tf.signal.kaiser_bessel_derived_window), _rng.standard_normal(30)),
    "inverse_mdct_ortho": (lambda x: tf.signal.inverse_mdct(x, norm="ortho"),
                           _rng.standard_normal((3, 4))),
    "inverse_stft_window_fn": (lambda s: tf.signal.inverse_stft(
        tf.complex(s, s * 0.5), 12, 4, window_fn=tf.signal.inverse_stft_window_fn(4)),
        _rng.standard_normal((5, 9))),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_derivatives_match_central_differences(name):
    """VJP and JVP, to second order, against central differences (float64)."""
    fn, x = COMPOSITES[name]
    tf.test.check_gradients(fn, [x], order=2, rtol=1e-6, atol=1e-7)


def test_dct_matches_scipy_definitions():
    scipy_fft = pytest.importorskip("scipy.fft")
    x = _rng.standard_normal((3, 8))
    for kind in (1, 2, 3, 4):
        np.testing.assert_allclose(tf.signal.dct(x, type=kind).numpy(),
                                   scipy_fft.dct(x, type=kind), rtol=1e-10, atol=1e-12)
    for kind in (2, 3, 4):
        np.testing.assert_allclose(tf.signal.dct(x, type=kind, norm="ortho").numpy(),
                                   scipy_fft.dct(x, type=kind, norm="ortho"), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(tf.signal.idct(tf.signal.dct(x, norm="ortho"),
                                              norm="ortho").numpy(), x, atol=1e-12)
