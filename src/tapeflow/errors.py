"""`tapeflow.errors`: TensorFlow's exception hierarchy (`OpError` and its subclasses, the
canonical error codes) and tapeflow's own errors. Where a tapeflow error was already a
Python built-in error (InvalidArgumentError a ValueError, NotFoundError a KeyError), it
still is, so existing `except ValueError` code keeps working."""
from ._core.errors import (  # noqa: F401
    ABORTED, ALREADY_EXISTS, CANCELLED, DATA_LOSS, DEADLINE_EXCEEDED, FAILED_PRECONDITION,
    INTERNAL, INVALID_ARGUMENT, NOT_FOUND, OK, OUT_OF_RANGE, PERMISSION_DENIED,
    RESOURCE_EXHAUSTED, UNAUTHENTICATED, UNAVAILABLE, UNIMPLEMENTED, UNKNOWN, AbortedError,
    AlreadyExistsError, CancelledError, DataLossError, DeadlineExceededError, DisposedError,
    FailedPreconditionError, InternalError, InvalidArgumentError, NotFoundError, OpError,
    OperatorNotAllowedInGraphError, OutOfRangeError, PermissionDeniedError,
    ResourceExhaustedError, TapeflowError, UnauthenticatedError, UnavailableError,
    UnimplementedError, UnknownError, error_code_from_exception_type,
    exception_type_from_error_code)
