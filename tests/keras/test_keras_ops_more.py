"""keras.ops beyond the basics (API §11.1, issue #30): every case of
fixtures/keras_ops.json (made by fixtures/make_keras_ops.py with real Keras 3.15) gives
Keras's values and dtypes; Operations recorded in functional models carry Keras's class
names and survive saving; gradients match central differences."""
import builtins
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import ops

FIXTURE = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures",
                                      "keras_ops.json")))
INPUTS = {k: np.asarray(v["value"], dtype=v["dtype"]) for k, v in FIXTURE["inputs"].items()}
CASES = sorted(FIXTURE["cases"])
# results Keras leaves unspecified or computes with its own rounding
LOOSE = {"ops.nextafter(X, Y)": 0.0}


def _compare(got, want, case):
    if "str" in want:
        assert got == want["str"], case
        return
    if "tuple" in want:
        assert isinstance(got, (tuple, list)), f"{case}: expected a tuple, got {got!r}"
        assert len(got) == len(want["tuple"]), case
        for g, w in zip(got, want["tuple"]):
            _compare(g, w, case)
        return
    if want["dtype"] is not None:
        assert got.dtype.name == want["dtype"], f"{case}: dtype {got.dtype.name}, " \
                                                f"Keras {want['dtype']}"
        got = got.numpy()
    got = np.asarray(got)
    assert list(got.shape) == want["shape"], f"{case}: shape {got.shape}, Keras {want['shape']}"
    expected = np.asarray(want["value"], dtype=bool if got.dtype == bool else np.float64)
    if got.dtype == bool:
        np.testing.assert_array_equal(got, expected, err_msg=case)
    else:
        tol = 2e-3 if got.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol,
                                   err_msg=case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_dtypes_as_keras(case):
    want = FIXTURE["cases"][case]
    if "error" in want:  # Keras refuses these: so must tapeflow, with the same error type
        kind = getattr(builtins, want["error"], Exception)
        with pytest.raises(kind if isinstance(kind, type) else Exception):
            eval(case, {"ops": ops, "np": np, **INPUTS})
        return
    result = eval(case, {"ops": ops, "np": np, **INPUTS})
    if isinstance(result, tf.TensorShape):
        result = np.asarray(result.as_list())
    _compare(result, want, case)


DTYPE_ROWS = sorted((case, name) for case, row in FIXTURE["dtypes"].items()
                    for name, want in row.items() if want is not None)


@pytest.mark.parametrize("case,name", DTYPE_ROWS)
def test_result_dtypes_as_keras(case, name):
    a = np.array([[1, 0], [1, 1]], dtype=name)
    b = np.array([[0, 1], [1, 0]], dtype=name)
    got = eval(case, {"ops": ops, "np": np, "a": a, "b": b})
    assert got.dtype.name == FIXTURE["dtypes"][case][name], \
        f"{case} on {name}: {got.dtype.name}, Keras {FIXTURE['dtypes'][case][name]}"


def _sparsemax_reference(z):
    """The Euclidean projection of each row onto the simplex (Martins & Astudillo)."""
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        s = np.sort(row)[::-1]
        k = np.arange(1, len(row) + 1)
        support = 1 + k * s > np.cumsum(s)
        kz = k[support][-1]
        tau = (np.cumsum(s)[kz - 1] - 1) / kz
        out[i] = np.maximum(row - tau, 0)
    return out


def test_sparsemax_projects_onto_the_simplex():
    z = INPUTS["T"].reshape(-1, 4) * 2
    got = ops.sparsemax(z).numpy()
    np.testing.assert_allclose(got, _sparsemax_reference(z), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)
    along_0 = ops.sparsemax(z.T, axis=0).numpy()
    np.testing.assert_allclose(along_0, _sparsemax_reference(z).T, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- functional
def _roundtrip(model, tmp_path, x):
    """The model's predictions before and after a .keras round trip, and its layers'
    class names as saved."""
    path = str(tmp_path / "ops.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    before = model(x)
    after = loaded(x)
    return before, after, [type(layer).__name__ for layer in loaded.layers]


def _same(a, b):
    for p, q in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=1e-6, atol=1e-6)


SYMBOLIC = {
    "numpy": (lambda x: [ops.quantile(ops.cumsum(ops.sin(ops.tril(ops.flip(x, 1))), 2), 0.5,
                                      axis=-1),
                         ops.pad(ops.moveaxis(x, 1, 2), ((0, 0), (1, 0), (0, 2))),
                         ops.logaddexp(x, ops.roll(x, 1, axis=2))],
              (3, 4), {"Flip", "Tril", "Sin", "Cumsum", "Quantile", "Pad", "Moveaxis",
                       "Logaddexp", "Roll"}),
    "nn": (lambda x: [ops.depth_to_space(ops.max_pool(ops.hard_silu(x), 2), 2),
                      ops.glu(ops.normalize(x, axis=-1)),
                      ops.layer_normalization(ops.celu(x), epsilon=0.1)],
           (4, 4, 4), {"HardSilu", "MaxPool", "DepthToSpace", "Normalize", "Glu", "Celu",
                       "LayerNorm"}),
    "core_math_linalg": (
        lambda x: [ops.top_k(ops.extract_sequences(ops.erf(x), 2, 1), 1)[0],
                   ops.slice(ops.saturate_cast(x * 100.0, "int8"), [0, 1, 0], [1, 2, 2]),
                   ops.rfft(x)[1],
                   ops.det(ops.matmul(x[:, :, :3], ops.transpose(x[:, :, 1:], (0, 2, 1))))],
        (3, 4), {"Erf", "ExtractSequences", "TopK", "SaturateCast", "Slice", "RFFT", "Det",
                 "GetItem"}),
    "image": (lambda x: [ops.image.resize(ops.image.rgb_to_grayscale(x), (3, 2)),
                         ops.image.extract_patches(ops.image.pad_images(x, 1, 0, 0, 1), 2),
                         ops.image.gaussian_blur(ops.image.rgb_to_hsv(x))],
              (4, 5, 3), {"RGBToGrayscale", "Resize", "PadImages", "ExtractPatches",
                          "RGBToHSV", "GaussianBlur"}),
}


@pytest.mark.parametrize("module", sorted(SYMBOLIC))
def test_functional_models_record_keras_operations_and_round_trip(module, tmp_path):
    build, shape, names = SYMBOLIC[module]
    inputs = tf.keras.Input(shape)
    outputs = build(inputs)
    model = tf.keras.Model(inputs, outputs)
    x = np.random.default_rng(3).uniform(size=(2,) + shape).astype(np.float32)
    eager = build(tf.constant(x))
    for symbolic, value in zip(outputs, eager):  # traced shapes agree with the values
        assert [d for d in symbolic.shape[1:]] == list(value.shape[1:])
    before, after, kinds = _roundtrip(model, tmp_path, x)
    assert names <= set(kinds), names - set(kinds)
    _same(before, eager)
    _same(after, eager)


def test_operation_configs_hold_the_static_arguments():
    x = tf.keras.Input((6, 6, 2))
    y = ops.conv_transpose(x, np.ones((3, 3, 4, 2), np.float32), strides=2, padding="same")
    layer = y.node.layer
    assert type(layer).__name__ == "ConvTranspose" and y.shape == (None, 12, 12, 4)
    config = layer.get_config()
    assert {k: config[k] for k in ("strides", "padding")} == {"strides": 2, "padding": "same"}
    z = ops.image.resize(x, (3, 4), interpolation="nearest")
    assert z.node.layer.get_config()["interpolation"] == "nearest" and z.shape == (None, 3, 4, 2)
    q = ops.quantile(x, [0.1, 0.9], axis=(1, 2))
    assert type(q.node.layer).__name__ == "Quantile" and q.shape == (2, None, 2)


# --------------------------------------------------------------------------- gradients
RNG = np.random.default_rng(11)
GRADIENTS = {
    "logaddexp": lambda x: ops.logaddexp(x, x[::-1] * 0.5),
    "quantile": lambda x: ops.quantile(x, [0.3, 0.8], axis=1),
    "cbrt_sinc": lambda x: ops.cbrt(x + 2.0) * ops.sinc(x),
    "layer_normalization": lambda x: ops.layer_normalization(x, x[0], x[1]),
    "conv_transpose": lambda x: ops.conv_transpose(ops.reshape(x, (1, 3, 4)),
                                                   ops.reshape(x[:2], (2, 1, 4)), 2),
    "dot_product_attention": lambda x: ops.dot_product_attention(
        ops.reshape(x, (1, 3, 2, 2)), ops.reshape(x[::-1], (1, 3, 2, 2)),
        ops.reshape(x * x, (1, 3, 2, 2)), is_causal=True),
    "ctc_loss": lambda x: ops.ctc_loss(np.array([[1, 2]]), ops.reshape(x, (1, 4, 3)),
                                       np.array([2]), np.array([4])),
    "map_coordinates": lambda x: ops.image.map_coordinates(
        x, [np.array([0.3, 1.6, 2.2]), np.array([0.5, 2.5, 1.1])], 1),
    "erfinv_cdist": lambda x: ops.erfinv(ops.tanh(x)) + ops.cdist(x, x[::-1] + 0.3)[:, :1],
    "slogdet_inv": lambda x: ops.slogdet(ops.matmul(x[:3, :3], ops.transpose(x[:3, :3])) +
                                         ops.eye(3, dtype="float64"))[1] +
    ops.sum(ops.inv(x[:3, :3] + 3 * ops.eye(3, dtype="float64"))),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_central_differences(name):
    fn = GRADIENTS[name]
    x0 = RNG.normal(size=(3, 4)) * 0.5
    weights = RNG.normal(size=np.shape(fn(tf.constant(x0)))).astype(np.float64)

    def objective(x):
        return float(np.sum(np.asarray(fn(tf.constant(x))) * weights))
    x = tf.Variable(x0)
    with tf.GradientTape() as tape:
        value = ops.sum(fn(x.read_value()) * weights)
    got = tape.gradient(value, x).numpy()
    want = np.zeros_like(x0)
    h = 1e-6
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += h
        down[i] -= h
        want[i] = (objective(up) - objective(down)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_lu_factor_of_a_batch_rebuilds_the_permuted_matrices():
    # Keras's TensorFlow backend refuses batches here; the factors must still satisfy
    # x[p] = L U with p the inverse of the pivots
    x = np.stack([INPUTS["A"], INPUTS["S"]]).astype(np.float64)
    lu, pivots = ops.lu_factor(x)
    for i in range(2):
        factors = lu[i].numpy()
        lower = np.tril(factors, -1) + np.eye(3)
        upper = np.triu(factors)
        order = np.argsort(pivots[i].numpy())
        np.testing.assert_allclose(x[i][order], lower @ upper, atol=1e-12)


def test_operations_with_optional_tensors_keep_their_arguments_in_place():
    # config arguments between tensor arguments (average's axis, pad's pad_width,
    # batch_normalization's axis) and skipped optional tensors (attention's bias/mask)
    x, w = tf.keras.Input((3,)), tf.keras.Input((3,))
    q = tf.keras.Input((4, 2, 3))
    outputs = [ops.average(x, axis=1, weights=w),
               ops.pad(x, ((0, 0), (1, 1)), constant_values=2.0),
               ops.einsum("bi,bi->b", x, w),
               ops.batch_normalization(x, np.zeros(3, np.float32), np.ones(3, np.float32),
                                       axis=-1, scale=np.full(3, 2.0, np.float32),
                                       epsilon=0.0),
               ops.dot_product_attention(q, q, q, scale=0.3, is_causal=True)]
    model = tf.keras.Model([x, w, q], outputs)
    assert {"Average", "Pad", "Einsum", "BatchNorm", "DotProductAttention"} <= {
        type(layer).__name__ for layer in model.layers}
    xv = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    wv = xv[::-1] + 1
    qv = INPUTS["Q"]
    got = model([xv, wv, qv])
    np.testing.assert_allclose(got[0], np.average(xv, axis=1, weights=wv), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.pad(xv, ((0, 0), (1, 1)), constant_values=2.0))
    np.testing.assert_allclose(got[2], (xv * wv).sum(1), rtol=1e-6)
    np.testing.assert_allclose(got[3], xv * 2.0, rtol=1e-6)
    logits = np.einsum("btnh,bsnh->bnts", qv, qv) * 0.3
    logits = np.where(np.tril(np.ones((4, 4), bool)), logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(got[4], np.einsum("bnts,bsnh->btnh", weights, qv), rtol=1e-5,
                               atol=1e-6)
