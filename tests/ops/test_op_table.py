"""Tests generated from the op table: values against NumPy/SciPy references, shape rules
against real kernels (also with unknown dimensions), VJP, JVP, second order and batched
JVP against central differences, and a coverage check that every kernel has a row. Rows
whose op takes 0-d inputs run all of these again at shape () (see `Row.scalar`); size-1,
size-0 and high-rank cases of every row run values, shape rules, VJP and JVP
(test_edge_cases; see table.py), the high-rank ones also at NumPy's maximum rank. Every
kernel the table runs must return ndarrays."""
from __future__ import annotations

import dataclasses
import gc
import glob
import importlib
import os
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends.numpy import silence_kernel_warnings
from tapeflow._core import registry
from tapeflow._core.dispatch import Alias
from tests.ops.table import Row, at_empty, at_rank, at_scalar, at_size1

ROWS: list[Row] = []
for _path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "rows_*.py"))):
    _mod = importlib.import_module(f"tests.ops.{os.path.basename(_path)[:-3]}")
    ROWS.extend(_mod.ROWS)
_names = [r.name for r in ROWS]
assert len(_names) == len(set(_names)), "duplicate row names in the op table"

# Kernels that need no row of their own (with the reason).
EXEMPT = {
    "Const",  # a traced graph's constants: no public function; tests/function/test_graph_ops.py
    "FusedElementwise",  # made by the fusion pass only; tests/function/test_fuse.py
    "InplaceAddMatMul",  # made by the optimizer only (AssignAddMatMul); test_passes.py
    "FusedConv2D",  # made by the optimizer only; tests/function/test_conv_fusion.py
    "Conv2DBackpropFilterWithBias",  # likewise
}

# Generated cases known to fail because of an op's rule (src/tapeflow/ops), by (test, case
# id): marked xfail(strict=True) so the fix shows up as an XPASS to clear from here. The
# size-1, size-0 and high-rank cases, checked inside test_edge_cases, are keyed ("edge",
# case) and ("max_rank", case); there a known failure that passes fails the test.
LINSPACE_64 = ("linspace to 65 dims raises NumPy's ValueError, not InvalidArgumentError (ops/"
               "creation.py reshapes its weights with NumPy before any kernel runs)")
EINSUM_64 = ("einsum spells '...' out in letters, 52 at most (ops/linalg.py): NumPy's einsum "
             "takes a 62-dim ellipsis")
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("edge", "depthwise_conv2d/stride2_valid/empty3"):
        "depthwise_conv2d of an input without channels: its shape rule divides by the "
        "group count, 0 (ops/conv.py _conv_out_shape raises ZeroDivisionError)",
    ("max_rank", "linspace/batched/rank64"): LINSPACE_64,
    ("max_rank", "linspace/axis0/rank64"): LINSPACE_64,
    ("max_rank", "einsum/ellipsis_middle/rank64"): EINSUM_64,
    ("max_rank", "einsum/diagonal/rank64"): EINSUM_64,
    ("max_rank", "einsum/size_one_broadcast/rank64"): EINSUM_64,
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


def _sample(row, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return list(row.sample(rng, dtype))


def _grad_dtype(row):
    return "complex128" if "complex128" in row.dtypes and "float64" not in row.dtypes \
        else "float64"


def _is_elementwise(row: Row) -> bool:
    return bool(row.kernels) and all(map(_elementwise, row.kernels))


def _scalar_rows(row: Row) -> list[Row]:
    """The row's 0-d cases (see `Row.scalar`): every array input at shape () ("<name>/0d")
    and, with several shaped inputs, each broadcasting one alone at shape () against the
    others ("<name>/0d_arg<k>")."""
    if row.scalar is None:
        if not _is_elementwise(row):
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


# The rank of the high-rank cases: past 32, NumPy's limit for its legacy iterators (sorting,
# np.broadcast_shapes), with room below NumPy's maximum for gradients that add dimensions.
HIGH_RANK = 40


def _numpy_max_rank() -> int:
    """NumPy's maximum rank: 64 since NumPy 2, 32 before."""
    for rank in (64, 32):
        try:
            np.empty((1,) * rank)
            return rank
        except ValueError:
            continue
    raise AssertionError("NumPy supports fewer than 32 dimensions")


MAX_RANK = _numpy_max_rank()  # value checks run there too


def _reference_accepts(row: Row) -> bool:
    """Whether the row's reference runs on every sample _check_edge_case draws from the row
    (each dtype at seed 0, the derivative dtype at the VJP's and JVP's seeds)."""
    if row.ref is None:
        return False
    draws = [(d, 0) for d in row.dtypes]
    if row.grad:
        draws += [(_grad_dtype(row), seed) for seed in (1, 2)]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a reference's warnings (mean of empty) are no issue
        for dtype, seed in draws:
            try:
                row.ref(*_sample(row, dtype, seed), **row.kwargs)
            except Exception:  # noqa: BLE001 - NumPy rejects the inputs: no case here
                return False
    return True


def _edge_rows(row: Row) -> list[Row]:
    """The row's size-1, size-0 and high-rank cases (see table.py and `Row.size1`)."""
    args = row.sample(np.random.default_rng(0), row.dtypes[-1])
    shaped = [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim]
    if not shaped:
        return []
    auto = _is_elementwise(row)

    def keep(flag, case):  # see `Row.size1`
        if flag is None:
            return _reference_accepts(case) if case.ref is not None else auto
        return flag is not False

    def case(suffix, sample):
        return dataclasses.replace(row, name=f"{row.name}/{suffix}", sample=sample)
    out = []
    if any(n != 1 for k in shaped for n in args[k].shape):
        out += [c for c in [case("size1", at_size1(row.sample))] if keep(row.size1, c)]
        # Each input shrunk alone broadcasts against the others at the same rank (the VJP
        # sums with keepdims), for the inputs `scalar` lets broadcast alone.
        alone = shaped if row.scalar is None else row.scalar if isinstance(
            row.scalar, tuple) else ()
        if auto and row.size1 is None and len(shaped) > 1:
            out += [case(f"size1_arg{k}", at_size1(row.sample, only=k)) for k in alone
                    if any(n != 1 for n in args[k].shape)]
    sizes = sorted({n for k in shaped for n in args[k].shape if n > 1})
    for n in row.empty if isinstance(row.empty, tuple) else sizes:
        c = case(f"empty{n}", at_empty(row.sample, n))
        if keep(True if isinstance(row.empty, tuple) else row.empty, c):
            out.append(c)
    if max(args[k].ndim for k in shaped) < HIGH_RANK:
        out += [c for c in [case(f"rank{HIGH_RANK}", at_rank(row.sample, HIGH_RANK))]
                if keep(row.rank, c)]
    return out


SCALAR_ROWS = [v for r in ROWS for v in _scalar_rows(r)]
# The rows and their 0-d cases run through every check as separate tests. The size-1,
# size-0 and high-rank cases (about 2000) run in one test per row (test_edge_cases), made
# when it runs: every collected test item and row stays in memory, and the error tests'
# gc.collect() calls, much of the suite's time, take longer with every object alive.
CASES = ROWS + SCALAR_ROWS
assert len({r.name for r in CASES}) == len(CASES), "0-d case names collide with rows"


def _params(test: str, cases, ids):
    """pytest params of `cases` (tuples) with their ids, KNOWN_FAILURES marked."""
    return [pytest.param(*c, id=i, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN_FAILURES[test, i])] if (test, i) in KNOWN_FAILURES else [])
        for c, i in zip(cases, ids)]


def _row_params(test: str, rows):
    return _params(test, [(r,) for r in rows], [r.name for r in rows])


# The plain ufunc kernels (math.py's _unary/_binary) may return a NumPy scalar for 0-d
# inputs: the engine wraps it as a 0-d array, and they never write into one (`out=`).
_UFUNC_KERNELS = {name for name, per in registry.KERNELS.items() if "numpy" in per
                  and getattr(per["numpy"].func, "__qualname__", "").startswith(
                      ("_unary.", "_binary."))}


def _checked(name, func):
    scalar_ok = name in _UFUNC_KERNELS

    def run(i, a, b):
        out = func(i, a, b)
        for o in out if type(out) is list or type(out) is tuple else (out,):
            assert type(o) is np.ndarray or type(o) is Alias or (
                scalar_ok and isinstance(o, np.generic)), \
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


def _to_tf(args):
    return [tf.constant(a) if isinstance(a, np.ndarray) else a for a in args]


def _close(actual, expected, dtype, row):
    if np.asarray(expected).dtype == object:  # strings (bytes): exact
        np.testing.assert_array_equal(np.asarray(actual, dtype=object), expected)
        return
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
    _check_value(row, dtype)


def _check_value(row, dtype):
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
    _check_shape_rules(row)


def _check_shape_rules(row):
    dtype = row.dtypes[-1]
    args = _to_tf(_sample(row, dtype))
    info = tf.profile(lambda: row.fn(*args, **row.kwargs))
    # (a generated case may run none: unstacking an empty axis gives no tensors)
    assert info["kernels"] or row.name not in _names, f"{row.name}: ran no kernel"
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


def _check_derivatives(row, args, mode):
    """check_gradients in `mode` ("rev" or "fwd") on the row's differentiated inputs.

    Inputs with no elements (the size-0 cases) have Jacobians without columns, so J v = 0
    exactly; but central differences are NaN where the outputs are (a mean over nothing),
    and chain rules through non-differentiable points give NaN (a norm of nothing is 0,
    where sqrt has no derivative), as in TensorFlow. So their derivatives are checked for
    shape and dtype only, and the inputs with elements numerically, the empty ones fixed.
    """
    f, xs = _diff_fn(row, args)
    kw = dict(order=row.order, modes=(mode,), rtol=row.grad_tol, atol=row.grad_tol)
    full = [i for i, x in enumerate(xs) if np.size(x)]
    if len(full) == len(xs):
        tf.test.check_gradients(f, xs, **kw)
        return
    xs_t = [tf.constant(x) for x in xs]
    if mode == "rev":
        with tf.GradientTape() as tape:
            tape.watch(xs_t)
            outs = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
        got = tape.gradient(outs, xs_t, unconnected_gradients="zero")
        want = xs_t
    else:
        rng = np.random.default_rng(8)
        with tf.autodiff.ForwardAccumulator(xs_t, [tf.constant(
                rng.standard_normal(x.shape).astype(x.dtype)) for x in xs]) as acc:
            want = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
        got = [acc.jvp(o, unconnected_gradients="zero") for o in want]
    for g, w in zip(got, want):
        g = tf.convert_to_tensor(g)
        assert (tuple(g.shape), g.dtype) == (tuple(w.shape), w.dtype), \
            f"{row.name}: derivative {g.dtype.name}{list(g.shape)} of {w.dtype.name}" \
            f"{list(w.shape)}"
    if full:
        def g_of(*ys):
            return f(*[ys[full.index(i)] if i in full else xs_t[i] for i in range(len(xs))])
        tf.test.check_gradients(g_of, [xs[i] for i in full], **kw)


@pytest.mark.parametrize("row", _row_params("vjp", grad_rows))
def test_vjp(row):
    _check_derivatives(row, _sample(row, _grad_dtype(row), seed=1), "rev")


@pytest.mark.parametrize("row", _row_params("jvp", grad_rows))
def test_jvp(row):
    _check_derivatives(row, _sample(row, _grad_dtype(row), seed=2), "fwd")


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
    package = os.path.dirname(tf.__file__)
    missing = sorted(set(registry.KERNELS) - covered - set(EXEMPT)
                     - {k for k in registry.KERNELS if not registry.OPS.get(k)
                        or registry.OPS[k].site == "<implicit>"
                        # (ops other tests of this process defined for themselves)
                        or not os.path.abspath(registry.OPS[k].site).startswith(package)})
    assert not missing, f"kernels without a row in the op table: {missing}"


def test_scalar_cases_are_generated():
    """0-d cases of elementwise rows come from probing shape rules; a probe that stopped
    recognizing elementwise ops would drop them silently, so a few are pinned here."""
    names = {r.name for r in SCALAR_ROWS}
    pinned = ["add/same/0d", "add/same/0d_arg0", "add/same/0d_arg1", "tanh/0d",
              "tanh_grad/0d", "sigmoid_grad/0d", "nn.relu/0d", "nn.silu/0d",
              "reduce_sum/all/0d", "cast/float_to_int/0d", "floormod/float/0d_arg1"]
    assert [n for n in pinned if n not in names] == []


def test_edge_cases_are_generated():
    """Size-1, size-0 and high-rank cases come from shape-rule probes and from running
    references; a probe or reference that stopped accepting them would drop the cases
    silently, so a few of each kind are pinned here."""
    pinned = ["add/broadcast/size1", "add/same/size1_arg0", "add/broadcast/empty2",
              "add/broadcast/rank40", "tanh/empty3", "reduce_sum/axis/empty4",
              "reduce_max/axis/empty4", "reduce_prod/all/rank40", "matmul/2d/empty4",
              "matmul/2d/empty3", "concat/axis0/empty3", "gather/sampled_indices/empty4",
              "transpose/default/rank40", "expand_dims/first/rank40", "top_k/batched/rank40",
              "cumsum/reverse/empty4", "svd/tall/empty3", "nn.softmax/2d/empty3"]
    rows = {r.name: r for r in ROWS}
    names = {c.name for n in pinned for c in _edge_rows(rows[n.rsplit("/", 1)[0]])}
    assert [n for n in pinned if n not in names] == []


smooth = [r for r in grad_rows if r.order >= 2]


@pytest.mark.parametrize("row", _row_params("hvp", smooth))
def test_hvp_forward_over_reverse_equals_reverse_over_reverse(row):
    args = _sample(row, _grad_dtype(row), seed=5)
    f, xs = _diff_fn(row, args)
    rng = np.random.default_rng(6)
    xs_t = [tf.constant(x) for x in xs]
    outs = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
    if not outs:  # unstacking an empty axis
        return
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


# rows with at least one edge case (deciding costs ~0.2 s for the whole table)
EDGE_ROWS = [r for r in ROWS if _edge_rows(r)]


@pytest.mark.parametrize("row", EDGE_ROWS, ids=[r.name for r in EDGE_ROWS])
def test_edge_cases(row):
    """The row's size-1, size-0 and high-rank cases (see table.py), each checked as
    _check_edge_case and _check_max_rank say; KNOWN_FAILURES ("edge" and "max_rank") must
    fail (strictly, like xfail(strict=True)). Every failing case is reported."""
    cases = _edge_rows(row)
    checks = [("edge", c, _check_edge_case) for c in cases]
    if any(c.name.endswith(f"/rank{HIGH_RANK}") for c in cases):
        checks.append(("max_rank", dataclasses.replace(
            row, name=f"{row.name}/rank{MAX_RANK}", sample=at_rank(row.sample, MAX_RANK)),
            _check_max_rank))
    failures = []
    for kind, case, check in checks:
        try:
            check(case)
            error = None
        except Exception as e:  # noqa: BLE001 - reported below with the case's name
            error = f"{type(e).__name__}: {e}"[:2000]
        known = KNOWN_FAILURES.get((kind, case.name))
        if error and not known:
            failures.append(f"{case.name}: {error}")
        elif known and not error:
            failures.append(f"{case.name} passes: remove it from KNOWN_FAILURES ({known})")
    assert not failures, "\n".join(failures)


def _check_edge_case(row):
    """Values in every dtype, shape rules, VJP and JVP as the rows' own tests check them,
    to first order (second order would double the time; the rows and their 0-d cases
    check it)."""
    if row.ref is not None:
        for dtype in row.dtypes:
            _check_value(row, dtype)
    _check_shape_rules(row)
    if row.grad:
        first = dataclasses.replace(row, order=1)
        _check_derivatives(first, _sample(row, _grad_dtype(row), seed=1), "rev")
        _check_derivatives(first, _sample(row, _grad_dtype(row), seed=2), "fwd")


def _check_max_rank(row):
    """At NumPy's maximum rank an op gives the reference's values and a VJP. Where NumPy
    cannot compute the reference (its result would need more dimensions), the op raises
    InvalidArgumentError saying so, leaving memory as it was, or still works."""
    dtype = row.dtypes[-1]
    args = _sample(row, dtype)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            row.ref(*args, **row.kwargs)
    except (ValueError, IndexError):  # NumPy's limits (the result's rank, einsum's letters)
        inputs = _to_tf(args)
        gc.disable()  # (freed by reference counting alone, as in test_no_leak)
        try:
            before = tf.memory()
            try:
                row.fn(*inputs, **row.kwargs)  # (it may still work: nothing to compare)
                return
            except tf.errors.InvalidArgumentError as e:
                message = str(e)
            # (measured once the exception and the frames of its traceback are gone)
            after = tf.memory()
        finally:
            gc.enable()
        assert "dimensions" in message, f"{row.name}: {message}"
        assert (after["num_tensors"], after["num_data_buffers"]) == \
            (before["num_tensors"], before["num_data_buffers"]), f"{row.name} leaks"
        return
    _check_value(row, dtype)
    if row.grad:
        args = _sample(row, _grad_dtype(row), seed=1)
        f, xs = _diff_fn(row, args)
        tf.test.check_gradients(f, xs, order=1, modes=("rev",), rtol=row.grad_tol,
                                atol=row.grad_tol)


@pytest.mark.parametrize("row", ROWS, ids=_names)
def test_no_leak(row):
    """Running the op forward and backward leaves no tensor or buffer behind (freed by
    reference counting alone: no gc.collect(), so a reference cycle would show here)."""
    args = _to_tf(_sample(row, row.dtypes[-1], seed=7))
    # The collector stays off: earlier tests' garbage (frames of expected errors'
    # tracebacks hold tensors) must not be freed mid-measurement.
    gc.disable()
    try:
        _no_leak(row, args)
    finally:
        gc.enable()


def _no_leak(row, args):
    def run():
        tensors = [a for a in args if isinstance(a, tf.Tensor)
                   and (a.dtype.is_floating or a.dtype.is_complex)]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            out = row.fn(*args, **row.kwargs)
        floats = [o for o in _leaves(out) if isinstance(o, tf.Tensor) and o.dtype.is_floating]
        if floats and tensors and row.grad:
            tape.gradient(floats, tensors)
    # a first run may make what an op keeps for good (a row's variable, made once per
    # shape: in this worker, other tests of the row may not have run first); a leak is
    # what each further run leaves behind
    run()
    before = tf.memory()
    run()
    after = tf.memory()
    assert (after["num_tensors"], after["num_data_buffers"], after["num_bytes"]) == \
        (before["num_tensors"], before["num_data_buffers"], before["num_bytes"]), row.name


# --------------------------------------------------------------------------- rank limits


def _counts():
    m = tf.memory()
    return m["num_tensors"], m["num_data_buffers"], m["num_bytes"]


@pytest.fixture
def unraisable(monkeypatch):
    """Errors raised in __del__ (printed as "Exception ignored in ..."), recorded."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


@pytest.mark.parametrize("op,make", [
    ("reshape", lambda: tf.reshape(tf.ones([1]), [1] * (MAX_RANK + 1))),
    ("expand_dims", lambda: tf.expand_dims(tf.ones([1] * MAX_RANK), 0)),
    ("stack", lambda: tf.stack([tf.ones([1] * MAX_RANK)] * 2)),
    ("one_hot", lambda: tf.one_hot(tf.zeros([1] * MAX_RANK, tf.int32), 3)),
    # np.take crashes the process on results past about 70 dims: the kernel checks first
    ("gather", lambda: tf.gather(tf.ones([1] * 39), tf.zeros([1] * 39, tf.int32))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_results_past_numpys_rank_raise_and_leak_nothing(op, make, unraisable, capfd):
    """Ops whose result would have more dimensions than NumPy allows raise
    InvalidArgumentError naming the op and the rank, before the engine takes any buffer
    reference: memory counters come back exactly, and nothing is printed from __del__
    (a reference taken before a failing reshape once left a buffer counted forever)."""
    gc.disable()  # freed by reference counting alone, as in test_no_leak
    try:
        before = _counts()
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"^{op}: the result would have " r"\d+ dimensions"):
            make()
        assert _counts() == before
    finally:
        gc.enable()
    assert unraisable == [] and "Exception ignored" not in capfd.readouterr().err


def test_tile_gradient_at_rank_40(unraisable, capfd):
    """tile's VJP split every axis in two (80 dims at rank 40): now only those it must."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((1,) * 36 + (2, 1, 3, 2))
    multiples = (1,) * 35 + (2, 3, 2, 1, 3)
    u_np = rng.standard_normal(np.tile(x_np, multiples).shape)
    gc.disable()  # freed by reference counting alone, as in test_no_leak
    try:
        before = _counts()
        _tile_gradient(x_np, u_np, multiples)
        assert _counts() == before
    finally:
        gc.enable()
    assert unraisable == [] and "Exception ignored" not in capfd.readouterr().err


def _tile_gradient(x_np, u_np, multiples):
    x, u = tf.constant(x_np), tf.constant(u_np)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tile(x, multiples)
    g = tape.gradient(y, x, output_gradients=u)
    # the sum of u over the copies: u split into [copy, x dim] pairs
    want = u_np.reshape([d for pair in zip(multiples, x_np.shape) for d in pair][-10:]
                        ).sum(axis=(0, 2, 4, 6, 8)).reshape(x_np.shape)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


# --------------------------------------------------------------------------- warnings

# NumPy warns where TensorFlow silently gives inf or NaN (or 0 for integers).
_WARNING_CASES = [
    ("log(0)", lambda: tf.math.log(tf.zeros([2]))),
    ("1/0", lambda: tf.ones([2]) / tf.zeros([2])),
    ("0/0", lambda: tf.zeros([2]) / tf.zeros([2])),
    ("sqrt(-1)", lambda: tf.sqrt(-tf.ones([2]))),
    ("exp overflow", lambda: tf.exp(tf.constant([1000.0]))),
    ("mean of empty", lambda: tf.reduce_mean(tf.zeros([0]))),
    ("variance of empty", lambda: tf.math.reduce_variance(tf.zeros([3, 0]), axis=1)),
    ("log_softmax of -inf", lambda: tf.nn.log_softmax(tf.constant([-np.inf, -np.inf]))),
    ("acosh(0)", lambda: tf.math.acosh(tf.zeros([1]))),
    ("lgamma(0)", lambda: tf.math.lgamma(tf.zeros([1]))),
]


def test_kernels_raise_no_runtime_warnings():
    """No NumPy RuntimeWarning reaches users (TensorFlow gives no such warnings): none is
    emitted by the calls above, or by any generated edge case's value (0-d, size-1, size-0
    and high-rank inputs: means of nothing, logs of 0 in the rows' samplers...)."""
    calls = _WARNING_CASES + [
        (row.name, lambda row=row: row.fn(*_to_tf(_sample(row, row.dtypes[-1])), **row.kwargs))
        for row in SCALAR_ROWS + [c for r in ROWS for c in _edge_rows(r)]
        if ("edge", row.name) not in KNOWN_FAILURES]
    emitted = []
    for name, run in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # every warning, as a user's first call sees it
            silence_kernel_warnings()          # ...with the filter tapeflow installs
            run()
        emitted += [f"{name}: {w.message}" for w in caught
                    if issubclass(w.category, RuntimeWarning)]
    assert emitted == []
