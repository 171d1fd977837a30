"""Tests generated from the op table: values against NumPy/SciPy references, shape rules
against real kernels (also with unknown dimensions), VJP, JVP, second order and batched
JVP against central differences, and a coverage check that every kernel has a row. Rows
whose op takes 0-d inputs run all of these again at shape () (see `Row.scalar`), and every
kernel the table runs must return ndarrays."""
from __future__ import annotations

import dataclasses
import glob
import importlib
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.dispatch import Alias
from tests.ops.table import Row, at_scalar

ROWS: list[Row] = []
for _path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "rows_*.py"))):
    _mod = importlib.import_module(f"tests.ops.{os.path.basename(_path)[:-3]}")
    ROWS.extend(_mod.ROWS)
_names = [r.name for r in ROWS]
assert len(_names) == len(set(_names)), "duplicate row names in the op table"

# Kernels that need no row of their own (with the reason).
EXEMPT = {
}

# Generated cases known to fail because of an op's rule (src/tapeflow/ops), by (test, case
# id): marked xfail(strict=True) so the fix shows up as an XPASS to clear from here.
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}


def _elementwise(kernel: str) -> bool:
    """Whether `kernel`'s shape rule maps inputs of one shape to outputs of that shape."""
    op, rule = registry.OPS.get(kernel), registry.SHAPES.get(kernel)
    if op is None or rule is None or not op.inputs or op.list_inputs:
        return False
    for shape in ((), (2, 3)):
        try:
            out = rule({n: shape for n in op.inputs}, {n: tf.float32 for n in op.inputs}, {})
        except Exception:  # noqa: BLE001 - a rule that needs attrs or other ranks
            return False
        if not out or any(tuple(s) != shape for s, _ in out):
            return False
    return True


def _scalar_rows(row: Row) -> list[Row]:
    """The row's 0-d cases (see `Row.scalar`): every array input at shape () ("<name>/0d")
    and, with several shaped inputs, each broadcasting one alone at shape () against the
    others ("<name>/0d_arg<k>")."""
    if row.scalar is None:
        if not (row.kernels and all(map(_elementwise, row.kernels))):
            return []
        alone = None  # every shaped input
    elif row.scalar is False:
        return []
    else:
        alone = () if row.scalar is True else tuple(row.scalar)
    args = row.sample(np.random.default_rng(0), row.dtypes[-1])
    shaped = [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim]
    if not shaped:  # the row is 0-d already
        return []
    out = [dataclasses.replace(row, name=f"{row.name}/0d", sample=at_scalar(row.sample))]
    if len(shaped) > 1:
        out += [dataclasses.replace(row, name=f"{row.name}/0d_arg{k}",
                                    sample=at_scalar(row.sample, only=k))
                for k in shaped if alone is None or k in alone]
    return out


SCALAR_ROWS = [v for r in ROWS for v in _scalar_rows(r)]
CASES = ROWS + SCALAR_ROWS
assert len({r.name for r in CASES}) == len(CASES), "0-d case names collide with rows"


def _params(test: str, cases, ids):
    """pytest params of `cases` (tuples) with their ids, KNOWN_FAILURES marked."""
    return [pytest.param(*c, id=i, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN_FAILURES[test, i])] if (test, i) in KNOWN_FAILURES else [])
        for c, i in zip(cases, ids)]


def _row_params(test: str, rows):
    return _params(test, [(r,) for r in rows], [r.name for r in rows])


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


_value = [(r, d) for r in CASES if r.ref is not None for d in r.dtypes]
value_cases = _params("value", _value, [f"{r.name}-{d}" for r, d in _value])


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


@pytest.mark.parametrize("row", _row_params("shape", CASES))
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


grad_rows = [r for r in CASES if r.grad]


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


@pytest.mark.parametrize("row", _row_params("vjp", grad_rows))
def test_vjp(row):
    args = _sample(row, _grad_dtype(row), seed=1)
    f, xs = _diff_fn(row, args)
    tf.test.check_gradients(f, xs, order=row.order, modes=("rev",), rtol=row.grad_tol,
                            atol=row.grad_tol)


@pytest.mark.parametrize("row", _row_params("jvp", grad_rows))
def test_jvp(row):
    args = _sample(row, _grad_dtype(row), seed=2)
    f, xs = _diff_fn(row, args)
    tf.test.check_gradients(f, xs, order=row.order, modes=("fwd",), rtol=row.grad_tol,
                            atol=row.grad_tol)


batched = [r for r in grad_rows if r.batched_jvp]


@pytest.mark.parametrize("row", _row_params("batched_jvp", batched))
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


def test_scalar_cases_are_generated():
    """0-d cases of elementwise rows come from probing shape rules; a probe that stopped
    recognizing elementwise ops would drop them silently, so a few are pinned here."""
    names = {r.name for r in SCALAR_ROWS}
    pinned = ["add/same/0d", "add/same/0d_arg0", "add/same/0d_arg1", "tanh/0d",
              "tanh_grad/0d", "sigmoid_grad/0d", "nn.relu/0d", "nn.silu/0d",
              "reduce_sum/all/0d", "cast/float_to_int/0d", "floormod/float/0d_arg1"]
    assert [n for n in pinned if n not in names] == []


smooth = [r for r in grad_rows if r.order >= 2]


@pytest.mark.parametrize("row", _row_params("hvp", smooth))
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
