"""`tf.keras.preprocessing.image`: conversions between arrays and PIL images, loading and
saving image files, and `smart_resize` (crop to the target aspect ratio, then resize).

Keras 1's augmentation functions work on one NumPy image (channels first by default):
`apply_affine_transform` (SciPy's ndimage does the resampling) and the `random_*`
functions that draw its parameters from NumPy's global generator, channel and brightness
shifts.

PIL (the Pillow package) and SciPy are optional: the functions that need them raise
ImportError naming the package when it is missing; `img_to_array` and `smart_resize`
need neither.

Example:
    >>> img = np.arange(4 * 6 * 3, dtype="float32").reshape(4, 6, 3)
    >>> tf.keras.preprocessing.image.smart_resize(img, (2, 2)).shape
    (2, 2, 3)
"""
from __future__ import annotations

import io
import pathlib
import warnings

import numpy as np

from ..._core.tensor import Tensor
from .. import backend as _backend
from ..ops import image as _keras_image

__all__ = ["apply_affine_transform", "apply_brightness_shift", "apply_channel_shift",
           "array_to_img", "img_to_array", "load_img", "random_brightness",
           "random_channel_shift", "random_rotation", "random_shear", "random_shift",
           "random_zoom", "save_img", "smart_resize"]

_RESAMPLING = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil_image(what: str):
    """PIL.Image, or ImportError naming the function and the package to install."""
    try:
        from PIL import Image  # optional: only the image functions need Pillow
    except ImportError:
        raise ImportError(f"Could not import PIL.Image. The use of `{what}` requires PIL "
                          "(install the Pillow package: pip install Pillow).") from None
    return Image


def _data_format(data_format) -> str:
    data_format = _backend.image_data_format() if data_format is None else data_format
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', "
                         f"'channels_last'}}. Received: data_format={data_format}")
    return data_format


def array_to_img(x, data_format=None, scale: bool = True, dtype=None):
    """A PIL image from a 3-D array (height, width, channels) with 1, 3 or 4 channels;
    `scale` stretches the values to [0, 255] first.

    Example:
        >>> tf.keras.preprocessing.image.array_to_img(np.zeros((2, 3, 3))).size
        (3, 2)
    """
    data_format = _data_format(data_format)
    Image = _pil_image("array_to_img")
    x = np.asarray(x, dtype=dtype or _backend.floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array "
                         f"with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        # values past 8 bits keep their range as a 32-bit integer image
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def img_to_array(img, data_format=None, dtype=None) -> np.ndarray:
    """A 3-D array (height, width, channels; channels first if asked) from a PIL image or
    anything NumPy converts; a 2-D image gains a channel axis of 1.

    Example:
        >>> tf.keras.preprocessing.image.img_to_array(np.zeros((2, 3))).shape
        (2, 3, 1)
    """
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or _backend.floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x.reshape((1,) + x.shape if data_format == "channels_first" else x.shape + (1,))
    raise ValueError(f"Unsupported image shape: {x.shape}")


def save_img(path, x, data_format=None, file_format=None, scale: bool = True, **kwargs):
    """Write the image array `x` to `path` (the format from the suffix unless given)."""
    data_format = _data_format(data_format)
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"   # Pillow's name
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def load_img(path, color_mode: str = "rgb", target_size=None, interpolation: str = "nearest",
             keep_aspect_ratio: bool = False):
    """A PIL image read from `path` (a path or a BytesIO) in `color_mode` ("rgb",
    "rgba" or "grayscale"), resized to `target_size` = (height, width) if given
    (cropped centrally to its aspect ratio first with `keep_aspect_ratio`)."""
    Image = _pil_image("load_img")
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        if isinstance(path, pathlib.Path):
            path = str(path.resolve())
        with open(path, "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    wanted = {"grayscale": ("L", ("L", "I;16", "I")), "rgba": ("RGBA", ("RGBA",)),
              "rgb": ("RGB", ("RGB",))}
    if color_mode not in wanted:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    mode, accepted = wanted[color_mode]
    if img.mode not in accepted:
        img = img.convert(mode)
    if target_size is None:
        return img
    size = (target_size[1], target_size[0])   # PIL speaks (width, height)
    if img.size == size:
        return img
    if interpolation not in _RESAMPLING:
        raise ValueError(f"Invalid interpolation method {interpolation} specified. "
                         f"Supported methods are {', '.join(_RESAMPLING)}")
    resample = getattr(Image.Resampling, interpolation.upper())
    if not keep_aspect_ratio:
        return img.resize(size, resample)
    width, height = img.size
    crop_h = min(height, (width * size[1]) // size[0])
    crop_w = min(width, (height * size[0]) // size[1])
    top, left = (height - crop_h) // 2, (width - crop_w) // 2
    return img.resize(size, resample, box=[left, top, left + crop_w, top + crop_h])


def smart_resize(x, size, interpolation: str = "bilinear", data_format: str = "channels_last",
                 **kwargs):
    """`x` (an image or a batch) cropped centrally to the aspect ratio of `size` =
    (height, width), as large as fits, then resized to `size`: no distortion. A NumPy
    input gives a NumPy array, a tensor a tensor.

    Example:
        >>> out = tf.keras.preprocessing.image.smart_resize(np.ones((5, 8, 2)), (3, 3))
        >>> out.shape, type(out).__name__
        ((3, 3, 2), 'ndarray')
    """
    kwargs.pop("backend_module", None)
    if kwargs:
        raise TypeError(f"smart_resize() got unexpected keyword arguments: {list(kwargs)}")
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    as_numpy = not isinstance(x, Tensor)
    img = _backend.constant(x, dtype=np.asarray(x).dtype.name) if as_numpy else x
    rank = len(img.shape)
    if rank < 3 or rank > 4:
        raise ValueError(f"Expected an image array with shape `(height, width, channels)`, "
                         f"or `(batch_size, height, width, channels)`, but got input with "
                         f"incorrect rank, of shape {tuple(img.shape)}.")
    dims = tuple(img.shape)
    height, width = (dims[-3], dims[-2]) if data_format == "channels_last" else dims[-2:]
    target_h, target_w = size
    crop_h = max(min(height, int(float(width * target_h) / target_w)), 1)
    crop_w = max(min(width, int(float(height * target_w) / target_h)), 1)
    top, left = int(float(height - crop_h) / 2), int(float(width - crop_w) / 2)
    rows, cols = slice(top, top + crop_h), slice(left, left + crop_w)
    if data_format == "channels_last":
        img = img[..., rows, cols, :]
    else:
        img = img[..., rows, cols]
    out = _keras_image.resize(img, size, interpolation=interpolation, data_format=data_format)
    return out.numpy() if as_numpy else out


# --------------------------------------------------------------------------- augmentation
def _scipy_ndimage():
    try:
        from scipy import ndimage
    except ImportError:
        raise ImportError("Image transformations require SciPy. Install SciPy "
                          "(pip install scipy).") from None
    return ndimage


def apply_affine_transform(x, theta: float = 0, tx: float = 0, ty: float = 0,
                           shear: float = 0, zx: float = 1, zy: float = 1, row_axis: int = 1,
                           col_axis: int = 2, channel_axis: int = 0,
                           fill_mode: str = "nearest", cval: float = 0.0, order: int = 1):
    """One image `x` (3-D NumPy) rotated by `theta` degrees, shifted by `tx` rows and
    `ty` columns, sheared by `shear` degrees and zoomed by (`zx`, `zy`) about its centre;
    points from outside are filled by `fill_mode` ("constant" with `cval`, "nearest",
    "reflect", "wrap"); `order` is the spline order.

    Example:
        >>> x = np.arange(9.0).reshape(1, 3, 3)
        >>> tf.keras.preprocessing.image.apply_affine_transform(x, theta=90)[0].round(6)
        array([[2., 5., 8.],
               [1., 4., 7.],
               [0., 3., 6.]])
    """
    if len({row_axis, col_axis, channel_axis}) != 3:
        raise ValueError("'row_axis', 'col_axis', and 'channel_axis' must be distinct")
    axes = {row_axis, col_axis, channel_axis}
    if axes != {0, 1, 2}:
        raise ValueError(f"Invalid axis' indices: {axes - {0, 1, 2}}")
    if x.ndim != 3:
        raise ValueError("Input arrays must be multi-channel 2D images.")
    if channel_axis not in (0, 2):
        raise ValueError("Channels are allowed and the first and last dimensions.")
    # the transforms compose right to left in the order rotation, shift, shear, zoom; the
    # matrix maps output coordinates to input coordinates, as ndimage wants
    parts = []
    if theta != 0:
        t = np.deg2rad(theta)
        parts.append(np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0],
                               [0, 0, 1]]))
    if tx != 0 or ty != 0:
        parts.append(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        s = np.deg2rad(shear)
        parts.append(np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        parts.append(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if not parts:
        return x
    matrix = parts[0]
    for m in parts[1:]:
        matrix = matrix @ m
    h, w = x.shape[row_axis], x.shape[col_axis]
    oh, ow = h / 2 - 0.5, w / 2 - 0.5   # about the centre of the pixel grid
    matrix = np.array([[1, 0, oh], [0, 1, ow], [0, 0, 1]]) @ matrix @ \
        np.array([[1, 0, -oh], [0, 1, -ow], [0, 0, 1]])
    x = np.rollaxis(x, channel_axis, 0)
    if col_axis > row_axis:
        matrix[:, [0, 1]] = matrix[:, [1, 0]]
        matrix[[0, 1]] = matrix[[1, 0]]
    ndimage = _scipy_ndimage()
    channels = [ndimage.affine_transform(c, matrix[:2, :2], matrix[:2, 2], order=order,
                                         mode=fill_mode, cval=cval) for c in x]
    return np.rollaxis(np.stack(channels, axis=0), 0, channel_axis + 1)


def random_rotation(x, rg: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                    fill_mode: str = "nearest", cval: float = 0.0,
                    interpolation_order: int = 1):
    """`x` rotated by an angle drawn uniformly from [-rg, rg] degrees."""
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(x, theta=theta, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shift(x, wrg: float, hrg: float, row_axis: int = 1, col_axis: int = 2,
                 channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                 interpolation_order: int = 1):
    """`x` shifted by fractions of its height (within `hrg`) and width (within `wrg`)."""
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return apply_affine_transform(x, tx=tx, ty=ty, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shear(x, intensity: float, row_axis: int = 1, col_axis: int = 2,
                 channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                 interpolation_order: int = 1):
    """`x` sheared by an angle drawn uniformly from [-intensity, intensity] degrees."""
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(x, shear=shear, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_zoom(x, zoom_range, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                fill_mode: str = "nearest", cval: float = 0.0, interpolation_order: int = 1):
    """`x` zoomed by two factors drawn uniformly from `zoom_range` = (lower, upper)."""
    if len(zoom_range) != 2:
        raise ValueError(f"`zoom_range` should be a tuple or list of two floats. Received: "
                         f"{zoom_range}")
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return apply_affine_transform(x, zx=zx, zy=zy, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def apply_channel_shift(x, intensity: float, channel_axis: int = 0):
    """`intensity` added to every channel, clipped to the image's original range."""
    x = np.rollaxis(x, channel_axis, 0)
    lo, hi = np.min(x), np.max(x)
    x = np.stack([np.clip(c + intensity, lo, hi) for c in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def random_channel_shift(x, intensity_range: float, channel_axis: int = 0):
    """`apply_channel_shift` by an intensity drawn from [-range, range]."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def apply_brightness_shift(x, brightness: float, scale: bool = True):
    """A channels-last image with its brightness scaled by `brightness` (PIL's
    ImageEnhance), back as a float array; values outside [0, 255] are rescaled there and
    back unless `scale`."""
    _pil_image("apply_brightness_shift")
    from PIL import ImageEnhance  # optional: Pillow, checked just above
    lo, hi = np.min(x), np.max(x)
    outside = (lo < 0) or (hi > 255)
    img = array_to_img(x, scale=outside or scale)
    x = img_to_array(ImageEnhance.Brightness(img).enhance(brightness))
    if not scale and outside:
        x = x / 255 * (hi - lo) + lo
    return x


def random_brightness(x, brightness_range, scale: bool = True):
    """`apply_brightness_shift` by a factor drawn from `brightness_range` = (lower,
    upper)."""
    if len(brightness_range) != 2:
        raise ValueError(f"`brightness_range should be tuple or list of two floats. "
                         f"Received: {brightness_range}")
    factor = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, factor, scale)


def __dir__() -> list:
    """Only the public names."""
    return list(__all__)
