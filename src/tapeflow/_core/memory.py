"""Tensors over backend buffers and their accounting: wrap, share, move and free data;
`tidy`/`keep`/`dispose` scopes; `memory()`.

Several tensors may view one `Buffer` (reshape, identity); bytes are counted once per
buffer, and a buffer is freed when its last tensor goes, by dispose(), a tidy scope or the
garbage collector alike (see `Buffer.drop`).
"""
from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

import numpy as np

from . import dtypes as _dt, nest
from .backends import Backend, REGISTRY as _backends
from .context import ctx
from .tensor import _ids, Buffer, counters, pinned_ids, Resource, Tensor

_NP2DT = _dt._BY_NP
_ndarray = np.ndarray


def native_meta(arr) -> tuple:
    """(DType, bytes) of a native array that is not an ndarray: CuPy's dtypes are NumPy's,
    the array API's are the library's own objects, matched by name."""
    d = arr.dtype
    dtype = _NP2DT.get(d) if isinstance(d, np.dtype) else None
    if dtype is None:
        dtype = _dt.as_dtype(str(d).rsplit(".", 1)[-1])
    nbytes = getattr(arr, "nbytes", None)
    return dtype, int(nbytes if nbytes is not None else _size(arr.shape) * dtype.size)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def reshape_native(native, shape):
    """`native` viewed with `shape`: the array's own reshape method, or its array-API
    namespace's `reshape` (the standard's arrays have no method)."""
    method = getattr(native, "reshape", None)
    if method is not None:
        return method(shape)
    return native.__array_namespace__().reshape(native, tuple(shape))


_new_tensor = Tensor.__new__
_new_buffer = Buffer.__new__
_next_id = _ids.__next__


def wrap_native(arr, backend: Backend | None = None) -> Tensor:
    """A new Tensor owning `arr`, a native array of `backend` (the active one by default)."""
    if backend is None:
        backend = _backends.active or _backends.ensure_active()
    if type(arr) is not backend.native_type:
        arr = backend.to_native(arr)
    if type(arr) is _ndarray:
        dtype = _NP2DT.get(arr.dtype) or _dt.from_numpy(arr.dtype)
        nbytes = arr.nbytes
    else:  # another library's array (an array-API backend's)
        dtype, nbytes = native_meta(arr)
    shape = arr.shape
    buf = _new_buffer(Buffer)  # Buffer(...) without the __init__ call: the hot path
    buf.native, buf.data_id, buf.backend = arr, backend.write(arr, shape, dtype), backend
    buf.nbytes, buf.refs = nbytes, 1
    t = _new_tensor(Tensor)
    t._native = arr
    t._nb = backend
    t._buf = buf
    t._shape = shape
    t.dtype = dtype
    t.id = _next_id()
    t._kept = False
    counters[0] += 1
    counters[1] += 1
    counters[2] += nbytes
    scope = ctx.scope
    if scope is not None:
        scope.append(weakref.ref(t))
    return t


_scalar_cache: dict = {}
_SCALAR_CACHE_MAX = 4096


def scalar_constant(value, dtype) -> Tensor:
    """A cached scalar tensor for a Python number used as an op operand (`x * 1.01`).

    These are engine constants: shared, never disposed, and left out of `memory()` (a
    few bytes each, at most 4096 of them); converting the same number again costs one
    dict lookup instead of an array and a tensor.
    """
    backend = _backends.active or _backends.ensure_active()
    key = (type(value), value if value else str(value), dtype, backend)  # -0.0 != 0.0
    t = _scalar_cache.get(key)
    if t is not None:
        return t
    arr = np.array(value, dtype._np)
    if backend.native_type is not _ndarray:  # kernels get their backend's own arrays
        arr = backend.to_native(arr)
    if len(_scalar_cache) >= _SCALAR_CACHE_MAX or value != value:  # NaN keys never match
        return wrap_native(arr, backend)
    t = _new_tensor(Tensor)
    t._native, t._nb, t._shape, t.dtype, t.id, t._kept = arr, backend, (), dtype, _next_id(), True
    # a huge refcount and no bytes: never freed, never counted in memory()
    t._buf = Buffer(arr, backend.write(arr, (), dtype), backend, 0, 1 << 60)
    _scalar_cache[key] = t
    pinned_ids.add(t.id)
    return t


def share(t: Tensor, shape=None, track: bool = True) -> Tensor:
    """A new Tensor over `t`'s buffer (no copy), optionally with another shape."""
    buf = t._buf
    if not buf:
        t._read()  # raises the DisposedError (or symbolic-value error) naming the tensor
    native = t._native
    if shape is not None and tuple(shape) != t._shape:
        # may raise: take the reference only afterwards
        native = native.reshape(shape) if type(native) is _ndarray else reshape_native(
            native, shape)
    buf.refs += 1
    out = _new_tensor(Tensor)
    out._native = native
    out._nb = t._nb
    out._buf = buf
    out._shape = native.shape if hasattr(native, "shape") else tuple(shape or t._shape)
    out.dtype = t.dtype
    out.id = _next_id()
    out._kept = False
    counters[0] += 1
    if track:
        scope = ctx.scope
        if scope is not None:
            scope.append(weakref.ref(out))
    return out


def native_of(t: Tensor, backend: Backend) -> Any:
    """The native array of `t` in `backend`, moving the data there on first use."""
    if t._nb is backend:
        return t._native
    buf = t._buf
    if not buf:
        t._read()  # raises the DisposedError (or symbolic-value error) naming the tensor
    if buf.backend is not backend:
        old = buf.backend
        move_from = getattr(backend, "move_from", None)  # (a backend of API 5.3 alone: none)
        if move_from is not None:  # through DLPack where both backends allow it
            move_from(old, buf.data_id, t.dtype)
            old.dispose_data(buf.data_id)
        else:
            values = old.read(buf.data_id)
            old.dispose_data(buf.data_id)
            backend.move(buf.data_id, values, values.shape, t.dtype)
        buf.backend = backend
        buf.native = backend.native(buf.data_id)
    native = buf.native
    if native.shape != t._shape:  # a reshape sharing the buffer
        native = reshape_native(native, t._shape)
    t._native, t._nb = native, backend
    return native


def _rescue_data(name: str, backend: Backend) -> None:
    """A backend is being removed: move the data of live tensors to another one first."""
    if not backend.num_data_ids():
        return
    others = _backends.names()
    if not others:
        return
    target = _backends.find(_backends.active_name if _backends.active_name not in (None, name)
                            else others[0])
    if target is None:
        return
    for obj in gc.get_objects():
        if type(obj) is Tensor and obj._buf and obj._buf.backend is backend:
            native_of(obj, target)


_backends.on_remove.insert(0, _rescue_data)


# --------------------------------------------------------------------------- scopes


def keep(t) -> Any:
    """Exempt `t` from disposal by enclosing `tidy` scopes; returns `t`.

    Example:
        >>> with tf.tidy():
        ...     kept = tf.keep(tf.ones([2]))
    """
    if isinstance(t, Tensor):
        t._kept = True
    return t


def dispose(x) -> None:
    """Dispose every tensor (and variable) in a nested structure.

    Example:
        >>> a = tf.ones([2]); tf.dispose([a]); a.is_disposed
        True
    """
    for t in nest.flatten(x):
        if isinstance(t, Tensor):
            t._release()
        elif isinstance(t, Resource):
            t._value._release()
        elif callable(getattr(type(t), "dispose", None)):  # IndexedSlices: its parts
            t.dispose()


class _Tidy:
    """`with tidy():` form; also used by the function forms."""

    def __init__(self, name=None):
        self.name = name

    def __enter__(self):
        ctx.scopes.append((self.name, ctx.scope))
        ctx.scope = []
        return self

    def __exit__(self, *exc):
        self.close(None)
        return False

    def close(self, result):
        scope = ctx.scope
        _, parent = ctx.scopes.pop()
        ctx.scope = parent
        keep_ids = {id(t) for t in nest.flatten(result) if isinstance(t, Tensor)} \
            if result is not None else ()
        for ref in scope:
            t = ref()
            if t is None or not t._buf or t._kept:
                continue
            if id(t) in keep_ids:
                if parent is not None:
                    parent.append(ref)
                continue
            t._release()


def tidy(name_or_fn=None, fn: Callable | None = None) -> Any:
    """Dispose the tensors made by `fn` (or in a `with` block) except those returned or kept.

    Forms: `tidy(fn)`, `tidy(name, fn)`, `with tidy():` and `with tidy(name):`.
    Example:
        >>> y = tf.tidy(lambda: tf.ones([2]) * 2)   # the temporary ones([2]) is freed
        >>> with tf.tidy():
        ...     z = tf.ones([3]) + 1                 # disposed at the end of the block
    """
    if callable(name_or_fn) and fn is None:
        name_or_fn, fn = None, name_or_fn
    if name_or_fn is not None and not isinstance(name_or_fn, str):
        raise TypeError(f"tidy: expected a function or a scope name (str) as the first "
                        f"argument, got {type(name_or_fn).__name__} {name_or_fn!r}")
    if fn is not None and not callable(fn):
        raise TypeError(f"tidy: the second argument must be a function, got "
                        f"{type(fn).__name__} {fn!r}")
    if fn is None:
        return _Tidy(name_or_fn)
    scope = _Tidy(name_or_fn).__enter__()
    result = None
    try:
        result = fn()
        return result
    finally:
        scope.close(result)


def memory() -> dict:
    """Live tensors, data buffers and bytes across all backends.

    Example:
        >>> before = tf.memory()["num_tensors"]; a = tf.ones([4])
        >>> tf.memory()["num_tensors"] - before
        1
    """
    return {"num_tensors": counters[0], "num_data_buffers": counters[1],
            "num_bytes": counters[2], "unreliable": False, "reasons": []}
