"""Keras's training loop as a mixin of `Model`: `compile`, `fit`, `evaluate`, `predict`,
the `*_on_batch` methods and the steps they run (`train_step`, `test_step`,
`predict_step`: override them to customize `fit`), traced unless `run_eagerly=True`.

The loop: arrays are cut into batches (data_adapters.py) and datasets are iterated as they
are; each batch goes through `train_step`, whose returned metric values become the logs
that callbacks and the progress bar see.
"""
from __future__ import annotations

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..autodiff.gradient_tape import GradientTape
from ..data.dataset import Dataset
from ..distribute.strategy import get_strategy, has_strategy
from ..function import function
from ..ops.reduction import add_n
from ..train.layers import Layer as _BaseLayer
from . import callbacks as _callbacks, metrics as _metrics, optimizers as _optimizers
from ._distributed import agreed_seed, first_replica, gathered_in_batch_order, \
    in_strategy_scope, is_chief, replicated_step, scale_loss, split_batch, unscale_loss, \
    uses_strategy
from ._structure import leaves, map_leaves
from .compile_utils import CompiledLoss, CompiledMetrics, CompileMetrics, batch_size_of
from .data_adapters import Batches, as_array, num_samples, unpack
from .layers.rnn import keeping_states


class Trainer:
    """The training half of `Model` (Keras 3's `Trainer`): it expects the model's `call`,
    `trainable_weights`, `losses` and `output_names`."""

    def _init_trainer(self) -> None:
        self.stop_training = False
        self.history = None
        self.optimizer = None
        self.compiled_loss = None
        self.compiled_metrics = None
        self._loss_tracker = None
        self._run_eagerly = False
        self._steps: dict = {}
        self._has_run = False
        # fit, evaluate and predict run through the strategy the model is created under
        self._distribute_strategy = get_strategy() if has_strategy() else None

    # ----------------------------------------------------------------- compile
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly: bool = False, steps_per_execution=1,
                jit_compile="auto", auto_scale_loss: bool = True, **kwargs) -> None:
        """Configure training: an optimizer and a loss (objects or Keras's names such as
        "adam" and "sparse_categorical_crossentropy"), `metrics` (names such as
        "accuracy", or Metric objects; unweighted, as Keras 3), `weighted_metrics`
        (weighted by `sample_weight`/`class_weight`); `run_eagerly=True` runs the steps
        without tracing. Under the "mixed_float16" policy the optimizer is wrapped in a
        `LossScaleOptimizer` unless `auto_scale_loss=False`, as Keras 3's compile does.
        """
        if kwargs:
            raise TypeError(f"compile: unrecognized keyword arguments {sorted(kwargs)}")
        if steps_per_execution != 1:
            raise NotImplementedError("compile: steps_per_execution > 1 is not supported yet")
        self.optimizer = _optimizers.get(optimizer)
        if auto_scale_loss and self.dtype_policy.name == "mixed_float16" and \
                not isinstance(self.optimizer, _optimizers.LossScaleOptimizer):
            self.optimizer = _optimizers.LossScaleOptimizer(self.optimizer,
                                                            name="loss_scale_optimizer")
        # what a .keras file records (names stay names, as Keras writes them)
        self._compile_arguments = {"loss": loss, "loss_weights": loss_weights,
                                   "metrics": metrics, "weighted_metrics": weighted_metrics,
                                   "run_eagerly": run_eagerly}
        self.compiled_loss = CompiledLoss(loss, loss_weights, self.output_names) \
            if loss is not None else None
        self.compiled_metrics = CompiledMetrics(
            metrics, self.output_names, self.compiled_loss.losses if self.compiled_loss
            else [None] * len(self.output_names), weighted_metrics)
        self._loss_tracker = _metrics.Mean(name="loss")
        self._run_eagerly = bool(run_eagerly)
        self._jit_compile = jit_compile is True
        self._steps = {}

    @property
    def run_eagerly(self) -> bool:
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._run_eagerly = bool(value)

    @property
    def metrics(self) -> list:
        """The loss tracker, the compiled metrics (once built) and metrics that are
        attributes of the model, each reset at the start of every epoch."""
        found = []
        if self._loss_tracker is not None:  # compiled: "loss" even when only add_loss
            found.append(self._loss_tracker)  # gives one (as Keras 3)
        if self.compiled_loss is not None:
            found += self.compiled_loss.trackers
        compiled = self.compiled_metrics
        if compiled is not None and compiled.metrics:
            found += compiled.metrics
        elif compiled is not None and compiled.metrics is None and \
                any(compiled._specs + compiled._weighted_specs):
            # not made yet (the first batch makes them): as Keras 3, one metric that
            # makes and updates them all
            if getattr(compiled, "wrapper", None) is None:
                compiled.wrapper = CompileMetrics(compiled)
            found.append(compiled.wrapper)
        for value in vars(self).values():
            for leaf in nest.flatten(value) if isinstance(value, (list, tuple)) else [value]:
                if isinstance(leaf, _metrics.Metric) and not any(leaf is m for m in found):
                    found.append(leaf)
        return found

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def _assert_compiled(self, what: str) -> None:
        if self.optimizer is None:
            raise RuntimeError(f"You must call `compile()` before using the model in "
                               f"{what}.")

    # ----------------------------------------------------------------- steps
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The loss `fit` minimizes: the compiled loss(es) plus `self.losses`; as Keras
        3, the `add_loss` terms alone when `compile` got no loss."""
        if self.compiled_loss is None:
            extra = [scale_loss(term) for term in self.losses]
            if not extra:
                raise ValueError("No loss to compute. Provide a `loss` argument in "
                                 "`compile()`.")
            return add_n(extra) if len(extra) > 1 else extra[0]
        return self.compiled_loss(y, y_pred, sample_weight, self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Update the loss tracker and compiled metrics; return every metric's result."""
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data) -> dict:
        """One step of `fit`: forward pass, loss, gradients, update, metrics. Override it
        to customize training; it returns the logs (metric name -> value)."""
        x, y, sample_weight = unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            # (the optimizer's loss_scale_factor: apply_gradients divides it out again)
            scale = getattr(self.optimizer, "scale_loss", None)
            scaled = loss if scale is None else scale(loss)
        variables = self.trainable_weights
        grads = tape.gradient(scaled, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._loss_tracker.update_state(unscale_loss(loss), batch_size_of(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data) -> dict:
        """One step of `evaluate`: forward pass (inference mode), loss and metrics."""
        x, y, sample_weight = unpack(data)
        y_pred = self(x, training=False)
        if self.compiled_loss is not None or self.losses:
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=False)
            self._loss_tracker.update_state(unscale_loss(loss), batch_size_of(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """One step of `predict`: the model's outputs in inference mode."""
        x, _, _ = unpack(data)
        return self(x, training=False)

    def _step(self, kind: str):
        """The (traced, unless run eagerly) step function of `kind`, made once; the
        model's first forward pass runs eagerly before any trace, so its layers (and a
        Sequential's shapes) are built outside the graph. Under a strategy the step runs
        on its replicas, each batch shared out among them (_distributed.py)."""
        method = getattr(self, f"{kind}_step")
        strategy = self.distribute_strategy
        replicated = uses_strategy(self)
        if replicated:
            method = replicated_step(self, method, kind)
        if self._run_eagerly and not replicated:
            return method
        key = (kind, strategy)  # a model made outside any scope follows the current one
        if not self._run_eagerly and key not in self._steps:
            self._steps[key] = function(method, jit_compile=True if getattr(
                self, "_jit_compile", False) else None)
        step = method if self._run_eagerly else self._steps[key]

        def run(data):
            args = split_batch(strategy, data) if replicated else (data,)
            if not self._has_run and not self._run_eagerly and \
                    type(self).call is not _BaseLayer.call:
                # (a stateful RNN's states do not advance; a model without a forward
                # pass of its own, such as a GAN whose train_step drives its parts, has
                # nothing to build)
                keeping_states(self._all_sublayers(), lambda: self(
                    first_replica(unpack(args[0])[0]), training=False))
                self._has_run = True
            out = step(*args)
            return gathered_in_batch_order(strategy, out) if replicated and \
                kind == "predict" else out
        return run

    @staticmethod
    def _logs(values: dict) -> dict:
        # a dict among the values (a CompileMetrics's result) spreads out, as Keras 3's
        flat: dict = {}
        for k, v in values.items():
            if isinstance(v, dict):
                flat.update(v)
            else:
                flat[k] = v
        return {k: float(v) if isinstance(v, Tensor) or np.isscalar(v) else v
                for k, v in sorted(flat.items())}

    # ----------------------------------------------------------------- fit
    @in_strategy_scope
    def fit(self, x=None, y=None, batch_size=None, epochs: int = 1, verbose="auto",
            callbacks=None, validation_split: float = 0.0, validation_data=None,
            shuffle: bool = True, class_weight=None, sample_weight=None,
            initial_epoch: int = 0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq: int = 1):
        """Train for `epochs` over arrays (`x`, `y`) or a dataset yielding `(x, y)`;
        returns the `History` (`history.history["loss"]`, ...).

        Example: `model.fit(x, y, batch_size=32, epochs=5, validation_split=0.1)`.
        """
        self._assert_compiled("fit")
        verbose = 1 if verbose == "auto" else int(verbose)
        verbose = verbose if is_chief(self.distribute_strategy) else 0  # one bar per job
        if validation_split and validation_data is None:
            if isinstance(x, Dataset):
                raise ValueError("validation_split is only supported for arrays, not "
                                 "datasets; pass validation_data instead")
            if not 0 < validation_split < 1:
                raise ValueError(f"validation_split must be in (0, 1), got "
                                 f"{validation_split}")
            arrays = (map_leaves(as_array, x), map_leaves(as_array, y), as_array(sample_weight))
            n = num_samples(arrays[0])
            split = int(n * (1.0 - validation_split))
            head = [map_leaves(lambda a: a[:split], p) if p is not None else None for p in arrays]
            tail = [map_leaves(lambda a: a[split:], p) if p is not None else None for p in arrays]
            (x, y, sample_weight), validation_data = head, tuple(tail)
        batches = Batches(x, y, sample_weight, batch_size, steps_per_epoch, shuffle,
                           class_weight, seed=agreed_seed(self.distribute_strategy))
        history = _callbacks.History()
        extra = [_callbacks.ProgbarLogger()] if verbose else []
        params = {"verbose": verbose, "epochs": epochs, "steps": batches.steps}
        callback_list = _callbacks.CallbackList(extra + list(callbacks or []) + [history],
                                                self, params)
        self.stop_training = False
        train = self._step("train")
        callback_list.on_train_begin()
        # BackupAndRestore sets where an interrupted run resumes, as Keras 3's fit reads it
        initial_epoch = self.__dict__.pop("_initial_epoch", None) or initial_epoch
        logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            seen = 0
            for step, data in enumerate(batches.epoch()):
                callback_list.on_train_batch_begin(step)
                logs = self._logs(train(data))
                callback_list.on_train_batch_end(step, logs)
                seen += 1
                if self.stop_training:
                    break
            if seen == 0:
                raise ValueError("fit: the data gave no batches (an empty or exhausted "
                                 "dataset); with steps_per_epoch, make it repeat()")
            epoch_logs = dict(logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                # the fit's callbacks see the validation's on_test_* hooks before
                # on_epoch_end, as in Keras
                val_logs = self._evaluate_logs(validation_data,
                                               validation_batch_size or batch_size,
                                               validation_steps, callback_list)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            callback_list.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        # with use_ema, the weights become their moving averages (as Keras 3's fit)
        finalize = getattr(self.optimizer, "finalize_variable_values", None)
        if finalize is not None and epochs > initial_epoch:
            finalize(self.trainable_weights)
        callback_list.on_train_end(logs)
        return history

    def _evaluate_logs(self, val, batch_size, steps, callbacks=None) -> dict:
        if not isinstance(val, Dataset):
            x, y, sample_weight = unpack(tuple(val))
            return self.evaluate(x, y, batch_size=batch_size, steps=steps, verbose=0,
                                 sample_weight=sample_weight, return_dict=True,
                                 callbacks=callbacks)
        return self.evaluate(val, steps=steps, verbose=0, return_dict=True,
                             callbacks=callbacks)

    @in_strategy_scope
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict: bool = False):
        """The loss and metrics over the data: a float (loss only), a list `[loss,
        *metrics]`, or with `return_dict` a dict."""
        self._assert_compiled("evaluate")
        verbose = 1 if verbose == "auto" else int(verbose)
        verbose = verbose if is_chief(self.distribute_strategy) else 0
        batches = Batches(x, y, sample_weight, batch_size, steps)
        callback_list = callbacks if isinstance(callbacks, _callbacks.CallbackList) else \
            _callbacks.CallbackList(list(callbacks or []), self,
                                    {"verbose": verbose, "steps": batches.steps})
        # the logs are running means already: the bar shows them as they are
        bar = _callbacks.Progbar(batches.steps, verbose=verbose, stateless_metrics=set()) \
            if verbose else None
        test = self._step("test")
        self.reset_metrics()
        callback_list.on_test_begin()
        logs: dict = {}
        count = 0
        for step, data in enumerate(batches.epoch()):
            callback_list.on_test_batch_begin(step)
            logs = self._logs(test(data))
            callback_list.on_test_batch_end(step, logs)
            count = step + 1
            if bar is not None:
                bar.update(count, list(logs.items()), finalize=False)
        if bar is not None:
            bar.update(count, list(logs.items()), finalize=True)
        callback_list.on_test_end(logs)
        return logs if return_dict else self._as_list(logs)

    def _as_list(self, logs: dict):
        order = [m.name for m in self.metrics if m.name in logs]
        order += [k for k in logs if k not in order]
        values = [logs[k] for k in order]
        return values[0] if len(values) == 1 else values

    @in_strategy_scope
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for `x` (arrays or a dataset), batch by batch, as NumPy."""
        verbose = 1 if verbose == "auto" else int(verbose)
        verbose = verbose if is_chief(self.distribute_strategy) else 0
        batches = Batches(x, None, None, batch_size, steps)
        bar = _callbacks.Progbar(batches.steps, verbose=verbose) if verbose else None
        step_fn = self._step("predict")
        outputs = []
        for step, data in enumerate(batches.epoch()):
            out = step_fn(data)
            outputs.append(map_leaves(lambda t: t.numpy(), out))
            if bar is not None:
                bar.update(step + 1, finalize=False)
        if bar is not None:
            bar.update(len(outputs), finalize=True)
        if not outputs:
            raise ValueError("predict: the data gave no batches")
        flat = [leaves(o) for o in outputs]
        joined = [np.concatenate([f[i] for f in flat]) for i in range(len(flat[0]))]
        first = outputs[0]
        return joined[0] if not isinstance(first, (list, tuple, dict)) else \
            nest.pack_sequence_as(first, joined)

    @in_strategy_scope
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict: bool = False):
        """One training step on one batch; the metrics are reset first."""
        self._assert_compiled("train_on_batch")
        self.reset_metrics()
        data = next(Batches(x, y, sample_weight, batch_size=num_samples(
            map_leaves(as_array, x)), class_weight=class_weight).epoch())
        logs = self._logs(self._step("train")(data))
        return logs if return_dict else self._as_list(logs)

    @in_strategy_scope
    def test_on_batch(self, x, y=None, sample_weight=None, return_dict: bool = False):
        """The loss and metrics of one batch (metrics reset first)."""
        self._assert_compiled("test_on_batch")
        self.reset_metrics()
        data = next(Batches(x, y, sample_weight, batch_size=num_samples(
            map_leaves(as_array, x))).epoch())
        logs = self._logs(self._step("test")(data))
        return logs if return_dict else self._as_list(logs)

    @in_strategy_scope
    def predict_on_batch(self, x):
        """The model's outputs for one batch, as NumPy."""
        return map_leaves(lambda t: t.numpy(), self._step("predict")((map_leaves(
            lambda a: convert_to_tensor(as_array(a)), x),)))
