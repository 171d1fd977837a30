"""keras.random (distributions, shapes, dtypes, seed rules of Keras 3: an int seed repeats,
a SeedGenerator advances and replays) and keras.constraints (values computed with real
Keras 3.15, snippets beside them)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import tapeflow as tf
from tapeflow import keras

R = keras.random
N = 20000  # samples for the moment checks: the tolerances are ~5 standard errors


def _np(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


# --------------------------------------------------------------------------- seeds
def test_int_seed_repeats_and_seed_generator_advances_then_replays():
    a = _np(R.normal((3, 4), seed=7))
    np.testing.assert_array_equal(a, _np(R.normal((3, 4), seed=7)))
    assert not np.array_equal(a, _np(R.normal((3, 4), seed=8)))
    gen = R.SeedGenerator(42)
    first, second = _np(R.uniform((5,), seed=gen)), _np(R.uniform((5,), seed=gen))
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(gen.state.numpy(), [42, 2])  # [seed, draws so far]
    again = R.SeedGenerator(42)
    np.testing.assert_array_equal(_np(R.uniform((5,), seed=again)), first)
    np.testing.assert_array_equal(_np(R.uniform((5,), seed=again)), second)
    # the state is a non-trainable int64 variable of shape [2], as Keras's
    assert gen.state.dtype == tf.int64 and not gen.state.trainable
    assert gen.get_config()["seed"] == 42
    assert R.SeedGenerator.from_config(gen.get_config()).get_config() == gen.get_config()


def test_unseeded_calls_differ_and_set_random_seed_replays_them():
    keras.utils.set_random_seed(3)
    a, b = _np(R.normal((4,))), _np(R.normal((4,)))
    assert not np.array_equal(a, b)
    keras.utils.set_random_seed(3)
    np.testing.assert_array_equal(_np(R.normal((4,))), a)
    np.testing.assert_array_equal(_np(R.normal((4,))), b)


def test_seed_errors_as_keras():
    with pytest.raises(ValueError, match="must be either an integer or an instance"):
        R.normal((2,), seed="1")
    with pytest.raises(ValueError, match="Argument `seed` must be an integer"):
        R.SeedGenerator(1.5)
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        R.SeedGenerator(1, foo=2)


def test_seed_generator_inside_function_advances_per_call():
    gen = R.SeedGenerator(5)
    f = tf.function(lambda: R.normal((3,), seed=gen))
    a, b = _np(f()), _np(f())
    assert not np.array_equal(a, b)
    replay = R.SeedGenerator(5)
    np.testing.assert_array_equal(a, _np(R.normal((3,), seed=replay)))


# --------------------------------------------------------------------------- distributions
def test_normal_uniform_truncated_moments_shapes_dtypes():
    x = _np(R.normal((N,), mean=2.0, stddev=3.0, seed=1))
    assert x.dtype == np.float32 and abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.08
    x = _np(R.normal((2, 3), dtype="float64", seed=1))
    assert x.shape == (2, 3) and x.dtype == np.float64
    u = _np(R.uniform((N,), minval=-1.0, maxval=3.0, seed=2))
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    assert stats.kstest(u, stats.uniform(-1, 4).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="requires a floating point"):
        R.uniform((2,), dtype="int32")
    t = _np(R.truncated_normal((N,), mean=1.0, stddev=0.5, seed=3))
    assert t.min() >= 0.0 and t.max() <= 2.0
    # a standard normal truncated to ±2: std sqrt(1 - 2*2*phi(2)/(2*Phi(2)-1)) = 0.8796
    assert abs(t.std() - 0.5 * 0.87962566) < 0.01 and abs(t.mean() - 1.0) < 0.02


def test_randint_and_categorical():
    r = _np(R.randint((N,), 3, 8, seed=4))
    assert r.dtype == np.int32 and r.min() == 3 and r.max() == 7
    np.testing.assert_allclose(np.bincount(r - 3) / N, 0.2, atol=0.015)
    assert _np(R.randint((2,), 0, 5, dtype="uint8", seed=1)).dtype == np.uint8
    with pytest.raises(ValueError, match="requires an integer"):
        R.randint((2,), 0, 5, dtype="float32")
    logits = np.log([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0 + 1e-30]]).astype(np.float32)
    c = _np(R.categorical(logits, N, seed=5))
    assert c.shape == (2, N) and c.dtype == np.int32
    np.testing.assert_allclose(np.bincount(c[0], minlength=3) / N, [0.1, 0.2, 0.7], atol=0.015)
    np.testing.assert_allclose(np.bincount(c[1], minlength=3) / N, [0.5, 0.5, 0.0], atol=0.015)
    assert _np(R.categorical(logits, 3, dtype="int64", seed=5)).dtype == np.int64
    with pytest.raises(ValueError, match="2-D tensor"):
        R.categorical([0.0, 1.0], 2)


def test_dropout_and_shuffle():
    y = _np(R.dropout(np.ones((N,), np.float32), 0.3, seed=6))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((y == 0).mean() - 0.3) < 0.015
    np.testing.assert_array_equal(_np(R.dropout(np.ones((3,), np.float32), 0.0)), 1.0)
    np.testing.assert_array_equal(_np(R.dropout(np.ones((3,), np.float32), 1.0)), 0.0)
    z = _np(R.dropout(np.ones((50, 4), np.float32), 0.5, noise_shape=(None, 1), seed=2))
    assert all(len(set(row)) == 1 for row in z)  # one decision per row
    x = np.arange(12).reshape(3, 4)
    s = _np(R.shuffle(x, seed=1))
    assert sorted(map(tuple, s)) == sorted(map(tuple, x))
    s1 = _np(R.shuffle(x, axis=1, seed=1))
    perm = s1[0]  # one permutation of the columns, the same in every row
    assert sorted(perm) == [0, 1, 2, 3] and np.array_equal(s1, x[:, perm])


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5, 9.0])
def test_gamma_matches_the_distribution(alpha):
    g = _np(R.gamma((N,), alpha, seed=11))
    assert g.dtype == np.float32 and g.min() > 0
    assert stats.kstest(g, stats.gamma(alpha).cdf).pvalue > 1e-3
    assert abs(g.mean() - alpha) < 5 * np.sqrt(alpha / N)


def test_gamma_alpha_per_entry_and_beta_binomial():
    g = _np(R.gamma((N, 2), alpha=np.array([1.0, 4.0], np.float32), seed=3))
    np.testing.assert_allclose(g.mean(axis=0), [1.0, 4.0], atol=0.08)
    b = _np(R.beta((N,), 2.0, 5.0, seed=4))
    assert 0 < b.min() and b.max() < 1
    assert stats.kstest(b, stats.beta(2, 5).cdf).pvalue > 1e-3
    n = _np(R.binomial((N,), counts=10.0, probabilities=0.3, seed=5))
    assert n.dtype == np.float32 and set(np.unique(n)) <= set(range(11))
    assert abs(n.mean() - 3.0) < 0.05 and abs(n.var() - 2.1) < 0.1


# --------------------------------------------------------------------------- constraints
W = np.array([[1.0, -2.0, 0.0], [3.0, 0.5, 0.0], [-0.5, 4.0, 0.0]], np.float32)

# import keras, numpy as np; w = <W above>; c(w) for each constraint (Keras 3.15.1)
KERAS_VALUES = [
    (keras.constraints.MaxNorm(2.0), [[0.6246950626373291, -0.8888888955116272, 0.0],
                                      [1.8740851879119873, 0.2222222238779068, 0.0],
                                      [-0.31234753131866455, 1.7777777910232544, 0.0]]),
    (keras.constraints.MaxNorm(1.5, axis=1), [[0.6708203554153442, -1.3416407108306885, 0.0],
                                              [1.4795907735824585, 0.24659846723079681, 0.0],
                                              [-0.1860520988702774, 1.4884167909622192, 0.0]]),
    (keras.constraints.MinMaxNorm(1.0, 3.0, rate=0.5),
     [[0.968521237373352, -1.6666666269302368, 0.0], [2.9055638313293457, 0.4166666567325592, 0.0],
      [-0.484260618686676, 3.3333332538604736, 0.0]]),
    (keras.constraints.MinMaxNorm(0.5, 1.0, axis=[0, 1]),
     [[0.18107150495052338, -0.36214300990104675, 0.0],
      [0.5432144999504089, 0.09053575247526169, 0.0],
      [-0.09053575247526169, 0.7242860198020935, 0.0]]),
    (keras.constraints.NonNeg(), [[1.0, 0.0, 0.0], [3.0, 0.5, 0.0], [0.0, 4.0, 0.0]]),
    (keras.constraints.UnitNorm(), [[0.31234753131866455, -0.4444444477558136, 0.0],
                                    [0.9370425343513489, 0.1111111119389534, 0.0],
                                    [-0.15617376565933228, 0.8888888955116272, 0.0]]),
    (keras.constraints.UnitNorm(axis=1), [[0.4472135901451111, -0.8944271802902222, 0.0],
                                          [0.9863938689231873, 0.16439898312091827, 0.0],
                                          [-0.12403473258018494, 0.9922778606414795, 0.0]]),
]


@pytest.mark.parametrize("constraint,expected", KERAS_VALUES,
                         ids=lambda v: type(v).__name__ if not isinstance(v, list) else "")
def test_constraints_match_keras(constraint, expected):
    np.testing.assert_allclose(_np(constraint(tf.constant(W))), expected, rtol=1e-6, atol=1e-7)
    # a variable works too (what the optimizer hands over)
    np.testing.assert_allclose(_np(constraint(tf.Variable(W))), expected, rtol=1e-6, atol=1e-7)


def test_constraint_configs_get_serialize_deserialize():
    C = keras.constraints
    assert C.MaxNorm().get_config() == {"max_value": 2, "axis": 0}
    assert C.MinMaxNorm().get_config() == {"min_value": 0.0, "max_value": 1.0, "rate": 1.0,
                                           "axis": 0}
    assert C.UnitNorm().get_config() == {"axis": 0} and C.NonNeg().get_config() == {}
    # keras.constraints.serialize(keras.constraints.MinMaxNorm())
    assert C.serialize(C.MinMaxNorm()) == {
        "module": "keras.constraints", "class_name": "MinMaxNorm",
        "config": {"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0},
        "registered_name": None}
    back = C.deserialize(C.serialize(C.MaxNorm(3.0, axis=1)))
    assert isinstance(back, C.MaxNorm) and back.get_config() == {"max_value": 3.0, "axis": 1}
    assert isinstance(C.get("max_norm"), C.MaxNorm) and isinstance(C.get("NonNeg"), C.NonNeg)
    assert isinstance(C.get(C.UnitNorm), C.UnitNorm)
    assert C.get(None) is None and C.max_norm is C.MaxNorm and C.non_neg is C.NonNeg

    def fn(w):
        return w
    assert C.get(fn) is fn
    with pytest.raises(ValueError, match="Could not interpret constraint"):
        C.get("no_such_constraint")
    base = C.Constraint()
    np.testing.assert_array_equal(_np(base(tf.constant(W))), W)


def test_custom_constraint_round_trips_through_the_registry():
    @keras.utils.register_keras_serializable(package="test_rc")
    class Clip(keras.constraints.Constraint):
        def __init__(self, limit=1.0):
            self.limit = limit

        def __call__(self, w):
            return tf.clip_by_value(w, -self.limit, self.limit)

        def get_config(self):
            return {"limit": self.limit}

    config = keras.constraints.serialize(Clip(0.5))
    assert config["registered_name"] == "test_rc>Clip"
    back = keras.constraints.deserialize(config)
    assert isinstance(back, Clip) and back.limit == 0.5
    np.testing.assert_allclose(_np(back(tf.constant([-2.0, 0.2, 3.0]))), [-0.5, 0.2, 0.5])
