"""profile() and time(): what each kernel of a computation costs in memory and time.

A profiler is a listener of the dispatch path: while one is active, `run_kernel` reports
every kernel call to it (see dispatch._run_hooked).
"""
from __future__ import annotations

import contextlib
import time as _time
from typing import Callable

from .context import ctx
from .tensor import counters


class ProfileInfo(dict):
    """The result of `profile()`: a dict with a `.plot(path)` memory timeline."""

    def plot(self, path: str) -> str:
        """Draw bytes in use after each kernel (needs matplotlib, extra `plot`)."""
        try:  # optional (extra "plot"): only drawing a plot needs it
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("ProfileInfo.plot needs matplotlib: pip install "
                              "'tapeflow[plot]'") from e
        ks = self["kernels"]
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.step(range(len(ks)), [k["total_bytes_snapshot"] for k in ks], where="post")
        ax.set_xlabel("kernel")
        ax.set_ylabel("bytes in use")
        ax.set_xticks(range(len(ks)))
        ax.set_xticklabels([k["name"] for k in ks], rotation=90, fontsize=6)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path


class _Profiler:
    def __init__(self, keep_records: bool = True):
        self.kernels, self.peak, self.kernel_ms = [], counters[2], 0.0
        self.details: list = []
        self.keep_records = keep_records

    def on_kernel(self, name, inputs, attrs, outs, kernel_ms, b0, n0):
        num_bytes, num_tensors = counters[2], counters[0]
        self.peak = max(self.peak, num_bytes)
        self.kernel_ms += kernel_ms
        if not self.keep_records:
            return
        # shapes and dtypes only: a profile must not keep the tensors themselves alive
        shapes = {k: ([x._shape for x in v] if isinstance(v, (list, tuple)) else v._shape)
                  for k, v in inputs.items()}
        dtypes = {k: ([x.dtype for x in v] if isinstance(v, (list, tuple)) else v.dtype)
                  for k, v in inputs.items()}
        self.kernels.append({
            "name": name, "bytes_added": num_bytes - b0, "total_bytes_snapshot": num_bytes,
            "tensors_added": num_tensors - n0, "total_tensors_snapshot": num_tensors,
            "input_shapes": [([list(x) for x in v] if isinstance(v, list) else list(v))
                             for v in shapes.values()],
            "output_shapes": [list(o._shape) for o in outs], "kernel_ms": kernel_ms})
        # beside the documented records: what tests need to check shape rules on real calls
        self.details.append({"shapes": shapes, "dtypes": dtypes, "attrs": attrs,
                             "output_dtypes": [o.dtype for o in outs]})


@contextlib.contextmanager
def _profiling(keep_records: bool = True):
    p = _Profiler(keep_records)
    ctx.profilers.append(p)
    ctx.refresh()
    try:
        yield p
    finally:
        ctx.profilers.remove(p)
        ctx.refresh()


def profile(fn: Callable) -> ProfileInfo:
    """Run `fn` and report memory and per-kernel activity.

    Example:
        >>> info = tf.profile(lambda: tf.ones([4]) * 2)
        >>> info["kernels"][-1]["name"], info["new_tensors"]
        ('Mul', ...)
    """
    b0, n0 = counters[2], counters[0]
    with _profiling() as p:
        result = fn()
    info = ProfileInfo(new_bytes=counters[2] - b0, new_tensors=counters[0] - n0,
                       peak_bytes=p.peak, kernels=p.kernels, result=result)
    info.details = p.details  # per kernel: input shapes/dtypes by name, attrs, output dtypes
    return info


def time(fn: Callable) -> dict:
    """Wall-clock and summed kernel time of `fn` in milliseconds.

    Example:
        >>> t = tf.time(lambda: tf.ones([100]) + 1); sorted(t)
        ['kernel_ms', 'wall_ms']
    """
    t0 = _time.perf_counter()
    with _profiling(keep_records=False) as p:
        fn()
    return {"wall_ms": (_time.perf_counter() - t0) * 1e3, "kernel_ms": p.kernel_ms}
