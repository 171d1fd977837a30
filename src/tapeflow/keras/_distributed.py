"""How `Model.fit`, `evaluate` and `predict` run under a `tf.distribute` strategy (the
model's `distribute_strategy`: the strategy whose scope it was created in), as
TensorFlow's Keras does. `Model._step` hands every batch to `replicated_step`:

- input: each global batch (cut from arrays, or an element of a dataset) is shared out
  among the replicas, replica r taking rows r, r + N, ...; every worker reads the same
  global batches and keeps its replica's rows (TensorFlow's AutoShardPolicy.DATA), so
  all workers run the same number of steps even when the last batch has fewer rows than
  there are replicas (a replica may get none);
- the step is `strategy.run(train_step)`: `apply_gradients` sums the replicas'
  gradients (the strategy's one all-reduce path); the compiled loss, a mean over the
  replica's rows, is scaled by the replica's share of the global batch's rows (1/N for
  equal parts), so the summed gradient is exactly that of the global batch's mean loss;
- metrics: under MirroredStrategy the replicas (run in turn in one process) update the
  same metric objects; under MultiWorkerMirroredStrategy each worker's metric states are
  summed across the workers (one all-reduce) before the results are read. Every worker
  logs the same numbers, so callbacks such as EarlyStopping decide alike;
- non-trainable weights a training step updates (BatchNormalization's moving statistics)
  stay mirrored: every replica starts from the same values, all keep the replicas' mean;
- only the chief (worker 0) prints progress bars and writes files (`collective.on_chief`).

A model made in a strategy's scope runs its steps through it even with one replica, so
code that needs a replica context (`tf.nn.compute_average_loss` in a custom `train_step`)
runs the same with or without `mpiexec`.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .._core.convert import convert_to_tensor
from .._core.dtypes import float32, float64
from .._core.tensor import Tensor
from ..distribute.collective import on_chief
from ..distribute.strategy import MultiWorkerMirroredStrategy, PerReplica, ReduceOp, \
    Strategy, get_strategy, has_strategy
from ..ops.array import concat, reshape
from ..ops.creation import constant, zeros_like
from ..ops.indexing import where
from ..ops.math import cast, divide_no_nan, greater, multiply
from ._structure import leaves, map_leaves
from . import _checkpoint_names

# imported for what it registers: Keras 3's checkpoint names of layers and models (every
# Keras model loads this module)
_REGISTERS_CHECKPOINT_NAMES = _checkpoint_names

_replica = threading.local()  # .share: this replica's share of the global batch's rows


def is_chief(strategy: Strategy) -> bool:
    """Whether this process is the chief (worker 0), which alone prints and writes."""
    resolver = strategy.cluster_resolver
    return resolver is None or resolver.task_id == 0


def uses_strategy(model) -> bool:
    """Whether the model's steps run through a strategy: one it was made under, or the
    one whose scope is active (not the default strategy of one replica)."""
    return getattr(model, "_distribute_strategy", None) is not None or has_strategy()


def in_strategy_scope(method):
    """A Model method run inside its strategy's scope (as Keras runs fit, evaluate and
    predict), so variables made lazily (a first build, optimizer slots) are mirrored."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        strategy = self.distribute_strategy
        if strategy is get_strategy():  # its scope is active already (or it is the default)
            return method(self, *args, **kwargs)
        with strategy.scope():
            return method(self, *args, **kwargs)
    return wrapper


def agreed_seed(strategy: Strategy) -> int:
    """A shuffling seed from NumPy's global generator (so utils.set_random_seed fixes it),
    the chief's on every worker: all workers cut the same global batches."""
    seed = int(np.random.randint(2 ** 31))  # drawn everywhere: the generators stay in step
    if isinstance(strategy, MultiWorkerMirroredStrategy) and strategy.num_replicas_in_sync > 1:
        return on_chief(lambda: seed)
    return seed


# --------------------------------------------------------------------------- loss scale


def scale_loss(value):
    """A mean loss as one replica contributes it: times the replica's share of the global
    batch (1/N for equal parts; Keras's `scale_loss_for_distribution`), so the replicas'
    summed gradients are the gradient of the global batch's mean."""
    share = getattr(_replica, "share", None)
    if share is not None:
        return multiply(value, cast(share, value.dtype))
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else multiply(value, cast(1.0 / n, value.dtype))


def unscale_loss(value):
    """The loss a replica reports to the loss tracker: `scale_loss` undone (0 for a
    replica without rows)."""
    share = getattr(_replica, "share", None)
    if share is not None:
        return divide_no_nan(value, cast(share, value.dtype))
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else multiply(value, cast(float(n), value.dtype))


# --------------------------------------------------------------------------- the step


def _rows(structure) -> int:
    for leaf in leaves(structure):
        return int(leaf.shape[0])
    return 0


def split_batch(strategy: Strategy, batch) -> tuple:
    """(this process's replicas' parts of a global batch, their shares of its rows), as
    `strategy.run` takes them: PerReplica values for replicas in one process."""
    rows, n = _rows(batch), strategy.num_replicas_in_sync

    def part(context):
        r = context.replica_id_in_sync_group
        local = map_leaves(lambda t: t if t is None else convert_to_tensor(t)[r::n], batch)
        return local, constant(len(range(r, rows, n)) / rows if rows else 0.0, float32)
    return strategy.experimental_distribute_values_from_function(part)


def first_replica(value):
    """Replica 0's part of a distributed nest (what the model is first built on)."""
    return map_leaves(lambda v: v.values[0] if isinstance(v, PerReplica) else v, value)


def in_batch_order(rows: np.ndarray, n: int) -> np.ndarray:
    """Rows gathered from the replicas (replica 0's, then replica 1's, ...) put back in the
    order of the global batch they were shared out from."""
    out = np.empty_like(rows)
    start = 0
    for r in range(n):
        count = len(range(r, len(rows), n))
        out[r::n] = rows[start:start + count]
        start += count
    return out


def _flat(values: list):
    return concat([reshape(cast(v, float64), [-1]) for v in values], 0)


def _assign_flat(variables: list, flat) -> None:
    start = 0
    for v in variables:
        size = int(np.prod(v.shape, dtype=np.int64))
        v.assign(cast(reshape(flat[start:start + size], list(v.shape)), v.dtype))
        start += size


def replicated_step(model, method, kind: str):
    """`method` (the model's train, test or predict step) as one step on every replica of
    the model's strategy, taking (this process's parts of the batch, their shares) from
    `split_batch` and returning the combined results: the metrics' results over every
    replica's updates (other logged values averaged), or the predictions of the whole
    batch, gathered in replica order.

    A training step's updates of non-trainable weights (BatchNormalization's moving
    statistics) are combined too, as TensorFlow's mirrored variables aggregate them: each
    replica updates from the same values, and all keep the mean of the replicas' results,
    weighted by their shares of the rows (a replica without rows counts for nothing)."""
    strategy = model.distribute_strategy

    def on_replica(data, share, state, start):
        previous = getattr(_replica, "share", None)
        _replica.share = share
        if start is not None:
            _assign_flat(state, start)
        try:
            out = method(data)
        finally:
            _replica.share = previous
        if not state:
            return out
        mine = multiply(_flat(state), cast(share, float64))
        return out, where(greater(share, 0.0), mine, zeros_like(mine))

    def step(data, share):
        state = [v for v in model.weights if not v.trainable] if kind == "train" and \
            strategy.num_replicas_in_sync > 1 else []
        # replicas of one process run in turn: each must start from the step's values
        start = _flat(state) if state and \
            not isinstance(strategy, MultiWorkerMirroredStrategy) else None
        outputs = strategy.run(on_replica, args=(data, share, state, start))
        if state:
            outputs, weighted = outputs
            _assign_flat(state, strategy.reduce(ReduceOp.SUM, weighted, axis=None))
        if kind == "predict":
            return map_leaves(lambda v: strategy.gather(v, 0), outputs)
        results = metric_results(model.metrics, strategy)
        if not isinstance(outputs, dict):
            return map_leaves(lambda v: strategy.reduce(ReduceOp.MEAN, v, axis=None), outputs)
        return {k: results[k] if k in results else
                strategy.reduce(ReduceOp.MEAN, v, axis=None) for k, v in outputs.items()}
    return step


def metric_results(metrics: list, strategy: Strategy) -> dict:
    """Each metric's result over the updates of every replica. Replicas of one process
    share the metric objects, so their states cover them all already; across workers the
    states are combined as Keras's sync-on-read metric variables are (`combined_results`,
    one all-reduce for all the metrics)."""
    if not spans_workers(strategy) or not any(m.variables for m in metrics):
        return {m.name: m.result() for m in metrics}
    return dict(zip([m.name for m in metrics], combined_results(metrics, strategy)))


def spans_workers(strategy) -> bool:
    """Whether `strategy` has replicas in other processes (whose states a read combines)."""
    return isinstance(strategy, MultiWorkerMirroredStrategy) and \
        strategy.num_replicas_in_sync > 1


_reading = threading.local()  # .combined: results being read from combined states


def reading_combined() -> bool:
    """Whether the metric states in place now are combined already (a result read inside
    `combined_results` must not combine them again)."""
    return getattr(_reading, "combined", False)


def combined_results(metrics: list, strategy: Strategy) -> list:
    """Each metric's `result()` over the states of every worker, as TensorFlow reads
    Keras's metric variables (sync-on-read, SUM-aggregated) in a cross-replica context:
    each state variable combined by its aggregation ("sum", "mean", "only_first_replica";
    "none" keeps this worker's value) in one all-reduce for all of them, the results read
    from the combined values, then each worker's own state put back, so that later updates
    add to it as before. Every worker must call it alike (it is a collective)."""
    pairs = [(v, aggregation) for m in metrics
             for v, aggregation in zip(m.variables, _aggregations(m))
             if aggregation != "none"]
    previous = reading_combined()
    _reading.combined = True
    try:
        if not pairs:
            return [m.result() for m in metrics]
        variables = [v for v, _ in pairs]
        local = [v.read_value() for v in variables]
        first = getattr(strategy.cluster_resolver, "task_id", 0) == 0
        sent = [zeros_like(value) if aggregation == "only_first_replica" and not first
                else value for value, (_, aggregation) in zip(local, pairs)]
        total = strategy.reduce(ReduceOp.SUM, _flat(sent), axis=None)
        n = strategy.num_replicas_in_sync
        start, parts = 0, []
        for v, aggregation in pairs:
            size = int(np.prod(v.shape, dtype=np.int64))
            part = total[start:start + size]
            parts.append(multiply(part, cast(1.0 / n, float64)) if aggregation == "mean"
                         else part)
            start += size
        _assign_flat(variables, concat(parts, 0) if parts else total)
        # read now (stateful reads, ordered before the restore in a traced step too)
        results = [map_leaves(convert_to_tensor, m.result()) for m in metrics]
        for v, value in zip(variables, local):
            v.assign(value)
        return results
    finally:
        _reading.combined = previous


def _aggregations(metric) -> list:
    found = getattr(metric, "_aggregations", None)
    return list(found) if found is not None and len(found) == len(metric.variables) \
        else ["sum"] * len(metric.variables)


def gathered_in_batch_order(strategy: Strategy, outputs):
    """Predictions gathered from the replicas, put back in the global batch's order."""
    n = strategy.num_replicas_in_sync
    if n == 1:
        return outputs
    return map_leaves(lambda t: convert_to_tensor(in_batch_order(
        t.numpy() if isinstance(t, Tensor) else np.asarray(t), n)), outputs)
