"""Array-API kernels of indexing: select and gather (strided slices, scatters and segment
sums fall back to NumPy: the standard has no scatter-add)."""
from ..numpy._kernel import check_rank
from ..numpy.indexing import _check_range
from ._kernel import xp_kernel


@xp_kernel("SelectV2")
def select(inputs, attrs, b):
    return b.xp.where(inputs["condition"], inputs["x"], inputs["y"])


@xp_kernel("GatherV2")
def gather(inputs, attrs, b):
    xp, params, idx = b.xp, inputs["params"], inputs["indices"]
    axis, nbatch = attrs["axis"], attrs["batch_dims"]
    n = params.shape[axis]
    if idx.size and bool(xp.any((idx < 0) | (idx >= n))):  # NumPy's kernel's message
        _check_range("GatherV2", b.from_native(idx), n)
    check_rank("gather", params.ndim - 1 + idx.ndim - nbatch)
    ps = params.shape
    if nbatch == 0:
        flat = xp.take(params, xp.reshape(idx, (-1,)) if idx.ndim != 1 else idx, axis=axis)
        return xp.reshape(flat, ps[:axis] + idx.shape + ps[axis + 1:])
    # batch dims: one take_along_axis over [batch, middle, n, rest] views
    bp, mp, rp = _prod(ps[:nbatch]), _prod(ps[nbatch:axis]), _prod(ps[axis + 1:])
    k = _prod(idx.shape[nbatch:])
    flat_idx = xp.broadcast_to(xp.reshape(idx, (bp, 1, k, 1)), (bp, mp, k, rp))
    out = xp.take_along_axis(xp.reshape(params, (bp, mp, n, rp)), flat_idx, axis=2)
    return xp.reshape(out, ps[:axis] + idx.shape[nbatch:] + ps[axis + 1:])


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def _slice_key(a, shape):
    """The standard's indexing key of a StridedSlice spec (ops/indexing.py): slices
    clipped to the dims (the standard leaves out-of-range bounds unspecified), None for a
    new axis, and a trailing ellipsis for the dims the spec leaves out."""
    shrink, new = a["shrink_axis_mask"], a["new_axis_mask"]
    key, dim = [], 0
    for i, (b, e, s) in enumerate(zip(a["begin"], a["end"], a["strides"])):
        if new >> i & 1:
            key.append(None)
            continue
        if shrink >> i & 1:
            key.append(b)
        else:
            start, stop, step = slice(b, e, s).indices(shape[dim])
            key.append(slice(start, None if step < 0 and stop < 0 else stop, step))
        dim += 1
    return tuple(key) + (...,)


@xp_kernel("StridedSlice")
def strided_slice(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.asarray(x[_slice_key(attrs, x.shape)], copy=True)


@xp_kernel("StridedSliceGrad")
def strided_slice_grad(inputs, attrs, b):
    xp, dy = b.xp, inputs["dy"]
    shape = tuple(attrs["shape"])
    out = xp.zeros(shape, dtype=dy.dtype)
    key = tuple(k for k in _slice_key(attrs, shape) if k is not None)  # new axes: size 1
    target = out[key].shape
    out[key] = xp.reshape(dy, target)
    return out


@xp_kernel("Where")
def where(inputs, attrs, b):
    xp, cond = b.xp, inputs["condition"]
    if cond.ndim == 0:  # the standard's nonzero takes no 0-d array: one row or none
        return xp.zeros((int(bool(cond)), 0), dtype=xp.int64)
    return xp.astype(xp.stack(xp.nonzero(cond), axis=1), xp.int64)
