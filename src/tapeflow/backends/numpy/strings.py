"""NumPy kernels of the string ops: string tensors are object arrays of `bytes`.

Each kernel maps a Python function over the elements (NumPy has no vectorized operations
on bytes objects; `bytes.lower` and friends are C loops per element, and measured faster
than NumPy 2's StringDType routines once the conversion to and from `str` is counted).
RE2 patterns are translated to Python's `re` (see `regex`); UTF-8 text is decoded with
"surrogateescape", so bytes that are not UTF-8 pass through unchanged.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from ..._core.errors import InvalidArgumentError
from ..._core.hashing import farmhash_fingerprint64_many, siphash64
from ._kernel import ensure_array, kernel

_SURROGATE = "surrogateescape"


def _obj(x) -> np.ndarray:
    """A string operand as an object array: a compiled graph may hand a 0-d value over as
    the bare `bytes` element."""
    if type(x) is np.ndarray:
        return x
    out = np.empty((), dtype=object)
    out[()] = x
    return out


def _flat(x: np.ndarray) -> list:
    return x.reshape(-1).tolist()


def _strings(values: list, shape) -> np.ndarray:
    """An object array of `shape` holding `values` (bytes) in C order."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


def _map(fn, x) -> np.ndarray:
    x = _obj(x)
    return _strings([fn(v) for v in _flat(x)], x.shape)


def _decode(b: bytes) -> str:
    return b.decode("utf-8", _SURROGATE)


def _encode(s: str) -> bytes:
    return s.encode("utf-8", _SURROGATE)


# --------------------------------------------------------------------------- case, strip


@kernel("StringLower")
def string_lower(inputs, attrs, backend):
    if attrs["encoding"]:  # Unicode case mapping of UTF-8 text
        return _map(lambda b: _encode(_decode(b).lower()), inputs["x"])
    return _map(bytes.lower, inputs["x"])  # ASCII letters only, as TF without an encoding


@kernel("StringUpper")
def string_upper(inputs, attrs, backend):
    if attrs["encoding"]:
        return _map(lambda b: _encode(_decode(b).upper()), inputs["x"])
    return _map(bytes.upper, inputs["x"])


@kernel("StringStrip")
def string_strip(inputs, attrs, backend):
    return _map(bytes.strip, inputs["x"])  # ASCII whitespace, as C's isspace


def _utf8_length(b: bytes) -> int:
    try:
        return len(b.decode("utf-8"))
    except UnicodeDecodeError:  # every byte that is not a continuation byte starts a char
        return sum(1 for c in b if c & 0xC0 != 0x80)


_LENGTHS = {"BYTE": np.frompyfunc(len, 1, 1), "UTF8_CHAR": np.frompyfunc(_utf8_length, 1, 1)}


@kernel("StringLength")
def string_length(inputs, attrs, backend):
    # a ufunc over the objects: ~4x faster than a Python loop filling an int array
    return ensure_array(_LENGTHS[attrs["unit"]](_obj(inputs["x"]))).astype(np.int32)


# --------------------------------------------------------------------------- join, split


@kernel("StringJoin")
def string_join(inputs, attrs, backend):
    arrays = [_obj(a) for a in inputs["inputs"]]
    shape = next((a.shape for a in arrays if a.ndim), ())
    for a in arrays:
        if a.ndim and a.shape != shape:
            raise InvalidArgumentError(
                f"join: input shapes do not match: {list(shape)} vs. {list(a.shape)} "
                f"(inputs must have one shape or be scalars)")
    n = int(np.prod(shape))
    columns = [_flat(a) if a.ndim else [a[()]] * n for a in arrays]
    sep = attrs["separator"]
    return _strings([sep.join(parts) for parts in zip(*columns)], shape)


@kernel("ReduceJoin")
def reduce_join(inputs, attrs, backend):
    x, axes, sep = _obj(inputs["x"]), attrs["axes"], attrs["separator"]
    kept = [a for a in range(x.ndim) if a not in axes]
    # TF's order: the first axis named varies fastest
    moved = np.transpose(x, kept + list(reversed(axes)))
    lead = tuple(x.shape[a] for a in kept)
    rows = moved.reshape(int(np.prod(lead)), -1) if moved.size else \
        np.empty((int(np.prod(lead)), 0), object)
    out = _strings([sep.join(r) for r in rows.tolist()], lead)
    if attrs["keepdims"]:
        out = out.reshape(tuple(1 if a in axes else d for a, d in enumerate(x.shape)))
    return out


def _rows(pieces: list, dtype=object) -> list:
    """[flat values, int64 row splits] of per-string lists of pieces: the two tensors of
    a RaggedTensor (ops/strings.py builds it; a scalar's result is the values alone)."""
    splits = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum([len(p) for p in pieces], out=splits[1:])
    flat = [v for p in pieces for v in p]
    if dtype is object:
        return [_strings(flat, (len(flat),)), splits]
    return [np.array(flat, dtype=dtype), splits]


def _split_one(s: bytes, sep, maxsplit: int) -> list:
    if sep is None:
        return s.split(None, maxsplit)
    if sep == b"":  # TF: an empty separator leaves the string whole
        return [s]
    return s.split(sep, maxsplit)


@kernel("StringSplit")
def string_split(inputs, attrs, backend):
    sep, maxsplit = attrs["sep"], attrs["maxsplit"]
    return _rows([_split_one(s, sep, maxsplit) for s in _flat(_obj(inputs["x"]))])


@kernel("BytesSplit")
def bytes_split(inputs, attrs, backend):
    return _rows([[s[i:i + 1] for i in range(len(s))] for s in _flat(_obj(inputs["x"]))])


# --------------------------------------------------------------------------- regex

_ASCII_CLASSES = {  # RE2's \d \w \s are ASCII-only; Python's (on str) are Unicode
    "d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r ",
}
_POSIX = {
    "alpha": "A-Za-z", "digit": "0-9", "alnum": "0-9A-Za-z", "upper": "A-Z", "lower": "a-z",
    "space": "\\t\\n\\v\\f\\r ", "blank": "\\t ", "punct": "!-/:-@\\[-`{-~",
    "xdigit": "0-9A-Fa-f", "word": "0-9A-Za-z_", "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~", "graph": "!-~", "ascii": "\\x00-\\x7f",
}
# Unicode letters and digits (\p{L}, \p{N}) and their complements, in Python's terms
_UNICODE = {"L": ("[^\\W\\d_]", "[\\W\\d_]"), "N": ("\\d", "\\D"), "Nd": ("\\d", "\\D")}


def _translate(pattern: str) -> str:
    """An RE2 pattern as a Python `re` pattern: POSIX classes, ASCII \\d \\w \\s, \\z and
    the Unicode letter/number classes; the rest of the common syntax is shared."""
    out, i, n, in_class, class_start = [], 0, len(pattern), False, 0
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            if d in "dws":
                body = _ASCII_CLASSES[d]
                out.append(body if in_class else f"[{body}]")
            elif d in "DWS" and not in_class:
                out.append(f"[^{_ASCII_CLASSES[d.lower()]}]")
            elif d == "z":
                out.append("\\Z")
            elif d in "pP":
                if i + 2 < n and pattern[i + 2] == "{":
                    end = pattern.find("}", i + 3)
                    name, i = pattern[i + 3:end], end - 1
                else:
                    name, i = pattern[i + 2:i + 3], i + 1
                if name not in _UNICODE or in_class:
                    raise re.error(f"unsupported Unicode class \\{d}{{{name}}}")
                out.append(_UNICODE[name][d == "P"])
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2:end] if end > 0 else ""
                negate = name.startswith("^")
                if name.lstrip("^") not in _POSIX or negate:
                    raise re.error(f"unsupported character class [:{name}:]")
                out.append(_POSIX[name])
                i = end + 2
                continue
            if c == "]" and i > class_start:
                in_class = False
            elif c == "[":  # a literal '[' inside a class (Python warns on the nested set)
                out.append("\\[")
                i += 1
                continue
        elif c == "[":
            in_class = True
            class_start = i + 1
            if pattern.startswith("^", class_start):
                class_start += 1
                out.append("[^")
                i = class_start
                continue
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def regex(pattern: bytes, op: str):
    """The compiled Python regex of RE2 pattern `pattern` (UTF-8), cached."""
    try:
        return re.compile(_translate(_decode(pattern)))
    except (re.error, ValueError) as e:
        raise InvalidArgumentError(f"{op}: invalid pattern {_decode(pattern)!r}: {e}") \
            from None


@functools.lru_cache(maxsize=256)
def _rewrite(rewrite: bytes, groups: int):
    """RE2's rewrite string (\\0-\\9 name groups, \\\\ a backslash) as a replacement
    function for `re.sub`."""
    parts, text, i = [], _decode(rewrite), 0
    literal = []
    while i < len(text):
        c = text[i]
        if c == "\\":
            d = text[i + 1] if i + 1 < len(text) else ""
            if d.isdigit():
                if int(d) > groups:
                    raise InvalidArgumentError(
                        f"regex_replace: rewrite {text!r} names group {d}; the pattern "
                        f"has {groups}")
                parts.append("".join(literal))
                literal = []
                parts.append(int(d))
                i += 2
                continue
            if d == "\\":
                literal.append("\\")
                i += 2
                continue
            raise InvalidArgumentError(f"regex_replace: invalid rewrite pattern {text!r} "
                                       f"(a backslash must precede a digit or a backslash)")
        literal.append(c)
        i += 1
    parts.append("".join(literal))

    def replace(match) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)
    return replace


@kernel("RegexReplace")
def regex_replace(inputs, attrs, backend):
    compiled = regex(attrs["pattern"], "regex_replace")
    replace = _rewrite(attrs["rewrite"], compiled.groups)
    count = 0 if attrs["replace_global"] else 1
    return _map(lambda b: _encode(compiled.sub(replace, _decode(b), count)), inputs["x"])


@kernel("RegexFullMatch")
def regex_full_match(inputs, attrs, backend):
    x = _obj(inputs["x"])
    match = regex(attrs["pattern"], "regex_full_match").fullmatch
    return np.fromiter((match(_decode(v)) is not None for v in _flat(x)), np.bool_,
                       x.size).reshape(x.shape)


# --------------------------------------------------------------------------- substr


@kernel("Substr")
def substr(inputs, attrs, backend):
    x, pos, length = _obj(inputs["x"]), np.asarray(inputs["pos"]), np.asarray(inputs["len"])
    if pos.shape != length.shape:
        raise InvalidArgumentError(f"substr: pos and len must have the same shape, got "
                                   f"{list(pos.shape)} vs. {list(length.shape)}")
    chars = attrs["unit"] == "UTF8_CHAR"
    if not chars and pos.ndim == 0 and int(pos) >= 0 and int(length) >= 0:
        # the common call (one non-negative pos and len): slices, a bounds check on sizes
        p, n = int(pos), int(length)
        flat = _flat(x)
        if flat and min(map(len, flat)) < p:
            bad = next(i for i, s in enumerate(flat) if len(s) < p)
            raise InvalidArgumentError(f"substr: pos {p} out of range for string "
                                       f"{flat[bad]!r} at index {bad}")
        return _strings([s[p:p + n] for s in flat], x.shape)
    try:
        x, pos, length = np.broadcast_arrays(x, pos, length)
    except ValueError:
        raise InvalidArgumentError(f"substr: pos of shape {list(pos.shape)} does not "
                                   f"broadcast with input of shape {list(x.shape)}") from None
    out = []
    for i, (s, p, n) in enumerate(zip(_flat(x), pos.reshape(-1).tolist(),
                                      length.reshape(-1).tolist())):
        text = _decode(s) if chars else s
        size = len(text)
        start = p + size if p < 0 else p
        if not 0 <= start <= size:
            raise InvalidArgumentError(f"substr: pos {p} out of range for string {s!r} at "
                                       f"index {i}")
        piece = text[start:] if n < 0 else text[start:start + n]
        out.append(_encode(piece) if chars else piece)
    return _strings(out, x.shape)


# --------------------------------------------------------------------------- numbers


def _parse(s: bytes, integer: bool):
    text = s.decode("ascii", "replace")
    if "_" in text:  # Python's literals allow digit separators; TF's parsers do not
        raise ValueError(text)
    return int(text, 10) if integer else float(text)


def _parse_all(items: list, integer: bool):
    """All of `items` parsed by NumPy's bytes-to-number conversion (Python's syntax, in
    C), as int64 or float64; None when any fails or holds "_" (the loop then finds it)."""
    if not items:
        return None
    try:
        text = np.array(items, dtype=np.bytes_)
        if (np.char.find(text, b"_") >= 0).any() or (np.char.str_len(text) == 0).any():
            return None
        return text.astype(np.int64 if integer else np.float64)
    except (ValueError, OverflowError, TypeError):
        return None


@kernel("StringToNumber")
def string_to_number(inputs, attrs, backend):
    x, out_type = _obj(inputs["x"]), attrs["out_type"]
    integer = out_type.is_integer
    fast = _parse_all(_flat(x), integer)
    if fast is not None:
        info = np.iinfo(out_type._np) if integer else None
        if info is None or not fast.size or (info.min <= fast.min() and fast.max() <= info.max):
            return fast.astype(out_type._np).reshape(x.shape)
    values = []
    for s in _flat(x):
        try:
            v = _parse(s, integer)
        except ValueError:
            raise InvalidArgumentError(f"to_number: StringToNumberOp could not correctly "
                                       f"convert string: {_decode(s)}") from None
        values.append(v)
    if integer:
        info = np.iinfo(out_type._np)
        for v in values:
            if not info.min <= v <= info.max:
                raise InvalidArgumentError(f"to_number: {v} is out of range for "
                                           f"{out_type.name}")
    return np.array(values, dtype=out_type._np).reshape(x.shape)


def _format_number(template: str, dtype: np.dtype):
    kind = dtype.kind
    if kind == "b":
        return lambda v: b"true" if v else b"false"
    if kind == "c":
        return lambda v: ("(" + template % v.real + "," + template % v.imag + ")").encode()
    if kind in "iu":
        return lambda v: (template % int(v)).encode()
    return lambda v: (template % float(v)).encode()


@kernel("AsString")
def as_string(inputs, attrs, backend):
    x = inputs["x"]
    if isinstance(x, bytes) or x.dtype == object:
        return _obj(x)
    x = np.asarray(x)
    spec = "%" + attrs["fill"]
    if attrs["width"] > -1:
        spec += str(attrs["width"])
    if attrs["precision"] > -1:
        spec += f".{attrs['precision']}"
    kind = x.dtype.kind
    if kind in "iu":
        spec += "d"
    elif kind != "b":
        spec += "g" if attrs["shortest"] else "e" if attrs["scientific"] else "f"
    fmt = _format_number(spec, x.dtype)
    return _strings([fmt(v) for v in x.reshape(-1)], x.shape)


# --------------------------------------------------------------------------- hashing


@kernel("StringToHashBucketFast")
def to_hash_bucket_fast(inputs, attrs, backend):
    x, n = _obj(inputs["x"]), attrs["num_buckets"]
    hashes = farmhash_fingerprint64_many(_flat(x))
    return (hashes % np.uint64(n)).astype(np.int64).reshape(x.shape)


@kernel("StringToHashBucketStrong")
def to_hash_bucket_strong(inputs, attrs, backend):
    x, n, key = _obj(inputs["x"]), attrs["num_buckets"], attrs["key"]
    return np.fromiter((siphash64(key, v) % n for v in _flat(x)), np.int64,
                       x.size).reshape(x.shape)


# --------------------------------------------------------------------------- unicode

_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def decode_points(s: bytes, encoding: str, errors: str, replacement: int,
                  control: bool) -> list:
    """The code points of `s` in `encoding`; invalid sequences (each maximal invalid part
    once) follow `errors`: "replace" with `replacement`, "ignore", "strict" raises."""
    codec, points, at = _CODECS[encoding], [], 0
    while True:
        try:
            points.extend(map(ord, s[at:].decode(codec)))
            break
        except UnicodeDecodeError as e:
            points.extend(map(ord, s[at:at + e.start].decode(codec)))
            if errors == "strict":
                raise InvalidArgumentError(
                    f"unicode_decode: invalid {encoding} in input string {s!r}") from None
            if errors == "replace":
                points.append(replacement)
            at += e.end
    if control:
        points = [replacement if p < 0x20 else p for p in points]
    return points


@kernel("UnicodeDecode")
def unicode_decode(inputs, attrs, backend):
    return _rows([decode_points(s, attrs["input_encoding"], attrs["errors"],
                                attrs["replacement_char"],
                                attrs["replace_control_characters"])
                  for s in _flat(_obj(inputs["x"]))], np.int32)


@kernel("UnicodeSplit")
def unicode_split(inputs, attrs, backend):
    codec = _CODECS[attrs["input_encoding"]]
    return _rows([[chr(p).encode(codec, _SURROGATE)
                   for p in decode_points(s, attrs["input_encoding"], attrs["errors"],
                                          attrs["replacement_char"], False)]
                  for s in _flat(_obj(inputs["x"]))])


def _encode_points(points: list, codec: str, errors: str, replacement: int) -> bytes:
    chars = []
    for p in points:
        if 0 <= p <= 0x10FFFF and not 0xD800 <= p <= 0xDFFF:
            chars.append(chr(p))
        elif errors == "strict":
            raise InvalidArgumentError(f"unicode_encode: invalid code point {p}")
        elif errors == "replace":
            chars.append(chr(replacement))
    return "".join(chars).encode(codec)


@kernel("UnicodeEncode")
def unicode_encode(inputs, attrs, backend):
    x = np.asarray(inputs["x"])
    codec = _CODECS[attrs["output_encoding"]]
    rows = x.reshape(-1, x.shape[-1]).tolist()
    return _strings([_encode_points(r, codec, attrs["errors"], attrs["replacement_char"])
                     for r in rows], x.shape[:-1])


# --------------------------------------------------------------------------- summaries
# Arrays as tf.print shows them (`[1 2 3]`, `[0 1 2 ... 7 8 9]`, strings quoted): the text
# of tf.print (ops/io.py) and of the StringFormat kernel below.


def as_array(value) -> np.ndarray:
    """A native value as an array; a string scalar (a bare `bytes`, as `.numpy()` and
    compiled graphs give it) as a 0-d object array, which np.asarray would make bytes_."""
    if isinstance(value, bytes):
        return _obj(value)
    return np.asarray(value)


# how TensorFlow's print escapes a string element (absl's Utf8SafeCHexEscape): bytes from
# 0x80 up pass through (UTF-8), other unprintable ones as \xNN
_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def _string_text(v: bytes) -> str:
    """A string element as tf.print shows it: quoted, escaped; bytes that are not UTF-8
    stay as they are (decoded with surrogateescape, so tf.strings.format keeps them)."""
    text = v.decode("utf-8", "surrogateescape")
    out = []
    for ch in text:
        code = ord(ch)
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _scalar_text(v, kind: str) -> str:
    if kind == "O":
        return _string_text(v)
    if kind == "b":
        return "1" if v else "0"
    if kind == "f":
        f = float(v)
        if not np.isfinite(f):
            return "nan" if np.isnan(f) else ("inf" if f > 0 else "-inf")
        short, full = (6, 9) if v.dtype.itemsize <= 4 else (15, 17)
        text = f"{f:.{short}g}"
        return text if v.dtype.type(text) == v else f"{f:.{full}g}"
    if kind == "c":
        return f"({_scalar_text(v.real, 'f')},{_scalar_text(v.imag, 'f')})"
    return str(v)


def format_array(a: np.ndarray, summarize: int = 3) -> str:
    """A NumPy array as tf.print shows it. Example: `format_array(np.arange(10))` ->
    '[0 1 2 ... 7 8 9]'."""
    kind = "f" if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a.dtype.kind
    if a.ndim == 0:
        return _scalar_text(a[()], kind)

    def rows(x, depth: int) -> str:
        n = x.shape[0]
        cut = summarize is not None and 0 <= summarize and n > 2 * summarize
        idx = list(range(summarize)) + [None] + list(range(n - summarize, n)) if cut \
            else list(range(n))
        if x.ndim == 1:
            return "[" + " ".join("..." if i is None else _scalar_text(x[i], kind)
                                  for i in idx) + "]"
        sep = "\n" + " " * (depth + 1)
        return "[" + sep.join("..." if i is None else rows(x[i], depth + 1)
                              for i in idx) + "]"
    return rows(a, 0)


@kernel("StringFormat")
def string_format(inputs, attrs, backend):
    pieces = attrs["pieces"]
    out = [pieces[0]]
    for array, piece in zip(inputs["inputs"], pieces[1:]):
        out.append(format_array(as_array(array), attrs["summarize"]))
        out.append(piece)
    return _obj("".join(out).encode("utf-8", _SURROGATE))
