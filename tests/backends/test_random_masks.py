"""Dropout's mask from raw generator bits (backends/numpy/random.py `_keep`): the mask
`Generator.random(shape) >= rate` would give for the same seed, without making floats."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends.numpy import random as backend_random


def _reference(seed, shape, kind, rate):
    k0, k1, stream, count = seed
    bits = np.random.Philox(key=np.array([k0, k1], np.uint64),
                            counter=np.array([0, 0, stream, count], np.uint64))
    return np.random.Generator(bits).random(shape, dtype=kind) >= rate


@pytest.mark.parametrize("kind", [np.float32, np.float64])
@pytest.mark.parametrize("rate", [1e-9, 0.1, 0.5, 1 / 3, 0.9, 1 - 1e-9])
def test_mask_equals_the_uniform_draw(kind, rate):
    for shape in [(), (1,), (7,), (3, 5), (2, 64, 33)]:
        seed = (12345, 6, 2, 9)
        got = backend_random._keep(seed, shape, kind, rate)
        np.testing.assert_array_equal(got, _reference(seed, shape, kind, rate))


def test_dropout_values_gradient_and_bits():
    x = tf.constant(np.random.default_rng(0).standard_normal((64, 48)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, 0.25, seed=3)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_array_equal(y.numpy()[kept], x.numpy()[kept] * (1 / 0.75))
    # x -> dropout(x) is linear: its gradient is the mask, scaled
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), kept * (1 / 0.75))
    tf.random.set_seed(5)
    first = tf.nn.dropout(x, 0.25).numpy()
    tf.random.set_seed(5)
    np.testing.assert_array_equal(tf.nn.dropout(x, 0.25).numpy(), first)
