"""convert_to_tensor and from_dlpack: Python values, NumPy arrays and foreign arrays in.

Types whose conversion needs ops (IndexedSlices densify, lists holding tensors stack)
register a conversion function here from the layer that defines those ops, as with
TensorFlow's `tf.register_tensor_conversion_function`; the engine below needs no op.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import dtypes as _dt
from .context import ctx
from .errors import InvalidArgumentError
from .memory import wrap_native
from .tensor import mark_traced_constant, Resource, Tensor

_NP2DT = _dt._BY_NP
# (priority, order, base type, conversion function), lowest priority first (TF's order)
_CONVERSIONS: list = []


def register_tensor_conversion_function(base_type, conversion_func: Callable,
                                        priority: int = 100) -> None:
    """Make `convert_to_tensor` accept instances of `base_type` (a type or tuple of types).

    `conversion_func(value, dtype=None, name=None, as_ref=False)` returns a Tensor (or
    anything convertible), or NotImplemented to let a later function or the default try;
    functions with a lower `priority` are tried first, as in TensorFlow.
    Example:
        >>> class Meters:
        ...     def __init__(self, v): self.v = v
        >>> tf.register_tensor_conversion_function(
        ...     Meters, lambda value, dtype=None, name=None, as_ref=False: value.v)
        >>> tf.convert_to_tensor(Meters(2.0)).numpy()
        2.0
    """
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if not types or not all(isinstance(t, type) for t in types):
        raise TypeError(f"register_tensor_conversion_function: base_type must be a type or "
                        f"a tuple of types, got {base_type!r}")
    if not callable(conversion_func):
        raise TypeError("register_tensor_conversion_function: conversion_func must be "
                        f"callable, got {conversion_func!r}")
    _CONVERSIONS.append((int(priority), len(_CONVERSIONS), types, conversion_func))
    _CONVERSIONS.sort(key=lambda entry: entry[:2])


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None) -> Tensor:
    """Turn a Tensor, Variable, IndexedSlices, NumPy array or Python value into a Tensor.

    Python floats default to float32 and ints to int32; NumPy arrays keep their dtype.
    Example:
        >>> tf.convert_to_tensor([1, 2]).dtype
        tf.int32
    """
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    if type(value) is Tensor:
        if dtype is not None and value.dtype is not dtype:
            raise InvalidArgumentError(
                f"convert_to_tensor: requested dtype {dtype.name} for a tensor of dtype "
                f"{value.dtype.name}; use tf.cast")
        return value
    if isinstance(value, Resource):
        return convert_to_tensor(value.read_value(), dtype)
    if isinstance(value, (list, tuple)) and _first_leaf_is_text(value) \
            and dtype in (None, _dt.string):
        # Python text: straight to an object array, before the registry (the autopacking
        # search for tensors walks every item) and np.asarray (a str_ array first)
        fast = _text_tensor(value)
        if fast is not None:
            return fast
    for _, _, types, func in _CONVERSIONS:
        if isinstance(value, types):
            out = func(value, dtype=dtype, name=name)
            if out is not NotImplemented:
                return convert_to_tensor(out, dtype, dtype_hint)
    target = dtype or (None if isinstance(value, np.ndarray) else
                       (_dt.as_dtype(dtype_hint) if dtype_hint is not None else None))
    try:
        arr = np.asarray(value)
    except UnicodeDecodeError:  # bytes that are not ASCII beside str: items kept as given
        arr = np.array(value, dtype=object)
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(f"convert_to_tensor: cannot convert {value!r}: {e}") from None
    if arr.dtype.kind in "OSUT" or target is _dt.string:
        return _string_tensor(value, arr, target)
    if arr.dtype not in _NP2DT and (arr.dtype == object or arr.dtype.kind in "USV"):
        raise InvalidArgumentError(f"convert_to_tensor: unsupported value of type "
                                   f"{type(value).__name__} (NumPy dtype {arr.dtype})")
    if target is None:
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            target = _dt.from_numpy(arr.dtype)
        else:
            kind = arr.dtype.kind
            target = {"f": _dt.float32, "i": _dt.int32, "u": _dt.int32, "b": _dt.bool,
                      "c": _dt.complex128}[kind]
            if kind in "iu" and arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
                target = _dt.int64
    if target.is_integer and arr.dtype.kind in "fc" or target.is_floating and arr.dtype.kind == "c":
        if not (arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
                and not isinstance(value, np.ndarray)):
            raise InvalidArgumentError(
                f"convert_to_tensor: cannot convert {value!r} (NumPy {arr.dtype}) to "
                f"{target.name} without losing information; use tf.cast")
    if target.is_bool and arr.dtype.kind != "b":
        raise InvalidArgumentError(f"convert_to_tensor: cannot convert {value!r} to bool")
    if target.is_integer and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(target._np)
        if arr.max() > info.max or arr.min() < info.min:
            raise InvalidArgumentError(
                f"convert_to_tensor: {value!r} does not fit in {target.name} "
                f"([{info.min}, {info.max}])")
    arr = np.array(arr, dtype=target._np, copy=True)
    t = wrap_native(arr)
    if ctx.graph is not None:  # a value written in traced code: the graph's constant
        mark_traced_constant(t)
    return t


def _as_bytes(item):
    if type(item) is bytes:
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    return None


def _first_leaf_is_text(value) -> bool:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes))


def _text_tensor(value) -> Tensor | None:
    """A rectangular nest of str/bytes as a string tensor in one pass; None for anything
    else (other items, ragged nests), which the general path converts or rejects."""
    try:
        arr = np.array(value, dtype=object)
        flat = arr.reshape(-1).tolist()
        items = [s.encode("utf-8") if type(s) is str else s for s in flat]
    except (ValueError, TypeError, UnicodeEncodeError):
        return None
    if not all(type(b) is bytes for b in items):
        return None
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return _wrap_string(out.reshape(arr.shape))


def _string_tensor(value, arr: np.ndarray, target) -> Tensor:
    """A string tensor (an object array of bytes; str is encoded as UTF-8) from `value`,
    whose NumPy form `arr` holds str, bytes or objects (or is empty)."""
    if target is not None and target is not _dt.string:
        raise InvalidArgumentError(
            f"convert_to_tensor: cannot convert {value!r} to {target.name}: it holds "
            f"strings (parse them with tf.strings.to_number)")
    if arr.dtype.kind not in "OSUT" and arr.size:
        raise InvalidArgumentError(
            f"convert_to_tensor: cannot convert {value!r} (NumPy {arr.dtype}) to string; "
            f"use tf.strings.as_string")
    if isinstance(value, (list, tuple, str, bytes)) and arr.size:
        # np.asarray(["a", 1]) makes "1" text and np.asarray(["a", b"b"]) picks one kind
        # for both, and a NumPy bytes scalar drops trailing NULs: an object array keeps
        # each item as given, to be checked below
        arr = np.array(value, dtype=object)
    flat = arr.reshape(-1).tolist()
    out = np.empty(len(flat), dtype=object)
    for i, item in enumerate(flat):
        b = _as_bytes(item)
        if b is None and isinstance(item, (list, tuple)):
            raise InvalidArgumentError(f"convert_to_tensor: cannot convert a non-rectangular "
                                       f"sequence to a tensor: {value!r}"[:300])
        if b is None:
            raise InvalidArgumentError(
                f"convert_to_tensor: unsupported value of type {type(item).__name__} "
                f"({item!r}) in {value!r}; a string tensor holds str or bytes"[:300])
        out[i] = b
    return _wrap_string(out.reshape(arr.shape))


def _wrap_string(arr: np.ndarray) -> Tensor:
    t = wrap_native(arr)
    if ctx.graph is not None:
        mark_traced_constant(t)
    return t


def from_dlpack(obj) -> Tensor:
    """A tensor over the memory of any DLPack producer (NumPy, PyTorch, JAX, CuPy on CPU),
    without a copy where the producer allows. The producer must not mutate it afterwards
    (tensors are immutable).

    Example:
        >>> t = tf.from_dlpack(np.arange(3.0))
    """
    arr = np.from_dlpack(obj)
    if arr.dtype not in _NP2DT:
        raise InvalidArgumentError(f"from_dlpack: unsupported dtype {arr.dtype}")
    return wrap_native(arr)
