"""Array-API kernels of 2-D convolution and pooling, written from standard functions:
convolution as im2col (one strided slice per filter tap, stacked) and one matmul; its
input gradient scatters the taps back with slice assignments. Grouped or batched
filters, and the average pool, fall back to NumPy's kernels."""
from ..numpy.conv import _geometry, _pool_geometry, _window_counts
from ._kernel import numpy_fallback, xp_kernel, XP_KERNELS


def _nhwc(xp, x, fmt):
    return xp.permute_dims(x, (0, 2, 3, 1)) if fmt == "NCHW" else x


def _from_nhwc(xp, y, fmt):
    return xp.permute_dims(y, (0, 3, 1, 2)) if fmt == "NCHW" else y


def _pad(xp, x, pads, value=0):
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    out = xp.full((n, h + pt + pb, w + pl + pr, c), value, dtype=x.dtype)
    out[:, pt:pt + h, pl:pl + w, :] = x
    return out


def _tap(i, j, out, strides, dilations):
    """The index of filter tap (i, j) into the padded input: [N, OH, OW, C]."""
    (oh, ow), (sh, sw), (dh, dw) = out, strides, dilations
    return (slice(None), slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
            slice(j * dw, j * dw + sw * (ow - 1) + 1, sw), slice(None))


def _plain(attrs, *arrays) -> bool:
    """Whether the im2col kernels apply: one group, unbatched 4-D operands."""
    return attrs["groups"] == 1 and all(a.ndim == 4 for a in arrays)


@xp_kernel("Conv2D")
def conv2d(inputs, attrs, b):
    x, w = inputs["x"], inputs["filters"]
    if not _plain(attrs, x, w):
        return numpy_fallback("Conv2D")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    x = _nhwc(xp, x, fmt)
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    out, pads = _geometry((h, wd), (kh, kw), attrs)
    p = _pad(xp, x, pads)
    taps = [p[_tap(i, j, out, attrs["strides"], attrs["dilations"])]
            for i in range(kh) for j in range(kw)]
    cols = xp.reshape(xp.stack(taps, axis=3), (n * out[0] * out[1], kh * kw * c))
    y = xp.reshape(cols @ xp.reshape(w, (kh * kw * c, o)), (n, out[0], out[1], o))
    return _from_nhwc(xp, y, fmt)


@xp_kernel("Conv2DBackpropInput")
def conv2d_backprop_input(inputs, attrs, b):
    dy, w = inputs["dy"], inputs["filters"]
    if not _plain(attrs, dy, w):
        return numpy_fallback("Conv2DBackpropInput")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    dy = _nhwc(xp, dy, fmt)
    n, oh, ow, o = dy.shape
    kh, kw, c, _ = w.shape
    hw = tuple(attrs["input_hw"])
    out, pads = _geometry(hw, (kh, kw), attrs)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but an input of size {hw} "
                         f"gives {out}")
    (pt, pb), (pl, pr) = pads
    cols = xp.reshape(dy, (n * oh * ow, o)) @ xp.matrix_transpose(
        xp.reshape(w, (kh * kw * c, o)))
    cols = xp.reshape(cols, (n, oh, ow, kh * kw, c))
    dx = xp.zeros((n, hw[0] + pt + pb, hw[1] + pl + pr, c), dtype=dy.dtype)
    for t in range(kh * kw):
        at = _tap(t // kw, t % kw, out, attrs["strides"], attrs["dilations"])
        dx[at] = dx[at] + cols[:, :, :, t, :]
    return _from_nhwc(xp, dx[:, pt:pt + hw[0], pl:pl + hw[1], :], fmt)


@xp_kernel("Conv2DBackpropFilter")
def conv2d_backprop_filter(inputs, attrs, b):
    x, dy = inputs["x"], inputs["dy"]
    if not _plain(attrs, x, dy):
        return numpy_fallback("Conv2DBackpropFilter")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    x, dy = _nhwc(xp, x, fmt), _nhwc(xp, dy, fmt)
    n, h, wd, c = x.shape
    _, oh, ow, o = dy.shape
    kh, kw = attrs["filter_hw"]
    out, pads = _geometry((h, wd), (kh, kw), attrs)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but the input gives {out}")
    p = _pad(xp, x, pads)
    taps = [p[_tap(i, j, out, attrs["strides"], attrs["dilations"])]
            for i in range(kh) for j in range(kw)]
    cols = xp.reshape(xp.stack(taps, axis=3), (n * oh * ow, kh * kw * c))
    dw = xp.matrix_transpose(cols) @ xp.reshape(dy, (n * oh * ow, o))
    return xp.reshape(dw, (kh, kw, c, o))


def _lowest(xp, dtype):
    return xp.iinfo(dtype).min if xp.isdtype(dtype, "integral") else -float("inf")


def _pool_taps(xp, x, attrs):
    out, pads = _pool_geometry(x.shape[1:3], attrs)
    p = _pad(xp, x, pads, _lowest(xp, x.dtype))
    kh, kw = attrs["ksize"]
    taps = [p[_tap(i, j, out, attrs["strides"], (1, 1))] for i in range(kh)
            for j in range(kw)]
    return out, pads, p.shape, taps


def _plain_pool(*arrays) -> bool:
    return all(a.ndim == 4 for a in arrays)


@xp_kernel("MaxPool")
def max_pool(inputs, attrs, b):
    x = inputs["x"]
    if not _plain_pool(x):
        return numpy_fallback("MaxPool")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    x = _nhwc(xp, x, fmt)
    _, _, _, taps = _pool_taps(xp, x, attrs)
    y = taps[0]
    for t in taps[1:]:
        y = xp.maximum(y, t)
    return _from_nhwc(xp, y, fmt)


@xp_kernel("MaxPoolGrad")
def max_pool_grad(inputs, attrs, b):
    """dy routed to the first maximum of each window of x: the VJP of MaxPool."""
    x, dy = inputs["x"], inputs["dy"]
    if not _plain_pool(x, dy):
        return numpy_fallback("MaxPoolGrad")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    x, dy = _nhwc(xp, x, fmt), _nhwc(xp, dy, fmt)
    out, pads, padded, taps = _pool_taps(xp, x, attrs)
    y = taps[0]
    for t in taps[1:]:
        y = xp.maximum(y, t)
    kh, kw = attrs["ksize"]
    dx = xp.zeros(padded[:3] + (dy.shape[3],), dtype=dy.dtype)
    zero = xp.zeros_like(dy)
    taken = xp.zeros(y.shape, dtype=xp.bool)
    for k, t in enumerate(taps):
        first = (t == y) & ~taken  # ties: the first tap in window order gets it
        taken = taken | first
        at = _tap(k // kw, k % kw, out, attrs["strides"], (1, 1))
        dx[at] = dx[at] + xp.where(first, dy, zero)
    (pt, _), (pl, _) = pads
    h, w = x.shape[1:3]
    return _from_nhwc(xp, dx[:, pt:pt + h, pl:pl + w, :], fmt)


def _counts(b, hw, out, pads, attrs, dtype):
    """How many real (unpadded) elements each window covers, [OH, OW, 1], as NumPy's
    kernel counts them (on the host: it depends on shapes only)."""
    return b.xp.astype(b.to_native(_window_counts(hw, out, pads, attrs)), dtype)


@xp_kernel("AvgPool")
def avg_pool(inputs, attrs, b):
    x = inputs["x"]
    if not _plain_pool(x):
        return numpy_fallback("AvgPool")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    x = _nhwc(xp, x, fmt)
    out, pads = _pool_geometry(x.shape[1:3], attrs)
    p = _pad(xp, x, pads)
    kh, kw = attrs["ksize"]
    total = None
    for i in range(kh):
        for j in range(kw):
            t = p[_tap(i, j, out, attrs["strides"], (1, 1))]
            total = t if total is None else total + t
    return _from_nhwc(xp, total / _counts(b, x.shape[1:3], out, pads, attrs, x.dtype), fmt)


@xp_kernel("AvgPoolGrad")
def avg_pool_grad(inputs, attrs, b):
    """dy spread evenly over each window's real elements: the VJP of AvgPool."""
    dy = inputs["dy"]
    if not _plain_pool(dy):
        return numpy_fallback("AvgPoolGrad")(inputs, attrs, b)
    xp, fmt = b.xp, attrs["data_format"]
    dy = _nhwc(xp, dy, fmt)
    hw = tuple(attrs["input_hw"])
    out, pads = _pool_geometry(hw, attrs)
    if out != tuple(dy.shape[1:3]):
        raise ValueError(f"dy has spatial size {tuple(dy.shape[1:3])} but an input of size "
                         f"{hw} gives {out}")
    share = dy / _counts(b, hw, out, pads, attrs, dy.dtype)
    (pt, pb), (pl, pr) = pads
    dx = xp.zeros((dy.shape[0], hw[0] + pt + pb, hw[1] + pl + pr, dy.shape[3]),
                  dtype=dy.dtype)
    kh, kw = attrs["ksize"]
    for i in range(kh):
        for j in range(kw):
            at = _tap(i, j, out, attrs["strides"], (1, 1))
            dx[at] = dx[at] + share
    return _from_nhwc(xp, dx[:, pt:pt + hw[0], pl:pl + hw[1], :], fmt)


# The optimizer's fused convolutions (ops/conv.py): this backend's kernels in turn.
@xp_kernel("FusedConv2D")
def fused_conv2d(inputs, attrs, b):
    y = conv2d(inputs, attrs, b) + inputs["bias"]
    return XP_KERNELS[attrs["activation"]]({"x": y}, {}, b) if attrs["activation"] else y


@xp_kernel("Conv2DBackpropFilterWithBias")
def conv2d_backprop_filter_with_bias(inputs, attrs, b):
    return [conv2d_backprop_filter(inputs, attrs, b),
            b.xp.sum(inputs["dy"], axis=(0, 1, 2))]
