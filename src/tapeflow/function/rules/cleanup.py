"""Cleanup rules: algebraic simplification, identity removal and constant folding, as
rule tables for the rewrite engine (function/rewrite.py).

Every rule is exact: it answers with a tensor of the same dtype and static shape as the
node's output (never one that a broadcast would have widened), so values are the eager
ones (x + 0 -> x alone can turn a -0.0 into 0.0, as in TensorFlow's optimizer). Folding
runs the node's own kernel now and never folds a stateful or random op.
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import registry as _reg
from ..._core.dispatch import no_recording, run_kernel, shape_args
from ..._core.memory import wrap_native
from ..._core.tensor import Tensor
from ..graph import _dims_in, _rule_attrs
from ..rewrite import node_of, Pat, PatternMatcher

# Folded constants larger than this many elements are not made: a graph would carry them.
FOLD_LIMIT = 1 << 20


def constant_value(t):
    """The value of a new-graph tensor whose producer makes a known constant (Const,
    Zeros/Ones with a static shape, ZerosLike/OnesLike of a static shape), else None."""
    node = node_of(t)
    if node is None:
        return None
    if node.op == "Const":
        return node.attrs["value"]
    if None in t._shape:
        return None
    if node.op in ("Zeros", "ZerosLike"):
        return np.zeros(t._shape, t.dtype._np)
    if node.op in ("Ones", "OnesLike"):
        return np.ones(t._shape, t.dtype._np)
    return None


def is_all(t, number) -> bool:
    """Whether `t` is a known constant every element of which equals `number`."""
    node = node_of(t)
    if node is None:
        return False
    if node.op in ("Zeros", "ZerosLike"):
        return number == 0
    if node.op in ("Ones", "OnesLike"):
        return number == 1
    if node.op == "Const":
        value = node.attrs["value"]
        if type(value) is np.ndarray and value.size == 1:  # (most: no reduction to call)
            return bool(value.reshape(-1)[0] == number)
        return value.size > 0 and bool(np.all(value == number))
    if node.op == "BroadcastTo":  # a constant spread out (a gradient seed of ones)
        return is_all(node.inputs["x"], number)
    return False


def same(t, like) -> bool:
    """Whether tensor `t` can stand for an output of spec `like`: same dtype, same static
    shape (no broadcasting to undo, no unknown dims to trust)."""
    return (isinstance(t, Tensor) and t.dtype is like.dtype and None not in t._shape
            and tuple(t._shape) == tuple(like._shape))


def _all(number):
    return Pat(value=lambda t: is_all(t, number))


X = Pat(name="x")


def _x_if_same(rw, node, x, **_):
    return x if same(x, node.out) else None


def _x(rw, node, x, **_):
    return x


# ------------------------------------------------------------------ simplification
def _inverse_perm(rw, node, x):
    perm = tuple(node.attrs["perm"])
    return x if perm == tuple(range(len(perm))) else None


def _transposes(rw, node, inner):
    """transpose(transpose(x, p1), p2) = transpose(x, p1 o p2) (emitted: an identity
    permutation then cancels by the rule above)."""
    src = node_of(inner)
    p1, p2 = tuple(src.attrs["perm"]), tuple(node.attrs["perm"])
    return rw.emit("Transpose", {"x": src.inputs["x"]}, {"perm": tuple(p1[i] for i in p2)},
                   site=node.site)


def _reshapes(rw, node, inner):
    """reshape(reshape(x)) = reshape(x) (its own shape: it then cancels)."""
    if node.dims:
        return None
    return rw.emit("Reshape", {"x": node_of(inner).inputs["x"]}, node.attrs, site=node.site)


def _scalar_spread(t):
    """The scalar that `t` spreads out, when `t` is a BroadcastTo of a 0-d tensor."""
    inner = node_of(t)
    if inner is not None and inner.op == "BroadcastTo" and inner.inputs["x"]._shape == ():
        return inner.inputs["x"]
    return None


def _spread_operand(rw, node, spread, other):
    """An elementwise op of a scalar spread out (the seeds of backward graphs: `1/n`
    broadcast to the batch) whose other operand has the output's shape takes the scalar
    itself."""
    scalar = _scalar_spread(spread)
    if node.dims or not same(other, node.out) or scalar.dtype is not node.out.dtype:
        return None
    name = "x" if node.inputs["x"] is spread else "y"
    return rw.emit(node.op, {**node.inputs, name: scalar}, node.attrs, name=node.name,
                   site=node.site)


def _spread_reshaped(rw, node, spread):
    """A reshape or expand_dims of a scalar spread out spreads it to the new shape."""
    if node.dims or None in node.out._shape:
        return None
    return rw.emit("BroadcastTo", {"x": _scalar_spread(spread)},
                   {"shape": tuple(node.out._shape)}, site=node.site)


ELEMENTWISE_BINARY = ("Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum")
SPREAD = Pat("BroadcastTo", name="spread", src={"x": Pat(value=lambda t: t._shape == ())})

SIMPLIFY = PatternMatcher([
    (Pat("Mul", src={"x": X, "y": _all(1)}, commute=True), _x_if_same, "simplified"),
    (Pat("Add", src={"x": X, "y": _all(0)}, commute=True), _x_if_same, "simplified"),
    (Pat("Sub", src={"x": X, "y": _all(0)}), _x_if_same, "simplified"),
    (Pat("RealDiv", src={"x": X, "y": _all(1)}), _x_if_same, "simplified"),
    (Pat("Neg", src={"x": Pat("Neg", src={"x": X})}), _x, "simplified"),
    # a cast to its own dtype, a SumTo / BroadcastTo / Reshape to its own shape
    (Pat(("Cast", "SumTo", "BroadcastTo", "Reshape"), src={"x": X}), _x_if_same,
     "simplified"),
    (Pat("Transpose", src={"x": X}), _inverse_perm, "simplified"),
    (Pat(ELEMENTWISE_BINARY, src={"x": SPREAD, "y": Pat(name="other")}, commute=True),
     _spread_operand, "simplified"),
    (Pat(("ExpandDims", "Reshape"), src={"x": SPREAD}), _spread_reshaped, "simplified"),
    (Pat("Transpose", src={"x": Pat("Transpose", name="inner")}), _transposes,
     "simplified"),
    (Pat("Reshape", src={"x": Pat("Reshape", name="inner",
                                  where=lambda n: not _dims_in(n.attrs))}),
     _reshapes, "simplified"),
])

# Removed by "dependency_optimization" (as TensorFlow's dependency optimizer prunes
# Identity): in a graph that runs, StopGradient is the identity too.
IDENTITIES = PatternMatcher([
    (Pat(("Identity", "StopGradient"), src={"x": X}), _x, "simplified"),
])


# ------------------------------------------------------------------ constant folding
def _fold(rw, node):
    """Const nodes for a pure node whose tensor inputs are all known constants, or whose
    result the static shapes decide (Shape, Size of a fully known shape)."""
    op, ins, attrs = node.op, node.inputs, node.attrs
    if op in ("Shape", "Size") and None not in ins["x"]._shape:
        shape = tuple(ins["x"]._shape)
        value = np.asarray(shape if op == "Shape" else math.prod(shape),
                           attrs["out_type"].as_numpy_dtype)
        return rw.graph.const_node(value, attrs["out_type"], f"{node.name}/folded",
                                   node.site)
    if op in ("Zeros", "Ones") or node.dims or not ins:
        return None  # a constant already; run-time dims are not known yet
    if op in _reg.COMPOSITES or op not in _reg.KERNELS:
        return None
    values = {}
    for k, v in ins.items():
        if isinstance(v, list):
            vs = [constant_value(m) if isinstance(m, Tensor) else None for m in v]
            if any(x is None for x in vs):
                return None
            values[k] = [wrap_native(x) for x in vs]
        elif isinstance(v, Tensor):
            x = constant_value(v)
            if x is None:
                return None
            values[k] = wrap_native(x)
        else:
            return None  # a variable: read at run time
    outputs = _reg.SHAPES[op](*shape_args(ins, _rule_attrs(attrs)))
    if any(None in shape or math.prod(shape) > FOLD_LIMIT for shape, _ in outputs):
        return None
    try:
        with no_recording():
            result = run_kernel(op, values, attrs)
    except Exception:  # noqa: BLE001 - it fails at run time instead, with its message
        return None
    results = result if isinstance(result, list) else [result]
    if len(results) != len(outputs):
        return None
    # (a view's own copy; the array API's arrays have no `base` and are never views)
    return [rw.graph.const_node(r._native.copy() if getattr(r._native, "base", None)
                                is not None else r._native, r.dtype,
                                f"{node.name}/folded" + (f"_{i}" if i else ""), node.site)
            for i, r in enumerate(results)]


FOLD = PatternMatcher([(Pat(), _fold, "folded")])
