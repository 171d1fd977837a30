"""Forward mode (API §4, §3.4): ForwardAccumulator and jvp/hvp/jacfwd/hessian, checked
against central differences and closed forms."""
import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import context, tensor as _tensor_mod
from tapeflow.autodiff import forward
from tapeflow.autodiff.forward import ForwardAccumulator

# Built-in differentiable ops allowed to have no explicit JVP rule (forward mode then
# transposes their VJP, which costs a second backward pass), with the reason.
FALLBACK_ALLOWED: dict[str, str] = {
    "CustomGradient": "the user gives only a VJP (grad_fn); forward mode transposes it, as TF",
    "RecomputeGrad": "its VJP re-runs the user's function; forward mode transposes it",
    "FusedBatchNormGrad": "batch norm's gradient op, met by forward mode only in forward-"
                          "over-reverse (a Hessian-vector product); its VJP is written over "
                          "primitives, so the transposed VJP is exact",
}


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def fd_jvp(f, xs, vs, h=1e-6):
    """Central difference of f along the direction vs (NumPy in, NumPy out)."""
    plus = f(*[c64(x + h * v) for x, v in zip(xs, vs)]).numpy()
    minus = f(*[c64(x - h * v) for x, v in zip(xs, vs)]).numpy()
    return (plus - minus) / (2 * h)


def clean_state():
    return not context.ctx.accs and not context.ctx.tapes and not context.ctx.active


# --------------------------------------------------------------------------- values


def composed(x, y):
    z = tf.sin(x) * y + tf.exp(tf.cos(x * y))
    return tf.reduce_sum(tf.tanh(z) * z, axis=0) + tf.matmul(tf.reshape(x, [1, -1]),
                                                             tf.reshape(y, [-1, 1]))[0]


def test_jvp_matches_finite_differences_on_composed_function():
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, (3,)), rng.uniform(-1, 1, (3,))]
    vs = [rng.standard_normal(3), rng.standard_normal(3)]
    x, y = c64(xs[0]), c64(xs[1])
    with ForwardAccumulator([x, y], [c64(vs[0]), c64(vs[1])]) as acc:
        out = composed(x, y)
    np.testing.assert_allclose(acc.jvp(out).numpy(), fd_jvp(composed, xs, vs),
                               rtol=1e-7, atol=1e-8)


def test_jvp_closed_form_and_structures():
    x, y = c64([0.3, 1.2]), c64(2.0)
    tx, ty = c64([1.0, -2.0]), c64(0.5)
    with ForwardAccumulator({"x": x, "y": [y]}, {"x": tx, "y": [ty]}) as acc:
        a = tf.sin(x) * x          # (cos x * x + sin x) tx
        b = y * y * x              # 2 y x ty + y^2 tx
    got = acc.jvp({"a": a, "pair": (b, x)})
    xn = x.numpy()
    np.testing.assert_allclose(got["a"].numpy(), (np.cos(xn) * xn + np.sin(xn)) * tx.numpy())
    np.testing.assert_allclose(got["pair"][0].numpy(), 2 * 2.0 * xn * 0.5 + 4.0 * tx.numpy())
    assert got["pair"][1] is tx   # a primal's JVP is its tangent
    assert isinstance(got["pair"], tuple)


def test_functional_jvp_pytrees():
    x = c64([0.1, 0.7])
    params = {"w": c64(1.5), "b": [c64(-0.5)]}

    def f(x, p):
        return {"y": tf.sin(x * p["w"]) + p["b"][0]}

    out, tan = tf.autodiff.jvp(f, (x, params), (c64([1.0, 0.0]),
                                                {"w": c64(1.0), "b": [c64(2.0)]}))
    xn = x.numpy()
    np.testing.assert_allclose(out["y"].numpy(), np.sin(xn * 1.5) - 0.5)
    expected = np.cos(xn * 1.5) * (np.array([1.0, 0.0]) * 1.5 + xn * 1.0) + 2.0
    np.testing.assert_allclose(tan["y"].numpy(), expected)


def test_functional_jvp_same_tensor_twice_gives_each_its_own_tangent():
    x = c64(0.5)
    _, t = tf.autodiff.jvp(lambda a, b: a * tf.sin(b), (x, x), (c64(1.0), c64(0.0)))
    np.testing.assert_allclose(t.numpy(), np.sin(0.5))   # only d/da


# --------------------------------------------------------------------------- nesting


def test_forward_over_forward_second_and_third_derivatives():
    xn = np.array([0.3, -1.1, 2.0])
    x = c64(xn)
    with ForwardAccumulator(x, c64(np.ones(3))) as outer:
        with ForwardAccumulator(x, c64(np.ones(3))) as inner:
            y = tf.sin(x)
            e = tf.exp(x * 2.0)       # rule reads the output: outer must see it first
        dy, de = inner.jvp(y), inner.jvp(e)
    np.testing.assert_allclose(dy.numpy(), np.cos(xn))
    np.testing.assert_allclose(outer.jvp(dy).numpy(), -np.sin(xn))
    np.testing.assert_allclose(outer.jvp(de).numpy(), 4 * np.exp(2 * xn))
    # third order: three nested accumulators
    with ForwardAccumulator(x, c64(np.ones(3))) as a1:
        with ForwardAccumulator(x, c64(np.ones(3))) as a2:
            with ForwardAccumulator(x, c64(np.ones(3))) as a3:
                y = tf.sin(x)
            d1 = a3.jvp(y)
        d2 = a2.jvp(d1)
    np.testing.assert_allclose(a1.jvp(d2).numpy(), -np.cos(xn))
    assert clean_state()


def test_inner_accumulator_is_invisible_to_itself_but_seen_by_outer():
    x = c64(0.4)
    with ForwardAccumulator(x, c64(1.0)) as outer:
        with ForwardAccumulator(x, c64(1.0)) as inner:
            y = x * x
    # the inner tangent 2x is a function of x: its outer tangent is 2
    np.testing.assert_allclose(inner.jvp(y).numpy(), 0.8)
    np.testing.assert_allclose(outer.jvp(inner.jvp(y)).numpy(), 2.0)
    # tangents of the inner's rule ops are kept by the outer only
    assert inner.jvp(inner.jvp(y)) is None


def hvp_closed_form(a, x, v):
    s = np.tanh(a @ x)
    return a.T @ (2 * (1 - s ** 2) * (1 - 3 * s ** 2) * (a @ v))


def test_forward_over_reverse_hvp_matches_reverse_over_reverse_and_closed_form():
    rng = np.random.default_rng(1)
    an, xn, vn = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    a = c64(an)

    def f(x):
        return tf.reduce_sum(tf.square(tf.tanh(tf.linalg.matvec(a, x))))

    x, v = c64(xn), c64(vn)
    with ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    fwd_rev = acc.jvp(g).numpy()
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        gv = tf.reduce_sum(g * v)
    rev_rev = outer.gradient(gv, x).numpy()
    np.testing.assert_allclose(fwd_rev, hvp_closed_form(an, xn, vn), rtol=1e-10)
    np.testing.assert_allclose(rev_rev, fwd_rev, rtol=1e-10)
    np.testing.assert_allclose(tf.autodiff.hvp(f, x, v).numpy(), fwd_rev, rtol=1e-12)
    assert clean_state()


def test_reverse_over_forward():
    xn, vn = np.array([0.2, -0.7, 1.3]), np.array([1.0, 2.0, -1.0])
    x, v = c64(xn), c64(vn)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with ForwardAccumulator(x, v) as acc:
            y = tf.reduce_sum(tf.sin(x) * x)
        jv = acc.jvp(y)    # sum((cos x * x + sin x) v)
    g = tape.gradient(jv, x).numpy()
    np.testing.assert_allclose(g, (2 * np.cos(xn) - np.sin(xn) * xn) * vn, rtol=1e-12)


def test_hvp_structures_and_hessian():
    xn, yn = np.array([0.5, -0.3]), np.array(1.7)

    def f(p):
        return tf.reduce_sum(p["x"] * p["x"] * p["x"]) * p["y"]

    p = {"x": c64(xn), "y": c64(yn)}
    got = tf.autodiff.hvp(f, (p,), ({"x": c64([1.0, 0.0]), "y": c64(1.0)},))[0]
    # H = [[6 x y diag, 3x^2], [3x^2^T, 0]]
    np.testing.assert_allclose(got["x"].numpy(), [6 * 0.5 * 1.7 + 3 * 0.25, 3 * 0.09])
    np.testing.assert_allclose(got["y"].numpy(), 3 * 0.25)
    bare = tf.autodiff.hvp(f, p, {"x": c64([1.0, 0.0]), "y": c64(1.0)})  # one dict argument
    np.testing.assert_allclose(bare["x"].numpy(), got["x"].numpy())
    np.testing.assert_allclose(bare["y"].numpy(), got["y"].numpy())

    h = tf.autodiff.hessian(lambda x: tf.reduce_sum(tf.sin(x) * x[0]))(c64(xn))
    expected = np.diag(-np.sin(xn) * xn[0])
    expected[0] += np.cos(xn)
    expected[:, 0] += np.cos(xn)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-12)

    hx = tf.autodiff.hessian(f)(p)
    np.testing.assert_allclose(hx["x"]["x"].numpy(), np.diag(6 * xn * yn))
    np.testing.assert_allclose(hx["x"]["y"].numpy(), 3 * xn ** 2)
    np.testing.assert_allclose(hx["y"]["x"].numpy(), 3 * xn ** 2)
    np.testing.assert_allclose(hx["y"]["y"].numpy(), 0.0)

    h2 = tf.autodiff.hessian(lambda a, b: tf.reduce_sum(a * a) * b, argnums=(0, 1))(
        c64(xn), c64(yn))
    np.testing.assert_allclose(h2[0][0].numpy(), 2 * yn * np.eye(2))
    np.testing.assert_allclose(h2[0][1].numpy(), 2 * xn)
    np.testing.assert_allclose(h2[1][0].numpy(), 2 * xn)
    np.testing.assert_allclose(h2[1][1].numpy(), 0.0)


def test_jacfwd_matches_closed_form():
    xn = np.array([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]])
    jac = tf.autodiff.jacfwd(lambda x: tf.sin(x))(c64(xn))
    expected = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for j in range(3):
            expected[i, j, i, j] = np.cos(xn[i, j])
    np.testing.assert_allclose(jac.numpy(), expected)
    an = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    j0, j1 = tf.autodiff.jacfwd(lambda a, x: tf.linalg.matvec(a, x), argnums=(0, 1))(
        c64(an), c64([1.0, -1.0, 2.0]))
    np.testing.assert_allclose(j1.numpy(), an)
    expected = np.zeros((2, 2, 3))
    expected[0, 0] = expected[1, 1] = [1.0, -1.0, 2.0]
    np.testing.assert_allclose(j0.numpy(), expected)
    both = tf.autodiff.jacfwd(lambda p: {"s": tf.reduce_sum(p[0] * p[1])})([c64(2.0),
                                                                          c64(3.0)])
    np.testing.assert_allclose([both["s"][0].numpy(), both["s"][1].numpy()], [3.0, 2.0])


def test_jacfwd_agrees_with_reverse_jacobian():
    rng = np.random.default_rng(5)
    xn = rng.uniform(-1, 1, (4,))

    def f(x):
        return tf.tanh(x[:3] * x[1:]) + tf.exp(x[:3])

    fwd = tf.autodiff.jacfwd(f)(c64(xn)).numpy()
    x = c64(xn)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(fwd, tape.jacobian(y, x).numpy(), rtol=1e-12)


# --------------------------------------------------------------------------- variables


def test_variables_as_primals():
    var = tf.Variable(np.array([0.5, 1.5]))
    other = tf.Variable(np.array([2.0, 3.0]))
    with ForwardAccumulator(var, c64([1.0, -1.0])) as acc:
        y = tf.sin(var) * other
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos([0.5, 1.5]) * [1.0, -1.0] * [2, 3])
    np.testing.assert_allclose(acc.jvp(var).numpy(), [1.0, -1.0])
    assert acc.jvp(other) is None
    np.testing.assert_allclose(
        acc.jvp(other, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    # a read after exit is not accumulated
    z = var * 2.0
    assert acc.jvp(z) is None


# --------------------------------------------------------------------------- memory


def test_tangents_released_when_tensors_die():
    x = c64(np.linspace(0, 1, 8))
    with ForwardAccumulator(x, c64(np.ones(8))) as acc:
        y = x
        for _ in range(200):
            y = tf.sin(y) * 1.01 + 0.1
        # only the live chain (x, y) carries tangents; intermediates are gone
        assert len(acc._tangents) <= 4
        kept = tf.sin(y)
        n = len(acc._tangents)
        del kept
        assert len(acc._tangents) == n - 1
    assert acc.jvp(y) is not None
    del y
    assert len(acc._tangents) == 1  # the primal x
    before = tf.memory()["num_tensors"]
    del acc
    gc.collect()
    assert tf.memory()["num_tensors"] <= before


def test_accumulator_garbage_removes_its_death_listener():
    base = len(_tensor_mod.death_listeners)
    acc = ForwardAccumulator(c64(1.0), c64(1.0))
    assert len(_tensor_mod.death_listeners) == base + 1
    del acc
    gc.collect()
    assert len(_tensor_mod.death_listeners) == base


def test_tangents_survive_tidy_with_their_primal():
    x = c64([1.0, 2.0])
    with ForwardAccumulator(x, c64([1.0, 1.0])) as acc:
        y = tf.tidy(lambda: tf.sin(x) * 2.0)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2 * np.cos([1.0, 2.0]))


# --------------------------------------------------------------------------- batching


def test_batched_equals_stacked_single_jvps():
    rng = np.random.default_rng(2)
    xs = [rng.uniform(-1, 1, (3,)), rng.uniform(-1, 1, (3,))]
    tangents = [rng.standard_normal((5, 3)), rng.standard_normal((5, 3))]
    x, y = c64(xs[0]), c64(xs[1])
    with ForwardAccumulator([x, y], [c64(t) for t in tangents], use_batch=True) as acc:
        out = composed(x, y)
        col = tf.reshape(x, [3, 1]) * y     # broadcasting [3,1] * [3] -> [3, 3]
    got, got_col = acc.jvp(out).numpy(), acc.jvp(col).numpy()
    assert got.shape == (5,) + tuple(out.shape) and got_col.shape == (5, 3, 3)
    for b in range(5):
        with ForwardAccumulator([x, y], [c64(tangents[0][b]), c64(tangents[1][b])]) as one:
            out1 = composed(x, y)
            col1 = tf.reshape(x, [3, 1]) * y
        np.testing.assert_allclose(got[b], one.jvp(out1).numpy(), rtol=1e-12)
        np.testing.assert_allclose(got_col[b], one.jvp(col1).numpy(), rtol=1e-12)


def test_batched_contribution_alignment_for_broadcast_inputs():
    # x [3] broadcast against y [2, 3]: the tangent [B, 3] must align after the batch dim
    x, y = c64([1.0, 2.0, 3.0]), c64(np.ones((2, 3)))
    t = c64(np.arange(12.0).reshape(4, 3))
    with ForwardAccumulator(x, t, use_batch=True) as acc:
        z = x + y
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.broadcast_to(t.numpy()[:, None], (4, 2, 3)))


# --------------------------------------------------------------------------- semantics


def test_unconnected_gives_none_or_zeros():
    x, u = c64([1.0, 2.0]), c64([3.0])
    with ForwardAccumulator(x, c64([1.0, 1.0])) as acc:
        y = u * 2.0
        n = tf.cast(x, tf.int32) if hasattr(tf, "cast") else None
    assert acc.jvp(y) is None
    assert acc.jvp([y, u]) == [None, None]
    zeros = acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(zeros.numpy(), [0.0])
    if n is not None:
        assert acc.jvp(n) is None
    with ForwardAccumulator(x, c64(np.ones((4, 2))), use_batch=True) as bacc:
        y = u * 2.0
    assert bacc.jvp(y, unconnected_gradients="zero").shape == (4, 1)


def test_watching_twice_adds():
    x = c64(2.0)
    acc = ForwardAccumulator(x, c64(1.0))
    acc.watch(x, c64(0.5))
    with acc:
        y = x * 3.0
    np.testing.assert_allclose(acc.jvp(x).numpy(), 1.5)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 4.5)


def test_errors_for_mismatched_tangents():
    x = c64([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        ForwardAccumulator(x, c64([1.0, 2.0, 3.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        ForwardAccumulator(x, tf.constant([1.0, 2.0], dtype=tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch"):
        ForwardAccumulator(x, c64([1.0, 2.0]), use_batch=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch size"):
        ForwardAccumulator([x, x * 1.0], [c64(np.ones((2, 2))), c64(np.ones((3, 2)))],
                           use_batch=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than once"):
        ForwardAccumulator([x, x], [c64([1.0, 2.0]), c64([1.0, 2.0])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="leaves"):
        ForwardAccumulator([x], [])
    assert clean_state()


def test_engine_state_intact_after_errors_inside_block():
    x = c64([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        with ForwardAccumulator(x, c64([1.0, 1.0])):
            tf.add(x, c64([1.0, 2.0, 3.0]))
    assert clean_state()
    tf.register_kernel("FwdTestBadJvp", "numpy", lambda i, a, b: i["x"] * 2, override=True)
    tf.register_jvp("FwdTestBadJvp", lambda p, t, a: 1 / 0, override=True)
    with pytest.raises(ZeroDivisionError):
        with ForwardAccumulator(x, c64([1.0, 1.0])) as outer:
            with ForwardAccumulator(x, c64([1.0, 1.0])):
                tf.engine.run_kernel("FwdTestBadJvp", {"x": x})
    assert clean_state()
    # everything still works afterwards
    with ForwardAccumulator(x, c64([1.0, 1.0])) as acc:
        y = tf.sin(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos([1.0, 2.0]))
    del outer


# --------------------------------------------------------------------------- user ops


def _register_cube():
    tf.register_kernel("FwdTestCube", "numpy", lambda i, a, b: i["x"] ** 3, override=True)
    tf.register_gradient("FwdTestCube", lambda dy, saved, attrs:
                         {"x": dy * 3.0 * saved[0] * saved[0]}, inputs_to_save=["x"],
                         override=True)


def test_user_op_with_only_a_gradient_uses_the_vjp_transpose():
    _register_cube()
    xn = np.array([0.5, -2.0])
    x = c64(xn)
    with ForwardAccumulator(x, c64([1.0, 3.0])) as acc:
        y = tf.engine.run_kernel("FwdTestCube", {"x": x})
    np.testing.assert_allclose(acc.jvp(y).numpy(), 3 * xn ** 2 * [1.0, 3.0])
    assert "FwdTestCube" in forward.fallback_ops()
    # batched and second order go through the same transpose
    with ForwardAccumulator(x, c64([[1.0, 0.0], [0.0, 1.0]]), use_batch=True) as bacc:
        y = tf.engine.run_kernel("FwdTestCube", {"x": x})
    np.testing.assert_allclose(bacc.jvp(y).numpy(), np.diag(3 * xn ** 2))
    with ForwardAccumulator(x, c64([1.0, 1.0])) as outer:
        with ForwardAccumulator(x, c64([1.0, 1.0])) as inner:
            y = tf.engine.run_kernel("FwdTestCube", {"x": x})
        d = inner.jvp(y)
    np.testing.assert_allclose(outer.jvp(d).numpy(), 6 * xn)


def test_user_multi_output_op_through_the_transpose():
    tf.register_kernel("FwdTestSinDouble", "numpy",
                       lambda i, a, b: [np.sin(i["x"]), i["x"] * 2.0], override=True)
    tf.register_gradient("FwdTestSinDouble", lambda dy, saved, attrs:
                         {"x": dy[0] * tf.cos(saved[0]) + dy[1] * 2.0},
                         inputs_to_save=["x"], override=True)
    x = c64([0.2, 0.9])
    with ForwardAccumulator(x, c64([1.0, -1.0])) as acc:
        s, d = tf.engine.run_kernel("FwdTestSinDouble", {"x": x})
    np.testing.assert_allclose(acc.jvp(s).numpy(), np.cos([0.2, 0.9]) * [1.0, -1.0])
    np.testing.assert_allclose(acc.jvp(d).numpy(), [2.0, -2.0])
    tangents = np.array([[1.0, -1.0], [0.5, 2.0], [0.0, 3.0]])
    with ForwardAccumulator(x, c64(tangents), use_batch=True) as bacc:
        s, d = tf.engine.run_kernel("FwdTestSinDouble", {"x": x})
    np.testing.assert_allclose(bacc.jvp(s).numpy(), np.cos([0.2, 0.9]) * tangents)
    np.testing.assert_allclose(bacc.jvp(d).numpy(), 2 * tangents)


def test_transpose_with_two_inputs_one_watched():
    tf.register_kernel("FwdTestAxpy", "numpy", lambda i, a, b: a["alpha"] * i["x"] + i["y"],
                       override=True)
    tf.register_gradient("FwdTestAxpy", lambda dy, saved, attrs:
                         {"x": dy * attrs["alpha"], "y": tf.reduce_sum(dy)},
                         override=True)
    x, y = c64([1.0, 2.0]), c64(5.0)
    with ForwardAccumulator(y, c64(2.0)) as acc:
        z = tf.engine.run_kernel("FwdTestAxpy", {"x": x, "y": y}, {"alpha": 3.0})
    np.testing.assert_allclose(acc.jvp(z).numpy(), [2.0, 2.0])
    with ForwardAccumulator([x, y], [c64([[1.0, 0.0], [0.0, 1.0]]), c64([1.0, 1.0])],
                            use_batch=True) as bacc:
        z = tf.engine.run_kernel("FwdTestAxpy", {"x": x, "y": y}, {"alpha": 3.0})
    np.testing.assert_allclose(bacc.jvp(z).numpy(), [[4.0, 1.0], [1.0, 4.0]])


def test_register_jvp_rule_is_used():
    calls = []
    tf.register_kernel("FwdTestSquare", "numpy", lambda i, a, b: i["x"] * i["x"],
                       override=True)

    def square_jvp(primals, tangents, attrs):
        calls.append(sorted(tangents))
        return 2.0 * primals["x"] * tangents["x"]

    tf.register_jvp("FwdTestSquare", square_jvp, override=True)
    x = c64([1.5, -1.0])
    before = forward.FALLBACK_COUNTS.get("FwdTestSquare", 0)
    with ForwardAccumulator(x, c64([1.0, 2.0])) as acc:
        y = tf.engine.run_kernel("FwdTestSquare", {"x": x})
    np.testing.assert_allclose(acc.jvp(y).numpy(), [3.0, -4.0])
    assert calls == [["x"]]
    assert forward.FALLBACK_COUNTS.get("FwdTestSquare", 0) == before


def test_list_inputs_get_lists_of_tangents():
    x, y = c64([1.0, 2.0]), c64([3.0])
    with ForwardAccumulator(x, c64([1.0, -1.0])) as acc:
        c = tf.concat([x, y, x], axis=0)
        s = tf.add_n([x, x, tf.sin(x)])
    np.testing.assert_allclose(acc.jvp(c).numpy(), [1.0, -1.0, 0.0, 1.0, -1.0])
    np.testing.assert_allclose(acc.jvp(s).numpy(), (2 + np.cos([1.0, 2.0])) * [1, -1])


def test_builtin_ops_without_jvp_are_few_and_justified():
    missing = sorted(set(forward.ops_without_jvp()) - set(FALLBACK_ALLOWED))
    assert not missing, f"built-in ops with no JVP rule (forward mode transposes their VJP): " \
        f"{missing}; give them a jvp= rule or justify them in FALLBACK_ALLOWED"
    assert len(FALLBACK_ALLOWED) <= 5


def test_accumulators_are_per_thread():
    import threading
    x = c64([1.0, 2.0])
    seen = {}

    def other():
        seen["accs"] = list(context.ctx.accs)
        y = tf.sin(x)
        seen["y"] = y

    with ForwardAccumulator(x, c64([1.0, 1.0])) as acc:
        th = threading.Thread(target=other)
        th.start()
        th.join()
        z = tf.sin(x)
    assert seen["accs"] == []
    assert acc.jvp(seen["y"]) is None
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.cos([1.0, 2.0]))


def test_custom_gradient_transposed_batched_nested_and_with_variables():
    @tf.custom_gradient
    def f(x):
        return tf.sin(x), lambda dy: dy * tf.cos(x)

    xn = np.array([0.3, 0.8])
    x = c64(xn)
    with ForwardAccumulator(x, c64(np.eye(2)), use_batch=True) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.diag(np.cos(xn)))
    with ForwardAccumulator(x, c64([1.0, 1.0])) as outer:
        with ForwardAccumulator(x, c64([1.0, 1.0])) as inner:
            y = f(x)
        d = inner.jvp(y)
    np.testing.assert_allclose(outer.jvp(d).numpy(), -np.sin(xn))

    v = tf.Variable(2.0, dtype=tf.float64)

    @tf.custom_gradient
    def g(x):
        return x * v, lambda dy, variables=None: (dy * v, [dy * x])

    with ForwardAccumulator(v, c64(1.0)) as acc:
        y = g(c64(3.0))
    np.testing.assert_allclose(acc.jvp(y).numpy(), 3.0)
