"""Sparse gradients (IndexedSlices, every embedding's) against the same gradient made dense,
in every optimizer: bit for bit eagerly, and against NumPy transcriptions of Keras's rules,
over several steps whose batches name distinct rows, repeated rows (summed before the
update) and different rows from step to step; traced steps against eager ones; LazyAdam's
lazy rule; and what a sparse step costs (no table-sized gradient)."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tests.train import test_optimizers
from tests.train.test_optimizers import F32, adagrad_ref, adam_ref, adamax_ref, sgd_ref

ROWS, WIDTH = 12, 3

# Each batch names rows of a 12-row table: distinct rows, repeated rows, rows earlier steps
# left out (and back again), one row alone; rows 10 and 11 are never named. "dense" is a
# dense step in between (a variable may get both kinds of gradient).
BATCHES = [[1, 4, 7], [4, 2, 4, 4], [9], "dense", [0, 9, 9, 3], [8, 5, 1], [2, 2], [6, 0, 4]]

# every dense test's case, and weight decay (which moves rows a batch does not name)
CASES = test_optimizers.CASES + [
    ("sgd_weight_decay", tf.optimizers.SGD, sgd_ref, dict(learning_rate=0.1, weight_decay=0.2)),
    ("adam_weight_decay", tf.optimizers.Adam, adam_ref,
     dict(learning_rate=0.01, weight_decay=0.3)),
    ("adagrad_weight_decay", tf.optimizers.Adagrad, adagrad_ref,
     dict(learning_rate=0.3, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("adamax_weight_decay", tf.optimizers.Adamax, adamax_ref,
     dict(learning_rate=0.05, beta_1=0.8, beta_2=0.9, weight_decay=0.1)),
]
IDS = [c[0] for c in CASES]


def _reference(ref, kw):
    """The NumPy rule for `kw` (learning rate as float32 holds it), with Keras's weight
    decay `x -= x * weight_decay * lr` first for the rules whose reference lacks it."""
    kw = dict(kw)
    lr = kw["lr"] = F32(kw.pop("learning_rate"))
    decay = kw.get("weight_decay") if ref is not adam_ref else None
    step = ref(**kw)
    if not decay:
        return step
    return lambda s, x, g, t: step(s, x - x * decay * lr, g, t)


def _slots(opt) -> dict:
    return {k.split("/")[0]: v for k, v in opt._trackable_children().items() if "/" in k}


def _batch(rng, batch, dtype):
    """(IndexedSlices or dense tensor, the dense gradient as NumPy) for one step: the dense
    form sums the values of repeated rows in their order, as `np.add.at` does."""
    if batch == "dense":
        dense = rng.normal(size=(ROWS, WIDTH)).astype(dtype)
        return tf.constant(dense), dense
    values = rng.normal(size=(len(batch), WIDTH)).astype(dtype)
    dense = np.zeros((ROWS, WIDTH), dtype)
    np.add.at(dense, np.array(batch), values)
    return tf.IndexedSlices(tf.constant(values), tf.constant(batch), [ROWS, WIDTH]), dense


# --------------------------------------------------------------------------- eager


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,cls,ref,kw", CASES, ids=IDS)
def test_sparse_steps_equal_dense_steps_bit_for_bit(name, cls, ref, kw, dtype):
    """Every step, sparse against the same gradient made dense, on the variable and on
    every slot: the same bits, and the NumPy rule's values."""
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(ROWS, WIDTH)).astype(dtype)
    sparse_var, dense_var = tf.Variable(x0), tf.Variable(x0)
    sparse_opt, dense_opt = cls(**kw), cls(**kw)
    step, state, x = _reference(ref, kw), {}, x0.astype(np.float64)
    moved_unnamed = False  # whether rows a batch left out changed (variable or slots)
    for t, batch in enumerate(BATCHES, 1):
        grad, dense = _batch(rng, batch, dtype)
        before = [sparse_var.numpy()] + [s.numpy() for s in _slots(sparse_opt).values()]
        sparse_opt.apply_gradients([(grad, sparse_var)])
        dense_opt.apply_gradients([(tf.constant(dense), dense_var)])
        x = step(state, x, dense.astype(np.float64), t)
        np.testing.assert_array_equal(sparse_var.numpy(), dense_var.numpy())
        sparse_slots, dense_slots = _slots(sparse_opt), _slots(dense_opt)
        assert sorted(sparse_slots) == sorted(dense_slots) == sorted(state)
        for slot in sparse_slots:
            np.testing.assert_array_equal(sparse_slots[slot].numpy(), dense_slots[slot].numpy(),
                                          err_msg=slot)
        if dtype == np.float64:
            np.testing.assert_allclose(sparse_var.numpy(), x, rtol=1e-12, atol=1e-14)
            for slot, value in state.items():
                np.testing.assert_allclose(sparse_slots[slot].numpy(), value, rtol=1e-12,
                                           atol=1e-14, err_msg=slot)
        else:
            np.testing.assert_allclose(sparse_var.numpy(), x, rtol=2e-5, atol=2e-6)
        if batch != "dense" and t > 1:  # (the first step makes the slots)
            unnamed = sorted(set(range(ROWS)) - set(batch))
            after = [sparse_var.numpy()] + [s.numpy() for s in sparse_slots.values()]
            moved_unnamed |= any((a[unnamed] != b[unnamed]).any() for a, b in zip(after, before))
    assert int(sparse_opt.iterations) == len(BATCHES)
    # rows a batch leaves out change exactly where a zero gradient changes them: decay,
    # momentum, moving averages (not what a lazy rule gives)
    keeps = cls is tf.optimizers.Adagrad or (cls is tf.optimizers.SGD
                                             and not kw.get("momentum"))
    assert moved_unnamed == (not keeps or bool(kw.get("weight_decay")))


def test_rows_never_named_follow_the_dense_rule():
    """Rows no batch names: Adam leaves them (their m and v stay 0), Adam with weight decay
    and SGD with momentum move them (decay; momentum from a dense step), as dense steps."""
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(ROWS, WIDTH))
    cases = [(tf.optimizers.Adam(0.1), False), (tf.optimizers.Adam(0.1, weight_decay=0.5), True),
             (tf.optimizers.SGD(0.1, momentum=0.9), True)]
    for opt, moves in cases:
        v = tf.Variable(x0)
        if isinstance(opt, tf.optimizers.SGD):  # momentum in every row first
            opt.apply_gradients([(tf.constant(np.ones((ROWS, WIDTH))), v)])
        after_dense = v.numpy()
        opt.apply_gradients([(tf.IndexedSlices(tf.ones([2, WIDTH], tf.float64), [0, 0]), v)])
        assert (v.numpy()[10:] != after_dense[10:]).any() == moves
    # the momentum step in closed form: m = 0.9 * (-0.1) and var += m in each unnamed row
    np.testing.assert_allclose(v.numpy()[10:], x0[10:] - F32(0.1) - 0.9 * F32(0.1),
                               rtol=1e-12)


def test_repeated_rows_are_summed_before_the_update():
    """Adam's first step on one row named twice with values a and b: the row's gradient is
    a + b, so v = (1 - beta_2) (a + b)^2 (Keras 3 on TensorFlow would square a and b
    separately: (1 - beta_2) (a^2 + b^2))."""
    table = tf.Variable(np.zeros((4, 2)))
    opt = tf.optimizers.Adam(learning_rate=0.1)
    a, b = np.array([1.0, -3.0]), np.array([2.0, 1.0])
    grad = tf.IndexedSlices(tf.constant(np.stack([a, b])), tf.constant([2, 2]), [4, 2])
    opt.apply_gradients([(grad, table)])
    slots = _slots(opt)
    np.testing.assert_allclose(slots["m"].numpy()[2], 0.1 * (a + b), rtol=1e-12)
    np.testing.assert_allclose(slots["v"].numpy()[2], 0.001 * (a + b) ** 2, rtol=1e-12)
    np.testing.assert_array_equal(slots["v"].numpy()[[0, 1, 3]], 0.0)
    alpha = F32(0.1) * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(table.numpy()[2], -alpha * 0.1 * (a + b) / (
        np.sqrt(0.001 * (a + b) ** 2) + 1e-7), rtol=1e-12)


def test_sparse_gradient_without_a_dense_shape():
    """An IndexedSlices with no dense_shape takes the variable's."""
    for run in (lambda f: f(), lambda f: tf.function(f)()):
        sparse, dense = tf.Variable(np.ones((5, 2))), tf.Variable(np.ones((5, 2)))
        opt_s, opt_d = tf.optimizers.RMSprop(0.1), tf.optimizers.RMSprop(0.1)
        opt_d.apply_gradients([(tf.constant(np.ones((5, 2))), dense)])
        opt_s.apply_gradients([(tf.constant(np.ones((5, 2))), sparse)])
        grad = np.zeros((5, 2))
        grad[3] = [2.0, -1.0]
        run(lambda: opt_s.apply_gradients([(tf.IndexedSlices(
            tf.constant([[2.0, -1.0]], tf.float64), tf.constant([3])), sparse)]))
        opt_d.apply_gradients([(tf.constant(grad), dense)])
        np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- traced


FIXED = [[1, 4, 7, 7], [4, 2, 4, 4], [9, 0, 3, 9], [8, 5, 1, 6], [2, 2, 2, 2], [6, 0, 4, 11]]


@pytest.mark.parametrize("name,cls,ref,kw", CASES, ids=IDS)
def test_traced_sparse_steps_equal_eager_and_dense(name, cls, ref, kw):
    """A traced step on IndexedSlices (traced once) against eager sparse steps and the
    NumPy rule: the same values to float64 rounding, slots included."""
    rng = np.random.default_rng(2)
    x0 = rng.normal(size=(ROWS, WIDTH))
    traced_var, eager_var = tf.Variable(x0), tf.Variable(x0)
    traced_opt, eager_opt = cls(**kw), cls(**kw)
    step, state, x = _reference(ref, kw), {}, x0

    @tf.function
    def traced(values, ids):
        traced_opt.apply_gradients([(tf.IndexedSlices(values, ids, [ROWS, WIDTH]), traced_var)])

    for t, batch in enumerate(FIXED, 1):
        values = rng.normal(size=(len(batch), WIDTH))
        traced(tf.constant(values), tf.constant(batch))
        eager_opt.apply_gradients([(tf.IndexedSlices(tf.constant(values), tf.constant(batch),
                                                     [ROWS, WIDTH]), eager_var)])
        dense = np.zeros((ROWS, WIDTH))
        np.add.at(dense, np.array(batch), values)
        x = step(state, x, dense, t)
        np.testing.assert_allclose(traced_var.numpy(), eager_var.numpy(), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(traced_var.numpy(), x, rtol=1e-12, atol=1e-14)
        for slot, value in _slots(traced_opt).items():
            np.testing.assert_allclose(value.numpy(), state[slot], rtol=1e-12, atol=1e-14,
                                       err_msg=slot)
    assert traced.experimental_get_tracing_count() == 1
    assert int(traced_opt.iterations) == len(FIXED)


@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam", "rmsprop", "adagrad"])
def test_embedding_model_trains_as_with_dense_gradients(optimizer):
    """A text-like model (an embedding, a dense layer) trained on batches naming different
    ids, eagerly and traced: the same weights as training it on the gradients made dense."""
    make = {name: (cls, kw) for name, cls, _, kw in CASES}[optimizer]
    rng = np.random.default_rng(3)
    batches = [(tf.constant(rng.integers(0, 50, size=(4, 3))),
                tf.constant(rng.normal(size=(4, 1)))) for _ in range(5)]
    results = []
    for densify, traced in [(False, False), (True, False), (False, True), (True, True)]:
        tf.random.set_seed(7)
        embedding = tf.layers.Embedding(50, 6, dtype=tf.float64)
        head = tf.layers.Dense(1, dtype=tf.float64)
        opt = make[0](**make[1])

        def train_step(ids, y):
            with tf.GradientTape() as tape:
                h = tf.reduce_mean(embedding(ids), axis=1)
                loss = tf.reduce_mean(tf.square(head(h) - y))
            variables = embedding.trainable_variables + head.trainable_variables
            grads = tape.gradient(loss, variables)
            assert isinstance(grads[0], tf.IndexedSlices)
            if densify:
                grads = [tf.convert_to_tensor(g) for g in grads]
            opt.apply_gradients(zip(grads, variables))

        step = tf.function(train_step) if traced else train_step
        for ids, y in batches:
            step(ids, y)
        results.append([v.numpy() for v in embedding.variables + head.variables])
    for other in results[1:]:
        for got, want in zip(other, results[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for got, want in zip(results[1], results[0]):  # eager: the same bits
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- cost


@pytest.mark.parametrize("name,cls,ref,kw", [c for c in CASES if c[0] in (
    "sgd_momentum", "adam", "adamw", "nadam", "rmsprop_momentum_centered")],
    ids=["sgd_momentum", "adam", "adamw", "nadam", "rmsprop_momentum_centered"])
def test_eager_sparse_step_makes_no_dense_gradient(name, cls, ref, kw):
    """On a 200000 x 32 table an eager sparse step of a rule that moves every row makes no
    table-sized gradient (no densifying kernel) and scatters the named rows in place: it
    allocates less than the step on the gradient made dense."""
    rows, width, named = 200_000, 32, 64
    table_bytes = rows * width * 4
    grad = tf.IndexedSlices(tf.ones([named, width]),
                            tf.constant(np.arange(0, 3 * named, 3)), [rows, width])
    sparse_var, dense_var = (tf.Variable(np.zeros((rows, width), np.float32)) for _ in "ab")
    sparse_opt, dense_opt = cls(**kw), cls(**kw)
    sparse_opt.apply_gradients([(grad, sparse_var)])  # builds the slots
    dense_opt.apply_gradients([(tf.convert_to_tensor(grad), dense_var)])
    sparse = tf.profile(lambda: sparse_opt.apply_gradients([(grad, sparse_var)]))
    dense = tf.profile(lambda: dense_opt.apply_gradients([(tf.convert_to_tensor(grad),
                                                           dense_var)]))
    names = [k["name"] for k in sparse["kernels"]]
    assert "UnsortedSegmentSum" not in names and "ScatterNd" not in names
    scatters = [k for k in sparse["kernels"] if k["name"] == "InplaceScatterUpdate"]
    assert len(scatters) == 1 + len(_slots(sparse_opt))
    # the scatters come last and write in place (a table copied first would add bytes)
    first = names.index("InplaceScatterUpdate")
    assert all(k["bytes_added"] == 0 for k in sparse["kernels"][first:])
    assert max(k["bytes_added"] for k in sparse["kernels"]) <= table_bytes
    # (both steps make table-sized temporaries: the rule moves every row)
    made = [sum(k["bytes_added"] for k in info["kernels"]) for info in (sparse, dense)]
    assert made[0] < made[1] - 1.5 * table_bytes  # no gradient, no g - m, no g²
    assert sparse["peak_bytes"] <= dense["peak_bytes"] - table_bytes / 2
    np.testing.assert_array_equal(sparse_var.numpy(), dense_var.numpy())


def _row_sized(info, table_bytes) -> bool:
    """Whether no kernel but a variable read (which shares the table) makes anything near
    a table's size."""
    return all(k["bytes_added"] < table_bytes / 100 for k in info["kernels"]
               if k["name"] != "ReadVariableOp")


@pytest.mark.parametrize("make", [lambda: tf.optimizers.SGD(0.1),
                                  lambda: tf.optimizers.Adagrad(0.1)], ids=["sgd", "adagrad"])
def test_rules_a_zero_gradient_leaves_touch_only_the_named_rows(make):
    """SGD without momentum and Adagrad: a zero gradient changes nothing, so their dense-
    equivalent sparse step reads and writes only the named rows (O(rows named)), eager and
    traced."""
    rows, width, named = 200_000, 32, 16
    table_bytes = rows * width * 4
    opt = make()
    v = tf.Variable(np.zeros((rows, width), np.float32))
    grad = tf.IndexedSlices(tf.ones([named, width]), tf.constant(np.arange(0, 4 * named, 4)),
                            [rows, width])
    traced = tf.function(lambda: opt.apply_gradients([(grad, v)]))
    for step in (lambda: opt.apply_gradients([(grad, v)]), traced):
        step()  # builds the slots; traces
        before = v.numpy()
        info = tf.profile(step)
        assert _row_sized(info, table_bytes)
        changed = np.nonzero((v.numpy() != before).any(axis=1))[0]
        assert changed.tolist() == list(range(0, 4 * named, 4))


# --------------------------------------------------------------------------- LazyAdam


def lazy_adam_step(ref_step, state, x, indices, values, t):
    """TF Addons' LazyAdam in NumPy: sum repeated rows, run Adam on the named rows of the
    variable and its slots, write only those rows back."""
    rows, where = np.unique(indices, return_inverse=True)
    g = np.zeros((len(rows),) + values.shape[1:])
    np.add.at(g, where.reshape(-1), values)
    named = {k: v[rows] for k, v in state.items()}
    new_rows = ref_step(named, x[rows], g, t)
    for k, v in named.items():
        state[k] = state.get(k, np.zeros_like(x)).copy()
        state[k][rows] = v
    x = x.copy()
    x[rows] = new_rows
    return x


@pytest.mark.parametrize("kw", [dict(learning_rate=0.01),
                                dict(learning_rate=0.02, beta_1=0.8, beta_2=0.9, amsgrad=True),
                                dict(learning_rate=0.01, weight_decay=0.2)],
                         ids=["plain", "amsgrad", "weight_decay"])
def test_lazy_adam_moves_only_the_named_rows(kw):
    rng = np.random.default_rng(4)
    x0 = rng.normal(size=(ROWS, WIDTH))
    v = tf.Variable(x0)
    opt = tf.optimizers.LazyAdam(**kw)
    ref_kw = dict(kw, lr=F32(kw["learning_rate"]))
    ref_kw.pop("learning_rate")
    step = adam_ref(**ref_kw)
    # a dense step first: every row carries momentum that Adam would keep applying
    g0 = rng.normal(size=(ROWS, WIDTH))
    opt.apply_gradients([(tf.constant(g0), v)])
    state = {}
    x = step(state, x0, g0, 1)
    np.testing.assert_allclose(v.numpy(), x, rtol=1e-12)
    for t, batch in enumerate([b for b in BATCHES if b != "dense"], 2):
        values = rng.normal(size=(len(batch), WIDTH))
        before = {"var": v.numpy(), **{k: s.numpy() for k, s in _slots(opt).items()}}
        opt.apply_gradients([(tf.IndexedSlices(tf.constant(values), tf.constant(batch)), v)])
        x = lazy_adam_step(step, state, x, np.array(batch), values, t)
        np.testing.assert_allclose(v.numpy(), x, rtol=1e-12, atol=1e-14)
        after = {"var": v.numpy(), **{k: s.numpy() for k, s in _slots(opt).items()}}
        unnamed = sorted(set(range(ROWS)) - set(batch))
        for k in before:  # bit for bit, though these rows have momentum
            np.testing.assert_array_equal(after[k][unnamed], before[k][unnamed], err_msg=k)
            if k != "var":
                np.testing.assert_allclose(after[k], state[k], rtol=1e-12, atol=1e-14)
        assert (after["var"][batch] != before["var"][batch]).all()
        assert (before["m"][unnamed] != 0).all()


def test_lazy_adam_is_tf_addons_lazy_adam():
    opt = tf.optimizers.LazyAdam()
    assert isinstance(opt, tf.optimizers.Adam) and opt.name == "LazyAdam"
    assert (float(opt.learning_rate), opt.beta_1, opt.beta_2, opt.epsilon, opt.amsgrad) == (
        F32(0.001), 0.9, 0.999, 1e-7, False)
    assert tf.keras.optimizers.LazyAdam is tf.optimizers.LazyAdam
    assert "LazyAdam" in tf.keras.optimizers.__all__
    # dense gradients: exactly Adam
    rng = np.random.default_rng(5)
    x0 = rng.normal(size=(3, 2))
    a, b = tf.Variable(x0), tf.Variable(x0)
    lazy, adam = tf.optimizers.LazyAdam(0.1), tf.optimizers.Adam(0.1)
    for _ in range(3):
        g = tf.constant(rng.normal(size=(3, 2)))
        lazy.apply_gradients([(g, a)])
        adam.apply_gradients([(g, b)])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Adam moves a row the sparse step leaves out; LazyAdam does not
    grad = tf.IndexedSlices(tf.ones([1, 2], tf.float64), [0], [3, 2])
    lazy.apply_gradients([(grad, a)])
    adam.apply_gradients([(grad, b)])
    np.testing.assert_array_equal(a.numpy()[0], b.numpy()[0])
    assert (a.numpy()[1:] != b.numpy()[1:]).all()


def test_lazy_adam_traced_equals_eager_and_reads_only_the_named_rows():
    rows, width = 200_000, 8
    table_bytes = rows * width * 4
    eager_var = tf.Variable(np.zeros((rows, width), np.float32))
    traced_var = tf.Variable(np.zeros((rows, width), np.float32))
    eager_opt, traced_opt = tf.optimizers.LazyAdam(0.1), tf.optimizers.LazyAdam(0.1)

    @tf.function
    def traced(values, ids):
        traced_opt.apply_gradients([(tf.IndexedSlices(values, ids, [rows, width]), traced_var)])

    rng = np.random.default_rng(6)
    for batch in FIXED:
        values = tf.constant(rng.normal(size=(len(batch), width)).astype(np.float32))
        ids = tf.constant(np.array(batch) * 1000)
        traced(values, ids)
        eager_opt.apply_gradients([(tf.IndexedSlices(values, ids, [rows, width]), eager_var)])
    np.testing.assert_allclose(traced_var.numpy(), eager_var.numpy(), rtol=1e-6, atol=1e-7)
    info = tf.profile(lambda: traced(values, ids))
    assert _row_sized(info, table_bytes)
    assert traced.experimental_get_tracing_count() == 1


# --------------------------------------------------------------------------- Adamax, Adadelta


@pytest.mark.parametrize("name", ["adamax", "adadelta"])
def test_keras_model_resumes_with_adamax_and_adadelta(name, tmp_path):
    """`compile(optimizer="adamax" / "adadelta")`, saved to a .keras file after 3 steps and
    loaded: 2 more steps give the weights of 5 straight steps (the slots were saved)."""
    keras = tf.keras
    rng = np.random.default_rng(8)
    x, y = rng.random((5, 4, 3), dtype=np.float32), rng.random((5, 4, 2), dtype=np.float32)

    def model():
        keras.utils.set_random_seed(1)
        built = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                                  keras.layers.Dense(2)])
        built.compile(optimizer=keras.optimizers.get(name), loss="mse")
        built.optimizer.learning_rate = 0.05
        return built

    straight, first = model(), model()
    for step in range(5):
        straight.train_on_batch(x[step], y[step])
    for step in range(3):
        first.train_on_batch(x[step], y[step])
    first.save(tmp_path / "m.keras")
    resumed = keras.models.load_model(tmp_path / "m.keras")
    assert type(resumed.optimizer) is type(first.optimizer)
    assert int(resumed.optimizer.iterations) == 3
    for step in range(3, 5):
        resumed.train_on_batch(x[step], y[step])
    for got, want in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # the state is what made it: a fresh optimizer on the same weights goes elsewhere
    fresh = keras.models.load_model(tmp_path / "m.keras", compile=False)
    fresh.compile(optimizer=keras.optimizers.get(name), loss="mse")
    fresh.optimizer.learning_rate = 0.05
    for step in range(3, 5):
        fresh.train_on_batch(x[step], y[step])
    assert max(np.abs(a - b).max() for a, b in zip(fresh.get_weights(),
                                                    straight.get_weights())) > 1e-4
