"""Every activation Keras 3 lists (`dir(keras.activations)`): values against real Keras 3
(keras_activations.json, written by fixtures/make_activations.py), names through `get`,
`serialize`, `deserialize` and layers, and gradients against central differences."""
import json
import os

import numpy as np
import pytest

import tapeflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "keras_activations.json")) as f:
    KERAS = json.load(f)
A = tf.keras.activations
TOL = dict(rtol=1e-5, atol=1e-6)


def test_every_keras_name_exists():
    for name in KERAS["names"]:
        assert callable(getattr(A, name)), name
    assert set(KERAS["names"]) <= set(A.__all__)


@pytest.mark.parametrize("name", sorted(KERAS["plain"]))
def test_activation_matches_keras(name):
    inp = KERAS["sm"] if name in ("softmax", "sparsemax") else KERAS["x"]
    got = getattr(A, name)(tf.constant(np.array(inp, np.float32)))
    np.testing.assert_allclose(got.numpy(), KERAS["plain"][name], **TOL)
    assert got.dtype == tf.float32


@pytest.mark.parametrize("case", sorted(KERAS["calls"]))
def test_activation_arguments_match_keras(case):
    rec = KERAS["calls"][case]
    got = getattr(A, rec["name"])(tf.constant(np.array(rec["input"], np.float32)),
                                  **rec["kwargs"])
    np.testing.assert_allclose(got.numpy(), rec["value"], **TOL)


def test_sparsemax_follows_keras_formula_not_the_papers():
    # Keras 3 (every backend) takes tau = (sum of the cumulative sums over the support - 1)
    # / |support|; for [1, 0.5, 0] that is (1 + 1.5 - 1) / 2, so the output sums to 0.25
    got = A.sparsemax(tf.constant([[1.0, 0.5, 0.0]])).numpy()
    np.testing.assert_allclose(got, [[0.25, 0.0, 0.0]], **TOL)


@pytest.mark.parametrize("name", KERAS["names"])
def test_names_serialize_and_resolve(name):
    fn = getattr(A, name)
    assert A.serialize(fn) == KERAS["serialize"][name]
    assert A.get(name) is A.get(KERAS["serialize"][name])
    assert A.deserialize({"class_name": "function", "config": name}) is A.get(name)
    # layers take every name
    if name not in ("glu", "threshold"):
        layer = tf.keras.layers.Dense(2, activation=name, kernel_initializer="ones")
        out = layer(tf.constant([[0.3, -0.1]]))
        ref = getattr(A, name)(tf.constant([[0.2, 0.2]]))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)


def test_get_edge_cases():
    assert A.get(None) is A.linear
    assert A.get(np.tanh) is np.tanh
    with pytest.raises(ValueError, match="Unknown activation"):
        A.get("no_such_activation")
    with pytest.raises(ValueError, match="glu"):
        A.glu(tf.constant([[1.0, 2.0, 3.0]]))


def test_dense_with_new_activation_round_trips_config():
    layer = tf.keras.layers.Dense(3, activation="hard_swish")
    again = tf.keras.layers.Dense.from_config(layer.get_config())
    x = tf.constant([[1.0, -2.0]])
    layer(x)
    again(x)
    again.set_weights(layer.get_weights())
    np.testing.assert_allclose(again(x).numpy(), layer(x).numpy())


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# points away from the kinks of the piecewise functions
POINTS = np.array([[-4.2, -1.7, -0.8, -0.3, 0.1, 0.45, 0.7, 1.3, 2.2, 3.4, 6.5, -7.1]])
SMOOTH = ["celu", "elu", "exponential", "gelu", "hard_shrink", "hard_sigmoid", "hard_silu",
          "hard_tanh", "leaky_relu", "linear", "log_sigmoid", "mish", "relu", "relu6", "selu",
          "sigmoid", "silu", "soft_shrink", "softplus", "softsign", "sparse_plus",
          "sparse_sigmoid", "squareplus", "tanh", "tanh_shrink", "softmax", "log_softmax",
          "glu"]


@pytest.mark.parametrize("name", SMOOTH)
def test_activation_gradient_matches_central_differences(name):
    fn = getattr(A, name)
    weights = np.linspace(0.5, 1.5, 6 if name == "glu" else 12)[None]

    def total(v):
        return float(np.sum(fn(tf.constant(v)).numpy() * weights))
    x = tf.Variable(POINTS)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(x) * weights)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _numeric_grad(total, POINTS),
                               rtol=1e-5, atol=1e-8)
