"""numba, the optional `jit` extra, as every layer uses it: whether it is installed, the one
background thread that compiles, and `Loop`, a plain Python loop compiled per argument
types on first use.

A compile takes tenths of a second: by default it runs on the background thread while
the caller keeps using its NumPy formulation, and the compiled loop takes over once it is
ready (`TAPEFLOW_JIT_BACKGROUND=0` or `set_background(False)` compiles on the first call
instead; `wait_compiled()` waits for every compile started so far).

    >>> loop = Loop(lambda x, out: ...)     # a function numba can compile
    >>> run = loop.ready(x, out)            # the compiled loop for these types, or None

Generated code (fused kernels, convolutions specialized to their filter sizes) is a
module written once under `$TAPEFLOW_CACHE` (default `~/.cache/tapeflow`) and imported
from there (`source_module`), so numba's disk cache serves it to later processes.

Background compiles run in a compile *process* (`compile_worker.py`, started on the first
compile, one per process, niced): numba's passes are Python and would hold this
process's GIL (and its memory: LLVM's peak) for the whole compile. The worker writes
numba's disk cache; the compile thread here then loads the kernel from it in
milliseconds. Without a worker (`TAPEFLOW_JIT_WORKER=0`, or it failed to start) the
thread compiles in this process as before.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

_background = [os.environ.get("TAPEFLOW_JIT_BACKGROUND", "1") != "0"]
_compiler: list = []   # the one compile thread (made on first use)
_pending: list = []    # futures of background compiles not yet waited for


def available() -> bool:
    """Whether numba can be imported (the `jit` extra); looked up once (a lookup scans
    sys.path: tens of microseconds, and kernels ask on every call)."""
    if not _available:
        _available.append(importlib.util.find_spec("numba") is not None)
    return _available[0]


_available: list = []


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


def bought() -> bool:
    """Whether this process has started compiling (or imported numba some other way):
    from then on numba's fixed costs are paid, and small compiles are worth asking for."""
    return bool(_compiler) or "numba" in sys.modules


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


# ------------------------------------------------------------------ generated modules
_modules: dict = {}  # source -> module
_sources: dict = {}  # module name -> (source, kind): what a compile worker must import


def cache_dir() -> str:
    """Where generated modules and numba's cache of them live."""
    base = os.environ.get("TAPEFLOW_CACHE") or os.path.join(os.path.expanduser("~"),
                                                             ".cache", "tapeflow")
    return os.path.join(base, "fused")


# The disk cache is kept under this many MB (TAPEFLOW_CACHE_MB): when a process first
# writes to it, the kernels used least recently go until it fits.
CACHE_MB = float(os.environ.get("TAPEFLOW_CACHE_MB", "256"))
_swept: list = []
SWEEP_GRACE = 600.0
_PREFIX = "tapeflow_"  # every generated module's name starts so (the sweep keeps others)


def sweep_cache(directory: str, limit_mb: float) -> int:
    """Remove the least recently used kernels (module, numba's files, markers) from
    `directory` until it holds at most `limit_mb` MB; returns how many went. A kernel's
    module file is touched whenever a process loads it, so its mtime is its last use.
    Kernels used in the last SWEEP_GRACE seconds stay: another process may be loading
    them (numba reads a kernel's index, then its code)."""
    groups: dict = {}  # module name -> [(path, size)]
    last_use: dict = {}
    for folder in (directory, os.path.join(directory, "__pycache__")):
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for entry in entries:
            try:
                if not entry.name.startswith(_PREFIX) or not entry.is_file():
                    continue
                stat = entry.stat()
            except OSError:  # another process removed it since the listing
                continue
            name = entry.name.split(".")[0]
            groups.setdefault(name, []).append((entry.path, stat.st_size))
            if entry.name == name + ".py":
                last_use[name] = stat.st_mtime
    total = sum(size for files in groups.values() for _, size in files)
    removed = 0
    recent = time.time() - SWEEP_GRACE
    for name in sorted(groups, key=lambda n: last_use.get(n, 0.0)):
        if total <= limit_mb * 2**20 or last_use.get(name, 0.0) > recent:
            break
        for path, size in groups[name]:
            try:
                os.remove(path)
                total -= size
            except OSError:  # (another process removed or holds it)
                pass
        removed += 1
    return removed


def module_name(source: str, kind: str = "fused") -> str:
    return f"{_PREFIX}{kind}_" + hashlib.sha1(source.encode()).hexdigest()[:20]


def marker(source: str, variant: str, kind: str = "fused") -> str:
    """The path of a file whose existence says a compiled variant of `source` is in
    numba's disk cache (later processes load it on their first call instead of
    compiling in the background)."""
    return os.path.join(cache_dir(), f"{module_name(source, kind)}.{variant}.ready")


def touch(path: str) -> None:
    """Create the marker file `path` (see `marker`)."""
    if not os.path.exists(path):
        with open(path, "w"):
            pass


def _keep_file(path: str, source: str) -> None:
    """Mark the module file `path` used now (its mtime, for sweep_cache), writing it with
    `source` if it is not there: another process's sweep may have removed it."""
    try:
        os.utime(path)
        return
    except FileNotFoundError:
        pass
    except OSError:  # (a read-only cache: its file is there)
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(source)
    os.replace(tmp, path)  # atomic: another process may write the same module


def source_module(source: str, kind: str = "fused"):
    """The module of generated `source`, imported from its file in the cache directory
    (written there first if new): numba caches a function's compiled code beside its
    module's file, so only code with a file can be cached."""
    module = _modules.get(source)
    if module is not None:
        return module
    name = module_name(source, kind)
    directory = cache_dir()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + ".py")
    if not _swept:
        _swept.append(True)
        sweep_cache(directory, CACHE_MB)
    _keep_file(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache finds a module's functions through it
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:  # swept by another process between the two lines above
        _keep_file(path, source)
        spec.loader.exec_module(module)
    _modules[source] = module
    _sources[name] = (source, kind)
    return module


class Lazy:
    """A function of a generated module that numba compiles, kept plain Python until the
    module is first compiled or run compiled: generated modules are imported (for their
    NumPy blocks) with no numba import, which costs a cold process a fifth to half a
    second that a program whose kernels never pay for compiling would not get back.
    `jit.real(f)` (or calling it) makes every Lazy of its module its numba object.

        >>> @lazy_njit(cache=True)          # in a generated module: `from ... import`
        ... def kernel(lo, hi, a0, o0): ...
    """

    def __init__(self, fn: Callable, kind: str, options: dict):
        self.py_func, self.kind, self.options, self._real = fn, kind, options, None
        self.__name__, self.__qualname__ = fn.__name__, fn.__qualname__
        self.__module__, self.__doc__, self.__wrapped__ = fn.__module__, fn.__doc__, fn

    def __call__(self, *args):
        return real(self)(*args)

    def __getattr__(self, name: str):  # (its dispatcher's: `stats`, `signatures`...)
        if name.startswith("__") or name in ("py_func", "kind", "options", "_real"):
            raise AttributeError(name)
        return getattr(real(self), name)


_lazy_lock = threading.Lock()


def lazy_njit(**options) -> Callable:
    """`numba.njit(**options)`, applied when its module is first compiled (see Lazy)."""
    return lambda fn: Lazy(fn, "njit", options)


def lazy_intrinsic(fn: Callable) -> Lazy:
    """`numba.extending.intrinsic`, applied when its module is first compiled."""
    return Lazy(fn, "intrinsic", {})


def materialize(scope: dict) -> None:
    """Make every Lazy of a module's namespace `scope` its numba object, in the order they
    are defined (making a dispatcher compiles nothing: each finds the others as numba
    objects when it compiles)."""
    if not any(isinstance(v, Lazy) and v._real is None for v in list(scope.values())):
        return
    with _lazy_lock:
        import numba  # optional: the jit extra
        import numba.extending  # noqa: F401 (numba.extending.intrinsic)
        for name, value in list(scope.items()):
            if isinstance(value, Lazy) and value._real is None:
                value._real = (numba.extending.intrinsic(value.py_func)
                               if value.kind == "intrinsic" else
                               numba.njit(**value.options)(value.py_func))
                scope[name] = value._real


def real(fn):
    """The numba object of a Lazy (its whole module's made now: `materialize`); anything
    else as it is."""
    if not isinstance(fn, Lazy):
        return fn
    if fn._real is None:
        materialize(fn.py_func.__globals__)
    return fn._real


@contextlib.contextmanager
def slp_vectorized():
    """numba compiles with LLVM's SLP vectorizer inside this block (numba turns it off by
    default, after LLVM miscompiled some code with it). Generated convolutions need it:
    their statements per filter, unrolled, become one vector operation across filters.
    numba's compiler lock keeps compiles of other threads out of the block."""
    from numba.core import config  # optional: the jit extra
    from numba.core.compiler_lock import global_compiler_lock
    with global_compiler_lock:
        old = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = 1
        try:
            yield
        finally:
            config.SLP_VECTORIZE = old


# ------------------------------------------------------------------ compile worker
_worker_on = [os.environ.get("TAPEFLOW_JIT_WORKER", "1") != "0"]
_worker: list = []  # [_Worker | None] of this process (a forked child starts its own)
_worker_lock = threading.Lock()


def make_dispatcher(fn: Callable, cache: bool = True):
    """numba's dispatcher of a loop function, made alike in this process and in the compile
    worker (so the worker's disk-cache entry is the one this process looks up)."""
    import numba  # optional: the jit extra
    materialize(fn.__globals__)  # (a loop of a generated module calling its Lazy functions)
    generated = _sources.get(fn.__module__)
    if cache and generated is not None:  # numba's cache stamps the module's file, which
        _keep_file(sys.modules[fn.__module__].__file__, generated[0])  # a sweep may take
    return numba.njit(cache=cache, nogil=True, error_model="numpy")(fn)


PACKAGE_STUBS = ("tapeflow", "tapeflow.function")


class _Worker:
    """The compile process: requests and replies are length-prefixed pickles on its stdin
    and on a duplicate of its stdout (its own fd 1 goes to stderr, so nothing numba prints
    can corrupt a reply)."""

    def __init__(self):
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        paths = [src] + [os.path.abspath(p) for p in sys.path if p]
        # the packages `tapeflow` and `tapeflow.function` as bare namespaces, their
        # __init__ not run: the worker imports only what a compile needs (a generated
        # module needs this module and vmath), not the whole library (seconds of a
        # core on a busy machine before its first compile)
        stubs = {name: os.path.join(src, *name.split(".")) for name in PACKAGE_STUBS}
        code = (f"import sys, types; sys.path[:0] = {paths!r}\n"
                f"for name, path in {stubs!r}.items():\n"
                "    sys.modules[name] = package = types.ModuleType(name)\n"
                "    package.__path__ = [path]\n"
                "from tapeflow._core.compile_worker import main; main()")
        env = dict(os.environ, TAPEFLOW_JIT_WORKER="0", TAPEFLOW_JIT_BACKGROUND="0")
        self.pid = os.getpid()
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, close_fds=True)
        atexit.register(self.close)

    def ask(self, request: tuple):
        data = pickle.dumps(request, protocol=4)
        self.proc.stdin.write(struct.pack("<I", len(data)) + data)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(4)
        if len(head) < 4:
            raise EOFError("the compile worker ended")
        (size,) = struct.unpack("<I", head)
        return pickle.loads(self.proc.stdout.read(size))

    def close(self) -> None:
        # (an unfinished compile is only a cache entry not written: numba writes its cache
        # files whole, by rename)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def set_worker(on: bool) -> None:
    """Compile background kernels in a separate process (the default) or in this one."""
    _worker_on[0] = bool(on)


def _the_worker():
    if _worker and (_worker[0] is None or _worker[0].pid == os.getpid()):
        return _worker[0]
    _worker.clear()
    try:
        _worker.append(_Worker())
    except OSError:  # (no interpreter to start: compile here)
        _worker.append(None)
    return _worker[0]


def signature(args) -> tuple:
    """numba's types of `args` (as a compile request carries them: `describe`)."""
    return signature_of(describe(args))


def describe(args) -> tuple:
    """`args` as a compile request carries them: an array by its dtype, rank, layout and
    writability (what numba types it by), anything else as it is, so that this process
    need not import numba to ask for a compile (`signature_of` reads it back)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
            out.append(("ndarray", a.dtype.str, a.ndim, layout, not a.flags.writeable))
        else:
            out.append(a)
    return tuple(out)


def signature_of(described: tuple) -> tuple:
    """numba's types of arguments `describe` described (as `signature` of the arrays)."""
    import numba  # optional: the jit extra
    from numba.np import numpy_support  # optional: the jit extra
    return tuple(
        numba.types.Array(numpy_support.from_dtype(np.dtype(d[1])), d[2], d[3],
                          readonly=d[4])
        if isinstance(d, tuple) and len(d) == 5 and d[0] == "ndarray" else numba.typeof(d)
        for d in described)


def compile_elsewhere(fn: Callable, args: tuple, slp: bool = False) -> bool | None:
    """Compile `fn` (a plain loop function as `Loop` takes it, or a Lazy or numba
    dispatcher of a generated module) for the types of `args` in the compile worker,
    into numba's disk cache. True: compiled there (this process now loads it); False:
    numba could not compile it; None: no worker, or `fn` cannot be imported by another
    process (compile it here)."""
    if not _worker_on[0]:
        return None
    fn = getattr(fn, "py_func", fn)  # (a dispatcher: the function it compiles)
    name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", "")
    if not name or name == "__main__" or "<" in qualname:
        return None
    request = ("compile", _sources.get(name), name, qualname, slp, describe(args),
               os.environ.get("TAPEFLOW_CACHE"))  # (this process's cache, as it is now)
    with _worker_lock:
        worker = _the_worker()
        if worker is None:
            return None
        try:
            reply = worker.ask(request)
        except (OSError, EOFError, pickle.PickleError, struct.error):
            worker.close()
            _worker[0] = None  # (it died: compile here from now on)
            return None
    if reply[0] == "ok":
        return True
    if reply[0] == "numba":
        return False
    return None  # (the worker could not do it: e.g. the module does not import there)


class Loop:
    """`fn`, a loop over arrays written in numba's subset of Python, compiled (and cached
    on disk by numba) once per argument types. `ready(*args)` returns the compiled
    function for the types of `args`, or None while it compiles in the background, when
    numba is not installed, or when numba could not compile it: the caller then runs its
    NumPy formulation, which the loop must equal. `slp=True` compiles it with LLVM's SLP
    vectorizer (`slp_vectorized`). A loop runs on the thread that calls it (kernels split
    work over the intra-op pool's threads themselves: `threads.run_chosen`)."""

    def __init__(self, fn: Callable, cache: bool = True, slp: bool = False):
        self.fn = fn
        self.cache = cache  # on disk (not for a loop calling C functions by address)
        self.slp = slp
        self._jit: Any = None
        self._state: dict = {}  # argument types -> True | False (failed) | Future

    def ready(self, *args) -> Callable | None:
        """The compiled function for the types of `args`, or None while it compiles in
        the background (its compile starts now), without numba, or when numba could not
        compile it."""
        return self._lookup(args, wait=False)

    def ready_now(self, *args) -> Callable | None:
        """The compiled function for the types of `args`, compiled (or loaded from the
        disk cache) on this call if need be, waiting for a background compile of it;
        None only without numba or when numba could not compile it."""
        return self._lookup(args, wait=True)

    def _lookup(self, args: tuple, wait: bool) -> Callable | None:
        # (numba.typeof costs microseconds an argument: a cheaper key finds the state)
        key = tuple((a.dtype.num, a.ndim, a.flags.c_contiguous) if isinstance(a, np.ndarray)
                    else type(a) for a in args)
        state = self._state.get(key)
        if state is None:
            if not available():
                self._state[key] = False
                return None
            if wait or not _background[0]:
                return self._jit if self._compile(key, args) else None
            # importing numba takes most of a second: that too happens on the thread
            self._state[key] = submit(self._compile, key, args, True)
            return None
        if isinstance(state, Future):
            if not wait and not state.done():
                return None
            state = self._state[key] = state.result()
        return self._jit if state else None

    def _compile(self, key: tuple, args: tuple, elsewhere: bool = False) -> bool:
        if elsewhere and self.cache:  # (before numba is imported here: see describe)
            done = compile_elsewhere(self.fn, args, self.slp)
            if done is False:
                self._state[key] = False
                return False
        if self._jit is None:
            self._jit = make_dispatcher(self.fn, self.cache)
        types_ = signature(args)
        try:
            with slp_vectorized() if self.slp else contextlib.nullcontext():
                self._jit.compile(types_)
        except Exception as e:  # noqa: BLE001 - numba could not compile: NumPy runs
            if "numba" not in type(e).__module__:
                raise
            self._state[key] = False
            return False
        self._state[key] = True
        return True
