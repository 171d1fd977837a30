"""tf.train.Checkpoint / CheckpointManager: round trips, numbering, rotation, and the safety
guarantees (all-or-nothing restore, clear errors, atomic writes, no pickle)."""
import io
import json
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.train import checkpoint as ckpt_mod

BF16 = tf.bfloat16.as_numpy_dtype


class Node:
    """A stand-in trackable (what Module and optimizers implement)."""

    def __init__(self, **children):
        self.children = children

    def _trackable_children(self):
        return dict(self.children)


def values(variables):
    return [v.numpy().copy() for v in variables]


def assert_unchanged(variables, before):
    for v, b in zip(variables, before):
        np.testing.assert_array_equal(v.numpy(), b)


def model_and_optimizer():
    kernel = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    bias = tf.Variable(np.zeros(3, np.float32))
    w = tf.Variable(np.float64(2.5))
    model = Node(dense=Node(kernel=kernel, bias=bias), layers=[Node(w=w)])
    iterations = tf.Variable(7, dtype=tf.int64, trainable=False)
    m0, m1 = tf.Variable([1.0, -1.0]), tf.Variable([[3.0]])
    opt = Node(iterations=iterations, m=[m0, m1])
    return model, opt, [kernel, bias, w, iterations, m0, m1]


VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
DATA = ".data-00000-of-00001"


def stored(path):
    """{tapeflow path: value} as stored in a checkpoint (TF's keys without their ending)."""
    reader = tf.train.load_checkpoint(path)
    return {key[:-len(VALUE)]: reader.get_tensor(key)
            for key in reader.get_variable_to_shape_map() if key.endswith(VALUE)}


def files(path):
    return [path + ".index", path + DATA]


def tmp_files(directory):
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


# ------------------------------------------------------------------ round trips


def test_nested_round_trip_restores_values_and_dtypes(tmp_path):
    model, opt, variables = model_and_optimizer()
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    saved = values(variables)
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-1")
    for v in variables:
        v.assign(np.full(v.shape, 9, dtype=v.dtype.as_numpy_dtype))
    status = ckpt.restore(path)
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
    for v, s in zip(variables, saved):
        np.testing.assert_array_equal(v.numpy(), s)
        assert v.numpy().dtype == s.dtype
    assert [v.dtype for v in variables] == [tf.float32, tf.float32, tf.float64, tf.int64,
                                            tf.float32, tf.float32]


def test_keys_are_tensorflows_object_graph_paths(tmp_path):
    model, opt, _ = model_and_optimizer()
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "w"))
    assert sorted(os.listdir(tmp_path)) == ["w" + DATA, "w.index"]
    assert [k for k, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "model/dense/bias" + VALUE, "model/dense/kernel" + VALUE,
        "model/layers/0/w" + VALUE, "optimizer/iterations" + VALUE, "optimizer/m/0" + VALUE,
        "optimizer/m/1" + VALUE]
    reader = tf.train.load_checkpoint(path)
    assert reader.get_variable_to_shape_map()["model/dense/kernel" + VALUE] == [2, 3]
    assert reader.get_variable_to_dtype_map()["model/dense/kernel" + VALUE] == tf.float32
    np.testing.assert_array_equal(tf.train.load_variable(path, "model/dense/kernel" + VALUE),
                                  np.arange(6).reshape(2, 3))


def test_plain_variables_and_child_lists_dicts(tmp_path):
    a, b, c = tf.Variable(1.0), tf.Variable([2, 3]), tf.Variable([[4.0]])
    ckpt = tf.train.Checkpoint(a=a, group=[b, {"c": c}])
    path = ckpt.write(str(tmp_path / "x"))
    assert sorted(stored(path)) == ["a", "group/0", "group/1/c"]
    a.assign(0.0), b.assign([0, 0]), c.assign([[0.0]])
    ckpt.read(path).assert_consumed()
    assert a.numpy() == 1.0 and b.numpy().tolist() == [2, 3] and c.numpy().tolist() == [[4]]


def test_restore_goes_through_variable_assign(tmp_path, monkeypatch):
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.write(str(tmp_path / "a"))
    calls = []
    original = tf.Variable.assign

    def spy(self, value, read_value=True):
        calls.append(self)
        return original(self, value, read_value)

    monkeypatch.setattr(tf.Variable, "assign", spy)
    v.assign([5.0, 5.0])
    calls.clear()
    ckpt.read(path)
    assert any(c is v for c in calls)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_bfloat16_round_trip(tmp_path):
    raw = np.array([1.5, -2.25, 3.0e38, 1e-3], dtype=BF16)
    v = tf.Variable(raw)
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.write(str(tmp_path / "bf"))
    assert tf.train.load_checkpoint(path).get_variable_to_dtype_map()["v" + VALUE] == \
        tf.bfloat16
    v.assign(np.zeros(4, BF16))
    ckpt.read(path).assert_consumed()
    assert v.dtype == tf.bfloat16 and v.numpy().dtype == BF16
    np.testing.assert_array_equal(v.numpy().view(np.uint16), raw.view(np.uint16))


def test_declared_unknown_dimension_accepts_other_lengths(tmp_path):
    src = tf.Variable([1.0, 2.0, 3.0])
    path = tf.train.Checkpoint(v=src).write(str(tmp_path / "s"))
    dst = tf.Variable([0.0], shape=[None])
    tf.train.Checkpoint(v=dst).read(path).assert_consumed()
    np.testing.assert_array_equal(dst.numpy(), [1.0, 2.0, 3.0])


# ------------------------------------------------------------------ dedupe


def test_shared_variable_is_saved_once_and_restores_through_either_path(tmp_path):
    shared, other = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    encoder = Node(embedding=shared)
    decoder = Node(embedding=shared, out=other)
    ckpt = tf.train.Checkpoint(encoder=encoder, decoder=decoder)
    path = ckpt.write(str(tmp_path / "d"))
    assert sorted(stored(path)) == ["decoder/out", "encoder/embedding"]
    # the object graph gives the second path: TF's reader and load_variable find it
    np.testing.assert_array_equal(tf.train.load_variable(path, "decoder/embedding"), [1, 2])

    fresh = tf.Variable([0.0, 0.0])
    status = tf.train.Checkpoint(decoder=Node(embedding=fresh, out=tf.Variable(0.0))).read(path)
    np.testing.assert_array_equal(fresh.numpy(), [1.0, 2.0])
    status.assert_consumed()


def test_shared_object_and_cycle_are_walked_once(tmp_path):
    v = tf.Variable(1.0)
    block = Node(v=v)
    root = Node(a=block, b=block)
    root.children["parent"] = root  # a cycle back to the root
    path = tf.train.Checkpoint(m=root).write(str(tmp_path / "c"))
    assert list(stored(path)) == ["m/a/v"]


# ------------------------------------------------------------------ numbering, write, index


def test_save_numbers_with_its_own_counter_and_write_does_not(tmp_path):
    v = tf.Variable(1.0)
    ckpt = tf.train.Checkpoint(v=v)
    prefix = str(tmp_path / "run" / "ckpt")  # a missing directory is created
    paths = [ckpt.save(prefix) for _ in range(3)]
    assert paths == [prefix + "-1", prefix + "-2", prefix + "-3"]
    assert int(ckpt.save_counter.numpy()) == 3 and ckpt.save_counter.dtype == tf.int64
    assert tf.train.latest_checkpoint(str(tmp_path / "run")) == prefix + "-3"
    assert ckpt.write(str(tmp_path / "plain")) == str(tmp_path / "plain")
    assert int(ckpt.save_counter.numpy()) == 3
    assert all(os.path.isfile(f) for f in files(str(tmp_path / "plain")))
    assert tf.train.latest_checkpoint(str(tmp_path / "run")) == prefix + "-3"


def test_save_counter_is_saved_and_restored(tmp_path):
    v = tf.Variable(1.0)
    ckpt = tf.train.Checkpoint(v=v)
    prefix = str(tmp_path / "ckpt")
    ckpt.save(prefix)
    path = ckpt.save(prefix)
    again = tf.train.Checkpoint(v=tf.Variable(0.0))
    again.restore(path).assert_consumed()
    assert int(again.save_counter.numpy()) == 2
    assert again.save(prefix) == prefix + "-3"


def test_read_and_restore_of_a_written_file(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    path = ckpt.write(str(tmp_path / "w"))
    ckpt.read(path).assert_consumed()  # write/read: no save counter expected
    status = tf.train.Checkpoint(v=tf.Variable(0.0)).restore(path)
    with pytest.raises(AssertionError, match="save_counter"):
        status.assert_consumed()  # restore expects the counter, as TF


def test_restore_none_is_a_noop(tmp_path):
    v = tf.Variable([1.0, 2.0])
    status = tf.train.Checkpoint(v=v).restore(None)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert status.expect_partial() is status
    with pytest.raises(AssertionError, match="No checkpoint"):
        status.assert_consumed()
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_checkpoint_attributes_and_bad_arguments():
    v = tf.Variable(1.0)
    ckpt = tf.train.Checkpoint(v=v)
    assert ckpt.v is v
    other = Node(w=tf.Variable(2.0))
    ckpt.model = other
    assert ckpt.model is other
    with pytest.raises(ValueError, match="trackable.*'x'.*int"):
        tf.train.Checkpoint(x=3)
    with pytest.raises(ValueError, match="reserved"):
        tf.train.Checkpoint(save_counter=tf.Variable(1))
    with pytest.raises(TypeError, match="'m/t'.*neither a Variable nor trackable"):
        tf.train.Checkpoint(m=Node(t="text")).write("/nonexistent-never-written")


def test_root_object_children_are_top_level(tmp_path):
    root = Node(w=tf.Variable([1.0]))
    ckpt = tf.train.Checkpoint(root, extra=tf.Variable(2.0))
    path = ckpt.write(str(tmp_path / "r"))
    assert list(stored(path)) == ["extra", "w"]
    assert ckpt.extra.numpy() == 2.0


# ------------------------------------------------------------------ mismatches: nothing changes


def saved_pair(tmp_path):
    """A checkpoint of {a: float32[2,3], b: float32[3]} and fresh variables to restore."""
    a, b = tf.Variable(np.ones((2, 3), np.float32)), tf.Variable(np.ones(3, np.float32))
    path = tf.train.Checkpoint(model=Node(a=a, b=b)).write(str(tmp_path / "pair"))
    return path


def test_missing_variable_raises_and_changes_nothing(tmp_path):
    path = saved_pair(tmp_path)
    a, b = tf.Variable(np.zeros((2, 3), np.float32)), tf.Variable(np.zeros(3, np.float32))
    c = tf.Variable([5.0, 6.0])
    before = values([a, b, c])
    ckpt = tf.train.Checkpoint(model=Node(a=a, b=b, c=c))
    with pytest.raises(ValueError) as err:
        ckpt.read(path)
    msg = str(err.value)
    assert "'model/c'" in msg and "missing" in msg and "[2]" in msg and "float32" in msg
    assert "no variable was changed" in msg
    assert_unchanged([a, b, c], before)  # a and b matched, yet were not assigned


def test_shape_mismatch_names_path_and_both_shapes(tmp_path):
    path = saved_pair(tmp_path)
    a, b = tf.Variable(np.zeros((3, 2), np.float32)), tf.Variable(np.zeros(3, np.float32))
    before = values([a, b])
    with pytest.raises(ValueError) as err:
        tf.train.Checkpoint(model=Node(a=a, b=b)).read(path)
    msg = str(err.value)
    assert "'model/a'" in msg and "shape" in msg and "[3, 2]" in msg and "[2, 3]" in msg
    assert "'model/b'" not in msg
    assert_unchanged([a, b], before)


def test_dtype_mismatch_names_path_and_both_dtypes(tmp_path):
    path = saved_pair(tmp_path)
    a, b = tf.Variable(np.zeros((2, 3), np.float32)), tf.Variable(np.zeros(3, np.float64))
    before = values([a, b])
    with pytest.raises(ValueError) as err:
        tf.train.Checkpoint(model=Node(a=a, b=b)).read(path)
    msg = str(err.value)
    assert "'model/b'" in msg and "dtype" in msg and "float64" in msg and "float32" in msg
    assert_unchanged([a, b], before)
    assert b.dtype == tf.float64


def test_every_problem_is_reported_at_once(tmp_path):
    path = saved_pair(tmp_path)
    a, b = tf.Variable(np.zeros(6, np.float32)), tf.Variable(np.zeros(3, np.int32))
    with pytest.raises(ValueError) as err:
        tf.train.Checkpoint(model=Node(a=a, b=b, c=tf.Variable(1.0))).read(path)
    msg = str(err.value)
    assert "'model/a'" in msg and "'model/b'" in msg and "'model/c'" in msg


def test_extra_values_restore_but_assert_consumed_names_them(tmp_path):
    path = saved_pair(tmp_path)
    a = tf.Variable(np.zeros((2, 3), np.float32))
    status = tf.train.Checkpoint(model=Node(a=a)).read(path)
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))
    status.assert_existing_objects_matched()
    assert status.expect_partial() is status
    with pytest.raises(AssertionError, match="model/b"):
        status.assert_consumed()


def test_variables_created_after_restore_fail_the_assertions(tmp_path):
    path = saved_pair(tmp_path)
    model = Node(a=tf.Variable(np.zeros((2, 3), np.float32)),
                 b=tf.Variable(np.zeros(3, np.float32)))
    status = tf.train.Checkpoint(model=model).read(path)
    status.assert_consumed()
    model.children["late"] = tf.Variable(1.0)
    with pytest.raises(AssertionError, match="model/late"):
        status.assert_existing_objects_matched()


def test_nothing_matched_fails_nontrivial_match(tmp_path):
    path = tf.train.Checkpoint(x=tf.Variable(1.0)).write(str(tmp_path / "x"))
    status = tf.train.Checkpoint(y=Node()).read(path).expect_partial()
    with pytest.raises(AssertionError):
        status.assert_nontrivial_match()


# ------------------------------------------------------------------ corrupt files


@pytest.fixture
def good(tmp_path):
    # a file of tapeflow's earlier format (.npz), which still loads; the TensorFlow format's
    # damaged files are tested in test_tf_checkpoints.py
    v = tf.Variable(np.arange(64, dtype=np.float32))
    path = str(tmp_path / "good")
    ckpt_mod.format.write_npz(path + ".npz", {"v": v.numpy()}, {})
    v.assign(np.zeros(64, np.float32))
    return v, path, path + ".npz"


def test_truncated_file_raises_clearly_and_changes_nothing(good):
    v, path, file = good
    data = Path(file).read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 5, 0):
        Path(file).write_bytes(data[:cut])
        with pytest.raises(tf.errors.DataLossError, match="corrupt, truncated or not a tapeflow"):
            tf.train.Checkpoint(v=v).read(path)
        np.testing.assert_array_equal(v.numpy(), np.zeros(64))


def test_flipped_byte_is_caught_by_the_checksum(good):
    v, path, file = good
    data = bytearray(Path(file).read_bytes())
    with zipfile.ZipFile(file) as zf:
        info = zf.getinfo("v0.npy")
    data[info.header_offset + 30 + len(info.filename) + info.file_size - 8] ^= 0xFF
    Path(file).write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match="corrupt.*CRC"):
        tf.train.Checkpoint(v=v).read(path)
    np.testing.assert_array_equal(v.numpy(), np.zeros(64))


def test_foreign_npz_and_missing_file(tmp_path, good):
    v, _, _ = good
    np.savez(str(tmp_path / "foreign.npz"), v0=np.arange(64, dtype=np.float32))
    with pytest.raises(ValueError, match="corrupt.*metadata.*no variable was changed"):
        tf.train.Checkpoint(v=v).read(str(tmp_path / "foreign"))
    with pytest.raises(tf.errors.NotFoundError, match="no checkpoint at"):
        tf.train.Checkpoint(v=v).restore(str(tmp_path / "absent"))
    with pytest.raises(tf.errors.NotFoundError, match="latest_checkpoint"):
        tf.train.Checkpoint(v=v).restore(str(tmp_path))
    np.testing.assert_array_equal(v.numpy(), np.zeros(64))


def write_raw_npz(file, entries, **arrays):
    meta = {"format": "tapeflow.checkpoint", "version": 1, "entries": entries, "aliases": {}}
    blob = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(file, __metadata__=blob, **arrays)  # np.savez pickles object arrays


class Boom:
    """Unpickling this would run code."""
    triggered = False

    def __reduce__(self):
        return (Boom.trigger, ())

    @staticmethod
    def trigger():
        Boom.triggered = True
        return "boom"


def test_object_arrays_are_refused_without_unpickling(tmp_path, good):
    v, _, _ = good
    file = str(tmp_path / "evil.npz")
    evil = np.empty(64, dtype=object)
    evil[:] = Boom()
    write_raw_npz(file, [{"name": "v", "key": "v0", "dtype": "float32", "shape": [64]}],
                  v0=evil)
    with pytest.raises(ValueError, match="Python objects.*refused"):
        tf.train.Checkpoint(v=v).read(file)
    assert not Boom.triggered
    np.testing.assert_array_equal(v.numpy(), np.zeros(64))


def test_metadata_disagreeing_with_data_is_corrupt(tmp_path, good):
    v, _, _ = good
    file = str(tmp_path / "lies.npz")
    write_raw_npz(file, [{"name": "v", "key": "v0", "dtype": "float32", "shape": [64]}],
                  v0=np.zeros(64, np.float64))
    with pytest.raises(ValueError, match="corrupt.*'v'.*float64.*metadata.*float32"):
        tf.train.Checkpoint(v=v).read(file)
    write_raw_npz(file, [{"name": "v", "key": "v0", "dtype": "float32", "shape": [64]}],
                  v0=np.zeros(64, np.float32))
    meta = {"format": "tapeflow.checkpoint", "version": 99, "entries": []}
    np.savez(file, __metadata__=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with pytest.raises(ValueError, match="version 99"):
        tf.train.Checkpoint(v=v).read(file)


# ------------------------------------------------------------------ atomic writes


def failing_writer(monkeypatch, after):
    """Files written after the first `after` fail midway: half their bytes, then a crash."""
    real = ckpt_mod.format._write_temp
    calls = []

    def write_temp(path, write):
        calls.append(path)
        if len(calls) > after:
            def half_then_crash(f):
                buffer = io.BytesIO()
                write(buffer)
                f.write(buffer.getvalue()[:len(buffer.getvalue()) // 2])
                raise OSError("disk full (simulated)")
            return real(path, half_then_crash)
        return real(path, write)

    monkeypatch.setattr(ckpt_mod.format, "_write_temp", write_temp)  # each file's writer


@pytest.mark.parametrize("after", [0, 1], ids=["in_the_data_file", "in_the_index"])
def test_a_crash_mid_write_leaves_the_old_checkpoint(tmp_path, monkeypatch, after):
    a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0])
    ckpt = tf.train.Checkpoint(a=a, b=b)
    path = ckpt.write(str(tmp_path / "ckpt"))
    old_bytes = [Path(f).read_bytes() for f in files(path)]
    a.assign([7.0, 7.0]), b.assign([7.0])
    failing_writer(monkeypatch, after=after)  # the crash comes before any file is replaced
    with pytest.raises(OSError, match="simulated"):
        ckpt.write(str(tmp_path / "ckpt"))
    monkeypatch.undo()
    assert [Path(f).read_bytes() for f in files(path)] == old_bytes
    assert tmp_files(tmp_path) == []
    ckpt.read(path).assert_consumed()
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [3.0])


def test_a_failed_save_keeps_counter_and_index(tmp_path, monkeypatch):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    prefix = str(tmp_path / "ckpt")
    ckpt.save(prefix)
    index = Path(tmp_path / "checkpoint").read_text()
    failing_writer(monkeypatch, after=1)
    with pytest.raises(OSError):
        ckpt.save(prefix)
    monkeypatch.undo()
    assert int(ckpt.save_counter.numpy()) == 1
    assert Path(tmp_path / "checkpoint").read_text() == index
    assert not os.path.exists(prefix + "-2.index") and tmp_files(tmp_path) == []
    assert ckpt.save(prefix) == prefix + "-2"


def test_a_failed_manager_save_keeps_its_state(tmp_path, monkeypatch):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1)
    first = manager.save()
    failing_writer(monkeypatch, after=0)
    with pytest.raises(OSError):
        manager.save()
    monkeypatch.undo()
    assert manager.checkpoints == [first] and os.path.isfile(first + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    assert tmp_files(tmp_path) == []


# ------------------------------------------------------------------ CheckpointManager


def test_manager_rotates_and_a_new_manager_picks_up(tmp_path):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    d = str(tmp_path / "run")
    manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(manager.save())
    assert paths == [os.path.join(d, f"ckpt-{i}") for i in (1, 2, 3, 4)]
    assert manager.checkpoints == paths[2:]
    assert manager.latest_checkpoint == paths[3]
    assert sorted(os.listdir(d)) == ["checkpoint", "ckpt-3" + DATA, "ckpt-3.index",
                                     "ckpt-4" + DATA, "ckpt-4.index"]
    assert tf.train.latest_checkpoint(d) == paths[3]

    v2 = tf.Variable(-1.0)
    ckpt2 = tf.train.Checkpoint(v=v2)
    again = tf.train.CheckpointManager(ckpt2, d, max_to_keep=2)
    assert again.checkpoints == paths[2:] and again.latest_checkpoint == paths[3]
    assert again.restore_or_initialize() == paths[3]
    assert v2.numpy() == 3.0 and int(ckpt2.save_counter.numpy()) == 4
    assert again.save() == os.path.join(d, "ckpt-5")
    assert again.checkpoints == [paths[3], os.path.join(d, "ckpt-5")]
    assert not any(os.path.exists(f) for f in files(paths[2]))


def test_manager_keeps_all_with_none_and_custom_numbers_and_names(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=None,
                                         checkpoint_name="model")
    saved = [manager.save() for _ in range(6)]
    assert manager.checkpoints == saved
    assert all(os.path.isfile(f) for p in saved for f in files(p))
    step = tf.Variable(100, dtype=tf.int64)
    assert manager.save(checkpoint_number=step) == str(tmp_path / "model-100")
    assert manager.save(checkpoint_number=7) == str(tmp_path / "model-7")
    assert manager.latest_checkpoint == str(tmp_path / "model-7")
    # re-saving an existing number moves it to the newest end
    assert manager.save(checkpoint_number=100) == str(tmp_path / "model-100")
    assert manager.checkpoints[-2:] == [str(tmp_path / "model-7"), str(tmp_path / "model-100")]


def test_manager_arguments_and_initialization(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="max_to_keep"):
            tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=bad)
    with pytest.raises(TypeError, match="Checkpoint"):
        tf.train.CheckpointManager(object(), str(tmp_path))
    called = []
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "new"),
                                         init_fn=lambda: called.append(1))
    assert manager.restore_or_initialize() is None and called == [1]


def test_manager_checkpoint_interval(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=None,
                                         step_counter=step, checkpoint_interval=10)
    assert manager.save() is not None
    step.assign(5)
    assert manager.save() is None
    assert manager.save(check_interval=False) is not None
    step.assign(15)
    assert manager.save() is not None
    assert len(manager.checkpoints) == 3


def test_manager_and_checkpoint_save_share_the_index(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    direct = ckpt.save(str(tmp_path / "ckpt"))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1)
    assert manager.latest_checkpoint == direct
    assert manager.checkpoints == []  # as TF: Checkpoint.save's files are not taken over
    p2, p3 = manager.save(), manager.save()
    assert manager.checkpoints == [p3] and os.path.isfile(direct + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path)) == p3
    assert not any(os.path.exists(f) for f in files(p2))


def test_latest_checkpoint_ignores_vanished_files(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    path = ckpt.save(str(tmp_path / "ckpt"))
    os.remove(path + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    (tmp_path / "checkpoint").write_text("garbage without structure")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # no checkpoint is left


def test_a_garbled_state_file_falls_back_to_the_newest_checkpoint(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    first, second = ckpt.save(str(tmp_path / "ckpt")), ckpt.save(str(tmp_path / "ckpt"))
    os.utime(first + ".index", (1e9, 1e9))  # unmistakably older
    for garbage in (b"garbage without structure", b"\xff\xfe\x00binary", b"",
                    b'model_checkpoint_path: "unterminated'):
        (tmp_path / "checkpoint").write_bytes(garbage)
        with pytest.warns(UserWarning, match="cannot be parsed.*ckpt-2"):
            assert tf.train.latest_checkpoint(str(tmp_path)) == second
    # a recorded checkpoint that is gone while another is there: that one, with a warning
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-9"\n')
    with pytest.warns(UserWarning, match="'.*ckpt-9', which does not exist.*ckpt-2"):
        assert tf.train.latest_checkpoint(str(tmp_path)) == second
    # a manager with a garbled index resumes from the newest checkpoint instead of
    # starting over
    (tmp_path / "checkpoint").write_bytes(b"garbage without structure")
    with pytest.warns(UserWarning, match="cannot be parsed"):
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(0.0)),
                                             str(tmp_path), max_to_keep=3)
    assert manager.latest_checkpoint == second
    assert manager.restore_or_initialize() == second
    assert manager.checkpoint.v.numpy() == 1.0


def test_a_flipped_bit_in_the_state_file_never_loses_the_latest_checkpoint(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    first, second = ckpt.save(str(tmp_path / "ckpt")), ckpt.save(str(tmp_path / "ckpt"))
    os.utime(first + ".index", (1e9, 1e9))
    state = (tmp_path / "checkpoint").read_bytes()
    for position in range(len(state)):
        for bit in (0x01, 0x80):
            damaged = bytearray(state)
            damaged[position] ^= bit
            (tmp_path / "checkpoint").write_bytes(bytes(damaged))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the fallback warns; its result matters
                assert tf.train.latest_checkpoint(str(tmp_path)) == second, (position, bit)


def test_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    finally:
        os.umask(old)
    assert all(os.stat(f).st_mode & 0o777 == 0o644 for f in files(path))
    assert os.stat(tmp_path / "checkpoint").st_mode & 0o777 == 0o644


def npy_bytes(array=None, header=None):
    buf = io.BytesIO()
    if header is not None:
        np.lib.format.write_array_header_1_0(buf, header)
    else:
        np.lib.format.write_array(buf, array)
    return buf.getvalue()


def test_header_declaring_more_data_than_stored_is_refused(tmp_path, good):
    v, _, _ = good
    huge = 2 ** 40  # allocating this would fail (or swap) before any check on the data
    meta = {"format": "tapeflow.checkpoint", "version": 1, "aliases": {},
            "entries": [{"name": "v", "key": "v0", "dtype": "float32", "shape": [huge]}]}
    file = str(tmp_path / "big.npz")
    with zipfile.ZipFile(file, "w") as zf:
        zf.writestr("__metadata__.npy",
                    npy_bytes(np.frombuffer(json.dumps(meta).encode(), np.uint8)))
        header = {"descr": "<f4", "fortran_order": False, "shape": (huge,)}
        zf.writestr("v0.npy", npy_bytes(header=header) + b"\0" * 256)
    with pytest.raises(ValueError, match="'v'.*declares more data than it holds"):
        tf.train.Checkpoint(v=v).read(file)


def test_a_failing_assign_midway_rolls_back(tmp_path, monkeypatch):
    a, b = tf.Variable([1.0]), tf.Variable([2.0])
    ckpt = tf.train.Checkpoint(a=a, b=b)
    path = ckpt.write(str(tmp_path / "r"))
    a.assign([5.0]), b.assign([6.0])
    original, calls = tf.Variable.assign, []

    def flaky(self, value, read_value=True):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("backend failure (simulated)")
        return original(self, value, read_value)

    monkeypatch.setattr(tf.Variable, "assign", flaky)
    with pytest.raises(RuntimeError, match="simulated"):
        ckpt.read(path)
    monkeypatch.undo()
    assert a.numpy().tolist() == [5.0] and b.numpy().tolist() == [6.0]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now


def test_manager_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(ckpt_mod.manager, "_time", clock)  # the manager's clock
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    d = str(tmp_path)
    manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=1,
                                         keep_checkpoint_every_n_hours=1)
    paths = []
    for t in (0.0, 1800.0, 4000.0, 6000.0):
        clock.now = t
        paths.append(manager.save())
    # ckpt-1 and ckpt-2 were within an hour of the start; ckpt-3 (t=4000) is preserved
    assert not os.path.exists(paths[0] + ".index") and not os.path.exists(paths[1] + ".index")
    assert os.path.isfile(paths[2] + ".index") and os.path.isfile(paths[2] + DATA)
    assert manager.checkpoints == [paths[3]]
    again = tf.train.CheckpointManager(ckpt, d, max_to_keep=1, keep_checkpoint_every_n_hours=1)
    assert again.checkpoints == [paths[3]]
    clock.now = 9000.0
    again.save()  # ckpt-4 (t=6000) is within the hour after ckpt-3: deleted
    assert not os.path.exists(paths[3] + ".index") and os.path.isfile(paths[2] + ".index")


def test_values_left_over_are_warned_about_unless_expected(tmp_path):
    path = saved_pair(tmp_path)
    model = Node(a=tf.Variable(np.zeros((2, 3), np.float32)))
    with pytest.warns(UserWarning, match="'model/b'.*expect_partial"):
        tf.train.Checkpoint(model=model).read(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.train.Checkpoint(model=model).read(path).expect_partial()
        status = tf.train.Checkpoint(model=model).read(path)
        with pytest.raises(AssertionError):
            status.assert_consumed()
        del status
        full = Node(a=tf.Variable(np.zeros((2, 3), np.float32)),
                    b=tf.Variable(np.zeros(3, np.float32)))
        tf.train.Checkpoint(model=full).read(path)  # everything used: nothing to say


def test_two_variables_at_one_path_are_refused():
    for first in (tf.Variable(0.0), tf.Variable([1.0, 2.0])):  # never tested for truth
        clash = Node(**{"a/b": first, "a": Node(b=tf.Variable(2.0))})
        with pytest.raises(ValueError, match="two different variables.*'m/a/b'"):
            tf.train.Checkpoint(m=clash).write("/nonexistent-never-written")
    same = tf.Variable(0.0)
    fine = Node(**{"a/b": same, "a": Node(b=same)})  # one variable, one path: fine
    assert list(ckpt_mod._collect(Node(m=fine))[0]) == ["m/a/b"]


class FreshLists:
    """Builds new containers on every call, as an attribute walk may."""

    def __init__(self, *variables):
        self.variables = variables

    def _trackable_children(self):
        return {"items": [list(self.variables)]}


def test_temporary_containers_are_all_walked(tmp_path):
    blocks = [FreshLists(tf.Variable(float(i)), tf.Variable([float(i)])) for i in range(20)]
    path = tf.train.Checkpoint(blocks=blocks).write(str(tmp_path / "t"))
    names = sorted(stored(path))
    assert len(names) == 40 and names[:2] == ["blocks/0/items/0/0", "blocks/0/items/0/1"]
