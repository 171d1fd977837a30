"""tapeflow on the CuPy backend against PyTorch on the same GPU: W3, W2 and W6, eager and
traced (tf.function), one process, medians of synchronized runs; prints the ratios.

W3 elementwise   sum(tanh(x) * x + exp(-x * x)) on float32[4,000,000] and its gradient
W2 MLP step      784-256-256-10 ReLU, sparse softmax cross-entropy, batch 128, SGD update
W6 CNN step      conv 3x3x1->8 VALID + bias + ReLU, 2x2 max pool, dense 1352->10, sparse
                 softmax cross-entropy (mean), SGD update of the 4 parameters

The workloads are bench/reverse_mode.py's and bench/cnn.py's tapeflow functions as they
are; PyTorch runs the same computations eagerly (NCHW for the CNN, its native layout).
A ratio is tapeflow's time over PyTorch's (lower is better, 1.0 is parity). Ops that fell
back to NumPy on the way (docs/backends.md) are listed: each one is a host round trip.

Run: python bench/gpu.py [--backend cupy|array_api] [--repeat N] [--json PATH]
(`--backend array_api` runs everything on array-api-strict on the CPU, torch on the CPU
if it is installed: a smoke test of this script without a GPU.)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))
import tapeflow as tf  # noqa: E402
from cnn import FLAT, cnn_batch, cnn_params, w6_tf  # noqa: E402
from reverse_mode import mlp_params, w2_tf, w3_numpy, w3_tf  # noqa: E402
from tapeflow.backends.array_api import FallbackWarning  # noqa: E402


def _args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cupy", choices=["cupy", "array_api"])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--size", type=int, default=4_000_000, help="W3's element count")
    p.add_argument("--json", default=None, help="also write the results here")
    return p.parse_args()


def _syncer(backend: str):
    """A function waiting for the device to finish queued work (timing needs it)."""
    if backend == "cupy":
        import cupy  # optional: only this benchmark needs CuPy
        return cupy.cuda.runtime.deviceSynchronize
    return lambda: None


def median_ms(fn, sync, repeat: int) -> float:
    fn()  # warm up (kernel compilation, caches, a first trace)
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# ---------------------------------------------------------------- PyTorch versions
def torch_workloads(torch, dev, rng, size):
    F = torch.nn.functional
    x3 = torch.tensor(rng.standard_normal(size).astype(np.float32), device=dev)

    def w3():
        x = x3.detach().requires_grad_(True)
        loss = (torch.tanh(x) * x + torch.exp(-x * x)).sum()
        return torch.autograd.grad(loss, x)[0]

    ps = [torch.tensor(p, device=dev, requires_grad=True) for p in mlp_params(rng)]
    xb = torch.tensor(rng.standard_normal((128, 784)).astype(np.float32), device=dev)
    lb = torch.tensor(rng.integers(0, 10, 128), device=dev)

    def w2():
        w1, b1, w2_, b2, w3_, b3 = ps
        h = F.relu(xb @ w1 + b1)
        h = F.relu(h @ w2_ + b2)
        loss = F.cross_entropy(h @ w3_ + b3, lb)
        grads = torch.autograd.grad(loss, ps)
        with torch.no_grad():
            for p, g in zip(ps, grads):
                p -= 0.01 * g
        return loss

    w, b, wd, bd = cnn_params(rng)
    cw = [torch.tensor(np.ascontiguousarray(w.transpose(3, 2, 0, 1)), device=dev,
                       requires_grad=True),
          torch.tensor(b, device=dev, requires_grad=True),
          torch.tensor(wd, device=dev, requires_grad=True),
          torch.tensor(bd, device=dev, requires_grad=True)]
    x6, l6 = cnn_batch(rng)
    x6 = torch.tensor(np.ascontiguousarray(x6.transpose(0, 3, 1, 2)), device=dev)
    l6 = torch.tensor(l6.astype(np.int64), device=dev)

    def w6():
        k, bias, dense, dbias = cw
        h = F.max_pool2d(F.relu(F.conv2d(x6, k) + bias[None, :, None, None]), 2)
        # flattened in NHWC order, as tapeflow's reshape of its NHWC activations
        logits = h.permute(0, 2, 3, 1).reshape(-1, FLAT) @ dense + dbias
        loss = F.cross_entropy(logits, l6)
        grads = torch.autograd.grad(loss, cw)
        with torch.no_grad():
            for p, g in zip(cw, grads):
                p -= 0.01 * g
        return loss

    return {"W3": w3, "W2": w2, "W6": w6}


# ---------------------------------------------------------------- tapeflow versions
def tapeflow_workloads(rng, size):
    x3np = rng.standard_normal(size).astype(np.float32)
    x3 = tf.constant(x3np)
    got = w3_tf(x3).numpy()  # (also moves nothing: x3 is already on the backend)
    np.testing.assert_allclose(got, w3_numpy(x3np)[1], rtol=1e-4, atol=1e-5)

    vs = [tf.Variable(p) for p in mlp_params(rng)]
    xb = tf.constant(rng.standard_normal((128, 784)).astype(np.float32))
    lb = tf.constant(rng.integers(0, 10, 128).astype(np.int32))

    vs6 = [tf.Variable(p) for p in cnn_params(rng)]
    x6, l6 = (tf.constant(a) for a in cnn_batch(rng))

    w2_traced = tf.function(lambda x, y: w2_tf(vs, x, y))
    w6_traced = tf.function(lambda x, y: w6_tf(vs6, x, y))
    w3_traced = tf.function(w3_tf)
    return {
        "W3": (lambda: w3_tf(x3), lambda: w3_traced(x3)),
        "W2": (lambda: w2_tf(vs, xb, lb), lambda: w2_traced(xb, lb)),
        "W6": (lambda: w6_tf(vs6, x6, l6), lambda: w6_traced(x6, l6)),
    }


def main():
    args = _args()
    if args.backend not in tf.backend_names() or not tf.set_backend(args.backend):
        sys.exit(f"bench/gpu.py: backend {args.backend!r} is not available here "
                 f"(registered: {tf.backend_names()}); see docs/backends.md")
    sync = _syncer(args.backend)
    print(f"tapeflow backend: {tf.get_backend()} ({tf.find_backend(args.backend)!r}); "
          f"GPUs: {[d.name for d in tf.config.list_physical_devices('GPU')]}")
    rng = np.random.default_rng(0)
    fell_back = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FallbackWarning)
        ours = tapeflow_workloads(rng, args.size)
        results = {}
        for name, (eager, traced) in ours.items():
            results[name] = {"tapeflow_eager_ms": median_ms(eager, sync, args.repeat),
                             "tapeflow_traced_ms": median_ms(traced, sync, args.repeat)}
        fell_back = sorted({str(w.message).split(":")[0] for w in caught
                            if issubclass(w.category, FallbackWarning)})
    try:
        import torch  # optional: the peer this benchmark compares with
    except ImportError:
        torch = None
    dev = None
    if torch is not None:
        dev = "cuda" if args.backend == "cupy" else "cpu"
        if dev == "cuda" and not torch.cuda.is_available():
            dev = None
    if dev is not None:
        tsync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        for name, fn in torch_workloads(torch, dev, np.random.default_rng(0),
                                        args.size).items():
            results[name]["torch_eager_ms"] = median_ms(fn, tsync, args.repeat)
    print(f"\n{'workload':<10}{'torch ms':>10}{'tf eager ms':>13}{'ratio':>8}"
          f"{'tf traced ms':>14}{'ratio':>8}")
    for name, r in results.items():
        t = r.get("torch_eager_ms")
        for k in ("eager", "traced"):
            if t:
                r[f"ratio_{k}"] = r[f"tapeflow_{k}_ms"] / t
        print(f"{name:<10}{t if t else float('nan'):>10.3f}{r['tapeflow_eager_ms']:>13.3f}"
              f"{r.get('ratio_eager', float('nan')):>8.2f}{r['tapeflow_traced_ms']:>14.3f}"
              f"{r.get('ratio_traced', float('nan')):>8.2f}")
    print(f"\nops that fell back to NumPy: {fell_back or 'none'}")
    if dev is None:
        print("(PyTorch with this device is not available: no ratios)")
    out = {"backend": args.backend, "torch_device": dev, "fallbacks": fell_back,
           "results": results,
           "torch": getattr(torch, "__version__", None) if torch is not None else None}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
