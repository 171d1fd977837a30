"""Image preprocessing and augmentation layers (Resizing, cropping, random transforms).

Images are channels last: `[height, width, channels]` or `[batch, height, width,
channels]`. As in Keras 3, an augmentation layer's `call(inputs, training=True)`
augments when called directly or in `fit` and is the identity with `training=False` or
`training=None` (as `predict` and `evaluate` call it). Random draws come from the layer's
own seed stream (Keras's `SeedGenerator`): two layers made with the same `seed` give the
same sequence of transforms; the stream is a counter that also advances inside traced
functions and `tf.data` maps. The numbers differ from Keras's (another generator); the
distributions and the transforms are Keras's.
"""
from __future__ import annotations

import math
import random as _pyrandom

import numpy as np

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.shape import dims_of
from ..._core.tensor import Tensor
from ..._core.variable import Variable
from ...ops import array as _array, creation as _creation, image as _image
from ...ops import indexing as _indexing, math as _math
from ...ops import random as _random, reduction as _reduction
from ...function.control_flow import cond as _cond
from ...train.layers import _training
from ._base import Stateless

__all__ = ["CenterCrop", "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip",
           "RandomRotation", "RandomTranslation", "RandomZoom", "Resizing"]

_INTERPOLATIONS = ("bilinear", "nearest", "lanczos3", "lanczos5", "bicubic", "area")
_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _data_format(layer: str, data_format) -> str:
    if data_format in (None, "channels_last"):
        return "channels_last"
    if data_format == "channels_first":
        raise NotImplementedError(f"{layer}: data_format='channels_first' is not supported "
                                  "yet; transpose the images to channels last")
    raise ValueError(f"{layer}: data_format must be 'channels_last' or 'channels_first', "
                     f"got {data_format!r}")


def _image_rank(layer, x: Tensor) -> None:
    if x.ndim not in (3, 4):
        raise layer._input_error("rank 3 (one image) or 4 (a batch of images)", x)


def _height_width(x: Tensor) -> tuple:
    """The height and width of `x`: ints where known, else scalar tensors."""
    h, w = x._shape[-3], x._shape[-2]
    if h is None or w is None:
        dims = _array.shape(x)
        h = dims[x.ndim - 3] if h is None else h
        w = dims[x.ndim - 2] if w is None else w
    return h, w


class _SeedGenerator:
    """A seed stream as Keras 3's `SeedGenerator`: the layer's seed and a counter that each
    draw advances. A plain object (not a Module), so the counter is no layer weight."""

    def __init__(self, seed):
        self.seed = int(seed) if seed is not None else _pyrandom.randint(1, 2 ** 31 - 1)
        self._counter = [None]

    def next(self) -> Tensor:
        if self._counter[0] is None:
            self._counter[0] = Variable(0, dtype=_dt.int64, trainable=False,
                                        name="seed_generator_state")
        count = self._counter[0].assign_add(1)
        return _array.stack([_math.cast(self.seed, _dt.int64), _math.cast(count, _dt.int64)])


class _Augmentation(Stateless):
    """The base of the random layers: `training` handling, the seed stream, configs."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.data_format = _data_format(type(self).__name__, data_format)
        self._generator = _SeedGenerator(seed)

    def _convert_input(self, inputs):
        x = convert_to_tensor(inputs)
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)

    def _uniform(self, shape, minval: float, maxval: float) -> Tensor:
        return _random.stateless_uniform(shape, seed=self._generator.next(), minval=minval,
                                         maxval=maxval, dtype=_dt.float32)

    def _per_image(self, x: Tensor, minval: float, maxval: float) -> Tensor:
        """One uniform draw per image, shaped [batch, 1, 1, 1] ([1, 1, 1] unbatched)."""
        if x.ndim == 3:
            return self._uniform([1, 1, 1], minval, maxval)
        return self._uniform([dims_of(x)[0], 1, 1, 1], minval, maxval)

    def call(self, inputs, training=True):
        _image_rank(self, inputs)
        training = _training(type(self).__name__, training)
        if isinstance(training, Tensor):
            return _cond(training, lambda: self._augment(inputs),
                         lambda: self._inference(inputs))
        return self._augment(inputs) if training else self._inference(inputs)

    def _inference(self, x: Tensor) -> Tensor:
        return x

    def _augment(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "seed": self.seed}


def _factor_pair(layer: str, factor, bounds: tuple = (-1.0, 1.0)) -> tuple:
    """Keras 3's `factor`: a number `f` is `(max(-|f|, low), |f|)`, a pair is sorted; both
    must lie in `bounds`."""
    message = (f"{layer}: factor must be a number (or a list of two numbers) in the range "
               f"[{bounds[0]}, {bounds[1]}], got factor={factor!r}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(message)
        return tuple(sorted(float(f) for f in factor))
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        if not bounds[0] <= factor <= bounds[1]:
            raise ValueError(message)
        factor = abs(float(factor))
        return (max(-factor, bounds[0]), factor)
    raise ValueError(message)


def _lower_upper(layer: str, arg: str, factor, open_low: bool) -> tuple:
    """RandomZoom's and RandomTranslation's factors: a number `f` is `(-|f|, |f|)`, a pair
    sorted; each within [-1, 1] (RandomZoom excludes -1: a zero-size view)."""
    def check(value):
        if value > 1.0 or (value <= -1.0 if open_low else value < -1.0):
            raise ValueError(f"{layer}: {arg} must be a number (or a pair) in "
                             f"{'(' if open_low else '['}-1, 1], got {arg}={factor!r}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(f"{layer}: {arg} must be a number or a pair, got {factor!r}")
        check(factor[0])
        check(factor[1])
        return tuple(sorted(float(f) for f in factor))
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        check(factor)
        return (-abs(float(factor)), abs(float(factor)))
    raise ValueError(f"{layer}: {arg} must be a number or a pair, got {factor!r}")


def _check_fill(layer: str, fill_mode: str, interpolation: str) -> None:
    if fill_mode not in _FILL_MODES:
        raise NotImplementedError(f"{layer}: unknown `fill_mode` {fill_mode!r}. Expected "
                                  f"one of {_FILL_MODES}.")
    if interpolation not in ("nearest", "bilinear"):
        raise NotImplementedError(f"{layer}: unknown `interpolation` {interpolation!r}. "
                                  "Expected one of ('nearest', 'bilinear').")


def _crop(x: Tensor, top, left, height, width) -> Tensor:
    """`x[..., top:top + height, left:left + width, :]` for 3-D or 4-D `x`."""
    if isinstance(top, Tensor) or isinstance(left, Tensor):
        # a drawn position: gather the rows and columns (a slice needs static bounds)
        rows = _math.cast(top, _dt.int32) + _creation.range(height)
        cols = _math.cast(left, _dt.int32) + _creation.range(width)
        x = _indexing.gather(x, rows, axis=x.ndim - 3)
        return _indexing.gather(x, cols, axis=x.ndim - 2)
    if x.ndim == 4:
        return _indexing.slice(x, [0, top, left, 0], [-1, height, width, -1])
    return _indexing.slice(x, [top, left, 0], [height, width, -1])


def _aspect_box(h: int, w: int, height: int, width: int) -> tuple:
    """(crop height, crop width) of the largest centred window of `h x w` with the aspect
    ratio of `height x width`, computed in float32 as Keras's TF backend does."""
    crop_h = int(np.float32(w * height) / np.float32(width))
    crop_w = int(np.float32(h * width) / np.float32(height))
    return max(min(h, crop_h), 1), max(min(w, crop_w), 1)


def _static_hw(layer, x: Tensor) -> tuple:
    h, w = x._shape[-3], x._shape[-2]
    if h is None or w is None:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: the input needs a known "
                         f"height and width, got shape {list(x._shape)}")
    return h, w


def _resize(layer, x: Tensor, height: int, width: int, interpolation: str,
            crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
            fill_value: float = 0.0, antialias: bool = False) -> Tensor:
    """Keras's `ops.image.resize` (TF backend): an optional centred crop or symmetric pad
    to the target's aspect ratio, then `tf.image.resize`."""
    if crop_to_aspect_ratio:
        h, w = _static_hw(layer, x)
        crop_h, crop_w = _aspect_box(h, w, height, width)
        x = _crop(x, int(np.float32(h - crop_h) / 2), int(np.float32(w - crop_w) / 2),
                  crop_h, crop_w)
    elif pad_to_aspect_ratio:
        h, w = _static_hw(layer, x)
        pad_h = max(h, int(np.float32(w * height) / np.float32(width)))
        pad_w = max(w, int(np.float32(h * width) / np.float32(height)))
        # as Keras: the same band on both sides (an odd remainder is not padded)
        top, left = int(np.float32(pad_h - h) / 2), int(np.float32(pad_w - w) / 2)
        pads = [[top, top], [left, left], [0, 0]]
        x = _array.pad(x, pads if x.ndim == 3 else [[0, 0]] + pads,
                       constant_values=_math.cast(fill_value, x.dtype))
    return _image.resize(x, (height, width), method=interpolation, antialias=antialias)


class Resizing(Stateless):
    """Resizes images to `height x width` with `interpolation` ("bilinear", "nearest",
    "lanczos3", "lanczos5", "bicubic" or "area"); `crop_to_aspect_ratio` first takes the
    largest centred window of the target's aspect ratio, `pad_to_aspect_ratio` pads with
    `fill_value` instead. Integer images come back rounded, in their dtype, as Keras's.

    Example:
        >>> tf.keras.layers.Resizing(2, 2)(tf.ones([4, 4, 3])).shape
        TensorShape([2, 2, 3])
    """

    def __init__(self, height: int, width: int, interpolation: str = "bilinear",
                 crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
                 fill_mode: str = "constant", fill_value: float = 0.0,
                 antialias: bool = False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(f"Resizing: invalid value for argument `interpolation`. "
                             f"Expected one of {_INTERPOLATIONS}. Received: "
                             f"interpolation={interpolation!r}")
        if fill_mode != "constant":
            raise ValueError(f"Resizing: only fill_mode='constant' is supported, got "
                             f"{fill_mode!r}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Resizing: only one of `pad_to_aspect_ratio` and "
                             "`crop_to_aspect_ratio` can be True.")
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = bool(antialias)
        self.data_format = _data_format("Resizing", data_format)

    def call(self, inputs):
        _image_rank(self, inputs)
        out = _resize(self, inputs, self.height, self.width, self.interpolation,
                      self.crop_to_aspect_ratio, self.pad_to_aspect_ratio, self.fill_value,
                      self.antialias)
        if inputs.dtype.is_floating:
            return out if out.dtype is inputs.dtype else _math.cast(out, inputs.dtype)
        return _image.saturate_cast(_math.round(out), inputs.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format,
                "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias}


class CenterCrop(Stateless):
    """Crops the central `height x width` window of images; an image smaller than that
    along an axis is first cropped to the target's aspect ratio and resized (bilinear),
    as Keras's `smart_resize`. The output is in the layer's dtype.

    Example:
        >>> tf.keras.layers.CenterCrop(2, 2)(tf.ones([1, 4, 5, 3])).shape
        TensorShape([1, 2, 2, 3])
    """

    def __init__(self, height: int, width: int, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)
        self.data_format = _data_format("CenterCrop", data_format)

    def _convert_input(self, inputs):
        x = convert_to_tensor(inputs)
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)

    def call(self, inputs):
        _image_rank(self, inputs)
        h, w = _height_width(inputs)
        known = not isinstance(h, Tensor) and not isinstance(w, Tensor)
        if known and (h < self.height or w < self.width):
            return _resize(self, inputs, self.height, self.width, "bilinear",
                           crop_to_aspect_ratio=True)
        return _crop(inputs, (h - self.height) // 2, (w - self.width) // 2, self.height,
                     self.width)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format,
                "height": self.height, "width": self.width}


class RandomCrop(_Augmentation):
    """In training, crops a random `height x width` window (one position for the whole
    batch, as Keras 3); an input not larger than the target on both axes is cropped to the
    target's aspect ratio and resized instead. Not training: the input unchanged.

    Example:
        >>> tf.keras.layers.RandomCrop(2, 2, seed=1)(tf.ones([1, 4, 4, 3])).shape
        TensorShape([1, 2, 2, 3])
    """

    def __init__(self, height: int, width: int, seed=None, data_format=None, **kwargs):
        # as Keras: without a seed the layer picks one and its config keeps it
        seed = seed if seed is not None else _pyrandom.randint(1, 10 ** 9)
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height, self.width = int(height), int(width)

    def _inference(self, x: Tensor) -> Tensor:
        return x

    def _augment(self, x: Tensor) -> Tensor:
        h, w = _static_hw(self, x)
        if h > self.height and w > self.width:
            top = _math.cast(self._uniform([], 0.0, float(h - self.height + 1)), _dt.int32)
            left = _math.cast(self._uniform([], 0.0, float(w - self.width + 1)), _dt.int32)
            return _crop(x, top, left, self.height, self.width)
        crop_h, crop_w = _aspect_box(h, w, self.height, self.width)
        x = _crop(x, int((h - crop_h) / 2), int((w - crop_w) / 2), crop_h, crop_w)
        if (crop_h, crop_w) != (self.height, self.width):
            x = _math.cast(_image.resize(x, (self.height, self.width)), self._dtype)
        return x

    def get_config(self) -> dict:
        config = super().get_config()
        return {**config, "height": self.height, "width": self.width}


_HORIZONTAL, _VERTICAL = "horizontal", "vertical"
_BOTH = "horizontal_and_vertical"


class RandomFlip(_Augmentation):
    """In training, flips each image with probability 1/2: left-right ("horizontal"),
    upside down ("vertical") or, for "horizontal_and_vertical", both at once (one draw
    decides both, as Keras 3). Not training: the input unchanged.

    Example:
        >>> flip = tf.keras.layers.RandomFlip("horizontal", seed=1)
        >>> flip(tf.ones([2, 4, 4, 3]), training=False).shape
        TensorShape([2, 4, 4, 3])
    """

    def __init__(self, mode: str = _BOTH, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in (_HORIZONTAL, _VERTICAL, _BOTH):
            raise ValueError(f"RandomFlip: RandomFlip layer {self.name} received an unknown "
                             f"mode argument {mode!r}; expected 'horizontal', 'vertical' or "
                             "'horizontal_and_vertical'")
        self.mode = mode

    def _augment(self, x: Tensor) -> Tensor:
        flips = _math.less_equal(self._per_image(x, 0.0, 1.0), 0.5)
        out = x
        if self.mode in (_HORIZONTAL, _BOTH):
            out = _indexing.where(flips, _array.reverse(out, [x.ndim - 2]), out)
        if self.mode in (_VERTICAL, _BOTH):
            out = _indexing.where(flips, _array.reverse(out, [x.ndim - 3]), out)
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}


class _Transform(_Augmentation):
    """The layers that resample through an affine map: fill mode, interpolation, fill
    value."""

    def __init__(self, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed=None, fill_value: float = 0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        _check_fill(type(self).__name__, fill_mode, interpolation)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = fill_value

    def _batch_size(self, x: Tensor):
        """The batch size: an int, or a `Dim` resolved when a traced graph runs."""
        return 1 if x.ndim == 3 else dims_of(x)[0]

    def _draw(self, n, minval: float, maxval: float) -> Tensor:
        """[n, 1] uniform draws."""
        return self._uniform([n, 1], minval, maxval)

    def _apply(self, x: Tensor, transforms: Tensor) -> Tensor:
        return _image.affine_transform(x, transforms if x.ndim == 4 else transforms[0],
                                       self.interpolation, self.fill_mode, self.fill_value)

    def get_config(self) -> dict:
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


class RandomRotation(_Transform):
    """In training, rotates each image about its centre by a random angle of
    `factor * 2 pi` radians, `factor` uniform in `[-f, f]` (a number) or the given
    `[low, high]` (positive: counter-clockwise); pixels from outside follow `fill_mode`.
    Not training: the input unchanged.

    Example:
        >>> rot = tf.keras.layers.RandomRotation((0.25, 0.25), fill_mode="constant")
        >>> rot(tf.ones([2, 3, 3, 1])).shape   # each image turned a quarter
        TensorShape([2, 3, 3, 1])
    """

    def __init__(self, factor, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed=None, fill_value: float = 0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = _factor_pair("RandomRotation", factor)

    def _augment(self, x: Tensor) -> Tensor:
        h, w = _height_width(x)
        angle = self._draw(self._batch_size(x), self.factor[0] * 360.0,
                           self.factor[1] * 360.0) * (math.pi / 180.0)
        cx = (_math.cast(w, _dt.float32) - 1.0) * 0.5
        cy = (_math.cast(h, _dt.float32) - 1.0) * 0.5
        cos, sin = _math.cos(angle), _math.sin(angle)
        zero = angle * 0.0
        # output pixel -> input point: rotation about (cx, cy), as Keras's affine matrix
        transforms = _array.concat([cos, -sin, cx - cx * cos + cy * sin,
                                    sin, cos, cy - cx * sin - cy * cos, zero, zero], axis=1)
        return self._apply(x, transforms)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_Transform):
    """In training, zooms each image about its centre: the height by `1 + z`, `z` uniform
    in `height_factor`'s range (a number `f`: `[-f, f]`; positive `z` zooms out), the width
    by its own draw from `width_factor` or, when that is None, the same as the height.
    Not training: the input unchanged.

    Example:
        >>> zoom = tf.keras.layers.RandomZoom(0.2, seed=1)
        >>> zoom(tf.ones([2, 8, 8, 3])).shape
        TensorShape([2, 8, 8, 3])
    """

    def __init__(self, height_factor, width_factor=None, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed=None, fill_value: float = 0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = _lower_upper("RandomZoom", "height_factor", height_factor, True)
        self._width = None if width_factor is None else \
            _lower_upper("RandomZoom", "width_factor", width_factor, True)

    def _augment(self, x: Tensor) -> Tensor:
        n = self._batch_size(x)
        zy = self._draw(n, 1.0 + self._height[0], 1.0 + self._height[1])
        zx = zy if self._width is None else \
            self._draw(n, 1.0 + self._width[0], 1.0 + self._width[1])
        h, w = _height_width(x)
        x_off = (_math.cast(w, _dt.float32) - 1.0) / 2.0 * (1.0 - zx)
        y_off = (_math.cast(h, _dt.float32) - 1.0) / 2.0 * (1.0 - zy)
        zero = zx * 0.0
        transforms = _array.concat([zx, zero, x_off, zero, zy, y_off, zero, zero], axis=1)
        return self._apply(x, transforms)

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_Transform):
    """In training, shifts each image by a random fraction of its height (uniform in
    `height_factor`'s range; a number `f`: `[-f, f]`, positive: down) and of its width
    (`width_factor`; positive: right). Not training: the input unchanged.

    Example:
        >>> shift = tf.keras.layers.RandomTranslation(0.1, 0.1, seed=1)
        >>> shift(tf.ones([2, 8, 8, 3])).shape
        TensorShape([2, 8, 8, 3])
    """

    def __init__(self, height_factor, width_factor, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed=None, fill_value: float = 0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = _lower_upper("RandomTranslation", "height_factor", height_factor,
                                    False)
        self._width = _lower_upper("RandomTranslation", "width_factor", width_factor, False)

    def _augment(self, x: Tensor) -> Tensor:
        n = self._batch_size(x)
        h, w = _height_width(x)
        dy = self._draw(n, *self._height) * _math.cast(h, _dt.float32)
        dx = self._draw(n, *self._width) * _math.cast(w, _dt.float32)
        one, zero = dx * 0.0 + 1.0, dx * 0.0
        transforms = _array.concat([one, zero, -dx, zero, one, -dy, zero, zero], axis=1)
        return self._apply(x, transforms)

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomContrast(_Augmentation):
    """In training, scales each image's deviation from its per-channel mean by a factor
    uniform in `[1 - low, 1 + high]` of `factor` (a number `f` gives `(0, f)`: Keras 3
    only raises contrast then), clipped to `value_range`. Not training: unchanged.

    Example:
        >>> contrast = tf.keras.layers.RandomContrast(0.5, seed=1)
        >>> contrast(tf.ones([2, 4, 4, 3])).shape
        TensorShape([2, 4, 4, 3])
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = _factor_pair("RandomContrast", factor, (0.0, 1.0))
        self.value_range = value_range

    def _augment(self, x: Tensor) -> Tensor:
        scale = self._per_image(x, 1.0 - self.factor[0], 1.0 + self.factor[1])
        mean = _reduction.reduce_mean(x, axis=[x.ndim - 3, x.ndim - 2], keepdims=True)
        out = (x - mean) * _math.cast(scale, x.dtype) + mean
        return _math.clip_by_value(out, float(self.value_range[0]),
                                   float(self.value_range[1]))

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}


class RandomBrightness(_Augmentation):
    """In training, adds to each image a delta uniform in `factor`'s range (a number `f`:
    `[-f, f]`) times the width of `value_range`, then clips to `value_range`. Not
    training: unchanged.

    Example:
        >>> bright = tf.keras.layers.RandomBrightness(0.2, value_range=(0.0, 1.0), seed=1)
        >>> bright(tf.fill([2, 4, 4, 3], 0.5)).shape
        TensorShape([2, 4, 4, 3])
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = _factor_pair("RandomBrightness", factor)
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError("RandomBrightness: the `value_range` argument should be a list "
                             f"of two numbers. Received: value_range={value_range!r}")
        self.value_range = sorted(value_range)

    def _augment(self, x: Tensor) -> Tensor:
        delta = self._per_image(x, *self.factor) * float(self.value_range[1] -
                                                         self.value_range[0])
        return _math.clip_by_value(x + _math.cast(delta, x.dtype),
                                   float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}
