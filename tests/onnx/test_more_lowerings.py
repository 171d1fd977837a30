"""ONNX lowerings beyond the zoo's needs: gather with batch_dims (any axis), SYMMETRIC
and REFLECT padding, getitem with a traced index or index arrays (RavelMultiIndex), and
tf.where's positions form; each against NumPy through onnxruntime."""
import os

import numpy as np
import pytest

import tapeflow as tf

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run(tmp_path, fn, sig, *feeds):
    path = os.path.join(tmp_path, "m.onnx")
    tf.onnx.export(tf.function(fn), path, sig)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds)))


def _take_batched(params, indices, axis, b):
    """TF's gather with batch_dims in NumPy: a loop over the batch entries."""
    if b == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([_take_batched(p, i, axis - 1, b - 1) for p, i in zip(params, indices)])


@pytest.mark.parametrize("axis,batch_dims", [(1, 1), (2, 1), (3, 1), (2, 2), (-1, -1)])
def test_gather_batch_dims(tmp_path, axis, batch_dims):
    rng = np.random.RandomState(0)
    params = rng.randn(3, 4, 5, 6).astype(np.float32)
    idx_shape = (3, 4, 2) if batch_dims in (2, -1) else (3, 2, 2)
    size = params.shape[axis]
    indices = rng.randint(0, size, idx_shape).astype(np.int32)
    sig = [tf.TensorSpec([None, 4, 5, 6]), tf.TensorSpec([None, *idx_shape[1:]], tf.int32)]
    (got,) = _run(tmp_path, lambda p, i: tf.gather(p, i, axis=axis, batch_dims=batch_dims),
                  sig, params, indices)
    b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    want = _take_batched(params, indices, axis % params.ndim, b)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        got, tf.gather(params, indices, axis=axis, batch_dims=batch_dims).numpy())


@pytest.mark.parametrize("mode", ["SYMMETRIC", "REFLECT"])
def test_mirror_padding(tmp_path, mode):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    paddings = [[0, 0], [2, 1], [3, 0]] if mode == "SYMMETRIC" else [[1, 0], [2, 1], [0, 3]]
    (got,) = _run(tmp_path, lambda a: tf.pad(a, paddings, mode=mode),
                  [tf.TensorSpec([None, 3, 4])], x)
    np.testing.assert_array_equal(got, np.pad(x, paddings, mode=mode.lower()))


def test_traced_index_and_index_arrays(tmp_path):
    def f(x, i):
        return x[i], x[:, tf.constant([2, -1, 0])], tf.where(x > 0.5)
    x = np.random.RandomState(1).rand(3, 4).astype(np.float32)
    for i in (2, -3):
        got = _run(tmp_path, f, [tf.TensorSpec([None, 4]), tf.TensorSpec([], tf.int32)],
                   x, np.asarray(i, np.int32))
        want = (x[i], x[:, [2, -1, 0]], np.argwhere(x > 0.5))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
