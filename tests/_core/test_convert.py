"""convert_to_tensor and its conversion registry (tf.register_tensor_conversion_function):
types whose conversion needs ops register it from the layer that defines those ops."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import convert


class Meters:
    def __init__(self, value):
        self.value = value


@pytest.fixture
def registry_restored():
    saved = list(convert._CONVERSIONS)
    yield
    convert._CONVERSIONS[:] = saved


def test_a_registered_type_converts_everywhere_a_tensor_is_taken(registry_restored):
    tf.register_tensor_conversion_function(
        Meters, lambda value, dtype=None, name=None, as_ref=False: value.value)
    assert tf.convert_to_tensor(Meters(2.5)).numpy() == 2.5
    assert tf.convert_to_tensor(Meters([1, 2]), dtype=tf.int64).dtype is tf.int64
    np.testing.assert_allclose(tf.add(Meters([1.0, 2.0]), 1.0).numpy(), [2.0, 3.0])


def test_lower_priority_first_and_not_implemented_passes_on(registry_restored):
    seen = []

    def declines(value, dtype=None, name=None, as_ref=False):
        seen.append("declines")
        return NotImplemented

    tf.register_tensor_conversion_function(
        Meters, lambda value, dtype=None, name=None, as_ref=False: value.value * 10)
    tf.register_tensor_conversion_function(Meters, declines, priority=1)
    assert tf.convert_to_tensor(Meters(1.0)).numpy() == 10.0
    assert seen == ["declines"]


def test_bad_registrations_raise_type_error():
    with pytest.raises(TypeError, match="base_type"):
        tf.register_tensor_conversion_function("Meters", lambda v, **k: v)
    with pytest.raises(TypeError, match="callable"):
        tf.register_tensor_conversion_function(Meters, 3)


def test_lists_of_tensors_stack_and_numbers_take_their_dtype():
    t = tf.constant(2.0, dtype=tf.float64)
    out = tf.convert_to_tensor([[t, 1.0], [3, t]])
    assert out.dtype is tf.float64
    np.testing.assert_array_equal(out.numpy(), [[2.0, 1.0], [3.0, 2.0]])
    assert tf.convert_to_tensor([1, 2]).dtype is tf.int32  # plain values: the default


def test_indexed_slices_densify_and_are_tensor_like():
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 2]),
                         tf.constant([3, 2]))
    np.testing.assert_array_equal(tf.convert_to_tensor(s).numpy(),
                                  [[0, 0], [0, 0], [4, 6]])
    assert tf.is_tensor(s) and tf.is_tensor(tf.Variable(1.0)) and not tf.is_tensor(1.0)
    tf.dispose(s)
    assert s.values.is_disposed and s.indices.is_disposed
