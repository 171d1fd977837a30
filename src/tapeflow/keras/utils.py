"""`tf.keras.utils`: Keras 3's utilities: the custom-object registry that loading models
consults (`register_keras_serializable`, `get_custom_objects`, `custom_object_scope`,
`serialize_keras_object`, `deserialize_keras_object`), data helpers (`to_categorical`,
`normalize`, `pad_sequences`, `split_dataset`, `timeseries_dataset_from_array`),
`set_random_seed`, `Progbar` and `plot_model` (with pydot).

Example:
    >>> tf.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    >>> tf.keras.utils.pad_sequences([[1, 2], [3]], maxlen=3)
    array([[0, 1, 2],
           [0, 0, 3]], dtype=int32)
"""
from __future__ import annotations

import random

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..data.dataset import Dataset
from ..ops.array import reshape
from ..ops.linalg import norm as _norm
from ..ops.math import maximum, sqrt, square
from ..ops.random import set_seed
from ..ops.reduction import reduce_sum
from . import random as _keras_random
from .callbacks import Progbar
from .preprocessing._directory import image_dataset_from_directory, \
    text_dataset_from_directory
from .sequence_utils import pad_sequences, timeseries_dataset_from_array
from .serialization_lib import CustomObjectScope, custom_object_scope, deserialize_keras_object, \
    get_custom_objects, get_registered_name, get_registered_object, \
    register_keras_serializable, serialize_keras_object

__all__ = ["to_categorical", "set_random_seed", "Progbar", "normalize", "pad_sequences",
           "split_dataset", "timeseries_dataset_from_array", "register_keras_serializable",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "custom_object_scope", "CustomObjectScope", "serialize_keras_object",
           "deserialize_keras_object", "plot_model", "model_to_dot",
           "image_dataset_from_directory", "text_dataset_from_directory"]


# --------------------------------------------------------------------------- arrays
def to_categorical(x, num_classes: int | None = None) -> np.ndarray:
    """One-hot float32 rows for integer class ids (a trailing axis of size 1 is dropped,
    as Keras does); `num_classes` defaults to `max(x) + 1`.

    Example:
        >>> tf.keras.utils.to_categorical([1], 3)
        array([[0., 1., 0.]], dtype=float32)
    """
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if x.size and not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError(f"to_categorical: class ids must be integers, got {x.dtype}")
        x = x.astype(np.int64)
    shape = x.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    x = x.reshape(-1).astype(np.int64)
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: class ids must be in [0, {num_classes}), got "
                         f"values in [{x.min()}, {x.max()}]")
    out = np.zeros((x.size, num_classes), np.float32)
    out[np.arange(x.size), x] = 1.0
    return out.reshape(*shape, num_classes)


def normalize(x, axis: int = -1, order: int = 2):
    """`x` divided by its `order`-norm along `axis`: for a NumPy array a NumPy array (a
    zero norm leaves the zeros), for anything else a tensor whose norms are floored at
    1e-7 (Keras's `ops.normalize`).

    Example:
        >>> tf.keras.utils.normalize(np.array([[3.0, 4.0]]))
        array([[0.6, 0.8]])
    """
    if isinstance(x, np.ndarray):
        norm = np.atleast_1d(np.linalg.norm(x, order, axis))
        norm[norm == 0] = 1
        return x / np.expand_dims(norm, axis or -1)
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"Argument `order` must be an int >= 1. Received: order={order}")
    t = convert_to_tensor(x)
    if t.ndim == 0:
        t = reshape(t, [1])
    if order == 2:
        norms = sqrt(reduce_sum(square(t), axis=axis, keepdims=True))
    else:
        norms = _norm(t, ord=order, axis=axis, keepdims=True)
    return t / maximum(norms, np.asarray(1e-7, t.dtype.as_numpy_dtype))


def _split_sizes(left_size, right_size, total: int) -> tuple:
    """Keras's rules for `split_dataset`'s sizes: ints count samples, floats are
    fractions (rounded), a missing side takes the rest."""
    lt, rt = type(left_size), type(right_size)
    for value, kind, side in ((left_size, lt, "left"), (right_size, rt, "right")):
        if value is not None and kind not in (int, float):
            raise TypeError(f"Invalid `{side}_size` Type. Expected: int or float or None, "
                            f"Received: type({side}_size)={kind}.")
    if left_size == 0 and right_size == 0:
        raise ValueError("Both `left_size` and `right_size` are zero. At least one of the "
                         "split sizes must be non-zero.")
    for value, kind, side in ((left_size, lt, "left"), (right_size, rt, "right")):
        if kind is int and (value <= 0 or value >= total) or \
                kind is float and (value <= 0 or value >= 1):
            raise ValueError(f"`{side}_size` should be either a positive integer smaller "
                             f"than {total}, or a float within the range `[0, 1]`. "
                             f"Received: {side}_size={value}")
    if lt is rt is float and left_size + right_size > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater than 1. It "
                         "must be less than or equal to 1.")
    left = round(left_size * total) if lt is float else left_size
    right = round(right_size * total) if rt is float else right_size
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError("The sum of `left_size` and `right_size` should be smaller than "
                         f"the {total}. Received: left_size + right_size = {left + right}"
                         f"and total_length = {total}")
    for split, side in ((left, "left"), (right, "right")):
        if split == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`={left} "
                             f"and `right_size`={right}.Resulting {side} side dataset "
                             "split will be empty. Adjust any of the aforementioned "
                             "parameters")
    return int(left), int(right)


def _numpy(value):
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def _samples(dataset) -> tuple:
    """(list of samples, the structure of one sample or None for bare arrays)."""
    if isinstance(dataset, Dataset):
        batched = _batch_size(dataset) is not None
        rows = [nest.map_structure(_numpy, s) for s in
                (dataset.unbatch() if batched else dataset)]
        return rows, (rows[0] if rows else None)
    if isinstance(dataset, np.ndarray):
        return list(dataset), None
    if isinstance(dataset, (list, tuple)):
        if not dataset:
            raise ValueError(f"Received an empty {type(dataset).__name__} dataset. Please "
                             "provide a non-empty list of arrays.")
        arrays = [np.asarray(a) for a in dataset]
        if any(len(a) != len(arrays[0]) for a in arrays):
            raise ValueError(f"Received a {type(dataset).__name__} of NumPy arrays with "
                             f"different lengths: {[a.shape for a in arrays]}. Please "
                             "provide arrays of the same length.")
        return list(zip(*arrays)), tuple(arrays)
    raise TypeError("The `dataset` argument must be either a `tf.data.Dataset` object, or a "
                    f"list/tuple of arrays. Received: dataset={dataset} of type "
                    f"{type(dataset)}")


def _batch_size(dataset: Dataset):
    size = getattr(dataset, "_size", None)
    return size if type(dataset).__name__ == "_BatchDataset" else None


def _restack(rows: list, structure):
    if structure is None:
        return np.stack(rows) if rows else np.array([])
    flat = [nest.flatten(r) for r in rows]
    columns = [np.stack([f[i] for f in flat]) for i in range(len(flat[0]))]
    packed = nest.pack_sequence_as(structure, columns)
    return tuple(packed) if isinstance(packed, list) else packed


def split_dataset(dataset, left_size=None, right_size=None, shuffle: bool = False,
                  seed: int | None = None):
    """Two `tf.data.Dataset`s, the first `left_size` samples and the last `right_size`
    (ints count samples, floats are fractions; a missing side takes the rest) of an
    array, a tuple/list of arrays or a dataset (a batched dataset is split by sample and
    both sides rebatched as it was); `shuffle` first (with Python's `random` and `seed`,
    as Keras).

    Example:
        >>> left, right = tf.keras.utils.split_dataset(np.arange(10), left_size=0.8)
        >>> int(left.cardinality()), int(right.cardinality())
        (8, 2)
    """
    if left_size is None and right_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must be "
                         "specified. Received: left_size=None and right_size=None")
    rows, structure = _samples(dataset)
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.seed(seed)
        random.shuffle(rows)
    left, right = _split_sizes(left_size, right_size, len(rows))
    sides = [Dataset.from_tensor_slices(_restack(part, structure))
             for part in (rows[:left], rows[-right:])]
    batch = _batch_size(dataset) if isinstance(dataset, Dataset) else None
    if batch is not None:
        sides = [side.batch(batch) for side in sides]
    return sides[0], sides[1]


def set_random_seed(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and tapeflow's (`random.set_seed`)
    at once, and restart `keras.random`'s global SeedGenerator from the seed, as Keras
    does, so that a program runs the same twice.

    Example:
        >>> tf.keras.utils.set_random_seed(1)
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} "
                         f"(of type {type(seed)})")
    _keras_random.reset_global_seed_generator()
    random.seed(seed)
    np.random.seed(seed)
    set_seed(seed)


def _pydot():
    try:
        import pydot  # optional: only plot_model needs it
    except ImportError:
        raise ImportError("You must install pydot (`pip install pydot`) for `plot_model` "
                          "to work.") from None
    return pydot


def model_to_dot(model, show_shapes: bool = False, show_dtype: bool = False,
                 show_layer_names: bool = True, rankdir: str = "TB", dpi: int = 200, **kwargs):
    """The model's layers as a `pydot.Dot` graph (one node per layer, an edge per
    connection, in order for a Sequential model); needs pydot.

    Example:
        >>> dot = tf.keras.utils.model_to_dot(model)
    """
    pydot = _pydot()
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    layers = list(model.layers)
    for layer in layers:
        label = (f"{layer.name} ({type(layer).__name__})" if show_layer_names
                 else type(layer).__name__)
        if show_shapes:
            label += f"\n{getattr(layer, 'output_shape', '?')}"
        if show_dtype:
            label += f"\n{getattr(layer, 'dtype', '?')}"
        dot.add_node(pydot.Node(str(id(layer)), label=label, shape="record"))
    edges = []
    for layer in layers:
        for node in getattr(layer, "_inbound_nodes", []):
            inputs = node.inputs if isinstance(node.inputs, (list, tuple)) else [node.inputs]
            for kt in nest.flatten(inputs):
                source = getattr(getattr(kt, "node", None), "layer", None)
                if source is not None and any(source is other for other in layers):
                    edges.append((source, layer))
    if not edges:  # a Sequential model: its layers in a chain
        edges = list(zip(layers, layers[1:]))
    for a, b in edges:
        dot.add_edge(pydot.Edge(str(id(a)), str(id(b))))
    return dot


def plot_model(model, to_file: str = "model.png", show_shapes: bool = False,
               show_dtype: bool = False, show_layer_names: bool = True, rankdir: str = "TB",
               expand_nested: bool = False, dpi: int = 200, **kwargs):
    """Draw the model's graph to `to_file` (its format from the suffix: .png, .svg, .dot,
    ...) with pydot and Graphviz; raises ImportError naming pydot when it is missing.

    Example:
        >>> tf.keras.utils.plot_model(model, "model.png", show_shapes=True)
    """
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir, dpi=dpi)
    suffix = str(to_file).rsplit(".", 1)[-1] if "." in str(to_file) else "png"
    dot.write(str(to_file), format="raw" if suffix == "dot" else suffix)
    return None


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
