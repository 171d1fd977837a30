"""The model zoo's models, each written once as ordinary TF2 / Keras 3 code against the
module-level name `tf`, which `bind` points at tapeflow or at real TensorFlow (as
bench/peers.py does for its workloads): the same function body runs under both.

Nine models, small enough that the zoo (bench/zoo.py) runs in minutes on 2 cores, each
trained on seeded random NumPy data (identical under both libraries):

    cnn_tutorial   TF's CNN tutorial (tutorials/images/cnn): Conv2D 32/64/64 3x3 ReLU with
                   2x2 max pooling, Dense 64, Dense 10 on 32x32x3; Adam, sparse CE from
                   logits, accuracy; Keras `fit`, batch 32
    resnet_block   a stem conv + one ResNet basic block (conv-BN-ReLU-conv-BN, residual
                   add, ReLU), global average pooling, Dense 10; functional; batch 32
    mobilenet      a strided stem conv + a depthwise-separable block (DepthwiseConv2D 3x3 +
                   BN + ReLU6, 1x1 conv + BN + ReLU6); functional; batch 32
    lstm_text      Embedding(2000, 32) -> LSTM(64) -> Dense(1) on 64 tokens, binary CE from
                   logits; batch 64
    gru_text       the same with GRU(64)
    transformer    token + position embedding, one encoder block (MultiHeadAttention 4x16,
                   residual, LayerNormalization, FFN 128 GELU, residual, LayerNormalization),
                   pooled, Dense 10; 32 tokens, batch 32
    mlp_bn         784-256-128-10 MLP with BatchNormalization, ReLU and Dropout(0.2), Adam;
                   batch 128
    vae            a VAE on 784 features (encoder 256 -> mean, log-variance of 16; the
                   reparameterization trick; decoder 256 -> 784 logits), reconstruction CE +
                   KL term, Adam, a GradientTape step in tf.function; batch 128
    rnn_loop       an Elman RNN cell written by hand (tf.Variable weights), stepped over
                   24 time steps by an autograph `for` over tf.range inside tf.function,
                   GradientTape, plain SGD updates by assign_sub; batch 64

`make_data(name, steps)` draws a model's data (NumPy only: the same arrays under both
libraries) and `build(name, data)` builds and compiles the model under the bound `tf`, as a
`Trainer`: `train(n)` runs n training steps (Keras models: one `fit` of n
batches; hand-written loops: n calls of the traced step) and returns when their results
are computed; `step_end` (a list) receives `time.perf_counter()` at the end of every step.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

tf: Any = None  # tapeflow or tensorflow: set by `bind`


def bind(lib: Any) -> None:
    """Point the models' `tf` at `lib` (the module tapeflow or tensorflow)."""
    global tf
    tf = lib


# ------------------------------------------------------------------ data (NumPy, seeded)
# Each takes a seeded Generator and the number of steps to train; the batch size is fixed
# per model. Keras models get arrays for `fit`, hand-written loops a list of 8 batches.
def images(rng: np.random.Generator, steps: int) -> dict:
    batch = 32
    x = rng.random((steps * batch, 32, 32, 3), dtype=np.float32)
    return {"x": x, "y": rng.integers(0, 10, steps * batch).astype(np.int32), "batch": batch}


def reviews(rng: np.random.Generator, steps: int) -> dict:
    batch = 64
    x = rng.integers(1, 2000, (steps * batch, 64)).astype(np.int32)
    y = rng.integers(0, 2, (steps * batch, 1)).astype(np.float32)
    return {"x": x, "y": y, "batch": batch}


def sentences(rng: np.random.Generator, steps: int) -> dict:
    batch = 32
    x = rng.integers(1, 2000, (steps * batch, 32)).astype(np.int32)
    return {"x": x, "y": rng.integers(0, 10, steps * batch).astype(np.int32), "batch": batch}


def features(rng: np.random.Generator, steps: int) -> dict:
    batch = 128
    x = rng.standard_normal((steps * batch, 784)).astype(np.float32)
    return {"x": x, "y": rng.integers(0, 10, steps * batch).astype(np.int32), "batch": batch}


def pixels(rng: np.random.Generator, steps: int) -> dict:
    batch = 128
    return {"batches": [rng.random((batch, 784), dtype=np.float32) for _ in range(8)],
            "batch": batch}


def sequences(rng: np.random.Generator, steps: int) -> dict:
    batch, time_steps, width = 64, 24, 32
    return {"batches": [(rng.standard_normal((time_steps, batch, width)).astype(np.float32),
                         rng.integers(0, 10, batch).astype(np.int32)) for _ in range(8)],
            "batch": batch}


# ------------------------------------------------------------------ trainers
class Trainer:
    """n training steps of one model; `step_end` collects each step's finishing time."""

    batch: int = 32

    def __init__(self) -> None:
        self.step_end: list = []

    def train(self, n: int) -> float:  # pragma: no cover (overridden)
        raise NotImplementedError


class FitTrainer(Trainer):
    """A compiled Keras model trained by `fit` over the first n batches of (x, y)."""

    def __init__(self, model, x: np.ndarray, y: np.ndarray, batch: int) -> None:
        super().__init__()
        self.model, self.x, self.y, self.batch = model, x, y, batch
        trainer = self

        class StepEnd(tf.keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                trainer.step_end.append(time.perf_counter())

        self.callback = StepEnd()

    def train(self, n: int) -> float:
        m = n * self.batch
        history = self.model.fit(self.x[:m], self.y[:m], batch_size=self.batch, epochs=1,
                                 shuffle=False, verbose=0, callbacks=[self.callback])
        return float(history.history["loss"][-1])


class LoopTrainer(Trainer):
    """A traced training step called on batches in turn; the loss read back each step."""

    def __init__(self, step: Callable, batches: list, batch: int) -> None:
        super().__init__()
        self.step, self.batches, self.batch = step, batches, batch
        self.calls = 0

    def train(self, n: int) -> float:
        loss = float("nan")
        for _ in range(n):
            args = self.batches[self.calls % len(self.batches)]
            self.calls += 1
            loss = float(self.step(*args).numpy())
            self.step_end.append(time.perf_counter())
        return loss


def _compile(model, loss, metrics=None):
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=loss, metrics=metrics)
    return model


# ------------------------------------------------------------------ the models
def cnn_tutorial(data: dict) -> Trainer:
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        layers.Conv2D(32, (3, 3), activation="relu"),
        layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"),
        layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
    ])
    _compile(model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
             ["accuracy"])
    return FitTrainer(model, **data)


def resnet_block(data: dict) -> Trainer:
    layers = tf.keras.layers
    inputs = tf.keras.Input((32, 32, 3))
    h = layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    h = layers.ReLU()(layers.BatchNormalization()(h))
    r = layers.Conv2D(16, 3, padding="same", use_bias=False)(h)
    r = layers.ReLU()(layers.BatchNormalization()(r))
    r = layers.Conv2D(16, 3, padding="same", use_bias=False)(r)
    r = layers.BatchNormalization()(r)
    h = layers.ReLU()(layers.Add()([h, r]))
    outputs = layers.Dense(10)(layers.GlobalAveragePooling2D()(h))
    model = tf.keras.Model(inputs, outputs)
    _compile(model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return FitTrainer(model, **data)


def mobilenet(data: dict) -> Trainer:
    layers = tf.keras.layers
    inputs = tf.keras.Input((32, 32, 3))
    h = layers.Conv2D(32, 3, strides=2, padding="same", use_bias=False)(inputs)
    h = layers.ReLU(6.0)(layers.BatchNormalization()(h))
    h = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(h)
    h = layers.ReLU(6.0)(layers.BatchNormalization()(h))
    h = layers.Conv2D(64, 1, use_bias=False)(h)
    h = layers.ReLU(6.0)(layers.BatchNormalization()(h))
    outputs = layers.Dense(10)(layers.GlobalAveragePooling2D()(h))
    model = tf.keras.Model(inputs, outputs)
    _compile(model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return FitTrainer(model, **data)


def _text_classifier(data: dict, recurrent) -> Trainer:
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((64,), dtype="int32"),
        layers.Embedding(2000, 32),
        recurrent(64),
        layers.Dense(1),
    ])
    _compile(model, tf.keras.losses.BinaryCrossentropy(from_logits=True))
    return FitTrainer(model, **data)


def lstm_text(data: dict) -> Trainer:
    return _text_classifier(data, tf.keras.layers.LSTM)


def gru_text(data: dict) -> Trainer:
    return _text_classifier(data, tf.keras.layers.GRU)


def transformer(data: dict) -> Trainer:
    layers = tf.keras.layers
    length, width = 32, 64

    class TokenAndPosition(tf.keras.layers.Layer):
        def __init__(self, vocab, length, width):
            super().__init__()
            self.tokens = layers.Embedding(vocab, width)
            self.positions = layers.Embedding(length, width)

        def call(self, x):
            return self.tokens(x) + self.positions(tf.range(tf.shape(x)[-1]))

    inputs = tf.keras.Input((length,), dtype="int32")
    h = TokenAndPosition(2000, length, width)(inputs)
    attended = layers.MultiHeadAttention(num_heads=4, key_dim=16)(h, h)
    h = layers.LayerNormalization(epsilon=1e-6)(h + layers.Dropout(0.1)(attended))
    ffn = layers.Dense(width)(layers.Dense(128, activation="gelu")(h))
    h = layers.LayerNormalization(epsilon=1e-6)(h + layers.Dropout(0.1)(ffn))
    outputs = layers.Dense(10)(layers.GlobalAveragePooling1D()(h))
    model = tf.keras.Model(inputs, outputs)
    _compile(model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return FitTrainer(model, **data)


def mlp_bn(data: dict) -> Trainer:
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((784,)),
        layers.Dense(256), layers.BatchNormalization(), layers.ReLU(), layers.Dropout(0.2),
        layers.Dense(128), layers.BatchNormalization(), layers.ReLU(), layers.Dropout(0.2),
        layers.Dense(10),
    ])
    _compile(model, tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return FitTrainer(model, **data)


def vae(data: dict) -> Trainer:
    layers = tf.keras.layers
    latent = 16
    batches = [(tf.constant(x),) for x in data["batches"]]
    encoder = tf.keras.Sequential([tf.keras.Input((784,)), layers.Dense(256, activation="relu"),
                                   layers.Dense(2 * latent)])
    decoder = tf.keras.Sequential([tf.keras.Input((latent,)),
                                   layers.Dense(256, activation="relu"), layers.Dense(784)])
    variables = encoder.trainable_variables + decoder.trainable_variables
    optimizer = tf.keras.optimizers.Adam(1e-3)
    optimizer.build(variables)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            mean, log_var = tf.split(encoder(x, training=True), 2, axis=1)
            eps = tf.random.normal(tf.shape(mean))
            z = mean + tf.exp(0.5 * log_var) * eps
            logits = decoder(z, training=True)
            reconstruction = tf.reduce_sum(
                tf.nn.sigmoid_cross_entropy_with_logits(labels=x, logits=logits), axis=1)
            kl = -0.5 * tf.reduce_sum(1.0 + log_var - tf.square(mean) - tf.exp(log_var),
                                      axis=1)
            loss = tf.reduce_mean(reconstruction + kl)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return LoopTrainer(step, batches, data["batch"])


def rnn_loop(data: dict) -> Trainer:
    features, hidden, classes = 32, 64, 10
    batches = [(tf.constant(x), tf.constant(y)) for x, y in data["batches"]]
    init = np.random.default_rng(1)
    w_x = tf.Variable(init.standard_normal((features, hidden)).astype(np.float32) * 0.15)
    w_h = tf.Variable(init.standard_normal((hidden, hidden)).astype(np.float32) * 0.1)
    b_h = tf.Variable(np.zeros(hidden, np.float32))
    w_o = tf.Variable(init.standard_normal((hidden, classes)).astype(np.float32) * 0.1)
    b_o = tf.Variable(np.zeros(classes, np.float32))
    variables = [w_x, w_h, b_h, w_o, b_o]

    @tf.function
    def step(xs, labels):
        with tf.GradientTape() as tape:
            h = tf.zeros([tf.shape(xs)[1], hidden])
            for t in tf.range(tf.shape(xs)[0]):
                h = tf.tanh(tf.matmul(xs[t], w_x) + tf.matmul(h, w_h) + b_h)
            logits = tf.matmul(h, w_o) + b_o
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(0.05 * g)
        return loss

    return LoopTrainer(step, batches, data["batch"])


MODELS: dict = {  # name -> (data, model, title)
    "cnn_tutorial": (images, cnn_tutorial, "TF CNN tutorial (Conv2D 32/64/64, fit)"),
    "resnet_block": (images, resnet_block, "ResNet basic block + BN (functional)"),
    "mobilenet": (images, mobilenet, "MobileNet depthwise-separable block"),
    "lstm_text": (reviews, lstm_text, "Embedding -> LSTM -> Dense"),
    "gru_text": (reviews, gru_text, "Embedding -> GRU -> Dense"),
    "transformer": (sentences, transformer, "Transformer encoder block (MHA, LN, GELU)"),
    "mlp_bn": (features, mlp_bn, "MLP + BatchNorm + Dropout, Adam"),
    "vae": (pixels, vae, "VAE, GradientTape step, reparameterization + KL"),
    "rnn_loop": (sequences, rnn_loop, "hand-written RNN cell, autograph for loop"),
}


def make_data(name: str, steps: int, seed: int = 0) -> dict:
    """Model `name`'s training data for `steps` steps: NumPy only, the same arrays under
    both libraries for a given seed."""
    return MODELS[name][0](np.random.default_rng(seed), steps)


def build(name: str, data: dict, seed: int = 0) -> Trainer:
    """Model `name` under the bound `tf`, compiled and ready to train on `data`."""
    tf.keras.utils.set_random_seed(seed)
    return MODELS[name][1](data)
