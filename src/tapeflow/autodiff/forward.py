"""Forward mode: ForwardAccumulator, JVPs computed as ops run.

While an accumulator is active, dispatch calls `_on_op` (its jvp hook) after every op. For
each active accumulator holding a tangent of some input, the op's JVP rule runs at once and
the output tangents are stored by tensor id; they are released as soon as the primal tensor
dies.
Ops without a JVP rule transpose their VJP (the double-VJP trick of TensorFlow).

A call-state stack keeps the rule ops of accumulator A invisible to A and to accumulators
entered inside A, but visible to accumulators outside A and to every active tape: that is
what makes forward-over-forward, forward-over-reverse and reverse-over-forward work.
"""
from __future__ import annotations

import os
import warnings
import weakref
from typing import Callable

from .._core import nest
from .._core.context import ctx, debug_on, hooks
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel, user_site
from .._core.errors import describe, InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.registry import ensure_op, JVPS, OPS
from .._core.shape import with_dims
from .._core.tensor import death_listeners, Tensor
from .._core.variable import Variable
from ..ops._tangents import align_tangent
from ..ops.creation import zeros
from . import vspace
from .record import make_backward
from .tape import Tape
from .unconnected import as_unconnected, UnconnectedGradients

__all__ = ["ForwardAccumulator", "fallback_ops", "ops_without_jvp"]

_MISSING = object()

# Op name -> number of times forward mode transposed its VJP because it has no JVP rule.
FALLBACK_COUNTS: dict[str, int] = {}


def fallback_ops() -> list[str]:
    """Names of the ops that took the VJP-transpose fallback so far in this process.

    Example:
        >>> "Sin" in tf.autodiff.forward.fallback_ops()
        False
    """
    return sorted(FALLBACK_COUNTS)


def ops_without_jvp(builtin_only: bool = True) -> list[str]:
    """Differentiable ops with no JVP rule (forward mode transposes their VJP).

    Example:
        >>> tf.autodiff.forward.ops_without_jvp()
        []
    """
    return sorted(name for name, op in OPS.items()
                  if name not in JVPS and not (builtin_only and _is_user_op(op)))


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_user_op(op) -> bool:
    """Ops registered outside the tapeflow package (user kernels, tests)."""
    return op.site == "<implicit>" or not os.path.abspath(op.site).startswith(_PKG_DIR)


# --------------------------------------------------------------------------- accumulator


def _tangent_store_listener(tangents: dict) -> Callable[[int], None]:
    """A death listener that drops dead tensors' tangents; it holds the map, not the
    accumulator, so the accumulator can be garbage collected."""
    pop = tangents.pop

    def on_death(tensor_id: int) -> None:
        pop(tensor_id, None)
    return on_death


def _remove_listener(listener) -> None:
    try:
        death_listeners.remove(listener)
    except ValueError:
        pass


class ForwardAccumulator:
    """Computes Jacobian-vector products of every op on watched primals as the ops run.

    `tangents` has the structure of `primals` (tensors or variables); with
    `use_batch=True` every tangent has an extra leading batch dimension and many JVPs are
    computed in one pass.
    Example:
        >>> x = tf.constant(1.0)
        >>> with tf.autodiff.ForwardAccumulator(x, tf.constant(2.0)) as acc:
        ...     y = tf.sin(x)
        >>> acc.jvp(y).numpy()   # 2 * cos(1)
        1.0806046
    """

    def __init__(self, primals, tangents, use_batch: bool = False):
        # tensor or variable id -> tangent (one id sequence: they never collide)
        self._tangents: dict[int, Tensor] = {}
        self._use_batch = bool(use_batch)
        self._add = _sum_contributions(self._use_batch)  # holds no reference to self
        self._batch_size: int | None = None
        self._active = False
        listener = _tangent_store_listener(self._tangents)
        death_listeners.append(listener)
        weakref.finalize(self, _remove_listener, listener)
        seen = set()
        for p in nest.flatten(primals):
            if isinstance(p, (Tensor, Variable)):
                if id(p) in seen:
                    raise InvalidArgumentError(
                        f"ForwardAccumulator: {describe(p)} was given as a primal more than "
                        "once; pass it once with the sum of its tangents (or call watch() "
                        "again, which adds)")
                seen.add(id(p))
        self.watch(primals, tangents)

    @property
    def use_batch(self) -> bool:
        return self._use_batch

    # ------------------------------------------------------------------ watching
    def watch(self, primals, tangents) -> None:
        """Give `primals` (a structure) the `tangents` (same structure); adds to an
        existing tangent. Example: `acc.watch(x, tf.ones_like(x))`."""
        flat_p = nest.flatten(primals)
        flat_t = nest.flatten(tangents)
        if len(flat_p) != len(flat_t):
            raise InvalidArgumentError(
                f"ForwardAccumulator.watch: primals have {len(flat_p)} leaves but tangents "
                f"have {len(flat_t)}; give one tangent per primal")
        checked = [self._check_pair(p, t) for p, t in zip(flat_p, flat_t)]
        # Aggregation runs ops: make them visible to accumulators outside this one only.
        with _busy(self):
            for p, t in checked:
                if t is None:
                    continue
                old = self._tangents.get(p.id)
                if old is not None:
                    t = run_kernel("Add", {"x": old, "y": t})
                t._kept = True  # the accumulator, not a tidy scope, decides its life
                self._tangents[p.id] = t

    def _check_pair(self, primal, tangent):
        if not isinstance(primal, (Tensor, Variable)):
            raise InvalidArgumentError(
                f"ForwardAccumulator: primals must be Tensors or Variables, got "
                f"{type(primal).__name__}; convert it with tf.constant first")
        dtype = primal.dtype
        if isinstance(tangent, Variable):
            tangent = tangent.read_value()
        if type(tangent) is not Tensor:
            try:
                tangent = convert_to_tensor(tangent, dtype=dtype)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(
                    f"ForwardAccumulator: tangent for primal {describe(primal)}: {e}") from None
        if tangent.dtype is not dtype:
            raise InvalidArgumentError(
                f"ForwardAccumulator: tangent {describe(tangent)} does not match the dtype of "
                f"its primal {describe(primal)}; tangents must have the primal's dtype")
        shape = tuple(primal._shape)
        tshape = tangent._shape
        if self._use_batch:
            if len(tshape) != len(shape) + 1 or tshape[1:] != shape:
                raise InvalidArgumentError(
                    f"ForwardAccumulator(use_batch=True): tangent {describe(tangent)} must "
                    f"have shape [batch] + {list(shape)} (the primal {describe(primal)} "
                    "with a leading batch dimension)")
            if self._batch_size is None:
                self._batch_size = tshape[0]
            elif tshape[0] != self._batch_size:
                raise InvalidArgumentError(
                    f"ForwardAccumulator(use_batch=True): tangent {describe(tangent)} has "
                    f"batch size {tshape[0]}, other tangents have {self._batch_size}")
        elif tshape != shape:
            raise InvalidArgumentError(
                f"ForwardAccumulator: tangent {describe(tangent)} does not match the shape of "
                f"its primal {describe(primal)}")
        if not dtype.is_trainable:
            warnings.warn(f"ForwardAccumulator: primal {describe(primal)} has a non-trainable "
                          "dtype; it gets no tangent (watch floating or complex tensors)",
                          stacklevel=4)
            return primal, None
        return primal, tangent

    # ------------------------------------------------------------------ context
    def __enter__(self) -> "ForwardAccumulator":
        if self._active:
            raise ValueError("ForwardAccumulator: this accumulator is already active")
        self._active = True
        ctx.accs = ctx.accs + [self]
        ctx.refresh()
        return self

    def __exit__(self, *exc) -> bool:
        self._active = False
        accs = ctx.accs
        if accs and accs[-1] is self:
            ctx.accs = accs[:-1]
        else:  # exited out of order (e.g. an error unwound an inner one first)
            ctx.accs = [a for a in accs if a is not self]
        ctx.refresh()
        return False

    # ------------------------------------------------------------------ fetching
    def jvp(self, tensors, unconnected_gradients=UnconnectedGradients.NONE):
        """The JVPs of `tensors` (any structure), computed while they were made.

        `None` where a tensor does not depend on the watched primals (zeros with
        `unconnected_gradients="zero"`). Example: `acc.jvp([y, z])`.
        """
        zero = as_unconnected(unconnected_gradients) is UnconnectedGradients.ZERO
        tangents = self._tangents

        def fetch(t):
            if not isinstance(t, (Tensor, Variable)):
                return None
            out = tangents.get(t.id)
            if out is None and zero:
                with _busy(self):
                    shape = t._shape if self._batch_size is None else (
                        (self._batch_size,) + tuple(t._shape))
                    out = zeros(shape, t.dtype)
            return out

        if not nest.is_nested(tensors):
            return fetch(tensors)
        return nest.map_structure(fetch, tensors)

    def __repr__(self) -> str:
        return (f"<ForwardAccumulator: {len(self._tangents)} tangents"
                f"{', batched' if self._use_batch else ''}"
                f"{', active' if self._active else ''}>")


class _busy:
    """The call state while `acc` computes tangents: only accumulators outside it see
    the ops it runs (tapes are untouched)."""

    __slots__ = ("acc", "saved")

    def __init__(self, acc):
        self.acc = acc

    def __enter__(self):
        accs = self.saved = ctx.accs
        acc = self.acc
        for i, a in enumerate(accs):
            if a is acc:
                ctx.accs = accs[:i]
                ctx.refresh()
                break
        return self

    def __exit__(self, *exc):
        ctx.accs = self.saved
        ctx.refresh()
        return False


# --------------------------------------------------------------------------- the jvp hook


def _on_op(name: str, inputs: dict, attrs: dict, outs: list) -> None:
    """Called by dispatch after every op while accumulators are active (hot path)."""
    accs = ctx.accs
    i = 0
    for acc in accs:  # outermost first: inner rules may read outputs (`ans`)
        tangents = acc._tangents
        for v in inputs.values():
            if type(v) is list or type(v) is tuple:
                if any(m.id in tangents for m in v):
                    break
            elif v.id in tangents:  # a tensor, or a variable (resource input)
                break
        else:
            i += 1
            continue
        if not _accumulate(acc, i, accs, name, inputs, attrs, outs):
            return
        i += 1


def _accumulate(acc, i: int, accs: list, name: str, inputs: dict, attrs: dict,
                outs: list) -> bool:
    """Compute `acc`'s output tangents of one op; False if the op has none at all."""
    rule = JVPS.get(name, _MISSING)
    if rule is None:  # declared non-differentiable
        return False
    single = len(outs) == 1
    if single:
        if not outs[0].dtype.is_trainable:
            return False
    elif not any(o.dtype.is_trainable for o in outs):
        return False
    # Call state: the rule's ops are seen by accumulators outside `acc` only. The
    # thread's own attribute dict is used directly (and ctx.refresh() inlined): attribute
    # access on a threading.local costs several times a dict lookup on this hot path.
    state = ctx.__dict__
    if i:
        state["accs"] = accs[:i]
    else:
        state["accs"] = []
        state["active"] = bool(state["tapes"] or state["watchers"] or state["profilers"]
                               or state["graph"] is not None or state["debug"] or debug_on[0])
    # a NaN made by the rule's ops is blamed on this op and its user line: noted while
    # tracing too (the graph may run in debug mode later)
    debugging = state["debug"] or debug_on[0] or state["graph"] is not None
    if debugging:
        state["rule_of"].append((name, user_site(), "JVP"))
    try:
        if rule is _MISSING:
            result = _transpose_vjp(acc, name, inputs, attrs, outs)
        else:
            op = OPS.get(name)
            ans = list(outs) if not single or op is not None and op.list_output else outs[0]
            result = rule.call(inputs, _tangents_of(acc, inputs), ans, attrs,
                               acc._add)
        if result is not None:
            if single and type(result) is Tensor:
                o = outs[0]
                batch = acc._batch_size
                if result.dtype is o.dtype and result._shape == (
                        o._shape if batch is None else (batch,) + o._shape):
                    result._kept = True  # lives as long as its primal, not a tidy scope
                    acc._tangents[o.id] = result
                    return True
            _store(acc, name, result, outs)
    finally:
        state["accs"] = accs
        state["active"] = True  # accs is not empty
        if debugging:
            state["rule_of"].pop()
    return True


def _tangents_of(acc, inputs: dict) -> dict:
    """Input name -> tangent (None without one; a list, None where a member has none,
    for list inputs such as concat's values)."""
    tangents = acc._tangents
    return {k: ([tangents.get(m.id) for m in v] if type(v) is list or type(v) is tuple
                else tangents.get(v.id)) for k, v in inputs.items()}


def _sum_contributions(use_batch: bool):
    """`add(a, b)` summing two contributions to the output tangents (per-input JVP rules),
    made once per accumulator: batched contributions of different ranks (each [B] + a
    suffix of the output's shape) are aligned on their trailing dims first."""
    def add(a, b):
        if type(a) is list:
            return [x if y is None else y if x is None else add(x, y) for x, y in zip(a, b)]
        if a is None:
            return b
        if b is None:
            return a
        if use_batch and len(a._shape) != len(b._shape):
            rank = max(len(a._shape), len(b._shape)) - 1
            a, b = (align_tangent(c, len(c._shape) - 1, rank) for c in (a, b))
        return run_kernel("Add", {"x": a, "y": b})
    return add


def _zeros_tangent(acc, t: Tensor) -> Tensor:
    shape = t._shape if acc._batch_size is None else (acc._batch_size,) + tuple(t._shape)
    return zeros(shape, t.dtype)


def _align(c: Tensor, out: Tensor) -> Tensor:
    """A batched contribution [B] + s, s a suffix of the output's shape: unit axes after
    the batch dimension make it broadcast against the output's trailing dims."""
    return align_tangent(c, len(c._shape) - 1, len(out._shape))


def _store(acc, name: str, result, outs: list) -> None:
    tangents = acc._tangents
    if len(outs) == 1:
        if type(result) is list or type(result) is tuple:
            result = result[0]
        pairs = ((outs[0], result),)
    else:
        if len(result) != len(outs):
            raise InvalidArgumentError(
                f"{name}: its JVP rule returned {len(result)} tangents for {len(outs)} outputs")
        pairs = zip(outs, result)
    batch = acc._batch_size
    for o, t in pairs:
        if t is None or not o.dtype.is_trainable:
            continue
        if type(t) is not Tensor:
            t = convert_to_tensor(t, dtype=o.dtype)
        target = o._shape if batch is None else (batch,) + o._shape
        if t._shape != target:
            t = _fit_tangent(acc, name, t, o, target)
        if t.dtype is not o.dtype:
            raise InvalidArgumentError(
                f"{name}: its JVP rule returned a tangent {describe(t)} for an output "
                f"{describe(o)}; the tangent must have the output's dtype")
        t._kept = True  # lives as long as its primal, whatever tidy scope made it
        tangents[o.id] = t


def _fit_tangent(acc, name, t: Tensor, o: Tensor, target: tuple) -> Tensor:
    """Broadcast a contribution to the output's (batched) shape."""
    if acc._batch_size is not None:
        t = _align(t, o)
    try:
        return run_kernel("BroadcastTo", {"x": t}, {"shape": target})
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"{name}: its JVP rule returned a tangent {describe(t)} that does not broadcast to "
            f"the output's tangent shape {list(target)}") from None


# --------------------------------------------------------------------------- fallback


def _transpose_vjp(acc, name: str, inputs: dict, attrs: dict, outs: list):
    """Output tangents of an op with no JVP rule, from its VJP (see `_transpose`)."""
    FALLBACK_COUNTS[name] = FALLBACK_COUNTS.get(name, 0) + 1
    op = OPS.get(name) or ensure_op(name, inputs)
    tangents = acc._tangents
    flat, needed = [], set()
    for k in (op.inputs if op.inputs else inputs):
        v = inputs.get(k)
        if v is None:
            continue
        members = v if isinstance(v, (list, tuple)) else (v,)
        for m in members:
            t = tangents.get(m.id)
            flat.append(t)
            if t is not None:
                needed.add(k)
    bwd = make_backward(name, inputs, attrs, outs, needed)
    if bwd.rule is None:
        raise LookupError(f"{name}: no JVP rule and no gradient to transpose; register one "
                          "with tf.register_jvp or tf.register_gradient")
    return _transpose(acc, bwd, flat, outs)


def _transpose(acc, bwd: Callable, flat: list, outs: list):
    """J t from a backward function `bwd(out_grads, needs) -> flat input gradients`:
    run it on "aid" cotangents u under a fresh internal tape, then differentiate
    <bwd(u), t> with respect to u (the VJP is linear in u, so that gradient is J t)."""
    needs = [t is not None for t in flat]
    tape = Tape()
    tapes = ctx.tapes
    ctx.tapes = tapes + [tape]
    ctx.refresh()
    try:
        aids = [vspace.ones(with_dims(o), o.dtype) if o.dtype.is_trainable else None
                for o in outs]
        watched = [a for a in aids if a is not None]
        for a in watched:
            tape.watch(a.id, a._shape, a.dtype)
        in_grads = bwd(aids, needs)
        targets, cotangents = [], []
        for g, t in zip(in_grads, flat):
            if g is None or t is None:
                continue
            if isinstance(g, IndexedSlices):
                g = convert_to_tensor(g)  # densify on the tape
            targets.append(g)
            cotangents.append(t)
    finally:
        ctx.tapes = tapes
        ctx.refresh()
    if not targets:
        return None
    target_ids = [g.id for g in targets]
    watched_ids = [a.id for a in watched]
    meta = [(with_dims(g), g.dtype) for g in targets]
    if not acc._use_batch:
        grads = tape.compute_gradient(vspace, target_ids, watched_ids, cotangents, meta)
    else:
        # Vectorized over the batch like GradientTape.jacobian: the transpose pass runs on
        # zero seeds whose batched tangents are the input tangents; the pass is linear in
        # the seeds, so the tangents of its results are J t for every batch member.
        seeds = [vspace.zeros(with_dims(g), g.dtype) for g in targets]
        with ForwardAccumulator(seeds, cotangents, use_batch=True) as seeded:
            zeros = tape.compute_gradient(vspace, target_ids, watched_ids, seeds, meta)
        grads = [seeded.jvp(z) if z is not None else None for z in zeros]
    it = iter(grads)
    return [next(it) if a is not None else None for a in aids]


hooks.jvp = _on_op
