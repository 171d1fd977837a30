"""NumPy kernels of indexing: strided slices, gathers, scatters, segment sums, where."""
from types import MappingProxyType

import numpy as np

from ..._core.dispatch import Alias
from ..._core.errors import InvalidArgumentError
from ._kernel import check_rank, ensure_array, kernel


_KEYS: dict = {}  # id(attrs) -> (attrs, key), for a compiled node's read-only attrs
_KEYS_KEPT = 4096


def _slice_key(a):
    """The NumPy basic-indexing key of a StridedSlice spec (see ops/indexing.py). A
    compiled node runs with one read-only attrs mapping every time (in a loop, every
    iteration): its key is made once (the cache holds the mapping, so its id is not
    reused while the entry lives); an eager call's dict is new each time."""
    if type(a) is not MappingProxyType:
        return _make_key(a)
    hit = _KEYS.get(id(a))
    if hit is not None and hit[0] is a:
        return hit[1]
    key = _make_key(a)
    if len(_KEYS) >= _KEYS_KEPT:
        _KEYS.clear()
    _KEYS[id(a)] = (a, key)
    return key


def _make_key(a):
    shrink, new = a["shrink_axis_mask"], a["new_axis_mask"]
    key = []
    for i, (b, e, s) in enumerate(zip(a["begin"], a["end"], a["strides"])):
        if new >> i & 1:
            key.append(None)
        elif shrink >> i & 1:
            key.append(b)
        else:
            key.append(slice(b, e, s))
    return tuple(key)


@kernel("StridedSlice")
def strided_slice(inputs, attrs, backend):
    out = inputs["x"][_slice_key(attrs)]
    # Copy: a view would keep the whole input buffer alive behind a small slice.
    return out.copy() if type(out) is np.ndarray else ensure_array(out)


@kernel("StridedSliceGrad")
def strided_slice_grad(inputs, attrs, backend):
    dy = inputs["dy"]
    out = np.zeros(attrs["shape"], dtype=dy.dtype)
    out[_slice_key(attrs)] = dy
    return out


@kernel("InplaceStridedSliceAdd")
def inplace_strided_slice_add(inputs, attrs, backend):
    """ref[slice] += dy: a StridedSliceGrad added into a running total (ops/indexing.py)."""
    ref, dy = inputs["ref"], inputs["dy"]
    key = _slice_key(attrs)
    view = ref[key]
    if type(view) is np.ndarray and view.base is not None:  # (a basic slice is a view)
        np.add(view, dy, out=view, casting="unsafe")
    else:  # every axis shrunk: one element
        ref[key] += dy
    return Alias("ref", ref.shape)


def _first_bad(idx, bad):
    pos = tuple(int(p) for p in np.argwhere(bad)[0])
    return list(pos), int(idx[pos])


def _check_range(op, idx, bound, what="indices"):
    """Raise like TensorFlow on CPU when an index is outside [0, bound)."""
    if idx.size and (idx.min() < 0 or idx.max() >= bound):
        pos, value = _first_bad(idx, (idx < 0) | (idx >= bound))
        raise InvalidArgumentError(
            f"{op}: {what}{pos} = {value} is not in [0, {bound})")


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


@kernel("GatherV2")
def gather(inputs, attrs, backend):
    params, idx = inputs["params"], inputs["indices"]
    axis, nbatch = attrs["axis"], attrs["batch_dims"]
    if idx.ndim == 0 and params.ndim > 1:  # one slice (a loop's row t): a strided copy
        i = int(idx)
        if not 0 <= i < params.shape[axis]:
            _check_range("GatherV2", idx, params.shape[axis])
        return params[(slice(None),) * axis + (i,)].copy()
    _check_range("GatherV2", idx, params.shape[axis])
    check_rank("gather", params.ndim - 1 + idx.ndim - nbatch)  # np.take would crash
    if nbatch == 0:
        return ensure_array(np.take(params, idx, axis=axis))  # 1-D params, 0-d index
    ps = params.shape
    bp, mp, rp = _prod(ps[:nbatch]), _prod(ps[nbatch:axis]), _prod(ps[axis + 1:])
    # (sizes spelled out throughout: -1 is ambiguous when a dimension is 0)
    flat_idx = idx.reshape(bp, 1, _prod(idx.shape[nbatch:]), 1)
    out = np.take_along_axis(params.reshape(bp, mp, ps[axis], rp), flat_idx, axis=2)
    return out.reshape(ps[:axis] + idx.shape[nbatch:] + ps[axis + 1:])


def _rows_sum(row_ids, rows, num_rows):
    """Sum the rows of `rows` [N, R] into `num_rows` rows by `row_ids` (duplicates add)."""
    n, width = rows.shape
    out = np.zeros(num_rows * width, dtype=rows.dtype) if rows.dtype != object else \
        np.full(num_rows * width, b"", dtype=object)  # strings: empty, as TF's ScatterNd
    if width == 1:
        np.add.at(out, row_ids, rows.reshape(-1))
    elif n:
        # One flat ufunc.at: NumPy's fast path is for 1-D targets.
        flat = (row_ids[:, None] * width + np.arange(width)).reshape(-1)
        np.add.at(out, flat, rows.reshape(-1))
    return out.reshape(num_rows, width)


# Elements from which UnsortedSegmentSum of ids that repeat each segment the same number
# of times in order (0, 0, 1, 1, ...: the gradient of a repeat, as a nearest-neighbour
# upsampling's) adds strided views (`_repeat_sum`) rather than calling np.add.at, which
# adds one element at a time: [32, 32, 32, 32] into 16 rows of axis 1, 2.2 -> 0.46 ms.
# (Sorting other ids into runs first cost more than np.add.at: measured.)
SORTED_SUM_FROM = 1 << 12


def _repeat_sum(data, ids, num):
    """UnsortedSegmentSum of `data` [M, I, R] by `ids` [I] along axis 1 where the ids are
    0, ..., 0, 1, ..., 1, ..., num - 1 (each L times), or None. The first slice of each
    run is added to zeros, then the second, and so on: each sum adds its slices in their
    order, from zero, as np.add.at does (the same bits)."""
    m, size, r = data.shape
    if not num or size % num:
        return None
    run = size // num
    if not np.array_equal(ids, np.repeat(np.arange(num, dtype=ids.dtype), run)):
        return None
    out = np.zeros((m, num, r), data.dtype)
    runs = data.reshape(m, num, run, r)
    for j in range(run):
        out += runs[:, :, j]
    return out


@kernel("UnsortedSegmentSum")
def unsorted_segment_sum(inputs, attrs, backend):
    data, ids = inputs["data"], inputs["segment_ids"]
    num, axis, nbatch = attrs["num_segments"], attrs["axis"], attrs["batch_dims"]
    # As TensorFlow documents: a negative id drops its slice; one >= num_segments raises
    # (TensorFlow's CPU kernel; its GPU kernel ignores them).
    if ids.size and ids.max() >= num:
        pos, value = _first_bad(ids, ids >= num)
        raise InvalidArgumentError(
            f"UnsortedSegmentSum: segment_ids{pos} = {value} is out of range [0, {num})")
    ds = data.shape
    rest = axis + ids.ndim - nbatch
    bp, mp, ip, rp = (_prod(ds[:nbatch]), _prod(ds[nbatch:axis]), _prod(ds[axis:rest]),
                      _prod(ds[rest:]))
    if bp == 1 and data.size >= SORTED_SUM_FROM and data.dtype.kind in "fciu":
        out = _repeat_sum(data.reshape(mp, ip, rp), ids.reshape(ip), num)
        if out is not None:
            return out.reshape(ds[:axis] + (num,) + ds[rest:])
    ids = ids.reshape(bp, 1, ip).astype(np.int64, copy=False)
    if bp == 1 and mp == 1:
        row_ids = ids.reshape(-1)
    else:
        outer = np.arange(bp)[:, None, None] * mp + np.arange(mp)[None, :, None]
        row_ids = (outer * num + ids).reshape(-1)
    rows = data.reshape(bp * mp * ip, rp)
    if ids.size and ids.min() < 0:  # (their row ids would land in a neighbouring block)
        keep = np.broadcast_to(ids >= 0, (bp, mp, ip)).reshape(-1)
        row_ids, rows = row_ids[keep], rows[keep]
    out = _rows_sum(row_ids, rows, bp * mp * num)
    return out.reshape(ds[:axis] + (num,) + ds[rest:])


@kernel("InplaceSegmentSum")
def inplace_segment_sum(inputs, attrs, backend):
    """ref += UnsortedSegmentSum(data, segment_ids) along `axis` (batch_dims 0), added
    into the rows the ids name only (ops/indexing.py)."""
    ref, data, ids = inputs["ref"], inputs["data"], inputs["segment_ids"]
    axis = attrs["axis"]
    num = ref.shape[axis]
    lead = (slice(None),) * axis
    if ids.size == 1:  # one row (a loop's read of row t)
        i = int(ids.reshape(-1)[0])
        if i >= num:
            raise InvalidArgumentError(
                f"UnsortedSegmentSum: segment_ids{[0] * ids.ndim} = {i} is out of range "
                f"[0, {num})")
        if i >= 0:
            row = ref[lead + (i,)]
            if type(row) is np.ndarray:  # (a view: rows of more than one element)
                np.add(row, data.reshape(row.shape), out=row, casting="unsafe")
            else:  # one element
                ref[lead + (i,)] += data.reshape(-1)[0]
        return Alias("ref", ref.shape)
    if ids.size and ids.max() >= num:
        pos, value = _first_bad(ids, ids >= num)
        raise InvalidArgumentError(
            f"UnsortedSegmentSum: segment_ids{pos} = {value} is out of range [0, {num})")
    if ids.size and ids.min() < 0:  # a negative id drops its slice
        keep = ids >= 0
        ids, data = ids[keep], data[lead + (keep,)]
    ids = ids.reshape(-1)
    data = data.reshape(ref.shape[:axis] + (ids.size,) + ref.shape[axis + 1:])
    if ids.size <= 1 or np.unique(ids).size == ids.size:
        ref[lead + (ids,)] += data  # distinct rows: one gather, add, scatter
    else:
        np.add.at(ref, lead + (ids,), data)  # repeated rows add up, in order
    return Alias("ref", ref.shape)


def _nd_rows(op, indices, shape, nbatch):
    """Linear row numbers of the index tuples in `indices` (..., K) into the first
    `nbatch + K` dims of `shape`, checking that every tuple is in range."""
    k = indices.shape[-1]
    dims = shape[nbatch:nbatch + k]
    bp = _prod(shape[:nbatch])
    idx = indices.reshape(bp, _prod(indices.shape[nbatch:-1]), k).astype(np.int64, copy=False)
    bounds = np.asarray(dims, dtype=np.int64)
    bad = (idx < 0) | (idx >= bounds)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad.any(axis=-1))[0])
        where = list(np.unravel_index(pos[0] * idx.shape[1] + pos[1], indices.shape[:-1]))
        raise InvalidArgumentError(
            f"{op}: indices{[int(w) for w in where]} = {idx[pos].tolist()} does not index "
            f"into shape {list(shape)}")
    lin = np.zeros(idx.shape[:2], dtype=np.int64)
    for j, d in enumerate(dims):
        lin = lin * d + idx[:, :, j]
    if nbatch:
        lin = lin + (np.arange(bp) * _prod(dims))[:, None]
    return lin.reshape(-1), bp * _prod(dims)


def _one_row(indices, shape, nbatch: int):
    """The row number when `indices` is one index of depth 1 (`[i]` or `[[i]]`: a
    TensorArray's read or write, a loop's row write) within `shape`, else None (the
    general path, which also reports a bad index)."""
    if nbatch or indices.size != 1 or indices.shape[-1] != 1 or indices.ndim > 2 \
            or not shape:
        return None
    i = int(indices.reshape(-1)[0])
    return i if 0 <= i < shape[0] else None


@kernel("GatherNd")
def gather_nd(inputs, attrs, backend):
    params, indices = inputs["params"], inputs["indices"]
    nbatch = attrs["batch_dims"]
    i = _one_row(indices, params.shape, nbatch)
    if i is not None:
        out = params[i:i + 1].copy()
        return out if indices.ndim == 2 else out.reshape(params.shape[1:])
    k = indices.shape[-1]
    check_rank("gather_nd", indices.ndim - 1 + params.ndim - nbatch - k)
    rows, num_rows = _nd_rows("GatherNd", indices, params.shape, nbatch)
    tail = params.shape[nbatch + k:]
    out = params.reshape((num_rows,) + tail)[rows]
    return out.reshape(indices.shape[:-1] + tail)


@kernel("ScatterNd")
def scatter_nd(inputs, attrs, backend):
    indices, updates = inputs["indices"], inputs["updates"]
    shape, nbatch = tuple(attrs["shape"]), attrs["batch_dims"]
    rows, num_rows = _nd_rows("ScatterNd", indices, shape, nbatch)
    tail = shape[nbatch + indices.shape[-1]:]
    out = _rows_sum(rows, updates.reshape(len(rows), _prod(tail)), num_rows)
    return out.reshape(shape)


@kernel("TensorScatterNdUpdate")
def tensor_scatter_nd_update(inputs, attrs, backend):
    tensor, indices, updates = inputs["tensor"], inputs["indices"], inputs["updates"]
    nbatch = attrs["batch_dims"]
    i = _one_row(indices, tensor.shape, nbatch)
    if i is not None:
        out = tensor.copy()
        out[i] = updates[0] if updates.ndim == tensor.ndim else updates
        return out
    rows, num_rows = _nd_rows("TensorScatterNdUpdate", indices, tensor.shape, nbatch)
    tail = tensor.shape[nbatch + indices.shape[-1]:]
    out = tensor.reshape((num_rows,) + tail).copy()
    out[rows] = np.broadcast_to(updates, indices.shape[:-1] + tail).reshape(
        (len(rows),) + tail)
    return out.reshape(tensor.shape)


def _scatter_extremum(op, combine):
    def run(inputs, attrs, backend):
        tensor, indices, updates = inputs["tensor"], inputs["indices"], inputs["updates"]
        rows, num_rows = _nd_rows(op, indices, tensor.shape, 0)
        tail = tensor.shape[indices.shape[-1]:]
        out = tensor.reshape((num_rows,) + tail).copy()
        combine.at(out, rows, updates.reshape((len(rows),) + tail))  # duplicates combine
        return out.reshape(tensor.shape)
    return run


kernel("TensorScatterMax")(_scatter_extremum("TensorScatterMax", np.maximum))
kernel("TensorScatterMin")(_scatter_extremum("TensorScatterMin", np.minimum))


@kernel("SelectV2")
def select(inputs, attrs, backend):
    return np.where(inputs["condition"], inputs["x"], inputs["y"])


@kernel("Where")
def where(inputs, attrs, backend):
    return np.argwhere(inputs["condition"]).astype(np.int64, copy=False)


@kernel("RavelMultiIndex")
def ravel_multi_index(inputs, attrs, backend):
    dims, axes = attrs["dims"], attrs["axes"]
    indices = inputs["indices"]
    if len(indices) == 1 and np.ndim(indices[0]) == 0:  # (`xs[t]` in a loop: one scalar)
        i, d = int(indices[0]), dims[0]
        if not -d <= i < d:
            raise InvalidArgumentError(
                f"getitem: index {i} is out of bounds for axis {axes[0]} with size {d}")
        return np.asarray(i + d if i < 0 else i, dtype=np.int64)
    lin = None
    for idx, d, axis in zip(indices, dims, axes):
        idx = np.asarray(idx, dtype=np.int64)
        low = idx.min() if idx.size else 0
        if idx.size and (low < -d or idx.max() >= d):
            pos, value = _first_bad(idx, (idx < -d) | (idx >= d))
            raise InvalidArgumentError(
                f"getitem: index {value} is out of bounds for axis {axis} with size {d}")
        if low < 0:
            idx = np.where(idx < 0, idx + d, idx)
        lin = idx if lin is None else lin * d + idx
    return np.asarray(lin, dtype=np.int64)


@kernel("SegmentSum")
def segment_sum(inputs, attrs, backend):
    data, ids = inputs["data"], inputs["segment_ids"]
    if ids.size and ids.min() < 0:
        pos, value = _first_bad(ids, ids < 0)
        raise InvalidArgumentError(f"SegmentSum: segment_ids{pos} = {value} is negative")
    if attrs["sorted_ids"] and ids.size > 1 and (np.diff(ids) < 0).any():
        raise InvalidArgumentError("SegmentSum: segment ids are not increasing")
    num = max(int(ids.max()) + 1 if ids.size else 0, attrs["minimum"])
    if attrs["maximum"] >= 0:
        num = min(num, attrs["maximum"])
    out = _rows_sum(ids.astype(np.int64), data.reshape(data.shape[0], -1) if data.size
                    else np.zeros((data.shape[0], 0), data.dtype), num)
    return out.reshape((num,) + data.shape[1:])
