"""Checks that need several MPI processes, run by tests/distribute/test_mpi.py as
`mpiexec -n 2 python mpi_job.py OUT_DIR` (one launch for all of them, to keep the suite
fast). Each rank writes OUT_DIR/rank<r>.json with what it saw; the test compares.

`python mpi_job.py --fail` is the fault case: rank 1 raises while rank 0 waits in a
collective; the job must end within seconds, naming rank 1.
"""
import json
import os
import sys

import numpy as np

import tapeflow as tf

STEPS, GLOBAL_BATCH, SEED = 20, 16, 7


def problem():
    """A seeded regression problem: a global batch of inputs, ids, targets."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((GLOBAL_BATCH, 5)).astype(np.float32)
    ids = rng.integers(0, 6, GLOBAL_BATCH).astype(np.int64)
    y = rng.standard_normal((GLOBAL_BATCH, 1)).astype(np.float32)
    return x, ids, y


def make_model():
    """Dense weights and an embedding table (whose gradient is IndexedSlices)."""
    rng = np.random.default_rng(SEED + 1)
    return {"w": tf.Variable(rng.standard_normal((5, 3)).astype(np.float32), name="w"),
            "b": tf.Variable(np.zeros(3, np.float32), name="b"),
            "emb": tf.Variable(rng.standard_normal((6, 3)).astype(np.float32), name="emb"),
            "v": tf.Variable(rng.standard_normal((3, 1)).astype(np.float32), name="v")}


def per_example_loss(m, x, ids, y):
    h = tf.tanh(tf.matmul(x, m["w"]) + m["b"] + tf.gather(m["emb"], ids))
    return tf.reduce_sum(tf.square(tf.matmul(h, m["v"]) - y), axis=1)


def train(strategy, traced: bool) -> dict:
    """STEPS steps of SGD with momentum on the global batch, shared out by the strategy."""
    x, ids, y = problem()
    with strategy.scope():
        m = make_model()
        opt = tf.optimizers.SGD(0.05, momentum=0.9)
    names = sorted(m)
    variables = [m[k] for k in names]

    def step(batch):
        bx, bids, by = batch
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(per_example_loss(m, bx, bids, by),
                                              global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    def distributed_step(batch):
        losses = strategy.run(step, args=(batch,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    if traced:
        distributed_step = tf.function(distributed_step)
    ds = tf.data.Dataset.from_tensor_slices((x, ids, y)).repeat(STEPS).batch(GLOBAL_BATCH)
    losses = [float(distributed_step(b)) for b in strategy.experimental_distribute_dataset(ds)]
    return {"params": {k: m[k].numpy().tolist() for k in names}, "losses": losses}


def check_collectives(strategy, rank: int) -> dict:
    out = {}
    with strategy.scope():
        v = tf.Variable(np.full(3, 10.0 + rank, np.float32), name="mirrored")
    out["mirrored"] = v.numpy().tolist()
    ctx_out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
        "MEAN", {"a": tf.constant(float(rank)), "b": [tf.constant([1.0, 2.0]) * (rank + 1)]}))
    out["all_reduce_mean"] = [float(ctx_out["a"]), ctx_out["b"][0].numpy().tolist()]
    # sums kept while the same all-reduce runs again (its flat buffer is reused only once
    # no earlier sum is alive): each keeps its own value
    kept = [strategy.run(lambda k=k: tf.distribute.get_replica_context().all_reduce(
        "SUM", [tf.constant([1.0, 2.0]) * (k + rank)])) for k in range(3)]
    out["kept_sums"] = [s[0].numpy().tolist() for s in kept]
    out["replica_id"] = int(strategy.run(
        lambda: tf.distribute.get_replica_context().replica_id_in_sync_group))
    value = tf.constant([[rank * 1.0, 1.0]])
    out["reduce_sum"] = strategy.reduce("SUM", value, axis=None).numpy().tolist()
    out["reduce_mean_axis0"] = strategy.reduce("MEAN", tf.constant([1.0 + rank] * (rank + 1)),
                                               axis=0).numpy().tolist()
    out["gather0"] = strategy.gather(tf.fill([rank + 1, 2], float(rank)), 0).numpy().tolist()
    out["gather1"] = strategy.gather(value, 1).numpy().tolist()
    out["task_id"] = strategy.cluster_resolver.task_id
    out["num_replicas"] = strategy.num_replicas_in_sync
    return out


def check_datasets(strategy) -> dict:
    ds = tf.data.Dataset.range(12).batch(4).prefetch(1)
    batches = [b.numpy().tolist() for b in strategy.experimental_distribute_dataset(ds)]

    def fn(context):
        return (tf.data.Dataset.range(8).shard(context.num_input_pipelines,
                                               context.input_pipeline_id)
                .batch(context.get_per_replica_batch_size(4)))
    from_fn = [b.numpy().tolist() for b in strategy.distribute_datasets_from_function(fn)]
    unbatched = [int(e) for e in strategy.experimental_distribute_dataset(
        tf.data.Dataset.range(5))]
    return {"batches": batches, "from_fn": from_fn, "unbatched": unbatched}


def check_mismatch(strategy, rank: int) -> dict:
    """Variables of another shape, then another number of variables, on rank 1."""
    out = {}
    for case, shapes in (("shape", [(2,), (3,) if rank else (2,)]),
                         ("count", [(2,)] + ([(2,)] if rank else []))):
        vs = [tf.Variable(np.ones(s, np.float32), name=f"{case}_{i}")
              for i, s in enumerate(shapes)]
        opt = tf.optimizers.SGD(0.1)
        try:
            strategy.run(lambda: opt.apply_gradients([(tf.ones_like(v), v) for v in vs]))
            out[case] = "no error"
        except tf.errors.InvalidArgumentError as e:
            out[case] = str(e)
    return out


def checkpoint_model(seed: int):
    """Two variables and an optimizer with slots, in a Checkpoint."""
    rng = np.random.default_rng(seed)
    w = tf.Variable(rng.standard_normal((3, 2)).astype(np.float32), name="w")
    b = tf.Variable(rng.standard_normal(2).astype(np.float32), name="b")
    opt = tf.optimizers.Adam(0.1)
    opt.build([w, b])  # its slots exist, so a restore can assign them at once
    return tf.train.Checkpoint(w=w, b=b, opt=opt), [w, b], opt


def check_checkpoints(strategy, rank: int, out_dir: str) -> dict:
    out = {}
    # written by one process before the job (N=1 -> 2): every rank restores it
    with strategy.scope():
        ckpt, variables, _ = checkpoint_model(seed=rank + 100)
    ckpt.restore(os.path.join(out_dir, "from1", "ckpt-1")).assert_consumed()
    out["restored"] = [v.numpy().tolist() for v in variables]
    # trained here and saved by every rank (only the chief writes): restored by the test
    with strategy.scope():
        ckpt, variables, opt = checkpoint_model(seed=rank + 200)  # mirrored: rank 0's
    manager = tf.train.CheckpointManager(ckpt, os.path.join(out_dir, "from2"), max_to_keep=1)
    for step in range(3):
        strategy.run(lambda: opt.apply_gradients(
            [(tf.ones_like(v) * (rank + 1), v) for v in variables]))
        out["saved"] = manager.save()
    out["saved_values"] = [v.numpy().tolist() for v in variables]
    out["checkpoints"] = manager.checkpoints
    try:  # the chief cannot write there: every rank hears of it
        ckpt.write(os.path.join(out_dir, "missing-dir", "file.txt", "ckpt"))
        out["write_error"] = "no error"
    except OSError as e:
        out["write_error"] = f"{type(e).__name__}: {e}"
    return out


def main(out_dir: str) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    out = {"collectives": check_collectives(strategy, rank),
           "datasets": check_datasets(strategy),
           "mismatch": check_mismatch(strategy, rank),
           "checkpoints": check_checkpoints(strategy, rank, out_dir),
           "traced": train(strategy, traced=True)}
    # eager: 64-byte buckets, each sent as soon as the tape completes its gradients
    small = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(64))
    stats = small._group.stats
    messages, early = stats["messages"], stats.get("buckets_during_backward", 0)
    out["eager"] = train(small, traced=False)
    out["eager_messages"] = stats["messages"] - messages
    out["eager_early"] = stats.get("buckets_during_backward", 0) - early
    blocking = tf.distribute.MultiWorkerMirroredStrategy()
    blocking._overlap = False  # every gradient summed at apply_gradients
    out["eager_blocking"] = train(blocking, traced=False)
    # the engine still works after the mismatch errors: one more all-reduce
    out["after"] = float(strategy.reduce("SUM", tf.constant(1.0), axis=None))
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)


def fail() -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    if strategy.cluster_resolver.task_id == 1:
        raise ValueError("boom on purpose")
    strategy.reduce("SUM", tf.constant(1.0), axis=None)  # waits for rank 1 forever


if __name__ == "__main__":
    fail() if sys.argv[1] == "--fail" else main(sys.argv[1])
