"""Rows for the indexing family: getitem, slice/strided_slice, gather/gather_nd, scatters,
where, boolean_mask, segment sums and the StridedSlice gradient kernel. References are
NumPy's own indexing (or plain loops over a few indices), never our output."""
import numpy as np

import tapeflow as tf
from tapeflow.ops.indexing import indexed_slices_to_dense, unsorted_segment_sum
from tests.ops.table import Row, uniform

ALL = ("float32", "float64", "int32", "int64")
SS = ("StridedSlice", "StridedSliceGrad")
GATHER = ("GatherV2", "UnsortedSegmentSum")
MASK_2D = np.array([[True, False, True, True], [False, False, True, False],
                    [True, True, False, False]])
MASK_1D = np.array([True, False, True])


def ints(*shapes):
    """Uniform values that are exact in every dtype of ALL (for value rows on ints too)."""
    def sample(rng, dtype):
        return [rng.integers(-9, 10, s).astype(dtype) if np.dtype(dtype).kind in "iu"
                else rng.uniform(-2.0, 2.0, s).astype(dtype) for s in shapes]
    return sample


def _np_gather(params, indices, axis, batch_dims=0):
    """Gather by explicit loops over the batch (an independent reference)."""
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([_np_gather(p, i, axis - 1, batch_dims - 1)
                     for p, i in zip(params, indices)])


def _np_gather_nd(params, indices, batch_dims=0):
    if batch_dims:
        return np.stack([_np_gather_nd(p, i, batch_dims - 1) for p, i in zip(params, indices)])
    flat = indices.reshape(-1, indices.shape[-1])
    out = np.stack([params[tuple(ix)] for ix in flat])
    return out.reshape(indices.shape[:-1] + params.shape[indices.shape[-1]:])


def _np_scatter_nd(indices, updates, shape):
    out = np.zeros(shape, updates.dtype)
    flat = indices.reshape(-1, indices.shape[-1])
    ups = updates.reshape((len(flat),) + tuple(shape[indices.shape[-1]:]))
    for ix, u in zip(flat, ups):
        out[tuple(ix)] += u
    return out


def _np_update(tensor, indices, updates):
    out = tensor.copy()
    flat = indices.reshape(-1, indices.shape[-1])
    ups = updates.reshape((len(flat),) + tensor.shape[indices.shape[-1]:])
    for ix, u in zip(flat, ups):
        out[tuple(ix)] = u
    return out


def _np_segment_sum(data, ids, num):
    out = np.zeros((num,) + data.shape[ids.ndim:], data.dtype)
    for pos in np.ndindex(*ids.shape):
        out[ids[pos]] += data[pos]
    return out


def _np_slice_grad(dy, shape, key):
    out = np.zeros(shape, dy.dtype)
    out[key] = dy
    return out


_SG_KEY = (slice(1, None, 2), 0, None, slice(None, None, -1))
_SG_ATTRS = {"begin": (1, 0, 0, None), "end": (None, None, 0, None), "strides": (2, 1, 1, -1),
             "shrink_axis_mask": 2, "new_axis_mask": 4, "shape": (5, 3, 4)}

IDX_A = np.array([[2, 0], [1, 2]])
ND_IDX = np.array([[0, 1], [2, 3], [0, 1]])
ND_ROWS = np.array([[[1], [0]], [[2], [2]]])
SC_IDX = np.array([[1], [3], [1]])

ROWS = [
    # ---- getitem: basic indexing is one StridedSlice
    Row("getitem/int", lambda x: x[1], lambda x: x[1], ints((3, 4)), kernels=SS, dtypes=ALL),
    Row("getitem/negative_ints", lambda x: x[-1, -2], lambda x: x[-1, -2], ints((3, 4)),
        kernels=SS, dtypes=ALL),
    Row("getitem/slice", lambda x: x[1:3], lambda x: x[1:3], uniform((4, 3)), kernels=SS),
    Row("getitem/negative_step", lambda x: x[::-2, 3:0:-1], lambda x: x[::-2, 3:0:-1],
        ints((5, 4)), kernels=SS, dtypes=ALL),
    Row("getitem/column", lambda x: x[:, 2], lambda x: x[:, 2], uniform((3, 4)), kernels=SS),
    Row("getitem/ellipsis_newaxis", lambda x: x[..., None, 1], lambda x: x[..., None, 1],
        uniform((2, 3, 4)), kernels=SS),
    Row("getitem/newaxis_clamped", lambda x: x[None, -10:10, tf.newaxis, 1:],
        lambda x: x[None, -10:10, None, 1:], uniform((3, 2)), kernels=SS),
    Row("getitem/scalar_tensor", lambda x: x[None, ...], lambda x: x[None, ...], uniform(()),
        kernels=SS),
    Row("getitem/empty_slice", lambda x: x[2:1], lambda x: x[2:1], uniform((3, 2)),
        kernels=SS),
    # ---- getitem: integer and boolean arrays (NumPy semantics) become one gather
    Row("getitem/int_list", lambda x: x[[2, 0, 2]], lambda x: x[[2, 0, 2]], ints((3, 4)),
        kernels=GATHER + ("RavelMultiIndex",), dtypes=ALL),
    Row("getitem/int_tensor_2d", lambda x: x[1:, tf.constant(IDX_A)],
        lambda x: x[1:, IDX_A], uniform((3, 4)), kernels=GATHER + ("RavelMultiIndex",)),
    Row("getitem/scalar_int_tensor", lambda x: x[:, tf.constant(-1)], lambda x: x[:, -1],
        uniform((3, 4)), kernels=GATHER + ("RavelMultiIndex",)),
    Row("getitem/adjacent_arrays", lambda x: x[:, [0, 2], [1, -1]],
        lambda x: x[:, [0, 2], [1, -1]], uniform((2, 3, 4)),
        kernels=GATHER + ("RavelMultiIndex", "Reshape")),
    Row("getitem/separated_arrays", lambda x: x[[0, 1, 1], 1:, [3, 0, 0]],
        lambda x: x[[0, 1, 1], 1:, [3, 0, 0]], uniform((2, 3, 4)),
        kernels=GATHER + ("RavelMultiIndex", "Transpose")),
    Row("getitem/int_and_array_separated", lambda x: x[0, :, [1, 2]],
        lambda x: x[0, :, [1, 2]], uniform((2, 3, 4)), kernels=GATHER + ("RavelMultiIndex",)),
    Row("getitem/bool_full", lambda x: x[MASK_2D], lambda x: x[MASK_2D], ints((3, 4)),
        kernels=GATHER + ("Where", "Reshape"), dtypes=ALL),
    Row("getitem/bool_tensor_axis1", lambda x: x[:, tf.constant(MASK_2D)],
        lambda x: x[:, MASK_2D], uniform((2, 3, 4)), kernels=GATHER + ("Where",)),
    Row("getitem/bool_and_array", lambda x: x[MASK_1D, 1:, [0, 3]],
        lambda x: x[MASK_1D, 1:, [0, 3]], uniform((3, 4, 4)),
        kernels=GATHER + ("Where", "RavelMultiIndex")),
    Row("getitem/bool_scalar", lambda x: x[..., True], lambda x: x[..., True],
        uniform((2, 3)), kernels=GATHER + ("Where",)),
    # ---- slice / strided_slice
    Row("slice", lambda x: tf.slice(x, [1, 0, 2], [2, -1, 1]),
        lambda x: x[1:3, 0:, 2:3], ints((3, 2, 4)), kernels=SS, dtypes=ALL, size1=False,
        empty=False, rank=False, note="begin and size fit the sampled shape only (NumPy "
        "clamps slices, tf.slice raises)"),
    Row("strided_slice/masks", lambda x: tf.strided_slice(
        x, [1, 0, 0, 3], [0, 0, 0, 0], [1, 1, 1, -2], begin_mask=0, end_mask=9,
        ellipsis_mask=2, new_axis_mask=4, shrink_axis_mask=0),
        lambda x: x[1:, ..., None, 3::-2], uniform((3, 2, 5)), kernels=SS),
    Row("strided_slice/shrink", lambda x: tf.strided_slice(
        x, [-1, 1], [0, 3], [1, 1], shrink_axis_mask=1), lambda x: x[-1, 1:3],
        uniform((3, 4)), kernels=SS),
    Row("StridedSliceGrad", lambda dy: tf.engine.run_kernel(
        "StridedSliceGrad", {"dy": dy}, _SG_ATTRS),
        lambda dy: _np_slice_grad(dy, (5, 3, 4), _SG_KEY), uniform((2, 1, 4)), kernels=SS,
        size1=False, rank=False, note="dy has the shape of the attrs' slice"),
    # ---- gather
    # sampled indices: the size-0 cases gather nothing (and gather from nothing)
    Row("gather/sampled_indices", lambda x, i: tf.gather(x, i),
        lambda x, i: np.take(x, i, axis=0),
        lambda rng, d: [rng.uniform(-2, 2, (5, 3)).astype(d), rng.integers(0, 5, (4,))],
        kernels=GATHER),
    Row("gather/rank40", lambda x: tf.gather(x, [2, 0, 2, 1], axis=17),
        lambda x: np.take(x, [2, 0, 2, 1], axis=17),
        uniform(tuple(3 if k == 17 else 2 if k in (4, 39) else 1 for k in range(40))),
        kernels=GATHER),
    Row("gather/axis0", lambda x: tf.gather(x, [2, 0, 2, 1]),
        lambda x: _np_gather(x, [2, 0, 2, 1], 0), ints((3, 2)), kernels=GATHER, dtypes=ALL),
    Row("gather/axis1_2d_indices", lambda x: tf.gather(x, IDX_A, axis=1),
        lambda x: _np_gather(x, IDX_A, 1), uniform((2, 3, 2)), kernels=GATHER),
    Row("gather/negative_axis", lambda x: tf.gather(x, [1, 1], axis=-1),
        lambda x: _np_gather(x, np.array([1, 1]), 1), uniform((3, 2)), kernels=GATHER),
    Row("gather/scalar_index", lambda x: tf.gather(x, 2), lambda x: x[2], uniform((4, 3)),
        kernels=GATHER),
    Row("gather/batch_dims", lambda x: tf.gather(x, IDX_A, axis=2, batch_dims=1),
        lambda x: _np_gather(x, IDX_A, 2, 1), uniform((2, 3, 4)), kernels=GATHER),
    Row("gather/batch_dims_axis_default", lambda x, i: tf.gather(x, i, batch_dims=1),
        lambda x, i: _np_gather(x, i, 1, 1),
        lambda rng, d: [rng.uniform(-2, 2, (2, 3, 2)).astype(d), IDX_A.astype(np.int64)],
        kernels=GATHER),
    # ---- gather_nd / scatter_nd / tensor_scatter_nd_update
    Row("gather_nd/elements", lambda x: tf.gather_nd(x, ND_IDX),
        lambda x: _np_gather_nd(x, ND_IDX), ints((3, 4)),
        kernels=("GatherNd", "ScatterNd"), dtypes=ALL),
    Row("gather_nd/rows", lambda x: tf.gather_nd(x, ND_ROWS),
        lambda x: _np_gather_nd(x, ND_ROWS), uniform((3, 2, 2)),
        kernels=("GatherNd", "ScatterNd")),
    Row("gather_nd/batch_dims", lambda x: tf.gather_nd(x, ND_ROWS, batch_dims=1),
        lambda x: _np_gather_nd(x, ND_ROWS, 1), uniform((2, 3, 2)),
        kernels=("GatherNd", "ScatterNd")),
    Row("scatter_nd/duplicates", lambda u: tf.scatter_nd(SC_IDX, u, [5, 2]),
        lambda u: _np_scatter_nd(SC_IDX, u, (5, 2)), ints((3, 2)),
        kernels=("ScatterNd", "GatherNd"), dtypes=ALL, rank=False,
        note="the updates have the shape the indices and the output shape give"),
    Row("scatter_nd/elements", lambda u: tf.scatter_nd(ND_IDX, u, [3, 4]),
        lambda u: _np_scatter_nd(ND_IDX, u, (3, 4)), uniform((3,)),
        kernels=("ScatterNd", "GatherNd"), rank=False,
        note="the updates have the shape the indices and the output shape give"),
    Row("tensor_scatter_nd_update", lambda t, u: tf.tensor_scatter_nd_update(
        t, [[0, 1], [2, 0]], u), lambda t, u: _np_update(t, np.array([[0, 1], [2, 0]]), u),
        ints((3, 2), (2,)), kernels=("TensorScatterNdUpdate", "GatherNd", "ScatterNd"),
        dtypes=ALL),
    Row("tensor_scatter_nd_update/rows", lambda t, u: tf.tensor_scatter_nd_update(
        t, [[2], [0]], u), lambda t, u: _np_update(t, np.array([[2], [0]]), u),
        uniform((3, 2, 2), (2, 2, 2)), kernels=("TensorScatterNdUpdate",), empty=False,
        note="the indices are fixed: the tensor keeps 3 rows, the updates 2"),
    # ---- where / boolean_mask
    Row("where/select_broadcast", lambda x, y: tf.where(MASK_2D, x, y),
        lambda x, y: np.where(MASK_2D, x, y), ints((4,), (3, 1)), kernels=("SelectV2",),
        dtypes=ALL, scalar=(0, 1)),
    Row("where/select_batch_cond", lambda x, y: tf.where(MASK_1D[:, None, None], x, y),
        lambda x, y: np.where(MASK_1D[:, None, None], x, y), uniform((2, 1), ()),
        kernels=("SelectV2",)),
    Row("where/coordinates", lambda c: tf.where(c), lambda c: np.argwhere(c),
        lambda rng, d: [rng.uniform(size=(3, 2, 2)) > 0.5], kernels=("Where",),
        dtypes=("float32",), grad=False, out_dtype="int64"),
    Row("where/coordinates_numeric", lambda c: tf.where(c), lambda c: np.argwhere(c),
        lambda rng, d: [rng.integers(0, 2, (5,)).astype(d)], kernels=("Where",),
        dtypes=("int32", "float32"), grad=False, out_dtype="int64"),
    Row("boolean_mask/axis0", lambda x: tf.boolean_mask(x, MASK_1D),
        lambda x: x[MASK_1D], ints((3, 2)), kernels=GATHER + ("Where",), dtypes=ALL),
    Row("boolean_mask/axis1_2d", lambda x: tf.boolean_mask(x, MASK_2D, axis=1),
        lambda x: x[:, MASK_2D], uniform((2, 3, 4, 2)), kernels=GATHER + ("Where",)),
    # ---- segment sums and IndexedSlices
    Row("unsorted_segment_sum", lambda d: unsorted_segment_sum(d, IDX_A, 4),
        lambda d: _np_segment_sum(d, IDX_A, 4), ints((2, 2, 3)), kernels=GATHER,
        dtypes=ALL),
    Row("indexed_slices_to_dense", lambda v: indexed_slices_to_dense(
        tf.IndexedSlices(v, tf.constant([3, 0, 3], tf.int64), [4, 2])),
        lambda v: _np_segment_sum(v, np.array([3, 0, 3]), 4), uniform((3, 2)),
        kernels=GATHER, empty=False, note="the indices and the dense shape are fixed"),
]


# --------------------------------------------------------------------------- segment sums


def _np_seg_sum(data, ids, num=None):
    num = (int(ids.max()) + 1 if ids.size else 0) if num is None else num
    out = np.zeros((num,) + data.shape[1:], data.dtype)
    np.add.at(out, ids, data)
    return out


def _sorted_ids(n, high):
    def sample(rng, dtype):
        ids = np.sort(rng.integers(0, high, (n,)))
        return [rng.uniform(-2, 2, (n, 3)).astype(dtype), ids.astype(np.int32)]
    return sample


ROWS += [
    Row("segment_sum", tf.math.segment_sum, _np_seg_sum, _sorted_ids(5, 4),
        kernels=("SegmentSum",), diff=(0,), scalar=False, size1=False, empty=False, rank=False,
        note="ids must be 1-D and as long as data's first dim"),
    Row("segment_sum/gaps", lambda x: tf.math.segment_sum(x, [0, 0, 3, 3]),
        lambda x: _np_seg_sum(x, np.array([0, 0, 3, 3])), uniform((4, 2)),
        kernels=("SegmentSum",), size1=False, empty=False, rank=False,
        note="fixed ids (the reference broadcasts them); np.add.at crashes past 32 dims"),
    Row("unsorted_segment_sum/public",
        lambda x: tf.math.unsorted_segment_sum(x, [2, 0, 2], num_segments=4),
        lambda x: _np_seg_sum(x, np.array([2, 0, 2]), 4), uniform((3, 2)),
        kernels=("UnsortedSegmentSum",), size1=False, empty=False, rank=False,
        note="fixed ids (the reference broadcasts them); np.add.at crashes past 32 dims"),
    Row("bincount", lambda a: tf.math.bincount(a),
        lambda a: np.bincount(a.reshape(-1)).astype(np.int32),
        lambda rng, d: [rng.integers(0, 6, (3, 4)).astype(np.int32)], kernels=("SegmentSum",),
        dtypes=("int32",), grad=False, out_dtype="int32", scalar=False, size1=False,
        empty=False, rank=False, note="output length depends on the values"),
    Row("bincount/weights_min_max",
        lambda a, w: tf.math.bincount(a, weights=w, minlength=3, maxlength=4),
        lambda a, w: np.bincount(a[a < 4], weights=w[a < 4], minlength=4)[
            :min(max(a.max() + 1, 3), 4)].astype(w.dtype),
        lambda rng, d: [rng.integers(0, 6, (8,)).astype(np.int32),
                        rng.uniform(-2, 2, (8,)).astype(d)], kernels=("SegmentSum",),
        diff=(1,), scalar=False, size1=False, empty=False, rank=False,
        note="output length depends on the values"),
]


def _np_scatter_add(t, u, idx, sign):
    out = t.copy()
    np.add.at(out, tuple(idx.T), sign * u)
    return out


_SC_IDX = np.array([[1], [3], [1]])

ROWS += [
    Row("tensor_scatter_nd_add", lambda t, u: tf.tensor_scatter_nd_add(t, _SC_IDX, u),
        lambda t, u: _np_scatter_add(t, u, _SC_IDX, 1), uniform((4, 2), (3, 2)),
        kernels=("ScatterNd",), dtypes=("float32", "float64", "int32"), size1=False,
        empty=False, rank=False, note="fixed indices (duplicates add)"),
    Row("tensor_scatter_nd_sub", lambda t, u: tf.tensor_scatter_nd_sub(t, [[0, 1], [2, 0]], u),
        lambda t, u: _np_scatter_add(t, u, np.array([[0, 1], [2, 0]]), -1),
        uniform((3, 2), (2,)), kernels=("ScatterNd",), size1=False, empty=False,
        rank=False, note="fixed element indices"),
]


def _np_scatter_extremum(tensor, updates, indices, combine):
    """One update at a time by a loop (duplicates combine with each other and the tensor)."""
    out = tensor.copy()
    flat = indices.reshape(-1, indices.shape[-1])
    ups = updates.reshape((len(flat),) + tensor.shape[indices.shape[-1]:])
    for ix, u in zip(flat, ups):
        out[tuple(ix)] = combine(out[tuple(ix)], u)
    return out


_EXT_IDX = np.array([[2], [0], [2]])  # row 2 twice: both updates and the tensor compete
_EXT_ELEM = np.array([[0, 1], [1, 0], [0, 1]])

ROWS += [
    Row(f"tensor_scatter_nd_{kind}{suffix}",
        lambda t, u, f=f, i=i: f(t, i, u),
        lambda t, u, c=c, i=i: _np_scatter_extremum(t, u, i, c), sample,
        kernels=(kernel,), dtypes=ALL, size1=False, empty=False, rank=False,
        note="fixed indices with a duplicate; continuous samples do not tie (ties split "
             "the gradient, tested in tests/ops/test_scatter_extremum.py)")
    for kind, f, c, kernel in (("max", tf.tensor_scatter_nd_max, np.maximum, "TensorScatterMax"),
                               ("min", tf.tensor_scatter_nd_min, np.minimum, "TensorScatterMin"))
    for suffix, i, sample in (("/rows", _EXT_IDX, ints((4, 3), (3, 3))),
                              ("/elements", _EXT_ELEM, ints((2, 2), (3,))))
]
