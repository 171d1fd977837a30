"""Slices whose bounds are traced scalars (`x[:, :tf.shape(x)[1] // 4]` inside a
function): values as NumPy's, unknown output dims, gradients."""
import numpy as np
import pytest

import tapeflow as tf

CASES = [
    lambda x, n: x[:, :n // 4],
    lambda x, n: x[:, n - 3:],
    lambda x, n: x[:, -n + 1:n - 1:2],
    lambda x, n: x[:, n - 2::-2],
    lambda x, n: x[1, :n * 10],      # past the end: clamped, as Python's slices
    lambda x, n: x[..., :n - n],    # empty
    lambda x, n: x[:, None, n // 2:],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_traced_bounds_match_numpy(case):
    fn = CASES[case]
    x = np.arange(2 * 6 * 3, dtype=np.float64).reshape(2, 6, 3)
    traced = tf.function(lambda t: fn(t, tf.shape(t)[1]))
    want = fn(x, 6)
    got = traced(tf.constant(x))
    np.testing.assert_array_equal(got.numpy(), want)
    cf = traced.get_concrete_function(tf.TensorSpec([None, None, 3], tf.float64))
    assert cf.outputs[0].shape.rank == want.ndim


def test_gradient_of_a_traced_slice_scatters_back():
    x = tf.constant(np.arange(12.0).reshape(2, 6))

    @tf.function
    def f(t):
        return tf.reduce_sum(t[:, tf.shape(t)[1] - 2:] * 3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    want = np.zeros((2, 6))
    want[:, 4:] = 3.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), want)


def test_traced_step_is_refused_with_a_clear_error():
    @tf.function
    def f(t):
        return t[::tf.shape(t)[0]]
    with pytest.raises(TypeError, match="step must be known"):
        f(tf.ones([4]))
