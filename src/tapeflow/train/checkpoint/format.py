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
- Each file is written to a temporary file in the same directory, fsynced and renamed over
  the target (`os.replace`); the index last, so a crash leaves a whole checkpoint behind.
- A file is read and checked whole (checksums, sizes, dtypes) before anything is
  assigned: a damaged or truncated file raises `DataLossError` (a ValueError) naming
  what is wrong.

The legacy `.npz` holds a JSON metadata entry recording the format version and each
value's name, dtype and shape; dtypes NumPy cannot store natively (bfloat16) are kept as
raw unsigned integers of the same width.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import warnings
import zipfile
import zlib

import numpy as np

from ..._core import dtypes as _dt
from ..._core.errors import DataLossError, NotFoundError
from ..._core.wire import WireError
from . import object_graph, tensor_bundle

__all__ = ["latest_checkpoint", "list_variables", "load_variable", "load_checkpoint",
           "CheckpointReader", "read_checkpoint", "write_checkpoint", "atomic_write",
           "atomic_write_files",
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
    """Delete the files of the checkpoint `prefix` (those that exist)."""
    for path in files_of(prefix):
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


def _write_temp(path: str, write) -> str:
    """Write a fresh temporary file beside `path` through `write(file)` and fsync it;
    returns its name (removed again if `write` fails)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    while True:  # created like any file (mode from the umask), under a fresh name
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
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
    done: list[tuple[str, str]] = []
    try:
        for path, write in files.items():
            done.append((_write_temp(path, write), path))
    except BaseException:
        for tmp, _ in done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for tmp, path in done:
        os.replace(tmp, path)
    for directory in {os.path.dirname(os.path.abspath(p)) for _, p in done}:
        _fsync_directory(directory)


def write_checkpoint(prefix: str, values: dict[str, np.ndarray], aliases: dict[str, str],
                     state_keys: dict[str, str] | None = None) -> None:
    """Write `values` ({path: array}) and `aliases` ({other path: path}) as the TensorFlow
    checkpoint `prefix`, atomically; `state_keys` ({path: name}) marks object state.

    Example:
        >>> write_checkpoint("/tmp/c", {"v": np.ones(2, np.float32)}, {})
    """
    keyed = object_graph.to_keys(values, aliases, state_keys or {})
    files: dict = {}  # data file first, index last: the index makes the checkpoint
    tensor_bundle.write_bundle(
        os.fspath(prefix), keyed,
        lambda path, data: files.__setitem__(path, lambda f: f.write(data)))
    atomic_write_files(files)


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


def read_checkpoint(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read and check a whole checkpoint (either format): ({path: value}, {alias: path}),
    paths as tapeflow names values ("model/dense/kernel").

    Example:
        >>> read_checkpoint("/tmp/c")
        ({'v': array([1., 1.], dtype=float32)}, {})
    """
    path = os.fspath(path)
    if tensor_bundle.is_bundle(path):
        values = tensor_bundle.read_bundle(path)
        try:
            return object_graph.to_paths(values)
        except (WireError, UnicodeDecodeError) as e:  # (Corrupt is a WireError)
            raise DataLossError(None, None, f"Checkpoint: the object graph of {path!r} is "
                                f"corrupt: {e}; no variable was changed") from None
    file = _npz_of(path)
    if not os.path.isfile(file):
        hint = (" (a directory: pass a checkpoint path, e.g. "
                "tf.train.latest_checkpoint(directory))" if os.path.isdir(path) else "")
        raise NotFoundError(f"Checkpoint: no checkpoint at {path!r} (neither "
                            f"{tensor_bundle.index_file(path)!r} nor {file!r}){hint}")
    return _read_npz(file)


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
