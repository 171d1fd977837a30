"""Peer benchmark: each traced workload of bench/traced.py run side by side in one process
by hand-written NumPy, traced tapeflow (`tapeflow.function`), TensorFlow (`tf.function`,
the *same* workload source with `tf` bound to TensorFlow) and JAX (`jax.jit`, written
here with `jax.grad` / `jax.jvp`); prints each one's steady-state time as a ratio to
NumPy, and its first call (trace + optimize + compile) in ms.

TensorFlow and JAX are optional: a peer that is not installed gets no column. Run, with a
cold tapeflow kernel cache for honest first calls:

    TAPEFLOW_CACHE=$(mktemp -d) OPENBLAS_NUM_THREADS=1 python bench/peers.py

(`bench/traced.py` times tapeflow alone, with its memory figures.)
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))
import tapeflow  # noqa: E402
import cnn  # noqa: E402
import forward_mode as fm  # noqa: E402
from tapeflow._core.jit import set_background, wait_compiled  # noqa: E402
import reverse_mode as rm  # noqa: E402
import traced  # noqa: E402

try:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow  # optional peer
except ImportError:
    tensorflow = None
try:
    import jax  # optional peer
    import jax.numpy as jnp
except ImportError:
    jax = None


def _bind(lib) -> None:
    """Point the workload modules' `tf` at `lib` (tapeflow or TensorFlow): the workloads
    are ordinary TF2 code, so the same source runs on both."""
    for mod in (rm, cnn, traced, fm):
        mod.tf = lib


def timed(fn, repeat: int) -> tuple[float, float]:
    """(first call s, best of `repeat` later calls s). tapeflow compiles fused kernels in
    the background while its first calls run unfused (and a kernel's variants, such as its
    multi-threaded loop, compile on the calls that first need them): the steady state is
    timed after a few warm-up calls and those compiles, so a compile on the other core
    does not slow the timed calls."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    wait_compiled()
    # (a kernel compiles once its NumPy blocks took COMPILE_AFTER_SECONDS: the steady
    # state is the compiled one, so the warm-up compiles every kernel on its call)
    set_background(False)
    try:
        for _ in range(3):
            fn()
    finally:
        set_background(True)
    wait_compiled()
    return first, rm.best_of(fn, repeat)


# ---------------------------------------------------------------- JAX versions
def jax_workloads(rng_data: dict) -> dict:
    def w1(x):
        def loss(x):
            y = x
            for _ in range(200):
                y = jnp.sin(y) * 1.01 + 0.1
            return jnp.sum(y)
        return jax.grad(loss)(x)

    def w5(x):
        def chain(x):
            y = x
            for _ in range(200):
                y = jnp.sin(y) * 1.01 + 0.1
            return y
        return jax.jvp(chain, (x,), (jnp.ones_like(x),))

    def mlp_loss(ps, x, labels):
        w1_, b1, w2_, b2, w3, b3 = ps
        h = jax.nn.relu(x @ w1_ + b1)
        h = jax.nn.relu(h @ w2_ + b2)
        logits = h @ w3 + b3
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def w2(ps, x, labels):
        loss, grads = jax.value_and_grad(mlp_loss)(ps, x, labels)
        return loss, [p - 0.01 * g for p, g in zip(ps, grads)]

    def cnn_loss(ps, x, labels):
        w, b, w2_, b2 = ps
        h = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + b)
        p = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                  "VALID")
        logits = p.reshape(p.shape[0], -1) @ w2_ + b2
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def w6(ps, x, labels):
        loss, grads = jax.value_and_grad(cnn_loss)(ps, x, labels)
        return loss, [p - 0.01 * g for p, g in zip(ps, grads)]

    def w4(a, x, v):
        def f(x):
            return jnp.sum(jnp.square(jnp.tanh(a @ x)))
        return jax.jvp(jax.grad(f), (x,), (v,))[1]

    def w3(x):
        return jax.grad(lambda x: jnp.sum(jnp.tanh(x) * x + jnp.exp(-x * x)))(x)

    def w7(x):
        def loss(x):
            y = x
            for _ in range(1000):
                y = y * 0.999 + 0.001
            return jnp.sum(y)
        return jax.value_and_grad(loss)(x)

    d = {k: jax.device_put(v) if not isinstance(v, list) else [jax.device_put(a) for a in v]
         for k, v in rng_data.items()}
    f1, f5, f2, f6, f3, f7, f4 = (jax.jit(f) for f in (w1, w5, w2, w6, w3, w7, w4))
    block = jax.block_until_ready
    return {
        "W1": lambda: block(f1(d["x16"])),
        "W2": lambda: block(f2(d["mlp"], d["xb"], d["lb"])),
        "W4": lambda: block(f4(d["a4"], d["x4"], d["v4"])),
        "W5": lambda: block(f5(d["x16"])),
        "W6": lambda: block(f6(d["cnn"], d["x6"], d["l6"])),
        "W3": lambda: block(f3(d["x4m"])),
        "W7": lambda: block(f7(d["x100k"])),
    }


# ---------------------------------------------------------------- TF-API versions
def tf_workloads(lib, data: dict) -> dict:
    """The workloads as bench/traced.py traces them, on `lib` (tapeflow or TensorFlow)."""
    _bind(lib)
    c = lib.constant
    x16, xb, lb, x6, l6 = c(data["x16"]), c(data["xb"]), c(data["lb"]), c(data["x6"]), \
        c(data["l6"])
    x4m, x100k = c(data["x4m"]), c(data["x100k"])
    vs = [lib.Variable(p.copy()) for p in data["mlp"]]
    vs6 = [lib.Variable(p.copy()) for p in data["cnn"]]
    f1 = lib.function(rm.w1_tf)
    f5 = lib.function(traced.w5_tf)
    f2 = lib.function(lambda x, y: rm.w2_tf(vs, x, y), input_signature=[
        lib.TensorSpec([None, 784], lib.float32), lib.TensorSpec([None], lib.int32)])
    f6 = lib.function(lambda x, y: cnn.w6_tf(vs6, x, y), input_signature=[
        lib.TensorSpec([None, 28, 28, 1], lib.float32), lib.TensorSpec([None], lib.int32)])
    f3 = lib.function(rm.w3_tf)
    f4 = lib.function(fm.w4_forward_over_back)
    a4, x4, v4 = c(data["a4"]), c(data["x4"]), c(data["v4"])
    f7 = lib.function(rm.w7_loss_and_gradient)

    def done(out):  # results are computed when returned (eager semantics); read one
        first = out[0] if isinstance(out, (list, tuple)) else out
        first.numpy()
    return {
        "W1": lambda: done(f1(x16)),
        "W2": lambda: done(f2(xb, lb)),
        "W4": lambda: done(f4(a4, x4, v4)),
        "W5": lambda: done(f5(x16)),
        "W6": lambda: done(f6(x6, l6)),
        "W3": lambda: done(f3(x4m)),
        "W7": lambda: done(f7(x100k)),
    }


def main() -> None:
    rng = np.random.default_rng(0)
    x6, l6 = cnn.cnn_batch(rng)
    data = {"x16": np.linspace(-1, 1, 16).astype(np.float32),
            "mlp": rm.mlp_params(rng),
            "xb": rng.standard_normal((128, 784)).astype(np.float32),
            "lb": rng.integers(0, 10, 128).astype(np.int32),
            "cnn": cnn.cnn_params(rng), "x6": x6, "l6": l6.astype(np.int32),
            "x4m": rng.standard_normal(4_000_000).astype(np.float32),
            "x100k": rng.standard_normal(100_000).astype(np.float32),
            "a4": rng.standard_normal((500, 500)) / np.sqrt(500),
            "x4": rng.standard_normal(500), "v4": rng.standard_normal(500)}
    mlp_np = [p.copy() for p in data["mlp"]]
    cnn_np = [p.copy() for p in data["cnn"]]
    numpy = {
        "W1": lambda: rm.w1_numpy(data["x16"]),
        "W2": lambda: rm.w2_numpy(mlp_np, data["xb"], data["lb"]),
        "W4": lambda: fm.w4_numpy(data["a4"], data["x4"], data["v4"]),
        "W5": lambda: traced.w5_numpy(data["x16"]),
        "W6": lambda: cnn.w6_numpy(cnn_np, data["x6"], data["l6"]),
        "W3": lambda: rm.w3_numpy(data["x4m"]),
        "W7": lambda: rm.w7_numpy(data["x100k"]),
    }
    repeats = {"W1": 200, "W2": 30, "W4": 200, "W5": 200, "W6": 30, "W3": 7, "W7": 7}
    runners = {"tapeflow": (tapeflow, tf_workloads(tapeflow, data))}
    if tensorflow is not None:
        runners["tf.function"] = (tensorflow, tf_workloads(tensorflow, data))
    if jax is not None:
        runners["jax.jit"] = (None, jax_workloads(data))
    results: dict = {}
    for w, rep in repeats.items():
        results[(w, "numpy")] = timed(numpy[w], rep)
        for name, (lib, fns) in runners.items():
            if lib is not None:
                _bind(lib)  # functions trace on their first call, with this `tf`
            # each framework starts on a quiet machine: the last one's worker threads
            # (TensorFlow's and XLA's pools spin a while before they sleep) are idle
            time.sleep(0.5)
            results[(w, name)] = timed(fns[w], rep)
            print(f"  {w} {name}: first {results[(w, name)][0] * 1e3:.0f} ms, "
                  f"best {results[(w, name)][1] * 1e3:.3f} ms", file=sys.stderr, flush=True)
    names = list(runners)
    print(f"{'':4s} {'numpy ms':>9s} " + " ".join(f"{n + ' ratio':>18s}" for n in names)
          + "   first call ms: " + " / ".join(names))
    for w in repeats:
        t_np = results[(w, "numpy")][1]
        ratios = " ".join(f"{results[(w, n)][1] / t_np:17.2f}x" for n in names)
        firsts = " / ".join(f"{results[(w, n)][0] * 1e3:.0f}" for n in names)
        print(f"{w:4s} {t_np * 1e3:9.3f} {ratios}   {firsts}")


if __name__ == "__main__":
    main()
