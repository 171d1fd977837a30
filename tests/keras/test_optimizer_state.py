"""Optimizer state in Keras 3's files: a compiled model's `.keras` file (and its
`.weights.h5` from `save_weights`) holds the optimizer's variables under `optimizer/vars`
in Keras's order, so training resumes exactly where it stopped, in tapeflow and from
files real Keras wrote (fixtures/make_keras_optimizer_state.py)."""
from __future__ import annotations

import os
import warnings

import h5py
import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

OPTIMIZERS = {
    "adam": lambda: keras.optimizers.Adam(0.01),
    "sgd": lambda: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: keras.optimizers.Adagrad(0.1),
    "nadam": lambda: keras.optimizers.Nadam(0.01),
    "adamw": lambda: keras.optimizers.AdamW(0.01, amsgrad=True),
    "schedule": lambda: keras.optimizers.Adam(
        keras.optimizers.schedules.ExponentialDecay(0.05, 2, 0.5)),
}


def model(optimizer, seed: int = 1):
    keras.utils.set_random_seed(seed)
    built = keras.Sequential([keras.Input((3,)), keras.layers.BatchNormalization(),
                              keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    built.compile(optimizer=optimizer, loss="mse")
    return built


def batches():
    rng = np.random.default_rng(0)
    return rng.random((5, 4, 3), dtype=np.float32), rng.random((5, 4, 2), dtype=np.float32)


def train(m, x, y, steps) -> None:
    for step in steps:
        m.train_on_batch(x[step], y[step])


def max_difference(a, b) -> float:
    return max(float(np.abs(p - q).max()) for p, q in zip(a.get_weights(), b.get_weights()))


@pytest.mark.parametrize("name", ["adam", "sgd", "rmsprop", "adagrad", "nadam", "adamw",
                                  "schedule"])
def test_training_resumes_from_a_saved_model(name, tmp_path):
    x, y = batches()
    straight = model(OPTIMIZERS[name]())
    train(straight, x, y, range(5))
    first = model(OPTIMIZERS[name]())
    train(first, x, y, range(3))
    first.save(tmp_path / "m.keras")
    resumed = keras.models.load_model(tmp_path / "m.keras")
    assert int(resumed.optimizer.iterations) == 3
    train(resumed, x, y, range(3, 5))
    assert max_difference(resumed, straight) < 1e-6
    if name in ("adam", "sgd"):  # the state is what made it: a fresh optimizer on the
        fresh = keras.models.load_model(tmp_path / "m.keras", compile=False)  # same
        fresh.compile(optimizer=OPTIMIZERS[name](), loss="mse")  # weights goes elsewhere
        train(fresh, x, y, range(3, 5))
        assert max_difference(fresh, straight) > 1e-4


def test_a_schedule_is_saved_as_a_schedule(tmp_path):
    """Keras writes the schedule's config (and no learning_rate variable): the loaded
    optimizer goes on down the same schedule."""
    x, y = batches()
    m = model(keras.optimizers.Adam(keras.optimizers.schedules.InverseTimeDecay(0.1, 1, 1.0)))
    train(m, x, y, range(3))
    m.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    schedule = loaded.optimizer._learning_rate
    assert isinstance(schedule, keras.optimizers.schedules.InverseTimeDecay)
    assert (schedule.initial_learning_rate, schedule.decay_steps, schedule.decay_rate) == \
        (0.1, 1, 1.0)
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.1 / 4)  # at step 3
    m.save_weights(tmp_path / "m.weights.h5")
    with h5py.File(tmp_path / "m.weights.h5", "r") as f:
        assert len(f["optimizer/vars"]) == 1 + 2 * len(m.trainable_weights)


def test_file_layout_is_keras_s(tmp_path):
    """iteration, learning_rate, then Adam's m and v interleaved per trainable weight;
    RMSprop's slots block after block."""
    x, y = batches()
    m = model(keras.optimizers.Adam(0.01))
    train(m, x, y, range(2))
    m.save_weights(tmp_path / "m.weights.h5")
    weights = m.trainable_weights
    with h5py.File(tmp_path / "m.weights.h5", "r") as f:
        stored = f["optimizer/vars"]
        assert stored.attrs["name"] == m.optimizer.name
        assert len(stored) == 2 + 2 * len(weights)
        assert stored["0"].dtype == np.int64 and stored["0"][()] == 2
        assert stored["1"][()] == pytest.approx(0.01)
        for i, w in enumerate(weights):
            np.testing.assert_array_equal(stored[str(2 + 2 * i)],
                                          m.optimizer._slot(w, "m").numpy())
            np.testing.assert_array_equal(stored[str(3 + 2 * i)],
                                          m.optimizer._slot(w, "v").numpy())
    r = model(keras.optimizers.RMSprop(0.01, momentum=0.5))
    train(r, x, y, range(1))
    r.save_weights(tmp_path / "r.weights.h5")
    with h5py.File(tmp_path / "r.weights.h5", "r") as f:
        n = len(weights)
        for i, w in enumerate(r.trainable_weights):
            np.testing.assert_array_equal(f[f"optimizer/vars/{2 + i}"],
                                          r.optimizer._slot(w, "velocity").numpy())
            np.testing.assert_array_equal(f[f"optimizer/vars/{2 + n + i}"],
                                          r.optimizer._slot(w, "momentum").numpy())


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_keras_files_resume_as_keras_did(name):
    """A `.keras` file real Keras saved after 3 steps: the slots are Keras's, and the next
    2 steps reach Keras's weights."""
    path = os.path.join(FIXTURES, f"keras_state_{name}")
    loaded = keras.models.load_model(path + ".keras")
    optimizer = loaded.optimizer
    assert int(optimizer.iterations) == 3
    with np.load(path + ".npz") as f:
        expected = dict(f)
    slots = [key for key in expected if key.startswith("slot_")]
    assert len(slots) == len(optimizer._slot_names()) * len(loaded.trainable_weights)
    for key in slots:
        slot, i = key[len("slot_"):].rsplit("_", 1)
        np.testing.assert_allclose(optimizer._slot(loaded.trainable_weights[int(i)], slot)
                                   .numpy(), expected[key], rtol=1e-6, atol=1e-7)
    if name == "nadam":
        assert float(optimizer._u_product.numpy()) == pytest.approx(
            float(expected["u_product"]), rel=1e-6)
    train(loaded, expected["x"], expected["y"], range(3, 5))
    for i, w in enumerate(loaded.get_weights()):
        np.testing.assert_allclose(w, expected[f"after_{i}"], rtol=1e-5, atol=1e-6)


def test_save_weights_carries_the_optimizer_and_load_weights_restores_it(tmp_path):
    x, y = batches()
    straight = model(keras.optimizers.Adam(0.01))
    train(straight, x, y, range(5))
    first = model(keras.optimizers.Adam(0.01))
    train(first, x, y, range(3))
    first.save_weights(tmp_path / "m.weights.h5")
    # a model whose optimizer is built (it trained a step elsewhere) takes the state
    other = model(keras.optimizers.Adam(0.01), seed=7)
    train(other, x, y, range(4, 5))
    other.load_weights(tmp_path / "m.weights.h5")
    assert int(other.optimizer.iterations) == 3
    train(other, x, y, range(3, 5))
    assert max_difference(other, straight) < 1e-6


def test_unbuilt_optimizers_are_skipped_with_keras_s_warning(tmp_path):
    x, y = batches()
    trained = model(keras.optimizers.Adam(0.01))
    train(trained, x, y, range(2))
    trained.save_weights(tmp_path / "trained.weights.h5")
    untrained = model(keras.optimizers.Adam(0.01))
    untrained.save(tmp_path / "untrained.keras")  # iteration and learning_rate only
    with h5py.File(tmp_path / "trained.weights.h5", "r") as f:
        assert len(f["optimizer/vars"]) == 2 + 2 * len(trained.trainable_weights)
    fresh = model(keras.optimizers.Adam(0.01))
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer"):
        fresh.load_weights(tmp_path / "trained.weights.h5")
    assert int(fresh.optimizer.iterations) == 0  # skipped; the layers' weights loaded
    for a, b in zip(fresh.get_weights(), trained.get_weights()):
        np.testing.assert_array_equal(a, b)
    count = 2 + 2 * len(trained.trainable_weights)
    with pytest.warns(UserWarning, match=f"has {count} variables whereas the saved "
                                         "optimizer has 2 variables"):
        loaded = keras.models.load_model(tmp_path / "untrained.keras")
    assert int(loaded.optimizer.iterations) == 0
    bare = model(keras.optimizers.Adam(0.01))
    bare.optimizer = None  # not compiled: the optimizer group is ignored, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bare.load_weights(tmp_path / "trained.weights.h5")


def test_a_wrong_slot_shape_is_refused_before_anything_changes(tmp_path):
    x, y = batches()
    trained = model(keras.optimizers.Adam(0.01))
    train(trained, x, y, range(2))
    trained.save_weights(tmp_path / "m.weights.h5")
    with h5py.File(tmp_path / "m.weights.h5", "r+") as f:
        del f["optimizer/vars/2"]
        f["optimizer/vars"].create_dataset("2", data=np.zeros((5, 5), np.float32))
    target = model(keras.optimizers.Adam(0.01), seed=5)
    train(target, x, y, range(1))
    before = target.get_weights()
    with pytest.raises(ValueError, match=r"optimizer/vars/2: shape \(5, 5\)"):
        target.load_weights(tmp_path / "m.weights.h5")
    for a, b in zip(target.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert int(target.optimizer.iterations) == 1


def test_summary_counts_the_optimizer_state_once_built():
    """The lines Keras 3 (TF 2.21) prints for the same model: the optimizer's variables
    join the total once its first step has built them."""
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4),
                          keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    m.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")

    def totals():
        lines = []
        m.summary(print_fn=lines.append)
        return [line for line in lines if "params:" in line]
    assert totals() == [" Total params: 37 (148.00 B)", " Trainable params: 29 (116.00 B)",
                        " Non-trainable params: 8 (32.00 B)"]
    m.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    assert totals() == [" Total params: 68 (276.00 B)", " Trainable params: 29 (116.00 B)",
                        " Non-trainable params: 8 (32.00 B)",
                        " Optimizer params: 31 (128.00 B)"]
    m.compile(keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)),
              "mse")
    m.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    assert totals()[0] == " Total params: 96 (388.00 B)"
    assert totals()[-1] == " Optimizer params: 59 (240.00 B)"  # no learning_rate variable
