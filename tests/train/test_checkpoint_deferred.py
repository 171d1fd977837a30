"""Deferred restoration (values waiting for objects made after `restore()`), objects' own
state (random.Generator), and the absence of global state: values checked against
uninterrupted runs and against the numbers saved, never against recorded output."""
import gc
import json
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.context import ctx
from tapeflow.train import module as module_mod


class MLP(tf.Module):
    """Two Dense layers built on the first call (their variables come later)."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = tf.layers.Dense(5, activation="tanh"), tf.layers.Dense(2)

    def __call__(self, x):
        return self.out(self.hidden(x))


def data():
    rng = np.random.default_rng(0)
    return (tf.constant(rng.normal(size=(8, 3)).astype(np.float32)),
            tf.constant(rng.normal(size=(8, 2)).astype(np.float32)))


def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))


def weights(model):
    return [v.numpy().copy() for v in model.variables]


def no_observers():
    return ctx.variable_observers == []


# ------------------------------------------------------------------ optimizer slots


@pytest.mark.parametrize("traced", [False, True])
def test_resumed_adam_run_follows_the_uninterrupted_one(tmp_path, traced):
    x, y = data()
    tf.random.set_seed(1)
    model, adam = MLP(), tf.optimizers.Adam(0.05)
    step = tf.function(train_step) if traced else train_step
    for _ in range(3):
        step(model, adam, x, y)
    assert all(np.abs(s.numpy()).max() > 0 for s in adam.variables[1:])  # slots non-zero
    path = tf.train.Checkpoint(model=model, optimizer=adam).save(str(tmp_path / "run"))
    for _ in range(2):
        step(model, adam, x, y)
    uninterrupted = weights(model)

    tf.random.set_seed(2)  # other initial weights: the restore must replace them all
    fresh, fresh_adam = MLP(), tf.optimizers.Adam(0.05)
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_adam).restore(path)
    assert int(fresh_adam.iterations.numpy()) == 3
    step = tf.function(train_step) if traced else train_step
    for _ in range(2):
        step(fresh, fresh_adam, x, y)
    for got, want in zip(weights(fresh), uninterrupted):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    status.assert_consumed()
    assert no_observers()


def test_zero_slots_would_have_diverged(tmp_path):
    """The check above can fail: resuming with the weights but fresh (zero) slots gives
    another trajectory."""
    x, y = data()
    model, adam = MLP(), tf.optimizers.Adam(0.05)
    for _ in range(3):
        train_step(model, adam, x, y)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "weights"))
    train_step(model, adam, x, y)
    fresh = MLP()
    tf.train.Checkpoint(model=fresh).read(path)
    train_step(fresh, tf.optimizers.Adam(0.05), x, y)
    assert max(np.abs(a - b).max() for a, b in zip(weights(fresh), weights(model))) > 1e-3


def test_slots_of_a_fresh_optimizer_for_existing_variables(tmp_path):
    v = tf.Variable([1.0, -2.0])
    sgd = tf.optimizers.SGD(0.1, momentum=0.9)
    sgd.apply_gradients([(tf.constant([0.5, 0.5]), v)])
    momentum = sgd.variables[1].numpy().copy()
    path = tf.train.Checkpoint(v=v, opt=sgd).write(str(tmp_path / "sgd"))
    w, fresh = tf.Variable([0.0, 0.0]), tf.optimizers.SGD(0.1, momentum=0.9)
    status = tf.train.Checkpoint(v=w, opt=fresh).read(path)
    fresh.build([w])  # the slot appears ...
    np.testing.assert_array_equal(fresh.variables[1].numpy(), momentum)  # ... restored
    status.assert_consumed()
    assert no_observers()


# ------------------------------------------------------------------ variables attached later


class Holder(tf.Module):
    def __init__(self):
        super().__init__()
        self.items = []


def test_variables_attached_after_restore_get_their_values(tmp_path):
    saved = Holder()
    saved.extra = tf.Variable([1.5, 2.5])
    saved.items.append(tf.Variable(7.0))
    ckpt = tf.train.Checkpoint(model=saved, loose=tf.Variable([3, 4], dtype=tf.int64))
    path = ckpt.write(str(tmp_path / "h"))

    fresh = Holder()
    fresh_ckpt = tf.train.Checkpoint(model=fresh)
    status = fresh_ckpt.read(path)
    fresh.extra = tf.Variable([0.0, 0.0])       # attached to the checkpointed object
    fresh.items.append(tf.Variable(0.0))          # appended to a tracked list
    assert fresh.extra.numpy().tolist() == [1.5, 2.5]
    assert float(fresh.items[0]) == 7.0
    fresh_ckpt.loose = tf.Variable([0, 0], dtype=tf.int64)  # attached to the checkpoint
    assert fresh_ckpt.loose.numpy().tolist() == [3, 4]
    status.assert_consumed()
    assert no_observers()
    assert type(fresh.extra) is tf.Variable  # an ordinary variable once used


def test_a_variable_made_before_restore_and_attached_after(tmp_path):
    path = tf.train.Checkpoint(late=tf.Variable(4.0)).write(str(tmp_path / "l"))
    ckpt, made_before = tf.train.Checkpoint(), tf.Variable(0.0)
    status = ckpt.read(path)  # from write(): read, as TF's
    assert not no_observers()
    ckpt.late = made_before  # attaching hands the waiting value over
    assert float(made_before) == 4.0
    status.assert_consumed()
    assert no_observers()


def test_unrelated_variables_made_while_values_wait_are_untouched(tmp_path):
    x = tf.ones([1, 3])
    model = MLP()
    model(x)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "m"))
    fresh = MLP()
    status = tf.train.Checkpoint(model=fresh).read(path)
    other = tf.Variable([9.0, 9.0])
    assert other.numpy().tolist() == [9.0, 9.0] and type(other) is tf.Variable
    assert not no_observers()
    np.testing.assert_allclose(fresh(x).numpy(), model(x).numpy(), rtol=1e-6)
    status.assert_consumed()


# ------------------------------------------------------------------ random.Generator


def test_generator_state_is_saved_and_restored(tmp_path):
    g = tf.random.Generator.from_seed(123)
    g.normal([4])  # not at the start of its stream
    model = Holder()
    model.rng = g  # a Module tracks it like any trackable attribute
    ckpt = tf.train.Checkpoint(model=model)
    path = ckpt.write(str(tmp_path / "g"))
    # object state is an attribute of its object, as TensorFlow keys it
    assert [name for name, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "model/rng/.ATTRIBUTES/state"]
    first = [g.normal([3]).numpy(), g.uniform([2], maxval=10, dtype=tf.int64).numpy()]
    g.normal([100])
    ckpt.read(path).assert_consumed()
    again = [g.normal([3]).numpy(), g.uniform([2], maxval=10, dtype=tf.int64).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    other = tf.random.Generator.from_seed(7)  # another stream: its state is replaced
    tf.train.Checkpoint(model=Holder()).read(path).expect_partial()
    restored = Holder()
    restored.rng = other
    tf.train.Checkpoint(model=restored).read(path).assert_consumed()
    np.testing.assert_array_equal(other.normal([3]).numpy(), first[0])


def test_generator_attached_after_restore_gets_its_state(tmp_path):
    g = tf.random.Generator.from_seed(5)
    path = tf.train.Checkpoint(rng=g).write(str(tmp_path / "g"))
    expected = g.normal([3]).numpy()
    ckpt = tf.train.Checkpoint()
    status = ckpt.read(path)
    ckpt.rng = tf.random.Generator.from_seed(99)
    np.testing.assert_array_equal(ckpt.rng.normal([3]).numpy(), expected)
    status.assert_consumed()
    assert no_observers()


def test_generator_state_of_the_wrong_shape_changes_nothing(tmp_path):
    file = str(tmp_path / "bad.npz")
    meta = {"format": "tapeflow.checkpoint", "version": 1, "aliases": {},
            "entries": [{"name": "rng/state", "key": "v0", "dtype": "uint64", "shape": [2]}]}
    np.savez(file, __metadata__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
             v0=np.zeros(2, np.uint64))
    g = tf.random.Generator.from_seed(5)
    expected = tf.random.Generator.from_seed(5).normal([3]).numpy()
    with pytest.raises(ValueError, match=r"'rng/state'.*shape \[3\].*\[2\]"):
        tf.train.Checkpoint(rng=g).read(file)
    np.testing.assert_array_equal(g.normal([3]).numpy(), expected)


def test_a_file_without_generator_state_still_loads(tmp_path):
    """Files written before objects had state of their own (format version 1, only
    variables) restore; the state stays as it was and the assertions name it."""
    file = str(tmp_path / "old.npz")
    meta = {"format": "tapeflow.checkpoint", "version": 1, "aliases": {},
            "entries": [{"name": "model/extra", "key": "v0", "dtype": "float32",
                         "shape": [2]}]}
    np.savez(file, __metadata__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
             v0=np.array([1.0, 2.0], np.float32))
    model = Holder()
    model.extra, model.rng = tf.Variable([0.0, 0.0]), tf.random.Generator.from_seed(5)
    status = tf.train.Checkpoint(model=model).read(file)
    assert model.extra.numpy().tolist() == [1.0, 2.0]
    np.testing.assert_array_equal(model.rng.normal([2]).numpy(),
                                  tf.random.Generator.from_seed(5).normal([2]).numpy())
    with pytest.raises(AssertionError, match="model/rng/state"):
        status.assert_existing_objects_matched()


# ------------------------------------------------------------------ no global state


def test_module_knows_nothing_of_restoring():
    assert tf.Module.__setattr__ is object.__setattr__
    assert not hasattr(module_mod, "deferred_restores")


def test_observer_leaves_when_everything_is_consumed(tmp_path):
    model = MLP()
    model(tf.ones([1, 3]))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "m"))
    fresh = MLP()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # waiting values are not left over
        status = tf.train.Checkpoint(model=fresh).read(path)
        assert len(ctx.variable_observers) == 1
        fresh(tf.ones([1, 3]))
        assert no_observers()
        status.assert_consumed()
        del status


def test_an_exception_during_restore_leaves_no_observer(tmp_path):
    model = MLP()
    model(tf.ones([1, 3]))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "m"))
    # a mismatch found before anything is assigned
    built = MLP()
    built(tf.ones([1, 4]))  # kernels of another shape
    with pytest.raises(ValueError, match="shape mismatch"):
        tf.train.Checkpoint(model=built).read(path)
    assert no_observers()
    # a mismatch found when the waiting value meets its variable: nothing else waits
    fresh = MLP()
    tf.train.Checkpoint(model=fresh).read(path)
    with pytest.raises(ValueError, match=r"cannot restore 'model/hidden/kernel'"):
        fresh(tf.ones([1, 4]))
    fresh.hidden.kernel.numpy()  # touched: nothing more for it
    # the other values still wait for their variables; drop the model: all gone
    del fresh
    gc.collect()
    assert no_observers()


def test_observer_leaves_when_the_waiting_objects_are_collected(tmp_path):
    model = MLP()
    model(tf.ones([1, 3]))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "m"))
    fresh = MLP()
    tf.train.Checkpoint(model=fresh).read(path)  # neither checkpoint nor status kept
    assert len(ctx.variable_observers) == 1
    del fresh
    gc.collect()
    assert no_observers()
