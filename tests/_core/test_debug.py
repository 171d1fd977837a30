"""Debug aids (API §5.5, §8.4): NaN/Inf provenance in forward and backward passes."""
import inspect

import numpy as np
import pytest

import tapeflow as tf


@pytest.fixture
def debug():
    tf.config.set_debug(True)
    yield
    tf.config.set_debug(False)


def test_forward_nan_names_op_and_line(debug):
    x = tf.constant([1.0, -1.0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"NaN in output 0 of Log \(forward pass\).*test_debug\.py:\d+"):
        tf.math.log(x)


def test_backward_inf_names_forward_op_and_its_line(debug):
    x = tf.constant([0.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        line = inspect.currentframe().f_lineno + 1
        y = tf.reduce_sum(tf.sqrt(x))  # d sqrt / dx at 0 is inf
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tape.gradient(y, x)
    msg = str(e.value)
    assert "Sqrt" in msg and "backward" in msg and "Inf" in msg
    assert f"test_debug.py:{line}" in msg  # the line of the forward tf.sqrt call


def test_debug_off_lets_nan_through():
    y = tf.math.log(tf.constant([-1.0]))
    assert np.isnan(y.numpy()[0])


def test_check_numerics():
    t = tf.config.check_numerics(tf.constant([1.0, 2.0]))
    assert t.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad values.*Inf"):
        tf.config.check_numerics(tf.constant([1.0, np.inf]), "bad values")


# --- inside traced functions: the executor checks every node's outputs at run time


def test_traced_forward_nan_names_op_node_and_line(debug):
    @tf.function
    def f(x):
        line[0] = inspect.currentframe().f_lineno + 1
        y = tf.math.log(x)
        return y * 2.0
    line = [None]
    assert f(tf.constant([1.0, 2.0])).numpy() == pytest.approx(2 * np.log([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(tf.constant([1.0, -1.0]))  # same graph, now with a NaN at run time
    msg = str(e.value)
    assert "NaN in output 0 of Log (forward pass)" in msg
    assert f"test_debug.py:{line[0]}" in msg and "of function f" in msg
    assert f.experimental_get_tracing_count() == 1


def test_traced_gradient_inf_names_the_forward_line(debug):
    @tf.function
    def f(x):
        line[0] = inspect.currentframe().f_lineno + 1
        return tf.reduce_sum(tf.sqrt(x))
    line = [None]
    x = tf.constant([0.0, 4.0])
    with tf.GradientTape() as tape:  # the traced function's backward graph fails
        tape.watch(x)
        y = f(x)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tape.gradient(y, x)
    msg = str(e.value)
    assert "backward rule of Sqrt" in msg and "Inf" in msg and "backward pass" in msg
    assert f"test_debug.py:{line[0]}" in msg


def test_tape_inside_traced_function_blames_forward_line(debug):
    w = tf.Variable([1.0, 4.0])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            line[0] = inspect.currentframe().f_lineno + 1
            y = tf.reduce_sum(tf.sqrt(w))
        return tape.gradient(y, w)
    line = [None]
    np.testing.assert_allclose(step().numpy(), [0.5, 0.25])
    w.assign([0.0, 4.0])
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        step()
    assert "backward rule of Sqrt" in str(e.value)
    assert f"test_debug.py:{line[0]}" in str(e.value)


def test_traced_debug_off_costs_no_checks():
    @tf.function
    def f(x):
        return tf.math.log(x)
    y = f(tf.constant([-1.0]))
    assert np.isnan(y.numpy()[0])
    cf = f.get_concrete_function(tf.constant([-1.0]))
    assert all("_chk" not in p.source for p in cf._programs.values())
    tf.config.set_debug(True)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="NaN"):
            f(tf.constant([-1.0]))
    finally:
        tf.config.set_debug(False)
    assert np.isnan(f(tf.constant([-1.0])).numpy()[0])  # the unchecked program again


def test_nan_planted_in_a_backward_rules_input_names_the_forward_line(debug):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        line = inspect.currentframe().f_lineno + 1
        y = tf.exp(x)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tape.gradient(y, x, output_gradients=tf.constant([np.nan, 1.0]))  # the rule's g
    msg = str(e.value)
    assert "NaN" in msg and "backward rule of Exp" in msg and "backward pass" in msg
    assert f"test_debug.py:{line}" in msg
