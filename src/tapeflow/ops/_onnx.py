"""Shared pieces of the ops' ONNX lowerings (the `onnx=` slot of `defop`).

A rule is `rule(e, node)`: it reads `node` (its `inputs`, `outputs`, `attrs`) and builds
ONNX nodes through the emitter `e` it is given (tapeflow.onnx's `Emitter`: `e.input`,
`e.outputs`, `e.add`, `e.const`, `e.dtype_code`...), so nothing here imports the exporter,
which sits floors above the ops. Rules particular to one op live beside its `defop`; the
constructors and helpers several ops share live here.

Example:
    defop("Exp", ["x"], ..., onnx=unary("Exp"))
"""
from __future__ import annotations

from typing import Callable

import numpy as np

# Slice's open ends (an end past either side of any axis)
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

Rule = Callable  # rule(e, node) -> None


def unary(onnx_op: str, **attrs) -> Rule:
    """The rule of an op of one input that is ONNX op `onnx_op` (with `attrs`).

    Example: `defop("Exp", ["x"], ..., onnx=unary("Exp"))`.
    """
    def rule(e, node):
        (key,) = node.inputs
        e.add(onnx_op, [e.input(node, key)], e.outputs(node), **attrs)
    return rule


def binary(onnx_op: str) -> Rule:
    """The rule of an op of inputs x, y that is ONNX op `onnx_op`.

    Example: `defop("Add", ["x", "y"], ..., onnx=binary("Add"))`.
    """
    def rule(e, node):
        e.add(onnx_op, [e.input(node, "x"), e.input(node, "y")], e.outputs(node))
    return rule


def softmax(onnx_op: str) -> Rule:
    """Softmax / LogSoftmax of the op's one input over its `axis` attribute."""
    def rule(e, node):
        (key,) = node.inputs
        e.add(onnx_op, [e.input(node, key)], e.outputs(node),
              axis=int(node.attrs.get("axis", -1)))
    return rule


def reduction(onnx_op: str) -> Rule:
    """A reduction over the `axis` attribute (a tuple) as ONNX's Reduce* `onnx_op`."""
    def rule(e, node):
        axes = tuple(node.attrs["axis"])
        x = e.input(node, "x")
        if not axes:  # nothing reduced
            e.add("Identity", [x], e.outputs(node))
            return
        e.reduce(onnx_op, x, axes, bool(node.attrs.get("keepdims", False)), e.outputs(node))
    return rule


def arg(onnx_op: str) -> Rule:
    """ArgMax / ArgMin: ONNX's int64 positions cast to the op's output type."""
    def rule(e, node):
        found = e.add1(onnx_op, [e.input(node, "x")], axis=int(node.attrs["axis"]),
                       keepdims=0)
        e.add("Cast", [found], e.outputs(node), to=e.dtype_code(node.outputs[0].dtype))
    return rule


def filled_like(value) -> Rule:
    """ZerosLike / OnesLike: `value` in the shape of input x, known when the graph runs."""
    def rule(e, node):
        dt = node.outputs[0].dtype.name
        shape = e.add1("Shape", [e.input(node, "x")])
        e.add("ConstantOfShape", [shape], e.outputs(node), value=np.full((1,), value, dt))
    return rule


def filled(value) -> Rule:
    """Zeros / Ones of a shape attribute (ints, or Dims known when the graph runs)."""
    def rule(e, node):
        dt = node.outputs[0].dtype.name
        e.add("ConstantOfShape", [e.ints(node.attrs["shape"])], e.outputs(node),
              value=np.full((1,), value, dt))
    return rule


def unsupported(e, node, what: str):
    """Raise: `node` is of a form its op's rule does not lower (`what` says which)."""
    raise NotImplementedError(f"onnx.export({e.fn_name}): {node.op} with {what} (node "
                              f"{node.name}) has no ONNX lowering yet")


def swap_last(e, x: str, rank: int) -> str:
    """`x` with its last two axes swapped (a matrix transposed)."""
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return e.add1("Transpose", [x], perm=perm)


def scalar_int(e, d) -> str:
    """An int64 scalar of a size (an int, or a `Dim` known when the graph runs)."""
    if type(d) is int:
        return e.const(np.asarray(d, np.int64))
    return e.squeeze(e.ints([d]), [0])


# ---------------------------------------------------------------- convolution and pooling

_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def spatial(node, key: str) -> list:
    """The 2 spatial entries of a 4-entry NHWC/NCHW attribute (or a 2-entry one)."""
    v = [int(d) for d in node.attrs[key]]
    if len(v) == 4:
        return v[2:] if node.attrs.get("data_format", "NHWC") == "NCHW" else v[1:3]
    return v


def auto_pad(e, node) -> str:
    """ONNX's auto_pad of the node's TensorFlow `padding` attribute."""
    padding = node.attrs.get("padding", "VALID")
    if padding == "SAME":
        return "SAME_UPPER"  # TensorFlow puts the odd padding element at the end
    if padding == "VALID":
        return "VALID"
    return unsupported(e, node, f"padding {padding!r}")


def nchw_wrap(e, node, x: str, build) -> None:
    """Run `build(x_nchw, outputs) -> y_nchw`, transposing around it for NHWC data."""
    outs = e.outputs(node)
    if node.attrs.get("data_format", "NHWC") == "NCHW":
        build(x, outs)
        return
    y = build(e.add1("Transpose", [x], perm=_TO_NCHW), None)
    e.add("Transpose", [y], outs, perm=_TO_NHWC)


def pool(onnx_op: str) -> Rule:
    """MaxPool / AvgPool as ONNX's `onnx_op` (NCHW), over the ksize and strides attributes."""
    def rule(e, node):
        attrs = dict(kernel_shape=spatial(node, "ksize"), strides=spatial(node, "strides"),
                     auto_pad=auto_pad(e, node))
        nchw_wrap(e, node, e.input(node, "x"),
                  lambda x, outs: e.add(onnx_op, [x], outs, **attrs)[0])
    return rule
