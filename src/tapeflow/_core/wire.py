"""TensorFlow's on-disk building blocks, written by hand (no protobuf, no TensorFlow): the
CRC-32C checksum (Castagnoli) and its "masked" form, and the protocol-buffer wire format
(varints, fields, parsing a message into its fields). Checkpoints
(train/checkpoint/tensor_bundle.py) and TensorBoard event files (summary/event_file.py)
are built from these.

Example:
    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    >>> parse_message(field(1, 150) + field(2, b"hi"))
    {1: [150], 2: [b'hi']}
"""
from __future__ import annotations

import struct

try:  # optional (the `checkpoint` extra): C speed for checksums of large tensors
    import google_crc32c as _fast_crc32c
except ImportError:  # the pure-Python checksum below is exact, only slower
    _fast_crc32c = None


class WireError(ValueError):
    """Bytes that are not a well-formed protocol-buffer message (callers name the file)."""


# ---------------------------------------------------------------- CRC-32C


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c_py(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data` (continuing `crc`), in pure Python."""
    table, c = _CRC_TABLE, crc ^ 0xFFFFFFFF
    for byte in memoryview(data).cast("B"):
        c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data` (continuing `crc`), with google-crc32c when it is installed."""
    if _fast_crc32c is not None:
        return _fast_crc32c.extend(crc, bytes(data))
    return crc32c_py(data, crc)


def mask(crc: int) -> int:
    """A CRC as LevelDB tables and TFRecords store it (rotated and offset, so the CRC of
    data holding CRCs differs from them)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rot = (masked - 0xA282EAD8) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


# ---------------------------------------------------------------- protocol-buffer wire format

_ONE_BYTE = [bytes((i,)) for i in range(128)]  # field keys and short lengths: most varints


def varint(value: int) -> bytes:
    """`value` as a varint (negative int32/int64 fields: ten-byte two's complement)."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos`."""
    value = shift = 0
    while True:
        if pos >= end:
            raise WireError("a varint runs past the end of its record")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise WireError("a varint is longer than 10 bytes")


def parse_message(buf: bytes) -> dict[int, list]:
    """A protocol-buffer message as {field number: [values]}: ints for varint and fixed
    fields, bytes for length-delimited ones (nested messages, strings, packed arrays)."""
    fields: dict[int, list] = {}
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos, end)
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("a fixed64 field runs past the end of its record")
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        elif wire == 2:
            length, pos = read_varint(buf, pos, end)
            if pos + length > end:
                raise WireError("a length-delimited field runs past the end of its record")
            value, pos = bytes(buf[pos:pos + length]), pos + length
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("a fixed32 field runs past the end of its record")
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise WireError(f"unsupported protocol-buffer wire type {wire}")
        if number == 0:
            raise WireError("a protocol-buffer field has number 0")
        fields.setdefault(number, []).append(value)
    return fields


def field(number: int, value) -> bytes:
    """One encoded field: ints as varints, bytes/str length-delimited, ("fixed32", v) and
    ("double", v) as fixed-width."""
    if isinstance(value, tuple):
        kind, v = value
        if kind == "double":
            return varint(number << 3 | 1) + struct.pack("<d", v)
        return varint(number << 3 | 5) + struct.pack("<I", v)  # fixed32
    if isinstance(value, (bytes, str)):
        data = value.encode("utf-8") if isinstance(value, str) else value
        return varint(number << 3 | 2) + varint(len(data)) + data
    return varint(number << 3) + varint(int(value))
