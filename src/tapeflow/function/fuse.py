"""Elementwise fusion (API §6.5): regions of elementwise ops of one shape and floating
dtype, with full reductions (`reduce_sum` over all axes) at their end, become one
`FusedElementwise` node whose kernel is generated code compiled by numba (the optional
`jit` extra): one loop that reads each input once and writes each output once, across
the machine's cores for large arrays. Which ops fuse, and as what expression, each op
declares where it is defined (`pointwise=Pointwise(...)`, _core/registry.py): nothing here
names an op but the full sums.

A region grows in program order: a node joins the region of one of its producers when
every other input of the node is made before that region starts (so the fused node can
run where the region's first node was, and nothing it needs comes later). Values the
region makes that other nodes (or the function's outputs) use leave it as outputs.

Kernels are cached by their generated source: in memory, and on disk (numba's cache,
next to the generated module under `$TAPEFLOW_CACHE`, default `~/.cache/tapeflow`), so a
retrace or a new process does not compile again. Without numba, or with
`function(..., jit_compile=False)` or the "remapping" option off, nothing is fused.
Fused results equal the unfused ones to rounding: numba's transcendental functions and the
fixed order of fused sums (`_core/summation.py`) may differ from NumPy's in the last bits;
a fused kernel itself gives the same bits on every call, whatever its thread count.
"""
from __future__ import annotations

import heapq
import math
import os
import re
import sys
import time
from typing import Callable

import numpy as np

from .._core import jit
from .._core.buffers import Spares
from .._core.context import intra_op_threads
from .._core.jit import available, set_background, wait_compiled  # noqa: F401 (API)
from .._core.summation import ordered_sum
from .._core.registry import POINTWISE, define_op
from .._core.threads import ThreadChoice, pool
from .._core.tensor import Tensor
from .executor import DIRECT
from .graph import FuncGraph, late_attrs
from . import vmath
from .interpret import copy_node, eval_graph, finish_rebuild, start_rebuild

_FLOATS = ("float32", "float64")
PARALLEL_FROM = 1 << 16  # elements: below this one thread is faster than starting several
MIN_MEMBERS = 2          # a region of one op is left to its NumPy kernel, except:
# ops whose NumPy kernel makes several passes and temporaries (`dy * (y > 0)`, declared
# `multi_pass` with the op) run as one loop when their arrays are large enough to repay a
# kernel call
ALONE_FROM = 1 << 14     # elements
# Longer regions are cut: numba's compile time grows faster than a kernel's size. Large
# arrays cut them shorter: a kernel call costs nothing next to their loops, and a
# 2000-op chain compiles in a quarter of the time as 256-op pieces.
MAX_MEMBERS = 1536
MAX_LARGE_MEMBERS = 256


def _full_reduction(node) -> bool:
    if node.op != "Sum" or node.attrs.get("keepdims"):
        return False
    x = node.inputs["x"]
    return tuple(node.attrs["axis"]) == tuple(range(len(x._shape)))


# A Cast to a float dtype of a comparison's bool result (a mask: an activation's
# gradient `dy * cast(x <= 6)`) joins a region as the comparison of its operands, made a
# number: `T(x <= y)`, the bits of the two kernels. The comparison, read by nothing else,
# leaves the program; the region's values stay floats.
_RELATIONS = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">=",
              "Equal": "==", "NotEqual": "!="}


def _compared(node):
    """The comparison node whose bool result `node` casts, when `node` is such a Cast."""
    if node.op != "Cast":
        return None
    x = node.inputs.get("x")
    producer = x._native.node if isinstance(x, Tensor) else None
    if producer is None or producer.op not in _RELATIONS or producer.dims:
        return None
    return producer


def _operands(node) -> list:
    """The tensors an elementwise node combines, in the order its expression reads them
    (the op's declared `Pointwise.inputs`, list inputs member by member; a cast
    comparison's: `_compared`)."""
    compared = _compared(node)
    if compared is not None:
        return [compared.inputs["x"], compared.inputs["y"]]
    out = []
    for name in POINTWISE[node.op].inputs:
        v = node.inputs.get(name)
        if isinstance(v, (list, tuple)):
            out.extend(v)
        else:
            out.append(v)
    return out


def _expression(node, args: list) -> str:
    compared = _compared(node)
    if compared is not None:
        return f"T({args[0]} {_RELATIONS[compared.op]} {args[1]})"
    return POINTWISE[node.op].source(args, node.attrs)


def _fact(op: str, name: str) -> bool:
    """A declared elementwise fact of a region member's op (False for a cast comparison)."""
    facts = POINTWISE.get(op)
    return bool(facts is not None and getattr(facts, name))


def _fusible(node) -> bool:
    facts = POINTWISE.get(node.op)
    if (facts is None and _compared(node) is None) or node.stateful or len(node.outputs) != 1:
        return False
    # attributes become literals of the source: plain numbers known when tracing only
    if facts is not None and any(type(node.attrs.get(name)) not in (bool, int, float)
                                 for name in facts.attrs):
        return False
    out = node.outputs[0]
    if out.dtype.name not in _FLOATS:
        return False
    if not out._shape or None in out._shape:
        # static shapes only: with a run-time size 1 an operand could broadcast, which
        # one flat loop cannot express (scalars have nothing to loop over)
        return False
    full = False
    for v in _operands(node):
        if not isinstance(v, Tensor) or v.dtype is not out.dtype:
            return False
        shape = tuple(v._shape)
        if shape == tuple(out._shape):
            full = True
        elif _suffix(shape, out._shape) is None and _prefix(shape, out._shape) is None:
            # broadcasting other than of scalars, along trailing axes or along leading
            # ones: NumPy's
            return False
    return full


def _suffix(shape: tuple, full: tuple) -> tuple | None:
    """`shape` without its leading 1s when that is a proper suffix of `full` (a bias
    broadcast along the last axes: read at flat index j % its size), else None."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    if len(shape) < len(full) and tuple(full[len(full) - len(shape):]) == shape:
        return shape
    return None


def _prefix(shape: tuple, full: tuple) -> int | None:
    """The number of elements each value stands for when `shape` is `full`'s leading dims
    followed by 1s (a per-row statistic broadcast along the last axes: a layer norm's
    mean, a softmax's sum, kept with keepdims; read at flat index j // that number),
    else None."""
    if len(shape) > len(full):
        return None
    k = len(full) - _trailing_ones(shape, full)
    padded = (1,) * (len(full) - len(shape)) + tuple(shape)
    if k == 0 or k == len(full) or padded[:k] != tuple(full[:k]):
        return None
    return int(np.prod(full[k:]))


def _windows(graph: FuncGraph) -> dict:
    """The tensors that are a window of columns of another (a StridedSlice taking
    [c0, c0 + W) of the last axis and all of the others, or a Split along the last axis:
    an LSTM's or GRU's gates): t.id -> (the tensor sliced, its last dim C, c0). A region
    reads such an operand from the tensor sliced, at (j // W) * C + c0 + j % W, when
    nothing else reads the window (`fuse`): no slice copied."""
    out = {}
    for node in graph.nodes:
        if node.op not in ("StridedSlice", "Split") or node.dims or late_attrs(node.attrs):
            continue
        x = node.inputs.get("x")
        if not isinstance(x, Tensor) or not x._shape or None in x._shape:
            continue
        shape = tuple(x._shape)
        if node.op == "Split":
            if node.attrs["axis"] % len(shape) != len(shape) - 1:
                continue
            c0 = 0
            for o, size in zip(node.outputs, node.attrs["sizes"]):
                if 0 < size < shape[-1]:
                    out[o.id] = (x, shape[-1], c0)
                c0 += size
            continue
        a = node.attrs
        if a["shrink_axis_mask"] or a["new_axis_mask"] or len(a["begin"]) != len(shape):
            continue
        spans = [slice(b, e, st).indices(d)
                 for b, e, st, d in zip(a["begin"], a["end"], a["strides"], shape)]
        if any(sp != (0, d, 1) for sp, d in zip(spans[:-1], shape[:-1])):
            continue
        c0, c1, step = spans[-1]
        if step == 1 and 0 < c1 - c0 < shape[-1]:
            out[node.outputs[0].id] = (x, shape[-1], c0)
    return out


class Region:
    """A set of nodes fused into one kernel."""

    def __init__(self, first: int, shape: tuple, dtype):
        self.first, self.shape, self.dtype = first, shape, dtype
        self.members: list = []      # elementwise nodes, in program order
        self.reductions: list = []   # full Sum nodes reading members' outputs
        self.made: set = set()       # ids of tensors made inside

    def size(self) -> int:
        return len(self.members) + len(self.reductions)


def _tensors(node) -> list:
    """Every tensor `node` reads (run-time-dims sources included)."""
    out = []
    for v in node.inputs.values():
        for m in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(m, Tensor):
                out.append(m)
    return out


def find_regions(graph: FuncGraph) -> list:
    """The regions to fuse in `graph`, each of MIN_MEMBERS nodes or more.

    A region is first a connected set of fusible nodes of one shape and dtype. It stands
    as it is when no path leaves it and comes back (through a node outside it): then one
    node can compute all of it. Otherwise it is cut greedily, in program order (a node
    joins a part of its producers' when everything else it reads is made before that
    part starts)."""
    nodes = [n for n in graph.nodes if n.op != "Placeholder"]
    index = {id(n): i for i, n in enumerate(nodes)}
    producer = {o.id: n for n in nodes for o in n.outputs}
    parent: dict = {}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def key(node):
        out = node.outputs[0]
        return tuple(out._shape), out.dtype

    for node in nodes:
        if _fusible(node):
            parent[id(node)] = id(node)
            for t in _tensors(node):
                p = producer.get(t.id)
                if p is not None and id(p) in parent and key(p) == key(node):
                    parent[root(id(node))] = root(id(p))
    groups: dict = {}
    for node in nodes:
        if id(node) in parent:
            groups.setdefault(root(id(node)), []).append(node)
    # what must run after each node: the readers of its outputs, and for an effect (a
    # variable read or assignment, a print) the next effect, which keeps program order
    successors: dict = {id(n): [] for n in nodes}
    previous_effect = None
    for node in nodes:
        for t in _tensors(node):
            p = producer.get(t.id)
            if p is not None:
                successors[id(p)].append(node)
        if node.stateful or not node.outputs:
            if previous_effect is not None:
                successors[id(previous_effect)].append(node)
            previous_effect = node
    regions = []
    for members in groups.values():
        parts = [_region(members, index)] if _closed(members, successors, index) \
            else _split(members, index)
        for part in parts:  # consecutive pieces in program order cannot make a cycle
            cap = MAX_MEMBERS if int(np.prod(part.shape)) < PARALLEL_FROM else \
                MAX_LARGE_MEMBERS
            for start in range(0, len(part.members), cap):
                regions.append(_region(part.members[start:start + cap], index))
    for region in regions:
        region.made = {n.outputs[0].id for n in region.members}
    owner = {t: r for r in regions for t in r.made}
    for node in nodes:  # full sums of a region's values end it (unless it reads them)
        if _full_reduction(node):
            region = owner.get(node.inputs["x"].id)
            if (region is not None and node.outputs[0].dtype is region.dtype
                    and _closed(region.members + region.reductions + [node], successors,
                                index)):
                region.reductions.append(node)
    return [r for r in regions if r.size() >= MIN_MEMBERS or (
        _fact(r.members[0].op, "multi_pass") and int(np.prod(r.shape)) >= ALONE_FROM)]


def _region(members: list, index: dict) -> Region:
    out = members[0].outputs[0]
    region = Region(index[id(members[0])], tuple(out._shape), out.dtype)
    region.members = list(members)
    return region


def _closed(members: list, successors: dict, index: dict) -> bool:
    """Whether no path goes from a member, through nodes outside, back to a member."""
    inside = {id(n) for n in members}
    last = max(index[id(n)] for n in members)
    seen, stack = set(), []
    for n in members:
        for c in successors[id(n)]:
            if id(c) not in inside:
                stack.append(c)
            elif _full_reduction(n):
                return False  # a member reads a sum the same loop is still making
    while stack:
        node = stack.pop()
        if id(node) in seen or index[id(node)] > last:  # later nodes cannot lead back
            continue
        seen.add(id(node))
        for c in successors[id(node)]:
            if id(c) in inside:
                return False
            stack.append(c)
    return True


def _split(members: list, index: dict) -> list:
    """Greedy parts of a region that is not closed, in program order."""
    part_of: dict = {}
    parts: list = []
    for node in members:
        tensors = _tensors(node)
        chosen = None
        for part in sorted({id(part_of[t.id]): part_of[t.id] for t in tensors
                            if t.id in part_of}.values(), key=lambda r: -r.first):
            if all(t.id in part.made or _made_before(t, part.first, index)
                   for t in tensors):
                chosen = part
                break
        if chosen is None:
            chosen = _region([node], index)
            chosen.members = []
            parts.append(chosen)
        chosen.members.append(node)
        chosen.made.add(node.outputs[0].id)
        part_of[node.outputs[0].id] = chosen
    return parts


def _made_before(t, first: int, index: dict) -> bool:
    node = t._native.node
    if node is None or node.op in ("Placeholder", "Const"):
        return True
    return index.get(id(node), -1) < first


def schedule(graph: FuncGraph, regions: list) -> list:
    """The nodes to emit, in a topological order of the graph with each region as one unit
    (represented by its first member): a region runs when everything it reads is made.
    Stateful nodes keep their program order; otherwise the original order is kept
    wherever the dependencies allow."""
    nodes = [n for n in graph.nodes if n.op != "Placeholder"]
    unit_of: dict = {}
    for region in regions:
        for n in region.members + region.reductions:
            unit_of[id(n)] = ("region", id(region))
    first: dict = {}  # unit -> (smallest index, representative node)
    producer: dict = {}  # tensor id -> unit
    for i, n in enumerate(nodes):
        unit = unit_of.get(id(n), ("node", id(n)))
        if unit not in first:
            first[unit] = (i, n)
        for o in n.outputs:
            producer[o.id] = unit
    deps: dict = {u: set() for u in first}
    previous_effect = None
    for n in nodes:
        unit = unit_of.get(id(n), ("node", id(n)))
        for t in _tensors(n):
            p = producer.get(t.id)
            if p is not None and p != unit:
                deps[unit].add(p)
        if n.stateful or not n.outputs:
            if previous_effect is not None and previous_effect != unit:
                deps[unit].add(previous_effect)  # effects stay in program order
            previous_effect = unit
    dependents: dict = {u: [] for u in first}
    for unit, needs in deps.items():
        for p in needs:
            dependents[p].append(unit)
    waiting = {u: len(needs) for u, needs in deps.items()}
    ready = [(first[u][0], u) for u, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, unit = heapq.heappop(ready)
        order.append(first[unit][1])
        for d in dependents[unit]:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, (first[d][0], d))
    if len(order) != len(first):
        raise RuntimeError(f"fusing {graph.name}: the regions make a cycle")
    return order


# ---------------------------------------------------------------------- code generation


def _literal(value, dtype) -> str | None:
    """A one-element Const's value as source text of its dtype (None if larger): the
    repr of the exact Python float, rounded back to the dtype by `T(...)`."""
    if value.size != 1:
        return None
    return f"T({float(value.reshape(()))!r})"


# Elements a kernel carries through a stage of its region's ops at once (rounded to whole
# rows of broadcast operands), their values in L1 between stages: one loop carrying each
# element through a long chain of ops is latency-bound (the core overlaps few elements'
# chains), short loops are not, and each loop costs numba compile time.
BLOCK_ELEMENTS = 256
STAGE_OPS = 32  # ops per loop: a short body lets the core overlap many elements' chains
MAX_BLOCK_ROW = 2048  # broadcast rows longer than this: one loop over the elements


def _element_loop(lines, names, outputs, sums, arrays, sizes, row, per, wins,
                  joined, offsets) -> list:
    """Loop body source: every element through the whole region, one at a time."""
    source = []
    # views of [lo, hi): indices from a range starting at 0 are known non-negative, so
    # numba drops its negative-index wraparound, which keeps LLVM from vectorizing
    source += [f"    v{k} = a{k}[lo:hi]" for k in arrays
               if k not in sizes and k not in per and k not in wins]
    # (row-broadcast operands and windows from the row of lo: lo is on a row of `row`, a
    # multiple of theirs)
    source += [f"    v{k} = a{k}[lo // {per[k]}:]" for k in sorted(per)]
    source += [f"    v{k} = a{k}[lo // {w} * {c}:]" for k, (c, _, w) in sorted(wins.items())]
    source += [f"    w{k} = o{k}[lo:hi]" for k in range(len(outputs))]
    source += [f"    w{k} = o{k}[lo // {w} * {c}:]" for k, c, w, _ in joined]
    source += [f"    q{k} = r{k}[lo:hi]" for k in range(len(sums))]
    if sizes:  # rows of the widest suffix: its operands are read at the column
        source += [f"    for r in range((hi - lo) // {row}):",
                   f"        for c in range({row}):",
                   f"            j = r * {row} + c"]
        pad = "            "
        reads = [f"x{k} = a{k}[c]" if sizes.get(k) == row and k not in offsets else
                 f"x{k} = a{k}[{offsets.get(k, 0)} + c % {sizes[k]}]" if k in sizes else
                 _element_read(k, per, wins) for k in arrays]
    else:
        source += ["    for j in range(hi - lo):"]
        pad = "        "
        reads = [_element_read(k, per, wins) for k in arrays]
    source += [pad + line for line in reads + [f"{v} = {e}" for v, e in lines]]
    source += [f"{pad}w{k}[j] = {names[t.id]}" for k, t in enumerate(outputs)]
    source += [f"{pad}w{k}[j // {w} * {c} + {c0} + j % {w}] = {var}"
               for k, c, w, parts in joined for var, c0 in parts]
    source += [f"{pad}q{k}[j] = {v}" for k, v in enumerate(sums)]
    return source + ["    return ()"]


def _element_read(k: int, per: dict, wins: dict) -> str:
    if k in per:
        return f"x{k} = v{k}[j // {per[k]}]"
    if k in wins:
        c, c0, w = wins[k]
        return f"x{k} = v{k}[j // {w} * {c} + {c0} + j % {w}]"
    return f"x{k} = v{k}[j]"


def _block_loop(lines, names, outputs, sums, arrays, sizes, block, per, wins,
                joined, offsets) -> list:
    """Loop body source: blocks of `block` elements; the region's ops in stages of
    STAGE_OPS, each stage one loop over the block carrying every element through its ops
    (values that later stages read wait in the rows of a scratch array, reused once their
    last reader has run). Every element goes through the same operations as in
    `_element_loop`: the same results."""
    tiled = set(sizes) | set(per) | set(wins)  # operands read from a tile of the block
    stages = [list(range(k, min(k + STAGE_OPS, len(lines))))
              for k in range(0, len(lines), STAGE_OPS)]
    stage_of = {lines[k][0]: n for n, stage in enumerate(stages) for k in stage}
    last = {}  # temp -> the last stage reading it (len(stages): the sums)
    for n, stage in enumerate(stages):
        for k in stage:
            for m in re.findall(r"\bt\d+\b", lines[k][1]):
                last[m] = n
    for v in sums:
        if v in stage_of:
            last[v] = len(stages)
    exported = {names[t.id]: k for k, t in enumerate(outputs)}
    parts_of: dict = {}  # a value joined into outputs: the tiles it is stored in
    for k, _, _, parts in joined:
        for p, (var, _) in enumerate(parts):
            parts_of.setdefault(var, []).append(f"y{k}_{p}")
    slot, free, slots = {}, [], 0
    body = []
    for n, stage in enumerate(stages):
        code = []
        for k in stage:
            var, expression = lines[k]
            expression = re.sub(r"\bt\d+\b", lambda m: (
                m.group(0) if stage_of[m.group(0)] == n else f"buf[{slot[m.group(0)]}, i]"),
                expression)
            expression = re.sub(r"\bx(\d+)\b", lambda m: (
                f"b{m.group(1)}[i]" if int(m.group(1)) in tiled else f"v{m.group(1)}[i]"),
                expression)
            code.append(f"{var} = {expression}")
            if var in exported:
                code.append(f"w{exported[var]}[i] = {var}")
            code += [f"{tile}[i] = {var}" for tile in parts_of.get(var, ())]
        # rows whose last reader is this stage are free for its own values (each
        # element's row is read before this iteration's stores, at its end)
        free += [slot.pop(t) for t in [t for t in slot if last[t] <= n]]
        for k in stage:
            var = lines[k][0]
            if last.get(var, n) > n:  # read by a later stage or summed
                if free:
                    slot[var] = free.pop()
                else:
                    slot[var], slots = slots, slots + 1
                code.append(f"buf[{slot[var]}, i] = {var}")
        body += ["        for i in range(n):"] + [f"            {line}" for line in code]

    def ref(v):  # a summed value: a temp's slot, or an input read directly
        return (f"buf[{slot[v]}, i]" if v in slot else
                re.sub(r"\bx(\d+)\b", lambda m: (
                    f"b{m.group(1)}[i]" if int(m.group(1)) in tiled and
                    int(m.group(1)) not in sizes else f"v{m.group(1)}[i]"), v))

    for k, v in enumerate(sums):
        body.append("        for i in range(n):")
        body.append(f"            q{k}[i] = {ref(v)}")
    # the joined outputs' columns of the rows the block covers, from their tiles
    for k, c, w, parts in joined:
        body.append(f"        w{k} = o{k}[s // {w} * {c}:(s + n) // {w} * {c}]")
        for p, (_, c0) in enumerate(parts):
            body += [f"        for r in range(n // {w}):",
                     f"            for c in range({w}):",
                     f"                w{k}[r * {c} + {c0} + c] = y{k}_{p}[r * {w} + c]"]
    source = [f"    b{k} = np.empty({block}, T)  # a row-broadcast operand, tiled\n"
              f"    for i in range({block}):\n"
              f"        b{k}[i] = a{k}[{offsets.get(k, 0)} + i % {sizes[k]}]"
              for k in sorted(sizes)]
    source += [f"    b{k} = np.empty({block}, T)  # a row-broadcast operand or a window, "
               "per block" for k in sorted(set(per) | set(wins))]
    source += [f"    y{k}_{p} = np.empty({block}, T)  # a value joined into an output"
               for k, _, _, parts in joined for p in range(len(parts))]
    nslots = max(slots, 1)
    source += [f"    buf = np.empty(({nslots}, {block}), T)",
               f"    for blk in range((hi - lo + {block - 1}) // {block}):"]
    # this block's views: indices from range(n) are known non-negative, so numba drops
    # its negative-index wraparound (with `a[s + i]` it cannot: the loops do not
    # vectorize and run several times slower)
    source += [f"        s = lo + blk * {block}",
               f"        n = min({block}, hi - s)"]
    source += [f"        v{k} = a{k}[s:s + n]" for k in arrays if k not in tiled]
    # each value of a row-broadcast operand repeated over its elements (a block starts
    # and ends on rows of `block`'s row, a multiple of theirs)
    for k in sorted(per):
        source += [f"        u{k} = a{k}[s // {per[k]}:(s + n) // {per[k]}]",
                   f"        for r in range(n // {per[k]}):",
                   f"            for c in range({per[k]}):",
                   f"                b{k}[r * {per[k]} + c] = u{k}[r]"]
    # a window's columns of the rows the block covers
    for k, (c, c0, w) in sorted(wins.items()):
        source += [f"        u{k} = a{k}[s // {w} * {c}:(s + n) // {w} * {c}]",
                   f"        for r in range(n // {w}):",
                   f"            for c in range({w}):",
                   f"                b{k}[r * {w} + c] = u{k}[r * {c} + {c0} + c]"]
    source += [f"        w{k} = o{k}[s:s + n]" for k in range(len(outputs))]
    source += [f"        q{k} = r{k}[s:s + n]" for k in range(len(sums))]
    source += body
    return source + ["    return ()"]


def generate(region: Region, exported: set, windows: dict | None = None,
             joins: list | None = None, inline: dict | None = None) -> tuple:
    """(source of the kernel module, external input tensors, output tensors, reductions,
    each output's elements per region element).

    `windows` (t.id -> (tensor sliced, C, c0)): operands read as windows of columns of
    another tensor (`_windows`). `joins` ([(concat output, its parts)]): outputs made of
    region values joined along the last axis (a Concat of them that only it reads):
    each value written into its columns, after the region's other outputs. `inline`
    (X.id -> the members of the region making X): windows of X computed here from the
    same windows of that region's operands (its bias: the window's part of it), so X
    is never made.

    The module holds the region three ways: `kernel` and `kernel_serial`, one numba loop
    over the elements (across threads, or in one), and `chunk(lo, hi, ...)`, the same
    expressions as NumPy calls on the slice [lo, hi), run block by block from threads
    where NumPy's vectorized transcendental functions beat numba's scalar ones."""
    names: dict = {}
    inputs: list = []
    lines: list = []
    wins: dict = {}  # operand -> (C, c0, W): a window read from the tensor sliced
    offsets: dict = {}  # operand -> c0: the window [c0, c0 + W) of a bias (a suffix)
    parts: dict = {}  # (tensor id, c0): its window's or its bias part's name, inlining

    def operand(t) -> str:
        if t.id in names:
            return names[t.id]
        producer = t._native.node
        literal = None
        if producer is not None and producer.op == "Const":
            literal = _literal(producer.attrs["value"], t.dtype)
        if literal is not None:
            names[t.id] = literal
        else:
            k = len(inputs)
            inputs.append(t)
            names[t.id] = f"x{k}" if t._shape != () else f"s{k}"
        return names[t.id]

    def window_of(x, c, c0, w) -> str:
        key = (x.id, c0)
        if key not in parts:
            wins[len(inputs)] = (c, c0, w)
            parts[key] = f"x{len(inputs)}"
            inputs.append(x)
        return parts[key]

    def inlined(x, c, c0, w) -> str:
        """Lines computing the window [c0, c0 + w) of x from its region's operands."""
        key = (x.id, c0)
        if key in parts:
            return parts[key]
        local: dict = {}
        for node in inline[x.id]:
            args = []
            for u in _operands(node):
                shape = tuple(u._shape)
                if u.id in local:
                    args.append(local[u.id])
                elif shape == tuple(x._shape):
                    args.append(window_of(u, c, c0, w))
                elif shape[-1:] == (c,) and c > 1:  # a bias along the last axis: its part
                    bias_key = (u.id, c0)
                    if bias_key not in parts:
                        offsets[len(inputs)] = c0
                        parts[bias_key] = f"x{len(inputs)}"
                        inputs.append(u)
                    args.append(parts[bias_key])
                else:  # a scalar, a constant or a per-row value: as the region reads it
                    args.append(operand(u))
            var = f"t{len(lines)}"
            lines.append((var, _expression(node, args)))
            local[node.outputs[0].id] = var
        parts[key] = local[x.id]
        return parts[key]

    for node in region.members:
        args = []
        for t in _operands(node):
            if t.id not in names and windows and t.id in windows:
                x, c, c0 = windows[t.id]
                w = int(t._shape[-1])
                names[t.id] = (inlined(x, c, c0, w) if inline and x.id in inline
                               else window_of(x, c, c0, w))
            args.append(operand(t))
        out = node.outputs[0]
        var = f"t{len(lines)}"
        lines.append((var, _expression(node, args)))
        names[out.id] = var
    joined_parts = {t.id for _, parts in (joins or ()) for t in parts}
    outputs = [n.outputs[0] for n in region.members
               if n.outputs[0].id in exported and n.outputs[0].id not in joined_parts]
    w = int(region.shape[-1]) if region.shape else 1
    # (output index, C, W, [(value, c0)]) of each joined output
    joined = [(len(outputs) + j, w * len(parts),  w,
               [(names[t.id], w * p) for p, t in enumerate(parts)])
              for j, (_, parts) in enumerate(joins or ())]
    arrays = [k for k, t in enumerate(inputs) if t._shape != ()]
    # operands broadcast along trailing axes: their suffix shape and size
    broadcast = [k for k in arrays if tuple(inputs[k]._shape) != tuple(region.shape)
                 and k not in wins and k not in offsets]
    suffixes = {k: _suffix(inputs[k]._shape, region.shape) for k in broadcast
                if _suffix(inputs[k]._shape, region.shape) is not None}
    suffixes.update({k: tuple(region.shape[-1:]) for k in offsets})  # (bias parts)
    sizes = {k: int(np.prod(shape)) for k, shape in suffixes.items()}
    # operands broadcast along trailing axes (one value per row): elements per value
    per = {k: _prefix(inputs[k]._shape, region.shape) for k in broadcast if k not in sizes}
    # the shape of a row: the longest trailing shape that some operand repeats over (each
    # shorter one's size divides its size)
    spans = list(suffixes.values()) + [
        tuple(region.shape[len(region.shape) - _trailing_ones(inputs[k]._shape,
                                                              region.shape):])
        for k in per] + [tuple(region.shape[-1:]) for _ in wins] + [
        tuple(region.shape[-1:]) for _ in (joins or ())]  # (whole rows of the last axis)
    widest = max(spans, key=len, default=())
    row = int(np.prod(widest)) if widest else 1  # (every range starts and ends on one)
    params = [f"a{k}" if t._shape != () else f"s{k}" for k, t in enumerate(inputs)]
    params += [f"o{k}" for k in range(len(outputs) + len(joined))]
    sums = [names[node.inputs["x"].id] for node in region.reductions]
    source = [f"# generated by tapeflow: {', '.join(n.op for n in region.members)}",
              "import math",
              "import numpy as np",
              "from tapeflow._core.jit import lazy_njit as njit",
              "from tapeflow.function import vmath as _vm", "",
              f"T = np.{region.dtype.name}", ""]
    vector = _vector_math(region.dtype.name, [n.op for n in region.members])
    if vector:
        # float32 exp, tanh... as arithmetic LLVM vectorizes (vmath.py), in the loops only
        source += vmath.PRELUDE.splitlines() + [""]
    loop_lines = []
    for var, expression in lines:
        for old, new in (vmath.RENAMES if vector else vmath.LOOP_RENAMES):
            expression = expression.replace(old, new)
        loop_lines.append((var, expression))
    empty = row == 0 or 0 in sizes.values() or 0 in per.values()  # (nothing to tile)
    row = max(row, 1)
    block = row * max(1, BLOCK_ELEMENTS // row)
    # the loop stores the values it sums; the caller sums them in the one order of
    # summation.py, whichever tier (or thread) computed them
    stored = [f"r{k}" for k in range(len(sums))]
    source += ["@njit(cache=True, nogil=True, error_model='numpy')",
               f"def kernel(lo, hi, {', '.join(params + stored)}):"]
    if row > MAX_BLOCK_ROW or empty:
        source += _element_loop(loop_lines, names, outputs, sums, arrays, sizes, row, per,
                                wins, joined, offsets)
    else:
        source += _block_loop(loop_lines, names, outputs, sums, arrays, sizes, block, per,
                              wins, joined, offsets)
    source.append("")
    # NumPy blocks start and end on rows of the widest suffix: full operands are viewed
    # as rows of it, and the broadcast ones broadcast against them
    source += [f"def chunk(lo, hi, {', '.join(params + stored)}):"]
    source += [f"    x{k} = a{k}.reshape(-1)[{offsets[k]}:{offsets[k] + sizes[k]}]"
               if k in offsets else
               f"    x{k} = a{k}.reshape({suffixes[k]!r})" if k in sizes else
               f"    x{k} = a{k}[lo // {per[k]}:hi // {per[k]}].reshape("
               f"{_row_view(widest, _trailing_ones(inputs[k]._shape, region.shape))!r})"
               if k in per else
               f"    x{k} = a{k}.reshape(-1, {wins[k][0]})[lo // {wins[k][2]}:hi // "
               f"{wins[k][2]}, {wins[k][1]}:{wins[k][1] + wins[k][2]}].reshape((-1,) + "
               f"{widest!r})" if k in wins else
               (f"    x{k} = a{k}[lo:hi].reshape((-1,) + {widest!r})" if widest else
                f"    x{k} = a{k}[lo:hi]") for k in arrays]
    # the blocks call the transcendental functions the loops call (vmath.blocks), not
    # NumPy's: the same bits either way
    renames = ((vmath.VECTOR_BLOCK_RENAMES if vector else ()) + vmath.BLOCK_RENAMES)
    # each temporary is stored (an output, a summed value) as soon as it is made and
    # dropped after its last reader: a long region's block holds a few arrays, not one per
    # op (a 2000-op chain held 2000 blocks of temporaries at once)
    stores: dict = {}
    for k, t in enumerate(outputs):  # (where a value goes, and shaped how)
        stores.setdefault(names[t.id], []).append((f"o{k}[lo:hi]", "-1"))
    for k, c, w, parts in joined:  # (a joined output's columns, as rows of the window)
        for var, c0 in parts:
            stores.setdefault(var, []).append(
                (f"o{k}.reshape(-1, {c})[lo // {w}:hi // {w}, {c0}:{c0 + w}]", f"-1, {w}"))
    for k, v in enumerate(sums):
        stores.setdefault(v, []).append((f"r{k}[lo:hi]", "-1"))
    last = {}
    for i, (_, expression) in enumerate(lines):
        for m in re.findall(r"\bt\d+\b", expression):
            last[m] = i
    for i, (var, expression) in enumerate(lines):
        for old, new in renames:
            expression = expression.replace(old, new)
        source.append(f"    {var} = {expression}")
        source += [f"    {out} = {var}.reshape({shape})" for out, shape in stores.pop(var, ())]
        dead = sorted((m for m, j in last.items() if j == i), key=lambda m: int(m[1:]))
        if var not in last:
            dead.append(var)
        if dead:
            source.append(f"    del {', '.join(dead)}")
    # (summed inputs, read directly)
    source += [f"    {out} = {v}.reshape({shape})" for v, outs in stores.items()
               for out, shape in outs]
    source.append(f"ROW = {row}  # (block boundaries)")
    factors = [1] * len(outputs) + [len(parts) for _, parts in (joins or ())]
    return ("\n".join(source) + "\n", inputs, outputs + [t for t, _ in (joins or ())],
            region.reductions, factors)





def _trailing_ones(shape: tuple, full: tuple) -> int:
    """How many trailing axes of `full` a row-broadcast operand of `shape` repeats over."""
    shape = (1,) * (len(full) - len(shape)) + tuple(shape)
    d = 0
    while d < len(full) and shape[len(full) - 1 - d] == 1 and full[len(full) - 1 - d] != 1:
        d += 1
    return d


def _row_view(widest: tuple, d: int) -> tuple:
    """The shape a NumPy block views a row-broadcast operand as: one value per row of the
    block's `widest`-shaped rows, repeated over its last `d` axes by broadcasting."""
    return (-1,) + tuple(widest[:len(widest) - d]) + (1,) * d


def _vector_math(dtype_name: str, members) -> bool:
    """Whether a region's loops use vmath's functions (a member declared `vector_math`)."""
    return dtype_name == "float32" and any(_fact(op, "vector_math") for op in members)
# bytes of each temporary of a NumPy block: small enough that a block's few temporaries
# stay in the core's cache and come from the allocator's free lists (a temporary of 512 KB
# is mapped fresh from the OS and page-faults as it is written: a 200k-element Adam update
# ran 8x slower in blocks of 2^17 float32 than of 2^14), large enough that calls stay few
BLOCK_BYTES = 1 << 16

_compiled: dict = {}  # source -> (numba loop, NumPy block function, row size)


def compile_source(source: str):
    """(numba loop, NumPy block function, row size) of a generated module, imported
    (numba compiles the loop on its first call, or loads it from its disk cache)."""
    kernels = _compiled.get(source)
    if kernels is not None:
        return kernels
    module = jit.source_module(source)
    kernels = _compiled[source] = (module.kernel, module.chunk, module.ROW)
    return kernels


# Tiered compilation: a kernel not yet in the disk cache is compiled in the background
# (in the compile worker process, jit.compile_elsewhere) while its region runs as NumPy
# blocks; the compiled loop takes over from the first call after it is ready. A first
# call then costs tracing and optimizing only.
#
# When to compile is a rent-or-buy choice: a compile costs tenths of a second to
# seconds of CPU, the NumPy blocks cost a little more than the loop on every call. A
# kernel is compiled once its NumPy blocks have taken COMPILE_AFTER_SECONDS in all (and
# never before its COMPILE_AFTER-th call): a kernel that runs a few times on small arrays
# (most of a program's first steps, most of a test suite) is never compiled, and one
# that runs on is compiled after costing at most that much more than its loop would
# have. A kernel in the disk cache is loaded (in the background) on the same terms, at a
# quarter of the price: loading costs milliseconds, not seconds.
#
# The first compile or load of a process also buys numba itself: importing it in this
# process (a fifth to half a second holding the GIL) and starting the compile worker (a
# few seconds of another core). So nothing is compiled or loaded until the NumPy blocks
# of all regions together have cost FIRST_COMPILE_AFTER_SECONDS (unless the process has
# bought numba already: jit.bought): a program done in a second or two never pays for a
# compiler it would not have used long enough to win back.
#
# The tiers take turns because they give the same bits (API §6.7): each arithmetic op
# is correctly rounded in NumPy and in numba alike, the NumPy blocks call the compiled
# loops' own transcendental functions (vmath.blocks: the C library's, or vmath's
# polynomials), and every tier stores the values it sums, which `ordered_sum` adds in
# one order.
COMPILE_AFTER = 2
COMPILE_AFTER_SECONDS = float(os.environ.get("TAPEFLOW_JIT_AFTER_MS", "20")) / 1000
LOAD_SHARE = 0.25  # of COMPILE_AFTER_SECONDS, for a loop already in the disk cache
FIRST_COMPILE_AFTER_SECONDS = float(os.environ.get("TAPEFLOW_JIT_FIRST_AFTER_MS",
                                                   "500")) / 1000
_all_rent = [0.0]  # seconds all regions' NumPy blocks have cost in this process


def _deep_recursion(members: int) -> int:
    """The recursion limit numba needs for a kernel of `members` ops."""
    return max(sys.getrecursionlimit(), 10 * members + 1000)


class _RecursionLimit:
    """Raise the interpreter's recursion limit for a compile, then put it back (it is the
    whole process's setting: left raised, a user's runaway recursion would go deeper)."""

    def __init__(self, members: int):
        self.members = members

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        sys.setrecursionlimit(_deep_recursion(self.members))

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


class FusedKernel:
    """The callable a FusedElementwise node runs: flattens its inputs, allocates its
    outputs, calls the compiled loop and shapes the results.

    One compiled loop per region, over a range [lo, hi) of its elements: large arrays
    run it on several threads, each over its own run of rows (`_split`; numba's loop
    releases the GIL), so no second, parallel variant is compiled (numba's parallel
    loops cost several times a serial loop's compile time and memory)."""

    def __init__(self, source: str, n_outputs: int, reductions: int, dtype, members: tuple,
                 shape: tuple | None = None, factors: tuple | None = None):
        self.source, self.n_outputs, self.reductions = source, n_outputs, reductions
        self.shape = shape  # the region's (static) shape; None: the first array input's
        # each output's elements per region element: 1, or the values a joined output
        # holds side by side along the last axis (generate's `joins`; static shapes only)
        self.factors = tuple(factors) if factors else (1,) * n_outputs
        self.dtype, self.members = np.dtype(dtype._np), members
        self._block = max(1, BLOCK_BYTES // self.dtype.itemsize)  # elements per NumPy block
        self._kernels = None  # (numba loop, NumPy block function, row size)
        self.compiled = True  # False once numba failed on it: the NumPy blocks run instead
        # {0: True} once compiled, {0: the future of its background compile}, or {}
        self._ready: dict = {}
        self._loop = None  # the compiled loop once it ran (a static shape)
        self._run: Callable | None = None  # and then the steady state's call (_steady)
        self._calls = 0  # calls before the loop took over (see COMPILE_AFTER)
        self._rent = 0.0  # seconds spent in NumPy blocks so far (see COMPILE_AFTER_SECONDS)
        self._cached = None  # whether its loop is in the disk cache (looked up once)
        self._size, self._parallel = 0, False  # (steady state: size; split over threads)
        # one thread or several, by measured time: both give the same bits
        self._threads = ThreadChoice()
        self._spares = [Spares() for _ in range(n_outputs)]  # steady-state outputs
        self._summed = Spares()  # the values each reduction sums, stored by every tier

    def direct(self, *arrays) -> tuple:
        """The node's outputs from its input arrays given positionally (how a program
        calls it: executor.DIRECT)."""
        run = self._run
        if run is not None:
            return run(*arrays)
        return tuple(self(arrays))

    def __call__(self, arrays) -> list:
        run = self._run
        if run is not None:  # the steady state: the compiled loop over the static shape
            return list(run(*arrays))
        self._calls += 1
        if self._kernels is None:
            self._kernels = compile_source(self.source)  # (imports; numba compiles later)
        # the whole call is rent (see COMPILE_AFTER_SECONDS): what compiling saves is
        # this call's cost, not only its NumPy blocks'
        start = time.perf_counter()
        shape = self.shape or next(a.shape for a in arrays if a.ndim)
        args = [np.ascontiguousarray(a).reshape(-1) if a.ndim else a[()] for a in arrays]
        n = math.prod(shape)
        # (a region of a static shape keeps its outputs: NumPy blocks run this path on
        # every call of a large region with transcendental ops, and new large arrays
        # page-fault as they are written)
        outs = (self._outputs(n) if self.shape is not None else
                [np.empty(n, self.dtype) for _ in range(self.n_outputs)])
        shapes = self._shapes(shape)
        stored = self._stored(n)
        if self.compiled and self._loop_ready(args, outs, stored):
            self._run_loop(n, args, outs, stored, arrays)
            return [o.reshape(s) for o, s in zip(outs, shapes)] + self._sums(stored)
        if 0 < n <= max(self._block, self._kernels[2]):  # one block (as _split runs it)
            self._kernels[1](0, n, *args, *outs, *stored)
        else:
            self._split(self._kernels[1], n, args, outs, stored, self._block)
        results = [o.reshape(s) for o, s in zip(outs, shapes)] + self._sums(stored)
        spent = time.perf_counter() - start
        self._rent += spent
        _all_rent[0] += spent
        return results

    def _shapes(self, shape: tuple) -> list:
        """The outputs' shapes for a region of `shape` (a joined output's last axis is its
        values' side by side)."""
        return [shape if f == 1 else tuple(shape[:-1]) + (shape[-1] * f,)
                for f in self.factors]

    def _outputs(self, n: int) -> list:
        """The output arrays of a steady-state call: last call's when nothing holds them
        any more and they are large (no page faults on fresh large arrays: SPARE_BYTES)."""
        if n * self.dtype.itemsize < SPARE_BYTES:
            return [np.empty(n * f, self.dtype) for f in self.factors]
        return [spare.empty((n * f,), self.dtype) for spare, f in zip(self._spares,
                                                                        self.factors)]

    def _stored(self, n: int) -> list:
        """Arrays for the values each reduction sums (free again once summed)."""
        if n * self.dtype.itemsize < SPARE_BYTES:
            return [np.empty(n, self.dtype) for _ in range(self.reductions)]
        return [self._summed.empty((n,), self.dtype) for _ in range(self.reductions)]

    def _sums(self, stored: list) -> list:
        return [np.asarray(ordered_sum(values), self.dtype) for values in stored]

    def _marker(self) -> str:
        return jit.marker(self.source, "0")

    def _loop_ready(self, args: list, outs: list, stored: list) -> bool:
        """Whether the compiled loop can run now; starts its background compile if not
        (unless background compiling is off: then it is compiled, or loaded, on this
        call). A loop in the disk cache is loaded in the background once the blocks have
        cost LOAD_SHARE of that: a load costs milliseconds (and numba's first use in a
        process most of a second), more than a kernel that runs a few times saves."""
        state = self._ready.get(0)
        if state is True or state == "now":
            return True
        if state is None:
            if not jit.background():
                self._ready[0] = "now"  # compiled (or loaded) by this call
                return True
            if self._cached is None:
                self._cached = os.path.exists(self._marker())
            if self._calls < COMPILE_AFTER or self._rent < (
                    COMPILE_AFTER_SECONDS * (LOAD_SHARE if self._cached else 1.0)):
                return False  # not yet (see COMPILE_AFTER_SECONDS)
            if _all_rent[0] < FIRST_COMPILE_AFTER_SECONDS and not jit.bought():
                return False  # numba not bought yet (see FIRST_COMPILE_AFTER_SECONDS)
            # the float32 functions its blocks call compile first (see vmath.prepare)
            vmath.prepare([f for f in vmath.VECTOR if f"_vm.blocks.{f}(" in self.source])
            # a zero-length call with arrays of the same types compiles the loop
            dummy = [np.empty(1, a.dtype) if isinstance(a, np.ndarray) else a
                     for a in args + outs + stored]
            self._ready[0] = jit.submit(self._compile_now, dummy, self._cached)
            return False
        if not state.done():
            return False
        self._ready[0] = "now"  # compiled: its first run makes it the steady loop
        return self.compiled

    def _compile_now(self, dummy: list, cached: bool = False) -> None:
        args = [0, 0, *dummy]
        # in the compile worker when there is one (this thread then loads it from the
        # disk cache: no GIL held for the compile's seconds)
        done = None if cached else jit.compile_elsewhere(self._kernels[0], args)
        if done is False:
            self.compiled = False
            return
        try:
            with _RecursionLimit(len(self.members)):
                self._kernels[0](*args)
        except Exception as e:  # noqa: BLE001 - numba could not compile this region
            if "numba" not in type(e).__module__ and not isinstance(e, RecursionError):
                raise
            self.compiled = False
            return
        jit.touch(self._marker())

    def _run_loop(self, n: int, args: list, outs: list, stored: list, arrays) -> None:
        loop = jit.real(self._kernels[0])
        first = self._ready.get(0) is not True
        try:
            with _RecursionLimit(len(self.members)):
                if first or n < PARALLEL_FROM:  # (a first call compiles or loads it)
                    loop(0, n, *args, *outs, *stored)
                else:
                    self._split(loop, n, args, outs, stored, n)
        except Exception as e:  # noqa: BLE001 - numba could not compile this region
            if "numba" not in type(e).__module__ and not isinstance(e, RecursionError):
                raise
            self.compiled = False
            self._split(self._kernels[1], n, args, outs, stored, self._block)
            return
        if first:
            jit.touch(self._marker())
            self._ready[0] = True
            if self.shape is not None:
                # compiled for good: later calls go straight to it, their thread choice
                # measured anew (the times so far were of NumPy blocks, not of this loop)
                self._size = n
                self._parallel = n >= PARALLEL_FROM
                self._loop = loop
                self._threads = ThreadChoice()
                self._run = self._steady(loop, n, [bool(a.ndim) for a in arrays])

    def _steady(self, loop, n: int, kinds: list) -> Callable:
        """The steady state's call `run(*arrays) -> outputs`: the compiled loop over the
        static shape, in a function made for this kernel's arguments (no lists built,
        no loop over them per call)."""
        spare = n * self.dtype.itemsize >= SPARE_BYTES
        make = _steady_maker(tuple(kinds), self.n_outputs, self.reductions, spare,
                             self._parallel)
        return make(loop, n, [n * f for f in self.factors], self._shapes(self.shape),
                    self.dtype, np.empty, [s.empty for s in self._spares],
                    self._summed.empty, ordered_sum, np.asarray, self._split)

    def _split(self, run_range, n: int, args: list, outs: list, stored: list,
               block: int) -> None:
        """`run_range(lo, hi, ...)` over [0, n): one contiguous run per core, each in
        blocks of `block` elements (numba's loop and NumPy's release the GIL), every
        boundary on a row of the operands broadcast along trailing axes."""
        row = self._kernels[2]
        block = max(row, block // row * row)
        workers = max(1, min(intra_op_threads(), -(-n // PARALLEL_FROM)))  # n may be 0
        several = workers > 1 and self._threads.several()
        start = time.perf_counter()
        workers = workers if several else 1
        step = -(-(-(-n // workers)) // row) * row

        def run(lo, hi):
            for first in range(lo, hi, block):
                run_range(first, min(first + block, hi), *args, *outs, *stored)

        if workers == 1:
            run(0, n)
        else:
            futures = [pool().submit(run, lo, min(lo + step, n))
                       for lo in range(0, n, step)]
            for f in futures:
                f.result()
        if -(-n // PARALLEL_FROM) > 1 and intra_op_threads() > 1:
            self._threads.record(several, time.perf_counter() - start)

    def __repr__(self) -> str:
        shown = "+".join(self.members[:8]) + ("+..." if len(self.members) > 8 else "")
        return f"<fused {len(self.members)} ops: {shown}>"


# Outputs from this many bytes are taken from the kernel's spares (_core/buffers.py: a new
# large array page-faults as it is written); smaller ones are new arrays, which malloc takes
# from freed heap blocks (glibc serves requests below its 128 KB mmap threshold from the
# heap): measured, 7 outputs of 4-64 KB cost 1.4-3x more through spares than as new arrays,
# and a loop that keeps its outputs for the gradient finds no spare free at all.
SPARE_BYTES = 1 << 17
_makers: dict = {}  # (input kinds, outputs, reductions, spares, parallel) -> maker


def _steady_maker(kinds: tuple, n_out: int, n_red: int, spare: bool,
                  parallel: bool) -> Callable:
    """A function making a steady-state call (FusedKernel._steady) for kernels of this
    signature: `kinds[k]` says whether input k is an array (else a 0-d value, passed as
    a scalar); one generated function per signature, shared by every kernel."""
    key = (kinds, n_out, n_red, spare, parallel)
    make = _makers.get(key)
    if make is not None:
        return make
    params = [f"x{k}" for k in range(len(kinds))]
    args = [f"x{k}.ravel()" if array else f"x{k}[()]" for k, array in enumerate(kinds)]
    outs = [f"o{k}" for k in range(n_out)]
    stored = [f"r{k}" for k in range(n_red)]
    body = [f"        {o} = take{k}((N{k},), T)" if spare else f"        {o} = empty(N{k}, T)"
            for k, o in enumerate(outs)]
    body += [f"        {r} = summed((N,), T)" if spare else f"        {r} = empty(N, T)"
             for r in stored]
    if parallel:
        body.append(f"        split(loop, N, [{', '.join(args)}], [{', '.join(outs)}], "
                    f"[{', '.join(stored)}], N)")
    else:
        body.append(f"        loop(0, N, {', '.join(args + outs + stored)})")
    results = [f"{o}.reshape(S{k})" for k, o in enumerate(outs)] + [
        f"asarray(osum({r}), T)" for r in stored]
    body.append(f"        return ({', '.join(results)},)")
    source = "\n".join(
        ["def make(loop, N, Ns, Ss, T, empty, takes, summed, osum, asarray, split):"]
        + [f"    take{k} = takes[{k}]" for k in range(n_out)]
        + [f"    N{k}, S{k} = Ns[{k}], Ss[{k}]" for k in range(n_out)]
        + [f"    def run({', '.join(params)}):"] + body + ["    return run", ""])
    scope: dict = {}
    exec(compile(source, f"<tapeflow fused call {len(_makers)}>", "exec"), scope)  # noqa: S102
    make = _makers[key] = scope["make"]
    return make


def _fused_shape(shapes, dtypes, attrs):
    full = tuple(attrs["shape"])
    return [(full if kind == "full" else full[:-1] + (full[-1] * kind[1],)
             if type(kind) is tuple else (), attrs["dtype"])
            for kind in attrs["kinds"]]


define_op("FusedElementwise", ["inputs"], list_inputs=("inputs",),
          num_outputs=lambda shapes, dtypes, attrs: len(attrs["kinds"]),
          shape=_fused_shape, differentiable=False)
# programs call a fused node's kernel with its input arrays as they are
DIRECT["FusedElementwise"] = lambda attrs: attrs["kernel"].direct


def _joins(graph: FuncGraph, regions: list, readers: dict, graph_outputs: set) -> tuple:
    """The Concats along the last axis of values of one region that nothing else reads
    (only the region and such Concats: an LSTM's or GRU's gate gradients, which a GRU
    joins twice): ({id(region): [(the Concat's output, its values)]}, ids of those Concat
    nodes). The region writes each value into its columns of each such output."""
    owner = {t: r for r in regions for t in r.made}
    found: dict = {}  # id(Concat node) -> (node, its region)
    for node in graph.nodes:
        if node.op != "Concat" or node.dims or late_attrs(node.attrs):
            continue
        values = node.inputs["values"]
        region = owner.get(values[0].id) if values and isinstance(values[0], Tensor) \
            else None
        if region is None or not region.shape:
            continue
        rank = len(region.shape)
        if node.attrs["axis"] % rank == rank - 1 and all(
                isinstance(v, Tensor) and owner.get(v.id) is region and
                v.id not in graph_outputs for v in values):
            found[id(node)] = (node, region)
    changed = True
    while changed:  # (a value some other node reads makes each Concat of it plain again)
        changed = False
        for key, (node, region) in list(found.items()):
            inside = {id(n) for n in region.members + region.reductions}
            if not all(id(r) in inside or id(r) in found
                       for v in node.inputs["values"] for r in readers.get(v.id, ())):
                del found[key]
                changed = True
    joins: dict = {}
    for node, region in found.values():
        joins.setdefault(id(region), []).append((node.outputs[0],
                                                 list(node.inputs["values"])))
    return joins, set(found)


def _inlinable(regions: list, windows: dict, readers: dict, graph_outputs: set,
               used_outside: set) -> dict:
    """The regions whose one value used outside is read only through windows of its
    columns (an LSTM's gate pre-activations z = x W + h U + b, then split): X.id ->
    (that region, ids of the windows). A region reading all those windows computes them
    itself from the same windows of the region's operands (`generate`'s `inline`), so X
    is never made. Its operands must be X-shaped, a bias along the last axis, a value
    per row, or a scalar."""
    out = {}
    for region in regions:
        made = [t for t in region.made if t in used_outside]
        if region.reductions or len(region.shape) < 1 or len(made) != 1 or \
                made[0] in graph_outputs:
            continue
        x = next(n.outputs[0] for n in region.members if n.outputs[0].id == made[0])
        full = tuple(x._shape)
        pieces = set()
        ok = bool(readers.get(x.id))
        for reader in readers.get(x.id, ()):
            if reader.op not in ("Split", "StridedSlice") or not all(
                    o.id in windows and windows[o.id][0] is x for o in reader.outputs):
                ok = False
                break
            pieces.update(o.id for o in reader.outputs)
        for node in region.members if ok else ():
            for u in _operands(node):
                shape = (1,) * (len(full) - len(u._shape)) + tuple(u._shape)
                if not (u.id in region.made or shape == full or len(u._shape) == 0
                        or _suffix(u._shape, full) in ((full[-1],), ())
                        or shape == full[:-1] + (1,)):
                    ok = False
        if ok:
            out[x.id] = (region, pieces)
    return out


def fuse(graph: FuncGraph, outputs: list) -> tuple:
    """(graph with its elementwise regions fused, its outputs, number of regions)."""
    regions = find_regions(graph)
    if not regions:
        return graph, outputs, 0
    used_outside: set = {t.id for t in outputs if isinstance(t, Tensor)}
    member_of: dict = {}
    for region in regions:
        for node in region.members + region.reductions:
            member_of[id(node)] = region
    for node in graph.nodes:
        inside = member_of.get(id(node))
        for v in node.inputs.values():
            for m in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(m, Tensor) and (inside is None or m.id not in inside.made):
                    used_outside.add(m.id)
    windows = _windows(graph)
    readers: dict = {}  # tensor id -> the nodes reading it
    for node in graph.nodes:
        for t in _tensors(node):
            readers.setdefault(t.id, []).append(node)
    graph_outputs = {t.id for t in outputs if isinstance(t, Tensor)}
    joins, joined = _joins(graph, regions, readers, graph_outputs)
    inlinable = _inlinable(regions, windows, readers, graph_outputs, used_outside)
    plans = {}
    for region in regions:
        exported = {t for t in region.made if t in used_outside}
        inside = {id(n) for n in region.members}
        mine = {t: w for t, w in windows.items() if t not in graph_outputs and
                readers.get(t) and all(id(n) in inside for n in readers[t])}
        # (a region whose windows this one reads all of: computed here, never made)
        inline = {x: r.members for x, (r, pieces) in inlinable.items()
                  if r is not region and pieces <= set(mine)}
        plans[id(region)] = generate(region, exported, mine, joins.get(id(region)),
                                     inline)

    new, env = start_rebuild(graph)
    firsts = {id(r.members[0]): r for r in regions}
    # (a Concat a region's outputs became is not run: the region writes its output)
    keep = [n for n in schedule(graph, regions) if id(n) not in joined]

    def apply(node, ins):
        region = firsts.get(id(node))
        if region is None:
            return copy_node(new, node, ins, env)
        source, inputs, outs, reductions, factors = plans[id(region)]
        members = tuple(n.op for n in region.members) + tuple("Sum" for _ in reductions)
        kernel = FusedKernel(source, len(outs), len(reductions), region.dtype, members,
                             region.shape, factors)
        attrs = {"kernel": kernel, "members": members, "dtype": region.dtype,
                 "shape": region.shape,
                 "kinds": tuple("full" if f == 1 else ("columns", f) for f in factors)
                 + ("sum",) * len(reductions)}
        made = new.add_op("FusedElementwise", {"inputs": [env[t.id] for t in inputs]}, attrs,
                          name=f"Fused_{node.name}", site=node.site)
        for t, value in zip(outs + [n.outputs[0] for n in reductions], made):
            env[t.id] = value
        return [env.get(o.id) for o in node.outputs]

    env = eval_graph(graph, env, apply, keep)
    return new, finish_rebuild(graph, new, env, outputs, "fusing"), len(regions)
