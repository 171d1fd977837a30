"""Checkpoint files: TensorFlow's format (written and read), the older tapeflow `.npz`
(read), atomic writes, the "checkpoint" index, and readers (`list_variables`,
`load_variable`, `load_checkpoint`).

Since this version a checkpoint is written in TensorFlow's TensorBundle format
("prefix.index" + "prefix.data-00000-of-00001", tensor_bundle.py) with TensorFlow's keys
and object graph (object_graph.py), so TensorFlow restores what tapeflow wrote and the
other way round. Files of the earlier tapeflow format (version 1, "prefix.npz") still load.

Safety, where TF is looser:
- Neither format can run code on load: the bundle is decoded by hand, the `.npz` is read
  with `allow_pickle=False` (object arrays are refused).
- Writes are atomic, rewrites of an existing prefix included: after any failure, or a
  crash at any point, the previous checkpoint loads (see "Writing a bundle" below).
- A file is read and checked whole (checksums, sizes, dtypes) before anything is
  assigned: a damaged or truncated file raises `DataLossError` (a ValueError) naming
  the file and the key.

Writing a bundle (`commit_bundle`). A checkpoint is two files, "P.index" and
"P.data-00000-of-00001"; the index holds each tensor's offset, size and CRC-32C in the
data file, and a reader opens the index, then the data file. A rename replaces one file
atomically, but no rename replaces two: between the two renames of a rewrite the index of
one checkpoint would meet the data of another (a CRC mismatch: neither loads). So:
  0. Leftovers of an earlier write of P that stopped midway are settled first (below).
  1. The new data and index are written whole under temporary names beside P
     (".<name>.<random>.tmp") and fsynced. A failure here removes them: nothing else has
     changed.
  2. If P has a checkpoint, its files are kept under the backup prefix B =
     `tensor_bundle.backup_prefix(P)` (".<name>.backup"): each data file, then the index,
     as hard links (no copy; an fsynced copy where the file system has no links), and the
     directory is fsynced. The old files' bytes are never modified: every later step only
     renames new files over their names, so B stays a whole copy of the previous pair.
  3. The new data file is renamed over P's. From here until step 4, P's index is old and
     its data new: P does not read whole, and `tensor_bundle.read_bundle` reads B instead,
     which exists and is whole from step 2 on (its index, linked last, marks it complete).
  4. The new index is renamed over P's: the commit point. P is the new pair, whole. A
     `then` callback runs here (`Checkpoint.save` and `CheckpointManager` write the
     "checkpoint" state file), so a failing state file undoes the write too.
  5. B's files go (its index first), and so do P's data files other than the new one
     (shards of an earlier multi-shard checkpoint). After a successful write exactly
     TensorFlow's layout is left: "P.index" and "P.data-00000-of-00001".
A failure in steps 2-4 (an exception) puts the previous pair back from B, its data files
first and its index last, each as a fresh link renamed over P's file (so B stays whole
until the end and a reader falls back to it meanwhile), then removes B, the temporaries
and a data file P did not have before; a P that had no checkpoint loses the new index
first, then the new data file. If that too fails, B stays, and reads fall back to it.
A crash (the process killed, the machine down) at any point leaves P whole (old or new)
or B whole, which `read_bundle` reads. Step 0 of the next write of P settles what is left:
if B's index exists and P's pair does not read whole, B is put back as above; then B and
every temporary of P's or B's files are removed. So everything a failed or interrupted
write leaves is hidden (a leading ".") and removed by the next write of the same prefix
(or `remove`). Writes of one prefix from two processes at once are not supported
(CheckpointManager and Checkpoint.save write from one process, the chief).

The legacy `.npz` holds a JSON metadata entry recording the format version and each
value's name, dtype and shape; dtypes NumPy cannot store natively (bfloat16) are kept as
raw unsigned integers of the same width.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shutil
import warnings
import zipfile
import zlib
from typing import Callable

import numpy as np

from ..._core import dtypes as _dt
from ..._core.errors import DataLossError, NotFoundError, OpError
from ..._core.wire import WireError
from . import object_graph, tensor_bundle

__all__ = ["latest_checkpoint", "list_variables", "load_variable", "load_checkpoint",
           "CheckpointReader", "read_checkpoint", "write_checkpoint", "commit_bundle",
           "atomic_write", "atomic_write_files",
           "files_of", "exists", "remove", "read_state", "write_state"]

_FORMAT = "tapeflow.checkpoint"
_VERSION = 1
_META = "__metadata__"
_SUFFIX = ".npz"
STATE_FILE = "checkpoint"  # TF's name for the directory's index of checkpoints


# ---------------------------------------------------------------- the values file


def _npz_of(prefix: str) -> str:
    """The legacy `.npz` file of the checkpoint `prefix`."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(_SUFFIX) else prefix + _SUFFIX


def files_of(prefix: str) -> list[str]:
    """The files of the checkpoint `prefix` (the path `save`/`write` return) that exist.

    Example:
        >>> files_of("/tmp/run/ckpt-1")
        ['/tmp/run/ckpt-1.index', '/tmp/run/ckpt-1.data-00000-of-00001']
    """
    prefix = os.fspath(prefix)
    found = []
    if tensor_bundle.is_bundle(prefix):
        found.append(tensor_bundle.index_file(prefix))
        directory, base = os.path.split(os.path.abspath(prefix))
        with contextlib.suppress(OSError):
            found += sorted(os.path.join(os.path.dirname(prefix) or "", name)
                            for name in os.listdir(directory)
                            if name.startswith(base + ".data-"))
    if os.path.isfile(_npz_of(prefix)):
        found.append(_npz_of(prefix))
    return found


def exists(prefix: str) -> bool:
    """Whether a checkpoint (either format) is stored at `prefix`."""
    return tensor_bundle.is_bundle(prefix) or os.path.isfile(_npz_of(prefix))


def remove(prefix: str) -> None:
    """Delete the files of the checkpoint `prefix` (those that exist), with whatever an
    interrupted write of it left: its backup pair first (so it never outlives the index),
    then the index, then the data files (found without the index, so a removal that
    stopped midway can be repeated).

    Example:
        >>> remove("/tmp/run/ckpt-1")
    """
    prefix = os.fspath(prefix)
    for path in (_leftovers(prefix) + [tensor_bundle.index_file(prefix)]
                 + _data_files(prefix, every=True) + [_npz_of(prefix)]):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _storage_dtype(dtype: np.dtype) -> np.dtype:
    """How `.npz` stores values of `dtype`: itself, or raw unsigned integers of the same
    width for dtypes NumPy only knows as opaque bytes (ml_dtypes' bfloat16)."""
    return np.dtype(f"<u{dtype.itemsize}") if dtype.kind == "V" else dtype


def _write_member(zf: zipfile.ZipFile, key: str, array: np.ndarray) -> None:
    with zf.open(key + ".npy", "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)


def _fsync_directory(directory: str) -> None:
    # the rename itself is durable only once the directory entry is flushed (POSIX)
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _temp_name(path: str) -> str:
    """A fresh hidden name beside `path` for a temporary file (see `_TEMP`)."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")


_TEMP = r"\.[0-9a-f]{12}\.tmp"  # what _temp_name appends to ".<name>"


def _write_temp(path: str, write) -> str:
    """Write a fresh temporary file beside `path` through `write(file)` and fsync it;
    returns its name (removed again if `write` fails)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    while True:  # created like any file (mode from the umask), under a fresh name
        tmp = _temp_name(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: str, write) -> None:
    """Write `path` through `write(file)` into a temporary file beside it, fsync and
    rename: readers see the old file or the whole new one, never a part.

    Example:
        >>> atomic_write("/tmp/note", lambda f: f.write(b"hello"))
    """
    atomic_write_files({path: write})


def atomic_write_files(files: dict) -> None:
    """Write several files ({path: write(file)}) atomically each, and all of them before
    any replaces its target: the renames, in order, follow one another with no writing in
    between, so a failed write leaves every old file as it was.

    Example:
        >>> atomic_write_files({"/tmp/a": lambda f: f.write(b"1"), "/tmp/b": ...})
    """
    for path in files:  # what earlier writes of these files left when they stopped midway
        _unlink(*_stale_temps(path))
    done: list[tuple[str, str]] = []
    try:
        for path, write in files.items():
            done.append((_write_temp(path, write), path))
    except BaseException:
        for tmp, _ in done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    try:
        for tmp, path in done:
            os.replace(tmp, path)
    except BaseException:
        _unlink(*(tmp for tmp, _ in done))  # those not renamed (the others are gone)
        raise
    for directory in {os.path.dirname(os.path.abspath(p)) for _, p in done}:
        _fsync_directory(directory)


def write_checkpoint(prefix: str, values: dict[str, np.ndarray], aliases: dict[str, str],
                     state_keys: dict[str, str] | None = None,
                     then: Callable[[], None] | None = None) -> None:
    """Write `values` ({path: array}) and `aliases` ({other path: path}) as the TensorFlow
    checkpoint `prefix`, atomically; `state_keys` ({path: name}) marks object state. `then`
    runs once the new checkpoint is in place; if it raises, the write is undone.

    Example:
        >>> write_checkpoint("/tmp/c", {"v": np.ones(2, np.float32)}, {})
    """
    keyed = object_graph.to_keys(values, aliases, state_keys or {})
    index, data = tensor_bundle.encode_bundle(keyed)
    commit_bundle(os.fspath(prefix), index, data, then)


# ---------------------------------------------------------------- writing a bundle atomically


def commit_bundle(prefix: str, index: bytes, data: bytes,
                  then: Callable[[], None] | None = None) -> None:
    """Make `index` and `data` the files of the one-shard checkpoint `prefix`, atomically
    (the protocol of the module docstring): after any failure, and at any moment of a
    crash, either the previous checkpoint or the new one loads. `then()` runs after the
    commit; if it raises, the previous checkpoint is put back and its error goes on.

    Example:
        >>> commit_bundle("/tmp/c", *tensor_bundle.encode_bundle({"k": np.ones(2)}))
    """
    directory = os.path.dirname(os.path.abspath(prefix))
    index_path = tensor_bundle.index_file(prefix)
    data_path = tensor_bundle.data_file(prefix)
    backup = tensor_bundle.backup_prefix(prefix)
    _settle(prefix)  # step 0
    temps: list[str] = []
    try:  # step 1
        temps.append(_write_temp(data_path, lambda f: f.write(data)))
        temps.append(_write_temp(index_path, lambda f: f.write(index)))
    except BaseException:
        _unlink(*temps)
        raise
    data_tmp, index_tmp = temps
    had_checkpoint = os.path.isfile(index_path)
    placed: list[str] = []  # P's names that hold a new file now
    try:
        if had_checkpoint:  # step 2
            for path in _data_files(prefix):
                _link(path, backup + _suffix(path, prefix))
            _link(index_path, tensor_bundle.index_file(backup))  # last: B is whole now
            _fsync_directory(directory)
        os.replace(data_tmp, data_path)  # step 3
        placed.append(data_path)
        os.replace(index_tmp, index_path)  # step 4: the commit
        placed.append(index_path)
        _fsync_directory(directory)
        if then is not None:
            then()
    except BaseException:
        # the error that stopped the write goes on; if putting things back fails too, B
        # stays (reads fall back to it, and the next write settles it)
        try:
            if had_checkpoint and placed:
                _put_back(prefix)
            else:
                for path in reversed(placed):  # no previous checkpoint: the index first
                    os.unlink(path)
        except OSError:
            pass
        else:
            with contextlib.suppress(OSError):
                _drop_backup(prefix)
        _unlink(data_tmp, index_tmp)
        raise
    # step 5, best effort: whatever stays is hidden and goes with the next write
    with contextlib.suppress(OSError):
        _drop_backup(prefix)
    _unlink(*(path for path in _data_files(prefix, every=True)
              if os.path.basename(path) != os.path.basename(data_path)))


def _data_files(prefix: str, every: bool = False) -> list[str]:
    """P's data files ("P.data-00000-of-00002", ...); with `every`, anything else named
    "P.data-*" too (TensorFlow's own temporaries of a write that stopped)."""
    directory, name = os.path.split(prefix)
    shard = re.compile(re.escape(name) + r"\.data-\d{5}-of-\d{5}")
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names
                  if (n.startswith(name + ".data-") if every else shard.fullmatch(n)))


def _suffix(path: str, prefix: str) -> str:
    """What the file name `path` adds to `prefix`'s (".data-00000-of-00001")."""
    return os.path.basename(path)[len(os.path.basename(prefix)):]


def _leftovers(prefix: str) -> list[str]:
    """Everything an interrupted write of `prefix` can leave: its backup pair (the index
    first) and the temporaries of P's and B's files."""
    directory, name = os.path.split(prefix)
    backup_name = os.path.basename(tensor_bundle.backup_prefix(prefix))
    part = r"\.(?:index|data-\d{5}-of-\d{5})"
    backup_index = re.compile(re.escape(backup_name) + r"\.index")
    backup_file = re.compile(re.escape(backup_name) + part)
    temp = re.compile(r"\.(?:" + re.escape(name) + "|" + re.escape(backup_name) + ")"
                      + part + _TEMP)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    found = sorted((not backup_index.fullmatch(n), n) for n in names
                   if backup_file.fullmatch(n) or temp.fullmatch(n))
    return [os.path.join(directory, n) for _, n in found]


def _stale_temps(path: str) -> list[str]:
    """The temporaries that writes of `path` left when they stopped midway."""
    directory, name = os.path.split(os.path.abspath(path))
    temp = re.compile(re.escape(f".{name}") + _TEMP)
    try:
        return [os.path.join(directory, n) for n in os.listdir(directory) if temp.fullmatch(n)]
    except OSError:
        return []


def _unlink(*paths: str) -> None:
    """Remove files that may be gone already, best effort (a cleanup never hides the error
    that made it necessary)."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _link(source: str, path: str) -> None:
    """Make `path` another name of the file `source` (a hard link, or where the file system
    has none, an fsynced copy), replacing `path` atomically; `source` is left untouched."""
    while True:
        tmp = _temp_name(path)
        try:
            os.link(source, tmp)
            break
        except FileExistsError:
            continue  # a name another temporary has: draw again
        except FileNotFoundError:
            raise
        except OSError:  # no hard links here (FAT, some network file systems)
            with open(source, "rb") as f:
                tmp = _write_temp(path, lambda out: shutil.copyfileobj(f, out, 1 << 20))
            break
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _put_back(prefix: str) -> None:
    """Make P the pair kept in B again: B's data files, then its index, each linked over
    P's file (B stays whole throughout, so readers fall back to it until P is), then P's
    data files that B does not have go."""
    backup = tensor_bundle.backup_prefix(prefix)
    kept = [prefix + _suffix(path, backup) for path in _data_files(backup)]
    for path in kept:
        _link(backup + _suffix(path, prefix), path)
    _link(tensor_bundle.index_file(backup), tensor_bundle.index_file(prefix))
    keep = {os.path.basename(path) for path in kept}
    _unlink(*(path for path in _data_files(prefix, every=True)
              if os.path.basename(path) not in keep))


def _drop_backup(prefix: str) -> None:
    """Remove B (its index first: without it B is not whole, and readers ignore it) and
    every temporary of P's and B's files."""
    for path in _leftovers(prefix):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _settle(prefix: str) -> None:
    """Step 0: settle what an earlier write of `prefix` that stopped midway left. If B is
    whole and P does not read whole, P is the pair of steps 3-4 (old index, new data) or
    of an interrupted undo: B, the previous checkpoint, is put back. Otherwise P is whole
    (or gone), and B is stale. Then B and the temporaries go."""
    backup = tensor_bundle.backup_prefix(prefix)
    if os.path.isfile(tensor_bundle.index_file(backup)) \
            and tensor_bundle.is_bundle(prefix) and not _reads_whole(prefix):
        _put_back(prefix)  # if this fails, the write fails before it changed anything
    with contextlib.suppress(OSError):  # what stays is replaced or ignored by step 2
        _drop_backup(prefix)


def _reads_whole(prefix: str) -> bool:
    """Whether P's own pair reads whole (no backup consulted)."""
    try:
        tensor_bundle.read_pair(prefix)
    except DataLossError:
        return False
    except OpError:  # readable bytes of a dtype tapeflow cannot hold: whole, all the same
        return True
    return True


def write_npz(path: str, values: dict[str, np.ndarray], aliases: dict[str, str]) -> None:
    """Write the legacy tapeflow `.npz` format (version 1): kept to test that old files
    still load.

    Example:
        >>> write_npz("/tmp/c.npz", {"v": np.ones(2, np.float32)}, {})
    """
    entries, arrays = [], {}
    for i, (name, value) in enumerate(values.items()):
        key = f"v{i}"
        arrays[key] = value.view(_storage_dtype(value.dtype))
        entries.append({"name": name, "key": key, "dtype": _dt.as_dtype(value.dtype).name,
                        "shape": list(value.shape)})
    meta = {"format": _FORMAT, "version": _VERSION, "entries": entries, "aliases": aliases}
    meta_array = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)

    def write(f):
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_member(zf, _META, meta_array)
            for key, array in arrays.items():
                _write_member(zf, key, array)

    atomic_write(path, write)


class _Corrupt(Exception):
    """Internal: what is wrong with a file, turned into a ValueError naming the file."""


def _read_member(zf: zipfile.ZipFile, key: str, want=None) -> np.ndarray:
    """Entry `key` as an array, refusing object dtypes before any data is read and (given
    `want`, a (shape, dtype) pair) any other shape or dtype."""
    try:
        info = zf.getinfo(key + ".npy")
    except KeyError:
        raise _Corrupt(f"entry {key!r} is missing") from None
    with zf.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise _Corrupt(f"entry {key!r} uses unsupported .npy format version {version}")
    if dtype.hasobject:
        raise _Corrupt(f"entry {key!r} holds Python objects (dtype {dtype}), which could "
                       "only be loaded by unpickling, i.e. by running code; refused")
    if want is not None and (shape, dtype) != want:
        raise _Corrupt(f"entry {key!r} is stored with shape {shape} and dtype {dtype}; the "
                       f"metadata says {want[0]} and {want[1]}")
    if math.prod(shape) * dtype.itemsize > info.file_size:  # before allocating it
        raise _Corrupt(f"entry {key!r} declares more data than it holds")
    with zf.open(info) as member:
        # streamed: the read reaching the entry's end checks its CRC-32
        array = np.lib.format.read_array(member, allow_pickle=False)
        if member.read(1):
            raise _Corrupt(f"entry {key!r} has trailing data")
    return array


def read_checkpoint(path: str, keys: dict[str, str] | None = None
                    ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read and check a whole checkpoint (either format): ({path: value}, {alias: path}),
    paths as tapeflow names values ("model/dense/kernel"). Given a dict `keys`, fills it
    with {path: the key the file stores it under} (TensorFlow's, for errors to name).

    Example:
        >>> read_checkpoint("/tmp/c")
        ({'v': array([1., 1.], dtype=float32)}, {})
    """
    path = os.fspath(path)
    if tensor_bundle.is_bundle(path):
        values = tensor_bundle.read_bundle(path)
        try:
            return object_graph.to_paths(values, keys)
        except (WireError, UnicodeDecodeError) as e:  # (Corrupt is a WireError)
            raise DataLossError(None, None, f"Checkpoint: the object graph of {path!r} is "
                                f"corrupt: {e}; no variable was changed") from None
    file = _npz_of(path)
    if not os.path.isfile(file):
        hint = (" (a directory: pass a checkpoint path, e.g. "
                "tf.train.latest_checkpoint(directory))" if os.path.isdir(path) else "")
        raise NotFoundError(f"Checkpoint: no checkpoint at {path!r} (neither "
                            f"{tensor_bundle.index_file(path)!r} nor {file!r}){hint}")
    values, aliases = _read_npz(file)
    if keys is not None:
        keys.update((name, name) for name in values)  # the legacy file stores paths
    return values, aliases


def _read_npz(file: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    try:
        with open(file, "rb") as f, zipfile.ZipFile(f) as zf:
            meta_bytes = _read_member(zf, _META)
            if meta_bytes.dtype != np.uint8 or meta_bytes.ndim != 1:
                raise _Corrupt("the metadata entry is not a byte string")
            meta = json.loads(meta_bytes.tobytes().decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                raise _Corrupt("it has no tapeflow checkpoint metadata")
            if meta.get("version") != _VERSION:
                raise _Corrupt(f"format version {meta.get('version')!r} is not supported "
                               f"(this tapeflow reads version {_VERSION})")
            values = {}
            for entry in meta["entries"]:
                name, dtype = entry["name"], _dt.as_dtype(entry["dtype"])
                np_dtype = np.dtype(dtype.as_numpy_dtype)
                want = (tuple(entry["shape"]), _storage_dtype(np_dtype))
                try:
                    stored = _read_member(zf, entry["key"], want)
                except _Corrupt as e:
                    raise _Corrupt(f"value {name!r}: {e}") from None
                values[name] = stored.view(np_dtype)
            aliases = dict(meta.get("aliases", {}))
            for alias, target in aliases.items():
                if target not in values:
                    raise _Corrupt(f"alias {alias!r} names {target!r}, which is not stored")
    except (_Corrupt, zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError,
            TypeError, UnicodeDecodeError, OverflowError, NotImplementedError,
            # a damaged zip directory can make zipfile think a member is encrypted
            # (RuntimeError) or seek before the file's start (OSError, EINVAL)
            RuntimeError, OSError) as e:
        raise DataLossError(None, None, f"Checkpoint: {file!r} is corrupt, truncated or not "
                            f"a tapeflow checkpoint: {e}; no variable was changed") from None
    return values, aliases


# ---------------------------------------------------------------- the "checkpoint" index


def write_state(directory: str, latest: str, paths: list[str],
                timestamps: list[float] = (), last_preserved: float | None = None) -> None:
    """Write the directory's "checkpoint" index (TF's text format; paths relative to the
    directory when inside it) atomically.

    Example:
        >>> write_state("/tmp/run", "/tmp/run/ckpt-2", ["/tmp/run/ckpt-1", "/tmp/run/ckpt-2"])
    """
    def rel(p):
        p = os.path.abspath(p)
        inside = os.path.dirname(p) == os.path.abspath(directory)
        return os.path.basename(p) if inside else p

    lines = [f"model_checkpoint_path: {json.dumps(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(rel(p))}" for p in paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in timestamps]
    if last_preserved is not None:
        lines.append(f"last_preserved_timestamp: {last_preserved!r}")
    text = ("\n".join(lines) + "\n").encode("utf-8")
    atomic_write(os.path.join(directory, STATE_FILE), lambda f: f.write(text))


def read_state(directory: str) -> dict | None:
    """The "checkpoint" index of `directory` as a dict, or None if absent or unreadable.

    Example:
        >>> read_state("/tmp/run")["model_checkpoint_path"]
        '/tmp/run/ckpt-2'
    """
    try:
        with open(os.path.join(directory, STATE_FILE), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    state = {"model_checkpoint_path": None, "all_model_checkpoint_paths": [],
             "all_model_checkpoint_timestamps": [], "last_preserved_timestamp": None}
    try:
        for line in text.splitlines():
            if not line.strip():
                continue
            key, _, raw = line.partition(":")
            key, raw = key.strip(), raw.strip()
            if key == "model_checkpoint_path":
                state[key] = os.path.join(directory, json.loads(raw))
            elif key == "all_model_checkpoint_paths":
                state[key].append(os.path.join(directory, json.loads(raw)))
            elif key == "all_model_checkpoint_timestamps":
                state[key].append(float(raw))
            elif key == "last_preserved_timestamp":
                state[key] = float(raw)
    except (ValueError, TypeError):
        return None
    if not isinstance(state["model_checkpoint_path"], str):
        return None
    return state


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The path of the latest checkpoint recorded in `checkpoint_dir`'s "checkpoint" file,
    or None if there is none. If that file is unreadable or garbled, or names a checkpoint
    that is gone, while other checkpoints are there, the newest of them (by modification
    time) is returned, with a warning naming the file.

    Example:
        >>> tf.train.latest_checkpoint("/tmp/demo")
        '/tmp/demo/ckpt-1'
    """
    directory = os.fspath(checkpoint_dir)
    if latest_filename is not None and latest_filename != STATE_FILE:
        raise ValueError(f"latest_checkpoint: only the index file {STATE_FILE!r} is "
                         f"supported, got latest_filename={latest_filename!r}")
    state = read_state(directory)
    if state is None:
        state_file = os.path.join(directory, STATE_FILE)
        if not os.path.exists(state_file):
            return None
        newest = _newest_in(directory)
        if newest is not None:
            warnings.warn(f"latest_checkpoint: {state_file!r} cannot be parsed; using the "
                          f"newest checkpoint in the directory, {newest!r}", stacklevel=2)
        return newest
    path = state["model_checkpoint_path"]
    if exists(path):
        return path
    newest = _newest_in(directory)
    if newest is not None:
        warnings.warn(f"latest_checkpoint: {os.path.join(directory, STATE_FILE)!r} names "
                      f"{path!r}, which does not exist; using the newest checkpoint in the "
                      f"directory, {newest!r}", stacklevel=2)
    return newest


def _newest_in(directory: str) -> str | None:
    """The prefix of the most recently written checkpoint in `directory`, or None."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    found = []
    for name in names:
        for suffix in (".index", _SUFFIX):
            if name.endswith(suffix) and not name.startswith("."):
                file = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    found.append((os.path.getmtime(file), file[:-len(suffix)]))
    return max(found)[1] if found else None


def _prefix_of(ckpt_dir_or_file: str, op: str) -> str:
    """A checkpoint path, or a directory's latest checkpoint."""
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"{op}: no checkpoint recorded in directory {path!r}")
        path = latest
    return path


class CheckpointReader:
    """The values of one checkpoint by key (TF's `tf.train.load_checkpoint` result): the
    file is read and checked whole when the reader is made. Keys are TensorFlow's
    ("model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", "_CHECKPOINTABLE_OBJECT_GRAPH");
    a tapeflow path ("model/dense/kernel") finds the same value.

    Example:
        >>> reader = tf.train.load_checkpoint("/tmp/c")
        >>> reader.get_variable_to_shape_map()
        {'_CHECKPOINTABLE_OBJECT_GRAPH': [], 'v/.ATTRIBUTES/VARIABLE_VALUE': [2]}
        >>> reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")
        array([1., 2.], dtype=float32)
    """

    def __init__(self, path: str):
        self._path = _prefix_of(path, "load_checkpoint")
        if tensor_bundle.is_bundle(self._path):
            self._values = tensor_bundle.read_bundle(self._path)
            self._paths, self._aliases = read_checkpoint(self._path)
        else:  # a legacy .npz: its names are tapeflow paths
            self._paths, self._aliases = read_checkpoint(self._path)
            self._values = dict(self._paths)

    def _find(self, key: str):
        if key in self._values:
            return self._values[key]
        if key in self._paths:
            return self._paths[key]
        if key in self._aliases:
            return self._paths[self._aliases[key]]
        raise NotFoundError(f"Key {key} not found in checkpoint {self._path!r}; it holds "
                            f"{sorted(self._values)}")

    def has_tensor(self, key: str) -> bool:
        """Whether the checkpoint holds `key`."""
        try:
            self._find(key)
        except NotFoundError:
            return False
        return True

    def get_tensor(self, key: str):
        """The value under `key` as a NumPy array (a string scalar as bytes)."""
        value = self._find(key)
        if value.dtype.kind == "O" and value.shape == ():
            return value[()]
        return value.copy()

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """{key: shape as a list} of every stored value."""
        return {key: list(value.shape) for key, value in self._values.items()}

    def get_variable_to_dtype_map(self) -> dict:
        """{key: DType} of every stored value (`tf.string` values as the name "string")."""
        return {key: ("string" if value.dtype.kind == "O" else _dt.as_dtype(value.dtype))
                for key, value in self._values.items()}


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader of the checkpoint at a path, or of a directory's latest checkpoint.

    Example:
        >>> tf.train.load_checkpoint("/tmp/c").get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")
        array([1., 2.], dtype=float32)
    """
    return CheckpointReader(ckpt_dir_or_file)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(key, shape) of every value stored in a checkpoint, sorted by key; a directory
    means its latest checkpoint. Keys are TensorFlow's (legacy `.npz` files: their paths).

    Example:
        >>> tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write("/tmp/c")
        >>> tf.train.list_variables("/tmp/c")
        [('_CHECKPOINTABLE_OBJECT_GRAPH', []), ('v/.ATTRIBUTES/VARIABLE_VALUE', [2])]
    """
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(key, shapes[key]) for key in sorted(shapes)]


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value stored under `name` (TensorFlow's key, or the tapeflow path of a value or
    of an alias of it, such as "model/dense/kernel") as a NumPy array.

    Example:
        >>> tf.train.load_variable("/tmp/c", "v/.ATTRIBUTES/VARIABLE_VALUE")
        array([1., 2.], dtype=float32)
    """
    reader = load_checkpoint(ckpt_dir_or_file)
    if not reader.has_tensor(name):
        raise NotFoundError(f"load_variable: no value named {name!r} in the checkpoint; it "
                            f"holds {sorted(reader.get_variable_to_shape_map())}")
    return reader.get_tensor(name)
