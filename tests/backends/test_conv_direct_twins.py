"""The direct convolutions' NumPy twins (what runs while a loop compiles) sum in NumPy's
in-order reductions over an axis that is not the innermost (conv_direct `_pixel_sum`);
with one image and one filter the sum is left with one axis, summed by running sums
instead; the depthwise twins keep their temporaries: all give the compiled loops' bits
(signed zeros and NaN included)."""
import numpy as np
import pytest

from tapeflow._core import jit
from tapeflow.backends.numpy import conv_direct

rng = np.random.default_rng(31)

CASES = [  # (x shape, filter shape, strides, depthwise)
    ((1, 9, 8, 1), (3, 3, 1, 1), (1, 1), False),
    ((1, 10, 9, 1), (3, 2, 1, 1), (2, 1), True),
    ((2, 7, 7, 3), (3, 3, 1, 3), (1, 1), True),
]


@pytest.mark.parametrize("case", CASES, ids=["dense_one", "depthwise_one", "depthwise"])
def test_pixel_major_twins_give_the_loops_bits(case, monkeypatch):
    xs, ws, strides, depthwise = case
    xp = rng.standard_normal(xs).astype(np.float32)
    xp[0, 0, 0, 0], xp[0, 2, 3, -1] = -0.0, np.nan
    w = rng.standard_normal(ws).astype(np.float32)
    out = tuple((xs[1 + k] - ws[k]) // strides[k] + 1 for k in (0, 1))
    dy = rng.standard_normal((xs[0],) + out + (ws[-1],)).astype(np.float32)
    dy[0, 0, 0, 0] = -0.0
    grad = conv_direct.depthwise_filter_grad if depthwise else conv_direct.filter_grad
    forward = conv_direct.depthwise_forward if depthwise else conv_direct.forward

    def run():
        got = [forward(xp, w, None, out, strides, (1, 1), "Relu6"),
               *grad(xp, dy, ws[:2], strides, (1, 1))]
        if depthwise:
            got.append(conv_direct.depthwise_input_grad(dy, w, xs, strides, (1, 1)))
        return [g.tobytes() for g in got]
    monkeypatch.setattr(conv_direct, "_calls", {})
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 1 << 30)
    twins = run()
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    jit.wait_compiled()  # (other tests may have started the loops in the background)
    try:
        assert run() == twins
        loop = conv_direct._DEPTHWISE_FORWARD if depthwise else conv_direct._dense()[0]
        assert loop._jit is not None or not jit.available()  # (the loops ran)
    finally:
        jit.set_background(before)


def test_pixel_sum_is_the_running_sum_from_zero():
    v = rng.standard_normal((50, 3, 4)).astype(np.float32) * np.float32(1e4)
    v[:, 0, 0] = -0.0
    want = np.add.accumulate(v, axis=0)[-1] + np.float32(0)
    got = conv_direct._pixel_sum(v)
    assert got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(conv_direct._pixel_sum(v[:, :1, :1]), want[:1, :1])
