"""The checkpoint file format: values in a NumPy `.npz`, atomic writes, the "checkpoint" index.

Safety, where TF is looser:
- The file is a NumPy `.npz` read with `allow_pickle=False` (object arrays are refused),
  so loading never runs code. A JSON metadata entry records the format version and each
  value's name, dtype and shape; dtypes NumPy cannot store natively (bfloat16) are kept
  as raw unsigned integers of the same width.
- Writes go to a temporary file in the same directory, are fsynced and then renamed over
  the target (`os.replace`), so a crash leaves the previous checkpoint whole.
- A file is read and checked whole before anything is assigned: a corrupt file raises
  naming what is wrong.

The format is version 1 since the first release: a file holds variables and objects' own
state alike, as named values, so files written before objects had state still load.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import zipfile
import zlib

import numpy as np

from ..._core import dtypes as _dt
from ..._core.errors import NotFoundError

__all__ = ["latest_checkpoint", "list_variables", "load_variable", "read_checkpoint",
           "write_checkpoint", "atomic_write", "file_of", "read_state", "write_state"]

_FORMAT = "tapeflow.checkpoint"
_VERSION = 1
_META = "__metadata__"
_SUFFIX = ".npz"
STATE_FILE = "checkpoint"  # TF's name for the directory's index of checkpoints


# ---------------------------------------------------------------- the values file


def file_of(prefix: str) -> str:
    """The file holding the checkpoint `prefix` (the path `save`/`write` return).

    Example:
        >>> file_of("/tmp/run/ckpt-1")
        '/tmp/run/ckpt-1.npz'
    """
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(_SUFFIX) else prefix + _SUFFIX


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


def atomic_write(path: str, write) -> None:
    """Write `path` through `write(file)` into a temporary file beside it, fsync and
    rename: readers see the old file or the whole new one, never a part.

    Example:
        >>> atomic_write("/tmp/note", lambda f: f.write(b"hello"))
    """
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
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def write_checkpoint(path: str, values: dict[str, np.ndarray],
                     aliases: dict[str, str]) -> None:
    """Write `values` ({name: array}, in order) and `aliases` ({other name: name}) to the
    file `path`, atomically.

    Example:
        >>> write_checkpoint("/tmp/c.npz", {"v": np.ones(2, np.float32)}, {})
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
    """Read and check a whole checkpoint file: ({name: value}, {alias: name}).

    Example:
        >>> read_checkpoint("/tmp/c")
        ({'v': array([1., 1.], dtype=float32)}, {})
    """
    file = file_of(path)
    if not os.path.isfile(file):
        hint = (" (a directory: pass a checkpoint path, e.g. "
                "tf.train.latest_checkpoint(directory))" if os.path.isdir(path) else "")
        raise NotFoundError(f"Checkpoint: no checkpoint file {file!r} for path {path!r}"
                            f"{hint}")
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
            TypeError, UnicodeDecodeError, OverflowError, NotImplementedError) as e:
        raise ValueError(f"Checkpoint: {file!r} is corrupt, truncated or not a tapeflow "
                         f"checkpoint: {e}; no variable was changed") from None
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
    or None if there is none or its file is gone.

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
        return None
    path = state["model_checkpoint_path"]
    return path if os.path.isfile(file_of(path)) else None


def _values_of(ckpt_dir_or_file: str, op: str) -> tuple[dict, dict]:
    """The stored values and aliases of a checkpoint path, or of a directory's latest."""
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"{op}: no checkpoint recorded in directory {path!r}")
        path = latest
    return read_checkpoint(path)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every value stored in a checkpoint, sorted by name; a directory
    means its latest checkpoint.

    Example:
        >>> tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write("/tmp/c")
        >>> tf.train.list_variables("/tmp/c")
        [('v', [2])]
    """
    values, _ = _values_of(ckpt_dir_or_file, "list_variables")
    return [(name, list(values[name].shape)) for name in sorted(values)]


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value stored under `name` (a path such as "model/dense/w", or an alias of one)
    as a NumPy array.

    Example:
        >>> tf.train.load_variable("/tmp/c", "v")
        array([1., 2.], dtype=float32)
    """
    values, aliases = _values_of(ckpt_dir_or_file, "load_variable")
    key = name if name in values else aliases.get(name)
    if key is None:
        raise NotFoundError(f"load_variable: no value named {name!r} in the checkpoint; it "
                            f"holds {sorted(values)}")
    return values[key].copy()
