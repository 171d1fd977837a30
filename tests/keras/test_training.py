"""tf.keras training: compile, fit, evaluate, predict, *_on_batch, train_step overrides,
metrics, callbacks and the progress bar, checked against NumPy and closed forms."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


@pytest.fixture(autouse=True)
def _fresh_names_and_seeds():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)  # the same initial weights and shuffles every run


def _linear_data(n=64, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 3).astype(np.float32)
    y = x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
    return x, y


def _linear_model(lr=0.1, **compile_args):
    model = keras.Sequential([keras.Input((3,)), layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="mse",
                  **compile_args)
    return model


def test_fit_solves_linear_regression_and_returns_history():
    x, y = _linear_data()
    model = _linear_model(metrics=["mae"])
    history = model.fit(x, y, batch_size=16, epochs=40, verbose=0)
    w, b = model.get_weights()
    np.testing.assert_allclose(w[:, 0], [1.5, -2.0, 0.5], atol=1e-3)
    np.testing.assert_allclose(b, [0.25], atol=1e-3)
    assert sorted(history.history) == ["loss", "mae"] and len(history.history["loss"]) == 40
    assert history.epoch == list(range(40)) and model.history is history
    assert history.params == {"verbose": 0, "epochs": 40, "steps": 4}
    assert history.history["loss"][-1] < 1e-5 < history.history["loss"][0]


def test_one_sgd_step_matches_numpy():
    x, y = _linear_data(8)
    model = _linear_model(lr=0.5)
    w0, b0 = model.get_weights()
    loss = model.train_on_batch(x, y)
    pred = x @ w0 + b0
    np.testing.assert_allclose(loss, np.mean((pred - y) ** 2), rtol=1e-5)
    grad_pred = 2 * (pred - y) / len(x)
    w1, b1 = model.get_weights()
    np.testing.assert_allclose(w1, w0 - 0.5 * x.T @ grad_pred, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.5 * grad_pred.sum(0), rtol=1e-5, atol=1e-6)
    assert int(model.optimizer.iterations) == 1


def test_traced_and_eager_training_agree():
    x, y = _linear_data(40)
    results = []
    for eager in (False, True):
        keras.utils.set_random_seed(7)
        model = _linear_model(run_eagerly=eager)
        model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
        results.append(model.get_weights())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_evaluate_predict_and_test_on_batch_against_numpy():
    rng = np.random.RandomState(1)
    x = rng.randn(50, 4).astype(np.float32)
    labels = rng.randint(0, 3, 50)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    logits = model.predict(x, batch_size=16, verbose=0)
    w, b = model.get_weights()
    np.testing.assert_allclose(logits, x @ w + b, rtol=1e-5, atol=1e-5)
    shifted = logits - logits.max(1, keepdims=True)
    nll = -(shifted[np.arange(50), labels] - np.log(np.exp(shifted).sum(1)))
    accuracy = np.mean(logits.argmax(1) == labels)
    loss, acc = model.evaluate(x, labels, batch_size=16, verbose=0)
    np.testing.assert_allclose([loss, acc], [nll.mean(), accuracy], rtol=1e-5)
    logs = model.evaluate(x, labels, verbose=0, return_dict=True)
    assert list(logs) == ["accuracy", "loss"]
    one = model.test_on_batch(x[:10], labels[:10], return_dict=True)
    np.testing.assert_allclose(one["loss"], nll[:10].mean(), rtol=1e-5)
    np.testing.assert_allclose(model.predict_on_batch(x[:2]), logits[:2], rtol=1e-5)


def test_accuracy_follows_the_loss_and_shapes():
    rng = np.random.RandomState(2)
    x = rng.randn(30, 4).astype(np.float32)
    onehot = keras.utils.to_categorical(rng.randint(0, 3, 30), 3)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    probs = model.predict(x, verbose=0)
    _, acc = model.evaluate(x, onehot, verbose=0)
    assert acc == pytest.approx(np.mean(probs.argmax(1) == onehot.argmax(1)))
    binary = keras.Sequential([keras.Input((4,)), layers.Dense(1, activation="sigmoid")])
    binary.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    target = (x[:, :1] > 0).astype(np.float32)
    _, acc = binary.evaluate(x, target, verbose=0)
    assert acc == pytest.approx(np.mean((binary.predict(x, verbose=0) > 0.5) == target))


def test_sample_weight_and_class_weight_weigh_the_loss():
    x, y = _linear_data(6)
    model = _linear_model()
    pred = model.predict(x, verbose=0)
    weights = np.array([1, 0, 2, 0, 1, 0], np.float32)
    loss = model.evaluate(x, y, sample_weight=weights, verbose=0, batch_size=6)
    np.testing.assert_allclose(loss, np.sum(weights * ((pred - y) ** 2)[:, 0]) / 6,
                               rtol=1e-5)
    # class_weight multiplies each example's loss by its class's weight
    labels = np.array([0, 1, 1, 0, 1, 0])
    cls = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    cls.compile(keras.optimizers.SGD(0.0), keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    logits = cls.predict(x, verbose=0)
    shifted = logits - logits.max(1, keepdims=True)
    nll = -(shifted[np.arange(6), labels] - np.log(np.exp(shifted).sum(1)))
    history = cls.fit(x, labels, batch_size=6, class_weight={0: 1.0, 1: 3.0}, verbose=0)
    expected = np.mean(nll * np.where(labels == 1, 3.0, 1.0))
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)


def test_validation_split_uses_the_last_samples_and_validation_data():
    x, y = _linear_data(50)
    model = _linear_model(lr=0.0)  # nothing changes: val_loss is the loss on x[40:]
    pred = model.predict(x, verbose=0)
    history = model.fit(x, y, validation_split=0.2, epochs=2, batch_size=10, verbose=0)
    assert history.params["steps"] == 4
    np.testing.assert_allclose(history.history["val_loss"],
                               [np.mean((pred[40:] - y[40:]) ** 2)] * 2, rtol=1e-5)
    history = model.fit(x, y, validation_data=(x[:5], y[:5]), epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["val_loss"][0],
                               np.mean((pred[:5] - y[:5]) ** 2), rtol=1e-5)
    assert sorted(history.history) == ["loss", "val_loss"]


def test_fit_on_a_dataset_with_steps_and_initial_epoch():
    x, y = _linear_data(64)
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16)
    model = _linear_model()
    history = model.fit(data, epochs=30, verbose=0, validation_data=data)
    assert history.history["loss"][-1] < 1e-4 and history.params["steps"] == 4
    assert history.history["val_loss"][-1] < 1e-4
    seen = []
    counter = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(batch))
    history = model.fit(data.repeat(), epochs=3, steps_per_epoch=5, initial_epoch=1,
                        verbose=0, callbacks=[counter])
    assert history.epoch == [1, 2] and seen == [0, 1, 2, 3, 4] * 2
    with pytest.raises(ValueError, match="`y` and `sample_weight` must not be given"):
        model.fit(data, y)


def test_overriding_train_step_and_test_step():
    class Custom(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="custom_loss")

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.abs(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.tracker.update_state(loss)
            return {"custom_loss": self.tracker.result()}

        def test_step(self, data):
            x, y = data
            return {"gap": tf.reduce_max(tf.abs(self(x) - y))}

    x, y = _linear_data(32)
    model = Custom()
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    history = model.fit(x, y, epochs=60, batch_size=32, verbose=0)
    assert list(history.history) == ["custom_loss"]
    assert history.history["custom_loss"][-1] < 0.1 < history.history["custom_loss"][0]
    gap = model.evaluate(x, y, verbose=0)
    np.testing.assert_allclose(gap, np.abs(model.predict(x, verbose=0) - y).max(), rtol=1e-5)


def test_compile_errors_and_names():
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(np.ones((2, 2)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="Unknown optimizer 'adamx'"):
        model.compile("adamx", "mse")
    with pytest.raises(ValueError, match="Unknown loss 'msee'"):
        model.compile("adam", "msee")
    model.compile("adam", "mse")
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    with pytest.raises(ValueError, match="cardinality is ambiguous"):
        model.fit(np.ones((3, 2)), np.ones((4, 1)), verbose=0)


def test_multi_output_losses_weights_and_metrics():
    x = keras.Input((2,))
    a = layers.Dense(1, name="a")(x)
    b = layers.Dense(1, name="b")(x)
    model = keras.Model(x, [a, b])
    model.compile(keras.optimizers.SGD(0.0), loss=["mse", "mae"], loss_weights=[1.0, 0.5],
                  metrics=[["mae"], []])
    data = np.random.RandomState(3).randn(8, 2).astype(np.float32)
    ya, yb = np.ones((8, 1), np.float32), np.zeros((8, 1), np.float32)
    pa, pb = model.predict(data, verbose=0)
    logs = model.evaluate(data, [ya, yb], verbose=0, return_dict=True)
    assert sorted(logs) == ["a_loss", "a_mae", "b_loss", "loss"]
    np.testing.assert_allclose(logs["a_loss"], np.mean((pa - ya) ** 2), rtol=1e-5)
    np.testing.assert_allclose(logs["b_loss"], np.mean(np.abs(pb - yb)), rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], logs["a_loss"] + 0.5 * logs["b_loss"], rtol=1e-5)


# --------------------------------------------------------------------------- callbacks


def test_early_stopping_and_restoring_the_best_weights():
    x, y = _linear_data(16)
    model = _linear_model(lr=0.0)  # the loss never improves after the first epoch
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=2)
    # (unshuffled: another order could sum to a loss smaller in the last bit)
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[stop], shuffle=False)
    assert history.epoch == [0, 1, 2] and stop.stopped_epoch == 2

    model = _linear_model(lr=1.5)  # diverges: the first epoch is the best
    restore = keras.callbacks.EarlyStopping(monitor="loss", patience=1,
                                            restore_best_weights=True)
    best = []
    remember = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: best.append(model.get_weights()) if epoch == 0
        else None)
    history = model.fit(x, y, epochs=10, batch_size=16, verbose=0,
                        callbacks=[remember, restore])
    assert len(history.epoch) < 10 and restore.best_epoch == 0
    for now, then in zip(model.get_weights(), best[0]):
        np.testing.assert_array_equal(now, then)


def test_model_checkpoint_saves_weights_that_load_back(tmp_path):
    x, y = _linear_data(32)
    model = _linear_model()
    path = str(tmp_path / "ckpt-{epoch:02d}")
    saver = keras.callbacks.ModelCheckpoint(path, monitor="loss", save_best_only=True,
                                            save_weights_only=True)
    model.fit(x, y, epochs=3, verbose=0, callbacks=[saver])
    fresh = _linear_model()
    fresh.load_weights(str(tmp_path / "ckpt-03"))
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    every = keras.callbacks.ModelCheckpoint(str(tmp_path / "e{epoch}.weights.h5"),
                                            save_weights_only=True)
    model.fit(x, y, epochs=2, verbose=0, callbacks=[every])
    fresh.load_weights(str(tmp_path / "e2.weights.h5"))  # Keras 3's file format
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert (tmp_path / "e1.weights.h5").exists()


def test_callback_hooks_run_in_order():
    calls = []

    class Recorder(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            calls.append(("train_begin", self.params["epochs"], self.model is model))

        def on_epoch_begin(self, epoch, logs=None):
            calls.append(("epoch_begin", epoch))

        def on_train_batch_end(self, batch, logs=None):
            calls.append(("batch_end", batch, sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            calls.append(("epoch_end", epoch, sorted(logs)))

        def on_train_end(self, logs=None):
            calls.append(("train_end",))

    x, y = _linear_data(4)
    model = _linear_model()
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[Recorder()],
              validation_data=(x, y))
    assert calls == [("train_begin", 1, True), ("epoch_begin", 0),
                     ("batch_end", 0, ["loss"]), ("batch_end", 1, ["loss"]),
                     ("epoch_end", 0, ["loss", "val_loss"]), ("train_end",)]


def test_progress_bar_output(capsys):
    x, y = _linear_data(20)
    model = _linear_model(metrics=["mae"])
    model.fit(x, y, batch_size=5, epochs=2, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2" and len(out) == 4
    assert re.fullmatch(r"4/4 - \d+s - \d+(ms|us|s)/step - loss: \d+\.\d{4}(e[-+]\d+)? - "
                        r"mae: \d+\.\d{4}(e[-+]\d+)?", out[1]), out[1]
    model.fit(x, y, batch_size=5, epochs=1, verbose=1)  # not a terminal: the last line
    out = capsys.readouterr().out.splitlines()
    # keras 3.15 prints no "Epoch 1/1" header for a single epoch
    assert re.fullmatch(r"4/4 ━{20} \d+s \d+(ms|us|s)/step - loss: \S+ - mae: \S+", out[0])
    model.fit(x, y, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""
    model.evaluate(x, y, batch_size=10, verbose=2)
    assert re.fullmatch(r"2/2 - \d+s - \d+(ms|us|s)/step - loss: \S+ - mae: \S+\n",
                        capsys.readouterr().out)


def test_progbar_redraws_on_a_terminal():
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = keras.utils.Progbar(4, interval=0, stream=stream)  # every update
    for step in range(1, 5):
        bar.update(step, [("loss", 0.5)])
    text = stream.getvalue()
    assert text.count("\r") == 4 and text.endswith("\n") and "loss: 0.5000" in text
    assert "\x1b[32m" + "━" * 10 + "\x1b[0m" in text  # half done after step 2


# --------------------------------------------------------------------------- metrics, utils


def test_metrics_against_numpy():
    m = keras.metrics.Mean()
    m.update_state([1.0, 2.0, 6.0])
    m.update_state([3.0], sample_weight=[2.0])
    assert float(m.result()) == pytest.approx((1 + 2 + 6 + 6) / 5)
    m.reset_state()
    assert float(m.result()) == 0.0
    s = keras.metrics.Sum()
    s.update_state([1.0, 2.5])
    assert float(s.result()) == 3.5
    acc = keras.metrics.Accuracy()
    acc.update_state([1, 2, 3, 4], [1, 2, 0, 4])
    assert float(acc.result()) == 0.75
    sparse = keras.metrics.SparseCategoricalAccuracy()
    sparse.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.0]])
    assert float(sparse.result()) == 0.5
    cat = keras.metrics.CategoricalAccuracy()
    cat.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]])
    assert float(cat.result()) == 0.5
    binary = keras.metrics.BinaryAccuracy()
    binary.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    assert float(binary.result()) == 0.75
    mse = keras.metrics.MeanSquaredError()
    mse.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
    assert float(mse.result()) == 0.25
    mae = keras.metrics.MeanAbsoluteError()
    assert float(mae([[0, 1], [0, 0]], [[1, 1], [0, 0]])) == 0.25
    with pytest.raises(ValueError, match="Unknown metric"):
        keras.metrics.get("accurac")


def test_utils():
    np.testing.assert_array_equal(keras.utils.to_categorical([0, 2, 1], 3), np.eye(3)[[0, 2, 1]])
    assert keras.utils.to_categorical([[1], [0]]).shape == (2, 2)
    assert keras.utils.to_categorical(np.array([[0, 1], [2, 0]])).shape == (2, 2, 3)
    with pytest.raises(ValueError, match="class ids must be in"):
        keras.utils.to_categorical([3], num_classes=2)
    keras.utils.set_random_seed(5)
    first = (np.random.rand(), tf.random.uniform([2]).numpy(),
             keras.layers.Dense(2)(np.ones((1, 2))).numpy())
    keras.utils.set_random_seed(5)
    second = (np.random.rand(), tf.random.uniform([2]).numpy(),
              keras.layers.Dense(2)(np.ones((1, 2))).numpy())
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1], second[1])
    np.testing.assert_array_equal(first[2], second[2])


def test_losses_line_up_ranks_as_keras_does():
    mse = keras.losses.MeanSquaredError()
    # labels [N] against predictions [N, 1]: element by element, not broadcast to [N, N]
    assert float(mse([1.0, 2.0], [[1.0], [4.0]])) == pytest.approx(2.0)
    assert float(mse([[1.0], [2.0]], [1.0, 4.0])) == pytest.approx(2.0)
    bce = keras.losses.BinaryCrossentropy()
    expected = -np.mean([np.log(0.9), np.log(0.8)])
    assert float(bce([1.0, 0.0], [[0.9], [0.2]])) == pytest.approx(expected, rel=1e-5)
    wrapped = keras.losses.LossFunctionWrapper(lambda t, p: tf.abs(t - p))
    assert float(wrapped([1.0], [[3.0]])) == 2.0


def test_regularizers_and_add_loss_join_the_loss_fit_reports():
    reg = keras.regularizers
    w = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)
    assert float(reg.L1(0.1)(w)) == pytest.approx(0.35)
    assert float(reg.L2(0.1)(w)) == pytest.approx(0.525)
    assert float(reg.L1L2(0.1, 0.1)(w)) == pytest.approx(0.875)
    assert float(reg.L1L2()(w)) == 0.0 and reg.get("l2").l2 == 0.01
    x, y = _linear_data(16)
    model = keras.Sequential([keras.Input((3,)),
                              layers.Dense(1, kernel_regularizer=reg.L2(0.5),
                                           bias_regularizer="l1")])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    kernel, bias = model.get_weights()
    penalty = 0.5 * np.sum(kernel ** 2) + 0.01 * np.sum(np.abs(bias))
    assert len(model.losses) == 2
    np.testing.assert_allclose(float(sum(model.losses)), penalty, rtol=1e-5)
    mse = np.mean((model.predict(x, verbose=0) - y) ** 2)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), mse + penalty, rtol=1e-5)
    history = model.fit(x, y, batch_size=16, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], mse + penalty, rtol=1e-5)
    config = model.layers[0].get_config()
    assert config["kernel_regularizer"] == {"class_name": "L2", "config": {"l2": 0.5}}
    assert layers.Dense.from_config(config)._regularizer_for["kernel"].l2 == 0.5

    class Penalized(layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x) * 0.0 + 3.0)
            return x

    inner = Penalized()
    net = keras.Sequential([keras.Input((3,)), inner, layers.Dense(1)])
    net(x)
    net(x)  # a new call replaces the losses of the previous one
    assert [float(v) for v in net.losses] == [3.0]
    net.compile(keras.optimizers.SGD(0.0), "mse")
    mse = np.mean((net.predict(x, verbose=0) - y) ** 2)
    np.testing.assert_allclose(net.evaluate(x, y, verbose=0), mse + 3.0, rtol=1e-5)


def test_learning_rate_scheduler_and_reduce_on_plateau():
    x, y = _linear_data(8)
    model = _linear_model(lr=0.1)
    rates = []
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.5 ** epoch)
    spy = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: rates.append(float(model.optimizer.learning_rate)))
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[schedule, spy])
    assert rates == [1.0, 0.5, 0.25] and history.history["learning_rate"] == rates
    # the epoch-only form
    model.fit(x, y, epochs=1, verbose=0,
              callbacks=[keras.callbacks.LearningRateScheduler(lambda epoch: 0.125)])
    assert float(model.optimizer.learning_rate) == 0.125

    frozen = _linear_model(lr=1e-9)  # the loss moves less than min_delta: a plateau
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=2)
    history = frozen.fit(x, y, epochs=6, verbose=0, shuffle=False, callbacks=[plateau])
    # an epoch logs the rate it ran with; two epochs without progress halve it
    assert history.history["learning_rate"] == pytest.approx(
        [1e-9, 1e-9, 1e-9, 5e-10, 5e-10, 2.5e-10], rel=1e-6)
    with pytest.raises(ValueError, match="factor >= 1.0"):
        keras.callbacks.ReduceLROnPlateau(factor=2.0)


def test_csv_logger_and_tensorboard_write_the_epoch_logs(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.util import tensor_util

    x, y = _linear_data(16)
    model = _linear_model()
    path = tmp_path / "log.csv"
    history = model.fit(x, y, epochs=3, verbose=0, validation_data=(x, y),
                        callbacks=[keras.callbacks.CSVLogger(str(path)),
                                   keras.callbacks.TensorBoard(str(tmp_path / "tb"))])
    rows = path.read_text().splitlines()
    assert rows[0] == "epoch,loss,val_loss" and len(rows) == 4
    assert [float(v) for v in rows[3].split(",")[1:]] == pytest.approx(
        [history.history["loss"][2], history.history["val_loss"][2]], rel=1e-6)
    for kind, key in (("train", "loss"), ("validation", "val_loss")):
        acc = ea.EventAccumulator(str(tmp_path / "tb" / kind),
                                  size_guidance={ea.TENSORS: 0})
        acc.Reload()
        events = acc.Tensors("epoch_loss")
        assert [e.step for e in events] == [0, 1, 2]
        np.testing.assert_allclose([float(tensor_util.make_ndarray(e.tensor_proto))
                                    for e in events], history.history[key], rtol=1e-6)


def test_precision_recall_auc_and_top_k_against_numpy():
    rng = np.random.RandomState(0)
    truth = rng.randint(0, 2, 60)
    scores = rng.rand(60).astype(np.float32)
    weights = rng.rand(60).astype(np.float32)
    positive = scores > 0.5
    precision, recall = keras.metrics.Precision(), keras.metrics.Recall()
    for m in (precision, recall):
        m.update_state(truth, scores, sample_weight=weights)
    tp = np.sum(weights * (positive & (truth == 1)))
    assert float(precision.result()) == pytest.approx(tp / np.sum(weights * positive), 1e-5)
    assert float(recall.result()) == pytest.approx(tp / np.sum(weights * (truth == 1)), 1e-5)
    several = keras.metrics.Precision(thresholds=[0.2, 0.9])
    several.update_state(truth, scores)
    expected = [np.sum((scores > t) & (truth == 1)) / np.sum(scores > t) for t in (0.2, 0.9)]
    np.testing.assert_allclose(several.result().numpy(), expected, rtol=1e-5)

    auc = keras.metrics.AUC(num_thresholds=50)
    auc.update_state(truth, scores)
    edges = np.array([-1e-7] + [(i + 1) / 49 for i in range(48)] + [1 + 1e-7], np.float32)
    above = scores[None, :] > edges[:, None]
    tpr = (above & (truth == 1)).sum(1) / (truth == 1).sum()
    fpr = (above & (truth == 0)).sum(1) / (truth == 0).sum()
    trapezoids = np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)
    assert float(auc.result()) == pytest.approx(trapezoids, rel=1e-5)
    perfect = keras.metrics.AUC()
    perfect.update_state([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])
    assert float(perfect.result()) == pytest.approx(1.0)
    auc.reset_state()
    assert float(auc.result()) == 0.0

    labels = rng.randint(0, 6, 40)
    preds = rng.rand(40, 6).astype(np.float32)
    in_top = np.array([labels[i] in np.argsort(-preds[i])[:2] for i in range(40)])
    top = keras.metrics.TopKCategoricalAccuracy(k=2)
    top.update_state(np.eye(6)[labels], preds)
    sparse_top = keras.metrics.SparseTopKCategoricalAccuracy(k=2)
    sparse_top.update_state(labels[:, None], preds)
    assert float(top.result()) == pytest.approx(in_top.mean())
    assert float(sparse_top.result()) == pytest.approx(in_top.mean())


def test_progress_bar_of_a_dataset_of_unknown_size(capsys):
    x, y = _linear_data(12)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).filter(lambda a, b: True)
    model = _linear_model()
    model.fit(data, epochs=1, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert re.match(r"3/3 - \d+s - ", out[0]) and len(out) == 1  # no header for one epoch


def test_crossentropy_metrics_against_keras():
    """Values real Keras 3 (TF 2.21) gives for the same calls."""
    m = keras.metrics.BinaryCrossentropy(from_logits=True)
    m.update_state(np.array([[1.0], [0.0], [1.0]]), np.array([[2.0], [-1.0], [-0.5]]))
    assert float(m.result()) == pytest.approx(0.4714222252368927, rel=1e-5)
    m = keras.metrics.BinaryCrossentropy(label_smoothing=0.2)
    m.update_state([[0.0, 1.0], [1.0, 1.0]], [[0.1, 0.9], [0.7, 0.6]], sample_weight=[1.0, 3.0])
    assert float(m.result()) == pytest.approx(0.45356202125549316, rel=1e-5)
    m = keras.metrics.CategoricalCrossentropy()
    m.update_state([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    assert float(m.result()) == pytest.approx(1.1769392490386963, rel=1e-5)
    m = keras.metrics.SparseCategoricalCrossentropy(from_logits=True)
    m.update_state(np.array([[1], [2]]), np.array([[1.0, 2.0, 0.5], [0.3, 0.1, 3.0]]))
    assert float(m.result()) == pytest.approx(0.28984272480010986, rel=1e-5)
    assert m.get_config() == {"name": "sparse_categorical_crossentropy", "dtype": "float32",
                              "from_logits": True, "axis": -1}
    named = keras.metrics.get("binary_crossentropy")
    assert isinstance(named, keras.metrics.BinaryCrossentropy)
    assert named.name == "binary_crossentropy"
    with pytest.raises(ValueError, match="binary_crossentropy"):  # ranks differ, as Keras
        keras.metrics.BinaryCrossentropy().update_state(np.ones(3), np.ones((3, 1)) / 2)
