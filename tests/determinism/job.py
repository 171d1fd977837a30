"""Runs a set of computations several times at 1 and 2 intra-op threads and prints one
JSON object: for each computation and thread count, the SHA-256 of its results' bytes,
or "differs between calls" (tests/determinism/test_determinism.py runs it in several
processes, with and without numba, and compares).

    python -m tests.determinism.job [--no-numba]
"""
import hashlib
import json
import sys

if "--no-numba" in sys.argv:
    sys.modules["numba"] = None  # importlib then finds no numba: tapeflow runs unfused

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402

CALLS = 4


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:24]


def rng_array(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def fused_sums():
    f = tf.function(lambda x: tf.reduce_sum((x * 0.5) * x + 0.25))
    g = tf.function(lambda x: tf.reduce_sum(tf.exp(x * 0.1) * x))
    x64 = tf.constant(rng_array(1, 1 << 20, np.float64))
    x32 = tf.constant(rng_array(2, 1 << 18))
    return lambda: [f(x64).numpy(), g(x32).numpy(), g(x32[:1000]).numpy()]


def eager_reductions():
    x = tf.constant(rng_array(3, (512, 300)))
    return lambda: [tf.reduce_sum(x).numpy(), tf.reduce_sum(x, axis=0).numpy(),
                    tf.reduce_mean(x, axis=1).numpy()]


def products():
    a, b = tf.constant(rng_array(4, (1024, 512))), tf.constant(rng_array(5, (512, 256)))
    s, t = tf.constant(rng_array(6, (128, 64))), tf.constant(rng_array(7, (64, 64)))
    q, k = tf.constant(rng_array(8, (4, 64, 32))), tf.constant(rng_array(9, (4, 64, 32)))
    traced = tf.function(lambda a, b: tf.matmul(a, b, transpose_b=True))
    return lambda: [tf.matmul(a, b).numpy(), tf.matmul(s, t).numpy(),
                    tf.einsum("bqd,bkd->bqk", q, k).numpy(), traced(a, a).numpy()]


def convolutions():
    x1, w1 = tf.constant(rng_array(10, (16, 28, 28, 1))), tf.constant(rng_array(11, (3, 3, 1, 8)))
    x2, w2 = tf.constant(rng_array(12, (8, 16, 16, 16))), tf.constant(rng_array(13, (3, 3, 16, 32)))

    def run():
        out = []
        for x, w in ((x1, w1), (x2, w2)):
            with tf.GradientTape(persistent=True) as tape:
                tape.watch([x, w])
                y = tf.nn.conv2d(x, w, 1, "SAME")
                loss = tf.reduce_sum(y * y)
            out += [y.numpy()] + [g.numpy() for g in tape.gradient(loss, [x, w])]
        return out
    return run


def training(traced: bool):
    def run():
        tf.random.set_seed(3)
        model = [tf.Variable(rng_array(20, (3, 3, 1, 8)) * 0.3), tf.Variable(np.zeros(8, np.float32)),
                 tf.Variable(rng_array(21, (8 * 14 * 14, 10)) * 0.05),
                 tf.Variable(np.zeros(10, np.float32))]
        opt = tf.optimizers.SGD(0.05, momentum=0.9)
        x = tf.constant(rng_array(22, (32, 28, 28, 1)))
        labels = tf.constant(np.arange(32) % 10)

        def step():
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.nn.conv2d(x, model[0], 1, "SAME") + model[1])
                h = tf.nn.max_pool2d(h, 2, 2, "VALID")
                logits = tf.matmul(tf.reshape(h, [32, -1]), model[2]) + model[3]
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels, logits))
            opt.apply_gradients(zip(tape.gradient(loss, model), model))
            return loss
        step = tf.function(step) if traced else step
        losses = [step().numpy() for _ in range(6)]
        return losses + [v.numpy() for v in model]
    return run


CASES = {"fused sums": fused_sums, "eager reductions": eager_reductions,
         "products": products, "convolutions": convolutions,
         "training (eager)": lambda: training(False), "training (traced)": lambda: training(True)}


def main() -> None:
    report = {}
    for threads in (1, 2):
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        for name, make in CASES.items():
            run = make()
            seen = {digest(run()) for _ in range(CALLS)}
            report[f"{name} @ {threads}"] = seen.pop() if len(seen) == 1 else \
                "differs between calls"
    tf.config.threading.set_intra_op_parallelism_threads(0)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
