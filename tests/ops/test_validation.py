"""The shared argument validation of ops/_args.py (issue #8): duplicate axes, non-integers
where integers are required, dtype arguments, messages that start with the op's name,
einsum's one size per subscript letter. The property test (tests/test_property_errors.py)
sweeps every op; these are the cases the issue names, with their exact contract."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops._args import ArgumentTypeError
from tests.engine_state import assert_engine_state_intact, frozen_heap


@pytest.fixture(scope="module", autouse=True)
def _cheap_collections():
    with frozen_heap():  # every check collects garbage twice
        yield


X = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
B = tf.constant([[True, False, True], [False, True, True]])
S = tf.constant(1.0)


def raises(call, error, *words):
    """`call()` raises `error`, its message holds `words`; engine state intact. Returns
    the message."""
    with assert_engine_state_intact():
        with pytest.raises(error) as info:
            call()
        message = str(info.value)
        del info
    for w in words:
        assert w in message, f"{w!r} not in {message!r}"
    return message


# --------------------------------------------------------------------------- duplicate axes

DUPLICATE_AXES = [
    ("reduce_sum", lambda a: tf.reduce_sum(X, a)), ("reduce_mean", lambda a: tf.reduce_mean(X, a)),
    ("reduce_max", lambda a: tf.reduce_max(X, a)), ("reduce_min", lambda a: tf.reduce_min(X, a)),
    ("reduce_prod", lambda a: tf.reduce_prod(X, a)),
    ("reduce_logsumexp", lambda a: tf.reduce_logsumexp(X, a)),
    ("reduce_std", lambda a: tf.math.reduce_std(X, a)),
    ("reduce_variance", lambda a: tf.math.reduce_variance(X, a)),
    ("reduce_any", lambda a: tf.reduce_any(B, a)), ("reduce_all", lambda a: tf.reduce_all(B, a)),
    ("moments", lambda a: tf.nn.moments(X, a)),
    ("clip_by_norm", lambda a: tf.clip_by_norm(X, 1.0, a)),
    ("l2_normalize", lambda a: tf.math.l2_normalize(X, a)),
    ("norm", lambda a: tf.norm(X, axis=a)),
]


@pytest.mark.parametrize("op,call", DUPLICATE_AXES, ids=[d[0] for d in DUPLICATE_AXES])
@pytest.mark.parametrize("axes", [[0, 0], [1, -1], (0, -2), np.array([1, 1]),
                                  tf.constant([0, 0])], ids=str)
def test_an_axis_named_twice_is_rejected_as_tensorflow_does(op, call, axes):
    message = raises(lambda: call(axes), InvalidArgumentError, "axis")
    assert message.startswith(op + ":"), message
    assert "more than once" in message or "repeats" in message, message


def test_squeeze_takes_a_repeated_axis_once_as_tensorflow_does():
    assert tf.squeeze(tf.ones([1, 3, 1]), [0, 0, -1]).shape == (3,)


def test_distinct_axes_in_any_order_and_form_still_reduce():
    for axes in ([1, 0], (-1, 0), np.array([0, 1]), tf.constant([1, 0]), [np.int64(0), 1]):
        assert float(tf.reduce_sum(X, axes)) == 21.0


# --------------------------------------------------------------------------- integer args

NOT_INTEGERS = {
    "ones": (lambda: tf.ones([2.5]), "ones: shape"),
    "zeros_str": (lambda: tf.zeros("3"), "zeros: shape"),
    "zeros_bool": (lambda: tf.zeros([True, 2]), "zeros: shape"),
    "eye": (lambda: tf.eye(2.5), "eye: num_rows"),
    "eye_columns": (lambda: tf.eye(2, 2.5), "eye: num_columns"),
    "one_hot": (lambda: tf.one_hot([0, 1], depth=2.5), "OneHot: depth"),
    "linspace": (lambda: tf.linspace(0.0, 1.0, num=2.5), "LinSpace: num"),
    "reshape": (lambda: tf.reshape(S, [1.5]), "Reshape: shape"),
    "reshape_str": (lambda: tf.reshape(X, "abc"), "Reshape: shape"),
    "reshape_none": (lambda: tf.reshape(X, None), "Reshape: shape"),
    "squeeze": (lambda: tf.squeeze(tf.ones([1, 3]), axis=1.5), "Squeeze: axis"),
    "reduce_sum": (lambda: tf.reduce_sum(X, axis=1.5), "reduce_sum: axis"),
    "reduce_sum_float_tensor": (lambda: tf.reduce_sum(X, tf.constant(1.0)), "reduce_sum: axis"),
    "argmax_two_axes": (lambda: tf.argmax(X, tf.constant([0, 1])), "argmax: axis"),
    "top_k": (lambda: tf.math.top_k(X, k=tf.constant(2.0)), "top_k: k"),
    "cumsum": (lambda: tf.math.cumsum(X, axis=True), "cumsum: axis"),
    "tile": (lambda: tf.tile(X, [1.0, 2.0]), "Tile: multiples"),
    "gather_batch_dims": (lambda: tf.gather(X, [0], batch_dims=0.5), "GatherV2: batch_dims"),
    "strided_slice_mask": (lambda: tf.strided_slice(X, [0], [1], begin_mask=1.5),
                           "StridedSlice: begin_mask"),
    "random_normal": (lambda: tf.random.normal([2.0, 3]), "random.normal: shape"),
    "random_uniform_int_bounds": (lambda: tf.random.uniform([2], 0.5, 5, dtype=tf.int32),
                                  "random.uniform: minval"),
    "conv2d_strides": (lambda: tf.nn.conv2d(tf.ones([1, 4, 4, 1]), tf.ones([2, 2, 1, 1]),
                                            1.5, "SAME"), "conv2d: strides"),
    "max_pool_no_ksize": (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 1]), None, 1, "SAME"),
                          "max_pool2d: ksize"),
    "leaky_relu_alpha": (lambda: tf.nn.leaky_relu(X, alpha="0.1"), "leaky_relu: alpha"),
}


@pytest.mark.parametrize("name", sorted(NOT_INTEGERS))
def test_floats_bools_and_strings_are_not_truncated_or_parsed_into_ints(name):
    call, start = NOT_INTEGERS[name]
    # a TypeError as in TensorFlow, and an InvalidArgumentError like all bad input (API §2)
    message = raises(call, ArgumentTypeError)
    assert message.startswith(start), message
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ArgumentTypeError, InvalidArgumentError)


def test_integer_valued_numpy_ints_and_scalar_int_tensors_are_accepted():
    assert tf.ones([np.int64(2), np.int32(3)]).shape == (2, 3)
    assert tf.zeros(tf.constant([2, 3])).shape == (2, 3)
    assert tf.zeros(np.array([2, 3])).shape == (2, 3)
    assert tf.ones(tf.constant(2)).shape == (2,)
    assert tf.eye(tf.constant(2), np.int64(3)).shape == (2, 3)
    assert tf.one_hot([0, 1], depth=np.int32(3)).shape == (2, 3)
    assert tf.linspace(0.0, 1.0, num=tf.constant(3)).shape == (3,)
    assert tf.reshape(X, tf.constant([3, 2])).shape == (3, 2)
    assert tf.reshape(X, [np.int64(-1)]).shape == (6,)
    assert tf.squeeze(tf.ones([1, 3]), axis=tf.constant(0)).shape == (3,)
    assert tf.reduce_sum(X, axis=np.int64(1)).shape == (2,)
    assert tf.argmax(X, tf.constant(1)).shape == (2,)
    assert tf.math.top_k(X, k=tf.Variable(2)).values.shape == (2, 2)


NEGATIVE_SIZES = {
    "ones": lambda: tf.ones([2, -1]), "eye": lambda: tf.eye(-2),
    "eye_batch": lambda: tf.eye(2, batch_shape=[-1]), "one_hot": lambda: tf.one_hot([0], -3),
    "fill": lambda: tf.fill([-1], 1.0), "linspace": lambda: tf.linspace(0.0, 1.0, -1),
    "broadcast_to": lambda: tf.broadcast_to(1.0, [-2]),
    "reshape": lambda: tf.reshape(X, [-2, -3]), "top_k": lambda: tf.math.top_k(X, -1),
    "sequence_mask": lambda: tf.sequence_mask([1], -1), "scatter_nd": lambda: tf.scatter_nd(
        [[0]], [1.0], [-4]), "random": lambda: tf.random.uniform([-1]),
}


@pytest.mark.parametrize("name", sorted(NEGATIVE_SIZES))
def test_negative_sizes_are_rejected(name):
    message = raises(NEGATIVE_SIZES[name], InvalidArgumentError)
    assert "-" in message


# --------------------------------------------------------------------------- dtype arguments


def test_cast_to_none_is_a_type_error_as_in_tensorflow():
    raises(lambda: tf.cast(X, None), TypeError, "cast: dtype", "None")


@pytest.mark.parametrize("call,start", [
    (lambda: tf.cast(X, "int33"), "cast: dtype"),
    (lambda: tf.cast(X, 99), "cast: dtype"),  # not a DataType enum value (5 is int16)
    (lambda: tf.zeros([2], None), "zeros: dtype"),
    (lambda: tf.ones([2], "foo"), "ones: dtype"),
    (lambda: tf.ones_like(X, "foo"), "ones_like: dtype"),
    (lambda: tf.eye(2, dtype=None), "eye: dtype"),
    (lambda: tf.range(3, dtype="float33"), "Range: dtype"),
    (lambda: tf.shape(X, out_type=None), "Shape: out_type"),
    (lambda: tf.argmax(X, output_type="int65"), "argmax: output_type"),
    (lambda: tf.random.normal([2], dtype=[tf.float32]), "random.normal: dtype"),
])
def test_dtype_arguments_must_be_dtypes(call, start):
    message = raises(call, TypeError)
    assert message.startswith(start), message


def test_dtype_arguments_still_take_names_numpy_dtypes_and_none_where_optional():
    assert tf.cast(X, "float64").dtype == tf.float64
    assert tf.cast(X, np.int32).dtype == tf.int32
    assert tf.zeros([1], np.dtype("float16")).dtype == tf.float16
    assert tf.ones_like(X, None).dtype == tf.float32
    assert tf.constant(1, dtype=None).dtype == tf.int32


# --------------------------------------------------------------------------- op names


# (object(): what no op takes as a tensor; "abc" is a string tensor, issue #31)
@pytest.mark.parametrize("call,start", [
    (lambda: tf.reshape(object(), [1]), "Reshape: argument 'tensor'"),
    (lambda: tf.identity(object()), "identity: argument 'input'"),
    (lambda: tf.identity_n([object()]), "identity_n: argument 'input'"),
    (lambda: tf.identity_n(None), "identity_n: input"),
    (lambda: tf.broadcast_to(object(), [2]), "BroadcastTo: argument 'input'"),
    (lambda: tf.fill([2], object()), "fill: argument 'value'"),
    (lambda: tf.zeros_like(object()), "zeros_like: argument 'input'"),
    (lambda: tf.ones_like("abc"), "ones_like: argument 'input'"),
    (lambda: tf.constant(object()), "constant: argument 'value'"),
    (lambda: tf.squeeze(S, 0), "Squeeze: axis=0"),
    (lambda: tf.concat(None, 0), "Concat: values"),
    (lambda: tf.tensordot(X, X, "x"), "tensordot: axes"),
    (lambda: tf.tensordot(X, X, [0.5, 1]), "tensordot: axes[0]"),
    (lambda: tf.tensordot(X, X, [[0], [5]]), "tensordot: axes[1]=5"),
    (lambda: tf.boolean_mask(X, [True, False], axis=1.5), "boolean_mask: axis"),
    (lambda: tf.linalg.trace(tf.ones([3])), "trace: MatrixDiagPart"),
    (lambda: tf.linalg.adjoint(tf.ones([3])), "adjoint: matrix"),
    (lambda: tf.linalg.logdet(tf.ones([3, 4])), "logdet: Cholesky"),
    (lambda: tf.linalg.cholesky_solve(tf.eye(3), tf.ones([4, 2])),
     "cholesky_solve: MatrixTriangularSolve"),
    (lambda: tf.math.reduce_std(X, 2), "reduce_std: axis=2"),
    (lambda: tf.nn.silu(X, "abc"), "silu: argument 'beta'"),
    (lambda: tf.nn.batch_normalization(X, 0.0, 1.0, None, None, "eps"), "batch_normalization"),
    (lambda: tf.nn.embedding_lookup(X, [5]), "embedding_lookup: GatherV2"),
    (lambda: tf.nn.softmax(X, tf.constant([0, 1])), "softmax: axis"),
    (lambda: tf.random.normal([2, 3], mean=tf.ones([3, 2])), "random.normal"),
    (lambda: tf.clip_by_global_norm([X], tf.ones([3, 2])), "clip_by_global_norm: clip_norm"),
    (lambda: tf.linalg.diag(tf.ones([3]), align="UP"), "MatrixDiag: align"),
    (lambda: tf.meshgrid([1, 2], [1.0, 2.0]), "Meshgrid: args"),
    (lambda: tf.math.conj(B), "conj"),
])
def test_errors_start_with_the_public_op(call, start):
    message = raises(call, (InvalidArgumentError, TypeError))
    assert message.startswith(start), message


def test_a_bad_distribution_parameter_draws_no_seed():
    tf.random.set_seed(5)
    with pytest.raises(InvalidArgumentError):
        tf.random.normal([2], mean="abc")
    a = tf.random.normal([2])
    tf.random.set_seed(5)
    np.testing.assert_array_equal(a.numpy(), tf.random.normal([2]).numpy())


# --------------------------------------------------------------------------- einsum


def test_einsum_letters_have_one_size_across_inputs():
    message = raises(lambda: tf.einsum("i,i->", tf.ones([1]), tf.ones([3])),
                     InvalidArgumentError, "'i'", "1", "3")
    assert message.startswith("Einsum:"), message
    raises(lambda: tf.einsum("ij,ij->ij", tf.ones([1, 3]), tf.ones([2, 3])),
           InvalidArgumentError, "'i'")
    raises(lambda: tf.einsum("ii->i", tf.ones([1, 3])), InvalidArgumentError, "'i'")


def test_einsum_ellipsis_dimensions_still_broadcast_with_gradients():
    a, b = tf.ones([1, 3]), tf.constant(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.einsum("...i,...i->...", a, b)
    ga, gb = tape.gradient(y, [a, b])
    assert y.shape == (4,) and ga.shape == (1, 3) and gb.shape == (4, 3)
    np.testing.assert_allclose(ga.numpy(), b.numpy().sum(0, keepdims=True))


# --------------------------------------------------------------------------- the state check


def test_the_engine_state_check_sees_leaks_and_stray_tapes():
    kept = []
    with pytest.raises(AssertionError, match="memory"):
        with assert_engine_state_intact():
            kept.append(tf.ones([3]))
    tape = tf.GradientTape()
    with pytest.raises(AssertionError, match="tapes"):
        with assert_engine_state_intact():
            tape.__enter__()
    tape.__exit__(None, None, None)
    with pytest.raises(AssertionError, match="scopes"):
        with assert_engine_state_intact():
            scope = tf.tidy()
            scope.__enter__()
    scope.__exit__(None, None, None)
