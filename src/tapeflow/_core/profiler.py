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

    def plot(self, path: str, title: str | None = None, annotate: int = 4) -> str:
        """Draw the memory timeline: MB in use after each kernel, in the order they ran,
        with the `annotate` largest allocations named and the peak marked (needs
        matplotlib, extra `plot`). Returns `path`.

        Example:
            >>> tf.profile(lambda: tf.ones([256, 256]) @ tf.ones([256, 256])).plot("mem.png")
            'mem.png'
        """
        try:  # optional (extra "plot"): only drawing a plot needs it
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("ProfileInfo.plot needs matplotlib: pip install "
                              "'tapeflow[plot]'") from e
        ks = self["kernels"]
        mb = [k["total_bytes_snapshot"] / 1e6 for k in ks]
        steps = list(range(1, len(ks) + 1))
        fig, ax = plt.subplots(figsize=(9, 4))
        ax.step(steps, mb, where="post", color="tab:blue", linewidth=1.5)
        ax.fill_between(steps, mb, step="post", alpha=0.15, color="tab:blue")
        peak = self["peak_bytes"] / 1e6
        ax.axhline(peak, color="tab:red", linestyle="--", linewidth=1)
        ax.annotate(f"peak {peak:.3g} MB", xy=(1, peak), xycoords=("axes fraction", "data"),
                    xytext=(-4, 4), textcoords="offset points", ha="right", color="tab:red",
                    fontsize=8)
        # the few largest allocations, named once each at the kernel that made them
        largest = sorted((i for i, k in enumerate(ks) if k["bytes_added"] > 0),
                         key=lambda i: ks[i]["bytes_added"], reverse=True)[:annotate]
        notes = []
        for n, i in enumerate(sorted(largest), 1):  # numbered on the curve, named in a box
            k = ks[i]
            ax.plot([i + 1], [mb[i]], "o", color="tab:orange", markersize=4)
            ax.annotate(str(n), xy=(i + 1, mb[i]), xytext=(0, 5), textcoords="offset points",
                        ha="center", fontsize=8, color="tab:orange", fontweight="bold")
            notes.append(f"{n}: {k['name']} +{k['bytes_added'] / 1e6:.3g} MB (call {i + 1})")
        if notes:
            ax.text(0.01, 0.97, "largest allocations\n" + "\n".join(notes),
                    transform=ax.transAxes, va="top", ha="left", fontsize=8,
                    bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85,
                          "edgecolor": "0.7"})
        ax.set_xlabel("kernel call (in the order they ran)")
        ax.set_ylabel("memory in use (MB)")
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        ax.set_xlim(0, max(len(ks), 1) + 1)
        ax.set_ylim(0, max(mb + [peak]) * 1.45 or 1.0)
        total_ms = sum(k["kernel_ms"] for k in ks)
        ax.set_title(title or f"Memory timeline: {len(ks)} kernel calls, {total_ms:.3g} ms in "
                     f"kernels, peak {peak:.3g} MB")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
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
