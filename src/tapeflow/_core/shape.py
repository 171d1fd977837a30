"""Shapes whose entries are ints or symbolic dims (`Dim`), and the arithmetic rules need.

A traced tensor may have unknown (None) dimensions. Shape and gradient rules never test
for that themselves: they build shapes with `dims_of`, `size_of` and `dims_product`, count
elements with `num_elements`, broadcast with `broadcast_shapes` and compare with
`compatible`; where a size is only known when a graph runs, these return a `Dim` that the
graph resolves then (function/graph.py), so one rule serves eager and traced calls alike.
"""
from __future__ import annotations

from . import dtypes as _dt, prims
from .convert import convert_to_tensor
from .errors import InvalidArgumentError
from .tensor import SYMBOLIC, Tensor


class Dim:
    """An unknown dimension of a symbolic tensor, standing in a shape for its run-time
    value: `Dim(x, 0)` is x's first dimension, `Dim(x, (1, 2))` the product of two.
    Gradient rules of traced functions receive `<input>_shape` tuples holding them and pass
    them on to reshape/broadcast attributes; a graph resolves them when it runs, so a
    backward graph bakes in no batch size."""

    __slots__ = ("tensor", "axis")

    def __init__(self, tensor: Tensor, axis):
        self.tensor, self.axis = tensor, axis

    def __eq__(self, other):
        return isinstance(other, Dim) and other.tensor is self.tensor and other.axis == self.axis

    def __hash__(self):
        return hash((self.tensor.id, self.axis))

    def __repr__(self) -> str:
        return f"Dim({self.tensor.name}, {self.axis})"


def is_dim(d) -> bool:
    """Whether a shape entry is a run-time size (a `Dim`) rather than an int."""
    return type(d) is Dim


def has_dims(shape) -> bool:
    """Whether `shape` holds any run-time size (`Dim`)."""
    return any(type(d) is Dim for d in shape)


def is_symbolic(t) -> bool:
    """Whether `t` is a tensor of a graph being traced (it has no value yet)."""
    return type(t) is Tensor and t._buf == SYMBOLIC


def known_dims(shape) -> tuple:
    """`shape` with every `Dim` as None: what shape rules see."""
    return tuple(None if type(d) is Dim else d for d in shape)


def with_dims(t: Tensor) -> tuple:
    """The shape of `t` with its unknown (None) dimensions as `Dim`s of `t`."""
    return tuple(Dim(t, a) if d is None else d for a, d in enumerate(t._shape))


def dims_of(t: Tensor) -> tuple:
    """`t`'s shape for building other shapes (reshape, broadcast, zeros attributes): its
    static shape, or in a traced graph with unknown dims, those dims as `Dim`s of `t`,
    resolved when the graph runs (a raw None must never reach an attribute)."""
    s = t._shape
    return with_dims(t) if None in s else s


def size_of(t: Tensor, axes) -> "int | Dim":
    """The product of `t`'s dims over `axes` (a reshape merging them): an int when they
    are static, else a `Dim` over the tuple of axes, resolved to the product at run time.
    Example: `size_of(x, (1, 2))` is 12 for x of shape [2, 3, 4]."""
    s = t._shape
    n = 1
    for a in axes:
        d = s[a]
        if d is None:
            return Dim(t, tuple(axes))
        n *= d
    return n


def dims_product(dims) -> "int | Dim":
    """The product of `dims` (ints and `Dim`s), for a reshape that merges them: an int when
    all are static; a `Dim` over several axes when the unknown ones are dims of one tensor
    (and the static ones multiply to 1); else -1, for reshape to infer (valid where it
    is the one merged entry of a nonempty shape)."""
    n, axes, src = 1, [], None
    for d in dims:
        if type(d) is Dim:
            if src is not None and d.tensor is not src:
                src = False
            elif src is not False:
                src = d.tensor
                axes.extend(d.axis if type(d.axis) is tuple else (d.axis,))
        else:
            n *= d
    if src is None or n == 0:
        return n
    return Dim(src, tuple(axes)) if src is not False and n == 1 else -1


def _run_time_size(d: Dim) -> Tensor:
    """The int32 scalar tensor a `Dim` stands for when the graph runs."""
    shape = prims.shape(x=d.tensor, out_type=_dt.int32)
    axes = d.axis if type(d.axis) is tuple else (d.axis,)
    sizes = prims.gather_v2(params=shape, indices=convert_to_tensor(list(axes)),
                            axis=0, batch_dims=0)
    return prims.prod(x=sizes, axis=(0,), keepdims=False)


def num_elements(shape, axes=None):
    """The number of elements of `shape` (over `axes` only, if given), for divisors such
    as a mean's: an int, or an int32 scalar tensor when a dim is known only at run time.
    Rules ask for it here instead of multiplying Python ints themselves, so that this one
    helper decides how to count when a shape is not static."""
    dims = tuple(shape) if axes is None else tuple(shape[a] for a in axes)
    n = 1
    total = None
    for d in dims:
        if type(d) is Dim:
            size = _run_time_size(d)
            total = size if total is None else prims.mul(x=total, y=size)
        else:
            n *= d
    if total is None:
        return n
    return total if n == 1 else prims.mul(x=total, y=convert_to_tensor(n, dtype=_dt.int32))


def _int_values(t) -> tuple | None:
    """The entries of a concrete integer tensor (a captured constant) as ints, else None."""
    if type(t) is not Tensor or not t.dtype.is_integer:
        return None
    return tuple(int(v) for v in t.numpy().reshape(-1))


def traced_dims(t: Tensor) -> tuple | None:
    """The dims a symbolic integer tensor stands for when it is a traced shape: `tf.shape(x)`
    (x's dims, unknown ones as `Dim`s), a slice or element of one (`tf.shape(x)[0]`, a
    1-tuple), a constant, or a `tf.stack`/`tf.concat` of such; None for any other tensor.
    This is how `tf.reshape(y, [tf.shape(x)[0], -1])`, `tf.reshape(y, tf.stack([n, -1]))`
    and `tf.zeros(tf.shape(x))` keep run-time sizes in a graph."""
    node = t._native.node
    if node is None:
        return None
    if node.op == "Shape":
        return dims_of(node.inputs["x"])
    if node.op == "Const":
        value = node.attrs["value"]
        return tuple(int(v) for v in value.reshape(-1)) if value.dtype.kind in "iu" else None
    if node.op in ("Stack", "Concat") and node.attrs.get("axis") == 0:
        parts = [traced_dims(v) if is_symbolic(v) else _int_values(v)
                 for v in node.inputs["values"]]
        if any(p is None for p in parts) or (node.op == "Stack" and any(
                v.ndim for v in node.inputs["values"])):
            return None
        return tuple(d for p in parts for d in p)
    if node.op != "StridedSlice" or node.attrs.get("new_axis_mask"):
        return None
    whole = traced_dims(node.inputs["x"])
    if whole is None:
        return None
    a = node.attrs
    (b,), (e,), (st,) = a["begin"], a["end"], a["strides"]
    if a.get("shrink_axis_mask"):
        return (whole[b],)
    return whole[b:e:st]



def compatible(a, b) -> bool:
    """Whether shapes `a` and `b` may be equal: one length, and each pair of dims equal or
    one of them unknown (None). For checks of traced shapes; eager ones compare with ==."""
    return len(a) == len(b) and all(x == y or x is None or y is None for x, y in zip(a, b))


def broadcast_shapes(op: str, a, b) -> tuple:
    """NumPy broadcasting of two shapes that may hold None (unknown) dimensions."""
    a, b = tuple(a), tuple(b)
    a0, b0 = a, b
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for da, db in zip(a, b):
        if da == 1:
            out.append(db)
        elif db == 1 or da == db:
            out.append(da)
        elif da is None or db is None:
            out.append(da if db is None else db)
        else:
            raise InvalidArgumentError(
                f"{op}: incompatible shapes for broadcasting: {list(a0)} and {list(b0)}")
    return tuple(out)
