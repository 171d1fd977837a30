"""Creation ops follow TensorFlow 2's conventions (dtype inference, shape handling) and
reject bad arguments with InvalidArgumentError without leaking tensors."""
import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError


# --------------------------------------------------------------------------- constant


@pytest.mark.parametrize("value,dtype", [
    (3, "int32"), (3.0, "float32"), (True, "bool"), ([1, 2.5], "float32"), (2 ** 40, "int64"),
    (1 + 2j, "complex128"), (np.arange(3, dtype=np.int64), "int64"),
    (np.float64(1.5), "float64"), (np.ones(2, np.float16), "float16"),
])
def test_constant_infers_dtype_like_tensorflow(value, dtype):
    assert tf.constant(value).dtype.name == dtype


def test_constant_dtype_argument_converts_python_and_numpy_values():
    assert tf.constant([1, 2], dtype=tf.float64).numpy().tolist() == [1.0, 2.0]
    assert tf.constant(np.array([1.5]), dtype="float32").dtype == tf.float32
    assert tf.constant(2.0, dtype=tf.int32).numpy() == 2


def test_constant_shape_broadcasts_scalars_and_reshapes_lists():
    np.testing.assert_array_equal(tf.constant(5, shape=[2, 2]).numpy(), [[5, 5], [5, 5]])
    np.testing.assert_array_equal(tf.constant([7.0], shape=[3]).numpy(), [7.0, 7.0, 7.0])
    np.testing.assert_array_equal(tf.constant([1, 2, 3, 4], shape=(2, 2)).numpy(),
                                  [[1, 2], [3, 4]])
    assert tf.constant(0.0, shape=[0, 3]).shape == (0, 3)


def test_constant_of_a_list_of_tensors_stacks_them():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    c = tf.constant([a, b])
    assert c.shape == (2, 2) and c.dtype == tf.float32
    np.testing.assert_array_equal(c.numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(tf.constant([[a], [b]]).numpy(), [[[1, 2]], [[3, 4]]])
    np.testing.assert_array_equal(tf.convert_to_tensor([tf.constant(1), 2]).numpy(), [1, 2])
    mixed = tf.constant([tf.constant(1.0, tf.float64), 2.0])
    assert mixed.dtype == tf.float64 and mixed.numpy().tolist() == [1.0, 2.0]


def test_convert_to_tensor_returns_tensors_unchanged_and_rejects_other_dtypes():
    t = tf.constant([1.0])
    assert tf.convert_to_tensor(t) is t
    with pytest.raises(InvalidArgumentError):
        tf.convert_to_tensor(t, dtype=tf.float64)


# --------------------------------------------------------------------------- fills


def test_zeros_ones_fill_shapes_and_dtypes():
    assert tf.zeros(3).shape == (3,)
    assert tf.zeros([]).shape == () and tf.zeros([]).dtype == tf.float32
    assert tf.ones(tf.constant([2, 1]), dtype="int64").dtype == tf.int64
    assert tf.ones([2, 1], tf.bool).numpy().all()
    f = tf.fill(tf.constant([2, 3]), 7)
    assert f.dtype == tf.int32 and f.numpy().tolist() == [[7] * 3] * 2
    assert tf.fill([2], 0.5).dtype == tf.float32
    z = tf.zeros_like(tf.ones([2, 2], tf.float64))
    assert z.dtype == tf.float64 and not z.numpy().any()
    assert tf.ones_like([1.0, 2.0], dtype=tf.int32).numpy().tolist() == [1, 1]


# --------------------------------------------------------------------------- range


@pytest.mark.parametrize("args,kwargs,expected,dtype", [
    ((5,), {}, [0, 1, 2, 3, 4], "int32"),
    ((2, 5), {}, [2, 3, 4], "int32"),
    ((5.0,), {}, [0, 1, 2, 3, 4], "float32"),
    ((0, 2, 0.5), {}, [0, 0.5, 1, 1.5], "float32"),
    ((10, 1, -3), {}, [10, 7, 4], "int32"),
    ((3,), {"dtype": tf.float64}, [0, 1, 2], "float64"),
    ((1, 4), {"dtype": "int64"}, [1, 2, 3], "int64"),
    ((np.int64(3),), {}, [0, 1, 2], "int64"),
    ((2.0, 2.0), {}, [], "float32"),
])
def test_range(args, kwargs, expected, dtype):
    r = tf.range(*args, **kwargs)
    assert r.dtype.name == dtype
    np.testing.assert_allclose(r.numpy(), expected)


def test_range_tensor_arguments_keep_their_dtype():
    r = tf.range(tf.constant(1, tf.int64), tf.constant(4, tf.int64))
    assert r.dtype == tf.int64 and r.numpy().tolist() == [1, 2, 3]
    assert tf.range(tf.constant(3), 5.0).dtype == tf.float32  # the widest argument wins


def test_range_float_length():
    assert tf.range(0, 1, 0.1).shape == (10,)
    assert tf.range(0.0, 1.0, 0.3).shape == (4,)


# --------------------------------------------------------------------------- linspace / eye


def test_linspace_values_and_gradient():
    np.testing.assert_allclose(tf.linspace(0.0, 1.0, 5).numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    assert tf.linspace(0, 10, 3).dtype == tf.float32
    assert tf.linspace(0.0, 1.0, 0).shape == (0,)
    a, b = tf.constant(1.0, tf.float64), tf.constant(3.0, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.linspace(a, b, 5)
    ga, gb = tape.gradient(y, [a, b])
    # d(sum y)/d start = sum(1 - i/4) = 2.5 and likewise for stop
    np.testing.assert_allclose([ga.numpy(), gb.numpy()], [2.5, 2.5])


def test_linspace_batched_matches_numpy():
    start, stop = np.array([0.0, 1.0]), np.array([[2.0], [5.0], [-1.0]])
    got = tf.linspace(start, stop, 4, axis=1).numpy()
    np.testing.assert_allclose(got, np.linspace(start, stop, 4, axis=1))


def test_eye():
    np.testing.assert_array_equal(tf.eye(2).numpy(), np.eye(2))
    e = tf.eye(3, 2, batch_shape=[2, 1], dtype=tf.float64)
    assert e.shape == (2, 1, 3, 2) and e.dtype == tf.float64
    np.testing.assert_array_equal(e.numpy()[1, 0], np.eye(3, 2))


# --------------------------------------------------------------------------- one_hot


def test_one_hot_dtype_inference():
    assert tf.one_hot([0], 2).dtype == tf.float32
    assert tf.one_hot([0], 2, on_value=3).dtype == tf.int32
    assert tf.one_hot([0], 2, off_value=tf.constant(0.0, tf.float64)).dtype == tf.float64
    assert tf.one_hot([0], 2, on_value=True, off_value=False).dtype == tf.bool
    assert tf.one_hot([0], 2, dtype=tf.int64).dtype == tf.int64


def test_one_hot_values():
    np.testing.assert_array_equal(tf.one_hot([1, -1, 3], 3).numpy(),
                                  [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(tf.one_hot([0, 2], 3, axis=0).numpy(),
                                  [[1, 0], [0, 0], [0, 1]])
    np.testing.assert_array_equal(tf.one_hot(1, 3, on_value=5.0, off_value=-1.0).numpy(),
                                  [-1.0, 5.0, -1.0])


# --------------------------------------------------------------------------- errors

ERRORS = {
    "constant/shape": (lambda: tf.constant([1, 2, 3], shape=[2, 2]), "constant"),
    "constant/lossy": (lambda: tf.constant(1.5, dtype=tf.int32), "convert_to_tensor"),
    "zeros/negative": (lambda: tf.zeros([2, -1]), "zeros"),
    "fill/value_rank": (lambda: tf.fill([2], [1.0, 2.0]), "Fill"),
    "range/delta": (lambda: tf.range(0, 5, 0), "Range"),
    "range/order": (lambda: tf.range(5, 1), "Range"),
    "range/order_negative": (lambda: tf.range(1, 5, -1), "Range"),
    "range/bool": (lambda: tf.range(True), "Range"),
    "range/lossy_dtype": (lambda: tf.range(0.5, 3, dtype=tf.int32), "Range"),
    "range/non_scalar": (lambda: tf.range(tf.constant([1, 2])), "Range"),
    "linspace/int_tensor": (lambda: tf.linspace(tf.constant(0), tf.constant(4), 3), "LinSpace"),
    "linspace/num": (lambda: tf.linspace(0.0, 1.0, -1), "LinSpace"),
    "linspace/dtypes": (lambda: tf.linspace(tf.constant(0.0), tf.constant(1.0, tf.float64), 3),
                        "LinSpace"),
    "linspace/shapes": (lambda: tf.linspace(tf.zeros([2]), tf.zeros([3]), 3), "LinSpace"),
    "eye/negative": (lambda: tf.eye(-1), "eye"),
    "one_hot/float_indices": (lambda: tf.one_hot([0.5], 3), "OneHot"),
    "one_hot/axis": (lambda: tf.one_hot([0, 1], 3, axis=-2), "OneHot"),
    "one_hot/lossy_on_value": (lambda: tf.one_hot([0], 3, on_value=1.5, dtype=tf.int32),
                               "OneHot"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises(name):
    call, op = ERRORS[name]
    gc.collect()
    before = tf.memory()
    with pytest.raises(InvalidArgumentError, match=op):
        call()
    gc.collect()
    after = tf.memory()
    assert (after["num_tensors"], after["num_bytes"]) == \
        (before["num_tensors"], before["num_bytes"]), f"{name}: leaked tensors"
