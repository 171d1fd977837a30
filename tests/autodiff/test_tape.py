"""GradientTape and the tape: behaviour per API §3.1, checked against closed forms."""
import gc
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import context, tensor as _tensor_mod


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def test_simple_gradient_and_structures():
    x, y = c64([1.0, 2.0]), c64(3.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.reduce_sum(tf.sin(x) * y)
    grads = tape.gradient(z, {"a": x, "b": [y]})
    np.testing.assert_allclose(grads["a"].numpy(), np.cos([1.0, 2.0]) * 3.0)
    np.testing.assert_allclose(grads["b"][0].numpy(), np.sin(1.0) + np.sin(2.0))


def test_unconnected_none_and_zero():
    x, y = c64([1.0]), c64([2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = x * 2.0
    assert tape.gradient(z, y) is None
    zero = tape.gradient(z, y, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(zero.numpy(), [0.0, 0.0])
    zero = tape.gradient(z, y, unconnected_gradients="zero")
    assert zero.shape == (2,)


def test_non_persistent_allows_one_call_persistent_many():
    x = c64(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x).numpy() == 4.0
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert tape.gradient(y, x).numpy() == 4.0
    assert tape.gradient(z, x).numpy() == 12.0
    assert tape.gradient(z, y).numpy() == 2.0  # intermediate source
    del tape


def test_variables_watched_automatically_unless_disabled():
    v = tf.Variable(3.0)
    frozen = tf.Variable(5.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * v + frozen
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, v).numpy() == 6.0
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert tape.gradient(y, v).numpy() == 6.0


def test_variable_assigned_value_is_read_fresh():
    v = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        a = v * 1.0
        v.assign(10.0)
        b = v * v
    assert tape.gradient(a, v).numpy() == 1.0
    assert tape.gradient(b, v).numpy() == 20.0


def test_stop_recording_and_reset():
    x = c64(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * x
        w = y + z
    assert tape.gradient(w, x).numpy() == 6.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        y2 = x * x * x
    assert tape.gradient(y2, x).numpy() == 27.0


def test_output_gradients_and_multiple_targets():
    x = c64([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = x * x
        b = tf.sin(x)
    g = tape.gradient(a, x, output_gradients=c64([10.0, 100.0]))
    np.testing.assert_allclose(g.numpy(), [20.0, 400.0])
    g = tape.gradient([a, b], x)
    np.testing.assert_allclose(g.numpy(), 2 * np.array([1.0, 2.0]) + np.cos([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        tape.gradient(a, x, output_gradients=c64([1.0]))


def test_target_that_is_a_source_gets_ones():
    x = c64([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])


def test_integer_inputs_never_recorded():
    i = tf.constant([1, 2])
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="floating"):
            tape.watch(i)
        j = i + i
    assert tape.gradient(j, i) is None


def test_nested_tapes_third_derivative():
    x = c64(0.7)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.sin(x) * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    xv = 0.7
    np.testing.assert_allclose(d1.numpy(), np.cos(xv) * xv + np.sin(xv))
    np.testing.assert_allclose(d2.numpy(), -np.sin(xv) * xv + 2 * np.cos(xv))
    np.testing.assert_allclose(d3.numpy(), -np.cos(xv) * xv - 3 * np.sin(xv))


def test_gradient_inside_persistent_with_block_is_recorded():
    x = c64(1.3)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        dy = tape.gradient(y, x)
    d2 = tape.gradient(dy, x)
    np.testing.assert_allclose(dy.numpy(), 3 * 1.3 ** 2)
    np.testing.assert_allclose(d2.numpy(), 6 * 1.3)


def test_jacobian_and_batch_jacobian_closed_forms():
    x = c64([0.5, 1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * 2.0
        s = tf.reduce_sum(x * x)
    j = tape.jacobian(y, x)
    np.testing.assert_allclose(j.numpy(), np.diag(2 * np.cos([0.5, 1.0, 2.0])))
    np.testing.assert_allclose(tape.jacobian(s, x).numpy(), 2 * x.numpy())
    m = c64(np.arange(6.0).reshape(2, 3) / 5)
    with tf.GradientTape() as tape:
        tape.watch(m)
        out = tf.sin(m)[:, :2] * 3.0
    bj = tape.batch_jacobian(out, m)
    expected = np.zeros((2, 2, 3))
    for b in range(2):
        for i in range(2):
            expected[b, i, i] = 3 * np.cos(m.numpy()[b, i])
    np.testing.assert_allclose(bj.numpy(), expected)


def test_jacobian_matrix_function():
    a = c64([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
    x = c64([0.3, -0.2])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.linalg.matvec(a, x)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), a.numpy())


def test_long_loop_non_persistent_tape_stays_small():
    x = c64(np.ones(4))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(300):
            y = tf.sin(y) * 1.01
        internal = tape._tape
        # the chain is alive through y: every op is still needed
        assert len(internal.op_tape) == 600
        z = x
        for _ in range(300):
            z = tf.sin(z) * 1.01  # each old z dies: its entries go with it
        del z
        gc.collect()
        assert len(internal.op_tape) == 600
    g = tape.gradient(y, x)
    assert g.shape == (4,)


def test_backward_keeps_only_what_the_rule_needs():
    x = c64(np.ones(1000))
    c = c64(np.full(1000, 2.0))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * c  # only c is needed (for dy/dx); x must not be kept
        z = y + c  # nothing needed
    entries = list(tape._tape.op_tape.values())
    mul = [e for e in entries if e.op_type == "Mul"][0]
    add = [e for e in entries if e.op_type == "Add"][0]
    assert set(mul.backward.env) == {"y"} and mul.backward.env["y"] is c
    assert add.backward.env == {}
    info = tape.memory()
    assert info["total_bytes"] == 8000


def test_threads_have_their_own_tape_stack():
    x = c64(2.0)
    seen = {}

    def worker():
        seen["tapes"] = list(context.ctx.tapes)
        seen["y"] = (x * x).numpy()
    with tf.GradientTape() as tape:
        tape.watch(x)
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        y = x * x
    assert seen["tapes"] == [] and seen["y"] == 4.0
    assert tape.gradient(y, x).numpy() == 4.0


def test_tape_state_intact_after_error_in_block():
    x = c64([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        with tf.GradientTape() as tape:
            tape.watch(x)
            tf.add(x, c64([1.0, 2.0, 3.0]))
    assert context.ctx.tapes == []


def test_custom_gradient_basic_and_with_variables():
    @tf.custom_gradient
    def clipped_identity(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
    x = c64([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clipped_identity(x) * c64([5.0, 0.5])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 0.5])

    v = tf.Variable(np.float64(3.0))

    @tf.custom_gradient
    def scaled(x):
        out = x * v

        def grad_fn(dy, variables=None):
            return [dy * v], [tf.reduce_sum(dy * x) * 10.0]
        return out, grad_fn
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(scaled(x))
    gx, gv = tape.gradient(y, [x, v])
    np.testing.assert_allclose(gx.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(gv.numpy(), 30.0)  # the custom rule's value, not the true 3.0


def test_custom_gradient_requires_variables_keyword():
    v = tf.Variable(np.float64(3.0))

    @tf.custom_gradient
    def bad(x):
        return x * v, lambda dy: dy
    with pytest.raises(TypeError, match="variables"):
        bad(c64(1.0))


def test_stop_gradient():
    x = c64(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stop_gradient(x) * x
    assert tape.gradient(y, x).numpy() == 3.0


def test_recompute_grad_same_gradient_less_memory():
    def block(x):
        for _ in range(5):
            x = tf.tanh(x) * 1.5
        return x
    x = c64(np.linspace(-1, 1, 10000))

    def run(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x))
        held = tape.memory()["total_bytes"]
        return tape.gradient(y, x).numpy(), held
    g_plain, held_plain = run(block)
    g_re, held_re = run(tf.recompute_grad(block))
    np.testing.assert_allclose(g_re, g_plain, rtol=1e-12)
    assert held_plain >= 5 * 80000  # tanh outputs etc. kept
    assert held_re <= 2 * 80000
    gc.collect()
    before = tf.memory()["num_bytes"]
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.recompute_grad(block)(x))
    gc.collect()
    assert tf.memory()["num_bytes"] - before <= 3 * 80000


def test_gather_gradient_is_indexed_slices_and_aggregates():
    params = c64(np.arange(12.0).reshape(4, 3))
    with tf.GradientTape() as tape:
        tape.watch(params)
        a = tf.gather(params, [0, 2])
        b = tf.gather(params, [2])
        loss = tf.reduce_sum(a) + tf.reduce_sum(b * 2.0)
    g = tape.gradient(loss, params)
    assert isinstance(g, tf.IndexedSlices)
    dense = tf.convert_to_tensor(g).numpy()
    expected = np.zeros((4, 3))
    expected[0] = 1
    expected[2] = 3
    np.testing.assert_allclose(dense, expected)
    # mixing with a dense gradient densifies
    with tf.GradientTape() as tape:
        tape.watch(params)
        loss = tf.reduce_sum(tf.gather(params, [1])) + tf.reduce_sum(params)
    g = tape.gradient(loss, params)
    assert isinstance(g, tf.Tensor)
    expected = np.ones((4, 3))
    expected[1] = 2
    np.testing.assert_allclose(g.numpy(), expected)


def test_tape_memory_per_op_and_to_dot():
    x = c64(np.ones(100))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x)
        z = tf.reduce_sum(y * y)
    info = tape.memory()
    names = [op["name"] for op in info["ops"]]
    assert "Sin" in names and "Mul" in names
    sin = [op for op in info["ops"] if op["name"] == "Sin"][0]
    assert sin["bytes"] == 800 and sin["saved_inputs"] == ["x"]
    assert info["total_bytes"] == 800 + 800  # x for Sin, y for Mul (needed twice, kept once)
    dot = tape.to_dot()
    assert dot.startswith("digraph") and "Sin" in dot and "->" in dot
    assert tape.gradient(z, x) is not None
