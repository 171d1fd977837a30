"""The threads one op may use (`tf.config.threading`'s intra-op threads): one shared pool;
`blas_threads(n)`, the scope in which a kernel's BLAS calls run on `n` threads (one
unless the kernel asks for more, see backends/numpy/gemm.py); and `ThreadChoice`,
which decides by measured times whether a kernel's next call splits its work over the
threads or runs on the calling thread, for kernels whose results are the same bits either
way (API §6.7: a choice that can change bits is made from shapes alone).

    >>> with blas_threads(1):               # NumPy's BLAS on this thread only
    ...     y = np.matmul(a, b)
    >>> choice = ThreadChoice()
    >>> several = choice.several()          # split this call?
    >>> choice.record(several, seconds)     # how long it took
"""
from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import threadpoolctl

from .context import intra_op_threads

_pool: list = []


def pool() -> ThreadPoolExecutor:
    """The pool whose threads run parts of one op (NumPy and BLAS release the GIL). Its
    threads wait on a queue: an idle one takes no core."""
    if not _pool:
        _pool.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                        thread_name_prefix="tapeflow-intra-op"))
    return _pool[0]


def run_parts(run, parts: list, threads: int) -> None:
    """`run(*part)` for every part, on this thread and up to `threads - 1` of the pool's,
    each taking the next part left until none is: which thread runs a part never changes
    what it computes (the parts are fixed by the caller from shapes), and a thread that
    waits for a core another process holds delays only the part it took, not the call
    (a fixed share per thread would wait for the slowest). Returns when every part is
    done, without waiting for pool threads that never got a core to start."""
    if threads < 2 or len(parts) < 2:
        for part in parts:
            run(*part)
        return
    pending = iter(parts)
    lock = threading.Lock()
    left = [len(parts)]
    done = threading.Event()
    errors: list = []

    def work():
        while True:
            with lock:
                part = next(pending, None)
            if part is None:
                return
            try:
                run(*part)
            except BaseException as e:  # noqa: BLE001 - raised on the calling thread
                errors.append(e)
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

    for _ in range(min(threads, len(parts)) - 1):
        pool().submit(work)
    work()
    done.wait()
    if errors:
        raise errors[0]


class _Library:
    """One BLAS library's thread count, read and set. For OpenBLAS, through its own C
    functions (`openblas_get_num_threads`/`openblas_set_num_threads`, under the name
    prefix and suffix of NumPy's and SciPy's builds) found in the library threadpoolctl
    loaded: about 0.2 us a call, where threadpoolctl's Python wrappers take 1-2 us (twice
    per kernel, on every product); other BLAS through threadpoolctl."""

    def __init__(self, controller):
        self.get, self.set = controller.get_num_threads, controller.set_num_threads
        dynlib = getattr(controller, "dynlib", None)
        if controller.internal_api != "openblas" or dynlib is None:
            return
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_"):
                try:
                    get = getattr(dynlib, f"{prefix}openblas_get_num_threads{suffix}")
                    put = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}")
                except AttributeError:
                    continue
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                self.get, self.set = get, put
                return


class _Blas:
    """The BLAS libraries loaded in this process (threadpoolctl finds OpenBLAS, MKL or
    BLIS, whichever NumPy and SciPy were built with) and the thread counts kernels ask
    for (`blas_threads`): the first kernel to enter saves what the libraries had, each
    sets its count, and when the last leaves the program's own setting is back. NumPy's
    BLAS would otherwise run a small product on every core, and its idle threads spin
    for a while after each product they share: on a machine whose cores other processes
    keep busy, a product can wait for a thread that has no core."""

    def __init__(self):
        self._lock = threading.Lock()
        self._gets: list | None = None  # each library's thread count, read
        self._sets: list = []           # and set
        self._asked: list = []  # the counts of the kernels inside, innermost last
        self._saved: list = []  # the libraries' counts before the first entered

    def _find(self) -> None:
        libraries = [_Library(c) for c in threadpoolctl.ThreadpoolController()
                     .select(user_api="blas").lib_controllers]
        self._sets = [lib.set for lib in libraries]
        self._gets = [lib.get for lib in libraries]

    # (enter and leave run around every BLAS kernel called eagerly, and once per program
    # run: kept to a few C calls, and to none when the count asked is the one set)
    def enter(self, n: int) -> None:
        """Ask for `n` BLAS threads until the matching `leave` (scopes nest)."""
        with self._lock:
            asked = self._asked
            if asked:
                if asked[-1] != n:
                    for put in self._sets:
                        put(n)
            else:
                if self._gets is None:
                    self._find()
                self._saved = saved = [get() for get in self._gets]
                for put, count in zip(self._sets, saved):
                    if count != n:
                        put(n)
            asked.append(n)

    def leave(self) -> None:
        """End the innermost `enter`: the enclosing scope's count is back, or, when the
        last scope ends, what the libraries had before the first."""
        with self._lock:
            asked = self._asked
            n = asked.pop()
            if asked:
                if asked[-1] != n:
                    for put in self._sets:
                        put(asked[-1])
                return
            for put, count in zip(self._sets, self._saved):
                if count != n:
                    put(count)


blas = _Blas()


class blas_threads:
    """A kernel's BLAS calls run on `n` threads inside this scope (default 1: the calling
    thread), whatever the program set for its own NumPy calls, which get their setting
    back when the scope ends. Kernels choose `n` from their operands' shapes and the
    intra-op threads alone (API 6.7), never from timings.

        >>> with blas_threads(1):
        ...     y = np.matmul(a, b)
    """

    __slots__ = ("n",)

    def __init__(self, n: int = 1):
        self.n = max(1, int(n))

    def __enter__(self):
        blas.enter(self.n)

    def __exit__(self, *exc):
        blas.leave()


class ThreadChoice:
    """Whether a kernel's next call runs on one thread or on several, by their measured
    times. Several threads win on idle cores and lose badly on busy ones (each waits for
    its turn at a core, and the call for the last of them: several times slower than one
    thread when other processes fill the machine), so every call is timed and the slower
    choice is tried again every `EXPLORE` calls (and at calls 8 and 16), in case the
    machine has changed."""
    EXPLORE = 32
    RECENT = 3  # a choice's estimate: the best of its last RECENT timed runs

    def __init__(self):
        self.seconds = [0.0, 0.0]  # the estimates: [one thread, several]
        self.runs = [0, 0]
        self.calls = 0
        self._recent: list = [[], []]

    def several(self) -> bool:
        self.calls += 1
        if min(self.runs) < 2:  # each choice twice, alternating, several threads first
            return self.runs[1] <= self.runs[0]
        faster = self.seconds[1] < self.seconds[0]
        # the slower choice again every EXPLORE calls, and sooner at first (calls 8, 16):
        # the first measurements may have met a passing load
        explore = self.calls % self.EXPLORE == 0 or self.calls in (8, 16)
        return not faster if explore else faster

    def record(self, several: bool, seconds: float) -> None:
        # the best of the last few runs: one run slowed by a passing load does not flip
        # the choice, a load that stays does (every recent run of that choice is slow)
        k = int(several)
        recent = self._recent[k]
        if self.runs[k] == 1:  # a choice's first run may include loading or compiling
            recent.clear()
        recent.append(seconds)
        del recent[:-self.RECENT]
        self.seconds[k] = min(recent)
        self.runs[k] += 1


def choice_for(choices: dict, key) -> ThreadChoice:
    """The ThreadChoice a kernel keeps for `key` (its operands' shapes) in `choices`, made
    on first use; the table starts over past 4096 keys (shapes that keep changing)."""
    choice = choices.get(key)
    if choice is None:
        if len(choices) > 4096:
            choices.clear()
        choice = choices[key] = ThreadChoice()
    return choice


def run_chosen(run, parts: list, choices: dict, key) -> None:
    """`run(*part)` for every part, on this thread and the pool's (`run_parts`) or on this
    thread alone, whichever the ThreadChoice `choices[key]` measured faster. The parts
    are fixed by the caller from shapes and compute the same bits on any thread, so the
    measured choice never changes a result (API 6.7).

        >>> run_chosen(lambda lo, hi: work(lo, hi), [(0, 8), (8, 16)], CHOICES, shape)
    """
    threads = intra_op_threads()
    if threads < 2 or len(parts) < 2:
        for part in parts:
            run(*part)
        return
    choice = choice_for(choices, key)
    several = choice.several()
    start = time.perf_counter()
    run_parts(run, parts, threads if several else 1)
    choice.record(several, time.perf_counter() - start)
