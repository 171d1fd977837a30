"""Helpers for defining ops: `defop`, rule shorthands, operand conversion, `sum_to_shape`.

A rule is a function whose positional parameter names say what it reads: the cotangent
`g` (VJP) or tangent `t` (JVP), the output `ans`, and the op's input names; attributes
arrive as keyword arguments. Example (the whole definition of Sin, kernel aside):

    defop("Sin", ["x"], shape=same_shape, **elementwise(lambda x: cos(x)))
"""
from __future__ import annotations

import inspect
import numbers
from typing import Callable

import numpy as np

from .._core import dtypes as _dt
from .._core import tensor as _tensor_mod
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import InvalidArgumentError, describe
from .._core.registry import define_op, passthrough  # noqa: F401  (re-exported for rules)
from .._core.tensor import Dim, Tensor
from .._core.variable import Variable

defop = define_op


def derived(params, fn):
    """Mark `fn(*args, **attrs)` as a rule reading the named `params` (for shorthands)."""
    fn.rule_params = tuple(params)
    return fn


def _names(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def elementwise(dfdx: Callable, name: str = "x") -> dict:
    """VJP and JVP of a unary elementwise op from its local derivative `dfdx(x/ans...)`.

    Complex inputs follow TensorFlow's convention: the VJP multiplies by conj(dfdx).
    """
    params = _names(dfdx)

    def vjp(g, *args, **attrs):
        d = dfdx(*args)
        return g * (_conj(d) if d.dtype.is_complex else d)

    def jvp(t, *args, **attrs):
        return t * dfdx(*args)

    return {"vjp": {name: derived(["g", *params], vjp)},
            "jvp": {name: derived(["t", *params], jvp)}}


def linear(op: Callable, name: str = "x") -> dict:
    """The JVP of an op linear in input `name`: the op itself applied to the tangent.

    Example: `defop("Neg", ["x"], vjp={"x": lambda g: negative(g)}, **linear(negative))`.
    """
    return {"jvp": {name: derived(["t"], lambda t, **attrs: op(t))}}


def nondifferentiable() -> dict:
    """Marks an op whose outputs are integer or boolean: no VJP, no JVP, and tapes and
    accumulators stop there. Example: `defop("Equal", ["x", "y"], **nondifferentiable())`.
    """
    return {"differentiable": False}


def _conj(x):
    return _tensor_mod._ops.conj(x)  # through the op namespace: _op is below the families


# --------------------------------------------------------------------------- shapes


def same_shape(shapes, dtypes, attrs):
    """Shape rule of unary elementwise ops: output is like input `x`."""
    (key,) = [k for k in shapes][:1]
    return [(shapes[key], dtypes[key])]


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


def normalize_axis(op: str, axis, rank: int, arg: str = "axis") -> int:
    """A non-negative axis, or InvalidArgumentError naming the op and the valid range."""
    if isinstance(axis, Tensor):
        axis = int(axis)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise InvalidArgumentError(f"{op}: {arg} must be an int, got {axis!r}")
    if not -rank <= axis < max(rank, 1) and not (rank == 0 and axis in (0, -1)):
        raise InvalidArgumentError(
            f"{op}: {arg}={axis} is out of range for a tensor of rank {rank} "
            f"(valid: [{-rank}, {rank - 1}])")
    return int(axis) % rank if rank else 0


def normalize_axes(op: str, axis, rank: int) -> tuple:
    """A sorted tuple of distinct non-negative axes (None: all axes)."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    out = sorted({normalize_axis(op, a, rank) for a in axis})
    return tuple(out)


# --------------------------------------------------------------------------- operands


def to_tensor(x, dtype_hint=None, op: str = "op", arg: str = "x") -> Tensor:
    """Convert an op argument; Python scalars take `dtype_hint` (the other operand's)."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Variable):
        return x.read_value()
    try:
        if dtype_hint is not None and isinstance(x, (numbers.Number, list, tuple)) \
                and not isinstance(x, np.ndarray):
            return convert_to_tensor(x, dtype=dtype_hint)
        return convert_to_tensor(x)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{op}: argument {arg!r}: {e}") from None


def binary_operands(op: str, x, y) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of one dtype (Python values adapt; tensors must agree)."""
    tx, ty = type(x) is Tensor, type(y) is Tensor
    if tx and ty:
        if x.dtype is not y.dtype:
            raise InvalidArgumentError(
                f"{op}: x and y must have the same dtype, got x: {describe(x)} and "
                f"y: {describe(y)}; cast one with tf.cast")
        return x, y
    if isinstance(x, Variable):
        x, tx = x.read_value(), True
    if isinstance(y, Variable):
        y, ty = y.read_value(), True
    if tx and not ty:
        y = to_tensor(y, x.dtype, op, "y")
    elif ty and not tx:
        x = to_tensor(x, y.dtype, op, "x")
    elif not tx and not ty:
        x = to_tensor(x, None, op, "x")
        y = to_tensor(y, x.dtype, op, "y")
    if x.dtype is not y.dtype:
        raise InvalidArgumentError(
            f"{op}: x and y must have the same dtype, got x: {describe(x)} and y: "
            f"{describe(y)}; cast one with tf.cast")
    return x, y


def require_dtype(op: str, t: Tensor, ok: Callable[[_dt.DType], bool], what: str,
                  arg: str = "x") -> None:
    """Raise InvalidArgumentError unless `ok(t.dtype)`."""
    if not ok(t.dtype):
        raise InvalidArgumentError(f"{op}: argument {arg!r} must be {what}, got {describe(t)}")


# --------------------------------------------------------------------------- tangents


def batch_dims(t: Tensor, primal) -> int:
    """Leading batch dimensions of a (possibly batched) tangent `t` of `primal` (a tensor
    or its rank): 0 for an ordinary tangent, 1 under `ForwardAccumulator(use_batch=True)`."""
    return len(t._shape) - (primal if isinstance(primal, int) else len(primal._shape))


def align_tangent(t: Tensor, primal, rank: int) -> Tensor:
    """A batched tangent of `primal` with unit axes inserted after its batch dimensions,
    so that the primal's axes right-align under `rank` output axes when it broadcasts.

    The one helper every JVP rule of a broadcasting op uses for batched tangents.
    Example: a tangent [B, 3] of a [3] operand meeting a [2, 3] one becomes [B, 1, 3].
    """
    nb = batch_dims(t, primal)
    prank = len(t._shape) - nb
    if nb and rank > prank:
        s = t._shape
        return run_kernel("Reshape", {"x": t},
                          {"shape": s[:nb] + (1,) * (rank - prank) + s[nb:]})
    return t


def num_elements(shape, axes=None):
    """The number of elements of `shape` (over `axes` only, if given), for divisors such
    as a mean's. Rules ask for it here instead of multiplying Python ints themselves,
    so that this one helper decides how to count when a shape is not static."""
    dims = tuple(shape) if axes is None else tuple(shape[a] for a in axes)
    n = 1
    total = None
    for d in dims:
        if type(d) is Dim:  # known when the graph runs: an int32 scalar tensor
            size = _tensor_mod._ops.shape(d.tensor)[d.axis]
            total = size if total is None else total * size
        else:
            n *= d
    return n if total is None else (total * n if n != 1 else total)


# --------------------------------------------------------------------------- gradients


def sum_to_shape(g: Tensor, shape) -> Tensor:
    """Sum `g` down to `shape`, undoing NumPy broadcasting (the one place it is undone).

    Example:
        >>> sum_to_shape(tf.ones([2, 3]), (3,)).numpy()
        array([2., 2., 2.], dtype=float32)
    """
    shape = tuple(shape)
    gs = g._shape
    if gs == shape:
        return g
    if None in gs or any(type(d) is Dim for d in shape):
        # unknown dims (a traced graph): which axes were broadcast is known only when the
        # graph runs, so one kernel decides then
        return run_kernel("SumTo", {"x": g}, {"shape": shape})
    lead = len(gs) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape)
                                if d == 1 and gs[lead + i] != 1]
    out = run_kernel("Sum", {"x": g}, {"axis": tuple(axes), "keepdims": False}) if axes else g
    if out._shape != shape:
        out = run_kernel("Reshape", {"x": out}, {"shape": shape})
    return out


def _sum_to_rule(shapes, dtypes, attrs):
    shape = tuple(attrs["shape"])
    if len(shape) > len(shapes["x"]):
        raise InvalidArgumentError(f"SumTo: cannot sum {list(shapes['x'])} down to "
                                   f"{list(shape)}")
    return [(shape, dtypes["x"])]


def _sum_to_vjp(g, x_shape):
    return run_kernel("BroadcastTo", {"x": g}, {"shape": x_shape})


def _sum_to_jvp(t, x, *, shape):
    nb = batch_dims(t, x)
    if not nb:
        return run_kernel("SumTo", {"x": t}, {"shape": shape})
    # batched: sum each member on its own (the target padded to x's rank), then drop pads
    lead, shape = t._shape[:nb], tuple(shape)
    padded = (1,) * (len(x._shape) - len(shape)) + shape
    out = run_kernel("SumTo", {"x": t}, {"shape": lead + padded})
    return run_kernel("Reshape", {"x": out}, {"shape": lead + shape})


# The kernel of sum_to_shape for shapes known only at run time (traced graphs with unknown
# dims): sums the axes that were broadcast, found from the actual shapes.
define_op("SumTo", ["x"], shape=_sum_to_rule, vjp={"x": _sum_to_vjp}, jvp={"x": _sum_to_jvp})
