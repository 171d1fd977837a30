"""A traced graph (the ConcreteFunction's graph, before fusion passes) as a TensorFlow
FunctionDef: each tapeflow node lowered to TensorFlow's primitive op, inputs in the op's
order, results named "node:output_arg:index" as FunctionDefs name them, variables read
with ReadVariableOp on resource arguments (TensorFlow's captured handles).

Example:
    >>> lowered = lower(cf, "__inference_f_1")   # .fdef: the FunctionDef's bytes
"""
from __future__ import annotations

import re

import numpy as np

from .._core.dtypes import as_dtype
from .._core.shape import Dim
from .._core.tensor import Tensor
from .._core.variable import Variable
from . import proto as P


def _t(node) -> dict:
    first = next(iter(node.outputs), None)
    return {"T": first.dtype} if first is not None else {}


def _matmul(node) -> dict:
    a = node.attrs
    return {**_t(node), "transpose_a": bool(a.get("adjoint_a", False)),
            "transpose_b": bool(a.get("adjoint_b", False))}


def _softmax(node) -> dict:
    axis, rank = node.attrs.get("axis", -1), len(node.outputs[0].shape)
    if axis not in (-1, rank - 1):
        raise ValueError(f"saved_model: {node.name} (Softmax over axis {axis} of a rank-"
                         f"{rank} tensor) has no TensorFlow lowering yet: only the last axis")
    return _t(node)


def _bias_add(node) -> dict:
    return {**_t(node), "data_format": node.attrs.get("data_format", "NHWC")}


def _read(node) -> dict:
    return {"dtype": node.outputs[0].dtype}


def _identity(node) -> dict:
    return _t(node)


def _concat(node) -> dict:
    return {**_t(node), "N": len(node.inputs["values"]), "Tidx": as_dtype("int32")}


def _reshape(node) -> dict:
    return {**_t(node), "Tshape": as_dtype("int32")}


def _shape_value(shape):
    """A shape attribute as a tensor input: a constant, or (with `Dim`s, sizes known at
    run time) the tuple itself, built from Shape ops by `lower`."""
    if any(type(d) is Dim for d in shape):
        return tuple(shape)
    return np.asarray(shape, np.int32)


def _fill(node) -> dict:
    return {**_t(node), "index_type": as_dtype("int32")}


def _strided_slice(node) -> dict:
    a = node.attrs
    begin_mask = sum(1 << i for i, b in enumerate(a["begin"]) if b is None)
    end_mask = sum(1 << i for i, e in enumerate(a["end"]) if e is None)
    return {**_t(node), "Index": as_dtype("int32"), "begin_mask": begin_mask,
            "end_mask": end_mask, "ellipsis_mask": 0,
            "new_axis_mask": int(a.get("new_axis_mask", 0)),
            "shrink_axis_mask": int(a.get("shrink_axis_mask", 0))}


def _slice_inputs(node) -> list:
    a = node.attrs
    return [np.asarray([0 if v is None else int(v) for v in a[k]], np.int32)
            for k in ("begin", "end", "strides")]


def _shape(node) -> dict:
    return {"T": node.inputs["x"].dtype, "out_type": node.attrs.get("out_type",
                                                                   as_dtype("int32"))}


def _range(node) -> dict:
    return {"Tidx": node.outputs[0].dtype}


def _spatial(values, node, what: str) -> list:
    """A window or stride per spatial dim as TensorFlow's 4-entry list (1 for batch and
    channels, placed by data_format)."""
    values = [int(v) for v in (values if isinstance(values, (tuple, list)) else (values,) * 2)]
    if len(values) != 2:
        raise ValueError(f"saved_model: {node.name} ({node.op}) has {what} {values}: only "
                         "2-D windows have a TensorFlow lowering yet")
    return [1, 1, *values] if node.attrs.get("data_format", "NHWC") == "NCHW" \
        else [1, *values, 1]


def _padding(node) -> str:
    pad = node.attrs.get("padding", "VALID")
    if pad not in ("SAME", "VALID"):
        raise ValueError(f"saved_model: {node.name} ({node.op}) with padding {pad!r} has "
                         "no TensorFlow lowering yet (SAME and VALID have)")
    return pad


def _conv2d(node) -> dict:
    a = node.attrs
    return {**_t(node), "strides": _spatial(a.get("strides", 1), node, "strides"),
            "dilations": _spatial(a.get("dilations", 1), node, "dilations"),
            "padding": _padding(node), "data_format": a.get("data_format", "NHWC")}


def _pool(node) -> dict:
    a = node.attrs
    return {**_t(node), "ksize": _spatial(a["ksize"], node, "ksize"),
            "strides": _spatial(a["strides"], node, "strides"), "padding": _padding(node),
            "data_format": a.get("data_format", "NHWC")}


def _axes(node) -> np.ndarray:
    axis = node.attrs.get("axis")
    rank = len(next(iter(node.tensors())).shape)
    axes = range(rank) if axis is None else (axis if isinstance(axis, (tuple, list))
                                             else (axis,))
    return np.asarray([int(a) for a in axes], np.int32)


def _reduce(node) -> dict:
    return {**_t(node), "keep_dims": bool(node.attrs.get("keepdims", False)),
            "Tidx": as_dtype("int32")}


def _cast(node) -> dict:
    return {"SrcT": node.attrs["source_dtype"], "DstT": node.attrs["dtype"],
            "Truncate": False}


def _transpose(node) -> dict:
    return {**_t(node), "Tperm": as_dtype("int32")}


def _expand_dims(node) -> dict:
    if len(node.attrs["axis"]) != 1:
        raise ValueError(f"saved_model: {node.name} (ExpandDims over several axes) has no "
                         "TensorFlow lowering yet")
    return {**_t(node), "Tdim": as_dtype("int32")}


def _squeeze(node) -> dict:
    axis = node.attrs.get("axis")
    return {**_t(node), "squeeze_dims": [] if axis is None else [int(a) for a in axis]}


def _leaky_relu(node) -> dict:
    return {**_t(node), "alpha": float(node.attrs.get("alpha", 0.2))}


# attributes TensorFlow takes as tensor inputs: tapeflow op -> the values, after the inputs
ATTR_INPUTS = {
    "Concat": lambda node: [np.int32(node.attrs["axis"])],
    "ConcatV2": lambda node: [np.int32(node.attrs["axis"])],
    "Reshape": lambda node: [_shape_value(node.attrs["shape"])],
    "Zeros": lambda node: [_shape_value(node.attrs["shape"]),
                           np.zeros((), node.attrs["dtype"].as_numpy_dtype)],
    "Ones": lambda node: [_shape_value(node.attrs["shape"]),
                          np.ones((), node.attrs["dtype"].as_numpy_dtype)],
    "StridedSlice": _slice_inputs,
    "Transpose": lambda node: [np.asarray(node.attrs["perm"], np.int32)],
    "ExpandDims": lambda node: [np.int32(node.attrs["axis"][0])],
    "GatherV2": lambda node: [np.int32(node.attrs.get("axis", 0))],
    **{op: lambda node: [_axes(node)] for op in ("Sum", "Mean", "Max", "Min", "Prod")},
}


def _gather(node) -> dict:
    return {"Tparams": node.inputs["params"].dtype, "Tindices": node.inputs["indices"].dtype,
            "Taxis": as_dtype("int32"), "batch_dims": int(node.attrs.get("batch_dims", 0))}


def _einsum(node) -> dict:
    return {**_t(node), "equation": node.attrs["equation"], "N": len(node.inputs["inputs"])}


def _assign(node) -> dict:
    return {"dtype": node.inputs["value"].dtype}


WRITES = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}

# tapeflow op -> (TensorFlow op, output arg name, attrs of the node)
LOWERING = {
    "MatMul": ("MatMul", "product", _matmul),
    "BiasAdd": ("BiasAdd", "output", _bias_add),
    "Add": ("AddV2", "z", _t),
    "AddV2": ("AddV2", "z", _t),
    "Sub": ("Sub", "z", _t),
    "Mul": ("Mul", "z", _t),
    "RealDiv": ("RealDiv", "z", _t),
    "Maximum": ("Maximum", "z", _t),
    "Minimum": ("Minimum", "z", _t),
    "Relu": ("Relu", "activations", _t),
    "Relu6": ("Relu6", "activations", _t),
    "Elu": ("Elu", "activations", _t),
    "Selu": ("Selu", "activations", _t),
    "Softplus": ("Softplus", "activations", _t),
    "Tanh": ("Tanh", "y", _t),
    "Sigmoid": ("Sigmoid", "y", _t),
    "Exp": ("Exp", "y", _t),
    "Neg": ("Neg", "y", _t),
    "Square": ("Square", "y", _t),
    "Sqrt": ("Sqrt", "y", _t),
    "Softmax": ("Softmax", "softmax", _softmax),
    "LogSoftmax": ("LogSoftmax", "logsoftmax", _softmax),
    "Identity": ("Identity", "output", _identity),
    "Concat": ("ConcatV2", "output", _concat),
    "ConcatV2": ("ConcatV2", "output", _concat),
    "Reshape": ("Reshape", "output", _reshape),
    "Conv2D": ("Conv2D", "output", _conv2d),
    "Shape": ("Shape", "output", _shape),
    "StridedSlice": ("StridedSlice", "output", _strided_slice),
    "Zeros": ("Fill", "output", _fill),
    "Ones": ("Fill", "output", _fill),
    "ZerosLike": ("ZerosLike", "y", _t),
    "OnesLike": ("OnesLike", "y", _t),
    "RangeV2": ("Range", "output", _range),
    "GatherV2": ("GatherV2", "output", _gather),
    "Einsum": ("Einsum", "output", _einsum),
    "MaxPool": ("MaxPool", "output", _pool),
    "AvgPool": ("AvgPool", "output", _pool),
    "Sum": ("Sum", "output", _reduce),
    "Mean": ("Mean", "output", _reduce),
    "Max": ("Max", "output", _reduce),
    "Min": ("Min", "output", _reduce),
    "Prod": ("Prod", "output", _reduce),
    "Cast": ("Cast", "y", _cast),
    "Transpose": ("Transpose", "y", _transpose),
    "ExpandDims": ("ExpandDims", "output", _expand_dims),
    "Squeeze": ("Squeeze", "output", _squeeze),
    "LeakyRelu": ("LeakyRelu", "activations", _leaky_relu),
    "SquaredDifference": ("SquaredDifference", "z", _t),
    "Pow": ("Pow", "z", _t),
    "Rsqrt": ("Rsqrt", "y", _t),
    "Reciprocal": ("Reciprocal", "y", _t),
    "Log": ("Log", "y", _t),
    "Abs": ("Abs", "y", _t),
    "Erf": ("Erf", "y", _t),
    "Erfc": ("Erfc", "y", _t),
    "ReadVariableOp": ("ReadVariableOp", "value", _read),
    **{op: (op, "", _assign) for op in sorted(WRITES)},
}


def arg_name(text: str, taken: set) -> str:
    """A FunctionDef argument name (TensorFlow wants [a-z][a-z0-9_]*), unique in `taken`."""
    base = re.sub(r"[^a-z0-9_]", "_", text.lower()) or "arg"
    if not base[0].isalpha():
        base = "arg_" + base
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


class Lowered:
    """A FunctionDef's bytes and what its callers need: `inputs` [(name, dtype, shape)],
    `variables` (the resource arguments after them, in order), `outputs` [(name, dtype,
    shape)] and the TensorFlow op types of its nodes.

    Example:
        >>> lower(cf, "__inference_f_1").op_types
        ['ReadVariableOp', 'MatMul', 'BiasAdd', 'Relu', 'Softmax']
    """

    def __init__(self, fdef: bytes, inputs: list, variables: list, outputs: list,
                 op_types: list):
        self.fdef, self.inputs, self.variables = fdef, inputs, variables
        self.outputs, self.op_types = outputs, op_types


def _dynamic_shape(name: str, shape: tuple, refs: dict, nodes: list, op_types: list,
                   node) -> str:
    """Nodes computing `shape` (ints and `Dim`s) as an int32 vector: each Dim is a size of
    its tensor (Shape, then StridedSlice), packed with the known sizes. Returns its ref."""
    int32 = as_dtype("int32")
    parts = []
    for i, d in enumerate(shape):
        part = f"{name}/dim_{i}"
        if type(d) is not Dim:
            nodes.append(P.node_def(part, "Const", (), {
                "dtype": int32, "value": ("tensor", (np.int32(d), int32))}))
            op_types.append("Const")
            parts.append(f"{part}:output:0")
            continue
        if not isinstance(d.axis, int):
            raise ValueError(f"saved_model: {node.name} ({node.op}) has a size that is a "
                             "product of run-time dims: no TensorFlow lowering yet")
        nodes.append(P.node_def(f"{part}/shape", "Shape", [refs[d.tensor.id]], {
            "T": d.tensor.dtype, "out_type": int32}))
        for k, v in (("begin", d.axis), ("end", d.axis + 1), ("strides", 1)):
            nodes.append(P.node_def(f"{part}/{k}", "Const", (), {
                "dtype": int32, "value": ("tensor", (np.asarray([v], np.int32), int32))}))
        nodes.append(P.node_def(part, "StridedSlice", [
            f"{part}/shape:output:0", f"{part}/begin:output:0", f"{part}/end:output:0",
            f"{part}/strides:output:0"], {"T": int32, "Index": int32, "shrink_axis_mask": 1,
                                          "begin_mask": 0, "end_mask": 0,
                                          "ellipsis_mask": 0, "new_axis_mask": 0}))
        op_types.extend(["Shape", "Const", "Const", "Const", "StridedSlice"])
        parts.append(f"{part}:output:0")
    nodes.append(P.node_def(name, "Pack", parts, {"T": int32, "N": len(parts), "axis": 0}))
    op_types.append("Pack")
    return f"{name}:output:0"


def lower(cf, fname: str, input_names: list | None = None) -> Lowered:
    """The graph of ConcreteFunction `cf` as FunctionDef `fname`."""
    graph = cf.graph
    captured = {ph.id: ext for ext, ph in graph.captures}
    taken: set = set()
    refs: dict[int, str] = {}  # tensor id -> how the FunctionDef names it
    args, nodes, op_types = [], [], []
    arg_attrs = []
    params = [t for t in graph.inputs if t.id not in captured]
    for i, t in enumerate(params):
        label = input_names[i] if input_names else t._native.node.name
        name = arg_name(label, taken)
        refs[t.id] = name
        args.append((name, t.dtype, t.shape))
        arg_attrs.append(label)
    node_names = {n.name for n in graph.nodes}
    taken |= {n.lower() for n in node_names}
    var_args: dict[int, str] = {}
    last_use: dict[int, str] = {}  # variable id -> the last node that used it
    effects: list[str] = []        # assignments: run even though no output needs them
    variables: list[Variable] = []
    for node in graph.nodes:
        if node.op == "Placeholder":
            ext = captured.get(node.outputs[0].id)
            if ext is None:
                continue
            # an eager tensor the function captured: its value travels in the function
            value = np.asarray(ext.numpy())
            nodes.append(P.node_def(node.name, "Const", (), {
                "dtype": ext.dtype, "value": ("tensor", (value, ext.dtype))}))
            refs[node.outputs[0].id] = f"{node.name}:output:0"
            op_types.append("Const")
            continue
        if node.op == "Const":
            value, dtype = np.asarray(node.attrs["value"]), node.attrs["dtype"]
            nodes.append(P.node_def(node.name, "Const", (), {
                "dtype": dtype, "value": ("tensor", (value, dtype))}))
            refs[node.outputs[0].id] = f"{node.name}:output:0"
            op_types.append("Const")
            continue
        rule = LOWERING.get(node.op)
        if rule is None:
            raise ValueError(f"saved_model: op {node.op} (node {node.name} of function "
                             f"{cf.name}) has no TensorFlow lowering yet")
        tf_op, out_arg, attrs_of = rule
        inputs = []
        for v in node.inputs.values():
            for m in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(m, Variable):
                    if m.id not in var_args:
                        var_args[m.id] = arg_name(m.name.split(":")[0] + "_resource",
                                                  taken)
                        variables.append(m)
                    inputs.append(var_args[m.id])
                elif isinstance(m, Tensor):
                    inputs.append(refs[m.id])
                else:
                    raise ValueError(f"saved_model: node {node.name} ({node.op}) of "
                                     f"{cf.name} has an input TensorFlow cannot take: {m!r}")
        # TensorFlow's automatic control dependencies: the ops on one variable run in the
        # order they were traced (a read after an assignment sees it)
        touched = [m.id for m in node.inputs.values() if isinstance(m, Variable)]
        after = sorted({last_use[t] for t in touched if t in last_use})
        for t in touched:
            last_use[t] = node.name
        if node.op in WRITES:
            effects.append(node.name)
        attrs = attrs_of(node)
        for j, value in enumerate(ATTR_INPUTS.get(node.op, lambda n: [])(node)):
            cname = f"{node.name}/attr_{j}"
            if isinstance(value, tuple):  # a shape with run-time sizes
                inputs.append(_dynamic_shape(cname, value, refs, nodes, op_types, node))
                continue
            dtype = as_dtype(value.dtype.name)
            nodes.append(P.node_def(cname, "Const", (), {
                "dtype": dtype, "value": ("tensor", (value, dtype))}))
            op_types.append("Const")
            inputs.append(f"{cname}:output:0")
        nodes.append(P.node_def(node.name, tf_op, inputs + [f"^{a}" for a in after], attrs))
        op_types.append(tf_op)
        for i, o in enumerate(node.outputs):
            refs[o.id] = f"{node.name}:{out_arg}:{i}"
    outs = []
    rets = []
    for i, o in enumerate(graph.outputs):
        name = arg_name(f"output_{i}", taken)
        outs.append((name, o.dtype, o.shape))
        rets.append(P.map_entry(4, name, refs[o.id].encode()))
    signature = P.field(1, fname)
    signature += b"".join(P.msg(2, P.arg_def(n, d)) for n, d, _ in args)
    signature += b"".join(P.msg(2, P.arg_def(var_args[v.id], "resource",
                                             (v.dtype, v.shape)))
                          for v in variables)
    signature += b"".join(P.msg(3, P.arg_def(n, d)) for n, d, _ in outs)
    if variables:
        signature += P.boolean(17, True)
    signature += b"".join(P.field(20, e) for e in effects)
    body = P.msg(1, signature) + b"".join(P.msg(3, n) for n in nodes) + b"".join(rets)
    body += b"".join(P.map_entry(6, e, e.encode()) for e in effects)
    for i, label in enumerate(arg_attrs):
        body += P.msg(7, P.field(1, i), P.field(2, P.map_entry(
            1, "_user_specified_name", P.attr_value(label))))
    return Lowered(body, args, variables, outs, op_types)
