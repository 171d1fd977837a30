"""Element structures of tf.data: nested tuples/dicts of TensorSpecs and their values.

Inside a pipeline an element travels as a flat list of NumPy arrays (the leaves of its
structure, in `nest` order); it becomes Tensors only where user code sees it (the
functions of `map`/`filter`/..., and the iterator's output). As in TensorFlow, tuples,
namedtuples and dicts are structure while a Python list is one tensor value.
"""
from __future__ import annotations

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.dtypes import DType, as_dtype
from .._core.errors import InvalidArgumentError
from .._core.memory import wrap_native
from .._core.tensor import Tensor, TensorShape, TensorSpec
from .._core.variable import Variable


def normalize(value, op: str):
    """`value` with its leaves converted to NumPy arrays (via convert_to_tensor, so Python
    numbers get TensorFlow's default dtypes) and lists turned into values."""
    if isinstance(value, dict):
        return type(value)((k, normalize(v, op)) for k, v in value.items()) \
            if type(value) is not dict else {k: normalize(v, op) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [normalize(v, op) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return to_array(value, op)


def to_array(value, op: str, dtype: DType | None = None) -> np.ndarray:
    """One leaf as a NumPy array (a read-only view of a tensor's data, not a copy)."""
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, np.ndarray) and dtype is None:
        as_dtype(value.dtype)  # refuses dtypes tapeflow has no DType for
        return value
    if not isinstance(value, Tensor):
        try:
            value = convert_to_tensor(value, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{op}: cannot convert {value!r:.80} to a tensor: {e}") from None
    return np.asarray(value)


def spec_of(structure) -> object:
    """The element_spec of a normalized structure of arrays (or tensors)."""
    return nest.map_structure(lambda a: TensorSpec(a.shape, as_dtype(a.dtype)), structure) \
        if nest.is_nested(structure) else TensorSpec(structure.shape, as_dtype(structure.dtype))


def flat_specs(spec) -> list:
    return nest.flatten(spec) if nest.is_nested(spec) else [spec]


def pack(spec, flat: list):
    return nest.pack_sequence_as(spec, flat) if nest.is_nested(spec) else flat[0]


def to_tensors(flat: list) -> list:
    """Eager Tensors over the arrays (no copy: a tensor owns a read-only view)."""
    return [wrap_native(a if isinstance(a, np.ndarray) else np.asarray(a)) for a in flat]


def as_numpy(spec, flat: list):
    """The element as `as_numpy_iterator` gives it: arrays, 0-d values as NumPy scalars."""
    return pack(spec, [a[()] if a.ndim == 0 else a for a in flat])


def with_batch(spec: TensorSpec, size) -> TensorSpec:
    return TensorSpec([size] + list(spec.shape), spec.dtype)


def most_specific_compatible(a: TensorSpec, b: TensorSpec) -> TensorSpec | None:
    """The spec covering both (None where the shapes differ), or None if ranks or dtypes
    differ."""
    if a.dtype is not b.dtype or len(a.shape) != len(b.shape):
        return None
    return TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype)


def same_structure(a, b) -> bool:
    """Whether two specs have the same nesting (types and keys), ignoring the leaves."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_structure(x, y) for x, y in zip(a, b)))
    return True


def check_compatible(op: str, spec: TensorSpec, array: np.ndarray, what: str) -> None:
    """Raise InvalidArgumentError unless `array` has `spec`'s dtype and a compatible shape."""
    dtype = as_dtype(array.dtype)
    if dtype is not spec.dtype:
        raise InvalidArgumentError(f"{op}: {what} has dtype {dtype.name}, but the element "
                                   f"spec expects {spec.dtype.name} ({spec})")
    if not TensorShape(spec.shape).is_compatible_with(array.shape):
        raise InvalidArgumentError(f"{op}: {what} has shape {list(array.shape)}, not "
                                   f"compatible with the element spec's "
                                   f"{list(spec.shape)}")


def to_tensor(value, op: str) -> Tensor:
    """One output leaf of a user function as a Tensor."""
    if isinstance(value, Variable):
        return value.read_value()
    if isinstance(value, Tensor):
        return value
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: the function returned {value!r:.80}, which is not a tensor "
                        f"value: {e}") from None
