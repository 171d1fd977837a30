"""keras.ops (API §11.1): values and dtypes as Keras 3's on tensors, Operations recorded
on KerasTensors (operators included), models built from them run and train."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import ops

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
I = np.array([[1, 2, 3], [4, 5, 6]], np.int32)

# (call on tensors, NumPy truth)
VALUES = [
    (lambda: ops.add(X, 1.0), X + 1), (lambda: ops.multiply(X, X), X * X),
    (lambda: ops.subtract(X, 2), X - 2), (lambda: ops.divide(I, 2), I / 2),
    (lambda: ops.matmul(X, X.T), X @ X.T), (lambda: ops.matmul(X[0], X[1]), X[0] @ X[1]),
    (lambda: ops.einsum("ij,kj->ik", X, X), X @ X.T),
    (lambda: ops.concatenate([X, X], axis=1), np.concatenate([X, X], 1)),
    (lambda: ops.concatenate([X, X], axis=None), np.concatenate([X.ravel(), X.ravel()])),
    (lambda: ops.stack([X, X], axis=1), np.stack([X, X], 1)),
    (lambda: ops.reshape(X, (3, -1)), X.reshape(3, -1)),
    (lambda: ops.transpose(X), X.T), (lambda: ops.expand_dims(X, (0, -1)), X[None, ..., None]),
    (lambda: ops.squeeze(X[None]), X), (lambda: ops.where(X > 0, X, 0.0), np.where(X > 0, X, 0)),
    (lambda: ops.mean(X, axis=0), X.mean(0)), (lambda: ops.mean(I), I.mean()),
    (lambda: ops.sum(X, axis=(0, 1), keepdims=True), X.sum((0, 1), keepdims=True)),
    (lambda: ops.max(X, axis=1), X.max(1)), (lambda: ops.min(X), X.min()),
    (lambda: ops.max(X, initial=10.0), np.max(X, initial=10.0)),
    (lambda: ops.argmax(X, axis=-1), X.argmax(-1)), (lambda: ops.argmax(X), X.argmax()),
    (lambda: ops.softmax(X), np.exp(X) / np.exp(X).sum(-1, keepdims=True)),
    (lambda: ops.softmax(X, axis=None), np.exp(X) / np.exp(X).sum()),
    (lambda: ops.relu(X), np.maximum(X, 0)), (lambda: ops.sigmoid(X), 1 / (1 + np.exp(-X))),
    (lambda: ops.gelu(X, approximate=False),
     X * 0.5 * (1 + np.vectorize(__import__("math").erf)(X / np.sqrt(2)))),
    (lambda: ops.one_hot(np.array([0, 2, 5]), 3), np.eye(3)[[0, 2]].tolist() + [[0, 0, 0]]),
    (lambda: ops.take(X, [2, -1], axis=1), X[:, [2, 2]]), (lambda: ops.take(X, [4]), X.ravel()[[4]]),
    (lambda: ops.cast(X, "int32"), X.astype(np.int32)),
    (lambda: ops.ones_like(X), np.ones_like(X)), (lambda: ops.zeros_like(I), np.zeros_like(I)),
    (lambda: ops.arange(1, 7, 2), np.arange(1, 7, 2)), (lambda: ops.arange(0.5, 2), [0.5, 1.5]),
    (lambda: ops.cumsum(I), np.cumsum(I)), (lambda: ops.cumsum(X, axis=1), np.cumsum(X, 1)),
    (lambda: ops.logsumexp(X, axis=1), np.log(np.exp(X).sum(1))),
    (lambda: ops.norm(X), np.linalg.norm(X)), (lambda: ops.norm(X, axis=1), np.linalg.norm(X, axis=1)),
    (lambda: ops.norm(X, ord=1, axis=0), np.linalg.norm(X, 1, axis=0)),
    (lambda: ops.norm(X, ord="fro", axis=(0, 1)), np.linalg.norm(X, "fro")),
    (lambda: ops.clip(X, -1.0, 1.0), np.clip(X, -1, 1)), (lambda: ops.sqrt(I), np.sqrt(I)),
    (lambda: ops.square(X), X ** 2), (lambda: ops.exp(X), np.exp(X)),
    (lambda: ops.log(np.abs(X)), np.log(np.abs(X))), (lambda: ops.abs(X), np.abs(X)),
]


@pytest.mark.parametrize("case", range(len(VALUES)))
def test_values_as_numpy(case):
    fn, want = VALUES[case]
    np.testing.assert_allclose(ops.convert_to_numpy(fn()), np.asarray(want, np.float64),
                               rtol=1e-6, atol=1e-6)


def test_dtypes_follow_keras_promotion():
    # checked against keras 3.15: keras.ops.<fn>(...).dtype
    assert ops.mean(I).dtype == tf.float32 and ops.sqrt(I).dtype == tf.float32
    assert ops.add(I, 0.5).dtype == tf.float32 and ops.add(I, 2).dtype == tf.int32
    assert ops.divide(I, I).dtype == tf.float32 and ops.sum(np.array([True])).dtype == tf.int32
    assert ops.argmax(X).dtype == tf.int32 and ops.one_hot([1], 2).dtype == tf.float32
    assert ops.add(np.float16(1) * np.ones(2, np.float16), np.ones(2, np.int64)).dtype == \
        tf.float16
    assert ops.arange(3).dtype == tf.int32 and ops.convert_to_tensor([1.0]).dtype == tf.float32
    assert ops.shape(tf.ones([2, 3])) == (2, 3)
    assert ops.where(np.array([True, False]))[0].numpy().tolist() == [0]


def test_operators_and_ops_build_a_functional_model():
    x = tf.keras.Input((6,), name="x")
    h = tf.keras.layers.Dense(6)(x)
    y = ops.reshape(h + x, (-1, 2, 3))          # a residual, then an op
    z = -(y[:, 1:2] * 2.0) ** 2 / 4.0 @ np.ones((3, 1), np.float32)
    assert y.shape == (None, 2, 3) and z.shape == (None, 1, 1)
    kinds = [type(layer).__name__ for layer in tf.keras.Model(x, z).layers]
    assert {"Add", "Reshape", "GetItem", "Multiply", "Power", "TrueDivide", "Matmul",
            "Negative"} <= set(kinds)
    model = tf.keras.Model(x, z)
    xv = np.arange(12, dtype=np.float32).reshape(2, 6)
    kernel, bias = model.layers[1].get_weights()
    yv = (xv @ kernel + bias + xv).reshape(-1, 2, 3)
    want = -((yv[:, 1:2] * 2.0) ** 2) / 4.0 @ np.ones((3, 1))
    np.testing.assert_allclose(model(xv).numpy(), want, rtol=1e-5)


def test_a_transformer_block_with_residuals_trains():
    tokens, width = 5, 8
    inputs = tf.keras.Input((tokens, width))
    attended = tf.keras.layers.MultiHeadAttention(2, 4)(inputs, inputs)
    h = tf.keras.layers.LayerNormalization()(inputs + attended)
    ff = tf.keras.layers.Dense(width)(tf.keras.layers.Dense(16, activation="relu")(h))
    out = tf.keras.layers.LayerNormalization()(h + ff)
    logits = tf.keras.layers.Dense(2)(ops.mean(out, axis=1))
    model = tf.keras.Model(inputs, logits)
    assert model.output_shape == (None, 2)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, tokens, width)).astype(np.float32)
    ys = (xs[:, :, 0].mean(1) > 0).astype(np.int32)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(xs, ys, epochs=8, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] * 0.8


def test_keras_tensors_refuse_python_truth_and_numpy():
    x = tf.keras.Input((2,))
    with pytest.raises(TypeError, match="symbolic"):
        bool(x)
    with pytest.raises(ValueError, match="symbolic"):
        ops.convert_to_numpy(x)
    assert ops.shape(x) == (None, 2)


def test_static_arguments_go_to_the_config_and_tensors_to_the_call():
    x = tf.keras.Input((4,))
    y = ops.clip(ops.transpose(ops.reshape(x, (-1, 2, 2)), (0, 2, 1)), -1.0, 1.0)
    clip = y.node.layer
    assert type(clip).__name__ == "Clip"
    assert clip.get_config() == {"name": clip.name, "x_min": -1.0, "x_max": 1.0}
    with pytest.raises(ValueError, match="static"):
        ops.reshape(ops.ones_like(x), x)  # a shape must be static


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


def test_loads_a_model_of_ops_that_keras_wrote():
    # written by fixtures/make_keras_ops_model.py with real Keras 3
    model = keras_load(FIXTURES / "keras_ops_model.keras")
    io = np.load(FIXTURES / "keras_ops_model_io.npz")
    kinds = {type(layer).__name__ for layer in model.layers}
    assert {"Add", "Reshape", "GetItem", "Multiply", "Softmax", "Concatenate", "Negative",
            "Matmul", "Transpose"} <= kinds
    np.testing.assert_allclose(model([io["x"], io["y"]]).numpy(), io["out"], rtol=1e-5,
                               atol=1e-6)


def keras_load(path):
    return tf.keras.models.load_model(str(path))


def test_writes_ops_as_keras_does_and_reads_them_back(tmp_path):
    x, y = tf.keras.Input((6,), name="x"), tf.keras.Input((6,), name="y")
    h = tf.keras.layers.Dense(6)(x) + y
    e = ops.softmax(ops.reshape(h, (-1, 2, 3))[:, 1:2, ...] * 2.0)
    out = -ops.concatenate([e, e], axis=1)
    model = tf.keras.Model([x, y], out)
    entries = {entry["class_name"]: entry for entry in model.get_config()["layers"]}
    assert entries["Reshape"]["module"] == "keras.src.ops.numpy"
    assert entries["Reshape"]["config"]["newshape"] == [-1, 2, 3]
    assert entries["Softmax"]["module"] == "keras.src.ops.nn"
    key = entries["GetItem"]["inbound_nodes"][0]["args"][1]
    assert key == [{"class_name": "__slice__", "config": {"start": None, "stop": None,
                                                          "step": None}},
                   {"class_name": "__slice__", "config": {"start": 1, "stop": 2, "step": None}},
                   {"class_name": "__ellipsis__", "config": {}}]
    path = tmp_path / "ops.keras"
    model.save(str(path))
    again = keras_load(path)
    xs = np.arange(12, dtype="float32").reshape(2, 6)
    ys = np.ones((2, 6), "float32")
    np.testing.assert_allclose(again([xs, ys]).numpy(), model([xs, ys]).numpy(), rtol=1e-6)
    # for fixtures/verify_keras_loads_tapeflow_ops.py (real Keras reads the file)
    keep = __import__("os").environ.get("TAPEFLOW_VERIFY_DIR")
    if keep:
        model.save(f"{keep}/tapeflow_ops_model.keras")
        np.savez(f"{keep}/tapeflow_ops_model_io.npz", x=xs, y=ys, out=model([xs, ys]).numpy())


def test_operation_arguments_keep_their_places_and_configs_list_defaults():
    x, w = tf.keras.Input((3,)), tf.keras.Input((3,))
    y = ops.einsum("bi,bi->b", x, w)          # config first, then the tensors
    mean = ops.mean(x, keepdims=True)          # a config default left out by the caller
    assert mean.node.layer.get_config()["axis"] is None
    big = ops.where(x > 0.5, x, w)             # a comparison on a KerasTensor
    model = tf.keras.Model([x, w], [y, mean, big])
    xv = np.array([[0.2, 0.9, 1.0]], np.float32)
    wv = np.array([[1.0, 2.0, 3.0]], np.float32)
    out = model([xv, wv])
    np.testing.assert_allclose(out[0].numpy(), [(xv * wv).sum()], rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), xv.mean(keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(out[2].numpy(), np.where(xv > 0.5, xv, wv))
    assert x == x and not (x == w)             # identity, as Keras: no Equal operation
