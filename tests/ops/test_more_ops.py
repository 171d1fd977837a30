"""Behaviour the op table does not cover for the TF2 names added together: errors, Python
structures (namedtuples, branch selection), defaults, and traced use of the branch ops."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError


# --------------------------------------------------------------------------- tf.math


def test_divide_no_nan_zero_divisor_hides_inf_and_nan():
    out = tf.math.divide_no_nan([np.inf, np.nan, 1.0], [0.0, 0.0, 4.0]).numpy()
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.25])


def test_divide_no_nan_gradient_is_zero_where_divisor_is_zero():
    x, y = tf.constant([1.0, 2.0]), tf.constant([0.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.reduce_sum(tf.math.divide_no_nan(x, y))
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx.numpy(), [0.0, 0.25])
    np.testing.assert_allclose(gy.numpy(), [0.0, -2.0 / 16.0])


def test_xlogy_is_zero_at_x_zero_even_for_y_zero():
    assert tf.math.xlogy(0.0, 0.0).numpy() == 0.0
    x, y = tf.constant(0.0), tf.constant(0.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.math.xlogy(x, y)
    assert [float(g) for g in tape.gradient(z, [x, y])] == [0.0, 0.0]


def test_divide_no_nan_rejects_ints():
    with pytest.raises(InvalidArgumentError, match="DivNoNan"):
        tf.math.divide_no_nan([1, 2], [0, 1])


def test_count_nonzero_bool_and_default_dtype():
    out = tf.math.count_nonzero([[True, False], [True, True]], axis=0)
    assert out.dtype == tf.int64 and out.numpy().tolist() == [2, 1]


def test_reduce_euclidean_norm_int_truncates():
    out = tf.math.reduce_euclidean_norm(tf.constant([1, 1], tf.int32))
    assert out.dtype == tf.int32 and int(out) == 1


def test_segment_sum_checks_ids():
    with pytest.raises(InvalidArgumentError, match="not increasing"):
        tf.math.segment_sum([1.0, 2.0], [1, 0])
    with pytest.raises(InvalidArgumentError, match="negative"):
        tf.math.segment_sum([1.0, 2.0], [-1, 0])
    with pytest.raises(InvalidArgumentError, match="1-D"):
        tf.math.segment_sum([1.0, 2.0], [0, 0, 1])


def test_segment_sum_traced_unknown_length():
    f = tf.function(tf.math.segment_sum,
                    input_signature=[tf.TensorSpec([None], tf.float32),
                                     tf.TensorSpec([None], tf.int32)])
    out = f(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 2, 2]))
    np.testing.assert_allclose(out.numpy(), [1.0, 0.0, 5.0])


def test_bincount_options():
    assert tf.math.bincount([]).numpy().tolist() == []
    assert tf.math.bincount([1, 1], minlength=4).numpy().tolist() == [0, 2, 0, 0]
    assert tf.math.bincount([1, 5, 1], maxlength=3).numpy().tolist() == [0, 2, 0]
    assert tf.math.bincount([2, 2, 0], binary_output=True).numpy().tolist() == [1, 0, 1]
    rows = tf.math.bincount([[1, 1], [0, 2]], axis=-1)
    assert rows.numpy().tolist() == [[0, 2, 0], [1, 0, 1]]
    assert tf.math.bincount([0], dtype=tf.float32).dtype == tf.float32
    with pytest.raises(InvalidArgumentError, match="non-negative"):
        tf.math.bincount([1, -1])


# --------------------------------------------------------------------------- array ops


def test_unique_structure_and_int64():
    y, idx = tf.unique(tf.constant([5, 3, 5, 1]), out_idx=tf.int64)
    assert y.numpy().tolist() == [5, 3, 1] and idx.numpy().tolist() == [0, 1, 0, 2]
    assert idx.dtype == tf.int64
    out = tf.unique([2.0])
    assert out.y.numpy().tolist() == [2.0] and out.idx.numpy().tolist() == [0]
    empty = tf.unique(tf.zeros([0]))
    assert empty.y.shape == (0,) and empty.idx.shape == (0,)
    with pytest.raises(InvalidArgumentError, match="1-D"):
        tf.unique([[1, 2]])


def test_roll_and_repeat_errors():
    with pytest.raises(InvalidArgumentError, match="same length"):
        tf.roll([1, 2], [1, 2], 0)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        tf.roll([1, 2], 1, 1)
    with pytest.raises(InvalidArgumentError, match="repeats"):
        tf.repeat([1, 2], [1, 2, 3], axis=0)
    assert tf.repeat(7, 3).numpy().tolist() == [7, 7, 7]


def test_searchsorted_errors():
    with pytest.raises(InvalidArgumentError, match="leading"):
        tf.searchsorted([[1, 2], [3, 4]], [[1], [2], [3]])
    with pytest.raises(InvalidArgumentError, match="side"):
        tf.searchsorted([1, 2], [1], side="middle")


def test_ensure_shape():
    x = tf.zeros([2, 3])
    assert tf.ensure_shape(x, None) .shape == (2, 3)
    with pytest.raises(InvalidArgumentError, match="EnsureShape"):
        tf.ensure_shape(x, [2])
    f = tf.function(lambda t: tf.ensure_shape(t, [None, 3]),
                    input_signature=[tf.TensorSpec([None, None])])
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 3]


def test_get_static_value():
    np.testing.assert_array_equal(tf.get_static_value(tf.constant([1, 2])), [1, 2])
    assert tf.get_static_value(3) == 3
    assert tf.get_static_value(tf.Variable(1.0)) is None
    seen = []
    tf.function(lambda t: seen.append(tf.get_static_value(t)) or t)(tf.constant(1.0))
    assert seen == [None]


def test_tensor_scatter_nd_add_errors():
    with pytest.raises(InvalidArgumentError, match="TensorScatterAdd"):
        tf.tensor_scatter_nd_add([1.0, 2.0], [[0]], tf.constant([1], tf.int32))


# --------------------------------------------------------------------------- linalg / nn


def test_cross_requires_three():
    with pytest.raises(InvalidArgumentError, match="Cross"):
        tf.linalg.cross([1.0, 2.0], [3.0, 4.0])


def test_pinv_rank_deficient_matches_numpy():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(tf.linalg.pinv(a).numpy(), np.linalg.pinv(a), atol=1e-12)


def test_global_norm_needs_a_sequence():
    with pytest.raises(TypeError):
        tf.linalg.global_norm(tf.constant([1.0]))


def test_pool_rank_errors():
    # rank 5 is 3-D pooling, as TensorFlow's max_pool (tests/ops/test_extras.py checks it)
    assert tf.nn.max_pool(tf.zeros([1, 2, 2, 2, 1]), 2, 2, "VALID").shape == (1, 1, 1, 1, 1)
    with pytest.raises(InvalidArgumentError, match="rank 3"):
        tf.nn.max_pool(tf.zeros([1, 2, 2, 2, 2, 1]), 2, 2, "VALID")
    with pytest.raises(InvalidArgumentError, match="rank 3"):
        tf.nn.avg_pool(tf.zeros([2, 2]), 2, 2, "VALID")


def test_pool_1d_same_padding_matches_2d():
    x = tf.constant(np.random.default_rng(0).uniform(size=(2, 5, 3)))
    one = tf.nn.avg_pool(x, 2, 2, "SAME")
    two = tf.nn.avg_pool2d(x[:, None], [1, 2], [1, 2], "SAME")[:, 0]
    np.testing.assert_allclose(one.numpy(), two.numpy())


# --------------------------------------------------------------------------- branches


def test_case_eager_runs_only_the_chosen_fn():
    ran = []

    def fn(v):
        return lambda: ran.append(v) or v
    assert tf.case([(False, fn(1)), (tf.constant(True), fn(2)), (True, fn(3))]) == 2
    assert ran == [2]
    assert tf.case({tf.constant(False): fn(4)}, default=fn(5)) == 5


def test_case_errors():
    with pytest.raises(InvalidArgumentError, match="none of the conditions"):
        tf.case([(False, lambda: 1)])
    with pytest.raises(InvalidArgumentError, match="exclusive"):
        tf.case([(True, lambda: 1), (True, lambda: 2)], exclusive=True)
    with pytest.raises(TypeError, match="callable"):
        tf.case([(True, 3)])
    with pytest.raises(TypeError, match="scalar bool"):
        tf.case([(tf.constant([True, False]), lambda: 1)])


def test_case_and_switch_case_traced_with_gradients():
    @tf.function
    def f(i, v):
        a = tf.switch_case(i, [lambda: v * 1.0, lambda: v * v, lambda: v * 3.0])
        b = tf.case([(v > 0, lambda: v), (v < -5.0, lambda: -v)], default=lambda: v * 10.0)
        return a, b

    expect = {0: (2.0, 2.0), 1: (4.0, 2.0), 2: (6.0, 2.0), 7: (6.0, 2.0)}
    for i, (a, b) in expect.items():
        got = f(tf.constant(i), tf.constant(2.0))
        assert (float(got[0]), float(got[1])) == (a, b)
    assert float(f(tf.constant(0), tf.constant(-1.0))[1]) == -10.0
    v = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = f(tf.constant(1), v)[0]
    assert float(tape.gradient(y, v)) == 6.0


def test_switch_case_forms_and_errors():
    assert tf.switch_case(1, {0: lambda: "a", 1: lambda: "b"}) == "b"
    assert tf.switch_case(5, [(0, lambda: "a"), (2, lambda: "c")]) == "c"
    assert tf.switch_case(-1, [lambda: "a"], default=lambda: "d") == "d"
    with pytest.raises(TypeError, match="scalar int"):
        tf.switch_case(tf.constant(1.0), [lambda: 1])
    with pytest.raises(ValueError, match="empty"):
        tf.switch_case(0, [])


def test_control_dependencies():
    v = tf.Variable(1.0)
    with tf.control_dependencies([v.assign(2.0)]):
        y = v + 1.0
    assert float(y) == 3.0
    with tf.control_dependencies(None):
        pass
    with pytest.raises(TypeError):
        with tf.control_dependencies([3]):
            pass

    @tf.function
    def f(x):
        with tf.control_dependencies([tf.debugging.assert_positive(x)] if hasattr(
                tf.debugging, "assert_positive") else [x]):
            return x * 2.0
    assert float(f(tf.constant(2.0))) == 4.0
