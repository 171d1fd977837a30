"""The `kernel` decorator used by every NumPy kernel module, and `ensure_array`."""
import numpy as np

from ..._core.registry import register_kernel

_ndarray = np.ndarray


def kernel(name: str):
    """Register the decorated `f(inputs, attrs, backend)` as op `name`'s NumPy kernel."""
    def deco(f):
        register_kernel(name, "numpy", f)
        return f
    return deco


def ensure_array(x) -> np.ndarray:
    """`x` if it is an ndarray, else a new (writable) 0-d array holding it.

    NumPy ufuncs, reductions to a single element and scalar indexing return NumPy scalars,
    not 0-d arrays: a scalar cannot be an `out=` target and is not the backend's native
    array type. Kernels pass such results through this before writing into them or
    returning them. It costs one type check when `x` is already an array.
    """
    return x if type(x) is _ndarray else np.asarray(x)
