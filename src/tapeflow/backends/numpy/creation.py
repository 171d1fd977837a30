"""NumPy kernels that create tensors."""
import numpy as np

from ..._core.errors import InvalidArgumentError
from ._kernel import check_rank, kernel


@kernel("Fill")
def fill(inputs, attrs, backend):
    check_rank("fill", len(attrs["shape"]))
    return np.full(attrs["shape"], inputs["value"], dtype=inputs["value"].dtype)


@kernel("ZerosLike")
def zeros_like(inputs, attrs, backend):
    x = inputs["x"]
    if x.dtype == object:  # a string tensor's zero is the empty string, as TF's
        return np.full(x.shape, b"", object)
    return np.zeros_like(x)


@kernel("OnesLike")
def ones_like(inputs, attrs, backend):
    return np.ones_like(inputs["x"])


@kernel("Const")
def const(inputs, attrs, backend):
    return attrs["value"]  # never written to: kernels and tensors treat arrays as immutable


@kernel("Zeros")
def zeros(inputs, attrs, backend):
    check_rank("zeros", len(attrs["shape"]))
    if attrs["dtype"].is_string:
        return np.full(attrs["shape"], b"", object)
    return np.zeros(attrs["shape"], dtype=attrs["dtype"]._np)


@kernel("Ones")
def ones(inputs, attrs, backend):
    check_rank("ones", len(attrs["shape"]))
    return np.ones(attrs["shape"], dtype=attrs["dtype"]._np)


@kernel("Range")
def range_(i, a, b, dtype=None):
    start, limit, delta = a["start"], a["limit"], a["delta"]
    dtype = a["dtype"]._np if dtype is None else dtype
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return np.arange(start, limit, delta, dtype=dtype)
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return (start + np.arange(n, dtype=np.float64) * delta).astype(dtype, copy=False)


@kernel("RangeV2")
def range_v2(inputs, attrs, backend):
    # traced range: the arguments arrive as 0-d arrays, so checks TF's Range kernel makes
    # at run time happen here
    start, limit, delta = (inputs[k].item() for k in ("start", "limit", "delta"))
    if delta == 0:
        raise InvalidArgumentError("Range: delta must not be 0")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise InvalidArgumentError(
            f"Range: start {start} must be {'<=' if delta > 0 else '>='} limit {limit} "
            f"when delta is {delta}")
    return range_(None, {"start": start, "limit": limit, "delta": delta,
                         "dtype": None}, backend, dtype=inputs["start"].dtype)


@kernel("Eye")
def eye(inputs, attrs, backend):
    rows, cols = attrs["num_rows"], attrs["num_columns"]
    check_rank("eye", len(attrs["batch_shape"]) + 2)
    out = np.zeros(tuple(attrs["batch_shape"]) + (rows, cols), dtype=attrs["dtype"]._np)
    k = np.arange(min(rows, cols))
    out[..., k, k] = 1
    return out


@kernel("OneHot")
def one_hot(inputs, attrs, backend):
    idx, dtype = inputs["indices"], attrs["dtype"]._np
    check_rank("one_hot", idx.ndim + 1)
    hot = idx[..., None] == np.arange(attrs["depth"])
    out = np.where(hot, np.array(attrs["on_value"], dtype), np.array(attrs["off_value"], dtype))
    if attrs["axis"] != idx.ndim:
        out = np.moveaxis(out, -1, attrs["axis"])
    return out
