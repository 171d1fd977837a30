"""tf.function behaviours TensorFlow code relies on (issue 17 §2), each checked on values."""
import logging
import sys
import threading
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core.context import ctx


# ------------------------------------------------------------------ variables in traces


class _Lazy(tf.Module):
    """The lazy build of TensorFlow's core guides: variables made on the first call."""

    def __init__(self):
        super().__init__()
        self.built = False

    @tf.function
    def __call__(self, x):
        if not self.built:
            self.w = tf.Variable(tf.random.uniform([2, 3], minval=1.0, maxval=2.0))
            self.b = tf.Variable(tf.random.normal([3], seed=7))
            self.built = True
        return tf.matmul(x, self.w) + self.b


def test_random_initial_value_of_a_variable_made_in_a_traced_function():
    m = _Lazy()
    y = m(tf.ones([1, 2]))
    w, b = m.w.numpy(), m.b.numpy()
    assert w.shape == (2, 3) and np.all((w >= 1.0) & (w < 2.0))
    np.testing.assert_allclose(y.numpy(), w.sum(0, keepdims=True) + b, rtol=1e-6)
    y2 = m(tf.ones([1, 2]) * 2.0)   # the same variables, not new draws
    np.testing.assert_allclose(y2.numpy(), 2.0 * w.sum(0, keepdims=True) + b, rtol=1e-6)
    other = _Lazy()
    other(tf.ones([1, 2]))
    assert not np.array_equal(other.w.numpy(), w)  # each model draws its own values


def test_a_new_variable_on_every_call_raises_tensorflows_value_error():
    @tf.function
    def f(x):
        return tf.Variable(1.0) + x
    with pytest.raises(ValueError, match="only supports singleton tf.Variables created on "
                                         "the first call"):
        f(tf.constant(1.0))
    assert ctx.graph is None


def test_variables_of_a_class_built_once_are_fine_and_traced_twice_only_at_creation():
    traces = []

    class Counter:
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self):
            traces.append(1)
            if self.v is None:
                self.v = tf.Variable(0)
            self.v.assign_add(1)
            return self.v.read_value()

    c = Counter()
    assert [int(c()) for _ in range(3)] == [1, 2, 3]
    assert len(traces) == 2  # the trace and TF's check that no new variable is made


# ------------------------------------------------------------------ calling conventions


@tf.function
def _factorial(n):
    if n <= 1:
        return tf.constant(1)
    return n * _factorial(n - 1)


def test_module_level_function_calling_itself_by_name():
    assert int(_factorial(5)) == 120
    assert int(_factorial(1)) == 1


def test_input_signature_converts_numpy_arrays_and_lists_to_the_spec_dtype():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def square(x):
        return x * x
    for value in (np.array([1.5, 2.0]), [1.5, 2.0], [1, 2], np.array([1, 2])):
        out = square(value)
        assert out.dtype == tf.float32
        np.testing.assert_allclose(out.numpy(), np.square(np.asarray(value, np.float32)))
    assert square.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="float32"):
        square(tf.constant([1.0], tf.float64))   # a tensor keeps its dtype, as in TF
    with pytest.raises(ValueError, match="shape"):
        square([[1.0]])

    @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
    def twice(x):
        return x * 2
    np.testing.assert_array_equal(twice(np.array([1.7, 2.2])).numpy(), [2, 4])  # NumPy casts
    with pytest.raises(TypeError, match="int32"):
        twice([1.5, 2.0])  # a list of floats does not convert to int32


def test_a_returned_python_number_is_a_tensor():
    @tf.function
    def f():
        return 3, {"half": 0.5, "flag": True, "none": None}
    n, d = f()
    assert isinstance(n, tf.Tensor) and n.dtype == tf.int32 and int(n) == 3
    assert d["half"].dtype == tf.float32 and float(d["half"]) == 0.5
    assert d["flag"].dtype == tf.bool and bool(d["flag"]) and d["none"] is None


def test_a_generator_function_raises_type_error_at_the_call():
    @tf.function
    def gen(x):
        yield x
    with pytest.raises(TypeError, match="generator"):
        gen(tf.constant(1.0))
    assert ctx.graph is None


# ------------------------------------------------------------------ autograph


def test_while_on_a_variable_updated_in_the_body():
    @tf.function
    def drain(v):
        while v > 0:
            v.assign_sub(1.0)
        return v.read_value()
    v = tf.Variable(3.5)
    assert float(drain(v)) == -0.5 and float(v.numpy()) == -0.5
    v.assign(2.0)
    assert float(drain(v)) == 0.0


def test_tensor_array_written_in_a_for_loop_with_a_tensor_decided_break():
    @tf.function
    def until_large(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(tf.shape(x)[0]):
            if x[i] > 2.0:
                break
            ta = ta.write(i, x[i] * 10.0)
        return ta.stack()
    np.testing.assert_array_equal(until_large(tf.constant([1.0, 2.0, 3.0, 1.0])).numpy(),
                                  [10.0, 20.0])
    np.testing.assert_array_equal(until_large(tf.constant([0.5, 1.5, 0.0, 1.0])).numpy(),
                                  [5.0, 15.0, 0.0, 10.0])
    assert until_large(tf.constant([5.0, 1.0])).numpy().shape == (0,)

    @tf.function
    def maybe_write(x):
        ta = tf.TensorArray(tf.float32, size=1)
        if x[0] > 0:
            ta = ta.write(0, x)
        return ta.stack()
    np.testing.assert_array_equal(maybe_write(tf.constant([1.0, 2.0])).numpy(), [[1.0, 2.0]])
    np.testing.assert_array_equal(maybe_write(tf.constant([-1.0, 2.0])).numpy(), [[0.0, 0.0]])


# ------------------------------------------------------------------ companions


def test_py_function_as_a_decorator():
    @tf.py_function(Tout=tf.float32)
    def biggest_times(x):
        return x * float(x.numpy().max())

    np.testing.assert_array_equal(biggest_times(tf.constant([1.0, 3.0])).numpy(), [3.0, 9.0])

    @tf.function
    def f(x):
        return biggest_times(x) + 1.0
    np.testing.assert_array_equal(f(tf.constant([2.0, 1.0])).numpy(), [5.0, 3.0])
    assert biggest_times.__name__ == "biggest_times"


def test_init_scope_runs_eagerly_once_per_trace_and_pauses_tapes():
    runs = []

    @tf.function
    def f(x):
        with tf.init_scope():
            assert tf.executing_eagerly()
            table = tf.range(3.0) * 2.0
            runs.append(table.numpy().tolist())
        return x + table
    np.testing.assert_array_equal(f(tf.constant(1.0)).numpy(), [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(f(tf.constant(2.0)).numpy(), [2.0, 4.0, 6.0])
    assert runs == [[0.0, 2.0, 4.0]] and ctx.graph is None

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.init_scope():
            hidden = x * x  # not recorded: the tape is paused
        y = x * 3.0 + hidden
    assert float(tape.gradient(y, x)) == 3.0


class _FruitType(tf.types.experimental.TraceType):
    def __init__(self, fruit):
        self.kind, self.fruit = type(fruit), fruit

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return self.fruit

    def __eq__(self, other):
        return type(other) is _FruitType and self.kind is other.kind

    def __hash__(self):
        return hash(self.kind)


class _Apple:
    def __init__(self, weight):
        self.weight = weight

    def __tf_tracing_type__(self, context):
        return _FruitType(self)


class _Mango(_Apple):
    pass


def test_tf_tracing_type_keys_the_cache():
    @tf.function
    def weigh(fruit, x):
        return x * fruit.weight
    assert float(weigh(_Apple(2.0), tf.constant(1.0))) == 2.0
    assert float(weigh(_Apple(5.0), tf.constant(1.0))) == 2.0  # same type: no retrace
    assert weigh.experimental_get_tracing_count() == 1
    assert float(weigh(_Mango(3.0), tf.constant(1.0))) == 3.0
    assert weigh.experimental_get_tracing_count() == 2

    class Bad:
        def __tf_tracing_type__(self, context):
            return "not a TraceType"
    with pytest.raises(TypeError, match="TraceType"):
        weigh(Bad(), tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.types.experimental.TraceType()  # abstract


def test_print_writes_to_standard_error_by_default(capsys):
    tf.print("eager", tf.constant([1, 2]))
    tf.function(lambda: tf.print("traced"))()
    captured = capsys.readouterr()
    assert captured.err == "eager [1 2]\ntraced\n" and captured.out == ""
    tf.print("out", output_stream=sys.stdout)
    assert capsys.readouterr().out == "out\n"


# ------------------------------------------------------------------ threads


def _hammer(fn, threads=4, times=1000):
    errors = []

    def work():
        try:
            for _ in range(times):
                fn()
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


@pytest.mark.parametrize("traced", [False, True])
def test_variable_updates_are_atomic_across_threads(traced):
    v = tf.Variable(0.0)
    w = tf.Variable(np.zeros(3))
    held = []

    def step():
        v.assign_add(1.0)
        held.append(v.read_value())  # a reader sharing the value forces copy-on-write
        if len(held) > 8:
            held.clear()
        w.assign_sub(np.ones(3))

    fn = tf.function(step) if traced else step
    assert _hammer(fn) == []
    assert float(v.numpy()) == 4000.0
    np.testing.assert_array_equal(w.numpy(), [-4000.0] * 3)


def test_retracing_log_is_quiet_after_a_couple_of_warnings_per_kind_of_change(caplog):
    @tf.function
    def f(x, n):
        return x * n
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        for n in range(40):
            f(tf.constant(1.0), n)                  # a Python value changes: 2 warnings
        for size in range(1, 30):
            f(tf.ones([size]), 1)                   # then a shape changes: 2 more
    messages = [r.getMessage() for r in caplog.records]
    # 2 for n, 1 where both change at once (a new kind), 2 for x's shape; 1,000 traces
    # of one kind would still give 2
    assert len(messages) == 5 and all("tf.function retracing" in m for m in messages)
    assert "6 out of the last 6 calls" in messages[0]
    assert "argument 'n' changed from 5 to 6" in messages[1]   # this trace's change
    assert "argument 'x' changed from TensorSpec(shape=(2,)" in messages[4]
    assert "tf.TensorSpec([None], tf.float32)" in messages[4]
    assert all(m.startswith(__file__) for m in messages)          # the user's call
    assert "not reported" in messages[1] and "not reported" in messages[4]
    # one channel: nothing goes through the warnings module
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in range(30, 35):
            f(tf.ones([size]), 1)
    assert caught == []


# ------------------------------------------------------------------ variable arguments


def test_a_new_variable_argument_of_the_same_dtype_and_shape_does_not_retrace():
    @tf.function
    def bump(v, x):
        v.assign_add(x)
        return v * 2.0
    a, b = tf.Variable(1.0), tf.Variable(10.0)
    assert float(bump(a, 1.0)) == 4.0 and float(bump(b, 1.0)) == 22.0
    assert float(a.numpy()) == 2.0 and float(b.numpy()) == 11.0  # each call its own
    assert bump.experimental_get_tracing_count() == 1
    bump(tf.Variable([1.0]), tf.constant([1.0]))       # another shape: a new trace
    bump(tf.Variable(1.0, dtype=tf.float64), 1.0)      # another dtype: a new trace
    assert bump.experimental_get_tracing_count() == 3

    @tf.function
    def add(u, v):
        return u + v
    assert float(add(a, a)) == 4.0 and float(add(a, b)) == 13.0  # aliasing is keyed too
    assert add.experimental_get_tracing_count() == 2


def test_gradients_and_tangents_flow_to_the_variable_each_call_was_given():
    @tf.function
    def loss(v, x):
        return tf.reduce_sum(v * v * x)
    w1, w2 = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    x = tf.constant([5.0, 6.0])
    with tf.GradientTape() as tape:
        total = loss(w1, x) + 2.0 * loss(w2, x)
    g1, g2 = tape.gradient(total, [w1, w2])
    np.testing.assert_allclose(g1.numpy(), 2.0 * np.array([1.0, 2.0]) * [5.0, 6.0])
    np.testing.assert_allclose(g2.numpy(), 4.0 * np.array([3.0, 4.0]) * [5.0, 6.0])
    assert loss.experimental_get_tracing_count() == 1
    with tf.autodiff.ForwardAccumulator(w2, tf.constant([1.0, 0.0])) as acc:
        y = loss(w2, x)
    assert float(acc.jvp(y)) == pytest.approx(2.0 * 3.0 * 5.0)
    cf = loss.get_concrete_function(w1, x)
    assert float(cf(w2, x)) == 3.0 * 3.0 * 5.0 + 4.0 * 4.0 * 6.0
    assert len(cf.variables) == 1 and cf.variables[0] is w1  # the one it was traced with


def test_variable_arguments_from_several_threads():
    @tf.function
    def bump(v):
        v.assign_add(1.0)
    variables = [tf.Variable(0.0) for _ in range(4)]
    bump(variables[0])
    errors = []

    def work(v):
        try:
            for _ in range(300):
                bump(v)
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    pool = [threading.Thread(target=work, args=(v,)) for v in variables]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == [] and [float(v.numpy()) for v in variables] == [301.0, 300.0, 300.0,
                                                                      300.0]
    assert bump.experimental_get_tracing_count() == 1
