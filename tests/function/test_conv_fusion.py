"""Fused convolutions (API §6.5, TensorFlow's remapper): the convolution rules
(function/rules/convolution.py) on small graphs (optimized graphs printed on failure), the
FusedConv2D and Conv2DBackpropFilterWithBias ops on every backend, and the NumPy backend's
generated direct loops against its im2col + BLAS kernels."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow.backends.numpy import conv as np_conv, conv_direct
from tapeflow.function import optimizer


pytestmark = pytest.mark.usefixtures("optimizer_defaults")


@pytest.fixture
def compile_now(monkeypatch):
    """Fused kernels compiled on first use (not in the background, not after a few
    calls; direct convolutions always compile on their first call)."""
    # (the setting is restored, not turned on: a compile left running in the background
    # would race later tests' warning filters through numba's catch_warnings)
    before = jit.background()
    jit.set_background(False)
    yield
    jit.set_background(before)


@pytest.fixture
def im2col_only(monkeypatch):
    """A function that runs its body with the direct loops switched off."""
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(conv_direct, "DIRECT_FROM", 1 << 62)
            return fn()
    return run


def ops_of(cf) -> list:
    return [n.op for n in cf.optimized_graph.get_operations() if n.op != "Placeholder"]


def both_ways(fn, *args):
    """(result with the remapper's fusions, result without), as NumPy arrays."""
    fused = tf.nest.map_structure(lambda t: t.numpy(), tf.function(fn)(*args))
    optimizer.set_experimental_options({"remapping": False})
    plain = tf.nest.map_structure(lambda t: t.numpy(), tf.function(fn)(*args))
    optimizer.set_experimental_options({"remapping": True})
    return fused, plain


RNG = np.random.default_rng(7)
X = tf.constant(RNG.standard_normal((2, 7, 8, 3)))
W = tf.constant(RNG.standard_normal((3, 3, 3, 4)))
B = tf.constant(RNG.standard_normal(4))


@pytest.mark.parametrize("activation", ["", "Relu", "Relu6"])
@pytest.mark.parametrize("add", ["add", "bias_add", "bias_first"])
def test_a_convolution_with_bias_and_activation_becomes_one_op(activation, add):
    def f(x, w, b):
        y = tf.nn.conv2d(x, w, 1, "SAME")
        y = {"add": lambda: y + b, "bias_add": lambda: tf.nn.bias_add(y, b),
             "bias_first": lambda: b + y}[add]()
        return {"": y, "Relu": tf.nn.relu(y), "Relu6": tf.nn.relu6(y)}[activation] * 3.0

    cf = tf.function(f).get_concrete_function(X, W, B)
    ops = ops_of(cf)
    assert ops.count("FusedConv2D") == 1 and "Conv2D" not in ops, cf.optimized_graph
    assert not {"Add", "BiasAdd", "Relu", "Relu6"} & set(ops), cf.optimized_graph
    fused = [n for n in cf.optimized_graph.get_operations() if n.op == "FusedConv2D"][0]
    assert fused.attrs["activation"] == activation
    got, want = both_ways(f, X, W, B)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_values_other_ops_read_are_not_hidden_in_a_fused_convolution():
    def f(x, w, b):
        y = tf.nn.conv2d(x, w, 1, "VALID")
        z = y + b
        return tf.nn.relu(z), tf.reduce_sum(y), tf.tanh(z)  # y and z are read twice

    cf = tf.function(f).get_concrete_function(X, W, B)
    assert "FusedConv2D" not in ops_of(cf), cf.optimized_graph

    def g(x, w, b):  # the pre-activation read twice: bias fused, activation not
        z = tf.nn.conv2d(x, w, 1, "VALID") + b
        return tf.nn.relu(z), tf.tanh(z)

    cf = tf.function(g).get_concrete_function(X, W, B)
    ops = ops_of(cf)
    assert "FusedConv2D" in ops and "Relu" in ops, cf.optimized_graph
    got, want = both_ways(g, X, W, B)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_nchw_matrix_biases_and_the_option_off_keep_the_convolution():
    def nchw(x, w, b):
        return tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID", data_format="NCHW")
                          + tf.reshape(b, [4, 1, 1]))
    xc = tf.transpose(X, [0, 3, 1, 2])
    assert "FusedConv2D" not in ops_of(tf.function(nchw).get_concrete_function(xc, W, B))

    def plane_bias(x, w, b):  # a bias per pixel and channel, not per channel
        return tf.nn.conv2d(x, w, 1, "VALID") + b

    plane = tf.constant(RNG.standard_normal((5, 6, 4)))
    assert "FusedConv2D" not in ops_of(tf.function(plane_bias).get_concrete_function(
        X, W, plane))
    optimizer.set_experimental_options({"remapping": False})
    assert "FusedConv2D" not in ops_of(tf.function(
        lambda x, w, b: tf.nn.conv2d(x, w, 1, "VALID") + b).get_concrete_function(X, W, B))


def cnn_step(x, w, b, labels, padding="VALID", pool=(2, 2)):
    """Loss and gradients of conv + bias + ReLU + max pool + dense, as W6's step."""
    with tf.GradientTape() as tape:
        tape.watch([w, b])
        h = tf.nn.relu(tf.nn.conv2d(x, w, 1, padding) + b)
        p = tf.nn.max_pool2d(h, pool[0], pool[1], padding)
        logits = tf.reduce_sum(p, axis=[1, 2])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    return loss, tape.gradient(loss, [w, b])


@pytest.mark.parametrize("padding,pool", [("VALID", (2, 2)), ("SAME", (3, 2))])
def test_a_training_step_fuses_forward_bias_gradient_and_relu_through_pooling(padding, pool):
    labels = tf.constant([1, 3])
    cf = tf.function(lambda x, w, b, y: cnn_step(x, w, b, y, padding, pool)
                     ).get_concrete_function(X, W, B, labels)
    ops = ops_of(cf)
    assert "FusedConv2D" in ops and "Conv2DBackpropFilterWithBias" in ops, cf.optimized_graph
    assert "Conv2DBackpropFilter" not in ops, cf.optimized_graph
    graph = cf.optimized_graph
    # the ReLU mask is applied to the pooled gradient, before MaxPoolGrad scatters it
    grad = [n for n in graph.get_operations() if n.op == "MaxPoolGrad"][0]
    masked = grad.inputs["dy"]._native.node
    assert masked.op == "ReluGrad" and masked.inputs["y"]._native.node.op == "MaxPool", graph
    got, want = both_ways(lambda *a: cnn_step(*a, padding, pool), X, W, B, labels)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_relu_through_pooling_is_exact_with_ties_and_nan():
    """Windows with ties, zeros and a NaN: the same gradient bit for bit."""
    y = tf.constant(np.array([[[[1.0], [1.0], [0.0], [-0.0]],
                               [[np.nan], [2.0], [0.0], [0.0]],
                               [[-1.0], [-2.0], [3.0], [3.0]],
                               [[-1.0], [-1.0], [3.0], [-4.0]]]]))
    g = tf.constant(np.arange(1.0, 5.0).reshape(1, 2, 2, 1))

    def f(z, g):
        with tf.GradientTape() as tape:
            tape.watch(z)
            p = tf.nn.max_pool2d(tf.nn.relu(z), 2, 2, "VALID")
        return tape.gradient(p, z, output_gradients=g), p

    cf = tf.function(f).get_concrete_function(y, g)
    grad = [n for n in cf.optimized_graph.get_operations() if n.op == "MaxPoolGrad"][0]
    assert grad.inputs["dy"]._native.node.op == "ReluGrad", cf.optimized_graph
    got, want = both_ways(f, y, g)
    np.testing.assert_array_equal(got[0], want[0])


def test_fused_ops_check_their_operands():
    attrs = {"strides": (1, 1), "padding": "VALID", "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    with pytest.raises(tf.errors.InvalidArgumentError, match="FusedConv2D.*bias"):
        tf.engine.run_kernel("FusedConv2D",
                             {"x": X, "filters": W, "bias": tf.ones([3], tf.float64)},
                             dict(attrs, activation="Relu"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="FusedConv2D.*activation"):
        tf.engine.run_kernel("FusedConv2D", {"x": X, "filters": W, "bias": B},
                             dict(attrs, activation="Gelu"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="FusedConv2D.*channels"):
        tf.engine.run_kernel("FusedConv2D", {"x": X, "filters": tf.ones([3, 3, 2, 4], tf.float64),
                                             "bias": B}, dict(attrs, activation=""))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv2DBackpropFilter.*spatial size"):
        tf.engine.run_kernel("Conv2DBackpropFilterWithBias",
                             {"x": X, "dy": tf.ones([2, 4, 4, 4], tf.float64)},
                             dict(attrs, filter_hw=(3, 3)))


def test_fused_ops_on_the_array_api_backend_compose_its_kernels():
    assert tf.set_backend("array_api")
    try:
        got, want = both_ways(lambda *a: cnn_step(*a), X, W, B, tf.constant([0, 2]))
    finally:
        tf.set_backend("numpy")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ the generated direct loops
GEOMETRIES = [  # (x shape, filter shape, strides, dilations, padding, dtype, activation)
    ((4, 30, 33, 1), (3, 3, 1, 8), (1, 1), (1, 1), "VALID", np.float32, "Relu"),  # unrolled
    ((3, 40, 41, 3), (3, 2, 3, 7), (2, 1), (1, 2), "SAME", np.float64, "Relu6"),  # tap loop
    ((2, 24, 24, 2), (1, 1, 2, 32), (1, 1), (1, 1), "VALID", np.float32, ""),  # 32 filters
]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["3x3x1x8", "3x2x3x7-strided", "1x1x2x32"])
def test_direct_loops_equal_the_im2col_kernels(geometry, compile_now, im2col_only):
    xs, ws, strides, dilations, padding, dtype, activation = geometry
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[-1]).astype(dtype)
    x[0, 1, 2, 0] = np.nan  # a NaN stays in the outputs its window touches
    attrs = {"strides": strides, "padding": padding, "dilations": dilations,
             "data_format": "NHWC", "groups": 1}
    assert conv_direct.applies(xs, ws, np.dtype(dtype), 1)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    # (an activation a geometry: each pair compiles for seconds)
    got = np_conv.fused_conv2d({"x": x, "filters": w, "bias": b},
                               dict(attrs, activation=activation), None)
    want = im2col_only(lambda: np_conv.fused_conv2d(
        {"x": x, "filters": w, "bias": b}, dict(attrs, activation=activation), None))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert np.isnan(got).any() and (got[~np.isnan(got)] >= 0).all() == bool(activation)
    if activation == "Relu6":
        assert got[~np.isnan(got)].max() == 6
    dy = rng.standard_normal(got.shape).astype(dtype)
    x[0, 1, 2, 0] = 0.5
    a = dict(attrs, filter_hw=ws[:2])
    dw, db = np_conv.conv2d_backprop_filter_with_bias({"x": x, "dy": dy}, a, None)
    want_dw, want_db = im2col_only(
        lambda: np_conv.conv2d_backprop_filter_with_bias({"x": x, "dy": dy}, a, None))
    # (float32 sums of ~1000 products each: absolute error against their magnitude)
    scale = np.abs(x).max() * np.abs(dy).sum() / ws[-1]
    np.testing.assert_allclose(dw, want_dw, rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(db, want_db, rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(np_conv.conv2d_backprop_filter({"x": x, "dy": dy}, a, None),
                               want_dw, rtol=tol, atol=tol * scale)


def test_direct_loops_split_images_over_threads(compile_now, monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 40, 40, 1)).astype(np.float32)
    w = rng.standard_normal((3, 3, 1, 8)).astype(np.float32)
    b = np.zeros(8, np.float32)
    one = conv_direct.forward(x, w, b, (38, 38), (1, 1), (1, 1), "Relu")
    dw1, db1 = conv_direct.filter_grad(x, one, (3, 3), (1, 1), (1, 1))
    monkeypatch.setattr(conv_direct, "intra_op_threads", lambda: 3)
    monkeypatch.setattr(conv_direct, "SPLIT_FROM", 1)
    for _ in range(4):
        split = conv_direct.forward(x, w, b, (38, 38), (1, 1), (1, 1), "Relu")
        np.testing.assert_array_equal(split, one)  # each image alone: the same sums
        dw, db = conv_direct.filter_grad(x, one, (3, 3), (1, 1), (1, 1))
        # each image's sums, added in image order whoever computed them: the same bits
        np.testing.assert_array_equal(dw, dw1)
        np.testing.assert_array_equal(db, db1)


def test_small_and_unsupported_convolutions_keep_im2col():
    f32 = np.dtype(np.float32)
    assert conv_direct.applies((32, 28, 28, 1), (3, 3, 1, 8), f32, 1)
    assert not conv_direct.applies((1, 5, 5, 1), (3, 3, 1, 8), f32, 1)  # too small
    assert not conv_direct.applies((32, 28, 28, 16), (3, 3, 16, 8), f32, 1)  # BLAS's
    assert not conv_direct.applies((32, 28, 28, 2), (3, 3, 1, 8), f32, 2)  # grouped
    assert not conv_direct.applies((32, 28, 28, 1), (3, 3, 1, 64), f32, 1)  # many filters
    assert not conv_direct.applies((32, 28, 28, 1), (3, 3, 1, 8), np.dtype(np.int32), 1)
    assert not conv_direct.applies((32, 28, 28, 2), (3, 3, 1, 8), f32, 1)  # mismatch


def test_a_geometrys_first_calls_give_the_loops_bits(monkeypatch):
    """Until a geometry's loops are compiled (from its COMPILE_AFTER-th call, in the
    background), NumPy does their arithmetic op for op: every call, the first included,
    gives the same bits (API 6.7)."""
    monkeypatch.setattr(conv_direct, "_loops", {})
    monkeypatch.setattr(conv_direct, "_calls", {})
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 20, 20, 1)).astype(np.float32)
    w = rng.standard_normal((3, 3, 1, 8)).astype(np.float32)
    dy = rng.standard_normal((8, 18, 18, 8)).astype(np.float32)
    attrs = {"strides": (1, 1), "padding": "VALID", "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    grad_attrs = dict(attrs, filter_hw=(3, 3))
    results = []
    before = jit.background()
    jit.set_background(True)
    try:
        for call in range(conv_direct.COMPILE_AFTER + 2):
            if call == conv_direct.COMPILE_AFTER:
                jit.wait_compiled()
            y = np_conv.conv2d({"x": x, "filters": w}, attrs, None)
            dw = np_conv.conv2d_backprop_filter({"x": x, "dy": dy}, grad_attrs, None)
            results.append((y.tobytes(), dw.tobytes()))
    finally:
        jit.set_background(before)
    assert all(loop._state for loop in next(iter(conv_direct._loops.values())))  # compiled
    assert len(set(results)) == 1


@pytest.mark.parametrize("w_shape, strides, dilations, activation, dtype", [
    ((3, 3, 1, 8), (1, 1), (1, 1), "Relu", np.float32),  # taps unrolled
    ((3, 3, 3, 16), (2, 2), (1, 1), "", np.float32),  # a loop over the taps
    ((2, 3, 2, 5), (1, 2), (2, 1), "Relu6", np.float64),
    ((5, 5, 1, 32), (1, 1), (1, 1), "", np.float32)])
def test_numpy_formulations_equal_the_loops_bit_for_bit(w_shape, strides, dilations,
                                                        activation, dtype):
    rng = np.random.default_rng(9)
    kh, kw, c, f = w_shape
    n, h, w_ = 4, 17, 19
    xp = rng.standard_normal((n, h, w_, c)).astype(dtype)
    xp[0, 0, 0, 0] = -0.0
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(f).astype(dtype)
    out_hw = ((h - (kh - 1) * dilations[0] - 1) // strides[0] + 1,
              (w_ - (kw - 1) * dilations[1] - 1) // strides[1] + 1)
    zero = dtype(0)
    forward, grad = conv_direct._loops_for(w_shape, strides, dilations, activation)
    y1 = np.empty((n,) + out_hw + (f,), dtype)
    conv_direct._forward_numpy(xp, w, b, y1, zero, out_hw, strides, dilations, activation)
    y2 = np.empty_like(y1)
    forward.ready_now(xp, w, b, y2, zero, 0, 0)(xp, w, b, y2, zero, 0, n)
    assert y1.tobytes() == y2.tobytes()
    np.testing.assert_allclose(y1, y2, rtol=0)
    dy = rng.standard_normal((n,) + out_hw + (f,)).astype(dtype)
    p1 = np.empty((n, kh * kw * c * f + f), dtype)
    conv_direct._filter_grad_numpy(xp, dy, p1, w_shape, strides, dilations)
    p2 = np.empty_like(p1)
    grad.ready_now(xp, dy, p2, zero, 0, 0)(xp, dy, p2, zero, 0, n)
    assert p1.tobytes() == p2.tobytes()


def test_without_numba_fused_convolutions_run_im2col(monkeypatch):
    monkeypatch.setattr(jit, "available", lambda: False)
    monkeypatch.setattr(conv_direct, "_loops", {})
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 20, 20, 1))
    w, b = rng.standard_normal((3, 3, 1, 8)), rng.standard_normal(8)
    assert conv_direct.forward(x, w, b, (18, 18), (1, 1), (1, 1), "Relu") is None
    assert conv_direct.filter_grad(x, np.ones((8, 18, 18, 8)), (3, 3), (1, 1), (1, 1)) is None
    attrs = {"strides": (1, 1), "padding": "VALID", "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    got = np_conv.fused_conv2d({"x": x, "filters": w, "bias": b},
                               dict(attrs, activation="Relu6"), None)
    want = np.clip(np_conv.conv2d({"x": x, "filters": w}, attrs, None) + b, 0, 6)
    np.testing.assert_allclose(got, want, rtol=1e-13)
