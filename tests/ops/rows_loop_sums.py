"""Op-table rows of the running sums of sparse gradients (ops/indexing.py: InplaceSegmentSum,
InplaceStridedSliceAdd), which only a traced loop's gradient runs: the row is the gradient
of a `while_loop` reading rows (a gather) or a slice of a loop-invariant input, against
its closed form. The loop reads fixed rows, so the reshaped edge cases do not apply;
tests/function/test_loop_speedups.py covers repeated ids, unknown lengths and nesting."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row, uniform

FIXED = dict(scalar=False, size1=False, empty=False, rank=False, grad=False,
             note="a loop over the fixed rows of the sampled shape: not reshaped")
STEPS = 3


@tf.function
def _rows_grad(p):
    """d/dp of sum_t sum(sin(p[t])) over a traced loop."""
    with tf.GradientTape() as tape:
        tape.watch(p)
        total = tf.zeros([], p.dtype)
        for t in tf.range(STEPS):
            total += tf.reduce_sum(tf.sin(tf.gather(p, t)))
    return tape.gradient(total, p)


def _rows_ref(p):
    out = np.zeros_like(p)
    for t in range(STEPS):
        out[t] = np.cos(p[t])
    return out


@tf.function
def _slice_grad(p):
    """d/dp of sum_t sum(p[1:3] ** 2) over a traced loop."""
    with tf.GradientTape() as tape:
        tape.watch(p)
        total = tf.zeros([], p.dtype)
        for _ in tf.range(STEPS):
            total += tf.reduce_sum(p[1:3] ** 2)
    return tape.gradient(total, p)


def _slice_ref(p):
    out = np.zeros_like(p)
    out[1:3] = 2 * p[1:3] * STEPS
    return out


ROWS = [
    Row("loop/gather_rows_grad", _rows_grad, _rows_ref, uniform((STEPS, 2, 3)),
        kernels=("InplaceSegmentSum",), **FIXED),
    Row("loop/slice_grad", _slice_grad, _slice_ref, uniform((4, 3)),
        kernels=("InplaceStridedSliceAdd",), **FIXED),
]
