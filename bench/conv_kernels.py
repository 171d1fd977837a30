"""Per-kernel timings of the NumPy backend's convolutions and poolings (called directly, no
dispatch) over a table of geometries, batch 1 and 64: the first call from an empty kernel
cache (a fresh process with empty tapeflow and numba caches), the first ten calls together
(a compile in the background runs meanwhile), and the steady time after every compile;
against plain NumPy (im2col through strided windows and one matmul, or einsum for a
depthwise convolution) and TensorFlow when its venv exists (eager ops, in a subprocess:
tapeflow never imports TensorFlow). Median of alternating rounds; milliseconds per call.

Run: OPENBLAS_NUM_THREADS=1 python bench/conv_kernels.py [--repeat N] [--batch 1,64]
     [--only NAME] [--no-cold] [--no-tf] [--pool]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

HERE = os.path.dirname(os.path.abspath(__file__))
TF_PYTHON = os.environ.get("TF_PYTHON", "/tmp/tfv/bin/python")

# name: (input [H, W, C], filter [KH, KW, C or 1, F], strides, padding, dilations, groups)
CONV = {
    "first 3->32 32x32 3x3": ((32, 32, 3), (3, 3, 3, 32), (1, 1), "SAME", (1, 1), 1),
    "W6 1->8 28x28 3x3 VALID": ((28, 28, 1), (3, 3, 1, 8), (1, 1), "VALID", (1, 1), 1),
    "3x3 64->64 16x16": ((16, 16, 64), (3, 3, 64, 64), (1, 1), "SAME", (1, 1), 1),
    "1x1 256->64 14x14": ((14, 14, 256), (1, 1, 256, 64), (1, 1), "SAME", (1, 1), 1),
    "3x3 s2 32->64 32x32": ((32, 32, 32), (3, 3, 32, 64), (2, 2), "SAME", (1, 1), 1),
    "7x7 s2 3->64 64x64": ((64, 64, 3), (7, 7, 3, 64), (2, 2), "SAME", (1, 1), 1),
    "3x3 d2 16->16 32x32": ((32, 32, 16), (3, 3, 16, 16), (1, 1), "SAME", (2, 2), 1),
    "dw 3x3 s2 112->56 x32": ((112, 112, 32), (3, 3, 1, 32), (2, 2), "SAME", (1, 1), 32),
    "dw 3x3 28x28 x128 m2": ((28, 28, 128), (3, 3, 1, 256), (1, 1), "SAME", (1, 1), 128),
}
POOL = {  # name: (input [H, W, C], ksize, strides, padding)
    "2x2/2 26x26x8": ((26, 26, 8), (2, 2), (2, 2), "VALID"),
    "3x3/2 28x28x16 SAME": ((28, 28, 16), (3, 3), (2, 2), "SAME"),
    "3x3/2 56x56x64": ((56, 56, 64), (3, 3), (2, 2), "SAME"),
}
KERNELS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")


def _out_pads(n, k, s, d, padding):
    ke = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-n // s)
        total = max((out - 1) * s + ke - n, 0)
        return out, total // 2, total - total // 2
    return (n - ke) // s + 1, 0, 0


def operands(case: str, batch: int, rng) -> dict:
    (h, w, c), ws, s, p, d, groups = CONV[case]
    oh = _out_pads(h, ws[0], s[0], d[0], p)[0]
    ow = _out_pads(w, ws[1], s[1], d[1], p)[0]
    return {"x": rng.standard_normal((batch, h, w, c)).astype(np.float32),
            "w": (rng.standard_normal(ws) / np.sqrt(np.prod(ws[:3]))).astype(np.float32),
            "dy": rng.standard_normal((batch, oh, ow, ws[3])).astype(np.float32),
            "attrs": {"strides": s, "padding": p, "dilations": d, "data_format": "NHWC",
                      "groups": groups}}


# ------------------------------------------------------------------ plain NumPy
def _np_windows(x, ws, a):
    """Padded input and its window view [N, OH, OW, KH, KW, C]."""
    (kh, kw), (sh, sw), (dh, dw) = ws[:2], a["strides"], a["dilations"]
    n, h, w, c = x.shape
    oh, pt, pb = _out_pads(h, kh, sh, dh, a["padding"])
    ow, pl, pr = _out_pads(w, kw, sw, dw, a["padding"])
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    st = xp.strides
    view = as_strided(xp, (n, oh, ow, kh, kw, c),
                      (st[0], st[1] * sh, st[2] * sw, st[1] * dh, st[2] * dw, st[3]),
                      writeable=False)
    return xp, view, (pt, pl)


def np_conv(x, w, a):
    _, win, _ = _np_windows(x, w.shape, a)
    if a["groups"] > 1:  # depthwise: multiplier m
        m = w.shape[3] // x.shape[3]
        y = np.einsum("nhwijc,ijcm->nhwcm", win, w.reshape(w.shape[:2] + (x.shape[3], m)))
        return y.reshape(y.shape[:3] + (-1,))
    n, oh, ow = win.shape[:3]
    cols = win.reshape(n * oh * ow, -1)
    return (cols @ w.reshape(-1, w.shape[3])).reshape(n, oh, ow, -1)


def np_filter_grad(x, dy, ws, a):
    _, win, _ = _np_windows(x, ws, a)
    if a["groups"] > 1:
        m = ws[3] // x.shape[3]
        g = dy.reshape(dy.shape[:3] + (x.shape[3], m))
        return np.einsum("nhwijc,nhwcm->ijcm", win, g).reshape(ws)
    n, oh, ow = win.shape[:3]
    return (win.reshape(n * oh * ow, -1).T @ dy.reshape(-1, ws[3])).reshape(ws)


def np_input_grad(dy, w, x_shape, a):
    xp, win, (pt, pl) = _np_windows(np.zeros(x_shape, dy.dtype), w.shape, a)
    kh, kw = w.shape[:2]
    if a["groups"] > 1:
        m = w.shape[3] // x_shape[3]
        g = dy.reshape(dy.shape[:3] + (x_shape[3], m))
        cols = np.einsum("nhwcm,ijcm->nhwijc", g, w.reshape(kh, kw, x_shape[3], m))
    else:
        cols = (dy.reshape(-1, w.shape[3]) @ w.reshape(-1, w.shape[3]).T).reshape(win.shape)
    dxp = np.zeros_like(xp)
    (sh, sw), (dh, dw) = a["strides"], a["dilations"]
    oh, ow = dy.shape[1:3]
    for i in range(kh):
        for j in range(kw):
            dxp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                j * dw:j * dw + (ow - 1) * sw + 1:sw] += cols[:, :, :, i, j]
    return dxp[:, pt:pt + x_shape[1], pl:pl + x_shape[2]]


# ------------------------------------------------------------------ runners
def tapeflow_calls(case, batch, rng):
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
    from tapeflow.backends.numpy import conv as K  # (importing tapeflow registers kernels)
    o = operands(case, batch, rng)
    x, w, dy, a = o["x"], o["w"], o["dy"], o["attrs"]
    return {"Conv2D": lambda: K.conv2d({"x": x, "filters": w}, a, None),
            "Conv2DBackpropInput": lambda: K.conv2d_backprop_input(
                {"dy": dy, "filters": w}, {**a, "input_hw": x.shape[1:3]}, None),
            "Conv2DBackpropFilter": lambda: K.conv2d_backprop_filter(
                {"x": x, "dy": dy}, {**a, "filter_hw": w.shape[:2]}, None)}


def numpy_calls(case, batch, rng):
    o = operands(case, batch, rng)
    x, w, dy, a = o["x"], o["w"], o["dy"], o["attrs"]
    return {"Conv2D": lambda: np_conv(x, w, a),
            "Conv2DBackpropInput": lambda: np_input_grad(dy, w, x.shape, a),
            "Conv2DBackpropFilter": lambda: np_filter_grad(x, dy, w.shape, a)}


def tf_calls(case, batch, rng):
    import tensorflow as tf  # the TensorFlow child process only
    o = operands(case, batch, rng)
    x, w, dy, a = (tf.constant(o["x"]), tf.constant(o["w"]), tf.constant(o["dy"]),
                   o["attrs"])
    s = [1, *a["strides"], 1]
    d = [1, *a["dilations"], 1]
    xs = tf.constant(o["x"].shape, tf.int32)
    if a["groups"] > 1:
        kh, kw = o["w"].shape[:2]
        wd = tf.constant(o["w"].reshape(kh, kw, o["x"].shape[3], -1))
        ws = tf.constant(wd.shape, tf.int32)
        return {"Conv2D": lambda: tf.nn.depthwise_conv2d(x, wd, s, a["padding"],
                                                         dilations=a["dilations"]).numpy(),
                "Conv2DBackpropInput": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
                    input_sizes=xs, filter=wd, out_backprop=dy, strides=s,
                    padding=a["padding"], dilations=d).numpy(),
                "Conv2DBackpropFilter": lambda: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
                    input=x, filter_sizes=ws, out_backprop=dy, strides=s,
                    padding=a["padding"], dilations=d).numpy()}
    if max(a["dilations"]) > 1:  # (TF's CPU backprop kernels take no dilation: atrous)
        rate = a["dilations"][0]

        def grads(wrt):
            with tf.GradientTape() as tape:
                tape.watch(wrt)
                y = tf.nn.atrous_conv2d(x, w, rate, a["padding"])
            return tape.gradient(y, wrt, output_gradients=dy).numpy()
        return {"Conv2D": lambda: tf.nn.atrous_conv2d(x, w, rate, a["padding"]).numpy(),
                "Conv2DBackpropInput": lambda: grads(x),
                "Conv2DBackpropFilter": lambda: grads(w)}
    ws = tf.constant(o["w"].shape, tf.int32)
    return {"Conv2D": lambda: tf.nn.conv2d(x, w, s, a["padding"], dilations=d).numpy(),
            "Conv2DBackpropInput": lambda: tf.raw_ops.Conv2DBackpropInput(
                input_sizes=xs, filter=w, out_backprop=dy, strides=s, padding=a["padding"],
                dilations=d).numpy(),
            "Conv2DBackpropFilter": lambda: tf.raw_ops.Conv2DBackpropFilter(
                input=x, filter_sizes=ws, out_backprop=dy, strides=s, padding=a["padding"],
                dilations=d).numpy()}


def cold(make, cases, batches) -> dict:
    """{(case, batch, kernel): (first call ms, first ten calls ms)} in this process, the
    kernels called in table order (the first of all also pays for imports)."""
    out = {}
    for case in cases:
        for batch in batches:
            calls = make(case, batch, np.random.default_rng(0))
            for kernel in KERNELS:
                t0 = time.perf_counter()
                calls[kernel]()
                first = time.perf_counter() - t0
                for _ in range(9):
                    calls[kernel]()
                out[f"{case}|{batch}|{kernel}"] = (first * 1e3,
                                                   (time.perf_counter() - t0) * 1e3)
    return out


def steady(makers: dict, cases, batches, repeat: int, wait=None) -> dict:
    """{name: {(case, batch, kernel): median ms}} for each of `makers` (name -> calls
    maker), after warm-up calls (and `wait()`, every background compile done); every
    call of every maker alternating round by round, so a load passing on the shared
    machine slows them alike."""
    out: dict = {name: {} for name in makers}
    for case in cases:
        for batch in batches:
            calls = {(name, k): fn for name, make in makers.items()
                     for k, fn in make(case, batch, np.random.default_rng(0)).items()}
            for fn in calls.values():
                for _ in range(4):
                    fn()
            if wait is not None:
                wait()
            times: dict = {k: [] for k in calls}
            inner = 1 if batch > 8 else 5
            for _ in range(repeat):
                for k, fn in calls.items():
                    t0 = time.perf_counter()
                    for _ in range(inner):
                        fn()
                    times[k].append((time.perf_counter() - t0) / inner)
            for (name, k), ts in times.items():
                out[name][f"{case}|{batch}|{k}"] = float(np.median(ts)) * 1e3
    return out


def _child(args) -> None:
    """Run in a subprocess: --child {tapeflow-cold, tf-cold, tf-steady} cases batches repeat."""
    mode, cases, batches, repeat = args[0], args[1].split(";"), \
        [int(b) for b in args[2].split(",")], int(args[3])
    make = tapeflow_calls if mode.startswith("tapeflow") else tf_calls
    if mode.endswith("cold"):
        result = cold(make, cases, batches)
    else:
        result = steady({"tf": make}, cases, batches, repeat)["tf"]
    print("RESULT " + json.dumps(result))


def _run_child(python, mode, cases, batches, repeat, env=None) -> dict:
    cmd = [python, os.path.abspath(__file__), "--child", mode, ";".join(cases),
           ",".join(map(str, batches)), str(repeat)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print(f"{mode} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
    return {}


def pooling(repeat: int) -> None:
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
    from tapeflow._core import jit
    from tapeflow.backends.numpy import conv as K  # (importing tapeflow registers kernels)
    rng = np.random.default_rng(0)
    todo = []
    for case, ((h, w, c), k, s, p) in POOL.items():
        x = rng.standard_normal((32, h, w, c)).astype(np.float32)
        a = {"ksize": k, "strides": s, "padding": p, "data_format": "NHWC"}
        dy = K.max_pool({"x": x}, a, None)
        todo += [(case, "MaxPool", lambda x=x, a=a: K.max_pool({"x": x}, a, None)),
                 (case, "MaxPoolGrad",
                  lambda x=x, dy=dy, a=a: K.max_pool_grad({"x": x, "dy": dy}, a, None)),
                 (case, "AvgPool", lambda x=x, a=a: K.avg_pool({"x": x}, a, None)),
                 (case, "AvgPoolGrad", lambda dy=dy, a={**a, "input_hw": (h, w)}:
                  K.avg_pool_grad({"dy": dy}, a, None))]
    for _, _, fn in todo:
        for _ in range(4):
            fn()
    jit.wait_compiled()
    times = [[] for _ in todo]
    for _ in range(repeat):
        for ts, (_, _, fn) in zip(times, todo):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    print(f"\n{'pooling, batch 32':28s} {'kernel':14s} {'ms':>8s}")
    for (case, name, _), ts in zip(todo, times):
        print(f"{case:28s} {name:14s} {np.median(ts) * 1e3:8.3f}")


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] == "--child":
        _child(argv[1:])
        return

    def opt(name, default):
        return argv[argv.index(name) + 1] if name in argv else default
    repeat = int(opt("--repeat", "7"))
    batches = [int(b) for b in opt("--batch", "1,64").split(",")]
    cases = [c for c in CONV if opt("--only", "") in c]
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
    from tapeflow._core import jit
    results = steady({"tapeflow": tapeflow_calls, "numpy": numpy_calls}, cases, batches,
                     repeat, jit.wait_compiled)
    have_tf = os.path.exists(TF_PYTHON) and "--no-tf" not in argv
    if have_tf:
        results["tf"] = _run_child(TF_PYTHON, "tf-steady", cases, batches, repeat,
                                   {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    firsts = {}
    if "--no-cold" not in argv:
        with tempfile.TemporaryDirectory() as cache:
            firsts["tapeflow"] = _run_child(sys.executable, "tapeflow-cold", cases, batches, 1,
                                            {"TAPEFLOW_CACHE": cache,
                                             "NUMBA_CACHE_DIR": os.path.join(cache, "numba")})
        if have_tf:
            firsts["tf"] = _run_child(TF_PYTHON, "tf-cold", cases, batches, 1,
                                      {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""})
    peers = [p for p in ("numpy", "tf") if p in results]
    head = (f"{'case':24s} {'N':>3s} {'kernel':21s} {'tapeflow':>9s} "
            + " ".join(f"{p:>7s} {'ratio':>6s}" for p in peers))
    if firsts:
        head += "   first / first 10 calls ms: " + " | ".join(firsts)
    print(head)
    for case in cases:
        for batch in batches:
            for kernel in KERNELS:
                key = f"{case}|{batch}|{kernel}"
                ours = results["tapeflow"][key]
                line = f"{case:24s} {batch:3d} {kernel:21s} {ours:9.3f} "
                for p in peers:
                    theirs = results[p].get(key, float("nan"))
                    line += f"{theirs:7.3f} {ours / theirs:5.2f}x "
                if firsts:
                    line += "   " + " | ".join(
                        "{:.1f} / {:.1f}".format(*f.get(key, (float("nan"),) * 2))
                        for f in firsts.values())
                print(line, flush=True)
    if "--pool" in argv:
        pooling(repeat * 3)


if __name__ == "__main__":
    main()
