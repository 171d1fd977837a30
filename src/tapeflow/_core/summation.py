"""The one order in which compiled code sums many values (API §6.7): fixed by the number of
values alone, never by threads, timing or which tier computed them, so a fused kernel's
`reduce_sum` gives the same bits on every call and in every process.

The order: the values go in blocks of BLOCK; within a block, LANES running sums, lane j
adding the block's elements j, j + LANES, j + 2 LANES, ... in turn (from 0.0, in
float64); a block's lanes are then added left to right, and the blocks' totals left to
right. Independent lanes vectorize without reassociating anything, so the compiled loop
runs at memory speed; NumPy computes the same order (a reduction over the middle axis of
a (blocks, rows, LANES) view adds each lane's rows in turn, and `add.accumulate` is
sequential), so with or without numba the bits are the same (tests/_core/test_summation.py).

    >>> ordered_sum(np.arange(5.0))     # a Python float
    10.0
"""
from __future__ import annotations

import numpy as np

from . import jit

LANES = 128
BLOCK = 64 * LANES


def _sum_numpy(values: np.ndarray) -> float:
    n = values.shape[0]
    full = n // BLOCK * BLOCK
    partials = []
    if full:
        lanes = np.add.reduce(values[:full].reshape(-1, BLOCK // LANES, LANES), axis=1,
                              dtype=np.float64, initial=0.0)
        partials.append(np.add.accumulate(lanes, axis=1)[:, -1])
    tail = values[full:]
    if tail.shape[0]:
        rows = tail.shape[0] // LANES
        lanes = np.add.reduce(tail[:rows * LANES].reshape(rows, LANES), axis=0,
                              dtype=np.float64, initial=0.0)
        rest = tail[rows * LANES:]
        lanes[:rest.shape[0]] += rest  # each lane's last element, added last
        partials.append(np.add.accumulate(lanes)[-1:])
    if not partials:
        return 0.0
    return float(np.add.accumulate(np.concatenate(partials))[-1])


def _sum_loop(values):  # pragma: no cover (numba runs it)
    """The same order as `_sum_numpy`, as one loop."""
    n = values.shape[0]
    lanes = np.empty(LANES, np.float64)  # (its own: LLVM then knows nothing aliases it)
    total = 0.0
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        for j in range(LANES):
            lanes[j] = 0.0
        rows = (stop - start) // LANES
        for r in range(rows):
            # (a view indexed by the range's own variable: numba then drops its
            # negative-index check, which keeps LLVM from vectorizing the lanes)
            row = values[start + r * LANES:start + (r + 1) * LANES]
            for j in range(LANES):
                lanes[j] += row[j]
        rest = values[start + rows * LANES:stop]
        for j in range(rest.shape[0]):
            lanes[j] += rest[j]
        partial = lanes[0]
        for j in range(1, LANES):
            partial += lanes[j]
        total = partial if start == 0 else total + partial
    return total


_LOOP = jit.Loop(_sum_loop)


def ordered_sum(values: np.ndarray) -> float:
    """The sum of a 1-D float array in the fixed order above, as a float64 Python float.
    With numba (the jit extra) one compiled loop (compiled on first use in this machine's
    cache, then loaded: never the NumPy formulation in one process and the loop in
    another, though the two agree); without numba, NumPy."""
    if values.dtype.kind != "f" or values.ndim != 1:
        values = np.asarray(values, np.float64).reshape(-1)
    if jit.available():
        run = _LOOP.ready_now(values)
        if run is not None:
            return float(run(values))
    return _sum_numpy(values)
