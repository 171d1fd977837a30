"""Graph-level behaviour of traced functions (API §6.5): values written in traced code are
Const nodes, not inputs; a kernel failing at run time names the op, the real shapes and
dtypes, and the user's line."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tapeflow as tf


def test_python_numbers_and_arrays_are_constants_not_inputs():
    @tf.function
    def f(x):
        return tf.sin(x) * 2.0 + tf.constant([1.0, 2.0]) + np.float32(3.0)

    x = tf.constant([0.5, 1.0])
    cf = f.get_concrete_function(x)
    assert [t.name for t in cf.graph.inputs] == ["x:0"] and cf.captured_inputs == []
    consts = [n for n in cf.graph.get_operations() if n.op == "Const"]
    assert len(consts) == 3
    np.testing.assert_array_equal(f(x).numpy(), (tf.sin(x) * 2.0 + [1.0, 2.0] + 3.0).numpy())
    assert "Const(value=2.0" in str(cf.graph) and "val: 2.0" in str(cf.graph.as_graph_def())


def test_outside_tensors_stay_captures_and_constants_are_not_differentiated():
    outside = tf.constant([10.0, 20.0])

    @tf.function
    def f(x):
        return x * 3.0 + outside

    x = tf.constant([1.0, 2.0])
    cf = f.get_concrete_function(x)
    assert len(cf.captured_inputs) == 1 and cf.captured_inputs[0] is outside
    with tf.GradientTape() as tape:
        tape.watch([x, outside])
        y = tf.reduce_sum(f(x))
    gx, go = tape.gradient(y, [x, outside])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(go.numpy(), [1.0, 1.0])


def test_a_constant_made_inside_can_be_watched_by_a_tape_inside():
    @tf.function
    def f(x):
        c = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(c)
            y = c * c * x
        return tape.gradient(y, c)

    assert f(tf.constant(3.0)).numpy() == pytest.approx(12.0)


def test_a_run_time_kernel_error_names_op_real_shapes_and_user_line():
    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None, 4])])
    def f(a, b):
        c = tf.sin(a)
        return tf.matmul(c, b)  # the line the error must name

    line = inspect.getsourcelines(f.python_function)[1] + 3
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        f(tf.ones([2, 3]), tf.ones([5, 4]))
    message = str(info.value)
    assert "MatMul" in message
    assert "float32[2, 3]" in message and "float32[5, 4]" in message  # run time, not None
    assert "None" not in message
    assert f"{__file__}:{line}" in message


def test_profile_of_a_traced_call_reports_each_node():
    @tf.function
    def f(x):
        return tf.reduce_max(tf.matmul(x, x)) + 1.0

    x = tf.constant(np.eye(30))
    f(x)
    info = tf.profile(lambda: f(x))
    nodes = [k["node"] for k in info["kernels"] if "node" in k]
    assert nodes == ["MatMul", "Max", "Add"], info["kernels"]
    matmul = info["kernels"][0]
    assert matmul["input_shapes"] == [[30, 30], [30, 30]] and matmul["output_shapes"] == [[30, 30]]
    assert matmul["bytes_added"] == 30 * 30 * 8 and matmul["kernel_ms"] >= 0
    np.testing.assert_allclose(info["result"].numpy(), 2.0)


def test_calls_of_tensors_alone_take_the_direct_path_with_the_same_results():
    calls = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def f(x):
        calls.append(1)
        return tf.reduce_sum(tf.sin(x) * x, axis=1)

    a, b = tf.ones([2, 3], tf.float64), tf.ones([4, 3], tf.float64) * 2.0
    first = f(a).numpy()
    assert f._by_specs  # the call's specs now find the concrete function directly
    np.testing.assert_allclose(f(a).numpy(), first)
    np.testing.assert_allclose(f(b).numpy(), np.full(4, 3 * np.sin(2.0) * 2.0))
    assert len(calls) == 1 and f.experimental_get_tracing_count() == 1
    with pytest.raises(ValueError):  # incompatible shapes are refused on every call
        f(tf.ones([2, 4], tf.float64))
    with pytest.raises(ValueError):
        f(tf.ones([2, 4], tf.float64))
    with tf.GradientTape() as tape:  # a tape records: the general path, with gradients
        tape.watch(a)
        y = tf.reduce_sum(f(a))
    x = np.ones((2, 3))
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), np.cos(x) * x + np.sin(x))


def test_the_direct_path_keeps_retracing_on_new_specs_and_python_values():
    @tf.function
    def g(x, scale=2.0):
        return x * scale

    x32, x64 = tf.ones([2]), tf.ones([2], tf.float64)
    g(x32)
    g(x32)
    g(x64)
    assert g.experimental_get_tracing_count() == 2
    np.testing.assert_allclose(g(x32, 3.0).numpy(), [3.0, 3.0])  # a Python value: retraced
    assert g.experimental_get_tracing_count() == 3
    np.testing.assert_allclose(g(x32).numpy(), [2.0, 2.0])
