"""String tensors and tf.strings against TensorFlow 2.21: the values of
fixtures/strings.json (written by fixtures/make_strings.py from real TensorFlow, the
expressions shared), printing, traced functions, gradients and tf.data pipelines."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tests.ops.fixtures.make_strings import CASES

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "fixtures", "strings.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)["cases"]


def _decode(value, dtype: str):
    """The fixture's JSON value back as NumPy (strings: latin-1 encoded, i.e. the bytes)."""
    def walk(v):
        if isinstance(v, list):
            return [walk(x) for x in v]
        if dtype == "string":
            return v.encode("latin-1")
        if isinstance(v, str):  # nan / inf
            return float(v)
        return v
    if dtype == "string":
        out = np.empty(np.shape(value) if isinstance(value, list) else (), dtype=object)
        flat = np.array(walk(value), dtype=object) if isinstance(value, list) else None
        if flat is None:
            out[()] = walk(value)
        else:
            out[...] = flat
        return out
    return np.array(walk(value), dtype=np.dtype(dtype) if dtype != "bool" else bool)


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(name, expr):
    want = EXPECTED[name]
    if "error" in want:
        # TF's class where it is ours too; TF's TypeError / UnimplementedError for a
        # dtype an op does not take is an InvalidArgumentError here (API.md §2)
        kinds = {"InvalidArgumentError": tf.errors.InvalidArgumentError,
                 "ValueError": ValueError}.get(want["error"], (TypeError, ValueError))
        with pytest.raises(kinds):
            eval(expr)  # noqa: S307 - the fixture's own expressions
        return
    got = eval(expr)  # noqa: S307
    assert got.dtype.name == want["dtype"], (got.dtype, want["dtype"])
    if "ragged" in want:  # a RaggedTensor: its rows as nested lists
        assert isinstance(got, tf.RaggedTensor) and got.ragged_rank == want["ragged"]

        def walk(v):
            if isinstance(v, list):
                return [walk(x) for x in v]
            return v.encode("latin-1") if want["dtype"] == "string" else v
        assert got.to_list() == walk(want["value"])
        return
    assert list(got.shape) == want["shape"]
    expected = _decode(want["value"], want["dtype"])
    actual = np.asarray(got)
    if want["dtype"] == "string":
        assert actual.dtype == object
        assert actual.shape == expected.shape
        assert actual.tolist() == expected.tolist()
        assert all(type(v) is bytes for v in actual.reshape(-1).tolist())
    elif want["dtype"].startswith("float"):
        np.testing.assert_allclose(actual, expected, rtol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


# --------------------------------------------------------------------------- the dtype


def test_dtype_and_numpy_values():
    assert tf.string.name == "string" and str(tf.string) == "<dtype: 'string'>"
    assert not (tf.string.is_numeric or tf.string.is_floating or tf.string.is_integer
                or tf.string.is_bool or tf.string.is_trainable)
    assert tf.string.size == 0  # TF's value
    assert tf.as_dtype("string") is tf.string and tf.as_dtype(np.object_) is tf.string
    assert tf.as_dtype(np.bytes_) is tf.string and tf.as_dtype(np.str_) is tf.string
    assert tf.string == np.object_ and tf.string == "string"
    for python_type in (bytes, str):  # TF refuses the Python types themselves
        with pytest.raises(TypeError):
            tf.as_dtype(python_type)
    with pytest.raises(TypeError, match="Cannot find maximum"):
        tf.string.max
    assert tf.constant("a").numpy() == b"a" and type(tf.constant("a").numpy()) is bytes
    v = tf.constant(["a", "é"]).numpy()
    assert v.dtype == object and v.tolist() == [b"a", "é".encode()]
    assert tf.constant(["a"]).dtype is tf.string
    assert tf.TensorSpec([None], tf.string).dtype is tf.string
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant([["a"], ["b", "c"]])  # ragged
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.convert_to_tensor(np.array([1, "a"], dtype=object))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant("1.5", tf.float32)


def test_printing_as_tensorflow():
    # the strings TF 2.21 prints (repr/str of tf.constant(...) in /tmp/tfv)
    assert repr(tf.constant("a")) == "<tf.Tensor: shape=(), dtype=string, numpy=b'a'>"
    assert str(tf.constant("a")) == "tf.Tensor(b'a', shape=(), dtype=string)"
    assert repr(tf.constant(["a", "bC"])) == (
        "<tf.Tensor: shape=(2,), dtype=string, numpy=array([b'a', b'bC'], dtype=object)>")
    assert str(tf.constant(["a", "bC"])) == "tf.Tensor([b'a' b'bC'], shape=(2,), dtype=string)"
    assert str(tf.constant([["a", "b"], ["c", "d"]])) == (
        "tf.Tensor(\n[[b'a' b'b']\n [b'c' b'd']], shape=(2, 2), dtype=string)")
    assert str(tf.constant([b"\xff", "a'b", 'q"'])) == (
        'tf.Tensor([b\'\\xff\' b"a\'b" b\'q"\'], shape=(3,), dtype=string)')
    assert repr(tf.constant([str(i) for i in range(2000)])) == (
        "<tf.Tensor: shape=(2000,), dtype=string, numpy=\narray([b'0', b'1', b'2', ..., "
        "b'1997', b'1998', b'1999'],\n      shape=(2000,), dtype=object)>")


def test_tf_print(capsys):
    # TF 2.21: tf.print(tf.constant('a'), tf.constant(['a','b']), ...) and alone
    tf.print(tf.constant("a"), tf.constant(["a", "b"]), tf.constant([["é", 'x"y']]),
             tf.constant([str(i) for i in range(10)]), output_stream=__import__("sys").stdout)
    tf.print(tf.constant("alone"), output_stream=__import__("sys").stdout)
    out = capsys.readouterr().out
    assert out == ('"a" ["a" "b"] [["é" "x\\"y"]] ["0" "1" "2" ... "7" "8" "9"]\n'
                   "alone\n")


# --------------------------------------------------------------------------- traced


def test_traced_string_ops():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def clean(s):
        s = tf.strings.lower(s)
        s = tf.strings.regex_replace(s, "[[:punct:]]", "")
        n = tf.strings.length(s)
        return tf.strings.join([s, tf.constant("!")]), n, tf.equal(s, "ok")

    out, n, eq = clean(tf.constant(["Hello, World", "OK"]))
    assert out.numpy().tolist() == [b"hello world!", b"ok!"]
    np.testing.assert_array_equal(n.numpy(), [11, 2])
    np.testing.assert_array_equal(eq.numpy(), [False, True])
    graph = clean.get_concrete_function().graph
    text = str(graph)
    assert "StringLower" in text and "RegexReplace" in text


def test_traced_captured_constant_and_split():
    words = tf.constant(["x", "y"])

    @tf.function
    def f(line):
        parts = tf.strings.split(line)
        return tf.concat([parts, words], 0), tf.strings.reduce_join(parts, separator="+")

    parts, joined = f(tf.constant("a b  c"))
    assert parts.numpy().tolist() == [b"a", b"b", b"c", b"x", b"y"]
    assert joined.numpy() == b"a+b+c"
    assert f(tf.constant("q")).__getitem__(1).numpy() == b"q"  # same trace, new length


def test_traced_format_and_numbers():
    @tf.function
    def f(x):
        return tf.strings.format("v={}", [x]), tf.strings.to_number(tf.strings.as_string(x))

    text, back = f(tf.constant([1.5, 2.0]))
    assert text.numpy() == b"v=[1.5 2]"
    np.testing.assert_array_equal(back.numpy(), [1.5, 2.0])


def test_gradients_stop_at_strings():
    x = tf.Variable([1.5, 2.0])
    with tf.GradientTape() as tape:
        s = tf.strings.as_string(x)
        y = tf.strings.to_number(s)
    assert tape.gradient(y, x) is None


def test_variable_and_py_function():
    v = tf.Variable(["a", "b"])
    assert v.dtype is tf.string and v.numpy().tolist() == [b"a", b"b"]
    out = tf.py_function(lambda s: tf.strings.upper(s), [tf.constant(["a", "bC"])], tf.string)
    assert out.numpy().tolist() == [b"A", b"BC"]


# --------------------------------------------------------------------------- tf.data


def test_dataset_of_strings():
    ds = tf.data.Dataset.from_tensor_slices(["Hello World", "FOO bar", "", "x"])
    ds = ds.map(tf.strings.lower).batch(3)
    batches = [b.numpy().tolist() for b in ds]
    assert batches == [[b"hello world", b"foo bar", b""], [b"x"]]
    spec = ds.element_spec
    assert spec.dtype is tf.string and tuple(spec.shape) == (None,)


def test_dataset_padded_batch_and_pairs():
    ds = tf.data.Dataset.from_tensor_slices((["a b", "c"], [1, 2]))
    ds = ds.map(lambda s, y: (tf.strings.split(s), y)).padded_batch(2)
    (words, labels), = list(ds)
    assert words.numpy().tolist() == [[b"a", b"b"], [b"c", b""]]
    np.testing.assert_array_equal(labels.numpy(), [1, 2])


# --------------------------------------------------------------------------- edges


def test_ragged_results_traced():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def words(lines):
        rt = tf.strings.split(lines)
        return rt.flat_values, rt.row_splits

    values, splits = words(tf.constant(["a b", "", "c d e"]))
    assert values.numpy().tolist() == [b"a", b"b", b"c", b"d", b"e"]
    np.testing.assert_array_equal(splits.numpy(), [0, 2, 2, 5])
    rt = tf.strings.split(tf.constant(["x y", "z"]))
    assert rt.to_tensor().numpy().tolist() == [[b"x", b"y"], [b"z", b""]]


def test_errors_name_op_and_dtype():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^lower: .*int32"):
        tf.strings.lower(tf.constant([1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^subtract: .*string"):
        tf.constant(["a"]) - tf.constant(["b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^reduce_sum: .*string"):
        tf.reduce_sum(tf.constant(["a"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="cast: casting string"):
        tf.cast(tf.constant(["1"]), tf.float32)


def test_hash_matches_keras_layer_function():
    from tapeflow._core.hashing import farmhash_fingerprint64
    from tapeflow.keras.layers.preprocessing import farmhash_fingerprint64 as keras_hash
    assert keras_hash is farmhash_fingerprint64


def test_vectorized_fingerprint_matches_the_scalar_one():
    # the NumPy version (strings <= 64 bytes by length class) against the Python one,
    # itself checked against TensorFlow's buckets by the hash_fast fixture cases
    from tapeflow._core.hashing import farmhash_fingerprint64, farmhash_fingerprint64_many
    rng = np.random.default_rng(0)
    strings = [bytes(rng.integers(0, 256, n).astype(np.uint8)) for n in range(0, 140)] * 3
    want = np.array([farmhash_fingerprint64(s) for s in strings], dtype=np.uint64)
    np.testing.assert_array_equal(farmhash_fingerprint64_many(strings), want)


def test_mixed_and_invalid_python_values():
    assert tf.constant(["a", b"b", "é"]).numpy().tolist() == [b"a", b"b", "é".encode()]
    assert tf.constant([b"\xff", "x"]).numpy().tolist() == [b"\xff", b"x"]
    assert tf.constant((["x"],)).shape == (1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int"):
        tf.constant(["a", 1])


def test_string_variable_checkpoint_round_trip(tmp_path):
    v = tf.Variable(["a", "bé", ""])
    path = tf.train.Checkpoint(v=v).save(str(tmp_path / "ckpt"))
    v.assign(tf.constant(["x", "y", "z"]))
    tf.train.Checkpoint(v=v).restore(path)
    assert v.numpy().tolist() == [b"a", "bé".encode(), b""]


def test_to_number_fast_and_slow_paths_agree():
    text = [str(i) for i in range(-50, 50)] + ["1_0"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="1_0"):
        tf.strings.to_number(text, tf.int32)
    np.testing.assert_array_equal(tf.strings.to_number(text[:-1], tf.int32).numpy(),
                                  np.arange(-50, 50))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.strings.to_number(["3000000000"], tf.int32)


def test_trailing_nul_bytes_are_kept_as_tensorflow_keeps_them():
    # tf.constant(b"ab\x00").numpy() == b"ab\x00" in TF 2.21 (NumPy's bytes dtype would
    # drop the NUL)
    assert tf.constant(b"ab\x00").numpy() == b"ab\x00"
    assert tf.convert_to_tensor(b"\x00\x00").numpy() == b"\x00\x00"
    assert int(tf.strings.length(tf.constant(b"ab\x00"))) == 3
