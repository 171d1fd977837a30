"""Callbacks in small `fit` runs: ModelCheckpoint (whole models, batch frequency, best-only
with a threshold, file names), ReduceLROnPlateau (logs and messages), TerminateOnNaN and
BackupAndRestore. The expected file names and messages are what Keras 3.15.1 gives for the
same runs (the snippet is beside each)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import layers

C = keras.callbacks


@pytest.fixture(autouse=True)
def _fresh():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _data(n=10):
    rng = np.random.default_rng(0)
    x = rng.random((n, 2)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def _model(lr=0.1):
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    return model


def test_model_checkpoint_saves_whole_models_that_load_back(tmp_path):
    x, y = _data()
    model = _model()
    pattern = str(tmp_path / "sub" / "m-{epoch:02d}-{loss:.3f}.keras")
    history = model.fit(x, y, batch_size=5, epochs=2, verbose=0,
                        callbacks=[C.ModelCheckpoint(pattern)])
    names = sorted(os.listdir(tmp_path / "sub"))
    losses = history.history["loss"]
    assert names == [f"m-01-{losses[0]:.3f}.keras", f"m-02-{losses[1]:.3f}.keras"]
    loaded = keras.models.load_model(str(tmp_path / "sub" / names[-1]))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    assert loaded.optimizer is not None  # compiled as saved
    with pytest.raises(ValueError, match="must end in `.keras`"):
        C.ModelCheckpoint(str(tmp_path / "m.ckpt"))
    with pytest.raises(ValueError, match="Unrecognized save_freq"):
        C.ModelCheckpoint(str(tmp_path / "m.keras"), save_freq="batch")


def test_model_checkpoint_every_n_batches(tmp_path):
    # keras: ModelCheckpoint("{epoch}-{batch}.keras", save_freq=3), 10 samples,
    # batch_size=2, 2 epochs -> ['1-3.keras', '2-1.keras', '2-4.keras']
    x, y = _data()
    model = _model()
    cb = C.ModelCheckpoint(str(tmp_path / "{epoch}-{batch}.keras"), save_freq=3)
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["1-3.keras", "2-1.keras", "2-4.keras"]
    weights = C.ModelCheckpoint(str(tmp_path / "w{batch}.weights.h5"), save_freq=5,
                                save_weights_only=True)
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[weights])
    fresh = _model()
    fresh.load_weights(str(tmp_path / "w5.weights.h5"))
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_model_checkpoint_best_only_threshold_and_messages(tmp_path, capsys):
    x, y = _data()
    model = _model()
    never = C.ModelCheckpoint(str(tmp_path / "best.keras"), monitor="loss",
                              save_best_only=True, initial_value_threshold=0.0, verbose=1)
    model.fit(x, y, batch_size=5, epochs=1, verbose=0, callbacks=[never])
    # keras prints '\nEpoch 1: loss did not improve from 0.00000\n'
    assert capsys.readouterr().out == "\nEpoch 1: loss did not improve from 0.00000\n"
    assert not (tmp_path / "best.keras").exists()
    best = C.ModelCheckpoint(str(tmp_path / "best.keras"), monitor="loss",
                             save_best_only=True, verbose=1)
    history = model.fit(x, y, batch_size=5, epochs=1, verbose=0, callbacks=[best])
    path = str(tmp_path / "best.keras")
    loss = history.history["loss"][0]
    assert capsys.readouterr().out == (
        f"\nEpoch 1: loss improved from None to {loss:.5f}, saving model to {path}\n"
        f"\nEpoch 1: finished saving model to {path}\n")
    assert best.best == loss
    # mode="max" on a loss: only the first epoch is an "improvement"
    up = C.ModelCheckpoint(str(tmp_path / "up{epoch}.keras"), monitor="loss", mode="max",
                           save_best_only=True)
    model.fit(x, y, batch_size=5, epochs=3, verbose=0, callbacks=[up])
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith("up")) == ["up1.keras"]


def test_reduce_lr_on_plateau_logs_and_prints_its_reductions(capsys):
    # keras: ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, verbose=1,
    # min_delta=10), SGD(0.1), 3 epochs -> prints
    # '\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n'
    # '\nEpoch 3: ... to 0.02500000037252903.\n'; history learning_rate [0.1, 0.1, 0.05]
    x, y = _data()
    model = _model(0.1)
    cb = C.ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, verbose=1, min_delta=10)
    history = model.fit(x, y, batch_size=5, epochs=3, verbose=0, callbacks=[cb])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.05], rel=1e-6)
    out = capsys.readouterr().out
    assert out.startswith("\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05")
    assert "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.025" in out
    assert out.count("ReduceLROnPlateau") == 2
    # cooldown and min_lr; keras, the same run with cooldown=2, min_lr=0.02, 8 epochs:
    # [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02] (float32 values)
    model = _model(0.1)
    cb = C.ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, min_delta=10,
                             cooldown=2, min_lr=0.02)
    history = model.fit(x, y, batch_size=5, epochs=8, verbose=0, callbacks=[cb])
    assert history.history["learning_rate"] == pytest.approx(
        [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02], rel=1e-6)
    with pytest.warns(UserWarning, match="conditioned on metric `val_loss`"):
        _model().fit(x, y, epochs=1, verbose=0, callbacks=[C.ReduceLROnPlateau()])


def test_terminate_on_nan_stops_or_raises():
    x, y = _data()
    y = y.copy()
    y[6:] = np.nan  # the second batch of 5 has a NaN loss
    model = _model()
    seen = []
    spy = C.LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(batch))
    history = model.fit(x, y, batch_size=5, epochs=3, verbose=0, shuffle=False,
                        callbacks=[C.TerminateOnNaN(), spy])
    assert seen == [0, 1] and np.isnan(history.history["loss"][-1])
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 1"):
        _model().fit(x, y, batch_size=5, epochs=1, verbose=0, shuffle=False,
                     callbacks=[C.TerminateOnNaN(raise_error=True)])


class _Crash(C.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise KeyboardInterrupt("stopped")


def test_backup_and_restore_saves_and_restores_training_state(tmp_path):
    x, y = _data()
    backup = str(tmp_path / "backup")
    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=5, epochs=4, verbose=0,
                  callbacks=[C.BackupAndRestore(backup), _Crash()])
    # epoch index 1 ended (and was backed up) before the crash
    with open(os.path.join(backup, "training_metadata.json")) as f:
        assert json.load(f) == {"epoch": 2, "batch": 0}
    saved = model.get_weights()
    fresh = _model()
    restore = C.BackupAndRestore(backup, delete_checkpoint=False)
    restore.set_model(fresh)
    restore.on_train_begin()
    for a, b in zip(fresh.get_weights(), saved):
        np.testing.assert_array_equal(a, b)
    assert fresh._initial_epoch == 2  # where Keras's loop resumes
    # a full run removes its backup at the end
    _model().fit(x, y, batch_size=5, epochs=1, verbose=0,
                 callbacks=[C.BackupAndRestore(str(tmp_path / "other"))])
    assert not (tmp_path / "other").exists()
    with pytest.raises(ValueError, match="Empty `backup_dir`"):
        C.BackupAndRestore("")
    with pytest.raises(ValueError, match="Invalid value for argument `save_freq`"):
        C.BackupAndRestore(backup, save_freq="batch")


def test_backup_every_n_batches_and_double_checkpoint(tmp_path):
    x, y = _data()
    backup = tmp_path / "b"
    cb = C.BackupAndRestore(str(backup), save_freq=2, double_checkpoint=True,
                            delete_checkpoint=False)
    _model().fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[cb])
    # saved after batches 1 and 3 (not at the epoch's end): the first kept as .bkp
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "latest.weights.h5.bkp",
                                          "training_metadata.json",
                                          "training_metadata.json.bkp"]
    with open(backup / "training_metadata.json.bkp") as f:
        assert json.load(f) == {"epoch": 0, "batch": 1}
    with open(backup / "training_metadata.json") as f:
        assert json.load(f) == {"epoch": 0, "batch": 3}
