"""The models the SavedModel tests export (shared by the tests and
fixtures/write_models.py, which writes them for fixtures/verify_tf.py to load in
TensorFlow). Weights come from fixed NumPy seeds, so every run writes the same values."""
import numpy as np

import tapeflow as tf


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


def build():
    """{name: (module, signatures argument of save, example input)}."""
    mlp = MLP()
    stack = Stack()
    return {
        "mlp": (mlp, None, _randn(7, 3, 4)),
        "stack": (stack, {"serving_default": stack.__call__.get_concrete_function(),
                          "logits": stack.logits}, _randn(8, 2, 5)),
    }


def run(name, module, x):
    """The outputs the model's signatures give in tapeflow: {signature: {key: array}}."""
    if name == "mlp":
        return {"serving_default": {"probs": module(x)["probs"].numpy()}}
    return {"serving_default": {"output_0": module(x).numpy()},
            "logits": {"output_0": module.logits(x).numpy()}}
