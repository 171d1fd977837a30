"""Keras `fit` step time: tapeflow against Keras on TensorFlow, the same MLP on the same
data in the same way.

K1 MLP fit   scikit-learn's 8x8 digits (1797 images as 64 floats in [0, 1]; random
             images of that shape when scikit-learn is missing); Sequential Input(64) ->
             Dense(64, relu) -> Dense(10); Adam, sparse categorical cross-entropy from
             logits, metrics=["accuracy"]; fit(batch_size=32, shuffle=True, verbose=0)
K2 CNN fit   the same images as [8, 8, 1]; Input -> Conv2D(16, 3, relu) -> MaxPooling2D
             -> Flatten -> Dense(10); compiled and fit as K1

Each framework runs in its own process (this script, re-run by the Python given for it),
trains one warm-up epoch (tracing, building), then `--epochs` timed epochs; a callback
records the wall time of every batch (`on_train_batch_begin` to `..._end`, so the time
per step includes the framework's own loop but not the data shuffling between epochs).
Printed: the median and mean time per step of each and their ratio (Keras / tapeflow:
above 1 means tapeflow is faster).

Run: python bench/keras_fit.py [--peer-python /work/peervenv/bin/python] [--epochs 5]
On a shared machine set OPENBLAS_NUM_THREADS=1 (and TF's threads are pinned to 1 here
too), so neither framework waits for busy cores.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def load_data(path: str, peer_python: str | None = None) -> str:
    """The digits as float32 [N, 64] and int32 labels, saved to `path` (.npz); read by
    the peer's Python when this one lacks scikit-learn. Returns where they came from."""
    try:
        from sklearn.datasets import load_digits  # optional: only the data comes from it
        digits = load_digits()
        x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int32)
        np.savez(path, x=x, y=y)
        return "scikit-learn's digits"
    except ImportError:
        if peer_python and subprocess.run([peer_python, __file__, "--make-data", path],
                                          capture_output=True).returncode == 0:
            return "scikit-learn's digits"
        rng = np.random.default_rng(0)
        x = rng.random((1797, 64), dtype=np.float32)
        y = rng.integers(0, 10, 1797).astype(np.int32)
        np.savez(path, x=x, y=y)
        return "random images (scikit-learn is missing)"


def build(keras, workload: str):
    layers = keras.layers
    if workload == "mlp":
        return keras.Sequential([keras.Input((64,)), layers.Dense(64, activation="relu"),
                                 layers.Dense(10)])
    return keras.Sequential([keras.Input((8, 8, 1)), layers.Conv2D(16, 3, activation="relu"),
                             layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10)])


def run(framework: str, data: str, epochs: int, workload: str) -> dict:
    """Train in this process with `framework` ("tapeflow" or "keras"); the step times."""
    if framework == "keras":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        keras = tf.keras
    else:
        sys.path.insert(0, os.path.join(HERE, "..", "src"))
        import tapeflow as tf
        keras = tf.keras
    arrays = np.load(data)
    x, y = arrays["x"], arrays["y"]
    if workload == "cnn":
        x = x.reshape(-1, 8, 8, 1)
    keras.utils.set_random_seed(0)
    model = build(keras, workload)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    times: list = []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)

    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # warm-up: tracing and building
    start = time.perf_counter()
    history = model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, callbacks=[Timer()])
    total = time.perf_counter() - start
    return {"framework": framework, "steps": len(times),
            "median_ms": 1e3 * float(np.median(times)), "mean_ms": 1e3 * float(np.mean(times)),
            "epoch_s": total / epochs, "final_loss": history.history["loss"][-1],
            "final_accuracy": history.history["accuracy"][-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default="/work/peervenv/bin/python")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--child", choices=["tapeflow", "keras"])
    parser.add_argument("--data")
    parser.add_argument("--make-data")
    parser.add_argument("--workload", choices=["mlp", "cnn"])
    args = parser.parse_args()
    if args.make_data:
        load_data(args.make_data)
        return
    if args.child:
        print(json.dumps(run(args.child, args.data, args.epochs, args.workload)))
        return
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "digits.npz")
        source = load_data(data, args.peer_python)
        for workload, title in (("mlp", "K1 MLP fit"), ("cnn", "K2 CNN fit")):
            results = {}
            for framework, python in (("tapeflow", sys.executable),
                                      ("keras", args.peer_python)):
                out = subprocess.run([python, __file__, "--child", framework, "--data", data,
                                      "--epochs", str(args.epochs), "--workload", workload],
                                     env=env, check=True, capture_output=True,
                                     text=True).stdout
                results[framework] = json.loads(out.strip().splitlines()[-1])
            report(title, source, results)


def report(title: str, source: str, results: dict) -> None:
    print(f"{title} on {source}, {results['tapeflow']['steps']} timed steps each "
          "(batch 32)")
    for r in results.values():
        print(f"  {r['framework']:9s} median {r['median_ms']:.3f} ms/step, mean "
              f"{r['mean_ms']:.3f} ms/step, {r['epoch_s']:.3f} s/epoch; final loss "
              f"{r['final_loss']:.4f}, accuracy {r['final_accuracy']:.4f}")
    ratio = results["keras"]["median_ms"] / results["tapeflow"]["median_ms"]
    print(f"  Keras / tapeflow (median step): {ratio:.2f}x")


if __name__ == "__main__":
    main()
