"""`CheckpointManager` (TF's `tf.train.CheckpointManager`): numbering and rotating saves.

Its state (the checkpoints it keeps) lives in the directory's "checkpoint" index
(format.py), so a new manager on the same directory picks up where the last one stopped.
"""
from __future__ import annotations

import collections
import functools
import os
import time as _time

import numpy as np

from .checkpoint import Checkpoint
from ...distribute.collective import on_chief
from .format import latest_checkpoint, read_state, remove, write_state

__all__ = ["CheckpointManager"]


class CheckpointManager:
    """Numbers, records and rotates the checkpoints of one `Checkpoint` in a directory.

    Its state (the checkpoints it keeps) lives in the directory's "checkpoint" file, so a
    new manager on the same directory picks up where the last one stopped.

    Example:
        >>> ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
        >>> manager = tf.train.CheckpointManager(ckpt, "/tmp/run", max_to_keep=2)
        >>> path = manager.save()                     # "/tmp/run/ckpt-1"
        >>> manager.latest_checkpoint == path
        True
    """

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt", step_counter=None,
                 checkpoint_interval: int | None = None, init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: checkpoint must be a tf.train.Checkpoint, "
                            f"got {type(checkpoint).__name__}")
        if max_to_keep is not None and (isinstance(max_to_keep, bool)
                                        or not isinstance(max_to_keep, int)
                                        or max_to_keep <= 0):
            raise ValueError(f"CheckpointManager: expected a positive integer or None for "
                             f"max_to_keep, got {max_to_keep!r}")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: step_counter is needed with "
                             "checkpoint_interval")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_s = (keep_checkpoint_every_n_hours * 3600.0
                              if keep_checkpoint_every_n_hours else None)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_checkpoint_step = None
        self._maybe_delete: collections.OrderedDict[str, float] = collections.OrderedDict()
        now = _time.time()
        state = read_state(self._directory)
        if state is None:
            # no index, or a garbled one: then the newest checkpoint on disk (with a
            # warning) is the latest, so restore_or_initialize does not start over
            self._latest_checkpoint = latest_checkpoint(self._directory)
            self._last_preserved = now - 1.0
            return
        self._latest_checkpoint = state["model_checkpoint_path"]
        self._last_preserved = min(state["last_preserved_timestamp"] or 0.0, now)
        paths = state["all_model_checkpoint_paths"]
        stamps = state["all_model_checkpoint_timestamps"]
        if len(stamps) != len(paths):  # no timestamps: written by Checkpoint.save
            stamps = [self._last_preserved] * len(paths)
        for path, stamp in zip(paths, stamps):
            stamp = min(stamp, now)
            if stamp > self._last_preserved:  # older ones were preserved for good
                self._maybe_delete[path] = stamp

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoints(self) -> list[str]:
        """The managed checkpoints' paths, oldest first."""
        return list(self._maybe_delete)

    @property
    def latest_checkpoint(self) -> str | None:
        """The most recent checkpoint's path, or None (pass it to `Checkpoint.restore`)."""
        return self._latest_checkpoint

    @property
    def checkpoint_interval(self) -> int | None:
        return self._checkpoint_interval

    def save(self, checkpoint_number=None, check_interval: bool = True,
             options=None) -> str | None:
        """Save "<directory>/<checkpoint_name>-<n>", n = `checkpoint_number` or else the
        checkpoint's incremented `save_counter`; delete checkpoints beyond
        `max_to_keep`. Returns the path, or None when skipped by `checkpoint_interval`."""
        step = None
        if self._step_counter is not None:
            step = int(np.asarray(self._step_counter))
            if (check_interval and self._checkpoint_interval is not None
                    and self._last_checkpoint_step is not None
                    and step < self._last_checkpoint_step + self._checkpoint_interval):
                return None
        counter = self._checkpoint.save_counter
        before = int(counter.numpy())
        counter.assign(before + 1)
        number = before + 1 if checkpoint_number is None else int(np.asarray(
            checkpoint_number))
        path = f"{self._prefix}-{number}"
        managed = collections.OrderedDict(self._maybe_delete)
        managed.pop(path, None)  # re-saved: moves to the newest end
        managed[path] = _time.time()
        # the new one is listed before anything is deleted; the state file is written on
        # the chief within the write, so if it fails the write is undone too, and this
        # manager's state stays as it was
        record = functools.partial(write_state, self._directory, path, list(managed),
                                   list(managed.values()), self._last_preserved)
        try:
            self._checkpoint._write(path, then=record)
        except BaseException:
            counter.assign(before)
            raise
        self._maybe_delete = managed
        self._latest_checkpoint = path
        self._last_checkpoint_step = step
        self._sweep()
        self._record_state()
        return path

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint and return its path; with none, call `init_fn`
        (if given) and return None."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self) -> None:
        """Eager and synchronous: nothing is pending."""

    def _sweep(self) -> None:
        if not self._max_to_keep:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            path, stamp = self._maybe_delete.popitem(last=False)
            if self._keep_every_s and stamp - self._keep_every_s >= self._last_preserved:
                self._last_preserved = stamp  # kept on disk, no longer managed
                continue
            try:
                on_chief(remove, path)  # one rank deletes under a multi-process strategy
            except BaseException:
                # still managed (first in line), so the next save deletes what is left
                self._maybe_delete[path] = stamp
                self._maybe_delete.move_to_end(path, last=False)
                raise

    def _record_state(self) -> None:
        if self._latest_checkpoint is None:
            return
        on_chief(write_state, self._directory, self._latest_checkpoint,
                 list(self._maybe_delete), list(self._maybe_delete.values()),
                 self._last_preserved)
