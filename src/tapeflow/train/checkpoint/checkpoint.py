"""`Checkpoint` (TF's `tf.train.Checkpoint`): the root object that groups what is saved.

Saving walks the object graph from the checkpoint (graph.py) and writes every value in one
file (format.py); restoring checks and assigns them, deferring what waits (status.py).
"""
from __future__ import annotations

import functools
import os
from typing import Callable

import numpy as np

from ..._core import dtypes as _dt
from ..._core.variable import Variable
from ...distribute.collective import on_chief
from .format import write_checkpoint, write_state
from .graph import ObjectState, collect
from .status import (COUNTER, CheckpointLoadStatus, InitializationOnlyStatus, resolve_pending,
                     restore)
from .trackable import check_trackable, is_trackable, named_children

__all__ = ["Checkpoint"]


class Checkpoint:
    """Groups trackable objects to save and restore them together.

    Example:
        >>> v = tf.Variable([1.0, 2.0])
        >>> ckpt = tf.train.Checkpoint(model=v)
        >>> path = ckpt.save("/tmp/demo/ckpt")          # "/tmp/demo/ckpt-1"
        >>> _ = v.assign([0.0, 0.0])
        >>> status = ckpt.restore(path).assert_consumed()
        >>> v.numpy()
        array([1., 2.], dtype=float32)
    """

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_root", None)
        object.__setattr__(self, "_deps", {})
        object.__setattr__(self, "_save_counter", None)
        if root is not None:
            if isinstance(root, Variable) or not is_trackable(root):
                raise ValueError(f"Checkpoint: root must be an object with "
                                 f"_trackable_children(), got {type(root).__name__}")
            object.__setattr__(self, "_root", root)
        for name, obj in kwargs.items():
            setattr(self, name, obj)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name == COUNTER:
            raise ValueError(f"Checkpoint: {COUNTER!r} is reserved for the checkpoint's "
                             "own save counter")
        check_trackable(name, value)
        self._deps[name] = value
        # values of a restore may be waiting for this object (or what it holds)
        resolve_pending()

    def __getattr__(self, name):
        deps = self.__dict__.get("_deps", {})
        if name in deps:
            return deps[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    def _trackable_children(self) -> dict[str, object]:
        children = {}
        if self._root is not None:
            children.update(named_children(self._root, "<root>"))
        for name, obj in self._deps.items():
            if name in children and children[name] is not obj:
                raise ValueError(f"Checkpoint: the root object's child {name!r} is not the "
                                 f"object passed as {name}=")
            children[name] = obj
        if self._save_counter is not None:
            children[COUNTER] = self._save_counter
        return children

    @property
    def save_counter(self) -> Variable:
        """An int64 variable counting `save` calls (starts at 0); numbers the saves."""
        if self._save_counter is None:
            self._save_counter = Variable(0, dtype=_dt.int64, trainable=False,
                                          name=COUNTER)
        return self._save_counter

    def write(self, file_prefix: str, options=None) -> str:
        """Write a checkpoint to `file_prefix` (no numbering, no "checkpoint" index file),
        atomically: if it fails, what was at `file_prefix` before still loads. Returns the
        path to pass to `read`/`restore`."""
        return self._write(os.fspath(file_prefix))

    def _write(self, path: str, then: Callable[[], None] | None = None) -> str:
        """`write`, running `then()` once the new files are in place; if `then` raises, the
        write is undone (the "checkpoint" state file of `save` and CheckpointManager is
        written there, so a save that fails leaves neither its files nor its record)."""
        targets, aliases = collect(self)
        values = {name: (target.value if isinstance(target, ObjectState)
                         else np.asarray(target.numpy()))
                  for name, target in targets.items()}
        state_keys = {name: target.key for name, target in targets.items()
                      if isinstance(target, ObjectState)}
        # under a multi-process strategy every rank holds the same values: one writes
        on_chief(write_checkpoint, path, values, aliases, state_keys, then)
        return path

    def save(self, file_prefix: str, options=None) -> str:
        """Increment `save_counter` and write "<file_prefix>-<save_counter>"; records it
        as the latest in the directory's "checkpoint" file. Returns that path."""
        counter = self.save_counter
        before = int(counter.numpy())
        counter.assign(before + 1)
        path = f"{os.fspath(file_prefix)}-{before + 1}"
        # as TF: the index names only this save, without timestamps, so a later
        # CheckpointManager does not take it over (nor delete it); written on the chief
        # within the write, so a failing index undoes the files too
        record = functools.partial(write_state, os.path.dirname(os.path.abspath(path)),
                                   path, [path])
        try:
            self._write(path, then=record)
        except BaseException:
            counter.assign(before)  # a failed save does not use up a number
            raise
        return path

    def restore(self, save_path: str | None, options=None):
        """Restore every variable from `save_path` (from `save` or `write`), all or
        nothing. `None` restores nothing. Returns a status with `assert_consumed()`,
        `assert_existing_objects_matched()` and `expect_partial()`.

        Raises NotFoundError when there is no such checkpoint, ValueError when the file is
        corrupt or a variable is missing from it or has another shape or dtype there.
        """
        if save_path is None:
            return InitializationOnlyStatus()
        self.save_counter  # noqa: B018 - created so it is restored, as TF does
        return restore(self, os.fspath(save_path), optional=frozenset({COUNTER}))

    def read(self, save_path: str, options=None) -> CheckpointLoadStatus:
        """Like `restore`, for checkpoints from `write`: the save counter is restored only
        if it exists and the file has it."""
        if save_path is None:
            return InitializationOnlyStatus()
        return restore(self, os.fspath(save_path), ignored=frozenset({COUNTER}))
