"""float32 exp, tanh, sigmoid, log, log1p, expm1, softplus, erf and erfc in fused loops:
within 1-3 ulp of the exact values over their whole range, IEEE special values as NumPy
gives them, and large float32 regions holding them run as one loop (not NumPy blocks)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow.function import vmath

pytestmark = pytest.mark.skipif(not jit.available(), reason="fused loops need numba")

SPECIALS = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-45, 0.624, 0.625, -0.626, 9.0, 20.0,
                     88.72, 88.73, 89.0, 100.0, -87.3, -88.0, -100.0, -103.9, -104.0,
                     -200.0, np.inf, -np.inf, np.nan], np.float32)


@pytest.fixture
def compile_now():
    before = jit.background()
    jit.set_background(False)
    yield
    jit.set_background(before)


def fused_call(op, x):
    """op(x) * y (y ones: a two-op float32 region) through a fused loop, and its kernel."""
    f = tf.function(lambda x, y: op(x) * y)
    y = tf.ones_like(x)
    out = f(x, y).numpy()
    kernels = [n.attrs["kernel"] for n in f.get_concrete_function(x, y).optimized_graph
               .get_operations() if n.op == "FusedElementwise"]
    assert len(kernels) == 1
    return out, kernels[0]


def ulps(got, exact):
    """|got - exact| in units of the float32 spacing at `exact` (finite, normal only)."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.mark.parametrize("name, op, exact, bound", [
    ("exp", tf.exp, np.exp, 1.0),
    ("tanh", tf.tanh, np.tanh, 2.0),
    ("sigmoid", tf.sigmoid, lambda v: 1 / (1 + np.exp(-v)), 3.0),
    ("log", tf.math.log, np.log, 1.0),
    ("log1p", tf.math.log1p, np.log1p, 3.0),
    ("expm1", tf.math.expm1, np.expm1, 3.0),
    ("softplus", tf.math.softplus, lambda v: np.logaddexp(0.0, v), 4.0),
    ("erf", tf.math.erf, np.vectorize(math.erf), 2.0),
    ("erfc", tf.math.erfc, np.vectorize(math.erfc), 6.0),
])
def test_float32_transcendentals_are_within_a_few_ulp(name, op, exact, bound, compile_now):
    sweep = np.concatenate([np.linspace(-110, 95, 300_001, dtype=np.float32),
                            np.geomspace(1e-44, 3e38, 20_001, dtype=np.float32),
                            np.geomspace(1e-6, 2.0, 20_001, dtype=np.float32)])
    x = np.concatenate([sweep, -sweep[-20_001:], SPECIALS])
    got, kernel = fused_call(op, tf.constant(x))
    assert kernel._ready.get(0) is True  # the fused loop ran
    with np.errstate(all="ignore"):  # (log of negative numbers: NaN, as wanted)
        want = exact(x.astype(np.float64))
    normal = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float32).tiny) & (
        np.abs(want) < np.finfo(np.float32).max)
    assert ulps(got[normal], want[normal]).max() <= bound
    # special values as NumPy's float32 functions give them (subnormals: within 3 steps
    # of 1.4e-45: the polynomial's result is rounded again as it is scaled)
    with np.errstate(all="ignore"):
        numpy = exact(x).astype(np.float32)
    np.testing.assert_allclose(got[~normal], numpy[~normal], rtol=0, atol=4.3e-45)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(numpy))


def test_numpy_blocks_call_the_loops_own_functions():
    """vmath.blocks computes exactly what a compiled loop's scalar calls give (NumPy's own
    exp or sin may differ in the last bit): float32 exp and tanh by the polynomials."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10_000) * 4).astype(np.float32)
    got = vmath.blocks.vexp(x)
    fused, kernel = fused_call(tf.exp, tf.constant(x))  # exp(x) * 1: exactly exp(x)
    assert got.tobytes() == fused.tobytes()
    np.testing.assert_allclose(got, np.exp(x), rtol=3e-7)
    assert vmath.blocks.sin(np.float64(0.5)) == np.sin(0.5)  # (NumPy scalars too)


@pytest.mark.parametrize("name", list(vmath.VECTOR))
def test_numpy_blocks_compute_vector_functions_with_the_loops_bits_without_compiling(
        name, monkeypatch):
    """The NumPy blocks of a float32 region with exp, tanh, sigmoid, log... (what runs
    before its loop compiles) use NumPy formulations of the functions until the process
    has bought numba (jit.bought): no compile on a cold cache, and the compiled loop's
    bits for every float32 (random bit patterns, NaN
    payloads and subnormals included)."""
    rng = np.random.default_rng(7)
    patterns = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([patterns.view(np.float32), SPECIALS, -SPECIALS,
                        np.linspace(-110, 95, 20_001, dtype=np.float32)])
    with np.errstate(invalid="ignore"):  # (the formulations skip work for arrays without
        positive = x[(x > 0) & np.isfinite(x)]  # special lanes: those alone too)
    module = jit.source_module(vmath._ELEMENTARY_SOURCE, "elementary")
    for values in (x, positive, x[:1].reshape(())):
        monkeypatch.setattr(jit, "bought", lambda: False)
        compiled = len(vmath._loops)
        got = vmath.blocks.__getattr__(name)(values)
        assert len(vmath._loops) == compiled  # (no elementary loop was needed)
        monkeypatch.undo()
        flat = values.reshape(-1)
        out = np.empty_like(flat)
        jit.Loop(getattr(module, f"{name}_array")).ready_now(flat, out)(flat, out)
        assert got.dtype == np.float32 and got.shape == values.shape
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint32), out.view(np.uint32))


def test_once_numba_is_bought_blocks_call_the_compiled_function_loops():
    """After the first compile of a process, a float32 region's blocks call the compiled
    loop of each function (vmath.prepare asks for it before the region's own loop):
    faster than two dozen NumPy calls on small arrays, and the same bits."""
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    before = jit.background()
    jit.set_background(False)  # (ready() compiles on this call)
    try:
        vmath.prepare(["vtanh"])
        assert jit.bought()
        got = vmath.blocks.vtanh(x)
    finally:
        jit.set_background(before)
    assert "vtanh" in vmath._loops
    assert vmath._loops["vtanh"].ready(x, np.empty_like(x)) is not None
    want = vmath._NUMPY["vtanh"](x)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_softplus_fuses_and_its_gradient_matches_eager_in_float64():
    """Softplus is an elementwise op of fused regions (its Pointwise facts): traced values
    and gradients equal eager ones to rounding, overflow-free for large |x|."""
    x = tf.constant(np.array([-800.0, -30.0, -1.0, -0.0, 0.0, 0.5, 3.0, 40.0, 800.0]))

    def f(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.math.softplus(v * 1.5) * 2.0
        return y, tape.gradient(y, v)

    traced = tf.function(f)
    members = [n.attrs["members"] for n in traced.get_concrete_function(x).optimized_graph
               .get_operations() if n.op == "FusedElementwise"]
    assert any("Softplus" in m for m in members)
    (y, g), (y0, g0) = traced(x), f(x)
    np.testing.assert_allclose(y.numpy(), y0.numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(g.numpy(), g0.numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(y0.numpy(), 2.0 * np.logaddexp(0.0, 1.5 * x.numpy()),
                               rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_fuses_with_erfc_and_matches_the_exact_values(dtype):
    """GELU (Keras's default, erf-based) is one fused region: erfc is an elementwise op
    with vmath's float32 function and the C library's in float64, values and gradients
    close to the exact ones over the whole range (tails included)."""
    x0 = np.concatenate([np.linspace(-12, 12, 2001), [-0.0, 0.0]]).astype(dtype)
    x = tf.constant(x0)

    def f(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.nn.gelu(v * 1.0)
        return y, tape.gradient(y, v)

    traced = tf.function(f)
    members = [n.attrs["members"] for n in traced.get_concrete_function(x).optimized_graph
               .get_operations() if n.op == "FusedElementwise"]
    assert any("Erfc" in m for m in members), members
    y, g = (t.numpy().astype(np.float64) for t in traced(x))
    v = x0.astype(np.float64)
    # erfc's argument as the graph rounds it (in float32 its rounding alone moves erfc's
    # far tail by 1e-5)
    arg = (x0 * dtype(-0.7071067811865476)).astype(np.float64)
    want = v * 0.5 * np.vectorize(math.erfc)(arg)
    dwant = 0.5 * np.vectorize(math.erfc)(arg) + v * np.exp(-arg * arg) / np.sqrt(2 * np.pi)
    rtol = 4e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(y, want, rtol=rtol, atol=1e-37)
    # (the gradient's two terms cancel near x = -0.75: there its error is absolute)
    np.testing.assert_allclose(g, dwant, rtol=rtol, atol=1e-7 if dtype == np.float32 else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_cross_entropy_fuses_with_its_neighbours(dtype):
    """sigmoid_cross_entropy_with_logits is an elementwise op of fused regions (a VAE's or
    Keras's from-logits binary cross-entropy): its loss and gradients equal eager ones to
    rounding, overflow-free for large |logits|."""
    rng = np.random.default_rng(5)
    logits = tf.constant((rng.standard_normal((64, 50)) * 6).astype(dtype))
    labels = tf.constant(rng.random((64, 50)).astype(dtype))

    def f(z, x):
        with tf.GradientTape() as tape:
            tape.watch([z, x])
            loss = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
                labels=z, logits=x * 2.0) * 0.5, axis=1)
        return loss, tape.gradient(loss, [z, x])

    traced = tf.function(f)
    members = [n.attrs["members"] for n in traced.get_concrete_function(labels, logits)
               .optimized_graph.get_operations() if n.op == "FusedElementwise"]
    assert any("SigmoidCrossEntropyWithLogits" in m for m in members), members
    (loss, grads), (loss0, grads0) = traced(labels, logits), f(labels, logits)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(loss.numpy(), loss0.numpy(), rtol=rtol)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_allclose(g.numpy(), g0.numpy(), rtol=rtol, atol=1e-6 * rtol)
    x = 2.0 * logits.numpy().astype(np.float64)
    z = labels.numpy().astype(np.float64)
    want = 0.5 * (np.logaddexp(0.0, x) - x * z).sum(axis=1)
    np.testing.assert_allclose(loss.numpy(), want, rtol=rtol)
