"""Elementwise ops declare their facts for the compiler where they are defined
(`define_op(..., pointwise=Pointwise(...))`, _core/registry.py): an op defined here, with
a NumPy kernel and its facts, fuses with its neighbours with no edit to function/; and the
fused loop of every op whose expression is exact arithmetic gives the eager kernel's bits."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.errors import AlreadyExistsError
from tapeflow.function import fuse

pytestmark = pytest.mark.skipif(not fuse.available(), reason="the jit extra (numba)")


@pytest.fixture(autouse=True, scope="module")
def _compile_on_the_first_call():
    """The bits compared are the compiled loops': each compiles on its first call."""
    fuse.set_background(False)
    rent, fuse.COMPILE_AFTER_SECONDS = fuse.COMPILE_AFTER_SECONDS, 0.0
    yield
    fuse.COMPILE_AFTER_SECONDS = rent
    fuse.set_background(True)

TOY = "TestOpFactsCubic"  # x^3 + c, c an attribute
TOY_FACTS = registry.Pointwise("{x} * {x} * {x} + T({c})", attrs=("c",))


def _same_shape(shapes, dtypes, attrs):
    return [(shapes["x"], dtypes["x"])]


def _define_toy(pointwise):
    registry.define_op(TOY, ["x"], shape=_same_shape,
                       vjp={"x": lambda g, x: g * (3.0 * x * x)}, pointwise=pointwise)


@pytest.fixture
def toy_op():
    # ((x * x) * x) + c in the dtype: the order the fused expression computes
    tf.register_kernel(TOY, "numpy", lambda inputs, attrs, backend:
                       inputs["x"] * inputs["x"] * inputs["x"] + attrs["c"])
    try:
        _define_toy(TOY_FACTS)
        yield lambda x, c: tf.engine.run_kernel(TOY, {"x": x}, {"c": c})
    finally:
        tf.unregister_kernel(TOY, "numpy")
        registry.undefine_op(TOY)


def _fused_members(cf) -> list:
    return [n.attrs["members"] for n in cf.optimized_graph.get_operations()
            if n.op == "FusedElementwise"]


def test_a_toy_op_with_its_facts_fuses_with_other_elementwise_ops(toy_op):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = toy_op(x * 0.5 - 0.25, c=0.75)
            loss = tf.reduce_sum(y * y - x)
        return y, tape.gradient(loss, x)

    x0 = np.linspace(-2.0, 2.0, 600).reshape(20, 30)
    x = tf.constant(x0)
    traced = tf.function(step)
    members = _fused_members(traced.get_concrete_function(x))
    # (a) in one loop with the ops around it (the Mul and Sub before, the Mul after)
    assert any(TOY in m and "Mul" in m and "Sub" in m for m in members), members
    # (b) values and gradients: closed forms in float64
    u = x0 * 0.5 - 0.25
    want_y = u ** 3 + 0.75
    want_g = 2.0 * want_y * 3.0 * u * u * 0.5 - 1.0
    y, g = traced(x)
    kernels = [n.attrs["kernel"] for n in traced.get_concrete_function(x)
               .optimized_graph.get_operations() if n.op == "FusedElementwise"]
    assert all(k._ready.get(0) is True for k in kernels)  # the compiled loops ran
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-13, atol=1e-13)
    eager_y, eager_g = step(x)  # the same bits as the eager kernels
    assert np.array_equal(y.numpy(), eager_y.numpy())
    # (c) the facts alone decide: the same op without them stays out of the loops, and
    # nothing in function/ names it
    registry.undefine_op(TOY)
    _define_toy(None)
    plain = tf.function(step).get_concrete_function(x)
    assert not any(TOY in m for m in _fused_members(plain))
    assert TOY in [n.op for n in plain.optimized_graph.get_operations()]
    folder = os.path.dirname(fuse.__file__)
    for name in os.listdir(folder):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                assert TOY not in f.read(), name


def test_facts_follow_the_registry_rules(toy_op):
    with pytest.raises(AlreadyExistsError, match="already registered at"):
        registry.declare_pointwise(TOY, TOY_FACTS)
    registry.declare_pointwise(TOY, registry.Pointwise("{x} * {x} * {x} + T({c})",
                                                       attrs=("c",), multi_pass=True),
                               override=True)
    assert registry.POINTWISE[TOY].multi_pass and registry.POINTWISE[TOY].inputs == ("x",)
    with pytest.raises(ValueError, match=f"pointwise facts of {TOY}.*reads \\['z'\\]"):
        registry.declare_pointwise(TOY, registry.Pointwise("{x} * {z}"), override=True)
    with pytest.raises(ValueError, match="inputs \\['y'\\] are not among"):
        registry.declare_pointwise(TOY, registry.Pointwise("{y}", inputs=("y",)),
                                   override=True)


def test_the_compiler_tables_are_gone():
    from tapeflow.function import executor, vmath
    assert not hasattr(fuse, "EXPRESSIONS") and not hasattr(fuse, "MULTI_PASS")
    assert not hasattr(executor, "IN_PLACE") and not hasattr(vmath, "OPS")
    facts = registry.POINTWISE
    assert facts["Add"].ufunc is np.add and facts["AddN"].inputs == ("inputs",)
    assert {op for op, f in facts.items() if f.vector_math} == {
        "Exp", "Tanh", "Sigmoid", "Log", "Log1p", "Expm1", "Softplus", "Erf", "Erfc", "Elu",
        "SigmoidCrossEntropyWithLogits"}
    # each declared at its op's definition
    sites = {op: (registry._SITES[("pointwise", op)], registry.OPS[op].site) for op in facts}
    assert {op: s for op, s in sites.items() if s[0] != s[1]} == {}


# --------------------------------------------------------------- same bits, eager and fused

def _unary(op):
    return lambda a: tf.engine.run_kernel(op, {"x": a["x"]})


def _binary(op, x="x", y="y"):
    return lambda a: tf.engine.run_kernel(op, {x: a["x"], y: a["y"]})


def _masked_grad(op, other):
    return lambda a: tf.engine.run_kernel(op, {"dy": a["y"], other: a["x"]})


# every op whose fused expression is exact IEEE arithmetic, comparisons and rounding;
# (the transcendental ones call numba's (the C library's) functions or vmath's
# polynomials, not NumPy's loops: equal to rounding only, tests/function/test_fuse.py)
EXACT = {
    "Add": _binary("Add"), "Sub": _binary("Sub"), "Mul": _binary("Mul"),
    "RealDiv": _binary("RealDiv"), "Maximum": _binary("Maximum"),
    "Minimum": _binary("Minimum"), "SquaredDifference": _binary("SquaredDifference"),
    "Neg": _unary("Neg"), "Abs": _unary("Abs"), "Square": _unary("Square"),
    "Sqrt": _unary("Sqrt"), "Rsqrt": _unary("Rsqrt"), "Reciprocal": _unary("Reciprocal"),
    "Relu": _unary("Relu"), "Relu6": _unary("Relu6"), "Softsign": _unary("Softsign"),
    "Floor": _unary("Floor"), "Ceil": _unary("Ceil"), "Round": _unary("Round"),
    "Sign": _unary("Sign"),
    "LeakyRelu": lambda a: tf.engine.run_kernel("LeakyRelu", {"x": a["x"]}, {"alpha": 0.2}),
    "LeakyReluSteep": lambda a: tf.engine.run_kernel("LeakyRelu", {"x": a["x"]},
                                                     {"alpha": 1.7}),
    "ReluGrad": _masked_grad("ReluGrad", "y"), "Relu6Grad": _masked_grad("Relu6Grad", "y"),
    "LeakyReluGrad": lambda a: tf.engine.run_kernel("LeakyReluGrad",
                                                    {"dy": a["y"], "x": a["x"]},
                                                    {"alpha": 0.3}),
    "TanhGrad": lambda a: tf.engine.run_kernel("TanhGrad", {"y": a["x"], "dy": a["y"]}),
    "SigmoidGrad": lambda a: tf.engine.run_kernel("SigmoidGrad", {"y": a["x"], "dy": a["y"]}),
    "AddN": lambda a: tf.add_n([a["x"], a["y"], a["x"]]),
}


def _all_exact(x, y):
    outs = [f({"x": x, "y": y}) for f in EXACT.values()]
    total = outs[0]
    for o in outs[1:]:  # (ties every op into one region; each output leaves it too)
        total = total + o
    return outs + [total]


def _special_values(dtype) -> tuple:
    rng = np.random.default_rng(3)
    edges = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 6.0, -6.0, 0.5, -0.5,
                      1.5, 2.5, -2.5, 1e-310, -1e-310, 1e-45, -1e-45, 1e30, -1e30])
    x = np.concatenate([edges, rng.normal(size=400) * 4, rng.uniform(5.9, 6.1, 61)])
    y = np.concatenate([edges[::-1], rng.normal(size=400), rng.normal(size=61)])
    y[-30:] = x[-30:]  # ties: Maximum and Minimum of equal values
    y[:4] = [-0.0, 0.0, 0.0, -0.0]
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_ops_give_the_eager_kernels_bits_when_fused(dtype):
    x0, y0 = _special_values(dtype)
    x, y = tf.constant(x0), tf.constant(y0)
    traced = tf.function(_all_exact)
    members = _fused_members(traced.get_concrete_function(x, y))
    fused_ops = set().union(*members) if members else set()
    want_ops = {"LeakyRelu" if n == "LeakyReluSteep" else n for n in EXACT}
    assert want_ops <= fused_ops, sorted(want_ops - fused_ops)
    with np.errstate(all="ignore"):
        eager = _all_exact(x, y)
    fused = traced(x, y)
    kernels = [n.attrs["kernel"] for n in traced.get_concrete_function(x, y)
               .optimized_graph.get_operations() if n.op == "FusedElementwise"]
    assert all(k._ready.get(0) is True for k in kernels)  # the compiled loops ran
    uint = np.uint32 if dtype == np.float32 else np.uint64
    for name, a, b in zip(list(EXACT) + ["total"], fused, eager):
        got, want = a.numpy().view(uint), b.numpy().view(uint)
        where = np.nonzero(got != want)[0][:3]
        assert not where.size, (name, x0[where], y0[where], a.numpy()[where],
                                b.numpy()[where])


def test_a_declared_ufunc_runs_in_place_into_a_dying_operand():
    # floor(x * 2) - ceil(x) + sign(x): each op's input dies there, so its ufunc writes
    # into that input's buffer (jit_compile=False: no fused loop takes them)
    def f(x):
        return tf.sign(tf.floor(x * 2.0) - tf.math.ceil(x))

    x0 = np.array([-1.75, -0.5, -0.0, 0.0, 0.25, 1.5, np.nan, np.inf])
    cf = tf.function(f, jit_compile=False).get_concrete_function(tf.constant(x0))
    source = cf._program(tf.find_backend("numpy")).source
    assert source.count(", out=") >= 2, source  # (ceil's input is the caller's x: kept)
    with np.errstate(invalid="ignore"):  # (inf - inf)
        want = np.sign(np.floor(x0 * 2.0) - np.ceil(x0))
        got = cf(tf.constant(x0)).numpy()
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (got, want)
