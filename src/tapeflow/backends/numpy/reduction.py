"""NumPy kernels of reductions, scans, top-k and add_n."""
import ml_dtypes as _ml
import numpy as np

from ._kernel import (along_last, broadcast_shapes, ensure_array, kernel, put_along_last,
                      sum_leading, take_along_last)

_HALF = (np.dtype(np.float16), np.dtype(_ml.bfloat16))


@kernel("Sum")
def sum_(i, a, b):
    x, axis = i["x"], a["axis"]
    if type(axis) is tuple and not a["keepdims"]:
        fast = sum_leading(x, axis)
        if fast is not None:
            return fast
    return ensure_array(np.sum(x, axis=axis, keepdims=a["keepdims"], dtype=x.dtype))


@kernel("Mean")
def mean(i, a, b):
    x = i["x"]
    axis, keepdims = a["axis"], a["keepdims"]
    if x.dtype.kind in "iu":
        # TensorFlow divides integer sums with truncation toward zero.
        n = int(np.prod([x.shape[k] for k in axis]))
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64 if x.dtype.kind == "i"
                   else np.uint64)
        q = np.abs(s) // max(n, 1) * np.sign(s) if x.dtype.kind == "i" else s // max(n, 1)
        return ensure_array(q.astype(x.dtype))
    if x.size == 0:  # the mean of nothing is NaN (TF), without NumPy's "empty slice" warning
        s = np.sum(x, axis=axis, keepdims=keepdims,
                   dtype=np.float32 if x.dtype in _HALF else None)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ensure_array((s / 0).astype(x.dtype))
    if x.dtype in _HALF:  # accumulate half precision in float32
        return ensure_array(
            np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32).astype(x.dtype))
    return ensure_array(np.mean(x, axis=axis, keepdims=keepdims))


def _extreme(x, axis, keepdims, fn, empty_value):
    if x.size == 0:  # like TensorFlow: an empty reduction gives the identity element
        return ensure_array(fn(x, axis=axis, keepdims=keepdims, initial=empty_value))
    return ensure_array(fn(x, axis=axis, keepdims=keepdims))


@kernel("Max")
def max_(i, a, b):
    x = i["x"]
    low = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    return _extreme(x, a["axis"], a["keepdims"], np.max, low)


@kernel("Min")
def min_(i, a, b):
    x = i["x"]
    high = np.iinfo(x.dtype).max if x.dtype.kind in "iu" else np.inf
    return _extreme(x, a["axis"], a["keepdims"], np.min, high)


@kernel("Prod")
def prod(i, a, b):
    x = i["x"]
    return ensure_array(np.prod(x, axis=a["axis"], keepdims=a["keepdims"], dtype=x.dtype))


@kernel("LogSumExp")
def logsumexp(i, a, b):
    x = i["x"]
    axis, keepdims = a["axis"], a["keepdims"]
    if x.size == 0:
        with np.errstate(divide="ignore"):
            return ensure_array(np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)))
    m = np.max(x, axis=axis, keepdims=True)
    # Shift by the max for stability; an infinite max (all -inf, or +inf) is not shifted.
    m = np.where(np.isfinite(m), m, np.zeros((), x.dtype))
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return ensure_array(out if keepdims else np.squeeze(out, axis=axis))  # 0-d x: a scalar


@kernel("Any")
def any_(i, a, b):
    return ensure_array(np.any(i["x"], axis=a["axis"], keepdims=a["keepdims"]))


@kernel("All")
def all_(i, a, b):
    return ensure_array(np.all(i["x"], axis=a["axis"], keepdims=a["keepdims"]))


@kernel("ArgMax")
def argmax(i, a, b):
    return ensure_array(np.argmax(i["x"], axis=a["axis"]).astype(a["output_type"]._np))


@kernel("ArgMin")
def argmin(i, a, b):
    return ensure_array(np.argmin(i["x"], axis=a["axis"]).astype(a["output_type"]._np))


def _descending_order(x):
    """Indices sorting the last axis by value, largest first; ties keep index order."""
    n = x.shape[-1]
    return (n - 1) - along_last(np.argsort, x[..., ::-1], kind="stable")[..., ::-1]


@kernel("TopK")
def top_k(i, a, b):
    x = i["x"]
    k = a["k"]
    n = x.shape[-1]
    if k == 0 or x.size == 0:
        idx = np.zeros(x.shape[:-1] + (k,), np.int64)
    elif 4 * k >= n or n <= 64:
        idx = _descending_order(x)[..., :k]
    else:
        # Partial selection: the k-th largest value per row, then everything above it and
        # the lowest-indexed ties at it (TensorFlow prefers lower indices among equals).
        part = along_last(np.argpartition, x, n - k)[..., n - k:]
        kth = np.min(take_along_last(x, part), axis=-1, keepdims=True)
        above = x > kth
        ties = x == kth
        room = k - np.sum(above, axis=-1, keepdims=True)
        chosen = above | (ties & (np.cumsum(ties, axis=-1) <= room))
        cols = np.nonzero(chosen.reshape(-1, n))[1]
        if cols.size != x.size // n * k:  # NaNs defeat the threshold: sort fully
            idx = _descending_order(x)[..., :k]
        else:
            idx = cols.reshape(x.shape[:-1] + (k,))
            vals = take_along_last(x, idx)
            idx = take_along_last(idx, _descending_order(vals))
    values = take_along_last(x, idx) if k else np.zeros(idx.shape, x.dtype)
    return [values, idx.astype(a["index_type"]._np)]


@kernel("GatherLastAxis")
def gather_last_axis(i, a, b):
    x, idx = i["x"], i["indices"]
    lead = broadcast_shapes(x.shape[:-1], idx.shape[:-1])
    x = np.broadcast_to(x, lead + x.shape[-1:])
    idx = np.broadcast_to(idx, lead + idx.shape[-1:])
    return take_along_last(x, idx)


@kernel("ScatterLastAxis")
def scatter_last_axis(i, a, b):
    u, idx = i["updates"], i["indices"]
    lead = broadcast_shapes(u.shape[:-1], idx.shape[:-1])
    out = np.zeros(lead + (a["n"],), u.dtype)
    put_along_last(out, np.broadcast_to(idx, lead + idx.shape[-1:]),
                   np.broadcast_to(u, lead + u.shape[-1:]))
    return out


def _scan(x, attrs, fn, identity):
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]
    if reverse:
        x = np.flip(x, axis)
    if not exclusive:
        out = fn(x, axis=axis, dtype=x.dtype)
    else:
        out = np.empty(x.shape, x.dtype)
        if x.shape[axis]:
            lead = (slice(None),) * axis
            out[lead + (slice(0, 1),)] = identity
            fn(x[lead + (slice(None, -1),)], axis=axis, dtype=x.dtype,
               out=out[lead + (slice(1, None),)])
    return np.flip(out, axis) if reverse else out


@kernel("Cumsum")
def cumsum(i, a, b):
    return _scan(i["x"], a, np.cumsum, 0)


@kernel("Cumprod")
def cumprod(i, a, b):
    return _scan(i["x"], a, np.cumprod, 1)


@kernel("AddN")
def add_n(i, a, b):
    xs = i["inputs"]
    if len(xs) == 1:
        return xs[0].copy()
    out = ensure_array(np.add(xs[0], xs[1]))
    for x in xs[2:]:
        np.add(out, x, out=out)
    return out
