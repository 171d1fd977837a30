"""The object graph: the walk from a checkpoint's root that names every saved value.

A checkpoint names each value by its path from the root: a variable's path
("model/dense/kernel"), or an object's path and the name of a piece of its own state
("rng/state"). A variable reachable by several paths is stored once, under the first, and
the others are recorded as aliases; an object reachable twice, or through a cycle, is
walked once.
"""
from __future__ import annotations

import numpy as np

from ..._core.variable import Variable
from .trackable import is_trackable, named_children, object_state

__all__ = ["ObjectState", "collect", "child_at"]


class ObjectState:
    """One named piece of a trackable's own state, found by the walk: `owner`, `key` and
    `value` (a NumPy array, what `_serialize_to_tensors()` gave when walked)."""

    __slots__ = ("owner", "key", "value")

    def __init__(self, owner, key: str, value: np.ndarray):
        self.owner, self.key, self.value = owner, key, value

    def __repr__(self) -> str:
        return f"<state {self.key!r} of {type(self.owner).__name__}>"


def collect(root) -> tuple[dict[str, Variable | ObjectState], dict[str, str]]:
    """Walk the object graph from `root`: ({path: variable or object state} in walk order,
    each variable under the first path reaching it, and {other path: that first path}).

    Example:
        >>> v = tf.Variable(1.0)
        >>> collect(tf.train.Checkpoint(a=v, b=[v]))
        ({'a': <tf.Variable 'Variable:0' ...>}, {'b/0': 'a'})
    """
    values: dict[str, Variable | ObjectState] = {}
    first_path: dict[int, str] = {}
    aliases: dict[str, str] = {}
    # objects already walked (shared objects, cycles), held so that no id is reused by a
    # temporary container some _trackable_children() builds
    seen: dict[int, object] = {id(root): root}

    def add_state(obj, path):
        for key, value in object_state(obj, path).items():
            state_path = f"{path}/{key}" if path else key
            if state_path in values or state_path in aliases:
                raise ValueError(f"Checkpoint: the state {key!r} of {path or '<root>'!r} "
                                 f"has the path {state_path!r} of another value")
            values[state_path] = ObjectState(obj, key, value)

    def walk(obj, path):
        for name, child in named_children(obj, path):
            child_path = f"{path}/{name}" if path else name
            if child is None:
                continue
            if isinstance(child, Variable):
                if child_path in values or child_path in aliases:
                    known = values[aliases.get(child_path, child_path)]
                    if known is child:  # the same variable reached again by this path
                        continue
                    raise ValueError(f"Checkpoint: two different variables have the path "
                                     f"{child_path!r}")
                if id(child) in first_path:
                    aliases[child_path] = first_path[id(child)]
                else:
                    first_path[id(child)] = child_path
                    values[child_path] = child
            elif isinstance(child, (list, tuple, dict)) or is_trackable(child):
                if id(child) not in seen:
                    seen[id(child)] = child
                    walk(child, child_path)
                    add_state(child, child_path)
            else:
                raise TypeError(f"Checkpoint: {child_path!r} is a {type(child).__name__}, "
                                "which is neither a Variable nor trackable (an object with "
                                "_trackable_children())")

    walk(root, "")
    add_state(root, "")
    # `walk` refers to itself, so its closure outlives this call until the cycle collector
    # runs: let go of the objects now, or they would outlive their owners (and keep
    # restores waiting for them)
    seen.clear()
    return values, aliases


def child_at(obj, relative: str):
    """(the child of `obj` whose name starts path `relative`, the rest of `relative`), or
    None when no child of `obj` leads there.

    Example:
        >>> child_at(model, "dense/kernel")
        (<Dense name='dense'>, 'kernel')
    """
    if isinstance(obj, Variable) or not (isinstance(obj, (list, tuple, dict))
                                         or is_trackable(obj)):
        return None
    for key, child in named_children(obj, ""):
        if child is not None and (relative == key or relative.startswith(key + "/")):
            return child, relative[len(key) + 1:]
    return None
