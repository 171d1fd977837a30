"""The models the SavedModel tests export (shared by the tests and
fixtures/write_models.py, which writes them for fixtures/verify_tf.py to load in
TensorFlow). Weights come from fixed NumPy seeds, so every run writes the same values."""
import os
import sys

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


def keras_cnn():
    """Conv2D, MaxPool, AvgPool, BatchNormalization, Flatten, LayerNormalization, GELU."""
    keras = tf.keras
    model = keras.Sequential([
        keras.Input((8, 8, 3)),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(), keras.layers.Conv2D(4, 3, strides=2),
        keras.layers.AveragePooling2D(1), keras.layers.BatchNormalization(),
        keras.layers.Flatten(), keras.layers.Dropout(0.5),
        keras.layers.Dense(5, activation="sigmoid"), keras.layers.LayerNormalization(),
        keras.layers.Dense(2, activation="gelu")])
    model.set_weights([np.abs(_randn(40 + i, *w.shape)) * 0.5 + 0.1
                       if "variance" in w.name else _randn(40 + i, *w.shape) * 0.5
                       for i, w in enumerate(model.weights)])
    return model


class Ops(tf.Module):
    """Cast, Transpose, Sum, Max, Mean, ExpandDims, Squeeze, Log, Abs, Pow, Erf,
    LeakyRelu, Reshape, ConcatV2: several outputs, one an int32."""

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 2], tf.float32, name="t")])
    def __call__(self, t):
        e = tf.expand_dims(t, 1)
        return {"cast": tf.cast(t * 4.0, tf.int32),
                "moved": tf.reshape(tf.transpose(tf.squeeze(e, 1), [0, 2, 1]), [-1, 6]),
                "stats": tf.concat([tf.reduce_max(t, axis=-1), tf.reduce_mean(t, axis=1)],
                                   axis=1) + tf.reduce_sum(t),
                "curves": tf.math.log(tf.abs(t) + 1.0) + tf.pow(t, 2.0) + tf.math.erf(t)
                + tf.nn.leaky_relu(t)}


def keras_transformer():
    """Embedding (GatherV2), MultiHeadAttention (Einsum, Softmax), LayerNormalization,
    GlobalAveragePooling1D; int32 token input."""
    keras = tf.keras
    tokens = keras.Input((6,), dtype="int32", name="tokens")
    e = keras.layers.Embedding(20, 8)(tokens)
    h = keras.layers.LayerNormalization()(keras.layers.MultiHeadAttention(2, 4)(e, e) + e)
    out = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling1D()(h))
    model = keras.Model(tokens, out)
    model.set_weights([_randn(50 + i, *w.shape) * 0.5 for i, w in
                       enumerate(model.get_weights())])
    return model


class Dynamic(tf.Module):
    """Sizes known only at run time: Shape, StridedSlice, a Reshape and Fill whose shapes
    hold the batch size, Range, OnesLike."""

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 2], tf.float32, name="t")])
    def __call__(self, t):
        n = tf.shape(t)[0]
        flat = tf.reshape(t, [n, -1])
        return {"flat": flat + tf.zeros([n, 6]) + tf.ones_like(flat),
                "index": tf.cast(tf.range(n), tf.float32) + t[:, 0, 1] + t[-1, 1:, 0][0]}


class Counter(tf.Module):
    """Assignments in a served function: they run (control outputs) and in trace order
    (a read after an assignment sees it)."""

    def __init__(self):
        super().__init__()
        self.calls = tf.Variable(np.float32(0.0), name="calls")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v")])
    def __call__(self, v):
        self.calls.assign_add(1.0)
        self.calls.assign(self.calls * 2.0)
        return v + self.calls


class Branchy(tf.Module):
    """Control flow: a tf.cond reading a variable (If) and a pure one (StatelessIf); a
    tf.while_loop with maximum_iterations reading a variable (While); a pure loop of
    unknown trip count with a cond nested in its body (StatelessWhile, StatelessIf)."""

    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(_randn(60, 3), name="scale")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def __call__(self, x):
        total = tf.reduce_sum(x)
        y = tf.cond(total > 0.0, lambda: x * self.scale, lambda: x - 1.0)
        z = tf.cond(total <= 0.0, lambda: tf.nn.relu(x), lambda: tf.tanh(x))
        n = tf.shape(x)[0]
        steps, acc = tf.while_loop(
            lambda i, acc: i < n,
            lambda i, acc: (i + 1, acc * 0.5 + tf.reduce_sum(tf.gather(x, i)) * self.scale),
            [0, tf.zeros([3])], maximum_iterations=4)
        count, grown = tf.while_loop(
            lambda k, w: tf.reduce_sum(w) < 50.0,
            lambda k, w: (k + 1, tf.cond(k % 2 == 0, lambda: w * 2.0, lambda: w + 1.0)),
            [tf.constant(0), tf.abs(z) + 0.5])
        return {"cond": y, "loop": acc, "steps": steps, "grown": grown, "count": count}


class LoopAssigns(tf.Module):
    """A loop whose body assigns a variable (While with effects) and a cond whose
    branches do (If): the assignment before the loop, those in it, the cond's and the
    read after it run in trace order."""

    def __init__(self):
        super().__init__()
        self.total = tf.Variable(np.float32(0.0), name="total")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v")])
    def __call__(self, v):
        self.total.assign(0.0)

        def body(i):
            self.total.assign_add(tf.square(tf.gather(v, i)))
            return i + 1

        (steps,) = tf.while_loop(lambda i: i < tf.shape(v)[0], body, [tf.constant(0)])
        tf.cond(steps > 3, lambda: self.total.assign_add(100.0),
                lambda: self.total.assign_sub(1.0))  # (an If run for its effect)
        return {"total": self.total * 1.0, "steps": steps}


class KeywordOrder(tf.Module):
    """Inputs whose keys are not in the order of the parameters (TensorFlow passes a
    signature's inputs sorted by key), a predicate of shape (1,) and an int64
    maximum_iterations."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v"),
                                  tf.TensorSpec([], tf.int64, name="limit")])
    def __call__(self, v, limit):
        flag = tf.reshape(tf.reduce_sum(v) > 0.0, [1])
        y = tf.cond(flag, lambda: v + 1.0, lambda: v - 1.0)
        n, z = tf.while_loop(lambda n, z: True, lambda n, z: (n + 1, z * 2.0), [0, y],
                             maximum_iterations=limit)
        return {"y": z, "n": n}


def keras_lstm():
    """An LSTM over sequences of unknown length (a While over the time steps)."""
    keras = tf.keras
    model = keras.Sequential([keras.Input((None, 3)), keras.layers.LSTM(4),
                              keras.layers.Dense(2)])
    model.set_weights([_randn(70 + i, *w.shape) * 0.5 for i, w in
                       enumerate(model.get_weights())])
    return model


def build():
    """{name: (model, save(path), example input)}; Keras models are written as
    `Model.export` writes them (signatures "serve" and "serving_default")."""
    # automatic names ("input_layer", "dense") from zero, whatever ran before in this
    # process: the signatures' input keys are the Inputs' names
    tf.keras.backend.clear_session()
    mlp = MLP()
    stack = Stack()
    seq, func, cnn, ops = keras_sequential(), keras_functional(), keras_cnn(), Ops()
    counter, transformer, dynamic = Counter(), keras_transformer(), Dynamic()
    branchy, lstm, assigns, order = Branchy(), keras_lstm(), LoopAssigns(), KeywordOrder()
    return {
        "mlp": (mlp, lambda path: tf.saved_model.save(mlp, path), _randn(7, 3, 4)),
        "stack": (stack, lambda path: tf.saved_model.save(stack, path, signatures={
            "serving_default": stack.__call__.get_concrete_function(),
            "logits": stack.logits}), _randn(8, 2, 5)),
        "keras_sequential": (seq, lambda path: export_model(seq, path), _randn(9, 3, 4)),
        "keras_functional": (func, lambda path: export_model(func, path),
                             [_randn(10, 3, 4), _randn(11, 3, 2)]),
        "keras_cnn": (cnn, lambda path: export_model(cnn, path), _randn(12, 2, 8, 8, 3)),
        "ops": (ops, lambda path: tf.saved_model.save(ops, path), _randn(13, 2, 3, 2)),
        "keras_transformer": (transformer, lambda path: export_model(transformer, path),
                              np.random.RandomState(15).randint(0, 20, (2, 6)).astype("int32")),
        "dynamic": (dynamic, lambda path: tf.saved_model.save(dynamic, path),
                    _randn(16, 4, 3, 2)),
        "counter": (counter, lambda path: tf.saved_model.save(counter, path), _randn(14, 3)),
        "branchy": (branchy, lambda path: tf.saved_model.save(branchy, path),
                    np.abs(_randn(17, 3, 3))),
        "keras_lstm": (lstm, lambda path: export_model(lstm, path), _randn(18, 2, 5, 3)),
        "loop_assigns": (assigns, lambda path: tf.saved_model.save(assigns, path),
                         _randn(19, 5)),
        # the inputs in key order: limit, v
        "keyword_order": (order, lambda path: tf.saved_model.save(order, path),
                          [np.int64(3), _randn(20, 4)]),
    }


def run(name, module, x):
    """The outputs the model's signatures give in tapeflow: {signature: {key: array}}."""
    if name == "mlp":
        return {"serving_default": {"probs": module(x)["probs"].numpy()}}
    if name == "stack":
        return {"serving_default": {"output_0": module(x).numpy()},
                "logits": {"output_0": module.logits(x).numpy()}}
    if name == "counter":  # (calls: 0 -> 2 -> 6; each load starts from the saved 0)
        first = module(x).numpy()
        return {"serving_default": {"output_0": first}, "second": {"output_0":
                                                                  module(x).numpy()}}
    if name == "keyword_order":
        return {"serving_default": {k: v.numpy() for k, v in module(v=x[1],
                                                                    limit=x[0]).items()}}
    if name in ("ops", "dynamic", "branchy", "loop_assigns"):
        return {"serving_default": {k: v.numpy() for k, v in module(x).items()}}
    if name in ("keras_sequential", "keras_cnn", "keras_transformer", "keras_lstm"):
        y = module(x, training=False).numpy()
        return {"serve": {"output_0": y}, "serving_default": {"output_0": y}}
    y = module(x, training=False)["z"].numpy()
    return {"serve": {"z": y}, "serving_default": {"z": y}}


# ---------------------------------------------------------------- the model zoo's
# The Keras models of bench/zoo_models.py (issue #29), built by the zoo's own builders
# under tapeflow, their weights then drawn from NumPy seeds.
ZOO = ("cnn_tutorial", "resnet_block", "mobilenet", "lstm_text", "gru_text", "transformer",
       "mlp_bn")


def zoo_module():
    """bench/zoo_models.py, bound to tapeflow (its models call `tf` when they run)."""
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import zoo_models
    zoo_models.bind(tf)
    return zoo_models


def zoo_model(name: str):
    """(model, two inputs) of zoo model `name`: every weight from a NumPy seed (kernels
    scaled by their fan-in, so activations stay near 1), moving variances positive."""
    zoo = zoo_module()
    tf.keras.backend.clear_session()  # its Input is "input_layer" whatever ran before
    data = zoo.make_data(name, 1)
    model = zoo.build(name, data).model
    rng = np.random.RandomState(ZOO.index(name))
    for w in model.weights:
        shape, dtype = tuple(w.shape), w.dtype.name
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 10
        value = (rng.uniform(0.5, 2.0, shape) if "variance" in w.name
                 else rng.randn(*shape) / np.sqrt(fan_in))
        w.assign(value.astype(dtype))
    return model, data["x"][:2]
