"""The execution context: per-thread state that decides what `run_kernel` does with an op.

Nothing here imports the rest of tapeflow: tensors, memory scopes, dispatch and autodiff all
read this state, and autodiff plugs into dispatch through `hooks` (set once at import), so
the core has no import cycles.
"""
from __future__ import annotations

import os
import threading
from typing import Callable


class Context(threading.local):
    """Per-thread engine state. `active` is the one flag the hot path reads: false means
    no tape, accumulator, variable watcher, profiler or debug check wants to see ops."""

    def __init__(self) -> None:
        self.scope: list | None = None  # weakrefs of tensors made in the current tidy scope
        self.scopes: list = []          # (name, scope list) of the enclosing tidy scopes
        self.tapes: list = []           # tapes recording now (innermost last)
        self.accs: list = []            # forward accumulators active now (innermost last)
        self.watchers: list = []        # variable watchers (custom_gradient collects reads)
        self.profilers: list = []
        self.graph = None               # the FuncGraph being traced (tapeflow.function)
        self.name_scopes: list = []     # full scope names entered ("a/", "a/b/"), innermost last
        # objects told of each Variable made here (`variable_created(variable)`): a
        # checkpoint restore with values waiting for variables not made yet, registered only
        # while they wait (train/checkpoint/status.py)
        self.variable_observers: list = []
        # objects told, during tape.gradient, as each source's gradient is complete
        # (`gradient_ready(source, gradient)`): a distribution strategy starts summing
        # them across processes while the backward pass goes on (distribute/overlap.py)
        self.gradient_observers: list = []
        self.debug = False
        # (op name, site, "backward"/"JVP") of the rules running now: debug mode blames
        # the op being differentiated for a NaN that one of its rule's ops produces
        self.rule_of: list = []
        self.active = debug_on[0]
        with _lock:  # so set_debug can reach this thread's state too
            _states[threading.get_ident()] = self.__dict__

    def refresh(self) -> None:
        self.active = bool(self.tapes or self.accs or self.watchers or self.profilers
                           or self.graph is not None or self.debug or debug_on[0])


def set_debug_everywhere(on: bool) -> None:
    """Switch the process-wide debug check for every thread's context, not only this
    one: each thread's hot path reads only its own `active` flag."""
    debug_on[0] = bool(on)
    alive = {t.ident for t in threading.enumerate()}
    with _lock:
        for ident in list(_states):
            if ident not in alive:
                del _states[ident]  # a finished thread (ids may be reused: checked first)
                continue
            state = _states[ident]
            state["active"] = bool(state["tapes"] or state["accs"] or state["watchers"]
                                   or state["profilers"] or state["graph"] is not None
                                   or state["debug"] or debug_on[0])


debug_on = [False]  # config.set_debug: process-wide, read through a list for speed
# config.experimental.enable_op_determinism: every op is deterministic anyway (API 6.7);
# what it adds is TensorFlow's checks (random ops need a seed, tf.data keeps order)
op_determinism = [False]
# tf.config.threading: threads one op may use (fused loops, NumPy blocks) and threads for
# independent ops; 0 lets tapeflow choose (the machine's cores)
parallelism = {"intra_op": 0, "inter_op": 0}
_CORES = os.cpu_count() or 1  # (asked once: the call costs microseconds, on every op)


def intra_op_threads() -> int:
    """Threads one op may use: the configured number, else the machine's cores."""
    return parallelism["intra_op"] or _CORES


def set_parallelism(kind: str, n: int) -> None:
    """`tf.config.threading.set_{kind}_parallelism_threads(n)` (0: tapeflow chooses)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"set_{kind}_parallelism_threads: the number of threads must be "
                         f"an int >= 0 (0: the system's choice), got {n!r}")
    parallelism[kind] = n
_states: dict = {}  # thread id -> that thread's context state (its attribute dict)
_lock = threading.Lock()
ctx = Context()


class Hooks:
    """What autodiff and the tracer install into dispatch: `record(name, inputs, attrs,
    outs)` (tapes and variable watchers), `jvp(name, inputs, attrs, outs)` (forward
    accumulators), `trace(name, inputs, attrs)` (an op called while a graph is being
    traced) and `note_event(kind, tensor_id)` (tape.explain() learns of NumPy round trips)."""

    record: Callable | None = None
    trace: Callable | None = None
    lift: Callable | None = None  # (initial value, variable) -> eager initial value
    jvp: Callable | None = None
    note_event: Callable | None = None


hooks = Hooks()
