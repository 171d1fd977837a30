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
