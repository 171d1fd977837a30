"""Layers that merge a list of inputs: Add, Subtract, Multiply, Average, Maximum,
Minimum, Concatenate, Dot; and Keras's functional forms of each (`add([a, b])` is
`Add()([a, b])`), which the functional API's guides use for residual connections."""
from __future__ import annotations

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.shape import dims_of
from ...ops import (array as _array, linalg as _linalg, math as _math,
                    reduction as _reduction)
from ...ops.creation import ones_like as _ones_like
from ...ops.indexing import where as _where
from ._base import Stateless

__all__ = ["Add", "Average", "Concatenate", "Dot", "Maximum", "Minimum", "Multiply",
           "Subtract", "add", "average", "concatenate", "dot", "maximum", "minimum",
           "multiply", "subtract"]


def _elementwise_shape(layer: str, a, b):
    """Keras's rule for the shape of an elementwise merge of two shapes without their
    batch: trailing axes aligned, 1 broadcasts, None is unknown, other sizes must match."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return list(a)
    out = list(a[:len(a) - len(b)])
    for i, j in zip(a[len(a) - len(b):], b):
        if i is None or j is None:
            out.append(None)
        elif i == 1 or j == 1:
            out.append(j if i == 1 else i)
        elif i != j:
            raise ValueError(f"{layer}: inputs have incompatible shapes. Received shapes "
                             f"{tuple(a)} and {tuple(b)}")
        else:
            out.append(i)
    return out


class _Merge(Stateless):
    supports_masking = True

    def compute_mask(self, inputs, previous_mask=None):
        """The OR of the inputs' masks when all of them have one (Keras's rule)."""
        masks = previous_mask if isinstance(previous_mask, (list, tuple)) else None
        if not masks or any(m is None for m in masks):
            return None
        out = convert_to_tensor(masks[0])
        for m in masks[1:]:
            out = _math.logical_or(out, convert_to_tensor(m))
        return out

    def _check_list(self, inputs) -> None:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"A merge layer ({type(self).__name__} {self.name!r}) should be "
                             f"called on a list of inputs, got {type(inputs).__name__}")

    def build(self, input_shape):
        kind = f"{type(self).__name__} {self.name!r}"
        # a list of inputs has a list of shapes (one input: one TensorShape)
        if not isinstance(input_shape, list) or not input_shape:
            raise ValueError(f"A merge layer ({kind}) should be called on a list of inputs. "
                             f"Received: input_shape={input_shape}")
        shapes = [list(s) for s in input_shape]
        batches = {s[0] for s in shapes if s} - {None}
        if len(batches) > 1:
            raise ValueError(f"{kind}: cannot merge tensors with different batch sizes. "
                             f"Received tensors with shapes {[tuple(s) for s in shapes]}")
        out = shapes[0][1:]
        for s in shapes[1:]:
            out = _elementwise_shape(kind, out, s[1:])

    def call(self, inputs):
        self._check_list(inputs)
        # lower-rank inputs gain axes after the batch, so [b, n] merges with [b, t, n]
        # as Keras's does
        top = max(x.ndim for x in inputs)
        inputs = [_expand_after_batch(x, top - x.ndim) for x in inputs]
        return self._merge_all(inputs)

    def _merge_all(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return out


def _expand_after_batch(x, count: int):
    for _ in range(count):
        x = _array.expand_dims(x, 1)
    return x


class Add(_Merge):
    """The elementwise sum of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Add()([tf.ones([2]), tf.ones([2])]).numpy()
        array([2., 2.], dtype=float32)
    """

    @staticmethod
    def _merge(x, y):
        return _math.add(x, y)


class Subtract(_Merge):
    """The elementwise difference of exactly two inputs: `inputs[0] - inputs[1]`.

    Example:
        >>> tf.keras.layers.Subtract()([tf.ones([2]), tf.ones([2])]).numpy()
        array([0., 0.], dtype=float32)
    """

    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"A `Subtract` layer ({self.name!r}) should be called on exactly "
                             f"2 inputs. Received: input_shape={input_shape}")

    def _merge_all(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer ({self.name!r}) should be called on "
                             f"exactly 2 inputs. Received {len(inputs)} inputs")
        return _math.subtract(inputs[0], inputs[1])


class Multiply(_Merge):
    """The elementwise product of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Multiply()([tf.fill([2], 2.0), tf.fill([2], 3.0)]).numpy()
        array([6., 6.], dtype=float32)
    """

    @staticmethod
    def _merge(x, y):
        return _math.multiply(x, y)


class Average(_Merge):
    """The elementwise mean of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Average()([tf.ones([2]), tf.zeros([2])]).numpy()
        array([0.5, 0.5], dtype=float32)
    """

    def _merge_all(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = _math.add(out, x)
        return out / len(inputs)


class _MaskedExtreme(_Merge):
    """Maximum and Minimum: with masks ([batch, time] for [batch, time, ...] inputs), a
    masked-out step of one input takes the other's value, so it does not win (Keras's
    rule, there being no identity element to fill in)."""

    def call(self, inputs, mask=None):
        self._check_list(inputs)
        masks = list(mask) if isinstance(mask, (list, tuple)) else [None] * len(inputs)
        if all(m is None for m in masks):
            return super().call(inputs)
        output = output_mask = None
        for i, x in enumerate(inputs):
            m = masks[i]
            if m is not None:
                m = convert_to_tensor(m)
                m = m if m.dtype is _dt.bool else _math.not_equal(m, 0)
                m = _array.broadcast_to(_array.expand_dims(m, -1), _array.shape(x))
            if i == 0:
                output, output_mask = x, m
                continue
            if m is not None:
                x = _where(m, x, output)
            if output_mask is not None:
                output = _where(output_mask, output, x)
            output_mask = _math.logical_or(output_mask, m) \
                if m is not None and output_mask is not None else None
            output = self._merge(output, x)
        return output


class Maximum(_MaskedExtreme):
    """The elementwise maximum of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Maximum()([tf.constant([1.0, 4.0]), tf.constant([3.0, 2.0])])
        <tf.Tensor: shape=(2,), dtype=float32, numpy=array([3., 4.], dtype=float32)>
    """

    @staticmethod
    def _merge(x, y):
        return _math.maximum(x, y)


class Minimum(_MaskedExtreme):
    """The elementwise minimum of a list of inputs of the same shape.

    Example:
        >>> tf.keras.layers.Minimum()([tf.constant([1.0, 4.0]), tf.constant([3.0, 2.0])])
        <tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>
    """

    @staticmethod
    def _merge(x, y):
        return _math.minimum(x, y)


def _l2_normalize(x, axis: int):
    """Keras's `ops.normalize(order=2)`: x / ||x|| along `axis`, the inverse norm capped at
    1 / epsilon (Keras's epsilon, 1e-7), so a zero vector stays zero."""
    inverse = _math.rsqrt(_reduction.reduce_sum(_math.square(x), axis, keepdims=True))
    return x * _math.minimum(inverse, _math.cast(1e7, x.dtype))


def _batch_dot(x, y, axes: tuple):
    """Per example, the dot product of `x` and `y` along `axes` = (axis of x, axis of y),
    neither the batch: the result's axes are x's remaining ones, then y's (a [batch, 1]
    result when both inputs are 2-D), as Keras's `batch_dot`."""
    a, b = axes
    x = _array.transpose(x, [i for i in range(x.ndim) if i != a] + [a])
    y = _array.transpose(y, [0, b] + [i for i in range(1, y.ndim) if i != b])
    dx, dy = dims_of(x), dims_of(y)  # unknown sizes as run-time dims
    x_mid, y_rest = list(dx[1:-1]), list(dy[2:])
    # [batch, x's rest, n] @ [batch, n, y's rest], the rests flattened
    x3 = _array.reshape(x, [dx[0], -1 if x_mid else 1, dx[-1]])
    y3 = _array.reshape(y, [dy[0], dy[1], -1 if y_rest else 1])
    out = _linalg.matmul(x3, y3)
    if not x_mid and not y_rest:
        return _array.reshape(out, [-1, 1])
    return _array.reshape(out, [-1, *x_mid, *y_rest])


class Dot(_Merge):
    """The dot product of two inputs along `axes` (an int for both, or one axis per input;
    never the batch), per example; `normalize=True` takes it between L2-normalized inputs
    (the cosine similarity).

    Example:
        >>> x = tf.constant([[1.0, 2.0]]); y = tf.constant([[3.0, 4.0]])
        >>> tf.keras.layers.Dot(axes=1)([x, y]).numpy()
        array([[11.]], dtype=float32)
    """

    def __init__(self, axes, normalize: bool = False, **kwargs):
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(f"Dot: invalid type for argument `axes`: it should be a list "
                                f"or an int. Received: axes={axes!r}")
            if len(axes) != 2:
                raise ValueError(f"Dot: invalid format for argument `axes`: it should "
                                 f"contain two elements. Received: axes={axes!r}")
            if not all(isinstance(a, int) for a in axes):
                raise ValueError(f"Dot: invalid format for argument `axes`: list elements "
                                 f"should be integers. Received: axes={axes!r}")
        super().__init__(**kwargs)
        self.axes = axes
        self.normalize = normalize

    def compute_mask(self, inputs, previous_mask=None):
        return None  # as Keras's: a dot product has no steps left to mask

    def _axes_for(self, ranks: tuple) -> tuple:
        axes = (self.axes, self.axes) if isinstance(self.axes, int) else tuple(self.axes)
        return tuple(a % r if a < 0 else a for a, r in zip(axes, ranks))

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) != 2:
            raise ValueError(f"A `Dot` layer ({self.name!r}) should be called on a list of 2 "
                             f"inputs. Received: input_shape={input_shape}")
        s1, s2 = (list(s) for s in input_shape)
        a1, a2 = self._axes_for((len(s1), len(s2)))
        if a1 >= len(s1) or a2 >= len(s2) or s1[a1] != s2[a2]:
            raise ValueError(f"Dot {self.name!r}: incompatible input shapes: axis values "
                             f"{s1[a1] if a1 < len(s1) else '?'} (at axis {a1}) != "
                             f"{s2[a2] if a2 < len(s2) else '?'} (at axis {a2}). Full input "
                             f"shapes: {tuple(s1)}, {tuple(s2)}")

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer ({self.name!r}) should be called on exactly 2 "
                             f"inputs. Received: {type(inputs).__name__}")
        x, y = inputs
        if x.ndim < 2 or y.ndim < 2:
            raise ValueError(f"Dot {self.name!r}: cannot do batch_dot on inputs with rank "
                             f"< 2. Received inputs with shapes {list(x.shape)} and "
                             f"{list(y.shape)}.")
        a1, a2 = self._axes_for((x.ndim, y.ndim))
        if a1 == 0 or a2 == 0:
            raise ValueError(f"Dot {self.name!r}: cannot perform batch_dot over axis 0 (the "
                             f"batch). Received axes={self.axes}")
        if self.normalize:
            x, y = _l2_normalize(x, a1), _l2_normalize(y, a2)
        return _batch_dot(x, y, (a1, a2))

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


class Concatenate(Stateless):
    """Concatenates a list of inputs along `axis`.

    Example:
        >>> tf.keras.layers.Concatenate()([tf.ones([2, 1]), tf.zeros([2, 3])]).shape
        TensorShape([2, 4])
    """

    supports_masking = True

    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def compute_mask(self, inputs, previous_mask=None):
        """Keras's rule: the masks (all True for an unmasked input; a [batch, time] mask
        spread over the features) concatenated along `axis`, then any() over the last
        axis; None when no input has a mask."""
        masks = previous_mask if isinstance(previous_mask, (list, tuple)) else None
        if not masks or all(m is None for m in masks):
            return None
        parts = []
        for x, m in zip(inputs, masks):
            x = convert_to_tensor(x)
            if m is None:
                parts.append(_ones_like(x, _dt.bool))
                continue
            m = convert_to_tensor(m)
            if m.ndim < x.ndim:
                m = _array.broadcast_to(_array.expand_dims(m, -1), _array.shape(x))
            parts.append(m)
        return _reduction.reduce_any(_array.concat(parts, axis=self.axis), axis=-1)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"Concatenate {self.name!r} should be called on a list of "
                             f"inputs, got {type(inputs).__name__}")
        return _array.concat(list(inputs), axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


# Keras's functional interface to the merge layers: each makes the layer (keyword
# arguments go to its constructor, e.g. name=) and calls it on the list of inputs.
def add(inputs: list, **kwargs):
    """`Add(**kwargs)(inputs)`: the elementwise sum of `inputs`.

    Example:
        >>> tf.keras.layers.add([tf.ones([2]), tf.ones([2])]).numpy()
        array([2., 2.], dtype=float32)
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs):
    """`Subtract(**kwargs)(inputs)`: `inputs[0] - inputs[1]`.

    Example:
        >>> tf.keras.layers.subtract([tf.ones([2]), tf.ones([2])]).numpy()
        array([0., 0.], dtype=float32)
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs):
    """`Multiply(**kwargs)(inputs)`: the elementwise product of `inputs`.

    Example:
        >>> tf.keras.layers.multiply([tf.fill([2], 2.), tf.fill([2], 3.)]).numpy()
        array([6., 6.], dtype=float32)
    """
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs):
    """`Average(**kwargs)(inputs)`: the elementwise mean of `inputs`.

    Example:
        >>> tf.keras.layers.average([tf.ones([2]), tf.zeros([2])]).numpy()
        array([0.5, 0.5], dtype=float32)
    """
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs):
    """`Maximum(**kwargs)(inputs)`: the elementwise maximum of `inputs`.

    Example:
        >>> tf.keras.layers.maximum([tf.ones([2]), tf.zeros([2])]).numpy()
        array([1., 1.], dtype=float32)
    """
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs):
    """`Minimum(**kwargs)(inputs)`: the elementwise minimum of `inputs`.

    Example:
        >>> tf.keras.layers.minimum([tf.ones([2]), tf.zeros([2])]).numpy()
        array([0., 0.], dtype=float32)
    """
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs):
    """`Concatenate(axis=axis, **kwargs)(inputs)`.

    Example:
        >>> tf.keras.layers.concatenate([tf.ones([2, 1]), tf.zeros([2, 3])]).shape
        TensorShape([2, 4])
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: list, axes=-1, normalize: bool = False, **kwargs):
    """`Dot(axes=axes, normalize=normalize, **kwargs)(inputs)`: per-sample dot products.

    Example:
        >>> tf.keras.layers.dot([tf.ones([2, 3]), tf.ones([2, 3])], axes=1).numpy()
        array([[3.],
               [3.]], dtype=float32)
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
