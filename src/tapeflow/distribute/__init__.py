"""`tf.distribute`: data-parallel training, one replica per MPI process.

Launch with `mpiexec -n 2 python train.py`; the same script runs with one replica
without `mpiexec`. See docs/distributed.md.

Example:
    >>> import tapeflow as tf
    >>> strategy = tf.distribute.MultiWorkerMirroredStrategy()
    >>> with strategy.scope():
    ...     w = tf.Variable([1.0, 2.0])
    >>> strategy.reduce(tf.distribute.ReduceOp.SUM,
    ...                 strategy.run(lambda: w * 2.0), axis=None).numpy()
    array([2., 4.], dtype=float32)
"""
import types as _types

from .strategy import (ClusterResolver, CommunicationOptions,  # noqa: F401
                       DistributedDataset, InputContext, MirroredStrategy,
                       MultiWorkerMirroredStrategy, PerReplica,
                       ReduceOp, ReplicaContext, Strategy, ValueContext,
                       get_replica_context,
                       get_strategy, has_strategy, in_cross_replica_context)

# TensorFlow's tf.distribute.experimental names
experimental = _types.SimpleNamespace(CommunicationOptions=CommunicationOptions,
                                      ValueContext=ValueContext)

__all__ = ["experimental", "MirroredStrategy", "MultiWorkerMirroredStrategy", "Strategy",
           "PerReplica", "ReduceOp",
           "ReplicaContext", "InputContext", "DistributedDataset", "ClusterResolver",
           "get_strategy", "get_replica_context", "has_strategy",
           "in_cross_replica_context"]
