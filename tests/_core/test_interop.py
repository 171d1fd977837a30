"""Interop (API §8.7): NumPy's array protocol and DLPack both ways. PyTorch and JAX rows are
generated only where those packages are installed (they are not test dependencies)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tapeflow as tf


def _producers():
    rows = [("numpy", lambda a: a.copy(), np.asarray)]
    if importlib.util.find_spec("torch"):
        import torch
        rows.append(("torch", torch.from_numpy, lambda t: t.numpy()))
    if importlib.util.find_spec("jax"):
        import jax.numpy as jnp
        rows.append(("jax", jnp.asarray, np.asarray))
    return rows


@pytest.mark.parametrize("name,make,to_numpy",
                         [pytest.param(*row, id=row[0]) for row in _producers()])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_dlpack_round_trip(name, make, to_numpy, dtype):
    src = np.arange(12, dtype=dtype).reshape(3, 4)
    obj = make(src)
    t = tf.from_dlpack(obj)
    assert t.dtype.as_numpy_dtype == dtype and t.shape == [3, 4]
    np.testing.assert_array_equal((t + t).numpy(), src + src)
    back = np.from_dlpack(t)
    np.testing.assert_array_equal(back, src)
    if name == "numpy":
        assert np.shares_memory(np.asarray(t), obj)  # no copy


def test_array_protocol_for_tensors_and_variables():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    v = tf.Variable([1.0, -1.0])
    np.testing.assert_array_equal(np.asarray(t), [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(v), [1.0, -1.0])
    assert float(np.sum(t)) == 10.0  # NumPy functions accept tensors
    s = tf.constant(2.5)
    assert np.asarray(s).shape == () and float(s) == 2.5


def test_dlpack_of_zero_d_and_empty():
    for src in (np.array(3.0), np.zeros((0, 3), np.float32)):
        t = tf.from_dlpack(src)
        assert t.shape == list(src.shape)
        np.testing.assert_array_equal(np.from_dlpack(t), src)


def test_from_dlpack_rejects_non_producers():
    with pytest.raises((TypeError, AttributeError, tf.errors.InvalidArgumentError)):
        tf.from_dlpack([1.0, 2.0])
