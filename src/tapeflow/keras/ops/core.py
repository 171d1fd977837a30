"""`keras.ops` core functions (Keras 3's `keras.src.ops.core`): `cast`, `shape`,
`convert_to_tensor`, `convert_to_numpy`, on tensors and KerasTensors.

Example:
    >>> tf.keras.ops.shape(tf.ones([2, 3]))
    (2, 3)
"""
from __future__ import annotations

import numpy as np

import builtins

from ..._core import dtypes as _dt, nest
from ..._core.shape import is_symbolic
from ..._core.tensor import Tensor
from ..._core.variable import Variable
from ...autodiff import custom as _custom
from ...function import branching as _branching, control_flow as _control_flow
from ...function import map_fn as _map_fn
from ...ops import (array as _array, creation as _creation, image as _image,
                    indexing as _indexing, math as _math)
from ..layer import KerasTensor
from .operation import keras_op, tensor

__all__ = ["cast", "shape", "convert_to_tensor", "convert_to_numpy", "stop_gradient",
           "cond", "while_loop", "fori_loop", "scan", "associative_scan", "map", "switch",
           "slice", "slice_update", "scatter", "scatter_update", "is_tensor", "dtype",
           "saturate_cast", "unstack", "custom_gradient", "vectorized_map"]


@keras_op("core", config=("dtype",))
def cast(x, dtype):
    """`x` as `dtype`.

    Example:
        >>> tf.keras.ops.cast(tf.constant([1.7]), "int32").numpy()
        array([1], dtype=int32)
    """
    return _math.cast(tensor(x), _dt.as_dtype(dtype))


def shape(x) -> tuple:
    """The shape of `x` as a tuple: ints where known; None (KerasTensor) or a scalar
    tensor (inside a traced function) where not, as Keras 3's TensorFlow backend.

    Example:
        >>> tf.keras.ops.shape(tf.keras.Input((3,)))
        (None, 3)
    """
    if isinstance(x, KerasTensor):
        return tuple(x.shape)
    x = tensor(x)
    static = tuple(x.shape)
    if is_symbolic(x) and None in static:
        dynamic = _array.shape(x)
        return tuple(dynamic[i] if d is None else d for i, d in enumerate(static))
    return static


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """`x` as a tensor (of `dtype` when given); Python floats become float32 and ints
    int32, as Keras's.

    Example:
        >>> tf.keras.ops.convert_to_tensor([1.0, 2.0]).dtype
        tf.float32
    """
    if isinstance(x, KerasTensor):
        return x if dtype is None else cast(x, dtype)
    return tensor(x, dtype)


def convert_to_numpy(x) -> np.ndarray:
    """`x` as a NumPy array.

    Example:
        >>> tf.keras.ops.convert_to_numpy(tf.constant([1, 2]))
        array([1, 2], dtype=int32)
    """
    if isinstance(x, KerasTensor):
        raise ValueError("keras.ops.convert_to_numpy: a KerasTensor is symbolic and has no "
                         "value; call the model on data instead")
    return x.numpy() if isinstance(x, Tensor) else np.asarray(tensor(x).numpy())


@keras_op("core")
def stop_gradient(variable):
    """`variable`'s value, with no gradient flowing back through it."""
    return _array.stop_gradient(tensor(variable))


# --------------------------------------------------------------------------- control flow
# Functions of Python callables have no Operation (Keras 3 records them only in its own
# tracing): they run the callables on tensors, eagerly or inside a traced function.
def cond(pred, true_fn, false_fn):
    """`true_fn()` if `pred` else `false_fn()` (a graph conditional when traced).

    Example:
        >>> float(tf.keras.ops.cond(tf.constant(True), lambda: 1.0, lambda: 2.0))
        1.0
    """
    out = _control_flow.cond(tensor(pred, _dt.bool), true_fn, false_fn)
    return nest.map_structure(tensor, out)


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Runs `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`, at most
    `maximum_iterations` times; a single loop variable may be given bare.

    Example:
        >>> int(tf.keras.ops.while_loop(lambda i: i < 5, lambda i: i + 2, 0))
        6
    """
    single = not isinstance(loop_vars, (tuple, list))
    packed = (loop_vars,) if single else tuple(loop_vars)
    packed = tuple(nest.map_structure(tensor, v) for v in packed)

    def as_tuple(out):
        return (out,) if single or not isinstance(out, (tuple, list)) else tuple(out)
    out = _control_flow.while_loop(lambda *v: cond(*v), lambda *v: as_tuple(body(*v)),
                                   packed,
                                   maximum_iterations=maximum_iterations)
    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if single:
        return out[0]
    return list(out) if isinstance(loop_vars, list) else out


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for `i` from `lower` to `upper - 1`.

    Example:
        >>> int(tf.keras.ops.fori_loop(0, 4, lambda i, v: v + i, 0))
        6
    """
    if isinstance(lower, int) and isinstance(upper, int):
        # static bounds: an unrolled loop with Python ints for `i`, as Keras's backend
        val = init_val
        for i in builtins.range(lower, upper):
            val = body_fun(i, val)
        return nest.map_structure(tensor, val)

    def body(i, val):
        return i + 1, body_fun(i, val)
    _, out = while_loop(lambda i, _: i < upper, body, (tensor(lower), init_val))
    return out


def _leading(xs):
    sizes = {t.shape[0] for t in nest.flatten(xs)}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(f"keras.ops: the leading axes of the inputs must be one known "
                         f"length, got {sorted(sizes, key=str)}")
    return sizes.pop()


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Folds `f(carry, x) -> (carry, y)` over the leading axis of `xs` (or `length`
    steps of `x = None`); returns the last carry and the `y`s stacked.

    Example:
        >>> carry, ys = tf.keras.ops.scan(lambda c, x: (c + x, c * x), 0.0,
        ...                               tf.constant([1.0, 2.0, 3.0]))
        >>> float(carry), ys.numpy().tolist()
        (6.0, [0.0, 2.0, 9.0])
    """
    if xs is not None:
        xs = nest.map_structure(tensor, xs)
        n = _leading(xs)
    elif length is None:
        raise ValueError("keras.ops.scan: give xs or length")
    else:
        n = length
    steps = builtins.range(n - 1, -1, -1) if reverse else builtins.range(n)
    carry, ys = init, []
    for i in steps:
        x = None if xs is None else nest.map_structure(lambda t: t[i], xs)
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    carry = nest.map_structure(tensor, carry)
    if not ys:
        return carry, None
    stacked = nest.map_structure(lambda *parts: _array.stack([tensor(p) for p in parts]),
                                 *ys)
    return carry, stacked


def associative_scan(f, elems, reverse=False, axis=0):
    """The running reduction by the associative `f` along `axis` (`f(a, b)` on slices):
    cumulative sums for `f = add`.

    Example:
        >>> tf.keras.ops.associative_scan(lambda a, b: a * b,
        ...                               tf.constant([1, 2, 3, 4])).numpy()
        array([ 1,  2,  6, 24], dtype=int32)
    """
    elems = nest.map_structure(tensor, elems)
    moved = nest.map_structure(lambda t: _array.transpose(t, _to_front(t.ndim, axis)),
                               elems)
    n = _leading(moved)
    order = builtins.range(n - 1, -1, -1) if reverse else builtins.range(n)
    out, acc = [], None
    for i in order:
        x = nest.map_structure(lambda t: t[i], moved)
        acc = x if acc is None else (f(x, acc) if reverse else f(acc, x))
        out.append(acc)
    if reverse:
        out.reverse()
    stacked = nest.map_structure(lambda *p: _array.stack(list(p)), *out)
    return nest.map_structure(lambda t: _array.transpose(t, _to_front(t.ndim, axis)),
                              stacked)


def _to_front(ndim, axis):
    """The permutation swapping axis 0 and `axis` (its own inverse)."""
    perm = list(builtins.range(ndim))
    a = axis % ndim
    perm[0], perm[a] = perm[a], perm[0]
    return perm


def map(f, xs):  # noqa: A001 - Keras's name
    """`f` applied to each slice of `xs` along its leading axis, the results stacked.

    Example:
        >>> tf.keras.ops.map(lambda x: x * 2, tf.constant([1, 2])).numpy()
        array([2, 4], dtype=int32)
    """
    xs = nest.map_structure(tensor, xs)
    n = _leading(xs)
    outs = [f(nest.map_structure(lambda t: t[i], xs)) for i in builtins.range(n)]
    return nest.map_structure(lambda *p: _array.stack([tensor(q) for q in p]), *outs)


def switch(index, branches, *operands):
    """`branches[index](*operands)`, `index` clamped into range.

    Example:
        >>> int(tf.keras.ops.switch(1, [lambda x: x + 1, lambda x: x * 10], 2))
        20
    """
    index = _math.cast(tensor(index), _dt.int32)
    index = _math.clip_by_value(index, tensor(0, _dt.int32),
                                tensor(len(branches) - 1, _dt.int32))
    out = _branching.switch_case(index, [(lambda b: lambda: b(*operands))(b)
                                         for b in branches])
    return nest.map_structure(tensor, out)


def vectorized_map(function, elements):
    """`function` applied to each slice of `elements` along the leading axis,
    vectorized (as tf.vectorized_map)."""
    return _map_fn.vectorized_map(function, elements)


def custom_gradient(f):
    """Decorates `f(*args)` returning `(output, grad_fn)` so that gradients through it
    are `grad_fn(upstream)` (TensorFlow's form, as Keras's TensorFlow backend).

    Example:
        >>> @tf.keras.ops.custom_gradient
        ... def clipped(x):
        ...     return x * 1.0, lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
    """
    return _custom.custom_gradient(f)


# --------------------------------------------------------------------------- slicing
@keras_op("core", config=("shape",))
def slice(inputs, start_indices, shape):  # noqa: A001 - Keras's name
    """The block of `inputs` of `shape` starting at `start_indices`.

    Example:
        >>> tf.keras.ops.slice(tf.range(5), [1], [3]).numpy()
        array([1, 2, 3], dtype=int32)
    """
    return _indexing.slice(tensor(inputs), start_indices, list(shape))


def _block_indices(start_indices, block_shape):
    """The coordinates of every entry of a block of `block_shape` at `start_indices`:
    (*block_shape, rank) int32."""
    grids = _array.meshgrid(*[_creation.range(n) for n in block_shape], indexing="ij")
    start = _math.cast(tensor(start_indices), _dt.int32)
    return _array.stack(grids, axis=-1) + start


@keras_op("core")
def slice_update(inputs, start_indices, updates):
    """`inputs` with the block at `start_indices` replaced by `updates`."""
    x = tensor(inputs)
    u = tensor(updates, x.dtype)
    return _indexing.tensor_scatter_nd_update(x, _block_indices(start_indices, u.shape), u)


@keras_op("core", config=("shape",))
def scatter(indices, values, shape):
    """A zero tensor of `shape` with `values` added at `indices` (index tuples along the
    last axis of `indices`).

    Example:
        >>> tf.keras.ops.scatter([[1], [3]], [5.0, 6.0], (4,)).numpy()
        array([0., 5., 0., 6.], dtype=float32)
    """
    values = tensor(values)
    return _indexing.scatter_nd(_math.cast(tensor(indices), _dt.int32), values, list(shape))


@keras_op("core", config=("reduction",))
def scatter_update(inputs, indices, updates, reduction=None):
    """`inputs` with the entries at `indices` set to `updates` (or combined with them by
    `reduction`: 'add', 'max' or 'min')."""
    x = tensor(inputs)
    idx = _math.cast(tensor(indices), _dt.int32)
    u = tensor(updates, x.dtype)
    ops = {None: _indexing.tensor_scatter_nd_update, "add": _indexing.tensor_scatter_nd_add,
           "max": _indexing.tensor_scatter_nd_max, "min": _indexing.tensor_scatter_nd_min}
    if reduction not in ops:
        raise ValueError(f"keras.ops.scatter_update: reduction must be None, 'add', 'max' "
                         f"or 'min', got {reduction!r}")
    return ops[reduction](x, idx, u)


@keras_op("core", config=("num", "axis"))
def unstack(x, num=None, axis=0):
    """The slices of `x` along `axis`, as a list."""
    x = tensor(x)
    return _array.unstack(x, num=num, axis=axis)


@keras_op("core", config=("dtype",))
def saturate_cast(x, dtype):
    """`x` as `dtype`, clamped first to the range `dtype` holds.

    Example:
        >>> tf.keras.ops.saturate_cast(tf.constant([-1.0, 300.0]), "uint8").numpy()
        array([  0, 255], dtype=uint8)
    """
    return _image.saturate_cast(tensor(x), _dt.as_dtype(dtype))


def is_tensor(x) -> bool:
    """Whether `x` is a tensor (a Variable, a KerasTensor or an array is not).

    Example:
        >>> tf.keras.ops.is_tensor(tf.ones([1])), tf.keras.ops.is_tensor([1.0])
        (True, False)
    """
    return isinstance(x, Tensor)


def dtype(x) -> str:
    """The name of `x`'s dtype, as Keras's standardized names ('float32', ...).

    Example:
        >>> tf.keras.ops.dtype(tf.ones([1]))
        'float32'
    """
    if isinstance(x, (Tensor, KerasTensor, Variable)):
        return _dt.as_dtype(x.dtype).name
    return tensor(x).dtype.name
