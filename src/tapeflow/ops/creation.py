"""Ops that create tensors: constants, fills, ranges, one-hot, eye."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import broadcast_shapes, dims_of, is_dim, is_symbolic
from .._core.tensor import Tensor
from .._core.variable import Variable
from ._args import (ArgumentTypeError, as_int, dtype_arg, int_arg, normalize_axis, shape_arg, show,
                    to_tensor)
from . import _onnx
from ._define import defop, passthrough
from .math import add, cast, multiply
from ._batching import batch_elementwise

__all__ = ["constant", "convert_to_tensor", "zeros", "ones", "zeros_like", "ones_like", "fill",
           "range", "linspace", "eye", "one_hot"]


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A tensor holding `value` (Python floats become float32, ints int32).

    With `shape`, a scalar is filled out to it and other values are reshaped.
    Example:
        >>> tf.constant([[1, 2], [3, 4]], dtype=tf.float64).shape
        TensorShape([2, 2])
    """
    dtype = dtype_arg("constant", dtype, optional=True)
    if isinstance(value, Tensor) and dtype is not None and value.dtype is not dtype:
        t = cast(value, dtype)
    else:
        try:
            if dtype is None and isinstance(value, (list, tuple)):
                # Python numbers next to tensors take the tensors' dtype (TF's auto-packing)
                t = convert_to_tensor(value, dtype_hint=_tensor_dtype_in(value))
            else:
                t = convert_to_tensor(value, dtype=dtype)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"constant: argument 'value': {e}") from None
    if shape is not None:
        shape = shape_arg("constant", shape)
        if t.size == 1 and int(np.prod(shape)) != 1:
            return run_kernel("BroadcastTo", {"x": t}, {"shape": shape}) if t.ndim == 0 else \
                run_kernel("BroadcastTo", {"x": run_kernel("Reshape", {"x": t}, {"shape": ()})},
                           {"shape": shape})
        if t.size != int(np.prod(shape)):
            raise InvalidArgumentError(
                f"constant: value has {t.size} elements, cannot be shaped {list(shape)}")
        t = run_kernel("Reshape", {"x": t}, {"shape": shape})
    return t


def _tensor_dtype_in(value):
    """The dtype of the first tensor in a nested list, or None."""
    for v in value:
        if isinstance(v, (Tensor, Variable)):
            return v.dtype
        if isinstance(v, (list, tuple)):
            d = _tensor_dtype_in(v)
            if d is not None:
                return d
    return None


def _creation_shape(shapes, dtypes, attrs):
    return [(tuple(attrs["shape"]), attrs["dtype"])]


def zeros(shape, dtype=_dt.float32, name=None) -> Tensor:
    """A tensor of zeros. Example: `tf.zeros([2, 3])`."""
    return run_kernel("Zeros", {}, {"shape": shape_arg("zeros", shape),
                                    "dtype": dtype_arg("zeros", dtype)})


def ones(shape, dtype=_dt.float32, name=None) -> Tensor:
    """A tensor of ones. Example: `tf.ones([2], tf.int32)`."""
    dtype = dtype_arg("ones", dtype)
    if dtype.is_string:
        raise InvalidArgumentError("ones: dtype string has no one; use tf.fill")
    return run_kernel("Ones", {}, {"shape": shape_arg("ones", shape), "dtype": dtype})


defop("Zeros", [], shape=_creation_shape, differentiable=False, onnx=_onnx.filled(0))


def _onnx_const(e, node):
    value = np.asarray(node.attrs["value"])
    e.alias(node.outputs[0], e.initializer(node.name, value.astype(
        node.outputs[0].dtype.name, copy=False)))


# A value written in traced code (a Python number, a list, a NumPy array): a graph holds
# it as a Const node (`value`, a native array), as TensorFlow does, not as a captured input.
defop("Const", [], shape=lambda shapes, dtypes, attrs: [(tuple(attrs["value"].shape),
                                                         attrs["dtype"])],
      differentiable=False, batch=batch_elementwise, onnx=_onnx_const)
defop("Ones", [], shape=_creation_shape, differentiable=False, onnx=_onnx.filled(1))


def zeros_like(input, dtype=None, name=None) -> Tensor:
    """Zeros with the shape (and dtype, unless given) of `input`."""
    x = to_tensor(input, None, "zeros_like", "input")
    dtype = dtype_arg("zeros_like", dtype, optional=True)
    if dtype is not None and dtype is not x.dtype:
        return zeros(dims_of(x), dtype)
    return run_kernel("ZerosLike", {"x": x})


def ones_like(input, dtype=None, name=None) -> Tensor:
    """Ones with the shape (and dtype, unless given) of `input`."""
    x = to_tensor(input, None, "ones_like", "input")
    dtype = dtype_arg("ones_like", dtype, optional=True)
    if dtype is not None and dtype is not x.dtype:
        return ones(dims_of(x), dtype)
    if x.dtype.is_string:
        raise InvalidArgumentError(f"ones_like: argument 'input' is a string tensor "
                                   f"({describe(x)}), which has no one; use tf.fill")
    return run_kernel("OnesLike", {"x": x})


def _like_shape(shapes, dtypes, attrs):
    return [(shapes["x"], dtypes["x"])]


# d(zeros_like(x))/dx is zero: no rule means no gradient path, which is exactly right.
defop("ZerosLike", ["x"], shape=_like_shape, vjp={}, jvp={}, batch=batch_elementwise,
      onnx=_onnx.filled_like(0))
defop("OnesLike", ["x"], shape=_like_shape, vjp={}, jvp={}, batch=batch_elementwise,
      onnx=_onnx.filled_like(1))


def fill(dims, value, name=None) -> Tensor:
    """A tensor of shape `dims` filled with `value`. Example: `tf.fill([2], 7)`."""
    shape = shape_arg("fill", dims, "dims")
    v = to_tensor(value, None, "fill", "value")
    if v.ndim != 0:
        raise InvalidArgumentError(f"Fill: value must be a scalar, got shape {list(v._shape)}")
    return run_kernel("Fill", {"value": v}, {"shape": shape})


def _onnx_fill(e, node):
    e.add("Expand", [e.input(node, "value"), e.ints(node.attrs["shape"])], e.outputs(node))


# Fill broadcasts a scalar, and the engine does the rest as for broadcast_to: it sums a
# cotangent back to the scalar's shape and spreads a (possibly batched) scalar tangent over
# the output's shape.
defop("Fill", ["value"], shape=lambda s, d, a: [(tuple(a["shape"]), d["value"])],
      vjp={"value": passthrough}, jvp={"value": lambda t: t}, onnx=_onnx_fill)


# --------------------------------------------------------------------------- range

# TensorFlow's order for inferring range's dtype from its arguments.
_RANGE_ORDER = [d for d in (_dt.int32, _dt.int64, _dt.float16, _dt.bfloat16, _dt.float32,
                            _dt.float64) if d is not None]


def _scalar_arg(op: str, v, arg: str, dtype):
    """(Python value, dtype) of a scalar argument; Python ints are int32, floats float32."""
    if isinstance(v, (Tensor, Variable, np.ndarray, np.generic)):
        a = np.asarray(v.numpy() if isinstance(v, (Tensor, Variable)) else v)
        if a.shape != ():
            raise InvalidArgumentError(f"{op}: {arg} must be a scalar, got shape {list(a.shape)}")
        return a.item(), _dt.from_numpy(a.dtype)
    if isinstance(v, builtins.bool) or not isinstance(v, (int, float)):
        raise InvalidArgumentError(f"{op}: {arg} must be a number, got {v!r}")
    if dtype is not None and dtype.is_integer and isinstance(v, float) and v != int(v):
        raise InvalidArgumentError(f"{op}: {arg}={v} cannot be represented as {dtype.name}")
    return v, (_dt.int32 if isinstance(v, int) else _dt.float32)


def range(start, limit=None, delta=1, dtype=None, name="range") -> Tensor:  # noqa: A001
    """[start, start + delta, ...) up to but excluding `limit` (`range(n)` counts from 0).

    The dtype is inferred like TensorFlow: all ints -> int32, any float -> float32,
    tensors keep theirs (the widest wins). Example: `tf.range(1, 7, 2).numpy()` -> [1, 3, 5].
    """
    if limit is None:
        start, limit = 0, start
    want = dtype_arg("Range", dtype, optional=True)
    if ctx.graph is not None and any(_runtime_arg(v) for v in (start, limit, delta)):
        return _traced_range(start, limit, delta, want)
    args = [_scalar_arg("Range", v, n, want)
            for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
    if want is None:
        for _, d in args:
            if d not in _RANGE_ORDER:
                raise InvalidArgumentError(f"Range: unsupported argument dtype {d.name}")
        want = max((d for _, d in args), key=_RANGE_ORDER.index)
    elif not (want.is_integer or want.is_floating):
        raise InvalidArgumentError(f"Range: dtype must be an integer or float, got {want.name}")
    cast = int if want.is_integer else float
    s, lim, d = (cast(v) for v, _ in args)
    _range_length(s, lim, d)
    return run_kernel("Range", {}, {"start": s, "limit": lim, "delta": d, "dtype": want})


def _range_length(start, limit, delta) -> int:
    if delta == 0:
        raise InvalidArgumentError("Range: delta must not be 0")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise InvalidArgumentError(
            f"Range: start {start} must be {'<=' if delta > 0 else '>='} limit {limit} "
            f"when delta is {delta}")
    if isinstance(delta, int) and isinstance(start, int) and isinstance(limit, int):
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    return int(math.ceil(abs((limit - start) / delta)))


def _onnx_range(e, node):
    if "start" in node.inputs:  # RangeV2: bounds known when run
        bounds = [e.input(node, k) for k in ("start", "limit", "delta")]
    else:  # Range: bounds known when traced, in its attributes
        kind = node.attrs["dtype"].as_numpy_dtype
        bounds = [e.const(np.asarray(node.attrs[k], kind)) for k in ("start", "limit", "delta")]
    e.add("Range", bounds, e.outputs(node))


defop("Range", [], differentiable=False, shape=lambda s, d, a: [
    ((_range_length(a["start"], a["limit"], a["delta"]),), a["dtype"])], onnx=_onnx_range)


def _runtime_arg(v) -> bool:
    """Whether a range argument has its value only when the graph runs: a symbolic tensor
    or a variable (read at run time, not frozen at its value when traced)."""
    return isinstance(v, Variable) or is_symbolic(v)


def _traced_range(start, limit, delta, want):
    """Range with run-time arguments (inside a traced function): the arguments become
    scalar tensor inputs of a RangeV2 node and the length is unknown until it runs."""
    ts = []
    for v, arg in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if isinstance(v, (Tensor, Variable, np.ndarray, np.generic)):
            t = to_tensor(v, None, "Range", arg)
        else:
            _scalar_arg("Range", v, arg, want)  # the checks and messages of the eager path
            t = None
        if t is not None and t.ndim != 0:
            raise InvalidArgumentError(
                f"Range: {arg} must be a scalar, got shape {list(t._shape)}")
        ts.append((v, t))
    if want is None:
        kinds = [t.dtype if t is not None else (_dt.int32 if isinstance(v, int) else _dt.float32)
                 for v, t in ts]
        for d in kinds:
            if d not in _RANGE_ORDER:
                raise InvalidArgumentError(f"Range: unsupported argument dtype {d.name}")
        want = max(kinds, key=_RANGE_ORDER.index)
    elif not (want.is_integer or want.is_floating):
        raise InvalidArgumentError(f"Range: dtype must be an integer or float, got {want.name}")
    args = [to_tensor(v, want, "Range", arg) if t is None else
            (t if t.dtype is want else cast(t, want))
            for (v, t), arg in zip(ts, ("start", "limit", "delta"))]
    return run_kernel("RangeV2", dict(zip(("start", "limit", "delta"), args)))


def _range_v2_shape(shapes, dtypes, attrs):
    for arg in ("start", "limit", "delta"):
        if len(shapes[arg]) != 0:
            raise InvalidArgumentError(
                f"Range: {arg} must be a scalar, got shape {list(shapes[arg])}")
    if not dtypes["start"] is dtypes["limit"] is dtypes["delta"]:
        raise InvalidArgumentError(
            f"Range: start, limit and delta must share a dtype, got "
            f"{dtypes['start'].name}, {dtypes['limit'].name} and {dtypes['delta'].name}")
    # the length depends on the values, known only when the graph runs
    return [((None,), dtypes["start"])]


# TF registers no gradient for Range: its output does not depend smoothly on the arguments.
defop("RangeV2", ["start", "limit", "delta"], differentiable=False, shape=_range_v2_shape,
      onnx=_onnx_range)


# --------------------------------------------------------------------------- linspace


def linspace(start, stop, num, name=None, axis=0) -> Tensor:
    """`num` evenly spaced values from `start` to `stop` inclusive, along a new `axis`
    (start and stop may be tensors; they broadcast). Differentiable in start and stop.

    Example: `tf.linspace(0.0, 1.0, 5).numpy()` -> [0., 0.25, 0.5, 0.75, 1.].
    """
    s = to_tensor(float(start) if type(start) is int else start, None, "LinSpace", "start")
    e = to_tensor(float(stop) if type(stop) is int else stop, s.dtype, "LinSpace", "stop")
    if s.dtype is not e.dtype or not (s.dtype.is_floating or s.dtype.is_complex):
        raise InvalidArgumentError(
            f"LinSpace: start and stop must be floating tensors of one dtype, got start: "
            f"{s.dtype.name}{list(s._shape)} and stop: {e.dtype.name}{list(e._shape)}")
    n = int_arg("LinSpace", num, "num", minimum=0)
    r = len(broadcast_shapes("LinSpace", s._shape, e._shape))
    ax = normalize_axis("LinSpace", axis, r + 1)
    # out = start * (1 - w) + stop * w with w = i / (num - 1): exact at both ends.
    w = np.arange(n, dtype=np.float64) / builtins.max(n - 1, 1)
    lay = (1,) * ax + (n,) + (1,) * (r - ax)
    w_stop = constant(w.reshape(lay).astype(s.dtype._np))
    w_start = constant((1.0 - w).reshape(lay).astype(s.dtype._np))

    def lift(x):
        if len(x._shape) < r:
            x = prims.reshape(x, shape=(1,) * (r - len(x._shape)) + dims_of(x))
        return prims.expand_dims(x, axis=(ax,))
    return add(multiply(lift(s), w_start), multiply(lift(e), w_stop))


# --------------------------------------------------------------------------- eye, one_hot


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dt.float32, name=None) -> Tensor:
    """An identity matrix (ones on the main diagonal), optionally batched.

    Example: `tf.eye(2, 3).numpy()` -> [[1., 0., 0.], [0., 1., 0.]].
    """
    # (a Dim: a traced graph's run-time size, as gradient rules pass)
    rows = num_rows if is_dim(num_rows) else int_arg("eye", num_rows, "num_rows", minimum=0)
    cols = rows if num_columns is None else int_arg("eye", num_columns, "num_columns", 0)
    batch = () if batch_shape is None else shape_arg("eye", batch_shape, "batch_shape")
    return run_kernel("Eye", {}, {"num_rows": rows, "num_columns": cols, "batch_shape": batch,
                                  "dtype": dtype_arg("eye", dtype)})


defop("Eye", [], differentiable=False, shape=lambda s, d, a: [
    (tuple(a["batch_shape"]) + (a["num_rows"], a["num_columns"]), a["dtype"])])


def _value_dtype(v):
    if v is None:
        return None
    if isinstance(v, (Tensor, Variable)):
        return v.dtype
    if isinstance(v, (np.ndarray, np.generic)):
        return _dt.from_numpy(np.asarray(v).dtype)
    if isinstance(v, builtins.bool):
        return _dt.bool
    return _dt.int32 if isinstance(v, int) else _dt.float32


def _scalar_of(op, v, dtype, arg):
    t = to_tensor(v, dtype, op, arg)
    if t.dtype is not dtype or t._shape != ():
        raise InvalidArgumentError(
            f"{op}: {arg} must be a scalar of dtype {dtype.name}, got {t.dtype.name}"
            f"{list(t._shape)}")
    return t.numpy().item()


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name=None) -> Tensor:
    """`on_value` where the new `axis` (default last) equals `indices`, else `off_value`;
    out-of-range indices give a row of `off_value`. The dtype defaults to that of on/off
    values, else float32.

    Example: `tf.one_hot([0, 2], 3).numpy()` -> [[1., 0., 0.], [0., 0., 1.]].
    """
    idx = indices if type(indices) is Tensor else to_tensor(indices, None, "OneHot", "indices")
    if not idx.dtype.is_integer:
        raise InvalidArgumentError(f"OneHot: indices must be integers, got {idx.dtype.name}"
                                   f"{list(idx._shape)}")
    d_on, d_off = _value_dtype(on_value), _value_dtype(off_value)
    depth = int_arg("OneHot", depth, "depth", minimum=0)
    if dtype is not None:
        out = dtype_arg("OneHot", dtype)
    else:
        out = d_on or d_off or _dt.float32
        if d_on is not None and d_off is not None and d_on is not d_off \
                and isinstance(on_value, (Tensor, Variable)) \
                and isinstance(off_value, (Tensor, Variable)):
            raise InvalidArgumentError(f"OneHot: on_value ({d_on.name}) and off_value "
                                       f"({d_off.name}) must have the same dtype")
    on = _scalar_of("OneHot", 1 if on_value is None else on_value, out, "on_value")
    off = _scalar_of("OneHot", 0 if off_value is None else off_value, out, "off_value")
    n = len(idx._shape)
    ax = -1 if axis is None else as_int(axis)
    if ax is None or not -1 <= ax <= n:
        error = InvalidArgumentError if ax is not None else ArgumentTypeError
        raise error(f"OneHot: axis must be -1 or an int in [0, {n}] for indices of rank {n}, "
                    f"got {show(axis)}")
    ax = n if ax == -1 else ax
    return run_kernel("OneHot", {"indices": idx}, {"depth": depth, "axis": ax, "on_value": on,
                                                   "off_value": off, "dtype": out})


def _one_hot_shape(shapes, dtypes, attrs):
    s, ax = shapes["indices"], attrs["axis"]
    if not dtypes["indices"].is_integer or not 0 <= ax <= len(s):
        raise InvalidArgumentError(f"OneHot: bad indices {dtypes['indices'].name}{list(s)} "
                                   f"or axis {ax}")
    return [(tuple(s[:ax]) + (attrs["depth"],) + tuple(s[ax:]), attrs["dtype"])]


def _onnx_one_hot(e, node):
    """TensorFlow's one_hot: an index outside [0, depth) gives a row of off_value (ONNX's
    OneHot counts negative indices from the end), so it is an equality with a range."""
    a = node.attrs
    depth, axis = int(a["depth"]), int(a.get("axis", -1))
    rank = len(node.inputs["indices"]._shape)
    axis = rank if axis == -1 else axis
    dt = node.outputs[0].dtype.name
    idx = e.unsqueeze(e.input(node, "indices"), [axis])
    shape = [1] * (rank + 1)
    shape[axis] = depth
    positions = e.const(np.arange(depth).reshape(shape).astype(
        node.inputs["indices"].dtype.name))
    hit = e.add1("Equal", [idx, positions])
    e.add("Where", [hit, e.const(np.asarray(a.get("on_value", 1), dt)),
                    e.const(np.asarray(a.get("off_value", 0), dt))], e.outputs(node))


defop("OneHot", ["indices"], shape=_one_hot_shape, differentiable=False, onnx=_onnx_one_hot)
