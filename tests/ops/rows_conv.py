"""Rows for convolution and pooling, checked against direct loop references written here
(loops over output pixels / filter taps: slow but obviously right on these tiny shapes)."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row, uniform

F32_TOL = {"rtol": 1e-4, "atol": 1e-5}


# --------------------------------------------------------------------------- references


def _pads_1d(n, k, s, d, padding, explicit=None):
    """(before, after) padding of one spatial axis, from TensorFlow's documented rules."""
    ke = (k - 1) * d + 1
    if padding == "VALID":
        return 0, 0
    if padding == "SAME":
        out = int(np.ceil(n / s))
        total = max((out - 1) * s + ke - n, 0)
        return total // 2, total - total // 2
    return tuple(explicit)


def _spatial_pads(x_hw, k_hw, strides, dilations, padding):
    """Per-axis pads for 'SAME'/'VALID' or explicit [[t, b], [l, r]]."""
    if isinstance(padding, str):
        return [_pads_1d(n, k, s, d, padding) for n, k, s, d in
                zip(x_hw, k_hw, strides, dilations)]
    return [tuple(p) for p in padding]


def ref_conv_nhwc(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """y[n, i, j, o] = sum_{a, b, c} xpad[n, i*sh + a*dh, j*sw + b*dw, c] w[a, b, c, o]."""
    kh, kw, _, o = w.shape
    pads = _spatial_pads(x.shape[1:3], (kh, kw), strides, dilations, padding)
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    oh = (xp.shape[1] - ((kh - 1) * dilations[0] + 1)) // strides[0] + 1
    ow = (xp.shape[2] - ((kw - 1) * dilations[1] + 1)) // strides[1] + 1
    y = np.zeros((x.shape[0], oh, ow, o), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            r, c = i * strides[0], j * strides[1]
            patch = xp[:, r:r + (kh - 1) * dilations[0] + 1:dilations[0],
                       c:c + (kw - 1) * dilations[1] + 1:dilations[1], :]
            y[:, i, j, :] = np.einsum("nabc,abco->no", patch.astype(np.float64), w)
    return y.astype(x.dtype)


def _hw_pair(v, data_format="NHWC"):
    """An int or a list of 1, 2 or 4 (data_format order) ints -> (h, w)."""
    if np.isscalar(v):
        return (v, v)
    v = list(v)
    if len(v) == 4:
        return tuple(v[1:3]) if data_format == "NHWC" else tuple(v[2:])
    return tuple(v * 2 if len(v) == 1 else v)


def _nchw_to_nhwc(x):
    return np.transpose(x, (0, 2, 3, 1))


def _nhwc_to_nchw(x):
    return np.transpose(x, (0, 3, 1, 2))


def ref_conv2d(x, w, strides, padding, data_format="NHWC", dilations=None):
    s, d = _hw_pair(strides, data_format), _hw_pair(dilations or 1, data_format)
    if data_format == "NCHW":
        pad = padding if isinstance(padding, str) else padding[2:]
        return _nhwc_to_nchw(ref_conv_nhwc(_nchw_to_nhwc(x), w, s, pad, d))
    pad = padding if isinstance(padding, str) else padding[1:3]
    return ref_conv_nhwc(x, w, s, pad, d)


def ref_conv1d(x, w, stride, padding, data_format="NWC", dilations=None):
    """y[n, i, o] = sum_{a, c} xpad[n, i*s + a*d, c] w[a, c, o]."""
    if data_format == "NCW":
        x = np.transpose(x, (0, 2, 1))
    d = dilations or 1
    k = w.shape[0]
    lo, hi = _pads_1d(x.shape[1], k, stride, d, padding)
    xp = np.pad(x, [(0, 0), (lo, hi), (0, 0)])
    out = (xp.shape[1] - ((k - 1) * d + 1)) // stride + 1
    y = np.zeros((x.shape[0], out, w.shape[2]))
    for i in range(out):
        for a in range(k):
            y[:, i, :] += xp[:, i * stride + a * d, :].astype(np.float64) @ w[a]
    y = y.astype(x.dtype)
    return np.transpose(y, (0, 2, 1)) if data_format == "NCW" else y


def ref_depthwise(x, w, strides, padding, data_format=None, dilations=None):
    """Channel c convolved with w[:, :, c, m] gives output channel c * M + m."""
    s, d = _hw_pair(strides), _hw_pair(dilations or 1)
    _, _, c, m = w.shape
    out = [ref_conv_nhwc(x[..., ci:ci + 1], w[:, :, ci:ci + 1, mi:mi + 1], s, padding, d)
           for ci in range(c) for mi in range(m)]
    return np.concatenate(out, axis=-1)


def ref_conv2d_transpose(x, w, output_shape, strides, padding="SAME", data_format="NHWC",
                         dilations=None):
    """Scatter each input pixel through the filter (w is [h, w, out, in]), then crop."""
    s, d = _hw_pair(strides, data_format), _hw_pair(dilations or 1, data_format)
    if data_format == "NCHW":
        x = _nchw_to_nhwc(x)
        output_shape = [output_shape[0], output_shape[2], output_shape[3], output_shape[1]]
    n, h, wd, c = output_shape
    kh, kw = w.shape[:2]
    pad = padding if isinstance(padding, str) else (
        padding[1:3] if data_format == "NHWC" else padding[2:])
    pads = _spatial_pads((h, wd), (kh, kw), s, d, pad)
    y = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c))
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            for a in range(kh):
                for b in range(kw):
                    y[:, i * s[0] + a * d[0], j * s[1] + b * d[1], :] += \
                        x[:, i, j, :].astype(np.float64) @ w[a, b].T
    y = y[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :].astype(x.dtype)
    return _nhwc_to_nchw(y) if data_format == "NCHW" else y


def ref_conv_filter_grad(x, dy, filter_hw, strides, padding, dilations):
    """dw[a, b, c, o] = sum_{n, i, j} xpad[n, i*sh + a*dh, j*sw + b*dw, c] dy[n, i, j, o]."""
    pads = _spatial_pads(x.shape[1:3], filter_hw, strides, dilations, padding)
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)]).astype(np.float64)
    oh, ow = dy.shape[1:3]
    dw = np.zeros(tuple(filter_hw) + (x.shape[3], dy.shape[3]))
    for a in range(filter_hw[0]):
        for b in range(filter_hw[1]):
            r, c = a * dilations[0], b * dilations[1]
            patch = xp[:, r:r + (oh - 1) * strides[0] + 1:strides[0],
                       c:c + (ow - 1) * strides[1] + 1:strides[1], :]
            dw[a, b] = np.einsum("nijc,nijo->co", patch, dy)
    return dw.astype(x.dtype)


def _pool_windows(x, ksize, strides, padding, fill):
    """Yield (i, j, window [N, kh, kw, C], row0, col0) over the padded NHWC input."""
    kh, kw = _hw_pair(ksize)
    s = _hw_pair(strides)
    pads = _spatial_pads(x.shape[1:3], (kh, kw), s, (1, 1), padding)
    xp = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)],
                constant_values=fill)
    oh = (xp.shape[1] - kh) // s[0] + 1
    ow = (xp.shape[2] - kw) // s[1] + 1
    for i in range(oh):
        for j in range(ow):
            yield i, j, xp[:, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw, :], oh, ow, pads


def ref_max_pool(x, ksize, strides, padding, data_format="NHWC"):
    ksize, strides = _hw_pair(ksize, data_format), _hw_pair(strides, data_format)
    if data_format == "NCHW":
        return _nhwc_to_nchw(ref_max_pool(_nchw_to_nhwc(x), ksize, strides, padding))
    wins = list(_pool_windows(x, ksize, strides, padding, -np.inf))
    oh, ow = wins[0][3], wins[0][4]
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i, j, win, *_ in wins:
        y[:, i, j, :] = win.max(axis=(1, 2))
    return y.astype(x.dtype)


def ref_avg_pool(x, ksize, strides, padding, data_format="NHWC"):
    """Mean over the window's real elements (padding excluded from the count)."""
    ksize, strides = _hw_pair(ksize, data_format), _hw_pair(strides, data_format)
    if data_format == "NCHW":
        return _nhwc_to_nchw(ref_avg_pool(_nchw_to_nhwc(x), ksize, strides, padding))
    wins = list(_pool_windows(x, ksize, strides, padding, np.nan))
    oh, ow = wins[0][3], wins[0][4]
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i, j, win, *_ in wins:
        y[:, i, j, :] = np.nanmean(win, axis=(1, 2))
    return y.astype(x.dtype)


def ref_max_pool_grad(x, dy, ksize, strides, padding):
    """dy[n, i, j, c] added at the position of the window's maximum."""
    kh, kw = _hw_pair(ksize)
    s = _hw_pair(strides)
    dx = None
    for i, j, win, oh, ow, pads in _pool_windows(x, ksize, strides, padding, -np.inf):
        if dx is None:
            dx = np.zeros((x.shape[0], x.shape[1] + sum(pads[0]), x.shape[2] + sum(pads[1]),
                           x.shape[3]))
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                a, b = np.unravel_index(np.argmax(win[n, :, :, c]), (kh, kw))
                dx[n, i * s[0] + a, j * s[1] + b, c] += dy[n, i, j, c]
    return dx[:, pads[0][0]:pads[0][0] + x.shape[1],
              pads[1][0]:pads[1][0] + x.shape[2]].astype(dy.dtype)


def ref_avg_pool_grad(dy, input_shape, ksize, strides, padding):
    """dy[n, i, j, c] / (real elements in the window) added to each of them."""
    kh, kw = _hw_pair(ksize)
    s = _hw_pair(strides)
    ones = np.ones(input_shape)
    dx = None
    for i, j, win, oh, ow, pads in _pool_windows(ones, ksize, strides, padding, 0.0):
        if dx is None:
            dx = np.zeros((input_shape[0], input_shape[1] + sum(pads[0]),
                           input_shape[2] + sum(pads[1]), input_shape[3]))
        count = win[0, :, :, 0].sum()
        dx[:, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw, :] += \
            win * (dy[:, i:i + 1, j:j + 1, :] / count)
    return dx[:, pads[0][0]:pads[0][0] + input_shape[1],
              pads[1][0]:pads[1][0] + input_shape[2]].astype(dy.dtype)


# --------------------------------------------------------------------------- samplers


def distinct(*shapes, spacing=0.05):
    """Arrays of well-separated values (no ties in any max window, also under +-delta)."""
    def sample(rng, dtype):
        out = []
        for s in shapes:
            n = int(np.prod(s))
            vals = (rng.permutation(n) - n / 2) * spacing + rng.uniform(0, spacing / 4, n)
            out.append(vals.reshape(s).astype(dtype))
        return out
    return sample


# --------------------------------------------------------------------------- direct kernels


def _run(kernel, inputs, **attrs):
    return tf.engine.run_kernel(kernel, inputs, attrs)


_CONV = {"strides": (2, 1), "padding": "SAME", "dilations": (1, 1), "data_format": "NHWC",
         "groups": 1}


def backprop_filter(x, dy):
    """Conv2DBackpropFilter directly (public ops reach it only through gradients)."""
    return _run("Conv2DBackpropFilter", {"x": x, "dy": dy}, filter_hw=(3, 2), **_CONV)


def backprop_filter_ref(x, dy):
    return ref_conv_filter_grad(x, dy, (3, 2), (2, 1), "SAME", (1, 1))


def depthwise_backprop_input(dy, w):
    """Conv2DBackpropInput with one channel per group (depthwise's input gradient)."""
    return _run("Conv2DBackpropInput", {"dy": dy, "filters": w}, input_hw=(5, 6),
                **{**_CONV, "strides": (2, 2), "groups": 3})


def depthwise_backprop_input_ref(dy, w):
    """Channel c of dx: the transposed convolutions of dy[..., 2c + m] by w[..., 2c + m]."""
    out = np.zeros((2, 5, 6, 3), dtype=dy.dtype)
    for c in range(3):
        for m in range(2):
            k = 2 * c + m
            out[..., c:c + 1] += ref_conv2d_transpose(
                dy[..., k:k + 1], w[:, :, :, k:k + 1], [2, 5, 6, 1], 2, "SAME")
    return out


_POOL = {"ksize": (3, 3), "strides": (2, 2), "padding": "SAME", "data_format": "NHWC"}


def max_pool_grad(x, dy):
    return _run("MaxPoolGrad", {"x": x, "dy": dy}, **_POOL)


def max_pool_grad_ref(x, dy):
    return ref_max_pool_grad(x, dy, 3, 2, "SAME")


def max_pool_gather(x, dx):
    return _run("MaxPoolGradGrad", {"x": x, "dx": dx}, **_POOL)


def max_pool_gather_ref(x, dx):
    """The adjoint of the scatter: the dx value at each window's maximum."""
    dy_basis = np.eye(2 * 3 * 3 * 3).reshape(-1, 2, 3, 3, 3)
    cols = [ref_max_pool_grad(x.astype(np.float64), b, 3, 2, "SAME").ravel()
            for b in dy_basis]
    return (np.stack(cols) @ dx.astype(np.float64).ravel()).reshape(2, 3, 3, 3).astype(dx.dtype)


def avg_pool_grad(dy):
    return _run("AvgPoolGrad", {"dy": dy}, input_hw=(5, 6), **_POOL)


def avg_pool_grad_ref(dy):
    return ref_avg_pool_grad(dy, (2, 5, 6, 3), 3, 2, "SAME")


# --------------------------------------------------------------------------- rows

X = (2, 5, 6, 3)          # N, H, W, C
X_NCHW = (2, 3, 5, 6)
W = (3, 3, 3, 4)          # kh, kw, in, out
_conv2d = ("Conv2D",)

# Why some rows leave out generated cases (see table.py).
NO_EMPTY_WINDOW = "no size-0 case of the window's sizes (the filter's spatial size is the " \
    "channel count or a spatial size: TF rejects empty windows and windows past the input)"
OUTPUT_SHAPE = "the output_shape is fixed: only cases keeping the sizes it implies"

ROWS = [
    Row("conv2d/same_stride1", tf.nn.conv2d, ref_conv2d, uniform(X, W), kernels=_conv2d,
        kwargs={"strides": 1, "padding": "SAME"}, empty=(2, 4, 5, 6), **F32_TOL,
        note=NO_EMPTY_WINDOW),
    Row("conv2d/valid_stride2", tf.nn.conv2d, ref_conv2d, uniform(X, W), kernels=_conv2d,
        kwargs={"strides": [1, 2, 2, 1], "padding": "VALID"}, **F32_TOL),
    Row("conv2d/same_stride2_rect", tf.nn.conv2d, ref_conv2d, uniform(X, (2, 3, 3, 2)),
        kernels=_conv2d, kwargs={"strides": (2, 1), "padding": "SAME"}, empty=(2, 5, 6),
        **F32_TOL, note=NO_EMPTY_WINDOW),
    Row("conv2d/explicit", tf.nn.conv2d, ref_conv2d, uniform(X, W), kernels=_conv2d,
        kwargs={"strides": 2, "padding": [[0, 0], [1, 0], [2, 1], [0, 0]]}, empty=(2, 4, 6),
        **F32_TOL, note=NO_EMPTY_WINDOW),
    Row("conv2d/dilation2", tf.nn.conv2d, ref_conv2d, uniform((2, 6, 7, 2), (2, 3, 2, 3)),
        kernels=_conv2d, kwargs={"strides": 1, "padding": "SAME", "dilations": 2}, **F32_TOL),
    Row("conv2d/dilation2_valid", tf.nn.conv2d, ref_conv2d, uniform((2, 6, 7, 2), (2, 2, 2, 3)),
        kernels=_conv2d, kwargs={"strides": 1, "padding": "VALID", "dilations": [2, 2]},
        **F32_TOL),
    Row("conv2d/nchw", tf.nn.conv2d, ref_conv2d, uniform(X_NCHW, W), kernels=_conv2d,
        kwargs={"strides": [1, 1, 2, 1], "padding": "SAME", "data_format": "NCHW"},
        empty=(2, 4, 5, 6), **F32_TOL, note=NO_EMPTY_WINDOW),
    Row("conv2d/nchw_explicit", tf.nn.conv2d, ref_conv2d, uniform(X_NCHW, (2, 2, 3, 2)),
        kernels=_conv2d, kwargs={"strides": 1, "padding": [[0, 0], [0, 0], [1, 1], [0, 1]],
                                 "data_format": "NCHW"}, empty=(3, 5), **F32_TOL,
        note=NO_EMPTY_WINDOW),
    Row("conv1d/same", tf.nn.conv1d, ref_conv1d, uniform((2, 7, 3), (3, 3, 4)),
        kernels=_conv2d, kwargs={"stride": 1, "padding": "SAME"}, empty=(2, 4, 7), **F32_TOL,
        note=NO_EMPTY_WINDOW),
    Row("conv1d/valid_stride2_dilated", tf.nn.conv1d, ref_conv1d, uniform((2, 9, 2), (2, 2, 3)),
        kernels=_conv2d, kwargs={"stride": 2, "padding": "VALID", "dilations": 2}, **F32_TOL),
    Row("conv1d/ncw", tf.nn.conv1d, ref_conv1d, uniform((2, 3, 7), (3, 3, 2)),
        kernels=_conv2d, kwargs={"stride": 2, "padding": "SAME", "data_format": "NCW"},
        **F32_TOL),
    Row("depthwise_conv2d/multiplier2", tf.nn.depthwise_conv2d, ref_depthwise,
        uniform(X, (3, 3, 3, 2)), kernels=_conv2d,
        kwargs={"strides": [1, 1, 1, 1], "padding": "SAME"}, **F32_TOL),
    Row("depthwise_conv2d/stride2_valid", tf.nn.depthwise_conv2d, ref_depthwise,
        uniform(X, (2, 3, 3, 1)), kernels=_conv2d,
        kwargs={"strides": [1, 2, 2, 1], "padding": "VALID"}, empty=(2, 3), **F32_TOL,
        note=NO_EMPTY_WINDOW),
    Row("depthwise_conv2d/dilated", tf.nn.depthwise_conv2d, ref_depthwise,
        uniform((1, 6, 6, 2), (2, 2, 2, 2)), kernels=_conv2d,
        kwargs={"strides": [1, 1, 1, 1], "padding": "SAME", "dilations": [2, 2]}, **F32_TOL),
    Row("conv2d_transpose/same_stride2", tf.nn.conv2d_transpose, ref_conv2d_transpose,
        uniform((2, 3, 3, 4), (3, 3, 3, 4)), kernels=("Conv2DBackpropInput",),
        kwargs={"output_shape": [2, 5, 6, 3], "strides": 2, "padding": "SAME"}, **F32_TOL,
        size1=False, empty=(4,), note=OUTPUT_SHAPE),
    Row("conv2d_transpose/valid_stride2", tf.nn.conv2d_transpose, ref_conv2d_transpose,
        uniform((2, 2, 2, 3), (3, 3, 2, 3)), kernels=("Conv2DBackpropInput",),
        kwargs={"output_shape": [2, 6, 5, 2], "strides": [1, 2, 2, 1], "padding": "VALID"},
        **F32_TOL, size1=False, empty=False, note=OUTPUT_SHAPE),
    Row("conv2d_transpose/nchw_explicit_dilated", tf.nn.conv2d_transpose,
        ref_conv2d_transpose, uniform((2, 3, 4, 4), (2, 2, 2, 3)),
        kernels=("Conv2DBackpropInput",),
        kwargs={"output_shape": [2, 2, 5, 5], "strides": 1, "data_format": "NCHW",
                "padding": [[0, 0], [0, 0], [0, 1], [1, 0]], "dilations": 2}, **F32_TOL,
        size1=False, empty=(3,), note=OUTPUT_SHAPE),
    Row("conv2d_backprop_filter/direct", backprop_filter, backprop_filter_ref,
        uniform(X, (2, 3, 6, 4)), kernels=("Conv2DBackpropFilter",), **F32_TOL,
        note="reached from public ops only through gradients; called via run_kernel"),
    Row("depthwise_backprop_input/direct", depthwise_backprop_input,
        depthwise_backprop_input_ref, uniform((2, 3, 3, 6), (3, 3, 1, 6)),
        kernels=("Conv2DBackpropInput",), **F32_TOL, size1=False, empty=(6,),
        note="depthwise_conv2d's input gradient (grouped path), called via run_kernel; "
        "the input size is fixed"),
    Row("max_pool2d/valid", tf.nn.max_pool2d, ref_max_pool, distinct(X), kernels=("MaxPool",),
        kwargs={"ksize": 2, "strides": 2, "padding": "VALID"}, order=1),
    Row("max_pool2d/same_overlap", tf.nn.max_pool2d, ref_max_pool, distinct(X),
        kernels=("MaxPool",), kwargs={"ksize": 3, "strides": [1, 2, 1, 1], "padding": "SAME"},
        order=1),
    Row("max_pool2d/nchw", tf.nn.max_pool2d, ref_max_pool, distinct(X_NCHW),
        kernels=("MaxPool",),
        kwargs={"ksize": [1, 1, 2, 3], "strides": 2, "padding": "SAME", "data_format": "NCHW"},
        order=1),
    Row("max_pool2d/int32", tf.nn.max_pool2d, ref_max_pool,
        lambda rng, dtype: [rng.integers(-50, 50, X).astype(dtype)], kernels=("MaxPool",),
        kwargs={"ksize": 2, "strides": 1, "padding": "SAME"}, dtypes=("int32", "int64"),
        grad=False),
    Row("max_pool_grad/direct", max_pool_grad, max_pool_grad_ref,
        lambda rng, dtype: distinct(X)(rng, dtype) + uniform((2, 3, 3, 3))(rng, dtype),
        kernels=("MaxPoolGrad",), order=2, empty=(2,),
        note="the VJP of MaxPool, called via run_kernel; linear in dy, constant in x; dy "
        "has the pooled shape of x"),
    Row("max_pool_grad_grad/direct", max_pool_gather, max_pool_gather_ref,
        lambda rng, dtype: distinct(X)(rng, dtype) + uniform(X)(rng, dtype),
        kernels=("MaxPoolGradGrad",), order=2, size1=False, empty=False,
        note="the JVP of MaxPool, called via run_kernel; linear in dx, constant in x; the "
        "reference reads a fixed pooled shape"),
    Row("avg_pool2d/valid", tf.nn.avg_pool2d, ref_avg_pool, uniform(X), kernels=("AvgPool",),
        kwargs={"ksize": 2, "strides": 2, "padding": "VALID"}),
    Row("avg_pool2d/same_overlap", tf.nn.avg_pool2d, ref_avg_pool, uniform(X),
        kernels=("AvgPool",), kwargs={"ksize": [3, 2], "strides": [1, 2, 1, 1],
                                      "padding": "SAME"}),
    Row("avg_pool2d/nchw", tf.nn.avg_pool2d, ref_avg_pool, uniform(X_NCHW),
        kernels=("AvgPool",),
        kwargs={"ksize": 3, "strides": 2, "padding": "SAME", "data_format": "NCHW"}),
    Row("avg_pool_grad/direct", avg_pool_grad, avg_pool_grad_ref, uniform((2, 3, 3, 3)),
        kernels=("AvgPoolGrad",), note="the VJP of AvgPool, called via run_kernel"),
]
