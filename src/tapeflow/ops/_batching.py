"""Batching rules shared by op families (`defop(..., batch=...)`): how an op runs when some
operands carry one extra leading batch axis, the form `vectorized_map` needs.

A rule is `rule(op, inputs, attrs, batched, size) -> outputs` (registry.BATCHING says
what each argument holds); every output it returns carries the batch axis. Example:

    defop("Sin", ["x"], shape=same_shape, batch=batch_elementwise, ...)
"""
from __future__ import annotations

from .._core.dispatch import run_kernel
from .._core.errors import NoBatchingRule
from .._core.tensor import Tensor


def _element_rank(value: Tensor, batched: bool) -> int:
    return value.ndim - 1 if batched else value.ndim


def _align(value: Tensor, batched: bool, rank: int) -> Tensor:
    """A batched operand with unit axes after its batch axis up to 1 + `rank` axes, so
    that its element axes still right-align under broadcasting."""
    missing = rank - _element_rank(value, batched)
    if not batched or missing <= 0:
        return value
    return run_kernel("ExpandDims", {"x": value}, {"axis": tuple(range(1, 1 + missing))})


def broadcast_batch(value: Tensor, size) -> Tensor:
    """An unbatched tensor repeated `size` times along a new leading batch axis."""
    if size is None:
        raise NoBatchingRule("Tile", "needs the batch size, unknown while tracing")
    expanded = run_kernel("ExpandDims", {"x": value}, {"axis": (0,)})
    return run_kernel("Tile", {"x": expanded}, {"multiples": (size,) + (1,) * value.ndim})


def _all_batched(inputs: dict, batched: dict, size) -> dict:
    """The inputs with every tensor batched (unbatched ones and list members tiled), for
    ops whose operands must agree in shape (concat, stack)."""
    out = {}
    for key, value in inputs.items():
        if isinstance(value, list):
            out[key] = [member if flag else broadcast_batch(member, size)
                        for member, flag in zip(value, batched[key])]
        elif isinstance(value, Tensor) and not batched[key]:
            out[key] = broadcast_batch(value, size)
        else:
            out[key] = value
    return out


def batch_elementwise(op, inputs, attrs, batched, size):
    """Ops that treat every leading axis alike (unary math, casts, matrix ops acting on the
    last axes): the batch axis is one more leading axis, so the op runs as it is."""
    return run_kernel(op, inputs, attrs)


def batch_broadcasting(op, inputs, attrs, batched, size):
    """Ops that broadcast their operands (binary math, comparisons, select, matmul's batch
    dimensions): batched operands get unit axes after the batch axis, so that element
    axes still right-align with those of unbatched operands."""
    tensors = [(key, value) for key, value in inputs.items() if isinstance(value, Tensor)]
    rank = max(_element_rank(value, batched[key]) for key, value in tensors)
    aligned = {key: _align(value, batched[key], rank) if isinstance(value, Tensor) else value
               for key, value in inputs.items()}
    return run_kernel(op, aligned, attrs)


def batch_shift_axis(op, inputs, attrs, batched, size):
    """Ops with an `axis` attribute (reductions, softmax, scans, concat, stack, squeeze,
    reverse, argmax): the batch axis comes first, so non-negative axes move one right;
    negative ones count from the end and stay."""
    axis = attrs["axis"]
    if isinstance(axis, int):
        shifted = axis + 1 if axis >= 0 else axis
    elif isinstance(axis, (tuple, list)) and all(isinstance(a, int) and a >= 0 for a in axis):
        shifted = tuple(a + 1 for a in axis)
    else:
        raise NoBatchingRule(op, f"has an axis attribute {axis!r} it cannot shift")
    return run_kernel(op, _all_batched(inputs, batched, size), dict(attrs, axis=shifted))


def batch_transpose(op, inputs, attrs, batched, size):
    """Transpose: the batch axis stays first, the permuted axes after it."""
    perm = (0,) + tuple(p + 1 for p in attrs["perm"])
    return run_kernel(op, inputs, dict(attrs, perm=perm))


def batch_reshape(op, inputs, attrs, batched, size):
    """Reshape: the batch axis is prepended to the target shape."""
    shape = tuple(attrs["shape"])
    if size is None and -1 in shape:  # two unknown entries reshape cannot infer
        raise NoBatchingRule(op, "needs the batch size, unknown while tracing")
    return run_kernel(op, inputs, dict(attrs, shape=(-1 if size is None else size,) + shape))


def batch_gather(op, inputs, attrs, batched, size):
    """GatherV2: batched params gather one axis further right; batched indices alone
    gather as they are and their batch axis is moved to the front."""
    axis, batch_dims = attrs["axis"], attrs["batch_dims"]
    params_batched, indices_batched = batched["params"], batched["indices"]
    if params_batched and indices_batched:  # element i of params with element i of indices
        return run_kernel(op, inputs, dict(attrs, axis=axis + 1, batch_dims=batch_dims + 1))
    if params_batched and batch_dims == 0:
        return run_kernel(op, inputs, dict(attrs, axis=axis + 1))
    if indices_batched and batch_dims == 0:
        out = run_kernel(op, inputs, attrs)
        if axis == 0:
            return out
        perm = (axis,) + tuple(d for d in range(out.ndim) if d != axis)
        return run_kernel("Transpose", {"x": out}, {"perm": perm})
    raise NoBatchingRule(op, f"with batch_dims={batch_dims} and only params batched")
