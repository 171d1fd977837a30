"""TFRecord files and tf.train.Example records written by real TensorFlow (fixtures from
tests/data/fixtures/make_tfrecords.py) read with tapeflow: record bytes, parsed features
(single, batched, inside Dataset.map), compression, CRC errors, TextLineDataset; and
tapeflow's files read back (the TensorFlow side of that direction:
tests/data/fixtures/verify_tfrecords_in_tf.py)."""
import base64
import json
import os
import struct

import numpy as np
import pytest

import tapeflow as tf

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(HERE, "tfrecords.json")) as _f:
    TF = json.load(_f)
RECORDS = [base64.b64decode(r) for r in TF["records"]]

FEATURES = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "score": tf.io.FixedLenFeature([2], tf.float32),
    "big": tf.io.FixedLenFeature([1], tf.int64),
    "tags": tf.io.VarLenFeature(tf.string),
    "seq": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True, default_value=-1),
    "missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[7.0, 8.0]),
}


def expected(d):
    if "b64" in d:
        out = np.empty(len(d["b64"]), dtype=object)
        out[:] = [base64.b64decode(x) for x in d["b64"]]
        return out.reshape(d["shape"])
    return np.array(d["values"], dtype=d["dtype"]).reshape(d["shape"])


def check_features(got: dict, want: dict):
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        g = got[k]
        if "indices" in w:
            assert isinstance(g, tf.SparseTensor), k
            np.testing.assert_array_equal(g.indices.numpy(), np.array(w["indices"]).reshape(
                -1, len(w["dense_shape"])))
            np.testing.assert_array_equal(g.values.numpy(), expected(w["values"]))
            np.testing.assert_array_equal(g.dense_shape.numpy(), w["dense_shape"])
        else:
            e = expected(w)
            a = np.asarray(g.numpy(), dtype=object if g.dtype == tf.string else None)
            assert a.dtype == e.dtype and a.shape == e.shape, k
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("name,comp", [("examples.tfrecord", None),
                                       ("examples_gzip.tfrecord", "GZIP"),
                                       ("examples_zlib.tfrecord", "ZLIB")])
def test_tf_written_records_read_back(name, comp):
    ds = tf.data.TFRecordDataset(os.path.join(HERE, name), compression_type=comp)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert [r.numpy() for r in ds] == RECORDS


def test_parse_single_example_matches_tf():
    check_features(tf.io.parse_single_example(RECORDS[3], FEATURES), TF["single3"])


def test_parse_example_batched_matches_tf():
    check_features(tf.io.parse_example(tf.constant(RECORDS), FEATURES), TF["batch"])


def test_parse_in_dataset_map_batched_matches_tf():
    ds = tf.data.TFRecordDataset(os.path.join(HERE, "examples.tfrecord")).batch(5)
    (got,) = list(ds.map(lambda s: tf.io.parse_example(s, FEATURES)))
    check_features(got, TF["batch"])


def test_parse_single_example_traced_in_map():
    feats = {k: FEATURES[k] for k in ("text", "label", "score", "tags")}
    ds = tf.data.TFRecordDataset(os.path.join(HERE, "examples_gzip.tfrecord"), "GZIP")
    got = list(ds.map(lambda s: tf.io.parse_single_example(s, feats)))
    assert len(got) == 5
    assert got[3]["text"].numpy() == "sentence 3 café".encode()
    np.testing.assert_array_equal(got[3]["tags"].values.numpy(),
                                  np.array([b"t0", b"t1", b"t2"], dtype=object))
    np.testing.assert_array_equal(
        np.stack([g["score"].numpy() for g in got]), expected(TF["batch"]["score"]))


@pytest.mark.parametrize("case", sorted(TF["single_errors"]))
def test_single_example_errors_as_tf(case):
    _, message = TF["single_errors"][case]
    feats = {"missing_required": {"nope": tf.io.FixedLenFeature([], tf.float32)},
             "wrong_type": {"label": tf.io.FixedLenFeature([], tf.float32)},
             "wrong_count": {"score": tf.io.FixedLenFeature([3], tf.float32)}}[case]
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.io.parse_single_example(RECORDS[0], feats)
    core = message.split("}} ", 1)[1].rsplit(" [Op:", 1)[0]
    assert core in str(e.value)


@pytest.mark.parametrize("case", sorted(TF["batch_errors"]))
def test_batch_example_errors_as_tf(case):
    _, message = TF["batch_errors"][case]
    feats = {"missing_required": {"tags": tf.io.FixedLenFeature([1], tf.string)},
             "wrong_count": {"score": tf.io.FixedLenFeature([1], tf.float32)}}[case]
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.io.parse_example(RECORDS[:2], feats)
    core = message.split("}} ", 1)[1].rsplit(" [Op:", 1)[0]
    assert core.split(" but output shape")[0] in str(e.value)


def test_corrupted_record_raises_data_loss(tmp_path):
    data = bytearray(open(os.path.join(HERE, "examples.tfrecord"), "rb").read())
    data[20] ^= 0x01  # inside the first record's data: its data CRC no longer matches
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(str(path)))
    data = bytearray(open(os.path.join(HERE, "examples.tfrecord"), "rb").read())
    data[0] ^= 0x01  # the length: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(str(path)))
    path.write_bytes(bytes(data[:10]))  # truncated header
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(str(path)))


def test_framing_by_hand(tmp_path):
    """length, masked CRC-32C of the length, data, masked CRC-32C of the data; CRC-32C of
    b"123456789" is 0xE3069283 (the standard check value) and the mask is LevelDB's."""
    path = str(tmp_path / "one.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(b"123456789")
    raw = open(path, "rb").read()
    assert struct.unpack("<Q", raw[:8])[0] == 9 and raw[12:21] == b"123456789"
    crc = 0xE3069283
    masked = ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert struct.unpack("<I", raw[21:25])[0] == masked and len(raw) == 25


@pytest.mark.parametrize("comp", ["", "GZIP", "ZLIB"])
def test_writer_round_trip_and_compression_options(tmp_path, comp):
    path = str(tmp_path / "w.tfrecord")
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=comp)) as w:
        for r in RECORDS:
            w.write(r)
        w.flush()
    assert [r.numpy() for r in tf.data.TFRecordDataset([path], comp)] == RECORDS
    assert list(tf.io.tf_record_iterator(path, comp)) == RECORDS
    if comp == "GZIP":
        assert open(path, "rb").read(2) == b"\x1f\x8b"


def test_interleaved_reads(tmp_path):
    paths = []
    for f in range(3):
        paths.append(str(tmp_path / f"f{f}.tfrecord"))
        with tf.io.TFRecordWriter(paths[-1]) as w:
            for r in range(f + 1):
                w.write(b"%d:%d" % (f, r))
    seq = [r.numpy() for r in tf.data.TFRecordDataset(paths)]
    assert seq == [b"0:0", b"1:0", b"1:1", b"2:0", b"2:1", b"2:2"]
    # TF 2.21 gives these orders for [r.numpy() for r in tf.data.TFRecordDataset(paths,
    # num_parallel_reads=n)] over the same files
    inter = [r.numpy() for r in tf.data.TFRecordDataset(paths, num_parallel_reads=2)]
    assert inter == [b"0:0", b"1:0", b"1:1", b"2:0", b"2:1", b"2:2"]
    sizes, paths = [3, 1, 2, 2], []
    for f, n in enumerate(sizes):
        paths.append(str(tmp_path / f"g{f}.tfrecord"))
        with tf.io.TFRecordWriter(paths[-1]) as w:
            for r in range(n):
                w.write(b"%d:%d" % (f, r))
    got = [r.numpy() for r in tf.data.TFRecordDataset(paths, num_parallel_reads=2)]
    assert got == [b"0:0", b"1:0", b"0:1", b"0:2", b"2:0", b"2:1", b"3:0", b"3:1"]
    got = [r.numpy() for r in tf.data.TFRecordDataset(paths, num_parallel_reads=3)]
    assert got == [b"0:0", b"1:0", b"2:0", b"0:1", b"2:1", b"0:2", b"3:0", b"3:1"]
    names = tf.data.Dataset.from_tensor_slices(paths[:2])
    assert [r.numpy() for r in tf.data.TFRecordDataset(names)] == [
        b"0:0", b"0:1", b"0:2", b"1:0"]


def test_text_line_dataset_and_csv_as_tf():
    path = os.path.join(HERE, "data.csv")
    lines = [r.numpy() for r in tf.data.TextLineDataset(path).skip(1)]
    assert lines == [base64.b64decode(x) for x in TF["csv_lines"]]
    cols = tf.io.decode_csv(tf.constant(lines), [[0], [""], [0.5], tf.constant([-1], tf.int64)],
                            na_value="NA")
    for c, w in zip(cols, TF["csv"]):
        np.testing.assert_array_equal(c.numpy(), expected(w))
        assert c.numpy().dtype == expected(w).dtype
    sel = tf.io.decode_csv(tf.constant(lines), [[0], [0.0]], select_cols=[0, 2], na_value="NA")
    for c, w in zip(sel, TF["csv_select"]):
        np.testing.assert_array_equal(c.numpy(), expected(w))


def test_text_lines_crlf_gzip_and_no_final_newline(tmp_path):
    import gzip
    p = tmp_path / "t.txt.gz"
    with gzip.open(p, "wb") as f:
        f.write(b"a\r\nb\n\nlast")
    got = [r.numpy() for r in tf.data.TextLineDataset(str(p), compression_type="GZIP")]
    assert got == [b"a", b"b", b"", b"last"]


def test_issue_pipeline_in_miniature(tmp_path):
    """Strings and labels written to a TFRecord file, read back through
    TFRecordDataset.map(parse_single_example).batch."""
    texts = [b"good movie", b"bad film", "très bien".encode(), b""]
    labels = [1, 0, 1, 0]
    path = str(tmp_path / "text.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for t, y in zip(texts, labels):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[t])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}))
            w.write(ex.SerializeToString())
    spec = {"text": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        d = tf.io.parse_single_example(record, spec)
        return d["text"], d["label"]

    batches = list(tf.data.TFRecordDataset(path).map(parse).batch(3))
    assert len(batches) == 2
    got_t = np.concatenate([b[0].numpy() for b in batches]).tolist()
    got_y = np.concatenate([b[1].numpy() for b in batches]).tolist()
    assert got_t == texts and got_y == labels
    assert batches[0][1].dtype == tf.int64 and batches[0][0].shape == (3,)


def test_missing_file_raises_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError):
        list(tf.data.TFRecordDataset(str(tmp_path / "nope.tfrecord")))


def test_text_classifier_trains_from_tfrecord(tmp_path):
    """The issue's pipeline: TFRecord of (text, label) Examples -> TFRecordDataset ->
    parse_single_example -> batch -> TextVectorization -> Embedding -> pooling -> Dense."""
    path = str(tmp_path / "reviews.tfrecord")
    texts = [b"good great fine", b"bad awful poor", b"great good", b"poor bad"] * 4
    labels = [1, 0, 1, 0] * 4
    with tf.io.TFRecordWriter(path) as w:
        for t, y in zip(texts, labels):
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[t])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}))
                .SerializeToString())
    spec = {"text": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, spec)).map(lambda d: (d["text"], d["label"]))
    vec = tf.keras.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vec.adapt(ds.map(lambda t, y: t))
    assert sorted(vec.get_vocabulary()[2:]) == sorted(
        ["good", "great", "fine", "bad", "awful", "poor"])
    train = ds.batch(8).map(lambda t, y: (vec(t), y))
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Embedding(20, 8),
                                 tf.keras.layers.GlobalAveragePooling1D(),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train, epochs=10, verbose=0).history
    assert history["loss"][-1] < 0.1 * history["loss"][0]
    assert history["accuracy"][-1] == 1.0
