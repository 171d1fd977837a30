"""NumPy kernels of convolution and pooling: im2col views (as_strided) and BLAS matmuls.

Every kernel works in NHWC internally (NCHW is a transposed view in and out) and accepts
extra leading dimensions on each tensor operand, broadcast against each other like
matmul's batch dimensions; batched tangents go through the same kernels that way.
"""
import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..._core import registry
from ..._core.buffers import Spares
from ..._core.context import intra_op_threads
from ..._core.jit import Loop
from ..._core.threads import run_chosen
from . import conv_direct
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


def _pad(x, pads, value=0, scratch=None):
    """NHWC `x` padded spatially with `value` (slice assignment: np.pad is much slower);
    in the `scratch` slot (see `_scratch_array`) when the kernel only reads it."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    h, w = x.shape[-3:-1]
    shape = x.shape[:-3] + (h + pt + pb, w + pl + pr, x.shape[-1])
    if scratch is None:
        out = np.full(shape, value, x.dtype)
    else:
        out = _scratch_array(shape, x.dtype, scratch)
        out.fill(value)
    out[..., pt:pt + h, pl:pl + w, :] = x
    return out


def _windows(xp, out, khw, strides, dilations):
    """View [..., N, OH, OW, KH, KW, C] of every window of padded NHWC `xp` (no copy)."""
    *lead, s_h, s_w, s_c = xp.strides
    shape = xp.shape[:-3] + (out[0], out[1], khw[0], khw[1], xp.shape[-1])
    strides = tuple(lead) + (s_h * strides[0], s_w * strides[1], s_h * dilations[0],
                             s_w * dilations[1], s_c)
    return as_strided(xp, shape, strides, writeable=False)


def _tap_major(channels: int, kw: int, dilation_w: int, dtype) -> bool:
    """Whether im2col should be laid out tap-major ([KH*KW*C, rows]) rather than
    row-major ([rows, KH*KW*C]). A row-major copy moves runs of KW*C contiguous elements
    (C when dilated): with few channels and a small filter those runs are too short
    (tap-major is 6x faster for C = 1, KW = 3), while a tap-major copy moves output rows.
    A matmul reads either layout without a copy (BLAS takes the transpose)."""
    run = channels * (kw if dilation_w == 1 else 1)
    return run * dtype.itemsize < 48


_scratch = threading.local()
_SCRATCH_BYTES = 1 << 24  # the most one thread keeps per slot between calls


def _scratch_array(shape, dtype, slot: str):
    """An uninitialized array for a temporary that dies inside the kernel (an im2col
    matrix, a padded input), carved from a buffer this thread keeps between calls under
    `slot` (temporaries alive at once use different slots). A fresh allocation of this
    size goes back to the OS when freed, so every call would fault in each page again:
    on a virtual machine that costs as much as the copy that fills it."""
    size = math.prod(shape) * dtype.itemsize
    if size > _SCRATCH_BYTES:
        return np.empty(shape, dtype)
    bufs = _scratch.__dict__.setdefault("bufs", {})
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < size:
        buf = bufs[slot] = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)


# im2col elements per block of `_Columns`: a block of 2 MB (float32) is written and
# read again by the product while still in cache; a whole im2col matrix of tens of MB
# goes out to memory and back (and past _SCRATCH_BYTES faults in its pages on every
# call). Measured on 3x3 convolutions of 32x32x32 to 8x8x128 at batch 32: 10-50% faster
# than one product over the whole matrix (blocks of 256K-2M elements within noise of
# each other; 64K a little slower: the products get short).
COL_BLOCK = 1 << 19


# Multiply-adds from which an im2col convolution's blocks (and a scatter-add input
# gradient's runs of images) are shared by the intra-op threads, when measured faster
# (threads.run_chosen: handing a part to a pool thread costs 50-150 us on a virtual
# machine). Measured on 2 cores, 3x3 convolutions at batch 32: 15x15x32 -> 64 (100 M)
# forward 2.6 -> 1.7 ms, filter gradient 2.6 -> 1.9, input gradient 3.4 -> 2.2;
# 32x32x32 -> 32 SAME (302 M) 10.3 -> 6.2, 10.3 -> 6.1, 10.7 -> 5.4 (a ResNet basic
# block's step at 2 threads: 38 -> 29-33 ms).
SPLIT_CONV_FROM = 1 << 23
IMAGE_RUNS = 4  # runs of images of a scatter-add input gradient from SPLIT_CONV_FROM
_CONV_CHOICES: dict = {}  # (kernel, shapes) -> ThreadChoice


def _image_runs(n: int, size: int) -> list:
    """Runs of images [(lo, hi), ...] for a kernel of `size` multiply-adds over a batch of
    `n`, from the shapes alone (a product's rows split otherwise may round otherwise:
    the runs must not depend on the threads): one run below SPLIT_CONV_FROM, else
    IMAGE_RUNS (the intra-op threads take them in turn)."""
    parts = 1 if size < SPLIT_CONV_FROM else min(n, IMAGE_RUNS)
    return [(n * p // parts, n * (p + 1) // parts) for p in range(parts)]


class _Columns:
    """The im2col matrix of windows `p` [N, OH, OW, KH, KW, C] in blocks of whole output
    rows (about COL_BLOCK elements each, fixed by the shapes alone). Rows are the
    flattened (N, OH, OW) positions; `block(i)` is (first row, rows [block rows,
    KH*KW*C]) in the calling thread's scratch, overwritten by its next call there."""

    def __init__(self, p, tap_major: bool):
        n, oh, ow, kh, kw, c = p.shape
        self.p, self.tap_major, self.k = p, tap_major, kh * kw * c
        self.rows = n * oh * ow
        per = max(1, COL_BLOCK // max(1, ow * self.k))  # output rows of OW pixels in a block
        # (as many blocks as that size asks for, made even: the threads get equal shares)
        if per >= oh:  # whole images per block
            step = max(1, per // max(1, oh))
            step = -(-n // -(-n // step)) if n else step
            self.units = [(a * oh * ow, (a, min(n, a + step))) for a in range(0, n, step)]
            self.most = min(step, n) * oh * ow
        else:
            per = -(-oh // -(-oh // per))
            self.units = [(i * oh * ow + r * ow, (i, r, r + per)) for i in range(n)
                          for r in range(0, oh, per)]
            self.most = per * ow

    def __len__(self) -> int:
        return len(self.units)

    def block(self, i: int) -> tuple:
        start, unit = self.units[i]
        v = self.p[unit[0]:unit[1]] if len(unit) == 2 else self.p[unit[0], unit[1]:unit[2]]
        k, rows = self.k, math.prod(v.shape[:-3])
        buf = _scratch_array((self.most * k,), self.p.dtype, "cols")
        if self.tap_major:
            # [K, rows] in scratch, handed over transposed (BLAS reads it without a copy)
            block = buf[:rows * k].reshape(v.shape[-3:] + v.shape[:-3])
            np.copyto(block, v.transpose(tuple(range(v.ndim - 3, v.ndim))
                                         + tuple(range(v.ndim - 3))))
            return start, block.reshape(k, rows).T
        block = buf[:rows * k].reshape(v.shape)
        np.copyto(block, v)
        return start, block.reshape(rows, k)

    def shared(self, width: int) -> bool:
        """Whether the blocks of a product with `width` columns go to several threads
        (from the shapes and the intra-op threads alone)."""
        return (len(self.units) > 1 and intra_op_threads() > 1
                and self.rows * self.k * width >= SPLIT_CONV_FROM)

    def each(self, use, width: int, key) -> None:
        """`use(i, first row, rows)` for every block i: in order on this thread, or
        (`shared(width)`) in turn on the intra-op threads when measured faster."""
        if not self.shared(width):
            for i in range(len(self.units)):
                use(i, *self.block(i))
            return
        run_chosen(lambda i: use(i, *self.block(i)), [(i,) for i in range(len(self.units))],
                   _CONV_CHOICES, key)


def _taps(xp, out, khw, strides, dilations=(1, 1)):
    """Views [..., N, OH, OW, C] of padded NHWC `xp`, one per window tap (i, j) in
    row-major tap order: the elements that tap reads in every window (no copy)."""
    span_h, span_w = (out[0] - 1) * strides[0] + 1, (out[1] - 1) * strides[1] + 1
    for i in range(khw[0]):
        r = i * dilations[0]
        for j in range(khw[1]):
            q = j * dilations[1]
            yield xp[..., r:r + span_h:strides[0], q:q + span_w:strides[1], :]


def _scatter_taps(tap, lead, khw, hw, out, pads, strides, dilations, dtype, into=None):
    """Adjoint of `_windows`: add `tap(i, j)` ([..., N, OH, OW, C], filter tap (i, j) of
    every window) back into the input positions it was read from; `lead` is [..., N, C].

    One vectorized add per filter tap (KH*KW of them), each over the whole batch. The
    sums go to a padded array in scratch, then cropped into a kept output array (or into
    `into`, [..., N, H, W, C], when given); with no padding they go straight there: a
    fresh array of a few MB may fault in its pages on every call, as costly as the adds (a 3x3 stride-2 AvgPoolGrad of
    32x16x16x48 took 12 ms in one run so, 4-5 ms in scratch).
    """
    (pt, pb), (pl, pr) = pads
    shape = lead[:-1] + (hw[0] + pt + pb, hw[1] + pl + pr, lead[-1])
    crop = bool(pt or pb or pl or pr)
    acc = (_scratch_array(shape, np.dtype(dtype), "scatter") if crop else
           _SPARE_SCATTER.empty(shape, np.dtype(dtype)) if into is None else into)
    acc.fill(0)
    if strides == (1, 1):
        for (i, j), view in zip(np.ndindex(*khw), _taps(acc, out, khw, strides, dilations)):
            view += tap(i, j)
    else:
        _scatter_phases(acc, tap, khw, out, strides, dilations)
    if not crop:
        return acc
    dx = _SPARE_SCATTER.empty(lead[:-1] + tuple(hw) + lead[-1:], acc.dtype) \
        if into is None else into
    np.copyto(dx, acc[..., pt:pt + hw[0], pl:pl + hw[1], :])
    return dx


def _scatter_phases(acc, tap, khw, out, strides, dilations):
    """`_scatter_taps`'s adds for strides > 1. A strided add moves runs of only C
    elements; but tap (i, j) lands on the sub-grid acc[r % s::s, q % s::s] (r, q: its
    offsets), shifted by (r // s, q // s) there. So the taps of each sub-grid are summed
    in a contiguous buffer first (whole-row runs) and written to it once."""
    (sh, sw), (oh, ow) = strides, out
    phases: dict = {}
    for i, j in np.ndindex(*khw):
        r, q = i * dilations[0], j * dilations[1]
        phases.setdefault((r % sh, q % sw), []).append((i, j, r // sh, q // sw))
    for (r0, q0), taps in phases.items():
        bh = oh + max(t[2] for t in taps)
        bw = ow + max(t[3] for t in taps)
        buf = _scratch_array(acc.shape[:-3] + (bh, bw, acc.shape[-1]), acc.dtype, "phase")
        buf.fill(0)
        for i, j, a, c in taps:
            buf[..., a:a + oh, c:c + ow, :] += tap(i, j)
        # every window lies inside acc, so the buffer fits in the sub-grid
        acc[..., r0::sh, q0::sw, :][..., :bh, :bw, :] = buf


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


def _direct(x, w, bias, attrs, activation: str):
    """act(conv(x, w) + bias) by a direct loop (conv_direct: dense with few channels, or
    depthwise), or None where none applies (or without numba). `activation` is one the
    loops apply themselves (conv_direct.ACTIVATIONS)."""
    work = _work_dtype(x.dtype)
    x = _nhwc(x, attrs["data_format"])
    groups = attrs["groups"]
    if conv_direct.applies(x.shape, w.shape, work, groups):
        run = conv_direct.forward
    elif conv_direct.depthwise_applies(x.shape, w.shape, work, groups):
        run = conv_direct.depthwise_forward
    else:
        return None
    x = x.astype(work, copy=False)
    out, pads = _geometry(x.shape[1:3], w.shape[:2], attrs)
    xp = _pad(x, pads, scratch="pad")
    y = run(xp, w.astype(work, copy=False), bias, out, attrs["strides"], attrs["dilations"],
            activation, _SPARE_CONV.empty((x.shape[0],) + out + w.shape[-1:], work))
    return None if y is None else _from_nhwc(y, attrs["data_format"], x.dtype)


def _pointwise(x, w, attrs) -> bool:
    """Whether a convolution is a 1x1 one reading every pixel (no stride, no padding):
    a product of the NHWC input's rows by the filters, with no im2col copy. `w`: the
    filters, or their spatial size."""
    khw = w if isinstance(w, tuple) else w.shape[:2]
    return (tuple(khw) == (1, 1) and tuple(attrs["strides"]) == (1, 1)
            and (attrs["padding"] in ("SAME", "VALID")
                 or not any(v for pair in attrs["padding"] for v in pair)))


@kernel("Conv2D", blas=True)
def conv2d(inputs, attrs, backend):
    fmt, groups = attrs["data_format"], attrs["groups"]
    x, w = inputs["x"], inputs["filters"]
    dtype = x.dtype
    direct = _direct(x, w, None, attrs, "")
    if direct is not None:
        return direct.astype(dtype, copy=False)
    work = _work_dtype(dtype)
    x = _nhwc(x, fmt).astype(work, copy=False)
    w = w.astype(work, copy=False)
    n, h, wd = x.shape[-4:-1]
    kh, kw, _, o = w.shape[-4:]
    out, pads = _geometry((h, wd), (kh, kw), attrs)
    p = _windows(_pad(x, pads, scratch="pad"), out, (kh, kw), attrs["strides"], attrs["dilations"])
    if groups == 1 and w.ndim == 4:
        # No batch on the filters: one (rows, K) x (K, O) product over every leading dim.
        # (Sizes spelled out, no -1: it is ambiguous when a dimension is 0.)
        k = kh * kw * x.shape[-1]
        if x.ndim == 4 and _pointwise(x, w, attrs):
            rows = x.reshape(n * h * wd, k)  # (a copy only for a transposed NCHW view)
            y = np.matmul(rows, w.reshape(k, o), out=_SPARE_CONV.empty((rows.shape[0], o), work))
        elif x.ndim == 4:
            tap_major = _tap_major(x.shape[-1], kw, attrs["dilations"][1], work)
            # (into a kept array when free: a fresh large one page-faults as it is written)
            y = _SPARE_CONV.empty((n * out[0] * out[1], o), work)
            wk = w.reshape(k, o)

            def product(_, start, rows):
                np.matmul(rows, wk, out=y[start:start + rows.shape[0]])
            _Columns(p, tap_major).each(product, o, ("Conv2D", x.shape, w.shape, work))
        else:
            y = p.reshape(math.prod(p.shape[:-3]), k) @ w.reshape(k, o)
        lead = x.shape[:-4]
    elif _depthwise(groups, w.shape[-2]):
        y = np.einsum("...nhwijg,...ijgm->...nhwgm", p, _depthwise_filters(w, groups))
        lead = y.shape[:-5]
    else:
        y = _ungroup_out(_grouped_cols(p, groups) @ _grouped_filters(w, groups), groups)
        lead = y.shape[:-2]
    return _from_nhwc(y.reshape(lead + (n,) + out + (o,)), fmt, dtype)


@kernel("Conv2DBackpropInput", blas=True)
def conv2d_backprop_input(inputs, attrs, backend):
    fmt, groups = attrs["data_format"], attrs["groups"]
    dy, w = inputs["dy"], inputs["filters"]
    dtype = dy.dtype
    work = _work_dtype(dtype)
    dy = _nhwc(dy, fmt).astype(work, copy=False)
    w = w.astype(work, copy=False)
    n, oh, ow, o = dy.shape[-4:]
    kh, kw, cg, _ = w.shape[-4:]
    hw = attrs["input_hw"]
    out, pads = _geometry(hw, (kh, kw), attrs)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but an input of size {tuple(hw)} "
                         f"gives {out}")
    m = o // groups
    lead_dy = dy.shape[:-4]
    if dy.ndim == 4 and conv_direct.depthwise_applies((n,) + tuple(hw) + (groups,), w.shape,
                                                      work, groups):
        (pt, pb), (pl, pr) = pads
        dxp = conv_direct.depthwise_input_grad(
            dy, w, (n, hw[0] + pt + pb, hw[1] + pl + pr, groups), attrs["strides"],
            attrs["dilations"])
        if dxp is not None:
            return _from_nhwc(dxp[:, pt:pt + hw[0], pl:pl + hw[1]], fmt, dtype)
    if groups == 1 and dy.ndim == 4 and w.ndim == 4 and tuple(attrs["strides"]) == (1, 1) \
            and (kh == kw == 1 or 8 <= cg and (o <= cg or math.prod(hw) <= oh * ow)):
        # (its im2col matrix has H*W rows of KH*KW*O, the columns below OH*OW rows of
        # KH*KW*C: with more filters than channels and a larger input than output (VALID)
        # it moves more; with few channels its product is too narrow: measured slower
        # there; a 1x1 filter has no im2col, so its product dy w^T wins always: no
        # scatter after it)
        dx = _input_grad_by_forward(dy, w, pads, attrs, backend)
        if dx is not None:
            return _from_nhwc(dx, fmt, dtype)
    if _depthwise(groups, w.shape[-2]):
        # Per tap: dx window element (i, j) of channel g = sum_m dy[..., g, m] w[i, j, g, m].
        dyg = dy.reshape(lead_dy + (n, oh, ow, groups, m))
        wg = _depthwise_filters(w, groups)
        lead = broadcast_shapes(lead_dy, w.shape[:-4]) + (n, groups)

        def tap(row, col):
            return np.einsum("...gm,...gm->...g", dyg, wg[..., row, col, None, None, None, :, :])
        dx = _scatter_taps(tap, lead, (kh, kw), hw, out, pads, attrs["strides"], attrs["dilations"],
                           work)
        return _from_nhwc(dx, fmt, dtype)
    if groups == 1 and dy.ndim == 4 and w.ndim == 4:
        rows = dy.reshape(n * oh * ow, o)
        if cg * work.itemsize < 32:
            # Few channels: one product [KH*KW*C, N*OH*OW] (a batch of products C wide
            # is far slower), scattered channel-major, [C, N, H, W] (each add then moves
            # whole rows, not runs of C elements), and moved to NHWC once at the end
            # (7x7 stride 2, 3 channels, 64 filters over 32x64x64: 47 -> 16 ms; 3x3 with
            # 6 channels 6.5 -> 4.8; with 8 channels 1.7 -> 1.8: the columns below).
            col = (w.reshape(kh * kw * cg, o) @ rows.T).reshape(kh, kw, cg, n, oh, ow, 1)
            dxc = _scatter_taps(lambda row, column: col[row, column], (cg, n, 1), (kh, kw),
                                hw, out, pads, attrs["strides"], attrs["dilations"], work)
            return _from_nhwc(dxc[..., 0].transpose(1, 2, 3, 0), fmt, dtype)
        # Columns tap by tap, [N*OH*OW, C] each (each tap's scatter-add then reads one
        # contiguous block), made as the scatter takes them in one scratch array that
        # stays in cache (all taps at once were KH*KW times dx's size, freshly faulted
        # in: 3x3 stride 2 over 32x32x32x32 7.3 -> 6.7 ms)
        wt = np.ascontiguousarray(np.swapaxes(w, -1, -2))  # [KH, KW, O, C]

        runs = _image_runs(n, n * oh * ow * o * cg * kh * kw)
        dx = None if len(runs) == 1 else np.empty((n,) + tuple(hw) + (cg,), work)

        def images(lo, hi):
            """dx of images [lo, hi) (every window lies in one image), into dx's rows."""
            part = _scratch_array(((hi - lo) * oh * ow, cg), work, "tap")
            some = rows[lo * oh * ow:hi * oh * ow]

            def tap(row, column):
                return np.matmul(some, wt[row, column], out=part).reshape(hi - lo, oh, ow, cg)
            return _scatter_taps(tap, (hi - lo, cg), (kh, kw), hw, out, pads,
                                 attrs["strides"], attrs["dilations"], work,
                                 None if dx is None else dx[lo:hi])

        if dx is None:
            return _from_nhwc(images(0, n), fmt, dtype)
        run_chosen(images, runs, _CONV_CHOICES, ("Conv2DBackpropInput", dy.shape, w.shape,
                                                  tuple(hw), work))
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
    dx = _scatter_cols(col, hw, out, pads, attrs["strides"], attrs["dilations"], work)
    return _from_nhwc(dx, fmt, dtype)


def _input_grad_by_forward(dy, w, pads, attrs, backend):
    """The input gradient of a stride-1 convolution as a forward one: dx correlates dy,
    padded by (reach - pad) on each side (reach = the dilated filter's extent - 1), with
    the filters flipped in both spatial axes and their channels swapped ([KH, KW, O, C]).
    So it runs the forward kernel's im2col product (or its direct loop), with no
    scatter-add of window taps. None where a pad would be negative (explicit pads past the
    filter's reach) or dy has no rows or columns. `dy` is NHWC in the work dtype; so is
    the result."""
    kh, kw = w.shape[:2]
    dh, dw = attrs["dilations"]
    (pt, pb), (pl, pr) = pads
    eh, ew = (kh - 1) * dh, (kw - 1) * dw
    flipped_pads = ((eh - pt, eh - pb), (ew - pl, ew - pr))
    if any(v < 0 for pair in flipped_pads for v in pair) or 0 in dy.shape[1:3]:
        return None  # (an empty dy padded may be narrower than the filter)
    flipped = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
    forward = {"strides": (1, 1), "padding": flipped_pads, "dilations": (dh, dw),
               "data_format": "NHWC", "groups": 1}
    return conv2d({"x": dy, "filters": flipped}, forward, backend)


@kernel("Conv2DBackpropFilter", blas=True)
def conv2d_backprop_filter(inputs, attrs, backend):
    fmt, groups = attrs["data_format"], attrs["groups"]
    x, dy = inputs["x"], inputs["dy"]
    dtype = x.dtype
    work = _work_dtype(dtype)
    x = _nhwc(x, fmt).astype(work, copy=False)
    dy = _nhwc(dy, fmt).astype(work, copy=False)
    h, wd, c = x.shape[-3:]
    n, oh, ow, o = dy.shape[-4:]
    kh, kw = attrs["filter_hw"]
    out, pads = _geometry((h, wd), (kh, kw), attrs)
    if out != (oh, ow):
        raise ValueError(f"dy has spatial size {(oh, ow)} but the input gives {out}")
    direct = _direct_filter_grad(x, dy, pads, attrs)
    if direct is not None:
        return direct[0].astype(dtype, copy=False)
    p = _windows(_pad(x, pads, scratch="pad"), out, (kh, kw), attrs["strides"], attrs["dilations"])
    cg = c // groups
    if groups == 1 and x.ndim == 4 and dy.ndim == 4 and (kh, kw) == (1, 1) \
            and _pointwise(x, (1, 1), attrs):
        # a 1x1 filter reading every pixel: x^T dy on the rows as they are (no im2col copy)
        dw = x.reshape(n * h * wd, c).T @ dy.reshape(n * oh * ow, o)
        return np.ascontiguousarray(dw.reshape(1, 1, c, o), dtype=dtype)
    if groups == 1 and x.ndim == 4 and dy.ndim == 4:
        # block by block (see `_Columns`), the blocks' products summed in order (the
        # 32x32x32->32 3x3 gradient 22 -> 11 ms at batch 32: a whole im2col matrix
        # of 38 MB went to memory and back)
        tap_major = _tap_major(c, kw, attrs["dilations"][1], work)
        rows = dy.reshape(n * oh * ow, o)
        columns = _Columns(p, tap_major)
        if columns.shared(o):
            # each block's product into its own slice, summed in order afterwards: the
            # same products and sums as one thread's (the same bits)
            parts = np.empty((len(columns), columns.k, o), work)

            def product(i, start, cols):
                np.matmul(cols.T, rows[start:start + cols.shape[0]], out=parts[i])
            columns.each(product, o, ("Conv2DBackpropFilter", x.shape, dy.shape, work))
            dw = parts[0]
            for part in parts[1:]:
                dw += part
        else:
            dw = part = None
            for i in range(len(columns)):
                start, cols = columns.block(i)
                g = rows[start:start + cols.shape[0]]
                if dw is None:
                    dw = cols.T @ g
                else:
                    part = np.matmul(cols.T, g, out=part)
                    dw += part
        if dw is None:  # no output rows (an empty batch)
            dw = np.zeros((kh * kw * c, o), work)
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


def _direct_filter_grad(x, dy, pads, attrs):
    """(filter gradient, bias gradient) by a direct loop (conv_direct: dense with few
    channels, or depthwise) for NHWC work-dtype `x` and `dy`, or None where none applies
    (or without numba)."""
    if x.ndim != 4 or dy.ndim != 4 or dy.shape[0] != x.shape[0]:
        return None
    groups, (kh, kw) = attrs["groups"], attrs["filter_hw"]
    if conv_direct.applies(x.shape, (kh, kw, x.shape[-1], dy.shape[-1]), x.dtype, groups):
        run = conv_direct.filter_grad
    elif conv_direct.depthwise_applies(x.shape, (kh, kw, 1, dy.shape[-1]), x.dtype, groups):
        run = conv_direct.depthwise_filter_grad
    else:
        return None
    return run(_pad(x, pads, scratch="pad"), dy, (kh, kw), attrs["strides"],
               attrs["dilations"])


@kernel("FusedConv2D", blas=True)
def fused_conv2d(inputs, attrs, backend):
    """act(conv2d(x, filters) + bias) (ops/conv.py): one direct loop where it applies.
    `activation` is "" or any unary op's name: Relu and Relu6 are applied in the loop (or
    in place after the bias), any other by its own NumPy kernel after the bias."""
    x, w, bias = inputs["x"], inputs["filters"], inputs["bias"]
    activation = attrs["activation"]
    inline = activation in conv_direct.ACTIVATIONS
    y = _direct(x, w, bias, attrs, activation if inline else "")
    if y is not None:
        y = y.astype(x.dtype, copy=False)
    else:
        y = conv2d({"x": x, "filters": w}, attrs, backend)
        y += bias  # (a new array: Conv2D's output is this kernel's alone)
        if activation == "Relu":
            np.maximum(y, 0, out=y)
        elif activation == "Relu6":
            np.clip(y, 0, 6, out=y)
    if inline:
        return y
    entry = registry.KERNELS.get(activation, {}).get("numpy")
    if entry is None:
        raise ValueError(f"FusedConv2D: activation {activation!r} has no NumPy kernel "
                         f"(output {list(y.shape)} {y.dtype})")
    return entry.func({"x": y}, {}, backend)


@kernel("Conv2DBackpropFilterWithBias", blas=True)
def conv2d_backprop_filter_with_bias(inputs, attrs, backend):
    """(Conv2DBackpropFilter, dy summed over its images and pixels) (ops/conv.py)."""
    x, dy = inputs["x"], inputs["dy"]
    dtype, work = x.dtype, _work_dtype(x.dtype)
    if x.ndim == dy.ndim == 4:
        out, pads = _geometry(x.shape[1:3], attrs["filter_hw"], attrs)
        if out == dy.shape[1:3]:
            direct = _direct_filter_grad(x.astype(work, copy=False),
                                         dy.astype(work, copy=False), pads, attrs)
            if direct is not None:
                return [d.astype(dtype, copy=False) for d in direct]
    return [conv2d_backprop_filter(inputs, attrs, backend),
            np.add.reduce(dy, axis=(0, 1, 2), dtype=dy.dtype)]


# --------------------------------------------------------------------------- pooling


def _pool_geometry(hw, a):
    return _geometry(hw, a["ksize"], a)


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _pool_taps(x, a, fill=0):
    """(output size, pads, padded `x`, its window-tap views) of a pooling of NHWC `x`."""
    out, pads = _pool_geometry(x.shape[-3:-1], a)
    xp = _pad(x, pads, fill, "pad")
    return out, pads, xp, list(_taps(xp, out, a["ksize"], a["strides"]))


def _window_max(taps):
    """The maximum of each window: one np.maximum per tap over all windows at once (a
    reduction over a strided window view iterates tiny inner loops and is slower)."""
    y = taps[0].copy()
    for t in taps[1:]:
        np.maximum(y, t, out=y)
    return y


def _first_max(taps, y):
    """One boolean mask per tap (tap order): the windows whose first maximum (np.argmax's
    choice: the first NaN when there is one) is that tap. Every window is in one mask."""
    nan = y.dtype.kind not in "biu" and bool(np.isnan(y).any())
    done = None
    for k, t in enumerate(taps):
        m = t == y
        if nan:
            m |= np.isnan(t)
        if done is not None:
            np.greater(m, done, out=m)  # held by this tap and by no earlier one
        if done is None:
            done = m.copy()
        elif k < len(taps) - 1:
            done |= m
        yield m


def _overlapping(a) -> bool:
    return any(k > s for k, s in zip(a["ksize"], a["strides"]))


def _maskable(g) -> bool:
    """Whether `g * mask` equals `where(mask, g, 0)`: true unless `g` holds an inf or a
    NaN (times 0: NaN). The product is several times faster than a masked copy."""
    kind = g.dtype.kind
    return kind in "iu" or (kind == "f" and bool(np.isfinite(g).all()))


def _max_pool_2x2(xp, dy, out, sh, sw, grad, zero):  # pragma: no cover (numba runs it)
    """The loop behind `_MAX_POOL_2X2`, the common window: each window's first maximum
    (the first NaN when it holds one, as np.argmax picks) from flags that vectorize across
    channels (written one statement each: numba's tuple assignments vectorize worse).
    grad=False: `out` [N, OH, OW, C] gets the maxima; grad=True (disjoint windows): `out`
    [like xp] gets `dy` at them and `zero` (out's type: no widening) elsewhere."""
    n_, oh_, ow_, c_ = dy.shape
    win = np.empty(c_, np.int32)  # each channel's window winner (grad)
    for n in range(n_):
        for i in range(oh_):
            i0 = i * sh
            for j in range(ow_):
                j0 = j * sw
                r0 = xp[n, i0, j0]
                r1 = xp[n, i0, j0 + 1]
                r2 = xp[n, i0 + 1, j0]
                r3 = xp[n, i0 + 1, j0 + 1]
                if grad:
                    g = dy[n, i, j]
                    d0 = out[n, i0, j0]
                    d1 = out[n, i0, j0 + 1]
                    d2 = out[n, i0 + 1, j0]
                    d3 = out[n, i0 + 1, j0 + 1]
                    for c in range(c_):
                        a = r0[c]
                        b = r1[c]
                        e = r2[c]
                        f = r3[c]
                        m = max(max(a, b), max(e, f))
                        na = a != a
                        nb = b != b
                        ne = e != e
                        num = ~(na | nb | ne | (f != f))  # no NaN: the first maximum
                        t0 = na | (num & (a == m))
                        t1 = ~t0 & (nb | (num & (b == m)))
                        t2 = ~(t0 | t1) & (ne | (num & (e == m)))
                        win[c] = 0 if t0 else (1 if t1 else (2 if t2 else 3))
                    # then each row of the window on its own: a loop storing through
                    # four rows at once needs more aliasing checks than LLVM makes to
                    # vectorize it (the grad ran 12x slower than the maxima)
                    for c in range(c_):
                        d0[c] = g[c] if win[c] == 0 else zero
                    for c in range(c_):
                        d1[c] = g[c] if win[c] == 1 else zero
                    for c in range(c_):
                        d2[c] = g[c] if win[c] == 2 else zero
                    for c in range(c_):
                        d3[c] = g[c] if win[c] == 3 else zero
                else:
                    o = out[n, i, j]
                    for c in range(c_):
                        a = r0[c]
                        b = r1[c]
                        e = r2[c]
                        f = r3[c]
                        m = max(max(a, b), max(e, f))
                        nan = (a != a) | (b != b) | (e != e) | (f != f)
                        o[c] = a + b + e + f if nan else m


def _max_pool_scan(xp, g, out, kh, kw, sh, sw, mode):  # pragma: no cover (numba)
    """The loop behind `_MAX_POOL_SCAN`, any window: each window's first maximum over the
    padded [N, H, W, C] `xp` (the first NaN when it holds one), in one pass where the
    NumPy kernels make several per tap (MaxPool's maxima alone are as fast in NumPy but
    for the 2x2 window). Mode 1 (MaxPoolGrad) adds `g` [N, OH, OW, C] into `out` (zeros
    like xp) at them; mode 2 (MaxPoolGradGrad): `out` [N, OH, OW, C] gets `g` [like xp]
    read at them."""
    n_, oh_, ow_, c_ = g.shape if mode == 1 else out.shape
    # Any window: the running maximum and its tap per channel. MaxPoolGrad keeps every
    # window's tap, then adds tap by tap as the NumPy kernel does (overlapping windows
    # add several values into one element: the same order gives the same rounding).
    arg = np.empty((n_, oh_, ow_, c_), np.int32)
    best = np.empty(c_, xp.dtype)
    for n in range(n_):
        for i in range(oh_):
            i0 = i * sh
            for j in range(ow_):
                j0 = j * sw
                here = arg[n, i, j]
                for c in range(c_):
                    best[c] = xp[n, i0, j0, c]
                    here[c] = 0
                for t in range(1, kh * kw):
                    a, b = i0 + t // kw, j0 + t % kw
                    for c in range(c_):
                        v, m = xp[n, a, b, c], best[c]
                        take = (v > m) | ((v != v) & (m == m))
                        best[c] = v if take else m
                        here[c] = t if take else here[c]
                if mode == 2:
                    for c in range(c_):
                        out[n, i, j, c] = g[n, i0 + here[c] // kw, j0 + here[c] % kw, c]
        if mode == 1:  # this image's sums, tap by tap
            for t in range(kh * kw):
                for i in range(oh_):
                    a = i * sh + t // kw
                    for j in range(ow_):
                        b = j * sw + t % kw
                        for c in range(c_):
                            out[n, a, b, c] += g[n, i, j, c] if arg[n, i, j, c] == t else 0


# The scan compiled by numba (the `jit` extra) when installed; its results equal the NumPy
# formulations below exactly (it only compares and selects), which run until it is ready.
# Serial loops: a large batch splits into runs of images that the intra-op pool's threads
# take in turn (`_scan`), not over numba's parallel threads, which wait for work spinning
# on a core for milliseconds after each loop and took it from the pool threads of the
# convolutions next to them (and numba's parallel compile costs several serial ones).
_MAX_POOL_SCAN = Loop(_max_pool_scan)
_MAX_POOL_2X2 = Loop(_max_pool_2x2)
_SCANNED_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # (numba has no halves)
_SPARE_Y, _SPARE_DX = Spares(), Spares()  # the loops' outputs, taken again when free
_SPARE_CONV = Spares()  # Conv2D's outputs
_SPARE_SCATTER, _SPARE_AVG = Spares(), Spares()  # input gradients by scatter; AvgPool's
SPLIT_POOLING_FROM = 1 << 16  # input elements: smaller poolings run on the calling thread
_POOL_CHOICES: dict = {}  # (mode, shapes, dtype) -> ThreadChoice


def _scan(xp, g, out, attrs, mode) -> bool:
    """Run a compiled scan on 4-D operands; False when it cannot (not compiled yet,
    numba missing, broadcast batch dimensions): the caller's NumPy code runs instead."""
    if not (xp.ndim == g.ndim == out.ndim == 4) or not all(
            a.dtype.kind in "iu" or a.dtype in _SCANNED_FLOATS for a in (xp, g, out)):
        return False
    # contiguous operands: a loop typed for them vectorizes, and one compile per dtype
    xp, g = np.ascontiguousarray(xp), np.ascontiguousarray(g)
    (kh, kw), (sh, sw) = attrs["ksize"], attrs["strides"]
    if (kh, kw) == (2, 2) and mode != 2 and (mode == 0 or (sh > 1 and sw > 1)):
        loop, args = _MAX_POOL_2X2, (xp, g, out, sh, sw, mode == 1, out.dtype.type(0))
    elif mode == 0:
        return False  # the NumPy maxima of any other window are as fast
    else:
        loop, args = _MAX_POOL_SCAN, (xp, g, out, kh, kw, sh, sw, mode)
    run = loop.ready(*args)
    if run is None:
        return False
    batch = out.shape[0]
    if xp.size < SPLIT_POOLING_FROM or batch < 2 or intra_op_threads() < 2:
        run(*args)
        return True
    # every window belongs to one image: runs of images (two per thread) go to the
    # intra-op threads when measured faster; each image's results are the same bits
    parts = min(batch, 2 * intra_op_threads())
    bounds = [batch * p // parts for p in range(parts + 1)]
    run_chosen(lambda lo, hi: run(xp[lo:hi], g[lo:hi], out[lo:hi], *args[3:]),
               list(zip(bounds[:-1], bounds[1:])), _POOL_CHOICES,
               (mode, xp.shape, g.shape, xp.dtype))
    return True


@kernel("MaxPool")
def max_pool(inputs, attrs, backend):
    fmt = attrs["data_format"]
    x = _nhwc(inputs["x"], fmt)
    out, _, xp, taps = _pool_taps(x, attrs, _lowest(x.dtype))
    y = _SPARE_Y.empty(x.shape[:-3] + out + x.shape[-1:], x.dtype)
    if not _scan(xp, y, y, attrs, 0):
        y = _window_max(taps)
    return _from_nhwc(y, fmt, x.dtype)


@kernel("MaxPoolGrad")
def max_pool_grad(inputs, attrs, backend):
    """dy routed to the argmax of each window of x: the VJP of MaxPool."""
    fmt = attrs["data_format"]
    x, dy = _nhwc(inputs["x"], fmt), _nhwc(inputs["dy"], fmt)
    out, pads, xp, taps = _pool_taps(x, attrs, _lowest(x.dtype))
    lead = broadcast_shapes(x.shape[:-3], dy.shape[:-3])  # includes N
    h, w = x.shape[-3:-1]
    (pt, _), (pl, _) = pads
    # Windows that tile the padded input write each element once: no zeroing needed.
    tiled = all(k == s and n * k == p for k, s, n, p in zip(
        attrs["ksize"], attrs["strides"], out, xp.shape[-3:-1]))
    if x.shape[:-3] == lead == dy.shape[:-3] and xp.dtype == dy.dtype:
        dx = (_SPARE_DX.empty if tiled and tuple(attrs["ksize"]) == (2, 2) else
              _SPARE_DX.zeros)(lead + xp.shape[-3:], dy.dtype)  # (2x2: writes all of it)
        if _scan(xp, dy, dx, attrs, 1):
            return _from_nhwc(dx[..., pt:pt + h, pl:pl + w, :], fmt, dy.dtype)
    overlap, product = _overlapping(attrs), _maskable(dy)
    dx = (np.empty if tiled and product else np.zeros)(lead + xp.shape[-3:], dy.dtype)
    for m, d in zip(_first_max(taps, _window_max(taps)),
                    _taps(dx, out, attrs["ksize"], attrs["strides"])):
        if overlap:  # windows share elements: their gradients add up
            if product:
                d += dy * m
            else:
                np.add(d, dy, out=d, where=m)
        elif product:
            np.multiply(dy, m, out=d)
        else:
            np.copyto(d, dy, where=m)
    return _from_nhwc(dx[..., pt:pt + h, pl:pl + w, :], fmt, dy.dtype)


@kernel("MaxPoolGradGrad")
def max_pool_grad_grad(inputs, attrs, backend):
    """dx gathered at the argmax of each window of x: the JVP of MaxPool."""
    fmt = attrs["data_format"]
    x, dx = _nhwc(inputs["x"], fmt), _nhwc(inputs["dx"], fmt)
    out, pads, xp, taps = _pool_taps(x, attrs, _lowest(x.dtype))
    lead = broadcast_shapes(x.shape[:-3], dx.shape[:-3])
    dxp = _pad(dx, pads, scratch="pad_dx")
    res = np.zeros(lead + out + x.shape[-1:], dx.dtype)
    if x.shape[:-3] == lead == dx.shape[:-3] and _scan(xp, dxp, res, attrs, 2):
        return _from_nhwc(res, fmt, dx.dtype)
    y = _window_max(taps)
    product = _maskable(dx)
    for m, g in zip(_first_max(taps, y), _taps(dxp, out, attrs["ksize"], attrs["strides"])):
        if product:  # one mask holds each window: the sum of products picks its tap
            res += g * m
        else:
            np.copyto(res, g, where=m)
    return _from_nhwc(res, fmt, dx.dtype)


def _window_counts(hw, out, pads, a):
    """How many real (unpadded) elements each window covers: [OH, OW, 1]."""
    counts = []
    for ax in (0, 1):
        start = np.arange(out[ax]) * a["strides"][ax] - pads[ax][0]
        stop = np.minimum(start + a["ksize"][ax], hw[ax])
        counts.append(stop - np.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :])[:, :, None]


def _span(n: int, stride: int) -> int:
    """The extent of `n` windows `stride` apart, from the first window's start to the last
    one's (exclusive), for a slice start:start + span:stride."""
    return (n - 1) * stride + 1


@kernel("AvgPool")
def avg_pool(inputs, attrs, backend):
    """Each window's mean over its real (unpadded) elements. A window's sum is separable:
    the sums along W of KW taps first ([..., HP, OW, C]), then of those along H (KH taps),
    KH + KW - 2 adds per output element where the taps one by one take KH*KW - 1 (3x3
    windows of 32x16x16x32: 0.85 -> 0.55 ms; 2x2 ones as fast)."""
    fmt = attrs["data_format"]
    x = _nhwc(inputs["x"], fmt)
    dtype = x.dtype
    xw = x.astype(_work_dtype(dtype), copy=False)
    out, pads = _pool_geometry(xw.shape[-3:-1], attrs)
    xp = _pad(xw, pads, 0, "pad")
    (kh, kw), (sh, sw), (oh, ow) = attrs["ksize"], attrs["strides"], out
    rows = _scratch_array(xp.shape[:-2] + (ow, xp.shape[-1]), xw.dtype, "avg_rows")
    np.copyto(rows, xp[..., :, 0:_span(ow, sw):sw, :])
    for b in range(1, kw):
        rows += xp[..., :, b:b + _span(ow, sw):sw, :]
    y = _SPARE_AVG.empty(xp.shape[:-3] + out + xp.shape[-1:], xw.dtype)
    np.copyto(y, rows[..., 0:_span(oh, sh):sh, :, :])
    for a in range(1, kh):
        y += rows[..., a:a + _span(oh, sh):sh, :, :]
    y /= _window_counts(x.shape[-3:-1], out, pads, attrs).astype(xw.dtype)
    return _from_nhwc(y, fmt, dtype)


@kernel("AvgPoolGrad")
def avg_pool_grad(inputs, attrs, backend):
    """dy spread evenly over each window's real elements: the VJP of AvgPool. With unit
    strides, separable as its sums: each share added to the KH rows its window covers
    ([..., HP, OW, C]), then those to the KW columns (in scratch, cropped into a kept
    array; 3x3 over 32x16x16x32: 1.2 -> 0.8 ms). Strided, the taps go by phases (see
    `_scatter_phases`): the column adds would move runs of C elements only (measured
    slower for 2x2 and 3x3 windows of stride 2)."""
    fmt = attrs["data_format"]
    dy = _nhwc(inputs["dy"], fmt)
    dtype = dy.dtype
    work = _work_dtype(dtype)
    hw = attrs["input_hw"]
    out, pads = _pool_geometry(hw, attrs)
    if out != dy.shape[-3:-1]:
        raise ValueError(f"dy has spatial size {dy.shape[-3:-1]} but an input of size "
                         f"{tuple(hw)} gives {out}")
    share = dy.astype(work, copy=False) / _window_counts(hw, out, pads, attrs).astype(work)
    (kh, kw), (sh, sw), (oh, ow) = attrs["ksize"], attrs["strides"], out
    if (sh, sw) != (1, 1):
        col = np.broadcast_to(share[..., None, None, :],
                              share.shape[:-1] + (kh, kw, share.shape[-1]))
        dx = _scatter_cols(col, hw, out, pads, attrs["strides"], (1, 1), work)
        return _from_nhwc(dx, fmt, dtype)
    (pt, pb), (pl, pr) = pads
    hp, wp = hw[0] + pt + pb, hw[1] + pl + pr
    lead, c = share.shape[:-3], share.shape[-1]
    rows = _scratch_array(lead + (hp, ow, c), np.dtype(work), "avg_rows")
    rows.fill(0)
    for a in range(kh):
        rows[..., a:a + _span(oh, sh):sh, :, :] += share
    acc = _scratch_array(lead + (hp, wp, c), np.dtype(work), "scatter")
    acc.fill(0)
    for b in range(kw):
        acc[..., :, b:b + _span(ow, sw):sw, :] += rows
    dx = _SPARE_SCATTER.empty(lead + tuple(hw) + (c,), np.dtype(work))
    np.copyto(dx, acc[..., pt:pt + hw[0], pl:pl + hw[1], :])
    return _from_nhwc(dx, fmt, dtype)
