"""The higher-order ops own their execution (#29): If, While and WhileGrad run through
function/control.py on every backend (the array-API backend takes the same code as
NumPy's), their bodies are compiled with the public `ConcreteFunction.compile`, optimized
and fused like any graph, and no backend module knows about graphs. Values against closed
forms in float64."""
from __future__ import annotations

import pathlib
import re
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import backends, dispatch, registry
from tapeflow.function import control
from tapeflow.function.fuse import available as fuse_available

array_api_strict = pytest.importorskip("array_api_strict")
Strict = type(array_api_strict.asarray(0.0))
BACKENDS = pathlib.Path(tf.__file__).parent / "backends"


@pytest.fixture
def strict():
    """The array-API backend (over array-api-strict) active for the test."""
    assert tf.set_backend("array_api")
    try:
        yield tf.find_backend("array_api")
    finally:
        tf.set_backend("numpy")


def _cond_fn():
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.sin(x) * x, lambda: x * x)
        return y, tape.gradient(y, x)
    return f


def _loop_fn():
    """v <- v * x + 1, five times from v = 1: v_5 = sum_{j<=5} x^j."""
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, v = tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * x + 1.0),
                                 (tf.constant(0), tf.ones_like(x)), checkpoint_every=2)
        return v, tape.gradient(v, x)
    return f


def _loop_closed_form(x):
    return (sum(x ** j for j in range(6)), sum(j * x ** (j - 1) for j in range(1, 6)))


def test_the_ops_run_the_same_function_on_every_backend(strict):
    for op, run in [("If", control.run_if), ("While", control.run_while),
                    ("WhileGrad", control.run_while_grad),
                    ("FusedElementwise", control.run_fused)]:
        assert registry.OPS[op].native is run
        for name in ("numpy", "array_api"):
            # no backend has a kernel of its own: an eager run finds the op's `native`
            assert tf.get_kernel(op, name) is None
            assert dispatch._kernel_for(op, backends.REGISTRY.find(name)) is run


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_and_its_gradient_on_the_array_api_backend(strict, sign):
    x_np = sign * np.array([0.3, 1.1, 0.7])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y, g = _cond_fn()(tf.constant(x_np))
    assert type(y._native) is Strict and type(g._native) is Strict
    if sign > 0:
        want_y, want_g = np.sin(x_np) * x_np, np.cos(x_np) * x_np + np.sin(x_np)
    else:
        want_y, want_g = x_np * x_np, 2 * x_np
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-13)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-13)
    assert not [w for w in caught if re.match(r"(If|While|WhileGrad):", str(w.message))]


def test_while_and_its_gradient_on_the_array_api_backend(strict):
    x_np = np.array([0.5, -1.5, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v, g = _loop_fn()(tf.constant(x_np))
    assert type(v._native) is Strict and type(g._native) is Strict
    want_v, want_g = _loop_closed_form(x_np)
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-13)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-13)
    # WhileGrad used to fall back to NumPy's kernel (the loop's data through the host)
    assert not [w for w in caught if re.match(r"(If|While|WhileGrad):", str(w.message))]


def test_both_backends_give_the_same_loop_values(strict):
    x_np = np.array([0.25, 0.75])
    on_strict = [t.numpy() for t in _loop_fn()(tf.constant(x_np))]
    tf.set_backend("numpy")
    on_numpy = [t.numpy() for t in _loop_fn()(tf.constant(x_np))]
    for a, b in zip(on_strict, on_numpy):
        np.testing.assert_allclose(a, b, rtol=1e-15)


def test_no_backend_module_knows_about_traced_functions():
    """Compiler logic stays in function/: a backend kernel that runs a traced body (a
    private program, a ConcreteFunction, a graph) would be the compiler in the wrong room."""
    offenders = {}
    for path in sorted(BACKENDS.rglob("*.py")):
        text = path.read_text()
        hits = [w for w in ("_program", "ConcreteFunction", "FuncGraph")
                if re.search(rf"\b{w}\b", text)]
        if hits:
            offenders[str(path.relative_to(BACKENDS))] = hits
    assert not offenders, offenders


def test_compile_is_public_cached_and_specializes_unknown_dims():
    f = tf.function(lambda x: x * 2.0 + 1.0,
                    input_signature=[tf.TensorSpec([None], tf.float64)])
    cf = f.get_concrete_function()
    assert cf.has_unknown_dims
    general = cf.compile()
    assert cf.compile() is general  # kept with the function
    assert cf.compile(tf.find_backend("numpy")) is general
    arr = np.arange(4.0)
    special = cf.compile(inputs=[arr])
    assert special is cf.compile(inputs=[np.ones(4)])  # one program per shape set
    for prog in (general, special):
        (out,) = prog([arr])
        np.testing.assert_array_equal(out, arr * 2.0 + 1.0)
    static = tf.function(lambda x: -x).get_concrete_function(tf.TensorSpec([2], tf.float64))
    assert not static.has_unknown_dims


@pytest.mark.skipif(not fuse_available(), reason="fusion needs numba")
def test_a_loop_body_is_optimized_and_fused_like_any_graph():
    """A hand-written GRU cell stepped by an autograph `for` over a tensor range: the
    body's gates, between the matmuls, are fused kernels (traced and compiled only; the
    loops are not run, so numba compiles nothing here)."""
    rng = np.random.default_rng(0)
    w = [tf.constant(rng.standard_normal((4, 4)).astype(np.float32)) for _ in range(6)]

    @tf.function
    def run(xs):
        h = tf.zeros([3, 4])
        for t in tf.range(5):
            x = xs[t]
            z = tf.sigmoid(tf.matmul(x, w[0]) + tf.matmul(h, w[1]) + 0.1)
            r = tf.sigmoid(tf.matmul(x, w[2]) + tf.matmul(h, w[3]) - 0.1)
            c = tf.tanh(tf.matmul(x, w[4]) + tf.matmul(r * h, w[5]))
            h = z * h + (1.0 - z) * c
        return h

    cf = run.get_concrete_function(tf.TensorSpec([5, 3, 4], tf.float32))
    (loop,) = [n for n in cf.graph.get_operations() if n.op == "While"]
    ops = [n.op for n in loop.attrs["body"].compile().graph.get_operations()]
    # z and r (and r * h) in one kernel; c and the new h in another, after matmul(r*h)
    assert ops.count("FusedElementwise") == 2, ops
    assert not {"Sigmoid", "Tanh", "Sub"} & set(ops), ops


def test_loop_variables_changing_shape_respecialize_the_body():
    """v grows by one element an iteration (a shape invariant with an unknown dim): the
    body's program, specialized to the shapes it is given, is compiled again for each."""
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, v = tf.while_loop(
                lambda i, v: i < 4, lambda i, v: (i + 1, tf.concat([v, v[-1:] * 2.0], 0)),
                (tf.constant(0), tf.reshape(x, [1])),
                shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
            total = tf.reduce_sum(v)
        return v, tape.gradient(total, x)

    v, g = f(tf.constant(1.5, tf.float64))
    np.testing.assert_array_equal(v.numpy(), 1.5 * np.array([1.0, 2.0, 4.0, 8.0, 16.0]))
    assert float(g) == 31.0


def test_the_gradient_recomputes_no_iteration_past_the_last_checkpoint():
    """n = 10 iterations stored every k = 3: the gradient's first pass stops at the last
    stored state (iteration 9), then each segment is recomputed once and its backward
    function run (py_function's gradient calls it again): 10 + 9 + 10 + 10 calls."""
    runs = []

    def count(v):
        runs.append(1)
        return v

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, v = tf.while_loop(
                lambda i, v: i < 10,
                lambda i, v: (i + 1, tf.py_function(count, [v], tf.float64) * 0.0 + v * x),
                (tf.constant(0), tf.ones_like(x)), checkpoint_every=3)
        return v, tape.gradient(v, x)

    v, g = f(tf.constant(1.1, tf.float64))
    np.testing.assert_allclose(float(v), 1.1 ** 10, rtol=1e-14)
    np.testing.assert_allclose(float(g), 10 * 1.1 ** 9, rtol=1e-14)
    assert len(runs) == 10 + 9 + 10 + 10


def _counting_loop(runs: list):
    """v <- v * x ten times, the body calling Python once per run (py_function)."""
    def count(v):
        runs.append(1)
        return v

    return lambda x: tf.while_loop(
        lambda i, v: i < 10,
        lambda i, v: (i + 1, tf.py_function(count, [v], tf.float64) * 0.0 + v * x),
        (tf.constant(0), tf.ones_like(x)))[1]


def test_a_loop_whose_gradient_is_traced_keeps_what_the_gradient_reads():
    """The WhileGrad is built while tracing: the forward loop runs the body's forward
    variant and keeps each iteration's saved tensors, so the gradient recomputes nothing:
    10 forward + 10 backward calls."""
    runs = []
    loop = _counting_loop(runs)

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            v = loop(x)
        return v, tape.gradient(v, x)

    v, g = f(tf.constant(1.1, tf.float64))
    np.testing.assert_allclose(float(v), 1.1 ** 10, rtol=1e-14)
    np.testing.assert_allclose(float(g), 10 * 1.1 ** 9, rtol=1e-14)
    assert len(runs) == 10 + 10


def test_a_printing_loop_prints_once_and_its_gradient_recomputes_every_iteration(capfd):
    """A body that prints runs as written (its forward variant, which prints nothing,
    cannot stand in): the gradient recomputes the iterations once, keeping them all (they
    fit in STORE_ALL_BYTES: no first pass): 10 + 10 + 10 calls, 10 lines printed."""
    runs = []

    def count(v):
        runs.append(1)
        return v

    @tf.function
    def f(x):
        def body(i, v):
            tf.print("step", i, output_stream=sys.stderr)
            return i + 1, tf.py_function(count, [v], tf.float64) * 0.0 + v * x

        with tf.GradientTape() as tape:
            tape.watch(x)
            _, v = tf.while_loop(lambda i, v: i < 10, body, (tf.constant(0), tf.ones_like(x)))
        return v, tape.gradient(v, x)

    v, g = f(tf.constant(1.1, tf.float64))
    np.testing.assert_allclose(float(g), 10 * 1.1 ** 9, rtol=1e-14)
    assert len(runs) == 10 + 10 + 10
    assert capfd.readouterr().err.count("step") == 10


def test_map_fn_and_tensor_array_loops_on_the_array_api_backend(strict):
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
            ta = tf.TensorArray(tf.float64, size=3)
            for i in tf.range(3):
                ta = ta.write(i, x[i] * 2.0)
            z = tf.reduce_sum(y) + tf.reduce_sum(ta.stack())
        return y, z, tape.gradient(z, x)

    x = np.arange(6.0).reshape(3, 2)
    y, z, g = f(tf.constant(x))
    assert type(y._native) is Strict
    np.testing.assert_allclose(y.numpy(), (x * x).sum(1), rtol=1e-15)
    np.testing.assert_allclose(float(z), (x * x).sum() + 2.0 * x.sum(), rtol=1e-15)
    np.testing.assert_allclose(g.numpy(), 2.0 * x + 2.0, rtol=1e-15)
