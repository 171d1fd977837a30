"""ONNX export of every model of the zoo (bench/zoo_models.py, issue #29): each model is
built under tapeflow by the zoo's own builder, its weights (and BatchNormalization's moving
statistics) moved off their initial values, and its inference function exported with a
dynamic batch dim; onnx's checker accepts the file and onnxruntime computes tapeflow's
outputs within float32 rounding at two batch sizes. The hand-written loops (vae,
rnn_loop) export an inference function over the variables their training step uses."""
import os

import numpy as np
import pytest

import tapeflow as tf

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.zoo_binding import bound_zoo, zoo_models

BATCHES = (1, 5)


@pytest.fixture(scope="module", autouse=True)
def _bound():
    with bound_zoo():  # (NumPy formulations: no kernel compiles)
        yield


def _closure(fn) -> dict:
    """The variables a zoo training step closes over, by name."""
    python = fn.python_function
    return dict(zip(python.__code__.co_freevars,
                    (c.cell_contents for c in python.__closure__)))


def _perturb(variables, seed: int) -> None:
    """Move every weight off its initial value (zero biases, unit BN statistics would hide
    a wrongly lowered term); variances stay positive."""
    rng = np.random.default_rng(seed)
    for v in variables:
        value = v.numpy()
        if "variance" in v.name:
            v.assign(rng.uniform(0.5, 2.0, value.shape).astype(value.dtype))
        else:
            v.assign(value + 0.1 * rng.standard_normal(value.shape).astype(value.dtype))


def _keras(name: str, data: dict):
    """A Keras zoo model's inference function: the model with training=False."""
    model = zoo_models.build(name, data).model
    _perturb(model.weights, seed=len(name))
    x = data["x"]
    spec = tf.TensorSpec([None, *x.shape[1:]], tf.as_dtype(x.dtype.name), name="x")
    infer = tf.function(lambda x: model(x, training=False), input_signature=[spec])
    return infer, lambda n: [x[:n]]


def _vae(name: str, data: dict):
    """The VAE's encoder and decoder: the reconstruction of x through the sample
    mean + exp(log_var / 2) * eps, eps an input, with the mean and log-variance."""
    scope = _closure(zoo_models.build(name, data).step)
    encoder, decoder = scope["encoder"], scope["decoder"]
    _perturb(encoder.weights + decoder.weights, seed=3)

    def infer(x, eps):
        mean, log_var = tf.split(encoder(x, training=False), 2, axis=1)
        z = mean + tf.exp(0.5 * log_var) * eps
        return tf.sigmoid(decoder(z, training=False)), mean, log_var

    sig = [tf.TensorSpec([None, 784], tf.float32, name="x"),
           tf.TensorSpec([None, 16], tf.float32, name="eps")]
    x = data["batches"][0]
    eps = np.random.default_rng(4).standard_normal((x.shape[0], 16)).astype(np.float32)
    return tf.function(infer, input_signature=sig), lambda n: [x[:n], eps[:n]]


def _rnn_loop(name: str, data: dict):
    """The hand-written RNN's logits: the same autograph loop over tf.range (a While,
    exported as an ONNX Loop) on its variables; time-major input, the batch dim second."""
    w_x, w_h, b_h, w_o, b_o = _closure(zoo_models.build(name, data).step)["variables"]
    _perturb([b_h, b_o], seed=5)

    def infer(xs):
        h = tf.zeros([tf.shape(xs)[1], 64])
        for t in tf.range(tf.shape(xs)[0]):
            h = tf.tanh(tf.matmul(xs[t], w_x) + tf.matmul(h, w_h) + b_h)
        return tf.matmul(h, w_o) + b_o

    xs = data["batches"][0][0]
    sig = [tf.TensorSpec([xs.shape[0], None, xs.shape[2]], tf.float32, name="xs")]
    return tf.function(infer, input_signature=sig), lambda n: [xs[:, :n]]


def _numpy_rnn(xs, w_x, w_h, b_h, w_o, b_o):
    h = np.zeros((xs.shape[1], w_h.shape[0]))
    for x in xs.astype(np.float64):
        h = np.tanh(x @ w_x + h @ w_h + b_h)
    return h @ w_o + b_o


INFERENCE = {"vae": _vae, "rnn_loop": _rnn_loop}


@pytest.mark.parametrize("name", list(zoo_models.MODELS))
def test_zoo_model_runs_in_onnxruntime(tmp_path, name):
    data = zoo_models.make_data(name, 1)
    infer, feeds = INFERENCE.get(name, _keras)(name, data)
    path = os.path.join(tmp_path, f"{name}.onnx")
    tf.onnx.export(infer, path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    # the dynamic batch dim keeps its name, in the inputs (the RNN's input is time-major)
    # and in the outputs (through its loops too)
    in_axis, dynamic = (1, "xs_dim1") if name == "rnn_loop" else (0, "batch")
    for value, axis in [(v, in_axis) for v in model.graph.input] + \
            [(v, 0) for v in model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        assert dims[axis].dim_param == dynamic, (name, value.name)
        assert all(d.dim_value > 0 for i, d in enumerate(dims) if i != axis), name
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for n in BATCHES:
        args = feeds(n)
        got = session.run(None, dict(zip(names, args)))
        want = infer(*[tf.constant(a) for a in args])
        want = want if isinstance(want, (tuple, list)) else [want]
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            w = w.numpy()
            assert g.shape == w.shape and g.dtype == w.dtype, (name, n)
            assert g.shape[0] == n
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale, err_msg=name)


def test_rnn_loop_export_matches_numpy(tmp_path):
    """The exported loop against the recurrence in float64 NumPy (independent of both)."""
    data = zoo_models.make_data("rnn_loop", 1)
    infer, feeds = _rnn_loop("rnn_loop", data)
    path = os.path.join(tmp_path, "rnn.onnx")
    tf.onnx.export(infer, path)
    assert "Loop" in [n.op_type for n in onnx.load(path).graph.node]
    (xs,) = feeds(3)
    (got,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None,
                                                                               {"xs": xs})
    scope = _closure(infer)
    want = _numpy_rnn(xs, *[scope[k].numpy().astype(np.float64)
                            for k in ("w_x", "w_h", "b_h", "w_o", "b_o")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
