"""Conv2DBackpropInput of a stride-1 convolution runs as a forward convolution of dy with
the flipped, channel-swapped filters (backends/numpy/conv.py `_input_grad_by_forward`):
checked against the adjoint written tap by tap in float64, for SAME, VALID, explicit and
dilated geometries and NCHW; explicit pads past the filter's reach take the scatter path.
A 1x1 filter's gradient is x^T dy on the rows as they are (no im2col copy)."""
import numpy as np
import pytest

from tapeflow.backends.numpy import conv as np_conv

rng = np.random.default_rng(7)


def _adjoint(dy, w, hw, pads, dilations):
    """dx[n, i, j, c] = sum over taps and filters of dy at the windows reading (i, j)."""
    n, oh, ow, o = dy.shape
    kh, kw, c, _ = w.shape
    (pt, pb), (pl, pr) = pads
    dxp = np.zeros((n, hw[0] + pt + pb, hw[1] + pl + pr, c))
    for a in range(kh):
        for b in range(kw):
            r, q = a * dilations[0], b * dilations[1]
            dxp[:, r:r + oh, q:q + ow, :] += dy @ w[a, b].T
    return dxp[:, pt:pt + hw[0], pl:pl + hw[1], :]


CASES = [((2, 7, 6, 8), (3, 3, 8, 8), "SAME", (1, 1)),
         ((2, 7, 6, 12), (3, 2, 12, 5), "VALID", (1, 1)),
         ((1, 9, 8, 8), (3, 3, 8, 8), ((2, 0), (1, 2)), (1, 1)),
         ((2, 9, 9, 16), (3, 3, 16, 16), "SAME", (2, 2)),
         ((2, 5, 5, 8), (1, 1, 8, 4), "VALID", (1, 1)),
         ((2, 5, 4, 3), (1, 1, 3, 12), "SAME", (1, 1))]  # 1x1: any channel counts


@pytest.mark.parametrize("x_shape, w_shape, padding, dilations", CASES)
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_matches_the_tap_adjoint(x_shape, w_shape, padding, dilations, fmt, monkeypatch):
    calls = []
    real = np_conv._input_grad_by_forward
    monkeypatch.setattr(np_conv, "_input_grad_by_forward",
                        lambda *a: calls.append(1) or real(*a))
    hw = x_shape[1:3]
    attrs = {"strides": (1, 1), "padding": padding, "dilations": dilations,
             "data_format": fmt, "groups": 1, "input_hw": hw}
    out, pads = np_conv._geometry(hw, w_shape[:2], attrs)
    dy = rng.normal(size=(x_shape[0],) + out + (w_shape[3],))
    w = rng.normal(size=w_shape)
    want = _adjoint(dy, w, hw, pads, dilations)
    arg = dy if fmt == "NHWC" else dy.transpose(0, 3, 1, 2)
    got = np_conv.conv2d_backprop_input({"dy": arg, "filters": w}, attrs, None)
    if fmt == "NCHW":
        got = got.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert calls  # the forward formulation ran


def test_pads_past_the_reach_take_the_scatter_path(monkeypatch):
    hw, w = (6, 6), rng.normal(size=(3, 3, 8, 8))
    attrs = {"strides": (1, 1), "padding": ((3, 0), (0, 0)), "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1, "input_hw": hw}
    out, pads = np_conv._geometry(hw, (3, 3), attrs)
    dy = rng.normal(size=(2,) + out + (8,))
    got = np_conv.conv2d_backprop_input({"dy": dy, "filters": w}, attrs, None)
    np.testing.assert_allclose(got, _adjoint(dy, w, hw, pads, (1, 1)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_pointwise_filter_gradient_is_the_rows_product(fmt):
    x, dy = rng.normal(size=(3, 4, 5, 6)), rng.normal(size=(3, 4, 5, 7))
    attrs = {"strides": (1, 1), "padding": "VALID", "dilations": (1, 1), "data_format": fmt,
             "groups": 1, "filter_hw": (1, 1)}
    args = (x, dy) if fmt == "NHWC" else (x.transpose(0, 3, 1, 2), dy.transpose(0, 3, 1, 2))
    got = np_conv.conv2d_backprop_filter({"x": args[0], "dy": args[1]}, attrs, None)
    want = np.einsum("nhwc,nhwo->co", x, dy)[None, None]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
