"""`Model` (subclassed or functional) and `Sequential`: a Keras layer made of layers, with
Keras's training loop (`compile`, `fit`, `evaluate`, `predict`, `*_on_batch`) built on
tapeflow's GradientTape, optimizers, losses and `function` (the steps are traced unless
`run_eagerly=True`), and `summary()` in Keras 3's table layout.

The loop: arrays are cut into batches here (shuffled each epoch) and datasets are
iterated as they are; each batch goes through `train_step` (override it to customize
`fit`), whose returned metric values become the logs that callbacks and the progress bar
see.
"""
from __future__ import annotations

import math
import shutil
import sys
import textwrap

import numpy as np

from .._core import dtypes as _dt, nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..autodiff.gradient_tape import GradientTape
from ..data.dataset import Dataset
from ..distribute.collective import on_chief
from ..distribute.strategy import DistributedDataset, get_strategy, has_strategy
from ..function import function
from ..ops.array import expand_dims, squeeze
from ..ops.creation import ones_like
from ..ops.math import cast
from ..ops.reduction import add_n, reduce_sum
from ..train.checkpoint import Checkpoint
from . import callbacks as _callbacks, losses as _losses, metrics as _metrics, \
    optimizers as _optimizers
from ._distributed import agreed_seed, first_replica, gathered_in_batch_order, \
    in_strategy_scope, is_chief, replicated_step, scale_loss, split_batch, unscale_loss, \
    uses_strategy
from ._structure import leaves, map_leaves
from .layer import Input, InputLayer, KerasTensor, Layer, get_keras_mask, is_several, \
    is_symbolic, map_keras_tensors, set_keras_mask
from .layers.rnn import keeping_states
from .saving import deserialize_layer, endpoint_config, functional_layer_entries, \
    input_layer_entry, load_weights_h5, optimizer_built, optimizer_state, \
    rebuild_functional, save_model, save_weights_h5, serialize_layer

__all__ = ["Model", "Sequential", "Functional"]


# --------------------------------------------------------------------------- data


def _as_array(value):
    """NumPy for the leaves of x, y and sample weights; floats become float32 as Keras's
    array adapter makes them."""
    if value is None:
        return None
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    return array.astype(np.float32) if array.dtype == np.float64 else array


def _with_masks(inputs, mask):
    """`inputs` with `mask` (a structure like theirs) attached, as Keras's models take a
    `mask=` argument."""
    if mask is not None:
        for x, m in zip(nest.flatten(inputs), nest.flatten(mask)):
            if m is not None:
                set_keras_mask(x, convert_to_tensor(m))
    return inputs


def _adjust_rank(x, reference: KerasTensor, model: str):
    """An input one rank off its Input's, as Keras takes it: a missing trailing axis of
    size 1 is added (a (batch,) column for an Input of shape (1,)), an extra one removed."""
    if is_symbolic(x) or not hasattr(x, "shape") or len(x.shape) == len(reference.shape):
        return x
    rank, expected = len(x.shape), len(reference.shape)
    if rank == expected - 1 and reference.shape[-1] == 1:
        return expand_dims(x, -1)
    if rank == expected + 1 and x.shape[-1] == 1:
        return squeeze(x, -1)
    raise ValueError(f"Model {model!r}: invalid input shape {list(x.shape)} for input "
                     f"{reference.node.layer.name!r} of shape {list(reference.shape)}")


def _num_samples(x) -> int:
    sizes = {len(leaf) for leaf in leaves(x)}
    if len(sizes) != 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have sizes "
                         f"{sorted(sizes)}; make sure all arrays contain the same number of "
                         "samples.")
    return sizes.pop()


def _unpack(data) -> tuple:
    """(x, y, sample_weight) from a batch: x, (x,), (x, y) or (x, y, sample_weight)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be (x,), (x, y) or (x, y, sample_weight), found "
                     f"a tuple of {len(data)} elements")


class _Batches:
    """The batches of one `fit`/`evaluate`/`predict` call: arrays cut here, or a dataset."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps=None,
                 shuffle=False, class_weight=None, seed=None):
        self.steps_per_epoch = steps
        if isinstance(x, DistributedDataset):
            raise ValueError("Pass the tf.data.Dataset itself, not a distributed dataset: "
                             "under a strategy the model shares each global batch out "
                             "among the replicas")
        if isinstance(x, Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("`y` and `sample_weight` must not be given when `x` is a "
                                 "dataset (it yields them)")
            self.dataset = x
            size = int(x.cardinality())
            self.steps = steps if steps is not None else (size if size >= 0 else None)
            self._iterator = None
            return
        self.dataset = None
        self.arrays = (map_leaves(_as_array, x), map_leaves(_as_array, y),
                       _as_array(sample_weight))
        if class_weight is not None:
            if y is None:
                raise ValueError("class_weight needs `y`")
            labels = np.asarray(leaves(self.arrays[1])[0])
            labels = labels.argmax(-1) if labels.ndim > 1 and labels.shape[-1] > 1 else \
                labels.reshape(len(labels), -1)[:, 0]
            weights = np.array([class_weight.get(int(c), 1.0) for c in labels], np.float32)
            base = self.arrays[2]
            self.arrays = (*self.arrays[:2], weights if base is None else base * weights)
        self.size = _num_samples(list(self.arrays))
        self.batch_size = 32 if batch_size is None else int(batch_size)
        self.shuffle = shuffle
        self.steps = steps if steps is not None else max(math.ceil(self.size /
                                                                   self.batch_size), 1)
        # drawn from NumPy's global generator, so utils.set_random_seed fixes the order
        self._rng = np.random.default_rng(np.random.randint(2 ** 31) if seed is None
                                          else seed)

    def epoch(self):
        """The batches of one epoch, each (x, y, sample_weight) of tensors."""
        if self.dataset is not None:
            yield from self._dataset_epoch()
            return
        order = self._rng.permutation(self.size) if self.shuffle else np.arange(self.size)
        per_epoch = math.ceil(self.size / self.batch_size)
        for step in range(self.steps):
            start = (step % per_epoch) * self.batch_size
            index = order[start:start + self.batch_size]
            batch = [map_leaves(lambda a: convert_to_tensor(a[index]), part)
                     if part is not None else None for part in self.arrays]
            while len(batch) > 1 and batch[-1] is None:  # (x, y) as Keras gives it
                batch.pop()
            yield tuple(batch)

    def _dataset_epoch(self):
        # with steps_per_epoch, an epoch continues where the last one stopped (as Keras)
        if self.steps_per_epoch is None or self._iterator is None:
            self._iterator = iter(self.dataset)
        for step, element in enumerate(self._iterator):
            yield element
            if self.steps_per_epoch is not None and step + 1 >= self.steps_per_epoch:
                return


# --------------------------------------------------------------------------- compiled


class _CompiledLoss:
    """The loss(es) of `compile` for the model's output(s), weighted and summed."""

    def __init__(self, loss, loss_weights, output_names: list):
        self.output_names = output_names
        if isinstance(loss, dict):
            self.losses = [_losses.as_loss_object(loss[n]) if loss.get(n) is not None else None
                           for n in output_names]
        elif isinstance(loss, (list, tuple)):
            if len(loss) != len(output_names):
                raise ValueError(f"compile: {len(loss)} losses given for a model with "
                                 f"{len(output_names)} outputs")
            self.losses = [_losses.as_loss_object(item) for item in loss]
        else:
            self.losses = [_losses.as_loss_object(loss)] * len(output_names)
        if isinstance(loss_weights, dict):
            loss_weights = [loss_weights.get(n, 1.0) for n in output_names]
        self.weights = list(loss_weights) if loss_weights is not None else \
            [1.0] * len(output_names)
        self.trackers = [_metrics.Mean(name=f"{n}_loss") for n in output_names] \
            if len(output_names) > 1 else []

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        ys, preds = _per_output(y_true, self.output_names), _per_output(y_pred,
                                                                        self.output_names)
        terms = []
        for i, (loss, y, p) in enumerate(zip(self.losses, ys, preds)):
            if loss is None or y is None:
                continue
            value = loss(y, p, _masked_weight(p, sample_weight,
                                              getattr(loss, "reduction", None)))
            if self.trackers:
                self.trackers[i].update_state(value, _batch_size(p))
            if getattr(loss, "reduction", None) not in ("sum", "none"):
                value = scale_loss(value)  # a mean: a replica gives its share of it
            terms.append(value * self.weights[i] if self.weights[i] != 1.0 else value)
        terms += [scale_loss(r) for r in regularization_losses or []]
        return add_n(terms) if len(terms) > 1 else terms[0]


def _masked_weight(y_pred, sample_weight, reduction: str | None):
    """The sample weights a compiled loss uses for an output that carries a Keras mask
    (`Embedding(mask_zero=True)`, `Masking`, ...): as Keras 3's `apply_mask`, masked
    steps weigh 0 and, for a mean ("sum_over_batch_size"), the others total/valid, so the
    loss is the mean over the steps that are not masked. Without a mask, `sample_weight`
    as given."""
    mask = get_keras_mask(y_pred)
    if mask is None or not isinstance(y_pred, Tensor) or mask.ndim != y_pred.ndim - 1:
        return sample_weight  # losses reduce the last axis: a mask of another rank is
        # not the per-step losses' and cannot weigh them
    weight = cast(mask, _dt.float32)
    if reduction in (None, "auto", "mean", "sum_over_batch_size"):
        # total and valid as tensors: a traced step may not know the batch size
        weight = weight * (reduce_sum(ones_like(weight)) / (reduce_sum(weight) + 1e-7))
    if sample_weight is None:
        return weight
    sample_weight = cast(convert_to_tensor(sample_weight), _dt.float32)
    if sample_weight.ndim == weight.ndim + 1 and sample_weight.shape[-1] == 1:
        sample_weight = squeeze(sample_weight, -1)
    while sample_weight.ndim < weight.ndim:  # per-sample weights over each step
        sample_weight = expand_dims(sample_weight, -1)
    return weight * sample_weight


def _per_output(values, names: list) -> list:
    if isinstance(values, dict):
        return [values.get(n) for n in names]
    if isinstance(values, (list, tuple)) and len(names) > 1:
        return list(values)
    return [values]


def _batch_size(x) -> float:
    return float(leaves(x)[0].shape[0])


def _accuracy_for(loss, y_true, y_pred) -> _metrics.Metric:
    """Which accuracy "accuracy" means, from the loss or else the shapes (Keras's rule)."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)

    def kind(cls, fn) -> bool:  # (a Loss class, or its function wrapped by compile)
        return isinstance(loss, cls) or getattr(loss, "_fn", None) is fn
    sparse = kind(_losses.SparseCategoricalCrossentropy,
                  _losses.sparse_categorical_crossentropy) or (
        y_true.ndim < y_pred.ndim or (y_true._shape[-1:] == (1,) and y_pred._shape[-1] != 1))
    if (kind(_losses.BinaryCrossentropy, _losses.binary_crossentropy)
            or y_pred._shape[-1:] == (1,)):
        return _metrics.BinaryAccuracy()
    if (kind(_losses.CategoricalCrossentropy, _losses.categorical_crossentropy)
            or not sparse):
        return _metrics.CategoricalAccuracy()
    return _metrics.SparseCategoricalAccuracy()


class _CompiledMetrics:
    """The metrics of `compile`, made concrete on the first batch (when "accuracy" can be
    told from the shapes) and named as Keras names them in the logs.

    As Keras 3, `metrics` ignore `sample_weight` (and so `class_weight`); only
    `weighted_metrics` are weighted. A weighted metric named as an unweighted one is
    logged as "weighted_<name>"."""

    def __init__(self, metrics, output_names: list, losses: list, weighted_metrics=None):
        self._names, self._losses = output_names, losses
        self._specs = self._per_output(metrics)
        self._weighted_specs = self._per_output(weighted_metrics)
        self.metrics: list | None = None

    def _per_output(self, metrics) -> list:
        names = self._names
        if metrics is None:
            metrics = []
        if isinstance(metrics, dict):
            per_output = [metrics.get(n, []) for n in names]
        elif len(names) > 1 and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
            per_output = list(metrics)
        else:
            per_output = [metrics] * len(names)
        return [[m] if not isinstance(m, (list, tuple)) else list(m) for m in per_output]

    def _make(self, spec, i: int, ys: list, preds: list) -> _metrics.Metric:
        if isinstance(spec, str) and spec.lower() in ("accuracy", "acc"):
            metric = _accuracy_for(self._losses[i], ys[i], preds[i])
            metric.name = spec
        else:
            metric = _metrics.get(spec)
        if len(self._names) > 1:
            metric.name = f"{self._names[i]}_{metric.name}"
        return metric

    def build(self, y_true, y_pred) -> None:
        names = self._names
        ys, preds = _per_output(y_true, names), _per_output(y_pred, names)
        self.metrics = []
        self._owners = []
        self._weighted = []
        for weighted, all_specs in ((False, self._specs), (True, self._weighted_specs)):
            for i, specs in enumerate(all_specs):
                for spec in specs:
                    metric = self._make(spec, i, ys, preds)
                    if weighted and any(m.name == metric.name for m in self.metrics):
                        metric.name = f"weighted_{metric.name}"
                    self.metrics.append(metric)
                    self._owners.append(i)
                    self._weighted.append(weighted)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        if self.metrics is None:
            self.build(y_true, y_pred)
        names = self._names
        ys, preds = _per_output(y_true, names), _per_output(y_pred, names)
        for metric, i, weighted in zip(self.metrics, self._owners, self._weighted):
            if ys[i] is None:
                continue
            weight = None
            if weighted and sample_weight is not None:
                # as Keras 3's MeanMetricWrapper: a weighted metric's sample weights are
                # masked by the output's Keras mask (unweighted metrics see no mask)
                weight = _masked_weight(preds[i], sample_weight, "sum")
            metric.update_state(ys[i], preds[i], sample_weight=weight)


# --------------------------------------------------------------------------- Model


class Model(Layer):
    """A layer of layers that trains: subclass it (layers in `__init__`, the forward pass
    in `call(self, inputs, training=None)`) or build it from the functional API with
    `Model(inputs, outputs)`.

    Example:
        >>> inputs = tf.keras.Input((4,))
        >>> model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(np.ones((8, 4)), np.ones((8, 1)), epochs=2, verbose=0)
        >>> len(history.history["loss"])
        2
    """

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args, trainable: bool = True, name: str | None = None, dtype=None,
                 **kwargs):
        if (args or "inputs" in kwargs or "outputs" in kwargs) and \
                not isinstance(self, Functional):
            # a subclass built functionally (`MyModel(inputs, outputs)`, to override
            # train_step): as Keras 3, the class becomes a Functional subclass
            _make_functional(type(self))
            Functional.__init__(self, *args, trainable=trainable, name=name, **kwargs)
            return
        if args:
            raise TypeError(f"{type(self).__name__}: unexpected positional arguments; a "
                            "functional model is Model(inputs, outputs)")
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
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

    def _convert_input(self, inputs):
        # the layers inside convert (and cast) their own inputs
        def convert(v):
            return v if isinstance(v, Tensor) else convert_to_tensor(_as_array(v))
        if isinstance(inputs, (list, tuple)) and not is_several(inputs):
            return convert(inputs)  # one input written as nested Python numbers
        return map_leaves(convert, inputs)

    # ----------------------------------------------------------------- structure
    @property
    def layers(self) -> list:
        """The model's layers: in assignment order for a subclassed model."""
        return self._sublayers()

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """The layer named `name`, or at position `index` of `layers`."""
        if index is not None:
            if name is not None:
                raise ValueError("get_layer: give either `name` or `index`, not both")
            if not 0 <= index < len(self.layers):
                raise ValueError(f"get_layer: index {index} is out of range: the model has "
                                 f"{len(self.layers)} layers")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    @property
    def input_shape(self):
        """The shape of the model's input (a list of shapes for several), None for unknown
        dims, as Keras 3; an AttributeError before the model knows its inputs.

        Example:
            >>> tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)]).input_shape
            (None, 3)
        """
        return self._endpoint_shapes(getattr(self, "inputs", None), "input")

    @property
    def output_shape(self):
        """The shape of the model's output (a list of shapes for several), as Keras 3.

        Example:
            >>> tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)]).output_shape
            (None, 2)
        """
        return self._endpoint_shapes(getattr(self, "outputs", None), "output")

    def _endpoint_shapes(self, tensors, what: str):
        if not tensors:
            raise AttributeError(f"{type(self).__name__} model {self.name!r} has no defined "
                                 f"{what} shape yet.")
        shapes = [tuple(kt.shape) for kt in tensors]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_names(self) -> list:
        return [self.name]

    @property
    def distribute_strategy(self):
        """The `tf.distribute` strategy whose scope the model was created in (else the
        current one, by default the strategy of one replica): `fit`, `evaluate` and
        `predict` share each batch out among its replicas (keras/_distributed.py)."""
        return getattr(self, "_distribute_strategy", None) or get_strategy()

    # ----------------------------------------------------------------- compile
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly: bool = False, steps_per_execution=1,
                jit_compile="auto", **kwargs) -> None:
        """Configure training: an optimizer and a loss (objects or Keras's names such as
        "adam" and "sparse_categorical_crossentropy"), `metrics` (names such as
        "accuracy", or Metric objects; unweighted, as Keras 3), `weighted_metrics`
        (weighted by `sample_weight`/`class_weight`); `run_eagerly=True` runs the steps
        without tracing.
        """
        if kwargs:
            raise TypeError(f"compile: unrecognized keyword arguments {sorted(kwargs)}")
        if steps_per_execution != 1:
            raise NotImplementedError("compile: steps_per_execution > 1 is not supported yet")
        self.optimizer = _optimizers.get(optimizer)
        # what a .keras file records (names stay names, as Keras writes them)
        self._compile_arguments = {"loss": loss, "loss_weights": loss_weights,
                                   "metrics": metrics, "weighted_metrics": weighted_metrics,
                                   "run_eagerly": run_eagerly}
        self.compiled_loss = _CompiledLoss(loss, loss_weights, self.output_names) \
            if loss is not None else None
        self.compiled_metrics = _CompiledMetrics(
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
        if self._loss_tracker is not None and self.compiled_loss is not None:
            found.append(self._loss_tracker)
            found += self.compiled_loss.trackers
        if self.compiled_metrics is not None and self.compiled_metrics.metrics:
            found += self.compiled_metrics.metrics
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
        """The loss `fit` minimizes: the compiled loss(es) plus `self.losses`."""
        if self.compiled_loss is None:
            raise ValueError("No loss to compute: pass `loss=` to compile() or override "
                             "train_step")
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
        x, y, sample_weight = _unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            # (the optimizer's loss_scale_factor: apply_gradients divides it out again)
            scale = getattr(self.optimizer, "scale_loss", None)
            scaled = loss if scale is None else scale(loss)
        variables = self.trainable_weights
        grads = tape.gradient(scaled, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._loss_tracker.update_state(unscale_loss(loss), _batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data) -> dict:
        """One step of `evaluate`: forward pass (inference mode), loss and metrics."""
        x, y, sample_weight = _unpack(data)
        y_pred = self(x, training=False)
        if self.compiled_loss is not None:
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=False)
            self._loss_tracker.update_state(unscale_loss(loss), _batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """One step of `predict`: the model's outputs in inference mode."""
        x, _, _ = _unpack(data)
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
            if not self._has_run and not self._run_eagerly:
                # (a stateful RNN's states do not advance)
                keeping_states(self._all_sublayers(), lambda: self(
                    first_replica(_unpack(args[0])[0]), training=False))
                self._has_run = True
            out = step(*args)
            return gathered_in_batch_order(strategy, out) if replicated and \
                kind == "predict" else out
        return run

    @staticmethod
    def _logs(values: dict) -> dict:
        return {k: float(v) if isinstance(v, Tensor) or np.isscalar(v) else v
                for k, v in sorted(values.items())}

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
            arrays = (map_leaves(_as_array, x), map_leaves(_as_array, y), _as_array(sample_weight))
            n = _num_samples(arrays[0])
            split = int(n * (1.0 - validation_split))
            head = [map_leaves(lambda a: a[:split], p) if p is not None else None for p in arrays]
            tail = [map_leaves(lambda a: a[split:], p) if p is not None else None for p in arrays]
            (x, y, sample_weight), validation_data = head, tuple(tail)
        batches = _Batches(x, y, sample_weight, batch_size, steps_per_epoch, shuffle,
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
            x, y, sample_weight = _unpack(tuple(val))
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
        batches = _Batches(x, y, sample_weight, batch_size, steps)
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
        batches = _Batches(x, None, None, batch_size, steps)
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
        data = next(_Batches(x, y, sample_weight, batch_size=_num_samples(
            map_leaves(_as_array, x)), class_weight=class_weight).epoch())
        logs = self._logs(self._step("train")(data))
        return logs if return_dict else self._as_list(logs)

    @in_strategy_scope
    def test_on_batch(self, x, y=None, sample_weight=None, return_dict: bool = False):
        """The loss and metrics of one batch (metrics reset first)."""
        self._assert_compiled("test_on_batch")
        self.reset_metrics()
        data = next(_Batches(x, y, sample_weight, batch_size=_num_samples(
            map_leaves(_as_array, x))).epoch())
        logs = self._logs(self._step("test")(data))
        return logs if return_dict else self._as_list(logs)

    @in_strategy_scope
    def predict_on_batch(self, x):
        """The model's outputs for one batch, as NumPy."""
        return map_leaves(lambda t: t.numpy(), self._step("predict")((map_leaves(
            lambda a: convert_to_tensor(_as_array(a)), x),)))

    # ----------------------------------------------------------------- weights on disk
    def save(self, filepath: str, overwrite: bool = True, **kwargs) -> None:
        """Write the whole model (architecture, weights, compile arguments) as a Keras 3
        `.keras` file, which `keras.models.load_model` (tapeflow's or Keras's) reads, or in
        Keras's legacy HDF5 format for an `.h5` path (`include_optimizer=`); Sequential
        and functional models."""
        # under a multi-process strategy every worker holds the same model: one writes
        on_chief(lambda: save_model(self, filepath, overwrite=overwrite, **kwargs))

    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Write the weights: Keras 3's format for `*.weights.h5` paths (Sequential and
        functional models; needs h5py), otherwise a TensorFlow checkpoint (the files of
        `tf.train.Checkpoint`)."""
        path = str(filepath)
        if path.endswith(".h5"):
            if not path.endswith(".weights.h5"):
                raise ValueError(f"The filename must end in `.weights.h5`. Received: "
                                 f"filepath={path}")
            on_chief(save_weights_h5, self, path)  # the chief alone writes (as checkpoints)
            return
        Checkpoint(model=_Weights(self)).write(path)

    def load_weights(self, filepath: str) -> None:
        """Read weights that `save_weights` (or Keras's) wrote; the model must be built
        with the same architecture."""
        path = str(filepath)
        if path.endswith(".h5"):
            load_weights_h5(self, path)
            return
        Checkpoint(model=_Weights(self)).read(path).assert_consumed()

    # ----------------------------------------------------------------- summary
    def _check_input_keys(self, inputs: dict, names: list) -> None:
        """A dict of inputs must have exactly the model's input names as keys: a missing or
        unknown key raises, naming it, rather than feeding an input the wrong value."""
        missing = [n for n in names if n not in inputs]
        unknown = sorted(str(k) for k in inputs if k not in names)
        if missing or unknown:
            raise ValueError(f"Model {self.name!r} takes inputs named {names}; the dict "
                             f"given is missing {missing} and has unknown keys {unknown}")

    def _summary_rows(self) -> list:
        return [(layer, _output_shape(layer), "") for layer in self.layers]

    def summary(self, line_length: int | None = None, print_fn=None) -> None:
        """Print the layers, their output shapes and parameter counts, and the totals, in
        Keras 3's table layout; a layer not built yet shows "?" and "0 (unbuilt)"."""
        print_fn = print_fn or (lambda line: sys.stdout.write(line + "\n"))
        rows = self._summary_rows()
        connected = isinstance(self, Functional) and self._has_branches()
        if connected:
            headers, positions, default = ["Layer (type)", "Output Shape", "Param #",
                                           "Connected to"], [0.3, 0.56, 0.74, 1.0], 108
        else:
            headers, positions, default = ["Layer (type)", "Output Shape", "Param #"], \
                [0.45, 0.80, 1.0], 88
        line_length = line_length or min(default, shutil.get_terminal_size().columns - 4)
        bounds = [int(p * line_length) for p in positions]
        widths = [b - a for a, b in zip([0] + bounds, bounds)]
        widths = [w - 1 for w in widths[:-1]] + [widths[-1] - 2]  # room for the borders
        right = {2}  # the counts are right-aligned

        def line(cells) -> list:
            wrapped = [textwrap.wrap(c, w - 2) or [""] for c, w in zip(cells, widths)]
            height = max(len(w) for w in wrapped)
            out = []
            for i in range(height):
                parts = []
                for col, (w, lines) in enumerate(zip(widths, wrapped)):
                    text = lines[i] if i < len(lines) else ""
                    parts.append(" " + (text.rjust(w - 2) if col in right else
                                        text.ljust(w - 2)) + " ")
                out.append(parts)
            return out

        print_fn(f'Model: "{self.name}"')
        print_fn("┏" + "┳".join("━" * w for w in widths) + "┓")
        for parts in line(headers):
            print_fn("┃" + "┃".join(parts) + "┃")
        print_fn("┡" + "╇".join("━" * w for w in widths) + "┩")
        for i, (layer, shape, links) in enumerate(rows):
            params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
            cells = [f"{layer.name} ({type(layer).__name__})", shape, params]
            if connected:
                cells.append(links or "-")
            for parts in line(cells):
                print_fn("│" + "│".join(parts) + "│")
            if i < len(rows) - 1:
                print_fn("├" + "┼".join("─" * w for w in widths) + "┤")
        print_fn("└" + "┴".join("─" * w for w in widths) + "┘")
        trainable, frozen = self.trainable_weights, self.non_trainable_weights
        # once the optimizer is built, Keras counts its state too (as in its files)
        state = optimizer_state(self) if optimizer_built(self) else []
        groups = [("Total", self.weights + state), ("Trainable", trainable),
                  ("Non-trainable", frozen)] + ([("Optimizer", state)] if state else [])
        for label, group in groups:
            count = sum(int(np.prod(v.shape)) for v in group)
            size = sum(int(np.prod(v.shape)) * v.dtype.size for v in group)
            print_fn(f" {label} params: {count:,} ({_readable_size(size)})")


class _Weights:
    """The checkpoint view of a model's weights alone (not its optimizer), named by their
    position in `weights`, as Keras's weight files match them by order."""

    def __init__(self, model: Model):
        self._model = model

    def _trackable_children(self) -> dict:
        return {f"weight-{i}": v for i, v in enumerate(self._model.weights)}


def _readable_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} GB"


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def _output_shape(layer) -> str:
    if not layer._inbound_nodes:
        return "?"
    outputs = layer._inbound_nodes[0].outputs
    if isinstance(outputs, KerasTensor):
        return _shape_text(outputs.shape)
    return "[" + ", ".join(_shape_text(o.shape) for o in outputs) + "]"


# --------------------------------------------------------------------------- functional


def _make_functional(cls: type) -> None:
    """Put Functional in place of Model among the bases of `cls` (and of its Model
    ancestors), so a subclass built as `MyModel(inputs, outputs)` is functional and keeps
    its own methods (`train_step`, ...) in front, as Keras 3 does."""
    if issubclass(cls, Functional) or cls is Model:
        return
    bases = []
    for base in cls.__bases__:
        if base is Model:
            bases.append(Functional)
        else:
            if isinstance(base, type) and issubclass(base, Model):
                _make_functional(base)
            bases.append(base)
    cls.__bases__ = tuple(bases)


class Functional(Model):
    """A model defined by a graph of layer calls from `Input`s to outputs (what
    `Model(inputs, outputs)` returns); inputs and outputs may be lists or dicts, and a
    layer called twice shares its weights."""

    def __init__(self, inputs, outputs, name: str | None = None, trainable: bool = True,
                 **kwargs):
        for kt in nest.flatten(inputs):
            if not isinstance(kt, KerasTensor) or not isinstance(kt.node.layer, InputLayer):
                raise ValueError(f"Model: every input must be a tensor from keras.Input, "
                                 f"got {kt!r}")
        for kt in nest.flatten(outputs):
            if not isinstance(kt, KerasTensor):
                raise ValueError(f"Model: every output must be the result of calling a "
                                 f"layer on keras.Input tensors, got {kt!r}")
        super().__init__(trainable=trainable, name=name or None, **kwargs)
        self._inputs, self._outputs = inputs, outputs
        self._nodes = self._topological_nodes()
        known = {id(n) for n in self._nodes}
        for kt in nest.flatten(inputs):
            if id(kt.node) not in known:
                self._nodes.insert(0, kt.node)
        missing = [n.layer.name for n in self._nodes if isinstance(n.layer, InputLayer)
                   and not any(n is kt.node for kt in nest.flatten(inputs))]
        if missing:
            raise ValueError(f"Graph disconnected: the outputs depend on the input(s) "
                             f"{missing}, which are not among the model's inputs")
        seen: list = []
        for node in self._nodes:
            if not any(node.layer is s for s in seen):
                seen.append(node.layer)
        self._model_layers = seen
        self._tracked_layers = [layer for layer in seen]
        self.built = True

    def _topological_nodes(self) -> list:
        order, visited = [], set()

        def visit(node):
            if id(node) in visited:
                return
            visited.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)
        for kt in nest.flatten(self._outputs):
            visit(kt.node)
        return order

    def _has_branches(self) -> bool:
        return len(nest.flatten(self._inputs)) > 1 or len(nest.flatten(self._outputs)) > 1 \
            or any(len(n.parents) > 1 for n in self._nodes)

    @property
    def layers(self) -> list:
        return list(self._model_layers)

    @property
    def inputs(self) -> list:
        return nest.flatten(self._inputs)

    @property
    def input(self):
        """The model's input KerasTensor(s), as given to `Model(inputs, outputs)`."""
        return self._inputs

    @property
    def output(self):
        """The model's output KerasTensor(s), as given to `Model(inputs, outputs)`."""
        return self._outputs

    @property
    def outputs(self) -> list:
        return nest.flatten(self._outputs)

    @property
    def output_names(self) -> list:
        return [kt.node.layer.name for kt in nest.flatten(self._outputs)]

    def call(self, inputs, training=None, mask=None):
        inputs = _with_masks(inputs, mask)
        if isinstance(self._inputs, dict):
            if not isinstance(inputs, dict):
                raise ValueError("This model's inputs are a dict: call it with a dict keyed "
                                 f"by {sorted(self._inputs)}")
            self._check_input_keys(inputs, list(self._inputs))
            pairs = [(self._inputs[k], inputs[k]) for k in self._inputs]
        elif isinstance(inputs, dict):
            # as Keras 3: a dict given to a model of a list of Inputs goes by the Inputs'
            # names (not by the dict's sorted keys, which would pair them by chance)
            expected = nest.flatten(self._inputs)
            self._check_input_keys(inputs, [kt.name for kt in expected])
            pairs = [(kt, inputs[kt.name]) for kt in expected]
        else:
            given = nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) \
                else [inputs]
            expected = nest.flatten(self._inputs)
            if len(given) != len(expected):
                raise ValueError(f"Model {self.name!r} expects {len(expected)} input(s), got "
                                 f"{len(given)}")
            pairs = list(zip(expected, given))
        values = {id(kt): _adjust_rank(value, kt, self.name) for kt, value in pairs}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            value_of = values.__getitem__
            args = map_keras_tensors(lambda kt: value_of(id(kt)), node.inputs)
            kwargs = map_keras_tensors(lambda kt: value_of(id(kt)), dict(node.kwargs))
            if training is not None:  # a training= given when the graph was drawn wins
                kwargs.setdefault("training", training)
            out = node.layer(args, *map_keras_tensors(lambda kt: value_of(id(kt)),
                                                      node.args), **kwargs)
            for kt, value in zip(nest.flatten(node.outputs), nest.flatten(out)):
                values[id(kt)] = value
        return map_leaves(lambda kt: values[id(kt)], self._outputs)

    def _summary_rows(self) -> list:
        rows = []
        for layer in self.layers:
            links = []
            for node in layer._inbound_nodes:
                if not any(node is n for n in self._nodes):
                    continue
                for kt in node.keras_inputs:
                    owner = kt.node.layer
                    position = next(i for i, n in enumerate(owner._inbound_nodes)
                                    if n is kt.node)
                    links.append(f"{owner.name}[{position}][{kt.index}]")
            rows.append((layer, _output_shape(layer), ", ".join(links)))
        return rows

    def get_config(self) -> dict:
        """Keras's functional config: the layers, each with the calls (inbound nodes) that
        draw the graph, and the input and output endpoints."""
        return {"name": self.name, "trainable": self.trainable,
                "layers": functional_layer_entries(self),
                "input_layers": endpoint_config(self._inputs, self._nodes),
                "output_layers": endpoint_config(self._outputs, self._nodes)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuild the graph of `get_config` (Keras's too): new layers called as the config's
        inbound nodes say."""
        inputs, outputs, _ = rebuild_functional(config, custom_objects)
        return cls(inputs, outputs, name=config.get("name"),
                   trainable=config.get("trainable", True))


# --------------------------------------------------------------------------- Sequential


class Sequential(Model):
    """A stack of layers, each feeding the next: `Sequential([layer, ...])` or `.add`.
    Starting with `keras.Input(shape)` (or a first layer given `input_shape=`) builds it
    at once, so `summary()` works before training.

    Example:
        >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
        >>> model.count_params()
        8
    """

    def __init__(self, layers=None, trainable: bool = True, name: str | None = None):
        super().__init__(trainable=trainable, name=name)
        self._stack: list = []
        self._input = None
        self._output = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer) -> None:
        """Append a layer (or start the model with a `keras.Input`)."""
        if isinstance(layer, KerasTensor):
            if self._stack or self._input is not None:
                raise ValueError("Sequential: an Input can only start the model")
            self._input = self._output = layer
            return
        if isinstance(layer, InputLayer):
            self.add(layer.output)
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: the added layer must be an instance of class "
                            f"Layer, found {layer!r}")
        if any(layer is other for other in self._stack):
            raise ValueError(f"Sequential: layer {layer.name!r} is already in the model")
        if not self._stack and self._input is None and layer._batch_input_shape is not None:
            self._input = self._output = Input(batch_shape=layer._batch_input_shape,
                                               dtype=layer._dtype)
        self._stack.append(layer)
        self._tracked_layers = list(self._stack)
        if self._output is not None:
            self._output = layer(self._output)
            self.built = True

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        self._tracked_layers = list(self._stack)
        return layer

    @property
    def layers(self) -> list:
        return list(self._stack)

    def build(self, input_shape=None) -> None:
        """Build with inputs of `input_shape` (the batch dimension first, may be None)."""
        if self._input is not None:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("Sequential.build: give an input_shape")
        shape = tuple(input_shape)
        self._input = self._output = Input(batch_shape=(None, *shape[1:]))
        for layer in self._stack:
            self._output = layer(self._output)
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        if not self.built and not is_symbolic(inputs):
            first = nest.flatten(inputs)[0]
            shape = first.shape if hasattr(first, "shape") else np.shape(first)
            # a traced input (first call inside tf.function) gives its spec, not a value
            dtype = first.dtype if isinstance(first, Tensor) else \
                convert_to_tensor(_as_array(first)).dtype
            self._input = self._output = Input(batch_shape=(None, *tuple(shape)[1:]),
                                               dtype=dtype if not dtype.is_floating
                                               else _dt.float32)
            for layer in self._stack:
                self._output = layer(self._output)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None, mask=None):
        # masks ride on the tensors from layer to layer (Layer.__call__, keras/layer.py)
        x = inputs
        if self._input is not None:
            x = _adjust_rank(x, self._input, self.name)
        x = _with_masks(x, mask)
        for layer in self._stack:
            x = layer(x) if training is None else layer(x, training=training)
        return x

    @property
    def inputs(self) -> list:
        return [] if self._input is None else [self._input]

    @property
    def outputs(self) -> list:
        return [] if self._output is None else [self._output]

    @property
    def output_names(self) -> list:
        return [self._stack[-1].name] if self._stack else [self.name]

    def get_config(self) -> dict:
        """Keras's Sequential config: the layers (an Input first, as an InputLayer)."""
        layers = [serialize_layer(layer) for layer in self._stack]
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32"}
        if self._input is not None:
            layers.insert(0, input_layer_entry(self._input))
            config["build_input_shape"] = list(self._input.shape)
        return {**config, "layers": layers}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuild a Sequential from `get_config` (Keras's too); layer classes by name
        from tapeflow's Keras layers and `custom_objects`."""
        layers = [deserialize_layer(item, custom_objects) for item in config["layers"]]
        model = cls(layers, name=config.get("name"), trainable=config.get("trainable", True))
        shape = config.get("build_input_shape")
        if not model.built and shape is not None:
            model.build(tuple(shape))
        return model
