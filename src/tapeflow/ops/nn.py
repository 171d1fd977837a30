"""Neural-network ops: activations, softmax, cross-entropies, normalization, bias_add.

Hot-path ops (relu, softmax, log_softmax, bias_add, the cross-entropies) have fused kernels
whose gradients are single cheap kernels too (ReluGrad, SoftmaxGrad, ...); those gradient
ops carry their own rules so every derivative order works. The rest are composites.
"""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError, NoBatchingRule
from .._core.memory import scalar_constant
from .._core.registry import Pointwise
from .._core.shape import broadcast_shapes, compatible
from .._core.tensor import Tensor
from . import conv
from ._args import float_arg, normalize_axes, normalize_axis, to_tensor
from . import _onnx
from ._define import composite, defop, derived, elementwise, passthrough, same_shape
from ._tangents import align_tangent, batch_dims
from ._batching import batch_elementwise, batch_shift_axis, broadcast_batch
from .array import concat, expand_dims, squeeze
from .indexing import gather, where
from .math import (abs as _abs, cast, erfc, exp, log1p, negative, rsqrt, squared_difference,
                   tanh)
from .math import sigmoid, softplus  # noqa: F401  (tf.nn re-exports them)
from .math import (equal, greater, is_finite, less, log, logical_and, maximum,
                   not_equal, square)  # (issue 31's ops)
from .array import pad, reshape, stack, transpose
from .creation import range as _range
from .._core.shape import dims_of, dims_product
from .reduction import clip_by_norm, reduce_mean, reduce_sum

__all__ = [
    "relu", "relu6", "elu", "selu", "gelu", "leaky_relu", "silu", "swish", "softmax",
    "log_softmax", "sigmoid", "softplus", "bias_add", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
    "l2_loss", "moments", "batch_normalization", "embedding_lookup",
]

_FLOATS = frozenset(d for d in _dt.ALL if d is not None and d.is_floating)
_REALS = _FLOATS | frozenset(d for d in _dt.ALL if d is not None and d.is_integer)
_INDICES = frozenset((_dt.int32, _dt.int64))


# --------------------------------------------------------------------------- helpers


def _operand(op: str, value, arg: str, kinds=_FLOATS, what="a floating-point tensor",
             dtype_hint=None) -> Tensor:
    t = value if type(value) is Tensor else to_tensor(value, dtype_hint, op, arg)
    if t.dtype not in kinds:
        raise InvalidArgumentError(f"{op}: argument {arg!r} must be {what}, got {describe(t)}")
    return t


def _loss_operands(op: str, labels, logits) -> tuple[Tensor, Tensor]:
    """(labels, logits): floating, one dtype (Python labels adopt the logits' dtype)."""
    logits = _operand(op, logits, "logits")
    labels = labels if type(labels) is Tensor else to_tensor(labels, logits.dtype, op,
                                                               "labels")
    if labels.dtype is not logits.dtype:
        raise InvalidArgumentError(
            f"{op}: labels and logits must have the same dtype, got labels: "
            f"{describe(labels)} and logits: {describe(logits)}; cast one with tf.cast")
    return labels, logits


def _same_shapes(op: str, labels: Tensor, logits: Tensor) -> None:
    if labels._shape != logits._shape and not compatible(labels._shape, logits._shape):
        raise InvalidArgumentError(
            f"{op}: labels and logits must have the same shape, got labels: "
            f"{describe(labels)} and logits: {describe(logits)}")


def _compatible(op: str, a, b, what: str) -> tuple:
    """Two static shapes that must agree (None dims match anything); the merged shape."""
    a, b = tuple(a), tuple(b)
    if len(a) != len(b) or any(x is not None and y is not None and x != y
                               for x, y in zip(a, b)):
        raise InvalidArgumentError(f"{op}: {what} must have the same shape, got "
                                   f"{list(a)} and {list(b)}")
    return tuple(x if x is not None else y for x, y in zip(a, b))


def _sum(x: Tensor, axis, keepdims: bool = False) -> Tensor:
    """reduce_sum for the rules, on the Sum primitive (issue #15: rules do not call other
    families' public ops). `axis` is an int, negative counting from the end of `x` itself
    (so a tangent's leading batch dims do not shift it), or a sorted tuple of non-negative
    axes: the forms reduce_sum normalises to."""
    if type(axis) is int:
        axis = (axis + x.ndim if axis < 0 else axis,)
    return prims.sum(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------- masked gradients
# ReluGrad-like ops: dy times a mask (or slope) read from y/x. They are linear in dy and
# piecewise constant in the other input, whose derivative is zero almost everywhere: no
# rule for it means no gradient path, which is exactly right. Each kernel is run by its
# one private function below, which the activation's rules and the op's own rules share.


def _relu_grad(dy, y):
    return run_kernel("ReluGrad", {"dy": dy, "y": y})


def _relu6_grad(dy, y):
    return run_kernel("Relu6Grad", {"dy": dy, "y": y})


def _leaky_relu_grad(dy, x, alpha):
    return run_kernel("LeakyReluGrad", {"dy": dy, "x": x}, {"alpha": alpha})


def _masked_grad_op(name: str, other: str, grad, pointwise: Pointwise) -> None:
    def vjp(d, m, **attrs):
        return grad(d, m, **attrs)

    def jvp(d, m, **attrs):  # separate function: `derived` labels each with its params
        return grad(d, m, **attrs)

    def shape(shapes, dtypes, attrs):
        if dtypes["dy"] is not dtypes[other]:
            raise InvalidArgumentError(f"{name}: dy and {other} must have the same dtype, got "
                                       f"{dtypes['dy'].name} and {dtypes[other].name}")
        return [(broadcast_shapes(name, shapes["dy"], shapes[other]), dtypes["dy"])]

    defop(name, ["dy", other], shape=shape,
          vjp={"dy": derived(["g", other], vjp)},
          jvp={"dy": derived(["t", other], jvp)}, pointwise=pointwise)


# (the expressions repeat the kernels' arithmetic: dy times the mask as a 0/1 float; the
# leaky slope (x > 0) * (1 - alpha) + alpha, each factor rounded to the dtype first)
_masked_grad_op("ReluGrad", "y", _relu_grad,
                Pointwise("{dy} * T({y} > T(0))", multi_pass=True))
_masked_grad_op("Relu6Grad", "y", _relu6_grad,
                Pointwise("{dy} * T(({y} > T(0)) & ({y} < T(6)))", multi_pass=True))
_masked_grad_op("LeakyReluGrad", "x", _leaky_relu_grad,
                Pointwise("{dy} * (T({x} > T(0)) * T(1.0 - {alpha}) + T({alpha}))",
                          attrs=("alpha",), multi_pass=True))


# --------------------------------------------------------------------------- activations


def relu(features, name=None) -> Tensor:
    """max(features, 0). Example: `tf.nn.relu([-1.0, 2.0])` -> [0., 2.]."""
    x = features if type(features) is Tensor else to_tensor(features, None, "relu", "features")
    if x.dtype not in _REALS:
        raise InvalidArgumentError(
            f"relu: argument 'features' must be a real tensor, got {describe(x)}")
    return run_kernel("Relu", {"x": x})


# numba's np.maximum(a, b) gives a where a == b, NumPy's b (x86): 0 first, so that
# relu(-0.0) is 0.0 fused as in the kernel's np.maximum(x, 0)
defop("Relu", ["x"], shape=same_shape,
      vjp={"x": lambda g, ans: _relu_grad(g, ans)},
      jvp={"x": lambda t, ans: _relu_grad(t, ans)}, batch=batch_elementwise,
      pointwise=Pointwise("np.maximum(T(0), {x})"), onnx=_onnx.unary("Relu"))


def relu6(features, name=None) -> Tensor:
    """min(max(features, 0), 6). Example: `tf.nn.relu6([-1.0, 7.0])` -> [0., 6.]."""
    x = _operand("relu6", features, "features", _REALS, "a real tensor")
    return run_kernel("Relu6", {"x": x})


def _onnx_relu6(e, node):
    dt = node.outputs[0].dtype.name
    e.add("Clip", [e.input(node, "x"), e.const(np.zeros((), dt)), e.const(np.full((), 6, dt))],
          e.outputs(node))


defop("Relu6", ["x"], shape=same_shape,
      vjp={"x": lambda g, ans: _relu6_grad(g, ans)},
      jvp={"x": lambda t, ans: _relu6_grad(t, ans)}, batch=batch_elementwise,
      # (np.clip keeps -0.0, as numba's np.maximum(x, 0) does)
      pointwise=Pointwise("np.minimum(np.maximum({x}, T(0)), T(6))"), onnx=_onnx_relu6)


def leaky_relu(features, alpha=0.2, name=None) -> Tensor:
    """features where positive, alpha * features elsewhere.

    Integer features are cast to float32 (as TensorFlow does).
    Example: `tf.nn.leaky_relu([-1.0, 2.0], alpha=0.1)` -> [-0.1, 2.].
    """
    x = _operand("leaky_relu", features, "features", _REALS, "a real tensor")
    float_arg("leaky_relu", alpha, "alpha")  # before the cast: a bad alpha changes nothing
    if x.dtype.is_integer:
        x = cast(x, _dt.float32)
    return run_kernel("LeakyRelu", {"x": x}, {"alpha": float_arg("leaky_relu", alpha, "alpha")})


def _onnx_leaky_relu(e, node):
    e.add("LeakyRelu", [e.input(node, "x")], e.outputs(node),
          alpha=float(node.attrs.get("alpha", 0.2)))


defop("LeakyRelu", ["x"], shape=same_shape,
      vjp={"x": lambda g, x, *, alpha: _leaky_relu_grad(g, x, alpha)},
      jvp={"x": lambda t, x, *, alpha: _leaky_relu_grad(t, x, alpha)}, batch=batch_elementwise,
      pointwise=Pointwise("np.maximum(T(0), {x}) + T({alpha}) * np.minimum(T(0), {x})",
                          attrs=("alpha",)), onnx=_onnx_leaky_relu)


def elu(features, name=None) -> Tensor:
    """features where positive, exp(features) - 1 elsewhere.

    Example: `tf.nn.elu([-1.0, 2.0])` -> [-0.632, 2.].
    """
    return run_kernel("Elu", {"x": _operand("elu", features, "features")})


# elu'(x) = 1 for x > 0 and exp(x) = elu(x) + 1 otherwise, i.e. 1 + min(ans, 0)
# (not ans - relu(ans) + 1, which is inf - inf at ans = inf). The Minimum primitive does not
# adapt a Python scalar (it would become float32): the 0 is the cached scalar in ans's dtype
# that tf.minimum itself would use.
defop("Elu", ["x"], shape=same_shape,
      **elementwise(lambda ans: prims.minimum(ans, scalar_constant(0.0, ans.dtype)) + 1.0),
      batch=batch_elementwise, onnx=_onnx.unary("Elu"),
      pointwise=Pointwise("np.expm1(np.minimum({x}, T(0))) + np.maximum({x}, T(0))",
                          multi_pass=True, vector_math=True))

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name=None) -> Tensor:
    """scale * elu-with-alpha: scale * x for x > 0, scale * alpha * (exp(x) - 1) otherwise.

    Example: `tf.nn.selu([1.0])` -> [1.0507].
    """
    x = _operand("selu", features, "features")
    # elu times a piecewise-constant factor (no gradient path through it), not a sum of
    # relu and elu terms, which is inf - inf at x = inf. Factor `scale` at 0: TF's slope there.
    lo = to_tensor(_SELU_SCALE * _SELU_ALPHA, x.dtype, "selu", "features")
    hi = to_tensor(_SELU_SCALE, x.dtype, "selu", "features")
    return elu(x) * where(x >= 0.0, hi, lo)


def gelu(features, approximate=False, name=None) -> Tensor:
    """Gaussian error linear unit: x * Phi(x) (tanh approximation with approximate=True).

    Example: `tf.nn.gelu([1.0])` -> [0.8413].
    """
    x = _operand("gelu", features, "features")
    if approximate:
        inner = (x + x * x * x * 0.044715) * 0.7978845608028654  # sqrt(2 / pi)
        return x * 0.5 * (tanh(inner) + 1.0)
    # erfc(-x / sqrt 2) keeps precision for very negative x (1 + erf would cancel)
    return x * 0.5 * erfc(x * -0.7071067811865476)


@composite("silu")
def silu(features, beta=1.0, name=None) -> Tensor:
    """x * sigmoid(beta * x) (also called swish). Example: `tf.nn.silu([0.0])` -> [0.]."""
    x = _operand("silu", features, "features")
    if type(beta) is float or type(beta) is int:
        return x * sigmoid(x) if beta == 1 else x * sigmoid(x * beta)
    b = _operand("silu", beta, "beta", dtype_hint=x.dtype)
    if b.dtype is not x.dtype:
        raise InvalidArgumentError(f"silu: beta must have the dtype of features, got beta: "
                                   f"{describe(b)} and features: {describe(x)}")
    return x * sigmoid(x * b)


swish = silu


# --------------------------------------------------------------------------- softmax


def _class_axis(op: str, x: Tensor, axis) -> int:
    nd = len(x._shape)
    if nd == 0:
        raise InvalidArgumentError(f"{op}: needs a tensor of rank >= 1, got {describe(x)}")
    if axis is None:
        return nd - 1
    return normalize_axis(op, axis, nd)


def softmax(logits, axis=None, name=None) -> Tensor:
    """exp(logits) / reduce_sum(exp(logits), axis), computed stably (axis: last by default).

    Example: `tf.nn.softmax([0.0, 0.0])` -> [0.5, 0.5].
    """
    x = logits if type(logits) is Tensor and logits.dtype in _FLOATS else \
        _operand("softmax", logits, "logits")
    axis = _class_axis("softmax", x, axis)
    if x._shape[axis] == 0:
        # nothing to normalize; the kernel's max needs an element. Identity's primitive, as
        # the cross-entropy rules call softmax and rules use no other family's ops (#15).
        return prims.identity(x)
    return run_kernel("Softmax", {"logits": x}, {"axis": axis})


def log_softmax(logits, axis=None, name=None) -> Tensor:
    """logits - log(reduce_sum(exp(logits), axis)), computed stably.

    Example: `tf.nn.log_softmax([0.0, 0.0])` -> [-0.693, -0.693].
    """
    x = logits if type(logits) is Tensor and logits.dtype in _FLOATS else \
        _operand("log_softmax", logits, "logits")
    axis = _class_axis("log_softmax", x, axis)
    if x._shape[axis] == 0:
        return prims.identity(x)  # as in softmax
    return run_kernel("LogSoftmax", {"logits": x}, {"axis": axis})


def _softmax_shape(name):
    def rule(shapes, dtypes, attrs):
        shape = shapes["logits"]
        if not 0 <= attrs["axis"] < len(shape):
            raise InvalidArgumentError(
                f"{name}: axis {attrs['axis']} is out of range for logits of shape {list(shape)}")
        return [(tuple(shape), dtypes["logits"])]
    return rule


def _grad_shape(name):
    def rule(shapes, dtypes, attrs):
        out = broadcast_shapes(name, shapes["dy"], shapes["y"])
        if not 0 <= attrs["axis"] < len(out):
            raise InvalidArgumentError(
                f"{name}: axis {attrs['axis']} is out of range for shape {list(out)}")
        return [(out, dtypes["dy"])]
    return rule


def _softmax_grad(dy, y, axis):
    return run_kernel("SoftmaxGrad", {"dy": dy, "y": y}, {"axis": axis})


def _log_softmax_grad(dy, y, axis):
    return run_kernel("LogSoftmaxGrad", {"dy": dy, "y": y}, {"axis": axis})


defop("Softmax", ["logits"], shape=_softmax_shape("Softmax"),
      vjp={"logits": lambda g, ans, *, axis: _softmax_grad(g, ans, axis)},
      # the softmax Jacobian is symmetric: J t is SoftmaxGrad(t) too
      jvp={"logits": lambda t, ans, *, axis: _softmax_grad(t, ans, axis + batch_dims(t, ans))},
      batch=batch_shift_axis, onnx=_onnx.softmax("Softmax"))

# J t = t - sum(softmax * t); a negative axis counts from the end, past any batch dims.
defop("LogSoftmax", ["logits"], shape=_softmax_shape("LogSoftmax"),
      vjp={"logits": lambda g, ans, *, axis: _log_softmax_grad(g, ans, axis)},
      jvp={"logits": lambda t, ans, *, axis: t - _sum(
          prims.exp(ans) * t, axis - ans.ndim, keepdims=True)}, batch=batch_shift_axis,
      onnx=_onnx.softmax("LogSoftmax"))


# SoftmaxGrad(dy, y) = y * (dy - sum(dy * y)) and LogSoftmaxGrad(dy, y) = dy - exp(y) * sum(dy):
# the softmax and log_softmax VJPs, linear in dy. `axis` counts in the output, whose rank is
# max(dy.ndim, y.ndim): a tangent is aligned under those axes before the op is applied again.


def _linear_in_dy_jvp(grad):
    def jvp(t, dy, y, *, axis):
        return grad(align_tangent(t, dy, max(dy.ndim, y.ndim)), y, axis + batch_dims(t, dy))
    return jvp


def _softmax_grad_vjp_y(g, dy, y, *, axis):
    s = _sum(dy * y, axis, keepdims=True)
    return g * (dy - s) - dy * _sum(g * y, axis, keepdims=True)


def _softmax_grad_jvp_y(t, dy, y, *, axis):
    r = max(dy.ndim, y.ndim)
    a, t = axis - r, align_tangent(t, y, r)  # negative axis: robust to the batch dims
    return t * (dy - _sum(dy * y, a, keepdims=True)) - y * _sum(dy * t, a, keepdims=True)


defop("SoftmaxGrad", ["dy", "y"], shape=_grad_shape("SoftmaxGrad"),
      vjp={"dy": lambda g, y, *, axis: _softmax_grad(g, y, axis), "y": _softmax_grad_vjp_y},
      jvp={"dy": _linear_in_dy_jvp(_softmax_grad), "y": _softmax_grad_jvp_y})


def _log_softmax_grad_vjp_y(g, dy, y, *, axis):
    return -(g * prims.exp(y) * _sum(dy, axis - max(dy.ndim, y.ndim), keepdims=True))


def _log_softmax_grad_jvp_y(t, dy, y, *, axis):
    r = max(dy.ndim, y.ndim)
    return -(align_tangent(t, y, r) * prims.exp(y) * _sum(dy, axis - r, keepdims=True))


defop("LogSoftmaxGrad", ["dy", "y"], shape=_grad_shape("LogSoftmaxGrad"),
      vjp={"dy": lambda g, y, *, axis: g - _sum(g * prims.exp(y), axis, keepdims=True),
           "y": _log_softmax_grad_vjp_y},
      jvp={"dy": _linear_in_dy_jvp(_log_softmax_grad), "y": _log_softmax_grad_jvp_y})


# --------------------------------------------------------------------------- bias_add


def _data_format(fmt) -> str:
    if fmt is None:
        return "NHWC"
    if isinstance(fmt, str):
        if fmt.startswith("NC"):
            return "NCHW"
        if fmt.startswith("N") and fmt.endswith("C"):
            return "NHWC"
    raise InvalidArgumentError(
        f"bias_add: data_format must be None or of the form 'N...C' or 'NC...' (e.g. 'NHWC', "
        f"'NCHW'), got {fmt!r}")


def bias_add(value, bias, data_format=None, name=None) -> Tensor:
    """value + bias along the channel axis (last for 'NHWC'/None, axis 1 for 'NCHW').

    Example: `tf.nn.bias_add(tf.zeros([2, 3]), [1.0, 2.0, 3.0])` -> rows [1., 2., 3.].
    """
    v = value if type(value) is Tensor else to_tensor(value, None, "bias_add", "value")
    b = bias if type(bias) is Tensor else to_tensor(bias, v.dtype, "bias_add", "bias")
    fmt = "NHWC" if data_format is None else _data_format(data_format)
    vs, bs = v._shape, b._shape
    channels = vs[1 if fmt == "NCHW" else -1] if len(vs) >= 2 else None
    if len(vs) < 2 or len(bs) != 1 or bs[0] != channels or v.dtype is not b.dtype \
            or v.dtype.is_bool:
        _bias_add_check("bias_add", vs, bs, v.dtype, b.dtype, fmt)
    return run_kernel("BiasAdd", {"value": v, "bias": b}, {"data_format": fmt})


def _bias_add_check(op, vs, bs, vdt, bdt, fmt):
    if vdt is not bdt:
        raise InvalidArgumentError(f"{op}: value and bias must have the same dtype, got value: "
                                   f"{vdt.name}{list(vs)} and bias: {bdt.name}{list(bs)}")
    if vdt.is_bool:
        raise InvalidArgumentError(f"{op}: value must be numeric, got {vdt.name}{list(vs)}")
    if len(vs) < 2:
        raise InvalidArgumentError(
            f"{op}: value must have rank >= 2, got {vdt.name}{list(vs)}")
    if len(bs) != 1:
        raise InvalidArgumentError(f"{op}: bias must be 1-D, got {bdt.name}{list(bs)}")
    c = vs[1 if fmt == "NCHW" else -1]
    if c is not None and bs[0] is not None and c != bs[0]:
        raise InvalidArgumentError(
            f"{op}: bias has {bs[0]} elements but value {vdt.name}{list(vs)} has {c} channels "
            f"(data_format {fmt}: channel axis {1 if fmt == 'NCHW' else -1})")


def _bias_add_shape(shapes, dtypes, attrs):
    _bias_add_check("BiasAdd", shapes["value"], shapes["bias"], dtypes["value"],
                    dtypes["bias"], attrs["data_format"])
    return [(tuple(shapes["value"]), dtypes["value"])]


def _bias_add_vjp_bias(g, *, data_format):
    channel = 1 if data_format == "NCHW" else g.ndim - 1
    return _sum(g, tuple(i for i in range(g.ndim) if i != channel))


def _bias_add_jvp_bias(t, ans, *, data_format):
    # The engine broadcasts a contribution to the output's (batched) shape, aligning a
    # batched (B, C) after its batch axis, so (C,) and (B, C) need only NCHW's trailing
    # unit axes: (C, 1, ...) and (B, C, 1, ...).
    for _ in range(ans.ndim - 2 if data_format == "NCHW" else 0):
        t = prims.expand_dims(t, axis=(t.ndim,))
    return t


def _onnx_bias_add(e, node):
    value, bias = e.input(node, "value"), e.input(node, "bias")
    rank = len(node.inputs["value"]._shape)
    if node.attrs.get("data_format", "NHWC").startswith("NC") and rank > 2:
        bias = e.unsqueeze(bias, list(range(1, rank - 1)))  # (C,) -> (C, 1, 1)
    e.add("Add", [value, bias], e.outputs(node))


defop("BiasAdd", ["value", "bias"], shape=_bias_add_shape,
      vjp={"value": passthrough, "bias": _bias_add_vjp_bias},
      jvp={"value": lambda t: t, "bias": _bias_add_jvp_bias}, onnx=_onnx_bias_add)


# --------------------------------------------------------------------------- cross-entropies
# The fused kernels return [loss, backprop] with backprop = d loss / d logits
# (softmax * sum(labels) - labels, i.e. softmax - labels for distributions): the first-order
# gradient is then one multiply. The backprop output is itself differentiable (its
# cotangent reaches the rules at second order), so higher orders stay exact.


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None) -> Tensor:
    """-sum(labels * log_softmax(logits), axis); differentiable in labels and logits.

    Example:
        >>> tf.nn.softmax_cross_entropy_with_logits([[0.0, 1.0]], [[0.0, 0.0]]).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "softmax_cross_entropy_with_logits"
    labels, logits = _loss_operands(op, labels, logits)
    _same_shapes(op, labels, logits)
    axis = _class_axis(op, logits, axis)
    if logits._shape[axis] == 0:  # no classes: a loss of 0 (the fused kernel needs a class)
        return -reduce_sum(labels * log_softmax(logits, axis), axis)
    return run_kernel("SoftmaxCrossEntropyWithLogits", {"labels": labels, "logits": logits},
                      {"axis": axis})[0]


def _xent_shape(shapes, dtypes, attrs):
    name = "SoftmaxCrossEntropyWithLogits"
    if dtypes["labels"] is not dtypes["logits"]:
        raise InvalidArgumentError(f"{name}: labels and logits must have the same dtype, got "
                                   f"{dtypes['labels'].name} and {dtypes['logits'].name}")
    shape = _compatible(name, shapes["labels"], shapes["logits"], "labels and logits")
    axis = attrs["axis"]
    if not 0 <= axis < len(shape):
        raise InvalidArgumentError(f"{name}: axis {axis} is out of range for logits of shape "
                                   f"{list(shape)}")
    dt = dtypes["logits"]
    return [(shape[:axis] + shape[axis + 1:], dt), (shape, dt)]


def _xent_logits_grad(g, backprop, logits, axis, total):
    """Logits' cotangent; `total` = sum(labels) (keepdims), None when it is 1 (sparse)."""
    g_loss, g_backprop = g
    out = None if g_loss is None else prims.expand_dims(g_loss, axis=(axis,)) * backprop
    if g_backprop is not None:  # second order: d backprop / d logits = total * d softmax
        if total is not None:
            g_backprop = g_backprop * total
        extra = _softmax_grad(g_backprop, softmax(logits, axis), axis)
        out = extra if out is None else out + extra
    return out


def _xent_vjp_logits(g, ans, labels, logits, *, axis):
    total = _sum(labels, axis, keepdims=True) if g[1] is not None else None
    return _xent_logits_grad(g, ans[1], logits, axis, total)


def _xent_vjp_labels(g, logits, *, axis):
    g_loss, g_backprop = g
    out = None if g_loss is None else \
        -(prims.expand_dims(g_loss, axis=(axis,)) * log_softmax(logits, axis))
    if g_backprop is not None:  # backprop = softmax * sum(labels) - labels
        sm = softmax(logits, axis)
        extra = _sum(g_backprop * sm, axis, keepdims=True) - g_backprop
        out = extra if out is None else out + extra
    return out


def _xent_logits_jvp(t, backprop, logits, axis, total):
    a = axis - logits.ndim  # negative: robust to a tangent's batch dims
    t_backprop = _softmax_grad(t, softmax(logits, axis), axis + batch_dims(t, logits))
    return [_sum(backprop * t, a), t_backprop if total is None else t_backprop * total]


def _xent_jvp_logits(t, ans, labels, logits, *, axis):
    return _xent_logits_jvp(t, ans[1], logits, axis, _sum(labels, axis, keepdims=True))


def _xent_jvp_labels(t, logits, *, axis):
    a = axis - logits.ndim
    t_backprop = softmax(logits, axis) * _sum(t, a, keepdims=True) - t
    return [-_sum(log_softmax(logits, axis) * t, a), t_backprop]


defop("SoftmaxCrossEntropyWithLogits", ["labels", "logits"], num_outputs=2,
      shape=_xent_shape,
      vjp={"labels": _xent_vjp_labels, "logits": _xent_vjp_logits},
      jvp={"labels": _xent_jvp_labels, "logits": _xent_jvp_logits})


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None) -> Tensor:
    """-log_softmax(logits)[..., labels]: cross-entropy against integer class labels.

    `labels` (int32/int64) has logits' shape without the last (class) axis; a label
    outside [0, num_classes) raises InvalidArgumentError.
    Example:
        >>> tf.nn.sparse_softmax_cross_entropy_with_logits([1], [[0.0, 0.0]]).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "sparse_softmax_cross_entropy_with_logits"
    x = logits if type(logits) is Tensor and logits.dtype in _FLOATS else \
        _operand(op, logits, "logits")
    y = labels if type(labels) is Tensor else to_tensor(labels, None, op, "labels")
    if y.dtype not in _INDICES or not x._shape or y._shape != x._shape[:-1] \
            or x._shape[-1] == 0:
        _sparse_check(op, y._shape, x._shape, y.dtype)
    return run_kernel("SparseSoftmaxCrossEntropyWithLogits", {"labels": y, "logits": x})[0]


def _sparse_check(op, ls, xs, ldt):
    if ldt not in _INDICES:
        raise InvalidArgumentError(f"{op}: labels must be int32 or int64 class indices, got "
                                   f"{ldt.name}{list(ls)}")
    if len(xs) == 0:
        raise InvalidArgumentError(f"{op}: logits must have rank >= 1, got shape {list(xs)}")
    try:
        _compatible(op, ls, xs[:-1], "labels and logits without its last axis")
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"{op}: labels must have logits' shape without the last (class) axis: logits "
            f"{list(xs)} needs labels {list(xs[:-1])}, got {ldt.name}{list(ls)}") from None
    if xs[-1] == 0:
        raise InvalidArgumentError(f"{op}: logits {list(xs)} have no classes (last axis is 0)")


def _sparse_shape(shapes, dtypes, attrs):
    xs, ls = tuple(shapes["logits"]), tuple(shapes["labels"])
    _sparse_check("SparseSoftmaxCrossEntropyWithLogits", ls, xs, dtypes["labels"])
    dt = dtypes["logits"]
    if not dt.is_floating:
        raise InvalidArgumentError(f"SparseSoftmaxCrossEntropyWithLogits: logits must be "
                                   f"floating-point, got {dt.name}{list(xs)}")
    return [(_compatible("SparseSoftmaxCrossEntropyWithLogits", ls, xs[:-1], "labels"), dt),
            (xs, dt)]


def _sparse_vjp_logits(g, ans, logits):
    return _xent_logits_grad(g, ans[1], logits, logits.ndim - 1, None)


def _sparse_jvp_logits(t, ans, logits):
    return _xent_logits_jvp(t, ans[1], logits, logits.ndim - 1, None)


defop("SparseSoftmaxCrossEntropyWithLogits", ["labels", "logits"], num_outputs=2,
      shape=_sparse_shape, vjp={"logits": _sparse_vjp_logits},
      jvp={"logits": _sparse_jvp_logits})


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None) -> Tensor:
    """Elementwise logistic loss max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and
    labels z (stable for large |x|).

    Example: `tf.nn.sigmoid_cross_entropy_with_logits([1.0], [0.0])` -> [0.6931].
    """
    op = "sigmoid_cross_entropy_with_logits"
    labels, logits = _loss_operands(op, labels, logits)
    _same_shapes(op, labels, logits)
    return run_kernel("SigmoidCrossEntropyWithLogits", {"labels": labels, "logits": logits})


def _sigmoid_xent_shape(shapes, dtypes, attrs):
    name = "SigmoidCrossEntropyWithLogits"
    if dtypes["labels"] is not dtypes["logits"]:
        raise InvalidArgumentError(f"{name}: labels and logits must have the same dtype, got "
                                   f"{dtypes['labels'].name} and {dtypes['logits'].name}")
    return [(_compatible(name, shapes["labels"], shapes["logits"], "labels and logits"),
             dtypes["logits"])]


# d/dz = -x and d/dx = sigmoid(x) - z for logits x and labels z.
defop("SigmoidCrossEntropyWithLogits", ["labels", "logits"], shape=_sigmoid_xent_shape,
      vjp={"labels": lambda g, logits: -(g * logits),
           "logits": lambda g, labels, logits: g * (prims.sigmoid(logits) - labels)},
      jvp={"labels": lambda t, logits: -(t * logits),
           "logits": lambda t, labels, logits: t * (prims.sigmoid(logits) - labels)},
      pointwise=Pointwise("(np.log1p(np.exp(-np.abs({logits}))) + np.maximum({logits}, T(0)))"
                          " - {logits} * {labels}", multi_pass=True, vector_math=True))


# --------------------------------------------------------------------------- l2_loss, moments


def l2_loss(t, name=None) -> Tensor:
    """sum(t ** 2) / 2 as a scalar. Example: `tf.nn.l2_loss([1.0, 2.0])` -> 2.5."""
    return run_kernel("L2Loss", {"x": _operand("l2_loss", t, "t")})


def _l2_loss_batch(op, inputs, attrs, batched, size):
    """The batching rule: one loss per element, summed over the axes after the batch axis."""
    x = inputs["x"]
    return _sum(x * x, tuple(range(1, x.ndim))) * 0.5


defop("L2Loss", ["x"], shape=lambda shapes, dtypes, attrs: [((), dtypes["x"])],
      vjp={"x": lambda g, x: g * x},
      jvp={"x": lambda t, x: _sum(x * t, tuple(range(batch_dims(t, x), t.ndim)))},
      batch=_l2_loss_batch)


def moments(x, axes, shift=None, keepdims=False, name=None) -> tuple[Tensor, Tensor]:
    """(mean, variance) of `x` over `axes`; `shift` is accepted and unused (as in TF 2).

    Example: `tf.nn.moments(tf.constant([1.0, 3.0]), axes=[0])` -> (2.0, 1.0).
    """
    x = _operand("moments", x, "x")
    axes = normalize_axes("moments", axes, x.ndim)
    mean = reduce_mean(x, axes, keepdims=True)
    # no stop_gradient on the mean (TF puts one there): it changes second derivatives
    variance = reduce_mean(squared_difference(x, mean), axes, keepdims=keepdims)
    return (mean if keepdims else squeeze(mean, axes)), variance


@composite("batch_normalization")
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon,
                        name=None) -> Tensor:
    """scale * (x - mean) / sqrt(variance + variance_epsilon) + offset (offset and scale
    may be None).

    Example: `tf.nn.batch_normalization(x, m, v, None, None, 1e-3)`.
    """
    op = "batch_normalization"
    x = _operand(op, x, "x")
    args = {}
    for arg, v in (("mean", mean), ("variance", variance), ("offset", offset),
                   ("scale", scale)):
        if v is not None:
            args[arg] = _operand(op, v, arg, dtype_hint=x.dtype)
            if args[arg].dtype is not x.dtype:
                raise InvalidArgumentError(
                    f"{op}: {arg} must have x's dtype, got {arg}: {describe(args[arg])} and "
                    f"x: {describe(x)}")
        elif arg in ("mean", "variance"):
            raise InvalidArgumentError(f"{op}: {arg} must be given, got None")
    for arg, v in args.items():
        broadcast_shapes(f"{op}: {arg} against x", x._shape, v._shape)
    if not (type(variance_epsilon) is float or type(variance_epsilon) is int):
        variance_epsilon = _operand(op, variance_epsilon, "variance_epsilon", dtype_hint=x.dtype)
        if variance_epsilon.dtype is not x.dtype or variance_epsilon.ndim:
            raise InvalidArgumentError(f"{op}: variance_epsilon must be a scalar of x's dtype, "
                                       f"got {describe(variance_epsilon)} for x: {describe(x)}")
    inv = rsqrt(args["variance"] + variance_epsilon)
    if "scale" in args:
        inv = inv * args["scale"]
    shift = -(args["mean"] * inv)
    if "offset" in args:
        shift = args["offset"] + shift
    return x * inv + shift


# --------------------------------------------------------------------------- fused batch norm
# Training-mode batch normalization as one op (TensorFlow's FusedBatchNormV3), its gradient
# as one op (FusedBatchNormGradV3): each one kernel of a few passes over the data, in place
# of moments plus a dozen elementwise ops forward and backward. `axis` is the one feature
# axis (non-negative); the statistics are taken over every other axis. The rules below are
# written over primitives, so every derivative order works; mean and variance are outputs
# with gradients of their own (Keras moves its moving statistics with them, under
# stop_gradient, so their cotangents are usually None).


def _bn_reduced(axis: int, rank: int, lead: int = 0) -> tuple:
    """The statistics' axes of a rank-`rank` operand with `lead` batch dims in front."""
    return tuple(i + lead for i in range(rank) if i != axis)


def _bn_param(v: Tensor, axis: int, rank: int) -> Tensor:
    """A per-feature [..., C] value (batch dims in front) reshaped to broadcast at `axis`
    of a rank-`rank` operand: [..., 1 (axes before), C, 1 (axes after)]."""
    s = v._shape
    return prims.reshape(v, shape=_known(s[:-1] + (1,) * axis + s[-1:]
                                         + (1,) * (rank - 1 - axis)))


def _bn_vector(v: Tensor, axis: int, rank: int) -> Tensor:
    """Statistics kept with keepdims ([..., 1, C, 1]) back to per-feature [..., C]."""
    s = v._shape
    lead = len(s) - rank
    return prims.reshape(v, shape=_known(s[:lead] + (s[lead + axis],)))


def _known(shape: tuple) -> tuple:
    """A reshape target with its one dim unknown while tracing (the features) as -1."""
    return tuple(-1 if d is None else d for d in shape) if shape.count(None) == 1 else shape


def _bn_count(x: Tensor, axis: int):
    """Elements per feature: a Python int when x's shape is known, else a keepdims tensor."""
    reduced = [d for i, d in enumerate(x._shape) if i != axis]
    if None not in reduced:
        return int(np.prod(reduced, dtype=np.int64))
    return prims.sum(prims.ones_like(x), axis=_bn_reduced(axis, x.ndim), keepdims=True)


def _fused_bn_shape(shapes, dtypes, attrs):
    name, xs, dt, axis = "FusedBatchNorm", shapes["x"], dtypes["x"], attrs["axis"]
    if dt not in (_dt.float32, _dt.float64):
        raise InvalidArgumentError(f"{name}: x must be float32 or float64, got {dt.name}")
    if not 0 <= axis < len(xs):
        raise InvalidArgumentError(f"{name}: axis {axis} is out of range for x of shape "
                                   f"{list(xs)}")
    for arg in ("scale", "offset"):
        if dtypes[arg] is not dt:
            raise InvalidArgumentError(f"{name}: {arg} must have x's dtype {dt.name}, got "
                                       f"{dtypes[arg].name}")
        _compatible(name, shapes[arg], (xs[axis],), f"{arg} and x's axis {axis}")
    c = (xs[axis] if xs[axis] is not None else shapes["scale"][0],)
    return [(xs, dt), (c, dt), (c, dt)]


def _fused_bn_grad_shape(shapes, dtypes, attrs):
    name, xs, dt, axis = "FusedBatchNormGrad", shapes["x"], dtypes["x"], attrs["axis"]
    _compatible(name, shapes["dy"], xs, "dy and x")
    for arg in ("dy", "scale", "mean", "variance"):
        if dtypes[arg] is not dt:
            raise InvalidArgumentError(f"{name}: {arg} must have x's dtype {dt.name}, got "
                                       f"{dtypes[arg].name}")
    if not 0 <= axis < len(xs):
        raise InvalidArgumentError(f"{name}: axis {axis} is out of range for x of shape "
                                   f"{list(xs)}")
    for arg in ("scale", "mean", "variance"):
        _compatible(name, shapes[arg], (xs[axis],), f"{arg} and x's axis {axis}")
    c = (xs[axis] if xs[axis] is not None else shapes["scale"][0],)
    return [(xs, dt), (c, dt), (c, dt)]


def _fused_bn_grad(dy, x, scale, mean, variance, epsilon, axis):
    return run_kernel("FusedBatchNormGrad", {"dy": dy, "x": x, "scale": scale, "mean": mean,
                                             "variance": variance},
                      {"epsilon": epsilon, "axis": axis})


def _fused_bn_vjp(g, ans, x, scale, *, epsilon, axis):
    gy, g_mean, g_var = g
    dx = d_scale = d_offset = None
    if gy is not None:
        dx, d_scale, d_offset = _fused_bn_grad(gy, x, scale, ans[1], ans[2], epsilon, axis)
    if g_mean is not None or g_var is not None:
        rank, n = x.ndim, _bn_count(x, axis)
        extra = None
        if g_mean is not None:  # d mean / dx = 1 / n
            extra = prims.zeros_like(x) + _bn_param(g_mean, axis, rank) / n
        if g_var is not None:  # d variance / dx = 2 (x - mean) / n (biased variance)
            term = (x - _bn_param(ans[1], axis, rank)) * (_bn_param(g_var, axis, rank)
                                                          * (2.0 / n))
            extra = term if extra is None else extra + term
        dx = extra if dx is None else dx + extra
    return {"x": dx, "scale": d_scale, "offset": d_offset}


def _fused_bn_jvp(tangents, x, scale, ans, *, epsilon, axis):
    rank = x.ndim
    mean, variance = ans[1], ans[2]
    inv = _bn_param(prims.rsqrt(variance + epsilon), axis, rank)
    xhat = (x - _bn_param(mean, axis, rank)) * inv
    t_y = t_mean = t_var = None
    tx, ts, to = tangents["x"], tangents["scale"], tangents["offset"]
    if tx is not None:
        red = _bn_reduced(axis, rank, batch_dims(tx, x))
        m_t = prims.mean(tx, axis=red, keepdims=True)
        m_xt = prims.mean(xhat * tx, axis=red, keepdims=True)
        t_y = (tx - m_t - xhat * m_xt) * (_bn_param(scale, axis, rank) * inv)
        t_mean = _bn_vector(m_t, axis, rank)
        # d var = 2 mean((x - mean) t) = 2 sqrt(var + eps) mean(xhat t)
        t_var = _bn_vector(m_xt / inv, axis, rank) * 2.0
    if ts is not None:
        part = xhat * _bn_param(ts, axis, rank)  # (a batched [B, C] tangent broadcasts too)
        t_y = part if t_y is None else t_y + part
    if to is not None:
        part = _bn_param(to, axis, rank) + prims.zeros_like(xhat)
        t_y = part if t_y is None else t_y + part
    return [t_y, t_mean, t_var]


def _fused_bn_grad_vjp(g, dy, x, scale, mean, variance, *, epsilon, axis):
    """Cotangents of FusedBatchNormGrad's (dx, dscale, doffset) with mean and variance
    taken as independent inputs (their dependence on x is FusedBatchNorm's rule). With
    xc = x - mean, inv = rsqrt(variance + eps), M = the mean over the reduced axes:
    dx = s inv (dy - M(dy)) - s inv^3 xc M(dy xc), dscale = inv sum(dy xc),
    doffset = sum(dy)."""
    g_dx, g_ds, g_do = g
    rank = x.ndim
    red = _bn_reduced(axis, rank)
    inv_c = prims.rsqrt(variance + epsilon)
    inv, s = _bn_param(inv_c, axis, rank), _bn_param(scale, axis, rank)
    xc = x - _bn_param(mean, axis, rank)
    m_dy = prims.mean(dy, axis=red, keepdims=True)
    m_dyxc = prims.mean(dy * xc, axis=red, keepdims=True)
    d_dy = d_xc = None
    d_inv = None  # keepdims [.., C, ..]
    d_s = None
    if g_dx is not None:
        m_g = prims.mean(g_dx, axis=red, keepdims=True)
        m_gxc = prims.mean(g_dx * xc, axis=red, keepdims=True)
        s_inv3 = s * inv * inv * inv
        d_dy = (g_dx - m_g) * (s * inv) - xc * (s_inv3 * m_gxc)
        d_xc = -(dy * m_gxc + g_dx * m_dyxc) * s_inv3
        s_gdy = prims.sum(g_dx * (dy - m_dy), axis=red, keepdims=True)
        s_gxc = prims.sum(g_dx * xc, axis=red, keepdims=True)
        d_s = inv * s_gdy - inv * inv * inv * s_gxc * m_dyxc
        d_inv = s * s_gdy - s * inv * inv * s_gxc * m_dyxc * 3.0
    if g_ds is not None:
        gs = _bn_param(g_ds, axis, rank)
        part_dy = xc * (gs * inv)
        d_dy = part_dy if d_dy is None else d_dy + part_dy
        part_xc = dy * (gs * inv)
        d_xc = part_xc if d_xc is None else d_xc + part_xc
        part_inv = gs * prims.sum(dy * xc, axis=red, keepdims=True)
        d_inv = part_inv if d_inv is None else d_inv + part_inv
    if g_do is not None:
        part = _bn_param(g_do, axis, rank) + prims.zeros_like(dy)
        d_dy = part if d_dy is None else d_dy + part
    out = {"dy": d_dy, "x": d_xc, "scale": None, "mean": None, "variance": None}
    if d_s is not None:
        out["scale"] = _bn_vector(d_s, axis, rank)
    if d_xc is not None:
        out["mean"] = -_bn_vector(prims.sum(d_xc, axis=red, keepdims=True), axis, rank)
    if d_inv is not None:  # d inv / d variance = -inv^3 / 2
        out["variance"] = _bn_vector(d_inv * (inv * inv * inv), axis, rank) * -0.5
    return out


def _fused_bn_batch(op, inputs, attrs, batched, size):
    """vectorized_map's rule: each element's statistics apart, so the batch axis joins the
    feature axis (moved in front of it: features [B * C]); per-feature operands become
    [B * C] too (tiled where unbatched), and the outputs are split back."""
    axis = attrs["axis"]
    data = ("dy", "x") if op == "FusedBatchNormGrad" else ("x",)
    x = inputs["x"]
    rank = x.ndim - 1 if batched["x"] else x.ndim
    shape = tuple(x._shape[1:] if batched["x"] else x._shape)
    if size is None or None in shape:
        raise NoBatchingRule(op, "needs the batch size and the element shape, unknown "
                                 "while tracing")
    c = shape[axis]
    merged = shape[:axis] + (size * c,) + shape[axis + 1:]
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, rank + 1))
    args = {}
    for name, value in inputs.items():
        if not batched[name]:
            value = broadcast_batch(value, size)
        if name in data:  # [B, ..., C, ...] -> [..., B * C, ...]
            value = prims.reshape(prims.transpose(value, perm=perm), shape=merged)
        else:
            value = prims.reshape(value, shape=(size * c,))
        args[name] = value
    first, *vectors = run_kernel(op, args, attrs)
    back = (axis,) + tuple(range(axis)) + tuple(range(axis + 1, rank + 1))
    first = prims.transpose(prims.reshape(first, shape=shape[:axis] + (size, c)
                                          + shape[axis + 1:]), perm=back)
    return [first] + [prims.reshape(v, shape=(size, c)) for v in vectors]


defop("FusedBatchNorm", ["x", "scale", "offset"], num_outputs=3, shape=_fused_bn_shape,
      vjp=_fused_bn_vjp, jvp=_fused_bn_jvp, batch=_fused_bn_batch)
defop("FusedBatchNormGrad", ["dy", "x", "scale", "mean", "variance"], num_outputs=3,
      shape=_fused_bn_grad_shape, vjp=_fused_bn_grad_vjp, batch=_fused_bn_batch)


def fused_batch_norm_training(x, scale, offset, epsilon: float = 1e-3,
                              axis: int = -1) -> tuple[Tensor, Tensor, Tensor]:
    """Training-mode batch normalization in one op: (y, mean, variance), the statistics
    (biased variance) taken over every axis of `x` but `axis`, and
    y = scale * (x - mean) / sqrt(variance + epsilon) + offset. float32/float64 only;
    `scale` and `offset` have x's dtype and shape [x.shape[axis]]. Its gradient is one op
    too (dx, dscale and doffset from one kernel). Not in `tf.nn` (TensorFlow 2 has no
    public fused_batch_norm); Keras's BatchNormalization uses it.

    Example:
        >>> y, m, v = fused_batch_norm_training(tf.constant([[0.0], [2.0]]), tf.ones([1]),
        ...                                     tf.zeros([1]))
        >>> m.numpy(), v.numpy()
        (array([1.], dtype=float32), array([1.], dtype=float32))
    """
    op = "fused_batch_norm_training"
    x = _operand(op, x, "x")
    axis = normalize_axis(op, axis, x.ndim)
    scale = _operand(op, scale, "scale", dtype_hint=x.dtype)
    offset = _operand(op, offset, "offset", dtype_hint=x.dtype)
    if type(epsilon) not in (int, float) or epsilon < 0:
        raise InvalidArgumentError(f"{op}: epsilon must be a non-negative number, got "
                                   f"{epsilon!r}")
    y, mean, variance = run_kernel("FusedBatchNorm", {"x": x, "scale": scale, "offset": offset},
                                   {"epsilon": float(epsilon), "axis": axis})
    return y, mean, variance


# --------------------------------------------------------------------------- embeddings


@composite("embedding_lookup")
def embedding_lookup(params, ids, max_norm=None, name=None) -> Tensor:
    """Rows `ids` of `params` (a tensor, or a list of shards split with the 'div'
    strategy); the gradient with respect to params is an IndexedSlices.

    With `max_norm`, each looked-up embedding whose L2 norm exceeds it is scaled down.
    Example: `tf.nn.embedding_lookup(tf.eye(3), [2, 0])` -> rows 2 and 0 of the identity.
    """
    op = "embedding_lookup"
    if isinstance(params, (list, tuple)):
        if not params:
            raise InvalidArgumentError(f"{op}: params is an empty list")
        if len(params) == 1:
            params = params[0]
        else:
            # 'div' partitioning assigns contiguous id ranges to the shards in order, so
            # the shards stacked along axis 0 are the full table.
            params = concat(list(params), axis=0)
    params = to_tensor(params, None, op, "params")
    ids_t = ids if type(ids) is Tensor else to_tensor(ids, None, op, "ids")
    if ids_t.dtype not in _INDICES:
        raise InvalidArgumentError(
            f"{op}: ids must be int32 or int64, got {describe(ids_t)}")
    out = gather(params, ids_t)
    if max_norm is not None:
        out = clip_by_norm(out, max_norm, axes=list(range(ids_t.ndim, out.ndim)))
    return out


# --------------------------------------------------------------------------- more nn ops

__all__ += ["max_pool", "avg_pool", "weighted_cross_entropy_with_logits"]


def _pool_nd(op: str, input, ksize, strides, padding, data_format) -> Tensor:
    """max_pool / avg_pool: rank-4 input goes to the 2-D op; rank-3 ([N, W, C] or
    [N, C, W]) runs as 2-D with a height of 1."""
    x = to_tensor(input, None, op, "input")
    pool2d = conv.max_pool2d if op == "max_pool" else conv.avg_pool2d
    if x.ndim == 4:
        return pool2d(x, ksize, strides, padding, data_format or "NHWC")
    if x.ndim == 5:
        return _pool3d(op + "3d", x, ksize, strides, padding, data_format or "NDHWC")
    if x.ndim != 3:
        raise InvalidArgumentError(
            f"{op}: input must have rank 3 (1-D pooling), 4 (2-D) or 5 (3-D), got "
            f"{describe(x)}")
    fmt = data_format or "NWC"
    if fmt not in ("NWC", "NCW"):
        raise InvalidArgumentError(f"{op}: data_format for rank-3 input must be 'NWC' or "
                                   f"'NCW', got {fmt!r}")
    first = fmt == "NCW"
    if not isinstance(padding, str):
        raise InvalidArgumentError(f"{op}: 1-D pooling takes 'SAME' or 'VALID' padding, "
                                   f"got {padding!r}")

    def one(value, arg):  # an int, [w] or [1, w, 1] (the batch/channel entries are 1)
        v = [value] if isinstance(value, int) else list(value)
        if len(v) == 3:
            v = [v[2] if first else v[1]]
        if len(v) != 1 or not isinstance(v[0], int):
            raise InvalidArgumentError(f"{op}: {arg} must be an int or a list of 1 or 3 "
                                       f"ints, got {value!r}")
        return [1, v[0]]

    y = pool2d(expand_dims(x, 2 if first else 1), one(ksize, "ksize"),
               one(strides, "strides"), padding, "NCHW" if first else "NHWC")
    return squeeze(y, [2 if first else 1])


def max_pool(input, ksize, strides, padding, data_format=None, name=None) -> Tensor:
    """The maximum of each window, for 1-D (rank 3) or 2-D (rank 4) pooling.

    Example: `tf.nn.max_pool(tf.constant([[[1.], [3.], [2.], [0.]]]), 2, 2, "VALID")`
    -> [[[3.], [2.]]].
    """
    return _pool_nd("max_pool", input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None) -> Tensor:
    """The mean of each window, for 1-D (rank 3) or 2-D (rank 4) pooling.

    Example: `tf.nn.avg_pool(tf.constant([[[1.], [3.], [2.], [0.]]]), 2, 2, "VALID")`
    -> [[[2.], [1.]]].
    """
    return _pool_nd("avg_pool", input, ksize, strides, padding, data_format)


@composite("weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None) -> Tensor:
    """Sigmoid cross-entropy with the positive term scaled by `pos_weight`:
    `labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits))`,
    computed stably.

    Example: `tf.nn.weighted_cross_entropy_with_logits([1.], [0.], 2.)` -> [1.3862944].
    """
    z = to_tensor(logits, None, "weighted_cross_entropy_with_logits", "logits")
    x = labels if type(labels) is Tensor else to_tensor(
        labels, z.dtype, "weighted_cross_entropy_with_logits", "labels")
    if x._shape != z._shape and not all(a is None or b is None or a == b for a, b in
                                        zip(x._shape, z._shape)) or x.ndim != z.ndim:
        raise ValueError(f"weighted_cross_entropy_with_logits: logits {describe(z)} and "
                         f"labels {describe(x)} must have the same shape")
    q = pos_weight if type(pos_weight) is Tensor else to_tensor(
        pos_weight, z.dtype, "weighted_cross_entropy_with_logits", "pos_weight")
    log_weight = 1 + (q - 1) * x
    return (1 - x) * z + log_weight * (log1p(exp(negative(_abs(z)))) + relu(negative(z)))


# --------------------------------------------------------------------------- issue 31's nn ops
# 1-D and 3-D pooling, separable convolution, crelu, in_top_k, log_poisson_loss,
# normalize_moments and zero_fraction: composites of the ops above.

__all__ += ["max_pool1d", "avg_pool1d", "max_pool3d", "avg_pool3d", "separable_conv2d",
            "crelu", "in_top_k", "log_poisson_loss", "normalize_moments", "zero_fraction",
            "ctc_loss"]


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """The maximum of each window of [N, W, C] (or "NCW") input.

    Example: `tf.nn.max_pool1d(tf.constant([[[1.], [3.], [2.], [0.]]]), 2, 2, "VALID")`
    -> [[[3.], [2.]]].
    """
    x = to_tensor(input, None, "max_pool1d", "input")
    if x.ndim != 3:
        raise InvalidArgumentError(f"max_pool1d: input must have rank 3, got {describe(x)}")
    return _pool_nd("max_pool", x, ksize, strides, padding, data_format)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """The mean of each window of [N, W, C] (or "NCW") input.

    Example: `tf.nn.avg_pool1d(tf.constant([[[1.], [3.], [2.], [0.]]]), 2, 2, "VALID")`
    -> [[[2.], [1.]]].
    """
    x = to_tensor(input, None, "avg_pool1d", "input")
    if x.ndim != 3:
        raise InvalidArgumentError(f"avg_pool1d: input must have rank 3, got {describe(x)}")
    return _pool_nd("avg_pool", x, ksize, strides, padding, data_format)


def _triple(op: str, value, arg: str, first: bool) -> list:
    """An int, [d, h, w] or [1, d, h, w, 1] (batch and channel entries 1) as [d, h, w]."""
    v = [value] * 3 if isinstance(value, int) else list(value)
    if len(v) == 1:
        v = v * 3
    if len(v) == 5:
        v = v[2:] if first else v[1:4]
    if len(v) != 3 or not all(isinstance(k, int) and k > 0 for k in v):
        raise InvalidArgumentError(f"{op}: {arg} must be a positive int or a list of 1, 3 "
                                   f"or 5 of them, got {value!r}")
    return v


def _pool3d(op: str, input, ksize, strides, padding, data_format) -> Tensor:
    """3-D max or mean pooling as two 2-D poolings: over (H, W) for every depth, then over
    D. Both reductions separate by axis, padding included: 'SAME' pads each axis on its
    own, and a mean over the real elements of a box is the mean over D of the means over
    (H, W), the counts being products of per-axis counts."""
    x = to_tensor(input, None, op, "input")
    if x.ndim != 5:
        raise InvalidArgumentError(f"{op}: input must have rank 5, got {describe(x)}")
    if data_format not in ("NDHWC", "NCDHW"):
        raise InvalidArgumentError(f"{op}: data_format must be 'NDHWC' or 'NCDHW', got "
                                   f"{data_format!r}")
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise InvalidArgumentError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    first = data_format == "NCDHW"
    kd, kh, kw = _triple(op, ksize, "ksize", first)
    sd, sh, sw = _triple(op, strides, "strides", first)
    pool2d = conv.max_pool2d if op.startswith("max") else conv.avg_pool2d
    if first:
        x = transpose(x, [0, 2, 3, 4, 1])
    n, d, h, w, c = dims_of(x)
    y = pool2d(reshape(x, (dims_product((n, d)), h, w, c)), [kh, kw], [sh, sw], padding)
    _, h2, w2, _ = dims_of(y)
    y = pool2d(reshape(y, (n, d, dims_product((h2, w2)), c)), [kd, 1], [sd, 1], padding)
    y = reshape(y, (n, dims_of(y)[1], h2, w2, c))
    return transpose(y, [0, 4, 1, 2, 3]) if first else y


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None) -> Tensor:
    """The maximum of each 3-D window of [N, D, H, W, C] (or "NCDHW") input.

    Example: `tf.nn.max_pool3d(tf.ones([1, 4, 4, 4, 1]), 2, 2, "VALID")` -> shape
    [1, 2, 2, 2, 1].
    """
    return _pool3d("max_pool3d", input, ksize, strides, padding, data_format)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None) -> Tensor:
    """The mean of each 3-D window ('SAME' padding: of its real elements).

    Example: `tf.nn.avg_pool3d(tf.ones([1, 4, 4, 4, 1]), 2, 2, "VALID")` -> ones of shape
    [1, 2, 2, 2, 1].
    """
    return _pool3d("avg_pool3d", input, ksize, strides, padding, data_format)


@composite("separable_conv2d")
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,
                     data_format=None, dilations=None, name=None) -> Tensor:
    """A depthwise convolution followed by a 1x1 (pointwise) convolution mixing channels;
    `pointwise_filter` is [1, 1, in_channels * multiplier, out_channels].

    Example: `tf.nn.separable_conv2d(tf.ones([1, 5, 5, 3]), tf.ones([3, 3, 3, 2]),
    tf.ones([1, 1, 6, 4]), [1, 1, 1, 1], "SAME")` -> shape [1, 5, 5, 4].
    """
    fmt = data_format or "NHWC"
    p = to_tensor(pointwise_filter, None, "separable_conv2d", "pointwise_filter")
    if p.ndim != 4 or p._shape[0] != 1 or p._shape[1] != 1:
        raise InvalidArgumentError(f"separable_conv2d: pointwise_filter must be [1, 1, "
                                   f"in_channels * multiplier, out_channels], got {describe(p)}")
    y = conv.depthwise_conv2d(input, depthwise_filter, strides, padding, fmt, dilations)
    return conv.conv2d(y, p, [1, 1, 1, 1], "VALID", fmt)


def crelu(features, axis=-1, name=None) -> Tensor:
    """Concatenated ReLU: [relu(x), relu(-x)] along `axis` (twice the size there).

    Example: `tf.nn.crelu([1., -2.])` -> [1., 0., 0., 2.].
    """
    x = to_tensor(features, None, "crelu", "features")
    return concat([relu(x), relu(negative(x))], axis)


def in_top_k(targets, predictions, k, name=None) -> Tensor:
    """Whether each row's target class is among its k largest predictions: fewer than k
    predictions are strictly larger (ties count in, as TensorFlow); a non-finite target
    prediction or an out-of-range target gives False.

    Example: `tf.math.in_top_k([1], [[0.1, 0.9, 0.5]], 1)` -> [True].
    """
    p = to_tensor(predictions, _dt.float32, "in_top_k", "predictions")
    t = to_tensor(targets, _dt.int32, "in_top_k", "targets")
    if p.ndim != 2 or t.ndim != 1:
        raise InvalidArgumentError(f"in_top_k: predictions must be [batch, classes] and "
                                   f"targets [batch], got {describe(p)} and {describe(t)}")
    if not p.dtype.is_floating or not t.dtype.is_integer:
        raise InvalidArgumentError(f"in_top_k: predictions must be floating and targets "
                                   f"integers, got {describe(p)} and {describe(t)}")
    classes = dims_of(p)[1]
    valid = logical_and(greater(t, -1), less(t, classes))
    safe = where(valid, t, t * 0)
    chosen = gather(p, safe, axis=1, batch_dims=1)
    above = reduce_sum(cast(greater(p, expand_dims(chosen, -1)), _dt.int32), axis=-1)
    return logical_and(logical_and(valid, is_finite(chosen)), less(above, k))


@composite("log_poisson_loss")
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None) -> Tensor:
    """The Poisson negative log-likelihood exp(log_input) - targets * log_input; with
    `compute_full_loss` the Stirling term targets * log(targets) - targets
    + 0.5 * log(2 pi targets) is added where targets > 1.

    Example: `tf.nn.log_poisson_loss([1.], [0.])` -> [1.].
    """
    z = to_tensor(log_input, None, "log_poisson_loss", "log_input")
    c = to_tensor(targets, z.dtype, "log_poisson_loss", "targets")
    loss = exp(z) - z * c
    if not compute_full_loss:
        return loss
    safe = where(greater(c, 1), c, c * 0 + 1)
    stirling = safe * log(safe) - safe + 0.5 * log(2 * 3.141592653589793 * safe)
    return loss + where(greater(c, 1), stirling, stirling * 0)


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None) -> tuple:
    """(mean, variance) from sufficient statistics: counts, the (shifted) sum and sum of
    squares; `shift` (or None) is what was subtracted before summing.

    Example: `tf.nn.normalize_moments(2., 4., 10., None)` -> (2., 1.).
    """
    ss = to_tensor(mean_ss, None, "normalize_moments", "mean_ss")
    divisor = 1 / to_tensor(counts, ss.dtype, "normalize_moments", "counts")
    shifted = ss * divisor
    mean = shifted if shift is None else shifted + to_tensor(shift, ss.dtype,
                                                             "normalize_moments", "shift")
    variance = to_tensor(variance_ss, ss.dtype, "normalize_moments", "variance_ss") \
        * divisor - square(shifted)
    return mean, variance


def zero_fraction(value, name=None) -> Tensor:
    """The fraction of `value`'s elements that are zero, float32.

    Example: `tf.math.zero_fraction([0., 1., 0., 3.])` -> 0.5.
    """
    x = to_tensor(value, None, "zero_fraction", "value")
    return reduce_mean(cast(equal(x, 0), _dt.float32))


_CTC_NONE = -1e30  # log(0) kept finite so that gradients through unused paths stay 0


def _log_add(a: Tensor, b: Tensor) -> Tensor:
    top = maximum(a, b)
    return top + log(exp(a - top) + exp(b - top))


@composite("ctc_loss")
def ctc_loss(labels, logits, label_length, logit_length, logits_time_major=True, unique=None,
             blank_index=None, name=None) -> Tensor:
    """The connectionist temporal classification loss -log p(labels | logits) per batch
    entry, for dense `labels` [batch, max_label_length] (the first `label_length` of each
    row count) and unnormalized `logits` [time, batch, classes] (batch-major with
    logits_time_major=False) of which the first `logit_length` steps count. The blank is
    class `blank_index` (default 0; negative counts from the end). Differentiable in
    logits: the forward (alpha) recursion in log space, one step per time step, so the
    number of time steps must be known while tracing.

    Example: `tf.nn.ctc_loss([[1]], tf.zeros([2, 1, 2]), [1], [2])` -> [0.6931] (log 2).
    """
    op = "ctc_loss"
    if unique is not None:
        raise InvalidArgumentError(f"{op}: unique (a sparse-label optimization) is not "
                                   "supported; pass dense labels with unique=None")
    x = to_tensor(logits, None, op, "logits")
    if not x.dtype.is_floating or x.ndim != 3:
        raise InvalidArgumentError(f"{op}: logits must be a floating [time, batch, classes] "
                                   f"tensor, got {describe(x)}")
    if not logits_time_major:
        x = transpose(x, [1, 0, 2])
    steps, classes = x._shape[0], x._shape[2]
    if steps is None or classes is None:
        raise InvalidArgumentError(f"{op}: the number of time steps and of classes must be "
                                   f"known, got logits {describe(x)}")
    y = to_tensor(labels, _dt.int32, op, "labels")
    n_label = to_tensor(label_length, _dt.int32, op, "label_length")
    n_time = to_tensor(logit_length, _dt.int32, op, "logit_length")
    if y.ndim != 2 or not y.dtype.is_integer:
        raise InvalidArgumentError(f"{op}: labels must be dense integer [batch, "
                                   f"max_label_length] (sparse labels are not supported), "
                                   f"got {describe(y)}")
    blank = (0 if blank_index is None else int(blank_index)) % classes
    y = cast(y, _dt.int32)
    n_label, n_time = cast(n_label, _dt.int32), cast(n_time, _dt.int32)
    width = y._shape[1]
    # the extended label sequence: blank, l1, blank, l2, ..., blank (2 L + 1 states)
    blanks = y * 0 + blank
    z = reshape(stack([blanks, y], axis=2), (-1, 2 * width))
    z = pad(z, [[0, 0], [0, 1]], constant_values=blank)
    states = 2 * width + 1
    # a state may also be entered from two back when it is a label differing from it
    skip = logical_and(not_equal(z, blank),
                       not_equal(z, pad(z, [[0, 0], [2, 0]], constant_values=blank)[:, :-2]))
    none = _CTC_NONE
    lp = log_softmax(x, axis=-1)
    first = gather(lp[0], z, axis=1, batch_dims=1)
    start = where(less(_range(states), 2), first, first * 0 + none)
    alpha = start
    for t in range(1, steps):
        one = pad(alpha, [[0, 0], [1, 0]], constant_values=none)[:, :-1]
        two = pad(alpha, [[0, 0], [2, 0]], constant_values=none)[:, :-2]
        merged = _log_add(alpha, one)
        merged = where(skip, _log_add(merged, two), merged)
        step = merged + gather(lp[t], z, axis=1, batch_dims=1)
        alpha = where(expand_dims(less(t, n_time), -1), step, alpha)
    end = 2 * n_label
    last = gather(alpha, expand_dims(end, -1), axis=1, batch_dims=1)[:, 0]
    before = gather(alpha, expand_dims(maximum(end - 1, 0), -1), axis=1, batch_dims=1)[:, 0]
    total = where(greater(end, 0), _log_add(last, before), last)
    return negative(total)
