"""The small names ordinary TensorFlow code uses (API §7.6): __version__, Tensor formatting,
tf.dtypes, tf.device, tf.config device listings, and tf.image (resize and
per_image_standardization here; the dtype-preserving image ops also have op-table rows in
tests/ops/rows_image.py)."""
from __future__ import annotations

import importlib.metadata
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.backends import NumpyBackend


# =============================================================================== __version__


def test_version_is_the_package_version():
    assert isinstance(tf.__version__, str)
    assert tf.__version__ == importlib.metadata.version("tapeflow")
    assert all(part.isdigit() for part in tf.__version__.split(".")[:2])


# =============================================================================== formatting


def test_format_specs_on_scalars():
    assert f"{tf.constant(1.23456):.3f}" == "1.235"
    assert f"{tf.constant(2.5, tf.float64):8.2f}" == "    2.50"
    assert f"{tf.constant(42):d}" == "42"
    assert f"{tf.constant(42, tf.int64):>5d}" == "   42"
    assert f"{tf.constant(7):.2f}" == "7.00"  # an int formats with a float spec, as in Python
    assert f"{tf.constant(1.5)}" == "1.5"
    assert f"{tf.constant(1e-3):e}" == "1.000000e-03"
    assert f"{tf.constant(True)}" == "True"
    assert "{:.1%}".format(tf.constant(0.25)) == "25.0%"


def test_format_on_non_scalars_delegates_to_numpy_like_tf():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for spec in (".2f", "d", ">10"):
        with pytest.raises(TypeError, match="unsupported format string passed to"):
            format(t, spec)
    with pytest.raises(TypeError, match="unsupported format string"):
        format(tf.constant([1.5]), ".2f")  # size 1 is still not a scalar
    assert f"{t}" == str(t.numpy())  # TF: the NumPy value's str, not the tf.Tensor(...) form
    assert format(tf.constant([1, 2]), "") == "[1 2]"
    assert f"{tf.zeros([0])}" == "[]"


def test_float_spec_on_a_float_scalar_is_the_number():
    assert float(f"{tf.constant(0.1, tf.float64):.17g}") == 0.1


def test_repr_and_str_like_tf2():
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert repr(m) == ("<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
                       "array([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    assert str(m) == "tf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)"
    v = tf.constant([1.0, 2.0])
    assert repr(v) == "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert str(v) == "tf.Tensor([1. 2.], shape=(2,), dtype=float32)"
    assert repr(tf.constant(1.5)) == "<tf.Tensor: shape=(), dtype=float32, numpy=1.5>"
    assert str(tf.constant(1.5)) == "tf.Tensor(1.5, shape=(), dtype=float32)"
    assert repr(tf.constant(3)) == "<tf.Tensor: shape=(), dtype=int32, numpy=3>"
    assert repr(tf.constant([True, False])) == (
        "<tf.Tensor: shape=(2,), dtype=bool, numpy=array([ True, False])>")
    assert str(tf.constant([[1, 2]], tf.int64)) == "tf.Tensor([[1 2]], shape=(1, 2), dtype=int64)"
    assert repr(tf.zeros([0, 2])) == ("<tf.Tensor: shape=(0, 2), dtype=float32, "
                                      "numpy=array([], shape=(0, 2), dtype=float32)>")


def test_print_writes_str(capsys):
    print(tf.constant([1, 2]))
    assert capsys.readouterr().out == "tf.Tensor([1 2], shape=(2,), dtype=int32)\n"


def test_variable_repr_like_tf2():
    v = tf.Variable([1.0, 2.0], name="w")
    assert repr(v) == ("<tf.Variable 'w:0' shape=(2,) dtype=float32, "
                       "numpy=array([1., 2.], dtype=float32)>")
    m = tf.Variable([[1, 2], [3, 4]])
    assert repr(m) == ("<tf.Variable 'Variable:0' shape=(2, 2) dtype=int32, numpy=\n"
                       "array([[1, 2],\n       [3, 4]], dtype=int32)>")
    assert repr(tf.Variable(2.0, name="s")) == \
        "<tf.Variable 's:0' shape=() dtype=float32, numpy=2.0>"
    v.assign([5.0, 6.0])
    assert "numpy=array([5., 6.], dtype=float32)" in repr(v)


def test_symbolic_tensors_print_without_reading_a_value():
    seen = {}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        y = tf.sin(x)
        seen["repr"], seen["str"], seen["fmt"] = repr(y), str(y), f"{y}"
        with pytest.raises(TypeError, match="unsupported format string"):
            format(y, ".2f")
        return y

    f(tf.ones([2, 3]))
    name = seen["repr"].split("'")[1]
    assert name.endswith(":0")
    assert seen["repr"] == f"<tf.Tensor '{name}' shape=(None, 3) dtype=float32>"
    assert seen["str"] == f'Tensor("{name}", shape=(None, 3), dtype=float32)'
    assert seen["fmt"] == seen["str"]


def test_disposed_tensor_prints_without_reading():
    t = tf.constant([1.0, 2.0])
    t.dispose()
    assert "disposed" in repr(t) and "disposed" in str(t) and "disposed" in f"{t}"


def test_tensor_shape_str_like_tf():
    assert str(tf.TensorShape([None, 3])) == "(None, 3)"
    assert str(tf.TensorShape([2])) == "(2,)"
    assert str(tf.TensorShape([])) == "()"
    assert repr(tf.TensorShape([None, 3])) == "TensorShape([None, 3])"
    assert str(tf.zeros([2, 3]).shape) == "(2, 3)"


# =============================================================================== tf.dtypes


def test_dtypes_module_is_the_same_objects():
    names = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8",
             "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
    for n in names:
        assert getattr(tf.dtypes, n) is getattr(tf, n), n
        assert isinstance(getattr(tf.dtypes, n), tf.dtypes.DType)
    assert tf.dtypes.DType is tf.DType
    assert tf.dtypes.as_dtype("float64") is tf.float64
    assert tf.dtypes.as_dtype(np.int16) is tf.int16
    assert tf.dtypes.as_dtype(np.dtype("uint8")) is tf.uint8
    assert tf.dtypes.half is tf.float16 and tf.dtypes.double is tf.float64
    with pytest.raises(TypeError):
        tf.dtypes.as_dtype("no_such_type")


def test_dtypes_cast_and_saturate_cast():
    out = tf.dtypes.cast([1.7, -1.7], tf.dtypes.int32)
    assert out.dtype is tf.int32 and out.numpy().tolist() == [1, -1]
    s = tf.dtypes.saturate_cast([-1.0, 0.4, 254.9, 300.0], tf.uint8)
    assert s.dtype is tf.uint8 and s.numpy().tolist() == [0, 0, 254, 255]
    big = tf.dtypes.saturate_cast(tf.constant([1e12, -1e12], tf.float32), tf.int32)
    assert big.numpy().tolist() == [2147483520, -2147483648]  # float32's largest int32s
    assert tf.dtypes.saturate_cast(tf.constant([300, -5], tf.int32), tf.int8).numpy().tolist() \
        == [127, -5]
    assert tf.dtypes.saturate_cast(tf.constant([200], tf.uint8), tf.int8).numpy().tolist() == [127]
    x = tf.constant([0.5, 5.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.dtypes.saturate_cast(x, tf.float32) * 1.0
        y = tf.dtypes.saturate_cast(tf.minimum(y, 2.0), tf.float64)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 0.0])


# =============================================================================== tf.device


DEVICE_STRINGS = ["CPU:0", "/CPU:0", "cpu:0", "/cpu:0", "CPU", "/device:CPU:0",
                  "/device:cpu:0", "CPU:*", "/job:localhost/replica:0/task:0/device:CPU:0",
                  "/job:localhost/device:CPU:0"]


@pytest.mark.parametrize("spec", DEVICE_STRINGS)
def test_device_cpu_strings_run_on_numpy(spec):
    with tf.device(spec) as d:
        assert tf.get_backend() == "numpy"
        y = tf.constant([1.0, 2.0]) * 3.0
    assert d.name == spec
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    assert tf.get_backend() == "numpy"


@pytest.mark.parametrize("spec", ["/job:worker/device:CPU:0", "/replica:1/device:CPU:0",
                                  "CPU:x", "a:b:c:d", "/device:CPU:0/device:CPU:0", "bo-gus",
                                  "bogus", "XPU:0"])
def test_malformed_or_remote_devices_raise_value_error_naming_them(spec):
    with pytest.raises(ValueError) as info:
        with tf.device(spec):
            pass
    message = str(info.value)
    assert repr(spec) in message or spec in message
    if "more than one" not in message:
        assert "/device:CPU:0" in message  # the known devices are listed


MISSING = ["GPU:0", "/GPU:0", "/device:GPU:0", "TPU:0", "CPU:1", "gpu", "/device:GPU:*"]


@pytest.fixture
def soft_placement():
    yield
    tf.config.set_soft_device_placement(True)


@pytest.mark.parametrize("spec", MISSING)
def test_missing_devices_run_on_the_cpu_under_soft_placement(spec, soft_placement):
    assert tf.config.get_soft_device_placement() is True  # TensorFlow's default
    with tf.device(spec):
        assert tf.get_backend() == "numpy"
        y = tf.constant([1.0, 2.0]) * 3.0
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    assert y.device.endswith("device:CPU:0")


@pytest.mark.parametrize("spec", MISSING)
def test_missing_devices_raise_without_soft_placement(spec, soft_placement):
    tf.config.set_soft_device_placement(False)
    assert tf.config.get_soft_device_placement() is False
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        with tf.device(spec):
            pass
    message = str(info.value)
    assert repr(spec) in message and "soft device placement is off" in message
    assert "/device:CPU:0" in message  # the known devices are listed
    assert tf.get_backend() == "numpy"
    with tf.device("CPU:0"):  # existing devices still work
        assert tf.get_backend() == "numpy"


def test_device_none_and_empty_change_nothing():
    for spec in (None, ""):
        with tf.device(spec):
            assert tf.get_backend() == "numpy"


def test_device_is_not_a_decorator():
    with pytest.raises(RuntimeError, match="context manager"):
        tf.device(lambda op: "/CPU:0")
    with pytest.raises(TypeError):
        tf.device(0)


class _GpuLike(NumpyBackend):
    device_type = "GPU"


@pytest.fixture
def gpu_backend():
    tf.register_backend("fake_gpu", _GpuLike, priority=0)
    add = tf.get_kernel("Add", "numpy")
    tf.register_kernel("Add", "fake_gpu", getattr(add, "kernel_func", None) or add.func)
    try:
        yield "fake_gpu"
    finally:
        tf.config.set_visible_devices(tf.config.list_physical_devices())
        tf.set_backend("numpy")
        tf.unregister_kernel("Add", "fake_gpu")
        tf.remove_backend("fake_gpu")


def test_a_backend_claiming_gpu_serves_gpu_devices(gpu_backend):
    assert tf.config.list_physical_devices("GPU") == [
        tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
    assert tf.get_backend() == "numpy"
    with tf.device("GPU:0"):
        assert tf.get_backend() == gpu_backend
        with tf.device("/cpu:0"):  # nested: each exit restores what its entry found
            assert tf.get_backend() == "numpy"
            a = tf.constant([1.0, 2.0])
        assert tf.get_backend() == gpu_backend
        b = a + 1.0  # a's data moves to the active backend on use
    assert tf.get_backend() == "numpy"
    np.testing.assert_array_equal(b.numpy(), [2.0, 3.0])
    with tf.device("GPU:1"):  # soft placement: the first GPU
        assert tf.get_backend() == gpu_backend
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(ValueError, match="GPU:1"):
            with tf.device("GPU:1"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)


def test_device_restores_the_backend_when_the_block_raises(gpu_backend):
    with pytest.raises(ZeroDivisionError):
        with tf.device("/device:GPU:0"):
            assert tf.get_backend() == gpu_backend
            1 / 0
    assert tf.get_backend() == "numpy"


def test_set_visible_devices_hides_devices_from_tf_device(gpu_backend):
    gpu = tf.config.list_physical_devices("GPU")
    assert tf.config.get_visible_devices("GPU") == gpu
    tf.config.set_visible_devices([], "GPU")  # the usual way to hide GPUs
    assert tf.config.get_visible_devices("GPU") == []
    assert tf.config.list_physical_devices("GPU") == gpu  # still there, only hidden
    assert tf.config.get_visible_devices() == tf.config.list_physical_devices("CPU")
    assert tf.config.list_logical_devices("GPU") == []
    with tf.device("GPU:0"):  # hidden: soft placement runs the block on the CPU
        assert tf.get_backend() == "numpy"
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(ValueError, match="GPU:0"):
            with tf.device("GPU:0"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)
    tf.config.set_visible_devices(gpu, "GPU")
    with tf.device("GPU:0"):
        assert tf.get_backend() == gpu_backend
    with pytest.raises(ValueError, match="cannot be hidden"):
        tf.config.set_visible_devices(gpu)  # every type: the CPU would go
    with pytest.raises(ValueError, match="not all of type"):
        tf.config.set_visible_devices(gpu, "CPU")
    with pytest.raises(ValueError, match="unrecognized device"):
        tf.config.set_visible_devices([tf.config.PhysicalDevice("/physical_device:GPU:7", "GPU")])


def test_memory_growth_like_tf_setup_code(gpu_backend):
    for gpu in tf.config.experimental.list_physical_devices("GPU"):
        assert tf.config.experimental.get_memory_growth(gpu) is False
        tf.config.experimental.set_memory_growth(gpu, True)
        assert tf.config.experimental.get_memory_growth(gpu) is True
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(ValueError, match="unrecognized"):
        tf.config.experimental.get_memory_growth("GPU:0")


def test_device_object_can_be_reused():
    d = tf.device("CPU:0")
    for _ in range(2):
        with d:
            assert tf.get_backend() == "numpy"


def test_list_physical_and_visible_devices():
    devices = tf.config.list_physical_devices()
    assert devices[0].name == "/physical_device:CPU:0"
    assert devices[0].device_type == "CPU"
    assert devices[0] == ("/physical_device:CPU:0", "CPU")  # a namedtuple, as in TF
    assert tf.config.list_physical_devices("CPU") == devices[:1]
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.config.get_visible_devices() == devices
    assert tf.config.get_visible_devices("CPU") == devices[:1]
    assert tf.config.get_visible_devices("GPU") == []
    assert [d.name for d in tf.config.list_logical_devices("CPU")] == ["/device:CPU:0"]


# =============================================================================== tf.image: resize


def bilinear_ref(x: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """TF's ResizeBilinear (half-pixel centers) written out pixel by pixel, in float64."""
    def axis(n_in, n_out):
        scale = n_in / n_out
        out = []
        for o in range(n_out):
            pos = (o + 0.5) * scale - 0.5
            lo = max(math.floor(pos), 0)
            hi = min(math.ceil(pos), n_in - 1)
            out.append((lo, hi, pos - math.floor(pos)))
        return out
    squeeze = x.ndim == 3
    x = x[None] if squeeze else x
    n, h, w, c = x.shape
    y = np.zeros((n, out_h, out_w, c))
    for i, (t, b, ly) in enumerate(axis(h, out_h)):
        for j, (l, r, lx) in enumerate(axis(w, out_w)):
            top = x[:, t, l] + (x[:, t, r] - x[:, t, l]) * lx
            bottom = x[:, b, l] + (x[:, b, r] - x[:, b, l]) * lx
            y[:, i, j] = top + (bottom - top) * ly
    return y[0] if squeeze else y


def test_resize_bilinear_hand_computed():
    row = tf.constant([[[0.0], [4.0]]])  # 1 x 2 x 1
    np.testing.assert_allclose(tf.image.resize(row, [1, 4])[0, :, 0].numpy(), [0, 1, 3, 4])
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])[..., None]
    np.testing.assert_allclose(tf.image.resize(x, [3, 3])[..., 0].numpy(),
                               [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    np.testing.assert_allclose(tf.image.resize(x, [1, 1]).numpy(), [[[2.5]]])
    four = tf.constant([[[0.0], [2.0], [4.0], [10.0]]])
    np.testing.assert_allclose(tf.image.resize(four, [1, 2])[0, :, 0].numpy(), [1.0, 7.0])


@pytest.mark.parametrize("shape,size", [((5, 7, 2), (3, 11)), ((2, 4, 4, 3), (7, 2)),
                                        ((3, 3, 1), (8, 8)), ((1, 6, 1), (4, 1)),
                                        ((2, 9, 5, 1), (4, 5))])
def test_resize_bilinear_matches_tf_formula(shape, size):
    x = np.random.default_rng(0).uniform(-3, 3, shape)
    out = tf.image.resize(x, size)
    assert out.dtype is tf.float32
    assert out.shape == shape[:-3] + tuple(size) + shape[-1:]
    np.testing.assert_allclose(out.numpy(), bilinear_ref(x, *size), rtol=1e-5, atol=1e-5)


def test_resize_same_size_is_identity_and_float32():
    x = np.random.default_rng(1).uniform(0, 255, (2, 3, 4, 3)).astype(np.uint8)
    out = tf.image.resize(x, [3, 4])
    assert out.dtype is tf.float32
    np.testing.assert_array_equal(out.numpy(), x.astype(np.float32))
    f64 = tf.constant(np.random.default_rng(2).normal(size=(3, 4, 2)))
    out = tf.image.resize(f64, (3, 4))
    assert out.dtype is tf.float32
    np.testing.assert_array_equal(out.numpy(), f64.numpy().astype(np.float32))
    np.testing.assert_array_equal(tf.image.resize(f64, [3, 4], antialias=True).numpy(),
                                  f64.numpy().astype(np.float32))


def test_resize_size1_images():
    one = tf.constant([[[2.0, -1.0]]])  # 1 x 1 x 2
    out = tf.image.resize(one, [3, 2])
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to([2.0, -1.0], (3, 2, 2)))
    out = tf.image.resize(one, [2, 2], method="nearest")
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to([2.0, -1.0], (2, 2, 2)))
    assert tf.image.resize(tf.zeros([0, 4, 4, 1]), [2, 2]).shape == (0, 2, 2, 1)


def test_resize_nearest_hand_computed_and_keeps_dtype():
    x = tf.constant(np.arange(4, dtype=np.int32).reshape(1, 4, 1))
    near = lambda w: tf.image.resize(x, [1, w], method="nearest")[0, :, 0].numpy().tolist()
    assert near(2) == [1, 3]          # (o + 0.5) * 2 -> 1, 3
    assert near(8) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert near(3) == [0, 2, 3]       # (o + 0.5) * 4/3 -> 0.67, 2, 3.33
    assert near(1) == [2]
    three = tf.constant([[[0], [1], [2]]], tf.uint8)
    out = tf.image.resize(three, [1, 2], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    assert out.dtype is tf.uint8 and out[0, :, 0].numpy().tolist() == [0, 2]
    y = tf.constant(np.arange(6).reshape(3, 2, 1))
    out = tf.image.resize(y, [6, 1], method="nearest", antialias=True)  # no effect: nearest
    assert out[:, 0, 0].numpy().tolist() == [1, 1, 3, 3, 5, 5]  # column (0.5) * 2 -> 1


def test_resize_antialias_hand_computed():
    x = tf.constant([[[0.0], [0.0], [0.0], [3.0]]])  # 1 x 4 x 1 shrunk to 1 x 1
    # tent of half-width 4 around 2: weights .625 .875 .875 .625, normalized by their sum 3
    np.testing.assert_allclose(tf.image.resize(x, [1, 1], antialias=True).numpy(), [[[0.625]]])
    np.testing.assert_allclose(tf.image.resize(x, [1, 1]).numpy(), [[[0.0]]])  # samples 1.5
    wide = np.random.default_rng(3).normal(size=(5, 6, 2))
    np.testing.assert_allclose(tf.image.resize(wide, [9, 13], antialias=True).numpy(),
                               tf.image.resize(wide, [9, 13]).numpy(), rtol=1e-5, atol=1e-6)
    # 4 -> 2: tents of half-width 2 around 1 and 3; the second weighs pixels 1..3 by
    # .25 .75 .75 (sum 1.75), so it is 3 * .75 / 1.75
    np.testing.assert_allclose(tf.image.resize(x, [1, 2], antialias=True)[0, :, 0].numpy(),
                               [0.0, 9 / 7], rtol=1e-6)
    ones = tf.image.resize(np.ones((7, 5, 1)), [2, 3], antialias=True).numpy()
    np.testing.assert_allclose(ones, 1.0, rtol=1e-6)  # rows of weights sum to one


def test_resize_bicubic_hand_computed():
    # 2 -> 4: positions -0.25, 0.25, 0.75, 1.25; Keys' cubic (a = -0.5) at the fractions,
    # taps outside the image dropped and the two left renormalized
    x = tf.constant([[[0.0], [1.0]]])
    out = tf.image.resize(x, [1, 4], method="bicubic")[0, :, 0].numpy()
    np.testing.assert_allclose(out, [-3 / 34, 29 / 140, 111 / 140, 37 / 34], rtol=1e-6)
    y = np.random.default_rng(9).normal(size=(2, 5, 4, 3))
    np.testing.assert_array_equal(tf.image.resize(y, [5, 4], method="bicubic").numpy(),
                                  y.astype(np.float32))  # same size: the identity
    # with antialias, upsampling is the same Keys kernel without the 1/1024 rounding
    np.testing.assert_allclose(tf.image.resize(x, [1, 4], method="bicubic", antialias=True)
                               [0, :, 0].numpy(), out, atol=1e-3)


def test_resize_area_hand_computed():
    # 4 -> 3 (the example of TF's kernel): s = 4/3; out[0] = (in0 + in1/3) / s, ...
    x = tf.constant([[[3.0], [6.0], [9.0], [12.0]]])
    out = tf.image.resize(x, [1, 3], method="area")[0, :, 0].numpy()
    s = 4 / 3
    np.testing.assert_allclose(out, [(3 + 6 / 3) / s, (6 * 2 / 3 + 9 * 2 / 3) / s,
                                     (9 / 3 + 12) / s], rtol=1e-6)
    np.testing.assert_allclose(tf.image.resize(x, [1, 2], method="area")[0, :, 0].numpy(),
                               [4.5, 10.5])  # pairs averaged
    np.testing.assert_allclose(tf.image.resize(x, [1, 8], method="area")[0, :, 0].numpy(),
                               np.repeat([3.0, 6.0, 9.0, 12.0], 2), rtol=1e-6)  # copies
    y = np.random.default_rng(10).normal(size=(3, 4, 2))
    np.testing.assert_array_equal(tf.image.resize(y, [3, 4], method="area").numpy(),
                                  y.astype(np.float32))


def test_resize_scale_and_translate_kernels():
    # gaussian (radius 1.5, sigma 0.5) blurs even at the same size: neighbours weigh e^-2
    x = tf.constant([[[0.0], [1.0], [0.0]]])
    g = math.exp(-2.0)
    np.testing.assert_allclose(tf.image.resize(x, [1, 3], method="gaussian")[0, :, 0].numpy(),
                               [g / (1 + g), 1 / (1 + 2 * g), g / (1 + g)], rtol=1e-6)
    # mitchellcubic weighs distance 1 by 1/18 and distance 0 by 8/9
    np.testing.assert_allclose(
        tf.image.resize(x, [1, 3], method="mitchellcubic")[0, :, 0].numpy(),
        [(1 / 18) / (8 / 9 + 1 / 18), (8 / 9) / (8 / 9 + 2 / 18), (1 / 18) / (8 / 9 + 1 / 18)],
        rtol=1e-6)
    # lanczos kernels vanish at nonzero integers: the same size is (nearly) the identity
    for method in ("lanczos3", "lanczos5"):
        np.testing.assert_allclose(tf.image.resize(x, [1, 3], method=method).numpy(),
                                   x.numpy(), atol=1e-6)
    # every kernel's weights sum to one: a constant image stays constant, any size
    const = np.full((6, 7, 2), 3.0)
    for method in ("bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
        for antialias in (False, True):
            for size in ([2, 3], [9, 11]):
                out = tf.image.resize(const, size, method=method, antialias=antialias)
                assert out.dtype is tf.float32
                np.testing.assert_allclose(out.numpy(), 3.0, rtol=1e-5)


def test_resize_batch_equals_per_image_and_preserve_aspect_ratio():
    x = np.random.default_rng(4).normal(size=(3, 4, 6, 2)).astype(np.float32)
    batch = tf.image.resize(x, [5, 3]).numpy()
    for k in range(3):
        np.testing.assert_allclose(batch[k], tf.image.resize(x[k], [5, 3]).numpy(), rtol=1e-6)
    assert tf.image.resize(x, [4, 4], preserve_aspect_ratio=True).shape == (3, 3, 4, 2)
    assert tf.image.resize(x[0], [8, 100], preserve_aspect_ratio=True).shape == (8, 12, 2)


def test_resize_bilinear_gradients_and_tangents():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.normal(size=(2, 3, 5, 2)))  # float64 input, float32 output
    u = rng.normal(size=(2, 4, 2, 2))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.image.resize(x, [4, 2])
    g = tape.gradient(y, x, output_gradients=tf.constant(u, tf.float32))
    assert g.dtype is tf.float64
    # resize is linear: the exact VJP is the adjoint of the reference map, found column
    # by column from basis images
    want = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = 1.0
        want[idx] = np.sum(bilinear_ref(e, 4, 2) * u)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)
    t = rng.normal(size=x.shape)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(t)) as acc:
        y = tf.image.resize(x, [4, 2])
    np.testing.assert_allclose(acc.jvp(y).numpy(), bilinear_ref(t, 4, 2), rtol=1e-5, atol=1e-5)


def test_resize_nearest_gradient_counts_the_copies():
    x = tf.constant(np.arange(3.0).reshape(1, 3, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.image.resize(x, [1, 7], method="nearest")  # (o + .5) * 3/7: 0 0 1 1 1 2 2
    assert tape.gradient(y, x).numpy().ravel().tolist() == [2.0, 3.0, 2.0]


def test_resize_traced_equals_eager():
    x = np.random.default_rng(6).normal(size=(2, 4, 4, 3)).astype(np.float32)
    f = tf.function(lambda im: tf.image.resize(im, [6, 3]),
                    input_signature=[tf.TensorSpec([None, 4, 4, 3], tf.float32)])
    np.testing.assert_allclose(f(x).numpy(), tf.image.resize(x, [6, 3]).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="resize: .*height and width"):
        tf.function(lambda im: tf.image.resize(im, [2, 2]),
                    input_signature=[tf.TensorSpec([None, None, None, 3])])(x)


def test_resize_errors_name_the_op_and_shape():
    with pytest.raises(ValueError, match=r"resize: .*\[4, 4\].*3 or 4 dimensions"):
        tf.image.resize(tf.zeros([4, 4]), [2, 2])
    with pytest.raises(ValueError, match=r"resize: .*\[1, 2, 2, 2, 1\]"):
        tf.image.resize(tf.zeros([1, 2, 2, 2, 1]), [2, 2])
    for size in ([2], [2, 2, 2], 3):
        with pytest.raises(ValueError, match="resize: 'size' must be a 1-D"):
            tf.image.resize(tf.zeros([2, 2, 1]), size)
    with pytest.raises(TypeError, match="resize: 'size'"):
        tf.image.resize(tf.zeros([2, 2, 1]), [2.5, 2])
    with pytest.raises(ValueError, match="positive"):
        tf.image.resize(tf.zeros([2, 2, 1]), [0, 2])
    with pytest.raises(ValueError, match="non-zero size"):
        tf.image.resize(tf.zeros([0, 2, 1]), [2, 2])
    with pytest.raises(TypeError, match="resize: method"):
        tf.image.resize(tf.zeros([2, 2, 1]), [3, 3], method=1)
    with pytest.raises(ValueError, match="not implemented: 'cubic'"):
        tf.image.resize(tf.zeros([2, 2, 1]), [3, 3], method="cubic")
    assert tf.image.resize(tf.zeros([2, 2, 1]), tf.constant([3, 1])).shape == (3, 1, 1)
    assert tf.image.resize(tf.zeros([2, 2, 1]), np.array([1, 3])).shape == (1, 3, 1)


# =============================================================================== other image ops


def test_flips_values_and_errors():
    x = np.arange(12).reshape(2, 3, 2)
    np.testing.assert_array_equal(tf.image.flip_left_right(x).numpy(), x[:, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(x).numpy(), x[::-1])
    b = np.arange(24).reshape(2, 2, 3, 2)
    np.testing.assert_array_equal(tf.image.flip_left_right(b).numpy(), b[:, :, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(b).numpy(), b[:, ::-1])
    for op in (tf.image.flip_left_right, tf.image.flip_up_down):
        with pytest.raises(ValueError, match=rf"{op.__name__}: .*\[2, 3\].*3 or 4"):
            op(tf.zeros([2, 3]))
        with pytest.raises(ValueError, match=op.__name__):
            op(tf.zeros([1, 1, 1, 1, 1]))


def test_adjust_brightness_float_and_integer_images():
    x = [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]]
    out = tf.image.adjust_brightness(x, delta=0.1)
    assert out.dtype is tf.float32
    np.testing.assert_allclose(out.numpy(), np.array(x) + 0.1, rtol=1e-6)
    u8 = tf.constant([[[0], [100], [250]]], tf.uint8)
    out = tf.image.adjust_brightness(u8, 0.1)  # in [0, 1] units, saturated back to uint8
    assert out.dtype is tf.uint8
    assert out.numpy().ravel().tolist() == [25, 125, 255]
    assert tf.image.adjust_brightness(u8, -1.0).numpy().ravel().tolist() == [0, 0, 0]
    assert tf.image.adjust_brightness(tf.constant(0.5), 0.25).numpy() == 0.75  # any rank


def test_adjust_contrast_doc_example_and_errors():
    x = [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]]
    np.testing.assert_allclose(tf.image.adjust_contrast(x, 2.0).numpy(),
                               [[[-3.5, -2.5, -1.5], [2.5, 3.5, 4.5]],
                                [[8.5, 9.5, 10.5], [14.5, 15.5, 16.5]]])
    u8 = tf.constant([[[0], [255]]], tf.uint8)
    assert tf.image.adjust_contrast(u8, 3.0).numpy().ravel().tolist() == [0, 255]
    with pytest.raises(ValueError, match=r"adjust_contrast: .*\[2, 3\].*at least 3-D"):
        tf.image.adjust_contrast(tf.zeros([2, 3]), 2.0)
    with pytest.raises(ValueError, match="contrast_factor must be a scalar"):
        tf.image.adjust_contrast(tf.zeros([2, 2, 3]), [1.0, 2.0])


def standardize_ref(x: np.ndarray) -> np.ndarray:
    axes = (-3, -2, -1)
    n = np.prod(x.shape[-3:])
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.maximum(x.std(axis=axes, keepdims=True), 1 / np.sqrt(n))


def test_per_image_standardization_doc_example():
    image = tf.constant(np.arange(1, 13, dtype=np.int32), shape=[2, 2, 3])
    out = tf.image.per_image_standardization(image)
    assert out.dtype is tf.float32
    np.testing.assert_allclose(out.numpy().ravel()[:4],
                               [-1.593255, -1.3035723, -1.0138896, -0.7242068], rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), standardize_ref(np.arange(1.0, 13).reshape(2, 2, 3)),
                               rtol=1e-5, atol=1e-6)


def test_per_image_standardization_batches_and_uniform_images():
    x = np.random.default_rng(7).normal(size=(3, 2, 4, 2))
    x[2] *= 5.0
    x[1] = 7.0  # a uniform image: divided by 1/sqrt(N), not by zero
    out = tf.image.per_image_standardization(x)
    assert out.dtype is tf.float32
    np.testing.assert_allclose(out.numpy(), standardize_ref(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(out.numpy()[1], 0.0)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        weights = tf.constant(np.arange(16.0).reshape(2, 4, 2), tf.float32)
        y = tf.reduce_sum(tf.image.per_image_standardization(xt) * weights)
    g = tape.gradient(y, xt).numpy()
    assert np.all(np.isfinite(g))  # no 0/0 through the uniform image's zero deviation
    with pytest.raises(ValueError, match=r"per_image_standardization: .*\[4, 4\].*at least 3-D"):
        tf.image.per_image_standardization(tf.zeros([4, 4]))


def test_per_image_standardization_gradient_matches_finite_differences():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 3, 2))
    u = rng.normal(size=x.shape)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.image.per_image_standardization(xt)
    g = tape.gradient(y, xt, output_gradients=tf.constant(u, tf.float32)).numpy()
    eps, want = 1e-6, np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        d = np.zeros(x.shape)
        d[idx] = eps
        want[idx] = np.sum((standardize_ref(x + d) - standardize_ref(x - d)) * u) / (2 * eps)
    np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-4)


def test_convert_image_dtype():
    u8 = tf.constant([0, 128, 255], tf.uint8)
    f = tf.image.convert_image_dtype(u8, tf.float32)
    np.testing.assert_allclose(f.numpy(), [0.0, 128 / 255, 1.0], rtol=1e-6)
    back = tf.image.convert_image_dtype(f, tf.uint8)
    assert back.dtype is tf.uint8 and back.numpy().tolist() == [0, 128, 255]
    over = tf.image.convert_image_dtype(tf.constant([1.5, -0.5]), tf.uint8, saturate=True)
    assert over.numpy().tolist() == [255, 0]
    i8 = tf.image.convert_image_dtype(tf.constant([127, 1], tf.int8), tf.int16)
    assert i8.numpy().tolist() == [127 * 256, 256]
    down = tf.image.convert_image_dtype(tf.constant([32767, 256], tf.int16), tf.uint8)
    assert down.numpy().tolist() == [255, 2]
    same = tf.constant([0.25])
    assert tf.image.convert_image_dtype(same, tf.float32) is same
    assert tf.image.convert_image_dtype(same, tf.float64).dtype is tf.float64
    with pytest.raises(TypeError, match="convert_image_dtype"):
        tf.image.convert_image_dtype(same, tf.bool)


# =============================================================================== logical devices


@pytest.fixture
def cpu_split():
    cpu = tf.config.list_physical_devices("CPU")[0]
    yield cpu
    tf.config.set_logical_device_configuration(cpu, None)


def test_a_cpu_splits_into_logical_devices(cpu_split):
    cpu = cpu_split
    assert tf.config.get_logical_device_configuration(cpu) is None
    configs = [tf.config.LogicalDeviceConfiguration()] * 3
    tf.config.set_logical_device_configuration(cpu, configs)
    assert tf.config.get_logical_device_configuration(cpu) == configs
    assert tf.config.list_logical_devices("CPU") == [
        tf.config.LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(3)]
    assert tf.config.list_physical_devices("CPU") == [cpu]  # still one physical device
    for spec in ("/CPU:1", "CPU:2", "/job:localhost/replica:0/task:0/device:CPU:2"):
        with tf.device(spec):
            assert tf.get_backend() == "numpy"
            assert tf._core.device.current_device() == "/device:CPU:" + spec[-1]
            y = tf.constant([1.0, 2.0]) * 2.0
        np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    assert tf._core.device.current_device() == ""
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:3"):
            with tf.device("CPU:3"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()])
    assert len(tf.config.list_logical_devices("CPU")) == 1


def test_logical_device_configuration_is_checked_as_tensorflow_does(cpu_split):
    cpu = cpu_split
    assert tf.config.LogicalDeviceConfiguration() == (None, None, None)
    assert tf.config.LogicalDeviceConfiguration(memory_limit=5).memory_limit == 5
    with pytest.raises(ValueError, match="memory limit on CPU"):
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(memory_limit=100)])
    with pytest.raises(ValueError, match="LogicalDeviceConfiguration"):
        tf.config.set_logical_device_configuration(cpu, ["CPU:1"])
    with pytest.raises(ValueError, match="unrecognized device"):
        tf.config.set_logical_device_configuration(
            tf.config.PhysicalDevice("/physical_device:CPU:9", "CPU"),
            [tf.config.LogicalDeviceConfiguration()])
    assert tf.config.list_logical_devices("CPU") == [tf.config.LogicalDevice("/device:CPU:0",
                                                                             "CPU")]
    # TensorFlow's older "virtual device" spellings are the same functions
    exp = tf.config.experimental
    assert exp.VirtualDeviceConfiguration is tf.config.LogicalDeviceConfiguration
    exp.set_virtual_device_configuration(cpu, [exp.VirtualDeviceConfiguration()] * 2)
    assert len(exp.get_virtual_device_configuration(cpu)) == 2
    assert len(exp.list_logical_devices("CPU")) == 2


def test_a_gpu_splits_with_memory_limits(gpu_backend):
    gpu = tf.config.list_physical_devices("GPU")[0]
    try:
        with pytest.raises(ValueError, match="memory_limit is required"):
            tf.config.set_logical_device_configuration(
                gpu, [tf.config.LogicalDeviceConfiguration()])
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
        assert [d.name for d in tf.config.list_logical_devices()] == [
            "/device:CPU:0", "/device:GPU:0", "/device:GPU:1"]
        with tf.device("GPU:1"):
            assert tf.get_backend() == gpu_backend
    finally:
        tf.config.set_logical_device_configuration(gpu, None)
