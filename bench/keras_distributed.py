"""Keras `fit` under MultiWorkerMirroredStrategy: 1 and 2 MPI processes, and the cost of
the distributed step itself.

W2 MLP     784-256-256-10 ReLU, 128 samples per replica, SGD
demo CNN   examples/keras_distributed.py's model, 64 samples per replica, Adam

Weak scaling: the batch per replica is fixed (the global batch is N times it). Reported
per configuration: samples per second over all replicas (the fastest of 3 epochs of
--steps steps, after a first epoch that traces), and the scaling efficiency (throughput
with N / (N x throughput with 1)). "no strategy" is the same fit of a model made outside
any scope (Keras's plain path), so the 1-process strategy row shows what sharing out,
combining metrics and the replica context cost.

Run: python bench/keras_distributed.py [--steps N]. It launches `mpiexec -n 1` and `-n 2`
of itself with one BLAS thread per process. Needs the `mpi` extra.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve()


def _model(tf, name: str):
    if name == "W2 MLP":
        model = tf.keras.Sequential([tf.keras.Input((784,)),
                                     tf.keras.layers.Dense(256, activation="relu"),
                                     tf.keras.layers.Dense(256, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model, 784, 128
    sys.path.insert(0, str(HERE.parents[1] / "examples"))
    from keras_distributed import make_model  # the example's CNN
    return make_model(), 64, 64


def worker(steps: int, plain: bool) -> None:
    import tapeflow as tf
    # one core per replica in every configuration (as bench/distributed.py): with one
    # process the intra-op threads would otherwise give the baseline the second core
    tf.config.threading.set_intra_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    n, rank = strategy.num_replicas_in_sync, strategy.cluster_resolver.task_id
    for name in ("W2 MLP", "demo CNN"):
        tf.keras.utils.set_random_seed(0)
        with contextlib.nullcontext() if plain else strategy.scope():
            model, features, per_replica = _model(tf, name)
        batch = per_replica * n
        rng = np.random.default_rng(0)
        x = rng.random((batch * steps, features), dtype=np.float32)
        y = rng.integers(0, 10, len(x))
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # traces
        best = min(_timed(model, x, y, batch) for _ in range(3))
        if rank == 0:
            label = "no strategy" if plain else f"{n} process{'es' if n > 1 else ''}"
            print(f"RESULT {name}|{label}|{len(x) / best:.0f}", flush=True)


def _timed(model, x, y, batch) -> float:
    start = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args.steps, args.plain)
        return
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(HERE.parents[1] / "src"))
    rows: dict = {}
    for n, extra in ((1, ["--plain"]), (1, []), (2, [])):
        done = subprocess.run([mpiexec, "-n", str(n), sys.executable, str(HERE), "--worker",
                               "--steps", str(args.steps), *extra],
                              capture_output=True, text=True, env=env, check=True)
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                name, label, rate = line[7:].split("|")
                rows.setdefault(name, []).append((label, float(rate)))
    print(f"{'model':10} {'configuration':14} {'samples/s':>10} {'efficiency':>10}")
    for name, results in rows.items():
        one = dict(results)["1 process"]
        for label, rate in results:
            n = 2 if label == "2 processes" else 1
            print(f"{name:10} {label:14} {rate:10.0f} {rate / (n * one):10.2f}")


if __name__ == "__main__":
    main()
