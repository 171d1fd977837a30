"""tape.explain() and config.explain_none_gradients (API §8.1, issue 17 §1): answers that
name the break, the op and the user's line, for every common cause."""
import logging
import re
import warnings

import numpy as np
import pytest

import tapeflow as tf

HERE = re.escape(__file__)


@pytest.fixture
def explaining():
    tf.config.explain_none_gradients(True)
    yield
    tf.config.explain_none_gradients(False)


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return n
    raise AssertionError(marker)


def test_integer_cast_of_a_variable_names_the_cast_and_the_users_line():
    v = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.cast(tf.cast(v, tf.int32), tf.float32) * 3.0  # int-cast-here
    assert tape.gradient(y, v) is None
    report = tape.explain(y, v)
    assert f"Cast at {__file__}:{_line_of('# int-cast-here')}" in report
    assert "int32" in report and "not computed on this tape" not in report


def test_integer_variable_source_is_named_and_gradient_warns_as_tensorflow(caplog):
    iv = tf.Variable(2)
    with tf.GradientTape() as tape:
        y = tf.cast(iv, tf.float32) * 3.0
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        assert tape.gradient(y, iv) is None  # gradient-call
    [record] = caplog.records
    assert "must be floating" in record.getMessage() and "int32" in record.getMessage()
    assert record.getMessage().startswith(f"{__file__}:{_line_of('# gradient-call')}")
    report = tape.explain(y, iv)
    assert "integer/boolean variable (dtype int32)" in report and "tf.Variable(2.0)" in report


def test_numpy_round_trip_of_a_variable_does_not_advise_making_it_a_variable():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.constant(v.numpy()) * 2.0)  # numpy-here
        z = tf.reduce_sum(np.asarray(v) * tf.constant(2.0))
    report = tape.explain(y, v)
    assert "is a trainable tf.Variable" in report and "make it a trainable" not in report
    assert f"NumPy at {__file__}:{_line_of('# numpy-here')}" in report
    assert "NumPy" in tape.explain(z, v)


def test_numpy_round_trip_of_a_watched_tensor_names_the_line():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x * 2.0
        y = tf.reduce_sum(tf.constant(h.numpy()) * 2.0)  # tensor-numpy
    assert f"NumPy at {__file__}:{_line_of('# tensor-numpy')}" in tape.explain(y, x)


def test_a_path_with_a_gradient_says_the_gradient_is_not_none():
    v = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.sin(v) * 3.0
    report = tape.explain(y, v)
    assert report.startswith("The gradient is not None") and "Sin" in report
    assert "returned no gradient" not in report
    assert float(tape.gradient(y, v)) == pytest.approx(3.0 * np.cos(2.0))
    # a path that is connected but whose gradient functions give None says that instead
    x = tf.constant(1.0)

    @tf.custom_gradient
    def blocked(t):
        return t * 1.0, lambda dy: None
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = blocked(x) * 2.0
    assert tape.gradient(y, x) is None
    assert "returned no gradient" in tape.explain(y, x)


def test_stop_gradient_names_the_users_line_without_debug_mode():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.stop_gradient(x) * 3.0)  # stop-here
    assert f"stop_gradient at {__file__}:{_line_of('# stop-here')}" in tape.explain(y, x)


def test_explain_after_gradient_on_a_one_shot_tape():
    v = tf.Variable(2.0)
    w = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = tf.cast(tf.cast(v, tf.int32), tf.float32) * w  # one-shot-cast
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None and float(gw) == 2.0
    report = tape.explain(y, v)
    assert f"Cast at {__file__}:{_line_of('# one-shot-cast')}" in report
    assert tape.explain(y, w).startswith("The gradient is not None")
    light = tape._spent[0]  # what was kept: names, ids, sites; no backward functions
    assert light is not None and all(e.backward is None for e in light.op_tape.values())
    other = tf.Variable(5.0)
    assert "persistent=True" in tape.explain(y, other)  # not a source of that call


def test_a_one_shot_tape_keeps_nothing_when_every_gradient_exists():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0
    assert tape._spent[0] is None


def test_explain_none_gradients_reports_once_on_one_channel(caplog, explaining):
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.cast(tf.cast(v, tf.int32), tf.float32) * 3.0  # logged-cast
    with caplog.at_level(logging.WARNING, logger="tapeflow"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tape.gradient(y, v) is None  # logged-call
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith(f"{__file__}:{_line_of('# logged-call')}")
    assert f"Cast at {__file__}:{_line_of('# logged-cast')}" in message
    assert message.count("Cast at") == 1


def test_target_computed_outside_the_tape():
    x = tf.constant(1.0)
    y = x * 2.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = x * 3.0
    assert z is not None
    assert "target was not computed on this tape" in tape.explain(y, x)


def test_non_trainable_variable_is_told_to_be_watched():
    v = tf.Variable(1.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * 2.0
    assert "trainable=False" in tape.explain(y, v) and "tape.watch(v)" in tape.explain(y, v)


def test_events_cost_is_bounded_and_events_hold_no_tensors():
    x = tf.constant(np.ones(4))
    with tf.GradientTape() as tape:
        tape.watch(x)
        for _ in range(600):
            tf.cast(x * 2.0, tf.int32)
    events = tape._tape.events
    assert len(events) == 256
    assert all(isinstance(f, (str, int, frozenset, type(None))) for e in events for f in e)
