"""`tf.train.Checkpoint(model=keras_model, optimizer=opt)` files as TensorFlow 2.21's
Keras 3 writes them: fixtures saved by real TensorFlow (fixtures/make_keras_checkpoints.py,
committed; TensorFlow is never imported here) restore into tapeflow's models and Adam,
weights and optimizer state equal, and training goes on as it did there; tapeflow's files
carry Keras 3's names too (fixtures/verify_tf_restores_keras_checkpoints.py checks with
real TensorFlow that it restores them), and files tapeflow wrote before it wrote Keras 3's
names still restore."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.train.checkpoint import format as checkpoint_format, object_graph
from tapeflow.train.checkpoint.keras_names import keras_optimizer_variables

from .fixtures.keras_checkpoint_models import MODELS, data, initial_weights

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "keras_ckpt")
VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"


def saved(name: str) -> dict:
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        return json.load(f)


def fresh(name: str):
    model = MODELS[name](tf.keras)
    model.set_weights([np.zeros_like(w) for w in model.get_weights()])
    return model, tf.keras.optimizers.Adam(0.5)  # a learning rate the file replaces


def step(model, optimizer, x, y) -> None:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def assert_weights(model, expected: list) -> None:
    got = model.get_weights()
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, np.asarray(b, np.float32), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_keras_checkpoint_restores_weights_and_adam_state(name):
    want = saved(name)
    model, optimizer = fresh(name)
    status = tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
        os.path.join(FIXTURES, name, "ckpt-1"))
    assert_weights(model, want["weights"])
    optimizer.build(model.trainable_variables)  # the slots take their waiting values
    status.assert_consumed()
    state = keras_optimizer_variables(optimizer)
    assert [v.numpy().tolist() for v in state[:2]] == [1, pytest.approx(0.01)]
    assert len(state) == len(want["optimizer"])
    for got, value in zip(state[2:], want["optimizer"][2:]):
        np.testing.assert_allclose(got.numpy(), value, rtol=1e-6, atol=1e-8)
        assert np.abs(got.numpy()).max() > 0  # a slot the step moved, not zeros


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_continues_from_a_keras_checkpoint_as_in_keras(name):
    _, _, x2, y2 = data()
    model, optimizer = fresh(name)
    tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
        os.path.join(FIXTURES, name, "ckpt-1")).assert_existing_objects_matched()
    step(model, optimizer, x2, y2)  # slots made now get the file's values first
    assert int(optimizer.iterations.numpy()) == 2
    assert_weights(model, saved(name)["weights_after_next_step"])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_tapeflow_files_carry_keras_names(name, tmp_path):
    x, y, _, _ = data()
    model = MODELS[name](tf.keras)
    model.set_weights(initial_weights(model.get_weights()))
    optimizer = tf.keras.optimizers.Adam(0.01)
    step(model, optimizer, x, y)
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(
        str(tmp_path / "ckpt"))
    # the step matched Keras's (same weights, same Adam state)
    assert_weights(model, saved(name)["weights"])
    reader = tf.train.load_checkpoint(path)
    keras_paths = {"optimizer/_iterations", "optimizer/_learning_rate"} | {
        f"optimizer/_variables/{i}" for i in range(2, len(saved(name)["optimizer"]))} | {
        f"optimizer/_trainable_variables/{i}" for i in range(len(model.trainable_weights))}
    graph_paths = _graph_paths(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    assert keras_paths <= graph_paths
    prefix = "model/_functional/_operations/" if name == "sequential" else \
        "model/_operations/"
    layers = [1, 2] if name == "sequential" else [1, 2, 3]
    for i in layers:
        assert any(p.startswith(f"{prefix}{i}/") for p in graph_paths), (prefix, i)
    assert f"{prefix}1/_kernel" in graph_paths and f"{prefix}1/bias" in graph_paths
    # and it restores into a fresh tapeflow model and optimizer
    again, again_optimizer = fresh(name)
    status = tf.train.Checkpoint(model=again, optimizer=again_optimizer).read(path)
    again_optimizer.build(again.trainable_variables)
    status.assert_consumed()
    assert_weights(again, saved(name)["weights"])
    assert float(again_optimizer.learning_rate.numpy()) == pytest.approx(0.01)


def _graph_paths(graph: bytes) -> set:
    """Every node path of a TrackableObjectGraph (read with the library's own decoder)."""
    nodes = object_graph._decode(graph)
    return {p for paths in object_graph._node_paths(nodes) for p in paths}


def test_a_file_tapeflow_wrote_before_keras_names_still_restores(tmp_path):
    """Old files: tapeflow's own names only, and no learning rate."""
    x, y, _, _ = data()
    model = MODELS["sequential"](tf.keras)
    model.set_weights(initial_weights(model.get_weights()))
    optimizer = tf.keras.optimizers.Adam(0.01)
    step(model, optimizer, x, y)
    values = {f"model/_stack/{i // 2}/{'kernel' if i % 2 == 0 else 'bias'}": w
              for i, w in enumerate(model.get_weights())}
    values["optimizer/iterations"] = np.int64(1)
    for i, w in enumerate(model.trainable_weights):
        values[f"optimizer/m/{i}"] = optimizer._slot(w, "m").numpy()
        values[f"optimizer/v/{i}"] = optimizer._slot(w, "v").numpy()
    values["save_counter"] = np.int64(1)
    prefix = str(tmp_path / "old-1")
    checkpoint_format.write_checkpoint(prefix, values, {})
    again, again_optimizer = fresh("sequential")
    status = tf.train.Checkpoint(model=again, optimizer=again_optimizer).restore(prefix)
    again_optimizer.build(again.trainable_variables)
    status.assert_consumed()
    assert_weights(again, saved("sequential")["weights"])
    for w, w_again in zip(model.trainable_weights, again.trainable_weights):
        np.testing.assert_array_equal(again_optimizer._slot(w_again, "v").numpy(),
                                      optimizer._slot(w, "v").numpy())
    # the learning rate is not in the file: it stays the optimizer's own
    assert float(again_optimizer.learning_rate.numpy()) == 0.5
