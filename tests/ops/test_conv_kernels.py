"""The convolution and pooling kernels on the cases their fast paths choose between, against
the loop references of rows_conv.py: both im2col layouts (tap-major for few channels,
row-major for many), and max pooling's argmax rule (the first maximum of a window wins
ties; a NaN counts as the maximum, as np.argmax does) with finite and non-finite
gradients (a product with the mask would turn inf * 0 into NaN)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tests.ops.rows_conv import (_pool_windows, ref_conv_filter_grad, ref_conv_nhwc, ref_max_pool,
                                 ref_max_pool_grad)

rng = np.random.default_rng(7)


def run(op, inputs, **attrs):
    return tf.engine.run_kernel(op, {k: tf.constant(v) for k, v in inputs.items()},
                                attrs).numpy()


# (x shape, filter shape, strides, padding, dilations): C * KW small (tap-major im2col)
# and large (row-major), strided, dilated, padded.
CONV_CASES = {
    "c1_valid": ((3, 9, 8, 1), (3, 3, 1, 4), (1, 1), "VALID", (1, 1)),
    "c1_same_stride2": ((2, 9, 10, 1), (3, 3, 1, 5), (2, 2), "SAME", (1, 1)),
    "c2_explicit_dilated": ((2, 8, 9, 2), (2, 3, 2, 3), (1, 2), ((1, 2), (0, 1)), (2, 1)),
    "c3_same": ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    "c8_same": ((2, 7, 6, 8), (3, 3, 8, 5), (1, 1), "SAME", (1, 1)),
    "c16_valid_stride2": ((2, 9, 9, 16), (3, 2, 16, 4), (2, 2), "VALID", (1, 1)),
    "c5_dilated": ((1, 9, 9, 5), (2, 2, 5, 3), (1, 1), "VALID", (2, 2)),
}


def _conv_case(name, dtype=np.float64):
    xs, ws, s, p, d = CONV_CASES[name]
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    attrs = {"strides": s, "padding": p, "dilations": d, "data_format": "NHWC", "groups": 1}
    return x, w, attrs


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv2d_and_its_adjoints(name):
    """Conv2D equals the loop reference; Conv2DBackpropFilter equals its reference;
    Conv2DBackpropInput is the adjoint of Conv2D in x: <conv(x, w), dy> = <x, dx>."""
    x, w, attrs = _conv_case(name)
    y = run("Conv2D", {"x": x, "filters": w}, **attrs)
    np.testing.assert_allclose(y, ref_conv_nhwc(x, w, attrs["strides"], attrs["padding"],
                                                attrs["dilations"]), rtol=1e-10, atol=1e-10)
    dy = rng.standard_normal(y.shape)
    dw = run("Conv2DBackpropFilter", {"x": x, "dy": dy}, **attrs, filter_hw=w.shape[:2])
    np.testing.assert_allclose(dw, ref_conv_filter_grad(x, dy, w.shape[:2], attrs["strides"],
                                                        attrs["padding"], attrs["dilations"]),
                               rtol=1e-10, atol=1e-10)
    dx = run("Conv2DBackpropInput", {"dy": dy, "filters": w}, **attrs, input_hw=x.shape[1:3])
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)


@pytest.mark.parametrize("name", ["c1_valid", "c3_same", "c8_same"])
def test_conv2d_float16_computes_in_float32(name):
    x, w, attrs = _conv_case(name, np.float16)
    y = run("Conv2D", {"x": x, "filters": w}, **attrs)
    assert y.dtype == np.float16
    want = ref_conv_nhwc(x.astype(np.float64), w.astype(np.float64), attrs["strides"],
                         attrs["padding"], attrs["dilations"])
    np.testing.assert_allclose(y, want, rtol=1e-2, atol=2e-2)


# --------------------------------------------------------------------------- max pooling

# On inputs of height 6 and width 8 (or 7, 9): windows that tile the input exactly, leave
# a ragged edge, overlap, or need padding.
POOLS = {"valid_2x2": ((2, 2), (2, 2), "VALID"), "valid_3x3_ragged": ((3, 3), (3, 3), "VALID"),
         "same_overlap_3x3": ((3, 3), (2, 2), "SAME"), "same_2x2": ((2, 2), (2, 2), "SAME"),
         "stride1_2x3": ((2, 3), (1, 1), "SAME")}


def _pool_attrs(name):
    k, s, p = POOLS[name]
    return {"ksize": k, "strides": s, "padding": p, "data_format": "NHWC"}


def _gather_ref(x, dx, name):
    """dx at each window's first maximum (np.argmax over the window, padding -inf)."""
    k, s, p = POOLS[name]
    out = np.zeros(ref_max_pool(x, k, s, p).shape, dx.dtype)
    for (i, j, wx, *_), (_, _, wd, *_) in zip(_pool_windows(x, k, s, p, -np.inf),
                                            _pool_windows(dx, k, s, p, 0.0)):
        for n, c in np.ndindex(x.shape[0], x.shape[3]):
            out[n, i, j, c] = wd[n, :, :, c].ravel()[np.argmax(wx[n, :, :, c])]
    return out


def _tied(shape):
    """Values from {0, 1, 2}: most windows hold their maximum more than once."""
    return rng.integers(0, 3, shape).astype(np.float32)


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_grad_ties_go_to_the_first_maximum(name):
    attrs = _pool_attrs(name)
    x = _tied((2, 6, 8, 3))
    y = run("MaxPool", {"x": x}, **attrs)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    got = run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs)
    np.testing.assert_allclose(got, ref_max_pool_grad(x, dy, *POOLS[name]), rtol=1e-6,
                               atol=1e-6)
    dx = rng.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_array_equal(run("MaxPoolGradGrad", {"x": x, "dx": dx}, **attrs),
                                  _gather_ref(x, dx, name))


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_nan_is_the_maximum(name):
    attrs = _pool_attrs(name)
    x = _tied((1, 6, 9, 2))
    x[0, 1, 1, 0] = x[0, 2, 3, 1] = x[0, 3, 3, 1] = np.nan
    y = run("MaxPool", {"x": x}, **attrs)
    np.testing.assert_array_equal(y, ref_max_pool(x, *POOLS[name]))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    got = run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs)
    np.testing.assert_allclose(got, ref_max_pool_grad(x, dy, *POOLS[name]), rtol=1e-6,
                               atol=1e-6)
    dx = rng.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_array_equal(run("MaxPoolGradGrad", {"x": x, "dx": dx}, **attrs),
                                  _gather_ref(x, dx, name))


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_max_pool_nonfinite_gradients_stay_at_the_argmax(name, bad):
    """An inf or NaN in dy (dx) reaches only its window's argmax (gathered value only)."""
    attrs = _pool_attrs(name)
    x = rng.standard_normal((2, 6, 8, 2)).astype(np.float32)
    y = run("MaxPool", {"x": x}, **attrs)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dy[0, 1, 1, 0] = bad
    got = run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs)
    want = ref_max_pool_grad(x, dy, *POOLS[name])
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    dx = rng.standard_normal(x.shape).astype(np.float32)
    dx[0, 2, 2, 1] = bad
    dx[1, 3, 4, 0] = bad
    np.testing.assert_array_equal(run("MaxPoolGradGrad", {"x": x, "dx": dx}, **attrs),
                                  _gather_ref(x, dx, name))


@pytest.mark.parametrize("name", ["valid_2x2", "same_overlap_3x3"])
def test_max_pool_loops_split_the_batch_over_threads_with_equal_results(name):
    """Large poolings run their loop on batch parts in the intra-op threads when that is
    measured faster: both choices (ThreadChoice tries each in its first calls) give the
    reference's values, ties and NaN included."""
    from tapeflow.backends.numpy import conv
    attrs = _pool_attrs(name)
    x = _tied((5, 128, 64, 8))  # 327,680 elements: above SPLIT_POOLING_FROM
    assert x.size >= conv.SPLIT_POOLING_FROM
    x[1, 5, 7, 2] = x[4, 60, 1, 7] = np.nan
    y_ref = ref_max_pool(x, *POOLS[name])
    dy = rng.standard_normal(y_ref.shape).astype(np.float32)
    dx = rng.standard_normal(x.shape).astype(np.float32)
    want = ref_max_pool_grad(x, dy, *POOLS[name]), _gather_ref(x, dx, name)
    before = tf.config.threading.get_intra_op_parallelism_threads()
    tf.config.threading.set_intra_op_parallelism_threads(2)
    try:
        # (the loops compile in the background on their first calls: wait for them)
        run("MaxPool", {"x": x}, **attrs)
        run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs)
        run("MaxPoolGradGrad", {"x": x, "dx": dx}, **attrs)
        jit.wait_compiled()
        for _ in range(5):
            np.testing.assert_array_equal(run("MaxPool", {"x": x}, **attrs), y_ref)
            np.testing.assert_allclose(run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs),
                                       want[0], rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(run("MaxPoolGradGrad", {"x": x, "dx": dx}, **attrs),
                                          want[1])
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(before)
    # (this test's padded inputs only: other tests' poolings leave choices of their own)
    tried = [c for (mode, shape, *_), c in conv._POOL_CHOICES.items()
             if mode == 1 and shape[0] == 5 and shape[1] >= 128 and shape[2] >= 64
             and shape[3] == 8]
    assert tried and all(min(c.runs) >= 2 for c in tried)  # both ways ran, twice each


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_max_pool_grad_exact_dtypes(dtype):
    attrs = _pool_attrs("same_overlap_3x3")
    x = rng.integers(-3, 3, (2, 7, 6, 2)).astype(dtype)
    y = run("MaxPool", {"x": x}, **attrs)
    dy = rng.integers(-5, 5, y.shape).astype(dtype)
    got = run("MaxPoolGrad", {"x": x, "dy": dy}, **attrs)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref_max_pool_grad(x, dy, (3, 3), (2, 2), "SAME"))



def test_scratch_buffers_never_leak_into_results():
    """im2col and padded inputs live in per-thread scratch reused by the next call: earlier
    results keep their values, also with calls running in other threads at once (BLAS
    releases the GIL while it reads the im2col matrix)."""
    import threading
    x, w, attrs = _conv_case("c1_same_stride2")
    first = run("Conv2D", {"x": x, "filters": w}, **attrs)
    want = ref_conv_nhwc(x, w, attrs["strides"], attrs["padding"], attrs["dilations"])
    big = {**attrs, "strides": (1, 1)}
    xs = [rng.standard_normal((8, 40, 40, 1)) for _ in range(4)]
    serial = [run("Conv2D", {"x": xb, "filters": w}, **big) for xb in xs]
    errors = []

    def other(offset):
        for k in range(40):
            i = (k + offset) % len(xs)
            # (equal to rounding: a direct loop may take over from im2col meanwhile)
            if not np.allclose(run("Conv2D", {"x": xs[i], "filters": w}, **big), serial[i],
                               rtol=1e-12, atol=1e-12):
                errors.append(i)

    threads = [threading.Thread(target=other, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    other(3)
    for t in threads:
        t.join()
    assert errors == []
    np.testing.assert_allclose(first, want, rtol=1e-10, atol=1e-10)
