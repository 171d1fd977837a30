"""Optimizers against NumPy transcriptions of Keras's (TF 2.11+) update rules: dense
gradients, sparse ones (IndexedSlices with repeated indices) under LazyAdam's lazy rule
(every other optimizer's sparse steps equal dense ones: test_sparse_optimizers.py),
learning rates as floats, Variables and schedules, None gradients, state (`variables`,
`_trackable_children`), and traced training steps against eager ones."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf

F32 = lambda x: float(np.float32(x))  # noqa: E731  (a float learning rate lives in float32)


# --------------------------------------------------------------------------- references
# Each takes the state dict (slots by name, created on first use), the variable (float64
# array) and a dense gradient, and returns the new variable; t is the 1-based step.


def sgd_ref(lr, momentum=0.0, nesterov=False, **_):
    def step(s, x, g, t):
        if not momentum:
            return x - g * lr
        m = s.setdefault("m", np.zeros_like(x))
        s["m"] = m * momentum - g * lr
        return x + (s["m"] * momentum - g * lr if nesterov else s["m"])
    return step


def adam_ref(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, weight_decay=None,
             **_):
    def step(s, x, g, t):
        if weight_decay:
            x = x - x * weight_decay * lr
        m = s.setdefault("m", np.zeros_like(x))
        v = s.setdefault("v", np.zeros_like(x))
        s["m"] = m + (g - m) * (1 - beta_1)
        s["v"] = v + (g * g - v) * (1 - beta_2)
        alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        v = s["v"]
        if amsgrad:
            s["vhat"] = np.maximum(s.setdefault("vhat", np.zeros_like(x)), v)
            v = s["vhat"]
        return x - s["m"] * alpha / (np.sqrt(v) + epsilon)
    return step


def rmsprop_ref(lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **_):
    def step(s, x, g, t):
        s["velocity"] = rho * s.setdefault("velocity", np.zeros_like(x)) + (1 - rho) * g * g
        denominator = s["velocity"] + epsilon
        if centered:
            s["average_gradient"] = (rho * s.setdefault("average_gradient", np.zeros_like(x))
                                     + (1 - rho) * g)
            denominator = s["velocity"] - s["average_gradient"] ** 2 + epsilon
        increment = lr * g / np.sqrt(denominator)
        if momentum > 0:
            s["momentum"] = momentum * s.setdefault("momentum", np.zeros_like(x)) + increment
            return x - s["momentum"]
        return x - increment
    return step


def adagrad_ref(lr, initial_accumulator_value=0.1, epsilon=1e-7, **_):
    def step(s, x, g, t):
        acc = s.setdefault("accumulator", np.full_like(x, initial_accumulator_value))
        s["accumulator"] = acc + g * g
        return x - lr * g / np.sqrt(s["accumulator"] + epsilon)
    return step


def nadam_ref(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **_):
    def u(i):  # the momentum cache of step i
        return beta_1 * (1 - 0.5 * 0.96 ** i)

    def step(s, x, g, t):
        u_product = np.prod([u(i) for i in range(1, t + 1)])
        m = s.setdefault("m", np.zeros_like(x))
        v = s.setdefault("v", np.zeros_like(x))
        s["m"] = m + (g - m) * (1 - beta_1)
        s["v"] = v + (g * g - v) * (1 - beta_2)
        m_hat = (u(t + 1) * s["m"] / (1 - u_product * u(t + 1))
                 + (1 - u(t)) * g / (1 - u_product))
        return x - m_hat * lr / (np.sqrt(s["v"] / (1 - beta_2 ** t)) + epsilon)
    return step


def adamax_ref(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **_):
    def step(s, x, g, t):
        m = s.setdefault("m", np.zeros_like(x))
        s["m"] = m + (g - m) * (1 - beta_1)
        s["v"] = np.maximum(beta_2 * s.setdefault("v", np.zeros_like(x)), np.abs(g))
        return x - lr * s["m"] / ((1 - beta_1 ** t) * (s["v"] + epsilon))
    return step


def adadelta_ref(lr, rho=0.95, epsilon=1e-7, **_):
    def step(s, x, g, t):
        acc_g = s.setdefault("accumulated_grad", np.zeros_like(x))
        acc_d = s.setdefault("accumulated_delta_var", np.zeros_like(x))
        s["accumulated_grad"] = rho * acc_g + (1 - rho) * g * g
        delta = -np.sqrt(acc_d + epsilon) * g / np.sqrt(s["accumulated_grad"] + epsilon)
        s["accumulated_delta_var"] = rho * acc_d + (1 - rho) * delta * delta
        return x + lr * delta
    return step


CASES = [
    ("sgd", tf.optimizers.SGD, sgd_ref, dict(learning_rate=0.1)),
    ("sgd_momentum", tf.optimizers.SGD, sgd_ref, dict(learning_rate=0.1, momentum=0.9)),
    ("sgd_nesterov", tf.optimizers.SGD, sgd_ref,
     dict(learning_rate=0.05, momentum=0.8, nesterov=True)),
    ("adam", tf.optimizers.Adam, adam_ref, dict(learning_rate=0.01)),
    ("adam_amsgrad", tf.optimizers.Adam, adam_ref,
     dict(learning_rate=0.02, beta_1=0.8, beta_2=0.9, amsgrad=True)),
    ("adamw", tf.optimizers.AdamW, adam_ref, dict(learning_rate=0.01, weight_decay=0.1)),
    ("nadam", tf.optimizers.Nadam, nadam_ref, dict(learning_rate=0.01)),
    ("nadam_betas", tf.optimizers.Nadam, nadam_ref,
     dict(learning_rate=0.05, beta_1=0.8, beta_2=0.99, epsilon=1e-3)),
    ("rmsprop", tf.optimizers.RMSprop, rmsprop_ref, dict(learning_rate=0.01)),
    ("rmsprop_momentum_centered", tf.optimizers.RMSprop, rmsprop_ref,
     dict(learning_rate=0.01, rho=0.8, momentum=0.5, centered=True)),
    ("adagrad", tf.optimizers.Adagrad, adagrad_ref, dict(learning_rate=0.1)),
    ("adagrad_eps", tf.optimizers.Adagrad, adagrad_ref,
     dict(learning_rate=0.3, initial_accumulator_value=0.5, epsilon=1e-3)),
    ("adamax", tf.optimizers.Adamax, adamax_ref, dict(learning_rate=0.01)),
    ("adamax_betas", tf.optimizers.Adamax, adamax_ref,
     dict(learning_rate=0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3)),
    ("adadelta", tf.optimizers.Adadelta, adadelta_ref, dict(learning_rate=1.0)),
    ("adadelta_rho", tf.optimizers.Adadelta, adadelta_ref,
     dict(learning_rate=0.5, rho=0.8, epsilon=1e-4)),
]
IDS = [c[0] for c in CASES]


def _ref(ref, kw):
    kw = dict(kw)
    kw["lr"] = F32(kw.pop("learning_rate"))
    return ref(**kw)


def _grads(rng, shape, steps):
    return [rng.normal(size=shape) for _ in range(steps)]


# --------------------------------------------------------------------------- dense


@pytest.mark.parametrize("name,cls,ref,kw", CASES, ids=IDS)
def test_dense_updates_match_reference(name, cls, ref, kw):
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(3, 4))
    b0 = rng.normal(size=(4,))
    w, b = tf.Variable(x0), tf.Variable(b0)
    opt = cls(**kw)
    step = _ref(ref, kw)
    sw, sb, xw, xb = {}, {}, x0, b0
    for t, (gw, gb) in enumerate(zip(_grads(rng, (3, 4), 5), _grads(rng, (4,), 5)), 1):
        it = opt.apply_gradients(zip([tf.constant(gw), tf.constant(gb)], [w, b]))
        xw, xb = step(sw, xw, gw, t), step(sb, xb, gb, t)
        np.testing.assert_allclose(w.numpy(), xw, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.numpy(), xb, rtol=1e-12, atol=1e-14)
        assert it is opt.iterations and int(opt.iterations) == t
    assert opt.iterations.dtype == tf.int64
    # the slots hold the reference's state
    for i, state in enumerate([sw, sb]):
        for slot, value in state.items():
            np.testing.assert_allclose(opt._trackable_children()[f"{slot}/{i}"].numpy(), value,
                                       rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,cls,ref,kw", CASES, ids=IDS)
def test_float32_variables(name, cls, ref, kw):
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(5,)).astype(np.float32)
    v = tf.Variable(x0)
    opt = cls(**kw)
    step, state, x = _ref(ref, kw), {}, x0.astype(np.float64)
    for t, g in enumerate(_grads(rng, (5,), 3), 1):
        g = g.astype(np.float32)
        opt.apply_gradients([(g, v)])  # a NumPy gradient converts
        x = step(state, x, g.astype(np.float64), t)
        assert v.dtype == tf.float32
        np.testing.assert_allclose(v.numpy(), x, rtol=2e-5, atol=2e-6)


def test_defaults_follow_keras():
    assert float(tf.optimizers.SGD().learning_rate) == F32(0.01)
    adam = tf.optimizers.Adam()
    assert (F32(0.001), 0.9, 0.999, 1e-7, False) == (
        float(adam.learning_rate), adam.beta_1, adam.beta_2, adam.epsilon, adam.amsgrad)
    assert tf.optimizers.AdamW().weight_decay == 0.004
    rms = tf.optimizers.RMSprop()
    assert (rms.rho, rms.momentum, rms.epsilon, rms.centered) == (0.9, 0.0, 1e-7, False)
    ada = tf.optimizers.Adagrad()
    assert (ada.initial_accumulator_value, ada.epsilon) == (0.1, 1e-7)
    adamax = tf.optimizers.Adamax()
    assert (F32(0.001), 0.9, 0.999, 1e-7, "Adamax") == (
        float(adamax.learning_rate), adamax.beta_1, adamax.beta_2, adamax.epsilon, adamax.name)
    adadelta = tf.optimizers.Adadelta()
    assert (F32(0.001), 0.95, 1e-7, "Adadelta") == (
        float(adadelta.learning_rate), adadelta.rho, adadelta.epsilon, adadelta.name)
    for name, cls in [("adamax", tf.optimizers.Adamax), ("adadelta", tf.optimizers.Adadelta)]:
        got = tf.keras.optimizers.get(name)
        assert type(got) is cls and got.name == name and tf.keras.optimizers.__dict__[
            cls.__name__] is cls
    with pytest.raises(ValueError, match="momentum"):
        tf.optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="weight_decay"):
        tf.optimizers.AdamW(weight_decay=None)


# --------------------------------------------------------------------------- sparse


# LazyAdam: the lazy rule (only the named rows of the variable and its slots move)
LAZY_CASES = [
    ("lazy_adam", tf.optimizers.LazyAdam, adam_ref, dict(learning_rate=0.01)),
    ("lazy_adam_amsgrad", tf.optimizers.LazyAdam, adam_ref,
     dict(learning_rate=0.02, beta_1=0.8, beta_2=0.9, amsgrad=True)),
    ("lazy_adam_weight_decay", tf.optimizers.LazyAdam, adam_ref,
     dict(learning_rate=0.01, weight_decay=0.1)),
]
LAZY_IDS = [c[0] for c in LAZY_CASES]
# Rules whose sparse step, equal to the dense one, changes only the named rows: rows never
# named keep their values (no weight decay) ...
UNDECAYED = [c for c in CASES if "weight_decay" not in c[3]] + LAZY_CASES
# ... and a zero gradient changes nothing, so only the named rows are read and written
ROWS_ONLY = [c for c in CASES if c[0] in ("sgd", "adagrad", "adagrad_eps")] + LAZY_CASES


# Overlapping index sets with repeats; rows 3, 5 and 7 never get a gradient, and each step
# leaves out rows that earlier steps gave momentum.
SPARSE_STEPS = [[1, 4, 1], [4, 2, 4, 4], [6], [2, 2, 1, 0], [0, 6, 6], [0, 4]]
UNTOUCHED = [3, 5, 7]


def _initial(cls, kw, slot):
    return kw.get("initial_accumulator_value", 0.1) if slot == "accumulator" else 0.0


def lazy_step(step, initial, state, x, indices, values, t):
    """The lazy sparse rule: sum the values of repeated indices, run the dense reference on
    the touched rows of the variable and of its slots, and write only those rows back."""
    rows, where = np.unique(indices, return_inverse=True)
    g = np.zeros((len(rows),) + values.shape[1:])
    np.add.at(g, where, values)
    touched = {k: v[rows] for k, v in state.items()}
    new_rows = step(touched, x[rows], g, t)
    for k, v in touched.items():
        state[k] = state.get(k, np.full_like(x, initial(k))).copy()
        state[k][rows] = v
    x = x.copy()
    x[rows] = new_rows
    return x


def _slots_by_name(opt):
    return {k.split("/")[0]: v for k, v in opt._trackable_children().items() if "/" in k}


@pytest.mark.parametrize("name,cls,ref,kw", LAZY_CASES, ids=LAZY_IDS)
def test_sparse_updates_are_lazy(name, cls, ref, kw):
    """A LazyAdam sparse step sums repeated indices and updates only the touched rows of the
    variable and its slots (as TF Addons' LazyAdam / SparseAdam), bias corrections counting
    every step; the other rows, slots included, keep their bits even when they carry
    momentum."""
    rng = np.random.default_rng(2)
    x0 = rng.normal(size=(8, 3))
    v = tf.Variable(x0)
    opt = cls(**kw)
    opt.apply_gradients([(tf.constant(rng.normal(size=(8, 3))), v)])  # a dense step first
    # the reference starts from the state the dense step left (checked by the dense tests)
    step, x = _ref(ref, kw), v.numpy()
    slots = _slots_by_name(opt)
    state = {k: s.numpy() for k, s in slots.items()}
    initial = lambda slot: _initial(cls, kw, slot)  # noqa: E731
    for t, indices in enumerate(SPARSE_STEPS, 2):
        values = rng.normal(size=(len(indices), 3))
        before = {"var": v.numpy(), **{k: s.numpy() for k, s in slots.items()}}
        grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices), [8, 3])
        opt.apply_gradients([(grad, v)])
        x = lazy_step(step, initial, state, x, np.array(indices), values, t)
        np.testing.assert_allclose(v.numpy(), x, rtol=1e-12, atol=1e-14)
        for k, s in slots.items():
            np.testing.assert_allclose(s.numpy(), state[k], rtol=1e-12, atol=1e-14)
        others = sorted(set(range(8)) - set(indices))
        after = {"var": v.numpy(), **{k: s.numpy() for k, s in slots.items()}}
        for k in before:  # bit for bit, weight decay included
            np.testing.assert_array_equal(after[k][others], before[k][others], err_msg=k)
        assert (after["var"][indices] != before["var"][indices]).all()
        if slots:  # the left-out rows had history that a dense (Keras) step would decay
            assert any(np.any(before[k][others] != _initial(cls, kw, k)) for k in slots)
    assert int(opt.iterations) == len(SPARSE_STEPS) + 1


@pytest.mark.parametrize("name,cls,ref,kw", UNDECAYED, ids=[c[0] for c in UNDECAYED])
def test_sparse_updates_of_rows_never_touched(name, cls, ref, kw):
    """Rows no gradient ever named keep their value and their slots' initial values (the
    dense rule with zero gradients from the start leaves them, as the lazy rule does)."""
    rng = np.random.default_rng(5)
    x0 = rng.normal(size=(8, 2)).astype(np.float32)
    v = tf.Variable(x0)
    opt = cls(**kw)
    for indices in SPARSE_STEPS:
        opt.apply_gradients([(tf.IndexedSlices(
            tf.constant(rng.normal(size=(len(indices), 2)).astype(np.float32)),
            tf.constant(indices, tf.int64)), v)])
    np.testing.assert_array_equal(v.numpy()[UNTOUCHED], x0[UNTOUCHED])
    for k, slot in _slots_by_name(opt).items():
        np.testing.assert_array_equal(slot.numpy()[UNTOUCHED],
                                      np.float32(_initial(cls, kw, k)))


@pytest.mark.parametrize("name,cls,ref,kw", ROWS_ONLY, ids=[c[0] for c in ROWS_ONLY])
def test_sparse_step_reads_and_writes_only_the_touched_rows(name, cls, ref, kw):
    """On a 200000 x 32 table, a sparse step on 16 rows (LazyAdam's, or one of a rule that
    a zero gradient leaves as it is) only gathers those rows of the variable and its slots
    and scatters them back in place: no kernel makes or takes a table-sized tensor but the
    row gathers and the in-place row scatters."""
    rows, width, touched = 200_000, 32, 16
    table_bytes = rows * width * 4
    v = tf.Variable(np.zeros((rows, width), np.float32))
    opt = cls(**kw)
    indices = tf.constant(np.arange(0, 4 * touched, 4))
    grad = tf.IndexedSlices(tf.ones([touched, width]), indices, [rows, width])
    opt.apply_gradients([(grad, v)])  # builds the slots
    before = v.numpy()
    from tapeflow._core.tensor import counters
    base = counters[2]
    info = tf.profile(lambda: opt.apply_gradients([(grad, v)]))
    assert info["peak_bytes"] - base < table_bytes / 100
    n_tables = 1 + len(_slots_by_name(opt))
    seen = {"GatherV2": 0, "InplaceScatterUpdate": 0}
    for k in info["kernels"]:
        assert k["bytes_added"] < table_bytes / 100, k
        if [rows, width] in k["input_shapes"]:  # the table itself: rows in, rows out
            assert k["name"] in seen, k
            assert [touched] in k["input_shapes"], k
            seen[k["name"]] += 1
        else:
            assert all(rows not in shape for shape in k["output_shapes"]), k
    assert seen == {"GatherV2": n_tables, "InplaceScatterUpdate": n_tables}
    changed = np.nonzero((v.numpy() != before).any(axis=1))[0]
    assert changed.tolist() == indices.numpy().tolist()
    # the same check fails for a dense step: it makes table-sized tensors
    dense = tf.profile(lambda: opt.apply_gradients([(tf.zeros([rows, width]), v)]))
    assert max(k["bytes_added"] for k in dense["kernels"]) >= table_bytes


def test_sparse_sgd_values():
    v = tf.Variable(np.ones((4, 2)))
    tf.optimizers.SGD(learning_rate=0.5).apply_gradients(
        [(tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [1.0, 1.0]], tf.float64),
                           tf.constant([3, 0, 3])), v)])
    np.testing.assert_allclose(v.numpy(), [[-0.5, -1.0], [1, 1], [1, 1], [0.0, -0.5]])


def test_sparse_gradient_from_gather_under_a_tape():
    start = np.arange(1.0, 13.0).reshape(6, 2)
    table = tf.Variable(start)
    opt = tf.optimizers.Adam(learning_rate=0.1)
    ids = tf.constant([0, 3, 3])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(tf.gather(table, ids)))
    grad = tape.gradient(loss, table)
    assert isinstance(grad, tf.IndexedSlices)
    opt.apply_gradients([(grad, table)])
    after = table.numpy()
    np.testing.assert_array_equal(after[[1, 2, 4, 5]], start[[1, 2, 4, 5]])
    # Adam's first step moves each touched entry by lr against the gradient's sign
    np.testing.assert_allclose(after[[0, 3]], start[[0, 3]] - F32(0.1),
                               atol=1e-6)


def test_sparse_gradient_must_fit_the_variable():
    v = tf.Variable(np.zeros((4, 2)))
    opt = tf.optimizers.SGD()
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not fit"):
        opt.apply_gradients([(tf.IndexedSlices(tf.ones([1, 3], tf.float64), [0]), v)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"GatherV2.*not in \[0, 4\)"):
        opt.apply_gradients([(tf.IndexedSlices(tf.ones([1, 2], tf.float64), [4]), v)])
    np.testing.assert_array_equal(v.numpy(), np.zeros((4, 2)))  # nothing written
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match"):
        opt.apply_gradients([(tf.ones([2, 4], tf.float64), v)])


# --------------------------------------------------------------------------- variable scatters


def test_variable_scatter_methods():
    v = tf.Variable(np.zeros((4, 2), np.float32))
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), tf.constant([2, 0, 2]))
    assert v.scatter_add(s) is v
    np.testing.assert_array_equal(v.numpy(), [[3, 4], [0, 0], [6, 8], [0, 0]])
    held = v.read_value()  # a tensor sharing the value: the update must not change it
    v.scatter_sub(s)
    np.testing.assert_array_equal(v.numpy(), np.zeros((4, 2)))
    np.testing.assert_array_equal(held.numpy(), [[3, 4], [0, 0], [6, 8], [0, 0]])
    v.scatter_update(tf.IndexedSlices(tf.constant([[9.0, 8.0]]), tf.constant([3])))
    np.testing.assert_array_equal(v.numpy()[3], [9, 8])
    with pytest.raises(TypeError, match="IndexedSlices"):
        v.scatter_add(tf.ones([4, 2]))
    with pytest.raises(TypeError, match="IndexedSlices"):
        v.scatter_sub(tf.ones([4, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="ResourceScatterAdd.*shape"):
        v.scatter_add(tf.IndexedSlices(tf.ones([1, 3]), tf.constant([0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        v.scatter_add(tf.IndexedSlices(tf.ones([1, 2]), tf.constant([-1])))
    np.testing.assert_array_equal(v.numpy()[:3], np.zeros((3, 2)))  # failures change nothing


def test_deduplicate_slices():
    from tapeflow.ops.state import deduplicate_slices
    d = deduplicate_slices(tf.IndexedSlices(tf.constant([[1.0], [2.0], [3.0]]),
                                            tf.constant([2, 0, 2]), [3, 1]))
    np.testing.assert_array_equal(d.indices.numpy(), [0, 2])
    np.testing.assert_array_equal(d.values.numpy(), [[2.0], [4.0]])
    empty = deduplicate_slices(tf.IndexedSlices(tf.zeros([0, 2]), tf.zeros([0], tf.int32)))
    assert empty.values.shape == (0, 2) and empty.indices.shape == (0,)


# --------------------------------------------------------------------------- learning rates


def test_learning_rate_variable_is_read_each_step():
    lr = tf.Variable(0.5, dtype=tf.float64)
    v = tf.Variable(np.array([1.0, 2.0]))
    opt = tf.optimizers.SGD(learning_rate=lr)
    assert opt.learning_rate is lr
    opt.apply_gradients([(tf.constant([1.0, 1.0], tf.float64), v)])
    lr.assign(0.25)
    opt.apply_gradients([(tf.constant([1.0, 1.0], tf.float64), v)])
    np.testing.assert_allclose(v.numpy(), [0.25, 1.25])


def test_learning_rate_setter():
    opt = tf.optimizers.SGD(learning_rate=0.5)
    v = tf.Variable(np.array([1.0]))
    opt.learning_rate = 0.25
    opt.apply_gradients([(tf.constant([1.0], tf.float64), v)])
    np.testing.assert_allclose(v.numpy(), [0.75])
    opt.learning_rate = lambda step: 0.5
    opt.apply_gradients([(tf.constant([1.0], tf.float64), v)])
    np.testing.assert_allclose(v.numpy(), [0.25])


def test_callable_schedule_gets_the_step():
    seen = []

    def schedule(step):
        seen.append(int(step))
        return 0.1 * tf.cast(step + 1, tf.float32)

    v = tf.Variable(np.array([0.0]))
    opt = tf.optimizers.SGD(learning_rate=schedule)
    for _ in range(3):
        opt.apply_gradients([(tf.constant([1.0], tf.float64), v)])
    assert seen == [0, 1, 2]
    np.testing.assert_allclose(v.numpy(), [-(F32(0.1) + F32(0.2) + F32(0.3))], rtol=1e-6)
    # a callable without arguments works too (as Keras allows)
    opt2 = tf.optimizers.SGD(learning_rate=lambda: 0.5)
    opt2.apply_gradients([(tf.constant([1.0], tf.float64), v)])
    np.testing.assert_allclose(float(opt2.learning_rate), 0.5)


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    s = tf.optimizers.schedules.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.5,
                                                 staircase=staircase)
    assert isinstance(s, tf.optimizers.schedules.LearningRateSchedule)
    for step in [0, 1, 4, 7, 10]:
        p = step // 4 if staircase else step / 4
        np.testing.assert_allclose(float(s(step)), 0.1 * 0.5 ** p, rtol=1e-6)
    v = tf.Variable(np.array([0.0]))
    opt = tf.optimizers.Adagrad(learning_rate=s, initial_accumulator_value=0.0)
    expected, acc = 0.0, 0.0
    for t in range(6):
        opt.apply_gradients([(tf.constant([1.0], tf.float64), v)])
        acc += 1.0
        p = t // 4 if staircase else t / 4
        expected -= F32(0.1 * 0.5 ** p) / np.sqrt(acc + 1e-7)
        np.testing.assert_allclose(v.numpy(), [expected], rtol=1e-6)
    np.testing.assert_allclose(float(opt.learning_rate), 0.1 * 0.5 ** ((6 // 4) if staircase
                                                                       else 6 / 4), rtol=1e-6)
    with pytest.raises(ValueError, match="decay_steps"):
        tf.optimizers.schedules.ExponentialDecay(0.1, 0, 0.5)


# --------------------------------------------------------------------------- None, state


def test_none_gradients_are_skipped_with_a_warning():
    a = tf.Variable(np.array([1.0]), name="alpha")
    b = tf.Variable(np.array([2.0]), name="beta")
    opt = tf.optimizers.Adam(learning_rate=0.1)
    with pytest.warns(UserWarning, match="beta"):
        opt.apply_gradients([(tf.constant([1.0], tf.float64), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.9], rtol=1e-6)
    assert b.numpy().tolist() == [2.0]
    assert int(opt.iterations) == 1
    with pytest.warns(UserWarning, match="alpha"):  # nothing to apply: no step counted
        assert opt.apply_gradients([(None, a)]) is opt.iterations
    assert int(opt.iterations) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert opt.apply_gradients([]) is opt.iterations


def test_bad_pairs_raise():
    opt = tf.optimizers.SGD()
    with pytest.raises(TypeError, match="Variable"):
        opt.apply_gradients([(tf.constant(1.0), tf.constant(1.0))])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([tf.constant(1.0)])


def test_variables_and_trackable_children_are_stable():
    w = tf.Variable(np.zeros((2, 2)), name="w")
    b = tf.Variable(np.zeros((2,)), name="b")
    opt = tf.optimizers.Adam(amsgrad=True)
    assert opt.variables == [opt.iterations]
    opt.build([w, b])
    first = list(opt.variables)
    assert len(first) == 7 and first[0] is opt.iterations
    assert [v.shape for v in first[1:]] == [(2, 2)] * 3 + [(2,)] * 3
    assert all(not v.trainable for v in first)
    children = opt._trackable_children()
    assert list(children) == ["iterations", "m/0", "v/0", "vhat/0", "m/1", "v/1", "vhat/1"]
    assert list(children.values()) == first
    assert opt.variables() == first  # legacy code calls it
    opt.apply_gradients(zip([tf.ones([2], tf.float64), tf.ones([2, 2], tf.float64)], [b, w]))
    assert opt.variables == first  # the order of building holds, not of later calls
    # a variable seen later is built then, after the others
    c = tf.Variable(np.zeros((3,)))
    opt.apply_gradients([(tf.ones([3], tf.float64), c)])
    assert opt.variables[:7] == first and len(opt.variables) == 10
    sgd = tf.optimizers.SGD()
    sgd.build([w])
    assert list(sgd._trackable_children()) == ["iterations"]
    sgd_m = tf.optimizers.SGD(momentum=0.5)
    sgd_m.build([w])
    assert list(sgd_m._trackable_children()) == ["iterations", "m/0"]
    assert list(tf.optimizers.RMSprop(momentum=0.1, centered=True).__class__(
        momentum=0.1, centered=True)._trackable_children()) == ["iterations"]


def test_minimize():
    v = tf.Variable(np.array([3.0]))
    opt = tf.optimizers.SGD(learning_rate=0.25)
    assert opt.minimize(lambda: tf.reduce_sum(v * v), [v]) is None
    np.testing.assert_allclose(v.numpy(), [1.5])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * v)
    opt.minimize(loss, lambda: [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [0.75])
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(tf.constant(1.0), [v])


# --------------------------------------------------------------------------- traced steps


def _model(seed):
    rng = np.random.default_rng(seed)
    return (tf.Variable(rng.normal(size=(3, 2))), tf.Variable(rng.normal(size=(2,))),
            tf.Variable(rng.normal(size=(5, 3))))


def _loss(w, b, table, x, ids):
    h = tf.gather(table, ids)  # a sparse gradient for the table
    return tf.reduce_sum(tf.square(tf.matmul(h * x, w) + b))


@pytest.mark.parametrize("name,cls,ref,kw", CASES, ids=IDS)
def test_traced_step_equals_eager(name, cls, ref, kw):
    eager_vars, traced_vars = _model(3), _model(3)
    eager_opt, traced_opt = cls(**kw), cls(**kw)

    def step(opt, variables, x, ids):
        with tf.GradientTape() as tape:
            loss = _loss(*variables, x, ids)
        grads = tape.gradient(loss, list(variables))
        opt.apply_gradients(zip(grads, variables))
        return loss

    traced = tf.function(lambda x, ids: step(traced_opt, traced_vars, x, ids))
    rng = np.random.default_rng(4)
    for i in range(4):
        x = tf.constant(rng.normal(size=(4, 3)))
        ids = tf.constant(rng.integers(0, 5, size=4))
        want = step(eager_opt, eager_vars, x, ids)
        got = traced(x, ids)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        for e, t in zip(eager_vars, traced_vars):
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)
        if i == 0:
            slots = list(traced_opt.variables)
        assert traced_opt.variables == slots  # made on the first trace only
    assert traced.experimental_get_tracing_count() == 1
    assert int(traced_opt.iterations) == 4
    for e, t in zip(eager_opt.variables, traced_opt.variables):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_traced_step_sees_learning_rate_changes():
    v = tf.Variable(np.array([1.0]))
    opt = tf.optimizers.SGD(learning_rate=0.5)
    lr_var = tf.Variable(0.5, dtype=tf.float64)
    opt2 = tf.optimizers.SGD(learning_rate=lr_var)

    @tf.function
    def step(g):
        opt.apply_gradients([(g, v)])
        opt2.apply_gradients([(g, v)])

    step(tf.constant([1.0], tf.float64))
    opt.learning_rate = 0.25
    lr_var.assign(0.125)
    step(tf.constant([1.0], tf.float64))
    np.testing.assert_allclose(v.numpy(), [1.0 - 0.5 - 0.5 - 0.25 - 0.125])
    assert step.experimental_get_tracing_count() == 1


def test_traced_schedule():
    s = tf.optimizers.schedules.ExponentialDecay(1.0, 1, 0.5)
    v = tf.Variable(np.array([0.0]))
    opt = tf.optimizers.SGD(learning_rate=s)
    step = tf.function(lambda: opt.apply_gradients([(tf.constant([1.0], tf.float64), v)]))
    for _ in range(3):
        step()
    np.testing.assert_allclose(v.numpy(), [-(1.0 + 0.5 + 0.25)])


def test_other_schedules():
    sch = tf.optimizers.schedules
    inv = sch.InverseTimeDecay(0.5, decay_steps=3, decay_rate=2.0)
    inv_stair = sch.InverseTimeDecay(0.5, decay_steps=3, decay_rate=2.0, staircase=True)
    pw = sch.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1])
    cosine = sch.CosineDecay(1.0, decay_steps=4, alpha=0.1)
    for step in range(8):
        np.testing.assert_allclose(float(inv(step)), 0.5 / (1 + 2.0 * step / 3), rtol=1e-6)
        np.testing.assert_allclose(float(inv_stair(step)), 0.5 / (1 + 2.0 * (step // 3)),
                                   rtol=1e-6)
        np.testing.assert_allclose(float(pw(step)), 1.0 if step <= 2 else 0.5 if step <= 5
                                   else 0.1, rtol=1e-6)
        t = min(step, 4) / 4
        np.testing.assert_allclose(float(cosine(step)),
                                   0.9 * 0.5 * (1 + np.cos(np.pi * t)) + 0.1, rtol=1e-6)
    with pytest.raises(ValueError, match="one more"):
        sch.PiecewiseConstantDecay([1, 2], [1.0, 0.5])
    # a traced step follows the schedule through the iterations variable
    v = tf.Variable(np.array([0.0]))
    opt = tf.optimizers.SGD(learning_rate=pw)
    step = tf.function(lambda: opt.apply_gradients([(tf.constant([1.0], tf.float64), v)]))
    for _ in range(7):
        step()
    np.testing.assert_allclose(v.numpy(), [-(3 * 1.0 + 3 * 0.5 + F32(0.1))], rtol=1e-7)


def test_nadam_matches_keras_and_checkpoints_its_momentum_product(tmp_path):
    """Four float32 steps against values real Keras 3's Nadam gave (TensorFlow 2.21, the
    same gradients); the product of momentum caches is one optimizer-wide variable,
    advanced once per step however many variables there are, and checkpointed."""
    v, s = tf.Variable(np.array([1.0, -2.0, 0.5], np.float32)), tf.Variable(np.float32(1.0))
    opt = tf.keras.optimizers.get("nadam")
    assert isinstance(opt, tf.optimizers.Nadam) and opt.name == "nadam"
    opt.learning_rate = 0.1
    for i in range(4):
        g = np.array([3.0, -1.0, 0.2], np.float32) * (i + 1) - v.numpy()
        opt.apply_gradients([(tf.constant(g), v), (tf.constant(np.float32(3.0)), s)])
    np.testing.assert_allclose(v.numpy(), [0.6061388, -1.9671502, 0.6850704], atol=1e-6)
    np.testing.assert_allclose(s.numpy(), 0.675055742263794, atol=1e-6)
    u = opt._trackable_children()["u_product"]
    want = np.prod([0.9 * (1 - 0.5 * 0.96 ** i) for i in range(1, 5)])
    assert u.dtype == tf.float32 and opt.variables[-1] is u and len(opt.variables) == 6
    np.testing.assert_allclose(u.numpy(), want, rtol=1e-6)
    path = tf.train.Checkpoint(opt=opt).save(str(tmp_path / "ckpt"))
    fresh = tf.optimizers.Nadam(learning_rate=0.1)
    tf.train.Checkpoint(opt=fresh).restore(path)
    v2, s2 = tf.Variable(v.numpy()), tf.Variable(s.numpy())
    fresh.build([v2, s2])
    np.testing.assert_allclose(fresh._trackable_children()["u_product"].numpy(), u.numpy())
    assert int(fresh.iterations) == 4
