"""keras.utils: the custom-object registry (and `load_model` finding registered classes
without custom_objects), pad_sequences, split_dataset, timeseries_dataset_from_array,
normalize, Progbar and plot_model. Expected values were computed with real Keras 3.15.1
(`import keras`; the call is beside each value)."""
from __future__ import annotations

import importlib.util
import io
import json
import zipfile

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

U = keras.utils


@pytest.fixture(autouse=True)
def _fresh():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


# --------------------------------------------------------------------------- registry
def test_register_keras_serializable_names_and_lookup():
    @U.register_keras_serializable(package="test_u")
    class Thing:
        def get_config(self):
            return {}

    @U.register_keras_serializable("test_u", name="renamed")
    def double(x):
        return 2 * x

    assert U.get_registered_name(Thing) == "test_u>Thing"
    assert U.get_registered_name(double) == "test_u>renamed"
    assert U.get_custom_objects()["test_u>Thing"] is Thing
    assert U.get_registered_object("test_u>renamed") is double
    assert U.get_registered_name(int) == "int" and U.get_registered_object("nope") is None
    assert keras.saving is not None
    with pytest.raises(ValueError, match="get_config"):
        U.register_keras_serializable()(type("NoConfig", (), {}))


def test_custom_object_scope_is_consulted_then_restored():
    marker = object()
    assert U.get_registered_object("Marker") is None
    with U.custom_object_scope({"Marker": marker}) as scope:
        assert isinstance(scope, U.CustomObjectScope)
        assert U.get_registered_object("Marker") is marker
        with U.CustomObjectScope({"Other": 1}):  # an inner scope replaces the outer one
            assert U.get_registered_object("Marker") is None
        assert U.get_registered_object("Marker") is marker
    assert U.get_registered_object("Marker") is None
    assert U.get_registered_object("Marker", custom_objects={"Marker": 5}) == 5


def test_serialize_and_deserialize_keras_object():
    # keras.saving.serialize_keras_object(keras.constraints.MaxNorm(3))
    assert U.serialize_keras_object(keras.constraints.MaxNorm(3)) == {
        "module": "keras.constraints", "class_name": "MaxNorm",
        "config": {"max_value": 3, "axis": 0}, "registered_name": None}
    assert U.serialize_keras_object([1, "a", {"b": (2, 3)}]) == [1, "a", {"b": [2, 3]}]
    # a registered function: {'module': 'builtins', 'class_name': 'function',
    # 'config': 'Custom>f', 'registered_name': 'function'}
    @U.register_keras_serializable()
    def f_for_test(x):
        return x
    config = U.serialize_keras_object(f_for_test)
    assert config == {"module": "builtins", "class_name": "function",
                      "config": "Custom>f_for_test", "registered_name": "function"}
    assert U.deserialize_keras_object(config) is f_for_test
    back = U.deserialize_keras_object({"module": "keras.constraints", "class_name": "UnitNorm",
                                       "config": {"axis": 1}, "registered_name": None})
    assert isinstance(back, keras.constraints.UnitNorm) and back.axis == 1
    assert U.deserialize_keras_object({"b": 2, "c": [1]}) == {"b": 2, "c": [1]}
    with pytest.raises(TypeError, match="Could not locate class 'Missing'"):
        U.deserialize_keras_object({"module": "mine", "class_name": "Missing", "config": {},
                                    "registered_name": "mine>Missing"})


@U.register_keras_serializable(package="test_utils")
class Scale(layers.Layer):
    """A custom layer with a weight and a config argument."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, x):
        return self.factor * x * self.w

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def _scale_model():
    model = keras.Sequential([keras.Input((3,)), Scale(3.0), layers.Dense(2)])
    model.layers[0].w.assign([1.0, 2.0, 3.0])
    return model


def _entry(config: dict, class_name: str) -> dict:
    return next(e for e in config["config"]["layers"] if e["class_name"] == class_name)


def test_load_model_finds_a_registered_layer_without_custom_objects(tmp_path):
    model = _scale_model()
    path = str(tmp_path / "scale.keras")
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        entry = _entry(json.loads(zf.read("config.json")), "Scale")
    # as Keras writes a registered class: its module and "package>name"
    assert entry["class_name"] == "Scale" and entry["registered_name"] == "test_utils>Scale"
    assert entry["module"] == __name__
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.layers[0], Scale) and loaded.layers[0].factor == 3.0
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_lookup_by_plain_name_scope_and_custom_objects(tmp_path):
    class Unregistered(Scale):
        pass
    other = keras.Sequential([keras.Input((3,)), Unregistered(1.5)])
    path = str(tmp_path / "u.keras")
    other.save(path)
    with zipfile.ZipFile(path) as zf:
        entry = _entry(json.loads(zf.read("config.json")), "Unregistered")
    assert entry["registered_name"] == "Unregistered"  # Keras: the class name
    with pytest.raises(ValueError, match="Unknown layer class 'Unregistered'"):
        keras.models.load_model(path)
    with U.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(keras.models.load_model(path).layers[0], Unregistered)
    loaded = keras.models.load_model(path, custom_objects={"Unregistered": Unregistered})
    assert loaded.layers[0].factor == 1.5
    U.get_custom_objects()["Unregistered"] = Unregistered  # the global dict, by plain name
    try:
        assert isinstance(keras.models.load_model(path).layers[0], Unregistered)
    finally:
        del U.get_custom_objects()["Unregistered"]


# --------------------------------------------------------------------------- pad_sequences
SEQS = [[1, 2, 3], [4, 5], [6], []]


@pytest.mark.parametrize("kwargs,expected", [
    ({}, [[1, 2, 3], [0, 4, 5], [0, 0, 6], [0, 0, 0]]),
    ({"maxlen": 2}, [[2, 3], [4, 5], [0, 6], [0, 0]]),
    ({"maxlen": 2, "truncating": "post"}, [[1, 2], [4, 5], [0, 6], [0, 0]]),
    ({"maxlen": 4, "padding": "post", "value": -1},
     [[1, 2, 3, -1], [4, 5, -1, -1], [6, -1, -1, -1], [-1, -1, -1, -1]]),
    ({"maxlen": 2, "padding": "post", "truncating": "post", "dtype": "float32", "value": 0.5},
     [[1.0, 2.0], [4.0, 5.0], [6.0, 0.5], [0.5, 0.5]]),
])
def test_pad_sequences_matches_keras(kwargs, expected):
    out = U.pad_sequences(SEQS, **kwargs)  # keras.utils.pad_sequences(SEQS, **kwargs)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.dtype(kwargs.get("dtype", "int32"))


def test_pad_sequences_edge_cases():
    # keras.utils.pad_sequences([[[1, 2], [3, 4]], [[5, 6]]])
    np.testing.assert_array_equal(U.pad_sequences([[[1, 2], [3, 4]], [[5, 6]]]),
                                  [[[1, 2], [3, 4]], [[0, 0], [5, 6]]])
    out = U.pad_sequences([["a", "b"], ["c"]], dtype=object, value="x")
    assert out.tolist() == [["a", "b"], ["x", "c"]]
    out = U.pad_sequences([[1.7, 2.2]])  # floats cast to the int32 default: [[1, 2]]
    assert out.tolist() == [[1, 2]] and out.dtype == np.int32
    assert U.pad_sequences([[], []]).shape == (2, 0)
    with pytest.raises(ValueError, match='Padding type "mid" not understood'):
        U.pad_sequences([[1]], padding="mid")
    with pytest.raises(ValueError, match='Truncating type "mid" not understood'):
        U.pad_sequences([[1, 2]], maxlen=1, truncating="mid")
    with pytest.raises(ValueError, match="not compatible with `value`'s type"):
        U.pad_sequences([[1]], value="x")
    with pytest.raises(ValueError, match=r"Shape of sample \(2,\) of sequence at position 1"):
        U.pad_sequences([[[1]], [[1, 2]]])
    with pytest.raises(ValueError, match="must be a list of iterables"):
        U.pad_sequences([1, 2])


# --------------------------------------------------------------------------- split_dataset
def _values(ds):
    return [np.asarray(v).tolist() if not isinstance(v, tuple) else
            tuple(np.asarray(e).tolist() for e in v) for v in
            (tuple(x.numpy() for x in e) if isinstance(e, tuple) else e.numpy() for e in ds)]


@pytest.mark.parametrize("left,right,expected_left,expected_right", [
    # a, b = keras.utils.split_dataset(np.arange(10), left_size=left, right_size=right)
    (0.8, None, [0, 1, 2, 3, 4, 5, 6, 7], [8, 9]),
    (None, 0.3, [0, 1, 2, 3, 4, 5, 6], [7, 8, 9]),
    (3, None, [0, 1, 2], [3, 4, 5, 6, 7, 8, 9]),
    (None, 4, [0, 1, 2, 3, 4, 5], [6, 7, 8, 9]),
    (0.25, 0.25, [0, 1], [8, 9]),
    (2, 5, [0, 1], [5, 6, 7, 8, 9]),
    (0.33, None, [0, 1, 2], [3, 4, 5, 6, 7, 8, 9]),
])
def test_split_dataset_sizes_match_keras(left, right, expected_left, expected_right):
    a, b = U.split_dataset(np.arange(10), left_size=left, right_size=right)
    assert isinstance(a, tf.data.Dataset)
    assert _values(a) == expected_left and _values(b) == expected_right


@pytest.mark.parametrize("left,right,error,match", [
    (0, None, ValueError, "`left_size` should be either a positive integer smaller than 10"),
    (10, None, ValueError, "`left_size` should be"),
    (1.0, None, ValueError, "`left_size` should be"),
    (0.6, 0.6, ValueError, "greater than 1"),
    (7, 5, ValueError, "should be smaller than the 10"),
    (None, None, ValueError, "At least one of the `left_size` or `right_size`"),
    ("a", None, TypeError, "Invalid `left_size` Type"),
    (0.01, None, ValueError, "`left_size`=0 and `right_size`=10.Resulting left side"),
])
def test_split_dataset_errors_as_keras(left, right, error, match):
    with pytest.raises(error, match=match):
        U.split_dataset(np.arange(10), left_size=left, right_size=right)


def test_split_dataset_tuples_shuffle_and_batched_datasets():
    # keras.utils.split_dataset((np.arange(6), np.arange(6) * 10), left_size=4,
    #                           shuffle=True, seed=1)  (Python's random, as here)
    a, b = U.split_dataset((np.arange(6), np.arange(6) * 10), left_size=4, shuffle=True,
                           seed=1)
    assert [(int(x), int(y)) for x, y in a] == [(2, 20), (3, 30), (5, 50), (0, 0)]
    assert [(int(x), int(y)) for x, y in b] == [(4, 40), (1, 10)]
    ds = tf.data.Dataset.from_tensor_slices((np.arange(10.0), np.arange(10))).batch(3)
    a, b = U.split_dataset(ds, right_size=0.2)
    batches = [x.numpy().tolist() for x, _ in a]  # rebatched by 3, as the source
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert [y.numpy().tolist() for _, y in b] == [[8, 9]]
    with pytest.raises(TypeError, match="must be either a `tf.data.Dataset`"):
        U.split_dataset(5, left_size=1)


# --------------------------------------------------------------------------- others
def test_timeseries_dataset_from_array_matches_keras():
    # keras.utils.timeseries_dataset_from_array(np.arange(20), np.arange(20) * 10,
    #     sequence_length=4, sequence_stride=3, sampling_rate=2, batch_size=2,
    #     start_index=1, end_index=18)
    ds = U.timeseries_dataset_from_array(np.arange(20), np.arange(20) * 10, 4,
                                         sequence_stride=3, sampling_rate=2, batch_size=2,
                                         start_index=1, end_index=18)
    got = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    assert got == [([[1, 3, 5, 7], [4, 6, 8, 10]], [10, 40]),
                   ([[7, 9, 11, 13], [10, 12, 14, 16]], [70, 100])]
    windows = [w.numpy().tolist() for w in U.timeseries_dataset_from_array(
        np.arange(10.0).reshape(10, 1), None, 3, batch_size=None)]
    assert len(windows) == 8 and windows[:2] == [[[0.0], [1.0], [2.0]], [[1.0], [2.0], [3.0]]]
    shuffled = U.timeseries_dataset_from_array(np.arange(10), None, 3, batch_size=None,
                                               shuffle=True, seed=1)
    assert sorted(w.numpy()[0] for w in shuffled) == list(range(8))
    with pytest.raises(ValueError, match="`sampling_rate` must be higher than 0"):
        U.timeseries_dataset_from_array(np.arange(10), None, 3, sampling_rate=0)


def test_normalize_and_to_categorical():
    # keras.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(U.normalize(np.array([[3.0, 4.0], [0.0, 0.0]])),
                               [[0.6, 0.8], [0.0, 0.0]])
    # keras.utils.normalize(np.array([[3.0, 4.0], [1.0, 0.0]]), axis=0, order=1)
    np.testing.assert_allclose(U.normalize(np.array([[3.0, 4.0], [1.0, 0.0]]), axis=0,
                                           order=1), [[0.75, 1.0], [0.25, 0.0]])
    t = U.normalize(tf.constant([[3.0, 4.0], [0.0, 0.0]]))
    assert isinstance(t, tf.Tensor)
    np.testing.assert_allclose(t.numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(U.normalize(tf.constant([[1.0, -3.0]]), order=1).numpy(),
                               [[0.25, -0.75]])
    np.testing.assert_array_equal(U.to_categorical([[1], [0]], 3), [[0, 1, 0], [1, 0, 0]])


def test_progbar_averages_all_but_stateful_metrics_and_adds():
    out = io.StringIO()
    bar = U.Progbar(4, stateful_metrics=["acc"], stream=out, interval=0)
    bar.update(1, [("loss", 1.0), ("acc", 0.1)])
    bar.update(3, [("loss", 2.0), ("acc", 0.3)])  # loss stands for steps 2 and 3
    bar.add(1, [("loss", 4.0), ("acc", 0.5)])
    line = out.getvalue()
    assert line.startswith("4/4") and line.endswith("\n") and line.count("\n") == 1
    # finalize keeps the last value of an averaged metric, as Keras's update does
    assert "loss: 4.0000" in line and "acc: 0.5000" in line
    bar = U.Progbar(4, stateful_metrics=["acc"], stream=io.StringIO(), interval=0)
    bar.update(1, [("loss", 1.0)])
    bar.update(3, [("loss", 2.0)])
    assert bar._values["loss"] == (5.0, 3)  # (1*1 + 2*2) / 3
    quiet = io.StringIO()
    bar = U.Progbar(2, verbose=2, stream=quiet, unit_name="sample", interval=0)
    bar.update(1, [("loss", 1.0)])
    assert quiet.getvalue() == ""
    bar.update(2, [("loss", 3.0)])
    assert quiet.getvalue().startswith("2/2 - ") and "/sample" in quiet.getvalue()
    with pytest.raises(ValueError, match="Only one of"):
        U.Progbar(2, stateful_metrics=["a"], stateless_metrics=["b"])


def test_plot_model_needs_pydot():
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    if importlib.util.find_spec("pydot") is None:
        with pytest.raises(ImportError, match="pydot"):
            U.plot_model(model, "m.png")
    else:
        dot = U.model_to_dot(model)
        assert len(dot.get_nodes()) >= 1
