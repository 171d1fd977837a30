"""`tf.keras.callbacks`: hooks `fit`, `evaluate` and `predict` call at the start and end
of training, epochs and batches, and the progress bar they print.

Example:
    >>> stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2)
    >>> # model.fit(x, y, epochs=100, callbacks=[stop]) ends after 2 epochs without progress
"""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import sys
import time
import warnings

import numpy as np

from ..summary import create_file_writer, scalar
from ._distributed import is_chief

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "Progbar", "EarlyStopping",
           "ModelCheckpoint", "TerminateOnNaN", "BackupAndRestore", "LambdaCallback",
           "LearningRateScheduler", "ReduceLROnPlateau", "CSVLogger", "TensorBoard"]

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    """The base class: override any of the `on_*` hooks; `self.model` and `self.params`
    are set before training starts."""

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params


def _noop(self, *args, **kwargs):
    return None


def _writes_files(callback: Callback) -> bool:
    """Whether this process writes the callback's files: under a multi-process strategy
    only the chief does (the other workers hold the same logs)."""
    strategy = getattr(callback.model, "distribute_strategy", None)
    return strategy is None or is_chief(strategy)


for _hook in _HOOKS:
    setattr(Callback, _hook, _noop)
Callback.on_batch_begin = Callback.on_batch_end = _noop


def _to_batch_begin(self, batch, logs=None):
    # Keras: a training batch's hooks default to the generic on_batch_* ones
    self.on_batch_begin(batch, logs)


def _to_batch_end(self, batch, logs=None):
    self.on_batch_end(batch, logs)


Callback.on_train_batch_begin, Callback.on_train_batch_end = _to_batch_begin, _to_batch_end


class CallbackList:
    """Calls a hook on every callback in order."""

    def __init__(self, callbacks, model, params: dict):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)

    def __getattr__(self, hook: str):
        if hook not in _HOOKS:
            raise AttributeError(hook)

        # every hook gets its logs, {} where there are none, as Keras passes them
        arity = 2 if "batch" in hook or "epoch" in hook else 1

        def call(*args):
            args = args + ({},) * (arity - len(args))
            for cb in self.callbacks:
                getattr(cb, hook)(*args)
        return call


class History(Callback):
    """Records the logs of every epoch: `history` maps each metric to its values per epoch
    and `epoch` lists the epochs run; `fit` returns it."""

    def __init__(self):
        super().__init__()
        self.history: dict = {}
        self.epoch: list = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        self.model.history = self


def _format_time(seconds: float, unit: str) -> str:
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def _format_value(value: float) -> str:
    return f" {value:.4f}" if abs(value) > 1e-3 else f" {value:.4e}"


class Progbar:
    """Keras's progress bar: `update(current, values)` redraws
    `12/100 ━━━━━━━━━━━━━━━━━━━━ 3s 5ms/step - loss: 0.1234` (the ETA while running, the
    total time at the end) at most every `interval` seconds; with `verbose=2` only the
    final line, without the bar. A metric's shown value is the average of the values given
    so far, weighted by the steps each covered, unless it is named in `stateful_metrics`
    (shown as given); `stateless_metrics` turns this around (only those are averaged).
    Where the output is not a terminal only the final line is written.

    Example:
        >>> bar = tf.keras.utils.Progbar(10, stateful_metrics=["acc"])
        >>> for step in range(1, 11):
        ...     bar.update(step, [("loss", 0.5), ("acc", 0.9)])
    """

    def __init__(self, target, width: int = 20, verbose: int = 1, interval: float = 0.05,
                 stateful_metrics=None, stateless_metrics=None, unit_name: str = "step",
                 stream=None):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Only one of `stateful_metrics` or `stateless_metrics` can be "
                             "provided.")
        self.target, self.width, self.verbose, self.unit_name = target, width, verbose, \
            unit_name
        self.interval = interval
        self.stateful_metrics = set(stateful_metrics or ()) \
            if stateless_metrics is None else None
        self.stateless_metrics = None if stateless_metrics is None else set(stateless_metrics)
        self.stream = stream
        self._values: dict = {}
        self._values_order: list = []
        self._seen_so_far = 0
        self._start = time.time()
        self._last_update = 0.0
        self._first_step_end = None
        self._previous_width = 0
        self._dynamic = self._out().isatty() if hasattr(self._out(), "isatty") else False

    def _out(self):
        return self.stream or sys.stdout

    def _step_time(self, current: int, now: float) -> float:
        # the first step (tracing) is left out of the estimate once there are others
        if not current:
            return 0.0
        if self._first_step_end is not None and current > 1:
            per_step = (now - self._first_step_end) / (current - 1)
        else:
            per_step = (now - self._start) / current
        if current == 1:
            self._first_step_end = now
        return per_step

    def _averaged(self, name: str) -> bool:
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        return name in self.stateless_metrics

    def _record(self, current: int, values, finalize: bool) -> None:
        for name, value in values or []:
            if name not in self._values_order:
                self._values_order.append(name)
            if self._averaged(name) and not finalize:
                # a value stands for the steps since the previous update
                weight = max(current - self._seen_so_far, 1)
                total, count = self._values.get(name, (0.0, 0))
                self._values[name] = (total + value * weight, count + weight)
            else:
                self._values[name] = (value, 1)
        self._seen_so_far = current

    def _metrics(self) -> str:
        out = ""
        for name in self._values_order:
            total, count = self._values[name]
            out += f" - {name}:{_format_value(float(np.mean(total)) / max(1, count))}"
        return out

    def update(self, current: int, values=None, finalize: bool | None = None) -> None:
        """Record `values` (pairs `(name, value)`) at step `current` and redraw; the bar is
        final when `current` reaches the target (or with `finalize=True`)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values, finalize)
        now = time.time()
        per_step = self._step_time(current, now)
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw(current, now, per_step, finalize)
        elif self.verbose == 2 and finalize and self.target:
            digits = int(math.log10(self.target)) + 1
            self._out().write(f"{current:{digits}d}/{self.target} - {now - self._start:.0f}s -"
                              f"{_format_time(per_step, self.unit_name)}{self._metrics()}\n")
            self._out().flush()
        self._last_update = now

    def _draw(self, current: int, now: float, per_step: float, finalize: bool) -> None:
        if self.target:
            digits = int(math.log10(self.target)) + 1
            done = int(self.width * current / self.target)
            bar = (f"{current:{digits}d}/{self.target} " + "━" * done
                   + "━" * (self.width - done) if not self._dynamic else
                   f"\x1b[1m{current:{digits}d}/{self.target}\x1b[0m \x1b[32m"
                   + "━" * done + "\x1b[0m\x1b[37m" + "━" * (self.width - done)
                   + "\x1b[0m")
        else:
            bar = f"{current:7d}/Unknown"
        if self.target and not finalize:
            eta = per_step * (self.target - current)
            clock = (f"{eta // 3600:.0f}:{eta % 3600 // 60:02.0f}:{eta % 60:02.0f}"
                     if eta > 3600 else f"{eta // 60:.0f}:{eta % 60:02.0f}"
                     if eta > 60 else f"{eta:.0f}s")
        else:
            clock = f"{now - self._start:.0f}s"
        line = f"{bar} {clock}{_format_time(per_step, self.unit_name)}{self._metrics()}"
        if self._dynamic:
            pad = max(self._previous_width - len(line), 0)
            self._out().write("\r" + line + " " * pad + ("\n" if finalize else ""))
            self._previous_width = len(line)
        elif finalize:  # a log file gets the final line only
            self._out().write(line + "\n")
        self._out().flush()

    def add(self, n: int, values=None) -> None:
        """`update` at `n` steps past the last one."""
        self.update(self._seen_so_far + n, values)


class ProgbarLogger(Callback):
    """Prints the epoch header and the progress bar of `fit` and `evaluate`."""

    def __init__(self):
        super().__init__()
        self._bar = None

    def _verbose(self) -> int:
        return self.params.get("verbose", 1)

    def on_epoch_begin(self, epoch, logs=None):
        # as Keras 3: a single epoch gets no "Epoch 1/1" header
        if self._verbose() and self.params.get("epochs", 1) > 1:
            sys.stdout.write(f"Epoch {epoch + 1}/{self.params['epochs']}\n")
        # fit's logs are running means already: shown as they are (stateless_metrics=set())
        self._bar = Progbar(self.params.get("steps"), verbose=self._verbose(),
                            stateless_metrics=set())

    def on_train_batch_end(self, batch, logs=None):
        if self._verbose() == 1 and self._bar is not None:
            self._bar.update(batch + 1, sorted((logs or {}).items()), finalize=False)

    def on_train_batch_begin(self, batch, logs=None):
        self._seen = batch + 1

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            if self._bar.target is None:  # a dataset of unknown size: now it is known
                self._bar.target = self._seen
            self._bar.update(self._bar.target, list((logs or {}).items()), finalize=True)


class EarlyStopping(Callback):
    """Stops `fit` when `monitor` has not improved by `min_delta` for `patience` epochs;
    with `restore_best_weights` the model gets the weights of its best epoch back.

    Example: `EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)`.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline=None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got "
                             f"{mode!r}")
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        if mode == "auto":
            mode = "max" if "acc" in monitor or monitor.endswith("auc") else "min"
        self.mode = mode
        self.min_delta = abs(min_delta) * (1 if mode == "max" else -1)
        self.stopped_epoch = 0

    def _improved(self, value: float, reference: float) -> bool:
        return value - self.min_delta > reference if self.mode == "max" else \
            value - self.min_delta < reference

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self.best = -np.inf if self.mode == "max" else np.inf
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            sys.stderr.write(f"Early stopping conditioned on metric `{self.monitor}` which "
                             f"is not available. Available metrics are: "
                             f"{','.join(logs or {})}\n")
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(value, self.best):
            self.best, self.best_epoch = value, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            sys.stdout.write(f"Epoch {self.stopped_epoch + 1}: early stopping\n")
        if self.restore_best_weights and self.best_weights is not None and \
                self.stopped_epoch > 0:
            if self.verbose > 0:
                sys.stdout.write("Restoring model weights from the end of the best epoch: "
                                 f"{self.best_epoch + 1}.\n")
            self.model.set_weights(self.best_weights)


_MAXIMIZED = ("acc", "auc", "precision", "recall", "f1_score", "fbeta_score", "iou",
              "r2_score", "true_positives", "true_negatives", "pearson", "cosine_similarity",
              "at_recall", "at_precision", "at_specificity", "at_sensitivity")


def _direction(callback: str, monitor: str, mode: str) -> str:
    """"min" or "max" for `mode`; "auto" follows the metric's name as Keras follows the
    metric's direction (a loss or an error goes down, accuracy-like metrics go up)."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{callback} mode '{mode}' is unknown, fallback to auto mode.",
                      stacklevel=3)
        mode = "auto"
    if mode != "auto":
        return mode
    name = monitor[4:] if monitor.startswith("val_") else monitor
    return "max" if any(key in name for key in _MAXIMIZED) else "min"


class ModelCheckpoint(Callback):
    """Saves the model at the end of every epoch (or every `save_freq` batches when it is
    an int): the whole model (`model.save`, a `.keras` path) or with `save_weights_only`
    its weights (`save_weights`: a `.weights.h5` path, or a TensorFlow checkpoint prefix).
    `filepath` may hold `{epoch}`, `{batch}` and log keys (`"ckpt-{epoch:02d}-
    {val_loss:.2f}.keras"`). With `save_best_only` it saves only when `monitor` improved
    on the best so far (starting from `initial_value_threshold` when given).

    Example:
        >>> best = tf.keras.callbacks.ModelCheckpoint("best.keras", monitor="val_loss",
        ...                                           save_best_only=True)
    """

    def __init__(self, filepath, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.save_freq = save_freq
        if save_freq != "epoch" and (not isinstance(save_freq, int)
                                     or isinstance(save_freq, bool)):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are "
                             "'epoch' or integer values")
        if not save_weights_only and not self.filepath.endswith((".keras", ".h5")):
            raise ValueError("The filepath provided must end in `.keras` (Keras model "
                             f"format). Received: filepath={self.filepath}")
        self.mode = _direction("ModelCheckpoint", monitor, mode)
        self.best = initial_value_threshold
        self._current_epoch = 0
        self._batches_since_saving = 0
        self._last_batch_seen = None

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        # batches count up within an epoch and restart from 0 in the next
        if self._last_batch_seen is None or batch <= self._last_batch_seen:
            self._batches_since_saving += batch + 1
        else:
            self._batches_since_saving += batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_since_saving >= self.save_freq:
            self._batches_since_saving = 0
            self._save(self._current_epoch, batch, logs or {})

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def _path(self, epoch: int, batch, logs: dict) -> str:
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e}") from None

    def _improved(self, value) -> bool:
        if self.best is None:
            return True
        return value > self.best if self.mode == "max" else value < self.best

    def _should_save(self, epoch: int, logs: dict, path: str) -> bool:
        if not self.save_best_only:
            if self.verbose > 0:
                sys.stdout.write(f"\nEpoch {epoch + 1}: saving model to {path}\n")
            return True
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.",
                          stacklevel=3)
            return True
        if np.ndim(value) > 0:
            warnings.warn("Can save best model only when `monitor` is a scalar value. "
                          f"Received: {value}. Falling back to `save_best_only=False`.")
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._improved(value):
            if self.verbose > 0:
                sys.stdout.write(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} "
                                 f"to {value:.5f}, saving model to {path}\n")
            self.best = value
            return True
        if self.verbose > 0:
            sys.stdout.write(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                             f"{best}\n")
        return False

    def _save(self, epoch: int, batch, logs: dict) -> None:
        path = self._path(epoch, batch, logs)
        if not self._should_save(epoch, logs, path):
            return
        if os.path.isdir(path):
            raise IOError("Please specify a non-directory filepath for ModelCheckpoint. "
                          f"Filepath used is an existing directory: {path}")
        folder = os.path.dirname(path)
        if folder and _writes_files(self):
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)
        if self.verbose > 0:
            sys.stdout.write(f"\nEpoch {epoch + 1}: finished saving model to {path}\n")


class TerminateOnNaN(Callback):
    """Stops training at the first batch whose loss is NaN or infinite (or, with
    `raise_error=True`, raises RuntimeError there).

    Example:
        >>> model.fit(x, y, callbacks=[tf.keras.callbacks.TerminateOnNaN()])
    """

    def __init__(self, raise_error: bool = False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or not (np.isnan(loss) or np.isinf(loss)):
            return
        if self.raise_error:
            raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                               f"{loss}. Terminating training immediately.")
        sys.stdout.write(f"Batch {batch}: Invalid loss, terminating training\n")
        self.model.stop_training = True


class BackupAndRestore(Callback):
    """Backs training up to `backup_dir` (the weights as `latest.weights.h5`, with the
    optimizer's state, and the epoch reached in `training_metadata.json`) at the end of
    every epoch, or every `save_freq` batches; a `fit` started again with the same
    directory first restores them, so that an interrupted run goes on from its backup.
    The directory is removed when training ends (unless `delete_checkpoint=False`);
    `double_checkpoint` keeps the previous backup too (`*.bkp`), used when the latest
    cannot be read.

    Example:
        >>> backup = tf.keras.callbacks.BackupAndRestore(backup_dir="/tmp/backup")
        >>> model.fit(x, y, epochs=10, callbacks=[backup])
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint: bool = False,
                 delete_checkpoint: bool = True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and (not isinstance(save_freq, int)
                                     or isinstance(save_freq, bool)):
            raise ValueError("Invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq}. Expected either 'epoch' or an integer "
                             "value.")
        self.backup_dir, self.save_freq = os.fspath(backup_dir), save_freq
        self.double_checkpoint, self.delete_checkpoint = double_checkpoint, delete_checkpoint
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._metadata_path = os.path.join(self.backup_dir, "training_metadata.json")
        self._prev_weights_path = self._weights_path + ".bkp"
        self._prev_metadata_path = self._metadata_path + ".bkp"
        self._batches_since_saving = 0
        self._last_batch_seen = 0
        self._current_epoch = 0

    def on_train_begin(self, logs=None):
        try:
            self._load()
        except OSError:
            if not os.path.exists(self._prev_weights_path):
                raise
            shutil.copy(self._prev_weights_path, self._weights_path)
            if os.path.exists(self._prev_metadata_path):
                shutil.copy(self._prev_metadata_path, self._metadata_path)
            elif os.path.exists(self._metadata_path):
                os.remove(self._metadata_path)
            self._load()

    def _load(self) -> None:
        if not self.model.built:
            raise ValueError("To use the BackupAndRestore callback, you model must be built "
                             f"before you call `fit()`. Model {self.model} is unbuilt. You "
                             "can build it beforehand by calling it on a batch of data.")
        if os.path.exists(self._weights_path):
            optimizer = getattr(self.model, "optimizer", None)
            if optimizer is not None and hasattr(optimizer, "build"):
                # its slots must exist for the file's optimizer state to load
                optimizer.build(self.model.trainable_weights)
            self.model.load_weights(self._weights_path)
        if os.path.exists(self._metadata_path):
            with open(self._metadata_path) as f:
                self._current_epoch = json.load(f)["epoch"]
            # fit starts from this epoch (Keras's contract with its training loop)
            self.model._initial_epoch = self._current_epoch

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save()

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        if batch <= self._last_batch_seen:  # a new epoch
            self._batches_since_saving += batch + 1
        else:
            self._batches_since_saving += batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_since_saving >= self.save_freq:
            self._batches_since_saving = 0
            self._save()

    def _save(self) -> None:
        if not _writes_files(self):
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for latest, previous in ((self._weights_path, self._prev_weights_path),
                                     (self._metadata_path, self._prev_metadata_path)):
                if os.path.exists(latest):
                    shutil.copy(latest, previous)
        self.model.save_weights(self._weights_path, overwrite=True)
        with open(self._metadata_path, "w") as f:
            json.dump({"epoch": self._current_epoch, "batch": self._last_batch_seen}, f)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir) and \
                _writes_files(self):
            shutil.rmtree(self.backup_dir)


class LambdaCallback(Callback):
    """A callback made of functions: `on_epoch_begin(epoch, logs)`, `on_epoch_end`,
    `on_train_batch_begin(batch, logs)`, `on_train_batch_end`, `on_train_begin(logs)`,
    `on_train_end(logs)`.

    Example: `LambdaCallback(on_epoch_end=lambda epoch, logs: print(logs["loss"]))`.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for hook, fn in hooks.items():
            if hook not in _HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {hook!r}")
            if fn is not None:
                setattr(self, hook, fn)


def _set_learning_rate(model, value: float) -> None:
    optimizer = model.optimizer
    if not hasattr(optimizer, "learning_rate"):
        raise ValueError('The optimizer must have a "learning_rate" attribute.')
    optimizer.learning_rate = float(value)


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at the start of every epoch to
    `schedule(epoch, lr)` (or `schedule(epoch)`).

    Example: `LearningRateScheduler(lambda epoch, lr: lr if epoch < 10 else lr * 0.9)`.
    """

    def __init__(self, schedule, verbose: int = 0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        current = float(self.model.optimizer.learning_rate)
        try:
            value = self.schedule(epoch, current)
        except TypeError:  # a schedule of the epoch alone
            value = self.schedule(epoch)
        if not isinstance(value, (float, int, np.floating, np.integer)):
            value = float(value)
        _set_learning_rate(self.model, value)
        if self.verbose > 0:
            sys.stdout.write(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning "
                             f"rate to {float(value)}.\n")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` when `monitor` has not improved by
    `min_delta` for `patience` epochs (not below `min_lr`; then waits `cooldown` epochs).
    Each epoch's logs get the rate it ran with as "learning_rate"; with `verbose=1` each
    reduction is printed.

    Example:
        >>> plateau = tf.keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.2,
        ...                                                patience=5, min_lr=1e-4)
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             f"factor={factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, \
            verbose
        self.min_delta, self.cooldown, self.min_lr = abs(min_delta), cooldown, min_lr
        self.mode = _direction("ReduceLROnPlateau", monitor, mode)
        self.cooldown_counter, self.wait, self.best = 0, 0, None

    def on_train_begin(self, logs=None):
        self.wait, self.cooldown_counter, self.best = 0, 0, None

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _improved(self, value) -> bool:
        if self.best is None:
            return True
        return value - self.min_delta > self.best if self.mode == "max" else \
            value + self.min_delta < self.best

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = float(self.model.optimizer.learning_rate)
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` "
                          f"which is not available. Available metrics are: "
                          f"{','.join(logs)}.", stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(value):
            self.best, self.wait = value, 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old = float(self.model.optimizer.learning_rate)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    _set_learning_rate(self.model, new)
                    if self.verbose > 0:
                        sys.stdout.write(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing "
                                         f"learning rate to {new}.\n")
                    self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """Writes each epoch's logs as a row of a CSV file (`epoch` first, then the log keys
    in sorted order); `append=True` continues an existing file.

    Example: `CSVLogger("training.log")`.
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename, self.separator, self.append = str(filename), separator, append
        self._file = self._writer = None

    def on_train_begin(self, logs=None):
        if not _writes_files(self):
            return
        existed = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._keys = None
        self._header_written = existed

    def on_epoch_end(self, epoch, logs=None):
        if self._file is None:  # not the chief
            return
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys,
                                          delimiter=self.separator)
            if not self._header_written:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA")
                                                  for k in self._keys}})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None


class TensorBoard(Callback):
    """Writes the epoch logs as TensorBoard scalars (`tf.summary`): the training ones to
    `log_dir/train` as "epoch_<name>", the validation ones to `log_dir/validation`.

    Example: `model.fit(x, y, callbacks=[TensorBoard(log_dir="logs")])`, then
    `tensorboard --logdir logs`.
    """

    def __init__(self, log_dir: str = "logs", **kwargs):
        super().__init__()
        unsupported = {k for k, v in kwargs.items() if v not in (None, 0, False, "epoch")}
        if unsupported:
            raise NotImplementedError(f"TensorBoard: only epoch scalars are written; "
                                      f"unsupported arguments {sorted(unsupported)}")
        self.log_dir = str(log_dir)
        self._writers: dict = {}

    def _writer(self, kind: str):
        if kind not in self._writers:
            self._writers[kind] = create_file_writer(os.path.join(self.log_dir, kind))
        return self._writers[kind]

    def on_epoch_end(self, epoch, logs=None):
        if not _writes_files(self):
            return
        for key, value in (logs or {}).items():
            kind, name = ("validation", key[4:]) if key.startswith("val_") else ("train", key)
            with self._writer(kind).as_default():
                scalar(f"epoch_{name}", value, step=epoch)

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
