"""GradientTape: records ops on watched tensors and computes gradients and Jacobians."""
from __future__ import annotations

import contextlib
import logging
import warnings
import weakref

import numpy as np

from .._core import nest
from .._core.context import ctx as _ctx, debug_on
from .._core.convert import convert_to_tensor
from .._core.dispatch import no_recording, user_site
from .._core.errors import DisposedError, InvalidArgumentError
from .._core.tensor import death_listeners, Tensor
from .._core.variable import Variable
from ..ops.array import broadcast_to, reshape, transpose
from ..ops.creation import eye, zeros
from . import explain as _explain, vspace
from .forward import ForwardAccumulator
from .tape import Tape, WATCHED
from .unconnected import as_unconnected, UnconnectedGradients

_log = logging.getLogger("tapeflow")
# Switched on by config.explain_none_gradients / set_debug: tapes then note the user's
# source line of every recorded op (off by default: it costs a stack walk per op).
record_sites = [False]


def _source_id(s):
    if isinstance(s, Variable):
        return s.id
    if isinstance(s, Tensor):
        return s.id
    raise InvalidArgumentError(
        f"GradientTape.gradient: sources must be tensors or variables, got {type(s).__name__}")


def _source_info(s) -> _explain.SourceInfo:
    is_variable = isinstance(s, Variable)
    return _explain.SourceInfo(s.dtype.name, s.dtype.is_trainable, is_variable,
                               s.trainable if is_variable else True)


def _describe_source(s) -> str:
    kind = f"tf.Variable {s.name!r}" if isinstance(s, Variable) else "tensor"
    return f"{kind}, {s.dtype.name}{list(s._shape)}"


def _listener(tape_ref):
    def on_death(tensor_id):
        tape = tape_ref()
        if tape is not None:
            tape.delete_trace(tensor_id)
    return on_death


class GradientTape:
    """Record operations on watched tensors to compute gradients.

    Example:
        >>> x = tf.constant(3.0)
        >>> with tf.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x
        >>> g.gradient(y, x).numpy()
        6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = watch_accessed_variables
        self._tape: Tape | None = None
        self._recording = False
        self._used = False
        self._watched_variables: dict[int, Variable] = {}
        self._listener = None
        # after gradient() on a one-shot tape: (light tape or None, source ids, ids of
        # the sources whose gradient was None), for explain()
        self._spent = None

    # ---------------------------------------------------------------- context
    def __enter__(self) -> "GradientTape":
        self._push_tape()
        return self

    def __exit__(self, *exc) -> bool:
        if self._recording:
            self._pop_tape()
        return False

    def _new_tape(self):
        tape = Tape(self._persistent)
        owner = weakref.ref(self)  # no cycle: a dropped GradientTape is freed at once

        def variable_accessed(var):
            me = owner()
            if me is not None:
                me._variable_accessed(var)
        tape.variable_accessed = variable_accessed
        tape.events = _explain.new_events()
        if record_sites[0] or debug_on[0]:
            tape.site_of = user_site
        self._tape = tape
        self._listener = _listener(weakref.ref(tape))
        death_listeners.append(self._listener)

    def _drop_tape(self):
        if self._listener is not None:
            try:
                death_listeners.remove(self._listener)
            except ValueError:
                pass
        self._tape, self._listener = None, None

    def _push_tape(self):
        if self._recording:
            raise ValueError("GradientTape: this tape is already recording")
        if self._tape is None:
            if self._used and not self._persistent:
                raise RuntimeError("GradientTape: a non-persistent tape cannot be entered "
                                   "again after gradient() was called")
            self._new_tape()
        _ctx.tapes.append(self._tape)
        _ctx.refresh()
        self._recording = True

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("GradientTape: the tape is not recording")
        try:
            _ctx.tapes.remove(self._tape)
        except ValueError:
            pass
        _ctx.refresh()
        self._recording = False

    def __del__(self):
        try:
            self._drop_tape()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _variable_accessed(self, var: Variable) -> None:
        if self._watch_accessed_variables and var.trainable:
            self._watch_variable(var)

    def _watch_variable(self, var):
        self._tape.watch(var.id, var._shape, var.dtype)
        self._watched_variables[var.id] = var

    # ---------------------------------------------------------------- watching
    def watch(self, tensor) -> None:
        """Watch a tensor, variable or nested structure of them.

        Example: `tape.watch([x, {"w": w}])`.
        """
        if self._tape is None:
            raise RuntimeError("GradientTape.watch: the tape was already used; "
                               "create a new tape (or use persistent=True)")
        for t in nest.flatten(tensor):
            if isinstance(t, Variable):
                self._watch_variable(t)
            elif isinstance(t, Tensor):
                if not t.dtype.is_trainable:
                    warnings.warn(f"GradientTape.watch: the dtype of the watched tensor must "
                                  f"be floating or complex, got {t.dtype.name}; "
                                  "it gets no gradient", stacklevel=2)
                    continue
                self._tape.watch(t.id, t._shape, t.dtype)
            elif t is not None:
                raise InvalidArgumentError(
                    f"GradientTape.watch: expected tensors or variables, got {type(t).__name__}")

    def watched_variables(self) -> tuple:
        """The variables watched by this tape, in the order they were first watched."""
        return tuple(self._watched_variables.values())

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording ops on this tape.

        Example:
            >>> with tape.stop_recording():
            ...     z = x * 2   # not recorded
        """
        if not self._recording:
            raise ValueError("GradientTape.stop_recording: the tape is not recording")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self) -> None:
        """Forget everything recorded so far (the tape keeps recording if it was)."""
        recording = self._recording
        if recording:
            self._pop_tape()
        self._drop_tape()
        self._watched_variables.clear()
        self._used = False
        self._spent = None
        self._new_tape()
        if recording:
            self._push_tape()

    # ---------------------------------------------------------------- gradients
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradients of `target` (summed over its elements) with respect to `sources`.

        `target` and `sources` may be nested structures; the result has the structure of
        `sources`, with None (or zeros) for sources `target` does not depend on.
        Example:
            >>> dx, dv = tape.gradient(loss, [x, v])
        """
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians); use persistent=True")
        unconnected = as_unconnected(unconnected_gradients)
        if self._recording and not self._persistent:
            self._pop_tape()  # like TF: the gradient computation of a one-shot tape is not recorded
        flat_targets = nest.flatten(target)
        flat_sources = nest.flatten(sources)
        targets = []
        for t in flat_targets:
            if not isinstance(t, (Tensor, Variable)):
                raise InvalidArgumentError(f"GradientTape.gradient: targets must be tensors, "
                                           f"got {type(t).__name__}")
            if isinstance(t, Tensor) and t._buf is None:
                raise DisposedError(f"GradientTape.gradient: the target {t.id} (shape "
                                    f"{list(t._shape)}, dtype {t.dtype.name}) was disposed; "
                                    "keep it (tf.keep) or take the gradient before disposing")
            targets.append(t)
        source_ids = [_source_id(s) for s in flat_sources]
        out_grads = None
        if output_gradients is not None:
            flat_og = nest.flatten(output_gradients) if nest.is_nested(output_gradients) \
                else [output_gradients]
            if len(flat_og) != len(targets):
                raise InvalidArgumentError(
                    f"GradientTape.gradient: {len(flat_og)} output_gradients for "
                    f"{len(targets)} targets")
            out_grads = []
            for t, g in zip(targets, flat_og):
                if g is None:
                    out_grads.append(None)
                    continue
                g = convert_to_tensor(g, dtype_hint=t.dtype) if not isinstance(
                    g, Tensor) else g
                if tuple(g._shape) != tuple(t._shape):
                    raise InvalidArgumentError(
                        f"GradientTape.gradient: output_gradients shape {list(g._shape)} does "
                        f"not match target shape {list(t._shape)}")
                out_grads.append(g)
        tape = self._tape
        self._used = True
        explaining = _explain.explain_enabled[0]
        if not self._persistent:
            self._drop_tape()
        target_ids = [t.id for t in targets]
        tell = None
        if _ctx.gradient_observers:  # e.g. a strategy's all-reduce, started bucket by bucket
            by_id = dict(zip(reversed(source_ids), reversed(flat_sources)))
            observers = tuple(_ctx.gradient_observers)

            def tell(sid, g):
                for observer in observers:
                    observer.gradient_ready(by_id[sid], g)
        grads = tape.compute_gradient(vspace, target_ids, source_ids, out_grads,
                                      [(t._shape, t.dtype) for t in targets], tell)
        # what explain() reads of a spent one-shot tape: its light copy, made only when a
        # gradient was None (Tape.light_copy)
        report_tape = tape if self._persistent else tape.light
        if not self._persistent:
            self._spent = (report_tape, set(source_ids),
                           {sid for sid, g in zip(source_ids, grads) if g is None})
        result = []
        site = None
        for k, (s, sid, g) in enumerate(zip(flat_sources, source_ids, grads)):
            if g is None:
                if explaining or not s.dtype.is_trainable:
                    site = site or user_site() or "gradient()"
                if explaining:  # one log record, as TensorFlow logs its warnings
                    _log.warning("%s: GradientTape.gradient returned None for source %d "
                                 "(%s):\n%s", site, k, _describe_source(s),
                                 self._report(report_tape, target_ids, s, sid, False))
                elif not s.dtype.is_trainable:  # TensorFlow warns of these at gradient()
                    _log.warning("%s: GradientTape.gradient: the dtype of source %d must be "
                                 "floating (e.g. tf.float32), got %s, so its gradient is "
                                 "None", site, k, s.dtype.name)
                if unconnected is UnconnectedGradients.ZERO:
                    g = vspace.zeros(s._shape, s.dtype)
            result.append(g)
        return nest.pack_sequence_as(sources, result) if nest.is_nested(sources) else result[0]

    def _report(self, tape, target_ids, source, source_id, gradient_exists) -> str:
        if tape is None:  # a spent one-shot tape that reached the source
            return _explain.explain_tape(None, target_ids, source_id, _source_info(source),
                                         connected_without_gradient=True)
        return _explain.explain_tape(tape, target_ids, source_id, _source_info(source),
                                     gradient_exists=gradient_exists)

    # ---------------------------------------------------------------- diagnostics
    def explain(self, target, source) -> str:
        """Explain in words why the gradient of `target` w.r.t. `source` is (or would be)
        None: never watched, an integer source, stop_gradient, an integer cast or
        non-differentiable op, a NumPy round trip, a variable assigned instead of read,
        naming the op and the user's source line (API §8.1); or that it is not None.
        Works after gradient() on a non-persistent tape too, for that call's sources.

        Example:
            >>> print(tape.explain(loss, w))
        """
        targets = [t._value if isinstance(t, Variable) else t for t in nest.flatten(target)]
        target_ids = [t.id for t in targets]
        sid = _source_id(source)
        if self._tape is None:  # gradient() was called on this one-shot tape
            spent, sources, nones = self._spent if self._spent is not None else (
                None, set(), set())
            if sid not in sources:
                return _explain.explain_tape(None, target_ids, sid, _source_info(source))
            if sid not in nones:
                return ("The gradient is not None: gradient() returned a gradient for this "
                        "source.")
            return self._report(spent, target_ids, source, sid, False)
        return self._report(self._tape, target_ids, source, sid,
                            self._gradient_exists(targets, sid, source))

    def _gradient_exists(self, targets, source_id, source) -> bool:
        """Whether gradient() would give a gradient (not None): a backward pass over the
        tape, recorded nowhere and leaving the tape as it was."""
        tape = self._tape
        if not source.dtype.is_trainable or source_id not in tape.tensor_tape:
            return False
        persistent, tape.persistent = tape.persistent, True
        try:
            with no_recording():
                grads = tape.compute_gradient(vspace, [t.id for t in targets], [source_id],
                                              None, [(t._shape, t.dtype) for t in targets])
        finally:
            tape.persistent = persistent
        return grads[0] is not None

    def memory(self) -> dict:
        """Bytes this tape keeps alive for the backward pass, in total (shared buffers
        counted once) and per recorded op.

        Example:
            >>> tape.memory()["total_bytes"], tape.memory()["ops"][0]["name"]
        """
        ops, seen, total = [], set(), 0
        tape = self._tape
        for entry in (tape.op_tape.values() if tape is not None else ()):
            env = getattr(entry.backward, "env", None) or {}
            inputs, outputs, nbytes = [], [], 0
            for name, val in env.items():
                members = val if isinstance(val, (list, tuple)) else [val]
                for t in members:
                    if not isinstance(t, Tensor) or not t._buf:  # disposed or symbolic
                        continue
                    nbytes += t._buf.nbytes
                    if id(t._buf) not in seen:
                        seen.add(id(t._buf))
                        total += t._buf.nbytes
                (outputs if name == "ans" else inputs).append(name)
            ops.append({"name": entry.op_type, "saved_inputs": inputs,
                        "saved_outputs": bool(outputs), "bytes": nbytes,
                        "site": entry.site})
        return {"total_bytes": total, "num_ops": len(ops), "ops": ops}

    def to_dot(self) -> str:
        """The recorded computation as Graphviz DOT text (tensors as ellipses, ops as
        boxes). Example: `open("tape.dot", "w").write(tape.to_dot())`."""
        lines = ["digraph tape {", "  rankdir=LR;"]
        tape = self._tape
        if tape is not None:
            for tid, op_id in tape.tensor_tape.items():
                if op_id == WATCHED:
                    shape, dtype = tape.watched_meta.get(tid, ((), None))
                    lines.append(f'  t{tid} [label="watched {tid}\\n{list(shape)}", '
                                 'shape=ellipse, style=bold];')
            for op_id, e in tape.op_tape.items():
                lines.append(f'  op{op_id} [label="{e.op_type}", shape=box];')
                for i in e.input_ids:
                    lines.append(f"  t{i} -> op{op_id};")
                for o, (shape, dtype) in zip(e.output_ids, e.output_meta):
                    lines.append(f'  t{o} [label="{o}\\n{getattr(dtype, "name", dtype)}'
                                 f'{list(shape)}", shape=ellipse];')
                    lines.append(f"  op{op_id} -> t{o};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------- jacobians
    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor: bool = True):
        """Full Jacobian: result[i] has shape target.shape + sources[i].shape.

        Vectorized: one backward pass whose output gradient is a dummy zero cotangent
        carrying the identity basis as batched forward-mode tangents; the backward pass is
        linear in the cotangent, so its tangents are the Jacobian's rows.
        Example:
            >>> with tf.GradientTape() as g:
            ...     g.watch(x); y = x * x
            >>> g.jacobian(y, x)   # diag(2x)
        """
        return self._jacobian(target, sources, unconnected_gradients, batch=False)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor: bool = True):
        """Per-example Jacobians: result[b] = d target[b] / d source[b], shape
        [B] + target.shape[1:] + source.shape[1:]; rows must not depend on other rows."""
        if not isinstance(target, Tensor) or not isinstance(source, (Tensor, Variable)):
            raise InvalidArgumentError("batch_jacobian: target and source must be tensors")
        if not target._shape or not source._shape or target._shape[0] != source._shape[0]:
            raise InvalidArgumentError(
                f"batch_jacobian: target {list(target._shape)} and source "
                f"{list(source._shape)} need the same leading batch dimension")
        return self._jacobian(target, source, unconnected_gradients, batch=True)

    def _jacobian(self, target, sources, unconnected_gradients, batch):
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians); use persistent=True")
        if not isinstance(target, Tensor):
            target = convert_to_tensor(target)
        shape = target._shape
        if batch:
            m = int(np.prod(shape[1:]))
            basis = reshape(eye(m, dtype=target.dtype), (m, 1) + shape[1:])
            basis = broadcast_to(basis, (m,) + shape)
        else:
            m = int(np.prod(shape))
            basis = reshape(eye(m, dtype=target.dtype), (m,) + shape)
        seed = zeros(shape, target.dtype)
        was_recording = self._recording
        if was_recording:
            self._pop_tape()
        try:
            with ForwardAccumulator(seed, basis, use_batch=True) as acc:
                grads = self.gradient(target, sources, output_gradients=seed,
                                      unconnected_gradients=UnconnectedGradients.NONE)
        finally:
            if was_recording and self._tape is not None:
                self._push_tape()
        unconnected = as_unconnected(unconnected_gradients)
        flat_sources = nest.flatten(sources)
        flat = nest.flatten(grads) if nest.is_nested(sources) else [grads]
        out = []
        for s, g in zip(flat_sources, flat):
            rows = None
            if g is not None:
                rows = acc.jvp(convert_to_tensor(g))
            if rows is None:
                if unconnected is UnconnectedGradients.ZERO:
                    full = (shape + s._shape[1:]) if batch else (shape + tuple(s._shape))
                    out.append(zeros(full, s.dtype))
                else:
                    out.append(None)
                continue
            if batch:
                # rows: [m, B, *src_rest] -> [B, *tgt_rest, *src_rest]
                src_rest = tuple(s._shape[1:])
                rows = reshape(rows, (m, shape[0]) + src_rest)
                perm = (1, 0) + tuple(range(2, 2 + len(src_rest)))
                rows = transpose(rows, perm)
                out.append(reshape(rows, tuple(shape) + src_rest))
            else:
                out.append(reshape(rows, tuple(shape) + tuple(s._shape)))
        return nest.pack_sequence_as(sources, out) if nest.is_nested(sources) else out[0]
