"""Collectives between replicas, over MPI (mpi4py) or within one process.

A `Group` is the set of replicas a strategy runs: `MPIGroup` is one replica per MPI
process (MPI_COMM_WORLD), `LocalGroup` the single replica of a process not launched by
`mpiexec`. The two collectives a training step needs are ops, so a traced step keeps them
as stateful nodes of its graph: `CollectiveAllReduce` sums a list of tensors across the
group (packed into one flat buffer per dtype and bucket, as Horovod's tensor fusion and
DDP's buckets do, so many small gradients make a few large messages) and
`CollectiveAllGather` concatenates each replica's tensor along axis 0 (IndexedSlices
gradients travel this way, never densified).

Every all-reduce first exchanges a 64-bit hash of what it is about to sum (names, shapes,
dtypes); replicas that disagree (a variable of another shape, another number of
variables) stop with an error naming the first variable that differs instead of summing
garbage or waiting forever on a message of another size.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
import traceback

import numpy as np

from .._core.context import parallelism
from .._core.dispatch import run_kernel
from .._core.errors import InvalidArgumentError
from .._core.memory import wrap_native
from .._core.tensor import Tensor
from ..ops._define import defop

# MPI launchers announce the job's size to each process in these variables
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")


def launched_size() -> int:
    """How many processes the MPI launcher started (1 outside `mpiexec`)."""
    for name in _SIZE_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


class Group:
    """The replicas of a strategy and the collectives between them (rank, size)."""

    rank: int = 0
    size: int = 1

    def allreduce(self, arrays: list, names: tuple) -> list:
        """The element-wise sums of `arrays` over the group."""
        raise NotImplementedError

    def allgather(self, array: np.ndarray) -> np.ndarray:
        """Every replica's `array` concatenated along axis 0, in rank order."""
        raise NotImplementedError

    def broadcast(self, array: np.ndarray, name: str) -> np.ndarray:
        """Rank 0's `array` on every replica (shapes and dtypes must agree)."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Wait until every replica has arrived here."""

    def broadcast_object(self, value):
        """Rank 0's picklable `value` on every replica."""
        return value


class LocalGroup(Group):
    """A group of one: every collective is the identity."""

    def allreduce(self, arrays, names):
        return [np.asarray(a) for a in arrays]

    def allgather(self, array):
        return np.asarray(array)

    def broadcast(self, array, name):
        return np.asarray(array)

    def __repr__(self) -> str:
        return "LocalGroup()"


def signature(names, arrays) -> list:
    """What replicas must agree on before summing: (name, shape, dtype) per tensor."""
    return [(str(n), tuple(np.shape(a)), np.asarray(a).dtype.str)
            for n, a in zip(names, arrays)]


def _digest(sig) -> int:
    return int.from_bytes(hashlib.blake2b(repr(sig).encode(), digest_size=8).digest(),
                          "little", signed=True)


def mismatch(signatures: list) -> str | None:
    """A message naming the first tensor on which the replicas' signatures differ."""
    first = signatures[0]
    for rank, sig in enumerate(signatures[1:], 1):
        if sig == first:
            continue
        for i in range(max(len(first), len(sig))):
            a = first[i] if i < len(first) else None
            b = sig[i] if i < len(sig) else None
            if a != b:
                def show(s):
                    return "nothing" if s is None else f"{s[0]!r} of shape {list(s[1])}, " \
                                                       f"dtype {np.dtype(s[2]).name}"
                return (f"replica 0 has {len(first)} tensors and replica {rank} has "
                        f"{len(sig)}; tensor {i}: replica 0 has {show(a)}, replica {rank} "
                        f"has {show(b)}")
    return None


class MPIGroup(Group):
    """One replica per MPI process of MPI_COMM_WORLD."""

    def __init__(self, bucket_bytes: int = 4 << 20):
        # mpi4py is the optional `mpi` extra: imported only when a job runs on MPI
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.bucket_bytes = int(bucket_bytes)
        # what benchmarks read: calls, messages, bytes summed or gathered, seconds in MPI
        self.stats = {"allreduce_calls": 0, "bytes": 0, "messages": 0, "comm_s": 0.0}
        self._agreed: set = set()  # signatures the replicas were found to agree on
        # flat send/receive buffers kept from call to call, by (signature, bucket): MPI
        # moves a buffer it has seen before several times faster than a new one (a fresh
        # 1 MB buffer: 0.7 ms a sum between two processes, a reused one 0.25 ms); the sums
        # returned are views of it, so it is reused only once they are gone
        self._flats: dict = {}

    def _packed(self, digest: int, k: int, arrays: list, bucket: list) -> np.ndarray:
        """Bucket `k` of `arrays` copied into its reused flat buffer."""
        n = sum(arrays[i].size for i in bucket)
        dtype = arrays[bucket[0]].dtype
        flat = self._flats.get((digest, k))
        # (3 references: the dict's, `flat`'s and getrefcount's own; more means a sum the
        # last call returned is still in use: it is a view of this buffer, keep it)
        if flat is None or flat.size != n or flat.dtype != dtype or sys.getrefcount(flat) > 3:
            if len(self._flats) > 256:  # (signatures that keep changing: start over)
                self._flats.clear()
            flat = self._flats[(digest, k)] = np.empty(n, dtype)
        np.concatenate([arrays[i].ravel() for i in bucket], out=flat)
        return flat

    def _agree(self, names, arrays, what: str) -> int:
        """The digest of what the replicas combine, once they are found to agree on it."""
        sig = signature(names, arrays)
        digest = _digest(sig)
        # (a buffer collective of one int64 each: the pickling allgather costs more)
        mine, everyone = np.array([digest], np.int64), np.empty(self.size, np.int64)
        self.comm.Allgather(mine, everyone)
        if (everyone != digest).any():
            message = mismatch(self.comm.allgather(sig)) or "signatures differ"
            raise InvalidArgumentError(f"{what}: replicas disagree on the tensors to "
                                       f"combine: {message}")
        return digest

    def buckets(self, arrays: list) -> list:
        """Indices of `arrays` packed into buckets: same dtype, at most `bucket_bytes`
        each (a larger tensor is a bucket of its own), in order."""
        out, current, nbytes, dtype = [], [], 0, None
        for i, a in enumerate(arrays):
            if current and (a.dtype != dtype or nbytes + a.nbytes > self.bucket_bytes):
                out.append(current)
                current, nbytes = [], 0
            current.append(i)
            nbytes += a.nbytes
            dtype = a.dtype
        if current:
            out.append(current)
        return out

    def allreduce(self, arrays, names):
        arrays = [np.asarray(a, order="C") for a in arrays]
        digest = self._agree(names, arrays, "CollectiveAllReduce")
        results: list = [None] * len(arrays)
        for k, bucket in enumerate(self.buckets(arrays)):
            flat = self._packed(digest, k, arrays, bucket)
            start = time.perf_counter()
            self.comm.Allreduce(self.MPI.IN_PLACE, flat, op=self.MPI.SUM)
            self.stats["comm_s"] += time.perf_counter() - start
            self.stats["messages"] += 1
            self.stats["bytes"] += flat.nbytes
            offset = 0
            for i in bucket:  # views of the buffer (it is not reused while they live)
                n = arrays[i].size
                results[i] = flat[offset:offset + n].reshape(arrays[i].shape)
                offset += n
        self.stats["allreduce_calls"] += 1
        return results

    def iallreduce(self, arrays: list, names) -> "PendingSum":
        """Start summing `arrays` over the group (non-blocking MPI_Iallreduce, one per
        bucket); `.wait()` gives the sums. The replicas' agreement on what they sum is
        checked the first time each signature is seen."""
        arrays = [np.asarray(a, order="C") for a in arrays]
        digest = _digest(signature(names, arrays))
        if digest not in self._agreed:
            self._agree(names, arrays, "CollectiveAllReduce")
            self._agreed.add(digest)
        flats, requests = [], []
        for k, bucket in enumerate(self.buckets(arrays)):
            flat = self._packed(digest, k, arrays, bucket)
            requests.append(self.comm.Iallreduce(self.MPI.IN_PLACE, flat, op=self.MPI.SUM))
            flats.append((bucket, flat))
            self.stats["messages"] += 1
            self.stats["bytes"] += flat.nbytes
        self.stats["allreduce_calls"] += 1
        return PendingSum(self.MPI, requests, flats, [a.shape for a in arrays], self.stats)

    def allgather(self, array):
        array = np.asarray(array, order="C")
        shapes = self.comm.allgather((array.shape[1:], array.dtype.str, array.shape[0]))
        if len({s[:2] for s in shapes}) > 1:
            raise InvalidArgumentError(
                "CollectiveAllGather: replicas disagree on the rows to gather: " + ", ".join(
                    f"replica {r} has rows of shape {list(s[0])} and dtype "
                    f"{np.dtype(s[1]).name}" for r, s in enumerate(shapes)))
        counts = [s[2] for s in shapes]
        row = int(np.prod(array.shape[1:], dtype=np.int64))
        out = np.empty((sum(counts),) + array.shape[1:], array.dtype)
        start = time.perf_counter()
        self.comm.Allgatherv(array, [out, [c * row for c in counts]])
        self.stats["comm_s"] += time.perf_counter() - start
        self.stats["messages"] += 1
        self.stats["bytes"] += out.nbytes
        return out

    def broadcast(self, array, name):
        array = np.asarray(array, order="C")
        self._agree([name], [array], "broadcast of a mirrored variable")
        self.comm.Bcast(array, root=0)
        return array

    def barrier(self):
        self.comm.Barrier()

    def broadcast_object(self, value):
        return self.comm.bcast(value, root=0)

    def __repr__(self) -> str:
        return f"MPIGroup(rank={self.rank}, size={self.size})"


class PendingSum:
    """Sums in flight (MPIGroup.iallreduce): `test()` lets MPI progress them, `wait()`
    returns them as arrays of the inputs' shapes."""

    def __init__(self, MPI, requests: list, flats: list, shapes: list, stats: dict):
        self._MPI, self._requests, self._flats, self._shapes = MPI, requests, flats, shapes
        self._stats = stats

    def test(self) -> bool:
        return self._MPI.Request.Testall(self._requests)

    def wait(self) -> list:
        start = time.perf_counter()
        self._MPI.Request.Waitall(self._requests)
        # only the wait counts: the rest of the transfer overlapped the backward pass
        self._stats["comm_s"] += time.perf_counter() - start
        out: list = [None] * len(self._shapes)
        for bucket, flat in self._flats:
            offset = 0
            for i in bucket:  # views of the buffer (it is not reused while they live)
                n = int(np.prod(self._shapes[i], dtype=np.int64))
                out[i] = flat[offset:offset + n].reshape(self._shapes[i])
                offset += n
        self._flats = []  # (the buffers are free once the sums are)
        return out


_GROUPS: dict = {}


def world() -> Group:
    """The process's group: MPI_COMM_WORLD under an MPI launcher (or whenever mpi4py is
    installed), else a group of one. A job of several processes without mpi4py is an
    error, not several unrelated one-replica runs."""
    if "world" not in _GROUPS:
        try:
            group: Group = MPIGroup()
        except ImportError:
            if launched_size() > 1:
                raise ImportError(
                    "MultiWorkerMirroredStrategy: this process was started by an MPI "
                    f"launcher with {launched_size()} processes but mpi4py is not installed "
                    "(pip install 'tapeflow[mpi]')") from None
            group = LocalGroup()
        if group.size > 1 and launched_size() > 1 and os.environ.get(
                "TAPEFLOW_MPI_ABORT_ON_EXCEPTION", "1") != "0":
            install_abort_on_exception(group)
            share_cores(group)
        _GROUPS["world"] = group
    return _GROUPS["world"]


def share_cores(group: "MPIGroup") -> None:
    """Give each of the processes on this host its share of the cores for one op's
    threads (fused loops), unless `tf.config.threading` set a number: two processes each
    starting a thread per core would oversubscribe the machine."""
    if parallelism["intra_op"]:
        return
    local = group.comm.Split_type(group.MPI.COMM_TYPE_SHARED).Get_size()
    parallelism["intra_op"] = max(1, (os.cpu_count() or 1) // local)


def on_chief(fn, *args):
    """`fn(*args)` on the chief (rank 0) only, when a multi-process strategy runs; the
    other ranks wait for it and get its result (checkpoint files are written once). An
    error on the chief is raised on every rank."""
    group = _GROUPS.get("world")
    if group is None or group.size == 1:
        return fn(*args)
    result, error = None, None
    if group.rank == 0:
        try:
            result = fn(*args)
        except Exception as e:  # every rank must hear of it, or they part ways
            error = e
    outcome = group.broadcast_object(("error", f"{type(error).__name__}: {error}")
                                     if error is not None else ("ok", result))
    if error is not None:
        raise error
    if outcome[0] == "error":
        raise OSError(f"the chief (rank 0) failed to write: {outcome[1]}")
    return outcome[1]


def install_abort_on_exception(group: MPIGroup) -> None:
    """An uncaught exception on one rank prints that rank and its traceback, then aborts
    the whole MPI job: the other ranks would otherwise wait forever in their next
    collective. Installed only in a job of several processes started by an MPI launcher,
    and not with TAPEFLOW_MPI_ABORT_ON_EXCEPTION=0 (docs/distributed.md); a hook the
    program installed before runs first."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        if previous is not sys.__excepthook__:
            try:
                previous(kind, value, tb)
            except Exception:  # noqa: BLE001 - the job must still end
                pass
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"tapeflow.distribute: rank {group.rank} of {group.size} failed "
                         f"with an uncaught exception; aborting the job.\n{text}")
        sys.stderr.flush()
        # the launcher forwards this output through a pipe; an abort at once can tear
        # the job down before it has (seen as a silent exit on a busy machine)
        time.sleep(0.5)
        group.comm.Abort(1)

    sys.excepthook = hook


# --------------------------------------------------------------------------- the ops


def _all_reduce_native(inputs, attrs, backend):
    return attrs["group"].allreduce([np.asarray(a) for a in inputs["xs"]], attrs["names"])


def _all_reduce_impl(inputs, attrs):
    out = _all_reduce_native({"xs": [t.numpy() for t in inputs["xs"]]}, attrs, None)
    return [wrap_native(a) for a in out]


def _all_gather_native(inputs, attrs, backend):
    return attrs["group"].allgather(np.asarray(inputs["x"]))


def _all_gather_impl(inputs, attrs):
    return wrap_native(_all_gather_native({"x": inputs["x"].numpy()}, attrs, None))


defop("CollectiveAllReduce", ["xs"], list_inputs=("xs",),
      num_outputs=lambda shapes, dtypes, attrs: len(attrs["names"]),
      shape=lambda shapes, dtypes, attrs: list(zip(map(tuple, shapes["xs"]), dtypes["xs"])),
      impl=_all_reduce_impl, native=_all_reduce_native, differentiable=False, stateful=True)
defop("CollectiveAllGather", ["x"],
      shape=lambda shapes, dtypes, attrs: [((None,) + tuple(shapes["x"])[1:], dtypes["x"])],
      impl=_all_gather_impl, native=_all_gather_native, differentiable=False, stateful=True)


def all_reduce_sum(group: Group, tensors: list, names) -> list:
    """The sums over `group` of `tensors` (one CollectiveAllReduce: one message per
    bucket); eagerly or as a node of the graph being traced."""
    if not tensors:
        return []
    out = run_kernel("CollectiveAllReduce", {"xs": list(tensors)},
                     {"group": group, "names": tuple(names)})
    return out if isinstance(out, list) else [out]


def all_gather(group: Group, tensor: Tensor) -> Tensor:
    """Every replica's `tensor` concatenated along axis 0, in rank order."""
    return run_kernel("CollectiveAllGather", {"x": tensor}, {"group": group})
