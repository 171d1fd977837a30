"""Reverse-mode benchmarks: tapeflow vs hand-written NumPy (forward + hand-derived backward)
of the same computation, timed in one process; prints the ratio for each workload.

W1 op overhead   x float32[16]; 200 x (y = sin(y) * 1.01 + 0.1); loss = sum(y); d loss/dx
W2 MLP step      784-256-256-10 ReLU, sparse softmax cross-entropy, batch 128, SGD update
W3 elementwise   x float32[4,000,000]; loss = sum(tanh(x) * x + exp(-x * x)); gradient
W7 deep chain    2000 ops y = y * 0.999 + 0.001 on float32[100,000]; gradient; and the
                 peak memory growth of one call (tracemalloc, NumPy allocations included)

Run: python bench/reverse_mode.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import tapeflow as tf  # noqa: E402


def best_of(fn, repeat):
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# ---------------------------------------------------------------- W1
def w1_numpy(x):
    ys = [x]
    y = x
    for _ in range(200):
        y = np.sin(y) * np.float32(1.01) + np.float32(0.1)
        ys.append(y)
    g = np.ones_like(x)
    for i in range(200, 0, -1):
        g = g * np.float32(1.01) * np.cos(ys[i - 1])
    return g


def w1_tf(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(200):
            y = tf.sin(y) * 1.01 + 0.1
        loss = tf.reduce_sum(y)
    return tape.gradient(loss, x)


# ---------------------------------------------------------------- W2
def mlp_params(rng):
    sizes = [784, 256, 256, 10]
    ps = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ps += [(rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32),
               np.zeros(b, np.float32)]
    return ps


def w2_numpy(ps, x, labels, lr=np.float32(0.01)):
    w1, b1, w2, b2, w3, b3 = ps
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    n = len(labels)
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - logits[np.arange(n), labels])
    d = e / s
    d[np.arange(n), labels] -= 1
    d /= n
    gw3, gb3 = h2.T @ d, d.sum(0)
    d = (d @ w3.T) * (z2 > 0)
    gw2, gb2 = h1.T @ d, d.sum(0)
    d = (d @ w2.T) * (z1 > 0)
    gw1, gb1 = x.T @ d, d.sum(0)
    for p, g in zip(ps, (gw1, gb1, gw2, gb2, gw3, gb3)):
        p -= lr * g
    return loss


def w2_tf(vs, x, labels, lr=0.01):
    w1, b1, w2, b2, w3, b3 = vs
    with tf.GradientTape() as tape:
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        h = tf.nn.relu(tf.matmul(h, w2) + b2)
        logits = tf.matmul(h, w3) + b3
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, vs)
    for v, g in zip(vs, grads):
        v.assign_sub(g * lr)
    return loss


# ---------------------------------------------------------------- W3
def w3_numpy(x):
    t = np.tanh(x)
    sq = x * x
    e = np.exp(-sq)
    loss = np.sum(t * x + e)
    g = (1 - t * t) * x + t - 2 * x * e
    return loss, g


def w3_tf(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.tanh(x) * x + tf.exp(-x * x))
    return tape.gradient(loss, x)


# ---------------------------------------------------------------- W7
def w7_numpy(x):
    y = x
    for _ in range(1000):
        y = y * np.float32(0.999) + np.float32(0.001)
    g = np.ones_like(x)
    for _ in range(1000):
        g = g * np.float32(0.999)
    return g


def w7_loss_and_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(1000):
            y = y * 0.999 + 0.001
        loss = tf.reduce_sum(y)
    return loss, tape.gradient(loss, x)


def w7_tf(x):
    return w7_loss_and_gradient(x)[1]


def peak_growth_mb(fn):
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def main():
    quick = "--quick" in sys.argv
    rep = 3 if quick else 7
    rng = np.random.default_rng(0)
    rows = []

    x16 = rng.standard_normal(16).astype(np.float32)
    np.testing.assert_allclose(w1_tf(tf.constant(x16)).numpy(), w1_numpy(x16), rtol=1e-4)
    rows.append(("W1 op overhead (600 ops)", best_of(lambda: w1_numpy(x16), rep),
                 best_of(lambda: w1_tf(tf.constant(x16)), rep)))

    ps = mlp_params(rng)
    vs = [tf.Variable(p.copy()) for p in ps]
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    lb = rng.integers(0, 10, 128).astype(np.int32)
    ref_loss = w2_numpy([p.copy() for p in ps], xb, lb)
    np.testing.assert_allclose(float(w2_tf([tf.Variable(p.copy()) for p in ps],
                                           tf.constant(xb), tf.constant(lb))), ref_loss,
                               rtol=1e-4)
    xt, lt = tf.constant(xb), tf.constant(lb)
    rows.append(("W2 MLP training step", best_of(lambda: w2_numpy(ps, xb, lb), rep),
                 best_of(lambda: w2_tf(vs, xt, lt), rep)))

    x4m = rng.standard_normal(4_000_000).astype(np.float32)
    t4m = tf.constant(x4m)
    np.testing.assert_allclose(w3_tf(t4m).numpy(), w3_numpy(x4m)[1], rtol=1e-4, atol=1e-5)
    rows.append(("W3 big elementwise", best_of(lambda: w3_numpy(x4m), rep),
                 best_of(lambda: w3_tf(t4m), rep)))

    x100k = rng.standard_normal(100_000).astype(np.float32)
    t100k = tf.constant(x100k)
    np.testing.assert_allclose(w7_tf(t100k).numpy(), w7_numpy(x100k), rtol=1e-4)
    rows.append(("W7 deep chain (2000 ops)", best_of(lambda: w7_numpy(x100k), max(2, rep // 2)),
                 best_of(lambda: w7_tf(t100k), max(2, rep // 2))))
    mem_np = peak_growth_mb(lambda: w7_numpy(x100k))
    mem_tf = peak_growth_mb(lambda: w7_tf(t100k))

    print(f"{'workload':28s} {'numpy ms':>10s} {'tapeflow ms':>12s} {'ratio':>7s}")
    for name, t_np, t_tf in rows:
        print(f"{name:28s} {t_np * 1e3:10.2f} {t_tf * 1e3:12.2f} {t_tf / t_np:6.2f}x")
    print(f"W7 peak memory growth: numpy {mem_np:.1f} MB, tapeflow {mem_tf:.1f} MB")


if __name__ == "__main__":
    main()
