"""Busy-machine benchmark (API 6.7: threads a shared machine tolerates): small training
steps, eager and traced, with matrix products and einsums, timed on a quiet machine and
while two other processes keep every core busy with NumPy products (as two trainings at
once, or a test runner's workers, do). Prints each step's median time quiet and loaded
and the slowdown, for tapeflow and, beside it, TensorFlow running the same source.

    python bench/threads.py                        # tapeflow only
    python bench/threads.py --tf-python /path/to/python-with-tensorflow

Each library runs in a process of its own (`--run LIB`), so neither's threads disturb
the other's figures. The load processes use NumPy's default threads.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOAD = """
import numpy as np, time
a = np.random.default_rng(0).standard_normal((256, 256))
end = time.time() + {seconds}
while time.time() < end:
    a @ a
"""


def workloads(tf):
    """name -> step function, the same TF2 source for tapeflow and TensorFlow."""
    rng = __import__("numpy").random.default_rng(0)

    def const(*shape):
        return tf.constant(rng.standard_normal(shape).astype("float32"))
    x, y = const(128, 64), const(128, 16)
    w1, w2 = tf.Variable(const(64, 64) * 0.1), tf.Variable(const(64, 16) * 0.1)
    tokens = const(8, 32, 64)
    wq, wk, wv = (tf.Variable(const(64, 64) * 0.1) for _ in range(3))

    def mlp():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    def attention():
        with tf.GradientTape() as tape:
            q = tf.einsum("btd,de->bte", tokens, wq)
            k = tf.einsum("btd,de->bte", tokens, wk)
            v = tf.einsum("btd,de->bte", tokens, wv)
            a = tf.nn.softmax(tf.einsum("bqe,bke->bqk", q, k) / 8.0)
            loss = tf.reduce_mean(tf.square(tf.einsum("bqk,bke->bqe", a, v)))
        grads = tape.gradient(loss, [wq, wk, wv])
        for var, g in zip((wq, wk, wv), grads):
            var.assign_sub(0.01 * g)
        return loss

    return {"MLP step, eager": mlp, "MLP step, traced": tf.function(mlp),
            "attention step, eager": attention,
            "attention step, traced": tf.function(attention)}


def time_steps(step, seconds: float) -> float:
    """Median ms per step over `seconds` of steps (after warm-up calls)."""
    for _ in range(20):
        step()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 20:
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(lib: str, seconds: float) -> dict:
    """In this process: each workload's median ms quiet, then under two load processes."""
    if lib == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    else:
        sys.path.insert(0, os.path.join(HERE, "..", "src"))
        import tapeflow as tf
        from tapeflow.function.fuse import wait_compiled
    steps = workloads(tf)
    for step in steps.values():  # (compiles done before anything is timed)
        for _ in range(5):
            step()
    if lib != "tensorflow":
        wait_compiled()
    quiet = {name: time_steps(step, seconds) for name, step in steps.items()}
    load_seconds = seconds * len(steps) * 3 + 30
    loads = [subprocess.Popen([sys.executable, "-c", LOAD.format(seconds=load_seconds)])
             for _ in range(2)]
    try:
        time.sleep(1.0)
        busy = {name: time_steps(step, seconds) for name, step in steps.items()}
    finally:
        for p in loads:
            p.kill()
            p.wait()
    return {name: (quiet[name], busy[name]) for name in steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=["tapeflow", "tensorflow"])
    parser.add_argument("--tf-python", help="a Python with TensorFlow installed")
    parser.add_argument("--seconds", type=float, default=3.0, help="per workload and state")
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run(args.run, args.seconds)))
        return
    columns = {"tapeflow": sys.executable}
    if args.tf_python:
        columns["TensorFlow"] = args.tf_python
    results = {}
    for label, python in columns.items():
        lib = "tensorflow" if label == "TensorFlow" else "tapeflow"
        print(f"running {label} ...", file=sys.stderr, flush=True)
        out = subprocess.run([python, os.path.abspath(__file__), "--run", lib,
                              "--seconds", str(args.seconds)], capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr)
        results[label] = json.loads(out.stdout.strip().splitlines()[-1])
    head = f"{'workload':26}" + "".join(f"{label + ' quiet/busy ms':>30}{'x':>7}"
                                         for label in results)
    print(head)
    for name in results["tapeflow"]:
        row = f"{name:26}"
        for label in results:
            quiet, busy = results[label][name]
            row += f"{quiet:>20.3f} / {busy:<7.3f}{busy / quiet:>7.2f}"
        print(row)
    print("(busy: two other processes running NumPy products with NumPy's default threads; "
          "x: busy / quiet)")


if __name__ == "__main__":
    main()
