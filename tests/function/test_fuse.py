"""Elementwise fusion (API §6.5, function/fuse.py): regions of elementwise ops and their
full sums run as one compiled kernel with the `jit` extra (numba); results equal the
unfused program to rounding; jit_compile=False, the "remapping" option, unknown dims
and a missing numba all leave the program unfused."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tapeflow as tf
from tapeflow._core import jit
from tapeflow._core.threads import ThreadChoice
from tapeflow.function import fuse, optimizer as passes

pytestmark = pytest.mark.skipif(not fuse.available(), reason="the jit extra (numba)")


@pytest.fixture(autouse=True, scope="module")
def _compile_on_the_first_call():
    """These tests test the compiled loops: every kernel compiles on its first call
    (tests of background compiling switch back, and compile from a kernel's second call:
    the rent policy has its own test)."""
    fuse.set_background(False)
    rent, fuse.COMPILE_AFTER_SECONDS = fuse.COMPILE_AFTER_SECONDS, 0.0
    yield
    fuse.COMPILE_AFTER_SECONDS = rent
    fuse.set_background(True)


def w3(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(x) * x + tf.exp(-x * x))
    return y, tape.gradient(y, x)


def fused_nodes(cf):
    return [n for n in cf.optimized_graph.get_operations() if n.op == "FusedElementwise"]


@pytest.mark.parametrize("dtype, tol", [(tf.float32, 1e-6), (tf.float64, 1e-14)])
def test_a_chain_and_its_gradient_fuse_and_match_the_unfused_program(dtype, tol):
    x = tf.constant(np.random.default_rng(0).normal(size=(300, 7)), dtype=dtype)
    fused = tf.function(w3)
    plain = tf.function(w3, jit_compile=False)
    cf = fused.get_concrete_function(x)
    nodes = fused_nodes(cf)
    assert nodes and sum(len(n.attrs["members"]) for n in nodes) >= 8, cf.optimized_graph
    assert "Sum" in sum((n.attrs["members"] for n in nodes), ())  # the sum fused too
    assert not fused_nodes(plain.get_concrete_function(x))
    for a, b in zip(fused(x), plain(x)):  # (the gradient cancels: absolute error counts)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol * 10, atol=tol)
    assert "members=('" in str(cf.optimized_graph)  # printed with its member ops


def test_large_arrays_run_in_parallel_and_still_match():
    x = tf.constant(np.linspace(-3, 3, fuse.PARALLEL_FROM * 3), dtype=tf.float64)
    a = tf.function(w3)(x)
    b = tf.function(w3, jit_compile=False)(x)
    np.testing.assert_allclose(a[0].numpy(), b[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(a[1].numpy(), b[1].numpy(), rtol=1e-13, atol=1e-14)


def test_the_remapping_option_and_unknown_dims_leave_it_unfused():
    x = tf.constant(np.ones((4, 3)), dtype=tf.float64)
    try:
        passes.set_experimental_options({"remapping": False})
        assert not fused_nodes(tf.function(w3).get_concrete_function(x))
    finally:
        passes.set_experimental_options({"remapping": True})
    f = tf.function(w3, input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    cf = f.get_concrete_function()
    assert not fused_nodes(cf)  # a run-time size 1 could broadcast: one loop cannot
    np.testing.assert_allclose(f(x)[1].numpy(), tf.function(w3, jit_compile=False)(x)[1].numpy())


def test_without_numba_the_program_runs_unfused(monkeypatch):
    from tapeflow.function import concrete
    monkeypatch.setattr(concrete, "fuse_available", lambda: False)
    x = tf.constant(np.ones((4, 3)), dtype=tf.float64)
    cf = tf.function(w3).get_concrete_function(x)
    assert not fused_nodes(cf)
    np.testing.assert_allclose(cf(x)[0].numpy(), np.sum(np.tanh(1.0) + np.exp(-1.0)) * 12)


def test_nan_inf_and_division_by_zero_behave_as_numpy():
    @tf.function
    def f(x):
        return tf.exp(x) / (x - 1.0) * 2.0, tf.reduce_sum(tf.sqrt(x) + x)

    x = tf.constant([1.0, -1.0, np.inf, np.nan, 0.0], dtype=tf.float64)
    assert fused_nodes(f.get_concrete_function(x))
    with np.errstate(all="ignore"):
        want = np.exp(x.numpy()) / (x.numpy() - 1.0) * 2.0
    got = f(x)[0].numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    assert np.isnan(f(x)[1].numpy())


def test_compiled_kernels_are_cached_in_memory_and_on_disk(tmp_path):
    source = fuse.generate(*_region_of(lambda x: tf.sin(x) * 2.0 + 1.0))[0]
    assert fuse.compile_source(source) is fuse.compile_source(source)  # in memory
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from tapeflow.function import fuse\n"
        "import numpy as np\n"
        "k = fuse.compile_source(open(%r).read())[0]\n"
        "k(0, 8, np.ones(8), np.empty(8)); print(sum(k.stats.cache_hits.values()))\n")
    src_file = tmp_path / "source.py"
    src_file.write_text(source)
    env = dict(os.environ, TAPEFLOW_CACHE=str(tmp_path / "cache"))
    root = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    run = [sys.executable, "-c", script % (root, str(src_file))]
    cold = int(subprocess.run(run, env=env, capture_output=True, text=True,
                              check=True).stdout)
    warm = int(subprocess.run(run, env=env, capture_output=True, text=True,
                              check=True).stdout)
    assert list((tmp_path / "cache" / "fused").rglob("*.nbi")), "numba wrote no cache index"
    assert (cold, warm) == (0, 1)  # a new process loads the kernel instead of compiling


def _region_of(fn):
    cf = tf.function(fn, jit_compile=False).get_concrete_function(
        tf.TensorSpec([8], tf.float64))
    graph = cf.optimized_graph
    (region,) = fuse.find_regions(graph)
    exported = {graph.outputs[0].id}
    return region, exported


UNARY = [tf.sin, tf.tanh, tf.exp, lambda t: -t, tf.math.square, tf.nn.sigmoid, tf.nn.relu,
         lambda t: tf.sqrt(tf.abs(t) + 1.0)]
BINARY = [tf.add, tf.multiply, tf.subtract, lambda a, b: a / (tf.abs(b) + 1.0),
          tf.maximum, tf.minimum]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 30),
                          st.integers(0, 30)), min_size=2, max_size=10),
       st.integers(0, 2**31 - 1))
def test_random_elementwise_programs_fused_equal_unfused(steps, seed):
    x = tf.constant(np.random.default_rng(seed).normal(size=(5, 4)), dtype=tf.float64)

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            values = [x, x * 0.5]
            for unary, k, a, b in steps:
                if unary:
                    values.append(UNARY[k % len(UNARY)](values[a % len(values)]))
                else:
                    values.append(BINARY[k % len(BINARY)](values[a % len(values)],
                                                          values[b % len(values)]))
            out = tf.reduce_sum(values[-1]) + tf.reduce_sum(values[-2])
        return out, tape.gradient(out, x)

    fused, plain = tf.function(f)(x), tf.function(f, jit_compile=False)(x)
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11, atol=1e-12)


def test_a_region_numba_cannot_compile_runs_as_numpy_blocks(monkeypatch):
    x = tf.constant(np.linspace(-1, 1, 12).reshape(3, 4), dtype=tf.float64)
    f = tf.function(w3)
    want = tf.function(w3, jit_compile=False)(x)
    cf = f.get_concrete_function(x)
    kernel = fused_nodes(cf)[0].attrs["kernel"]

    def refuse(*args):
        raise RecursionError("maximum recursion depth exceeded")
    kernel._kernels = fuse.compile_source(kernel.source)
    kernel._kernels = (refuse, *kernel._kernels[1:])
    kernel._loop, kernel._ready = None, {}  # (another test may have run this region)
    monkeypatch.setattr(fuse, "COMPILE_AFTER", 1)  # (a cold cache: compile on this call)
    got = f(x)
    fuse.wait_compiled()  # (on a cold cache the refused compile runs in the background)
    assert kernel.compiled is False
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, atol=1e-14)


def test_long_chains_are_cut_into_kernels_of_bounded_size(monkeypatch):
    monkeypatch.setattr(fuse, "MAX_MEMBERS", 40)  # (small: each kernel compiles quickly)

    @tf.function
    def chain(x):
        for _ in range(50):
            x = x * 0.5 + 0.25
        return x

    x = tf.constant(np.linspace(0, 1, 8))
    sizes = [len(n.attrs["members"]) for n in fused_nodes(chain.get_concrete_function(x))]
    assert len(sizes) >= 3 and max(sizes) <= 40, sizes
    np.testing.assert_allclose(chain(x).numpy(), 0.5 + (x.numpy() - 0.5) * 0.5 ** 50,
                               rtol=1e-12)


def test_a_kernel_compiles_in_the_background_while_numpy_blocks_run(monkeypatch, tmp_path):
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: nothing compiled yet
    fuse.set_background(True)
    try:
        def f(x):  # (a constant no other test uses: a new kernel)
            return tf.reduce_sum(tf.sin(x) * 1.2345 + x * x / (x * x + 1.0))
        x = tf.constant(np.linspace(-2, 2, 64), dtype=tf.float64)
        want = tf.function(f, jit_compile=False)(x).numpy()
        g = tf.function(f)
        first = g(x).numpy()  # runs at once as NumPy blocks, compiling nothing yet
        kernel = fused_nodes(g.get_concrete_function(x))[0].attrs["kernel"]
        assert 0 not in kernel._ready and fuse.COMPILE_AFTER == 2
        second = g(x).numpy()  # NumPy blocks again; the loop compiles meanwhile
        assert not isinstance(kernel._ready[0], (bool, str))  # a background future
        assert kernel._rent > 0  # (the blocks' time: what decides when to compile)
        np.testing.assert_allclose(first, want, rtol=1e-13)
        fuse.wait_compiled()
        later = g(x).numpy()  # the compiled loop from now on
        assert kernel._ready[0] is True and kernel.compiled
        # the tiers took turns: the blocks call the loop's own sin, and the sum has one
        # order, so every call gave the same bits
        assert first.tobytes() == second.tobytes() == later.tobytes()
        # (other kernels' background compiles may finish here too: this kernel's marker)
        markers = list((tmp_path / "fused").glob(f"{jit.module_name(kernel.source)}.0.ready"))
        assert len(markers) == 1  # a later process loads it on its first call
        fresh = fuse.FusedKernel(kernel.source, kernel.n_outputs, kernel.reductions,
                                 tf.float64, kernel.members)
        arrays = list(np.broadcast_arrays(x.numpy()))  # (inputs of the same types)
        fresh(arrays)  # NumPy blocks: the marker is seen, a load is not worth it yet
        assert fresh._cached is True and 0 not in fresh._ready
        fresh(arrays)  # (COMPILE_AFTER_SECONDS is 0 here) the load starts, in the background
        fuse.wait_compiled()
        fresh(arrays)
        assert fresh._ready[0] is True
    finally:
        fuse.set_background(False)


def test_a_kernel_that_runs_a_little_is_never_compiled(monkeypatch, tmp_path):
    """Rent or buy: blocks that took less than COMPILE_AFTER_SECONDS in all start no
    compile (a compile costs far more than they do)."""
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))
    monkeypatch.setattr(fuse, "COMPILE_AFTER_SECONDS", 3600.0)
    fuse.set_background(True)
    try:
        g = tf.function(lambda x: tf.reduce_sum(tf.cos(x) * 2.25 + x * x / (x * x + 3.0)))
        x = tf.constant(np.linspace(-1, 1, 32), dtype=tf.float64)
        values = {g(x).numpy().tobytes() for _ in range(5)}
        kernel = fused_nodes(g.get_concrete_function(x))[0].attrs["kernel"]
        assert kernel._calls == 5 and 0 < kernel._rent < 3600 and not kernel._ready
        assert len(values) == 1
        monkeypatch.setattr(fuse, "COMPILE_AFTER_SECONDS", kernel._rent / 2)
        g(x)  # its blocks have cost more than that now: the compile starts
        assert 0 in kernel._ready
        fuse.wait_compiled()
    finally:
        fuse.set_background(False)


def _blocks_then_loops(g, *args) -> list:
    """`g`'s results (as NumPy) after its kernels compiled, asserted to be the bits of its
    first call, which ran their NumPy blocks (a cold cache and background compiling)."""
    first = [t.numpy() for t in tf.nest.flatten(g(*args))]
    kernels = [n.attrs["kernel"] for n in fused_nodes(g.get_concrete_function(*args))]
    assert kernels and all(0 not in k._ready for k in kernels)  # NumPy blocks ran
    for _ in range(3):
        g(*args)
    fuse.wait_compiled()
    later = [t.numpy() for t in tf.nest.flatten(g(*args))]
    assert all(k._ready.get(0) is True for k in kernels)  # the compiled loops ran
    for a, b in zip(first, later):
        assert a.tobytes() == b.tobytes()
    return later


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_blocks_and_compiled_loops_give_the_same_bits_for_every_op(dtype, monkeypatch,
                                                                        tmp_path):
    """The tiers take turns (NumPy blocks while the loop compiles, then the loop): the
    blocks call the loops' own transcendental functions, so every call gives the same
    bits (API 6.7), in float32 (vmath's exp, tanh and sigmoid) and float64 alike."""
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: the blocks run first
    fuse.set_background(True)
    try:
        def f(x, y):  # every fusible op (a constant no other test uses: new kernels)
            a = tf.sin(x) * 1.3579 + tf.cos(y) - tf.exp(-x * x) + tf.tanh(y) * x
            b = tf.math.expm1(x * 0.1) + tf.math.log1p(tf.abs(y)) + tf.math.log(x * x + 1.0)
            c = tf.sigmoid(a) * tf.sqrt(tf.abs(b)) + tf.math.rsqrt(x * x + 2.0) / (y + 9.0)
            d = tf.maximum(c, -0.5) + tf.minimum(a, b) + tf.nn.relu(b - a)
            return d, tf.reduce_sum(d * d)
        rng = np.random.default_rng(3)
        x = tf.constant(rng.standard_normal(5000) * 3, dtype=dtype)
        y = tf.constant(rng.standard_normal(5000) * 3, dtype=dtype)
        later = _blocks_then_loops(tf.function(f), x, y)
        want = [t.numpy() for t in tf.function(f, jit_compile=False)(x, y)]
        np.testing.assert_allclose(later[0], want[0], rtol=1e-5 if dtype == "float32" else 1e-12,
                                   atol=1e-6)
    finally:
        fuse.set_background(False)


def test_an_empty_input_runs_as_numpy_blocks_while_its_kernel_compiles(monkeypatch,
                                                                       tmp_path):
    # (a replica's part of a short last batch under tf.distribute can have no rows)
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: the blocks path runs
    fuse.set_background(True)
    try:
        g = tf.function(lambda x, s: tf.maximum(x * s + 0.4321, 0.0) * s)
        s = tf.constant(np.ones(3))
        assert g(tf.constant(np.zeros((0, 3))), s).shape == (0, 3)
        fuse.wait_compiled()
        assert g(tf.constant(np.zeros((0, 3))), s).shape == (0, 3)  # the compiled loop
    finally:
        fuse.set_background(False)


@pytest.mark.parametrize("shape,bias", [((4, 5, 3), (3,)), ((4, 5, 3), (5, 3)),
                                        ((4, 5, 3), (1, 1, 3)), ((70, 40, 30), (30,)),
                                        ((70, 40, 30), (40, 30))])
@pytest.mark.parametrize("tanh", [False, True])
def test_operands_broadcast_along_trailing_axes_fuse(shape, bias, tanh):
    """A bias added along the last axes joins the region (read at j % its size), in the
    serial, parallel and NumPy-block kernels alike; values and gradients as unfused."""
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal(shape))
    b = tf.constant(rng.standard_normal(bias))

    def f(x, b):
        with tf.GradientTape() as tape:
            tape.watch([x, b])
            z = x * 1.5 + b
            h = tf.tanh(z) if tanh else tf.nn.relu(z)
            loss = tf.reduce_sum(h * h - b)
        return loss, tape.gradient(loss, [x, b])

    fused, plain = tf.function(f), tf.function(f, jit_compile=False)
    got, want = fused(x, b), plain(x, b)
    kinds = [n for n in fused_nodes(fused.get_concrete_function(x, b))
             if any(tuple(t._shape) != tuple(shape) for t in n.inputs["inputs"]
                    if t._shape != ())]
    assert kinds, "the broadcast operand was left out of the region"
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-11)
    for a, c in zip(got[1], want[1]):
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("shape,stat", [((6, 7), (6, 1)), ((3, 4, 5), (3, 4, 1)),
                                        ((3, 4, 5), (3, 1, 1)), ((2, 1, 9), (2, 1, 1)),
                                        ((40, 3000), (40, 1))])
@pytest.mark.parametrize("bias", [False, True])
def test_per_row_statistics_broadcast_along_trailing_axes_fuse(shape, stat, bias):
    """A per-row value kept with keepdims (a layer norm's mean and variance) joins the
    region (read at j // the elements it stands for), also beside a bias along the last
    axes, in the compiled loops (blocks of rows, and one loop over long rows) and in the
    NumPy blocks alike: the same bits as unfused, values and gradients."""
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal(shape))
    m = tf.constant(rng.standard_normal(stat))
    b = tf.constant(rng.standard_normal(shape[-1:]))

    def f(x, m, b):
        with tf.GradientTape() as tape:
            tape.watch([x, m, b])
            z = (x - m) * tf.exp(m * 0.5) * 1.25
            if bias:
                z = z + b
            h = tf.tanh(z) * z
            loss = tf.reduce_sum(h * h)
        return loss, tape.gradient(loss, [x, m, b])

    fused, plain = tf.function(f), tf.function(f, jit_compile=False)
    got, want = fused(x, m, b), plain(x, m, b)
    cf = fused.get_concrete_function(x, m, b)
    assert any(tuple(t._shape) == stat for n in fused_nodes(cf) for t in n.inputs["inputs"]), \
        cf.optimized_graph
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)
    for a, c in zip(got[1], want[1]):
        if a is not None:
            np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("shape,stat", [((5, 7, 3), (5, 1, 1)), ((20, 3000), (20, 1))])
def test_per_row_operands_give_the_same_bits_in_numpy_blocks_and_compiled_loops(
        shape, stat, monkeypatch, tmp_path):
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: the blocks run first
    fuse.set_background(True)
    try:
        rng = np.random.default_rng(4)
        x = tf.constant(rng.standard_normal(shape), tf.float32)
        m = tf.constant(rng.standard_normal(stat), tf.float32)
        b = tf.constant(rng.standard_normal(shape[-1:]), tf.float32)
        g = tf.function(lambda x, m, b: tf.tanh((x - m) * tf.math.rsqrt(m * m + 0.2468) + b))
        (later,) = _blocks_then_loops(g, x, m, b)
        want = tf.tanh((x - m) * tf.math.rsqrt(m * m + 0.2468) + b).numpy()
        np.testing.assert_allclose(later, want, rtol=2e-6, atol=2e-6)
    finally:
        fuse.set_background(False)


def _lstm_gates(z, c):
    i, f, g, o = tf.split(z, 4, axis=-1)
    c2 = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
    return tf.sigmoid(o) * tf.tanh(c2), c2


def _gate_inputs(shape: tuple, seed: int) -> tuple:
    """z (four gates' pre-activations side by side) and c (the cell state) for `shape`."""
    rng = np.random.default_rng(seed)
    return (tf.constant(rng.standard_normal(shape)),
            tf.constant(rng.standard_normal(shape[:-1] + (shape[-1] // 4,))))


@pytest.mark.parametrize("shape", [(6, 4 * 5), (3, 2, 4 * 7), (2, 4 * 600)])
def test_windows_of_columns_are_read_in_place_by_the_region(shape):
    """An LSTM's gates: a Split (or column slices) of z along its last axis, read by one
    region, are read from z at their columns (no slice copied: the Split leaves the
    program), in blocks of rows and in one loop over long rows; values and gradients as
    unfused."""
    z, c = _gate_inputs(shape, 5)

    def f(z, c):
        with tf.GradientTape() as tape:
            tape.watch([z, c])
            h, c2 = _lstm_gates(z, c)
            h = h + tf.tanh(z[..., 1:1 + shape[-1] // 4]) * 0.5  # a slice off the gates
            loss = tf.reduce_sum(h * h) + tf.reduce_sum(c2)
        return h, c2, tape.gradient(loss, [z, c])

    fused, plain = tf.function(f), tf.function(f, jit_compile=False)
    cf = fused.get_concrete_function(z, c)
    forward = [n.op for n in cf.optimized_graph.get_operations()]
    assert forward.count("Split") == 0, cf.optimized_graph
    got, want = fused(z, c), plain(z, c)
    for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("shape", [(6, 4 * 5), (3, 2, 4 * 7), (2, 4 * 600)])
def test_an_lstm_cells_gradient_is_one_kernel_writing_the_joined_gate_gradients(shape):
    """The gradient of the gates' Split is a Concat of the four gate gradients: the
    region writes each into its columns of that one output (no Concat runs), in blocks
    of rows and in one loop over long rows; values as unfused."""
    z, c = _gate_inputs(shape, 7)

    def f(z, c):
        with tf.GradientTape() as tape:
            tape.watch([z, c])
            h, c2 = _lstm_gates(z, c)
            loss = tf.reduce_sum(h * h) + tf.reduce_sum(tf.sin(c2))
        return tape.gradient(loss, [z, c])

    fused, plain = tf.function(f), tf.function(f, jit_compile=False)
    cf = fused.get_concrete_function(z, c)
    ops = [n.op for n in cf.optimized_graph.get_operations() if n.op != "Placeholder"]
    assert "Concat" not in ops and "Split" not in ops and ops.count("FusedElementwise") == 1, \
        cf.optimized_graph
    for a, b in zip(fused(z, c), plain(z, c)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-13)


def test_values_joined_twice_and_a_join_whose_value_is_read_elsewhere():
    """A GRU's backward joins its gate gradients twice, in two orders: both Concats are
    the region's outputs. A value some other node also reads keeps its Concat."""
    rng = np.random.default_rng(8)
    a = tf.constant(rng.standard_normal((7, 9)))
    b = tf.constant(rng.standard_normal((7, 9)))

    def f(a, b):
        u = tf.tanh(a) * b
        x, y, z = u * 2.0, u - b, tf.sigmoid(u)
        return tf.concat([x, y, z], -1), tf.concat([z, y, x], 1)

    def g(a, b):
        u = tf.tanh(a) * b
        x, y = u * 2.0, u - b
        return tf.concat([x, y], -1), tf.reduce_max(y)  # y read by a reduction too

    for fn, joined in ((f, 2), (g, 0)):
        fused = tf.function(fn)
        ops = [n.op for n in fused.get_concrete_function(a, b).optimized_graph
               .get_operations()]
        assert ops.count("Concat") == 2 - joined if fn is f else ops.count("Concat") == 1
        for got, want in zip(fused(a, b), tf.function(fn, jit_compile=False)(a, b)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("shape", [(6, 4 * 5), (2, 3, 4 * 3), (2, 4 * 600)])
def test_gate_pre_activations_read_only_through_windows_are_never_made(shape):
    """z = p + m + b (b along the last axis, r per row), then split into gates: the gates'
    region computes each window of z from the same windows of p and m and its part of b,
    so z is never made: the program is one fused call; values and gradients as
    unfused."""
    rng = np.random.default_rng(9)
    p, m = (tf.constant(rng.standard_normal(shape)) for _ in range(2))
    b = tf.constant(rng.standard_normal(shape[-1:]))
    r = tf.constant(rng.standard_normal(shape[:-1] + (1,)))
    c = tf.constant(rng.standard_normal(shape[:-1] + (shape[-1] // 4,)))

    def cell(p, m, b, r, c):
        return _lstm_gates(p + m * r + b - 0.125, c)

    fused = tf.function(cell)
    cf = fused.get_concrete_function(p, m, b, r, c)
    source = cf._program(tf.find_backend("numpy")).source
    assert source.count(" = k") == 1, source  # one fused call
    for a, w in zip(fused(p, m, b, r, c), tf.function(cell, jit_compile=False)(p, m, b, r, c)):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-13, atol=1e-14)

    def grads(p, m, b, r, c):
        with tf.GradientTape() as tape:
            tape.watch([p, m, b, r, c])
            h, c2 = cell(p, m, b, r, c)
            loss = tf.reduce_sum(h * c2)
        return tape.gradient(loss, [p, m, b, r, c])

    for a, w in zip(tf.function(grads)(p, m, b, r, c),
                    tf.function(grads, jit_compile=False)(p, m, b, r, c)):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-12, atol=1e-13)


def test_pre_activations_read_elsewhere_are_made_once_and_shared():
    rng = np.random.default_rng(10)
    p, m = (tf.constant(rng.standard_normal((4, 8))) for _ in range(2))

    def f(p, m):
        z = tf.tanh(p) + m
        i, o = tf.split(z, 2, axis=-1)
        return tf.sigmoid(i) * o, tf.reduce_max(z), z[:, 1:3] * 2.0  # z read elsewhere

    got, want = tf.function(f)(p, m), tf.function(f, jit_compile=False)(p, m)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_a_cast_comparison_joins_the_region_as_a_number(dtype):
    """ReLU6's gradient `dy * cast(x <= 6)` (Minimum's rule): the cast comparison is a
    member of the gradient's region (T(x <= y)), the comparison and the cast leave the
    program; the same bits as unfused, a comparison read elsewhere included."""
    rng = np.random.default_rng(11)
    x = tf.constant(rng.standard_normal((4, 6, 6, 8)) * 5, dtype)
    dy = tf.constant(rng.standard_normal((4, 6, 6, 8)), dtype)

    def f(x, dy):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.minimum(tf.nn.relu(x), 6.0)
        return y, tape.gradient(y, x, output_gradients=dy), tf.reduce_any(x > 7.0)

    fused = tf.function(f)
    ops = [n.op for n in fused.get_concrete_function(x, dy).optimized_graph.get_operations()]
    assert "LessEqual" not in ops and "Cast" not in ops and "Greater" in ops, ops
    for a, b in zip(fused(x, dy), tf.function(f, jit_compile=False)(x, dy)):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_a_window_read_outside_the_region_and_other_slices_stay_slices():
    z = tf.constant(np.arange(24.0).reshape(4, 6) / 10)

    def f(z):
        w = z[:, 2:4]           # read by the region and returned: it stays
        u = z[::2, 0:2]         # every other row: not a window of columns
        return tf.tanh(w) * 2.0 + 1.0, w, tf.exp(u) * 3.0 - 1.0

    got = tf.function(f)(z)
    want = tf.function(f, jit_compile=False)(z)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-15)


def test_windows_give_the_same_bits_in_numpy_blocks_and_compiled_loops(monkeypatch, tmp_path):
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: the blocks run first
    fuse.set_background(True)
    try:
        rng = np.random.default_rng(6)
        z = tf.constant(rng.standard_normal((48, 4 * 24)), tf.float32)
        c = tf.constant(rng.standard_normal((48, 24)), tf.float32)
        def step(z, c):  # the gates and their gradient (joined into one output)
            with tf.GradientTape() as tape:
                tape.watch(z)
                h, c2 = _lstm_gates(z, c * 0.9753)
                loss = tf.reduce_sum(h * c2)
            return h, c2, tape.gradient(loss, z)

        later = _blocks_then_loops(tf.function(step), z, c)
        want = [t.numpy() for t in tf.function(step, jit_compile=False)(z, c)]
        for a, b in zip(later, want):
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
    finally:
        fuse.set_background(False)


def test_the_disk_cache_keeps_the_recently_used_kernels_under_its_limit(tmp_path):
    folder = tmp_path / "fused"
    (folder / "__pycache__").mkdir(parents=True)
    for age, name in enumerate(["old", "mid", "new"]):
        module = folder / f"tapeflow_fused_{name}.py"
        module.write_bytes(b"x" * 400_000)
        (folder / "__pycache__" / f"tapeflow_fused_{name}.kernel-7.py311.nbi").write_bytes(
            b"y" * 200_000)
        (folder / f"tapeflow_fused_{name}.0.ready").write_bytes(b"")
        os.utime(module, (1000.0 + age, 1000.0 + age))
    (folder / "unrelated.txt").write_bytes(b"z" * 10)
    removed = jit.sweep_cache(str(folder), 1.3)  # three kernels of 0.6 MB: one goes
    assert removed == 1
    left = sorted(p.name for p in folder.rglob("*") if p.is_file())
    assert not any("_old" in n for n in left) and "unrelated.txt" in left
    assert sum("_mid" in n for n in left) == 3 and sum("_new" in n for n in left) == 3
    assert jit.sweep_cache(str(folder), 100) == 0


def test_a_sweep_skips_files_another_process_removed_meanwhile(tmp_path, monkeypatch):
    """Processes sharing the cache sweep it at once: a file listed by one and removed
    by another before it is measured is skipped, not an error (a CI run lost an MPI
    rank to that FileNotFoundError)."""
    folder = tmp_path / "fused"
    (folder / "__pycache__").mkdir(parents=True)
    for age, name in enumerate(["old", "new"]):
        module = folder / f"tapeflow_fused_{name}.py"
        module.write_bytes(b"x" * 400_000)
        (folder / "__pycache__" / f"tapeflow_fused_{name}.kernel-7.py311.nbi").write_bytes(
            b"y" * 200_000)
        os.utime(module, (1000.0 + age, 1000.0 + age))
    listing = os.scandir

    def listed_then_removed(path):
        entries = list(listing(path))
        if not str(path).startswith(str(folder)):  # (another thread's listing: as is)
            return iter(entries)
        for entry in entries:
            if entry.name.endswith(".nbi") and "_new" in entry.name:
                os.remove(entry.path)  # the other process's sweep
        return iter(entries)

    monkeypatch.setattr(jit.os, "scandir", listed_then_removed)
    assert jit.sweep_cache(str(folder), 0.5) == 1  # 1.0 MB listed and left: old goes
    monkeypatch.undo()
    left = sorted(p.name for p in folder.rglob("*") if p.is_file())
    assert left == ["tapeflow_fused_new.py"]


def test_a_module_file_another_process_swept_is_written_again(tmp_path):
    """A generated module's file is marked used when loaded, and written again from its
    source when another process's sweep removed it (numba stamps that file)."""
    path = tmp_path / "tapeflow_fused_x.py"
    jit._keep_file(str(path), "A = 1\n")
    assert path.read_text() == "A = 1\n"
    os.utime(path, (1000.0, 1000.0))
    jit._keep_file(str(path), "A = 1\n")
    assert path.stat().st_mtime > 1000.0  # used now: the sweep keeps it
    path.unlink()
    jit._keep_file(str(path), "A = 1\n")
    assert path.read_text() == "A = 1\n"


def test_a_multi_pass_op_alone_runs_as_one_loop_on_large_arrays():
    """ReluGrad's NumPy kernel (`dy * (y > 0)`) makes a mask and a product: alone, on
    arrays of ALONE_FROM elements or more, it runs as one compiled loop."""
    def f(dy, y):
        return tf.engine.run_kernel("ReluGrad", {"dy": dy, "y": y})

    for n, fused in ((64, False), (fuse.ALONE_FROM, True)):
        dy, y = tf.constant(np.linspace(-1, 1, n)), tf.constant(np.cos(np.arange(n)))
        g = tf.function(f)
        ops = [m.attrs.get("members") for m in fused_nodes(g.get_concrete_function(dy, y))]
        assert ops == ([("ReluGrad",)] if fused else []), ops
        np.testing.assert_array_equal(g(dy, y).numpy(), dy.numpy() * (y.numpy() > 0))


def test_intra_op_threads_bound_the_threads_of_one_fused_op():
    from tapeflow._core.context import intra_op_threads
    assert tf.config.threading.get_intra_op_parallelism_threads() == 0  # tapeflow chooses
    assert intra_op_threads() == (os.cpu_count() or 1)
    x = tf.constant(np.linspace(-3, 3, fuse.PARALLEL_FROM * 2))
    f = tf.function(lambda x: tf.reduce_sum(x * x * 0.5 + x))
    want = np.sum(x.numpy() * x.numpy() * 0.5 + x.numpy())
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        assert intra_op_threads() == 1
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
        for bad in (-1, 1.5, True, "2"):
            with pytest.raises(ValueError, match="intra_op"):
                tf.config.threading.set_intra_op_parallelism_threads(bad)
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(0)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)


def test_thread_choice_tries_both_then_keeps_the_faster_and_explores_now_and_then():
    choice = ThreadChoice()
    assert choice.several() is True  # several threads first (a warm-up) ...
    choice.record(True, 1.0)
    assert choice.several() is False
    choice.record(False, 1.0)
    assert choice.several() is True
    choice.record(True, 5e-3)        # ... slow: the cores are busy
    assert choice.several() is False
    choice.record(False, 1e-3)
    picks = []
    for _ in range(2 * ThreadChoice.EXPLORE - 4):
        picks.append(choice.several())
        choice.record(picks[-1], 5e-3 if picks[-1] else 1e-3)
    # one thread, except at calls 8 and 16 and every EXPLORE-th call
    assert [choice.calls - len(picks) + 1 + k for k, p in enumerate(picks) if p] == [8, 16, 32, 64]
    for _ in range(3):  # the cores are free again: several threads get faster ...
        choice.record(True, 1e-4)
    assert choice.several() is True  # ... and win


def test_a_large_static_kernel_runs_its_serial_loop_when_that_is_faster():
    x = tf.constant(np.linspace(-3, 3, fuse.PARALLEL_FROM * 2))
    f = tf.function(lambda x: tf.nn.relu(x * 2.0 + 1.0) * x)
    want = np.maximum(x.numpy() * 2 + 1, 0) * x.numpy()
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-15)
    (node,) = fused_nodes(f.get_concrete_function(x))
    kernel = node.attrs["kernel"]
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-15)  # the steady state
    assert kernel._parallel and kernel._threads.runs == [0, 1]
    kernel._threads.seconds = [1e-9, 1.0]  # as if the parallel loop had stalled
    kernel._threads.runs = [2, 2]
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-15)
    assert kernel._threads.runs == [3, 2]  # the serial loop ran (and was timed)


def test_steady_calls_reuse_output_buffers_nobody_holds_and_never_clobber_kept_ones():
    f = tf.function(lambda x, s: tf.nn.relu(x * s + 1.0) * x)
    x = tf.constant(np.linspace(-2, 2, fuse.SPARE_BYTES // 8 + 512))  # (large: spares)
    outs = [f(x, tf.constant(float(k), tf.float64)) for k in range(4)]  # all kept
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out.numpy(), np.maximum(x.numpy() * k + 1, 0) * x.numpy())
    (node,) = fused_nodes(f.get_concrete_function(x, tf.constant(0.0, tf.float64)))
    kernel = node.attrs["kernel"]
    assert kernel._loop is not None  # the steady state
    del outs, out
    first = f(x, tf.constant(5.0, tf.float64)).numpy().__array_interface__["data"][0]
    second = f(x, tf.constant(6.0, tf.float64)).numpy().__array_interface__["data"][0]
    assert first == second  # the first result was gone: its buffer was taken again
