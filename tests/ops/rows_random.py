"""Op-table rows of the random family (API §1.3) and dropout.

Random values have no independent reference, so these rows have `ref=None` and leave the
statistics to tests/test_random.py. Each call resets the seed (or builds a fresh
Generator), which makes the function deterministic: that is what lets the shape-rule and
derivative checks (with respect to mean/stddev/minval/maxval, and of the linear shuffle
and dropout) run like any other row.
"""
import tapeflow as tf
from tests.ops.table import Row, uniform

NOTE = "random values: no reference; statistics are tested in tests/test_random.py"


def seeded(f, seed=1234):
    """`f` run right after set_seed(seed), so every call draws the same numbers."""
    def run(*args, **kwargs):
        tf.random.set_seed(seed)
        return f(*args, **kwargs)
    return run


def nothing(rng, dtype):
    return []


def logits(shape):
    def sample(rng, dtype):
        return [rng.normal(0, 1, shape).astype(dtype)]
    return sample


ROWS = [
    Row("random.normal/mean_stddev",
        seeded(lambda m, s: tf.random.normal([3, 4], m, s, dtype=m.dtype, seed=5)), None,
        uniform((4,), (), low=0.5, high=2.0), kernels=("RandomStandardNormal",), note=NOTE),
    Row("random.normal/global_seed", seeded(lambda m: tf.random.normal([2, 3], mean=m,
                                                                       dtype=m.dtype)),
        None, uniform((2, 1)), kernels=("RandomStandardNormal",), note=NOTE),
    Row("random.normal/defaults", seeded(lambda: tf.random.normal([5], seed=1)), None,
        nothing, kernels=("RandomStandardNormal",), grad=False, note=NOTE),
    Row("random.uniform/minval_maxval",
        seeded(lambda lo, hi: tf.random.uniform([4, 3], lo, hi, dtype=lo.dtype, seed=2)),
        None, uniform((3,), (4, 1), low=-1.0, high=1.0), kernels=("RandomUniform",),
        note=NOTE),
    Row("random.uniform/python_bounds",
        seeded(lambda: tf.random.uniform([6], -3.0, 5.0, dtype=tf.float64, seed=4)), None,
        nothing, kernels=("RandomUniform",), grad=False, note=NOTE),
    Row("random.uniform/int", seeded(lambda: tf.random.uniform([3, 5], 2, 9, tf.int64)),
        None, nothing, kernels=("RandomUniformInt",), grad=False, note=NOTE),
    Row("random.truncated_normal/mean_stddev",
        seeded(lambda m, s: tf.random.truncated_normal([5, 2], m, s, dtype=m.dtype, seed=7)),
        None, uniform((2,), (), low=0.5, high=2.0), kernels=("TruncatedNormal",), note=NOTE),
    Row("random.categorical", seeded(lambda x: tf.random.categorical(x, 6, seed=3)), None,
        logits((3, 4)), kernels=("Multinomial",), grad=False, note=NOTE),
    Row("random.categorical/int32",
        seeded(lambda x: tf.random.categorical(x, 2, dtype=tf.int32)), None, logits((2, 5)),
        kernels=("Multinomial",), grad=False, note=NOTE),
    Row("random.shuffle", seeded(lambda x: tf.random.shuffle(x, seed=9)), None,
        uniform((5, 3)), kernels=("RandomShuffle",), note=NOTE),
    Row("random.shuffle/vector", seeded(lambda x: tf.random.shuffle(x)), None,
        uniform((7,)), kernels=("RandomShuffle",), note=NOTE),
    Row("generator/normal",
        lambda m, s: tf.random.Generator.from_seed(11).normal([4, 2], m, s, dtype=m.dtype),
        None, uniform((2,), (2,), low=0.5, high=2.0), kernels=("RandomStandardNormal",),
        note=NOTE),
    Row("generator/uniform",
        lambda lo, hi: tf.random.Generator.from_seed(12).uniform([3], lo, hi, dtype=lo.dtype),
        None, uniform((), (), low=-1.0, high=1.0), kernels=("RandomUniform",), note=NOTE),
    Row("generator/truncated_normal",
        lambda m: tf.random.Generator.from_seed(13).truncated_normal([6], m, dtype=m.dtype),
        None, uniform(()), kernels=("TruncatedNormal",), note=NOTE),
    Row("dropout", seeded(lambda x: tf.nn.dropout(x, 0.4, seed=3)), None, uniform((4, 5)),
        kernels=("Dropout",), note=NOTE, scalar=True),
    Row("dropout/noise_shape",
        seeded(lambda x: tf.nn.dropout(x, rate=0.5, noise_shape=[1, 5], seed=1)), None,
        uniform((3, 5)), kernels=("Dropout",), note=NOTE),
    Row("dropout/noise_shape_none_dims",
        seeded(lambda x: tf.nn.dropout(x, 0.25, noise_shape=[None, 1, None])), None,
        uniform((2, 3, 4)), kernels=("Dropout",), note=NOTE),
    # stateless: the seed alone decides the numbers, so no set_seed is needed
    Row("random.stateless_normal/mean_stddev",
        lambda m, s: tf.random.stateless_normal([3, 4], [1, 2], m, s, dtype=m.dtype), None,
        uniform((4,), (), low=0.5, high=2.0), kernels=("StatelessRandomStandardNormal",),
        note=NOTE),
    Row("random.stateless_uniform/minval_maxval",
        lambda lo, hi: tf.random.stateless_uniform([4, 3], [3, 4], lo, hi, dtype=lo.dtype),
        None, uniform((3,), (4, 1), low=-1.0, high=1.0), kernels=("StatelessRandomUniform",),
        note=NOTE),
    Row("random.stateless_uniform/int",
        lambda: tf.random.stateless_uniform([3, 5], [5, 6], 2, 9, tf.int64), None, nothing,
        kernels=("StatelessRandomUniformInt",), grad=False, note=NOTE),
    Row("random.stateless_truncated_normal/mean_stddev",
        lambda m, s: tf.random.stateless_truncated_normal([5, 2], [7, 8], m, s, m.dtype),
        None, uniform((2,), (), low=0.5, high=2.0), kernels=("StatelessTruncatedNormal",),
        note=NOTE),
    Row("random.stateless_categorical",
        lambda x: tf.random.stateless_categorical(x, 6, seed=[9, 10]), None, logits((3, 4)),
        kernels=("StatelessMultinomial",), grad=False, note=NOTE),
    Row("random.stateless_poisson",
        lambda lam: tf.random.stateless_poisson([2, 3], [1, 2], lam), None,
        uniform((3,), low=0.5, high=9.0), kernels=("StatelessRandomPoisson",), grad=False,
        note=NOTE),
    Row("random.stateless_binomial",
        lambda p: tf.random.stateless_binomial([4, 2], [3, 4], 12.0, p, tf.float32), None,
        uniform((2,), low=0.1, high=0.9), kernels=("StatelessRandomBinomial",), grad=False,
        note=NOTE),
]

