"""Object-based checkpoints (TF's `tf.train.Checkpoint` and `tf.train.CheckpointManager`).

One module per concern:
  trackable.py   the protocol any object implements to be saved (children, own state)
  graph.py       the walk from the root that names every value ("model/dense/kernel")
  format.py      the file: a pickle-free `.npz`, atomic writes, the "checkpoint" index,
                 and reading files back (`list_variables`, `load_variable`)
  status.py      restoring: all or nothing, deferred restoration, the status objects
  checkpoint.py  `Checkpoint`, the root object
  manager.py     `CheckpointManager`: numbering, recording and rotating saves
This package re-exports the public names.
"""
from __future__ import annotations

from . import format, manager  # noqa: F401  (submodules, as `checkpoint.format`)
from .checkpoint import Checkpoint
from .format import latest_checkpoint, list_variables, load_variable
from .graph import collect as _collect
from .manager import CheckpointManager
from .status import CheckpointLoadStatus, InitializationOnlyStatus
from .trackable import Trackable

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus",
           "InitializationOnlyStatus", "Trackable", "latest_checkpoint", "list_variables",
           "load_variable"]
