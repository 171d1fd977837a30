"""The compile process of `jit.compile_elsewhere`: compiles loops with numba into numba's
disk cache, one request at a time, at a low priority, so the process that asked keeps its
GIL, its cores and its memory for the user's work meanwhile.

A request is `("compile", (source, kind) | None, module, qualname, slp,
arguments as jit.describe gives them, cache directory)`: the module (first written from
`source` when it is generated code) is imported here, its function (or numba dispatcher,
or a generated module's jit.Lazy) compiled for the arguments' types exactly as `jit.Loop`
makes it, so the cache entry written is the one the asking process
looks up. The reply is `("ok",)`, `("numba", message)` when numba cannot compile it, or
`("error", message)`. The process ends when its stdin closes or its parent dies.

    >>> # started by jit.compile_elsewhere; never by hand
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pickle
import signal
import struct
import sys
import threading

from . import jit


def _die_with_parent() -> None:
    try:  # Linux: SIGKILL this process when the one that started it ends
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _compile(request: tuple) -> tuple:
    _, generated, module_name, qualname, slp, described, cache = request
    if cache is None:  # the asking process's cache directory (jit.cache_dir)
        os.environ.pop("TAPEFLOW_CACHE", None)
    else:
        os.environ["TAPEFLOW_CACHE"] = cache
    if generated is not None:
        jit.source_module(*generated)
    obj = sys.modules.get(module_name) or importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    from numba.core.dispatcher import Dispatcher  # optional: the jit extra (the asker has it)
    obj = jit.real(obj)  # (a Lazy of a generated module: its numba dispatcher)
    dispatcher = obj if isinstance(obj, Dispatcher) else jit.make_dispatcher(obj)
    try:
        with jit.slp_vectorized() if slp else contextlib.nullcontext():
            dispatcher.compile(jit.signature_of(described))
    except Exception as e:  # noqa: BLE001 - reported to the asking process
        if "numba" in type(e).__module__ or isinstance(e, RecursionError):
            return ("numba", f"{type(e).__name__}: {e}"[:2000])
        raise
    return ("ok",)


def main() -> None:
    _die_with_parent()
    try:
        os.nice(10)  # the asking process's steps come first
    except OSError:
        pass
    sys.setrecursionlimit(100000)  # numba's analyses recurse along long kernels
    # ... on a thread with a deep C stack (as jit.submit's compile thread)
    threading.stack_size(256 << 20)
    thread = threading.Thread(target=_serve, name="tapeflow-compile-worker")
    thread.start()
    thread.join()


def _serve() -> None:
    channel_in = os.fdopen(os.dup(0), "rb")
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # (whatever numba prints goes to stderr, not into a reply)
    while True:
        head = channel_in.read(4)
        if len(head) < 4:
            return
        (size,) = struct.unpack("<I", head)
        request = pickle.loads(channel_in.read(size))
        try:
            reply = _compile(request)
        except BaseException as e:  # noqa: BLE001 - the asking process compiles it then
            reply = ("error", f"{type(e).__name__}: {e}"[:2000])
        data = pickle.dumps(reply, protocol=4)
        channel_out.write(struct.pack("<I", len(data)) + data)
        channel_out.flush()


if __name__ == "__main__":
    main()
