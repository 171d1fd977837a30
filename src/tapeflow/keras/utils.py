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

import inspect
import random
import sys
import threading
import types

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

__all__ = ["to_categorical", "set_random_seed", "Progbar", "normalize", "pad_sequences",
           "split_dataset", "timeseries_dataset_from_array", "register_keras_serializable",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "custom_object_scope", "CustomObjectScope", "serialize_keras_object",
           "deserialize_keras_object", "plot_model", "model_to_dot"]


# --------------------------------------------------------------------------- registry
_GLOBAL_CUSTOM_OBJECTS: dict = {}
_GLOBAL_CUSTOM_NAMES: dict = {}
_scope = threading.local()  # the custom_object_scope in force, per thread as Keras's


def _scope_objects() -> dict:
    return getattr(_scope, "objects", {})


class CustomObjectScope:
    """Makes custom classes and functions findable by name while loading (`load_model`,
    `deserialize_keras_object`, `Layer.from_config`) inside a `with` block; scopes do not
    nest: the innermost one replaces the outer one until it exits, as in Keras.

    Example:
        >>> with tf.keras.utils.custom_object_scope({"MyLayer": MyLayer}):
        ...     model = tf.keras.models.load_model("m.keras")
    """

    def __init__(self, custom_objects: dict | None):
        self.custom_objects = custom_objects or {}
        self.backup = None

    def __enter__(self) -> "CustomObjectScope":
        self.backup = dict(_scope_objects())
        _scope.objects = dict(self.custom_objects)
        return self

    def __exit__(self, *args) -> None:
        _scope.objects = dict(self.backup)


custom_object_scope = CustomObjectScope


def get_custom_objects() -> dict:
    """The live global dictionary of registered objects (`"package>name"` -> object);
    entries added to it are found when loading, as Keras's.

    Example:
        >>> tf.keras.utils.get_custom_objects()["MyLayer"] = MyLayer
    """
    return _GLOBAL_CUSTOM_OBJECTS


def register_keras_serializable(package: str = "Custom", name: str | None = None):
    """A decorator that registers a class (which must have `get_config`) or function
    under `"package>name"` (name defaults to its `__name__`), so that saved models using
    it load without `custom_objects`.

    Example:
        >>> @tf.keras.utils.register_keras_serializable(package="my_pkg")
        ... class Scale(tf.keras.layers.Layer):
        ...     def call(self, x):
        ...         return 2.0 * x
        >>> tf.keras.utils.get_registered_name(Scale)
        'my_pkg>Scale'
    """
    def decorator(arg):
        registered = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        _GLOBAL_CUSTOM_OBJECTS[registered] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered
        return arg
    return decorator


def get_registered_name(obj) -> str:
    """The name `obj` was registered under, else its `__name__`."""
    return _GLOBAL_CUSTOM_NAMES.get(obj, obj.__name__)


def get_registered_object(name: str, custom_objects: dict | None = None,
                          module_objects: dict | None = None):
    """The object registered as `name`, looking in the active `custom_object_scope`,
    then the global registry, then `custom_objects`, then `module_objects` (Keras's
    order); None when absent."""
    for table in (_scope_objects(), _GLOBAL_CUSTOM_OBJECTS, custom_objects or {},
                  module_objects or {}):
        if name in table:
            return table[name]
    return None


# --------------------------------------------------------------------------- (de)serialize
_PUBLIC_MODULES = ("layers", "constraints", "initializers", "regularizers", "losses",
                   "metrics", "optimizers", "activations")


def _public_module(obj_type: type) -> str | None:
    """The `keras.<module>` that exposes a tapeflow class by its name (what Keras writes
    as a built-in's module), or None for a user's class."""
    for module in _PUBLIC_MODULES:
        found = sys.modules.get(f"tapeflow.keras.{module}")
        if found is not None and getattr(found, obj_type.__name__, None) is obj_type:
            return f"keras.{module}"
    return None


def serialize_keras_object(obj):
    """A JSON-ready description of `obj` as Keras 3 writes it: plain values as they are
    (lists for tuples), objects with `get_config` as `{"module", "class_name", "config",
    "registered_name"}`, functions by (registered) name.

    Example:
        >>> config = tf.keras.utils.serialize_keras_object(tf.keras.constraints.MaxNorm(3))
        >>> config["module"], config["class_name"], config["config"]
        ('keras.constraints', 'MaxNorm', {'max_value': 3, 'axis': 0})
    """
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if isinstance(obj, types.FunctionType):
        name = _GLOBAL_CUSTOM_NAMES.get(obj, obj.__name__)
        return {"module": "builtins", "class_name": "function", "config": name,
                "registered_name": "function"}
    cls = obj if inspect.isclass(obj) else type(obj)
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: cannot serialize {obj!r}: it has no "
                        "get_config() method")
    config = serialize_keras_object(obj.get_config())
    module = _public_module(cls)
    if module is not None and cls not in _GLOBAL_CUSTOM_NAMES:
        return {"module": module, "class_name": cls.__name__, "config": config,
                "registered_name": None}
    return {"module": cls.__module__, "class_name": cls.__name__, "config": config,
            "registered_name": get_registered_name(cls)}


def _find(name: str, registered: str | None, module: str | None, custom_objects: dict,
          module_objects: dict | None, what: str):
    found = get_registered_object(registered or name, custom_objects, module_objects)
    if found is None and registered and registered != name:
        found = get_registered_object(name, custom_objects, module_objects)
    if found is None and module and module.split(".")[0] == "keras":
        # a built-in: the tapeflow module of that name, already imported (never an import)
        public = sys.modules.get(f"tapeflow.{module}")
        found = getattr(public, name, None) if public is not None else None
    if found is None:
        raise TypeError(f"Could not locate {what} '{name}'. Make sure custom classes and "
                        "functions are decorated with "
                        "`@keras.saving.register_keras_serializable()`. Full object "
                        f"config: {registered or name}")
    return found


def deserialize_keras_object(config, custom_objects: dict | None = None,
                             safe_mode: bool = True, **kwargs):
    """The object a `serialize_keras_object` description stands for: classes and
    functions are found in the active `custom_object_scope`, the registry,
    `custom_objects`, then tapeflow's built-in Keras modules (never imported or
    executed from the description); a class is rebuilt with `from_config`.

    Example:
        >>> tf.keras.utils.deserialize_keras_object({"module": "keras.constraints",
        ...     "class_name": "UnitNorm", "config": {"axis": 1}, "registered_name": None})
    """
    module_objects = kwargs.pop("module_objects", None)
    if kwargs:
        raise ValueError(f"deserialize_keras_object: unrecognized arguments {sorted(kwargs)}")
    custom_objects = custom_objects or {}
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, str):
        found = get_registered_object(config, custom_objects, module_objects)
        return config if found is None else found
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(x, custom_objects, safe_mode,
                                         module_objects=module_objects) for x in config]
    if not isinstance(config, dict):
        raise TypeError(f"deserialize_keras_object: cannot read {config!r}")
    if "class_name" not in config:
        return {k: deserialize_keras_object(v, custom_objects, safe_mode) for k, v in
                config.items()}
    name, inner = config["class_name"], config.get("config")
    module, registered = config.get("module"), config.get("registered_name", name)
    if name == "function":
        return _find(inner, inner, module, custom_objects, module_objects, "function")
    cls = _find(name, registered, module, custom_objects, module_objects, "class")
    if isinstance(cls, types.FunctionType):
        return cls
    if not hasattr(cls, "from_config"):
        raise TypeError(f"Unable to reconstruct an instance of '{name}' because the class "
                        f"is missing a `from_config()` method. Full object config: {config}")
    with CustomObjectScope({**_scope_objects(), **custom_objects}):
        return cls.from_config(inner or {})


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


def pad_sequences(sequences, maxlen: int | None = None, dtype="int32", padding: str = "pre",
                  truncating: str = "pre", value=0.0) -> np.ndarray:
    """The sequences as one `[len(sequences), maxlen, ...]` array: shorter ones padded
    with `value` (before them with `padding="pre"`, after with "post"), longer ones cut
    (their start dropped with `truncating="pre"`, their end with "post"); `maxlen`
    defaults to the longest.

    Example:
        >>> tf.keras.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post")
        array([[2, 3],
               [4, 0]], dtype=int32)
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths, sample_shape, found = [], (), False
    for s in sequences:
        try:
            lengths.append(len(s))
        except TypeError as e:
            raise ValueError("`sequences` must be a list of iterables. Found non-iterable: "
                             f"{s}") from e
        if not found and len(s):
            sample_shape, found = np.asarray(s).shape[1:], True
    if maxlen is None:
        maxlen = np.max(lengths)
    is_text = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_text:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         "strings.")
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            kept = s[-maxlen:]  # (maxlen=0 keeps all and fails below, as Keras)
        elif truncating == "post":
            kept = s[:maxlen]
        else:
            raise ValueError(f'Truncating type "{truncating}" not understood')
        kept = np.asarray(kept, dtype=dtype)
        if kept.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at position {i} "
                             f"is different from expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        elif padding == "pre":
            out[i, -len(kept):] = kept
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return out


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


def timeseries_dataset_from_array(data, targets, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> Dataset:
    """A dataset of sliding windows over `data` (`sequence_length` steps, `sampling_rate`
    apart, a window every `sequence_stride` steps), each paired with the target at its
    first step when `targets` is given, batched by `batch_size` (None: unbatched).

    Example:
        >>> ds = tf.keras.utils.timeseries_dataset_from_array(np.arange(10), None, 3,
        ...                                                   batch_size=None)
        >>> [w.numpy().tolist() for w in ds][:2]
        [[0, 1, 2], [1, 2, 3]]
    """
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data. "
                             f"Received: start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index} ")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data. "
                             f"Received: end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: "
                             f"end_index={end_index}")
    for arg, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{arg}` must be higher than 0. Received: {arg}={value}")
        if value >= n:
            raise ValueError(f"`{arg}` must be lower than the length of the data. Received: "
                             f"{arg}={value}, for data of length {n}")
    start = start_index or 0
    end = n if end_index is None else end_index
    count = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        count = min(count, len(targets))
    starts = np.arange(0, max(count, 0), sequence_stride)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    values = _numpy(data)[start:end]
    steps = np.arange(sequence_length) * sampling_rate
    windows = values[starts[:, None] + steps[None, :]] if len(starts) else \
        np.zeros((0, sequence_length) + values.shape[1:], values.dtype)
    if targets is not None:
        labels = _numpy(targets)[start:end][starts]
        dataset = Dataset.from_tensor_slices((windows, labels))
    else:
        dataset = Dataset.from_tensor_slices(windows)
    if batch_size is not None:
        if shuffle:
            dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
        return dataset.batch(batch_size)
    return dataset.shuffle(buffer_size=1024, seed=seed) if shuffle else dataset


# --------------------------------------------------------------------------- misc
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
