"""Iterating datasets: inside traced functions, across processes, checkpointed, in bounded
memory, and overlapped with the consumer's work."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import OutOfRangeError

Dataset = tf.data.Dataset
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------- in the graph


def test_for_loop_in_function_runs_in_the_graph_without_retracing():
    @tf.function
    def total(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    small, large = Dataset.range(5), Dataset.range(1000)
    assert int(total(small)) == 10
    assert int(total(small)) == 10  # a fresh iterator per call, as in TensorFlow
    cf = total.get_concrete_function(large)
    ops = {n.op for n in cf.graph.get_operations()}
    assert {"AnonymousIterator", "While", "DeleteIterator"} <= ops or \
        {"AnonymousIterator", "DeleteIterator"} <= ops
    from tapeflow.data import iterator as iterator_module
    before = len(iterator_module._HANDLES)
    assert int(total(large)) == sum(range(1000))
    assert len(iterator_module._HANDLES) == before  # the loop's iterator is dropped after it
    # one trace per dataset object (it is a Python argument), never per element
    assert total.experimental_get_tracing_count() == 2


def test_training_loop_over_batches_in_a_traced_function():
    x = np.linspace(-1, 1, 64).astype(np.float32)[:, None]
    y = 3.0 * x + 1.0
    ds = Dataset.from_tensor_slices((x, y)).batch(10)  # the last batch has 4 rows
    w, b = tf.Variable([[0.0]]), tf.Variable([0.0])
    opt = tf.optimizers.SGD(0.5)

    @tf.function
    def epoch():
        loss = tf.constant(0.0)
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((xb @ w + b - yb) ** 2)
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    for _ in range(60):
        last = epoch()
    assert float(last) < 1e-3
    np.testing.assert_allclose([float(w[0, 0]), float(b[0])], [3.0, 1.0], atol=0.02)
    assert epoch.experimental_get_tracing_count() == 1


def test_break_and_dict_elements_in_the_graph():
    ds = Dataset.from_tensor_slices({"a": np.arange(10), "b": np.arange(10) * 10})

    @tf.function
    def until(limit):
        s = tf.constant(0)
        for e in ds:
            if e["a"] >= limit:
                break
            s += tf.cast(e["b"], tf.int32)
        return s

    assert int(until(tf.constant(3, tf.int64))) == 0 + 10 + 20
    assert int(until(tf.constant(100, tf.int64))) == sum(range(10)) * 10


def test_return_nested_loops_and_python_counters_in_graph_loops():
    ds = Dataset.range(10)

    @tf.function
    def first_over(limit):
        for x in ds:
            if x > limit:
                return x
        return tf.constant(-1, tf.int64)

    assert int(first_over(tf.constant(4, tf.int64))) == 5
    assert int(first_over(tf.constant(40, tf.int64))) == -1

    @tf.function
    def nested():
        s = tf.constant(0, tf.int64)
        for a in Dataset.range(3):
            for b in Dataset.range(4):
                s += a * b
        return s

    assert int(nested()) == (0 + 1 + 2) * (0 + 1 + 2 + 3)

    @tf.function
    def count(d):
        n = 0  # a Python number carried by the loop becomes a tensor
        for _ in d:
            n += 1
        return n

    assert int(count(Dataset.range(10).batch(3))) == 4
    it = iter(Dataset.range(5))
    next(it)
    assert int(count(it)) == 4  # a for over an eager iterator consumes it in the graph
    with pytest.raises(StopIteration):
        next(it)


def test_an_eager_iterator_continues_inside_a_function():
    it = iter(Dataset.range(10))
    next(it)

    @tf.function
    def two(iterator):
        return next(iterator) + next(iterator)

    from tapeflow.data import iterator as iterator_module
    before = len(iterator_module._HANDLES) + len(iterator_module._EAGER_HANDLES)
    assert int(two(it)) == 1 + 2
    assert int(two(it)) == 3 + 4
    # the eager iterator has one handle however often the graph runs
    assert len(iterator_module._HANDLES) + len(iterator_module._EAGER_HANDLES) <= before + 1
    assert int(next(it)) == 5
    for _ in range(4):
        next(it)
    with pytest.raises(OutOfRangeError, match="End of sequence"):
        two(it)


# ---------------------------------------------------------------------- checkpoints


def test_checkpoint_restores_an_iterators_position(tmp_path):
    ds = Dataset.range(20).shuffle(20, seed=4).batch(3)
    it = iter(ds)
    seen = [next(it).numpy().tolist() for _ in range(2)]
    ckpt = tf.train.Checkpoint(it=it)
    path = ckpt.write(str(tmp_path / "it"))
    rest = [b.numpy().tolist() for b in it]
    assert sorted(sum(seen + rest, [])) == list(range(20))

    resumed = iter(ds)  # a new iterator, as after a restart: its own shuffle order...
    tf.train.Checkpoint(it=resumed).read(path)
    # ...until restored: then the elements the interrupted run had not seen, in its order
    assert [b.numpy().tolist() for b in resumed] == rest


def test_restoring_past_the_end_is_an_error(tmp_path):
    it = iter(Dataset.range(5))
    for _ in range(4):
        next(it)
    path = tf.train.Checkpoint(it=it).write(str(tmp_path / "it"))
    short = iter(Dataset.range(2))
    with pytest.raises(Exception, match="position is element 4.*only 2"):
        tf.train.Checkpoint(it=short).read(path)


# ---------------------------------------------------------------------- determinism


_ORDER = ("import tapeflow as tf; tf.random.set_seed(42); "
          "ds = tf.data.Dataset.range(50).shuffle(16, seed=11).map(lambda x: x * 2).batch(5); "
          "print([int(v) for b in ds for v in b])")


def test_same_seed_same_order_in_another_process():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", _ORDER], capture_output=True, text=True,
                         env=env, check=True, timeout=120).stdout.strip()
    tf.random.set_seed(42)
    here = [int(v) for b in Dataset.range(50).shuffle(16, seed=11).map(lambda x: x * 2)
            .batch(5) for v in b]
    tf.random.set_seed(None)
    assert out == str(here) and sorted(here) == list(range(0, 100, 2))


# ---------------------------------------------------------------------- resources


def test_memory_stays_bounded_on_a_ten_million_element_pipeline():
    ds = Dataset.range(10_000_000).map(lambda x: x * 2).shuffle(1000, seed=0)
    assert len(ds) == 10_000_000
    tracemalloc.start()  # before the buffer fills, so both measures count all of it
    try:
        it = iter(ds)
        for _ in range(1500):  # past the buffer's fill
            next(it)
        early, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            next(it)
        late, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 2000 more elements read; what is still held must not grow with them (an element
    # kept per read would add 2000 * ~170 bytes)
    assert late - early < 100_000, (early, late)


def test_prefetch_overlaps_the_input_with_the_consumer():
    def slow():
        for i in range(8):
            time.sleep(0.04)  # input work that releases the GIL, as NumPy kernels do
            yield i

    def run(ds):
        start = time.perf_counter()
        for _ in ds:
            time.sleep(0.04)  # the training step
        return time.perf_counter() - start

    sig = tf.TensorSpec([], tf.int64)
    serial = run(Dataset.from_generator(slow, output_signature=sig))
    overlapped = run(Dataset.from_generator(slow, output_signature=sig).prefetch(2))
    assert serial > 0.6  # 16 sleeps of 40 ms one after the other
    # overlapped: about 9 sleeps (the first element, then the steps beside the input)
    assert overlapped < 0.75 * serial, (serial, overlapped)


def test_parallel_map_overlaps_calls():
    def work(x):
        time.sleep(0.05)  # work that releases the GIL
        return x

    ds = Dataset.range(8).map(lambda x: tf.py_function(work, [x], tf.int64),
                              num_parallel_calls=4)
    start = time.perf_counter()
    assert [int(v) for v in ds] == list(range(8))
    parallel = time.perf_counter() - start
    # one after the other the 8 calls take at least 0.4 s; 4 at a time about 0.1 s
    assert parallel < 0.65 * 8 * 0.05, parallel


def test_autotuned_prefetch_moves_slow_inputs_to_a_thread():
    import threading
    names = []

    def slow():
        for i in range(12):
            names.append(threading.current_thread().name)
            time.sleep(0.002)
            yield i

    ds = Dataset.from_generator(slow, output_signature=tf.TensorSpec([], tf.int64))
    assert [int(v) for v in ds.prefetch(tf.data.AUTOTUNE)] == list(range(12))
    assert names[0] == threading.current_thread().name  # measured inline first...
    assert names[-1] == "tapeflow-prefetch"  # ...then produced ahead
    fast = [int(v) for v in Dataset.range(100).prefetch(tf.data.AUTOTUNE)]
    assert fast == list(range(100))
