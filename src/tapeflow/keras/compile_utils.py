"""What `compile` makes of its arguments: the compiled loss (per output, weighted,
masked) and the compiled metrics (per output, "accuracy" resolved from the loss), as
Keras 3's compile utilities.
"""
from __future__ import annotations

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..ops.array import expand_dims, squeeze
from ..ops.creation import ones_like
from ..ops.math import cast
from ..ops.reduction import add_n, reduce_sum
from . import losses as _losses, metrics as _metrics
from ._distributed import scale_loss
from ._structure import leaves
from .layer import get_keras_mask


class CompiledLoss:
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
                self.trackers[i].update_state(value, batch_size_of(p))
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


def batch_size_of(x) -> float:
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


class CompiledMetrics:
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


class CompileMetrics(_metrics.Metric):
    """Keras 3's "compile_metrics": the metrics of `compile` as one metric, which is what
    a model's `metrics` lists before the first batch has made them (a custom
    `train_step` traced on that batch loops over `self.metrics` and updates this).
    `result()` is a dict, metric name -> value, which the logs spread out.

    Example:
        >>> m = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        >>> m.compile(loss="mse", metrics=["mae"])
        >>> [x.name for x in m.metrics]
        ['loss', 'compile_metrics']
    """

    def __init__(self, compiled: CompiledMetrics):
        super().__init__(name="compile_metrics")
        self._compiled = compiled

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self._compiled.update_state(y_true, y_pred, sample_weight)

    def result(self) -> dict:
        return {m.name: m.result() for m in self._compiled.metrics or []}

    result._combines = True  # its metrics' results each combine across workers already

    def reset_state(self) -> None:
        for metric in self._compiled.metrics or []:
            metric.reset_state()

    @property
    def variables(self) -> list:
        return [v for m in self._compiled.metrics or [] for v in m.variables]
