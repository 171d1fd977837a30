"""The NumPy convolution and pooling kernels' blocked and scratch paths
(backends/numpy/conv.py), against float64 references written tap by tap here:

- Conv2D's im2col product and the filter gradient's run in blocks of output rows
  (`_Columns`: whole images, or rows of one image), row-major or tap-major, equal for
  every block size;
- the stride-1 input gradient runs as a forward convolution also for SAME geometries
  with more filters than channels; with few channels the columns scatter channel-major;
- at 2 intra-op threads the blocks (and a scatter-add input gradient's runs of images)
  go to several threads, with the same bits as on one;
- AvgPool sums separably, AvgPoolGrad is its adjoint; empty operands give empty results.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import threads
from tapeflow.backends.numpy import conv as np_conv

rng = np.random.default_rng(41)


def _reference(x, w, strides, pads, dilations):
    """y = sum over taps (a, b) of the tap's input window times w[a, b] (float64)."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    kh, kw = w.shape[:2]
    (sh, sw), (dh, dw) = strides, dilations
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for a in range(kh):
        for b in range(kw):
            view = xp[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, b * dw:b * dw + (ow - 1) * sw + 1:sw]
            y += view @ w[a, b]
    return y


# (x shape, filter shape, strides, padding, dilations); 3 channels lay out tap-major
CASES = [((3, 9, 7, 16), (3, 3, 16, 5), (1, 1), "SAME", (1, 1)),
         ((2, 11, 10, 3), (3, 2, 3, 7), (2, 1), "VALID", (1, 2)),
         ((4, 6, 6, 8), (2, 2, 8, 4), (2, 2), ((1, 0), (0, 1)), (1, 1))]


@pytest.mark.parametrize("block", [1, 40, 300, 1 << 40])  # rows, images, all in one
@pytest.mark.parametrize("x_shape, w_shape, strides, padding, dilations", CASES)
def test_blocked_product_matches_the_reference(x_shape, w_shape, strides, padding,
                                               dilations, block, monkeypatch):
    monkeypatch.setattr(np_conv, "COL_BLOCK", block)
    x, w = rng.normal(size=x_shape), rng.normal(size=w_shape)
    attrs = {"strides": strides, "padding": padding, "dilations": dilations,
             "data_format": "NHWC", "groups": 1}
    _, pads = np_conv._geometry(x_shape[1:3], w_shape[:2], attrs)
    got = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
    np.testing.assert_allclose(got, _reference(x, w, strides, pads, dilations),
                               rtol=1e-12, atol=1e-12)
    again = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
    np.testing.assert_array_equal(again, got)  # the same blocks: the same bits
    # the filter gradient sums the blocks' products: d<conv(x, w), dy>/dw, which is
    # linear in w, so its column for each filter element is the reference at a basis w
    dy = rng.normal(size=got.shape)
    dw = np_conv.conv2d_backprop_filter({"x": x, "dy": dy}, dict(attrs, filter_hw=w_shape[:2]),
                                        None)
    want = np.zeros(w_shape)
    for i in np.ndindex(*w_shape):
        e = np.zeros(w_shape)
        e[i] = 1
        want[i] = np.sum(_reference(x, e, strides, pads, dilations) * dy)
    np.testing.assert_allclose(dw, want, rtol=1e-12, atol=1e-12)


def test_blocks_cover_every_row_once(monkeypatch):
    """Each output row is in exactly one block, in order, whatever the block size."""
    p = np.lib.stride_tricks.sliding_window_view(
        np.arange(3 * 7 * 6 * 2.0).reshape(3, 7, 6, 2), (3, 3), axis=(1, 2))
    p = p.transpose(0, 1, 2, 4, 5, 3)  # [N, OH, OW, KH, KW, C]
    rows = p.reshape(-1, 18)
    for tap_major in (False, True):
        for block in (1, 18 * 4, 18 * 4 * 5, 18 * 4 * 5 * 2, 1 << 30):
            monkeypatch.setattr(np_conv, "COL_BLOCK", block)
            columns = np_conv._Columns(p, tap_major)
            seen = [(start, cols.copy()) for start, cols in map(columns.block,
                                                                   range(len(columns)))]
            starts = [s for s, _ in seen]
            assert starts == sorted(starts) and starts[0] == 0
            np.testing.assert_array_equal(np.concatenate([c for _, c in seen]), rows)


# (x shape, filter shape, strides, padding): the scatter-add input gradient (more filters
# than channels, VALID; strided), and the forward formulation (SAME, stride 1)
SPLIT_CASES = [((6, 9, 8, 8), (3, 3, 8, 16), (1, 1), "VALID"),
               ((5, 10, 9, 8), (3, 3, 8, 12), (2, 2), "SAME"),
               ((4, 7, 7, 16), (3, 3, 16, 16), (1, 1), "SAME")]


@pytest.mark.parametrize("x_shape, w_shape, strides, padding", SPLIT_CASES)
def test_split_over_threads_gives_one_threads_bits(x_shape, w_shape, strides, padding,
                                                    monkeypatch):
    """From SPLIT_CONV_FROM the blocks (and runs of images) are fixed by the shapes alone
    and the threads take them in turn: every call at 2 threads, whichever way the thread
    choice went, gives the bits of 1 thread (and they are right)."""
    monkeypatch.setattr(np_conv, "SPLIT_CONV_FROM", 1)
    monkeypatch.setattr(np_conv, "COL_BLOCK", 300)  # several blocks of whole images
    monkeypatch.setattr(np_conv, "_CONV_CHOICES", {})
    asked = []  # the threads each call offered its parts to
    real = threads.run_parts

    def spy(run, parts, n):
        asked.append(n)
        real(run, parts, n)
    monkeypatch.setattr(threads, "run_parts", spy)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    attrs = {"strides": strides, "padding": padding, "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    _, pads = np_conv._geometry(x_shape[1:3], w_shape[:2], attrs)

    def run():
        y = np_conv.conv2d({"x": x, "filters": w}, attrs, None).copy()
        dy = np.cos(y)
        dw = np_conv.conv2d_backprop_filter({"x": x, "dy": dy},
                                            dict(attrs, filter_hw=w_shape[:2]), None)
        dx = np_conv.conv2d_backprop_input({"dy": dy, "filters": w},
                                           dict(attrs, input_hw=x_shape[1:3]), None)
        return y, dw.copy(), dx.copy()
    before = tf.config.threading.get_intra_op_parallelism_threads()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        one = run()
        tf.config.threading.set_intra_op_parallelism_threads(2)
        for _ in range(6):  # (both thread choices run: each twice, alternating)
            for got, want in zip(run(), one):
                np.testing.assert_array_equal(got, want)
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(before)
    # (whether a pool thread got a part depends on the machine's load: the calling thread
    # takes every part left when none has started)
    assert 1 in asked and 2 in asked
    assert all(min(c.runs) >= 2 for c in np_conv._CONV_CHOICES.values())
    assert {key[0] for key in np_conv._CONV_CHOICES} >= {"Conv2D", "Conv2DBackpropFilter"}
    np.testing.assert_allclose(one[0], _reference(x.astype(np.float64), w, strides, pads,
                                                  (1, 1)), rtol=1e-4, atol=1e-4)


def test_image_runs_come_from_the_shapes_alone(monkeypatch):
    assert np_conv._image_runs(32, np_conv.SPLIT_CONV_FROM - 1) == [(0, 32)]
    runs = np_conv._image_runs(10, np_conv.SPLIT_CONV_FROM)
    assert runs == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert np_conv._image_runs(3, 1 << 40) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("padding, forward", [("SAME", True), ("VALID", False)])
def test_input_gradient_with_more_filters_than_channels(padding, forward, monkeypatch):
    """SAME (as many output pixels as input): the forward formulation; VALID (its im2col
    matrix would have more rows than the columns'): the scatter of columns. Both equal
    the adjoint of the reference (the gradient of <conv(x, w), dy> in x, float64)."""
    calls = []
    real = np_conv._input_grad_by_forward
    monkeypatch.setattr(np_conv, "_input_grad_by_forward",
                        lambda *a: calls.append(1) or real(*a))
    x_shape, w = (2, 7, 6, 8), rng.normal(size=(3, 3, 8, 16))
    attrs = {"strides": (1, 1), "padding": padding, "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1, "input_hw": x_shape[1:3]}
    out, pads = np_conv._geometry(x_shape[1:3], w.shape[:2], attrs)
    dy = rng.normal(size=(2,) + out + (16,))
    got = np_conv.conv2d_backprop_input({"dy": dy, "filters": w}, attrs, None)
    # the adjoint column by column: dx[e] = <conv(e_i), dy> for each basis element
    want = np.zeros(x_shape)
    for i in np.ndindex(*x_shape):
        e = np.zeros(x_shape)
        e[i] = 1
        want[i] = np.sum(_reference(e[i[0]:i[0] + 1], w, (1, 1), pads, (1, 1)) * dy[i[0]])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert bool(calls) == forward


def _avg_pool_reference(x, ksize, strides, pads):
    """Each window's mean over its real (unpadded) elements, float64."""
    (pt, pb), (pl, pr) = pads
    n, h, w, c = x.shape
    oh = (h + pt + pb - ksize[0]) // strides[0] + 1
    ow = (w + pl + pr - ksize[1]) // strides[1] + 1
    y = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * strides[0] - pt, j * strides[1] - pl
            win = x[:, max(r0, 0):r0 + ksize[0], max(q0, 0):q0 + ksize[1]]
            y[:, i, j] = win.mean(axis=(1, 2))
    return y


@pytest.mark.parametrize("ksize, strides, padding", [((3, 3), (2, 2), "SAME"),
                                                     ((2, 2), (2, 2), "VALID"),
                                                     ((3, 2), (1, 1), "SAME")])
def test_average_pooling_gradient_is_the_adjoint(ksize, strides, padding):
    """AvgPoolGrad (its sums in scratch, cropped into a kept array, or with no padding
    summed in the kept array) is the adjoint of AvgPool: <pool(x), dy> = <x, grad(dy)>
    for every basis x; a second call leaves the first call's result alone."""
    x_shape = (2, 7, 6, 3)
    attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": "NHWC"}
    _, pads = np_conv._pool_geometry(x_shape[1:3], attrs)
    x = rng.normal(size=x_shape)
    y = np_conv.avg_pool({"x": x}, attrs, None)
    np.testing.assert_allclose(y, _avg_pool_reference(x, ksize, strides, pads), rtol=1e-12,
                               atol=1e-12)
    dy = rng.normal(size=y.shape)
    grad = dict(attrs, input_hw=x_shape[1:3])
    got = np_conv.avg_pool_grad({"dy": dy}, grad, None)
    kept = got.copy()
    want = np.zeros(x_shape)
    for i in np.ndindex(*x_shape):
        e = np.zeros(x_shape)
        e[i] = 1
        want[i] = np.sum(_avg_pool_reference(e, ksize, strides, pads) * dy)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    other = np_conv.avg_pool_grad({"dy": 2 * dy}, grad, None)
    np.testing.assert_array_equal(got, kept)
    np.testing.assert_allclose(other, 2 * want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x_shape, w_shape", [((2, 0, 5, 8), (3, 3, 8, 4)),
                                              ((2, 5, 0, 8), (3, 3, 8, 4)),
                                              ((2, 5, 5, 0), (3, 3, 0, 4)),
                                              ((0, 5, 5, 8), (3, 3, 8, 4)),
                                              ((2, 5, 5, 8), (3, 3, 8, 0))])
def test_empty_operands(x_shape, w_shape):
    """No rows, columns, channels, images or filters: empty results and zero gradients
    (no block to take, no division by an empty size)."""
    attrs = {"strides": (1, 1), "padding": "SAME", "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    x, w = np.ones(x_shape, np.float32), np.ones(w_shape, np.float32)
    y = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
    assert y.shape == x_shape[:3] + w_shape[3:]
    dy = np.ones(y.shape, np.float32)
    dw = np_conv.conv2d_backprop_filter({"x": x, "dy": dy}, dict(attrs, filter_hw=(3, 3)), None)
    dx = np_conv.conv2d_backprop_input({"dy": dy, "filters": w},
                                       dict(attrs, input_hw=x_shape[1:3]), None)
    np.testing.assert_array_equal(dw, np.zeros(w_shape, np.float32))
    np.testing.assert_array_equal(dx, np.zeros(x_shape, np.float32))


@pytest.mark.parametrize("channels", [1, 3, 7, 8])  # float32: channel-major below 8
@pytest.mark.parametrize("strides, padding", [((2, 2), "SAME"), ((1, 1), "VALID")])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_input_gradient_with_few_channels(channels, strides, padding, fmt):
    """With few channels the columns are scattered channel-major ([C, N, H, W]) and moved
    to NHWC at the end: the adjoint of the reference all the same (float32 operands,
    float64 truth)."""
    x_shape, w = (2, 7, 6, channels), rng.normal(size=(3, 3, channels, 5))
    attrs = {"strides": strides, "padding": padding, "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1, "input_hw": x_shape[1:3]}
    out, pads = np_conv._geometry(x_shape[1:3], w.shape[:2], attrs)
    dy = rng.normal(size=(2,) + out + (5,))
    want = np.zeros(x_shape)
    for i in np.ndindex(*x_shape):
        e = np.zeros(x_shape)
        e[i] = 1
        want[i] = np.sum(_reference(e[i[0]:i[0] + 1], w, strides, pads, (1, 1)) * dy[i[0]])
    arg = dy.astype(np.float32)
    if fmt == "NCHW":
        arg = arg.transpose(0, 3, 1, 2)
    got = np_conv.conv2d_backprop_input({"dy": arg, "filters": w.astype(np.float32)},
                                        dict(attrs, data_format=fmt), None)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    if fmt == "NCHW":
        got = got.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
