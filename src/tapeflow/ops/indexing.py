"""Indexing ops: slicing, gather/scatter, where, boolean_mask and `Tensor.__getitem__`.

Basic indexing (ints, slices, Ellipsis, newaxis) is one StridedSlice kernel whose
gradient scatters into zeros (StridedSliceGrad; the two are each other's VJP). Array
and boolean indices follow NumPy and become one GatherV2 over merged dimensions. The
gradient of `gather` along axis 0 is an `IndexedSlices` (TensorFlow's sparse gradient).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.convert import convert_to_tensor, register_tensor_conversion_function
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.shape import (broadcast_shapes, compatible, dims_of, dims_product, has_dims, is_dim,
                           is_symbolic, size_of)
from .._core.tensor import Tensor
from .._core.variable import Variable
from . import _tangents
from ._args import binary_operands, int_arg, int_list, normalize_axis, shape_arg, to_tensor
from . import _onnx
from ._define import cast_to, defop
from ._tangents import align_tangent
from .array import pad, reshape, shape as _shape_of, transpose
from .creation import ones_like, range as _range, zeros_like
from .math import cast, less, maximum, minimum
from ._batching import batch_broadcasting, batch_gather

__all__ = ["slice", "strided_slice", "gather", "gather_nd", "scatter_nd",
           "tensor_scatter_nd_update", "where", "boolean_mask"]

_pyslice = builtins.slice  # `slice` below is tf.slice


def _known(a, b) -> bool:
    return a is None or b is None or a == b


def _index_tensor(op: str, indices, arg: str = "indices") -> Tensor:
    t = indices if type(indices) is Tensor else to_tensor(indices, None, op, arg)
    if not t.dtype.is_integer:
        raise InvalidArgumentError(f"{op}: {arg} must be an integer tensor, got {describe(t)}")
    return t


def _bcast_lead(indices: Tensor, t: Tensor, nb: int) -> Tensor:
    """`indices` repeated over a batched tangent's `nb` leading dims (as batch dims)."""
    return prims.broadcast_to(indices, shape=t._shape[:nb] + indices._shape)


# --------------------------------------------------------------------------- StridedSlice
# attrs: begin/end (int or None = open), strides, shrink_axis_mask and new_axis_mask (bit i
# refers to spec position i). Spec positions cover the input dims in order (ellipsis
# already expanded, new axes interleaved); dims past the spec are kept whole.

_SPEC = ("begin", "end", "strides", "shrink_axis_mask", "new_axis_mask")


def _spec(attrs, nb: int = 0) -> dict:
    """The slice attrs, with `nb` leading whole dims prepended (batched tangents)."""
    if not nb:
        return {k: attrs[k] for k in _SPEC}
    return {"begin": (None,) * nb + tuple(attrs["begin"]),
            "end": (None,) * nb + tuple(attrs["end"]),
            "strides": (1,) * nb + tuple(attrs["strides"]),
            "shrink_axis_mask": attrs["shrink_axis_mask"] << nb,
            "new_axis_mask": attrs["new_axis_mask"] << nb}


def _sliced_shape(op: str, shape, a) -> tuple:
    begin, end, strides = a["begin"], a["end"], a["strides"]
    shrink, new = a["shrink_axis_mask"], a["new_axis_mask"]
    rank, dim, out = len(shape), 0, []
    for i, b in enumerate(begin):
        if new >> i & 1:
            out.append(1)
            continue
        if dim >= rank:
            raise InvalidArgumentError(
                f"{op}: too many indices for a tensor of rank {rank} (shape {list(shape)})")
        d = shape[dim]
        dim += 1
        if shrink >> i & 1:
            if d is not None and not -d <= b < d:
                raise InvalidArgumentError(
                    f"{op}: index {b} is out of bounds for dimension {dim - 1} with size {d} "
                    f"(shape {list(shape)})")
            continue
        if strides[i] == 0:
            raise InvalidArgumentError(f"{op}: slice step cannot be zero")
        out.append(None if d is None else len(range(*_pyslice(b, end[i], strides[i]).indices(d))))
    return tuple(out) + tuple(shape[dim:])


def _strided_slice_shape(shapes, dtypes, attrs):
    return [(_sliced_shape("StridedSlice", shapes["x"], attrs), dtypes["x"])]


def _strided_slice(x: Tensor, spec: dict) -> Tensor:
    """The StridedSlice kernel on a resolved spec (begin/end/strides/masks, see above):
    getitem's fast paths and the rules run it without re-parsing a key."""
    return run_kernel("StridedSlice", {"x": x}, spec)


def _strided_slice_grad(dy: Tensor, shape: tuple, spec: dict) -> Tensor:
    """Zeros of `shape` with `dy` written where the slice `spec` of them lies (no public op)."""
    return run_kernel("StridedSliceGrad", {"dy": dy}, {**spec, "shape": shape})


def _strided_slice_batch(op, inputs, attrs, batched, size):
    """The batching rule: the slice of a batched x takes its whole leading batch axis."""
    return run_kernel(op, inputs, {**attrs, **_spec(attrs, 1)})


def _onnx_strided_slice(e, node):
    """StridedSlice as Slice on the input axes, then Squeeze of the shrunk axes, then
    Unsqueeze of the new ones (a new-axis entry takes no input axis)."""
    a = node.attrs
    shrink, new_axis = a.get("shrink_axis_mask", 0), a.get("new_axis_mask", 0)
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    dim = out = 0  # the input axis the entry slices; the output axis it makes
    for i, (b, en, s) in enumerate(zip(a["begin"], a["end"], a["strides"])):
        if new_axis >> i & 1:
            unsqueeze.append(out)
            out += 1
            continue
        s = 1 if s is None else int(s)
        if shrink >> i & 1:
            b = int(b)
            starts.append(b)
            ends.append(_onnx.INT64_MAX if b == -1 else b + 1)
            steps.append(1)
            axes.append(dim)
            squeeze.append(dim)
        elif not (b is None and en is None and s == 1):  # else: the whole axis
            starts.append((0 if s > 0 else _onnx.INT64_MAX) if b is None else int(b))
            ends.append((_onnx.INT64_MAX if s > 0 else _onnx.INT64_MIN) if en is None else int(en))
            steps.append(s)
            axes.append(dim)
            out += 1
        else:
            out += 1
        dim += 1
    x, outs = e.input(node, "x"), e.outputs(node)
    stages = []
    if axes:
        ints = [e.const(np.asarray(v, np.int64)) for v in (starts, ends, axes, steps)]
        stages.append(lambda v, o: e.add("Slice", [v, *ints], o)[0])
    if squeeze:
        stages.append(lambda v, o: e.squeeze(v, squeeze, o))
    if unsqueeze:
        stages.append(lambda v, o: e.unsqueeze(v, unsqueeze, o))
    if not stages:
        e.add("Identity", [x], outs)
        return
    for k, stage in enumerate(stages):
        x = stage(x, outs if k == len(stages) - 1 else None)


defop("StridedSlice", ["x"], shape=_strided_slice_shape,
      vjp={"x": lambda g, x_shape, **attrs: _strided_slice_grad(g, x_shape, _spec(attrs))},
      jvp={"x": lambda t, x, **attrs: _strided_slice(t, _spec(attrs, _tangents.batch_dims(t,
                                                                                       x)))},
      batch=_strided_slice_batch, onnx=_onnx_strided_slice)


def _strided_slice_grad_shape(shapes, dtypes, attrs):
    shape = tuple(attrs["shape"])
    want, dy = _sliced_shape("StridedSliceGrad", shape, attrs), shapes["dy"]
    if len(want) != len(dy) or not all(_known(a, b) for a, b in zip(want, dy)):
        raise InvalidArgumentError(f"StridedSliceGrad: dy has shape {list(dy)}, the slice of "
                                   f"shape {list(shape)} has shape {list(want)}")
    return [(shape, dtypes["dy"])]


def _strided_slice_grad_jvp(t, dy, *, shape, **attrs):
    nb = _tangents.batch_dims(t, dy)
    return _strided_slice_grad(t, t._shape[:nb] + tuple(shape), _spec(attrs, nb))


# The scatter-into-zeros that is StridedSlice's VJP; its own VJP is StridedSlice again,
# so derivatives of any order stay in this pair.
defop("StridedSliceGrad", ["dy"], shape=_strided_slice_grad_shape,
      vjp={"dy": lambda g, **attrs: _strided_slice(g, _spec(attrs))},
      jvp={"dy": _strided_slice_grad_jvp})


def _basic(x: Tensor, entries) -> Tensor:
    """One StridedSlice for entries ('new'|'int'|'slice', value) covering x's leading dims."""
    begin, end, strides = [], [], []
    shrink = new = 0
    for i, entry in enumerate(entries):
        kind, v = entry[0], entry[1]
        if kind is _NEW:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new |= 1 << i
        elif kind is _INT:
            begin.append(v)
            end.append(None)
            strides.append(1)
            shrink |= 1 << i
        else:
            begin.append(v[0])
            end.append(v[1])
            strides.append(v[2])
    return _strided_slice(x, {"begin": tuple(begin), "end": tuple(end),
                              "strides": tuple(strides), "shrink_axis_mask": shrink,
                              "new_axis_mask": new})


def slice(input_, begin, size, name=None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end).

    Example: `tf.slice([[1, 2, 3], [4, 5, 6]], [0, 1], [2, -1])` -> [[2, 3], [5, 6]].
    """
    x = to_tensor(input_, None, "Slice", "input_")
    begin, size = int_list("Slice", begin, "begin"), int_list("Slice", size, "size")
    shape = x._shape
    if len(begin) != len(shape) or len(size) != len(shape):
        raise InvalidArgumentError(
            f"Slice: begin {list(begin)} and size {list(size)} must both have one entry per "
            f"dimension of input {describe(x)}")
    entries = []
    for axis, (b, s, d) in enumerate(zip(begin, size, shape)):
        if d is None:  # checked when the graph runs
            d = b + max(s, 0)
        if not 0 <= b <= d or not (s == -1 or 0 <= s <= d - b):
            raise InvalidArgumentError(
                f"Slice: begin {b} with size {s} is out of bounds for dimension {axis} of "
                f"size {d} (input {describe(x)}, begin {list(begin)}, size {list(size)})")
        entries.append((_SLICE, (b, None if s == -1 else b + s, 1)))
    return _basic(x, entries)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None,
                  name=None) -> Tensor:
    """TensorFlow's strided slice: begin/end/strides per spec position plus bit masks.

    Bit i of begin_mask/end_mask ignores begin[i]/end[i]; ellipsis_mask marks an
    Ellipsis, new_axis_mask a new size-1 axis, shrink_axis_mask an integer index.
    Example: `tf.strided_slice(x, [0, 1], [2, 3], [1, 1])` is `x[0:2, 1:3]`.
    """
    x = to_tensor(input_, None, "StridedSlice", "input_")
    begin = int_list("StridedSlice", begin, "begin")
    end = int_list("StridedSlice", end, "end")
    strides = (1,) * len(begin) if strides is None else \
        int_list("StridedSlice", strides, "strides")
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = (
        int_arg("StridedSlice", m, a) for m, a in (
            (begin_mask, "begin_mask"), (end_mask, "end_mask"), (ellipsis_mask, "ellipsis_mask"),
            (new_axis_mask, "new_axis_mask"), (shrink_axis_mask, "shrink_axis_mask")))
    if not len(begin) == len(end) == len(strides):
        raise InvalidArgumentError(
            f"StridedSlice: begin {list(begin)}, end {list(end)} and strides {list(strides)} "
            "must have the same length")
    if bin(ellipsis_mask).count("1") > 1:
        raise InvalidArgumentError("StridedSlice: at most one bit of ellipsis_mask may be set")
    key = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if ellipsis_mask >> i & 1:
            key.append(Ellipsis)
        elif new_axis_mask >> i & 1:
            key.append(None)
        elif shrink_axis_mask >> i & 1:
            key.append(b)
        else:
            if s == 0:
                raise InvalidArgumentError(f"StridedSlice: strides[{i}] is zero")
            key.append(_pyslice(None if begin_mask >> i & 1 else b,
                                None if end_mask >> i & 1 else e, s))
    return _basic(x, _parse(x, tuple(key), "StridedSlice")[0])


# --------------------------------------------------------------------------- __getitem__

_NEW, _INT, _SLICE, _ARR, _BOOL = "new", "int", "slice", "array", "bool"
_FULL = (_SLICE, (None, None, 1))


def _bound(v, what):
    if v is None or _is_dynamic(v):
        return v
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"getitem: slice {what} must be an int, None or a scalar integer "
                        f"tensor, got {v!r}") from None


def _is_dynamic(v) -> bool:
    """Whether a slice bound is a traced scalar integer (its value known only at run time)."""
    return is_symbolic(v) and v.ndim == 0 and v.dtype.is_integer


def _dynamic_range(n: Tensor, start, stop, step: int) -> Tensor:
    """The positions `range(n)[start:stop:step]` picks, with Python's clamping of
    negative and out-of-range bounds done by ops (a bound may be a traced scalar)."""
    def clamp(b, low, high):
        b = cast(b, n.dtype)
        b = prims.select_v2(less(b, 0), b + n, b)
        return minimum(maximum(b, low), high)
    if step > 0:
        lo = 0 if start is None else clamp(start, 0, n)
        hi = n if stop is None else clamp(stop, 0, n)
        return _range(lo, maximum(hi, lo), step)
    lo = n - 1 if start is None else clamp(start, -1, n - 1)
    hi = -1 if stop is None else clamp(stop, -1, n - 1)
    return _range(lo, minimum(hi, lo), step)


def _dynamic_slices(x: Tensor, entries) -> Tensor:
    """Basic indexing where some slice bounds are traced scalars: the static part as one
    StridedSlice with those axes whole, then one gather per dynamic axis (TensorFlow's
    strided slice with tensor bounds, as a composite)."""
    static, dynamic, out_axis, in_axis = [], [], 0, 0
    for entry in entries:
        kind, v = entry[0], entry[1]
        if kind is _SLICE and any(_is_dynamic(b) for b in v[:2]):
            dynamic.append((out_axis, in_axis, v))
            entry = (_SLICE, (None, None, 1), entry[2])
        static.append(entry)
        out_axis += kind is not _INT
        in_axis += kind is not _NEW
    y = _basic(x, static)
    sizes = _shape_of(x)
    for out_axis, in_axis, (start, stop, step) in dynamic:
        positions = _dynamic_range(sizes[in_axis], start, stop, step)
        y = prims.gather_v2(y, positions, axis=out_axis, batch_dims=0)
    return y


def _key_tensor(k) -> Tensor:
    if type(k) is Tensor:
        return k
    if isinstance(k, Variable):
        return k.read_value()
    if isinstance(k, (list, tuple)) and len(k) == 0:
        return convert_to_tensor(np.zeros(0, np.int64))
    if isinstance(k, (np.ndarray, list, tuple)):
        return to_tensor(k, None, "getitem", "index")
    raise TypeError(
        f"getitem: only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`), "
        f"integer and boolean tensors/arrays are valid indices, got {k!r}")


def _parse(x: Tensor, key: tuple, op: str = "getitem"):
    """Entries (kind, value, key position) covering x's dims; whether any is advanced."""
    rank = len(x._shape)
    entries, used, ellipsis, adv = [], 0, None, False
    for pos, k in enumerate(key):
        tk = type(k)
        if k is None:
            entries.append((_NEW, None, pos))
        elif tk is int or (isinstance(k, (int, np.integer))
                           and not isinstance(k, (bool, np.bool_))):
            entries.append((_INT, int(k), pos))
            used += 1
        elif tk is _pyslice:
            step = 1 if k.step is None else \
                _bound(k.step, "step")
            if _is_dynamic(step):
                raise TypeError(f"{op}: a slice step must be known when a function is traced "
                                f"(an int), got the traced tensor {step!r}")
            if step == 0:
                raise InvalidArgumentError(f"{op}: slice step cannot be zero")
            entries.append((_SLICE, (_bound(k.start, "start"), _bound(k.stop, "stop"), step),
                            pos))
            used += 1
        elif k is Ellipsis:
            if ellipsis is not None:
                raise InvalidArgumentError(f"{op}: an index can only have a single ellipsis")
            ellipsis, ellipsis_pos = len(entries), pos
            entries.append(None)
        else:
            if isinstance(k, (bool, np.bool_)):
                t = convert_to_tensor(np.asarray(k))
            else:
                t = _key_tensor(k)
            adv = True
            if t.dtype.is_bool:
                entries.append((_BOOL, t, pos))
                used += t.ndim
            elif t.dtype.is_integer:
                entries.append((_ARR, t, pos))
                used += 1
            else:
                raise InvalidArgumentError(
                    f"{op}: index tensors must be integer or bool, got {describe(t)}")
    if used > rank:
        raise InvalidArgumentError(
            f"{op}: too many indices for a tensor of rank {rank} (shape {list(x._shape)}): "
            f"the index uses {used} dimensions")
    if ellipsis is not None:
        entries[ellipsis:ellipsis + 1] = [(_FULL[0], _FULL[1], ellipsis_pos)] * (rank - used)
    return entries, adv


def getitem(tensor, key) -> Tensor:
    """`tensor[key]` with NumPy semantics: ints (negative too), slices with any step,
    Ellipsis, None/tf.newaxis, integer and boolean tensors/arrays. Differentiable.

    Example: `tf.constant([[1, 2], [3, 4]])[:, ::-1]` -> [[2, 1], [4, 3]].
    """
    x = tensor if type(tensor) is Tensor else to_tensor(tensor, None, "getitem", "tensor")
    kt = type(key)
    if kt is int:  # the hot path: x[i]
        return _strided_slice(x, {"begin": (key,), "end": (None,), "strides": (1,),
                                  "shrink_axis_mask": 1, "new_axis_mask": 0})
    if kt is _pyslice and (key.step is None or type(key.step) is int):  # x[a:b]
        step = 1 if key.step is None else key.step
        if step and (key.start is None or type(key.start) is int) and \
                (key.stop is None or type(key.stop) is int):
            return _strided_slice(x, {"begin": (key.start,), "end": (key.stop,),
                                      "strides": (step,), "shrink_axis_mask": 0,
                                      "new_axis_mask": 0})
    if kt is Tensor and key.dtype.is_integer and x._shape:  # x[index_tensor]
        index = run_kernel("RavelMultiIndex", {"indices": [key]},
                           {"dims": dims_of(x)[:1], "axes": (0,)})
        return run_kernel("GatherV2", {"params": x, "indices": index},
                          {"axis": 0, "batch_dims": 0})
    entries, adv = _parse(x, key if kt is tuple else (key,))
    if any(e[0] is _SLICE and any(_is_dynamic(b) for b in e[1][:2]) for e in entries):
        if adv:
            raise InvalidArgumentError(
                "getitem: slices with traced tensor bounds cannot be combined with "
                f"array or boolean indices (tensor {describe(x)})")
        return _dynamic_slices(x, entries)
    if not adv:
        while entries and entries[-1][:2] == _FULL:  # trailing whole dims need no spec
            entries.pop()
        return _basic(x, entries)
    return _advanced(x, entries)


def _mask_indices(mask: Tensor) -> Tensor:
    """Flat positions (int64 [n]) of the true elements of `mask`."""
    flat = mask if mask.ndim == 1 else prims.reshape(mask, shape=(-1,))
    return prims.reshape(run_kernel("Where", {"condition": flat}), shape=(-1,))


def _advanced(x: Tensor, entries) -> Tensor:
    """NumPy advanced indexing: slice the basic part, merge each boolean index's dims,
    ravel the array indices into one and gather once along the merged dimension."""
    spec, adv = [], []  # adv: [key position, dim of the sliced tensor, kind, value, x dim]
    ydim = xdim = 0
    for kind, v, pos in entries:
        if kind is _NEW:
            spec.append((_NEW, None))
            ydim += 1
        elif kind is _SLICE:
            spec.append((kind, v))
            ydim += 1
            xdim += 1
        elif kind is _BOOL and v.ndim == 0:  # x[True]: a new axis indexed by [True]
            spec.append((_NEW, None))
            adv.append([pos, ydim, _BOOL, prims.reshape(v, shape=(1,)), -1])
            ydim += 1
        else:
            k = v.ndim if kind is _BOOL else 1
            spec.extend([_FULL] * k)
            adv.append([pos, ydim, kind, v, xdim])
            ydim += k
            xdim += k
    y = x if all(e == _FULL for e in spec) else _basic(x, spec)
    shape = list(dims_of(y))
    merged, shift = [], 0
    for a in adv:
        a[1] -= shift
        if a[2] is _BOOL:
            mask, k = a[3], a[3].ndim
            have = tuple(shape[a[1]:a[1] + k])
            if len(have) != k or any(not is_dim(h) and h != m
                                     for h, m in zip(have, mask._shape)):
                raise InvalidArgumentError(
                    f"getitem: boolean index of shape {list(mask._shape)} does not match the "
                    f"indexed dimensions {list(have)} of tensor {describe(x)}")
            shape[a[1]:a[1] + k] = [dims_product(have)]
            shift += k - 1
            merged.append(_mask_indices(mask))
        else:
            merged.append(a[3])
    if shift:
        y = prims.reshape(y, shape=tuple(shape))
    dims = [a[1] for a in adv]
    if len(adv) == 1 and adv[0][2] is _BOOL:
        index = merged[0]  # already valid, non-negative positions
    else:
        index = run_kernel("RavelMultiIndex", {"indices": merged}, {
            "dims": tuple(shape[d] for d in dims), "axes": tuple(a[4] for a in adv)})
    positions = [a[0] for a in adv]
    if positions != list(range(positions[0], positions[0] + len(positions))):
        # Advanced indices separated by a basic one: NumPy puts the result dims first.
        perm = dims + [d for d in range(len(shape)) if d not in dims]
        y = transpose(y, perm)
        shape = [shape[d] for d in perm]
        dims = list(range(len(dims)))
    first = dims[0]
    if len(dims) > 1:
        shape[first:first + len(dims)] = [dims_product(shape[first:first + len(dims)])]
        y = prims.reshape(y, shape=tuple(shape))
    return run_kernel("GatherV2", {"params": y, "indices": index},
                      {"axis": first, "batch_dims": 0})


def _ravel_shape(shapes, dtypes, attrs):
    out = ()
    for s, d in zip(shapes["indices"], dtypes["indices"]):
        if not d.is_integer:
            raise InvalidArgumentError(f"RavelMultiIndex: indices must be integers, got {d.name}")
        out = broadcast_shapes("getitem (index arrays)", out, s)
    return [(out, _dt.int64)]


def _onnx_ravel_multi_index(e, node):
    """getitem's index arrays combined into one row-major flat position, negative entries
    counted from the end (an out-of-range one is left for onnxruntime's Gather to reject,
    as the kernel rejects it). One index array is the position itself: ONNX's Gather
    counts negative indices from the end (its size may be unknown when traced)."""
    indices, dims = e.input(node, "indices"), node.attrs["dims"]
    if len(indices) == 1:
        e.add("Cast", indices, e.outputs(node), to=e.dtype_code("int64"))
        return
    if any(d is None for d in dims):
        _onnx.unsupported(e, node, f"index arrays over dims {list(dims)} not known when traced")
    flat, zero = None, e.const(np.asarray(0, np.int64))
    for idx, d in zip(indices, dims):
        idx = e.add1("Cast", [idx], to=e.dtype_code("int64"))
        size = _onnx.scalar_int(e, d)
        idx = e.add1("Where", [e.add1("Less", [idx, zero]), e.add1("Add", [idx, size]), idx])
        flat = idx if flat is None else e.add1("Add", [e.add1("Mul", [flat, size]), idx])
    e.add("Identity", [flat], e.outputs(node))


defop("RavelMultiIndex", ["indices"], list_inputs=("indices",), shape=_ravel_shape,
      differentiable=False, onnx=_onnx_ravel_multi_index)


# --------------------------------------------------------------------------- gather


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0,
           name=None) -> Tensor:
    """Slices of `params` along `axis` at `indices` (out-of-range indices raise).

    The gradient with respect to `params` is an `IndexedSlices` when axis is 0.
    Example: `tf.gather([10., 20., 30.], [2, 0])` -> [30., 10.].
    """
    p = params if type(params) is Tensor else to_tensor(params, None, "GatherV2", "params")
    idx = _index_tensor("GatherV2", indices)
    b = int_arg("GatherV2", batch_dims, "batch_dims")
    if b < 0:
        b += idx.ndim
    if not 0 <= b <= idx.ndim:
        raise InvalidArgumentError(f"GatherV2: batch_dims={batch_dims} is out of range for "
                                   f"indices {describe(idx)}")
    if p.ndim == 0:
        raise InvalidArgumentError(f"GatherV2: params must be at least 1-D, got {describe(p)}")
    axis = b if axis is None else normalize_axis("GatherV2", axis, p.ndim)
    if b:
        _gather_shape({"params": p._shape, "indices": idx._shape},
                      {"params": p.dtype, "indices": idx.dtype}, {"axis": axis, "batch_dims": b})
    return run_kernel("GatherV2", {"params": p, "indices": idx},
                      {"axis": axis, "batch_dims": b})


def _gather_shape(shapes, dtypes, attrs):
    ps, ids = shapes["params"], shapes["indices"]
    axis, b = attrs["axis"], attrs["batch_dims"]
    if not dtypes["indices"].is_integer:
        raise InvalidArgumentError(f"GatherV2: indices must be integers, got "
                                   f"{dtypes['indices'].name}")
    if not b <= axis < len(ps) or b > len(ids):
        raise InvalidArgumentError(
            f"GatherV2: axis {axis} and batch_dims {b} do not fit params of shape {list(ps)} "
            f"and indices of shape {list(ids)} (need batch_dims <= axis < rank(params))")
    if not all(_known(ps[i], ids[i]) for i in range(b)):
        raise InvalidArgumentError(
            f"GatherV2: the first batch_dims={b} dimensions of params {list(ps)} and indices "
            f"{list(ids)} must match")
    return [(tuple(ps[:axis]) + tuple(ids[b:]) + tuple(ps[axis + 1:]), dtypes["params"])]


def _gather_vjp(g, params_shape, indices, *, axis, batch_dims):
    if axis == 0 and not has_dims(params_shape):
        # (so batch_dims == 0) whole rows of params: TensorFlow's sparse gradient; with
        # run-time dims (Dims, which no dense_shape constant can hold) a dense one
        rows = size_of(indices, range(indices.ndim))
        values = prims.reshape(g, shape=(rows,) + params_shape[1:])
        flat = indices if indices.ndim == 1 else prims.reshape(indices, shape=(-1,))
        return IndexedSlices(values, flat, params_shape)
    return _segment_sum(g, indices, params_shape[axis], axis, batch_dims)


def _gather_jvp(t, params, indices, *, axis, batch_dims):
    nb = _tangents.batch_dims(t, params)
    if nb and batch_dims:
        indices = _bcast_lead(indices, t, nb)
        batch_dims += nb
    return gather(t, indices, axis=axis + nb, batch_dims=batch_dims)


def _onnx_gather_batched(e, node, params, indices, axis, b):
    """GatherV2 with batch_dims b as ONNX GatherND (batch_dims b) on the indices with a
    last axis of 1; an axis past the batch dims is moved next to them first and the
    gathered dims moved back in its place after."""
    rank, idx_rank = len(node.inputs["params"]._shape), len(node.inputs["indices"]._shape)
    axis %= rank
    b = b + idx_rank if b < 0 else b  # as TensorFlow counts a negative batch_dims
    n_idx = idx_rank - b  # the dims the indices add
    if axis != b:
        perm = list(range(b)) + [axis] + [d for d in range(b, rank) if d != axis]
        params = e.add1("Transpose", [params], perm=perm)
    indices = e.add1("Cast", [indices], to=e.dtype_code("int64"))  # GatherND takes int64 only
    found = e.add1("GatherND", [params, e.unsqueeze(indices, [-1])], batch_dims=b)
    if axis == b:
        e.add("Identity", [found], e.outputs(node))
        return
    # found: [batch, gathered (n_idx), params[b:axis], params[axis+1:]]
    middle = list(range(b + n_idx, b + n_idx + axis - b))
    perm = (list(range(b)) + middle + list(range(b, b + n_idx))
            + list(range(b + n_idx + axis - b, rank - 1 + n_idx)))
    e.add("Transpose", [found], e.outputs(node), perm=perm)


def _onnx_gather(e, node):
    batch_dims = int(node.attrs.get("batch_dims", 0))
    axis = int(node.attrs.get("axis", 0))
    params, indices = e.input(node, "params"), e.input(node, "indices")
    if not batch_dims:
        e.add("Gather", [params, indices], e.outputs(node), axis=axis)
        return
    _onnx_gather_batched(e, node, params, indices, axis, batch_dims)


defop("GatherV2", ["params", "indices"], shape=_gather_shape,
      vjp={"params": _gather_vjp}, jvp={"params": _gather_jvp}, batch=batch_gather,
      onnx=_onnx_gather)


# --------------------------------------------------------------------------- segment sums
# UnsortedSegmentSum attrs: data = B + M + I + R and segment_ids = B + I with
# len(B) = batch_dims and len(B + M) = axis; the output is B + M + [num_segments] + R.
# That layout makes it exactly the transpose of GatherV2 (each is the other's VJP).


def _segment_sum(data, segment_ids, num_segments, axis=0, batch_dims=0) -> Tensor:
    """The UnsortedSegmentSum kernel (gather's transpose; see the layout above)."""
    rest = data._shape[axis + segment_ids.ndim - batch_dims:]
    if not is_dim(num_segments):  # (a Dim: a traced graph's run-time size)
        num_segments = int(num_segments)
    if 0 in rest:
        # Zero-width rows, which the NumPy kernel cannot lay out: the sum is empty anyway.
        dims = dims_of(data)
        return prims.zeros(shape=dims[:axis] + (num_segments,)
                           + dims[axis + segment_ids.ndim - batch_dims:], dtype=data.dtype)
    return run_kernel("UnsortedSegmentSum", {"data": data, "segment_ids": segment_ids},
                      {"num_segments": num_segments, "axis": axis,
                       "batch_dims": batch_dims})


def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> Tensor:
    """Sums of the slices of `data` sharing a segment id (ids index the leading dims); a
    negative id drops its slice and one >= num_segments raises, as TensorFlow on CPU.

    Example: `tf.math.unsorted_segment_sum([1., 2., 3.], [1, 0, 1], 2)` -> [2., 4.].
    """
    d = to_tensor(data, None, "UnsortedSegmentSum", "data")
    ids = _index_tensor("UnsortedSegmentSum", segment_ids, "segment_ids")
    num = int_arg("UnsortedSegmentSum", num_segments, "num_segments", minimum=0)
    _segment_sum_shape({"data": d._shape, "segment_ids": ids._shape},
                       {"data": d.dtype, "segment_ids": ids.dtype},
                       {"num_segments": num, "axis": 0, "batch_dims": 0})
    return _segment_sum(d, ids, num)


def _segment_sum_shape(shapes, dtypes, attrs):
    ds, ids = shapes["data"], shapes["segment_ids"]
    axis, b, num = attrs["axis"], attrs["batch_dims"], attrs["num_segments"]
    rest = axis + len(ids) - b
    if not dtypes["segment_ids"].is_integer:
        raise InvalidArgumentError("UnsortedSegmentSum: segment_ids must be integers, got "
                                   f"{dtypes['segment_ids'].name}")
    if rest > len(ds) or not all(_known(ds[i], ids[i]) for i in range(b)) or not all(
            _known(ds[axis + j], ids[b + j]) for j in range(len(ids) - b)):
        raise InvalidArgumentError(
            f"UnsortedSegmentSum: segment_ids of shape {list(ids)} must match the dimensions "
            f"of data {list(ds)} they index (axis {axis}, batch_dims {b})")
    return [(tuple(ds[:axis]) + (num,) + tuple(ds[rest:]), dtypes["data"])]


def _segment_sum_jvp(t, data, segment_ids, *, num_segments, axis, batch_dims):
    nb = _tangents.batch_dims(t, data)
    if nb and batch_dims:
        segment_ids = _bcast_lead(segment_ids, t, nb)
        batch_dims += nb
    return _segment_sum(t, segment_ids, num_segments, axis + nb, batch_dims)


def _segment_sum_vjp(g, segment_ids, *, axis, batch_dims):
    if segment_ids.dtype.is_unsigned:
        return gather(g, segment_ids, axis=axis, batch_dims=batch_dims)
    # A negative id dropped its slice, whose gradient is 0: gather from g with a zero
    # segment put in front (TensorFlow gathers at max(id, 0) and then masks, which turns
    # an infinite g into NaN and cannot gather from num_segments = 0).
    pads = [[0, 0]] * len(g._shape)
    pads[axis] = [1, 0]
    return gather(pad(g, pads), maximum(segment_ids + 1, 0), axis=axis, batch_dims=batch_dims)


defop("UnsortedSegmentSum", ["data", "segment_ids"], shape=_segment_sum_shape,
      vjp={"data": _segment_sum_vjp}, jvp={"data": _segment_sum_jvp})


# Running sums of sparse gradients (a loop gradient's total for a loop-invariant input,
# function/control.py): the segment sum or slice scatter of one iteration's gradient is
# added into the total's rows in place, so no dense temporary of the whole input is
# built per iteration. Kernels only: the loop machinery calls them on native arrays.
def _into_shape(shapes, dtypes, attrs):
    return [(tuple(shapes["ref"]), dtypes["ref"])]


defop("InplaceSegmentSum", ["ref", "data", "segment_ids"], shape=_into_shape,
      differentiable=False, stateful=True)
defop("InplaceStridedSliceAdd", ["ref", "dy"], shape=_into_shape, differentiable=False,
      stateful=True)


def indexed_slices_to_dense(slices: IndexedSlices, shape=None) -> Tensor:
    """The dense tensor an `IndexedSlices` stands for (duplicate indices add up).

    Example: `indexed_slices_to_dense(tf.IndexedSlices(tf.ones([2, 2]), [1, 1], [3, 2]))`
    -> [[0, 0], [2, 2], [0, 0]].
    """
    values, indices = slices.values, slices.indices
    if shape is None:
        if slices.dense_shape is None:
            raise InvalidArgumentError(
                "indexed_slices_to_dense: the IndexedSlices has no dense_shape; pass shape=")
        shape = slices.dense_shape
    shape = shape_arg("indexed_slices_to_dense", shape, "dense_shape")
    fit = tuple(indices._shape) + shape[1:]
    if not indices.dtype.is_integer or not shape or (
            tuple(values._shape) != fit and not compatible(values._shape, fit)):
        raise InvalidArgumentError(
            f"indexed_slices_to_dense: values {describe(values)} do not fit indices "
            f"{describe(indices)} and dense_shape {list(shape)}")
    return _segment_sum(values, indices, shape[0])


register_tensor_conversion_function(
    IndexedSlices, lambda value, dtype=None, name=None, as_ref=False:
    indexed_slices_to_dense(value))


# --------------------------------------------------------------------------- gather_nd


def _nd_shape_check(op, ids, ps, b):
    """K (the index depth) after checking indices [..., K] against the indexed shape."""
    if len(ids) < 1 or ids[-1] is None:
        raise InvalidArgumentError(f"{op}: indices must have a known last dimension, got "
                                   f"shape {list(ids)}")
    k = ids[-1]
    if not 0 <= b < len(ids) or b + k > len(ps):
        raise InvalidArgumentError(
            f"{op}: index depth {k} (last dimension of indices {list(ids)}) with batch_dims "
            f"{b} is too deep for shape {list(ps)}")
    if not all(_known(ps[i], ids[i]) for i in range(b)):
        raise InvalidArgumentError(f"{op}: the first batch_dims={b} dimensions of "
                                   f"{list(ps)} and indices {list(ids)} must match")
    return k


def _gather_nd_shape(shapes, dtypes, attrs):
    ps, ids, b = shapes["params"], shapes["indices"], attrs["batch_dims"]
    k = _nd_shape_check("GatherNd", ids, ps, b)
    return [(tuple(ids[:-1]) + tuple(ps[b + k:]), dtypes["params"])]


def gather_nd(params, indices, batch_dims=0, name=None) -> Tensor:
    """Elements or slices of `params` addressed by the index tuples in `indices[..., :]`.

    Example: `tf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])` -> [3, 2].
    """
    p = to_tensor(params, None, "GatherNd", "params")
    idx = _index_tensor("GatherNd", indices)
    b = int_arg("GatherNd", batch_dims, "batch_dims")
    _nd_shape_check("GatherNd", idx._shape, p._shape, b)
    return run_kernel("GatherNd", {"params": p, "indices": idx}, {"batch_dims": b})


def _gather_nd_jvp(t, params, indices, *, batch_dims):
    nb = _tangents.batch_dims(t, params)
    if nb:
        indices = _bcast_lead(indices, t, nb)
    return gather_nd(t, indices, batch_dims + nb)


defop("GatherNd", ["params", "indices"], shape=_gather_nd_shape,
      vjp={"params": lambda g, params_shape, indices, *, batch_dims: _scatter_nd(
          indices, g, params_shape, batch_dims)},
      jvp={"params": _gather_nd_jvp})


# --------------------------------------------------------------------------- scatters


def _updates_check(op, ids, us, shape, b):
    k = _nd_shape_check(op, ids, shape, b)
    want = tuple(ids[:-1]) + tuple(shape[b + k:])
    if len(us) != len(want) or not all(_known(u, w) for u, w in zip(us, want)):
        raise InvalidArgumentError(
            f"{op}: updates must have shape indices.shape[:-1] + shape[{b + k}:] = "
            f"{list(want)}, got {list(us)} (indices {list(ids)}, shape {list(shape)})")


def _scatter_nd_shape(shapes, dtypes, attrs):
    shape = tuple(attrs["shape"])
    _updates_check("ScatterNd", shapes["indices"], shapes["updates"], shape,
                   attrs["batch_dims"])
    return [(shape, dtypes["updates"])]


def scatter_nd(indices, updates, shape, name=None) -> Tensor:
    """Zeros of `shape` with `updates` added at the index tuples (duplicates add).

    Example: `tf.scatter_nd([[1], [3]], [5., 7.], [4])` -> [0., 5., 0., 7.].
    """
    idx = _index_tensor("ScatterNd", indices)
    u = to_tensor(updates, None, "ScatterNd", "updates")
    shape = shape_arg("ScatterNd", shape)
    _updates_check("ScatterNd", idx._shape, u._shape, shape, 0)
    return _scatter_nd(idx, u, shape)


def _scatter_nd(indices: Tensor, updates: Tensor, shape: tuple, batch_dims: int = 0) -> Tensor:
    """scatter_nd with leading batch dims (gather_nd's transpose), which the public one
    does not take."""
    return run_kernel("ScatterNd", {"indices": indices, "updates": updates},
                      {"shape": shape, "batch_dims": batch_dims})


def _scatter_nd_jvp(t, updates, indices, *, shape, batch_dims):
    nb = _tangents.batch_dims(t, updates)
    if nb:
        indices = _bcast_lead(indices, t, nb)
    return _scatter_nd(indices, t, dims_of(t)[:nb] + tuple(shape), batch_dims + nb)


defop("ScatterNd", ["indices", "updates"], shape=_scatter_nd_shape,
      vjp={"updates": lambda g, indices, *, batch_dims: gather_nd(g, indices, batch_dims)},
      jvp={"updates": _scatter_nd_jvp})


def tensor_scatter_nd_update(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` with the elements/slices at `indices` replaced by `updates`.

    Example: `tf.tensor_scatter_nd_update([1., 2., 3.], [[0]], [9.])` -> [9., 2., 3.].
    """
    t = to_tensor(tensor, None, "TensorScatterNdUpdate", "tensor")
    idx = _index_tensor("TensorScatterNdUpdate", indices)
    u = updates if type(updates) is Tensor else to_tensor(
        updates, t.dtype, "TensorScatterNdUpdate", "updates")
    if u.dtype is not t.dtype:
        raise InvalidArgumentError(
            f"TensorScatterNdUpdate: updates {describe(u)} must have the dtype of tensor "
            f"{describe(t)}")
    _updates_check("TensorScatterNdUpdate", idx._shape, u._shape, t._shape, 0)
    return _tensor_scatter_nd_update(t, idx, u)


def _tensor_scatter_nd_update(tensor: Tensor, indices: Tensor, updates: Tensor,
                              batch_dims: int = 0) -> Tensor:
    """tensor_scatter_nd_update with leading batch dims (batched tangents need them)."""
    return run_kernel("TensorScatterNdUpdate",
                      {"tensor": tensor, "indices": indices, "updates": updates},
                      {"batch_dims": batch_dims})


def _tsu_shape(shapes, dtypes, attrs):
    shape = shapes["tensor"]
    _updates_check("TensorScatterNdUpdate", shapes["indices"], shapes["updates"], shape,
                   attrs["batch_dims"])
    return [(tuple(shape), dtypes["tensor"])]


def _tsu_tensor_vjp(g, indices, updates_shape, *, batch_dims):
    # g with the overwritten elements zeroed: scatter zero updates into it
    zero = prims.zeros(shape=tuple(updates_shape), dtype=g.dtype)
    return _tensor_scatter_nd_update(g, indices, zero, batch_dims)


def _tsu_tensor_jvp(t, tensor, indices, updates, *, batch_dims):
    nb = _tangents.batch_dims(t, tensor)
    if nb:
        indices = _bcast_lead(indices, t, nb)
    zero = prims.zeros(shape=dims_of(t)[:nb] + dims_of(updates), dtype=t.dtype)
    return _tensor_scatter_nd_update(t, indices, zero, batch_dims + nb)


def _tsu_updates_jvp(t, tensor, updates, indices, *, batch_dims):
    nb = _tangents.batch_dims(t, updates)
    if nb:
        indices = _bcast_lead(indices, t, nb)
    return _scatter_nd(indices, t, dims_of(t)[:nb] + dims_of(tensor), batch_dims + nb)


# With duplicate indices the forward value keeps one update (as TensorFlow does) while
# these rules treat each update as landing: derivatives assume distinct indices.
def _onnx_tensor_scatter_update(e, node):
    """ONNX's ScatterND is this op (its indices int64)."""
    if node.attrs["batch_dims"]:
        raise NotImplementedError("onnx.export: TensorScatterNdUpdate with batch_dims has "
                                  "no ONNX lowering")
    indices = e.add1("Cast", [e.input(node, "indices")], to=e.dtype_code("int64"))
    e.add("ScatterND", [e.input(node, "tensor"), indices, e.input(node, "updates")],
          e.outputs(node))


defop("TensorScatterNdUpdate", ["tensor", "indices", "updates"], shape=_tsu_shape,
      vjp={"tensor": _tsu_tensor_vjp,
           "updates": lambda g, indices, *, batch_dims: gather_nd(g, indices, batch_dims)},
      jvp={"tensor": _tsu_tensor_jvp, "updates": _tsu_updates_jvp},
      onnx=_onnx_tensor_scatter_update)


# --------------------------------------------------------------------------- where


def where(condition, x=None, y=None, name=None) -> Tensor:
    """With x and y: elements of x where `condition` else of y (broadcasting).
    Alone: the int64 coordinates [n, rank] of the true (non-zero) elements.

    Example: `tf.where([True, False], 1., 2.)` -> [1., 2.]; `tf.where([0, 3])` -> [[1]].
    """
    if x is None and y is None:
        c = to_tensor(condition, None, "Where", "condition")
        if c.dtype.is_string:
            raise InvalidArgumentError(f"Where: condition must be bool or numeric, got "
                                       f"{describe(c)}")
        return run_kernel("Where", {"condition": c})
    if x is None or y is None:
        raise InvalidArgumentError("SelectV2: x and y must both be given or both be None")
    c = condition if type(condition) is Tensor else to_tensor(condition, _dt.bool, "SelectV2",
                                                                "condition")
    if not c.dtype.is_bool:
        raise InvalidArgumentError(f"SelectV2: condition must be bool, got {describe(c)}")
    x, y = binary_operands("SelectV2", x, y)
    return run_kernel("SelectV2", {"condition": c, "x": x, "y": y})


def _select_shape(shapes, dtypes, attrs):
    if not dtypes["condition"].is_bool:
        raise InvalidArgumentError(f"SelectV2: condition must be bool, got "
                                   f"{dtypes['condition'].name}")
    if dtypes["x"] is not dtypes["y"]:
        raise InvalidArgumentError(f"SelectV2: x ({dtypes['x'].name}) and y "
                                   f"({dtypes['y'].name}) must have the same dtype")
    out = broadcast_shapes("SelectV2", shapes["condition"], shapes["x"])
    return [(broadcast_shapes("SelectV2", out, shapes["y"]), dtypes["x"])]


def _zero(like: Tensor) -> Tensor:
    return prims.zeros(shape=(), dtype=like.dtype)


def _select_jvp_x(t, condition, x, y):
    t = align_tangent(t, x, max(condition.ndim, x.ndim, y.ndim))
    return where(condition, t, _zero(t))


def _select_jvp_y(t, condition, x, y):
    t = align_tangent(t, y, max(condition.ndim, x.ndim, y.ndim))
    return where(condition, _zero(t), t)


def _onnx_select(e, node):
    e.add("Where", [e.input(node, "condition"), e.input(node, "x"), e.input(node, "y")],
          e.outputs(node))


defop("SelectV2", ["condition", "x", "y"], shape=_select_shape,
      vjp={"x": lambda g, condition: where(condition, g, _zero(g)),
           "y": lambda g, condition: where(condition, _zero(g), g)},
      jvp={"x": _select_jvp_x, "y": _select_jvp_y}, batch=batch_broadcasting, onnx=_onnx_select)


def _where_shape(shapes, dtypes, attrs):
    # The number of true elements is only known from the data.
    return [((None, len(shapes["condition"])), _dt.int64)]


def _onnx_where_true(e, node):
    """tf.where(condition) with one argument: the [n, rank] positions of the true
    elements, row-major, as ONNX's NonZero gives them transposed."""
    positions = e.add1("NonZero", [e.input(node, "condition")])
    e.add("Transpose", [positions], e.outputs(node), perm=[1, 0])


defop("Where", ["condition"], shape=_where_shape, differentiable=False, onnx=_onnx_where_true)


def boolean_mask(tensor, mask, axis=None, name=None) -> Tensor:
    """The slices of `tensor` where `mask` (covering dims axis..axis+mask.ndim) is True.

    Example: `tf.boolean_mask([1, 2, 3], [True, False, True])` -> [1, 3].
    """
    x = to_tensor(tensor, None, "boolean_mask", "tensor")
    m = to_tensor(mask, _dt.bool, "boolean_mask", "mask")
    if not m.dtype.is_bool:
        raise InvalidArgumentError(f"boolean_mask: mask must be bool, got {describe(m)}")
    k = m.ndim
    axis = 0 if axis is None else int_arg("boolean_mask", axis, "axis")
    if axis < 0:
        axis += x.ndim
    if k == 0 or not 0 <= axis <= x.ndim - k or (
            x._shape[axis:axis + k] != m._shape and not compatible(x._shape[axis:axis + k],
                                                                  m._shape)):
        raise InvalidArgumentError(
            f"boolean_mask: mask {describe(m)} must be at least 1-D and match the dimensions "
            f"of tensor {describe(x)} starting at axis {axis}")
    if k > 1:
        shape = dims_of(x)
        merged = dims_product(shape[axis:axis + k])
        x = prims.reshape(x, shape=shape[:axis] + (merged,) + shape[axis + k:])
    return run_kernel("GatherV2", {"params": x, "indices": _mask_indices(m)},
                      {"axis": axis, "batch_dims": 0})


# --------------------------------------------------------------------------- segment sums

# tf.math names (re-exported by math.py, not at the top level, as in TensorFlow)


def _dyn_segment_sum(data: Tensor, ids: Tensor, minimum: int = 0, maximum: int = -1,
                     sorted_ids: bool = False) -> Tensor:
    """Sums over 1-D `ids` into max(ids) + 1 rows (at least `minimum`, at most `maximum`
    when >= 0): the count is known only when the kernel runs (traced: an unknown dim)."""
    return run_kernel("SegmentSum", {"data": data, "segment_ids": ids},
                      {"minimum": minimum, "maximum": maximum, "sorted_ids": sorted_ids})


def _dyn_segment_sum_shape(shapes, dtypes, attrs):
    ds, ids = shapes["data"], shapes["segment_ids"]
    if len(ids) != 1 or not ds or not _known(ds[0], ids[0]):
        raise InvalidArgumentError(
            f"SegmentSum: segment_ids of shape {list(ids)} must be 1-D and as long as the "
            f"first dimension of data {list(ds)}")
    if not dtypes["segment_ids"].is_integer:
        raise InvalidArgumentError("SegmentSum: segment_ids must be integers, got "
                                   f"{dtypes['segment_ids'].name}")
    return [((None,) + tuple(ds[1:]), dtypes["data"])]


def _dyn_segment_sum_jvp(t, data, segment_ids, *, minimum, maximum, sorted_ids):
    nb = _tangents.batch_dims(t, data)
    if not nb:
        return _dyn_segment_sum(t, segment_ids, minimum, maximum, sorted_ids)
    # Batched tangents: move the segment axis first and back.
    perm = [nb] + list(range(nb)) + list(range(nb + 1, t.ndim))
    out = _dyn_segment_sum(prims.transpose(t, perm=tuple(perm)), segment_ids, minimum, maximum,
                           sorted_ids)
    back = tuple(range(1, nb + 1)) + (0,) + tuple(range(nb + 1, t.ndim))
    return prims.transpose(out, perm=back)


defop("SegmentSum", ["data", "segment_ids"], shape=_dyn_segment_sum_shape,
      vjp={"data": lambda g, segment_ids, **_: gather(g, segment_ids)},
      jvp={"data": _dyn_segment_sum_jvp})


def segment_sum(data, segment_ids, name=None) -> Tensor:
    """Sums of the rows of `data` sharing an id; `segment_ids` (1-D, as long as data's
    first dim) must be sorted and non-negative; the result has max(ids) + 1 rows.

    Example: `tf.math.segment_sum([1., 2., 3.], [0, 0, 2])` -> [3., 0., 3.].
    """
    d = to_tensor(data, None, "SegmentSum", "data")
    ids = _index_tensor("SegmentSum", segment_ids, "segment_ids")
    return _dyn_segment_sum(d, ids, sorted_ids=True)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dt.int32,
             name=None, axis=None, binary_output=False) -> Tensor:
    """Counts of each value in the non-negative int `arr` (the sums of `weights` at those
    positions when given); the length is max(arr) + 1, at least `minlength`, at most
    `maxlength` (larger values are dropped). `axis=-1` counts each row of a 2-D `arr`.

    Example: `tf.math.bincount([1, 1, 3])` -> [0, 2, 0, 1].
    """
    op = "Bincount"
    a = _index_tensor(op, arr if type(arr) is Tensor else to_tensor(arr, _dt.int32, op, "arr"),
                      "arr")
    if axis not in (None, 0, -1):
        raise InvalidArgumentError(f"{op}: axis must be None, 0 or -1, got {axis!r}")
    if axis == -1 and a.ndim != 2:
        raise InvalidArgumentError(f"{op}: axis=-1 needs a 2-D arr, got {describe(a)}")
    lo = 0 if minlength is None else int_arg(op, minlength, "minlength", minimum=0)
    hi = -1 if maxlength is None else int_arg(op, maxlength, "maxlength", minimum=0)
    if weights is None:
        w = ones_like(a, dtype=_dt.as_dtype(dtype))
    else:
        w = to_tensor(weights, None, op, "weights")
        if w._shape != a._shape and not compatible(w._shape, a._shape):
            raise InvalidArgumentError(
                f"{op}: weights {describe(w)} must have the shape of arr {describe(a)}")
    if binary_output:
        w = ones_like(w)
    if not is_symbolic(a) and a.size:
        if int(np.min(a.numpy())) < 0:
            raise InvalidArgumentError(f"{op}: arr must be non-negative, got {describe(a)} "
                                       f"with minimum {int(np.min(a.numpy()))}")
    if axis == -1:
        return _bincount_rows(a, w, lo, hi, binary_output)
    ids, w = reshape(a, [-1]), reshape(w, [-1])
    if hi > 0:  # values past maxlength count nowhere: weight 0 in the last bin, which
        # keeps the length min(max(arr) + 1, maxlength)
        keep = less(ids, cast(hi, ids.dtype))
        last = ones_like(ids) * (hi - 1)
        ids, w = where(keep, ids, last), where(keep, w, zeros_like(w))
    elif hi == 0:
        ids, w = ids[:0], w[:0]
    out = _dyn_segment_sum(w, ids, lo, hi)
    if binary_output:
        out = cast(out > 0, out.dtype)
    return out


def _bincount_rows(a: Tensor, w: Tensor, lo: int, hi: int, binary: bool) -> Tensor:
    """bincount of each row of 2-D `a`: one sum over ids offset by row * width."""
    if is_symbolic(a):
        raise InvalidArgumentError("Bincount: axis=-1 needs eager input (its width depends "
                                   "on the values)")
    an = a.numpy()  # the width depends on the data
    width = max(int(an.max()) + 1 if an.size else 0, lo)
    if hi >= 0:
        width = min(width, hi)
    rows = a.shape[0]
    keep = an < width
    ids = np.where(keep, an, 0) + np.arange(rows)[:, None] * width
    wv = where(convert_to_tensor(keep), w, w * 0)
    out = reshape(unsorted_segment_sum(reshape(wv, [-1]), ids.reshape(-1), rows * width),
                  [rows, width])
    if binary:
        out = cast(out > 0, out.dtype)
    return out


# --------------------------------------------------------------------------- scatter arithmetic

__all__ += ["tensor_scatter_nd_add", "tensor_scatter_nd_sub"]


def _scatter_operands(op: str, tensor, indices, updates):
    t = to_tensor(tensor, None, op, "tensor")
    idx = _index_tensor(op, indices)
    u = updates if type(updates) is Tensor else to_tensor(updates, t.dtype, op, "updates")
    if u.dtype is not t.dtype:
        raise InvalidArgumentError(f"{op}: updates {describe(u)} must have the dtype of "
                                   f"tensor {describe(t)}")
    _updates_check(op, idx._shape, u._shape, t._shape, 0)
    return t, idx, u


def tensor_scatter_nd_add(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` with `updates` added at `indices` (duplicates add).

    Example: `tf.tensor_scatter_nd_add([1., 2., 3.], [[0], [0]], [5., 1.])` -> [7., 2., 3.].
    """
    t, idx, u = _scatter_operands("TensorScatterAdd", tensor, indices, updates)
    return t + _scatter_nd(idx, u, dims_of(t))


def tensor_scatter_nd_sub(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` with `updates` subtracted at `indices` (duplicates add).

    Example: `tf.tensor_scatter_nd_sub([1., 2., 3.], [[2]], [5.])` -> [1., 2., -2.].
    """
    t, idx, u = _scatter_operands("TensorScatterSub", tensor, indices, updates)
    return t - _scatter_nd(idx, u, dims_of(t))


# --------------------------------------------------------------------------- scatter min / max

__all__ += ["tensor_scatter_nd_max", "tensor_scatter_nd_min"]


def tensor_scatter_nd_max(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` where each element at `indices` is the maximum of itself and
    every update landing there.

    Example: `tf.tensor_scatter_nd_max([1., 5., 3.], [[0], [1]], [4., 2.])` -> [4., 5., 3.].
    """
    t, idx, u = _scatter_operands("TensorScatterMax", tensor, indices, updates)
    return run_kernel("TensorScatterMax", {"tensor": t, "indices": idx, "updates": u})


def tensor_scatter_nd_min(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` where each element at `indices` is the minimum of itself and
    every update landing there.

    Example: `tf.tensor_scatter_nd_min([1., 5., 3.], [[0], [1]], [4., 2.])` -> [1., 2., 3.].
    """
    t, idx, u = _scatter_operands("TensorScatterMin", tensor, indices, updates)
    return run_kernel("TensorScatterMin", {"tensor": t, "indices": idx, "updates": u})


def _scatter_extremum_shape(op):
    def rule(shapes, dtypes, attrs):
        _updates_check(op, shapes["indices"], shapes["updates"], shapes["tensor"], 0)
        return [(tuple(shapes["tensor"]), dtypes["tensor"])]
    return rule


def _extremum_indicators(ans, tensor, indices, updates):
    """TensorFlow's gradient of scatter min/max: which of `tensor` and of `updates` equal
    the result where they land (1.0/0.0), and how many tie for each result element; a
    tie shares the gradient equally."""
    x_ind = cast_to(prims.equal(tensor, ans), ans.dtype)
    y_ind = cast_to(prims.equal(updates, gather_nd(ans, indices)), ans.dtype)
    count = x_ind + _scatter_nd(indices, y_ind, dims_of(ans))
    return x_ind, y_ind, count


def _extremum_tensor_vjp(g, ans, tensor, indices, updates):
    x_ind, _, count = _extremum_indicators(ans, tensor, indices, updates)
    return g * x_ind / count


def _extremum_updates_vjp(g, ans, tensor, indices, updates):
    _, y_ind, count = _extremum_indicators(ans, tensor, indices, updates)
    return gather_nd(g / count, indices) * y_ind


def _extremum_tensor_jvp(t, ans, tensor, indices, updates):
    x_ind, _, count = _extremum_indicators(ans, tensor, indices, updates)
    return t * x_ind / count  # leading batch dims of t broadcast


def _extremum_updates_jvp(t, ans, tensor, indices, updates):
    _, y_ind, count = _extremum_indicators(ans, tensor, indices, updates)
    nb = _tangents.batch_dims(t, updates)
    if nb:
        indices = _bcast_lead(indices, t, nb)
    landed = _scatter_nd(indices, t * y_ind, dims_of(t)[:nb] + dims_of(tensor), nb)
    return landed / count


for _op in ("TensorScatterMax", "TensorScatterMin"):
    defop(_op, ["tensor", "indices", "updates"], shape=_scatter_extremum_shape(_op),
          vjp={"tensor": _extremum_tensor_vjp, "updates": _extremum_updates_vjp},
          jvp={"tensor": _extremum_tensor_jvp, "updates": _extremum_updates_jvp})
