"""Batching rules for `vectorized_map`: `fn` traced once for one element, its nodes run
again on tensors with a leading batch axis.

Every tensor of the trace is either *batched* (it depends on the element: one more leading
axis than traced) or not (captures, constants, variables). A node none of whose inputs is
batched runs as traced; otherwise the rule for its op adapts the call:

- elementwise ops (one input, shape kept, no axis attribute): run as they are;
- broadcasting ops (binary math, comparisons, select, matmul's batch dims): batched
  operands get unit axes after the batch axis so element axes still right-align;
- ops with an `axis` attribute (reductions, softmax, scans, concat, stack, expand_dims,
  squeeze, reverse, argmax): the axis moves one to the right;
- transpose, reshape, strided slices and gather: their attributes are rewritten.

`RULES` maps op names to rules `rule(node, inputs, batched, n) -> outputs`; a node whose op
has no rule raises NoBatchingRule, and vectorized_map falls back to map_fn.
"""
from __future__ import annotations

from .._core import nest, registry as _reg
from .._core.dispatch import run_kernel
from .._core.tensor import Tensor, TensorSpec
from ..ops import array as array_ops
from ..ops.indexing import _spec
from .control_flow import _Sub
from .graph import DIM_SOURCES, late_attrs


class NoBatchingRule(Exception):
    """Op `op` of the traced fn has no batching rule (or none for this call)."""

    def __init__(self, op: str, why: str):
        super().__init__(f"op {op} {why}")
        self.op = op


def _rank(v, batched: bool) -> int:
    return v.ndim - 1 if batched else v.ndim


def _align(v, batched: bool, rank: int):
    """A batched operand with unit axes after the batch axis up to 1 + `rank` axes."""
    if not batched:
        return v
    for _ in range(rank - _rank(v, True)):
        v = array_ops.expand_dims(v, 1)
    return v


def _tile(v, n):
    """An unbatched tensor repeated `n` times along a new first axis."""
    if n is None:
        raise NoBatchingRule("Tile", "needs the batch size, unknown while tracing")
    return array_ops.tile(array_ops.expand_dims(v, 0), [n] + [1] * v.ndim)


def broadcasting(node, ins, batched, n):
    tensors = [(k, v) for k, v in ins.items() if isinstance(v, Tensor)]
    rank = max(_rank(v, batched[k]) for k, v in tensors)
    args = {k: _align(v, batched[k], rank) if isinstance(v, Tensor) else v
            for k, v in ins.items()}
    return run_kernel(node.op, args, node.attrs)


def elementwise(node, ins, batched, n):
    return run_kernel(node.op, ins, node.attrs)


def _all_batched(ins, batched, n) -> dict:
    """List inputs with every member batched (unbatched ones tiled)."""
    out = {}
    for k, v in ins.items():
        if isinstance(v, list):
            out[k] = [m if b else _tile(m, n) for m, b in zip(v, batched[k])]
        elif isinstance(v, Tensor) and not batched[k]:
            out[k] = _tile(v, n)
        else:
            out[k] = v
    return out


def shift_axis(node, ins, batched, n):
    a = node.attrs["axis"]
    if isinstance(a, int):
        axis = a + 1 if a >= 0 else a
    elif isinstance(a, (tuple, list)) and all(isinstance(x, int) and x >= 0 for x in a):
        axis = tuple(x + 1 for x in a)
    else:
        raise NoBatchingRule(node.op, f"has an axis attribute {a!r} it cannot shift")
    return run_kernel(node.op, _all_batched(ins, batched, n), dict(node.attrs, axis=axis))


def transpose(node, ins, batched, n):
    perm = (0,) + tuple(p + 1 for p in node.attrs["perm"])
    return run_kernel(node.op, ins, dict(node.attrs, perm=perm))


def reshape(node, ins, batched, n):
    shape = tuple(node.attrs["shape"])
    if n is None and -1 in shape:
        raise NoBatchingRule(node.op, "needs the batch size, unknown while tracing")
    return run_kernel(node.op, ins, dict(node.attrs, shape=(-1 if n is None else n,) + shape))


def gather(node, ins, batched, n):
    axis, b = node.attrs["axis"], node.attrs["batch_dims"]
    bp, bi = batched["params"], batched["indices"]
    if bp and bi:
        return run_kernel(node.op, ins, dict(node.attrs, axis=axis + 1, batch_dims=b + 1))
    if bp and b == 0:
        return run_kernel(node.op, ins, dict(node.attrs, axis=axis + 1))
    if bi and b == 0:
        out = run_kernel(node.op, ins, node.attrs)
        if axis == 0:
            return out
        perm = [axis] + [d for d in range(out.ndim) if d != axis]
        return array_ops.transpose(out, perm)
    raise NoBatchingRule(node.op, f"with batch_dims={b} and only params batched")


def strided_slice(node, ins, batched, n):
    return run_kernel(node.op, ins, {**node.attrs, **_spec(node.attrs, 1)})


RULES = {"StridedSlice": strided_slice, "MatMul": broadcasting, "SelectV2": broadcasting,
         "Transpose": transpose,
         "Reshape": reshape, "GatherV2": gather}
for _name in ("Sum", "Mean", "Max", "Min", "Prod", "LogSumExp", "Any", "All", "ArgMax",
              "ArgMin", "Softmax", "LogSoftmax", "Cumsum", "Cumprod", "Concat", "Stack",
              "Unstack", "ExpandDims", "Squeeze", "Reverse"):
    RULES[_name] = shift_axis

# attributes that tie an op to positions of its input's axes: no plain elementwise rule
_POSITIONAL = {"axis", "axes", "perm", "shape", "dims", "begin", "end", "size", "sizes",
               "paddings", "multiples", "strides", "spec"}


def rule_for(node):
    rule = RULES.get(node.op)
    if rule is not None:
        return rule
    shape_rule = _reg.SHAPES.get(node.op)
    qual = getattr(shape_rule, "__qualname__", "")
    if qual.startswith(("_binary_shape", "_compare_shape", "_comparison")):
        return broadcasting
    op = _reg.OPS.get(node.op)
    tensor_inputs = [k for k, v in node.inputs.items() if isinstance(v, Tensor)]
    if (op is not None and not op.list_inputs and len(tensor_inputs) == 1
            and len(node.outputs) == 1 and not _POSITIONAL & set(node.attrs)):
        x = node.inputs[tensor_inputs[0]]
        if tuple(node.outputs[0]._shape) == tuple(x._shape):
            return elementwise
    return None


# ---------------------------------------------------------------------- the transform


def batch_function(fn, elems, flat: list, n):
    """`fn` mapped over the first axis of `flat` (the leaves of `elems`) in one pass."""
    specs = [TensorSpec(t._shape[1:], t.dtype) for t in flat]
    sub = _Sub(lambda *phs: fn(nest.pack_sequence_as(elems, list(phs))
                               if nest.is_nested(elems) else phs[0]),
               specs, "vectorized_map_fn")
    graph = sub.graph
    env = {ph.id: (t, True) for ph, t in zip(sub.params, flat)}
    for ext, ph in graph.captures:
        env[ph.id] = (ext, False)
    for node in graph.nodes:
        if node.op == "Placeholder":
            continue
        if DIM_SOURCES in node.inputs:
            raise NoBatchingRule(node.op, "has attributes that depend on run-time shapes")
        if late_attrs(node.attrs):  # random draws: one per element, as the loop makes
            raise NoBatchingRule(node.op, "draws random numbers")
        ins, flags = {}, {}
        for k, v in node.inputs.items():
            if isinstance(v, (list, tuple)):
                pairs = [env[m.id] if isinstance(m, Tensor) else (m, False) for m in v]
                ins[k], flags[k] = [p[0] for p in pairs], [p[1] for p in pairs]
            elif isinstance(v, Tensor):
                ins[k], flags[k] = env[v.id]
            else:  # a variable
                ins[k], flags[k] = v, False
        any_batched = any(any(f) if isinstance(f, list) else f for f in flags.values())
        if not any_batched:
            out = run_kernel(node.op, ins, node.attrs)
        else:
            if node.stateful and node.op != "ReadVariableOp":
                raise NoBatchingRule(node.op, "is stateful")
            rule = rule_for(node)
            if rule is None:
                raise NoBatchingRule(node.op, "has no batching rule")
            out = rule(node, ins, flags, n)
        outs = out if isinstance(out, list) else ([] if out is None else [out])
        for o, s in zip(outs, node.outputs):
            env[s.id] = (o, any_batched)
    leaves = []
    for o in sub.flat:
        if o is None:
            leaves.append(None)
            continue
        value, b = env[o.id]
        leaves.append(value if b else _tile(value, n))
    return nest.pack_sequence_as(sub.result, leaves) if nest.is_nested(sub.result) \
        else leaves[0]
