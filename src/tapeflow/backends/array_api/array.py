"""Array-API kernels of array manipulation. Kernels that only read shapes and return an
Alias (reshape, identity, expand_dims, squeeze) are NumPy's own: they touch no data."""
from ..numpy import array as _np_array
from ..numpy._kernel import check_rank
from ..._core.dispatch import Alias
from ._kernel import XP_KERNELS, numpy_fallback, xp_kernel

for _op, _f in [("Reshape", _np_array.reshape), ("Identity", _np_array.identity),
                ("ExpandDims", _np_array.expand_dims), ("Squeeze", _np_array.squeeze),
                ("StopGradient", _np_array.stop_gradient)]:
    XP_KERNELS[_op] = _f


@xp_kernel("BroadcastTo")
def broadcast_to(inputs, attrs, b):
    return b.xp.broadcast_to(inputs["x"], tuple(attrs["shape"]))


@xp_kernel("Transpose")
def transpose(inputs, attrs, b):
    x, perm = inputs["x"], tuple(attrs["perm"])
    s = x.shape
    moved = [p for p in perm if s[p] != 1]
    if moved == sorted(moved):  # only size-1 dims move: a reshape, so share the buffer
        return Alias("x", tuple(s[p] for p in perm))
    return b.xp.permute_dims(x, perm)


@xp_kernel("Concat")
def concat(inputs, attrs, b):
    return b.xp.concat(list(inputs["values"]), axis=attrs["axis"])


@xp_kernel("Split")
def split(inputs, attrs, b):
    x, ax, sizes = inputs["x"], attrs["axis"], attrs["sizes"]
    if sum(sizes) != x.shape[ax]:
        sizes = _np_array._fill_sizes(sizes, x.shape[ax])
    lead = (slice(None),) * ax
    out, start = [], 0
    for z in sizes:
        out.append(x[lead + (slice(start, start + z), ...)])
        start += z
    return out


@xp_kernel("Stack")
def stack(inputs, attrs, b):
    return b.xp.stack(list(inputs["values"]), axis=attrs["axis"])


@xp_kernel("Unstack")
def unstack(inputs, attrs, b):
    x, ax = inputs["x"], attrs["axis"]
    if x.shape[ax] != attrs["num"]:
        raise ValueError(f"dimension {ax} of {x.shape} is not {attrs['num']}")
    lead = (slice(None),) * ax
    return [x[lead + (k, ...)] for k in range(attrs["num"])]


@xp_kernel("Tile")
def tile(inputs, attrs, b):
    return b.xp.tile(inputs["x"], tuple(attrs["multiples"]))


@xp_kernel("Reverse")
def reverse(inputs, attrs, b):
    x = inputs["x"]
    if not attrs["axis"]:
        return Alias("x", x.shape)
    return b.xp.flip(x, axis=tuple(attrs["axis"]))


@xp_kernel("Shape")
def shape(inputs, attrs, b):
    return b.xp.asarray(inputs["x"].shape, dtype=b.dtype(attrs["out_type"]))


@xp_kernel("Size")
def size(inputs, attrs, b):
    x = inputs["x"]
    n = 1
    for d in x.shape:
        n *= d
    return b.xp.asarray(n, dtype=b.dtype(attrs["out_type"]))


@xp_kernel("SumTo")
def sum_to(inputs, attrs, b):
    """Sum x down to the run-time `shape`, undoing broadcasting (ops/_define.sum_to_shape)."""
    xp, x, shape = b.xp, inputs["x"], tuple(attrs["shape"])
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + k] != 1)
    if axes:
        x = xp.sum(x, axis=axes, dtype=x.dtype)
    return xp.reshape(x, shape)


@xp_kernel("Pad")
def pad(inputs, attrs, b):
    x, paddings = inputs["x"], attrs["paddings"]
    if attrs["mode"] != "CONSTANT":  # mirrored modes: no standard function
        return numpy_fallback("Pad")(inputs, attrs, b)
    out = b.xp.full(tuple(d + p + q for d, (p, q) in zip(x.shape, paddings)),
                    attrs["constant_values"], dtype=x.dtype)
    out[tuple(slice(p, p + d) for d, (p, q) in zip(x.shape, paddings)) + (...,)] = x
    return out


@xp_kernel("PadGrad")
def pad_grad(inputs, attrs, b):
    g, paddings = inputs["x"], attrs["paddings"]
    if attrs["mode"] != "CONSTANT":
        return numpy_fallback("PadGrad")(inputs, attrs, b)
    if any(d < p + q for d, (p, q) in zip(g.shape, paddings)) or len(paddings) != g.ndim:
        raise ValueError(f"paddings {paddings} exceed shape {g.shape}")
    key = tuple(slice(p, g.shape[k] - q) for k, (p, q) in enumerate(paddings)) + (...,)
    return b.xp.asarray(g[key], copy=True)


@xp_kernel("ArgSort")
def argsort(inputs, attrs, b):
    # stable also when descending: equal values keep their order, as TensorFlow's
    out = b.xp.argsort(inputs["x"], axis=attrs["axis"], descending=attrs["descending"],
                       stable=True)
    return b.xp.astype(out, b.xp.int32)


@xp_kernel("SequenceMask")
def sequence_mask(inputs, attrs, b):
    xp, lengths, maxlen = b.xp, inputs["lengths"], attrs["maxlen"]
    check_rank("sequence_mask", lengths.ndim + 1)
    if maxlen == -1:  # a traced default: the longest length
        maxlen = max(int(xp.max(lengths)), 0) if lengths.size else 0
    mask = xp.arange(maxlen, dtype=lengths.dtype) < lengths[..., None]
    return xp.astype(mask, b.dtype(attrs["dtype"]))
