"""The language-agnostic gradient tape (the design of TensorFlow's C++ eager tape).

It deals in integer tensor ids, op entries and opaque backward functions, and reaches
tensor values only through a vspace (sizes, ones/zeros, aggregation). Entries that no
live tensor can reach any more are deleted as tensors die (`delete_trace`), so a
non-persistent tape in a long loop stays small.
"""
from __future__ import annotations

import itertools
from operator import itemgetter
from typing import Any, Callable, Sequence

WATCHED = -1  # producer id of a directly watched tensor


class OpEntry(tuple):
    """One recorded op: (op_type, output_ids, output_meta, input_ids, backward, site).

    A tuple (cheap to make: one per recorded op) with named fields; dropping the entry
    releases its backward function and what that function saved.
    """

    __slots__ = ()
    op_type = property(itemgetter(0))
    output_ids = property(itemgetter(1))
    output_meta = property(itemgetter(2))
    input_ids = property(itemgetter(3))
    backward = property(itemgetter(4))
    site = property(itemgetter(5))


_new_entry = tuple.__new__


class Tape:
    """Maps tensor id -> producing op id, op id -> OpEntry, tensor id -> usage count."""

    def __init__(self, persistent: bool = False):
        self.persistent = persistent
        self.tensor_tape: dict[int, int] = {}
        self.op_tape: dict[int, OpEntry] = {}
        self.tensor_usage: dict[int, int] = {}
        self.watched_meta: dict[int, tuple] = {}  # id -> (shape, dtype) of watched tensors
        self._op_ids = itertools.count()
        self.site_of: Callable[[], Any] | None = None  # set when explain/debug needs sites
        # after compute_gradient on a one-shot tape with a source it could not reach: what
        # explain() needs of the entries (see light_copy)
        self.light: "Tape | None" = None

    # --------------------------------------------------------------- recording
    def variable_accessed(self, variable) -> None:
        """A variable was read while this tape records (GradientTape watches it)."""

    def is_watched(self, tensor_id: int) -> bool:
        return tensor_id in self.tensor_tape

    def should_record(self, ids: Sequence[int], tensors: Sequence) -> bool:
        """Record only ops with an input on the tape of a trainable dtype."""
        tt = self.tensor_tape
        for i, t in zip(ids, tensors):
            if i in tt and t.dtype.is_trainable:
                return True
        return False

    def watch(self, tensor_id: int, shape, dtype) -> None:
        if tensor_id not in self.tensor_tape:
            self.tensor_tape[tensor_id] = WATCHED
            self.tensor_usage[tensor_id] = self.tensor_usage.get(tensor_id, 0) + 1
        self.watched_meta[tensor_id] = (tuple(shape), dtype)

    def record_operation(self, op_type: str, output_ids: list, output_meta: list,
                         input_ids: list, backward: Callable) -> None:
        op_id = next(self._op_ids)
        usage = self.tensor_usage
        for i in input_ids:
            if i in usage:
                usage[i] += 1
        tt = self.tensor_tape
        for o in output_ids:
            tt[o] = op_id
            usage[o] = 1
        site = self.site_of() if self.site_of is not None else None
        self.op_tape[op_id] = _new_entry(OpEntry, (op_type, output_ids, output_meta, input_ids,
                                                   backward, site))

    def delete_trace(self, tensor_id: int) -> None:
        """A tensor died: drop the entries nothing live can reach any more."""
        usage, tt, ops = self.tensor_usage, self.tensor_tape, self.op_tape
        stack = [tensor_id]
        while stack:
            tid = stack.pop()
            count = usage.get(tid)
            if count is None:
                continue
            if count > 1:
                usage[tid] = count - 1
                continue
            del usage[tid]
            op_id = tt.pop(tid, None)
            if op_id is None or op_id == WATCHED:
                self.watched_meta.pop(tid, None)
                continue
            entry = ops.get(op_id)
            if entry is None or any(o in usage for o in entry.output_ids):
                continue
            del ops[op_id]
            stack.extend(entry.input_ids)

    def light_copy(self, tensor_tape=None, op_tape=None) -> "Tape":
        """A tape with what explain() reads and nothing the backward pass needs: op names,
        ids, shapes, dtypes and sites, but no backward functions (nor the tensors they
        saved). Made only when a one-shot tape's gradient has a None in it."""
        light = Tape(persistent=True)
        light.tensor_tape = dict(self.tensor_tape if tensor_tape is None else tensor_tape)
        light.op_tape = {k: _new_entry(OpEntry, (e[0], e[1], e[2], e[3], None, e[5]))
                         for k, e in (self.op_tape if op_tape is None else op_tape).items()}
        light.watched_meta = dict(self.watched_meta)
        light.events = getattr(self, "events", ())
        return light

    # --------------------------------------------------------------- gradients
    def _meta_of(self, tensor_id):
        op_id = self.tensor_tape.get(tensor_id)
        if op_id is None:
            return None
        if op_id == WATCHED:
            return self.watched_meta.get(tensor_id)
        entry = self.op_tape.get(op_id)
        if entry is None:
            return None
        return entry.output_meta[entry.output_ids.index(tensor_id)]

    def compute_gradient(self, vspace, target_ids: Sequence[int], source_ids: Sequence[int],
                         output_gradients: Sequence | None, target_meta: Sequence,
                         on_ready=None) -> list:
        """Gradients of the targets with respect to each source (None if unconnected).
        `on_ready(source_id, gradient)` hears of each source's gradient as soon as it is
        complete (its last use is differentiated), before the rest of the pass."""
        sources = set(source_ids)
        tt, ops = self.tensor_tape, self.op_tape
        # 1. Walk back from the targets: usage counts and missing output gradients.
        usage_counts: dict[int, int] = {}
        missing: dict[int, int] = {}
        collected: dict[int, OpEntry] = {}
        stack = []
        for t in target_ids:
            op_id = tt.get(t)
            if op_id is not None and op_id != WATCHED and op_id not in collected \
                    and op_id in ops:
                collected[op_id] = ops[op_id]
                stack.append(op_id)
        while stack:
            entry = collected[stack.pop()]
            for i in entry.input_ids:
                seen = i in usage_counts
                usage_counts[i] = usage_counts.get(i, 0) + 1
                op_id = tt.get(i)
                if seen or op_id is None or op_id == WATCHED:
                    continue
                # counted once per distinct output that some collected op consumes
                missing[op_id] = missing.get(op_id, 0) + 1
                if op_id not in collected and op_id in ops:
                    collected[op_id] = ops[op_id]
                    stack.append(op_id)
        if not self.persistent:
            # Hand the needed entries over; everything else goes now.
            self.op_tape = {}
            self.tensor_tape = {}
            self.tensor_usage = {}
        # 2. Initial gradients.
        gradients: dict[int, list] = {}
        for k, t in enumerate(target_ids):
            g = output_gradients[k] if output_gradients is not None else None
            if g is None:
                if t not in tt and t not in sources:
                    continue  # a target unrelated to the tape gets nothing
                meta = target_meta[k]
                g = vspace.ones(*meta)
            gradients.setdefault(t, []).append(g)
        # 3. Backward pass over ops whose output gradients are complete.
        ready = [op_id for op_id in collected if missing.get(op_id, 0) == 0]
        ready.sort(reverse=True)  # latest op first: any complete order is correct
        while ready:
            op_id = ready.pop()
            _, out_ids, _, in_ids, backward, _ = collected.pop(op_id)
            out_grads = []
            any_grad = False
            for o in out_ids:
                gs = gradients.get(o)
                if gs is None:
                    out_grads.append(None)
                    continue
                if o not in sources:
                    del gradients[o]
                g = gs[0] if len(gs) == 1 else vspace.aggregate(gs)
                if o in sources:
                    gradients[o] = [g]
                out_grads.append(g)
                any_grad = True
            if any_grad:
                needs = [i in tt or i in sources for i in in_ids]
                in_grads = backward(out_grads, needs)
                for i, g, need in zip(in_ids, in_grads, needs):
                    if g is not None and need:
                        pending = gradients.get(i)
                        if pending is None:
                            gradients[i] = [g]
                        else:
                            pending.append(g)
                            if vspace.should_aggregate_early(pending):
                                gradients[i] = [vspace.aggregate(pending)]
                del in_grads, out_grads
            # a one-shot tape lets the backward function (and what it saved) go now
            backward = None
            for i in in_ids:
                c = usage_counts.get(i)
                if c is None:
                    continue
                usage_counts[i] = c - 1
                if c == 1 and on_ready is not None and i in sources and gradients.get(i):
                    gs = gradients[i]
                    gradients[i] = [gs[0] if len(gs) == 1 else vspace.aggregate(gs)]
                    on_ready(i, gradients[i][0])
                if c == 1:
                    producer = tt.get(i)
                    if producer is not None and producer in missing:
                        missing[producer] -= 1
                        if missing[producer] == 0 and producer in collected:
                            ready.append(producer)
        # 4. Results.
        result = []
        for s in source_ids:
            gs = gradients.get(s)
            if not gs:
                result.append(None)
            else:
                result.append(gs[0] if len(gs) == 1 else vspace.aggregate(gs))
        if not self.persistent and any(r is None for r in result):  # keep what explains it
            self.light = self.light_copy(tt, ops)
        return result
