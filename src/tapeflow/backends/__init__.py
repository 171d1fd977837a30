"""Backends: kernel implementations per backend: NumPy's, and the array-API backend over
any array-API namespace (CuPy on a GPU, array-api-strict in the tests)."""
from .array_api import ArrayAPIBackend, fallback_ops  # noqa: F401
