"""Keras metrics in a custom training loop under MultiWorkerMirroredStrategy, run by
tests/keras/test_keras_distribution.py as `mpiexec -n 2 python distribution_job.py OUT`.
Each worker updates the metrics inside `strategy.run` with its own rows of the data and
writes OUT/rank<r>.json: the results it reads in the cross-replica context (eagerly and in
a tf.function), inside `run` (its own state), and of a metric made outside the scope."""
import json
import os
import sys

import numpy as np

import tapeflow as tf

SEED = 5


def data():
    """Labels, probabilities and sample weights of 12 rows; worker r takes rows r, r+2, ..."""
    rng = np.random.default_rng(SEED)
    y_true = rng.integers(0, 2, 12).astype(np.float32)
    y_prob = rng.uniform(0.0, 1.0, 12).astype(np.float32)
    weights = rng.uniform(0.5, 2.0, 12).astype(np.float32)
    return y_true, y_prob, weights


def main(out: str) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank, n = strategy.cluster_resolver.task_id, strategy.num_replicas_in_sync
    y_true, y_prob, weights = data()
    mine = slice(rank, None, n)
    with strategy.scope():
        mean = tf.keras.metrics.Mean(name="loss")
        accuracy = tf.keras.metrics.BinaryAccuracy()
        auc = tf.keras.metrics.AUC(num_thresholds=11)
        precision = tf.keras.metrics.Precision()
        tp = tf.keras.metrics.TruePositives()
    outside = tf.keras.metrics.Sum(name="outside")  # made outside the scope: local
    metrics = [mean, accuracy, auc, precision, tp]

    def step(yt, yp, w):
        mean.update_state(tf.square(yp - yt), sample_weight=w)
        for m in (accuracy, auc, precision, tp):
            m.update_state(yt, yp)
        outside.update_state(yt)
        # inside run a replica reads its own state (TensorFlow's replica-context read)
        return mean.result()

    own = strategy.run(step, args=(tf.constant(y_true[mine]), tf.constant(y_prob[mine]),
                                   tf.constant(weights[mine])))
    eager = {m.name: float(m.result()) for m in metrics}

    @tf.function
    def read():
        return {m.name: m.result() for m in metrics}
    traced = {k: float(v) for k, v in read().items()}
    again = float(mean.result())  # the worker's own state was put back: same result
    out_sum = float(outside.result())
    for m in metrics:
        m.reset_state()
    after_reset = float(mean.result())
    result = {"rank": rank, "replicas": n, "own_mean": float(own), "eager": eager,
              "traced": traced, "again": again, "outside": out_sum,
              "after_reset": after_reset}
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
