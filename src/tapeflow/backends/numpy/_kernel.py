"""The `kernel` decorator used by every NumPy kernel module, `ensure_array`, and helpers
that keep kernels working up to NumPy's maximum rank."""
import math
from typing import Callable

import numpy as np

from ..._core.dispatch import Alias
from ..._core.errors import InvalidArgumentError
from ..._core.registry import register_kernel
from ..._core.threads import blas, blas_threads

_ndarray = np.ndarray


def _numpy_max_rank() -> int:
    for rank in (64, 32):  # NumPy 2 allows 64 dimensions, NumPy 1 32
        try:
            np.empty((0,) * rank)
            return rank
        except ValueError:
            continue
    return 32  # pragma: no cover


# The most dimensions an array can have. Some NumPy functions stop at 32 (those built on
# its legacy iterators: np.broadcast_shapes, np.broadcast_arrays, sorting and partitioning
# along an axis): kernels use the helpers below instead.
MAX_RANK = _numpy_max_rank()
_LEGACY_RANK = 32


def kernel(name: str, blas: bool = False, direct: Callable | None = None):
    """Register the decorated `f(inputs, attrs, backend)` as op `name`'s NumPy kernel;
    `blas=True` for a kernel that calls BLAS or LAPACK: it runs in `blas_threads(1)`
    (BLAS on the calling thread; a kernel that wants more asks inside). The registered
    function's `unscoped` is `f` itself, for a caller that holds that scope over many
    kernels (the executor holds it once per program run).

    `direct(attrs)`, when given, makes a compiled node's call for its fixed attributes:
    `call(*input arrays) -> tuple of outputs`, the kernel's results without its inputs
    dict, attribute lookups and checks made once (None: the kernel for these
    attributes). A call that fails runs the kernel, which raises the op's own error."""
    def deco(f):
        registered = _one_blas_thread(f) if blas else f
        if direct is not None:
            registered.direct = direct
        register_kernel(name, "numpy", registered)
        return f
    return deco


def failing_to(kernel_fn: Callable, names: tuple, attrs) -> Callable:
    """What a `direct` call runs when its fast path raises: the kernel on the same
    arrays (given positionally, for the inputs `names`), so the error is the op's own
    (and a case the fast path did not expect still gets the kernel's result)."""
    def run(*arrays):
        out = kernel_fn(dict(zip(names, arrays)), attrs, None)
        if type(out) is Alias:
            return (arrays[names.index(out.name)].reshape(out.shape),)
        return (out,)
    return run


def _one_blas_thread(f):
    enter, leave = blas.enter, blas.leave

    def run(inputs, attrs, backend):
        # (blas_threads(1) as two calls: no scope object per kernel call)
        enter(1)
        try:
            return f(inputs, attrs, backend)
        finally:
            leave()
    run.__name__, run.__qualname__, run.__doc__ = f.__name__, f.__qualname__, f.__doc__
    run.__wrapped__ = run.unscoped = f
    return run


def ensure_array(x) -> np.ndarray:
    """`x` if it is an ndarray, else a new (writable) 0-d array holding it.

    NumPy ufuncs, reductions to a single element and scalar indexing return NumPy scalars,
    not 0-d arrays: a scalar cannot be an `out=` target and is not the backend's native
    array type. Kernels pass such results through this before writing into them or
    returning them. It costs one type check when `x` is already an array.
    """
    if type(x) is _ndarray:
        return x
    if type(x) is bytes:  # an element of a string tensor (np.asarray would make bytes_)
        out = np.empty((), dtype=object)
        out[()] = x
        return out
    return np.asarray(x)


def check_rank(op: str, rank: int) -> None:
    """Raise InvalidArgumentError naming `op` (the public op) when a result of `rank`
    dimensions is more than NumPy can hold (NumPy's own error would name no op, and
    np.take crashes the process on results past about 70 dimensions)."""
    if rank > MAX_RANK:
        raise InvalidArgumentError(
            f"{op}: the result would have {rank} dimensions; NumPy arrays (this backend) "
            f"have at most {MAX_RANK}")


def broadcast_shapes(*shapes) -> tuple:
    """np.broadcast_shapes for any rank (NumPy's stops at 32 dimensions)."""
    rank = max(map(len, shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, d in enumerate(s, rank - len(s)):
            if d != 1:
                if out[k] != 1 and out[k] != d:
                    raise ValueError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
                out[k] = d
    return tuple(out)


def along_last(fn, x: np.ndarray, *args, **kwargs) -> np.ndarray:
    """`fn(x, *args, axis=-1, **kwargs)` (an argsort, a sort, a partition) for any rank:
    past 32 dimensions, where NumPy's sorting stops, on `x` viewed as a matrix."""
    if x.ndim <= _LEGACY_RANK:
        return fn(x, *args, axis=-1, **kwargs)
    out = fn(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), *args, axis=-1, **kwargs)
    return out.reshape(x.shape[:-1] + out.shape[-1:])


def take_along_last(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """np.take_along_axis(x, idx, axis=-1) for any rank (NumPy's makes one index array per
    dimension and takes at most 63); their leading dims broadcast."""
    if x.ndim < MAX_RANK and idx.ndim < MAX_RANK:
        return np.take_along_axis(x, idx, axis=-1)
    lead = broadcast_shapes(x.shape[:-1], idx.shape[:-1])
    x = np.broadcast_to(x, lead + x.shape[-1:])
    idx = np.broadcast_to(idx, lead + idx.shape[-1:])
    rows = math.prod(lead)
    out = np.take_along_axis(x.reshape(rows, x.shape[-1]),
                             idx.reshape(rows, idx.shape[-1]), axis=-1)
    return out.reshape(idx.shape)


def put_along_last(out: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """np.put_along_axis(out, idx, values, axis=-1) for any rank (see take_along_last);
    out, idx and values have the same leading dims, and `out` is C-contiguous."""
    if out.ndim < MAX_RANK:
        np.put_along_axis(out, idx, values, axis=-1)
        return
    rows = math.prod(out.shape[:-1])
    np.put_along_axis(out.reshape(rows, out.shape[-1]), idx.reshape(rows, idx.shape[-1]),
                      values.reshape(rows, values.shape[-1]), axis=-1)


# Rows from which a sum over leading axes of a wide array (a bias gradient of a dense
# layer over a sequence, [B, T, C] -> [C]) is one matrix-vector product too: measured on
# one core, float32, 2048 x 128: 21 us against NumPy's row-by-row 54; 512 x 256: 14 and
# 32; 2048 x 1024: 170 and 235. Narrow arrays (at most 64 columns) from 256 rows.
WIDE_ROWS_FROM = 64


def sum_leading(x: np.ndarray, axes: tuple):
    """`x` summed over `axes` when they are its leading axes (a bias gradient: [N*H*W, C]
    -> [C]) as one matrix-vector product, which NumPy's strided reduction runs up to ~30x
    slower: narrow rests from 256 rows, wide ones from WIDE_ROWS_FROM; None when that
    does not apply."""
    n = len(axes)
    if (n == 0 or n >= x.ndim or x.dtype.kind != "f" or x.dtype.itemsize < 4
            or axes != tuple(range(n)) or not x.flags.c_contiguous):
        return None
    rest = x.shape[n:]
    cols = math.prod(rest)
    rows = x.size // cols if cols else 0
    if rows < (256 if cols <= 64 else WIDE_ROWS_FROM):
        return None
    with blas_threads(1):  # (BLAS's threads would split the sum: bits by thread count)
        return (np.ones(rows, x.dtype) @ x.reshape(rows, cols)).reshape(rest)
