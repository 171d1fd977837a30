"""Normalization layers: batch, layer, group and unit normalization."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.shape import dims_of
from ..._core.tensor import Tensor
from ...function.control_flow import cond as _cond
from ...ops import array as _array, math as _math, nn as _nn, reduction as _reduction
from ...ops.creation import ones as _ones, ones_like as _ones_like, zeros as _zeros
from ...train import initializers as _init, layers as _layers
from .. import constraints as _constraints, regularizers as _regularizers
from ..layer import Layer, unique_name
from ._base import Stateless, base_kwargs

__all__ = ["BatchNormalization", "GroupNormalization", "LayerNormalization",
           "UnitNormalization"]


class BatchNormalization(Layer, _layers.BatchNorm):
    """Normalizes with the batch's statistics in training and moving ones otherwise.

    Example:
        >>> bn = tf.keras.layers.BatchNormalization()
        >>> bn(tf.constant([[0.0], [2.0]]), training=True).shape
        TensorShape([2, 1])
    """

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", trainable: bool = True, **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        _layers.BatchNorm.__init__(self, axis, momentum, epsilon, center, scale,
                                   beta_initializer, gamma_initializer,
                                   moving_mean_initializer, moving_variance_initializer,
                                   name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    supports_masking = True

    def call(self, x, training=None, mask=None):
        # a frozen BatchNormalization runs in inference mode, as Keras's does
        training = training if self.trainable else False
        if mask is None:
            return _layers.BatchNorm.call(self, x, training=training)
        # with a mask ([batch, time] for [batch, time, features]), the batch statistics
        # are those of the unmasked steps, as Keras's
        self._check(x)
        mask = convert_to_tensor(mask)
        if mask.ndim != x.ndim - 1:
            raise ValueError(f"BatchNormalization {self.name!r}: the mask provided should "
                             "be one dimension less than the inputs. Received: "
                             f"mask.shape={list(mask.shape)}, inputs.shape={list(x.shape)}")
        training = _layers._training(type(self).__name__, training)
        if isinstance(training, Tensor):
            return _cond(training, lambda: self._train(x, self._masked_moments(x, mask)),
                         lambda: self._infer(x))
        return self._train(x, self._masked_moments(x, mask)) if training else self._infer(x)

    def _train(self, x, moments: tuple | None = None):
        """The batch statistics' normalization: one FusedBatchNorm op (and one gradient op)
        for one feature axis of a float32/float64 input whose other dims are known and
        non-zero; the general composite (train/layers.py) otherwise."""
        if moments is not None or not self._fusable(x):
            return _layers.BatchNorm._train(self, x, moments)
        (axis,) = self._feature_axes
        c = self._feature_dims[0]
        scale = self.gamma if self.gamma is not None else _ones([c], x.dtype)
        offset = self.beta if self.beta is not None else _zeros([c], x.dtype)
        y, mean, variance = _nn.fused_batch_norm_training(
            x, scale, offset, self.epsilon, axis)
        decay = 1.0 - self.momentum
        # the statistics move without gradient (assignments are not differentiable)
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            moving.assign_sub((moving - _array.stop_gradient(batch)) * decay)
        return y

    def _fusable(self, x) -> bool:
        if len(self._feature_axes) != 1 or x.dtype not in (_dt.float32, _dt.float64):
            return False
        for v in (self.gamma, self.beta):
            if v is not None and v.dtype is not x.dtype:
                return False
        axis = self._feature_axes[0]
        counts = [d for a, d in enumerate(x._shape) if a != axis]
        return None not in counts and 0 not in counts

    def _masked_moments(self, x, mask) -> tuple:
        keep = _math.cast(_array.expand_dims(_math.cast(mask, _dt.bool), -1), x.dtype) \
            * _ones_like(x)
        axes = [a for a in range(x.ndim) if a not in self._feature_axes]
        count = _reduction.reduce_sum(keep, axes, keepdims=True) + 1e-7  # Keras's epsilon
        mean = _reduction.reduce_sum(x * keep, axes, keepdims=True) / count
        variance = _reduction.reduce_sum(_math.square((x - mean) * keep), axes,
                                         keepdims=True) / count
        return _array.squeeze(mean, axes), _array.squeeze(variance, axes)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale}


class LayerNormalization(Layer, _layers.LayerNorm):
    """Normalizes each example over `axis`.

    Example:
        >>> tf.keras.layers.LayerNormalization()(tf.constant([[1.0, 3.0]])).numpy().round(2)
        array([[-1.,  1.]], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, axis=-1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 trainable: bool = True, **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        _layers.LayerNorm.__init__(self, axis, epsilon, center, scale, beta_initializer,
                                   gamma_initializer, name=unique_name(name, type(self)),
                                   dtype=dtype)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}


class GroupNormalization(Layer):
    """Normalizes the channels at `axis` in `groups` groups: each example's mean and
    variance are taken over each group of channels and all other non-batch axes, then
    `gamma` and `beta` (one per channel) scale and shift. `groups=-1` gives one group per
    channel (instance normalization); `groups=1` a layer normalization over all axes.

    Example:
        >>> x = tf.constant([[1.0, 3.0, 10.0, 20.0]])
        >>> tf.keras.layers.GroupNormalization(groups=2)(x).numpy().round(2)
        array([[-1.,  1., -1.,  1.]], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, **kwargs):
        if isinstance(groups, bool) or not isinstance(groups, int) or \
                (groups <= 0 and groups != -1):
            raise ValueError("GroupNormalization: received an invalid value for argument "
                             "`groups`, expected a positive integer (or `-1` for instance "
                             f"normalization). Received: groups={groups!r}")
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"GroupNormalization: axis must be an int, got {axis!r}")
        super().__init__(**kwargs)
        self.groups, self.axis, self.epsilon = groups, axis, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer = _init.get(beta_initializer)
        self.gamma_initializer = _init.get(gamma_initializer)
        self.beta_regularizer = _regularizers.get(beta_regularizer)
        self.gamma_regularizer = _regularizers.get(gamma_regularizer)
        self.beta_constraint = _constraints.get(beta_constraint)
        self.gamma_constraint = _constraints.get(gamma_constraint)

    def build(self, input_shape):
        shape = list(input_shape)
        if not -len(shape) <= self.axis < len(shape):
            raise ValueError(f"GroupNormalization {self.name!r}: axis {self.axis} is out of "
                             f"bounds for input shape {shape}")
        dim = shape[self.axis]
        if dim is None:
            raise ValueError(f"GroupNormalization {self.name!r}: axis {self.axis} of the "
                             "input tensor should have a defined dimension but the layer "
                             f"received an input with shape {shape}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(f"GroupNormalization {self.name!r}: number of groups "
                             f"({self.groups}) cannot be more than the number of channels "
                             f"({dim}).")
        if dim % self.groups != 0:
            raise ValueError(f"GroupNormalization {self.name!r}: number of groups "
                             f"({self.groups}) must be a multiple of the number of channels "
                             f"({dim}).")
        self._ndim, self._dim = len(shape), dim
        for which in ("gamma", "beta"):
            if not (self.scale if which == "gamma" else self.center):
                setattr(self, which, None)
                continue
            constraint = getattr(self, f"{which}_constraint")
            extra = {} if constraint is None else {"constraint": constraint}
            setattr(self, which, self.add_weight(
                shape=(dim,), name=which, initializer=getattr(self, f"{which}_initializer"),
                regularizer=getattr(self, f"{which}_regularizer"), **extra))

    def call(self, x):
        axis = self.axis % self._ndim
        if x.ndim != self._ndim or x.shape[axis] != self._dim:
            raise self._input_error(f"rank {self._ndim} with {self._dim} channels at axis "
                                    f"{self.axis}", x)
        dims = list(dims_of(x))  # unknown sizes as run-time dims
        per_group = self._dim // self.groups
        # [batch, ..., channels, ...] -> [batch, ..., groups, channels/group, ...]
        grouped = _array.reshape(x, [-1, *dims[1:axis], self.groups, per_group,
                                     *dims[axis + 1:]])
        # half precision is normalized in float32, as Keras does
        work = _math.cast(grouped, _dt.float32) if x.dtype in (_dt.float16, _dt.bfloat16) \
            else grouped
        axes = [a for a in range(1, self._ndim + 1) if a != axis]
        mean, variance = _nn.moments(work, axes, keepdims=True)
        inv = _math.rsqrt(variance + _math.cast(self.epsilon, work.dtype))
        param_shape = [1] * (self._ndim + 1)
        param_shape[axis], param_shape[axis + 1] = self.groups, per_group
        if self.gamma is not None:
            inv = inv * _math.cast(_array.reshape(self.gamma, param_shape), work.dtype)
        shift = -mean * inv
        if self.beta is not None:
            shift = shift + _math.cast(_array.reshape(self.beta, param_shape), work.dtype)
        out = _math.cast(work * inv + shift, x.dtype)
        return _array.reshape(out, [-1, *dims[1:]])

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": _init.serialize(self.beta_initializer),
                "gamma_initializer": _init.serialize(self.gamma_initializer),
                "beta_regularizer": _regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": _regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": _constraints.serialize(self.beta_constraint),
                "gamma_constraint": _constraints.serialize(self.gamma_constraint)}


class UnitNormalization(Stateless):
    """Scales each example to unit L2 norm over `axis` (an int or a list of them); the
    inverse norm is capped at 1e12, so a zero vector stays zero.

    Example:
        >>> tf.keras.layers.UnitNormalization()(tf.constant([[3.0, 4.0]])).numpy()
        array([[0.6, 0.8]], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras

    def __init__(self, axis=-1, **kwargs):
        if isinstance(axis, (list, tuple)):
            axis = list(axis)
        elif isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError("UnitNormalization: invalid value for `axis` argument: expected "
                            f"an int or a list/tuple of ints. Received: axis={axis!r}")
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, x):
        if x.ndim == 0:
            x = _array.expand_dims(x, 0)
        axes = _layers._axes("UnitNormalization", self.axis, x.ndim)
        inverse = _math.rsqrt(_reduction.reduce_sum(_math.square(x), list(axes),
                                                    keepdims=True))
        return x * _math.minimum(inverse, _math.cast(1e12, x.dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
