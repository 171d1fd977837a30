"""Keras 3's weights file (`*.weights.h5`, through the optional `h5py`): one HDF5 group per
layer, `layers/<key>/vars/<i>` holding the layer's weights in creation order (a layer made
of layers, as LSTM or MultiHeadAttention, adds a group per sublayer named by its attribute:
`layers/lstm/cell/vars/0`), where the key is the layer's class in snake_case counted per
class in the model's layer order ("dense", "dense_1", "batch_normalization"; not the
layer's own name); a nested model's layers sit
under its own `layers/` group. The optimizer's group, when present, is not read.

Files are only read as arrays: nothing in them is executed.
"""
from __future__ import annotations

import numpy as np

from .layer import Layer, snake_case

__all__ = ["save_weights_h5", "load_weights_h5"]


def _h5py():
    try:
        import h5py  # optional: only the .weights.h5 format needs it
    except ImportError:
        raise ImportError("Keras's .weights.h5 files need h5py: pip install 'tapeflow[keras]'"
                          ) from None
    return h5py


def _children(model) -> list:
    """(key, layer) for the layers of a Sequential or functional model."""
    if not hasattr(model, "_stack") and not hasattr(model, "_nodes"):
        raise NotImplementedError(
            f"{type(model).__name__}: .weights.h5 files are supported for Sequential and "
            "functional models; save a subclassed model's weights without the .h5 suffix "
            "(a TensorFlow checkpoint)")
    counts: dict = {}
    out = []
    for layer in model.layers:
        base = snake_case(type(layer).__name__)
        n = counts.get(base, 0)
        counts[base] = n + 1
        out.append((base if n == 0 else f"{base}_{n}", layer))
    return out


def _nested(layer: Layer) -> list:
    """(attribute, sublayer) for a layer made of other layers (an LSTM's "cell", a
    Bidirectional's "forward_layer", a MultiHeadAttention's "query_dense"): Keras files
    hold each under a group named by the attribute, in assignment order."""
    found = [(key, value) for key, value in vars(layer).items()
             if isinstance(value, Layer) and value is not layer and not key.startswith("_")]
    named = [sub for _, sub in found]
    if any(sub.weights and not any(sub is n for n in named) for sub in layer._sublayers()):
        raise NotImplementedError(f"Layer {layer.name!r}: sublayers held in lists or dicts "
                                  "are not supported in .weights.h5 files yet")
    return found


def _write_layer(group, layer: Layer) -> None:
    values = group.create_group("vars")
    values.attrs["name"] = layer.name
    for i, v in enumerate(layer._weights):
        values.create_dataset(str(i), data=v.numpy())
    for key, sub in _nested(layer):
        _write_layer(group.create_group(key), sub)


def _collect_layer(group, layer: Layer, where: str, out: list) -> None:
    stored = group["vars"] if "vars" in group else {}
    own = list(layer._weights)
    if len(stored) != len(own):
        raise ValueError(f"{where}: the file holds {len(stored)} weights, layer "
                         f"{layer.name!r} has {len(own)}")
    for i, v in enumerate(own):
        array = np.asarray(stored[str(i)])
        if array.shape != tuple(v.shape):
            raise ValueError(f"{where}/vars/{i}: shape {array.shape} in the file, "
                             f"{tuple(v.shape)} for {v.name}")
        out.append((v, array))
    for key, sub in _nested(layer):
        if key not in group:
            if sub.weights:
                raise ValueError(f"{where}/{key}: missing from the file (layer "
                                 f"{sub.name!r} has {len(sub.weights)} weights)")
            continue
        _collect_layer(group[key], sub, f"{where}/{key}", out)


def _write(group, model) -> None:
    group.create_group("vars").attrs["name"] = model.name
    layers = group.create_group("layers")
    for key, layer in _children(model):
        sub = layers.create_group(key)
        if hasattr(layer, "_stack") or hasattr(layer, "_nodes"):
            _write(sub, layer)
            continue
        _write_layer(sub, layer)


def save_weights_h5(model, filepath: str) -> None:
    """Write `model`'s weights as Keras 3 does (`model.save_weights("m.weights.h5")`)."""
    h5py = _h5py()
    with h5py.File(filepath, "w") as f:
        _write(f, model)


def _collect(group, model, path: str, out: list) -> None:
    """(variable, array) pairs for the whole model, checking every count and shape."""
    if "layers" not in group:
        raise ValueError(f"{path}: no 'layers' group; not a Keras weights file of this model")
    layers = group["layers"]
    for key, layer in _children(model):
        where = f"{path}layers/{key}"
        if key not in layers:
            if layer.weights:
                raise ValueError(f"{where}: missing from the file (layer {layer.name!r} has "
                                 f"{len(layer.weights)} weights)")
            continue
        sub = layers[key]
        if hasattr(layer, "_stack") or hasattr(layer, "_nodes"):
            _collect(sub, layer, where + "/", out)
            continue
        _collect_layer(sub, layer, where, out)


def load_weights_h5(model, filepath: str) -> None:
    """Read a Keras 3 weights file into `model` (built, of the same architecture); every
    count and shape is checked before any weight changes."""
    h5py = _h5py()
    pairs: list = []
    with h5py.File(filepath, "r") as f:
        _collect(f, model, "", pairs)
    for v, array in pairs:
        v.assign(array.astype(v.dtype.as_numpy_dtype))
