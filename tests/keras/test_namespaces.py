"""Keras's public namespaces list only public names (not the modules' own imports), and
every listed name exists."""
import pytest

import tapeflow as tf

NAMESPACES = ["keras", "keras.layers", "keras.losses", "keras.metrics", "keras.optimizers",
              "keras.activations", "keras.callbacks", "keras.utils", "keras.regularizers",
              "keras.constraints", "keras.random", "keras.saving", "keras.models",
              "keras.backend"]
LEAKS = {"np", "Tensor", "Dataset", "annotations", "inspect", "math", "json", "os", "sys",
         "threading", "warnings", "functools", "nest", "compile_utils", "trainer", "layer",
         "data_adapters", "core", "rnn"}


@pytest.mark.parametrize("name", NAMESPACES)
def test_namespace_lists_public_names_only(name):
    module = tf
    for part in name.split("."):
        module = getattr(module, part)
    listed = dir(module)
    leaks = LEAKS - {"rnn"} if name == "keras.backend" else LEAKS  # K.rnn is Keras's own
    assert not leaks & set(listed), sorted(leaks & set(listed))
    assert all(hasattr(module, n) for n in module.__all__)
    assert sorted(listed) == sorted(module.__all__)


def test_keras_top_level_names():
    assert {"Input", "Model", "Sequential", "Layer", "KerasTensor", "Operation", "ops",
            "layers"} <= set(dir(tf.keras))
