"""NumPy kernels of random ops: pure functions of (inputs, attrs), seeded by the `seed` attr."""
import math
import threading

import numpy as np

from ._kernel import ensure_array, kernel


class _Cached(threading.local):
    """One Philox generator per thread, re-keyed for every call: setting its state costs
    a fraction of building a new one, and the whole state is set, so results depend on
    the seed attr alone."""

    def __init__(self):
        self.bits = np.random.Philox(0)
        self.generator = np.random.Generator(self.bits)
        self.empty = np.zeros(4, np.uint64)


_cached = _Cached()


def _generator(seed) -> np.random.Generator:
    """A Philox generator for seed attr (key0, key1, stream, counter): the stream and
    counter sit in the high words of Philox's 256-bit counter, so streams never overlap."""
    k0, k1, stream, count = seed
    c = _cached
    c.bits.state = {"bit_generator": "Philox",
                    "state": {"counter": np.array([0, 0, stream, count], np.uint64),
                              "key": np.array([k0, k1], np.uint64)},
                    "buffer": c.empty, "buffer_pos": 4, "has_uint32": 0, "uinteger": 0}
    return c.generator


def _float_kind(dtype):
    """The NumPy float type to draw in for `dtype` (half types are drawn in float32)."""
    return np.float64 if dtype == np.float64 else np.float32


@kernel("RandomStandardNormal")
def standard_normal(inputs, attrs, backend):
    dtype = attrs["dtype"]._np
    z = _generator(attrs["seed"]).standard_normal(attrs["shape"], dtype=_float_kind(dtype))
    return z.astype(dtype, copy=False)


@kernel("RandomUniform")
def uniform(inputs, attrs, backend):
    dtype = attrs["dtype"]._np
    u = _generator(attrs["seed"]).random(attrs["shape"], dtype=_float_kind(dtype))
    if dtype.itemsize == 2:
        # Round down onto the half type's grid below 1 (float16: 2**-11 steps, bfloat16:
        # 2**-8), so the interval stays half-open after the cast.
        steps = np.float32(2048 if dtype == np.float16 else 256)
        u = np.floor(u * steps) / steps
    return u.astype(dtype, copy=False)


@kernel("RandomUniformInt")
def uniform_int(inputs, attrs, backend):
    return _generator(attrs["seed"]).integers(attrs["minval"], attrs["maxval"], size=attrs["shape"],
                                          dtype=attrs["dtype"]._np)


@kernel("TruncatedNormal")
def truncated_normal(inputs, attrs, backend):
    dtype = attrs["dtype"]._np
    rng = _generator(attrs["seed"])
    kind = _float_kind(dtype)
    z = rng.standard_normal(attrs["shape"], dtype=kind).reshape(-1)
    bad = np.flatnonzero(np.abs(z) > 2)
    while bad.size:  # about 4.6% are redrawn per round, so few rounds run
        z[bad] = rng.standard_normal(bad.size, dtype=kind)
        bad = bad[np.abs(z[bad]) > 2]
    return z.reshape(attrs["shape"]).astype(dtype, copy=False)


@kernel("Multinomial")
def multinomial(inputs, attrs, backend):
    logits = inputs["logits"].astype(np.float64)
    rows, classes = logits.shape
    s = attrs["num_samples"]
    if rows == 0 or s == 0:
        return np.zeros((rows, s), attrs["dtype"]._np)
    m = np.max(logits, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    cdf = np.cumsum(np.exp(logits - m), axis=1)
    total = cdf[:, -1:]
    bad = ~(np.isfinite(total) & (total > 0))
    cdf = np.where(bad, np.arange(1, classes + 1) / classes, cdf / np.where(bad, 1.0, total))
    # Inverse-CDF sampling for all rows with one search: row r's CDF is shifted to
    # [r, r + 1], so the concatenated CDFs stay sorted.
    offset = np.arange(rows, dtype=np.float64)[:, None]
    u = _generator(attrs["seed"]).random((rows, s))
    target = np.minimum(u + offset, np.nextafter(offset + 1.0, 0.0))
    pos = np.searchsorted((cdf + offset).ravel(), target.ravel(), side="right")
    idx = pos.reshape(rows, s) - (np.arange(rows) * classes)[:, None]
    return np.clip(idx, 0, classes - 1).astype(attrs["dtype"]._np)


@kernel("RandomShuffle")
def shuffle(inputs, attrs, backend):
    x, axis = inputs["x"], attrs["axis"]
    perm = _generator(attrs["seed"]).permutation(x.shape[axis])
    if attrs["inverse"]:
        perm = np.argsort(perm)
    return np.take(x, perm, axis=axis)


def _keep(seed, shape, kind, rate: float) -> np.ndarray:
    """Which elements dropout keeps: `uniform(shape) >= rate` for the uniform numbers
    `Generator.random(shape, dtype=kind)` draws from this seed, decided on the raw bits
    they are made of (a float32 is the top 24 bits of a 32-bit word over 2^24, a float64
    the top 53 of a 64-bit one), so no floats are made: the same mask, in half the time."""
    size = math.prod(shape)
    bits = _generator(seed).bit_generator
    if kind == np.float32:
        words = bits.random_raw((size + 1) // 2).view(np.uint32)[:size]
        # u >= rate compares in float32 (rate a Python float, NumPy's weak scalar)
        least = math.ceil(float(np.float32(rate)) * 2.0 ** 24) << 8
        limit = 1 << 32
    else:
        words = bits.random_raw(size)
        least = math.ceil(rate * 2.0 ** 53) << 11
        limit = 1 << 64
    if least >= limit:  # (a rate that rounds to 1 in float32: u < 1 keeps nothing)
        return np.zeros(shape, bool)
    return (words >= words.dtype.type(least)).reshape(shape)


@kernel("Dropout")
def dropout(inputs, attrs, backend):
    x = inputs["x"]
    rate = attrs["rate"]
    keep = _keep(attrs["seed"], tuple(attrs["noise_shape"]), _float_kind(x.dtype), rate)
    # (x times the scaled mask, as x * mask always was: -0 and NaN where x is, dropped)
    mask = ensure_array(np.multiply(keep, x.dtype.type(1.0 / (1.0 - rate)), dtype=x.dtype))
    if mask.shape == x.shape:
        return np.multiply(x, mask, out=mask)
    return ensure_array(x * mask)


# Stateless twins: the seed is an input ([2] integers); its two words key the generator,
# on a stream of their own (4: the stateful ops use 1 to 3), so equal seeds give equal
# numbers everywhere.
_STREAM_STATELESS = 4


def _stateless(sample):
    def run(inputs, attrs, backend):
        words = np.asarray(inputs["seed"]).astype(np.int64).view(np.uint64)
        seed = (int(words[0]), int(words[1]), _STREAM_STATELESS, 0)
        return sample(inputs, {**attrs, "seed": seed}, backend)
    return run


for _name, _sample in (("RandomStandardNormal", standard_normal), ("RandomUniform", uniform),
                       ("RandomUniformInt", uniform_int), ("TruncatedNormal", truncated_normal),
                       ("Multinomial", multinomial)):
    kernel("Stateless" + _name)(_stateless(_sample))


def _count_sample(draw):
    """Poisson/binomial samples of attr dtype, drawn in float64/int64 then cast."""
    def run(inputs, attrs, backend):
        shape, dtype = tuple(attrs["shape"]), attrs["dtype"]._np
        params = {k: np.broadcast_to(v, shape) for k, v in inputs.items() if k != "seed"}
        return draw(_generator(attrs["seed"]), shape, **params).astype(dtype)
    return run


kernel("StatelessRandomPoisson")(_stateless(_count_sample(
    lambda rng, shape, lam: rng.poisson(lam, size=shape))))
kernel("StatelessRandomBinomial")(_stateless(_count_sample(
    lambda rng, shape, counts, probs: rng.binomial(counts.astype(np.int64), probs, size=shape))))
