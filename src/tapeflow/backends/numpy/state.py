"""NumPy kernels of variable updates made in place (see ops/state.py)."""
import numpy as np

from ..._core.dispatch import Alias
from ..._core.errors import InvalidArgumentError
from ._kernel import kernel


@kernel("InplaceAdd")
def _inplace_add(inputs, attrs, backend):
    np.add(inputs["ref"], inputs["value"], out=inputs["ref"], casting="unsafe")
    return Alias("ref", inputs["ref"].shape)


@kernel("InplaceSub")
def _inplace_sub(inputs, attrs, backend):
    np.subtract(inputs["ref"], inputs["value"], out=inputs["ref"], casting="unsafe")
    return Alias("ref", inputs["ref"].shape)


# custom_gradient and recompute_grad in a compiled graph: their implementation's results
# ("values") were traced as nodes of their own; the op passes them on
@kernel("CustomGradient")
def _custom_gradient_values(inputs, attrs, backend):
    return list(inputs["values"])


@kernel("RecomputeGrad")
def _recompute_values(inputs, attrs, backend):
    return list(inputs["values"])


# Sparse variable updates (ops/state.py): rows `indices` of `ref` changed in place.
def _check_rows(op, ref, indices):
    if indices.size and (indices.min() < 0 or indices.max() >= ref.shape[0]):
        bad = indices[(indices < 0) | (indices >= ref.shape[0])].ravel()[0]
        raise InvalidArgumentError(f"{op}: index {bad} is out of range for a variable of "
                                   f"shape {list(ref.shape)} (rows 0..{ref.shape[0] - 1})")


@kernel("InplaceScatterAdd")
def _inplace_scatter_add(inputs, attrs, backend):
    ref, indices = inputs["ref"], inputs["indices"]
    _check_rows("ResourceScatterAdd", ref, indices)
    np.add.at(ref, indices, inputs["updates"].astype(ref.dtype, copy=False))  # duplicates add up
    return Alias("ref", ref.shape)


@kernel("InplaceScatterUpdate")
def _inplace_scatter_update(inputs, attrs, backend):
    ref, indices = inputs["ref"], inputs["indices"]
    updates = inputs["updates"]
    if indices.size == 1 and ref.ndim and updates.size * ref.shape[0] == ref.size:
        i = int(indices.reshape(-1)[0])  # one row (a loop's row write): no fancy indexing
        if 0 <= i < ref.shape[0]:
            ref[i] = updates.reshape(ref.shape[1:])
            return Alias("ref", ref.shape)
    _check_rows("ResourceScatterUpdate", ref, indices)
    ref[indices] = updates  # with duplicates, one of them wins (as in TF)
    return Alias("ref", ref.shape)


@kernel("UniqueSegmentSum")
def _unique_segment_sum(inputs, attrs, backend):
    values, indices = inputs["values"], inputs["indices"]
    unique, inverse = np.unique(indices, return_inverse=True)
    summed = np.zeros((unique.size,) + values.shape[1:], values.dtype)
    np.add.at(summed, inverse.reshape(-1), values)
    return [summed, unique.astype(indices.dtype, copy=False)]
