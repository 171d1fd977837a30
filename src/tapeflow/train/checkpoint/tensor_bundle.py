"""TensorFlow's checkpoint file format (TensorBundle), read and written without TensorFlow.

A checkpoint "prefix" is two files: "prefix.index", a LevelDB-style sorted table mapping
each tensor's key to a `BundleEntryProto` (dtype, shape, shard, offset, size, CRC-32C),
with a `BundleHeaderProto` under the empty key; and "prefix.data-00000-of-00001", the
tensors' raw little-endian bytes one after another. This module decodes both by hand
(protocol-buffer wire format, table blocks, CRC-32C): nothing from the file is executed,
every length is checked against the file's size before it is used, and every checksum is
verified, so a damaged or truncated file raises `DataLossError` naming the file and what
is wrong.

Only what TensorFlow's own `BundleWriter` produces is read: uncompressed table blocks,
whole (unsliced) tensors, little-endian files. Strings (DT_STRING) are read as object arrays
of `bytes`, as TensorFlow's reader returns them (`_CHECKPOINTABLE_OBJECT_GRAPH` is one). An
entry of a dtype tapeflow cannot hold (variant, resource, quantized, float8, int4) raises
`UnimplementedError`, one of an unknown dtype number `DataLossError`; both name the file
and the key.

The backup pair. The two files of a prefix cannot be replaced together, so a rewrite in
place (format.py's `commit_bundle`, which documents the protocol) first keeps the previous
pair under hidden names beside it, `backup_prefix(prefix)` = "<dir>/.<name>.backup" (its
".index" and ".data-..." files: hard links, so nothing is copied), and removes them once the
new pair is in place. Only a write that stopped midway (the process killed, the disk gone)
leaves them behind; then, if the prefix's own pair does not read whole, `read_bundle` reads
the backup pair instead (with a warning): the previous checkpoint. TensorFlow's reader knows
nothing of the backup, but it only ever matters between two renames of one interrupted
write, and the next write of the prefix restores or discards it.
"""
from __future__ import annotations

import os
import struct
import warnings
from typing import Callable

import numpy as np

from ..._core import dtypes as _dt
from ..._core.errors import DataLossError, NotFoundError, OpError, UnimplementedError
from ..._core.wire import (crc32c, field, mask, parse_message, read_varint as _read_varint,
                           unmask, varint, WireError)

__all__ = ["index_file", "data_file", "backup_prefix", "is_bundle", "read_bundle",
           "decode_bundle", "encode_bundle", "write_bundle", "Corrupt"]

_TABLE_MAGIC = 0xDB4775248B80FB57  # LevelDB's table magic number, TensorFlow's too
_FOOTER_SIZE = 48
_RESTART_INTERVAL = 16
HEADER_KEY = b""


def index_file(prefix: str) -> str:
    return prefix + ".index"


def data_file(prefix: str, shard: int = 0, num_shards: int = 1) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def backup_prefix(prefix: str) -> str:
    """Where a rewrite of `prefix` keeps the previous pair until the new one is in place:
    hidden, beside it, so directory listings and TensorFlow's globs pass it by.

    Example:
        >>> backup_prefix("/tmp/run/ckpt-1")
        '/tmp/run/.ckpt-1.backup'
    """
    directory, name = os.path.split(os.fspath(prefix))
    return os.path.join(directory, f".{name}.backup")


def is_bundle(prefix: str) -> bool:
    """Whether `prefix` names a TensorBundle checkpoint (its .index file exists)."""
    return os.path.isfile(index_file(prefix))


class Corrupt(WireError):
    """Internal: what is wrong with a file, turned into DataLossError naming the file."""


class _Unsupported(Exception):
    """Internal: an entry of a dtype tapeflow cannot hold, turned into UnimplementedError
    naming the file."""


# CRC-32C and the protocol-buffer wire format: _core/wire.py (shared with summary files)
_mask, _unmask, _varint = mask, unmask, varint


def _one(fields: dict, number: int, default=0):
    values = fields.get(number)
    return values[-1] if values else default  # proto3: the last occurrence wins


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# ---------------------------------------------------------------- dtypes

# TensorFlow's DataType enum numbers of the dtypes a bundle can hold (strings apart)
DT_STRING = _dt.DATATYPE_ENUM["string"]
_ENUM_OF = {name: number for name, number in _dt.DATATYPE_ENUM.items() if name != "string"}
_NAME_OF = {number: name for name, number in _ENUM_OF.items()}


def enum_of(dtype: np.dtype) -> int:
    """TensorFlow's DataType number of a NumPy dtype (object arrays of bytes: DT_STRING)."""
    if dtype.kind == "O":
        return DT_STRING
    name = _dt.as_dtype(dtype).name
    if name not in _ENUM_OF:
        raise UnimplementedError(f"Checkpoint: dtype {name} cannot be stored in a "
                                 "TensorFlow checkpoint")
    return _ENUM_OF[name]


# TensorFlow dtypes a bundle can hold that have no tapeflow dtype (their DataType numbers)
_FOREIGN = {11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16", 16: "quint16",
            20: "resource", 21: "variant", 24: "float8_e5m2", 25: "float8_e4m3fn",
            26: "float8_e4m3fnuz", 27: "float8_e4m3b11fnuz", 28: "float8_e5m2fnuz",
            29: "int4", 30: "uint4", 31: "int2", 32: "uint2"}


def _numpy_dtype(enum: int, name: str) -> np.dtype:
    """The little-endian NumPy dtype of the entry `name` stored as DataType `enum`."""
    if enum in _FOREIGN:  # a real TensorFlow dtype: the file is fine, tapeflow cannot hold it
        raise _Unsupported(f"{name!r} is stored as {_FOREIGN[enum]} (TensorFlow DataType "
                           f"{enum}), a dtype tapeflow cannot hold")
    if enum not in _NAME_OF:
        raise Corrupt(f"{name!r} has dtype number {enum}, which is no TensorFlow dtype")
    return np.dtype(_dt.as_dtype(_NAME_OF[enum]).as_numpy_dtype).newbyteorder("<")


# ---------------------------------------------------------------- the .index table


def _block(data: bytes, offset: int, size: int, what: str) -> bytes:
    """The checked contents of the table block at (offset, size)."""
    if offset + size + 5 > len(data):
        raise Corrupt(f"the {what} block (bytes {offset}..{offset + size + 5}) runs past the "
                      f"end of the {len(data)}-byte file")
    contents = data[offset:offset + size]
    kind = data[offset + size]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    if _unmask(stored) != crc32c(data[offset:offset + size + 1]):
        raise Corrupt(f"the {what} block at byte {offset} fails its CRC-32C check")
    if kind != 0:
        raise Corrupt(f"the {what} block is compressed (type {kind}); only uncompressed "
                      "tables, as TensorFlow writes them, are read")
    return contents


def _block_entries(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of a block, keys rebuilt from their shared prefixes."""
    if len(block) < 4:
        raise Corrupt(f"the {what} block is shorter than its trailer")
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * restarts
    if restarts == 0 or end < 0:
        raise Corrupt(f"the {what} block has a bad restart count {restarts}")
    entries, pos, key = [], 0, b""
    while pos < end:
        shared, pos = _read_varint(block, pos, end)
        unshared, pos = _read_varint(block, pos, end)
        length, pos = _read_varint(block, pos, end)
        if shared > len(key) or pos + unshared + length > end:
            raise Corrupt(f"an entry of the {what} block runs past its end")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        entries.append((key, block[pos:pos + length]))
        pos += length
    return entries


def _handle(value: bytes) -> tuple[int, int]:
    offset, pos = _read_varint(value, 0, len(value))
    size, _ = _read_varint(value, pos, len(value))
    return offset, size


def read_table(data: bytes) -> dict[bytes, bytes]:
    """Every (key, value) of a LevelDB-format table, checksums verified."""
    if len(data) < _FOOTER_SIZE:
        raise Corrupt(f"it is {len(data)} bytes, shorter than a table's footer")
    footer = data[-_FOOTER_SIZE:]
    if struct.unpack_from("<Q", footer, 40)[0] != _TABLE_MAGIC:
        raise Corrupt("it is not a TensorFlow checkpoint index (bad table magic number)")
    meta_offset, pos = _read_varint(footer, 0, 40)
    meta_size, pos = _read_varint(footer, pos, 40)
    index_offset, pos = _read_varint(footer, pos, 40)
    index_size, _ = _read_varint(footer, pos, 40)
    _block(data, meta_offset, meta_size, "metaindex")  # unused, but checked all the same
    table: dict[bytes, bytes] = {}
    previous = None
    index = _block_entries(_block(data, index_offset, index_size, "index"), "index")
    for separator, handle in index:
        offset, size = _handle(handle)
        for key, value in _block_entries(_block(data, offset, size, "data"), "data"):
            if previous is not None and key <= previous:
                raise Corrupt("the table's keys are out of order")
            table[key] = value
            previous = key
        if previous is not None and separator < previous:
            raise Corrupt("an index entry's key precedes its block's keys")
    return table


def _build_block(entries: list[tuple[bytes, bytes]]) -> bytes:
    out, restarts, previous = bytearray(), [], b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % _RESTART_INTERVAL:
            limit = min(len(key), len(previous))
            while shared < limit and key[shared] == previous[shared]:
                shared += 1
        else:
            restarts.append(len(out))
        out += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        out += key[shared:] + value
        previous = key
    restarts = restarts or [0]
    out += struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))
    return bytes(out)


def write_table(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A LevelDB-format table (one data block, no compression) of sorted `entries`."""
    out = bytearray()

    def add_block(contents: bytes) -> bytes:
        handle = _varint(len(out)) + _varint(len(contents))
        trailer = contents + b"\0"
        out.extend(trailer + struct.pack("<I", _mask(crc32c(trailer))))
        return handle

    data_handle = add_block(_build_block(entries))
    meta_handle = add_block(_build_block([]))
    last = entries[-1][0] if entries else b""
    index_handle = add_block(_build_block([(last, data_handle)]))
    footer = (meta_handle + index_handle).ljust(40, b"\0") + struct.pack("<Q", _TABLE_MAGIC)
    return bytes(out + footer)


# ---------------------------------------------------------------- tensors


def _shape(message: bytes) -> tuple[int, ...]:
    fields = parse_message(message)
    if _one(fields, 3):
        raise Corrupt("a tensor has unknown rank")
    dims = []
    for dim in fields.get(2, []):
        size = _signed64(_one(parse_message(dim), 1))
        if size < 0:
            raise Corrupt(f"a tensor has negative dimension {size}")
        dims.append(size)
    return tuple(dims)


def _lengths_crc(lengths: list[int]) -> int:
    # TensorFlow checksums each length as a fixed-width integer, not as its varint
    return crc32c(b"".join(struct.pack("<I" if n < 1 << 32 else "<Q", n) for n in lengths))


def _read_strings(raw: bytes, count: int, name: str) -> np.ndarray:
    # [varint length]*count, masked CRC-32C of the lengths, then the strings' bytes; the
    # entry's checksum covers the lengths as _lengths_crc does, then the rest as stored
    pos, lengths = 0, []
    for _ in range(count):
        length, pos = _read_varint(raw, pos, len(raw))
        lengths.append(length)
    if pos + 4 > len(raw) or _unmask(struct.unpack_from("<I", raw, pos)[0]) \
            != _lengths_crc(lengths):
        raise Corrupt(f"the string lengths of {name!r} fail their CRC-32C check")
    pos += 4
    if pos + sum(lengths) != len(raw):
        raise Corrupt(f"the strings of {name!r} do not fill their recorded size")
    # an object array of bytes, as TensorFlow returns strings (NumPy's "S" dtype would
    # drop trailing zero bytes); built here from bytes, never unpickled
    items = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        items[i] = raw[pos:pos + length]
        pos += length
    return items


def _string_bytes(array: np.ndarray) -> tuple[bytes, int]:
    """The stored bytes of an array of bytes objects, and the entry's CRC-32C of them."""
    items = list(array.reshape(-1))
    if not all(isinstance(s, bytes) for s in items):
        raise TypeError("Checkpoint: a string tensor must hold bytes objects")
    lengths_crc = _lengths_crc([len(s) for s in items])
    checksum = struct.pack("<I", _mask(lengths_crc))
    rest = checksum + b"".join(items)
    return (b"".join(_varint(len(s)) for s in items) + rest,
            crc32c(rest, lengths_crc))


def read_bundle(prefix: str) -> dict[str, np.ndarray]:
    """Every tensor of the TensorBundle checkpoint `prefix` as {key: NumPy array}, checked
    whole (table checksums, each tensor's CRC-32C, sizes) before anything is returned. If
    the pair does not read whole and a write of it stopped midway, the previous pair that
    write kept (`backup_prefix`) is read instead, with a warning.

    Example:
        >>> read_bundle("/tmp/tf_run/ckpt-1")["model/w/.ATTRIBUTES/VARIABLE_VALUE"]
        array([1., 2.], dtype=float32)
    """
    try:
        return read_pair(prefix)
    except DataLossError as error:
        backup = backup_prefix(prefix)
        if not os.path.isfile(index_file(backup)):
            raise
        try:
            values = read_pair(backup)
        except OpError:
            raise error from None  # the prefix's own error says what is wrong with it
        warnings.warn(f"Checkpoint: {prefix!r} does not read whole ({error}); a write of "
                      "it stopped midway, so the previous checkpoint that write kept, "
                      f"{backup!r}, was read instead (the next write of {prefix!r} cleans "
                      "it up)", stacklevel=2)
        return values


def read_pair(prefix: str) -> dict[str, np.ndarray]:
    """`read_bundle` of exactly the files "prefix.index" and "prefix.data-*", without
    falling back to a backup pair."""
    index = index_file(prefix)

    def shard(number: int, count: int) -> bytes:
        path = data_file(prefix, number, count)
        if not os.path.isfile(path):
            raise Corrupt(f"its data file {path!r} is missing")
        with open(path, "rb") as f:
            return f.read()

    try:
        with open(index, "rb") as f:
            index_bytes = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"Checkpoint: no checkpoint index {index!r}") from None
    except OSError as e:
        raise DataLossError(None, None, f"Checkpoint: cannot read {index!r}: {e}") from None
    return decode_bundle(index_bytes, shard, index,
                         lambda number, count: data_file(prefix, number, count))


def decode_bundle(index: bytes, shard: Callable[[int, int], bytes], where: str = "<bytes>",
                  data_name: Callable[[int, int], str] | None = None) -> dict[str, np.ndarray]:
    """The tensors of a bundle given its index's bytes and `shard(number, count)`, which
    returns a data file's bytes. Damaged input raises DataLossError naming the file
    (`where` for the index, `data_name(number, count)` for a data file) and the key; an
    entry of a dtype tapeflow cannot hold raises UnimplementedError naming both.

    Example:
        >>> decode_bundle(index_bytes, lambda number, count: data_bytes)["v"]
        array([1., 2.], dtype=float32)
    """
    if data_name is None:
        data_name = lambda number, count: f"{where} (data shard {number} of {count})"  # noqa: E731
    file = where  # the file the check under way reads, named by any error
    try:
        table = read_table(index)
        header = table.pop(HEADER_KEY, None)
        if header is None:
            raise Corrupt("the index has no bundle header")
        header = parse_message(header)
        num_shards = _one(header, 1, 1)
        if _one(header, 2) != 0:
            raise Corrupt("the bundle is big-endian; only little-endian files are read")
        if not 1 <= num_shards <= 100000:
            raise Corrupt(f"the header gives {num_shards} data shards")
        shards: dict[int, bytes] = {}
        values = {}
        for key, entry in table.items():
            file = where
            name = key.decode("utf-8")
            fields = parse_message(entry)
            if fields.get(7):
                raise Corrupt(f"{name!r} is stored in slices (partitioned variables are "
                              "not supported)")
            enum, shape = _one(fields, 1), _shape(_one(fields, 2, b""))
            number, offset, size = _one(fields, 3), _one(fields, 4), _one(fields, 5)
            if number >= num_shards:
                raise Corrupt(f"{name!r} names data shard {number} of {num_shards}")
            dtype = None if enum == DT_STRING else _numpy_dtype(enum, name)
            file = data_name(number, num_shards)
            if number not in shards:
                shards[number] = shard(number, num_shards)
            data = shards[number]
            if offset + size > len(data):
                raise Corrupt(f"{name!r} (bytes {offset}..{offset + size}) lies past the end "
                              f"of the {len(data)}-byte data file; it is truncated")
            raw = data[offset:offset + size]
            count = int(np.prod(shape, dtype=np.int64))
            if dtype is None:
                value = _read_strings(raw, count, name).reshape(shape)
                if _string_bytes(value)[1] != _unmask(_one(fields, 6)):
                    raise Corrupt(f"{name!r} fails its CRC-32C check: its bytes are damaged")
            else:
                if crc32c(raw) != _unmask(_one(fields, 6)):
                    raise Corrupt(f"{name!r} fails its CRC-32C check: its bytes are damaged")
                if count * dtype.itemsize != size:
                    raise Corrupt(f"{name!r} holds {size} bytes; shape {list(shape)} of "
                                  f"{_NAME_OF[enum]} needs {count * dtype.itemsize}")
                value = np.frombuffer(raw, dtype=dtype).reshape(shape)
                value = value.astype(dtype.newbyteorder("="), copy=True)
            values[name] = value
    except _Unsupported as e:
        raise UnimplementedError(f"Checkpoint: {file!r} (TensorFlow format): {e}; no "
                                 "variable was changed") from None
    except (Corrupt, UnicodeDecodeError, ValueError, OverflowError, struct.error) as e:
        raise DataLossError(None, None, f"Checkpoint: {file!r} (TensorFlow format) is "
                            f"corrupt or truncated: {e}; no variable was changed") from None
    except OSError as e:
        raise DataLossError(None, None, f"Checkpoint: cannot read {file!r}: {e}") from None
    return values


def encode_bundle(values: dict[str, np.ndarray]) -> tuple[bytes, bytes]:
    """The (index, data file) bytes of the one-shard TensorBundle holding {key: array}, as
    TensorFlow's `BundleWriter` lays them out (keys sorted, tensors back to back).

    Example:
        >>> index, data = encode_bundle({"v/.ATTRIBUTES/VARIABLE_VALUE": np.ones(2)})
    """
    entries, chunks, offset = [], [], 0
    for key in sorted(values, key=lambda k: k.encode("utf-8")):
        array = np.asarray(values[key])
        if array.dtype.kind == "O":
            raw, checksum = _string_bytes(array)
        else:
            raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
            checksum = crc32c(raw)
        shape = b"".join(field(2, field(1, d)) for d in array.shape)
        entry = (field(1, enum_of(array.dtype)) + field(2, shape)
                 + (field(4, offset) if offset else b"")  # proto3 leaves out zeros
                 + field(5, len(raw)) + field(6, ("fixed32", _mask(checksum))))
        entries.append((key.encode("utf-8"), entry))
        chunks.append(raw)
        offset += len(raw)
    header = field(1, 1) + field(3, field(1, 1))  # one shard, little-endian, producer 1
    return write_table([(HEADER_KEY, header)] + entries), b"".join(chunks)


def write_bundle(prefix: str, values: dict[str, np.ndarray], write_file) -> None:
    """Write {key: array} as the TensorBundle checkpoint `prefix` through
    `write_file(path, bytes)`: the data file first, then the index (which makes the
    checkpoint: a reader looks for it first). Not atomic by itself: checkpoints are
    written by format.py's `commit_bundle`.

    Example:
        >>> write_bundle("/tmp/c", {"v/.ATTRIBUTES/VARIABLE_VALUE": np.ones(2)}, write)
    """
    index, data = encode_bundle(values)
    write_file(data_file(prefix), data)
    write_file(index_file(prefix), index)
