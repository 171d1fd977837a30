"""NumPy kernels, one module per op family, registered for backend "numpy"."""
import importlib

FAMILIES = ("math", "reduction", "array", "indexing", "creation", "linalg", "nn", "conv",
            "random", "state")

for _family in FAMILIES:
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
