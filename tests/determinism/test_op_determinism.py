"""config.experimental.enable_op_determinism as TensorFlow's: random ops need a seed
(RuntimeError otherwise), tf.data's parallel map keeps its order even when told not to."""
import threading
import time

import numpy as np
import pytest

import tapeflow as tf


@pytest.fixture
def determinism():
    tf.random.set_seed(None)
    tf.config.experimental.enable_op_determinism()
    yield
    tf.config.experimental.disable_op_determinism()
    tf.random.set_seed(None)


def test_it_is_off_by_default_and_switches():
    assert not tf.config.experimental.is_op_determinism_enabled()
    tf.random.normal([2])  # no seed: fine
    tf.config.experimental.enable_op_determinism()
    try:
        assert tf.config.experimental.is_op_determinism_enabled()
    finally:
        tf.config.experimental.disable_op_determinism()
    assert not tf.config.experimental.is_op_determinism_enabled()


@pytest.mark.parametrize("op", [lambda: tf.random.normal([2]), lambda: tf.random.uniform([2]),
                                lambda: tf.random.truncated_normal([2]),
                                lambda: tf.random.shuffle(tf.range(4))])
def test_random_ops_without_any_seed_raise(determinism, op):
    with pytest.raises(RuntimeError, match="require a seed to be set when determinism"):
        op()
    with pytest.raises(RuntimeError, match="require a seed"):
        tf.function(op)()
    with pytest.raises(RuntimeError, match="require a seed"):
        tf.data.Dataset.range(5).shuffle(5)


def test_a_seed_makes_them_run_and_repeat(determinism):
    a = tf.random.normal([3], seed=4).numpy()  # an op seed alone is enough
    tf.random.set_seed(7)
    b = tf.random.uniform([3]).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(tf.random.uniform([3]).numpy(), b)
    assert a.shape == (3,)


def test_parallel_map_keeps_order_even_when_told_not_to(determinism):
    lock = threading.Lock()
    order = []

    def slow_first(x):
        def work(v):
            time.sleep(0.05 if int(v) == 0 else 0.0)  # element 0 finishes last
            with lock:
                order.append(int(v))
            return v
        return tf.py_function(work, [x], tf.int64)
    ds = tf.data.Dataset.range(6).map(slow_first, num_parallel_calls=4, deterministic=False)
    assert [int(v) for v in ds] == list(range(6))
    assert order[0] != 0  # the elements did finish out of order
