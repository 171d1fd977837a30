"""The small exception hierarchy every tapeflow error comes from."""
from __future__ import annotations

import os
import sys

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TapeflowError(Exception):
    """Base class of tapeflow's own errors."""


# TensorFlow's canonical error codes (tf.errors.OK, CANCELLED, ...), as gRPC numbers them
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, \
    PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, \
    UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = range(17)


class OpError(TapeflowError):
    """TensorFlow's base class of errors an operation raises: `OpError(node_def, op,
    message)`, with `message`, `op`, `node_def` and `error_code`. tapeflow's own code
    raises its subclasses with the message alone (`InvalidArgumentError("...")`).

    Example:
        >>> try:
        ...     tf.add(tf.ones([2]), tf.ones([3]))
        ... except tf.errors.OpError as e:
        ...     e.error_code == tf.errors.INVALID_ARGUMENT
        True
    """

    error_code_value = UNKNOWN  # each subclass's code

    def __init__(self, *args, **kwargs):
        super().__init__(*args, *kwargs.values())
        self._code = self.error_code_value
        if "message" in kwargs or len(args) >= 3:
            fields = dict(zip(("node_def", "op", "message", "error_code"), args))
            fields.update(kwargs)
            self._node_def, self._op = fields.get("node_def"), fields.get("op")
            self._message = str(fields.get("message", ""))
            if type(self) is OpError and isinstance(fields.get("error_code"), int):
                self._code = fields["error_code"]  # TF's OpError(node_def, op, msg, code)
        else:  # tapeflow's form: the message alone
            self._node_def = self._op = None
            self._message = str(args[0]) if args else ""

    @property
    def message(self) -> str:
        """The error message."""
        return self._message

    @property
    def op(self):
        """The operation that failed, if known (None in eager code, as in TensorFlow)."""
        return self._op

    @property
    def node_def(self):
        """The NodeDef of the failed operation, if known."""
        return self._node_def

    @property
    def error_code(self) -> int:
        """The canonical error code, e.g. `tf.errors.INVALID_ARGUMENT` (3)."""
        return self._code

    @property
    def experimental_payloads(self) -> dict:
        return {}

    def __str__(self) -> str:
        return self._message


class CancelledError(OpError):
    """An operation or step was cancelled."""
    error_code_value = CANCELLED


class UnknownError(OpError):
    """An error of no other kind."""
    error_code_value = UNKNOWN


class InvalidArgumentError(OpError, ValueError):
    """An op received inputs it cannot work with (shape, dtype, axis, index).

    Example:
        >>> import tapeflow as tf
        >>> tf.add(tf.ones([2]), tf.ones([3]))  # raises InvalidArgumentError
    """
    error_code_value = INVALID_ARGUMENT


class DeadlineExceededError(OpError):
    """A deadline expired before the operation could complete."""
    error_code_value = DEADLINE_EXCEEDED


class NotFoundError(OpError, KeyError):
    """A kernel, backend, file or registration that was asked for does not exist."""
    error_code_value = NOT_FOUND


class AlreadyExistsError(OpError, ValueError):
    """A registration would silently replace an existing one."""
    error_code_value = ALREADY_EXISTS


class PermissionDeniedError(OpError):
    """The caller may not run the operation."""
    error_code_value = PERMISSION_DENIED


class ResourceExhaustedError(OpError):
    """Some resource (memory, a quota) is exhausted."""
    error_code_value = RESOURCE_EXHAUSTED


class FailedPreconditionError(OpError):
    """The system is not in a state to run the operation (e.g. an uninitialized value)."""
    error_code_value = FAILED_PRECONDITION


class AbortedError(OpError):
    """The operation was aborted, typically by a concurrent action."""
    error_code_value = ABORTED


class OutOfRangeError(OpError):
    """An operation iterated past the valid range (e.g. the end of a dataset)."""
    error_code_value = OUT_OF_RANGE


class UnimplementedError(OpError, NotImplementedError):
    """The operation exists but is not available for these inputs."""
    error_code_value = UNIMPLEMENTED


class InternalError(OpError):
    """An invariant of the system is broken."""
    error_code_value = INTERNAL


class UnavailableError(OpError):
    """The runtime is currently unavailable."""
    error_code_value = UNAVAILABLE


class DataLossError(OpError, ValueError):
    """Unrecoverable data loss or corruption: a damaged or truncated checkpoint file (a
    ValueError too, as tapeflow's corrupt-file errors always were).

    Example:
        >>> tf.train.Checkpoint(v=v).restore("/tmp/damaged/ckpt-1")  # raises DataLossError
    """
    error_code_value = DATA_LOSS


class UnauthenticatedError(OpError):
    """The request has no valid authentication credentials."""
    error_code_value = UNAUTHENTICATED


_BY_CODE = {cls.error_code_value: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError,
    FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError,
    InternalError, UnavailableError, DataLossError, UnauthenticatedError)}


def exception_type_from_error_code(error_code: int) -> type:
    """The OpError subclass of a canonical code. Example: `(3)` -> InvalidArgumentError."""
    if error_code not in _BY_CODE:
        raise KeyError(f"exception_type_from_error_code: {error_code!r} is not a canonical "
                       "error code (1 to 16)")
    return _BY_CODE[error_code]


def error_code_from_exception_type(cls: type) -> int:
    """The canonical code of an OpError subclass. Example: `(NotFoundError)` -> 5."""
    for base in cls.__mro__:
        if base in _BY_CODE.values():
            return base.error_code_value
    raise KeyError(f"error_code_from_exception_type: {cls.__name__} is not an OpError "
                   "subclass")


class DisposedError(TapeflowError, RuntimeError, ValueError):
    """A tensor was used after `dispose()`/`tidy` released its data (a RuntimeError and,
    like other bad-input errors, a ValueError)."""


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


def in_package(filename: str) -> bool:
    """Whether a code file belongs to the tapeflow package (else it is the user's)."""
    inside = _INSIDE.get(filename)
    if inside is None:  # one path normalisation per file, not per frame and call
        inside = _INSIDE[filename] = os.path.abspath(filename).startswith(_PKG_DIR)
    return inside


def user_site() -> str | None:
    """'file:line' of the innermost frame outside the tapeflow package."""
    f = sys._getframe(1)
    while f is not None and in_package(f.f_code.co_filename):
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
