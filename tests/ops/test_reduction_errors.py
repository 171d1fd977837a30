"""Validation of reductions, scans, top_k, add_n and norm clipping, plus the behaviour the
op table cannot express (ties, zeros in products, single inputs, IndexedSlices)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

F = tf.constant([[1.0, 2.0], [3.0, 4.0]])
B = tf.constant([[True, False]])
I = tf.constant([[1, 2], [3, 4]])
C = tf.constant([1 + 1j, 2 - 1j])
S = tf.constant(1.0)
V3 = tf.ones([3])
F64 = tf.ones([2, 2], tf.float64)
EMPTY = tf.zeros([0, 3])

BAD_CALLS = [
    ("reduce_sum", lambda: tf.reduce_sum(F, axis=2)),
    ("reduce_sum", lambda: tf.reduce_sum(F, axis=-3)),
    ("reduce_sum", lambda: tf.reduce_sum(B)),
    ("reduce_sum", lambda: tf.reduce_sum(S, axis=0)),
    ("reduce_sum", lambda: tf.reduce_sum(F, axis=1.5)),
    ("reduce_mean", lambda: tf.reduce_mean(F, axis=[0, 5])),
    ("reduce_mean", lambda: tf.reduce_mean(B)),
    ("reduce_max", lambda: tf.reduce_max(C)),
    ("reduce_max", lambda: tf.reduce_max(B)),
    ("reduce_max", lambda: tf.reduce_max(F, axis=2)),
    ("reduce_min", lambda: tf.reduce_min(C)),
    ("reduce_prod", lambda: tf.reduce_prod(B)),
    ("reduce_prod", lambda: tf.reduce_prod(F, 3)),
    ("reduce_logsumexp", lambda: tf.reduce_logsumexp(I)),
    ("reduce_logsumexp", lambda: tf.reduce_logsumexp(F, axis=-3)),
    ("reduce_variance", lambda: tf.math.reduce_variance(I)),
    ("reduce_std", lambda: tf.math.reduce_std(B)),
    ("reduce_variance", lambda: tf.math.reduce_variance(F, axis=4)),
    ("reduce_any", lambda: tf.reduce_any(F)),
    ("reduce_all", lambda: tf.reduce_all(I)),
    ("reduce_all", lambda: tf.reduce_all(B, axis=2)),
    ("argmax", lambda: tf.argmax(F, axis=2)),
    ("argmax", lambda: tf.argmax(S)),
    ("argmax", lambda: tf.argmax(C)),
    ("argmax", lambda: tf.argmax(F, output_type=tf.float32)),
    ("argmin", lambda: tf.argmin(EMPTY)),
    ("top_k", lambda: tf.math.top_k(F, k=3)),
    ("top_k", lambda: tf.math.top_k(F, k=-1)),
    ("top_k", lambda: tf.math.top_k(S)),
    ("top_k", lambda: tf.math.top_k(C)),
    ("top_k", lambda: tf.math.top_k(F, k=1, index_type=tf.float32)),
    ("cumsum", lambda: tf.math.cumsum(F, axis=2)),
    ("cumsum", lambda: tf.math.cumsum(S)),
    ("cumsum", lambda: tf.math.cumsum(B)),
    ("cumprod", lambda: tf.math.cumprod(F, axis=-3)),
    ("add_n", lambda: tf.add_n([])),
    ("add_n", lambda: tf.add_n(F)),
    ("add_n", lambda: tf.add_n([F, V3])),
    ("add_n", lambda: tf.add_n([F, F64])),
    ("l2_normalize", lambda: tf.math.l2_normalize(I)),
    ("l2_normalize", lambda: tf.math.l2_normalize(F, axis=2)),
    ("clip_by_norm", lambda: tf.clip_by_norm(I, 1.0)),
    ("clip_by_norm", lambda: tf.clip_by_norm(F, 1.0, axes=[3])),
    ("clip_by_global_norm", lambda: tf.clip_by_global_norm(F, 1.0)),
    ("clip_by_global_norm", lambda: tf.clip_by_global_norm([None], 1.0)),
    ("clip_by_global_norm", lambda: tf.clip_by_global_norm([I], 1.0)),
]


@pytest.mark.parametrize("op,call", BAD_CALLS, ids=[f"{op}-{i}" for i, (op, _) in
                                                      enumerate(BAD_CALLS)])
def test_bad_input_raises_naming_the_op(op, call):
    before = tf.memory()
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert op in str(info.value)
    assert tf.memory()["num_tensors"] == before["num_tensors"]
    assert tf.memory()["num_bytes"] == before["num_bytes"]


def test_shape_rules_reject_bad_axes_with_unknown_dims():
    from tapeflow._core import registry
    rule = registry.SHAPES["Max"]
    with pytest.raises(InvalidArgumentError, match="Max"):
        rule({"x": (None, None)}, {"x": tf.float32}, {"axis": (2,), "keepdims": False})
    assert rule({"x": (None, 3)}, {"x": tf.float32}, {"axis": (1,), "keepdims": True}) == \
        [((None, 1), tf.float32)]
    with pytest.raises(InvalidArgumentError, match="AddN"):
        registry.SHAPES["AddN"]({"inputs": [(2, 3), (2, 4)]},
                                {"inputs": [tf.float32, tf.float32]}, {"N": 2})
    assert registry.SHAPES["AddN"]({"inputs": [(None, 3), (2, None)]},
                                   {"inputs": [tf.float32] * 2}, {"N": 2}) == \
        [((2, 3), tf.float32)]
    with pytest.raises(InvalidArgumentError, match="TopK"):
        registry.SHAPES["TopK"]({"x": (2, 3)}, {"x": tf.float32},
                                {"k": 4, "sorted": True, "index_type": tf.int32})


# --------------------------------------------------------------------------- behaviour


def _grad(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


def test_max_and_min_split_the_gradient_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    np.testing.assert_allclose(_grad(lambda v: tf.reduce_max(v, axis=1), x),
                               [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(_grad(lambda v: tf.reduce_min(v, axis=-1), x),
                               [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(_grad(lambda v: tf.reduce_max(v), x),
                               [[0, 0.5, 0.5], [0, 0, 0]])


def test_max_jvp_with_ties_is_the_mean_tangent_of_the_tied_entries():
    x = tf.constant([1.0, 3.0, 3.0])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([5.0, 1.0, 2.0])) as acc:
        y = tf.reduce_max(x)
    assert float(acc.jvp(y)) == pytest.approx(1.5)


@pytest.mark.parametrize("x,axis,expected", [
    ([2.0, 0.0, 3.0], None, [0.0, 6.0, 0.0]),
    ([0.0, 0.0, 3.0], None, [0.0, 0.0, 0.0]),
    ([[2.0, 0.0], [5.0, 4.0]], 1, [[0.0, 2.0], [4.0, 5.0]]),
    ([[2.0, 0.0], [5.0, 4.0]], None, [[0.0, 40.0], [0.0, 0.0]]),
])
def test_prod_gradient_is_exact_with_zeros(x, axis, expected):
    g = _grad(lambda v: tf.reduce_prod(v, axis=axis), np.array(x))
    np.testing.assert_array_equal(g, expected)
    assert np.all(np.isfinite(g))


def test_prod_jvp_with_zeros():
    x = tf.constant([[2.0, 0.0, 3.0]])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([[1.0, 1.0, 1.0]])) as acc:
        y = tf.reduce_prod(x, axis=[0, 1])
    assert float(acc.jvp(y)) == 6.0


def test_logsumexp_is_stable_and_handles_infinities():
    out = tf.reduce_logsumexp(tf.constant([1000.0, 1000.0])).numpy()
    assert out == pytest.approx(1000.0 + np.log(2.0))
    out = tf.reduce_logsumexp(tf.constant([[-np.inf, -np.inf], [0.0, -np.inf]]), axis=1)
    np.testing.assert_array_equal(out.numpy(), [-np.inf, 0.0])
    g = _grad(lambda v: tf.reduce_logsumexp(v), np.array([1000.0, 1000.0]))
    np.testing.assert_allclose(g, [0.5, 0.5])


@pytest.mark.parametrize("x", [np.full(3, 3e7, np.float32), np.full(3, 3e16)],
                         ids=["float32", "float64"])
def test_logsumexp_derivatives_stay_exact_for_large_inputs(x):
    # exp(x - ans) would be off by exp(-ulp(ans)): e**-2 in float32 at 3e7
    np.testing.assert_allclose(_grad(tf.reduce_logsumexp, x), [1 / 3] * 3, rtol=1e-6)
    xs = tf.constant(np.stack([x, np.zeros_like(x)]))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = tf.reduce_logsumexp(xs, axis=1, keepdims=True)
    np.testing.assert_allclose(tape.gradient(y, xs).numpy(), [[1 / 3] * 3] * 2, rtol=1e-6)
    with tf.autodiff.ForwardAccumulator(xs, tf.constant(np.ones_like(xs.numpy()))) as acc:
        y = tf.reduce_logsumexp(xs, axis=-1)
    np.testing.assert_allclose(acc.jvp(y).numpy(), [1.0, 1.0], rtol=1e-6)
    with tf.autodiff.ForwardAccumulator(xs, tf.constant(np.eye(2, 3, dtype=x.dtype))) as acc:
        y = tf.reduce_logsumexp(xs)  # all of x's weight, tangent on one of its entries
    np.testing.assert_allclose(float(acc.jvp(y)), 1 / 3, rtol=1e-6)


def test_mean_keeps_dtypes_and_truncates_integers():
    assert tf.reduce_mean(tf.ones([3], tf.float32)).dtype is tf.float32
    assert tf.reduce_mean(tf.ones([3], tf.float16)).dtype is tf.float16
    assert int(tf.reduce_mean(tf.constant([-3, -4, 5]))) == 0      # -2/3 truncates to 0
    assert int(tf.reduce_mean(tf.constant([-7, -1]))) == -4
    assert tf.reduce_sum(tf.constant([1, 2], tf.int32)).dtype is tf.int32
    assert tf.reduce_prod(tf.constant([3, 2], tf.int32)).dtype is tf.int32
    assert tf.math.cumsum(tf.constant([1, 2], tf.int32)).dtype is tf.int32


def test_reductions_over_empty_axes_list_and_empty_tensors():
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_array_equal(tf.reduce_sum(x, axis=[]).numpy(), [[1.0, 2.0]])
    assert float(tf.reduce_max(tf.zeros([0]))) == -np.inf
    assert int(tf.reduce_min(tf.zeros([0], tf.int32))) == np.iinfo(np.int32).max
    assert float(tf.reduce_prod(tf.zeros([0]))) == 1.0
    assert tf.math.cumsum(tf.zeros([0, 2]), exclusive=True).shape == (0, 2)


def test_variance_of_complex_is_real():
    out = tf.math.reduce_variance(tf.constant([1 + 1j, -1 - 1j], dtype=tf.complex64))
    assert out.dtype is tf.float32 and float(out) == pytest.approx(2.0)


def test_argmax_picks_the_first_of_ties():
    x = tf.constant([[1.0, 5.0, 5.0], [7.0, 7.0, 0.0]])
    np.testing.assert_array_equal(tf.argmax(x, axis=1).numpy(), [1, 0])
    np.testing.assert_array_equal(tf.argmin(x, axis=-1).numpy(), [0, 2])
    assert tf.argmax(tf.constant([True, False, True])).numpy() == 0


def test_top_k_returns_a_named_tuple_and_scatters_its_gradient():
    res = tf.math.top_k(tf.constant([1.0, 4.0, 4.0, 2.0]), k=2)
    assert res.indices.dtype is tf.int32 and res.values.dtype is tf.float32
    np.testing.assert_array_equal(res.indices.numpy(), [1, 2])
    g = _grad(lambda v: tf.math.top_k(v, k=2).values * tf.constant([10.0, 1.0], tf.float64),
              np.array([1.0, 4.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 10.0, 1.0, 0.0])
    assert tf.math.top_k(tf.ones([2, 3]), k=0).values.shape == (2, 0)


def test_top_k_partial_selection_matches_a_full_sort():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 7, (5, 500)).astype(np.float32)
    res = tf.math.top_k(tf.constant(x), k=30)
    order = np.stack([np.lexsort((np.arange(500), -row))[:30] for row in x])
    np.testing.assert_array_equal(res.indices.numpy(), order)
    x[0, 3] = np.nan  # NaNs defeat the threshold search: the full sort takes over
    assert tf.math.top_k(tf.constant(x), k=30).values.shape == (5, 30)


def test_add_n_single_input_is_returned_and_indexed_slices_densify():
    a = tf.ones([2])
    assert tf.add_n([a]) is a
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([3, 2]))
    out = tf.add_n([s, tf.ones([3, 2])])
    np.testing.assert_array_equal(out.numpy(), [[1, 1], [2, 3], [1, 1]])


def test_add_n_gradient_reaches_every_input():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.add_n([a, b, a])
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(gb.numpy(), [1.0, 1.0])


def test_clip_by_norm_of_zeros_and_indexed_slices():
    z = tf.zeros([3])
    np.testing.assert_array_equal(tf.clip_by_norm(z, 1.0).numpy(), [0, 0, 0])
    g = _grad(lambda v: tf.reduce_sum(tf.clip_by_norm(v, 1.0)), np.zeros(3))
    assert np.all(np.isfinite(g))
    s = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([0]), tf.constant([2, 2]))
    out = tf.clip_by_norm(s, 1.0)
    assert isinstance(out, tf.IndexedSlices)
    np.testing.assert_allclose(out.values.numpy(), [[0.6, 0.8]])


def test_clip_by_global_norm_keeps_none_and_uses_use_norm():
    a, b = tf.constant([3.0]), tf.constant([4.0])
    clipped, norm = tf.clip_by_global_norm([a, None, b], 1.0)
    assert clipped[1] is None and float(norm) == pytest.approx(5.0)
    np.testing.assert_allclose([clipped[0].numpy(), clipped[2].numpy()], [[0.6], [0.8]])
    clipped, norm = tf.clip_by_global_norm([a], 2.0, use_norm=10.0)
    assert float(norm) == 10.0 and float(clipped[0][0]) == pytest.approx(0.6)
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN scale TensorFlow also gives
        clipped, _ = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.all(np.isnan(clipped[0].numpy()))


def test_add_n_beats_chained_adds_for_gradient_aggregation():
    import timeit
    xs = [tf.ones([4]) for _ in range(6)]

    def best(fn):  # best of several batches: robust to a busy machine
        return min(timeit.repeat(fn, number=200, repeat=7)) / 200

    def chained():
        total = xs[0]
        for x in xs[1:]:
            total = tf.add(total, x)
        return total

    add_n, adds = best(lambda: tf.add_n(xs)), best(chained)
    assert add_n < adds, f"add_n of 6 small tensors: {add_n * 1e6:.1f} us, 5 adds " \
                         f"{adds * 1e6:.1f} us"
