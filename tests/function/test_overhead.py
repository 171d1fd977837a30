"""What a traced program costs around its kernels (function/executor.py, function/fuse.py,
_core/threads.py): BLAS's thread count set once per program run and given back, Const
values bound when the program is compiled, fused kernels called directly with their input
arrays, and a fused region's rent counted over its whole call. Each test checks results
against NumPy (float64) or the unfused program, not timings."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
import threadpoolctl

import tapeflow as tf
from tapeflow._core import threads
from tapeflow.function import executor, fuse


def _blas_threads() -> set:
    return {lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"}


def _source(f, *specs) -> str:
    return f.get_concrete_function(*specs)._program(tf.find_backend("numpy")).source


def test_a_program_run_sets_blas_threads_once_and_gives_the_users_setting_back(monkeypatch):
    w = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    f = tf.function(lambda x: tf.matmul(tf.matmul(x, w), w.T) + tf.matmul(x, w[:, :3]))
    x = np.arange(6.0).reshape(2, 3)
    f(tf.constant(x))  # traced and compiled
    entered, seen = [], []
    enter, matmul = threads.blas.enter, np.matmul
    monkeypatch.setattr(threads.blas, "enter", lambda n: (entered.append(n), enter(n))[1])

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return matmul(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", spy)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        out = f(tf.constant(x)).numpy()
        assert _blas_threads() == {2}  # the program's setting is gone with its run
    monkeypatch.undo()
    assert entered == [1]  # one scope for the run's three products, not one per product
    assert len(seen) == 3 and all(s == {1} for s in seen)
    np.testing.assert_allclose(out, x @ w @ w.T + x @ w[:, :3], rtol=1e-15)
    assert threads.blas._asked == []


def test_a_failing_program_names_its_node_and_gives_the_blas_setting_back():
    f = tf.function(lambda a, b: tf.matmul(a, b) * 2.0, input_signature=[
        tf.TensorSpec([None, None], tf.float64), tf.TensorSpec([None, None], tf.float64)])
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"MatMul.*\[2, 3\].*\[4, 5\].*node MatMul of function"):
            f(tf.ones([2, 3], tf.float64), tf.ones([4, 5], tf.float64))
        assert _blas_threads() == {2}
    assert threads.blas._asked == []
    np.testing.assert_array_equal(
        f(tf.ones([2, 3], tf.float64), tf.ones([3, 1], tf.float64)).numpy(), np.full((2, 1), 6.0))


def test_eager_blas_kernels_keep_their_own_scope_and_expose_the_unscoped_function():
    from tapeflow._core.registry import KERNELS
    kernel = KERNELS["MatMul"]["numpy"].func
    assert kernel.unscoped is not kernel and kernel.unscoped.__name__ == "matmul"
    with threadpoolctl.threadpool_limits(3, user_api="blas"):
        y = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
        assert _blas_threads() == {3}
    np.testing.assert_array_equal(y.numpy(), np.full((2, 2), 2.0))


def test_constants_are_bound_when_the_program_is_compiled():
    c = np.array([[0.5, -1.0], [2.0, 0.25]])
    f = tf.function(lambda x: tf.matmul(x, tf.constant(c)) - tf.constant(c))
    spec = tf.TensorSpec([2, 2], tf.float64)
    source = _source(f, spec)
    bound = re.findall(r"^    v\d+ = (c\d+)$", source, re.M)
    assert bound  # the Const nodes: no kernel call per run
    x = np.array([[1.0, 2.0], [3.0, -4.0]])
    for _ in range(2):  # the bound array is never written to: the same result each run
        np.testing.assert_array_equal(f(tf.constant(x)).numpy(), x @ c - c)
    np.testing.assert_array_equal(c, [[0.5, -1.0], [2.0, 0.25]])


# ------------------------------------------------------------------ fused kernels


needs_jit = pytest.mark.skipif(not fuse.available(), reason="the jit extra (numba)")


def _region(x, b, s):
    """One fused region: a full input, a broadcast bias, a 0-d scale; an output used
    outside (y) besides the last one, and a full sum at its end."""
    y = tf.tanh(x * s + b)
    z = y * y - x
    return y, z, tf.reduce_sum(z), tf.matmul(y, tf.ones([y.shape[-1], 1], y.dtype))


def _reference(x, b, s):
    y = np.tanh(x * s + b)
    z = y * y - x
    return y, z, z.sum(), y.sum(axis=1, keepdims=True)


@pytest.fixture
def _blocks_until_asked(monkeypatch):
    """Fused kernels run as NumPy blocks until a test lets them compile (in the
    background, as by default)."""
    monkeypatch.setattr(fuse, "COMPILE_AFTER_SECONDS", 1e9)
    fuse.set_background(True)


@needs_jit
@pytest.mark.parametrize("parallel", [False, True])
def test_a_fused_node_is_called_directly_and_every_tier_gives_the_same_bits(
        monkeypatch, _blocks_until_asked, parallel):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 24)).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    s = np.float32(0.75)
    args = (tf.constant(x), tf.constant(b), tf.constant(s))
    threads_before = tf.config.threading.get_intra_op_parallelism_threads()
    if parallel:  # the steady state's split over threads, on the same (small) kernel
        monkeypatch.setattr(fuse, "PARALLEL_FROM", 256)
        tf.config.threading.set_intra_op_parallelism_threads(2)
    try:
        f = tf.function(_region)
        cf = f.get_concrete_function(*args)
        (node,) = [n for n in cf.optimized_graph.get_operations()
                   if n.op == "FusedElementwise"]
        kernel = node.attrs["kernel"]
        source = _source(f, *args)
        assert re.search(r"^    v\d+, v\d+, v\d+, = k\d+\(", source, re.M)  # no inputs dict
        blocks = [t.numpy() for t in f(*args)]
        assert kernel._run is None  # (NumPy blocks)
        monkeypatch.setattr(fuse, "COMPILE_AFTER_SECONDS", 0.0)
        f(*args)  # starts its compile
        fuse.wait_compiled()
        first = [t.numpy() for t in f(*args)]  # the loop's first run
        assert kernel._run is not None and kernel._parallel == parallel
        steady = [[t.numpy() for t in f(*args)] for _ in range(3)]
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(threads_before)
    for got in [first] + steady:
        for a, e in zip(got, blocks):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_array_equal(a, e)  # the same bits, whichever tier ran
    for a, e in zip(steady[-1], _reference(x.astype(np.float64), b.astype(np.float64), 0.75)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-5)
    assert steady[0][0] is not steady[1][0]  # a new array per result (none kept alive)


@needs_jit
def test_a_failing_direct_call_names_the_fused_node_and_its_run_time_shapes(monkeypatch):
    def fail(self, *arrays):
        raise ValueError("no loop for these")
    monkeypatch.setattr(fuse.FusedKernel, "direct", fail)
    f = tf.function(lambda x: tf.exp(x) * 2.0 + x)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"FusedElementwise.*no loop for these.*\(3, 2\).*node Fused_"):
        f(tf.ones([3, 2]))
    assert "FusedElementwise" in executor.DIRECT


@needs_jit
def test_a_regions_rent_is_its_whole_call(monkeypatch, _blocks_until_asked):
    f = tf.function(lambda x: tf.exp(x) * 2.0 + x)
    x = tf.constant(np.linspace(-1.0, 1.0, 10, dtype=np.float32))
    np.testing.assert_allclose(f(x).numpy(), np.exp(x.numpy()) * 2 + x.numpy(), rtol=1e-6)
    (node,) = [n for n in f.get_concrete_function(x).optimized_graph.get_operations()
               if n.op == "FusedElementwise"]
    kernel = node.attrs["kernel"]
    before = kernel._rent
    stored = fuse.FusedKernel._stored

    def slow(self, n):  # time outside the NumPy blocks: in the call, so in the rent
        time.sleep(0.005)
        return stored(self, n)
    monkeypatch.setattr(fuse.FusedKernel, "_stored", slow)
    f(x)
    assert kernel._rent - before >= 0.005


def test_ops_whose_kernel_is_a_ufunc_are_called_as_that_ufunc():
    f = tf.function(lambda x, y: tf.maximum(x - y, 0.0) * tf.exp(y), jit_compile=False)
    spec = tf.TensorSpec([3], tf.float64)
    source = _source(f, spec, spec)
    assert re.search(r"^    v\d+ = u\d+\(i0, i1\)$", source, re.M)  # x - y, no inputs dict
    x, y = np.array([1.0, -2.0, 3.5]), np.array([0.5, 1.0, -1.0])
    np.testing.assert_array_equal(f(tf.constant(x), tf.constant(y)).numpy(),
                                  np.maximum(x - y, 0.0) * np.exp(y))
    i = tf.function(lambda a: tf.maximum(a - 1, 0))  # 0-d integers: NumPy scalars inside
    assert i(tf.constant(5)).numpy() == 4 and i(tf.constant(0)).numpy() == 0


def test_a_failing_ufunc_line_names_the_node_and_its_own_inputs_shapes():
    spec = tf.TensorSpec([None], tf.float64)
    f = tf.function(lambda x, y: tf.sqrt(x) + tf.tanh(y), input_signature=[spec, spec],
                    jit_compile=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Add.*x: float64\[3\].*y: float64\[2\].*node Add of function"):
        f(tf.ones([3], tf.float64), tf.ones([2], tf.float64))


def test_kernels_with_a_direct_call_run_without_an_inputs_dict():
    """Reshape, Transpose, Concat and MatMul (and Identity) run as calls made once for the
    node's attributes (their kernels' `direct`): the kernels' values, views where the
    kernels give views."""
    def f(x, y):
        a = tf.reshape(x, [3, 4])
        b = tf.transpose(tf.reshape(y, [4, 3]))
        return tf.concat([a, b], 0), tf.identity(a), tf.matmul(a, b, transpose_b=True)

    spec = tf.TensorSpec([12], tf.float64)
    g = tf.function(f, jit_compile=False)
    source = _source(g, spec, spec)
    assert len(re.findall(r"^    v\d+, = k\d+\(", source, re.M)) == 5, source  # (no Identity)
    assert "n = {" not in source
    x, y = np.arange(12.0), np.arange(12.0) * -2.0
    got, same, product = g(tf.constant(x), tf.constant(y))
    np.testing.assert_array_equal(got.numpy(), np.concatenate(
        [x.reshape(3, 4), y.reshape(4, 3).T], 0))
    np.testing.assert_array_equal(same.numpy(), x.reshape(3, 4))
    np.testing.assert_array_equal(product.numpy(), x.reshape(3, 4) @ y.reshape(4, 3))


def test_a_failing_direct_call_raises_the_kernels_own_error():
    spec = tf.TensorSpec([None], tf.float64)
    g = tf.function(lambda x: tf.reshape(x, [3, -1]) * 2.0, input_signature=[spec],
                    jit_compile=False)
    np.testing.assert_array_equal(g(tf.ones([6], tf.float64)).numpy(), np.full((3, 2), 2.0))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Reshape: cannot reshape \[7\] into \[3, -1\]"
                             r".*node Reshape of function"):
        g(tf.ones([7], tf.float64))
