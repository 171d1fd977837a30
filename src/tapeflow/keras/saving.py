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

Files are only read as JSON and arrays: nothing in them is executed; a class is found by
name among tapeflow's Keras classes, the registered ones (`register_keras_serializable`,
`custom_object_scope`) or the `custom_objects` given, never imported.

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
import warnings
import zipfile

import numpy as np

from .._core.variable import Variable
from . import losses as _losses, metrics as _metrics, optimizers as _optimizers, \
    utils as _utils
from .layer import InputLayer, KerasTensor, Layer, snake_case

__all__ = ["save_model", "load_model", "save_weights_h5", "load_weights_h5",
           "register_classes", "serialize_layer", "deserialize_layer"]

KERAS_VERSION = "3.15.1"  # the Keras whose files these are (written in metadata.json)


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
    weights block by block as Keras creates them (Adam's and Nadam's `m` and `v`
    interleaved per weight; every other slot a block of its own, e.g. all of RMSprop's
    velocities before its momentums), then optimizer-wide variables (Nadam's
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
    names = tuple(optimizer._slot_names())
    paired = names[:2] == ("m", "v")
    blocks = ([names[:2]] if paired else []) + [(n,) for n in names[2 if paired else 0:]]
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
    "renorm": False, "renorm_momentum": 0.99, "weight_decay": None, "clipnorm": None, "global_clipnorm": None,
    "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
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
    if "class_name" in value and "config" in value:
        config = {k: _plain(v) for k, v in (value["config"] or {}).items() if v is not None}
        return {"class_name": value["class_name"], "config": config}
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


_NESTED_MODULES = {"initializer": "keras.initializers", "regularizer": "keras.regularizers"}


def _keras_config(config: dict) -> dict:
    """A tapeflow layer config in Keras's spelling: nested objects with their modules."""
    out = {}
    for key, value in config.items():
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, dict) and "class_name" in value and key == "layer":
            # a wrapped layer (Bidirectional's), spelled as a layer entry, so Keras loads it
            value = _keras_object("keras.layers", value["class_name"],
                                  _keras_config(value.get("config", {})))
        elif isinstance(value, dict) and "class_name" in value:
            module = next((m for suffix, m in _NESTED_MODULES.items()
                           if key.endswith(suffix)), "keras")
            value = _keras_object(module, value["class_name"], value.get("config", {}))
        out[key] = value
    return out


# --------------------------------------------------------------------------- layers
def _is_model(layer) -> bool:
    return hasattr(layer, "_stack") or hasattr(layer, "_nodes")


def serialize_layer(layer: Layer) -> dict:
    """A layer (or a nested Sequential/functional model) as Keras writes it in config.json."""
    if hasattr(layer, "_nodes"):  # Keras names its Functional class by its module path
        return {**_keras_object("keras.src.models.functional", "Functional",
                                layer.get_config()), "registered_name": "Functional"}
    if _is_model(layer):
        return _keras_object("keras", type(layer).__name__, layer.get_config())
    cls = type(layer)
    entry = _keras_object("keras.layers", cls.__name__, _keras_config(layer.get_config()))
    if _CLASSES.get(cls.__name__) is not cls:  # a user's class: Keras names it for loading
        entry.update(module=cls.__module__, registered_name=_utils.get_registered_name(cls))
    return entry


def deserialize_layer(item: dict, custom_objects: dict | None = None) -> Layer:
    """The layer a config.json entry describes, found by class name (never imported)."""
    name = item.get("class_name")
    cls = _class(name, custom_objects, item.get("registered_name"))
    config = item.get("config", {})
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


def tensor_config(kt: KerasTensor, node_index: int) -> dict:
    """A functional graph's edge as Keras writes it: the layer, node and output index."""
    return {"class_name": "__keras_tensor__",
            "config": {"shape": list(kt.shape), "dtype": kt.dtype.name,
                       "keras_history": [kt.node.layer.name, node_index, kt.index]}}


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
def save_model(model, filepath: str, overwrite: bool = True) -> None:
    """Write `model` (Sequential or functional) as a Keras 3 `.keras` file, which real
    Keras's `load_model` reads."""
    path = str(filepath)
    if not path.endswith(".keras"):
        raise ValueError(f"The filename must end in `.keras`. Received: filepath={path}")
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
    """The model of a `.keras` file (Keras's or tapeflow's), with its weights and, when
    `compile`, compiled as it was saved with its optimizer's state restored. Classes are
    found by name among tapeflow's Keras classes and `custom_objects`; nothing in the file
    is executed (`safe_mode` is always on: a config holding code, such as a Lambda layer,
    is refused).

    Example:
        >>> model = tf.keras.models.load_model("m.keras")
    """
    path = str(filepath)
    if not path.endswith(".keras"):
        raise ValueError(f"load_model: only Keras 3's .keras files are supported, got {path}"
                         " (a .weights.h5 file goes to model.load_weights)")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_model: {path} is not a .keras file (a zip archive)")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        for needed in ("config.json", "model.weights.h5"):
            if needed not in names:
                raise ValueError(f"load_model: {path} holds no {needed} (it has {names})")
        config = json.loads(zf.read("config.json"))
        weights = io.BytesIO(zf.read("model.weights.h5"))
    model = deserialize_layer(config, custom_objects)
    if compile and config.get("compile_config"):
        _compile(model, config["compile_config"], custom_objects)
        # built now, as Keras's compile_from_config does, so the file's state fits it
        model.optimizer.build(model.trainable_weights)
    load_weights_h5(model, weights)
    return model


def rebuild_functional(config: dict, custom_objects: dict | None):
    """(inputs, outputs, layers by name) of a functional model's config: each layer made
    once, then called node by node as its inbound nodes say, once their inputs exist."""
    layers, pending = {}, []
    for item in config["layers"]:
        layer = deserialize_layer(item, custom_objects)
        name = item.get("name", layer.name)
        layers[name] = layer
        for node in item.get("inbound_nodes", []):
            pending.append((name, node))
    tensors: dict = {}
    for name, layer in layers.items():
        if isinstance(layer, InputLayer):
            tensors[(name, 0, 0)] = layer.output
    made: dict = {}

    def resolve(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            key = tuple(value["config"]["keras_history"])
            if key not in tensors:
                raise KeyError(key)
            return tensors[key]
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value
    while pending:
        waiting = []
        for name, node in pending:
            if any(n == name for n, _ in waiting):  # a layer's nodes keep their order
                waiting.append((name, node))
                continue
            try:
                args = resolve(node.get("args", []))
                kwargs = resolve(node.get("kwargs", {}))
            except KeyError:
                waiting.append((name, node))
                continue
            outputs = layers[name](*args, **kwargs)
            index = made.get(name, 0)
            made[name] = index + 1
            flat = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            for i, kt in enumerate(flat):
                tensors[(name, index, i)] = kt
        if len(waiting) == len(pending):
            raise ValueError(f"load_model: the graph of model {config.get('name')!r} cannot "
                             f"be rebuilt: layers {[n for n, _ in waiting]} wait for inputs "
                             "no layer makes")
        pending = waiting

    def endpoints(spec):
        if isinstance(spec, dict):
            return {k: endpoints(v) for k, v in spec.items()}
        if spec and isinstance(spec[0], str):
            return tensors[tuple(spec)]
        return [endpoints(s) for s in spec]
    return endpoints(config["input_layers"]), endpoints(config["output_layers"]), layers


def model_tensor_config(kt: KerasTensor, nodes: list) -> dict:
    """`tensor_config` with the node counted among the model's own calls of its layer."""
    own = [n for n in kt.node.layer._inbound_nodes if any(n is m for m in nodes)]
    index = next((i for i, n in enumerate(own) if n is kt.node), 0)
    return tensor_config(kt, index)


def functional_layer_entries(model) -> list:
    """A functional model's `layers` list as Keras writes it: each layer's config with
    its name and the inbound nodes (within this model) that call it."""
    entries = []
    for layer in model.layers:
        entry = serialize_layer(layer)
        entry["name"] = layer.name
        nodes = []
        for node in layer._inbound_nodes:
            if not any(node is n for n in model._nodes) or isinstance(layer, InputLayer):
                continue
            args = [_map_tensors(node.inputs, model._nodes), *node.args]
            kwargs = {k: _map_tensors(v, model._nodes) for k, v in node.kwargs.items()}
            nodes.append({"args": args, "kwargs": kwargs})
        entry["inbound_nodes"] = nodes
        entries.append(entry)
    return entries


def _map_tensors(value, nodes: list):
    if isinstance(value, KerasTensor):
        return model_tensor_config(value, nodes)
    if isinstance(value, (list, tuple)):
        return [_map_tensors(v, nodes) for v in value]
    if isinstance(value, dict):
        return {k: _map_tensors(v, nodes) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError(f"save: a layer call's argument {value!r} cannot be written to a "
                     ".keras file")


def endpoint_config(kts, nodes: list):
    """Keras's `input_layers`/`output_layers`: [name, node, index] per tensor, a single one
    unwrapped."""
    if isinstance(kts, KerasTensor):
        return model_tensor_config(kts, nodes)["config"]["keras_history"]
    if isinstance(kts, dict):
        return {k: endpoint_config(v, nodes) for k, v in kts.items()}
    return [endpoint_config(kt, nodes) for kt in kts]


def input_layer_entry(kt: KerasTensor) -> dict:
    """A Sequential's Input as the InputLayer entry Keras puts first in its layers."""
    return _keras_object("keras.layers", "InputLayer", _keras_config(
        kt.node.layer.get_config()))

