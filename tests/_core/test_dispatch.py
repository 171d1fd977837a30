"""The one dispatch path: variable reads and assignments, custom_gradient and recompute_grad
run as ops through run_kernel; output counts are known before kernels run; the execution
context decides before any native data is touched; engine state survives bad calls."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.context import ctx
from tapeflow._core.dispatch import shape_args


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def kernel_names(fn):
    return [k["name"] for k in tf.profile(fn)["kernels"]]


# ------------------------------------------------------------------ variables as ops


def test_variable_reads_are_recorded_ops_and_watch_trainable_variables():
    v = tf.Variable(np.float64(3.0))
    with tf.GradientTape() as tape:
        y = v * v
    entries = list(tape._tape.op_tape.values())
    assert [e.op_type for e in entries][:2] == ["ReadVariableOp", "ReadVariableOp"]
    assert entries[0].input_ids == [v.id]  # the variable itself is the op's input
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, v).numpy() == 6.0


def test_non_trainable_variable_read_is_not_watched():
    v = tf.Variable(np.float64(3.0), trainable=False)
    with tf.GradientTape() as tape:
        y = v * 2.0
    assert tape.watched_variables() == ()
    assert tape.gradient(y, v) is None


def test_variable_read_carries_its_tangent():
    v = tf.Variable(np.float64(2.0))
    with tf.autodiff.ForwardAccumulator(v, c64(1.5)) as acc:
        y = v * v
    assert acc.jvp(y).numpy() == pytest.approx(6.0)  # 2 v t


def test_assignments_run_through_run_kernel_in_place_when_unshared():
    v = tf.Variable(np.arange(3.0))
    v.assign(np.arange(3.0))  # a buffer only the variable holds
    buf = v._value._buf
    names = kernel_names(lambda: v.assign_add(np.ones(3)))
    assert names[-1] == "InplaceAdd"  # the assignment op's in-place kernel
    assert v._value._buf is buf  # written where it lies: no new buffer
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])
    held = v.read_value()  # now a tensor shares the buffer: no in-place write
    names = kernel_names(lambda: v.assign_sub(np.ones(3)))
    assert "InplaceSub" not in names and "Sub" in names
    np.testing.assert_array_equal(held.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


def test_assignment_under_a_tape_records_nothing_and_explain_names_it():
    v = tf.Variable(np.float64(1.0))
    with tf.GradientTape(persistent=True) as tape:
        v.assign(np.float64(4.0))
        y = c64(2.0) * 3.0
    assert not tape._tape.op_tape
    assert "assigned" in tape.explain(y, v)


# ------------------------------------------------------------------ composites


def test_custom_gradient_is_one_recorded_op_with_variables_as_inputs():
    w = tf.Variable(np.float64(2.0))

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * 10.0, [dy * 100.0]
        return x * w, grad

    x = c64(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    entries = list(tape._tape.op_tape.values())
    assert [e.op_type for e in entries] == ["CustomGradient"]  # inner ops unrecorded
    assert entries[0].input_ids == [x.id, w.id]
    gx, gw = tape.gradient(y, [x, w])
    assert (gx.numpy(), gw.numpy()) == (10.0, 100.0)


def test_custom_gradient_output_that_is_its_input_gets_a_new_identity():
    @tf.custom_gradient
    def ident(x):
        return x, lambda dy: dy * 2.0
    x = c64(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = ident(x)
    assert y is not x and y.id != x.id
    assert tape.gradient(y, x).numpy() == 2.0


def test_recompute_grad_records_one_op_and_recomputes():
    calls = []

    def block(x):
        calls.append(1)
        return tf.tanh(x) * 2.0
    f = tf.recompute_grad(block)
    x = c64([0.1, 0.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    assert "RecomputeGrad" in [e.op_type for e in tape._tape.op_tape.values()]
    assert "Tanh" not in [e.op_type for e in tape._tape.op_tape.values()]
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 2.0 / np.cosh([0.1, 0.5]) ** 2)
    assert len(calls) == 2  # once forward, once recomputed in the backward pass


def test_composite_ops_are_registered_like_any_op():
    for name in ("ReadVariableOp", "AssignVariableOp", "CustomGradient", "RecomputeGrad"):
        assert name in registry.OPS and name in registry.COMPOSITES


# ------------------------------------------------------------------ rule forms


def test_every_rule_has_the_one_form():
    for name, rule in registry.GRADIENTS.items():
        assert rule is None or isinstance(rule, registry.VJPRule), name
    for name, rule in registry.JVPS.items():
        assert rule is None or isinstance(rule, registry.JVPRule), name


def test_public_rule_forms_are_adapted_at_registration():
    name = "DispatchTestSquare"
    tf.register_kernel(name, "numpy", lambda inputs, attrs, b: inputs["x"] ** 2)
    tf.register_gradient(name, lambda dy, saved, attrs: {"x": dy * 2.0 * saved[0]},
                         inputs_to_save=["x"])
    tf.register_jvp(name, lambda p, t, attrs: 2.0 * p["x"] * t["x"])
    assert isinstance(registry.GRADIENTS[name], registry.VJPRule)
    assert isinstance(registry.JVPS[name], registry.JVPRule)
    x = c64([1.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.autodiff.ForwardAccumulator(x, c64([1.0, 1.0])) as acc:
            y = tf.engine.run_kernel(name, {"x": x})
    np.testing.assert_allclose(acc.jvp(y).numpy(), [2.0, 6.0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 6.0])


# ------------------------------------------------------------------ output counts


def test_output_counts_are_known_before_the_kernel_runs():
    x = tf.zeros([6, 4])
    cases = [("Split", {"x": x}, {"axis": 0, "sizes": (1, 2, 3)}, 3),
             ("Unstack", {"x": x}, {"axis": 1, "num": 4}, 4),
             ("Svd", {"input": x}, {"full_matrices": False, "compute_uv": True}, 3),
             ("Svd", {"input": x}, {"full_matrices": False, "compute_uv": False}, 1),
             ("Sin", {"x": x}, {}, 1)]
    for name, inputs, attrs, n in cases:
        assert registry.OPS[name].count_outputs(shape_args(inputs, attrs)) == n, name


def test_every_builtin_op_declares_or_derives_its_output_count():
    for name, op in registry.OPS.items():
        if op.site == "<implicit>" or name in registry.COMPOSITES:
            continue
        assert op.num_outputs is not None or name in registry.SHAPES, name


def test_list_output_rules_get_lists_even_for_one_piece():
    x = c64([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        (only,) = tf.split(x, 1)
        rows = list(x)  # iterating a batch of one: Unstack with one output
        y = tf.reduce_sum(only * 2.0) + tf.reduce_sum(rows[0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[3.0, 3.0]])


def test_debug_mode_checks_a_kernels_output_count():
    name = "DispatchTestWrongCount"
    registry.define_op(name, ["x"], num_outputs=2,
                       shape=lambda s, d, a: [(s["x"], d["x"])] * 2)
    tf.register_kernel(name, "numpy", lambda inputs, attrs, b: inputs["x"] + 1.0)
    tf.config.set_debug(True)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="registered with 2"):
            tf.engine.run_kernel(name, {"x": c64([1.0])})
    finally:
        tf.config.set_debug(False)
    assert not ctx.active


# ------------------------------------------------------------------ engine state


@pytest.mark.parametrize("bad", [5, 2.5, [1], b"x"])
def test_tidy_rejects_a_non_callable_non_name_like_tidy_name_fn(bad):
    depth = len(ctx.scopes)
    with pytest.raises(TypeError, match="tidy"):
        tf.tidy(bad)
    with pytest.raises(TypeError, match="tidy"):
        tf.tidy("name", bad)
    assert len(ctx.scopes) == depth and ctx.scope is None


def test_failing_reshape_takes_no_buffer_reference():
    x = tf.ones([2, 3])
    # (earlier tests' garbage collected in between would change the counters too)
    gc.collect()
    gc.disable()
    try:
        before = tf.memory()
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.reshape(x, [5, 7])
        assert tf.memory() == before
    finally:
        gc.enable()
    assert x._buf.refs == 1


def test_hot_path_sees_no_hooks_when_nothing_is_active():
    assert not ctx.active
    with tf.GradientTape():
        assert ctx.active
    assert not ctx.active
