"""tf.errors: TensorFlow's OpError hierarchy and codes; tapeflow's Python bases kept."""
from __future__ import annotations

import pickle

import pytest

import tapeflow as tf

CODES = [("CancelledError", "CANCELLED", 1), ("UnknownError", "UNKNOWN", 2),
         ("InvalidArgumentError", "INVALID_ARGUMENT", 3),
         ("DeadlineExceededError", "DEADLINE_EXCEEDED", 4), ("NotFoundError", "NOT_FOUND", 5),
         ("AlreadyExistsError", "ALREADY_EXISTS", 6),
         ("PermissionDeniedError", "PERMISSION_DENIED", 7),
         ("ResourceExhaustedError", "RESOURCE_EXHAUSTED", 8),
         ("FailedPreconditionError", "FAILED_PRECONDITION", 9), ("AbortedError", "ABORTED", 10),
         ("OutOfRangeError", "OUT_OF_RANGE", 11), ("UnimplementedError", "UNIMPLEMENTED", 12),
         ("InternalError", "INTERNAL", 13), ("UnavailableError", "UNAVAILABLE", 14),
         ("DataLossError", "DATA_LOSS", 15), ("UnauthenticatedError", "UNAUTHENTICATED", 16)]


@pytest.mark.parametrize("name,constant,code", CODES)
def test_each_subclass_has_tensorflows_code_and_constructor(name, constant, code):
    cls = getattr(tf.errors, name)
    assert issubclass(cls, tf.errors.OpError)
    e = cls(None, None, "it broke")  # TensorFlow's (node_def, op, message)
    assert (e.message, str(e), e.op, e.node_def, e.error_code) == (
        "it broke", "it broke", None, None, code)
    assert getattr(tf.errors, constant) == code
    assert tf.errors.exception_type_from_error_code(code) is cls
    assert tf.errors.error_code_from_exception_type(cls) == code
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is cls and e2.message == "it broke"
    assert tf.errors.OK == 0


def test_existing_errors_keep_their_python_bases_and_one_argument_form():
    assert issubclass(tf.errors.InvalidArgumentError, ValueError)
    assert issubclass(tf.errors.NotFoundError, KeyError)
    assert issubclass(tf.errors.AlreadyExistsError, ValueError)
    assert issubclass(tf.errors.UnimplementedError, NotImplementedError)
    assert issubclass(tf.errors.DataLossError, ValueError)
    assert issubclass(tf.errors.OpError, tf.errors.TapeflowError)
    e = tf.errors.NotFoundError("no such thing")
    assert str(e) == "no such thing" and e.message == "no such thing"  # not KeyError quoted


def test_an_op_error_is_caught_as_op_error_with_its_code():
    with pytest.raises(tf.errors.OpError) as info:
        tf.add(tf.ones([2]), tf.ones([3]))
    assert info.value.error_code == tf.errors.INVALID_ARGUMENT
    assert "Add" in info.value.message and "[2]" in info.value.message
    with pytest.raises(KeyError):
        tf.errors.exception_type_from_error_code(99)
    # TensorFlow's base class takes the code as a fourth argument
    e = tf.errors.OpError(None, None, "lost", tf.errors.DATA_LOSS)
    assert e.error_code == 15 and e.message == "lost"
