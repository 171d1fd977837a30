"""tapeflow demo: train an MLP and a small CNN on scikit-learn's handwritten digits (shipped
inside the scikit-learn package: nothing is downloaded) with `tapeflow.layers`, `Adam` and a
`function`-traced training step fed by a `tf.data` pipeline; write TensorBoard logs with
`tf.summary`; save and restore a checkpoint; show the engine's memory accounting, a profile
of one step, and plots of the training curves and memory timeline; then train an MLP the
Keras way (`tf.keras.Sequential`, `compile`, `fit` with callbacks).

Run: python examples/demo.py [--epochs N] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import tapeflow as tf


class MLP(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.hidden = [tf.layers.Dense(128, activation="relu"),
                       tf.layers.Dense(64, activation="relu")]
        self.out = tf.layers.Dense(10)

    def __call__(self, x, training=False):
        h = tf.reshape(x, [-1, 64])
        for layer in self.hidden:
            h = layer(h)
        return self.out(h)


class CNN(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.conv = tf.layers.Conv2D(16, 3, padding="same", activation="relu")
        self.dropout = tf.layers.Dropout(0.2)
        self.dense = tf.layers.Dense(64, activation="relu")
        self.out = tf.layers.Dense(10)

    def __call__(self, x, training=False):
        h = self.conv(tf.reshape(x, [-1, 8, 8, 1]))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")                      # 4x4x16
        h = self.dropout(tf.reshape(h, [-1, 4 * 4 * 16]), training=training)
        return self.out(self.dense(h))


def make_step(model, optimizer):
    """The training step, traced once for every batch size (None), its gradient included."""
    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32),
                                  tf.TensorSpec([None], tf.int32)])
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(tf.losses.sparse_categorical_crossentropy(
                y, logits, from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        correct = tf.equal(tf.cast(tf.argmax(logits, axis=1), tf.int32), y)
        return loss, tf.reduce_mean(tf.cast(correct, tf.float32))
    return step


def accuracy(model, x, y) -> float:
    predicted = tf.cast(tf.argmax(model(x), axis=1), tf.int32)
    return float(tf.reduce_mean(tf.cast(tf.equal(predicted, y), tf.float32)))


def input_pipeline(x, y, batch, seed=0):
    """Shuffled batches of the training set, reshuffled every epoch and prepared on a
    background thread while the step runs."""
    n = int(x.shape[0])
    return (tf.data.Dataset.from_tensor_slices((x, y))
            .shuffle(n, seed=seed)
            .batch(batch)  # the last, smaller batch runs through the same graph
            .prefetch(tf.data.AUTOTUNE))


def train(name, model, data, epochs, batch, history, logdir):
    x_train, y_train, x_test, y_test = data
    optimizer = tf.optimizers.Adam(learning_rate=2e-3)
    step = make_step(model, optimizer)
    dataset = input_pipeline(x_train, y_train, batch)
    steps = len(dataset)
    curve = history[name] = []
    writer = tf.summary.create_file_writer(os.path.join(logdir, name))
    with writer.as_default(step=0):
        tf.summary.image("training digits", tf.reshape(x_train[:4], [4, 8, 8, 1]),
                         max_outputs=4)
    start = time.perf_counter()
    bar = tqdm(range(epochs), desc=f"{name:>3s}", unit="epoch")
    for epoch in bar:
        total_loss = total_acc = 0.0
        for xb, yb in dataset:
            loss, acc = step(xb, yb)
            total_loss += float(loss)
            total_acc += float(acc)
        curve.append((total_loss / steps, total_acc / steps, accuracy(model, x_test, y_test)))
        with writer.as_default(step=epoch + 1):
            tf.summary.scalar("loss", curve[-1][0])
            tf.summary.scalar("accuracy/train", curve[-1][1])
            tf.summary.scalar("accuracy/test", curve[-1][2])
        bar.set_postfix(loss=f"{curve[-1][0]:.4f}", acc=f"{curve[-1][1]:.3f}",
                        test=f"{curve[-1][2]:.3f}")
    elapsed = time.perf_counter() - start
    with writer.as_default(step=epochs):
        for v in model.trainable_variables:
            tf.summary.histogram(v.name, v)
        tf.summary.text("summary", f"{name}: {epochs} epochs, batch {batch}, Adam(2e-3)")
    writer.close()
    acc = accuracy(model, x_test, y_test)
    print(f"{name}: {sum(int(np.prod(v.shape)) for v in model.trainable_variables)} "
          f"parameters, {epochs} epochs of {steps} steps in {elapsed:.1f} s "
          f"(traced {step.experimental_get_tracing_count()} time); test accuracy {acc:.4f}")
    return step, acc


def plot_curves(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, MultipleLocator
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.6))
    lowest = 1.0
    for (name, curve), color in zip(history.items(), ("tab:blue", "tab:orange")):
        loss, train_acc, test_acc = zip(*curve)
        epochs = range(1, len(curve) + 1)
        ax_loss.plot(epochs, loss, color=color, label=f"{name} training loss")
        ax_acc.plot(epochs, test_acc, color=color, label=f"{name} test")
        ax_acc.plot(epochs, train_acc, "--", color=color, label=f"{name} train")
        lowest = min(lowest, *train_acc, *test_acc)
    ax_loss.legend()
    ax_loss.set(xlabel="epoch", ylabel="loss", yscale="log", title="training loss")
    # the accuracy axis spans every epoch's value, the first (lowest) ones included
    ax_acc.set(xlabel="epoch", ylabel="accuracy", ylim=(np.floor(lowest * 20) / 20, 1.0),
               title="accuracy per epoch")
    for ax in (ax_loss, ax_acc):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_minor_locator(MultipleLocator(1))  # a tick for every epoch
        ax.grid(alpha=0.3)
    ax_acc.legend(loc="lower right")
    fig.suptitle("tapeflow demo: MLP and CNN on the 8x8 digits (tf.data pipeline, Adam)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def keras_section(data, epochs, out) -> float:
    """An MLP through tf.keras: Sequential, compile with Keras's names, fit with a
    validation split, early stopping and the best weights saved; its test accuracy."""
    x_train, y_train, x_test, y_test = (t.numpy() for t in data)
    print("\n-- the same task the Keras way --")
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dropout(0.1),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    best = os.path.join(out, "keras", "best")
    callbacks = [
        tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=5,
                                         restore_best_weights=True, verbose=1),
        tf.keras.callbacks.ModelCheckpoint(best, save_best_only=True, save_weights_only=True),
    ]
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_split=0.1,
                        callbacks=callbacks, verbose=2)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"keras MLP: {len(history.epoch)} epochs in {seconds:.1f} s, test loss {loss:.4f}, "
          f"test accuracy {accuracy:.4f}; best weights saved to {best}")
    return accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "tapeflow-demo"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tf.random.set_seed(0)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    split = int(0.8 * len(x))
    data = (tf.constant(x[order[:split]]), tf.constant(y[order[:split]]),
            tf.constant(x[order[split:]]), tf.constant(y[order[split:]]))
    print(f"digits: {split} training and {len(x) - split} test images of 8x8 pixels, "
          "10 classes")

    history = {}
    models = {"mlp": MLP(), "cnn": CNN()}
    steps, accs = {}, {}
    logdir = os.path.join(args.out, "logs")
    for name, model in models.items():
        steps[name], accs[name] = train(name, model, data, args.epochs, args.batch, history,
                                        logdir)
    print(f"TensorBoard logs: {logdir} (view them with: tensorboard --logdir {logdir})")

    # a checkpoint of the CNN, restored into a fresh model of the same architecture
    checkpoint = tf.train.Checkpoint(model=models["cnn"])
    path = checkpoint.save(os.path.join(args.out, "ckpt"))
    fresh = CNN()
    fresh(data[2][:1])  # build its variables
    tf.train.Checkpoint(model=fresh).restore(path)
    restored = accuracy(fresh, data[2], data[3])
    print(f"checkpoint {path}: restored CNN test accuracy {restored:.4f} "
          f"({'same' if restored == accs['cnn'] else 'DIFFERENT'})")

    keras_accuracy = keras_section(data, args.epochs, args.out)

    mem = tf.memory()
    print(f"engine memory: {mem['num_tensors']} live tensors in {mem['num_data_buffers']} "
          f"buffers, {mem['num_bytes'] / 1024:.1f} KiB")
    xb, yb = data[0][:args.batch], data[1][:args.batch]
    # (the first timed call builds the program that reports each kernel's time: time the
    # second)
    step_ms = min(tf.time(lambda: steps["cnn"](xb, yb))["wall_ms"] for _ in range(2))
    tf.config.run_functions_eagerly(True)  # profile the same step op by op
    try:
        info = tf.profile(lambda: steps["cnn"](xb, yb))
    finally:
        tf.config.run_functions_eagerly(False)
    print(f"one CNN training step: {step_ms:.2f} ms traced; eagerly {len(info['kernels'])} "
          f"kernels, peak {info['peak_bytes'] / 1024:.1f} KiB; slowest kernels:")
    for k in sorted(info["kernels"], key=lambda k: -k["kernel_ms"])[:4]:
        print(f"  {k['name']:<28s} {k['kernel_ms']:7.3f} ms  out {k['output_shapes']}")
    try:
        curves = plot_curves(history, os.path.join(args.out, "training.png"))
        timeline = info.plot(os.path.join(args.out, "memory_timeline.png"))
        print(f"plots: {curves} (training curves), {timeline} (memory timeline)")
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install 'tapeflow[plot]')")
    ok = min(accs.values()) >= 0.97 and restored == accs["cnn"] and keras_accuracy >= 0.95
    print("demo finished: " + ("all test accuracies >= 97%" if ok else "BELOW TARGET"))


if __name__ == "__main__":
    main()
