"""ONNX's protocol-buffer messages, written over the wire module (no protobuf package, no
`onnx` package): ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
ValueInfoProto (with TypeProto and TensorShapeProto) and OperatorSetIdProto, each as a
function returning the encoded message. Field numbers are those of ONNX's onnx.proto.

Example:
    >>> import numpy as np
    >>> from tapeflow._core.wire import parse_message
    >>> parse_message(tensor("w", np.ones((2,), np.float32)))[8]
    [b'w']
"""
from __future__ import annotations

import numpy as np

from .._core.wire import field

# TensorProto.DataType
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16

# NumPy dtype name -> ONNX element type
ELEM_TYPES = {"float32": FLOAT, "uint8": UINT8, "int8": INT8, "uint16": UINT16,
              "int16": INT16, "int32": INT32, "int64": INT64, "bool": BOOL,
              "float16": FLOAT16, "float64": DOUBLE, "uint32": UINT32, "uint64": UINT64,
              "complex64": COMPLEX64, "complex128": COMPLEX128, "bfloat16": BFLOAT16}

# AttributeProto.AttributeType
_A_FLOAT, _A_INT, _A_STRING, _A_TENSOR, _A_GRAPH = 1, 2, 3, 4, 5
_A_FLOATS, _A_INTS, _A_STRINGS = 6, 7, 8


class GraphAttr(bytes):
    """An encoded GraphProto given as an attribute value (a Loop's or If's body)."""


def _float32(v: float) -> tuple:
    return ("fixed32", int(np.array(v, np.float32).view(np.uint32)))


def elem_type(dtype_name: str) -> int:
    """The ONNX element type of a NumPy/tapeflow dtype name ("float32" -> 1)."""
    try:
        return ELEM_TYPES[dtype_name]
    except KeyError:
        raise ValueError(f"ONNX has no element type for dtype {dtype_name}") from None


def tensor(name: str, value: np.ndarray) -> bytes:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    value = np.asarray(value)
    out = b"".join(field(1, int(d)) for d in value.shape)
    out += field(2, elem_type(value.dtype.name)) + field(8, name)
    if value.dtype.byteorder == ">":
        value = value.astype(value.dtype.newbyteorder("<"))
    return out + field(9, np.ascontiguousarray(value).tobytes())


def attribute(name: str, value) -> bytes:
    """AttributeProto: name (1), type (20), and one of f (2), i (3), s (4), t (5), g (6),
    floats (7), ints (8), strings (9). Python bools and ints are INT, floats FLOAT, str
    STRING, arrays TENSOR, a `GraphAttr` GRAPH, lists of ints INTS, of floats FLOATS, of
    str STRINGS."""
    # fields in number order, as protobuf writes them (type, 20, comes last)
    out = field(1, name)
    if isinstance(value, GraphAttr):
        return out + field(6, bytes(value)) + field(20, _A_GRAPH)
    if isinstance(value, np.ndarray):
        return out + field(5, tensor("", value)) + field(20, _A_TENSOR)
    if isinstance(value, (bool, int, np.integer)):
        return out + field(3, int(value)) + field(20, _A_INT)
    if isinstance(value, (float, np.floating)):
        return out + field(2, _float32(value)) + field(20, _A_FLOAT)
    if isinstance(value, (str, bytes)):
        return out + field(4, value) + field(20, _A_STRING)
    values = list(value)
    if values and all(isinstance(v, (str, bytes)) for v in values):
        return out + b"".join(field(9, v) for v in values) + field(20, _A_STRINGS)
    if values and any(isinstance(v, (float, np.floating)) for v in values):
        return out + b"".join(field(7, _float32(v)) for v in values) + field(20, _A_FLOATS)
    # ints unpacked: onnx.proto is proto2, whose repeated scalars are not packed
    return out + b"".join(field(8, int(v)) for v in values) + field(20, _A_INTS)


def node(op_type: str, inputs, outputs, name: str = "", attrs: dict | None = None,
         domain: str = "") -> bytes:
    """NodeProto: input (1), output (2), name (3), op_type (4), attribute (5), domain (7).
    An empty input name marks an omitted optional input."""
    out = b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs)
    if name:
        out += field(3, name)
    out += field(4, op_type)
    for key in sorted(attrs or {}):
        out += field(5, attribute(key, attrs[key]))
    if domain:
        out += field(7, domain)
    return out


def value_info(name: str, dtype_name: str, shape) -> bytes:
    """ValueInfoProto: name (1), type (2) = TypeProto with tensor_type (1) = Tensor
    (elem_type 1, shape 2 = TensorShapeProto of dim (1) = Dimension (dim_value 1 or
    dim_param 2)). `shape` entries: ints, names of dynamic dims, or None (unknown,
    unnamed); `shape` None: rank unknown."""
    ttype = field(1, elem_type(dtype_name))
    if shape is not None:
        dims = b""
        for d in shape:
            if d is None:
                dims += field(1, b"")
            elif isinstance(d, str):
                dims += field(1, field(2, d))
            else:
                dims += field(1, field(1, int(d)))
        ttype += field(2, dims)
    return field(1, name) + field(2, field(1, ttype))


def opset_id(version: int, domain: str = "") -> bytes:
    """OperatorSetIdProto: domain (1), version (2)."""
    return (field(1, domain) if domain else b"") + field(2, int(version))


def graph(name: str, nodes, initializers, inputs, outputs, value_infos=()) -> bytes:
    """GraphProto: node (1), name (2), initializer (5), input (11), output (12),
    value_info (13); every argument but `name` is a list of encoded messages."""
    out = b"".join(field(1, n) for n in nodes) + field(2, name)
    out += b"".join(field(5, t) for t in initializers)
    out += b"".join(field(11, i) for i in inputs) + b"".join(field(12, o) for o in outputs)
    return out + b"".join(field(13, v) for v in value_infos)


def model(graph_bytes: bytes, opset: int, ir_version: int, producer: str,
          producer_version: str) -> bytes:
    """ModelProto: ir_version (1), producer_name (2), producer_version (3), graph (7),
    opset_import (8)."""
    return (field(1, ir_version) + field(2, producer) + field(3, producer_version)
            + field(7, graph_bytes) + field(8, opset_id(opset)))
