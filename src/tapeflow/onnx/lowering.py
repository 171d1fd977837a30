"""ONNX lowerings of tapeflow's ops (the rules `export` applies, one per op name).

They are registered here with `register_onnx` while the op families' files are being
edited by others; each belongs next to its op's definition (`defop(..., onnx=rule)`), as
its other rules are, and moves there op by op.
"""
from __future__ import annotations

import numpy as np

from .._core.registry import register_onnx
from . import proto

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def _unary(onnx_op: str, **attrs):
    def rule(e, node):
        (key,) = node.inputs
        e.add(onnx_op, [e.input(node, key)], e.outputs(node), **attrs)
    return rule


def _binary(onnx_op: str):
    def rule(e, node):
        e.add(onnx_op, [e.input(node, "x"), e.input(node, "y")], e.outputs(node))
    return rule


_UNARY = {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Neg": "Neg",
          "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Abs": "Abs", "Erf": "Erf",
          "Floor": "Floor", "Ceil": "Ceil", "Sin": "Sin", "Cos": "Cos",
          "Identity": "Identity", "Reciprocal": "Reciprocal", "Sign": "Sign",
          "Softplus": "Softplus", "Elu": "Elu", "Round": "Round",
          "LogicalNot": "Not", "StopGradient": "Identity"}

_BINARY = {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul",
           "RealDiv": "Div", "Maximum": "Max", "Minimum": "Min", "Pow": "Pow",
           "Equal": "Equal", "Less": "Less", "Greater": "Greater",
           "LessEqual": "LessOrEqual", "GreaterEqual": "GreaterOrEqual",
           "LogicalAnd": "And", "LogicalOr": "Or"}


def _square(e, node):
    x = e.input(node, "x")
    e.add("Mul", [x, x], e.outputs(node))


def _rsqrt(e, node):
    e.add("Reciprocal", [e.add1("Sqrt", [e.input(node, "x")])], e.outputs(node))


def _erfc(e, node):
    x = e.input(node, "x")
    one = e.const(np.ones((), node.outputs[0].dtype.name))
    e.add("Sub", [one, e.add1("Erf", [x])], e.outputs(node))


def _squared_difference(e, node):
    d = e.add1("Sub", [e.input(node, "x"), e.input(node, "y")])
    e.add("Mul", [d, d], e.outputs(node))


def _relu6(e, node):
    dt = node.outputs[0].dtype.name
    e.add("Clip", [e.input(node, "x"), e.const(np.zeros((), dt)), e.const(np.full((), 6, dt))],
          e.outputs(node))


def _leaky_relu(e, node):
    e.add("LeakyRelu", [e.input(node, "x")], e.outputs(node),
          alpha=float(node.attrs.get("alpha", 0.2)))


def _bias_add(e, node):
    value, bias = e.input(node, "value"), e.input(node, "bias")
    rank = len(node.inputs["value"]._shape)
    if node.attrs.get("data_format", "NHWC").startswith("NC") and rank > 2:
        bias = e.unsqueeze(bias, list(range(1, rank - 1)))  # (C,) -> (C, 1, 1)
    e.add("Add", [value, bias], e.outputs(node))


def _swap_last(e, x: str, rank: int) -> str:
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return e.add1("Transpose", [x], perm=perm)


def _matmul(e, node):
    a, b = e.input(node, "a"), e.input(node, "b")
    ta = node.attrs.get("adjoint_a", False) or node.attrs.get("transpose_a", False)
    tb = node.attrs.get("adjoint_b", False) or node.attrs.get("transpose_b", False)
    if ta:
        a = _swap_last(e, a, len(node.inputs["a"]._shape))
    if tb:
        b = _swap_last(e, b, len(node.inputs["b"]._shape))
    e.add("MatMul", [a, b], e.outputs(node))


def _softmax(onnx_op):
    def rule(e, node):
        (key,) = node.inputs
        e.add(onnx_op, [e.input(node, key)], e.outputs(node),
              axis=int(node.attrs.get("axis", -1)))
    return rule


def _einsum(e, node):
    e.add("Einsum", e.input(node, "inputs"), e.outputs(node),
          equation=str(node.attrs["equation"]).replace(" ", ""))


def _reshape(e, node):
    shape = tuple(node.attrs["shape"])
    attrs = {"allowzero": 1} if 0 in shape and e.opset >= 14 else {}
    e.add("Reshape", [e.input(node, "x"), e.ints(shape)], e.outputs(node), **attrs)


def _cast(e, node):
    e.add("Cast", [e.input(node, "x")], e.outputs(node),
          to=proto.elem_type(node.outputs[0].dtype.name))


def _reduction(onnx_op):
    def rule(e, node):
        axes = tuple(node.attrs["axis"])
        x = e.input(node, "x")
        if not axes:  # nothing reduced
            e.add("Identity", [x], e.outputs(node))
            return
        e.reduce(onnx_op, x, axes, bool(node.attrs.get("keepdims", False)), e.outputs(node))
    return rule


def _concat(e, node):
    e.add("Concat", e.input(node, "values"), e.outputs(node), axis=int(node.attrs["axis"]))


def _transpose(e, node):
    e.add("Transpose", [e.input(node, "x")], e.outputs(node),
          perm=[int(p) for p in node.attrs["perm"]])


def _expand_dims(e, node):
    e.unsqueeze(e.input(node, "x"), list(node.attrs["axis"]), e.outputs(node))


def _squeeze(e, node):
    axes = node.attrs.get("axis")
    if axes is None or len(axes) == 0:  # every size-1 axis, known when traced
        axes = [i for i, d in enumerate(node.inputs["x"]._shape) if d == 1]
    e.squeeze(e.input(node, "x"), list(axes), e.outputs(node))


def _gather(e, node):
    batch_dims = int(node.attrs.get("batch_dims", 0))
    axis = int(node.attrs.get("axis", 0))
    params, indices = e.input(node, "params"), e.input(node, "indices")
    if not batch_dims:
        e.add("Gather", [params, indices], e.outputs(node), axis=axis)
        return
    _gather_batched(e, node, params, indices, axis, batch_dims)


def _gather_batched(e, node, params, indices, axis, b):
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
    indices = e.add1("Cast", [indices], to=proto.INT64)  # GatherND takes int64 only
    found = e.add1("GatherND", [params, e.unsqueeze(indices, [-1])], batch_dims=b)
    if axis == b:
        e.add("Identity", [found], e.outputs(node))
        return
    # found: [batch, gathered (n_idx), params[b:axis], params[axis+1:]]
    middle = list(range(b + n_idx, b + n_idx + axis - b))
    perm = (list(range(b)) + middle + list(range(b, b + n_idx))
            + list(range(b + n_idx + axis - b, rank - 1 + n_idx)))
    e.add("Transpose", [found], e.outputs(node), perm=perm)


def _scalar_int(e, d) -> str:
    """An int64 scalar of a size (an int, or a `Dim` known when the graph runs)."""
    if type(d) is int:
        return e.const(np.asarray(d, np.int64))
    return e.squeeze(e.ints([d]), [0])


def _ravel_multi_index(e, node):
    """getitem's index arrays combined into one row-major flat position, negative entries
    counted from the end (an out-of-range one is left for onnxruntime's Gather to reject,
    as the kernel rejects it). One index array is the position itself: ONNX's Gather
    counts negative indices from the end (its size may be unknown when traced)."""
    indices, dims = e.input(node, "indices"), node.attrs["dims"]
    if len(indices) == 1:
        e.add("Cast", indices, e.outputs(node), to=proto.INT64)
        return
    if any(d is None for d in dims):
        _unsupported(e, node, f"index arrays over dims {list(dims)} not known when traced")
    flat, zero = None, e.const(np.asarray(0, np.int64))
    for idx, d in zip(indices, dims):
        idx = e.add1("Cast", [idx], to=proto.INT64)
        size = _scalar_int(e, d)
        idx = e.add1("Where", [e.add1("Less", [idx, zero]), e.add1("Add", [idx, size]), idx])
        flat = idx if flat is None else e.add1("Add", [e.add1("Mul", [flat, size]), idx])
    e.add("Identity", [flat], e.outputs(node))


def _where_true(e, node):
    """tf.where(condition) with one argument: the [n, rank] positions of the true
    elements, row-major, as ONNX's NonZero gives them transposed."""
    positions = e.add1("NonZero", [e.input(node, "condition")])
    e.add("Transpose", [positions], e.outputs(node), perm=[1, 0])


def _strided_slice(e, node):
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
            ends.append(_INT64_MAX if b == -1 else b + 1)
            steps.append(1)
            axes.append(dim)
            squeeze.append(dim)
        elif not (b is None and en is None and s == 1):  # else: the whole axis
            starts.append((0 if s > 0 else _INT64_MAX) if b is None else int(b))
            ends.append((_INT64_MAX if s > 0 else _INT64_MIN) if en is None else int(en))
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


def _stack(e, node):
    axis = int(node.attrs.get("axis", 0))
    parts = [e.unsqueeze(v, [axis]) for v in e.input(node, "values")]
    e.add("Concat", parts, e.outputs(node), axis=axis)


def _reverse(e, node):
    axes = [int(a) for a in node.attrs["axis"]]
    if not axes:
        e.add("Identity", [e.input(node, "x")], e.outputs(node))
        return
    n = len(axes)  # a slice of step -1 from the last element past the first
    e.add("Slice", [e.input(node, "x"), e.const(np.full(n, -1, np.int64)),
                    e.const(np.full(n, _INT64_MIN, np.int64)),
                    e.const(np.asarray(axes, np.int64)), e.const(np.full(n, -1, np.int64))],
          e.outputs(node))


def _range(e, node):
    e.add("Range", [e.input(node, k) for k in ("start", "limit", "delta")], e.outputs(node))


def _filled_like(value):
    def rule(e, node):
        dt = node.outputs[0].dtype.name
        shape = e.add1("Shape", [e.input(node, "x")])
        e.add("ConstantOfShape", [shape], e.outputs(node), value=np.full((1,), value, dt))
    return rule


def _filled(value):
    """Zeros / Ones of a shape attribute (ints, or Dims known when the graph runs)."""
    def rule(e, node):
        dt = node.outputs[0].dtype.name
        e.add("ConstantOfShape", [e.ints(node.attrs["shape"])], e.outputs(node),
              value=np.full((1,), value, dt))
    return rule


def _fill(e, node):
    e.add("Expand", [e.input(node, "value"), e.ints(node.attrs["shape"])], e.outputs(node))


def _broadcast_to(e, node):
    e.add("Expand", [e.input(node, "x"), e.ints(node.attrs["shape"])], e.outputs(node))


def _select(e, node):
    e.add("Where", [e.input(node, "condition"), e.input(node, "x"), e.input(node, "y")],
          e.outputs(node))


def _one_hot(e, node):
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


def _arg(onnx_op):
    def rule(e, node):
        found = e.add1(onnx_op, [e.input(node, "x")], axis=int(node.attrs["axis"]),
                       keepdims=0)
        e.add("Cast", [found], e.outputs(node),
              to=proto.elem_type(node.outputs[0].dtype.name))
    return rule


def _split(e, node):
    sizes = [int(v) for v in node.attrs["sizes"]]
    e.add("Split", [e.input(node, "x"), e.const(np.asarray(sizes, np.int64))],
          e.outputs(node), axis=int(node.attrs["axis"]))


def _unstack(e, node):
    axis, outs = int(node.attrs["axis"]), e.outputs(node)
    pieces = e.add("Split", [e.input(node, "x"), e.const(np.ones(len(outs), np.int64))],
                   [e.fresh("piece") for _ in outs], axis=axis)
    for piece, out in zip(pieces, outs):
        e.squeeze(piece, [axis], [out])


def _cumsum(e, node):
    a = node.attrs
    e.add("CumSum", [e.input(node, "x"), e.const(np.asarray(int(a["axis"]), np.int64))],
          e.outputs(node), exclusive=int(bool(a.get("exclusive"))),
          reverse=int(bool(a.get("reverse"))))


def _floor_mod(e, node):
    x, y = e.input(node, "x"), e.input(node, "y")
    if node.outputs[0].dtype.is_integer:  # ONNX's integer Mod takes the divisor's sign
        e.add("Mod", [x, y], e.outputs(node), fmod=0)
        return
    floor = e.add1("Floor", [e.add1("Div", [x, y])])
    e.add("Sub", [x, e.add1("Mul", [floor, y])], e.outputs(node))


def _floor_div(e, node):
    x, y = e.input(node, "x"), e.input(node, "y")
    if node.outputs[0].dtype.is_integer:  # ONNX's integer Div truncates toward zero
        exact = e.add1("Sub", [x, e.add1("Mod", [x, y], fmod=0)])
        e.add("Div", [exact, y], e.outputs(node))
        return
    e.add("Floor", [e.add1("Div", [x, y])], e.outputs(node))


def _top_k(e, node):
    values, indices = e.outputs(node)
    found = e.fresh("top_k_indices")
    e.add("TopK", [e.input(node, "x"), e.const(np.asarray([int(node.attrs["k"])], np.int64))],
          [values, found], axis=-1, largest=1, sorted=1)
    e.add("Cast", [found], [indices], to=proto.elem_type(node.outputs[1].dtype.name))


def _band_part(e, node):
    """matrix_band_part with static matrix sizes: a constant band mask."""
    rows, cols = node.inputs["input"]._shape[-2:]
    if rows is None or cols is None:
        _unsupported(e, node, "unknown matrix sizes")
    lower, upper = int(node.attrs["num_lower"]), int(node.attrs["num_upper"])
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    dt = node.outputs[0].dtype.name
    e.add("Where", [e.const(keep), e.input(node, "input"), e.const(np.zeros((), dt))],
          e.outputs(node))


def _tile(e, node):
    e.add("Tile", [e.input(node, "x"), e.ints(node.attrs["multiples"])], e.outputs(node))


def _pad(e, node):
    mode = node.attrs.get("mode", "CONSTANT").lower()
    pads = np.asarray(node.attrs["paddings"], np.int64)
    if mode == "symmetric":  # ONNX's reflect excludes the edge, as TF's REFLECT does
        _pad_symmetric(e, node, pads)
        return
    value = e.const(np.asarray(node.attrs.get("constant_values", 0),
                               node.outputs[0].dtype.name))
    e.add("Pad", [e.input(node, "x"), e.const(pads.T.reshape(-1)), value], e.outputs(node),
          mode=mode)


def _pad_symmetric(e, node, pads):
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
                                          e.const(np.asarray([_INT64_MIN], np.int64)), ax,
                                          minus_one]))
        parts.append(x)
        if after:  # x[:-after-1:-1]
            parts.append(e.add1("Slice", [x, minus_one,
                                          e.const(np.asarray([-after - 1], np.int64)), ax,
                                          minus_one]))
        outs = e.outputs(node) if k == len(padded) - 1 else None
        x = e.add("Concat", parts, outs, axis=axis)[0]


def _unsupported(e, node, what):
    raise NotImplementedError(f"onnx.export({e.fn_name}): {node.op} with {what} (node "
                              f"{node.name}) has no ONNX lowering yet")


def _shape(e, node):
    s = e.add1("Shape", [e.input(node, "x")])
    e.add("Cast", [s], e.outputs(node), to=proto.elem_type(node.outputs[0].dtype.name))


def _const(e, node):
    value = np.asarray(node.attrs["value"])
    e.alias(node.outputs[0], e.initializer(node.name, value.astype(
        node.outputs[0].dtype.name, copy=False)))


def _read_variable(e, node):
    e.alias(node.outputs[0], e.name_of(node.inputs["resource"]))


# ---------------------------------------------------------------- control flow


def _scalar_bool(e, name: str, shape) -> str:
    return e.squeeze(name, [0]) if tuple(shape) == (1,) else name


def _while(e, node):
    """tf.while_loop as an ONNX Loop: the condition is evaluated once before the loop and
    again at the end of each body (ONNX's body returns the next condition); the iteration
    count TensorFlow's While also returns is one more loop-carried value."""
    cond, body = node.attrs["cond"], node.attrs["body"]
    init, args = e.input(node, "loop_vars"), e.input(node, "args")
    limit = e.input(node, "maximum_iterations")
    trip = e.add1("Cast", [limit[0]], to=proto.INT64) if limit else ""
    if cond is not None:
        c0 = e.inline(cond, init + args)[0]
        c0 = _scalar_bool(e, c0, cond.outputs[0]._shape)
    else:
        c0 = e.const(np.asarray(True))
    specs = [(t.dtype.name, None) for t in node.outputs[:-1]] + [("int32", ())]

    def build():
        it, c_in = e.fresh("iteration"), e.fresh("cond_in")
        carried = [e.fresh("loop_var") for _ in specs]
        outs = e.inline(body, carried[:-1] + args)
        count = e.add1("Add", [carried[-1], e.const(np.asarray(1, np.int32))])
        if cond is not None:
            c_out = e.inline(cond, outs + args)[0]
            c_out = _scalar_bool(e, c_out, cond.outputs[0]._shape)
        else:
            c_out = c_in
        results = [e.fresh("cond_out")] + [e.fresh("loop_var_next") for _ in specs]
        for src, dst in zip([c_out] + outs + [count], results):
            e.add("Identity", [src], [dst])  # body outputs: distinct names of their own
        ins = [proto.value_info(it, "int64", ()), proto.value_info(c_in, "bool", ())]
        ins += [proto.value_info(n, d, s) for n, (d, s) in zip(carried, specs)]
        outs_info = [proto.value_info(results[0], "bool", ())]
        outs_info += [proto.value_info(n, d, s) for n, (d, s) in zip(results[1:], specs)]
        return ins, outs_info

    graph = proto.GraphAttr(e.subgraph("while_body", build))
    e.add("Loop", [trip, c0] + init + [e.const(np.asarray(0, np.int32))], e.outputs(node),
          body=graph)


def _if(e, node):
    """tf.cond as an ONNX If whose branches read the outer values by name. Only the
    first `n_out` outputs are the cond's results (the rest are what its gradient saves,
    which an exported forward function does not use)."""
    n_out = int(node.attrs["n_out"])
    args = e.input(node, "args")
    pred = _scalar_bool(e, e.input(node, "pred"), node.inputs["pred"]._shape)
    outs = e.outputs(node)[:n_out]
    types = [t.dtype.name for t in node.outputs[:n_out]]

    def branch(cf, label):
        def build():
            results = e.inline(cf, args)[:n_out]
            names = [e.fresh(f"{label}_out") for _ in results]
            for src, dst in zip(results, names):
                e.add("Identity", [src], [dst])
            return [], [proto.value_info(n, d, None) for n, d in zip(names, types)]
        return proto.GraphAttr(e.subgraph(label, build))

    e.add("If", [pred], outs, then_branch=branch(node.attrs["then_branch"], "then"),
          else_branch=branch(node.attrs["else_branch"], "else"))
    for t in node.outputs[n_out:]:  # no ONNX value: a use raises "used before computed"
        del e.names[t.id]


# ---------------------------------------------------------------- convolution and pooling

_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _spatial(node, key):
    """The 2 spatial entries of a 4-entry NHWC/NCHW attribute (or a 2-entry one)."""
    v = [int(d) for d in node.attrs[key]]
    if len(v) == 4:
        return v[2:] if node.attrs.get("data_format", "NHWC") == "NCHW" else v[1:3]
    return v


def _auto_pad(e, node):
    padding = node.attrs.get("padding", "VALID")
    if padding == "SAME":
        return "SAME_UPPER"  # TensorFlow puts the odd padding element at the end
    if padding == "VALID":
        return "VALID"
    return _unsupported(e, node, f"padding {padding!r}")


def _nchw_wrap(e, node, x: str, build) -> None:
    """Run `build(x_nchw) -> y_nchw`, transposing around it for NHWC data."""
    outs = e.outputs(node)
    if node.attrs.get("data_format", "NHWC") == "NCHW":
        build(x, outs)
        return
    y = build(e.add1("Transpose", [x], perm=_TO_NCHW), None)
    e.add("Transpose", [y], outs, perm=_TO_NHWC)


def _conv2d(e, node):
    w = e.add1("Transpose", [e.input(node, "filters")], perm=[3, 2, 0, 1])  # HWIO -> OIHW
    kernel = [int(d) for d in node.inputs["filters"]._shape[:2]]
    attrs = dict(strides=_spatial(node, "strides"), dilations=_spatial(node, "dilations"),
                 auto_pad=_auto_pad(e, node), kernel_shape=kernel,
                 group=int(node.attrs.get("groups", 1)))
    _nchw_wrap(e, node, e.input(node, "x"),
               lambda x, outs: e.add("Conv", [x, w], outs, **attrs)[0])


def _conv2d_backprop_input(e, node):
    """conv2d_transpose: ONNX ConvTranspose, cropping the full output as TensorFlow's
    padding did in the forward convolution (SAME: the odd element at the end)."""
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"
    dy_shape = node.inputs["dy"]._shape
    spatial_in = dy_shape[2:] if nchw else dy_shape[1:3]
    if None in spatial_in:
        _unsupported(e, node, "unknown spatial input size")
    strides, dilations = _spatial(node, "strides"), _spatial(node, "dilations")
    kernel = [int(d) for d in node.inputs["filters"]._shape[:2]]
    pads_begin, pads_end, extra = [], [], []
    for n_in, out, k, s, d in zip(spatial_in, node.attrs["input_hw"], kernel, strides,
                                  dilations):
        full = s * (n_in - 1) + (k - 1) * d + 1
        diff = full - int(out)
        begin = max(diff, 0) // 2 if _auto_pad(e, node) == "SAME_UPPER" else 0
        end = diff - begin
        pads_begin.append(begin)
        pads_end.append(max(end, 0))
        extra.append(max(-end, 0))
    # filters (h, w, out, in) -> ConvTranspose's (in, out / groups, h, w)
    w = e.add1("Transpose", [e.input(node, "filters")], perm=[3, 2, 0, 1])
    attrs = dict(strides=strides, dilations=dilations, kernel_shape=kernel,
                 pads=pads_begin + pads_end, group=int(node.attrs.get("groups", 1)))
    if any(extra):
        attrs["output_padding"] = extra
    _nchw_wrap(e, node, e.input(node, "dy"),
               lambda x, outs: e.add("ConvTranspose", [x, w], outs, **attrs)[0])


def _pool(onnx_op):
    def rule(e, node):
        attrs = dict(kernel_shape=_spatial(node, "ksize"), strides=_spatial(node, "strides"),
                     auto_pad=_auto_pad(e, node))
        _nchw_wrap(e, node, e.input(node, "x"),
                   lambda x, outs: e.add(onnx_op, [x], outs, **attrs)[0])
    return rule


_TABLE = {
    "Square": _square, "Rsqrt": _rsqrt, "Erfc": _erfc, "SquaredDifference": _squared_difference,
    "Relu6": _relu6, "LeakyRelu": _leaky_relu, "BiasAdd": _bias_add, "MatMul": _matmul,
    "BatchMatMul": _matmul, "BatchMatMulV2": _matmul, "Softmax": _softmax("Softmax"),
    "LogSoftmax": _softmax("LogSoftmax"), "Reshape": _reshape, "Cast": _cast,
    "Mean": _reduction("ReduceMean"), "Sum": _reduction("ReduceSum"),
    "Max": _reduction("ReduceMax"), "Min": _reduction("ReduceMin"),
    "Prod": _reduction("ReduceProd"), "Concat": _concat, "ConcatV2": _concat,
    "Transpose": _transpose, "ExpandDims": _expand_dims, "Squeeze": _squeeze,
    "GatherV2": _gather, "StridedSlice": _strided_slice, "Tile": _tile, "Pad": _pad,
    "Shape": _shape, "Const": _const, "ReadVariableOp": _read_variable, "Conv2D": _conv2d,
    "Conv2DBackpropInput": _conv2d_backprop_input, "Stack": _stack, "Pack": _stack,
    "Reverse": _reverse, "ReverseV2": _reverse, "While": _while, "If": _if,
    "Range": _range, "RangeV2": _range, "ZerosLike": _filled_like(0),
    "OnesLike": _filled_like(1), "Zeros": _filled(0), "Ones": _filled(1), "Fill": _fill,
    "BroadcastTo": _broadcast_to, "Select": _select, "SelectV2": _select,
    "OneHot": _one_hot, "ArgMax": _arg("ArgMax"), "ArgMin": _arg("ArgMin"),
    "Split": _split, "SplitV": _split, "Unstack": _unstack, "Unpack": _unstack,
    "Cumsum": _cumsum, "FloorMod": _floor_mod, "FloorDiv": _floor_div, "TopK": _top_k,
    "TopKV2": _top_k, "MatrixBandPart": _band_part, "Einsum": _einsum,
    "RavelMultiIndex": _ravel_multi_index, "Where": _where_true,
    "MaxPool": _pool("MaxPool"), "AvgPool": _pool("AveragePool"),
}
_TABLE.update({k: _unary(v) for k, v in _UNARY.items()})
_TABLE.update({k: _binary(v) for k, v in _BINARY.items()})
for _name, _rule in _TABLE.items():
    register_onnx(_name, _rule)
# the ops this table lowers (the rest of `registry.ONNX` comes from op definitions)
LOWERED: tuple = tuple(sorted(_TABLE))
