"""NumPy kernels of array manipulation."""
import math

import numpy as np

from ..._core.dispatch import Alias
from ._kernel import (MAX_RANK, along_last, check_rank, ensure_array, failing_to, kernel,
                      sum_leading, take_along_last)


def _reshape_call(attrs):
    shape = tuple(attrs["shape"])
    if len(shape) > MAX_RANK:
        return None
    slow = failing_to(reshape, ("x",), attrs)

    def run(x):
        try:
            return (x.reshape(shape),)
        except ValueError:  # (the kernel's message)
            return slow(x)
    return run


@kernel("Reshape", direct=_reshape_call)
def reshape(inputs, attrs, backend):
    x = inputs["x"]
    shape = attrs["shape"]
    check_rank("reshape", len(shape))  # before the engine makes the aliasing tensor
    size = x.size
    if -1 in shape:  # math.prod: np.prod costs microseconds on small tuples
        known = math.prod(d for d in shape if d != -1)
        if shape.count(-1) > 1 or known <= 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    elif math.prod(shape) != size or min(shape, default=0) < 0:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return Alias("x", shape)  # shares the input's buffer


@kernel("Identity", direct=lambda attrs: lambda x: (x.view(),))
def identity(inputs, attrs, backend):
    return Alias("x", inputs["x"].shape)


@kernel("BroadcastTo")
def broadcast_to(inputs, attrs, backend):
    check_rank("broadcast_to", len(attrs["shape"]))
    return np.broadcast_to(inputs["x"], attrs["shape"])


def _transpose_call(attrs):
    perm = tuple(attrs["perm"])
    slow = failing_to(transpose, ("x",), attrs)

    def run(x):
        try:
            return (x.transpose(perm),)  # (a view, as the kernel's)
        except ValueError:
            return slow(x)
    return run


@kernel("Transpose", direct=_transpose_call)
def transpose(inputs, attrs, backend):
    x, perm = inputs["x"], attrs["perm"]
    s = x.shape
    moved = [p for p in perm if s[p] != 1]
    if moved == sorted(moved):  # only size-1 dims move: a reshape, so share the buffer
        return Alias("x", tuple(s[p] for p in perm))
    return x.transpose(perm)


@kernel("ExpandDims")
def expand_dims(inputs, attrs, backend):
    out = list(inputs["x"].shape)
    for ax in attrs["axis"]:
        if ax > len(out):
            raise ValueError(f"axis {ax} out of range")
        out.insert(ax, 1)
    check_rank("expand_dims", len(out))  # before the engine makes the aliasing tensor
    return Alias("x", out)


@kernel("Squeeze")
def squeeze(inputs, attrs, backend):
    s, axes = inputs["x"].shape, attrs["axis"]
    if any(s[ax] != 1 for ax in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {s}")
    return Alias("x", [d for k, d in enumerate(s) if k not in axes])


def _concat_call(attrs):
    axis = attrs["axis"]
    return lambda *values: (np.concatenate(values, axis=axis),)


@kernel("Concat", direct=_concat_call)
def concat(inputs, attrs, backend):
    return np.concatenate(inputs["values"], axis=attrs["axis"])


def _fill_sizes(sizes, d):
    """Split sizes of a traced graph whose dimension was unknown: one -1 is the rest of
    `d`, all -1 are equal parts of it."""
    n = sizes.count(-1)
    if n == len(sizes) and d % n == 0:
        return (d // n,) * n
    if n == 1:
        rest = d - sum(z for z in sizes if z != -1)
        if rest >= 0:
            return tuple(rest if z == -1 else z for z in sizes)
    raise ValueError(f"sizes {sizes} do not add up to {d}")


@kernel("Split")
def split(inputs, attrs, backend):
    x, ax, sizes = inputs["x"], attrs["axis"], attrs["sizes"]
    if sum(sizes) != x.shape[ax]:
        sizes = _fill_sizes(sizes, x.shape[ax])
    lead = (slice(None),) * ax  # plain slicing: np.split costs several microseconds more
    out, start = [], 0
    for z in sizes:
        out.append(x[lead + (slice(start, start + z),)])
        start += z
    return out


@kernel("Stack")
def stack(inputs, attrs, backend):
    xs = inputs["values"]
    check_rank("stack", (xs[0].ndim if xs else 0) + 1)
    first = xs[0] if xs else None
    if attrs["axis"] == 0 and first is not None and all(
            type(v) is np.ndarray and v.shape == first.shape and v.dtype == first.dtype
            for v in xs):
        # rows copied into one array: np.stack's generic path costs ~10 us a call
        out = np.empty((len(xs),) + first.shape, first.dtype)
        for k, v in enumerate(xs):
            out[k, ...] = v  # (a 0-d object array must land as its element)
        return out
    return np.stack(xs, axis=attrs["axis"])


@kernel("Unstack")
def unstack(inputs, attrs, backend):
    x, ax = inputs["x"], attrs["axis"]
    if x.shape[ax] != attrs["num"]:
        raise ValueError(f"dimension {ax} of {x.shape} is not {attrs['num']}")
    if ax:
        x = np.moveaxis(x, ax, 0)
    return [x[k, ...] for k in range(attrs["num"])]


@kernel("Tile")
def tile(inputs, attrs, backend):
    return np.tile(inputs["x"], attrs["multiples"])


def _along(axis, s):
    return (slice(None),) * axis + (s,)


@kernel("Pad")
def pad(inputs, attrs, backend):
    x, paddings = inputs["x"], attrs["paddings"]
    mode = attrs["mode"]
    if mode == "CONSTANT":
        out = np.full([d + p + q for d, (p, q) in zip(x.shape, paddings)],
                      attrs["constant_values"], dtype=x.dtype)
        out[tuple(slice(p, p + d) for d, (p, q) in zip(x.shape, paddings))] = x
        return out
    return np.pad(x, paddings, mode="reflect" if mode == "REFLECT" else "symmetric")


@kernel("PadGrad")
def pad_grad(inputs, attrs, backend):
    """Crop the padding away; mirrored modes first add each border onto its source."""
    g, paddings = inputs["x"], attrs["paddings"]
    if any(d < p + q for d, (p, q) in zip(g.shape, paddings)) or len(paddings) != g.ndim:
        raise ValueError(f"paddings {paddings} exceed shape {g.shape}")
    if attrs["mode"] == "CONSTANT":  # (indexing a 0-d g with () gives a scalar)
        return ensure_array(
            g[tuple(slice(p, g.shape[k] - q) for k, (p, q) in enumerate(paddings))])
    shift = 1 if attrs["mode"] == "REFLECT" else 0  # REFLECT does not repeat the edge
    for k, (p, q) in enumerate(paddings):
        if not (p or q):
            continue
        n = g.shape[k] - p - q
        core = g[_along(k, slice(p, p + n))].copy()
        if p:
            core[_along(k, slice(shift, shift + p))] += np.flip(g[_along(k, slice(0, p))], k)
        if q:
            core[_along(k, slice(n - shift - q, n - shift))] += np.flip(
                g[_along(k, slice(p + n, p + n + q))], k)
        g = core
    return g


@kernel("Reverse")
def reverse(inputs, attrs, backend):
    x = inputs["x"]
    if not attrs["axis"]:
        return Alias("x", x.shape)
    return np.flip(x, attrs["axis"])


@kernel("StopGradient")
def stop_gradient(inputs, attrs, backend):
    return Alias("x", inputs["x"].shape)


@kernel("Shape")
def shape(inputs, attrs, backend):
    return np.array(inputs["x"].shape, dtype=attrs["out_type"]._np)


@kernel("Size")
def size(inputs, attrs, backend):
    return np.array(inputs["x"].size, dtype=attrs["out_type"]._np)


@kernel("ArgSort")
def argsort(inputs, attrs, backend):
    x, ax = inputs["x"], attrs["axis"]
    x = np.moveaxis(x, ax, -1)
    if not attrs["descending"]:
        idx = along_last(np.argsort, x, kind="stable")
    else:  # stable descending: sort the reversed array ascending, then map back
        idx = (x.shape[-1] - 1) - along_last(np.argsort, x[..., ::-1], kind="stable")[..., ::-1]
    return np.moveaxis(idx, -1, ax).astype(np.int32)


@kernel("PermuteAlongAxis")
def permute_along_axis(inputs, attrs, backend):
    x, idx, ax = inputs["x"], inputs["indices"], attrs["axis"]
    if x.ndim < MAX_RANK:
        return np.take_along_axis(x, idx, axis=ax)
    # (NumPy's take_along_axis takes at most 63 dims)
    out = take_along_last(np.moveaxis(x, ax, -1), np.moveaxis(idx, ax, -1))
    return np.ascontiguousarray(np.moveaxis(out, -1, ax))


@kernel("SequenceMask")
def sequence_mask(inputs, attrs, backend):
    lengths, maxlen = inputs["lengths"], attrs["maxlen"]
    check_rank("sequence_mask", lengths.ndim + 1)
    if maxlen == -1:  # a traced default: the longest length
        maxlen = max(int(lengths.max()), 0) if lengths.size else 0
    mask = np.arange(maxlen) < lengths[..., None]
    return mask.astype(attrs["dtype"]._np, copy=False)


@kernel("SumTo")
def sum_to(inputs, attrs, backend):
    """Sum x down to the run-time `shape`, undoing broadcasting (see ops/_op.sum_to_shape)."""
    x, shape = inputs["x"], tuple(attrs["shape"])
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + k] != 1)
    if not axes:
        return ensure_array(x.reshape(shape))
    out = sum_leading(x, axes) if len(axes) == lead else None
    out = x.sum(axis=axes) if out is None else out
    return ensure_array(out.reshape(shape))


@kernel("Unique")
def unique(inputs, attrs, backend):
    x = inputs["x"]
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # np.unique sorts; TF keeps first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return [x[np.sort(first)], rank[inverse.reshape(-1)].astype(attrs["out_idx"]._np)]


@kernel("SearchSorted")
def searchsorted(inputs, attrs, backend):
    seq, v = inputs["sorted_sequence"], inputs["values"]
    lead = seq.shape[:-1]
    s2, v2 = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
    out = np.empty(v2.shape, attrs["out_type"]._np)
    for r in range(s2.shape[0]):
        out[r] = np.searchsorted(s2[r], v2[r], side=attrs["side"])
    return out.reshape(lead + v.shape[-1:])
