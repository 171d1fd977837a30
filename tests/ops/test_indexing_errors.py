"""Validation of the indexing family: bad input raises InvalidArgumentError naming the op
(and the offending index/bound or shapes) and leaves the engine's memory counters
unchanged; shape rules reject bad static shapes and accept unknown dimensions."""
import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops.indexing import indexed_slices_to_dense, unsorted_segment_sum
from tests.ops.errors import check_raises, live_memory  # noqa: F401






@pytest.fixture
def x():
    return tf.constant(np.arange(12.0, dtype=np.float32).reshape(3, 4))


# --------------------------------------------------------------------------- getitem


def test_getitem_int_out_of_range(x):
    check_raises(lambda: x[3], "StridedSlice", "index 3", "size 3")
    check_raises(lambda: x[:, -5], "StridedSlice", "-5", "size 4")
    check_raises(lambda: x[1, 1, 1], "too many indices", "rank 2")
    check_raises(lambda: tf.constant(1.0)[0], "rank 0")


def test_getitem_array_out_of_range(x):
    check_raises(lambda: x[[0, 3]], "getitem", "index 3", "size 3")
    check_raises(lambda: x[:, tf.constant([-5])], "getitem", "-5", "axis 1", "size 4")
    check_raises(lambda: x[tf.constant([1, 7])], "getitem", "7")


def test_getitem_scalar_tensor_index_in_a_graph(x):
    """`xs[t]` with a traced scalar t (an autograph loop's): negative t counts from the
    end, out of range raises naming the index, the axis and its size."""
    row = tf.function(lambda x, t: x[t])
    np.testing.assert_array_equal(row(x, tf.constant(-1)).numpy(), x.numpy()[-1])
    np.testing.assert_array_equal(row(x, tf.constant(1)).numpy(), x.numpy()[1])
    check_raises(lambda: row(x, tf.constant(3)), "getitem", "index 3", "axis 0", "size 3")
    check_raises(lambda: row(x, tf.constant(-4)), "getitem", "index -4", "size 3")


def test_getitem_bad_index_types(x):
    check_raises(lambda: x[1.0], "valid indices", error=TypeError)
    check_raises(lambda: x["a"], "valid indices", error=TypeError)
    check_raises(lambda: x[1.5:], "slice start", error=TypeError)
    check_raises(lambda: x[tf.constant([0.0, 1.0])], "getitem", "integer or bool", "float32")
    check_raises(lambda: x[::0], "step cannot be zero")
    check_raises(lambda: x[..., 0, ...], "single ellipsis")


def test_getitem_bool_mask_shape(x):
    check_raises(lambda: x[np.array([True, False])], "getitem", "[2]", "[3]")
    check_raises(lambda: x[:, np.ones((4, 1), bool)], "too many indices")


# --------------------------------------------------------------------------- slices


def test_slice_errors(x):
    check_raises(lambda: tf.slice(x, [0, 3], [1, 2]), "Slice", "dimension 1", "size 4")
    check_raises(lambda: tf.slice(x, [0], [1]), "Slice", "one entry per dimension")
    check_raises(lambda: tf.slice(x, [-1, 0], [1, 1]), "Slice", "begin -1")
    check_raises(lambda: tf.slice(x, [0, 0], [4, 1]), "Slice", "size 4")


def test_strided_slice_errors(x):
    check_raises(lambda: tf.strided_slice(x, [0], [1], [0]), "StridedSlice", "strides[0]")
    check_raises(lambda: tf.strided_slice(x, [0, 1], [1]), "StridedSlice", "same length")
    check_raises(lambda: tf.strided_slice(x, [5], [6], shrink_axis_mask=1), "StridedSlice",
                 "index 5", "size 3")
    check_raises(lambda: tf.strided_slice(x, [0, 0], [1, 1], ellipsis_mask=3),
                 "StridedSlice", "ellipsis")


# --------------------------------------------------------------------------- gathers


def test_gather_out_of_range_names_index_and_bound(x):
    msg = check_raises(lambda: tf.gather(x, [0, 2, 3]), "GatherV2", "indices[2] = 3",
                       "[0, 3)")
    assert "GatherV2" in msg
    # TensorFlow treats negative indices as out of range.
    check_raises(lambda: tf.gather(x, [[0], [-1]]), "GatherV2", "indices[1, 0] = -1")
    check_raises(lambda: tf.gather(x, [4], axis=1), "GatherV2", "[0, 4)")


def test_gather_argument_errors(x):
    check_raises(lambda: tf.gather(x, [0.5]), "GatherV2", "integer", "float32")
    check_raises(lambda: tf.gather(x, [0], axis=2), "GatherV2", "axis=2", "rank 2")
    check_raises(lambda: tf.gather(tf.constant(1.0), [0]), "GatherV2", "at least 1-D")
    check_raises(lambda: tf.gather(x, [[0], [1]], axis=1, batch_dims=1), "GatherV2",
                 "batch_dims")
    check_raises(lambda: tf.gather(x, [0], batch_dims=3), "GatherV2", "batch_dims=3")
    check_raises(lambda: tf.gather(x, [[0, 1]], axis=0, batch_dims=1), "GatherV2", "axis")


def test_gather_nd_errors(x):
    check_raises(lambda: tf.gather_nd(x, [[0, 4]]), "GatherNd", "indices[0]", "[0, 4]",
                 "[3, 4]")
    check_raises(lambda: tf.gather_nd(x, [[0, 1, 2]]), "GatherNd", "index depth 3")
    check_raises(lambda: tf.gather_nd(x, [[0.0]]), "GatherNd", "integer")
    check_raises(lambda: tf.gather_nd(x, [[0], [1]], batch_dims=1), "GatherNd",
                 "batch_dims")


# --------------------------------------------------------------------------- scatters


def test_scatter_nd_errors():
    u = tf.constant([1.0, 2.0])
    check_raises(lambda: tf.scatter_nd([[0], [5]], u, [4]), "ScatterNd", "indices[1]",
                 "[5]", "[4]")
    check_raises(lambda: tf.scatter_nd([[0], [1]], tf.ones([3]), [4]), "ScatterNd",
                 "updates", "[2]", "[3]")
    check_raises(lambda: tf.scatter_nd([[0]], tf.ones([1]), [-4]), "ScatterNd", "negative")


def test_tensor_scatter_nd_update_errors(x):
    check_raises(lambda: tf.tensor_scatter_nd_update(x, [[0, 0]], tf.ones([1], tf.float64)),
                 "TensorScatterNdUpdate", "dtype", "float64", "float32")
    check_raises(lambda: tf.tensor_scatter_nd_update(x, [[0]], tf.ones([1, 3])),
                 "TensorScatterNdUpdate", "[1, 4]", "[1, 3]")
    check_raises(lambda: tf.tensor_scatter_nd_update(x, [[3, 0]], [1.0]),
                 "TensorScatterNdUpdate", "[3, 0]")


def test_unsorted_segment_sum_and_densify_errors():
    check_raises(lambda: unsorted_segment_sum(tf.ones([3]), [0, 1, 5], 3),
                 "UnsortedSegmentSum", "segment_ids[2] = 5", "[0, 3)")
    check_raises(lambda: unsorted_segment_sum(tf.ones([3]), [0, 1], 3),
                 "UnsortedSegmentSum", "[2]", "[3]")
    s = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 1]))
    check_raises(lambda: indexed_slices_to_dense(s), "indexed_slices_to_dense", "dense_shape")
    check_raises(lambda: indexed_slices_to_dense(s, [4, 2]), "indexed_slices_to_dense",
                 "[2, 3]", "[4, 2]")
    bad = tf.IndexedSlices(tf.ones([1, 3]), tf.constant([4]), [4, 3])
    check_raises(lambda: tf.convert_to_tensor(bad), "UnsortedSegmentSum", "= 4", "[0, 4)")


# --------------------------------------------------------------------------- where, masks


def test_where_errors(x):
    check_raises(lambda: tf.where([True, False, True], x, x), "SelectV2", "broadcast")
    check_raises(lambda: tf.where(x, x, x), "SelectV2", "bool", "float32")
    check_raises(lambda: tf.where(x > 1.0, x, tf.ones([3, 4], tf.float64)), "SelectV2",
                 "dtype")
    check_raises(lambda: tf.where(x > 1.0, x), "SelectV2", "both")


def test_boolean_mask_errors(x):
    check_raises(lambda: tf.boolean_mask(x, [True, False]), "boolean_mask", "bool[2]",
                 "float32[3, 4]")
    check_raises(lambda: tf.boolean_mask(x, tf.constant([1, 0, 1])), "boolean_mask", "bool")
    check_raises(lambda: tf.boolean_mask(x, tf.constant(True)), "boolean_mask", "1-D")
    check_raises(lambda: tf.boolean_mask(x, [True] * 4, axis=2), "boolean_mask", "axis 2")


# --------------------------------------------------------------------------- shape rules


def test_shape_rules_reject_bad_static_shapes():
    f32, i32 = tf.float32, tf.int32
    with pytest.raises(InvalidArgumentError, match="GatherV2"):
        registry.SHAPES["GatherV2"]({"params": (3,), "indices": (2,)},
                                    {"params": f32, "indices": f32},
                                    {"axis": 0, "batch_dims": 0})
    with pytest.raises(InvalidArgumentError, match="StridedSlice.*index 4"):
        registry.SHAPES["StridedSlice"]({"x": (3, 4)}, {"x": f32}, {
            "begin": (4,), "end": (None,), "strides": (1,), "shrink_axis_mask": 1,
            "new_axis_mask": 0})
    with pytest.raises(InvalidArgumentError, match="ScatterNd"):
        registry.SHAPES["ScatterNd"]({"indices": (2, 1), "updates": (3,)},
                                     {"indices": i32, "updates": f32},
                                     {"shape": (5,), "batch_dims": 0})
    with pytest.raises(InvalidArgumentError, match="SelectV2"):
        registry.SHAPES["SelectV2"]({"condition": (2,), "x": (3,), "y": (3,)},
                                    {"condition": tf.bool, "x": f32, "y": f32}, {})


def test_shape_rules_accept_unknown_dims():
    f32, i32 = tf.float32, tf.int32
    [(shape, dtype)] = registry.SHAPES["StridedSlice"]({"x": (None, 4)}, {"x": f32}, {
        "begin": (1, None), "end": (None, None), "strides": (1, -1), "shrink_axis_mask": 0,
        "new_axis_mask": 0})
    assert shape == (None, 4) and dtype is f32
    [(shape, _)] = registry.SHAPES["GatherV2"]({"params": (None, 3), "indices": (None,)},
                                               {"params": f32, "indices": i32},
                                               {"axis": 0, "batch_dims": 0})
    assert shape == (None, 3)
    [(shape, dtype)] = registry.SHAPES["Where"]({"condition": (2, None)},
                                                {"condition": tf.bool}, {})
    assert shape == (None, 2) and dtype is tf.int64


def test_slice_gradient_keeps_nothing():
    # StridedSlice's VJP reads x only for its shape (x_shape): the tape keeps no tensor.
    from tapeflow.autodiff.record import make_backward
    x = tf.ones([4, 3])
    out = x[1]
    bwd = make_backward("StridedSlice", {"x": x}, {"begin": (1,), "end": (None,),
                        "strides": (1,), "shrink_axis_mask": 1, "new_axis_mask": 0},
                        [out], {"x"})
    assert set(bwd.env) == set()
