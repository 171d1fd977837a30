"""Strategies: TensorFlow's `tf.distribute` API over a group of replicas.

`MultiWorkerMirroredStrategy` runs one replica per MPI process (`mpiexec -n 4 python
train.py`); outside `mpiexec` it is a strategy of one replica, so the same script runs
anywhere. Inside `strategy.scope()` new variables are mirrored: every replica starts from
replica 0's values. `strategy.run(fn)` calls `fn` in a replica context, where
`optimizer.apply_gradients` sums the gradients over the replicas before applying them
(`aggregate_gradients`), as TensorFlow does; a loss scaled with `nn.compute_average_loss`
makes that sum the gradient of the global batch's mean loss.

Each process holds only its own replica's values, so `run` returns plain tensors (what
TensorFlow returns when a worker has one local replica) and `reduce`, `gather` and the
replica context's `all_reduce` combine them with collectives (collective.py).
"""
from __future__ import annotations

import contextlib
import enum
import json
import os
import threading
import warnings

from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.device import device as _device, list_logical_devices, resolve
from .._core.dtypes import int32, int64
from .._core.errors import InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.tensor import Tensor
from ..data.dataset import Dataset, shard_for_replica
from ..function import init_scope
from ..ops.array import concat, shape, transpose
from ..ops.creation import constant
from ..ops.math import cast, divide_no_nan, multiply
from ..ops.reduction import add_n, reduce_sum
from . import collective
from .collective import Group, LocalGroup
from .overlap import GradientBuckets

DEFAULT_BYTES_PER_PACK = 4 << 20  # bucket size when CommunicationOptions leaves it at 0


class ReduceOp(enum.Enum):
    """How `reduce` and `all_reduce` combine the replicas' values: `SUM` or `MEAN`."""

    SUM = "SUM"
    MEAN = "MEAN"


_state = threading.local()  # .stack: strategies whose scope is entered; .replica: context


def _stack() -> list:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


class ClusterResolver:
    """Where this worker sits in the job (`strategy.cluster_resolver`): `task_type`
    ("worker"), `task_id` (the MPI rank) and the number of workers."""

    def __init__(self, task_id: int, num_workers: int):
        self.task_type = "worker"
        self.task_id = task_id
        self.num_workers = num_workers
        self.rpc_layer = "mpi"

    def __repr__(self) -> str:
        return f"ClusterResolver(task_type='worker', task_id={self.task_id}, " \
               f"num_workers={self.num_workers})"


class InputContext:
    """What `distribute_datasets_from_function`'s function is told: how many input
    pipelines there are, which one it builds, and the number of replicas."""

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """`global_batch_size` split evenly over the replicas (ValueError if it cannot be).

        Example:
            >>> tf.distribute.InputContext(2, 0, 2).get_per_replica_batch_size(8)
            4
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible "
                             f"by `num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync


class ValueContext:
    """What `experimental_distribute_values_from_function`'s function is told: which
    replica the value is for and how many replicas there are."""

    def __init__(self, replica_id_in_sync_group: int = 0, num_replicas_in_sync: int = 1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync

    def __repr__(self) -> str:
        return f"ValueContext(replica_id_in_sync_group={self.replica_id_in_sync_group}, " \
               f"num_replicas_in_sync={self.num_replicas_in_sync})"


class DistributedDataset:
    """This worker's part of a dataset (`experimental_distribute_dataset`): iterate it
    eagerly or in a traced `for` loop; each element is this replica's batch."""

    def __init__(self, local: Dataset):
        self._local = local

    @property
    def element_spec(self):
        return self._local.element_spec

    def cardinality(self):
        return self._local.cardinality()

    def __iter__(self):
        return iter(self._local)

    def _graph_iteration(self):  # a traced `for x in dist_dataset:` (autograph's protocol)
        return self._local._graph_iteration()

    def __repr__(self) -> str:
        return f"<DistributedDataset element_spec={self.element_spec}>"


class CommunicationOptions:
    """How a strategy's collectives run (`tf.distribute.experimental.CommunicationOptions`):
    `bytes_per_pack` is the size of the buckets gradients are packed into (0: tapeflow's
    default, 4 MiB); `timeout_seconds` and `implementation` are accepted for TensorFlow's
    code and not used (MPI has no timeout; a failing rank aborts the job instead).

    Example:
        >>> tf.distribute.experimental.CommunicationOptions(bytes_per_pack=1 << 20)
        CommunicationOptions(bytes_per_pack=1048576)
    """

    def __init__(self, bytes_per_pack: int = 0, timeout_seconds=None, implementation=None):
        if int(bytes_per_pack) < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got {bytes_per_pack}")
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def __repr__(self) -> str:
        return f"CommunicationOptions(bytes_per_pack={self.bytes_per_pack})"


class ReplicaContext:
    """The context `strategy.run` calls its function in (`get_replica_context()`).

    Example:
        >>> s = tf.distribute.MultiWorkerMirroredStrategy()
        >>> s.run(lambda: tf.distribute.get_replica_context().all_reduce(
        ...     "sum", tf.constant(3.0))).numpy()   # one process: one replica
        3.0
    """

    def __init__(self, strategy: "Strategy", replica_id: int, buckets=None, merge=None):
        self._strategy = strategy
        self._replica_id = replica_id
        self._buckets = buckets  # GradientBuckets of an eager multi-process run, or None
        self._merge = merge      # _Merge of a MirroredStrategy run (replicas in turn)

    @property
    def strategy(self) -> "Strategy":
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> Tensor:
        return constant(self._replica_id, dtype=int32)

    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a tensor, IndexedSlices, or a nest of them) combined over the replicas:
        dense tensors summed in one bucketed all-reduce, IndexedSlices gathered."""
        if self._merge is not None and self.num_replicas_in_sync > 1:
            raise NotImplementedError(
                "MirroredStrategy runs its replicas in turn in one thread, so a replica "
                "cannot wait for the others' values inside `run`: reduce run's result with "
                "strategy.reduce, or use MultiWorkerMirroredStrategy (one replica per "
                "process)")
        return self._strategy._all_reduce(_reduce_op(reduce_op), value)

    def __repr__(self) -> str:
        return f"<ReplicaContext replica {self._replica_id} of {self.num_replicas_in_sync}>"


def _reduce_op(op) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
        return ReduceOp[op.upper()]
    raise ValueError(f"reduce_op must be tf.distribute.ReduceOp.SUM or MEAN, got {op!r}")


def _leaves(value, path: str = "value") -> list:
    """(path, leaf) pairs of a nest of lists, tuples and dicts, IndexedSlices as leaves."""
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _leaves(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [p for k in sorted(value) for p in _leaves(value[k], f"{path}[{k!r}]")]
    return [(path, value)]


def _rebuild(value, flat: list):
    if isinstance(value, (list, tuple)):
        items = [_rebuild(v, flat) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: _rebuild(value[k], flat) for k in sorted(value)}
    return flat.pop(0)


class _Mirror:
    """The variable observer a strategy's scope installs: a new variable takes replica
    0's value, so every replica starts equal (TensorFlow's mirrored variables)."""

    def __init__(self, group: Group):
        self._group = group

    def variable_created(self, var) -> None:
        if self._group.size > 1:
            with init_scope():  # created while tracing: the value is eager already
                var.assign(self._group.broadcast(var.numpy(), var.name))


class Strategy:
    """A set of replicas that run the same step on different data (the base of the
    strategies; also the default strategy of one replica)."""

    def __init__(self, group: Group, bytes_per_pack: int = 0):
        self._group = group
        self._mirror = _Mirror(group)
        self._bytes_per_pack = bytes_per_pack or DEFAULT_BYTES_PER_PACK
        # eager runs of several processes start each bucket's all-reduce during the
        # backward pass (overlap.py); False sums them all at apply_gradients (benchmarks)
        self._overlap = True

    # --- where this replica is
    @property
    def num_replicas_in_sync(self) -> int:
        return self._group.size

    @property
    def cluster_resolver(self) -> ClusterResolver:
        return ClusterResolver(self._group.rank, self._group.size)

    # --- variables
    @contextlib.contextmanager
    def scope(self):
        """Make this the current strategy; variables created inside are mirrored."""
        _stack().append(self)
        ctx.variable_observers.append(self._mirror)
        try:
            yield self
        finally:
            ctx.variable_observers.remove(self._mirror)
            _stack().pop()

    # --- running replicas
    def run(self, fn, args=(), kwargs=None):
        """`fn(*args, **kwargs)` on this process's replica, in a replica context;
        returns its result (this replica's values)."""
        kwargs = kwargs or {}
        previous = getattr(_state, "replica", None)
        buckets = None
        if self._overlap and self._group.size > 1 and ctx.graph is None:
            buckets = GradientBuckets(self._group, self._bytes_per_pack)
            ctx.gradient_observers.append(buckets)
        with self.scope():
            _state.replica = ReplicaContext(self, self._group.rank, buckets)
            try:
                result = fn(*args, **kwargs)
            finally:
                _state.replica = previous
                if buckets is not None:
                    ctx.gradient_observers.remove(buckets)
        if buckets is not None:  # every started all-reduce completes, used or not
            buckets.take()
        return result

    def experimental_local_results(self, value) -> tuple:
        """The values of this process's replicas (here one)."""
        return (value,)

    # --- combining values across replicas
    def reduce(self, reduce_op, value, axis=None):
        """`value` of every replica combined into one tensor (the same on every worker):
        with `axis`, also reduced along that axis (MEAN over all replicas' elements).

        Example:
            >>> s = tf.distribute.MultiWorkerMirroredStrategy()
            >>> s.reduce("MEAN", tf.constant([1.0, 3.0]), axis=0).numpy()
            2.0
        """
        op = _reduce_op(reduce_op)
        value = convert_to_tensor(value)
        if axis is None:
            return self._all_reduce(op, value)
        axis = int(axis) + (value.ndim if int(axis) < 0 else 0)
        if not 0 <= axis < value.ndim:
            raise InvalidArgumentError(f"reduce: axis {axis} is out of range for a value of "
                                       f"shape {list(value.shape)}")
        total = self._all_reduce(ReduceOp.SUM, reduce_sum(value, axis=axis))
        if op is ReduceOp.SUM:
            return total
        count = self._all_reduce(ReduceOp.SUM, constant(value.shape[axis], dtype=int64))
        return divide_no_nan(total, cast(count, total.dtype))

    def gather(self, value, axis: int):
        """Every replica's `value` concatenated along `axis`, in replica order."""
        value = convert_to_tensor(value)
        axis = int(axis) + (value.ndim if int(axis) < 0 else 0)
        if not 0 <= axis < value.ndim:
            raise InvalidArgumentError(f"gather: axis {axis} is out of range for a value of "
                                       f"shape {list(value.shape)}")
        if axis == 0:
            return collective.all_gather(self._group, value)
        perm = [axis] + [i for i in range(value.ndim) if i != axis]
        back = [perm.index(i) for i in range(value.ndim)]
        return transpose(collective.all_gather(self._group, transpose(value, perm)), back)

    def _all_reduce(self, op: ReduceOp, value):
        leaves = _leaves(value)
        dense = [(p, convert_to_tensor(v)) for p, v in leaves
                 if not isinstance(v, IndexedSlices)]
        sums = iter(collective.all_reduce_sum(self._group, [t for _, t in dense],
                                              [p for p, _ in dense]))
        size = self._group.size
        out = []
        for _, v in leaves:
            if isinstance(v, IndexedSlices):
                v = IndexedSlices(collective.all_gather(self._group, v.values),
                                  collective.all_gather(self._group, v.indices), v.dense_shape)
                out.append(v if op is ReduceOp.SUM else v * (1.0 / size))
            else:
                s = next(sums)
                out.append(s if op is ReduceOp.SUM else divide_no_nan(s, cast(size, s.dtype)))
        return _rebuild(value, out)

    # --- input
    def experimental_distribute_dataset(self, dataset: Dataset, options=None):
        """This worker's part of `dataset`: a dataset batched with the global batch size
        yields this replica's slice of every global batch (batch / replicas rows, the
        rows `shard` gives it); an unbatched one every replicas-th element."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"experimental_distribute_dataset: expected a tf.data.Dataset, "
                            f"got {type(dataset).__name__}")
        return DistributedDataset(shard_for_replica(dataset, self._group.size,
                                                    self._group.rank))

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """`dataset_fn(InputContext)` builds this worker's dataset (it shards and batches
        with the per-replica batch size itself)."""
        dataset = dataset_fn(InputContext(self._group.size, self._group.rank,
                                          self._group.size))
        if not isinstance(dataset, Dataset):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must return a "
                            f"tf.data.Dataset, got {type(dataset).__name__}")
        return DistributedDataset(dataset)

    def experimental_distribute_values_from_function(self, value_fn):
        """`value_fn(ValueContext)` called for this process's replica: its value, as
        `run` takes it (e.g. this replica's rows of a global batch).

        Example:
            >>> s = tf.distribute.MultiWorkerMirroredStrategy()
            >>> s.experimental_distribute_values_from_function(
            ...     lambda ctx: ctx.replica_id_in_sync_group)
            0
        """
        return value_fn(ValueContext(self._group.rank, self._group.size))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} num_replicas_in_sync={self.num_replicas_in_sync}>"


class MultiWorkerMirroredStrategy(Strategy):
    """One replica per MPI process (`mpiexec -n 2 python train.py`), or one replica when
    the script is not launched by MPI. With several processes, an uncaught exception on
    any of them prints its rank and aborts the whole job (no rank waits forever).

    Example:
        >>> strategy = tf.distribute.MultiWorkerMirroredStrategy()
        >>> with strategy.scope():
        ...     v = tf.Variable(1.0)     # replica 0's value on every replica
        >>> strategy.num_replicas_in_sync, strategy.cluster_resolver.task_id
        (1, 0)
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        options = communication_options or CommunicationOptions()
        super().__init__(collective.world(), options.bytes_per_pack)
        if self._group.size == 1:
            warn_if_tf_config_names_workers()


_tf_config_warned = False  # the TF_CONFIG warning is given once per process


def tf_config_workers(text: str | None) -> int:
    """How many workers (the chief counted) the cluster of a TF_CONFIG value names; 0 when
    it is unset or not TensorFlow's JSON cluster description.

    Example:
        >>> tf_config_workers('{"cluster": {"worker": ["a:1", "b:2"]}}')
        2
    """
    try:
        cluster = json.loads(text or "{}").get("cluster") or {}
        return sum(len(cluster.get(kind) or ()) for kind in ("chief", "worker"))
    except (ValueError, AttributeError, TypeError):
        return 0


def warn_if_tf_config_names_workers() -> None:
    """Warn once when TF_CONFIG names several workers but this process runs alone:
    tapeflow's workers are MPI processes, not TF_CONFIG's addresses, so each process
    started that way would train as a separate one-worker job."""
    global _tf_config_warned
    workers = tf_config_workers(os.environ.get("TF_CONFIG"))
    if workers <= 1 or _tf_config_warned:
        return
    _tf_config_warned = True
    warnings.warn(
        f"MultiWorkerMirroredStrategy: TF_CONFIG names {workers} workers, but this process "
        f"was not launched by mpiexec, so it trains alone (num_replicas_in_sync=1) and each "
        f"process started this way runs as a separate single-worker job: tapeflow's "
        f"workers are MPI processes and TF_CONFIG's addresses are not used. Launch the job "
        f"with `mpiexec -n {workers} python <your script>` instead (and leave TF_CONFIG "
        f"unset).", UserWarning, stacklevel=3)


class PerReplica:
    """The values of a one-process strategy's replicas: what `MirroredStrategy.run`
    returns and what its distributed datasets yield (`.values`, one per replica)."""

    def __init__(self, values):
        self.values = tuple(values)

    # a composite of its tensors: traced functions, loops and `nest` see through it
    def _composite_flatten(self) -> list:
        return list(self.values)

    def _composite_unflatten(self, leaves) -> "PerReplica":
        return PerReplica([next(leaves) for _ in self.values])

    def __repr__(self) -> str:
        inner = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self.values))
        return f"PerReplica:{{\n{inner}\n}}"


def _split(value, n: int, index: int):
    """Replica `index`'s rows of a global batch: rows index, index + n, ... (the rows
    `shard` gives a worker), for every tensor of a nest."""
    def rows(x):
        return x if isinstance(x, PerReplica) else convert_to_tensor(x)[index::n]
    return _rebuild(value, [rows(v) for _, v in _leaves(value)])


def _regroup(outputs: list):
    """The replicas' results of `run` as one structure with PerReplica leaves."""
    flat = [[v for _, v in _leaves(o)] for o in outputs]
    return _rebuild(outputs[0], [PerReplica(vs) for vs in zip(*flat)])


class _Merge:
    """The gradients that replicas running in turn pass to `apply_gradients`: held until
    the last replica's call, which sums each variable's gradients over the replicas and
    applies them once (TensorFlow's merge_call, for replicas that run one after another)."""

    def __init__(self, num_replicas: int):
        self._n = num_replicas
        self._calls = [0] * num_replicas
        self._held: dict = {}

    def deposit(self, replica: int, pairs: list):
        call = self._calls[replica]
        self._calls[replica] += 1
        held = self._held.setdefault(call, [])
        held.append(list(pairs))
        if replica < self._n - 1:
            return None
        del self._held[call]
        if len(held) != self._n:
            raise InvalidArgumentError(f"apply_gradients: {len(held)} of {self._n} replicas "
                                       f"applied gradients in call {call} of this run")
        first = held[0]
        for r, other in enumerate(held[1:], 1):
            for k in range(max(len(first), len(other))):
                a = first[k][1] if k < len(first) else None
                b = other[k][1] if k < len(other) else None
                if a is not b:
                    raise InvalidArgumentError(
                        f"apply_gradients: replicas disagree on the variables: replica 0 "
                        f"gives {'nothing' if a is None else repr(a.name)} as variable {k}, "
                        f"replica {r} {'nothing' if b is None else repr(b.name)}")
        out = []
        for k, (_, var) in enumerate(first):
            grads = [h[k][0] for h in held]
            if all(isinstance(g, IndexedSlices) for g in grads):
                total = IndexedSlices(concat([g.values for g in grads], 0),
                                      concat([g.indices for g in grads], 0),
                                      grads[0].dense_shape)
            else:
                total = add_n([convert_to_tensor(g, dtype=var.dtype) for g in grads])
            out.append((total, var))
        return out

    def check_done(self) -> None:
        if self._held:
            raise InvalidArgumentError(
                "apply_gradients: only some replicas applied gradients in this run (every "
                "replica must call it the same number of times)")


class MirroredStrategy(Strategy):
    """Replicas on the devices of one process (`devices`, e.g. ["/cpu:0", "/cpu:1"] after
    `tf.config.set_logical_device_configuration`; None: every logical GPU, else every
    logical CPU). `run` calls the function once per replica, in turn, on that replica's
    device and its part of the input; `apply_gradients` applies the sum of the replicas'
    gradients once, after the last replica.

    Example:
        >>> strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
        >>> strategy.num_replicas_in_sync
        1
    """

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            found = list_logical_devices("GPU") or list_logical_devices("CPU")
            devices = [d.name for d in found]
        devices = [getattr(d, "name", d) for d in devices]
        if not devices:
            raise ValueError("MirroredStrategy: got an empty list of devices")
        for name in devices:
            if not isinstance(name, str):
                raise ValueError(f"MirroredStrategy: devices must be device names, got "
                                 f"{name!r}")
            resolve(name)  # an unknown device type raises here, naming the known ones
        super().__init__(LocalGroup())
        self._devices = tuple(devices)

    @property
    def num_replicas_in_sync(self) -> int:
        return len(self._devices)

    @property
    def extended(self):
        return self

    @property
    def worker_devices(self) -> tuple:
        return self._devices

    @property
    def cluster_resolver(self):
        return None

    def run(self, fn, args=(), kwargs=None):
        kwargs = kwargs or {}
        n = len(self._devices)
        merge = _Merge(n)
        previous = getattr(_state, "replica", None)
        outputs = []
        with self.scope():
            try:
                for r, name in enumerate(self._devices):
                    _state.replica = ReplicaContext(self, r, merge=merge)
                    pick = (lambda v, r=r: v.values[r] if isinstance(v, PerReplica) else v)
                    with _device(name):
                        outputs.append(fn(*_rebuild(list(args), [pick(v) for _, v in
                                                                 _leaves(list(args))]),
                                          **_rebuild(kwargs, [pick(v) for _, v in
                                                              _leaves(kwargs)])))
            finally:
                _state.replica = previous
        merge.check_done()
        return outputs[0] if n == 1 else _regroup(outputs)

    def experimental_local_results(self, value) -> tuple:
        return value.values if isinstance(value, PerReplica) else (value,)

    def reduce(self, reduce_op, value, axis=None):
        op = _reduce_op(reduce_op)
        n = len(self._devices)
        if not isinstance(value, PerReplica):
            if axis is None and op is ReduceOp.SUM and n > 1:
                raise ValueError(f"A non-DistributedValues value {value!r:.60} cannot be "
                                 f"reduced with the given reduce op {op}.")
            value = PerReplica([value] * n)
        values = [convert_to_tensor(v) for v in value.values]
        if axis is None:
            total = add_n(values) if n > 1 else values[0]
            return total if op is ReduceOp.SUM else divide_no_nan(total, cast(n, total.dtype))
        axis = int(axis)
        total = add_n([reduce_sum(v, axis=axis) for v in values])
        if op is ReduceOp.SUM:
            return total
        count = sum(int(v.shape[axis]) for v in values)
        return divide_no_nan(total, cast(count, total.dtype))

    def gather(self, value, axis: int):
        values = value.values if isinstance(value, PerReplica) else (value,) * \
            len(self._devices)
        return concat([convert_to_tensor(v) for v in values], int(axis))

    def experimental_distribute_dataset(self, dataset: Dataset, options=None):
        """Each element (a global batch) split into one PerReplica batch per replica:
        replica r gets rows r, r + N, ... (as a worker's `shard` would)."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"experimental_distribute_dataset: expected a tf.data.Dataset, "
                            f"got {type(dataset).__name__}")
        n = len(self._devices)
        if n == 1:
            return DistributedDataset(dataset)
        return _SplitDataset(dataset, lambda e: _regroup([_split(e, n, r) for r in range(n)]))

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """`dataset_fn(InputContext(1, 0, N))` builds per-replica batches; each step
        takes N consecutive elements, one per replica."""
        n = len(self._devices)
        dataset = dataset_fn(InputContext(1, 0, n))
        if not isinstance(dataset, Dataset):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must return a "
                            f"tf.data.Dataset, got {type(dataset).__name__}")
        if n == 1:
            return DistributedDataset(dataset)
        return _SplitDataset(dataset.batch(n, drop_remainder=True),
                             lambda e: _regroup([_rebuild(e, [v[r] for _, v in _leaves(e)])
                                                 for r in range(n)]))

    def experimental_distribute_values_from_function(self, value_fn):
        """`value_fn(ValueContext(r, N))` for every replica r, as one structure of
        PerReplica values (the value itself with one replica)."""
        n = len(self._devices)
        values = [value_fn(ValueContext(r, n)) for r in range(n)]
        return values[0] if n == 1 else _regroup(values)

    def __repr__(self) -> str:
        return f"<MirroredStrategy devices={list(self._devices)}>"


class _SplitDataset(DistributedDataset):
    """A dataset whose every element is split into PerReplica values, eagerly and in a
    traced `for` loop."""

    def __init__(self, local: Dataset, split):
        super().__init__(local)
        self._split = split

    def __iter__(self):
        return (self._split(e) for e in self._local)

    def _graph_iteration(self):
        return _SplitIteration(self._local._graph_iteration(), self._split)


class _SplitIteration:
    def __init__(self, inner, split):
        self._inner, self._split = inner, split
        self.element_spec = inner.element_spec

    def get_next(self):
        has_value, element = self._inner.get_next()
        return has_value, self._split(element)

    def close(self) -> None:
        self._inner.close()


_DEFAULT = Strategy(LocalGroup())


def get_strategy() -> Strategy:
    """The strategy whose scope (or `run`) is active, else the default of one replica."""
    stack = _stack()
    return stack[-1] if stack else _DEFAULT


def has_strategy() -> bool:
    """Whether a strategy other than the default is active."""
    return bool(_stack())


def get_replica_context() -> ReplicaContext | None:
    """The replica context inside `strategy.run`; None in a strategy's scope outside
    `run` (the cross-replica context); the default one-replica context otherwise."""
    replica = getattr(_state, "replica", None)
    if replica is not None:
        return replica
    return None if _stack() else ReplicaContext(_DEFAULT, 0)


def in_cross_replica_context() -> bool:
    """True inside a strategy's scope but outside `run`."""
    return get_replica_context() is None


def aggregate_gradients(pairs: list) -> list:
    """`(gradient, variable)` pairs with each gradient summed over the replicas of the
    `run` in progress (what `apply_gradients` does first): dense gradients in one
    bucketed all-reduce, IndexedSlices gathered. Unchanged outside `run` or with one
    replica. Under MirroredStrategy, whose replicas run in turn, None for all replicas but
    the last, whose call gets the sums of every replica's gradients (applied once)."""
    replica = getattr(_state, "replica", None)
    if replica is None or replica.num_replicas_in_sync == 1:
        return pairs
    if replica._merge is not None:
        return replica._merge.deposit(replica._replica_id, pairs)
    group = replica.strategy._group
    out = list(pairs)
    dense = []
    for i, (g, v) in enumerate(pairs):
        if isinstance(g, IndexedSlices):
            continue
        done = replica._buckets.summed(g) if replica._buckets is not None else None
        if done is not None:  # summed while the backward pass ran
            out[i] = (done, v)
        else:
            dense.append(i)
    sums = collective.all_reduce_sum(group, [convert_to_tensor(pairs[i][0],
                                                               dtype=pairs[i][1].dtype)
                                             for i in dense],
                                     [pairs[i][1].name for i in dense])
    for i, s in zip(dense, sums):
        out[i] = (s, pairs[i][1])
    for i, (g, v) in enumerate(pairs):
        if isinstance(g, IndexedSlices):
            out[i] = (IndexedSlices(collective.all_gather(group, g.values),
                                    collective.all_gather(group, g.indices), g.dense_shape),
                      v)
    return out


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of `per_example_loss` (times `sample_weight`) divided by
    `global_batch_size` (default: its first dimension times the number of replicas);
    0 when that is 0. Summing the replicas' gradients of this loss gives the gradient of
    the global batch's mean.

    Example:
        >>> tf.nn.compute_average_loss(tf.constant([1.0, 2.0, 3.0]),
        ...                            global_batch_size=6).numpy()
        1.0
    """
    loss = convert_to_tensor(per_example_loss)
    dtype = loss.dtype
    if loss.ndim == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor "
                         f"with at least rank 1, got shape {list(loss.shape)}")
    if sample_weight is not None:
        loss = cast(multiply(loss, cast(convert_to_tensor(sample_weight), dtype)), dtype)
    if global_batch_size is None:
        if has_strategy() and in_cross_replica_context():
            raise RuntimeError("You are calling `compute_average_loss` in cross replica "
                               "context, while it was expected to be called in replica "
                               "context.")
        replicas = get_strategy().num_replicas_in_sync
        rows = loss.shape[0]  # unknown in a graph traced for any batch size: read it then
        global_batch_size = rows * replicas if rows is not None else \
            multiply(shape(loss)[0], replicas)
    size = convert_to_tensor(global_batch_size)
    if size.ndim != 0:
        raise InvalidArgumentError(f"compute_average_loss: global_batch_size must be "
                                   f"scalar, got shape {list(size.shape)}")
    if not size.dtype.is_integer:
        raise InvalidArgumentError(f"compute_average_loss: global_batch_size must be an "
                                   f"integer, got {size.dtype.name}")
    if isinstance(global_batch_size, int) and global_batch_size < 0:
        raise InvalidArgumentError(f"compute_average_loss: global_batch_size must be "
                                   f"non-negative, got {global_batch_size}")
    return divide_no_nan(reduce_sum(loss), cast(size, dtype))
