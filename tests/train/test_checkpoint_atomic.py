"""Checkpoint writes keep their promise (issue #28): a write, a rewrite in place included,
is atomic whichever file-system step fails or is cut short by a crash; a failed save
leaves nothing behind; a bundle entry tapeflow cannot read raises TensorFlow's error
types naming the file and the key.

Failures are simulated by wrapping the file-system calls a write makes (os.replace,
os.rename, os.link, os.unlink, os.remove, os.fsync and the writing of each temporary
file) and failing the k-th, for every k in turn; a crash is simulated by copying the
directory as it is just before the k-th call. The expected values are the ones each
test assigned: the previous checkpoint's after a failure, the new one's after success.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import struct
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.wire import crc32c, field, mask
from tapeflow.train.checkpoint import format as fmt
from tapeflow.train.checkpoint import tensor_bundle

DATA = ".data-00000-of-00001"
OLD = ([1.0, 2.0, 3.0], 7)
NEW = ([10.0, 20.0, 30.0], 70)
THIRD = ([-1.0, -2.0, -3.0], -7)


class Crash(BaseException):
    """The process dying at a step: no `except Exception` cleanup can see it coming."""


class Faults:
    """Counts the file-system steps of an operation and fails step `fail_at` (with
    `persist`, that one and every later one: a disk gone read-only); with `crash_into`,
    copies the directory as it is before step `crash_at` (default: `fail_at`) into
    `crash_into`, then stops the operation there as a crash would."""

    CALLS = ("replace", "rename", "link", "unlink", "remove", "fsync")

    def __init__(self, directory: str, fail_at: int | None = None, persist: bool = False,
                 crash_into: str | None = None, crash_at: int | None = None):
        self.directory, self.fail_at, self.persist = directory, fail_at, persist
        self.crash_into = crash_into
        self.crash_at = fail_at if crash_at is None and crash_into else crash_at
        self.steps: list[str] = []

    def failing(self, label: str) -> bool:
        """Count the step `label`; whether it fails (a crash is raised right here)."""
        k = len(self.steps)
        self.steps.append(label)
        if k == self.crash_at:
            shutil.copytree(self.directory, self.crash_into)  # (its calls are not counted)
            raise Crash(label)
        return self.fail_at is not None and (
            k == self.fail_at or (self.persist and k > self.fail_at))

    def run(self, monkeypatch, operation):
        """`operation()` with the steps counted and the chosen one failing."""
        real_write_temp = fmt._write_temp

        def wrap(name, real):
            def call(*args, **kwargs):
                names = [os.path.basename(str(a)) for a in args if isinstance(a, (str, bytes))]
                if self.failing(f"{name} {' '.join(names)}".strip()):
                    raise OSError(f"simulated failure of os.{name}")
                return real(*args, **kwargs)
            return call

        def write_temp(path, write):
            def half_then_fail(f):
                buffer = io.BytesIO()
                write(buffer)
                if self.failing(f"write {os.path.basename(path)}"):
                    f.write(buffer.getvalue()[:len(buffer.getvalue()) // 2])
                    raise OSError("simulated failure: disk full")
                f.write(buffer.getvalue())
            return real_write_temp(path, half_then_fail)

        with monkeypatch.context() as m:
            for name in self.CALLS:
                m.setattr(os, name, wrap(name, getattr(os, name)))
            m.setattr(fmt, "_write_temp", write_temp)
            return operation()


def variables(values=(np.zeros(3), 0)):
    return (tf.Variable(np.asarray(values[0], np.float32)),
            tf.Variable(np.int64(values[1])))


def load(prefix: str) -> tuple[tuple[list, int], bool]:
    """The values a checkpoint restores into fresh variables, and whether the reader fell
    back to the backup pair of an interrupted write."""
    a, b = variables()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.train.Checkpoint(a=a, b=b).read(prefix).assert_consumed()
    fell_back = any("stopped midway" in str(w.message) for w in caught)
    return (a.numpy().tolist(), int(b.numpy())), fell_back


def listing(directory) -> list[str]:
    return sorted(os.listdir(directory))


def layout(name: str) -> list[str]:
    """TensorFlow's files of the checkpoint `name`, nothing else."""
    return sorted([name + ".index", name + DATA])


def written(directory, name="ckpt", values=OLD) -> tuple[str, tf.train.Checkpoint, tuple]:
    """A checkpoint `name` of `values` in `directory`, and the Checkpoint and variables."""
    a, b = variables(values)
    ckpt = tf.train.Checkpoint(a=a, b=b)
    return ckpt.write(os.path.join(directory, name)), ckpt, (a, b)


def assign(pair, values):
    pair[0].assign(np.asarray(values[0], np.float32))
    pair[1].assign(np.int64(values[1]))


def count_steps(tmp_path, monkeypatch, setup, operation) -> list[str]:
    """The steps `operation` takes on a fresh copy of the scene `setup` makes."""
    directory = str(tmp_path / "count")
    os.makedirs(directory)
    state = setup(directory)
    faults = Faults(directory)
    faults.run(monkeypatch, lambda: operation(directory, state))
    return faults.steps


# ------------------------------------------------------------------ Checkpoint.write


def rewrite_setup(directory):
    path, ckpt, pair = written(directory)
    assign(pair, NEW)
    return path, ckpt


def rewrite(directory, state):
    path, ckpt = state
    return ckpt.write(path)


def renames_of(steps: list[str], name: str) -> list[int]:
    """Which steps rename a file over `name` itself (not over a backup or temporary)."""
    return [i for i, s in enumerate(steps) if s.startswith("replace") and s.endswith(" " + name)]


@pytest.fixture
def rewrite_steps(tmp_path, monkeypatch):
    steps = count_steps(tmp_path, monkeypatch, rewrite_setup, rewrite)
    # the protocol as documented: backup links, then the data rename, then the index
    # rename (the commit), once each
    (data,), (commit,) = renames_of(steps, "ckpt" + DATA), renames_of(steps, "ckpt.index")
    assert max(i for i, s in enumerate(steps) if s.startswith("link")) < data < commit
    assert [s.split()[1] for s in steps if s.startswith("link")] == [
        "ckpt" + DATA, "ckpt.index"]
    return steps, commit


@pytest.mark.parametrize("persist", [False, True], ids=["one_step_fails", "every_step_from"])
def test_a_rewrite_that_fails_at_any_step_leaves_the_previous_checkpoint(
        tmp_path, monkeypatch, rewrite_steps, persist):
    steps, commit = rewrite_steps
    for k, label in enumerate(steps):
        directory = str(tmp_path / f"fail{k}")
        os.makedirs(directory)
        state = rewrite_setup(directory)
        faults = Faults(directory, fail_at=k, persist=persist)
        try:
            faults.run(monkeypatch, lambda: rewrite(directory, state))
            raised = False
        except OSError as e:
            assert "simulated" in str(e), (label, e)
            raised = True
        values, fell_back = load(state[0])
        # a write that raised changed nothing; one that returned wrote the new values
        assert values == (OLD if raised else NEW), (label, values)
        # it returns only if the failure came after the commit (a best-effort cleanup),
        # or where a failure has a way round: a link that fails is a copy, and a
        # directory fsync is best effort (as every rename's durability is)
        assert raised == (k <= commit) or label.startswith(("link", "fsync")), label
        if raised and not persist:  # the undo worked: no stray file, not even a hidden one
            assert listing(directory) == layout("ckpt"), (label, listing(directory))
            assert not fell_back, label
        # what a failure leaves beside TF's files is hidden
        assert all(n.startswith(".") for n in set(listing(directory)) - set(layout("ckpt")))
        # whatever stays is gone after the next successful write
        ckpt = state[1]
        assign((ckpt.a, ckpt.b), THIRD)
        ckpt.write(state[0])
        assert listing(directory) == layout("ckpt"), (label, listing(directory))
        assert load(state[0]) == (THIRD, False), label


def test_a_crash_at_any_step_of_a_rewrite_leaves_a_checkpoint_that_loads(
        tmp_path, monkeypatch, rewrite_steps):
    steps, commit = rewrite_steps
    for k, label in enumerate(steps):
        directory = str(tmp_path / f"run{k}")
        os.makedirs(directory)
        state = rewrite_setup(directory)
        image = str(tmp_path / f"crash{k}")
        faults = Faults(directory, fail_at=k, crash_into=image)
        with pytest.raises(Crash):
            faults.run(monkeypatch, lambda: rewrite(directory, state))
        prefix = os.path.join(image, "ckpt")
        values, fell_back = load(prefix)
        # before the commit the previous checkpoint, after it the new one
        assert values == (OLD if k <= commit else NEW), (label, values)
        # between the two renames the pair is mixed: the reader takes the backup
        (data,) = renames_of(steps, "ckpt" + DATA)
        assert fell_back == (data < k <= commit), label
        # the next write settles what the crash left: TF's layout, the new values
        a, b = variables(THIRD)
        tf.train.Checkpoint(a=a, b=b).write(prefix)
        assert listing(image) == layout("ckpt"), (label, listing(image))
        assert load(prefix) == (THIRD, False), label


def test_a_crash_while_a_failed_rewrite_is_undone_leaves_the_previous_checkpoint(
        tmp_path, monkeypatch, rewrite_steps):
    steps, commit = rewrite_steps
    # the index rename fails; count what the undo does
    directory = str(tmp_path / "undo")
    os.makedirs(directory)
    state = rewrite_setup(directory)
    faults = Faults(directory, fail_at=commit)
    with pytest.raises(OSError, match="simulated"):
        faults.run(monkeypatch, lambda: rewrite(directory, state))
    assert len(faults.steps) > commit + 3  # links renamed back, the backup removed
    for j in range(commit + 1, len(faults.steps)):  # a crash at each step of the undo
        directory = str(tmp_path / f"run{j}")
        os.makedirs(directory)
        state = rewrite_setup(directory)
        image = str(tmp_path / f"crash{j}")
        with pytest.raises(Crash):
            Faults(directory, fail_at=commit, crash_into=image, crash_at=j).run(
                monkeypatch, lambda: rewrite(directory, state))
        prefix = os.path.join(image, "ckpt")
        assert load(prefix)[0] == OLD, faults.steps[j]
        a, b = variables(THIRD)
        tf.train.Checkpoint(a=a, b=b).write(prefix)
        assert listing(image) == layout("ckpt") and load(prefix) == (THIRD, False)


def test_a_crash_while_the_next_write_settles_an_interrupted_one(tmp_path, monkeypatch,
                                                                 rewrite_steps):
    steps, commit = rewrite_steps
    directory = str(tmp_path / "run")
    os.makedirs(directory)
    state = rewrite_setup(directory)
    mixed = str(tmp_path / "mixed")  # crashed between the renames: old index, new data
    with pytest.raises(Crash):
        Faults(directory, fail_at=commit, crash_into=mixed).run(
            monkeypatch, lambda: rewrite(directory, state))

    def third_write(where):
        a, b = variables(THIRD)
        return tf.train.Checkpoint(a=a, b=b).write(os.path.join(where, "ckpt"))

    count = str(tmp_path / "settle")
    shutil.copytree(mixed, count)
    faults = Faults(count)
    faults.run(monkeypatch, lambda: third_write(count))
    # the settling comes first: it reads the pair, then links the backup's files back
    # (its index renamed over P's too); the write's own commit is the last index rename
    settled, third_commit = renames_of(faults.steps, "ckpt.index")
    assert faults.steps[0].startswith("link .ckpt.backup" + DATA), faults.steps
    for j in range(len(faults.steps)):
        run = str(tmp_path / f"run{j}")
        shutil.copytree(mixed, run)
        image = str(tmp_path / f"crash{j}")
        with pytest.raises(Crash):
            Faults(run, crash_into=image, crash_at=j).run(monkeypatch, lambda: third_write(run))
        values, _ = load(os.path.join(image, "ckpt"))
        assert values == (OLD if j <= third_commit else THIRD), faults.steps[j]


def test_between_the_renames_the_reader_takes_the_previous_pair(tmp_path, monkeypatch,
                                                                rewrite_steps):
    steps, commit = rewrite_steps
    directory = str(tmp_path / "run")
    os.makedirs(directory)
    state = rewrite_setup(directory)
    image = str(tmp_path / "crash")
    with pytest.raises(Crash):  # the process dies right before the index is renamed
        Faults(directory, fail_at=commit, crash_into=image).run(
            monkeypatch, lambda: rewrite(directory, state))
    prefix = os.path.join(image, "ckpt")
    # the prefix's own pair is mixed (old index, new data): it does not read
    with pytest.raises(tf.errors.DataLossError, match=r"ckpt\.data-00000-of-00001.*CRC"):
        tensor_bundle.read_pair(prefix)
    a, b = variables()
    with pytest.warns(UserWarning, match=r"stopped midway.*\.ckpt\.backup"):
        tf.train.Checkpoint(a=a, b=b).read(prefix).assert_consumed()
    assert (a.numpy().tolist(), int(b.numpy())) == OLD
    with pytest.warns(UserWarning, match="stopped midway"):
        value = tf.train.load_variable(prefix, "a/.ATTRIBUTES/VARIABLE_VALUE")
    assert value.tolist() == OLD[0]
    # the backup is hidden: the checkpoint's files are still just TF's
    assert [os.path.basename(f) for f in fmt.files_of(prefix)] == ["ckpt.index", "ckpt" + DATA]
    # removing the checkpoint removes what the interrupted write left
    fmt.remove(prefix)
    assert [n for n in listing(image) if "ckpt" in n] == []


def test_a_rewrite_without_hard_links_copies_the_backup(tmp_path, monkeypatch, rewrite_steps):
    steps, commit = rewrite_steps
    directory = str(tmp_path / "run")
    os.makedirs(directory)
    state = rewrite_setup(directory)

    def no_links(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted (no hard links here)")

    monkeypatch.setattr(os, "link", no_links)
    faults = Faults(directory, fail_at=None)
    faults.run(monkeypatch, lambda: rewrite(directory, state))
    commit = [i for i, s in enumerate(faults.steps)
              if s.startswith("replace") and s.endswith(" ckpt.index")][0]
    image = str(tmp_path / "crash")
    assign((state[1].a, state[1].b), THIRD)
    with pytest.raises(Crash):
        Faults(directory, fail_at=commit, crash_into=image).run(
            monkeypatch, lambda: rewrite(directory, state))
    assert load(os.path.join(image, "ckpt")) == (NEW, True)  # the copy kept the previous
    # where the write was stopped by an exception, it was undone from the copy
    assert load(state[0]) == (NEW, False)
    assert listing(directory) == layout("ckpt")


# ------------------------------------------------------------------ a multi-shard predecessor


def two_shard_bundle(prefix: str, values: dict[str, np.ndarray]) -> None:
    """A bundle as TensorFlow's sharded saves lay it out: one tensor per data shard."""
    entries = []
    for shard, (key, array) in enumerate(sorted(values.items())):
        raw = np.ascontiguousarray(array).tobytes()
        shape = b"".join(field(2, field(1, d)) for d in array.shape)
        entries.append((key.encode(), field(1, tensor_bundle.enum_of(array.dtype))
                        + field(2, shape) + (field(3, shard) if shard else b"")
                        + field(5, len(raw)) + field(6, ("fixed32", mask(crc32c(raw))))))
        with open(tensor_bundle.data_file(prefix, shard, 2), "wb") as f:
            f.write(raw)
    header = field(1, 2) + field(3, field(1, 1))
    with open(tensor_bundle.index_file(prefix), "wb") as f:
        f.write(tensor_bundle.write_table([(b"", header)] + entries))


def test_rewriting_a_two_shard_checkpoint_leaves_tensorflows_one_shard_layout(
        tmp_path, monkeypatch):
    old = {"a": np.array([4.0, 5.0], np.float32), "b": np.array([6.0], np.float32)}
    new = {"a": np.array([1.0, 1.0], np.float32), "b": np.array([2.0], np.float32)}
    index, data = tensor_bundle.encode_bundle(new)
    sharded = ["ckpt.data-00000-of-00002", "ckpt.data-00001-of-00002", "ckpt.index"]

    def scene(name):
        directory = tmp_path / name
        directory.mkdir()
        two_shard_bundle(str(directory / "ckpt"), old)
        assert listing(directory) == sharded
        return str(directory), str(directory / "ckpt")

    def read(prefix):
        return {key: value.tolist() for key, value in tensor_bundle.read_bundle(prefix).items()}

    directory, prefix = scene("count")
    faults = Faults(directory)
    faults.run(monkeypatch, lambda: fmt.commit_bundle(prefix, index, data))
    assert read(prefix) == {"a": [1.0, 1.0], "b": [2.0]}
    assert listing(directory) == layout("ckpt")  # the old shards went with the rewrite
    for k, label in enumerate(faults.steps):  # each step fails in turn
        directory, prefix = scene(f"fail{k}")
        try:
            Faults(directory, fail_at=k).run(
                monkeypatch, lambda: fmt.commit_bundle(prefix, index, data))
        except OSError:
            assert read(prefix) == {"a": [4.0, 5.0], "b": [6.0]}, label
            assert listing(directory) == sharded, label
        else:
            assert read(prefix) == {"a": [1.0, 1.0], "b": [2.0]}, label
        fmt.commit_bundle(prefix, index, data)
        assert listing(directory) == layout("ckpt"), label


# ------------------------------------------------------------------ save and CheckpointManager


def save_setup(directory):
    a, b = variables(OLD)
    ckpt = tf.train.Checkpoint(a=a, b=b)
    first = ckpt.save(os.path.join(directory, "ckpt"))
    assign((a, b), NEW)
    with open(os.path.join(directory, "checkpoint")) as f:
        return ckpt, first, f.read()


def save(directory, state):
    return state[0].save(os.path.join(directory, "ckpt"))


def load_saved(prefix) -> tuple[list, int]:
    a, b = variables()
    tf.train.Checkpoint(a=a, b=b).restore(prefix).assert_consumed()
    return a.numpy().tolist(), int(b.numpy())


@pytest.mark.parametrize("persist", [False, True], ids=["one_step_fails", "every_step_from"])
def test_a_failed_save_leaves_neither_files_nor_record(tmp_path, monkeypatch, persist):
    steps = count_steps(tmp_path, monkeypatch, save_setup, save)
    # the state file is written inside the write: its steps come before the cleanup
    assert any(s.startswith("write checkpoint") for s in steps), steps
    for k, label in enumerate(steps):
        directory = str(tmp_path / f"fail{k}")
        os.makedirs(directory)
        state = save_setup(directory)
        ckpt, first, record = state
        try:
            Faults(directory, fail_at=k, persist=persist).run(
                monkeypatch, lambda: save(directory, state))
        except OSError:
            # nothing of the failed save: the record, the counter and the files as before
            with open(os.path.join(directory, "checkpoint")) as f:
                assert f.read() == record, label
            assert int(ckpt.save_counter.numpy()) == 1, label
            assert tf.train.latest_checkpoint(directory) == first, label
            assert load_saved(first) == OLD, label
            if not persist:  # (where every step fails, even the undo cannot delete)
                assert listing(directory) == ["checkpoint"] + layout("ckpt-1"), (
                    label, listing(directory))
        else:  # only a best-effort cleanup step failed: the save happened
            assert tf.train.latest_checkpoint(directory).endswith("ckpt-2"), label
            assert load_saved(tf.train.latest_checkpoint(directory)) == NEW, label
        # a later save succeeds and leaves only TF's files
        path = ckpt.save(os.path.join(directory, "ckpt"))
        assert load_saved(path) == NEW
        saves = ["ckpt-1", "ckpt-2"] + (["ckpt-3"] if path.endswith("ckpt-3") else [])
        assert listing(directory) == ["checkpoint"] + sum(map(layout, saves), []), (
            label, listing(directory))


def manager_setup(directory):
    a, b = variables(OLD)
    ckpt = tf.train.Checkpoint(a=a, b=b)
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=1)
    first = manager.save()
    assign((a, b), NEW)
    return manager, first


def manager_save(directory, state):
    return state[0].save()


def test_a_failed_manager_save_keeps_the_manager_and_the_directory_in_step(
        tmp_path, monkeypatch):
    steps = count_steps(tmp_path, monkeypatch, manager_setup, manager_save)
    for k, label in enumerate(steps):
        directory = str(tmp_path / f"fail{k}")
        os.makedirs(directory)
        state = manager_setup(directory)
        manager, first = state
        try:
            Faults(directory, fail_at=k).run(monkeypatch, lambda: manager_save(directory,
                                                                               state))
        except OSError:
            pass
        latest = tf.train.latest_checkpoint(directory)
        # what the manager believes is what a new process finds, and it loads
        assert manager.latest_checkpoint == latest, label
        assert load_saved(latest) == (OLD if latest == first else NEW), label
        assert tf.train.CheckpointManager(manager.checkpoint, directory).latest_checkpoint \
            == latest
        if latest == first:
            assert listing(directory) == ["checkpoint"] + layout("ckpt-1"), label
        path = manager.save()  # the next save puts everything right
        assert load_saved(path) == NEW
        assert listing(directory) == ["checkpoint"] + layout(os.path.basename(path)), (
            label, listing(directory))


def test_stale_temporaries_of_the_state_file_go_with_the_next_save(tmp_path):
    a, b = variables(OLD)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(a=a, b=b), str(tmp_path),
                                         max_to_keep=2)
    manager.save()
    stale = [".checkpoint.0123456789ab.tmp", ".ckpt-2.index.00000000abcd.tmp",
             ".ckpt-2.data-00000-of-00001.ffffffffffff.tmp"]
    for name in stale:
        (tmp_path / name).write_bytes(b"half a file")
    manager.save()
    assert listing(tmp_path) == ["checkpoint"] + layout("ckpt-1") + layout("ckpt-2")


# ------------------------------------------------------------------ entries tapeflow cannot read


def raw_bundle(prefix: str, entries: dict[str, tuple[int, bytes, tuple]]) -> None:
    """A one-shard bundle of {key: (DataType number, stored bytes, shape)}."""
    table, chunks, offset = [], [], 0
    for key in sorted(entries):
        enum, raw, shape = entries[key]
        dims = b"".join(field(2, field(1, d)) for d in shape)
        table.append((key.encode(), field(1, enum) + field(2, dims)
                      + (field(4, offset) if offset else b"") + field(5, len(raw))
                      + field(6, ("fixed32", mask(crc32c(raw))))))
        chunks.append(raw)
        offset += len(raw)
    with open(tensor_bundle.data_file(prefix), "wb") as f:
        f.write(b"".join(chunks))
    with open(tensor_bundle.index_file(prefix), "wb") as f:
        f.write(tensor_bundle.write_table([(b"", field(1, 1) + field(3, field(1, 1)))]
                                          + table))


def test_a_string_where_a_variable_is_expected_raises_invalid_argument(tmp_path):
    prefix, _, _ = written(str(tmp_path))
    stored = tensor_bundle.read_bundle(prefix)
    key = "a/.ATTRIBUTES/VARIABLE_VALUE"
    stored[key] = np.array([b"x", b"y", b"z"], dtype=object)
    fmt.commit_bundle(prefix, *tensor_bundle.encode_bundle(stored))
    a, b = variables(NEW)
    # TensorFlow's RestoreV2: "expected dtype float does not equal original dtype string"
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.train.Checkpoint(a=a, b=b).read(prefix)
    message = str(info.value)
    assert prefix in message and key in message and "string" in message
    assert "float32" in message
    assert (a.numpy().tolist(), int(b.numpy())) == NEW  # nothing changed
    assert isinstance(info.value, ValueError)  # what a corrupt-file error always was
    # a variable that comes later (deferred restoration) is refused the same way
    ckpt = tf.train.Checkpoint(b=b)
    status = ckpt.read(prefix).expect_partial()  # 'a' waits for its variable
    assert int(b.numpy()) == OLD[1]
    late = tf.Variable(np.zeros(3, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=re.escape(f"{key!r} in {prefix!r}") + ".*has string"):
        ckpt.a = late
    assert late.numpy().tolist() == [0.0, 0.0, 0.0]
    del status


@pytest.mark.parametrize("enum,name", [(21, "variant"), (20, "resource"), (11, "qint8"),
                                       (25, "float8_e4m3fn")])
def test_a_tensorflow_dtype_tapeflow_cannot_hold_raises_unimplemented(tmp_path, enum, name):
    prefix = str(tmp_path / "ckpt")
    raw_bundle(prefix, {"iterator/state": (enum, b"\x01\x02\x03\x04", (4,)),
                        "w/.ATTRIBUTES/VARIABLE_VALUE": (1, struct.pack("<f", 2.5), ())})
    with pytest.raises(tf.errors.UnimplementedError) as info:
        tf.train.load_checkpoint(prefix)
    message = str(info.value)
    assert prefix + ".index" in message and "'iterator/state'" in message and name in message
    w = tf.Variable(0.0)
    with pytest.raises(tf.errors.UnimplementedError):
        tf.train.Checkpoint(w=w).read(prefix)
    assert w.numpy() == 0.0


def test_an_unknown_dtype_number_raises_data_loss_naming_file_and_key(tmp_path):
    prefix = str(tmp_path / "ckpt")
    raw_bundle(prefix, {"w/.ATTRIBUTES/VARIABLE_VALUE": (99, struct.pack("<f", 2.5), ())})
    with pytest.raises(tf.errors.DataLossError,
                       match=r"ckpt\.index.*'w/\.ATTRIBUTES/VARIABLE_VALUE'.*number 99"):
        tf.train.Checkpoint(w=tf.Variable(0.0)).read(prefix)


@pytest.mark.parametrize("damage,words", [
    (lambda data, at: data[:-3], "lies past the end.*truncated"),
    (lambda data, at: data[:at + 5] + bytes([data[at + 5] ^ 0x10]) + data[at + 6:], "CRC-32C"),
])
def test_a_damaged_data_file_raises_data_loss_naming_it_and_the_key(tmp_path, damage, words):
    prefix, _, pair = written(str(tmp_path))
    with open(prefix + DATA, "rb") as f:
        data = f.read()
    # keys sorted: the object graph, a (float32), b (int64, last): a cut loses b's end
    at = data.index(np.array(OLD[0], np.float32).tobytes())
    with open(prefix + DATA, "wb") as f:
        f.write(damage(data, at))
    key = "b/.ATTRIBUTES/VARIABLE_VALUE" if words.startswith("lies") \
        else "a/.ATTRIBUTES/VARIABLE_VALUE"
    a, b = variables(NEW)
    with pytest.raises(tf.errors.DataLossError) as info:
        tf.train.Checkpoint(a=a, b=b).read(prefix)
    message = str(info.value)
    assert f"'{prefix}{DATA}'" in message and f"'{key}'" in message, message
    assert re.search(words, message), message
    assert (a.numpy().tolist(), int(b.numpy())) == NEW
