"""Data-parallel training on MPI: the demo's CNN on the handwritten digits, one replica per
process, with TensorFlow's `tf.distribute` API.

Run: mpiexec -n 2 python examples/distributed.py [--epochs N] [--synthetic]
(`pip install -e '.[demo,mpi]'`; without mpiexec it trains with one replica). Every
process reads its half of each global batch; gradients are summed across processes in
`apply_gradients`; the chief writes the checkpoint. `--synthetic` uses random digit-shaped
data instead of scikit-learn's (a quick check without the demo extra).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import tapeflow as tf


class CNN(tf.Module):
    """examples/demo.py's CNN: conv 3x3x16 + ReLU, 2x2 max pool, dense 64, dense 10."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.conv = tf.layers.Conv2D(16, 3, padding="same", activation="relu")
        self.dropout = tf.layers.Dropout(0.2)
        self.dense = tf.layers.Dense(64, activation="relu")
        self.out = tf.layers.Dense(10)

    def __call__(self, x, training=False):
        h = self.conv(tf.reshape(x, [-1, 8, 8, 1]))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = self.dropout(tf.reshape(h, [-1, 4 * 4 * 16]), training=training)
        return self.out(self.dense(h))


def load(synthetic: bool):
    if synthetic:
        rng = np.random.default_rng(0)
        y = rng.integers(0, 10, 1024).astype(np.int32)
        x = (rng.random((1024, 64)) * 0.5 + np.eye(10, 64)[y]).astype(np.float32)
    else:
        # the demo extra's scikit-learn ships the digits: imported only for real data
        from sklearn.datasets import load_digits
        digits = load_digits()
        x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    split = int(0.8 * len(x))
    return x[order[:split]], y[order[:split]], x[order[split:]], y[order[split:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(),
                                                      "tapeflow-distributed"))
    args = parser.parse_args()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    tf.random.set_seed(0)  # the same dropout masks' stream on every run
    x_train, y_train, x_test, y_test = load(args.synthetic)

    with strategy.scope():  # mirrored: every replica starts from rank 0's values
        model = CNN()
        model(tf.constant(x_train[:1]))
        optimizer = tf.optimizers.Adam(2e-3)
    dataset = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
               .shuffle(len(x_train), seed=0)  # seeded: the replicas agree on the order
               .batch(args.global_batch, drop_remainder=True)
               .prefetch(tf.data.AUTOTUNE))
    batches = strategy.experimental_distribute_dataset(dataset)  # this replica's part

    @tf.function
    def train_step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.nn.compute_average_loss(
                    tf.losses.sparse_categorical_crossentropy(y, logits, from_logits=True),
                    global_batch_size=args.global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduced
            return loss
        per_replica = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        losses = [float(train_step(x, y)) for x, y in batches]
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {np.mean(losses):.4f}")
    elapsed = time.perf_counter() - start
    predicted = tf.cast(tf.argmax(model(tf.constant(x_test)), axis=1), tf.int32)
    accuracy = float(tf.reduce_mean(tf.cast(tf.equal(predicted, y_test), tf.float32)))
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    path = checkpoint.save(os.path.join(args.out, "ckpt"))  # only the chief writes
    checksum = sum(float(tf.reduce_sum(v)) for v in model.trainable_variables)
    # one write per line: mpiexec merges the processes' output as it comes
    sys.stdout.write(f"rank {rank} of {strategy.num_replicas_in_sync}: test accuracy "
                     f"{accuracy:.4f}, parameter checksum {checksum:.6f}, {elapsed:.1f} s, "
                     f"checkpoint {path}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
