"""Checking the Python arguments of ops (axes, shapes, sizes, dtypes, operands): the one
place they are validated, so every op rejects the same malformed values the same way."""
from __future__ import annotations

import numbers
import operator
from typing import Callable

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import is_dim, is_symbolic, traced_dims
from .._core.tensor import Tensor
from .._core.variable import Variable

# --------------------------------------------------------------------------- arguments
#
# The one place Python arguments of ops (axes, shapes, sizes, counts, dtypes, lists of
# tensors) are checked. Every public op takes them through these helpers, so that every op
# rejects the same malformed values with the same kind of error: a wrong *type* (a float,
# bool, string or None where an int is required) raises ArgumentTypeError, a wrong *value*
# (negative size, axis out of range, duplicate axis) InvalidArgumentError; messages start
# with the op's name and name the argument. None of this is on the hot path of tensor
# operands: only ops with such arguments call it, once per call.


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """A Python argument of the wrong type: a float, bool, string or None where an int, a
    shape or a dtype is required. Both an InvalidArgumentError, like all bad input to an op
    (API.md §2), and a TypeError, which TensorFlow raises for these (NumPy's AxisError is
    likewise both a ValueError and an IndexError)."""


def show(value) -> str:
    """A value as error messages quote it: tensors and arrays by dtype and shape."""
    if isinstance(value, (Tensor, Variable, np.ndarray)):
        return describe(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_int(value):
    """`value` as a Python int if it is an integer scalar (int, NumPy integer, 0-d integer
    array, tensor or variable), else None. A bool is not an integer here: TensorFlow
    rejects True as a size or an axis, and accepting it hides swapped arguments."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)  # floats, strings, None and float tensors refuse
    except TypeError:
        return None


def int_arg(op: str, value, arg: str, minimum: int | None = None) -> int:
    """An integer argument (size, count, index, mask) as a Python int; `minimum` bounds it.

    Example: `int_arg("one_hot", depth, "depth", minimum=0)`; 2.5, "3", True, None and
    float tensors raise ArgumentTypeError, -1 InvalidArgumentError.
    """
    n = as_int(value)
    if n is None:
        raise ArgumentTypeError(f"{op}: {arg} must be an int, got {show(value)}")
    if minimum is not None and n < minimum:
        raise InvalidArgumentError(f"{op}: {arg} must be >= {minimum}, got {n}")
    return n


def int_list(op: str, value, arg: str, minimum: int | None = None,
             scalar: bool = True, dims: bool = False) -> tuple:
    """A list of ints (list/tuple of integer scalars, 1-D integer array or tensor, or, when
    `scalar`, one integer scalar) as a tuple of Python ints, each >= `minimum` if given.
    With `dims`, entries may also be `Dim`s (a traced graph's run-time sizes), kept as is.

    Example: `int_list("tile", multiples, "multiples", minimum=0)`.
    """
    if isinstance(value, (Tensor, Variable, np.ndarray)):
        dtype = value.dtype
        is_int = dtype.kind in "iu" if isinstance(value, np.ndarray) else dtype.is_integer
        rank = value.ndim
        if (not is_int and value.size) or rank > 1 or (rank == 0 and not scalar):
            raise ArgumentTypeError(
                f"{op}: {arg} must be a {'scalar or ' if scalar else ''}1-D list of ints, "
                f"got {show(value)}")
        if dims and is_symbolic(value):
            found = traced_dims(value)
            if found is not None:
                return found if rank else found[:1]
        items = np.asarray(value.numpy() if not isinstance(value, np.ndarray) else value)
        out = tuple(int(v) for v in items.reshape(-1))
    elif isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            n = as_int(v)
            if n is None and dims:  # a run-time size: a Dim, or a traced tf.shape(x)[i]
                if is_dim(v):
                    n = v
                elif is_symbolic(v) and v.ndim == 0:
                    n = (traced_dims(v) or (None,))[0]
            if n is None:
                raise ArgumentTypeError(
                    f"{op}: {arg} must be a list of ints, got {show(value)} (entry {i} is "
                    f"{show(v)})")
            out.append(n)
        out = tuple(out)
    else:
        n = as_int(value) if scalar else None
        if n is None:
            raise ArgumentTypeError(
                f"{op}: {arg} must be {'an int or ' if scalar else ''}a list of ints, got "
                f"{show(value)}")
        out = (n,)
    if minimum is not None and any(not is_dim(n) and n < minimum for n in out):
        raise InvalidArgumentError(
            f"{op}: {arg} {list(out)} has an entry < {minimum}")
    return out


def shape_arg(op: str, value, arg: str = "shape", unknown: bool = False) -> tuple:
    """A shape (list of non-negative ints; a single int is a 1-D shape) as a tuple.

    With `unknown` (reshape's shape), one entry may be -1: inferred from the size.
    Entries may be `Dim`s (sizes known when a traced graph runs, e.g. from `dims_of`).
    Example: `shape_arg("zeros", [2, 3])` -> (2, 3); [2.5], "3" and [-1] raise.
    """
    dims = int_list(op, value, arg, dims=True)
    if unknown:
        if dims.count(-1) > 1 or any(not is_dim(d) and d < -1 for d in dims):
            raise InvalidArgumentError(
                f"{op}: {arg} {list(dims)} must hold non-negative sizes and at most one -1")
    elif any(not is_dim(d) and d < 0 for d in dims):
        raise InvalidArgumentError(
            f"{op}: {arg} {list(dims)} has a negative dimension (sizes must be >= 0)")
    return dims

def float_arg(op: str, value, arg: str) -> float:
    """A real scalar argument that is not a tensor operand (alpha, epsilon) as a float: a
    Python or NumPy number or a 0-d real tensor. Strings, bools, None, lists and complex
    numbers raise ArgumentTypeError instead of being parsed or truncated by float()."""
    if isinstance(value, (Tensor, Variable, np.ndarray)):
        real = value.dtype.kind in "iuf" if isinstance(value, np.ndarray) else (
            value.dtype.is_floating or value.dtype.is_integer)
        if value.ndim == 0 and real:
            return float(value.numpy() if not isinstance(value, np.ndarray) else value)
    elif isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    raise ArgumentTypeError(f"{op}: {arg} must be a real number, got {show(value)}")


def normalize_axis(op: str, axis, rank: int, arg: str = "axis") -> int:
    """A non-negative axis, or InvalidArgumentError naming the op and the valid range
    (ArgumentTypeError for a non-integer: 1.5, True, "0", a float tensor, a list)."""
    a = as_int(axis)
    if a is None:
        raise ArgumentTypeError(f"{op}: {arg} must be an int, got {show(axis)}")
    if not -rank <= a < rank:
        raise InvalidArgumentError(
            f"{op}: {arg}={a} is out of range for a tensor of rank {rank} "
            + (f"(valid: [{-rank}, {rank - 1}])" if rank else "(a scalar has no axes)"))
    return a + rank if a < 0 else a


def normalize_axes(op: str, axis, rank: int, arg: str = "axis",
                   duplicates: bool = False) -> tuple:
    """A sorted tuple of non-negative axes from an int or a list of ints (None: all axes).

    An axis named twice (also as 0 and -rank) raises InvalidArgumentError as TensorFlow's
    reductions do, unless `duplicates` (TF's squeeze ignores repeats).
    """
    if axis is None:
        return tuple(range(rank))
    axes = [normalize_axis(op, a, rank, arg) for a in int_list(op, axis, arg)]
    unique = sorted(set(axes))
    if len(unique) != len(axes) and not duplicates:
        twice = next(a for a in unique if axes.count(a) > 1)
        raise InvalidArgumentError(
            f"{op}: {arg} {show(axis)} names dimension {twice} more than once "
            f"(for a tensor of rank {rank})")
    return tuple(unique)


def dtype_arg(op: str, dtype, arg: str = "dtype", optional: bool = False):
    """A DType from a DType, NumPy dtype or name; None only when `optional` (then None).

    Like TensorFlow's as_dtype, None and non-dtypes raise a TypeError (ArgumentTypeError):
    `cast(x, None)` must not pick a default dtype.
    """
    if isinstance(dtype, _dt.DType):
        return dtype
    if dtype is None:
        if optional:
            return None
        raise ArgumentTypeError(f"{op}: {arg} must be a dtype such as tf.float32, got None")
    if isinstance(dtype, int) and not isinstance(dtype, bool):  # TF's DataType enum
        try:
            return _dt.as_dtype(dtype)
        except TypeError:
            raise ArgumentTypeError(f"{op}: {arg} must be a dtype such as tf.float32, got "
                                    f"{show(dtype)}") from None
    if isinstance(dtype, (bool, float, list, tuple, dict)):  # np.dtype(5) is not an error
        raise ArgumentTypeError(f"{op}: {arg} must be a dtype such as tf.float32, got "
                                f"{show(dtype)}")
    try:
        return _dt.as_dtype(dtype)
    except TypeError:
        raise ArgumentTypeError(f"{op}: {arg} must be a dtype such as tf.float32, got "
                                f"{show(dtype)}") from None


def choice_arg(op: str, value, arg: str, choices, upper: bool = False) -> str:
    """A string argument that must be one of `choices` (compared in upper case if `upper`)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{op}: {arg} must be one of {list(choices)}, got "
                                f"{show(value)}")
    v = value.upper() if upper else value
    if v not in choices:
        raise InvalidArgumentError(f"{op}: {arg} must be one of {list(choices)}, got "
                                   f"{value!r}")
    return v


def sequence_arg(op: str, value, arg: str, nonempty: bool = False) -> list:
    """A list argument (list or tuple; a tensor is not a list of tensors) as a list."""
    if not isinstance(value, (list, tuple)):
        raise ArgumentTypeError(f"{op}: {arg} must be a list of tensors, got {show(value)}")
    if nonempty and not value:
        raise InvalidArgumentError(f"{op}: {arg} must be a non-empty list of tensors, got []")
    return list(value)

# --------------------------------------------------------------------------- operands


def to_tensor(x, dtype_hint, op: str, arg: str) -> Tensor:
    """Convert argument `arg` of op `op`; Python scalars take `dtype_hint` (the other
    operand's). No defaults: every caller names the op and the argument its errors quote."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Variable):
        return x.read_value()
    try:
        if dtype_hint is not None and isinstance(x, (numbers.Number, list, tuple)) \
                and not isinstance(x, np.ndarray):
            return convert_to_tensor(x, dtype=dtype_hint)
        return convert_to_tensor(x)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{op}: argument {arg!r}: {e}") from None


def binary_operands(op: str, x, y) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of one dtype (Python values adapt; tensors must agree)."""
    tx, ty = type(x) is Tensor, type(y) is Tensor
    if tx and ty:
        if x.dtype is not y.dtype:
            raise InvalidArgumentError(
                f"{op}: x and y must have the same dtype, got x: {describe(x)} and "
                f"y: {describe(y)}; cast one with tf.cast")
        return x, y
    if isinstance(x, Variable):
        x, tx = x.read_value(), True
    if isinstance(y, Variable):
        y, ty = y.read_value(), True
    if tx and not ty:
        y = to_tensor(y, x.dtype, op, "y")
    elif ty and not tx:
        x = to_tensor(x, y.dtype, op, "x")
    elif not tx and not ty:
        x = to_tensor(x, None, op, "x")
        y = to_tensor(y, x.dtype, op, "y")
    if x.dtype is not y.dtype:
        raise InvalidArgumentError(
            f"{op}: x and y must have the same dtype, got x: {describe(x)} and y: "
            f"{describe(y)}; cast one with tf.cast")
    return x, y


def require_dtype(op: str, t: Tensor, ok: Callable[[_dt.DType], bool], what: str,
                  arg: str = "x") -> None:
    """Raise InvalidArgumentError unless `ok(t.dtype)`."""
    if not ok(t.dtype):
        raise InvalidArgumentError(f"{op}: argument {arg!r} must be {what}, got {describe(t)}")


