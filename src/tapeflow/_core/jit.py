"""numba, the optional `jit` extra, as every layer uses it: whether it is installed, the one
background thread that compiles, and `Loop`, a plain Python loop compiled per argument
types on first use.

A compile takes tenths of a second: by default it runs on the background thread while
the caller keeps using its NumPy formulation, and the compiled loop takes over once it is
ready (`TAPEFLOW_JIT_BACKGROUND=0` or `set_background(False)` compiles on the first call
instead; `wait_compiled()` waits for every compile started so far).

    >>> loop = Loop(lambda x, out: ...)     # a function numba can compile
    >>> run = loop.ready(x, out)            # the compiled loop for these types, or None
"""
from __future__ import annotations

import importlib.util
import os
import threading
import types
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

_background = [os.environ.get("TAPEFLOW_JIT_BACKGROUND", "1") != "0"]
_compiler: list = []   # the one compile thread (made on first use)
_pending: list = []    # futures of background compiles not yet waited for


def available() -> bool:
    """Whether numba can be imported (the `jit` extra)."""
    return importlib.util.find_spec("numba") is not None


def set_background(on: bool) -> None:
    """Compile in the background (the default) or on the first call."""
    _background[0] = bool(on)


def background() -> bool:
    return _background[0]


def wait_compiled(timeout: float | None = None) -> None:
    """Block until every background compile started so far has finished (benchmarks
    call it to time the steady state; programs never need to)."""
    while _pending:
        _pending.pop(0).result(timeout)


def submit(fn: Callable, *args) -> Future:
    """Run `fn(*args)` on the compile thread; `wait_compiled` waits for it."""
    if not _compiler:
        # numba's analyses recurse along a kernel's statements: a deep C stack
        old = threading.stack_size(256 << 20)
        try:
            _compiler.append(ThreadPoolExecutor(1, thread_name_prefix="tapeflow-jit"))
            _compiler[0].submit(lambda: None).result()  # the thread exists from now
        finally:
            threading.stack_size(old)
    future = _compiler[0].submit(fn, *args)
    _pending.append(future)
    return future


def set_threads(n: int) -> None:
    """The threads the next parallel loop called from this thread may use (numba's
    setting is per calling thread); only called once a parallel loop has compiled."""
    import numba  # optional: the jit extra (already imported by then)
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))


class Loop:
    """`fn`, a loop over arrays written in numba's subset of Python, compiled (and cached
    on disk by numba) once per argument types. `ready(*args)` returns the compiled
    function for the types of `args`, or None while it compiles in the background, when
    numba is not installed, or when numba could not compile it: the caller then runs its
    NumPy formulation, which the loop must equal. With `parallel=True`, a loop over
    `prange(...)` (a global the loop's module binds to `range`) splits over threads."""

    def __init__(self, fn: Callable, parallel: bool = False, cache: bool = True):
        self.fn = fn
        self.parallel = parallel  # compiled with parallel=True: its `prange` splits over threads
        self.cache = cache  # on disk (not for a loop calling C functions by address)
        self._jit: Any = None
        self._state: dict = {}  # argument types -> True | False (failed) | Future

    def ready(self, *args) -> Callable | None:
        # (numba.typeof costs microseconds an argument: a cheaper key finds the state)
        key = tuple((a.dtype.num, a.ndim, a.flags.c_contiguous) if isinstance(a, np.ndarray)
                    else type(a) for a in args)
        state = self._state.get(key)
        if state is None:
            if not available():
                self._state[key] = False
                return None
            if not _background[0]:
                return self._jit if self._compile(key, args) else None
            # importing numba takes most of a second: that too happens on the thread
            self._state[key] = submit(self._compile, key, args)
            return None
        if isinstance(state, Future):
            if not state.done():
                return None
            state = self._state[key] = state.result()
        return self._jit if state else None

    def _compile(self, key: tuple, args: tuple) -> bool:
        import numba  # optional: the jit extra
        if self._jit is None:
            fn = self.fn
            if self.parallel:  # the same code, its global `prange` bound to numba's
                scope = dict(fn.__globals__, prange=numba.prange)
                fn = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                        fn.__closure__)
                fn.__module__, fn.__qualname__ = self.fn.__module__, self.fn.__qualname__
            self._jit = numba.njit(cache=self.cache, nogil=True, error_model="numpy",
                                   parallel=self.parallel)(fn)
        try:
            self._jit.compile(tuple(numba.typeof(a) for a in args))
        except Exception as e:  # noqa: BLE001 - numba could not compile: NumPy runs
            if "numba" not in type(e).__module__:
                raise
            self._state[key] = False
            return False
        self._state[key] = True
        return True
