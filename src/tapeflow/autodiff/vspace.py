"""What the tape needs from tensors: ones/zeros, sizes and gradient aggregation."""
from __future__ import annotations

from .._core import tensor as _tensor_mod
from .._core.convert import convert_to_tensor
from .._core.tensor import Dim, IndexedSlices, Tensor

# Sum pending gradients of one tensor early once they hold this many bytes (or this many
# gradients), so a tensor used by many ops does not pin all of them until the end.
EARLY_AGGREGATE_BYTES = 64 * 2**20
EARLY_AGGREGATE_COUNT = 8


def _ops():
    return _tensor_mod._ops  # filled once the op modules are imported


def ones(shape, dtype) -> Tensor:
    return _ops().ones(shape, dtype)


def zeros(shape, dtype) -> Tensor:
    if any(type(d) is Dim for d in shape):  # run-time dims of a traced graph
        return _ops()._broadcast_to(_ops().zeros((), dtype), tuple(shape))
    return _ops().zeros(shape, dtype)


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
    ops = _ops()
    if all(isinstance(g, IndexedSlices) for g in grads):
        return IndexedSlices(ops.concat([g.values for g in grads], axis=0),
                             ops.concat([ops.cast(g.indices, grads[0].indices.dtype)
                                         for g in grads], axis=0),
                             grads[0].dense_shape)
    dense = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g
             for g in grads]
    if len(dense) == 2:
        return ops.add(dense[0], dense[1])
    add_n = getattr(ops, "add_n", None)
    if add_n is not None:
        return add_n(dense)
    total = dense[0]
    for g in dense[1:]:
        total = ops.add(total, g)
    return total
