"""TensorFlow's graph functions run as tapeflow ops: `Library.call(name, inputs)` walks a
FunctionDef's nodes (only those its results and control results need, in dependency
order) and runs each TensorFlow op as the tapeflow op of the same meaning. Under
`tf.function` that builds a tapeflow graph; under a GradientTape it records as any
tapeflow code does, so restored functions are differentiable.

Values in flight are tapeflow tensors, Variables (resource arguments) or NumPy arrays
(constants and shapes known while tracing, kept as arrays so that shape arithmetic folds
and ops that take a static axis or shape get one).

Example:
    >>> lib = Library(function_defs)
    >>> lib.call("__inference___call___30", [x, w1, b1])
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .._core.tensor import Tensor, TensorShape
from .._core.variable import Variable
from ..function.control_flow import cond, while_loop
from ..function.tensor_array import TensorArray
from ..ops import array as A
from ..ops import conv as C
from ..ops import creation as K
from ..ops import indexing as I
from ..ops import linalg as L
from ..ops import math as M
from ..ops import nn as N
from ..ops import reduction as R
from . import proto as P

__all__ = ["Library", "OPS", "UnsupportedOpError", "as_tensor"]


class UnsupportedOpError(ValueError):
    """A SavedModel function uses a TensorFlow op tapeflow cannot run (the message names
    the op, the node and the function).

    Example:
        >>> tf.saved_model.load("/tmp/uses_an_unknown_op")
        UnsupportedOpError: saved_model.load: TensorFlow op Foo (node foo of function
        __inference_f_12) has no tapeflow equivalent
    """


class _Sizes(list):
    """A vector of sizes packed from scalars some of which are known only at run time
    (Pack of Shape slices): kept as its items, so that Reshape and Fill get a shape list
    with symbolic sizes, as tapeflow's own traced code passes them."""


def _t(x, dtype=None):
    """A tensor of a value in flight (a constant array becomes a constant)."""
    if isinstance(x, _Sizes):
        return A.stack([_t(v, dtype) for v in x])
    if isinstance(x, Variable):
        return x.read_value()
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype == dtype else M.cast(x, dtype)
    return K.constant(np.asarray(x), dtype=dtype)


def as_tensor(x):
    """A value `Library.call` returns as a tapeflow tensor (constants and sizes known
    while tracing are kept as arrays or lists of sizes inside a call).

    Example:
        >>> as_tensor(np.float32(2.0))
        tf.Tensor(2.0, shape=(), dtype=float32)
    """
    return _t(x)


def _static(x):
    """The value as a NumPy array when it is known now (a constant, or a tensor whose
    value tracing knows), else None."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, _Sizes):
        return np.asarray(x) if all(isinstance(v, np.ndarray) for v in x) else None
    if isinstance(x, Tensor):
        value = A.get_static_value(x)
        return None if value is None else np.asarray(value)
    return None


def _need_static(x, what: str, node) -> np.ndarray:
    value = _static(x)
    if value is None:
        raise UnsupportedOpError(f"saved_model.load: {node.op} (node {node.name}) needs its "
                                 f"{what} known while tracing; it is computed at run time")
    return value


def _ints(x, what, node) -> list:
    return [int(v) for v in np.asarray(_need_static(x, what, node)).reshape(-1)]


def _shape_arg(x):
    """A shape argument: a list of ints when known now, else the tensor."""
    if isinstance(x, _Sizes):
        return [int(v) if isinstance(v, np.ndarray) else v for v in x]
    value = _static(x)
    return [int(v) for v in value.reshape(-1)] if value is not None else _t(x)


def _dtype(enum) -> object:
    return P.dtype_of(int(enum))


def _folds(fn: Callable, *xs):
    """`fn` on NumPy arrays when every input is a known array (shape arithmetic on
    constants stays constant), else None."""
    if all(isinstance(x, np.ndarray) for x in xs):
        return fn(*xs)
    return None


def _unary(fn: Callable) -> Callable:
    return lambda ins, attrs, node: [fn(_t(ins[0]))]


def _binary(fn: Callable, numpy_fn: Callable | None = None) -> Callable:
    def run(ins, attrs, node):
        if numpy_fn is not None:
            folded = _folds(numpy_fn, ins[0], ins[1])
            if folded is not None:
                return [np.asarray(folded, ins[0].dtype if np.asarray(folded).dtype.kind
                                   != "b" else bool)]
        return [fn(_t(ins[0]), _t(ins[1]))]
    return run


def _reduce(fn: Callable, numpy_fn: Callable | None = None) -> Callable:
    def run(ins, attrs, node):
        axis = _ints(ins[1], "axis", node)
        keep = bool(attrs.get("keep_dims", False))
        if numpy_fn is not None and isinstance(ins[0], np.ndarray):  # sizes of a shape
            return [np.asarray(numpy_fn(ins[0], axis=tuple(axis), keepdims=keep),
                               ins[0].dtype)]
        if numpy_fn is np.prod and isinstance(ins[0], _Sizes) and not keep:
            # a product of sizes, some known at run time only (Tensordot's reshapes)
            known = [v for v in ins[0] if isinstance(v, np.ndarray)]
            total = np.asarray(np.prod(known) if known else 1, _t(ins[0]).dtype
                               .as_numpy_dtype)
            for v in ins[0]:
                if not isinstance(v, np.ndarray):
                    total = M.multiply(_t(total), v)
            return [total]
        return [fn(_t(ins[0]), axis=axis, keepdims=keep)]
    return run


def _matmul(ins, attrs, node):
    return [L.matmul(_t(ins[0]), _t(ins[1]), transpose_a=bool(attrs.get("transpose_a")),
                     transpose_b=bool(attrs.get("transpose_b")))]


def _batch_matmul(ins, attrs, node):
    return [L.matmul(_t(ins[0]), _t(ins[1]), adjoint_a=bool(attrs.get("adj_x")),
                     adjoint_b=bool(attrs.get("adj_y")))]


def _format(attrs) -> str:
    fmt = attrs.get("data_format", b"NHWC")
    return fmt.decode() if isinstance(fmt, bytes) else fmt


def _bias_add(ins, attrs, node):
    return [N.bias_add(_t(ins[0]), _t(ins[1]), data_format=_format(attrs))]


def _padding(attrs) -> str:
    pad = attrs.get("padding", b"VALID")
    return pad.decode() if isinstance(pad, bytes) else pad


def _spatial(values: list, attrs) -> list:
    return values[2:] if _format(attrs).startswith("NC") else values[1:-1]


def _conv2d(ins, attrs, node):
    if _padding(attrs) == "EXPLICIT":
        raise UnsupportedOpError(f"saved_model.load: Conv2D (node {node.name}) with explicit "
                                 "paddings cannot run here")
    return [C.conv2d(_t(ins[0]), _t(ins[1]), strides=_spatial(attrs["strides"], attrs),
                     padding=_padding(attrs), data_format=_format(attrs),
                     dilations=_spatial(attrs.get("dilations", [1, 1, 1, 1]), attrs))]


def _depthwise(ins, attrs, node):
    return [C.depthwise_conv2d(_t(ins[0]), _t(ins[1]), strides=list(attrs["strides"]),
                               padding=_padding(attrs), data_format=_format(attrs),
                               dilations=_spatial(attrs.get("dilations", [1, 1, 1, 1]),
                                                  attrs))]


def _conv2d_transpose(ins, attrs, node):
    return [C.conv2d_transpose(_t(ins[2]), _t(ins[1]), _shape_arg(ins[0]),
                               strides=_spatial(attrs["strides"], attrs),
                               padding=_padding(attrs), data_format=_format(attrs),
                               dilations=_spatial(attrs.get("dilations", [1, 1, 1, 1]),
                                                  attrs))]


def _pool(fn: Callable) -> Callable:
    def run(ins, attrs, node):
        return [fn(_t(ins[0]), ksize=_spatial(attrs["ksize"], attrs),
                   strides=_spatial(attrs["strides"], attrs), padding=_padding(attrs),
                   data_format=_format(attrs))]
    return run


def _softmax(fn: Callable) -> Callable:
    return lambda ins, attrs, node: [fn(_t(ins[0]), axis=-1)]


def _cast(ins, attrs, node):
    dst = _dtype(attrs["DstT"])
    if isinstance(ins[0], np.ndarray):
        return [ins[0].astype(dst.as_numpy_dtype)]
    return [M.cast(_t(ins[0]), dst)]


def _const(ins, attrs, node):
    return [np.asarray(attrs["value"])]


def _identity(ins, attrs, node):
    return [ins[0]]


def _identity_n(ins, attrs, node):
    return list(ins)


def _read(ins, attrs, node):
    v = ins[0]
    if not isinstance(v, Variable):
        raise UnsupportedOpError(f"saved_model.load: ReadVariableOp (node {node.name}) reads "
                                 f"a {type(v).__name__}, not a variable")
    return [v.read_value()]


def _resource_gather(ins, attrs, node):
    return [I.gather(ins[0].read_value(), _t(ins[1]),
                     batch_dims=int(attrs.get("batch_dims", 0)))]


def _assign(method: str) -> Callable:
    def run(ins, attrs, node):
        getattr(ins[0], method)(_t(ins[1], ins[0].dtype))
        return []
    return run


def _reshape(ins, attrs, node):
    x, shape = ins
    if isinstance(x, np.ndarray) and _static(shape) is not None:
        return [x.reshape(_ints(shape, "shape", node))]
    dims = _shape_arg(shape)
    if isinstance(dims, list):
        computed = [i for i, d in enumerate(dims) if isinstance(d, Tensor)]
        if len(computed) == 1 and not any(isinstance(d, int) and d == -1 for d in dims):
            # one size computed at run time (a product of dims, as Keras flattens batch
            # and time): the only size Reshape can infer, so it is left to infer it
            dims = [-1 if i == computed[0] else d for i, d in enumerate(dims)]
    return [A.reshape(_t(x), dims)]


def _shape(ins, attrs, node):
    x = ins[0]
    dtype = _dtype(attrs.get("out_type", 3))
    out = dtype.as_numpy_dtype
    if isinstance(x, np.ndarray):
        return [np.asarray(x.shape, out)]
    dims = list(_t(x).shape)
    if all(d is not None for d in dims):
        return [np.asarray(dims, out)]
    # sizes one by one: the known ones stay constants (products of them fold), each
    # run-time one a slice of the shape, which tapeflow's shape arguments accept
    full = A.shape(_t(x), out_type=dtype)
    return [_Sizes(np.asarray(d, out) if d is not None else
                   I.strided_slice(full, [i], [i + 1], [1], shrink_axis_mask=1)
                   for i, d in enumerate(dims))]


def _pack(ins, attrs, node):
    axis = int(attrs.get("axis", 0))
    if all(isinstance(x, np.ndarray) for x in ins):
        return [np.stack(ins, axis=axis)]
    if axis == 0 and all(len(getattr(x, "shape", ())) == 0 for x in ins):
        return [_Sizes(ins)]
    return [A.stack([_t(x) for x in ins], axis=axis)]


def _unpack(ins, attrs, node):
    axis = int(attrs.get("axis", 0))
    if isinstance(ins[0], np.ndarray):
        return list(np.moveaxis(ins[0], axis, 0))
    return A.unstack(_t(ins[0]), num=attrs.get("num"), axis=axis)


def _concat(ins, attrs, node):
    axis = _ints(ins[-1], "axis", node)[0]
    values = ins[:-1]
    if all(isinstance(x, np.ndarray) for x in values):
        return [np.concatenate(values, axis=axis)]
    if any(isinstance(x, _Sizes) for x in values) and all(
            isinstance(x, _Sizes) or (isinstance(x, np.ndarray) and x.ndim == 1)
            for x in values):
        return [_Sizes(v for x in values for v in (x if isinstance(x, _Sizes) else list(x)))]
    return [A.concat([_t(x) for x in values], axis=axis)]


def _strided_slice(ins, attrs, node):
    begin, end, strides = (_ints(v, k, node) for v, k in zip(ins[1:], ("begin", "end",
                                                                        "strides")))
    masks = {k: int(attrs.get(k, 0)) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                                "new_axis_mask", "shrink_axis_mask")}
    x = ins[0]
    plain = not (masks["ellipsis_mask"] or masks["new_axis_mask"])
    if plain and (isinstance(x, np.ndarray) or (isinstance(x, _Sizes) and len(begin) == 1)):
        index = []
        for i, (b, e, st) in enumerate(zip(begin, end, strides)):
            if masks["shrink_axis_mask"] >> i & 1:
                index.append(b)
                continue
            index.append(slice(None if masks["begin_mask"] >> i & 1 else b,
                               None if masks["end_mask"] >> i & 1 else e, st))
        if isinstance(x, _Sizes):
            picked = x[index[0]]
            return [_Sizes(picked) if isinstance(index[0], slice) else picked]
        return [np.asarray(x[tuple(index)])]
    return [I.strided_slice(_t(x), begin, end, strides, **masks)]


def _slice(ins, attrs, node):
    return [I.slice(_t(ins[0]), _ints(ins[1], "begin", node), _ints(ins[2], "size", node))]


def _transpose(ins, attrs, node):
    return [A.transpose(_t(ins[0]), _ints(ins[1], "perm", node))]


def _expand_dims(ins, attrs, node):
    axis = _ints(ins[1], "axis", node)[0]
    if isinstance(ins[0], np.ndarray):
        return [np.expand_dims(ins[0], axis)]
    return [A.expand_dims(_t(ins[0]), axis)]


def _squeeze(ins, attrs, node):
    dims = attrs.get("squeeze_dims") or None
    return [A.squeeze(_t(ins[0]), axis=dims)]


def _fill(ins, attrs, node):
    dims, value = ins
    if isinstance(value, np.ndarray) and _static(dims) is not None:
        return [np.full(_ints(dims, "dims", node), value)]
    return [K.fill(_shape_arg(dims), _t(value))]


def _range(ins, attrs, node):
    if all(isinstance(x, np.ndarray) for x in ins):
        return [np.arange(ins[0], ins[1], ins[2]).astype(
            _dtype(attrs.get("Tidx", 3)).as_numpy_dtype)]
    return [K.range(_t(ins[0]), _t(ins[1]), _t(ins[2]))]


def _gather(ins, attrs, node):
    axis = _ints(ins[2], "axis", node)[0] if len(ins) > 2 else 0
    params, indices = ins[0], _static(ins[1])
    if indices is not None and axis == 0:
        if isinstance(params, np.ndarray):
            return [np.take(params, indices, axis=0)]
        if isinstance(params, _Sizes):  # sizes picked from a shape
            return [_Sizes(params[int(i)] for i in indices.reshape(-1))
                    if indices.ndim else params[int(indices)]]
    return [I.gather(_t(ins[0]), _t(ins[1]), axis=axis,
                     batch_dims=int(attrs.get("batch_dims", 0)))]


def _einsum(ins, attrs, node):
    eq = attrs["equation"]
    return [L.einsum(eq.decode() if isinstance(eq, bytes) else eq, *[_t(x) for x in ins])]


def _select(ins, attrs, node):
    return [I.where(_t(ins[0]), _t(ins[1]), _t(ins[2]))]


def _pad(ins, attrs, node):
    pads = np.asarray(_need_static(ins[1], "paddings", node)).tolist()
    value = ins[2] if len(ins) > 2 else 0
    return [A.pad(_t(ins[0]), pads, constant_values=_t(value))]


def _tile(ins, attrs, node):
    return [A.tile(_t(ins[0]), _ints(ins[1], "multiples", node))]


def _leaky_relu(ins, attrs, node):
    return [N.leaky_relu(_t(ins[0]), alpha=float(attrs.get("alpha", 0.2)))]


def _arg_reduce(fn: Callable) -> Callable:
    def run(ins, attrs, node):
        return [fn(_t(ins[0]), axis=_ints(ins[1], "axis", node)[0],
                   output_type=_dtype(attrs.get("output_type", 9)))]
    return run


def _add_n(ins, attrs, node):
    return [R.add_n([_t(x) for x in ins])]


def _fused_batch_norm(ins, attrs, node):
    if attrs.get("is_training", True):
        raise UnsupportedOpError(f"saved_model.load: {node.op} (node {node.name}) in "
                                 "training mode cannot run here (inference mode can)")
    x, scale, offset, mean, var = (_t(v) for v in ins[:5])
    if _format(attrs).startswith("NC"):
        shape = [1, -1] + [1] * (len(x.shape) - 2)
        scale, offset, mean, var = (A.reshape(v, shape) for v in (scale, offset, mean, var))
    y = N.batch_normalization(x, mean, var, offset, scale, float(attrs.get("epsilon", 1e-3)))
    return [y, mean, var, mean, var, mean]


def _broadcast_to(ins, attrs, node):
    return [A.broadcast_to(_t(ins[0]), _shape_arg(ins[1]))]


def _stop_gradient(ins, attrs, node):
    return [A.stop_gradient(_t(ins[0]))]


def _split(ins, attrs, node):
    axis = _ints(ins[0], "axis", node)[0]
    return A.split(_t(ins[1]), int(attrs["num_split"]), axis=axis)


def _split_v(ins, attrs, node):
    sizes = _ints(ins[1], "size_splits", node)
    return A.split(_t(ins[0]), sizes, axis=_ints(ins[2], "axis", node)[0])


# TensorFlow's TensorList ops (what tf.TensorArray and Keras's RNN loops lower to) as
# tapeflow TensorArrays, which while_loop carries as loop variables
def _element_shape(x):
    value = _static(x)
    if value is None or value.ndim == 0:  # -1 as a scalar: any shape
        return None
    return [None if v < 0 else int(v) for v in value.reshape(-1)]


def _list_reserve(ins, attrs, node):
    return [TensorArray(_dtype(attrs["element_dtype"]), size=_ints(ins[1], "size", node)[0],
                        element_shape=_element_shape(ins[0]))]


def _list_from_tensor(ins, attrs, node):
    t = _t(ins[0])
    n = t.shape[0]
    if n is None:
        raise UnsupportedOpError(f"saved_model.load: {node.op} (node {node.name}) of a "
                                 "tensor whose first dim is known only at run time")
    return [TensorArray(t.dtype, size=int(n), element_shape=list(t.shape)[1:]).unstack(t)]


def _list_get(ins, attrs, node):
    return [ins[0].read(_t(ins[1]))]


def _list_set(ins, attrs, node):
    return [ins[0].write(_t(ins[1]), _t(ins[2]))]


def _list_stack(ins, attrs, node):
    return [ins[0].stack()]


def _list_length(ins, attrs, node):
    return [ins[0].size()]


def _band_part(ins, attrs, node):
    return [L.band_part(_t(ins[0]), _ints(ins[1], "num_lower", node)[0],
                        _ints(ins[2], "num_upper", node)[0])]


def _cumsum(ins, attrs, node):
    return [R.cumsum(_t(ins[0]), axis=_ints(ins[1], "axis", node)[0],
                     exclusive=bool(attrs.get("exclusive")), reverse=bool(attrs.get("reverse")))]


def _one_hot(ins, attrs, node):
    return [K.one_hot(_t(ins[0]), _ints(ins[1], "depth", node)[0], on_value=_t(ins[2]),
                      off_value=_t(ins[3]), axis=int(attrs.get("axis", -1)))]


def _clip(ins, attrs, node):
    return [M.clip_by_value(_t(ins[0]), _t(ins[1]), _t(ins[2]))]


def _top_k(ins, attrs, node):
    values, indices = R.top_k(_t(ins[0]), k=_ints(ins[1], "k", node)[0],
                              sorted=bool(attrs.get("sorted", True)))
    return [values, indices]


def _reverse(ins, attrs, node):
    return [A.reverse(_t(ins[0]), _ints(ins[1], "axis", node))]


def _np_or(fn, npfn):
    return _binary(fn, npfn)


# TensorFlow op -> run(inputs, attrs, node) -> outputs; calls and control flow are
# Library's own
OPS: dict[str, Callable] = {
    "Const": _const, "Identity": _identity, "IdentityN": _identity_n,
    "Snapshot": _identity, "PreventGradient": _identity, "StopGradient": _stop_gradient,
    "EnsureShape": _identity, "CheckNumerics": _identity,
    "NoOp": lambda ins, attrs, node: [],
    "ReadVariableOp": _read,
    "AssignVariableOp": _assign("assign"), "AssignAddVariableOp": _assign("assign_add"),
    "AssignSubVariableOp": _assign("assign_sub"),
    "MatMul": _matmul, "BatchMatMulV2": _batch_matmul, "BatchMatMulV3": _batch_matmul,
    "BiasAdd": _bias_add, "Conv2D": _conv2d, "DepthwiseConv2dNative": _depthwise,
    "Conv2DBackpropInput": _conv2d_transpose, "ResourceGather": _resource_gather,
    "MaxPool": _pool(N.max_pool),
    "AvgPool": _pool(N.avg_pool), "Einsum": _einsum,
    "AddV2": _np_or(M.add, np.add), "Add": _np_or(M.add, np.add),
    "Sub": _np_or(M.subtract, np.subtract), "Mul": _np_or(M.multiply, np.multiply),
    "RealDiv": _binary(M.truediv), "Div": _binary(M.divide), "DivNoNan":
        _binary(M.divide_no_nan), "FloorDiv": _np_or(M.floordiv, np.floor_divide),
    "FloorMod": _np_or(M.floormod, np.mod), "Maximum": _np_or(M.maximum, np.maximum),
    "Minimum": _np_or(M.minimum, np.minimum), "Pow": _binary(M.pow),
    "SquaredDifference": _binary(M.squared_difference),
    "Greater": _binary(M.greater), "GreaterEqual": _binary(M.greater_equal),
    "Less": _binary(M.less), "LessEqual": _binary(M.less_equal),
    "Equal": _binary(M.equal), "NotEqual": _binary(M.not_equal),
    "LogicalAnd": _binary(M.logical_and), "LogicalOr": _binary(M.logical_or),
    "LogicalNot": _unary(M.logical_not),
    "Relu": _unary(N.relu), "Relu6": _unary(N.relu6), "Elu": _unary(N.elu),
    "Selu": _unary(N.selu), "Softplus": _unary(M.softplus), "Softsign": _unary(M.softsign),
    "Tanh": _unary(M.tanh), "Sigmoid": _unary(M.sigmoid), "Exp": _unary(M.exp),
    "Log": _unary(M.log), "Log1p": _unary(M.log1p), "Neg": _unary(M.negative),
    "Square": _unary(M.square), "Sqrt": _unary(M.sqrt), "Rsqrt": _unary(M.rsqrt),
    "Reciprocal": _unary(M.reciprocal), "Inv": _unary(M.reciprocal), "Abs": _unary(M.abs),
    "Erf": _unary(M.erf), "Erfc": _unary(M.erfc), "Sin": _unary(M.sin), "Cos": _unary(M.cos),
    "Floor": _unary(M.floor), "Ceil": _unary(M.ceil), "Round": _unary(M.round),
    "Sign": _unary(M.sign), "LeakyRelu": _leaky_relu, "Expm1": _unary(M.expm1),
    "Tan": _unary(M.tan), "Asin": _unary(M.asin), "Acos": _unary(M.acos),
    "Atan": _unary(M.atan), "Sinh": _unary(M.sinh), "Cosh": _unary(M.cosh),
    "IsNan": _unary(M.is_nan), "IsInf": _unary(M.is_inf), "IsFinite": _unary(M.is_finite),
    "Atan2": _binary(M.atan2), "Xlogy": _binary(M.xlogy), "Xdivy": _binary(M.xdivy),
    "TruncateDiv": _binary(M.truncatediv), "LogicalXor": _binary(M.logical_xor),
    "Softmax": _softmax(N.softmax), "LogSoftmax": _softmax(N.log_softmax),
    "Sum": _reduce(R.reduce_sum, np.sum), "Mean": _reduce(R.reduce_mean),
    "Max": _reduce(R.reduce_max, np.max), "Min": _reduce(R.reduce_min, np.min),
    "Prod": _reduce(R.reduce_prod, np.prod), "All": _reduce(R.reduce_all),
    "Any": _reduce(R.reduce_any), "ArgMax": _arg_reduce(R.argmax),
    "ArgMin": _arg_reduce(R.argmin), "AddN": _add_n,
    "Cast": _cast, "Reshape": _reshape, "Shape": _shape, "Pack": _pack, "Unpack": _unpack,
    "ConcatV2": _concat, "StridedSlice": _strided_slice, "Slice": _slice,
    "Transpose": _transpose, "ExpandDims": _expand_dims, "Squeeze": _squeeze, "Fill": _fill,
    "ZerosLike": _unary(K.zeros_like), "OnesLike": _unary(K.ones_like), "Range": _range,
    "GatherV2": _gather, "Select": _select, "SelectV2": _select, "Pad": _pad, "PadV2": _pad,
    "Tile": _tile, "BroadcastTo": _broadcast_to,
    "FusedBatchNormV3": _fused_batch_norm, "FusedBatchNorm": _fused_batch_norm,
    "Split": _split, "SplitV": _split_v, "MatrixBandPart": _band_part, "Cumsum": _cumsum,
    "OneHot": _one_hot, "ClipByValue": _clip, "TopKV2": _top_k, "ReverseV2": _reverse,
    "TensorListReserve": _list_reserve, "TensorListFromTensor": _list_from_tensor,
    "TensorListGetItem": _list_get, "TensorListSetItem": _list_set,
    "TensorListStack": _list_stack, "TensorListLength": _list_length,
}

# ops whose outputs are several named args (a tensor each): where each starts
_OUTPUT_ARGS = {
    "TopKV2": ["values", "indices"],
    "FusedBatchNormV3": ["y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2", "reserve_space_3"],
    "FusedBatchNorm": ["y", "batch_mean", "batch_variance", "reserve_space_1",
                       "reserve_space_2"],
}
_CALLS = {"StatefulPartitionedCall", "PartitionedCall"}
_IFS = {"If", "StatelessIf"}
_WHILES = {"While", "StatelessWhile"}


def _order(fdef: P.FunctionDef, needed_names: set) -> list:
    """The nodes that `needed_names` depend on (data and control inputs), each after what
    it depends on, ties in the FunctionDef's order."""
    by_name = {n.name: n for n in fdef.nodes}
    position = {n.name: i for i, n in enumerate(fdef.nodes)}
    out, state = [], {}

    def deps(node) -> list:
        names = []
        for ref in node.inputs:
            src = ref.lstrip("^").split(":")[0]
            if src in by_name:
                names.append(src)
        return sorted(set(names), key=position.__getitem__)

    for root in sorted(needed_names, key=lambda n: position.get(n, -1)):
        if root not in by_name or state.get(root) == 2:
            continue
        stack = [(root, iter(deps(by_name[root])))]
        state[root] = 1
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[name] = 2
                out.append(by_name[name])
            elif state.get(nxt) is None:
                state[nxt] = 1
                stack.append((nxt, iter(deps(by_name[nxt]))))
            elif state[nxt] == 1:
                raise ValueError(f"saved_model.load: function {fdef.name} has a cycle "
                                 f"through node {nxt}")
    return out


class Library:
    """The FunctionDefs of a SavedModel, callable as tapeflow code.

    Example:
        >>> Library({f.name: f for f in fdefs}).call("__inference_f_7", [x, v])
    """

    def __init__(self, functions: dict):
        self.functions = functions
        self._node_ops: dict = {}
        self._orders: dict = {}

    def check(self, names) -> None:
        """Raise UnsupportedOpError for the first op tapeflow cannot run in functions
        `names` or those they call (as TensorFlow refuses to load an unknown op)."""
        seen: set = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.functions:
                continue
            seen.add(name)
            fdef = self.functions[name]
            for node in fdef.nodes:
                called = [v.name for v in node.attrs.values() if isinstance(v, P.FuncRef)]
                if node.op in self.functions:
                    called.append(node.op)
                elif not called and node.op not in OPS:
                    raise UnsupportedOpError(
                        f"saved_model.load: TensorFlow op {node.op} (node {node.name} of "
                        f"function {name}) has no tapeflow equivalent")
                todo.extend(called)

    def call(self, name: str, inputs: list) -> list:
        """Run function `name` on `inputs` (tensors, arrays, Variables for resource
        arguments) and return its results in the order of its output args."""
        fdef = self.functions.get(name)
        if fdef is None:
            raise ValueError(f"saved_model.load: the SavedModel has no function {name!r}")
        if len(inputs) != len(fdef.inputs):
            raise ValueError(f"saved_model.load: function {name} takes {len(fdef.inputs)} "
                             f"inputs, got {len(inputs)}")
        env: dict[str, list] = {}
        for arg, value in zip(fdef.inputs, inputs):
            env[arg.name] = [value]
        needed = {ref.lstrip("^").split(":")[0] for ref in fdef.ret.values()}
        needed |= set(fdef.control_ret.values())
        order = self._orders.get(name)
        if order is None:
            order = self._orders[name] = _order(fdef, needed)
        for node in order:
            ins = [self._lookup(env, ref, fdef, node) for ref in node.inputs
                   if not ref.startswith("^")]
            env[node.name] = self._run(node, ins, fdef)
        return [self._lookup(env, fdef.ret[arg.name], fdef, None) for arg in fdef.outputs]

    def _lookup(self, env: dict, ref: str, fdef, node):
        parts = ref.split(":")
        if parts[0] not in env:
            raise ValueError(f"saved_model.load: function {fdef.name} refers to {ref!r}, "
                             "which it does not define")
        values = env[parts[0]]
        if len(parts) == 1:
            return values[0]
        index = int(parts[-1])
        if len(parts) == 3:
            names = _OUTPUT_ARGS.get(self._ops_of(fdef).get(parts[0], ""))
            if names and parts[1] in names:
                index += names.index(parts[1])
        return values[index]

    def _ops_of(self, fdef) -> dict:
        """{node name: op} of a function (cached: traces look producers up per input)."""
        ops = self._node_ops.get(fdef.name)
        if ops is None:
            ops = self._node_ops[fdef.name] = {n.name: n.op for n in fdef.nodes}
        return ops

    def _run(self, node, ins: list, fdef) -> list:
        op = node.op
        if op in _CALLS:
            return self.call(node.attrs["f"].name, ins)
        if op in self.functions:  # a library function called as an op
            return self.call(op, ins)
        if op in _IFS:
            return self._if(node, ins)
        if op in _WHILES:
            return self._while(node, ins)
        rule = OPS.get(op)
        if rule is None:
            raise UnsupportedOpError(
                f"saved_model.load: TensorFlow op {op} (node {node.name} of function "
                f"{fdef.name}) has no tapeflow equivalent")
        out = rule(ins, node.attrs, node)
        return list(out)

    def _if(self, node, ins: list) -> list:
        pred, args = ins[0], ins[1:]
        then_name, else_name = node.attrs["then_branch"].name, node.attrs["else_branch"].name
        known = _static(pred)
        if known is not None:  # a predicate known now: only its branch is traced
            return self.call(then_name if bool(known) else else_name, args)
        n_out = len(node.attrs.get("Tout") or [])
        if n_out == 0:
            raise UnsupportedOpError(f"saved_model.load: {node.op} (node {node.name}) has "
                                     "no outputs (a branch run for its effects only)")
        pack = (lambda out: out) if n_out > 1 else (lambda out: out[0])
        result = cond(_t(pred), lambda: pack(self.call(then_name, args)),
                      lambda: pack(self.call(else_name, args)))
        return list(result) if n_out > 1 else [result]

    def _while(self, node, ins: list) -> list:
        cond_name, body_name = node.attrs["cond"].name, node.attrs["body"].name
        # resources (variables) stay fixed: only tensors go round the loop
        slots = [i for i, v in enumerate(ins) if not isinstance(v, Variable)]

        def full(values) -> list:
            out = list(ins)
            for i, v in zip(slots, values):
                out[i] = v
            return out

        def test(*values):
            return _t(self.call(cond_name, full(values))[0])

        def carried(value, like):
            if isinstance(value, TensorArray):
                return value
            return _t(value, _t(like).dtype if not isinstance(like, TensorArray) else None)

        def step(*values):
            out = self.call(body_name, full(values))
            return [carried(out[i], ins[i]) for i in slots]

        loop_vars = [v if isinstance(v, TensorArray) else _t(v) for v in
                     (ins[i] for i in slots)]
        shapes = node.attrs.get("output_shapes") or []
        invariants = None
        if len(shapes) == len(ins) and not any(isinstance(v, TensorArray)
                                               for v in loop_vars):
            invariants = [TensorShape(shapes[i]) for i in slots]
        result = while_loop(test, step, loop_vars, shape_invariants=invariants)
        if isinstance(result, (Tensor, TensorArray)):
            result = [result]
        return full(list(result))
