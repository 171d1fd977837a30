"""The protocol-buffer messages of TensorFlow's SavedModel, written by hand over the wire
format of `_core/wire.py`: small encoders per message (field numbers from TensorFlow's
.proto files: saved_model, meta_graph, graph, node_def, function, op_def, attr_value,
tensor, tensor_shape, saved_object_graph, struct) and a reader that turns bytes back into
{field number: [values]}, with decoders of the messages the loader reads (tensors,
attributes, NodeDefs, FunctionDefs).

Example:
    >>> parse(shape_proto((None, 4)))
    {2: [b'\\x08\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x01', b'\\x08\\x04']}
"""
from __future__ import annotations

import struct

import numpy as np

from .._core.dtypes import DATATYPE_ENUM, DType, as_dtype
from .._core.wire import field, parse_message, read_varint, varint

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


# ---------------------------------------------------------------- reading

DTYPE_OF_ENUM = {v: k for k, v in DATATYPE_ENUM.items()}

_NUMPY_OF_ENUM = {1: "<f4", 2: "<f8", 3: "<i4", 4: "u1", 5: "<i2", 6: "i1", 9: "<i8",
                  10: "?", 17: "<u2", 19: "<f2", 22: "<u4", 23: "<u8", 8: "<c8", 18: "<c16"}


def dtype_of(enum: int) -> DType:
    """The tapeflow dtype of a TensorFlow DataType number (reference types, +100, as
    their base type)."""
    name = DTYPE_OF_ENUM.get(enum % 100)
    if name is None:
        raise ValueError(f"saved_model: TensorFlow DataType {enum} has no tapeflow dtype")
    return as_dtype(name)


def signed(value: int) -> int:
    """A varint read as unsigned 64 bits, as the signed int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _one(fields: dict, number: int, default=None):
    values = fields.get(number)
    return values[-1] if values else default


def text(fields: dict, number: int) -> str:
    """A string field ("" when absent)."""
    return _one(fields, number, b"").decode("utf-8")


def varints(values: list) -> list[int]:
    """A repeated varint field's values, packed (bytes) or not (ints)."""
    out = []
    for v in values:
        if isinstance(v, bytes):
            pos = 0
            while pos < len(v):
                x, pos = read_varint(v, pos, len(v))
                out.append(signed(x))
        else:
            out.append(signed(v))
    return out


def _floats(values: list, fmt: str) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, bytes):  # packed
            out.extend(np.frombuffer(v, fmt).tolist())
        else:  # one fixed-width value, read as an unsigned int
            size = np.dtype(fmt).itemsize
            out.append(float(np.frombuffer(int(v).to_bytes(size, "little"), fmt)[0]))
    return out


def decode_shape(buf: bytes):
    """A TensorShapeProto as a tuple (None for an unknown dim), or None (unknown rank)."""
    f = parse(buf)
    if _one(f, 3, 0):
        return None
    return tuple(None if (d := signed(_one(parse(raw), 1, 0))) < 0 else d
                 for raw in f.get(2, []))


def decode_tensor(buf: bytes) -> np.ndarray:
    """A TensorProto's value: tensor_content, or the typed value fields (one value fills
    the whole shape, as TensorFlow's constants store splats)."""
    f = parse(buf)
    enum = _one(f, 1, 0)
    shape = decode_shape(_one(f, 2, b"")) or ()
    size = int(np.prod(shape)) if shape else 1
    if enum == 7:
        flat = np.array(list(f.get(8, [])) or [b""], dtype=object)
        return np.broadcast_to(flat, (size,)).reshape(shape).copy() if flat.size != size \
            else flat.reshape(shape)
    if enum not in _NUMPY_OF_ENUM:
        raise ValueError(f"saved_model: a constant of TensorFlow DataType {enum} cannot be "
                         "read")
    npd = np.dtype(_NUMPY_OF_ENUM[enum])
    content = _one(f, 4)
    if content is not None:
        return np.frombuffer(content, npd).reshape(shape).astype(npd.newbyteorder("="))
    if enum in (1,):
        vals = _floats(f.get(5, []), "<f4")
    elif enum == 2:
        vals = _floats(f.get(6, []), "<f8")
    elif enum == 9:
        vals = varints(f.get(10, []))
    elif enum == 23:
        vals = [v & ((1 << 64) - 1) for v in varints(f.get(16, []))]
    elif enum == 22:
        vals = varints(f.get(17, []))
    elif enum == 10:
        vals = [bool(v) for v in varints(f.get(11, []))]
    elif enum == 19:  # float16 bits in half_val
        vals = np.asarray(varints(f.get(13, [])), np.uint16).view(np.float16).tolist()
    elif enum in (8, 18):
        pairs = _floats(f.get(9 if enum == 8 else 12, []), "<f4" if enum == 8 else "<f8")
        vals = [complex(a, b) for a, b in zip(pairs[::2], pairs[1::2])]
    else:  # int32, int16, int8, uint8, uint16 in int_val
        vals = varints(f.get(7, []))
    arr = np.asarray(vals, npd.newbyteorder("="))
    if arr.size == size:
        return arr.reshape(shape)
    if arr.size == 0:
        return np.zeros(shape, arr.dtype)
    # fewer values than elements: the last one repeats (TensorFlow's compact constants)
    return np.concatenate([arr, np.full(size - arr.size, arr[-1], arr.dtype)]).reshape(shape)


class FuncRef:
    """A function-valued attribute read back: the function's name and its own attrs."""

    __slots__ = ("name", "attrs")

    def __init__(self, name: str, attrs: dict):
        self.name, self.attrs = name, attrs

    def __repr__(self) -> str:
        return f"FuncRef({self.name!r})"


def decode_attr(buf: bytes):
    """An AttrValue as a Python value: bytes (s), int (i), float (f), bool (b), int
    DataType number (type), tuple/None (shape), ndarray (tensor), FuncRef (func), or a
    list of these."""
    f = parse(buf)
    if 2 in f:
        return f[2][-1]
    if 3 in f:
        return signed(f[3][-1])
    if 4 in f:
        return _floats(f[4][-1:], "<f4")[0]
    if 5 in f:
        return bool(f[5][-1])
    if 6 in f:
        return f[6][-1]
    if 7 in f:
        return decode_shape(f[7][-1])
    if 8 in f:
        return decode_tensor(f[8][-1])
    if 10 in f:
        fn = parse(f[10][-1])
        return FuncRef(text(fn, 1), {k: decode_attr(v) for k, v in
                                     parse_map(fn.get(2, [])).items()})
    if 1 in f:
        lst = parse(f[1][-1])
        if 2 in lst:
            return list(lst[2])
        if 3 in lst:
            return varints(lst[3])
        if 4 in lst:
            return _floats(lst[4], "<f4")
        if 5 in lst:
            return [bool(v) for v in varints(lst[5])]
        if 6 in lst:
            return varints(lst[6])
        if 7 in lst:
            return [decode_shape(s) for s in lst[7]]
        if 8 in lst:
            return [decode_tensor(t) for t in lst[8]]
        if 9 in lst:
            return [FuncRef(text(parse(x), 1), {}) for x in lst[9]]
        return []
    return None


def decode_attrs(entries: list) -> dict:
    """A map<string, AttrValue> field as {name: value}."""
    return {k: decode_attr(v) for k, v in parse_map(entries).items()}


class NodeDef:
    """A NodeDef read back: name, op, inputs (control inputs keep their "^") and attrs."""

    __slots__ = ("name", "op", "inputs", "attrs")

    def __init__(self, buf: bytes):
        f = parse(buf)
        self.name, self.op = text(f, 1), text(f, 2)
        self.inputs = [i.decode("utf-8") for i in f.get(3, [])]
        self.attrs = decode_attrs(f.get(5, []))


class ArgDef:
    """One OpDef.ArgDef of a function's signature: name and DataType number."""

    __slots__ = ("name", "type")

    def __init__(self, buf: bytes):
        f = parse(buf)
        self.name, self.type = text(f, 1), _one(f, 3, 0)


class FunctionDef:
    """A FunctionDef read back: its name, input and output args, nodes, returns
    ({output arg: tensor name}) and control returns."""

    def __init__(self, buf: bytes):
        f = parse(buf)
        sig = parse(_one(f, 1, b""))
        self.name = text(sig, 1)
        self.inputs = [ArgDef(a) for a in sig.get(2, [])]
        self.outputs = [ArgDef(a) for a in sig.get(3, [])]
        self.nodes = [NodeDef(n) for n in f.get(3, [])]
        self.ret = {k: v.decode("utf-8") for k, v in parse_map(f.get(4, [])).items()}
        self.control_ret = {k: v.decode("utf-8") for k, v in parse_map(f.get(6, [])).items()}
