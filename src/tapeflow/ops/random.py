"""Random ops with TensorFlow's seeding rules, `Generator`, and dropout.

Kernels are pure: each call resolves its seed to a static `seed` attr (key0, key1, stream,
counter) from which the kernel builds a counter-based generator (Philox), so the same attrs
always give the same numbers. The statefulness lives here, in the Python counters that pick
the next seed, exactly as TensorFlow's global seed and per-op seeds behave in eager mode:
- `set_seed(s)` then the same sequence of calls gives the same numbers (calls without
  `seed=` draw from a counter that set_seed resets);
- `seed=` fixes the op seed; repeated calls with it still differ (each (global, op) seed
  pair has its own counter, also reset by set_seed); with no global seed a fixed default
  global seed is used, so `seed=` alone is reproducible across runs.
Distribution parameters compose with the standard sample (`mean + stddev * z`), which keeps
them differentiable like TensorFlow's.
"""
from __future__ import annotations

import os

import numpy as np

from .._core import dtypes as _dt
from .._core.context import ctx, op_determinism
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.registry import LateAttr
from .._core.shape import broadcast_shapes, dims_of, is_dim
from .._core.tensor import Tensor
from ._args import dtype_arg, int_arg, shape_arg, show, to_tensor
from .array import broadcast_to, stack, stop_gradient
from .creation import one_hot
from .indexing import where
from .math import cast, exp, greater, less, lgamma, log, logical_and, maximum, sqrt
from .reduction import argmax, reduce_sum
from ._define import defop
from ._tangents import batch_dims
from ._batching import batch_elementwise

__all__ = ["normal", "uniform", "truncated_normal", "categorical", "shuffle", "set_seed",
           "stateless_normal", "stateless_uniform", "stateless_truncated_normal",
           "stateless_categorical", "stateless_poisson", "stateless_binomial", "split",
           "fold_in",
           "Generator", "get_global_generator", "set_global_generator"]

# Kernels whose results depend on their seed attr: a compiler must not fold, merge or
# reorder them (API §6.3).
STATEFUL_KERNELS = frozenset({"RandomStandardNormal", "RandomUniform", "RandomUniformInt",
                              "TruncatedNormal", "Multinomial", "RandomShuffle", "Dropout"})

_MASK64 = (1 << 64) - 1
DEFAULT_GLOBAL_SEED = 87654321  # TensorFlow's, used when only an op seed is given
_STREAM_UNSEEDED, _STREAM_OP_SEED, _STREAM_GENERATOR = 1, 2, 3


class _SeedState:
    """The global seed and the counters that hand out per-call seeds."""

    def __init__(self):
        self.global_seed = None
        self.process_seed = int.from_bytes(os.urandom(8), "little")
        self.calls = 0
        self.per_op_seed: dict = {}

    def next(self, op_seed):
        """The seed attr of one call; while a function is traced, a LateAttr that draws
        it each time the graph runs (so every call gives fresh numbers, as in TF)."""
        _check_seeded(self, op_seed)
        if ctx.graph is not None:
            return _LateSeed(self, op_seed)
        return self.draw(op_seed)

    def draw(self, op_seed) -> tuple:
        if op_seed is None:
            g = self.process_seed if self.global_seed is None else self.global_seed
            self.calls += 1
            return (g & _MASK64, 0, _STREAM_UNSEEDED, self.calls)
        g = DEFAULT_GLOBAL_SEED if self.global_seed is None else self.global_seed
        key = (g, op_seed)
        count = self.per_op_seed.get(key, 0)
        self.per_op_seed[key] = count + 1
        return (g & _MASK64, op_seed & _MASK64, _STREAM_OP_SEED, count)


def _check_seeded(state: _SeedState, op_seed) -> None:
    """Under `config.experimental.enable_op_determinism`, a random op needs a seed (as
    TensorFlow's `get_seed`: RuntimeError)."""
    if op_seed is None and state.global_seed is None and op_determinism[0]:
        raise RuntimeError("Random ops require a seed to be set when determinism is "
                           "enabled. Please set a seed before running the op, e.g. by "
                           "calling tf.random.set_seed(1).")


class _LateSeed(LateAttr):
    __slots__ = ("state", "op_seed")

    def __init__(self, state: _SeedState, op_seed):
        self.state, self.op_seed = state, op_seed

    def resolve(self) -> tuple:
        return self.state.draw(self.op_seed)

    def __repr__(self) -> str:
        return f"seed(op_seed={self.op_seed}, drawn per run)"


_state = _SeedState()


def _seed_arg(op: str, seed):
    return None if seed is None else int_arg(op, seed, "seed")


def set_seed(seed) -> None:
    """Set the global random seed and restart every seed counter.

    Example:
        >>> tf.random.set_seed(1); a = tf.random.normal([2])
        >>> tf.random.set_seed(1); b = tf.random.normal([2])   # b equals a
    """
    _state.global_seed = _seed_arg("set_seed", seed)
    if seed is None:  # back to nondeterministic draws, fresh for this point on
        _state.process_seed = int.from_bytes(os.urandom(8), "little")
    _state.calls = 0
    _state.per_op_seed.clear()


def draw_seed(op_seed=None) -> tuple:
    """The seed words of a seeded computation outside the kernels (a dataset's shuffle),
    taken now as TensorFlow's `get_seed` gives them: `op_seed` with the global seed (or
    the default one) and no per-call counter, so two shuffles given the same seed agree;
    without `op_seed`, the next draw of the global seed's counter (reproducible after
    `set_seed`), fresh per process when no global seed is set.

    Example:
        >>> draw_seed(7) == draw_seed(7)
        True
    """
    if op_seed is None:
        _check_seeded(_state, None)
        return _state.draw(None)
    g = DEFAULT_GLOBAL_SEED if _state.global_seed is None else _state.global_seed
    return (g & _MASK64, op_seed & _MASK64, _STREAM_OP_SEED, 0)


# --------------------------------------------------------------------------- arguments


def _shape(op: str, shape) -> tuple:
    return shape_arg(op, shape)


def _float_dtype(op: str, dtype) -> _dt.DType:
    d = dtype_arg(op, dtype)
    if not d.is_floating:
        raise InvalidArgumentError(f"{op}: dtype must be floating, got {d.name}")
    return d


def _params(op: str, shape: tuple, dtype, **params) -> dict:
    """Distribution parameters as tensors of `dtype` that broadcast with `shape` (None for
    the defaults, which skip the arithmetic), checked before any seed is drawn so that a
    bad one changes no state and its error names the op, not the arithmetic."""
    out = {}
    for arg, (value, default) in params.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and value == default:
            out[arg] = None
        else:
            t = to_tensor(value, dtype, op, arg)
            if t.dtype is not dtype:
                raise InvalidArgumentError(f"{op}: {arg} must have dtype {dtype.name}, got "
                                           f"{describe(t)}")
            broadcast_shapes(f"{op}: {arg} against shape", shape, t._shape)
            out[arg] = t
    return out


def _scale_shift(z: Tensor, loc, scale) -> Tensor:
    """loc + scale * z (tensors from `_params`; None: the default, nothing to do)."""
    if scale is not None:
        z = scale * z
    if loc is not None:
        z = loc + z
    return z


def _stateful(next_seed):
    """How a stateful op draws: its kernel with the seed attr `next_seed()` picks."""
    return lambda kernel, attrs: run_kernel(kernel, {}, {**attrs, "seed": next_seed()})


def _normal(op, shape, mean, stddev, dtype, draw) -> Tensor:
    p = _params(op, shape, dtype, mean=(mean, 0), stddev=(stddev, 1))
    z = draw("RandomStandardNormal", {"shape": shape, "dtype": dtype})
    return _scale_shift(z, p["mean"], p["stddev"])


def _truncated(op, shape, mean, stddev, dtype, draw) -> Tensor:
    p = _params(op, shape, dtype, mean=(mean, 0), stddev=(stddev, 1))
    z = draw("TruncatedNormal", {"shape": shape, "dtype": dtype})
    return _scale_shift(z, p["mean"], p["stddev"])


def _uniform(op, shape, minval, maxval, dtype, draw, full_range: bool = False) -> Tensor:
    if dtype.is_integer:
        if full_range and minval is None and maxval is None:  # stateless: every value
            minval, maxval = dtype.min, dtype.max + 1
        if maxval is None:
            raise InvalidArgumentError(f"{op}: must specify maxval for integer dtype "
                                       f"{dtype.name}")
        lo, hi = int_arg(op, minval, "minval"), int_arg(op, maxval, "maxval")
        if lo >= hi:
            raise InvalidArgumentError(f"{op}: need minval < maxval, got minval={lo}, "
                                       f"maxval={hi}")
        if lo < dtype.min or hi - 1 > dtype.max:
            raise InvalidArgumentError(f"{op}: [minval, maxval) = [{lo}, {hi}) does not fit "
                                       f"{dtype.name}")
        return draw("RandomUniformInt", {"shape": shape, "dtype": dtype, "minval": lo,
                                         "maxval": hi})
    if not dtype.is_floating:
        raise InvalidArgumentError(f"{op}: dtype must be floating or integer, got {dtype.name}")
    if maxval is None:
        maxval = 1
    p = _params(op, shape, dtype, minval=(minval, 0), maxval=(maxval, 1))
    u = draw("RandomUniform", {"shape": shape, "dtype": dtype})
    if p["minval"] is None and p["maxval"] is None:
        return u
    if type(minval) in (int, float) and type(maxval) in (int, float):
        return _scale_shift(u, p["minval"], to_tensor(maxval - minval, dtype, op, "maxval"))
    lo = to_tensor(minval, dtype, op, "minval")
    hi = to_tensor(maxval, dtype, op, "maxval")
    return lo + (hi - lo) * u


# --------------------------------------------------------------------------- public ops


def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None) -> Tensor:
    """Samples of N(mean, stddev**2); differentiable in `mean` and `stddev`.

    Example: `tf.random.normal([2, 3], seed=1)`.
    """
    op = "random.normal"
    shape, dtype, seed = _shape(op, shape), _float_dtype(op, dtype), _seed_arg(op, seed)
    return _normal(op, shape, mean, stddev, dtype, _stateful(lambda: _state.next(seed)))


def uniform(shape, minval=0, maxval=None, dtype=_dt.float32, seed=None, name=None) -> Tensor:
    """Samples uniform in [minval, maxval) (maxval defaults to 1 for floats; integer dtypes
    need it). Differentiable in `minval` and `maxval` for floats.

    Example: `tf.random.uniform([4], 0, 10, dtype=tf.int32, seed=3)`.
    """
    op = "random.uniform"
    shape, dtype, seed = _shape(op, shape), dtype_arg(op, dtype), _seed_arg(op, seed)
    return _uniform(op, shape, minval, maxval, dtype, _stateful(lambda: _state.next(seed)))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None,
                     name=None) -> Tensor:
    """Normal samples redrawn until within 2 standard deviations of the mean.

    Example: `tf.random.truncated_normal([100], stddev=0.1)` lies in [-0.2, 0.2].
    """
    op = "random.truncated_normal"
    shape, dtype, seed = _shape(op, shape), _float_dtype(op, dtype), _seed_arg(op, seed)
    return _truncated(op, shape, mean, stddev, dtype, _stateful(lambda: _state.next(seed)))


def _categorical_args(op: str, logits, num_samples, dtype) -> tuple:
    x = to_tensor(logits, None, op, "logits")
    if x.ndim != 2 or not x.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: logits must be a floating [batch, num_classes] "
                                   f"matrix, got {describe(x)}")
    if x._shape[1] == 0 and x._shape[0] > 0:
        raise InvalidArgumentError(f"{op}: logits need at least one class, got {describe(x)}")
    num_samples = int_arg(op, num_samples, "num_samples", minimum=0)
    out = _dt.int64 if dtype is None else dtype_arg(op, dtype)
    if out not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"{op}: dtype must be int32 or int64, got {out.name}")
    return x, num_samples, out


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> Tensor:
    """Class indices drawn from softmax(logits) for each row of `[batch, classes]` logits.

    Returns `[batch, num_samples]` indices (int64 unless `dtype` says int32).
    Example: `tf.random.categorical(tf.math.log([[0.5, 0.5]]), 5)`.
    """
    op = "random.categorical"
    x, num_samples, out = _categorical_args(op, logits, num_samples, dtype)
    seed = _seed_arg(op, seed)
    return run_kernel("Multinomial", {"logits": x}, {
        "num_samples": num_samples, "dtype": out, "seed": _state.next(seed)})


# --------------------------------------------------------------------------- stateless ops
#
# `seed=[a, b]` alone decides the numbers: the same seed gives the same values in every
# call, process and traced function (a Philox stream keyed by the two seed words; not
# TensorFlow's bit stream). The seed is an input of the kernel, so inside a `function` it
# may be a tensor argument; the ops are pure, so a compiler may fold or merge them.


def _stateless_seed(op: str, seed) -> Tensor:
    s = to_tensor(seed, None, op, "seed")
    if not s.dtype.is_integer or tuple(s._shape) != (2,):
        raise InvalidArgumentError(f"{op}: seed must be an integer tensor of shape [2] "
                                   f"(e.g. seed=[1, 2]), got {describe(s)}")
    return s


def _stateless(seed: Tensor):
    """How a stateless op draws: its kernel's Stateless twin, with the seed as input."""
    return lambda kernel, attrs: run_kernel("Stateless" + kernel, {"seed": seed}, attrs)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None,
                     alg="auto_select") -> Tensor:
    """Samples of N(mean, stddev**2) decided by `seed` (shape [2]) alone; differentiable
    in `mean` and `stddev`.

    Example: `tf.random.stateless_normal([2, 3], seed=[1, 2])` (the same every call).
    """
    op = "random.stateless_normal"
    shape, dtype = _shape(op, shape), _float_dtype(op, dtype)
    return _normal(op, shape, mean, stddev, dtype, _stateless(_stateless_seed(op, seed)))


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dt.float32, name=None,
                      alg="auto_select") -> Tensor:
    """Samples uniform in [minval, maxval) decided by `seed` (shape [2]) alone. Integer
    dtypes need `maxval`, or `minval=None, maxval=None` for the dtype's whole range.

    Example: `tf.random.stateless_uniform([4], seed=[3, 4], maxval=10, dtype=tf.int32)`.
    """
    op = "random.stateless_uniform"
    shape, dtype = _shape(op, shape), dtype_arg(op, dtype)
    return _uniform(op, shape, minval, maxval, dtype, _stateless(_stateless_seed(op, seed)),
                    full_range=True)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dt.float32,
                               name=None, alg="auto_select") -> Tensor:
    """Normal samples within 2 standard deviations of the mean, decided by `seed` alone.

    Example: `tf.random.stateless_truncated_normal([100], seed=[5, 6], stddev=0.1)`.
    """
    op = "random.stateless_truncated_normal"
    shape, dtype = _shape(op, shape), _float_dtype(op, dtype)
    return _truncated(op, shape, mean, stddev, dtype, _stateless(_stateless_seed(op, seed)))


def stateless_categorical(logits, num_samples, seed, dtype=_dt.int64, name=None) -> Tensor:
    """Class indices drawn from softmax(logits) for each row of `[batch, classes]` logits,
    decided by `seed` alone: `[batch, num_samples]` int64 (or int32) indices.

    Example: `tf.random.stateless_categorical(tf.math.log([[0.5, 0.5]]), 5, seed=[7, 8])`.
    """
    op = "random.stateless_categorical"
    x, num_samples, out = _categorical_args(op, logits, num_samples, dtype)
    return run_kernel("StatelessMultinomial", {"logits": x, "seed": _stateless_seed(op, seed)},
                      {"num_samples": num_samples, "dtype": out})


def _count_params(op: str, shape: tuple, **params) -> dict:
    """Distribution parameters as float64 tensors that broadcast to `shape`."""
    out = {}
    for arg, value in params.items():
        t = to_tensor(value, None, op, arg)
        if not (t.dtype.is_floating or t.dtype.is_integer):
            raise InvalidArgumentError(f"{op}: {arg} must be a real number, got {describe(t)}")
        if broadcast_shapes(f"{op}: {arg} against shape", shape, t._shape) != tuple(shape):
            raise InvalidArgumentError(f"{op}: {arg} {describe(t)} must broadcast to shape "
                                       f"{list(shape)}")
        out[arg] = t if t.dtype is _dt.float64 else cast(t, _dt.float64)
    return out


def _count_dtype(op: str, dtype) -> _dt.DType:
    d = dtype_arg(op, dtype)
    if not (d.is_floating or d.is_integer):
        raise InvalidArgumentError(f"{op}: dtype must be floating or integer, got {d.name}")
    return d


def stateless_poisson(shape, seed, lam, dtype=_dt.int32, name=None) -> Tensor:
    """Poisson samples with rate `lam` (broadcast to `shape`), decided by `seed` alone;
    not differentiable.

    Example: `tf.random.stateless_poisson([2, 3], seed=[1, 2], lam=[1.0, 5.0, 10.0])`.
    """
    op = "random.stateless_poisson"
    shape, dtype = _shape(op, shape), _count_dtype(op, dtype)
    p = _count_params(op, shape, lam=lam)
    return run_kernel("StatelessRandomPoisson", {"seed": _stateless_seed(op, seed), **p},
                      {"shape": shape, "dtype": dtype})


def stateless_binomial(shape, seed, counts, probs, output_dtype=_dt.int32,
                       name=None) -> Tensor:
    """Binomial samples (`counts` trials of success probability `probs`, both broadcast to
    `shape`), decided by `seed` alone; not differentiable.

    Example: `tf.random.stateless_binomial([3], seed=[1, 2], counts=10.0, probs=0.5)`.
    """
    op = "random.stateless_binomial"
    shape, dtype = _shape(op, shape), _count_dtype(op, output_dtype)
    p = _count_params(op, shape, counts=counts, probs=probs)
    return run_kernel("StatelessRandomBinomial", {"seed": _stateless_seed(op, seed), **p},
                      {"shape": shape, "dtype": dtype})


def split(seed, num=2, alg="auto_select") -> Tensor:
    """`num` new seeds ([num, 2], the seed's dtype) derived from `seed` alone, for
    independent stateless streams (TF's `tf.random.split`, formerly
    `experimental.stateless_split`).

    Example: `a, b = tf.random.split([1, 2])`; `tf.random.stateless_normal([3], seed=a)`.
    """
    op = "random.split"
    s = _stateless_seed(op, seed)
    num = int_arg(op, num, "num", minimum=0)
    return run_kernel("StatelessRandomUniformInt", {"seed": s}, {
        "shape": (num, 2), "dtype": s.dtype, "minval": s.dtype.min, "maxval": s.dtype.max + 1})


def fold_in(seed, data, alg="auto_select") -> Tensor:
    """A new seed from `seed` and an int32/int64 scalar `data` (a step or replica number),
    as TF's `tf.random.fold_in`: [a number drawn from `seed`, data], of data's dtype (a
    Python int is int32, as tf.convert_to_tensor makes it), whatever the seed's dtype.

    Example: `tf.random.stateless_uniform([2], seed=tf.random.fold_in([1, 2], step))`.
    """
    op = "random.fold_in"
    s = _stateless_seed(op, seed)
    d = to_tensor(data, None, op, "data")
    if d.dtype not in (_dt.int32, _dt.int64) or d.ndim != 0:
        raise InvalidArgumentError(f"{op}: data must be an int32 or int64 scalar, got "
                                   f"{describe(d)}")
    # TensorFlow draws the first number as stateless_uniform([], seed, dtype=data.dtype,
    # minval=None, maxval=None): the dtype's whole range.
    first = run_kernel("StatelessRandomUniformInt", {"seed": s}, {
        "shape": (), "dtype": d.dtype, "minval": d.dtype.min, "maxval": d.dtype.max + 1})
    return stack([first, d])


def shuffle(value, seed=None, name=None) -> Tensor:
    """`value` with its first dimension randomly permuted (differentiable).

    Example: `tf.random.shuffle(tf.range(5), seed=2)`.
    """
    x = to_tensor(value, None, "random.shuffle", "value")
    seed = _seed_arg("random.shuffle", seed)
    if x.ndim == 0:
        return x
    return _shuffle(x, 0, False, _state.next(seed))


def dropout(x, rate, noise_shape=None, seed=None, name=None) -> Tensor:
    """Zero each entry with probability `rate`, scaling kept entries by 1 / (1 - rate).

    `noise_shape` (broadcastable to x's shape; None entries take x's dims) shares one
    decision across broadcast dims. Differentiable in `x`. Example:
        >>> tf.nn.dropout(tf.ones([4]), 0.5, seed=1)   # entries are 0.0 or 2.0
    """
    op = "Dropout"
    x = to_tensor(x, None, op, "x")
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"{op}: x must be a floating tensor, got {describe(x)}")
    if isinstance(rate, Tensor):
        if rate.ndim != 0:
            raise InvalidArgumentError(f"{op}: rate must be a scalar, got {describe(rate)}")
        rate = float(rate)
    if not isinstance(rate, (int, float, np.floating, np.integer)) or isinstance(rate, bool) \
            or not 0 <= rate < 1:
        raise InvalidArgumentError(f"{op}: rate must be a number in [0, 1), got {show(rate)}")
    seed = _seed_arg(op, seed)
    if rate == 0:  # TensorFlow's fast path: nothing is dropped
        return x
    shape = dims_of(x)  # (unknown dims of a traced x as Dims, resolved when it runs)
    if noise_shape is None:
        ns = shape
    else:
        if isinstance(noise_shape, Tensor):
            noise_shape = noise_shape.numpy().tolist()
        if isinstance(noise_shape, (list, tuple)):  # None entries take x's dims
            noise_shape = tuple(shape[i] if d is None and i < len(shape) else d
                                for i, d in enumerate(noise_shape))
        ns = shape_arg(op, noise_shape, "noise_shape")
        if len(ns) != len(shape) or any(n not in (1, s) and not is_dim(s)
                                        for n, s in zip(ns, shape)):
            raise InvalidArgumentError(f"{op}: noise_shape {list(ns)} does not broadcast to "
                                       f"x's shape {list(shape)}")
    return _dropout(x, rate=float(rate), noise_shape=ns, seed=_state.next(seed))


# --------------------------------------------------------------------------- Generator


class Generator:
    """A random generator with its own state, independent of the global seed.

    Example:
        >>> g = tf.random.Generator.from_seed(42)
        >>> g.normal([2, 2]), g.uniform([3], maxval=5)   # the same on every run
    """

    def __init__(self, key: int):
        self._key = int(key) % (1 << 128)
        self._count = 0

    @classmethod
    def from_seed(cls, seed, alg=None) -> "Generator":
        """A generator whose stream is determined by the integer `seed`."""
        return cls(_seed_arg("Generator.from_seed", seed))

    @classmethod
    def from_non_deterministic_state(cls, alg=None) -> "Generator":
        """A generator seeded from the operating system's entropy."""
        return cls(int.from_bytes(os.urandom(16), "little"))

    def reset_from_seed(self, seed) -> None:
        """Restart the stream as if created by `from_seed(seed)`."""
        self._key = _seed_arg("Generator.reset_from_seed", seed) % (1 << 128)
        self._count = 0

    def _next(self) -> tuple:
        self._count += 1
        return (self._key & _MASK64, self._key >> 64, _STREAM_GENERATOR, self._count)

    # The trackable protocol (train/checkpoint/trackable.py), duck-typed so this floor
    # imports nothing above it: a checkpoint saves the key and the counter, and restoring
    # them continues the stream where it was saved.
    def _trackable_children(self) -> dict:
        return {}

    def _serialize_to_tensors(self) -> dict:
        """{"state": [key low 64 bits, key high 64 bits, counter]} as uint64."""
        return {"state": np.array([self._key & _MASK64, self._key >> 64, self._count],
                                  dtype=np.uint64)}

    def _restore_from_tensors(self, values: dict) -> None:
        low, high, count = (int(w) for w in np.asarray(values["state"]).reshape(3))
        self._key, self._count = low | high << 64, count

    def split(self, count: int = 1) -> list:
        """`count` new generators with streams derived from (and independent of) this one."""
        k0, k1, _, c = self._next()
        words = np.random.SeedSequence([k0, k1, c]).generate_state(2 * count, np.uint64)
        return [Generator(int(words[2 * i]) | int(words[2 * i + 1]) << 64)
                for i in range(count)]

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dt.float32, name=None) -> Tensor:
        """Samples of N(mean, stddev**2). Example: `g.normal([3])`."""
        shape = _shape("Generator.normal", shape)
        dtype = _float_dtype("Generator.normal", dtype)
        return _normal("Generator.normal", shape, mean, stddev, dtype,
                       _stateful(self._next))

    def uniform(self, shape, minval=0, maxval=None, dtype=_dt.float32, name=None) -> Tensor:
        """Samples uniform in [minval, maxval). Example: `g.uniform([3], 0, 10, tf.int64)`."""
        shape = _shape("Generator.uniform", shape)
        return _uniform("Generator.uniform", shape, minval, maxval,
                        dtype_arg("Generator.uniform", dtype), _stateful(self._next))

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_dt.float32,
                         name=None) -> Tensor:
        """Normal samples within 2 standard deviations. Example: `g.truncated_normal([3])`."""
        shape = _shape("Generator.truncated_normal", shape)
        dtype = _float_dtype("Generator.truncated_normal", dtype)
        return _truncated("Generator.truncated_normal", shape, mean, stddev, dtype,
                          _stateful(self._next))


_global_generator: list = []


def get_global_generator() -> Generator:
    """The process-wide Generator (created from OS entropy on first use)."""
    if not _global_generator:
        _global_generator.append(Generator.from_non_deterministic_state())
    return _global_generator[0]


def set_global_generator(generator: Generator) -> None:
    """Replace the process-wide Generator."""
    _global_generator[:] = [generator]


# --------------------------------------------------------------------------- op table


def _sample_rule(shapes, dtypes, attrs):
    return [(tuple(attrs["shape"]), attrs["dtype"])]


for _name in ("RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal"):
    defop(_name, [], shape=_sample_rule, differentiable=False)


def _multinomial_rule(shapes, dtypes, attrs):
    s = shapes["logits"]
    if len(s) != 2:
        raise InvalidArgumentError(f"random.categorical: logits must be 2-D, got shape "
                                   f"{list(s)}")
    return [((s[0], attrs["num_samples"]), attrs["dtype"])]


defop("Multinomial", ["logits"], shape=_multinomial_rule, differentiable=False)


def _seeded_rule(rule):
    """`rule` of a stateless op, after checking its seed input is a pair."""
    def check(shapes, dtypes, attrs):
        if tuple(shapes["seed"]) != (2,):
            raise InvalidArgumentError(f"stateless random op: seed must have shape [2], got "
                                       f"{list(shapes['seed'])}")
        return rule(shapes, dtypes, attrs)
    return check


# the stateless twins: the seed is an input, the kernels are pure (not STATEFUL_KERNELS)
for _name in ("RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal"):
    defop("Stateless" + _name, ["seed"], shape=_seeded_rule(_sample_rule),
          differentiable=False)
defop("StatelessMultinomial", ["logits", "seed"], shape=_seeded_rule(_multinomial_rule),
      differentiable=False)
defop("StatelessRandomPoisson", ["seed", "lam"], shape=_seeded_rule(_sample_rule),
      differentiable=False)
defop("StatelessRandomBinomial", ["seed", "counts", "probs"],
      shape=_seeded_rule(_sample_rule), differentiable=False)


def _shuffle_rule(shapes, dtypes, attrs):
    if not 0 <= attrs["axis"] < len(shapes["x"]):
        raise InvalidArgumentError(f"random.shuffle: axis {attrs['axis']} is out of range for "
                                   f"shape {list(shapes['x'])}")
    return [(shapes["x"], dtypes["x"])]


def _shuffle(x, axis, inverse, seed):
    return run_kernel("RandomShuffle", {"x": x}, {"axis": axis, "inverse": inverse, "seed": seed})


# A permutation's transpose is its inverse: the same seed regenerates it.
defop("RandomShuffle", ["x"], shape=_shuffle_rule,
      vjp={"x": lambda g, *, axis, inverse, seed: _shuffle(g, axis, not inverse, seed)},
      jvp={"x": lambda t, x, *, axis, inverse, seed: _shuffle(
          t, axis + batch_dims(t, x), inverse, seed)})


def _dropout_rule(shapes, dtypes, attrs):
    return [(broadcast_shapes("Dropout", shapes["x"], attrs["noise_shape"]), dtypes["x"])]


def _dropout(x, **attrs):
    return run_kernel("Dropout", {"x": x}, attrs)


# x -> x * mask(seed) is linear and self-adjoint, and the seed regenerates the same mask,
# so the backward pass keeps nothing.
defop("Dropout", ["x"], shape=_dropout_rule,
      vjp={"x": lambda g, **attrs: _dropout(g, **attrs)},
      jvp={"x": lambda t, **attrs: _dropout(t, **attrs)}, batch=batch_elementwise)


# --------------------------------------------------------------------------- gamma samples
# Marsaglia and Tsang's sampler written without branches (a fixed number of proposals
# per sample, the first accepted kept), so it also runs traced; the derivative in alpha
# is TensorFlow's implicit reparameterization: dx/dalpha = -dP(alpha, x)/dalpha / p(x).

__all__ += ["stateless_gamma"]

_GAMMA_PROPOSALS = 8  # all rejected with probability below 0.05 ** 8


def _standard_gamma(shape: tuple, alpha: Tensor, seed: Tensor) -> Tensor:
    small = less(alpha, 1.0)
    a = where(small, alpha + 1.0, alpha)  # alpha < 1: Gamma(alpha + 1) * U ** (1 / alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / sqrt(9.0 * d)
    seeds = split(seed, 3)
    many = [_GAMMA_PROPOSALS] + list(shape)
    z = stateless_normal(many, seeds[0], dtype=alpha.dtype)
    u = stateless_uniform(many, seeds[1], dtype=alpha.dtype)
    v = (1.0 + c * z) ** 3
    positive = greater(v, 0.0)
    safe_v = where(positive, v, v * 0 + 1)
    accept = logical_and(positive, less(log(u), 0.5 * z * z + d - d * safe_v
                                        + d * log(safe_v)))
    first = argmax(cast(accept, _dt.int32), axis=0, output_type=_dt.int32)
    pick = one_hot(first, _GAMMA_PROPOSALS, axis=0, dtype=alpha.dtype)
    x = reduce_sum(pick * (d * safe_v), axis=0)
    boost = stateless_uniform(list(shape), seeds[2], dtype=alpha.dtype) ** (1.0 / alpha)
    x = where(small, x * boost, x)
    return maximum(x, float(np.finfo(alpha.dtype._np).tiny))


def stateless_gamma(shape, seed, alpha, beta=None, dtype=_dt.float32, name=None) -> Tensor:
    """Gamma(alpha, rate beta) samples of `shape` (alpha and beta broadcast to it) decided
    by `seed` (shape [2]) alone; differentiable in alpha and beta (implicit
    reparameterization, as TensorFlow).

    Example: `tf.random.stateless_gamma([1000], seed=[1, 2], alpha=2.0)` (mean about 2).
    """
    op = "random.stateless_gamma"
    shape, dtype = _shape(op, shape), _float_dtype(op, dtype)
    seed = _stateless_seed(op, seed)
    inner = _dt.float32 if dtype in (_dt.float16, _dt.bfloat16) else dtype
    a = to_tensor(alpha, dtype, op, "alpha")
    if broadcast_shapes(op, shape, a._shape) != tuple(shape):
        raise InvalidArgumentError(f"{op}: alpha {describe(a)} must broadcast to shape "
                                   f"{list(shape)}")
    a = broadcast_to(cast(a, inner), shape)
    fixed = stop_gradient(a)
    x = stop_gradient(_standard_gamma(shape, fixed, seed))
    density = exp((fixed - 1.0) * log(x) - x - lgamma(fixed))
    slope = stop_gradient(-run_kernel("IgammaGradA", {"a": fixed, "x": x}) / density)
    x = x + (a - fixed) * slope  # the value of x, the derivative slope in alpha
    if beta is not None:
        x = x / cast(to_tensor(beta, dtype, op, "beta"), inner)
    return x if inner is dtype else cast(x, dtype)
