"""Why is my gradient None? (API §8.1): find where the path from a source to a target
breaks on a tape and say so in words, naming ops and the user's source lines.

A tape keeps a bounded list of *break events* besides its ops: an op that took a watched
tensor and gave an integer/boolean result or has no gradient (an integer Cast), a NumPy
round trip, a `stop_gradient`, a variable assigned. Each event notes the user's source
line (one stack walk, only at these ops) and pins its tensor on the tape (one more use),
so the path from the sources to the break stays on the tape after the intermediate
tensors die, until the event is evicted or the tape is dropped.
"""
from __future__ import annotations

import collections
from typing import NamedTuple

from .tape import WATCHED

explain_enabled = [False]
MAX_EVENTS = 256  # break events kept per tape (bounded: tapes live in training loops)


class Event(NamedTuple):
    """A place where a path on the tape breaks: kind ("nondiff", "numpy", "stop",
    "assign"), the tensor (or variable) id, the op's name, the user's 'file:line',
    whether the tensor is pinned on the tape, and the op's output dtype name."""
    kind: str
    tensor_id: int
    name: str
    site: str | None
    pinned: bool
    dtype: str | None = None


class SourceInfo(NamedTuple):
    """What explain needs to know of a source besides its id."""
    dtype: str
    trainable_dtype: bool
    is_variable: bool
    trainable: bool  # a variable's `trainable` (True for tensors)


def new_events():
    return collections.deque(maxlen=MAX_EVENTS)


def add_event(tape, kind: str, tensor_id: int, name: str, site, dtype=None) -> None:
    """Note a break on `tape`, pinning its tensor if the tape holds it (one more use, so
    delete_trace keeps the ops leading to it); the oldest event is let go when full."""
    events = getattr(tape, "events", None)
    if events is None:
        return
    if len(events) == events.maxlen:
        old = events[0]
        if old.pinned:
            tape.delete_trace(old.tensor_id)  # its pin: the path may now be dropped
    usage = tape.tensor_usage
    pinned = tensor_id in usage
    if pinned:
        usage[tensor_id] += 1
    events.append(Event(kind, tensor_id, name, site, pinned, dtype))


_NO_GRADIENT_ON_PATH = (
    "The {source_name} is connected to the target through recorded ops, but the gradient "
    "functions on the path returned no gradient for it (e.g. a custom gradient or "
    "registered gradient returning None).")


def _at(site) -> str:
    return f" at {site}" if site else ""


def explain_tape(tape, target_ids, source_id, source: SourceInfo | None = None,
                 source_name: str = "source", gradient_exists: bool | None = None,
                 connected_without_gradient: bool = False) -> str:
    """A readable report of where the path from `source_id` to the targets breaks.

    `gradient_exists`: the gradient is known not to be None (the report says so and names
    the path). `tape` None: gradient() was called on a one-shot tape, which kept nothing
    for this source (`connected_without_gradient`: it reached the source, yet the gradient
    was None).
    """
    if connected_without_gradient:
        return _NO_GRADIENT_ON_PATH.format(source_name=source_name)
    if tape is None:
        return (f"The tape was used by gradient() and the {source_name} was not one of that "
                "call's sources (or its gradient was not None), so nothing was kept to "
                "explain it; use tf.GradientTape(persistent=True) to ask about any pair.")
    tt, ops = tape.tensor_tape, tape.op_tape
    events = list(getattr(tape, "events", ()))
    if source is not None and not source.trainable_dtype:
        kind = "variable" if source.is_variable else "tensor"
        return (f"The {source_name} is an integer/boolean {kind} (dtype {source.dtype}): only "
                "floating-point and complex tensors get gradients, so the gradient is None "
                f"whatever the path. Make it a float {kind} (e.g. "
                + ("tf.Variable(2.0) instead of tf.Variable(2)" if source.is_variable else
                   "tf.cast(x, tf.float32) before the tape, or tf.constant(2.0)")
                + ") if you need its gradient.")
    lines = []
    if source_id not in tt:
        return "\n".join(_never_watched(source_id, source, source_name, events))
    # ops reachable backwards from the targets
    consumers: dict[int, list] = collections.defaultdict(list)
    for op_id, e in ops.items():
        for i in e.input_ids:
            consumers[i].append(op_id)
    on_tape = any(tt.get(t) not in (None, WATCHED) for t in target_ids)
    ancestors, stack = set(), [tt.get(t) for t in target_ids]
    while stack:
        op_id = stack.pop()
        if op_id is None or op_id == WATCHED or op_id in ancestors or op_id not in ops:
            continue
        ancestors.add(op_id)
        stack.extend(tt.get(i) for i in ops[op_id].input_ids)
    # ops reachable forwards from the source (a StopGradient ends a path)
    reach, frontier, touched = set(), [source_id], {source_id}
    stopped = []
    while frontier:
        tid = frontier.pop()
        for op_id in consumers.get(tid, ()):
            if op_id in reach:
                continue
            reach.add(op_id)
            e = ops[op_id]
            if e.op_type == "StopGradient":
                stopped.append(e)
                continue
            for o in e.output_ids:
                if o not in touched:
                    touched.add(o)
                    frontier.append(o)
    connected = bool(reach & ancestors) or source_id in target_ids
    if gradient_exists:
        path = [ops[i].op_type for i in sorted(reach & ancestors)]
        shown = ", ".join(path[:8]) + (", ..." if len(path) > 8 else "")
        return (f"The gradient is not None: the target depends on the {source_name} through "
                f"{len(path)} recorded op(s) ({shown or 'the source itself'}) that have "
                "gradients.")
    stop_sites = {ev.tensor_id: ev.site for ev in events if ev.kind == "stop"}
    for e in stopped:
        site = e.site or next((stop_sites[i] for i in e.input_ids if i in stop_sites), None)
        lines.append(f"The path goes through tf.stop_gradient{_at(site)}: no gradient "
                     "flows through it.")
    for ev in events:
        if ev.tensor_id not in touched:
            continue
        if ev.kind == "nondiff":
            out = f"an {ev.dtype} tensor" if ev.dtype else "a result"
            lines.append(f"The path goes through {ev.name}{_at(ev.site)}, which gives {out} "
                         "(or has no gradient): the gradient stops there. Keep the "
                         "computation in floating point (e.g. do not cast to an integer "
                         "type) if you need its gradient.")
        elif ev.kind == "numpy":
            lines.append(f"A tensor on the path was converted to NumPy{_at(ev.site)} "
                         "(.numpy() / np.asarray): values computed from the NumPy array are "
                         "new constants the tape cannot connect to the source. Use tapeflow "
                         "ops instead.")
    lines = list(dict.fromkeys(lines))  # one line per break, however often it was hit
    if lines:
        return "\n".join(lines)
    if connected:
        return _NO_GRADIENT_ON_PATH.format(source_name=source_name)
    if not on_tape:
        return ("The target was not computed on this tape: it was computed outside the "
                "`with tf.GradientTape()` block, or only from tensors the tape does not "
                "watch (constants, or values made before the tape started).")
    return (f"The {source_name} was watched but the target does not depend on it through any "
            "op recorded on this tape: it was used outside the `with` block, or only through "
            "ops recorded while recording was stopped.")


def _never_watched(source_id, source, source_name, events) -> list:
    lines = []
    for ev in events:
        if ev.tensor_id != source_id:
            continue
        if ev.kind == "assign":
            lines.append(f"It is a variable that was assigned inside the tape{_at(ev.site)}: "
                         "assignment is not differentiable; read it with `v * ...` instead.")
        elif ev.kind == "numpy":
            lines.append(f"It was converted to NumPy{_at(ev.site)} (.numpy() / np.asarray) "
                         "and the tape saw only the NumPy values, which are constants to it: "
                         "use it in tapeflow ops (e.g. `v * x`) instead.")
    lines = list(dict.fromkeys(lines))
    if source is not None and source.is_variable and source.trainable:
        head = (f"The {source_name} is a trainable tf.Variable, but no op inside the `with "
                "tf.GradientTape()` block read it, so the tape never watched it.")
    elif source is not None and source.is_variable:
        head = (f"The {source_name} is a tf.Variable created with trainable=False, which "
                "tapes do not watch on their own: call tape.watch(v) inside the `with` "
                "block.")
    else:
        head = (f"The {source_name} was never watched by this tape: call tape.watch() on it "
                "inside the `with` block before using it, or make it a trainable "
                "tf.Variable (and keep watch_accessed_variables=True).")
    return [head] + lines
