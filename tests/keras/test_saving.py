"""Weights on disk: Keras 3's `.weights.h5` files written by real Keras load into the same
models built with tapeflow (fixtures/make_keras_weights.py wrote them), tapeflow's files
load back, and TensorFlow-checkpoint weights round-trip."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import layers

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(autouse=True)
def _fresh_names_and_seeds():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def sequential():
    return keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="relu"),
                             layers.BatchNormalization(), layers.Dense(2)])


def functional():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    h = layers.Concatenate()([layers.Dense(4, name="left")(a), b])
    inner = keras.Sequential([keras.Input((6,)), layers.Dense(2)])
    return keras.Model([a, b], layers.Dense(1, name="out")(inner(h)))


def _fixture(name: str, suffix: str):
    return os.path.join(FIXTURES, f"keras_{name}{suffix}")


@pytest.mark.parametrize("name,build", [("sequential", sequential),
                                        ("functional", functional)])
def test_weights_written_by_keras_load_and_predict_the_same(name, build):
    model = build()
    model.load_weights(_fixture(name, ".weights.h5"))
    stored = np.load(_fixture(name, "_values.npz"))
    expected = [stored[f"arr_{i}"] for i in range(len(stored.files))]
    assert len(model.get_weights()) == len(expected)
    for mine, theirs in zip(model.get_weights(), expected):
        np.testing.assert_array_equal(mine, theirs)
    inputs = np.load(_fixture(name, "_inputs.npy"))
    if name == "functional":
        inputs = [inputs[:, :3], inputs[:, 3:]]
    np.testing.assert_allclose(model.predict(inputs, verbose=0),
                               np.load(_fixture(name, "_prediction.npy")), rtol=1e-5,
                               atol=1e-6)


def test_h5_round_trip_and_mismatches_change_nothing(tmp_path):
    model = sequential()
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    fresh = sequential()
    fresh.load_weights(path)
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    other = keras.Sequential([keras.Input((3,)), layers.Dense(5), layers.BatchNormalization(),
                              layers.Dense(2)])
    before = other.get_weights()
    with pytest.raises(ValueError, match=r"layers/dense/vars/0: shape \(3, 4\) in the file"):
        other.load_weights(path)
    for a, b in zip(other.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="must end in `.weights.h5`"):
        model.save_weights(str(tmp_path / "model.h5"))


def test_checkpoint_weights_round_trip(tmp_path):
    model = functional()
    model.save_weights(str(tmp_path / "ckpt"))
    fresh = functional()
    fresh.load_weights(str(tmp_path / "ckpt"))
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
