"""Diagnostics of traced functions (issue 17 §1): errors raised while tracing name the
user's code, and debug mode switched on after tracing still names the user's line."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.context import ctx


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return n
    raise AssertionError(marker)


@pytest.fixture
def debug_mode():
    yield lambda on: tf.config.set_debug(on)
    tf.config.set_debug(False)


def test_shape_error_while_tracing_names_the_users_line():
    @tf.function
    def f(x):
        return tf.reshape(x, [3, 3])  # reshape-here
    with pytest.raises(tf.errors.InvalidArgumentError) as err:
        f(tf.ones([4]))
    text = str(err.value)
    assert text.startswith("in user code:")
    assert f'File "{__file__}", line {_line_of("# reshape-here")}, in f' in text
    assert "return tf.reshape(x, [3, 3])" in text
    assert text.rstrip().endswith("InvalidArgumentError: Reshape: cannot reshape a tensor of "
                                  "shape [4] (4 elements) into shape [3, 3]")
    assert ctx.graph is None


def test_errors_in_converted_loops_and_branches_name_the_line_and_the_function():
    @tf.function
    def loop(x):
        for _ in tf.range(3):
            x = x + tf.ones([5])  # loop-here
        return x

    @tf.function
    def branch(x):
        if tf.reduce_sum(x) > 0:
            x = tf.matmul(x, x)  # branch-here
        return x
    for fn, marker, name in ((loop, "# loop-here", "loop"), (branch, "# branch-here",
                                                               "branch")):
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            fn(tf.ones([4]))
        assert f'line {_line_of(marker)}, in {name}\n' in str(err.value)
        assert "loop_body" not in str(err.value) and "if_true" not in str(err.value)


def test_nested_functions_are_named_once_and_errors_keep_their_type():
    @tf.function
    def inner(x):
        raise KeyError("no such feature")  # inner-raise

    @tf.function
    def outer(x):
        return inner(x) * 2.0  # outer-call
    with pytest.raises(KeyError) as err:
        outer(tf.ones([2]))
    text = str(err.value)
    assert text.count("in user code:") == 1
    assert text.index(f"line {_line_of('# outer-call')}") < text.index(
        f"line {_line_of('# inner-raise')}")


def test_debug_mode_switched_on_after_tracing_names_the_forward_line(debug_mode):
    @tf.function
    def f(x):
        y = tf.math.log(x)  # log-here
        return y * 2.0

    @tf.function
    def g(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sqrt(x)  # sqrt-here
        return tape.gradient(y, x)
    np.testing.assert_allclose(f(tf.constant([1.0])).numpy(), [0.0])
    np.testing.assert_allclose(g(tf.constant([4.0])).numpy(), [0.25])
    debug_mode(True)  # after both were traced
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"NaN in output 0 of Log .*created at {__file__}:"
                             f"{_line_of('# log-here')}"):
        f(tf.constant([-1.0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"backward rule of Sqrt .*created at {__file__}:"
                             f"{_line_of('# sqrt-here')}"):
        g(tf.constant([0.0]))
    assert f.experimental_get_tracing_count() == 1 and g.experimental_get_tracing_count() == 1
