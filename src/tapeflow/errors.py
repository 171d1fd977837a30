"""`tapeflow.errors`: the exception hierarchy."""
from ._core.errors import (AlreadyExistsError, DisposedError, InvalidArgumentError,  # noqa: F401
                           NotFoundError, OperatorNotAllowedInGraphError, OutOfRangeError,
                           TapeflowError, UnimplementedError)
