"""Restoring a checkpoint: check, assign all or nothing, defer what waits, report status.

`restore` reads and checks the whole file against the object graph before assigning
anything: a variable missing from it, or stored with another shape or dtype, raises with
every difference named and nothing changed. Then every value whose variable (or object
state) exists is assigned; if an assignment fails midway, those made are undone.

Deferred restoration. A value whose object does not exist yet (a layer builds its
variables on its first call, an optimizer its slots on its first step, a variable is
attached or appended to a list after `restore()`) waits, as in TensorFlow, until that
object appears. The restore's status owns the waiting values, in a `DeferredRestore`:
- each value waits on the deepest object along its path that exists now (its *anchor*,
  held weakly), under the rest of the path; when every anchor is gone, nothing can
  arrive any more and the waiting values are dropped;
- while values wait, the `DeferredRestore` is registered in this thread's context
  (`ctx.variable_observers`, as TensorFlow's variable creator scopes are), which tells it
  of each Variable created. Such a variable is marked *awaiting*: its class is swapped
  for a subclass whose `_value` is a property, so the variable's first use (a read, an
  assignment, its shape) first walks from the anchors and hands each waiting value to
  the object now at its path, then turns the variable back into an ordinary one. A layer
  that creates a variable, attaches it and uses it therefore computes with the restored
  value from its first call; an optimizer's new slots are restored before its first
  update reads them;
- attaching an object to a `Checkpoint`, and the status's assertions, walk too, so a
  variable made before the restore and attached after it, or a `random.Generator`, is
  found then;
- when nothing waits any more (all taken, or all anchors collected), the
  `DeferredRestore` unregisters itself: no global state is left, and with no restore
  waiting a variable's creation costs one attribute test and ops cost nothing more.
Restoring itself runs outside any trace or tape: it is not part of the computation that
happens to use the variable first.
"""
from __future__ import annotations

import contextlib
import functools
import warnings
import weakref

import numpy as np

from ..._core import dtypes as _dt
from ..._core.context import ctx
from ..._core.errors import InvalidArgumentError
from ..._core.variable import Variable
from ..module import Module
from ..optimizers import Optimizer
from .format import read_checkpoint
from .graph import ObjectState, child_at, collect, collect_all
from .trackable import has_state, object_state

__all__ = ["restore", "resolve_pending", "DeferredRestore", "CheckpointLoadStatus",
           "InitializationOnlyStatus", "COUNTER"]

COUNTER = "save_counter"  # the Checkpoint's own variable: never the point of a restore


def restore(root, path: str, optional: frozenset = frozenset(),
            ignored: frozenset = frozenset()) -> "CheckpointLoadStatus":
    """Read `path`, check it against `root`'s variables and object state, assign them all
    and leave the rest of the file waiting for the objects it belongs to. Paths in
    `optional` may be absent from the file (the save counter); those in `ignored` too, and
    the status's assertions overlook them (the save counter for `read`).

    Example:
        >>> status = restore(tf.train.Checkpoint(model=model), "/tmp/run/ckpt-1")
        >>> status.assert_consumed()
    """
    keys: dict[str, str] = {}
    values, file_aliases = read_checkpoint(path, keys)
    walk = collect_all(root)
    targets, others = walk.values, walk.paths_of()
    problems, plan, error = [], [], ValueError
    for name, target in targets.items():
        source = None
        # a value may be stored under any of its names (tapeflow's own, Keras 3's)
        for candidate in [name] + others.get(name, []):
            source = candidate if candidate in values else file_aliases.get(candidate)
            if source is not None:
                break
        if source is None and name in walk.extras:
            # reached only through Keras 3's names (its optimizer's learning rate): a file
            # written before tapeflow wrote them lacks it; it stays as it is
            ignored = ignored | {name}
            continue
        if source is None:
            # object state a file predates stays as it is (the assertions name it)
            if name not in optional and name not in ignored \
                    and not isinstance(target, ObjectState):
                problems.append(f"  {name!r}: missing from the checkpoint (expected shape "
                                f"{list(target._shape)}, dtype {target.dtype.name})")
            continue
        problem = _mismatch(target, values[source])
        if problem:
            problems.append(f"  {name!r} (key {keys.get(source, source)!r}): {problem[0]}")
            if problem[1] is not ValueError:
                error = problem[1]
        plan.append((source, target, values[source]))
    if problems:
        raise error(f"Checkpoint: cannot restore {path!r}; no variable was "
                    "changed:\n" + "\n".join(problems))
    _assign_all([(target, value) for _, target, value in plan])
    consumed = {source for source, _, _ in plan}
    deferred = DeferredRestore(path, {_restored_key(t) for _, t, _ in plan}, keys)
    for name in sorted(set(values) - consumed - ignored):
        deferred.place(root, name, name, values[name])
    deferred.start()
    return CheckpointLoadStatus(root, path, deferred, ignored)


def resolve_pending() -> None:
    """Hand the values waiting in this thread's restores to the objects now at their
    paths (what attaching an object to a Checkpoint does).

    Example:
        >>> status = ckpt.restore(path); model.extra = v; resolve_pending()
    """
    for observer in tuple(ctx.variable_observers):
        if isinstance(observer, DeferredRestore):
            observer.resolve()


# ---------------------------------------------------------------- assigning


def _restored_key(target) -> object:
    """How the status remembers a restored variable or piece of object state."""
    return (id(target.owner), target.key) if isinstance(target, ObjectState) else id(target)


def _dtype_name(dtype: np.dtype) -> str:
    """A stored value's dtype as TensorFlow names it ("string" for byte strings, which no
    tapeflow dtype holds)."""
    if dtype.kind == "O":
        return "string"
    try:
        return _dt.as_dtype(dtype).name
    except TypeError:
        return str(dtype)


def _mismatch(target, value: np.ndarray) -> tuple[str, type] | None:
    """What keeps `value` from `target` (a Variable or ObjectState), and the error to raise
    for it (as TensorFlow: InvalidArgumentError for another dtype, ValueError for another
    shape), or None."""
    found_dtype = _dtype_name(value.dtype)
    if isinstance(target, ObjectState):
        want_shape, want_dtype = list(target.value.shape), _dt.as_dtype(target.value.dtype).name
        shape_ok = target.value.shape == value.shape
        what = "the object's state"
    else:
        want_shape, want_dtype = list(target._shape), target.dtype.name
        declared = target._declared_shape
        shape_ok = (declared.is_compatible_with(value.shape) if declared is not None
                    else tuple(target._shape) == value.shape)
        what = "the variable"
    problems = []
    if not shape_ok:
        problems.append(f"shape mismatch: {what} has shape {want_shape}, the checkpoint "
                        f"has {list(value.shape)}")
    error = ValueError
    if found_dtype != want_dtype:
        problems.append(f"dtype mismatch: {what} has dtype {want_dtype}, the checkpoint "
                        f"has {found_dtype}")
        error = InvalidArgumentError
    return ("; ".join(problems), error) if problems else None


def _assign_all(plan: list) -> None:
    """Assign each (Variable or ObjectState, value) of `plan`, all or nothing: if one
    fails (a backend error), those made are undone before the error goes on."""
    variables = [(t, v) for t, v in plan if isinstance(t, Variable)]
    states: dict[int, tuple] = {}  # an object's pieces of state are restored together
    for target, value in plan:
        if isinstance(target, ObjectState):
            states.setdefault(id(target.owner), (target.owner, {}))[1][target.key] = value
    old_values = [var.read_value() for var, _ in variables]
    old_states = [(owner, {k: target_state for k, target_state in
                           object_state(owner, "").items() if k in found})
                  for owner, found in states.values()]
    done = 0
    try:
        for var, value in variables:
            var.assign(value)
            done += 1
        for owner, found in states.values():
            owner._restore_from_tensors(dict(found))
            done += 1
    except BaseException:  # all or nothing, even if a backend fails midway
        for (var, _), value in zip(variables[:done], old_values):
            var.assign(value)
        for owner, old in old_states[:max(0, done - len(variables))]:
            owner._restore_from_tensors(old)
        raise


@contextlib.contextmanager
def _outside_computations():
    """Run a restore eagerly and unrecorded, even when a trace or a tape is active: the
    assignment is not part of the computation that happens to touch the variable."""
    c = ctx
    if c.graph is None and not (c.tapes or c.accs or c.watchers):
        yield
        return
    saved = (c.graph, c.tapes, c.accs, c.watchers)
    c.graph, c.tapes, c.accs, c.watchers = None, [], [], []
    c.refresh()
    try:
        yield
    finally:
        c.graph, c.tapes, c.accs, c.watchers = saved
        c.refresh()


# ---------------------------------------------------------------- deferred restoration


def _holdable(obj) -> bool:
    """Whether `obj` can be an anchor: a trackable that can be referenced weakly (lists,
    tuples and dicts cannot; their owner anchors what waits inside them)."""
    if isinstance(obj, (Variable, list, tuple, dict)):
        return False
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _builds_later(obj) -> bool:
    # Modules and optimizers make their variables on first use: values waiting on them
    # are expected, not leftovers to warn about
    return isinstance(obj, (Module, Optimizer))


class DeferredRestore:
    """The values of one restore that wait for their objects, by anchor (see the module
    docstring). `waiting`, `taken`, `lost` and `abandoned` are the names of values waiting
    now, assigned after the restore, never assignable, and dropped with their anchor."""

    def __init__(self, path: str, restored: set, keys: dict[str, str] | None = None):
        self.path = path
        self.keys = keys or {}  # {path: the file's key for it}, for errors
        self.restored = restored  # _restored_key of everything restored, now or later
        self.waiting: set[str] = set()
        self.unexpected: set[str] = set()  # waiting where nothing is expected to come
        self.taken: set[str] = set()
        self.lost: set[str] = set()
        self.abandoned: set[str] = set()
        # id(anchor) -> (weak reference to it, {path below it: (name, value)})
        self._anchors: dict[int, tuple] = {}
        self._registry: list | None = None
        self._resolving = False

    # ------------------------------------------------------------ placing
    def _locate(self, obj, relative: str):
        """Follow `relative` down from `obj`: (target or None, anchor, path below it), the
        target a Variable or an (owner, state key) pair at the end of the path."""
        anchor, below = (obj, relative) if _holdable(obj) else (None, None)
        while relative:
            found = child_at(obj, relative)
            if found is None:
                break
            obj, relative = found
            if relative and _holdable(obj):
                anchor, below = obj, relative
        if not relative:
            return (obj if isinstance(obj, Variable) else None), None, None
        if has_state(obj) and relative in object_state(obj, ""):
            return (obj, relative), None, None
        if isinstance(obj, Variable):
            return None, None, None  # a variable where the file has an object
        return None, anchor, below

    def place(self, obj, relative: str, name: str, value: np.ndarray) -> None:
        """Assign `value` (the file's `name`) to what `relative` names below `obj` if it
        exists now, else leave it waiting on its anchor."""
        target, anchor, below = self._locate(obj, relative)
        if target is not None:
            self._take([(name, target, value)])
        elif anchor is None:
            self.lost.add(name)
        else:
            key = id(anchor)
            if key not in self._anchors:
                ref = weakref.ref(anchor, functools.partial(self._anchor_gone, key))
                self._anchors[key] = (ref, {})
            self._anchors[key][1][below] = (name, value)
            self.waiting.add(name)
            if not _builds_later(anchor):
                self.unexpected.add(name)

    def _take(self, found: list) -> None:
        """Assign each (name, Variable or (owner, key), value) of `found`, checked; the
        pieces of one object's state together."""
        states: dict[int, tuple] = {}
        for name, target, value in found:
            if isinstance(target, Variable):
                problem = _mismatch(target, value)
                if problem:
                    raise problem[1](f"Checkpoint: cannot restore {name!r} (key "
                                     f"{self.keys.get(name, name)!r} in {self.path!r}) into "
                                     f"the variable created for it: {problem[0]}")
                target.assign(value)
                self.restored.add(id(target))
            else:
                owner, key = target
                current = object_state(owner, "")[key]
                problem = _mismatch(ObjectState(owner, key, current), value)
                if problem:
                    raise problem[1](f"Checkpoint: cannot restore {name!r} (key "
                                     f"{self.keys.get(name, name)!r} in {self.path!r}) into "
                                     f"the object now at its path: {problem[0]}")
                states.setdefault(id(owner), (owner, {}))[1][key] = value
                self.restored.add((id(owner), key))
            self.taken.add(name)
        for owner, pieces in states.values():
            owner._restore_from_tensors(pieces)

    def resolve(self) -> None:
        """Walk from each anchor and hand every waiting value whose object is there now to
        it; unregister when nothing waits any more."""
        if self._resolving:  # an awaiting variable touched by this very walk
            return
        self._resolving = True
        try:
            with _outside_computations():
                for key, (ref, entries) in list(self._anchors.items()):
                    anchor = ref()
                    if anchor is None:
                        continue
                    found = []
                    for below, (name, value) in list(entries.items()):
                        target, _, _ = self._locate(anchor, below)
                        if target is not None:
                            del entries[below]  # taken, or refused below: it waits no more
                            self.waiting.discard(name)
                            found.append((name, target, value))
                    if not entries:
                        del self._anchors[key]
                    self._take(found)
        finally:
            self._resolving = False
            if not self._anchors:
                self.stop()

    def _anchor_gone(self, key: int, ref) -> None:
        entry = self._anchors.get(key)
        if entry is None or entry[0] is not ref:
            return
        del self._anchors[key]
        names = {name for name, _ in entry[1].values()}
        self.waiting -= names
        self.abandoned |= names
        if not self._anchors:
            self.stop()

    # ------------------------------------------------------------ registration
    def start(self) -> None:
        """Register in this thread's context while values wait."""
        if self._anchors and self._registry is None:
            self._registry = ctx.variable_observers
            self._registry.append(self)

    def stop(self) -> None:
        """Unregister (from the thread that registered, wherever this runs)."""
        registry, self._registry = self._registry, None
        if registry is not None:
            for i in range(len(registry) - 1, -1, -1):
                if registry[i] is self:
                    del registry[i]

    def variable_created(self, variable: Variable) -> None:
        """`ctx.variable_observers`' call: mark a new variable as awaiting (its first use
        resolves this restore first)."""
        refs = variable.__dict__.setdefault("_restores_awaited", [])
        refs.append(weakref.ref(self))
        if not isinstance(variable, _Awaiting):
            variable.__class__ = _awaiting_class(type(variable))


class _Awaiting:
    """The mark of an awaiting variable's class (see `_awaiting_class`)."""

    __slots__ = ()


@functools.lru_cache(maxsize=None)
def _awaiting_class(cls: type) -> type:
    """A subclass of the Variable class `cls` whose `_value` is a property: its first read
    turns the variable back into a `cls` and resolves the restores it awaits."""

    def get(variable):
        state = variable.__dict__
        variable.__class__ = cls  # ordinary from here on, before anything reads it
        for ref in state.pop("_restores_awaited", ()):
            deferred = ref()
            if deferred is not None:
                deferred.resolve()
        return state["_value"]

    def set(variable, value):
        variable.__dict__["_value"] = value

    return type(cls.__name__, (cls, _Awaiting),
                {"__slots__": (), "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__, "_value": property(get, set)})


# ---------------------------------------------------------------- the status objects


class CheckpointLoadStatus:
    """What a `restore`/`read` matched, for the assertions TF offers. Values whose objects
    exist are assigned before `restore` returns; the others wait for them (deferred
    restoration); the assertions look at the object graph as it is now.

    As in TF, values left over in the file are warned about when the status is discarded,
    unless `expect_partial()` or `assert_consumed()` was called on it; values waiting for a
    Module's or an optimizer's variables still to be created are not left over.

    Example:
        >>> status = tf.train.Checkpoint(model=model).restore(path)
        >>> status.assert_existing_objects_matched()
    """

    def __init__(self, root, path: str, deferred: DeferredRestore,
                 ignored: frozenset = frozenset()):
        self._root, self._path, self._deferred = root, path, deferred
        self._ignored = ignored
        self._unused = sorted(deferred.lost | deferred.unexpected)
        self._quiet = not self._unused

    def __del__(self):
        if self._quiet:
            return
        unused = [n for n in self._unused if n not in self._deferred.taken]
        if not unused:
            return
        shown = ", ".join(repr(n) for n in unused[:10])
        more = f" and {len(unused) - 10} more" if len(unused) > 10 else ""
        with contextlib.suppress(Exception):  # may run at interpreter exit
            warnings.warn(f"Checkpoint {self._path!r}: values matched by no variable were "
                          f"not restored: {shown}{more}. Call expect_partial() on the status "
                          "restore() returns if that is intended.", stacklevel=2)

    def _unrestored(self) -> list[str]:
        self._deferred.resolve()
        targets, _ = collect(self._root)
        restored = self._deferred.restored
        return [n for n, t in targets.items()
                if _restored_key(t) not in restored and n not in self._ignored]

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """Raise AssertionError unless every value in the file was assigned and every
        variable reachable now was restored."""
        self._quiet = True  # checked: the outcome is the caller's
        deferred = self._deferred
        deferred.resolve()
        unresolved = sorted(deferred.lost | deferred.waiting | deferred.abandoned)
        if unresolved:
            raise AssertionError(f"Unresolved values in checkpoint {self._path!r}, matched "
                                 f"by no variable: {unresolved}")
        self.assert_existing_objects_matched()
        return self

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """Raise AssertionError if a variable reachable now was not restored (e.g. one
        created after the restore); values left over in the file are allowed."""
        missing = self._unrestored()
        if missing:
            raise AssertionError(f"Variables not restored from checkpoint {self._path!r}: "
                                 f"{missing}")
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        """Raise AssertionError if nothing but the save counter was restored."""
        self._deferred.resolve()
        targets, _ = collect(self._root)
        restored = self._deferred.restored
        if not any(_restored_key(t) in restored for n, t in targets.items() if n != COUNTER):
            raise AssertionError(f"Nothing except the root object matched a value in "
                                 f"checkpoint {self._path!r}")
        return self

    def expect_partial(self) -> "CheckpointLoadStatus":
        """Declare a partial restore intended (no warning about values left over); returns
        self."""
        self._quiet = True
        return self

    def run_restore_ops(self, session=None) -> None:
        """Eager: values are already assigned."""

    def initialize_or_restore(self, session=None) -> None:
        """Eager: values are already assigned."""


class InitializationOnlyStatus:
    """The status of `restore(None)`: nothing restored, so the assertions fail."""

    def _fail(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored")

    def assert_consumed(self):
        self._fail()

    def assert_existing_objects_matched(self):
        self._fail()

    def assert_nontrivial_match(self):
        self._fail()

    def expect_partial(self) -> "InitializationOnlyStatus":
        return self

    def run_restore_ops(self, session=None) -> None:
        pass

    def initialize_or_restore(self, session=None) -> None:
        pass
