"""The models the SavedModel tests export (shared by the tests and
fixtures/write_models.py, which writes them for fixtures/verify_tf.py to load in
TensorFlow). Weights come from fixed NumPy seeds, so every run writes the same values."""
import numpy as np

import tapeflow as tf
from tapeflow.saved_model.export import export_model


def _randn(seed, *shape):
    return np.random.RandomState(seed).randn(*shape).astype("float32")


class MLP(tf.Module):
    """MatMul, BiasAdd, Relu, AddV2, Softmax; a dict output; default signature."""

    def __init__(self):
        super().__init__()
        self.w1 = tf.Variable(_randn(0, 4, 8), name="w1")
        self.b1 = tf.Variable(_randn(1, 8) * 0.1, name="b1")
        self.w2 = tf.Variable(_randn(2, 8, 3), name="w2")
        self.b2 = tf.Variable(_randn(3, 3) * 0.1, name="b2")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, self.w1), self.b1))
        return {"probs": tf.nn.softmax(tf.matmul(h, self.w2) + self.b2)}


class Dense(tf.Module):
    def __init__(self, seed, n_in, n_out):
        super().__init__()
        self.kernel = tf.Variable(_randn(seed, n_in, n_out) * 0.5, name="kernel")
        self.bias = tf.Variable(_randn(seed + 100, n_out) * 0.1, name="bias")

    def __call__(self, x):
        return tf.matmul(x, self.kernel) + self.bias


class Stack(tf.Module):
    """Submodules in a list, two signatures (a concrete function and a tf.function),
    a single-tensor output (output_0) and a captured eager constant."""

    def __init__(self):
        super().__init__()
        self.layers = [Dense(10, 5, 6), Dense(11, 6, 2)]
        self.scale = tf.constant(np.float32(0.5))

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="features")])
    def logits(self, features):
        return self.layers[1](tf.nn.relu(self.layers[0](features))) * self.scale

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="features")])
    def __call__(self, features):
        return tf.nn.softmax(self.logits(features))


def keras_sequential():
    keras = tf.keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.set_weights([_randn(20 + i, *w.shape) * 0.5 for i, w in
                       enumerate(model.get_weights())])
    return model


def keras_functional():
    keras = tf.keras
    a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
    h = keras.layers.Dense(5, activation="tanh")(a)
    z = keras.layers.Dense(2)(keras.layers.Concatenate()([h, b]))
    model = keras.Model([a, b], {"z": z})
    model.set_weights([_randn(30 + i, *w.shape) * 0.5 for i, w in
                       enumerate(model.get_weights())])
    return model


def build():
    """{name: (model, save(path), example input)}; Keras models are written as
    `Model.export` writes them (signatures "serve" and "serving_default")."""
    mlp = MLP()
    stack = Stack()
    seq, func = keras_sequential(), keras_functional()
    return {
        "mlp": (mlp, lambda path: tf.saved_model.save(mlp, path), _randn(7, 3, 4)),
        "stack": (stack, lambda path: tf.saved_model.save(stack, path, signatures={
            "serving_default": stack.__call__.get_concrete_function(),
            "logits": stack.logits}), _randn(8, 2, 5)),
        "keras_sequential": (seq, lambda path: export_model(seq, path), _randn(9, 3, 4)),
        "keras_functional": (func, lambda path: export_model(func, path),
                             [_randn(10, 3, 4), _randn(11, 3, 2)]),
    }


def run(name, module, x):
    """The outputs the model's signatures give in tapeflow: {signature: {key: array}}."""
    if name == "mlp":
        return {"serving_default": {"probs": module(x)["probs"].numpy()}}
    if name == "stack":
        return {"serving_default": {"output_0": module(x).numpy()},
                "logits": {"output_0": module.logits(x).numpy()}}
    if name == "keras_sequential":
        y = module(x, training=False).numpy()
        return {"serve": {"output_0": y}, "serving_default": {"output_0": y}}
    y = module(x, training=False)["z"].numpy()
    return {"serve": {"z": y}, "serving_default": {"z": y}}
