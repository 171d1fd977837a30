"""`keras.random`: Keras 3's random functions with seeds and `SeedGenerator`.

Every function is built on tapeflow's stateless random ops, so its numbers are decided by a
seed pair `[seed, counter]` alone (the bits are not TensorFlow's: the generator differs).
`seed=` is, as in Keras 3:
- an int: the pair `[seed, 0]`, so two calls with the same int give the same numbers;
- a `SeedGenerator`: its current pair, after which its counter advances, so successive
  calls differ while a generator made with the same seed replays the same sequence;
- None: a draw from a global `SeedGenerator` (made from Python's `random` on first use and
  reset by `keras.utils.set_random_seed`).

Example:
    >>> gen = tf.keras.random.SeedGenerator(42)
    >>> a = tf.keras.random.normal((2, 3), seed=gen)
    >>> b = tf.keras.random.normal((2, 3), seed=gen)   # differs from a
    >>> tf.keras.random.uniform((3,), seed=7).shape
    TensorShape([3])
"""
from __future__ import annotations

import random as _python_random

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.shape import dims_of
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..ops import random as _random
from ..ops.array import argsort, broadcast_to, shape as _shape_of
from ..ops.creation import one_hot, zeros_like
from ..ops.indexing import gather, where
from ..ops.math import (cast, greater, greater_equal, less, log, logical_and, maximum, pow as
                        _pow, sqrt)
from ..ops.reduction import argmax, reduce_sum

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "categorical",
           "dropout", "shuffle", "gamma", "binomial", "beta"]

_INT64 = 1 << 64


def _wrap_int64(value: int) -> int:
    """An int as the int64 with the same low 64 bits (Keras reinterprets large seeds the
    same way for its int32 seeds)."""
    value = int(value) % _INT64
    return value - _INT64 if value >= 1 << 63 else value


_generator_names: dict = {}


def _auto_name(base: str) -> str:
    count = _generator_names.get(base, 0)
    _generator_names[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


class SeedGenerator:
    """The state of a sequence of seeds: each random call given this generator uses its
    current `[seed, counter]` pair and advances the counter, so calls differ but a
    generator made with the same seed replays the same numbers. Attach one to a layer to
    make its randomness reproducible (also inside `tf.function`: the state is a variable).

    Example:
        >>> gen = tf.keras.random.SeedGenerator(seed=1337)
        >>> x = tf.keras.random.normal((4,), seed=gen)
        >>> y = tf.keras.random.normal((4,), seed=gen)   # the next numbers, not x again
    """

    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs):
        kwargs.pop("backend", None)  # Keras's choice of backend: tapeflow has one
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
        self.name = name if name is not None else _auto_name("seed_generator")
        self._initial_seed = seed
        if seed is None:
            seed = _python_random.randint(1, int(1e9))
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed}")
        start = np.array([_wrap_int64(seed), 0], np.int64)
        self.state = Variable(start, trainable=False, name="seed_generator_state")

    def next(self, ordered: bool = True) -> Tensor:
        """The current seed pair (int64, shape [2]); the state then moves on: the counter
        by one, or (`ordered=False`, what unseeded calls use) to a scrambled next state."""
        current = self.state.read_value() * 1  # a copy, unchanged by the update below
        if ordered:
            self.state.assign_add(convert_to_tensor(np.array([0, 1], np.int64)))
        else:
            self.state.assign((current + 1) * 5387 % 933199)
        return current

    def get_config(self) -> dict:
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "SeedGenerator":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<SeedGenerator name={self.name!r} seed={self._initial_seed}>"


_global: list = [None]


def global_seed_generator() -> SeedGenerator:
    """The generator unseeded calls draw from, made on first use."""
    if _global[0] is None:
        _global[0] = SeedGenerator()
    return _global[0]


def reset_global_seed_generator() -> None:
    """Forget the global generator (`keras.utils.set_random_seed` does, so the next one is
    made from the freshly seeded Python `random`)."""
    _global[0] = None


def draw_seed(seed) -> Tensor:
    """The stateless seed pair a call with `seed=` uses (see the module's docstring)."""
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if isinstance(seed, (int, np.integer)):
        return convert_to_tensor(np.array([_wrap_int64(seed), 0], np.int64))
    if seed is None:
        return global_seed_generator().next(ordered=False)
    raise ValueError("Argument `seed` must be either an integer or an instance of "
                     f"`SeedGenerator`. Received: seed={seed} (of type {type(seed)})")


def _float(dtype, what: str) -> _dt.DType:
    d = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"`keras.random.{what}` requires a floating point `dtype`. "
                         f"Received: dtype={d.name} ")
    return d


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of N(mean, stddev²) (float32 unless `dtype`).

    Example:
        >>> tf.keras.random.normal((2, 2), mean=1.0, stddev=0.5, seed=3).shape
        TensorShape([2, 2])
    """
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return _random.stateless_normal(shape, draw_seed(seed), mean=mean, stddev=stddev,
                                    dtype=dtype)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None) -> Tensor:
    """Samples uniform in [minval, maxval); `dtype` must be floating (use `randint` for
    integers).

    Example:
        >>> tf.keras.random.uniform((3,), minval=-1.0, maxval=1.0, seed=1).dtype == tf.float32
        True
    """
    dtype = _float(dtype, "uniform")
    return _random.stateless_uniform(shape, draw_seed(seed), minval=cast(minval, dtype),
                                     maxval=cast(maxval, dtype), dtype=dtype)


def randint(shape, minval, maxval, dtype="int32", seed=None) -> Tensor:
    """Integers uniform in [minval, maxval) (int32 unless `dtype`, which must be an
    integer type).

    Example:
        >>> tf.keras.random.randint((4,), 0, 10, seed=2).dtype == tf.int32
        True
    """
    d = _dt.as_dtype(dtype)
    if not d.is_integer:
        raise ValueError("`keras.random.randint` requires an integer `dtype`. "
                         f"Received: dtype={d.name} ")
    inner = d if d in (_dt.int32, _dt.int64) else _dt.int64
    out = _random.stateless_uniform(shape, draw_seed(seed), minval=minval, maxval=maxval,
                                    dtype=inner)
    return out if inner is d else cast(out, d)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Normal samples redrawn until within two standard deviations of `mean`.

    Example:
        >>> x = tf.keras.random.truncated_normal((100,), stddev=0.1, seed=4)  # in ±0.2
    """
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return _random.stateless_truncated_normal(shape, draw_seed(seed), mean=mean,
                                              stddev=stddev, dtype=dtype)


def categorical(logits, num_samples: int, dtype="int32", seed=None) -> Tensor:
    """`num_samples` class indices per row of `[batch, num_classes]` logits (unnormalized
    log-probabilities): `[batch, num_samples]`, int32 unless `dtype`.

    Example:
        >>> tf.keras.random.categorical([[0.0, 0.0]], 5, seed=1).shape
        TensorShape([1, 5])
    """
    x = convert_to_tensor(logits)
    if x.ndim != 2:
        raise ValueError("`logits` should be a 2-D tensor with shape [batch_size, "
                         f"num_classes]. Received: logits={logits}")
    if not x.dtype.is_floating:
        x = cast(x, _dt.float32)
    out = _random.stateless_categorical(x, num_samples, draw_seed(seed), dtype=_dt.int64)
    return cast(out, _dt.as_dtype(dtype))


def dropout(inputs, rate: float, noise_shape=None, seed=None) -> Tensor:
    """`inputs` with each entry zeroed with probability `rate` and the kept ones scaled by
    1 / (1 - rate); `noise_shape` (None entries take the input's dims) shares one
    decision along its dims of size 1.

    Example:
        >>> tf.keras.random.dropout(tf.ones((4,)), 0.5, seed=1)  # entries 0.0 or 2.0
    """
    x = convert_to_tensor(inputs)
    if rate == 1.0:
        return zeros_like(x)
    if rate == 0.0:
        return x
    dims = dims_of(x)
    if noise_shape is None:
        noise = dims
    else:
        noise = tuple(dims[i] if d is None else d for i, d in enumerate(noise_shape))
        if len(noise) != len(dims):
            raise ValueError(f"keras.random.dropout: noise_shape {list(noise_shape)} must "
                             f"have the rank of the inputs, shape {x.shape}")
    u = _random.stateless_uniform(noise, draw_seed(seed), dtype=x.dtype)
    keep = cast(greater_equal(u, cast(rate, x.dtype)), x.dtype)
    return x * keep * cast(1.0 / (1.0 - rate), x.dtype)


def shuffle(x, axis: int = 0, seed=None) -> Tensor:
    """`x` with its entries along `axis` in a random order.

    Example:
        >>> tf.keras.random.shuffle(tf.range(5), seed=3).shape
        TensorShape([5])
    """
    x = convert_to_tensor(x)
    size = x.shape[axis]
    if size is None:
        size = _shape_of(x)[axis]
    order = argsort(_random.stateless_uniform([size], draw_seed(seed)))
    return gather(x, order, axis=axis)


_TRIES = 8  # Marsaglia-Tsang proposals per sample: all rejected with p < 0.05**8


def _standard_gamma(shape, alpha: Tensor, seeds: Tensor, dtype: _dt.DType) -> Tensor:
    """Gamma(alpha, 1) samples by Marsaglia and Tsang's method, made branch-free so it
    also runs traced: a fixed number of proposals each, the first accepted one kept.
    alpha < 1 samples Gamma(alpha + 1) and scales it by U^(1/alpha)."""
    small = less(alpha, 1.0)
    a = where(small, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / sqrt(9.0 * d)
    shape = list(shape)
    z = _random.stateless_normal([_TRIES] + shape, seeds[0], dtype=dtype)
    u = _random.stateless_uniform([_TRIES] + shape, seeds[1], dtype=dtype)
    v = (1.0 + c * z) ** 3
    positive = greater(v, 0.0)
    safe_v = where(positive, v, 1.0)
    accept = logical_and(positive, less(log(u), 0.5 * z * z + d - d * safe_v + d * log(safe_v)))
    first = argmax(cast(accept, _dt.int32), axis=0, output_type=_dt.int32)
    pick = one_hot(first, _TRIES, axis=0, dtype=dtype)
    sample = reduce_sum(pick * (d * safe_v), axis=0)
    boost = _pow(_random.stateless_uniform(shape, seeds[2], dtype=dtype), 1.0 / alpha)
    sample = where(small, sample * boost, sample)
    return maximum(sample, np.finfo(dtype.as_numpy_dtype).tiny)


def _gamma(shape, alpha, seed_pair: Tensor, dtype: _dt.DType) -> Tensor:
    inner = _dt.float32 if dtype in (_dt.float16, _dt.bfloat16) else dtype
    alpha = broadcast_to(cast(alpha, inner), list(shape))
    out = _standard_gamma(shape, alpha, _random.split(seed_pair, 3), inner)
    return out if inner is dtype else cast(out, dtype)


def gamma(shape, alpha, dtype=None, seed=None) -> Tensor:
    """Samples of the Gamma distribution with concentration `alpha` (broadcast to
    `shape`) and scale 1: mean `alpha`, variance `alpha`.

    Example:
        >>> tf.keras.random.gamma((1000,), alpha=2.0, seed=5).shape
        TensorShape([1000])
    """
    dtype = _float(dtype, "gamma")
    return _gamma(shape, alpha, draw_seed(seed), dtype)


def binomial(shape, counts, probabilities, dtype=None, seed=None) -> Tensor:
    """The number of successes in `counts` trials of success probability `probabilities`
    (both broadcast to `shape`), float32 unless `dtype`.

    Example:
        >>> tf.keras.random.binomial((3,), counts=10.0, probabilities=0.5, seed=1).shape
        TensorShape([3])
    """
    dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    inner = _dt.float32 if dtype is _dt.bfloat16 else dtype
    out = _random.stateless_binomial(shape, draw_seed(seed), counts, probabilities,
                                     output_dtype=inner)
    return out if inner is dtype else cast(out, dtype)


def beta(shape, alpha, beta, dtype=None, seed=None) -> Tensor:
    """Samples of the Beta(alpha, beta) distribution (each broadcast to `shape`), as
    Keras makes them: Ga / (Ga + Gb) of two Gamma samples.

    Example:
        >>> tf.keras.random.beta((3,), alpha=2.0, beta=5.0, seed=1).shape
        TensorShape([3])
    """
    dtype = _float(dtype, "beta")
    first = draw_seed(seed)
    second = first + 12  # Keras's second stream
    gamma_a = _gamma(shape, alpha, first, dtype)
    gamma_b = _gamma(shape, beta, second, dtype)
    return gamma_a / (gamma_a + gamma_b)


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
