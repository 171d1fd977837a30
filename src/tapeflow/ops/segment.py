"""Segment reductions (`tf.math.segment_*`, `unsorted_segment_*`) beyond the sums of
indexing.py: means, extrema and products over the slices of `data` sharing a segment id.

Its own family module because it builds on indexing's sums and scatters, and indexing sits
above reduction.py in the import order. Every op here is a composite of public ops (sums,
scatter max/min, gathers) except products, which have one kernel (SegmentProd) with
TensorFlow's gradient (zeros handled) written as a composite.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .._core import dtypes as _dt, prims
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import is_symbolic
from .._core.tensor import Tensor
from ._args import int_arg, to_tensor
from ._define import composite, defop
from ._tangents import batch_dims
from .array import expand_dims
from .creation import fill, ones_like, zeros_like
from .indexing import (gather, segment_sum, tensor_scatter_nd_max, tensor_scatter_nd_min,
                       unsorted_segment_sum, where)
from .math import cast, equal, greater, less, maximum, rsqrt, truediv, truncatediv

__all__ = ["segment_mean", "segment_max", "segment_min", "segment_prod",
           "unsorted_segment_mean", "unsorted_segment_max", "unsorted_segment_min",
           "unsorted_segment_prod", "unsorted_segment_sqrt_n"]


def _limits(dtype) -> tuple:
    """The dtype's lowest and highest finite values (TensorFlow's empty-segment extrema)."""
    info = (ml_dtypes.finfo if dtype.is_floating else np.iinfo)(dtype._np)
    return info.min, info.max


def _operands(op: str, data, segment_ids, sorted_ids: bool) -> tuple[Tensor, Tensor]:
    d = to_tensor(data, None, op, "data")
    ids = to_tensor(segment_ids, _dt.int32, op, "segment_ids")
    if not ids.dtype.is_integer:
        raise InvalidArgumentError(f"{op}: segment_ids must be int32 or int64, got "
                                   f"{describe(ids)}")
    if d.dtype.is_bool or d.dtype.is_complex and op.endswith(("max", "min")) \
            or getattr(d.dtype, "is_string", False):
        raise InvalidArgumentError(f"{op}: data must be real numbers, got {describe(d)}")
    lead = d._shape[:ids.ndim]
    if sorted_ids and ids.ndim != 1 or ids.ndim > d.ndim or any(
            a is not None and b is not None and a != b for a, b in zip(ids._shape, lead)):
        what = "1-D and as long as data's first dimension" if sorted_ids else \
            "a prefix of data's shape"
        raise InvalidArgumentError(f"{op}: segment_ids must be {what}, got "
                                   f"segment_ids: {describe(ids)} and data: {describe(d)}")
    return d, ids


def _num(op: str, ids: Tensor, num_segments) -> int:
    num = int_arg(op, num_segments, "num_segments", minimum=0)
    if not is_symbolic(ids) and ids.size:
        top = int(np.max(ids.numpy()))
        if top >= num:  # as TensorFlow's CPU kernels (a negative id drops its slice)
            raise InvalidArgumentError(f"{op}: segment_ids holds {top}, out of range "
                                       f"[0, {num}) for num_segments = {num}")
    return num


def _seg_sum(x: Tensor, ids: Tensor, num) -> Tensor:
    """Segment sums: sorted ids into max(ids) + 1 rows (num None) or `num` rows."""
    return segment_sum(x, ids) if num is None else unsorted_segment_sum(x, ids, num)


def _per_row(v: Tensor, data: Tensor, ids: Tensor) -> Tensor:
    """A per-segment (or per-id) value given trailing 1s to broadcast against data's rest."""
    for _ in range(data.ndim - ids.ndim):
        v = expand_dims(v, -1)
    return v


def _counts(data: Tensor, ids: Tensor, num) -> Tensor:
    return _per_row(_seg_sum(ones_like(ids, dtype=data.dtype), ids, num), data, ids)


# --------------------------------------------------------------------------- means


@composite("SegmentMean")
def segment_mean(data, segment_ids, name=None) -> Tensor:
    """Means of the rows of `data` sharing an id (sorted, non-negative `segment_ids`);
    max(ids) + 1 rows, 0 for an empty segment; integers divide rounding toward zero.

    Example: `tf.math.segment_mean([1., 2., 6.], [0, 0, 2])` -> [1.5, 0., 6.].
    """
    d, ids = _operands("SegmentMean", data, segment_ids, True)
    total, count = segment_sum(d, ids), maximum(_counts(d, ids, None), 1)
    return truncatediv(total, count) if d.dtype.is_integer else total / count


@composite("UnsortedSegmentMean")
def unsorted_segment_mean(data, segment_ids, num_segments, name=None) -> Tensor:
    """Means of the slices of `data` sharing an id, `num_segments` of them (0 when empty;
    integers give float64 means, as TensorFlow's true division); negative ids are dropped.

    Example: `tf.math.unsorted_segment_mean([1., 2., 6.], [1, 1, 0], 3)` -> [6., 1.5, 0.].
    """
    op = "UnsortedSegmentMean"
    d, ids = _operands(op, data, segment_ids, False)
    num = _num(op, ids, num_segments)
    return truediv(unsorted_segment_sum(d, ids, num), maximum(_counts(d, ids, num), 1))


@composite("UnsortedSegmentSqrtN")
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None) -> Tensor:
    """Sums of the slices sharing an id divided by the square root of their count (0 for
    an empty segment). Example: `tf.math.unsorted_segment_sqrt_n([1., 3.], [0, 0], 1)`
    -> [2.828427].
    """
    op = "UnsortedSegmentSqrtN"
    d, ids = _operands(op, data, segment_ids, False)
    if not d.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: data must be floating, got {describe(d)}")
    num = _num(op, ids, num_segments)
    return unsorted_segment_sum(d, ids, num) * rsqrt(maximum(_counts(d, ids, num), 1))


# --------------------------------------------------------------------------- extrema
# scatter max/min into rows filled with the dtype's lowest/highest value; their gradient
# shares each result's cotangent equally among the elements tying for it, as TensorFlow's.


def _extremum(op: str, data, segment_ids, num_segments, largest: bool) -> Tensor:
    d, ids = _operands(op, data, segment_ids, num_segments is None)
    lowest, highest = _limits(d.dtype)
    start = lowest if largest else highest
    scatter = tensor_scatter_nd_max if largest else tensor_scatter_nd_min
    if num_segments is None:  # sorted: max(ids) + 1 rows, an empty segment gives 0
        base = zeros_like(segment_sum(d, ids)) + start
        out = scatter(base, expand_dims(ids, -1), d)
        return where(greater(_counts(d, ids, None), 0), out, zeros_like(out))
    num = _num(op, ids, num_segments)
    # a negative id drops its slice: such slices land in one extra row, cut off after
    ids = where(less(ids, 0), zeros_like(ids) + num, ids)
    rest = d._shape[ids.ndim:]
    if None in rest:
        base = zeros_like(unsorted_segment_sum(d, ids, num + 1)) + start
    else:
        base = fill((num + 1,) + tuple(rest), start)
        base = cast(base, d.dtype) if base.dtype is not d.dtype else base
    return scatter(base, expand_dims(ids, -1), d)[:num]


def segment_max(data, segment_ids, name=None) -> Tensor:
    """Maxima of the rows of `data` sharing an id (sorted, non-negative `segment_ids`);
    max(ids) + 1 rows, 0 for an empty segment.

    Example: `tf.math.segment_max([1., 5., 3.], [0, 0, 2])` -> [5., 0., 3.].
    """
    return composite("SegmentMax")(_extremum)("SegmentMax", data, segment_ids, None, True)


def segment_min(data, segment_ids, name=None) -> Tensor:
    """Minima of the rows of `data` sharing an id (sorted, non-negative `segment_ids`);
    max(ids) + 1 rows, 0 for an empty segment.

    Example: `tf.math.segment_min([1., 5., 3.], [0, 0, 2])` -> [1., 0., 3.].
    """
    return composite("SegmentMin")(_extremum)("SegmentMin", data, segment_ids, None, False)


def unsorted_segment_max(data, segment_ids, num_segments, name=None) -> Tensor:
    """Maxima of the slices of `data` sharing an id; an empty segment gives the dtype's
    lowest value, a negative id drops its slice.

    Example: `tf.math.unsorted_segment_max([1., 5., 3.], [1, 1, 0], 2)` -> [3., 5.].
    """
    return composite("UnsortedSegmentMax")(_extremum)(
        "UnsortedSegmentMax", data, segment_ids, num_segments, True)


def unsorted_segment_min(data, segment_ids, num_segments, name=None) -> Tensor:
    """Minima of the slices of `data` sharing an id; an empty segment gives the dtype's
    highest value, a negative id drops its slice.

    Example: `tf.math.unsorted_segment_min([1., 5., 3.], [1, 1, 0], 2)` -> [3., 1.].
    """
    return composite("UnsortedSegmentMin")(_extremum)(
        "UnsortedSegmentMin", data, segment_ids, num_segments, False)


# --------------------------------------------------------------------------- products


def _prod(d: Tensor, ids: Tensor, num) -> Tensor:
    return run_kernel("SegmentProd", {"data": d, "segment_ids": ids},
                      {"num_segments": -1 if num is None else num})


def segment_prod(data, segment_ids, name=None) -> Tensor:
    """Products of the rows of `data` sharing an id (sorted, non-negative `segment_ids`);
    max(ids) + 1 rows, 1 for an empty segment.

    Example: `tf.math.segment_prod([2., 3., 4.], [0, 0, 2])` -> [6., 1., 4.].
    """
    d, ids = _operands("SegmentProd", data, segment_ids, True)
    return _prod(d, ids, None)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None) -> Tensor:
    """Products of the slices of `data` sharing an id; 1 for an empty segment; a negative
    id drops its slice.

    Example: `tf.math.unsorted_segment_prod([2., 3., 4.], [1, 1, 0], 2)` -> [4., 6.].
    """
    op = "UnsortedSegmentProd"
    d, ids = _operands(op, data, segment_ids, False)
    return _prod(d, ids, _num(op, ids, num_segments))


def _segment_prod_shape(shapes, dtypes, attrs):
    ds, ids, num = shapes["data"], shapes["segment_ids"], attrs["num_segments"]
    return [((None if num < 0 else num,) + tuple(ds[len(ids):]), dtypes["data"])]


def _prod_partial(ans, data, segment_ids, num_segments):
    """d prod / d data per element, as TensorFlow: the product of the others (the
    segment's product of non-zeros for the one zero of a segment, 0 past one zero)."""
    num = None if num_segments < 0 else num_segments
    is_zero = equal(data, 0)
    zeros = _seg_sum(cast(is_zero, data.dtype), segment_ids, num)
    nonzero = where(is_zero, ones_like(data), data)
    safe_ids = maximum(segment_ids, 0)
    prod_of_nonzero = gather(_prod(nonzero, segment_ids, num_segments), safe_ids)
    partial = where(is_zero, prod_of_nonzero, gather(ans, safe_ids) / nonzero)
    keep = (greater(segment_ids, -1), gather(less(zeros, 2), safe_ids))
    mask = _per_row(keep[0], data, segment_ids)
    return where(mask, where(keep[1], partial, zeros_like(partial)), zeros_like(partial))


def _segment_prod_vjp(g, ans, data, segment_ids, *, num_segments):
    return gather(g, maximum(segment_ids, 0)) * _prod_partial(ans, data, segment_ids,
                                                               num_segments)


def _segment_prod_jvp(t, ans, data, segment_ids, *, num_segments):
    nb = batch_dims(t, data)  # leading batch dims of a batched tangent
    x = t * _prod_partial(ans, data, segment_ids, num_segments)
    if num_segments >= 0:  # (the kernel drops negative ids' slices)
        return prims.unsorted_segment_sum(x, segment_ids, num_segments=num_segments,
                                          axis=nb, batch_dims=0)
    if nb:
        x = prims.transpose(x, perm=_front(nb, x.ndim))
    out = prims.segment_sum(x, segment_ids, minimum=0, maximum=-1, sorted_ids=True)
    return prims.transpose(out, perm=_back(nb, out.ndim)) if nb else out


def _front(nb: int, ndim: int) -> tuple:
    return (nb,) + tuple(range(nb)) + tuple(range(nb + 1, ndim))


def _back(nb: int, ndim: int) -> tuple:
    return tuple(range(1, nb + 1)) + (0,) + tuple(range(nb + 1, ndim))


defop("SegmentProd", ["data", "segment_ids"], shape=_segment_prod_shape,
      vjp={"data": _segment_prod_vjp}, jvp={"data": _segment_prod_jvp})
