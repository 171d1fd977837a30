"""The one summation order of compiled reductions: fixed by the number of values, the same
with numba's loop and with NumPy, and close to the exact sum."""
import math

import numpy as np
import pytest

from tapeflow._core import summation
from tapeflow._core.jit import available

SIZES = [0, 1, 5, summation.LANES - 1, summation.LANES, summation.LANES + 1,
         summation.BLOCK - 1, summation.BLOCK, summation.BLOCK + 7, 3 * summation.BLOCK + 300]


def _sequential_order(values: np.ndarray) -> float:
    """The documented order written out in plain Python (the independent truth)."""
    total = None
    for start in range(0, len(values), summation.BLOCK):
        block = values[start:start + summation.BLOCK]
        lanes = [0.0] * summation.LANES
        for i, v in enumerate(block):
            lanes[i % summation.LANES] += float(v)
        partial = lanes[0]
        for v in lanes[1:]:
            partial += v
        total = partial if total is None else total + partial
    return 0.0 if total is None else total


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_formulations_follow_the_documented_order(n, dtype):
    rng = np.random.default_rng(n)
    values = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n)).astype(dtype)
    want = _sequential_order(values)
    assert summation._sum_numpy(values) == want
    assert summation.ordered_sum(values) == want
    assert math.isclose(want, math.fsum(values.astype(np.float64)), rel_tol=1e-9,
                        abs_tol=1e-9 * float(np.abs(values).sum()))


def test_nan_and_infinities_propagate():
    values = np.ones(3 * summation.BLOCK)
    values[5000] = np.inf
    assert summation.ordered_sum(values) == np.inf
    values[9000] = -np.inf
    assert np.isnan(summation.ordered_sum(values))


def test_the_compiled_loop_runs_when_numba_is_there():
    if available():
        assert summation._LOOP.ready_now(np.ones(3)) is not None
    else:
        assert summation._LOOP.ready_now(np.ones(3)) is None
