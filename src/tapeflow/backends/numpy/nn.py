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


def _softmax(x, axis):
    if not x.size:  # an empty axis (in a traced graph; eager calls skip the kernel)
        return x.copy()
    e = x - np.max(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


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
    p = dy * y
    p -= y * np.sum(p, axis=attrs["axis"], keepdims=True)
    return p


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
    shifted = x - np.max(x, axis=-1, keepdims=True)
    picked = shifted[rows, flat]
    np.exp(shifted, out=shifted)
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
_BN_COMPILE_AFTER = 3  # calls of a loop before it compiles (as conv_direct's loops)
_bn_calls: dict = {}


def _bn_loop(loop, args: tuple):
    """The compiled loop for `args`, or None (NumPy runs its arithmetic): before its
    _BN_COMPILE_AFTER-th call, without numba, or while it compiles in the background."""
    if not jit.available():
        return None
    calls = _bn_calls.get(loop, 0)
    if calls < _BN_COMPILE_AFTER - 1:
        _bn_calls[loop] = calls + 1
        return None
    return loop.ready(*args)


def _sum_of_squares(lay: "_Layout", v, mean_wide, scratch):
    """sum((v - mean)^2) over the view's rows, then folded (see _Layout.sum)."""
    if lay.k and lay.shape[1] > 1:
        out = np.zeros(lay.shape[1], v.dtype)
        run = _bn_loop(_MOMENT, (v, v, mean_wide, out, False))
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
    run = _bn_loop(_APPLY, (v, v, k_wide, k_wide, k_wide, shift_wide, out, False)) \
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
    run = _bn_loop(_MOMENT, (v, g, mean_wide, mean_wide, True)) if looped else None
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
    run = _bn_loop(_APPLY, (v, g, mean_wide, a_wide, u_wide, w_wide, prod, True)) \
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
