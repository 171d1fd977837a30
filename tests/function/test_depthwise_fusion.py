"""Depthwise convolutions fuse like dense ones (function/rules/convolution.py): bias and
activation into FusedConv2D (the depthwise loop applies them), the filter gradient with
the bias gradient into Conv2DBackpropFilterWithBias; values equal the unfused graph's."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.function import optimizer

RNG = np.random.default_rng(5)


pytestmark = pytest.mark.usefixtures("optimizer_defaults")


@pytest.mark.parametrize("multiplier, strides", [(1, 1), (2, 2)])
def test_depthwise_bias_activation_and_bias_gradient_fuse(multiplier, strides):
    x = tf.constant(RNG.standard_normal((4, 12, 11, 6)).astype(np.float32))
    w = tf.Variable(RNG.standard_normal((3, 3, 6, multiplier)).astype(np.float32))
    b = tf.Variable(RNG.standard_normal(6 * multiplier).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            y = tf.nn.relu(tf.nn.bias_add(tf.nn.depthwise_conv2d(
                x, w, [1, strides, strides, 1], "SAME"), b))
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, [w, b])

    fused = tf.function(step)
    ops = [n.op for n in fused.get_concrete_function(x).optimized_graph.get_operations()]
    assert "FusedConv2D" in ops and "Conv2DBackpropFilterWithBias" in ops, ops
    got = [t.numpy() for t in fused(x)]
    optimizer.set_experimental_options({"remapping": False})
    plain = [t.numpy() for t in tf.function(step)(x)]
    for a, p in zip(got, plain):
        np.testing.assert_allclose(a, p, rtol=1e-5, atol=1e-4)
