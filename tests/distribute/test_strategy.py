"""tf.distribute in one process: the one-replica strategy a script gets outside
`mpiexec`, the contexts, compute_average_loss, and the pieces the MPI job relies on
(dataset sharding, bucketing, the replicas' signature check) checked directly."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.device import current_device
from tapeflow.data.dataset import shard_for_replica
from tapeflow.distribute import collective


@pytest.fixture
def strategy():
    return tf.distribute.MultiWorkerMirroredStrategy()


def test_one_replica_outside_mpiexec(strategy):
    assert strategy.num_replicas_in_sync == 1
    assert strategy.cluster_resolver.task_id == 0
    assert strategy.cluster_resolver.task_type == "worker"
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
        assert tf.distribute.get_strategy() is strategy
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None
    assert v.numpy().tolist() == [1.0, 2.0]
    out = strategy.run(lambda a, b=0.0: a * v + b, args=(2.0,), kwargs={"b": 1.0})
    assert out.numpy().tolist() == [3.0, 5.0]
    assert strategy.experimental_local_results(out) == (out,)


def test_contexts_outside_and_inside_run(strategy):
    assert not tf.distribute.has_strategy()
    default = tf.distribute.get_replica_context()
    assert default is not None and default.num_replicas_in_sync == 1
    assert tf.distribute.get_strategy().num_replicas_in_sync == 1

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        assert ctx.strategy is strategy and ctx.num_replicas_in_sync == 1
        return ctx.replica_id_in_sync_group, ctx.all_reduce(
            tf.distribute.ReduceOp.MEAN, {"x": tf.constant([1.0, 2.0]), "y": [3.0]})
    rid, reduced = strategy.run(replica_fn)
    assert int(rid) == 0 and rid.dtype == tf.int32
    assert reduced["x"].numpy().tolist() == [1.0, 2.0] and reduced["y"][0].numpy() == 3.0
    assert tf.distribute.get_replica_context() is default or not tf.distribute.has_strategy()


def test_reduce_and_gather(strategy):
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert strategy.reduce("SUM", x, axis=None).numpy().tolist() == x.numpy().tolist()
    assert strategy.reduce(tf.distribute.ReduceOp.SUM, x, axis=1).numpy().tolist() == [6, 15]
    assert strategy.reduce(tf.distribute.ReduceOp.MEAN, x, axis=0).numpy().tolist() == \
        [2.5, 3.5, 4.5]
    assert strategy.reduce("MEAN", x, axis=-1).numpy().tolist() == [2.0, 5.0]
    assert strategy.gather(x, 1).numpy().tolist() == x.numpy().tolist()
    assert strategy.gather(x, 0).shape == (2, 3)
    with pytest.raises(ValueError, match="ReduceOp"):
        strategy.reduce("MAX", x, axis=None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        strategy.reduce("SUM", x, axis=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="gather: axis"):
        strategy.gather(x, -3)
    # the engine works after the errors
    assert strategy.reduce("SUM", tf.constant(1.0), axis=None).numpy() == 1.0


def test_collectives_are_stateful_nodes_of_a_traced_step(strategy):
    v = tf.Variable([1.0, 2.0])
    opt = tf.optimizers.SGD(0.5)

    @tf.function
    def step():
        def replica():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(v * v)
            opt.apply_gradients([(tape.gradient(loss, v), v)])
            return tf.distribute.get_replica_context().all_reduce("SUM", loss)
        return strategy.run(replica)
    assert float(step()) == 5.0 and v.numpy().tolist() == [0.0, 0.0]
    graph = step.get_concrete_function().graph
    nodes = [n for n in graph.nodes if n.op == "CollectiveAllReduce"]
    assert nodes and all(n.stateful for n in nodes)


def test_compute_average_loss():
    per_example = tf.constant([1.0, 2.0, 3.0])
    assert tf.nn.compute_average_loss(per_example).numpy() == pytest.approx(2.0)
    assert tf.nn.compute_average_loss(per_example, global_batch_size=6).numpy() == 1.0
    weighted = tf.nn.compute_average_loss(per_example, sample_weight=[2.0, 0.0, 1.0],
                                          global_batch_size=5)
    assert weighted.numpy() == pytest.approx(1.0) and weighted.dtype == tf.float32
    assert tf.nn.compute_average_loss(tf.constant([1.0], tf.float64),
                                      global_batch_size=0).numpy() == 0.0
    assert tf.nn.compute_average_loss(tf.zeros([0])).numpy() == 0.0
    any_batch = tf.function(tf.nn.compute_average_loss,
                            input_signature=[tf.TensorSpec([None], tf.float32)])
    assert any_batch(per_example).numpy() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be an integer"):
        tf.nn.compute_average_loss(per_example, global_batch_size=2.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.nn.compute_average_loss(per_example, global_batch_size=-1)
    with pytest.raises(RuntimeError, match="cross replica context"):
        with tf.distribute.MultiWorkerMirroredStrategy().scope():
            tf.nn.compute_average_loss(per_example)


def test_apply_gradients_in_run_with_one_replica_and_sparse_gradients(strategy):
    with strategy.scope():
        emb = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        opt = tf.optimizers.SGD(1.0)

    def replica():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(emb, [2, 2]))
        grad = tape.gradient(loss, emb)
        assert isinstance(grad, tf.IndexedSlices)
        opt.apply_gradients([(grad, emb)])
    strategy.run(replica)
    assert emb.numpy().tolist() == [[0, 1], [2, 3], [2, 3]]


def test_datasets_are_shared_out_by_replica():
    ds = tf.data.Dataset.range(12).batch(6)
    parts = [[b.tolist() for b in shard_for_replica(ds, 3, i).as_numpy_iterator()]
             for i in range(3)]
    assert parts == [[[0, 3], [6, 9]], [[1, 4], [7, 10]], [[2, 5], [8, 11]]]
    # each step's batches together are that step's global batch
    for step in range(2):
        assert sorted(sum((p[step] for p in parts), [])) == list(range(6 * step, 6 * step + 6))
    def shuffled():  # a fresh pipeline per worker, as each process builds its own
        return tf.data.Dataset.range(8).shuffle(8, seed=3).batch(4, drop_remainder=True)
    halves = [list(shard_for_replica(shuffled(), 2, i).as_numpy_iterator()) for i in (0, 1)]
    for step, whole in enumerate(shuffled().as_numpy_iterator()):
        assert sorted(whole) != list(range(4 * step, 4 * step + 4))  # it did shuffle
        assert sorted(np.concatenate([halves[0][step], halves[1][step]])) == sorted(whole)
    assert shard_for_replica(ds, 1, 0) is ds
    with pytest.raises(ValueError, match="global batch size 6 is not divisible by the 4"):
        shard_for_replica(ds, 4, 0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    dist = strategy.experimental_distribute_dataset(ds)
    assert [b.numpy().tolist() for b in dist] == [list(range(6)), list(range(6, 12))]
    with pytest.raises(TypeError, match="expected a tf.data.Dataset"):
        strategy.experimental_distribute_dataset([1, 2])
    seen = []

    def fn(context):
        seen.append((context.num_input_pipelines, context.input_pipeline_id,
                     context.get_per_replica_batch_size(4)))
        return tf.data.Dataset.range(4).batch(2)
    assert len(list(strategy.distribute_datasets_from_function(fn))) == 2
    assert seen == [(1, 0, 4)]
    with pytest.raises(ValueError, match="not divisible"):
        tf.distribute.InputContext(2, 0, 2).get_per_replica_batch_size(5)


def test_the_signature_check_names_the_first_difference():
    a = collective.signature(["w:0", "b:0"], [np.zeros((2, 3), np.float32), np.zeros(3)])
    b = collective.signature(["w:0", "b:0"], [np.zeros((2, 4), np.float32), np.zeros(3)])
    assert collective.mismatch([a, a]) is None
    message = collective.mismatch([a, a, b])
    assert "tensor 0: replica 0 has 'w:0' of shape [2, 3], dtype float32, replica 2 has " \
           "'w:0' of shape [2, 4]" in message
    assert "replica 0 has 2 tensors and replica 1 has 1" in collective.mismatch([a, a[:1]])


def test_gradients_are_packed_into_buckets():
    pytest.importorskip("mpi4py", reason="the `mpi` extra (mpi4py, mpich) is not installed")
    group = collective.MPIGroup(bucket_bytes=64)
    arrays = [np.zeros(4, np.float32), np.zeros(8, np.float32), np.zeros(40, np.float32),
              np.zeros(2, np.float64), np.zeros(2, np.float64)]
    assert group.buckets(arrays) == [[0, 1], [2], [3, 4]]
    out = group.allreduce([np.arange(3.0), np.ones((2, 2), np.float32), np.float32(2.0)],
                          ("a", "b", "c"))
    assert [o.shape for o in out] == [(3,), (2, 2), ()] and out[0].tolist() == [0, 1, 2]
    assert group.stats["messages"] == 2  # float64 then float32: one message per bucket


# --------------------------------------------------------------------------- MirroredStrategy


def _train_mirrored(strategy, traced: bool):
    from tests.distribute import mpi_job  # the MPI job's model: dense and embedding grads
    x, ids, y = mpi_job.problem()
    with strategy.scope():
        m = mpi_job.make_model()
        opt = tf.optimizers.SGD(0.05, momentum=0.9)
    names = sorted(m)

    def step(bx, bids, by):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(mpi_job.per_example_loss(m, bx, bids, by),
                                              global_batch_size=mpi_job.GLOBAL_BATCH)
        grads = tape.gradient(loss, [m[k] for k in names])
        opt.apply_gradients(zip(grads, [m[k] for k in names]))
        return loss

    def distributed(batch):
        return strategy.reduce("SUM", strategy.run(step, args=batch), axis=None)
    if traced:
        distributed = tf.function(distributed)
    ds = tf.data.Dataset.from_tensor_slices((x, ids, y)).repeat(10).batch(mpi_job.GLOBAL_BATCH)
    losses = [float(distributed(b)) for b in strategy.experimental_distribute_dataset(ds)]
    traces = distributed.experimental_get_tracing_count() if traced else 0
    return {k: m[k].numpy() for k in names}, losses, int(opt.iterations), traces


def test_mirrored_replicas_on_logical_cpus_match_one_replica(two_cpus):
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 2
    assert strategy.extended.worker_devices == ("/device:CPU:0", "/device:CPU:1")
    single, single_losses, _, _ = _train_mirrored(tf.distribute.MirroredStrategy(["/cpu:0"]),
                                                  False)
    for traced in (False, True):
        params, losses, iterations, traces = _train_mirrored(strategy, traced)
        assert iterations == 10  # the summed gradients applied once a step
        assert traces == (1 if traced else 0)
        np.testing.assert_allclose(losses, single_losses, rtol=2e-5)
        for k in single:
            np.testing.assert_allclose(params[k], single[k], rtol=2e-5, atol=2e-6)
    assert single_losses[-1] < 0.5 * single_losses[0]


def test_mirrored_values_datasets_and_reductions(two_cpus):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    batches = list(strategy.experimental_distribute_dataset(tf.data.Dataset.range(8).batch(4)))
    assert isinstance(batches[0], tf.distribute.PerReplica)
    assert [[v.numpy().tolist() for v in strategy.experimental_local_results(b)]
            for b in batches] == [[[0, 2], [1, 3]], [[4, 6], [5, 7]]]
    from_fn = strategy.distribute_datasets_from_function(
        lambda ctx: tf.data.Dataset.range(8).batch(ctx.get_per_replica_batch_size(4)))
    assert [[v.numpy().tolist() for v in b.values] for b in from_fn] == \
        [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    # each replica runs inside its device's block (tf.device)
    devices = []
    strategy.run(lambda: devices.append(current_device()))
    assert devices == ["/device:CPU:0", "/device:CPU:1"]
    ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    assert [int(v) for v in ids.values] == [0, 1]
    value = strategy.run(lambda: tf.fill([1 + int(tf.distribute.get_replica_context()
                                                   .replica_id_in_sync_group), 2], 3.0))
    assert strategy.reduce("SUM", value, axis=0).numpy().tolist() == [9.0, 9.0]
    assert strategy.reduce("MEAN", value, axis=0).numpy().tolist() == [3.0, 3.0]
    assert strategy.gather(value, 0).shape == (3, 2)
    pair = tf.distribute.PerReplica([tf.constant([1.0]), tf.constant([3.0])])
    assert strategy.reduce("SUM", pair, axis=None).numpy().tolist() == [4.0]
    assert strategy.reduce("MEAN", pair, axis=None).numpy().tolist() == [2.0]
    assert strategy.reduce("MEAN", tf.constant(5.0), axis=None).numpy() == 5.0
    with pytest.raises(ValueError, match="non-DistributedValues"):
        strategy.reduce("SUM", tf.constant(5.0), axis=None)
    with pytest.raises(NotImplementedError, match="strategy.reduce"):
        strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", 1.0))


def test_mirrored_devices_are_checked_and_replicas_must_agree(two_cpus):
    with pytest.raises(ValueError, match="empty list"):
        tf.distribute.MirroredStrategy([])
    with pytest.raises(ValueError, match="unknown device type 'ABC'"):
        tf.distribute.MirroredStrategy(["/device:ABC:0"])
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
    opt = tf.optimizers.SGD(1.0)

    def different():
        replica = int(tf.distribute.get_replica_context().replica_id_in_sync_group)
        opt.apply_gradients([(tf.constant(1.0), [a, b][replica])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="replica 0 gives 'a:0' as "
                                                             "variable 0, replica 1 'b:0'"):
        strategy.run(different)

    def only_first():
        if int(tf.distribute.get_replica_context().replica_id_in_sync_group) == 0:
            opt.apply_gradients([(tf.constant(1.0), a)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="only some replicas"):
        strategy.run(only_first)
    assert (a.numpy(), b.numpy()) == (1.0, 2.0)  # nothing applied by the failed runs
    strategy.run(lambda: opt.apply_gradients([(tf.constant(0.5), a)]))
    assert a.numpy() == 0.0  # 1 - (0.5 + 0.5)
