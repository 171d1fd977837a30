"""eval_graph: the one walk over a graph's nodes in program order.

Every transformation that replays a graph (rebuilding it optimized, evaluating part of it
eagerly) is `eval_graph` with its own `apply(node, inputs) -> outputs`: the walk maps each
node's inputs through what earlier nodes produced, and the `apply` decides what a node
becomes (a kernel run, a node of another graph, a value found to be constant).
"""
from __future__ import annotations

from typing import Callable

from .._core.context import ctx, hooks
from .._core.dispatch import run_kernel
from .._core.registry import LateAttr
from .._core.shape import Dim
from .._core.tensor import SYMBOLIC, Tensor
from .executor import live_nodes
from .graph import _dims_in, DIM_SOURCES, FuncGraph, late_attrs


def start_rebuild(graph: FuncGraph) -> tuple:
    """(a new graph with `graph`'s inputs, same order, names and specs; the environment
    mapping each old input to its new one) for a pass that rebuilds `graph`."""
    new = FuncGraph(graph.name)
    env = {t.id: new.placeholder(t._shape, t.dtype, t.name.split(":")[0])
           for t in graph.inputs}
    return new, env


def finish_rebuild(graph: FuncGraph, new: FuncGraph, env: dict, outputs: list,
                   doing: str) -> list:
    """End a rebuild: `new`'s outputs for `outputs` (returned), its unused nodes dropped
    (what rewrites left behind), its variables, frozen. Raises if a rewrite made the new
    graph capture a tensor of the old one (a bug of the pass `doing`)."""
    if len(new.inputs) != len(graph.inputs):
        raise RuntimeError(f"{doing} {graph.name}: the rebuilt graph captured "
                           f"{len(new.inputs) - len(graph.inputs)} tensor(s) of the old one")
    new_outputs = [env[t.id] if isinstance(t, Tensor) else t for t in outputs]
    new.nodes = [n for n in new.nodes if n.op == "Placeholder"] + live_nodes(new.nodes,
                                                                             new_outputs)
    new.outputs = list(new_outputs)
    new.variables = dict(graph.variables)
    new.frozen = True
    return new_outputs


def remap_dims(attrs: dict, env: dict) -> dict:
    """`attrs` with each run-time dim (`Dim`) moved to the tensor `env` maps its tensor to
    (rebuilding a graph: the new graph's tensor for the old one)."""
    if not _dims_in(attrs):
        return attrs

    def local(d):  # (a Dim of a tensor from outside the graph stays as it is)
        return Dim(env.get(d.tensor.id, d.tensor), d.axis) if type(d) is Dim else d
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
