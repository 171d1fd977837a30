"""Optimizers (`tapeflow.optimizers`) with Keras's (TF 2.11+) update rules: SGD, Adam,
AdamW, Nadam, Adamax, RMSprop, Adagrad, Adadelta, Keras 3's Adafactor, Ftrl, Lamb and Lion,
TensorFlow Addons' LazyAdam, and learning-rate schedules. After each step a variable with a
callable `constraint` attribute is projected by it, as Keras 3 does.

An optimizer keeps `iterations` (an int64 Variable) and per-variable slot variables
("m", "v", ...), made on the first `apply_gradients` (or `build`): inside a
`tapeflow.function` that is the first trace, and later traces reuse them. Updates are
variable ops (assign, scatter_update), so traced steps run them in program order.

An IndexedSlices gradient (from gather / embedding lookups) is deduplicated first, repeated
indices summed (as TensorFlow's optimizers did before Keras 3; Keras 3 on TensorFlow squares
repeated slices separately in `g²`, and takes Adamax's `|g|` of each), and then gives what
the dense gradient it stands for (the summed rows, zeros elsewhere) gives, bit for bit.
Where a zero gradient still moves a row (momentum, moving averages, weight decay) every row
moves, as in TensorFlow, so the step costs O(table). Eagerly that is one elementwise pass
over the table with a 0-d zero gradient, then the named rows, computed from their values
before the step, scattered over it in place: no dense gradient is made. In a traced step
the summed rows are scattered into a dense gradient instead, which the fused loop over the
table reads at little cost (scattering into the tables that loop has just written would
copy them). Where a zero gradient changes nothing (SGD without momentum, Adagrad, without
weight decay) only the named rows are read and written: O(named rows).

`LazyAdam` keeps the lazy rule of TensorFlow Addons' LazyAdam (and PyTorch's SparseAdam):
a sparse step gathers only the named rows of the variable and of its slots, puts them
through Adam's rule and scatters them back, so it costs O(named rows) and the other rows,
slots included, stay as they were (not what Adam gives; bias corrections still count
every step, and weight decay reaches the named rows only). Dense gradients follow Keras
exactly in every optimizer.
"""
from __future__ import annotations

import inspect
import math
import re
import warnings
from typing import Callable, Iterable

from .._core import dtypes as _dt
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.errors import InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..autodiff import GradientTape
from ..distribute.strategy import aggregate_gradients
from ..function.control_flow import cond
from ..ops.array import expand_dims
from ..ops.creation import fill, zeros
from ..ops.indexing import gather, indexed_slices_to_dense, where
from ..ops.math import (abs as _abs, cast, ceil, cos, equal, floor, floordiv, floormod, log,
                        logical_and, maximum, minimum, pow, rsqrt, sign, sqrt, square)
from ..ops.reduction import add_n, clip_by_norm, reduce_mean, reduce_sum
from ..ops.state import deduplicate_slices

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Nadam", "Adamax", "RMSprop", "Adagrad",
           "Adadelta", "Adafactor", "Ftrl", "Lamb", "Lion", "LazyAdam", "schedules"]


# --------------------------------------------------------------------------- schedules


class LearningRateSchedule:
    """A learning rate as a function of the optimizer's step (`iterations`, from 0); a
    subclass defines `__call__` and, to be saved, `get_config` (its constructor's
    arguments, which `from_config` passes back).

    Example:
        >>> class Half(tf.optimizers.schedules.LearningRateSchedule):
        ...     def __call__(self, step):
        ...         return 0.5 ** tf.cast(step, tf.float32)
        >>> float(Half()(2))
        0.25
    """

    def __call__(self, step) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule {type(self).__name__!r} must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config: dict) -> "LearningRateSchedule":
        """The schedule `get_config` describes."""
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)`, the exponent floored
    when `staircase`.

    Example:
        >>> s = tf.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
        >>> round(float(s(10)), 6)
        0.05
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False,
                 name: str | None = "ExponentialDecay"):
        if decay_steps is None or float(decay_steps) <= 0:
            raise ValueError(f"ExponentialDecay: decay_steps must be positive, got {decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step) -> Tensor:
        initial = _float_tensor(self.initial_learning_rate)
        p = _progress(step, self.decay_steps, initial.dtype, self.staircase)
        return initial * pow(cast(self.decay_rate, initial.dtype), p)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


def _float_tensor(value) -> Tensor:
    t = convert_to_tensor(value)
    return t if t.dtype.is_floating else cast(t, _dt.float32)


def _progress(step, decay_steps, dtype, staircase: bool) -> Tensor:
    p = cast(step, dtype) / cast(decay_steps, dtype)
    return floor(p) if staircase else p


class InverseTimeDecay(LearningRateSchedule):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)`, the ratio floored
    when `staircase`.

    Example:
        >>> round(float(tf.optimizers.schedules.InverseTimeDecay(1.0, 2, 0.5)(4)), 6)
        0.5
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False,
                 name: str | None = "InverseTimeDecay"):
        if float(decay_steps) <= 0:
            raise ValueError(f"InverseTimeDecay: decay_steps must be positive, got {decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step) -> Tensor:
        initial = _float_tensor(self.initial_learning_rate)
        p = _progress(step, self.decay_steps, initial.dtype, self.staircase)
        return initial / (1 + cast(self.decay_rate, initial.dtype) * p)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[0]` up to `boundaries[0]` (inclusive), `values[i + 1]` after `boundaries[i]`.

    Example:
        >>> s = tf.optimizers.schedules.PiecewiseConstantDecay([10], [1.0, 0.5])
        >>> float(s(10)), float(s(11))
        (1.0, 0.5)
    """

    def __init__(self, boundaries, values, name: str | None = "PiecewiseConstant"):
        if len(values) != len(boundaries) + 1:
            raise ValueError("PiecewiseConstantDecay: values must have one more entry than "
                             f"boundaries, got {len(values)} values and {len(boundaries)} "
                             "boundaries")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step) -> Tensor:
        out = _float_tensor(self.values[0])
        step = convert_to_tensor(step)
        for boundary, value in zip(self.boundaries, self.values[1:]):
            later = cast(step, _dt.float64) > float(boundary)
            out = where(later, convert_to_tensor(value, dtype=out.dtype), out)
        return out

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay (Keras 3's, with its optional linear warmup). Without
    `warmup_target`: `initial_learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * t)) +
    alpha)` with `t = min(step, decay_steps) / decay_steps`. With it: from
    `initial_learning_rate` linearly to `warmup_target` over `warmup_steps`, then the
    cosine decay from `warmup_target` over the next `decay_steps` (`alpha` of it after).

    Example:
        >>> round(float(tf.optimizers.schedules.CosineDecay(1.0, 10)(5)), 6)
        0.5
        >>> s = tf.optimizers.schedules.CosineDecay(0.0, 10, warmup_target=1.0, warmup_steps=4)
        >>> round(float(s(2)), 6), round(float(s(9)), 6)
        (0.5, 0.5)
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha: float = 0.0,
                 name: str | None = "CosineDecay", warmup_target=None, warmup_steps=0):
        _check_steps("CosineDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def _decay(self, step, decay_steps, start, dtype) -> Tensor:
        fraction = step / decay_steps
        cosine = 0.5 * (1.0 + cos(convert_to_tensor(math.pi, dtype=dtype) * fraction))
        return start * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step) -> Tensor:
        initial = _float_tensor(self.initial_learning_rate)
        dtype = initial.dtype
        decay_steps = cast(self.decay_steps, dtype)
        step = cast(step, dtype)
        if self.warmup_target is None:
            return self._decay(minimum(step, decay_steps), decay_steps, initial, dtype)
        target = cast(self.warmup_target, dtype)
        warmup_steps = cast(self.warmup_steps, dtype)
        step = minimum(step, decay_steps + warmup_steps)
        # both branches computed and one picked: the warmup's step / warmup_steps may be
        # 0 / 0 where the decay is picked, which `where` leaves out
        warm = (target - initial) * (step / warmup_steps) + initial
        decayed = self._decay(step - warmup_steps, decay_steps, target, dtype)
        return where(step < warmup_steps, warm, decayed)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class PolynomialDecay(LearningRateSchedule):
    """`(initial_learning_rate - end_learning_rate) * (1 - t) ** power +
    end_learning_rate` with `t = min(step, decay_steps) / decay_steps`; with `cycle`,
    `t = step / (decay_steps * ceil(step / decay_steps))` (1 at step 0), so the decay
    restarts over ever longer periods.

    Example:
        >>> s = tf.optimizers.schedules.PolynomialDecay(1.0, 10, end_learning_rate=0.0)
        >>> round(float(s(5)), 6), round(float(s(20)), 6)
        (0.5, 0.0)
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle: bool = False, name: str | None = "PolynomialDecay"):
        _check_steps("PolynomialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step) -> Tensor:
        initial = _float_tensor(self.initial_learning_rate)
        dtype = initial.dtype
        end = cast(self.end_learning_rate, dtype)
        step = cast(step, dtype)
        decay_steps = cast(self.decay_steps, dtype)
        if self.cycle:
            periods = where(equal(step, 0.0), convert_to_tensor(1.0, dtype=dtype),
                            ceil(step / decay_steps))
            decay_steps = decay_steps * periods
        else:
            step = minimum(step, decay_steps)
        fraction = step / decay_steps
        return (initial - end) * pow(1 - fraction, cast(self.power, dtype)) + end

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): a cosine decay over `first_decay_steps`,
    then again over periods `t_mul` times longer each, each restart's peak `m_mul` times
    the one before; `alpha` is the floor as a fraction of `initial_learning_rate`.

    Example:
        >>> s = tf.optimizers.schedules.CosineDecayRestarts(1.0, 4, t_mul=1.0, m_mul=0.5)
        >>> [round(float(s(i)), 6) for i in (0, 2, 4)]
        [1.0, 0.5, 0.5]
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name: str | None = "SGDRDecay"):
        _check_steps("CosineDecayRestarts", "first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    @property
    def t_mul(self):
        return self._t_mul

    @property
    def m_mul(self):
        return self._m_mul

    def __call__(self, step) -> Tensor:
        initial = _float_tensor(self.initial_learning_rate)
        dtype = initial.dtype
        alpha = cast(self.alpha, dtype)
        t_mul = cast(self._t_mul, dtype)
        m_mul = cast(self._m_mul, dtype)
        fraction = cast(step, dtype) / cast(self.first_decay_steps, dtype)
        if float(self._t_mul) == 1.0:  # equal periods: the restart is the whole part
            restart = floor(fraction)
            fraction = fraction - restart
        else:  # periods growing geometrically: which one the step falls in, by logarithm
            restart = floor(log(1.0 - fraction * (1.0 - t_mul)) / log(t_mul))
            done = (1.0 - pow(t_mul, restart)) / (1.0 - t_mul)
            fraction = (fraction - done) / pow(t_mul, restart)
        cosine = 0.5 * pow(m_mul, restart) * (
            1.0 + cos(convert_to_tensor(math.pi, dtype=dtype) * fraction))
        return initial * ((1 - alpha) * cosine + alpha)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


def _check_steps(cls: str, argument: str, value) -> None:
    if value is None or float(value) <= 0:
        raise ValueError(f"{cls}: argument `{argument}` must be > 0. Received: "
                         f"{argument}={value}")


def serialize(learning_rate_schedule: LearningRateSchedule) -> dict:
    """A schedule as Keras 3 serializes it: `{"module", "class_name", "config",
    "registered_name"}` (a JSON-compatible dict `deserialize` reads back).

    Example:
        >>> s = tf.keras.optimizers.schedules.PolynomialDecay(0.1, 10)
        >>> tf.keras.optimizers.schedules.serialize(s)["class_name"]
        'PolynomialDecay'
    """
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise ValueError("serialize: expected a LearningRateSchedule, got "
                         f"{learning_rate_schedule!r}")
    cls = type(learning_rate_schedule)
    builtin = getattr(_Namespace, cls.__name__, None) is cls
    return {"module": "keras.optimizers.schedules" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": learning_rate_schedule.get_config(),
            "registered_name": None if builtin else cls.__name__}


def deserialize(config: dict, custom_objects: dict | None = None) -> LearningRateSchedule:
    """The schedule a `{"class_name": ..., "config": ...}` dict (as `serialize` writes)
    describes; classes not built in are looked up in `custom_objects`.

    Example:
        >>> s = tf.keras.optimizers.schedules.deserialize(
        ...     {"class_name": "PolynomialDecay",
        ...      "config": {"initial_learning_rate": 0.1, "decay_steps": 10}})
        >>> type(s).__name__
        'PolynomialDecay'
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("deserialize: expected a dict with 'class_name' and 'config', got "
                         f"{config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or getattr(_Namespace, str(name), None)
    if not (isinstance(cls, type) and issubclass(cls, LearningRateSchedule)):
        raise ValueError(f"deserialize: unknown learning-rate schedule {name!r}; pass it in "
                         "custom_objects")
    return cls.from_config(dict(config.get("config") or {}))


class _Namespace:
    """`tapeflow.optimizers.schedules`."""
    LearningRateSchedule = LearningRateSchedule
    ExponentialDecay = ExponentialDecay
    InverseTimeDecay = InverseTimeDecay
    PiecewiseConstantDecay = PiecewiseConstantDecay
    CosineDecay = CosineDecay
    CosineDecayRestarts = CosineDecayRestarts
    PolynomialDecay = PolynomialDecay
    serialize = staticmethod(serialize)
    deserialize = staticmethod(deserialize)


schedules = _Namespace()


# --------------------------------------------------------------------------- the base


class Optimizer:
    """The base of the optimizers: learning rate, `iterations`, slot variables and
    `apply_gradients`. Subclasses name their slots (`_slot_names`) and define the update
    on values (`_rule`), which dense steps apply to whole tensors and sparse steps to the
    named rows (and, with a zero gradient, to the whole table; see the module docstring).
    """

    # The sparse rule: False, as the dense gradient (TensorFlow's); True, lazy (LazyAdam's):
    # only the named rows of the variable and its slots change.
    _lazy_sparse_updates: bool = False

    def __init__(self, learning_rate, name: str, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema: bool = False,
                 ema_momentum: float = 0.99, ema_overwrite_frequency: int | None = None,
                 loss_scale_factor=None, gradient_accumulation_steps: int | None = None,
                 **kwargs):
        # Keras 3 drops `decay` (Keras 2's learning-rate decay) with a warning and refuses
        # every other unknown argument: an option accepted must do something.
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.",
                          UserWarning, stacklevel=3)
        if kwargs:
            raise ValueError(f"{type(self).__name__}: argument(s) not recognized: "
                             f"{sorted(kwargs)} ({kwargs})")
        _check_options(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                       ema_overwrite_frequency, loss_scale_factor,
                       gradient_accumulation_steps)
        self.name = name
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.use_ema = bool(use_ema)
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps or None
        self._iterations = Variable(0, trainable=False, name="iteration", dtype=_dt.int64)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self._index: dict = {}       # a variable's ref -> its build index
        self._built: list = []       # per build index: the variable (the EMA covers all)
        self._slots: list[dict] = []  # per build index: slot name -> Variable
        # per build index, with `use_ema` / `gradient_accumulation_steps` (Keras's
        # `_model_variables_moving_average` and `_accumulated_gradients`)
        self._model_variables_moving_average: list = []
        self._accumulated_gradients: list = []
        # exclude_from_weight_decay's variables (refs) and name pattern
        self._exclude_from_weight_decay: set = set()
        self._exclude_from_weight_decay_pattern = None

    # ----------------------------------------------------------------- learning rate
    @staticmethod
    def _build_learning_rate(learning_rate):
        if isinstance(learning_rate, Variable) or callable(learning_rate):
            return learning_rate
        # a float lives in a variable, so a traced step sees later changes to it
        return Variable(learning_rate, trainable=False, name="learning_rate",
                        dtype=_dt.float32)

    @property
    def learning_rate(self):
        """The current learning rate: the Variable, or the schedule's value now."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr
        return self._schedule_value(lr)

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        if isinstance(self._learning_rate, Variable) and not (
                callable(value) or isinstance(value, Variable)):
            self._learning_rate.assign(value)
        else:
            self._learning_rate = self._build_learning_rate(value)

    lr = learning_rate

    def _schedule_value(self, schedule) -> Tensor:
        if isinstance(schedule, LearningRateSchedule) or _takes_an_argument(schedule):
            return convert_to_tensor(schedule(self._iterations))
        return convert_to_tensor(schedule())  # a callable taking no arguments, as Keras allows

    # ----------------------------------------------------------------- state
    @property
    def iterations(self):
        """The number of steps applied (an int64 Variable). With
        `gradient_accumulation_steps` n, as in Keras 3, the number of updates made:
        `apply_gradients` calls // n (a Tensor; the call counter is `_iterations`, which
        is what learning-rate schedules see)."""
        if self.gradient_accumulation_steps:
            return floordiv(self._iterations.read_value(),
                            convert_to_tensor(self.gradient_accumulation_steps,
                                              dtype=_dt.int64))
        return self._iterations

    def _update_count(self):
        """Updates made before this one (`iterations`): what the rules' bias corrections
        count, so accumulation steps do not advance them (Keras 3's `self.iterations`)."""
        return self.iterations

    @property
    def variables(self) -> list:
        """The optimizer's state: `iterations`, then each built variable's slots (a list
        that may also be called, as code written for `variables()` does)."""
        return _CallableList([self._iterations] + self._base_state()
                             + [s for slots in self._slots for s in slots.values()])

    def _base_state(self) -> list:
        """The EMA averages and gradient accumulators, per variable in build order (Keras
        3 makes them in its base `build`, before the subclass's slots)."""
        out = []
        for i in range(len(self._built)):
            if self.use_ema:
                out.append(self._model_variables_moving_average[i])
            if self.gradient_accumulation_steps:
                out.append(self._accumulated_gradients[i])
        return out

    def _trackable_children(self) -> dict:
        """Checkpoint names of the state (the trackable protocol): "iterations" and
        "<slot>/<build index>". A restore made before the slots exist keeps their values
        waiting; a slot gets its value when `build` creates it, before its first use."""
        children = {"iterations": self._iterations}
        for i, slots in enumerate(self._slots):
            for slot, var in slots.items():
                children[f"{slot}/{i}"] = var
        for i, var in enumerate(self._model_variables_moving_average):
            children[f"average/{i}"] = var
        for i, var in enumerate(self._accumulated_gradients):
            children[f"gradient_accumulator/{i}"] = var
        return children

    def _slot_names(self) -> tuple:
        return ()

    def _slot_initial(self, slot: str) -> float:
        return 0.0

    def build(self, var_list) -> None:
        """Create the slot variables of the variables in `var_list` not built yet (in
        order); inside a traced function their initial values are made eagerly."""
        for var in var_list:
            if not isinstance(var, Variable):
                raise TypeError(f"{type(self).__name__}: expected a Variable, got "
                                f"{type(var).__name__}")
            key = var.ref()
            if key in self._index:
                continue
            self._index[key] = len(self._slots)
            self._built.append(var)
            base = var.name.rsplit(":", 1)[0]
            if self.use_ema:  # zeros, as Keras's: the first step copies the variable
                self._model_variables_moving_average.append(Variable(
                    _initializer(var, 0.0), trainable=False, name=f"average/{base}"))
            if self.gradient_accumulation_steps:
                self._accumulated_gradients.append(Variable(
                    _initializer(var, 0.0), trainable=False,
                    name=f"gradient_accumulator/{base}"))
            self._slots.append({slot: self._make_slot(var, slot, base)
                                for slot in self._slot_names()})

    def _make_slot(self, var: Variable, slot: str, base: str) -> Variable:
        """A slot of `var`: by default of its shape and dtype, filled with
        `_slot_initial(slot)`."""
        return Variable(_initializer(var, self._slot_initial(slot)), trainable=False,
                        name=f"{slot}/{base}")

    def _slot_blocks(self) -> tuple:
        """How Keras 3 orders the slots when it lists (and saves) the optimizer's
        variables: a tuple of blocks of slot names; each block goes over the variables in
        turn, giving each variable's slots of that block together. Slots made by one
        `add_optimizer_variables(var_list, [names])` call interleave per variable (one
        block); slots made by separate calls come as blocks of their own. Adam's "m"
        and "v" interleave; the default lists every other slot as a block of its own."""
        names = tuple(self._slot_names())
        paired = names[:2] == ("m", "v")
        return ((names[:2],) if paired else ()) + tuple(
            (n,) for n in names[2 if paired else 0:])

    def _slot(self, var: Variable, slot: str) -> Variable:
        return self._slots[self._index[var.ref()]][slot]

    # ----------------------------------------------------------------- weight decay
    def exclude_from_weight_decay(self, var_list=None, var_names=None) -> None:
        """Keep weight decay off the variables of `var_list`, and off every variable
        whose name contains a match of one of the regular expressions in `var_names`
        (e.g. `["bias"]`), as Keras 3. Call it before the optimizer's first step (its
        `build`).

        Example:
            >>> b = tf.Variable([1.0], name="bias")
            >>> opt = tf.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
            >>> opt.exclude_from_weight_decay(var_names=["bias"])
            >>> _ = opt.apply_gradients([(tf.constant([0.0]), b)]); float(b[0])
            1.0
        """
        if self._built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before "
                             "the optimizer is built.")
        self._exclude_from_weight_decay = {v.ref() for v in var_list or ()}
        names = set(var_names or ())
        self._exclude_from_weight_decay_pattern = (re.compile("|".join(sorted(names)))
                                                   if names else None)

    def _use_weight_decay(self, var: Variable) -> bool:
        """Whether weight decay reaches `var` (not excluded by `exclude_from_weight_decay`).
        Names are matched as Keras 3's `variable.name` reads: the last part of the path,
        without the `:0` suffix ("kernel" for "dense/kernel:0")."""
        if var.ref() in self._exclude_from_weight_decay:
            return False
        pattern = self._exclude_from_weight_decay_pattern
        name = var.name.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        return pattern is None or pattern.search(name) is None

    # ----------------------------------------------------------------- applying
    def apply(self, grads, trainable_variables=None) -> Variable:
        """Keras 3's spelling: apply `grads` to `trainable_variables` (in the same order;
        by default the variables the optimizer was built with); returns `iterations`.

        Example:
            >>> v = tf.Variable(1.0); opt = tf.keras.optimizers.SGD(0.1)
            >>> _ = opt.apply([tf.constant(2.0)], [v]); round(float(v), 4)
            0.8
        """
        grads = list(grads)
        if trainable_variables is None:
            if not self._built:
                raise ValueError(f"{type(self).__name__}.apply: give trainable_variables, "
                                 "or build the optimizer with them first")
            trainable_variables = self._built
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"{type(self).__name__}.apply: {len(grads)} gradients for "
                             f"{len(trainable_variables)} variables")
        return self.apply_gradients(zip(grads, trainable_variables))

    def apply_gradients(self, grads_and_vars: Iterable, name: str | None = None,
                        skip_gradients_aggregation: bool = False) -> Variable:
        """Apply `(gradient, variable)` pairs (e.g. `zip(grads, vars)`) and advance
        `iterations`; returns `iterations`. `None` gradients are skipped with a warning.

        Example:
            >>> v = tf.Variable(1.0); opt = tf.optimizers.SGD(0.1)
            >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 4)
            0.8
        """
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{type(self).__name__}.apply_gradients: expected "
                                f"(gradient, variable) pairs, got {pair!r}")
        self.build([v for _, v in pairs])
        missing = [v.name for g, v in pairs if g is None]
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing "
                          "the loss; they are not updated.", UserWarning, stacklevel=2)
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not skip_gradients_aggregation:  # inside strategy.run: sum over the replicas
            pairs = aggregate_gradients(pairs)
            if pairs is None:  # held for the last of replicas that run in turn
                return self._iterations
        pairs = [(self._prepare(g, v), v) for g, v in pairs]
        if not pairs:
            return self._iterations
        if self.loss_scale_factor is not None:  # the loss was scaled by `scale_loss`
            pairs = [(_scale(g, 1.0 / self.loss_scale_factor), v) for g, v in pairs]
        if self.gradient_accumulation_steps:
            self._accumulate_or_update(pairs)
        else:
            self._update(pairs)
        if self.use_ema:
            self._update_moving_averages()
        # Keras 3 projects each variable given a gradient with its constraint after every
        # call, accumulation calls included (`variable.constraint`, set by layers)
        for _, var in pairs:
            constraint = getattr(var, "constraint", None)
            if callable(constraint):
                var.assign(constraint(var))
        self._iterations.assign_add(1)
        return self._iterations

    def _update(self, pairs: list) -> None:
        """One update of the variables from `(gradient, variable)` pairs: clipping, then
        (decoupled weight decay and) each variable's rule."""
        pairs = self._clip_gradients(pairs)
        lr = self._learning_rate
        lr = lr.read_value() if isinstance(lr, Variable) else self._schedule_value(lr)
        self._before_updates()
        for grad, var in pairs:
            self._update_step(grad, var, cast(lr, var.dtype))

    def _accumulate_or_update(self, pairs: list) -> None:
        """Keras 3's gradient accumulation: every call adds the gradients to per-variable
        accumulators, except each n-th, which updates with the mean of the n gradients
        (clipped after averaging) and zeroes the accumulators. A `cond` on the call
        counter, so a traced step decides at run time; the branches are variable ops."""
        n = self.gradient_accumulation_steps
        # the sums are dense: an accumulator stands for every row (Keras adds the
        # IndexedSlices to the dense accumulator, which densifies it too)
        pairs = [(indexed_slices_to_dense(g, list(v._shape)) if isinstance(g, IndexedSlices)
                  else g, v) for g, v in pairs]
        accumulators = [self._accumulated_gradients[self._index[v.ref()]] for _, v in pairs]

        def update():
            averaged = [((g + acc.read_value()) / convert_to_tensor(n, dtype=v.dtype), v)
                        for (g, v), acc in zip(pairs, accumulators)]
            self._update(averaged)
            for acc in accumulators:
                acc.assign(zeros(list(acc._shape), acc.dtype))
            return convert_to_tensor(0)

        def accumulate():
            for (g, _), acc in zip(pairs, accumulators):
                acc.assign_add(g)
            return convert_to_tensor(0)

        last = equal(floormod(self._iterations.read_value() + 1,
                              convert_to_tensor(n, dtype=_dt.int64)), 0)
        cond(last, update, accumulate)

    def _clip_gradients(self, pairs: list) -> list:
        """Keras 3's clipping (at most one option is set, and only a positive one acts):
        `clipnorm`, each gradient to that L2 norm; `global_clipnorm`, all gradients by one
        factor so their joint norm is at most it; `clipvalue`, elementwise to
        [-clipvalue, clipvalue]. IndexedSlices keep their rows: repeated rows are summed
        first, so the norms and bounds are those of the dense gradient."""
        if self.clipnorm and self.clipnorm > 0:
            return [(_with_values(g, lambda t: clip_by_norm(t, convert_to_tensor(
                self.clipnorm, dtype=t.dtype))), v) for g, v in pairs]
        if self.global_clipnorm and self.global_clipnorm > 0:
            pairs = [(deduplicate_slices(g) if isinstance(g, IndexedSlices) else g, v)
                     for g, v in pairs]
            values = [g.values if isinstance(g, IndexedSlices) else g for g, _ in pairs]
            sums = [reduce_sum(square(t)) for t in values]
            dtype = sums[0].dtype
            norm = sqrt(add_n([s if s.dtype is dtype else cast(s, dtype) for s in sums]))
            clip = convert_to_tensor(self.global_clipnorm, dtype=dtype)
            # Keras's factor: 1 when the norm is within the bound; NaN when it is not
            # finite (`norm - norm`), so a broken step shows rather than passing silently
            factor = clip * minimum(1.0 / norm, 1.0 / clip) + (norm - norm)
            return [(_with_values(g, lambda t: t * cast(factor, t.dtype)), v)
                    for g, v in pairs]
        if self.clipvalue and self.clipvalue > 0:
            def clip_values(t):
                bound = convert_to_tensor(self.clipvalue, dtype=t.dtype)
                return minimum(maximum(t, -bound), bound)
            return [(_with_values(g, clip_values), v) for g, v in pairs]
        return pairs

    def _update_moving_averages(self) -> None:
        """Keras 3's EMA of every built variable, after each call (accumulation calls
        included): `average = m average + (1 - m) var`, with m = 0 while `iterations` is 0
        (so the first step copies the variable); every `ema_overwrite_frequency`-th
        update the variables take their averages."""
        first = equal(self._update_count(), 0)
        for var, average in zip(self._built, self._model_variables_moving_average):
            momentum = (1 - cast(first, var.dtype)) * convert_to_tensor(self.ema_momentum,
                                                                       dtype=var.dtype)
            average.assign(momentum * average.read_value() + (1 - momentum)
                           * var.read_value())
        if self.ema_overwrite_frequency:
            due = equal(floormod(self._update_count() + 1, convert_to_tensor(
                self.ema_overwrite_frequency, dtype=_dt.int64)), 0)

            def overwrite():
                self._overwrite_with_averages(self._built)
                return convert_to_tensor(0)

            cond(due, overwrite, lambda: convert_to_tensor(0))

    def _overwrite_with_averages(self, var_list) -> None:
        for var in var_list:
            i = self._index.get(var.ref())
            if i is not None:
                var.assign(self._model_variables_moving_average[i].read_value())

    def finalize_variable_values(self, var_list) -> None:
        """With `use_ema`, set each variable of `var_list` the optimizer has built to its
        moving average (Keras's `fit` calls this when training ends); otherwise nothing."""
        if self.use_ema:
            self._overwrite_with_averages(list(var_list))

    def scale_loss(self, loss):
        """`loss * loss_scale_factor` (the loss as is without one); `apply_gradients`
        divides the gradients by the factor again."""
        if self.loss_scale_factor is not None:
            return loss * self.loss_scale_factor
        return loss

    # ----------------------------------------------------------------- config
    def get_config(self) -> dict:
        """Keras 3's config: the name, the learning rate (a float, or a schedule as
        `{"class_name", "config"}`), the base options, then the subclass's arguments."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            lr = float(lr.numpy())
        elif isinstance(lr, LearningRateSchedule):
            lr = {"class_name": type(lr).__name__, "config": lr.get_config()}
        config = {"name": self.name, "learning_rate": lr}
        for key in _BASE_OPTIONS:
            config[key] = getattr(self, key)
        for cls in type(self).__mro__:
            init = cls.__dict__.get("__init__")
            if init is None or cls is Optimizer:
                continue
            for p in inspect.signature(init).parameters.values():
                if (p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                        and p.name not in config and p.name != "self"):
                    config[p.name] = getattr(self, p.name)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """The optimizer `get_config` describes (a schedule's class looked up among
        `schedules` and `custom_objects`)."""
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            name = lr.get("class_name")
            schedule = ((custom_objects or {}).get(name)
                        or getattr(schedules, str(name), None))
            if schedule is None:
                raise ValueError(f"{cls.__name__}.from_config: unknown learning-rate "
                                 f"schedule {name!r}")
            config["learning_rate"] = schedule(**lr.get("config", {}))
        return cls(**config)

    def _before_updates(self) -> None:
        """Optimizer-wide state a step changes once, before the variables' updates."""

    def _prepare(self, grad, var: Variable):
        """The gradient as a Tensor of the variable's shape and dtype, or IndexedSlices of
        rows of it (in the variable's dtype)."""
        if isinstance(grad, IndexedSlices):
            values = convert_to_tensor(grad.values, dtype=var.dtype)
            rows = tuple(values._shape[1:])
            if var.ndim == 0 or rows != tuple(var._shape[1:]) or (
                    grad.dense_shape is not None and tuple(grad.shape) != tuple(var._shape)):
                raise InvalidArgumentError(
                    f"{type(self).__name__}: IndexedSlices gradient with values "
                    f"{list(values._shape)} does not fit variable {var.name!r} of shape "
                    f"{list(var._shape)}")
            return IndexedSlices(values, grad.indices, grad.dense_shape)
        grad = convert_to_tensor(grad, dtype=var.dtype)
        if tuple(grad._shape) != tuple(var._shape):
            raise InvalidArgumentError(
                f"{type(self).__name__}: gradient of shape {list(grad._shape)} does not match "
                f"variable {var.name!r} of shape {list(var._shape)}")
        return grad

    def _update_step(self, grad, var: Variable, lr: Tensor) -> None:
        """Apply `_rule` to the variable and its slots: whole for a dense gradient; for
        IndexedSlices, as the dense gradient would, or lazily (`_lazy_sparse_updates`)."""
        if not isinstance(grad, IndexedSlices):
            self._step(grad, var, lr, Variable.read_value, Variable.assign)
            return
        rows_only = self._lazy_sparse_updates or self._zero_gradient_changes_nothing()
        if ctx.graph is not None and not rows_only:
            # Traced: the fused elementwise loop over the table reads a dense gradient at
            # little cost, while scattering rows into the tables it has just written would
            # copy each of them (a fused loop's outputs are not written in place), so the
            # gradient is made dense here: its segment sum adds repeated rows up, in the
            # order deduplicate_slices does.
            dense = indexed_slices_to_dense(grad, list(var._shape))
            self._step(dense, var, lr, Variable.read_value, Variable.assign)
            return
        grad = deduplicate_slices(grad)  # repeated rows summed: one row each
        read = lambda v: gather(v, grad.indices)  # noqa: E731
        if rows_only:
            write = lambda v, rows: v.scatter_update(_sparse(rows, grad))  # noqa: E731
            self._step(grad.values, var, lr, read, write)
            return
        # Eager: no table-sized gradient. The named rows' new values first, from their
        # values before this step (held until the table pass has written every row) ...
        rows: list = []
        self._step(grad.values, var, lr, read, lambda v, new: rows.append((v, new)))
        # ... then every row as a zero gradient moves it: the dense rule with a 0-d zero,
        # elementwise the same arithmetic as with the dense gradient's zeros, so the two
        # agree bit for bit ...
        self._step(convert_to_tensor(0, dtype=var.dtype), var, lr, Variable.read_value,
                   Variable.assign)
        # ... and the named rows over it: nothing else holds the new tables any more, so
        # these scatters write in place.
        for target, new in rows:
            target.scatter_update(_sparse(new, grad))

    def _step(self, g: Tensor, var: Variable, lr: Tensor, read: Callable,
              write: Callable) -> None:
        """One `_rule` on what `read` gives of the variable and its slots (the whole
        values, or rows), written back by `write(variable_or_slot, new_value)`."""
        x = read(var)
        if self.weight_decay and self._use_weight_decay(var):
            x = x - x * convert_to_tensor(self.weight_decay, dtype=var.dtype) * lr
        slots = _SlotValues({name: self._slot(var, name) for name in self._slot_names()},
                            read, write)
        write(var, self._rule(g, x, slots, lr))

    def _zero_gradient_changes_nothing(self) -> bool:
        """Whether `_rule` with a zero gradient leaves the variable and its slots exactly as
        they are (no momentum, no decay): then a sparse step needs only the named rows."""
        return False

    def _rule(self, g: Tensor, x: Tensor, slots: "_SlotValues", lr: Tensor) -> Tensor:
        """One step on values: from gradient `g` and variable `x` (whole, or the touched
        rows) the new `x`; slots are read and set by name (`slots["m"] = ...`)."""
        raise NotImplementedError

    def minimize(self, loss, var_list, tape=None) -> None:
        """Compute the gradients of `loss` (a callable, or a tensor computed under `tape`)
        with respect to `var_list` (or a callable returning it) and apply them."""
        if tape is None:
            if not callable(loss):
                raise ValueError(f"{type(self).__name__}.minimize: `tape` is required when "
                                 "a Tensor loss is passed")
            with GradientTape() as tape:
                value = loss()
        else:
            value = loss() if callable(loss) else loss
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(value, var_list)
        self.apply_gradients(zip(grads, var_list))

    def __repr__(self) -> str:
        return f"<tapeflow.optimizers.{type(self).__name__} name={self.name!r}>"


class _SlotValues:
    """A variable's slots as values for `_rule`: reading one gives it (or its touched rows),
    setting one writes it back at once, so a dense step holds one copy of a slot at a time
    (as in-place updates would)."""

    def __init__(self, slots: dict, read: Callable, write: Callable):
        self._slots, self._read, self._write = slots, read, write
        self._values: dict = {}

    def __getitem__(self, name: str) -> Tensor:
        if name not in self._values:
            self._values[name] = self._read(self._slots[name])
        return self._values[name]

    def __setitem__(self, name: str, value: Tensor) -> None:
        self._values[name] = None  # drop the old value before the write replaces it
        self._write(self._slots[name], value)
        self._values[name] = value


class _CallableList(list):
    def __call__(self) -> list:
        return self


def _initializer(var: Variable, value: float) -> Callable:
    shape, dtype = list(var._shape), var.dtype
    if value == 0:
        return lambda: zeros(shape, dtype)
    return lambda: fill(shape, convert_to_tensor(value, dtype=dtype))


def _takes_an_argument(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
               for p in params)


def _sparse(values: Tensor, like: IndexedSlices) -> IndexedSlices:
    return IndexedSlices(values, like.indices, like.dense_shape)


# Keras 3's BaseOptimizer arguments, in its config's order (after name and learning rate)
_BASE_OPTIONS = ("weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "use_ema",
                 "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                 "gradient_accumulation_steps")


def _check_options(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                   ema_overwrite_frequency, loss_scale_factor,
                   gradient_accumulation_steps) -> None:
    """Keras 3's checks of the base options, and a negative clip (which Keras would
    silently not apply) refused."""
    clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
    if sum(v is not None for v in clips.values()) > 1:
        raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                         f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                         f"global_clipnorm={global_clipnorm}")
    for key, value in clips.items():
        if value is not None and not (isinstance(value, (int, float)) and value >= 0):
            raise ValueError(f"`{key}` must be a non-negative number. Received: "
                             f"{key}={value!r}")
    if gradient_accumulation_steps and not (
            isinstance(gradient_accumulation_steps, int)
            and not isinstance(gradient_accumulation_steps, bool)
            and gradient_accumulation_steps >= 2):
        raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. Received: "
                         f"gradient_accumulation_steps={gradient_accumulation_steps!r}")
    if use_ema:
        if not 0 <= ema_momentum <= 1:
            raise ValueError("`ema_momentum` must be in the range [0, 1]. Received: "
                             f"ema_momentum={ema_momentum}")
        if ema_overwrite_frequency and (not isinstance(ema_overwrite_frequency, int)
                                        or ema_overwrite_frequency < 1):
            raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. "
                             f"Received: ema_overwrite_frequency={ema_overwrite_frequency}")
    if loss_scale_factor is not None and not (
            isinstance(loss_scale_factor, (int, float)) and loss_scale_factor > 0):
        raise ValueError("`loss_scale_factor` must be a positive number. Received: "
                         f"loss_scale_factor={loss_scale_factor!r}")


def _with_values(grad, fn: Callable):
    """`fn` applied to a dense gradient, or to the rows of an IndexedSlices one with its
    repeated rows summed first (so it acts on what the dense gradient holds)."""
    if isinstance(grad, IndexedSlices):
        grad = deduplicate_slices(grad)
        return _sparse(fn(grad.values), grad)
    return fn(grad)


def _scale(grad, factor: float):
    return _with_values(grad, lambda t: t * convert_to_tensor(factor, dtype=t.dtype))


# --------------------------------------------------------------------------- optimizers


class SGD(Optimizer):
    """Gradient descent, with optional (Nesterov) momentum:
    `m = momentum * m - lr * g; var += m` (Nesterov: `var += momentum * m - lr * g`).
    An IndexedSlices gradient gives what its dense gradient gives: without momentum (or
    weight decay) only the rows it names change; with momentum every row's `m` decays and
    every row moves by it.

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.SGD(learning_rate=0.1)
        >>> _ = opt.apply_gradients(zip([tf.constant(1.0)], [v])); round(float(v), 4)
        0.9
    """

    def __init__(self, learning_rate=0.01, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay=None, name: str = "SGD", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        if isinstance(momentum, (int, float)) and not 0 <= momentum <= 1:
            raise ValueError(f"SGD: `momentum` must be between [0, 1], got {momentum}")
        self.momentum = momentum
        self.nesterov = nesterov

    def _slot_names(self):
        return ("m",) if self.momentum else ()

    def _zero_gradient_changes_nothing(self):
        return not self.momentum and not self.weight_decay

    def _rule(self, g, x, slots, lr):
        if not self.momentum:
            return x - g * lr
        m = slots["m"] = slots["m"] * self.momentum - g * lr
        return x + (m * self.momentum - g * lr if self.nesterov else m)


class Adam(Optimizer):
    """Adam: `m += (g - m)(1 - beta_1)`, `v += (g² - v)(1 - beta_2)`,
    `var -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)` (with
    `amsgrad`, v replaced by its running maximum). An IndexedSlices gradient gives what its
    dense gradient gives: every row's `m` and `v` decay and every row moves (`LazyAdam`
    moves only the named rows).

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Adam(learning_rate=0.1)
        >>> _ = opt.apply_gradients([(tf.constant(3.0), v)]); round(float(v), 4)
        0.9
    """

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, weight_decay=None,
                 name: str = "Adam", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def _slot_names(self):
        return ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        step = cast(self._update_count() + 1, dtype)
        b1_power = pow(convert_to_tensor(self.beta_1, dtype=dtype), step)
        b2_power = pow(convert_to_tensor(self.beta_2, dtype=dtype), step)
        alpha = lr * sqrt(1 - b2_power) / (1 - b1_power)
        m = slots["m"] = slots["m"] + (g - slots["m"]) * (1 - self.beta_1)
        v = slots["v"] = slots["v"] + (square(g) - slots["v"]) * (1 - self.beta_2)
        if self.amsgrad:
            v = slots["vhat"] = maximum(slots["vhat"], v)
        return x - (m * alpha) / (sqrt(v) + self.epsilon)


class AdamW(Adam):
    """Adam with decoupled weight decay: before each step `var -= var * weight_decay * lr`.
    An IndexedSlices gradient gives what its dense gradient gives: every row decays and
    moves, as with Adam.

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
        >>> _ = opt.apply_gradients([(tf.constant(3.0), v)]); round(float(v), 4)
        0.85
    """

    def __init__(self, learning_rate=0.001, weight_decay: float = 0.004, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 name: str = "AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: `weight_decay` is required and must be a float")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad,
                         weight_decay=weight_decay, name=name, **kwargs)


class Nadam(Optimizer):
    """Adam with Nesterov momentum (Keras 3's rule): with `u_t = beta_1 (1 - 0.5 *
    0.96^t)` and `U_t = u_1 ... u_t`, `m` and `v` move as Adam's and
    `var -= lr * m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon)` where
    `m_hat = u_{t+1} m / (1 - U_{t+1}) + (1 - u_t) g / (1 - U_t)`. `U_t` is one
    optimizer-wide variable (`u_product`), advanced once per step. An IndexedSlices
    gradient gives what its dense gradient gives: every row moves, as with Adam.

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Nadam(learning_rate=0.1)
        >>> _ = opt.apply_gradients([(tf.constant(3.0), v)]); round(float(v), 4)
        0.8937
    """

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, weight_decay=None, name: str = "Nadam", **kwargs):
        # not an Adam subclass: Keras's Nadam has no `amsgrad`, and configs list arguments
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._u_product = None  # made by build, in the first variable's dtype as Keras's

    def build(self, var_list) -> None:
        var_list = list(var_list)
        super().build(var_list)
        if self._u_product is None and var_list:
            dtype = var_list[0].dtype
            self._u_product = Variable(lambda: convert_to_tensor(1.0, dtype=dtype),
                                       trainable=False, name="u_product")

    @property
    def variables(self) -> list:
        """The state: `iterations`, the slots, then `u_product` once built (Keras's own
        list leaves it out; here `variables` is the whole state)."""
        extra = [] if self._u_product is None else [self._u_product]
        return _CallableList(list(super().variables) + extra)

    def _trackable_children(self) -> dict:
        children = super()._trackable_children()
        if self._u_product is not None:
            children["u_product"] = self._u_product
        return children

    @staticmethod
    def _decay_term(step, dtype) -> Tensor:
        return 1.0 - 0.5 * pow(convert_to_tensor(0.96, dtype=dtype), step)

    def _slot_names(self):
        return ("m", "v")

    def _before_updates(self) -> None:
        dtype = self._u_product.dtype
        step = cast(self._update_count() + 1, dtype)
        self._u_product.assign(self._u_product * convert_to_tensor(self.beta_1, dtype=dtype)
                               * self._decay_term(step, dtype))

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        # the betas in the variable's dtype first, so float32 rounds as Keras's does
        beta_1 = convert_to_tensor(self.beta_1, dtype=dtype)
        beta_2 = convert_to_tensor(self.beta_2, dtype=dtype)
        step = cast(self._update_count() + 1, dtype)
        u_t = beta_1 * self._decay_term(step, dtype)
        u_next = beta_1 * self._decay_term(step + 1, dtype)
        u_product = cast(self._u_product.read_value(), dtype)
        u_product_next = u_product * u_next
        b2_power = pow(beta_2, step)
        m = slots["m"] = slots["m"] + (g - slots["m"]) * (1 - beta_1)
        v = slots["v"] = slots["v"] + (square(g) - slots["v"]) * (1 - beta_2)
        m_hat = u_next * m / (1 - u_product_next) + (1 - u_t) * g / (1 - u_product)
        return x - m_hat * lr / (sqrt(v / (1 - b2_power)) + self.epsilon)


class Adamax(Optimizer):
    """Adamax, Adam with the infinity norm (Keras 3's rule): `m += (g - m)(1 - beta_1)`,
    `u = max(beta_2 u, |g|)`, `var -= lr m / ((1 - beta_1^t)(u + epsilon))`. Its slots
    are "m" and "v" (`u`; TensorFlow's names). An IndexedSlices gradient gives what its
    dense gradient gives: every row's `m` and `u` decay and every row moves.

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Adamax(learning_rate=0.1)
        >>> _ = opt.apply_gradients([(tf.constant(3.0), v)]); round(float(v), 4)
        0.9
    """

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, weight_decay=None, name: str = "Adamax", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def _slot_names(self):
        # "m", "v": Keras 3 makes these two per variable in turn (saved interleaved, as
        # Adam's), and TensorFlow's Adamax names them so
        return ("m", "v")

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        step = cast(self._update_count() + 1, dtype)
        b1_power = pow(convert_to_tensor(self.beta_1, dtype=dtype), step)
        m = slots["m"] = slots["m"] + (g - slots["m"]) * (1 - self.beta_1)
        u = slots["v"] = maximum(slots["v"] * self.beta_2, _abs(g))
        return x - (lr * m) / ((1 - b1_power) * (u + self.epsilon))


class RMSprop(Optimizer):
    """RMSprop: `ms = rho ms + (1 - rho) g²`, `var -= lr g / sqrt(ms + epsilon)`; with
    `centered`, the mean gradient's square is subtracted from ms; with `momentum`, the step
    goes through a momentum accumulator. An IndexedSlices gradient gives what its dense
    gradient gives: every row's `ms` decays (and, with `momentum`, every row moves).

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.RMSprop(learning_rate=0.1, rho=0.0)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 4)
        0.9
    """

    def __init__(self, learning_rate=0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, weight_decay=None,
                 name: str = "RMSprop", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def _slot_names(self):
        return (("velocity",) + (("momentum",) if self.momentum > 0 else ())
                + (("average_gradient",) if self.centered else ()))

    def _rule(self, g, x, slots, lr):
        rho = self.rho
        velocity = slots["velocity"] = slots["velocity"] * rho + square(g) * (1 - rho)
        denominator = velocity + self.epsilon
        if self.centered:
            average = slots["average_gradient"] = (slots["average_gradient"] * rho
                                                   + g * (1 - rho))
            denominator = velocity - square(average) + self.epsilon
        increment = lr * g * rsqrt(denominator)
        if self.momentum > 0:
            increment = slots["momentum"] = slots["momentum"] * self.momentum + increment
        return x - increment


class Adagrad(Optimizer):
    """Adagrad: `acc += g²`, `var -= lr g / sqrt(acc + epsilon)`, `acc` starting at
    `initial_accumulator_value`. An IndexedSlices gradient updates only the rows it names,
    of `var` and of `acc`, which is what its dense gradient gives (without weight decay).

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Adagrad(0.1, initial_accumulator_value=0.0)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 4)
        0.9
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, weight_decay=None, name: str = "Adagrad", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _slot_names(self):
        return ("accumulator",)

    def _slot_initial(self, slot):
        return self.initial_accumulator_value

    def _zero_gradient_changes_nothing(self):
        # a zero gradient adds 0 to `acc` and moves `var` by 0 / sqrt(acc + epsilon): 0
        # while that root is positive (0 / 0 would be NaN, as in a dense step)
        iav, eps = self.initial_accumulator_value, self.epsilon
        return not self.weight_decay and min(iav, eps) >= 0 and iav + eps > 0

    def _rule(self, g, x, slots, lr):
        acc = slots["accumulator"] = slots["accumulator"] + square(g)
        return x - lr * g / sqrt(acc + self.epsilon)


class LazyAdam(Adam):
    """TensorFlow Addons' LazyAdam: Adam, except that an IndexedSlices gradient updates
    only the rows it names, of `var` and of `m` and `v` (gathered, put through Adam's rule
    and scattered back), so a sparse step costs O(named rows) rather than O(table). The
    other rows, slots included, keep their values even when they carry momentum, which
    Adam would decay and apply: results differ from Adam's (and TensorFlow's) once batches
    name different rows. Bias corrections count every step (`iterations`); weight decay
    reaches the named rows only. Dense gradients follow Adam exactly.

    Example:
        >>> table = tf.Variable(tf.ones([4, 2])); opt = tf.optimizers.LazyAdam(0.1)
        >>> _ = opt.apply_gradients([(tf.IndexedSlices(tf.ones([1, 2]), [2]), table)])
        >>> [round(float(x), 4) for x in table.numpy()[:, 0]]
        [1.0, 1.0, 0.9, 1.0]
    """

    _lazy_sparse_updates = True

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "LazyAdam",
                 **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name=name, **kwargs)


class Adadelta(Optimizer):
    """Adadelta (Keras 3's rule, with a learning rate): `acc_g = rho acc_g + (1 - rho) g²`,
    `delta = -sqrt(acc_d + epsilon) g / sqrt(acc_g + epsilon)`,
    `acc_d = rho acc_d + (1 - rho) delta²`, `var += lr delta`. An IndexedSlices gradient
    gives what its dense gradient gives: every row's accumulators decay (the variable
    moves only in the rows named).

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Adadelta(learning_rate=1.0, rho=0.0)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 6)
        0.999684
    """

    def __init__(self, learning_rate=0.001, rho: float = 0.95, epsilon: float = 1e-7,
                 weight_decay=None, name: str = "Adadelta", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def _slot_names(self):
        return ("accumulated_grad", "accumulated_delta_var")

    def _slot_blocks(self) -> tuple:
        return (("accumulated_grad", "accumulated_delta_var"),)  # interleaved, as Keras 3's

    def _rule(self, g, x, slots, lr):
        rho = self.rho
        acc_grad = slots["accumulated_grad"] = (slots["accumulated_grad"] * rho
                                                + square(g) * (1 - rho))
        delta = -((sqrt(slots["accumulated_delta_var"] + self.epsilon) * g)
                  / sqrt(acc_grad + self.epsilon))
        slots["accumulated_delta_var"] = (slots["accumulated_delta_var"] * rho
                                          + square(delta) * (1 - rho))
        return x + lr * delta


class _DenseUpdates:
    """For rules that are not elementwise (norms or means over the whole variable): an
    IndexedSlices gradient is made dense first (repeated rows summed), so it gives what
    its dense gradient gives."""

    def _update_step(self, grad, var: Variable, lr: Tensor) -> None:
        if isinstance(grad, IndexedSlices):
            grad = indexed_slices_to_dense(grad, list(var._shape))
        super()._update_step(grad, var, lr)


def _rms(x: Tensor) -> Tensor:
    return sqrt(reduce_mean(square(x)))


class Adafactor(_DenseUpdates, Optimizer):
    """Adafactor (Keras 3's rule), with the step `t` from 1: `rho = min(lr, 1 / sqrt(t))`,
    `alpha = max(epsilon_2, rms(var)) * rho`, `beta_2 = 1 - t ** beta_2_decay`. For a
    variable of rank >= 2 the second moments are factored: `r` (the mean of
    `g² + epsilon_1` over the last axis) and `c` (over the second last) move as moving
    averages with `beta_2` and `v = r / mean(r) ⊗ c`; for rank < 2, `v` is the moving
    average itself (`r` and `c` are then unused int32 zeros, as Keras keeps them).
    `u = g / sqrt(v)`, `var -= alpha * u / max(1, rms(u) / clip_threshold)`. Slots, per
    variable in turn: "r", "c", "velocity". An IndexedSlices gradient is made dense.

    Example:
        >>> v = tf.Variable([[1.0, 2.0], [3.0, 4.0]]); opt = tf.optimizers.Adafactor(0.1)
        >>> _ = opt.apply_gradients([(tf.ones([2, 2]), v)])
        >>> [round(float(x), 4) for x in tf.reshape(v, [-1])]
        [0.7261, 1.7261, 2.7261, 3.7261]
    """

    def __init__(self, learning_rate=0.001, beta_2_decay: float = -0.8,
                 epsilon_1: float = 1e-30, epsilon_2: float = 1e-3,
                 clip_threshold: float = 1.0, relative_step: bool = True, weight_decay=None,
                 name: str = "adafactor", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_2_decay = beta_2_decay
        self.epsilon_1 = epsilon_1
        self.epsilon_2 = epsilon_2
        self.clip_threshold = clip_threshold
        self.relative_step = relative_step

    def _slot_names(self):
        return ("r", "c", "velocity")

    def _slot_blocks(self) -> tuple:
        return (("r", "c", "velocity"),)

    def _make_slot(self, var: Variable, slot: str, base: str) -> Variable:
        shape = list(var._shape)
        if slot == "velocity":
            return super()._make_slot(var, slot, base)
        if len(shape) < 2:  # Keras keeps a placeholder int32 zero (saved with the rest)
            return Variable(lambda: zeros([], _dt.int32), trainable=False,
                            name=f"{slot}/{base}")
        shape = shape[:-1] if slot == "r" else shape[:-2] + shape[-1:]
        dtype = var.dtype
        return Variable(lambda: zeros(shape, dtype), trainable=False, name=f"{slot}/{base}")

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        step = cast(self._update_count() + 1, dtype)
        inverse_root = 1 / sqrt(step)
        if self.relative_step and not callable(self._learning_rate):
            lr = minimum(lr, inverse_root)
        rho = minimum(lr, inverse_root)
        alpha = maximum(convert_to_tensor(self.epsilon_2, dtype=dtype), _rms(x)) * rho
        g2 = square(g) + self.epsilon_1
        beta_2 = 1 - pow(step, convert_to_tensor(self.beta_2_decay, dtype=dtype))
        if x.ndim >= 2:
            r = slots["r"] = beta_2 * slots["r"] + (1 - beta_2) * reduce_mean(g2, axis=-1)
            c = slots["c"] = beta_2 * slots["c"] + (1 - beta_2) * reduce_mean(g2, axis=-2)
            v = slots["velocity"] = (expand_dims(r / reduce_mean(r, axis=-1, keepdims=True),
                                                 -1) * expand_dims(c, -2))
        else:
            v = slots["velocity"] = beta_2 * slots["velocity"] + (1 - beta_2) * g2
        u = g / sqrt(v)
        u = u / maximum(convert_to_tensor(1.0, dtype=dtype), _rms(u) / self.clip_threshold)
        return x - alpha * u


class Ftrl(Optimizer):
    """FTRL-Proximal (Keras 3's rule), with `p = -learning_rate_power`:
    `acc' = acc + g²`, `linear += g + 2 * l2_shrinkage * var - (acc'^p - acc^p) / lr * var`,
    `var = (clip(linear, -l1, l1) - linear) / (acc'^p / lr + 2 * (l2 + beta / (2 lr)))`.
    Slots, per variable in turn: "accumulator" (from `initial_accumulator_value`) and
    "linear". An IndexedSlices gradient gives what its dense gradient gives (a zero
    gradient still sets every row from `linear`, so every row is updated).

    Example:
        >>> v = tf.Variable(1.0); opt = tf.optimizers.Ftrl(0.1)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)]); round(float(v), 4)
        0.7451
    """

    def __init__(self, learning_rate=0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0,
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float = 0.0,
                 weight_decay=None, name: str = "ftrl", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        for key, value, sign_ in (
                ("initial_accumulator_value", initial_accumulator_value, 1),
                ("learning_rate_power", learning_rate_power, -1),
                ("l1_regularization_strength", l1_regularization_strength, 1),
                ("l2_regularization_strength", l2_regularization_strength, 1),
                ("l2_shrinkage_regularization_strength",
                 l2_shrinkage_regularization_strength, 1)):
            if value * sign_ < 0:
                wanted = "positive or zero" if sign_ > 0 else "negative or zero"
                raise ValueError(f"Ftrl: `{key}` needs to be {wanted}. Received: "
                                 f"{key}={value}.")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def _slot_names(self):
        return ("accumulator", "linear")

    def _slot_blocks(self) -> tuple:
        return (("accumulator", "linear"),)

    def _slot_initial(self, slot):
        return self.initial_accumulator_value if slot == "accumulator" else 0.0

    def _rule(self, g, x, slots, lr):
        power = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * lr)
        shrunk = g + 2 * self.l2_shrinkage_regularization_strength * x
        acc = slots["accumulator"]
        new_acc = acc + square(g)
        new_root = pow(new_acc, power)
        linear = slots["linear"] = slots["linear"] + (
            shrunk - (new_root - pow(acc, power)) / lr * x)
        quadratic = new_root / lr + 2 * l2
        l1 = convert_to_tensor(self.l1_regularization_strength, dtype=x.dtype)
        clipped = minimum(maximum(linear, -l1), l1)
        slots["accumulator"] = new_acc
        return (clipped - linear) / quadratic


class Lamb(_DenseUpdates, Optimizer):
    """LAMB (Keras 3's rule): Adam's moments `m`, `v` and bias-corrected step
    `u = (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t)) + epsilon)`, scaled per variable
    by the trust ratio `||var|| / ||u||` (1 when either norm is 0): `var -= ratio * lr * u`.
    Slots, per variable in turn: "momentum", "velocity". An IndexedSlices gradient is made
    dense (the norms are the whole variable's).

    Example:
        >>> v = tf.Variable([3.0, 4.0]); opt = tf.optimizers.Lamb(0.1)
        >>> _ = opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
        >>> [round(float(x), 4) for x in v]
        [2.6464, 3.6464]
    """

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, weight_decay=None, name: str = "lamb", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def _slot_names(self):
        return ("momentum", "velocity")

    def _slot_blocks(self) -> tuple:
        return (("momentum", "velocity"),)

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        step = cast(self._update_count() + 1, dtype)
        b1_power = pow(convert_to_tensor(self.beta_1, dtype=dtype), step)
        b2_power = pow(convert_to_tensor(self.beta_2, dtype=dtype), step)
        m = slots["momentum"] = slots["momentum"] + (g - slots["momentum"]) * (1 - self.beta_1)
        v = slots["velocity"] = (slots["velocity"]
                                 + (square(g) - slots["velocity"]) * (1 - self.beta_2))
        update = (m / (1.0 - b1_power)) / (sqrt(v / (1.0 - b2_power)) + self.epsilon)
        w_norm = sqrt(reduce_sum(square(x)))
        u_norm = sqrt(reduce_sum(square(update)))
        one = convert_to_tensor(1.0, dtype=dtype)
        # the ratio where both norms are positive; the divisor kept off 0 elsewhere, so
        # the branch `where` leaves out holds no 0 / 0
        safe = where(u_norm > 0, u_norm, one)
        ratio = where(logical_and(w_norm > 0, u_norm > 0), w_norm / safe, one)
        return x - ratio * lr * update


class Lion(Optimizer):
    """Lion (Keras 3's rule): `var -= lr * sign(beta_1 m + (1 - beta_1) g)`, then
    `m = beta_2 m + (1 - beta_2) g`. Slot: "momentum". An IndexedSlices gradient gives
    what its dense gradient gives (a zero gradient still moves every row by its
    momentum's sign).

    Example:
        >>> v = tf.Variable([1.0, 1.0]); opt = tf.optimizers.Lion(0.1)
        >>> _ = opt.apply_gradients([(tf.constant([2.0, -0.5]), v)])
        >>> [round(float(x), 4) for x in v]
        [0.9, 1.1]
    """

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.99,
                 weight_decay=None, name: str = "lion", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError("Lion: argument `beta_1` must be in the [0, 1] range. "
                             f"Otherwise, the optimizer degenerates to SignSGD. Received: "
                             f"beta_1={beta_1}.")
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def _slot_names(self):
        return ("momentum",)

    def _rule(self, g, x, slots, lr):
        dtype = x.dtype
        beta_1 = convert_to_tensor(self.beta_1, dtype=dtype)
        beta_2 = convert_to_tensor(self.beta_2, dtype=dtype)
        m = slots["momentum"]
        new_x = x - lr * sign(m * beta_1 + g * (1.0 - beta_1))
        slots["momentum"] = m * beta_2 + g * (1.0 - beta_2)
        return new_x
