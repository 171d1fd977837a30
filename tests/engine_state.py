"""The one check that an operation left the engine as it found it (API.md §2: bad input
"never leaves the engine's state (scopes, tapes, memory counters) inconsistent").

Example:
    >>> with assert_engine_state_intact():
    ...     with pytest.raises(InvalidArgumentError):
    ...         tf.reduce_sum(x, axis=[0, 0])
"""
from __future__ import annotations

import contextlib
import gc

import tapeflow as tf
from tapeflow._core.context import ctx


def engine_state() -> dict:
    """What must not change across a failed call: the memory counters, the tidy scope stack
    and current scope (by identity: a failed op may add dead weakrefs to the current scope,
    which tidy then skips), the active tapes and forward accumulators, and the hot path's
    `active` flag that summarises them."""
    m = tf.memory()
    return {
        "memory": (m["num_tensors"], m["num_data_buffers"], m["num_bytes"]),
        "scopes": [(name, id(scope)) for name, scope in ctx.scopes],
        "scope": id(ctx.scope) if ctx.scope is not None else None,
        "tapes": [id(t) for t in ctx.tapes],
        "accs": [id(a) for a in ctx.accs],
        "watchers": len(ctx.watchers),
        "active": ctx.active,
    }


@contextlib.contextmanager
def assert_engine_state_intact(what: str = "the call"):
    """Assert that the block leaves `engine_state()` unchanged (also when it raises: the
    exception propagates after the check, so put `pytest.raises` inside this block and
    keep no exception object past it: its traceback holds the call's temporaries).

    Garbage is collected before and after, so that only live tensors count. A full
    collection takes milliseconds in a big test process: tests making thousands of
    checks use `frozen_heap()` to make it cheap.
    """
    gc.collect()
    before = engine_state()
    try:
        yield
    finally:
        gc.collect()
        after = engine_state()
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        assert not changed, f"{what} changed the engine state (before, after): {changed}"


@contextlib.contextmanager
def frozen_heap():
    """Within the block, garbage collections skip every object that existed before it
    (gc.freeze), so the collections of `assert_engine_state_intact` cost little more than
    the objects the checked calls make. The heap is collected first and unfrozen after."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
