"""Keras 3's weights file (`*.weights.h5`, through the optional `h5py`): one HDF5 group per
layer, `layers/<key>/vars/<i>` holding the layer's weights in creation order, where the key
is the layer's class in snake_case counted per class in the model's layer order ("dense",
"dense_1", "batch_normalization"; not the layer's own name); a nested model's layers sit
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


def _own_weights(layer: Layer) -> list:
    nested = [sub for sub in layer._sublayers() if sub.weights]
    if nested and not hasattr(layer, "_stack") and not hasattr(layer, "_nodes"):
        raise NotImplementedError(f"Layer {layer.name!r}: layers made of other layers are "
                                  "not supported in .weights.h5 files yet")
    return list(layer._weights)


def _write(group, model) -> None:
    group.create_group("vars").attrs["name"] = model.name
    layers = group.create_group("layers")
    for key, layer in _children(model):
        sub = layers.create_group(key)
        if hasattr(layer, "_stack") or hasattr(layer, "_nodes"):
            _write(sub, layer)
            continue
        values = sub.create_group("vars")
        values.attrs["name"] = layer.name
        for i, v in enumerate(_own_weights(layer)):
            values.create_dataset(str(i), data=v.numpy())


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
        stored = sub["vars"] if "vars" in sub else {}
        own = _own_weights(layer)
        if len(stored) != len(own):
            raise ValueError(f"{where}: the file holds {len(stored)} weights, layer "
                             f"{layer.name!r} has {len(own)}")
        for i, v in enumerate(own):
            array = np.asarray(stored[str(i)])
            if array.shape != tuple(v.shape):
                raise ValueError(f"{where}/vars/{i}: shape {array.shape} in the file, "
                                 f"{tuple(v.shape)} for {v.name}")
            out.append((v, array))


def load_weights_h5(model, filepath: str) -> None:
    """Read a Keras 3 weights file into `model` (built, of the same architecture); every
    count and shape is checked before any weight changes."""
    h5py = _h5py()
    pairs: list = []
    with h5py.File(filepath, "r") as f:
        _collect(f, model, "", pairs)
    for v, array in pairs:
        v.assign(array.astype(v.dtype.as_numpy_dtype))
