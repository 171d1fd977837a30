"""`tf.keras.callbacks`: hooks `fit`, `evaluate` and `predict` call at the start and end
of training, epochs and batches, and the progress bar they print.

Example:
    >>> stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2)
    >>> # model.fit(x, y, epochs=100, callbacks=[stop]) ends after 2 epochs without progress
"""
from __future__ import annotations

import csv
import math
import os
import sys
import time

import numpy as np

from ..summary import create_file_writer, scalar
from ._distributed import is_chief

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "Progbar", "EarlyStopping",
           "ModelCheckpoint", "LambdaCallback", "LearningRateScheduler", "ReduceLROnPlateau",
           "CSVLogger", "TensorBoard"]

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
    total time at the end); with `verbose=2` only the final line, without the bar."""

    def __init__(self, target, width: int = 20, verbose: int = 1, unit_name: str = "step",
                 stream=None):
        self.target, self.width, self.verbose, self.unit_name = target, width, verbose, \
            unit_name
        self.stream = stream
        self._start = time.time()
        self._first_step_end = None
        self._previous_width = 0
        self._dynamic = self._out().isatty() if hasattr(self._out(), "isatty") else False

    def _out(self):
        return self.stream or sys.stdout

    def _step_time(self, current: int, now: float) -> float:
        # the first step (tracing) is left out of the estimate once there are others
        if current == 1 or self._first_step_end is None:
            self._first_step_end = now
            return (now - self._start) / max(current, 1)
        if current > 1:
            return (now - self._first_step_end) / (current - 1)
        return 0.0

    def update(self, current: int, values=None, finalize: bool | None = None) -> None:
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        now = time.time()
        per_step = self._step_time(current, now)
        metrics = "".join(f" - {k}:{_format_value(v)}" for k, v in (values or []))
        if self.verbose == 1:
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
            line = f"{bar} {clock}{_format_time(per_step, self.unit_name)}{metrics}"
            if self._dynamic:
                pad = max(self._previous_width - len(line), 0)
                self._out().write("\r" + line + " " * pad + ("\n" if finalize else ""))
                self._previous_width = len(line)
            elif finalize:  # a log file gets the final line only
                self._out().write(line + "\n")
            self._out().flush()
        elif self.verbose == 2 and finalize and self.target:
            digits = int(math.log10(self.target)) + 1
            self._out().write(f"{current:{digits}d}/{self.target} - {now - self._start:.0f}s -"
                              f"{_format_time(per_step, self.unit_name)}{metrics}\n")
            self._out().flush()


class ProgbarLogger(Callback):
    """Prints the epoch header and the progress bar of `fit` and `evaluate`."""

    def __init__(self):
        super().__init__()
        self._bar = None

    def _verbose(self) -> int:
        return self.params.get("verbose", 1)

    def on_epoch_begin(self, epoch, logs=None):
        if self._verbose():
            sys.stdout.write(f"Epoch {epoch + 1}/{self.params['epochs']}\n")
        self._bar = Progbar(self.params.get("steps"), verbose=self._verbose())

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


class ModelCheckpoint(Callback):
    """Saves the model's weights (`save_weights`) at the end of every epoch, or only when
    `monitor` improved with `save_best_only`; `filepath` may hold `{epoch}` and log keys
    (`"ckpt-{epoch:02d}-{val_loss:.2f}"`).

    Example: `ModelCheckpoint("ckpt/best", save_best_only=True, save_weights_only=True)`.
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        if not save_weights_only:
            raise NotImplementedError("ModelCheckpoint: only save_weights_only=True is "
                                      "supported yet (whole-model .keras files are not)")
        if save_freq != "epoch":
            raise NotImplementedError("ModelCheckpoint: only save_freq='epoch' is supported")
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"ModelCheckpoint: mode must be 'auto', 'min' or 'max', got "
                             f"{mode!r}")
        if mode == "auto":
            mode = "max" if "acc" in monitor or monitor.endswith("auc") else "min"
        self.filepath, self.monitor, self.verbose = str(filepath), monitor, verbose
        self.save_best_only, self.mode = save_best_only, mode
        self.best = initial_value_threshold if initial_value_threshold is not None else \
            (-np.inf if mode == "max" else np.inf)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            value = logs.get(self.monitor)
            if value is None:
                sys.stderr.write(f"Can save best model only with {self.monitor} available.\n")
                return
            better = value > self.best if self.mode == "max" else value < self.best
            if not better:
                return
            if self.verbose:
                sys.stdout.write(f"\nEpoch {epoch + 1}: {self.monitor} improved from "
                                 f"{self.best:.5f} to {value:.5f}, saving model to {path}\n")
            self.best = value
        self.model.save_weights(path)


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

    Example: `ReduceLROnPlateau(monitor="val_loss", factor=0.2, patience=5, min_lr=1e-4)`.
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0, got "
                             f"{factor}")
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'auto', 'min' or 'max', got "
                             f"{mode!r}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, \
            verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self.mode = ("max" if "acc" in monitor else "min") if mode == "auto" else mode

    def on_train_begin(self, logs=None):
        self.wait, self.cooldown_counter = 0, 0
        self.best = -np.inf if self.mode == "max" else np.inf

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = float(self.model.optimizer.learning_rate)
        value = logs.get(self.monitor)
        if value is None:
            sys.stderr.write(f"Learning rate reduction is conditioned on metric "
                             f"`{self.monitor}` which is not available. Available metrics "
                             f"are: {','.join(logs)}.\n")
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        better = value > self.best + self.min_delta if self.mode == "max" else \
            value < self.best - self.min_delta
        if better:
            self.best, self.wait = value, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(self.model.optimizer.learning_rate)
                if old > self.min_lr:
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
