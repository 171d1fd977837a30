"""SparseTensor and RaggedTensor elements in tf.data: their rows and their batches.

Inside a pipeline a composite element travels as its component arrays (in `nest` order:
a sparse tensor's indices, values and dense shape; a ragged tensor's flat values and row
splits, outer first), as any element travels as its leaves; its TypeSpec in the element
spec says how to rebuild it. A RaggedTensorSpec of ragged_rank 0 stands for a dense row of
a ragged tensor (what `from_tensor_slices` gives for a ragged_rank-1 tensor): its one
component is the row itself, and batching such rows makes a ragged tensor, as TF 2.21.
"""
from __future__ import annotations

import numpy as np

from .._core import nest
from .._core.errors import InvalidArgumentError
from .._core.tensor import TensorSpec
from ..ops.ragged import RaggedTensor, RaggedTensorSpec
from ..ops.sparse import SparseTensor, SparseTensorSpec

COMPOSITE_SPECS = (SparseTensorSpec, RaggedTensorSpec)


def has_composites(structure) -> bool:
    """Whether a value or spec structure holds a SparseTensor/RaggedTensor (or spec)."""
    if isinstance(structure, (SparseTensor, RaggedTensor) + COMPOSITE_SPECS):
        return True
    if isinstance(structure, dict):
        return any(has_composites(v) for v in structure.values())
    if isinstance(structure, (list, tuple)):
        return any(has_composites(v) for v in structure)
    return False


def spec_leaves(spec) -> list:
    """The spec's leaves with composite specs kept whole (not split into components)."""
    if isinstance(spec, COMPOSITE_SPECS) or isinstance(spec, TensorSpec):
        return [spec]
    if isinstance(spec, dict):
        return [leaf for k in _keys(spec) for leaf in spec_leaves(spec[k])]
    if isinstance(spec, (list, tuple)):
        return [leaf for v in spec for leaf in spec_leaves(v)]
    return [spec]


def _keys(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def map_spec_leaves(fn, spec):
    """`spec` with each leaf (composite specs whole) replaced by fn(leaf)."""
    if isinstance(spec, COMPOSITE_SPECS) or isinstance(spec, TensorSpec):
        return fn(spec)
    if isinstance(spec, dict):
        out = {k: map_spec_leaves(fn, spec[k]) for k in spec}
        return out if type(spec) is dict else type(spec)(out.items())
    if isinstance(spec, tuple) and hasattr(spec, "_fields"):
        return type(spec)(*[map_spec_leaves(fn, v) for v in spec])
    if isinstance(spec, (list, tuple)):
        return type(spec)(map_spec_leaves(fn, v) for v in spec)
    return fn(spec)


def n_components(leaf) -> int:
    return len(nest.flatten(leaf)) if isinstance(leaf, COMPOSITE_SPECS) else 1


# ---------------------------------------------------------------------- slicing


def slice_spec(value):
    """The element spec of the rows of a composite value."""
    if isinstance(value, SparseTensor):
        return SparseTensorSpec(list(value.shape)[1:], value.dtype)
    return RaggedTensorSpec(list(value.shape)[1:], value.dtype, value.ragged_rank - 1,
                            value.row_splits_dtype)


def rows_of(value) -> list:
    """The component arrays of each row of a composite value (a list per row)."""
    if isinstance(value, SparseTensor):
        indices, values = np.asarray(value.indices), np.asarray(value.values)
        dense_shape = np.asarray(value.dense_shape)
        out = []
        for i in range(int(dense_shape[0])):
            mask = indices[:, 0] == i
            out.append([indices[mask][:, 1:], values[mask], dense_shape[1:]])
        return out
    flat = np.asarray(value.flat_values)
    splits = [np.asarray(s) for s in value.nested_row_splits]
    out = []
    for i in range(len(splits[0]) - 1):
        start, stop = int(splits[0][i]), int(splits[0][i + 1])
        inner = []
        for s in splits[1:]:
            inner.append(s[start:stop + 1] - s[start])
            start, stop = int(s[start]), int(s[stop])
        out.append([flat[start:stop]] + inner)
    return out


# ---------------------------------------------------------------------- batching


def batch_spec(leaf, size, ragged: bool = False):
    """The spec of a batch of `leaf` elements (`ragged`: dense leaves of rank >= 1 batch
    into a RaggedTensor, as `ragged_batch`)."""
    if isinstance(leaf, COMPOSITE_SPECS):
        return leaf._batch(size)
    if ragged and len(leaf.shape):
        return RaggedTensorSpec([size] + list(leaf.shape), leaf.dtype, 1)
    return TensorSpec([size] + list(leaf.shape), leaf.dtype)


def batch_components(op: str, leaf, columns: list) -> list:
    """The batched component arrays of one composite leaf: `columns[k]` holds the k-th
    component of every element."""
    if isinstance(leaf, SparseTensorSpec):
        indices, values, shapes = columns
        rank = len(shapes[0])
        batch_indices = [np.concatenate([np.full([len(ix), 1], i, np.int64),
                                         np.asarray(ix, np.int64).reshape(-1, rank)], 1)
                         for i, ix in enumerate(indices)]
        dense = np.max(np.stack(shapes), 0) if shapes else np.zeros([rank], np.int64)
        return [np.concatenate(batch_indices, 0), np.concatenate(values, 0),
                np.concatenate([[len(indices)], dense]).astype(np.int64)]
    splits_dtype = leaf.row_splits_dtype.as_numpy_dtype
    flat = columns[0]
    inner = flat[0].shape[1:] if leaf.ragged_rank == 0 else None
    if leaf.ragged_rank == 0 and any(f.shape[1:] != inner for f in flat):
        raise ValueError(f"{op}: cannot batch rows of shapes {[list(f.shape) for f in flat]}"
                         " into a RaggedTensor: their inner dimensions differ")
    outer_counts = [len(f) for f in flat] if leaf.ragged_rank == 0 else \
        [len(s) - 1 for s in columns[1]]
    outer = np.concatenate([[0], np.cumsum(outer_counts)]).astype(splits_dtype)
    nested = []
    for k in range(1, leaf.ragged_rank + 1):
        parts, offset = [np.zeros([1], splits_dtype)], 0
        for s in columns[k]:
            s = np.asarray(s, splits_dtype)
            parts.append(s[1:] + offset)
            offset += int(s[-1])
        nested.append(np.concatenate(parts))
    return [np.concatenate(flat, 0)] + [outer] + nested


def stack_with_composites(op: str, spec, rows: list, ragged: bool = False) -> list:
    """The flat arrays of a batch of `rows` (flat component lists) of elements of `spec`."""
    out, k = [], 0
    for leaf in spec_leaves(spec):
        n = n_components(leaf)
        columns = [[row[k + j] for row in rows] for j in range(n)]
        k += n
        if isinstance(leaf, COMPOSITE_SPECS):
            out.extend(batch_components(op, leaf, columns))
        elif ragged and len(leaf.shape):
            out.extend(batch_components(
                op, RaggedTensorSpec(leaf.shape, leaf.dtype, 0), columns))
        else:
            first = columns[0][0].shape
            if any(a.shape != first for a in columns[0]):
                raise InvalidArgumentError(
                    f"{op}: cannot batch tensors with different shapes: the first element "
                    f"of the batch has shape {list(first)}, another "
                    f"{next(list(a.shape) for a in columns[0] if a.shape != first)}; use "
                    "ragged_batch or padded_batch")
            out.append(np.stack(columns[0]))
    return out
