"""`tf.keras.backend` (the legacy backend functions of TF 2.21's tf.keras).

Deterministic functions are checked by value against real TensorFlow 2.21: every case of
fixtures/keras_backend_cases.py was evaluated by `tf.keras.backend` into
fixtures/keras_backend.npz (generator: fixtures/make_keras_backend.py) and is evaluated
here by tapeflow. Random functions are checked by shape, dtype and sample statistics.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras

K = keras.backend
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
sys.path.insert(0, HERE)
import keras_backend_cases as cases  # noqa: E402

EXPECTED = dict(np.load(os.path.join(HERE, "keras_backend.npz")))


@pytest.fixture(scope="module")
def ours() -> dict:
    return cases.results(K, tf)


def test_namespace_lists_tf_keras_backend_names():
    # sorted(n for n in dir(tf.keras.backend) if not n.startswith("_")) in TF 2.21
    assert len(dir(K)) == 137
    for name in ("batch_dot", "rnn", "random_normal", "ctc_decode", "set_floatx",
                 "image_data_format", "is_keras_tensor", "get_uid", "backend"):
        assert name in dir(K) and callable(getattr(K, name))
    assert "np" not in dir(K) and "Tensor" not in dir(K)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_matches_tensorflow(ours, key):
    want, got = EXPECTED[key], ours[key]
    assert got.shape == want.shape, key
    if want.dtype.kind in "US":
        assert got.tolist() == want.tolist(), key
        return
    assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=key)
    else:
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_channels_first_is_the_transposed_channels_last():
    # TensorFlow's CPU kernels refuse NCHW convolutions, so the channels-first forms are
    # checked against the channels-last ones (themselves checked against TensorFlow above)
    seq, img = tf.constant(cases.SEQ), tf.constant(cases.IMG)
    first = K.conv1d(tf.constant(cases._nchw(cases.SEQ)), tf.constant(cases.K1),
                     data_format="channels_first").numpy()
    np.testing.assert_allclose(first, np.moveaxis(K.conv1d(seq, tf.constant(cases.K1))
                                                  .numpy(), -1, 1), rtol=1e-5, atol=1e-5)
    for fn in (lambda x, f: K.conv2d(x, tf.constant(cases.K2), padding="same", data_format=f),
               lambda x, f: K.pool2d(x, (2, 3), data_format=f),
               lambda x, f: K.depthwise_conv2d(x, tf.constant(cases.KD), data_format=f),
               lambda x, f: K.separable_conv2d(x, tf.constant(cases.KD),
                                               tf.constant(cases.KP), data_format=f),
               lambda x, f: K.bias_add(x, tf.constant(cases.BIAS), data_format=f)):
        last = fn(img, "channels_last").numpy()
        first = fn(tf.constant(cases._nchw(cases.IMG)), "channels_first").numpy()
        np.testing.assert_allclose(first, np.moveaxis(last, -1, 1), rtol=1e-5, atol=1e-5)
    out = K.conv2d_transpose(tf.constant(cases._nchw(cases.IMG)), tf.constant(cases.KT),
                             (2, 2, 11, 13), strides=(2, 2), data_format="channels_first")
    np.testing.assert_allclose(out.numpy(), np.moveaxis(EXPECTED["conv2d_transpose"], -1, 1),
                               rtol=2e-5, atol=2e-5)
    vol = K.pool3d(tf.constant(np.moveaxis(cases.VOL, -1, 1)), (2, 2, 2), strides=(1, 2, 1),
                   data_format="channels_first")
    np.testing.assert_allclose(vol.numpy(), np.moveaxis(EXPECTED["pool3d_max"], -1, 1))


def test_configuration_functions():
    assert (K.backend(), K.floatx(), K.epsilon(), K.image_data_format()) == \
        ("tensorflow", "float32", 1e-07, "channels_last")
    try:
        K.set_floatx("float64")
        assert K.constant(1).dtype == tf.float64 and K.variable([1]).dtype == tf.float64
        assert K.random_normal((2,)).dtype == tf.float64
        K.set_epsilon(1e-3)
        assert K.epsilon() == 1e-3
        K.set_image_data_format("channels_first")
        assert K.image_data_format() == "channels_first"
        # channels-first by default now: the bias goes along axis 1
        np.testing.assert_array_equal(K.bias_add(tf.zeros((1, 2, 3)), tf.constant([1., 2.]))
                                      .numpy()[0, :, 0], [1., 2.])
    finally:
        K.set_floatx("float32")
        K.set_epsilon(1e-7)
        K.set_image_data_format("channels_last")
    # messages as TF 2.21's
    with pytest.raises(ValueError, match="Unknown `floatx` value: int32"):
        K.set_floatx("int32")
    with pytest.raises(ValueError, match="must be one of"):
        K.set_image_data_format("x")
    K.clear_session()
    assert [K.get_uid("a"), K.get_uid("a"), K.get_uid("b")] == [1, 2, 1]
    K.clear_session()
    assert K.get_uid("a") == 1
    with pytest.raises(ValueError, match="Invalid dtype: float"):
        K.standardize_dtype("float")


def test_shape_and_kind_helpers():
    x = keras.Input((3,))
    assert K.is_keras_tensor(x) and not K.is_keras_tensor(tf.constant(1.0))
    assert K.int_shape(x) == (None, 3) and K.int_shape(np.zeros((2, 3))) == (2, 3)
    assert K.ndim(tf.constant(1.0)) == 0 and K.dtype(tf.constant(1)) == "int32"
    assert isinstance(K.ones((2, 3)), tf.Variable) and isinstance(K.eye(2), tf.Variable)
    assert not isinstance(K.zeros((0, 3)), tf.Variable)   # an empty result stays a tensor
    assert isinstance(K.cast_to_floatx([1, 2]), np.ndarray)
    sp = tf.sparse.from_dense(tf.constant([[0.0, 2.0]]))
    assert K.is_sparse(sp) and not K.is_sparse(tf.constant(1.0))
    np.testing.assert_array_equal(K.to_dense(sp).numpy(), [[0.0, 2.0]])
    np.testing.assert_array_equal(K.eval(sp), [[0.0, 2.0]])
    assert K.get_value(3) == 3
    with K.name_scope("outer"):
        v = tf.Variable(1.0, name="v")
    assert v.name.startswith("outer/v")


def test_errors_match_tensorflow():
    with pytest.raises(ValueError, match="rank < 2"):
        K.batch_dot(tf.ones((3,)), tf.ones((3, 2)))
    with pytest.raises(ValueError, match="different batch sizes"):
        K.batch_dot(tf.ones((3, 2)), tf.ones((4, 2)))
    with pytest.raises(ValueError, match="over axis 0"):
        K.batch_dot(tf.ones((3, 2)), tf.ones((3, 2)), axes=0)
    with pytest.raises(ValueError, match=r"x.shape\[1\] != y.shape\[1\]"):
        K.batch_dot(tf.ones((3, 2)), tf.ones((3, 4)), axes=1)
    with pytest.raises(ValueError, match="softmax to a tensor that is 1D"):
        K.softmax(tf.ones((3,)))
    with pytest.raises(ValueError, match="Invalid padding"):
        K.conv2d(tf.ones((1, 3, 3, 1)), tf.ones((2, 2, 1, 1)), padding="full")
    with pytest.raises(ValueError, match="Invalid pooling mode"):
        K.pool2d(tf.ones((1, 4, 4, 1)), (2, 2), pool_mode="sum")
    with pytest.raises(ValueError, match="Unknown data_format"):
        K.conv2d(tf.ones((1, 3, 3, 1)), tf.ones((2, 2, 1, 1)), data_format="nhwc")
    with pytest.raises(ValueError, match="rank 2"):
        K.repeat(tf.ones((2, 3, 4)), 2)
    with pytest.raises(ValueError, match="tuple of 2 integers"):
        K.temporal_padding(tf.ones((1, 3, 1)), (1, 2, 3))
    with pytest.raises(ValueError, match="`interpolation` argument should be one of"):
        K.resize_images(tf.ones((1, 2, 2, 1)), 2, 2, "channels_last", interpolation="x")
    with pytest.raises(RuntimeError, match="GradientTape"):
        K.gradients(tf.constant(1.0), [tf.Variable(1.0)])


def test_random_functions_shapes_dtypes_and_statistics():
    np.random.seed(0)
    z = tf.zeros((4000, 5))
    # the VAE examples draw noise shaped like a dynamic batch
    eps = K.random_normal(shape=(tf.shape(z)[0], tf.shape(z)[1]))
    assert eps.shape == (4000, 5) and eps.dtype == tf.float32
    a = eps.numpy()
    assert abs(a.mean()) < 0.03 and abs(a.std() - 1) < 0.03
    a = K.random_normal((20000,), mean=2.0, stddev=0.5, seed=3).numpy()
    assert abs(a.mean() - 2) < 0.02 and abs(a.std() - 0.5) < 0.02
    u = K.random_uniform((20000,), -1.0, 3.0, dtype="float64").numpy()
    assert u.dtype == np.float64 and u.min() >= -1 and u.max() < 3
    assert abs(u.mean() - 1) < 0.05
    t = K.truncated_normal((20000,), 1.0, 2.0).numpy()
    assert t.min() >= -3 and t.max() <= 5 and abs(t.mean() - 1) < 0.05
    # truncated at two standard deviations: variance 0.774 of the untruncated one
    assert abs(t.std() - 2 * np.sqrt(0.7737)) < 0.05
    b = K.random_bernoulli((20000,), p=0.3).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    assert K.random_bernoulli((3,)).numpy().sum() == 0       # p defaults to 0
    v = K.random_normal_variable((100, 100), 1.0, 0.1, name="rn")
    assert isinstance(v, tf.Variable) and abs(v.numpy().mean() - 1) < 0.01
    w = K.random_uniform_variable((100, 100), 2.0, 4.0, dtype="float64")
    assert w.dtype == tf.float64 and 2 <= w.numpy().min() and w.numpy().max() < 4
    d = K.dropout(tf.ones((100, 100)), 0.25, seed=1).numpy()
    assert np.all(np.isclose(d, 0) | np.isclose(d, 1 / 0.75)) and abs((d == 0).mean() - 0.25) < 0.02


def test_random_normal_traced_with_unknown_batch():
    @tf.function(input_signature=[tf.TensorSpec([None, 2])])
    def sample(z):
        return z + K.random_normal(shape=(tf.shape(z)[0], 2))

    assert sample(tf.zeros((7, 2))).shape == (7, 2)


def test_rnn_gradient_and_trace():
    w = tf.Variable(0.5)

    def step(x, states):
        h = tf.tanh(x * w + states[0])
        return h, [h]

    x = tf.constant(cases.SEQ)
    with tf.GradientTape() as tape:
        last, _, _ = K.rnn(step, x, [tf.zeros((2, 3))])
        loss = K.sum(last)
    g = tape.gradient(loss, w).numpy()

    def loss_at(val):
        w.assign(val)
        return float(K.sum(K.rnn(step, x, [tf.zeros((2, 3))])[0]).numpy())
    num = (loss_at(0.5 + 1e-3) - loss_at(0.5 - 1e-3)) / 2e-3
    w.assign(0.5)
    assert abs(g - num) < 1e-2 * max(1.0, abs(num))

    @tf.function(input_signature=[tf.TensorSpec([None, 7, 3])])
    def run(seq):
        return K.rnn(step, seq, [tf.zeros((tf.shape(seq)[0], 3))])[1]
    want = K.rnn(step, x, [tf.zeros((2, 3))])[1].numpy()
    np.testing.assert_allclose(run(x).numpy(), want, rtol=1e-5, atol=1e-6)

    # an unknown length runs as one graph loop (tf.scan)
    @tf.function(input_signature=[tf.TensorSpec([2, None, 3])])
    def run_any_length(seq):
        return K.rnn(step, seq, [tf.zeros((2, 3))])[1]
    np.testing.assert_allclose(run_any_length(x).numpy(), want, rtol=1e-5, atol=1e-6)


def test_vae_sampling_lambda_trains():
    # the VAE examples' sampling layer: noise shaped like the symbolic batch
    def sampling(args):
        z_mean, z_log_var = args
        eps = K.random_normal(shape=(K.shape(z_mean)[0], K.int_shape(z_mean)[1]))
        return z_mean + K.exp(0.5 * z_log_var) * eps

    inp = keras.Input((6,))
    h = keras.layers.Dense(4, activation="relu")(inp)
    z = keras.layers.Lambda(sampling, output_shape=(2,))(
        [keras.layers.Dense(2)(h), keras.layers.Dense(2)(h)])
    model = keras.Model(inp, keras.layers.Dense(6)(z))
    model.compile("adam", "mse")
    x = np.random.RandomState(0).rand(32, 6).astype("float32")
    losses = model.fit(x, x, epochs=2, batch_size=8, verbose=0).history["loss"]
    assert len(losses) == 2 and np.isfinite(losses).all()
