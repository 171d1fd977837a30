"""The small exception hierarchy every tapeflow error comes from."""
from __future__ import annotations

import os
import sys

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TapeflowError(Exception):
    """Base class of tapeflow's own errors."""


class InvalidArgumentError(TapeflowError, ValueError):
    """An op received inputs it cannot work with (shape, dtype, axis, index).

    Example:
        >>> import tapeflow as tf
        >>> tf.add(tf.ones([2]), tf.ones([3]))  # raises InvalidArgumentError
    """


class NotFoundError(TapeflowError, KeyError):
    """A kernel, backend or registration that was asked for does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class AlreadyExistsError(TapeflowError, ValueError):
    """A registration would silently replace an existing one."""


class DisposedError(TapeflowError, RuntimeError, ValueError):
    """A tensor was used after `dispose()`/`tidy` released its data (a RuntimeError and,
    like other bad-input errors, a ValueError)."""


class UnimplementedError(TapeflowError, NotImplementedError):
    """The operation exists but is not available for these inputs."""


class OutOfRangeError(TapeflowError):
    """An iteration went past the end of its input: `Iterator.get_next()` on an exhausted
    dataset iterator (a plain `next()` raises StopIteration, as in TensorFlow).

    Example:
        >>> it = iter(tf.data.Dataset.range(0))
        >>> it.get_next()  # raises OutOfRangeError
    """


class NoBatchingRule(TapeflowError):
    """Op `op` has no batching rule, or none for this call (vectorized_map catches it and
    runs a map_fn loop instead).

    Example: `raise NoBatchingRule("GatherV2", "with batch_dims=1 and only params batched")`.
    """

    def __init__(self, op: str, why: str):
        super().__init__(f"op {op} {why}")
        self.op = op


class OperatorNotAllowedInGraphError(TapeflowError, TypeError):
    """A symbolic tensor (inside a function being traced) was used where a value is needed:
    as a Python bool, in `.numpy()`, as an index. TensorFlow raises the same TypeError."""


_INSIDE: dict = {}  # code file name -> whether it belongs to the tapeflow package


def user_site() -> str | None:
    """'file:line' of the innermost frame outside the tapeflow package."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        inside = _INSIDE.get(name)
        if inside is None:  # one path normalisation per file, not per frame and call
            inside = _INSIDE[name] = os.path.abspath(name).startswith(_PKG_DIR)
        if not inside:
            break
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


def describe(value) -> str:
    """A short 'dtype[shape]' description of a tensor-like for error messages."""
    shape = getattr(value, "_shape", None) or getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    name = getattr(dtype, "name", dtype)
    if shape is None and dtype is None:
        return type(value).__name__
    return f"{name}{list(shape) if shape is not None else '[?]'}"
