"""Keras 3's object-graph names of Keras layers and models, as further names of their
weights in `tf.train.Checkpoint` files (`register_alias_children`), so that files written
by TensorFlow 2.21's Keras 3 restore here and files written here restore there.

What Keras 3 tracks (as `tf.train.list_variables` and the object graph of its files show):
- a Sequential model: `_functional`, its functional graph, whose `_operations` are the
  InputLayer (0) then the layers (1, 2, ...);
- a functional model: `_operations`, every layer in `model.layers` order (InputLayers
  included);
- a layer: its weights under their attribute names, where the layers that support LoRA
  hold the kernel privately: Dense, EinsumDense and the convolutions Conv1D/2D/3D as
  `_kernel`, Embedding as `_embeddings`;
- a subclassed model: its attributes, as tapeflow names them already.
tapeflow's own names ("_stack/0/kernel") stay the keys it writes.
"""
from __future__ import annotations

from ..train import layers as _layers
from ..train.checkpoint.trackable import register_alias_children

__all__ = ["keras_layer_children"]

# attribute names Keras 3 gives a weight, by the class (in the MRO) that stores it so
_PRIVATE_WEIGHTS = {"Dense": {"kernel": "_kernel"}, "EinsumDense": {"kernel": "_kernel"},
                    "BaseConv": {"kernel": "_kernel"},
                    "Embedding": {"embeddings": "_embeddings"}}


def _keras_classes(layer) -> list[str]:
    return [c.__name__ for c in type(layer).__mro__
            if c.__module__.startswith("tapeflow.keras")]


def keras_layer_children(layer) -> dict:
    """{Keras 3's name: child} of a Keras layer or model, besides tapeflow's own names.

    Example:
        >>> d = tf.keras.layers.Dense(2); d.build((None, 3))
        >>> list(keras_layer_children(d))
        ['_kernel']
    """
    classes = _keras_classes(layer)
    children: dict = {}
    if "Sequential" in classes:
        # Keras 3 builds the Sequential's graph with an InputLayer first
        operations = {str(i + 1): sub for i, sub in enumerate(layer.layers)}
        children["_functional"] = {"_operations": operations}
    elif "Functional" in classes:
        children["_operations"] = {str(i): sub for i, sub in enumerate(layer.layers)}
    for cls in classes:
        for attribute, private in _PRIVATE_WEIGHTS.get(cls, {}).items():
            weight = getattr(layer, attribute, None)
            if weight is not None and private not in children:
                children[private] = weight
    return children


# registered on the base of Keras's Layer (this module loads before keras/layer.py ends);
# layers of no Keras class get no further names
register_alias_children(_layers.Layer, keras_layer_children)
