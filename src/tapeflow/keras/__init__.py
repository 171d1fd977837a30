"""`tapeflow.keras` (`tf.keras`): Keras's high-level API over tapeflow's own layers,
optimizers, losses, `function` and `tf.data` (see docs/keras.md).

Example:
    >>> model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse")
"""
from . import (activations, backend, callbacks, constraints, datasets, initializers,  # noqa: F401
               layers, losses, metrics, mixed_precision, models, ops, optimizers,
               preprocessing, random, regularizers, saving, utils)
from .layer import Input, KerasTensor, Layer
from .ops.operation import Operation
from .functional import Functional
from .model import Model
from .sequential import Sequential

saving.register_classes({name: getattr(layers, name) for name in layers.__all__
                         if isinstance(getattr(layers, name), type)})
saving.register_classes({"Sequential": Sequential, "Functional": Functional,
                         "Model": Functional, "InputLayer": layers.InputLayer})

__all__ = ["Input", "KerasTensor", "Layer", "Model", "Operation", "Sequential", "activations",
           "backend", "callbacks", "constraints", "datasets", "initializers", "layers", "losses",
           "metrics", "mixed_precision", "models", "ops", "optimizers", "preprocessing", "random",
           "regularizers", "saving", "utils"]


def __dir__() -> list:
    """Only the public names, not the implementation modules."""
    return list(__all__)
