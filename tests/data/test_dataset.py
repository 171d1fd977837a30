"""tf.data.Dataset: sources, transformations, inspection and errors, against TensorFlow's
documented results (the expected values below were checked with TensorFlow 2.x) and
against plain Python over the same data."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError, OutOfRangeError
from tests.engine_state import assert_engine_state_intact

Dataset = tf.data.Dataset


def values(ds) -> list:
    return [v.tolist() if isinstance(v, np.ndarray) else
            (tuple(x.tolist() if isinstance(x, np.ndarray) else x for x in v)
             if isinstance(v, tuple) else v)
            for v in ds.as_numpy_iterator()]


# ---------------------------------------------------------------------- sources


def test_from_tensor_slices_structures_and_specs():
    ds = Dataset.from_tensor_slices(([1, 2, 3], np.array([[1.0, 2.0]] * 3)))
    assert ds.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.float64))
    got = [(int(a), b.numpy().tolist()) for a, b in ds]
    assert got == [(1, [1.0, 2.0]), (2, [1.0, 2.0]), (3, [1.0, 2.0])]
    d = Dataset.from_tensor_slices({"x": [1.0, 2.0], "y": [[1], [2]]})
    assert d.element_spec == {"x": tf.TensorSpec([], tf.float32),
                              "y": tf.TensorSpec([1], tf.int32)}
    assert [{k: v.tolist() for k, v in e.items()} for e in d.as_numpy_iterator()] == \
        [{"x": 1.0, "y": [1]}, {"x": 2.0, "y": [2]}]
    Point = collections.namedtuple("Point", "a b")
    p = next(iter(Dataset.from_tensor_slices(Point(a=[1, 2], b=[3, 4]))))
    assert isinstance(p, Point) and (int(p.a), int(p.b)) == (1, 3)
    # tensors and a size-1 / empty first dimension
    assert values(Dataset.from_tensor_slices(tf.constant([[5.0]]))) == [[5.0]]
    empty = Dataset.from_tensor_slices(np.zeros((0, 3), np.float32))
    assert values(empty) == [] and len(empty) == 0
    assert empty.element_spec == tf.TensorSpec([3], tf.float32)


def test_from_tensor_slices_bad_input():
    with assert_engine_state_intact():
        with pytest.raises(ValueError, match=r"from_tensor_slices.*\[3\], \[4\].*3 and 4"):
            Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
        with pytest.raises(ValueError, match="scalar"):
            Dataset.from_tensor_slices(1.0)


def test_from_tensor_slices_yields_views_not_copies():
    data = np.arange(12.0).reshape(6, 2)
    first = next(Dataset.from_tensor_slices(data)._elements(None))[0]
    assert np.shares_memory(first, data)
    batch = next(Dataset.from_tensor_slices(data).batch(4)._elements(None))[0]
    assert np.shares_memory(batch, data) and batch.tolist() == data[:4].tolist()


def test_from_tensors_and_range():
    assert Dataset.from_tensors([1, 2]).element_spec == tf.TensorSpec([2], tf.int32)
    assert values(Dataset.from_tensors(([1, 2], 3.0))) == [([1, 2], 3.0)]
    assert int(Dataset.from_tensors(1).cardinality()) == 1
    assert values(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(2, 5)) == [2, 3, 4]
    assert values(Dataset.range(5, 1, -2)) == [5, 3]
    assert values(Dataset.range(0)) == []
    assert Dataset.range(3).element_spec == tf.TensorSpec([], tf.int64)
    assert Dataset.range(3, output_type=tf.int32).element_spec.dtype == tf.int32
    with pytest.raises(InvalidArgumentError, match="step"):
        Dataset.range(1, 5, 0)


def test_from_generator():
    def gen():
        yield [1.0]
        yield [2.0, 3.0]
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.float32))
    assert values(ds) == [[1.0], [2.0, 3.0]]
    assert values(ds) == [[1.0], [2.0, 3.0]]  # the generator is called again
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    # TensorFlow converts with NumPy: ints to float32, a float truncated to int32
    conv = Dataset.from_generator(lambda: iter([np.array([1, 2])]),
                                  output_signature=tf.TensorSpec([2], tf.float32))
    assert [a.dtype for a in conv.as_numpy_iterator()] == [np.float32]
    pairs = Dataset.from_generator(lambda: iter([(1, 2.0), (3, 4.0)]),
                                   output_signature=(tf.TensorSpec([], tf.int64),
                                                     tf.TensorSpec([], tf.float32)))
    assert values(pairs) == [(1, 2.0), (3, 4.0)]
    args = Dataset.from_generator(lambda n: iter(range(int(n))), args=(3,),
                                  output_signature=tf.TensorSpec([], tf.int32))
    assert values(args) == [0, 1, 2]
    legacy = Dataset.from_generator(lambda: iter([1, 2]), output_types=tf.int64,
                                    output_shapes=[])
    assert values(legacy) == [1, 2]


def test_from_generator_bad_elements_raise_at_iteration():
    with assert_engine_state_intact():
        wrong_dtype = Dataset.from_generator(lambda: iter(["abc"]),
                                             output_signature=tf.TensorSpec([], tf.float32))
        with pytest.raises(InvalidArgumentError, match=r"from_generator.*'abc'.*float32"):
            list(wrong_dtype)
        wrong_shape = Dataset.from_generator(lambda: iter([[1.0, 2.0, 3.0]]),
                                             output_signature=tf.TensorSpec([2], tf.float32))
        with pytest.raises(InvalidArgumentError, match=r"shape \(3,\).*shape \(2,\)"):
            list(wrong_shape)
        wrong_structure = Dataset.from_generator(
            lambda: iter([1.0]), output_signature=(tf.TensorSpec([], tf.float32),) * 2)
        with pytest.raises(InvalidArgumentError, match="expected structure"):
            list(wrong_structure)
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(lambda: iter([]))


def test_zip_and_concatenate():
    a, b = Dataset.range(3), Dataset.range(10, 15)
    assert values(Dataset.zip((a, b))) == [(0, 10), (1, 11), (2, 12)]
    assert values(Dataset.zip(a, b)) == [(0, 10), (1, 11), (2, 12)]
    z = Dataset.zip({"i": a, "j": b})
    assert [{k: int(v) for k, v in e.items()} for e in z] == \
        [{"i": 0, "j": 10}, {"i": 1, "j": 11}, {"i": 2, "j": 12}]
    assert len(Dataset.zip(a, b.repeat())) == 3
    assert values(a.concatenate(b)) == [0, 1, 2, 10, 11, 12, 13, 14]
    assert len(a.concatenate(b)) == 8
    merged = Dataset.from_tensors([1, 2]).concatenate(Dataset.from_tensors([1, 2, 3]))
    assert merged.element_spec == tf.TensorSpec([None], tf.int32)
    with pytest.raises(TypeError, match="incompatible"):
        a.concatenate(Dataset.from_tensor_slices([1.0]))


# ---------------------------------------------------------------------- transformations


def test_map_traces_once_and_unpacks_tuples():
    traces = []

    def f(x, y):
        traces.append(1)
        return {"sum": x + y, "pair": [x, y]}
    ds = Dataset.from_tensor_slices(([1, 2, 3], [10, 20, 30])).map(f)
    assert ds.element_spec == {"sum": tf.TensorSpec([], tf.int32),
                               "pair": (tf.TensorSpec([], tf.int32),) * 2}
    out = [(int(e["sum"]), int(e["pair"][1])) for e in ds]
    assert out == [(11, 10), (22, 20), (33, 30)]
    assert len(traces) == 1  # traced when map was called, not per element
    # a Python-controlled branch on a tensor is converted by autograph
    def branchy(x):
        if x > 2:
            return x * 2
        return -x
    assert values(Dataset.range(6).map(branchy)) == [0, -1, -2, 6, 8, 10]


def test_map_runs_eagerly_under_run_functions_eagerly():
    seen = []

    def f(x):
        seen.append(x.numpy())  # only possible on eager tensors
        return x + 1
    tf.config.run_functions_eagerly(True)
    try:
        ds = Dataset.range(3).map(f)
        assert values(ds) == [1, 2, 3]
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen[-3:] == [0, 1, 2]


def test_eager_map_returning_another_structure_is_an_error():
    def f(x):
        return x if int(x) < 1 else (x, x)
    tf.config.run_functions_eagerly(True)
    try:
        ds = Dataset.range(3).map(lambda x: tf.py_function(lambda v: v, [x], tf.int64))
        assert values(ds) == [0, 1, 2]
        with pytest.raises((InvalidArgumentError, TypeError)):
            bad = Dataset.range(3).map(f)
            list(bad)
    finally:
        tf.config.run_functions_eagerly(False)


def test_map_returning_non_tensors_is_an_error_at_map():
    with assert_engine_state_intact():
        with pytest.raises(TypeError, match="map: the function returned None"):
            Dataset.range(3).map(lambda x: None)


def test_parallel_map_keeps_order_and_uses_threads():
    import threading
    names = set()

    def f(x):
        return tf.py_function(lambda v: (names.add(threading.current_thread().name), v)[1],
                              [x], tf.int64) * 2
    ds = Dataset.range(200).map(f, num_parallel_calls=4)
    assert values(ds) == [2 * i for i in range(200)]
    assert any(n.startswith("tapeflow-map") for n in names)
    auto = Dataset.range(50).map(lambda x: x + 1, num_parallel_calls=tf.data.AUTOTUNE)
    assert values(auto) == list(range(1, 51))
    options = tf.data.Options()
    options.deterministic = False
    loose = Dataset.range(50).map(lambda x: x + 1, num_parallel_calls=2).with_options(options)
    assert sorted(values(loose)) == list(range(1, 51))
    assert loose.options().deterministic is False
    assert Dataset.range(3).options().deterministic is None


def test_filter():
    assert values(Dataset.range(10).filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert int(Dataset.range(10).filter(lambda x: True).cardinality()) == -2
    with pytest.raises(ValueError, match="tf.bool scalar"):
        Dataset.range(3).filter(lambda x: x)


def test_batch_and_drop_remainder():
    assert values(Dataset.range(7).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(Dataset.range(7).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert Dataset.range(7).batch(3).element_spec == tf.TensorSpec([None], tf.int64)
    assert Dataset.range(7).batch(3, True).element_spec == tf.TensorSpec([3], tf.int64)
    assert [len(Dataset.range(7).batch(3)), len(Dataset.range(7).batch(3, True))] == [3, 2]
    # through a map (not the slices fast path), with a structure
    ds = Dataset.from_tensor_slices((np.arange(5), np.arange(5.0))).map(
        lambda a, b: (a * 2, b)).batch(2)
    assert [(a.tolist(), b.tolist()) for a, b in ds.as_numpy_iterator()] == \
        [([0, 2], [0.0, 1.0]), ([4, 6], [2.0, 3.0]), ([8], [4.0])]
    with pytest.raises(InvalidArgumentError, match="greater than zero"):
        Dataset.range(3).batch(0)


def test_batching_ragged_elements_names_the_shapes():
    ragged = Dataset.from_generator(lambda: ([1] * n for n in (1, 1, 2)),
                                    output_signature=tf.TensorSpec([None], tf.int32))
    with assert_engine_state_intact():
        with pytest.raises(InvalidArgumentError,
                           match=r"batch.*component 0.*shape \[1\].*element 2.*\[2\].*padded"):
            list(ragged.batch(3))


def test_padded_batch():
    ragged = Dataset.from_generator(lambda: ([n] * n for n in (1, 2, 3)),
                                    output_signature=tf.TensorSpec([None], tf.int64))
    assert values(ragged.padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    fixed = ragged.padded_batch(2, padded_shapes=[5], padding_values=np.int64(-1))
    assert fixed.element_spec == tf.TensorSpec([None, 5], tf.int64)
    assert values(fixed)[1] == [[3, 3, 3, -1, -1]]
    with pytest.raises(InvalidArgumentError, match="smaller size"):
        list(ragged.padded_batch(2, padded_shapes=[2]))


def test_unbatch():
    ds = Dataset.from_tensors(([1, 2], [3, 4])).unbatch()
    assert values(ds) == [(1, 3), (2, 4)]
    assert values(Dataset.range(5).batch(2).unbatch()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.range(3).unbatch()


def test_shuffle_is_a_permutation_with_tensorflows_buffer_semantics():
    ds = Dataset.range(100).shuffle(10, seed=3)
    out = values(ds)
    assert sorted(out) == list(range(100)) and out != list(range(100))
    # a buffer of 10 can only emit an element after reading it: element k appears at a
    # position >= k - 9 (TensorFlow's fill-then-replace buffer)
    assert all(pos >= value - 9 for pos, value in enumerate(out))
    assert values(Dataset.range(5).shuffle(1, seed=1)) == [0, 1, 2, 3, 4]
    with pytest.raises(InvalidArgumentError, match="greater than zero"):
        Dataset.range(3).shuffle(0)


def test_shuffle_seeds_and_reshuffle_each_iteration():
    ds = Dataset.range(20).shuffle(20, seed=7)
    first, second = values(ds), values(ds)
    assert first != second  # a new order each iteration
    assert values(Dataset.range(20).shuffle(20, seed=7)) == first  # same seed, same orders
    fixed = Dataset.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    epochs = values(Dataset.range(10).shuffle(10, seed=1).repeat(2))
    assert sorted(epochs[:10]) == sorted(epochs[10:]) == list(range(10))
    assert epochs[:10] != epochs[10:]  # repeat reshuffles every epoch
    tf.random.set_seed(5)
    a = values(Dataset.range(20).shuffle(20))
    tf.random.set_seed(5)
    b = values(Dataset.range(20).shuffle(20))
    tf.random.set_seed(None)
    assert a == b  # the global seed makes unseeded shuffles reproducible


def test_repeat_take_skip_and_cardinality():
    assert values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(Dataset.range(0).repeat()) == []
    assert values(Dataset.range(5).take(-1)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(5).skip(3)) == [3, 4]
    assert values(Dataset.range(5).skip(-1)) == []
    card = lambda d: int(d.cardinality())  # noqa: E731
    assert card(Dataset.range(3).repeat()) == tf.data.INFINITE_CARDINALITY == -1
    assert card(Dataset.range(0).repeat()) == 0
    assert card(Dataset.range(3).repeat(4)) == 12
    assert card(Dataset.range(10).repeat().take(5)) == 5
    assert card(Dataset.range(10).skip(4)) == 6
    assert card(Dataset.range(10).batch(3)) == 4
    assert card(Dataset.range(3).filter(lambda x: True)) == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(3).filter(lambda x: True))


def test_prefetch_cache_enumerate_shard():
    assert values(Dataset.range(50).prefetch(3)) == list(range(50))
    assert values(Dataset.range(5).prefetch(tf.data.AUTOTUNE)) == list(range(5))
    assert values(Dataset.range(5).prefetch(0)) == list(range(5))
    calls = []
    cached = Dataset.range(4).map(
        lambda x: tf.py_function(lambda v: (calls.append(1), v)[1], [x], tf.int64)).cache()
    assert values(cached) == values(cached) == [0, 1, 2, 3]
    assert len(calls) == 4  # the second pass replays the cache
    assert values(Dataset.range(5, 7).enumerate()) == [(0, 5), (1, 6)]
    assert values(Dataset.range(5, 7).enumerate(start=10)) == [(10, 5), (11, 6)]
    assert Dataset.range(3).enumerate().element_spec == (tf.TensorSpec([], tf.int64),) * 2
    assert values(Dataset.range(7).shard(3, 1)) == [1, 4]
    assert len(Dataset.range(7).shard(3, 0)) == 3 and len(Dataset.range(7).shard(3, 2)) == 2
    with pytest.raises(InvalidArgumentError, match=r"between 0 and 1 \(currently index = 2\)"):
        Dataset.range(3).shard(2, 2)


def test_prefetch_passes_errors_on():
    def gen():
        yield 1.0
        raise RuntimeError("boom in the generator")
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.float32))
    with pytest.raises(RuntimeError, match="boom"):
        list(ds.prefetch(2))


def test_flat_map_and_interleave_order():
    ds = Dataset.range(3).flat_map(lambda x: Dataset.range(x))
    assert values(ds) == [0, 0, 1]
    inter = Dataset.range(1, 6).interleave(
        lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
    # TensorFlow's documented order
    assert values(inter) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                             3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    assert inter.element_spec == tf.TensorSpec([], tf.int64)
    with pytest.raises(TypeError, match="Dataset"):
        Dataset.range(3).flat_map(lambda x: x)


# ---------------------------------------------------------------------- inspection


def test_repr_len_and_single_element():
    assert repr(Dataset.from_tensor_slices([1, 2])) == \
        "<_TensorSliceDataset element_spec=TensorSpec(shape=(), dtype=tf.int32, name=None)>"
    assert repr(Dataset.range(3).map(lambda x: x)).startswith("<_MapDataset element_spec=")
    assert int(Dataset.range(5).take(1).get_single_element()) == 0
    with pytest.raises(InvalidArgumentError, match="empty"):
        Dataset.range(0).get_single_element()
    with pytest.raises(InvalidArgumentError, match="more than one"):
        Dataset.range(2).get_single_element()
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10


def test_iterators_stop_as_tensorflow_does():
    it = iter(Dataset.range(2))
    assert [int(next(it)), int(it.get_next())] == [0, 1]
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(OutOfRangeError, match="End of sequence"):
        it.get_next()
    opt = iter(Dataset.range(1)).get_next_as_optional()
    assert bool(opt.has_value()) and int(opt.get_value()) == 0
    assert not bool(iter(Dataset.range(0)).get_next_as_optional().has_value())


def test_dataset_ops_are_not_recorded_by_tapes():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        total = x * 1.0
        for v in Dataset.range(3).map(lambda i: tf.cast(i, tf.float32) * 2.0):
            total = total + v
    assert float(total) == 8.0 and float(tape.gradient(total, x)) == 1.0


def test_batches_of_shuffled_slices_are_gathered_in_the_element_order():
    x = np.arange(40).reshape(20, 2)
    direct = Dataset.from_tensor_slices(x).shuffle(8, seed=2).repeat(2).batch(6)
    via_map = Dataset.from_tensor_slices(x).shuffle(8, seed=2).repeat(2).map(
        lambda r: r).batch(6)  # the map forces the element by element path
    got = [b.tolist() for b in direct.as_numpy_iterator()]
    assert got == [b.tolist() for b in via_map.as_numpy_iterator()]
    assert [len(b) for b in got] == [6] * 6 + [4]
    rows = [tuple(r) for b in got for r in b]
    assert sorted(rows[:20]) == sorted(rows[20:]) == [tuple(r) for r in x.tolist()]
    dropped = Dataset.from_tensor_slices(x).shuffle(8, seed=2).take(13).batch(6, True)
    assert [len(b) for b in dropped.as_numpy_iterator()] == [6, 6]


def test_padded_batch_of_structures():
    pairs = Dataset.from_generator(lambda: (([n] * n, n) for n in (1, 3)),
                                   output_signature=(tf.TensorSpec([None], tf.int32),
                                                     tf.TensorSpec([], tf.int32)))
    out = pairs.padded_batch(2, padded_shapes=([4], []), padding_values=(9, 0))
    assert out.element_spec == (tf.TensorSpec([None, 4], tf.int32),
                                tf.TensorSpec([None], tf.int32))
    (tokens, lengths), = values(out)
    assert tokens == [[1, 9, 9, 9], [3, 3, 3, 9]] and lengths == [1, 3]
    with pytest.raises(ValueError, match="does not match the element structure"):
        pairs.padded_batch(2, padded_shapes=[4])


def test_parallel_map_gives_the_serial_results():
    def f(x):  # enough ops that concurrent runs of the graph would interleave
        v = tf.cast(x, tf.float64) * tf.range(500.0, dtype=tf.float64)
        return tf.reduce_sum(tf.sin(v) * tf.cos(v) + v * 0.5), tf.exp(-v[:3])
    serial = list(Dataset.range(150).map(f).as_numpy_iterator())
    parallel = list(Dataset.range(150).map(f, num_parallel_calls=6).as_numpy_iterator())
    assert len(parallel) == 150
    for (a, b), (c, d) in zip(serial, parallel):
        assert a == c and b.tolist() == d.tolist()
    x = np.arange(500.0)
    assert serial[3][0] == pytest.approx(np.sum(np.sin(3 * x) * np.cos(3 * x) + 1.5 * x))


def test_map_leaves_the_source_arrays_alone():
    src = np.arange(20.0).reshape(10, 2)
    keep = src.copy()
    out = list(Dataset.from_tensor_slices(src).map(lambda x: tf.exp(x * 2.0 + 1.0) - x)
               .as_numpy_iterator())
    np.testing.assert_allclose(out[3], np.exp(keep[3] * 2 + 1) - keep[3], rtol=1e-12)
    list(Dataset.from_tensor_slices(src).batch(4).map(lambda x: tf.nn.relu(x - 3.0) * 2.0))
    assert np.array_equal(src, keep)


def test_apply():
    evens = lambda ds: ds.filter(lambda x: x % 2 == 0)  # noqa: E731
    assert values(Dataset.range(7).apply(evens)) == [0, 2, 4, 6]
    with pytest.raises(TypeError, match="must return a Dataset"):
        Dataset.range(3).apply(lambda ds: 3)


def test_parallel_interleave_keeps_the_order_and_reads_ahead():
    import time

    def slow(n):
        for i in range(3):
            time.sleep(0.03)  # reading a file, say: releases the GIL
            yield int(n) * 10 + i

    def make(parallel):
        return Dataset.range(4).interleave(
            lambda n: Dataset.from_generator(slow, args=(n,),
                                             output_signature=tf.TensorSpec([], tf.int64)),
            cycle_length=4, block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE if parallel else None)

    start = time.perf_counter()
    sequential = values(make(False))
    serial_time = time.perf_counter() - start
    start = time.perf_counter()
    parallel = values(make(True))
    parallel_time = time.perf_counter() - start
    assert sequential == parallel == [0, 10, 20, 30, 1, 11, 21, 31, 2, 12, 22, 32]
    assert serial_time > 0.3 and parallel_time < 0.6 * serial_time, (serial_time,
                                                                     parallel_time)
