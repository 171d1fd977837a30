"""tensor_scatter_nd_max/min: values (duplicates combine with each other and the tensor),
TensorFlow's gradient where values tie (shared equally), and errors."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def test_values_with_duplicates_slices_and_ints():
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_max([1.0, 5.0, 3.0], [[0], [1], [0]], [4.0, 2.0, 7.0]).numpy(),
        [7.0, 5.0, 3.0])
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_min([1.0, 5.0, 3.0], [[0], [1], [1]], [4.0, 2.0, 0.5]).numpy(),
        [1.0, 0.5, 3.0])
    out = tf.tensor_scatter_nd_min([[1, 2], [3, 4]], [[1]], [[0, 9]])  # a whole row
    assert out.dtype == tf.int32 and out.numpy().tolist() == [[1, 2], [0, 4]]
    empty = tf.tensor_scatter_nd_max([1.0, 2.0], tf.zeros([0, 1], tf.int32), tf.zeros([0]))
    assert empty.numpy().tolist() == [1.0, 2.0]


def test_ties_share_the_gradient_as_tensorflow_does():
    # the values TensorFlow 2.21 gives for this case (checked by hand)
    x, u = tf.constant([1.0, 5.0, 3.0]), tf.constant([5.0, 2.0, 5.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = tf.tensor_scatter_nd_max(x, [[1], [0], [1]], u)
    gx, gu = tape.gradient(y, [x, u])
    np.testing.assert_array_equal(y.numpy(), [2.0, 5.0, 3.0])
    np.testing.assert_allclose(gx.numpy(), [0.0, 1 / 3, 1.0])
    np.testing.assert_allclose(gu.numpy(), [1 / 3, 1.0, 1 / 3])
    with tf.autodiff.ForwardAccumulator([x, u], [tf.ones([3]), tf.ones([3])]) as acc:
        y = tf.tensor_scatter_nd_max(x, [[1], [0], [1]], u)
    # a tangent is the transpose of the VJP: each tied contributor's share
    np.testing.assert_allclose(acc.jvp(y).numpy(), [1.0, 1.0, 1.0])


def test_errors_name_the_op_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"TensorScatterMax.*\[5\].*\[2\]"):
        tf.tensor_scatter_nd_max([1.0, 2.0], [[5]], [1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorScatterMin.*dtype"):
        tf.tensor_scatter_nd_min([1.0, 2.0], [[0]], tf.constant([1], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorScatterMin.*updates"):
        tf.tensor_scatter_nd_min([1.0, 2.0], [[0]], [1.0, 2.0])
