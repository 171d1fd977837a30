"""tf.io ops and tf.train.Example against TensorFlow 2.21's bytes and values (fixture
tests/data/fixtures/tfrecords.json, written by tests/data/fixtures/make_tfrecords.py):
serialize_tensor/parse_tensor, Example serialization, decode_csv, decode_raw, files, gfile."""
import base64
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.wire import field

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures")
with open(os.path.join(FIXTURES, "tfrecords.json")) as _f:
    TF = json.load(_f)
B = base64.b64decode


def strings(*values, shape=None):
    a = np.empty(len(values), dtype=object)
    a[:] = list(values)
    return a.reshape(shape if shape is not None else (len(values),))


TENSORS = {
    "f32": lambda: tf.constant([[1.5, -2.0, 3.25]]),
    "f64": lambda: tf.constant([0.1, 1e300], tf.float64),
    "i32_scalar": lambda: tf.constant(-7),
    "i64": lambda: tf.constant([2 ** 40, -1], tf.int64),
    "bool": lambda: tf.constant([True, False]),
    "u8": lambda: tf.constant([[1, 255]], tf.uint8),
    "f16": lambda: tf.constant([0.5, 65504.0], tf.float16),
    "empty": lambda: tf.zeros([0, 3]),
    "str": lambda: tf.constant(strings(b"ab", b"", b"\xff\x00", "é".encode(), shape=(2, 2))),
    "str_scalar": lambda: tf.constant(b"hello"),
    "c64": lambda: tf.constant([1 + 2j], tf.complex64),
}


@pytest.mark.parametrize("name", sorted(TENSORS))
def test_serialize_tensor_bytes_equal_tf(name):
    t = TENSORS[name]()
    got = tf.io.serialize_tensor(t)
    assert got.dtype == tf.string and got.shape == ()
    assert got.numpy() == B(TF["serialized"][name])


@pytest.mark.parametrize("name", sorted(TENSORS))
def test_parse_tensor_reads_tf_bytes(name):
    want = np.asarray(TENSORS[name]().numpy(), dtype=object if name.startswith("str")
                      else None)
    dtype = TENSORS[name]().dtype
    got = tf.io.parse_tensor(B(TF["serialized"][name]), dtype)
    a = np.asarray(got.numpy(), dtype=object if name.startswith("str") else None)
    assert a.shape == want.shape and got.dtype == dtype
    np.testing.assert_array_equal(a, want)


def test_parse_tensor_type_mismatch_and_typed_fields():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
        tf.io.parse_tensor(B(TF["serialized"]["f32"]), tf.int32)
    # a TensorProto with float_val (field 5, packed) instead of tensor_content, and one
    # value standing for the whole shape [3] (TensorFlow fills with the last value)
    proto = field(1, 1) + field(2, field(2, field(1, 3))) + field(5, np.float32(2.5).tobytes())
    np.testing.assert_array_equal(tf.io.parse_tensor(proto, tf.float32).numpy(),
                                  [2.5, 2.5, 2.5])


def test_serialize_parse_traced():
    f = tf.function(lambda x: tf.io.serialize_tensor(x * 2))
    assert f(tf.constant([1.5])).numpy() == tf.io.serialize_tensor(tf.constant([3.0])).numpy()


def fixture_example(i: int):
    feature = {
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[f"sentence {i} caf\u00e9".encode()])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[i * 0.1, -i - 0.5])),
        "big": tf.train.Feature(int64_list=tf.train.Int64List(value=[-(2 ** 40) * i])),
    }
    if i % 2:
        feature["tags"] = tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[b"t%d" % k for k in range(i)]))
        feature["seq"] = tf.train.Feature(int64_list=tf.train.Int64List(
            value=list(range(i))))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def test_example_bytes_equal_tf():
    assert fixture_example(3).SerializeToString() == B(TF["example_bytes"])
    for i, r in enumerate(TF["records"]):
        assert fixture_example(i).SerializeToString() == B(r)
    empty = tf.train.Example(features=tf.train.Features(feature={
        "e": tf.train.Feature(), "b": tf.train.Feature(bytes_list=tf.train.BytesList())}))
    assert empty.SerializeToString() == B(TF["empty_feature_example"])
    assert tf.train.Example().SerializeToString() == b""


def test_example_parses_tf_bytes_and_round_trips():
    ex = tf.train.Example.FromString(B(TF["example_bytes"]))
    feats = ex.features.feature
    assert sorted(feats) == ["big", "label", "score", "seq", "tags", "text"]
    assert feats["big"].int64_list.value == [-(2 ** 40) * 3]
    assert feats["score"].float_list.value == [float(np.float32(0.3)), -3.5]
    assert feats["tags"].bytes_list.value == [b"t0", b"t1", b"t2"]
    assert feats["text"].WhichOneof("kind") == "bytes_list"
    assert ex == fixture_example(3)
    other = tf.train.Example()
    other.ParseFromString(ex.SerializeToString())
    assert other == ex
    assert str(fixture_example(1).features.feature["score"]) == TF["example_text"]


def test_example_message_api():
    f = tf.train.Feature()
    assert f.WhichOneof("kind") is None and not f.HasField("float_list")
    _ = f.float_list  # reading does not set the oneof
    assert f.WhichOneof("kind") is None
    f.float_list.value.append(0.1)
    assert f.WhichOneof("kind") == "float_list"
    assert f.float_list.value == [float(np.float32(0.1))]  # stored as float32
    f.int64_list.value.extend([1, 2])  # setting another member clears the first
    assert f.WhichOneof("kind") == "int64_list" and not f.HasField("float_list")
    with pytest.raises(TypeError):
        f.int64_list.value.append(1.5)
    with pytest.raises(AttributeError):
        f.int64_list = tf.train.Int64List()
    feats = tf.train.Features()
    feats.feature["x"].bytes_list.value.append(b"v")
    ex = tf.train.Example()
    ex.features.CopyFrom(feats)
    assert ex.HasField("features") and ex.features.feature["x"].bytes_list.value == [b"v"]
    seq = tf.train.SequenceExample()
    seq.feature_lists.feature_list["t"].feature.add().int64_list.value.append(4)
    back = tf.train.SequenceExample.FromString(seq.SerializeToString())
    assert back.feature_lists.feature_list["t"].feature[0].int64_list.value == [4]
    with pytest.raises(ValueError):
        tf.train.Example(nope=1)


def test_decode_csv_errors_as_tf():
    cases = {"too_few": (["1"], [[0], [0]]),
             "required": (["1,"], [[0], tf.constant([], tf.int32)]),
             "bad_int": (["a,1"], [[0], [0]])}
    for name, (records, defaults) in cases.items():
        message = TF["csv_errors"][name][1].split("}} ", 1)[1].rsplit(" [Op:", 1)[0]
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            tf.io.decode_csv(records, defaults)
        assert message in str(e.value), name


def test_decode_csv_options():
    # values from TF 2.21: tf.io.decode_csv(['"a""b",1'], [[""], [0]]) etc.
    a, b = tf.io.decode_csv(['"a""b",1'], [[""], [0]])
    assert a.numpy().tolist() == [b'a"b'] and b.numpy().tolist() == [1]
    a, _ = tf.io.decode_csv(['"a""b",1'], [[""], [0]], use_quote_delim=False)
    assert a.numpy().tolist() == [b'"a""b"']
    a, b = tf.io.decode_csv("1;2", [[0], [0.0]], field_delim=";")
    assert a.shape == () and a.numpy() == 1 and b.numpy() == np.float32(2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Quote inside a string"):
        tf.io.decode_csv(['"a"b,1'], [[""], [0]])
    f = tf.function(lambda r: tf.io.decode_csv(r, [[0], [0.0]]),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    x, y = f(tf.constant([b"1,2", b"3,4.5"]))
    assert x.numpy().tolist() == [1, 3] and y.numpy().tolist() == [2.0, 4.5]


def test_decode_raw_as_tf():
    w = TF["decode_raw"]
    got = tf.io.decode_raw(tf.constant(strings(b"\x01\x00\x02\x00", b"\xff\xff\x00\x80")),
                           tf.int16)
    np.testing.assert_array_equal(got.numpy(), np.array(w["values"], w["dtype"]))
    # TF 2.21: tf.io.decode_raw(b"\x01\x00\x02\x00", tf.int16, little_endian=False) -> [256, 512]
    assert tf.io.decode_raw(b"\x01\x00\x02\x00", tf.int16,
                            little_endian=False).numpy().tolist() == [256, 512]
    assert tf.io.decode_raw(tf.constant([b"\x01", b"\x02\x03\x04"]), tf.uint8,
                            fixed_length=2).numpy().tolist() == [[1, 0], [2, 3]]


def test_read_write_file_eager_and_traced(tmp_path):
    path = str(tmp_path / "sub" / "f.bin")
    tf.io.write_file(path, b"\x00abc")
    assert open(path, "rb").read() == b"\x00abc"
    assert tf.io.read_file(path).numpy() == b"\x00abc"

    @tf.function
    def copy(src, dst):
        tf.io.write_file(dst, tf.io.read_file(src))
        return tf.io.read_file(dst)
    out = str(tmp_path / "g.bin")
    assert copy(tf.constant(path), tf.constant(out)).numpy() == b"\x00abc"
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.read_file(str(tmp_path / "missing"))


def test_gfile(tmp_path):
    g = tf.io.gfile
    d = str(tmp_path / "a" / "b")
    g.makedirs(d)
    assert g.isdir(d) and g.exists(d)
    with g.GFile(os.path.join(d, "x.txt"), "w") as f:
        f.write("one\ntwo\n")
    with g.GFile(os.path.join(d, "x.txt"), "rb") as f:
        assert f.read() == b"one\ntwo\n"
    assert list(g.GFile(os.path.join(d, "x.txt"))) == ["one\n", "two\n"]
    g.copy(os.path.join(d, "x.txt"), os.path.join(d, "y.txt"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        g.copy(os.path.join(d, "x.txt"), os.path.join(d, "y.txt"))
    g.rename(os.path.join(d, "y.txt"), os.path.join(d, "z.txt"))
    assert g.listdir(d) == ["x.txt", "z.txt"]
    assert g.glob(os.path.join(d, "*.txt")) == [os.path.join(d, "x.txt"),
                                                 os.path.join(d, "z.txt")]
    walked = list(g.walk(str(tmp_path)))
    assert walked[0] == (str(tmp_path), ["a"], [])
    g.remove(os.path.join(d, "z.txt"))
    assert not g.exists(os.path.join(d, "z.txt"))
    with pytest.raises(tf.errors.NotFoundError):
        g.GFile(os.path.join(d, "nope"))
    with pytest.raises(tf.errors.NotFoundError):
        g.remove(os.path.join(d, "nope"))
    g.rmtree(str(tmp_path / "a"))
    assert not g.exists(d)


def test_parse_example_argument_errors():
    with pytest.raises(ValueError, match="serialized must be a vector"):
        tf.io.parse_example(b"", {"x": tf.io.VarLenFeature(tf.int64)})
    with pytest.raises(ValueError, match="unsupported feature spec"):
        tf.io.parse_single_example(b"", {"x": 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="reshape"):
        tf.io.parse_single_example(b"", {"x": tf.io.FixedLenFeature([3], tf.int64,
                                                                    default_value=0)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example"):
        tf.io.parse_single_example(b"\xff\xff", {"a": tf.io.VarLenFeature(tf.int64)})
    # an empty record is an Example without features: defaults apply
    out = tf.io.parse_single_example(b"", {"x": tf.io.FixedLenFeature(
        [1, 2], tf.int64, default_value=[[5, 6]])})
    assert out["x"].numpy().tolist() == [[5, 6]]
