"""Output arrays a kernel may take again: a new large NumPy array costs a page fault per
4 KB on its first write (the allocator hands fresh pages to large arrays), so kernels on
hot paths keep their last output of each shape and take it again once nothing else holds
it (sys.getrefcount tells: the kernel's own reference is the only one left).

    >>> spare = Spares()
    >>> out = spare.empty((32, 26, 26, 8), np.dtype(np.float32))   # written, returned
"""
from __future__ import annotations

import sys
import threading

import numpy as np


def _held_once() -> int:
    """What sys.getrefcount shows for a list item held by nothing else (measured: it
    depends on the interpreter)."""
    box = [np.empty(1)]
    return sys.getrefcount(box[0])


_HELD_ONCE = _held_once()
_lock = threading.Lock()
MAX_SHAPES = 16  # shapes kept per kernel (more: start over)
PER_SHAPE = 4    # arrays kept per shape (a step may hold several outputs of one shape)


class Spares:
    """One kernel's kept output arrays, by shape and dtype."""

    def __init__(self):
        self._kept: dict = {}

    def empty(self, shape: tuple, dtype) -> np.ndarray:
        """An uninitialized array of `shape` and `dtype`: a kept one that is free, else
        a new one (kept from now on, unless PER_SHAPE are)."""
        key = (tuple(shape), dtype)
        with _lock:  # (two threads must not take the same array)
            arrays = self._kept.get(key)
            if arrays is None:
                if len(self._kept) >= MAX_SHAPES:
                    self._kept.clear()
                arrays = self._kept[key] = []
            for k in range(len(arrays)):
                if sys.getrefcount(arrays[k]) == _HELD_ONCE:
                    return arrays[k]
            out = np.empty(shape, dtype)
            if len(arrays) < PER_SHAPE:
                arrays.append(out)
            return out

    def zeros(self, shape: tuple, dtype) -> np.ndarray:
        out = self.empty(shape, dtype)
        out.fill(0)
        return out
