"""Rows for the string ops (tf.strings), checked against plain-Python references on
object arrays of bytes; the values TensorFlow gives are checked in test_strings.py.

String ops have no derivatives (grad=False). Ops whose TensorFlow result is ragged for
non-scalar inputs (split, bytes_split, unicode_decode, unicode_split) take scalars here.
"""
import re

import numpy as np

import tapeflow as tf
from tapeflow._core.hashing import farmhash_fingerprint64, siphash64
from tests.ops.table import Row

_ALPHABET = list("abcXYZ 019,.") + ["é", "€", "\t"]


def _word(rng) -> bytes:
    n = int(rng.integers(0, 7))
    return "".join(rng.choice(_ALPHABET) for _ in range(n)).encode()


def words(*shapes):
    """A sampler of string arrays (object arrays of bytes) of the given shapes."""
    def sample(rng, dtype):
        out = []
        for s in shapes:
            a = np.empty(s, dtype=object)
            for idx in np.ndindex(*s):
                a[idx] = _word(rng)
            out.append(a)
        return out
    return sample


def numerals(shape):
    def sample(rng, dtype):
        a = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            a[idx] = str(int(rng.integers(-999, 999))).encode()
        return [a]
    return sample


def each(fn, out=object):
    """A reference applying `fn` to every element of its first argument."""
    def ref(x, **kwargs):
        x = np.asarray(x, dtype=object)
        flat = [fn(v) for v in x.reshape(-1).tolist()]
        result = np.empty(len(flat), dtype=out)
        result[:] = flat
        return result.reshape(x.shape)
    return ref


def _utf8(fn):
    return lambda b: fn(b.decode()).encode()


S = ("object",)  # the table's name for string inputs (their NumPy dtype)
_STRING_ROW = dict(grad=False, dtypes=S, rank=False)

ROWS = [
    Row("strings.lower", tf.strings.lower, each(bytes.lower), words((3, 2)),
        kernels=("StringLower",), **_STRING_ROW),
    Row("strings.lower/utf8", lambda x: tf.strings.lower(x, encoding="utf-8"),
        each(_utf8(str.lower)), words((4,)), kernels=("StringLower",), **_STRING_ROW),
    Row("strings.upper", tf.strings.upper, each(bytes.upper), words((2, 3)),
        kernels=("StringUpper",), **_STRING_ROW),
    Row("strings.strip", tf.strings.strip, each(bytes.strip), words((5,)),
        kernels=("StringStrip",), **_STRING_ROW),
    Row("strings.length", tf.strings.length, each(len, np.int32), words((3, 2)),
        kernels=("StringLength",), out_dtype="int32", **_STRING_ROW),
    Row("strings.length/utf8", lambda x: tf.strings.length(x, unit="UTF8_CHAR"),
        each(lambda b: len(b.decode()), np.int32), words((4,)), kernels=("StringLength",),
        out_dtype="int32", **_STRING_ROW),
    Row("strings.join", lambda a, b: tf.strings.join([a, b], separator="+"),
        lambda a, b: each(lambda p: p[0] + b"+" + p[1])(
            np.array(list(zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()))
                     + [None], dtype=object)[:-1].reshape(a.shape)),
        words((2, 3), (2, 3)), kernels=("StringJoin",), scalar=True, size1=True,
        empty=True, **_STRING_ROW),
    Row("strings.reduce_join", lambda x: tf.strings.reduce_join(x, axis=1, separator="|"),
        lambda x: each(lambda r: b"|".join(r))(
            np.array([list(r) for r in x] + [None], dtype=object)[:-1]
            if x.shape[0] else np.empty((0,), object)),
        words((3, 4)), kernels=("ReduceJoin",), scalar=False, **_STRING_ROW),
    Row("strings.split", tf.strings.split, lambda x: np.array(x[()].split(), dtype=object),
        words(()), kernels=("StringSplit",), scalar=False, size1=False, empty=False,
        **_STRING_ROW),
    Row("strings.bytes_split", tf.strings.bytes_split,
        lambda x: np.array([bytes([c]) for c in x[()]], dtype=object).reshape(-1),
        words(()), kernels=("BytesSplit",), scalar=False, size1=False, empty=False,
        **_STRING_ROW),
    Row("strings.regex_replace", lambda x: tf.strings.regex_replace(x, "[a-c]+", "<\\0>"),
        each(lambda b: re.sub(rb"[a-c]+", rb"<\g<0>>", b)), words((3, 2)),
        kernels=("RegexReplace",), **_STRING_ROW),
    Row("strings.regex_full_match", lambda x: tf.strings.regex_full_match(x, "[a-z ]*"),
        each(lambda b: re.fullmatch(rb"[a-z ]*", b) is not None, bool), words((6,)),
        kernels=("RegexFullMatch",), **_STRING_ROW),
    Row("strings.substr", lambda x: tf.strings.substr(x, 0, 2), each(lambda b: b[:2]),
        words((2, 2)), kernels=("Substr",), **_STRING_ROW),
    Row("strings.to_number", lambda x: tf.strings.to_number(x, tf.int32),
        each(int, np.int32), numerals((2, 3)), kernels=("StringToNumber",),
        out_dtype="int32", **_STRING_ROW),
    Row("strings.as_string", lambda x: tf.strings.as_string(x, precision=3),
        each(lambda v: b"%.3f" % v), lambda rng, dtype: [rng.uniform(-9, 9, (2, 3))],
        kernels=("AsString",), grad=False, dtypes=("float32", "float64"), out_dtype="string",
        rank=False),
    Row("strings.format", lambda x: tf.strings.format("<{}>", [x]),
        lambda x: np.array(("<[" + " ".join(map(str, x.tolist())) + "]>").encode(),
                           dtype=object),
        lambda rng, dtype: [rng.integers(-9, 9, (5,)).astype(np.int32)],
        kernels=("StringFormat",), grad=False, dtypes=("int32",), out_dtype="string",
        scalar=False, size1=False, empty=False, rank=False),
    Row("strings.to_hash_bucket_fast", lambda x: tf.strings.to_hash_bucket_fast(x, 97),
        each(lambda b: farmhash_fingerprint64(b) % 97, np.int64), words((3, 2)),
        kernels=("StringToHashBucketFast",), out_dtype="int64", **_STRING_ROW),
    Row("strings.to_hash_bucket_strong",
        lambda x: tf.strings.to_hash_bucket_strong(x, 97, [3, 4]),
        each(lambda b: siphash64((3, 4), b) % 97, np.int64), words((4,)),
        kernels=("StringToHashBucketStrong",), out_dtype="int64", **_STRING_ROW),
    Row("strings.unicode_decode", lambda x: tf.strings.unicode_decode(x, "UTF-8"),
        lambda x: np.array([ord(c) for c in x[()].decode()], np.int32), words(()),
        kernels=("UnicodeDecode",), out_dtype="int32", scalar=False, size1=False,
        empty=False, **_STRING_ROW),
    Row("strings.unicode_split", lambda x: tf.strings.unicode_split(x, "UTF-8"),
        lambda x: np.array([c.encode() for c in x[()].decode()] + [b""], object)[:-1],
        words(()), kernels=("UnicodeSplit",), scalar=False, size1=False, empty=False,
        **_STRING_ROW),
    Row("strings.unicode_encode", lambda x: tf.strings.unicode_encode(x, "UTF-8"),
        lambda x: each(lambda r: "".join(map(chr, r)).encode())(
            np.array([list(r) for r in x.reshape(-1, x.shape[-1])] + [None],
                     dtype=object)[:-1].reshape(x.shape[:-1])),
        lambda rng, dtype: [rng.integers(32, 0x2000, (2, 3)).astype(np.int32)],
        kernels=("UnicodeEncode",), grad=False, dtypes=("int32",), out_dtype="string",
        scalar=False, size1=False, empty=False, rank=False),
]
