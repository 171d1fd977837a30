"""tapeflow.function: tracing, caching, signatures, captures, the graph, the executor and
gradients of traced functions, against eager results and closed forms."""
from __future__ import annotations

import gc
import logging

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.context import ctx


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


# ------------------------------------------------------------------ tracing and caching


def test_decorator_with_and_without_arguments_matches_eager():
    def body(x, y):
        return tf.sin(x) * y + 1.0

    plain = tf.function(body)
    with_args = tf.function(reduce_retracing=False)(body)
    x, y = c64([1.0, 2.0]), c64([3.0, 4.0])
    expected = np.sin([1.0, 2.0]) * [3.0, 4.0] + 1.0
    np.testing.assert_allclose(plain(x, y).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(with_args(x, y).numpy(), expected, rtol=1e-15)
    assert isinstance(plain, tf.function.__globals__["Function"])


def test_cache_keyed_by_shape_dtype_and_python_values():
    calls = []

    @tf.function
    def f(x, scale=2.0):
        calls.append(1)
        return x * scale

    f(tf.ones([2]))
    f(tf.zeros([2]))                 # same signature: no retrace
    assert f.experimental_get_tracing_count() == 1 and len(calls) == 1
    f(tf.ones([3]))                  # new shape
    f(tf.ones([2], tf.float64))      # new dtype
    f(tf.ones([2]), scale=3.0)       # new Python value
    f(np.ones(2, np.float32))        # a NumPy array counts as a tensor: cached
    assert f.experimental_get_tracing_count() == 4
    np.testing.assert_array_equal(f(tf.ones([2]), 3.0).numpy(), [3.0, 3.0])


def test_unhashable_python_argument_is_a_clear_error():
    f = tf.function(lambda x, opts: x)
    with pytest.raises(TypeError, match="not hashable"):
        f(tf.ones([1]), {1, 2})  # a set: a leaf that cannot key a cache


def test_input_signature_with_none_dims_serves_every_compatible_input():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        return tf.reduce_sum(tf.tanh(x) * 2.0, axis=1)

    for n in (1, 4, 7):
        x = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(f(x).numpy(), (np.tanh(x) * 2).sum(1), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(ValueError, match=r"\[2, 4\].*\[None, 3\]"):
        f(tf.ones([2, 4]))


def test_reduce_retracing_generalizes_dims_after_a_retrace():
    f = tf.function(lambda x: x * 2.0, reduce_retracing=True)
    f(tf.ones([2]))
    f(tf.ones([3]))   # retraced with [None]
    f(tf.ones([5]))   # served by the generalized graph
    assert f.experimental_get_tracing_count() == 2
    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert cf.graph.inputs[0].shape.as_list() == [None]


def test_methods_get_one_cache_per_instance():
    class Scaler:
        def __init__(self, k):
            self.k = tf.constant(k)

        @tf.function
        def __call__(self, x):
            return x * self.k

    a, b = Scaler(2.0), Scaler(3.0)
    assert a(tf.constant(1.0)).numpy() == 2.0 and b(tf.constant(1.0)).numpy() == 3.0
    assert a.__call__ is a.__call__


def test_run_functions_eagerly_runs_the_python_function():
    seen = []

    @tf.function
    def f(x):
        seen.append(x.numpy())  # needs a value: only works eagerly
        return x + 1.0
    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        assert f(tf.constant(1.0)).numpy() == 2.0
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == [1.0] and f.experimental_get_tracing_count() == 0


def test_symbolic_tensor_as_python_bool_names_the_line_and_the_fix():
    @tf.function(autograph=False)  # with autograph the `if` becomes a cond
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError,
                       match=r"test_function.py:\d+.*tf.cond") as err:
        f(tf.constant(1.0))
    assert isinstance(err.value, TypeError)
    assert ctx.graph is None and not ctx.active  # tracing state restored


def test_retracing_warning_names_the_argument_and_proposes_a_signature(caplog):
    f = tf.function(lambda x: x + 1.0)
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        for n in range(1, 7):
            f(tf.ones([n]))
    [record] = caplog.records
    text = record.getMessage()
    assert "6 out of the last 6 calls" in text and "retracing" in text
    assert "argument '<lambda>'" not in text
    assert "'x' changed from TensorSpec(shape=(5,)" in text and "to TensorSpec(shape=(6,)" in text
    assert "input_signature=[tf.TensorSpec([None], tf.float32)]" in text


def test_pretty_printed_concrete_signatures_lists_each_trace_in_tensorflows_layout():
    @tf.function
    def scale(features, factor=2.0):
        return {"out": features * factor, "n": 1}
    scale(tf.ones([2]))
    scale(tf.ones([2, 2], tf.float64), factor=3.0)
    assert scale.pretty_printed_concrete_signatures() == (
        "scale(features, factor=2.0)\n"
        "  Args:\n"
        "    features: float32 Tensor, shape=(2,)\n"
        "  Returns:\n"
        "    {'out': float32 Tensor, shape=(2,), 'n': int32 Tensor, shape=()}\n"
        "\n"
        "scale(features, factor=3.0)\n"
        "  Args:\n"
        "    features: float64 Tensor, shape=(2, 2)\n"
        "  Returns:\n"
        "    {'out': float64 Tensor, shape=(2, 2), 'n': int32 Tensor, shape=()}")
    g = tf.function(lambda x: x, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    g.get_concrete_function()
    assert "x: float32 Tensor, shape=(None, 3)" in g.pretty_printed_concrete_signatures()


# ------------------------------------------------------------------ captures and state


def test_closed_over_tensors_are_captured_and_fed_at_call_time():
    k = c64(3.0)
    f = tf.function(lambda x: x * k)
    assert f(c64(2.0)).numpy() == 6.0
    cf = f.get_concrete_function(c64(2.0))
    assert [t.id for t in cf.captured_inputs] == [k.id]


def test_variables_are_captured_by_reference_both_ways():
    v = tf.Variable(np.float64(2.0))

    @tf.function
    def f(x):
        v.assign_add(c64(1.0))
        return x * v

    assert f(c64(1.0)).numpy() == 3.0 and v.numpy() == 3.0   # assignment inside seen
    v.assign(np.float64(10.0))                               # outside: seen next call
    assert f(c64(1.0)).numpy() == 11.0
    assert f.experimental_get_tracing_count() == 1
    cf = f.get_concrete_function(c64(1.0))
    assert cf.variables == (v,) and cf.trainable_variables == (v,)


def test_stateful_ops_run_in_program_order_even_without_a_dependent_output():
    v = tf.Variable(np.float64(1.0))

    @tf.function
    def f():
        v.assign(c64(5.0))
        v.assign_add(c64(2.0))
        return c64(0.0)
    f()
    assert v.numpy() == 7.0
    ops = [n.op for n in f.get_concrete_function().graph.get_operations()]
    assert ops.index("AssignVariableOp") < ops.index("AssignAddVariableOp")


# ------------------------------------------------------------------ the graph


def test_graph_is_printable_checked_and_reads_like_a_graph_def():
    @tf.function
    def f(x):
        return tf.sin(x) * 2.0
    cf = f.get_concrete_function(tf.TensorSpec([None, 2], tf.float32))
    g = cf.graph
    text = str(g)
    assert "Sin(x=x:0)" in text and "float32[None, 2]" in text  # named after the argument
    nodes = g.as_graph_def().node
    assert [n.op for n in nodes] == ["Placeholder", "Sin", "Const", "Mul"]  # 2.0: a constant
    assert nodes[1].input == ["x:0"] and nodes[3].name == "Mul" and nodes[0].name == "x"
    assert [t.name for t in g.inputs] == ["x:0"] and g.captures == []
    assert g.get_operations()[1].name == "Sin"
    assert "digraph" in g.to_dot() and '"Sin" -> "Mul"' in g.to_dot()
    assert cf.outputs == g.outputs and cf.inputs == g.inputs
    assert cf.structured_input_signature[0][0] == tf.TensorSpec([None, 2], tf.float32)
    g.check()


def test_executor_program_frees_buffers_after_last_use():
    cf = tf.function(lambda x: tf.exp(tf.sin(x)) + 1.0).get_concrete_function(
        tf.TensorSpec([3], tf.float32))
    src = cf._program(tf.find_backend("numpy")).source
    assert "del " in src and "k0(" in src
    x = tf.ones([3])
    cf(x)  # compiled (and any fused kernel built) before counting
    gc.collect()  # tensors of earlier tests that a collection would free, freed now
    before = tf.memory()["num_tensors"]
    out = cf(x)
    np.testing.assert_allclose(out.numpy(), np.exp(np.sin(1.0)) + 1.0, rtol=1e-6)
    del out
    assert tf.memory()["num_tensors"] == before


def test_kernel_error_at_run_time_names_the_node():
    f = tf.function(lambda x: tf.linalg.cholesky(x))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky"):
        f(tf.constant([[-1.0, 0.0], [0.0, -1.0]]))


# ------------------------------------------------------------------ differentiation


def test_gradient_of_a_traced_function_equals_eager_and_records_one_op():
    w = tf.Variable(np.array([1.0, -2.0]))

    def loss(x):
        return tf.reduce_sum(tf.tanh(x * w) ** 2)
    traced = tf.function(loss)
    x = c64([0.3, 0.7])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = traced(x)
    assert [e.op_type for e in tape._tape.op_tape.values()] == ["PartitionedCall"]
    gx, gw = tape.gradient(y, [x, w])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y_eager = loss(x)
    ex, ew = tape.gradient(y_eager, [x, w])
    np.testing.assert_allclose(y.numpy(), y_eager.numpy(), rtol=1e-15)
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-14)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-14)


def test_derivatives_to_third_order_through_a_traced_function():
    f = tf.function(lambda x: tf.sin(x) * x * x)
    x = c64(1.5)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = f(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    s, c = np.sin(1.5), np.cos(1.5)
    expected = [c * 2.25 + 3 * s, -s * 2.25 + 6 * c + 2 * s, -c * 2.25 - 9 * s + 6 * c]
    np.testing.assert_allclose([d1.numpy(), d2.numpy(), d3.numpy()], expected, rtol=1e-12)
    assert f.experimental_get_tracing_count() == 1


def test_forward_mode_and_forward_over_reverse_through_a_traced_function():
    f = tf.function(lambda x: tf.reduce_sum(x * x * x))
    x = c64([1.0, 2.0])
    with tf.autodiff.ForwardAccumulator(x, c64([1.0, 0.5])) as acc:
        y = f(x)
    assert acc.jvp(y).numpy() == pytest.approx(3 * 1 + 3 * 4 * 0.5)
    hv = tf.autodiff.hvp(f, x, c64([1.0, 0.5]))
    np.testing.assert_allclose(hv.numpy(), [6.0 * 1.0, 6.0 * 2.0 * 0.5], rtol=1e-12)


def test_a_tape_inside_a_traced_function():
    @tf.function
    def grad_of_square(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)
    np.testing.assert_allclose(grad_of_square(c64([1.0, 3.0])).numpy(), [2.0, 6.0])


def test_traced_function_calling_another_is_inlined():
    inner = tf.function(lambda x: x * 2.0)
    outer = tf.function(lambda x: inner(x) + inner.get_concrete_function(x)(x))
    assert outer(c64(1.5)).numpy() == 6.0
    ops = [n.op for n in outer.get_concrete_function(c64(1.5)).graph.get_operations()]
    assert "PartitionedCall" not in ops and ops.count("Mul") == 2


# ------------------------------------------------------------------ unknown dims


def test_one_graph_with_unknown_batch_dim_serves_gradients_of_every_batch_size():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    def f(x):
        return tf.reduce_sum(tf.tanh(x) * 2.0, axis=1)
    for n in (4, 2, 1):
        x = c64(np.linspace(-1, 1, 3 * n).reshape(n, 3))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_mean(f(x))
        np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                                   2 * (1 - np.tanh(x.numpy()) ** 2) / n, rtol=1e-13)
    assert f.experimental_get_tracing_count() == 1


def test_traced_training_step_trains_on_a_last_smaller_batch_like_eager():
    rng = np.random.default_rng(0)
    init = [rng.normal(size=(5, 8)) * 0.3, np.zeros(8), rng.normal(size=(8, 3)) * 0.3,
            np.zeros(3)]
    traced_params = [tf.Variable(v) for v in init]
    eager_params = [tf.Variable(v) for v in init]

    def step(x, y, params):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
            logits = tf.matmul(h, params[2]) + params[3]
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.1 * g)
        return loss

    traced = tf.function(lambda x, y: step(x, y, traced_params), input_signature=[
        tf.TensorSpec([None, 5], tf.float64), tf.TensorSpec([None], tf.int32)])
    for n in (16, 16, 7):
        x = c64(rng.normal(size=(n, 5)))
        y = tf.constant(rng.integers(0, 3, n).astype(np.int32))
        np.testing.assert_allclose(traced(x, y).numpy(), step(x, y, eager_params).numpy(),
                                   rtol=1e-14)
        for a, b in zip(traced_params, eager_params):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13)
    assert traced.experimental_get_tracing_count() == 1
    graph_text = str(traced.get_concrete_function().graph)
    assert "Dim(" in graph_text  # sizes resolved when the graph runs, none baked in


# ------------------------------------------------------------------ state: random, custom


def test_random_ops_give_fresh_values_on_each_call_and_follow_set_seed():
    f = tf.function(lambda: tf.random.normal([4]))
    a, b = f().numpy(), f().numpy()
    assert not np.array_equal(a, b)
    tf.random.set_seed(7)
    c = f().numpy()
    tf.random.set_seed(7)
    d = f().numpy()
    np.testing.assert_array_equal(c, d)
    tf.random.set_seed(7)
    np.testing.assert_array_equal(tf.random.normal([4]).numpy(), c)  # as eager draws
    assert f.experimental_get_tracing_count() == 1


def test_custom_gradient_inside_a_traced_function_keeps_its_gradient():
    w = tf.Variable(np.float64(3.0))

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * 10.0, [dy * 7.0]
        return x * w, grad
    traced = tf.function(lambda x: tf.reduce_sum(f(x)))
    x = c64([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = traced(x)
    gx, gw = tape.gradient(y, [x, w])
    assert y.numpy() == 9.0
    np.testing.assert_array_equal(gx.numpy(), [10.0, 10.0])
    assert gw.numpy() == 14.0


def test_recompute_grad_inside_a_traced_function():
    f = tf.function(lambda x: tf.reduce_sum(tf.recompute_grad(lambda z: tf.sin(z) * z)(x)))
    x = c64([0.5, 1.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.cos([0.5, 1.5]) * [0.5, 1.5] + np.sin([0.5, 1.5]))


def test_batched_jvp_of_a_traced_function_uses_its_jvp_function():
    f = tf.function(lambda x: tf.sin(x) * x)
    x = c64([0.5, 1.0, 2.0])
    jac = tf.autodiff.jacfwd(f)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(x.numpy()) * x.numpy()
                                                    + np.sin(x.numpy())), rtol=1e-12)
    assert "PartitionedCall" not in tf.autodiff.forward.fallback_ops()


def test_variables_created_on_the_first_trace_only():
    class Model:
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(tf.ones([3]) * 2.0)  # lifted: made eagerly, once
            return x * self.v

    m = Model()
    np.testing.assert_array_equal(m(tf.ones([3])).numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(m(tf.ones([3]) * 3.0).numpy(), [6.0, 6.0, 6.0])
    assert isinstance(m.v, tf.Variable) and m.v.numpy().tolist() == [2.0, 2.0, 2.0]

    @tf.function
    def each_call(x):
        return x + tf.Variable(1.0)
    # as in TF: a second trace on the first call finds it would create new ones each call
    with pytest.raises(ValueError, match="singleton tf.Variables created on the first call"):
        each_call(tf.constant(1.0))

    @tf.function
    def from_argument(x):
        return tf.Variable(x * 2.0).read_value()
    with pytest.raises(ValueError, match="argument"):
        from_argument(tf.ones([2]))
    assert ctx.graph is None and not ctx.active


# --------------------------------------------------------------------------- dead code
def test_dead_code_is_not_run_but_state_is():
    v = tf.Variable(0.0)

    @tf.function
    def inner(x):
        v.assign_add(x)  # only an effect: must run though nothing reads it
        return x * 3.0

    @tf.function
    def f(x):
        tf.gather(x, [5])  # out of range and unused: pruned, as TensorFlow prunes it
        unused = tf.exp(x) * 2.0  # noqa: F841
        inner(tf.reduce_sum(x))  # an unused result with an effect
        tf.cond(tf.reduce_sum(x) > 0, lambda: v.assign_add(10.0), lambda: v.assign_add(0.0))
        return x + 1.0

    out = f(tf.constant([1.0, 2.0]))
    np.testing.assert_allclose(out.numpy(), [2.0, 3.0])
    assert float(v.numpy()) == 13.0
    f(tf.constant([1.0, 2.0]))
    assert float(v.numpy()) == 26.0
    cf = f.get_concrete_function(tf.constant([1.0, 2.0]))
    from tapeflow.function.executor import live_nodes
    ran = [n.op for n in live_nodes(cf.graph.nodes, cf._flat_outputs)]
    assert "GatherV2" not in ran and "Exp" not in ran and "If" in ran
    assert "GatherV2" in [n.op for n in cf.graph.nodes]  # still in the graph, for printing
    assert all(p.pruned >= 3 for p in cf._programs.values())


def test_dead_code_in_gradients_of_traced_functions():
    @tf.function
    def f(x):
        tf.gather(x, [7])  # dead in the forward graph and in its backward graph
        return tf.reduce_sum(tf.sin(x))

    x = tf.constant([0.5, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.cos([0.5, 1.0]), rtol=1e-6)


def test_a_finished_graph_is_immutable():
    @tf.function
    def f(x):
        return x * 2.0

    cf = f.get_concrete_function(tf.constant(1.0))
    n = len(cf.graph.nodes)
    with pytest.raises(RuntimeError, match="finished"):
        cf.graph.add_op("Neg", {"x": cf.graph.outputs[0]}, {})
    with pytest.raises(RuntimeError, match="finished"):
        cf.graph.placeholder([], tf.float32)
    assert len(cf.graph.nodes) == n and float(cf(tf.constant(3.0))) == 6.0


def test_placeholders_are_named_after_arguments_and_specs():
    @tf.function
    def f(images, labels):
        return images * 2.0, labels

    cf = f.get_concrete_function(tf.TensorSpec([None, 3], tf.float32, name="pixels"),
                                 tf.TensorSpec([None], tf.int32))
    assert [t.name for t in cf.graph.inputs[:2]] == ["pixels:0", "labels:0"]
    out = cf(tf.ones([2, 3]), tf.constant([1, 2]))
    np.testing.assert_allclose(out[0].numpy(), np.full([2, 3], 2.0))
