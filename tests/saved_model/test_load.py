"""tf.saved_model.load and keras.layers.TFSMLayer: SavedModels written by TensorFlow 2.21
and by tapeflow run here.

Truth: fixtures/tf_written/<name>/ are SavedModels that real TensorFlow wrote, and
<name>_io.npz the inputs and the outputs TensorFlow's own `tf.saved_model.load` gave
(fixtures/make_tf_savedmodels.py, run with TensorFlow; TensorFlow is not imported here).
Round trips compare with the saved tapeflow model's own outputs; gradients with central
finite differences in float64.
"""
import os
import shutil

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saved_model.graph_ops import UnsupportedOpError

from . import models

HERE = os.path.dirname(os.path.abspath(__file__))
TF_WRITTEN = os.path.join(HERE, "fixtures", "tf_written")


def _io(name):
    return dict(np.load(os.path.join(TF_WRITTEN, f"{name}_io.npz")))


def _load(name):
    return tf.saved_model.load(os.path.join(TF_WRITTEN, name))


def _close(got, want, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=atol)


# ---------------------------------------------------------------- written by TensorFlow

def test_tf_module_mlp_call_and_signature():
    io, m = _io("mlp"), _load("mlp")
    _close(m(io["in/x"]).numpy(), io["call/output"])
    out = m.signatures["serving_default"](x=tf.constant(io["in/x"]))
    assert list(out) == ["output_0"]
    _close(out["output_0"].numpy(), io["serving_default/output_0"])
    # the variables, as the generator drew them (RandomState seeds 0..3)
    np.testing.assert_array_equal(m.w1.numpy(),
                                  np.random.RandomState(0).randn(4, 8).astype("float32"))
    assert isinstance(m.b2, tf.Variable) and m.b2.shape == (3,) and m.b2.trainable


def test_tf_multi_outputs_dict_signature_and_second_method():
    io, m = _io("multi"), _load("multi")
    a, b = io["in/a"], io["in/b"]
    out = m(a, b)
    assert sorted(out) == ["diff", "norm", "sum"]
    for k in out:
        _close(out[k].numpy(), io[f"call/{k}"])
    _close(m(a=a, b=b)["norm"].numpy(), io["call/norm"])
    sig = m.signatures["serving_default"](a=tf.constant(a), b=tf.constant(b))
    for k in ("diff", "norm", "sum"):
        _close(sig[k].numpy(), io[f"serving_default/{k}"])
    _close(m.double(a).numpy(), io["double/output"])
    with pytest.raises(ValueError, match="matching concrete function"):
        m.double(np.ones((4, 2), np.float32))  # traced for [3, 2] only


def test_tf_op_mix():
    """ResourceGather, depthwise and transposed convolutions (an output shape with the
    run-time batch), elementwise math, top-k, one-hot, cumsum, pad, tile, where."""
    io, m = _io("op_mix"), _load("op_mix")
    out = m(io["in/ids"], io["in/img"])
    assert sorted(out) == ["emb", "hot", "indices", "misc", "padded", "up", "where"]
    for k in out:
        _close(out[k].numpy(), io[f"call/{k}"])
    assert out["indices"].dtype == tf.int32


def test_python_arguments_pick_the_trace_and_defaults_apply():
    io, m = _io("python_args"), _load("python_args")
    x = io["in/x"]
    _close(m.f(x).numpy(), io["default/output"])            # training=False by default
    _close(m.f(x, False).numpy(), io["default/output"])
    _close(m.f(x, training=True).numpy(), io["training/output"])
    with pytest.raises(ValueError, match="matching concrete function"):
        m.f(x, scale=2.0)  # traced with scale=3.0 only


def test_tf_cond_and_while_loop():
    io, m = _io("control"), _load("control")
    _close(m(io["in/x"]).numpy(), io["call/output"])      # cond's true branch
    _close(m(io["in/neg"]).numpy(), io["call_neg/output"])  # its false branch


def test_keras_export_serve_endpoint():
    io, m = _io("keras_sequential"), _load("keras_sequential")
    _close(m.serve(io["in/x"]).numpy(), io["serve/output"])
    out = m.signatures["serving_default"](tf.constant(io["in/x"]))
    _close(out["output_0"].numpy(), io["serving_default/output_0"])
    assert sorted(m.signatures) == ["serve", "serving_default"]
    assert len(m.variables) == 4 and all(isinstance(v, tf.Variable) for v in m.variables)


def test_keras_export_cnn():
    """Conv2D, MaxPool, inference-mode BatchNormalization, GlobalAveragePooling2D."""
    io, m = _io("keras_cnn"), _load("keras_cnn")
    _close(m.serve(io["in/x"]).numpy(), io["serve/output"])


def test_keras_export_rnn_any_batch_and_gradient():
    """LSTM and GRU: TensorList ops in a While loop over an unknown batch size."""
    io, m = _io("keras_rnn"), _load("keras_rnn")
    x = io["in/x"]
    _close(m.serve(x).numpy(), io["serve/output"])
    _close(m.serve(x[:1]).numpy(), io["serve_one/output"])
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        total = tf.reduce_sum(m.serve(xt))
    grad = tape.gradient(total, xt).numpy()
    fd, eps = np.zeros(x.shape), 1e-2
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        hi = m.serve(x + d).numpy().astype(np.float64).sum()
        lo = m.serve(x - d).numpy().astype(np.float64).sum()
        fd[i] = (hi - lo) / (2 * eps)
    np.testing.assert_allclose(grad, fd, atol=1e-4)


def test_keras_export_transformer_traces_once_for_any_batch():
    io, m = _io("keras_transformer"), _load("keras_transformer")
    _close(m.serve(io["in/x"]).numpy(), io["serve/output"])
    _close(m.serve(io["in/x"][:1]).numpy(), io["serve/output"][:1])
    # run-time sizes (Tensordot's reshapes of [batch * time, units]) trace for the
    # signature's unknown batch: no per-shape traces
    assert not m.serve.concrete_functions[0]._exact


def test_keras_export_two_inputs_dict_output():
    io, m = _io("keras_two_inputs"), _load("keras_two_inputs")
    _close(m.serve([io["in/a"], io["in/b"]])["z"].numpy(), io["serve/z"])
    out = m.signatures["serving_default"](a=io["in/a"], b=io["in/b"])
    _close(out["z"].numpy(), io["serving_default/z"])


def _control_numpy(x, w):
    """The Control module of the generator in float64 NumPy."""
    y = np.tanh(x) if x.sum() > 0 else 2.0 * x
    h = y
    for _ in range(3):
        h = np.tanh(h @ w) + y
    return h


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_gradient_through_restored_control_flow(sign):
    io, m = _io("control"), _load("control")
    x0 = sign * np.abs(io["in/x"])
    c = np.random.RandomState(3).randn(*x0.shape)
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(m(x) * c.astype("float32"))
    gx, gw = tape.gradient(loss, [x, m.w])
    w0 = m.w.numpy().astype(np.float64)
    eps = 1e-6

    def fd(f, v):
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            d = np.zeros_like(v)
            d[i] = eps
            g[i] = ((f(v + d) * c).sum() - (f(v - d) * c).sum()) / (2 * eps)
        return g

    x64 = x0.astype(np.float64)
    _close(gx.numpy(), fd(lambda v: _control_numpy(v, w0), x64), atol=1e-4)
    _close(gw.numpy(), fd(lambda v: _control_numpy(x64, v), w0), atol=1e-4)


def test_unknown_op_names_op_and_function(tmp_path):
    target = tmp_path / "mlp"
    shutil.copytree(os.path.join(TF_WRITTEN, "mlp"), target)
    pb = target / "saved_model.pb"
    # same length, so every length prefix stays valid: the op and the node are renamed
    pb.write_bytes(pb.read_bytes().replace(b"Softmax", b"Softmex"))
    with pytest.raises(UnsupportedOpError, match=r"op Softmex .*function __inference_"):
        tf.saved_model.load(str(target))


def test_tags_and_missing_directory(tmp_path):
    with pytest.raises(RuntimeError, match="could not be found"):
        tf.saved_model.load(os.path.join(TF_WRITTEN, "mlp"), tags=["train"])
    assert tf.saved_model.load(os.path.join(TF_WRITTEN, "mlp"), tags="serve") is not None
    with pytest.raises(OSError, match="SavedModel file does not exist"):
        tf.saved_model.load(str(tmp_path))


@pytest.mark.parametrize("name", ["mlp", "multi", "keras_two_inputs"])
def test_tf_written_saved_again(name, tmp_path):
    """TensorFlow's SavedModel loaded, saved by tapeflow and loaded again keeps its
    functions and signatures (TensorFlow 2.21 gives the recorded outputs for these
    re-saved models too: checked by hand, as TensorFlow is no test dependency)."""
    io, m = _io(name), _load(name)
    tf.saved_model.save(m, str(tmp_path / name))
    again = tf.saved_model.load(str(tmp_path / name))
    assert sorted(again.signatures) == sorted(m.signatures)
    if name == "mlp":
        _close(again(io["in/x"]).numpy(), io["call/output"])
        _close(again.signatures["serving_default"](x=io["in/x"])["output_0"].numpy(),
               io["serving_default/output_0"])
    elif name == "multi":
        out = again.signatures["serving_default"](a=io["in/a"], b=io["in/b"])
        for k in ("diff", "norm", "sum"):
            _close(out[k].numpy(), io[f"serving_default/{k}"])
        _close(again.double(io["in/a"]).numpy(), io["double/output"])
    else:
        _close(again.serve([io["in/a"], io["in/b"]])["z"].numpy(), io["serve/z"])


# ---------------------------------------------------------------- written by tapeflow

ROUND_TRIP = ["mlp", "stack", "keras_sequential", "keras_functional", "keras_cnn", "ops",
              "keras_transformer", "dynamic", "counter", "branchy", "keras_lstm",
              "loop_assigns", "keyword_order"]


@pytest.fixture(scope="module")
def built():
    return models.build()


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip(built, name, tmp_path):
    module, save, x = built[name]
    path = str(tmp_path / name)
    save(path)
    want = models.run(name, module, x)
    loaded = tf.saved_model.load(path)
    xs = x if isinstance(x, list) else [x]
    for sig, outs in want.items():
        got = loaded.signatures["serving_default" if sig == "second" else sig](*xs)
        assert sorted(got) == sorted(outs)
        for k, v in outs.items():
            # the same ops on the same values (kernels may differ by fusion: rounding)
            np.testing.assert_allclose(got[k].numpy(), v, rtol=1e-6, atol=1e-6)


def test_round_trip_objects_and_methods(built, tmp_path):
    stack, save, x = built["stack"]
    save(str(tmp_path / "stack"))
    loaded = tf.saved_model.load(str(tmp_path / "stack"))
    assert isinstance(loaded.layers, list) and len(loaded.layers) == 2
    for mine, theirs in zip(stack.layers, loaded.layers):
        np.testing.assert_array_equal(theirs.kernel.numpy(), mine.kernel.numpy())
        np.testing.assert_array_equal(theirs.bias.numpy(), mine.bias.numpy())
    np.testing.assert_allclose(loaded.logits(x).numpy(), stack.logits(x).numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(loaded(features=x).numpy(), stack(x).numpy(),
                               rtol=1e-6, atol=1e-6)
    # a restored variable is a tapeflow Variable: assigning it changes what runs
    loaded.layers[1].bias.assign(loaded.layers[1].bias + 1.0)
    assert not np.allclose(loaded.logits(x).numpy(), stack.logits(x).numpy())


class Cubic(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.RandomState(0).randn(3, 2), name="w")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64, name="x")])
    def __call__(self, x):
        h = tf.matmul(x, self.w)
        return tf.reduce_sum(tf.tanh(h) * h * h, axis=1)


def test_gradients_of_round_trip_float64(tmp_path):
    tf.saved_model.save(Cubic(), str(tmp_path / "cubic"))
    m = tf.saved_model.load(str(tmp_path / "cubic"))
    x0 = np.random.RandomState(1).randn(4, 3)
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(m(x) ** 2)
    gx, gw = tape.gradient(loss, [x, m.w])
    w0, eps = m.w.numpy(), 1e-6

    def f(xv, wv):
        h = xv @ wv
        return ((np.tanh(h) * h * h).sum(axis=1) ** 2).sum()

    for grad, base, at in ((gx, x0, lambda v: f(v, w0)), (gw, w0, lambda v: f(x0, v))):
        fd = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            d = np.zeros_like(base)
            d[i] = eps
            fd[i] = (at(base + d) - at(base - d)) / (2 * eps)
        np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- TFSMLayer

def test_tfsm_layer_in_sequential_and_fine_tuning():
    io = _io("keras_sequential")
    path = os.path.join(TF_WRITTEN, "keras_sequential")
    layer = tf.keras.layers.TFSMLayer(path)
    assert len(layer.weights) == 4 and len(layer.trainable_weights) == 4
    model = tf.keras.Sequential([tf.keras.Input((4,)), layer,
                                 tf.keras.layers.Lambda(lambda p: p * 2.0)])
    _close(model(io["in/x"]).numpy(), 2.0 * io["serve/output"])
    _close(model.predict(io["in/x"], verbose=0), 2.0 * io["serve/output"])
    # training updates the restored variables that the endpoint reads
    before = [w.numpy().copy() for w in layer.weights]
    model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss="mse")
    model.fit(io["in/x"], np.zeros((5, 3), np.float32), epochs=1, verbose=0)
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, layer.weights))
    assert not np.allclose(layer(io["in/x"]).numpy(), io["serve/output"])


def test_tfsm_layer_config_and_endpoints():
    path = os.path.join(TF_WRITTEN, "keras_sequential")
    layer = tf.keras.layers.TFSMLayer(path, call_endpoint="serving_default", name="sm")
    config = layer.get_config()
    assert config["filepath"] == path and config["call_endpoint"] == "serving_default"
    assert config["call_training_endpoint"] is None and config["name"] == "sm"
    with pytest.raises(ValueError, match="safe_mode=False"):
        tf.keras.layers.TFSMLayer.from_config(config)
    again = tf.keras.layers.TFSMLayer.from_config(config, safe_mode=False)
    io = _io("keras_sequential")
    _close(again(io["in/x"])["output_0"].numpy(), io["serving_default/output_0"])
    with pytest.raises(ValueError, match="endpoint 'nope'"):
        tf.keras.layers.TFSMLayer(path, call_endpoint="nope")


def test_tfsm_layer_in_a_keras_file(tmp_path):
    io = _io("keras_sequential")
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.TFSMLayer(
        os.path.join(TF_WRITTEN, "keras_sequential"))])
    model.save(str(tmp_path / "wrapped.keras"))
    with pytest.raises(ValueError, match="safe_mode=False"):
        tf.keras.models.load_model(str(tmp_path / "wrapped.keras"))
    again = tf.keras.models.load_model(str(tmp_path / "wrapped.keras"), safe_mode=False)
    _close(again(io["in/x"]).numpy(), io["serve/output"])
