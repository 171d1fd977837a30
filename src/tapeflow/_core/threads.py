"""The threads one op may use (`tf.config.threading`'s intra-op threads): one shared pool;
`blas_one_thread`, the scope in which a kernel's BLAS calls run on the calling thread
(tapeflow splits large products itself, see backends/numpy/gemm.py); and `ThreadChoice`,
which decides by measured times whether a kernel's next call splits its work over the
threads or runs on the calling thread, for kernels whose results are the same bits either
way (API §6.7: a choice that can change bits is made from shapes alone).

    >>> with blas_one_thread():             # NumPy's BLAS on this thread only
    ...     y = np.matmul(a, b)
    >>> choice = ThreadChoice()
    >>> several = choice.several()          # split this call?
    >>> choice.record(several, seconds)     # how long it took
"""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import threadpoolctl

from .context import intra_op_threads
from .jit import set_threads

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


class _Blas:
    """The BLAS libraries loaded in this process (threadpoolctl finds OpenBLAS, MKL or
    BLIS, whichever NumPy and SciPy were built with) and a process-wide count of kernels
    inside `blas_one_thread`: the first to enter sets them to one thread, the last to
    leave puts back what they had. OpenBLAS's threads spin for a while after each product
    they share (about 0.1 s): on a machine whose cores other processes keep busy, a
    128x64x64 product took 10x longer on two BLAS threads than on one."""

    def __init__(self):
        self._lock = threading.Lock()
        self._libraries: list | None = None
        self._inside = 0
        self._saved: list = []

    def libraries(self) -> list:
        if self._libraries is None:
            self._libraries = threadpoolctl.ThreadpoolController().select(
                user_api="blas").lib_controllers
        return self._libraries

    def enter(self) -> None:
        with self._lock:
            if self._inside == 0:
                self._saved = []
                for lib in self.libraries():
                    threads = lib.get_num_threads()
                    if threads != 1:
                        lib.set_num_threads(1)
                        self._saved.append((lib, threads))
            self._inside += 1

    def leave(self) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside == 0:
                for lib, threads in self._saved:
                    lib.set_num_threads(threads)
                self._saved = []

    def set_threads(self, n: int) -> None:
        """Every BLAS library's threads (`set_intra_op_parallelism_threads`)."""
        with self._lock:
            for lib in self.libraries():
                lib.set_num_threads(n)


blas = _Blas()


class blas_one_thread:
    """A kernel's BLAS calls run on the calling thread inside this scope (and on the
    pool's threads, for the parts of a product tapeflow splits): small products never
    wake BLAS's threads, and no BLAS thread spins for a core that other work needs."""

    __slots__ = ()

    def __enter__(self):
        blas.enter()

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


def run_images(run, args: tuple, batch: int, choices: dict, key) -> None:
    """`run(*args, parts)`, a compiled parallel loop whose `parts` runs of images split
    over numba's threads: one run on the calling thread for a batch of one or one intra-op
    thread, else split when measured faster (the ThreadChoice `choices[key]`)."""
    if batch < 2 or intra_op_threads() < 2:
        run(*args, 1)
        return
    choice = choice_for(choices, key)
    several = choice.several()
    start = time.perf_counter()
    if several:
        parts = min(intra_op_threads(), batch)
        set_threads(parts)
        run(*args, parts)
    else:
        run(*args, 1)
    choice.record(several, time.perf_counter() - start)
