"""Engine-level hardening (issue #8): debug checks in every thread and in forward mode,
disposed gradient targets, no NumPy RuntimeWarnings reaching users."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.context import ctx


@pytest.fixture
def debug():
    tf.config.set_debug(True)
    try:
        yield
    finally:
        tf.config.set_debug(False)


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out


def test_debug_checks_threads_started_after_it_was_switched_on(debug):
    out = _in_thread(lambda: tf.math.log(tf.constant(-1.0)))
    assert isinstance(out.get("error"), tf.errors.InvalidArgumentError)
    assert "NaN in output 0 of Log" in str(out["error"])


def test_debug_checks_threads_that_existed_before_it_was_switched_on():
    started, go, out = threading.Event(), threading.Event(), {}

    def run():
        ctx.active  # this thread's context exists before set_debug
        started.set()
        go.wait()
        try:
            tf.sqrt(tf.constant(-1.0))
        except Exception as e:  # noqa: BLE001
            out["error"] = e
    t = threading.Thread(target=run)
    t.start()
    started.wait()
    tf.config.set_debug(True)
    try:
        go.set()
        t.join()
    finally:
        tf.config.set_debug(False)
    assert "NaN in output 0 of Sqrt" in str(out.get("error"))


def test_debug_off_again_in_every_thread():
    tf.config.set_debug(True)
    tf.config.set_debug(False)
    out = _in_thread(lambda: (tf.math.log(tf.constant(-1.0)).numpy(), ctx.active))
    assert np.isnan(out["value"][0]) and out["value"][1] is False
    assert not ctx.active


def test_forward_mode_names_the_op_whose_jvp_rule_made_the_inf(debug):
    x = tf.constant(0.0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"in the JVP rule of Sqrt \(forward-mode pass\)") as err:
        with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)):
            tf.sqrt(x)
    assert "test_hardening.py" in str(err.value)  # the user's line of the forward op
    assert not ctx.accs and not ctx.rule_of


def test_backward_pass_names_the_op_whose_vjp_rule_made_the_inf(debug):
    x = tf.constant(0.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sqrt(x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="backward rule of Sqrt"):
        tape.gradient(y, x)


def test_gradient_of_a_disposed_target_raises():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = x * 3.0
    tf.dispose(y)
    with pytest.raises(tf.errors.DisposedError, match="target"):
        tape.gradient(y, x)
    assert tape.gradient(z, x).numpy() == 3.0  # the tape is still usable


def test_kernels_raise_no_numpy_runtime_warnings_for_users():
    # Run as a user would (pytest installs warning filters of its own): log(0), 1/0,
    # sqrt(-1), inf - inf and their gradients give inf/nan silently, as in TensorFlow,
    # while the user's own NumPy code keeps its warnings.
    code = textwrap.dedent("""
        import numpy as np, tapeflow as tf
        x = tf.constant([0.0, -1.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            ys = [tf.math.log(x), 1.0 / x, tf.sqrt(x), tf.exp(x * 1e4) - tf.exp(x * 1e4)]
            y = tf.add_n([tf.reduce_sum(v) for v in ys])
        tape.gradient(y, x)
        np.log(np.zeros(1))  # the user's own: warns
    """)
    done = subprocess.run([sys.executable, "-W", "default", "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if "RuntimeWarning" in ln]
    assert len(lines) == 1 and "<string>" in lines[0], done.stderr
