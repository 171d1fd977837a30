"""What the tape needs from tensors: ones/zeros, sizes and gradient aggregation."""
from __future__ import annotations

from .._core import prims
from .._core.convert import convert_to_tensor
from .._core.indexed_slices import IndexedSlices
from .._core.shape import dims_of, has_dims
from .._core.tensor import Tensor
from ..ops._define import cast_to

# Sum pending gradients of one tensor early once they hold this many bytes (or this many
# gradients), so a tensor used by many ops does not pin all of them until the end.
EARLY_AGGREGATE_BYTES = 64 * 2**20
EARLY_AGGREGATE_COUNT = 8


def ones(shape, dtype) -> Tensor:
    return prims.ones(shape=tuple(shape), dtype=dtype)


def zeros(shape, dtype) -> Tensor:
    if has_dims(shape):  # run-time dims of a traced graph
        return prims.broadcast_to(prims.zeros(shape=(), dtype=dtype), shape=tuple(shape))
    return prims.zeros(shape=tuple(shape), dtype=dtype)


def _concat_rows(parts: list) -> Tensor:
    return prims.concat(parts, axis=0, sizes=tuple(dims_of(p)[0] for p in parts))


def num_bytes(g) -> int:
    if isinstance(g, IndexedSlices):
        return num_bytes(g.values)
    n = g.dtype.size
    for d in g._shape:
        n *= d if d is not None else 1  # a traced graph's unknown dim: count it as 1
    return n


def should_aggregate_early(pending: list) -> bool:
    return (len(pending) >= EARLY_AGGREGATE_COUNT
            or sum(num_bytes(g) for g in pending) >= EARLY_AGGREGATE_BYTES)


def aggregate(grads: list):
    """Sum gradients of one tensor: add_n for dense, concatenation for IndexedSlices."""
    if all(isinstance(g, IndexedSlices) for g in grads):
        return IndexedSlices(_concat_rows([g.values for g in grads]),
                             _concat_rows([cast_to(g.indices, grads[0].indices.dtype)
                                           for g in grads]),
                             grads[0].dense_shape)
    dense = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g
             for g in grads]
    if len(dense) == 2:
        return prims.add(dense[0], dense[1])
    return prims.add_n(dense, N=len(dense)) if len(dense) > 1 else dense[0]
