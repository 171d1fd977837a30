"""Traced benchmarks: the whole gradient computation or training step inside
`tapeflow.function`, against the same hand-written NumPy as bench/reverse_mode.py and
bench/forward_mode.py, in one process; prints ratios and the first-call (trace + build)
time.

W1 op overhead   200 x (y = sin(y) * 1.01 + 0.1) on float32[16] and its gradient, traced
W2 MLP step      784-256-256-10 ReLU, sparse softmax cross-entropy, batch 128, SGD, traced
W4 HVP          sum(tanh(A @ x) ** 2), A float64[500, 500], forward over reverse, traced
W5 JVP chain     the JVP of W1's chain (tangent ones), traced
W6 CNN step      conv 3x3x1->8 + ReLU + 2x2 max pool + dense 10, sparse softmax
                 cross-entropy, batch 32x28x28x1, SGD, traced (bench/cnn.py also times it
                 eagerly, with medians of alternating runs)
W3 elementwise   sum(tanh(x) * x + exp(-x * x)) on float32[4,000,000] and its gradient
W7 deep chain    2000 ops y = y * 0.999 + 0.001 on float32[100,000] and the gradient; and
                 the peak memory growth of one call (tracemalloc)

With the jit extra, elementwise regions run fused (function/fuse.py); `--no-jit` traces
with jit_compile=False. The first call includes tracing, optimizing and (cold cache)
compiling fused kernels; set TAPEFLOW_CACHE to an empty folder for a cold cache.

Run: python bench/traced.py [--no-jit]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))
import tapeflow as tf  # noqa: E402
from tapeflow._core.jit import set_background, wait_compiled  # noqa: E402
from cnn import cnn_batch, cnn_params, w6_numpy, w6_tf  # noqa: E402
from forward_mode import w4_forward_over_back, w4_numpy  # noqa: E402
from reverse_mode import (best_of, mlp_params, peak_growth_mb, w1_numpy, w1_tf,  # noqa: E402
                          w2_numpy, w2_tf, w3_numpy, w3_tf, w7_loss_and_gradient, w7_numpy,
                          w7_tf)

JIT = "--no-jit" not in sys.argv


def function(fn, **kwargs):
    return tf.function(fn, jit_compile=None if JIT else False, **kwargs)


def first_call(fn) -> float:
    """The first call's time (tracing, optimizing); then three more calls, from which
    kernels not in the disk cache compile in the background (fused kernels from their
    second call, direct convolutions from their third), waiting for those compiles to
    finish, so the steady state is timed."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    set_background(False)  # (the steady state is the compiled one: compile on these calls)
    try:
        for _ in range(3):
            fn()
            wait_compiled()
    finally:
        set_background(True)
    return first


def w5_numpy(x):
    y, t = x, np.ones_like(x)
    for _ in range(200):
        t = t * np.cos(y) * np.float32(1.01)
        y = np.sin(y) * np.float32(1.01) + np.float32(0.1)
    return y, t


def w5_tf(x):
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        y = x
        for _ in range(200):
            y = tf.sin(y) * 1.01 + 0.1
    return y, acc.jvp(y)


def main():
    rng = np.random.default_rng(0)
    rows = []
    x16 = np.linspace(-1, 1, 16).astype(np.float32)
    t16 = tf.constant(x16)
    w1 = function(w1_tf)
    trace_w1 = first_call(lambda: w1(t16))
    np.testing.assert_allclose(w1(t16).numpy(), w1_numpy(x16), rtol=1e-4)
    rows.append(("W1 op overhead, traced", best_of(lambda: w1_numpy(x16), 200),
                 best_of(lambda: w1(t16), 200), trace_w1))

    ps = mlp_params(rng)
    vs = [tf.Variable(p.copy()) for p in ps]
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    lb = rng.integers(0, 10, 128).astype(np.int32)
    txb, tlb = tf.constant(xb), tf.constant(lb)
    w2 = function(lambda x, y: w2_tf(vs, x, y), input_signature=[
        tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)])
    trace_w2 = first_call(lambda: w2(txb, tlb))
    rows.append(("W2 MLP training step, traced", best_of(lambda: w2_numpy(ps, xb, lb), 30),
                 best_of(lambda: w2(txb, tlb), 30), trace_w2))

    a4 = rng.standard_normal((500, 500)) / np.sqrt(500)
    x4, v4 = rng.standard_normal(500), rng.standard_normal(500)
    ta4, tx4, tv4 = tf.constant(a4), tf.constant(x4), tf.constant(v4)
    w4 = function(w4_forward_over_back)
    trace_w4 = first_call(lambda: w4(ta4, tx4, tv4))
    np.testing.assert_allclose(w4(ta4, tx4, tv4).numpy(), w4_numpy(a4, x4, v4), rtol=1e-9)
    rows.append(("W4 HVP 500x500 f64, traced", best_of(lambda: w4_numpy(a4, x4, v4), 200),
                 best_of(lambda: w4(ta4, tx4, tv4), 200), trace_w4))

    w5 = function(w5_tf)
    trace_w5 = first_call(lambda: w5(t16))
    np.testing.assert_allclose(w5(t16)[1].numpy(), w5_numpy(x16)[1], rtol=1e-4)
    rows.append(("W5 JVP chain, traced", best_of(lambda: w5_numpy(x16), 200),
                 best_of(lambda: w5(t16), 200), trace_w5))

    ps6 = cnn_params(rng)
    vs6 = [tf.Variable(p.copy()) for p in ps6]
    x6, l6 = cnn_batch(rng)
    tx6, tl6 = tf.constant(x6), tf.constant(l6)
    w6 = function(lambda x, y: w6_tf(vs6, x, y), input_signature=[
        tf.TensorSpec([None, 28, 28, 1], tf.float32), tf.TensorSpec([None], tf.int32)])
    trace_w6 = first_call(lambda: w6(tx6, tl6))
    rows.append(("W6 CNN training step, traced", best_of(lambda: w6_numpy(ps6, x6, l6), 30),
                 best_of(lambda: w6(tx6, tl6), 30), trace_w6))

    x4m = rng.standard_normal(4_000_000).astype(np.float32)
    t4m = tf.constant(x4m)
    w3 = function(w3_tf)
    trace_w3 = first_call(lambda: w3(t4m))
    np.testing.assert_allclose(w3(t4m).numpy(), w3_numpy(x4m)[1], rtol=1e-4, atol=1e-5)
    rows.append(("W3 big elementwise, traced", best_of(lambda: w3_numpy(x4m), 7),
                 best_of(lambda: w3(t4m), 7), trace_w3))

    x100k = rng.standard_normal(100_000).astype(np.float32)
    t100k = tf.constant(x100k)
    w7 = function(w7_tf)
    trace_w7 = first_call(lambda: w7(t100k))
    np.testing.assert_allclose(w7(t100k).numpy(), w7_numpy(x100k), rtol=1e-4)
    rows.append(("W7 deep chain, traced", best_of(lambda: w7_numpy(x100k), 5),
                 best_of(lambda: w7(t100k), 5), trace_w7))
    # the gradient of this linear chain is a constant, which constant folding computes at
    # trace time; returning the loss too makes the forward chain run on every call
    w7b = function(w7_loss_and_gradient)
    trace_w7b = first_call(lambda: w7b(t100k))
    np.testing.assert_allclose(w7b(t100k)[1].numpy(), w7_numpy(x100k), rtol=1e-4)
    rows.append(("W7 chain, loss and gradient", best_of(lambda: w7_numpy(x100k), 5),
                 best_of(lambda: w7b(t100k), 5), trace_w7b))
    mem_np = peak_growth_mb(lambda: w7_numpy(x100k))
    mem_tf = peak_growth_mb(lambda: w7b(t100k))

    print(f"{'workload':32s} {'numpy ms':>9s} {'tapeflow ms':>12s} {'ratio':>7s} "
          f"{'first call ms':>13s}")
    for name, t_np, t_tf, t_first in rows:
        print(f"{name:32s} {t_np * 1e3:9.3f} {t_tf * 1e3:12.3f} {t_tf / t_np:6.2f}x "
              f"{t_first * 1e3:13.1f}")
    print(f"W7 peak memory growth: numpy {mem_np:.1f} MB, tapeflow {mem_tf:.1f} MB "
          f"({'fused' if JIT else 'jit_compile=False'})")


if __name__ == "__main__":
    main()
