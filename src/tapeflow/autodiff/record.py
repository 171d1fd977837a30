"""What a tape keeps of one op call, and recording it on the active tapes.

`record` is installed as dispatch's record hook: after every op run while a tape or a
variable watcher is active, it notes the variables the op read (tapes watch trainable
ones; custom_gradient's watcher collects them), and puts the op on every tape that watches
one of its trainable inputs, with a `Backward` holding only what the VJP rule of the
inputs that need a gradient reads.
"""
from __future__ import annotations

from .._core import registry as _reg
from .._core.context import ctx, debug_on, hooks
from .._core.convert import convert_to_tensor
from .._core.dispatch import check_numerics, user_site
from .._core.indexed_slices import IndexedSlices
from .._core.shape import with_dims
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..ops._define import sum_to_shape
from . import vspace
from .explain import add_event


# the user's line a recorded op is blamed on, when it is not the caller's: a traced
# function's gradient records the forward graph's nodes, each with the line it came from
forced_site: list = [None]


class Backward:
    """A recorded op's backward function: `bwd(out_grads, needs)` -> one gradient per flat
    input (None where not needed). It holds only what its VJP rule reads.

    `layout` is [(input name, None | list length)] and `in_shapes` the flat input shapes;
    `multi`: the rule gets `g` (and `ans`) as lists; `lists`: some input is a list.
    """

    __slots__ = ("name", "rule", "env", "attrs", "layout", "in_shapes", "needed",
                 "out_meta", "multi", "lists", "site", "__weakref__")

    def __call__(self, out_grads: list, needs: list) -> list:
        rule = self.rule
        if rule is None:
            raise LookupError(f"No gradient defined for operation {self.name!r}; register one "
                              "with tf.register_gradient or wrap it with tf.custom_gradient")
        layout, shapes, needed = self.layout, self.in_shapes, self.needed
        if not self.lists:  # one flat slot per input: the common case, kept cheap
            wanted = tuple([k for (k, _), need in zip(layout, needs) if need and k in needed])
        else:
            wanted, pos = [], 0
            for name, count in layout:
                n = 1 if count is None else count
                if name in needed and any(needs[pos:pos + n]):
                    wanted.append(name)
                pos += n
            wanted = tuple(wanted)
        if not wanted:
            return [None] * len(needs)
        if not self.multi and rule.passthrough.issuperset(wanted):
            g = out_grads[0]  # inputs whose gradient is g itself: no rule call
            result = {k: g for k in wanted}
        else:
            env = self.env.copy()
            if self.multi:
                env["g"] = self._cotangents(out_grads)
            else:
                g = out_grads[0]
                # rules compute with dense cotangents (a sparse one, gather's, only passes
                # through ops whose gradient is g itself)
                env["g"] = g if type(g) is not IndexedSlices else _dense(g)
            if rule.shape_params:
                self._shapes_into(env, rule.shape_params)
            if self.site is not None:  # the rule's own ops are blamed on this op
                ctx.rule_of.append((self.name, self.site, "backward"))
                try:
                    result = rule.call(env, self.attrs, wanted)
                finally:
                    ctx.rule_of.pop()
            else:
                result = rule.call(env, self.attrs, wanted)
        flat = []
        if not self.lists:
            for (name, _), shape in zip(layout, shapes):
                g = result.get(name)
                flat.append(_fit(g, shape) if type(g) is Tensor and g._shape != shape else g)
        else:
            pos = 0
            for name, count in layout:
                g = result.get(name)
                if count is None:
                    flat.append(_fit(g, shapes[pos]))
                    pos += 1
                else:
                    for gi in (g if g is not None else [None] * count):
                        flat.append(_fit(gi, shapes[pos]))
                        pos += 1
        if debug_on[0]:
            check_numerics(self.name, {"g": [g for g in out_grads if g is not None]}, flat,
                           "backward", source=self.site)
        return flat

    def _cotangents(self, out_grads: list) -> list:
        grads = [g if type(g) is not IndexedSlices else _dense(g) for g in out_grads]
        if self.rule.zeros_for_none:
            for i, g in enumerate(grads):
                if g is None:
                    grads[i] = vspace.zeros(*self.out_meta[i])
        return grads

    def _shapes_into(self, env: dict, names: tuple) -> None:
        """`<input>_shape` entries for the rule (a list of shapes for a list input)."""
        pos = 0
        for name, count in self.layout:
            n = 1 if count is None else count
            if name in names:
                env[name + "_shape"] = (self.in_shapes[pos] if count is None
                                        else self.in_shapes[pos:pos + n])
            pos += n


def _fit(g, shape):
    """Undo broadcasting: every input gradient of every rule goes through here."""
    if g is None or type(g) is not Tensor or g._shape == shape:
        return g
    return sum_to_shape(g, shape)


def _layout(op, inputs: dict) -> tuple[list, list]:
    """(layout, flat input shapes) of one call: [(name, None | list length)]."""
    layout, in_shapes = [], []
    for k in (op.inputs if op.inputs else inputs):
        v = inputs.get(k)
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            layout.append((k, len(v)))
            in_shapes.extend(m._shape for m in v)
        else:
            layout.append((k, None))
            in_shapes.append(v._shape)
    return layout, in_shapes


def make_backward(name: str, inputs: dict, attrs: dict, outs: list, needed,
                  layout=None, in_shapes=None, lists=None) -> Backward:
    """The backward function of one op call, keeping only what the VJP rule of the
    inputs in `needed` (names) reads. Used by tapes and by forward mode's fallback."""
    op = _reg.OPS.get(name) or _reg.ensure_op(name, inputs)
    if layout is None:
        layout, in_shapes = _layout(op, inputs)
    if type(needed) is not tuple:  # a canonical key for the rule's save cache
        needed = tuple(k for k in (op.inputs if op.inputs else inputs) if k in needed)
    rule = _reg.GRADIENTS.get(name)
    bwd = Backward()
    bwd.name, bwd.rule, bwd.attrs = name, rule, attrs
    bwd.layout, bwd.in_shapes, bwd.needed = layout, in_shapes, needed
    if outs[0]._nb is None:  # symbolic outputs: unknown dims become Dims of their tensors
        in_shapes, outs_meta = _dims_of(op, inputs, in_shapes, outs)
        bwd.in_shapes = in_shapes
        bwd.out_meta = outs_meta
    else:
        bwd.out_meta = [(o._shape, o.dtype) for o in outs]
    bwd.multi = len(outs) != 1 or op.list_output
    if lists is None:
        lists = any(c is not None for _, c in layout)
    bwd.lists = lists
    # the user's line, named when a NaN appears in this op's backward rule: always while
    # tracing (the graph may run in debug mode later), eagerly only in debug mode
    bwd.site = (forced_site[0] or user_site()) if debug_on[0] or ctx.graph is not None \
        else None
    env = {}
    if rule is not None:
        save_inputs, save_outputs = rule.saves(needed)
        for k in save_inputs:
            v = env[k] = inputs.get(k)
            if type(v) is Tensor:
                v._kept = True  # the tape, not the tidy scope, now decides its life
            elif type(v) is list or type(v) is tuple:
                for m in v:
                    if type(m) is Tensor:
                        m._kept = True
        if save_outputs:
            for o in outs:
                o._kept = True
            env["ans"] = list(outs) if bwd.multi else outs[0]
    bwd.env = env
    return bwd


def _dense(g: IndexedSlices) -> Tensor:
    return convert_to_tensor(g)


def _dims_of(op, inputs: dict, in_shapes: list, outs: list) -> tuple[list, list]:
    """Shapes of a traced op's inputs and outputs with unknown dims as `Dim`s, so that the
    rules and `_fit` build shapes that are resolved when the graph runs."""
    shapes = [with_dims(m) if None in s and isinstance(m, Tensor) else s
              for m, s in zip(_members(op, inputs), in_shapes)]
    meta = [(with_dims(o) if None in o._shape else o._shape, o.dtype) for o in outs]
    return shapes, meta


def _on_variables(c, variables, outs: list) -> None:
    """The op read (or, with no outputs, wrote) variables: tell watchers and tapes."""
    for var in variables:
        if not outs:  # an assignment: tape.explain() reports it if the variable is a source
            note_event("assign", var.id)
            continue
        if var.trainable:
            for w in c.watchers:
                w.setdefault(var.id, var)
        for tp in c.tapes:
            tp.variable_accessed(var)


def _variables_in(inputs: dict) -> list:
    found = []
    for v in inputs.values():
        if type(v) is list or type(v) is tuple:
            found.extend(m for m in v if isinstance(m, Variable))
        elif type(v) is not Tensor and isinstance(v, Variable):
            found.append(v)
    return found


def _on_any(i: int, tapes: list) -> bool:
    for tp in tapes:
        if i in tp.tensor_tape:
            return True
    return False


def record(name: str, inputs: dict, attrs: dict, outs: list) -> None:
    """Put an op on every recording tape that watches one of its trainable inputs
    (installed as dispatch's record hook; also runs for variable watchers alone)."""
    c = ctx
    all_tapes = c.tapes
    if not all_tapes or not outs:
        _on_variables(c, _variables_in(inputs), outs)
        return
    op = _reg.OPS.get(name) or _reg.ensure_op(name, inputs)
    single = all_tapes[0].tensor_tape if len(all_tapes) == 1 else None
    ids, needed, layout, in_shapes = [], [], [], []
    lists = False
    for k in (op.inputs if op.inputs else inputs):
        v = inputs.get(k)
        if v is None:
            continue
        if type(v) is Tensor:
            i = v.id
            ids.append(i)
            layout.append((k, None))
            in_shapes.append(v._shape)
            if v.dtype.is_trainable and (i in single if single is not None
                                         else _on_any(i, all_tapes)):
                needed.append(k)
            continue
        # a variable (resource input) or a list of tensors and variables
        members = v if type(v) is list or type(v) is tuple else None
        lists = lists or members is not None
        _on_variables(c, [m for m in (members or (v,)) if isinstance(m, Variable)], outs)
        layout.append((k, None if members is None else len(members)))
        hit = False
        for m in (members if members is not None else (v,)):
            i = m.id
            ids.append(i)
            in_shapes.append(m._shape)
            if not hit and m.dtype.is_trainable and _on_any(i, all_tapes):
                hit = True
        if hit:
            needed.append(k)
    if not needed:
        return
    if single is not None:
        recording = all_tapes
    else:
        trainable = [i for i, m in zip(ids, _members(op, inputs)) if m.dtype.is_trainable]
        recording = [tp for tp in all_tapes if any(i in tp.tensor_tape for i in trainable)]
    if not outs[0].dtype.is_trainable and not any(o.dtype.is_trainable for o in outs) \
            or _reg.GRADIENTS.get(name, 0) is None:
        _note_break(recording, name, ids, outs[0].dtype.name)
        return
    bwd = make_backward(name, inputs, attrs, outs, tuple(needed), layout, in_shapes, lists)
    out_ids = [o.id for o in outs]
    for tp in recording:
        tp.record_operation(name, out_ids, bwd.out_meta, ids, bwd)


def _members(op, inputs: dict) -> list:
    """The flat inputs of one call, in layout order."""
    flat = []
    for k in (op.inputs if op.inputs else inputs):
        v = inputs.get(k)
        if v is not None:
            flat.extend(v if type(v) is list or type(v) is tuple else (v,))
    return flat


def _note_break(tapes: list, name: str, ids: list, dtype: str) -> None:
    """Remembered for tape.explain(): an op took a tensor on the tape and its result has
    no gradient (an integer Cast, a comparison): the path breaks here. The user's line is
    noted always (one stack walk, only at such ops)."""
    site = user_site()
    for tp in tapes:
        for i in ids:
            if i in tp.tensor_tape:
                add_event(tp, "nondiff", i, name, site, dtype)


def note_event(kind: str, tensor_id: int) -> None:
    """Tell recording tapes that a tensor or variable left the tape's view (a NumPy round
    trip, a stop_gradient, an assignment), for explain(). Variables are noted whether or
    not the tape watches them yet (explain names `v.numpy()` for a variable never read)."""
    site = None
    for tp in ctx.tapes:
        if not tp.is_watched(tensor_id) and kind not in ("assign", "variable_numpy"):
            continue
        if site is None:
            site = user_site()
        add_event(tp, "numpy" if kind == "variable_numpy" else kind, tensor_id, kind, site)


hooks.record = record
hooks.note_event = note_event
