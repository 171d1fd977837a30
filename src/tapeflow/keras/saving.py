"""`tf.keras.saving`: Keras 3's files. A whole model is a `.keras` file (`save_model`,
`load_model`): a zip of `metadata.json`, `config.json` (the model's class and its layers'
configs; a functional model's graph as each layer's inbound nodes; the compile arguments)
and `model.weights.h5`, the weights file below.

The weights file (`*.weights.h5`, through the optional `h5py`): one HDF5 group per
layer, `layers/<key>/vars/<i>` holding the layer's weights in creation order (a layer made
of layers, as LSTM or MultiHeadAttention, adds a group per sublayer named by its attribute:
`layers/lstm/cell/vars/0`), where the key is the layer's class in snake_case counted per
class in the model's layer order ("dense", "dense_1", "batch_normalization"; not the
layer's own name); a nested model's layers sit
under its own `layers/` group. A compiled model's file also holds its optimizer's state
under `optimizer/vars/<i>` in Keras 3's order (see `optimizer_state`), so training goes on
from a loaded model as if it had not stopped; the state is read only when the model's
optimizer has as many variables as the file (otherwise skipped with a warning, as Keras).

Keras's legacy HDF5 model format (`model.save("m.h5")`, `load_model("m.h5")`) is read
and written too (see `_save_legacy_h5`).

Files are only read as JSON and arrays: nothing in them is executed; a class or function
is found by name among tapeflow's Keras classes, the registered ones
(`register_keras_serializable`, `custom_object_scope`) or the `custom_objects` given,
never imported. The one exception is asked for explicitly: `load_model(...,
safe_mode=False)` rebuilds a Lambda layer's Python lambda from its stored bytecode, as
Keras 3 does; by default (`safe_mode=True`) such a file is refused.

Example:
    >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    >>> model.save("m.keras")
    >>> tf.keras.models.load_model("m.keras").count_params()
    8
"""
from __future__ import annotations

import datetime
import inspect
import io
import json
import threading
import warnings
import zipfile

import numpy as np

from .._core.variable import Variable
from . import losses as _losses, metrics as _metrics, optimizers as _optimizers, \
    serialization_lib as _utils
from .layer import InputLayer, KerasTensor, Layer, snake_case
from .ops.operation import OPERATIONS, Operation
# Keras 3's `keras.saving` namespace: the registry and (de)serialization
from .serialization_lib import CustomObjectScope, custom_object_scope, deserialize_keras_object, \
    get_custom_objects, get_registered_name, get_registered_object, \
    register_keras_serializable, serialize_keras_object

__all__ = ["save_model", "load_model", "save_weights_h5", "load_weights_h5",
           "register_classes", "serialize_layer", "deserialize_layer",
           "register_keras_serializable", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "serialize_keras_object", "deserialize_keras_object",
           "get_registered_name", "get_registered_object", "SafeModeScope", "in_safe_mode"]

KERAS_VERSION = "3.15.1"  # the Keras whose files these are (written in metadata.json)


def _h5py():
    try:
        import h5py  # optional: only the .weights.h5 and legacy .h5 formats need it
    except ImportError:
        raise ImportError("Keras's .weights.h5 and .h5 files need h5py: pip install "
                          "'tapeflow[keras]' (or pip install h5py)") from None
    return h5py


# --------------------------------------------------------------------------- safe mode
_safe = threading.local()


class SafeModeScope:
    """Whether loading may run code stored in a file (a Lambda layer's Python lambda,
    kept as marshalled bytecode), within a `with` block, per thread as Keras's.
    `load_model(..., safe_mode=...)` enters one; outside any scope loading is safe
    (such code is refused).

    Example:
        >>> with tf.keras.saving.SafeModeScope(False):
        ...     layer = tf.keras.layers.Lambda.from_config(config)
    """

    def __init__(self, safe_mode: bool | None = True):
        self.safe_mode = safe_mode
        self.backup = None

    def __enter__(self) -> "SafeModeScope":
        self.backup = getattr(_safe, "mode", None)
        _safe.mode = self.safe_mode
        return self

    def __exit__(self, *args) -> None:
        _safe.mode = self.backup


def in_safe_mode() -> bool | None:
    """The safe mode of the innermost `SafeModeScope`, None outside any (read as safe)."""
    return getattr(_safe, "mode", None)


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
    """(path, sublayer) for a layer made of other layers (an LSTM's "cell", a
    Bidirectional's "forward_layer", a MultiHeadAttention's "query_dense"): Keras files
    hold each under a group named by the attribute, in assignment order; the layers of a
    list or dict attribute (StackedRNNCells' `cells`) sit under the attribute's group,
    each named by its class in snake_case counted within the list ("cells/gru_cell",
    "cells/gru_cell_1"), as Keras's containers."""
    found = []
    for key, value in vars(layer).items():
        if key.startswith("_") or value is layer:
            continue
        if isinstance(value, Layer):
            found.append((key, value))
            continue
        if isinstance(value, dict):
            value = list(value.values())
        if not isinstance(value, (list, tuple)):
            continue
        counts: dict = {}
        for item in value:
            if not isinstance(item, Layer):
                continue
            base = snake_case(type(item).__name__)
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.append((f"{key}/{base if n == 0 else f'{base}_{n}'}", item))
    named = [sub for _, sub in found]
    if any(sub.weights and not any(sub is n for n in named) for sub in layer._sublayers()):
        raise NotImplementedError(f"Layer {layer.name!r}: sublayers held outside its "
                                  "attributes are not supported in .weights.h5 files")
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
    out += _checked_pairs(stored, own, where, "")
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


def optimizer_built(model) -> bool:
    """Whether the model's optimizer has made the slots of all its trainable weights (its
    first step does; Keras's `optimizer.built`)."""
    optimizer, weights = getattr(model, "optimizer", None), model.trainable_weights
    return optimizer is not None and bool(weights) and all(
        w.ref() in optimizer._index for w in weights)


def optimizer_state(model) -> list:
    """The variables Keras 3 writes under `optimizer/vars`, in its order: `iteration`, the
    learning rate (unless a schedule gives it), then the slots of the model's trainable
    weights block by block as Keras creates them (the optimizer's `_slot_blocks`: Adam's
    `m` and `v`, Ftrl's or Adafactor's slots interleaved per weight; RMSprop's velocities
    all before its momentums), then optimizer-wide variables (Nadam's
    `u_product`). An optimizer not built for the model yet holds the first two only."""
    optimizer = model.optimizer
    # (the call counter: with gradient_accumulation_steps, `iterations` is a Tensor of
    # the updates made, and Keras 3 writes the counter)
    state = [getattr(optimizer, "_iterations", optimizer.iterations)]
    if isinstance(optimizer._learning_rate, Variable):
        state.append(optimizer._learning_rate)
    if not optimizer_built(model):
        return state
    weights = model.trainable_weights
    # Keras 3's base build makes the EMA averages, then the gradient accumulators, one
    # block each over the weights, before the subclass's slots
    index = getattr(optimizer, "_index", {})
    for block in (getattr(optimizer, "_model_variables_moving_average", []),
                  getattr(optimizer, "_accumulated_gradients", [])):
        if block:
            state += [block[index[w.ref()]] for w in weights]
    blocks = optimizer._slot_blocks()
    state += [optimizer._slot(w, name) for block in blocks for w in weights for name in block]
    known = {id(v) for v in state} | {id(v) for slots in optimizer._slots
                                      for v in slots.values()}
    return state + [v for v in optimizer.variables if id(v) not in known]


def _write_optimizer(f, model) -> None:
    values = f.create_group("optimizer").create_group("vars")
    values.attrs["name"] = model.optimizer.name
    for i, v in enumerate(optimizer_state(model)):
        values.create_dataset(str(i), data=v.numpy())


def _collect_optimizer(f, model, out: list) -> None:
    """(variable, array) pairs of the optimizer's state; skipped with Keras's warning when
    the counts differ (an optimizer not built yet, a file saved before training)."""
    stored = f["optimizer/vars"] if "optimizer" in f and "vars" in f["optimizer"] else {}
    state = optimizer_state(model)
    if len(stored) != len(state):
        warnings.warn(
            f"Skipping variable loading for optimizer {model.optimizer.name!r}, because it "
            f"has {len(state)} variables whereas the saved optimizer has {len(stored)} "
            "variables." + (" This is likely because the optimizer has not been built yet "
                            "(it is built by its first step)." if len(state) <= 2 else ""),
            UserWarning, stacklevel=4)
        return
    out += _checked_pairs(stored, state, "optimizer", "the optimizer's ")


def _checked_pairs(stored, variables: list, where: str, whose: str) -> list:
    """(variable, its array in the file) for `stored`'s vars 0, 1, ... in order, every
    shape checked before anything is assigned."""
    pairs = []
    for i, v in enumerate(variables):
        array = np.asarray(stored[str(i)])
        if array.shape != tuple(v.shape):
            raise ValueError(f"{where}/vars/{i}: shape {array.shape} in the file, "
                             f"{tuple(v.shape)} for {whose}{v.name}")
        pairs.append((v, array))
    return pairs


def save_weights_h5(model, filepath) -> None:
    """Write `model`'s weights as Keras 3 does (`model.save_weights("m.weights.h5")`) to
    a path or a binary file object; a compiled model's optimizer state goes with them."""
    h5py = _h5py()
    with h5py.File(filepath, "w") as f:
        _write(f, model)
        if getattr(model, "optimizer", None) is not None:
            _write_optimizer(f, model)


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


def load_weights_h5(model, filepath) -> None:
    """Read a Keras 3 weights file into `model` (built, of the same architecture), and the
    optimizer's state into a compiled model's optimizer when it has the file's count of
    variables; every count and shape is checked before any weight changes."""
    h5py = _h5py()
    pairs: list = []
    with h5py.File(filepath, "r") as f:
        _collect(f, model, "", pairs)
        if getattr(model, "optimizer", None) is not None:
            _collect_optimizer(f, model, pairs)
    for v, array in pairs:
        v.assign(array.astype(v.dtype.as_numpy_dtype))


# --------------------------------------------------------------------------- classes by name
_CLASSES: dict = {}


def register_classes(classes: dict) -> None:
    """The classes a config may name (keras/__init__ registers the built-in layers and
    models); anything else must come through `custom_objects`."""
    _CLASSES.update(classes)


def _custom(name: str, custom_objects: dict | None, registered: str | None = None):
    """A user's class or function for a config entry, looked up as Keras 3 does: by its
    registered name ("package>Name", defaulting to the class name) in the active
    `custom_object_scope`, the global registry (`register_keras_serializable`,
    `get_custom_objects`) and `custom_objects`, then by the plain class name. None when
    nothing matches."""
    found = _utils.get_registered_object(registered or name, custom_objects)
    if found is None and registered and registered != name:
        found = _utils.get_registered_object(name, custom_objects)
    return found


def _class(name: str, custom_objects: dict | None, registered: str | None = None) -> type:
    cls = _custom(name, custom_objects, registered) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Unknown layer class {name!r} in the model's config: register it "
                         "with @keras.saving.register_keras_serializable() or pass it in "
                         "custom_objects={" + repr(name) + ": TheClass}")
    return cls


# Keras options tapeflow's layers lack: dropped when they hold Keras's default (which is
# what tapeflow does), refused otherwise.
_KERAS_DEFAULTS = {
    "sparse": False, "ragged": False, "optional": False, "quantization_config": None,
    "kernel_constraint": None, "bias_constraint": None, "activity_regularizer": None,
    "lora_rank": None, "lora_alpha": None, "data_format": "channels_last", "groups": 1,
    "synchronized": False, "beta_initializer": {"class_name": "Zeros", "config": {}},
    "gamma_initializer": {"class_name": "Ones", "config": {}},
    "moving_mean_initializer": {"class_name": "Zeros", "config": {}},
    "moving_variance_initializer": {"class_name": "Ones", "config": {}},
    "beta_regularizer": None, "gamma_regularizer": None, "beta_constraint": None,
    "gamma_constraint": None, "embeddings_constraint": None, "rms_scaling": False,
    "renorm": False, "renorm_momentum": 0.99, "weight_decay": None, "clipnorm": None,
    "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
    "ema_overwrite_frequency": None, "loss_scale_factor": None,
    "gradient_accumulation_steps": None, "warmup_steps": 0,
}


def _plain(value):
    """A config value without Keras's bookkeeping: serialized objects lose their module
    and registration keys (and their None entries), dtype policies become dtype names."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        return value.get("config", {}).get("name", "float32")
    if "class_name" in value and "config" in value and not isinstance(value["config"],
                                                                      (dict, type(None))):
        return dict(value)  # a function by name: {"class_name": "function", "config": name}
    if "class_name" in value and "config" in value:
        config = {k: _plain(v) for k, v in (value["config"] or {}).items() if v is not None}
        out = {"class_name": value["class_name"], "config": config}
        registered = value.get("registered_name")
        if isinstance(registered, str) and registered != value["class_name"]:
            out["registered_name"] = registered  # a registered class is found by it
        return out
    return {k: _plain(v) for k, v in value.items()}


def _parameters(cls: type) -> set:
    """The keyword arguments `cls(...)` accepts, following `**kwargs` up the classes (and
    for recurrent layers, which pass their `**kwargs` on to their cell, into the cell's)."""
    names: set = set() if getattr(cls, "_CELL", None) is None else _parameters(cls._CELL)
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names - {"self"}
    if issubclass(cls, Layer):  # Layer's **kwargs: what a first Sequential layer takes
        names |= {"input_shape", "input_dim", "batch_size"}
    return names - {"self"}


def _arguments(cls: type, config: dict, what: str) -> dict:
    """`config` (plain) as `cls`'s keyword arguments; Keras-only options must hold their
    default."""
    accepted = _parameters(cls)
    if isinstance(cls, type) and issubclass(cls, Layer):
        accepted.add("batch_input_shape")  # Layer.from_config turns it into arguments
    out = {}
    for key, value in config.items():
        if key in accepted:
            out[key] = value
        elif key in _KERAS_DEFAULTS and value == _KERAS_DEFAULTS[key] or value is None:
            continue
        else:
            raise ValueError(f"{what}: option {key}={value!r} is not supported by tapeflow's "
                             f"{cls.__name__}")
    return out


def _keras_object(module: str, class_name: str, config: dict) -> dict:
    return {"module": module, "class_name": class_name, "config": config,
            "registered_name": None}


_NESTED_MODULES = {"initializer": "keras.initializers", "regularizer": "keras.regularizers",
                   "constraint": "keras.constraints"}
# config keys holding layers (wrapped layers, cells): written as full layer entries
_LAYER_KEYS = ("layer", "cell", "cells", "forward_layer", "backward_layer")


def _keras_config(config: dict, owner=None) -> dict:
    """A tapeflow layer config in Keras's spelling: nested objects with their modules,
    nested layers (a wrapper's `layer`, an RNN's `cell`, StackedRNNCells' `cells`) as
    full layer entries, recursively, named from `owner`'s sublayers where they match (so
    a user's cell keeps its module and registered name)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, tuple):
            value = list(value)
        if key in _LAYER_KEYS and _is_entry(value):
            value = _layer_entry(value, _owned(owner, key, value["class_name"]))
        elif key in _LAYER_KEYS and isinstance(value, list) and value and \
                all(_is_entry(v) for v in value):
            subs = getattr(owner, key, None)
            subs = list(subs) if isinstance(subs, (list, tuple)) else []
            value = [_layer_entry(v, subs[i] if i < len(subs) and
                                  type(subs[i]).__name__ == v["class_name"] else None)
                     for i, v in enumerate(value)]
        elif isinstance(value, dict) and "class_name" in value and "module" not in value:
            # (an entry with its module is in Keras's spelling already: a user's
            # function keeps module "builtins" and registered name "function")
            module = next((m for suffix, m in _NESTED_MODULES.items()
                           if key.endswith(suffix)), "keras")
            value = _keras_object(module, value["class_name"], value.get("config", {}))
        out[key] = value
    return out


def _is_entry(value) -> bool:
    return isinstance(value, dict) and "class_name" in value and "config" in value


def _owned(owner, key: str, class_name: str):
    """The sublayer of `owner` a config's `key` describes (Bidirectional's `layer` is its
    forward layer), or None."""
    for attr in (("forward_layer", key) if key == "layer" else (key,)):
        sub = getattr(owner, attr, None)
        if isinstance(sub, Layer) and type(sub).__name__ == class_name:
            return sub
    return None


def _layer_entry(value: dict, layer=None) -> dict:
    """A nested `{"class_name", "config"}` layer as Keras's full entry (a layer entry
    already, as a user's get_config may return, is normalized the same way)."""
    name = value["class_name"]
    cls = type(layer) if layer is not None else _CLASSES.get(name)
    entry = _keras_object("keras.layers", name, _keras_config(value.get("config") or {},
                                                               layer))
    if cls is not None and _CLASSES.get(name) is not cls:
        entry.update(module=cls.__module__, registered_name=_utils.get_registered_name(cls))
    elif cls is None and value.get("registered_name"):  # a class unknown here: kept as given
        entry.update(module=value.get("module", "keras.layers"),
                     registered_name=value["registered_name"])
    return entry


# --------------------------------------------------------------------------- layers
def _is_model(layer) -> bool:
    return hasattr(layer, "_stack") or hasattr(layer, "_nodes")


def serialize_layer(layer: Layer) -> dict:
    """A layer (or a nested Sequential/functional model) as Keras writes it in config.json."""
    if isinstance(layer, Operation):  # keras.ops on KerasTensors: by Keras's op module
        name = type(layer).__name__
        return {**_keras_object(layer._keras_module, name, layer.get_config()),
                "registered_name": name}
    if hasattr(layer, "_nodes"):  # Keras names its Functional class by its module path
        return {**_keras_object("keras.src.models.functional", "Functional",
                                layer.get_config()), "registered_name": "Functional"}
    if _is_model(layer):
        return _keras_object("keras", type(layer).__name__, layer.get_config())
    return _layer_entry({"class_name": type(layer).__name__, "config": layer.get_config()},
                        layer)


def deserialize_layer(item: dict, custom_objects: dict | None = None) -> Layer:
    """The layer a config.json entry describes, found by class name (never imported).
    `custom_objects` reach the layers nested in its config too (an RNN's cells, a
    wrapper's layer): they are in force as a `custom_object_scope` meanwhile."""
    if custom_objects:
        with _utils.CustomObjectScope({**_utils._scope_objects(), **custom_objects}):
            return _deserialize_layer(item, custom_objects)
    return _deserialize_layer(item, None)


def _deserialize_layer(item: dict, custom_objects: dict | None) -> Layer:
    name = item.get("class_name")
    if str(item.get("module", "")).startswith("keras.src.ops.") and name in OPERATIONS:
        return OPERATIONS[name].from_config(item.get("config", {}))
    cls = _class(name, custom_objects, item.get("registered_name"))
    config = item.get("config", {})
    if isinstance(cls, type) and issubclass(cls, Layer) and \
            "safe_mode" in inspect.signature(cls.from_config).parameters:
        # a layer that may hold code (Lambda): it reads the SafeModeScope in force
        return cls.from_config(_plain(config), custom_objects=custom_objects)
    if _is_model_class(cls):
        return cls.from_config(config, custom_objects=custom_objects)
    if not isinstance(cls, type) or not issubclass(cls, Layer):
        raise ValueError(f"{name!r} in custom_objects is not a Layer class: {cls!r}")
    if cls.from_config.__func__ is not Layer.from_config.__func__:
        return cls.from_config(_plain(config))  # a custom layer rebuilds itself
    arguments = _arguments(cls, _plain(config), f"layer {config.get('name', name)!r}")
    if cls is InputLayer:
        return cls(**arguments)
    return cls.from_config(arguments)


def _is_model_class(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, Layer) and \
        "custom_objects" in inspect.signature(cls.from_config).parameters


# --------------------------------------------------------------------------- compile
def _compile_config(model) -> dict:
    """What `compile` was given, as Keras writes it (names stay names)."""
    given = getattr(model, "_compile_arguments", None)
    if not given:
        return {}
    optimizer = model.optimizer
    params = _parameters(type(optimizer)) - {"name"}
    config = {"name": getattr(optimizer, "name", snake_case(type(optimizer).__name__))}
    for key in sorted(params):
        value = getattr(optimizer, key, None)
        schedule = _schedule_config(optimizer) if key == "learning_rate" else None
        if schedule is not None:
            config[key] = schedule
            continue
        if hasattr(value, "numpy"):
            value = value.numpy().item()
        if isinstance(value, (bool, int, float, str)) or value is None:
            config[key] = value
    out = {"optimizer": _keras_object("keras.optimizers", type(optimizer).__name__, config)}
    for key in ("loss", "metrics", "loss_weights", "weighted_metrics"):
        out[key] = _serializable(given.get(key), key)
    out.update({"run_eagerly": bool(given.get("run_eagerly")),
                "steps_per_execution": 1, "jit_compile": False})
    return out


def _schedule_config(optimizer) -> dict | None:
    """A learning-rate schedule as Keras writes it in the optimizer's config (a plain
    callable, or a schedule without `get_config`, is written as its current value)."""
    schedule = optimizer._learning_rate
    if not isinstance(schedule, _optimizers.schedules.LearningRateSchedule):
        return None
    try:
        config = schedule.get_config()
    except NotImplementedError:
        return None
    config = {k: v for k, v in config.items() if v is not None}  # Keras: name=None fails
    return _keras_object("keras.optimizers.schedules", type(schedule).__name__, config)


def _schedule(value, custom_objects: dict | None):
    """The schedule a compile config's `learning_rate` entry names (or the number)."""
    if not isinstance(value, dict):
        return value
    name = value.get("class_name", "")
    cls = _custom(name, custom_objects, value.get("registered_name")) or \
        getattr(_optimizers.schedules, name, None)
    if not isinstance(cls, type):
        raise ValueError(f"load_model: unknown learning-rate schedule {name!r} in the "
                         "compile config; pass it in custom_objects")
    return cls(**_arguments(cls, value.get("config", {}), f"schedule {name!r}"))


def _serializable(value, what: str):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_serializable(v, what) for v in value]
    if isinstance(value, dict):
        return {k: _serializable(v, what) for k, v in value.items()}
    cls = type(value)
    get_config = getattr(value, "get_config", None)
    if get_config is not None and isinstance(value, (_losses.Loss, _metrics.Metric)):
        try:
            config = get_config()
        except NotImplementedError:
            config = {}
        module = "keras.losses" if isinstance(value, _losses.Loss) else "keras.metrics"
        return _keras_object(module, cls.__name__, _keras_config(config))
    raise ValueError(f"save: compile's {what} {value!r} cannot be written to a .keras file "
                     "(use names such as 'mse' or Keras's loss and metric classes)")


def _from_compile_config(value, module, custom_objects: dict | None, what: str):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list):
        return [_from_compile_config(v, module, custom_objects, what) for v in value]
    if isinstance(value, dict) and "class_name" in value:
        name = value["class_name"]
        cls = _custom(name, custom_objects, value.get("registered_name")) or \
            getattr(module, name, None)
        if not isinstance(cls, type):
            raise ValueError(f"load_model: unknown {what} {name!r} in the compile config; "
                             "pass it in custom_objects")
        config = _plain(value).get("config", {})
        return cls(**_arguments(cls, config, f"{what} {name!r}"))
    if isinstance(value, dict):
        return {k: _from_compile_config(v, module, custom_objects, what)
                for k, v in value.items()}
    raise ValueError(f"load_model: cannot read the {what} {value!r} of the compile config")


def _compile(model, config: dict, custom_objects: dict | None) -> None:
    optimizer = config.get("optimizer", "rmsprop")
    if isinstance(optimizer, dict):
        name = optimizer.get("class_name", "")
        cls = _custom(name, custom_objects, optimizer.get("registered_name")) or \
            _optimizers._BY_NAME.get(name.lower())
        if cls is None:
            raise ValueError(f"load_model: unknown optimizer {name!r} in the compile config; "
                             "pass it in custom_objects")
        arguments = _arguments(cls, _plain(optimizer).get("config", {}),
                               f"optimizer {name!r}")
        if "learning_rate" in arguments:
            arguments["learning_rate"] = _schedule(arguments["learning_rate"], custom_objects)
        optimizer = cls(**arguments)
    model.compile(optimizer=optimizer,
                  loss=_from_compile_config(config.get("loss"), _losses, custom_objects,
                                            "loss"),
                  loss_weights=config.get("loss_weights"),
                  metrics=_from_compile_config(config.get("metrics"), _metrics,
                                               custom_objects, "metric"),
                  weighted_metrics=_from_compile_config(config.get("weighted_metrics"),
                                                        _metrics, custom_objects, "metric"),
                  run_eagerly=bool(config.get("run_eagerly", False)))


# --------------------------------------------------------------------------- .keras files
def save_model(model, filepath: str, overwrite: bool = True, **kwargs) -> None:
    """Write `model` (Sequential or functional) as a Keras 3 `.keras` file, which real
    Keras's `load_model` reads; a path ending in `.h5` or `.hdf5` gets Keras's legacy
    HDF5 format instead (`include_optimizer=True`: the optimizer's state goes with it).

    Example:
        >>> tf.keras.saving.save_model(model, "m.keras")
    """
    path = str(filepath)
    include_optimizer = bool(kwargs.pop("include_optimizer", True))
    if kwargs:
        raise TypeError(f"save_model: unrecognized keyword arguments {sorted(kwargs)}")
    if path.endswith((".h5", ".hdf5")):
        _save_legacy_h5(model, path, overwrite, include_optimizer)
        return
    if not path.endswith(".keras"):
        raise ValueError("The filename must end in `.keras` (Keras's format) or `.h5` (the "
                         f"legacy HDF5 format). Received: filepath={path}")
    if not _is_model(model):
        raise NotImplementedError(
            f"{type(model).__name__}: .keras files are supported for Sequential and "
            "functional models; save a subclassed model's weights with save_weights")
    if not model.built:
        raise ValueError(f"save: model {model.name!r} is not built yet (give it an Input or "
                         "call it on data first)")
    if not overwrite and _exists(path):
        raise FileExistsError(f"save: {path} exists and overwrite=False")
    config = serialize_layer(model)
    shape = model.inputs[0].shape if len(model.inputs) == 1 else None
    config["build_config"] = {"input_shape": list(shape) if shape else None}
    config["compile_config"] = _compile_config(model)
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    weights = io.BytesIO()
    save_weights_h5(model, weights)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps(metadata))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", weights.getvalue())


def _exists(path: str) -> bool:
    try:
        open(path, "rb").close()
        return True
    except OSError:
        return False


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True):
    """The model of a `.keras` file (Keras's or tapeflow's) or of a legacy `.h5` file,
    with its weights and, when `compile`, compiled as it was saved with its optimizer's
    state restored. Classes are found by name among tapeflow's Keras classes, the
    registered ones and `custom_objects` (also for layers nested in others' configs: an
    RNN's cells, a wrapper's layer). With `safe_mode=True` (the default) nothing in the
    file is executed: a Lambda layer holding a Python lambda (bytecode) is refused with a
    ValueError; only `safe_mode=False`, given explicitly for a file you trust, rebuilds
    such a lambda from its bytecode, as Keras 3 does.

    Example:
        >>> model = tf.keras.models.load_model("m.keras")
    """
    path = str(filepath)
    if path.endswith((".h5", ".hdf5")):
        return _load_legacy_h5(path, custom_objects, compile, safe_mode)
    if not path.endswith(".keras"):
        raise ValueError(f"File format not supported: filepath={path}. Keras 3 only "
                         "supports V3 `.keras` files and legacy H5 format files (`.h5` "
                         "extension); a .weights.h5 file goes to model.load_weights")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_model: {path} is not a .keras file (a zip archive)")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        for needed in ("config.json", "model.weights.h5"):
            if needed not in names:
                raise ValueError(f"load_model: {path} holds no {needed} (it has {names})")
        config = json.loads(zf.read("config.json"))
        weights = io.BytesIO(zf.read("model.weights.h5"))
    with SafeModeScope(safe_mode):
        model = deserialize_layer(config, custom_objects)
    if compile and config.get("compile_config"):
        _compile(model, config["compile_config"], custom_objects)
        # built now, as Keras's compile_from_config does, so the file's state fits it
        model.optimizer.build(model.trainable_weights)
    load_weights_h5(model, weights)
    return model


def input_layer_entry(kt: KerasTensor) -> dict:
    """A Sequential's Input as the InputLayer entry Keras puts first in its layers."""
    return _keras_object("keras.layers", "InputLayer", _keras_config(
        kt.node.layer.get_config()))


# --------------------------------------------------------------------------- legacy .h5
# Keras's legacy HDF5 model files: the model's config (JSON) in the root's
# "model_config" attribute and the compile arguments in "training_config" (the
# optimizer's config under "optimizer_config"); the weights in "model_weights", one
# group per layer (listed in order by its "layer_names" attribute), each holding its
# trainable then non-trainable weights under the names its "weight_names" lists; the
# optimizer's variables (Keras's order) in "optimizer_weights" likewise.
def _h5_attr_list(group, name: str) -> list:
    """A list attribute, joined from its chunks `name0`, `name1`, ... when Keras split a
    large one; strings decoded."""
    if name in group.attrs:
        data = list(group.attrs[name])
    else:
        data, i = [], 0
        while f"{name}{i}" in group.attrs:
            data += list(group.attrs[f"{name}{i}"])
            i += 1
    return [d.decode("utf8") if hasattr(d, "decode") else str(d) for d in data]


def _h5_json_attr(f, name: str):
    value = f.attrs.get(name)
    if value is None:
        return None
    return json.loads(value.decode("utf8") if hasattr(value, "decode") else value)


def _legacy_weights(layer) -> list:
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _h5_write_weights(group, weights: list, prefix: str) -> None:
    """`weights` under unique names (`<prefix>/<weight name>`) listed in "weight_names"."""
    names: list = []
    for v in weights:
        base = f"{prefix}/{v.name.rsplit(':', 1)[0].rsplit('/', 1)[-1]}"
        name, n = base, 1
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.append(name)
    group.attrs["weight_names"] = np.array([n.encode("utf8") for n in names], dtype=object) \
        if names else np.array([], dtype=np.float64)
    for name, v in zip(names, weights):
        group.create_dataset(name, data=v.numpy())


def _save_legacy_h5(model, path: str, overwrite: bool, include_optimizer: bool) -> None:
    h5py = _h5py()
    if not _is_model(model):
        raise NotImplementedError(
            f"{type(model).__name__}: .h5 model files are supported for Sequential and "
            "functional models; save a subclassed model's weights with save_weights")
    if not model.built:
        raise ValueError(f"save: model {model.name!r} is not built yet (give it an Input or "
                         "call it on data first)")
    if not overwrite and _exists(path):
        raise FileExistsError(f"save: {path} exists and overwrite=False")
    config = {"class_name": serialize_layer(model)["class_name"],
              "config": model.get_config()}
    training = None
    if include_optimizer and getattr(model, "optimizer", None) is not None:
        compiled = _compile_config(model)
        if compiled:
            optimizer = compiled.pop("optimizer")
            training = {**compiled, "optimizer_config": {
                "class_name": optimizer["class_name"], "config": optimizer["config"]}}
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = KERAS_VERSION
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(config).encode("utf8")
        if training is not None:
            f.attrs["training_config"] = json.dumps(training).encode("utf8")
        group = f.create_group("model_weights")
        group.attrs["layer_names"] = np.array([layer.name.encode("utf8")
                                               for layer in model.layers], dtype=object)
        group.attrs["backend"] = b"tensorflow"
        group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
        for layer in sorted(model.layers, key=lambda layer: layer.name):
            _h5_write_weights(group.create_group(layer.name), _legacy_weights(layer),
                              layer.name)
        _h5_write_weights(group.create_group("top_level_model_weights"), [], "")
        if training is not None and optimizer_built(model):
            state = optimizer_state(model)
            opt = f.create_group("optimizer_weights")
            _h5_write_weights(opt, state, model.optimizer.name)


def _h5_read_weights(group) -> list:
    return [np.asarray(group[name]) for name in _h5_attr_list(group, "weight_names")]


def _load_legacy_h5(path: str, custom_objects: dict | None, compile: bool,
                    safe_mode: bool):
    """A model from Keras's legacy HDF5 format (see above); weights are matched to the
    layers with weights in order, every count and shape checked first. Compiled from
    the file's training config, with a fresh optimizer as Keras 3's loader leaves it."""
    h5py = _h5py()
    with h5py.File(path, "r") as f:
        config = _h5_json_attr(f, "model_config")
        if config is None:
            raise ValueError(f"No model config found in the file at {path}.")
        with SafeModeScope(safe_mode):
            model = deserialize_layer(config, custom_objects)
        group = f["model_weights"]
        saved = [name for name in _h5_attr_list(group, "layer_names")
                 if _h5_attr_list(group[name], "weight_names")]
        layers = [layer for layer in model.layers if _legacy_weights(layer)]
        if len(saved) != len(layers):
            raise ValueError("Layer count mismatch when loading weights from file. Model "
                             f"expected {len(layers)} layers, found {len(saved)} saved "
                             "layers.")
        pairs = []
        for k, (name, layer) in enumerate(zip(saved, layers)):
            values, weights = _h5_read_weights(group[name]), _legacy_weights(layer)
            if len(values) != len(weights):
                raise ValueError(f"Weight count mismatch for layer #{k} (named {layer.name} "
                                 f"in the current model, {name} in the save file). Layer "
                                 f"expects {len(weights)} weight(s). Received "
                                 f"{len(values)} saved weight(s)")
            for v, array in zip(weights, values):
                if array.shape != tuple(v.shape):
                    raise ValueError(f"Shape mismatch in layer #{k} (named {layer.name}) "
                                     f"for weight {v.name}. Weight expects shape "
                                     f"{tuple(v.shape)}. Received saved weight with shape "
                                     f"{array.shape}")
                pairs.append((v, array))
        training = _h5_json_attr(f, "training_config") if compile else None
        if training is not None:
            compile_config = dict(training)
            compile_config["optimizer"] = compile_config.pop("optimizer_config", "rmsprop")
            _compile(model, compile_config, custom_objects)
            model.optimizer.build(model.trainable_weights)
            if "optimizer_weights" in f:
                # as Keras 3 (3.15): it builds the optimizer for the model's own top-level
                # variables only, so the saved state never fits and training starts with
                # a fresh optimizer (a .keras file keeps the state)
                warnings.warn("Error in loading the saved optimizer state. As a result, "
                              "your model is starting with a freshly initialized "
                              "optimizer.", UserWarning, stacklevel=3)
    for v, array in pairs:
        v.assign(array.astype(v.dtype.as_numpy_dtype))
    return model


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
