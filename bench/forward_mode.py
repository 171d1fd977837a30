"""Forward mode against hand-written NumPy: ratios of best-of-N wall times, one process.

W4  HVP of f(x) = sum(tanh(A @ x) ** 2), A float64[500, 500]: forward-over-reverse
    (`autodiff.hvp`) vs the closed form in NumPy (3 matvecs). Target <= 3x.
W5  JVP (tangent ones) of 200 steps of y = sin(y) * 1.01 + 0.1 on float32[16] (600 ops)
    vs NumPy forward mode written by hand. Target <= 5x.

Run: python bench/forward_mode.py
"""
from __future__ import annotations

import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import tapeflow as tf  # noqa: E402


def best(fn, number, repeat=7) -> float:
    """Best time per call in milliseconds."""
    fn()  # warm up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


# --------------------------------------------------------------------------- W4


def w4_numpy(a_np, x_np, v_np):
    # f = sum(s^2), s = tanh(u), u = A x: grad = A^T (2 s (1 - s^2));
    # H v = A^T (d/du[2 s (1 - s^2)] * (A v)) with d/du = 2 (1 - s^2)(1 - 3 s^2).
    s = np.tanh(a_np @ x_np)
    s2 = s * s
    return a_np.T @ (2.0 * (1.0 - s2) * (1.0 - 3.0 * s2) * (a_np @ v_np))


def w4_forward_over_back(a, x, v):
    """The HVP as TF2 code writes it (a ForwardAccumulator over a GradientTape), so the
    same source runs on tapeflow and TensorFlow (bench/peers.py, bench/traced.py)."""
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.square(tf.tanh(tf.linalg.matvec(a, x))))
        g = tape.gradient(y, x)
    return acc.jvp(g)


def w4():
    rng = np.random.default_rng(0)
    n = 500
    a_np = rng.standard_normal((n, n)) / np.sqrt(n)
    x_np = rng.standard_normal(n)
    v_np = rng.standard_normal(n)
    a, x, v = tf.constant(a_np), tf.constant(x_np), tf.constant(v_np)

    def f(x):
        return tf.reduce_sum(tf.square(tf.tanh(tf.linalg.matvec(a, x))))

    def ours():
        return tf.autodiff.hvp(f, x, v)

    def numpy_hvp():
        return w4_numpy(a_np, x_np, v_np)

    def gradient_only():  # context: the reverse pass alone, without forward mode
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)

    np.testing.assert_allclose(ours().numpy(), numpy_hvp(), rtol=1e-9, atol=1e-12)
    t_np, t_tf = best(numpy_hvp, 200), best(ours, 50)
    t_grad = best(gradient_only, 50)
    return ("W4 HVP tanh(A@x)^2, A 500x500 f64", t_np, t_tf, 3.0,
            ("  (gradient alone, tape only)", t_grad))


# --------------------------------------------------------------------------- W5


def w5():
    x_np = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    x = tf.constant(x_np)
    ones = tf.ones([16])
    steps = 200

    def ours():
        with tf.autodiff.ForwardAccumulator(x, ones) as acc:
            y = x
            for _ in range(steps):
                y = tf.sin(y) * 1.01 + 0.1
        return acc.jvp(y)

    c101, c01 = np.float32(1.01), np.float32(0.1)

    def numpy_jvp():
        y, t = x_np, np.ones(16, dtype=np.float32)
        for _ in range(steps):
            t = t * np.cos(y)      # sin
            y = np.sin(y)
            y = y * c101           # mul
            t = t * c101
            y = y + c01            # add (tangent passes through)
        return t

    def primal_only():  # context: the same chain with no accumulator
        y = x
        for _ in range(steps):
            y = tf.sin(y) * 1.01 + 0.1
        return y

    np.testing.assert_allclose(ours().numpy(), numpy_jvp(), rtol=1e-4, atol=1e-5)
    t_np, t_tf = best(numpy_jvp, 20), best(ours, 5)
    t_primal = best(primal_only, 5)
    return ("W5 JVP chain of 600 ops, f32[16]", t_np, t_tf, 5.0,
            ("  (primal chain alone, no accumulator)", t_primal))


def main():
    print(f"{'workload':38s} {'numpy ms':>9s} {'tapeflow ms':>12s} {'ratio':>7s} {'target':>7s}")
    for work in (w4, w5):
        name, t_np, t_tf, target, (context, t_context) = work()
        ratio = t_tf / t_np
        flag = "ok" if ratio <= target else "SLOW"
        print(f"{name:38s} {t_np:9.3f} {t_tf:12.3f} {ratio:6.2f}x {target:6.1f}x {flag}")
        print(f"{context:38s} {'':9s} {t_context:12.3f} {t_context / t_np:6.2f}x")


if __name__ == "__main__":
    main()
