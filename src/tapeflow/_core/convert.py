"""convert_to_tensor and from_dlpack: Python values, NumPy arrays and foreign arrays in."""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from . import nest
from . import tensor as _tensor_mod
from .errors import InvalidArgumentError
from .memory import wrap_native
from .tensor import IndexedSlices, Tensor
from .variable import Variable

_NP2DT = _dt._BY_NP


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
    if isinstance(value, Variable):
        return convert_to_tensor(value.read_value(), dtype)
    if isinstance(value, IndexedSlices):
        return convert_to_tensor(_tensor_mod._ops.indexed_slices_to_dense(value), dtype)
    if isinstance(value, (list, tuple)) and value and any(
            isinstance(v, (Tensor, Variable)) for v in nest.flatten(list(value))):
        if dtype is None and dtype_hint is None:  # Python numbers take the tensors' dtype
            dtype_hint = next(v.dtype for v in nest.flatten(list(value))
                              if isinstance(v, (Tensor, Variable)))
        return _tensor_mod._ops.stack([convert_to_tensor(v, dtype, dtype_hint) for v in value])
    target = dtype or (None if isinstance(value, np.ndarray) else
                       (_dt.as_dtype(dtype_hint) if dtype_hint is not None else None))
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(f"convert_to_tensor: cannot convert {value!r}: {e}") from None
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
    return wrap_native(arr)


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
