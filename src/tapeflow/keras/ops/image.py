"""`keras.ops.image` (Keras 3's `keras.src.ops.image`): resizing, affine transforms,
colour conversions, padding/cropping, patches and blurs of image batches, on tensors and
KerasTensors. Images are (batch, height, width, channels) by default (`data_format`
'channels_first': channels before height); an unbatched 3-D image works too.

Example:
    >>> tf.keras.ops.image.resize(tf.ones([1, 2, 2, 3]), (4, 4)).shape
    TensorShape([1, 4, 4, 3])
"""
from __future__ import annotations

import itertools

import numpy as np

from ..._core import dtypes as _dt
from ...ops import (array as _array, conv as _conv, creation as _creation,
                    image as _image, indexing as _indexing, linalg as _linalg, math as _math,
                    reduction as _reduction)
from . import nn as _keras_nn, numpy as _keras_numpy
from .operation import floatx_of, keras_op, tensor

__all__ = ["resize", "affine_transform", "rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb",
           "pad_images", "crop_images", "extract_patches", "gaussian_blur", "sobel_edges",
           "map_coordinates"]


def _floats(x):
    x = tensor(x)
    return x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))


def _channels_last(images, data_format):
    """`images` as a channels-last batch, and how to undo that."""
    x = tensor(images)
    if x.ndim not in (3, 4):
        raise ValueError(f"keras.ops.image: images must be 3-D (h, w, c) or 4-D (batch, "
                         f"h, w, c), got shape {x.shape}")
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"keras.ops.image: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    single = x.ndim == 3
    first = data_format == "channels_first"
    if single:
        x = _array.expand_dims(x, 0)
    if first:
        x = _array.transpose(x, [0, 2, 3, 1])

    def back(y):
        if first:
            y = _array.transpose(y, [0, 3, 1, 2])
        return y[0] if single else y
    return x, back


# --------------------------------------------------------------------------- resizing
@keras_op("image", config=("size", "interpolation", "antialias", "crop_to_aspect_ratio",
                           "pad_to_aspect_ratio", "fill_mode", "fill_value", "data_format"))
def resize(images, size, interpolation="bilinear", antialias=False,
           crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, fill_mode="constant",
           fill_value=0.0, data_format=None):
    """`images` resized to `size` (height, width) by `interpolation` ('bilinear',
    'nearest', 'bicubic', 'area', 'lanczos3', 'lanczos5'); first cropped (or padded with
    `fill_value`) to the target aspect ratio when asked.

    Example:
        >>> tf.keras.ops.image.resize(tf.ones([2, 2, 1]), (3, 3)).shape
        TensorShape([3, 3, 1])
    """
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("keras.ops.image.resize: only one of crop_to_aspect_ratio and "
                         "pad_to_aspect_ratio can be True")
    if fill_mode != "constant":
        raise ValueError(f"keras.ops.image.resize: fill_mode must be 'constant', got "
                         f"{fill_mode!r}")
    x, back = _channels_last(images, data_format)
    height, width = int(size[0]), int(size[1])
    h, w = x.shape[1], x.shape[2]
    if crop_to_aspect_ratio:
        crop_h = min(h, int(w * height / width))
        crop_w = min(w, int(h * width / height))
        top, left = (h - crop_h) // 2, (w - crop_w) // 2
        x = x[:, top:top + crop_h, left:left + crop_w, :]
    elif pad_to_aspect_ratio:
        pad_h = max(h, int(w * height / width))
        pad_w = max(w, int(h * width / height))
        # as Keras: the same band on both sides (an odd difference loses one row)
        top, left = (pad_h - h) // 2, (pad_w - w) // 2
        x = _array.pad(x, [[0, 0], [top, top], [left, left], [0, 0]],
                       constant_values=fill_value)
    out = _image.resize(x, [height, width], method=interpolation, antialias=antialias)
    if x.dtype.is_floating and out.dtype != x.dtype:
        out = _math.cast(out, x.dtype)
    return back(out)


@keras_op("image", config=("interpolation", "fill_mode", "fill_value", "data_format"))
def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant",
                     fill_value=0, data_format=None):
    """`images` transformed by `transform` ([8] or [batch, 8]: `a0, a1, a2, b0, b1, b2,
    c0, c1` map output (x, y) to input ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
    `k = c0 x + c1 y + 1`), read by 'nearest' or 'bilinear' interpolation; outside
    points follow `fill_mode` ('constant', 'nearest', 'reflect', 'wrap')."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    t = _math.cast(tensor(transform), x.dtype)
    return back(_image.affine_transform(x, t, interpolation=interpolation,
                                        fill_mode=fill_mode, fill_value=fill_value))


# --------------------------------------------------------------------------- colour
@keras_op("image", config=("data_format",), name="RGBToGrayscale")
def rgb_to_grayscale(images, data_format=None):
    """The luma of RGB `images` (ITU-R 601 weights), one channel.

    Example:
        >>> tf.keras.ops.image.rgb_to_grayscale(tf.ones([1, 1, 3])).shape
        TensorShape([1, 1, 1])
    """
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    weights = tensor([0.2989, 0.5870, 0.1140], x.dtype)
    return back(_reduction.reduce_sum(x * weights, -1, keepdims=True))


@keras_op("image", config=("data_format",), name="RGBToHSV")
def rgb_to_hsv(images, data_format=None):
    """RGB `images` (floats in [0, 1]) as hue, saturation, value (each in [0, 1])."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    value = _reduction.reduce_max(x, -1)
    low = _reduction.reduce_min(x, -1)
    span = value - low
    zero = _creation.zeros_like(value)
    safe_v = _indexing.where(_math.greater(value, 0), value, _creation.ones_like(value))
    saturation = _indexing.where(_math.greater(value, 0), span / safe_v, zero)
    safe = _indexing.where(_math.greater(span, 0), span, _creation.ones_like(span))
    hue = _indexing.where(_math.equal(value, r), (g - b) / safe,
                          _indexing.where(_math.equal(value, g), 2.0 + (b - r) / safe,
                                          4.0 + (r - g) / safe))
    hue = _indexing.where(_math.greater(span, 0), hue, zero) / 6.0
    hue = hue - _math.floor(hue)  # into [0, 1)
    return back(_array.stack([hue, saturation, value], axis=-1))


@keras_op("image", config=("data_format",), name="HSVToRGB")
def hsv_to_rgb(images, data_format=None):
    """HSV `images` (each in [0, 1]) as RGB."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    h, s, v = x[..., 0], x[..., 1], x[..., 2]

    def channel(n):
        k = _math.floormod(n + h * 6.0, tensor(6.0, x.dtype))
        ramp = _math.clip_by_value(_math.minimum(k, 4.0 - k), tensor(0.0, x.dtype),
                                   tensor(1.0, x.dtype))
        return v - v * s * ramp
    return back(_array.stack([channel(5.0), channel(3.0), channel(1.0)], axis=-1))


# --------------------------------------------------------------------------- pad / crop
def _sides(name, size, before, after, target):
    """The (before, after) amounts of one axis from Keras's keyword combinations."""
    if before is None and after is None and target is None:
        return 0, 0
    if target is not None and before is not None and after is not None:
        raise ValueError(f"keras.ops.image.{name}: give at most two of the two sides and "
                         f"the target size")
    if target is None:
        return before or 0, after or 0
    if before is None and after is None:
        before = 0
    if before is None:
        before = abs(target - size) - after
    if after is None:
        after = abs(target - size) - before
    return before, after


@keras_op("image", config=("top_padding", "left_padding", "bottom_padding",
                           "right_padding", "target_height", "target_width", "data_format"))
def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None,
               right_padding=None, target_height=None, target_width=None,
               data_format=None):
    """`images` padded with zeros: the sides given, or up to `target_height` /
    `target_width` with the other side's amount given.

    Example:
        >>> tf.keras.ops.image.pad_images(tf.ones([2, 2, 1]), 1, 1, 1, 1).shape
        TensorShape([4, 4, 1])
    """
    x, back = _channels_last(images, data_format)
    top, bottom = _sides("pad_images", x.shape[1], top_padding, bottom_padding,
                         target_height)
    left, right = _sides("pad_images", x.shape[2], left_padding, right_padding,
                         target_width)
    if min(top, bottom, left, right) < 0:
        raise ValueError(f"keras.ops.image.pad_images: the paddings must not be negative, "
                         f"got {(top, bottom, left, right)} for images of shape {x.shape}")
    return back(_array.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]]))


@keras_op("image", config=("top_cropping", "left_cropping", "bottom_cropping",
                           "right_cropping", "target_height", "target_width", "data_format"))
def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None,
                right_cropping=None, target_height=None, target_width=None,
                data_format=None):
    """`images` with rows and columns cut off: the sides given, or down to
    `target_height` / `target_width` with the other side's amount given."""
    x, back = _channels_last(images, data_format)
    h, w = x.shape[1], x.shape[2]
    top, bottom = _sides("crop_images", h, top_cropping, bottom_cropping, target_height)
    left, right = _sides("crop_images", w, left_cropping, right_cropping, target_width)
    if min(top, bottom, left, right) < 0 or top + bottom >= h or left + right >= w:
        raise ValueError(f"keras.ops.image.crop_images: croppings {(top, bottom, left, right)}"
                         f" do not fit images of shape {x.shape}")
    return back(x[:, top:h - bottom, left:w - right, :])


# --------------------------------------------------------------------------- patches
def _pair(value, name):
    if isinstance(value, int):
        return value, value
    if len(value) != 2:
        raise ValueError(f"keras.ops.image: {name} must be an int or two ints, got {value}")
    return int(value[0]), int(value[1])


@keras_op("image", config=("size", "strides", "dilation_rate", "padding", "data_format"))
def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid",
                    data_format=None):
    """The `size` patches of `images` every `strides` (default: `size`), flattened in
    (row, column, channel) order into the last axis.

    Example:
        >>> tf.keras.ops.image.extract_patches(tf.ones([1, 4, 4, 1]), 2).shape
        TensorShape([1, 2, 2, 4])
    """
    x, back = _channels_last(images, data_format)
    kh, kw = _pair(size, "size")
    sh, sw = _pair(strides if strides is not None else (kh, kw), "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if padding.lower() == "same":
        oh, ow = -(-h // sh), -(-w // sw)
        ph, pw = max((oh - 1) * sh + eh - h, 0), max((ow - 1) * sw + ew - w, 0)
        x = _array.pad(x, [[0, 0], [ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2], [0, 0]])
    elif padding.lower() == "valid":
        oh, ow = (h - eh) // sh + 1, (w - ew) // sw + 1
    else:
        raise ValueError(f"keras.ops.image.extract_patches: padding must be 'valid' or "
                         f"'same', got {padding!r}")
    hp, wp = x.shape[1], x.shape[2]
    rows = (np.arange(oh) * sh)[:, None, None, None] + (np.arange(kh) * dh)[None, None, :, None]
    cols = (np.arange(ow) * sw)[None, :, None, None] + (np.arange(kw) * dw)[None, None, None, :]
    index = (rows * wp + cols).astype(np.int32)                 # (oh, ow, kh, kw)
    flat = _array.reshape(x, [_array.shape(x)[0], hp * wp, c])
    patches = _indexing.gather(flat, tensor(index), axis=1)     # (b, oh, ow, kh, kw, c)
    out = _array.reshape(patches, [_array.shape(x)[0], oh, ow, kh * kw * c])
    return back(out)


# --------------------------------------------------------------------------- filters
def _gaussian_kernel(size, sigma):
    k = np.arange(size) - (size - 1) / 2.0
    g = np.exp(-0.5 * (k / sigma) ** 2)
    return g / g.sum()


@keras_op("image", config=("kernel_size", "sigma", "data_format"))
def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """`images` blurred channel by channel with a normalized Gaussian of `kernel_size`
    and `sigma` (zero padding, same size)."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    kh, kw = _pair(kernel_size, "kernel_size")
    sy, sx = (sigma, sigma) if isinstance(sigma, (int, float)) else sigma
    # Keras's kernel: the outer product (y by `kernel_size[1]`, `sigma[1]`; x by
    # `kernel_size[0]`, `sigma[0]`) laid out as (kernel_size[0], kernel_size[1])
    kernel = np.outer(_gaussian_kernel(kw, sx), _gaussian_kernel(kh, sy)).reshape(kh, kw)
    c = x.shape[-1]
    weights = tensor(np.tile(kernel[:, :, None, None], (1, 1, c, 1)), x.dtype)
    return back(_conv.depthwise_conv2d(x, weights, [1, 1, 1, 1], "SAME"))


@keras_op("image", config=("data_format",))
def sobel_edges(images, data_format=None):
    """The Sobel gradients of each channel: (..., channels, 2) as (dy, dx), the border
    mirrored (as TensorFlow's `image.sobel_edges`)."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    c = x.shape[-1]
    padded = _array.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    outs = []
    for k in (ky, ky.T):
        w = tensor(np.tile(k[:, :, None, None], (1, 1, c, 1)), x.dtype)
        outs.append(_conv.depthwise_conv2d(padded, w, [1, 1, 1, 1], "VALID"))
    out = _array.stack(outs, axis=-1)
    if data_format == "channels_first":
        out = _array.transpose(out, [0, 3, 1, 2, 4])
    return out[0] if tensor(images).ndim == 3 else out


def _fix_index(index, size, fill_mode):
    """An integer sample index moved into [0, size) as Keras's `fill_mode` says, and
    whether it was inside (for 'constant')."""
    n = tensor(size, index.dtype)
    if fill_mode == "constant":
        valid = _math.logical_and(_math.greater_equal(index, 0), _math.less(index, n))
        return _math.clip_by_value(index, tensor(0, index.dtype), n - 1), valid
    if fill_mode == "nearest":
        return _math.clip_by_value(index, tensor(0, index.dtype), n - 1), None
    if fill_mode == "wrap":
        return _math.floormod(index, n), None
    # 'mirror' and 'reflect' fold |index| with period 2 size, as Keras's
    folded = _math.floormod(_math.abs(index), 2 * n)
    under = _math.less(folded, n)
    out = _indexing.where(under, folded, 2 * n - folded)
    if fill_mode == "reflect":
        out = _indexing.where(under, out, out - 1)
    return _math.clip_by_value(out, tensor(0, index.dtype), n - 1), None


@keras_op("image", config=("order", "fill_mode", "fill_value"))
def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0):
    """`inputs` read at `coordinates` (one tensor of points per axis of `inputs`) by
    nearest (`order` 0) or linear (`order` 1) interpolation; points outside follow
    `fill_mode` ('constant', 'nearest', 'wrap', 'mirror', 'reflect'), as scipy's.

    Example:
        >>> x = tf.constant([0.0, 10.0, 20.0])
        >>> tf.keras.ops.image.map_coordinates(x, [tf.constant([0.5, 1.5])], 1).numpy()
        array([ 5., 15.], dtype=float32)
    """
    if order not in (0, 1):
        raise NotImplementedError(f"keras.ops.image.map_coordinates: order must be 0 or 1, "
                                  f"got {order}")
    if fill_mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
        raise ValueError(f"keras.ops.image.map_coordinates: invalid fill_mode "
                         f"{fill_mode!r}")
    x = tensor(inputs)
    coords = [tensor(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise ValueError(f"keras.ops.image.map_coordinates: give one coordinate tensor per "
                         f"axis of inputs ({x.ndim}), got {len(coords)}")
    work = coords[0].dtype if coords[0].dtype.is_floating else _dt.float32
    coords = [_math.cast(c, work) for c in coords]
    nodes = []  # per axis: the (index, weight) pairs of the interpolation
    for c in coords:
        if order == 0:
            nodes.append([(_math.cast(_math.round(c), _dt.int32), None)])
        else:
            low = _math.floor(c)
            frac = c - low
            low = _math.cast(low, _dt.int32)
            nodes.append([(low, 1.0 - frac), (low + 1, frac)])
    flat_x = _array.reshape(x, [-1])
    strides = np.cumprod([1] + list(x.shape[::-1]))[:-1][::-1]
    fill = tensor(float(fill_value), work)
    out = None
    for combo in itertools.product(*nodes):
        flat, weight, valid = None, None, None
        for axis, (index, w) in enumerate(combo):
            safe, inside = _fix_index(index, x.shape[axis], fill_mode)
            term = safe * int(strides[axis])
            flat = term if flat is None else flat + term
            if w is not None:
                weight = w if weight is None else weight * w
            if inside is not None:
                valid = inside if valid is None else _math.logical_and(valid, inside)
        value = _math.cast(_indexing.gather(flat_x, flat), work)
        if valid is not None:
            value = _indexing.where(valid, value, fill)
        value = value if weight is None else value * weight
        out = value if out is None else out + value
    if not x.dtype.is_floating:
        out = _math.round(out)
    return _math.cast(out, x.dtype)



def _homography(start, end):
    """The 8 projective coefficients mapping each output (end) point to its input
    (start) point, batched: solves the 8 x 8 system of the four correspondences."""
    rows, rhs = [], []
    zero, one = _creation.zeros_like(end[:, 0, 0]), _creation.ones_like(end[:, 0, 0])
    for i in range(4):
        ex, ey = end[:, i, 0], end[:, i, 1]
        sx, sy = start[:, i, 0], start[:, i, 1]
        rows.append(_array.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], -1))
        rows.append(_array.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], -1))
        rhs += [sx, sy]
    matrix = _array.stack(rows, axis=1)                          # (batch, 8, 8)
    values = _array.expand_dims(_array.stack(rhs, axis=1), -1)   # (batch, 8, 1)
    return _linalg.solve(matrix, values)[:, :, 0]


@keras_op("image", config=("interpolation", "fill_value", "data_format"))
def perspective_transform(images, start_points, end_points, interpolation="bilinear",
                          fill_value=0, data_format=None):
    """`images` warped so that the four `start_points` ((4, 2) or (batch, 4, 2), as
    (x, y)) land on the `end_points`; outside points read `fill_value`."""
    x, back = _channels_last(images, data_format)
    x = _floats(x)
    start = _math.cast(tensor(start_points), _dt.float64)
    end = _math.cast(tensor(end_points), _dt.float64)
    if start.shape[-2:] != (4, 2) or start.shape != end.shape:
        raise ValueError(f"keras.ops.image.perspective_transform: start_points and "
                         f"end_points must both be (4, 2) or (batch, 4, 2), got "
                         f"{start.shape} and {end.shape}")
    if start.ndim == 2:
        start, end = _array.expand_dims(start, 0), _array.expand_dims(end, 0)
    transform = _math.cast(_homography(start, end), x.dtype)
    return back(_image.affine_transform(x, transform, interpolation=interpolation,
                                        fill_mode="constant", fill_value=fill_value))


@keras_op("image", config=("max_val", "filter_size", "filter_sigma", "k1", "k2",
                           "data_format"), name="SSIM")
def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         data_format=None):
    """The structural similarity of two image batches, one value per image (Gaussian
    windows of `filter_size`, valid positions, averaged over positions and channels).

    Example:
        >>> img = tf.ones([1, 12, 12, 1]) * 0.5
        >>> float(tf.keras.ops.image.ssim(img, img)[0])
        1.0
    """
    a, back_a = _channels_last(image1, data_format)
    b, _ = _channels_last(image2, data_format)
    original = a.dtype
    a, b = _floats(a), _math.cast(_floats(b), _floats(a).dtype)
    g = _gaussian_kernel(filter_size, filter_sigma)
    c = a.shape[-1]
    kernel = tensor(np.tile(np.outer(g, g)[:, :, None, None], (1, 1, c, 1)), a.dtype)

    def blur(t):
        return _conv.depthwise_conv2d(t, kernel, [1, 1, 1, 1], "VALID")
    mu1, mu2 = blur(a), blur(b)
    var1 = blur(a * a) - mu1 * mu1
    var2 = blur(b * b) - mu2 * mu2
    cov = blur(a * b) - mu1 * mu2
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    ssim_map = ((2.0 * mu1 * mu2 + c1) * (2.0 * cov + c2)
                / ((mu1 * mu1 + mu2 * mu2 + c1) * (var1 + var2 + c2)))
    out = _reduction.reduce_mean(ssim_map, [1, 2, 3])
    out = out[0] if tensor(image1).ndim == 3 else out
    return out if not original.is_floating else _math.cast(out, original)


__all__ += ["perspective_transform", "ssim"]


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid",
                       data_format=None):
    """The `size` (depth, height, width) patches of `volumes` (batch, d, h, w, c) every
    `strides` (default: `size`), flattened in (d, h, w, channel) order into the last axis
    (a convolution with the identity kernel, as Keras computes it).

    Example:
        >>> tf.keras.ops.image.extract_patches_3d(tf.ones([1, 4, 4, 4, 1]), 2).shape
        TensorShape([1, 2, 2, 2, 8])
    """
    size = (size,) * 3 if isinstance(size, int) else tuple(size)
    if len(size) != 3:
        raise TypeError(f"keras.ops.image.extract_patches_3d: size must be an int or 3 "
                        f"ints, got {size}")
    strides = size if strides is None else strides
    strides = (strides,) * 3 if isinstance(strides, int) else tuple(strides)
    if len(strides) != 3:
        raise ValueError(f"keras.ops.image.extract_patches_3d: strides must be an int or "
                         f"3 ints, got {strides}")
    x = volumes if hasattr(volumes, "shape") else tensor(volumes)
    channels = x.shape[-4] if data_format == "channels_first" else x.shape[-1]
    width = size[0] * size[1] * size[2] * channels
    kernel = np.eye(width, dtype=np.float32).reshape(size + (channels, width))
    single = len(x.shape) == 4
    if single:
        x = _keras_numpy.expand_dims(x, 0)
    out = _keras_nn.conv(x, kernel, strides, padding, data_format, dilation_rate)
    return _keras_numpy.squeeze(out, 0) if single else out


__all__.append("extract_patches_3d")
