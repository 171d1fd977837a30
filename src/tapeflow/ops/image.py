"""Image ops (`tapeflow.image`): resizing, flips, brightness, contrast, standardization.

Every op here is a composite of public ops (einsum, gather, reverse, reductions, casts), so
each is differentiable in both modes, to any order, eagerly and traced, with no rules of
its own. Images are `[height, width, channels]` or `[batch, height, width, channels]`.

Resizing follows TensorFlow 2's kernels (half-pixel centers): output pixel `o` of an axis
resized from `n` to `m` samples the input at `(o + 0.5) * n / m - 0.5`; "bilinear" and
"bicubic" interpolate there (ResizeBilinear, ResizeBicubic), "nearest" takes input pixel
`min(floor((o + 0.5) * n / m), n - 1)`, "area" averages over each output pixel's
footprint (ResizeArea), and `antialias` and the other kernels follow ScaleAndTranslate.
Each axis is a linear map, so a resize is two small weight matrices applied with einsum;
positions are computed in float32, as TF's kernels do, so that rounding at exact ties
picks the same pixels.
"""
from __future__ import annotations

import functools
import math as _math

import numpy as np

from .._core import dtypes as _dt
from .._core.errors import InvalidArgumentError
from .._core.shape import dims_of
from .._core.tensor import Tensor
from ._args import ArgumentTypeError, dtype_arg, show, to_tensor
from ._define import composite
from .array import reshape, reverse, shape as _shape, stack
from .creation import range as _range
from .indexing import gather, gather_nd, where
from .linalg import einsum
from .math import (abs as _abs, cast, clip_by_value, floor, floordiv, logical_and,
                   greater_equal, less, less_equal, maximum, minimum, multiply, sign, sqrt)
from .reduction import reduce_mean, reduce_variance
from .array import concat, pad, tile, transpose as _transpose, unstack
from .math import equal, floormod, greater, pow as _pow
from .reduction import reduce_max, reduce_min, reduce_sum

__all__ = ["ResizeMethod", "resize", "flip_left_right", "flip_up_down", "adjust_brightness",
           "adjust_contrast", "per_image_standardization", "convert_image_dtype",
           "saturate_cast"]


class ResizeMethod:
    """Names of resize methods (`tf.image.ResizeMethod.BILINEAR == "bilinear"`)."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_SUPPORTED = tuple(v for k, v in vars(ResizeMethod).items() if k.isupper())


# --------------------------------------------------------------------------- helpers


def _image(op: str, image, arg: str = "image") -> Tensor:
    return to_tensor(image, None, op, arg)


def _rank_3_or_4(op: str, t: Tensor, arg: str = "image") -> int:
    if t.ndim not in (3, 4):
        raise InvalidArgumentError(
            f"{op}: '{arg}' (shape {list(t.shape)}) must have either 3 or 4 dimensions "
            "([height, width, channels] or [batch, height, width, channels])")
    return t.ndim


def _at_least_3d(op: str, t: Tensor, arg: str = "image") -> None:
    if t.ndim < 3:
        raise InvalidArgumentError(
            f"{op}: '{arg}' (shape {list(t.shape)}) must be at least 3-D: [..., height, "
            "width, channels]")


def _float_work_dtype(dtype: _dt.DType) -> _dt.DType:
    """The float dtype an adjustment of `dtype` images runs in: floats stay themselves
    (TF rounds float64 through float32; computing in float64 is exact to more digits),
    bfloat16 and integer images go through float32 like TF's."""
    return dtype if dtype in (_dt.float16, _dt.float32, _dt.float64) else _dt.float32


def _bilinear_weights(n_in: int, n_out: int) -> np.ndarray:
    """The [n_out, n_in] matrix of TF's ResizeBilinear along one axis (half-pixel centers)."""
    scale = np.float32(n_in) / np.float32(n_out)
    o = np.arange(n_out, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale - np.float32(0.5)
    lower_f = np.floor(pos)
    lerp = (pos - lower_f).astype(np.float64)
    lower = np.maximum(lower_f.astype(np.int64), 0)
    upper = np.minimum(np.ceil(pos).astype(np.int64), n_in - 1)
    w = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(w, (rows, lower), 1.0 - lerp)
    np.add.at(w, (rows, upper), lerp)
    return w


def _keys_cubic(x, a: float = -0.5):
    """Keys' cubic convolution kernel (Catmull-Rom for a = -0.5), radius 2."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _mitchell_cubic(x):
    x = np.abs(x)
    near = ((7 / 6) * x - 2) * x * x + 8 / 9
    far = ((-7 / 18 * x + 2) * x - 10 / 3) * x + 16 / 9
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _lanczos(radius: float):
    def kernel(x):
        x = np.abs(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius) / (np.pi * x) ** 2
        return np.where(x > radius, 0.0, np.where(x <= 1e-3, 1.0, v))
    return kernel


def _gaussian(x):
    x = np.abs(x)  # TF's kernel: radius 1.5, sigma 0.5
    return np.where(x >= 1.5, 0.0, np.exp(-x * x / (2 * 0.5 ** 2)))


# TF's ScaleAndTranslate kernels by resize method: (function, radius)
_KERNELS = {"triangle": (lambda x: np.maximum(0.0, 1.0 - np.abs(x)), 1.0),
            "keyscubic": (_keys_cubic, 2.0), ResizeMethod.MITCHELLCUBIC: (_mitchell_cubic, 2.0),
            ResizeMethod.LANCZOS3: (_lanczos(3.0), 3.0),
            ResizeMethod.LANCZOS5: (_lanczos(5.0), 5.0), ResizeMethod.GAUSSIAN: (_gaussian, 1.5)}


def _scale_translate_weights(n_in: int, n_out: int, kind: str, antialias: bool) -> np.ndarray:
    """The [n_out, n_in] matrix of TF's ScaleAndTranslate (no translation) with kernel
    `kind`: output pixel o samples the input at (o + 0.5) * n_in / n_out; with `antialias`,
    shrinking widens the kernel by the shrink factor. Taps outside the image are dropped
    and each row renormalized."""
    kernel, radius = _KERNELS[kind]
    inv_scale = np.float32(1.0) / (np.float32(n_out) / np.float32(n_in))
    kernel_scale = max(float(inv_scale), 1.0) if antialias else 1.0
    reach = radius * kernel_scale
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        sample = float(np.float32(o + 0.5) * inv_scale)
        lo = min(max(_math.ceil(sample - reach - 0.5), 0), n_in - 1)
        hi = min(max(_math.floor(sample + reach - 0.5), 0), n_in - 1) + 1
        row = kernel((np.arange(lo, hi) + 0.5 - sample) / kernel_scale)
        total = row.sum()
        if abs(total) >= 1000 * np.finfo(np.float32).tiny:
            w[o, lo:hi] = row / total
    return w


def _bicubic_weights(n_in: int, n_out: int) -> np.ndarray:
    """The [n_out, n_in] matrix of TF's ResizeBicubic with half-pixel centers: Keys' cubic
    (a = -0.5) at the fraction of the sample position rounded to 1/1024 (TF reads its
    coefficients from a 1024-entry table), taps outside the image dropped and the weights
    renormalized."""
    scale = np.float32(n_in) / np.float32(n_out)
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        pos = (np.float32(o) + np.float32(0.5)) * scale - np.float32(0.5)
        base = int(np.floor(pos))
        frac = float(np.rint((pos - np.float32(base)) * np.float32(1024))) / 1024
        taps = np.arange(base - 1, base + 3)
        row = _keys_cubic(np.array([1 + frac, frac, 1 - frac, 2 - frac]))
        row = np.where((taps >= 0) & (taps < n_in), row, 0.0)
        total = row.sum()
        for t, v in zip(taps, row / total):
            if 0 <= t < n_in:
                w[o, t] += v
    return w


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """The [n_out, n_in] matrix of TF's ResizeArea: output pixel o averages the input over
    [o * s, (o + 1) * s) (s = n_in / n_out), each input pixel weighted by its overlap."""
    s = np.float32(n_in) / np.float32(n_out)
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        lo, hi = np.float32(o) * s, np.float32(o + 1) * s
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            if i < lo:
                overlap = s if i + 1 > hi else i + 1 - lo
            else:
                overlap = hi - i if i + 1 > hi else 1.0
            w[o, min(max(i, 0), n_in - 1)] += float(overlap) / float(s)
    return w


def _nearest_indices(n_in: int, n_out: int) -> np.ndarray:
    """Input pixel of each output pixel in TF's ResizeNearestNeighbor (half-pixel centers)."""
    scale = np.float32(n_in) / np.float32(n_out)
    pos = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale
    return np.clip(np.floor(pos).astype(np.int64), 0, n_in - 1).astype(np.int32)


def _size_arg(op: str, size) -> tuple[int, int]:
    bad = (f"{op}: 'size' must be a 1-D int32 Tensor of 2 elements: new_height, new_width, "
           f"got {show(size)}")
    if isinstance(size, Tensor):
        if not size.dtype.is_integer or size.ndim != 1:
            raise ArgumentTypeError(bad)
        size = size.numpy().tolist()
    elif isinstance(size, np.ndarray):
        if size.dtype.kind not in "iu" or size.ndim != 1:
            raise ArgumentTypeError(bad)
        size = size.tolist()
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise InvalidArgumentError(bad)
    dims = []
    for d in size:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer, Tensor)):
            raise ArgumentTypeError(bad)
        dims.append(int(d))
    if min(dims) <= 0:
        raise InvalidArgumentError(f"{op}: output dimensions must be positive, got size "
                                   f"{dims}")
    return dims[0], dims[1]


# --------------------------------------------------------------------------- public ops


@composite("resize")
def resize(images, size, method: str = ResizeMethod.BILINEAR,
           preserve_aspect_ratio: bool = False, antialias: bool = False,
           name: str | None = None) -> Tensor:
    """Resize `images` ([h, w, c] or [n, h, w, c]) to `size` = [new_height, new_width].

    `method` is "bilinear" (the default), "nearest" (keeps the dtype), "bicubic", "area",
    "lanczos3", "lanczos5", "gaussian" or "mitchellcubic" (all but "nearest" return
    float32). `antialias=True` widens the filter when shrinking (not for "nearest").
    With `preserve_aspect_ratio`, the image is scaled to fit inside `size`.
    Example:
        >>> tf.image.resize(tf.constant([[[0.0], [4.0]]]), [1, 4])[0, :, 0].numpy()
        array([0., 1., 3., 4.], dtype=float32)
    """
    op = "resize"
    images = _image(op, images, "images")
    rank = _rank_3_or_4(op, images, "images")
    if not isinstance(method, str):
        raise ArgumentTypeError(f"{op}: method must be a string such as 'bilinear', got "
                                f"{show(method)}")
    method = method.lower()
    if method not in _SUPPORTED:
        raise InvalidArgumentError(f"{op}: Resize method is not implemented: {method!r} "
                                   f"(supported: {list(_SUPPORTED)})")
    h_axis = rank - 3
    in_h, in_w = images.shape[h_axis], images.shape[h_axis + 1]
    if in_h is None or in_w is None:
        raise InvalidArgumentError(
            f"{op}: the height and width of 'images' must be known (got shape "
            f"{list(images.shape)}); give the traced function an input_signature with them")
    if in_h == 0 or in_w == 0:
        raise InvalidArgumentError(f"{op}: input image must be of non-zero size, got shape "
                                   f"{list(images.shape)}")
    out_h, out_w = _size_arg(op, size)
    if preserve_aspect_ratio:
        factor = min(np.float32(out_h) / np.float32(in_h), np.float32(out_w) / np.float32(in_w))
        out_h = int(np.round(factor * np.float32(in_h)))
        out_w = int(np.round(factor * np.float32(in_w)))

    if method == ResizeMethod.NEAREST_NEIGHBOR:  # a selection: dtype kept
        out = images
        if out_h != in_h:
            out = gather(out, _nearest_indices(in_h, out_h), axis=h_axis)
        if out_w != in_w:
            out = gather(out, _nearest_indices(in_w, out_w), axis=h_axis + 1)
        return out

    out = cast(images, _dt.float32)
    for axis, n_in, n_out in ((h_axis, in_h, out_h), (h_axis + 1, in_w, out_w)):
        w = _axis_weights(method, n_in, n_out, bool(antialias))
        if w is not None:
            equation = "ip,...pqc->...iqc" if axis == h_axis else "jq,...iqc->...ijc"
            out = einsum(equation, w, out)
    return out


@functools.lru_cache(maxsize=128)  # training loops resize the same sizes again and again
def _axis_weights(method: str, n_in: int, n_out: int, antialias: bool):
    """The float32 weight matrix of one axis, or None where it is exactly the identity
    (bilinear and bicubic at the same size)."""
    w = _axis_weights_f64(method, n_in, n_out, antialias)
    if n_in == n_out and np.array_equal(w, np.eye(n_in)):
        return None
    w = w.astype(np.float32)
    w.flags.writeable = False
    return w


def _axis_weights_f64(method: str, n_in: int, n_out: int, antialias: bool) -> np.ndarray:
    if method == ResizeMethod.BILINEAR:
        return (_scale_translate_weights(n_in, n_out, "triangle", True) if antialias
                else _bilinear_weights(n_in, n_out))
    if method == ResizeMethod.BICUBIC:
        return (_scale_translate_weights(n_in, n_out, "keyscubic", True) if antialias
                else _bicubic_weights(n_in, n_out))
    if method == ResizeMethod.AREA:  # always averages; antialias changes nothing
        return _area_weights(n_in, n_out)
    return _scale_translate_weights(n_in, n_out, method, antialias)


@composite("flip_left_right")
def flip_left_right(image) -> Tensor:
    """Reverse the width axis of `image` ([h, w, c] or [n, h, w, c]).

    Example: `tf.image.flip_left_right(tf.constant([[[1], [2]]]))` -> [[[2], [1]]].
    """
    image = _image("flip_left_right", image)
    rank = _rank_3_or_4("flip_left_right", image)
    return reverse(image, [rank - 2])


@composite("flip_up_down")
def flip_up_down(image) -> Tensor:
    """Reverse the height axis of `image` ([h, w, c] or [n, h, w, c]).

    Example: `tf.image.flip_up_down(tf.constant([[[1]], [[2]]]))` -> [[[2]], [[1]]].
    """
    image = _image("flip_up_down", image)
    rank = _rank_3_or_4("flip_up_down", image)
    return reverse(image, [rank - 3])


@composite("adjust_brightness")
def adjust_brightness(image, delta) -> Tensor:
    """`image + delta`, in the [0, 1) scale for integer images (converted there and back,
    saturating); the result has `image`'s dtype.

    Example: `tf.image.adjust_brightness([[[0.5]]], 0.25)` -> [[[0.75]]].
    """
    image = _image("adjust_brightness", image)
    orig = image.dtype
    flt = _to_float(image)
    adjusted = flt + cast(delta, flt.dtype)
    return convert_image_dtype(adjusted, orig, saturate=True)


@composite("adjust_contrast")
def adjust_contrast(images, contrast_factor) -> Tensor:
    """`(x - mean) * contrast_factor + mean` per channel of each image, where `mean` is over
    the height and width axes (the last three axes are [height, width, channels]).

    Example: `tf.image.adjust_contrast([[[1.0], [3.0]]], 2.0)` -> [[[0.0], [4.0]]].
    """
    op = "adjust_contrast"
    images = _image(op, images, "images")
    _at_least_3d(op, images, "images")
    orig = images.dtype
    flt = _to_float(images)
    factor = cast(contrast_factor, flt.dtype)
    if factor.ndim != 0:
        raise InvalidArgumentError(f"{op}: contrast_factor must be a scalar, got shape "
                                   f"{list(factor.shape)}")
    mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
    adjusted = (flt - mean) * factor + mean
    return convert_image_dtype(adjusted, orig, saturate=True)


@composite("per_image_standardization")
def per_image_standardization(image) -> Tensor:
    """`(x - mean) / max(stddev, 1 / sqrt(N))` over each image's last three axes (N their
    number of elements); a float32 result, as in TF.

    Example: `tf.image.per_image_standardization([[[1.0], [3.0]]])` -> [[[-1.], [1.]]].
    """
    op = "per_image_standardization"
    image = _image(op, image)
    _at_least_3d(op, image)
    x = cast(image, _dt.float32)
    if None in image.shape[-3:]:
        raise InvalidArgumentError(f"{op}: the last three dimensions of 'image' must be "
                                   f"known, got shape {list(image.shape)}")
    n = _math.prod(image.shape[-3:])
    axes = [-3, -2, -1]
    mean = reduce_mean(x, axis=axes, keepdims=True)
    variance = reduce_variance(x, axis=axes, keepdims=True)
    # max(sqrt(v), 1/sqrt(N)) as sqrt(max(v, 1/N)): the same value, and a uniform image
    # (v = 0) gets a zero gradient through the floor instead of sqrt'(0) * 0 = NaN.
    adjusted_stddev = sqrt(maximum(variance, np.float32(1.0 / max(n, 1))))
    return (x - mean) / adjusted_stddev


def _to_float(image: Tensor) -> Tensor:
    work = _float_work_dtype(image.dtype)
    return image if image.dtype is work else convert_image_dtype(image, work)


@composite("saturate_cast")
def saturate_cast(value, dtype, name: str | None = None) -> Tensor:
    """Cast `value` to `dtype`, clamping it first to the range `dtype` can hold.

    Example: `tf.dtypes.saturate_cast([-1.0, 300.0], tf.uint8)` -> [0, 255].
    """
    dtype = dtype_arg("saturate_cast", dtype)
    value = to_tensor(value, None, "saturate_cast", "value")
    src = value.dtype
    if not (src.is_bool or src.is_complex or dtype.is_bool or dtype.is_complex):
        lo, hi = _clamp_bounds(src, dtype)
        if lo is not None:
            value = maximum(value, lo)
        if hi is not None:
            value = minimum(value, hi)
    return cast(value, dtype)


def _clamp_bounds(src: _dt.DType, dst: _dt.DType):
    """`dst`'s range as values of `src` that stay inside it (None: no clamp needed). A
    bound an inexact float rounds outward (int32's max in float32) steps back inside."""
    bounds = []
    for limit, inward in ((dst.min, np.inf), (dst.max, -np.inf)):
        own = src.min if inward > 0 else src.max
        if (limit <= own) if inward > 0 else (limit >= own):
            bounds.append(None)
            continue
        v = np.array(limit).astype(src.as_numpy_dtype)
        if src.is_floating and ((float(v) < limit) if inward > 0 else (float(v) > limit)):
            v = np.nextafter(v, np.array(inward, v.dtype))
        bounds.append(v)
    return bounds


@composite("convert_image_dtype")
def convert_image_dtype(image, dtype, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """Convert `image` to `dtype`, rescaling: floats hold [0, 1], integers [0, MAX].

    Example: `tf.image.convert_image_dtype(tf.constant([255], tf.uint8), tf.float32)`
    -> [1.0].
    """
    op = "convert_image_dtype"
    dtype = dtype_arg(op, dtype)
    image = _image(op, image)
    src = image.dtype
    for d, what in ((src, "image"), (dtype, "dtype")):
        if not (d.is_floating or d.is_integer):
            raise ArgumentTypeError(f"{op}: {what} must be a floating point or integer "
                                    f"type, got {d.name}")
    if src is dtype:
        return image
    to = saturate_cast if saturate else cast
    if src.is_integer and dtype.is_integer:
        in_max, out_max = int(src.max), int(dtype.max)
        if in_max > out_max:  # scale down first: in_max lands below out_max + 1
            return to(floordiv(image, (in_max + 1) // (out_max + 1)), dtype)
        return multiply(to(image, dtype), (out_max + 1) // (in_max + 1))
    if src.is_floating and dtype.is_floating:
        return cast(image, dtype)
    if src.is_integer:  # to float: cast, then scale
        return multiply(cast(image, dtype), 1.0 / int(src.max))
    return to(multiply(image, float(dtype.max) + 0.5), dtype)  # from float: scale, then cast


# --------------------------------------------------------------------------- transforms

_FILL_MODES = ("constant", "nearest", "reflect", "wrap")


def _trunc(x: Tensor) -> Tensor:
    """Rounding toward zero (C++'s integer cast of a float)."""
    return sign(x) * floor(_abs(x))


def _map_coordinate(coord: Tensor, size: Tensor, fill_mode: str) -> Tensor:
    """Where an input coordinate outside [0, size - 1] reads, by `fill_mode`, with
    TensorFlow's ImageProjectiveTransformV3 rules (so "wrap" and "reflect" agree with it
    at the borders, including its clamp after mapping)."""
    if fill_mode == "constant":
        return coord  # reads outside the image give fill_value
    last = size - 1.0
    if fill_mode == "reflect":
        twice = 2.0 * size
        low = twice * _trunc(-coord / twice) + coord
        low = where(less(low, -size), low + twice, -low - 1.0)
        high = coord - twice * _trunc(coord / twice)
        high = where(greater_equal(high, size), twice - high - 1.0, high)
        coord = where(less(coord, 0.0), low, where(less_equal(coord, last), coord, high))
    elif fill_mode == "wrap":
        span = maximum(last, 1.0)  # only used where size > 1
        low = coord + size * (_trunc(-coord / span) + 1.0)
        high = coord - size * _trunc(coord / span)
        coord = where(less(coord, 0.0), low, where(less_equal(coord, last), coord, high))
    # a size-1 axis reads its only pixel; every mode ends clamped into the image
    coord = where(less_equal(size, 1.0), coord * 0.0, coord)
    return clip_by_value(coord, 0.0, maximum(last, 0.0))


def affine_transform(images, transforms, interpolation: str = "bilinear",
                     fill_mode: str = "constant", fill_value=0.0) -> Tensor:
    """Projective transform of a batch of images, as TensorFlow's
    ImageProjectiveTransformV3 (Keras's `ops.image.affine_transform`, channels last).

    `transforms` is `[8]` or `[batch, 8]`: `[a0, a1, a2, b0, b1, b2, c0, c1]` maps output
    pixel `(x, y)` (column, row) to the input point `((a0 x + a1 y + a2) / k,
    (b0 x + b1 y + b2) / k)`, `k = c0 x + c1 y + 1`, which is read with "nearest"
    (rounding half away from zero) or "bilinear" interpolation; points outside the image
    follow `fill_mode` ("constant" reads `fill_value`, "nearest", "reflect", "wrap").
    Built from gathers and elementwise ops, so it traces with unknown sizes.

    Example (shifted left by one column, the freed column filled with 0):
        >>> from tapeflow.ops.image import affine_transform
        >>> img = tf.reshape(tf.range(4.0), [2, 2, 1])
        >>> affine_transform(img, [1., 0., 1., 0., 1., 0., 0., 0.])[..., 0].numpy()
        array([[1., 0.],
               [3., 0.]], dtype=float32)
    """
    op = "affine_transform"
    images = _image(op, images, "images")
    rank = _rank_3_or_4(op, images, "images")
    if interpolation not in ("nearest", "bilinear"):
        raise InvalidArgumentError(f"{op}: interpolation must be 'nearest' or 'bilinear', "
                                   f"got {interpolation!r}")
    if fill_mode not in _FILL_MODES:
        raise InvalidArgumentError(f"{op}: fill_mode must be one of {_FILL_MODES}, got "
                                   f"{fill_mode!r}")
    batched = images if rank == 4 else reshape(images, [1, *dims_of(images)])
    t = cast(to_tensor(transforms, None, op, "transforms"), _dt.float32)
    if t.ndim == 1:
        t = reshape(t, [1, 8])
    if t.ndim != 2 or t._shape[-1] not in (8, None):
        raise InvalidArgumentError(f"{op}: transforms must have shape [8] or [batch, 8], "
                                   f"got {list(t._shape)}")
    dims = _shape(batched)
    n, h, w = dims[0], dims[1], dims[2]
    hf, wf = cast(h, _dt.float32), cast(w, _dt.float32)
    ys = reshape(cast(_range(h), _dt.float32), [1, -1, 1])
    xs = reshape(cast(_range(w), _dt.float32), [1, 1, -1])
    col = [reshape(t[:, i], [-1, 1, 1]) for i in range(8)]
    k = col[6] * xs + col[7] * ys + 1.0
    in_x = (col[0] * xs + col[1] * ys + col[2]) / k
    in_y = (col[3] * xs + col[4] * ys + col[5]) / k
    in_x = _map_coordinate(in_x, wf, fill_mode)
    in_y = _map_coordinate(in_y, hf, fill_mode)
    # to [n, h, w] by broadcasting against zeros (sizes may be unknown while tracing)
    zero = in_x * 0.0 + in_y * 0.0
    in_x, in_y = in_x + zero, in_y + zero
    batch = reshape(_range(n), [-1, 1, 1]) + cast(zero, _dt.int32)
    work = batched.dtype if batched.dtype.is_floating else _dt.float32
    source = cast(batched, work)
    fill = cast(fill_value, work)

    def read(y, x):
        # y, x: float pixel indices; outside the image a read gives fill_value
        inside = logical_and(logical_and(greater_equal(y, 0.0), less(y, hf)),
                             logical_and(greater_equal(x, 0.0), less(x, wf)))
        iy = cast(clip_by_value(y, 0.0, hf - 1.0), _dt.int32)
        ix = cast(clip_by_value(x, 0.0, wf - 1.0), _dt.int32)
        values = gather_nd(source, stack([batch, iy, ix], axis=-1))
        return where(inside[..., None], values, fill)

    if interpolation == "nearest":
        out = read(sign(in_y) * floor(_abs(in_y) + 0.5), sign(in_x) * floor(_abs(in_x) + 0.5))
    else:
        y0, x0 = floor(in_y), floor(in_x)
        y1, x1 = y0 + 1.0, x0 + 1.0
        wy0, wy1 = (y1 - in_y)[..., None], (in_y - y0)[..., None]
        wx0, wx1 = (x1 - in_x)[..., None], (in_x - x0)[..., None]
        out = (wy0 * (wx0 * read(y0, x0) + wx1 * read(y0, x1))
               + wy1 * (wx0 * read(y1, x0) + wx1 * read(y1, x1)))
    if not images.dtype.is_floating:
        out = cast(out, images.dtype)
    # the sizes the gathers lost when traced come back from the input's static shape
    return reshape(out, dims_of(images))



# --------------------------------------------------------------------------- issue 31's images
# Geometry (rot90, transpose, crops and pads), colour (grayscale, HSV, hue, saturation,
# gamma) and total_variation / image_gradients, as TensorFlow 2.21 computes them: all
# composites of the ops above, so each is differentiable where its ops are.

__all__ += ["rot90", "transpose", "central_crop", "pad_to_bounding_box",
            "crop_to_bounding_box", "resize_with_crop_or_pad", "resize_with_pad",
            "adjust_gamma", "adjust_hue", "adjust_saturation", "rgb_to_grayscale",
            "grayscale_to_rgb", "rgb_to_hsv", "hsv_to_rgb", "total_variation",
            "image_gradients"]


def _hw(op: str, image: Tensor, arg: str = "image") -> tuple[int, int]:
    """The static height and width of a 3-D or 4-D image (ValueError if unknown)."""
    _rank_3_or_4(op, image, arg)
    h, w = image.shape[-3], image.shape[-2]
    if h is None or w is None:
        raise ValueError(f"{op}: the height and width of '{arg}' must be known, got shape "
                         f"{list(image.shape)}")
    return h, w


def _swap_hw(image: Tensor) -> Tensor:
    return _transpose(image, [1, 0, 2] if image.ndim == 3 else [0, 2, 1, 3])


@composite("rot90")
def rot90(image, k=1, name=None) -> Tensor:
    """`image` rotated counter-clockwise by k quarter turns ([h, w, c] or [n, h, w, c]).

    Example: `tf.image.rot90(tf.constant([[[1], [2]], [[3], [4]]]))` -> [[[2], [4]],
    [[1], [3]]].
    """
    image = _image("rot90", image)
    _rank_3_or_4("rot90", image)
    k = int(k) % 4
    if k == 0:
        return image
    if k == 1:
        return _swap_hw(flip_left_right(image))
    if k == 2:
        return flip_up_down(flip_left_right(image))
    return flip_left_right(_swap_hw(image))


@composite("transpose")
def transpose(image, name=None) -> Tensor:
    """Height and width swapped ([h, w, c] -> [w, h, c], batches too).

    Example: `tf.image.transpose(tf.zeros([2, 3, 1])).shape` -> [3, 2, 1].
    """
    image = _image("transpose", image)
    _rank_3_or_4("transpose", image)
    return _swap_hw(image)


@composite("central_crop")
def central_crop(image, central_fraction) -> Tensor:
    """The central `central_fraction` (in (0, 1]) of the height and width, with TF's
    offsets int((size - size * fraction) / 2) on each side.

    Example: `tf.image.central_crop(tf.zeros([4, 4, 1]), 0.5).shape` -> [2, 2, 1].
    """
    image = _image("central_crop", image)
    f = float(central_fraction)
    if f <= 0.0 or f > 1.0:
        raise ValueError("central_crop: central_fraction must be within (0, 1], got "
                         f"{central_fraction!r}")
    h, w = _hw("central_crop", image)
    if f == 1.0:
        return image
    top, left = int((h - h * f) / 2), int((w - w * f) / 2)
    return crop_to_bounding_box(image, top, left, h - 2 * top, w - 2 * left)


def _box_ints(op: str, **values) -> dict:
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor):
            v = v.numpy()
        try:
            out[k] = int(v)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"{op}: {k} must be an int, got {show(v)}") from None
    return out


@composite("pad_to_bounding_box")
def pad_to_bounding_box(image, offset_height, offset_width, target_height,
                        target_width) -> Tensor:
    """`image` placed at (offset_height, offset_width) in a zero image of the target size.

    Example: `tf.image.pad_to_bounding_box(tf.ones([1, 1, 1]), 1, 0, 2, 2)` ->
    [[[0], [0]], [[1], [0]]].
    """
    op = "pad_to_bounding_box"
    image = _image(op, image)
    h, w = _hw(op, image)
    a = _box_ints(op, offset_height=offset_height, offset_width=offset_width,
                  target_height=target_height, target_width=target_width)
    if a["offset_height"] < 0 or a["offset_width"] < 0:
        raise ValueError(f"{op}: offset_height and offset_width must be >= 0, got "
                         f"{a['offset_height']} and {a['offset_width']}")
    bottom = a["target_height"] - a["offset_height"] - h
    right = a["target_width"] - a["offset_width"] - w
    if bottom < 0 or right < 0:
        raise ValueError(f"{op}: the image ({h}x{w}) at offset ({a['offset_height']}, "
                         f"{a['offset_width']}) does not fit in {a['target_height']}x"
                         f"{a['target_width']}: target_height/width must be >= "
                         "offset + image size")
    paddings = [[a["offset_height"], bottom], [a["offset_width"], right], [0, 0]]
    return pad(image, paddings if image.ndim == 3 else [[0, 0]] + paddings)


@composite("crop_to_bounding_box")
def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width) -> Tensor:
    """The target_height x target_width window of `image` at (offset_height, offset_width).

    Example: `tf.image.crop_to_bounding_box(tf.zeros([4, 4, 1]), 1, 1, 2, 3).shape` ->
    [2, 3, 1].
    """
    op = "crop_to_bounding_box"
    image = _image(op, image)
    h, w = _hw(op, image)
    a = _box_ints(op, offset_height=offset_height, offset_width=offset_width,
                  target_height=target_height, target_width=target_width)
    top, left, th, tw = (a["offset_height"], a["offset_width"], a["target_height"],
                         a["target_width"])
    if top < 0 or left < 0:
        raise ValueError(f"{op}: offset_height and offset_width must be >= 0, got {top} "
                         f"and {left}")
    if th <= 0 or tw <= 0:
        raise ValueError(f"{op}: target_height and target_width must be > 0, got {th} "
                         f"and {tw}")
    if top + th > h or left + tw > w:
        raise ValueError(f"{op}: the window {th}x{tw} at ({top}, {left}) exceeds the "
                         f"image ({h}x{w})")
    return image[..., top:top + th, left:left + tw, :]


@composite("resize_with_crop_or_pad")
def resize_with_crop_or_pad(image, target_height, target_width) -> Tensor:
    """`image` centrally cropped and/or zero-padded to target_height x target_width.

    Example: `tf.image.resize_with_crop_or_pad(tf.zeros([4, 2, 1]), 2, 4).shape` ->
    [2, 4, 1].
    """
    op = "resize_with_crop_or_pad"
    image = _image(op, image)
    h, w = _hw(op, image)
    a = _box_ints(op, target_height=target_height, target_width=target_width)
    th, tw = a["target_height"], a["target_width"]
    if th <= 0 or tw <= 0:
        raise ValueError(f"{op}: target_height and target_width must be > 0, got {th} "
                         f"and {tw}")
    dh, dw = th - h, tw - w
    cropped = crop_to_bounding_box(image, max(-dh // 2, 0), max(-dw // 2, 0), min(th, h),
                                   min(tw, w))
    return pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), th, tw)


@composite("resize_with_pad")
def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                    antialias=False) -> Tensor:
    """`image` resized to fit target_height x target_width keeping its aspect ratio, then
    zero-padded (centred) to that size; float32 like `resize`.

    Example: `tf.image.resize_with_pad(tf.ones([2, 4, 1]), 4, 4).shape` -> [4, 4, 1].
    """
    op = "resize_with_pad"
    image = _image(op, image)
    h, w = _hw(op, image)
    a = _box_ints(op, target_height=target_height, target_width=target_width)
    th, tw = a["target_height"], a["target_width"]
    if th <= 0 or tw <= 0:
        raise ValueError(f"{op}: target_height and target_width must be > 0, got {th} "
                         f"and {tw}")
    # TensorFlow computes these sizes in float32
    f32 = np.float32
    ratio = max(f32(w) / f32(tw), f32(h) / f32(th))
    rh, rw = f32(h) / ratio, f32(w) / ratio
    top = max(0, int(np.floor((f32(th) - rh) / f32(2))))
    left = max(0, int(np.floor((f32(tw) - rw) / f32(2))))
    resized = resize(image, [int(np.floor(rh)), int(np.floor(rw))], method,
                     antialias=antialias)
    return pad_to_bounding_box(resized, top, left, th, tw)


def _float_image(image: Tensor) -> Tensor:
    """float16/float32 images as they are, others in float32 (TensorFlow's colour ops)."""
    if image.dtype in (_dt.float16, _dt.float32):
        return image
    return convert_image_dtype(image, _dt.float32)


@composite("adjust_gamma")
def adjust_gamma(image, gamma=1, gain=1) -> Tensor:
    """gain * image ** gamma (integer images in the [0, 1] scale, converted back).

    Example: `tf.image.adjust_gamma([[[0.25]]], 2.0)` -> [[[0.0625]]].
    """
    image = _image("adjust_gamma", image)
    if isinstance(gamma, (int, float)) and gamma < 0:
        raise ValueError(f"adjust_gamma: gamma must be a non-negative real number, got "
                         f"{gamma}")
    flt = _float_image(image)
    adjusted = cast(gain, flt.dtype) * _pow(flt, cast(gamma, flt.dtype))
    return convert_image_dtype(adjusted, image.dtype, saturate=True)


_GRAY_WEIGHTS = (0.2989, 0.5870, 0.1140)


@composite("rgb_to_grayscale")
def rgb_to_grayscale(images, name=None) -> Tensor:
    """The luma 0.2989 R + 0.5870 G + 0.1140 B of RGB images ([..., 3] -> [..., 1]).

    Example: `tf.image.rgb_to_grayscale([[[1., 1., 1.]]])` -> [[[0.9999]]].
    """
    images = _image("rgb_to_grayscale", images, "images")
    _last_is("rgb_to_grayscale", images, 3)
    flt = convert_image_dtype(images, _dt.float32)
    r, g, b = unstack(flt, 3, axis=-1)
    gray = (r * _GRAY_WEIGHTS[0] + g * _GRAY_WEIGHTS[1]) + b * _GRAY_WEIGHTS[2]
    return convert_image_dtype(_reshape_last(gray), images.dtype)


def _reshape_last(x: Tensor) -> Tensor:
    return reshape(x, tuple(dims_of(x)) + (1,))


def _last_is(op: str, images: Tensor, n: int) -> None:
    if images.ndim < 1 or images.shape[-1] not in (n, None):
        raise ValueError(f"{op}: the last dimension of 'images' must be {n}, got shape "
                         f"{list(images.shape)}")


@composite("grayscale_to_rgb")
def grayscale_to_rgb(images, name=None) -> Tensor:
    """The single channel repeated three times ([..., 1] -> [..., 3]).

    Example: `tf.image.grayscale_to_rgb([[[0.5]]])` -> [[[0.5, 0.5, 0.5]]].
    """
    images = _image("grayscale_to_rgb", images, "images")
    if images.ndim < 2:
        raise ValueError(f"grayscale_to_rgb: 'images' must have rank >= 2, got shape "
                         f"{list(images.shape)}")
    _last_is("grayscale_to_rgb", images, 1)
    return tile(images, [1] * (images.ndim - 1) + [3])


def _hsv_input(op: str, images) -> Tensor:
    images = _image(op, images, "images")
    if not images.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: images must be floating, got {images.dtype.name}")
    _last_is(op, images, 3)
    return images


@composite("rgb_to_hsv")
def rgb_to_hsv(images, name=None) -> Tensor:
    """RGB in [0, 1] to hue, saturation, value in [0, 1] (hue 0 for greys).

    Example: `tf.image.rgb_to_hsv([[[0., 1., 0.]]])` -> [[[0.3333, 1., 1.]]].
    """
    images = _hsv_input("rgb_to_hsv", images)
    r, g, b = unstack(images, 3, axis=-1)
    v = reduce_max(images, axis=-1)
    spread = v - reduce_min(images, axis=-1)
    zero = spread * 0
    s = where(greater(v, 0), spread / where(greater(v, 0), v, zero + 1), zero)
    # TensorFlow's kernel: the hue's sector from the channel holding the maximum
    norm = 1.0 / (6.0 * where(greater(spread, 0), spread, zero + 1))
    h = where(equal(r, v), norm * (g - b),
              where(equal(g, v), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = where(greater(spread, 0), h, zero)
    h = where(less(h, 0), h + 1.0, h)
    return _stack_last([h, s, v])


def _stack_last(channels: list) -> Tensor:
    return concat([_reshape_last(c) for c in channels], axis=-1)


@composite("hsv_to_rgb")
def hsv_to_rgb(images, name=None) -> Tensor:
    """Hue, saturation, value in [0, 1] to RGB. Example:
    `tf.image.hsv_to_rgb([[[0.3333333, 1., 1.]]])` -> [[[0., 1., 0.]]] (nearly)."""
    images = _hsv_input("hsv_to_rgb", images)
    h, s, v = unstack(images, 3, axis=-1)
    # each channel n in (5, 3, 1): v - v s clip(min(k, 4 - k), 0, 1), k = (n + 6 h) mod 6
    out = []
    for n in (5.0, 3.0, 1.0):
        k = floormod(h * 6.0 + n, 6.0)
        out.append(v - v * s * clip_by_value(minimum(k, 4.0 - k), 0.0, 1.0))
    return _stack_last(out)


@composite("adjust_hue")
def adjust_hue(image, delta, name=None) -> Tensor:
    """The hue of RGB `image` rotated by `delta` (in [-1, 1], a fraction of the circle).

    Example: `tf.image.adjust_hue([[[1., 0., 0.]]], 1 / 3)` -> [[[0., 1., 0.]]] (nearly).
    """
    image = _image("adjust_hue", image)
    flt = _float_image(image)
    hsv = rgb_to_hsv(flt)
    h, s, v = unstack(hsv, 3, axis=-1)
    h = floormod(h + cast(delta, flt.dtype), 1.0)
    return convert_image_dtype(hsv_to_rgb(_stack_last([h, s, v])), image.dtype,
                               saturate=True)


@composite("adjust_saturation")
def adjust_saturation(image, saturation_factor, name=None) -> Tensor:
    """The saturation of RGB `image` scaled by `saturation_factor` (clipped to [0, 1]).

    Example: `tf.image.adjust_saturation([[[1., 0.5, 0.5]]], 0.)` -> [[[1., 1., 1.]]].
    """
    image = _image("adjust_saturation", image)
    flt = _float_image(image)
    h, s, v = unstack(rgb_to_hsv(flt), 3, axis=-1)
    s = clip_by_value(s * cast(saturation_factor, flt.dtype), 0.0, 1.0)
    return convert_image_dtype(hsv_to_rgb(_stack_last([h, s, v])), image.dtype,
                               saturate=True)


@composite("total_variation")
def total_variation(images, name=None) -> Tensor:
    """The sum of absolute differences of neighbouring pixels (vertical and horizontal):
    a scalar for one [h, w, c] image, one per image for [n, h, w, c].

    Example: `tf.image.total_variation([[[0.], [1.]], [[3.], [1.]]])` -> 5.
    """
    images = _image("total_variation", images, "images")
    _rank_3_or_4("total_variation", images, "images")
    axes = [-3, -2, -1]
    dh = images[..., 1:, :, :] - images[..., :-1, :, :]
    dw = images[..., :, 1:, :] - images[..., :, :-1, :]
    return reduce_sum(_abs(dh), axis=axes) + reduce_sum(_abs(dw), axis=axes)


@composite("image_gradients")
def image_gradients(image) -> tuple[Tensor, Tensor]:
    """(dy, dx): forward differences image[i + 1] - image[i] along height and width, zero
    in the last row / column; `image` is [batch, h, w, c].

    Example: `dy, dx = tf.image.image_gradients(tf.zeros([1, 3, 3, 1]))`.
    """
    image = _image("image_gradients", image)
    if image.ndim != 4:
        raise ValueError(f"image_gradients: image must be 4-D [batch, height, width, "
                         f"channels], got shape {list(image.shape)}")
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    return (pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]]),
            pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]]))
