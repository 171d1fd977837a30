"""Convolution rules of forward and backward graphs, as TensorFlow's remapper fuses them
(rule tables for function/rewrite.py; NHWC, ungrouped or depthwise, equal to rounding):

- conv2d(x, w) + bias (Add either way round, or BiasAdd, of a vector over the channels)
  -> FusedConv2D; then act(FusedConv2D) -> FusedConv2D with `act` for any unary
  elementwise op with no attributes that keeps the dtype (ops/conv.py);
- any other BiasAdd over the last axis -> Add (its kernel is `value + bias`, the same
  bits): a Conv1D's (a reshape stands between it and the convolution), a transposed
  convolution's, a grouped one's then join their activation's fused elementwise region
  instead of running as an op of their own;
- Conv2DBackpropFilter(x, dy) and the sum of dy over its images and pixels (the bias
  gradient) -> one Conv2DBackpropFilterWithBias, made at the first of the two;
- mask(MaxPoolGrad(y, g), y) -> MaxPoolGrad(y, mask(g, MaxPool(y))) for an activation
  gradient that masks dy by a predicate of the activation's output y (ReLU's): the pooling
  gradient puts each g at its window's maximum, where y equals the pooled value, so the
  mask after it equals the mask of g by the pooled values before it (exact, with ties and
  NaN), on a quarter of the elements for 2x2 windows. An average pooling's gradient
  spreads each g over its window, whose elements the mask tells apart: no such rule.
"""
from __future__ import annotations

from ...ops.conv import fused_activation
from ..rewrite import node_of, Pat, PatternMatcher
from .facts import output_mask_gradient, unary_elementwise

_CONV_ATTRS = ("strides", "padding", "dilations", "data_format", "groups")


def _static_nhwc(node) -> bool:
    """An ungrouped or depthwise (one input channel per group) NHWC convolution of real
    rank-4 operands (Conv2D or its filter gradient), with no run-time dims."""
    x, w = node.inputs["x"], node.inputs.get("filters", node.inputs.get("dy"))
    groups = node.attrs["groups"]
    return (not node.dims and node.attrs["data_format"] == "NHWC"
            and (groups == 1 or groups is not None and x._shape[-1] == groups)
            and len(x._shape) == 4 and len(w._shape) == 4
            and x.dtype.is_floating and not x.dtype.is_complex)


def _fuse_bias(rw, node, y, bias):
    """conv2d(x, w) + bias -> FusedConv2D(x, w, bias) with no activation."""
    f = y._shape[-1]
    if (len(bias._shape) != 1 or f is None or bias._shape[0] != f or bias.dtype is not y.dtype
            or tuple(node.out._shape) != tuple(y._shape)):
        return None
    conv = node_of(y)
    attrs = {k: conv.attrs[k] for k in _CONV_ATTRS}
    attrs["activation"] = ""
    return rw.emit("FusedConv2D", {"x": conv.inputs["x"], "filters": conv.inputs["filters"],
                                   "bias": bias}, attrs, name=node.name, site=node.site)


def _fuse_activation(rw, node, z):
    """act(FusedConv2D(...)) -> FusedConv2D(..., activation=act)."""
    if node.attrs or not fused_activation(node.op, z._shape, z.dtype):
        return None
    fused = node_of(z)
    return rw.emit("FusedConv2D", dict(fused.inputs), {**fused.attrs, "activation": node.op},
                   name=node.name, site=node.site)


_CONV = Pat("Conv2D", name="y", once=True, where=_static_nhwc)
_BIAS = Pat(name="bias")
_UNACTIVATED = Pat("FusedConv2D", name="z", once=True,
                   where=lambda n: n.attrs["activation"] == "")


def _bias_as_add(rw, node, value, bias):
    """BiasAdd(value, bias) over the last axis -> Add(value, bias): NumPy broadcasting
    adds a [C] bias along the last axis as BiasAdd does."""
    if len(bias._shape) != 1 or bias.dtype is not value.dtype:
        return None
    return rw.emit("Add", {"x": value, "y": bias}, {}, name=node.name, site=node.site)


# ------------------------------------------------------------------ bias gradients
def _full_sum_of(node, dy) -> bool:
    """Whether `node` (of the graph rewritten) sums `dy` over its images and pixels."""
    axis = node.attrs.get("axis") if node.op == "Sum" else None
    return (not node.stateful and axis is not None and not node.attrs.get("keepdims")
            and sorted(a % 4 for a in axis) == [0, 1, 2] and node.inputs["x"] is dy
            and node.outputs[0].dtype is dy.dtype)


def _bias_pairs(rw) -> dict:
    """id(first node) -> (Conv2DBackpropFilter, Sum) of the graph rewritten, for each filter
    gradient whose dy is also summed over its images and pixels."""
    pairs = rw.memo.get("bias_grads")
    if pairs is None:
        pairs = rw.memo["bias_grads"] = {}
        position = {id(n): k for k, n in enumerate(rw.walk)}
        sums: dict = {}
        for n in rw.walk:
            if n.op == "Sum":
                sums.setdefault(n.inputs["x"].id, []).append(n)
        for n in rw.walk:
            if n.op != "Conv2DBackpropFilter" or n.stateful or not _static_nhwc(n):
                continue
            dy = n.inputs["dy"]
            for other in sums.get(dy.id, ()):
                if _full_sum_of(other, dy):
                    first = n if position[id(n)] < position[id(other)] else other
                    pairs[id(first)] = (n, other)
                    break
    return pairs


def _fuse_bias_gradient(rw, node):
    """At the first of a filter gradient and its bias gradient: both, in one op, when the
    filter gradient's input is made by then."""
    pair = _bias_pairs(rw).get(id(node.source)) if node.source is not None else None
    if pair is None:
        return None
    filt, total = pair
    x, dy = (rw.env.get(filt.inputs[k].id) for k in ("x", "dy"))
    if x is None or dy is None:
        return None
    dw, db = rw.emit("Conv2DBackpropFilterWithBias", {"x": x, "dy": dy}, dict(filt.attrs),
                     name=filt.name, site=filt.site)
    later, mine = (total, dw) if filt is node.source else (filt, db)
    rw.provide(later, [db] if later is total else [dw])
    return [mine]


# ------------------------------------------------------------------ pooling gradients
def _mask_before_pooling(rw, node, g, y):
    """mask(MaxPoolGrad(y, g), y) -> MaxPoolGrad(y, mask(g, MaxPool(y))), where y's
    MaxPool (same windows) is in the graph already."""
    grad = node_of(node.inputs["dy"])
    pooled = rw.existing("MaxPool", {"x": y}, grad.attrs)
    if pooled is None or pooled[0].dtype is not y.dtype or node.attrs:
        return None
    masked = rw.emit(node.op, {"dy": g, "y": pooled[0]}, {}, name=f"{node.name}/pooled",
                     site=node.site)[0]
    return rw.emit("MaxPoolGrad", {"x": y, "dy": masked}, dict(grad.attrs), name=grad.name,
                   site=grad.site)


CONVOLUTIONS = PatternMatcher([
    (Pat(("Add", "AddV2"), src={"x": _CONV, "y": _BIAS}, commute=True), _fuse_bias,
     "convolutions"),
    (Pat("BiasAdd", where=lambda n: n.attrs.get("data_format") in (None, "NHWC"),
         src={"value": _CONV, "bias": _BIAS}), _fuse_bias, "convolutions"),
    (Pat("BiasAdd", where=lambda n: n.attrs.get("data_format") in (None, "NHWC"),
         src={"value": Pat(name="value"), "bias": Pat(name="bias")}), _bias_as_add),
    (Pat(unary_elementwise, src={"x": _UNACTIVATED}), _fuse_activation),
    (Pat(("Conv2DBackpropFilter", "Sum")), _fuse_bias_gradient, "convolutions"),
    (Pat(output_mask_gradient, src={"dy": Pat("MaxPoolGrad", once=True, src={
        "x": Pat(name="y"), "dy": Pat(name="g")}), "y": Pat(name="y")}),
     _mask_before_pooling, "convolutions"),
])
