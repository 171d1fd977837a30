"""The threads one op may use (`tf.config.threading`'s intra-op threads): one shared pool,
and `ThreadChoice`, which decides by measured times whether a kernel's next call splits
its work over them or runs on the calling thread.

    >>> choice = ThreadChoice()
    >>> several = choice.several()          # split this call?
    >>> choice.record(several, seconds)     # how long it took
"""
from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import ThreadPoolExecutor

from .context import intra_op_threads
from .jit import set_threads

_pool: list = []
_started = itertools.count()


def _pin() -> None:
    """Keep each pool thread on a core of its own (the k-th started on the k-th core the
    process may use). Left free, Linux placed both parts of a split on one core after a
    burst of compiling on the other (the wake-up placement follows recent load): a 2-way
    split then ran no faster than one thread (W3 after cold compiles: 21 ms, pinned 12)."""
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            try:
                os.sched_setaffinity(0, {cores[next(_started) % len(cores)]})
            except OSError:  # (a container that forbids it: the thread stays free)
                pass


def pool() -> ThreadPoolExecutor:
    """The pool whose threads run parts of one op (NumPy and BLAS release the GIL)."""
    if not _pool:
        _pool.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                        thread_name_prefix="tapeflow-intra-op",
                                        initializer=_pin))
    return _pool[0]


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
