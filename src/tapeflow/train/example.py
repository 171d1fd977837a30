"""`tf.train.Example` and its parts (Features, Feature, BytesList, FloatList, Int64List) and
`SequenceExample` (FeatureList, FeatureLists): TensorFlow's protocol-buffer messages, written
over the hand-made wire format of `_core/wire.py`.

Why not the `protobuf` package: the messages are five small ones whose wire format is fixed
(tensorflow/core/example/{example,feature}.proto), tapeflow already encodes and parses the
wire format for checkpoints and event files, and a protobuf dependency (plus generated
classes that must match its runtime version) would be a large install for that. The classes
behave as protobuf's Python classes for what programs do with them: keyword constructors,
attribute access, `value` lists that append/extend, `feature` maps that create entries on
`[]`, `WhichOneof`, `HasField`, `CopyFrom`, `MergeFrom`, `Clear`, `SerializeToString`,
`ParseFromString`, `FromString`, equality and the text format as `str()`.

Serialization writes map entries sorted by key: the bytes equal protobuf's
`SerializeToString(deterministic=True)` (plain `SerializeToString` orders map entries by
its hash table, which varies; both parse to the same message).

Example:
    >>> ex = Example(features=Features(feature={
    ...     "x": Feature(float_list=FloatList(value=[1.5]))}))
    >>> Example.FromString(ex.SerializeToString()).features.feature["x"].float_list.value
    [1.5]
"""
from __future__ import annotations

import struct

from .._core.wire import WireError, field, parse_message, varint

__all__ = ["Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
           "SequenceExample", "FeatureList", "FeatureLists"]


class DecodeError(Exception):
    """Bytes that do not parse as the message (protobuf's `message.DecodeError`)."""


def _f32(v) -> float:
    """A Python float rounded to float32, as protobuf stores a `float` field."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int, float")
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def _i64(v) -> int:
    if isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int")
    v = v.__index__()
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError(f"Value out of range: {v}")
    return v


def _bytes(v) -> bytes:
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: bytes")


def _text_bytes(b: bytes) -> str:
    """Bytes as protobuf's text format writes them (C escapes, octal for the rest)."""
    out = []
    for c in b:
        ch = chr(c)
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif 32 <= c < 127:
            out.append(ch)
        else:
            out.append(f"\\{c:03o}")
    return '"' + "".join(out) + '"'


# --------------------------------------------------------------------------- containers


class _Repeated(list):
    """A repeated scalar field: a list that converts (and checks) what goes in and marks
    its message as set."""

    def __init__(self, owner: "_Message", convert):
        super().__init__()
        self._owner, self._convert = owner, convert

    def append(self, v) -> None:
        super().append(self._convert(v))
        self._owner._touch()

    def extend(self, vs) -> None:
        super().extend([self._convert(v) for v in vs])
        self._owner._touch()

    def insert(self, i, v) -> None:
        super().insert(i, self._convert(v))
        self._owner._touch()

    def __setitem__(self, i, v) -> None:
        if isinstance(i, slice):
            super().__setitem__(i, [self._convert(x) for x in v])
        else:
            super().__setitem__(i, self._convert(v))
        self._owner._touch()

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple)) else False

    __hash__ = None  # type: ignore[assignment]


class _RepeatedMessages(list):
    """A repeated message field (FeatureList.feature): `add()` appends a new message."""

    def __init__(self, owner: "_Message", cls):
        super().__init__()
        self._owner, self._cls = owner, cls

    def add(self, **kwargs) -> "_Message":
        m = self._cls(**kwargs)
        object.__setattr__(m, "_parent", (self._owner, None))
        super().append(m)
        self._owner._touch()
        return m

    def append(self, m) -> None:
        if not isinstance(m, self._cls):
            raise TypeError(f"expected {self._cls.__name__}, got {type(m).__name__}")
        self.add().CopyFrom(m)

    def extend(self, ms) -> None:
        for m in ms:
            self.append(m)


class _MessageMap(dict):
    """A map<string, Message> field: `m[key]` creates an empty entry as protobuf's maps do."""

    def __init__(self, owner: "_Message", cls):
        super().__init__()
        self._owner, self._cls = owner, cls

    def __missing__(self, key):
        key = _bytes(key).decode("utf-8") if isinstance(key, bytes) else key
        if not isinstance(key, str):
            raise TypeError(f"map key {key!r} has type {type(key).__name__}, expected str")
        m = self._cls()
        object.__setattr__(m, "_parent", (self._owner, None))
        super().__setitem__(key, m)
        self._owner._touch()
        return m

    def __setitem__(self, key, value):
        raise ValueError("Direct assignment of submessage not allowed (use "
                         f"map[{key!r}].CopyFrom(value))")

    def get_or_create(self, key):
        return self[key]

    def __delitem__(self, key):
        super().__delitem__(key)
        self._owner._touch()


# --------------------------------------------------------------------------- messages

# field kinds: "bytes", "float", "int64" (repeated scalars), "message", "messages"
# (repeated message), "map" (map<string, message>)


class _Message:
    """Shared machinery: fields declared in `_FIELDS` as (name, number, kind, class);
    `_ONEOF` names a oneof group (Feature.kind) over some of them."""

    _FIELDS: tuple = ()
    _ONEOF: tuple = ()
    _ONEOF_NAME = ""

    def __init__(self, **kwargs):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_present", set())
        object.__setattr__(self, "_parent", None)
        names = {f[0] for f in self._FIELDS}
        for k, v in kwargs.items():
            if k not in names:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{k}" field.')
            if v is None:
                continue
            self._assign(k, v)

    # -- access

    def _spec(self, name: str):
        for f in self._FIELDS:
            if f[0] == name:
                return f
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        _, _, kind, cls = self._spec(name)
        values = self._values
        if name not in values:
            if kind == "message":
                v = cls()
            elif kind == "messages":
                v = _RepeatedMessages(self, cls)
            elif kind == "map":
                v = _MessageMap(self, cls)
            else:
                v = _Repeated(self, {"bytes": _bytes, "float": _f32, "int64": _i64}[kind])
            if kind == "message":
                object.__setattr__(v, "_parent", (self, name))
            values[name] = v
        return values[name]

    def __setattr__(self, name: str, value):
        kind = self._spec(name)[2]
        if kind == "message":
            raise AttributeError(f'Assignment not allowed to field "{name}" in protocol '
                                 "message object.")
        raise AttributeError(f'Assignment not allowed to repeated field "{name}" in '
                             "protocol message object.")

    def _assign(self, name: str, v) -> None:
        kind = self._spec(name)[2]
        target = getattr(self, name)
        if kind == "message":
            if isinstance(v, dict):
                v = type(target)(**v)
            if not isinstance(v, type(target)):
                raise TypeError(f"Message must be initialized with a dict or "
                                f"{type(target).__name__}, got {type(v).__name__}")
            target.CopyFrom(v)
            self._touch(name)
        elif kind == "map":
            for key, m in dict(v).items():
                target[key].CopyFrom(m if not isinstance(m, dict) else target._cls(**m))
        else:
            target.extend(v)

    def _touch(self, name: str | None = None) -> None:
        """Mark field `name` (or this message, seen from its parent) as set; setting one
        member of a oneof clears the others."""
        if name is not None:
            if name in self._ONEOF:
                for other in self._ONEOF:
                    if other != name and other in self._present:
                        self._present.discard(other)
                        self._values.pop(other, None)
            self._present.add(name)
        parent = self._parent
        if parent is not None:
            parent[0]._touch(parent[1])

    def HasField(self, name: str) -> bool:
        kind = self._spec(name)[2] if name != self._ONEOF_NAME else "message"
        if name == self._ONEOF_NAME:
            return self.WhichOneof(name) is not None
        if kind != "message":
            raise ValueError(f'Protocol message has no singular "{name}" field.')
        return name in self._present

    def WhichOneof(self, group: str):
        if group != self._ONEOF_NAME or not group:
            raise ValueError(f'Protocol message has no oneof "{group}" field.')
        for name in self._ONEOF:
            if name in self._present:
                return name
        return None

    def ClearField(self, name: str) -> None:
        if name == self._ONEOF_NAME and name:
            for n in self._ONEOF:
                self.ClearField(n)
            return
        self._spec(name)
        self._values.pop(name, None)
        self._present.discard(name)

    def Clear(self) -> None:
        self._values.clear()
        self._present.clear()

    def ListFields(self) -> list:
        out = []
        for f in self._FIELDS:
            name, kind = f[0], f[2]
            if kind == "message":
                if name in self._present:
                    out.append((name, self._values[name]))
            elif self._values.get(name):
                out.append((name, self._values[name]))
        return out

    def CopyFrom(self, other: "_Message") -> None:
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: "
                            f"expected {type(self).__name__} got {type(other).__name__}.")
        if other is self:
            return
        self.Clear()
        self.MergeFrom(other)

    def MergeFrom(self, other: "_Message") -> None:
        if type(other) is not type(self):
            raise TypeError(f"Parameter to MergeFrom() must be instance of same class: "
                            f"expected {type(self).__name__} got {type(other).__name__}.")
        self.MergeFromString(other.SerializeToString())

    # -- wire format

    def SerializeToString(self, deterministic: bool = True) -> bytes:
        """The message's bytes (map entries sorted by key: deterministic)."""
        out = []
        for name, number, kind, _ in self._FIELDS:
            v = self._values.get(name)
            if kind == "message":
                if name in self._present:
                    out.append(field(number, v.SerializeToString()))
            elif not v:
                continue
            elif kind == "bytes":
                out.extend(field(number, b) for b in v)
            elif kind == "float":
                out.append(field(number, struct.pack(f"<{len(v)}f", *v)))
            elif kind == "int64":
                out.append(field(number, b"".join(varint(i) for i in v)))
            elif kind == "messages":
                out.extend(field(number, m.SerializeToString()) for m in v)
            else:  # map
                out.extend(field(number, field(1, k.encode("utf-8"))
                                 + field(2, v[k].SerializeToString())) for k in sorted(v))
        return b"".join(out)

    def ByteSize(self) -> int:
        return len(self.SerializeToString())

    def MergeFromString(self, data: bytes) -> int:
        try:
            fields = parse_message(bytes(data))
        except WireError as e:
            raise DecodeError(f"Error parsing message with type "
                              f"'tensorflow.{type(self).__name__}': {e}") from None
        for name, number, kind, cls in self._FIELDS:
            raw = fields.get(number)
            if raw is None:
                continue
            target = getattr(self, name)
            if kind == "message":
                for r in raw:
                    target.MergeFromString(_need_bytes(r, self, name))
                self._touch(name)
            elif kind == "messages":
                for r in raw:
                    target.add().MergeFromString(_need_bytes(r, self, name))
            elif kind == "map":
                for r in raw:
                    entry = parse_message(_need_bytes(r, self, name))
                    key = entry.get(1, [b""])[-1]
                    if not isinstance(key, bytes):
                        raise DecodeError(f"{type(self).__name__}.{name}: bad map key")
                    m = target[key.decode("utf-8")]
                    m.Clear()
                    for value in entry.get(2, []):
                        m.MergeFromString(_need_bytes(value, self, name))
            else:
                target.extend(_scalars(kind, raw, self, name))
        return len(data)

    def ParseFromString(self, data: bytes) -> int:
        self.Clear()
        return self.MergeFromString(data)

    @classmethod
    def FromString(cls, data: bytes):
        m = cls()
        m.MergeFromString(data)
        return m

    # -- comparison and text

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.SerializeToString() == other.SerializeToString()

    __hash__ = None  # type: ignore[assignment]

    def _text(self, indent: int) -> list[str]:
        pad = "  " * indent
        lines = []
        for name, _, kind, _ in self._FIELDS:
            v = self._values.get(name)
            if kind == "message":
                if name in self._present:
                    lines += [f"{pad}{name} {{", *v._text(indent + 1), f"{pad}}}"]
            elif not v:
                continue
            elif kind == "map":
                for k in sorted(v):
                    lines += [f"{pad}{name} {{", f"{pad}  key: {_text_bytes(k.encode())}",
                              f"{pad}  value {{", *v[k]._text(indent + 2), f"{pad}  }}",
                              f"{pad}}}"]
            elif kind == "messages":
                for m in v:
                    lines += [f"{pad}{name} {{", *m._text(indent + 1), f"{pad}}}"]
            else:
                for x in v:
                    s = (_text_bytes(x) if kind == "bytes" else
                         _float_text(x) if kind == "float" else str(x))
                    lines.append(f"{pad}{name}: {s}")
        return lines

    def __str__(self) -> str:
        lines = self._text(0)
        return "\n".join(lines) + "\n" if lines else ""

    def __repr__(self) -> str:
        return str(self)


def _float_text(x: float) -> str:
    # protobuf prints a float field with the shortest digits that read back as float32
    if x != x or x in (float("inf"), float("-inf")):
        return repr(x)
    for digits in range(1, 10):
        s = f"{x:.{digits}g}"
        if _f32(float(s)) == x:
            return s
    return repr(x)


def _need_bytes(r, msg: _Message, name: str) -> bytes:
    if not isinstance(r, bytes):
        raise DecodeError(f"Error parsing message with type 'tensorflow."
                          f"{type(msg).__name__}': field {name!r} has the wrong wire type")
    return r


def _scalars(kind: str, raw: list, msg: _Message, name: str) -> list:
    """The values of a repeated scalar field, packed (one length-delimited run) or not."""
    out: list = []
    for r in raw:
        if kind == "bytes":
            out.append(_need_bytes(r, msg, name))
        elif isinstance(r, bytes):  # packed
            if kind == "float":
                if len(r) % 4:
                    raise DecodeError(f"{type(msg).__name__}.{name}: packed floats of "
                                      f"{len(r)} bytes")
                out.extend(struct.unpack(f"<{len(r) // 4}f", r))
            else:
                pos = 0
                while pos < len(r):
                    value, pos = _read_varint(r, pos)
                    out.append(value - (1 << 64) if value >= 1 << 63 else value)
        elif kind == "float":
            out.append(struct.unpack("<f", struct.pack("<I", r))[0])
        else:
            out.append(r - (1 << 64) if r >= 1 << 63 else r)
    return out


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("Truncated varint in a packed field")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & ((1 << 64) - 1), pos
        shift += 7


class BytesList(_Message):
    """A list of byte strings (`value`).

    Example:
        >>> BytesList(value=[b"a", b"bc"]).value
        [b'a', b'bc']
    """
    _FIELDS = (("value", 1, "bytes", None),)


class FloatList(_Message):
    """A list of float32 values (`value`, packed on the wire).

    Example:
        >>> FloatList(value=[0.5, 2]).value
        [0.5, 2.0]
    """
    _FIELDS = (("value", 1, "float", None),)


class Int64List(_Message):
    """A list of int64 values (`value`, packed varints on the wire).

    Example:
        >>> Int64List(value=[1, -2]).SerializeToString()
        b'\\n\\x0b\\x01\\xfe\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x01'
    """
    _FIELDS = (("value", 1, "int64", None),)


class Feature(_Message):
    """One feature: exactly one of `bytes_list`, `float_list`, `int64_list` (the oneof
    "kind").

    Example:
        >>> Feature(int64_list=Int64List(value=[3])).WhichOneof("kind")
        'int64_list'
    """
    _FIELDS = (("bytes_list", 1, "message", BytesList), ("float_list", 2, "message", FloatList),
               ("int64_list", 3, "message", Int64List))
    _ONEOF = ("bytes_list", "float_list", "int64_list")
    _ONEOF_NAME = "kind"


class Features(_Message):
    """Named features: `feature` maps names to Feature.

    Example:
        >>> f = Features()
        >>> f.feature["n"].int64_list.value.append(7)
        >>> f.feature["n"].int64_list.value
        [7]
    """
    _FIELDS = (("feature", 1, "map", Feature),)


class Example(_Message):
    """One record: `features`.

    Example:
        >>> Example(features=Features(feature={
        ...     "b": Feature(bytes_list=BytesList(value=[b"x"]))})).SerializeToString()
        b'\\n\\x0c\\n\\n\\n\\x01b\\x12\\x05\\n\\x03\\n\\x01x'
    """
    _FIELDS = (("features", 1, "message", Features),)


class FeatureList(_Message):
    """A sequence of Feature (`feature`, repeated).

    Example:
        >>> len(FeatureList(feature=[Feature(), Feature()]).feature)
        2
    """
    _FIELDS = (("feature", 1, "messages", Feature),)


class FeatureLists(_Message):
    """Named feature sequences: `feature_list` maps names to FeatureList.

    Example:
        >>> fl = FeatureLists()
        >>> fl.feature_list["t"].feature.add().int64_list.value.append(1)
        >>> len(fl.feature_list["t"].feature)
        1
    """
    _FIELDS = (("feature_list", 1, "map", FeatureList),)


class SequenceExample(_Message):
    """A record with `context` (Features) and `feature_lists` (FeatureLists).

    Example:
        >>> SequenceExample().HasField("context")
        False
    """
    _FIELDS = (("context", 1, "message", Features),
               ("feature_lists", 2, "message", FeatureLists))
