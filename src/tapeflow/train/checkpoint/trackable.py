"""The trackable protocol: how any object tells checkpoints its named children and state.

An object is *trackable* if it is a `Variable` (a leaf whose value is saved) or if its
class defines the methods below. The protocol is duck-typed, so that classes on any floor
implement it without importing this module (`Module` and the optimizers in train/,
`random.Generator` in ops/; later Keras models and dataset iterators):

`_trackable_children() -> dict[str, object]`
    The object's direct children by name, in a stable order: Variables, other trackables,
    or lists, tuples and dicts of them (expanded into numbered or keyed children, as
    TensorFlow tracks them). A name may contain "/" ("m/0") but neither start nor end
    with it. Objects with no children return `{}`.

`_serialize_to_tensors() -> dict[str, array-like]` (optional)
    The object's own state that is not held in Variables (a random generator's key and
    counter), by name; values are arrays (NumPy arrays, Tensors or numbers). A checkpoint
    stores each under "<object path>/<name>", beside the children's values.

`_restore_from_tensors(values: dict[str, np.ndarray]) -> None` (optional, with the above)
    Set that state from `values`, which has the same names, shapes and dtypes that
    `_serialize_to_tensors()` gives now (the checkpoint checks them first).

Other names. A class may also be given, with `register_alias_children(cls, names)`,
the names another library's object graph uses for its instances' children (Keras 3's
"_functional/_operations/1/_kernel" for what tapeflow calls "_stack/0/kernel"). A
checkpoint records them as further paths to the same values (aliases): TensorFlow
restores the file through them, and a restore finds a value under either name.

Example:
    >>> class Counter:
    ...     def __init__(self):
    ...         self.count, self.scale = 0, tf.Variable(1.0)
    ...     def _trackable_children(self):
    ...         return {"scale": self.scale}
    ...     def _serialize_to_tensors(self):
    ...         return {"count": np.int64(self.count)}
    ...     def _restore_from_tensors(self, values):
    ...         self.count = int(values["count"])
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ..._core import dtypes as _dt
from ..._core.variable import Variable

__all__ = ["Trackable", "is_trackable", "named_children", "object_state", "check_trackable",
           "register_alias_children", "alias_children"]

# class -> function(obj) -> {name: child}: further names of the children (see above)
_ALIAS_NAMERS: dict = {}


class Trackable(Protocol):
    """The protocol above, for type checkers; nothing needs to inherit from it."""

    def _trackable_children(self) -> dict[str, object]:
        ...


def is_trackable(obj) -> bool:
    """Whether checkpoints can walk into `obj` (a Variable or a protocol implementer).

    Example:
        >>> is_trackable(tf.Variable(1.0)), is_trackable(3.0)
        (True, False)
    """
    # type(obj): Variable forwards unknown attributes to its value, so ask the class
    return isinstance(obj, Variable) or hasattr(type(obj), "_trackable_children")


def has_state(obj) -> bool:
    """Whether `obj` saves state of its own besides its children."""
    return hasattr(type(obj), "_serialize_to_tensors")


def named_children(obj, path: str) -> list[tuple[str, object]]:
    """`obj`'s named children; lists, tuples and dicts are expanded into numbered/keyed
    children of their own, as TF tracks them. `path` (the object's, for errors).

    Example:
        >>> named_children([v, w], "model/items")
        [('0', v), ('1', w)]
    """
    if isinstance(obj, (list, tuple)):
        items = [(str(i), c) for i, c in enumerate(obj)]
    elif isinstance(obj, dict):
        items = [(str(k), c) for k, c in obj.items()]
    else:
        children = obj._trackable_children()
        if not isinstance(children, dict):
            raise TypeError(f"Checkpoint: {type(obj).__name__}._trackable_children() at "
                            f"{path or '<root>'!r} must return a dict, got "
                            f"{type(children).__name__}")
        items = list(children.items())
    for name, _ in items:
        _check_name(name, path)
    return items


def register_alias_children(cls: type, names) -> None:
    """Give instances of `cls` (and its subclasses, unless one has its own) further child
    names: `names(obj)` returns {name: child}, children that `_trackable_children()` names
    already, or objects through which they are reached (a view object whose own children
    name them), as another library's object graph names them. Registering a class twice
    replaces its function.

    Example:
        >>> register_alias_children(MyDense, lambda layer: {"_kernel": layer.kernel})
    """
    if not isinstance(cls, type) or not callable(names):
        raise TypeError(f"register_alias_children: expected a class and a function, got "
                        f"{cls!r} and {names!r}")
    _ALIAS_NAMERS[cls] = names


def alias_children(obj, path: str) -> list[tuple[str, object]]:
    """`obj`'s further child names (`register_alias_children`), after its own; empty for
    classes without any. Names the object's own children already use are left out.

    Example:
        >>> alias_children(dense, "model/dense")
        [('_kernel', <tf.Variable 'dense/kernel:0' ...>)]
    """
    if isinstance(obj, (list, tuple, dict)):
        return []
    for cls in type(obj).__mro__:
        names = _ALIAS_NAMERS.get(cls)
        if names is not None:
            break
    else:
        return []
    children = names(obj)
    if not isinstance(children, dict):
        raise TypeError(f"Checkpoint: the alias names of {type(obj).__name__} at "
                        f"{path or '<root>'!r} must be a dict, got {type(children).__name__}")
    for name in children:
        _check_name(name, path)
    return list(children.items())


def object_state(obj, path: str) -> dict[str, np.ndarray]:
    """`obj`'s own state as {name: NumPy array} (empty for objects without any), checked
    to hold plain numbers of dtypes that checkpoints store.

    Example:
        >>> object_state(tf.random.Generator.from_seed(1), "rng")["state"].dtype
        dtype('uint64')
    """
    if not has_state(obj):
        return {}
    state = obj._serialize_to_tensors()
    if not isinstance(state, dict):
        raise TypeError(f"Checkpoint: {type(obj).__name__}._serialize_to_tensors() at "
                        f"{path or '<root>'!r} must return a dict, got "
                        f"{type(state).__name__}")
    arrays = {}
    for name, value in state.items():
        _check_name(name, path)
        array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        if array.dtype.hasobject:
            raise TypeError(f"Checkpoint: state {name!r} of {path or '<root>'!r} holds Python "
                            "objects; only numbers can be saved")
        _dt.as_dtype(array.dtype)  # raises for dtypes tapeflow does not know
        arrays[name] = array
    return arrays


def check_trackable(name: str, obj) -> None:
    """Raise ValueError unless `obj` (given to a Checkpoint as `name`) is trackable or a
    list, tuple or dict of trackables.

    Example:
        >>> check_trackable("model", tf.Module())   # fine; check_trackable("x", 1) raises
    """
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            check_trackable(f"{name}[{i}]", item)
    elif isinstance(obj, dict):
        for key, item in obj.items():
            check_trackable(f"{name}[{key!r}]", item)
    elif not is_trackable(obj):
        raise ValueError(f"Checkpoint was expecting a trackable object (a Variable or an "
                         f"object with _trackable_children()) for {name!r}, got "
                         f"{type(obj).__name__}")


def _check_name(name, path: str) -> None:
    if not isinstance(name, str) or not name or name.startswith("/") or name.endswith("/"):
        raise ValueError(f"Checkpoint: child name {name!r} under {path or '<root>'!r} "
                         "must be a non-empty string not starting or ending with '/'")
