"""Rules for the graphs of loops and their gradients (rule table for function/rewrite.py).

- The sum of slice gradients of one shape whose slices are disjoint ranges of one axis
  (the gradient of a tensor split into parts, as an RNN cell's gates are) is one Concat
  of the parts' gradients, zeros in the gaps: each StridedSliceGrad would write its part
  into zeros of the whole shape and the sum add them all. Each element is then one part's
  value instead of that value plus zeros (equal but for the sign of a zero).
"""
from __future__ import annotations

from ..rewrite import node_of, Pat, PatternMatcher


def _range(node) -> tuple | None:
    """(axis, start, stop, whole shape) when StridedSliceGrad `node` writes its `dy` into
    rows [start, stop) of one axis of static extent, every other axis whole; else None."""
    a = node.attrs
    if a["shrink_axis_mask"] or a["new_axis_mask"]:
        return None
    shape = tuple(a["shape"])
    found = None
    for i, (b, e, s) in enumerate(zip(a["begin"], a["end"], a["strides"])):
        if s not in (None, 1):
            return None
        d = shape[i]
        if type(d) is not int:  # unknown extent: whole only when written open
            if b not in (None, 0) or e is not None:
                return None
            continue
        start, stop, _ = slice(b, e, 1).indices(d)
        if start == 0 and stop == d:
            continue
        if found is not None or stop <= start:
            return None
        found = (i, start, stop)
    return None if found is None else found + (shape,)


def _terms(node) -> list:
    return list(node.inputs["inputs"]) if node.op == "AddN" else [node.inputs["x"],
                                                                 node.inputs["y"]]


def _join_slices(rw, node):
    """AddN / Add of StridedSliceGrads of disjoint ranges of one axis: one Concat (plus the
    other terms, if any)."""
    groups: dict = {}
    rest = []
    for t in _terms(node):
        src = node_of(t)
        r = _range(src) if src is not None and src.op == "StridedSliceGrad" else None
        if r is None:
            rest.append(t)
            continue
        axis, start, stop, shape = r
        groups.setdefault((axis, shape, t.dtype), []).append(
            (start, stop, src.inputs["dy"], t))
    joined = []
    for (axis, shape, dtype), parts in groups.items():
        parts.sort(key=lambda p: p[0])
        if len(parts) < 2 or any(a[1] > b[0] for a, b in zip(parts, parts[1:])):
            rest.extend(p[3] for p in parts)  # (overlapping: left as they are)
            continue
        pieces, sizes, at = [], [], 0
        for start, stop, dy, _ in parts + [(shape[axis], shape[axis], None, None)]:
            if start > at:  # a gap: zeros (static shape needed to make them)
                gap = shape[:axis] + (start - at,) + shape[axis + 1:]
                if not all(type(d) is int for d in gap):
                    return None
                pieces.append(rw.emit("Zeros", {}, {"shape": gap, "dtype": dtype},
                                      name=f"{node.name}/gap", site=node.site)[0])
                sizes.append(start - at)
            if dy is not None:
                pieces.append(dy)
                sizes.append(stop - start)
            at = stop
        joined.append(rw.emit("Concat", {"values": pieces},
                              {"axis": axis, "sizes": tuple(sizes)},
                              name=f"{node.name}/joined", site=node.site)[0])
    if not joined:
        return None
    terms = joined + rest
    if len(terms) == 1:
        return terms[0]
    if len(terms) == 2:
        return rw.emit("Add", {"x": terms[0], "y": terms[1]}, {}, name=node.name,
                       site=node.site)
    return rw.emit("AddN", {"inputs": terms}, {"N": len(terms)}, name=node.name,
                   site=node.site)


LOOPS = PatternMatcher([
    (Pat(("AddN", "Add")), _join_slices, "simplified"),
])
