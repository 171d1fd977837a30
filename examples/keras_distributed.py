"""Keras `fit` on MPI: the demo's CNN on the handwritten digits as a `tf.keras` model,
trained data-parallel under `tf.distribute.MultiWorkerMirroredStrategy`, as TensorFlow's
"Multi-worker training with Keras" tutorial does.

Run: mpiexec -n 2 python examples/keras_distributed.py [--epochs N] [--synthetic]
(`pip install -e '.[demo,mpi,keras]'`; without mpiexec it trains with one replica). The
model is built and compiled in the strategy's scope; `fit` then shares every global batch
of `--global-batch` rows out among the processes, sums the gradients across them, and
reports metrics over the whole batch on every process. Only the chief prints the progress
and writes the checkpoint.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import tapeflow as tf
from distributed import load  # examples/distributed.py's data: the digits, or synthetic


def make_model() -> tf.keras.Model:
    """examples/demo.py's CNN: conv 3x3x16 + ReLU, 2x2 max pool, dense 64, dense 10."""
    model = tf.keras.Sequential([
        tf.keras.Input((64,)),
        tf.keras.layers.Reshape((8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(2e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(),
                                                      "tapeflow-keras-distributed"))
    args = parser.parse_args()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    tf.keras.utils.set_random_seed(0)
    x_train, y_train, x_test, y_test = load(args.synthetic)

    with strategy.scope():  # the model's variables are mirrored: rank 0's values
        model = make_model()
    os.makedirs(args.out, exist_ok=True)
    callbacks = [tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=3),
                 tf.keras.callbacks.ModelCheckpoint(  # written by the chief alone
                     os.path.join(args.out, "best.weights.h5"), save_best_only=True,
                     save_weights_only=True)]
    history = model.fit(x_train, y_train, batch_size=args.global_batch, epochs=args.epochs,
                        validation_data=(x_test, y_test), callbacks=callbacks, verbose=2)
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=args.global_batch, verbose=0)
    checksum = sum(float(w.sum()) for w in model.get_weights())
    # every rank reports the same numbers; one write per line, as mpiexec merges output
    sys.stdout.write(f"rank {rank} of {strategy.num_replicas_in_sync}: "
                     f"{len(history.epoch)} epochs, test loss {loss:.4f}, test accuracy "
                     f"{accuracy:.4f}, parameter checksum {checksum:.6f}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
