"""Whole-model `.keras` files: Keras 3's zip of config.json, metadata.json and
model.weights.h5. Files real Keras wrote (fixtures/make_keras_models.py) load and predict
as Keras did; tapeflow's own files round-trip (real Keras loading them is checked by hand
with fixtures/verify_keras_loads_tapeflow_models.py); nothing in a file is executed."""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def mlp():
    """The tapeflow build of the fixture script's Sequential MLP."""
    model = keras.Sequential([
        keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
        keras.layers.BatchNormalization(), keras.layers.Dropout(0.2),
        keras.layers.Dense(3, activation="softmax")], name="mlp")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def cnn():
    """The tapeflow build of the fixture script's two-input functional CNN."""
    image, extra = keras.Input((8, 8, 1), name="image"), keras.Input((2,), name="extra")
    h = keras.layers.Conv2D(4, 3, activation="relu", padding="same")(image)
    h = keras.layers.Flatten()(keras.layers.MaxPooling2D()(h))
    h = keras.layers.Concatenate()([h, keras.layers.Dense(3, name="side")(extra)])
    model = keras.Model([image, extra], keras.layers.Dense(1, name="out")(h), name="cnn")
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    return model


def seq1d():
    """The tapeflow build of the fixture script's Sequential of 1-D layers."""
    return keras.Sequential([
        keras.Input((12, 3)),
        keras.layers.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu"),
        keras.layers.MaxPooling1D(2), keras.layers.Conv1D(5, 2, strides=2, padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.1),
        keras.layers.AveragePooling1D(2, padding="same"),
        keras.layers.GlobalMaxPooling1D(), keras.layers.Dense(2)], name="seq1d")


def fixture_io(name: str):
    with np.load(os.path.join(FIXTURES, f"keras_{name}_io.npz")) as f:
        inputs = [f[f"arr_{i}"] for i in range(len(f.files) - 1)]
        return (inputs[0] if len(inputs) == 1 else inputs), f["prediction"]


@pytest.mark.parametrize("name", ["mlp", "cnn", "seq1d"])
def test_loads_what_keras_saved(name):
    model = keras.models.load_model(os.path.join(FIXTURES, f"keras_{name}.keras"))
    inputs, expected = fixture_io(name)
    np.testing.assert_allclose(model.predict(inputs, verbose=0), expected, rtol=1e-5,
                               atol=1e-6)
    assert model.name == name
    reference = globals()[name]()
    assert [type(a) for a in model.layers] == [type(b) for b in reference.layers]
    assert [w.shape for w in model.get_weights()] == \
        [w.shape for w in reference.get_weights()]


def test_compile_config_is_restored():
    model = keras.models.load_model(os.path.join(FIXTURES, "keras_mlp.keras"))
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert model.optimizer.learning_rate.numpy() == pytest.approx(0.01)
    assert model.optimizer.beta_1 == pytest.approx(0.9)
    x, _ = fixture_io("mlp")
    logs = model.evaluate(x, np.array([0, 1, 2, 0]), verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    probabilities = model.predict(x, verbose=0)
    expected = -np.mean(np.log(probabilities[np.arange(4), [0, 1, 2, 0]]))
    assert logs["loss"] == pytest.approx(expected, rel=1e-5)
    history = model.fit(x, np.array([0, 1, 2, 0]), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    bare = keras.models.load_model(os.path.join(FIXTURES, "keras_cnn.keras"), compile=False)
    assert bare.optimizer is None
    with pytest.raises(Exception, match="compile"):
        bare.fit([np.zeros((1, 8, 8, 1)), np.zeros((1, 2))], np.zeros((1, 1)), verbose=0)


@pytest.mark.parametrize("build", [mlp, cnn])
def test_round_trip(build, tmp_path):
    model = build()
    rng = np.random.default_rng(0)
    inputs = rng.random((5, 6), dtype=np.float32) if build is mlp else \
        [rng.random((5, 8, 8, 1), dtype=np.float32), rng.random((5, 2), dtype=np.float32)]
    targets = rng.integers(0, 3, 5) if build is mlp else rng.random((5, 1))
    model.fit(inputs, targets, epochs=1, verbose=0)  # BatchNormalization's statistics move
    path = str(tmp_path / "model.keras")
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        config = json.loads(zf.read("config.json"))
        assert json.loads(zf.read("metadata.json"))["keras_version"].startswith("3.")
    assert config["class_name"] == ("Sequential" if build is mlp else "Functional")
    assert config["compile_config"]["loss"] == ("sparse_categorical_crossentropy"
                                                if build is mlp else "mse")
    copy = keras.models.load_model(path)
    np.testing.assert_array_equal(copy.predict(inputs, verbose=0),
                                  model.predict(inputs, verbose=0))
    for a, b in zip(copy.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert type(copy.optimizer) is type(model.optimizer)
    assert copy.optimizer.learning_rate.numpy() == pytest.approx(
        model.optimizer.learning_rate.numpy())


def test_1d_layers_train_and_round_trip(tmp_path):
    model = seq1d()
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 12, 3), dtype=np.float32), rng.random((8, 2))
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)  # the traced step
    assert history.history["loss"][-1] < history.history["loss"][0]
    path = str(tmp_path / "seq1d.keras")
    model.save(path)
    copy = keras.models.load_model(path)
    assert [type(a) for a in copy.layers] == [type(b) for b in model.layers]
    assert copy.layers[0].get_config() == model.layers[0].get_config()
    np.testing.assert_array_equal(copy.predict(x, verbose=0), model.predict(x, verbose=0))


def test_shared_layers_and_nested_models_round_trip(tmp_path):
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    shared = keras.layers.Dense(2, name="shared")
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="inner")
    merged = keras.layers.Concatenate()([shared(a), shared(b)])
    model = keras.Model({"a": a, "b": b}, [inner(merged), shared(b)])
    x = {"a": np.ones((2, 3), np.float32), "b": np.arange(6, dtype=np.float32).reshape(2, 3)}
    model.save(str(tmp_path / "m.keras"))
    copy = keras.models.load_model(str(tmp_path / "m.keras"))
    assert len(copy.get_weights()) == 4  # the shared layer's weights exist once
    for got, want in zip(copy.predict(x, verbose=0), model.predict(x, verbose=0)):
        np.testing.assert_array_equal(got, want)
    assert keras.saving.load_model is keras.models.load_model


class Scale(keras.layers.Layer):
    def __init__(self, factor: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_custom_layers_only_through_custom_objects(tmp_path):
    model = keras.Sequential([keras.Input((2,)), Scale(3.0), keras.layers.Dense(1)])
    path = str(tmp_path / "custom.keras")
    model.save(path)
    with pytest.raises(ValueError, match="Unknown layer class 'Scale'.*custom_objects"):
        keras.models.load_model(path)
    copy = keras.models.load_model(path, custom_objects={"Scale": Scale})
    assert copy.layers[0].factor == 3.0
    x = np.array([[1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(copy.predict(x, verbose=0), model.predict(x, verbose=0))


def _rewrite(source: str, target: str, edit) -> None:
    with zipfile.ZipFile(source) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    config = json.loads(files["config.json"])
    edit(config)
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(target, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)


def test_files_holding_code_or_unknown_options_are_refused(tmp_path):
    source = os.path.join(FIXTURES, "keras_mlp.keras")
    target = str(tmp_path / "bad.keras")

    def lambda_layer(config):  # what Keras writes for a Lambda: Python code, marshalled
        config["config"]["layers"][1] = {
            "module": "keras.layers", "class_name": "Lambda", "registered_name": None,
            "config": {"name": "lambda", "function": {"class_name": "__lambda__",
                                                      "config": {"code": "4wEAAAA="}}}}
    _rewrite(source, target, lambda_layer)
    with pytest.raises(ValueError, match="Python lambda.*safe_mode=False"):
        keras.models.load_model(target)

    def module_path(config):  # a class named by an importable path is still only a name
        config["config"]["layers"][1]["module"] = "os"
        config["config"]["layers"][1]["class_name"] = "system"
    _rewrite(source, target, module_path)
    with pytest.raises(ValueError, match="Unknown layer class 'system'"):
        keras.models.load_model(target)

    def unsupported(config):
        config["config"]["layers"][1]["config"]["lora_rank"] = 4
    _rewrite(source, target, unsupported)
    with pytest.raises(ValueError, match="lora_rank.*not supported"):
        keras.models.load_model(target)


def test_bad_paths_and_models(tmp_path):
    with pytest.raises(ValueError, match=r"\.keras"):
        mlp().save(str(tmp_path / "m.txt"))
    (tmp_path / "plain.keras").write_text("not a zip")
    with pytest.raises(ValueError, match="not a .keras file"):
        keras.models.load_model(str(tmp_path / "plain.keras"))
    with pytest.raises(ValueError, match="File format not supported"):
        keras.models.load_model(str(tmp_path / "m.txt"))

    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)
    sub = Sub()
    sub(np.ones((1, 2), np.float32))
    with pytest.raises(NotImplementedError, match="subclassed"):
        sub.save(str(tmp_path / "sub.keras"))
    with pytest.raises(ValueError, match="not built"):
        keras.Sequential([keras.layers.Dense(1)]).save(str(tmp_path / "unbuilt.keras"))
    late = keras.Sequential([keras.layers.Dense(2)])  # built by its first call
    late(np.ones((1, 3), np.float32))
    late.save(str(tmp_path / "late.keras"))
    assert keras.models.load_model(str(tmp_path / "late.keras")).count_params() == 8
    path = str(tmp_path / "m.keras")
    mlp().save(path)
    with pytest.raises(FileExistsError):
        mlp().save(path, overwrite=False)
