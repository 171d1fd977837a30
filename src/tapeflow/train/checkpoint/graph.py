"""The object graph: the walk from a checkpoint's root that names every saved value.

A checkpoint names each value by its path from the root: a variable's path
("model/dense/kernel"), or an object's path and the name of a piece of its own state
("rng/state"). A variable reachable by several paths is stored once, under the first, and
the others are recorded as aliases; an object reachable twice, or through a cycle, is
walked once.

Children named under another library's names too (`register_alias_children`: Keras 3's
object graph) are walked after the object's own: what they reach again gets alias paths
(for an object, one per value below it), so the file holds both names of each value; a
variable first reached through such a name is an *extra* (a file written before those
names existed lacks it, and a restore leaves it as it is).
"""
from __future__ import annotations

import numpy as np

from ..._core.variable import Variable
from .trackable import alias_children, is_trackable, named_children, object_state

__all__ = ["ObjectState", "collect", "collect_all", "child_at", "Walk"]

_MAX_ALIASES = 16  # further paths recorded per value through re-reached objects


class ObjectState:
    """One named piece of a trackable's own state, found by the walk: `owner`, `key` and
    `value` (a NumPy array, what `_serialize_to_tensors()` gave when walked)."""

    __slots__ = ("owner", "key", "value")

    def __init__(self, owner, key: str, value: np.ndarray):
        self.owner, self.key, self.value = owner, key, value

    def __repr__(self) -> str:
        return f"<state {self.key!r} of {type(self.owner).__name__}>"


class Walk:
    """What `collect_all` found: `values` ({path: variable or object state}, walk order),
    `aliases` ({other path: first path}) and `extras` (paths of variables first reached
    through another library's names)."""

    __slots__ = ("values", "aliases", "extras")

    def __init__(self, values: dict, aliases: dict, extras: set):
        self.values, self.aliases, self.extras = values, aliases, extras

    def paths_of(self) -> dict[str, list[str]]:
        """{first path: [the other paths of the same value]}."""
        out: dict[str, list[str]] = {}
        for alias, path in self.aliases.items():
            out.setdefault(path, []).append(alias)
        return out


def collect(root) -> tuple[dict[str, Variable | ObjectState], dict[str, str]]:
    """Walk the object graph from `root`: ({path: variable or object state} in walk order,
    each variable under the first path reaching it, and {other path: that first path}).

    Example:
        >>> v = tf.Variable(1.0)
        >>> collect(tf.train.Checkpoint(a=v, b=[v]))
        ({'a': <tf.Variable 'Variable:0' ...>}, {'b/0': 'a'})
    """
    walk = collect_all(root)
    return walk.values, walk.aliases


def collect_all(root) -> Walk:
    """`collect`, with the paths of the extras (see the module docstring).

    Example:
        >>> collect_all(tf.train.Checkpoint(model=keras_model)).aliases[
        ...     "model/_functional/_operations/1/_kernel"]
        'model/_stack/0/kernel'
    """
    values: dict[str, Variable | ObjectState] = {}
    first_path: dict[int, str] = {}
    aliases: dict[str, str] = {}
    extras: set[str] = set()
    objects: list[tuple[str, str]] = []  # (another path, first path) of re-reached objects
    # objects already walked (shared objects, cycles), held so that no id is reused by a
    # temporary container some _trackable_children() builds
    seen: dict[int, object] = {id(root): root}
    object_path: dict[int, str] = {id(root): ""}

    def add_state(obj, path):
        for key, value in object_state(obj, path).items():
            state_path = f"{path}/{key}" if path else key
            if state_path in values or state_path in aliases:
                raise ValueError(f"Checkpoint: the state {key!r} of {path or '<root>'!r} "
                                 f"has the path {state_path!r} of another value")
            values[state_path] = ObjectState(obj, key, value)

    def visit(name, child, path, via_alias):
        child_path = f"{path}/{name}" if path else name
        if child is None:
            return
        if isinstance(child, Variable):
            if child_path in values or child_path in aliases:
                known = values[aliases.get(child_path, child_path)]
                if known is child:  # the same variable reached again by this path
                    return
                raise ValueError(f"Checkpoint: two different variables have the path "
                                 f"{child_path!r}")
            if id(child) in first_path:
                aliases[child_path] = first_path[id(child)]
            else:
                first_path[id(child)] = child_path
                values[child_path] = child
                if via_alias:
                    extras.add(child_path)
        elif isinstance(child, (list, tuple, dict)) or is_trackable(child):
            if id(child) not in seen:
                seen[id(child)] = child
                object_path[id(child)] = child_path
                walk(child, child_path, via_alias)
                add_state(child, child_path)
            elif via_alias and object_path.get(id(child)) is not None:
                objects.append((child_path, object_path[id(child)]))
        else:
            raise TypeError(f"Checkpoint: {child_path!r} is a {type(child).__name__}, "
                            "which is neither a Variable nor trackable (an object with "
                            "_trackable_children())")

    def walk(obj, path, via_alias=False):
        own = named_children(obj, path)
        for name, child in own:
            visit(name, child, path, via_alias)
        taken = {name for name, _ in own}
        for name, child in alias_children(obj, path):
            if name not in taken:
                visit(name, child, path, True)

    walk(root, "")
    add_state(root, "")
    _alias_objects(objects, values, aliases)
    # `walk` refers to itself, so its closure outlives this call until the cycle collector
    # runs: let go of the objects now, or they would outlive their owners (and keep
    # restores waiting for them)
    seen.clear()
    object_path.clear()
    return Walk(values, aliases, extras)


def _alias_objects(objects: list, values: dict, aliases: dict) -> None:
    """Each variable below an object reached again (at `other`, first at `first`) gets the
    alias path through `other`; repeated while new paths appear (objects inside objects),
    at most _MAX_ALIASES further paths per variable."""
    count: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for other, first in objects:
            if other.startswith(first + "/"):  # an object inside itself: no end of paths
                continue
            prefix = first + "/"
            below = [(p, p) for p, v in values.items()
                     if p.startswith(prefix) and isinstance(v, Variable)]
            below += [(a, p) for a, p in aliases.items() if a.startswith(prefix)]
            for path, target in below:
                alias = other + path[len(first):]
                if alias in values or alias in aliases or count.get(target, 0) >= \
                        _MAX_ALIASES:
                    continue
                aliases[alias] = target
                count[target] = count.get(target, 0) + 1
                changed = True


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
    own = named_children(obj, "")
    taken = {key for key, _ in own}
    for key, child in own + [(k, c) for k, c in alias_children(obj, "") if k not in taken]:
        if child is not None and (relative == key or relative.startswith(key + "/")):
            return child, relative[len(key) + 1:]
    return None
