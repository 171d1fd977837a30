"""Engine: tidy/keep/dispose, memory accounting (shared buffers, GC), profile/time,
backend registry (priorities, lazy init, failing factories, moving data) and kernel
registry (sites, duplicates, setup/dispose hooks, custom ops)."""
import gc
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.backends import NumpyBackend


def live():
    gc.collect()
    m = tf.memory()
    return m["num_tensors"], m["num_data_buffers"], m["num_bytes"]


def test_memory_counts_tensors_and_bytes():
    n0, b0, by0 = live()
    a = tf.ones([4], tf.float32)
    n1, b1, by1 = live()
    assert (n1 - n0, b1 - b0, by1 - by0) == (1, 1, 16)
    del a
    assert live() == (n0, b0, by0)


def test_reshape_and_identity_share_one_buffer():
    n0, b0, by0 = live()
    a = tf.ones([2, 3], tf.float64)
    r = tf.reshape(a, [3, 2])
    i = tf.identity(a)
    n1, b1, by1 = live()
    assert (n1 - n0, b1 - b0, by1 - by0) == (3, 1, 48)
    np.testing.assert_array_equal(r.numpy(), np.ones((3, 2)))
    del a, i
    assert live()[1] - b0 == 1  # r still holds the buffer
    np.testing.assert_array_equal(r.numpy(), np.ones((3, 2)))
    del r
    assert live() == (n0, b0, by0)


def test_tidy_function_form_disposes_intermediates_and_keeps_result():
    n0, _, _ = live()
    kept = []

    def fn():
        a = tf.ones([3])
        b = a * 2.0
        kept.append(tf.keep(tf.ones([1])))
        return {"out": [b + 1.0]}
    out = tf.tidy(fn)
    assert out["out"][0].numpy().tolist() == [3.0, 3.0, 3.0]
    assert not kept[0].is_disposed
    del fn
    assert live()[0] - n0 == 2  # the result and the kept tensor


def test_tidy_named_nested_and_context_manager():
    outer_result = None
    with tf.tidy():
        x = tf.ones([2])
        inner = tf.tidy("inner", lambda: x * 3.0)
        assert not inner.is_disposed
        outer_result = tf.keep(inner + 1.0)
    assert x.is_disposed and inner.is_disposed
    assert outer_result.numpy().tolist() == [4.0, 4.0]


def test_tidy_scope_ends_when_fn_raises():
    from tapeflow._core.context import ctx
    depth = len(ctx.scopes)
    n0 = live()[0]

    def bad():
        tf.ones([5])
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        tf.tidy(bad)
    assert len(ctx.scopes) == depth and ctx.scope is None
    assert live()[0] == n0


def test_disposed_tensor_raises_clear_error():
    a = tf.ones([2])
    tf.dispose([a])
    assert a.is_disposed
    with pytest.raises(tf.errors.DisposedError, match="disposed"):
        a + 1.0
    with pytest.raises(tf.errors.DisposedError):
        a.numpy()


def test_failed_op_leaves_counters_and_scopes_intact():
    from tapeflow._core.context import ctx
    a, b = tf.ones([2, 3]), tf.ones([4])
    before = live()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Add.*\[2, 3\].*\[4\]"):
        tf.add(a, b)
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        tf.add(a, tf.ones([2, 3], tf.float64))
    assert live() == before
    assert ctx.scope is None and ctx.tapes == [] and ctx.accs == []


def test_profile_reports_kernels_and_memory():
    x = tf.ones([8])
    info = tf.profile(lambda: (x * 2.0) + 1.0)
    names = [k["name"] for k in info["kernels"]]
    assert "Mul" in names and "Add" in names
    add = [k for k in info["kernels"] if k["name"] == "Add"][-1]
    assert add["output_shapes"] == [[8]] and add["bytes_added"] == 32
    assert add["kernel_ms"] >= 0 and add["total_tensors_snapshot"] > 0
    assert info["result"].numpy().tolist() == [3.0] * 8
    assert info["peak_bytes"] >= 64 and info["new_tensors"] >= 1
    t = tf.time(lambda: x + 1.0)
    assert t["wall_ms"] >= t["kernel_ms"] >= 0


def test_profile_plot_writes_file(tmp_path):
    pytest.importorskip("matplotlib")
    info = tf.profile(lambda: tf.ones([4]) * 2.0)
    path = info.plot(str(tmp_path / "mem.png"))
    assert path.endswith("mem.png")
    data = (tmp_path / "mem.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"  # a PNG signature, then a decodable image
    import matplotlib.image
    img = matplotlib.image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0  # something was drawn


def test_profile_plot_is_legible_on_a_training_step(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.figure
    w = tf.Variable(tf.random.normal([64, 32], seed=1))
    x = tf.random.normal([128, 64], seed=2)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.relu(x @ w) ** 2)
        w.assign_sub(0.1 * tape.gradient(loss, w))
    info = tf.profile(step)
    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, **kw: drawn.append(fig))
    info.plot(str(tmp_path / "step.png"))
    [ax] = drawn[0].axes
    assert "Memory timeline" in ax.get_title() and "peak" in ax.get_title()
    assert ax.get_ylabel() == "memory in use (MB)" and "kernel call" in ax.get_xlabel()
    assert ax.get_xticklabels() == [] or all(  # numbers on x, not one kernel name per call
        t.get_text().lstrip("−-").replace(".", "").isdigit() or t.get_text() == ""
        for t in ax.get_xticklabels())
    assert not ax.yaxis.get_major_formatter().get_offset()  # no "1e6" offset
    box = [t.get_text() for t in ax.texts if t.get_text().startswith("largest")]
    assert len(box) == 1 and 1 <= box[0].count(" MB") <= 4
    top = max(info["kernels"], key=lambda k: k["bytes_added"])
    assert f"{top['name']} +{top['bytes_added'] / 1e6:.3g} MB" in box[0]


class ListBackend(NumpyBackend):
    """A second real backend for the tests: data stored as nested Python lists."""

    def write(self, values, shape, dtype):
        data_id = super().write(values, shape, dtype)
        self.writes = getattr(self, "writes", 0) + 1
        return data_id

    def read(self, data_id):
        return np.asarray(self._data[data_id])

    def move(self, data_id, values, shape, dtype):
        self._data[data_id] = np.array(values)


def _register_list_backend(name):
    tf.register_backend(name, ListBackend, priority=0)
    tf.register_kernel("Add", name, lambda i, a, b: np.add(i["x"], i["y"]))
    tf.register_kernel("Mul", name, lambda i, a, b: np.multiply(i["x"], i["y"]))


def test_second_backend_moves_data_on_first_use():
    _register_list_backend("lists")
    try:
        a = tf.constant([1.0, 2.0])
        n0, b0, by0 = live()
        assert tf.get_backend() == "numpy"
        tf.set_backend("lists")
        assert tf.get_backend() == "lists"
        c = a + a  # a's data moves to "lists"
        other = tf.find_backend("lists")
        assert other.num_data_ids() == 2
        np.testing.assert_array_equal(c.numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])  # still valid after the move
        assert live() == (n0 + 1, b0 + 1, by0 + 8)
        tf.set_backend("numpy")
        d = c * 2.0  # and back
        np.testing.assert_array_equal(d.numpy(), [4.0, 8.0])
        assert other.num_data_ids() == 1  # a stays there until used by numpy
    finally:
        tf.set_backend("numpy")
        tf.unregister_kernel("Add", "lists")
        tf.unregister_kernel("Mul", "lists")
        tf.remove_backend("lists")
    assert "lists" not in tf.backend_names()
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])  # rescued before removal
    np.testing.assert_array_equal((a + a).numpy(), [2.0, 4.0])


def test_failing_factory_is_skipped_with_warning():
    def broken():
        raise RuntimeError("no device")
    tf.register_backend("broken", broken, priority=100)
    try:
        with pytest.warns(UserWarning, match="broken"):
            assert tf.find_backend("broken") is None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert tf.set_backend("broken") is False
        assert tf.get_backend() == "numpy"
    finally:
        tf.remove_backend("broken")


def test_highest_priority_working_backend_is_default():
    from tapeflow._core.backends import BackendRegistry
    reg = BackendRegistry()
    reg.register("low", NumpyBackend, priority=1)
    reg.register("high", ListBackend, priority=5)

    def bad():
        raise ValueError("x")
    reg.register("best_but_broken", bad, priority=9)
    with pytest.warns(UserWarning):
        reg.ensure_active()
    assert reg.active_name == "high"
    assert reg.entries["low"].instance is None  # lazily: never built


def test_kernel_registry_sites_duplicates_and_override():
    tf.register_kernel("TwiceK", "numpy", lambda i, a, b: i["x"] * 2)
    try:
        with pytest.raises(tf.errors.AlreadyExistsError) as e:
            tf.register_kernel("TwiceK", "numpy", lambda i, a, b: i["x"] * 3)
        msg = str(e.value)
        assert msg.count("test_engine.py") == 2  # both sites named
        tf.register_kernel("TwiceK", "numpy", lambda i, a, b: i["x"] * 3, override=True)
        out = tf.engine.run_kernel("TwiceK", {"x": tf.constant([1.0])})
        assert out.numpy().tolist() == [3.0]
        assert tf.get_kernel("TwiceK", "numpy").site.endswith(tuple("0123456789"))
    finally:
        tf.unregister_kernel("TwiceK", "numpy")
    assert tf.get_kernel("TwiceK", "numpy") is None  # like tfjs's getKernel
    with pytest.raises(tf.errors.NotFoundError):
        tf.unregister_kernel("TwiceK", "numpy")
    with pytest.raises(tf.errors.NotFoundError):
        tf.engine.run_kernel("TwiceK", {"x": tf.constant([1.0])})


def test_setup_and_dispose_funcs():
    calls = []
    assert tf.register_backend("hooks", NumpyBackend, priority=0)
    tf.register_kernel("HookK", "hooks", lambda i, a, b: i["x"],
                       setup_func=lambda backend: calls.append(("setup", backend.name)),
                       dispose_func=lambda backend: calls.append(("dispose", backend.name)))
    try:
        tf.set_backend("hooks")
        assert calls == [("setup", "hooks")]
    finally:
        tf.set_backend("numpy")
        tf.remove_backend("hooks")
    assert calls[-1] == ("dispose", "hooks")
    tf.unregister_kernel("HookK", "hooks")


def test_custom_kernel_with_gradient_is_differentiable():
    tf.register_kernel("CubeK", "numpy", lambda i, a, b: i["x"] ** 3)
    tf.register_gradient("CubeK", lambda dy, saved, attrs: {"x": dy * 3.0 * saved[0] * saved[0]},
                         inputs_to_save=["x"])
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.engine.run_kernel("CubeK", {"x": x})
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [3.0, 12.0])
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.register_gradient("CubeK", lambda dy, saved, attrs: {})


def test_convert_to_tensor_defaults_and_errors():
    assert tf.convert_to_tensor(1.5).dtype is tf.float32
    assert tf.convert_to_tensor(3).dtype is tf.int32
    assert tf.convert_to_tensor(True).dtype is tf.bool
    assert tf.convert_to_tensor(np.zeros(2, np.float64)).dtype is tf.float64
    assert tf.convert_to_tensor([1, 2], dtype=tf.float64).dtype is tf.float64
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.convert_to_tensor(2.5, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.convert_to_tensor(object())  # (text converts: a string tensor, issue #31)
    src = np.array([1.0, 2.0])
    t = tf.convert_to_tensor(src)
    src[0] = 99.0  # the tensor owns a copy
    assert t.numpy()[0] == 1.0


def test_tensor_protocol():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert repr(tf.constant([1.0, 2.0])) == (
        "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>")
    assert x.shape == (2, 2) and x.shape.as_list() == [2, 2] and x.shape.rank == 2
    assert x.ndim == 2 and len(x) == 2 and isinstance(x.id, int)
    assert float(tf.constant(2.5)) == 2.5 and int(tf.constant(3)) == 3
    assert [1, 2, 3][tf.constant(1)] == 2
    assert np.asarray(x).sum() == 10.0
    assert {x: 1}[x] == 1 and x.ref().deref() is x
    with pytest.raises(tf.errors.InvalidArgumentError):
        bool(x)
    assert bool(tf.constant(True))
    eq = x == x
    assert eq.dtype is tf.bool and eq.numpy().all()
    ys = list(x)
    assert [y.numpy().tolist() for y in ys] == [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())


def test_variable_basics():
    v = tf.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0" and v.trainable and v.dtype is tf.float32 and v.shape == (2,)
    assert v.assign([3.0, 4.0]) is v
    assert v.assign_add([1.0, 1.0]).numpy().tolist() == [4.0, 5.0]
    assert v.assign_sub([1.0, 1.0]).numpy().tolist() == [3.0, 4.0]
    assert (v + 1.0).numpy().tolist() == [4.0, 5.0]
    assert v.read_value().numpy().tolist() == [3.0, 4.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        v.assign([1.0, 2.0, 3.0])
    with tf.tidy():
        w = tf.Variable(tf.ones([2]))
    assert w.numpy().tolist() == [1.0, 1.0]  # variables outlive tidy scopes


def test_dtypes():
    assert tf.as_dtype("float64") is tf.float64 and tf.as_dtype(np.int32) is tf.int32
    assert tf.as_dtype(np.dtype("complex64")) is tf.complex64
    assert tf.float16.is_floating and tf.bfloat16.is_floating and tf.bfloat16.size == 2
    assert tf.complex128.is_complex and tf.int8.is_integer and tf.uint8.is_integer
    assert tf.bool.name == "bool" and tf.float32.as_numpy_dtype is np.float32
    with pytest.raises(TypeError):
        tf.as_dtype("no_such_dtype")


def test_tensor_spec_and_shape():
    spec = tf.TensorSpec([None, 3], tf.float32, name="x")
    assert spec.is_compatible_with(tf.zeros([5, 3]))
    assert not spec.is_compatible_with(tf.zeros([5, 4]))
    assert not spec.is_compatible_with(tf.zeros([5, 3], tf.float64))
    assert tf.TensorShape([None, 2]).is_compatible_with([7, 2])
    assert tf.TensorShape([2, 3]).num_elements() == 6


def test_indexed_slices_densify():
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 0]),
                         tf.constant([3, 2]))
    dense = tf.convert_to_tensor(s)
    np.testing.assert_array_equal(dense.numpy(), [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])


def test_variable_updates_in_place_only_when_unshared():
    v = tf.Variable(np.zeros(3, np.float32))
    v.assign([1.0, 1.0, 1.0])
    base = id(v._value._native)  # an id: holding the array would count as sharing it
    v.assign_add([1.0, 2.0, 3.0])
    assert id(v._value._native) == base  # nobody else saw the buffer: updated where it lies
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0, 4.0])
    seen = v.read_value()  # a live read shares the buffer: the update must not change it
    v.assign_sub([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(seen.numpy(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])
    n = live()
    v.assign_sub([1.0, 1.0, 1.0])
    assert live() == n  # no new tensors or buffers either way


def test_dlpack_round_trip_without_copy():
    src = np.arange(6.0).reshape(2, 3)
    t = tf.from_dlpack(src)
    assert t.dtype is tf.float64 and t.shape == (2, 3)
    assert np.shares_memory(np.asarray(t), src)  # no copy
    np.testing.assert_array_equal((t * 2.0).numpy(), src * 2)
    back = np.from_dlpack(t)  # tensors are DLPack producers too
    np.testing.assert_array_equal(back, src)
    assert t.__dlpack_device__()[0] == 1  # kDLCPU


def test_in_place_update_never_shows_through_views():
    v = tf.Variable(np.zeros(4))
    v.assign(np.arange(4.0))
    tf.register_kernel("PassThroughK", "numpy", lambda i, a, b: i["x"])  # aliases its input
    try:
        y = tf.engine.run_kernel("PassThroughK", {"x": v})
        t = tf.transpose(tf.reshape(v, [2, 2]))  # NumPy views of the variable's memory
        v.assign_add(np.ones(4))
        np.testing.assert_array_equal(y.numpy(), np.arange(4.0))
        np.testing.assert_array_equal(t.numpy(), np.arange(4.0).reshape(2, 2).T)
        np.testing.assert_array_equal(v.numpy(), np.arange(4.0) + 1)
    finally:
        tf.unregister_kernel("PassThroughK", "numpy")


def test_profile_records_have_exactly_the_documented_keys():
    info = tf.profile(lambda: tf.ones([2]) + 1.0)
    assert set(info) == {"new_bytes", "new_tensors", "peak_bytes", "kernels", "result"}
    assert set(info["kernels"][0]) == {"name", "bytes_added", "total_bytes_snapshot",
                                       "tensors_added", "total_tensors_snapshot",
                                       "input_shapes", "output_shapes", "kernel_ms"}
    assert set(tf.memory()) == {"num_tensors", "num_data_buffers", "num_bytes", "unreliable",
                                "reasons"}


class ProtocolOnlyBackend:
    """A backend written from API §5.3 alone (no tapeflow base class)."""

    def __init__(self):
        self.store, self.next_id = {}, 0

    def write(self, values, shape, dtype):
        self.next_id += 1
        self.store[self.next_id] = np.array(values)
        return self.next_id

    def read(self, data_id):
        return self.store[data_id]

    def dispose_data(self, data_id):
        self.store.pop(data_id, None)

    def move(self, data_id, values, shape, dtype):
        self.store[data_id] = np.array(values)

    def num_data_ids(self):
        return len(self.store)

    def memory(self):
        return {"num_data_ids": len(self.store)}

    def dispose(self):
        self.store.clear()


def test_protocol_only_backend_works():
    from tapeflow._core import registry
    tf.register_backend("plain", ProtocolOnlyBackend, priority=0)
    names = [n for n, per in list(registry.KERNELS.items()) if "numpy" in per]
    for n in names:  # the NumPy kernels serve this backend too (its arrays are NumPy's)
        tf.register_kernel(n, "plain", registry.KERNELS[n]["numpy"].func)
    try:
        x = tf.constant([1.0, 2.0])
        tf.set_backend("plain")
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        assert tf.find_backend("plain").num_data_ids() >= 2
        np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
        g = tape.gradient(y, x)
        np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])
    finally:
        tf.set_backend("numpy")
        for n in names:
            tf.unregister_kernel(n, "plain")
        tf.remove_backend("plain")


def test_replacing_a_builtin_gradient_needs_override():
    from tapeflow._core import registry
    with pytest.raises(tf.errors.AlreadyExistsError, match="math.py"):
        tf.register_gradient("Sin", lambda dy, saved, attrs: {"x": dy})
    old = registry.GRADIENTS["Sin"]
    tf.register_gradient("Sin", lambda dy, saved, attrs: {"x": dy * 0.0}, override=True)
    try:
        x = tf.constant(1.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x)
        assert float(tape.gradient(y, x)) == 0.0
    finally:
        registry.GRADIENTS["Sin"] = old
