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

import sys
import types

from . import format as _format
from . import manager as _manager
from .checkpoint import Checkpoint
from .format import _write_member, latest_checkpoint, list_variables, load_variable
from .graph import collect as _collect
from .manager import CheckpointManager, _time
from .status import CheckpointLoadStatus, InitializationOnlyStatus
from .trackable import Trackable

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus",
           "InitializationOnlyStatus", "Trackable", "latest_checkpoint", "list_variables",
           "load_variable"]

# Private names of the submodules that code written against the single-module layout
# patches here (tests replace the file writer and the manager's clock): setting one on
# this package sets it where it is read.
_FORWARDED = {"_write_member": _format, "_time": _manager}


class _Package(types.ModuleType):
    """This package's module type: forwards assignments of the names in `_FORWARDED`."""

    def __setattr__(self, name: str, value) -> None:
        owner = _FORWARDED.get(name)
        if owner is not None:
            setattr(owner, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
