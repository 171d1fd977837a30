"""ONNX lowerings beyond the zoo's needs: gather with batch_dims (any axis), SYMMETRIC
and REFLECT padding, getitem with a traced index or index arrays (RavelMultiIndex), and
tf.where's positions form; each against NumPy through onnxruntime. And the names of the
outputs' dynamic dims: an input's named dim where the output's dim is that dim."""
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


def test_output_dims_named_only_where_they_are_the_input_dim(tmp_path):
    def f(x, y):
        h = tf.matmul(x, y)  # [batch, 5]
        flat = tf.reshape(h, [-1])  # batch * 5: a dim of its own
        twice = tf.concat([h, h], axis=0)  # 2 * batch
        _, looped = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.tanh(a)),
                                  [0, h])  # the loop keeps the batch dim
        return h, flat, twice, looped, tf.transpose(h), tf.where(h > 0.0)
    path = os.path.join(tmp_path, "m.onnx")
    tf.onnx.export(tf.function(f), path, [tf.TensorSpec([None, 4]), tf.TensorSpec([4, 5])])
    model = onnx.load(path)
    dims = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in model.graph.output]
    assert dims == [["batch", 5], [0], [0, 5], ["batch", 5], [5, "batch"], [0, 2]]  # 0: unnamed
    x = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    y = np.random.RandomState(3).randn(4, 5).astype(np.float32)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {i.name: v for i, v in zip(model.graph.input, (x, y))})
    h = x @ y
    np.testing.assert_allclose(got[3], np.tanh(np.tanh(np.tanh(h))), rtol=1e-5, atol=1e-6)
    assert got[1].shape == (15,) and got[2].shape == (6, 5)


def test_range_with_bounds_known_when_traced_and_when_run(tmp_path):
    # tf.range(3) keeps its bounds as attributes (Range), tf.range(n) with a traced n as
    # inputs (RangeV2): both lower to ONNX's Range
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = _run(tmp_path, lambda x: x * tf.cast(tf.range(3), tf.float32)
                  + tf.range(0.5, 2.0, 0.5), [tf.TensorSpec([None, 3])], x)
    np.testing.assert_allclose(got, x * np.arange(3) + np.arange(0.5, 2.0, 0.5), rtol=1e-6)
    (got,) = _run(tmp_path, lambda n: tf.range(n) * 2, [tf.TensorSpec([], tf.int32)],
                  np.array(4, np.int32))
    np.testing.assert_array_equal(got, [0, 2, 4, 6])
