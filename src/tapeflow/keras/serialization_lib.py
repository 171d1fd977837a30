"""Keras 3's object registration and (de)serialization: `register_keras_serializable`,
the custom-object scope and registry, and `serialize_keras_object` /
`deserialize_keras_object` (functions by registered name, classes by config). It sits low
among the Keras modules (layers, constraints and saving use it); `keras.utils` and
`keras.saving` re-export it.

Example:
    >>> @register_keras_serializable(package="demo")
    ... def double(x):
    ...     return 2 * x
    >>> get_registered_name(double)
    'demo>double'
"""
from __future__ import annotations

import inspect
import sys
import threading
import types

import numpy as np

__all__ = ["register_keras_serializable", "get_custom_objects", "get_registered_name",
           "get_registered_object", "custom_object_scope", "CustomObjectScope",
           "serialize_keras_object", "deserialize_keras_object"]


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
