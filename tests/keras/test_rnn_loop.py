"""Keras RNNs traced (as in `fit`) run their steps in a `while_loop` over one traced step,
as Keras's default `unroll=False`; `unroll=True` unrolls them. Both give the eager
(Python loop) values and gradients, and symbolic shapes keep a static time length."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def _ops(f, *args) -> list:
    return [n.op for n in f.get_concrete_function(*args).graph.get_operations()]


@pytest.mark.parametrize("layer", [
    lambda **k: tf.keras.layers.LSTM(3, return_sequences=True, **k),
    lambda **k: tf.keras.layers.GRU(3, **k),
    lambda **k: tf.keras.layers.SimpleRNN(3, return_sequences=True, go_backwards=True, **k),
])
@pytest.mark.parametrize("unroll", [False, True])
def test_traced_loop_equals_the_eager_steps_with_gradients(layer, unroll):
    tf.keras.backend.clear_session()
    tf.keras.utils.set_random_seed(3)
    rnn = layer(unroll=unroll, dtype="float64")
    x = tf.constant(np.random.default_rng(0).standard_normal((2, 7, 4)), tf.float64)
    rnn.build(x.shape)

    def loss_and_grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.square(rnn(x)))
        return loss, tape.gradient(loss, [x, *rnn.trainable_variables])

    eager = loss_and_grads(x)
    traced = tf.function(loss_and_grads)
    got = traced(x)
    ops = _ops(traced, x)
    assert ("While" in ops) == (not unroll)
    np.testing.assert_allclose(got[0].numpy(), eager[0].numpy(), rtol=1e-12)
    for g, e in zip(got[1], eager[1]):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


def test_symbolic_shapes_keep_the_static_time_length():
    x = tf.keras.Input((10, 3))
    assert tf.keras.layers.LSTM(4, return_sequences=True)(x).shape == (None, 10, 4)
    both = tf.keras.layers.Bidirectional(tf.keras.layers.GRU(4, return_sequences=True))
    assert both(x).shape == (None, 10, 8)
    assert tf.keras.layers.GRU(4)(x).shape == (None, 4)
    free = tf.keras.Input((None, 3))
    assert tf.keras.layers.LSTM(4, return_sequences=True)(free).shape == (None, None, 4)


def test_masked_traced_loop_equals_eager():
    tf.keras.backend.clear_session()
    tf.keras.utils.set_random_seed(5)
    model = tf.keras.Sequential([tf.keras.Input((6,), dtype="int32"),
                                 tf.keras.layers.Embedding(9, 4, mask_zero=True),
                                 tf.keras.layers.LSTM(3)])
    ids = tf.constant([[1, 2, 3, 0, 0, 0], [4, 5, 6, 7, 8, 1]])
    eager = model(ids).numpy()
    traced = tf.function(lambda t: model(t))
    np.testing.assert_allclose(traced(ids).numpy(), eager, rtol=1e-6, atol=1e-7)
    assert "While" in _ops(traced, ids)
