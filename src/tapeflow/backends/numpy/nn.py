"""NumPy kernels of the neural-network family: activations, softmax, losses, bias_add,
fused batch normalization."""
import math

import numpy as np

from ..._core import jit
from ..._core.buffers import Spares
from ..._core.errors import InvalidArgumentError
from ._kernel import ensure_array, kernel

# np.where with a data-dependent mask is several times slower than multiplying by the mask
# on random data (branch misprediction), so the masked kernels below multiply.


@kernel("Relu")
def relu(inputs, attrs, backend):
    return ensure_array(np.maximum(inputs["x"], 0))


@kernel("ReluGrad")
def relu_grad(inputs, attrs, backend):
    return ensure_array(inputs["dy"] * (inputs["y"] > 0))


@kernel("Relu6")
def relu6(inputs, attrs, backend):
    return ensure_array(np.clip(inputs["x"], 0, 6))


@kernel("Relu6Grad")
def relu6_grad(inputs, attrs, backend):
    y = inputs["y"]
    return ensure_array(inputs["dy"] * ((y > 0) & (y < 6)))


@kernel("LeakyRelu")
def leaky_relu(inputs, attrs, backend):
    x = inputs["x"]
    # exact for any alpha (maximum(x, alpha * x) is only right for alpha <= 1)
    return ensure_array(np.maximum(x, 0) + attrs["alpha"] * np.minimum(x, 0))


@kernel("LeakyReluGrad")
def leaky_relu_grad(inputs, attrs, backend):
    dy, alpha = inputs["dy"], attrs["alpha"]
    scale = (inputs["x"] > 0).astype(dy.dtype)
    scale *= 1.0 - alpha
    scale += alpha
    return ensure_array(dy * scale)


@kernel("Elu")
def elu(inputs, attrs, backend):
    x = inputs["x"]
    # expm1 of the negative part only: no overflow warnings for large positive inputs
    return ensure_array(np.expm1(np.minimum(x, 0)) + np.maximum(x, 0))


_COMPILE_AFTER = 3  # calls of a loop before it compiles (as conv_direct's loops)
_loop_calls: dict = {}


def _loop_when_ready(loop, args: tuple):
    """The compiled loop for `args`, or None (NumPy runs its arithmetic): before its
    _COMPILE_AFTER-th call, without numba, or while it compiles in the background."""
    if not jit.available():
        return None
    calls = _loop_calls.get(loop, 0)
    if calls < _COMPILE_AFTER - 1:
        _loop_calls[loop] = calls + 1
        return None
    return loop.ready(*args)


# ------------------------------------------------------------------ softmax
# A softmax over the last axis sums each row in _LANES running sums (lane j adds the row's
# elements j, j + _LANES, ... from zero, in the row's dtype; then the lanes left to right):
# an order fixed by the row length alone, which a compiled loop vectorizes without
# reassociating anything and NumPy computes too (a reduction over the middle axis of an
# [R, n / _LANES, _LANES] view adds each lane's rows in turn), so the bits are the same
# whichever runs. The loops (numba, compiled in the background after a few calls, like the
# batch-norm ones) do a row's maximum and shift, its sum and division, or the gradient's
# sum and update, in one sweep each where NumPy makes a temporary per operation and
# reduces short rows slowly; exp stays NumPy's (its bits are NumPy's). Measured on
# [32, 4, 32, 32] float32 (attention weights): Softmax 600 -> 300 us (170 of them exp),
# SoftmaxGrad 220 -> 70 us; SparseSoftmaxCrossEntropyWithLogits (the same two loops) over
# [32768, 3] (per-pixel labels) 3.1 -> 1.1 ms, [1024, 500] 1.35 -> 1.2 ms.
_LANES = 8
# Elements from which the loops (and, until they compile, their NumPy twin) run; smaller
# arrays keep the plain NumPy lines, a choice made from the shape alone. There the loops
# saved microseconds ([128, 10]: 40 -> 30 us) while the twin cost more than the plain
# lines (52 against 32 us on [64, 10]), and each loop's compile in the background waited
# ahead of a program's own kernels (an RNN's first 100 steps, 0.77 -> 0.82 s).
ROWS_FROM = 1 << 14


def _lane_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum in the lane order above: [R, n] -> [R] (NumPy)."""
    rows, n = a.shape
    full = n // _LANES * _LANES
    lanes = np.zeros((rows, _LANES), a.dtype)
    if full:
        np.add.reduce(a[:, :full].reshape(rows, full // _LANES, _LANES), axis=1,
                      out=lanes, initial=0)
    lanes[:, :n - full] += a[:, full:]  # each lane's last element, added last
    total = lanes[:, 0].copy()
    for j in range(1, _LANES):
        total += lanes[:, j]
    return total


def _shift_rows(x, out):  # pragma: no cover (numba runs it)
    """out[r] = x[r] - max(x[r]) (a NaN in the row: NaN, as np.max)."""
    rows, n = x.shape
    for r in range(rows):
        m = x[r, 0]
        nan = m != m
        for j in range(1, n):
            v = x[r, j]
            nan |= v != v
            m = v if v > m else m
        if nan:
            m = np.nan
        for j in range(n):
            out[r, j] = x[r, j] - m


@jit.lazy_njit(inline="always")
def _lane_total(row, lanes):  # pragma: no cover (numba runs it)
    """`row`'s sum in the lane order (`lanes`: scratch of _LANES elements)."""
    n = row.shape[0]
    full = n // 8 * 8  # (_LANES, spelled out for numba)
    for j in range(8):
        lanes[j] = 0
    for b in range(0, full, 8):
        for j in range(8):
            lanes[j] += row[b + j]
    for j in range(n - full):
        lanes[j] += row[full + j]
    total = lanes[0]
    for j in range(1, 8):
        total += lanes[j]
    return total


def _divide_rows(e, totals):  # pragma: no cover (numba runs it)
    """e[r] /= totals[r], totals[r] = e[r]'s sum in the lane order (in place: one array,
    so LLVM vectorizes the division; with an output that may alias it, it did not)."""
    lanes = np.empty(8, e.dtype)
    for r in range(e.shape[0]):
        row = e[r]
        total = totals[r] = _lane_total(row, lanes)
        for j in range(row.shape[0]):
            row[j] = row[j] / total


def _softmax_grad_rows(dy, y, out):  # pragma: no cover (numba runs it)
    """out[r] = dy[r] y[r] - y[r] (sum of dy[r] y[r] in the lane order). The products
    are summed as they are made (one pass: 15% faster than storing them first)."""
    rows, n = dy.shape
    full = n // 8 * 8
    lanes = np.empty(8, dy.dtype)
    for r in range(rows):
        g, v, p = dy[r], y[r], out[r]
        for j in range(8):
            lanes[j] = 0
        for b in range(0, full, 8):
            for j in range(8):
                lanes[j] += g[b + j] * v[b + j]
        for j in range(n - full):
            lanes[j] += g[full + j] * v[full + j]
        total = lanes[0]
        for j in range(1, 8):
            total += lanes[j]
        for j in range(n):
            p[j] = g[j] * v[j] - v[j] * total


_SHIFT_ROWS = jit.Loop(_shift_rows)
_DIVIDE_ROWS = jit.Loop(_divide_rows)
_SOFTMAX_GRAD_ROWS = jit.Loop(_softmax_grad_rows)


def _rows(a: np.ndarray, axis: int) -> np.ndarray | None:
    """`a` as C-contiguous float rows [R, n] along its last axis, or None (another axis,
    another dtype, fewer than ROWS_FROM elements: the plain NumPy formulation)."""
    if axis % a.ndim != a.ndim - 1 or a.dtype.kind != "f" or a.dtype.itemsize < 4 \
            or a.size < ROWS_FROM:
        return None
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1])


def _softmax(x, axis):
    if not x.size:  # an empty axis (in a traced graph; eager calls skip the kernel)
        return x.copy()
    rows = _rows(x, axis) if x.ndim else None
    if rows is None:
        e = x - np.max(x, axis=axis, keepdims=True)
        np.exp(e, out=e)
        e /= np.sum(e, axis=axis, keepdims=True)
        return e
    e = _shifted_rows(rows)
    np.exp(e, out=e)
    _normalize_rows(e)
    return e.reshape(x.shape)


def _shifted_rows(rows: np.ndarray) -> np.ndarray:
    """rows - each row's maximum, a new array (see `_rows`)."""
    e = np.empty_like(rows)
    run = _loop_when_ready(_SHIFT_ROWS, (rows, e))
    if run is not None:
        run(rows, e)
    else:
        np.subtract(rows, np.max(rows, axis=1, keepdims=True), out=e)
    return e


def _normalize_rows(e: np.ndarray) -> np.ndarray:
    """e /= each row's sum in the lane order, in place; returns the sums."""
    totals = np.empty(e.shape[0], e.dtype)
    run = _loop_when_ready(_DIVIDE_ROWS, (e, totals))
    if run is not None:
        run(e, totals)
    else:
        totals = _lane_sums(e)
        e /= totals[:, None]
    return totals


def _log_softmax(x, axis):
    if not x.size:
        return x.copy()
    s = x - np.max(x, axis=axis, keepdims=True)
    s -= np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    return s


@kernel("Softmax")
def softmax(inputs, attrs, backend):
    return _softmax(inputs["logits"], attrs["axis"])


@kernel("SoftmaxGrad")
def softmax_grad(inputs, attrs, backend):
    dy, y = inputs["dy"], inputs["y"]
    axis = attrs["axis"]
    rows = _rows(y, axis) if y.ndim and dy.shape == y.shape and dy.dtype == y.dtype \
        else None
    if rows is None:
        p = dy * y
        p -= y * np.sum(p, axis=axis, keepdims=True)
        return p
    g = np.ascontiguousarray(dy).reshape(rows.shape)
    out = np.empty_like(rows)
    run = _loop_when_ready(_SOFTMAX_GRAD_ROWS, (g, rows, out))
    if run is not None:
        run(g, rows, out)
    else:
        np.multiply(g, rows, out=out)
        out -= rows * _lane_sums(out)[:, None]
    return out.reshape(y.shape)


@kernel("LogSoftmax")
def log_softmax(inputs, attrs, backend):
    return _log_softmax(inputs["logits"], attrs["axis"])


@kernel("LogSoftmaxGrad")
def log_softmax_grad(inputs, attrs, backend):
    dy = inputs["dy"]
    e = np.exp(inputs["y"]) * np.sum(dy, axis=attrs["axis"], keepdims=True)
    # in place unless dy and y broadcast (a batched tangent against y)
    return np.subtract(dy, e, out=e) if e.shape == dy.shape else dy - e


@kernel("BiasAdd")
def bias_add(inputs, attrs, backend):
    value, bias = inputs["value"], inputs["bias"]
    if attrs["data_format"] == "NCHW":
        bias = bias.reshape(bias.shape + (1,) * (value.ndim - 2))
    return value + bias


@kernel("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy(inputs, attrs, backend):
    labels, axis = inputs["labels"], attrs["axis"]
    logsm = _log_softmax(inputs["logits"], axis)
    loss = ensure_array(-np.sum(labels * logsm, axis=axis))  # a scalar for 1-D logits
    # d loss / d logits = softmax * sum(labels) - labels (exact even for unnormalized labels)
    np.exp(logsm, out=logsm)
    logsm *= np.sum(labels, axis=axis, keepdims=True)
    logsm -= labels
    return [loss, logsm]


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy(inputs, attrs, backend):
    labels, logits = inputs["labels"], inputs["logits"]
    classes = logits.shape[-1]
    flat = labels.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= classes):
        bad = flat[(flat < 0) | (flat >= classes)][0]
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: labels must be in [0, {classes}) "
            f"(the number of classes, logits' last dimension), got label {int(bad)}")
    x = logits.reshape(flat.size, classes)  # (not -1: ambiguous when classes is 0)
    rows = np.arange(x.shape[0])
    flat_rows = _rows(x, -1)
    looped = flat_rows is not None
    shifted = _shifted_rows(flat_rows) if looped else x - np.max(x, axis=-1, keepdims=True)
    picked = shifted[rows, flat]
    np.exp(shifted, out=shifted)
    if looped:  # (each row summed in the softmax's lane order)
        total = _normalize_rows(shifted)
    else:
        total = np.sum(shifted, axis=-1)
        shifted /= total[:, None]
    loss = np.log(total)
    loss -= picked
    shifted[rows, flat] -= 1  # backprop = softmax - one_hot(labels)
    return [loss.reshape(labels.shape), shifted.reshape(logits.shape)]


@kernel("SigmoidCrossEntropyWithLogits")
def sigmoid_cross_entropy(inputs, attrs, backend):
    z, x = inputs["labels"], inputs["logits"]
    # max(x, 0) - x z + log(1 + exp(-|x|)): never exponentiates a large positive number
    out = ensure_array(np.log1p(np.exp(-np.abs(x))))
    out += np.maximum(x, 0)
    out -= x * z
    return out


@kernel("L2Loss")
def l2_loss(inputs, attrs, backend):
    x = inputs["x"]
    return np.asarray(np.sum(np.square(x), dtype=x.dtype) / 2, dtype=x.dtype)


# ------------------------------------------------------------------ fused batch normalization
# A feature-last input is viewed as [R / k, k * C]: k whole rows of C features side by side,
# k the largest divisor of R up to _BN_ROW / C. NumPy sums such a view along axis 0 one row
# after another, then the k partial sums in turn: an order fixed by the shape alone (the
# same bits on every call, whatever the thread count), and inner loops of k * C elements,
# not C (NumPy's per-row overhead made 16 features 5-10x slower than this). A feature axis
# inside is viewed as [A, C, B] and summed over A and B.
_BN_ROW = 1024
# Outputs and temporaries kept between calls: a fresh array of a few MB faults in every
# page on its first write, which made every other call 4x slower (measured).
_SPARE_BN = Spares()


class _Layout:
    """How one FusedBatchNorm operand is viewed: `view(a)`, per-feature vectors
    broadcast against the view (`wide(v)`) and sums over the view (`sum(a)`)."""

    def __init__(self, shape: tuple, axis: int):
        self.c = c = shape[axis]
        inner = math.prod(shape[axis + 1:])
        outer = math.prod(shape[:axis])
        if inner == 1:
            k = max(1, min(outer, _BN_ROW // max(c, 1)))
            while outer % k:
                k -= 1
            self.k, self.shape = k, (outer // k, k * c)
        else:
            self.k, self.shape = 0, (outer, c, inner)

    def view(self, a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a).reshape(self.shape)

    def wide(self, v: np.ndarray) -> np.ndarray:
        if not self.k:
            return v[:, None]
        return v if self.k == 1 else np.tile(v, self.k)

    def sum(self, a: np.ndarray) -> np.ndarray:
        if not self.k:
            return np.add.reduce(a, axis=(0, 2))
        return self.fold(np.add.reduce(a, axis=0))

    def fold(self, s: np.ndarray) -> np.ndarray:
        """The k partial sums [k * C] of a view's column sums, added in turn: [C]."""
        return s if self.k == 1 else np.add.reduce(s.reshape(self.k, self.c), axis=0)


# Loops (numba, compiled once per dtype in the background, like conv_direct's) that do the
# elementwise passes of the two kernels below over the [R / k, k * C] view in one sweep
# each, where NumPy makes a temporary per operation: the same operations on each element
# in the same order (no fused multiply-add: numba does not contract), and each column
# summed row after row from zero like NumPy's reduction over the leading axis, so the
# same bits as the NumPy lines they replace, which run until a loop is compiled.


def _bn_moment(x, g, m, out, with_g):  # pragma: no cover (numba)
    """out[j] += (x[r, j] - m[j])^2, or g[r, j] (x[r, j] - m[j]) with `with_g`, row by
    row from out = 0."""
    rows, lanes = x.shape
    if with_g:
        for r in range(rows):
            for j in range(lanes):
                out[j] += g[r, j] * (x[r, j] - m[j])
    else:
        for r in range(rows):
            for j in range(lanes):
                d = x[r, j] - m[j]
                out[j] += d * d


def _bn_apply(x, g, m, a, u, w, out, grad):  # pragma: no cover (numba)
    """out = x u + w (forward), or (g - a) u - (x - m) w (the input gradient)."""
    rows, lanes = x.shape
    if grad:
        for r in range(rows):
            for j in range(lanes):
                out[r, j] = (g[r, j] - a[j]) * u[j] - (x[r, j] - m[j]) * w[j]
    else:
        for r in range(rows):
            for j in range(lanes):
                out[r, j] = x[r, j] * u[j] + w[j]


_MOMENT = jit.Loop(_bn_moment)
_APPLY = jit.Loop(_bn_apply)


def _sum_of_squares(lay: "_Layout", v, mean_wide, scratch):
    """sum((v - mean)^2) over the view's rows, then folded (see _Layout.sum)."""
    if lay.k and lay.shape[1] > 1:
        out = np.zeros(lay.shape[1], v.dtype)
        run = _loop_when_ready(_MOMENT, (v, v, mean_wide, out, False))
        if run is not None:
            run(v, v, mean_wide, out, False)
            return lay.fold(out)
    centred = np.subtract(v, mean_wide, out=scratch)
    np.square(centred, out=centred)
    return lay.sum(centred)


@kernel("FusedBatchNorm")
def fused_batch_norm(inputs, attrs, backend):
    """(y, mean, biased variance): one pass for the mean, one for the variance of the
    centred values (more accurate than E[x^2] - mean^2), then y = x k + (offset - mean k)
    with k = scale / sqrt(variance + epsilon)."""
    x, scale, offset = inputs["x"], inputs["scale"], inputs["offset"]
    axis = attrs["axis"]
    c = x.shape[axis]
    n = x.size // c if c else 0
    dtype = x.dtype
    if n == 0:  # no rows: NaN statistics, as a mean over nothing
        nan = np.full(c, np.nan, dtype)
        return [np.empty_like(x), nan, nan.copy()]
    lay = _Layout(x.shape, axis)
    v = lay.view(x)
    mean = lay.sum(v)
    mean /= n
    y = _SPARE_BN.empty(x.shape, dtype)
    out = y.reshape(lay.shape)
    variance = _sum_of_squares(lay, v, lay.wide(mean), out)
    variance /= n
    k = variance + dtype.type(attrs["epsilon"])
    np.sqrt(k, out=k)
    np.divide(scale, k, out=k)
    shift = offset - mean * k
    k_wide, shift_wide = lay.wide(k), lay.wide(shift)
    run = _loop_when_ready(_APPLY, (v, v, k_wide, k_wide, k_wide, shift_wide, out, False)) \
        if lay.k and lay.shape[1] > 1 else None
    if run is not None:
        run(v, v, k_wide, k_wide, k_wide, shift_wide, out, False)
    else:
        np.multiply(v, k_wide, out=out)
        out += shift_wide
    return [y, mean, variance]


@kernel("FusedBatchNormGrad")
def fused_batch_norm_grad(inputs, attrs, backend):
    """(dx, dscale, doffset) of FusedBatchNorm from dy and the saved statistics:
    with xc = x - mean, inv = 1 / sqrt(variance + epsilon) and n elements per feature,
    doffset = sum(dy), dscale = inv sum(dy xc),
    dx = scale inv (dy - doffset / n) - xc (scale inv^3 sum(dy xc) / n)."""
    dy, x = inputs["dy"], inputs["x"]
    scale, mean, variance = inputs["scale"], inputs["mean"], inputs["variance"]
    axis = attrs["axis"]
    c = x.shape[axis]
    n = x.size // c if c else 0
    dtype = x.dtype
    if n == 0:
        zeros = np.zeros(c, dtype)
        return [np.empty_like(x), zeros, zeros.copy()]
    lay = _Layout(x.shape, axis)
    g, v = lay.view(dy.astype(dtype, copy=False)), lay.view(x)
    inv = variance + dtype.type(attrs["epsilon"])
    np.sqrt(inv, out=inv)
    np.divide(dtype.type(1), inv, out=inv)
    d_offset = lay.sum(g)
    dx = _SPARE_BN.empty(x.shape, dtype)
    prod = dx.reshape(lay.shape)
    mean_wide = lay.wide(mean)
    looped = bool(lay.k) and lay.shape[1] > 1
    run = _loop_when_ready(_MOMENT, (v, g, mean_wide, mean_wide, True)) if looped else None
    xc = None
    if run is not None:
        lanes = np.zeros(lay.shape[1], dtype)
        run(v, g, mean_wide, lanes, True)
        s_gxc = lay.fold(lanes)
    else:
        xc = np.subtract(v, mean_wide, out=_SPARE_BN.empty(lay.shape, dtype))
        np.multiply(g, xc, out=prod)
        # (+ 0: the loop sums from +0.0, so a column of -0.0 products gives +0.0 there)
        s_gxc = lay.sum(prod) if not looped else lay.fold(np.add.reduce(prod, axis=0)
                                                          + dtype.type(0))
    d_scale = s_gxc * inv
    u = scale * inv
    w = u * inv * inv * s_gxc
    w /= n
    a_wide, u_wide, w_wide = lay.wide(d_offset / n), lay.wide(u), lay.wide(w)
    run = _loop_when_ready(_APPLY, (v, g, mean_wide, a_wide, u_wide, w_wide, prod, True)) \
        if looped else None
    if run is not None:
        run(v, g, mean_wide, a_wide, u_wide, w_wide, prod, True)
        return [dx, d_scale, d_offset]
    if xc is None:
        xc = np.subtract(v, mean_wide, out=_SPARE_BN.empty(lay.shape, dtype))
    np.subtract(g, a_wide, out=prod)
    prod *= u_wide
    xc *= w_wide
    prod -= xc
    return [dx, d_scale, d_offset]
