"""NumPy kernels of reductions, scans, top-k and add_n."""
import math

import ml_dtypes as _ml
import numpy as np

from ..._core.errors import InvalidArgumentError
from ..._core.threads import blas_threads
from ._kernel import (along_last, broadcast_shapes, ensure_array, kernel, put_along_last,
                      sum_leading, take_along_last)

_HALF = (np.dtype(np.float16), np.dtype(_ml.bfloat16))


# The longest rows a sum over trailing axes (a layer norm's moments, a softmax's
# normalizer, a per-example loss) takes as a matrix-vector product: NumPy reduces each
# short row in a call of its own (1024 rows of 64 float32: 38 us, as a product 5.5; 2048
# x 512: 251 and 67). Longer rows keep NumPy's pairwise sum, the more accurate.
TRAILING_COLS_MAX = 1 << 14


def _sum_trailing(x: np.ndarray, axes: tuple):
    """`x` summed over its trailing `axes` (not all of them) as x[rows, cols] @ ones, the
    result with those axes dropped; None where that does not apply."""
    n = len(axes)
    if (n == 0 or n >= x.ndim or x.dtype.kind != "f" or x.dtype.itemsize < 4
            or axes != tuple(range(x.ndim - n, x.ndim)) or not x.flags.c_contiguous):
        return None
    lead = x.shape[:x.ndim - n]
    rows = math.prod(lead)
    cols = x.size // rows if rows else 0
    if not 2 <= cols <= TRAILING_COLS_MAX:
        return None
    with blas_threads(1):  # (BLAS's threads would split the sum: bits by thread count)
        return (x.reshape(rows, cols) @ np.ones(cols, x.dtype)).reshape(lead)


def _sum_fast(x: np.ndarray, axes: tuple, keepdims: bool):
    """Sum over leading or trailing axes as one BLAS product where one applies, else None."""
    fast = sum_leading(x, axes)
    if fast is None:
        fast = _sum_trailing(x, axes)
    if fast is not None and keepdims:
        fast = fast.reshape(tuple(1 if k in axes else d for k, d in enumerate(x.shape)))
    return fast


@kernel("Sum")
def sum_(inputs, attrs, backend):
    x, axis = inputs["x"], attrs["axis"]
    if type(axis) is tuple:
        fast = _sum_fast(x, axis, attrs["keepdims"])
        if fast is not None:
            return fast
    return ensure_array(np.sum(x, axis=axis, keepdims=attrs["keepdims"], dtype=x.dtype))


@kernel("Mean")
def mean(inputs, attrs, backend):
    x = inputs["x"]
    axis, keepdims = attrs["axis"], attrs["keepdims"]
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
    if type(axis) is tuple:
        fast = _sum_fast(x, axis, keepdims)
        if fast is not None:  # (the sum over the count in x's dtype, as np.mean divides)
            return np.true_divide(fast, math.prod(x.shape[k] for k in axis), out=fast)
    return ensure_array(np.mean(x, axis=axis, keepdims=keepdims))


def _extreme(x, axis, keepdims, fn, empty_value):
    if x.size == 0:  # like TensorFlow: an empty reduction gives the identity element
        return ensure_array(fn(x, axis=axis, keepdims=keepdims, initial=empty_value))
    return ensure_array(fn(x, axis=axis, keepdims=keepdims))


@kernel("Max")
def max_(inputs, attrs, backend):
    x = inputs["x"]
    low = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    return _extreme(x, attrs["axis"], attrs["keepdims"], np.max, low)


@kernel("Min")
def min_(inputs, attrs, backend):
    x = inputs["x"]
    high = np.iinfo(x.dtype).max if x.dtype.kind in "iu" else np.inf
    return _extreme(x, attrs["axis"], attrs["keepdims"], np.min, high)


@kernel("Prod")
def prod(inputs, attrs, backend):
    x = inputs["x"]
    return ensure_array(np.prod(x, axis=attrs["axis"], keepdims=attrs["keepdims"], dtype=x.dtype))


@kernel("LogSumExp")
def logsumexp(inputs, attrs, backend):
    x = inputs["x"]
    axis, keepdims = attrs["axis"], attrs["keepdims"]
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
def any_(inputs, attrs, backend):
    return ensure_array(np.any(inputs["x"], axis=attrs["axis"], keepdims=attrs["keepdims"]))


@kernel("All")
def all_(inputs, attrs, backend):
    return ensure_array(np.all(inputs["x"], axis=attrs["axis"], keepdims=attrs["keepdims"]))


@kernel("ArgMax")
def argmax(inputs, attrs, backend):
    return ensure_array(np.argmax(inputs["x"], axis=attrs["axis"]).astype(attrs["output_type"]._np))


@kernel("ArgMin")
def argmin(inputs, attrs, backend):
    return ensure_array(np.argmin(inputs["x"], axis=attrs["axis"]).astype(attrs["output_type"]._np))


def _descending_order(x):
    """Indices sorting the last axis by value, largest first; ties keep index order."""
    n = x.shape[-1]
    return (n - 1) - along_last(np.argsort, x[..., ::-1], kind="stable")[..., ::-1]


@kernel("TopK")
def top_k(inputs, attrs, backend):
    x = inputs["x"]
    k = attrs["k"]
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
    return [values, idx.astype(attrs["index_type"]._np)]


@kernel("GatherLastAxis")
def gather_last_axis(inputs, attrs, backend):
    x, idx = inputs["x"], inputs["indices"]
    lead = broadcast_shapes(x.shape[:-1], idx.shape[:-1])
    x = np.broadcast_to(x, lead + x.shape[-1:])
    idx = np.broadcast_to(idx, lead + idx.shape[-1:])
    return take_along_last(x, idx)


@kernel("ScatterLastAxis")
def scatter_last_axis(inputs, attrs, backend):
    u, idx = inputs["updates"], inputs["indices"]
    lead = broadcast_shapes(u.shape[:-1], idx.shape[:-1])
    out = np.zeros(lead + (attrs["n"],), u.dtype)
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
def cumsum(inputs, attrs, backend):
    return _scan(inputs["x"], attrs, np.cumsum, 0)


@kernel("Cumprod")
def cumprod(inputs, attrs, backend):
    return _scan(inputs["x"], attrs, np.cumprod, 1)


@kernel("AddN")
def add_n(inputs, attrs, backend):
    xs = inputs["inputs"]
    if len(xs) == 1:
        return xs[0].copy()
    out = ensure_array(np.add(xs[0], xs[1]))
    for x in xs[2:]:
        np.add(out, x, out=out)
    return out


# --------------------------------------------------------------------------- segment products


@kernel("SegmentProd")
def segment_prod(inputs, attrs, backend):
    """Products of data's slices by segment id: `num_segments` rows, or for sorted ids
    (num_segments = -1) max(ids) + 1 rows; empty segments 1, negative ids dropped."""
    data, ids = inputs["data"], inputs["segment_ids"]
    num = attrs["num_segments"]
    if num < 0:
        if ids.size and ids.min() < 0:
            raise InvalidArgumentError(f"SegmentProd: segment_ids holds {ids.min()}, "
                                       "negative")
        if ids.size > 1 and (np.diff(ids) < 0).any():
            raise InvalidArgumentError("SegmentProd: segment ids are not increasing")
        num = int(ids.max()) + 1 if ids.size else 0
    elif ids.size and ids.max() >= num:
        raise InvalidArgumentError(f"UnsortedSegmentProd: segment_ids holds {ids.max()}, "
                                   f"out of range [0, {num})")
    rest = data.shape[ids.ndim:]
    rows = data.reshape((ids.size,) + rest)
    flat = ids.reshape(-1)
    keep = flat >= 0
    out = np.ones((num,) + rest, data.dtype)
    np.multiply.at(out, flat[keep], rows[keep])
    return out
