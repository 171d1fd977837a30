"""Checkpoints TensorFlow users move between: files real TensorFlow wrote (fixtures made by
fixtures/make_tf_checkpoints.py, committed as bytes; TensorFlow is never imported here)
restore into tapeflow objects of the same structure; tapeflow writes the same format;
every damaged file raises DataLossError and changes nothing."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import wire
from tapeflow.train.checkpoint import object_graph, tensor_bundle

from .fixtures.model_tree import model_classes

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_ckpt")
TF_PATH = os.path.join(FIXTURES, "ckpt-1")
VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
DATA = ".data-00000-of-00001"


# the classes make_tf_checkpoints.py saved with TensorFlow: the same source, on tapeflow
Dense, Model = model_classes(tf)


def zeroed(model):
    for v in model.variables:
        v.assign(np.zeros(v.shape, v.dtype.as_numpy_dtype))
    return model


def expected():
    """What TensorFlow saved: the same seeded values."""
    return {v.name: v.numpy() for v in Model().variables}, Model()


def assert_like_saved(model):
    reference = Model()
    for got, want in zip(model.variables, reference.variables):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


TF_KEYS = ["_CHECKPOINTABLE_OBJECT_GRAPH", "model/counts" + VALUE, "model/dense/kernel" + VALUE,
           "model/layers/0/bias" + VALUE, "model/layers/0/kernel" + VALUE,
           "model/layers/1/bias" + VALUE, "model/layers/1/kernel" + VALUE,
           "model/mask" + VALUE, "model/scale" + VALUE, "model/step" + VALUE,
           "model/tied" + VALUE, "save_counter" + VALUE]


# ------------------------------------------------------------------ reading TensorFlow's files


def test_a_tensorflow_checkpoint_restores_into_the_same_structure():
    model = zeroed(Model())
    ckpt = tf.train.Checkpoint(model=model)
    ckpt.restore(TF_PATH).assert_consumed().assert_existing_objects_matched()
    assert_like_saved(model)
    assert model.step.numpy() == 7 and model.mask.numpy().tolist() == [True, False, True]
    assert model.scale.dtype == tf.float64 and model.counts.dtype == tf.int32
    # TensorFlow stored the shared bias once, under its shortest path "model/tied"
    np.testing.assert_array_equal(model.dense.bias.numpy(), [0.0, 0.25])
    assert int(ckpt.save_counter.numpy()) == 1
    assert tf.train.latest_checkpoint(FIXTURES) == TF_PATH


def test_a_tensorflow_checkpoint_restores_into_layers_built_later():
    model = Model()
    late = tf.Module()
    ckpt = tf.train.Checkpoint(model=late)
    status = ckpt.restore(TF_PATH)
    late.dense = Dense(3, 2, seed=5)  # built after the restore: its first use restores it
    np.testing.assert_array_equal(late.dense.kernel.numpy(), model.dense.kernel.numpy())
    with pytest.raises(AssertionError):
        status.assert_consumed()  # the rest of the file has no objects here
    status.expect_partial()


def test_list_variables_load_variable_and_reader_use_tensorflows_keys():
    assert tf.train.list_variables(TF_PATH) == [
        (key, shape) for key, shape in zip(TF_KEYS, [[], [2, 3], [3, 2], [2], [2, 2], [1],
                                                     [2, 1], [3], [3], [], [2], []])]
    assert tf.train.list_variables(FIXTURES) == tf.train.list_variables(TF_PATH)
    want = Model()
    np.testing.assert_array_equal(
        tf.train.load_variable(TF_PATH, "model/layers/1/kernel" + VALUE),
        want.layers[1].kernel.numpy())
    # a tapeflow path, and the second path of the shared variable, find the same values
    np.testing.assert_array_equal(tf.train.load_variable(TF_PATH, "model/dense/bias"),
                                  [0.0, 0.25])
    reader = tf.train.load_checkpoint(TF_PATH)
    assert reader.has_tensor("model/step" + VALUE) and not reader.has_tensor("model/nope")
    assert reader.get_tensor("model/step" + VALUE) == 7
    dtypes = reader.get_variable_to_dtype_map()
    assert (dtypes["model/scale" + VALUE], dtypes["model/mask" + VALUE],
            dtypes["save_counter" + VALUE], dtypes["_CHECKPOINTABLE_OBJECT_GRAPH"]) == (
        tf.float64, tf.bool, tf.int64, "string")
    graph = reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    assert isinstance(graph, bytes) and b"model/dense/kernel" + VALUE.encode() in graph
    with pytest.raises(tf.errors.NotFoundError, match="model/nope"):
        tf.train.load_variable(TF_PATH, "model/nope")


@pytest.mark.parametrize("variant,message", [
    ("truncated_index", "shorter than a table's footer|magic|runs past"),
    ("truncated_data", "truncated"),
    ("flipped_data", "CRC-32C"),
])
def test_damaged_tensorflow_files_raise_data_loss_and_change_nothing(variant, message):
    model = zeroed(Model())
    with pytest.raises(tf.errors.DataLossError, match=message):
        tf.train.Checkpoint(model=model).restore(os.path.join(FIXTURES, "damaged", variant))
    assert all(not v.numpy().any() for v in model.variables)


# ------------------------------------------------------------------ writing TensorFlow's format


def test_tapeflow_writes_tensorflows_keys_and_object_graph(tmp_path):
    model = Model()
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1" + DATA, "ckpt-1.index"]
    keys = [key for key, _ in tf.train.list_variables(path)]
    # tapeflow's walk reaches the shared bias first as model/dense/bias, TensorFlow's as
    # model/tied: either key restores both paths, through the object graph
    assert keys == [k.replace("model/tied", "model/dense/bias") for k in TF_KEYS
                    if k != "model/tied" + VALUE][:2] + ["model/dense/bias" + VALUE] + [
        k for k in TF_KEYS[2:] if k != "model/tied" + VALUE]
    fresh = zeroed(Model())
    tf.train.Checkpoint(model=fresh).restore(path).assert_consumed()
    assert_like_saved(fresh)
    assert fresh.tied is fresh.dense.bias


def test_every_dtype_round_trips(tmp_path):
    values = {"f16": np.array([1.5, -2.0], np.float16), "f32": np.float32(3.25),
              "f64": np.array([[1e300]]), "bf16": np.array([1.5], tf.bfloat16.as_numpy_dtype),
              "i8": np.array([-128, 127], np.int8), "i16": np.array([-3], np.int16),
              "i32": np.array([2 ** 31 - 1], np.int32), "i64": np.array([-2 ** 63], np.int64),
              "u8": np.array([255], np.uint8), "u16": np.array([65535], np.uint16),
              "u32": np.array([2 ** 32 - 1], np.uint32), "u64": np.array([2 ** 64 - 1],
                                                                         np.uint64),
              "b": np.array([True, False]), "c64": np.array([1 + 2j], np.complex64),
              "c128": np.array([3 - 4j]), "empty": np.zeros((0, 3), np.float32)}
    variables = {k: tf.Variable(v) for k, v in values.items()}
    path = tf.train.Checkpoint(**variables).write(str(tmp_path / "all"))
    for k, v in values.items():
        got = tf.train.load_variable(path, k + VALUE)
        assert got.dtype == np.asarray(v).dtype and got.shape == np.shape(v), k
        np.testing.assert_array_equal(got, v)


def test_crc32c_pure_python_matches_the_c_implementation():
    assert wire.crc32c_py(b"123456789") == 0xE3069283  # the standard check value
    assert wire.crc32c_py(b"") == 0
    data = np.random.default_rng(0).integers(0, 256, 10_000, dtype=np.uint8).tobytes()
    assert wire.crc32c_py(data) == wire.crc32c(data)
    assert wire.crc32c_py(data[5000:], wire.crc32c_py(data[:5000])) == \
        wire.crc32c(data)


# ------------------------------------------------------------------ every damaged byte


@pytest.fixture
def saved(tmp_path):
    model = Model()
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "good"))
    return path, [open(path + suffix, "rb").read() for suffix in (".index", DATA)]


def restore_outcome(path):
    """"lost" (DataLossError, nothing changed) or "same" (the saved values restored)."""
    model = zeroed(Model())
    try:
        tf.train.Checkpoint(model=model).read(path)
    except tf.errors.DataLossError:
        assert all(not v.numpy().any() for v in model.variables)
        return "lost"
    assert_like_saved(model)
    return "same"


def file_outcome(index: bytes, data: bytes, want) -> str:
    """The reader's verdict on a checkpoint's bytes (in memory: this machine's file writes
    are slow): "lost" (DataLossError) or "same" (the values saved)."""
    try:
        values = tensor_bundle.decode_bundle(index, lambda number, count: data)
        values, aliases = object_graph.to_paths(values)
    except tf.errors.DataLossError:
        return "lost"
    except tensor_bundle.Corrupt:  # read_checkpoint turns these into DataLossError
        return "lost"
    assert aliases == want[1] and sorted(values) == sorted(want[0])
    for key, value in values.items():
        assert value.dtype == want[0][key].dtype
        np.testing.assert_array_equal(value, want[0][key])
    return "same"


@pytest.mark.parametrize("which", [0, 1], ids=["index", "data"])
def test_a_flipped_bit_anywhere_raises_data_loss_or_changes_nothing(saved, which):
    path, originals = saved
    want = tf.train.checkpoint.format.read_checkpoint(path)
    suffix = (".index", DATA)[which]
    data = originals[which]
    outcomes = {}
    for position in range(len(data)):
        for bit in (0x01, 0x80, 0x04):
            files = list(originals)
            damaged = bytearray(data)
            damaged[position] ^= bit
            files[which] = bytes(damaged)
            outcomes[position, bit] = file_outcome(*files, want)
    same = sorted({p for (p, _), o in outcomes.items() if o == "same"})
    # every byte is checksummed or checked, except in the index's footer (its last 48
    # bytes: two block handles as varints, zero padding, the magic number), whose padding
    # is never read, and a flipped top bit can extend a varint into it without changing it
    assert all(len(data) - 48 <= p < len(data) - 8 for p in same), same
    if which == 1:
        assert same == []
    # through the files, a restore from a damaged checkpoint changes nothing
    for position in range(2, len(data), max(1, len(data) // 12)):
        damaged = bytearray(data)
        damaged[position] ^= 0x04
        with open(path + suffix, "wb") as f:
            f.write(damaged)
        assert restore_outcome(path) == outcomes[position, 0x04]


def test_every_truncation_raises_data_loss(saved):
    path, (index, data) = saved
    want = tf.train.checkpoint.format.read_checkpoint(path)
    for cut in range(len(index)):
        assert file_outcome(index[:cut], data, want) == "lost", cut
    for cut in range(len(data)):
        assert file_outcome(index, data[:cut], want) == "lost", cut
    with open(path + ".index", "wb") as f:
        f.write(index[:len(index) // 2])
    assert restore_outcome(path) == "lost"
    with open(path + ".index", "wb") as f:
        f.write(index)
    with open(path + DATA, "wb") as f:
        f.write(data[:-1])
    assert restore_outcome(path) == "lost"
    os.remove(path + DATA)
    with pytest.raises(tf.errors.DataLossError, match="data file.*missing"):
        tf.train.Checkpoint(model=Model()).read(path)


def test_flipped_bytes_in_a_legacy_npz_raise_data_loss(tmp_path):
    # the earlier format: zipfile raised RuntimeError ("File is encrypted") or OSError
    # (EINVAL) for some flips before they were turned into DataLossError
    v = tf.Variable(np.arange(16, dtype=np.float32))
    path = str(tmp_path / "old")
    tf.train.checkpoint.format.write_npz(path + ".npz", {"v": v.numpy()}, {})
    data = open(path + ".npz", "rb").read()
    kinds = set()
    for position in range(0, len(data), 5):
        damaged = bytearray(data)
        damaged[position] ^= 0xFF
        with open(path + ".npz", "wb") as f:
            f.write(damaged)
        target = tf.Variable(np.zeros(16, np.float32))
        try:
            tf.train.Checkpoint(v=target).read(path)
            kinds.add("same")
            np.testing.assert_array_equal(target.numpy(), np.arange(16))
        except tf.errors.DataLossError:
            kinds.add("lost")
            assert not target.numpy().any()
    assert "lost" in kinds
    # its reader gives the names it stored (tapeflow paths)
    with open(path + ".npz", "wb") as f:
        f.write(data)
    assert tf.train.list_variables(path) == [("v", [16])]
    np.testing.assert_array_equal(tf.train.load_checkpoint(path).get_tensor("v"), np.arange(16))


def test_a_copy_of_a_tensorflow_checkpoint_under_another_name_restores(tmp_path):
    for suffix in (".index", DATA):
        shutil.copy(TF_PATH + suffix, str(tmp_path / "moved") + suffix)
    model = zeroed(Model())
    tf.train.Checkpoint(model=model).restore(str(tmp_path / "moved")).assert_consumed()
    assert_like_saved(model)
