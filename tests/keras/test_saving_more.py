"""Keras 3 files, continued: optimizer state of Adafactor/Ftrl/Lamb/Lion/Adadelta in Keras's
order, nested layer configs and list-held sublayers written as Keras writes them,
`custom_objects` reaching nested configs, the `keras.saving` namespace, the Lambda layer
(safe mode) and the legacy HDF5 model format. The truth is real Keras: files written by
it (tests/keras/fixtures/make_keras_saving_more.py, run with TensorFlow 2.21's Keras 3)
and, the other way, tests/keras/fixtures/verify_keras_loads_tapeflow_more.py (Keras
loads tapeflow's files; run by hand)."""
import codecs
import json
import marshal
import os
import sys
import zipfile

import h5py
import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras
L = keras.layers
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


# --------------------------------------------------------------------------- 1. optimizers
SLOTS = {"adafactor": ("r", "c", "velocity"), "ftrl": ("accumulator", "linear"),
         "lamb": ("momentum", "velocity"), "lion": ("momentum",),
         "adadelta": ("accumulated_grad", "accumulated_delta_var")}


@pytest.mark.parametrize("name", sorted(SLOTS))
def test_keras_optimizer_state_lands_in_the_right_slots(name):
    ref = np.load(fixture("keras_more_opt.npz"))
    model = keras.models.load_model(fixture(f"keras_more_opt_{name}.keras"))
    optimizer = model.optimizer
    assert tuple(optimizer._slot_names()) == SLOTS[name]
    assert int(optimizer.iterations.numpy()) == 1
    for slot in SLOTS[name]:
        for i, w in enumerate(model.trainable_weights):
            want = ref[f"{name}/{slot}/{i}"]
            got = optimizer._slot(w, slot).numpy()
            assert got.shape == want.shape, (slot, i)
            np.testing.assert_array_equal(got, want)
    # and training goes on as Keras's did (its weights after one more step)
    model.train_on_batch(ref["x"][1], ref["y"][1])
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, ref[f"{name}/after/{i}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SLOTS))
def test_optimizer_state_round_trips_in_keras_order(name, tmp_path):
    model = keras.models.load_model(fixture(f"keras_more_opt_{name}.keras"))
    path = str(tmp_path / "m.keras")
    model.save(path)
    with zipfile.ZipFile(path) as zf, zipfile.ZipFile(
            fixture(f"keras_more_opt_{name}.keras")) as kf:
        ours = h5py.File(zf.open("model.weights.h5"), "r")["optimizer/vars"]
        theirs = h5py.File(kf.open("model.weights.h5"), "r")["optimizer/vars"]
        assert len(ours) == len(theirs)
        for i in range(len(theirs)):  # same order: every entry equal to Keras's
            np.testing.assert_array_equal(np.asarray(ours[str(i)]),
                                          np.asarray(theirs[str(i)]))


# --------------------------------------------------------------------------- 2, 3 nesting
def nested_model():
    """The fixture's model, built by tapeflow with the same names."""
    cells = L.StackedRNNCells([L.GRUCell(2, name="g1"), L.SimpleRNNCell(3, name="s1"),
                               L.GRUCell(3, name="g2")], name="stacked_rnn_cells")
    return keras.Sequential([
        keras.Input((4, 3)), L.RNN(L.LSTMCell(2, name="lc"), return_sequences=True, name="r1"),
        L.RNN(cells, return_sequences=True, name="r2"),
        L.Bidirectional(L.LSTM(2, return_sequences=True, name="fw"),
                        backward_layer=L.GRU(2, go_backwards=True, return_sequences=True,
                                             name="bw"), name="bi"),
        L.TimeDistributed(L.Dense(2, name="d"), name="td")], name="nested")


def _normal(value):
    """A config without what legitimately differs: None entries (tapeflow leaves out
    options it lacks when they hold Keras's default None), build configs, shared-object
    ids, dtype policies (written by tapeflow as their dtype name)."""
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("class_name") == "DTypePolicy":
        return value["config"]["name"]
    return {k: _normal(v) for k, v in value.items()
            if v is not None and k not in ("build_config", "shared_object_id")}


def _config(path: str) -> dict:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("config.json"))


def test_nested_layer_configs_are_written_as_keras_writes_them(tmp_path):
    path = str(tmp_path / "n.keras")
    nested_model().save(path)
    ours = _config(path)["config"]["layers"][1:]  # (the InputLayer's name is a counter's)
    theirs = _config(fixture("keras_more_nested.keras"))["config"]["layers"][1:]
    assert _normal(ours) == _normal(theirs)
    # the nested entries are full layer entries, module and all, as Keras's
    cell = ours[1]["config"]["cell"]
    assert (cell["module"], cell["class_name"]) == ("keras.layers", "StackedRNNCells")
    assert "registered_name" in cell and cell["registered_name"] is None
    assert [(c["module"], c["class_name"]) for c in cell["config"]["cells"]] == [
        ("keras.layers", "GRUCell"), ("keras.layers", "SimpleRNNCell"),
        ("keras.layers", "GRUCell")]
    kernel = cell["config"]["cells"][0]["config"]["kernel_initializer"]
    assert kernel["module"] == "keras.initializers"
    assert ours[2]["config"]["backward_layer"]["module"] == "keras.layers"


def _datasets(f) -> dict:
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj.shape)
                 if isinstance(obj, h5py.Dataset) else None)
    return out


def test_sublayers_in_lists_use_keras_weights_layout(tmp_path):
    path = str(tmp_path / "n.keras")
    nested_model().save(path)
    with zipfile.ZipFile(path) as zf, zipfile.ZipFile(fixture("keras_more_nested.keras")) as kf:
        ours = _datasets(h5py.File(zf.open("model.weights.h5"), "r"))
        theirs = _datasets(h5py.File(kf.open("model.weights.h5"), "r"))
    assert ours == theirs
    assert ours["layers/rnn_1/cell/cells/gru_cell_1/vars/0"] == (3, 9)  # after 3 units
    assert ours["layers/rnn_1/cell/cells/simple_rnn_cell/vars/1"] == (3, 3)


def test_keras_nested_model_loads_and_round_trips(tmp_path):
    io = np.load(fixture("keras_more_nested_io.npz"))
    model = keras.models.load_model(fixture("keras_more_nested.keras"))
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-5,
                               atol=1e-6)
    path = str(tmp_path / "again.keras")
    model.save(path)
    again = keras.models.load_model(path)
    np.testing.assert_allclose(again.predict(io["x"], verbose=0), io["y"], rtol=1e-5,
                               atol=1e-6)
    weights = str(tmp_path / "w.weights.h5")
    model.save_weights(weights)
    fresh = nested_model()
    fresh.load_weights(weights)
    np.testing.assert_allclose(fresh.predict(io["x"], verbose=0), io["y"], rtol=1e-5,
                               atol=1e-6)


# --------------------------------------------------------------------------- 4. custom objects
class Doubling(keras.layers.Layer):
    """A user's layer (not registered): found only through custom_objects."""

    def call(self, x):
        return 2.0 * x


class MinimalCell(keras.layers.Layer):
    """A user's RNN cell (not registered): h' = tanh(x W + h U)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), name="w")
        self.u = self.add_weight(shape=(self.units, self.units), name="u")

    def call(self, x, states):
        h = tf.tanh(tf.matmul(x, self.w) + tf.matmul(states[0], self.u))
        return h, [h]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_custom_objects_reach_nested_configs(tmp_path):
    model = keras.Sequential([
        keras.Input((4, 3)), L.RNN(MinimalCell(2), return_sequences=True),
        L.Bidirectional(L.RNN(MinimalCell(3), return_sequences=True)),
        L.TimeDistributed(Doubling())])
    x = np.random.default_rng(0).random((2, 4, 3), dtype=np.float32)
    path = str(tmp_path / "c.keras")
    model.save(path)
    cell = _config(path)["config"]["layers"][1]["config"]["cell"]
    assert cell["class_name"] == "MinimalCell" and cell["module"] == __name__
    assert cell["registered_name"] == "MinimalCell"
    with pytest.raises(ValueError, match="Unknown layer class 'MinimalCell'"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"MinimalCell": MinimalCell,
                                                           "Doubling": Doubling})
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    assert isinstance(loaded.layers[2].layer, Doubling)
    # the scope lasts for the load only
    assert keras.saving.get_registered_object("MinimalCell") is None


# --------------------------------------------------------------------------- 5. namespace
def test_keras_saving_namespace():
    names = ["save_model", "load_model", "register_keras_serializable", "get_custom_objects",
             "custom_object_scope", "CustomObjectScope", "serialize_keras_object",
             "deserialize_keras_object", "get_registered_name", "get_registered_object"]
    for name in names:
        assert name in keras.saving.__all__
        if name not in ("save_model", "load_model"):
            assert getattr(keras.saving, name) is getattr(keras.utils, name)
    assert keras.saving.load_model is keras.models.load_model

    @keras.saving.register_keras_serializable(package="saving_more")
    def twice(x):
        return 2 * x
    assert keras.saving.get_registered_name(twice) == "saving_more>twice"
    assert keras.saving.get_registered_object("saving_more>twice") is twice
    assert keras.saving.serialize_keras_object(twice) == {
        "module": "builtins", "class_name": "function", "config": "saving_more>twice",
        "registered_name": "function"}
    with keras.saving.custom_object_scope({"Doubling": Doubling}):
        assert keras.saving.get_registered_object("Doubling") is Doubling
    assert keras.saving.get_registered_object("Doubling") is None


# --------------------------------------------------------------------------- 6. Lambda
@keras.saving.register_keras_serializable(package="tests")
def scale_by_three(x):
    return x * 3.0


def test_keras_lambda_file_is_refused_in_safe_mode_and_loads_when_unsafe():
    io = np.load(fixture("keras_more_lambda_io.npz"))
    with pytest.raises(ValueError, match=r"Python lambda.*safe_mode=False"):
        keras.models.load_model(fixture("keras_more_lambda.keras"))
    model = keras.models.load_model(fixture("keras_more_lambda.keras"), safe_mode=False)
    assert [type(layer).__name__ for layer in model.layers] == ["Lambda"] * 3 + ["Dense"]
    assert model.layers[1].function is scale_by_three  # by its registered name
    assert model.layers[2].arguments == {"a": 0.5}
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-6)
    # the safe mode only lasts for that load
    config = model.layers[0].get_config()
    with pytest.raises(ValueError, match="safe_mode=False"):
        L.Lambda.from_config(config)
    assert L.Lambda.from_config(config, safe_mode=False).function(2.0) == 5.0
    with keras.saving.SafeModeScope(False):
        assert L.Lambda.from_config(config).function(1.0) == 3.0


def test_lambda_config_as_keras():
    k = 4.0
    layer = L.Lambda(lambda x, b=1.0: x * k + b, output_shape=[3], name="lam")
    config = layer.get_config()
    assert list(config) == ["name", "trainable", "dtype", "function", "output_shape",
                            "arguments"]
    function = config["function"]
    assert function["class_name"] == "__lambda__"
    assert function["config"]["defaults"] == (1.0,) and function["config"]["closure"] == (k,)
    code = marshal.loads(codecs.decode(function["config"]["code"].encode("ascii"), "base64"))
    assert code == layer.function.__code__
    assert config["output_shape"] == [3] and config["arguments"] == {}
    rebuilt = L.Lambda.from_config(json.loads(json.dumps(config)), safe_mode=False)
    assert rebuilt._output_shape == (3,)
    np.testing.assert_allclose(rebuilt(tf.constant([[1.0, 2.0, 3.0]])).numpy(),
                               [[5.0, 9.0, 13.0]])
    named = L.Lambda(scale_by_three).get_config()["function"]
    assert named == {"module": "builtins", "class_name": "function",
                     "config": "tests>scale_by_three", "registered_name": "function"}
    with pytest.raises(ValueError, match="callable"):
        L.Lambda(3)


def test_lambda_in_models_masks_gradients_and_tracing(tmp_path):
    inputs = keras.Input((4, 2))
    masked = L.Masking(0.0)(inputs)
    h = L.Lambda(lambda x, mask: x * tf.cast(mask, "float32")[..., None] * 2.0,
                 mask=lambda x, m: m)(masked)
    outputs = L.GlobalAveragePooling1D()(h)
    model = keras.Model(inputs, outputs)
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [3.0, 4.0], [0.0, 0.0]]], "float32")
    # the mask rides through the Lambda: the average is over the 2 kept steps
    np.testing.assert_allclose(model.predict(x, verbose=0), [[4.0, 6.0]], rtol=1e-6)
    assert model.layers[2].supports_masking
    layer = L.Lambda(lambda x: x * x + 1.0)
    v = tf.constant([1.5, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(layer(v))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [3.0, -4.0])
    traced = tf.function(layer, input_signature=[tf.TensorSpec([None, 3])])
    np.testing.assert_allclose(traced(tf.ones([2, 3])).numpy(), np.full((2, 3), 2.0))
    # named functions load without safe_mode=False
    seq = keras.Sequential([keras.Input((3,)), L.Lambda(scale_by_three), L.Dense(1)])
    path = str(tmp_path / "named.keras")
    seq.save(path)
    loaded = keras.models.load_model(path)
    z = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(loaded.predict(z, verbose=0), seq.predict(z, verbose=0),
                               rtol=1e-6)


# --------------------------------------------------------------------------- 7. legacy .h5
def test_keras_legacy_h5_models_load():
    io = np.load(fixture("keras_more_h5_io.npz"))
    with pytest.warns(UserWarning, match="freshly initialized optimizer"):
        mlp = keras.models.load_model(fixture("keras_more_mlp.h5"))
    np.testing.assert_allclose(mlp.predict(io["xm"], verbose=0), io["ym"], rtol=1e-5,
                               atol=1e-7)
    assert type(mlp.optimizer).__name__ == "Adam"
    np.testing.assert_allclose(float(mlp.optimizer.learning_rate.numpy()), 0.01, rtol=1e-6)
    assert int(mlp.optimizer.iterations.numpy()) == 0  # fresh, as Keras's loader leaves it
    cnn = keras.models.load_model(fixture("keras_more_cnn.h5"))
    np.testing.assert_allclose(cnn.predict(io["xc"], verbose=0), io["yc"], rtol=1e-5,
                               atol=1e-7)
    assert cnn.optimizer is None  # saved uncompiled
    assert keras.models.load_model(fixture("keras_more_mlp.h5"), compile=False
                                   ).optimizer is None


def _attr_names(group, key: str) -> list:
    return [n.decode() if isinstance(n, bytes) else n for n in group.attrs[key]]


def test_legacy_h5_written_with_keras_layout(tmp_path):
    io = np.load(fixture("keras_more_h5_io.npz"))
    mlp = keras.models.load_model(fixture("keras_more_mlp.h5"), compile=False)
    mlp.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    mlp.fit(io["xm"], io["ym"], epochs=1, batch_size=4, verbose=0)
    path = str(tmp_path / "m.h5")
    mlp.save(path)
    with h5py.File(path, "r") as f, h5py.File(fixture("keras_more_mlp.h5"), "r") as k:
        assert set(f.attrs) == set(k.attrs)
        assert json.loads(f.attrs["model_config"])["class_name"] == "Sequential"
        training = json.loads(f.attrs["training_config"])
        assert training["loss"] == "mse" and training["optimizer_config"]["class_name"] == \
            "Adam"
        assert set(f["model_weights"]) == set(k["model_weights"])
        assert _attr_names(f["model_weights"], "layer_names") == \
            _attr_names(k["model_weights"], "layer_names")
        for layer in _attr_names(k["model_weights"], "layer_names"):
            ours = [np.asarray(f["model_weights"][layer][n]).shape
                    for n in _attr_names(f["model_weights"][layer], "weight_names")]
            theirs = [np.asarray(k["model_weights"][layer][n]).shape
                      for n in _attr_names(k["model_weights"][layer], "weight_names")]
            assert ours == theirs, layer
        opt = [np.asarray(f["optimizer_weights"][n])
               for n in _attr_names(f["optimizer_weights"], "weight_names")]
        want = [v.numpy() for v in keras.saving.optimizer_state(mlp)]
        assert len(opt) == len(want) == 14
        for a, b in zip(opt, want):
            np.testing.assert_array_equal(a, b)
    with pytest.warns(UserWarning, match="freshly initialized"):
        again = keras.models.load_model(path)
    np.testing.assert_allclose(again.predict(io["xm"], verbose=0),
                               mlp.predict(io["xm"], verbose=0), rtol=1e-6)
    cnn = keras.models.load_model(fixture("keras_more_cnn.h5"))
    cnn_path = str(tmp_path / "c.hdf5")
    keras.saving.save_model(cnn, cnn_path, include_optimizer=False)
    np.testing.assert_allclose(keras.models.load_model(cnn_path).predict(io["xc"], verbose=0),
                               io["yc"], rtol=1e-5, atol=1e-7)
    bare = str(tmp_path / "bare.h5")
    keras.saving.save_model(mlp, bare, include_optimizer=False)
    with h5py.File(bare, "r") as f:
        assert "training_config" not in f.attrs and "optimizer_weights" not in f


def test_legacy_h5_errors(tmp_path, monkeypatch):
    model = keras.Sequential([keras.Input((2,)), L.Dense(1)])
    weights = str(tmp_path / "w.weights.h5")
    model.save_weights(weights)
    with pytest.raises(ValueError, match="No model config found"):
        keras.models.load_model(weights)
    with pytest.raises(ValueError, match="File format not supported"):
        keras.models.load_model(str(tmp_path / "m.txt"))
    with pytest.raises(ValueError, match=r"\.keras.*\.h5"):
        model.save(str(tmp_path / "m.txt"))
    other = keras.Sequential([keras.Input((3,)), L.Dense(1)])
    other.save(str(tmp_path / "o.h5"))
    with h5py.File(str(tmp_path / "o.h5"), "a") as f:
        config = json.loads(f.attrs["model_config"])
        config["config"]["layers"][1]["config"]["units"] = 2
        f.attrs["model_config"] = json.dumps(config)
    with pytest.raises(ValueError, match="Shape mismatch"):
        keras.models.load_model(str(tmp_path / "o.h5"))
    monkeypatch.setitem(sys.modules, "h5py", None)  # as if h5py were not installed
    with pytest.raises(ImportError, match="h5py"):
        model.save(str(tmp_path / "m.h5"))
    with pytest.raises(ImportError, match="h5py"):
        keras.models.load_model(fixture("keras_more_cnn.h5"))
