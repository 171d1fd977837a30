"""Loop gradients without dense per-iteration temporaries (issue #29): the gradient of a
read of rows of a loop-invariant input is added into its total in place. Values and
gradients are checked against eager runs and float64 finite differences."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.backends import REGISTRY
from tapeflow.function import control, control_flow

RNG = np.random.default_rng(29)


def _rnn_grads(xs, w, u):
    """Gradients of an Elman RNN's final-state loss wrt (xs, w, u), the step input read as
    xs[t] (a gather of row t of the loop-invariant xs)."""
    with tf.GradientTape() as tape:
        tape.watch(xs)
        h = tf.zeros([tf.shape(xs)[1], 3], tf.float64)
        for t in tf.range(tf.shape(xs)[0]):
            h = tf.tanh(tf.matmul(xs[t], w) + tf.matmul(h, u))
        loss = tf.reduce_sum(h * h) + tf.reduce_sum(h)
    return [loss] + tape.gradient(loss, [xs, w, u])


def _traced(w, u, signature=None):
    def step(x):
        return _rnn_grads(x, w, u)
    return tf.function(step, input_signature=signature)


def _weights():
    return (tf.Variable(RNG.standard_normal((4, 3)) * 0.5),
            tf.Variable(RNG.standard_normal((3, 3)) * 0.5))


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_rows_of_an_invariant_input_traced_equal_eager(steps):
    w, u = _weights()
    xs = tf.constant(RNG.standard_normal((steps, 2, 4)))
    eager = _rnn_grads(xs, w, u)
    traced = _traced(w, u)(xs)
    for e, t in zip(eager, traced):
        if e is None and steps == 0:  # eagerly nothing ran: no path, no gradient
            assert t is None or not t.numpy().any()
            continue
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_unknown_length_matches_finite_differences():
    w, u = _weights()
    f = _traced(w, u, [tf.TensorSpec([None, None, 4], tf.float64)])
    xs = RNG.standard_normal((4, 2, 4))
    _, dx, _, _ = f(tf.constant(xs))
    eps, numeric = 1e-6, np.zeros_like(xs)
    for i in np.ndindex(xs.shape):
        up, down = xs.copy(), xs.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (float(f(tf.constant(up))[0]) - float(f(tf.constant(down))[0])) / (2 * eps)
    np.testing.assert_allclose(dx.numpy(), numeric, rtol=1e-6, atol=1e-8)
    # another length through the same function
    xs = tf.constant(RNG.standard_normal((7, 2, 4)))
    for e, t in zip(_rnn_grads(xs, w, u), f(xs)):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_repeated_indices_and_slices_of_an_invariant():
    """Each iteration gathers rows [t, t, 0] (repeats within and across iterations) and a
    static slice of a second invariant; their gradients add up."""
    table = tf.constant(RNG.standard_normal((5, 3)))
    other = tf.constant(RNG.standard_normal((4, 3)))

    def f(table, other):
        with tf.GradientTape() as tape:
            tape.watch([table, other])
            total = tf.constant(0.0, tf.float64)
            for t in tf.range(5):
                rows = tf.gather(table, tf.stack([t, t, 0]))
                total += tf.reduce_sum(tf.sin(rows) * tf.cast(t + 1, tf.float64))
                total += tf.reduce_sum(other[1:3] * rows[:2] ** 2)
        return [total] + tape.gradient(total, [table, other])

    eager = f(table, other)
    traced = tf.function(f)(table, other)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)
    # closed form for the table: d/dr sum(sin(r)) (t + 1) summed over each read
    x, o = table.numpy(), other.numpy()
    want = np.zeros_like(x)
    for t in range(5):
        for k, r in enumerate([t, t, 0]):
            want[r] += np.cos(x[r]) * (t + 1)
            if k < 2:
                want[r] += 2 * o[1 + k] * x[r]
    np.testing.assert_allclose(traced[1].numpy(), want, rtol=1e-12)


def test_nested_loops_read_rows_of_invariants():
    w, _ = _weights()
    xs = tf.constant(RNG.standard_normal((3, 2, 2, 4)))

    def f(xs):
        with tf.GradientTape() as tape:
            tape.watch(xs)
            total = tf.zeros([2, 3], tf.float64)
            for i in tf.range(3):
                inner = xs[i]
                h = tf.zeros([2, 3], tf.float64)
                for j in tf.range(2):
                    h = tf.tanh(tf.matmul(inner[j], w) + h)
                total += h
            loss = tf.reduce_sum(total ** 2)
        return [loss] + tape.gradient(loss, [xs, w])

    eager = f(xs)
    traced = tf.function(f)(xs)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_the_loop_gradient_adds_rows_in_place():
    """The gather's and the slice's gradients reach WhileGrad as parts, not dense."""
    w, u = _weights()
    xs = tf.constant(RNG.standard_normal((3, 2, 4)))
    seen = []
    original = control_flow._sparse_backward

    def spy(*args):
        out = original(*args)
        seen.append(out[1])
        return out

    control_flow._sparse_backward = spy
    try:
        _traced(w, u)(xs)
    finally:
        control_flow._sparse_backward = original
    assert any(f is not None and any(form and form[0] == "InplaceSegmentSum" for form in f)
               for f in seen)


def test_inplace_kernels_follow_segment_sum_semantics():
    add = registry.KERNELS["InplaceSegmentSum"]["numpy"].func
    ref = np.zeros((2, 4, 3))
    data = RNG.standard_normal((2, 5, 3))
    ids = np.array([1, -1, 3, 1, 0])
    add({"ref": ref, "data": data, "segment_ids": ids}, {"axis": 1}, None)
    want = np.zeros((2, 4, 3))
    for k, i in enumerate(ids):
        if i >= 0:
            want[:, i] += data[:, k]
    np.testing.assert_allclose(ref, want, rtol=1e-15)
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        add({"ref": ref, "data": data, "segment_ids": ids + 3}, {"axis": 1}, None)
    for one in (np.array(2), np.array([2]), np.array([-1])):  # one row (or none)
        before = ref.copy()
        row = RNG.standard_normal((2, 3) if one.ndim == 0 else (2, 1, 3))
        add({"ref": ref, "data": row, "segment_ids": one}, {"axis": 1}, None)
        if one.reshape(-1)[0] >= 0:
            before[:, 2] += row.reshape(2, 3)
        np.testing.assert_array_equal(ref, before)
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        add({"ref": ref, "data": row, "segment_ids": np.array([4])}, {"axis": 1}, None)
    vector = np.zeros(3)  # rows of one element
    add({"ref": vector, "data": np.array(2.0), "segment_ids": np.array(1)}, {"axis": 0}, None)
    add({"ref": vector, "data": np.array([3.0]), "segment_ids": np.array([1])}, {"axis": 0},
        None)
    np.testing.assert_array_equal(vector, [0.0, 5.0, 0.0])
    assert control._own_kernel("InplaceSegmentSum", REGISTRY.find("numpy"))


# ---------------------------------------------------------------- joined slice gradients
def _ops(f, *args):
    cf = tf.function(f).get_concrete_function(*args)
    return [n.op for n in cf.optimized_graph.get_operations()], cf


@pytest.mark.parametrize("bounds, joined", [
    ([(0, 2), (2, 5), (5, 8)], True),          # a partition of the axis
    ([(6, 8), (0, 3)], True),                  # disjoint with gaps, out of order
    ([(0, 4), (3, 8)], False),                 # overlapping: left as it is
])
def test_slice_gradients_of_disjoint_ranges_become_one_concat(bounds, joined):
    x = tf.constant(RNG.standard_normal((3, 8)))
    w = tf.constant(RNG.standard_normal((8, 8)))

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = tf.matmul(x, w)
            loss = tf.constant(0.0, tf.float64)
            for k, (a, b) in enumerate(bounds):
                loss += tf.reduce_sum(tf.sin(z[:, a:b]) * float(k + 1))
        return tape.gradient(loss, x)

    ops, cf = _ops(f, x)
    assert ("StridedSliceGrad" not in ops and "Concat" in ops) == joined, ops
    z = x.numpy() @ w.numpy()
    dz = np.zeros_like(z)
    for k, (a, b) in enumerate(bounds):
        dz[:, a:b] += np.cos(z[:, a:b]) * (k + 1)
    np.testing.assert_allclose(cf(x).numpy(), dz @ w.numpy().T, rtol=1e-12)


@pytest.mark.parametrize("batch", [4, None])
def test_joined_slice_gradients_with_other_terms(batch):
    """A partition along axis 1 of a [batch, 6] tensor, plus a dense term of the same
    tensor: Concat + the dense gradient (an unknown batch: the values)."""
    spec = [tf.TensorSpec([batch, 6], tf.float64)]

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = (tf.reduce_sum(x[:, :2] ** 2) + tf.reduce_sum(tf.exp(x[:, 2:]))
                    + tf.reduce_sum(tf.sin(x)))
        return tape.gradient(loss, x)

    cf = tf.function(f, input_signature=spec).get_concrete_function()
    if batch is not None:
        ops = [n.op for n in cf.optimized_graph.get_operations()]
        assert "StridedSliceGrad" not in ops and "Concat" in ops, ops
    x = RNG.standard_normal((4, 6))
    want = np.concatenate([2 * x[:, :2], np.exp(x[:, 2:])], 1) + np.cos(x)
    np.testing.assert_allclose(cf(tf.constant(x)).numpy(), want, rtol=1e-12)


# ---------------------------------------------------------------- hoisted products
def _while_bodies(cf):
    return [n.attrs["body"] for n in cf.graph.get_operations() if n.op == "While"]


@pytest.mark.parametrize("axis, transpose_b", [(0, False), (1, False), (1, True)])
def test_invariant_products_leave_the_loop(axis, transpose_b):
    """gather(P, t, axis) @ W in a loop body is one product before the loop; values and
    gradients (of P, W and a recurrent weight) equal eager ones to rounding."""
    steps, batch = 4, 3
    p = tf.constant(RNG.standard_normal((steps, batch, 5) if axis == 0 else (batch, steps, 5)))
    w = tf.Variable(RNG.standard_normal((6, 5) if transpose_b else (5, 6)) * 0.5)
    u = tf.Variable(RNG.standard_normal((6, 6)) * 0.5)

    def f(p):
        with tf.GradientTape() as tape:
            tape.watch(p)
            h = tf.zeros([batch, 6], tf.float64)
            for t in tf.range(steps):
                x = tf.gather(p, t, axis=axis)
                h = tf.tanh(tf.matmul(x, w, transpose_b=transpose_b) + tf.matmul(h, u))
            loss = tf.reduce_sum(tf.sin(h))
        return [loss] + tape.gradient(loss, [p, w, u])

    traced = tf.function(f)
    cf = traced.get_concrete_function(p)
    bodies = _while_bodies(cf)
    assert bodies and all(
        [n.op for n in b.graph.get_operations()].count("MatMul") == 1 for b in bodies)
    for e, t in zip(f(p), traced(p)):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_large_products_stay_in_the_loop():
    """A product over all rows larger than HOIST_BYTES is not hoisted."""
    p = tf.constant(np.zeros((8, 4, 2)))
    w = tf.constant(np.ones((2, control_flow.HOIST_BYTES // (8 * 4 * 8) + 1)))

    def f(p):
        total = tf.zeros([4, w.shape[1]], tf.float64)
        for t in tf.range(8):
            total += tf.matmul(p[t], w)
        return total

    cf = tf.function(f).get_concrete_function(p)
    (body,) = _while_bodies(cf)
    assert "MatMul" in [n.op for n in body.graph.get_operations()]


# ---------------------------------------------------------------- deferred products
@pytest.mark.parametrize("defer_bytes, every", [(1 << 20, None), (0, None), (1 << 20, 2)])
def test_weight_gradients_summed_after_the_loop(monkeypatch, defer_bytes, every):
    """sum_t h_t^T dz_t and sum_t sum_rows(dz_t) of a recurrent weight and bias: one
    product (one sum) after the loop when the operands fit DEFER_BYTES and the gradient
    keeps every iteration; per iteration otherwise (also when checkpointing). Equal to
    the eager gradients to rounding either way."""
    monkeypatch.setattr(control, "DEFER_BYTES", defer_bytes)
    calls = []
    original = control._sum_deferred
    monkeypatch.setattr(control, "_sum_deferred", lambda *a: calls.append(1) or original(*a))
    u = tf.Variable(RNG.standard_normal((3, 3)) * 0.5)
    bias = tf.Variable(RNG.standard_normal(3))
    xs = tf.constant(RNG.standard_normal((6, 2, 3)))

    def f(xs):
        with tf.GradientTape() as tape:
            def body(t, h):
                return t + 1, tf.tanh(xs[t] + tf.matmul(h, u) + bias)
            _, h = tf.while_loop(lambda t, h: t < 6, body,
                                 (tf.constant(0), tf.zeros([2, 3], tf.float64)),
                                 checkpoint_every=every)
            loss = tf.reduce_sum(h ** 3)
        return [loss] + tape.gradient(loss, [u, bias])

    eager = f(xs)
    traced = tf.function(f)(xs)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)
    assert bool(calls) == (defer_bytes > 0 and every is None)


# ---------------------------------------------------------------- loop-invariant code motion
def test_invariant_work_is_computed_once_before_the_loop():
    """Slices and a reshape of variables and a product of two of them are made once before
    the loop (the body reads them as arguments); one is also returned as a loop variable.
    Values and gradients equal eager ones."""
    bias = tf.Variable(RNG.standard_normal((2, 3)))
    u = tf.Variable(RNG.standard_normal((3, 3)) * 0.5)
    v = tf.Variable(RNG.standard_normal((3, 3)) * 0.5)
    x0 = tf.constant(RNG.standard_normal((2, 3)))

    def f(x0):
        with tf.GradientTape() as tape:
            def body(t, h, last):
                w = tf.matmul(u, v)  # invariant product of two variables
                shift = tf.reshape(bias[1] * 0.5, [1, 3])
                h = tf.tanh(tf.matmul(h, w) + bias[0] + shift)
                return t + 1, h, bias[1] * 2.0
            _, h, last = tf.while_loop(lambda t, h, last: t < 4, body,
                                       (tf.constant(0), x0, tf.zeros([3], tf.float64)))
            loss = tf.reduce_sum(h ** 2) + tf.reduce_sum(last * h[0])
        return [loss] + tape.gradient(loss, [bias, u, v])

    traced = tf.function(f)
    (body,) = _while_bodies(traced.get_concrete_function(x0))
    ops = [n.op for n in body.graph.get_operations()]
    assert "ReadVariableOp" not in ops and "StridedSlice" not in ops, ops
    assert ops.count("MatMul") == 1, ops
    for e, t in zip(f(x0), traced(x0)):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)
