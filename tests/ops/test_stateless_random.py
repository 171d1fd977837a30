"""Stateless random ops: the seed pair alone decides the numbers, in every call, process
and traced function; the distributions are right; bad seeds raise naming the op."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf

DRAWS = {
    "normal": lambda seed: tf.random.stateless_normal([3, 2], seed=seed),
    "uniform": lambda seed: tf.random.stateless_uniform([5], seed=seed, minval=-1.0,
                                                        maxval=2.0, dtype=tf.float64),
    "uniform_int": lambda seed: tf.random.stateless_uniform([6], seed=seed, maxval=100,
                                                            dtype=tf.int32),
    "truncated": lambda seed: tf.random.stateless_truncated_normal([4], seed=seed),
    "categorical": lambda seed: tf.random.stateless_categorical(
        tf.math.log([[0.2, 0.3, 0.5]]), 6, seed=seed),
    "poisson": lambda seed: tf.random.stateless_poisson([8], seed=seed, lam=4.0),
    "binomial": lambda seed: tf.random.stateless_binomial([8], seed=seed, counts=20.0,
                                                          probs=[0.3] * 8),
    "split": lambda seed: tf.random.split(seed, 3),
    "fold_in": lambda seed: tf.random.fold_in(seed, 7),
}


@pytest.mark.parametrize("kind", sorted(DRAWS))
def test_same_seed_same_numbers_other_seed_other_numbers(kind):
    draw = DRAWS[kind]
    first = draw([1, 2]).numpy()
    tf.random.set_seed(99)  # neither the global seed nor stateful draws matter
    tf.random.normal([10])
    np.testing.assert_array_equal(draw([1, 2]).numpy(), first)
    np.testing.assert_array_equal(draw(np.array([1, 2], np.int32)).numpy(), first)
    if kind not in ("split", "fold_in"):  # their seeds are of the given seed's dtype
        np.testing.assert_array_equal(draw(tf.constant([1, 2], tf.int64)).numpy(), first)
    assert not np.array_equal(draw([1, 3]).numpy(), first)
    assert not np.array_equal(draw([2, 1]).numpy(), first)
    tf.random.set_seed(None)


@pytest.mark.parametrize("kind", sorted(DRAWS))
def test_inside_a_function_with_a_constant_or_a_tensor_seed(kind):
    draw = DRAWS[kind]
    want = draw([5, 6]).numpy()

    @tf.function
    def constant_seed():
        return draw([5, 6])

    @tf.function
    def tensor_seed(seed):
        return draw(seed)

    for _ in range(2):
        np.testing.assert_array_equal(constant_seed().numpy(), want)
        np.testing.assert_array_equal(tensor_seed(tf.constant([5, 6])).numpy(), want)
    # the seed is an input of the traced graph: a new value, new numbers, no retrace
    other = tensor_seed(tf.constant([5, 7])).numpy()
    np.testing.assert_array_equal(other, draw([5, 7]).numpy())
    assert tensor_seed.experimental_get_tracing_count() == 1


def test_the_same_numbers_in_another_process():
    code = ("import tapeflow as tf; print(tf.random.stateless_normal([4], seed=[11, 12])"
            ".numpy().tobytes().hex())")
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()[-1]
    here = tf.random.stateless_normal([4], seed=[11, 12]).numpy()
    assert bytes.fromhex(out) == here.tobytes()


def test_distributions():
    n = 200_000
    z = tf.random.stateless_normal([n], seed=[1, 1], mean=3.0, stddev=2.0,
                                   dtype=tf.float64).numpy()
    assert abs(z.mean() - 3.0) < 0.02 and abs(z.std() - 2.0) < 0.02
    u = tf.random.stateless_uniform([n], seed=[2, 2], minval=-2.0, maxval=6.0).numpy()
    assert u.min() >= -2.0 and u.max() < 6.0 and abs(u.mean() - 2.0) < 0.03
    t = tf.random.stateless_truncated_normal([n], seed=[3, 3], stddev=0.5).numpy()
    assert np.abs(t).max() <= 1.0 and abs(t.std() - 0.5 * 0.8796) < 0.01
    i = tf.random.stateless_uniform([n], seed=[4, 4], minval=3, maxval=7,
                                    dtype=tf.int64).numpy()
    assert i.dtype == np.int64 and set(np.unique(i)) == {3, 4, 5, 6}
    full = tf.random.stateless_uniform([1000], seed=[5, 5], minval=None, maxval=None,
                                       dtype=tf.int32).numpy()
    assert full.min() < -2 ** 30 and full.max() > 2 ** 30  # the whole int32 range
    c = tf.random.stateless_categorical(tf.math.log([[0.1, 0.6, 0.3]]), n, seed=[6, 6],
                                        dtype=tf.int32).numpy()
    assert c.shape == (1, n) and c.dtype == np.int32
    np.testing.assert_allclose(np.bincount(c[0]) / n, [0.1, 0.6, 0.3], atol=0.01)


def test_gradients_flow_to_mean_and_stddev():
    mean, std = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        z = tf.random.stateless_normal([1000], seed=[7, 7], mean=mean, stddev=std)
        loss = tf.reduce_sum(z)
    g_mean, g_std = tape.gradient(loss, [mean, std])
    unit = tf.random.stateless_normal([1000], seed=[7, 7]).numpy()
    assert g_mean.numpy() == 1000.0
    np.testing.assert_allclose(g_std.numpy(), unit.sum(), rtol=1e-5)


def test_empty_and_scalar_shapes():
    assert tf.random.stateless_normal([], seed=[1, 2]).shape == ()
    assert tf.random.stateless_uniform([0, 3], seed=[1, 2]).shape == (0, 3)
    assert tf.random.stateless_categorical(tf.zeros([2, 3]), 0, seed=[1, 2]).shape == (2, 0)


@pytest.mark.parametrize("seed", [[1], [1, 2, 3], [[1, 2]], [1.0, 2.0], 5])
def test_bad_seeds_raise_naming_the_op(seed):
    with pytest.raises(tf.errors.InvalidArgumentError, match="stateless_normal.*seed.*shape"):
        tf.random.stateless_normal([2], seed=seed)


def test_bad_arguments_raise_like_tensorflow():
    with pytest.raises(tf.errors.InvalidArgumentError, match="maxval"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="floating"):
        tf.random.stateless_normal([2], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="logits"):
        tf.random.stateless_categorical([1.0, 2.0], 3, seed=[1, 2])


def test_poisson_and_binomial_distributions_and_dtypes():
    n = 100_000
    p = tf.random.stateless_poisson([n, 2], seed=[8, 8], lam=[1.5, 20.0]).numpy()
    assert p.dtype == np.int32 and p.min() >= 0
    np.testing.assert_allclose(p.mean(axis=0), [1.5, 20.0], rtol=0.02)
    np.testing.assert_allclose(p.var(axis=0), [1.5, 20.0], rtol=0.05)
    pf = tf.random.stateless_poisson([3], seed=[8, 8], lam=2.0, dtype=tf.float64)
    assert pf.dtype == tf.float64
    b = tf.random.stateless_binomial([n], seed=[9, 9], counts=10.0, probs=0.25,
                                     output_dtype=tf.int64).numpy()
    assert b.dtype == np.int64 and b.min() >= 0 and b.max() <= 10
    assert abs(b.mean() - 2.5) < 0.03 and abs(b.var() - 1.875) < 0.05
    with pytest.raises(tf.errors.InvalidArgumentError, match="stateless_poisson.*lam"):
        tf.random.stateless_poisson([2, 3], seed=[1, 2], lam=[1.0, 2.0])


def test_split_and_fold_in_give_seeds_of_independent_streams():
    seeds = tf.random.split(tf.constant([1, 2], tf.int32), 4)
    assert seeds.shape == (4, 2) and seeds.dtype == tf.int32
    assert len({tuple(s) for s in seeds.numpy().tolist()}) == 4
    assert tf.random.split([1, 2], 0).shape == (0, 2)
    draws = [tf.random.stateless_normal([1000], seed=s).numpy() for s in seeds]
    assert abs(np.corrcoef(draws[0], draws[1])[0, 1]) < 0.1
    folded = tf.random.fold_in([1, 2], 5)
    assert folded.dtype == tf.int32 and folded.numpy()[1] == 5  # TF's layout: [draw, data]
    assert folded.numpy()[0] == tf.random.fold_in([1, 2], 6).numpy()[0]
    assert tf.random.experimental.stateless_split is tf.random.split
    assert tf.random.experimental.stateless_fold_in is tf.random.fold_in
    with pytest.raises(tf.errors.InvalidArgumentError, match="fold_in.*data"):
        tf.random.fold_in([1, 2], [1, 2])
