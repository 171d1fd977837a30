"""Array ops: bad input raises InvalidArgumentError naming the op (and the shapes) and
leaves the memory counters unchanged; plus behaviour the op table cannot express (shared
buffers, stop_gradient, iteration, TensorFlow's conventions)."""
import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.dispatch import run_kernel
from tests.ops.errors import failure_message

X = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
V = tf.constant([3.0, 1.0, 2.0])
I = tf.constant([1, 2, 3])

CASES = {
    "transpose/short_perm": (lambda: tf.transpose(X, [1, 0]), "Transpose", ["[2, 3, 4]"]),
    "transpose/duplicate": (lambda: tf.transpose(X, [0, 0, 1]), "Transpose", ["perm"]),
    "transpose/out_of_range": (lambda: tf.transpose(X, [0, 1, 3]), "Transpose", ["perm"]),
    "expand_dims/axis": (lambda: tf.expand_dims(X, 4), "ExpandDims", ["axis=4"]),
    "expand_dims/negative": (lambda: tf.expand_dims(X, -5), "ExpandDims", ["axis=-5"]),
    "squeeze/not_one": (lambda: tf.squeeze(X, 1), "Squeeze", ["size 3"]),
    "squeeze/axis": (lambda: tf.squeeze(X, 3), "Squeeze", ["axis=3"]),
    "concat/dtype": (lambda: tf.concat([X, tf.cast(X, tf.float64)], 0), "Concat",
                     ["float32", "float64"]),
    "concat/rank": (lambda: tf.concat([X, tf.ones([3, 4])], 0), "Concat", ["rank 3"]),
    "concat/dims": (lambda: tf.concat([X, tf.ones([2, 2, 4])], 0), "Concat",
                    ["[2, 3, 4]", "[2, 2, 4]"]),
    "concat/scalars": (lambda: tf.concat([1.0, 2.0], 0), "Concat", ["scalars"]),
    "concat/empty": (lambda: tf.concat([], 0), "Concat", ["non-empty"]),
    "concat/axis": (lambda: tf.concat([X, X], 3), "Concat", ["axis=3"]),
    "concat/lossy_python_value": (lambda: tf.concat([I, [1.5]], 0), "Concat", ["values"]),
    "stack/shapes": (lambda: tf.stack([V, tf.ones([2])]), "Stack", ["[3]", "[2]"]),
    "stack/dtype": (lambda: tf.stack([V, tf.ones([3], tf.float64)]), "Stack",
                    ["float32", "float64"]),
    "stack/empty": (lambda: tf.stack([]), "Stack", ["non-empty"]),
    "stack/axis": (lambda: tf.stack([V, V], axis=2), "Stack", ["axis=2"]),
    "unstack/scalar": (lambda: tf.unstack(tf.constant(1.0)), "Unstack", ["scalar"]),
    "unstack/num": (lambda: tf.unstack(X, num=3), "Unstack", ["num=3", "[2, 3, 4]"]),
    "unstack/axis": (lambda: tf.unstack(X, axis=3), "Unstack", ["axis=3"]),
    "split/not_divisible": (lambda: tf.split(X, 3, axis=2), "Split", ["3 equal parts"]),
    "split/sizes_sum": (lambda: tf.split(X, [1, 1], axis=2), "Split", ["add up", "[2, 3, 4]"]),
    "split/two_unknown": (lambda: tf.split(X, [-1, -1], axis=2), "Split", ["-1"]),
    "split/negative_size": (lambda: tf.split(X, [-2, 6], axis=2), "Split", ["-1"]),
    "split/scalar": (lambda: tf.split(tf.constant(1.0), 1), "Split", ["scalar"]),
    "tile/length": (lambda: tf.tile(X, [1, 2]), "Tile", ["multiples", "[2, 3, 4]"]),
    "tile/negative": (lambda: tf.tile(V, [-1]), "Tile", ["non-negative"]),
    "pad/paddings_shape": (lambda: tf.pad(X, [[1, 1]]), "Pad", ["[3, 2]"]),
    "pad/negative": (lambda: tf.pad(V, [[-1, 1]]), "Pad", ["non-negative"]),
    "pad/reflect_too_big": (lambda: tf.pad(V, [[3, 0]], "REFLECT"), "Pad", ["REFLECT", "[3]"]),
    "pad/symmetric_too_big": (lambda: tf.pad(V, [[0, 4]], "SYMMETRIC"), "Pad", ["SYMMETRIC"]),
    "pad/mode": (lambda: tf.pad(V, [[1, 1]], "WRAP"), "Pad", ["mode"]),
    "pad/constant_dtype": (lambda: tf.pad(V, [[1, 1]], constant_values=tf.constant(1, tf.int32)),
                           "Pad", ["int32", "float32"]),
    "pad/lossy_constant": (lambda: tf.pad(I, [[1, 1]], constant_values=1.5), "Pad",
                           ["constant_values"]),
    "reverse/duplicate": (lambda: tf.reverse(X, [0, -3]), "Reverse", ["twice"]),
    "reverse/axis": (lambda: tf.reverse(X, [3]), "Reverse", ["axis=3"]),
    "shape/out_type": (lambda: tf.shape(X, out_type=tf.float32), "Shape", ["float32"]),
    "size/out_type": (lambda: tf.size(X, out_type=tf.int8), "Size", ["int8"]),
    "sort/direction": (lambda: tf.sort(V, direction="UP"), "Sort", ["direction"]),
    "sort/scalar": (lambda: tf.sort(tf.constant(1.0)), "Sort", ["rank"]),
    "sort/axis": (lambda: tf.sort(X, axis=3), "Sort", ["axis=3"]),
    "argsort/complex": (lambda: tf.argsort(tf.complex(V, V)), "ArgSort", ["complex64"]),
    "argsort/bool": (lambda: tf.argsort(tf.constant([True, False])), "ArgSort", ["bool"]),
    "sequence_mask/float": (lambda: tf.sequence_mask(V), "SequenceMask", ["float32"]),
    "sequence_mask/maxlen": (lambda: tf.sequence_mask(I, -1), "SequenceMask", ["maxlen"]),
    "meshgrid/indexing": (lambda: tf.meshgrid(V, V, indexing="xx"), "Meshgrid", ["indexing"]),
    "permute/indices_dtype": (
        lambda: run_kernel("PermuteAlongAxis", {"x": V, "indices": V}, {"axis": 0}),
        "PermuteAlongAxis", ["float32"]),
    "pad_grad/too_small": (
        lambda: run_kernel("PadGrad", {"x": V}, {"paddings": ((2, 2),), "mode": "CONSTANT"}),
        "PadGrad", ["exceed"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_raises(name):
    call, op, fragments = CASES[name]
    gc.collect()
    before = tf.memory()
    message = failure_message(call)
    assert op in message, f"{name}: message does not name {op}: {message}"
    for fragment in fragments:
        assert fragment in message, f"{name}: {fragment!r} missing from: {message}"
    gc.collect()
    after = tf.memory()
    assert (after["num_tensors"], after["num_bytes"]) == \
        (before["num_tensors"], before["num_bytes"]), f"{name}: leaked tensors"


# --------------------------------------------------------------------------- shared buffers


@pytest.mark.parametrize("fn", [
    lambda x: tf.reshape(x, [6, 4]), tf.identity, lambda x: tf.expand_dims(x, 1),
    lambda x: tf.squeeze(tf.expand_dims(x, 0)), tf.stop_gradient,
    lambda x: tf.transpose(tf.expand_dims(x, 0), [1, 0, 2, 3]), lambda x: tf.reverse(x, []),
], ids=["reshape", "identity", "expand_dims", "squeeze", "stop_gradient", "transpose_size1",
        "reverse_none"])
def test_views_share_the_buffer(fn):
    x = tf.constant(np.arange(24.0).reshape(2, 3, 4))
    gc.collect()
    before = tf.memory()
    y = fn(x)
    after = tf.memory()
    assert after["num_data_buffers"] == before["num_data_buffers"]
    assert after["num_bytes"] == before["num_bytes"]
    np.testing.assert_array_equal(np.ravel(y.numpy()), np.arange(24.0))
    del x  # the view keeps the data alive
    gc.collect()
    np.testing.assert_array_equal(np.ravel(y.numpy()), np.arange(24.0))


def test_transpose_moving_data_is_not_a_view_of_the_shape():
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(tf.transpose(x).numpy(), [[0, 3], [1, 4], [2, 5]])
    np.testing.assert_array_equal(tf.reshape(tf.transpose(x), [-1]).numpy(), [0, 3, 1, 4, 2, 5])


# --------------------------------------------------------------------------- gradients


def test_stop_gradient_blocks_reverse_and_forward():
    x = tf.constant([1.5, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.stop_gradient(x) * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.5, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.stop_gradient(x * x)
    assert tape.gradient(z, x) is None
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 1.0])) as acc:
        w = tf.stop_gradient(x)
    assert acc.jvp(w) is None


def test_sort_gradient_scatters_back_through_the_permutation():
    x = tf.constant([3.0, 1.0, 2.0, 5.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sort(x, direction="DESCENDING")  # [5, 3, 2, 1] from positions [3, 0, 2, 1]
    g = tape.gradient(y, x, output_gradients=tf.constant([10.0, 20.0, 30.0, 40.0]))
    np.testing.assert_array_equal(g.numpy(), [20.0, 40.0, 30.0, 10.0])


def test_split_gradient_fills_unused_parts_with_zeros():
    x = tf.constant(np.arange(6.0))
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = tf.split(x, [1, 2, 3])
        y = tf.reduce_sum(b)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 1, 1, 0, 0, 0])


def test_tile_gradient_sums_the_copies():
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tile(x, [3, 2])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[6.0, 6.0]])


def test_reflect_pad_gradient_counts_mirrored_copies():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.pad(x, [[2, 1]], "REFLECT")  # [3, 2, 1, 2, 3, 2]
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 3.0, 2.0])


def test_concat_gradient_does_not_keep_the_inputs():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.concat([a * 2.0, b * 3.0], 0)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(gb.numpy(), [3.0])


def test_one_piece_gradients_under_a_tape():
    # split into one part, unstack over a size-1 axis and iterating over a batch of one
    # make a multi-output op return a single piece: its cotangent must still flow back
    x = tf.Variable([[1.0, 2.0, 3.0]])
    with tf.GradientTape(persistent=True) as tape:
        ys = {"split": tf.split(x, 1, axis=1), "split_sizes": tf.split(x, [3], axis=1),
              "unstack": tf.unstack(x), "iter": [row for row in x]}
        losses = {k: tf.reduce_sum(v[0] * 2.0) for k, v in ys.items()}
    for name, loss in losses.items():
        np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), [[2.0, 2.0, 2.0]],
                                      err_msg=name)


def test_unstack_of_an_empty_axis_under_a_tape_is_an_empty_list():
    x = tf.Variable(tf.zeros([0, 3]))
    with tf.GradientTape() as tape:
        assert tf.unstack(x) == [] and list(x) == []
        assert len(tf.unstack(x, axis=1)) == 3
        y = tf.reduce_sum(tf.stack(tf.unstack(x, axis=1)))
    assert tape.gradient(y, x).shape == (0, 3)


# --------------------------------------------------------------------------- conventions


def test_iteration_unstacks_axis_0():
    rows = list(tf.constant([[1, 2], [3, 4], [5, 6]]))
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    np.testing.assert_array_equal(rows[2].numpy(), [5, 6])


def test_python_values_take_the_tensors_dtype():
    assert tf.concat([tf.ones([1], tf.float64), [2.0]], 0).dtype == tf.float64
    assert tf.stack([1, tf.constant(2, tf.int64)]).dtype == tf.int64


def test_list_results():
    assert isinstance(tf.split(X, 2, axis=2), list)
    assert isinstance(tf.unstack(X), list)
    assert isinstance(tf.identity_n([X, V]), list)
    assert len(tf.split(X, [4], axis=2)) == 1


def test_shape_size_rank():
    assert tf.shape(X).dtype == tf.int32 and tf.shape(X).numpy().tolist() == [2, 3, 4]
    assert tf.size(X).numpy() == 24 and tf.size(X).dtype == tf.int32
    assert tf.rank(X).numpy() == 3 and tf.rank(X).dtype == tf.int32
    assert tf.shape(tf.constant(1.0)).shape == (0,)


def test_argsort_is_stable_both_ways():
    x = tf.constant([2, 1, 2, 1, 2])
    assert tf.argsort(x).numpy().tolist() == [1, 3, 0, 2, 4]
    assert tf.argsort(x, direction="DESCENDING").numpy().tolist() == [0, 2, 4, 1, 3]


def test_squeeze_unknown_axis_none_keeps_other_dims():
    assert tf.squeeze(tf.zeros([1, 2, 1, 3])).shape == (2, 3)
    assert tf.squeeze(tf.zeros([2, 3])).shape == (2, 3)


def test_sequence_mask_default_maxlen_is_max_length():
    m = tf.sequence_mask(tf.constant([[1, 3], [0, 2]], tf.int64))
    assert m.shape == (2, 2, 3) and m.dtype == tf.bool
    np.testing.assert_array_equal(m.numpy()[0, 1], [True, True, True])
    assert tf.sequence_mask(tf.zeros([0], tf.int32)).shape == (0, 0)


def test_pad_accepts_lowercase_mode_and_tensor_constant():
    y = tf.pad(tf.constant([1, 2]), tf.constant([[1, 0]]), "constant",
               constant_values=tf.constant(7))
    np.testing.assert_array_equal(y.numpy(), [7, 1, 2])
    assert y.dtype == tf.int32
