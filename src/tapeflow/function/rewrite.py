"""One rewrite engine for graphs: rules are data, `pattern -> replacement`, applied by
`graph_rewrite` to a fixed point (tinygrad's PatternMatcher / graph_rewrite are the model).

A `Pat` describes a node and, through `src`, the nodes that make its inputs: an op name
(or a set of names, or a predicate on the name), predicates on the node (`where`, which
sees attributes, dtypes and static shapes) or on the tensor (`value`), "read only once"
(`once`), and a `name` under which the matched tensor is captured (a name captured twice
must be the same tensor both times). A `PatternMatcher` holds `(pattern, replacement)`
rules indexed by the root's op; a replacement `fn(rw, node, **captures)` returns the
tensor(s) the node equals, built with `rw.emit`, or None to decline.

`graph_rewrite` rebuilds a graph node by node (interpret.py's start_rebuild / eval_graph /
finish_rebuild, so the result is checked). Each node is offered to the rules with its
inputs already rewritten (bottom-up), and every node a replacement emits is offered in
turn, so when the walk ends no rule matches any node: the fixed point of local rules in
one walk. Nodes no rule replaces are hash-consed (a pure node equal to an earlier one
reuses its outputs: common-subexpression elimination). What a replacement leaves unused
is dropped when the graph is sealed.

Example (a rule that removes `x * 1`):
    >>> one = Pat(value=lambda t: is_all(t, 1))
    >>> pm = PatternMatcher([(Pat("Mul", src={"x": Pat(name="x"), "y": one},
    ...                           commute=True), lambda rw, node, x: x)])
    >>> new, outs = graph_rewrite(graph, outputs, pm)
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable

import numpy as np

from .._core import registry as _reg
from .._core.context import ctx
from .._core.dispatch import shape_args
from .._core.dtypes import DType
from .._core.shape import Dim
from .._core.tensor import Tensor
from .._core.variable import Variable
from .graph import _dims_in, _rule_attrs, FuncGraph, late_attrs, live_nodes
from .interpret import eval_graph, finish_rebuild, remap_dims, start_rebuild

_EMPTY: dict = {}


def node_of(t):
    """The node of the graph being built that makes tensor `t` (None for a variable or a
    non-tensor)."""
    return t._native.node if isinstance(t, Tensor) else None


class Candidate:
    """A node offered to the rules before it exists in the new graph: its op, inputs (new
    graph tensors), attributes and effects; `source` is the node of the graph rewritten it
    stands for (None for one a replacement emits). `out` is its (first) output's spec as
    the new graph would have it (shape rule on the new inputs), computed when asked."""

    __slots__ = ("op", "inputs", "attrs", "stateful", "name", "site", "source", "_out")

    def __init__(self, op: str, inputs: dict, attrs: dict, stateful: bool, name, site,
                 source=None):
        self.op, self.inputs, self.attrs, self.stateful = op, inputs, attrs, stateful
        self.name, self.site, self.source, self._out = name, site, source, None

    @property
    def dims(self) -> list:
        return _dims_in(self.attrs)

    @property
    def out(self) -> "Spec":
        if self._out is None:
            (shape, dtype), *_ = _reg.SHAPES[self.op](
                *shape_args(self.inputs, _rule_attrs(self.attrs)))
            self._out = Spec(tuple(shape), dtype)
        return self._out

    def __repr__(self) -> str:
        return f"Candidate({self.op}, {self.name})"


class Spec:
    __slots__ = ("_shape", "dtype")

    def __init__(self, shape: tuple, dtype):
        self._shape, self.dtype = shape, dtype


class Pat:
    """A pattern over a node (at the root) or the node making a tensor (below it).

    op: None (anything, including placeholders and variables), an op name, a tuple or set
    of names, or a predicate `op_name -> bool`. src: {input name: Pat} for the node's
    inputs. commute: the inputs "x" and "y" may match either way round. where: a predicate
    on the node (attributes, effects, dims); value: a predicate on the tensor (dtype,
    static shape, constant value). once: the tensor is read once in the graph. effects:
    whether a node with effects (stateful) may match (never, by default). index: which
    output of the node the tensor must be.
    """

    __slots__ = ("op", "name", "src", "where", "value", "once", "commute", "effects",
                 "index", "_orders")

    def __init__(self, op=None, *, name: str | None = None, src: dict | None = None,
                 where: Callable | None = None, value: Callable | None = None,
                 once: bool = False, commute: bool = False, effects: bool = False,
                 index: int = 0):
        self.op = frozenset((op,)) if type(op) is str else (
            frozenset(op) if isinstance(op, (tuple, list, set, frozenset)) else op)
        self.name, self.src, self.where, self.value = name, src or _EMPTY, where, value
        self.once, self.commute, self.effects, self.index = once, commute, effects, index
        orders = [tuple(self.src.items())] if self.src else []
        if commute and "x" in self.src and "y" in self.src:
            orders.append(tuple({**self.src, "x": self.src["y"], "y": self.src["x"]}.items()))
        self._orders = tuple(orders)

    def op_matches(self, op: str) -> bool:
        if self.op is None:
            return True
        if type(self.op) is frozenset:
            return op in self.op
        return bool(self.op(op))

    # ------------------------------------------------------------------ matching
    def match(self, t, rw: "Rewriter", caps: dict) -> dict | None:
        """Captures (extending `caps`, a new dict) when tensor `t` matches, else None."""
        if self.name is not None and self.name in caps and caps[self.name] is not t:
            return None
        if self.value is not None and not (isinstance(t, Tensor) and self.value(t)):
            return None
        if self.once and not (isinstance(t, Tensor) and rw.uses(t) == 1):
            return None
        if self.op is not None or self.src or self.where is not None:
            node = node_of(t)
            if (node is None or not self.op_matches(node.op)
                    or (node.stateful and not self.effects)
                    or len(node.outputs) <= self.index or node.outputs[self.index] is not t
                    or (self.where is not None and not self.where(node))):
                return None
            found = self._inputs(node.inputs, rw, caps)
            if found is None:
                return None
            caps = found
        if self.name is not None:
            caps = dict(caps)
            caps[self.name] = t
        return caps

    def match_root(self, node: Candidate, rw: "Rewriter") -> dict | None:
        """Captures when `node` (of an op `op_matches` accepts) matches, else None."""
        if ((node.stateful and not self.effects)
                or (self.where is not None and not self.where(node))):
            return None
        caps = self._inputs(node.inputs, rw, _EMPTY)
        if caps is None:
            return None
        if self.name is not None:
            caps = dict(caps)
            caps[self.name] = node
        return caps

    def _inputs(self, inputs: dict, rw: "Rewriter", caps: dict) -> dict | None:
        if not self._orders:
            return caps
        for order in self._orders:
            found = caps
            for key, pat in order:
                value = inputs.get(key, _MISSING)
                if value is _MISSING:
                    found = None
                    break
                found = pat.match(value, rw, found)
                if found is None:
                    break
            if found is not None:
                return found
        return None


_MISSING = object()


class PatternMatcher:
    """Rules `(Pat, fn)` (optionally `(Pat, fn, counter)`: the Report field a firing
    counts in), indexed by the op of their root pattern. Rules are tried in order.

    Example: `PatternMatcher([(Pat("Identity", src={"x": Pat(name="x")}),
    lambda rw, node, x: x, "simplified")])`.
    """

    def __init__(self, rules=()):
        self.rules: list = []
        self._by_op: dict = {}
        for rule in rules:
            self.add(*rule)

    def add(self, pat: Pat, fn: Callable, counter: str | None = None) -> "PatternMatcher":
        """Append a rule (the table is data: tests and extensions add their own)."""
        self.rules.append((pat, fn, counter))
        self._by_op.clear()
        return self

    def __add__(self, other: "PatternMatcher") -> "PatternMatcher":
        return PatternMatcher(self.rules + other.rules)

    def for_op(self, op: str) -> list:
        """The rules whose root pattern can match a node of `op`, in table order."""
        found = self._by_op.get(op)
        if found is None:
            found = self._by_op[op] = [r for r in self.rules if r[0].op_matches(op)]
        return found


class Report:
    """What a rewrite did: counts per kind of rule (`removed` is dead code not visited)."""

    FIELDS = ("removed", "simplified", "deduplicated", "folded", "merged", "rescaled",
              "accumulated", "convolutions")

    def __init__(self):
        for name in self.FIELDS:
            setattr(self, name, 0)

    def __repr__(self):
        return "Report(" + ", ".join(f"{k}={getattr(self, k)}" for k in self.FIELDS) + ")"


MAX_DEPTH = 64  # replacements emitting replacements: a rule table that loops stops here
RELEASE_FROM = 1 << 12  # elements: a dead Const this large has its value freed at once


class Rewriter:
    """The state of one `graph_rewrite` walk, handed to every replacement function:
    `emit` builds nodes (offered to the rules in turn), `uses` counts a tensor's readers,
    `source`/`walk`/`env` show the graph rewritten, `memo` holds what rules share."""

    def __init__(self, graph: FuncGraph, new: FuncGraph, env: dict, matcher: PatternMatcher,
                 walk: list, outputs: list, report: Report, cse: bool):
        self.source, self.graph, self.env, self.matcher = graph, new, env, matcher
        self.walk, self.report, self.cse = walk, report, cse
        self.memo: dict = {}
        self.seen: dict = {}  # hash-cons key -> outputs
        self.provided: dict = {}  # id(source node) -> its outputs, made by a rule earlier
        self.dropped: list = []
        self._pending: dict = {}  # new tensor id -> reads by nodes not walked yet
        self._made: dict = {}  # new tensor id -> reads by nodes made
        self._old_uses: dict = {}
        for n in walk:
            for t in _tensor_inputs(n):
                self._old_uses[t.id] = self._old_uses.get(t.id, 0) + 1
        for t in outputs:
            if isinstance(t, Tensor):
                self._old_uses[t.id] = self._old_uses.get(t.id, 0) + 1
        self._matching: list = []  # the candidates being matched, outermost first
        self._released: set = set()  # ids of large Const nodes made here, read by no one
        # id(scalar variable) -> (it, its read made since the last node that may write it)
        self._reads: dict = {}

    # ------------------------------------------------------------------ reading
    def uses(self, t: Tensor) -> int:
        """How many node inputs and graph outputs read `t` (a new-graph tensor): those made
        so far, those of nodes still to walk, and the node being matched."""
        n = self._pending.get(t.id, 0) + self._made.get(t.id, 0)
        for node in self._matching:  # (read by the nodes being matched, not made yet)
            n += sum(v is t for v in _values(node.inputs))
        return n

    def existing(self, op: str, inputs: dict, attrs: dict):
        """The outputs of a pure node (op, inputs, attrs) the new graph has, else None."""
        return self.seen.get(_cse_key(op, inputs, attrs))

    # ------------------------------------------------------------------ building
    def emit(self, op: str, inputs: dict, attrs: dict, *, name: str | None = None,
             site=None, stateful: bool | None = None) -> list:
        """The outputs of a node (op, inputs, attrs) in the new graph, offered to the rules
        first (so it may come back simplified, or as an existing node's outputs)."""
        if stateful is None:
            op_def = _reg.OPS.get(op)
            stateful = bool(op_def is not None and op_def.stateful) or \
                attrs.get("stateful") is True
        return self.rewrite(Candidate(op, inputs, attrs, stateful, name, site))

    def const(self, value, dtype: DType, name: str = "Const", site=None) -> Tensor:
        return self.rewrite(Candidate("Const", _EMPTY, {"value": value, "dtype": dtype},
                                      False, name, site))[0]

    def provide(self, source_node, outputs: list) -> None:
        """Give the outputs of a node of the graph rewritten that a rule made ahead of it
        (with a sibling): the walk uses them when it reaches that node."""
        self.provided[id(source_node)] = outputs

    def drop(self, node) -> None:
        """A node with effects a rule absorbed (a variable read folded into an update): it
        goes when nothing that remains reads it."""
        self.dropped.append(node)

    def count(self, counter: str, n: int = 1) -> None:
        setattr(self.report, counter, getattr(self.report, counter) + n)

    def rewrite(self, node: Candidate) -> list:
        """`node`'s outputs: a rule's replacement, or the node made (hash-consed)."""
        rules = self.matcher.for_op(node.op)
        if rules and len(self._matching) < MAX_DEPTH and node.op != "Const" and (
                node.stateful or not late_attrs(node.attrs)):
            self._matching.append(node)
            try:
                for pat, fn, counter in rules:
                    caps = pat.match_root(node, self)
                    if caps is None:
                        continue
                    result = fn(self, node, **caps)
                    if result is not None:
                        if counter is not None:
                            self.count(counter)
                        return list(result) if type(result) in (list, tuple) else [result]
            finally:
                self._matching.pop()
        return self._make(node)

    def _make(self, node: Candidate) -> list:
        if node.stateful and self.cse:
            read = self._repeated_read(node)
            if read is not None:
                self.report.deduplicated += 1
                return read
        pure = not node.stateful and not late_attrs(node.attrs)
        key = None
        if pure:
            try:
                key = _cse_key(node.op, node.inputs, node.attrs)
            except TypeError:
                key = None
            if key is not None and key in self.seen:
                if self.cse:
                    self.report.deduplicated += 1
                    return self.seen[key]
                key = None  # (without CSE an equal node is made again)
        if node.op == "Const":
            outs = [self.graph.const_node(node.attrs["value"], node.attrs["dtype"],
                                          node.name or "Const", node.site)]
        else:
            outs = self.graph.add_op(node.op, node.inputs, node.attrs, name=node.name,
                                     site=node.site, stateful=node.stateful)
        for t in _values(node.inputs):
            if isinstance(t, Tensor):
                self._made[t.id] = self._made.get(t.id, 0) + 1
        if key is not None:
            self.seen[key] = outs
        if node.op == "ReadVariableOp" and self.cse:
            var = node.inputs.get("resource")
            if isinstance(var, Variable) and var.shape.rank == 0:
                self._reads[id(var)] = (var, outs)
        return outs

    def _repeated_read(self, node: Candidate) -> list | None:
        """The outputs of an earlier read of the scalar variable `node` reads, when no node
        made since may have written it (then CSE joins what is computed from both: an
        optimizer reads its step count once per weight, and builds the same bias
        corrections from each read); None otherwise, forgetting the reads a node with
        effects may change: the variables it names, or every one when it names none (a
        py_function or a call may write any). Only scalars: a weight's update keeps a
        read of its own, which the update rules fold into it (rules/products.py)."""
        if node.op == "ReadVariableOp":
            var = node.inputs.get("resource")
            hit = self._reads.get(id(var))
            return hit[1] if hit is not None and hit[0] is var else None
        named = [m for m in _values(node.inputs) if isinstance(m, Variable)]
        if not named:
            self._reads.clear()
        for var in named:
            self._reads.pop(id(var), None)
        return None

    # ------------------------------------------------------------------ the walk
    def visit(self, node, ins: dict):
        """eval_graph's `apply`: the node of the graph rewritten, rewritten."""
        pending = self._pending
        for t in _values(ins):  # its reads are no longer pending
            if isinstance(t, Tensor):
                pending[t.id] = pending.get(t.id, 0) - 1
        outs = self.provided.pop(id(node), None)
        if outs is None:
            cand = Candidate(node.op, ins, remap_dims(node.attrs, self.env), node.stateful,
                             node.name, node.site, node)
            outs = self.rewrite(cand)
        for o, v in zip(node.outputs, outs):
            if isinstance(v, Tensor):
                self._pending[v.id] = self._pending.get(v.id, 0) + self._old_uses.get(o.id, 0)
        for t in _values(ins):
            if isinstance(t, Tensor) and pending.get(t.id, 0) <= 0 and not self._made.get(t.id):
                self._release(t)
        return outs

    def _release(self, t: Tensor) -> None:
        """Free the value of a large Const this walk made (a folded intermediate) once
        nothing reads it any more: folding a long chain of large constants would
        otherwise hold every intermediate until the walk ends. Its node goes in
        `finish`."""
        node = node_of(t)
        if node is None or node.op != "Const" or id(node) in self._released or \
                not self.graph.owns(t):
            return
        value = node.attrs["value"]
        if not isinstance(value, np.ndarray) or value.size < RELEASE_FROM:
            return
        self.seen.pop(_cse_key("Const", _EMPTY, node.attrs), None)
        self._released.add(id(node))
        # (nodes are immutable to their users; this one has none left)
        object.__setattr__(node, "attrs", MappingProxyType(
            {"value": np.empty((0,), value.dtype), "dtype": node.attrs["dtype"]}))

    def start(self) -> None:
        for t in self.source.inputs:
            v = self.env[t.id]
            self._pending[v.id] = self._pending.get(v.id, 0) + self._old_uses.get(t.id, 0)

    def finish(self, outputs: list) -> None:
        """Remove the dropped nodes that nothing kept reads, and the released constants
        (before the graph is sealed; `outputs` are the new graph's)."""
        if self._released:
            released = self._released
            self.graph.nodes = [n for n in self.graph.nodes if id(n) not in released]
        if not self.dropped:
            return
        dropped = {id(n) for n in self.dropped}
        live = live_nodes([n for n in self.graph.nodes
                           if n.op != "Placeholder" and id(n) not in dropped], outputs)
        needed = {t.id for n in live for t in _tensor_inputs(n)}
        needed.update(t.id for t in outputs if isinstance(t, Tensor))
        self.graph.nodes = [n for n in self.graph.nodes if id(n) not in dropped or any(
            o.id in needed for o in n.outputs)]


def _values(inputs: dict):
    for v in inputs.values():
        if type(v) is list or type(v) is tuple:
            yield from v
        else:
            yield v


def _tensor_inputs(node) -> list:
    return [t for t in _values(node.inputs) if isinstance(t, Tensor)]


def graph_rewrite(graph: FuncGraph, outputs: list, matcher: PatternMatcher, *,
                  nodes: list | None = None, shapes: tuple | None = None,
                  report: Report | None = None, cse: bool = True,
                  doing: str = "rewriting") -> tuple:
    """(new graph, its outputs for `outputs`): `graph` rebuilt with `matcher`'s rules
    applied to a fixed point (see the module's docstring). `nodes`: the nodes to walk
    (default all; dead-code elimination passes the live ones); `shapes`: more static
    input shapes (a specialized graph); `report` counts what fired; `cse`: whether equal
    pure nodes are merged. Rules may run kernels (constant folding): nothing is traced
    while they run.

    Example: `new, outs = graph_rewrite(cf.graph, cf.outputs, PatternMatcher(rules))`.
    """
    report = report if report is not None else Report()
    new, env = start_rebuild(graph, shapes)
    walk = nodes if nodes is not None else [n for n in graph.nodes if n.op != "Placeholder"]
    rw = Rewriter(graph, new, env, matcher, walk, outputs, report, cse)
    rw.start()
    saved = ctx.graph
    ctx.graph = None  # folding runs kernels eagerly; nothing here is traced
    ctx.refresh()
    try:
        env = eval_graph(graph, env, rw.visit, walk)
    finally:
        ctx.graph = saved
        ctx.refresh()
    rw.finish([env[t.id] if isinstance(t, Tensor) else t for t in outputs])
    return new, finish_rebuild(graph, new, env, outputs, doing)


# ------------------------------------------------------------------ hash-consing
def _cse_key(op: str, inputs: dict, attrs: dict) -> tuple:
    """The key of a pure node for hash-consing (raises TypeError for an unhashable
    attribute)."""
    return (op, freeze([(k, [m.id if isinstance(m, (Tensor, Variable)) else freeze(m)
                             for m in v] if isinstance(v, list)
                         else (v.id if isinstance(v, (Tensor, Variable)) else freeze(v)))
                        for k, v in inputs.items()]), freeze(attrs))


def freeze(value):
    """A hashable key of an attribute value, or raise TypeError."""
    if type(value) is bool or value is None or type(value) is str:
        return value
    if type(value) is int:
        return ("i", value)
    if type(value) is float:
        return ("f", value.hex())  # 0.0 and -0.0 differ; so do 1 and 1.0
    if isinstance(value, (list, tuple)):
        return ("t",) + tuple(freeze(v) for v in value)
    if isinstance(value, (dict, MappingProxyType)):  # (a node's attributes)
        return ("d",) + tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        if value.size <= 64:
            return ("a", value.dtype.str, value.shape, value.tobytes())
        return ("o", id(value))
    if type(value) is Dim:
        return ("dim", value.tensor.id, freeze(value.axis))
    if isinstance(value, (DType, np.generic)):
        return ("v", type(value).__name__, str(value))
    return ("o", id(value))  # anything else (a ConcreteFunction): by identity
