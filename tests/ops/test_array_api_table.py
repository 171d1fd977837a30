"""The op table on the array-API backend, compared with the NumPy backend: every row's
values (each dtype the namespace has), its VJP and its JVP (float64, random cotangents and
tangents) must agree. Rows that cannot run there are listed in CANNOT_RUN with the reason.

The namespace comes from TAPEFLOW_TEST_ARRAY_API: "array_api_strict" (the default, the
standard's strict reference, what CI runs) or "cupy" (tools/gpu_check.sh on a CUDA
machine). Ops without an array-API kernel run NumPy's through the host; the rows still
check that the fallback hands correct arrays back and forth.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends import ArrayAPIBackend
from tapeflow.backends.array_api import FallbackWarning, XP_KERNELS, fallback_ops, library_ops
from tapeflow.ops.random import STATEFUL_KERNELS
from tests.ops.test_op_table import CASES, _diff_fn, _grad_dtype, _leaves, _sample
from tests.ops.test_traced_table import NOT_TRACED

NAMESPACE = os.environ.get("TAPEFLOW_TEST_ARRAY_API", "array_api_strict")
BACKEND = "array_api_table"
xp_module = pytest.importorskip(NAMESPACE) if NAMESPACE == "cupy" else __import__(NAMESPACE)

# Rows that cannot run on the array-API backend, with the reason; they are expected to
# fail (strictly: one that starts to pass shows up as an XPASS failure to clear).
CANNOT_RUN: dict[str, str] = {}
# numbers in, strings out: the array API has no string dtype to hold the result
CANNOT_RUN.update({r.name: "the array API has no string dtype (string results)"
                   for r in CASES if r.name.split("/")[0] in (
                       "strings.as_string", "strings.format", "strings.unicode_encode")})
# dtypes a namespace lacks: those (row, dtype) values are not compared ("object": the
# string rows' inputs, which no array-API namespace holds)
MISSING_DTYPES = {"array_api_strict": {"float16", "bfloat16"}, "cupy": {"bfloat16"}}.get(
    NAMESPACE, {"bfloat16"}) | {"object"}

pytestmark = pytest.mark.filterwarnings(f"ignore::{FallbackWarning.__module__}."
                                        f"{FallbackWarning.__name__}")


@pytest.fixture(scope="module", autouse=True)
def xp_backend():
    tf.register_backend(BACKEND, lambda: ArrayAPIBackend(xp_module), priority=-1)
    assert tf.find_backend(BACKEND) is not None
    yield tf.find_backend(BACKEND)
    tf.set_backend("numpy")
    tf.remove_backend(BACKEND)


class on:
    """`with on(name):` runs the block on backend `name`, restoring the previous one."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.saved = tf.get_backend()
        tf.set_backend(self.name)

    def __exit__(self, *exc):
        tf.set_backend(self.saved)


def _host(x):
    return None if x is None else np.asarray(tf.convert_to_tensor(x).numpy())


def _run_value(row, args, traced=False):
    fn = row.fn
    if traced:
        fn = tf.function(lambda *a: row.fn(*a, **row.kwargs))
    outs = _leaves(fn(*[tf.constant(a) if isinstance(a, np.ndarray) else a
                        for a in args], **({} if traced else row.kwargs)))
    return [(o.dtype.name, _host(o)) for o in outs]


def _run_derivatives(row, args, seed):
    """(VJP of <u, f>, JVP along v) of the row's differentiated inputs, as NumPy arrays."""
    f, xs = _diff_fn(row, args)
    rng = np.random.default_rng(seed)
    xs_t = [tf.constant(x) for x in xs]
    vs = [rng.standard_normal(np.shape(x)).astype(x.dtype) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xs_t)
        outs = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
    us = [tf.constant(rng.standard_normal(o.shape).astype(o.dtype.as_numpy_dtype))
          for o in outs]
    grads = tape.gradient(outs, xs_t, output_gradients=us or None,
                          unconnected_gradients="zero") if outs else []
    with tf.autodiff.ForwardAccumulator(xs_t, [tf.constant(v) for v in vs]) as acc:
        outs = [o for o in _leaves(f(*xs_t)) if o.dtype.is_floating or o.dtype.is_complex]
    jvps = [acc.jvp(o, unconnected_gradients="zero") for o in outs]
    return [_host(g) for g in grads], [_host(j) for j in jvps]


def _compare(name, got, want, dtype):
    rtol, atol = {"float64": (1e-9, 1e-11), "complex128": (1e-9, 1e-11),
                  "float16": (1e-2, 1e-2)}.get(dtype, (2e-5, 1e-5))
    assert len(got) == len(want), f"{name}: {len(got)} results vs {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None, f"{name}[{k}]"
            continue
        assert g.shape == w.shape, f"{name}[{k}]: shape {g.shape} vs NumPy's {w.shape}"
        assert g.dtype == w.dtype, f"{name}[{k}]: dtype {g.dtype} vs NumPy's {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{name}[{k}]")


def _check_row(row):
    for dtype in row.dtypes:
        if dtype in MISSING_DTYPES:
            continue
        args = _sample(row, dtype)
        with on("numpy"):  # (on a CUDA machine "cupy" is the default backend)
            want = _run_value(row, args)
        with on(BACKEND):
            got = _run_value(row, args)
        assert [d for d, _ in got] == [d for d, _ in want], row.name
        _compare(f"{row.name}-{dtype}", [v for _, v in got], [v for _, v in want], dtype)
    # traced (tf.function's compiled program, per-op kernels: no fused NumPy loops here)
    dtypes = [d for d in row.dtypes if d not in MISSING_DTYPES]
    if (dtypes and row.name in _ROW_NAMES and row.name not in NOT_TRACED
            and not set(row.kernels) & set(STATEFUL_KERNELS)):
        args = _sample(row, dtypes[-1])
        with on("numpy"):
            want = _run_value(row, args)
        with on(BACKEND):
            got = _run_value(row, args, traced=True)
        _compare(f"{row.name}-{dtypes[-1]} traced", [v for _, v in got],
                 [v for _, v in want], dtypes[-1])
    if row.grad:
        dtype = _grad_dtype(row)
        args = _sample(row, dtype, seed=1)
        with on("numpy"):
            want = _run_derivatives(row, args, seed=2)
        with on(BACKEND):
            got = _run_derivatives(row, args, seed=2)
        _compare(f"{row.name} VJP", got[0], want[0], dtype)
        _compare(f"{row.name} JVP", got[1], want[1], dtype)


# the rows and their 0-d cases (test_op_table's CASES); the traced check runs on the rows
_ROW_NAMES = {r.name for r in CASES if not r.name.endswith("/0d") and "/0d_arg" not in r.name}


def _params():
    return [pytest.param(r, id=r.name, marks=[pytest.mark.xfail(
        strict=True, reason=CANNOT_RUN[r.name])] if r.name in CANNOT_RUN else [])
        for r in CASES]


@pytest.mark.parametrize("row", _params())
def test_row_matches_numpy_backend(row):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        _check_row(row)


def test_cannot_run_names_real_rows():
    names = {r.name for r in CASES}
    assert sorted(set(CANNOT_RUN) - names) == []


def test_fallbacks_are_the_ops_without_an_array_api_kernel(xp_backend):
    """Every op of tapeflow has a NumPy kernel; those without an array-API one are the
    fallbacks, and the backend has a kernel for each."""
    ops = set(library_ops())
    assert {"Add", "Conv2D", "Erf", "StridedSlice"} <= ops
    assert set(fallback_ops()) == ops - set(XP_KERNELS)
    assert set(XP_KERNELS) <= ops, sorted(set(XP_KERNELS) - ops)
    for op in ops:
        func = tf.get_kernel(op, BACKEND).func
        assert func is XP_KERNELS[op] if op in XP_KERNELS else func.fallback, op
