"""eval_graph: the one walk over a graph's nodes in program order.

Every transformation that replays a graph (rebuilding it optimized, evaluating part of it
eagerly) is `eval_graph` with its own `apply(node, inputs) -> outputs`: the walk maps each
node's inputs through what earlier nodes produced, and the `apply` decides what a node
becomes (a kernel run, a node of another graph, a value found to be constant).
"""
from __future__ import annotations

import math
from typing import Callable

from .._core.context import ctx, hooks
from .._core.dispatch import run_kernel
from .._core.registry import LateAttr
from .._core.shape import Dim
from .._core.tensor import SYMBOLIC, Tensor
from .graph import _dims_in, FuncGraph, late_attrs, Node


def start_rebuild(graph: FuncGraph, shapes: tuple | None = None) -> tuple:
    """(a new graph with `graph`'s inputs, same order, names and dtypes, and their specs
    or the given (more specific) `shapes`; the environment mapping each old input to its
    new one) for a pass that rebuilds `graph`. With `shapes`, re-running the shape rules
    makes the new graph's shapes as static as those inputs allow (specialization)."""
    new = FuncGraph(graph.name)
    shapes = shapes or [t._shape for t in graph.inputs]
    env = {t.id: new.placeholder(shape, t.dtype, t.name.split(":")[0])
           for t, shape in zip(graph.inputs, shapes)}
    return new, env


def finish_rebuild(graph: FuncGraph, new: FuncGraph, env: dict, outputs: list,
                   doing: str) -> list:
    """End a rebuild: `new`'s outputs for `outputs` (returned), its captures those of
    `graph` moved to the new placeholders, its unused nodes dropped (what rewrites left
    behind), its variables; sealed (checked, frozen). Raises if a rewrite made the new
    graph capture a tensor of the old one (a bug of the pass `doing`)."""
    if len(new.inputs) != len(graph.inputs):
        raise RuntimeError(f"{doing} {graph.name}: the rebuilt graph captured "
                           f"{len(new.inputs) - len(graph.inputs)} tensor(s) of the old one")
    new_outputs = [env[t.id] if isinstance(t, Tensor) else t for t in outputs]
    new.variables = dict(graph.variables)
    new.seal(new_outputs, captures=[(ext, env[ph.id]) for ext, ph in graph.captures],
             prune=True)
    return new_outputs


def copy_node(new: FuncGraph, node: Node, ins: dict, env: dict):
    """`node` added to `new` (a rebuild of its graph) as it was: same op, name, site and
    effects, its inputs `ins` and its run-time dims moved through `env`."""
    if node.op == "Const":
        return new.const_node(node.attrs["value"], node.attrs["dtype"], node.name, node.site)
    return new.add_op(node.op, ins, remap_dims(node.attrs, env), name=node.name,
                      site=node.site, stateful=node.stateful)


def remap_dims(attrs: dict, env: dict) -> dict:
    """`attrs` with each run-time dim (`Dim`) moved to the tensor `env` maps its tensor to
    (rebuilding a graph: the new graph's tensor for the old one), or made an int where
    that tensor's shape knows it (an eager tensor, a specialized graph's tensor)."""
    if not _dims_in(attrs):
        return attrs

    def local(d):  # (a Dim of a tensor from outside the graph stays as it is)
        if type(d) is not Dim:
            return d
        t = env.get(d.tensor.id, d.tensor)
        axes = (d.axis,) if type(d.axis) is int else d.axis
        sizes = [t._shape[a] for a in axes]
        if None not in sizes:
            return math.prod(sizes)
        return Dim(t, d.axis)
    return {k: (tuple(local(d) for d in v) if type(v) is tuple or type(v) is list
                else local(v)) for k, v in attrs.items()}


def node_inputs(node, env: dict) -> dict:
    """`node`'s inputs with each tensor replaced by its value in `env` (tensor id -> value);
    variables and other non-tensors pass as they are (an `apply` that needs the tensors
    of run-time dims reads `node.dims`)."""
    out = {}
    for k, v in node.inputs.items():
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


# ---------------------------------------------------------------------- variables


def lift_initial_value(value, variable):
    """A variable created while a function is traced gets an eager initial value (as TF's
    init_scope lifts initializers): a callable runs outside the graph; a symbolic value is
    computed from the nodes it depends on, which may use captures but not the function's
    arguments. The graph notes the variable: only the first trace may create variables."""
    graph = ctx.graph
    graph.created_variables.append(variable)
    if callable(value):
        saved = ctx.graph
        ctx.graph = None
        ctx.refresh()
        try:
            return value()
        finally:
            ctx.graph = saved
            ctx.refresh()
    if isinstance(value, Tensor) and value._buf == SYMBOLIC:
        return _evaluate_eagerly(graph, value)
    return value


def _evaluate_eagerly(graph: FuncGraph, t: Tensor) -> Tensor:
    """The value of `t`, a tensor of `graph` that depends on captures only, computed now
    by running the nodes it needs eagerly."""
    needed, stack = {}, [t]
    while stack:
        cur = stack.pop()
        node = cur._native.node
        if node.name in needed:
            continue
        needed[node.name] = node
        for v in node.inputs.values():
            for m in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(m, Tensor) and graph.owns(m):
                    stack.append(m)
    captured = {ph.id: ext for ext, ph in graph.captures}
    for node in graph.nodes:
        if node.name in needed and node.op == "Placeholder" and \
                node.outputs[0].id not in captured:
            raise ValueError(
                f"tf.Variable created inside a traced function has an initial value "
                f"({t.name}) computed from the function's argument {node.outputs[0].name}; "
                "create the variable outside, or give a value that does not depend on the "
                "arguments")
    saved = ctx.graph
    ctx.graph = None
    ctx.refresh()
    try:
        env = eval_graph(graph, dict(captured), _run_eagerly,
                         [n for n in graph.nodes if n.name in needed])
    finally:
        ctx.graph = saved
        ctx.refresh()
    return env[t.id]


def _run_eagerly(node, ins: dict):
    attrs = node.attrs
    if late_attrs(attrs):  # a random op's seed: drawn now, as a run of the graph draws it
        attrs = {k: v.resolve() if isinstance(v, LateAttr) else v for k, v in attrs.items()}
    return run_kernel(node.op, ins, attrs)


hooks.lift = lift_initial_value
