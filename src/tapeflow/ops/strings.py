"""String ops (`tf.strings`): case, length, split, join, regular expressions, substrings,
number parsing and formatting, hashing and Unicode, over `string` tensors (bytes).

Every op here is non-differentiable: its outputs are strings, integers or booleans. Ops
that cut strings into pieces (split, bytes_split, unicode_decode, unicode_split) return a
dense 1-D tensor for a scalar and a RaggedTensor for higher ranks, as TensorFlow; their
kernels give the flat pieces and row splits.
"""
from __future__ import annotations

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.shape import is_symbolic
from .._core.tensor import Tensor
from ._args import (ArgumentTypeError, choice_arg, dtype_arg, int_arg, normalize_axes, show,
                    to_tensor)
from ._define import defop, nondifferentiable
from .array import reshape
from .creation import range as _range
from .ragged import RaggedTensor

__all__ = [
    "lower", "upper", "length", "split", "join", "reduce_join", "regex_replace",
    "regex_full_match", "substr", "strip", "to_number", "as_string", "format",
    "to_hash_bucket_fast", "to_hash_bucket_strong", "unicode_decode", "unicode_split",
    "unicode_encode", "bytes_split",
]

_STRING = _dt.string
_UNITS = ("BYTE", "UTF8_CHAR")
_ENCODINGS = ("UTF-8", "UTF-16-BE", "UTF-32-BE")
_ERRORS = ("replace", "ignore", "strict")


# --------------------------------------------------------------------------- arguments


def _string_input(op: str, value, arg: str = "input") -> Tensor:
    """`value` as a string tensor, else InvalidArgumentError naming the op and dtype."""
    t = value if type(value) is Tensor else to_tensor(value, None, op, arg)
    if t.dtype is not _STRING:
        raise InvalidArgumentError(f"{op}: argument {arg!r} must be a string tensor, got "
                                   f"{describe(t)}")
    return t


def _text(op: str, value, arg: str) -> bytes:
    """A string attribute (str, bytes or a scalar string tensor with a value) as bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    if isinstance(value, Tensor) and value.dtype is _STRING and value.ndim == 0:
        if is_symbolic(value):
            raise InvalidArgumentError(f"{op}: {arg} must be known when the function is "
                                       f"traced (a Python string), got {describe(value)}")
        return value.numpy()
    raise ArgumentTypeError(f"{op}: {arg} must be a string, got {show(value)}")


def _ragged_result(op: str, kernel: str, x: Tensor, attrs: dict):
    """Run a kernel giving (flat values, row splits) for the strings of `x`, flattened:
    a scalar's result is its values (a 1-D tensor), an input of rank k a RaggedTensor of
    rank k + 1 (ragged in its last dimension; the outer ones uniform), as TensorFlow."""
    flat = x if x.ndim == 1 else reshape(x, [-1])
    values, splits = run_kernel(kernel, {"x": flat}, attrs)
    if x.ndim == 0:
        return values
    out = RaggedTensor.from_row_splits(values, splits, validate=False)
    dims = list(x._shape)
    if x.ndim > 1 and None in dims:
        raise InvalidArgumentError(f"{op}: an input of rank {x.ndim} needs its dimensions "
                                   f"known when traced, got {describe(x)}")
    rows = 1
    for d in dims:
        rows *= d if d is not None else 1
    for d in reversed(dims[1:]):  # uniform outer partitions, innermost first
        rows = rows // d if d else 0
        out = RaggedTensor.from_row_splits(
            out, _range(0, rows * d + 1, max(d, 1), dtype=_dt.int64)[:rows + 1],
            validate=False)
    return out


def _rows_shape(out_dtype):
    def rule(shapes, dtypes, attrs):
        n = shapes["x"][0] if shapes["x"] else 1
        return [((None,), out_dtype), ((None if n is None else n + 1,), _dt.int64)]
    return rule


def _same(shapes, dtypes, attrs):
    return [(shapes["x"], _STRING)]


def _like(out_dtype):
    def rule(shapes, dtypes, attrs):
        return [(shapes["x"], out_dtype)]
    return rule


# --------------------------------------------------------------------------- case, strip


def lower(input, encoding: str = "", name=None) -> Tensor:
    """Lower-case each string: ASCII letters only, or every letter with
    `encoding="utf-8"`.

    Example:
        >>> tf.strings.lower(["CamelCase"]).numpy()
        array([b'camelcase'], dtype=object)
    """
    x = _string_input("lower", input)
    return run_kernel("StringLower", {"x": x}, {"encoding": _encoding_arg("lower", encoding)})


def upper(input, encoding: str = "", name=None) -> Tensor:
    """Upper-case each string (ASCII letters, or all with `encoding="utf-8"`).

    Example:
        >>> tf.strings.upper("abc").numpy()
        b'ABC'
    """
    x = _string_input("upper", input)
    return run_kernel("StringUpper", {"x": x}, {"encoding": _encoding_arg("upper", encoding)})


def _encoding_arg(op: str, encoding) -> str:
    if encoding is None or encoding == "":
        return ""
    if not isinstance(encoding, str) or encoding.lower().replace("-", "") != "utf8":
        raise InvalidArgumentError(f"{op}: encoding must be '' or 'utf-8', got {encoding!r}")
    return "utf-8"


def strip(input, name=None) -> Tensor:
    """Remove leading and trailing whitespace.

    Example:
        >>> tf.strings.strip(" a b\\n").numpy()
        b'a b'
    """
    return run_kernel("StringStrip", {"x": _string_input("strip", input)})


for _name in ("StringLower", "StringUpper", "StringStrip"):
    defop(_name, ["x"], shape=_same, **nondifferentiable())


def length(input, unit: str = "BYTE", name=None) -> Tensor:
    """int32 length of each string, in bytes or (unit="UTF8_CHAR") in characters.

    Example:
        >>> tf.strings.length(["été", ""], unit="UTF8_CHAR").numpy()
        array([3, 0], dtype=int32)
    """
    x = _string_input("length", input)
    unit = choice_arg("length", unit, "unit", _UNITS)
    return run_kernel("StringLength", {"x": x}, {"unit": unit})


defop("StringLength", ["x"], shape=_like(_dt.int32), **nondifferentiable())


# --------------------------------------------------------------------------- join, split


def join(inputs, separator: str = "", name=None) -> Tensor:
    """Join a list of string tensors elementwise with `separator` (all of one shape, or
    scalars).

    Example:
        >>> tf.strings.join([["a", "b"], "x"], separator="-").numpy()
        array([b'a-x', b'b-x'], dtype=object)
    """
    if not isinstance(inputs, (list, tuple)):
        raise ArgumentTypeError(f"join: inputs must be a list of string tensors, got "
                                f"{show(inputs)}")
    tensors = [_string_input("join", v, f"inputs[{i}]") for i, v in enumerate(inputs)]
    if not tensors:
        raise InvalidArgumentError("join: inputs must hold at least one tensor")
    return run_kernel("StringJoin", {"inputs": tensors},
                      {"separator": _text("join", separator, "separator")})


def _join_shape(shapes, dtypes, attrs):
    ranked = [s for s in shapes["inputs"] if len(s)]
    out = ranked[0] if ranked else ()
    for s in ranked[1:]:
        if len(s) != len(out) or any(a is not None and b is not None and a != b
                                     for a, b in zip(s, out)):
            raise InvalidArgumentError(f"join: input shapes do not match: {list(out)} vs. "
                                       f"{list(s)} (inputs must have one shape or be "
                                       f"scalars)")
    return [(out, _STRING)]


defop("StringJoin", ["inputs"], list_inputs=("inputs",), shape=_join_shape,
      **nondifferentiable())


def reduce_join(inputs, axis=None, keepdims: bool = False, separator: str = "",
                name=None) -> Tensor:
    """Join the strings along `axis` (all axes when None) with `separator`; with several
    axes, the first named varies fastest (as TensorFlow).

    Example:
        >>> tf.strings.reduce_join([["a", "b"], ["c", "d"]], axis=1, separator=",").numpy()
        array([b'a,b', b'c,d'], dtype=object)
    """
    x = _string_input("reduce_join", inputs, "inputs")
    if axis is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    else:
        normalize_axes("reduce_join", axis, x.ndim)  # checks range and repeats
        named = axis if isinstance(axis, (list, tuple)) else [axis]
        axes = tuple(int(a) % x.ndim for a in named)
    return run_kernel("ReduceJoin", {"x": x},
                      {"axes": axes, "keepdims": bool(keepdims),
                       "separator": _text("reduce_join", separator, "separator")})


def _reduce_join_shape(shapes, dtypes, attrs):
    s, axes = shapes["x"], attrs["axes"]
    if attrs["keepdims"]:
        return [(tuple(1 if a in axes else d for a, d in enumerate(s)), _STRING)]
    return [(tuple(d for a, d in enumerate(s) if a not in axes), _STRING)]


defop("ReduceJoin", ["x"], shape=_reduce_join_shape, **nondifferentiable())


def split(input, sep=None, maxsplit: int = -1, name=None) -> Tensor:
    """Split a scalar string at `sep` (runs of whitespace when None) into a 1-D tensor,
    at most `maxsplit` times (-1: no limit); for non-scalars a RaggedTensor.

    Example:
        >>> tf.strings.split("a b  c").numpy()
        array([b'a', b'b', b'c'], dtype=object)
    """
    x = _string_input("split", input)
    sep = None if sep is None else _text("split", sep, "sep")
    return _ragged_result("split", "StringSplit", x,
                          {"sep": sep, "maxsplit": int_arg("split", maxsplit, "maxsplit")})


def bytes_split(input, name=None) -> Tensor:
    """The bytes of a scalar string as a 1-D string tensor (of a non-scalar: ragged).

    Example:
        >>> tf.strings.bytes_split("ab").numpy()
        array([b'a', b'b'], dtype=object)
    """
    x = _string_input("bytes_split", input)
    return _ragged_result("bytes_split", "BytesSplit", x, {})


defop("StringSplit", ["x"], num_outputs=2, shape=_rows_shape(_STRING), **nondifferentiable())
defop("BytesSplit", ["x"], num_outputs=2, shape=_rows_shape(_STRING), **nondifferentiable())


# --------------------------------------------------------------------------- regex


def regex_replace(input, pattern, rewrite, replace_global: bool = True, name=None) -> Tensor:
    """Replace matches of the RE2 `pattern` with `rewrite` (`\\1` a group, `\\0` the
    match), everywhere or (replace_global=False) the first only.

    Example:
        >>> tf.strings.regex_replace("a1b22", r"\\d+", "#").numpy()
        b'a#b#'
    """
    x = _string_input("regex_replace", input)
    return run_kernel("RegexReplace", {"x": x},
                      {"pattern": _text("regex_replace", pattern, "pattern"),
                       "rewrite": _text("regex_replace", rewrite, "rewrite"),
                       "replace_global": bool(replace_global)})


def regex_full_match(input, pattern, name=None) -> Tensor:
    """Whether each whole string matches the RE2 `pattern` (bool).

    Example:
        >>> tf.strings.regex_full_match(["ab", "abc"], "ab").numpy()
        array([ True, False])
    """
    x = _string_input("regex_full_match", input)
    return run_kernel("RegexFullMatch", {"x": x},
                      {"pattern": _text("regex_full_match", pattern, "pattern")})


defop("RegexReplace", ["x"], shape=_same, **nondifferentiable())
defop("RegexFullMatch", ["x"], shape=_like(_dt.bool), **nondifferentiable())


# --------------------------------------------------------------------------- substr


def substr(input, pos, len, unit: str = "BYTE", name=None) -> Tensor:  # noqa: A002
    """The substring of `len` units from `pos` (negative: from the end) of each string;
    `pos` and `len` have one shape, broadcasting with the input.

    Example:
        >>> tf.strings.substr(["Hello", "World"], 1, 3).numpy()
        array([b'ell', b'orl'], dtype=object)
    """
    x = _string_input("substr", input)
    unit = choice_arg("substr", unit, "unit", _UNITS)
    p = to_tensor(pos, _dt.int32, "substr", "pos")
    n = to_tensor(len, p.dtype, "substr", "len")
    if not p.dtype.is_integer or n.dtype is not p.dtype:
        raise InvalidArgumentError(f"substr: pos and len must be integers of one dtype, "
                                   f"got {describe(p)} and {describe(n)}")
    return run_kernel("Substr", {"x": x, "pos": p, "len": n}, {"unit": unit})


def _substr_shape(shapes, dtypes, attrs):
    s, p = shapes["x"], shapes["pos"]
    if not p or tuple(p) == tuple(s):
        return [(s, _STRING)]
    rank = max(len(s), len(p))
    s, p = (1,) * (rank - len(s)) + tuple(s), (1,) * (rank - len(p)) + tuple(p)
    return [(tuple(b if a == 1 else a for a, b in zip(s, p)), _STRING)]


defop("Substr", ["x", "pos", "len"], shape=_substr_shape, **nondifferentiable())


# --------------------------------------------------------------------------- numbers

_NUMBER_OUT = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def to_number(input, out_type=_dt.float32, name=None) -> Tensor:
    """Parse each string as a number of `out_type` (float32, float64, int32, int64);
    a string that is not one raises.

    Example:
        >>> tf.strings.to_number(["1.5", "-2"]).numpy()
        array([ 1.5, -2. ], dtype=float32)
    """
    x = _string_input("to_number", input)
    out_type = dtype_arg("to_number", out_type, "out_type")
    if out_type not in _NUMBER_OUT:
        raise InvalidArgumentError(f"to_number: out_type must be one of float32, float64, "
                                   f"int32, int64, got {out_type.name}")
    return run_kernel("StringToNumber", {"x": x}, {"out_type": out_type})


defop("StringToNumber", ["x"],
      shape=lambda shapes, dtypes, attrs: [(shapes["x"], attrs["out_type"])],
      **nondifferentiable())

_FILLS = ("", " ", "+", "-", "0", "#")


def as_string(input, precision: int = -1, scientific: bool = False, shortest: bool = False,
              width: int = -1, fill: str = "", name=None) -> Tensor:
    """Each number as text, as C's printf: floats "%f" (`precision` digits, `scientific`
    "%e", `shortest` "%g"), integers "%d", bools "true"/"false"; padded to `width` with
    spaces or (fill="0") zeros.

    Example:
        >>> tf.strings.as_string([1.5, 2.0], precision=2).numpy()
        array([b'1.50', b'2.00'], dtype=object)
    """
    x = input if type(input) is Tensor else to_tensor(input, None, "as_string", "input")
    precision = int_arg("as_string", precision, "precision", minimum=-1)
    width = int_arg("as_string", width, "width", minimum=-1)
    if not isinstance(fill, str) or fill not in _FILLS:
        raise InvalidArgumentError(f"as_string: fill must be one of {list(_FILLS)}, got "
                                   f"{fill!r}")
    if scientific and shortest:
        raise InvalidArgumentError("as_string: cannot select both scientific and shortest "
                                   "notation")
    d = x.dtype
    if precision > -1 and not (d.is_floating or d.is_complex):
        raise InvalidArgumentError(f"as_string: precision not supported for datatype "
                                   f"{d.name}")
    if (scientific or shortest) and not (d.is_floating or d.is_complex):
        raise InvalidArgumentError(f"as_string: scientific and shortest are not supported "
                                   f"for datatype {d.name}")
    return run_kernel("AsString", {"x": x},
                      {"precision": precision, "scientific": bool(scientific),
                       "shortest": bool(shortest), "width": width, "fill": fill})


defop("AsString", ["x"], shape=_like(_STRING), **nondifferentiable())


# --------------------------------------------------------------------------- format


def format(template: str, inputs, placeholder: str = "{}", summarize: int = 3,
           name=None) -> Tensor:  # noqa: A001 - TensorFlow's public name
    """A scalar string: `template` with each `placeholder` replaced by the next input,
    summarized as tf.print shows it (`summarize` elements at each end of a dimension).

    Example:
        >>> tf.strings.format("x={}", [tf.constant([1, 2])]).numpy()
        b'x=[1 2]'
    """
    if not isinstance(template, str) or not isinstance(placeholder, str) or not placeholder:
        raise ArgumentTypeError(f"format: template and placeholder must be strings, got "
                                f"{show(template)} and {show(placeholder)}")
    values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    tensors = [v if type(v) is Tensor else convert_to_tensor(v) for v in values]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(tensors):
        raise ValueError(f"format: the template expects {len(pieces) - 1} tensors, but the "
                         f"inputs have {len(tensors)}; the number of placeholders in "
                         f"template must match the inputs' length")
    summarize = int_arg("format", summarize, "summarize")
    return run_kernel("StringFormat", {"inputs": tensors},
                      {"pieces": tuple(pieces), "summarize": summarize})


defop("StringFormat", ["inputs"], list_inputs=("inputs",),
      shape=lambda shapes, dtypes, attrs: [((), _STRING)], **nondifferentiable())


# --------------------------------------------------------------------------- hashing


def to_hash_bucket_fast(input, num_buckets: int, name=None) -> Tensor:
    """int64 bucket of each string: FarmHash Fingerprint64 modulo `num_buckets`, the
    same buckets as TensorFlow's.

    Example:
        >>> tf.strings.to_hash_bucket_fast(["", "a"], 1000).numpy()
        array([263, 939])
    """
    x = _string_input("to_hash_bucket_fast", input)
    n = int_arg("to_hash_bucket_fast", num_buckets, "num_buckets", minimum=1)
    return run_kernel("StringToHashBucketFast", {"x": x}, {"num_buckets": n})


def to_hash_bucket_strong(input, num_buckets: int, key, name=None) -> Tensor:
    """int64 bucket of each string: SipHash-2-4 under `key` (two ints) modulo
    `num_buckets`, as TensorFlow's.

    Example:
        >>> tf.strings.to_hash_bucket_strong(["a"], 1000, [1, 2]).numpy()
        array([646])
    """
    x = _string_input("to_hash_bucket_strong", input)
    n = int_arg("to_hash_bucket_strong", num_buckets, "num_buckets", minimum=1)
    if not isinstance(key, (list, tuple)) or len(key) != 2:
        raise InvalidArgumentError(f"to_hash_bucket_strong: key must be a list of 2 ints, "
                                   f"got {show(key)}")
    key = tuple(int_arg("to_hash_bucket_strong", k, "key") for k in key)
    return run_kernel("StringToHashBucketStrong", {"x": x}, {"num_buckets": n, "key": key})


defop("StringToHashBucketFast", ["x"], shape=_like(_dt.int64), **nondifferentiable())
defop("StringToHashBucketStrong", ["x"], shape=_like(_dt.int64), **nondifferentiable())


# --------------------------------------------------------------------------- unicode


def _unicode_args(op: str, encoding, errors, replacement_char) -> dict:
    return {"errors": choice_arg(op, errors, "errors", _ERRORS),
            "replacement_char": int_arg(op, replacement_char, "replacement_char", minimum=0)}


def unicode_decode(input, input_encoding: str, errors: str = "replace",
                   replacement_char: int = 0xFFFD, replace_control_characters: bool = False,
                   name=None) -> Tensor:
    """The int32 code points of a scalar string in `input_encoding` ("UTF-8",
    "UTF-16-BE", "UTF-32-BE"); invalid sequences are replaced, ignored or raise
    (`errors`). For a non-scalar input, a RaggedTensor of code points.

    Example:
        >>> tf.strings.unicode_decode("é!", "UTF-8").numpy()
        array([233,  33], dtype=int32)
    """
    x = _string_input("unicode_decode", input)
    attrs = _unicode_args("unicode_decode", input_encoding, errors, replacement_char)
    attrs["input_encoding"] = choice_arg("unicode_decode", input_encoding, "input_encoding",
                                         _ENCODINGS, upper=True)
    attrs["replace_control_characters"] = bool(replace_control_characters)
    return _ragged_result("unicode_decode", "UnicodeDecode", x, attrs)


def unicode_split(input, input_encoding: str, errors: str = "replace",
                  replacement_char: int = 0xFFFD, name=None) -> Tensor:
    """The characters of a scalar string, each as its own (encoded) string.

    Example:
        >>> tf.strings.unicode_split("aé", "UTF-8").numpy()
        array([b'a', b'\\xc3\\xa9'], dtype=object)
    """
    x = _string_input("unicode_split", input)
    attrs = _unicode_args("unicode_split", input_encoding, errors, replacement_char)
    attrs["input_encoding"] = choice_arg("unicode_split", input_encoding, "input_encoding",
                                         _ENCODINGS, upper=True)
    return _ragged_result("unicode_split", "UnicodeSplit", x, attrs)


def unicode_encode(input, output_encoding: str, errors: str = "replace",
                   replacement_char: int = 0xFFFD, name=None) -> Tensor:
    """Code points (int32, last axis: the characters) encoded as strings: a 1-D input
    gives a scalar, [n, k] gives n strings.

    Example:
        >>> tf.strings.unicode_encode([104, 233], "UTF-8").numpy()
        b'h\\xc3\\xa9'
    """
    x = to_tensor(input, _dt.int32, "unicode_encode", "input")
    if x.dtype is not _dt.int32 or x.ndim == 0:
        raise InvalidArgumentError(f"unicode_encode: input must be int32 code points of "
                                   f"rank >= 1, got {describe(x)}")
    attrs = _unicode_args("unicode_encode", output_encoding, errors, replacement_char)
    attrs["output_encoding"] = choice_arg("unicode_encode", output_encoding,
                                          "output_encoding", _ENCODINGS, upper=True)
    return run_kernel("UnicodeEncode", {"x": x}, attrs)


defop("UnicodeDecode", ["x"], num_outputs=2, shape=_rows_shape(_dt.int32),
      **nondifferentiable())
defop("UnicodeSplit", ["x"], num_outputs=2, shape=_rows_shape(_STRING),
      **nondifferentiable())
defop("UnicodeEncode", ["x"],
      shape=lambda shapes, dtypes, attrs: [(tuple(shapes["x"])[:-1], _STRING)],
      **nondifferentiable())
