"""The gradient and the JVP of a traced function, each itself a traced function.

The forward graph's nodes are recorded on a tape (ids and backward functions holding the
forward graph's symbolic tensors, as for eager ops); computing the gradient of its outputs
while a new graph is being traced runs every VJP rule symbolically. The forward tensors the
rules read are captured by the backward graph: they become its inputs, and the forward
program returns them beside its outputs (the "saved" tensors).
"""
from __future__ import annotations

from .._core.context import ctx, hooks
from .._core.convert import convert_to_tensor
from .._core.indexed_slices import IndexedSlices
from .._core.shape import with_dims
from .._core.tensor import Tensor, TensorSpec
from ..autodiff import record, vspace
from ..autodiff.forward import ForwardAccumulator
from ..autodiff.tape import Tape
from .graph import FuncGraph, graph_of, tracing
from .interpret import eval_graph


def backward_function(cf):
    """(backward ConcreteFunction, gradient slots, saved forward tensors) of `cf`, built
    once. The backward function takes the output cotangents then the saved tensors and
    returns the gradients of the inputs (arguments, captures, then variables) that have
    one; `slots` says which."""
    return cf.derived("backward", lambda: _build(cf))


def _build(cf):
    fwd = cf.graph
    variables = list(fwd.variables.values())
    sources = list(fwd.inputs) + variables
    tape = Tape(persistent=True)
    for s in sources:
        if s.dtype.is_trainable:
            tape.watch(s.id, s._shape, s.dtype)
    saved_state = (ctx.tapes, ctx.watchers)
    ctx.tapes, ctx.watchers = [tape], []
    ctx.refresh()
    try:  # the forward nodes recorded as eager ops are: a backward function per node
        env = {t.id: t for t in fwd.inputs}
        eval_graph(fwd, env, _recorded)
    finally:
        record.forced_site[0] = None
        ctx.tapes, ctx.watchers = saved_state
        ctx.refresh()
    outputs = list(cf._flat_outputs)
    bwd = FuncGraph(f"{fwd.name}_grad")
    cots = [bwd.placeholder(o._shape, o.dtype, "Cotangent") for o in outputs]
    with tracing(bwd):
        grads = tape.compute_gradient(
            vspace, [o.id for o in outputs], [s.id for s in sources],
            [c if o.dtype.is_trainable else None for c, o in zip(cots, outputs)],
            [(with_dims(o), o.dtype) for o in outputs])
        grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g in grads]
        slots, results = [], []
        for i, g in enumerate(grads):
            if g is not None:
                slots.append(i)
                results.append(g if bwd.owns(g) else bwd.capture(g))
    # forward tensors the rules read become inputs fed by the forward run ("saved")
    saved = [(ext, ph) for ext, ph in bwd.captures if graph_of(ext) is fwd]
    others = [(ext, ph) for ext, ph in bwd.captures if graph_of(ext) is not fwd]
    order = cots + [ph for _, ph in saved] + [ph for _, ph in others]
    bwd.seal(results, inputs=order, captures=others)
    n_args = len(cots) + len(saved)
    grad_cf = type(cf)(bwd, (tuple(_spec(t) for t in order[:n_args]), {}), results, n_args,
                       bwd.name)
    grad_cf.jit_compile = cf.jit_compile
    return grad_cf, slots, [ext for ext, _ in saved]


def _recorded(node, ins: dict) -> tuple:
    """eval_graph's recording `apply`: the node on the tape with the forward graph's own
    tensors (its outputs are the values), blamed on the line that made the forward op."""
    if node.outputs:
        record.forced_site[0] = node.site[1] if node.site else None
        hooks.record(node.op, ins, node.attrs, list(node.outputs))
    return node.outputs


def _spec(t: Tensor) -> TensorSpec:
    return TensorSpec(t._shape, t.dtype)


def jvp_function(cf, has_tangent: list, tangent_shapes: list):
    """(JVP ConcreteFunction, output slots) of `cf` for one tangent pattern: which of its
    inputs (arguments, captures, then variables) have a tangent, and the tangents' shapes
    (a leading batch dimension for batched tangents). The JVP function takes the primal
    inputs then the present tangents and returns the outputs' tangents that exist."""
    key = ("jvp", tuple(has_tangent), tuple(tangent_shapes))
    return cf.derived(key, lambda: _build_jvp(cf, has_tangent, tangent_shapes))


def _build_jvp(cf, has_tangent, tangent_shapes):
    fwd = cf.graph
    variables = list(fwd.variables.values())
    graph = FuncGraph(f"{fwd.name}_jvp")
    primals = [graph.placeholder(t._shape, t.dtype) for t in fwd.inputs]
    sources = primals + variables
    watched = [s for s, on in zip(sources, has_tangent) if on]
    batched = any(len(shape) == len(s._shape) + 1 for s, shape in zip(watched, tangent_shapes))
    # a tangent has its primal's shape: the primal's unknown dims stay unknown, so the JVP
    # graph serves every input the forward graph does
    tangents = [graph.placeholder(shape[:1] + tuple(s._shape) if batched else s._shape,
                                  s.dtype, "Tangent")
                for s, shape in zip(watched, tangent_shapes)]
    with tracing(graph):
        with ForwardAccumulator(watched, tangents, use_batch=batched) as acc:
            outs = cf._inline(primals)
        touts = [acc.jvp(o) for o in outs]
        slots, results = [], []
        for i, t in enumerate(touts):
            if t is not None:
                slots.append(i)
                results.append(t if graph.owns(t) else graph.capture(t))
    n_args = len(primals) + len(tangents)
    jvp_cf = type(cf)(graph, (tuple(_spec(t) for t in graph.inputs[:n_args]), {}), results,
                      n_args, graph.name)
    jvp_cf.jit_compile = cf.jit_compile
    return jvp_cf, slots
