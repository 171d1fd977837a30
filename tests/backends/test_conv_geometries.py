"""The NumPy backend's convolutions on geometries the other tests leave out (dilation with
strides, 1x1, 7x7, depthwise with a channel multiplier, batch 1, an empty batch), against
a plain NumPy reference written tap by tap here; gradients also against central finite
differences in float64. The direct loops (backends/numpy/conv_direct.py) are generic over
the geometry: two geometries share one compiled loop, and until it is compiled NumPy does
its arithmetic op for op (the same bits)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow._core.backends import REGISTRY
from tapeflow.backends.numpy import conv as np_conv, conv_direct

rng = np.random.default_rng(29)


# ------------------------------------------------------------------ the reference
def _pads(size, k, s, d, padding):
    ke = (k - 1) * d + 1
    if not isinstance(padding, str):  # explicit (before, after)
        return (size + sum(padding) - ke) // s + 1, tuple(padding)
    if padding == "SAME":
        out = -(-size // s)
        total = max((out - 1) * s + ke - size, 0)
        return out, (total // 2, total - total // 2)
    return (size - ke) // s + 1, (0, 0)


def _layout(x_shape, w_shape, strides, padding, dilations):
    explicit = not isinstance(padding, str)
    oh, ph = _pads(x_shape[1], w_shape[0], strides[0], dilations[0],
                   padding[0] if explicit else padding)
    ow, pw = _pads(x_shape[2], w_shape[1], strides[1], dilations[1],
                   padding[1] if explicit else padding)
    return (oh, ow), (ph, pw)


def _tap(xp, a, b, out, strides, dilations):
    (oh, ow), (sh, sw), (dh, dw) = out, strides, dilations
    return xp[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, b * dw:b * dw + (ow - 1) * sw + 1:sw]


def ref_conv(x, w, strides, padding, dilations, groups):
    """y = sum over taps (a, b) and groups of the tap's input channels times w[a, b]."""
    out, pads = _layout(x.shape, w.shape, strides, padding, dilations)
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    kh, kw, cg, o = w.shape
    og = o // groups
    y = np.zeros((x.shape[0],) + out + (o,))
    for a in range(kh):
        for b in range(kw):
            p = _tap(xp, a, b, out, strides, dilations)
            for g in range(groups):
                y[..., g * og:(g + 1) * og] += p[..., g * cg:(g + 1) * cg] @ \
                    w[a, b, :, g * og:(g + 1) * og]
    return y


def ref_input_grad(dy, w, x_shape, strides, padding, dilations, groups):
    out, pads = _layout(x_shape, w.shape, strides, padding, dilations)
    (pt, pb), (pl, pr) = pads
    dxp = np.zeros((x_shape[0], x_shape[1] + pt + pb, x_shape[2] + pl + pr, x_shape[3]))
    kh, kw, cg, o = w.shape
    og = o // groups
    for a in range(kh):
        for b in range(kw):
            view = _tap(dxp, a, b, out, strides, dilations)
            for g in range(groups):
                view[..., g * cg:(g + 1) * cg] += dy[..., g * og:(g + 1) * og] @ \
                    w[a, b, :, g * og:(g + 1) * og].T
    return dxp[:, pt:pt + x_shape[1], pl:pl + x_shape[2]]


def ref_filter_grad(x, dy, w_shape, strides, padding, dilations, groups):
    out, pads = _layout(x.shape, w_shape, strides, padding, dilations)
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    kh, kw, cg, o = w_shape
    og = o // groups
    dw = np.zeros(w_shape)
    for a in range(kh):
        for b in range(kw):
            p = _tap(xp, a, b, out, strides, dilations)
            for g in range(groups):
                dw[a, b, :, g * og:(g + 1) * og] = np.einsum(
                    "nijc,nijo->co", p[..., g * cg:(g + 1) * cg], dy[..., g * og:(g + 1) * og])
    return dw


# (x shape, filter shape, strides, padding, dilations, groups)
GEOMETRIES = {
    "dilated_strided": ((2, 17, 15, 3), (3, 3, 3, 8), (2, 2), "SAME", (2, 2), 1),
    "dilated_strided_valid_1ch": ((3, 19, 16, 1), (3, 2, 1, 5), (2, 1), "VALID", (2, 3), 1),
    "1x1": ((2, 6, 7, 12), (1, 1, 12, 5), (1, 1), "SAME", (1, 1), 1),
    "1x1_strided": ((2, 7, 7, 4), (1, 1, 4, 6), (2, 2), "VALID", (1, 1), 1),
    "7x7_stride2": ((2, 19, 18, 3), (7, 7, 3, 9), (2, 2), "SAME", (1, 1), 1),
    "depthwise_m2": ((2, 11, 10, 6), (3, 3, 1, 12), (1, 1), "SAME", (1, 1), 6),
    "depthwise_strided_dilated": ((2, 15, 14, 5), (3, 2, 1, 5), (2, 1), "VALID", (1, 2), 5),
    "batch1_explicit": ((1, 9, 8, 2), (2, 3, 2, 4), (1, 2), ((1, 2), (0, 1)), (1, 1), 1),
    "grouped": ((2, 8, 8, 4), (3, 3, 2, 6), (1, 1), "SAME", (1, 1), 2),
}


def _operands(name, dtype=np.float64):
    xs, ws, s, p, d, g = GEOMETRIES[name]
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    attrs = {"strides": s, "padding": p, "dilations": d, "data_format": "NHWC", "groups": g}
    return x, w, attrs


@pytest.fixture(params=["im2col", "direct"])
def route(request, monkeypatch):
    """Run each case twice: on the im2col kernels, and on the direct loops wherever they
    apply (their size floor lowered; compiled on first use, not in the background)."""
    if request.param == "direct":
        monkeypatch.setattr(conv_direct, "DIRECT_FROM", 1)
        monkeypatch.setattr(conv_direct, "_calls", {})
        monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 0)
        before = jit.background()
        jit.set_background(False)
        yield request.param
        jit.set_background(before)
    else:
        monkeypatch.setattr(conv_direct, "DIRECT_FROM", 1 << 62)
        yield request.param


def _kernels(x, w, attrs, dy):
    y = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
    dx = np_conv.conv2d_backprop_input({"dy": dy, "filters": w},
                                       dict(attrs, input_hw=x.shape[1:3]), None)
    dw = np_conv.conv2d_backprop_filter({"x": x, "dy": dy},
                                        dict(attrs, filter_hw=w.shape[:2]), None)
    return y, dx, dw


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_forward_and_gradients_match_the_reference(name, route):
    x, w, attrs = _operands(name)
    ref = (attrs["strides"], attrs["padding"], attrs["dilations"], attrs["groups"])
    want = ref_conv(x, w, *ref)
    dy = rng.standard_normal(want.shape)
    y, dx, dw = _kernels(x, w, attrs, dy)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, ref_input_grad(dy, w, x.shape, *ref), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(dw, ref_filter_grad(x, dy, w.shape, *ref), rtol=1e-12,
                               atol=1e-12)
    fused_attrs = dict(attrs, filter_hw=w.shape[:2])
    dw2, db = np_conv.conv2d_backprop_filter_with_bias({"x": x, "dy": dy}, fused_attrs, None)
    np.testing.assert_allclose(dw2, dw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 1, 2)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("activation", ["", "Relu", "Relu6", "Tanh", "Elu", "Sigmoid"])
@pytest.mark.parametrize("name", ["dilated_strided", "depthwise_m2", "1x1"])
def test_fused_convolution_takes_any_activation(name, activation, route):
    x, w, attrs = _operands(name)
    b = rng.standard_normal(w.shape[-1]) * 3
    pre = ref_conv(x, w, attrs["strides"], attrs["padding"], attrs["dilations"],
                   attrs["groups"]) + b
    want = {"": pre, "Relu": np.maximum(pre, 0), "Relu6": np.clip(pre, 0, 6),
            "Tanh": np.tanh(pre), "Elu": np.where(pre > 0, pre, np.expm1(pre)),
            "Sigmoid": 1 / (1 + np.exp(-pre))}[activation]
    got = np_conv.fused_conv2d({"x": x, "filters": w, "bias": b},
                               dict(attrs, activation=activation), REGISTRY.find("numpy"))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_empty_batch():
    x, w, attrs = _operands("dilated_strided")
    x = x[:0]
    out = _layout(x.shape, w.shape, attrs["strides"], attrs["padding"], attrs["dilations"])[0]
    y, dx, dw = _kernels(x, w, attrs, np.zeros((0,) + out + (w.shape[-1],)))
    assert y.shape == (0,) + out + (w.shape[-1],)
    assert dx.shape == x.shape
    np.testing.assert_array_equal(dw, np.zeros(w.shape))


def test_nchw_goes_through_transposes(route):
    x, w, attrs = _operands("dilated_strided_valid_1ch")
    want = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
    got = np_conv.conv2d({"x": np.moveaxis(x, -1, 1), "filters": w},
                         dict(attrs, data_format="NCHW"), None)
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ finite differences
@pytest.mark.parametrize("name", ["dilated_strided", "depthwise_m2", "7x7_stride2"])
def test_gradients_against_finite_differences(name, route):
    """Through the public ops and the tape: d<conv(x, w), dy> along random directions of
    x and w against central differences in float64."""
    x, w, attrs = _operands(name)
    s, p, d = attrs["strides"], attrs["padding"], attrs["dilations"]
    depthwise = attrs["groups"] > 1

    def conv(x, w):
        if depthwise:
            w4 = tf.reshape(w, w.shape[:2] + (x.shape[-1], -1))
            return tf.nn.depthwise_conv2d(x, w4, [1, *s, 1], p, dilations=d)
        return tf.nn.conv2d(x, w, s, p, dilations=d)
    dy = rng.standard_normal(conv(tf.constant(x), tf.constant(w)).shape)
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([xt, wt])
        loss = tf.reduce_sum(conv(xt, wt) * dy)
    gx, gw = (g.numpy() for g in tape.gradient(loss, [xt, wt]))

    def f(x_, w_):
        return float(np.sum(conv(tf.constant(x_), tf.constant(w_)).numpy() * dy))
    eps = 1e-6
    for _ in range(2):
        vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
        fd_x = (f(x + eps * vx, w) - f(x - eps * vx, w)) / (2 * eps)
        fd_w = (f(x, w + eps * vw) - f(x, w - eps * vw)) / (2 * eps)
        np.testing.assert_allclose(np.vdot(gx, vx), fd_x, rtol=1e-6)
        np.testing.assert_allclose(np.vdot(gw, vw), fd_w, rtol=1e-6)


# ------------------------------------------------------------------ the generic loops
TWINS = [  # (x shape, filter shape, strides, dilations, activation, dtype, depthwise)
    ((3, 13, 12, 2), (3, 3, 2, 11), (2, 1), (1, 2), "Relu6", np.float64, False),
    ((2, 15, 14, 1), (7, 7, 1, 8), (2, 2), (1, 1), "Relu", np.float32, False),
    ((2, 9, 9, 3), (1, 1, 3, 20), (1, 1), (1, 1), "", np.float32, False),
    ((3, 12, 13, 6), (3, 3, 1, 6), (2, 2), (1, 1), "Relu", np.float32, True),
    ((2, 12, 11, 4), (2, 3, 1, 8), (1, 2), (2, 1), "Relu6", np.float64, True),
]


@pytest.mark.parametrize("case", TWINS, ids=["dense_dilated", "dense_7x7", "dense_1x1",
                                             "depthwise", "depthwise_m2"])
def test_numpy_twins_give_the_loops_bits(case, monkeypatch):
    """While a loop compiles, its NumPy twin runs: both give the same bits (signed zeros
    and NaN included), so the first calls of a program equal its later ones."""
    xs, ws, strides, dilations, activation, dtype, depthwise = case
    xp = rng.standard_normal(xs).astype(dtype)
    xp[0, 0, 0, 0], xp[-1, 2, 3, -1] = -0.0, np.nan
    w = rng.standard_normal(ws).astype(dtype)
    w[0, 0, 0, 0] = -0.0
    b = rng.standard_normal(ws[-1]).astype(dtype)
    out = tuple((xs[1 + k] - (ws[k] - 1) * dilations[k] - 1) // strides[k] + 1 for k in (0, 1))
    dy = rng.standard_normal((xs[0],) + out + (ws[-1],)).astype(dtype)
    fns = ((conv_direct.depthwise_forward, conv_direct.depthwise_filter_grad,
            conv_direct.depthwise_input_grad) if depthwise else
           (conv_direct.forward, conv_direct.filter_grad, None))

    def run():
        got = [fns[0](xp, w, b, out, strides, dilations, activation),
               *fns[1](xp, dy, ws[:2], strides, dilations)]
        if fns[2] is not None:
            got.append(fns[2](dy, w, xs, strides, dilations))
        return [g.tobytes() for g in got]
    monkeypatch.setattr(conv_direct, "_calls", {})
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 1 << 30)
    twins = run()  # (the loops are never ready: NumPy)
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    try:
        assert run() == twins
    finally:
        jit.set_background(before)


def test_two_geometries_share_one_compiled_loop(monkeypatch):
    """No code is generated per geometry: the loops of every geometry and filter count are
    one compiled function per dtype."""
    monkeypatch.setattr(conv_direct, "_calls", {})
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    modules = dict(jit._modules)
    try:
        for kh, c, f, s in ((3, 1, 8, 1), (5, 2, 13, 2), (1, 3, 32, 1)):
            x = rng.standard_normal((2, 12, 12, c)).astype(np.float32)
            w = rng.standard_normal((kh, kh, c, f)).astype(np.float32)
            out = ((12 - kh) // s + 1,) * 2
            y = conv_direct.forward(x, w, None, out, (s, s), (1, 1), "")
            np.testing.assert_allclose(y, ref_conv(x, w, (s, s), "VALID", (1, 1), 1),
                                       rtol=1e-5, atol=1e-5)
            conv_direct.filter_grad(x, y, (kh, kh), (s, s), (1, 1))
    finally:
        jit.set_background(before)
    assert jit._modules == modules  # no generated module
    for loop in conv_direct._dense():
        f32 = np.dtype(np.float32).num
        keys = [k for k, v in loop._state.items() if v is True and k[0][0] == f32]
        assert len(keys) == 1, loop._state


def test_depthwise_loops_split_images_over_threads_with_equal_bits(monkeypatch):
    monkeypatch.setattr(conv_direct, "_calls", {})
    monkeypatch.setattr(conv_direct, "COMPILE_AFTER", 0)
    before = jit.background()
    jit.set_background(False)
    x = rng.standard_normal((6, 14, 14, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 1, 8)).astype(np.float32)
    try:
        one = conv_direct.depthwise_forward(x, w, None, (12, 12), (1, 1), (1, 1), "")
        grads = conv_direct.depthwise_filter_grad(x, one, (3, 3), (1, 1), (1, 1))
        dx = conv_direct.depthwise_input_grad(one, w, x.shape, (1, 1), (1, 1))
        monkeypatch.setattr(conv_direct, "intra_op_threads", lambda: 3)
        monkeypatch.setattr(conv_direct, "SPLIT_FROM", 1)
        for _ in range(3):
            split = conv_direct.depthwise_forward(x, w, None, (12, 12), (1, 1), (1, 1), "")
            assert split.tobytes() == one.tobytes()
            again = conv_direct.depthwise_filter_grad(x, one, (3, 3), (1, 1), (1, 1))
            assert all(a.tobytes() == g.tobytes() for a, g in zip(again, grads))
            assert conv_direct.depthwise_input_grad(one, w, x.shape, (1, 1),
                                                    (1, 1)).tobytes() == dx.tobytes()
    finally:
        jit.set_background(before)
