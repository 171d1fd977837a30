"""Summing gradients across processes while the backward pass still runs.

Inside an eager `strategy.run` with several processes, `GradientBuckets` listens to the
tape (`ctx.gradient_observers`): as each trainable variable's gradient is complete it
joins the open bucket, and a bucket of `bytes_per_pack` bytes starts its non-blocking
all-reduce (MPI_Iallreduce) at once, as PyTorch DDP's buckets and Horovod's tensor
fusion do. `apply_gradients` then only waits for the sums (`take`). Traced steps sum
their gradients with the CollectiveAllReduce node instead (the graph has no tape).

A gradient is used from here only if `apply_gradients` receives that very tensor; one
changed in between (clipped, scaled) is summed again there, so the result is always the
sum of what was applied.
"""
from __future__ import annotations

import numpy as np

from .._core.context import ctx
from .._core.indexed_slices import IndexedSlices
from .._core.memory import wrap_native
from .._core.tensor import Tensor
from .._core.variable import Variable


class GradientBuckets:
    """The gradients of one `strategy.run`, sent bucket by bucket as they are ready."""

    def __init__(self, group, bucket_bytes: int):
        self._group = group
        self._bucket_bytes = bucket_bytes
        self._open: list = []    # (variable, gradient) not sent yet
        self._open_bytes = 0
        self._sent: list = []    # (PendingSum, [(variable, gradient)])
        self._done: dict = {}    # id(gradient) -> (gradient, its sum)

    def gradient_ready(self, source, gradient) -> None:
        """The tape's call: `gradient` of `source` is complete."""
        if (ctx.graph is not None or not isinstance(source, Variable) or not source.trainable
                or isinstance(gradient, IndexedSlices) or not isinstance(gradient, Tensor)
                or gradient.dtype != source.dtype):
            return
        self._open.append((source, gradient))
        self._open_bytes += gradient.numpy().nbytes
        if self._open_bytes >= self._bucket_bytes:
            self._send()
            stats = getattr(self._group, "stats", None)
            if stats is not None:  # what the benchmark and tests read
                stats["buckets_during_backward"] = stats.get("buckets_during_backward", 0) + 1
        for pending, _ in self._sent:  # MPI moves messages along only inside its calls
            pending.test()

    def _send(self) -> None:
        if not self._open:
            return
        items, self._open, self._open_bytes = self._open, [], 0
        pending = self._group.iallreduce([np.asarray(g.numpy()) for _, g in items],
                                         tuple(v.name for v, _ in items))
        self._sent.append((pending, items))

    def take(self) -> dict:
        """Send what is left, wait for every bucket: {id(gradient): (gradient, sum)}."""
        self._send()
        for pending, items in self._sent:
            for (_, g), total in zip(items, pending.wait()):
                self._done[id(g)] = (g, wrap_native(total))
        self._sent = []
        return self._done

    def summed(self, gradient):
        """The sum of `gradient` if it was sent (this very tensor), else None."""
        hit = self.take().get(id(gradient))
        return hit[1] if hit is not None and hit[0] is gradient else None
