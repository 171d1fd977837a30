"""The array-API backend: one kernel set over any namespace of the Python array API
standard (docs/backends.md).

Registered at import, through the backend registry (API 5.3, 12):
- "cupy" over CuPy when CuPy imports and sees a CUDA device, priority 2 (above "numpy":
  the default then), device type GPU: `tf.device("GPU:0")` places ops there;
- "array_api" over array-api-strict when it is installed, priority 0 (never the
  default): the standard's strict reference, on which the tests run the op table.
Ops without an array-API kernel run NumPy's (`fallback_ops()`, warned once per op).
"""
from __future__ import annotations

import importlib.util

from ..._core.backends import REGISTRY
from . import (array, conv, creation, indexing, linalg, math, nn,  # noqa: F401
               normalization, reduction, signal, state)
from ._backend import ArrayAPIBackend
from ._kernel import FallbackWarning, XP_KERNELS, fallback_ops, library_ops

__all__ = ["ArrayAPIBackend", "FallbackWarning", "XP_KERNELS", "fallback_ops", "library_ops",
           "cuda_device_count"]


def cuda_device_count() -> int:
    """CUDA devices CuPy sees (0 without CuPy, a driver or a device)."""
    if importlib.util.find_spec("cupy") is None:
        return 0
    try:  # optional extra: CuPy is imported only when it is installed
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no driver, no device, a broken install: no GPU
        return 0


class _CupyBackend(ArrayAPIBackend):
    """ArrayAPIBackend over CuPy on CUDA device 0, listed as GPU:0."""

    device_type = "GPU"

    def __init__(self) -> None:
        super().__init__("cupy")


class _StrictBackend(ArrayAPIBackend):
    """ArrayAPIBackend over array-api-strict (no device of its own: reached by name)."""

    def __init__(self) -> None:
        super().__init__("array_api_strict")


if importlib.util.find_spec("array_api_strict") is not None:
    REGISTRY.register("array_api", _StrictBackend, priority=0)
if cuda_device_count() > 0:
    REGISTRY.register("cupy", _CupyBackend, priority=2)
