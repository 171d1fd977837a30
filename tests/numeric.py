"""Finite-difference truth shared by tests."""
from __future__ import annotations

import numpy as np


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar function f at the float64 array x.

    Example:
        >>> numeric_grad(lambda v: (v * v).sum(), np.array([1.0, 2.0]))  # ~[2, 4]
    """
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g
