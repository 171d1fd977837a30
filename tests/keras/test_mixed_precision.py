"""keras.mixed_precision: dtype policies, layers' compute/variable dtypes (autocast of
inputs and weights), the global policy, LossScaleOptimizer's dynamic scale, training
and `.keras` files under "mixed_float16".

Truth: Keras 3 (TF 2.21's tf.keras) values, hard-coded with the snippet that printed them,
or the fixture written by fixtures/make_keras_mixed_precision.py; NumPy for arithmetic.
"""
import json
import os
import zipfile

import numpy as np
import pytest

import tapeflow as tf

mp = tf.keras.mixed_precision
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture
def mixed():
    """Run a test under the global "mixed_float16" policy; "float32" again afterwards."""
    mp.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        mp.set_global_policy("float32")


# --------------------------------------------------------------------------- policies

# Keras 3.15:
#   for n in names: p = keras.mixed_precision.Policy(n)
#   print(n, p.name, p.compute_dtype, p.variable_dtype, repr(p), p.get_config())
POLICIES = {
    "float32": ("float32", "float32"), "mixed_float16": ("float16", "float32"),
    "mixed_bfloat16": ("bfloat16", "float32"), "float16": ("float16", "float16"),
    "bfloat16": ("bfloat16", "bfloat16"), "float64": ("float64", "float64"),
    "int32": ("int32", "int32"),
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_properties_as_keras(name):
    policy = mp.Policy(name)
    assert mp.DTypePolicy is mp.Policy
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == \
        (name, *POLICIES[name])
    assert repr(policy) == f'<DTypePolicy "{name}">'
    assert policy.get_config() == {"name": name}
    assert mp.Policy.from_config(policy.get_config()) == policy
    assert policy == mp.Policy(name) and policy != mp.Policy("float64" if name != "float64"
                                                              else "float32")


def test_policy_errors_as_keras():
    # Keras 3.15: Policy("foo") -> ValueError "Cannot convert 'foo' to a mixed precision
    # DTypePolicy..."; Policy(3) and Policy(Policy("float16")) -> TypeError "'name' must
    # be a string"; set_global_policy(3) -> ValueError "Invalid `policy` argument"
    with pytest.raises(ValueError, match="Cannot convert 'foo'"):
        mp.Policy("foo")
    for bad in (3, mp.Policy("float16")):
        with pytest.raises(TypeError, match="'name' must be a string"):
            mp.Policy(bad)
    for bad in (3, None):
        with pytest.raises(ValueError, match="Invalid `policy` argument"):
            mp.set_global_policy(bad)
    assert mp.global_policy().name == "float32"


def test_global_policy_applies_to_new_layers_and_resets():
    assert mp.global_policy() == mp.Policy("float32") and mp.Policy().name == "float32"
    before = tf.keras.layers.Dense(2)
    mp.set_global_policy("mixed_float16")
    try:
        assert mp.global_policy().name == "mixed_float16"
        assert mp.dtype_policy() is mp.global_policy()  # Keras 3's other names
        assert mp.Policy().name == "mixed_float16"
        after = tf.keras.layers.Dense(2)
        conv = tf.keras.layers.Conv2D(2, 3)
        softmax = tf.keras.layers.Softmax()
        explicit = tf.keras.layers.Dense(2, dtype="float32")
        final = tf.keras.layers.Activation("softmax", dtype="float32")
        # Keras 3.15 under mixed_float16: keras.Input((3,)).dtype is float32
        inputs = tf.keras.Input((3,))
        mp.set_dtype_policy(mp.Policy("mixed_bfloat16"))
        bf = tf.keras.layers.Dense(2)
    finally:
        mp.set_global_policy("float32")
    assert before.dtype_policy.name == "float32"
    for layer in (after, conv, softmax):
        assert layer.dtype_policy.name == "mixed_float16"
        assert (layer.compute_dtype, layer.variable_dtype) == ("float16", "float32")
    assert explicit.dtype_policy.name == final.dtype_policy.name == "float32"
    assert inputs.dtype == tf.float32
    assert bf.compute_dtype == "bfloat16"
    assert tf.keras.layers.Dense(2).dtype_policy.name == "float32"


def test_layer_dtype_argument_forms():
    # Keras 3.15: Dense(2, dtype="float64").dtype_policy -> <DTypePolicy "float64">,
    # Dense(2, dtype=tf.float16).dtype_policy -> <DTypePolicy "float16">
    assert tf.keras.layers.Dense(2, dtype="float64").dtype_policy.name == "float64"
    assert tf.keras.layers.Dense(2, dtype=tf.float16).dtype_policy.name == "float16"
    policy = mp.Policy("mixed_bfloat16")
    assert tf.keras.layers.Dense(2, dtype=policy).dtype_policy is policy
    serialized = {"module": "keras", "class_name": "DTypePolicy",
                  "config": {"name": "mixed_float16"}, "registered_name": None}
    assert tf.keras.layers.Dense(2, dtype=serialized).compute_dtype == "float16"
    with pytest.raises(ValueError):
        tf.keras.layers.Dense(2, dtype="mixed_float17")


# --------------------------------------------------------------------------- layers


def test_dense_mixed_float16_matches_float32_within_half_precision():
    rs = np.random.RandomState(0)
    x = rs.randn(5, 7).astype(np.float32)
    layer = tf.keras.layers.Dense(4, activation="relu", bias_initializer="ones",
                                  dtype="mixed_float16")
    y = layer(x)
    # Keras 3.15: d = Dense(2, dtype="mixed_float16"); d.dtype -> "float32",
    # d.compute_dtype -> "float16", d(x).dtype -> float16, d.kernel.dtype -> float32
    assert y.dtype == tf.float16
    assert layer.kernel.dtype == tf.float32 and layer.bias.dtype == tf.float32
    assert layer.dtype == "float32" and layer.variable_dtype == "float32"
    assert layer.compute_dtype == "float16"
    kernel, bias = layer.get_weights()
    assert kernel.dtype == np.float32
    # truth: the float16 computation in NumPy (float16 operands, float32 result)
    exact = np.maximum(x @ kernel + bias, 0)
    np.testing.assert_allclose(y.numpy().astype(np.float32), exact, rtol=2e-3, atol=4e-3)
    # the weights stay float32 and the gradient reaches them in float32
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(layer(x), tf.float32))
    grad_k, grad_b = tape.gradient(loss, [layer.kernel, layer.bias])
    assert grad_k.dtype == tf.float32
    active = (exact > 0).astype(np.float32)
    np.testing.assert_allclose(grad_k.numpy(), x.T @ active, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(grad_b.numpy(), active.sum(0), rtol=1e-6)


def test_weights_read_in_compute_dtype_only_inside_call():
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")
            self.keep = self.add_weight(shape=(), initializer="zeros", autocast=False)

        def call(self, x):
            self.seen = ((self.w * 1).dtype, (self.keep * 1).dtype, x.dtype)
            return x @ tf.linalg.diag(self.w)  # float16 x with a float32 weight: works

    layer = Scale(dtype="mixed_float16")
    out = layer(np.ones((2, 3), np.float32))
    assert layer.seen == (tf.float16, tf.float32, tf.float16)
    assert out.dtype == tf.float16
    assert (layer.w * 1).dtype == tf.float32  # outside the call: as stored
    assert layer.w.dtype == tf.float32


def test_autocast_false_keeps_inputs_and_weights_as_they_are():
    # Keras 3.15: Dense(2, dtype="mixed_float16", autocast=False)(float32 x).dtype ->
    # float32; layer.autocast -> False
    layer = tf.keras.layers.Dense(2, dtype="mixed_float16", autocast=False)
    assert layer(np.ones((1, 3), np.float32)).dtype == tf.float32
    assert layer.autocast is False and layer.compute_dtype == "float16"


def test_final_float32_activation_and_layers_under_global_policy(mixed):
    x = np.random.RandomState(1).randn(3, 5, 5, 2).astype(np.float32)
    model = tf.keras.Sequential([
        tf.keras.Input((5, 5, 2)), tf.keras.layers.Conv2D(4, 3, activation="relu"),
        tf.keras.layers.BatchNormalization(), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(3), tf.keras.layers.Activation("softmax", dtype="float32")])
    outs = [layer.output.dtype for layer in model.layers]
    assert outs == [tf.float16] * 4 + [tf.float32]
    y = model(x, training=True)
    assert y.dtype == tf.float32
    np.testing.assert_allclose(y.numpy().sum(-1), 1.0, rtol=1e-6)
    bn = model.layers[1]
    # Keras 3: BatchNormalization(): <DTypePolicy "mixed_float16">, float32 moving stats
    assert bn.dtype_policy.name == "mixed_float16"
    assert bn.moving_mean.dtype == tf.float32 and float(np.abs(bn.moving_mean.numpy()).sum()) > 0
    assert all(w.dtype == tf.float32 for w in model.weights)
    emb = tf.keras.layers.Embedding(5, 2)  # Keras 3: emb(ids).dtype -> float16
    assert emb(np.array([[1, 2]])).dtype == tf.float16 and emb.embeddings.dtype == tf.float32


def test_traced_call_under_mixed_policy():
    layer = tf.keras.layers.Dense(3, dtype="mixed_float16")
    fn = tf.function(layer, input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    y = fn(x)
    assert y.dtype == tf.float16
    np.testing.assert_allclose(y.numpy().astype(np.float32),
                               x @ layer.kernel.numpy() + layer.bias.numpy(), atol=3e-3)


def test_config_round_trip_of_policy():
    layer = tf.keras.layers.Dense(2, dtype="mixed_float16")
    config = layer.get_config()
    assert config["dtype"] == "mixed_float16"
    again = tf.keras.layers.Dense.from_config(config)
    assert again.dtype_policy == mp.Policy("mixed_float16")
    # a config as Keras writes it (Keras 3.15: Dense(2, dtype="mixed_float16").get_config()
    # ["dtype"] -> {'module': 'keras', 'class_name': 'DTypePolicy', 'config': {'name':
    # 'mixed_float16'}, 'registered_name': None})
    config["dtype"] = {"module": "keras", "class_name": "DTypePolicy",
                       "config": {"name": "mixed_float16"}, "registered_name": None}
    assert tf.keras.layers.Dense.from_config(config).compute_dtype == "float16"


# --------------------------------------------------------------------------- loss scaling

# Keras 3.15 (fixed inputs, `opt.build([v])` first; SGD eagerly, Adam inside tf.function):
#   v = keras.Variable(np.array([1.0, 2.0], np.float32))
#   opt = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0,
#                                            dynamic_growth_steps=2)
#   for g in GRADS: opt.apply_gradients([(tf.constant(np.array(g, np.float32)), v)])
#       print(v.numpy(), opt.dynamic_scale.numpy(), opt.step_counter.numpy(),
#             opt.iterations.numpy())
GRADS = [[1.0, 1.0], [np.inf, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [np.nan, 0.0],
         [2.0, 2.0]]
KERAS_SGD = [([0.9875, 1.9875], 8.0, 1, 1), ([0.9875, 1.9875], 4.0, 0, 1),
             ([0.96250004, 1.9625], 4.0, 1, 2), ([0.93750006, 1.9375], 8.0, 0, 3),
             ([0.9250001, 1.925], 8.0, 1, 4), ([0.9250001, 1.925], 4.0, 0, 4),
             ([0.87500006, 1.875], 4.0, 1, 5)]
KERAS_ADAM = [([0.90000319480896, 1.90000319480896], 8.0, 1, 1),
              ([0.90000319480896, 1.90000319480896], 4.0, 0, 1),
              ([0.8034870624542236, 1.8034870624542236], 4.0, 1, 2),
              ([0.7052911520004272, 1.7052911520004272], 8.0, 0, 3),
              ([0.6105992197990417, 1.610599160194397], 8.0, 1, 4),
              ([0.6105992197990417, 1.610599160194397], 4.0, 0, 4),
              ([0.5181891918182373, 1.5181890726089478], 4.0, 1, 5)]


@pytest.mark.parametrize("inner,traced,expected", [
    (lambda: tf.keras.optimizers.SGD(0.1), False, KERAS_SGD),
    (lambda: tf.keras.optimizers.Adam(0.1), True, KERAS_ADAM)], ids=["sgd", "adam_traced"])
def test_loss_scale_dynamics_as_keras(inner, traced, expected):
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    opt = mp.LossScaleOptimizer(inner(), initial_scale=8.0, dynamic_growth_steps=2)
    # Keras: before its first step, scale_loss uses initial_scale; after build, the
    # variable (opt.scale_loss(2.0) -> 16.0)
    assert float(opt.scale_loss(tf.constant(2.0))) == 16.0
    opt.build([v])
    assert float(opt.dynamic_scale.numpy()) == 8.0 and int(opt.step_counter.numpy()) == 0

    def step(g):
        opt.apply_gradients([(g, v)])
    if traced:
        step = tf.function(step)
    for g, (value, scale, counter, iterations) in zip(GRADS, expected):
        step(tf.constant(np.array(g, np.float32)))
        np.testing.assert_allclose(v.numpy(), value, rtol=1e-6)
        assert float(opt.dynamic_scale.numpy()) == scale
        assert int(opt.step_counter.numpy()) == counter
        assert int(opt.iterations.numpy()) == iterations
    assert float(opt.scale_loss(tf.constant(2.0))) == 8.0


def test_loss_scale_growth_after_n_finite_steps():
    # closed form: every dynamic_growth_steps finite steps the scale doubles
    v = tf.Variable(np.zeros(3, np.float32))
    opt = mp.LossScaleOptimizer(tf.keras.optimizers.SGD(1.0), initial_scale=2.0,
                                dynamic_growth_steps=3)
    scales = []
    for _ in range(7):
        scale = float(opt.scale_loss(tf.constant(1.0)))
        opt.apply_gradients([(tf.constant(np.full(3, scale, np.float32)), v)])
        scales.append(float(opt.dynamic_scale.numpy()))
    assert scales == [2.0, 2.0, 4.0, 4.0, 4.0, 8.0, 8.0]
    np.testing.assert_allclose(v.numpy(), -7.0)  # each step unscaled to a gradient of 1
    assert int(opt.iterations.numpy()) == 7


def test_loss_scale_optimizer_config_and_variables():
    inner = tf.keras.optimizers.Adam(0.001, loss_scale_factor=4.0)
    opt = mp.LossScaleOptimizer(inner)
    assert inner.loss_scale_factor is None  # Keras turns the inner scaling off
    # Keras 3.15: LossScaleOptimizer(Adam()).get_config() keys and defaults
    config = opt.get_config()
    assert list(config) == ["name", "inner_optimizer", "initial_scale",
                            "dynamic_growth_steps"]
    assert config["name"] == "loss_scale_optimizer"
    assert (config["initial_scale"], config["dynamic_growth_steps"]) == (32768.0, 2000)
    assert config["inner_optimizer"]["class_name"] == "Adam"
    assert config["inner_optimizer"]["module"] == "keras.optimizers"
    again = mp.LossScaleOptimizer.from_config(config)
    assert type(again.inner_optimizer) is type(inner)
    assert again.get_config() == config
    assert opt.learning_rate is inner.learning_rate
    opt.learning_rate = 0.5
    assert float(inner.learning_rate.numpy()) == 0.5
    v = tf.Variable([1.0])
    opt.build([v])
    # Keras: its own iteration, step_counter and dynamic_scale, then the inner's state
    assert opt.variables[1] is opt.step_counter and opt.variables[2] is opt.dynamic_scale
    assert opt.variables[3:] == inner.variables
    with pytest.raises(ValueError, match="dynamic=False"):
        mp.LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False)


# --------------------------------------------------------------------------- training


def _mlp(rs_seed: int = 1):
    tf.keras.utils.set_random_seed(rs_seed)
    return tf.keras.Sequential([
        tf.keras.Input((4,)), tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(3), tf.keras.layers.Activation("softmax", dtype="float32")])


def test_mlp_trains_under_mixed_float16(mixed):
    rs = np.random.RandomState(0)
    x = rs.randn(64, 4).astype(np.float32)
    y = (x @ rs.randn(4, 3)).argmax(1)
    model = _mlp()
    model.compile(optimizer=mp.LossScaleOptimizer(tf.keras.optimizers.Adam(0.01)),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=6, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert all(w.dtype == tf.float32 for w in model.weights)
    assert int(model.optimizer.iterations.numpy()) == 24
    assert float(model.optimizer.dynamic_scale.numpy()) == 32768.0  # no overflow here


def test_keras_file_saved_under_mixed_float16_loads_with_its_policies():
    data = np.load(os.path.join(FIXTURES, "keras_mixed_precision.npz"))
    model = tf.keras.models.load_model(os.path.join(FIXTURES, "keras_mixed_precision.keras"),
                                       compile=False)
    hidden, logits, probs = model.layers
    assert hidden.dtype_policy.name == logits.dtype_policy.name == "mixed_float16"
    assert probs.dtype_policy.name == "float32"
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_array_equal(w, data[f"w{i}"])
        assert w.dtype == np.float32
    pred = model.predict(data["x"], verbose=0)
    assert pred.dtype == np.float32
    np.testing.assert_allclose(pred, data["pred"], atol=2e-3)
    out = tf.keras.Model(model.inputs, hidden.output)(data["x"])
    assert out.dtype == tf.float16 and data["hidden"].dtype == np.float16
    np.testing.assert_allclose(out.numpy().astype(np.float32),
                               data["hidden"].astype(np.float32), atol=4e-3)


def test_train_step_with_loss_scale_as_keras():
    # the fixture's model after one train_on_batch with SGD(0.5), which Keras's compile
    # wrapped in a LossScaleOptimizer under mixed_float16
    data = np.load(os.path.join(FIXTURES, "keras_mixed_precision.npz"))
    model = tf.keras.models.load_model(os.path.join(FIXTURES, "keras_mixed_precision.keras"),
                                       compile=False)
    model.compile(optimizer=mp.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5)),
                  loss="sparse_categorical_crossentropy")
    loss = model.train_on_batch(data["x"], data["y"])
    np.testing.assert_allclose(float(np.asarray(loss).ravel()[0]), float(data["loss"]),
                               rtol=2e-3)
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, data[f"t{i}"], atol=2e-3)
    assert float(model.optimizer.dynamic_scale.numpy()) == float(data["scale"])


def test_keras_round_trip_keeps_policies(mixed, tmp_path):
    model = _mlp(2)
    x = np.random.RandomState(3).randn(5, 4).astype(np.float32)
    path = str(tmp_path / "m.keras")
    model.save(path)
    mp.set_global_policy("float32")  # loading must not depend on the global policy
    again = tf.keras.models.load_model(path, compile=False)
    assert [layer.dtype_policy.name for layer in again.layers] == \
        ["mixed_float16", "mixed_float16", "float32"]
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    dtypes = [entry["config"]["dtype"] for entry in config["config"]["layers"]]
    assert dtypes[1:] == ["mixed_float16", "mixed_float16", "float32"]


def test_loss_scale_optimizer_is_a_keras_optimizer_found_by_name():
    keras = tf.keras
    opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0)
    again = keras.optimizers.get({"class_name": "LossScaleOptimizer",
                                  "config": opt.get_config()})
    assert isinstance(again, keras.optimizers.LossScaleOptimizer)
    assert isinstance(again.inner_optimizer, keras.optimizers.SGD)
    assert again.initial_scale == 8.0
    assert "LossScaleOptimizer" in dir(keras.optimizers)
