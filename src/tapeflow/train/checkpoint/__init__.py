"""Object-based checkpoints (TF's `tf.train.Checkpoint` and `tf.train.CheckpointManager`).

One module per concern:
  trackable.py   the protocol any object implements to be saved (children, own state)
  graph.py       the walk from the root that names every value ("model/dense/kernel")
  tensor_bundle.py  TensorFlow's file format (.index table + .data), decoded by hand
  object_graph.py  TensorFlow's keys and object graph <-> tapeflow's value paths
  format.py      the files: writing TF's format, reading it and the older `.npz`,
                 atomic writes, the "checkpoint" index, and readers (`list_variables`,
                 `load_variable`, `load_checkpoint`)
  status.py      restoring: all or nothing, deferred restoration, the status objects
  checkpoint.py  `Checkpoint`, the root object
  manager.py     `CheckpointManager`: numbering, recording and rotating saves
  keras_names.py Keras 3's object-graph names of the optimizers (TensorFlow 2.21's)
This package re-exports the public names.
"""
from __future__ import annotations

from . import format, keras_names, manager  # noqa: F401  (submodules, as `checkpoint.format`)
from .checkpoint import Checkpoint
from .format import (CheckpointReader, latest_checkpoint, list_variables, load_checkpoint,
                     load_variable)
from .graph import collect as _collect
from .manager import CheckpointManager
from .status import CheckpointLoadStatus, InitializationOnlyStatus
from .trackable import Trackable

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus",
           "InitializationOnlyStatus", "Trackable", "CheckpointReader", "latest_checkpoint",
           "list_variables", "load_checkpoint", "load_variable"]
