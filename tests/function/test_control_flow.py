"""cond and while_loop (API §6.2, §8.5): Python control flow eagerly, If/While nodes while
tracing; values and derivatives (reverse, forward, higher order) against eager execution,
which unrolls in Python, and closed forms; TF's errors; bounded-memory loop gradients."""
from __future__ import annotations

import collections
import gc
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.function.control import checkpoint_stride


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def ops_of(fn, *args):
    return [n.op for n in fn.get_concrete_function(*args).graph.get_operations()]


def grads(fn, xs, order=1):
    """Gradients of sum(fn(*xs)) (order 1) or of the sum of those gradients (order 2)."""
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            out = fn(*xs)
            total = tf.add_n([tf.reduce_sum(o) for o in tf.nest.flatten(out)
                              if o.dtype.is_floating])
        first = inner.gradient(total, xs, unconnected_gradients="zero")
        if order == 1:
            return [g.numpy() for g in first]
        total2 = tf.add_n([tf.reduce_sum(g) for g in first])
    return [g.numpy() for g in outer.gradient(total2, xs, unconnected_gradients="zero")]


def jvps(fn, xs, ts):
    with tf.autodiff.ForwardAccumulator(xs, ts) as acc:
        out = fn(*xs)
    return [acc.jvp(o, unconnected_gradients="zero").numpy() for o in tf.nest.flatten(out)
            if o.dtype.is_floating]


def assert_all_close(a, b, rtol=1e-12, atol=1e-12):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ cond, eagerly


def test_eager_cond_runs_only_the_chosen_branch():
    ran = []

    def branch(tag, value):
        def fn():
            ran.append(tag)
            return value
        return fn
    assert tf.cond(True, branch("t", 1), branch("f", 2)) == 1
    out = tf.cond(tf.constant(1.0) > 2.0, branch("t", 1), branch("f", {"a": (3,)}))
    assert out == {"a": (3,)} and ran == ["t", "f"]


def test_eager_cond_is_seen_by_tapes_like_the_ops_it_runs():
    x = c64(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cond(x > 0, lambda: x ** 3, lambda: -x)
    assert tape.gradient(y, x).numpy() == 12.0


def test_cond_argument_errors():
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(True, None, lambda: 1)
    with pytest.raises(TypeError, match="false_fn must be callable"):
        tf.cond(True, lambda: 1, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        tf.cond(tf.constant([True, False]), lambda: 1, lambda: 2)


# ------------------------------------------------------------------ cond, traced


def test_traced_cond_is_one_if_node_and_matches_eager_for_both_branches():
    traces = []

    def f(x):
        def yes():
            traces.append("t")
            return tf.sin(x) * 2.0
        def no():
            traces.append("f")
            return x * x - 1.0
        return tf.cond(tf.reduce_sum(x) > 0, yes, no)
    g = tf.function(f)
    for v in ([0.5, 1.0], [-0.5, -2.0]):
        x = c64(v)
        np.testing.assert_array_equal(g(x).numpy(), f(x).numpy())
    assert traces == ["t", "f", "t", "f"]  # one trace of both, then one eager call each
    assert ops_of(g, c64([1.0, 2.0])).count("If") == 1


def test_traced_cond_returns_structures_and_merges_shapes():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.bool)])
    def f(x, p):
        return tf.cond(p, lambda: {"a": x[:2], "b": (x[0], 1)},
                       lambda: {"a": x, "b": (x[1] * 2.0, 7)})
    x = tf.constant([1.0, 2.0, 3.0])
    out = f(x, tf.constant(True))
    np.testing.assert_array_equal(out["a"].numpy(), [1.0, 2.0])
    assert out["b"][1].numpy() == 1 and out["b"][1].dtype == tf.int32
    out = f(x, tf.constant(False))
    np.testing.assert_array_equal(out["a"].numpy(), [1.0, 2.0, 3.0])
    assert out["b"][0].numpy() == 4.0 and out["b"][1].numpy() == 7
    if_node = [n for n in f.get_concrete_function().graph.get_operations() if n.op == "If"][0]
    assert if_node.outputs[0].shape.as_list() == [None]  # [2] in one branch, [None] in the other


def test_traced_cond_with_outer_tensors_returned_as_is():
    f = tf.function(lambda x, y, p: tf.cond(p, lambda: x, lambda: y))
    x, y = c64([1.0, 2.0]), c64([3.0, 4.0])
    np.testing.assert_array_equal(f(x, y, tf.constant(False)).numpy(), [3.0, 4.0])
    for p, expected in ((True, ([1.0, 1.0], [0.0, 0.0])), (False, ([0.0, 0.0], [1.0, 1.0]))):
        assert_all_close(grads(lambda a, b: f(a, b, tf.constant(p)), [x, y]), expected)


def test_traced_cond_structure_and_dtype_mismatches_are_type_errors():
    x = tf.constant(1.0)
    f = tf.function(lambda p: tf.cond(p, lambda: (x, x), lambda: x))
    with pytest.raises(TypeError, match="same number, type, and overall structure"):
        f(tf.constant(True))
    g = tf.function(lambda p: tf.cond(p, lambda: {"a": [1, x]},
                                      lambda: {"a": [2, tf.cast(x, tf.float64)]}))
    with pytest.raises(TypeError, match=r"output\['a'\]\[1\]: float32\[\] and float64\[\] "
                                        "have different types"):
        g(tf.constant(True))


def test_traced_cond_gradient_matches_eager_in_both_branches():
    def f(x, y):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.sin(x) * y, lambda: tf.exp(x) + y * y)
    g = tf.function(f)
    for v in ([0.3, 0.9], [-0.3, -0.9]):
        xs = [c64(v), c64(1.7)]
        assert_all_close(grads(g, xs), grads(f, xs))
        assert_all_close(grads(g, xs, order=2), grads(f, xs, order=2))


def test_second_order_gradient_through_cond_closed_form():
    f = tf.function(lambda x: tf.cond(x > 0, lambda: x ** 3, lambda: tf.sin(x)))
    for v, d2 in ((2.0, 6.0 * 2.0), (-0.7, -np.sin(-0.7))):
        x = c64(v)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = f(x)
            dy = t1.gradient(y, x)
        np.testing.assert_allclose(t2.gradient(dy, x).numpy(), d2, rtol=1e-12)


def test_forward_mode_through_cond_matches_eager():
    def f(x, y):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.sin(x) * y, lambda: x * x)
    g = tf.function(f)
    for v in ([0.3, 0.9], [-0.3, -0.9]):
        xs, ts = [c64(v), c64(1.5)], [c64([1.0, -2.0]), c64(0.5)]
        assert_all_close(jvps(g, xs, ts), jvps(f, xs, ts))


def test_accumulator_inside_a_traced_function_uses_the_if_jvp_rule():
    @tf.function
    def f(x, t):
        with tf.autodiff.ForwardAccumulator(x, t) as acc:
            y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.sin(x), lambda: x * 3.0)
        return acc.jvp(y)
    x, t = c64([0.3, 0.7]), c64([1.0, 2.0])
    np.testing.assert_allclose(f(x, t).numpy(), np.cos([0.3, 0.7]) * [1.0, 2.0], rtol=1e-14)
    np.testing.assert_allclose(f(-x, t).numpy(), [3.0, 6.0], rtol=1e-14)


def test_cond_gradient_reaches_variables_read_in_a_branch():
    v = tf.Variable(np.array([1.0, 2.0]))
    w = tf.Variable(3.0, dtype=tf.float64)
    f = tf.function(lambda p: tf.cond(p, lambda: tf.reduce_sum(v * v), lambda: w * 2.0))
    with tf.GradientTape() as tape:
        y = f(tf.constant(True))
    gv, gw = tape.gradient(y, [v, w], unconnected_gradients="zero")
    np.testing.assert_array_equal(gv.numpy(), [2.0, 4.0])
    assert gw.numpy() == 0.0
    with tf.GradientTape() as tape:
        y = f(tf.constant(False))
    gv, gw = tape.gradient(y, [v, w], unconnected_gradients="zero")
    assert gw.numpy() == 2.0 and not gv.numpy().any()


def test_cond_with_side_effects_only():
    v = tf.Variable(0.0)

    def bump():
        v.assign_add(1.0)

    @tf.function
    def f(p):
        tf.cond(p, bump, lambda: None)
        return v.read_value()
    assert f(tf.constant(True)).numpy() == 1.0
    assert f(tf.constant(False)).numpy() == 1.0
    assert f(tf.constant(True)).numpy() == 2.0


# ------------------------------------------------------------------ while_loop, eagerly


def test_eager_while_loop_is_a_python_loop_keeping_the_structure():
    out = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                        [tf.constant(0), tf.constant(0)])
    assert isinstance(out, list) and [int(o) for o in out] == [5, 10]
    # one loop variable: the body may return it bare; a single tensor is passed as is
    assert int(tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])[0]) == 3
    assert int(tf.while_loop(lambda i: i < 3, lambda i: i + 1, tf.constant(0))) == 3
    assert int(tf.while_loop(lambda i: True, lambda i: i + 1, [0], maximum_iterations=4)[0]) == 4


def test_eager_while_loop_checks_the_body_structure():
    with pytest.raises(ValueError, match="structure of loop_vars"):
        tf.while_loop(lambda a, b: a < 3, lambda a, b: a + 1, [tf.constant(0), tf.constant(1)])


def test_while_loop_argument_errors():
    with pytest.raises(TypeError, match="'cond' must be callable"):
        tf.while_loop(None, lambda i: i, [0])
    with pytest.raises(TypeError, match="parallel_iterations"):
        tf.while_loop(lambda i: i < 1, lambda i: i, [0], parallel_iterations=0)
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.while_loop(lambda i: i < 1, lambda i: i, [0], maximum_iterations=[1, 2])


# ------------------------------------------------------------------ while_loop, traced


Pair = collections.namedtuple("Pair", "h c")


def _loop(x, w, n):
    """Several loop variables in a nested structure, a cond in the body, captures."""
    def body(i, state, acc):
        h = tf.cond(tf.reduce_sum(state.h) > 1.0, lambda: tf.tanh(state.h * w + state.c),
                    lambda: tf.sin(state.h) + state.c * w)
        return i + 1, Pair(h, state.c * 0.9), {"sum": acc["sum"] + tf.reduce_sum(h)}
    return tf.while_loop(lambda i, state, acc: i < n, body,
                         (tf.constant(0), Pair(x, x * 0.5), {"sum": tf.zeros([], x.dtype)}))


def test_traced_while_loop_is_one_node_and_matches_eager():
    g = tf.function(_loop)
    x, w = c64([0.4, 0.8, -0.1]), c64(1.3)
    for n in (0, 1, 7):
        eager, traced = _loop(x, w, n), g(x, w, tf.constant(n))
        assert type(traced) is tuple and isinstance(traced[1], Pair)
        assert_all_close([t.numpy() for t in tf.nest.flatten(traced)],
                         [t.numpy() for t in tf.nest.flatten(eager)], rtol=1e-15, atol=0)
    assert g.experimental_get_tracing_count() == 1
    assert ops_of(g, x, w, tf.constant(3)).count("While") == 1


def test_traced_while_loop_gradients_match_eager_to_second_order():
    g = tf.function(_loop)
    x, w = c64([0.4, 0.8, -0.1]), c64(1.3)
    for n in (0, 1, 6):
        f_eager = lambda a, b: _loop(a, b, n)[1:]  # noqa: E731
        f_traced = lambda a, b: g(a, b, tf.constant(n))[1:]  # noqa: E731
        assert_all_close(grads(f_traced, [x, w]), grads(f_eager, [x, w]))
        assert_all_close(grads(f_traced, [x, w], order=2), grads(f_eager, [x, w], order=2))


def test_forward_mode_through_while_loop_matches_eager():
    g = tf.function(_loop)
    xs, ts = [c64([0.4, 0.8, -0.1]), c64(1.3)], [c64([1.0, 0.5, -1.0]), c64(0.25)]
    for n in (0, 5):
        assert_all_close(jvps(lambda a, b: g(a, b, tf.constant(n))[1:], xs, ts),
                         jvps(lambda a, b: _loop(a, b, n)[1:], xs, ts))


def test_accumulator_inside_a_traced_function_uses_the_while_jvp_rule():
    @tf.function
    def f(x, t):
        with tf.autodiff.ForwardAccumulator(x, t) as acc:
            y = tf.while_loop(lambda y: tf.reduce_sum(y) < 10.0, lambda y: y * 2.0, [x])[0]
        return y, acc.jvp(y)
    y, t = f(c64([1.0, 2.0]), c64([1.0, -1.0]))  # 2 doublings: [4, 8]
    np.testing.assert_array_equal(y.numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(t.numpy(), [4.0, -4.0])


def test_loop_closed_form_gradient_and_hessian():
    # x <- x * a, n times: x_n = x a^n; d/da = n x a^(n-1), d2/da2 = n (n-1) x a^(n-2)
    f = tf.function(lambda x, a, n: tf.while_loop(lambda i, x: i < n,
                                                  lambda i, x: (i + 1, x * a),
                                                  (0, x))[1])
    x, a, n = c64(1.5), c64(1.1), 9
    with tf.GradientTape() as t2:
        t2.watch(a)
        with tf.GradientTape() as t1:
            t1.watch([x, a])
            y = f(x, a, tf.constant(n))
        gx, ga = t1.gradient(y, [x, a])
    np.testing.assert_allclose(y.numpy(), 1.5 * 1.1 ** n, rtol=1e-14)
    np.testing.assert_allclose(gx.numpy(), 1.1 ** n, rtol=1e-14)
    np.testing.assert_allclose(ga.numpy(), n * 1.5 * 1.1 ** (n - 1), rtol=1e-14)
    np.testing.assert_allclose(t2.gradient(ga, a).numpy(), n * (n - 1) * 1.5 * 1.1 ** (n - 2),
                               rtol=1e-13)


def test_forward_over_reverse_inside_a_traced_function():
    def loss(x, w):
        out = _loop(x, w, 5)
        return tf.reduce_sum(out[1].h ** 2) + out[2]["sum"]

    def hvp(x, w, vx, vw):
        with tf.autodiff.ForwardAccumulator([x, w], [vx, vw]) as acc:
            with tf.GradientTape() as tape:
                tape.watch([x, w])
                y = loss(x, w)
            gx, gw = tape.gradient(y, [x, w])
        return acc.jvp(gx), acc.jvp(gw)
    args = [c64([0.4, 0.8, -0.1]), c64(1.3), c64([1.0, -0.5, 2.0]), c64(0.3)]
    traced = tf.function(hvp)
    assert_all_close([t.numpy() for t in traced(*args)], [t.numpy() for t in hvp(*args)])
    ops = [n.op for n in traced.get_concrete_function(*args).graph.get_operations()]
    assert "WhileGrad" in ops and ops.count("While") >= 2  # the loop and its tangent loop


def test_batched_jacobians_and_hessians_match_eager():
    def f(x):
        def body(i, y):
            return i + 1, tf.cond(tf.reduce_sum(y) > 0, lambda: tf.sin(y) * 2.0,
                                  lambda: y * y * x)
        return tf.while_loop(lambda i, y: i < 3, body, (0, x))[1]
    g = tf.function(f)
    x = c64([0.3, -0.2, 0.5])
    for jac in (tf.autodiff.jacfwd, tf.autodiff.jacobian):
        np.testing.assert_allclose(jac(g)(x).numpy(), jac(f)(x).numpy(), rtol=1e-12)
    h = tf.autodiff.hessian
    np.testing.assert_allclose(h(lambda a: tf.reduce_sum(g(a)))(x).numpy(),
                               h(lambda a: tf.reduce_sum(f(a)))(x).numpy(), rtol=1e-12)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), tf.autodiff.jacobian(f)(x).numpy(),
                               rtol=1e-12)


def test_maximum_iterations_bounds_the_traced_loop_and_its_gradient():
    f = tf.function(lambda x, m: tf.while_loop(lambda x: True, lambda x: [x * 2.0], [x],
                                               maximum_iterations=m)[0])
    x = c64(1.0)
    for m in (0, 3, 10):
        assert f(x, tf.constant(m)).numpy() == 2.0 ** m
        assert grads(lambda a: f(a, tf.constant(m)), [x])[0] == 2.0 ** m
    assert f.experimental_get_tracing_count() == 1


def test_shape_invariants_allow_dimensions_to_change():
    @tf.function
    def f(x):
        return tf.while_loop(lambda s: tf.shape(s)[0] < 8, lambda s: [tf.tile(s, [2]) * 2.0],
                             [x], shape_invariants=[tf.TensorShape([None])])[0]
    x = c64([1.0, 3.0])
    np.testing.assert_array_equal(f(x).numpy(), [4, 12] * 4)
    assert_all_close(grads(f, [x]), [[16.0, 16.0]])  # 4 copies of each, scaled by 2 * 2
    graph = f.get_concrete_function(x).graph
    node = [n for n in graph.get_operations() if n.op == "While"][0]
    assert node.outputs[0].shape.as_list() == [None]


def test_unknown_dims_from_the_input_signature_in_loop_gradients():
    def body(i, s):
        return i + 1, tf.sin(s) * s

    f = tf.function(lambda x: tf.while_loop(lambda i, s: i < 3, body, (0, x))[1],
                    input_signature=[tf.TensorSpec([None], tf.float64)])
    for n in (2, 5):
        x = c64(np.linspace(0.1, 1.0, n))
        assert_all_close(grads(f, [x]), grads(f.python_function, [x]))
        assert_all_close(grads(f, [x], order=2), grads(f.python_function, [x], order=2))
    assert f.experimental_get_tracing_count() == 1


def test_shape_change_without_invariant_names_the_variable():
    f = tf.function(lambda x: tf.while_loop(
        lambda i, d: i < 2, lambda i, d: (i + 1, {"s": tf.concat([d["s"], d["s"]], 0)}),
        (0, {"s": x})))
    with pytest.raises(ValueError, match=r"loop_vars\[1\]\['s'\] enters the loop with shape "
                                         r"\[2\], but has shape \[4\].*shape_invariants"):
        f(c64([1.0, 2.0]))


def test_dtype_change_and_bad_invariant_name_the_variable():
    f = tf.function(lambda x: tf.while_loop(lambda a, b: a < 2,
                                            lambda a, b: (a + 1, tf.cast(b, tf.float32)),
                                            (0, x)))
    with pytest.raises(TypeError, match=r"loop_vars\[1\] enters the loop with type float64 "
                                        r"but has type float32"):
        f(c64(1.0))
    g = tf.function(lambda x: tf.while_loop(lambda x: True, lambda x: [x], [x],
                                            shape_invariants=[tf.TensorShape([3])]))
    with pytest.raises(ValueError, match=r"shape invariant specified for loop_vars\[0\]"):
        g(c64([1.0, 2.0]))


def test_traced_body_structure_mismatch():
    f = tf.function(lambda x: tf.while_loop(lambda a, b: a < 2, lambda a, b: [a + 1],
                                            [0, x]))
    with pytest.raises(ValueError, match="structure of loop_vars"):
        f(c64(1.0))


def test_nested_loops_and_a_loop_inside_a_cond():
    def inner(x):
        return tf.while_loop(lambda j, y: j < 3, lambda j, y: (j + 1, tf.sin(y) + x), (0, x))[1]

    def f(x):
        outer = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, inner(y) * 0.5), (0, x))
        return tf.cond(tf.reduce_sum(x) > 0, lambda: inner(outer[1]), lambda: outer[1])
    g = tf.function(f)
    for v in ([0.2, 0.6], [-0.2, -0.6]):
        x = c64(v)
        np.testing.assert_allclose(g(x).numpy(), f(x).numpy(), rtol=1e-15)
        assert_all_close(grads(g, [x]), grads(f, [x]))
        assert_all_close(grads(g, [x], order=2), grads(f, [x], order=2))


def test_loop_gradient_reaches_variables_read_in_the_body():
    v = tf.Variable(np.array([0.5, -0.25]))

    def f(x):
        return tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, tf.tanh(y * v) + v),
                             (0, x))[1]
    g = tf.function(f)
    x = c64([1.0, 2.0])
    results = []
    for fn in (f, g):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(fn(x))
        results.append(tape.gradient(y, v).numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-13)


def test_stateful_body_runs_every_iteration():
    v = tf.Variable(0.0)

    def body(i):
        v.assign_add(2.0)
        return i + 1

    @tf.function
    def f(n):
        tf.while_loop(lambda i: i < n, body, [0])
        return v.read_value()
    assert f(tf.constant(3)).numpy() == 6.0


def test_gradient_of_a_loop_that_assigns_variables_is_a_clear_error():
    v = tf.Variable(0.0, dtype=tf.float64)

    def body(i, y):
        v.assign_add(1.0)
        return i + 1, y * v

    f = tf.function(lambda x: tf.while_loop(lambda i, y: i < 3, body, (0, x))[1])
    x = c64(2.0)
    assert f(x).numpy() == 2.0 * 1 * 2 * 3
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)  # runs (and assigns) once; the gradient would run the body again
    with pytest.raises(tf.errors.InvalidArgumentError, match="changes state.*AssignAdd"):
        tape.gradient(y, x)
    assert v.numpy() == 6.0


def test_back_prop_false_stops_the_gradient():
    f = tf.function(lambda x: tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * y),
                                            (0, x), back_prop=False)[1])
    x = c64(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert y.numpy() == 81.0 and tape.gradient(y, x) is None


# ------------------------------------------------------------------ checkpointing (§8.5)


def test_checkpoint_stride_is_about_sqrt_n():
    assert [checkpoint_stride(n) for n in (0, 1, 2, 4, 5, 100, 101, 10_000)] == \
        [1, 1, 2, 2, 3, 10, 11, 100]
    assert checkpoint_stride(10_000, 7) == 7


@pytest.mark.parametrize("k", [None, 1, 3, 50])
def test_every_checkpoint_stride_gives_the_same_gradient(k):
    f = tf.function(lambda x, n: tf.while_loop(
        lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y) * 1.1 + 0.1), (0, x),
        checkpoint_every=k)[1])
    x = c64([0.1, 0.5, 0.9])
    expected = np.ones(3)
    y = x.numpy()
    for _ in range(23):
        expected = expected * np.cos(y) * 1.1
        y = np.sin(y) * 1.1 + 0.1
    np.testing.assert_allclose(grads(lambda a: f(a, tf.constant(23)), [x])[0], expected,
                               rtol=1e-13)


def _gradient_peak_bytes(n: int, size: int) -> int:
    """Peak of traced allocations (NumPy reports its buffers to tracemalloc) while the
    gradient of an n-iteration loop over a `size`-element state is computed. tf.memory()
    cannot see this: a compiled function's intermediates are native arrays, not Tensors."""
    f = tf.function(lambda x, n: tf.reduce_sum(tf.while_loop(
        lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y)), (0, x))[1]))
    x = tf.constant(np.linspace(0.0, 1.0, size))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x, tf.constant(n))
    gc.collect()
    tracemalloc.start()
    try:
        tape.gradient(y, x)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loop_gradient_memory_grows_as_sqrt_of_the_iteration_count():
    size = 2_000
    state = size * 8
    small, large = _gradient_peak_bytes(2_500, size), _gradient_peak_bytes(10_000, size)
    # every state of 10,000 iterations would be 160 MB; about 2 sqrt(n) states are kept
    assert large < 400 * state, large
    # 4x the iterations, ~2x the memory (linear growth: 4x). (A loop short enough to
    # keep every state keeps them in its forward pass, before the measurement starts:
    # both loops here recompute from checkpoints.)
    assert large < 3 * small, (small, large)


# ------------------------------------------------------------------ odds and ends


def test_shape_invariants_follow_the_loop_vars_structure():
    f = tf.function(lambda x, y: tf.while_loop(
        lambda i, d: i < 2, lambda i, d: (i + 1, {"a": tf.tile(d["a"], [2]), "b": d["b"] + 1.0}),
        (0, {"a": x, "b": y}), shape_invariants=([], {"a": [None], "b": tf.TensorShape([2])})))
    i, d = f(c64([1.0]), c64([0.0, 0.0]))
    assert int(i) == 2 and d["a"].shape == [4] and d["b"].numpy().tolist() == [2.0, 2.0]
    g = tf.function(lambda x: tf.while_loop(lambda a, b: a < 2, lambda a, b: (a + 1, b),
                                            (0, x), shape_invariants=[[None]]))
    with pytest.raises(ValueError, match="structure of loop_vars"):
        g(c64([1.0]))


def test_graph_prints_the_control_flow_nodes():
    f = tf.function(lambda x: tf.while_loop(lambda y: tf.reduce_sum(y) < 5.0,
                                            lambda y: [tf.cond(y[0] > 1.0, lambda: y * 2.0,
                                                               lambda: y + 1.0)], [x]))
    text = str(f.get_concrete_function(c64([1.0, 2.0])).graph)
    assert "= While(" in text and "body=<ConcreteFunction while_body" in text


def test_traced_control_flow_leaves_no_tensor_behind():
    f = tf.function(_loop)
    x, w, n = c64([0.4, 0.8, -0.1]), c64(1.3), tf.constant(4)

    def run():
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            out = f(x, w, n)
            total = tf.reduce_sum(out[1].h) + out[2]["sum"]
        tape.gradient(total, [x, w])
    run()  # traces, and builds the gradient functions, once
    before = tf.memory()
    run()
    after = tf.memory()
    assert (after["num_tensors"], after["num_bytes"]) == \
        (before["num_tensors"], before["num_bytes"])
