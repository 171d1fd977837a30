"""Layers that change shapes: Flatten, Reshape, RepeatVector, Permute, and the
up-sampling, zero-padding and cropping layers of 1, 2 and 3 spatial dimensions."""
from __future__ import annotations

import numpy as np

from ..._core.shape import dims_of
from ...ops import array as _array, image as _image, math as _math
from ._base import Stateless

__all__ = ["Cropping1D", "Cropping2D", "Cropping3D", "Flatten", "Permute", "RepeatVector",
           "Reshape", "UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D",
           "ZeroPadding2D", "ZeroPadding3D"]


# --------------------------------------------------------------------------- arguments
def data_format_arg(layer: str, data_format) -> str:
    """Keras's `standardize_data_format`: None is the default "channels_last"."""
    if data_format is None:
        return "channels_last"
    value = str(data_format).lower()
    if value not in ("channels_first", "channels_last"):
        raise ValueError(f"{layer}: the `data_format` argument must be one of "
                         f"{{'channels_first', 'channels_last'}}. Received: "
                         f"data_format={data_format}")
    return value


def int_tuple(layer: str, arg: str, value, n: int, allow_zero: bool = False) -> tuple:
    """Keras's `standardize_tuple`: an int repeated n times or n ints, all > 0 (>= 0 with
    `allow_zero`)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            values = None
        if values is None or len(values) != n or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            raise ValueError(f"{layer}: the `{arg}` argument must be a tuple of {n} "
                             f"integers. Received {arg}={value!r}")
        values = tuple(int(v) for v in values)
    low = 0 if allow_zero else 1
    if any(v < low for v in values):
        raise ValueError(f"{layer}: the `{arg}` argument must be a tuple of {n} integers "
                         f"{'>= 0' if allow_zero else '> 0'}. Received {arg}={value!r}")
    return values


_ORDINALS = ("1st", "2nd", "3rd")


def pairs(layer: str, arg: str, value, n: int) -> tuple:
    """An int, n ints (symmetric) or n pairs of ints, as n (before, after) pairs >= 0."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{layer}: `{arg}` cannot be negative. Received: "
                             f"{arg}={value}")
        return ((int(value), int(value)),) * n
    if not hasattr(value, "__len__") or len(value) != n:
        raise ValueError(f"{layer}: `{arg}` should be an int, a tuple of {n} ints or a tuple "
                         f"of {n} tuples of 2 ints. Received: {arg}={value!r}")
    return tuple(int_tuple(layer, f"{_ORDINALS[i]} entry of {arg}", v, 2, allow_zero=True)
                 for i, v in enumerate(value))


def _spatial_axes(data_format: str, n: int) -> list:
    return list(range(2, 2 + n)) if data_format == "channels_first" else list(range(1, 1 + n))


# --------------------------------------------------------------------------- layers
class Flatten(Stateless):
    """Flattens every axis but the batch: [N, a, b] -> [N, a*b].

    Example:
        >>> tf.keras.layers.Flatten()(tf.ones([2, 3, 4])).shape
        TensorShape([2, 12])
    """

    def call(self, x):
        if x.ndim == 0:
            raise self._input_error("rank >= 1", x)
        if x.ndim == 1:
            return _array.reshape(x, [-1, 1])
        if any(d is None for d in x.shape[1:]):  # sizes known when it runs
            return _array.reshape(x, [dims_of(x)[0], -1])
        return _array.reshape(x, [-1, int(np.prod(x.shape[1:]))])


class Reshape(Stateless):
    """Reshapes every axis but the batch to `target_shape` (one entry may be -1).

    Example:
        >>> tf.keras.layers.Reshape((3, 4))(tf.ones([2, 12])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, x):
        # checked here too: with an unknown batch, reshape alone could not tell
        if x.ndim >= 1 and None not in x.shape[1:]:
            size = int(np.prod(x.shape[1:]))
            known = int(np.prod([d for d in self.target_shape if d != -1]))
            if (known != size) if -1 not in self.target_shape else \
                    (known == 0 or size % known):
                raise ValueError(f"Reshape {self.name!r}: the total size of the new array "
                                 f"must be unchanged, input_shape = {list(x.shape[1:])}, "
                                 f"output_shape = {list(self.target_shape)}")
        return _array.reshape(x, [dims_of(x)[0], *self.target_shape])

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


class RepeatVector(Stateless):
    """Repeats a [batch, features] input `n` times: [batch, n, features].

    Example:
        >>> tf.keras.layers.RepeatVector(3)(tf.ones([2, 4])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, n: int, **kwargs):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"RepeatVector: expected an integer value for `n`, got "
                            f"{type(n)}.")
        if n <= 0:
            raise ValueError(f"RepeatVector: argument `n` should be a positive integer. "
                             f"Received: n={n}")
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, x):
        if x.ndim != 2:
            raise self._input_error("a 2-D [batch, features] input", x)
        return _array.repeat(_array.expand_dims(x, 1), self.n, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


class Permute(Stateless):
    """Permutes the non-batch axes: `dims` (1-based) says where each output axis comes
    from.

    Example:
        >>> tf.keras.layers.Permute((2, 1))(tf.ones([2, 3, 4])).shape
        TensorShape([2, 4, 3])
    """

    def __init__(self, dims, **kwargs):
        dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(f"Permute: invalid permutation argument `dims`: the set of "
                             f"indices must be consecutive and start from 1. Received "
                             f"dims={dims}")
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)

    def call(self, x):
        if x.ndim != len(self.dims) + 1:
            raise self._input_error(f"rank {len(self.dims) + 1}", x)
        return _array.transpose(x, (0, *self.dims))

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}


class UpSampling1D(Stateless):
    """Repeats each step of a [batch, steps, features] input `size` times.

    Example:
        >>> tf.keras.layers.UpSampling1D(2)(tf.ones([1, 3, 4])).shape
        TensorShape([1, 6, 4])
    """

    def __init__(self, size: int = 2, **kwargs):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"UpSampling1D: expected an integer value for `size`, got "
                            f"{type(size)}.")
        if size <= 0:
            raise ValueError(f"UpSampling1D: argument `size` should be a positive integer. "
                             f"Received: size={size}")
        super().__init__(**kwargs)
        self.size = int(size)

    def call(self, x):
        if x.ndim != 3:
            raise self._input_error("a 3-D [batch, steps, features] input", x)
        return _array.repeat(x, self.size, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


class _UpSamplingND(Stateless):
    _RANK = 2

    def __init__(self, size, data_format=None, **kwargs):
        kind = type(self).__name__
        self.size = int_tuple(kind, "size", size, self._RANK)
        self.data_format = data_format_arg(kind, data_format)
        super().__init__(**kwargs)

    def _check(self, x):
        if x.ndim != self._RANK + 2:
            raise self._input_error(f"a {self._RANK + 2}-D input ({self.data_format})", x)

    def _repeat(self, x):
        for axis, factor in zip(_spatial_axes(self.data_format, self._RANK), self.size):
            if factor != 1:
                x = _array.repeat(x, factor, axis=axis)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}


class UpSampling2D(_UpSamplingND):
    """Scales images up by `size` (rows, columns): each pixel repeated
    (`interpolation="nearest"`), or resized bilinearly (`"bilinear"`, as
    `tf.image.resize`, half-pixel centers).

    Example:
        >>> tf.keras.layers.UpSampling2D((2, 3))(tf.ones([1, 2, 2, 3])).shape
        TensorShape([1, 4, 6, 3])
    """

    _METHODS = ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5", "area")

    def __init__(self, size=(2, 2), data_format=None, interpolation: str = "nearest",
                 **kwargs):
        super().__init__(size, data_format, **kwargs)
        method = str(interpolation).lower()
        if method not in self._METHODS:
            raise ValueError(f"UpSampling2D: `interpolation` must be one of "
                             f"{list(self._METHODS)}, got {interpolation!r}")
        self.interpolation = method

    def call(self, x):
        self._check(x)
        if self.interpolation == "nearest":
            return self._repeat(x)
        if self.data_format == "channels_first":
            x = _array.transpose(x, (0, 2, 3, 1))
        height, width = x.shape[1], x.shape[2]
        if height is None or width is None:
            raise self._input_error(f"known rows and columns for interpolation="
                                    f"{self.interpolation!r}", x)
        y = _image.resize(x, [height * self.size[0], width * self.size[1]],
                          method=self.interpolation)
        y = y if y.dtype is x.dtype else _math.cast(y, x.dtype)
        return _array.transpose(y, (0, 3, 1, 2)) if self.data_format == "channels_first" \
            else y

    def get_config(self) -> dict:
        return {**super().get_config(), "interpolation": self.interpolation}


class UpSampling3D(_UpSamplingND):
    """Repeats each voxel of a 5-D input `size` times along the three spatial axes.

    Example:
        >>> tf.keras.layers.UpSampling3D(2)(tf.ones([1, 1, 2, 3, 4])).shape
        TensorShape([1, 2, 4, 6, 4])
    """

    _RANK = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)

    def call(self, x):
        self._check(x)
        return self._repeat(x)


class ZeroPadding1D(Stateless):
    """Pads the steps of a [batch, steps, features] input with zeros: `padding` is an int
    (both ends) or (before, after).

    Example:
        >>> tf.keras.layers.ZeroPadding1D((1, 2))(tf.ones([1, 3, 4])).shape
        TensorShape([1, 6, 4])
    """

    def __init__(self, padding=1, data_format=None, **kwargs):
        self.padding = int_tuple("ZeroPadding1D", "padding", padding, 2, allow_zero=True)
        self.data_format = data_format_arg("ZeroPadding1D", data_format)
        super().__init__(**kwargs)

    def call(self, x):
        if x.ndim != 3:
            raise self._input_error("a 3-D input", x)
        pads = [[0, 0], [0, 0], [0, 0]]
        pads[_spatial_axes(self.data_format, 1)[0]] = list(self.padding)
        return _array.pad(x, pads)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class _ZeroPaddingND(Stateless):
    _RANK = 2

    def __init__(self, padding, data_format=None, **kwargs):
        kind = type(self).__name__
        self.padding = pairs(kind, "padding", padding, self._RANK)
        self.data_format = data_format_arg(kind, data_format)
        super().__init__(**kwargs)

    def call(self, x):
        if x.ndim != self._RANK + 2:
            raise self._input_error(f"a {self._RANK + 2}-D input ({self.data_format})", x)
        pads = [[0, 0]] * x.ndim
        for axis, pad in zip(_spatial_axes(self.data_format, self._RANK), self.padding):
            pads[axis] = list(pad)
        return _array.pad(x, pads)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class ZeroPadding2D(_ZeroPaddingND):
    """Pads rows and columns of images with zeros: `padding` is an int, (rows, columns)
    or ((top, bottom), (left, right)).

    Example:
        >>> tf.keras.layers.ZeroPadding2D(1)(tf.ones([1, 2, 2, 3])).shape
        TensorShape([1, 4, 4, 3])
    """

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPaddingND):
    """Pads the three spatial axes of a 5-D input with zeros.

    Example:
        >>> tf.keras.layers.ZeroPadding3D(1)(tf.ones([1, 1, 2, 3, 4])).shape
        TensorShape([1, 3, 4, 5, 4])
    """

    _RANK = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


def _crop(layer, x, axes: list, cropping: tuple):
    """`x` without `cropping[i]` = (before, after) entries along `axes[i]`; a crop that
    leaves nothing is an error (Keras's)."""
    index = [slice(None)] * x.ndim
    for axis, (before, after) in zip(axes, cropping):
        if x.shape[axis] is not None and before + after >= x.shape[axis]:
            raise ValueError(f"{type(layer).__name__} {layer.name!r}: values in the "
                             f"`cropping` argument should be smaller than the corresponding "
                             f"spatial dimension of the input. Received: inputs.shape="
                             f"{list(x.shape)}, cropping={cropping}")
        index[axis] = slice(before, -after if after else None)
    return x[tuple(index)]


class Cropping1D(Stateless):
    """Removes `cropping` = (before, after) steps (an int: both ends) of a
    [batch, steps, features] input.

    Example:
        >>> tf.keras.layers.Cropping1D((1, 2))(tf.ones([1, 5, 4])).shape
        TensorShape([1, 2, 4])
    """

    def __init__(self, cropping=(1, 1), **kwargs):
        self.cropping = int_tuple("Cropping1D", "cropping", cropping, 2, allow_zero=True)
        super().__init__(**kwargs)

    def call(self, x):
        if x.ndim != 3:
            raise self._input_error("a 3-D input", x)
        return _crop(self, x, [1], (self.cropping,))

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


class _CroppingND(Stateless):
    _RANK = 2

    def __init__(self, cropping, data_format=None, **kwargs):
        kind = type(self).__name__
        self.cropping = pairs(kind, "cropping", cropping, self._RANK)
        self.data_format = data_format_arg(kind, data_format)
        super().__init__(**kwargs)

    def call(self, x):
        if x.ndim != self._RANK + 2:
            raise self._input_error(f"a {self._RANK + 2}-D input ({self.data_format})", x)
        return _crop(self, x, _spatial_axes(self.data_format, self._RANK), self.cropping)

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}


class Cropping2D(_CroppingND):
    """Removes rows and columns at the edges of images: `cropping` is an int, (rows,
    columns) or ((top, bottom), (left, right)).

    Example:
        >>> tf.keras.layers.Cropping2D(((1, 0), (0, 2)))(tf.ones([1, 4, 4, 3])).shape
        TensorShape([1, 3, 2, 3])
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_CroppingND):
    """Removes entries at the edges of the three spatial axes of a 5-D input.

    Example:
        >>> tf.keras.layers.Cropping3D(1)(tf.ones([1, 3, 4, 5, 2])).shape
        TensorShape([1, 1, 2, 3, 2])
    """

    _RANK = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)
