"""File and serialization ops (`tf.io`): reading and writing files, tensors as TensorProto
bytes, raw and CSV decoding, parsing `tf.train.Example` records, TFRecord framing and
`gfile` for local paths.

The ops that take tensors (ReadFile, WriteFile, SerializeTensor, ParseTensor, DecodeRaw,
DecodeCSV, ParseExample) are ops like any other, so they run traced (in `tf.function`,
`Dataset.map`); their work is on bytes, done by a native function on the NumPy values
(object arrays of bytes for strings). Nothing is differentiable. Formats are TensorFlow's,
written here over `_core/wire.py` (no protobuf, no TensorFlow):

    TensorProto  {1: dtype enum, 2: TensorShapeProto {2: dim {1: size}},
                  4: tensor_content (little-endian bytes), 8: string_val (repeated)}
    Example      {1: Features {1: map<string, Feature>}};
                 Feature {1: BytesList, 2: FloatList, 3: Int64List}, each {1: value}
    TFRecord     uint64 length, uint32 masked CRC-32C of length, data, uint32 masked
                 CRC-32C of data (little-endian); the whole file GZIP/ZLIB-compressed
                 when asked
"""
from __future__ import annotations

import glob as _glob
import gzip
import io as _pyio
import os
import shutil
import struct
import zlib

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import (AlreadyExistsError, DataLossError, InvalidArgumentError,
                            NotFoundError, describe)
from .._core.shape import is_symbolic
from .._core.tensor import Tensor, TensorShape
from .._core.wire import WireError, crc32c, field, mask, parse_message, read_varint
from ._args import dtype_arg, show, to_tensor
from ._define import defop
from .sparse import SparseTensor

__all__ = [
    "read_file", "write_file", "serialize_tensor", "parse_tensor", "decode_raw",
    "decode_csv", "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature",
    "parse_example", "parse_single_example", "TFRecordOptions", "TFRecordWriter",
    "tf_record_iterator", "GFile", "gfile",
]

_STRING = _dt.string


def _run(name: str, native):
    """The eager form of a native op: NumPy values of the input tensors in, tensors out.

    These ops are declared stateful: a traced function then keeps each as one node run by
    its native function (a pure composite would be traced through this eager form)."""
    def impl(inputs, attrs):
        arrays = {k: ([t.numpy() for t in v] if isinstance(v, (list, tuple)) else v.numpy())
                  for k, v in inputs.items()}
        out = native(arrays, attrs, None)
        if out is None:
            return None
        if isinstance(out, list):
            return [convert_to_tensor(_array(o)) for o in out]
        return convert_to_tensor(_array(out))
    return impl


def _array(a) -> np.ndarray:
    a = np.asarray(a) if not isinstance(a, np.ndarray) else a
    return a


def _strings(shape, values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


def _scalar_string(op: str, value, arg: str) -> Tensor:
    if isinstance(value, (bytes, str)):
        # a 0-d object array, not np.asarray(bytes): NumPy's "S" dtype drops trailing NULs
        a = np.empty((), dtype=object)
        a[()] = value.encode("utf-8") if isinstance(value, str) else value
        value = a
    t = value if type(value) is Tensor else to_tensor(value, None, op, arg)
    if t.dtype is not _STRING:
        raise InvalidArgumentError(f"{op}: {arg} must be a string tensor, got {describe(t)}")
    return t


def _path(v) -> str:
    if isinstance(v, np.ndarray):
        v = v[()] if v.ndim == 0 else v
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, (str, os.PathLike)):
        return os.fspath(v)
    raise InvalidArgumentError(f"expected a scalar file name, got {v!r:.60}")


# --------------------------------------------------------------------------- read/write


def _read_file_native(inputs, attrs, backend):
    name = _path(inputs["filename"])
    try:
        with open(name, "rb") as f:
            return np.array(f.read(), dtype=object)
    except FileNotFoundError:
        raise NotFoundError(f"{name}; No such file or directory") from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"{name}; Is a directory") from None


def _write_file_native(inputs, attrs, backend):
    name = _path(inputs["filename"])
    contents = inputs["contents"]
    contents = contents[()] if isinstance(contents, np.ndarray) else contents
    parent = os.path.dirname(name)
    if parent:
        os.makedirs(parent, exist_ok=True)  # TF's WriteFile creates missing directories
    with open(name, "wb") as f:
        f.write(contents)


def _scalar_string_shape(shapes, dtypes, attrs):
    return [((), _STRING)]


defop("ReadFile", ["filename"], shape=_scalar_string_shape,
      impl=_run("ReadFile", _read_file_native), native=_read_file_native,
      differentiable=False, stateful=True)
defop("WriteFile", ["filename", "contents"], num_outputs=0,
      shape=lambda shapes, dtypes, attrs: [], impl=_run("WriteFile", _write_file_native),
      native=_write_file_native, differentiable=False, stateful=True)


def _check_scalar(op: str, t: Tensor, arg: str) -> None:
    if t.ndim != 0:
        raise InvalidArgumentError(f"{op}: {arg} must be a scalar, got {describe(t)}")


def read_file(filename, name=None) -> Tensor:
    """The whole contents of a file as a scalar string tensor.

    Example:
        >>> tf.io.write_file("/tmp/tapeflow_read_file.txt", "hello")
        >>> tf.io.read_file("/tmp/tapeflow_read_file.txt").numpy()
        b'hello'
    """
    t = _scalar_string("read_file", filename, "filename")
    _check_scalar("read_file", t, "filename")
    return run_kernel("ReadFile", {"filename": t})


def write_file(filename, contents, name=None) -> None:
    """Write the scalar string `contents` to `filename` (creating its directories).

    Example:
        >>> tf.io.write_file("/tmp/tapeflow_write_file.txt", b"data")
    """
    f = _scalar_string("write_file", filename, "filename")
    c = _scalar_string("write_file", contents, "contents")
    _check_scalar("write_file", f, "filename")
    _check_scalar("write_file", c, "contents")
    run_kernel("WriteFile", {"filename": f, "contents": c})
    return None


# --------------------------------------------------------------------------- TensorProto

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto)
_ENUM = _dt.DATATYPE_ENUM
_FROM_ENUM = {v: k for k, v in _ENUM.items()}


def _enum_of(a: np.ndarray) -> int:
    name = "string" if a.dtype == object else _dt.as_dtype(a.dtype).name
    if name not in _ENUM:
        raise InvalidArgumentError(f"serialize_tensor: dtype {name} has no TensorProto form")
    return _ENUM[name]


def tensor_proto_bytes(a: np.ndarray) -> bytes:
    """A NumPy array (object arrays of bytes for strings) as TensorProto bytes, as
    TensorFlow's SerializeTensor writes them (numbers in tensor_content, strings in
    string_val)."""
    enum = _enum_of(a)
    shape = b"".join(field(2, field(1, int(d)) if d else b"") for d in a.shape)
    out = field(1, enum) + field(2, shape)
    if enum == 7:
        out += b"".join(field(8, bytes(s)) for s in a.reshape(-1).tolist())
    elif a.size:
        le = a.astype(a.dtype.newbyteorder("<"), copy=False)
        out += field(4, np.ascontiguousarray(le).tobytes())
    return out


def _typed_values(enum: int, fields: dict, n: int, dtype) -> np.ndarray:
    """The values of a TensorProto without tensor_content (the typed repeated fields; a
    single value stands for all, as TensorFlow fills)."""
    number = {1: 5, 2: 6, 3: 7, 4: 7, 5: 7, 6: 7, 17: 7, 19: 13, 14: 13, 9: 10, 10: 11,
              8: 9, 18: 12, 22: 16, 23: 17}.get(enum)
    raw = fields.get(number, [])
    vals: list = []
    for r in raw:
        if isinstance(r, bytes):  # packed
            if number == 5 or number == 9:
                vals.extend(struct.unpack(f"<{len(r) // 4}f", r))
            elif number == 6 or number == 12:
                vals.extend(struct.unpack(f"<{len(r) // 8}d", r))
            else:
                pos = 0
                while pos < len(r):
                    v, pos = read_varint(r, pos, len(r))
                    vals.append(v)
        elif number in (5, 9):
            vals.append(struct.unpack("<f", struct.pack("<I", r))[0])
        elif number in (6, 12):
            vals.append(struct.unpack("<d", struct.pack("<Q", r))[0])
        else:
            vals.append(r)
    if number in (7, 10):  # int32/int64 varints: two's complement
        vals = [v - (1 << 64) if v >= 1 << 63 else v for v in vals]
    if number == 13:  # half/bfloat16 stored as their 16 bits
        bits = np.array(vals, dtype=np.uint16)
        vals_arr = bits.view(dtype) if dtype != "bfloat16" else bits.view(_dt.as_dtype(
            "bfloat16").as_numpy_dtype)
        arr = np.asarray(vals_arr)
    elif number in (9, 12):  # complex: pairs
        arr = np.array(vals[0::2], dtype) + 1j * np.array(vals[1::2], dtype)
        arr = arr.astype(dtype)
    else:
        arr = np.array(vals).astype(dtype)
    if arr.size == n:
        return arr
    if arr.size == 0:
        return np.zeros(n, dtype)
    if arr.size < n:
        return np.concatenate([arr, np.full(n - arr.size, arr[-1], dtype)])
    raise InvalidArgumentError("parse_tensor: more values than the shape holds")


def parse_tensor_proto(data: bytes, out_name: str | None = None) -> np.ndarray:
    """The array a TensorProto's bytes hold; `out_name` (a dtype name) checks its type."""
    try:
        fields = parse_message(data)
        enum = fields.get(1, [0])[-1]
        dims = [parse_message(d).get(1, [0])[-1] for d in
                parse_message(b"".join(fields.get(2, []))).get(2, [])]
    except WireError as e:
        raise InvalidArgumentError(f"Could not parse `serialized` as TensorProto: {e}") \
            from None
    name = _FROM_ENUM.get(enum)
    if name is None:
        raise InvalidArgumentError(f"parse_tensor: unsupported TensorProto dtype enum {enum}")
    if out_name is not None and name != out_name:
        raise InvalidArgumentError(f"Type mismatch between parsed tensor ({name}) and dtype "
                                   f"({out_name})")
    n = int(np.prod(dims)) if dims else 1
    if enum == 7:
        vals = [bytes(v) for v in fields.get(8, [])]
        if len(vals) != n:
            raise InvalidArgumentError(f"parse_tensor: {len(vals)} strings for shape {dims}")
        return _strings(dims, vals)
    dtype = _dt.as_dtype(name).as_numpy_dtype
    content = fields.get(4)
    if content:
        raw = b"".join(content)
        flat = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
        if flat.size != n:
            raise InvalidArgumentError(f"parse_tensor: tensor_content of {len(raw)} bytes "
                                       f"for shape {dims}")
        return flat.astype(dtype).reshape(dims)
    return _typed_values(enum, fields, n, dtype).reshape(dims)


def _serialize_native(inputs, attrs, backend):
    return np.array(tensor_proto_bytes(np.asarray(inputs["x"])), dtype=object)


def _parse_tensor_native(inputs, attrs, backend):
    s = inputs["serialized"]
    return parse_tensor_proto(s[()] if isinstance(s, np.ndarray) else s, attrs["out_type"])


def _parse_tensor_shape(shapes, dtypes, attrs):
    rank = attrs.get("rank")
    if rank is None:
        raise InvalidArgumentError(
            "parse_tensor: the rank of the parsed tensor is unknown while tracing (tapeflow "
            "has no tensors of unknown rank); call it eagerly, or inside tf.py_function "
            "with the output's dtype")
    return [((None,) * rank, _dt.as_dtype(attrs["out_type"]))]


defop("SerializeTensor", ["x"], shape=_scalar_string_shape,
      impl=_run("SerializeTensor", _serialize_native), native=_serialize_native,
      differentiable=False, stateful=True)
defop("ParseTensor", ["serialized"], shape=_parse_tensor_shape,
      impl=_run("ParseTensor", _parse_tensor_native), native=_parse_tensor_native,
      differentiable=False, stateful=True)


def serialize_tensor(tensor, name=None) -> Tensor:
    """A tensor as the bytes of its TensorProto (TensorFlow's format: the two libraries
    read each other's bytes).

    Example:
        >>> tf.io.serialize_tensor(tf.constant(3)).numpy()
        b'\\x08\\x03\\x12\\x00"\\x04\\x03\\x00\\x00\\x00'
    """
    t = tensor if type(tensor) is Tensor else to_tensor(tensor, None, "serialize_tensor",
                                                          "tensor")
    return run_kernel("SerializeTensor", {"x": t})


def parse_tensor(serialized, out_type, name=None) -> Tensor:
    """The tensor whose TensorProto bytes `serialized` holds; `out_type` must be its dtype.

    Example:
        >>> tf.io.parse_tensor(tf.io.serialize_tensor([1.5, 2.0]), tf.float32).numpy()
        array([1.5, 2. ], dtype=float32)
    """
    out = dtype_arg("parse_tensor", out_type, "out_type")
    s = _scalar_string("parse_tensor", serialized, "serialized")
    _check_scalar("parse_tensor", s, "serialized")
    attrs = {"out_type": out.name}
    if is_symbolic(s):
        attrs["rank"] = None
    return run_kernel("ParseTensor", {"serialized": s}, attrs)


# --------------------------------------------------------------------------- decode_raw


def _decode_raw_native(inputs, attrs, backend):
    x = np.asarray(inputs["x"], dtype=object)
    dtype = np.dtype(_dt.as_dtype(attrs["out_type"]).as_numpy_dtype)
    dtype = dtype.newbyteorder("<" if attrs["little_endian"] else ">")
    fixed = attrs["fixed_length"]
    flat = x.reshape(-1).tolist()
    if fixed is None:
        sizes = {len(b) for b in flat}
        if len(sizes) > 1:
            raise InvalidArgumentError(f"DecodeRaw requires input strings to all be the same "
                                       f"size, but element 0 has size {len(flat[0])} != "
                                       f"{sorted(sizes - {len(flat[0])})[0]}")
        width = sizes.pop() if sizes else 0
        if width % dtype.itemsize:
            raise InvalidArgumentError(f"Input to DecodeRaw has length {width} that is not a "
                                       f"multiple of {dtype.itemsize}, the size of "
                                       f"{attrs['out_type']}")
        n = width // dtype.itemsize
        rows = [np.frombuffer(b, dtype) for b in flat]
    else:
        n = fixed // dtype.itemsize
        rows = [np.frombuffer((b + b"\0" * fixed)[:fixed], dtype)[:n] for b in flat]
    out = np.stack(rows) if rows else np.zeros((0, n), dtype)
    return out.astype(dtype.newbyteorder("=")).reshape(x.shape + (n,))


defop("DecodeRaw", ["x"],
      shape=lambda shapes, dtypes, attrs: [(tuple(shapes["x"]) + (
          None if attrs["fixed_length"] is None else
          attrs["fixed_length"] // np.dtype(_dt.as_dtype(attrs["out_type"]).as_numpy_dtype)
          .itemsize,), _dt.as_dtype(attrs["out_type"]))],
      impl=_run("DecodeRaw", _decode_raw_native), native=_decode_raw_native,
      differentiable=False, stateful=True)


def decode_raw(input_bytes, out_type, little_endian: bool = True, fixed_length=None,
               name=None) -> Tensor:
    """Reinterpret the bytes of each string as a vector of `out_type` (a new last
    dimension); all strings must have the same length unless `fixed_length` is given.

    Example:
        >>> tf.io.decode_raw(tf.constant([b"\\x01\\x00\\x02\\x00"]), tf.int16).numpy()
        array([[1, 2]], dtype=int16)
    """
    out = dtype_arg("decode_raw", out_type, "out_type")
    if out is _STRING or out.name in ("bfloat16",):
        raise InvalidArgumentError(f"decode_raw: out_type {out.name} is not supported")
    x = _scalar_string("decode_raw", input_bytes, "input_bytes")
    return run_kernel("DecodeRaw", {"x": x}, {"out_type": out.name,
                                              "little_endian": bool(little_endian),
                                              "fixed_length": None if fixed_length is None
                                              else int(fixed_length)})


# --------------------------------------------------------------------------- decode_csv


def _split_csv(record: bytes, delim: bytes, quote: bool, index: int) -> list[bytes]:
    if not quote:
        return record.split(delim)
    fields, i, n = [], 0, len(record)
    while True:
        if i < n and record[i:i + 1] == b'"':
            buf = bytearray()
            i += 1
            while True:
                if i >= n:
                    raise InvalidArgumentError(f"Quoted field has to end with quote followed "
                                               f"by delim or end, in record {index}")
                c = record[i:i + 1]
                if c == b'"':
                    if record[i + 1:i + 2] == b'"':
                        buf += b'"'
                        i += 2
                        continue
                    i += 1
                    break
                buf += c
                i += 1
            if i < n and record[i:i + len(delim)] != delim:
                raise InvalidArgumentError("Quote inside a string has to be escaped by "
                                           "another quote")
            fields.append(bytes(buf))
        else:
            j = record.find(delim, i)
            end = n if j < 0 else j
            piece = record[i:end]
            if b'"' in piece:
                raise InvalidArgumentError(f"Unquoted fields cannot have quotes inside, in "
                                           f"record {index}")
            fields.append(piece)
            i = end
        if i >= n:
            return fields
        i += len(delim)
        if i >= n:
            fields.append(b"")
            return fields


def _convert_csv(text: bytes, dtype: str, col: int, rec: int):
    try:
        if dtype == "string":
            return text
        if dtype in ("int32", "int64"):
            v = int(text.strip())
            bits = 31 if dtype == "int32" else 63
            if not -(1 << bits) <= v < (1 << bits):
                raise ValueError
            return v
        return float(text)
    except ValueError:
        raise InvalidArgumentError(f"Field {col} in record {rec} is not a valid {dtype}: "
                                   f"{text.decode('utf-8', 'backslashreplace')}") from None


def _decode_csv_native(inputs, attrs, backend):
    records = np.asarray(inputs["records"], dtype=object)
    defaults = inputs["defaults"]
    types, cols = attrs["types"], attrs["select_cols"]
    delim, quote, na = attrs["field_delim"], attrs["use_quote_delim"], attrs["na_value"]
    flat = records.reshape(-1).tolist()
    columns: list[list] = [[] for _ in defaults]
    for r, rec in enumerate(flat):
        fields = _split_csv(bytes(rec), delim, quote, r)
        if cols is not None:
            if cols[-1] >= len(fields):
                raise InvalidArgumentError(f"Expect {len(defaults)} fields but have "
                                           f"{len(fields)} in record {r}")
            fields = [fields[c] for c in cols]
        elif len(fields) != len(defaults):
            raise InvalidArgumentError(f"Expect {len(defaults)} fields but have {len(fields)} "
                                       f"in record {r}")
        for c, (text, default, dtype) in enumerate(zip(fields, defaults, types)):
            if text == b"" or (na and text == na):
                if np.size(default) == 0:
                    raise InvalidArgumentError(f"Field {c} is required but missing in record "
                                               f"{r}!")
                columns[c].append(np.asarray(default).reshape(-1)[0])
            else:
                columns[c].append(_convert_csv(text, dtype, c, r))
    out = []
    for col, dtype in zip(columns, types):
        if dtype == "string":
            out.append(_strings(records.shape, col))
        else:
            np_type = _dt.as_dtype(dtype).as_numpy_dtype
            out.append(np.array(col, dtype=np_type).reshape(records.shape))
    return out


defop("DecodeCSV", ["records", "defaults"], list_inputs=("defaults",), num_outputs=None,
      shape=lambda shapes, dtypes, attrs: [(tuple(shapes["records"]), _dt.as_dtype(t))
                                           for t in attrs["types"]],
      impl=_run("DecodeCSV", _decode_csv_native), native=_decode_csv_native,
      differentiable=False, stateful=True)

_CSV_TYPES = ("float32", "float64", "int32", "int64", "string")


def decode_csv(records, record_defaults, field_delim: str = ",", use_quote_delim: bool = True,
               na_value: str = "", select_cols=None, name=None) -> list:
    """Parse CSV records (a string tensor) into one tensor per column, shaped as `records`.

    `record_defaults` gives each column's type and its default (a one-element list or
    tensor) for empty fields; an empty tensor marks the column required. `select_cols`
    picks columns (sorted indices); `na_value` reads as missing.

    Example:
        >>> [c.numpy() for c in tf.io.decode_csv(["1,2.5,x"], [[0], [1.0], ["d"]])]
        [array([1], dtype=int32), array([2.5], dtype=float32), array([b'x'], dtype=object)]
    """
    recs = _scalar_string("decode_csv", records, "records")
    if not isinstance(record_defaults, (list, tuple)) or not record_defaults:
        raise ValueError(f"decode_csv: record_defaults must be a non-empty list, got "
                         f"{show(record_defaults)}")
    defaults, types = [], []
    for i, d in enumerate(record_defaults):
        t = d if type(d) is Tensor else convert_to_tensor(d)
        if t.dtype.name not in _CSV_TYPES:
            raise InvalidArgumentError(f"decode_csv: record_defaults[{i}] has dtype "
                                       f"{t.dtype.name}; expected one of {_CSV_TYPES}")
        if t.ndim > 1 or (t._shape and t._shape[0] not in (0, 1, None)):
            raise InvalidArgumentError(f"decode_csv: record_defaults[{i}] must hold at most "
                                       f"one value, got {describe(t)}")
        defaults.append(t)
        types.append(t.dtype.name)
    if not isinstance(field_delim, (str, bytes)) or len(field_delim) != 1:
        raise InvalidArgumentError(f"decode_csv: field_delim should be only 1 char, got "
                                   f"{field_delim!r}")
    cols = None
    if select_cols is not None:
        cols = tuple(int(c) for c in select_cols)
        if any(b <= a for a, b in zip(cols, cols[1:])) or (cols and cols[0] < 0):
            raise ValueError("select_cols is not strictly increasing.")
        if len(cols) != len(defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    enc = (lambda s: s.encode("utf-8") if isinstance(s, str) else bytes(s))
    return run_kernel("DecodeCSV", {"records": recs, "defaults": defaults},
                      {"types": tuple(types), "field_delim": enc(field_delim),
                       "use_quote_delim": bool(use_quote_delim),
                       "na_value": enc(na_value or b""), "select_cols": cols})


# --------------------------------------------------------------------------- Example parsing


class FixedLenFeature:
    """A feature of known shape (`shape`, `dtype`); `default_value` fills records that
    lack it (None: the feature is required).

    Example:
        >>> tf.io.FixedLenFeature([2], tf.float32).shape
        [2]
    """

    def __init__(self, shape, dtype, default_value=None):
        self.shape = list(shape) if isinstance(shape, (list, tuple)) else (
            [] if shape is None else list(TensorShape(shape)))
        self.dtype = _dt.as_dtype(dtype)
        self.default_value = default_value

    def __repr__(self) -> str:
        return (f"FixedLenFeature(shape={self.shape}, dtype={self.dtype!r}, "
                f"default_value={self.default_value!r})")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


class FixedLenSequenceFeature:
    """A feature of variable length whose items have `shape`; parsed dense as
    [batch, length, *shape], padded with `default_value` (or zero). `allow_missing`
    lets records lack it.

    Example:
        >>> tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True).allow_missing
        True
    """

    def __init__(self, shape, dtype, allow_missing: bool = False, default_value=None):
        self.shape = list(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.allow_missing = bool(allow_missing)
        self.default_value = default_value

    def __repr__(self) -> str:
        return (f"FixedLenSequenceFeature(shape={self.shape}, dtype={self.dtype!r}, "
                f"allow_missing={self.allow_missing}, default_value={self.default_value!r})")


class VarLenFeature:
    """A feature of any length, parsed as a SparseTensor.

    Example:
        >>> tf.io.VarLenFeature(tf.int64).dtype
        tf.int64
    """

    def __init__(self, dtype):
        self.dtype = _dt.as_dtype(dtype)

    def __repr__(self) -> str:
        return f"VarLenFeature(dtype={self.dtype!r})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.dtype == other.dtype

    __hash__ = None  # type: ignore[assignment]


_KIND = {"string": 1, "float32": 2, "int64": 3}  # Feature's oneof field numbers
_KIND_NAME = {1: "string", 2: "float", 3: "int64"}
_TYPE_NAME = {"string": "string", "float32": "float", "int64": "int64"}


def _example_features(data: bytes) -> dict:
    """{name: (kind number, list bytes)} of a serialized Example (the last of repeated
    entries wins, as protobuf's maps); values are decoded only when asked for."""
    out = {}
    for features in parse_message(data).get(1, []):
        if not isinstance(features, bytes):
            raise WireError("Example.features has the wrong wire type")
        for entry in parse_message(features).get(1, []):
            e = parse_message(entry)
            key = e.get(1, [b""])[-1]
            kind, payload = 0, b""
            for value in e.get(2, []):
                for number, vals in parse_message(value).items():
                    if number in (1, 2, 3):
                        kind, payload = number, vals[-1]
            out[key.decode("utf-8")] = (kind, payload)
    return out


def _feature_values(kind: int, payload: bytes):
    """The values of one Feature's list as a NumPy array (or a list of bytes)."""
    if kind == 0:
        return []
    fields = parse_message(payload)
    raw = fields.get(1, [])
    if kind == 1:
        return [bytes(v) for v in raw]
    out: list = []
    for r in raw:
        if isinstance(r, bytes):
            if kind == 2:
                out.extend(np.frombuffer(r, "<f4").tolist())
            else:
                pos = 0
                while pos < len(r):
                    v, pos = read_varint(r, pos, len(r))
                    out.append(v)
        elif kind == 2:
            out.append(struct.unpack("<f", struct.pack("<I", r))[0])
        else:
            out.append(r)
    if kind == 3:
        out = [v - (1 << 64) if v >= 1 << 63 else v for v in out]
    return out


def _as_dtype_array(values, dtype: str) -> np.ndarray:
    if dtype == "string":
        return _strings((len(values),), list(values))
    return np.asarray(values, dtype=_dt.as_dtype(dtype).as_numpy_dtype).reshape(-1)


def _parse_example_native(inputs, attrs, backend):
    serialized = np.asarray(inputs["serialized"], dtype=object)
    single = serialized.ndim == 0
    records = [bytes(s) for s in serialized.reshape(-1).tolist()]
    sparse_keys, sparse_types = attrs["sparse_keys"], attrs["sparse_types"]
    dense_keys, dense_types = attrs["dense_keys"], attrs["dense_types"]
    dense_shapes, sequence = attrs["dense_shapes"], attrs["dense_sequence"]
    defaults = inputs["dense_defaults"]
    parsed = []
    for i, rec in enumerate(records):
        try:
            parsed.append(_example_features(rec))
        except (WireError, UnicodeDecodeError):
            where = "" if single else "Name: <unknown>, "
            raise InvalidArgumentError(f"{where}Could not parse example input, value: "
                                       f"'{rec[:40]!r}'") from None

    def values_of(i: int, key: str, dtype: str):
        f = parsed[i].get(key)
        if f is None:
            return None
        kind, payload = f
        if kind and kind != _KIND[dtype]:
            where = f"Key: {key}." if single else f"Name: <unknown>, Key: {key}, Index: {i}."
            raise InvalidArgumentError(
                f"{where}  Data types don't match. Data type: {_KIND_NAME[kind]} but "
                f"expected type: {_TYPE_NAME[dtype]}")
        try:
            return _feature_values(kind, payload)
        except WireError:
            raise InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example.") \
                from None

    out_idx, out_val, out_shape = [], [], []
    for key, dtype in zip(sparse_keys, sparse_types):
        idx, vals, longest = [], [], 0
        for i in range(len(records)):
            v = values_of(i, key, dtype) or []
            longest = max(longest, len(v))
            for j in range(len(v)):
                idx.append((j,) if single else (i, j))
            vals.extend(v)
        out_idx.append(np.array(idx, np.int64).reshape(len(idx), 1 if single else 2))
        out_val.append(_as_dtype_array(vals, dtype))
        out_shape.append(np.array([longest] if single else [len(records), longest],
                                  np.int64))
    dense = []
    for key, dtype, shape, seq, default in zip(dense_keys, dense_types, dense_shapes,
                                               sequence, defaults):
        item = int(np.prod(shape[1:] if seq else shape, dtype=np.int64))
        rows = []
        for i in range(len(records)):
            v = values_of(i, key, dtype)
            if v is None and (seq or np.size(default)):
                rows.append(None)
                continue
            if v is None:
                where = "" if single else "Name: <unknown>, "
                raise InvalidArgumentError(f"{where}Feature: {key} (data type: "
                                           f"{_TYPE_NAME[dtype]}) is required but could not "
                                           "be found.")
            if (seq and len(v) % max(item, 1)) or (not seq and len(v) != item):
                expect = (f"output shape: [{','.join(str(d) for d in shape)}]" if not seq
                          else f"a multiple of {item}")
                if single:  # TensorFlow's single-record message, with the sizes added
                    kind = "bytes" if dtype == "string" else _TYPE_NAME[dtype]
                    raise InvalidArgumentError(
                        f"Key: {key}.  Can't parse serialized Example: Some {kind}_list "
                        f"slice was not parsed. (values size: {len(v)} but {expect})")
                raise InvalidArgumentError(
                    f"Name: <unknown>, Key: {key}, Index: {i}.  Number of "
                    f"{_TYPE_NAME[dtype]} values != expected.  Values size: {len(v)} but "
                    f"{expect}")
            rows.append(_as_dtype_array(v, dtype))
        if seq:
            length = max([len(r) // max(item, 1) for r in rows if r is not None] or [0])
            full = (length,) + tuple(shape[1:])
            fill = np.asarray(default).reshape(-1)
            fill = fill[0] if fill.size else (b"" if dtype == "string" else 0)
            batch = []
            for r in rows:
                a = _as_dtype_array([fill] * (length * item), dtype)
                if r is not None:
                    a[:len(r)] = r
                batch.append(a.reshape(full))
        else:
            full = tuple(shape)
            batch = [np.asarray(default).reshape(full) if r is None else r.reshape(full)
                     for r in rows]
        np_type = object if dtype == "string" else _dt.as_dtype(dtype).as_numpy_dtype
        stacked = np.stack(batch).astype(np_type) if batch else np.zeros((0,) + full, np_type)
        dense.append(stacked[0] if single else stacked)
    return out_idx + out_val + out_shape + dense


def _parse_example_shape(shapes, dtypes, attrs):
    batch = tuple(shapes["serialized"])
    single = not batch
    rank = 1 if single else 2
    out = [((None, rank), _dt.int64) for _ in attrs["sparse_keys"]]
    out += [((None,), _dt.as_dtype(t)) for t in attrs["sparse_types"]]
    out += [((rank,), _dt.int64) for _ in attrs["sparse_keys"]]
    for t, shape in zip(attrs["dense_types"], attrs["dense_shapes"]):
        out.append((batch + tuple(shape), _dt.as_dtype(t)))
    return out


defop("ParseExample", ["serialized", "dense_defaults"], list_inputs=("dense_defaults",),
      num_outputs=None, shape=_parse_example_shape,
      impl=_run("ParseExample", _parse_example_native), native=_parse_example_native,
      differentiable=False, stateful=True)


def _feature_specs(op: str, features) -> tuple:
    if not isinstance(features, dict) or not features:
        raise ValueError(f"{op}: features must be a non-empty dict of feature specs, got "
                         f"{features!r:.80}")
    sparse, dense = [], []
    for key in sorted(features):
        spec = features[key]
        if not isinstance(key, str):
            raise TypeError(f"{op}: feature keys must be strings, got {key!r}")
        if isinstance(spec, VarLenFeature):
            sparse.append((key, spec))
        elif isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            dense.append((key, spec))
        else:
            raise ValueError(f"{op}: unsupported feature spec for {key!r}: {spec!r:.80} "
                             "(FixedLenFeature, FixedLenSequenceFeature or VarLenFeature)")
        if spec.dtype.name not in _KIND:
            raise ValueError(f"{op}: feature {key!r} has dtype {spec.dtype.name}; Example "
                             "features are float32, int64 or string")
    return sparse, dense


def _dense_default(op: str, key: str, spec) -> Tensor:
    np_type = object if spec.dtype is _STRING else spec.dtype.as_numpy_dtype
    if spec.default_value is None:
        return convert_to_tensor(np.zeros((0,), np_type))
    if isinstance(spec.default_value, Tensor):
        value = spec.default_value.numpy()
    else:
        value = spec.default_value
    if spec.dtype is _STRING:
        a = np.asarray(value, dtype=object)
        a = np.vectorize(lambda s: s.encode("utf-8") if isinstance(s, str) else s,
                         otypes=[object])(a) if a.size else a
    else:
        a = np.asarray(value, dtype=np_type)
    if isinstance(spec, FixedLenSequenceFeature):
        return convert_to_tensor(a.reshape(-1)[:1])
    want = int(np.prod(spec.shape, dtype=np.int64))
    if a.size != want:
        raise InvalidArgumentError(f"{op}: default_value of feature {key!r} has {a.size} "
                                   f"values but its shape {spec.shape} has {want}: Input "
                                   f"to reshape is a tensor with {a.size} values, but the "
                                   f"requested shape has {want}")
    return convert_to_tensor(a.reshape(spec.shape))


def parse_example(serialized, features, example_names=None, name=None) -> dict:
    """Parse a vector of serialized Examples into a dict: FixedLenFeature as dense
    [batch, *shape], FixedLenSequenceFeature as [batch, length, *shape], VarLenFeature as
    a SparseTensor of dense shape [batch, longest].

    Example:
        >>> ex = tf.train.Example(features=tf.train.Features(feature={
        ...     "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[4]))}))
        >>> out = tf.io.parse_example([ex.SerializeToString()] * 2,
        ...                           {"x": tf.io.FixedLenFeature([], tf.int64)})
        >>> out["x"].numpy()
        array([4, 4])
    """
    s = _scalar_string("parse_example", serialized, "serialized")
    if s.ndim != 1:
        raise ValueError(f"parse_example: serialized must be a vector, got {describe(s)} "
                         "(use parse_single_example for one record)")
    return _parse("parse_example", s, features)


def parse_single_example(serialized, features, example_names=None, name=None) -> dict:
    """Parse one serialized Example (a scalar string) into a dict of tensors (dense) and
    SparseTensors (VarLenFeature); usable inside `Dataset.map`.

    Example:
        >>> ex = tf.train.Example(features=tf.train.Features(feature={
        ...     "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1., 2.]))}))
        >>> tf.io.parse_single_example(ex.SerializeToString(),
        ...     {"x": tf.io.FixedLenFeature([2], tf.float32)})["x"].numpy()
        array([1., 2.], dtype=float32)
    """
    s = _scalar_string("parse_single_example", serialized, "serialized")
    if s.ndim != 0:
        raise ValueError(f"parse_single_example: serialized must be a scalar, got "
                         f"{describe(s)}")
    return _parse("parse_single_example", s, features)


def _parse(op: str, s: Tensor, features) -> dict:
    sparse, dense = _feature_specs(op, features)
    for key, spec in dense:
        if isinstance(spec, FixedLenSequenceFeature) and not spec.allow_missing:
            raise ValueError(f"{op}: FixedLenSequenceFeature {key!r} needs "
                             "allow_missing=True (as TensorFlow requires for Examples)")
        if isinstance(spec, FixedLenFeature) and any(d is None for d in spec.shape):
            raise ValueError(f"{op}: FixedLenFeature {key!r} needs a fully defined shape, "
                             f"got {spec.shape}")
    attrs = {
        "sparse_keys": tuple(k for k, _ in sparse),
        "sparse_types": tuple(sp.dtype.name for _, sp in sparse),
        "dense_keys": tuple(k for k, _ in dense),
        "dense_types": tuple(sp.dtype.name for _, sp in dense),
        "dense_shapes": tuple(((None,) + tuple(sp.shape)) if isinstance(
            sp, FixedLenSequenceFeature) else tuple(sp.shape) for _, sp in dense),
        "dense_sequence": tuple(isinstance(sp, FixedLenSequenceFeature) for _, sp in dense),
    }
    defaults = [_dense_default(op, k, sp) for k, sp in dense]
    outs = run_kernel("ParseExample", {"serialized": s, "dense_defaults": defaults}, attrs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    n = len(sparse)
    result = {}
    for j, (key, _) in enumerate(sparse):
        result[key] = SparseTensor(outs[j], outs[n + j], outs[2 * n + j])
    for j, (key, _) in enumerate(dense):
        result[key] = outs[3 * n + j]
    return result


# --------------------------------------------------------------------------- TFRecord


_COMPRESSIONS = {"": "", "NONE": "", "GZIP": "GZIP", "ZLIB": "ZLIB"}


def compression_arg(op: str, compression_type) -> str:
    """"" / "GZIP" / "ZLIB" from TensorFlow's spellings (None, "", a TFRecordOptions)."""
    if isinstance(compression_type, TFRecordOptions):
        compression_type = compression_type.compression_type
    if isinstance(compression_type, Tensor):
        compression_type = compression_type.numpy()
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if compression_type is None:
        return ""
    if not isinstance(compression_type, str) or compression_type.upper() not in _COMPRESSIONS:
        raise InvalidArgumentError(f"{op}: unsupported compression_type "
                                   f"{compression_type!r}; use '', 'ZLIB' or 'GZIP'")
    return _COMPRESSIONS[compression_type.upper()]


class TFRecordOptions:
    """Options of a TFRecord file: `compression_type` ("", "ZLIB" or "GZIP") and
    `compression_level` (0-9; None: zlib's default).

    Example:
        >>> tf.io.TFRecordOptions("GZIP").compression_type
        'GZIP'
    """

    compression_type_map = {None: "", "": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        self.compression_type = compression_arg("TFRecordOptions", compression_type)
        self.compression_level = compression_level
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        if options is None:
            return ""
        return compression_arg("TFRecordOptions", options)


def frame_record(data: bytes) -> bytes:
    """One record in TFRecord framing."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", mask(crc32c(header))) + data
            + struct.pack("<I", mask(crc32c(data))))


def open_compressed(path: str, mode: str, compression: str, level=None):
    """A binary file object reading or writing `path` with the compression applied."""
    if compression == "GZIP":
        return gzip.open(path, mode + "b", compresslevel=9 if level is None else level)
    if compression == "ZLIB":
        return _ZlibFile(path, mode, level)
    return open(path, mode + "b")


class _ZlibFile:
    """A zlib stream (RFC 1950), as TensorFlow's ZLIB compression writes the whole file."""

    def __init__(self, path: str, mode: str, level):
        self._mode = mode
        self._f = open(path, mode + "b")
        if mode == "w":
            self._z = zlib.compressobj(-1 if level is None else level)
        else:
            self._data = _pyio.BytesIO(zlib.decompress(self._f.read()))

    def write(self, b: bytes) -> None:
        self._f.write(self._z.compress(b))

    def read(self, n: int = -1) -> bytes:
        return self._data.read(n)

    def flush(self) -> None:
        if self._mode == "w":
            self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self) -> None:
        if self._f.closed:
            return
        if self._mode == "w":
            self._f.write(self._z.flush())
        self._f.close()

    def __enter__(self) -> "_ZlibFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_records(path: str, compression: str = ""):
    """Yield the records of a TFRecord file, checking both CRCs (DataLossError)."""
    try:
        f = open_compressed(path, "r", compression)
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory") from None
    with f:
        offset = 0
        while True:
            try:
                header = f.read(12)
            except (OSError, EOFError, zlib.error) as e:
                raise DataLossError(f"corrupted {compression} stream in {path}: {e}") from None
            if not header:
                return
            if len(header) < 12:
                raise DataLossError(f"truncated record at {offset} in {path}")
            length, length_crc = struct.unpack("<QI", header)
            if mask(crc32c(header[:8])) != length_crc:
                raise DataLossError(f"corrupted record at {offset} in {path}")
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise DataLossError(f"truncated record at {offset} in {path}")
            data = body[:length]
            if mask(crc32c(data)) != struct.unpack("<I", body[length:])[0]:
                raise DataLossError(f"corrupted record at {offset} in {path}")
            offset += 16 + length
            yield data


def tf_record_iterator(path, options=None):
    """The records of a TFRecord file as bytes (TensorFlow's
    `tf.compat.v1.io.tf_record_iterator`).

    Example:
        >>> with tf.io.TFRecordWriter("/tmp/tapeflow_iter.tfrecord") as w:
        ...     w.write(b"a")
        >>> list(tf.io.tf_record_iterator("/tmp/tapeflow_iter.tfrecord"))
        [b'a']
    """
    return read_records(os.fspath(path), compression_arg("tf_record_iterator", options))


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file; a context manager. `options` is a
    TFRecordOptions or a compression type ("", "ZLIB", "GZIP").

    Example:
        >>> with tf.io.TFRecordWriter("/tmp/tapeflow_w.tfrecord") as w:
        ...     w.write(b"record")
        >>> [r.numpy() for r in tf.data.TFRecordDataset("/tmp/tapeflow_w.tfrecord")]
        [b'record']
    """

    def __init__(self, path, options=None):
        opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)
        self._path = os.fspath(path)
        try:
            self._file = open_compressed(self._path, "w", opts.compression_type,
                                         opts.compression_level)
        except FileNotFoundError:
            raise NotFoundError(f"{self._path}; No such file or directory") from None

    def write(self, record) -> None:
        """Append one record (bytes, str or a scalar string tensor)."""
        if self._file is None:
            raise InvalidArgumentError("TFRecordWriter: write on a closed writer")
        if isinstance(record, Tensor):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"TFRecordWriter.write: record must be bytes, got {show(record)}")
        self._file.write(frame_record(bytes(record)))

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# --------------------------------------------------------------------------- gfile


class GFile:
    """A file object as TensorFlow's `tf.io.gfile.GFile` (local paths): `read(n)`,
    `readline`, `readlines`, iteration, `write`, `seek`, `tell`, `size`, `flush`, `close`;
    text mode gives str, "b" modes bytes. A missing file raises NotFoundError.

    Example:
        >>> with tf.io.gfile.GFile("/tmp/tapeflow_gfile.txt", "w") as f:
        ...     _ = f.write("a\\nb\\n")
        >>> tf.io.gfile.GFile("/tmp/tapeflow_gfile.txt").readlines()
        ['a\\n', 'b\\n']
    """

    def __init__(self, name, mode: str = "r"):
        if mode not in ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+", "a+"):
            raise ValueError(f"GFile: unsupported mode {mode!r}")
        self.name = os.fspath(name.decode() if isinstance(name, bytes) else name)
        self.mode = mode
        try:
            self._f = open(self.name, mode if "b" in mode else mode, **(
                {} if "b" in mode else {"encoding": "utf-8", "newline": ""}))
        except FileNotFoundError:
            raise NotFoundError(f"{self.name}; No such file or directory") from None
        except IsADirectoryError:
            raise NotFoundError(f"{self.name}; Is a directory") from None

    def read(self, n: int = -1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def __iter__(self):
        return iter(self._f)

    def __next__(self):
        return next(self._f)

    def write(self, data):
        if "b" in self.mode and isinstance(data, str):
            data = data.encode("utf-8")
        elif "b" not in self.mode and isinstance(data, bytes):
            data = data.decode("utf-8")
        return self._f.write(data)

    def seek(self, offset=None, whence: int = 0, position=None):
        if position is not None:
            offset = position
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def size(self) -> int:
        return os.path.getsize(self.name)

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    @property
    def closed(self) -> bool:
        return self._f.closed

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _p(path) -> str:
    return os.fspath(path.decode() if isinstance(path, bytes) else path)


def _exists(path) -> bool:
    return os.path.exists(_p(path))


def _glob_paths(pattern) -> list:
    if isinstance(pattern, (list, tuple)):
        return sorted({p for pat in pattern for p in _glob_paths(pat)})
    return sorted(_glob.glob(_p(pattern)))


def _makedirs(path) -> None:
    os.makedirs(_p(path), exist_ok=True)


def _mkdir(path) -> None:
    try:
        os.mkdir(_p(path))
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def _remove(path) -> None:
    try:
        os.remove(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def _rmtree(path) -> None:
    if not os.path.exists(_p(path)):
        raise NotFoundError(f"{_p(path)}; No such file or directory")
    shutil.rmtree(_p(path))


def _listdir(path) -> list:
    try:
        return sorted(os.listdir(_p(path)))
    except FileNotFoundError:
        raise NotFoundError(f"Could not find directory {_p(path)}") from None


def _isdir(path) -> bool:
    return os.path.isdir(_p(path))


def _copy(src, dst, overwrite: bool = False) -> None:
    if not overwrite and os.path.exists(_p(dst)):
        raise AlreadyExistsError(f"file already exists: {_p(dst)}")
    try:
        shutil.copyfile(_p(src), _p(dst))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(src)}; No such file or directory") from None


def _rename(src, dst, overwrite: bool = False) -> None:
    if not overwrite and os.path.exists(_p(dst)):
        raise AlreadyExistsError(f"file already exists: {_p(dst)}")
    try:
        os.replace(_p(src), _p(dst))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(src)}; No such file or directory") from None


def _walk(top, topdown: bool = True, onerror=None):
    for root, dirs, files in os.walk(_p(top), topdown=topdown, onerror=onerror):
        dirs.sort()
        yield root, dirs, sorted(files)


class _Stat:
    def __init__(self, path: str):
        st = os.stat(path)
        self.length = st.st_size
        self.mtime_nsec = st.st_mtime_ns
        self.is_directory = os.path.isdir(path)


def _stat(path) -> _Stat:
    try:
        return _Stat(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


class _GFileModule:
    """`tf.io.gfile`: file-system functions for local paths, as TensorFlow names them."""

    GFile = GFile
    exists = staticmethod(_exists)
    glob = staticmethod(_glob_paths)
    makedirs = staticmethod(_makedirs)
    mkdir = staticmethod(_mkdir)
    remove = staticmethod(_remove)
    rmtree = staticmethod(_rmtree)
    listdir = staticmethod(_listdir)
    isdir = staticmethod(_isdir)
    copy = staticmethod(_copy)
    rename = staticmethod(_rename)
    walk = staticmethod(_walk)
    stat = staticmethod(_stat)

    def __repr__(self) -> str:
        return "<module 'tapeflow.io.gfile'>"


gfile = _GFileModule()
