"""tf.RaggedTensor and tf.ragged against TensorFlow 2.21's values (each expected value was
printed by the TensorFlow snippet in the comment above it, run in a TF 2.21 venv),
gradients through the flat values against central differences in float64, traced use."""
import numpy as np
import pytest

import tapeflow as tf


def _rt():
    # rt = tf.ragged.constant([[1, 2, 3], [], [4, 5]])
    return tf.ragged.constant([[1, 2, 3], [], [4, 5]])


def _fr():
    return tf.ragged.constant([[1.0, 2.0, 3.0], [], [4.0, 5.0]])


def test_constant_and_properties():
    rt = _rt()
    # repr(rt); rt.shape, rt.dtype, rt.ragged_rank, rt.row_splits.dtype
    assert repr(rt) == "<tf.RaggedTensor [[1, 2, 3], [], [4, 5]]>"
    assert rt.shape.as_list() == [3, None] and rt.dtype is tf.int32
    assert rt.ragged_rank == 1 and rt.row_splits.dtype is tf.int64
    assert rt.values.numpy().tolist() == [1, 2, 3, 4, 5]
    assert rt.flat_values.numpy().tolist() == [1, 2, 3, 4, 5]
    # rt.row_lengths(), rt.nrows(), rt.row_splits, rt.value_rowids(), rt.to_list()
    assert rt.row_lengths().numpy().tolist() == [3, 0, 2]
    assert rt.row_lengths().dtype is tf.int64
    assert int(rt.nrows()) == 3
    assert rt.row_splits.numpy().tolist() == [0, 3, 3, 5]
    assert rt.value_rowids().numpy().tolist() == [0, 0, 0, 2, 2]
    assert rt.to_list() == [[1, 2, 3], [], [4, 5]]
    assert rt.bounding_shape().numpy().tolist() == [3, 3]
    # tf.ragged.constant([[1., 2.], [3.]]).dtype; ([[1, 2], [3]], dtype=tf.float64)
    assert tf.ragged.constant([[1.0, 2.0], [3.0]]).dtype is tf.float32
    assert repr(tf.ragged.constant([[1, 2], [3]], dtype=tf.float64)) == \
        "<tf.RaggedTensor [[1.0, 2.0], [3.0]]>"
    # r3 = tf.ragged.constant([[[1, 2], [3]], [], [[4]]]) -> (3, None, None) 2
    r3 = tf.ragged.constant([[[1, 2], [3]], [], [[4]]])
    assert r3.shape.as_list() == [3, None, None] and r3.ragged_rank == 2
    assert r3.to_list() == [[[1, 2], [3]], [], [[4]]]
    assert repr(r3) == "<tf.RaggedTensor [[[1, 2], [3]], [], [[4]]]>"
    # tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1) -> (2, None, 2) 1 (3, 2)
    r3b = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert r3b.shape.as_list() == [2, None, 2] and r3b.ragged_rank == 1
    assert r3b.values.shape.as_list() == [3, 2]
    # rt.numpy() -> object array of rows
    rows = rt.numpy()
    assert rows.dtype == object and [r.tolist() for r in rows] == [[1, 2, 3], [], [4, 5]]
    assert tf.is_tensor(rt)
    with pytest.raises(ValueError):
        tf.RaggedTensor([1], [0, 1])


def test_factories():
    # tf.RaggedTensor.from_row_lengths([1, 2, 3, 4], [2, 0, 2]) -> [[1, 2], [], [3, 4]]
    assert tf.RaggedTensor.from_row_lengths([1, 2, 3, 4], [2, 0, 2]).to_list() == \
        [[1, 2], [], [3, 4]]
    assert tf.RaggedTensor.from_row_splits([1, 2, 3, 4], [0, 2, 2, 4]).to_list() == \
        [[1, 2], [], [3, 4]]
    # from_value_rowids([1, 2, 3, 4], [0, 0, 2, 2], nrows=4) -> [[1, 2], [], [3, 4], []]
    assert tf.RaggedTensor.from_value_rowids([1, 2, 3, 4], [0, 0, 2, 2], nrows=4).to_list() \
        == [[1, 2], [], [3, 4], []]
    assert tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2]).to_list() == \
        [[1, 2], [], [3]]
    # from_tensor([[1, 2, 0], [3, 0, 0]], padding=0) -> [[1, 2], [3]]; lengths=[1, 3]
    assert tf.RaggedTensor.from_tensor([[1, 2, 0], [3, 0, 0]], padding=0).to_list() == \
        [[1, 2], [3]]
    assert tf.RaggedTensor.from_tensor([[1, 2, 0], [3, 0, 0]], lengths=[1, 3]).to_list() == \
        [[1], [3, 0, 0]]
    assert tf.RaggedTensor.from_tensor([[1, 2], [3, 4]]).to_list() == [[1, 2], [3, 4]]
    # row_splits dtype follows the given lengths: int32 -> int32
    rt = tf.RaggedTensor.from_row_lengths(tf.constant([1.0, 2.0, 3.0]),
                                          tf.constant([1, 2], tf.int32))
    assert rt.row_splits.dtype is tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2])
    nested = tf.RaggedTensor.from_nested_row_lengths([1, 2, 3], [[2, 0], [1, 2]])
    assert nested.to_list() == [[[1], [2, 3]], []]


def test_to_tensor():
    rt = _rt()
    # rt.to_tensor(), rt.to_tensor(default_value=-1, shape=[2, 2]), rt.to_tensor(shape=[4, 4])
    np.testing.assert_array_equal(rt.to_tensor(), [[1, 2, 3], [0, 0, 0], [4, 5, 0]])
    np.testing.assert_array_equal(rt.to_tensor(default_value=-1, shape=[2, 2]),
                                  [[1, 2], [-1, -1]])
    np.testing.assert_array_equal(rt.to_tensor(shape=[4, 4]),
                                  [[1, 2, 3, 0], [0, 0, 0, 0], [4, 5, 0, 0], [0, 0, 0, 0]])
    r3 = tf.ragged.constant([[[1, 2], [3]], [], [[4]]])
    np.testing.assert_array_equal(r3.to_tensor(), [[[1, 2], [3, 0]], [[0, 0], [0, 0]],
                                                   [[4, 0], [0, 0]]])


def test_reductions():
    fr = _fr()
    # for f in [reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod]:
    #     f(fr, axis=1), f(fr, axis=0), f(fr)
    f32 = np.finfo(np.float32)
    expected = {
        tf.reduce_sum: ([6, 0, 9], [5, 7, 3], 15),
        tf.reduce_mean: ([2, np.nan, 4.5], [2.5, 3.5, 3], 3),
        tf.reduce_max: ([3, f32.min, 5], [4, 5, 3], 5),
        tf.reduce_min: ([1, f32.max, 4], [1, 2, 3], 1),
        tf.reduce_prod: ([6, 1, 20], [4, 10, 3], 120),
    }
    for fn, (rows, columns, total) in expected.items():
        np.testing.assert_array_equal(fn(fr, axis=1), np.float32(rows))
        np.testing.assert_array_equal(fn(fr, axis=0), np.float32(columns))
        assert float(fn(fr)) == total
    # tf.reduce_sum(rt, axis=1), tf.reduce_max(rt, axis=1), tf.reduce_mean(rt, axis=1): ints
    rt = _rt()
    assert tf.reduce_sum(rt, axis=1).numpy().tolist() == [6, 0, 9]
    assert tf.reduce_max(rt, axis=1).numpy().tolist() == [3, -2147483648, 5]
    mean = tf.reduce_mean(rt, axis=1)
    assert mean.dtype is tf.float64
    np.testing.assert_array_equal(mean, [2, np.nan, 4.5])
    # tf.reduce_sum(fr, axis=1, keepdims=True)
    np.testing.assert_array_equal(tf.reduce_sum(fr, axis=1, keepdims=True), [[6], [0], [9]])
    # dense tensors still reduce as before
    assert float(tf.reduce_sum(tf.ones([2, 3]))) == 6.0
    # uniform inner dim reduced: a ragged result
    r3b = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert tf.reduce_sum(r3b, axis=2).to_list() == [[3, 7], [11]]


def test_elementwise_and_map_flat_values():
    fr = _fr()
    # fr + 1, fr * fr, fr * 2.0, 1 - fr, -fr
    assert (fr + 1).to_list() == [[2, 3, 4], [], [5, 6]]
    assert (fr * fr).to_list() == [[1, 4, 9], [], [16, 25]]
    assert (fr * 2.0).to_list() == [[2, 4, 6], [], [8, 10]]
    assert (1 - fr).to_list() == [[0, -1, -2], [], [-3, -4]]
    assert (-fr).to_list() == [[-1, -2, -3], [], [-4, -5]]
    # tf.ragged.map_flat_values(tf.multiply, rt, 10)
    assert tf.ragged.map_flat_values(tf.multiply, _rt(), 10).to_list() == \
        [[10, 20, 30], [], [40, 50]]
    other = tf.ragged.constant([[1.0], [2.0, 3.0], [4.0, 5.0]])
    with pytest.raises(tf.errors.InvalidArgumentError):
        fr + other  # noqa: B018


def test_indexing():
    rt = _rt()
    # rt[0], rt[1], rt[:, :2], rt[1:], rt[-1], rt[2, 1]
    assert rt[0].numpy().tolist() == [1, 2, 3]
    assert rt[1].numpy().tolist() == []
    assert rt[:, :2].to_list() == [[1, 2], [], [4, 5]]
    assert rt[1:].to_list() == [[], [4, 5]]
    assert rt[-1].numpy().tolist() == [4, 5]
    assert int(rt[2, 1]) == 5
    assert rt[:, 1:].to_list() == [[2, 3], [], [5]]
    assert rt[:, -1:].to_list() == [[3], [], [5]]


def test_specs():
    rt = _rt()
    # tf.RaggedTensorSpec([3, None], tf.int32, 1); tf.type_spec_from_value(r3)
    assert repr(tf.RaggedTensorSpec([3, None], tf.int32, 1)) == \
        "RaggedTensorSpec(TensorShape([3, None]), tf.int32, 1, tf.int64)"
    assert rt._type_spec == tf.RaggedTensorSpec([3, None], tf.int32, 1)
    r3 = tf.ragged.constant([[[1, 2], [3]], [], [[4]]])
    assert repr(r3._type_spec) == \
        "RaggedTensorSpec(TensorShape([3, None, None]), tf.int32, 2, tf.int64)"
    # tf.RaggedTensorSpec() -> ValueError "Must specify ragged_rank or a shape ..."
    with pytest.raises(ValueError, match="ragged_rank"):
        tf.RaggedTensorSpec()
    assert tf.RaggedTensorSpec([None, None], tf.int32).is_compatible_with(rt)


def _numeric_grad(f, x, eps=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "to_tensor"])
def test_gradients_through_flat_values(reduce):
    lengths = [2, 0, 3]
    weights = tf.constant([1.0, -2.0, 0.5], tf.float64)

    def fn(v):
        rt = tf.RaggedTensor.from_row_lengths(v, lengths)
        rt = tf.ragged.map_flat_values(tf.sin, rt) * 2.0 + rt
        if reduce == "to_tensor":
            return tf.reduce_sum(rt.to_tensor(shape=[3, 2]) ** 2)
        out = getattr(tf, f"reduce_{reduce}")(rt, axis=1)
        if reduce in ("max", "min"):
            out = out[::2]  # (the empty row's extreme value is a constant)
            return tf.reduce_sum(out * weights[::2]) + tf.reduce_sum(
                getattr(tf, f"reduce_{reduce}")(rt, axis=0))
        if reduce == "mean":
            out = out[::2]
            return tf.reduce_sum(out * weights[::2])
        return tf.reduce_sum(out * weights) + tf.reduce_sum(rt ** 2)

    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    v = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = fn(v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(),
                               _numeric_grad(lambda a: float(fn(tf.constant(a))), x),
                               rtol=1e-6, atol=1e-8)


def test_traced_and_retracing():
    traces = []

    @tf.function
    def g(r):
        traces.append((r.shape.as_list(), r.values.shape.as_list(), r.row_splits.shape.as_list()))
        return tf.reduce_sum(r, axis=1), r * 2, r.to_tensor(), r[:, :2], r.row_lengths()

    total, doubled, dense, cut, lengths = g(_fr())
    np.testing.assert_array_equal(total, [6, 0, 9])
    assert isinstance(doubled, tf.RaggedTensor)
    assert doubled.to_list() == [[2, 4, 6], [], [8, 10]]
    np.testing.assert_array_equal(dense, [[1, 2, 3], [0, 0, 0], [4, 5, 0]])
    assert cut.to_list() == [[1, 2], [], [4, 5]]
    assert lengths.numpy().tolist() == [3, 0, 2]
    g(tf.ragged.constant([[1.0], [2.0], [3.0]]))   # same spec: no retrace
    g(tf.ragged.constant([[1.0], [2.0]]))          # 2 rows: another spec, retrace
    # TF prints "trace g (3, None) (None,) (4,)" and "trace g (2, None) (None,) (3,)"
    assert traces == [([3, None], [None], [4]), ([2, None], [None], [3])]

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.float32, 1)])
    def h(r):
        return r.to_tensor(), tf.reduce_mean(r, axis=1)

    dense, mean = h(_fr())
    np.testing.assert_array_equal(dense, [[1, 2, 3], [0, 0, 0], [4, 5, 0]])
    np.testing.assert_array_equal(mean, [2, np.nan, 4.5])
    dense, _ = h(tf.ragged.constant([[1.0], [2.0]]))
    np.testing.assert_array_equal(dense, [[1], [2]])
    assert h.experimental_get_tracing_count() == 1

    @tf.function
    def k(v, lengths):
        return (tf.RaggedTensor.from_row_lengths(v, lengths).to_tensor(),
                tf.RaggedTensor.from_tensor(tf.reshape(v, [2, 2]), padding=0.0))

    dense, unpadded = k(tf.constant([1.0, 2.0, 3.0, 0.0]), tf.constant([1, 3], tf.int64))
    np.testing.assert_array_equal(dense, [[1, 0, 0], [2, 3, 0]])
    assert unpadded.to_list() == [[1, 2], [3]]

    v = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(h(tf.RaggedTensor.from_row_lengths(v, [2, 1]))[1] * [1.0, 10.0])
    np.testing.assert_array_equal(tape.gradient(y, v), [0.5, 0.5, 10.0])


def test_dataset_slices_batch_ragged_batch():
    rt = _rt()
    # dr = tf.data.Dataset.from_tensor_slices(rt); dr.element_spec; list(dr)
    dr = tf.data.Dataset.from_tensor_slices(rt)
    assert dr.element_spec == tf.RaggedTensorSpec([None], tf.int32, 0)
    rows = list(dr)
    assert all(isinstance(r, tf.Tensor) for r in rows)
    assert [r.numpy().tolist() for r in rows] == [[1, 2, 3], [], [4, 5]]
    # dr.batch(2).element_spec; list(dr.batch(2)) -> [[1, 2, 3], []], [[4, 5]]
    db = dr.batch(2)
    assert db.element_spec == tf.RaggedTensorSpec([None, None], tf.int32, 1)
    assert [b.to_list() for b in db] == [[[1, 2, 3], []], [[4, 5]]]
    # dr.map(lambda x: x * 2).element_spec -> TensorSpec(shape=(None,), dtype=tf.int32)
    assert dr.map(lambda x: x * 2).element_spec == tf.TensorSpec([None], tf.int32)
    mixed = tf.data.Dataset.from_tensor_slices({"a": rt, "b": [1, 2, 3]}).batch(3)
    assert mixed.element_spec == {"a": tf.RaggedTensorSpec([None, None], tf.int32, 1),
                                  "b": tf.TensorSpec([None], tf.int32)}
    (element,) = list(mixed)
    assert element["a"].to_list() == [[1, 2, 3], [], [4, 5]]
    # from_tensor_slices(tf.ragged.constant([[[1], [2]], [[3]]])) rows are ragged_rank 1
    d2 = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[[1], [2]], [[3]]]))
    assert d2.element_spec == tf.RaggedTensorSpec([None, None], tf.int32, 1)
    assert [r.to_list() for r in d2] == [[[1], [2]], [[3]]]
    assert [b.to_list() for b in d2.batch(2)] == [[[[1], [2]], [[3]]]]
    # d4 = Dataset.range(4).map(lambda i: tf.range(i)); d4.batch(2) fails, ragged_batch:
    # RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int64)
    # [[[], [0]], [[0, 1], [0, 1, 2]]]
    d4 = tf.data.Dataset.range(4).map(lambda i: tf.range(i))
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(d4.batch(2))
    rb = d4.ragged_batch(2)
    assert rb.element_spec == tf.RaggedTensorSpec([None, None], tf.int64, 1)
    assert [b.to_list() for b in rb] == [[[], [0]], [[0, 1], [0, 1, 2]]]
    # a map returning ragged rows, then batch: [[[[]], [[0]]], [[[0, 1]], [[0, 1, 2]]]]
    mapped = d4.map(lambda x: tf.RaggedTensor.from_tensor(x[None]))
    assert mapped.element_spec == tf.RaggedTensorSpec([1, None], tf.int64, 1)
    assert [b.to_list() for b in mapped.batch(2)] == [[[[]], [[0]]], [[[0, 1]], [[0, 1, 2]]]]
    sums = [s.numpy().tolist() for s in db.map(lambda r: tf.reduce_sum(r, axis=1))]
    assert sums == [[6, 0], [9]]


def test_dataset_from_tensors_with_composites():
    # d = tf.data.Dataset.from_tensors((rt, sp, [1, 2])); d.element_spec;
    # list(d.repeat(2).batch(2))[0][0] -> <tf.RaggedTensor [[[1, 2, 3], [], [4, 5]],
    #  [[1, 2, 3], [], [4, 5]]]>
    sp = tf.sparse.SparseTensor(indices=[[0, 1], [2, 3]], values=[1.0, 2.0], dense_shape=[3, 4])
    d = tf.data.Dataset.from_tensors((_rt(), sp, [1, 2]))
    assert d.element_spec == (tf.RaggedTensorSpec([3, None], tf.int32, 1),
                              tf.SparseTensorSpec([3, 4], tf.float32),
                              tf.TensorSpec([2], tf.int32))
    (rt, sp_out, dense), = list(d)
    assert rt.to_list() == [[1, 2, 3], [], [4, 5]]
    np.testing.assert_array_equal(tf.sparse.to_dense(sp_out), tf.sparse.to_dense(sp))
    batched = list(d.repeat(2).batch(2))[0][0]
    assert repr(batched) == ("<tf.RaggedTensor [[[1, 2, 3], [], [4, 5]],\n"
                             " [[1, 2, 3], [], [4, 5]]]>")


def test_nested_ragged_reductions_and_trace():
    # r = tf.ragged.constant([[[1., 2.], [3.]], [], [[4.]]])
    # tf.reduce_sum(r, axis=2), tf.reduce_max(r, axis=2), tf.reduce_mean(r, axis=[2])
    # -> [[3.0, 3.0], [], [4.0]] [[2.0, 3.0], [], [4.0]] [[1.5, 3.0], [], [4.0]]
    r = tf.ragged.constant([[[1.0, 2.0], [3.0]], [], [[4.0]]])
    assert tf.reduce_sum(r, axis=2).to_list() == [[3.0, 3.0], [], [4.0]]
    assert tf.reduce_max(r, axis=2).to_list() == [[2.0, 3.0], [], [4.0]]
    assert tf.reduce_mean(r, axis=[2]).to_list() == [[1.5, 3.0], [], [4.0]]

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None, None], tf.float32, 2)])
    def g(rt):
        return rt.to_tensor(), tf.reduce_sum(rt, axis=2)

    dense, sums = g(r)
    np.testing.assert_array_equal(dense, [[[1, 2], [3, 0]], [[0, 0], [0, 0]],
                                          [[4, 0], [0, 0]]])
    assert sums.to_list() == [[3.0, 3.0], [], [4.0]]
