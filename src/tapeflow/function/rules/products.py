"""Rules for matrix products, stated as algebra (rule tables for function/rewrite.py):

- A b_1, ..., A b_k = the rows of [b_1; ...; b_k] A^T: matrix-vector products of one
  matrix become one matrix product, reading the matrix once;
- s (A B) = A (s B) for a real scalar s: the scaling moves to the smaller operand;
- v += s op(A) op(B) in every form an update is written (`v.assign_sub(s * P)`,
  `v.assign_add(-P)`, `v.assign(v - P * s)`, `v.assign(P + v)`, ...) by any optimizer:
  one AssignAddMatMul, which a BLAS product accumulates into the variable's buffer.

Each equals its original to rounding (the scalar applied before the sums instead of
after, as TensorFlow's remapper folds a multiply into a product).
"""
from __future__ import annotations

import math

import numpy as np

from ..._core.tensor import Tensor
from ..rewrite import node_of, Pat, PatternMatcher

_ADD_SUB = {"AssignAddVariableOp": 1.0, "AssignSubVariableOp": -1.0}


def _real(dtype) -> bool:
    return dtype.is_floating and not dtype.is_complex


def _static(*tensors) -> bool:
    return all(None not in t._shape for t in tensors)


# ------------------------------------------------------------------ merged products
def _matvec_key(node):
    """The key of the products `node` (a MatVec of the graph rewritten) may merge with: one
    matrix, 2-D, by vectors, one real dtype; else None."""
    a, b = node.inputs["a"], node.inputs["b"]
    if (node.stateful or node.dims or len(a._shape) != 2 or len(b._shape) != 1
            or a.dtype is not b.dtype or not a.dtype.is_floating):
        return None
    return a.id, node.attrs["adjoint_a"], b.dtype


# When one product of k stacked vectors beats k matrix-vector products (shapes alone decide,
# so a graph's bits do not depend on timing): a matrix that stays in cache is read once
# either way and the product saves the calls; a larger one is streamed from memory once
# per matvec, but a BLAS product of a few columns first copies (packs) the whole matrix,
# which costs about two matvecs (2 cores, OpenBLAS: 500x500 float64 by 2 vectors, 104 us as
# matvecs, 222 us as one product; by 4, 170 and 170; by 8, 320 and 219).
MERGE_CACHED_BYTES = 256 << 10
MERGE_FROM = 5


def _worth_merging(group) -> bool:
    a = group[0].inputs["a"]
    size = math.prod(a._shape) * a.dtype.size if None not in a._shape else None
    return len(group) >= MERGE_FROM or (size is not None and size <= MERGE_CACHED_BYTES
                                         and len(group) > 1)


def _matvec_groups(rw) -> dict:
    groups = rw.memo.get("matvecs")
    if groups is None:
        by_key: dict = {}
        for n in rw.walk:
            if n.op == "MatVec":
                key = _matvec_key(n)
                if key is not None:
                    by_key.setdefault(key, []).append(n)
        groups = rw.memo["matvecs"] = {id(g[0]): g for g in by_key.values()
                                       if _worth_merging(g)}
    return groups


def _merge_matvecs(rw, node, a):
    """At the first of several products of one matrix: the products by every vector
    already made (the rest must wait for theirs) as one product of the stacked vectors.
    The other products take their rows when the walk reaches them."""
    group = _matvec_groups(rw).get(id(node.source)) if node.source is not None else None
    if group is None or not _static(a):
        return None
    members = [n for n in group if n.inputs["b"].id in rw.env]
    vectors = [rw.env[n.inputs["b"].id] for n in members]
    members = [n for n, v in zip(members, vectors) if _static(v)]
    if len(members) < 2 or members[0] is not node.source:
        return None
    vectors = [rw.env[n.inputs["b"].id] for n in members]
    stacked = rw.emit("Stack", {"values": vectors}, {"axis": 0}, name=f"{node.name}/stacked",
                      site=node.site)[0]
    # rows b_k of B: A b_k are the rows of B A^T, and A^T b_k those of B A
    product = rw.emit("MatMul", {"a": stacked, "b": a},
                      {"adjoint_a": False, "adjoint_b": not node.attrs["adjoint_a"],
                       "shared_b": False}, name=f"{node.name}/merged", site=node.site)[0]
    rows = rw.emit("Unstack", {"x": product}, {"axis": 0, "num": len(members)},
                   name=f"{node.name}/rows", site=node.site)
    for n, row in zip(members[1:], rows[1:]):
        rw.provide(n, [row])
    rw.count("merged", len(members) - 1)
    return rows[0]


# ------------------------------------------------------------------ scaled products
def _product(node) -> bool:
    return not node.dims and _real(node.outputs[0].dtype)


def _scale_product(rw, node, s, p):
    """s * (A @ B) -> A @ (s * B), B the smaller operand, when the scaled operand is
    smaller than the product (one pass over fewer elements)."""
    product = node_of(p)
    a, b = product.inputs["a"], product.inputs["b"]
    if s.dtype is not p.dtype or not _static(a, b, p):
        return None
    smaller = "a" if math.prod(a._shape) <= math.prod(b._shape) else "b"
    if math.prod(product.inputs[smaller]._shape) >= math.prod(p._shape):
        return None
    scaled = rw.emit("Mul", {"x": product.inputs[smaller], "y": s}, {},
                     name=f"{product.name}/scaled", site=node.site)[0]
    return rw.emit("MatMul", {**product.inputs, smaller: scaled}, product.attrs,
                   name=product.name, site=product.site)


SCALAR = Pat(name="s", value=lambda t: t._shape == ())
PRODUCT = Pat("MatMul", name="p", once=True, where=_product)

PRODUCTS = PatternMatcher([
    (Pat("MatVec", src={"a": Pat(name="a")}), _merge_matvecs),
    (Pat("Mul", src={"x": SCALAR, "y": PRODUCT}, commute=True), _scale_product, "rescaled"),
])


# ------------------------------------------------------------------ accumulated updates
_SCALED = Pat("Mul", src={"x": SCALAR, "y": PRODUCT}, commute=True)


def _product_terms(t, rw):
    """(MatMul node, scale tensor or None, sign) when `t`, read once, is +-P or +-s * P
    for a real matrix product P read once and a 0-d s of its dtype; else None."""
    sign = 1.0
    while True:
        node = node_of(t)
        if node is None or node.stateful or rw.uses(t) != 1:
            return None
        if node.op != "Neg":
            break
        sign, t = -sign, node.inputs["x"]
    caps = PRODUCT.match(t, rw, {})
    scale = None
    if caps is None:
        caps = _SCALED.match(t, rw, {})
        if caps is None or caps["s"].dtype is not t.dtype:
            return None
        scale = caps["s"]
    product = node_of(caps["p"])
    if (caps["p"].dtype is not t.dtype or not _real(t.dtype)
            or any(len(product.inputs[k]._shape) != 2 for k in ("a", "b"))):
        return None
    return product, scale, sign


def _no_write_between(rw, read_node, var) -> bool:
    """Whether no node made after `read_node` (in the new graph, so far) may write `var`."""
    for n in reversed(rw.graph.nodes):
        if n is read_node:
            return True
        if n.stateful and n.op != "ReadVariableOp" and any(
                m is var for v in n.inputs.values()
                for m in (v if type(v) is list else (v,))):
            return False
    return False


def _accumulate(rw, node, var, value, sign, read=None):
    terms = _product_terms(value, rw)
    if terms is None:
        return None
    product, scale, s = terms
    if tuple(product.outputs[0]._shape) != tuple(value._shape):
        return None
    if read is not None:
        read_node = node_of(read)
        if (rw.uses(read) != 1 or read.dtype is not value.dtype
                or tuple(read._shape) != tuple(value._shape)
                or not _no_write_between(rw, read_node, var)):
            return None
        rw.drop(read_node)
    alpha = scale if scale is not None else rw.const(np.ones((), value.dtype._np),
                                                     value.dtype)
    rw.emit("AssignAddMatMul", {"resource": var, "a": product.inputs["a"],
                                "b": product.inputs["b"], "alpha": alpha},
            {"adjoint_a": product.attrs["adjoint_a"], "adjoint_b": product.attrs["adjoint_b"],
             "sign": sign * s}, name=node.name, site=node.site)
    return []


def _update(rw, node, var, value):
    """v.assign_add(+-[s] P), v.assign_sub(+-[s] P)."""
    return _accumulate(rw, node, var, value, _ADD_SUB[node.op])


def _assign_step(rw, node, var, step, read, value):
    """v.assign(v - [s] P), v.assign(v + [s] P), v.assign([s] P + v): v read just before,
    with no write to it in between."""
    if node_of(read).inputs["resource"] is not var:
        return None
    return _accumulate(rw, node, var, value, -1.0 if node_of(step).op == "Sub" else 1.0,
                       read)


_READ = Pat("ReadVariableOp", name="read", effects=True)
_VALUE = Pat(name="value", value=lambda t: isinstance(t, Tensor))

UPDATES = PatternMatcher([
    (Pat(tuple(_ADD_SUB), effects=True, src={"resource": Pat(name="var"), "value": _VALUE}),
     _update, "accumulated"),
    (Pat("AssignVariableOp", effects=True, src={
        "resource": Pat(name="var"),
        "value": Pat("Sub", name="step", once=True, src={"x": _READ, "y": _VALUE})}),
     _assign_step, "accumulated"),
    (Pat("AssignVariableOp", effects=True, src={
        "resource": Pat(name="var"),
        "value": Pat("Add", name="step", once=True, src={"x": _READ, "y": _VALUE},
                     commute=True)}),
     _assign_step, "accumulated"),
])
