"""BiasAdd over the last axis that no convolution absorbs becomes Add
(function/rules/convolution.py): a Conv1D's bias (a reshape stands between it and its
convolution), a transposed convolution's, a dense layer's. The Add then joins its
neighbours' fused elementwise region; values equal the eager ones bit for bit, gradients
equal central finite differences in float64. NCHW biases keep BiasAdd."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit

RNG = np.random.default_rng(3)


pytestmark = pytest.mark.usefixtures("optimizer_defaults")


def ops_of(cf) -> list:
    return [n.op for n in cf.optimized_graph.get_operations() if n.op != "Placeholder"]


X1 = tf.constant(RNG.standard_normal((2, 9, 3)))
W1 = tf.constant(RNG.standard_normal((2, 3, 4)))
B = tf.constant(RNG.standard_normal(4))


def conv1d_relu(x, w, b):
    # (relu: a fused tanh differs from NumPy's by an ulp, with or without this rule)
    return tf.nn.relu(tf.nn.bias_add(tf.nn.conv1d(x, w, 1, "VALID", dilations=2), b))


def transposed_relu(x, w, b):
    y = tf.nn.conv2d_transpose(x, w, [2, 8, 10, 4], 2, "SAME")
    return tf.nn.relu(tf.nn.bias_add(y, b))


X2 = tf.constant(RNG.standard_normal((2, 4, 5, 3)))
W2 = tf.constant(RNG.standard_normal((3, 3, 4, 3)))


@pytest.mark.parametrize("fn, args", [(conv1d_relu, (X1, W1, B)),
                                      (transposed_relu, (X2, W2, B))])
def test_bias_add_becomes_add_and_equals_eager(fn, args):
    cf = tf.function(fn).get_concrete_function(*args)
    ops = ops_of(cf)
    assert "BiasAdd" not in ops, cf.optimized_graph
    eager = fn(*args).numpy()
    traced = tf.function(fn)
    for _ in range(4):  # (and once its fused loops are compiled)
        np.testing.assert_array_equal(traced(*args).numpy(), eager)
        jit.wait_compiled()


def test_gradients_against_finite_differences():
    """d sum(v * conv1d_relu(x, w, b)) / d(x, w, b), traced, along random directions."""
    v = tf.constant(RNG.standard_normal((2, 7, 4)))

    @tf.function
    def grads(x, w, b):
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            loss = tf.reduce_sum(v * conv1d_relu(x, w, b))
        return tape.gradient(loss, [x, w, b])

    def loss(x, w, b):
        return float(tf.reduce_sum(v * conv1d_relu(x, w, b)))

    got = grads(X1, W1, B)
    args = [X1.numpy(), W1.numpy(), B.numpy()]
    eps = 1e-6
    for k, g in enumerate(got):
        d = RNG.standard_normal(args[k].shape)
        plus, minus = list(args), list(args)
        plus[k], minus[k] = args[k] + eps * d, args[k] - eps * d
        fd = (loss(*map(tf.constant, plus)) - loss(*map(tf.constant, minus))) / (2 * eps)
        np.testing.assert_allclose(np.sum(g.numpy() * d), fd, rtol=1e-7, atol=1e-8)


def test_nchw_bias_keeps_bias_add():
    x = tf.constant(RNG.standard_normal((2, 4, 3, 5)))

    def f(x, b):
        return tf.nn.relu(tf.nn.bias_add(x, b, data_format="NCHW"))
    cf = tf.function(f).get_concrete_function(x, B)
    assert "BiasAdd" in ops_of(cf)
    np.testing.assert_array_equal(tf.function(f)(x, B).numpy(), f(x, B).numpy())
