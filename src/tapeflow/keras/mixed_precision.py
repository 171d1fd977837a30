"""`tf.keras.mixed_precision`: dtype policies and dynamic loss scaling, as Keras 3.

A `DTypePolicy` names two dtypes: the one layers compute in (`compute_dtype`) and the one
their weights are stored in (`variable_dtype`). "mixed_float16" and "mixed_bfloat16"
compute in half precision over float32 weights; any other dtype name is both. Layers
created after `set_global_policy` take the global policy unless given `dtype=`.

Inside a layer's call (see keras/layer.py) an autocast scope is open: the layer's weights
(`AutocastVariable`s) are read in the compute dtype, so `x @ kernel` works for a float16
`x` and a float32 `kernel`, and the gradient reaches the float32 weight through the cast.

`LossScaleOptimizer` wraps an optimizer with dynamic loss scaling: `scale_loss`
multiplies the loss by the current scale; `apply_gradients` divides the gradients by it
and applies them when all are finite (after `dynamic_growth_steps` such steps in a row
the scale doubles), or skips the step and halves the scale when one is not.

Example:
    >>> tf.keras.mixed_precision.set_global_policy("mixed_float16")
    >>> layer = tf.keras.layers.Dense(2)
    >>> layer.compute_dtype, layer.variable_dtype
    ('float16', 'float32')
    >>> tf.keras.mixed_precision.set_global_policy("float32")
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterable, Iterator

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.indexed_slices import IndexedSlices
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..function.control_flow import cond
from ..ops.math import cast, equal, is_finite, logical_and
from ..ops.reduction import reduce_all
from ..train import optimizers as _optimizers

__all__ = ["DTypePolicy", "Policy", "LossScaleOptimizer", "set_global_policy",
           "global_policy", "set_dtype_policy", "dtype_policy"]

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def _dtype_name(value) -> str | None:
    """The canonical name of a dtype given as a name, a DType or a NumPy dtype, or None
    when `value` names no dtype."""
    try:
        return _dt.as_dtype(value).name
    except (TypeError, ValueError, KeyError):
        return None


class DTypePolicy:
    """A layer's dtypes: `compute_dtype` (inputs, outputs, arithmetic) and
    `variable_dtype` (weights). `name` is a dtype name ("float32", "float16",
    "bfloat16", "float64", ...: both dtypes) or "mixed_float16" / "mixed_bfloat16"
    (half-precision computation over float32 weights). Without a name, the global
    policy's.

    Example:
        >>> policy = tf.keras.mixed_precision.Policy("mixed_float16")
        >>> policy.compute_dtype, policy.variable_dtype
        ('float16', 'float32')
    """

    def __init__(self, name: str | None = None):
        if name is None:
            name = global_policy().name
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'mixed_float16'. Received: "
                            f"name={name!r} (of type {type(name)})")
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        else:
            canonical = _dtype_name(name)
            if canonical is None:
                raise ValueError(f"Cannot convert {name!r} to a mixed precision DTypePolicy. "
                                 "Valid policies include 'mixed_float16', 'mixed_bfloat16', "
                                 "and the name of any float dtype such as 'float32'.")
            compute = variable = name = canonical
        self._name, self._compute_dtype, self._variable_dtype = name, compute, variable

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of the layer's computations (and of its outputs)."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        """None: tapeflow has no quantized policies (Keras's int8 / float8 ones)."""
        return None

    def convert_input(self, x, autocast: bool, dtype):
        """`x` as a tensor; a floating one cast to `dtype` when `autocast` is True."""
        x = convert_to_tensor(x)
        dtype = _dt.as_dtype(dtype)
        if autocast and x.dtype.is_floating and x.dtype is not dtype:
            return cast(x, dtype)
        return x

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict) -> "DTypePolicy":
        return cls(**config)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._name == self._name

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._name))

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self._name}">'


Policy = DTypePolicy

_GLOBAL: list = [None]  # the global policy; None: "float32" (Keras's floatx)


def set_global_policy(policy) -> None:
    """Make `policy` (a DTypePolicy or its name) the policy of layers created from now on
    without a `dtype=` (and of `compile`'s loss scaling under "mixed_float16").

    Example:
        >>> tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
        >>> tf.keras.mixed_precision.global_policy().compute_dtype
        'bfloat16'
        >>> tf.keras.mixed_precision.set_global_policy("float32")
    """
    if isinstance(policy, str):
        policy = DTypePolicy(policy)
    elif not isinstance(policy, DTypePolicy):
        raise ValueError("Invalid `policy` argument. Expected the string name of a policy "
                         "(such as 'mixed_float16') or a `DTypePolicy` instance. Received: "
                         f"policy={policy!r} (of type {type(policy)})")
    _GLOBAL[0] = policy


def global_policy() -> DTypePolicy:
    """The global policy (DTypePolicy("float32") unless `set_global_policy` changed it)."""
    if _GLOBAL[0] is None:
        _GLOBAL[0] = DTypePolicy("float32")
    return _GLOBAL[0]


set_dtype_policy = set_global_policy
dtype_policy = global_policy


def get(identifier) -> DTypePolicy:
    """The policy a layer's `dtype=` names: None (the global policy), a DTypePolicy, its
    name, its serialized dict (`{"class_name": "DTypePolicy", "config": {"name": ...}}`)
    or a dtype (`tf.float16`, `np.float64`)."""
    if identifier is None:
        return global_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    if isinstance(identifier, dict) and identifier.get("class_name") in (
            "DTypePolicy", "FloatDTypePolicy", "Policy"):
        return DTypePolicy.from_config(identifier.get("config") or {})
    name = _dtype_name(identifier) if not isinstance(identifier, dict) else None
    if name is None:
        raise ValueError(f"Cannot interpret `dtype` argument. Expected a string or an "
                         f"instance of DTypePolicy. Received: dtype={identifier!r}")
    return DTypePolicy(name)


# --------------------------------------------------------------------------- autocast


class _Scope(threading.local):
    """The compute dtype the weights of the layer being called are read in (None: as
    stored); one per thread, as layers called on several threads each have their own."""
    dtype = None


_SCOPE = _Scope()


def autocast_dtype():
    """The dtype an open autocast scope reads floating weights in, or None."""
    return _SCOPE.dtype


@contextmanager
def autocast_scope(dtype) -> Iterator[None]:
    """Read `AutocastVariable`s in `dtype` (None: as stored) until the block ends."""
    previous = _SCOPE.dtype
    _SCOPE.dtype = None if dtype is None else _dt.as_dtype(dtype)
    try:
        yield
    finally:
        _SCOPE.dtype = previous


class AutocastVariable(Variable):
    """A layer weight that reads as the compute dtype inside a layer's call (an autocast
    scope) and as its own dtype elsewhere; floating values assigned to it are cast to
    its dtype, as Keras 3's variables do (a float16 moving mean into a float32 one).

    Example:
        >>> from tapeflow.keras.mixed_precision import AutocastVariable, autocast_scope
        >>> v = AutocastVariable(np.ones(2, np.float32))
        >>> with autocast_scope("float16"):
        ...     (v * 1).dtype.name
        'float16'
        >>> (v * 1).dtype.name
        'float32'
    """

    _autocast = True

    def read_value(self) -> Tensor:
        value = Variable.read_value(self)
        dtype = _SCOPE.dtype
        if dtype is not None and self._autocast and value.dtype is not dtype \
                and value.dtype.is_floating:
            return cast(value, dtype)
        return value

    value = read_value

    def _own_dtype(self, value):
        if isinstance(value, Variable):
            value = Variable.read_value(value)
        if isinstance(value, Tensor) and value.dtype.is_floating and \
                self.dtype.is_floating and value.dtype is not self.dtype:
            return cast(value, self.dtype)
        return value

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        return Variable.assign(self, self._own_dtype(value), use_locking, name, read_value)

    def assign_add(self, delta, use_locking: bool = False, name=None,
                   read_value: bool = True):
        return Variable.assign_add(self, self._own_dtype(delta), use_locking, name,
                                   read_value)

    def assign_sub(self, delta, use_locking: bool = False, name=None,
                   read_value: bool = True):
        return Variable.assign_sub(self, self._own_dtype(delta), use_locking, name,
                                   read_value)


# --------------------------------------------------------------------------- loss scaling


class _CallableList(list):
    """A list that may also be called, as code written for `variables()` does."""

    def __call__(self) -> list:
        return list(self)


def _divide(grad, scale: Tensor):
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(grad.values / cast(scale, grad.values.dtype), grad.indices,
                             grad.dense_shape)
    grad = convert_to_tensor(grad)
    return grad / cast(scale, grad.dtype)


def _all_finite(grads: list) -> Tensor:
    """One boolean: every entry of every gradient is finite."""
    finite = convert_to_tensor(True)
    for g in grads:
        values = g.values if isinstance(g, IndexedSlices) else convert_to_tensor(g)
        if values.dtype.is_floating or values.dtype.is_complex:
            finite = logical_and(finite, reduce_all(is_finite(values)))
    return finite


class LossScaleOptimizer(_optimizers.Optimizer):
    """Dynamic loss scaling around `inner_optimizer`, as Keras 3's: `scale_loss(loss)`
    is `loss * dynamic_scale` (start: `initial_scale`); `apply_gradients` takes the
    gradients of the scaled loss, divides them by the scale and, if all are finite,
    applies them with the inner optimizer, doubling the scale after
    `dynamic_growth_steps` finite steps in a row; a step with an inf or NaN gradient
    changes no weight and halves the scale. `fit` drives it through `scale_loss` and
    `apply_gradients`; `compile` wraps the optimizer in one under "mixed_float16".

    Example:
        >>> opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
        >>> float(opt.scale_loss(tf.constant(1.0)))
        32768.0
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15,
                 dynamic_growth_steps: int = 2000, name: str | None = None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. "
                             "Instead, simply set `loss_scale_factor` directly on the "
                             "`inner_optimizer`.")
        if not isinstance(inner_optimizer, _optimizers.Optimizer):
            raise TypeError(f"LossScaleOptimizer: inner_optimizer must be an Optimizer, got "
                            f"{inner_optimizer!r}")
        if isinstance(dynamic_growth_steps, bool) or \
                not isinstance(dynamic_growth_steps, (int, np.integer)) or \
                dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be a positive "
                             f"integer, got {dynamic_growth_steps!r}")
        if not float(initial_scale) > 0:
            raise ValueError(f"LossScaleOptimizer: initial_scale must be positive, got "
                             f"{initial_scale!r}")
        kwargs.pop("learning_rate", None)  # Keras writes none; the inner optimizer's rules
        super().__init__(learning_rate=0.0, name=name or "loss_scale_optimizer", **kwargs)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        # the loss is scaled here: the inner optimizer must not scale it a second time
        self.inner_optimizer.loss_scale_factor = None
        self.built = False

    def build(self, var_list) -> None:
        """Create `step_counter` and `dynamic_scale` (once) and build the inner
        optimizer for `var_list`."""
        var_list = list(var_list)
        if not self.built:
            scale = self.initial_scale
            self.step_counter = Variable(lambda: np.array(0, np.int64), trainable=False,
                                         name="step_counter", dtype=_dt.int64)
            self.dynamic_scale = Variable(lambda: np.array(scale, np.float32),
                                          trainable=False, name="dynamic_scale",
                                          dtype=_dt.float32)
            self.built = True
        self.inner_optimizer.build(var_list)

    @property
    def variables(self) -> list:
        own = [self._iterations] + ([self.step_counter, self.dynamic_scale]
                                    if self.built else [])
        return _CallableList(own + list(self.inner_optimizer.variables))

    def _trackable_children(self) -> dict:
        children = {"iterations": self._iterations, "inner_optimizer": self.inner_optimizer}
        if self.built:
            children.update(step_counter=self.step_counter, dynamic_scale=self.dynamic_scale)
        return children

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        # (the base class sets its own, unused 0.0 while it is being constructed)
        if "inner_optimizer" in self.__dict__:
            self.inner_optimizer.learning_rate = value
        else:
            self._learning_rate = self._build_learning_rate(value)

    lr = learning_rate

    @property
    def iterations(self):
        """The inner optimizer's steps (skipped steps do not count)."""
        return self.inner_optimizer.iterations

    def scale_loss(self, loss):
        """`loss` times the current scale (`initial_scale` before the first step)."""
        loss = convert_to_tensor(loss)
        scale = self.dynamic_scale.read_value() if self.built else \
            convert_to_tensor(self.initial_scale)
        return loss * cast(scale, loss.dtype)

    def check_finite(self, grads) -> Tensor:
        """Whether every gradient (None ones aside) is finite: a boolean scalar."""
        return _all_finite([g for g in grads if g is not None])

    def apply_gradients(self, grads_and_vars: Iterable, name: str | None = None,
                        skip_gradients_aggregation: bool = False):
        """Apply gradients of the scaled loss: divided by the scale and applied by the
        inner optimizer when all are finite (the scale doubles after
        `dynamic_growth_steps` such steps); else skipped, halving the scale. Returns
        the inner optimizer's `iterations`."""
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"LossScaleOptimizer.apply_gradients: expected (gradient, "
                                f"variable) pairs, got {pair!r}")
        self.build([v for _, v in pairs])
        scale = self.dynamic_scale.read_value()
        finite = self.check_finite([g for g, _ in pairs])
        growth = self.dynamic_growth_steps

        def apply():
            unscaled = [(None if g is None else _divide(g, scale), v) for g, v in pairs]
            self.inner_optimizer.apply_gradients(
                unscaled, skip_gradients_aggregation=skip_gradients_aggregation)

            def grow():
                self.step_counter.assign(convert_to_tensor(0, dtype=_dt.int64))
                self.dynamic_scale.assign(scale * 2.0)
                return convert_to_tensor(0)

            def count():
                self.step_counter.assign_add(convert_to_tensor(1, dtype=_dt.int64))
                return convert_to_tensor(0)

            cond(equal(self.step_counter.read_value(),
                       convert_to_tensor(growth - 1, dtype=_dt.int64)), grow, count)
            return convert_to_tensor(0)

        def skip():
            self.step_counter.assign(convert_to_tensor(0, dtype=_dt.int64))
            self.dynamic_scale.assign(scale * 0.5)
            return convert_to_tensor(0)

        cond(finite, apply, skip)
        return self.iterations

    def finalize_variable_values(self, var_list) -> None:
        self.inner_optimizer.finalize_variable_values(var_list)

    def get_config(self) -> dict:
        """Keras 3's: the name, the inner optimizer (serialized), `initial_scale` and
        `dynamic_growth_steps`."""
        inner = self.inner_optimizer
        return {"name": self.name,
                "inner_optimizer": {"module": "keras.optimizers",
                                    "class_name": type(inner).__name__,
                                    "config": inner.get_config(), "registered_name": None},
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            name = inner.get("class_name")
            klass = (custom_objects or {}).get(name) or getattr(_optimizers, str(name), None)
            if not (isinstance(klass, type) and issubclass(klass, _optimizers.Optimizer)):
                raise ValueError(f"LossScaleOptimizer.from_config: unknown optimizer "
                                 f"{name!r}")
            inner = klass.from_config(inner.get("config") or {}, custom_objects)
        return cls(inner, **config)

    def __repr__(self) -> str:
        return (f"<tapeflow.keras.mixed_precision.LossScaleOptimizer name={self.name!r} "
                f"inner={self.inner_optimizer!r}>")
