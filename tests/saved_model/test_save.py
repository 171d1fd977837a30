"""tf.saved_model.save: the SavedModel written here is the one TensorFlow 2.21 loads.

Truth: fixtures/saved_model_<name>.json, written by fixtures/verify_tf.py, which loaded
what fixtures/write_models.py saved with tapeflow in real TensorFlow and recorded what
TensorFlow saw (tags, SignatureDefs, FunctionDef op types, object graph), the outputs its
`signatures[...]` gave and the sums of the variables checkpoint as TensorFlow read it.
Here the same models are saved again and the files parsed back with tapeflow's own
protocol-buffer reader must say the same; TensorFlow is not imported.
"""
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saved_model import proto as P

from . import models

NAMES = ["mlp", "stack", "keras_sequential", "keras_functional", "keras_cnn", "ops",
         "counter", "keras_transformer", "dynamic", "branchy", "keras_lstm",
         "loop_assigns", "keyword_order"]
HERE = os.path.dirname(os.path.abspath(__file__))
_DTYPES = {v: k for k, v in P._DT.items()}
_KINDS = {4: "user_object", 5: "asset", 6: "function", 7: "variable",
          8: "bare_concrete_function", 9: "constant", 10: "resource"}


def _fixture(name):
    with open(os.path.join(HERE, "fixtures", f"saved_model_{name}.json")) as f:
        return json.load(f)


def _shape(raw):
    dims = P.parse(raw).get(2, [])
    return [_signed(P.parse(d).get(1, [0])[0]) for d in dims]


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _tensor_info(raw):
    f = P.parse(raw)
    return [_DTYPES[f[2][0]], _shape(f.get(3, [b""])[0])]


def _describe(path):
    """What TensorFlow's verify script records, read with tapeflow's proto helpers."""
    with open(os.path.join(path, "saved_model.pb"), "rb") as fh:
        sm = P.parse(fh.read())
    assert sm[1] == [1]  # saved_model_schema_version
    mg = P.parse(sm[2][0])
    info = P.parse(mg[1][0])
    sigs = {}
    for key, raw in P.parse_map(mg.get(5, [])).items():
        sd = P.parse(raw)
        sigs[key] = {"method_name": sd[3][0].decode(),
                     "inputs": {k: _tensor_info(v) for k, v in P.parse_map(sd[1]).items()},
                     "outputs": {k: _tensor_info(v) for k, v in P.parse_map(sd[2]).items()}}
    library = P.parse(P.parse(mg[2][0])[2][0])
    ops = []
    for fdef in library.get(1, []):
        nodes = [P.parse(n) for n in P.parse(fdef).get(3, [])]
        ops.append(sorted({n[2][0].decode() for n in nodes}))
    objects = []
    og = P.parse(mg[7][0])
    for raw in og[1]:
        node = P.parse(raw)
        kind = next(_KINDS[k] for k in node if k in _KINDS)
        entry = {"kind": kind,
                 "children": [P.parse(c)[2][0].decode() for c in node.get(1, [])]}
        if kind == "user_object":
            entry["identifier"] = P.parse(node[4][0])[1][0].decode()
        objects.append(entry)
    return {"tags": [t.decode() for t in info[4]], "signatures": sigs,
            "function_ops": sorted(ops), "objects": objects}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("saved_model")
    out = {}
    for name, (module, save, x) in models.build().items():
        save(str(root / name))
        # the values saved (a test may run the counter, which assigns)
        held = sorted(float(np.sum(v.numpy(), dtype=np.float64)) for v in module.variables)
        out[name] = (str(root / name), module, x, held)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_files(saved, name):
    path = saved[name][0]
    for rel in ("saved_model.pb", "variables/variables.index",
                "variables/variables.data-00000-of-00001"):
        assert os.path.isfile(os.path.join(path, rel)), rel
    assert os.path.isdir(os.path.join(path, "assets"))


@pytest.mark.parametrize("name", NAMES)
def test_structure_is_what_tensorflow_read(saved, name):
    want = _fixture(name)
    got = _describe(saved[name][0])
    assert got["tags"] == want["tags"] == ["serve"]
    assert got["signatures"] == want["signatures"]
    assert got["function_ops"] == want["function_ops"]
    assert got["objects"] == want["objects"]


def test_mlp_lowered_ops_are_tensorflow_primitives(saved):
    ops = _describe(saved["mlp"][0])["function_ops"]
    # the traced graph before fusion, in TensorFlow's op names (Add -> AddV2)
    assert ["AddV2", "BiasAdd", "MatMul", "ReadVariableOp", "Relu", "Softmax"] in ops
    assert ["StatefulPartitionedCall"] in ops  # the serving_default wrapper


@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_tensorflows(saved, name):
    _, module, x, _ = saved[name]
    want = _fixture(name)["outputs"]
    outputs = models.run(name, module, x)
    assert sorted(f"{s}/{k}" for s, d in outputs.items() for k in d) == sorted(want)
    for sig, outs in outputs.items():
        for key, value in outs.items():
            np.testing.assert_allclose(value, np.array(want[f"{sig}/{key}"], np.float32),
                                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_variables_checkpoint(saved, name):
    path, _, _, held = saved[name]
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    want = _fixture(name)["checkpoint"]
    keys = sorted(k for k in reader.get_variable_to_shape_map()
                  if k != "_CHECKPOINTABLE_OBJECT_GRAPH")
    assert keys == sorted(want)
    for key in keys:
        value = reader.get_tensor(key)
        assert float(np.sum(value, dtype=np.float64)) == pytest.approx(want[key], rel=1e-12)
    assert held == pytest.approx(sorted(want.values()), rel=1e-12)


def test_saver_def_restores_every_variable(saved):
    """The SaverDef session loaders run: its restore op reads each checkpoint key."""
    with open(os.path.join(saved["stack"][0], "saved_model.pb"), "rb") as fh:
        mg = P.parse(P.parse(fh.read())[2][0])
    saver = P.parse(mg[3][0])
    assert saver[1] == [b"saver_filename:0"] and saver[7] == [2]  # V2
    nodes = {P.parse(n)[1][0].decode(): P.parse(n) for n in P.parse(mg[2][0])[1]}
    restore = saver[3][0].decode()
    assigns = [i.decode()[1:] for i in nodes[restore][3]]
    assert [nodes[a][2][0] for a in assigns] == [b"AssignVariableOp"] * 4
    names = P.parse(P.parse_map(nodes["saver/tensor_names"][5])["value"])
    keys = sorted(P.parse(names[8][0])[8])
    assert keys == sorted(k.encode() for k in _fixture("stack")["checkpoint"])


def test_keras_export_signatures(saved):
    sigs = _describe(saved["keras_functional"][0])["signatures"]
    assert sorted(sigs) == ["serve", "serving_default"]
    assert sigs["serve"]["inputs"] == {"a": ["float32", [-1, 4]], "b": ["float32", [-1, 2]]}
    assert sigs["serve"]["outputs"] == {"z": ["float32", [-1, 2]]}


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="trackable"):
        tf.saved_model.save(tf.Variable(1.0), str(tmp_path / "a"))

    outside = tf.Variable(np.ones(2, np.float32))

    class Reads(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def __call__(self, x):
            return x + outside

    with pytest.raises(ValueError, match="does not hold"):
        tf.saved_model.save(Reads(), str(tmp_path / "b"))

    class Cumulative(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32)])
        def __call__(self, x):
            return tf.math.cumsum(x)

    with pytest.raises(ValueError, match="Cumsum.*no TensorFlow lowering"):
        tf.saved_model.save(Cumulative(), str(tmp_path / "c"))

    m = models.MLP()
    with pytest.raises(ValueError, match="without input_signature"):
        tf.saved_model.save(m, str(tmp_path / "d"), signatures=tf.function(lambda x: x))


def test_signature_defaults():
    assert tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert tf.saved_model.SERVING == "serve"


def test_aliases_bare_functions_and_default_signature(tmp_path):
    """(Checked in TensorFlow 2.21: this object loads; `p.double(v)` gives v * 2 and
    LoadOptions(experimental_load_function_aliases=True) gives `function_aliases["fwd"]`.)"""
    class Scaled(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.float32(3.0), name="w")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v")])
        def __call__(self, v):
            return v * self.w

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v")])
        def twice(self, v):
            return v + v

    p = Scaled()
    p.double = tf.function(lambda v: v * 2.0).get_concrete_function(
        tf.TensorSpec([None], tf.float32, name="v"))
    opts = tf.saved_model.SaveOptions(function_aliases={"fwd": p.__call__})
    tf.saved_model.save(p, str(tmp_path / "p"), options=opts)
    d = _describe(str(tmp_path / "p"))
    assert d["signatures"] == {}  # two tf.functions with signatures: no default, as TF
    root = d["objects"][0]
    assert root["children"] == ["w", "__call__", "twice", "double", "signatures"]
    kinds = [o["kind"] for o in d["objects"]]
    assert kinds.count("bare_concrete_function") == 3  # two traces and `double`
    with open(tmp_path / "p" / "saved_model.pb", "rb") as fh:
        info = P.parse(P.parse(P.parse(fh.read())[2][0])[1][0])
    aliases = P.parse_map(info[8])
    assert list(aliases.values()) == [b"fwd"]
    assert next(iter(aliases)).startswith("__inference___call__")


def test_assignments_are_control_outputs_in_trace_order(saved):
    with open(os.path.join(saved["counter"][0], "saved_model.pb"), "rb") as fh:
        mg = P.parse(P.parse(fh.read())[2][0])
    library = P.parse(P.parse(mg[2][0])[2][0])
    fdef = next(P.parse(f) for f in library[1]
                if b"AssignAddVariableOp" in f and b"signature_wrapper" not in f)
    signature = P.parse(fdef[1][0])
    assert signature[20] == [b"AssignAddVariableOp", b"AssignVariableOp"]
    assert sorted(P.parse_map(fdef[6])) == ["AssignAddVariableOp", "AssignVariableOp"]
    nodes = {P.parse(n)[1][0]: P.parse(n) for n in fdef[3]}
    # the read of `calls` for the doubling waits for the increment, the assignment for it
    assert b"^AssignAddVariableOp" in nodes[b"ReadVariableOp"][3]
    assert b"^ReadVariableOp" in nodes[b"AssignVariableOp"][3]


def test_keras_model_export_method(tmp_path):
    # Keras 3's Model.export: a SavedModel with the serve endpoint and its signatures
    x = tf.keras.Input((3,), name="features")
    model = tf.keras.Model(x, tf.keras.layers.Dense(2, name="scores")(x))
    model.export(str(tmp_path / "exported"))
    sigs = _describe(str(tmp_path / "exported"))["signatures"]
    assert sorted(sigs) == ["serve", "serving_default"]
    assert sigs["serve"]["inputs"] == {"features": ["float32", [-1, 3]]}
    with pytest.raises(ValueError, match="format"):
        model.export(str(tmp_path / "other"), format="onnx")
