"""The NumPy backend's Softmax, SoftmaxGrad and SparseSoftmaxCrossEntropyWithLogits over
the last axis (backends/numpy/nn.py):
each row summed in a fixed lane order that the compiled loops and the NumPy lines both
follow, so a program's first calls (NumPy) and its later ones (the loops) give the same
bits; NaN, infinities, rows of 1 to 1000 elements and both float widths included."""
import numpy as np
import pytest

from tapeflow._core import jit
from tapeflow.backends.numpy import nn as np_nn

rng = np.random.default_rng(17)


def _case(shape, dtype):
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    if flat.shape[0] >= 4 and shape[-1] >= 2:
        flat[0, 1] = np.nan        # a NaN: its row is NaN
        flat[1, :] = -np.inf       # every element -inf: NaN (as -inf - -inf)
        flat[2, 0] = np.inf        # an inf: NaN in that row (inf - inf)
        flat[3, -1] = 80.0         # a large logit: exp(0) = 1 at it, no overflow
    dy = rng.standard_normal(shape).astype(dtype)
    return x, dy


def _run(x, dy):
    y = np_nn.softmax({"logits": x}, {"axis": -1}, None)
    g = np_nn.softmax_grad({"dy": dy, "y": y}, {"axis": -1}, None)
    labels = np.arange(x.size // x.shape[-1]).reshape(x.shape[:-1]) % x.shape[-1]
    loss, backprop = np_nn.sparse_softmax_cross_entropy({"labels": labels, "logits": x},
                                                        {}, None)
    return y, g, loss, backprop


@pytest.mark.parametrize("shape", [(5, 1), (6, 7), (4, 8), (6, 9), (2, 3, 33), (4, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loops_give_the_numpy_lines_bits(shape, dtype, monkeypatch):
    x, dy = _case(shape, dtype)
    monkeypatch.setattr(np_nn, "ROWS_FROM", 1)  # (the loops from any size)
    monkeypatch.setattr(np_nn, "_loop_calls", {})
    monkeypatch.setattr(np_nn, "_COMPILE_AFTER", 1 << 30)
    twins = _run(x, dy)
    monkeypatch.setattr(np_nn, "_COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    jit.wait_compiled()
    try:
        looped = _run(x, dy)
        assert np_nn._DIVIDE_ROWS._jit is not None or not jit.available()  # (they ran)
    finally:
        jit.set_background(before)
    for a, b in zip(twins, looped):
        assert a.dtype == dtype and a.shape in (shape, shape[:-1])
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("rows_from", [1, 1 << 40])  # the lane order; the plain lines
@pytest.mark.parametrize("shape", [(6, 7), (3, 2, 16), (2, 1000)])
def test_values_against_a_float64_reference(shape, rows_from, monkeypatch):
    monkeypatch.setattr(np_nn, "ROWS_FROM", rows_from)
    x, dy = _case(shape, np.float32)
    y, g, loss, backprop = _run(x, dy)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    with np.errstate(invalid="ignore"):  # (the rows made NaN on purpose)
        e = np.exp(x64 - np.max(x64, axis=-1, keepdims=True))
    want = e / np.sum(e, axis=-1, keepdims=True)
    want_g = want * (dy64 - np.sum(dy64 * want, axis=-1, keepdims=True))
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(g, want_g, rtol=1e-5, atol=1e-6)
    labels = np.arange(y.size // shape[-1]).reshape(shape[:-1]) % shape[-1]
    picked = np.take_along_axis(want, labels[..., None], axis=-1)[..., 0]
    ok = np.isfinite(picked)
    np.testing.assert_allclose(loss[ok], -np.log(picked[ok]), rtol=1e-5, atol=1e-6)
    one_hot = np.eye(shape[-1])[labels]
    np.testing.assert_allclose(backprop[ok], (want - one_hot)[ok], rtol=1e-5, atol=1e-6)
    flat = y.reshape(-1, shape[-1])
    if flat.shape[0] >= 4:
        assert np.isnan(flat[:3]).all() and flat[3, -1] == 1.0


def test_lane_sums_add_each_lane_in_turn_then_the_lanes():
    a = np.arange(1.0, 20.0).reshape(1, 19)  # 19 = two rows of 8 lanes and 3 more
    lanes = [a[0, j::8] for j in range(8)]
    want = 0.0
    for lane in lanes:
        total = 0.0
        for v in lane:
            total += v
        want += total
    assert np_nn._lane_sums(a)[0] == want == 190.0
    # float32, in float32: each lane from zero, then the lanes left to right
    b = np.concatenate([[3e7], rng.uniform(0, 4, 20)]).astype(np.float32)[None]
    lane_totals = []
    for j in range(8):
        total = np.float32(0)
        for v in b[0, j::8]:
            total = np.float32(total + v)
        lane_totals.append(total)
    want = lane_totals[0]
    for t in lane_totals[1:]:
        want = np.float32(want + t)
    assert np_nn._lane_sums(b)[0] == want


def test_other_axes_half_precision_and_small_arrays_take_the_plain_formulation():
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    y = np_nn.softmax({"logits": x}, {"axis": 1}, None)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-6)
    h = np_nn.softmax({"logits": x.astype(np.float16)}, {"axis": -1}, None)
    assert h.dtype == np.float16
    np.testing.assert_allclose(h.astype(np.float32).sum(axis=-1), 1.0, rtol=2e-3)
    assert np_nn._rows(x, 1) is None and np_nn._rows(x.astype(np.float16), -1) is None
    # below ROWS_FROM elements the plain lines run (chosen from the shape alone)
    assert np_nn._rows(x, -1) is None
    big = np.zeros((np_nn.ROWS_FROM // 8, 8), np.float32)
    assert np_nn._rows(big, -1).shape == big.shape
