"""Functional reverse-mode API (API §3.4) and the gradient checker (API §3.5)."""
import logging
import re
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import autodiff as ad


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


def test_grad_and_value_and_grad():
    f = lambda x, y: tf.reduce_sum(tf.sin(x) * y)  # noqa: E731
    x, y = c64([0.1, 0.2]), c64([3.0, 4.0])
    np.testing.assert_allclose(ad.grad(f)(x, y).numpy(), np.cos([0.1, 0.2]) * [3.0, 4.0])
    gx, gy = ad.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gy.numpy(), np.sin([0.1, 0.2]))
    value, g = ad.value_and_grad(f, argnums=1)(x, y)
    np.testing.assert_allclose(value.numpy(), np.sum(np.sin([0.1, 0.2]) * [3.0, 4.0]))
    np.testing.assert_allclose(g.numpy(), np.sin([0.1, 0.2]))


def test_has_aux_and_pytrees():
    def f(params, x):
        out = tf.reduce_sum(params["w"] * x) + params["b"][0]
        return out, {"note": out * 2.0}
    params = {"w": c64([1.0, 2.0]), "b": [c64(0.5)]}
    (value, aux), g = ad.value_and_grad(f, has_aux=True)(params, c64([3.0, 4.0]))
    assert value.numpy() == 11.5 and aux["note"].numpy() == 23.0
    np.testing.assert_allclose(g["w"].numpy(), [3.0, 4.0])
    assert g["b"][0].numpy() == 1.0
    g2, aux2 = ad.grad(f, has_aux=True)(params, c64([3.0, 4.0]))
    np.testing.assert_allclose(g2["w"].numpy(), [3.0, 4.0])


def test_same_tensor_twice_gets_two_gradients():
    x = c64(3.0)
    gx, gy = ad.grad(lambda a, b: a * b * b, argnums=(0, 1))(x, x)
    assert gx.numpy() == 9.0 and gy.numpy() == 18.0
    g = ad.gradients_function(lambda a, b: a * b * b)(x, x)
    assert [t.numpy() for t in g] == [9.0, 18.0]


def test_python_and_numpy_arguments():
    assert ad.grad(lambda x: x * x)(3.0).numpy() == 6.0
    np.testing.assert_allclose(ad.grad(lambda x: tf.reduce_sum(x * x))(np.array([1.0, 2.0])),
                               [2.0, 4.0])


def test_vjp_callable_many_times():
    out, pullback = ad.vjp(lambda x: tf.sin(x) * 2.0, c64([0.0, 1.0]))
    np.testing.assert_allclose(out.numpy(), 2 * np.sin([0.0, 1.0]))
    (g1,) = pullback(c64([1.0, 1.0]))
    (g2,) = pullback(c64([2.0, 0.0]))
    np.testing.assert_allclose(g1.numpy(), 2 * np.cos([0.0, 1.0]))
    np.testing.assert_allclose(g2.numpy(), [4.0, 0.0])


def test_jacobian_function():
    a = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]])
    j = ad.jacobian(lambda x: tf.linalg.matvec(c64(a), x))(c64([0.2, 0.3]))
    np.testing.assert_allclose(j.numpy(), a)
    jx, jy = ad.jacobian(lambda x, y: x * y, argnums=(0, 1))(c64([1.0, 2.0]), c64([3.0, 4.0]))
    np.testing.assert_allclose(jx.numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_allclose(jy.numpy(), np.diag([1.0, 2.0]))


def test_hessian_closed_form():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    f = lambda x: 0.5 * tf.reduce_sum(x * tf.linalg.matvec(c64(a), x))  # noqa: E731
    h = ad.hessian(f)(c64([0.3, -0.4]))
    np.testing.assert_allclose(h.numpy(), a)


def test_value_and_gradients_function_and_make_vjp():
    value, (dx, dy) = ad.value_and_gradients_function(lambda x, y: x * y)(c64(2.0), c64(3.0))
    assert (value.numpy(), dx.numpy(), dy.numpy()) == (6.0, 3.0, 2.0)
    value, (dy_only,) = ad.value_and_gradients_function(lambda x, y: x * y, params=[1])(
        c64(2.0), c64(3.0))
    assert dy_only.numpy() == 2.0
    result, vjp = ad.make_vjp(tf.sin)(c64(0.5))
    np.testing.assert_allclose(result.numpy(), np.sin(0.5))
    np.testing.assert_allclose(vjp()[0].numpy(), np.cos(0.5))
    np.testing.assert_allclose(vjp(c64(2.0))[0].numpy(), 2 * np.cos(0.5))


def test_implicit_gradients():
    w = tf.Variable(np.array([1.0, 2.0]))
    b = tf.Variable(np.float64(0.5))
    frozen = tf.Variable(np.float64(7.0), trainable=False)

    def loss(x):
        return tf.reduce_sum(w * x) + b * frozen
    value, pairs = ad.implicit_value_and_gradients(loss)(c64([3.0, 4.0]))
    assert value.numpy() == 11.0 + 3.5
    grads = {id(v): g for g, v in pairs}
    np.testing.assert_allclose(grads[id(w)].numpy(), [3.0, 4.0])
    assert grads[id(b)].numpy() == 7.0 and id(frozen) not in grads
    pairs = ad.implicit_gradients(loss)(c64([3.0, 4.0]))
    assert len(pairs) == 2
    with pytest.raises(ValueError, match="no trainable variables"):
        ad.implicit_gradients(lambda: c64(1.0) * 2.0)()


def test_check_gradients_passes_and_catches_a_wrong_rule():
    tf.test.check_gradients(lambda x: tf.sin(x) * x, [np.array([0.3, 1.2])], order=2)

    @tf.custom_gradient
    def wrong(x):
        return tf.sin(x), lambda dy: dy * 2.0  # true derivative is cos(x)
    with pytest.raises(tf.test.GradientCheckError, match="rev"):
        tf.test.check_gradients(wrong, [np.array([0.3, 1.2])], order=1, modes=("rev",))


def test_compute_gradient_jacobians():
    theo, num = tf.test.compute_gradient(lambda x: x * x, [np.array([1.0, 2.0, 3.0])])
    np.testing.assert_allclose(theo[0], np.diag([2.0, 4.0, 6.0]))
    np.testing.assert_allclose(num[0], np.diag([2.0, 4.0, 6.0]), rtol=1e-6)
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    theo, num = tf.test.compute_gradient(lambda x: tf.linalg.matvec(c64(a), x),
                                         [np.array([1.0, 1.0, 1.0])])
    assert theo[0].shape == (2, 3)  # (output size, input size)
    np.testing.assert_allclose(theo[0], a)
    np.testing.assert_allclose(num[0], a, rtol=1e-6)


def test_explain_reports_why_gradient_is_none():
    x = c64([1.0, 2.0])
    unwatched = c64([1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.stop_gradient(x) * 3.0)
        z = tf.reduce_sum(tf.cast(tf.cast(x, tf.int32), tf.float64))
        w = tf.reduce_sum(tf.constant(x.numpy()) * 2.0)
        u = unwatched * 2.0
    assert tape.gradient(y, x) is None
    assert "stop_gradient" in tape.explain(y, x)
    assert "integer" in tape.explain(z, x) and "Cast" in tape.explain(z, x)
    assert "NumPy" in tape.explain(w, x)
    assert "never watched" in tape.explain(u, unwatched)


def test_explain_none_gradients_logs_one_record_naming_the_line(caplog):
    tf.config.explain_none_gradients(True)
    try:
        x = c64([1.0, 2.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.stop_gradient(x))
        with caplog.at_level(logging.WARNING, logger="tapeflow"), \
                warnings.catch_warnings():
            warnings.simplefilter("error")  # one channel: the log, not the warnings module
            assert tape.gradient(y, x) is None
        [record] = caplog.records
        assert re.search(r"stop_gradient at .*test_functional\.py:\d+", record.getMessage())
    finally:
        tf.config.explain_none_gradients(False)
