"""x[i] with a traced integer tensor i on a tensor whose first dim is known only when run
(a signature's None): negative indices wrap and out-of-range ones raise, as eagerly."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def test_tensor_index_on_an_unknown_first_dim():
    f = tf.function(lambda x, i: x[i], input_signature=[tf.TensorSpec([None, 3]),
                                                          tf.TensorSpec([], tf.int32)])
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(f(tf.constant(x), tf.constant(2)).numpy(), x[2])
    np.testing.assert_array_equal(f(tf.constant(x), tf.constant(-1)).numpy(), x[-1])
    np.testing.assert_array_equal(f(tf.constant(x[:2]), tf.constant(-2)).numpy(), x[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds.*size 4"):
        f(tf.constant(x), tf.constant(4))
    g = tf.function(lambda x, i: x[i], input_signature=[tf.TensorSpec([None, 3]),
                                                          tf.TensorSpec([None], tf.int32)])
    np.testing.assert_array_equal(g(tf.constant(x), tf.constant([0, -1, 1])).numpy(),
                                  x[[0, -1, 1]])
