"""Tensor's Python operators are the validating public ops (installed by ops/operators.py):
same values, same conversion of Python operands, same errors."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import tapeflow as tf

BINARY = [(operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
          (operator.truediv, np.true_divide), (operator.floordiv, np.floor_divide),
          (operator.mod, np.mod), (operator.pow, np.power)]


@pytest.mark.parametrize("op, ref", BINARY)
def test_binary_operators_both_ways_with_python_operands(op, ref):
    a = np.array([1.5, -2.0, 3.0])
    x = tf.constant(a, dtype=tf.float64)
    for got, want in [(op(x, 2.0), ref(a, 2.0)), (op(2.0, x), ref(2.0, a)),
                      (op(x, x), ref(a, a))]:
        assert got.dtype is tf.float64
        np.testing.assert_allclose(got.numpy(), want)


def test_comparisons_are_elementwise_and_logical_operators_work_on_bools():
    x = tf.constant([1, 2, 3])
    np.testing.assert_array_equal((x == 2).numpy(), [False, True, False])
    np.testing.assert_array_equal((x != 2).numpy(), [True, False, True])
    np.testing.assert_array_equal((x < 2).numpy(), [True, False, False])
    np.testing.assert_array_equal((x >= 2).numpy(), [False, True, True])
    b = x > 1
    np.testing.assert_array_equal((b & (x < 3)).numpy(), [False, True, False])
    np.testing.assert_array_equal((~b).numpy(), [True, False, False])
    np.testing.assert_array_equal((b ^ True).numpy(), [True, False, False])


def test_unary_matmul_indexing_and_iteration():
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((-m).numpy(), -m.numpy())
    np.testing.assert_array_equal(abs(-m).numpy(), m.numpy())
    assert (+m) is m
    np.testing.assert_array_equal((m @ m).numpy(), m.numpy() @ m.numpy())
    np.testing.assert_array_equal(m[1, ::-1].numpy(), [4.0, 3.0])
    assert [r.numpy().tolist() for r in m] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError, match="scalar"):
        iter(tf.constant(1.0))


def test_operators_raise_the_public_ops_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="add"):
        tf.constant(True) + tf.constant(False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same dtype"):
        tf.constant(1.0) + tf.constant(1)


def test_operators_are_differentiable():
    x = tf.constant(3.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x - 2.0 / x
    assert tape.gradient(y, x).numpy() == pytest.approx(2 * 3.0 + 2.0 / 9.0)
