"""FuncGraph: the IR of a traced function — symbolic tensors, nodes, inputs, captures.

While a graph is being traced it is the execution context's `graph`: `run_kernel` hands
every op to `trace_op`, which runs the op's shape rule instead of a kernel and appends a
node. Tensors from outside (eager tensors, or symbolic tensors of an enclosing graph) are
captured: each gets a placeholder of this graph, fed at call time. Variables stay
resources of the nodes that read or assign them, read at run time.
"""
from __future__ import annotations

import itertools
import math
from types import MappingProxyType
from typing import Any

import numpy as np

from .._core import registry as _reg
from .._core.context import ctx, hooks
from .._core.convert import convert_to_tensor
from .._core.dispatch import shape_args, watch_variables, with_resources
from .._core.dtypes import DType, from_numpy
from .._core.errors import describe, InvalidArgumentError, user_site
from .._core.registry import LateAttr
from .._core.shape import Dim, known_dims
from .._core.tensor import _ids, pinned_ids, SYMBOLIC, Tensor, TensorShape, traced_constants
from .._core.variable import Variable

_new_tensor = Tensor.__new__
_graph_ids = itertools.count(1)


class SymbolicInfo:
    """What a symbolic tensor knows of its origin (kept in its `_native` slot, which a
    symbolic tensor has no use for): its graph, producing node and output index."""

    __slots__ = ("graph", "node", "index", "name")

    def __init__(self, graph, node, index, name):
        self.graph, self.node, self.index, self.name = graph, node, index, name


def _dims_in(attrs: dict) -> list:
    found = []
    for v in attrs.values():
        if type(v) is Dim:
            found.append(v)
        elif type(v) is tuple or type(v) is list:
            found.extend(d for d in v if type(d) is Dim)
    return found


def _rule_attrs(attrs: dict) -> dict:
    """Attributes as shape rules see them: `Dim`s are unknown (None) dimensions."""
    if not _dims_in(attrs):
        return attrs
    return {k: (known_dims(v) if type(v) is tuple or type(v) is list else
                (None if type(v) is Dim else v)) for k, v in attrs.items()}


def late_attrs(attrs: dict) -> bool:
    return any(isinstance(v, LateAttr) for v in attrs.values())


def attr_resolver(attrs: dict, sources: list):
    """`resolve(natives) -> attrs` for a node whose attributes are decided when the graph
    runs: `Dim`s (sizes of its `dims` tensors, given as native arrays) and
    `LateAttr`s (drawn anew each run, e.g. random seeds)."""
    late = [k for k, v in attrs.items() if isinstance(v, LateAttr)]
    by_dims = dim_resolver(attrs, sources) if sources else None

    def resolve(natives: list) -> dict:
        out = by_dims(natives) if by_dims is not None else dict(attrs)
        for k in late:
            out[k] = attrs[k].resolve()
        return out
    return resolve


def dim_resolver(attrs: dict, sources: list):
    """`resolve(natives) -> attrs` for a node: each `Dim` replaced by the run-time size of
    its tensor (one of the node's `dims`, given as native arrays); a Dim over a tuple
    of axes is the product of their sizes."""
    def index(d):
        return next(i for i, s in enumerate(sources) if s is d.tensor)
    plan = {}  # attr -> (source, axis) for a Dim, or [(position, source, axis)] in a tuple
    for k, v in attrs.items():
        if type(v) is Dim:
            plan[k] = (index(v), v.axis)
        elif type(v) is tuple or type(v) is list:
            plan[k] = [(i, index(d), d.axis) for i, d in enumerate(v) if type(d) is Dim]

    def size(shape, axis):
        if type(axis) is int:
            return shape[axis]
        return math.prod(shape[a] for a in axis)

    def resolve(natives: list) -> dict:
        out = dict(attrs)
        for k, p in plan.items():
            if type(p) is tuple:
                out[k] = size(natives[p[0]].shape, p[1])
            elif p:
                v = list(attrs[k])
                for i, src, axis in p:
                    v[i] = size(natives[src].shape, axis)
                out[k] = tuple(v)
        return out
    return resolve


def live_nodes(nodes: list, outputs: list) -> list:
    """The nodes a program runs, in order: those the outputs depend on, and every stateful
    node (assignments, random draws, prints) with what it depends on; the rest is dead code
    (TensorFlow prunes it too, so a failing op whose result is unused does not run)."""
    needed = {t.id for t in outputs if isinstance(t, Tensor)}
    live = []
    for node in reversed(nodes):
        if node.op == "Placeholder":
            continue
        if node.stateful or not node.outputs or any(o.id in needed for o in node.outputs):
            live.append(node)
            needed.update(m.id for m in node.tensors())
    live.reverse()
    return live


def graph_of(t: Tensor):
    """The graph a symbolic tensor belongs to (None for an eager tensor)."""
    return t._native.graph if t._buf == SYMBOLIC else None


def _debug_site() -> tuple:
    """("forward", user line) for an op the user's code called; ("backward rule of Op",
    Op's line) for one a VJP or JVP rule called while a gradient was being traced."""
    if ctx.rule_of:
        op_name, site, kind = ctx.rule_of[-1]
        return (f"{kind} rule of {op_name}", site)
    return ("forward", user_site())


class Node:
    """One op of a graph, an immutable record: `op` (the kernel name), `inputs` by name
    (symbolic tensors, lists of them, or variables), static `attrs`, symbolic `outputs`,
    `dims` (the tensors whose run-time sizes resolve the `Dim`s in `attrs`), `stateful`
    (run for its effects even when no output is used) and `site` (what the node computes
    and the user's line it is blamed on, named by run-time errors and debug checks).
    `.name`, `.op`, `.input` follow TensorFlow's NodeDef spelling.

    A pass never edits a node: it builds a new graph (`interpret.eval_graph`)."""

    __slots__ = ("name", "op", "inputs", "attrs", "outputs", "stateful", "site", "dims")

    def __init__(self, name: str, op: str, inputs: dict, attrs: dict, stateful: bool,
                 site: tuple | None = None, dims: tuple = ()):
        init = object.__setattr__
        init(self, "name", name)
        init(self, "op", op)
        init(self, "inputs", MappingProxyType(dict(inputs)))
        init(self, "attrs", MappingProxyType(dict(attrs)))
        init(self, "outputs", ())
        init(self, "stateful", stateful)
        init(self, "site", _debug_site() if site is None else site)
        init(self, "dims", tuple(dims))

    def __setattr__(self, key, value):
        raise AttributeError(f"node {self.name} is immutable: build a new graph instead "
                             f"of setting .{key}")

    def _bind(self, outputs: list) -> None:
        """Attach the output tensors (made after the node, since they point back to it)."""
        if self.outputs:
            raise AttributeError(f"node {self.name} already has its outputs")
        object.__setattr__(self, "outputs", tuple(outputs))

    def tensors(self) -> list:
        """Every tensor the node reads: its inputs' tensors, then its `dims`."""
        found = []
        for v in self.inputs.values():
            for m in (v if type(v) is list or type(v) is tuple else (v,)):
                if isinstance(m, Tensor):
                    found.append(m)
        found.extend(self.dims)
        return found

    @property
    def type(self) -> str:
        return self.op

    @property
    def input(self) -> list[str]:
        """Names of the tensors (and variables) this node reads, as in a NodeDef."""
        names = []
        for v in self.inputs.values():
            for m in (v if isinstance(v, (list, tuple)) else (v,)):
                names.append(m.name if isinstance(m, (Tensor, Variable)) else repr(m))
        return names

    def __repr__(self) -> str:
        return f"<Node {self.name}: {self.op}>"


class GraphDef:
    """`graph.as_graph_def()`: the nodes as TensorFlow code reads them (`.node`); printed,
    the protobuf text form TF shows (`node { name: "Mul" op: "Mul" input: "x" ... }`, one
    field a line). Example: `print(cf.graph.as_graph_def())`."""

    def __init__(self, nodes):
        self.node = list(nodes)

    def __str__(self) -> str:
        lines = []
        for n in self.node:
            lines.append("node {")
            lines.append(f"  name: {_quoted(n.name)}")
            lines.append(f"  op: {_quoted(n.op)}")
            # TF writes output 0 of a node by the node's name alone
            lines += [f"  input: {_quoted(i[:-2] if i.endswith(':0') else i)}"
                      for i in n.input]
            attrs = dict(n.attrs)
            if n.op != "Placeholder" and n.outputs and "T" not in attrs:
                attrs = {"T": n.outputs[0].dtype, **attrs}  # TF's element-type attribute
            for key, value in attrs.items():
                lines += ["  attr {", f"    key: {_quoted(str(key))}", "    value {"]
                lines += ["      " + v for v in _attr_text(value)]
                lines += ["    }", "  }"]
            lines.append("}")
        return "\n".join(lines) + ("\n" if lines else "")

    __repr__ = __str__


def _attr_repr(value) -> str:
    """An attribute as a printed graph shows it: an array value briefly (a constant)."""
    if isinstance(value, np.ndarray):
        if value.size <= 6:
            return repr(value.tolist())
        return f"<{value.dtype}{list(value.shape)}>"
    return repr(value)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dtype_enum(d: DType) -> str:
    """TF's DataType enum name of `d` (float32 -> DT_FLOAT)."""
    special = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}
    return special.get(d.name, "DT_" + d.name.upper())


def _attr_text(value) -> list[str]:
    """An AttrValue's text lines: type, shape, b, i, f, s, func, or a list of them."""
    if isinstance(value, DType):
        return [f"type: {_dtype_enum(value)}"]
    if isinstance(value, TensorShape):
        if value.rank is None:
            return ["shape {", "  unknown_rank: true", "}"]
        dims = [f"  dim {{\n    size: {-1 if d is None else d}\n  }}" for d in value]
        return ["shape {", *"\n".join(dims).split("\n"), "}"] if dims else ["shape {", "}"]
    if isinstance(value, (list, tuple)):
        items = [line for v in value for line in _attr_text(v)]
        return ["list {", *("  " + i for i in items), "}"]
    if isinstance(value, np.ndarray):  # a Const node's value: TF's TensorProto text
        lines = ["tensor {", f"  dtype: {_dtype_enum(from_numpy(value.dtype))}",
                 "  tensor_shape {"]
        for d in value.shape:
            lines += ["    dim {", f"      size: {d}", "    }"]
        lines.append("  }")
        lines += [f"  val: {v!r}" for v in value.reshape(-1)[:8].tolist()]
        return lines + ["}"]
    if isinstance(value, bool):
        return [f"b: {'true' if value else 'false'}"]
    if isinstance(value, (int, np.integer)):
        return [f"i: {int(value)}"]
    if isinstance(value, (float, np.floating)):
        return [f"f: {float(value)!r}"]
    if isinstance(value, str):
        return [f"s: {_quoted(value)}"]
    if hasattr(value, "graph") and hasattr(value, "structured_outputs"):  # a ConcreteFunction
        return ["func {", f"  name: {_quoted(value.name)}", "}"]
    return [f"s: {_quoted(repr(value))}"]


class FuncGraph:
    """A traced function's graph.

    Example:
        >>> cf = tf.function(lambda x: tf.sin(x) * 2.0).get_concrete_function(
        ...     tf.TensorSpec([None], tf.float32))
        >>> [n.op for n in cf.graph.get_operations()]
        ['Placeholder', 'Sin', 'Mul']
    """

    def __init__(self, name: str = "graph"):
        self.name = name
        self.id = next(_graph_ids)
        self.nodes: list[Node] = []
        self.inputs: list[Tensor] = []     # placeholders: arguments, then captures
        self.outputs: list = []
        self.captures: list[tuple] = []    # (outside tensor, placeholder)
        self._captured: dict[int, Tensor] = {}
        self._constants: dict[int, Tensor] = {}   # eager tensor id -> Const node output
        self.variables: dict[int, Variable] = {}  # variables read or assigned, in order
        self._counts: dict[str, int] = {}
        self._names: set[str] = set()
        self.created_variables: list = []  # variables created while this graph was traced
        self.structured_outputs: Any = None
        self.frozen = False  # set once a ConcreteFunction owns it: no node is added after

    def _building(self) -> None:
        if self.frozen:
            raise RuntimeError(f"graph {self.name} is finished (a ConcreteFunction runs it); "
                               "it cannot be extended: trace a new function instead")

    # ------------------------------------------------------------------ building
    def _node_name(self, base: str, exact: bool = False) -> str:
        """A name no node of this graph has: `base` itself when `exact` and free (a
        rebuilt graph keeps the names of the graph it came from), else `base_<n>`."""
        if exact and base not in self._names:
            self._names.add(base)
            return base
        n = self._counts.get(base, 0)
        while True:
            name = base if n == 0 else f"{base}_{n}"
            n += 1
            if name not in self._names:
                break
        self._counts[base] = n
        self._names.add(name)
        return name

    def _symbolic(self, shape, dtype, node: Node | None, index: int, name: str) -> Tensor:
        t = _new_tensor(Tensor)
        t._buf = SYMBOLIC
        t._nb = None
        t._native = SymbolicInfo(self, node, index, name)
        t._shape = tuple(shape)
        t.dtype = dtype
        t.id = next(_ids)
        t._kept = True
        return t

    def _append(self, node: Node, specs) -> list[Tensor]:
        """Add `node` with an output tensor per (shape, dtype) of `specs`."""
        outs = [self._symbolic(shape, dtype, node, i, f"{node.name}:{i}")
                for i, (shape, dtype) in enumerate(specs)]
        node._bind(outs)
        self.nodes.append(node)
        return outs

    def placeholder(self, shape, dtype, name: str | None = None) -> Tensor:
        """A new graph input of `shape` (None for an unknown dimension) and `dtype`."""
        self._building()
        node = Node(self._node_name(name or "Placeholder"), "Placeholder", {},
                    {"shape": TensorShape(shape), "dtype": dtype}, False)
        t = self._append(node, [(shape, dtype)])[0]
        self.inputs.append(t)
        return t

    def capture(self, t: Tensor) -> Tensor:
        """The placeholder standing for `t` (an eager tensor or an enclosing graph's
        symbolic tensor) in this graph, made on first use."""
        ph = self._captured.get(t.id)
        if ph is None:
            ph = self.placeholder(t._shape, t.dtype, "Capture")
            self._captured[t.id] = ph
            self.captures.append((t, ph))
        return ph

    def constant(self, t: Tensor) -> Tensor:
        """The output of a Const node holding eager tensor `t`'s value (one per tensor)."""
        out = self._constants.get(t.id)
        if out is None:
            out = self._constants[t.id] = self.const_node(t._native, t.dtype)
        return out

    def const_node(self, value, dtype: DType, name: str = "Const",
                   site: tuple | None = None) -> Tensor:
        """A new Const node holding native array `value`; returns its output. A `name`
        other than "Const" is kept as it is where free (a rebuilt graph's node)."""
        self._building()
        node = Node(self._node_name(name, exact=name != "Const"), "Const", {},
                    {"value": value, "dtype": dtype}, False, site)
        return self._append(node, [(tuple(value.shape), dtype)])[0]

    def owns(self, t: Tensor) -> bool:
        return t._buf == SYMBOLIC and t._native.graph is self

    def _operand(self, v):
        """An op input as this graph sees it (a tensor of this graph, a Const node for a
        value written in the traced code, a placeholder capturing an outside tensor, or a
        variable)."""
        if type(v) is Tensor:
            if self.owns(v):
                return v
            if v.id in pinned_ids or v.id in traced_constants:
                return self.constant(v)
            return self.capture(v)
        if isinstance(v, Variable):
            self.variables.setdefault(v.id, v)
            return v
        if isinstance(v, Tensor):  # a Tensor subclass: treat like a tensor
            return v if self.owns(v) else self.capture(v)
        # (an IndexedSlices densifies with ops of this graph: its result is no capture)
        t = convert_to_tensor(v)
        return t if self.owns(t) else self._operand(t)

    def add_op(self, op_name: str, inputs: dict, attrs: dict, *, name: str | None = None,
               site: tuple | None = None, stateful: bool | None = None) -> list[Tensor]:
        """Append a node for op `op_name`; its outputs come from the op's shape rule.
        A rebuilding pass gives the old node's `name`, `site` and `stateful`; otherwise
        the node is stateful when its op is, or when `attrs["stateful"]` says so (a call
        or loop whose body has effects)."""
        self._building()
        op = _reg.OPS.get(op_name)
        rule = _reg.SHAPES.get(op_name)
        if rule is None:
            raise InvalidArgumentError(
                f"{op_name}: the op has no shape rule, so it cannot be traced into a graph; "
                "register one with define_op(..., shape=...) or call it outside tf.function")
        operands = {}
        for k, v in inputs.items():
            if type(v) is list or type(v) is tuple:
                operands[k] = [self._operand(m) for m in v]
            else:
                operands[k] = self._operand(v)
        specs = rule(*shape_args(operands, _rule_attrs(attrs)))
        dims: list = []
        if _dims_in(attrs):  # unknown dims in attributes: resolved at run time
            attrs, dims = self._retarget(attrs)
        if stateful is None:
            stateful = bool(op is not None and op.stateful) or attrs.get("stateful") is True
        node = Node(self._node_name(name or op_name, exact=name is not None), op_name,
                    operands, attrs, stateful, site, dims)
        return self._append(node, specs)

    def _retarget(self, attrs: dict) -> tuple[dict, list]:
        """Attributes whose Dims refer to this graph's tensors (captured if from outside),
        and those tensors, the node's `dims`."""
        sources: list = []

        def local(d):
            src = self._operand(d.tensor)
            if all(src is not s for s in sources):
                sources.append(src)
            return Dim(src, d.axis)
        out = {}
        for k, v in attrs.items():
            if type(v) is Dim:
                out[k] = local(v)
            elif type(v) is tuple or type(v) is list:
                out[k] = tuple(local(d) if type(d) is Dim else d for d in v)
            else:
                out[k] = v
        return out, sources

    def seal(self, outputs: list | None = None, inputs: list | None = None,
             captures: list | None = None, prune: bool = False) -> FuncGraph:
        """Finish the graph (no node is added after): its `outputs`; optionally a new
        order of its `inputs` and the (outside tensor, placeholder) pairs that remain
        `captures` (the other placeholders are then fed by the caller); with `prune`,
        the nodes no output needs and that have no effect dropped. Passes `check()` and
        returns the graph. Every change of a graph's interface goes through here."""
        self._building()
        if inputs is not None:
            if {t.id for t in inputs} != {t.id for t in self.inputs}:
                raise InvalidArgumentError(f"graph {self.name}: a new input order must "
                                           "hold the same placeholders")
            self.inputs = list(inputs)
        if captures is not None:
            self.captures = list(captures)
            self._captured = {ext.id: ph for ext, ph in self.captures}
        if outputs is not None:
            self.outputs = list(outputs)
        if prune:
            self.nodes = [n for n in self.nodes if n.op == "Placeholder"] + live_nodes(
                self.nodes, [o for o in self.outputs if isinstance(o, Tensor)])
        self.check()
        self.frozen = True
        return self

    # ------------------------------------------------------------------ reading
    def get_operations(self) -> list[Node]:
        """The nodes in the order they were traced (a topological order)."""
        return list(self.nodes)

    def as_graph_def(self) -> GraphDef:
        return GraphDef(self.nodes)

    def check(self) -> None:
        """Verify the IR: every node name and tensor is assigned once; every tensor a node
        reads (inputs and dims) is a placeholder among `inputs` or made by an earlier
        node; the outputs are bound; every node's shape rule, re-run on its inputs, still
        agrees with its outputs' dtypes and shapes (None dims match anything). Raises
        naming the node otherwise."""
        bound: set = set()
        names: set = set()
        inputs = {t.id for t in self.inputs}

        def fail(node, what):
            raise InvalidArgumentError(f"graph {self.name}: node {node.name} ({node.op}) "
                                       f"{what}")
        for node in self.nodes:
            if node.name in names:
                fail(node, "has a name another node has")
            names.add(node.name)
            for m in node.tensors():
                if m.id not in bound:
                    fail(node, f"reads {m.name}, which no earlier node makes")
            for o in node.outputs:
                if o.id in bound:
                    fail(node, f"assigns {o.name} a second time")
                bound.add(o.id)
            if node.op == "Placeholder":
                if node.outputs[0].id not in inputs:
                    fail(node, "is a placeholder that is not among the graph's inputs")
                continue
            specs = _reg.SHAPES[node.op](*shape_args(node.inputs, _rule_attrs(node.attrs)))
            if len(specs) != len(node.outputs):
                fail(node, f"has {len(node.outputs)} outputs, its rule {len(specs)}")
            for (shape, dtype), out in zip(specs, node.outputs):
                if dtype is not out.dtype or not TensorShape(shape).is_compatible_with(
                        out._shape):
                    fail(node, f"output {describe(out)} does not match its shape rule "
                               f"({dtype.name}{list(shape)})")
        for t in self.inputs:
            if t.id not in bound:
                raise InvalidArgumentError(f"graph {self.name}: input {t.name} has no "
                                           "placeholder node")
        for t in self.outputs:
            if isinstance(t, Tensor) and t.id not in bound:
                raise InvalidArgumentError(f"graph {self.name}: output {t.name} is not "
                                           "made by any node")

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text (nodes as boxes, edges labelled by tensor)."""
        lines = [f'digraph "{self.name}" {{', "  rankdir=LR;"]
        producer = {}
        for node in self.nodes:
            shape = "ellipse" if node.op == "Placeholder" else "box"
            lines.append(f'  "{node.name}" [label="{node.name}\\n{node.op}", shape={shape}];')
            for o in node.outputs:
                producer[o.id] = node.name
        for node in self.nodes:
            for v in node.inputs.values():
                for m in (v if isinstance(v, (list, tuple)) else (v,)):
                    if isinstance(m, Variable):
                        lines.append(f'  "{m.name}" [shape=cylinder];')
                        lines.append(f'  "{m.name}" -> "{node.name}";')
                    elif m.id in producer:
                        lines.append(f'  "{producer[m.id]}" -> "{node.name}" '
                                     f'[label="{m.dtype.name}{list(m._shape)}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        lines = [f"graph {self.name}("
                 + ", ".join(f"{t.name}: {describe(t)}" for t in self.inputs) + "):"]
        for node in self.nodes:
            if node.op == "Placeholder":
                continue
            args = []
            for k, v in node.inputs.items():
                vs = v if isinstance(v, (list, tuple)) else [v]
                names = ", ".join(m.name for m in vs)
                args.append(f"{k}=[{names}]" if isinstance(v, (list, tuple)) else
                            f"{k}={names}")
            args += [f"{k}={_attr_repr(v)}" for k, v in node.attrs.items()]
            outs = ", ".join(f"{o.name}: {describe(o)}" for o in node.outputs) or "()"
            lines.append(f"  {outs} = {node.op}({', '.join(args)})")
        outs = ", ".join(o.name if isinstance(o, Tensor) else repr(o) for o in self.outputs)
        lines.append(f"  return {outs}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- the trace hook


class tracing:
    """`with tracing(graph):` ops build `graph` instead of running; the tapes,
    accumulators and variable watchers outside are not seen inside (a tape inside the
    traced function still records, symbolically)."""

    def __init__(self, graph: FuncGraph):
        self.graph = graph

    def __enter__(self) -> FuncGraph:
        c = ctx
        self.saved = (c.graph, c.tapes, c.accs, c.watchers)
        c.graph, c.tapes, c.accs, c.watchers = self.graph, [], [], []
        c.refresh()
        return self.graph

    def __exit__(self, *exc):
        c = ctx
        c.graph, c.tapes, c.accs, c.watchers = self.saved
        c.refresh()
        return False



def trace_op(name: str, inputs: dict, attrs: dict):
    """dispatch's trace hook: an op called while `ctx.graph` is being built."""
    graph = ctx.graph
    op = _reg.OPS.get(name)
    impl = _reg.COMPOSITES.get(name)
    if impl is not None and not (op is not None and op.stateful):
        return _trace_composite(graph, op, impl, inputs, attrs)
    outs = graph.add_op(name, inputs, attrs)
    _notify(name, inputs, graph.nodes[-1], outs)
    if len(outs) == 1 and not (op is not None and op.list_output):
        return outs[0]
    return outs


def _trace_composite(graph: FuncGraph, op, impl, inputs: dict, attrs: dict):
    """A pure composite's own ops become nodes (traced through its implementation). One
    that has a graph form (a shape rule: custom_gradient, recompute_grad) also gets a node
    of its own passing those results on, recorded with the composite's VJP rule: gradients
    then follow the composite's rule, not its inner ops (its "values" input is not one of
    the op's differentiable inputs)."""
    with watch_variables() as seen:
        result = impl(inputs, attrs)
    if op is None or op.name not in _reg.SHAPES:
        return result
    inputs = with_resources(op, inputs, seen)
    values = result if isinstance(result, list) else [result]
    outs = graph.add_op(op.name, dict(inputs, values=values), attrs)
    _notify(op.name, inputs, graph.nodes[-1], outs)
    return outs


def _notify(name: str, inputs: dict, node: Node, outs: list) -> None:
    """Tapes and accumulators inside the traced function see the op symbolically, with
    the caller's tensors as inputs (a tape watching an enclosing graph's tensor, or an
    eager one, must find it among the inputs, not the placeholder capturing it)."""
    c = ctx
    if not (c.tapes or c.watchers or c.accs):
        return
    seen = {}
    for k, v in node.inputs.items():
        given = inputs.get(k)
        if isinstance(given, (Tensor, Variable)) or (
                isinstance(given, (list, tuple)) and all(isinstance(m, (Tensor, Variable))
                                                         for m in given)):
            seen[k] = list(given) if isinstance(given, tuple) else given
        else:
            seen[k] = v
    if c.tapes or c.watchers:
        hooks.record(name, seen, node.attrs, outs)
    if c.accs:
        hooks.jvp(name, seen, node.attrs, outs)


hooks.trace = trace_op
