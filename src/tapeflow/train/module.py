"""`Module` (TensorFlow's tf.Module) and `name_scope`.

A Module finds its variables and submodules by walking its attributes when asked (nothing
is registered on assignment): attribute names in sorted order, into lists, tuples and dicts
(dicts by sorted key), each object once. A module's own attributes come before those of its
submodules, which are walked in the order they were found, as TensorFlow does.

`_trackable_children` implements the trackable protocol (documented in
train/checkpoint/trackable.py): a module's direct named children ("layers/0/kernel" is the
path of a variable two levels down). A module knows nothing of restoring: values waiting
for variables it has yet to create find them without its help.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Iterator

from .._core.context import ctx
from .._core.variable import Variable

__all__ = ["Module", "name_scope"]

class name_scope:
    """A context manager that prefixes the names of variables created inside it.

    Nested scopes join with "/"; a name ending in "/" is an absolute scope (it replaces the
    enclosing one) and "" clears it. Entering returns the full scope name.

    Example:
        >>> with tf.name_scope("encoder"):
        ...     with tf.name_scope("layer") as scope:
        ...         v = tf.Variable(1.0, name="w")
        >>> scope, v.name
        ('encoder/layer/', 'encoder/layer/w:0')
    """

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise ValueError(f"name_scope: name must be a string, got {type(name).__name__} "
                             f"{name!r}")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        scopes = ctx.name_scopes
        name = self._name
        if not name or name.endswith("/"):
            scope = name
        else:
            scope = (scopes[-1] if scopes else "") + name + "/"
        scopes.append(scope)
        return scope

    def __exit__(self, *exc) -> bool:
        ctx.name_scopes.pop()
        return False

    def __repr__(self) -> str:
        return f"name_scope({self._name!r})"


_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SNAKE = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def _camel_to_snake(name: str) -> str:
    """'MyModule' -> 'my_module', 'HTTPServer' -> 'http_server' (TensorFlow's rule)."""
    return _SNAKE.sub(r"_\1", name).lower()


def _is_trackable(obj) -> bool:
    """Variables, Modules and other objects that name their own children (optimizers)."""
    return isinstance(obj, (Variable, Module)) or (
        not isinstance(obj, type) and callable(getattr(type(obj), "_trackable_children", None)))


def _leaves(value, path: tuple, containers: set) -> Iterator[tuple]:
    """(path, leaf) for the leaves of a nest of lists, tuples and dicts; `containers` holds
    the ids of the containers being walked, so a self-containing list ends the walk."""
    if isinstance(value, (list, tuple, dict)):
        if id(value) in containers:
            return
        containers.add(id(value))
        if isinstance(value, dict):
            try:
                keys = sorted(value)
            except TypeError:  # mixed key types: keep the dict's own order
                keys = list(value)
            items = ((k, value[k]) for k in keys)
        else:
            items = enumerate(value)
        for key, item in items:
            yield from _leaves(item, path + (key,), containers)
        containers.discard(id(value))
    else:
        yield path, value


def _attributes(module, last: frozenset = frozenset()) -> Iterator[tuple]:
    """(path, leaf) over a module's attributes, sorted by attribute name (those in `last`
    after the others)."""
    attrs = vars(module)
    for key in sorted(attrs, key=lambda k: (k in last, k)):
        if key not in Module._IGNORED_ATTRIBUTES:
            yield from _leaves(attrs[key], (key,), set())


def _is_variable(obj) -> bool:
    return isinstance(obj, Variable)


def _walk(module, recursive, predicate, with_path, prefix, seen, stack) -> Iterator:
    """Module._flatten's walk; `seen` (ids yielded or passed) deduplicates unless
    `with_path`; `stack` (ids of the modules being walked) stops cycles."""
    found = []
    for path, leaf in _attributes(module):
        path = prefix + path
        if not with_path:
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
        if predicate(leaf):
            yield (path, leaf) if with_path else leaf
        if recursive and isinstance(leaf, Module) and id(leaf) not in stack \
                and leaf is not module:
            found.append((path, leaf))
    stack.add(id(module))
    for path, sub in found:
        yield from _walk(sub, recursive, predicate, with_path, path, seen, stack)
    stack.discard(id(module))


class Module:
    """A named container of variables and submodules, found through its attributes.

    Example:
        >>> class Linear(tf.Module):
        ...     def __init__(self, n_in, n_out, name=None):
        ...         super().__init__(name=name)
        ...         self.w = tf.Variable(tf.ones([n_in, n_out]), name="w")
        ...         self.b = tf.Variable(tf.zeros([n_out]), name="b")
        ...     @tf.Module.with_name_scope
        ...     def __call__(self, x):
        ...         return x @ self.w + self.b
        >>> m = Linear(3, 2)
        >>> [v.name for v in m.variables], m.name
        (['b:0', 'w:0'], 'linear')
    """

    _IGNORED_ATTRIBUTES = frozenset({"_name", "_name_scope"})
    # attributes named last in `_trackable_children` (bookkeeping lists that repeat objects
    # other attributes name better, such as a layer's `_weights`)
    _CHECKPOINT_LAST: frozenset = frozenset()

    # what a name may be (tf.Module's rule: a Python identifier); Keras layers relax it
    _NAME_RULE = (_VALID_NAME, "a module name must be a Python identifier (letters, digits "
                               "and '_', not starting with a digit)")

    def __init__(self, name: str | None = None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not self._NAME_RULE[0].match(name):
            raise ValueError(f"{type(self).__name__}: {name!r} is not a valid name; "
                             f"{self._NAME_RULE[1]}")
        self._name = name
        # the scope is fixed here: a module built inside another's scope nests under it
        with name_scope(name) as scope:
            self._name_scope = name_scope(scope)

    @property
    def name(self) -> str:
        """The module's name (default: the class name in snake_case)."""
        return self._name

    @property
    def name_scope(self) -> name_scope:
        """The scope (re-enterable) under which this module names its variables."""
        return self._name_scope

    @property
    def variables(self) -> tuple:
        """Every Variable of this module and its submodules, each once, in a stable order."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self) -> tuple:
        """`variables` that are trainable."""
        return tuple(self._flatten(predicate=lambda o: _is_variable(o) and o.trainable))

    @property
    def non_trainable_variables(self) -> tuple:
        """`variables` that are not trainable (e.g. BatchNorm's moving statistics)."""
        return tuple(self._flatten(predicate=lambda o: _is_variable(o) and not o.trainable))

    @property
    def submodules(self) -> tuple:
        """Every Module reachable through attributes (not this one), each once."""
        return tuple(self._flatten(predicate=lambda o: isinstance(o, Module)))

    def _flatten(self, recursive: bool = True, predicate: Callable | None = None,
                 with_path: bool = False) -> Iterator:
        """The attribute leaves satisfying `predicate` (default: all), this module's own
        first, then (if `recursive`) each submodule's in the order found, each object once.
        With `with_path`, (path, leaf) pairs such as (("layers", 0, "w"), v), without the
        deduplication (an object reachable twice comes twice)."""
        return _walk(self, recursive, predicate or (lambda _: True), with_path, (),
                     {id(self)}, set())

    def _trackable_children(self) -> dict:
        """This module's direct children for checkpoints: {path: object}, with paths like
        "kernel", "layers/0", "weights/key" (containers flattened) in a stable order.
        Variables are leaves; Modules and other objects with `_trackable_children` are
        children to recurse into. An object reachable twice is named once (first path)."""
        children: dict = {}
        seen = {id(self)}
        for path, leaf in _attributes(self, self._CHECKPOINT_LAST):
            if id(leaf) not in seen and _is_trackable(leaf):
                seen.add(id(leaf))
                children["/".join(str(p) for p in path)] = leaf
        return children

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorate a method so that it runs inside the module's name scope.

        Example:
            >>> class M(tf.Module):
            ...     @tf.Module.with_name_scope
            ...     def __call__(self, x):
            ...         if not hasattr(self, "w"):
            ...             self.w = tf.Variable(tf.ones([x.shape[-1]]), name="w")
            ...         return x * self.w
            >>> m = M(); _ = m(tf.ones([2])); m.w.name
            'm/w:0'
        """
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope

    def __repr__(self) -> str:
        # a subclass whose __init__ never called super().__init__() has no name yet
        name = self.__dict__.get("_name")
        if name is None:
            return f"<{type(self).__name__} (Module.__init__ not called)>"
        return f"<{type(self).__name__} name={name!r}>"
