"""`tf.keras.preprocessing.image`: conversions between arrays and PIL images, loading and
saving image files, and `smart_resize` (crop to the target aspect ratio, then resize).

PIL (the Pillow package) is optional: the functions that make or read PIL images raise
ImportError naming Pillow when it is missing; `img_to_array` and `smart_resize` need it
not.

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

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]

_RESAMPLING = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil_image(what: str):
    """PIL.Image, or ImportError naming the function and the package to install."""
    try:
        from PIL import Image
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


def __dir__() -> list:
    """Only the public names."""
    return list(__all__)
