"""Direct convolutions: loops written once, generic over the geometry (filter size,
strides, dilations, padding, channels, filters, batch), compiled by numba (the `jit`
extra) once per dtype and cached on disk (under a second each), for the convolutions where
im2col and BLAS do badly. No code is generated per geometry.

A first layer (3x3 taps, 1-4 channels, 8-32 filters) multiplies matrices with an inner
dimension of 9-36: BLAS runs them at a fraction of its speed, and im2col first copies the
input nine times over. Here the filters go in blocks of eight, each block summed for a
whole output row tap by tap (eight statements with constant indices: LLVM's SLP
vectorizer makes them one vector multiply-add), the input read in place. A depthwise
convolution (one input channel per group) has no matrix product at all: its loops run
over the channels of each tap.

    forward(xp, w, b, out_hw, strides, dilations, activation)   act(conv(xp, w) + b)
    filter_grad(xp, dy, filter_hw, strides, dilations)          (dw, db)
    depthwise_forward / depthwise_filter_grad / depthwise_input_grad

`xp` is the padded NHWC input. The images are split over the intra-op threads in runs
(each image's results are the same bits whichever thread computes them). Results equal the
im2col kernels' to rounding: the sums run in another order. Which of the two runs is
decided from shapes alone; until a dtype's loops are compiled (in the background), NumPy
does their arithmetic op for op (`_forward_numpy`, `_filter_grad_numpy`, ...): the same
bits from the first call on.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..._core import jit
from ..._core.buffers import Spares
from ..._core.jit import Loop
from ..._core.context import intra_op_threads
from ..._core.threads import run_parts

# Input channels and filters up to which a convolution runs directly: past them BLAS's
# products are long enough to win.
DIRECT_MAX_CHANNELS = 4
DIRECT_MAX_FILTERS = 32
# Filter elements (taps times filters) up to which it does: past them the product's inner
# dimension is long enough for BLAS (measured at batch 64: a 3x3x1x8 filter ran 1.4x
# faster direct than im2col, 3x3x3x32 1.8x slower)
DIRECT_MAX_WEIGHTS = 256
# Output elements (input pixels times filters for a dense convolution) from which a
# convolution runs directly: smaller ones cost more in the loops' first compile (once per
# dtype, in the background) than they save.
DIRECT_FROM = 1 << 14
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# Multiply-adds from which a convolution's images split over the intra-op threads:
# handing a part to a pool thread costs 0.1-1 ms on a busy virtual machine (W6's
# 1.6 M, 0.2-0.3 ms on one thread, took longer split)
SPLIT_FROM = 1 << 23
# Calls of a loop before it starts compiling (in the background); until it is ready the
# NumPy formulations do its arithmetic op for op, so every call gives the same bits.
COMPILE_AFTER = 3
ACTIVATIONS = {"": 0, "Relu": 1, "Relu6": 2}  # what the loops apply themselves
LANES = 8  # filters summed together: one AVX vector of float32
_calls: dict = {}  # Loop -> calls so far, until COMPILE_AFTER
# The NumPy twins' temporaries, kept between calls: a fresh array of a few MB faults in
# every page on its first write (as costly as the arithmetic on a virtual machine).
_SPARE_TWIN = Spares()


# ------------------------------------------------------------------ the loops (numba)
# Written with indexing and arithmetic only (no allocation, reshape or builtins that numba
# compiles as functions of their own): each compiles in a fraction of a second. `geo` is
# [KH, KW, SH, SW, DH, DW, activation, OH, OW, F, C, padded row length (WP * C)].


def _forward(xr, wp, bp, off, yr, acc, zero, geo, lo, hi):  # pragma: no cover (numba)
    """y = act(sum over taps (a, q, ch), in that order, of the input element times
    w[a, q, ch] + b) for images [lo, hi) of the flattened padded input `xr` [N, HP*WP*C]
    into `yr` [N, OH*OW*F]. The filters go in blocks of eight (`wp` [blocks, taps, 8],
    `bp` [blocks, 8], zeros past F), each block summed for a whole output row at once,
    tap by tap, in acc[n] [OW, 8]: the row's sums are independent, so their adds overlap
    (one pixel's sum alone would wait on each add). A block's lanes are written out one
    statement each with constant indices: LLVM's SLP vectorizer makes them one vector
    operation."""
    sh, sw, act, oh_, ow_, f = geo[2], geo[3], geo[6], geo[7], geo[8], geo[9]
    step, row = sw * geo[10], geo[11]
    taps = off.shape[0]
    six = zero + 6
    for n in range(lo, hi):
        x = xr[n]
        y = yr[n]
        rows = acc[n]
        for i in range(oh_):
            for blk in range(wp.shape[0]):
                for t in range(taps):
                    ws = wp[blk, t]
                    w0, w1, w2, w3 = ws[0], ws[1], ws[2], ws[3]
                    w4, w5, w6, w7 = ws[4], ws[5], ws[6], ws[7]
                    at = i * sh * row + off[t]
                    if t == 0:
                        for j in range(ow_):
                            v = x[at + j * step]
                            a = rows[j]
                            a[0] = v * w0
                            a[1] = v * w1
                            a[2] = v * w2
                            a[3] = v * w3
                            a[4] = v * w4
                            a[5] = v * w5
                            a[6] = v * w6
                            a[7] = v * w7
                    else:
                        for j in range(ow_):
                            v = x[at + j * step]
                            a = rows[j]
                            a[0] += v * w0
                            a[1] += v * w1
                            a[2] += v * w2
                            a[3] += v * w3
                            a[4] += v * w4
                            a[5] += v * w5
                            a[6] += v * w6
                            a[7] += v * w7
                lanes = f - blk * 8
                if lanes > 8:
                    lanes = 8
                bs = bp[blk]
                for j in range(ow_):
                    at = (i * ow_ + j) * f + blk * 8
                    for k in range(lanes):
                        s = rows[j, k] + bs[k]
                        if act > 0:  # (NaN stays NaN, as the NumPy formulation keeps it)
                            s = zero if s < zero else s
                        if act > 1:
                            s = six if s > six else s
                        y[at + k] = s


def _filter_grad(xr, gr, off, totals, acc, zero, geo, lo, hi):  # pragma: no cover (numba)
    """totals[n] = [each weight's sum over image n's pixels (row-major, from zero) of its
    input element times dy, then each filter's sum of dy] for images [lo, hi); `gr` is dy
    [N, OH*OW*F8], its filters padded to whole blocks of eight with zeros. Per pixel,
    every tap's sums of a block grow at once (independent adds), in acc[n] [taps + 1, 8]
    (the last row the bias's)."""
    sh, sw, oh_, ow_, f = geo[2], geo[3], geo[7], geo[8], geo[9]
    step, row = sw * geo[10], geo[11]
    taps = off.shape[0]
    f8 = (f + 7) // 8 * 8
    for n in range(lo, hi):
        x = xr[n]
        g = gr[n]
        sums = acc[n]
        tn = totals[n]
        for blk in range(f8 // 8):
            sums[:] = zero
            for i in range(oh_):
                for j in range(ow_):
                    at = (i * ow_ + j) * f8 + blk * 8
                    g0, g1, g2, g3 = g[at], g[at + 1], g[at + 2], g[at + 3]
                    g4, g5, g6, g7 = g[at + 4], g[at + 5], g[at + 6], g[at + 7]
                    base = i * sh * row + j * step
                    for t in range(taps):
                        v = x[base + off[t]]
                        a = sums[t]
                        a[0] += v * g0
                        a[1] += v * g1
                        a[2] += v * g2
                        a[3] += v * g3
                        a[4] += v * g4
                        a[5] += v * g5
                        a[6] += v * g6
                        a[7] += v * g7
                    a = sums[taps]
                    a[0] += g0
                    a[1] += g1
                    a[2] += g2
                    a[3] += g3
                    a[4] += g4
                    a[5] += g5
                    a[6] += g6
                    a[7] += g7
            lanes = f - blk * 8
            if lanes > 8:
                lanes = 8
            for t in range(taps + 1):
                for k in range(lanes):
                    tn[t * f + blk * 8 + k] = sums[t, k]


def _depthwise_forward(xp, wf, b, y, zero, geo, lo, hi):  # pragma: no cover (numba)
    """Depthwise y[n, i, j, k] = act(sum over taps (a, q) of xp[..., k] times w[a, q, k]
    + b), `wf` [KH*KW, C*M], the taps in order: each tap one pass over an output row,
    each pixel's channels contiguous (vectorized); rows of views, not a view per pixel
    and tap (1.6x faster). With a channel multiplier M > 1 the caller repeats each input
    channel M times (`xp` [N, HP, WP, C*M])."""
    kw, sh, sw, dh, dw, act = geo[1], geo[2], geo[3], geo[4], geo[5], geo[6]
    oh_, ow_, cm = geo[7], geo[8], geo[9]
    six = zero + 6
    for n in range(lo, hi):
        for i in range(oh_):
            yr = y[n, i]
            for t in range(wf.shape[0]):
                xr = xp[n, i * sh + (t // kw) * dh]
                q = (t % kw) * dw
                wr = wf[t]
                if t == 0:
                    for j in range(ow_):
                        xs = xr[j * sw + q]
                        o = yr[j]
                        for k in range(cm):
                            o[k] = xs[k] * wr[k]
                else:
                    for j in range(ow_):
                        xs = xr[j * sw + q]
                        o = yr[j]
                        for k in range(cm):
                            o[k] += xs[k] * wr[k]
            for j in range(ow_):
                o = yr[j]
                for k in range(cm):
                    s = o[k] + b[k]
                    if act > 0:
                        s = zero if s < zero else s
                    if act > 1:
                        s = six if s > six else s
                    o[k] = s


def _depthwise_filter_grad(xp, dy, totals, zero, geo, lo, hi):  # pragma: no cover (numba)
    """Depthwise totals[n] [KH*KW + 1, C*M] = [dw, db] of image n (zeros on entry): each
    sum over the pixels row-major from zero, tap by tap over rows of views (`xp`'s
    channels repeated M times, as for `_depthwise_forward`)."""
    kw, sh, sw, dh, dw = geo[1], geo[2], geo[3], geo[4], geo[5]
    oh_, ow_, cm = geo[7], geo[8], geo[9]
    taps = totals.shape[1] - 1
    for n in range(lo, hi):
        tn = totals[n]
        for t in range(taps):
            r = tn[t]
            a, q = (t // kw) * dh, (t % kw) * dw
            for i in range(oh_):
                xrow = xp[n, i * sh + a]
                grow = dy[n, i]
                for j in range(ow_):
                    xs = xrow[j * sw + q]
                    g = grow[j]
                    for k in range(cm):
                        r[k] += xs[k] * g[k]
        r = tn[taps]
        for i in range(oh_):
            grow = dy[n, i]
            for j in range(ow_):
                g = grow[j]
                for k in range(cm):
                    r[k] += g[k]


def _depthwise_input_grad(dy, wf, dxp, zero, geo, lo, hi):  # pragma: no cover (numba)
    """Depthwise dxp[n] (padded, zeros on entry) += each tap's sum over m of dy times
    w[a, q, ch, m] (`wf` [KH*KW, C*M]), tap by tap in order over rows of views, for
    images [lo, hi)."""
    kw, sh, sw, dh, dw = geo[1], geo[2], geo[3], geo[4], geo[5]
    oh_, ow_, cm, c = geo[7], geo[8], geo[9], geo[10]
    m = cm // c
    for n in range(lo, hi):
        for t in range(wf.shape[0]):
            wr = wf[t]
            a, q = (t // kw) * dh, (t % kw) * dw
            for i in range(oh_):
                drow = dxp[n, i * sh + a]
                grow = dy[n, i]
                if m == 1:
                    for j in range(ow_):
                        d = drow[j * sw + q]
                        g = grow[j]
                        for k in range(c):
                            d[k] += g[k] * wr[k]
                else:
                    for j in range(ow_):
                        d = drow[j * sw + q]
                        g = grow[j]
                        for ch in range(c):
                            s = g[ch * m] * wr[ch * m]
                            for k in range(ch * m + 1, ch * m + m):
                                s += g[k] * wr[k]
                            d[ch] += s


_FORWARD = Loop(_forward, slp=True)
_FILTER_GRAD = Loop(_filter_grad, slp=True)
_DEPTHWISE_FORWARD = Loop(_depthwise_forward)
_DEPTHWISE_FILTER_GRAD = Loop(_depthwise_filter_grad)
_DEPTHWISE_INPUT_GRAD = Loop(_depthwise_input_grad)
# The dense loops by kind, as `_loops_for` hands them out (one entry: every geometry and
# dtype shares them).
_loops: dict = {}


# ------------------------------------------------------------------ choosing and running
def applies(x_shape: tuple, w_shape: tuple, dtype, groups: int) -> bool:
    """Whether a convolution of NHWC `x_shape` by `w_shape` filters runs directly (the
    dense loops; see `depthwise_applies`)."""
    return (groups == 1 and len(x_shape) == 4 and len(w_shape) == 4 and dtype in _FLOATS
            and x_shape[-1] == w_shape[2]
            and math.prod(x_shape[:3]) * w_shape[3] >= DIRECT_FROM
            and w_shape[2] <= DIRECT_MAX_CHANNELS and w_shape[3] <= DIRECT_MAX_FILTERS
            and math.prod(w_shape) <= DIRECT_MAX_WEIGHTS
            and 0 not in x_shape and 0 not in w_shape)


def depthwise_applies(x_shape: tuple, w_shape: tuple, dtype, groups: int) -> bool:
    """Whether a depthwise convolution (one input channel per group, `w_shape` [KH, KW,
    1, C*M]) of NHWC `x_shape` runs directly: any size but the smallest."""
    return (len(x_shape) == 4 and len(w_shape) == 4 and dtype in _FLOATS and groups > 1
            and w_shape[2] == 1 and x_shape[-1] == groups and w_shape[3] % groups == 0
            and math.prod(x_shape[:3]) * w_shape[3] >= DIRECT_FROM
            and 0 not in x_shape and 0 not in w_shape)


def _geo(w_shape: tuple, strides: tuple, dilations: tuple, activation: str, out_hw: tuple,
         xp_shape: tuple) -> np.ndarray:
    """The loops' `geo` array (see above) of a convolution by `w_shape` filters."""
    return np.array(tuple(w_shape[:2]) + tuple(strides) + tuple(dilations)
                    + (ACTIVATIONS[activation],) + tuple(out_hw)
                    + (w_shape[3], xp_shape[3], xp_shape[2] * xp_shape[3]), np.int64)


def _offsets(w_shape: tuple, dilations, row: int) -> np.ndarray:
    """Each tap's (a, q, ch) offset in a flattened padded image, in tap order."""
    return _offsets_of(*(int(v) for v in w_shape[:3]), int(dilations[0]), int(dilations[1]),
                       int(row))


@functools.lru_cache(maxsize=256)
def _offsets_of(kh: int, kw: int, c: int, dh: int, dw: int, row: int) -> np.ndarray:
    a, q, ch = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(c), indexing="ij")
    off = (a * dh * row + q * dw * c + ch).ravel().astype(np.int64)
    off.flags.writeable = False  # (shared by every call of this geometry)
    return off


def _blocks(a: np.ndarray, f: int) -> np.ndarray:
    """[..., F] padded with zeros to whole blocks of LANES: [..., F8] (no copy if whole)."""
    if f % LANES == 0:
        return a
    out = np.zeros(a.shape[:-1] + (-(-f // LANES) * LANES,), a.dtype)
    out[..., :f] = a
    return out


def _forward_args(xp, w, b, y, zero, geo) -> tuple:
    """`_forward`'s arguments for contiguous `xp`, `w`, `b` and `y`."""
    n, (kh, kw, c, f) = xp.shape[0], w.shape
    taps = kh * kw * c
    wp = _blocks(w.reshape(taps, f), f)  # [taps, F8] -> [blocks, taps, 8]
    wp = np.ascontiguousarray(wp.reshape(taps, -1, LANES).transpose(1, 0, 2))
    bp = _blocks(b, f).reshape(-1, LANES)
    off = _offsets(w.shape, geo[4:6], int(geo[11]))
    acc = np.empty((n, int(geo[8]), LANES), y.dtype)
    return (xp.reshape(n, -1), wp, bp, off, y.reshape(y.shape[0], -1), acc, zero, geo)


def _filter_grad_args(xp, dy, totals, zero, geo) -> tuple:
    """`_filter_grad`'s arguments for contiguous `xp` and `dy`."""
    n, f = xp.shape[0], dy.shape[-1]
    w_shape = tuple(int(v) for v in geo[:2]) + (xp.shape[-1], f)
    off = _offsets(w_shape, geo[4:6], int(geo[11]))
    acc = np.empty((n, off.size + 1, LANES), dy.dtype)
    return (xp.reshape(n, -1), _blocks(dy, f).reshape(n, -1), off, totals, acc, zero, geo)


def _ready(loop: Loop, args: tuple):
    """The loop compiled for `args`, or None: its first COMPILE_AFTER - 1 calls (a
    compile holds the GIL for a good part of a second in numba's Python passes: a program
    that calls a convolution once or twice need not pay for it), then while it compiles
    in the background."""
    if not jit.available():
        return None
    calls = _calls.get(loop, 0)
    if calls < COMPILE_AFTER - 1:
        _calls[loop] = calls + 1
        return None
    return loop.ready(*args, 0, 0)


class _Bound:
    """A generic loop bound to one geometry, called as `(xp, w, b, y, zero, lo, hi)`
    (forward) or `(xp, dy, totals, zero, lo, hi)` (filter gradient): what tests compare
    with the NumPy formulations."""

    def __init__(self, loop: Loop, prepare):
        self.loop, self.prepare = loop, prepare

    def _bind(self, run):
        if run is None:
            return None
        return lambda *args: run(*self.prepare(*args[:-2]), *args[-2:])

    def ready(self, *args):
        return self._bind(self.loop.ready(*self.prepare(*args[:-2]), *args[-2:]))

    def ready_now(self, *args):
        return self._bind(self.loop.ready_now(*self.prepare(*args[:-2]), *args[-2:]))


def _dense() -> tuple:
    """The dense (forward, filter_grad) Loops, shared by every geometry and dtype."""
    return _loops.setdefault("dense", (_FORWARD, _FILTER_GRAD))


def _loops_for(w_shape: tuple, strides: tuple, dilations: tuple, activation: str):
    """The (forward, filter_grad) loops of a geometry: the generic loops, bound to it."""
    loops = _dense()

    def forward_args(xp, w, b, y, zero):
        geo = _geo(w.shape, strides, dilations, activation, y.shape[1:3], xp.shape)
        return _forward_args(xp, w, b, y, zero, geo)

    def grad_args(xp, dy, totals, zero):
        geo = _geo(tuple(w_shape[:2]) + (xp.shape[-1], dy.shape[-1]), strides, dilations,
                   "", dy.shape[1:3], xp.shape)
        return _filter_grad_args(xp, dy, totals, zero, geo)
    return _Bound(loops[0], forward_args), _Bound(loops[1], grad_args)


def _patch(xp: np.ndarray, a: int, b: int, out_hw: tuple, strides: tuple,
           dilations: tuple) -> np.ndarray:
    """xp[n, i * sh + a * dh, j * sw + b * dw, :] for every output pixel: [N, OH, OW, C]."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    return xp[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, b * dw:b * dw + (ow - 1) * sw + 1:sw]


def _activate(s: np.ndarray, zero, activation: str) -> np.ndarray:
    """The loops' activation: comparisons and selects (NaN and -0.0 stay as they are)."""
    if activation in ("Relu", "Relu6"):
        s = np.where(s < zero, zero, s)
    if activation == "Relu6":
        s = np.where(s > zero + 6, zero + 6, s)
    return s


def _forward_numpy(xp, w, b, y, zero, out_hw, strides, dilations, activation) -> None:
    """`_forward`'s arithmetic, op for op, as NumPy operations over whole arrays (so the
    same bits): what runs while the loop compiles. The sums are kept filters-major,
    [F, pixels], so each operation runs along the pixels (a loop along F's few elements
    would cost NumPy an inner loop call per pixel)."""
    kh, kw, c, f = w.shape
    s = None
    for a in range(kh):  # the sum over taps in the loop's order, then the bias
        for q in range(kw):
            p = _patch(xp, a, q, out_hw, strides, dilations)
            for ch in range(c):
                v = np.ascontiguousarray(p[..., ch]).reshape(1, -1)
                term = w[a, q, ch][:, None] * v
                s = term if s is None else np.add(s, term, out=s)
    s += b[:, None]
    y[...] = _activate(s, zero, activation).T.reshape(y.shape)


def _sequential_sum(values: np.ndarray, axis: int = 1) -> np.ndarray:
    """`values` summed along `axis` one after another from zero, as the loops add, plus
    zero (a sum from zero differs from one from the first term only where that is -0.0:
    it is +0.0)."""
    return _pixel_sum(np.moveaxis(values, axis, 0))


def _pixel_sum(values: np.ndarray) -> np.ndarray:
    """`values` [P, ...] summed over P in order from zero (see `_sequential_sum`). NumPy
    reduces a leading axis one row after another (its pairwise sums run only along the
    contiguous axis), so a contiguous [P, M] array with M > 1 is summed in order, in one
    pass; with M = 1 the row axis alone is left, which NumPy would sum pairwise, so the
    running sums run then (np.add.accumulate: the same order, several times slower)."""
    rest = values.shape[1:]
    if math.prod(rest) > 1:
        flat = np.ascontiguousarray(values).reshape(values.shape[0], -1)
        return (np.add.reduce(flat, axis=0) + values.dtype.type(0)).reshape(rest)
    return np.add.accumulate(values, axis=0)[-1] + values.dtype.type(0)


def _filter_grad_numpy(xp, dy, per_image, w_shape, strides, dilations) -> None:
    """`_filter_grad`'s arithmetic as NumPy operations: per image, each weight's and
    bias's sum over the pixels in row-major order, from zero (so the same bits): what runs
    while the loop compiles. Products are kept pixel-major, [pixels, N, F], so each sum
    is NumPy's in-order reduction over the leading axis (`_pixel_sum`)."""
    kh, kw, c, f = w_shape
    n, oh, ow = dy.shape[:3]
    g = np.ascontiguousarray(dy.reshape(n, oh * ow, f).transpose(1, 0, 2))  # [P, N, F]
    prod = np.empty_like(g)
    m = 0
    for a in range(kh):
        for q in range(kw):
            p = _patch(xp, a, q, (oh, ow), strides, dilations)
            for ch in range(c):
                v = p[..., ch].reshape(n, oh * ow).T[:, :, None]  # [P, N, 1]
                np.multiply(v, g, out=prod)
                per_image[:, m * f:(m + 1) * f] = _pixel_sum(prod)
                m += 1
    per_image[:, -f:] = _pixel_sum(g)


def _run(run, args: tuple, size: int) -> None:
    """run(*args, lo, hi) over the images: in runs of images the intra-op threads take in
    turn when the convolution's `size` (multiply-adds) is large enough (each image's
    results are the same bits whichever thread computes them)."""
    batch = args[0].shape[0]
    threads = intra_op_threads() if size >= SPLIT_FROM else 1
    per = max(1, -(-batch // (2 * threads)))  # two runs per thread
    run_parts(lambda lo, hi: run(*args, lo, hi),
              [(lo, min(lo + per, batch)) for lo in range(0, batch, per)], threads)


def _operands(xp, w, b, f):
    dtype = xp.dtype
    xp = np.ascontiguousarray(xp)
    w = np.ascontiguousarray(w, dtype)
    b = np.zeros(f, dtype) if b is None else np.ascontiguousarray(b, dtype)
    return xp, w, b


def forward(xp: np.ndarray, w: np.ndarray, b: np.ndarray | None, out_hw: tuple,
            strides: tuple, dilations: tuple, activation: str, out: np.ndarray | None = None):
    """act(conv(xp, w) + b) as a new [N, OH, OW, F] array (into `out` when given), or
    None without numba (im2col runs then). `activation` is one of ACTIVATIONS.

    Example:
        >>> y = forward(xp, w, None, (26, 26), (1, 1), (1, 1), "Relu")
    """
    if not jit.available():
        return None
    dtype = xp.dtype
    xp, w, b = _operands(xp, w, b, w.shape[-1])
    y = out if out is not None else np.empty((xp.shape[0],) + tuple(out_hw) + (w.shape[-1],),
                                             dtype)
    zero = dtype.type(0)
    geo = _geo(w.shape, strides, dilations, activation, out_hw, xp.shape)
    args = _forward_args(xp, w, b, y, zero, geo)
    run = _ready(_dense()[0], args)
    if run is None:  # (compiling: the same arithmetic in NumPy meanwhile)
        _forward_numpy(xp, w, b, y, zero, out_hw, strides, dilations, activation)
    else:
        _run(run, args, y.size * math.prod(w.shape[:3]))
    return y


def _summed(per_image: np.ndarray, f: int, w_shape: tuple):
    out = np.add.reduce(per_image, axis=0)  # (row by row, in image order)
    return out[:-f].reshape(w_shape), out[-f:]


def filter_grad(xp: np.ndarray, dy: np.ndarray, filter_hw: tuple, strides: tuple,
                dilations: tuple):
    """(the filter gradient [KH, KW, C, F], the bias gradient [F] = sum of dy over its
    images and pixels) of a convolution of padded `xp`, or None without numba.

    Example:
        >>> dw, db = filter_grad(xp, dy, (3, 3), (1, 1), (1, 1))
    """
    if not jit.available():
        return None
    dtype = xp.dtype
    xp, dy = np.ascontiguousarray(xp), np.ascontiguousarray(dy, dtype)
    w_shape = tuple(filter_hw) + (xp.shape[-1], dy.shape[-1])
    per_image = np.empty((xp.shape[0], math.prod(w_shape) + dy.shape[-1]), dtype)
    geo = _geo(w_shape, strides, dilations, "", dy.shape[1:3], xp.shape)
    args = _filter_grad_args(xp, dy, per_image, dtype.type(0), geo)
    run = _ready(_dense()[1], args)
    if run is None:  # (compiling: the same arithmetic in NumPy meanwhile)
        _filter_grad_numpy(xp, dy, per_image, w_shape, strides, dilations)
    else:
        _run(run, args, dy.size * math.prod(w_shape[:3]))
    return _summed(per_image, dy.shape[-1], w_shape)


# ------------------------------------------------------------------ depthwise
def _depthwise_forward_numpy(xp, w, b, y, zero, out_hw, strides, dilations,
                             activation) -> None:
    """`_depthwise_forward`'s arithmetic, op for op, over whole arrays: the sums in `y`
    itself (when contiguous), each tap's products in one kept temporary."""
    kh, kw, _, cm = w.shape
    c = xp.shape[-1]
    wg = w.reshape(kh, kw, c, cm // c)
    s = y if y.flags.c_contiguous else np.empty(y.shape, y.dtype)
    s5 = s.reshape(s.shape[:-1] + (c, cm // c))
    term = _SPARE_TWIN.empty(s5.shape, s.dtype)
    for a in range(kh):
        for q in range(kw):
            p = _patch(xp, a, q, out_hw, strides, dilations)[..., None]
            if a == 0 and q == 0:
                np.multiply(p, wg[a, q], out=s5)
            else:
                s5 += np.multiply(p, wg[a, q], out=term)
    s += b
    if activation in ("Relu", "Relu6"):  # (as `_activate`: NaN and -0.0 stay)
        np.copyto(s, zero, where=s < zero)
    if activation == "Relu6":
        np.copyto(s, zero + 6, where=s > zero + 6)
    if s is not y:
        y[...] = s


def _depthwise_filter_grad_numpy(xp, dy, per_image, filter_hw, strides, dilations) -> None:
    """`_depthwise_filter_grad`'s arithmetic over whole arrays, a few images at a time
    (each tap's products are a temporary the size of dy). Each image's sums over its
    pixels, [n, pixels, C*M] summed along the middle axis: NumPy adds along an axis that
    is not the innermost one element after element, in order (`_pixel_sum` otherwise)."""
    (kh, kw), (n, oh, ow, cm) = filter_hw, dy.shape
    m = cm // xp.shape[-1]
    per = max(1, (1 << 20) // (oh * ow * cm))
    zero = dy.dtype.type(0)
    for lo in range(0, n, per):
        hi = min(n, lo + per)
        g = dy[lo:hi]
        prod = _SPARE_TWIN.empty(g.shape, g.dtype)
        for t in range(kh * kw + 1):
            if t < kh * kw:
                v = _patch(xp[lo:hi], t // kw, t % kw, (oh, ow), strides, dilations)
                v = np.repeat(v, m, axis=-1) if m > 1 else v
                terms = np.multiply(v, g, out=prod)
            else:  # the bias: dy itself
                terms = g
            at = slice(t * cm, (t + 1) * cm) if t < kh * kw else slice(-cm, None)
            if cm > 1:
                flat = terms.reshape(hi - lo, oh * ow, cm)
                per_image[lo:hi, at] = np.add.reduce(flat, axis=1) + zero
            else:
                per_image[lo:hi, at] = _pixel_sum(
                    np.moveaxis(terms.reshape(hi - lo, oh * ow, cm), 1, 0))


def _depthwise_input_grad_numpy(dy, w, dxp, strides, dilations) -> None:
    """`_depthwise_input_grad`'s arithmetic over whole arrays (each tap's sums in one
    kept temporary)."""
    kh, kw, _, cm = w.shape
    n, oh, ow, _ = dy.shape
    c = dxp.shape[-1]
    m = cm // c
    g = dy.reshape(n, oh, ow, c, m)
    wg = w.reshape(kh, kw, c, m)
    s = _SPARE_TWIN.empty((n, oh, ow, c), dy.dtype)
    term = _SPARE_TWIN.empty((n, oh, ow, c), dy.dtype) if m > 1 else None
    for a in range(kh):
        for q in range(kw):
            np.multiply(g[..., 0], wg[a, q, :, 0], out=s)
            for mm in range(1, m):
                s += np.multiply(g[..., mm], wg[a, q, :, mm], out=term)
            _patch(dxp, a, q, (oh, ow), strides, dilations)[...] += s


def _repeated(xp: np.ndarray, cm: int) -> np.ndarray:
    """`xp` with each channel repeated for its M = cm / C outputs (itself when M = 1): the
    depthwise loops then run one contiguous pass over C*M channels per tap."""
    m = cm // xp.shape[-1]
    return xp if m == 1 else np.repeat(xp, m, axis=-1)


def depthwise_forward(xp: np.ndarray, w: np.ndarray, b: np.ndarray | None, out_hw: tuple,
                      strides: tuple, dilations: tuple, activation: str,
                      out: np.ndarray | None = None):
    """act(depthwise_conv(xp, w) + b), `w` [KH, KW, 1, C*M], as a new [N, OH, OW, C*M]
    array (into `out` when given), or None without numba.

    Example:
        >>> y = depthwise_forward(xp, w, None, (56, 56), (2, 2), (1, 1), "")
    """
    if not jit.available():
        return None
    dtype = xp.dtype
    xp, w, b = _operands(xp, w, b, w.shape[-1])
    y = out if out is not None else np.empty((xp.shape[0],) + tuple(out_hw) + (w.shape[-1],),
                                             dtype)
    zero = dtype.type(0)
    xm = _repeated(xp, w.shape[-1])
    geo = _geo(w.shape, strides, dilations, activation, out_hw, xm.shape)
    args = (xm, w.reshape(-1, w.shape[-1]), b, y, zero, geo)
    run = _ready(_DEPTHWISE_FORWARD, args)
    if run is None:
        _depthwise_forward_numpy(xp, w, b, y, zero, out_hw, strides, dilations, activation)
    else:
        _run(run, args, y.size * math.prod(w.shape[:2]))
    return y


def depthwise_filter_grad(xp: np.ndarray, dy: np.ndarray, filter_hw: tuple, strides: tuple,
                          dilations: tuple):
    """(the filter gradient [KH, KW, 1, C*M], the bias gradient [C*M]) of a depthwise
    convolution of padded `xp`, or None without numba.

    Example:
        >>> dw, db = depthwise_filter_grad(xp, dy, (3, 3), (1, 1), (1, 1))
    """
    if not jit.available():
        return None
    dtype = xp.dtype
    xp, dy = np.ascontiguousarray(xp), np.ascontiguousarray(dy, dtype)
    cm = dy.shape[-1]
    w_shape = tuple(filter_hw) + (1, cm)
    totals = np.zeros((xp.shape[0], math.prod(filter_hw) + 1, cm), dtype)
    per_image = totals.reshape(xp.shape[0], -1)
    xm = _repeated(xp, cm)
    geo = _geo(w_shape, strides, dilations, "", dy.shape[1:3], xm.shape)
    args = (xm, dy, totals, dtype.type(0), geo)
    run = _ready(_DEPTHWISE_FILTER_GRAD, args)
    if run is None:
        _depthwise_filter_grad_numpy(xp, dy, per_image, filter_hw, strides, dilations)
    else:
        _run(run, args, dy.size * math.prod(filter_hw))
    return _summed(per_image, cm, w_shape)


def depthwise_input_grad(dy: np.ndarray, w: np.ndarray, padded_shape: tuple, strides: tuple,
                         dilations: tuple):
    """The input gradient of a depthwise convolution by `w` [KH, KW, 1, C*M], padded:
    `padded_shape` [N, HP, WP, C] (the caller crops the padding), or None without numba.

    Example:
        >>> dxp = depthwise_input_grad(dy, w, (8, 30, 30, 16), (1, 1), (1, 1))
    """
    if not jit.available():
        return None
    dtype = dy.dtype
    dy, w = np.ascontiguousarray(dy), np.ascontiguousarray(w, dtype)
    dxp = np.zeros(padded_shape, dtype)
    geo = _geo(w.shape, strides, dilations, "", dy.shape[1:3], padded_shape)
    args = (dy, w.reshape(-1, w.shape[-1]), dxp, dtype.type(0), geo)
    run = _ready(_DEPTHWISE_INPUT_GRAD, args)
    if run is None:
        _depthwise_input_grad_numpy(dy, w, dxp, strides, dilations)
    else:
        _run(run, args, dy.size * math.prod(w.shape[:2]))
    return dxp
