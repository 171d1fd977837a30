"""Names and behaviours that TensorFlow's own guides (tensors, variables, autodiff,
tf.function, modules, training loops) rely on, checked against values. Written for
tapeflow; none of TensorFlow's code is reproduced here."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError, OperatorNotAllowedInGraphError

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


# ---------------------------------------------------------------- printing and metadata


def test_dtype_prints_like_tf_and_repr_stays_short():
    assert str(tf.float32) == "<dtype: 'float32'>"
    assert str(tf.zeros([2], dtype=tf.int64).dtype) == "<dtype: 'int64'>"
    assert repr(tf.float16) == "tf.float16"
    assert f"{tf.bool}" == "<dtype: 'bool'>"


def test_shape_rank_size_results():
    t = tf.zeros([3, 2, 4, 5])
    assert (t.ndim, str(t.shape), t.shape[0], t.shape[-1]) == (4, "(3, 2, 4, 5)", 3, 5)
    size, rank, shape = tf.size(t), tf.rank(t), tf.shape(t)
    assert (size.dtype, rank.dtype, shape.dtype) == (tf.int32, tf.int32, tf.int32)
    assert (int(size), int(rank), shape.numpy().tolist()) == (120, 4, [3, 2, 4, 5])
    assert str(rank) == "tf.Tensor(4, shape=(), dtype=int32)"


def test_argmax_is_int64_and_casts_truncate():
    c = tf.constant([[4.0, 5.0], [10.0, 1.0]])
    am = tf.math.argmax(c)
    assert am.dtype == tf.int64 and am.numpy().tolist() == [1, 0]
    f16 = tf.cast(tf.constant([2.2, 3.3, 4.4], dtype=tf.float64), dtype=tf.float16)
    assert tf.cast(f16, dtype=tf.uint8).numpy().tolist() == [2, 3, 4]


def test_bad_reshape_and_ragged_constant_raise_value_errors():
    with pytest.raises(InvalidArgumentError, match="Reshape"):
        tf.reshape(tf.range(30), [7, -1])
    with pytest.raises(ValueError):
        tf.constant([[0, 1, 2], [3]])


def test_device_names_of_tensors_and_variables():
    t = tf.constant([1.0, 2.0])
    assert t.device == CPU0
    v = tf.Variable(3.0)
    assert v.device == CPU0
    with tf.device("CPU:0"):
        assert tf.constant(1).device == CPU0
    seen = []

    @tf.function
    def f(x):
        seen.append(x.device)  # a symbolic tensor has no placement yet
        return x + 1

    f(t)
    assert seen == [""]


def test_is_tensor():
    assert tf.is_tensor(tf.constant(1.0)) and tf.is_tensor(tf.Variable(1.0))
    assert tf.is_tensor(tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0])))
    assert not tf.is_tensor(1.0) and not tf.is_tensor(np.ones(2)) and not tf.is_tensor([1])


# ---------------------------------------------------------------- aliases TF has


@pytest.mark.parametrize("alias,target", [
    ("math.softmax", "nn.softmax"), ("math.log_softmax", "nn.log_softmax"),
    ("nn.tanh", "math.tanh"), ("nn.softsign", "math.softsign"),
    ("linalg.l2_normalize", "math.l2_normalize")])
def test_namespace_aliases(alias, target):
    def get(path):
        mod, name = path.split(".")
        return getattr(getattr(tf, mod), name)
    assert get(alias) is get(target)
    x = tf.constant([[1.0, -2.0, 0.5]])
    np.testing.assert_allclose(get(alias)(x).numpy(), get(target)(x).numpy())


def test_alias_values():
    x = tf.constant([1.0, 2.0, 3.0])
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tf.math.softmax(x).numpy(), e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(tf.math.log_softmax(x).numpy(), np.log(e / e.sum()),
                               rtol=1e-6)
    np.testing.assert_allclose(tf.nn.tanh(x).numpy(), np.tanh([1.0, 2.0, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.softsign(x).numpy(), [0.5, 2 / 3, 0.75], rtol=1e-6)
    np.testing.assert_allclose(tf.linalg.l2_normalize(tf.constant([3.0, 4.0])).numpy(),
                               [0.6, 0.8], rtol=1e-6)


def test_types_experimental_names_function_classes():
    f = tf.function(lambda x: x * 2)
    assert isinstance(f, tf.types.experimental.PolymorphicFunction)
    assert isinstance(f, tf.types.experimental.GenericFunction)
    cf = f.get_concrete_function(tf.TensorSpec([], tf.float32))
    assert isinstance(cf, tf.types.experimental.ConcreteFunction)
    assert not isinstance(lambda x: x, tf.types.experimental.PolymorphicFunction)


# ---------------------------------------------------------------- variables


def test_variable_assign_accepts_tf_keyword_arguments():
    v = tf.Variable([2.0, 3.0])
    assert v.assign([1, 2], use_locking=True, name="a") is v
    assert v.assign_add([2.0, 3.0], use_locking=False, name="b").numpy().tolist() == [3, 5]
    assert v.assign_sub([3.0, 5.0], use_locking=True, read_value=False) is v
    assert v.numpy().tolist() == [0.0, 0.0] and v.dtype == tf.float32
    with pytest.raises(ValueError):
        v.assign([1.0, 2.0, 3.0])


def test_variable_copy_is_independent_and_names_repeat():
    a = tf.Variable([2.0, 3.0])
    b = tf.Variable(a)
    a.assign([5.0, 6.0])
    assert b.numpy().tolist() == [2.0, 3.0]
    m1, m2 = tf.Variable(1.0, name="Mark"), tf.Variable(2.0, name="Mark")
    assert m1.name == m2.name == "Mark:0"


# ---------------------------------------------------------------- functions


def test_leaked_symbolic_tensor_numpy_raises_attribute_error():
    leaked = []

    @tf.function
    def f(a):
        y = a + 1
        leaked.append(y)
        return y

    assert f(tf.constant(1)).numpy() == 2
    with pytest.raises(AttributeError):
        leaked[0].numpy()
    with pytest.raises(OperatorNotAllowedInGraphError, match="symbolic tensor"):
        leaked[0].numpy()
    with pytest.raises(TypeError):  # used by an eager op: still TF's TypeError
        leaked[0] + tf.constant(1)


def test_python_function_and_tracing_count():
    def g(x):
        return x * x
    f = tf.function(g)
    assert f.python_function is g
    assert f(tf.constant(3.0)).numpy() == 9.0 and f(tf.constant(4.0)).numpy() == 16.0
    assert f.experimental_get_tracing_count() == 1
    f(tf.constant([1.0, 2.0]))
    assert f.experimental_get_tracing_count() == 2


# ---------------------------------------------------------------- checkpoints


class _Dense(tf.Module):
    """Builds its variables on first call, from the input's last dimension."""

    def __init__(self, units, name=None):
        super().__init__(name=name)
        self.units, self.built = units, False

    def __call__(self, x):
        if not self.built:
            self.w = tf.Variable(tf.random.normal([x.shape[-1], self.units]), name="w")
            self.b = tf.Variable(tf.random.normal([self.units]), name="b")
            self.built = True
        return tf.matmul(x, self.w) + self.b


class _Seq(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.d1, self.d2 = _Dense(3), _Dense(2)

    def __call__(self, x):
        return self.d2(self.d1(x))


def test_list_and_load_variables(tmp_path):
    model = _Seq()
    x = tf.constant([[1.0, 2.0, 3.0]])
    model(x)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    listed = tf.train.list_variables(path)
    value = "/.ATTRIBUTES/VARIABLE_VALUE"  # TensorFlow's keys
    assert listed == [("_CHECKPOINTABLE_OBJECT_GRAPH", []), ("model/d1/b" + value, [3]),
                      ("model/d1/w" + value, [3, 3]), ("model/d2/b" + value, [2]),
                      ("model/d2/w" + value, [3, 2])]
    for name in ("model/d2/w" + value, "model/d2/w"):  # TF's key, or the object path
        np.testing.assert_array_equal(tf.train.load_variable(path, name), model.d2.w.numpy())
    with pytest.raises(tf.errors.NotFoundError, match="model/d3"):
        tf.train.load_variable(path, "model/d3/w")
    # a directory means its latest checkpoint
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                                         str(tmp_path / "dir"), max_to_keep=1)
    manager.save()
    assert tf.train.list_variables(str(tmp_path / "dir"))[1] == ("model/d1/b" + value, [3])
    with pytest.raises(ValueError, match="no checkpoint"):
        tf.train.list_variables(str(tmp_path))


def test_restore_before_variables_exist_assigns_them_when_created(tmp_path):
    x = tf.constant([[2.0, 2.0, 2.0]])
    model = _Seq()
    expected = model(x).numpy()
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))

    fresh = _Seq()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # waiting values are not "unused"
        status = tf.train.Checkpoint(model=fresh).restore(path)
        with pytest.raises(AssertionError, match="model/d1/w"):
            status.assert_consumed()
        np.testing.assert_allclose(fresh(x).numpy(), expected, rtol=1e-6)
        del status
    np.testing.assert_array_equal(fresh.d1.w.numpy(), model.d1.w.numpy())
    np.testing.assert_array_equal(fresh.d2.b.numpy(), model.d2.b.numpy())


def test_deferred_restore_status_becomes_consumed(tmp_path):
    model = _Seq()
    model(tf.ones([1, 4]))
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))  # with a counter
    fresh = _Seq()
    status = tf.train.Checkpoint(model=fresh).restore(path)
    fresh(tf.ones([1, 4]))
    status.assert_consumed().assert_existing_objects_matched()


def test_deferred_restore_into_a_submodule_created_later(tmp_path):
    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.inner = None

    h = Holder()
    h.inner = _Dense(2)
    h.inner(tf.ones([1, 3]))
    path = tf.train.Checkpoint(h=h).write(str(tmp_path / "ckpt"))
    fresh = Holder()
    tf.train.Checkpoint(h=fresh).restore(path)
    fresh.inner = _Dense(2)  # the path now reaches a module that builds later
    fresh.inner(tf.ones([1, 3]))
    np.testing.assert_array_equal(fresh.inner.w.numpy(), h.inner.w.numpy())


def test_deferred_restore_of_a_mismatched_shape_raises(tmp_path):
    model = _Dense(2)
    model(tf.ones([1, 3]))
    path = tf.train.Checkpoint(m=model).write(str(tmp_path / "ckpt"))
    fresh = _Dense(2)
    tf.train.Checkpoint(m=fresh).restore(path)
    with pytest.raises(ValueError, match=r"m/b.*shape \[2\].*\[5, 2\]|m/w.*\[5, 2\]"):
        fresh(tf.ones([1, 5]))  # w would be [5, 2]; the file holds [3, 2]


def test_deferred_restore_reaches_layers_built_on_first_call(tmp_path):
    layer = tf.layers.Dense(4)
    x = tf.random.normal([2, 3])
    expected = layer(x).numpy()
    prefix = os.path.join(str(tmp_path), "layer")
    path = tf.train.Checkpoint(layer=layer).write(prefix)
    fresh = tf.layers.Dense(4)
    tf.train.Checkpoint(layer=fresh).restore(path).expect_partial()
    np.testing.assert_allclose(fresh(x).numpy(), expected, rtol=1e-6)


# ---------------------------------------------------------------- debugging


def test_log_device_placement_logs_each_kernel_until_turned_off(capfd):
    assert not tf.debugging.get_log_device_placement()
    tf.debugging.set_log_device_placement(True)
    try:
        tf.debugging.set_log_device_placement(True)  # twice: still one logger
        assert tf.debugging.get_log_device_placement()
        out = tf.matmul(tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]]))
    finally:
        tf.debugging.set_log_device_placement(False)
    assert out.numpy().tolist() == [[11.0]]
    err = capfd.readouterr().err
    assert err.count(f"Executing op MatMul in device {CPU0}") == 1
    tf.constant([1.0]) * 2.0
    assert "Executing op" not in capfd.readouterr().err
    assert not tf.debugging.get_log_device_placement()


def test_debugging_check_numerics():
    x = tf.constant([1.0, 2.0])
    assert tf.debugging.check_numerics(x, "ok") is x
    with pytest.raises(InvalidArgumentError, match="bad"):
        tf.debugging.check_numerics(tf.constant([np.nan]), "bad")


def test_executing_eagerly_is_false_only_while_tracing():
    seen = []

    @tf.function
    def f(x):
        seen.append(tf.executing_eagerly())
        return x + 1

    assert tf.executing_eagerly()
    f(tf.constant(1.0))
    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(2.0))
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == [False, True]
