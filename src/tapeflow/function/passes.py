"""Graph optimization (API §6.5): a traced graph is rebuilt, node by node, into an
optimized copy before the executor compiles it.

The rebuild is one `eval_graph` whose `apply` emits each node into a new graph unless a
pass has something better (the IR is checked on the result):
- dead-code elimination: only nodes the outputs need, and stateful nodes, are visited;
- arithmetic simplification: a table of rules keyed by op (x*1, x-0, x+zeros, double
  negation, transpose of transpose, reshape chains, casts to the same dtype, SumTo and
  BroadcastTo to the same shape, Identity and StopGradient) that may answer with a
  tensor the new graph already has;
- common-subexpression elimination: a pure node equal to an earlier one (same op,
  inputs and attributes) reuses its outputs;
- constant folding: a pure node whose inputs are all constants runs now, through its
  kernel, and becomes Const nodes (never a stateful or random op).

Passes are switched by TensorFlow's option names (`config.optimizer.
set_experimental_options`): "constant_folding", "arithmetic_optimization" (CSE and
simplification), "dependency_optimization" (Identity and StopGradient removal),
"disable_model_pruning" (no dead-code elimination), "disable_meta_optimizer" (none).
The values computed are the eager ones: folding runs the same kernels, and the rules are
exact (x + 0 -> x alone can turn a -0.0 into 0.0, as in TensorFlow's optimizer).
"""
from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from .._core import registry as _reg
from .._core.context import ctx
from .._core.dispatch import no_recording, run_kernel, shape_args
from .._core.dtypes import DType
from .._core.memory import wrap_native
from .._core.shape import Dim
from .._core.tensor import Tensor
from .._core.variable import Variable
from .graph import _dims_in, _rule_attrs, FuncGraph, late_attrs, live_nodes
from .interpret import copy_node, eval_graph, finish_rebuild, remap_dims, start_rebuild

# TensorFlow's option names (tf.config.optimizer.set_experimental_options); the ones
# tapeflow has no pass for are accepted and kept, as settings with no effect.
OPTION_NAMES = ("layout_optimizer", "constant_folding", "shape_optimization", "remapping",
                "arithmetic_optimization", "dependency_optimization", "loop_optimization",
                "function_optimization", "debug_stripper", "disable_model_pruning",
                "scoped_allocator_optimization", "pin_to_host_optimization",
                "implementation_selector", "auto_mixed_precision", "disable_meta_optimizer",
                "min_graph_nodes", "auto_parallel")
DEFAULT_OPTIONS = {"disable_model_pruning": False, "disable_meta_optimizer": False}
_options: dict = dict(DEFAULT_OPTIONS)
# Folded constants larger than this many elements are not made: a graph would carry them.
FOLD_LIMIT = 1 << 20


def set_experimental_options(options: dict) -> None:
    """Switch graph optimizations by TensorFlow's names (values merge with earlier ones).

    Example:
        >>> tf.config.optimizer.set_experimental_options({"constant_folding": False})
        >>> tf.config.optimizer.get_experimental_options()["constant_folding"]
        False
    """
    if not isinstance(options, dict):
        raise TypeError(f"set_experimental_options: options must be a dict, got "
                        f"{type(options).__name__}")
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ValueError(f"set_experimental_options: unknown option(s) {unknown}; valid: "
                         f"{list(OPTION_NAMES)}")
    for key, value in options.items():
        if key == "min_graph_nodes":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"set_experimental_options: min_graph_nodes must be an "
                                f"int, got {value!r}")
        elif not isinstance(value, bool):
            raise TypeError(f"set_experimental_options: {key} must be True or False, got "
                            f"{value!r}")
    _options.update(options)
    _active.clear()


def get_experimental_options() -> dict:
    """The optimizer options set so far (TensorFlow's names), as a new dict.

    Example: `tf.config.optimizer.get_experimental_options()` ->
    `{'disable_model_pruning': False, 'disable_meta_optimizer': False}` by default.
    """
    return dict(_options)


def reset_options() -> None:
    """The options as a new process has them."""
    _options.clear()
    _options.update(DEFAULT_OPTIONS)
    _active.clear()


_active: list = []  # active_passes(), computed once per change of the options


def active_passes() -> tuple:
    """The passes the options leave on, in a hashable form (part of a program's key)."""
    if not _active:
        _active.append(_passes_on())
    return _active[0]


def _passes_on() -> tuple:
    if _options.get("disable_meta_optimizer"):
        return ()
    on = []
    if not _options.get("disable_model_pruning"):
        on.append("dce")
    if _options.get("arithmetic_optimization", True):
        on += ["simplify", "cse"]
    if _options.get("dependency_optimization", True):
        on.append("identity")
    if _options.get("constant_folding", True):
        on.append("fold")
    if _options.get("shape_optimization", True):  # graphs specialized to input shapes
        on.append("shape")
    if _options.get("remapping", True):  # TensorFlow's remapper is its op-fusion pass
        on.append("fuse")
    return tuple(on)


class Report:
    """What a rebuild did: counts per pass (`removed` is dead code not visited)."""

    def __init__(self):
        self.removed = self.simplified = self.deduplicated = self.folded = 0
        self.merged = 0  # matrix-vector products merged into one matrix product
        self.rescaled = 0  # products scaled through their smaller operand
        self.accumulated = 0  # variable updates by a product made in one product
        self.convolutions = 0  # convolutions fused with their bias, activation or gradient

    def __repr__(self):
        return (f"Report(removed={self.removed}, simplified={self.simplified}, "
                f"deduplicated={self.deduplicated}, folded={self.folded}, "
                f"merged={self.merged}, rescaled={self.rescaled}, "
                f"accumulated={self.accumulated}, convolutions={self.convolutions})")


def optimize(graph: FuncGraph, outputs: list, passes: tuple,
             shapes: tuple | None = None) -> tuple:
    """(optimized graph, its outputs for `outputs`, Report): `graph` rebuilt with `passes`
    (names from `active_passes`). The inputs keep their order and specs, or take the
    static `shapes` given (a graph specialized to one call's shapes)."""
    report = Report()
    new, env = start_rebuild(graph, shapes)
    nodes = live_nodes(graph.nodes, outputs) if "dce" in passes else [
        n for n in graph.nodes if n.op != "Placeholder"]
    report.removed = sum(n.op != "Placeholder" for n in graph.nodes) - len(nodes)
    builder = _Builder(new, passes, report, env)
    saved = ctx.graph
    ctx.graph = None  # folding runs kernels eagerly; nothing here is traced
    ctx.refresh()
    try:
        env = eval_graph(graph, env, builder.apply, nodes)
    finally:
        ctx.graph = saved
        ctx.refresh()
    new_outputs = finish_rebuild(graph, new, env, outputs, "optimizing")  # (checks it)
    if "simplify" in passes:
        new, new_outputs = merge_matvecs(new, new_outputs, report)
        new, new_outputs = scale_products(new, new_outputs, report)
    if "fuse" in passes:
        new, new_outputs = accumulate_products(new, new_outputs, report)
        new, new_outputs = fuse_convolutions(new, new_outputs, report)
    return new, new_outputs, report


def _matvec_group(node):
    """The key of the products `node` may merge with (one real matrix, static 2-D, by
    static vectors), or None."""
    if node.op != "MatVec":
        return None
    a, b = node.inputs["a"], node.inputs["b"]
    if (node.stateful or node.dims or len(a._shape) != 2
            or len(b._shape) != 1 or None in a._shape or None in b._shape
            or a.dtype is not b.dtype or not a.dtype.is_floating):
        return None
    return a.id, node.attrs["adjoint_a"], b.dtype


def merge_matvecs(graph: FuncGraph, outputs: list, report: Report) -> tuple:
    """MatVecs of one matrix by several vectors (a JVP's primal and tangent products, a
    Hessian-vector product's) become one product by the stacked vectors: the matrix is
    read from memory once instead of once per vector (two 500x500 float64 products: 61
    us apart, 33 us together). Only vectors made before the first such product merge, so
    the merged product can stand where that first one stood."""
    index = {id(n): k for k, n in enumerate(graph.nodes)}
    made_at = {o.id: k for k, n in enumerate(graph.nodes) for o in n.outputs}
    groups: dict = {}
    for node in graph.nodes:
        key = _matvec_group(node)
        if key is not None:
            groups.setdefault(key, []).append(node)
    members: dict = {}  # id(first node) -> the group; id(other node) -> its group
    for group in groups.values():
        first = index[id(group[0])]
        group = [n for n in group if made_at.get(n.inputs["b"].id, -1) < first]
        if len(group) > 1:
            for n in group:
                members[id(n)] = group
    if not members:
        return graph, outputs
    new, env = start_rebuild(graph)
    merged: dict = {}  # id(node) -> its row of the merged product

    def apply(node, ins):
        group = members.get(id(node))
        if group is None:
            return copy_node(new, node, ins, env)
        if id(node) not in merged:  # the group's first product: all of them, at once
            vectors = new.add_op("Stack", {"values": [env[n.inputs["b"].id] for n in group]},
                                 {"axis": 0}, name=f"{node.name}/stacked", site=node.site)
            # rows b_k of B: A b_k are the rows of B A^T, and A^T b_k those of B A
            product = new.add_op("MatMul", {"a": vectors[0], "b": ins["a"]},
                                 {"adjoint_a": False,
                                  "adjoint_b": not node.attrs["adjoint_a"],
                                  "shared_b": False}, name=f"{node.name}/merged",
                                 site=node.site)
            rows = new.add_op("Unstack", {"x": product[0]}, {"axis": 0, "num": len(group)},
                              name=f"{node.name}/rows", site=node.site)
            for n, row in zip(group, rows):
                merged[id(n)] = row
            report.merged += len(group) - 1
        return merged[id(node)]

    env = eval_graph(graph, env, apply)
    return new, finish_rebuild(graph, new, env, outputs, "merging matvecs")


def _scaled_product(node, uses: dict, made_at: dict, index: dict):
    """(the MatMul node, the name of its operand to scale, the scalar) when `node` is a
    real product times a scalar that can scale the product's smaller operand instead,
    else None. The product must feed nothing else, every shape be static, and the scalar
    be a constant or made before the product."""
    if node.op != "Mul" or node.stateful:
        return None
    for name, other in (("x", "y"), ("y", "x")):
        s, p = node.inputs[name], node.inputs[other]
        product = _node_of(p)
        if (s._shape != () or product is None or product.op != "MatMul" or product.stateful
                or product.dims or uses.get(p.id, 0) != 1 or s.dtype is not p.dtype
                or not p.dtype.is_floating or p.dtype.is_complex):
            continue
        a, b = product.inputs["a"], product.inputs["b"]
        if None in a._shape or None in b._shape or None in p._shape:
            continue
        if _node_of(s) is not None and _node_of(s).op != "Const" and \
                made_at.get(s.id, -1) > index[id(product)]:
            continue
        smaller = "a" if math.prod(a._shape) <= math.prod(b._shape) else "b"
        if math.prod(product.inputs[smaller]._shape) < math.prod(p._shape):
            return product, smaller, s
    return None


def scale_products(graph: FuncGraph, outputs: list, report: Report) -> tuple:
    """A matrix product times a scalar (the learning rate times a weight gradient x^T dy,
    a loss scale) becomes the product of its smaller operand scaled: `s * (A @ B)` ->
    `A @ (s * B)`, one pass over B where there was one over the larger product (W2's
    first-layer gradient: 32 K elements scaled instead of 200 K). Equal to float rounding
    (the scalar is applied before the sums), as TensorFlow's optimizer folds a multiply
    into a convolution."""
    uses = _uses(graph, outputs)
    index = {id(n): k for k, n in enumerate(graph.nodes)}
    made_at = {o.id: k for k, n in enumerate(graph.nodes) for o in n.outputs}
    plan: dict = {}  # id(MatMul) -> (operand, scalar); id(Mul) -> the MatMul
    for node in graph.nodes:
        found = _scaled_product(node, uses, made_at, index)
        if found is not None and id(found[0]) not in plan:
            plan[id(found[0])] = found[1:]
            plan[id(node)] = found[0]
    if not plan:
        return graph, outputs
    new, env = start_rebuild(graph)

    def apply(node, ins):
        todo = plan.get(id(node))
        if todo is None:
            return copy_node(new, node, ins, env)
        if node.op == "Mul":  # its product was scaled already: that is its value
            return [env[todo.outputs[0].id]]
        operand, s = todo
        scalar_node = _node_of(s)
        if scalar_node is not None and scalar_node.op == "Const" and s.id not in env:
            env[s.id] = copy_node(new, scalar_node, {}, env)  # (made later in order)
        scaled = new.add_op("Mul", {"x": ins[operand], "y": env[s.id]}, {},
                            name=f"{node.name}/scaled", site=node.site)[0]
        report.rescaled += 1
        return new.add_op("MatMul", {**ins, operand: scaled}, remap_dims(node.attrs, env),
                          name=node.name, site=node.site)

    env = eval_graph(graph, env, apply)
    return new, finish_rebuild(graph, new, env, outputs, "scaling products")


def _uses(graph: FuncGraph, outputs: list) -> dict:
    """tensor id -> how many node inputs and graph outputs read it."""
    uses: dict = {}
    for n in graph.nodes:
        for v in n.inputs.values():
            for t in (v if type(v) is list else (v,)):
                if isinstance(t, Tensor):
                    uses[t.id] = uses.get(t.id, 0) + 1
    for t in outputs:
        if isinstance(t, Tensor):
            uses[t.id] = uses.get(t.id, 0) + 1
    return uses


_SIGNS = {"AssignAddVariableOp": 1.0, "AssignSubVariableOp": -1.0}


def _accumulated(node, uses: dict, index: dict, graph: FuncGraph):
    """(the MatMul, its scale: a 0-d tensor or None, the sign, the nodes it replaces) when
    `node` assigns a (scaled) real matrix product that nothing else reads: `var +=/-=
    s * P`, or `var = read(var) -/+ s * P` with no write to the variable between its read
    and the assignment (optimizers write their rules that way), else None."""
    sign, value, replaced = _SIGNS.get(node.op), node.inputs.get("value"), []
    if value is None or uses.get(value.id, 0) != 1:
        return None
    if sign is None:  # an AssignVariableOp of var -/+ product, read just before
        step = _node_of(value)
        if node.op != "AssignVariableOp" or step is None or step.op not in ("Sub", "Add"):
            return None
        read = _node_of(step.inputs["x"])
        if (read is None or read.op != "ReadVariableOp"
                or read.inputs["resource"] is not node.inputs["resource"]
                or uses.get(step.inputs["x"].id, 0) != 1 or step.inputs["x"].dtype is not
                value.dtype or tuple(step.inputs["x"]._shape) != tuple(value._shape)):
            return None
        var = node.inputs["resource"]
        for between in graph.nodes[index[id(read)] + 1:index[id(node)]]:
            if between.stateful and between.op != "ReadVariableOp" and any(
                    m is var for v in between.inputs.values()
                    for m in (v if type(v) is list else (v,))):
                return None  # the variable may change between the read and the assignment
        sign, value, replaced = (1.0 if step.op == "Add" else -1.0), step.inputs["y"], [
            step, read]
        if uses.get(value.id, 0) != 1:
            return None
    scale, found = None, _node_of(value)
    if found is None:
        return None
    if found.op == "Mul" and not found.stateful:  # a scalar times the product, either way
        for name, other in (("x", "y"), ("y", "x")):
            s, p = found.inputs[name], found.inputs[other]
            inner = _node_of(p)
            if (s._shape == () and s.dtype is value.dtype and inner is not None
                    and inner.op == "MatMul" and uses.get(p.id, 0) == 1):
                replaced.append(found)
                scale, found = s, inner
                break
    if (found.op != "MatMul" or found.stateful or found.dims or not value.dtype.is_floating
            or value.dtype.is_complex or found.outputs[0].dtype is not value.dtype
            or tuple(found.outputs[0]._shape) != tuple(value._shape)
            or any(len(found.inputs[k]._shape) != 2 for k in ("a", "b"))):
        return None
    return found, scale, sign, replaced


def accumulate_products(graph: FuncGraph, outputs: list, report: Report) -> tuple:
    """A variable updated by a (scaled) matrix product nothing else reads (SGD's
    `w.assign_sub(lr * x^T @ g)`, or `w.assign(w - lr * x^T @ g)` as the optimizers write
    it) becomes one AssignAddMatMul at the assignment's place:
    BLAS accumulates the product into the variable's buffer (C = -lr A B + C), with no
    product array and no second pass over it (as TensorFlow's remapper fuses ops into one
    kernel). Equal to rounding."""
    uses = _uses(graph, outputs)
    index = {id(n): k for k, n in enumerate(graph.nodes)}
    plan: dict = {}  # id(a node replaced) -> None (skipped); id(assignment) -> the plan
    for node in graph.nodes:
        found = _accumulated(node, uses, index, graph) if node.op in (
            "AssignVariableOp", *_SIGNS) else None
        if found is None:
            continue
        product, scale, sign, replaced = found
        for n in [product, *replaced]:
            plan[id(n)] = None
        plan[id(node)] = (product, scale, sign)
    if not plan:
        return graph, outputs
    new, env = start_rebuild(graph)
    operands: dict = {}  # id(MatMul) -> its inputs in the new graph

    def apply(node, ins):
        if id(node) not in plan:
            return copy_node(new, node, ins, env)
        todo = plan[id(node)]
        if todo is None:  # the product, its scaling, the read: made by the assignment
            if node.op == "MatMul":
                operands[id(node)] = ins
            return [None] * len(node.outputs)
        product, scale, sign = todo
        mm = operands[id(product)]
        if scale is None:
            alpha = new.const_node(np.ones((), node.inputs["value"].dtype._np),
                                   node.inputs["value"].dtype)
        else:
            alpha = env[scale.id]
        report.accumulated += 1
        return new.add_op("AssignAddMatMul", {"resource": ins["resource"], "a": mm["a"],
                                              "b": mm["b"], "alpha": alpha},
                          {"adjoint_a": product.attrs["adjoint_a"],
                           "adjoint_b": product.attrs["adjoint_b"], "sign": sign},
                          name=node.name, site=node.site)

    env = eval_graph(graph, env, apply)
    return new, finish_rebuild(graph, new, env, outputs, "accumulating products")


_ACTIVATIONS = ("Relu", "Relu6")  # fused into FusedConv2D (ops/conv.py)


def _one_use(t, uses: dict) -> bool:
    return uses.get(t.id, 0) == 1


def _static_nhwc_conv(node) -> bool:
    x, w = node.inputs["x"], node.inputs.get("filters", node.inputs.get("dy"))
    return (not node.stateful and not node.dims and node.attrs["data_format"] == "NHWC"
            and node.attrs["groups"] == 1 and len(x._shape) == 4 and len(w._shape) == 4
            and x.dtype.is_floating and not x.dtype.is_complex)


def _biased(node, conv):
    """The bias when `node` adds a vector over the channels to `conv`'s output, else None."""
    y = conv.outputs[0]
    if node.stateful or node.op not in ("Add", "AddV2", "BiasAdd"):
        return None
    if node.op == "BiasAdd":
        if node.attrs.get("data_format") not in (None, "NHWC") or node.inputs["value"] is not y:
            return None
        bias = node.inputs["bias"]
    else:
        bias = node.inputs["y"] if node.inputs["x"] is y else node.inputs["x"]
        if bias is y:
            return None
    f = y._shape[-1]
    if (len(bias._shape) != 1 or f is None or bias._shape[0] != f or bias.dtype is not y.dtype
            or tuple(node.outputs[0]._shape) != tuple(y._shape)):
        return None
    return bias


def _conv_chains(graph: FuncGraph, uses: dict, consumers: dict) -> dict:
    """id(last node) -> (Conv2D, bias-add node, activation node or None) for each
    convolution whose output only a bias addition reads (and that only an activation)."""
    chains = {}
    for node in graph.nodes:
        if node.op != "Conv2D" or not _static_nhwc_conv(node):
            continue
        y = node.outputs[0]
        if not _one_use(y, uses) or len(consumers.get(y.id, ())) != 1:
            continue
        add = consumers[y.id][0]
        bias = _biased(add, node)
        if bias is None:
            continue
        act = None
        z = add.outputs[0]
        if _one_use(z, uses) and len(consumers.get(z.id, ())) == 1:
            nxt = consumers[z.id][0]
            if nxt.op in _ACTIVATIONS and not nxt.stateful:
                act = nxt
        chains[id(act or add)] = (node, add, bias, act)
    return chains


def _bias_grads(graph: FuncGraph, consumers: dict, made_at: dict, index: dict) -> dict:
    """id(first node) -> (Conv2DBackpropFilter, Sum) where a filter gradient's dy is also
    summed over its images and pixels (the bias gradient), and the filter gradient's
    input is made before the first of the two."""
    pairs = {}
    for node in graph.nodes:
        if node.op != "Conv2DBackpropFilter" or not _static_nhwc_conv(node):
            continue
        dy = node.inputs["dy"]
        for other in consumers.get(dy.id, ()):
            axis = other.attrs.get("axis") if other.op == "Sum" else None
            if (other.stateful or axis is None or other.attrs.get("keepdims")
                    or sorted(a % 4 for a in axis) != [0, 1, 2]
                    or other.inputs["x"] is not dy or other.outputs[0].dtype is not dy.dtype):
                continue
            first = min(index[id(node)], index[id(other)])
            if made_at.get(node.inputs["x"].id, -1) < first:
                pairs[id(graph.nodes[first])] = (node, other)
                break
    return pairs


def _relu_through_pool(graph: FuncGraph, uses: dict, index: dict) -> dict:
    """id(ReluGrad) -> (MaxPoolGrad, MaxPool) for ReluGrad(MaxPoolGrad(y, g), y): the
    pooling gradient puts each g at its window's maximum, where y equals the pooled
    value, so masking by y > 0 after it equals masking g by pooled > 0 before it
    (MaxPoolGrad(y, ReluGrad(g, MaxPool(y)))): a quarter of the elements for 2x2 windows.
    Needs y's MaxPool (with the same windows) made before the ReluGrad."""
    found = {}
    pools: dict = {}
    for node in graph.nodes:
        if node.op == "MaxPool" and not node.stateful:
            pools.setdefault(node.inputs["x"].id, []).append(node)
    for node in graph.nodes:
        if node.op != "ReluGrad" or node.stateful:
            continue
        grad = _node_of(node.inputs["dy"])
        y = node.inputs["y"]
        if (grad is None or grad.op != "MaxPoolGrad" or grad.stateful
                or grad.inputs["x"] is not y or not _one_use(node.inputs["dy"], uses)):
            continue
        for pool in pools.get(y.id, ()):
            if (pool.attrs == grad.attrs and index[id(pool)] < index[id(node)]
                    and pool.outputs[0].dtype is y.dtype):
                found[id(node)] = (grad, pool)
                break
    return found


def fuse_convolutions(graph: FuncGraph, outputs: list, report: Report) -> tuple:
    """Convolution patterns of forward and backward graphs, as TensorFlow's remapper
    fuses them (equal to rounding):
    - Conv2D, + bias (Add/BiasAdd of a channel vector), [Relu/Relu6] -> FusedConv2D, at
      the chain's last node;
    - Conv2DBackpropFilter(x, dy) and Sum(dy, over images and pixels) -> one
      Conv2DBackpropFilterWithBias, at the first of the two;
    - ReluGrad(MaxPoolGrad(y, g), y) -> MaxPoolGrad(y, ReluGrad(g, MaxPool(y))) (exact).
    All in NHWC, with one use of each value a fused chain hides."""
    uses = _uses(graph, outputs)
    consumers: dict = {}
    for n in graph.nodes:
        for v in n.inputs.values():
            for t in (v if type(v) is list else (v,)):
                if isinstance(t, Tensor) and n not in consumers.setdefault(t.id, []):
                    consumers[t.id].append(n)
    index = {id(n): k for k, n in enumerate(graph.nodes)}
    made_at = {o.id: k for k, n in enumerate(graph.nodes) for o in n.outputs}
    chains = _conv_chains(graph, uses, consumers)
    pairs = _bias_grads(graph, consumers, made_at, index)
    relus = _relu_through_pool(graph, uses, index)
    if not (chains or pairs or relus):
        return graph, outputs
    deferred = {id(n) for conv, add, _, act in chains.values() for n in (conv, add, act)
                if n is not None and n is not (act or add)}
    deferred |= {id(grad) for grad, _ in relus.values()}
    later: dict = {}  # id(a member after its fused node) -> its outputs
    for first_id, (filt, total) in pairs.items():
        later[id(total) if id(filt) == first_id else id(filt)] = None
    new, env = start_rebuild(graph)

    def apply(node, ins):
        key = id(node)
        if key in deferred:
            return [None] * len(node.outputs)
        if key in later:
            return later[key]
        if key in chains:
            conv, add, bias, act = chains[key]
            attrs = {k: conv.attrs[k] for k in
                     ("strides", "padding", "dilations", "data_format", "groups")}
            attrs["activation"] = act.op if act is not None else ""
            report.convolutions += 1
            return new.add_op("FusedConv2D", {"x": env[conv.inputs["x"].id],
                                              "filters": env[conv.inputs["filters"].id],
                                              "bias": env[bias.id]},
                              attrs, name=node.name, site=node.site)
        if key in pairs:
            filt, total = pairs[key]
            dw, db = new.add_op("Conv2DBackpropFilterWithBias",
                                {"x": env[filt.inputs["x"].id], "dy": env[filt.inputs["dy"].id]},
                                dict(filt.attrs), name=filt.name, site=filt.site)
            report.convolutions += 1
            later[id(total) if node is filt else id(filt)] = [db] if node is filt else [dw]
            return [dw] if node is filt else [db]
        if key in relus:
            grad, pool = relus[key]
            masked = new.add_op("ReluGrad", {"dy": env[grad.inputs["dy"].id],
                                             "y": env[pool.outputs[0].id]},
                                {}, name=f"{node.name}/pooled", site=node.site)
            report.convolutions += 1
            return new.add_op("MaxPoolGrad", {"x": env[grad.inputs["x"].id], "dy": masked[0]},
                              dict(grad.attrs), name=grad.name, site=grad.site)
        return copy_node(new, node, ins, env)

    env = eval_graph(graph, env, apply)
    return new, finish_rebuild(graph, new, env, outputs, "fusing convolutions")


def _freeze(value):
    """A hashable key of an attribute value for CSE, or raise TypeError."""
    if type(value) is bool or value is None or type(value) is str:
        return value
    if type(value) is int:
        return ("i", value)
    if type(value) is float:
        return ("f", value.hex())  # 0.0 and -0.0 differ; so do 1 and 1.0
    if isinstance(value, (list, tuple)):
        return ("t",) + tuple(_freeze(v) for v in value)
    if isinstance(value, (dict, MappingProxyType)):  # (a node's attributes)
        return ("d",) + tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        if value.size <= 64:
            return ("a", value.dtype.str, value.shape, value.tobytes())
        return ("o", id(value))
    if type(value) is Dim:
        return ("dim", value.tensor.id, _freeze(value.axis))
    if isinstance(value, (DType, np.generic)):
        return ("v", type(value).__name__, str(value))
    return ("o", id(value))  # anything else (a ConcreteFunction): by identity


def _node_of(t) -> object:
    return t._native.node if isinstance(t, Tensor) else None


def constant_value(t):
    """The value of a new-graph tensor whose producer makes a known constant (Const,
    Zeros/Ones with a static shape, ZerosLike/OnesLike of a static shape), else None."""
    node = _node_of(t)
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


def _is_all(t, number) -> bool:
    """Whether `t` is a known constant every element of which equals `number`."""
    node = _node_of(t)
    if node is None:
        return False
    if node.op in ("Zeros", "ZerosLike"):
        return number == 0
    if node.op in ("Ones", "OnesLike"):
        return number == 1
    if node.op == "Const":
        value = node.attrs["value"]
        return value.size > 0 and bool(np.all(value == number))
    if node.op == "BroadcastTo":  # a constant spread out (a gradient seed of ones)
        return _is_all(node.inputs["x"], number)
    return False


def _same(t, like) -> bool:
    """Whether tensor `t` can stand for an op's output `like`: same dtype, same static
    shape (no broadcasting to undo, no unknown dims to trust)."""
    return (isinstance(t, Tensor) and t.dtype is like.dtype and None not in t._shape
            and tuple(t._shape) == tuple(like._shape))


# ------------------------------------------------------------------ simplification rules
# rule(node, inputs, out) -> a tensor of the new graph that the node's one output equals,
# or None; `node` is the original node, `out` the spec (`_shape`, `dtype`) its output has
# in the new graph (more static than the original's in a specialized graph).

def _mul(node, ins, out):
    x, y = ins["x"], ins["y"]
    if _is_all(y, 1) and _same(x, out):
        return x
    if _is_all(x, 1) and _same(y, out):
        return y
    return None


def _add(node, ins, out):
    x, y = ins["x"], ins["y"]
    if _is_all(y, 0) and _same(x, out):
        return x
    if _is_all(x, 0) and _same(y, out):
        return y
    return None


def _sub(node, ins, out):
    x = ins["x"]
    return x if _is_all(ins["y"], 0) and _same(x, out) else None


def _div(node, ins, out):
    x = ins["x"]
    return x if _is_all(ins["y"], 1) and _same(x, out) else None


def _neg(node, ins, out):
    inner = _node_of(ins["x"])
    if inner is not None and inner.op == "Neg":
        return inner.inputs["x"]
    return None


def _same_as_input(node, ins, out):
    """Cast to its own dtype, SumTo / BroadcastTo / Reshape to its own shape."""
    x = ins["x"]
    return x if _same(x, out) else None


def _passthrough(node, ins, out):
    return ins["x"]


def _transpose(node, ins, out):
    perm = tuple(node.attrs["perm"])
    if perm == tuple(range(len(perm))):
        return ins["x"]
    return None


SIMPLIFY = {"Mul": _mul, "Add": _add, "Sub": _sub, "RealDiv": _div, "Neg": _neg,
            "Cast": _same_as_input, "SumTo": _same_as_input, "BroadcastTo": _same_as_input,
            "Reshape": _same_as_input, "Transpose": _transpose}
# Removed by "dependency_optimization" (as TensorFlow's dependency optimizer prunes
# Identity): in a graph that runs, StopGradient is the identity too.
IDENTITIES = {"Identity": _passthrough, "StopGradient": _passthrough}


def _merge(node, ins, attrs):
    """Rewrites into another node: transpose of transpose, reshape of reshape. Returns
    (op, inputs, attrs) to emit instead, or None."""
    inner = _node_of(ins.get("x"))
    if inner is None or inner.op != node.op or len(inner.outputs) != 1:
        return None
    if node.op == "Transpose":
        p1, p2 = tuple(inner.attrs["perm"]), tuple(node.attrs["perm"])
        return "Transpose", {"x": inner.inputs["x"]}, {"perm": tuple(p1[i] for i in p2)}
    if node.op == "Reshape" and not _dims_in(inner.attrs):
        return "Reshape", {"x": inner.inputs["x"]}, attrs  # (its dims on the new graph)
    return None


ELEMENTWISE_BINARY = ("Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum")


def _scalar_spread(t):
    """The scalar that `t` spreads out, when `t` is a BroadcastTo of a 0-d tensor."""
    inner = _node_of(t)
    if inner is not None and inner.op == "BroadcastTo" and inner.inputs["x"]._shape == ():
        return inner.inputs["x"]
    return None


def _unspread(node, ins, out):
    """Rewrites of a scalar spread out (the seeds of backward graphs: `1/n` broadcast to
    the batch, then expanded, then multiplied): an elementwise op whose other operand has
    the output's shape takes the scalar itself, and a reshape or expand_dims of the spread
    spreads it to the new shape at once. (op, inputs, attrs) or None."""
    if node.op in ELEMENTWISE_BINARY:
        for name, other in (("x", "y"), ("y", "x")):
            scalar = _scalar_spread(ins[name])
            if scalar is not None and _same(ins[other], out) and scalar.dtype is out.dtype:
                return node.op, {**ins, name: scalar}, node.attrs
    elif node.op in ("ExpandDims", "Reshape") and None not in out._shape:
        scalar = _scalar_spread(ins["x"])
        if scalar is not None:
            return "BroadcastTo", {"x": scalar}, {"shape": tuple(out._shape)}
    return None


class _Spec:
    __slots__ = ("_shape", "dtype")

    def __init__(self, shape: tuple, dtype):
        self._shape, self.dtype = shape, dtype


class _Builder:
    """The `apply` of an optimizing rebuild: emits nodes into `graph`."""

    def __init__(self, graph: FuncGraph, passes: tuple, report: Report, env: dict):
        self.graph, self.passes, self.report, self.env = graph, passes, report, env
        self.seen: dict = {}  # CSE key -> outputs
        self.backend = None

    @staticmethod
    def _spec(op: str, ins: dict, attrs: dict) -> "_Spec":
        """The node's output as the new graph will have it (its shape rule on the new
        inputs)."""
        (shape, dtype), *_ = _reg.SHAPES[op](*shape_args(ins, _rule_attrs(attrs)))
        return _Spec(tuple(shape), dtype)

    def apply(self, node, ins: dict):
        attrs = remap_dims(node.attrs, self.env)
        pure = not node.stateful and not late_attrs(node.attrs) and node.op != "Const"
        op = node.op
        if pure and len(node.outputs) == 1:
            rule = None
            if "simplify" in self.passes:
                rule = SIMPLIFY.get(op)
            if rule is None and "identity" in self.passes:
                rule = IDENTITIES.get(op)
            found = rule(node, ins, self._spec(op, ins, attrs)) if rule is not None else None
            if found is not None:
                self.report.simplified += 1
                return found
            if "simplify" in self.passes and (op in ELEMENTWISE_BINARY or op in (
                    "ExpandDims", "Reshape")) and not _dims_in(attrs):
                spread = _unspread(node, ins, self._spec(op, ins, attrs))
                if spread is not None:
                    self.report.simplified += 1
                    op, ins, attrs = spread
            if "simplify" in self.passes and op in ("Transpose", "Reshape"):
                merged = _merge(node, ins, attrs)
                if merged is not None:
                    self.report.simplified += 1
                    op, ins, attrs = merged
                    if (op == "Transpose" and attrs["perm"] == tuple(range(len(attrs["perm"])))
                            or op == "Reshape" and _same(ins["x"], node.outputs[0])):
                        return ins["x"]  # the two cancel
        if pure and "fold" in self.passes:
            folded = self._fold(node, op, ins, attrs)
            if folded is not None:
                return folded
        key = None
        if "cse" in self.passes and (pure or op == "Const"):
            try:
                key = (op, _freeze([(k, [m.id if isinstance(m, (Tensor, Variable)) else
                                          _freeze(m) for m in v] if isinstance(v, list)
                                     else (v.id if isinstance(v, (Tensor, Variable))
                                           else _freeze(v)))
                                    for k, v in ins.items()]), _freeze(attrs))
            except TypeError:
                key = None
            if key is not None and key in self.seen:
                self.report.deduplicated += 1
                outs = self.seen[key]
                return outs if len(outs) != 1 else outs[0]
        outs = self._emit(node, op, ins, attrs)
        if key is not None:
            self.seen[key] = outs
        return outs if len(outs) != 1 else outs[0]

    def _emit(self, node, op: str, ins: dict, attrs: dict) -> list:
        # errors and profiles name the node the user's graph has; effects stay per node
        # (calls and loops with effects are stateful by their attributes)
        name = node.name if op == node.op else None
        if op == "Const":
            return [self.graph.const_node(attrs["value"], attrs["dtype"], name or "Const",
                                          node.site)]
        return self.graph.add_op(op, ins, attrs, name=name, site=node.site,
                                 stateful=node.stateful)

    def _fold(self, node, op: str, ins: dict, attrs: dict):
        """Const nodes for a pure node whose tensor inputs are all known constants, or
        whose result the static shapes decide (Shape, Size of a fully known shape)."""
        if op in ("Shape", "Size") and None not in ins["x"]._shape:
            shape = tuple(ins["x"]._shape)
            value = np.asarray(shape if op == "Shape" else math.prod(shape),
                               attrs["out_type"].as_numpy_dtype)
            self.report.folded += 1
            return self.graph.const_node(value, attrs["out_type"], f"{node.name}/folded",
                                         node.site)
        if op in ("Zeros", "Ones") or _dims_in(attrs) or not ins:
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
        if any(None in o._shape or int(np.prod(o._shape)) > FOLD_LIMIT
               for o in node.outputs):
            return None
        try:
            with no_recording():
                result = run_kernel(op, values, attrs)
        except Exception:  # noqa: BLE001 - it fails at run time instead, with its message
            return None
        results = result if isinstance(result, list) else [result]
        if len(results) != len(node.outputs):
            return None
        # (a view's own copy; the array API's arrays have no `base` and are never views)
        outs = [self.graph.const_node(r._native.copy() if getattr(r._native, "base", None)
                                      is not None else r._native, r.dtype,
                                      f"{node.name}/folded" + (f"_{i}" if i else ""), node.site)
                for i, r in enumerate(results)]
        self.report.folded += 1
        return outs if len(outs) != 1 else outs[0]
