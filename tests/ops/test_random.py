"""Random ops: statistics, seeding rules (TensorFlow's), shapes and dtypes, dropout,
differentiability of distribution parameters, and bad input."""
import numpy as np
import pytest
from scipy import special, stats

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tests.ops.rows_random import ROWS

N = 200_000


@pytest.fixture(autouse=True)
def _fresh_seed():
    tf.random.set_seed(20240601)
    yield
    tf.random.set_seed(None)


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_normal_statistics(dtype):
    x = tf.random.normal([N], mean=3.0, stddev=2.0, dtype=dtype).numpy()
    assert x.dtype == dtype.as_numpy_dtype
    assert abs(x.mean() - 3.0) < 0.02
    assert abs(x.std() - 2.0) < 0.02
    # a normal's quartiles sit at mean +- 0.6745 stddev
    np.testing.assert_allclose(np.percentile(x, [25, 75]), [3 - 1.349, 3 + 1.349], atol=0.03)


def test_uniform_float_statistics_and_bounds():
    x = tf.random.uniform([N], minval=-1.0, maxval=3.0).numpy()
    assert x.dtype == np.float32 and x.min() >= -1.0 and x.max() < 3.0
    assert abs(x.mean() - 1.0) < 0.02
    assert abs(x.var() - 16 / 12) < 0.02
    y = tf.random.uniform([N], dtype=tf.float64).numpy()
    assert y.min() >= 0.0 and y.max() < 1.0 and abs(y.mean() - 0.5) < 0.005


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16])
def test_uniform_half_types_stay_below_maxval(dtype):
    x = tf.random.uniform([N], dtype=dtype).numpy().astype(np.float32)
    assert x.min() >= 0.0 and x.max() < 1.0 and abs(x.mean() - 0.5) < 0.01


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_integers_cover_the_range_evenly(dtype):
    x = tf.random.uniform([N], minval=-3, maxval=4, dtype=dtype)
    assert x.dtype is dtype
    counts = np.bincount(x.numpy() + 3, minlength=7)
    assert counts.sum() == N and len(counts) == 7
    # chi-square goodness of fit against the uniform distribution on 7 values
    assert stats.chisquare(counts).pvalue > 1e-4


def test_truncated_normal_bounds_and_statistics():
    x = tf.random.truncated_normal([N], mean=1.0, stddev=0.5, dtype=tf.float64).numpy()
    assert np.all(np.abs(x - 1.0) <= 2 * 0.5)
    truncated = stats.truncnorm(-2, 2, loc=1.0, scale=0.5)
    assert abs(x.mean() - 1.0) < 0.005
    assert abs(x.std() - truncated.std()) < 0.005
    assert stats.kstest(x[:20000], truncated.cdf).pvalue > 1e-4


def test_categorical_frequencies_match_softmax():
    logits = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 3.0, -np.inf, 0.0]], np.float32)
    s = tf.random.categorical(tf.constant(logits), 100_000)
    assert s.shape == (2, 100_000) and s.dtype is tf.int64
    for row in range(2):
        freq = np.bincount(s.numpy()[row], minlength=4) / 100_000
        np.testing.assert_allclose(freq, special.softmax(logits[row]), atol=0.006)
    assert not np.any(s.numpy()[1] == 2)  # a -inf logit is never drawn


def test_categorical_dtype_and_empty_cases():
    x = tf.zeros([3, 5])
    assert tf.random.categorical(x, 4, dtype=tf.int32).dtype is tf.int32
    assert tf.random.categorical(x, 0).shape == (3, 0)
    assert tf.random.categorical(tf.zeros([0, 5]), 3).shape == (0, 3)
    big = tf.random.categorical(tf.constant([[0.0, 0.0, 50.0]]), 1000).numpy()
    assert np.all(big == 2)


def test_shuffle_permutes_rows_and_routes_gradients_back():
    x = tf.constant(np.arange(40.0).reshape(20, 2))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.random.shuffle(x)
        w = tf.constant(np.arange(40.0).reshape(20, 2) * 10)
        loss = tf.reduce_sum(y * w)
    yv = y.numpy()
    np.testing.assert_array_equal(np.sort(yv[:, 0]), x.numpy()[:, 0])
    np.testing.assert_array_equal(yv[:, 1] - yv[:, 0], np.ones(20))  # rows move whole
    assert not np.array_equal(yv, x.numpy())
    g = tape.gradient(loss, x).numpy()
    # the input row that went to output row j gets w[j]
    expected = np.empty_like(g)
    expected[(yv[:, 0] // 2).astype(int)] = w.numpy()
    np.testing.assert_array_equal(g, expected)
    s = tf.constant(5.0)
    assert tf.random.shuffle(s) is s


# --------------------------------------------------------------------------- seeding


def _draw():
    return [tf.random.normal([3]).numpy(), tf.random.uniform([2]).numpy(),
            tf.random.uniform([2], 0, 100, tf.int32).numpy(),
            tf.random.truncated_normal([2]).numpy(), tf.random.normal([2], seed=4).numpy(),
            tf.random.normal([2], seed=4).numpy()]


def test_global_seed_replays_the_same_sequence():
    tf.random.set_seed(7)
    first = _draw()
    tf.random.set_seed(7)
    second = _draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    tf.random.set_seed(8)
    third = _draw()
    assert not np.array_equal(first[0], third[0])


def test_successive_calls_differ_even_with_an_op_seed():
    # TensorFlow's eager rule: an op seed fixes the sequence, not every call's result
    tf.random.set_seed(1)
    a, b = tf.random.normal([4], seed=3).numpy(), tf.random.normal([4], seed=3).numpy()
    assert not np.array_equal(a, b)
    tf.random.set_seed(1)
    np.testing.assert_array_equal(tf.random.normal([4], seed=3).numpy(), a)
    assert not np.array_equal(tf.random.normal([4]).numpy(), tf.random.normal([4]).numpy())


def test_op_seed_alone_is_reproducible_and_depends_on_the_seed():
    tf.random.set_seed(None)
    a = tf.random.uniform([5], seed=11).numpy()
    tf.random.set_seed(None)
    np.testing.assert_array_equal(tf.random.uniform([5], seed=11).numpy(), a)
    assert not np.array_equal(tf.random.uniform([5], seed=12).numpy(), a)


def test_without_any_seed_results_differ():
    tf.random.set_seed(None)
    a = tf.random.normal([8]).numpy()
    tf.random.set_seed(None)
    assert not np.array_equal(tf.random.normal([8]).numpy(), a)


def test_generator_streams_are_reproducible_and_independent_of_global_state():
    g1 = tf.random.Generator.from_seed(42)
    a = [g1.normal([3]).numpy(), g1.uniform([3], maxval=5).numpy(),
         g1.truncated_normal([3]).numpy(), g1.uniform([3], 0, 9, tf.int64).numpy()]
    assert not np.array_equal(a[0], g1.normal([3]).numpy())  # its state advances
    tf.random.set_seed(99)
    g2 = tf.random.Generator.from_seed(42)
    tf.random.normal([10])  # global draws do not touch the generator
    b = [g2.normal([3]).numpy(), g2.uniform([3], maxval=5).numpy(),
         g2.truncated_normal([3]).numpy(), g2.uniform([3], 0, 9, tf.int64).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(tf.random.Generator.from_seed(43).normal([3]).numpy(), a[0])
    g2.reset_from_seed(42)
    np.testing.assert_array_equal(g2.normal([3]).numpy(), a[0])


def test_generator_split_and_nondeterministic_state():
    parent = tf.random.Generator.from_seed(1)
    kids = parent.split(3)
    draws = [k.normal([4]).numpy() for k in kids]
    assert len({d.tobytes() for d in draws}) == 3
    again = tf.random.Generator.from_seed(1).split(3)
    np.testing.assert_array_equal(again[1].normal([4]).numpy(), draws[1])
    a = tf.random.Generator.from_non_deterministic_state().normal([4]).numpy()
    b = tf.random.Generator.from_non_deterministic_state().normal([4]).numpy()
    assert not np.array_equal(a, b)
    assert isinstance(tf.random.get_global_generator(), tf.random.Generator)


def test_every_random_row_is_deterministic():
    """The op-table rows reset their seed per call; otherwise derivative checks are noise."""
    for row in ROWS:
        args = [tf.constant(a) for a in row.sample(np.random.default_rng(0), "float64")]
        a, b = row.fn(*args), row.fn(*args)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=row.name)


# --------------------------------------------------------------------------- shapes, dtypes


@pytest.mark.parametrize("make", [
    lambda s, d: tf.random.normal(s, dtype=d),
    lambda s, d: tf.random.uniform(s, dtype=d),
    lambda s, d: tf.random.truncated_normal(s, dtype=d),
    lambda s, d: tf.random.Generator.from_seed(0).normal(s, dtype=d),
])
@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64])
def test_shapes_and_dtypes(make, dtype):
    for shape in ([], [0], [2, 3], tf.constant([4, 1]), 5):
        x = make(shape, dtype)
        want = tuple(shape.numpy()) if isinstance(shape, tf.Tensor) else \
            ((shape,) if isinstance(shape, int) else tuple(shape))
        assert x.shape == want and x.dtype is dtype


# --------------------------------------------------------------------------- gradients


def test_gradients_with_respect_to_distribution_parameters():
    mean, stddev = tf.constant(1.5), tf.constant(2.0)
    lo, hi = tf.constant(-1.0), tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([mean, stddev, lo, hi])
        y = tf.random.normal([1000], mean, stddev)
        t = tf.random.truncated_normal([1000], mean, stddev)
        u = tf.random.uniform([1000], lo, hi)
        sy, st, su = tf.reduce_sum(y), tf.reduce_sum(t), tf.reduce_sum(u)
    gm, gs = tape.gradient(sy, [mean, stddev])
    assert float(gm) == 1000.0
    assert float(gs) == pytest.approx(float(tf.reduce_sum((y - mean) / stddev)), rel=1e-5)
    gm, gs = tape.gradient(st, [mean, stddev])
    assert float(gm) == 1000.0
    assert float(gs) == pytest.approx(float(tf.reduce_sum((t - mean) / stddev)), rel=1e-5)
    glo, ghi = tape.gradient(su, [lo, hi])
    frac = ((u - lo) / (hi - lo)).numpy()
    assert float(ghi) == pytest.approx(frac.sum(), rel=1e-4)
    assert float(glo) == pytest.approx((1 - frac).sum(), rel=1e-4)


# --------------------------------------------------------------------------- dropout


def test_dropout_scales_kept_values_and_drops_about_rate():
    x = tf.ones([N])
    y = tf.nn.dropout(x, rate=0.3).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(1 - kept.mean() - 0.3) < 0.005
    assert abs(y.mean() - 1.0) < 0.01  # the expectation is preserved


def test_dropout_noise_shape_shares_decisions():
    x = tf.ones([50, 40])
    y = tf.nn.dropout(x, 0.5, noise_shape=[1, 40]).numpy()
    assert np.all(y == y[:1])  # whole columns are kept or dropped
    assert 0 < (y[0] == 0).sum() < 40
    y = tf.nn.dropout(x, 0.5, noise_shape=[None, 1]).numpy()
    assert np.all(y == y[:, :1])


def test_dropout_gradient_matches_finite_differences_with_a_fixed_seed():
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(6, 5))
    w = tf.constant(rng.normal(size=(6, 5)))

    def f(x):
        tf.random.set_seed(3)
        return tf.reduce_sum(tf.nn.dropout(x, 0.4, seed=2) * w)

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = np.zeros_like(x0)
    for i in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        numeric[i] = (float(f(tf.constant(x0 + d))) - float(f(tf.constant(x0 - d)))) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    assert set(np.round(np.unique(g / w.numpy()), 6)) <= {0.0, round(1 / 0.6, 6)}


def test_dropout_rate_zero_returns_the_input_and_half_precision_works():
    x = tf.ones([3])
    assert tf.nn.dropout(x, 0.0) is x
    y = tf.nn.dropout(tf.ones([1000], tf.float16), 0.5)
    assert y.dtype is tf.float16
    assert set(np.unique(y.numpy()).tolist()) <= {0.0, 2.0}
    assert tf.nn.dropout(tf.ones([4]), tf.constant(0.5)).shape == (4,)


# --------------------------------------------------------------------------- errors

X = tf.ones([3, 4])
XI = tf.ones([3], tf.int32)
V4 = tf.ones([4])
M_INT = tf.ones([2, 2], tf.int32)
NO_CLASSES = tf.ones([2, 0])
BAD = [
    ("random.normal", lambda: tf.random.normal([2, -1])),
    ("random.normal", lambda: tf.random.normal([2], dtype=tf.int32)),
    ("random.normal", lambda: tf.random.normal([2], seed=1.5)),
    ("random.normal", lambda: tf.random.normal("ab")),
    ("random.uniform", lambda: tf.random.uniform([2], dtype=tf.int32)),
    ("random.uniform", lambda: tf.random.uniform([2], 5, 5, dtype=tf.int64)),
    ("random.uniform", lambda: tf.random.uniform([2], 0, 300, dtype=tf.uint8)),
    ("random.uniform", lambda: tf.random.uniform([2], dtype=tf.bool)),
    ("random.truncated_normal", lambda: tf.random.truncated_normal([2], dtype=tf.int64)),
    ("random.categorical", lambda: tf.random.categorical(V4, 2)),
    ("random.categorical", lambda: tf.random.categorical(M_INT, 2)),
    ("random.categorical", lambda: tf.random.categorical(X, -1)),
    ("random.categorical", lambda: tf.random.categorical(X, 2, dtype=tf.float32)),
    ("random.categorical", lambda: tf.random.categorical(NO_CLASSES, 2)),
    ("Dropout", lambda: tf.nn.dropout(X, 1.0)),
    ("Dropout", lambda: tf.nn.dropout(X, -0.1)),
    ("Dropout", lambda: tf.nn.dropout(XI, 0.5)),
    ("Dropout", lambda: tf.nn.dropout(X, 0.5, noise_shape=[2, 4])),
    ("Dropout", lambda: tf.nn.dropout(X, 0.5, noise_shape=[4])),
    ("Dropout", lambda: tf.nn.dropout(X, X)),
    ("Generator.normal", lambda: tf.random.Generator.from_seed(1).normal([2], dtype=tf.int32)),
    ("Generator.uniform", lambda: tf.random.Generator.from_seed(1).uniform([2], dtype=tf.int32)),
    ("Generator.from_seed", lambda: tf.random.Generator.from_seed("x")),
    ("set_seed", lambda: tf.random.set_seed(1.5)),
]


@pytest.mark.parametrize("op,call", BAD, ids=[f"{op}-{i}" for i, (op, _) in enumerate(BAD)])
def test_bad_input_raises_naming_the_op(op, call):
    before = tf.memory()
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert op in str(info.value)
    after = tf.memory()
    assert (after["num_tensors"], after["num_bytes"]) == (before["num_tensors"],
                                                          before["num_bytes"])
