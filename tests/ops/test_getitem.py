"""`Tensor.__getitem__` against NumPy on the same array (values, shapes, dtypes), its
derivatives (finite differences, reverse and forward, order 2), the IndexedSlices
gradient of gather (API §3.3) and variables indexed like tensors."""
import gc

import numpy as np
import pytest

import tapeflow as tf

A = np.arange(60.0).reshape(3, 4, 5) * 0.5 - 7.0
M34 = (np.arange(12).reshape(3, 4) % 3) == 1
M4 = np.array([True, False, True, True])
M3 = np.array([False, True, True])

# Keys valid for a (3, 4, 5) array, each compared with NumPy's own result.
KEYS = [
    0, -1, 2, (1, 2), (-1, -2, -3), (0, 0, 0),
    slice(None), slice(1, None), slice(None, 2), slice(-2, None), slice(None, None, -1),
    slice(None, None, 2), slice(2, 0, -1), slice(-10, 10), slice(5, 9), slice(2, 1),
    (slice(None), 1), (slice(None), slice(None), -1), (slice(1, 3), slice(None, None, -2), 2),
    (Ellipsis, 1), (0, Ellipsis), (Ellipsis,), (1, Ellipsis, slice(None, None, -3)), (),
    None, (None, 1), (slice(None), None, 2), (Ellipsis, None), (None, Ellipsis, None),
    (1, None, slice(3, None), None),
    # integer arrays (gather semantics, NumPy placement rules)
    [0, 2], [2, -1, 2, 0], [[0, 1], [2, 2]], np.array([1, 0]), np.array(-1),
    (slice(None), [3, 0, 0]), (Ellipsis, [4, -5]), ([0, 2], [1, 3]), ([0, 2], slice(None), [1, 4]),
    (slice(None), [0, 3], [1, 4]), (0, slice(None), [1, 2]), (1, [0, 1], [2, 3]),
    ([[0], [2]], [1, 2, 3]), ([0, 1], None, [0, 1]), ([0, 1], Ellipsis, [0, 1]),
    (slice(1, None), [2, 0], None), (np.int64(1), [0]),
    # booleans (boolean_mask semantics)
    M3, (slice(None), M4), M34, (M34, [0, 4, 4, 1]), (M3, slice(None), [1, 2]),
    (Ellipsis, np.array([True, False, False, True, False])), (M3, [1, 2]),
    True, (Ellipsis, False), (slice(None), True, 0),
    [],
]


def _ids(keys):
    return [repr(k).replace("\n", "")[:40] for k in keys]


@pytest.mark.parametrize("key", KEYS, ids=_ids(KEYS))
def test_matches_numpy_float(key):
    x = tf.constant(A)
    got = x[key]
    want = A[key]
    assert tuple(got.shape) == want.shape
    assert got.dtype is tf.float64
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("key", KEYS, ids=_ids(KEYS))
def test_matches_numpy_int32_and_tensor_keys(key):
    a = A.astype(np.int32)
    x = tf.constant(a)
    tkey = tuple(_as_tensor(k) for k in key) if isinstance(key, tuple) else _as_tensor(key)
    got = x[tkey]
    assert got.dtype is tf.int32
    np.testing.assert_array_equal(got.numpy(), a[key])


def _as_tensor(k):
    """Array-like keys as tensors (int64 and bool), the rest unchanged."""
    if isinstance(k, np.ndarray) or (isinstance(k, list) and k):
        arr = np.asarray(k)
        return tf.constant(arr.astype(np.int64) if arr.dtype.kind in "iu" else arr)
    return k


def test_scalar_int_tensor_and_bounds_as_tensors():
    x = tf.constant(A)
    np.testing.assert_array_equal(x[tf.constant(2)].numpy(), A[2])
    np.testing.assert_array_equal(x[:, tf.constant(-1, tf.int64)].numpy(), A[:, -1])
    i, j = tf.constant(1), tf.constant(3)
    np.testing.assert_array_equal(x[i:j, ::tf.constant(-1)].numpy(), A[1:3, ::-1])


def test_newaxis_alias_and_scalars():
    assert tf.newaxis is None
    s = tf.constant(3.5)
    assert s[None].shape == (1,) and s[...].numpy() == 3.5
    assert s[tf.newaxis, tf.newaxis].shape == (1, 1)


def test_variables_index_like_tensors_and_are_watched():
    v = tf.Variable(A)
    np.testing.assert_array_equal(v[1, ::-1].numpy(), A[1, ::-1])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v[0, 1:3] * 2.0)
    g = tape.gradient(y, v)
    want = np.zeros_like(A)
    want[0, 1:3] = 2.0
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(), want)


def test_iteration_and_len_use_axis_zero():
    x = tf.constant(A[:, 0, 0])
    assert len(x) == 3
    assert [float(t) for t in x] == list(A[:, 0, 0])


# --------------------------------------------------------------------------- gradients

GRAD_KEYS = [
    1, (slice(None), -1), (slice(2, 0, -1), slice(None, None, 2), 3), (Ellipsis, None, 1),
    [2, 0, 2], (slice(None), [0, 3, 3], [1, 4, 1]), (0, slice(None), [1, 2]), M3,
    (slice(None), M4), (M34, [0, 4, 4, 1]), (1, None, slice(3, None), None),
    ([0, 1], None, [0, 1]),
]


@pytest.mark.parametrize("key", GRAD_KEYS, ids=_ids(GRAD_KEYS))
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_gradients_through_getitem(key, mode):
    x0 = np.random.default_rng(0).standard_normal(A.shape)
    # A smooth function of the selection so second derivatives are non-trivial.
    tf.test.check_gradients(lambda x: tf.sin(x[key]) * x[key], [x0], order=2, modes=(mode,))


def _dense(g):
    return tf.convert_to_tensor(g)


@pytest.mark.parametrize("key", [[2, 0, 2], (M3,), 1, (slice(None), [1, 1])])
def test_second_order_through_densified_gradient(key):
    """Reverse-over-reverse when the first gradient may be an IndexedSlices."""
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(A.shape)
    u = tf.constant(rng.standard_normal(A[key].shape))

    def first(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x[key])
        return _dense(tape.gradient(y, x, output_gradients=u))

    tf.test.check_gradients(first, [x0], order=2, modes=("rev", "fwd"))


def test_gather_gradient_is_indexed_slices():
    params = tf.constant(np.arange(12.0).reshape(4, 3))
    indices = tf.constant([[3, 0], [3, 1]])
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.gather(params, indices) * 2.0
    g = tape.gradient(y, params)
    assert isinstance(g, tf.IndexedSlices)
    assert tuple(g.values.shape) == (4, 3)
    np.testing.assert_array_equal(g.indices.numpy(), [3, 0, 3, 1])
    np.testing.assert_array_equal(g.dense_shape.numpy(), [4, 3])
    np.testing.assert_array_equal(g.values.numpy(), np.full((4, 3), 2.0))
    want = np.zeros((4, 3))
    np.add.at(want, [3, 0, 3, 1], 2.0)  # duplicate indices add up
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(), want)


def test_gather_along_other_axes_gives_dense_gradient():
    params = tf.constant(np.arange(12.0).reshape(3, 4))
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.gather(params, [1, 1, 3], axis=1)
    g = tape.gradient(y, params)
    assert isinstance(g, tf.Tensor)
    np.testing.assert_array_equal(g.numpy(), np.tile([0.0, 2.0, 0.0, 1.0], (3, 1)))


def test_getitem_with_index_tensor_gives_sparse_gradient_rows():
    x = tf.constant(A)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[tf.constant([2, 2, 0])]
    g = tape.gradient(y, x)
    want = np.zeros_like(A)
    np.add.at(want, [2, 2, 0], 1.0)
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(), want)


def test_batched_forward_through_getitem():
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal(A.shape))
    tangents = rng.standard_normal((4,) + A.shape)
    key = (slice(None), [0, 3, 3], [1, 4, 1])
    with tf.autodiff.ForwardAccumulator(x, tf.constant(tangents), use_batch=True) as acc:
        y = x[key] * 3.0
    got = acc.jvp(y).numpy()
    want = np.stack([t[key] * 3.0 for t in tangents])
    np.testing.assert_allclose(got, want, rtol=1e-12)


EMPTY_CASES = [  # (shape of x, function of x), each selecting from a zero-size tensor
    ((2, 0), lambda x: tf.gather(x, [1, 0, 1])),  # IndexedSlices of zero-width rows
    ((0, 3), lambda x: tf.gather(x, tf.zeros([0], tf.int32))),
    ((2, 3, 0), lambda x: tf.gather(x, [2, 0], axis=1)),
    ((2, 3, 0), lambda x: tf.gather(x, [[2, 0], [1, 1]], axis=1, batch_dims=1)),
    ((2, 0), lambda x: x[[True, False]]),
    ((2, 0, 3), lambda x: x[[1, 0], :, [0, 2]]),
    ((0, 3), lambda x: x[tf.zeros([0], tf.int32)]),
    ((3, 0), lambda x: x[tf.constant([2, 2])]),
]


@pytest.mark.parametrize("shape,fn", EMPTY_CASES, ids=[str(i) for i in range(len(EMPTY_CASES))])
def test_gradients_of_selections_from_empty_tensors(shape, fn):
    x = tf.Variable(tf.zeros(shape, tf.float64))
    with tf.GradientTape() as tape:
        y = fn(x)
    g = tf.convert_to_tensor(tape.gradient(y, x, unconnected_gradients="zero"))
    assert g.shape == shape and g.dtype == tf.float64
    with tf.autodiff.ForwardAccumulator(x, tf.ones(shape, tf.float64)) as acc:
        y = fn(x)
    assert acc.jvp(y, unconnected_gradients="zero").shape == y.shape


def test_indexed_slices_densify_and_variable_scatter_sub():
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                         tf.constant([2, 0, 2]), [3, 2])
    np.testing.assert_array_equal(tf.convert_to_tensor(s).numpy(),
                                  [[3.0, 4.0], [0.0, 0.0], [6.0, 8.0]])
    v = tf.Variable(np.ones((3, 2), np.float32))
    v.scatter_sub(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([1]), [3, 2]))
    np.testing.assert_array_equal(v.numpy(), [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])


def test_failed_getitem_leaks_nothing():
    x = tf.constant(A)
    keys = [(0, 9), [0, 5], (M4,), (slice(None), tf.constant([0.5]))]
    gc.collect()
    before = tf.memory()["num_tensors"]
    for key in keys:
        with pytest.raises(tf.errors.InvalidArgumentError):
            x[key]
    gc.collect()
    assert tf.memory()["num_tensors"] == before


def test_tensorflow_documented_examples():
    """Examples from TensorFlow's documentation of the indexing ops, with its answers."""
    t = tf.constant([[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]], [[5, 5, 5], [6, 6, 6]]])
    eq = np.testing.assert_array_equal
    eq(tf.strided_slice(t, [1, 0, 0], [2, 1, 3], [1, 1, 1]).numpy(), [[[3, 3, 3]]])
    eq(tf.strided_slice(t, [1, 0, 0], [2, 2, 3], [1, 1, 1]).numpy(),
       [[[3, 3, 3], [4, 4, 4]]])
    eq(tf.strided_slice(t, [1, -1, 0], [2, -3, 3], [1, -1, 1]).numpy(),
       [[[4, 4, 4], [3, 3, 3]]])
    eq(tf.slice(t, [1, 0, 0], [1, 1, 3]).numpy(), [[[3, 3, 3]]])
    eq(tf.slice(t, [1, 0, 0], [2, 1, 3]).numpy(), [[[3, 3, 3]], [[5, 5, 5]]])
    eq(tf.scatter_nd([[4], [3], [1], [7]], [9, 10, 11, 12], [8]).numpy(),
       [0, 11, 0, 10, 9, 0, 0, 12])
    eq(tf.tensor_scatter_nd_update([0] * 8, [[1], [3], [4], [7]], [9, 10, 11, 12]).numpy(),
       [0, 9, 0, 10, 11, 0, 0, 12])
    eq(tf.gather_nd([[0, 1], [2, 3]], [[1], [0]]).numpy(),
       [[2, 3], [0, 1]])
    eq(tf.gather_nd([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], [[1], [0]], batch_dims=1)
       .numpy(), [[2, 3], [4, 5]])
    eq(tf.gather([[1, 2, 3], [4, 5, 6]], [[0, 2], [1, 0]], axis=1, batch_dims=1).numpy(),
       [[1, 3], [5, 4]])
    w = tf.where([True, False, False, True])
    assert w.dtype is tf.int64
    eq(w.numpy(), [[0], [3]])
    eq(tf.where([True, False], [1, 2], [10, 20]).numpy(), [1, 20])
    eq(tf.boolean_mask([[1, 2], [3, 4], [5, 6]], [True, False, True]).numpy(),
       [[1, 2], [5, 6]])
