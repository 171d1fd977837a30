"""Graph-mode companions (API §6.6): print, TensorArray, map_fn, vectorized_map and
py_function, eagerly and inside traced functions; printed text captured per call; values
against NumPy or eager loops; gradients against central differences (float64)."""
from __future__ import annotations

import io
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops.io import format_array


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def op_names(fn, *args):
    return [n.op for n in fn.get_concrete_function(*args).graph.get_operations()]


def gradient(fn, x):
    """d sum(fn(x)) / dx through a tape."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(fn(x))
    return tape.gradient(y, x).numpy()


def numeric_gradient(fn, x, eps=1e-6):
    """Central differences of sum(fn(x)) in float64."""
    base = x.numpy().astype(np.float64)
    out = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        hi, lo = base.copy(), base.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (np.sum(fn(c64(hi)).numpy()) - np.sum(fn(c64(lo)).numpy())) / (2 * eps)
    return out


# ---------------------------------------------------------------------- print


def test_print_formats_like_tf_print(capsys):
    tf.print("x:", tf.constant([1, 2, 3]), {"n": tf.constant(2.5)}, [1, "a"])
    tf.print(tf.range(10), tf.constant(1 / 3), tf.constant(1 / 3, tf.float64),
             tf.constant([True, False]))
    tf.print(tf.constant([[1.5, 2.0], [3.0, 4.0]]), sep="|", end="!\n")
    tf.print(tf.range(10), summarize=-1)
    tf.print(tf.range(10), summarize=2)
    captured = capsys.readouterr()
    assert captured.out == ""  # standard error by default, as TensorFlow
    assert captured.err == (
        "x: [1 2 3] {'n': 2.5} [1, 'a']\n"
        "[0 1 2 ... 7 8 9] 0.333333343 0.33333333333333331 [1 0]\n"
        "[[1.5 2]\n [3 4]]!\n"
        "[0 1 2 3 4 5 6 7 8 9]\n"
        "[0 1 ... 8 9]\n")


def test_format_array_summarizes_every_dimension():
    a = np.arange(64).reshape(8, 8)
    assert format_array(a) == ("[[0 1 2 ... 5 6 7]\n [8 9 10 ... 13 14 15]\n"
                               " [16 17 18 ... 21 22 23]\n ...\n [40 41 42 ... 45 46 47]\n"
                               " [48 49 50 ... 53 54 55]\n [56 57 58 ... 61 62 63]]")
    assert format_array(np.float32(0.1)) == "0.1"
    assert format_array(np.array([np.nan, np.inf, -np.inf], np.float32)) == "[nan inf -inf]"
    assert format_array(np.zeros((2, 0))) == "[[]\n []]"
    assert format_array(np.array(7, np.int64)) == "7"


def test_print_streams(capsys, tmp_path):
    buf = io.StringIO()
    tf.print("to", tf.constant(1), output_stream=buf)
    tf.print("err", output_stream=sys.stderr)
    path = tmp_path / "log.txt"
    tf.print(tf.constant([4, 5]), output_stream=f"file://{path}")
    tf.print(tf.constant([6]), output_stream=f"file://{path}")
    captured = capsys.readouterr()
    assert buf.getvalue() == "to 1\n"
    assert captured.err == "err\n" and captured.out == ""
    assert path.read_text() == "[4 5]\n[6]\n"
    with pytest.raises(ValueError, match="output_stream"):
        tf.print("x", output_stream="stdout-ish")
    logged = []
    tf.print("via", tf.constant([1.5]), output_stream=logged.append)  # a logging function
    assert logged == ["via [1.5]"]
    assert tf.print("returns nothing") is None


def test_print_in_a_traced_function_prints_at_every_call_not_at_trace(capsys):
    @tf.function
    def f(x):
        tf.print("start")
        y = x * 2.0
        tf.print("y =", y)
        return x + 1.0  # nothing depends on the prints

    cf = f.get_concrete_function(tf.constant([1.0, 2.0]))
    assert capsys.readouterr().err == ""  # tracing prints nothing
    assert op_names(f, tf.constant([1.0, 2.0])).count("PrintV2") == 2
    assert cf is not None
    f(tf.constant([1.0, 2.0]))
    assert capsys.readouterr().err == "start\ny = [2 4]\n"
    f(tf.constant([3.0, 0.5]))
    assert capsys.readouterr().err == "start\ny = [6 1]\n"
    assert f.experimental_get_tracing_count() == 1


def test_print_keeps_program_order_with_variable_updates(capsys):
    v = tf.Variable(0)

    @tf.function
    def step():
        tf.print("before", v)
        v.assign_add(1)
        tf.print("after", v)
        v.assign_add(10)

    step()
    step()
    assert capsys.readouterr().err == "before 0\nafter 1\nbefore 11\nafter 12\n"
    assert int(v.numpy()) == 22


def _fizzbuzz(n):
    def body(i):
        tf.cond(tf.equal(i % 15, 0), lambda: tf.print("FizzBuzz"),
                lambda: tf.cond(tf.equal(i % 3, 0), lambda: tf.print("Fizz"),
                                lambda: tf.cond(tf.equal(i % 5, 0), lambda: tf.print("Buzz"),
                                                lambda: tf.print(i))))
        return i + 1
    return tf.while_loop(lambda i: i <= n, body, [tf.constant(1)])


def expected_fizzbuzz(n):
    words = []
    for i in range(1, n + 1):
        words.append("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else
                     "Buzz" if i % 5 == 0 else str(i))
    return "".join(w + "\n" for w in words)


def test_fizzbuzz_prints_only_the_taken_branch_per_call(capsys):
    f = tf.function(_fizzbuzz)
    for n in (5, 16, 0):
        f(tf.constant(n))
        assert capsys.readouterr().err == expected_fizzbuzz(n)
    assert f.experimental_get_tracing_count() == 1
    _fizzbuzz(tf.constant(6))  # eagerly: the same lines
    assert capsys.readouterr().err == expected_fizzbuzz(6)


# ---------------------------------------------------------------------- TensorArray


def test_tensor_array_eager_methods():
    ta = tf.TensorArray(tf.float32, size=3)
    assert ta.dtype is tf.float32 and not ta.dynamic_size
    for i in range(3):
        ta = ta.write(i, tf.constant([1.0, 2.0]) * float(i))
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [1, 2], [2, 4]])
    np.testing.assert_array_equal(ta.read(2).numpy(), [2, 4])
    assert int(ta.size()) == 3 and list(ta.element_shape) == [2]
    np.testing.assert_array_equal(ta.concat().numpy(), [0, 0, 1, 2, 2, 4])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), [[2, 4], [0, 0]])
    ta = ta.scatter([0, 2], tf.constant([[7.0, 7.0], [9.0, 9.0]]))
    np.testing.assert_array_equal(ta.stack().numpy(), [[7, 7], [1, 2], [9, 9]])
    un = tf.TensorArray(tf.int32, size=2).unstack(tf.constant([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(un.read(1).numpy(), [3, 4])
    dyn = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    dyn = dyn.write(3, tf.constant([1.0]))
    assert int(dyn.size()) == 4
    np.testing.assert_array_equal(dyn.stack().numpy(), [[0], [0], [0], [1]])


def test_tensor_array_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not resizeable"):
        ta.write(2, 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype is float32"):
        ta.write(0, tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="never written"):
        ta.read(1)  # element shape unknown
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        ta.write(-1, 1.0)
    ta = ta.write(0, tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="incompatible shape"):
        ta.write(1, tf.constant([1.0]))
    known = tf.TensorArray(tf.float32, size=2, element_shape=[3])
    np.testing.assert_array_equal(known.read(1).numpy(), [0, 0, 0])  # unwritten: zeros
    with pytest.raises(tf.errors.InvalidArgumentError, match="size is: 2"):
        known.read(5)
    empty = tf.TensorArray(tf.float32)  # size=0 by default
    assert int(empty.size()) == 0 and empty.stack().shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not resizeable"):
        empty.write(0, 1.0)


def _loop_writes(x, n):
    ta = tf.TensorArray(tf.float64, size=n)
    _, ta = tf.while_loop(lambda i, ta: i < n,
                          lambda i, ta: (i + 1, ta.write(i, x * tf.cast(i + 1, tf.float64))),
                          (0, ta))
    return ta.stack()


def test_tensor_array_in_a_traced_while_loop():
    f = tf.function(_loop_writes)
    x = c64([1.0, -2.0])
    for n in (4, 1):
        want = np.arange(1, n + 1)[:, None] * x.numpy()
        np.testing.assert_allclose(f(x, tf.constant(n)).numpy(), want)
        np.testing.assert_allclose(_loop_writes(x, tf.constant(n)).numpy(), want)
    assert f.experimental_get_tracing_count() == 1
    assert "While" in op_names(f, x, tf.constant(4))
    # gradients, traced and eager, against the closed form sum(1..n) per element
    for fn in (lambda z: f(z, tf.constant(4)) ** 2, lambda z: _loop_writes(z, 4) ** 2):
        np.testing.assert_allclose(gradient(fn, x), 2 * x.numpy() * 30.0)


def test_tensor_array_dynamic_size_and_element_shape_in_graph():
    @tf.function
    def grow(x):
        ta = tf.TensorArray(tf.float64, size=0, dynamic_size=True)
        _, ta = tf.while_loop(lambda i, ta: i < 5,
                              lambda i, ta: (i + 1, ta.write(i, tf.sin(x) * tf.cast(i, x.dtype))),
                              (0, ta))
        return ta.stack(), ta.size()

    x = c64([0.3, 1.2])
    stacked, size = grow(x)
    assert int(size) == 5
    np.testing.assert_allclose(stacked.numpy(), np.arange(5)[:, None] * np.sin(x.numpy()))
    np.testing.assert_allclose(gradient(lambda z: grow(z)[0], x),
                               numeric_gradient(lambda z: grow(z)[0], x), rtol=1e-6)

    @tf.function
    def shaped(x):
        ta = tf.TensorArray(tf.float64, size=3, element_shape=[2])
        ta = ta.unstack(tf.stack([x, x * 2.0, x * 3.0]))
        ta = ta.write(1, -x)
        ta = ta.scatter([0], tf.expand_dims(x * 10.0, 0))
        return ta.stack(), ta.read(2), ta.gather([2, 1]), ta.concat()

    stacked, third, picked, joined = shaped(x)
    xv = x.numpy()
    np.testing.assert_allclose(stacked.numpy(), [xv * 10, -xv, xv * 3])
    np.testing.assert_allclose(third.numpy(), xv * 3)
    np.testing.assert_allclose(picked.numpy(), [xv * 3, -xv])
    np.testing.assert_allclose(joined.numpy(), np.concatenate([xv * 10, -xv, xv * 3]))
    np.testing.assert_allclose(gradient(lambda z: shaped(z)[0] ** 2, x),
                               numeric_gradient(lambda z: shaped(z)[0] ** 2, x), rtol=1e-6)


def test_tensor_array_graph_write_past_the_end_raises():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=2)
        return ta.write(2, x).stack()

    with pytest.raises(tf.errors.InvalidArgumentError, match="not resizeable"):
        f(tf.constant(1.0))


def test_tensor_array_read_inside_a_loop():
    @tf.function
    def cumulative(x):
        src = tf.TensorArray(tf.float64, size=4).unstack(x)
        out = tf.TensorArray(tf.float64, size=4)

        def body(i, acc, out):
            acc = acc + src.read(i)
            return i + 1, acc, out.write(i, acc)
        _, _, out = tf.while_loop(lambda i, a, o: i < 4, body,
                                  (0, tf.constant(0.0, tf.float64), out))
        return out.stack()

    x = c64([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(cumulative(x).numpy(), np.cumsum(x.numpy()))
    np.testing.assert_allclose(gradient(cumulative, x), [4, 3, 2, 1])


# ---------------------------------------------------------------------- map_fn


def test_map_fn_values_eager_and_traced():
    x = c64(np.arange(12).reshape(4, 3) / 7.0)

    def fn(r):
        return tf.sin(r) * tf.reduce_sum(r)
    want = np.stack([np.sin(r) * r.sum() for r in x.numpy()])
    np.testing.assert_allclose(tf.map_fn(fn, x).numpy(), want)
    traced = tf.function(lambda z: tf.map_fn(fn, z))
    np.testing.assert_allclose(traced(x).numpy(), want)
    assert "While" in op_names(traced, x)
    for f in (lambda z: tf.map_fn(fn, z), traced):
        np.testing.assert_allclose(gradient(f, x), numeric_gradient(f, x), rtol=1e-6)


def test_map_fn_nested_and_signatures():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([10, 20])

    def fn(pair):
        x, k = pair
        return {"sum": tf.reduce_sum(x), "k": k * 2}
    for run in (lambda: tf.map_fn(fn, (a, b)), tf.function(lambda: tf.map_fn(fn, (a, b)))):
        out = run()
        np.testing.assert_array_equal(out["sum"].numpy(), [3.0, 7.0])
        np.testing.assert_array_equal(out["k"].numpy(), [20, 40])
    ints = tf.map_fn(lambda r: tf.cast(tf.reduce_sum(r), tf.int32), a,
                     fn_output_signature=tf.int32)
    assert ints.dtype is tf.int32 and ints.numpy().tolist() == [3, 7]
    spec = tf.map_fn(lambda r: r * 2.0, a, fn_output_signature=tf.TensorSpec([2], tf.float32))
    np.testing.assert_array_equal(spec.numpy(), [[2, 4], [6, 8]])
    with pytest.raises(TypeError, match="fn_output_signature"):
        tf.map_fn(lambda r: r * 2.0, a, fn_output_signature=tf.int32)
    empty = tf.map_fn(lambda r: r * 2.0, tf.zeros([0, 3]))
    assert empty.shape == (0, 3)
    with pytest.raises(ValueError, match="same first dimension"):
        tf.map_fn(lambda p: p[0], (tf.zeros([2]), tf.zeros([3])))


def test_map_fn_unknown_length_does_not_retrace():
    f = tf.function(lambda z: tf.map_fn(lambda r: r * r, z),
                    input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    for n in (1, 3, 6):
        x = c64(np.arange(2 * n).reshape(n, 2))
        np.testing.assert_allclose(f(x).numpy(), x.numpy() ** 2)
    assert f.experimental_get_tracing_count() == 1


# ---------------------------------------------------------------------- vectorized_map


W = np.random.default_rng(0).normal(size=(3, 2))
FNS = {
    "elementwise": lambda r: tf.tanh(r) * 2.0 + r,
    "matmul_softmax": lambda r: tf.nn.softmax(tf.matmul(tf.expand_dims(r, 0), c64(W)) + 1.0),
    "reduce": lambda r: tf.reduce_sum(r * r, axis=0) - tf.reduce_max(r),
    "transpose_reshape": lambda r: tf.transpose(tf.reshape(tf.concat([r, r * 2.0], 0), [2, 3])),
    "slice_gather": lambda r: r[1:] * tf.gather(r, [2, 0]),
    "broadcast_rank": lambda r: r + c64(np.ones((2, 3))),
    "stack_constant": lambda r: tf.stack([tf.reduce_mean(r), tf.constant(1.0, tf.float64)]),
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_vectorized_map_matches_map_fn(name):
    fn = FNS[name]
    x = c64(np.random.default_rng(1).normal(size=(5, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a batching rule, no fallback
        got = tf.vectorized_map(fn, x)
    np.testing.assert_allclose(got.numpy(), tf.map_fn(fn, x).numpy(), rtol=1e-12)
    vmap = lambda z: tf.vectorized_map(fn, z)  # noqa: E731
    np.testing.assert_allclose(gradient(vmap, x), numeric_gradient(vmap, x), rtol=1e-5,
                               atol=1e-8)
    traced = tf.function(vmap)
    np.testing.assert_allclose(traced(x).numpy(), got.numpy(), rtol=1e-12)
    assert "While" not in op_names(traced, x)


def test_vectorized_map_falls_back_to_a_loop():
    x = c64(np.random.default_rng(2).normal(size=(4, 5)))

    def fn(r):
        return tf.sort(r) * 2.0
    from tapeflow.function import map_fn as module
    module._warned.discard("TopKV2")
    module._warned.discard("Sort")
    with pytest.warns(UserWarning, match="using a while_loop"):
        got = tf.vectorized_map(fn, x)
    np.testing.assert_allclose(got.numpy(), np.sort(x.numpy(), axis=1) * 2.0)
    with pytest.raises(ValueError, match="fallback_to_while_loop"):
        tf.vectorized_map(fn, x, fallback_to_while_loop=False)


# ---------------------------------------------------------------------- py_function


def test_py_function_eager_and_traced_values_and_calls():
    calls = []

    def func(a):
        calls.append(a.numpy().copy())
        return tf.sin(a) * float(a.numpy().max())

    x = c64([0.5, 1.0, 2.0])
    want = np.sin(x.numpy()) * 2.0
    np.testing.assert_allclose(tf.py_function(func, [x], tf.float64).numpy(), want)

    @tf.function
    def f(z):
        return tf.py_function(func, [z], tf.float64) + 1.0

    calls.clear()
    f.get_concrete_function(x)
    assert calls == []  # not called while tracing
    np.testing.assert_allclose(f(x).numpy(), want + 1.0)
    np.testing.assert_allclose(f(x * 2.0).numpy(), np.sin(x.numpy() * 2) * 4.0 + 1.0)
    assert len(calls) == 2
    assert "EagerPyFunc" in op_names(f, x)


def test_py_function_gradients():
    def func(a, b):
        return a * a * b, tf.exp(b)

    def through(z):
        y0, y1 = tf.py_function(func, [z, z * 3.0], [tf.float64, tf.float64])
        return y0 + y1

    x = c64([0.2, -0.4, 0.9])
    traced = tf.function(through)
    for fn in (through, traced):
        np.testing.assert_allclose(gradient(fn, x), numeric_gradient(fn, x), rtol=1e-6)


def test_py_function_errors_and_outputs():
    x = tf.constant([1.0, 2.0])

    @tf.function
    def wrong_dtype(z):
        return tf.py_function(lambda a: tf.cast(a, tf.int32), [z], tf.float32)

    with pytest.raises(tf.errors.InvalidArgumentError, match="Tout expects float32"):
        wrong_dtype(x)

    @tf.function
    def wrong_count(z):
        return tf.py_function(lambda a: (a, a), [z], [tf.float32])

    with pytest.raises(tf.errors.InvalidArgumentError, match="returned 2 value"):
        wrong_count(x)

    @tf.function
    def numpy_out(z):
        a, b = tf.py_function(lambda a: (a.numpy() * 2, [1, 2]), [z], [tf.float32, tf.int32])
        return a, b

    a, b = numpy_out(x)
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])
    assert b.dtype is tf.int32 and b.numpy().tolist() == [1, 2]
    assert tf.py_function(lambda a: None, [x], []) is None


# ---------------------------------------------------------------------- in loops and branches


def test_print_in_a_differentiated_loop_prints_once_per_iteration(capsys):
    @tf.function
    def f(x):
        def body(i, y):
            tf.print("iter", i)
            return i + 1, y * 1.5
        return tf.while_loop(lambda i, y: i < 3, body, (0, x))[1]

    x = c64([1.0, 2.0])
    np.testing.assert_allclose(gradient(f, x), [3.375, 3.375])
    assert capsys.readouterr().err == "iter 0\niter 1\niter 2\n"  # the rerun is quiet


def test_py_function_in_a_differentiated_loop():
    @tf.function
    def f(x):
        spec = tf.TensorSpec([2], tf.float64)  # a loop variable keeps its shape
        body = lambda i, y: (i + 1, tf.py_function(lambda a: tf.sin(a), [y], spec))  # noqa: E731
        return tf.while_loop(lambda i, y: i < 2, body, (0, x))[1]

    x = c64([0.3, 1.1])
    np.testing.assert_allclose(f(x).numpy(), np.sin(np.sin(x.numpy())))
    np.testing.assert_allclose(gradient(f, x), numeric_gradient(f, x), rtol=1e-6)


def test_tensor_array_through_cond_and_map_fn_without_back_prop():
    @tf.function
    def h(x, p):
        ta = tf.TensorArray(tf.float64, size=2, element_shape=[2])
        ta = tf.cond(p, lambda: ta.write(0, x), lambda: ta.write(1, x * 3.0))
        return ta.stack()

    x = c64([1.0, 2.0])
    np.testing.assert_array_equal(h(x, tf.constant(True)).numpy(), [[1, 2], [0, 0]])
    np.testing.assert_array_equal(h(x, tf.constant(False)).numpy(), [[0, 0], [3, 6]])
    np.testing.assert_allclose(gradient(lambda z: h(z, tf.constant(False)), x), [3, 3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.map_fn(lambda r: r * 2.0, tf.stack([x, x]), back_prop=False))
    assert tape.gradient(y, x) is None


def test_py_function_forward_mode():
    @tf.function
    def f(z):
        return tf.py_function(lambda a: a * a * 3.0, [z], tf.float64)

    x, t = c64([1.0, -2.0]), c64([0.5, 1.0])
    with tf.autodiff.ForwardAccumulator(x, t) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 6.0 * x.numpy() * t.numpy())


def test_vectorized_map_random_ops_draw_per_element():
    from tapeflow.function import map_fn as module
    module._warned.discard("RandomStandardNormal")
    with pytest.warns(UserWarning, match="RandomStandardNormal"):
        out = tf.vectorized_map(lambda r: r + tf.random.normal([3], seed=1), tf.zeros([4, 3]))
    rows = out.numpy()
    assert rows.shape == (4, 3) and len({tuple(r) for r in rows.round(6)}) == 4


def test_map_fn_forward_mode_second_order_and_empty_when_traced():
    f = tf.function(lambda z: tf.map_fn(lambda r: tf.sin(r) * 2.0, z))
    assert f(tf.zeros([0, 3])).shape == (0, 3)
    x = c64(np.random.default_rng(3).uniform(size=(3, 2)))
    with tf.autodiff.ForwardAccumulator(x, tf.ones([3, 2], tf.float64)) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2.0 * np.cos(x.numpy()))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(f(x))
        first = inner.gradient(y, x)
    np.testing.assert_allclose(first.numpy(), 2.0 * np.cos(x.numpy()))
    np.testing.assert_allclose(outer.gradient(first, x).numpy(), -2.0 * np.sin(x.numpy()))
