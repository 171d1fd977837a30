"""tf.onnx.export: the ONNX model passes onnx's checker and onnxruntime computes what
tapeflow computes (within float32 rounding) for an MLP, a CNN, a Keras LSTM, a transformer
block and a function of many ops; dynamic dims stay named; a missing lowering raises."""
import os

import numpy as np
import pytest

import tapeflow as tf

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
L = tf.keras.layers


def _run(path, feeds):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess, sess.run(None, dict(zip(names, feeds)))


def _export(tmp_path, fn, sig=None, **kw):
    path = os.path.join(tmp_path, "m.onnx")
    data = tf.onnx.export(fn, path, sig, **kw)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.SerializeToString() == data  # our bytes are canonical protobuf bytes
    return path, model


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def test_mlp_matches_tapeflow_and_numpy(tmp_path):
    tf.keras.utils.set_random_seed(1)
    m = tf.keras.Sequential([L.Input((4,)), L.Dense(8, activation="relu"),
                             L.Dense(3, activation="softmax")])
    path, model = _export(tmp_path, m, [tf.TensorSpec([None, 4], tf.float32)])
    g = model.graph
    assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert [d.dim_value for d in g.input[0].type.tensor_type.shape.dim[1:]] == [4]
    names = sorted(t.name for t in g.initializer)  # the variables, by their names
    assert [n.rsplit("/", 1)[1] for n in names] == ["bias", "kernel", "bias", "kernel"]
    assert model.opset_import[0].version == 17
    for n in (1, 5):  # the batch dim is dynamic: any size runs
        x = _rand(n, 4, seed=n)
        _, (got,) = _run(path, [x])
        np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)
        k1, b1, k2, b2 = [w.numpy() for w in m.weights]
        z = np.maximum(x @ k1 + b1, 0) @ k2 + b2
        want = np.exp(z - z.max(1, keepdims=True))
        np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-5,
                                   atol=1e-6)


def test_cnn_sequential(tmp_path):
    tf.keras.utils.set_random_seed(2)
    m = tf.keras.Sequential([
        L.Input((9, 9, 3)), L.Conv2D(4, 3, padding="same", activation="relu"),
        L.MaxPooling2D(2), L.Conv2D(5, 2, strides=2, padding="valid", activation="tanh"),
        L.AveragePooling2D(2, padding="same"), L.Conv2D(3, 1, dilation_rate=1),
        L.Flatten(), L.Dense(3, activation="sigmoid")])
    path, _ = _export(tmp_path, m)  # the signature comes from the model's Input
    x = _rand(2, 9, 9, 3)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_cnn_global_pool_and_strided_same(tmp_path):
    tf.keras.utils.set_random_seed(3)
    m = tf.keras.Sequential([
        L.Input((10, 7, 2)), L.Conv2D(4, 3, strides=2, padding="same"),
        L.MaxPooling2D(3, strides=2, padding="same"), L.GlobalAveragePooling2D(), L.Dense(2)])
    path, _ = _export(tmp_path, m)
    x = _rand(3, 10, 7, 2, seed=4)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-5)


def test_keras_lstm(tmp_path):
    tf.keras.utils.set_random_seed(4)
    m = tf.keras.Sequential([L.Input((5, 3)), L.LSTM(4), L.Dense(2)])
    path, _ = _export(tmp_path, m)
    x = _rand(2, 5, 3, seed=5)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_transformer_block(tmp_path):
    tf.keras.utils.set_random_seed(5)
    inp = L.Input((6, 8))
    h = L.LayerNormalization()(inp + L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp))
    out = L.LayerNormalization()(h + L.Dense(8)(L.Dense(16, activation="gelu")(h)))
    m = tf.keras.Model(inp, out)
    path, _ = _export(tmp_path, m)
    x = _rand(3, 6, 8, seed=6)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-4, atol=1e-5)


def _many_ops(x, y):
    a = tf.matmul(x, y) + 1.0
    b = a - x * 2.0 / (x + 3.0)
    c = tf.nn.relu(b) + tf.sigmoid(b) + tf.tanh(b) + tf.nn.softmax(b, axis=-1)
    d = tf.reshape(c, [-1, 2, 2])
    e = tf.cast(tf.identity(tf.cast(d, tf.float64)), tf.float32)
    r = tf.reduce_mean(e, axis=1) + tf.reduce_sum(e, axis=[1])
    cc = tf.concat([r, r * 2.0], axis=-1)
    s = tf.squeeze(tf.transpose(tf.expand_dims(cc, 1), [0, 2, 1]), axis=[2])
    m = tf.reduce_mean(s, axis=-1, keepdims=True)
    ln = (s - m) * tf.math.rsqrt(tf.reduce_mean(tf.square(s - m), -1, keepdims=True) + 1e-5)
    z = (tf.maximum(ln, 0.1) + tf.minimum(ln, 0.2) + tf.exp(-ln) + tf.sqrt(tf.abs(ln))
         + tf.math.log(tf.abs(ln) + 1.0) + tf.pow(ln, 2.0) + tf.nn.gelu(ln))
    n = tf.shape(x)[0]
    return (z, tf.gather(s, [0, 3], axis=1), s[:, 1:3], s[:, -1], s[::-1, ::2],
            tf.matmul(d, d, transpose_b=True), tf.reshape(x, [n, 2, 2]),
            tf.tile(x, [1, 2]), tf.pad(x, [[0, 0], [1, 2]]), tf.reduce_max(x, axis=0))


def test_function_of_many_ops(tmp_path):
    f = tf.function(_many_ops)
    sig = [tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([4, 4], tf.float32)]
    x, y = _rand(3, 4, seed=7), _rand(4, 4, seed=8)
    want = f(tf.constant(x), tf.constant(y))
    for opset in (17, 18):  # 18: reductions take their axes as an input
        path, model = _export(tmp_path, f, sig, opset=opset)
        assert model.opset_import[0].version == opset
        _, got = _run(path, [x, y])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def test_concrete_function_with_captures_and_variables(tmp_path):
    v = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
    scale = tf.constant([2.0, -1.0])  # captured eager tensor: an initializer
    cf = tf.function(lambda x: tf.nn.bias_add(tf.matmul(x, v), scale) * scale) \
        .get_concrete_function(tf.TensorSpec([None, 2], tf.float32))
    path, model = _export(tmp_path, cf)
    assert len(model.graph.input) == 1  # variables and captures are not inputs
    x = _rand(4, 2, seed=9)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, (x @ v.numpy() + [2.0, -1.0]) * [2.0, -1.0], rtol=1e-6)


def test_missing_lowering_names_op_and_function(tmp_path):
    def log_gamma(x):
        return tf.math.lgamma(x) + 1.0
    with pytest.raises(NotImplementedError, match=r"log_gamma.*Lgamma.*no ONNX lowering"):
        tf.onnx.export(tf.function(log_gamma), os.path.join(tmp_path, "m.onnx"),
                       [tf.TensorSpec([None, 3], tf.float32)])


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="input_signature"):
        tf.onnx.export(tf.function(lambda x: x), os.path.join(tmp_path, "m.onnx"))
    with pytest.raises(ValueError, match="opset"):
        tf.onnx.export(tf.function(lambda x: x), os.path.join(tmp_path, "m.onnx"),
                       [tf.TensorSpec([2])], opset=9)


def test_plain_callable_is_traced(tmp_path):
    path, _ = _export(tmp_path, lambda x: tf.nn.relu(x) + 1.0, [tf.TensorSpec([None])])
    _, (got,) = _run(path, [np.array([-1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(got, [1.0, 3.0])


def test_activations_and_reductions(tmp_path):
    def acts(a):
        return (tf.nn.leaky_relu(a, 0.3), tf.nn.relu6(a * 4.0), tf.nn.elu(a),
                tf.nn.softplus(a), tf.round(a * 2.0), tf.sign(a), tf.math.reciprocal(a),
                tf.nn.log_softmax(a), tf.reduce_min(a, 1), tf.reduce_prod(a, 1),
                tf.pad(a, [[0, 0], [2, 1]], mode="REFLECT"), tf.stop_gradient(a),
                tf.math.squared_difference(a, 1.0), tf.floor(a), tf.cos(a),
                tf.cast(a > 0.0, tf.float32))
    path, _ = _export(tmp_path, tf.function(acts), [tf.TensorSpec([None, 6], tf.float32)])
    x = _rand(3, 6, seed=10)
    _, got = _run(path, [x])
    for g, w in zip(got, acts(tf.constant(x))):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


_KERAS_ZOO = {
    "batchnorm_dropout_globalmax": ((2, 8, 8, 3), lambda: [
        L.Conv2D(4, 3), L.BatchNormalization(), L.Dropout(0.5), L.ReLU(),
        L.GlobalMaxPooling2D(), L.Dense(2)]),
    "depthwise_separable": ((2, 8, 8, 3), lambda: [
        L.DepthwiseConv2D(3, padding="same"), L.SeparableConv2D(4, 3), L.Flatten()]),
    "conv1d_causal": ((2, 10, 3), lambda: [
        L.Conv1D(4, 3, padding="causal"), L.MaxPooling1D(2), L.GlobalAveragePooling1D()]),
    "bidirectional_rnn": ((2, 5, 3), lambda: [
        L.Bidirectional(L.SimpleRNN(3, return_sequences=True)), L.LSTM(2)]),
    "conv_transpose_same": ((2, 5, 5, 2), lambda: [
        L.Conv2DTranspose(3, 3, strides=2, padding="same")]),
    "conv_transpose_valid": ((2, 5, 4, 2), lambda: [
        L.Conv2DTranspose(2, 4, strides=3), L.Conv2DTranspose(2, 3, strides=2,
                                                              output_padding=1)]),
    "upsample_pad_crop": ((2, 4, 4, 2), lambda: [
        L.ZeroPadding2D(1), L.UpSampling2D(2), L.Cropping2D(1)]),
}


@pytest.mark.parametrize("name", sorted(_KERAS_ZOO))
def test_keras_layers(tmp_path, name):
    shape, layers = _KERAS_ZOO[name]
    tf.keras.utils.set_random_seed(11)
    m = tf.keras.Sequential([L.Input(shape[1:])] + layers())
    path, _ = _export(tmp_path, m)
    x = _rand(*shape, seed=12)
    _, (got,) = _run(path, [x])
    want = m(x).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_embedding_gru_int_input(tmp_path):
    tf.keras.utils.set_random_seed(13)
    m = tf.keras.Sequential([L.Input((5,), dtype="int32"), L.Embedding(10, 4), L.GRU(3),
                             L.Dense(2)])
    path, model = _export(tmp_path, m)
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32
    x = np.random.RandomState(14).randint(0, 10, (3, 5)).astype(np.int32)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_lstm_of_unknown_length_is_an_onnx_loop(tmp_path):
    tf.keras.utils.set_random_seed(15)
    m = tf.keras.Sequential([L.Input((None, 3)), L.LSTM(4), L.Dense(2)])
    path, model = _export(tmp_path, m)
    assert "Loop" in [n.op_type for n in model.graph.node]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["batch", "x_dim1"]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for steps in (1, 6):
        x = _rand(2, steps, 3, seed=steps)
        (got,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)


def _branchy(x, n):
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    i, z = tf.while_loop(lambda i, z: i < n, lambda i, z: (i + 1, z * 1.5), [0, y],
                         maximum_iterations=4)
    return z, i


def test_cond_and_while_loop(tmp_path):
    f = tf.function(_branchy)
    path, _ = _export(tmp_path, f, [tf.TensorSpec([None, 3]), tf.TensorSpec([], tf.int32)])
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    # (2, 2): then-branch, 2 steps; (-1, 7): else-branch, cut at maximum_iterations 4
    for sign, n, steps in ((1.0, 2, 2), (-1.0, 7, 4), (1.0, 0, 0)):
        x = np.full((2, 3), sign, np.float32)
        z, i = sess.run(None, {"x": x, "n": np.asarray(n, np.int32)})
        start = x * 2.0 if sign > 0 else x - 1.0
        np.testing.assert_allclose(z, start * 1.5 ** steps, rtol=1e-6)
        assert int(i) == steps
        want = f(tf.constant(x), tf.constant(n))
        np.testing.assert_array_equal(z, want[0].numpy())


def _array_ops(x, ids):
    a = tf.where(x > 0, x, tf.zeros_like(x)) + tf.ones_like(x)
    s1, s2 = tf.split(x, 2, axis=1)
    tk = tf.math.top_k(x, 2)
    return (tf.range(tf.shape(x)[1]), a, tf.one_hot(ids, 5),
            tf.one_hot(ids, 4, axis=0, on_value=3.0, off_value=-1.0),
            tf.argmax(x, axis=-1), tf.argmin(x, 0, output_type=tf.int32), s2,
            tf.unstack(x, axis=1)[3],
            tf.broadcast_to(tf.reduce_sum(x, 1, keepdims=True), tf.shape(x)),
            tf.slice(x, [0, 1], [-1, 2]), tf.fill(tf.shape(x), 2.0),
            tf.cumsum(x, axis=1, exclusive=True, reverse=True),
            tf.linalg.band_part(tf.ones([4, 5]), -1, 1),
            tf.math.floormod(ids, 3) + tf.math.floordiv(ids, 3),
            tf.math.floormod(x, 0.7) + tf.math.floordiv(x, 0.7), tk.values, tk.indices,
            tf.math.logical_not(x > 0), tf.zeros(tf.shape(x)) + tf.ones([4]))


def test_array_ops_keep_values_and_dtypes(tmp_path):
    f = tf.function(_array_ops)
    sig = [tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([None], tf.int32)]
    path, _ = _export(tmp_path, f, sig)
    x = _rand(3, 4, seed=16)
    ids = np.array([0, -2, 4, 7, 2], np.int32)  # out of range: TF's one_hot gives zeros
    _, got = _run(path, [x, ids])
    want = f(tf.constant(x), tf.constant(ids))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[2][[1, 3]], np.zeros((2, 5)))


class _TokenAndPosition(L.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.tok, self.pos = L.Embedding(20, 8), L.Embedding(16, 8)

    def call(self, ids):
        return self.tok(ids) + self.pos(tf.range(tf.shape(ids)[-1]))


def test_causal_transformer_with_embeddings(tmp_path):
    tf.keras.utils.set_random_seed(17)
    inp = L.Input((6,), dtype="int32")
    h = _TokenAndPosition()(inp)
    h = L.LayerNormalization()(
        h + L.MultiHeadAttention(num_heads=2, key_dim=4)(h, h, use_causal_mask=True))
    m = tf.keras.Model(inp, L.Dense(3, activation="softmax")(L.GlobalAveragePooling1D()(h)))
    path, _ = _export(tmp_path, m)
    x = np.random.RandomState(18).randint(0, 20, (2, 6)).astype(np.int32)
    _, (got,) = _run(path, [x])
    np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_strided_slices_match_numpy_indexing(tmp_path):
    def slices(a):
        return (a[:, tf.newaxis, 1:], a[..., 0], a[None], a[1, ::2, tf.newaxis], a[:, -1],
                a[::-1, 2:0:-1, -2:], a[tf.newaxis, :, tf.newaxis, 0, 3])
    path, _ = _export(tmp_path, tf.function(slices), [tf.TensorSpec([None, 6, 5])])
    x = _rand(3, 6, 5, seed=19)
    _, got = _run(path, [x])
    want = (x[:, None, 1:], x[..., 0], x[None], x[1, ::2, None], x[:, -1],
            x[::-1, 2:0:-1, -2:], x[None, :, None, 0, 3])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("opset", [13, 18, 21])
def test_float64_dynamic_reshape_across_opsets(tmp_path, opset):
    def f(x):
        s = tf.shape(x)
        return tf.reshape(x, [s[0], -1]) * 2.0, tf.reduce_mean(tf.reshape(x, [s[0], s[1], -1]),
                                                               axis=[1, 2])
    path, model = _export(tmp_path, tf.function(f),
                          [tf.TensorSpec([None, None, None], tf.float64)], opset=opset)
    assert model.opset_import[0].version == opset
    assert model.ir_version == {13: 8, 18: 8, 21: 10}[opset]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["batch", "x_dim1", "x_dim2"]
    x = np.random.RandomState(20).randn(2, 3, 4)
    _, (flat, mean) = _run(path, [x])
    np.testing.assert_array_equal(flat, x.reshape(2, -1) * 2.0)
    np.testing.assert_allclose(mean, x.mean(axis=(1, 2)), rtol=1e-12)
