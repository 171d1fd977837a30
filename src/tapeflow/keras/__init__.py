"""`tapeflow.keras` (`tf.keras`): Keras's high-level API over tapeflow's own layers,
optimizers, losses, `function` and `tf.data` (see docs/keras.md).

Example:
    >>> model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse")
"""
from . import (activations, backend, callbacks, datasets, initializers, layers,  # noqa: F401
               losses, metrics, models, optimizers, regularizers, utils)
from .layer import Input, KerasTensor  # noqa: F401
from .model import Model, Sequential, register_layer_classes

register_layer_classes({name: getattr(layers, name) for name in layers.__all__
                        if isinstance(getattr(layers, name), type)})

__all__ = ["Input", "Model", "Sequential", "activations", "backend", "callbacks",
           "datasets", "initializers", "layers", "losses", "metrics", "models", "optimizers",
           "regularizers", "utils"]
