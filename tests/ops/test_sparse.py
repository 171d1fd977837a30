"""tf.sparse: SparseTensor and its ops against TensorFlow 2.21's values (each expected value
was printed by the TensorFlow snippet in the comment above it, run in a TF 2.21 venv),
gradients against central differences in float64, traced use and tf.data use."""
import numpy as np
import pytest

import tapeflow as tf

# sp = tf.sparse.SparseTensor(indices=[[0, 1], [2, 3]], values=[1.0, 2.0], dense_shape=[3, 4])
IDX, VALS, SHAPE = [[0, 1], [2, 3]], [1.0, 2.0], [3, 4]


def _sp():
    return tf.sparse.SparseTensor(indices=IDX, values=VALS, dense_shape=SHAPE)


def _parts(sp):
    return sp.indices.numpy().tolist(), sp.values.numpy().tolist(), sp.dense_shape.numpy().tolist()


def test_properties_and_repr():
    sp = _sp()
    assert sp.shape == tf.TensorShape([3, 4]) and sp.get_shape().as_list() == [3, 4]
    assert sp.dtype is tf.float32
    assert sp.indices.dtype is tf.int64 and sp.dense_shape.dtype is tf.int64
    assert tf.is_tensor(sp) and not isinstance(sp, tf.Tensor)
    # repr(sp) in TF 2.21
    assert repr(sp) == (
        "SparseTensor(indices=tf.Tensor(\n[[0 1]\n [2 3]], shape=(2, 2), dtype=int64), "
        "values=tf.Tensor([1. 2.], shape=(2,), dtype=float32), "
        "dense_shape=tf.Tensor([3 4], shape=(2,), dtype=int64))")
    # tf.sparse.SparseTensor([[0]], [1], [2]).values.dtype -> int32
    assert tf.sparse.SparseTensor([[0]], [1], [2]).dtype is tf.int32
    # SparseTensor([[0]], [1., 2.], [2]) -> ValueError; SparseTensor([0], [1.], [2]) too
    with pytest.raises(ValueError):
        tf.sparse.SparseTensor([[0]], [1.0, 2.0], [2])
    with pytest.raises(ValueError):
        tf.sparse.SparseTensor([0], [1.0], [2])
    # tf.SparseTensorSpec([3, 4], tf.float32); tf.type_spec_from_value(sp)
    assert repr(tf.SparseTensorSpec([3, 4], tf.float32)) == \
        "SparseTensorSpec(TensorShape([3, 4]), tf.float32)"
    assert sp._type_spec == tf.SparseTensorSpec([3, 4], tf.float32)
    assert tf.SparseTensorSpec([None, 4]).is_compatible_with(sp)


def test_to_dense_from_dense():
    # tf.sparse.to_dense(sp, default_value=-1.)
    np.testing.assert_array_equal(tf.sparse.to_dense(_sp(), default_value=-1.0).numpy(),
                                  [[-1, 1, -1, -1], [-1, -1, -1, -1], [-1, -1, -1, 2]])
    # unordered: InvalidArgumentError "... is out of order"; validate_indices=False: [2 1 0]
    bad = tf.sparse.SparseTensor([[1], [0]], [1, 2], [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of order"):
        tf.sparse.to_dense(bad)
    np.testing.assert_array_equal(tf.sparse.to_dense(bad, validate_indices=False), [2, 1, 0])
    # repeated index, validate_indices=False -> [0 2 0] (the last value)
    rep = tf.sparse.SparseTensor([[1], [1]], [1, 2], [3])
    np.testing.assert_array_equal(tf.sparse.to_dense(rep, validate_indices=False), [0, 2, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.sparse.to_dense(tf.sparse.SparseTensor([[5]], [1], [3]))
    empty = tf.sparse.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0]), [2, 2])
    np.testing.assert_array_equal(tf.sparse.to_dense(empty), np.zeros([2, 2]))
    # tf.sparse.from_dense([[0., 1.], [2., 0.]]); from_dense(tf.constant([True, False]))
    d = tf.sparse.from_dense([[0.0, 1.0], [2.0, 0.0]])
    assert _parts(d) == ([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
    b = tf.sparse.from_dense(tf.constant([True, False]))
    assert _parts(b) == ([[0]], [True], [2])


def test_matmul():
    sp = _sp()
    # tf.sparse.sparse_dense_matmul(sp, tf.ones([4, 2]))
    np.testing.assert_array_equal(tf.sparse.sparse_dense_matmul(sp, tf.ones([4, 2])),
                                  [[1, 1], [0, 0], [2, 2]])
    # ... (sp, tf.ones([3, 2]), adjoint_a=True)
    np.testing.assert_array_equal(
        tf.sparse.sparse_dense_matmul(sp, tf.ones([3, 2]), adjoint_a=True),
        [[0, 0], [1, 1], [0, 0], [2, 2]])
    # ... (sp, tf.ones([2, 4]), adjoint_b=True)
    np.testing.assert_array_equal(
        tf.sparse.sparse_dense_matmul(sp, tf.ones([2, 4]), adjoint_b=True),
        [[1, 1], [0, 0], [2, 2]])
    # ... (tf.ones([2, 3]), tf.sparse.SparseTensor([[0, 1]], [2.], [3, 4]))
    np.testing.assert_array_equal(
        tf.sparse.sparse_dense_matmul(tf.ones([2, 3]),
                                      tf.sparse.SparseTensor([[0, 1]], [2.0], [3, 4])),
        [[0, 2, 0, 0], [0, 2, 0, 0]])


def test_add_and_operators():
    sp = _sp()
    s2 = tf.sparse.SparseTensor([[0, 1], [1, 0]], [5.0, 6.0], [3, 4])
    # tf.sparse.add(sp, s2)
    assert _parts(tf.sparse.add(sp, s2)) == ([[0, 1], [1, 0], [2, 3]], [6.0, 6.0, 2.0], [3, 4])
    # tf.sparse.add(sp, tf.ones([3, 4]))
    np.testing.assert_array_equal(tf.sparse.add(sp, tf.ones([3, 4])),
                                  [[1, 2, 1, 1], [1, 1, 1, 1], [1, 1, 1, 3]])
    # add(sp, SparseTensor([[0, 1]], [-0.5], [3, 4]), threshold=0.6)
    small = tf.sparse.SparseTensor([[0, 1]], [-0.5], [3, 4])
    assert _parts(tf.sparse.add(sp, small, threshold=0.6)) == ([[2, 3]], [2.0], [3, 4])
    # sp * 2.0 -> values [2. 4.]; sp * tf.ones([3, 4]) -> values [1. 2.]; sp + sp: TypeError
    assert _parts(sp * 2.0)[1] == [2.0, 4.0]
    assert _parts(sp * tf.reshape(tf.range(12.0), [3, 4]))[1] == [1.0, 22.0]
    assert _parts(sp / 2.0)[1] == [0.5, 1.0]
    with pytest.raises(TypeError):
        sp + sp  # noqa: B018
    # with_values
    assert _parts(sp.with_values(sp.values * 3))[1] == [3.0, 6.0]


def test_reduce_sum():
    sp = _sp()
    # tf.sparse.reduce_sum(sp), (sp, axis=1), (sp, axis=1, keepdims=True), (sp, axis=[0, 1])
    assert float(tf.sparse.reduce_sum(sp)) == 3.0
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp, axis=1), [1, 0, 2])
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp, axis=1, keepdims=True),
                                  [[1], [0], [2]])
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp, axis=0, keepdims=True),
                                  [[0, 1, 0, 2]])
    assert float(tf.sparse.reduce_sum(sp, axis=[0, 1])) == 3.0
    # (sp, axis=-1, output_is_sparse=True)
    out = tf.sparse.reduce_sum(sp, axis=-1, output_is_sparse=True)
    assert _parts(out) == ([[0], [2]], [1.0, 2.0], [3])
    # sp3 = SparseTensor([[0,0,1],[1,1,0],[1,2,1]], [1.,2.,3.], [2,3,2]); axis=[0, 2]; axis=1
    sp3 = tf.sparse.SparseTensor([[0, 0, 1], [1, 1, 0], [1, 2, 1]], [1.0, 2.0, 3.0], [2, 3, 2])
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp3, axis=[0, 2]), [1, 2, 3])
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp3, axis=1), [[0, 1], [2, 3]])


def test_reorder_retain_reshape_transpose_slice_concat():
    sp = _sp()
    un = tf.sparse.SparseTensor([[2, 3], [0, 1]], [2.0, 1.0], [3, 4])
    assert _parts(tf.sparse.reorder(un)) == (IDX, VALS, SHAPE)
    assert _parts(tf.sparse.retain(sp, [False, True])) == ([[2, 3]], [2.0], [3, 4])
    # tf.sparse.reshape(sp, [4, 3]); (sp, [-1])
    assert _parts(tf.sparse.reshape(sp, [4, 3])) == ([[0, 1], [3, 2]], VALS, [4, 3])
    assert _parts(tf.sparse.reshape(sp, [-1])) == ([[1], [11]], VALS, [12])
    assert tf.sparse.reshape(sp, [-1]).shape.as_list() == [12]
    # tf.sparse.transpose(sp)
    assert _parts(tf.sparse.transpose(sp)) == ([[1, 0], [3, 2]], VALS, [4, 3])
    sp3 = tf.sparse.SparseTensor([[0, 0, 1], [1, 1, 0], [1, 2, 1]], [1.0, 2.0, 3.0], [2, 3, 2])
    # tf.sparse.transpose(sp3, [2, 0, 1]); tf.sparse.reshape(sp3, [3, -1])
    assert _parts(tf.sparse.transpose(sp3, [2, 0, 1])) == (
        [[0, 1, 1], [1, 0, 0], [1, 1, 2]], [2.0, 1.0, 3.0], [2, 2, 3])
    assert _parts(tf.sparse.reshape(sp3, [3, -1])) == (
        [[0, 1], [2, 0], [2, 3]], [1.0, 2.0, 3.0], [3, 4])
    # tf.sparse.slice(sp, [1, 0], [2, 4]); tf.sparse.slice(sp3, [0, 1, 0], [2, 5, 1])
    assert _parts(tf.sparse.slice(sp, [1, 0], [2, 4])) == ([[1, 3]], [2.0], [2, 4])
    assert _parts(tf.sparse.slice(sp3, [0, 1, 0], [2, 5, 1])) == ([[1, 0, 0]], [2.0],
                                                                   [2, 2, 1])
    # tf.sparse.concat(1, [sp, s2])
    s2 = tf.sparse.SparseTensor([[0, 1], [1, 0]], [5.0, 6.0], [3, 4])
    assert _parts(tf.sparse.concat(1, [sp, s2])) == (
        [[0, 1], [0, 5], [1, 4], [2, 3]], [1.0, 5.0, 6.0, 2.0], [3, 8])


def _numeric_grad(f, x, eps=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _check_grad(fn, *args):
    """fn(*tensors) -> scalar: tape gradients vs central differences, per argument."""
    tensors = [tf.constant(np.array(a, np.float64)) for a in args]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        y = fn(*tensors)
    grads = tape.gradient(y, tensors)
    for k, a in enumerate(args):
        def f(v, k=k):
            vals = [tf.constant(np.array(b, np.float64)) for b in args]
            vals[k] = tf.constant(v)
            return float(fn(*vals))
        np.testing.assert_allclose(grads[k].numpy(), _numeric_grad(f, a), rtol=1e-6,
                                   atol=1e-8)


def test_gradients():
    w = tf.constant(np.arange(12.0).reshape(3, 4) / 7.0)

    def dense_of(v):
        return tf.reduce_sum(tf.sparse.to_dense(tf.sparse.SparseTensor(IDX, v, SHAPE)) ** 2 * w)

    _check_grad(dense_of, [1.0, 2.0])

    # TF: gradient of sum(to_dense(sp(v)) * range(12)) wrt v -> [1. 11.]
    v = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(tf.sparse.to_dense(tf.sparse.SparseTensor(IDX, v, SHAPE))
                          * tf.reshape(tf.range(12.0), [3, 4]))
    np.testing.assert_array_equal(tape.gradient(y, v), [1.0, 11.0])

    def matmul(v, b):
        out = tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor(IDX, v, SHAPE), b)
        return tf.reduce_sum(tf.sin(out))

    _check_grad(matmul, [1.0, 2.0], np.arange(8.0).reshape(4, 2) / 5)

    def matmul_adj(v, b):
        out = tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor(IDX, v, SHAPE), b,
                                            adjoint_a=True, adjoint_b=True)
        return tf.reduce_sum(tf.sin(out))

    _check_grad(matmul_adj, [0.5, -2.0], np.arange(6.0).reshape(2, 3) / 5)

    def rsum(v):
        s = tf.sparse.reduce_sum(tf.sparse.SparseTensor(IDX, v, SHAPE), axis=1)
        return tf.reduce_sum(s * s * tf.constant([1.0, 2.0, 3.0], tf.float64))

    _check_grad(rsum, [1.0, 2.0])

    def added(v, d):
        s = tf.sparse.add(tf.sparse.SparseTensor(IDX, v, SHAPE),
                          tf.sparse.SparseTensor([[0, 1]], v[:1] * 3.0, SHAPE))
        return tf.reduce_sum(tf.sparse.to_dense(s) ** 2) + tf.reduce_sum(
            tf.sparse.add(s, d) ** 2)

    _check_grad(added, [1.0, 2.0], np.ones([3, 4]))


def test_traced_and_retracing():
    traces = []

    @tf.function
    def f(s):
        traces.append((s.shape.as_list(), s.indices.shape.as_list()))
        return tf.sparse.reduce_sum(s, axis=1), s * 2.0

    total, doubled = f(_sp())
    np.testing.assert_array_equal(total, [1, 0, 2])
    assert isinstance(doubled, tf.SparseTensor) and _parts(doubled)[1] == [2.0, 4.0]
    assert doubled.shape.as_list() == [3, 4]
    f(tf.sparse.SparseTensor([[1, 1]], [3.0], [3, 4]))   # same spec: no retrace (as TF)
    f(tf.sparse.SparseTensor([[1, 1]], [3.0], [2, 4]))   # another dense shape: retrace
    # TF prints "trace (3, 4) (None, 2)" then "trace (2, 4) (None, 2)": 2 traces
    assert traces == [([3, 4], [None, 2]), ([2, 4], [None, 2])]

    @tf.function(input_signature=[tf.SparseTensorSpec([None, 4], tf.float32)])
    def g(s):
        return tf.sparse.to_dense(s), tf.sparse.sparse_dense_matmul(s, tf.ones([4, 2]))

    dense, prod = g(_sp())
    np.testing.assert_array_equal(dense, tf.sparse.to_dense(_sp()))
    np.testing.assert_array_equal(prod, [[1, 1], [0, 0], [2, 2]])
    dense, _ = g(tf.sparse.SparseTensor([[1, 1]], [3.0], [2, 4]))
    np.testing.assert_array_equal(dense, [[0, 0, 0, 0], [0, 3, 0, 0]])
    assert g.experimental_get_tracing_count() == 1

    @tf.function
    def h(s, d):
        return (tf.sparse.add(s, s), tf.sparse.reorder(s), tf.sparse.from_dense(d),
                tf.sparse.transpose(s))

    added, _, dense_sp, transposed = h(_sp(), tf.constant([[0.0, 1.0], [2.0, 0.0]]))
    assert _parts(added) == (IDX, [2.0, 4.0], SHAPE)
    assert _parts(dense_sp) == ([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
    assert _parts(transposed) == ([[1, 0], [3, 2]], VALS, [4, 3])

    # gradient through a traced function taking a SparseTensor
    v = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(f(tf.sparse.SparseTensor(IDX, v, SHAPE))[0] * [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(y, v), [1.0, 3.0])


def test_dataset_slices_map_batch():
    # ds = tf.data.Dataset.from_tensor_slices(sp); ds.element_spec; list(ds)
    ds = tf.data.Dataset.from_tensor_slices(_sp())
    assert ds.element_spec == tf.SparseTensorSpec([4], tf.float32)
    rows = list(ds)
    assert [_parts(r) for r in rows] == [([[1]], [1.0], [4]), ([], [], [4]),
                                         ([[3]], [2.0], [4])]
    # ds.batch(2).element_spec -> SparseTensorSpec(TensorShape([None, 4]), tf.float32)
    batched = ds.batch(2)
    assert batched.element_spec == tf.SparseTensorSpec([None, 4], tf.float32)
    assert [_parts(b) for b in batched] == [([[0, 1]], [1.0], [2, 4]),
                                            ([[0, 3]], [2.0], [1, 4])]
    # list(ds.map(lambda s: tf.sparse.to_dense(s)).as_numpy_iterator())
    dense = list(ds.map(lambda s: tf.sparse.to_dense(s)).as_numpy_iterator())
    np.testing.assert_array_equal(dense, [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])
    doubled = ds.map(lambda s: s.with_values(s.values * 2))
    assert doubled.element_spec == tf.SparseTensorSpec([4], tf.float32)
    assert [_parts(r)[1] for r in doubled] == [[2.0], [], [4.0]]


def test_traced_with_unknown_dense_shape():
    @tf.function(input_signature=[tf.SparseTensorSpec([None, None], tf.float32)])
    def f(s):
        return (tf.sparse.to_dense(s), tf.sparse.sparse_dense_matmul(s, tf.ones([4, 2])),
                tf.sparse.reduce_sum(s, axis=0), tf.sparse.reshape(s, [-1]),
                tf.sparse.add(s, tf.sparse.to_dense(s)))

    dense, prod, column_sums, flat, doubled = f(_sp())
    np.testing.assert_array_equal(dense, [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])
    np.testing.assert_array_equal(prod, [[1, 1], [0, 0], [2, 2]])
    np.testing.assert_array_equal(column_sums, [0, 1, 0, 2])
    assert _parts(flat) == ([[1], [11]], VALS, [12])
    np.testing.assert_array_equal(doubled, 2 * dense.numpy())
