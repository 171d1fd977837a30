"""`tf.keras.backend`: the legacy Keras 1/2 backend functions that `tf.keras` of
TensorFlow 2.21 still lists (`K.mean`, `K.random_normal`, `K.batch_dot`, `K.rnn`, ...),
with their argument names, defaults and dtypes, plus Keras 3's configuration functions
(`floatx`, `epsilon`, `image_data_format` and their setters).

Each function is a thin wrapper over tapeflow's ops, as Keras's versions wrap
TensorFlow's: the legacy order of arguments is kept (`binary_crossentropy(target,
output)`), floats default to `floatx()`, and `ones`/`zeros`/`eye`/`variable` make
variables.

Example:
    >>> K = tf.keras.backend
    >>> K.mean(K.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy()
    array([2., 3.], dtype=float32)
"""
from __future__ import annotations

import builtins
import math as _pymath
import numpy as np

from .._core import dtypes as _dt, nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..function.map_fn import foldl as _foldl, foldr as _foldr, map_fn as _map_fn, scan as _scan
from ..function.control_flow import cond as _cond
from ..ops import (array as _array, conv as _conv, creation as _creation, image as _image,
                   indexing as _indexing, linalg as _linalg, math as _math, nn as _nn,
                   random as _random, reduction as _reduction, sparse as _sparse)
from ..train.module import name_scope as _name_scope
from .layer import KerasTensor, clear_session as _clear_layer_names
from .ops import nn as _keras_nn
from .ops.operation import result_type as _result_type

__all__ = [
    "abs", "all", "any", "arange", "argmax", "argmin", "backend", "batch_dot",
    "batch_flatten", "batch_get_value", "batch_normalization", "batch_set_value", "bias_add",
    "binary_crossentropy", "binary_focal_crossentropy", "cast", "cast_to_floatx",
    "categorical_crossentropy", "categorical_focal_crossentropy", "clear_session", "clip",
    "concatenate", "constant", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "cos",
    "count_params", "ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse", "cumprod",
    "cumsum", "depthwise_conv2d", "dot", "dropout", "dtype", "elu", "epsilon", "equal",
    "eval", "exp", "expand_dims", "eye", "flatten", "floatx", "foldl", "foldr", "gather",
    "get_uid", "get_value", "gradients", "greater", "greater_equal", "hard_sigmoid",
    "image_data_format", "in_top_k", "int_shape", "is_float_dtype", "is_int_dtype",
    "is_keras_tensor", "is_sparse", "l2_normalize", "less", "less_equal", "log", "map_fn",
    "max", "maximum", "mean", "min", "minimum", "moving_average_update", "name_scope", "ndim",
    "not_equal", "one_hot", "ones", "ones_like", "permute_dimensions", "pool2d", "pool3d",
    "pow", "prod", "random_bernoulli", "random_normal", "random_normal_variable",
    "random_uniform", "random_uniform_variable", "relu", "repeat", "repeat_elements",
    "reshape", "resize_images", "resize_volumes", "result_type", "reverse", "rnn", "round",
    "separable_conv2d", "set_epsilon", "set_floatx", "set_image_data_format", "set_value",
    "shape", "sigmoid", "sign", "sin", "softmax", "softplus", "softsign",
    "sparse_categorical_crossentropy", "spatial_2d_padding", "spatial_3d_padding", "sqrt",
    "square", "squeeze", "stack", "standardize_dtype", "std", "stop_gradient", "sum",
    "switch", "tanh", "temporal_padding", "tile", "to_dense", "transpose",
    "truncated_normal", "update", "update_add", "update_sub", "var", "variable", "zeros",
    "zeros_like",
]

# --------------------------------------------------------------------------- configuration
_CONFIG: dict = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
_FLOATX = {"bfloat16", "float16", "float32", "float64"}
_DATA_FORMATS = {"channels_first", "channels_last"}
_UIDS: dict = {}


def backend() -> str:
    """The name of the backend: "tensorflow" (tapeflow stands in for it)."""
    return "tensorflow"


def floatx() -> str:
    """The default float type, "float32" unless `set_floatx` changed it.

    Only this module's functions (`constant`, `variable`, `random_normal`, ...) read it;
    layers take their dtype from `keras.mixed_precision`'s global policy.
    """
    return _CONFIG["floatx"]


def set_floatx(value: str) -> None:
    """Set the default float type ("float16", "bfloat16", "float32" or "float64")."""
    name = str(value)
    if name not in _FLOATX:
        raise ValueError(f"Unknown `floatx` value: {value}. Expected one of {_FLOATX}")
    _CONFIG["floatx"] = name


def epsilon() -> float:
    """The fuzz factor of numeric expressions (1e-7 by default)."""
    return _CONFIG["epsilon"]


def set_epsilon(value) -> None:
    """Set the fuzz factor that `epsilon()` returns."""
    _CONFIG["epsilon"] = value


def image_data_format() -> str:
    """The default image layout: "channels_last" unless `set_image_data_format` changed it."""
    return _CONFIG["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    """Set the default image layout ("channels_first" or "channels_last")."""
    name = str(data_format).lower()
    if name not in _DATA_FORMATS:
        raise ValueError(f"The `data_format` argument must be one of {_DATA_FORMATS}. "
                         f"Received: data_format={data_format}")
    _CONFIG["image_data_format"] = name


def get_uid(prefix: str = "") -> int:
    """The next integer id for `prefix`: 1, 2, 3, ... (per prefix, until `clear_session`)."""
    _UIDS[prefix] = _UIDS.get(prefix, 0) + 1
    return _UIDS[prefix]


def clear_session(free_memory: bool = True) -> None:
    """Reset automatic layer names ("dense", "dense_1", ...) and `get_uid`'s counters."""
    _clear_layer_names()
    _UIDS.clear()


# --------------------------------------------------------------------------- dtypes
def standardize_dtype(dtype=None) -> str:
    """The dtype's name as Keras writes it: None -> floatx, Python `int` -> "int64",
    `float` -> "float32"; ValueError for anything that is not a dtype.

    Example:
        >>> tf.keras.backend.standardize_dtype(tf.int32)
        'int32'
    """
    if dtype is None:
        return floatx()
    if dtype is int:
        return "int64"
    if dtype is float:
        return "float32"
    if dtype is bool:
        return "bool"
    if isinstance(dtype, _dt.DType):
        return dtype.name
    try:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        canonical = _dt.as_dtype(name).name
    except (TypeError, ValueError, KeyError):
        canonical = None
    # only canonical names: Keras refuses aliases such as "float"
    if canonical is None or (isinstance(dtype, str) and canonical != dtype):
        raise ValueError(f"Invalid dtype: {dtype}")
    return canonical


def is_float_dtype(dtype) -> bool:
    """Whether `dtype` is a floating type (`float`, "float16", "bfloat16", ...)."""
    name = standardize_dtype(dtype)
    return name.startswith("float") or name == "bfloat16"


def is_int_dtype(dtype) -> bool:
    """Whether `dtype` is a (signed or unsigned) integer type; bool is not."""
    name = standardize_dtype(dtype)
    return name.startswith("int") or name.startswith("uint")


def result_type(*dtypes) -> str:
    """The dtype Keras 3 computes `dtypes` in (Python `int`/`float` are weak types):
    floatx when none are given.

    Example:
        >>> tf.keras.backend.result_type("int32", "float16")
        'float16'
    """
    if not dtypes:
        return floatx()
    values = []
    for d in dtypes:
        if d is int:
            values.append(0)
        elif d is float:
            values.append(0.0)
        elif d is bool:
            values.append(False)
        else:
            values.append(np.zeros((), _dt.as_dtype(standardize_dtype(d)).as_numpy_dtype))
    return _result_type(*values).name


def _t(x, dtype=None) -> Tensor:
    """`x` as a tensor (a variable read, an array or nested numbers converted)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Variable):
        return x.read_value()
    return convert_to_tensor(x, dtype)


def dtype(x) -> str:
    """The name of `x`'s dtype ("float32")."""
    return _dt.as_dtype(x.dtype).name


def cast(x, dtype):
    """`x` as `dtype`."""
    return _math.cast(x, dtype)


def cast_to_floatx(x):
    """`x` as floatx: a tensor for a tensor or variable, else a NumPy array."""
    if isinstance(x, (Tensor, Variable, _sparse.SparseTensor)):
        return _math.cast(x, floatx())
    return np.asarray(x, dtype=floatx())


# --------------------------------------------------------------------------- shapes
def int_shape(x):
    """The static shape of `x` as a tuple (None for unknown dims), or None."""
    try:
        s = x.shape
        if isinstance(s, tuple):
            return s
        return tuple(s.as_list()) if hasattr(s, "as_list") else tuple(s)
    except ValueError:
        return None


def ndim(x):
    """The rank of `x`."""
    s = int_shape(x)
    return None if s is None else len(s)


def shape(x) -> Tensor:
    """The dynamic shape of `x` (an int32 tensor)."""
    return _array.shape(x)


def count_params(x) -> int:
    """The number of scalars in `x` (a tensor or variable of known shape)."""
    return _pymath.prod(int_shape(x))


def is_keras_tensor(x) -> bool:
    """Whether `x` is a symbolic `KerasTensor` (from `keras.Input` or a layer on one)."""
    return isinstance(x, KerasTensor)


def is_sparse(tensor) -> bool:
    """Whether `tensor` is a `tf.SparseTensor`."""
    return isinstance(tensor, _sparse.SparseTensor)


def to_dense(tensor):
    """A dense tensor for a `tf.SparseTensor`; anything else unchanged."""
    return _sparse.to_dense(tensor) if is_sparse(tensor) else tensor


# --------------------------------------------------------------------------- creation
def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A constant tensor of `dtype` (floatx by default)."""
    return _creation.constant(value, dtype=dtype or floatx(), shape=shape)


def variable(value, dtype=None, name=None, constraint=None) -> Variable:
    """A variable holding `value` as `dtype` (floatx by default)."""
    v = Variable(value, dtype=_dt.as_dtype(dtype or floatx()), name=name)
    if constraint is not None:
        v.constraint = constraint
    return v


def _filled(maker, shape, dtype, name):
    t = maker(shape, dtype=dtype or floatx())
    # Keras keeps an empty result a plain tensor (a variable needs every dim > 0)
    return variable(t, dtype=t.dtype, name=name) if builtins.all(int_shape(t)) else t


def zeros(shape, dtype=None, name=None):
    """A variable of zeros (a tensor when a dimension is 0)."""
    return _filled(_creation.zeros, shape, dtype, name)


def ones(shape, dtype=None, name=None):
    """A variable of ones (a tensor when a dimension is 0)."""
    return _filled(_creation.ones, shape, dtype, name)


def eye(size, dtype=None, name=None) -> Variable:
    """A variable holding the `size` x `size` identity matrix."""
    d = _dt.as_dtype(dtype or floatx())
    return variable(_creation.eye(size, dtype=d), d, name)


def zeros_like(x, dtype=None, name=None) -> Tensor:
    """Zeros of `x`'s shape (and dtype unless given)."""
    return _creation.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None) -> Tensor:
    """Ones of `x`'s shape (and dtype unless given)."""
    return _creation.ones_like(x, dtype=dtype)


def arange(start, stop=None, step=1, dtype="int32") -> Tensor:
    """`[start, stop)` by `step` (`arange(n)` counts from 0; a negative `n` gives [])."""
    if stop is None and start < 0:
        start = 0
    out = _creation.range(start, stop, step)
    return out if _dt.as_dtype(dtype) is out.dtype else _math.cast(out, dtype)


def one_hot(indices, num_classes) -> Tensor:
    """`indices` one-hot encoded along a new last axis of size `num_classes`."""
    return _creation.one_hot(indices, depth=num_classes, axis=-1)


# --------------------------------------------------------------------------- elementwise
def abs(x):  # noqa: A001 - Keras's name
    """|x|."""
    return _math.abs(x)


def sign(x):
    """-1, 0 or 1 by the sign of x."""
    return _math.sign(x)


def exp(x):
    """e ** x."""
    return _math.exp(x)


def log(x):
    """The natural logarithm."""
    return _math.log(x)


def sqrt(x):
    """sqrt(max(x, 0)): negative inputs give 0, not NaN."""
    x = _t(x)
    return _math.sqrt(_math.maximum(x, _creation.zeros_like(x)))


def square(x):
    """x ** 2."""
    return _math.square(x)


def pow(x, a):  # noqa: A001 - Keras's name
    """x ** a."""
    return _math.pow(x, a)


def round(x):  # noqa: A001 - Keras's name
    """x rounded half to even."""
    return _math.round(x)


def sin(x):
    """The sine."""
    return _math.sin(x)


def cos(x):
    """The cosine."""
    return _math.cos(x)


def tanh(x):
    """The hyperbolic tangent."""
    return _math.tanh(x)


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _math.sigmoid(x)


def hard_sigmoid(x):
    """clip(0.2 x + 0.5, 0, 1)."""
    x = _t(x)
    return _math.clip_by_value(x * _math.cast(0.2, x.dtype) + _math.cast(0.5, x.dtype),
                               0.0, 1.0)


def softplus(x):
    """log(1 + exp(x))."""
    return _math.softplus(x)


def softsign(x):
    """x / (1 + |x|)."""
    return _math.softsign(x)


def elu(x, alpha: float = 1.0):
    """x for x > 0, alpha (exp(x) - 1) otherwise."""
    x = _t(x)
    res = _nn.elu(x)
    return res if alpha == 1 else _indexing.where(x > 0, res, alpha * res)


def relu(x, alpha: float = 0.0, max_value=None, threshold: float = 0.0):
    """The rectified linear unit with Keras's options: `alpha` the slope below
    `threshold`, `max_value` the cap."""
    x = _t(x, floatx())
    if alpha != 0.0 and max_value is None and threshold == 0:
        return _nn.leaky_relu(x, alpha=alpha)
    negative = None
    if alpha != 0.0:
        negative = _nn.relu(-x + threshold) if threshold != 0 else _nn.relu(-x)
    if threshold != 0:
        y = x * _math.cast(_math.greater(x, threshold), x.dtype)
    else:
        y = _nn.relu(x)
    if max_value is not None:
        y = _math.clip_by_value(y, _math.cast(0, y.dtype), _math.cast(max_value, y.dtype))
    if negative is not None:
        y = y - _math.cast(alpha, y.dtype) * negative
    return y


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis` (an int or a tuple); x must have rank >= 2."""
    x = _t(x)
    if x.ndim <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    if isinstance(axis, int):
        return _nn.softmax(x, axis=axis)
    e = _math.exp(x - _reduction.reduce_max(x, axis=list(axis), keepdims=True))
    return e / _reduction.reduce_sum(e, axis=list(axis), keepdims=True)


def clip(x, min_value, max_value):
    """x clipped to [min_value, max_value] (None: unbounded; a max below the min is the
    min)."""
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)) \
            and max_value < min_value:
        max_value = min_value
    x = _t(x)
    lo = -np.inf if min_value is None else min_value
    hi = np.inf if max_value is None else max_value
    return _math.clip_by_value(x, lo, hi)


def equal(x, y):
    """x == y elementwise."""
    return _math.equal(x, y)


def not_equal(x, y):
    """x != y elementwise."""
    return _math.not_equal(x, y)


def greater(x, y):
    """x > y elementwise."""
    return _math.greater(x, y)


def greater_equal(x, y):
    """x >= y elementwise."""
    return _math.greater_equal(x, y)


def less(x, y):
    """x < y elementwise."""
    return _math.less(x, y)


def less_equal(x, y):
    """x <= y elementwise."""
    return _math.less_equal(x, y)


def maximum(x, y):
    """The elementwise maximum."""
    return _math.maximum(x, y)


def minimum(x, y):
    """The elementwise minimum."""
    return _math.minimum(x, y)


def stop_gradient(variables):
    """`variables` (a tensor, or a list of them) with gradients blocked."""
    if isinstance(variables, (list, tuple)):
        return [_array.stop_gradient(v) for v in variables]
    return _array.stop_gradient(variables)


# --------------------------------------------------------------------------- reductions
def _bool_to_floatx(x):
    x = _t(x)
    return _math.cast(x, floatx()) if x.dtype.is_bool else x


def _axis(axis):
    return list(axis) if isinstance(axis, tuple) else axis


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 - Keras's name
    """The sum over `axis` (all axes when None)."""
    return _reduction.reduce_sum(x, _axis(axis), keepdims)


def prod(x, axis=None, keepdims: bool = False):
    """The product over `axis`."""
    return _reduction.reduce_prod(x, _axis(axis), keepdims)


def mean(x, axis=None, keepdims: bool = False):
    """The mean over `axis` (booleans count as floatx 0/1)."""
    return _reduction.reduce_mean(_bool_to_floatx(x), _axis(axis), keepdims)


def max(x, axis=None, keepdims: bool = False):  # noqa: A001 - Keras's name
    """The maximum over `axis`."""
    return _reduction.reduce_max(x, _axis(axis), keepdims)


def min(x, axis=None, keepdims: bool = False):  # noqa: A001 - Keras's name
    """The minimum over `axis`."""
    return _reduction.reduce_min(x, _axis(axis), keepdims)


def std(x, axis=None, keepdims: bool = False):
    """The (population) standard deviation over `axis`."""
    return _reduction.reduce_std(_bool_to_floatx(x), axis=_axis(axis), keepdims=keepdims)


def var(x, axis=None, keepdims: bool = False):
    """The (population) variance over `axis`."""
    return _reduction.reduce_variance(_bool_to_floatx(x), axis=_axis(axis),
                                      keepdims=keepdims)


def all(x, axis=None, keepdims: bool = False):  # noqa: A001 - Keras's name
    """Logical AND over `axis` (x cast to bool)."""
    return _reduction.reduce_all(_math.cast(x, _dt.bool), _axis(axis), keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001 - Keras's name
    """Logical OR over `axis` (x cast to bool)."""
    return _reduction.reduce_any(_math.cast(x, _dt.bool), _axis(axis), keepdims)


def argmax(x, axis=-1):
    """The index of the maximum along `axis` (int64)."""
    return _reduction.argmax(x, axis)


def argmin(x, axis=-1):
    """The index of the minimum along `axis` (int64)."""
    return _reduction.argmin(x, axis)


def cumsum(x, axis: int = 0):
    """The running sum along `axis`."""
    return _reduction.cumsum(x, axis=axis)


def cumprod(x, axis: int = 0):
    """The running product along `axis`."""
    return _reduction.cumprod(x, axis=axis)


def l2_normalize(x, axis=None):
    """x / sqrt(max(sum(x ** 2, axis), 1e-12))."""
    return _reduction.l2_normalize(x, axis=axis)


def in_top_k(predictions, targets, k: int):
    """Whether each target class is among the row's `k` largest predictions."""
    return _nn.in_top_k(targets, predictions, k)


# --------------------------------------------------------------------------- array
def reshape(x, shape):
    """`x` with a new shape (-1 inferred)."""
    return _array.reshape(x, shape)


def flatten(x):
    """`x` as one dimension."""
    return _array.reshape(x, [-1])


def batch_flatten(x):
    """`x` as (batch, everything else)."""
    x = _t(x)
    rest = int_shape(x)[1:]
    if builtins.all(d is not None for d in rest):
        return _array.reshape(x, [-1, _pymath.prod(rest)])
    return _array.reshape(x, _array.stack([_array.shape(x)[0], -1]))


def expand_dims(x, axis: int = -1):
    """`x` with a new axis of size 1 at `axis`."""
    return _array.expand_dims(x, axis)


def squeeze(x, axis: int):
    """`x` without its size-1 axis `axis`."""
    return _array.squeeze(x, [axis])


def transpose(x):
    """`x` with its axes reversed."""
    return _array.transpose(x)


def permute_dimensions(x, pattern):
    """`x` with its axes permuted by `pattern`."""
    return _array.transpose(x, perm=list(pattern))


def concatenate(tensors, axis: int = -1):
    """`tensors` joined along `axis` (sparse inputs are densified)."""
    if axis < 0:
        rank = ndim(tensors[0])
        axis = axis % rank if rank else 0
    return _array.concat([to_dense(t) for t in tensors], axis)


def stack(x, axis: int = 0):
    """The tensors of the list `x` stacked along a new `axis`."""
    return _array.stack(x, axis=axis)


def tile(x, n):
    """`x` repeated `n` times (one count per axis; an int for rank 1)."""
    return _array.tile(x, [n] if isinstance(n, int) else n)


def repeat(x, n: int):
    """A 2-D `x` (batch, features) repeated `n` times along a new axis 1."""
    if ndim(x) != 2:
        raise ValueError(f"Expected input `x` to have rank 2. Received: rank(x)={ndim(x)}")
    return _array.tile(_array.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep: int, axis: int):
    """Each slice of `x` along `axis` repeated `rep` times in place (as np.repeat)."""
    return _array.repeat(x, rep, axis=axis)


def reverse(x, axes):
    """`x` reversed along `axes` (an int or a list)."""
    return _array.reverse(x, [axes] if isinstance(axes, int) else list(axes))


def gather(reference, indices):
    """The slices `reference[indices]` along the first axis."""
    return _indexing.gather(reference, indices)


def _format(data_format):
    data_format = image_data_format() if data_format is None else data_format
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def temporal_padding(x, padding=(1, 1)):
    """A 3-D `x` zero-padded along axis 1 by `padding` = (left, right)."""
    if len(padding) != 2:
        raise ValueError(f"Expected `padding` to be a tuple of 2 integers. "
                         f"Received: padding={padding}")
    return _array.pad(x, [[0, 0], list(padding), [0, 0]])


def _spatial_padding(x, padding, n, data_format):
    if len(padding) != n or builtins.any(len(p) != 2 for p in padding):
        raise ValueError(f"Expected `padding` to be a tuple of {n} tuples of 2 integers. "
                         f"Received: padding={padding}")
    inner = [list(p) for p in padding]
    if _format(data_format) == "channels_first":
        return _array.pad(x, [[0, 0], [0, 0]] + inner)
    return _array.pad(x, [[0, 0]] + inner + [[0, 0]])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    """A 4-D `x` zero-padded along its rows and columns."""
    return _spatial_padding(x, padding, 2, data_format)


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    """A 5-D `x` zero-padded along its three spatial axes."""
    return _spatial_padding(x, padding, 3, data_format)


_INTERPOLATIONS = ("area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5",
                   "mitchellcubic", "nearest")


def resize_images(x, height_factor: int, width_factor: int, data_format,
                  interpolation: str = "nearest"):
    """A 4-D `x` resized by integer factors along its rows and columns."""
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    if interpolation not in _INTERPOLATIONS:
        names = '"' + '", "'.join(_INTERPOLATIONS) + '"'
        raise ValueError(f"`interpolation` argument should be one of: {names}. "
                         f'Received: "{interpolation}".')
    x = _t(x)
    first = data_format == "channels_first"
    if first:
        x = _array.transpose(x, [0, 2, 3, 1])
    h, w = int_shape(x)[1:3]
    if h is None or w is None:
        hw = _array.shape(x)[1:3] * _creation.constant([height_factor, width_factor])
    else:
        hw = [h * height_factor, w * width_factor]
    x = _image.resize(x, hw, method="nearest" if interpolation == "nearest" else interpolation)
    return _array.transpose(x, [0, 3, 1, 2]) if first else x


def resize_volumes(x, depth_factor: int, height_factor: int, width_factor: int, data_format):
    """A 5-D `x` with each voxel repeated by the three factors."""
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format}")
    first = 2 if data_format == "channels_first" else 1
    for i, f in enumerate((depth_factor, height_factor, width_factor)):
        x = repeat_elements(x, f, first + i)
    return x


# --------------------------------------------------------------------------- products
def dot(x, y):
    """The matrix product, for higher ranks contracting x's last axis with y's
    second-to-last (the result is x.shape[:-1] + y.shape[:-2] + y.shape[-1:])."""
    if is_sparse(x):
        return _sparse.sparse_dense_matmul(x, y)
    x, y = _t(x), _t(y)
    if x.ndim > 2 or y.ndim > 2:
        return _linalg.tensordot(x, y, [[x.ndim - 1], [y.ndim - 2]])
    return _linalg.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per-sample dot product of two batches: x's axis `axes[0]` contracted with y's
    `axes[1]` (by default x's last and y's last for rank 2, else its second-to-last); the
    result keeps x's other axes then y's; two rank-2 inputs give (batch, 1).

    Example:
        >>> K = tf.keras.backend
        >>> K.batch_dot(tf.ones((4, 3)), tf.ones((4, 3, 5))).shape
        TensorShape([4, 5])
    """
    x, y = _t(x), _t(y)
    xs, ys = int_shape(x), int_shape(y)
    xn, yn = len(xs), len(ys)
    if xn < 2 or yn < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs "
                         f"with shapes {xs} and {ys}.")
    if xs[0] is not None and ys[0] is not None and xs[0] != ys[0]:
        raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. "
                         f"Received inputs with shapes {xs} and {ys}.")
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [xn - 1, yn - 1] if yn == 2 else [xn - 1, yn - 2]
    if builtins.any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError(f"Multiple target dimensions are not supported. Expected: None, "
                         f"int, (int, int), Provided: {axes}")
    a0, a1 = axes[0] % xn if axes[0] < 0 else axes[0], axes[1] % yn if axes[1] < 0 else axes[1]
    if a0 == 0 or a1 == 0:
        raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not "
                         "batched, add a dummy batch dimension to your inputs using "
                         "K.expand_dims(x, 0)")
    if xs[a0] is not None and ys[a1] is not None and xs[a0] != ys[a1]:
        raise ValueError(f"Cannot do batch_dot on inputs with shapes {xs} and {ys} with "
                         f"axes={[a0, a1]}. x.shape[{a0}] != y.shape[{a1}] "
                         f"({xs[a0]} != {ys[a1]}).")
    letters = "bcdefghijklmnopqrstuvwxyz"
    xl = ["a"] + [letters[i] for i in range(xn - 1)]
    yl = ["a"] + [letters[xn - 1 + i] for i in range(yn - 1)]
    yl[a1] = xl[a0]
    out = [xl[0]] + [c for i, c in enumerate(xl) if i not in (0, a0)] + \
        [c for i, c in enumerate(yl) if i not in (0, a1)]
    result = _linalg.einsum(f"{''.join(xl)},{''.join(yl)}->{''.join(out)}", x, y)
    # Keras computes rank-2 pairs as (b, 1, n) @ (b, n, 1) and keeps one of the two 1s
    return _array.expand_dims(result, -1) if xn == 2 and yn == 2 else result


# --------------------------------------------------------------------------- nn
def bias_add(x, bias, data_format=None):
    """x + bias along the channel axis (`bias` of rank 1, or of rank ndim(x) - 1)."""
    data_format = _format(data_format)
    x, bias = _t(x), _t(bias)
    bs, n = int_shape(bias), x.ndim
    if len(bs) != 1 and len(bs) != n - 1:
        raise ValueError(f"Unexpected bias dimensions {len(bs)}. Expected it to be 1 or "
                         f"{n - 1} dimensions")
    if data_format == "channels_first":
        if len(bs) == 1:
            return x + _array.reshape(bias, (1, bs[0]) + (1,) * (n - 2))
        return x + _array.reshape(bias, (1, bs[-1]) + bs[:-1])
    return x + _array.reshape(bias, (1,) * (n - len(bs)) + bs)


def batch_normalization(x, mean, var, beta, gamma, axis: int = -1, epsilon: float = 1e-3):
    """gamma * (x - mean) / sqrt(var + epsilon) + beta."""
    return _nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def dropout(x, level: float, noise_shape=None, seed=None):
    """`x` with entries zeroed with probability `level` and the rest scaled up by
    1 / (1 - level)."""
    if seed is None:
        seed = np.random.randint(10e6)
    return _random.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def _channels_last(x, data_format, n):
    """`x` in channels-last layout (n spatial dims) and whether it was moved there."""
    if _format(data_format) == "channels_first":
        return _array.transpose(_t(x), [0] + list(range(2, n + 2)) + [1]), True
    return x, False


def _back(x, moved, n):
    return _array.transpose(x, [0, n + 1] + list(range(1, n + 1))) if moved else x


def _padding(padding):
    if padding == "same":
        return "SAME"
    if padding == "valid":
        return "VALID"
    raise ValueError(f"Invalid padding: {padding}")


def _conv_nd(x, kernel, strides, padding, data_format, dilation_rate, n):
    x, moved = _channels_last(x, data_format, n)
    y = _conv.convolution(x, kernel, strides=strides, padding=_padding(padding),
                          dilations=dilation_rate)
    return _back(y, moved, n)


def conv1d(x, kernel, strides=1, padding: str = "valid", data_format=None, dilation_rate=1):
    """1-D convolution (padding "valid", "same" or "causal")."""
    if padding == "causal":
        x, moved = _channels_last(x, data_format, 1)
        x = temporal_padding(x, (dilation_rate * (int_shape(kernel)[0] - 1), 0))
        y = _conv.convolution(x, kernel, strides=strides, padding="VALID",
                              dilations=dilation_rate)
        return _back(y, moved, 1)
    return _conv_nd(x, kernel, strides, padding, data_format, dilation_rate, 1)


def conv2d(x, kernel, strides=(1, 1), padding: str = "valid", data_format=None,
           dilation_rate=(1, 1)):
    """2-D convolution; `kernel` is (rows, cols, in_channels, out_channels)."""
    return _conv_nd(x, kernel, strides, padding, data_format, dilation_rate, 2)


def conv3d(x, kernel, strides=(1, 1, 1), padding: str = "valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    """3-D convolution; `kernel` is (depth, rows, cols, in_channels, out_channels)."""
    return _conv_nd(x, kernel, strides, padding, data_format, dilation_rate, 3)


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding: str = "valid",
                     data_format=None, dilation_rate=(1, 1)):
    """The transpose of conv2d; `kernel` is (rows, cols, out_channels, in_channels) and
    `output_shape` the full output shape (its batch may be None)."""
    x, moved = _channels_last(x, data_format, 2)
    output_shape = list(output_shape)
    if moved:
        output_shape = [output_shape[0], output_shape[2], output_shape[3], output_shape[1]]
    if output_shape[0] is None:
        output_shape[0] = int_shape(x)[0] if int_shape(x)[0] is not None \
            else _array.shape(x)[0]
    if isinstance(output_shape[0], Tensor):
        output_shape = _array.stack([_math.cast(d, _dt.int32) for d in output_shape])
    dil = tuple(dilation_rate)
    y = _conv.conv2d_transpose(x, kernel, output_shape, (1,) + tuple(strides) + (1,),
                               padding=_padding(padding),
                               dilations=None if dil == (1, 1) else (1,) + dil + (1,))
    return _back(y, moved, 2)


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding: str = "valid",
                     data_format=None, dilation_rate=(1, 1)):
    """Each channel convolved with its own filters; the kernel is (rows, cols,
    in_channels, multiplier)."""
    x, moved = _channels_last(x, data_format, 2)
    y = _conv.depthwise_conv2d(x, depthwise_kernel, (1,) + tuple(strides) + (1,),
                               _padding(padding), dilations=tuple(dilation_rate))
    return _back(y, moved, 2)


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1),
                     padding: str = "valid", data_format=None, dilation_rate=(1, 1)):
    """A depthwise convolution followed by a 1x1 convolution mixing channels."""
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    x, moved = _channels_last(x, data_format, 2)
    y = _nn.separable_conv2d(x, depthwise_kernel, pointwise_kernel,
                             (1,) + tuple(strides) + (1,), _padding(padding),
                             dilations=tuple(dilation_rate))
    return _back(y, moved, 2)


def pool2d(x, pool_size, strides=(1, 1), padding: str = "valid", data_format=None,
           pool_mode: str = "max"):
    """2-D max ("max") or average ("avg") pooling."""
    _format(data_format)
    if len(pool_size) != 2:
        raise ValueError("`pool_size` must be a tuple of 2 integers.")
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


def pool3d(x, pool_size, strides=(1, 1, 1), padding: str = "valid", data_format=None,
           pool_mode: str = "max"):
    """3-D max ("max") or average ("avg") pooling."""
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


def _pool(x, pool_size, strides, padding, data_format, pool_mode, n):
    x, moved = _channels_last(x, data_format, n)
    pad = _padding(padding)
    ksize, stride = (1,) + tuple(pool_size) + (1,), (1,) + tuple(strides) + (1,)
    if pool_mode == "max":
        y = (_nn.max_pool if n == 2 else _nn.max_pool3d)(x, ksize, stride, pad)
    elif pool_mode == "avg":
        y = (_nn.avg_pool if n == 2 else _nn.avg_pool3d)(x, ksize, stride, pad)
    else:
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    return _back(y, moved, n)


# --------------------------------------------------------------------------- losses
def binary_crossentropy(target, output, from_logits: bool = False):
    """Elementwise binary crossentropy between `target` and `output` (probabilities
    clipped to [eps, 1 - eps], or logits)."""
    target, output = _t(target), _t(output)
    if from_logits:
        return _nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = epsilon()
    output = _math.clip_by_value(output, eps, 1.0 - eps)
    bce = target * _math.log(output + eps) + (1 - target) * _math.log(1 - output + eps)
    return -bce


def binary_focal_crossentropy(target, output, apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False):
    """Binary crossentropy scaled by (1 - p_t) ** gamma (and alpha-balanced if asked)."""
    target, output = _t(target), _t(output)
    probs = _math.sigmoid(output) if from_logits else output
    p_t = target * probs + (1 - target) * (1 - probs)
    focal = _math.pow(1.0 - p_t, gamma) * binary_crossentropy(target, output, from_logits)
    if apply_class_balancing:
        focal = (target * alpha + (1 - target) * (1 - alpha)) * focal
    return focal


def _check_like(op, target, output):
    ts, os_ = int_shape(target), int_shape(output)
    if len(ts) != len(os_) or builtins.any(a is not None and b is not None and a != b
                                           for a, b in zip(ts, os_)):
        raise ValueError(f"{op}: shapes {ts} (target) and {os_} (output) are incompatible")


def categorical_crossentropy(target, output, from_logits: bool = False, axis: int = -1):
    """-sum(target * log(output)) along `axis`; probabilities are renormalized and
    clipped to [eps, 1 - eps]."""
    target, output = _t(target), _t(output)
    _check_like("categorical_crossentropy", target, output)
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    output = output / _reduction.reduce_sum(output, axis, True)
    output = _math.clip_by_value(output, epsilon(), 1.0 - epsilon())
    return -_reduction.reduce_sum(target * _math.log(output), axis)


def categorical_focal_crossentropy(target, output, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, axis: int = -1):
    """Categorical crossentropy scaled by alpha (1 - p) ** gamma per class."""
    target, output = _t(target), _t(output)
    _check_like("categorical_focal_crossentropy", target, output)
    if from_logits:
        output = _nn.softmax(output, axis=axis)
    output = output / _reduction.reduce_sum(output, axis=axis, keepdims=True)
    output = _math.clip_by_value(output, epsilon(), 1.0 - epsilon())
    cce = -target * _math.log(output)
    return _reduction.reduce_sum(_math.pow(1.0 - output, gamma) * alpha * cce, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits: bool = False,
                                    axis: int = -1, ignore_class=None):
    """Crossentropy against integer class `target`s; `ignore_class` entries give 0 (and
    the result carries their mask as `_keras_mask`)."""
    target, output = _t(target), _t(output)
    target = _math.cast(target, _dt.int64)
    if not from_logits:
        output = _math.log(_math.clip_by_value(output, epsilon(), 1 - epsilon()))
    rank = output.ndim
    axis %= rank
    if axis != rank - 1:
        output = _array.transpose(output, [i for i in range(rank) if i != axis] + [axis])
    out_shape = _array.shape(output)
    lead = int_shape(output)[:-1]
    if target.ndim != rank - 1:
        target = _array.reshape(target, [-1])
        output = _array.reshape(output, [-1, int_shape(output)[-1]])
    if ignore_class is not None:
        valid = _math.not_equal(target, _math.cast(ignore_class, target.dtype))
        safe = _indexing.where(valid, target, _creation.zeros_like(target))
        res = _nn.sparse_softmax_cross_entropy_with_logits(labels=safe, logits=output)
        res = _indexing.where(valid, res, _creation.zeros_like(res))
        if res.ndim != len(lead):
            res = _array.reshape(res, out_shape[:-1])
            valid = _array.reshape(valid, out_shape[:-1])
        res._keras_mask = valid
        return res
    res = _nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)
    if res.ndim != len(lead) and rank >= 3:
        res = _array.reshape(res, out_shape[:-1])
    return res


# --------------------------------------------------------------------------- CTC
def ctc_label_dense_to_sparse(labels, label_lengths):
    """The first `label_lengths[i]` entries of each row of `labels` as a SparseTensor."""
    labels = _t(labels)
    lengths = _math.cast(_t(label_lengths), _dt.int32)
    steps = _array.shape(labels)[1]
    keep = _math.less(_creation.range(steps), _array.expand_dims(lengths, 1))
    indices = _math.cast(_indexing.where(keep), _dt.int64)
    values = _indexing.gather_nd(labels, indices)
    return _sparse.SparseTensor(indices, values, _math.cast(_array.shape(labels), _dt.int64))


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """The CTC loss per sample, shape (batch, 1), of label rows `y_true` against softmax
    outputs `y_pred` (batch, time, classes; the last class is the blank); the lengths
    are (batch, 1) tensors."""
    label_length = _math.cast(_array.squeeze(_t(label_length), axis=[-1]), _dt.int32)
    input_length = _math.cast(_array.squeeze(_t(input_length), axis=[-1]), _dt.int32)
    logits = _math.log(_t(y_pred) + epsilon())
    loss = _nn.ctc_loss(_math.cast(_t(y_true), _dt.int32), logits, label_length,
                        input_length, logits_time_major=False, blank_index=-1)
    return _array.expand_dims(loss, 1)


def ctc_decode(y_pred, input_length, greedy: bool = True, beam_width: int = 100,
               top_paths: int = 1):
    """Greedy CTC decoding of softmax outputs `y_pred` (batch, time, classes; the last
    class is the blank): ([labels (batch, time) padded with -1], log-probabilities
    (batch, 1)). Beam search is not supported.
    """
    if not greedy:
        raise NotImplementedError("keras.backend.ctc_decode: only greedy=True is supported")
    y = _t(y_pred)
    logits = _math.log(y + epsilon())
    decoded, scores = _keras_nn.ctc_decode(logits, input_length,
                                           mask_index=int_shape(y)[-1] - 1)
    return [_math.cast(decoded[0], _dt.int64)], scores


# --------------------------------------------------------------------------- random
def _seed(seed, high=10e6):
    # Keras draws an op seed from NumPy's generator so np.random.seed makes runs repeat
    return np.random.randint(high) if seed is None else seed


def random_normal(shape, mean: float = 0.0, stddev: float = 1.0, dtype=None, seed=None):
    """Samples of N(mean, stddev ** 2) (floatx unless `dtype`); `shape` may hold
    tensors (`(tf.shape(z)[0], dim)`).

    Example:
        >>> tf.keras.backend.random_normal(shape=(2, 3), seed=1).shape
        TensorShape([2, 3])
    """
    return _random.normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(),
                          seed=_seed(seed))


def random_uniform(shape, minval: float = 0.0, maxval: float = 1.0, dtype=None, seed=None):
    """Samples uniform in [minval, maxval)."""
    return _random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(),
                           seed=_seed(seed))


def truncated_normal(shape, mean: float = 0.0, stddev: float = 1.0, dtype=None, seed=None):
    """Normal samples within two standard deviations of the mean."""
    return _random.truncated_normal(shape, mean, stddev, dtype=dtype or floatx(),
                                    seed=_seed(seed))


def random_bernoulli(shape, p: float = 0.0, dtype=None, seed=None):
    """1 with probability `p`, else 0."""
    d = dtype or floatx()
    u = _random.uniform(shape, dtype=d, seed=_seed(seed))
    return _indexing.where(u <= p, _creation.ones_like(u), _creation.zeros_like(u))


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None) -> Variable:
    """A variable of N(mean, scale ** 2) samples."""
    d = dtype or floatx()
    value = _random.normal(shape, mean, scale, dtype=d, seed=_seed(seed, 10e8))
    return variable(value, dtype=d, name=name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None) -> Variable:
    """A variable of samples uniform in [low, high)."""
    d = dtype or floatx()
    value = _random.uniform(shape, low, high, dtype=d, seed=_seed(seed, 10e8))
    return variable(value, dtype=d, name=name)


# --------------------------------------------------------------------------- variables
def eval(x):  # noqa: A001 - Keras's name
    """The value of `x` as a NumPy array."""
    return get_value(to_dense(x))


def get_value(x):
    """The value of a tensor or variable as NumPy (anything else is returned as is)."""
    if isinstance(x, (Tensor, Variable)):
        return x.numpy()
    return x


def batch_get_value(tensors) -> list:
    """The values of a list of tensors or variables, as NumPy arrays."""
    return [x.numpy() for x in tensors]


def set_value(x, value) -> None:
    """Assign `value` (anything NumPy converts) to the variable `x`."""
    x.assign(np.asarray(value, dtype=_dt.as_dtype(x.dtype).as_numpy_dtype))


def batch_set_value(tuples) -> None:
    """`set_value` for each (variable, value) pair."""
    for x, value in tuples:
        set_value(x, value)


def update(x, new_x):
    """Assign `new_x` to the variable `x`."""
    return x.assign(new_x)


def update_add(x, increment):
    """Add `increment` to the variable `x`."""
    return x.assign_add(increment)


def update_sub(x, decrement):
    """Subtract `decrement` from the variable `x`."""
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """x <- momentum * x + (1 - momentum) * value, in place."""
    momentum = _math.cast(momentum, x.dtype)
    value = _math.cast(value, x.dtype)
    return x.assign_sub((x - value) * (1 - momentum))


def name_scope(name: str):
    """A context manager prefixing the names of variables made inside it."""
    return _name_scope(name)


def gradients(loss, variables):
    """Symbolic gradients are a graph-mode API: tapeflow, like TensorFlow 2 eagerly, asks
    for `tf.GradientTape` instead."""
    raise RuntimeError("tf.gradients is not supported when eager execution is enabled. "
                       "Use tf.GradientTape instead.")


# --------------------------------------------------------------------------- control flow
def map_fn(fn, elems, name=None, dtype=None):
    """`fn` applied to each slice of `elems` along its first axis, results stacked."""
    return _map_fn(fn, elems, dtype=dtype)


def foldl(fn, elems, initializer=None, name=None):
    """The last accumulator of acc = fn(acc, x) over `elems`' slices, first to last."""
    return _foldl(fn, elems, initializer=initializer)


def foldr(fn, elems, initializer=None, name=None):
    """The last accumulator of acc = fn(acc, x) over `elems`' slices, last to first."""
    return _foldr(fn, elems, initializer=initializer)


def switch(condition, then_expression, else_expression):
    """`then_expression` where `condition` holds, else `else_expression`: a scalar
    condition chooses (and may take callables), a tensor one selects elementwise,
    broadcast over the expressions' trailing axes."""
    condition = _t(condition)
    if not condition.dtype.is_bool:
        condition = _math.cast(condition, _dt.bool)
    if condition.ndim == 0:
        then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
        else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
        return _cond(condition, then_fn, else_fn)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    then_expression, else_expression = _t(then_expression), _t(else_expression)
    cond_ndim, expr_ndim = condition.ndim, then_expression.ndim
    if cond_ndim > expr_ndim:
        raise ValueError(f"Rank of `condition` should be less than or equal to rank of "
                         f"`then_expression` and `else_expression`. ndim(condition)="
                         f"{cond_ndim}, ndim(then_expression)={expr_ndim}")
    if cond_ndim > 1:  # a 1-D condition broadcasts from the right, as tf.where
        condition = _array.reshape(condition, _array.concat(
            [_array.shape(condition), _creation.ones([expr_ndim - cond_ndim], _dt.int32)], 0))
        condition = _array.broadcast_to(condition, _array.shape(then_expression))
    return _indexing.where(condition, then_expression, else_expression)


def _swap01(t):
    return _array.transpose(t, [1, 0] + list(range(2, t.ndim)))


def rnn(step_function, inputs, initial_states, go_backwards: bool = False, mask=None,
        constants=None, unroll: bool = False, input_length=None, time_major: bool = False,
        zero_output_for_mask: bool = False, return_all_outputs: bool = True):
    """Run `step_function(input_t, states) -> (output_t, new_states)` over the time axis
    of `inputs` (batch, time, ...) and return (last_output, outputs, new_states).

    A `mask` (batch, time) keeps the previous states (and the previous output, or zeros
    with `zero_output_for_mask`) at masked steps; `constants` are appended to the states
    each step receives; `go_backwards` runs from the last step (outputs stay in the
    order they were computed). `unroll` and `input_length` change nothing here.

    Example:
        >>> K = tf.keras.backend
        >>> step = lambda x, s: (x + s[0], [x + s[0]])
        >>> last, outs, st = K.rnn(step, tf.ones((2, 3, 1)), [tf.zeros((2, 1))])
        >>> last.numpy().ravel()
        array([3., 3.], dtype=float32)
    """
    flat = [_t(x) for x in nest.flatten(inputs)]
    if not time_major:
        flat = [_swap01(x) for x in flat]
    if mask is not None:
        mask = _t(mask)
        if not mask.dtype.is_bool:
            mask = _math.cast(mask, _dt.bool)
        if mask.ndim == 2:
            mask = _array.expand_dims(mask, -1)
        if not time_major:
            mask = _swap01(mask)
    if go_backwards:
        flat = [_array.reverse(x, [0]) for x in flat]
        mask = None if mask is None else _array.reverse(mask, [0])
    consts = tuple(constants or ())
    states0 = [_t(s) for s in nest.flatten(initial_states)]

    def step(x_parts, states):
        x_t = nest.pack_sequence_as(inputs, list(x_parts)) if nest.is_nested(inputs) \
            else x_parts[0]
        packed = nest.pack_sequence_as(initial_states, list(states))
        out, new = step_function(x_t, tuple(packed) + consts
                                 if isinstance(packed, (list, tuple)) else (packed,) + consts)
        return _t(out), [_t(s) for s in nest.flatten(new)]

    def keep(m_t, new, old):
        m = m_t
        while m.ndim < new.ndim:
            m = _array.expand_dims(m, -1)
        return _indexing.where(_array.broadcast_to(m, _array.shape(new)), new, old)

    def masked(m_t, out, new_states, prev_out, old_states):
        if m_t is None:
            return out, new_states
        prev = _creation.zeros_like(out) if zero_output_for_mask else prev_out
        return keep(m_t, out, prev), [keep(m_t, n, o) for n, o in zip(new_states, old_states)]

    out0, st0 = step([x[0] for x in flat], states0)
    out0, st0 = masked(None if mask is None else mask[0], out0, st0,
                       _creation.zeros_like(out0), states0)

    def body(acc, xs):
        prev_out, states = acc[0], list(acc[1:])
        parts, m_t = (xs[:-1], xs[-1]) if mask is not None else (xs, None)
        out, new = step(parts, states)
        out, new = masked(m_t, out, new, prev_out, states)
        return tuple([out] + new)

    steps = int_shape(flat[0])[0]
    if steps is not None:
        # a static length unrolls in Python: eager runs need no loop op, and a traced call
        # keeps unknown batch sizes out of TensorArray element shapes
        acc, outs = tuple([out0] + st0), [out0]
        for t in range(1, steps):
            acc = body(acc, tuple(x[t] for x in flat) +
                       ((mask[t],) if mask is not None else ()))
            outs.append(acc[0])
        outputs, new_states = _array.stack(outs), list(acc[1:])
    else:
        rest = tuple(x[1:] for x in flat) + ((mask[1:],) if mask is not None else ())
        scanned = _scan(body, rest, initializer=tuple([out0] + st0))
        outputs = _array.concat([_array.expand_dims(out0, 0), scanned[0]], 0)
        # the first step joins the scanned ones so a single step still has a last row
        new_states = [_array.concat([_array.expand_dims(a, 0), s], 0)[-1]
                      for a, s in zip(st0, scanned[1:])]
    last_output = outputs[-1]
    if not return_all_outputs:
        outputs = _array.expand_dims(last_output, 0)
    if not time_major:
        outputs = _swap01(outputs)
    return last_output, outputs, nest.pack_sequence_as(initial_states, new_states) \
        if nest.is_nested(initial_states) else new_states


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)

