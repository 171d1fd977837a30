"""SavedModel export of traced control flow: tf.cond as If / StatelessIf and
tf.while_loop as While / StatelessWhile, their branches, conds and bodies FunctionDefs of
the library (TensorFlow 2.21 serving them is checked by fixtures/verify_tf.py: the models
branchy, keras_lstm and loop_assigns of test_save.py). Here: the ops written, and round
trips saved and loaded by tapeflow against NumPy (both branches, loops cut by
maximum_iterations, sequences of any length) and against finite differences."""
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saved_model import proto as P

from . import models


def _library_ops(path) -> dict:
    """{function name: [op types of its nodes]} of a SavedModel's FunctionDefLibrary."""
    with open(os.path.join(path, "saved_model.pb"), "rb") as fh:
        mg = P.parse(P.parse(fh.read())[2][0])
    library = P.parse(P.parse(mg[2][0])[2][0])
    out = {}
    for fdef in library.get(1, []):
        f = P.parse(fdef)
        name = P.parse(f[1][0])[1][0].decode()
        out[name] = [P.parse(n)[2][0].decode() for n in f.get(3, [])]
    return out


def _branchy_numpy(x: np.ndarray, scale: np.ndarray) -> dict:
    """models.Branchy in float64 NumPy."""
    x = x.astype(np.float64)
    total = x.sum()
    acc, i = np.zeros(3), 0
    while i < x.shape[0] and i < 4:
        acc, i = acc * 0.5 + x[i].sum() * scale, i + 1
    w = np.abs(np.maximum(x, 0) if total <= 0 else np.tanh(x)) + 0.5
    k = 0
    while w.sum() < 50.0:
        w, k = (w * 2.0 if k % 2 == 0 else w + 1.0), k + 1
    return {"cond": x * scale if total > 0 else x - 1.0, "loop": acc, "steps": i,
            "grown": w, "count": k}


@pytest.fixture(scope="module")
def branchy(tmp_path_factory):
    module = models.Branchy()
    path = str(tmp_path_factory.mktemp("branchy") / "m")
    tf.saved_model.save(module, path)
    return module, path, tf.saved_model.load(path)


def test_conds_and_loops_become_tensorflows_functional_ops(branchy):
    _, path, _ = branchy
    ops = _library_ops(path)
    call = next(v for k, v in ops.items() if k.startswith("__inference___call__")
                and k.count("__call__") == 1 and "If" in v)
    # the variable-reading cond is a stateful op (as TensorFlow's cond_v2 chooses), the
    # pure one stateless; the loops are stateless: the one that reads the variable only
    # reads it, so the read is computed once before the loop (loop-invariant code motion,
    # function/control_flow.py) and passed in (a loop that assigns one stays a While)
    assert sorted(op for op in call if op in ("If", "StatelessIf", "While",
                                               "StatelessWhile")) == \
        ["If", "StatelessIf", "StatelessWhile", "StatelessWhile"]
    assert "ReadVariableOp" in call
    # each branch, cond and body is a function of the library; the loop's body holds
    # the nested cond
    nested = [k for k, v in ops.items() if "StatelessIf" in v and k != call]
    assert any("user_body" in k for k in nested)
    for name, body in ops.items():
        for op in body:
            assert op not in ("Placeholder", "While_", "RavelMultiIndex"), (name, op)


@pytest.mark.parametrize("rows,sign", [(3, 1.0), (6, -1.0), (1, 1.0), (2, -1.0)])
def test_round_trip_against_numpy(branchy, rows, sign):
    """Both branches of each cond; the first loop stops at the batch size or at its
    maximum_iterations 4; the second runs until its sum passes 50."""
    module, _, loaded = branchy
    x = sign * np.abs(np.random.RandomState(rows).randn(rows, 3)).astype(np.float32)
    want = _branchy_numpy(x, module.scale.numpy().astype(np.float64))
    for got in (loaded.signatures["serving_default"](x=tf.constant(x)), loaded(x),
                module(x)):
        assert sorted(got) == sorted(want)
        for k, w in want.items():
            np.testing.assert_allclose(got[k].numpy(), w, rtol=2e-6, atol=2e-6, err_msg=k)


@pytest.mark.parametrize("batch,steps", [(1, 1), (3, 7)])
def test_keras_lstm_of_unknown_length(tmp_path, batch, steps):
    model = models.keras_lstm()
    path = str(tmp_path / "lstm")
    model.export(path)
    # the loop over the time steps: the kernels' reads are loop-invariant, computed once
    # before it, so a StatelessWhile (TensorFlow, reading them inside, writes a While)
    assert "StatelessWhile" in {op for body in _library_ops(path).values() for op in body}
    loaded = tf.saved_model.load(path)
    x = np.random.RandomState(steps).randn(batch, steps, 3).astype(np.float32)
    want = model(x, training=False).numpy()
    np.testing.assert_allclose(loaded.serve(x).numpy(), want, rtol=1e-5, atol=1e-6)
    got = tf.keras.layers.TFSMLayer(path, call_endpoint="serve")(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_effects_in_loops_and_conds_run_in_order(tmp_path):
    module = models.LoopAssigns()
    tf.saved_model.save(module, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    for v in (np.array([1.0, 2.0], np.float32), np.arange(5, dtype=np.float32)):
        want = float(np.sum(v.astype(np.float64) ** 2)) + (100.0 if v.size > 3 else -1.0)
        out = loaded.signatures["serving_default"](v=tf.constant(v))
        assert int(out["steps"]) == v.size
        np.testing.assert_allclose(float(out["total"]), want, rtol=1e-6)
        np.testing.assert_allclose(float(loaded.total.numpy()), want, rtol=1e-6)


class Poly(tf.Module):
    """A float64 cond and loop over a variable, for gradients of the restored function."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.random.RandomState(2).randn(3) * 0.5, name="w")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64, name="x")])
    def __call__(self, x):
        y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * self.w, lambda: tf.sin(x))
        _, h = tf.while_loop(lambda i, h: i < 3,
                             lambda i, h: (i + 1, tf.tanh(h) * self.w + x), [0, y])
        return tf.reduce_sum(h * h, axis=1)


def _poly_numpy(x, w):
    h = x * w if x.sum() > 0 else np.sin(x)
    for _ in range(3):
        h = np.tanh(h) * w + x
    return (h * h).sum(axis=1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_gradients_through_restored_cond_and_loop(tmp_path, sign):
    tf.saved_model.save(Poly(), str(tmp_path / "poly"))
    m = tf.saved_model.load(str(tmp_path / "poly"))
    x0 = sign * np.abs(np.random.RandomState(3).randn(2, 3))
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(m(x))
    gx, gw = tape.gradient(loss, [x, m.w])
    w0, eps = m.w.numpy(), 1e-6
    np.testing.assert_allclose(loss.numpy(), _poly_numpy(x0, w0).sum(), rtol=1e-12)
    for grad, base, at in ((gx, x0, lambda v: _poly_numpy(v, w0).sum()),
                           (gw, w0, lambda v: _poly_numpy(x0, v).sum())):
        fd = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            d = np.zeros_like(base)
            d[i] = eps
            fd[i] = (at(base + d) - at(base - d)) / (2 * eps)
        np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_vector_predicate_and_int64_maximum(tmp_path):
    tf.saved_model.save(models.KeywordOrder(), str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    for v, limit in ((np.array([-2.0, 1.0], np.float32), 3), (np.ones(3, np.float32), 0)):
        out = loaded.signatures["serving_default"](v=tf.constant(v),
                                                   limit=tf.constant(limit, tf.int64))
        start = v + 1.0 if v.sum() > 0 else v - 1.0
        np.testing.assert_array_equal(out["y"].numpy(), start * 2.0 ** limit)
        assert int(out["n"]) == limit


def test_gradient_saved_for_a_cond_is_refused_naming_it(tmp_path):
    """A function that takes a gradient through a cond reads what the cond saves for its
    backward pass: that has no TensorFlow lowering yet, and the error says so."""
    class Step(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.float32(2.0), name="w")

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32, name="x")])
        def __call__(self, x):
            with tf.GradientTape() as tape:
                y = tf.cond(x > 0.0, lambda: tf.sin(x * self.w), lambda: x * self.w)
            return tape.gradient(y, self.w)

    with pytest.raises(ValueError, match=r"saved_model: .*(gradient|lowering)"):
        tf.saved_model.save(Step(), str(tmp_path / "m"))
