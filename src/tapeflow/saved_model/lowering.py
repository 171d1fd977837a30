"""A traced graph (the ConcreteFunction's graph, before fusion passes) as a TensorFlow
FunctionDef: each tapeflow node lowered to TensorFlow's primitive op, inputs in the op's
order, results named "node:output_arg:index" as FunctionDefs name them, variables read
with ReadVariableOp on resource arguments (TensorFlow's captured handles). Control flow
(tf.cond, tf.while_loop) becomes TensorFlow's functional If / While ops, whose branches,
cond and body are FunctionDefs of their own (`Lowered.library`).

Example:
    >>> lowered = lower(cf, "__inference_f_1")   # .fdef: the FunctionDef's bytes
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from .._core.dtypes import as_dtype
from .._core.shape import Dim
from .._core.tensor import Tensor, TensorSpec
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


def _t_in(node) -> dict:
    """T of an op whose output type is not its inputs' (a comparison), or whose first
    input is not of type T (SelectV2's condition)."""
    return {"T": node.inputs["x"].dtype}


def _tile(node) -> dict:
    return {**_t(node), "Tmultiples": as_dtype("int32")}


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
    "Tile": lambda node: [_shape_value(node.attrs["multiples"])],
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
    "Greater": ("Greater", "z", _t_in),
    "GreaterEqual": ("GreaterEqual", "z", _t_in),
    "Less": ("Less", "z", _t_in),
    "LessEqual": ("LessEqual", "z", _t_in),
    "Equal": ("Equal", "z", _t_in),
    "NotEqual": ("NotEqual", "z", _t_in),
    "LogicalAnd": ("LogicalAnd", "z", lambda node: {}),
    "LogicalOr": ("LogicalOr", "z", lambda node: {}),
    "LogicalNot": ("LogicalNot", "y", lambda node: {}),
    "SelectV2": ("SelectV2", "output", _t_in),
    "Floor": ("Floor", "y", _t),
    "FloorMod": ("FloorMod", "z", _t),
    "FloorDiv": ("FloorDiv", "z", _t),
    "Sin": ("Sin", "y", _t),
    "Cos": ("Cos", "y", _t),
    "Tile": ("Tile", "output", _tile),
    "ReadVariableOp": ("ReadVariableOp", "value", _read),
    **{op: (op, "", _assign) for op in sorted(WRITES)},
}


# ---------------------------------------------------------------- control flow
# tapeflow's If and While nodes hold their branches / cond and body as ConcreteFunctions
# taking (own arguments, then the outside tensors they read: the node's `args`) and read
# variables (the node's `resources`). Each becomes a FunctionDef of the library taking the
# resources as resource arguments after the tensors, and the node TensorFlow's functional
# If / While (StatelessIf / StatelessWhile when no variable or effect is involved, as
# TensorFlow's cond_v2 and while_v2 choose).

_function_ids = itertools.count(1)


def _function_name(fname: str, node, part: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", f"{fname}_{node.name}_{part}")
    return f"{base}_{next(_function_ids)}"


class _Control:
    """What lowering one If or While node gives: nodes to add before it (`pre`), its
    TensorFlow op, inputs (refs) and attrs, a ref (or None) per tapeflow output, the
    library functions it calls, and whether it is stateful."""

    def __init__(self, pre, op, inputs, attrs, refs, library, stateful):
        self.pre, self.op, self.inputs, self.attrs = pre, op, inputs, attrs
        self.refs, self.library, self.stateful = refs, library, stateful


def _type_enum(v) -> int:
    return P.DT_RESOURCE if isinstance(v, Variable) else P.dtype_enum(v.dtype)


def _shape_of(v) -> tuple:
    """A shape attribute entry of a tensor, TensorSpec or Variable (a resource: scalar)."""
    if isinstance(v, Variable):
        return ("shape", ())
    return ("shape", tuple(v._shape if isinstance(v, Tensor) else v.shape))


def _call_attrs(f: str, ins: list, outs: list) -> dict:
    return {"f": P.Func(f), "Tin": ("types", [_type_enum(v) for v in ins]),
            "Tout": ("types", [_type_enum(v) for v in outs]), "config": "",
            "config_proto": "", "executor_type": ""}


def _function_def(name: str, ins: list, nodes: list, rets: list, stateful: bool,
                  effects: tuple = ()) -> bytes:
    """A FunctionDef written by hand (a loop's cond or body wrapper): `ins` [(arg name,
    tensor or Variable)], `rets` [(output name, tensor or Variable, ref)]; `effects`
    names the nodes that run even when no output needs them (its control outputs: a
    call's assignments would be pruned with it once TensorFlow inlines the call)."""
    sig = P.field(1, name)
    for n, v in ins:
        sig += P.msg(2, P.arg_def(n, "resource", (v.dtype, v.shape)) if isinstance(
            v, Variable) else P.arg_def(n, v.dtype))
    for n, v, _ in rets:
        sig += P.msg(3, P.arg_def(n, "resource") if isinstance(v, Variable)
                     else P.arg_def(n, v.dtype))
    if stateful:
        sig += P.boolean(17, True)
    sig += b"".join(P.field(20, e) for e in effects)
    body = P.msg(1, sig) + b"".join(P.msg(3, n) for n in nodes)
    body += b"".join(P.map_entry(4, n, ref.encode()) for n, _, ref in rets)
    return body + b"".join(P.map_entry(6, e, e.encode()) for e in effects)


def _lower_if(node, fname, ref_of, resource, const, graph) -> _Control:
    """tf.cond as If / StatelessIf. Only the first `n_out` outputs are the cond's results
    (the rest are what its gradient saves): the branches return those."""
    a = node.attrs
    n_out = int(a["n_out"])
    args, variables = list(node.inputs["args"]), list(node.inputs["resources"])
    stateful = bool(a.get("stateful")) or bool(variables)
    library, names = [], []
    for part in ("then_branch", "else_branch"):
        cf = a[part]
        name = _function_name(fname, node, part.split("_")[0])
        lw = lower(cf, name, variables=variables, outputs=list(cf._flat_outputs[:n_out]))
        library.extend(lw.library + [lw.fdef])
        names.append(name)
    pred, pre = node.inputs["pred"], []
    pred_ref = ref_of(pred, node)
    if tuple(pred._shape) == (1,):  # TensorFlow's If takes any non-empty tensor as true
        shape = const(f"{node.name}/pred_shape", np.zeros((0,), np.int32))
        pre.append(P.node_def(f"{node.name}/pred", "Reshape", [pred_ref, shape], {
            "T": pred.dtype, "Tshape": as_dtype("int32")}))
        pred_ref = f"{node.name}/pred:output:0"
    outs = list(node.outputs[:n_out])
    attrs = {"Tcond": pred.dtype, "Tin": ("types", [_type_enum(v) for v in args + variables]),
             "Tout": ("types", [_type_enum(v) for v in outs]),
             "then_branch": P.Func(names[0]), "else_branch": P.Func(names[1]),
             "output_shapes": [_shape_of(t) for t in outs], "_lower_using_switch_merge": True}
    refs = [f"{node.name}:output:{i}" for i in range(n_out)]
    refs += [None] * (len(node.outputs) - n_out)
    if not n_out:  # branches run for their effects: the node stands for its predicate
        refs = [ref_of(pred, node)]
    inputs = [pred_ref] + [ref_of(t, node) for t in args] + [resource(v, node)
                                                              for v in variables]
    return _Control(pre, "If" if stateful else "StatelessIf", inputs, attrs, refs, library,
                    stateful)


def _lower_while(node, fname, ref_of, resource, const, graph) -> _Control:
    """tf.while_loop as While / StatelessWhile, laid out as TensorFlow's while_v2 lays
    it out: the loop variables are (iteration counter, maximum iterations (-1: none), the
    loop's own variables, the outside tensors its functions read, the variables they
    read). Its cond and body are wrappers: the cond ands `counter < maximum` (when one
    is given) with a call of the loop's cond; the body calls the loop's body, counts and
    passes the rest through. tapeflow's count output is the counter."""
    a = node.attrs
    loop_vars, args = list(node.inputs["loop_vars"]), list(node.inputs["args"])
    variables, limit = list(node.inputs["resources"]), list(node.inputs["maximum_iterations"])
    stateful = bool(a.get("stateful")) or bool(variables)
    int32 = as_dtype("int32")
    count = top = TensorSpec((), int32)
    library = []
    user = {}
    for part in ("cond", "body"):
        cf = a[part]
        if cf is None:
            continue
        name = _function_name(fname, node, "user_" + part)
        lw = lower(cf, name, variables=variables)
        library.extend(lw.library + [lw.fdef])
        user[part] = (name, lw)
    taken: set = set()
    slots = [("loop_counter", count), ("maximum_iterations", top)]
    slots += [(f"loop_var_{i}", t) for i, t in enumerate(loop_vars)]
    slots += [(f"arg_{i}", t) for i, t in enumerate(args)]
    slots += [(f"resource_{i}", v) for i, v in enumerate(variables)]
    ins = [(arg_name(n, taken), v) for n, v in slots]
    names = [n for n, _ in ins]
    inner = names[2:]  # what the loop's own cond and body take
    inner_values = loop_vars + args + variables
    call_op = "StatefulPartitionedCall" if stateful else "PartitionedCall"

    # the cond wrapper
    nodes, parts = [], []
    if "cond" in user:
        cname, lw = user["cond"]
        pred = a["cond"]._flat_outputs[0]
        nodes.append(P.node_def("cond_call", call_op, inner,
                                _call_attrs(cname, inner_values, [pred])))
        ref = "cond_call:output:0"
        if tuple(pred._shape) == (1,):
            nodes.append(P.node_def("scalar_shape", "Const", (), {
                "dtype": int32, "value": ("tensor", (np.zeros((0,), np.int32), int32))}))
            nodes.append(P.node_def("scalar", "Reshape", [ref, "scalar_shape:output:0"], {
                "T": pred.dtype, "Tshape": int32}))
            ref = "scalar:output:0"
        parts.append(ref)
    if limit:
        nodes.append(P.node_def("below_maximum", "Less", names[:2], {"T": int32}))
        parts.append("below_maximum:z:0")
    if len(parts) == 2:
        nodes.append(P.node_def("both", "LogicalAnd", parts))
        parts = ["both:z:0"]
    cond_name = _function_name(fname, node, "cond")
    effects = ("cond_call",) if "cond" in user and user["cond"][1].effects else ()
    library.append(_function_def(cond_name, ins, nodes,
                                 [("output", TensorSpec((), as_dtype("bool")), parts[0])],
                                 stateful, effects))

    # the body wrapper
    bname, lw = user["body"]
    nodes = [P.node_def("body_call", call_op, inner,
                        _call_attrs(bname, inner_values, loop_vars)),
             P.node_def("one", "Const", (), {
                 "dtype": int32, "value": ("tensor", (np.int32(1), int32))}),
             P.node_def("next_counter", "AddV2", [names[0], "one:output:0"], {"T": int32})]
    rets = [("loop_counter_next", count, "next_counter:z:0"), ("maximum_iterations_next",
                                                               top, names[1])]
    rets += [(f"loop_var_{i}_next", t, f"body_call:output:{i}")
             for i, t in enumerate(loop_vars)]
    rets += [(f"{n}_next", v, n) for n, v in ins[2 + len(loop_vars):]]
    body_name = _function_name(fname, node, "body")
    library.append(_function_def(body_name, ins, nodes, rets, stateful,
                                 ("body_call",) if lw.effects else ()))

    # the loop's first counter and maximum, then the node
    pre = []
    start = const(f"{node.name}/loop_counter", np.int32(0))
    if limit:
        maximum = ref_of(limit[0], node)
        if limit[0].dtype is not int32:
            pre.append(P.node_def(f"{node.name}/maximum_iterations", "Cast", [maximum], {
                "SrcT": limit[0].dtype, "DstT": int32, "Truncate": False}))
            maximum = f"{node.name}/maximum_iterations:y:0"
    else:
        maximum = const(f"{node.name}/maximum_iterations", np.int32(-1))
    values = [count, top] + inner_values
    attrs = {"T": ("types", [_type_enum(v) for v in values]), "cond": P.Func(cond_name),
             "body": P.Func(body_name), "parallel_iterations": 10,
             "output_shapes": [_shape_of(v) for v in values],
             "_lower_using_switch_merge": True}
    inputs = [start, maximum] + [ref_of(t, node) for t in loop_vars + args]
    inputs += [resource(v, node) for v in variables]
    refs = [f"{node.name}:output:{2 + i}" for i in range(len(loop_vars))]
    refs.append(f"{node.name}:output:0")
    return _Control(pre, "While" if stateful else "StatelessWhile", inputs, attrs, refs,
                    library, stateful)


def _lower_ravel(node, fname, ref_of, resource, const, graph) -> _Control:
    """getitem's index arrays as one flat int64 position for the GatherV2 that reads it:
    negative entries counted from the end (TensorFlow's gather rejects them, as it
    rejects out-of-range ones). A size unknown when traced (x[i] of a tensor i) is the
    run-time size of the gathered tensor's axis."""
    int64, int32 = as_dtype("int64"), as_dtype("int32")
    pre, name = [], node.name
    reader = next((n for n in graph.nodes if n.op == "GatherV2"
                   and n.inputs["indices"] is node.outputs[0]), None)

    def size(k: int, d) -> str:
        if type(d) is int:
            return const(f"{name}/size_{k}", np.int64(d))
        if type(d) is Dim and isinstance(d.axis, int):
            source, axis = d.tensor, d.axis
        elif d is None and reader is not None:
            source, axis = reader.inputs["params"], int(reader.attrs.get("axis", 0)) + k
        else:
            raise ValueError(f"saved_model: {name} (RavelMultiIndex) of dims "
                             f"{list(node.attrs['dims'])} has no TensorFlow lowering")
        part = f"{name}/size_{k}"
        pre.append(P.node_def(f"{part}/shape", "Shape", [ref_of(source, node)], {
            "T": source.dtype, "out_type": int64}))
        bounds = [const(f"{part}/{key}", np.asarray([v], np.int32))
                  for key, v in (("begin", axis), ("end", axis + 1), ("strides", 1))]
        pre.append(P.node_def(part, "StridedSlice", [f"{part}/shape:output:0", *bounds], {
            "T": int64, "Index": int32, "shrink_axis_mask": 1, "begin_mask": 0,
            "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0}))
        return f"{part}:output:0"

    zero = const(f"{name}/zero", np.int64(0))
    flat = None
    for k, (idx, d) in enumerate(zip(node.inputs["indices"], node.attrs["dims"])):
        step, n = f"{name}/index_{k}", size(k, d)
        ref = ref_of(idx, node)
        if idx.dtype is not int64:
            pre.append(P.node_def(f"{step}/cast", "Cast", [ref], {
                "SrcT": idx.dtype, "DstT": int64, "Truncate": False}))
            ref = f"{step}/cast:y:0"
        pre.append(P.node_def(f"{step}/negative", "Less", [ref, zero], {"T": int64}))
        pre.append(P.node_def(f"{step}/wrapped", "AddV2", [ref, n], {"T": int64}))
        pre.append(P.node_def(step, "SelectV2", [f"{step}/negative:z:0",
                                                 f"{step}/wrapped:z:0", ref], {"T": int64}))
        ref = f"{step}:output:0"
        if flat is not None:
            pre.append(P.node_def(f"{step}/scaled", "Mul", [flat, n], {"T": int64}))
            pre.append(P.node_def(f"{step}/flat", "AddV2", [f"{step}/scaled:z:0", ref],
                                  {"T": int64}))
            ref = f"{step}/flat:z:0"
        flat = ref
    return _Control(pre, "Identity", [flat], {"T": int64}, [f"{name}:output:0"], [], False)


def _lower_matmul(node, fname, ref_of, resource, const, graph) -> _Control:
    """tapeflow's MatMul multiplies stacks of matrices too (a Dense layer on a sequence):
    TensorFlow's MatMul takes matrices only, its BatchMatMulV2 the rest."""
    ins = [ref_of(node.inputs[k], node) for k in ("a", "b")]
    if all(len(node.inputs[k]._shape) == 2 for k in ("a", "b")):
        return _Control([], "MatMul", ins, _matmul(node), [f"{node.name}:product:0"], [],
                        False)
    a = node.attrs
    attrs = {**_t(node), "adj_x": bool(a.get("adjoint_a", False) or a.get("transpose_a")),
             "adj_y": bool(a.get("adjoint_b", False) or a.get("transpose_b"))}
    return _Control([], "BatchMatMulV2", ins, attrs, [f"{node.name}:output:0"], [], False)


def _lower_conv2d(node, fname, ref_of, resource, const, graph) -> _Control:
    """Conv2D; grouped with one group per input channel (a depthwise convolution, whose
    filters tapeflow holds as [h, w, 1, channels * multiplier]) as
    DepthwiseConv2dNative on the filters as [h, w, channels, multiplier]."""
    groups = int(node.attrs.get("groups", 1))
    x, filters = node.inputs["x"], node.inputs["filters"]
    ins = [ref_of(x, node), ref_of(filters, node)]
    if groups == 1:
        return _Control([], "Conv2D", ins, _conv2d(node), [f"{node.name}:output:0"], [],
                        False)
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"
    channels = x._shape[1 if nchw else -1]
    h, w, _, out = filters._shape
    if channels != groups or None in (h, w, out):
        raise ValueError(f"saved_model: {node.name} (Conv2D of {groups} groups over "
                         f"{channels} channels, filters {list(filters._shape)}) has no "
                         "TensorFlow lowering yet: only one group per channel (depthwise)")
    shape = const(f"{node.name}/depthwise_shape",
                  np.asarray([h, w, groups, out // groups], np.int32))
    pre = [P.node_def(f"{node.name}/depthwise_filters", "Reshape", [ins[1], shape], {
        "T": filters.dtype, "Tshape": as_dtype("int32")})]
    return _Control(pre, "DepthwiseConv2dNative",
                    [ins[0], f"{node.name}/depthwise_filters:output:0"], _conv2d(node),
                    [f"{node.name}:output:0"], [], False)


# ops lowered to several TensorFlow nodes, or to one of several ops, by a rule(node,
# fname, ref_of, resource, const, graph) -> _Control
COMPOSITE = {"If": _lower_if, "While": _lower_while, "RavelMultiIndex": _lower_ravel,
             "MatMul": _lower_matmul, "BatchMatMul": _lower_matmul,
             "BatchMatMulV2": _lower_matmul, "Conv2D": _lower_conv2d}


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
    shape)], the TensorFlow op types of its nodes and `library`, the FunctionDefs its
    control flow calls (each after those it calls).

    Example:
        >>> lower(cf, "__inference_f_1").op_types
        ['ReadVariableOp', 'MatMul', 'BiasAdd', 'Relu', 'Softmax']
    """

    def __init__(self, fdef: bytes, inputs: list, variables: list, outputs: list,
                 op_types: list, library: list | None = None, effects=()):
        self.fdef, self.inputs, self.variables = fdef, inputs, variables
        self.outputs, self.op_types = outputs, op_types
        self.library = list(library or [])  # FunctionDefs it calls (cond branches...)
        self.effects = list(effects)  # its control outputs (nodes run for their effects)


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


def lower(cf, fname: str, input_names: list | None = None, *, variables=None,
          outputs=None) -> Lowered:
    """The graph of ConcreteFunction `cf` as FunctionDef `fname`. `variables` fixes the
    resource arguments (all of them, in this order: the branches of one If, or a loop's
    cond and body, take the same ones); `outputs` (tensors of the graph) replaces the
    graph's outputs. Functions its control flow calls are in `Lowered.library`."""
    graph = cf.graph
    captured = {ph.id: ext for ext, ph in graph.captures}
    taken: set = set()
    refs: dict[int, str] = {}  # tensor id -> how the FunctionDef names it
    args, nodes, op_types = [], [], []
    arg_attrs = []
    library: list[bytes] = []
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
    preset = variables is not None
    variables = list(variables or [])
    for v in variables:
        var_args[v.id] = arg_name(v.name.split(":")[0] + "_resource", taken)

    def resource(m: Variable, node) -> str:
        if m.id not in var_args:
            if preset:
                raise ValueError(f"saved_model: node {node.name} ({node.op}) of {cf.name} "
                                 f"reads variable {m.name!r}, which its caller does not "
                                 "pass")
            var_args[m.id] = arg_name(m.name.split(":")[0] + "_resource", taken)
            variables.append(m)
        return var_args[m.id]

    def ref_of(m, node) -> str:
        ref = refs.get(m.id)
        if ref is None:
            raise ValueError(f"saved_model: node {node.name} ({node.op}) of {cf.name} reads "
                             f"{m.name}, which has no TensorFlow lowering (an output a "
                             "cond keeps for its gradient only)")
        return ref

    def const(cname: str, value: np.ndarray) -> str:
        dtype = as_dtype(value.dtype.name)
        nodes.append(P.node_def(cname, "Const", (), {
            "dtype": dtype, "value": ("tensor", (value, dtype))}))
        op_types.append("Const")
        return f"{cname}:output:0"

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
        control = COMPOSITE.get(node.op)
        rule = LOWERING.get(node.op)
        if rule is None and control is None:
            raise ValueError(f"saved_model: op {node.op} (node {node.name} of function "
                             f"{cf.name}) has no TensorFlow lowering yet")
        inputs = []
        for v in node.inputs.values():
            for m in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(m, Variable):
                    inputs.append(resource(m, node))
                elif isinstance(m, Tensor):
                    inputs.append(ref_of(m, node))
                else:
                    raise ValueError(f"saved_model: node {node.name} ({node.op}) of "
                                     f"{cf.name} has an input TensorFlow cannot take: {m!r}")
        # TensorFlow's automatic control dependencies: the ops on one variable run in the
        # order they were traced (a read after an assignment sees it)
        touched = [m.id for v in node.inputs.values()
                   for m in (v if isinstance(v, (list, tuple)) else (v,))
                   if isinstance(m, Variable)]
        after = sorted({last_use[t] for t in touched if t in last_use})
        for t in touched:
            last_use[t] = node.name
        if control is not None:
            built = control(node, fname, ref_of, resource, const, graph)
            nodes.extend(built.pre)
            op_types.extend(P.parse(n)[2][0].decode() for n in built.pre)
            nodes.append(P.node_def(node.name, built.op, built.inputs
                                    + [f"^{a}" for a in after], built.attrs))
            op_types.append(built.op)
            library.extend(built.library)
            for o, ref in zip(node.outputs, built.refs):
                if ref is not None:
                    refs[o.id] = ref
            if built.stateful:  # run even when no output needs it, as TensorFlow does
                effects.append(node.name)
            continue
        tf_op, out_arg, attrs_of = rule
        if node.op in WRITES:
            effects.append(node.name)
        attrs = attrs_of(node)
        for j, value in enumerate(ATTR_INPUTS.get(node.op, lambda n: [])(node)):
            cname = f"{node.name}/attr_{j}"
            if isinstance(value, tuple):  # a shape with run-time sizes
                inputs.append(_dynamic_shape(cname, value, refs, nodes, op_types, node))
                continue
            inputs.append(const(cname, value))
        nodes.append(P.node_def(node.name, tf_op, inputs + [f"^{a}" for a in after], attrs))
        op_types.append(tf_op)
        for i, o in enumerate(node.outputs):
            refs[o.id] = f"{node.name}:{out_arg}:{i}"
    outs = []
    rets = []
    for i, o in enumerate(graph.outputs if outputs is None else outputs):
        name = arg_name(f"output_{i}", taken)
        outs.append((name, o.dtype, o.shape))
        rets.append(P.map_entry(4, name, refs[o.id].encode()))
    signature = P.field(1, fname)
    signature += b"".join(P.msg(2, P.arg_def(n, d)) for n, d, _ in args)
    signature += b"".join(P.msg(2, P.arg_def(var_args[v.id], "resource",
                                             (v.dtype, v.shape)))
                          for v in variables)
    signature += b"".join(P.msg(3, P.arg_def(n, d)) for n, d, _ in outs)
    if variables or effects:
        signature += P.boolean(17, True)
    signature += b"".join(P.field(20, e) for e in effects)
    body = P.msg(1, signature) + b"".join(P.msg(3, n) for n in nodes) + b"".join(rets)
    body += b"".join(P.map_entry(6, e, e.encode()) for e in effects)
    for i, label in enumerate(arg_attrs):
        body += P.msg(7, P.field(1, i), P.field(2, P.map_entry(
            1, "_user_specified_name", P.attr_value(label))))
    return Lowered(body, args, variables, outs, op_types, library, effects)
