"""TensorBoard's event files, written by hand: no protobuf or TensorFlow at run time.

A file is a sequence of TFRecords (length, masked CRC-32C of the length, payload, masked
CRC-32C of the payload) whose payloads are `Event` protocol buffers. The few messages a
summary needs are encoded here field by field in the protobuf wire format:

    Event      {1: wall_time double, 2: step int64, 3: file_version string, 5: summary}
    Summary    {1: repeated Value}
    Value      {1: tag string, 8: tensor TensorProto, 9: metadata SummaryMetadata}
    SummaryMetadata {1: plugin_data {1: plugin_name, 2: content}, 3: summary_description}
    TensorProto {1: dtype enum, 2: tensor_shape {2: repeated dim {1: size}},
                 4: tensor_content bytes, 8: repeated string_val bytes}

Each summary kind is a tensor tagged with the TensorBoard plugin that shows it, as
TensorFlow 2's `tf.summary` writes it (scalars: a float32 scalar; histograms: float64
[buckets, 3] rows of left edge, right edge, count; images: strings [width, height,
PNG...]; text: strings).
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from .._core.wire import crc32c, field, mask

# CRC-32C and the protocol-buffer wire format: _core/wire.py (shared with checkpoints)


def masked_crc32c(data: bytes) -> int:
    """The CRC as TFRecord stores it (rotated and offset, so that CRCs of CRCs differ)."""
    return mask(crc32c(data))


def record(payload: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the payload, its masked CRC."""
    header = struct.pack("<Q", len(payload))
    return (header + struct.pack("<I", masked_crc32c(header)) + payload
            + struct.pack("<I", masked_crc32c(payload)))


# DataType enum values of TensorFlow's types.proto
_DT = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.int32): 3,
       np.dtype(np.uint8): 4, np.dtype(np.int64): 9, np.dtype(np.bool_): 10}
_DT_STRING = 7


def tensor_proto(value) -> bytes:
    """A TensorProto of a NumPy array (numbers as little-endian tensor_content) or of a
    list/array of strings (string_val)."""
    array = np.asarray(value)
    shape = b"".join(field(2, field(1, d)) for d in array.shape)
    out = field(2, shape) if array.shape else field(2, b"")
    if array.dtype.kind in "USO":
        out = field(1, _DT_STRING) + out
        for item in array.reshape(-1):
            data = item if isinstance(item, bytes) else str(item).encode("utf-8")
            out += field(8, data)
        return out
    dtype = _DT.get(array.dtype)
    if dtype is None:
        raise TypeError(f"summary: cannot store dtype {array.dtype} in an event file")
    content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return field(1, dtype) + out + field(4, content)


def summary_metadata(plugin: str, description: str | None = None) -> bytes:
    out = field(1, field(1, plugin.encode()) + field(2, b""))
    if description:
        out += field(3, description.encode("utf-8"))
    return out


def summary_event(wall_time: float, step: int, tag: str, tensor: bytes,
                  metadata: bytes) -> bytes:
    """An Event holding one Summary.Value: `tag`, its tensor and its metadata."""
    value = field(1, tag.encode("utf-8")) + field(8, tensor) + \
        field(9, metadata)
    return (field(1, ("double", wall_time)) + field(2, step)
            + field(5, field(1, value)))


def file_version_event(wall_time: float) -> bytes:
    """The first event of every file: the format version TensorBoard checks."""
    return field(1, ("double", wall_time)) + field(3, b"brain.Event:2")


# --------------------------------------------------------------------------- payloads


def histogram_buckets(data: np.ndarray, bucket_count: int = 30) -> np.ndarray:
    """[bucket_count, 3] float64 rows (left edge, right edge, count), as TensorBoard's
    histogram summary buckets its data: equal widths over [min, max]; all counts in the
    last bucket, whose edges are both that value, when the data has one value; zeros
    for empty data."""
    data = np.asarray(data, np.float64).reshape(-1)
    bucket_count = max(0, int(bucket_count))
    if data.size == 0 or bucket_count == 0:
        return np.zeros((bucket_count, 3))
    low, high = float(data.min()), float(data.max())
    if low == high:
        out = np.zeros((bucket_count, 3))
        out[:, 0] = out[:, 1] = high
        out[-1, 2] = data.size
        return out
    width = (high - low) / bucket_count
    index = np.minimum(np.floor((data - low) / width).astype(np.int64), bucket_count - 1)
    counts = np.bincount(index, minlength=bucket_count).astype(np.float64)
    edges = np.linspace(low, high, bucket_count + 1)
    edges[-1] = high
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def to_uint8_images(data: np.ndarray) -> np.ndarray:
    """Images as uint8, as `tf.image.convert_image_dtype(..., saturate=True)` makes them
    (floats in [0, 1] scaled by 255.5 and truncated)."""
    data = np.asarray(data)
    if data.dtype == np.uint8:
        return data
    if data.dtype.kind == "f":
        return np.clip(data.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    if data.dtype.kind in "iu":  # integers span their dtype's range, as in TensorFlow
        info = np.iinfo(data.dtype)
        scaled = np.clip(data.astype(np.float64), 0, info.max) / info.max * 255.0
        return np.round(scaled).astype(np.uint8)
    if data.dtype == np.bool_:
        return data.astype(np.uint8) * 255
    raise TypeError(f"summary.image: unsupported image dtype {data.dtype}")


def png(image: np.ndarray) -> bytes:
    """An 8-bit PNG of an [h, w, c] uint8 image (c: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA).

    Example:
        >>> png(np.zeros((1, 1, 1), np.uint8))[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    height, width, channels = image.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = np.concatenate([np.zeros((height, 1), np.uint8),
                           np.ascontiguousarray(image).reshape(height, width * channels)],
                          axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))
