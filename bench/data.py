"""tf.data throughput against TensorFlow's tf.data, and the demo's training step fed three ways.

1. Elements per second of the same pipelines in tapeflow and (when it is installed)
   TensorFlow, each iterated to the end in one process:
     digits     the demo's 1437 digits (float32[64]) and labels:
                slices -> shuffle(1437) -> map(x * 2 - 1) -> batch(64) -> prefetch
     1e6 rows   a float32[1_000_000, 16] array and int32 labels:
                slices -> shuffle(10_000) -> map(x * 2 - 1) -> batch(256) -> prefetch
   plus, for both, the same pipeline with the map after the batch (one call per batch)
   and without the map and shuffle (slices -> batch -> prefetch). The digits are
   repeated 10 times (reshuffled each time); throughput is counted from the first batch
   on (an iterator's start-up is left out), median of 3 runs.
2. The demo's MLP training step (examples/demo.py, batch 64) fed by its tf.data pipeline,
   by plain slicing of a shuffled index (the demo before tf.data), by the pipeline with
   the demo's summaries (three scalars an epoch, as the demo writes) and with a
   `tf.summary.scalar` every step: median milliseconds per step over epochs run
   alternately.

Run: PYTHONPATH=src python bench/data.py [--quick]; TensorFlow is imported only if it is
installed (`/work/peervenv/bin/python` has it). On a shared machine set
OPENBLAS_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import tapeflow as tf  # noqa: E402

try:
    import tensorflow as real_tf  # noqa: E402 - the peer, only when installed
except ImportError:
    real_tf = None


def digits_arrays():
    from sklearn.datasets import load_digits  # the demo's data, bundled with scikit-learn
    d = load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)


def pipeline(lib, x, y, buffer, batch, variant, epochs):
    ds = lib.data.Dataset.from_tensor_slices((x, y)).repeat(epochs)
    if variant == "per element":
        ds = ds.shuffle(buffer, seed=0).map(lambda a, b: (a * 2.0 - 1.0, b)).batch(batch)
    elif variant == "map per batch":
        ds = ds.shuffle(buffer, seed=0).batch(batch).map(lambda a, b: (a * 2.0 - 1.0, b))
    else:  # slices -> batch
        ds = ds.batch(batch)
    return ds.prefetch(lib.data.AUTOTUNE)


def elements_per_second(lib, x, y, buffer, batch, variant, epochs=1, limit=None) -> float:
    """Steady throughput: timed from the first batch on (an iterator's start-up, a
    thread pool or TensorFlow's function instantiation, is not counted)."""
    ds = pipeline(lib, x, y, buffer, batch, variant, epochs)
    count, start = 0, None
    for xb, _ in ds:
        if start is None:
            start = time.perf_counter()
            continue
        count += int(xb.shape[0])
        if limit is not None and count >= limit:
            break
    return count / (time.perf_counter() - start)


def throughput(quick: bool) -> None:
    x_digits, y_digits = digits_arrays()
    rng = np.random.default_rng(0)
    x_big = rng.random((1_000_000, 16), dtype=np.float32)
    y_big = rng.integers(0, 10, 1_000_000).astype(np.int32)
    # the digits: 1797 elements, repeated (reshuffled) 10 times for a steady number
    cases = [("digits", x_digits, y_digits, 1437, 64, 10, None),
             ("1e6 rows", x_big, y_big, 10_000, 256, 1, 100_000 if quick else 300_000)]
    print("elements per second (higher is better)")
    print(f"{'pipeline':<10s} {'variant':<15s} {'tapeflow':>12s} {'tensorflow':>12s} "
          f"{'tf / tapeflow':>14s}")
    for name, x, y, buffer, batch, epochs, limit in cases:
        for variant in ("per element", "map per batch", "slices->batch"):
            cut = limit if variant == "per element" else None
            ours = statistics.median(elements_per_second(tf, x, y, buffer, batch, variant,
                                                         epochs, cut) for _ in range(3))
            theirs = None
            if real_tf is not None:
                theirs = statistics.median(elements_per_second(
                    real_tf, x, y, buffer, batch, variant, epochs, cut) for _ in range(3))
            ratio = f"{theirs / ours:13.2f}x" if theirs else "-"
            print(f"{name:<10s} {variant:<15s} {ours:12,.0f} "
                  f"{theirs if theirs is None else f'{theirs:12,.0f}'!s:>12s} {ratio:>14s}")


def load_demo():
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "demo.py")
    spec = importlib.util.spec_from_file_location("demo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_times(epochs: int) -> None:
    demo = load_demo()
    x, y = digits_arrays()
    x_t, y_t = tf.constant(x), tf.constant(y)
    n, batch = len(x), 64
    tf.random.set_seed(0)
    model = demo.MLP()
    step = demo.make_step(model, tf.optimizers.Adam(2e-3))
    dataset = demo.input_pipeline(x_t, y_t, batch)
    logdir = tempfile.mkdtemp(prefix="tapeflow-bench-")
    writer = tf.summary.create_file_writer(logdir)
    counter = [0]
    steps = -(-n // batch)

    def fed_by_dataset():  # each loop reads the step's results, as the demo does
        total = 0.0
        for xb, yb in dataset:
            loss, acc = step(xb, yb)
            total += float(loss) + float(acc)

    def fed_by_slicing():  # the demo before tf.data: a shuffled index, gathered per step
        perm = tf.random.shuffle(tf.range(n), seed=counter[0])
        total = 0.0
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            loss, acc = step(tf.gather(x_t, idx), tf.gather(y_t, idx))
            total += float(loss) + float(acc)

    def demo_summaries():  # what the demo writes: three scalars an epoch
        total_loss = total_acc = 0.0
        for xb, yb in dataset:
            loss, acc = step(xb, yb)
            total_loss += float(loss)
            total_acc += float(acc)
        counter[0] += 1
        with writer.as_default(step=counter[0]):
            tf.summary.scalar("loss", total_loss / steps)
            tf.summary.scalar("accuracy/train", total_acc / steps)
            tf.summary.scalar("accuracy/test", total_acc / steps)

    def summary_every_step():
        with writer.as_default():
            total = 0.0
            for xb, yb in dataset:
                loss, acc = step(xb, yb)
                total += float(loss) + float(acc)
                counter[0] += 1
                tf.summary.scalar("loss", loss, step=counter[0])

    ways = {"tf.data pipeline": fed_by_dataset, "plain slicing": fed_by_slicing,
            "tf.data + the demo's summaries": demo_summaries,
            "tf.data + a scalar summary every step": summary_every_step}
    for fn in ways.values():  # warm up: trace, caches
        fn()
    times = {k: [] for k in ways}
    for _ in range(epochs):
        for name, fn in ways.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) / steps * 1e3)
    writer.close()
    base = statistics.median(times["tf.data pipeline"])
    print(f"\nthe demo's MLP training step (batch {batch}, {steps} steps an epoch, median of "
          f"{epochs} epochs run alternately)")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<40s} {med:7.3f} ms/step  ({(med / base - 1) * 100:+5.1f}% vs the "
              "pipeline)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer elements and epochs")
    args = parser.parse_args()
    print(f"tapeflow {tf.__version__}; TensorFlow "
          f"{real_tf.__version__ if real_tf is not None else 'not installed'}; "
          f"{os.cpu_count()} CPUs")
    throughput(args.quick)
    step_times(5 if args.quick else 15)


if __name__ == "__main__":
    main()
