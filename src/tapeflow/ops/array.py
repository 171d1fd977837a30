"""Array manipulation ops: public functions with their shape, VJP and JVP rules."""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt, nest, prims
from .._core.context import ctx, hooks
from .._core.convert import convert_to_tensor, register_tensor_conversion_function
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import dims_of, is_dim, is_symbolic
from .._core.tensor import Tensor, TensorShape
from .._core.variable import Variable
from ._args import (ArgumentTypeError, choice_arg, dtype_arg, int_arg, int_list, normalize_axes,
                    normalize_axis, sequence_arg, shape_arg, show, to_tensor)
from . import _onnx
from ._define import defop, passthrough, same_shape
from ._tangents import align_tangent, batch_dims
from .creation import ones
from .math import conj, floormod
from .reduction import cumsum, reduce_max
from ._batching import (NoBatchingRule, batch_elementwise, batch_reshape, batch_shift_axis,
                        batch_transpose, broadcast_batch)

__all__ = ["reshape", "identity", "broadcast_to", "transpose", "expand_dims", "squeeze",
           "concat", "stack", "unstack", "split", "tile", "pad", "reverse", "identity_n",
           "stop_gradient", "shape", "size", "rank", "sort", "argsort", "meshgrid",
           "sequence_mask"]


def reshape(tensor, shape, name=None) -> Tensor:
    """Same data, new shape (one dimension may be -1). Shares the input's buffer.

    Example: `tf.reshape(tf.range(6), [2, 3])`.
    """
    x = tensor if type(tensor) is Tensor else to_tensor(tensor, None, "Reshape", "tensor")
    return _reshape(x, shape_arg("Reshape", shape, unknown=True))


# Thin wrappers of the Reshape, BroadcastTo and Transpose kernels (each that kernel's one
# call site here): rules run them on every backward pass with shapes and perms that are
# already valid, so they skip the public functions' argument conversion and checks.
def _reshape(x: Tensor, shape: tuple) -> Tensor:
    return run_kernel("Reshape", {"x": x}, {"shape": shape})


def _broadcast_to(x: Tensor, shape: tuple) -> Tensor:
    return run_kernel("BroadcastTo", {"x": x}, {"shape": shape})


def _transpose(x: Tensor, perm: tuple) -> Tensor:
    return run_kernel("Transpose", {"x": x}, {"perm": perm})


def _reshape_shape_rule(shapes, dtypes, attrs):
    shape, new = shapes["x"], list(attrs["shape"])
    if new.count(-1) > 1:
        raise InvalidArgumentError(f"Reshape: at most one -1 in shape {new}")
    known = [d for d in shape]
    if None in new or (None in known and -1 in new):
        # run-time sizes (Dims, seen here as None) or an inferred -1 of unknown dims
        return [(tuple(None if d == -1 else d for d in new), dtypes["x"])]
    if None not in known and -1 in new:
        total = int(np.prod(known))
        rest = int(np.prod([d for d in new if d != -1]))
        if rest == 0 or total % rest:
            raise InvalidArgumentError(f"Reshape: cannot reshape {list(shape)} into {new}")
        new[new.index(-1)] = total // rest
    elif None not in known and int(np.prod(known)) != int(np.prod(new)):
        raise InvalidArgumentError(
            f"Reshape: cannot reshape a tensor of shape {list(shape)} "
            f"({int(np.prod(known))} elements) into shape {new}")
    return [(tuple(None if d == -1 else d for d in new), dtypes["x"])]


def _reshape_jvp(t, x, ans):
    return _reshape(t, dims_of(t)[:batch_dims(t, x)] + dims_of(ans))


def _onnx_reshape(e, node):
    shape = tuple(node.attrs["shape"])
    attrs = {"allowzero": 1} if 0 in shape and e.opset >= 14 else {}
    e.add("Reshape", [e.input(node, "x"), e.ints(shape)], e.outputs(node), **attrs)


defop("Reshape", ["x"], shape=_reshape_shape_rule,
      vjp={"x": lambda g, x_shape: _reshape(g, x_shape)},
      jvp={"x": _reshape_jvp}, batch=batch_reshape, onnx=_onnx_reshape)


def identity(input, name=None) -> Tensor:
    """The same value as a new tensor sharing the buffer. Example: `tf.identity(x)`."""
    x = input if type(input) is Tensor else to_tensor(input, None, "identity", "input")
    return run_kernel("Identity", {"x": x})


defop("Identity", ["x"], shape=same_shape,
      vjp={"x": passthrough}, jvp={"x": lambda t: identity(t)}, batch=batch_elementwise,
      onnx=_onnx.unary("Identity"))


def broadcast_to(input, shape, name=None) -> Tensor:
    """Broadcast to `shape` following NumPy rules. Example: `tf.broadcast_to(1.0, [2])`."""
    x = input if type(input) is Tensor else to_tensor(input, None, "BroadcastTo", "input")
    return _broadcast_to(x, shape_arg("BroadcastTo", shape))


def _broadcast_to_shape(shapes, dtypes, attrs):
    s, target = shapes["x"], tuple(attrs["shape"])
    lead = len(target) - len(s)
    if lead < 0:
        raise InvalidArgumentError(f"BroadcastTo: cannot broadcast {list(s)} to {list(target)}")
    out = list(target)
    for i, d in enumerate(s):
        t = target[lead + i]
        if t is None:  # known when the graph runs; a dim other than 1 must equal it
            out[lead + i] = None if d in (1, None) else d
        elif d not in (1, t, None):
            raise InvalidArgumentError(
                f"BroadcastTo: cannot broadcast {list(s)} to {list(target)}")
    return [(tuple(out), dtypes["x"])]


def _broadcast_to_jvp(t, x, *, shape):
    lead = t._shape[:batch_dims(t, x)]
    return _broadcast_to(align_tangent(t, x, len(shape)), lead + tuple(shape))


def _onnx_broadcast_to(e, node):
    e.add("Expand", [e.input(node, "x"), e.ints(node.attrs["shape"])], e.outputs(node))


defop("BroadcastTo", ["x"], shape=_broadcast_to_shape,
      vjp={"x": passthrough},  # the engine sums g back to x's shape
      jvp={"x": _broadcast_to_jvp}, onnx=_onnx_broadcast_to)


# --------------------------------------------------------------------------- helpers


def _tensor_list(op: str, values) -> list:
    """A non-empty list of tensors of one dtype; Python values take the tensors' dtype."""
    vals = sequence_arg(op, values, "values", nonempty=True)
    hint = None
    for v in vals:
        if isinstance(v, (Tensor, Variable)):
            hint = v.dtype
            break
    out = [v if type(v) is Tensor else to_tensor(v, hint, op, "values") for v in vals]
    first = out[0].dtype
    for v in out:
        if v.dtype is not first:
            raise InvalidArgumentError(
                f"{op}: all values must have the same dtype, got "
                f"[{', '.join(describe(v) for v in out)}]; cast them with tf.cast")
    return out


def _merge_dim(op: str, a, b, shapes):
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise InvalidArgumentError(f"{op}: incompatible shapes {[list(s) for s in shapes]}")


def _full_tangents(t: list, values: list) -> tuple[list, int]:
    """List-input tangents with None replaced by zeros (of the batch shape); and nb."""
    ref, val = next((ti, v) for ti, v in zip(t, values) if ti is not None)
    nb = batch_dims(ref, val)
    if all(ti is not None for ti in t):
        return list(t), nb
    lead = dims_of(ref)[:nb]
    return [ti if ti is not None else prims.zeros(shape=lead + dims_of(v), dtype=ref.dtype)
            for ti, v in zip(t, values)], nb


# --------------------------------------------------------------------------- transpose


def transpose(a, perm=None, conjugate=False, name=None) -> Tensor:
    """Permute dimensions (`perm` defaults to reversing them); `conjugate` also conjugates.

    Example: `tf.transpose(tf.zeros([2, 3])).shape` -> TensorShape([3, 2]).
    """
    x = a if type(a) is Tensor else to_tensor(a, None, "Transpose", "a")
    n = len(x._shape)
    if perm is None:
        perm = tuple(range(n - 1, -1, -1))
    else:
        p = int_list("Transpose", perm, "perm", scalar=False)
        if len(p) == n and all(-n <= q < n for q in p):
            p = tuple(q % n for q in p)
        if len(p) != n or sorted(p) != list(range(n)):
            raise InvalidArgumentError(
                f"Transpose: perm {list(p)} is not a permutation of the dimensions of a: "
                f"{describe(x)}")
        perm = p
    out = _transpose(x, perm)
    if conjugate and x.dtype.is_complex:
        out = conj(out)
    return out


def _transpose_shape(shapes, dtypes, attrs):
    s, perm = shapes["x"], attrs["perm"]
    if sorted(perm) != list(range(len(s))):
        raise InvalidArgumentError(
            f"Transpose: perm {list(perm)} is not a permutation of the dims of {list(s)}")
    return [(tuple(s[p] for p in perm), dtypes["x"])]


def _inverse_perm(perm: tuple) -> tuple:
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _transpose_jvp(t, *, perm):
    nb = batch_dims(t, len(perm))
    return _transpose(t, tuple(range(nb)) + tuple(p + nb for p in perm) if nb else perm)


def _onnx_transpose(e, node):
    e.add("Transpose", [e.input(node, "x")], e.outputs(node),
          perm=[int(p) for p in node.attrs["perm"]])


defop("Transpose", ["x"], shape=_transpose_shape,
      vjp={"x": lambda g, *, perm: _transpose(g, _inverse_perm(perm))},
      jvp={"x": _transpose_jvp}, batch=batch_transpose, onnx=_onnx_transpose)


# --------------------------------------------------------------------------- expand/squeeze


def expand_dims(input, axis, name=None) -> Tensor:
    """Insert a dimension of size 1 at `axis` (shares the input's buffer).

    Example: `tf.expand_dims(tf.zeros([2]), -1).shape` -> TensorShape([2, 1]).
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "ExpandDims", "input")
    return _expand_dims(x, (normalize_axis("ExpandDims", axis, len(x._shape) + 1),))


def _expand_dims(x: Tensor, axes: tuple) -> Tensor:
    """Unit dims inserted at the sorted output positions `axes` (several at once, which
    the public expand_dims cannot: the transpose of a multi-axis squeeze)."""
    return run_kernel("ExpandDims", {"x": x}, {"axis": axes})


def _expand_dims_shape(shapes, dtypes, attrs):
    out = list(shapes["x"])
    for a in attrs["axis"]:  # sorted output positions
        if not 0 <= a <= len(out):
            raise InvalidArgumentError(
                f"ExpandDims: axis {a} out of range for input shape {list(shapes['x'])}")
        out.insert(a, 1)
    return [(tuple(out), dtypes["x"])]


def squeeze(input, axis=None, name=None) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in `axis`); shares the buffer.

    Example: `tf.squeeze(tf.zeros([1, 2, 1]), axis=0).shape` -> TensorShape([2, 1]).
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "Squeeze", "input")
    s = x._shape
    if axis is None:
        # An unknown dim (traced) is kept: graphs here have static ranks, so only the dims
        # known to be 1 go (TensorFlow decides at run time, with an unknown rank).
        axes = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        # TF's squeeze takes an axis named twice as once
        axes = normalize_axes("Squeeze", axis, len(s), duplicates=True)
        for a in axes:
            if s[a] != 1 and s[a] is not None:
                raise InvalidArgumentError(
                    f"Squeeze: cannot squeeze axis {a} of size {s[a]} (input: {describe(x)})")
    return run_kernel("Squeeze", {"x": x}, {"axis": axes})


def _squeeze_shape(shapes, dtypes, attrs):
    s, axes = shapes["x"], attrs["axis"]
    for a in axes:
        if not 0 <= a < len(s) or s[a] not in (1, None):
            raise InvalidArgumentError(
                f"Squeeze: cannot squeeze axis {a} of shape {list(s)} (size must be 1)")
    return [(tuple(d for i, d in enumerate(s) if i not in axes), dtypes["x"])]


def _shift(axis: tuple, t: Tensor, x: Tensor) -> tuple:
    """`axis` of `x` moved past the leading batch dims of its (batched) tangent `t`."""
    nb = batch_dims(t, x)
    return tuple(a + nb for a in axis) if nb else axis


def _onnx_expand_dims(e, node):
    e.unsqueeze(e.input(node, "x"), list(node.attrs["axis"]), e.outputs(node))


# Each is the other's transpose: squeeze's input positions are expand_dims' output ones.
defop("ExpandDims", ["x"], shape=_expand_dims_shape,
      vjp={"x": lambda g, *, axis: squeeze(g, axis)},
      jvp={"x": lambda t, x, *, axis: _expand_dims(t, _shift(axis, t, x))}, batch=batch_shift_axis,
      onnx=_onnx_expand_dims)


def _onnx_squeeze(e, node):
    axes = node.attrs.get("axis")
    if axes is None or len(axes) == 0:  # every size-1 axis, known when traced
        axes = [i for i, d in enumerate(node.inputs["x"]._shape) if d == 1]
    e.squeeze(e.input(node, "x"), list(axes), e.outputs(node))


defop("Squeeze", ["x"], shape=_squeeze_shape,
      vjp={"x": lambda g, *, axis: _expand_dims(g, axis)},
      jvp={"x": lambda t, x, *, axis: squeeze(t, _shift(axis, t, x))}, batch=batch_shift_axis,
      onnx=_onnx_squeeze)


# --------------------------------------------------------------------------- concat/split


def concat(values, axis, name=None) -> Tensor:
    """Join tensors of one rank and dtype along an existing `axis`.

    Example: `tf.concat([tf.zeros([2, 3]), tf.ones([1, 3])], 0).shape` -> [3, 3].
    """
    if type(values) is Tensor:
        return identity(values)
    vals = _tensor_list("Concat", values)
    if len(vals) == 1:
        return identity(vals[0])
    r = len(vals[0]._shape)
    if r == 0:
        raise InvalidArgumentError("Concat: cannot concatenate scalars (use tf.stack), got "
                                   f"[{', '.join(describe(v) for v in vals)}]")
    ax = normalize_axis("Concat", axis, r)
    sizes = []
    for v in vals:
        if len(v._shape) != r:
            raise InvalidArgumentError(
                f"Concat: all values must have rank {r}, got "
                f"[{', '.join(describe(v) for v in vals)}]")
        sizes.append(dims_of(v)[ax])  # run-time sizes for the VJP
    return run_kernel("Concat", {"values": vals}, {"axis": ax, "sizes": tuple(sizes)})


def _one_dtype(op: str, dtypes: list):
    """The common dtype of a list input (concat, stack), or an error naming them all."""
    first = dtypes[0]
    if any(d is not first for d in dtypes):
        raise InvalidArgumentError(f"{op}: values must have one dtype, got "
                                   f"{[d.name for d in dtypes]}")
    return first


def _concat_shape(shapes, dtypes, attrs):
    ss, ax = shapes["values"], attrs["axis"]
    r = len(ss[0])
    if any(len(s) != r for s in ss) or not 0 <= ax < r:
        raise InvalidArgumentError(
            f"Concat: values must share one rank > {ax} (axis), got {[list(s) for s in ss]}")
    first = _one_dtype("Concat", dtypes["values"])
    out = list(ss[0])
    for s in ss[1:]:
        for i in range(r):
            if i != ax:
                out[i] = _merge_dim("Concat", out[i], s[i], ss)
    sizes = [s[ax] for s in ss]
    out[ax] = None if None in sizes else sum(sizes)
    return [(tuple(out), first)]


def _concat_jvp(t, values, *, axis, sizes):
    ts, nb = _full_tangents(t, values)
    return concat(ts, axis + nb)


def _onnx_concat(e, node):
    e.add("Concat", e.input(node, "values"), e.outputs(node), axis=int(node.attrs["axis"]))


# `sizes` (the inputs' extents along axis) lets the VJP split without keeping the inputs.
defop("Concat", ["values"], list_inputs=["values"], shape=_concat_shape,
      vjp={"values": lambda g, *, axis, sizes: _split(
          g if type(g) is Tensor else to_tensor(g, None, "Concat", "g"), axis, sizes)},
      jvp={"values": _concat_jvp}, batch=batch_shift_axis, onnx=_onnx_concat)


def split(value, num_or_size_splits, axis=0, num=None, name=None) -> list:
    """Split into `num_or_size_splits` equal parts, or parts of the listed sizes (one
    may be -1) along `axis`; returns a list.

    Example: `[p.shape for p in tf.split(tf.zeros([5, 2]), [2, -1])]` -> [[2, 2], [3, 2]].
    """
    x = value if type(value) is Tensor else to_tensor(value, None, "Split", "value")
    s = x._shape
    if not s:
        raise InvalidArgumentError(f"Split: cannot split a scalar: {describe(x)}")
    ax = normalize_axis("Split", axis, len(s))
    d = s[ax]
    spec = num_or_size_splits
    if getattr(spec, "ndim", 1) == 0:  # a 0-d tensor or array counts parts, as an int does
        spec = int_arg("Split", spec, "num_or_size_splits")
    if type(spec) is int or isinstance(spec, np.integer):
        n = int(spec)
        if n <= 0 or (d is not None and d % n):
            raise InvalidArgumentError(
                f"Split: cannot split dimension {ax} of {describe(x)} into {n} equal parts")
        sizes = (d // n,) * n if d is not None else (-1,) * n  # all -1: equal at run time
    else:
        sizes = list(int_list("Split", spec, "num_or_size_splits", scalar=False))
        if sizes.count(-1) > 1 or any(z < -1 for z in sizes) or not sizes:
            raise InvalidArgumentError(
                f"Split: size_splits {sizes} must be non-negative with at most one -1")
        if -1 in sizes and d is not None:
            sizes[sizes.index(-1)] = d - sum(z for z in sizes if z != -1)
        if d is not None and (sum(sizes) != d or min(sizes) < 0):
            raise InvalidArgumentError(
                f"Split: size_splits {list(int_list('Split', spec, 'size_splits'))} do "
                f"not add up to dimension {ax} (size {d}) of value: {describe(x)}")
        sizes = tuple(sizes)
    return _split(x, ax, sizes)


def _split(x: Tensor, axis: int, sizes: tuple) -> list:
    """The Split kernel: `sizes` may hold Dims, one -1 (the rest of the dimension) or be
    all -1 (equal parts), the latter two for dimensions known only when a graph runs."""
    return run_kernel("Split", {"x": x}, {"axis": axis, "sizes": sizes})


def _split_shape(shapes, dtypes, attrs):
    s, ax, sizes = shapes["x"], attrs["axis"], attrs["sizes"]
    if not 0 <= ax < len(s):
        raise InvalidArgumentError(f"Split: axis {ax} out of range for shape {list(s)}")
    d = s[ax]
    if -1 in sizes:  # the rest of the dimension, or with every size -1, equal parts
        known = [z for z in sizes if z != -1]
        rest = (None if d is None or None in known else
                d - sum(known) if known else d // len(sizes))
        sizes = tuple(rest if z == -1 else z for z in sizes)
    elif d is not None and None not in sizes and sum(sizes) != d:
        raise InvalidArgumentError(
            f"Split: sizes {list(sizes)} do not add up to dimension {ax} of {list(s)}")
    return [(s[:ax] + (z,) + s[ax + 1:], dtypes["x"]) for z in sizes]


def _onnx_split(e, node):
    sizes = [int(v) for v in node.attrs["sizes"]]
    e.add("Split", [e.input(node, "x"), e.const(np.asarray(sizes, np.int64))],
          e.outputs(node), axis=int(node.attrs["axis"]))


defop("Split", ["x"], num_outputs=None, shape=_split_shape, zeros_for_none=True,
      vjp={"x": lambda g, *, axis, sizes: concat(g, axis)},
      jvp={"x": lambda t, x, *, axis, sizes: _split(t, axis + batch_dims(t, x), sizes)},
      onnx=_onnx_split)


# --------------------------------------------------------------------------- stack/unstack


def stack(values, axis=0, name=None) -> Tensor:
    """Stack tensors of one shape and dtype along a new `axis`.

    Example: `tf.stack([tf.zeros([3]), tf.ones([3])], axis=1).shape` -> [3, 2].
    """
    if type(values) is Tensor:
        values = unstack(values)
    vals = _tensor_list("Stack", values)
    ax = normalize_axis("Stack", axis, len(vals[0]._shape) + 1)
    return run_kernel("Stack", {"values": vals}, {"axis": ax})


def _autopack(value, dtype=None, name=None, as_ref=False):
    """convert_to_tensor of a list or tuple holding tensors or variables: one stacked
    tensor, its Python numbers taking the tensors' dtype (TensorFlow's autopacking);
    NotImplemented for plain Python values, which the default conversion handles."""
    leaves = nest.flatten(list(value))
    tensors = [v for v in leaves if isinstance(v, (Tensor, Variable))]
    if not tensors:
        return NotImplemented
    hint = dtype if dtype is not None else tensors[0].dtype
    return stack([convert_to_tensor(v, dtype, hint) for v in value])


register_tensor_conversion_function((list, tuple), _autopack, priority=99)


def _stack_shape(shapes, dtypes, attrs):
    ss, ax = shapes["values"], attrs["axis"]
    r = len(ss[0])
    if any(len(s) != r for s in ss) or not 0 <= ax <= r:
        raise InvalidArgumentError(
            f"Stack: values must have one shape, got {[list(s) for s in ss]} (axis {ax})")
    first = _one_dtype("Stack", dtypes["values"])
    out = list(ss[0])
    for s in ss[1:]:
        out = [_merge_dim("Stack", a, b, ss) for a, b in zip(out, s)]
    return [(tuple(out[:ax]) + (len(ss),) + tuple(out[ax:]), first)]


def _stack_jvp(t, values, *, axis):
    ts, nb = _full_tangents(t, values)
    return stack(ts, axis + nb)


def _onnx_stack(e, node):
    axis = int(node.attrs.get("axis", 0))
    parts = [e.unsqueeze(v, [axis]) for v in e.input(node, "values")]
    e.add("Concat", parts, e.outputs(node), axis=axis)


defop("Stack", ["values"], list_inputs=["values"], shape=_stack_shape,
      vjp={"values": lambda g, *, axis: unstack(g, axis=axis)},
      jvp={"values": _stack_jvp}, batch=batch_shift_axis, onnx=_onnx_stack)


def unstack(value, num=None, axis=0, name=None) -> list:
    """The list of slices of `value` along `axis` (each of rank one less).

    Example: `len(tf.unstack(tf.zeros([3, 2])))` -> 3.
    """
    x = value if type(value) is Tensor else to_tensor(value, None, "Unstack", "value")
    s = x._shape
    if not s:
        raise InvalidArgumentError(f"Unstack: cannot unstack a scalar: {describe(x)}")
    ax = normalize_axis("Unstack", axis, len(s))
    d = s[ax]
    if num is None:
        if d is None:
            raise InvalidArgumentError(f"Unstack: cannot infer num from shape {list(s)}")
        num = d
    elif d is not None and int_arg("Unstack", num, "num", minimum=0) != d:
        raise InvalidArgumentError(
            f"Unstack: num={num} does not match dimension {ax} of value: {describe(x)}")
    if not num:  # no pieces: no op to run (nor to record on a tape)
        return []
    return run_kernel("Unstack", {"x": x}, {"axis": ax, "num": int(num)})


def _unstack_shape(shapes, dtypes, attrs):
    s, ax, num = shapes["x"], attrs["axis"], attrs["num"]
    if not 0 <= ax < len(s) or s[ax] not in (num, None):
        raise InvalidArgumentError(
            f"Unstack: cannot unstack shape {list(s)} into {num} parts along axis {ax}")
    return [(s[:ax] + s[ax + 1:], dtypes["x"])] * num


def _onnx_unstack(e, node):
    axis, outs = int(node.attrs["axis"]), e.outputs(node)
    pieces = e.add("Split", [e.input(node, "x"), e.const(np.ones(len(outs), np.int64))],
                   [e.fresh("piece") for _ in outs], axis=axis)
    for piece, out in zip(pieces, outs):
        e.squeeze(piece, [axis], [out])


defop("Unstack", ["x"], num_outputs=None, shape=_unstack_shape, zeros_for_none=True,
      vjp={"x": lambda g, *, axis, num: stack(g, axis)},
      jvp={"x": lambda t, x, *, axis, num: unstack(t, num, axis + batch_dims(t, x))},
      batch=batch_shift_axis, onnx=_onnx_unstack)


# --------------------------------------------------------------------------- tile


def tile(input, multiples, name=None) -> Tensor:
    """Repeat `input` `multiples[i]` times along each axis i.

    Example: `tf.tile(tf.constant([[1, 2]]), [2, 2]).shape` -> TensorShape([2, 4]).
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "Tile", "input")
    m = int_list("Tile", multiples, "multiples", scalar=False)
    if len(m) != len(x._shape) or any(v < 0 for v in m):
        raise InvalidArgumentError(
            f"Tile: multiples {list(m)} must be non-negative, one per dimension of input: "
            f"{describe(x)}")
    return run_kernel("Tile", {"x": x}, {"multiples": m})


def _tile_shape(shapes, dtypes, attrs):
    s, m = shapes["x"], attrs["multiples"]
    if len(m) != len(s):
        raise InvalidArgumentError(f"Tile: multiples {list(m)} do not match shape {list(s)}")
    return [(tuple(None if d is None else d * k for d, k in zip(s, m)), dtypes["x"])]


def _tile_vjp(g, x_shape, *, multiples):
    if not multiples:
        return g
    # g's axis i holds multiples[i] copies of x's axis i: split it into [copy, x dim] and
    # sum over the copies. Sizes 1 are dropped and neighbours both summed or both kept
    # merged, so the split stays within NumPy's 64 dims (2 per axis did not at rank 40).
    # An unknown dim (a Dim, resolved when the graph runs) is not merged.
    parts = []  # [size, summed]
    for size, summed in ((d, k % 2 == 0) for pair in zip(multiples, x_shape)
                         for k, d in enumerate(pair)):
        if is_dim(size):
            parts.append([size, summed])
        elif size != 1 and parts and parts[-1][1] == summed and type(parts[-1][0]) is int:
            parts[-1][0] *= size
        elif size != 1:
            parts.append([size, summed])
    out = prims.sum(_reshape(g, tuple(p for p, _ in parts)),
                    axis=tuple(k for k, (_, summed) in enumerate(parts) if summed), keepdims=False)
    return _reshape(out, tuple(x_shape))


def _onnx_tile(e, node):
    e.add("Tile", [e.input(node, "x"), e.ints(node.attrs["multiples"])], e.outputs(node))


defop("Tile", ["x"], shape=_tile_shape, vjp={"x": _tile_vjp},
      jvp={"x": lambda t, x, *, multiples: tile(t, (1,) * batch_dims(t, x) + multiples)},
      onnx=_onnx_tile)


# --------------------------------------------------------------------------- pad

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _check_pad(shape, paddings, mode):
    if len(paddings) != len(shape):
        raise InvalidArgumentError(
            f"Pad: paddings must have shape [{len(shape)}, 2] for input shape {list(shape)}, "
            f"got {[list(p) for p in paddings]}")
    if mode != "CONSTANT":
        extra = 1 if mode == "REFLECT" else 0
        for d, (a, b) in zip(shape, paddings):
            if d is not None and max(a, b) > d - extra:
                raise InvalidArgumentError(
                    f"Pad: {mode} paddings {[list(p) for p in paddings]} must be at most "
                    f"dim{' - 1' if extra else ''} for input shape {list(shape)}")


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None) -> Tensor:
    """Pad with `constant_values` (CONSTANT) or a mirror image (REFLECT, SYMMETRIC);
    `paddings[i] = [before, after]` for dimension i.

    Example: `tf.pad(tf.ones([2]), [[1, 2]]).numpy()` -> [0., 1., 1., 0., 0.].
    """
    x = tensor if type(tensor) is Tensor else to_tensor(tensor, None, "Pad", "tensor")
    mode = choice_arg("Pad", mode, "mode", _PAD_MODES, upper=True)
    n = len(x._shape)
    arr = np.asarray(paddings.numpy() if isinstance(paddings, (Tensor, Variable)) else paddings)
    if arr.size == 0 and n == 0:
        p = ()
    elif arr.dtype.kind not in "iu" and arr.size:
        raise ArgumentTypeError(f"Pad: paddings must be ints of shape [{n}, 2] for tensor: "
                                f"{describe(x)}, got {show(paddings)}")
    elif arr.shape != (n, 2) or (arr < 0).any():
        raise InvalidArgumentError(
            f"Pad: paddings must be non-negative ints of shape [{n}, 2] for tensor: "
            f"{describe(x)}, got {arr.tolist()}")
    else:
        p = tuple((int(a), int(b)) for a, b in arr.tolist())
    _check_pad(x._shape, p, mode)
    cv = constant_values
    if isinstance(cv, (Tensor, Variable)):
        if cv.dtype is not x.dtype or cv.shape != ():
            raise InvalidArgumentError(
                f"Pad: constant_values must be a scalar of the tensor's dtype, got "
                f"{describe(cv)} for tensor: {describe(x)}")
        cv = np.asarray(cv).item()
    elif x.dtype.is_string and type(cv) is int and cv == 0:
        cv = b""  # the default pads strings with empty ones, as TF
    elif not (type(cv) is int and cv == 0):
        cv = to_tensor(cv, x.dtype, "Pad", "constant_values")
        if cv.dtype is not x.dtype or cv._shape != ():
            raise InvalidArgumentError(
                f"Pad: constant_values must be a scalar of the tensor's dtype, got "
                f"{describe(cv)} for tensor: {describe(x)}")
        cv = np.asarray(cv).item()
    return run_kernel("Pad", {"x": x}, {"paddings": p, "mode": mode, "constant_values": cv})


def _pad_shape(shapes, dtypes, attrs):
    s, p = shapes["x"], attrs["paddings"]
    _check_pad(s, p, attrs["mode"])
    return [(tuple(None if d is None else d + a + b for d, (a, b) in zip(s, p)), dtypes["x"])]


def _pad_jvp(t, x, *, paddings, mode, constant_values):
    return pad(t, ((0, 0),) * batch_dims(t, x) + paddings, mode)


def _onnx_pad_symmetric(e, node, pads):
    """SYMMETRIC padding (the mirror image including the edge), axis by axis: the first
    `before` elements reversed, the tensor, the last `after` elements reversed."""
    x = e.input(node, "x")
    padded = [(axis, int(b), int(a)) for axis, (b, a) in enumerate(pads) if b or a]
    if not padded:
        e.add("Identity", [x], e.outputs(node))
        return
    minus_one = e.const(np.asarray([-1], np.int64))
    for k, (axis, before, after) in enumerate(padded):
        ax = e.const(np.asarray([axis], np.int64))
        parts = []
        if before:  # x[before-1::-1]
            parts.append(e.add1("Slice", [x, e.const(np.asarray([before - 1], np.int64)),
                                          e.const(np.asarray([_onnx.INT64_MIN], np.int64)), ax,
                                          minus_one]))
        parts.append(x)
        if after:  # x[:-after-1:-1]
            parts.append(e.add1("Slice", [x, minus_one,
                                          e.const(np.asarray([-after - 1], np.int64)), ax,
                                          minus_one]))
        outs = e.outputs(node) if k == len(padded) - 1 else None
        x = e.add("Concat", parts, outs, axis=axis)[0]


def _onnx_pad(e, node):
    mode = node.attrs.get("mode", "CONSTANT").lower()
    pads = np.asarray(node.attrs["paddings"], np.int64)
    if mode == "symmetric":  # ONNX's reflect excludes the edge, as TF's REFLECT does
        _onnx_pad_symmetric(e, node, pads)
        return
    value = e.const(np.asarray(node.attrs.get("constant_values", 0),
                               node.outputs[0].dtype.name))
    e.add("Pad", [e.input(node, "x"), e.const(pads.T.reshape(-1)), value], e.outputs(node),
          mode=mode)


defop("Pad", ["x"], shape=_pad_shape,
      vjp={"x": lambda g, *, paddings, mode, constant_values: _pad_grad(g, paddings, mode)},
      jvp={"x": _pad_jvp}, onnx=_onnx_pad)


def _pad_grad(x: Tensor, paddings: tuple, mode: str) -> Tensor:
    """Pad's transpose (no public op): `x` cropped, mirrored borders folded back first."""
    return run_kernel("PadGrad", {"x": x}, {"paddings": paddings, "mode": mode})


def _pad_grad_shape(shapes, dtypes, attrs):
    s, p = shapes["x"], attrs["paddings"]
    if len(p) != len(s):
        raise InvalidArgumentError(f"PadGrad: paddings {p} do not match shape {list(s)}")
    out = tuple(None if d is None else d - a - b for d, (a, b) in zip(s, p))
    if any(d is not None and d < 0 for d in out):
        raise InvalidArgumentError(f"PadGrad: paddings {p} exceed shape {list(s)}")
    _check_pad(out, p, attrs["mode"])
    return [(out, dtypes["x"])]


# The transpose of Pad (crop, folding mirrored borders back); Pad is in turn its transpose.
defop("PadGrad", ["x"], shape=_pad_grad_shape,
      vjp={"x": lambda g, *, paddings, mode: pad(g, paddings, mode)},
      jvp={"x": lambda t, x, *, paddings, mode: _pad_grad(
          t, ((0, 0),) * batch_dims(t, x) + paddings, mode)})


# --------------------------------------------------------------------------- reverse


def reverse(tensor, axis, name=None) -> Tensor:
    """Reverse the order of elements along each axis in `axis` (a list).

    Example: `tf.reverse(tf.constant([1, 2, 3]), [0]).numpy()` -> [3, 2, 1].
    """
    x = tensor if type(tensor) is Tensor else to_tensor(tensor, None, "Reverse", "tensor")
    n = len(x._shape)
    axes = [normalize_axis("Reverse", a, n) for a in int_list("Reverse", axis, "axis",
                                                                 scalar=False)]
    if n == 0 and axes:
        raise InvalidArgumentError(f"Reverse: axis {axes} is out of range for a scalar")
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"Reverse: axis {axes} names a dimension twice "
                                   f"(tensor: {describe(x)})")
    return run_kernel("Reverse", {"x": x}, {"axis": tuple(sorted(axes))})


def _reverse_shape(shapes, dtypes, attrs):
    s = shapes["x"]
    if any(not 0 <= a < len(s) for a in attrs["axis"]):
        raise InvalidArgumentError(f"Reverse: axis {attrs['axis']} out of range for {list(s)}")
    return [(s, dtypes["x"])]


def _onnx_reverse(e, node):
    axes = [int(a) for a in node.attrs["axis"]]
    if not axes:
        e.add("Identity", [e.input(node, "x")], e.outputs(node))
        return
    n = len(axes)  # a slice of step -1 from the last element past the first
    e.add("Slice", [e.input(node, "x"), e.const(np.full(n, -1, np.int64)),
                    e.const(np.full(n, _onnx.INT64_MIN, np.int64)),
                    e.const(np.asarray(axes, np.int64)), e.const(np.full(n, -1, np.int64))],
          e.outputs(node))


defop("Reverse", ["x"], shape=_reverse_shape,
      vjp={"x": lambda g, *, axis: reverse(g, axis)},
      jvp={"x": lambda t, x, *, axis: reverse(t, _shift(axis, t, x))}, batch=batch_shift_axis,
      onnx=_onnx_reverse)


# --------------------------------------------------------------------------- identities


def identity_n(input, name=None) -> list:
    """A list of identities of the tensors in `input`. Example: `tf.identity_n([a, b])`."""
    return [run_kernel("Identity", {"x": to_tensor(v, None, "identity_n", "input")})
            for v in sequence_arg("identity_n", input, "input")]


def stop_gradient(input, name=None) -> Tensor:
    """The same value, but no gradient or tangent flows through it (shares the buffer).

    Example: `tf.stop_gradient(x) * x` differentiates to `x`, not `2 * x`.
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "StopGradient", "input")
    if ctx.tapes:  # tape.explain() names the user's line of a stop_gradient on a path
        hooks.note_event("stop", x.id)
    return run_kernel("StopGradient", {"x": x})


# No rules for "x": the tape and accumulators see no path through this op.
defop("StopGradient", ["x"], shape=same_shape, vjp={}, jvp={}, batch=batch_elementwise,
      onnx=_onnx.unary("Identity"))


# --------------------------------------------------------------------------- shape/size/rank


def _index_dtype(op, out_type):
    d = dtype_arg(op, out_type, "out_type")
    if d is not _dt.int32 and d is not _dt.int64:
        raise InvalidArgumentError(f"{op}: out_type must be int32 or int64, got {d.name}")
    return d


def shape(input, out_type=_dt.int32, name=None) -> Tensor:
    """The shape of `input` as a 1-D integer tensor. Example: `tf.shape(tf.zeros([2, 3]))`
    -> [2, 3]."""
    x = input if type(input) is Tensor else to_tensor(input, None, "Shape", "input")
    return run_kernel("Shape", {"x": x}, {"out_type": _index_dtype("Shape", out_type)})


def size(input, out_type=_dt.int32, name=None) -> Tensor:
    """The number of elements of `input` as a scalar integer tensor.

    Example: `tf.size(tf.zeros([2, 3]))` -> 6.
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "Size", "input")
    return run_kernel("Size", {"x": x}, {"out_type": _index_dtype("Size", out_type)})


def rank(input, name=None) -> Tensor:
    """The rank of `input` as a scalar int32 tensor. Example: `tf.rank(tf.zeros([2, 3]))`
    -> 2."""
    x = input if type(input) is Tensor else to_tensor(input, None, "Rank", "input")
    return convert_to_tensor(np.int32(len(x._shape)))


def _onnx_shape(e, node):
    s = e.add1("Shape", [e.input(node, "x")])
    e.add("Cast", [s], e.outputs(node), to=e.dtype_code(node.outputs[0].dtype))


defop("Shape", ["x"], shape=lambda s, d, a: [((len(s["x"]),), a["out_type"])],
      differentiable=False, onnx=_onnx_shape)
def _size_batch(op, inputs, attrs, batched, size):
    """The batching rule: every element has the size of the dims after the batch axis."""
    dims = inputs["x"]._shape[1:]
    if None in dims:
        raise NoBatchingRule(op, "needs the element's dims, unknown while tracing")
    element_size = to_tensor(int(np.prod(dims, dtype=np.int64)), attrs["out_type"], op, "x")
    return broadcast_batch(element_size, size)


defop("Size", ["x"], shape=lambda s, d, a: [((), a["out_type"])], differentiable=False,
      batch=_size_batch)


# --------------------------------------------------------------------------- sort


def _sort_args(op, values, axis, direction):
    x = values if type(values) is Tensor else to_tensor(values, None, op, "values")
    if not x._shape:
        raise InvalidArgumentError(f"{op}: values must have rank >= 1, got {describe(x)}")
    if x.dtype.is_complex or x.dtype.is_bool or x.dtype.is_string:
        raise InvalidArgumentError(f"{op}: values must be real numbers, got {describe(x)}")
    direction = choice_arg(op, direction, "direction", ("ASCENDING", "DESCENDING"))
    return x, normalize_axis(op, axis, len(x._shape)), direction == "DESCENDING"


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None) -> Tensor:
    """int32 indices that sort `values` along `axis` (always stable: ties keep their order).

    Example: `tf.argsort([3., 1., 2.]).numpy()` -> [1, 2, 0].
    """
    x, ax, desc = _sort_args("ArgSort", values, axis, direction)
    return run_kernel("ArgSort", {"x": x}, {"axis": ax, "descending": desc})


def sort(values, axis=-1, direction="ASCENDING", name=None) -> Tensor:
    """`values` sorted along `axis`; the gradient flows back through the permutation.

    Example: `tf.sort([3., 1., 2.], direction="DESCENDING").numpy()` -> [3., 2., 1.].
    """
    x, ax, desc = _sort_args("Sort", values, axis, direction)
    perm = run_kernel("ArgSort", {"x": x}, {"axis": ax, "descending": desc})
    return _permute_along_axis(x, perm, ax)


def _argsort_shape(shapes, dtypes, attrs):
    if not 0 <= attrs["axis"] < len(shapes["x"]):
        raise InvalidArgumentError(
            f"ArgSort: axis {attrs['axis']} out of range for shape {list(shapes['x'])}")
    return [(shapes["x"], _dt.int32)]


defop("ArgSort", ["x"], shape=_argsort_shape, differentiable=False)


def _permute_shape(shapes, dtypes, attrs):
    s, i, ax = shapes["x"], shapes["indices"], attrs["axis"]
    if len(s) != len(i) or not 0 <= ax < len(s) or not dtypes["indices"].is_integer:
        raise InvalidArgumentError(
            f"PermuteAlongAxis: indices {dtypes['indices'].name}{list(i)} must be integers of "
            f"the rank of x {list(s)} (axis {ax})")
    out = [i[k] if k == ax else (_merge_dim("PermuteAlongAxis", a, b, (s, i))
                                 if 1 not in (a, b) else (b if a == 1 else a))
           for k, (a, b) in enumerate(zip(s, i))]
    return [(tuple(out), dtypes["x"])]


def _permute_along_axis(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    """`x` taken along `axis` at `indices` (no public op: sort and its rules use it)."""
    return run_kernel("PermuteAlongAxis", {"x": x, "indices": indices}, {"axis": axis})


def _permute_jvp(t, indices, *, axis):
    nb = batch_dims(t, indices)
    if nb:  # the same permutation for every tangent of the batch (unit dims broadcast)
        indices = _reshape(indices, (1,) * nb + indices._shape)
    return _permute_along_axis(t, indices, axis + nb)


# x taken along `axis` at `indices`, which must be a permutation along that axis (as made
# by ArgSort): then the transpose is taking at the inverse permutation.
defop("PermuteAlongAxis", ["x", "indices"], shape=_permute_shape,
      vjp={"x": lambda g, indices, *, axis: _permute_along_axis(g, argsort(indices, axis),
                                                                axis)},
      jvp={"x": _permute_jvp})


# --------------------------------------------------------------------------- meshgrid/mask


def meshgrid(*args, **kwargs) -> list:
    """Coordinate grids from 1-D coordinate vectors; `indexing='xy'` (Cartesian, default)
    swaps the first two output axes relative to `'ij'` (matrix).

    Example: `[g.shape for g in tf.meshgrid([1, 2, 3], [4, 5])]` -> [[2, 3], [2, 3]].
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    choice_arg("Meshgrid", indexing, "indexing", ("xy", "ij"))
    xs = [_reshape(to_tensor(a, None, "Meshgrid", "args"), (-1,)) for a in args]
    if any(x.dtype is not xs[0].dtype for x in xs):
        raise InvalidArgumentError(f"Meshgrid: args must have one dtype, got "
                                   f"[{', '.join(describe(x) for x in xs)}]")
    n = len(xs)
    sizes = [dims_of(x)[0] for x in xs]
    swap = indexing == "xy" and n > 1
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(xs):
        pos = (1 - i) if swap and i < 2 else i
        target = [1] * n
        target[pos] = sizes[pos]
        out.append(_broadcast_to(_reshape(x, tuple(target)), tuple(sizes)))
    return out


def sequence_mask(lengths, maxlen=None, dtype=_dt.bool, name=None) -> Tensor:
    """`mask[..., j] = j < lengths[...]`, with `maxlen` columns (default: max(lengths)).

    Example: `tf.sequence_mask([1, 3], 4).numpy()` -> [[T, F, F, F], [T, T, T, F]].
    """
    ln = lengths if type(lengths) is Tensor else to_tensor(lengths, None, "SequenceMask",
                                                          "lengths")
    if not ln.dtype.is_integer:
        raise InvalidArgumentError(f"SequenceMask: lengths must be integers, got {describe(ln)}")
    dtype = dtype_arg("SequenceMask", dtype)
    if maxlen is None and is_symbolic(ln):
        maxlen = -1  # traced: the kernel takes max(lengths) when the graph runs
    elif maxlen is None:
        # The output's width depends on the data: resolve it now so shapes stay static.
        maxlen = max(int(reduce_max(ln)), 0) if ln.size else 0
    else:
        maxlen = int_arg("SequenceMask", maxlen, "maxlen", minimum=0)
    return run_kernel("SequenceMask", {"lengths": ln},
                      {"maxlen": maxlen, "dtype": dtype})


# maxlen -1: max(lengths), known when a traced graph runs
defop("SequenceMask", ["lengths"],
      shape=lambda s, d, a: [(s["lengths"] + (None if a["maxlen"] == -1 else a["maxlen"],),
                              a["dtype"])],
      differentiable=False)


# --------------------------------------------------------------------------- more array ops

__all__ += ["roll", "repeat", "unique", "searchsorted", "ensure_shape", "get_static_value"]


def _static_ints(op: str, value, arg: str) -> list:
    """A scalar or 1-D int argument (Python, NumPy or eager tensor) as a list of ints."""
    if type(value) is Tensor:
        if is_symbolic(value):
            raise InvalidArgumentError(f"{op}: {arg} must be known when tracing (a Python "
                                       f"int or list), got a traced {describe(value)}")
        value = value.numpy()
    arr = np.asarray(value)
    if arr.ndim > 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidArgumentError(f"{op}: {arg} must be an int or a 1-D list of ints, "
                                   f"got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


def roll(input, shift, axis, name=None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """Elements shifted by `shift` along `axis` (both ints or equal-length lists; shifts
    on one axis add), wrapping around: element i moves to i + shift.

    Example: `tf.roll([0, 1, 2, 3, 4], shift=2, axis=0)` -> [3, 4, 0, 1, 2].
    """
    x = to_tensor(input, None, "Roll", "input")
    shifts, axes = _static_ints("Roll", shift, "shift"), _static_ints("Roll", axis, "axis")
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"Roll: shift {shifts} and axis {axes} must have the "
                                   "same length")
    total: dict = {}
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise InvalidArgumentError(f"Roll: axis {a} is out of range for {describe(x)}")
        a %= x.ndim
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        n = x._shape[a]
        if n is None:  # known when the graph runs: gather at (i - shift) mod n
            size = shape(x)[a]
            positions = cumsum(ones(dims_of(x)[a:a + 1], _dt.int32)) - 1
            x = prims.gather_v2(x, floormod(positions - s, size), axis=a, batch_dims=0)
        elif n and s % n:
            s %= n
            lead = (slice(None),) * a
            x = concat([x[lead + (slice(n - s, None),)], x[lead + (slice(0, n - s),)]], a)
    return x if x is not input else identity(x)


def repeat(input, repeats, axis=None, name=None) -> Tensor:  # noqa: A002
    """Each element (slice along `axis`) repeated `repeats` times (an int, or one count
    per slice); with `axis=None` the input is flattened first.

    Example: `tf.repeat([1, 2], [2, 3], axis=0)` -> [1, 1, 2, 2, 2].
    """
    x = to_tensor(input, None, "Repeat", "input")
    reps = _static_ints("Repeat", repeats, "repeats")
    if any(r < 0 for r in reps):
        raise InvalidArgumentError(f"Repeat: repeats {reps} must be non-negative")
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    axis = normalize_axis("Repeat", axis, x.ndim)
    n = x._shape[axis]
    if n is not None and len(reps) == 1:
        reps = reps * n  # one count per slice: a single gather, no extra dimension
    if n is None and len(reps) == 1:  # size known at run time: tile a new axis and merge
        r = reps[0]
        dims = dims_of(x)
        tiled = tile(expand_dims(x, axis + 1), [1] * (axis + 1) + [r] + [1] * (x.ndim - axis - 1))
        return reshape(tiled, list(dims[:axis]) + [-1] + list(dims[axis + 1:]))
    if n is not None and n != len(reps):
        raise InvalidArgumentError(f"Repeat: {len(reps)} repeats for dimension {axis} of "
                                   f"size {n} (input {describe(x)})")
    index = convert_to_tensor(np.repeat(np.arange(len(reps)), reps).astype(np.int32))
    return prims.gather_v2(x, index, axis=axis, batch_dims=0)


import collections as _collections  # noqa: E402

UniqueOutput = _collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=_dt.int32, name=None) -> UniqueOutput:
    """The distinct elements of 1-D `x` in order of first appearance (`y`) and, for each
    element of `x`, its position in `y` (`idx`): `x == gather(y, idx)`.

    Example: `tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])` -> y [1, 2, 4, 7, 8],
    idx [0, 0, 1, 2, 2, 2, 3, 4, 4].
    """
    t = to_tensor(x, None, "Unique", "x")
    if t.ndim != 1:
        raise InvalidArgumentError(f"Unique: x must be 1-D, got {describe(t)}")
    out_idx = dtype_arg("Unique", out_idx)
    if out_idx not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"Unique: out_idx must be int32 or int64, got {out_idx.name}")
    y, idx = run_kernel("Unique", {"x": t}, {"out_idx": out_idx})
    return UniqueOutput(y, idx)


defop("Unique", ["x"], num_outputs=2,
      shape=lambda s, d, a: [((None,), d["x"]), (s["x"], a["out_idx"])],
      differentiable=False)


def searchsorted(sorted_sequence, values, side="left", out_type=_dt.int32,
                 name=None) -> Tensor:
    """For each of `values`, the index in the innermost dimension of `sorted_sequence`
    where it would be inserted to keep it sorted ("left": before equal entries, "right":
    after). The leading dimensions of both must match.

    Example: `tf.searchsorted([[0, 3, 9, 9, 10], [1, 2, 3, 4, 5]], [[2, 4, 9], [0, 2, 6]])`
    -> [[1, 2, 2], [0, 1, 5]].
    """
    seq = to_tensor(sorted_sequence, None, "SearchSorted", "sorted_sequence")
    v = values if type(values) is Tensor else to_tensor(values, seq.dtype, "SearchSorted",
                                                       "values")
    side = choice_arg("SearchSorted", side, "side", ("left", "right"))
    out_type = dtype_arg("SearchSorted", out_type)
    if out_type not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"SearchSorted: out_type must be int32 or int64, got "
                                   f"{out_type.name}")
    if v.dtype is not seq.dtype:
        raise InvalidArgumentError(f"SearchSorted: values {describe(v)} must have the dtype "
                                   f"of sorted_sequence {describe(seq)}")
    if seq.dtype.is_string:
        raise InvalidArgumentError(f"SearchSorted: sorted_sequence must be numeric, got "
                                   f"{describe(seq)}")
    return run_kernel("SearchSorted", {"sorted_sequence": seq, "values": v},
                      {"side": side, "out_type": out_type})


def _searchsorted_shape(shapes, dtypes, attrs):
    s, v = shapes["sorted_sequence"], shapes["values"]
    if not s or not v or len(s) != len(v) or not all(
            a is None or b is None or a == b for a, b in zip(s[:-1], v[:-1])):
        raise InvalidArgumentError(
            f"SearchSorted: sorted_sequence {list(s)} and values {list(v)} must be at least "
            "1-D with equal leading dimensions")
    return [(tuple(v), attrs["out_type"])]


defop("SearchSorted", ["sorted_sequence", "values"], shape=_searchsorted_shape,
      differentiable=False)


def ensure_shape(x, shape, name=None) -> Tensor:
    """`x` unchanged, after checking its shape is compatible with `shape` (None entries
    match any size; `shape=None` any rank). Traced, unknown dims become the given ones.

    Example: `tf.ensure_shape(tf.zeros([2, 3]), [None, 3]).shape` -> [2, 3].
    """
    t = to_tensor(x, None, "EnsureShape", "x")
    want = TensorShape(shape)
    if shape is None or want.rank is None:
        return identity(t)
    dims = list(want.as_list())
    have = t._shape
    if len(have) != len(dims) or any(
            w is not None and h is not None and w != h for h, w in zip(have, dims)):
        raise InvalidArgumentError(
            f"EnsureShape: shape of tensor {list(have)} is not compatible with expected "
            f"shape {dims} ({describe(t)})")
    if all(h is not None or w is None for h, w in zip(have, dims)):
        return identity(t)
    # Unknown dims the caller pins down: a reshape to them (it fails at run time on a
    # size mismatch), keeping unknown the dims both leave open.
    own = dims_of(t)
    return reshape(t, [w if w is not None else d for d, w in zip(own, dims)])


def get_static_value(tensor, partial=False):
    """The NumPy value of `tensor` when it is known without running a graph (eager
    tensors, Python and NumPy values), else None.

    Example: `tf.get_static_value(tf.constant([1, 2]))` -> array([1, 2], dtype=int32).
    """
    if isinstance(tensor, Variable):
        return None  # its value may change (TF gives None too)
    if type(tensor) is Tensor:
        return None if is_symbolic(tensor) else tensor.numpy()
    try:
        return np.asarray(tensor)
    except Exception:  # noqa: BLE001 - not a value (TF raises TypeError)
        raise TypeError(f"get_static_value: {tensor!r} is not a tensor or value") from None
