"""Reductions and scans: public functions with their shape, VJP and JVP rules."""
from __future__ import annotations

import collections

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.registry import Pointwise
from .._core.shape import broadcast_shapes, is_dim, num_elements
from .._core.tensor import Tensor
from .._core.variable import Variable
from ._args import dtype_arg, int_arg, normalize_axes, normalize_axis, to_tensor
from . import _onnx
from ._define import cast_to, conjugate, defop
from ._tangents import align_tangent, batch_dims
from .math import (abs as _abs, cast, conj, greater, logical_and, logical_not, maximum, minimum,
                   not_equal, real, rsqrt, sqrt, square)
from ._batching import batch_shift_axis

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_logsumexp", "reduce_std", "reduce_variance", "reduce_any", "reduce_all",
           "argmax", "argmin", "top_k", "cumsum", "cumprod", "add_n", "l2_normalize",
           "clip_by_norm", "clip_by_global_norm"]


# --------------------------------------------------------------------------- helpers


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_rule(op: str, out_dtype=None):
    """Shape rule of reductions over the non-negative `axis` attr tuple."""
    def rule(shapes, dtypes, attrs):
        shape = shapes["x"]
        for a in attrs["axis"]:
            if not 0 <= a < len(shape):
                raise InvalidArgumentError(
                    f"{op}: reduction axis {a} is out of range for input shape {list(shape)}")
        return [(_reduced_shape(shape, attrs["axis"], attrs["keepdims"]),
                 out_dtype or dtypes["x"])]
    return rule


def _input(op: str, x, ok, what: str, arg: str = "input_tensor") -> Tensor:
    if type(x) is not Tensor:
        x = to_tensor(x, None, op, arg)
    if not ok(x.dtype):
        raise InvalidArgumentError(f"{op}: argument {arg!r} must be {what}, got {describe(x)}")
    return x


_ALL_AXES = [tuple(range(n)) for n in range(33)]


def _axes(op: str, x: Tensor, axis) -> tuple:
    rank = len(x._shape)
    if axis is None:  # the common cases first: they are on the hot path
        return _ALL_AXES[rank] if rank < 33 else tuple(range(rank))
    if type(axis) is int and -rank <= axis < rank:
        return (axis + rank if axis < 0 else axis,)
    return normalize_axes(op, axis, rank)  # rejects duplicates, as TF's reductions do


def _numeric(d):
    return not d.is_bool and not d.is_string


def _real(d):
    return d.is_floating or d.is_integer


def _inexact(d):
    return d.is_floating or d.is_complex


def _keep(v: Tensor, axis: tuple, keepdims: bool) -> Tensor:
    """`v`, a reduction over `axis`, with those axes put back as size 1 so that it
    broadcasts against the input; inserting axes needs no dimension of the input."""
    if not keepdims:
        for a in axis:  # ascending, so each axis lands at its place in the input
            v = prims.expand_dims(v, axis=(a,))
    return v


def _shift(axis: tuple, t: Tensor, x: Tensor) -> tuple:
    """The axes `axis` of `x` as axes of its tangent `t` (past any batch dimensions)."""
    nb = batch_dims(t, x)
    return tuple(a + nb for a in axis) if nb else axis


def _broadcast_back(g: Tensor, x_shape, axis: tuple, keepdims: bool) -> Tensor:
    """The cotangent of a reduction spread back over the input's shape `x_shape`."""
    # Leading reduced axes (a full reduction, say) need no unit axes: broadcasting
    # already lines g up with the input's trailing axes.
    if axis and axis[-1] != len(axis) - 1:
        g = _keep(g, axis, keepdims)
    return prims.broadcast_to(g, shape=tuple(x_shape))


# --------------------------------------------------------------------------- sum, mean


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Sum over `axis` (all axes when None). Example: `tf.reduce_sum([[1, 2], [3, 4]], 0)`
    -> [4, 6]."""
    x = _input("reduce_sum", input_tensor, _numeric, "numeric (not bool)")
    return run_kernel("Sum", {"x": x}, {"axis": _axes("reduce_sum", x, axis),
                                        "keepdims": bool(keepdims)})


# The VJP reads only x's shape (x_shape), so the tape keeps nothing for a sum.
defop("Sum", ["x"], shape=_reduce_rule("Sum"),
      vjp={"x": lambda g, x_shape, *, axis, keepdims: _broadcast_back(g, x_shape, axis,
                                                                      keepdims)},
      jvp={"x": lambda t, x, *, axis, keepdims: reduce_sum(t, _shift(axis, t, x), keepdims)},
      batch=batch_shift_axis, onnx=_onnx.reduction("ReduceSum"))


# ---------------------------------------------------------------------- sum_to_shape's op


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
defop("SumTo", ["x"], shape=_sum_to_rule, vjp={"x": _sum_to_vjp}, jvp={"x": _sum_to_jvp})



def reduce_mean(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Mean over `axis` (integer inputs divide with truncation, like TensorFlow).

    Example: `tf.reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=1)` -> [1.5, 3.5].
    """
    x = _input("reduce_mean", input_tensor, _numeric, "numeric (not bool)")
    return run_kernel("Mean", {"x": x}, {"axis": _axes("reduce_mean", x, axis),
                                         "keepdims": bool(keepdims)})


def _mean_vjp(g, x_shape, *, axis, keepdims):
    n = num_elements(x_shape, axis)
    if isinstance(n, Tensor):  # unknown dims in a traced graph: counted when it runs
        return _broadcast_back(g / cast_to(n, g.dtype), x_shape, axis, keepdims)
    # n == 0: x, and so its gradient, is empty; skip the division by zero
    return _broadcast_back(g / n if n else g, x_shape, axis, keepdims)


defop("Mean", ["x"], shape=_reduce_rule("Mean"), vjp={"x": _mean_vjp},
      jvp={"x": lambda t, x, *, axis, keepdims: reduce_mean(t, _shift(axis, t, x), keepdims)},
      batch=batch_shift_axis, onnx=_onnx.reduction("ReduceMean"))


# --------------------------------------------------------------------------- max, min


def reduce_max(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Maximum over `axis`; the gradient is shared evenly among tied maxima.

    Example: `tf.reduce_max([[1.0, 5.0], [3.0, 2.0]], axis=0)` -> [3.0, 5.0].
    """
    x = _input("reduce_max", input_tensor, _real, "real numeric")
    return run_kernel("Max", {"x": x}, {"axis": _axes("reduce_max", x, axis),
                                        "keepdims": bool(keepdims)})


def reduce_min(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Minimum over `axis`; the gradient is shared evenly among tied minima.

    Example: `tf.reduce_min([[1.0, 5.0], [3.0, 2.0]], axis=1)` -> [1.0, 2.0].
    """
    x = _input("reduce_min", input_tensor, _real, "real numeric")
    return run_kernel("Min", {"x": x}, {"axis": _axes("reduce_min", x, axis),
                                        "keepdims": bool(keepdims)})


def _extreme_weights(x, ans, axis, keepdims):
    """1/(number of ties) where x attains the reduced extreme, 0 elsewhere (x's shape)."""
    hit = cast_to(prims.equal(x, _keep(ans, axis, keepdims)), x.dtype)
    return hit / reduce_sum(hit, axis, keepdims=True)


def _extreme_vjp(g, x, ans, *, axis, keepdims):
    return _keep(g, axis, keepdims) * _extreme_weights(x, ans, axis, keepdims)


def _extreme_jvp(t, x, ans, *, axis, keepdims):
    return reduce_sum(t * _extreme_weights(x, ans, axis, keepdims), _shift(axis, t, x),
                      keepdims)


defop("Max", ["x"], shape=_reduce_rule("Max"), vjp={"x": _extreme_vjp},
      jvp={"x": _extreme_jvp}, batch=batch_shift_axis, onnx=_onnx.reduction("ReduceMax"))
defop("Min", ["x"], shape=_reduce_rule("Min"), vjp={"x": _extreme_vjp},
      jvp={"x": _extreme_jvp}, batch=batch_shift_axis, onnx=_onnx.reduction("ReduceMin"))


# --------------------------------------------------------------------------- prod


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Product over `axis`; its gradient is exact even where inputs are zero.

    Example: `tf.reduce_prod([[1.0, 2.0], [3.0, 4.0]], axis=1)` -> [2.0, 12.0].
    """
    x = _input("reduce_prod", input_tensor, _numeric, "numeric (not bool)")
    return run_kernel("Prod", {"x": x}, {"axis": _axes("reduce_prod", x, axis),
                                         "keepdims": bool(keepdims)})


def _others_product(x, axis):
    """For every element, the product of the other elements of its reduced block.

    Built from exclusive cumulative products in both directions, so zeros need no
    division: over axes a1..an it is excl_an(x) * excl_a(n-1)(prod_an x) * ...
    """
    out, y = None, x
    for k, a in enumerate(reversed(axis)):
        excl = cumprod(y, a, exclusive=True) * cumprod(y, a, exclusive=True, reverse=True)
        out = excl if out is None else out * excl
        if k < len(axis) - 1:
            y = reduce_prod(y, a, keepdims=True)
    return out


def _prod_vjp(g, x, *, axis, keepdims):
    if not axis:
        return g
    return _keep(g, axis, keepdims) * conjugate(_others_product(x, axis))


def _prod_jvp(t, x, *, axis, keepdims):
    if not axis:
        return t
    return reduce_sum(t * _others_product(x, axis), _shift(axis, t, x), keepdims)


defop("Prod", ["x"], shape=_reduce_rule("Prod"), vjp={"x": _prod_vjp}, jvp={"x": _prod_jvp},
      batch=batch_shift_axis, onnx=_onnx.reduction("ReduceProd"))


# --------------------------------------------------------------------------- logsumexp


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably (shifted by the maximum).

    Example: `tf.reduce_logsumexp([0.0, 0.0])` -> log(2) = 0.6931.
    """
    x = _input("reduce_logsumexp", input_tensor, lambda d: d.is_floating, "floating")
    return run_kernel("LogSumExp", {"x": x}, {"axis": _axes("reduce_logsumexp", x, axis),
                                              "keepdims": bool(keepdims)})


def _softmax(x, axis):
    """exp(x - logsumexp(x)) over `axis`, from x shifted by its max (as the kernel does).

    Not exp(x - ans): ans is rounded at its own magnitude, so for large x that error
    lands in the exponent (at x = [3e7] * 3 in float32 each weight came out as e**-2)."""
    m = reduce_max(x, axis, keepdims=True)
    # an infinite max is not shifted (the kernel's rule); the shift has no derivative
    shift = prims.select_v2(prims.is_finite(m), m, prims.zeros_like(m))
    e = prims.exp(x - prims.stop_gradient(shift))
    return e / reduce_sum(e, axis, keepdims=True)


def _logsumexp_vjp(g, x, *, axis, keepdims):
    return _keep(g, axis, keepdims) * _softmax(x, axis)


def _logsumexp_jvp(t, x, *, axis, keepdims):
    return reduce_sum(t * _softmax(x, axis), _shift(axis, t, x), keepdims)


defop("LogSumExp", ["x"], shape=_reduce_rule("LogSumExp"), vjp={"x": _logsumexp_vjp},
      jvp={"x": _logsumexp_jvp}, batch=batch_shift_axis)


# --------------------------------------------------------------------------- moments


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Population variance over `axis` (real-valued for complex input), a composite.

    Example: `tf.math.reduce_variance([1.0, 2.0, 3.0, 4.0])` -> 1.25.
    """
    x = _input("reduce_variance", input_tensor, _inexact, "floating or complex")
    axes = _axes("reduce_variance", x, axis)
    d = x - reduce_mean(x, axes, keepdims=True)
    sq = real(d * conj(d)) if x.dtype.is_complex else square(d)
    return reduce_mean(sq, axes, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Population standard deviation over `axis`: sqrt(reduce_variance).

    Example: `tf.math.reduce_std([1.0, 3.0])` -> 1.0.
    """
    x = _input("reduce_std", input_tensor, _inexact, "floating or complex")
    return sqrt(reduce_variance(x, _axes("reduce_std", x, axis), keepdims))


# --------------------------------------------------------------------------- any, all


def reduce_any(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Logical or over `axis`. Example: `tf.reduce_any([[True, False]], 1)` -> [True]."""
    x = _input("reduce_any", input_tensor, lambda d: d.is_bool, "bool")
    return run_kernel("Any", {"x": x}, {"axis": _axes("reduce_any", x, axis),
                                        "keepdims": bool(keepdims)})


def reduce_all(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """Logical and over `axis`. Example: `tf.reduce_all([[True, False]], 1)` -> [False]."""
    x = _input("reduce_all", input_tensor, lambda d: d.is_bool, "bool")
    return run_kernel("All", {"x": x}, {"axis": _axes("reduce_all", x, axis),
                                        "keepdims": bool(keepdims)})


defop("Any", ["x"], shape=_reduce_rule("Any", _dt.bool), differentiable=False,
      batch=batch_shift_axis)
defop("All", ["x"], shape=_reduce_rule("All", _dt.bool), differentiable=False,
      batch=batch_shift_axis)


# --------------------------------------------------------------------------- argmax, argmin


def _arg_extreme(op, kernel, input, axis, output_type):
    x = _input(op, input, lambda d: not d.is_complex and not d.is_string, "real numeric or bool",
               "input")
    if x.ndim == 0:
        raise InvalidArgumentError(f"{op}: input must have rank >= 1, got {describe(x)}")
    ax = normalize_axis(op, 0 if axis is None else axis, x.ndim)
    if x._shape[ax] == 0:
        raise InvalidArgumentError(f"{op}: reduction axis {ax} is empty in {describe(x)}")
    out = dtype_arg(op, output_type, "output_type")
    if not out.is_integer:
        raise InvalidArgumentError(f"{op}: output_type must be an integer dtype, got {out}")
    return run_kernel(kernel, {"x": x}, {"axis": ax, "output_type": out})


def argmax(input, axis=None, output_type=_dt.int64, name=None) -> Tensor:
    """Index of the largest value along `axis` (0 when None); first index among ties.

    Example: `tf.math.argmax([1.0, 7.0, 3.0])` -> 1 (int64).
    """
    return _arg_extreme("argmax", "ArgMax", input, axis, output_type)


def argmin(input, axis=None, output_type=_dt.int64, name=None) -> Tensor:
    """Index of the smallest value along `axis` (0 when None); first index among ties.

    Example: `tf.math.argmin([4.0, 1.0, 3.0])` -> 1 (int64).
    """
    return _arg_extreme("argmin", "ArgMin", input, axis, output_type)


def _arg_rule(shapes, dtypes, attrs):
    shape, ax = shapes["x"], attrs["axis"]
    if not 0 <= ax < len(shape):
        raise InvalidArgumentError(f"argmax/argmin: axis {ax} is out of range for input shape "
                                   f"{list(shape)}")
    return [(shape[:ax] + shape[ax + 1:], attrs["output_type"])]


defop("ArgMax", ["x"], shape=_arg_rule, differentiable=False, batch=batch_shift_axis,
      onnx=_onnx.arg("ArgMax"))
defop("ArgMin", ["x"], shape=_arg_rule, differentiable=False, batch=batch_shift_axis,
      onnx=_onnx.arg("ArgMin"))


# --------------------------------------------------------------------------- top_k

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=_dt.int32, name=None) -> TopKV2:
    """The `k` largest entries of the last axis, largest first, and their indices.

    Among equal values the lower index comes first. Example:
        >>> tf.math.top_k([1.0, 5.0, 3.0], k=2)   # values [5, 3], indices [1, 2]
    """
    x = _input("top_k", input, _real, "real numeric", "input")
    k = int_arg("top_k", k, "k", minimum=0)
    if x.ndim == 0 or (x._shape[-1] is not None and k > x._shape[-1]):  # (None: at run time)
        raise InvalidArgumentError(
            f"top_k: input must have rank >= 1 and at least k={k} entries in its last axis, "
            f"got {describe(x)}")
    index_type = dtype_arg("top_k", index_type, "index_type")
    if not index_type.is_integer:
        raise InvalidArgumentError(f"top_k: index_type must be an integer dtype, got "
                                   f"{index_type}")
    values, indices = run_kernel("TopK", {"x": x}, {"k": k, "sorted": bool(sorted),
                                                    "index_type": index_type})
    return TopKV2(values, indices)


def _top_k_rule(shapes, dtypes, attrs):
    shape, k = shapes["x"], attrs["k"]
    if not shape or (shape[-1] is not None and shape[-1] < k):
        raise InvalidArgumentError(f"TopK: input shape {list(shape)} has fewer than k={k} "
                                   "entries in its last axis")
    out = tuple(shape[:-1]) + (k,)
    return [(out, dtypes["x"]), (out, attrs["index_type"])]


def _top_k_vjp(g, x_shape, ans):
    # g[0] is None when only the (integer) indices were used
    return None if g[0] is None else _scatter_last(g[0], ans[1], x_shape[-1])


def _onnx_top_k(e, node):
    values, indices = e.outputs(node)
    found = e.fresh("top_k_indices")
    e.add("TopK", [e.input(node, "x"), e.const(np.asarray([int(node.attrs["k"])], np.int64))],
          [values, found], axis=-1, largest=1, sorted=1)
    e.add("Cast", [found], [indices], to=e.dtype_code(node.outputs[1].dtype))


# Leading dims of the tangent and the indices broadcast, batch dims included.
defop("TopK", ["x"], num_outputs=2, shape=_top_k_rule, vjp={"x": _top_k_vjp},
      jvp={"x": lambda t, ans: [_gather_last(t, ans[1]), None]}, onnx=_onnx_top_k)


# Linear helpers behind top_k's derivatives, each the other's transpose, and the one
# place their kernels run. Leading dims of x/updates and indices broadcast (right-aligned,
# as NumPy); scatter indices must be distinct along the last axis.


def _gather_last(x, indices) -> Tensor:
    """out[..., j] = x[..., indices[..., j]] (take_along_axis on the last axis)."""
    return run_kernel("GatherLastAxis", {"x": to_tensor(x, None, "top_k", "x"),
                                         "indices": to_tensor(indices, None, "top_k", "indices")})


def _scatter_last(updates, indices, n: int) -> Tensor:
    """Zeros of last dim `n` with out[..., indices[..., j]] = updates[..., j]."""
    return run_kernel("ScatterLastAxis", {"updates": to_tensor(updates, None, "top_k", "updates"),
                                          "indices": to_tensor(indices, None, "top_k", "indices")},
                      {"n": n if is_dim(n) else int(n)})


def _lead_broadcast(op, a, b):
    return broadcast_shapes(op, a[:-1], b[:-1])


def _gather_last_rule(shapes, dtypes, attrs):
    x, idx = shapes["x"], shapes["indices"]
    if not x or not idx or not dtypes["indices"].is_integer:
        raise InvalidArgumentError(f"GatherLastAxis: needs rank >= 1 operands and integer "
                                   f"indices, got {list(x)} and {list(idx)}")
    return [(_lead_broadcast("GatherLastAxis", x, idx) + idx[-1:], dtypes["x"])]


def _scatter_last_rule(shapes, dtypes, attrs):
    u, idx = shapes["updates"], shapes["indices"]
    if not u or not idx or not dtypes["indices"].is_integer:
        raise InvalidArgumentError(f"ScatterLastAxis: needs rank >= 1 operands and integer "
                                   f"indices, got {list(u)} and {list(idx)}")
    return [(_lead_broadcast("ScatterLastAxis", u, idx) + (attrs["n"],), dtypes["updates"])]


# A batched tangent of an operand of lower rank than the indices gets its unit axes
# after the batch dimensions, which then lead the output.
defop("GatherLastAxis", ["x", "indices"], shape=_gather_last_rule,
      vjp={"x": lambda g, x_shape, indices: _scatter_last(g, indices, x_shape[-1])},
      jvp={"x": lambda t, x, indices: _gather_last(align_tangent(t, x, indices.ndim),
                                                   indices)})
defop("ScatterLastAxis", ["updates", "indices"], shape=_scatter_last_rule,
      vjp={"updates": lambda g, indices: _gather_last(g, indices)},
      jvp={"updates": lambda t, updates, indices, *, n: _scatter_last(
          align_tangent(t, updates, indices.ndim), indices, n)})


# --------------------------------------------------------------------------- scans


def _scan_args(op, x, axis, exclusive, reverse):
    x = _input(op, x, _numeric, "numeric (not bool)", "x")
    if x.ndim == 0:
        raise InvalidArgumentError(f"{op}: x must have rank >= 1, got {describe(x)}")
    return x, {"axis": normalize_axis(op, axis, x.ndim), "exclusive": bool(exclusive),
               "reverse": bool(reverse)}


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Cumulative sum along `axis` (`exclusive` starts at 0, `reverse` runs backwards).

    Example: `tf.math.cumsum([1, 2, 3], exclusive=True)` -> [0, 1, 3].
    """
    x, attrs = _scan_args("cumsum", x, axis, exclusive, reverse)
    return run_kernel("Cumsum", {"x": x}, attrs)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Cumulative product along `axis` (`exclusive` starts at 1, `reverse` runs backwards).

    Example: `tf.math.cumprod([1, 2, 3], reverse=True)` -> [6, 6, 3].
    """
    x, attrs = _scan_args("cumprod", x, axis, exclusive, reverse)
    return run_kernel("Cumprod", {"x": x}, attrs)


def _scan_rule(shapes, dtypes, attrs):
    shape = shapes["x"]
    if not 0 <= attrs["axis"] < len(shape):
        raise InvalidArgumentError(f"cumsum/cumprod: axis {attrs['axis']} is out of range "
                                   f"for shape {list(shape)}")
    return [(shape, dtypes["x"])]


def _onnx_cumsum(e, node):
    a = node.attrs
    e.add("CumSum", [e.input(node, "x"), e.const(np.asarray(int(a["axis"]), np.int64))],
          e.outputs(node), exclusive=int(bool(a.get("exclusive"))),
          reverse=int(bool(a.get("reverse"))))


# A cumulative sum's transpose is the cumulative sum the other way.
defop("Cumsum", ["x"], shape=_scan_rule,
      vjp={"x": lambda g, *, axis, exclusive, reverse: cumsum(g, axis, exclusive, not reverse)},
      jvp={"x": lambda t, x, *, axis, exclusive, reverse: cumsum(t, axis + batch_dims(t, x),
                                                                 exclusive, reverse)},
      batch=batch_shift_axis, onnx=_onnx_cumsum)


# d ans_j / d x_i is the product of the other factors of ans_j: ans_j / x_i where x_i != 0.
# TensorFlow divides (div_no_nan), which makes the gradient 0 at a zero where it is not:
# d/dx sum(cumprod([1.5, 0, 2])) = [1, 4.5, 0]. At zeros the rules below use instead the
# products `skip` of x with its first zero in scan order (z) replaced by 1: for j whose
# product includes z, d ans_j / d x_z = skip_j, and every other entry at or after z (in
# scan order) has a zero among its other factors, so ans / x_safe gives its true 0. Exact
# to first order at any zeros; the second order is exact where x has at most one zero per
# scanned line (the expressions below are then polynomials in x).


def _cumprod_zeros(x: Tensor, axis: int, exclusive: bool, reverse: bool):
    """(nonzero, x_safe, first, skip): x != 0; x with its zeros replaced by 1; where x
    has its first zero along the scan; the cumulative products of x with that zero
    replaced by 1 (the derivatives of ans with respect to that zero)."""
    nonzero = not_equal(x, 0)
    zero = logical_not(nonzero)
    zeros_so_far = prims.cumsum(cast_to(zero, _dt.int32), axis=axis, exclusive=False,
                                reverse=reverse)
    first = logical_and(zero, prims.equal(zeros_so_far, prims.ones_like(zeros_so_far)))
    one = prims.ones_like(x)
    skip = cumprod(prims.select_v2(first, one, x), axis, exclusive, reverse)
    return nonzero, prims.select_v2(nonzero, x, one), first, skip


def _cumprod_vjp(g, x, ans, *, axis, exclusive, reverse):
    nonzero, x_safe, _, skip = _cumprod_zeros(x, axis, exclusive, reverse)
    # Off the zeros: sum over j >= i of g_j ans_j / x_i. At the first zero: sum of g_j skip_j
    # over the j whose product includes it; at any later zero that sum is 0 (skip_j has
    # that zero among its factors).
    by_ratio = cumsum(g * conjugate(ans), axis, exclusive, not reverse) / conjugate(x_safe)
    at_zero = cumsum(g * conjugate(skip), axis, exclusive, not reverse)
    return prims.select_v2(nonzero, by_ratio, at_zero)


def _cumprod_jvp(t, x, ans, *, axis, exclusive, reverse):
    _, x_safe, first, skip = _cumprod_zeros(x, axis, exclusive, reverse)
    a = axis + batch_dims(t, x)
    # ans_j sum_i t_i / x_i where ans_j's factors are nonzero (ans_j = 0 otherwise, which
    # drops those terms), plus skip_j t_z for the j whose product includes the first zero z.
    return (ans * cumsum(t / x_safe, a, exclusive, reverse)
            + skip * cumsum(prims.select_v2(first, t, prims.zeros_like(t)), a, exclusive,
                            reverse))


defop("Cumprod", ["x"], shape=_scan_rule, vjp={"x": _cumprod_vjp}, jvp={"x": _cumprod_jvp},
      batch=batch_shift_axis)


# --------------------------------------------------------------------------- add_n


def add_n(inputs, name=None) -> Tensor:
    """Elementwise sum of a list of tensors of one shape and dtype.

    Example: `tf.add_n([tf.ones([2]), tf.ones([2]), tf.ones([2])])` -> [3., 3.].
    """
    if isinstance(inputs, (Tensor, Variable)) or not isinstance(inputs, (list, tuple)) \
            or not inputs:
        raise InvalidArgumentError("add_n: inputs must be a non-empty list of tensors, got "
                                   f"{describe(inputs)}")
    xs = [v if type(v) is Tensor else to_tensor(v, None, "add_n", "inputs") for v in inputs]
    first = xs[0]
    if len(xs) == 1:
        return first
    shape, dtype = first._shape, first.dtype
    if dtype.is_string:  # TF: one string input passes through, more do not add
        raise InvalidArgumentError(f"add_n: inputs must be numeric, got {describe(first)}")
    for v in xs:
        if v._shape != shape or v.dtype is not dtype:
            raise InvalidArgumentError(
                "add_n: all inputs must have the same shape and dtype, got "
                + ", ".join(describe(u) for u in xs))
    return run_kernel("AddN", {"inputs": xs}, {"N": len(xs)})


def _add_n_rule(shapes, dtypes, attrs):
    out = None
    for s in shapes["inputs"]:
        if out is None:
            out = tuple(s)
            continue
        if len(s) != len(out) or any(a is not None and b is not None and a != b
                                     for a, b in zip(s, out)):
            raise InvalidArgumentError(f"AddN: inputs have different shapes "
                                       f"{[list(v) for v in shapes['inputs']]}")
        out = tuple(b if a is None else a for a, b in zip(out, s))
    if any(d is not dtypes["inputs"][0] for d in dtypes["inputs"]):
        raise InvalidArgumentError(f"AddN: inputs have different dtypes "
                                   f"{[d.name for d in dtypes['inputs']]}")
    return [(out, dtypes["inputs"][0])]


# t lists the members' tangents, None where a member has none (at least one has one).
def _sum_left_to_right(*operands: str) -> str:
    return " + ".join(operands)  # as the AddN kernel adds them


defop("AddN", ["inputs"], list_inputs=["inputs"], shape=_add_n_rule,
      vjp={"inputs": lambda g, *, N: [g] * N},
      jvp={"inputs": lambda t: add_n([v for v in t if v is not None])},
      pointwise=Pointwise(_sum_left_to_right))


# --------------------------------------------------------------------------- norms


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None) -> Tensor:
    """x / sqrt(max(sum(x**2, axis), epsilon)) (a composite).

    Example: `tf.math.l2_normalize([3.0, 4.0])` -> [0.6, 0.8].
    """
    x = _input("l2_normalize", x, _inexact, "floating or complex", "x")
    axes = _axes("l2_normalize", x, dim if axis is None and dim is not None else axis)
    if x.dtype.is_complex:
        sq = reduce_sum(real(x * conj(x)), axes, keepdims=True)
        return x * cast(rsqrt(maximum(sq, epsilon)), x.dtype)
    return x * rsqrt(maximum(reduce_sum(square(x), axes, keepdims=True), epsilon))


def _clip_dense(t: Tensor, clip_norm, axes) -> Tensor:
    clip_norm = to_tensor(clip_norm, t.dtype, "clip_by_norm", "clip_norm")
    if clip_norm.dtype is not t.dtype or \
            broadcast_shapes("clip_by_norm", t._shape, clip_norm._shape) != t._shape:
        raise InvalidArgumentError(
            f"clip_by_norm: clip_norm must be a scalar of t's dtype, got clip_norm: "
            f"{describe(clip_norm)} for t: {describe(t)}")
    l2sum = reduce_sum(t * t, axes, keepdims=True)
    positive = greater(l2sum, 0.0)
    # sqrt only where positive, so the gradient at an all-zero t stays finite
    safe = prims.select_v2(positive, l2sum, prims.ones_like(l2sum))
    l2norm = prims.select_v2(positive, sqrt(safe), l2sum)
    return t * clip_norm / maximum(l2norm, clip_norm)


def clip_by_norm(t, clip_norm, axes=None, name=None) -> Tensor:
    """Rescale `t` so its L2 norm over `axes` is at most `clip_norm` (a composite).

    Example: `tf.clip_by_norm([3.0, 4.0], 1.0)` -> [0.6, 0.8].
    """
    if isinstance(t, IndexedSlices):
        values = _input("clip_by_norm", t.values, lambda d: d.is_floating, "floating", "t")
        clipped = _clip_dense(values, clip_norm, _axes("clip_by_norm", values, axes))
        return IndexedSlices(clipped, t.indices, t.dense_shape)
    t = _input("clip_by_norm", t, lambda d: d.is_floating, "floating", "t")
    return _clip_dense(t, clip_norm, _axes("clip_by_norm", t, axes))


def _global_norm(tensors: list) -> Tensor:
    sums = [reduce_sum(v * v) for v in tensors]
    dtype = sums[0].dtype
    sums = [s if s.dtype is dtype else cast(s, dtype) for s in sums]
    return sqrt(add_n(sums))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None) -> tuple:
    """Scale every tensor by clip_norm / max(global_norm, clip_norm).

    Returns `(list_clipped, global_norm)`; `None` entries stay `None`. Example:
        >>> clipped, norm = tf.clip_by_global_norm([tf.constant([3.0]), tf.constant([4.0])],
        ...                                        1.0)   # norm 5.0, clipped [0.6], [0.8]
    """
    if isinstance(t_list, (Tensor, Variable)) or not isinstance(t_list, (list, tuple)):
        raise InvalidArgumentError("clip_by_global_norm: t_list must be a list of tensors, "
                                   f"got {describe(t_list)}")
    dense = []
    for v in t_list:
        if v is None:
            continue
        v = v.values if isinstance(v, IndexedSlices) else v
        dense.append(_input("clip_by_global_norm", v, lambda d: d.is_floating, "floating",
                            "t_list"))
    if not dense:
        raise InvalidArgumentError("clip_by_global_norm: t_list holds no tensor")
    if use_norm is None:
        norm = _global_norm(dense)
    else:
        norm = to_tensor(use_norm, dense[0].dtype, "clip_by_global_norm", "use_norm")
    clip = to_tensor(clip_norm, norm.dtype, "clip_by_global_norm", "clip_norm")
    if clip.size != 1 or clip.dtype is not norm.dtype:
        raise InvalidArgumentError(
            f"clip_by_global_norm: clip_norm must be a scalar of dtype {norm.dtype.name}, got "
            f"{describe(clip)}")
    # clip * min(1/norm, 1/clip) is 1 when norm <= clip; adding norm - norm makes the
    # scale NaN for an infinite norm, as in TensorFlow.
    scale = clip * minimum(1.0 / norm, 1.0 / clip) + (norm - norm)
    out = []
    for v in t_list:
        if v is None:
            out.append(None)
            continue
        vals = v.values if isinstance(v, IndexedSlices) else to_tensor(
            v, None, "clip_by_global_norm", "t_list")
        s = scale if vals.dtype is scale.dtype else cast(scale, vals.dtype)
        if isinstance(v, IndexedSlices):
            out.append(IndexedSlices(vals * s, v.indices, v.dense_shape))
        else:
            out.append(vals * s)
    return out, norm


# --------------------------------------------------------------------------- composites

__all__ += ["count_nonzero", "reduce_euclidean_norm"]


def count_nonzero(input, axis=None, keepdims=None, dtype=_dt.int64, name=None) -> Tensor:
    """The number of non-zero (True, for bool) elements along `axis` (all by default).

    Example: `tf.math.count_nonzero([[0, 1], [2, 0]], axis=1)` -> [1, 1] (int64).
    """
    x = to_tensor(input, None, "count_nonzero", "input")
    axes = _axes("count_nonzero", x, axis)  # (checked here, so that a bad axis names us)
    nonzero = not_equal(x, False if x.dtype.is_bool else b"" if x.dtype.is_string else 0)
    return reduce_sum(cast(nonzero, dtype_arg("count_nonzero", dtype)), axes,
                      bool(keepdims))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """`sqrt(sum(x**2))` along `axis` (all by default); integers keep their dtype
    (the root truncated, as in TensorFlow).

    Example: `tf.math.reduce_euclidean_norm([[3., 4.]], axis=1)` -> [5.].
    """
    x = to_tensor(input_tensor, None, "EuclideanNorm", "input_tensor")
    if x.dtype.is_bool:
        raise InvalidArgumentError(f"EuclideanNorm: input must be numeric, got {describe(x)}")
    axis = _axes("EuclideanNorm", x, axis)  # (checked here, so that a bad axis names us)
    if x.dtype.is_integer:
        return cast(reduce_euclidean_norm(cast(x, _dt.float64), axis, keepdims), x.dtype)
    if x.dtype.is_complex:
        return cast(reduce_euclidean_norm(_abs(x), axis, keepdims), x.dtype)
    return sqrt(reduce_sum(square(x), axis, keepdims))
