"""Tests generated from the op table: values against NumPy/SciPy references, shape rules
against real kernels (also with unknown dimensions), VJP, JVP, second order and batched
JVP against central differences, and a coverage check that every kernel has a row. Every
kernel the table runs must return ndarrays."""
from __future__ import annotations

import glob
import importlib
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.engine import Alias
from tests.ops.table import Row

ROWS: list[Row] = []
for _path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "rows_*.py"))):
    _mod = importlib.import_module(f"tests.ops.{os.path.basename(_path)[:-3]}")
    ROWS.extend(_mod.ROWS)
_names = [r.name for r in ROWS]
assert len(_names) == len(set(_names)), "duplicate row names in the op table"

# Kernels that need no row of their own (with the reason).
EXEMPT = {
}


def _checked(name, func):
    def run(i, a, b):
        out = func(i, a, b)
        for o in out if type(out) is list or type(out) is tuple else (out,):
            assert type(o) is np.ndarray or type(o) is Alias, \
                f"kernel {name} returned a {type(o).__name__}, not an ndarray"
        return out
    return run


@pytest.fixture(scope="module", autouse=True)
def kernels_return_arrays():
    """While this module runs, every NumPy kernel checks that it returns ndarrays: ufuncs
    and full reductions give NumPy scalars for 0-d results, which the engine would have
    to convert and which fail as `out=` targets inside fused kernels."""
    saved = [(e, e.func) for e in registry.kernels_for_backend("numpy")]
    for e, f in saved:
        e.func = _checked(e.name, f)
    for listener in registry.kernel_listeners:  # drop the engine's cached kernel functions
        listener(None)
    yield
    for e, f in saved:
        e.func = f
    for listener in registry.kernel_listeners:
        listener(None)


def _sample(row, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return list(row.sample(rng, dtype))


def _to_tf(args):
    return [tf.constant(a) if isinstance(a, np.ndarray) else a for a in args]


def _close(actual, expected, dtype, row):
    if dtype in ("float64", "complex128"):
        rtol, atol = 1e-10, 1e-12
    elif dtype in ("float16", "bfloat16"):
        rtol, atol = 1e-2, 1e-2
    else:
        rtol, atol = row.rtol, row.atol
    np.testing.assert_allclose(np.asarray(actual, dtype=np.asarray(expected).dtype)
                               if np.asarray(expected).dtype != object else actual,
                               expected, rtol=rtol, atol=atol, equal_nan=True)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(_leaves(v))
        return out
    return [x]


value_cases = [pytest.param(r, d, id=f"{r.name}-{d}") for r in ROWS if r.ref is not None
               for d in r.dtypes]


@pytest.mark.parametrize("row,dtype", value_cases)
def test_value(row, dtype):
    args = _sample(row, dtype)
    out = row.fn(*_to_tf(args), **row.kwargs)
    expected = row.ref(*args, **row.kwargs)
    outs, exps = _leaves(out), _leaves(expected)
    assert len(outs) == len(exps), f"{row.name}: {len(outs)} outputs, reference has {len(exps)}"
    for o, e in zip(outs, exps):
        assert isinstance(o, tf.Tensor), f"{row.name}: output is {type(o)}"
        e = np.asarray(e)
        assert tuple(o.shape) == e.shape, f"{row.name}: shape {tuple(o.shape)} vs {e.shape}"
        want = row.out_dtype or (dtype if e.dtype.kind in "fc" and np.dtype(dtype).kind in "fc"
                                 else None)
        if want is not None and e.dtype.kind != "b":
            assert o.dtype.name == want, f"{row.name}: dtype {o.dtype.name}, expected {want}"
        _close(o.numpy(), e, dtype, row)


@pytest.mark.parametrize("row", ROWS, ids=_names)
def test_shape_rules_match_kernels(row):
    dtype = row.dtypes[-1]
    args = _to_tf(_sample(row, dtype))
    info = tf.profile(lambda: row.fn(*args, **row.kwargs))
    assert info["kernels"], f"{row.name}: ran no kernel"
    for k, d in zip(info["kernels"], info.details):
        rule = registry.SHAPES.get(k["name"])
        assert rule is not None, f"kernel {k['name']} has no shape rule"
        shapes, dtypes, attrs = d["shapes"], d["dtypes"], d["attrs"]
        predicted = rule(shapes, dtypes, attrs)
        got = list(zip([tuple(s) for s in k["output_shapes"]], d["output_dtypes"]))
        # None in a rule's shape is a data-dependent dimension (e.g. Where): any size.
        predicted = [(tuple(g if p is None else p for p, g in zip(s, gs))
                      if len(s) == len(gs) else tuple(s), d)
                     for (s, d), (gs, _) in zip(predicted, got)] + predicted[len(got):]
        assert [(tuple(s), d) for s, d in predicted] == got, \
            f"{k['name']}: shape rule says {predicted}, kernel gave {got}"
        # Unknown dimensions must be accepted and give a result of the same length.
        unknown = {n: ([tuple(None for _ in s) for s in v] if isinstance(v, list)
                       else tuple(None for _ in v)) for n, v in shapes.items()}
        try:
            partial = rule(unknown, dtypes, attrs)
        except tf.errors.InvalidArgumentError:
            continue  # a rule may need known dims for some attrs (e.g. reshape's -1)
        assert len(partial) == len(predicted)
        for (ps, pd), (s, d) in zip(partial, predicted):
            assert pd is d
            if ps is not None:
                assert len(ps) == len(s), f"{k['name']}: rank changes with unknown dims"


grad_rows = [r for r in ROWS if r.grad]


def _diff_fn(row, args):
    diff = row.diff if row.diff is not None else tuple(
        i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind in "fc")
    fixed = _to_tf(args)

    def f(*xs):
        full = list(fixed)
        for i, x in zip(diff, xs):
            full[i] = x
        return row.fn(*full, **row.kwargs)
    return f, [args[i] for i in diff]


def _grad_dtype(row):
    return "complex128" if "complex128" in row.dtypes and "float64" not in row.dtypes \
        else "float64"


@pytest.mark.parametrize("row", grad_rows, ids=[r.name for r in grad_rows])
def test_vjp(row):
    args = _sample(row, _grad_dtype(row), seed=1)
    f, xs = _diff_fn(row, args)
    tf.test.check_gradients(f, xs, order=row.order, modes=("rev",), rtol=row.grad_tol,
                            atol=row.grad_tol)


@pytest.mark.parametrize("row", grad_rows, ids=[r.name for r in grad_rows])
def test_jvp(row):
    args = _sample(row, _grad_dtype(row), seed=2)
    f, xs = _diff_fn(row, args)
    tf.test.check_gradients(f, xs, order=row.order, modes=("fwd",), rtol=row.grad_tol,
                            atol=row.grad_tol)


batched = [r for r in grad_rows if r.batched_jvp]


@pytest.mark.parametrize("row", batched, ids=[r.name for r in batched])
def test_batched_jvp_matches_single(row):
    args = _sample(row, _grad_dtype(row), seed=3)
    f, xs = _diff_fn(row, args)
    rng = np.random.default_rng(4)
    xs_t = [tf.constant(x) for x in xs]
    tangents = [rng.standard_normal((3,) + np.shape(x)).astype(x.dtype) for x in xs]
    with tf.autodiff.ForwardAccumulator(xs_t, [tf.constant(t) for t in tangents],
                                        use_batch=True) as acc:
        out = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
    got = [acc.jvp(o, unconnected_gradients="zero").numpy() for o in out]
    for b in range(3):
        with tf.autodiff.ForwardAccumulator(xs_t, [tf.constant(t[b]) for t in tangents]) as one:
            out1 = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
        for g, o in zip(got, out1):
            np.testing.assert_allclose(g[b], one.jvp(o, unconnected_gradients="zero").numpy(),
                                       rtol=1e-9, atol=1e-12)


def test_every_kernel_has_a_row():
    covered = {k for r in ROWS for k in r.kernels}
    missing = sorted(set(registry.KERNELS) - covered - set(EXEMPT)
                     - {k for k in registry.KERNELS if not registry.OPS.get(k)
                        or registry.OPS[k].site == "<implicit>"})
    assert not missing, f"kernels without a row in the op table: {missing}"


smooth = [r for r in grad_rows if r.order >= 2]


@pytest.mark.parametrize("row", smooth, ids=[r.name for r in smooth])
def test_hvp_forward_over_reverse_equals_reverse_over_reverse(row):
    args = _sample(row, _grad_dtype(row), seed=5)
    f, xs = _diff_fn(row, args)
    rng = np.random.default_rng(6)
    xs_t = [tf.constant(x) for x in xs]
    outs = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
    us = [tf.constant(rng.standard_normal(o.shape).astype(o.dtype.as_numpy_dtype)) for o in outs]
    vs = [tf.constant(rng.standard_normal(x.shape).astype(x.dtype)) for x in xs]

    def scalar(*a):  # s(x) = <u, f(x)>, real part
        total = 0.0
        for u, o in zip(us, [o for o in _leaves(f(*a))
                             if o.dtype.is_floating or o.dtype.is_complex]):
            total = total + tf.math.real(tf.reduce_sum(u * o))
        return total

    def grad_of(*a):
        with tf.GradientTape() as inner:
            inner.watch(list(a))
            s = scalar(*a)
        return inner.gradient(s, list(a), unconnected_gradients="zero")

    with tf.autodiff.ForwardAccumulator(xs_t, vs) as acc:
        g = grad_of(*xs_t)
    fwd_rev = [acc.jvp(tf.convert_to_tensor(gi), unconnected_gradients="zero") for gi in g]
    with tf.GradientTape() as outer:
        outer.watch(xs_t)
        g = [tf.convert_to_tensor(gi) for gi in grad_of(*xs_t)]
    rev_rev = outer.gradient(g, xs_t, output_gradients=vs, unconnected_gradients="zero")
    for a, b in zip(fwd_rev, rev_rev):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("row", ROWS, ids=_names)
def test_no_leak(row):
    """Running the op forward and backward leaves no tensor or buffer behind (freed by
    reference counting alone: no gc.collect(), so a reference cycle would show here)."""
    args = _to_tf(_sample(row, row.dtypes[-1], seed=7))
    before = tf.memory()

    def run():
        tensors = [a for a in args if isinstance(a, tf.Tensor)
                   and (a.dtype.is_floating or a.dtype.is_complex)]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            out = row.fn(*args, **row.kwargs)
        floats = [o for o in _leaves(out) if isinstance(o, tf.Tensor) and o.dtype.is_floating]
        if floats and tensors and row.grad:
            tape.gradient(floats, tensors)
    run()
    after = tf.memory()
    assert (after["num_tensors"], after["num_data_buffers"], after["num_bytes"]) == \
        (before["num_tensors"], before["num_data_buffers"], before["num_bytes"]), row.name
