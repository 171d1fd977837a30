"""eval_graph: the one walk over a graph's nodes in program order.

Every transformation that replays a graph (rebuilding it optimized, evaluating part of it
eagerly) is `eval_graph` with its own `apply(node, inputs) -> outputs`: the walk maps each
node's inputs through what earlier nodes produced, and the `apply` decides what a node
becomes (a kernel run, a node of another graph, a value found to be constant).
"""
from __future__ import annotations

from typing import Callable

from .._core.shape import Dim
from .._core.tensor import Tensor
from .graph import _dims_in, DIM_SOURCES, FuncGraph


def remap_dims(attrs: dict, env: dict) -> dict:
    """`attrs` with each run-time dim (`Dim`) moved to the tensor `env` maps its tensor to
    (rebuilding a graph: the new graph's tensor for the old one)."""
    if not _dims_in(attrs):
        return attrs

    def local(d):
        return Dim(env[d.tensor.id], d.axis) if type(d) is Dim else d
    return {k: (tuple(local(d) for d in v) if type(v) is tuple or type(v) is list
                else local(v)) for k, v in attrs.items()}


def node_inputs(node, env: dict) -> dict:
    """`node`'s inputs with each tensor replaced by its value in `env` (tensor id -> value);
    variables and other non-tensors pass as they are; the run-time-dims input is left out
    (an `apply` that needs it reads the node's attributes)."""
    out = {}
    for k, v in node.inputs.items():
        if k == DIM_SOURCES:
            continue
        if type(v) is list or type(v) is tuple:
            out[k] = [env[m.id] if isinstance(m, Tensor) else m for m in v]
        else:
            out[k] = env[v.id] if isinstance(v, Tensor) else v
    return out


def eval_graph(graph: FuncGraph, env: dict, apply: Callable, nodes=None) -> dict:
    """Run `apply(node, node_inputs)` over `nodes` (default: every non-placeholder node of
    `graph`, in program order), starting from `env` (placeholder id -> value), which is
    extended in place (an `apply` may read it) and returned: tensor id -> value. Each
    result (a value, or a list for several outputs) is bound to the node's outputs.

    Example (evaluating a graph eagerly):
        eval_graph(g, {ph.id: t}, lambda node, ins: run_kernel(node.op, ins, node.attrs))
    """
    for node in (graph.nodes if nodes is None else nodes):
        if node.op == "Placeholder":
            continue
        result = apply(node, node_inputs(node, env))
        outs = node.outputs
        if not outs:
            continue
        values = result if type(result) is list or type(result) is tuple else [result]
        for o, v in zip(outs, values):
            env[o.id] = v
    return env
