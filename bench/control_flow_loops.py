"""Per-iteration cost of traced loops (#29): a `tf.while_loop` with a tiny body, its
gradient, and a hand-written GRU cell stepped by an autograph `for` over `tf.range`.

    .venv/bin/python bench/control_flow_loops.py [--steps N]

Prints CPU microseconds per loop iteration (best of 9 runs) and, for the GRU, the ops of
the compiled loop body (how many FusedElementwise kernels one step runs).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tapeflow as tf


def _best_us(fn, iterations: int, repeats: int = 9) -> float:
    fn()  # trace and compile; fused kernels compile in a background thread:
    time.sleep(3)  # let them finish
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()  # CPU time of this process: other processes' load
        fn()                       # on a shared machine counts less than in wall time
        times.append(time.process_time() - t0)
    return min(times) / iterations * 1e6  # best of the runs: the machine is shared


def tiny_loop(n: int) -> tuple[float, float]:
    """(us per iteration forward, us per iteration forward + gradient) of a 3-op body."""
    x0 = tf.constant(np.linspace(0.0, 1.0, 4, dtype=np.float32))

    @tf.function
    def fwd(x):
        return tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 0.999 + 0.001),
                             (tf.constant(0), x))[1]

    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fwd(x))
        return tape.gradient(y, x)

    return (_best_us(lambda: fwd(x0).numpy(), n), _best_us(lambda: grad(x0).numpy(), n))


def gru(steps: int, batch: int = 32, width: int = 32, hidden: int = 64):
    """(us per time step forward + gradient, ops of the body's compiled program)."""
    rng = np.random.default_rng(0)

    def var(*shape):
        return tf.Variable((rng.standard_normal(shape) * 0.1).astype(np.float32))
    wz, wr, wh = var(width, hidden), var(width, hidden), var(width, hidden)
    uz, ur, uh = var(hidden, hidden), var(hidden, hidden), var(hidden, hidden)
    bz, br, bh = var(hidden), var(hidden), var(hidden)
    variables = [wz, wr, wh, uz, ur, uh, bz, br, bh]
    xs = tf.constant(rng.standard_normal((steps, batch, width)).astype(np.float32))

    @tf.function
    def step(xs):
        with tf.GradientTape() as tape:
            h = tf.zeros([batch, hidden])
            for t in tf.range(steps):
                x = xs[t]
                z = tf.sigmoid(tf.matmul(x, wz) + tf.matmul(h, uz) + bz)
                r = tf.sigmoid(tf.matmul(x, wr) + tf.matmul(h, ur) + br)
                c = tf.tanh(tf.matmul(x, wh) + tf.matmul(r * h, uh) + bh)
                h = z * h + (1.0 - z) * c
            loss = tf.reduce_mean(tf.square(h))
        return loss, tape.gradient(loss, variables)

    us = _best_us(lambda: step(xs)[0].numpy(), steps)
    cf = step.get_concrete_function(xs)
    body_ops = []
    for node in cf.graph.nodes:
        if node.op == "While":
            body = node.attrs["body"]
            prog = (body.compile() if hasattr(body, "compile")
                    else body._program(tf.find_backend("numpy")))
            body_ops = [n.op for n in prog.graph.nodes if n.op not in ("Placeholder",)]
    return us, body_ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    f, g = tiny_loop(args.steps)
    print(f"tiny while_loop ({args.steps} iterations): forward {f:.2f} us/iteration, "
          f"forward + gradient {g:.2f} us/iteration")
    us, ops = gru(64)
    print(f"GRU cell, 64 steps, batch 32: {us:.1f} us/step (forward + gradient)")
    print(f"  loop body program: {len(ops)} nodes, "
          f"{ops.count('FusedElementwise')} FusedElementwise: {' '.join(ops)}")


if __name__ == "__main__":
    main()
