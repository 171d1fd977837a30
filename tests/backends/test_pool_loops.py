"""The numba loops of max pooling (backends/numpy/conv.py) against the NumPy formulation
they replace: equal results, bit for bit, for every window, stride, padding, layout and
dtype, with ties, NaNs and infinities; and `_core.jit.Loop`'s fallbacks."""
import itertools

import numpy as np
import pytest

from tapeflow._core import jit
from tapeflow.backends.numpy import conv

pytestmark = pytest.mark.skipif(not jit.available(), reason="the jit extra (numba)")
LOOPS = (conv._MAX_POOL_SCAN, conv._MAX_POOL_2X2)


def _numpy_only(monkeypatch):
    for loop in LOOPS:
        monkeypatch.setattr(loop, "ready", lambda *args: None)


def _both(monkeypatch, fn, inputs, attrs):
    """(fn with the loops, fn with NumPy only): asserted equal, NaNs in the same places."""
    with monkeypatch.context() as m:
        _numpy_only(m)
        expected = fn(inputs, attrs, None)
    got = fn(inputs, attrs, None)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    return got


CASES = list(itertools.product([(2, 2), (3, 3), (2, 3), (1, 1)], [(1, 1), (2, 2), (3, 2)],
                               ["VALID", "SAME"]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_max_pool_loops_equal_the_numpy_kernels(monkeypatch, dtype, fmt):
    rng = np.random.default_rng(0)
    used = set()
    before = jit.background()
    jit.set_background(False)  # (compiled on first use: every case runs the loops)
    try:
        _every_case(monkeypatch, dtype, fmt, rng, used)
    finally:
        jit.set_background(before)
    # both loops ran (compiled), not NumPy
    assert used == {id(loop) for loop in LOOPS}


def _every_case(monkeypatch, dtype, fmt, rng, used):
    for ksize, strides, padding in CASES:
        # small integers: many ties, where the first maximum (np.argmax's) must win
        x = rng.integers(-3, 3, (2, 7, 8, 3)).astype(dtype)
        if dtype != np.int32:
            x[0, 1, 1, 0] = x[0, 4, 4, 1] = x[0, 4, 5, 1] = np.nan  # first NaN wins
            x[1, 0, 0, 2], x[1, 2, 3, 1] = np.inf, -np.inf
        if fmt == "NCHW":
            x = np.moveaxis(x, -1, 1).copy()
        attrs = dict(ksize=ksize, strides=strides, padding=padding, data_format=fmt,
                     explicit_paddings=[])
        y = _both(monkeypatch, conv.max_pool, {"x": x}, attrs)
        dy = rng.standard_normal(y.shape).astype(dtype) * 4
        dx = _both(monkeypatch, conv.max_pool_grad, {"x": x, "dy": dy}, attrs)
        assert dx.shape == x.shape
        g = rng.standard_normal(x.shape).astype(dtype) * 4
        _both(monkeypatch, conv.max_pool_grad_grad, {"x": x, "dx": g}, attrs)
        used |= {id(loop) for loop in LOOPS if any(loop._state.values())}


def test_max_pool_grad_routes_each_window_to_its_first_maximum():
    x = np.array([[1., 3., 3., 0.], [3., 2., 0., 0.]], np.float32).reshape(1, 2, 4, 1)
    dy = np.array([10., 20.], np.float32).reshape(1, 1, 2, 1)
    attrs = dict(ksize=(2, 2), strides=(2, 2), padding="VALID", data_format="NHWC",
                 explicit_paddings=[])
    dx = conv.max_pool_grad({"x": x, "dy": dy}, attrs, None)
    # window 1: 3 at (0,1) and (1,0) tie, the first in row-major order gets 10;
    # window 2: all of 3, 0, 0, 0 -> (0,0) of that window
    np.testing.assert_array_equal(dx.reshape(2, 4), [[0, 10, 20, 0], [0, 0, 0, 0]])
    x[0, 1, 1, 0] = np.nan  # a NaN is the maximum of its window
    dx = conv.max_pool_grad({"x": x, "dy": dy}, attrs, None)
    np.testing.assert_array_equal(dx.reshape(2, 4), [[0, 0, 20, 0], [0, 10, 0, 0]])
    y = conv.max_pool({"x": x}, attrs, None)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 1, 0] == 3


def test_loop_compiles_in_the_background_and_numpy_runs_meanwhile():
    def add_one(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] + 1

    loop = jit.Loop(add_one)
    a, out = np.arange(3.0), np.empty(3)
    jit.set_background(True)
    try:
        first = loop.ready(a, out)  # submitted: the caller's NumPy code runs this time
        jit.wait_compiled()
        compiled = loop.ready(a, out)
    finally:
        jit.set_background(False)
    assert first is None
    compiled(a, out)
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    assert loop.ready(a.astype(np.float32), out.astype(np.float32)) is not None  # new types


def test_loop_returns_none_without_numba_or_when_numba_cannot_compile(monkeypatch):
    def uses_a_python_object(a):
        return {"not": object()}  # outside numba's subset

    bad = jit.Loop(uses_a_python_object)
    assert bad.ready(np.zeros(2)) is None and bad.ready(np.zeros(2)) is None
    monkeypatch.setattr(jit, "available", lambda: False)
    assert jit.Loop(lambda a: None).ready(np.zeros(2)) is None


def test_kernel_outputs_are_taken_again_only_when_nothing_holds_them():
    from tapeflow._core.buffers import Spares
    spare = Spares()
    a = spare.empty((4, 3), np.dtype(np.float32))
    b = spare.empty((4, 3), np.dtype(np.float32))  # `a` is held: a new array
    assert a is not b
    kept = {id(a), id(b)}
    del a, b  # nothing holds the kept arrays now: one is taken again
    c = spare.zeros((4, 3), np.dtype(np.float32))
    assert id(c) in kept and c.sum() == 0
    assert spare.empty((4, 3), np.dtype(np.float64)) is not c  # another dtype
    # through the kernels: a result kept by the caller keeps its values
    rng = np.random.default_rng(3)
    attrs = dict(ksize=(2, 2), strides=(2, 2), padding="VALID", data_format="NHWC",
                 explicit_paddings=[])
    x1, x2 = rng.standard_normal((2, 2, 4, 4, 3)).astype(np.float32)
    y1 = conv.max_pool({"x": x1}, attrs, None)
    want = y1.copy()
    y2 = conv.max_pool({"x": x2}, attrs, None)
    np.testing.assert_array_equal(y1, want)
    assert not np.array_equal(y2, want)
    dy = rng.standard_normal(y1.shape).astype(np.float32)
    d1 = conv.max_pool_grad({"x": x1, "dy": dy}, attrs, None)
    keep = d1.copy()
    conv.max_pool_grad({"x": x2, "dy": dy}, attrs, None)
    np.testing.assert_array_equal(d1, keep)
