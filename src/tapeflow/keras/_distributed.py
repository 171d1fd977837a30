"""How `Model.fit`, `evaluate` and `predict` run under a `tf.distribute` strategy (the
model's `distribute_strategy`, the strategy whose scope it was created in), as TensorFlow's
Keras does:

- input: every global batch is shared out among the replicas, replica r taking rows
  r, r + N, ... (the rows `Dataset.shard` gives a worker): arrays are cut into global
  batches first (in the same shuffled order on every worker), datasets go through
  `strategy.experimental_distribute_dataset` (each worker reads its own shard);
- the step is `strategy.run(train_step)`: `apply_gradients` sums the replicas' gradients
  (the strategy's one all-reduce path), and the compiled loss is scaled by 1/N so that
  sum is the gradient of the global batch's mean loss;
- metrics are results over every replica's updates: under MirroredStrategy the replicas
  (run in turn in one process) update the same metric objects; under
  MultiWorkerMirroredStrategy each worker's metric states are summed across workers (one
  all-reduce) before the results are read, so every worker logs the same numbers and
  callbacks such as EarlyStopping decide alike;
- only the chief (worker 0) prints progress and writes files (collective.on_chief).
"""
from __future__ import annotations

import functools

import numpy as np

from .._core.convert import convert_to_tensor
from .._core.dtypes import float64
from .._core.tensor import Tensor
from ..data.dataset import Dataset
from ..distribute.collective import on_chief
from ..distribute.strategy import DistributedDataset, MultiWorkerMirroredStrategy, \
    PerReplica, ReduceOp, Strategy, get_strategy
from ..ops.array import concat, reshape
from ..ops.math import cast, multiply


def replicas(strategy: Strategy) -> int:
    return strategy.num_replicas_in_sync


def is_chief(strategy: Strategy) -> bool:
    """Whether this process is the chief (worker 0), which alone prints and writes."""
    resolver = strategy.cluster_resolver
    return resolver is None or resolver.task_id == 0


def _map(fn, structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: _map(fn, v) for k, v in structure.items()}
    return fn(structure)


# --------------------------------------------------------------------------- loss scale


def scale_loss(value):
    """A mean loss as one replica contributes it: divided by the number of replicas, so
    the sum of the replicas' gradients is the gradient of the global batch's mean (Keras's
    `scale_loss_for_distribution`)."""
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else multiply(value, cast(1.0 / n, value.dtype))


def unscale_loss(value):
    """The loss a replica reports: `scale_loss` undone."""
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else multiply(value, cast(float(n), value.dtype))


# --------------------------------------------------------------------------- input


def agreed_seed(strategy: Strategy | None) -> int:
    """A shuffling seed drawn from NumPy's global generator (so utils.set_random_seed fixes
    it), the chief's on every worker: the workers cut the same global batches."""
    seed = int(np.random.randint(2 ** 31))  # drawn everywhere: the generators stay in step
    if isinstance(strategy, MultiWorkerMirroredStrategy) and replicas(strategy) > 1:
        return on_chief(lambda: seed)
    return seed


def distribute_batch(strategy: Strategy, batch):
    """A global batch (a nest of tensors) as `strategy.run` takes it: each replica's rows
    r, r + N, ... (PerReplica values for replicas in one process)."""
    def rows(context):
        step = context.num_replicas_in_sync
        start = context.replica_id_in_sync_group
        return _map(lambda t: t if t is None else convert_to_tensor(t)[start::step], batch)
    return strategy.experimental_distribute_values_from_function(rows)


def distribute_dataset(strategy: Strategy, dataset):
    """This worker's part of a dataset of global batches (a distributed dataset as is)."""
    if isinstance(dataset, DistributedDataset) or not isinstance(dataset, Dataset):
        return dataset
    return strategy.experimental_distribute_dataset(dataset)


def first_replica(value):
    """Replica 0's part of a distributed nest (to build the model on)."""
    return _map(lambda v: v.values[0] if isinstance(v, PerReplica) else v, value)


def in_batch_order(strategy: Strategy, array: np.ndarray) -> np.ndarray:
    """Rows gathered from the replicas (replica 0's rows, then replica 1's, ...) put back
    in the order of the global batch they were shared out from."""
    n = replicas(strategy)
    if n == 1:
        return array
    out = np.empty_like(array)
    start = 0
    for r in range(n):
        count = len(range(r, len(array), n))
        out[r::n] = array[start:start + count]
        start += count
    return out


# --------------------------------------------------------------------------- the step


def replicated_step(model, method, kind: str):
    """`method` (the model's train/test/predict step) run on every replica by the model's
    strategy, with its results combined: the logs from the metrics over every replica's
    updates (other values averaged), predictions gathered in replica order."""
    strategy = model.distribute_strategy

    def step(data):
        outputs = strategy.run(method, args=(data,))
        if kind == "predict":
            return _map(lambda v: strategy.gather(v, 0), outputs)
        results = metric_results(model.metrics, strategy)
        if not isinstance(outputs, dict):
            return _map(lambda v: strategy.reduce(ReduceOp.MEAN, v, axis=None), outputs)
        return {k: results[k] if k in results else
                strategy.reduce(ReduceOp.MEAN, v, axis=None) for k, v in outputs.items()}
    return step


def metric_results(metrics: list, strategy: Strategy) -> dict:
    """Each metric's result over the updates of every replica. Replicas of one process
    share the metric objects, so their state covers them all already; across workers the
    states (totals, counts, confusion counts: all sums, as Keras's metric variables
    aggregate) are summed in one all-reduce, the results read from the sums, and each
    worker's own state put back, so later updates add to it as before."""
    if not isinstance(strategy, MultiWorkerMirroredStrategy) or replicas(strategy) == 1:
        return {m.name: m.result() for m in metrics}
    variables = [v for m in metrics for v in m.variables]
    if not variables:
        return {m.name: m.result() for m in metrics}
    local = [v.read_value() for v in variables]
    flat = concat([reshape(cast(t, float64), [-1]) for t in local], 0)
    total = strategy.reduce(ReduceOp.SUM, flat, axis=None)
    start = 0
    for v in variables:
        size = int(np.prod(v.shape, dtype=np.int64))
        v.assign(cast(reshape(total[start:start + size], list(v.shape)), v.dtype))
        start += size
    results = {m.name: _as_tensor(m.result()) for m in metrics}
    for v, value in zip(variables, local):
        v.assign(value)
    return results


def _as_tensor(value):
    # read now, before the worker's own state is put back
    return value if isinstance(value, Tensor) else convert_to_tensor(value)


def in_strategy_scope(method):
    """A Model method run inside its strategy's scope (as Keras runs fit, evaluate and
    predict), so variables made lazily (a model's first build, optimizer slots, metrics)
    are mirrored."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.distribute_strategy.scope():
            return method(self, *args, **kwargs)
    return wrapper
