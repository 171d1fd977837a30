"""tf.summary: the event files are read back with TensorBoard's own reader (the `tensorboard`
package of the test extra) and their values checked against NumPy."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
from matplotlib import image as mpimg
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util

import tapeflow as tf
from tapeflow.summary import event_file


def read(logdir) -> dict:
    """{tag: [(step, value, plugin), ...]} as TensorBoard loads the directory."""
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        out[tag] = [(e.step, tensor_util.make_ndarray(e.tensor_proto), plugin)
                    for e in acc.Tensors(tag)]
    return out


def test_crc32c_and_record_framing():
    assert event_file.crc32c(b"123456789") == 0xE3069283  # the standard check value (_core/wire.py)
    assert event_file.crc32c(b"") == 0
    rec = event_file.record(b"abc")
    assert len(rec) == 8 + 4 + 3 + 4 and rec[12:15] == b"abc"
    assert int.from_bytes(rec[:8], "little") == 3


def test_scalars_histograms_images_and_text_read_back_with_tensorboard(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    data = np.array([0.05, 0.3, 0.31, 0.62, 0.9, 0.99, 1.0])
    images = np.random.default_rng(0).random((4, 3, 5, 3)).astype(np.float32)
    with writer.as_default(step=7):
        assert bool(tf.summary.scalar("loss", 0.25))
        assert bool(tf.summary.scalar("loss", tf.constant(0.125), step=8))
        assert bool(tf.summary.histogram("w", data, buckets=4))
        assert bool(tf.summary.image("img", images, max_outputs=2))
        assert bool(tf.summary.text("note", "hello *world*"))
    writer.close()
    got = read(tmp_path)
    assert [(s, float(v), p) for s, v, p in got["loss"]] == [(7, 0.25, "scalars"),
                                                             (8, 0.125, "scalars")]
    (step, hist, plugin), = got["w"]
    assert (step, plugin, hist.shape) == (7, "histograms", (4, 3))
    edges = np.linspace(0.05, 1.0, 5)
    np.testing.assert_allclose(hist[:, 0], edges[:-1])
    np.testing.assert_allclose(hist[:, 1], edges[1:])
    assert hist[:, 2].tolist() == np.histogram(data, bins=edges)[0].tolist() == [1, 2, 1, 3]
    (step, strings, plugin), = got["img"]
    assert plugin == "images" and strings[:2].tolist() == [b"5", b"3"] and len(strings) == 4
    decoded = mpimg.imread(io.BytesIO(strings[2]), format="png")  # floats in [0, 1]
    expected = np.floor(np.clip(images[0] * 255.5, 0, 255)) / 255.0
    np.testing.assert_allclose(decoded, expected, atol=1e-6)
    (step, text, plugin), = got["note"]
    assert plugin == "text" and text.item() == b"hello *world*"
    names = os.listdir(tmp_path)
    assert len(names) == 1 and names[0].startswith("events.out.tfevents.")


def test_histogram_edge_cases():
    one = event_file.histogram_buckets(np.full(5, 2.5), 3)
    assert one.tolist() == [[2.5, 2.5, 0], [2.5, 2.5, 0], [2.5, 2.5, 5]]
    assert event_file.histogram_buckets(np.zeros(0), 3).tolist() == [[0, 0, 0]] * 3
    assert event_file.histogram_buckets(np.arange(10.0)).shape == (30, 3)
    assert event_file.histogram_buckets(np.arange(10.0))[:, 2].sum() == 10


def test_summaries_inside_a_traced_function_run_at_every_call_in_order(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train(x):
        for i in tf.range(3):
            step.assign_add(1)
            tf.summary.scalar("value", x * tf.cast(i, tf.float32), step=step)
        tf.summary.histogram("x", tf.fill([4], x), step=step)
        return x * 2  # nothing reads the summaries' results: they must not be pruned

    with writer.as_default():
        train(tf.constant(2.0))
        train(tf.constant(3.0))
    writer.flush()
    assert train.experimental_get_tracing_count() == 1
    got = read(tmp_path)
    assert [(s, float(v)) for s, v, _ in got["value"]] == \
        [(1, 0.0), (2, 2.0), (3, 4.0), (4, 0.0), (5, 3.0), (6, 6.0)]
    assert [s for s, _, _ in got["x"]] == [3, 6]


def test_default_step_and_no_writer(tmp_path):
    assert not bool(tf.summary.scalar("nowhere", 1.0))  # no default writer: not written
    writer = tf.summary.create_file_writer(str(tmp_path / "a"))
    with writer.as_default():
        with pytest.raises(ValueError, match="no step set"):
            tf.summary.scalar("x", 1.0)
        tf.summary.experimental.set_step(4)
        try:
            assert tf.summary.experimental.get_step() == 4
            tf.summary.scalar("x", 1.0)
        finally:
            tf.summary.experimental.set_step(None)
        with pytest.raises(ValueError, match="rank 0"):
            tf.summary.scalar("v", [1.0, 2.0], step=0)
        with pytest.raises(ValueError, match=r"\[k, h, w, c\]"):
            tf.summary.image("i", np.zeros((3, 3)), step=0)
        with pytest.raises(TypeError, match="strings"):
            tf.summary.text("t", 3, step=0)
    tf.summary.flush(writer)
    assert [s for s, _, _ in read(tmp_path / "a")["x"]] == [4]
    with tf.summary.create_noop_writer().as_default(step=0):
        assert not bool(tf.summary.scalar("x", 1.0))
    closed = tf.summary.create_file_writer(str(tmp_path / "b"))
    closed.close()
    with closed.as_default(step=0):
        assert not bool(tf.summary.scalar("x", 1.0))


def test_negative_and_large_steps_round_trip(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        tf.summary.scalar("s", 1.0, step=-3)
        tf.summary.scalar("s", 2.0, step=2**40)
    writer.close()
    assert [s for s, _, _ in read(tmp_path)["s"]] == [-3, 2**40]


def test_record_if(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in range(6):
            with tf.summary.record_if(step % 3 == 0):
                tf.summary.scalar("every_third", float(step), step=step)
            tf.summary.experimental.set_step(step)
            try:
                with tf.summary.record_if(lambda: tf.summary.experimental.get_step() > 3):
                    assert tf.summary.should_record_summaries() == (step > 3)
                    tf.summary.scalar("late", float(step))
            finally:
                tf.summary.experimental.set_step(None)
    writer.close()
    got = read(tmp_path)
    assert [s for s, _, _ in got["every_third"]] == [0, 3]
    assert [s for s, _, _ in got["late"]] == [4, 5]
