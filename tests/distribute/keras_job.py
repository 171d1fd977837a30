"""Keras `fit` under MultiWorkerMirroredStrategy, run by tests/distribute/test_keras_fit.py
as `mpiexec -n 2 python keras_job.py OUT_DIR`; the test runs `train` in one process too
and compares. Each rank writes OUT_DIR/rank<r>.json (its History, weights, evaluate and
predict results, how many times it wrote the weight file) and OUT_DIR/rank<r>.out (what
it printed).
"""
import contextlib
import io
import json
import os
import sys

import numpy as np

import tapeflow as tf
from tapeflow.keras import model as keras_model

GLOBAL_BATCH, SEED = 16, 11


def data():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((83, 6)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 0.5)  # 3 classes
    # 67 rows: the last batch of 16 has 3, shared out 2 and 1
    return x[:67], y[:67], x[67:], y[67:]


def train(strategy, out_dir: str, verbose: int = 1) -> dict:
    """Arrays through a traced step (shuffled, validation, checkpoint and early stopping),
    then a dataset through eager steps, then evaluate and predict; with `strategy` None,
    a model of no strategy (Keras's plain path)."""
    x, y, xv, yv = data()
    scope = strategy.scope if strategy is not None else contextlib.nullcontext
    with scope():
        tf.keras.utils.set_random_seed(SEED)
        model = tf.keras.Sequential([
            tf.keras.Input((6,)),
            tf.keras.layers.Dense(16, activation="relu",
                                  kernel_regularizer=tf.keras.regularizers.L2(1e-3)),
            tf.keras.layers.Dense(3)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy", tf.keras.metrics.SparseTopKCategoricalAccuracy(2)])
    path = os.path.join(out_dir, "best.weights.h5")
    # min_delta so large that training stops early: both ranks must stop together
    stop = tf.keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0.05, patience=1)
    history = model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=8, shuffle=True,
                        validation_data=(xv, yv), verbose=verbose,
                        callbacks=[stop, tf.keras.callbacks.ModelCheckpoint(
                            path, save_weights_only=True, save_best_only=True),
                            # appended to: a second writer would double the rows
                            tf.keras.callbacks.CSVLogger(os.path.join(out_dir, "log.csv"),
                                                         append=True),
                            tf.keras.callbacks.TensorBoard(os.path.join(out_dir, "tb"))])
    out = {"history": history.history, "epochs": history.epoch,
           "traced_weights": [w.tolist() for w in model.get_weights()]}
    with scope():
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.5),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], run_eagerly=True)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=3).batch(GLOBAL_BATCH)
    out["eager_history"] = model.fit(ds, epochs=2, verbose=verbose).history
    out["weights"] = [w.tolist() for w in model.get_weights()]
    out["evaluate"] = model.evaluate(xv, yv, batch_size=6, return_dict=True, verbose=verbose)
    # the last batch of 5 has one row: the second replica gets none
    out["predict"] = model.predict(xv, batch_size=5, verbose=verbose).tolist()
    return out


def batch_norm(strategy) -> dict:
    """BatchNormalization's moving statistics after training: each replica normalizes with
    its own rows' statistics (as TensorFlow's BatchNormalization does), and the replicas'
    updates of the moving statistics are combined. The first layer's moving mean (of the
    data, weighted by the replicas' rows) is the one replica's."""
    x, y, _, _ = data()
    x, y = x[:65], y[:65]  # the last batch has one row: the second replica gets none
    scope = strategy.scope if strategy is not None else contextlib.nullcontext
    with scope():
        tf.keras.utils.set_random_seed(SEED)
        model = tf.keras.Sequential([
            tf.keras.Input((6,)), tf.keras.layers.BatchNormalization(momentum=0.5),
            tf.keras.layers.Dense(4, activation="relu"),
            tf.keras.layers.BatchNormalization(), tf.keras.layers.Dense(3)])
        model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True))
    model.fit(x * 2.0 + 1.0, y, batch_size=GLOBAL_BATCH, epochs=2, shuffle=False, verbose=0)
    return {"moving": [v.numpy().tolist() for v in model.non_trainable_weights],
            "weights": [w.tolist() for w in model.get_weights()]}


def main(out_dir: str) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    writes = []
    save = keras_model.save_weights_h5

    def counted(model, path):  # how often this rank writes the weight file
        writes.append(path)
        save(model, path)
    keras_model.save_weights_h5 = counted
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        out = train(strategy, out_dir)
    out["batch_norm"] = batch_norm(strategy)
    out["writes"] = len(writes)
    out["replicas"] = strategy.num_replicas_in_sync
    with open(os.path.join(out_dir, f"rank{rank}.out"), "w") as f:
        f.write(printed.getvalue())
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1])
