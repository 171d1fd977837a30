"""The array-API backend through the registry (API 12): priority rules, DLPack moves,
devices, the one-time fallback warning, and everything above the backend (tapes,
forward mode, tf.function, optimizers, checkpoints) running unchanged on it, checked on
array-api-strict against the NumPy backend."""
from __future__ import annotations

import os
import warnings

import array_api_strict
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.backends import BackendRegistry
from tapeflow.backends import ArrayAPIBackend
from tapeflow.backends.array_api import FallbackWarning, XP_KERNELS, _kernel

Strict = type(array_api_strict.asarray(0.0))


@pytest.fixture
def strict():
    """The registered "array_api" backend active for the test; NumPy's again after."""
    assert tf.set_backend("array_api")
    try:
        yield tf.find_backend("array_api")
    finally:
        tf.set_backend("numpy")


def test_array_api_is_registered_below_numpy():
    assert "array_api" in tf.backend_names()
    entries = tf._core.backends.REGISTRY.entries
    assert entries["array_api"].priority < entries["numpy"].priority
    assert tf.get_backend() == "numpy"
    assert isinstance(tf.find_backend("array_api"), ArrayAPIBackend)
    # no device of its own: CPU:0 stays NumPy's, and there is no GPU without CuPy
    assert tf.config.list_physical_devices() == [
        tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]


def test_highest_priority_backend_that_initializes_wins():
    reg = BackendRegistry()
    reg.register("numpy", tf._core.backends.NumpyBackend, priority=1)
    reg.register("xp", lambda: ArrayAPIBackend(array_api_strict), priority=2)

    def broken():
        raise RuntimeError("no device")
    reg.register("gpu", broken, priority=3)
    with pytest.warns(UserWarning, match="'gpu' failed to initialize"):
        assert reg.ensure_active().name == "xp"
    assert reg.active_name == "xp"


def test_any_name_gets_the_kernels(strict):
    tf.register_backend("mine", lambda: ArrayAPIBackend("array_api_strict"), priority=0)
    try:
        assert tf.get_kernel("Add", "mine") is None  # installed when it is built
        assert tf.set_backend("mine")
        assert tf.get_kernel("Add", "mine").func is XP_KERNELS["Add"]
        y = tf.constant([1.0, 2.0]) * 3.0
        assert type(y._native) is Strict
        np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    finally:
        tf.set_backend("numpy")
        tf.remove_backend("mine")


def test_data_moves_through_dlpack_without_a_copy(strict):
    tf.set_backend("numpy")
    t = tf.constant(np.arange(6.0).reshape(2, 3))
    host = t._native
    tf.set_backend("array_api")
    y = t + 1.0  # t's data moves to the active backend on first use
    assert type(t._native) is Strict and type(y._native) is Strict
    # the same memory: NumPy's buffer handed over through DLPack, not copied
    assert np.shares_memory(np.from_dlpack(t._native), host)
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0).reshape(2, 3) + 1)
    tf.set_backend("numpy")
    z = y * 2.0  # and back
    assert type(y._native) is np.ndarray
    np.testing.assert_array_equal(z.numpy(), (np.arange(6.0).reshape(2, 3) + 1) * 2)


def test_numpy_returns_an_independent_copy(strict):
    t = tf.constant([1.0, 2.0])
    a = t.numpy()
    a[0] = 9.0
    assert t.numpy()[0] == 1.0


def test_a_fallback_warns_once_naming_the_op(strict):
    _kernel._warned.discard(("Erf", "array_api"))
    x = tf.constant([0.5, 1.0])
    with pytest.warns(FallbackWarning, match="^Erf: the 'array_api' backend has no array-API"):
        y = tf.math.erf(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        tf.math.erf(x)  # the second call is silent
    assert type(y._native) is Strict  # the result is the backend's array again
    np.testing.assert_allclose(y.numpy(), [0.5204999, 0.8427008], rtol=1e-6)


def test_kernel_errors_name_the_op_shapes_and_dtypes(strict):
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"GatherV2: indices.* = 5 is "
                       r"not in \[0, 3\)"):
        tf.gather(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="floordiv"):
        tf.math.floordiv(tf.constant([1, 2]), tf.constant([1, 0]))
    # the engine is intact afterwards
    np.testing.assert_array_equal((tf.constant([1.0]) + 1.0).numpy(), [2.0])


class _GpuLike(ArrayAPIBackend):
    """What "cupy" is on a CUDA machine, over array-api-strict: a GPU device."""

    device_type = "GPU"

    def __init__(self):
        super().__init__(array_api_strict)


def test_device_gpu_places_ops_on_the_gpu_backend():
    tf.register_backend("gpu_like", _GpuLike, priority=0)
    try:
        assert tf.config.list_physical_devices("GPU") == [
            tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
        a = tf.constant([1.0, 2.0])
        with tf.device("GPU:0"):
            assert tf.get_backend() == "gpu_like"
            b = tf.exp(a)
        assert type(b._native) is Strict and tf.get_backend() == "numpy"
        np.testing.assert_allclose(b.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    finally:
        tf.set_backend("numpy")
        tf.remove_backend("gpu_like")


def _mlp_steps(traced: bool):
    """Three Adam steps of a small MLP; its final weights and losses, as NumPy arrays."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((16, 5)).astype(np.float32))
    y = tf.constant(rng.integers(0, 3, 16).astype(np.int32))
    w1 = tf.Variable(rng.standard_normal((5, 8)).astype(np.float32) * 0.5)
    b1 = tf.Variable(np.zeros(8, np.float32))
    w2 = tf.Variable(rng.standard_normal((8, 3)).astype(np.float32) * 0.5)
    variables = [w1, b1, w2]
    opt = tf.optimizers.Adam(learning_rate=0.05)

    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=tf.matmul(h, w2)))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    if traced:
        step = tf.function(step)
    losses = [float(step(x, y)) for _ in range(3)]
    return [v.numpy() for v in variables], losses, variables


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_training_steps_match_numpy(strict, traced):
    got, got_losses, variables = _mlp_steps(traced)
    assert all(type(v._value._native) is Strict for v in variables)
    tf.set_backend("numpy")
    want, want_losses, _ = _mlp_steps(traced)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_sgd_steps_accumulate_products_on_the_backend(strict):
    """SGD written out, traced: the optimizer makes the weight update an AssignAddMatMul
    node; on this backend its array-API kernel updates the variable, as NumPy's does."""
    def run():
        rng = np.random.default_rng(1)
        x = tf.constant(rng.standard_normal((16, 5)).astype(np.float32))
        w = tf.Variable(rng.standard_normal((5, 3)).astype(np.float32))

        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
            w.assign_sub(tape.gradient(loss, w) * 0.01)
            return loss
        for _ in range(3):
            step(x)
        return w, step.get_concrete_function(x)
    w, cf = run()
    assert type(w._value._native) is Strict
    got = w.numpy()
    assert "AssignAddMatMul" in [n.op for n in cf.optimized_graph.get_operations()]
    # the kernel itself, on this backend's arrays
    a, b, r = (np.arange(6.0).reshape(3, 2), np.ones((3, 4)), np.full((2, 4), 10.0))
    out = tf.engine.run_kernel("InplaceAddMatMul", {
        "ref": tf.constant(r), "a": tf.constant(a), "b": tf.constant(b),
        "alpha": tf.constant(0.5, tf.float64)}, {"adjoint_a": True, "adjoint_b": False,
                                                 "sign": -1.0})
    assert type(out._native) is Strict
    np.testing.assert_allclose(out.numpy(), r - 0.5 * a.T @ b)
    tf.set_backend("numpy")
    np.testing.assert_allclose(got, run()[0].numpy(), rtol=1e-5, atol=1e-6)


def test_traced_programs_run_per_op_kernels(strict):
    """Fused regions are numba loops over NumPy arrays: on another backend the program
    calls the backend's kernels one op at a time, and gives the eager values."""
    f = tf.function(lambda x: tf.reduce_sum(tf.tanh(x) * x + tf.exp(-x * x)))
    x = tf.constant(np.linspace(-2, 2, 50).astype(np.float32))
    y = f(x)
    cf = f.get_concrete_function(x)
    prog = cf._program(tf.find_backend("array_api"))
    assert prog.fused == 0 and "FusedElementwise" not in prog.source
    want = np.sum(np.tanh(x.numpy()) * x.numpy() + np.exp(-x.numpy() ** 2))
    np.testing.assert_allclose(float(y), want, rtol=1e-5)


def test_forward_mode_and_higher_order(strict):
    x = tf.constant([0.3, -1.2])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
        y = tf.sin(x) * x
    np.testing.assert_allclose(acc.jvp(y).numpy(), [np.cos(0.3) * 0.3 + np.sin(0.3), 0.0],
                               rtol=1e-6)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = tf.reduce_sum(x ** 3)
        g = inner.gradient(z, x)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), 6 * np.array([0.3, -1.2]),
                               rtol=1e-6)


def test_checkpoint_from_the_array_api_backend_loads_on_numpy(strict, tmp_path):
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    v.assign_add(tf.ones([2, 3]))
    assert type(v._value._native) is Strict
    path = tf.train.Checkpoint(v=v).write(os.path.join(tmp_path, "ckpt"))
    tf.set_backend("numpy")
    fresh = tf.Variable(np.zeros((2, 3), np.float32))
    tf.train.Checkpoint(v=fresh).read(path)
    assert type(fresh._value._native) is np.ndarray
    np.testing.assert_array_equal(fresh.numpy(), np.arange(6).reshape(2, 3) + 1)


def test_sparse_updates_write_back(strict):
    """A fallback that updates a variable in place writes the host result back."""
    table = tf.Variable(tf.ones([5, 2]))
    _kernel._warned.discard(("InplaceScatterAdd", "array_api"))
    with pytest.warns(FallbackWarning, match="InplaceScatterAdd"):
        table.scatter_add(tf.IndexedSlices(tf.ones([3, 2]), tf.constant([1, 1, 4]),
                                           tf.constant([5, 2])))
    assert type(table._value._native) is Strict
    np.testing.assert_array_equal(table.numpy()[:, 0], [1, 3, 1, 1, 2])


def test_a_dtype_the_namespace_lacks_is_a_clear_error(strict):
    with pytest.raises(TypeError, match="'array_api' backend .* has no dtype float16"):
        tf.constant(np.ones(2, np.float16))
    with pytest.raises(TypeError, match="has no dtype bfloat16"):
        tf.constant([1.0], dtype=tf.bfloat16)
    np.testing.assert_array_equal((tf.constant([1.0]) * 2.0).numpy(), [2.0])
