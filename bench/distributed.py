"""Data-parallel training with MultiWorkerMirroredStrategy on MPI: 1 and 2 processes.

W2 MLP step   784-256-256-10 ReLU, sparse softmax cross-entropy, 128 samples per replica,
              SGD; 0.27 M parameters (1.07 MB of float32 gradients a step)
demo CNN      examples/demo.py's CNN (conv 3x3x16 same + ReLU, 2x2 max pool, dense 64,
              dense 10) on 8x8 images, 64 samples per replica, Adam

Weak scaling: the batch per replica is fixed, so 2 processes do twice the work of 1 in a
step, each replica on one core (one BLAS thread, one intra-op thread). Each model runs traced (`tf.function`: the step's all-reduce is a graph node) and
eagerly, the eager step with its gradients summed bucket by bucket during the backward
pass (overlap, 256 KiB buckets) or all at apply_gradients (blocking). Reported per
configuration: samples per second over all replicas (the fastest of 5 blocks of --steps
steps), scaling efficiency (throughput with N / (N x throughput with 1)), milliseconds per
step spent waiting in MPI, bytes all-reduced or gathered per step, messages per step.

Then a ring all-reduce microbenchmark (MPI_Allreduce of 1 KiB .. 16 MiB between the two
processes) whose times docs/distributed.md fits with t = a + b n.

Run: python bench/distributed.py [--steps N] [--json PATH]. It launches
`mpiexec -n 1` and `-n 2` of itself with one BLAS thread per process (this machine has
2 cores: two processes fill it). Needs the `mpi` extra.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve()


def _models(tf):
    class MLP(tf.Module):  # W2
        def __init__(self):
            super().__init__()
            self.layers = [tf.layers.Dense(256, activation="relu"),
                           tf.layers.Dense(256, activation="relu"), tf.layers.Dense(10)]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class CNN(tf.Module):  # examples/demo.py's (its dropout left out: no randomness)
        def __init__(self):
            super().__init__()
            self.conv = tf.layers.Conv2D(16, 3, padding="same", activation="relu")
            self.dense = tf.layers.Dense(64, activation="relu")
            self.out = tf.layers.Dense(10)

        def __call__(self, x):
            h = tf.nn.max_pool2d(self.conv(tf.reshape(x, [-1, 8, 8, 1])), 2, 2, "VALID")
            return self.out(self.dense(tf.reshape(h, [-1, 4 * 4 * 16])))

    return {"W2": (MLP, 784, 128, lambda: tf.optimizers.SGD(0.01)),
            "CNN": (CNN, 64, 64, lambda: tf.optimizers.Adam(1e-3))}


def worker(steps: int, out: str) -> None:
    import tapeflow as tf
    # One core per replica in every configuration, as one BLAS thread: with 1 process the
    # intra-op threads would otherwise take the second core (split matmuls, parallel fused
    # loops) and the 1-process baseline would measure two cores.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank, n = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    group = strategy._group
    results = {}
    for name, (make, features, batch, make_opt) in _models(tf).items():
        rng = np.random.default_rng(rank)
        x = rng.standard_normal((batch, features)).astype(np.float32)
        y = rng.integers(0, 10, batch).astype(np.int32)
        for mode in ("traced", "eager overlap", "eager blocking"):
            with strategy.scope():
                model, opt = make(), make_opt()
                model(x[:1])
            strategy._overlap = mode != "eager blocking"
            strategy._bytes_per_pack = 256 << 10  # W2's 1 MB of gradients: 4 buckets

            def step(xb, yb):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(
                        tf.losses.sparse_categorical_crossentropy(yb, model(xb),
                                                                  from_logits=True))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            def distributed(xb, yb):
                return strategy.run(step, args=(xb, yb))
            if mode == "traced":
                distributed = tf.function(distributed)
            xb, yb = tf.constant(x), tf.constant(y)
            for _ in range(3):  # trace, build slots, warm caches
                distributed(xb, yb)
            best = None
            for _ in range(5):  # the fastest of 5 blocks: the machine is shared
                group.barrier()
                before = dict(getattr(group, "stats", {}))
                start = time.perf_counter()
                for _ in range(steps):
                    distributed(xb, yb)
                group.barrier()
                elapsed = time.perf_counter() - start
                if best is None or elapsed < best[0]:
                    best = (elapsed, before, dict(getattr(group, "stats", {})))
            elapsed, before, after = best
            params = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
            results[f"{name} {mode}"] = {
                "samples_per_s": n * batch * steps / elapsed,
                "step_ms": 1e3 * elapsed / steps,
                "comm_ms_per_step": 1e3 * (after.get("comm_s", 0) - before.get("comm_s", 0))
                / steps,
                "bytes_per_step": (after.get("bytes", 0) - before.get("bytes", 0)) / steps,
                "messages_per_step": (after.get("messages", 0) - before.get("messages", 0))
                / steps,
                "parameters": params}
    if n > 1:  # the all-reduce itself: MPI_Allreduce of n bytes, median of repeats
        comm = group.comm
        sizes, times = [1 << k for k in range(10, 25, 2)], []
        for size in sizes:
            buf = np.ones(size // 4, np.float32)
            reps = max(5, min(200, (1 << 22) // size))
            samples = []
            for _ in range(reps):
                comm.Barrier()
                t0 = time.perf_counter()
                comm.Allreduce(group.MPI.IN_PLACE, buf)
                samples.append(time.perf_counter() - t0)
            times.append(float(np.median(samples)))
        results["allreduce"] = {"bytes": sizes, "seconds": times}
    if rank == 0:
        with open(out, "w") as f:
            json.dump(results, f)


def launch(n: int, steps: int) -> dict:
    beside = pathlib.Path(sys.executable).parent / "mpiexec"  # the mpich wheel's
    mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        subprocess.run([mpiexec, "-n", str(n), sys.executable, str(HERE), "--worker", out,
                        "--steps", str(steps)], check=True, env=env)
        with open(out) as f:
            return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--worker", metavar="OUT")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    parser.add_argument("--procs", default="1,2", help="process counts, e.g. 1,2,4,8")
    args = parser.parse_args()
    if args.worker:
        return worker(args.steps, args.worker)
    counts = [int(c) for c in args.procs.split(",")]
    runs = {n: launch(n, args.steps) for n in counts}
    base = runs[counts[0]]
    print(f"{'config':20s} {'procs':>5s} {'samples/s':>10s} {'step ms':>8s} "
          f"{'efficiency':>10s} {'comm ms/step':>12s} {'MB/step':>8s} {'msgs':>5s}")
    for key in base:
        if key == "allreduce":
            continue
        for n in counts:
            r = runs[n][key]
            efficiency = r["samples_per_s"] / (n / counts[0] * base[key]["samples_per_s"])
            print(f"{key:20s} {n:5d} {r['samples_per_s']:10.0f} {r['step_ms']:8.2f} "
                  f"{efficiency:10.2f} {r['comm_ms_per_step']:12.2f} "
                  f"{r['bytes_per_step'] / 1e6:8.3f} {r['messages_per_step']:5.1f}")
    for n in counts[1:]:
        print(f"MPI_Allreduce between {n} processes (median):")
        for size, t in zip(runs[n]["allreduce"]["bytes"], runs[n]["allreduce"]["seconds"]):
            print(f"  {size:>9d} B  {t * 1e6:9.1f} us  {size / t / 1e9:6.2f} GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({str(n): r for n, r in runs.items()}, f, indent=1)


if __name__ == "__main__":
    main()
