"""The protocol-buffer messages of TensorFlow's SavedModel, written by hand over the wire
format of `_core/wire.py`: small encoders per message (field numbers from TensorFlow's
.proto files: saved_model, meta_graph, graph, node_def, function, op_def, attr_value,
tensor, tensor_shape, saved_object_graph, struct) and a reader that turns bytes back into
{field number: [values]} for the tests and, later, the loader.

Example:
    >>> parse(shape_proto((None, 4)))
    {2: [b'\\x08\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x01', b'\\x08\\x04']}
"""
from __future__ import annotations

import struct

import numpy as np

from .._core.dtypes import DATATYPE_ENUM, DType, as_dtype
from .._core.wire import field, parse_message, varint

# TensorFlow's DataType enum (types.proto)
DT_RESOURCE = 20
_DT = {**DATATYPE_ENUM, "resource": DT_RESOURCE, "variant": 21}  # graph-only types too


def dtype_enum(dtype) -> int:
    """TensorFlow's DataType number of a tapeflow dtype (or anything `as_dtype` takes)."""
    name = (dtype if isinstance(dtype, DType) else as_dtype(dtype)).name
    try:
        return _DT[name]
    except KeyError:
        raise ValueError(f"saved_model: dtype {name} has no TensorFlow DataType") from None


# ---------------------------------------------------------------- generic writing

def msg(number: int, *parts: bytes) -> bytes:
    """A nested message field: `parts` concatenated, length-delimited."""
    return field(number, b"".join(parts))


def boolean(number: int, value: bool) -> bytes:
    return field(number, 1 if value else 0)


def float32(number: int, value: float) -> bytes:
    return varint(number << 3 | 5) + struct.pack("<f", value)


def packed(number: int, values) -> bytes:
    """A packed repeated varint field (proto3's default for repeated scalars)."""
    return field(number, b"".join(varint(int(v)) for v in values))


def map_entry(number: int, key, value: bytes) -> bytes:
    """One entry of a map field: key (string or int) and an already-encoded value."""
    return msg(number, field(1, key), field(2, value))


def parse(buf: bytes) -> dict[int, list]:
    """A message as {field number: [values]} (see `wire.parse_message`)."""
    return parse_message(buf)


def parse_map(entries: list) -> dict:
    """A map field's entries (as `parse` gives them) as {key: value bytes}."""
    out = {}
    for raw in entries:
        f = parse_message(raw)
        key = f.get(1, [b""])[0]
        out[key.decode() if isinstance(key, bytes) else key] = f.get(2, [b""])[0]
    return out


# ---------------------------------------------------------------- tensors, shapes, attrs

def shape_proto(shape) -> bytes:
    """TensorShapeProto: dims (-1 unknown); `None` shape is unknown rank."""
    if shape is None:
        return boolean(3, True)
    return b"".join(msg(2, field(1, -1 if d is None else int(d))) for d in shape)


def tensor_proto(value: np.ndarray, dtype) -> bytes:
    """TensorProto with the value's bytes as tensor_content (strings as string_val)."""
    value = np.asarray(value)
    enum = dtype_enum(dtype)
    out = field(1, enum) + msg(2, shape_proto(value.shape))
    if enum == 7:
        return out + b"".join(field(8, s if isinstance(s, bytes) else str(s).encode())
                              for s in value.reshape(-1).tolist())
    return out + field(4, np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"),
                                                               copy=False).tobytes())


class Func:
    """A function-valued attribute (NameAttrList), e.g. StatefulPartitionedCall's `f`.

    Example:
        >>> attr_value(Func("__inference_f_1"))
        b'R\\x11\\n\\x0f__inference_f_1'
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def attr_value(value) -> bytes:
    """AttrValue of a Python value: DType -> type, bool -> b, int -> i, float -> f,
    str/bytes -> s, tuple ("shape", dims) -> shape, list -> list, Func -> func,
    ndarray -> tensor."""
    if isinstance(value, DType):
        return field(6, dtype_enum(value))
    if isinstance(value, bool):
        return boolean(5, value)
    if isinstance(value, int):
        return field(3, value)
    if isinstance(value, float):
        return float32(4, value)
    if isinstance(value, (str, bytes)):
        return field(2, value)
    if isinstance(value, Func):
        return msg(10, field(1, value.name))
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "shape":
        return msg(7, shape_proto(value[1]))
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "types":
        return msg(1, packed(6, value[1]))  # DataType numbers (DT_RESOURCE has no DType)
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "tensor":
        arr, dtype = value[1]
        return msg(8, tensor_proto(arr, dtype))
    if isinstance(value, list):
        if not value:
            return msg(1)
        if all(isinstance(v, DType) for v in value) and value:
            return msg(1, packed(6, [dtype_enum(v) for v in value]))
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return msg(1, packed(3, value))
        if all(isinstance(v, (str, bytes)) for v in value):
            return msg(1, *(field(2, v) for v in value))
        if all(isinstance(v, tuple) and v[0] == "shape" for v in value):
            return msg(1, *(msg(7, shape_proto(v[1])) for v in value))
    raise TypeError(f"saved_model: no AttrValue encoding for {value!r}")


def node_def(name: str, op: str, inputs=(), attrs: dict | None = None,
             device: str = "") -> bytes:
    """NodeDef: name, op, input names, device and attributes (sorted by name, so that the
    same graph gives the same bytes)."""
    out = field(1, name) + field(2, op) + b"".join(field(3, i) for i in inputs)
    if device:
        out += field(4, device)
    for k in sorted(attrs or {}):
        out += map_entry(5, k, attr_value(attrs[k]))
    return out


def arg_def(name: str, dtype, handle: tuple | None = None) -> bytes:
    """OpDef.ArgDef of one function argument or result; `handle` (dtype, shape) says what
    a resource argument holds."""
    out = field(1, name) + field(3, dtype_enum(dtype) if dtype != "resource" else DT_RESOURCE)
    if handle is not None:
        out += msg(7, field(1, dtype_enum(handle[0])), msg(2, shape_proto(handle[1])))
    return out


def version_def(producer: int, min_consumer: int) -> bytes:
    return field(1, producer) + field(2, min_consumer)
