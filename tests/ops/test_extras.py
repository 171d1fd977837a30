"""Issue 31's TensorFlow names: scan/foldl/foldr, segment reductions, lstsq, tf.version and
the tf.math / linalg / nn / image / random names that were absent. Expected values are
TensorFlow 2.21's (the snippet that printed each is in a comment beside it), closed forms
or NumPy/SciPy; derivatives are checked against central differences in float64."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

from ..numeric import numeric_grad as _numeric_grad


def _tape_grad(f, x):
    v = tf.constant(np.array(x, np.float64))
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = f(v)
    return tape.gradient(y, v).numpy()


def check_grad(f, x, tol=1e-6):
    """The tape's gradient of the scalar f at x against central differences."""
    np.testing.assert_allclose(_tape_grad(f, x),
                               _numeric_grad(lambda a: f(tf.constant(a)).numpy(), x),
                               rtol=tol, atol=tol)


# --------------------------------------------------------------------------- scan and folds
E = [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("traced", [False, True])
def test_scan_and_folds_values(traced):
    wrap = tf.function if traced else (lambda f: f)
    e = tf.constant(E)
    # tf.scan(lambda a, x: a + x, e) -> [1, 3, 6, 10]; reverse=True -> [10, 9, 7, 4]
    assert wrap(lambda: tf.scan(lambda a, x: a + x, e))().numpy().tolist() == [1, 3, 6, 10]
    out = wrap(lambda: tf.scan(lambda a, x: a + x, e, reverse=True))()
    assert out.numpy().tolist() == [10, 9, 7, 4]
    # tf.scan(lambda a, x: a * x, e, initializer=tf.constant(2.)) -> [2, 4, 12, 48]
    out = wrap(lambda: tf.scan(lambda a, x: a * x, e, initializer=tf.constant(2.0)))()
    assert out.numpy().tolist() == [2, 4, 12, 48]
    # tf.foldl(lambda a, x: a - x, e) -> -8.0; tf.foldr(...) -> -2.0; initializer=10. -> 0.0
    assert float(wrap(lambda: tf.foldl(lambda a, x: a - x, e))()) == -8.0
    assert float(wrap(lambda: tf.foldr(lambda a, x: a - x, e))()) == -2.0
    assert float(wrap(lambda: tf.foldl(lambda a, x: a - x, e, initializer=10.0))()) == 0.0
    # nested elems and accumulators
    r = wrap(lambda: tf.scan(lambda a, x: (a[0] + x[0], a[1] * x[1]), (e, e * 2),
                             initializer=(tf.constant(0.0), tf.constant(1.0))))()
    assert r[0].numpy().tolist() == [1, 3, 6, 10] and r[1].numpy().tolist() == [2, 8, 48, 384]
    r = wrap(lambda: tf.scan(lambda a, x: {"s": a["s"] + x}, e,
                             initializer={"s": tf.constant(0.0)}))()
    assert r["s"].numpy().tolist() == [1, 3, 6, 10]


def test_scan_unknown_length_and_graph_loop():
    f = tf.function(lambda v: tf.scan(lambda a, x: a + x, v, reverse=True),
                    input_signature=[tf.TensorSpec([None, 2])])
    np.testing.assert_array_equal(f(tf.reshape(tf.constant(E), [2, 2])).numpy(),
                                  [[4, 6], [3, 4]])
    graph = tf.function(lambda v: tf.scan(lambda a, x: a + x, v)).get_concrete_function(
        tf.TensorSpec([50])).graph
    ops = [n.op for n in graph.nodes]
    assert "While" in ops and ops.count("Add") < 5  # a loop, not 50 unrolled adds


def test_scan_edges():
    # empty elems with an initializer: an empty stack / the initializer (TF the same)
    assert tf.scan(lambda a, x: a + x, tf.zeros([0]), initializer=1.0).shape == (0,)
    assert float(tf.foldl(lambda a, x: a + x, tf.zeros([0]), initializer=1.0)) == 1.0
    # TF: OutOfRangeError "Tried to read from index 0 but array size is: 0"
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.scan(lambda a, x: a + x, tf.zeros([0]))
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.foldr(lambda a, x: a + x, tf.zeros([0]))
    assert tf.scan(lambda a, x: a + x, tf.constant([5.0])).numpy().tolist() == [5.0]
    with pytest.raises(ValueError):
        tf.scan(lambda a, x: a, tf.constant(1.0))  # 0-d elems (TF: IndexError)
    with pytest.raises(TypeError):
        tf.scan(1, tf.constant(E))


@pytest.mark.parametrize("traced", [False, True])
def test_scan_and_fold_gradients(traced):
    wrap = tf.function if traced else (lambda f: f)
    init = tf.constant(0.5, tf.float64)

    def scan_loss(v):
        return tf.reduce_sum(tf.scan(lambda a, x: a * x + tf.sin(a), v, initializer=init))

    def foldr_loss(v):
        return tf.foldr(lambda a, x: a * x + tf.sin(a), v, initializer=init)

    x = np.array([1.0, 2.0, 3.0])
    # TF 2.21: GradientTape over tf.scan(...)  -> [4.4149048, 2.99852077, 2.78902832]
    np.testing.assert_allclose(wrap(lambda v: _tape_grad(scan_loss, v))(x)
                               if not traced else _grad_traced(scan_loss, x),
                               [4.4149048, 2.99852077, 2.78902832], rtol=1e-7)
    # TF 2.21: foldr value 3.889956315084421, gradient [4.87651745, 2.30284897, 0.93225452]
    np.testing.assert_allclose(float(foldr_loss(tf.constant(x))), 3.889956315084421)
    got = _grad_traced(foldr_loss, x) if traced else _tape_grad(foldr_loss, x)
    np.testing.assert_allclose(got, [4.87651745, 2.30284897, 0.93225452], rtol=1e-7)
    check_grad(lambda v: tf.foldl(lambda a, x: a * tf.cos(x) + x, v), x)


def _grad_traced(f, x):
    v = tf.Variable(np.array(x, np.float64))

    @tf.function
    def g():
        with tf.GradientTape() as tape:
            y = f(v)
        return tape.gradient(y, v)
    return g().numpy()


def test_version():
    # TF 2.21: tf.version.VERSION == tf.__version__; GRAPH_DEF_VERSION 2474
    assert tf.version.VERSION == tf.__version__
    assert isinstance(tf.version.GIT_VERSION, str)
    assert tf.version.GRAPH_DEF_VERSION == 2474
    assert tf.version.GRAPH_DEF_VERSION_MIN_CONSUMER == 0


# --------------------------------------------------------------------------- special functions
V = [-2.0, -0.5, 0.0, 0.3, 0.9]
# TF 2.21, float64: for f in names: tape over getattr(tf.math, f)(tf.constant(V, tf.float64))
SPECIAL = {
    "bessel_i0e": ([0.30850832, 0.64503527, 1.0, 0.75758063, 0.49316297],
                   [0.09323903, 0.48861447, 0.0, -0.64520306, -0.29104644]),
    "bessel_i1e": ([-0.21526929, -0.1564208, 0.0, 0.11237756, 0.20211653],
                   [-0.01439561, 0.17577286, 0.5, 0.2706112, 0.06647251]),
    "bessel_i0": ([2.2795853, 1.06348337, 1.0, 1.02262688, 1.21298517],
                  [-1.59063685, -0.25789431, 0.0, 0.15169384, 0.49712645]),
    # TF's gradient of bessel_i1 at 0 is 1.0; I1'(0) = 1/2 (I1(x) ~ x/2), which we give
    "bessel_i1": ([-1.59063685, -0.25789431, 0.0, 0.15169384, 0.49712645],
                  [1.48426688, 0.54769476, 0.5, 0.51698075, 0.66062245]),
    "erfinv": ([np.nan, -0.47693628, 0.0, 0.27246271, 1.16308715],
               [np.nan, 1.11258482, 0.88622693, 0.95452036, 3.42804281]),
    "ndtri": ([np.nan, np.nan, -np.inf, -0.52440051, 1.28155157],
              [np.nan, np.nan, np.inf, 2.87610366, 5.69805986]),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions_match_tensorflow(name):
    value, grad = SPECIAL[name]
    v = tf.constant(V, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(v)
        out = getattr(tf.math, name)(v)
    np.testing.assert_allclose(out.numpy(), value, rtol=1e-7)
    np.testing.assert_allclose(tape.gradient(out, v).numpy(), grad, rtol=1e-7)


def test_special_edges():
    # TF: erfinv([-1, 1, 2]) -> [-inf, inf, nan]; ndtri([0, 1, 2]) -> [-inf, inf, nan]
    np.testing.assert_array_equal(tf.math.erfinv([-1.0, 1.0, 2.0]).numpy(),
                                  [-np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(tf.math.ndtri([0.0, 1.0, 2.0]).numpy(),
                                  [-np.inf, np.inf, np.nan])
    # TF: igamma([0, -1, 1], [1, 1, -1]) -> [nan, nan, nan]
    assert np.isnan(tf.math.igamma([0.0, -1.0, 1.0], [1.0, 1.0, -1.0]).numpy()).all()
    assert float(tf.math.betainc(1.0, 1.0, 0.5)) == 0.5
    assert tf.math.bessel_i0e(tf.zeros([0, 3])).shape == (0, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bessel_i0e"):
        tf.math.bessel_i0e(tf.constant([1, 2]))  # TF: attr 'T' of int32 not allowed
    with pytest.raises(tf.errors.InvalidArgumentError, match="betainc"):
        tf.math.betainc(tf.constant([1.0, 2.0]), 2.0, tf.constant([[0.5], [0.2]]))


def test_incomplete_gamma_and_beta_match_tensorflow():
    a = tf.constant([0.5, 1.0, 2.0], tf.float64)
    x = tf.constant([0.3, 1.0, 4.0], tf.float64)
    b = tf.constant([1.5, 2.0, 0.7], tf.float64)
    z = tf.constant([0.2, 0.5, 0.9], tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, x, b, z])
        p, q, i = tf.math.igamma(a, x), tf.math.igammac(a, x), tf.math.betainc(a, b, z)
    # TF 2.21: tf.math.igamma(a, x) and its tape gradients (w.r.t. a and x)
    np.testing.assert_allclose(p.numpy(), [0.56142197, 0.63212056, 0.90842181], rtol=1e-7)
    np.testing.assert_allclose(q.numpy(), [0.43857803, 0.36787944, 0.09157819], rtol=1e-7)
    da, dx = tape.gradient(p, [a, x])
    np.testing.assert_allclose(da.numpy(), [-0.77057035, -0.43172971, -0.1103315], rtol=1e-6)
    np.testing.assert_allclose(dx.numpy(), [0.76309058, 0.36787944, 0.07326256], rtol=1e-7)
    da, dx = tape.gradient(q, [a, x])
    np.testing.assert_allclose(da.numpy(), [0.77057035, 0.43172971, 0.1103315], rtol=1e-6)
    # TF 2.21: tf.math.betainc(a, b, z) -> values; gradients [None, None, d/dz]
    np.testing.assert_allclose(i.numpy(), [0.54981514, 0.75, 0.67477224], rtol=1e-7)
    ga, gb, gz = tape.gradient(i, [a, b, z])
    assert ga is None and gb is None
    np.testing.assert_allclose(gz.numpy(), [1.27323954, 1.0, 2.13692594], rtol=1e-7)


def test_truncating_division_and_safe_products():
    xi, yi = tf.constant([7, -7, 7, -7]), tf.constant([2, 2, -2, -2])
    # TF: tf.truncatediv(xi, yi) -> [3, -3, -3, 3]; tf.truncatemod -> [1, -1, 1, -1]
    assert tf.truncatediv(xi, yi).numpy().tolist() == [3, -3, -3, 3]
    assert tf.truncatemod(xi, yi).numpy().tolist() == [1, -1, 1, -1]
    x, y = tf.constant([7.0, -7.0, 7.0, -7.0, 0.5]), tf.constant([2.0, 2.0, -2.0, -2.0, 0.0])
    # TF: truncatediv -> [3, -3, -3, 3, inf]; truncatemod -> [1, -1, 1, -1, nan]
    np.testing.assert_array_equal(tf.truncatediv(x, y).numpy(), [3, -3, -3, 3, np.inf])
    np.testing.assert_array_equal(tf.truncatemod(x, y).numpy(), [1, -1, 1, -1, np.nan])
    with pytest.raises(tf.errors.InvalidArgumentError):  # TF: integer division by zero
        tf.truncatediv(xi, tf.constant([0, 1, 1, 1]))
    # TF: xdivy([0, 2, 0], [0, 4, 3]) -> [0, 0.5, 0]; xlog1py([0, 2], [-1, 1]) -> [0, 1.386]
    assert tf.math.xdivy([0.0, 2.0, 0.0], [0.0, 4.0, 3.0]).numpy().tolist() == [0, 0.5, 0]
    np.testing.assert_allclose(tf.math.xlog1py([0.0, 2.0], [-1.0, 1.0]).numpy(),
                               [0.0, 1.3862944], rtol=1e-6)


# --------------------------------------------------------------------------- segments
D = [[1.0, 2.0], [3.0, -1.0], [5.0, 6.0], [0.0, 2.0]]
LOW, HIGH = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)
# TF 2.21: getattr(tf.math, name)(D, [0, 0, 2, 2]) and (D, [2, -1, 0, 2], 4)
SEGMENT_VALUES = {
    "segment_mean": [[2.0, 0.5], [0.0, 0.0], [2.5, 4.0]],
    "segment_max": [[3.0, 2.0], [0.0, 0.0], [5.0, 6.0]],
    "segment_min": [[1.0, -1.0], [0.0, 0.0], [0.0, 2.0]],
    "segment_prod": [[3.0, -2.0], [1.0, 1.0], [0.0, 12.0]],
    "unsorted_segment_mean": [[5.0, 6.0], [0.0, 0.0], [0.5, 2.0], [0.0, 0.0]],
    "unsorted_segment_max": [[5.0, 6.0], [LOW, LOW], [1.0, 2.0], [LOW, LOW]],
    "unsorted_segment_min": [[5.0, 6.0], [HIGH, HIGH], [0.0, 2.0], [HIGH, HIGH]],
    "unsorted_segment_prod": [[5.0, 6.0], [1.0, 1.0], [0.0, 4.0], [1.0, 1.0]],
    "unsorted_segment_sqrt_n": [[5.0, 6.0], [0.0, 0.0], [0.70710677, 2.828427], [0.0, 0.0]],
}
X = [[1.0, 2.0], [1.0, -1.0], [0.0, 6.0], [0.0, 0.0], [3.0, 2.0]]
W = np.arange(8.0).reshape(4, 2) + 1
# TF 2.21, float64: tape over reduce_sum(getattr(tf.math, name)(X, [0, 0, 1, 1, 3]) * W)
# and over (X, [1, 1, 0, 0, -1], 4): ties share the gradient, zeros of products as TF
SEGMENT_GRADS = {
    "segment_mean": [[0.5, 1.0], [0.5, 1.0], [1.5, 2.0], [1.5, 2.0], [7.0, 8.0]],
    "segment_max": [[0.5, 2.0], [0.5, 0.0], [1.5, 4.0], [1.5, 0.0], [7.0, 8.0]],
    "segment_min": [[0.5, 0.0], [0.5, 2.0], [1.5, 0.0], [1.5, 4.0], [7.0, 8.0]],
    "segment_prod": [[1.0, -2.0], [1.0, 4.0], [0.0, 0.0], [0.0, 24.0], [7.0, 8.0]],
    "unsorted_segment_mean": [[1.5, 2.0], [1.5, 2.0], [0.5, 1.0], [0.5, 1.0], [0.0, 0.0]],
    "unsorted_segment_max": [[1.5, 4.0], [1.5, 0.0], [0.5, 2.0], [0.5, 0.0], [0.0, 0.0]],
    "unsorted_segment_min": [[1.5, 0.0], [1.5, 4.0], [0.5, 0.0], [0.5, 2.0], [0.0, 0.0]],
    "unsorted_segment_prod": [[3.0, -4.0], [3.0, 8.0], [0.0, 0.0], [0.0, 12.0], [0.0, 0.0]],
    "unsorted_segment_sqrt_n": [[2.1213203435596424, 2.82842712474619]] * 2
    + [[0.7071067811865475, 1.414213562373095]] * 2 + [[0.0, 0.0]],
}


@pytest.mark.parametrize("name", sorted(SEGMENT_VALUES))
def test_segment_reductions_match_tensorflow(name):
    fn = getattr(tf.math, name)
    unsorted = name.startswith("unsorted")
    out = fn(D, [2, -1, 0, 2], 4) if unsorted else fn(D, [0, 0, 2, 2])
    np.testing.assert_allclose(out.numpy(), SEGMENT_VALUES[name], rtol=1e-6)
    x = tf.constant(X, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, [1, 1, 0, 0, -1], 4) if unsorted else fn(x, [0, 0, 1, 1, 3])
        loss = tf.reduce_sum(y * W)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), SEGMENT_GRADS[name])


@pytest.mark.parametrize("name", ["segment_mean", "segment_max", "segment_prod"])
def test_sorted_segments_traced_with_unknown_ids(name):
    fn = tf.function(getattr(tf.math, name), input_signature=[
        tf.TensorSpec([None, 2]), tf.TensorSpec([None], tf.int32)])
    out = fn(tf.constant(D), tf.constant([0, 0, 2, 2]))
    np.testing.assert_allclose(out.numpy(), SEGMENT_VALUES[name])


def test_segment_edges_and_errors():
    # TF: unsorted_segment_max on int32 -> [2, -2147483648]; float64 min -> [1, 1.797e308]
    assert tf.math.unsorted_segment_max(tf.constant([1, 2]), [0, 0], 2).numpy().tolist() \
        == [2, -2147483648]
    assert tf.math.unsorted_segment_min(tf.constant([1.0, 2.0], tf.float64), [0, 0],
                                        2).numpy().tolist() == [1.0, np.finfo(np.float64).max]
    # TF: unsorted_segment_mean of int32 -> float64 [1.5, 0]; segment_mean int32 -> [1]
    out = tf.math.unsorted_segment_mean(tf.constant([1, 2]), [0, 0], 2)
    assert out.dtype == tf.float64 and out.numpy().tolist() == [1.5, 0.0]
    out = tf.math.segment_mean(tf.constant([1, 2]), [0, 0])
    assert out.dtype == tf.int32 and out.numpy().tolist() == [1]
    # TF: segment_max(zeros([0, 2]), zeros([0])) -> shape (0, 2)
    assert tf.math.segment_max(tf.zeros([0, 2]), tf.zeros([0], tf.int32)).shape == (0, 2)
    assert tf.math.segment_prod(tf.zeros([0, 2]), tf.zeros([0], tf.int32)).shape == (0, 2)
    np.testing.assert_array_equal(
        tf.math.unsorted_segment_prod(tf.ones([2, 3]) * 2, [[0, 1, 1], [2, 0, 1]], 3).numpy(),
        [4.0, 8.0, 2.0])
    # TF: "segment ids are not increasing"; "segment_ids[1] = 5 is out of range [0, 3)";
    # "segment_ids should be the same size as dimension 0 of input"
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        tf.math.segment_max(D, [0, 2, 1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.math.unsorted_segment_max(D, [0, 5, 1, 2], 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="SegmentProd"):
        tf.math.segment_prod(D, [0, 1])


# --------------------------------------------------------------------------- linalg
A3 = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]]
B3 = [[1.0], [2.0], [2.0]]


def test_lstsq_matches_tensorflow():
    a, b = tf.constant(A3, tf.float64), tf.constant(B3, tf.float64)
    # TF 2.21: tf.linalg.lstsq(a, b) / l2_regularizer=0.5 / fast=False (l2 ignored there)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b).numpy().ravel(), [-0.21428571, 0.5],
                               rtol=1e-7)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b, l2_regularizer=0.5).numpy().ravel(),
                               [0.08301887, 0.28679245], rtol=1e-7)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b, 0.5, fast=False).numpy().ravel(),
                               [-0.21428571, 0.5], rtol=1e-7)
    # underdetermined: TF [0.92857143, -0.21428571, 0.14285714] and with l2 0.3
    at, c = tf.transpose(a), tf.constant([[1.0], [2.0]], tf.float64)
    np.testing.assert_allclose(tf.linalg.lstsq(at, c).numpy().ravel(),
                               [0.92857143, -0.21428571, 0.14285714], rtol=1e-7)
    np.testing.assert_allclose(tf.linalg.lstsq(at, c, l2_regularizer=0.3).numpy().ravel(),
                               [0.32015898, 0.00662398, 0.17001546], rtol=1e-6)
    # TF 2.21 tape: reduce_sum(lstsq(a, b, 0.1) * [[1], [-2]]) w.r.t. a and b
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        loss = tf.reduce_sum(tf.linalg.lstsq(a, b, l2_regularizer=0.1) * [[1.0], [-2.0]])
    ga, gb = tape.gradient(loss, [a, b])
    np.testing.assert_allclose(ga.numpy().ravel(), [1.78228478, -0.25753544, 4.29371513,
                                                    -3.41127881, -2.93661757, 2.07918092],
                               rtol=1e-7)
    np.testing.assert_allclose(gb.numpy().ravel(), [-2.92093404, 1.00368701, 0.0450635],
                               rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="lstsq"):
        tf.linalg.lstsq(a, tf.constant([1.0, 2.0, 2.0], tf.float64))  # TF: MatMul ndims


M2 = [[1.0, 2.0], [3.0, 4.0]]


def test_eig_and_matrix_functions_match_tensorflow():
    m = tf.constant(M2, tf.float64)
    # TF 2.21: eigvals(m) -> [-0.37228132, 5.37228132] (complex128), rotation -> [1j, -1j]
    e = tf.linalg.eigvals(m)
    assert e.dtype == tf.complex128
    np.testing.assert_allclose(np.sort(e.numpy().real), [-0.37228132, 5.37228132], rtol=1e-7)
    rot = tf.linalg.eigvals(tf.constant([[0.0, -1.0], [1.0, 0.0]]))
    assert rot.dtype == tf.complex64
    np.testing.assert_allclose(sorted(rot.numpy(), key=lambda z: z.imag), [-1j, 1j])
    e, v = tf.linalg.eig(m)
    np.testing.assert_allclose(m.numpy() @ v.numpy(), v.numpy() * e.numpy(), atol=1e-12)
    # TF 2.21 tape: reduce_sum(real(eigvals(m)) * [1, 3]) -> [[1.4778, 1.0445], [0.6963, 2.5222]]
    with tf.GradientTape() as tape:
        tape.watch(m)
        ev = tf.linalg.eigvals(m)
        order = tf.argsort(tf.math.real(ev))
        loss = tf.reduce_sum(tf.gather(tf.math.real(ev), order) * [1.0, 3.0])
    np.testing.assert_allclose(tape.gradient(loss, m).numpy(),
                               [[1.47776703, 1.04446594], [0.69631062, 2.52223297]], rtol=1e-7)
    # TF 2.21: expm(m) and the tape gradient of reduce_sum(expm(m) * w)
    w = [[1.0, 2.0], [0.5, -1.0]]
    with tf.GradientTape() as tape:
        tape.watch(m)
        ex = tf.linalg.expm(m)
        loss = tf.reduce_sum(ex * w)
    np.testing.assert_allclose(ex.numpy(), [[51.968956198705555, 74.73656456700401],
                                            [112.1048468505061, 164.0738030492117]], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, m).numpy(),
                               [[68.0211130150486, 106.85160881266609],
                                [40.09417063885928, 25.399592693706836]], rtol=1e-12)
    traced = tf.function(tf.linalg.expm, input_signature=[tf.TensorSpec([None, None],
                                                                        tf.float64)])
    np.testing.assert_allclose(traced(m).numpy(), ex.numpy(), rtol=1e-12)
    # TF 2.21: sqrtm([[4, 1], [0, 9]]) -> [[2, 0.2], [0, 3]] and its gradient
    s = tf.constant([[4.0, 1.0], [0.0, 9.0]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(s)
        root = tf.linalg.sqrtm(s)
        loss = tf.reduce_sum(root * w)
    np.testing.assert_allclose(root.numpy(), [[2.0, 0.2], [0.0, 3.0]], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, s).numpy(),
                               [[0.23, 0.4], [0.098, -0.18]], rtol=1e-12)
    # TF 2.21: logm(complex128(m + 3 I)); a real input raises (complex only)
    lg = tf.linalg.logm(tf.cast(m + 3 * tf.eye(2, dtype=tf.float64), tf.complex128))
    np.testing.assert_allclose(lg.numpy(), [[1.2429367398179245, 0.4034459824816452],
                                            [0.6051689737224677, 1.8481057135403922]],
                               rtol=1e-12)
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex"):
        tf.linalg.logm(m)


def test_lu_and_rank_match_tensorflow():
    x = tf.constant([[1.0, 2.0, 0.0], [3.0, 4.0, 1.0], [0.0, 1.0, 5.0]], tf.float64)
    lu, p = tf.linalg.lu(x)
    # TF 2.21: tf.linalg.lu(x) -> lu below, p = [1, 2, 0] (int32)
    np.testing.assert_allclose(lu.numpy(), [[3.0, 4.0, 1.0], [0.0, 1.0, 5.0],
                                            [1 / 3, 2 / 3, -3.6666666666666674]], rtol=1e-12)
    assert p.dtype == tf.int32 and p.numpy().tolist() == [1, 2, 0]
    assert tf.linalg.lu(tf.constant(M2), output_idx_type=tf.int64)[1].numpy().tolist() == [1, 0]
    np.testing.assert_allclose(tf.linalg.lu_reconstruct(lu, p).numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(tf.linalg.lu_matrix_inverse(lu, p).numpy(),
                               np.linalg.inv(x.numpy()), atol=1e-12)
    # TF 2.21: matrix_rank([[1, 2], [2, 4]]) -> 1; of eye(3, batch_shape=[2]) -> [3, 3]
    r = tf.linalg.matrix_rank(tf.constant([[1.0, 2.0], [2.0, 4.0]]))
    assert r.dtype == tf.int32 and int(r) == 1
    assert tf.linalg.matrix_rank(tf.eye(3, batch_shape=[2])).numpy().tolist() == [3, 3]
    assert tf.linalg.matrix_rank(tf.zeros([2, 2])).numpy() == 0


# --------------------------------------------------------------------------- nn
def _rng_array(seed, shape, low=-1.0, high=1.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


@pytest.mark.parametrize("padding, expected", [
    # TF 2.21: rng = default_rng(0); x5 = rng.uniform(-1, 1, (2, 5, 6, 7, 3)) as float32;
    # y = f(x5, [2, 3, 2], [2, 2, 3], padding): (shape, sum(y), sum(y * y),
    # sum(x5 * d sum(y ** 3) / dx5)) for f = max_pool3d, avg_pool3d
    ("VALID", {"max_pool3d": ((2, 2, 2, 2, 3), 42.149925, 37.738609, 102.845078),
               "avg_pool3d": ((2, 2, 2, 2, 3), 1.6108358, 1.3951555, 0.3886675)}),
    ("SAME", {"max_pool3d": ((2, 3, 3, 3, 3), 114.53772, 94.449516, 239.27983),
              "avg_pool3d": ((2, 3, 3, 3, 3), -1.1831063, 8.599761, -1.5256726)}),
])
def test_pool3d_matches_tensorflow(padding, expected):
    x5 = tf.constant(np.random.default_rng(0).uniform(-1, 1, (2, 5, 6, 7, 3)), tf.float32)
    for name, (shape, total, squares, moment) in expected.items():
        with tf.GradientTape() as tape:
            tape.watch(x5)
            y = getattr(tf.nn, name)(x5, [2, 3, 2], [2, 2, 3], padding)
            loss = tf.reduce_sum(y * y * y)
        assert y.shape == shape
        np.testing.assert_allclose(float(tf.reduce_sum(y)), total, rtol=1e-5)
        np.testing.assert_allclose(float(tf.reduce_sum(y * y)), squares, rtol=1e-5)
        np.testing.assert_allclose(float(tf.reduce_sum(tape.gradient(loss, x5) * x5)), moment,
                                   rtol=1e-5)
    # NCDHW is the transposed layout; the generic max_pool takes rank 5 as well
    xc = tf.transpose(x5, [0, 4, 1, 2, 3])
    np.testing.assert_allclose(
        tf.transpose(tf.nn.max_pool3d(xc, 2, 2, padding, "NCDHW"), [0, 2, 3, 4, 1]).numpy(),
        tf.nn.max_pool(x5, 2, 2, padding).numpy())
    check_grad(lambda v: tf.reduce_sum(tf.square(tf.nn.avg_pool3d(v, 2, 1, padding))),
               _rng_array(3, (1, 3, 3, 4, 2), dtype=np.float64))
    traced = tf.function(lambda v: tf.nn.max_pool3d(v, 2, 2, padding),
                         input_signature=[tf.TensorSpec([None, None, None, None, 3])])
    np.testing.assert_allclose(traced(x5).numpy(), tf.nn.max_pool3d(x5, 2, 2, padding).numpy())


def _nn_draws():
    """The arrays of the TF snippet: rng = default_rng(0); x5, x3, x4, dw, pw in order."""
    rng = np.random.default_rng(0)
    rng.uniform(-1, 1, (2, 5, 6, 7, 3))
    x3 = rng.uniform(-1, 1, (2, 7, 3))
    x4 = rng.uniform(-1, 1, (1, 5, 5, 3))
    return x3, x4, rng.uniform(-1, 1, (3, 3, 3, 2)), rng.uniform(-1, 1, (1, 1, 6, 4))


def test_more_nn_ops_match_tensorflow():
    x3 = tf.constant(_nn_draws()[0])
    # TF 2.21: sums of max_pool1d / avg_pool1d(x3, 3, 2, "SAME")
    np.testing.assert_allclose(tf.nn.max_pool1d(x3, 3, 2, "SAME").numpy().sum(),
                               12.20638226668662, rtol=1e-12)
    np.testing.assert_allclose(tf.nn.avg_pool1d(x3, 3, 2, "SAME").numpy().sum(),
                               1.1050069290139304, rtol=1e-12)
    # TF: crelu([1, -2]) -> [1, 0, 0, 2]; crelu([[1, -2]], axis=0) -> [[1, 0], [0, 2]]
    assert tf.nn.crelu([1.0, -2.0]).numpy().tolist() == [1, 0, 0, 2]
    assert tf.nn.crelu([[1.0, -2.0]], axis=0).numpy().tolist() == [[1, 0], [0, 2]]
    # TF: in_top_k: ties count in, NaN target prediction false, out-of-range target false
    p1 = [[0.1, 0.9, 0.5], [0.5, 0.5, 0.1], [1.0, 2.0, np.nan], [np.inf, 1.0, 1.0]]
    assert tf.math.in_top_k([1, 0, 2, 2], p1, 1).numpy().tolist() == [True, True, False, False]
    p2 = [[0.1, 0.9, 0.5], [0.5, 0.5, 0.1], [1.0, 2.0, 1.0], [3.0, 1.0, 1.0]]
    assert tf.nn.in_top_k([1, 0, 2, 3], p2, 2).numpy().tolist() == [True, True, True, False]
    # TF: log_poisson_loss([0, 1, 2, 5], [0.5, 0, -1, 2]) (and compute_full_loss=True)
    t, z = [0.0, 1.0, 2.0, 5.0], [0.5, 0.0, -1.0, 2.0]
    np.testing.assert_allclose(tf.nn.log_poisson_loss(t, z).numpy(),
                               [1.6487212, 1.0, 2.3678794, -2.6109443], rtol=1e-6)
    np.testing.assert_allclose(tf.nn.log_poisson_loss(t, z, compute_full_loss=True).numpy(),
                               [1.6487212, 1.0, 3.0196857, 2.159903], rtol=1e-6)
    check_grad(lambda v: tf.reduce_sum(tf.nn.log_poisson_loss([0.0, 1.0, 2.0, 5.0], v, True)),
               [0.5, 0.0, -1.0, 2.0])
    # TF: normalize_moments(2, 4, 10, None) -> (2, 1); with a shift -> [1.5, 1.5], [2.25, 2]
    mean, var = tf.nn.normalize_moments(2.0, 4.0, 10.0, None)
    assert (float(mean), float(var)) == (2.0, 1.0)
    mean, var = tf.nn.normalize_moments(4.0, [2.0, 4.0], [10.0, 12.0], [1.0, 0.5])
    assert mean.numpy().tolist() == [1.5, 1.5] and var.numpy().tolist() == [2.25, 2.0]
    # TF: zero_fraction -> 0.5, 0.33333334 (int input), nan (empty)
    assert float(tf.math.zero_fraction([0.0, 1.0, 0.0, 3.0])) == 0.5
    np.testing.assert_allclose(float(tf.nn.zero_fraction(tf.constant([0, 1, 2]))), 1 / 3,
                               rtol=1e-7)
    assert np.isnan(float(tf.math.zero_fraction(tf.zeros([0]))))


def test_separable_conv2d_matches_tensorflow():
    _, x4, dw, pw = _nn_draws()
    # TF 2.21: separable_conv2d(x4, dw, pw, [1, 1, 1, 1], "SAME").sum(); VALID stride 2 shape
    out = tf.nn.separable_conv2d(x4, dw, pw, [1, 1, 1, 1], "SAME")
    np.testing.assert_allclose(out.numpy().sum(), 44.53324966743315, rtol=1e-12)
    assert tf.nn.separable_conv2d(x4, dw, pw, [1, 2, 2, 1], "VALID").shape == (1, 2, 2, 4)
    check_grad(lambda d: tf.reduce_sum(tf.square(
        tf.nn.separable_conv2d(x4, d, pw, [1, 1, 1, 1], "SAME"))), dw)


# --------------------------------------------------------------------------- image
# TF 2.21 values printed by the snippets in the tests below
_TF_CROP_OR_PAD = [29.00016, 25.383076]
_TF_COLOUR_SUMS = [48.85073, 47.102455, 47.9302, 65.02551, 37.49359, 14.920739, 117.69992,
                   92.04864]
_TF_GAMMA_UINT8 = [[[160]]]
_TF_GRAY_UINT8 = [[[69]]]
_TF_HSV = [[[0.0, 0.0, 0.5], [0.0, 1.0, 1.0], [0.6875, 0.8888888359069824, 0.8999999761581421]]]
_TF_HSV_GRAD_SUM = 4.847945430771904

def _images():
    rng = np.random.default_rng(1)
    return tf.constant(rng.uniform(0, 1, (2, 5, 6, 3)), tf.float32)


def test_image_geometry_matches_tensorflow():
    img = _images()
    im3 = img[0]
    q = tf.constant([[[1], [2]], [[3], [4]]])
    # TF 2.21: [rot90(q, k)[..., 0] for k in range(4)]
    assert [tf.image.rot90(q, k).numpy()[..., 0].tolist() for k in range(4)] == [
        [[1, 2], [3, 4]], [[2, 4], [1, 3]], [[4, 3], [2, 1]], [[3, 1], [4, 2]]]
    assert tf.image.rot90(img, 3).shape == (2, 6, 5, 3)
    assert tf.image.transpose(img).shape == (2, 6, 5, 3)
    # TF: central_crop(zeros([7, 9, 1]), 0.5) -> (5, 5, 1); (2, 10, 10, 1) at 0.33 -> 4 x 4
    assert tf.image.central_crop(tf.zeros([7, 9, 1]), 0.5).shape == (5, 5, 1)
    assert tf.image.central_crop(tf.zeros([2, 10, 10, 1]), 0.33).shape == (2, 4, 4, 1)
    with pytest.raises(ValueError):
        tf.image.central_crop(im3, 0.0)
    assert tf.image.pad_to_bounding_box(tf.ones([1, 1, 1]), 1, 0, 2, 2).numpy()[..., 0] \
        .tolist() == [[0, 0], [1, 0]]
    # TF 2.21 sums: crop_to_bounding_box(im3, 1, 2, 3, 3); resize_with_crop_or_pad to 3x8
    # and 8x3; resize_with_pad(im3, 8, 8), (img, 4, 10), (im3, 8, 8, "nearest")
    np.testing.assert_allclose(tf.image.crop_to_bounding_box(im3, 1, 2, 3, 3).numpy().sum(),
                               float(np.sum(im3.numpy()[1:4, 2:5])), rtol=1e-6)
    np.testing.assert_allclose(
        [tf.image.resize_with_crop_or_pad(im3, 3, 8).numpy().sum(),
         tf.image.resize_with_crop_or_pad(im3, 8, 3).numpy().sum()],
        _TF_CROP_OR_PAD, rtol=1e-6)
    np.testing.assert_allclose(
        [tf.image.resize_with_pad(im3, 8, 8).numpy().sum(),
         tf.image.resize_with_pad(img, 4, 10).numpy().sum(),
         tf.image.resize_with_pad(im3, 8, 8, method="nearest").numpy().sum()],
        [75.85248, 49.168816, 76.715576], rtol=1e-6)
    with pytest.raises(ValueError):
        tf.image.pad_to_bounding_box(im3, 1, 1, 5, 6)  # does not fit
    with pytest.raises(ValueError):
        tf.image.crop_to_bounding_box(im3, 3, 0, 3, 6)


def test_image_colour_matches_tensorflow():
    img = _images()
    im3 = img[0]
    # TF 2.21 sums of adjust_gamma(im3, 2, 1.5), adjust_hue(im3, 0.2), (im3, -0.7),
    # adjust_saturation(im3, 0.3), (im3, 2.5), rgb_to_grayscale(im3), rgb_to_hsv(img),
    # hsv_to_rgb(rgb_to_hsv(img)), total_variation(img), (im3)
    got = [tf.image.adjust_gamma(im3, 2.0, 1.5), tf.image.adjust_hue(im3, 0.2),
           tf.image.adjust_hue(im3, -0.7), tf.image.adjust_saturation(im3, 0.3),
           tf.image.adjust_saturation(im3, 2.5), tf.image.rgb_to_grayscale(im3),
           tf.image.rgb_to_hsv(img), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(img))]
    np.testing.assert_allclose([g.numpy().sum() for g in got], _TF_COLOUR_SUMS, rtol=2e-6)
    np.testing.assert_allclose(tf.image.total_variation(img).numpy(), [53.130184, 43.32209],
                               rtol=1e-6)
    np.testing.assert_allclose(float(tf.image.total_variation(im3)), 53.130184, rtol=1e-6)
    # TF: uint8 inputs round-trip through float32
    pixel = tf.constant([[[200, 10, 30]]], tf.uint8)
    assert tf.image.adjust_hue(pixel, 0.3).numpy().tolist() == [[[68, 200, 10]]]
    assert tf.image.adjust_gamma(tf.constant([[[100]]], tf.uint8), 0.5).numpy().tolist() \
        == _TF_GAMMA_UINT8
    assert tf.image.rgb_to_grayscale(pixel).numpy().tolist() == _TF_GRAY_UINT8
    assert tf.image.grayscale_to_rgb(tf.constant([[[0.5]]])).numpy().tolist() \
        == [[[0.5, 0.5, 0.5]]]
    # TF: rgb_to_hsv of grey, red and a mixed pixel; hsv_to_rgb of two pixels
    np.testing.assert_allclose(
        tf.image.rgb_to_hsv([[[0.5, 0.5, 0.5], [1.0, 0.0, 0.0], [0.2, 0.1, 0.9]]]).numpy(),
        _TF_HSV, rtol=1e-6)
    np.testing.assert_allclose(
        tf.image.hsv_to_rgb([[[0.9, 0.5, 0.7], [0.1, 0.2, 0.3]]]).numpy(),
        [[[0.7, 0.35, 0.56000012], [0.3, 0.276, 0.24]]], rtol=1e-6)
    dy, dx = tf.image.image_gradients(img)
    np.testing.assert_allclose([dy.numpy().sum(), dx.numpy().sum()], [2.081797, 0.91411304],
                               rtol=1e-5)
    rng = np.random.default_rng(1)
    x, w = rng.uniform(0.05, 0.95, (2, 3, 3)), rng.uniform(-1, 1, (2, 3, 3))
    # TF 2.21 has a gradient for rgb_to_hsv (sum(x-gradient) 4.847945430771904 there)
    np.testing.assert_allclose(_tape_grad(lambda v: tf.reduce_sum(tf.image.rgb_to_hsv(v) * w),
                                          x).sum(), _TF_HSV_GRAD_SUM, rtol=1e-9)
    check_grad(lambda v: tf.reduce_sum(tf.image.rgb_to_hsv(v) * w), x)
    check_grad(lambda v: tf.reduce_sum(tf.image.total_variation(v) * 1.0), x)


# --------------------------------------------------------------------------- random gamma
def test_stateless_gamma_moments_and_implicit_gradient():
    from scipy import special
    x = tf.random.stateless_gamma([20000], seed=[1, 2], alpha=2.0, beta=4.0)
    assert x.dtype == tf.float32 and x.shape == (20000,)
    # Gamma(2, rate 4): mean 0.5, variance 0.125 (4-sigma bands for 20000 samples)
    assert abs(float(tf.reduce_mean(x)) - 0.5) < 4 * np.sqrt(0.125 / 20000)
    assert abs(float(tf.math.reduce_variance(x)) - 0.125) < 0.01
    again = tf.random.stateless_gamma([20000], seed=[1, 2], alpha=2.0, beta=4.0)
    np.testing.assert_array_equal(x.numpy(), again.numpy())  # stateless: same seed, same x
    small = tf.random.stateless_gamma([20000], seed=[5, 6], alpha=0.3, dtype=tf.float64)
    assert abs(float(tf.reduce_mean(small)) - 0.3) < 4 * np.sqrt(0.3 / 20000)
    # the implicit derivative: x moves with alpha at a fixed quantile P(alpha, x)
    a = tf.constant([0.5, 3.0, 7.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(a)
        s = tf.random.stateless_gamma([3], seed=[3, 4], alpha=a, dtype=tf.float64)
    q, h = special.gammainc(a.numpy(), s.numpy()), 1e-6
    slope = (special.gammaincinv(a.numpy() + h, q) - special.gammaincinv(a.numpy() - h, q)) \
        / (2 * h)
    np.testing.assert_allclose(tape.gradient(s, a).numpy(), slope, rtol=1e-5)
    traced = tf.function(lambda: tf.random.stateless_gamma([4], seed=[7, 8], alpha=1.5))
    np.testing.assert_array_equal(
        traced().numpy(), tf.random.stateless_gamma([4], seed=[7, 8], alpha=1.5).numpy())


def test_ctc_loss_matches_tensorflow():
    # TF 2.21: rng = default_rng(0); logits = rng.normal(size=(6, 3, 5)) as float32
    logits = tf.constant(np.random.default_rng(0).normal(size=(6, 3, 5)), tf.float32)
    labels = tf.constant([[1, 2, 2], [3, 0, 0], [4, 1, 0]])
    ll, tl = tf.constant([3, 1, 2]), tf.constant([6, 4, 5])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.ctc_loss(labels, logits, ll, tl)
        weighted = tf.reduce_sum(loss * [1.0, 2.0, 3.0])
    # TF: tf.nn.ctc_loss(labels, logits, ll, tl) (blank_index None acts as 0)
    np.testing.assert_allclose(loss.numpy(), [8.255633354187012, 4.5253825187683105,
                                              5.009273529052734], rtol=1e-6)
    g = tape.gradient(weighted, logits).numpy()
    # TF: the gradient of reduce_sum(loss * [1, 2, 3]) for batch entry 0, rounded to 1e-6
    np.testing.assert_allclose(g[:, 0, :], [
        [-0.079307, -0.561942, 0.338596, 0.198202, 0.104451],
        [-0.080519, -0.312608, -0.315142, 0.245989, 0.46228],
        [-0.294148, -0.000477, -0.298498, 0.344504, 0.248618],
        [-0.243265, 0.196106, -0.399348, 0.276517, 0.16999],
        [-0.408264, 0.035892, 0.141301, 0.070414, 0.160657],
        [-0.029266, 0.043781, -0.731975, 0.089101, 0.628359]], atol=2e-6)
    assert not g[4:, 1, :].any()  # steps past logit_length get no gradient
    # TF: labels2 with blank_index=0; labels shifted with blank_index=-1; batch-major
    labels2 = tf.constant([[1, 2, 2], [3, 4, 4], [4, 1, 3]])
    np.testing.assert_allclose(tf.nn.ctc_loss(labels2, logits, ll, tl, blank_index=0).numpy(),
                               [8.255633354187012, 4.5253825187683105, 5.009273529052734],
                               rtol=1e-6)
    shifted = labels - 1 + tf.cast(tf.equal(labels, 0), tf.int32)
    np.testing.assert_allclose(tf.nn.ctc_loss(shifted, logits, ll, tl, blank_index=-1).numpy(),
                               [7.992220878601074, 5.483232498168945, 4.973254203796387],
                               rtol=1e-6)
    np.testing.assert_allclose(
        tf.nn.ctc_loss(labels, tf.transpose(logits, [1, 0, 2]), ll, tl,
                       logits_time_major=False).numpy(), loss.numpy(), rtol=1e-6)
    check_grad(lambda v: tf.reduce_sum(tf.nn.ctc_loss(labels, v, ll, tl)),
               np.random.default_rng(1).normal(size=(6, 3, 5)))
