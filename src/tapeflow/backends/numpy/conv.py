"""NumPy kernels of convolution and pooling: im2col views (as_strided) and BLAS matmuls.

Every kernel works in NHWC internally (NCHW is a transposed view in and out) and accepts
extra leading dimensions on each tensor operand, broadcast against each other like
matmul's batch dimensions; batched tangents go through the same kernels that way.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._kernel import broadcast_shapes, kernel


def _work_dtype(dtype):
    """Half-precision types (float16, bfloat16) are computed in float32: NumPy has no
    fast half-precision matmul."""
    return dtype if dtype.itemsize >= 4 else np.dtype(np.float32)


def _nhwc(a, fmt):
    return a if fmt == "NHWC" else np.moveaxis(a, -3, -1)


def _from_nhwc(a, fmt, dtype):
    if fmt != "NHWC":
        a = np.moveaxis(a, -1, -3)
    return np.ascontiguousarray(a, dtype=dtype)


def _pads(n, k, s, d, padding, axis):
    """(output size, pad before, pad after) of one spatial axis, TensorFlow's rules."""
    ke = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-n // s)
        total = max((out - 1) * s + ke - n, 0)
        return out, total // 2, total - total // 2
    lo, hi = (0, 0) if padding == "VALID" else padding[axis]
    if n + lo + hi < ke:
        raise ValueError(f"effective filter size {ke} exceeds padded input size {n + lo + hi}")
    return (n + lo + hi - ke) // s + 1, lo, hi


def _geometry(hw, khw, attrs):
    s, d, p = attrs["strides"], attrs.get("dilations", (1, 1)), attrs["padding"]
    oh, pt, pb = _pads(hw[0], khw[0], s[0], d[0], p, 0)
    ow, pl, pr = _pads(hw[1], khw[1], s[1], d[1], p, 1)
    return (oh, ow), ((pt, pb), (pl, pr))


def _pad(x, pads, value=0):
    """NHWC `x` padded spatially with `value` (slice assignment: np.pad is much slower)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    h, w = x.shape[-3:-1]
    out = np.full(x.shape[:-3] + (h + pt + pb, w + pl + pr, x.shape[-1]), value, x.dtype)
    out[..., pt:pt + h, pl:pl + w, :] = x
    return out


def _windows(xp, out, khw, strides, dilations):
    """View [..., N, OH, OW, KH, KW, C] of every window of padded NHWC `xp` (no copy)."""
    *lead, s_h, s_w, s_c = xp.strides
    shape = xp.shape[:-3] + (out[0], out[1], khw[0], khw[1], xp.shape[-1])
    strides = tuple(lead) + (s_h * strides[0], s_w * strides[1], s_h * dilations[0],
                             s_w * dilations[1], s_c)
    return as_strided(xp, shape, strides, writeable=False)


def _scatter_taps(tap, lead, khw, hw, out, pads, strides, dilations, dtype):
    """Adjoint of `_windows`: add `tap(i, j)` ([..., N, OH, OW, C], filter tap (i, j) of
    every window) back into the input positions it was read from; `lead` is [..., N, C].

    One vectorized add per filter tap (KH*KW of them), each over the whole batch.
    """
    (pt, pb), (pl, pr) = pads
    acc = np.zeros(lead[:-1] + (hw[0] + pt + pb, hw[1] + pl + pr, lead[-1]), dtype)
    span_h, span_w = (out[0] - 1) * strides[0] + 1, (out[1] - 1) * strides[1] + 1
    for i in range(khw[0]):
        r = i * dilations[0]
        for j in range(khw[1]):
            q = j * dilations[1]
            acc[..., r:r + span_h:strides[0], q:q + span_w:strides[1], :] += tap(i, j)
    return acc[..., pt:pt + hw[0], pl:pl + hw[1], :]


def _scatter_cols(col, hw, out, pads, strides, dilations, dtype):
    """`_scatter_taps` of col [..., N, OH, OW, KH, KW, C]."""
    return _scatter_taps(lambda i, j: col[..., i, j, :], col.shape[:-5] + col.shape[-1:],
                         col.shape[-3:-1], hw, out, pads, strides, dilations, dtype)


# --------------------------------------------------------------------------- convolution


def _grouped_cols(p, groups):
    """Windows [..., N, OH, OW, KH, KW, C] as [..., G, N*OH*OW, KH*KW*C/G] (one copy)."""
    n, oh, ow, kh, kw, c = p.shape[-6:]
    lead = p.shape[:-6]
    if groups == 1:
        return p.reshape(lead + (n * oh * ow, kh * kw * c))
    p = p.reshape(lead + (n * oh * ow, kh, kw, groups, c // groups))
    p = np.moveaxis(p, -2, -5)  # [..., G, NP, KH, KW, Cg]
    return p.reshape(lead + (groups, n * oh * ow, kh * kw * (c // groups)))


def _grouped_filters(w, groups):
    """Filters [..., KH, KW, Cg, O] as [..., G, KH*KW*Cg, O/G]."""
    kh, kw, cg, o = w.shape[-4:]
    lead = w.shape[:-4]
    if groups == 1:
        return w.reshape(lead + (kh * kw * cg, o))
    w = w.reshape(lead + (kh * kw * cg, groups, o // groups))
    return np.moveaxis(w, -2, -3)


def _ungroup_out(y, groups):
    """[..., G, NP, M] -> [..., NP, G*M]."""
    if groups == 1:
        return y
    y = np.moveaxis(y, -3, -2)
    return y.reshape(y.shape[:-2] + (y.shape[-2] * y.shape[-1],))


def _depthwise(groups, channels_per_group):
    """One input channel per group: per-group matrices are too small for BLAS, so einsum
    over the window view (no im2col copy) beats a batched matmul."""
    return groups > 1 and channels_per_group == 1


def _depthwise_filters(w, groups):
    """Filters [..., KH, KW, 1, G*M] as [..., KH, KW, G, M]."""
    return w.reshape(w.shape[:-2] + (groups, w.shape[-1] // groups))


@kernel("Conv2D")
def conv2d(i, a, b):
    fmt, groups = a["data_format"], a["groups"]
    x, w = i["x"], i["filters"]
    dtype = x.dtype
    work = _work_dtype(dtype)
    x = _nhwc(x, fmt).astype(work, copy=False)
    w = w.astype(work, copy=False)
    n, h, wd = x.shape[-4:-1]
    kh, kw, _, o = w.shape[-4:]
    out, pads = _geometry((h, wd), (kh, kw), a)
    p = _windows(_pad(x, pads), out, (kh, kw), a["strides"], a["dilations"])
    if groups == 1 and w.ndim == 4:
        # No batch on the filters: one (rows, K) x (K, O) product over every leading dim.
        # (Sizes spelled out, no -1: it is ambiguous when a dimension is 0.)
        k = kh * kw * x.shape[-1]
        y = p.reshape(math.prod(p.shape[:-3]), k) @ w.reshape(k, o)
        lead = x.shape[:-4]
    elif _depthwise(groups, w.shape[-2]):
        y = np.einsum("...nhwijg,...ijgm->...nhwgm", p, _depthwise_filters(w, groups))
        lead = y.shape[:-5]
    else:
        y = _ungroup_out(_grouped_cols(p, groups) @ _grouped_filters(w, groups), groups)
        lead = y.shape[:-2]
    return _from_nhwc(y.reshape(lead + (n,) + out + (o,)), fmt, dtype)


@kernel("Conv2DBackpropInput")
def conv2d_backprop_input(i, a, b):
    fmt, groups = a["data_format"], a["groups"]
    dy, w = i["dy"], i["filters"]
    dtype = dy.dtype
    work = _work_dtype(dtype)
    dy = _nhwc(dy, fmt).astype(work, copy=False)
    w = w.astype(work, copy=False)
    n, oh, ow, o = dy.shape[-4:]
    kh, kw, cg, _ = w.shape[-4:]
    hw = a["input_hw"]
    out, pads = _geometry(hw, (kh, kw), a)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but an input of size {tuple(hw)} "
                         f"gives {out}")
    m = o // groups
    lead_dy = dy.shape[:-4]
    if _depthwise(groups, w.shape[-2]):
        # Per tap: dx window element (i, j) of channel g = sum_m dy[..., g, m] w[i, j, g, m].
        dyg = dy.reshape(lead_dy + (n, oh, ow, groups, m))
        wg = _depthwise_filters(w, groups)
        lead = broadcast_shapes(lead_dy, w.shape[:-4]) + (n, groups)

        def tap(i, j):
            return np.einsum("...gm,...gm->...g", dyg, wg[..., i, j, None, None, None, :, :])
        dx = _scatter_taps(tap, lead, (kh, kw), hw, out, pads, a["strides"], a["dilations"],
                           work)
        return _from_nhwc(dx, fmt, dtype)
    if groups == 1:
        col = dy.reshape(lead_dy + (n * oh * ow, o)) @ np.swapaxes(
            w.reshape(w.shape[:-4] + (kh * kw * cg, o)), -1, -2)
        col = col.reshape(col.shape[:-2] + (n, oh, ow, kh, kw, cg))
    else:
        g = np.moveaxis(dy.reshape(lead_dy + (n * oh * ow, groups, m)), -2, -3)
        col = g @ np.swapaxes(_grouped_filters(w, groups), -1, -2)  # [..., G, NP, K]
        col = col.reshape(col.shape[:-2] + (n, oh, ow, kh, kw, cg))
        col = np.moveaxis(col, -7, -2)
        col = col.reshape(col.shape[:-2] + (groups * cg,))
    dx = _scatter_cols(col, hw, out, pads, a["strides"], a["dilations"], work)
    return _from_nhwc(dx, fmt, dtype)


@kernel("Conv2DBackpropFilter")
def conv2d_backprop_filter(i, a, b):
    fmt, groups = a["data_format"], a["groups"]
    x, dy = i["x"], i["dy"]
    dtype = x.dtype
    work = _work_dtype(dtype)
    x = _nhwc(x, fmt).astype(work, copy=False)
    dy = _nhwc(dy, fmt).astype(work, copy=False)
    h, wd, c = x.shape[-3:]
    n, oh, ow, o = dy.shape[-4:]
    kh, kw = a["filter_hw"]
    out, pads = _geometry((h, wd), (kh, kw), a)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but the input gives {out}")
    p = _windows(_pad(x, pads), out, (kh, kw), a["strides"], a["dilations"])
    cg = c // groups
    if groups == 1 and x.ndim == 4 and dy.ndim == 4:
        rows = math.prod(p.shape[:-3])
        dw = p.reshape(rows, kh * kw * c).T @ dy.reshape(rows, o)
        return np.ascontiguousarray(dw.reshape(kh, kw, c, o), dtype=dtype)
    if _depthwise(groups, x.shape[-1] // groups):
        dw = np.einsum("...nhwijg,...nhwgm->...ijgm", p,
                       dy.reshape(dy.shape[:-1] + (groups, o // groups)))
        return np.ascontiguousarray(dw.reshape(dw.shape[:-2] + (1, o)), dtype=dtype)
    cols = _grouped_cols(p, groups)
    if groups == 1:
        g = dy.reshape(dy.shape[:-4] + (n * oh * ow, o))
    else:
        g = np.moveaxis(dy.reshape(dy.shape[:-4] + (n * oh * ow, groups, o // groups)),
                        -2, -3)
    dw = np.swapaxes(cols, -1, -2) @ g  # [..., (G,) K, M]
    if groups == 1:
        return np.ascontiguousarray(dw.reshape(dw.shape[:-2] + (kh, kw, c, o)), dtype=dtype)
    dw = np.moveaxis(dw, -3, -2)  # [..., G, K, M] -> [..., K, G, M]
    return np.ascontiguousarray(dw.reshape(dw.shape[:-3] + (kh, kw, cg, o)), dtype=dtype)


# --------------------------------------------------------------------------- pooling


def _pool_geometry(hw, a):
    return _geometry(hw, a["ksize"], a)


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).min


@kernel("MaxPool")
def max_pool(i, a, b):
    fmt = a["data_format"]
    x = _nhwc(i["x"], fmt)
    out, pads = _pool_geometry(x.shape[-3:-1], a)
    p = _windows(_pad(x, pads, _lowest(x.dtype)), out, a["ksize"], a["strides"], (1, 1))
    return _from_nhwc(p.max(axis=(-3, -2)), fmt, x.dtype)


def _argmax_positions(x, a):
    """Flat index (row * padded width + col) of each window's maximum in padded `x`,
    shape [..., N, OH, OW, C], plus the geometry. The first maximum wins ties."""
    out, pads = _pool_geometry(x.shape[-3:-1], a)
    kh, kw = a["ksize"]
    p = _windows(_pad(x, pads, _lowest(x.dtype)), out, (kh, kw), a["strides"], (1, 1))
    tap = p.reshape(p.shape[:-3] + (kh * kw, p.shape[-1])).argmax(axis=-2)
    wp = x.shape[-2] + pads[1][0] + pads[1][1]
    rows = np.arange(out[0])[:, None, None] * a["strides"][0] + tap // kw
    cols = np.arange(out[1])[:, None] * a["strides"][1] + tap % kw
    return rows * wp + cols, out, pads


@kernel("MaxPoolGrad")
def max_pool_grad(i, a, b):
    """dy routed to the argmax of each window of x: the VJP of MaxPool."""
    fmt = a["data_format"]
    x, dy = _nhwc(i["x"], fmt), _nhwc(i["dy"], fmt)
    pos, out, pads = _argmax_positions(x, a)
    h, w, c = x.shape[-3:]
    hp, wp = h + pads[0][0] + pads[0][1], w + pads[1][0] + pads[1][1]
    lead = broadcast_shapes(pos.shape[:-3], dy.shape[:-3])  # includes N
    pos = np.broadcast_to(pos, lead + pos.shape[-3:])
    dy = np.broadcast_to(dy, lead + dy.shape[-3:])
    images = int(np.prod(lead, dtype=np.int64))
    # Linear index into [images, HP*WP, C]; bincount sums the colliding (overlapping) ones.
    base = (np.arange(images).reshape(lead + (1, 1, 1)) * (hp * wp)) + pos
    lin = base * c + np.arange(c)
    dx = np.bincount(lin.ravel(), weights=dy.ravel(), minlength=images * hp * wp * c)
    (pt, _), (pl, _) = pads
    dx = dx.reshape(lead + (hp, wp, c))[..., pt:pt + h, pl:pl + w, :]
    return _from_nhwc(dx, fmt, i["dy"].dtype)


@kernel("MaxPoolGradGrad")
def max_pool_grad_grad(i, a, b):
    """dx gathered at the argmax of each window of x: the JVP of MaxPool."""
    fmt = a["data_format"]
    x, dx = _nhwc(i["x"], fmt), _nhwc(i["dx"], fmt)
    pos, out, pads = _argmax_positions(x, a)
    dxp = _pad(dx, pads)
    hp, wp, c = dxp.shape[-3:]  # (sizes spelled out: -1 is ambiguous when one is 0)
    flat = dxp.reshape(dxp.shape[:-3] + (hp * wp, c))
    idx = pos.reshape(pos.shape[:-3] + (out[0] * out[1], pos.shape[-1]))
    lead = broadcast_shapes(flat.shape[:-2], idx.shape[:-2])
    flat = np.broadcast_to(flat, lead + flat.shape[-2:])
    idx = np.broadcast_to(idx, lead + idx.shape[-2:])
    y = np.take_along_axis(flat, idx, axis=-2)
    return _from_nhwc(y.reshape(lead + out + (y.shape[-1],)), fmt, dx.dtype)


def _window_counts(hw, out, pads, a):
    """How many real (unpadded) elements each window covers: [OH, OW, 1]."""
    counts = []
    for ax in (0, 1):
        start = np.arange(out[ax]) * a["strides"][ax] - pads[ax][0]
        stop = np.minimum(start + a["ksize"][ax], hw[ax])
        counts.append(stop - np.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :])[:, :, None]


@kernel("AvgPool")
def avg_pool(i, a, b):
    fmt = a["data_format"]
    x = _nhwc(i["x"], fmt)
    dtype = x.dtype
    xw = x.astype(_work_dtype(dtype), copy=False)
    out, pads = _pool_geometry(x.shape[-3:-1], a)
    p = _windows(_pad(xw, pads), out, a["ksize"], a["strides"], (1, 1))
    y = p.sum(axis=(-3, -2)) / _window_counts(x.shape[-3:-1], out, pads, a).astype(xw.dtype)
    return _from_nhwc(y, fmt, dtype)


@kernel("AvgPoolGrad")
def avg_pool_grad(i, a, b):
    """dy spread evenly over each window's real elements: the VJP of AvgPool."""
    fmt = a["data_format"]
    dy = _nhwc(i["dy"], fmt)
    dtype = dy.dtype
    work = _work_dtype(dtype)
    hw = a["input_hw"]
    out, pads = _pool_geometry(hw, a)
    if out != dy.shape[-3:-1]:
        raise ValueError(f"dy has spatial size {dy.shape[-3:-1]} but an input of size "
                         f"{tuple(hw)} gives {out}")
    share = dy.astype(work, copy=False) / _window_counts(hw, out, pads, a).astype(work)
    kh, kw = a["ksize"]
    col = np.broadcast_to(share[..., None, None, :],
                          share.shape[:-1] + (kh, kw, share.shape[-1]))
    dx = _scatter_cols(col, hw, out, pads, a["strides"], (1, 1), work)
    return _from_nhwc(dx, fmt, dtype)
