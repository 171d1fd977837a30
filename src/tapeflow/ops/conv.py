"""Convolution and pooling: public functions with their shape, VJP and JVP rules.

Three kernels serve every convolution: Conv2D, Conv2DBackpropInput (its adjoint in the
input, i.e. the transposed convolution) and Conv2DBackpropFilter (its adjoint in the
filters). Depthwise convolution is a grouped Conv2D, conv1d a Conv2D of height 1. Each of
the three is linear in each argument, so their derivatives are the same three ops again,
to any order. Pooling: MaxPool with MaxPoolGrad/MaxPoolGradGrad (scatter to / gather from
each window's argmax, adjoint to each other) and AvgPool with its adjoint AvgPoolGrad.
Every kernel accepts extra leading dimensions on its tensor operands, broadcast like
matmul's batch dimensions; that is how batched tangents go through them.
"""
from __future__ import annotations

from .._core import registry as _reg
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import broadcast_shapes, dims_of, known_dims, size_of
from .._core.tensor import Tensor
from ._args import choice_arg, int_arg, int_list, shape_arg, to_tensor
from . import _onnx
from ._define import defop
from .array import expand_dims, pad, reshape, reverse, stack, transpose

__all__ = ["conv1d", "conv2d", "conv2d_transpose", "depthwise_conv2d", "max_pool2d",
           "avg_pool2d", "conv3d", "convolution", "conv1d_transpose", "conv3d_transpose"]

_CONV_ATTRS = ("strides", "padding", "dilations", "data_format", "groups")
_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


# --------------------------------------------------------------------------- arguments


def _data_format(op: str, data_format, allowed=("NHWC", "NCHW")) -> str:
    return choice_arg(op, data_format, "data_format", allowed)


def _channels_last(fmt: str) -> bool:
    return fmt[-1] == "C"


def _spatial_arg(op: str, arg: str, value, fmt: str, nsp: int = 2) -> tuple:
    """Strides/dilations/ksize: an int, or 1, `nsp` or `nsp + 2` ints -> `nsp` ints
    (None only for dilations, whose default is 1: strides and ksize must be given)."""
    if value is None and arg == "dilations":
        return (1,) * nsp
    v = list(int_list(op, value, arg))
    if len(v) == 1:
        v = v * nsp
    elif len(v) == nsp + 2:
        first = 1 if _channels_last(fmt) else 2
        rest = v[:first] + v[first + nsp:]
        if any(r != 1 for r in rest):
            raise InvalidArgumentError(
                f"{op}: {arg}={value!r} must be 1 in the batch and channel dimensions "
                f"(data_format {fmt})")
        v = v[first:first + nsp]
    elif len(v) != nsp:
        raise InvalidArgumentError(
            f"{op}: {arg} must be an int or a list of 1, {nsp} or {nsp + 2} ints, got {value!r}")
    if any(x < 1 for x in v):
        raise InvalidArgumentError(f"{op}: {arg} must be positive, got {value!r}")
    return tuple(v)


def _padding_arg(op: str, padding, fmt: str, nsp: int = 2, explicit: bool = True):
    """'SAME', 'VALID' or explicit [[before, after]] * rank -> str or tuple of pairs."""
    if isinstance(padding, str):
        p = padding.upper()
        if p in ("SAME", "VALID"):
            return p
    elif explicit and padding is not None:
        pairs = padding.numpy().tolist() if isinstance(padding, Tensor) else padding
        try:
            # int_arg raises a TypeError for 1.5 (not truncated): caught, then reported below
            pairs = [tuple(int_arg(op, v, "padding") for v in pair) for pair in pairs]
        except (TypeError, ValueError):
            pairs = None
        if pairs is not None and len(pairs) == nsp + 2 and all(len(p) == 2 for p in pairs):
            first = 1 if _channels_last(fmt) else 2
            rest = pairs[:first] + pairs[first + nsp:]
            if any(p != (0, 0) for p in rest):
                raise InvalidArgumentError(
                    f"{op}: explicit padding {padding!r} must be [0, 0] in the batch and "
                    f"channel dimensions (data_format {fmt})")
            spatial = tuple(pairs[first:first + nsp])
            if any(v < 0 for p in spatial for v in p):
                raise InvalidArgumentError(f"{op}: explicit padding must be non-negative, "
                                           f"got {padding!r}")
            return spatial
    what = "'SAME', 'VALID' or a list of [before, after] pairs, one per dimension" \
        if explicit else "'SAME' or 'VALID'"
    raise InvalidArgumentError(f"{op}: padding must be {what}, got {padding!r}")


def _operands(op: str, input, filters, farg: str = "filters"):
    x = to_tensor(input, None, op, "input")
    w = to_tensor(filters, x.dtype, op, farg)
    if w.dtype is not x.dtype:
        raise InvalidArgumentError(
            f"{op}: input and {farg} must have the same dtype, got input: {describe(x)} and "
            f"{farg}: {describe(w)}; cast one with tf.cast")
    if not x.dtype.is_floating:
        raise InvalidArgumentError(
            f"{op}: input must be a floating-point tensor, got {describe(x)}")
    return x, w


def _rank(op: str, arg: str, t: Tensor, rank: int, layout: str) -> None:
    if t.ndim != rank:
        raise InvalidArgumentError(
            f"{op}: {arg} must have rank {rank} ({layout}), got {describe(t)}")


# --------------------------------------------------------------------------- shapes


def _split(shape, fmt):
    """The last four dims of `shape` as (N, H, W, C)."""
    n, a, b, c = shape[-4:]
    return (n, a, b, c) if fmt == "NHWC" else (n, b, c, a)


def _join(n, h, w, c, fmt):
    return (n, h, w, c) if fmt == "NHWC" else (n, c, h, w)


def _hw(shape, fmt):
    return (shape[-3], shape[-2]) if fmt == "NHWC" else (shape[-2], shape[-1])


def _known_ne(a, b) -> bool:
    return a is not None and b is not None and a != b


def _spatial_out(op: str, hw, khw, attrs, where: str) -> tuple:
    """Output spatial size (None where unknown) under TensorFlow's padding rules."""
    padding, strides = attrs["padding"], attrs["strides"]
    dilations = attrs.get("dilations", (1, 1))
    out = []
    for ax in (0, 1):
        n, k, s, d = hw[ax], khw[ax], strides[ax], dilations[ax]
        if n is None or k is None:
            out.append(None)
            continue
        ke = (k - 1) * d + 1
        if padding == "SAME":
            out.append(-(-n // s))
            continue
        lo, hi = (0, 0) if padding == "VALID" else padding[ax]
        if n + lo + hi < ke:
            size = f"size {k}" + (f", dilation {d}: effective {ke}" if d != 1 else "")
            raise InvalidArgumentError(
                f"{op}: the window ({size}) is larger than the padded input ({n} + padding "
                f"{lo}+{hi}) along the {('height', 'width')[ax]}; {where}")
        out.append((n + lo + hi - ke) // s + 1)
    return tuple(out)


def _check_ranks(op: str, **shapes) -> None:
    for arg, shape in shapes.items():
        if len(shape) < 4:
            raise InvalidArgumentError(f"{op}: {arg} must have rank 4, got shape {list(shape)}")


def _check_dtypes(op: str, dtypes, floating: bool = True):
    names = list(dtypes)
    first = dtypes[names[0]]
    for k in names[1:]:
        if dtypes[k] is not first:
            raise InvalidArgumentError(
                f"{op}: {names[0]} and {k} must have the same dtype, got {first.name} and "
                f"{dtypes[k].name}")
    if floating and not first.is_floating:
        raise InvalidArgumentError(f"{op}: needs a floating-point dtype, got {first.name}")
    return first


def _conv_out_shape(op: str, xs, ws, attrs) -> tuple:
    _check_ranks(op, input=xs, filters=ws)
    fmt, groups = attrs["data_format"], attrs["groups"]
    where = f"input shape {list(xs)}, filters shape {list(ws)}"
    lead = broadcast_shapes(op, xs[:-4], ws[:-4])
    n, h, w, c = _split(xs, fmt)
    kh, kw, cg, o = ws[-4:]
    if groups is None:  # depthwise with unknown channels: checked when the graph runs
        groups = c if c is not None and cg == 1 else None
    if c is not None and cg is not None and groups is not None and c != cg * groups:
        raise InvalidArgumentError(
            f"{op}: input has {c} channels but the filters expect {cg * groups} "
            f"(filters are [height, width, in_channels, out_channels]); {where}")
    if o is not None and groups is not None and o % groups:
        raise InvalidArgumentError(f"{op}: {o} output channels do not split into {groups} "
                                   f"groups; {where}")
    oh, ow = _spatial_out(op, (h, w), (kh, kw), attrs, where)
    return lead + _join(n, oh, ow, o, fmt)


def _conv2d_shape(shapes, dtypes, attrs):
    dtype = _check_dtypes("Conv2D", dtypes)
    return [(_conv_out_shape("Conv2D", shapes["x"], shapes["filters"], attrs), dtype)]


def _backprop_input_out_shape(op: str, dys, ws, attrs, names=("dy", "input size")) -> tuple:
    _check_ranks(op, **{names[0]: dys, "filters": ws})
    fmt, groups = attrs["data_format"], attrs["groups"]
    h, w = attrs["input_hw"]
    where = f"{names[0]} shape {list(dys)}, filters shape {list(ws)}, {names[1]} {[h, w]}"
    lead = broadcast_shapes(op, dys[:-4], ws[:-4])
    n, oh, ow, o = _split(dys, fmt)
    kh, kw, cg, fo = ws[-4:]
    if _known_ne(o, fo):
        raise InvalidArgumentError(f"{op}: {names[0]} has {o} channels but the filters "
                                   f"have {fo}; {where}")
    eh, ew = _spatial_out(op, (h, w), (kh, kw), attrs, where)
    if _known_ne(eh, oh) or _known_ne(ew, ow):
        raise InvalidArgumentError(
            f"{op}: a convolution over the {names[1]} {[h, w]} gives spatial size "
            f"{[eh, ew]}, which does not match {names[0]}'s {[oh, ow]}; {where}")
    return lead + _join(n, h, w, None if cg is None or groups is None else cg * groups, fmt)


def _backprop_input_shape(shapes, dtypes, attrs):
    dtype = _check_dtypes("Conv2DBackpropInput", dtypes)
    return [(_backprop_input_out_shape("Conv2DBackpropInput", shapes["dy"],
                                       shapes["filters"], attrs), dtype)]


def _backprop_filter_shape(shapes, dtypes, attrs):
    op = "Conv2DBackpropFilter"
    dtype = _check_dtypes(op, dtypes)
    xs, dys = shapes["x"], shapes["dy"]
    _check_ranks(op, x=xs, dy=dys)
    fmt, groups = attrs["data_format"], attrs["groups"]
    kh, kw = attrs["filter_hw"]
    where = f"x shape {list(xs)}, dy shape {list(dys)}, filter size {[kh, kw]}"
    lead = broadcast_shapes(op, xs[:-4], dys[:-4])
    n, h, w, c = _split(xs, fmt)
    dn, oh, ow, o = _split(dys, fmt)
    if _known_ne(n, dn):
        raise InvalidArgumentError(f"{op}: x and dy have different batch sizes; {where}")
    if c is not None and groups is not None and c % groups:
        raise InvalidArgumentError(f"{op}: {c} channels do not split into {groups} groups")
    eh, ew = _spatial_out(op, (h, w), (kh, kw), attrs, where)
    if _known_ne(eh, oh) or _known_ne(ew, ow):
        raise InvalidArgumentError(f"{op}: the input gives spatial size {[eh, ew]}, dy has "
                                   f"{[oh, ow]}; {where}")
    cg = None if c is None or groups is None else c // groups
    return [(lead + (kh, kw, cg, o), dtype)]


def _pool_out_shape(op: str, xs, attrs) -> tuple:
    _check_ranks(op, input=xs)
    n, h, w, c = _split(xs, attrs["data_format"])
    oh, ow = _spatial_out(op, (h, w), attrs["ksize"], attrs, f"input shape {list(xs)}")
    return xs[:-4] + _join(n, oh, ow, c, attrs["data_format"])


def _max_pool_shape(shapes, dtypes, attrs):
    dtype = _check_dtypes("MaxPool", dtypes, floating=False)
    return [(_pool_out_shape("MaxPool", shapes["x"], attrs), dtype)]


def _compatible(op: str, a, b, what: str) -> tuple:
    if len(a) != len(b) or any(_known_ne(p, q) for p, q in zip(a, b)):
        raise InvalidArgumentError(f"{op}: {what}: {list(a)} vs {list(b)}")
    return tuple(p if p is not None else q for p, q in zip(a, b))


def _max_pool_grad_shape(shapes, dtypes, attrs):
    op = "MaxPoolGrad"
    dtype = _check_dtypes(op, dtypes, floating=False)
    xs, dys = shapes["x"], shapes["dy"]
    _check_ranks(op, x=xs, dy=dys)
    pooled = _pool_out_shape(op, xs, attrs)
    _compatible(op, pooled[-4:], dys[-4:], "dy must have the pooled shape")
    return [(broadcast_shapes(op, xs[:-4], dys[:-4]) + tuple(xs[-4:]), dtype)]


def _max_pool_grad_grad_shape(shapes, dtypes, attrs):
    op = "MaxPoolGradGrad"
    dtype = _check_dtypes(op, dtypes, floating=False)
    xs, dxs = shapes["x"], shapes["dx"]
    _check_ranks(op, x=xs, dx=dxs)
    _compatible(op, xs[-4:], dxs[-4:], "dx must have x's shape")
    pooled = _pool_out_shape(op, xs, attrs)
    return [(broadcast_shapes(op, xs[:-4], dxs[:-4]) + pooled[-4:], dtype)]


def _avg_pool_shape(shapes, dtypes, attrs):
    dtype = _check_dtypes("AvgPool", dtypes)
    return [(_pool_out_shape("AvgPool", shapes["x"], attrs), dtype)]


def _avg_pool_grad_shape(shapes, dtypes, attrs):
    op = "AvgPoolGrad"
    dtype = _check_dtypes(op, dtypes)
    dys = shapes["dy"]
    _check_ranks(op, dy=dys)
    fmt = attrs["data_format"]
    h, w = attrs["input_hw"]
    n, oh, ow, c = _split(dys, fmt)
    eh, ew = _spatial_out(op, (h, w), attrs["ksize"], attrs, f"dy shape {list(dys)}")
    if _known_ne(eh, oh) or _known_ne(ew, ow):
        raise InvalidArgumentError(f"{op}: an input of spatial size {[h, w]} pools to "
                                   f"{[eh, ew]}, dy has {[oh, ow]}")
    return [(tuple(dys[:-4]) + _join(n, h, w, c, fmt), dtype)]


# --------------------------------------------------------------------------- convolution
# Each kernel runs from one private function below, which the public functions and every
# rule share. The rules cannot call conv2d or conv2d_transpose: those validate user-facing
# arguments, take no `groups`, and accept rank 4 only, while a batched tangent has rank 5.


def _conv(x, filters, attrs):
    return run_kernel("Conv2D", {"x": x, "filters": filters},
                      {k: attrs[k] for k in _CONV_ATTRS})


def _conv_input(dy, filters, input_hw, attrs):
    a = {k: attrs[k] for k in _CONV_ATTRS}
    a["input_hw"] = tuple(input_hw)
    return run_kernel("Conv2DBackpropInput", {"dy": dy, "filters": filters}, a)


def _conv_filter(x, dy, filter_hw, attrs):
    a = {k: attrs[k] for k in _CONV_ATTRS}
    a["filter_hw"] = tuple(filter_hw)
    return run_kernel("Conv2DBackpropFilter", {"x": x, "dy": dy}, a)


_ATTRS_CACHE: dict = {}


def _static(*args) -> bool:
    """Whether every argument is a plain int, str, None or tuple of ints (cacheable)."""
    for a in args:
        t = type(a)
        if t is tuple:
            if not all(type(v) is int for v in a):
                return False
        elif t is not int and t is not str and a is not None:
            return False
    return True


def _conv_attrs(op: str, strides, padding, dilations, fmt: str, nsp: int = 2) -> dict:
    """Normalized convolution attrs, memoized for hashable arguments (the hot path)."""
    key = (op, strides, padding, dilations, fmt)
    hit = _ATTRS_CACHE.get(key) if _static(strides, padding, dilations) else None
    if hit is None:
        arg = "stride" if op == "conv1d" else "strides"
        hit = {"strides": _spatial_arg(op, arg, strides, fmt, nsp),
               "padding": _padding_arg(op, padding, fmt, nsp),
               "dilations": _spatial_arg(op, "dilations", dilations, fmt, nsp),
               "data_format": fmt, "groups": 1}
        if len(_ATTRS_CACHE) < 512 and _static(strides, padding, dilations):
            _ATTRS_CACHE[key] = hit
    return dict(hit)


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,
           name=None) -> Tensor:
    """2-D cross-correlation y[n, i, j, o] = sum x[n, s*i + d*di, s*j + d*dj, c] w[di, dj, c, o].

    `filters` is [height, width, in_channels, out_channels]; padding 'SAME', 'VALID' or
    explicit [[0, 0], [top, bottom], [left, right], [0, 0]] (in data_format order).
    Example: `tf.nn.conv2d(tf.ones([1, 5, 5, 3]), tf.ones([3, 3, 3, 8]), 1, "SAME")`
    -> shape [1, 5, 5, 8].
    """
    op = "conv2d"
    fmt = _data_format(op, data_format)
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 4, fmt)
    _rank(op, "filters", w, 4, "[height, width, in_channels, out_channels]")
    attrs = _conv_attrs(op, strides, padding, dilations, fmt)
    if x._shape[3 if fmt == "NHWC" else 1] != w._shape[2]:
        _conv_out_shape(op, x._shape, w._shape, attrs)  # raises naming the shapes
    # A window larger than the padded input fails in the kernel, which the engine reports
    # through Conv2D's shape rule.
    return _conv(x, w, attrs)


def _onnx_conv2d(e, node):
    w = e.add1("Transpose", [e.input(node, "filters")], perm=[3, 2, 0, 1])  # HWIO -> OIHW
    kernel = [int(d) for d in node.inputs["filters"]._shape[:2]]
    attrs = dict(strides=_onnx.spatial(node, "strides"), dilations=_onnx.spatial(node, "dilations"),
                 auto_pad=_onnx.auto_pad(e, node), kernel_shape=kernel,
                 group=int(node.attrs.get("groups", 1)))
    _onnx.nchw_wrap(e, node, e.input(node, "x"),
               lambda x, outs: e.add("Conv", [x, w], outs, **attrs)[0])


# Conv2D is bilinear: each JVP is the op with one argument replaced by its tangent; each
# VJP is the adjoint of that linear map (the transposed convolution / the filter gradient).
defop("Conv2D", ["x", "filters"], shape=_conv2d_shape,
      vjp={"x": lambda g, x_shape, filters, **a: _conv_input(
               g, filters, _hw(x_shape, a["data_format"]), a),
           "filters": lambda g, x, filters_shape, **a: _conv_filter(
               x, g, filters_shape[-4:-2], a)},
      jvp={"x": lambda t, filters, **a: _conv(t, filters, a),
           "filters": lambda t, x, **a: _conv(x, t, a)}, onnx=_onnx_conv2d)


def _onnx_conv2d_backprop_input(e, node):
    """conv2d_transpose: ONNX ConvTranspose, cropping the full output as TensorFlow's
    padding did in the forward convolution (SAME: the odd element at the end)."""
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"
    dy_shape = node.inputs["dy"]._shape
    spatial_in = dy_shape[2:] if nchw else dy_shape[1:3]
    if None in spatial_in:
        _onnx.unsupported(e, node, "unknown spatial input size")
    strides, dilations = _onnx.spatial(node, "strides"), _onnx.spatial(node, "dilations")
    kernel = [int(d) for d in node.inputs["filters"]._shape[:2]]
    pads_begin, pads_end, extra = [], [], []
    for n_in, out, k, s, d in zip(spatial_in, node.attrs["input_hw"], kernel, strides,
                                  dilations):
        full = s * (n_in - 1) + (k - 1) * d + 1
        diff = full - int(out)
        begin = max(diff, 0) // 2 if _onnx.auto_pad(e, node) == "SAME_UPPER" else 0
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
    _onnx.nchw_wrap(e, node, e.input(node, "dy"),
               lambda x, outs: e.add("ConvTranspose", [x, w], outs, **attrs)[0])


defop("Conv2DBackpropInput", ["dy", "filters"], shape=_backprop_input_shape,
      vjp={"dy": lambda g, filters, **a: _conv(g, filters, a),
           "filters": lambda g, dy, filters_shape, **a: _conv_filter(
               g, dy, filters_shape[-4:-2], a)},
      jvp={"dy": lambda t, filters, **a: _conv_input(t, filters, a["input_hw"], a),
           "filters": lambda t, dy, **a: _conv_input(dy, t, a["input_hw"], a)},
      onnx=_onnx_conv2d_backprop_input)

defop("Conv2DBackpropFilter", ["x", "dy"], shape=_backprop_filter_shape,
      vjp={"x": lambda g, x_shape, dy, **a: _conv_input(
               dy, g, _hw(x_shape, a["data_format"]), a),
           "dy": lambda g, x, **a: _conv(x, g, a)},
      jvp={"x": lambda t, dy, **a: _conv_filter(t, dy, a["filter_hw"], a),
           "dy": lambda t, x, **a: _conv_filter(x, t, a["filter_hw"], a)})


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None) -> Tensor:
    """1-D cross-correlation (a conv2d of height 1); `filters` is [width, in, out].

    Example: `tf.nn.conv1d(tf.ones([2, 7, 3]), tf.ones([3, 3, 4]), 2, "VALID")`
    -> shape [2, 3, 4].
    """
    op = "conv1d"
    fmt1 = _data_format(op, data_format, ("NWC", "NCW", "NHWC", "NCHW"))
    fmt1 = {"NHWC": "NWC", "NCHW": "NCW"}.get(fmt1, fmt1)
    fmt = "NHWC" if fmt1 == "NWC" else "NCHW"
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 3, fmt1)
    _rank(op, "filters", w, 3, "[width, in_channels, out_channels]")
    c = x._shape[-1] if fmt1 == "NWC" else x._shape[1]
    if c != w._shape[1] and c is not None and w._shape[1] is not None:
        raise InvalidArgumentError(
            f"{op}: input has {c} channels but filters expect {w._shape[1]} ([width, "
            f"in_channels, out_channels]); input {describe(x)}, filters {describe(w)}")
    attrs = _conv_attrs(op, stride, padding, dilations, fmt1, nsp=1)
    pad = attrs["padding"]
    attrs.update(strides=(1,) + attrs["strides"], dilations=(1,) + attrs["dilations"],
                 padding=pad if isinstance(pad, str) else ((0, 0),) + pad, data_format=fmt)
    width = x._shape[1] if fmt1 == "NWC" else x._shape[2]
    _spatial_out(op, (1, width), (1, w._shape[0]), attrs,
                 f"input {describe(x)}, filters {describe(w)}")
    # dims_of: the static shapes, or in a traced graph run-time sizes (`Dim`s) in place
    # of unknown dims, so that no reshape needs more than one -1
    xs = dims_of(x)
    x4 = reshape(x, (xs[0], 1) + xs[1:] if fmt == "NHWC" else xs[:2] + (1, xs[2]))
    y = _conv(x4, reshape(w, (1,) + dims_of(w)), attrs)
    ys = dims_of(y)
    return reshape(y, ys[:1] + ys[2:] if fmt == "NHWC" else ys[:2] + ys[3:])


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",
                     dilations=None, name=None) -> Tensor:
    """The transpose (adjoint) of conv2d: the gradient of conv2d w.r.t. its input.

    `filters` is [height, width, out_channels, in_channels]; `output_shape` is the full
    output shape (a conv2d of it with the same arguments gives `input`'s shape).
    Example: `tf.nn.conv2d_transpose(tf.ones([1, 3, 3, 8]), tf.ones([3, 3, 4, 8]),
    [1, 6, 6, 4], 2)` -> shape [1, 6, 6, 4].
    """
    op = "conv2d_transpose"
    fmt = _data_format(op, data_format)
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 4, fmt)
    _rank(op, "filters", w, 4, "[height, width, out_channels, in_channels]")
    out = list(shape_arg(op, output_shape, "output_shape"))
    if len(out) != 4:
        raise InvalidArgumentError(f"{op}: output_shape must be 4 non-negative ints "
                                   f"({fmt}), got {output_shape!r}")
    # entries may be `Dim`s (a traced tf.shape(...)): unknown (None) to the checks below
    known = known_dims(out)
    n, h, wd, c = _split(known, fmt)
    xn, _, _, xc = _split(x._shape, fmt)
    if _known_ne(xn, n) or _known_ne(c, w._shape[2]) or _known_ne(xc, w._shape[3]):
        raise InvalidArgumentError(
            f"{op}: input {describe(x)}, filters {describe(w)} ([height, width, out_channels, "
            f"in_channels]) and output_shape {out} ({fmt}) disagree on the batch size or "
            f"channel counts")
    attrs = _conv_attrs(op, strides, padding, dilations, fmt)
    attrs["input_hw"] = (h, wd)
    _backprop_input_out_shape(op, x._shape, w._shape, attrs,
                              ("input", "spatial output_shape"))
    return _conv_input(x, w, _hw(out, fmt), attrs)


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None,
                     name=None) -> Tensor:
    """Each input channel convolved with its own `multiplier` filters; `filter` is
    [height, width, in_channels, multiplier] and output channel c * multiplier + m.

    Example: `tf.nn.depthwise_conv2d(tf.ones([1, 5, 5, 3]), tf.ones([3, 3, 3, 2]),
    [1, 1, 1, 1], "SAME")` -> shape [1, 5, 5, 6].
    """
    op = "depthwise_conv2d"
    fmt = _data_format(op, data_format or "NHWC")
    x, w = _operands(op, input, filter, "filter")
    _rank(op, "input", x, 4, fmt)
    _rank(op, "filter", w, 4, "[height, width, in_channels, multiplier]")
    c = _split(x._shape, fmt)[3]
    kh, kw, fc, m = w._shape
    if _known_ne(c, fc):
        raise InvalidArgumentError(
            f"{op}: input has {c} channels but filter expects {fc} ([height, width, "
            f"in_channels, multiplier]); input {describe(x)}, filter {describe(w)}")
    attrs = _conv_attrs(op, strides, padding, dilations, fmt)
    if c is None:  # traced with unknown channels: the filter's count, else the run-time one
        c = fc if fc is not None else dims_of(x)[3 if fmt == "NHWC" else 1]
    # Group c of a grouped convolution owns output channels [c*m, (c+1)*m): exactly
    # depthwise's channel order, so the filter only needs in_channels folded into out.
    attrs["groups"] = c
    if type(c) is int and m is not None:
        cm = c * m
        _conv_out_shape(op, x._shape, (kh, kw, 1, cm), attrs)
    else:  # c * m is known when the graph runs: `Dim`s in the attrs, None to the check
        cm = size_of(w, (2, 3))
        _conv_out_shape(op, x._shape, (kh, kw, 1, None),
                        {**attrs, "groups": c if type(c) is int else None})
    return _conv(x, reshape(w, dims_of(w)[:2] + (1, cm)), attrs)


# --------------------------------------------------------------------------- 3-D, N-D, 1-D^T
# Composites of the 2-D kernels above, so their gradients (to any order) come from the ops
# they are built of and no backend needs a new kernel.

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _same_pads(n: int, k: int, s: int, d: int) -> tuple:
    """TensorFlow's SAME padding (before, after) of one axis of size n."""
    ke = (k - 1) * d + 1
    total = max((-(-n // s) - 1) * s + ke - n, 0)
    return total // 2, total - total // 2


def _grouping(op: str, c, cg, f, where: str) -> int:
    """How many groups an input of `c` channels forms with filters of `cg` input and `f`
    output channels (TensorFlow infers it the same way); 1 where `c` is unknown."""
    if c is None or cg is None:
        return 1
    if cg <= 0 or c % cg or (f is not None and f % (c // cg)):
        raise InvalidArgumentError(
            f"{op}: the input's {c} channels must be a multiple g of the filters' {cg} "
            f"input channels, and g must divide the {f} output channels; {where}")
    return c // cg


def _conv3d_ndhwc(op: str, x: Tensor, w: Tensor, strides, padding, dilations) -> Tensor:
    """conv3d of a channels-last x [N, D, H, W, C] with w [kd, kh, kw, C / groups, F].
    The kd depth taps (each a strided slice along the depth) go side by side into the
    channels, and one grouped conv2d over (H, W) of every (batch, output depth) image
    does the rest."""
    kd, kh, kw, cg, f = w._shape
    c = x._shape[4]
    where = f"input {describe(x)}, filters {describe(w)}"
    if c is None or None in w._shape:
        raise InvalidArgumentError(f"{op}: needs known channel counts and filter shape; "
                                   f"{where}")
    groups = _grouping(op, c, cg, f, where)
    sd, sh, sw = strides
    dd, dh, dw = dilations
    if padding == "SAME":
        if x._shape[1] is None:
            raise InvalidArgumentError(f"{op}: padding 'SAME' needs a known depth; {where}")
        depth_pad, hw_pad = _same_pads(x._shape[1], kd, sd, dd), "SAME"
    elif padding == "VALID":
        depth_pad, hw_pad = (0, 0), "VALID"
    else:
        depth_pad, hw_pad = tuple(padding[0]), tuple(padding[1:])
    if depth_pad != (0, 0):
        x = pad(x, [[0, 0], list(depth_pad), [0, 0], [0, 0], [0, 0]])
    ke = (kd - 1) * dd + 1
    if x._shape[1] is not None and x._shape[1] < ke:
        raise InvalidArgumentError(
            f"{op}: the window (depth {kd}, dilation {dd}: effective {ke}) is larger than "
            f"the padded input depth {x._shape[1]}; {where}")
    # tap i reads depths i*dd, i*dd + sd, ...: one per output depth (negative stops, so an
    # unknown depth works too)
    taps = [x[:, i * dd:(i * dd - ke + 1) or None:sd] for i in range(kd)]
    xs = stack(taps, axis=4)  # [N, Do, H, W, kd, C]
    dims = dims_of(xs)
    if groups > 1:  # a grouped conv2d wants each group's channels together: [g, kd, C/g]
        xs = transpose(reshape(xs, dims[:5] + (groups, cg)), (0, 1, 2, 3, 5, 4, 6))
    x4 = reshape(xs, (size_of(xs, (0, 1)), dims[2], dims[3], kd * c))
    w4 = reshape(transpose(w, (1, 2, 0, 3, 4)), (kh, kw, kd * cg, f))
    attrs = {"strides": (sh, sw), "padding": hw_pad, "dilations": (dh, dw),
             "data_format": "NHWC", "groups": groups}
    _conv_out_shape(op, x4._shape, w4._shape, attrs)
    y = _conv(x4, w4, attrs)
    return reshape(y, dims[:2] + dims_of(y)[1:])


def _to_last(x: Tensor) -> Tensor:
    return transpose(x, (0, *range(2, x.ndim), 1))


def _to_first(x: Tensor) -> Tensor:
    return transpose(x, (0, x.ndim - 1, *range(1, x.ndim - 1)))


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None,
           name=None) -> Tensor:
    """3-D cross-correlation; `filters` is [depth, height, width, in_channels,
    out_channels]. An input with g times in_channels channels makes a grouped convolution
    (g groups, each with out_channels / g filters), as in TensorFlow.

    Example: `tf.nn.conv3d(tf.ones([1, 4, 5, 5, 2]), tf.ones([2, 3, 3, 2, 4]),
    [1, 1, 1, 1, 1], "VALID")` -> shape [1, 3, 3, 3, 4].
    """
    op = "conv3d"
    fmt = _data_format(op, data_format, _FORMATS[3])
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 5, fmt)
    _rank(op, "filters", w, 5, "[depth, height, width, in_channels, out_channels]")
    strides = _spatial_arg(op, "strides", strides, fmt, 3)
    dilations = _spatial_arg(op, "dilations", dilations, fmt, 3)
    padding = _padding_arg(op, padding, fmt, 3)
    if fmt == "NCDHW":
        return _to_first(_conv3d_ndhwc(op, _to_last(x), w, strides, padding, dilations))
    return _conv3d_ndhwc(op, x, w, strides, padding, dilations)


def convolution(input, filters, strides=None, padding="VALID", data_format=None,
                dilations=None, name=None) -> Tensor:
    """N-D cross-correlation, N = 1, 2 or 3 from the filters' rank, as tf.nn.convolution:
    `filters` is [*window, in_channels, out_channels]; an input with g times in_channels
    channels makes a grouped convolution (g groups, each with out_channels / g filters).

    Example: `tf.nn.convolution(tf.ones([1, 6, 4]), tf.ones([3, 2, 6]))` -> shape
    [1, 4, 6] (two groups of two input channels, three filters each).
    """
    op = "convolution"
    x, w = _operands(op, input, filters)
    nsp = w.ndim - 2
    if nsp not in _FORMATS:
        raise InvalidArgumentError(f"{op}: filters must have rank 3, 4 or 5 ([*window, "
                                   f"in_channels, out_channels]), got {describe(w)}")
    fmt = _data_format(op, data_format or _FORMATS[nsp][0], _FORMATS[nsp])
    _rank(op, "input", x, nsp + 2, fmt)
    strides = 1 if strides is None else strides
    if nsp == 3:
        return conv3d(x, w, strides, padding, fmt, dilations)
    where = f"input {describe(x)}, filters {describe(w)}"
    attrs = _conv_attrs(op, strides, padding, dilations, fmt, nsp)
    last = _channels_last(fmt)
    if nsp == 1:  # a 2-D convolution of height 1
        pad1 = attrs["padding"]
        attrs.update(strides=(1,) + attrs["strides"], dilations=(1,) + attrs["dilations"],
                     padding=pad1 if isinstance(pad1, str) else ((0, 0),) + pad1,
                     data_format="NHWC" if last else "NCHW")
        xs = dims_of(x)
        x = reshape(x, (xs[0], 1) + xs[1:] if last else xs[:2] + (1, xs[2]))
        w = reshape(w, (1,) + dims_of(w))
    c = _split(x._shape, attrs["data_format"])[3]
    attrs["groups"] = _grouping(op, c, w._shape[2], w._shape[3], where)
    _conv_out_shape(op, x._shape, w._shape, attrs)
    y = _conv(x, w, attrs)
    if nsp == 1:
        ys = dims_of(y)
        y = reshape(y, ys[:1] + ys[2:] if last else ys[:2] + ys[3:])
    return y


def _output_shape(op: str, output_shape, rank: int, fmt: str) -> list:
    out = list(shape_arg(op, output_shape, "output_shape"))
    if len(out) != rank:
        raise InvalidArgumentError(f"{op}: output_shape must be {rank} non-negative ints "
                                   f"({fmt}), got {output_shape!r}")
    return out


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NWC", dilations=None, name=None) -> Tensor:
    """The transpose (adjoint) of conv1d: its gradient w.r.t. the input. `filters` is
    [width, out_channels, in_channels]; `output_shape` the full output shape.

    Example: `tf.nn.conv1d_transpose(tf.ones([2, 3, 8]), tf.ones([3, 4, 8]), [2, 6, 4],
    2)` -> shape [2, 6, 4].
    """
    op = "conv1d_transpose"
    fmt = _data_format(op, data_format, _FORMATS[1])
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 3, fmt)
    _rank(op, "filters", w, 3, "[width, out_channels, in_channels]")
    out = _output_shape(op, output_shape, 3, fmt)
    strides = _spatial_arg(op, "strides", strides, fmt, 1)
    dilations = _spatial_arg(op, "dilations", dilations, fmt, 1)
    last = _channels_last(fmt)
    xs = dims_of(x)
    x4 = reshape(x, (xs[0], 1) + xs[1:] if last else xs[:2] + (1, xs[2]))
    out4 = out[:1] + [1] + out[1:] if last else out[:2] + [1] + out[2:]
    y = conv2d_transpose(x4, reshape(w, (1,) + dims_of(w)), out4, (1,) + strides, padding,
                         "NHWC" if last else "NCHW", (1,) + dilations)
    ys = dims_of(y)
    return reshape(y, ys[:1] + ys[2:] if last else ys[:2] + ys[3:])


def _upsample(x: Tensor, axis: int, s: int, n: int) -> Tensor:
    """`x` with s - 1 zeros between consecutive entries along `axis` (of size n)."""
    pads = [[0, 0]] * (x.ndim + 1)
    pads[axis + 1] = [0, s - 1]
    xe = pad(expand_dims(x, axis + 1), pads)
    d = dims_of(xe)
    xe = reshape(xe, d[:axis] + (n * s,) + d[axis + 2:])
    return xe[(slice(None),) * axis + (slice(0, (n - 1) * s + 1),)]


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NDHWC", dilations=None, name=None) -> Tensor:
    """The transpose (adjoint) of conv3d: its gradient w.r.t. the input. `filters` is
    [depth, height, width, out_channels, in_channels]; `output_shape` the full output
    shape. The spatial sizes of the input and output must be known.

    Example: `tf.nn.conv3d_transpose(tf.ones([1, 2, 3, 3, 8]), tf.ones([2, 3, 3, 4, 8]),
    [1, 4, 6, 6, 4], 2)` -> shape [1, 4, 6, 6, 4].
    """
    op = "conv3d_transpose"
    fmt = _data_format(op, data_format, _FORMATS[3])
    x, w = _operands(op, input, filters)
    _rank(op, "input", x, 5, fmt)
    _rank(op, "filters", w, 5, "[depth, height, width, out_channels, in_channels]")
    out = _output_shape(op, output_shape, 5, fmt)
    strides = _spatial_arg(op, "strides", strides, fmt, 3)
    dilations = _spatial_arg(op, "dilations", dilations, fmt, 3)
    padding = _padding_arg(op, padding, fmt, 3, explicit=False)
    if fmt == "NCDHW":
        x, out = _to_last(x), [out[0], *out[2:], out[1]]
    where = f"input {describe(x)}, filters {describe(w)}, output_shape {out} ({fmt})"
    ins, outs = x._shape[1:4], known_dims(out)[1:4]
    if None in ins or None in outs or None in w._shape:
        raise InvalidArgumentError(f"{op}: needs known spatial sizes and filter shape; "
                                   f"{where}")
    if _known_ne(x._shape[4], w._shape[4]) or _known_ne(known_dims(out)[4], w._shape[3]):
        raise InvalidArgumentError(f"{op}: channel counts disagree; {where}")
    # conv3d_transpose(x) = a stride-1 VALID conv3d, with the filters flipped and their
    # channels swapped, of x spread out by the strides and padded so that output o sees
    # every input i with i * s + t * d - before = o
    pads = []
    for ax in range(3):
        i, o, k, s, d = ins[ax], outs[ax], w._shape[ax], strides[ax], dilations[ax]
        ke = (k - 1) * d + 1
        fits = -(-o // s) if padding == "SAME" else max((o - ke) // s + 1, 0)
        if fits != i:
            raise InvalidArgumentError(
                f"{op}: a conv3d over the output's spatial size {list(outs)} gives "
                f"size {fits} on axis {ax}, not the input's {i}; {where}")
        before = _same_pads(o, k, s, d)[0] if padding == "SAME" else 0
        pads.append([ke - 1 - before, o + before - (i - 1) * s - 1])
        if s > 1:
            x = _upsample(x, ax + 1, s, i)
    x = pad(x, [[0, 0], *pads, [0, 0]])
    wf = transpose(reverse(w, [0, 1, 2]), (0, 1, 2, 4, 3))
    y = _conv3d_ndhwc(op, x, wf, (1, 1, 1), "VALID", dilations)
    return _to_first(y) if fmt == "NCDHW" else y


# --------------------------------------------------------------------------- pooling


def _pool_attrs(op: str, ksize, strides, padding, fmt: str) -> dict:
    """Normalized pooling attrs, memoized for hashable arguments (the hot path)."""
    key = (op, ksize, strides, padding, fmt)
    hit = _ATTRS_CACHE.get(key) if _static(ksize, strides, padding) else None
    if hit is None:
        explicit = op == "max_pool2d"  # TensorFlow's avg_pool2d takes only SAME/VALID
        hit = {"ksize": _spatial_arg(op, "ksize", ksize, fmt),
               "strides": _spatial_arg(op, "strides", strides, fmt),
               "padding": _padding_arg(op, padding, fmt, explicit=explicit),
               "data_format": fmt}
        pad = hit["padding"]
        if not isinstance(pad, str) and any(p >= k for pair, k in zip(pad, hit["ksize"])
                                            for p in pair):
            raise InvalidArgumentError(
                f"{op}: explicit padding {padding!r} must be smaller than the window "
                f"{list(hit['ksize'])} (a window would hold padding only)")
        if len(_ATTRS_CACHE) < 512 and _static(ksize, strides, padding):
            _ATTRS_CACHE[key] = hit
    return dict(hit)


def _pool_input(op: str, input, data_format, ok, what: str):
    fmt = _data_format(op, data_format)
    x = to_tensor(input, None, op, "input")
    if x.ndim != 4:
        _rank(op, "input", x, 4, fmt)
    if not ok(x.dtype):
        raise InvalidArgumentError(f"{op}: input must be {what}, got {describe(x)}")
    return x, fmt


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """The maximum of each ksize window. Example: `tf.nn.max_pool2d(x, 2, 2, "VALID")`
    halves the height and width of an NHWC `x`.
    """
    op = "max_pool2d"
    x, fmt = _pool_input(op, input, data_format, _is_real, "a real number tensor")
    # A window larger than the padded input fails in the kernel, which the engine reports
    # through MaxPool's shape rule.
    return run_kernel("MaxPool", {"x": x}, _pool_attrs(op, ksize, strides, padding, fmt))


def _is_real(dtype) -> bool:
    return dtype.is_floating or dtype.is_integer


def _max_pool_grad(x, dy, attrs):
    return run_kernel("MaxPoolGrad", {"x": x, "dy": dy}, attrs)


def _max_pool_gather(x, dx, attrs):
    return run_kernel("MaxPoolGradGrad", {"x": x, "dx": dx}, attrs)


# The argmax of each window is piecewise constant in x, so MaxPoolGrad and MaxPoolGradGrad
# have no derivative in x; in their second argument they are linear and adjoint to each
# other (scatter to / gather from the argmax).
defop("MaxPool", ["x"], shape=_max_pool_shape,
      vjp={"x": lambda g, x, **a: _max_pool_grad(x, g, a)},
      jvp={"x": lambda t, x, **a: _max_pool_gather(x, t, a)}, onnx=_onnx.pool("MaxPool"))

defop("MaxPoolGrad", ["x", "dy"], shape=_max_pool_grad_shape,
      vjp={"dy": lambda g, x, **a: _max_pool_gather(x, g, a)},
      jvp={"dy": lambda t, x, **a: _max_pool_grad(x, t, a)})

defop("MaxPoolGradGrad", ["x", "dx"], shape=_max_pool_grad_grad_shape,
      vjp={"dx": lambda g, x, **a: _max_pool_grad(x, g, a)},
      jvp={"dx": lambda t, x, **a: _max_pool_gather(x, t, a)})


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """The mean of each ksize window; with 'SAME' padding only real elements count.

    Example: `tf.nn.avg_pool2d(x, 2, 2, "VALID")` halves the height and width of `x`.
    """
    op = "avg_pool2d"
    x, fmt = _pool_input(op, input, data_format, _is_floating, "a floating-point tensor")
    return _avg_pool(x, _pool_attrs(op, ksize, strides, padding, fmt))


def _is_floating(dtype) -> bool:
    return dtype.is_floating


def _avg_pool(x, attrs):
    return run_kernel("AvgPool", {"x": x}, {k: attrs[k] for k in _POOL_ATTRS})


def _avg_pool_grad(dy, input_hw, attrs):
    a = {k: attrs[k] for k in _POOL_ATTRS}
    a["input_hw"] = tuple(input_hw)
    return run_kernel("AvgPoolGrad", {"dy": dy}, a)


defop("AvgPool", ["x"], shape=_avg_pool_shape,
      vjp={"x": lambda g, x_shape, **a: _avg_pool_grad(g, _hw(x_shape, a["data_format"]), a)},
      jvp={"x": lambda t, **a: _avg_pool(t, a)}, onnx=_onnx.pool("AveragePool"))

defop("AvgPoolGrad", ["dy"], shape=_avg_pool_grad_shape,
      vjp={"dy": lambda g, **a: _avg_pool(g, a)},
      jvp={"dy": lambda t, **a: _avg_pool_grad(t, a["input_hw"], a)})


# --------------------------------------------------------------------------- fused
# Made by the graph optimizer (function/rules/convolution.py, as TensorFlow's remapper
# makes _FusedConv2D) after differentiation, in NHWC only: no derivative rules.
# Each is its ops one after another on every backend; a backend with a kernel of the
# fused op's name (NumPy: generated direct convolutions) runs that instead.
# FusedConv2D's `activation`: "" (none) or the name of an op of one input `x` that runs
# with no attributes and keeps x's shape and dtype (any unary elementwise activation); a
# backend's fused kernel applies the ones it knows in its loops and runs any other's
# kernel after the bias.


def fused_activation(name: str, shape=(), dtype=None) -> bool:
    """Whether op `name` may be FusedConv2D's activation for an output of `shape`/`dtype`
    (its shape rule says it keeps them, with no attributes). Example:
    `fused_activation("Tanh")` -> True; `fused_activation("MatMul")` -> False."""
    if name == "":
        return True
    op = _reg.OPS.get(name)
    rule = _reg.SHAPES.get(name)
    if op is None or rule is None or list(op.inputs) != ["x"] or op.stateful or \
            op.num_outputs != 1:
        return False
    if dtype is None:
        return True
    try:
        (out, out_dtype), = rule({"x": tuple(shape)}, {"x": dtype}, {})
    except Exception:  # noqa: BLE001 - an op that needs attributes or rejects the dtype
        return False
    return tuple(out) == tuple(shape) and out_dtype is dtype


def _fused_conv2d_shape(shapes, dtypes, attrs):
    op = "FusedConv2D"
    dtype = _check_dtypes(op, dtypes)
    out = _conv_out_shape(op, shapes["x"], shapes["filters"], attrs)
    bias, channels = tuple(shapes["bias"]), out[-1]
    if len(bias) != 1 or _known_ne(bias[0], channels) or attrs["data_format"] != "NHWC":
        raise InvalidArgumentError(f"{op}: the bias must be a vector of the {channels} "
                                   f"output channels of an NHWC convolution, got shape "
                                   f"{list(bias)} ({attrs['data_format']})")
    if not fused_activation(attrs["activation"], out, dtype):
        raise InvalidArgumentError(f"{op}: activation must be '' or an op of one input x "
                                   f"that keeps its shape {list(out)} and dtype "
                                   f"{dtype.name} with no attributes, got "
                                   f"{attrs['activation']!r}")
    return [(out, dtype)]


def _checked(rule, inputs, attrs) -> None:
    """Run a composite op's shape rule on its operands (its ops would report theirs)."""
    rule({k: tuple(v._shape) for k, v in inputs.items()},
         {k: v.dtype for k, v in inputs.items()}, attrs)


def _fused_conv2d(inputs, attrs):
    _checked(_fused_conv2d_shape, inputs, attrs)
    y = run_kernel("Add", {"x": _conv(inputs["x"], inputs["filters"], attrs),
                           "y": inputs["bias"]})
    return run_kernel(attrs["activation"], {"x": y}) if attrs["activation"] else y


def _native_kernel(name: str, backend):
    return _reg.KERNELS[name][backend.name].func


def _fused_conv2d_native(inputs, attrs, backend):
    fused = _reg.KERNELS.get("FusedConv2D", {}).get(backend.name)
    if fused is not None:
        return fused.func(inputs, attrs, backend)
    y = _native_kernel("Conv2D", backend)({"x": inputs["x"], "filters": inputs["filters"]},
                                          {k: attrs[k] for k in _CONV_ATTRS}, backend)
    y = _native_kernel("Add", backend)({"x": y, "y": inputs["bias"]}, {}, backend)
    if attrs["activation"]:
        y = _native_kernel(attrs["activation"], backend)({"x": y}, {}, backend)
    return y


def _filter_bias_grad_shape(shapes, dtypes, attrs):
    (dw, dtype), = _backprop_filter_shape(shapes, dtypes, attrs)
    if attrs["data_format"] != "NHWC" or len(shapes["dy"]) != 4:
        raise InvalidArgumentError(f"Conv2DBackpropFilterWithBias: NHWC operands of rank 4 "
                                   f"only, got dy of shape {list(shapes['dy'])} "
                                   f"({attrs['data_format']})")
    return [(dw, dtype), ((shapes["dy"][-1],), dtype)]


def _filter_bias_grad(inputs, attrs):
    _checked(_filter_bias_grad_shape, inputs, attrs)
    return [_conv_filter(inputs["x"], inputs["dy"], attrs["filter_hw"], attrs),
            run_kernel("Sum", {"x": inputs["dy"]}, {"axis": (0, 1, 2), "keepdims": False})]


def _filter_bias_grad_native(inputs, attrs, backend):
    fused = _reg.KERNELS.get("Conv2DBackpropFilterWithBias", {}).get(backend.name)
    if fused is not None:
        return fused.func(inputs, attrs, backend)
    return [_native_kernel("Conv2DBackpropFilter", backend)(inputs, attrs, backend),
            _native_kernel("Sum", backend)({"x": inputs["dy"]},
                                           {"axis": (0, 1, 2), "keepdims": False}, backend)]


# act(conv2d(x, filters) + bias), act "" (none) or as `fused_activation` allows
defop("FusedConv2D", ["x", "filters", "bias"], shape=_fused_conv2d_shape, impl=_fused_conv2d,
      native=_fused_conv2d_native, differentiable=False)
# (Conv2DBackpropFilter(x, dy), the sum of dy over its images and pixels): a convolution's
# filter gradient with its bias's, in one pass over dy
defop("Conv2DBackpropFilterWithBias", ["x", "dy"], num_outputs=2,
      shape=_filter_bias_grad_shape, impl=_filter_bias_grad, native=_filter_bias_grad_native,
      differentiable=False)
