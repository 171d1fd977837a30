"""DType objects, conversion from NumPy/strings, and TensorFlow's promotion rules.

`string` tensors hold NumPy object arrays of `bytes` (TensorFlow's values are byte strings,
any bytes, not only UTF-8). NumPy 2's StringDType was measured against them on 1e5 short
strings: equal 2.1 vs 1.7 ms, gather 14 vs 1.7 ms, concat 4.4 vs 0.55 ms, lower 35 vs 12
ms (StringDType slower), length 1.4 vs 6.8 ms (faster); StringDType also holds `str`,
so every `.numpy()` would encode to bytes again (30 ms per 1e5). Object arrays win.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import InvalidArgumentError

_BF16 = np.dtype(ml_dtypes.bfloat16)  # bfloat16 comes from ml_dtypes (a declared dependency)


class DType:
    """A tensor element type (`tf.float32`, `tf.int32`, ...).

    Example:
        >>> import tapeflow as tf
        >>> tf.float32.is_floating, tf.float32.size
        (True, 4)
    """

    __slots__ = ("name", "as_numpy_dtype", "is_floating", "is_complex", "is_integer",
                 "is_bool", "is_unsigned", "size", "is_trainable", "_np")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self._np = np.dtype(np_dtype)
        self.as_numpy_dtype = self._np.type
        kind = self._np.kind
        self.is_floating = kind == "f" or name == "bfloat16"
        self.is_complex = kind == "c"
        self.is_integer = kind in "iu"
        self.is_unsigned = kind == "u"
        self.is_bool = kind == "b"
        self.size = self._np.itemsize
        self.is_trainable = self.is_floating or self.is_complex
        if kind == "O":  # string: TF reports size 0 (a variable-length element)
            self.size = 0

    @property
    def is_numeric(self) -> bool:
        """True for numbers (not bool, not string), as TF's `DType.is_numeric`."""
        return self.is_floating or self.is_complex or self.is_integer

    @property
    def is_string(self) -> bool:
        """True for `tf.string` only."""
        return self._np.kind == "O"

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's DataType number of this dtype (types.proto), as TF's.

        Example:
            >>> import tapeflow as tf
            >>> tf.float32.as_datatype_enum, tf.as_dtype(9).name
            (1, 'int64')
        """
        return DATATYPE_ENUM[self.name]

    @property
    def real_dtype(self) -> "DType":
        """float32 for complex64, float64 for complex128, itself otherwise."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def _no_limits(self, which: str) -> None:
        if self._np.kind == "O":
            raise TypeError(f"Cannot find {which} value of <dtype: 'string'> with type "
                            f"<dtype: 'string'>.")

    @property
    def min(self):
        self._no_limits("minimum")
        return (np.finfo if self.is_floating or self.is_complex else np.iinfo)(self._np).min \
            if not self.is_bool else False

    @property
    def max(self):
        self._no_limits("maximum")
        return (np.finfo if self.is_floating or self.is_complex else np.iinfo)(self._np).max \
            if not self.is_bool else True

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        """TF's printed form, `<dtype: 'float32'>` (repr stays `tf.float32`)."""
        return f"<dtype: {self.name!r}>"

    def __eq__(self, other) -> bool:
        """Like TF: equal to itself, its NumPy type/dtype and its name."""
        if other is self:
            return True
        if isinstance(other, DType) or other is None:
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    # identity hash, in C: DTypes key hot dicts (equal names/NumPy types still compare ==)
    __hash__ = object.__hash__

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", _BF16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool = DType("bool", np.bool_)  # noqa: A001 - TensorFlow's public name
string = DType("string", object)  # values: NumPy object arrays of bytes (see above)

ALL = [d for d in (float16, bfloat16, float32, float64, complex64, complex128, int8, int16,
                   int32, int64, uint8, uint16, uint32, uint64, bool, string) if d is not None]
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NP = {d._np: d for d in ALL}
# TensorFlow's DataType enum (types.proto), the one table of it: checkpoints, SavedModels
# and serialized tensors write these numbers, and `tf.zeros(2, 1)` means float32
DATATYPE_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
                 "string": 7, "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14,
                 "uint16": 17, "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}
_BY_ENUM = {number: name for name, number in DATATYPE_ENUM.items()}


def as_dtype(x) -> DType:
    """Convert a DType, NumPy dtype/type or a name into a DType.

    Example:
        >>> as_dtype("float64") is float64
        True
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        try:
            return _BY_NAME[x]
        except KeyError:
            raise TypeError(f"as_dtype: unknown dtype name {x!r}") from None
    if isinstance(x, _builtins.int) and not isinstance(x, _builtins.bool):
        if x not in _BY_ENUM or _BY_ENUM[x] not in _BY_NAME:
            raise TypeError(f"as_dtype: {x} is not a DataType enum value of a dtype "
                            "tapeflow has")
        return _BY_NAME[_BY_ENUM[x]]
    if x is bytes or x is _builtins.str:  # TF refuses Python's own types (np.bytes_ is fine)
        raise TypeError(f"as_dtype: cannot convert {x!r} to a tapeflow dtype")
    try:
        np_dtype = np.dtype(x)
        if np_dtype.kind in "SUT":  # NumPy bytes, str and StringDType: TF's string
            return string
        return _BY_NP[np_dtype]
    except (KeyError, TypeError):
        raise TypeError(f"as_dtype: cannot convert {x!r} to a tapeflow dtype") from None


def from_numpy(np_dtype) -> DType:
    """The DType of a NumPy dtype (fast path used by the engine)."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        return as_dtype(np_dtype)
    return d


def result_type(op: str, *dtypes: DType) -> DType:
    """The common dtype of tensor operands: TensorFlow does not mix dtypes implicitly."""
    first = dtypes[0]
    for d in dtypes[1:]:
        if d is not first:
            raise InvalidArgumentError(
                f"{op}: cannot mix dtypes {first.name} and {d.name}; "
                f"cast one operand with tf.cast first")
    return first


def default_dtype_for(value) -> DType | None:
    """TensorFlow's default dtype for a Python scalar/sequence (None when NumPy decides)."""
    if isinstance(value, builtins_bool):
        return bool
    if isinstance(value, int):
        return int32
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex128
    return None


import builtins as _builtins  # noqa: E402

builtins_bool = _builtins.bool
