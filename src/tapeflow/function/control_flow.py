"""`cond` and `while_loop`: Python control flow eagerly, graph ops ("If", "While") while tracing.

A branch or loop body is traced into a sub-FuncGraph of its own; tensors it uses from
outside are captured and become inputs of the node (`args`), variables it reads become the
node's `resources`. The nodes run on every backend through control.py, which compiles the
sub-functions (`ConcreteFunction.compile`) and runs their programs on native arrays.

Gradients: an If node also returns the intermediates its branches' backward functions read
(each branch returns stand-ins for the other's), and its VJP is an If over the branches'
backward functions. A While node returns its iteration count; its VJP is a WhileGrad node
that runs the loop backwards, storing the loop state only every k ~ sqrt(n) iterations and
recomputing the rest segment by segment (API §8.5). The derivatives of WhileGrad and the
JVP of While are loops over the body's forward-mode function, so every order works.
"""
from __future__ import annotations

import math

from .._core import nest, registry as _reg
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.dtypes import bool as _bool, int32 as _int32
from .._core.errors import describe, InvalidArgumentError
from .._core.registry import define_op
from .._core.shape import dims_of
from .._core.tensor import SYMBOLIC, Tensor, TensorShape, TensorSpec
from .._core.variable import Variable
from ..autodiff.forward import ForwardAccumulator
from ..ops import array as array_ops, creation as creation_ops
from .backprop import backward_function
from .concrete import ConcreteFunction
from .control import (row_writes, run_fused, run_if, run_while, run_while_grad,
                      SaveForGradient)
from .executor import natives_of
from .graph import _dims_in, FuncGraph, tracing
from .interpret import copy_node, eval_graph, finish_rebuild, start_rebuild
from .tensor_array import shape_loop_arrays

__all__ = ["cond", "while_loop"]


def _symbolic(x) -> bool:
    return isinstance(x, Tensor) and x._buf == SYMBOLIC


def _zeros_like(t: Tensor) -> Tensor:
    return creation_ops.zeros_like(t)


_UNBATCHED = object()  # batch size of unbatched tangents (a batch size may be None)


def _batch_size(primals: list, tangents: list):
    """The batch size of forward-mode tangents (one more leading axis than their primals,
    API §4.3), or _UNBATCHED."""
    for p, t in zip(primals, tangents):
        if t is not None:
            return t._shape[0] if len(t._shape) == len(p._shape) + 1 else _UNBATCHED
    return _UNBATCHED


def _tangent_zeros(t: Tensor, batch=_UNBATCHED) -> Tensor:
    """A zero tangent for `t` (with a leading batch axis of `batch` members if batched)."""
    z = _zeros_like(t)
    if batch is _UNBATCHED:
        return z
    return array_ops.tile(array_ops.expand_dims(z, 0), [batch] + [1] * len(t._shape))


def _batched(spec: TensorSpec, batch) -> TensorSpec:
    return spec if batch is _UNBATCHED else TensorSpec((batch,) + tuple(spec.shape), spec.dtype)


def _local(tensors: list) -> list:
    """`tensors` as the graph being traced sees them (captured where they come from
    outside), so an accumulator watching them sees the ops that read them."""
    g = ctx.graph
    return list(tensors) if g is None else [g._operand(t) for t in tensors]


# ---------------------------------------------------------------------- sub-functions


class _Sub:
    """A Python function traced into a graph of its own: the graph, its argument
    placeholders and its flat outputs (tensors of the graph, or None leaves)."""

    def __init__(self, fn, specs, name: str, convert=None):
        self.graph = g = FuncGraph(name)
        self.params = [g.placeholder(s.shape, s.dtype) for s in specs]
        with tracing(g):
            self.result = fn(*self.params)
            flat = nest.flatten(self.result)
            if convert is not None:
                flat = [convert(i, v) for i, v in enumerate(flat)]
            self.flat = [self._own(v) for v in flat]

    def _own(self, v):
        if v is None:
            return None
        if isinstance(v, Variable):
            v = v.read_value()
        if not isinstance(v, Tensor):
            v = convert_to_tensor(v)
        return v if self.graph.owns(v) else self.graph.capture(v)

    @property
    def stateful(self) -> bool:
        return any(n.stateful and n.op != "ReadVariableOp" for n in self.graph.nodes)


def _seal(subs: list) -> tuple[list, list, list]:
    """ConcreteFunctions taking (own arguments, then every tensor any of `subs` captured,
    in one order), so one node feeds them all: (outside tensors, variables, functions)."""
    outside, seen = [], set()
    variables, seen_v = [], set()
    for s in subs:
        for ext, _ in s.graph.captures:
            if ext.id not in seen:
                seen.add(ext.id)
                outside.append(ext)
        for v in s.graph.variables.values():
            if v.id not in seen_v:
                seen_v.add(v.id)
                variables.append(v)
    cfs = []
    for s in subs:
        g = s.graph
        order = list(s.params) + [g.capture(ext) for ext in outside]
        outs = [o for o in s.flat if o is not None]
        g.seal(outs, inputs=order, captures=[])  # the caller feeds the captures
        specs = tuple(TensorSpec(t._shape, t.dtype) for t in order)
        cfs.append(ConcreteFunction(g, (specs, {}), outs, len(order), g.name))
    return outside, variables, cfs


def _jvp_function(cf, tangent_of: list, variables: list, name: str, batch=_UNBATCHED):
    """A ConcreteFunction computing `cf` and its JVP: inputs (cf's inputs, then a tangent
    for each input i with `tangent_of[i]`, then one per variable in `variables`; batched
    tangents with `batch`); outputs (cf's outputs, then a tangent for each trainable
    output). Traced with a forward accumulator over `cf`'s nodes, so it is differentiable
    again."""
    ins = cf.graph.inputs
    specs = [TensorSpec(t._shape, t.dtype) for t in ins]
    specs += [_batched(TensorSpec(t._shape, t.dtype), batch)
              for t, on in zip(ins, tangent_of) if on]
    specs += [_batched(TensorSpec(v._shape, v.dtype), batch) for v in variables]
    n_in = len(ins)

    def fn(*params):
        xs = list(params[:n_in])
        ts = iter(params[n_in:])
        primals = [x for x, on in zip(xs, tangent_of) if on] + list(variables)
        tangents = [next(ts) for _ in primals]
        if not primals:
            outs = cf._call_flat(xs)
            return outs + [_tangent_zeros(o, batch) for o in outs if o.dtype.is_trainable]
        with ForwardAccumulator(primals, tangents,
                                use_batch=batch is not _UNBATCHED) as acc:
            outs = cf._call_flat(xs)
        live = [o for o in outs if o.dtype.is_trainable]
        return outs + [t if t is not None else _tangent_zeros(o, batch)
                       for t, o in zip([acc.jvp(o) for o in live], live)]

    sub = _Sub(fn, specs, name)
    # constants the JVP rules made stay captures of this function: it is only ever
    # inlined (called while tracing), where they are captured again
    return ConcreteFunction(sub.graph, (tuple(specs), {}), sub.flat, len(specs), name)


# ---------------------------------------------------------------------- cond


def cond(pred, true_fn=None, false_fn=None, name=None):
    """`true_fn()` if `pred` else `false_fn()`.

    Eagerly (a Python bool or an eager tensor) only the chosen function runs, as Python
    `if` would. While tracing with a symbolic `pred`, both functions are traced into
    branch graphs and the result is one "If" node that runs the chosen branch at run time.
    Both must return the same structure and dtypes; shapes may differ (unknown dimensions
    where they do). Differentiable in both modes, to any order.

    Example:
        >>> @tf.function
        ... def f(x):
        ...     return tf.cond(x > 0, lambda: x * x, lambda: -x)
        >>> f(tf.constant(3.0)).numpy(), f(tf.constant(-2.0)).numpy()
        (9.0, 2.0)
    """
    if not callable(true_fn):
        raise TypeError("cond: true_fn must be callable")
    if not callable(false_fn):
        raise TypeError("cond: false_fn must be callable")
    if isinstance(pred, Variable):
        pred = pred.read_value()
    if not _symbolic(pred):
        if isinstance(pred, Tensor) and pred._shape not in ((), (1,)):
            raise InvalidArgumentError(f"cond: pred must be a scalar, got {describe(pred)}")
        return true_fn() if bool(pred) else false_fn()
    if ctx.graph is None:
        raise InvalidArgumentError(f"cond: pred {describe(pred)} is a symbolic tensor of a "
                                   "traced function, used outside it")
    if pred._shape not in ((), (1,)):
        raise InvalidArgumentError(f"cond: pred must be a scalar, got {describe(pred)}")
    label = name or "cond"
    then_sub = _Sub(lambda: true_fn(), [], f"{label}_true")
    else_sub = _Sub(lambda: false_fn(), [], f"{label}_false")
    specs = _merge_branch_outputs(then_sub, else_sub)
    outside, variables, (then_cf, else_cf) = _seal([then_sub, else_sub])
    outs = _if_node(pred, outside, variables, then_cf, else_cf, specs,
                    then_sub.stateful or else_sub.stateful)
    it = iter(outs)
    flat = [None if o is None else next(it) for o in then_sub.flat]
    return nest.pack_sequence_as(then_sub.result, flat) if nest.is_nested(then_sub.result) \
        else flat[0]


def _merge_branch_outputs(a: _Sub, b: _Sub) -> list:
    """The If's output specs: both branches' structures and dtypes must agree; shapes
    become the most specific shape compatible with both."""
    def fail(detail):
        raise TypeError("true_fn and false_fn arguments to tf.cond must have the same number, "
                        f"type, and overall structure of return values.\n\ntrue_fn output: "
                        f"{a.result!r:.200}\nfalse_fn output: {b.result!r:.200}\n\n"
                        f"Error details:\n{detail}")
    if _tree(a.result) != _tree(b.result) or len(a.flat) != len(b.flat):
        fail("the two structures don't have the same nested structure")
    specs = []
    for name, x, y in zip(_leaf_names(a.result, "output"), a.flat, b.flat):
        if (x is None) != (y is None):
            fail(f"{name} is None in one branch only")
        if x is None:
            continue
        if x.dtype is not y.dtype:
            fail(f"{name}: {describe(x)} and {describe(y)} have different types")
        if len(x._shape) != len(y._shape):
            fail(f"{name}: {describe(x)} and {describe(y)} have different ranks")
        specs.append((tuple(d if d == e else None for d, e in zip(x._shape, y._shape)),
                      x.dtype))
    return specs


def _tree(value):
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _tree(v)) for k, v in sorted(value.items(), key=repr))
    if isinstance(value, (list, tuple)):
        return ("seq", len(value)) + tuple(_tree(v) for v in value)
    return None


class _BranchGrad:
    """What the gradient of one branch needs, prepared when the If is traced: the branch
    function returning its outputs then the intermediates its backward function reads
    (`full`), and where each saved tensor comes from at the If node ("arg" j: the node's
    input, "out" j: the node's output)."""

    def __init__(self, cf, n_out: int):
        self.cf, self.n_out = cf, n_out
        self.full, self.extras, self.error = cf, [], None
        self._full_backward = None
        self.offset = 0  # where this branch's extras start among the If's extra outputs
        try:
            self.backward = backward_function(cf)
        except Exception as e:  # noqa: BLE001 - raised if the gradient is ever asked for
            self.backward, self.error = None, e
            return
        inputs = {t.id for t in cf.graph.inputs}
        outputs = {t.id for t in cf._flat_outputs}
        seen = set()
        for t in self.backward[2]:
            if t.id not in inputs and t.id not in outputs and t.id not in seen:
                seen.add(t.id)
                self.extras.append(t)
        if self.extras:
            self.full = ConcreteFunction(cf.graph, cf.structured_input_signature,
                                         list(cf._flat_outputs) + self.extras, cf._n_args,
                                         cf.name + "_forward")

    def where(self, t: Tensor):
        for j, p in enumerate(self.cf.graph.inputs):
            if p.id == t.id:
                return ("arg", j)
        for j, o in enumerate(self.full._flat_outputs):
            if o.id == t.id:
                return ("out", j if j < self.n_out else self.n_out + self.offset
                        + (j - self.n_out))
        raise InvalidArgumentError(
            f"cond: the second-order gradient of branch {self.cf.name} reads {describe(t)}, "
            "which the branch does not return")

    def __repr__(self) -> str:
        return f"<gradient of {self.cf.name}: {len(self.extras)} saved intermediates>"

    def full_backward(self):
        """The backward function with cotangents for the extras too (higher orders)."""
        if self._full_backward is None:
            self._full_backward = backward_function(self.full)
        return self._full_backward


def _if_node(pred, outside, variables, then_cf, else_cf, specs, stateful):
    n_out = len(specs)
    trainable = any(dt.is_trainable for _, dt in specs) and any(
        t.dtype.is_trainable for t in list(outside) + list(variables))
    if trainable:
        then_g, else_g = _BranchGrad(then_cf, n_out), _BranchGrad(else_cf, n_out)
        else_g.offset = len(then_g.extras)
    else:
        then_g = else_g = None
    then_pad = [(t._shape, t.dtype) for t in then_g.extras] if then_g else []
    else_pad = [(t._shape, t.dtype) for t in else_g.extras] if else_g else []
    attrs = {"then_branch": then_g.full if then_g else then_cf,
             "else_branch": else_g.full if else_g else else_cf,
             "n_out": n_out, "specs": tuple(specs),
             "then_pad": tuple(then_pad), "else_pad": tuple(else_pad),
             "grads": (then_g, else_g), "stateful": stateful}
    outs = run_kernel("If", {"pred": pred, "args": list(outside), "resources": list(variables)},
                      attrs)
    outs = outs if isinstance(outs, list) else [outs]
    return outs[:n_out]


def _if_shape(shapes, dtypes, attrs):
    if not attrs["n_out"]:  # branches without outputs: the node returns the predicate
        return [((), _bool)]
    return list(attrs["specs"]) + list(attrs["then_pad"]) + list(attrs["else_pad"])


def _if_vjp(g, ans, pred, args, resources, *, grads, n_out, **_):
    then_g, else_g = grads
    for branch in (then_g, else_g):
        if branch is not None and branch.error is not None:
            raise branch.error
    cots = [c if c is not None else _zeros_like(o) for c, o in zip(g[:n_out], ans[:n_out])]
    wanted = [i for i, a in enumerate(args) if a.dtype.is_trainable]
    wanted_res = [i for i, v in enumerate(resources) if v.dtype.is_trainable]

    def branch_gradient(branch: _BranchGrad):
        def fn():
            own = g[n_out + branch.offset:n_out + branch.offset + len(branch.extras)]
            if all(c is None for c in own):
                bwd, slots, saved = branch.backward
                feed = list(cots)
            else:
                bwd, slots, saved = branch.full_backward()
                lo = n_out + branch.offset
                feed = list(cots) + [c if c is not None else _zeros_like(ans[lo + j])
                                     for j, c in enumerate(own)]
            values = []
            for t in saved:
                kind, j = branch.where(t)
                values.append(args[j] if kind == "arg" else ans[j])
            results = bwd._call_flat(feed + values)
            n_in = len(branch.cf.graph.inputs)
            branch_vars = list(branch.cf.graph.variables.values())
            flat_args = [None] * len(args)
            flat_res = [None] * len(resources)
            for slot, r in zip(slots, results):
                if slot < n_in:
                    flat_args[slot] = r
                else:
                    var = branch_vars[slot - n_in]
                    flat_res[next(i for i, v in enumerate(resources) if v is var)] = r
            return ([flat_args[i] if flat_args[i] is not None else _zeros_like(args[i])
                     for i in wanted]
                    + [flat_res[i] if flat_res[i] is not None
                       else creation_ops.zeros(resources[i]._shape, resources[i].dtype)
                       for i in wanted_res])
        return fn

    out = cond(pred, branch_gradient(then_g), branch_gradient(else_g))
    it = iter(out)
    arg_grads = [None] * len(args)
    for i in wanted:
        arg_grads[i] = next(it)
    res_grads = [None] * len(resources)
    for i in wanted_res:
        res_grads[i] = next(it)
    return {"pred": None, "args": arg_grads, "resources": res_grads}


def _if_jvp(tangents, ans, pred, args, resources, *, then_branch, else_branch, n_out,
            then_pad, **_):
    """An If over the branches' forward-mode functions: the taken branch runs again under
    a forward accumulator; the other branch's stand-in outputs get zero tangents."""
    t_args, t_res = tangents["args"], tangents["resources"] or [None] * len(resources)
    given = [t for t in list(t_args) + list(t_res) if t is not None]
    if not given or not n_out:
        return None
    n_then = len(then_pad)
    batch = _batch_size(list(args) + list(resources), list(t_args) + list(t_res))

    def zero(o):
        return _tangent_zeros(o, batch) if o.dtype.is_trainable else None

    def branch_jvp(cf, first: bool):
        def fn():
            local = _local(args)
            primals = [a for a, t in zip(local, t_args) if t is not None]
            primals += [v for v, t in zip(resources, t_res) if t is not None]
            with ForwardAccumulator(primals, given, use_batch=batch is not _UNBATCHED) as acc:
                outs = cf._call_flat(local)
            mine = [acc.jvp(o) if o.dtype.is_trainable else None for o in outs]
            mine = [zero(o) if t is None else t for t, o in zip(mine, outs)]
            if first:
                return mine + [zero(o) for o in ans[n_out + n_then:]]
            return mine[:n_out] + [zero(o) for o in ans[n_out:n_out + n_then]] + mine[n_out:]
        return fn

    return list(cond(pred, branch_jvp(then_branch, True), branch_jvp(else_branch, False)))


define_op("If", ["pred", "args", "resources"], list_inputs=("args", "resources"),
          num_outputs=None, shape=_if_shape, vjp=_if_vjp, jvp=_if_jvp, native=run_if)


# ---------------------------------------------------------------------- while_loop


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None,
               checkpoint_every=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`.

    `loop_vars` is a (nested) list, tuple or namedtuple of tensors (a single tensor or a
    dict is passed as one argument); `body` returns the same structure. At most
    `maximum_iterations` iterations run. Eagerly this is a Python loop. While tracing it is
    one "While" node: the loop variables keep their shapes and dtypes across iterations,
    unless `shape_invariants` (the same structure of shapes, None for a dimension that
    may vary) allows more. The gradient (tapeflow extension: `checkpoint_every`, the
    iterations between stored loop states; when None, all of them if every iteration's
    saved tensors fit in `control.STORE_ALL_BYTES`, 32 MiB, else about sqrt(n)) keeps
    O(sqrt(n)) loop states instead of n.

    Example:
        >>> i, total = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
        ...                          (tf.constant(0), tf.constant(0)))
        >>> int(total)
        10
    """
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if loop_vars is None or (isinstance(loop_vars, (list, tuple, dict)) and not loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    if checkpoint_every is not None and (not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"while_loop: checkpoint_every must be a positive int, got "
                         f"{checkpoint_every!r}")
    spread = isinstance(loop_vars, (list, tuple))
    structure = _read_variables(loop_vars)
    names = _leaf_names(structure)

    def call(fn, flat):
        packed = nest.pack_sequence_as(structure, list(flat))
        return fn(*packed) if spread else fn(packed)

    def next_vars(flat, where):
        out = call(body, flat)
        if spread and len(structure) == 1 and not nest.is_nested(out):
            out = [out]  # a one-variable loop whose body returns the bare value
        out = _read_variables(out)
        if _tree(out) != _tree(structure) or len(nest.flatten(out)) != len(flat):
            raise ValueError(f"while_loop: body must return the structure of loop_vars "
                             f"{_describe_structure(structure)}, got "
                             f"{_describe_structure(out)} {where}")
        return nest.flatten(out)

    if maximum_iterations is not None:
        if isinstance(maximum_iterations, Variable):
            maximum_iterations = maximum_iterations.read_value()
        maximum_iterations = convert_to_tensor(maximum_iterations) if not isinstance(
            maximum_iterations, Tensor) else maximum_iterations
        if maximum_iterations._shape != ():
            raise ValueError("'maximum_iterations' must be a scalar. Received shape: "
                             f"{list(maximum_iterations._shape)}")
        if not maximum_iterations.dtype.is_integer:
            raise TypeError(f"'maximum_iterations' must be an integer, got "
                            f"{describe(maximum_iterations)}")
    if ctx.graph is None:  # eagerly: a Python loop; tapes and accumulators see each op
        flat = nest.flatten(structure)
        limit = None if maximum_iterations is None else int(maximum_iterations)
        n = 0
        while (limit is None or n < limit) and bool(call(cond, flat)):
            flat = next_vars(flat, f"after {n + 1} iteration(s)")
            n += 1
        result = nest.pack_sequence_as(structure, flat)
        return _stop(result) if not back_prop else result
    structure = shape_loop_arrays(structure, lambda s: body(*s) if spread else body(s))
    flat0 = [v if isinstance(v, Tensor) else convert_to_tensor(v)
             for v in nest.flatten(structure)]
    invariants = _invariants(shape_invariants, structure, flat0, names)
    specs = [TensorSpec(s, t.dtype) for s, t in zip(invariants, flat0)]
    label = name or "while"

    def convert(i, v):  # Python numbers returned by body take their loop variable's dtype
        if v is not None and not isinstance(v, (Tensor, Variable)):
            return convert_to_tensor(v, dtype=specs[i].dtype)
        return v

    cond_sub = _Sub(lambda *phs: call(cond, phs), specs, f"{label}_cond")
    body_sub = _Sub(lambda *phs: next_vars(phs, "in the traced body"), specs,
                    f"{label}_body", convert=convert)
    _check_cond(cond_sub)
    _check_body(body_sub, specs, names)
    outs = _while_node(cond_sub, body_sub, flat0,
                       [] if maximum_iterations is None else [maximum_iterations],
                       checkpoint_every).outs
    result = nest.pack_sequence_as(structure, outs[:len(flat0)])
    return _stop(result) if not back_prop else result


def _stop(structure):
    return nest.map_structure(
        lambda t: array_ops.stop_gradient(t) if isinstance(t, Tensor) else t, structure)


def _read_variables(structure):
    if isinstance(structure, Variable):
        return structure.read_value()
    if nest.is_nested(structure):
        return nest.map_structure(
            lambda v: v.read_value() if isinstance(v, Variable) else v, structure)
    return structure


def _leaf_names(structure, root: str = "loop_vars") -> list[str]:
    """`loop_vars[1]['h']`-style names of the leaves of `structure`, for error messages."""
    names = []

    def walk(s, path):
        if isinstance(s, dict):
            for k in sorted(s, key=repr):
                walk(s[k], f"{path}[{k!r}]")
        elif isinstance(s, (list, tuple)):
            for i, v in enumerate(s):
                walk(v, f"{path}[{i}]")
        else:
            names.append(path)
    walk(structure, root)
    return names


def _describe_structure(s) -> str:
    if isinstance(s, dict):
        return "{" + ", ".join(f"{k!r}: {_describe_structure(v)}" for k, v in s.items()) + "}"
    if isinstance(s, (list, tuple)):
        inner = ", ".join(_describe_structure(v) for v in s)
        return f"[{inner}]" if isinstance(s, list) else f"({inner}{',' if len(s) == 1 else ''})"
    if isinstance(s, Tensor):
        return f"{s.dtype.name}{list(s._shape)}"
    return type(s).__name__


def _invariants(shape_invariants, structure, flat0, names) -> list[tuple]:
    """The loop variables' shapes inside the loop: their own, or the invariants given (the
    structure of loop_vars with a shape at each leaf), which must cover them."""
    if shape_invariants is None:
        return [t._shape for t in flat0]
    if isinstance(structure, (list, tuple)) and len(structure) == 1 and _is_shape(
            shape_invariants) and not _is_shape(structure[0]):
        shape_invariants = [shape_invariants]  # one loop variable, one shape
    flat = _match_shapes(structure, shape_invariants)
    out = []
    for s, t, nm in zip(flat, flat0, names):
        s = TensorShape(s.shape if isinstance(s, TensorSpec) else s)
        if not _less_or_equal(t._shape, s):
            raise ValueError(
                f"The shape invariant specified for {nm} is not compatible with the initial "
                f"shape of the loop variable. It enters the loop with shape "
                f"{list(t._shape)}, but the specified shape invariant is {list(s)}.")
        out.append(tuple(s))
    return out


def _is_shape(s) -> bool:
    return isinstance(s, (TensorShape, TensorSpec)) or (
        isinstance(s, (list, tuple)) and all(d is None or isinstance(d, int) for d in s))


def _match_shapes(structure, shapes) -> list:
    """The shapes at the leaves of `structure`, walking `shapes` alongside it."""
    def fail():
        raise ValueError(f"while_loop: shape_invariants {shapes!r:.120} must have the "
                         f"structure of loop_vars {_describe_structure(structure)}")
    out = []

    def walk(s, sh):
        if isinstance(s, dict):
            if not isinstance(sh, dict) or set(sh) != set(s):
                fail()
            for k in sorted(s, key=repr):
                walk(s[k], sh[k])
        elif isinstance(s, (list, tuple)):
            if not isinstance(sh, (list, tuple)) or len(sh) != len(s):
                fail()
            for v, w in zip(s, sh):
                walk(v, w)
        elif not _is_shape(sh):
            fail()
        else:
            out.append(sh)
    walk(structure, shapes)
    return out


def _less_or_equal(shape, invariant) -> bool:
    """Whether every tensor of `shape` also has shape `invariant` (None matches all)."""
    return len(shape) == len(invariant) and all(
        b is None or a == b for a, b in zip(shape, invariant))


def _check_cond(sub: _Sub) -> None:
    if len(sub.flat) != 1 or sub.flat[0] is None:
        raise TypeError(f"while_loop: cond must return one boolean scalar, got "
                        f"{sub.result!r:.100}")
    p = sub.flat[0]
    if p._shape not in ((), (1,)) or p.dtype is not _bool:
        raise TypeError(f"while_loop: cond must return a boolean scalar, got {describe(p)}")


def _check_body(sub: _Sub, specs, names) -> None:
    for out, spec, nm in zip(sub.flat, specs, names):
        if out.dtype is not spec.dtype:
            raise TypeError(f"Loop variable {nm} enters the loop with type {spec.dtype.name} "
                            f"but has type {out.dtype.name} after one iteration.")
        if not _less_or_equal(out._shape, tuple(spec.shape)):
            raise ValueError(
                f"Loop variable {nm} enters the loop with shape {list(spec.shape)}, but has "
                f"shape {list(out._shape)} after one iteration. To allow the shape to vary "
                "across iterations, use the `shape_invariants` argument of tf.while_loop to "
                "specify a less-specific shape.")


class _Loop:
    """A While node just built: its outputs and what building its WhileGrad needs."""

    def __init__(self, outs, body_cf, init, outside, variables):
        self.outs, self.body_cf = outs, body_cf
        self.init, self.outside, self.variables = init, outside, variables


def _while_node(cond_sub, body_sub, flat0, limit: list, k) -> _Loop:
    """Build the While node for traced cond/body sub-functions (cond_sub None: run exactly
    `limit` iterations)."""
    subs = [body_sub] if cond_sub is None else [cond_sub, body_sub]
    outside, variables, cfs = _seal(subs)
    cond_cf, body_cf = (None, cfs[0]) if cond_sub is None else cfs
    stateful = any(s.stateful for s in subs)  # the loop assigns or prints
    if not stateful:
        hoisted = _hoist_products(body_cf, len(flat0), outside)
        if hoisted is not None:
            body_cf, extra = hoisted
            if cond_cf is not None:
                cond_cf = _with_inputs(cond_cf, extra)
            outside = list(outside) + extra
            # variables now read before the loop only are no resources of it (its
            # gradient would give them zeros)
            used = {id(v) for cf in (body_cf, cond_cf) if cf is not None
                    for n in cf.graph.nodes for value in n.inputs.values()
                    for v in (value if isinstance(value, (list, tuple)) else [value])
                    if isinstance(v, Variable)}
            variables = [v for v in variables if id(v) in used]
    specs = [(tuple(p._shape), p.dtype) for p in body_sub.params]
    attrs = {"cond": cond_cf, "body": body_cf, "specs": tuple(specs), "k": k,
             "stateful": stateful, "saves": SaveForGradient()}
    outs = run_kernel("While", {"loop_vars": list(flat0), "args": list(outside),
                                "resources": list(variables),
                                "maximum_iterations": list(limit)}, attrs)
    return _Loop(outs, body_cf, list(flat0), outside, variables)


# ---------------------------------------------------------------------- hoisting


def _invariant_ids(graph, n_vars: int) -> set:
    """Ids of the tensors of a loop body `graph` (whose loop has no effects) that are the
    same in every iteration: its arguments (inputs after the `n_vars` loop variables),
    constants, variable reads, and pure nodes of those only."""
    inv = {t.id for t in graph.inputs[n_vars:]}
    for node in graph.nodes:
        if node.op == "Placeholder" or (node.stateful and node.op != "ReadVariableOp"):
            continue
        if _dims_in(node.attrs):  # (run-time sizes: maybe of loop variables)
            continue
        if all(t.id in inv for t in _tensor_inputs(node)):
            inv.update(o.id for o in node.outputs)
    return inv


def _tensor_inputs(node) -> list:
    out = []
    for v in node.inputs.values():
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(t, Tensor):
                out.append(t)
    return out


# The largest product (bytes) hoisted out of a loop. Hoisting saves each iteration a small
# product's call; each iteration then reads (and its gradient writes) a row of the product
# instead of a row of P, which costs more when the product is wider than P and no longer
# stays in cache (2 cores, OpenBLAS, float32: a [24, 64, 32] sequence by a [32, 64]
# weight, 0.4 MB, an RNN step loop 12% faster; [64, 64, 32] by [32, 256], 4 MB, an LSTM's
# 20% slower). Shapes alone decide.
HOIST_BYTES = 1 << 20


def _row_product(node, args: dict, inv: set):
    """(gather node, the argument's outside tensor) when MatMul `node` is
    `gather(P, indices, axis) @ W` with P a loop argument gathered along an axis other
    than its last (the one the product contracts), W a loop-invariant matrix; else None."""
    if node.op != "MatMul" or node.attrs.get("adjoint_a"):
        return None
    a, w = node.inputs["a"], node.inputs["b"]
    g = getattr(a._native, "node", None)
    if (g is None or g.op != "GatherV2" or g.attrs["batch_dims"] or len(w._shape) != 2
            or w.id not in inv or not a.dtype.is_floating):
        return None
    params = g.inputs["params"]
    outer = args.get(params.id)
    rank = len(params._shape)
    if outer is None or not 0 <= g.attrs["axis"] < rank - 1 or params._shape[-1] is None:
        return None
    n = w._shape[0] if node.attrs.get("adjoint_b") else w._shape[1]
    if n is None or None in params._shape or (
            math.prod(params._shape[:-1]) * n * a.dtype.size > HOIST_BYTES):
        return None
    return g, outer


def _replay(graph, wanted: list, env: dict) -> list:
    """The tensors `wanted` of `graph` made again in the graph being traced, from `env`
    (graph tensor id -> tensor there): their nodes re-run as ops."""
    def run(node, ins):
        if node.op == "Const":
            return creation_ops.constant(node.attrs["value"], dtype=node.attrs["dtype"])
        return run_kernel(node.op, ins, dict(node.attrs))

    eval_graph(graph, env, run, _needed(graph, wanted, env, {}))
    return [env[t.id] for t in wanted]


def _hoist_products(body_cf, n_vars: int, outside: list):
    """Loop-invariant work out of a loop body (whose loop has no effects):

    - what the body computes from its arguments, constants and variable reads alone (a
      weight's slice, a cast, a read) is computed once before the loop and passed in as
      an argument (its gradient then sums over the iterations as an argument's does);
    - `gather(P, t) @ W` with P and W the same in every iteration becomes, before the
      loop, one product Q = P @ W over all of P's rows (one large GEMM instead of a small
      one per iteration), the body reading gather(Q, t). Its gradient then follows: the
      body's gradient for Q is added into dQ's rows (WhileGrad's sparse sums), and P's
      and W's gradients are two GEMMs after the loop instead of two small products per
      iteration. Rows of P the loop never reads are multiplied too: loops over a
      sequence read them all (and HOIST_BYTES bounds the product). The product sums in
      another order than the per-row one (results equal to rounding).

    Returns (the new body, taking the extra arguments after its own; those arguments)
    or None."""
    graph = body_cf.graph
    args = {t.id: outside[i] for i, t in enumerate(graph.inputs[n_vars:])}
    inv = _invariant_ids(graph, n_vars)
    found = [(node, hit) for node in graph.nodes
             for hit in [_row_product(node, args, inv)] if hit is not None]
    products_at = {id(node) for node, _ in found}
    frontier = _frontier(graph, body_cf._flat_outputs, inv, args, products_at)
    if not found and not frontier:
        return None
    env = {t.id: outside[i] for i, t in enumerate(graph.inputs[n_vars:])}
    weights = _replay(graph, [node.inputs["b"] for node, _ in found] + frontier, env)
    extra = weights[len(found):]
    products, axes = [], []
    for (node, (gather, p)), w in zip(found, weights):
        f, axis = p._shape[-1], gather.attrs["axis"]
        if axis and not gather.inputs["indices"]._shape:
            # one row per iteration along an inner axis (a batch-major sequence): that
            # axis first, so each iteration reads (and its gradient writes) one
            # contiguous block; the transpose copies P, narrower than Q
            perm = [axis] + [i for i in range(len(p._shape)) if i != axis]
            p, axis = array_ops.transpose(p, perm), 0
        axes.append(axis)
        rows = array_ops.reshape(p, [-1, f])
        q = run_kernel("MatMul", {"a": rows, "b": w}, dict(node.attrs))
        # (run-time sizes where P's are unknown)
        products.append(array_ops.reshape(q, tuple(dims_of(p)[:-1]) + (q._shape[-1],)))
    new, env = start_rebuild(graph)
    slots = [new.placeholder(q._shape, q.dtype, "hoisted") for q in products + extra]
    for t, slot in zip(frontier, slots[len(products):]):
        env[t.id] = slot
    replaced = {id(node): (gather, slot, axis)
                for (node, (gather, _)), slot, axis in zip(found, slots, axes)}

    def apply(node, ins):
        hit = replaced.get(id(node))
        if hit is None:
            return copy_node(new, node, ins, env)
        gather, slot, axis = hit
        return new.add_op("GatherV2", {"params": slot,
                                       "indices": env[gather.inputs["indices"].id]},
                          {**gather.attrs, "axis": axis}, name=node.name + "_hoisted",
                          site=node.site)

    # only the nodes the outputs still need (a variable read has effects: the pruning of
    # the sealed graph would keep one whose value went out of the loop); a replaced
    # product's operands may then be made by no node
    for node, _ in found:
        for t in _tensor_inputs(node):
            env.setdefault(t.id, None)
    env = eval_graph(graph, env, apply,
                     _needed(graph, body_cf._flat_outputs, {t.id for t in frontier},
                             replaced))
    outs = [env[t.id] for t in body_cf._flat_outputs]
    new.variables = dict(graph.variables)
    new.seal(outs, captures=[], prune=True)
    specs = tuple(TensorSpec(t._shape, t.dtype) for t in new.inputs)
    cf = ConcreteFunction(new, (specs, {}), outs, len(new.inputs), body_cf.name)
    cf.jit_compile = body_cf.jit_compile
    return cf, products + extra


def _frontier(graph, outputs: list, inv: set, args: dict, skip: set) -> list:
    """The loop-invariant tensors of a body `graph` that loop-dependent nodes (not those in
    `skip`) or the body's `outputs` read, other than its arguments and constants: what is
    worth computing once before the loop."""
    found, seen = [], set()

    def take(t):
        if t.id in inv and t.id not in args and t.id not in seen:
            node = getattr(t._native, "node", None)
            if node is not None and node.op not in ("Const", "Placeholder"):
                seen.add(t.id)
                found.append(t)

    for node in graph.nodes:
        if node.op == "Placeholder" or id(node) in skip or all(
                o.id in inv for o in node.outputs):
            continue
        for t in _tensor_inputs(node):
            take(t)
    for t in outputs:
        if isinstance(t, Tensor):
            take(t)
    return found


def _needed(graph, outputs: list, given, replaced: dict) -> list:
    """The nodes of `graph` (in order) that `outputs` need, the tensors whose ids are in
    `given` coming from elsewhere and a node in `replaced` reading only its gather's
    indices."""
    need, stack = set(), [t for t in outputs if isinstance(t, Tensor)]
    while stack:
        t = stack.pop()
        node = getattr(t._native, "node", None)
        if t.id in given or node is None or id(node) in need:
            continue
        need.add(id(node))
        hit = replaced.get(id(node))
        if hit is not None:
            stack.append(hit[0].inputs["indices"])
        else:
            stack.extend(_tensor_inputs(node))
            stack.extend(d.tensor for d in _dims_in(node.attrs))
    return [n for n in graph.nodes if id(n) in need]


def _with_inputs(cf, extra: list):
    """`cf` taking (and ignoring) more arguments shaped as `extra`, after its own."""
    new, env = start_rebuild(cf.graph)
    for t in extra:
        new.placeholder(t._shape, t.dtype, "unused")
    env = eval_graph(cf.graph, env, lambda node, ins: copy_node(new, node, ins, env))
    outs = [env[t.id] for t in cf._flat_outputs]
    new.variables = dict(cf.graph.variables)
    new.seal(outs, captures=[], prune=True)
    specs = tuple(TensorSpec(t._shape, t.dtype) for t in new.inputs)
    out = ConcreteFunction(new, (specs, {}), outs, len(new.inputs), cf.name)
    out.jit_compile = cf.jit_compile
    return out


def _while_shape(shapes, dtypes, attrs):
    return list(attrs["specs"]) + [((), _int32)]


class _LoopGrad:
    """What WhileGrad's kernel needs of a loop body, built once per body: the body, its
    forward variant (returning the tensors its backward function reads), the backward
    function, and how the backward function's results map to loop variables, arguments
    and variables."""

    def __init__(self, body_cf, n_vars: int, resources: list):
        self.source = body_cf  # (the forward-mode loops of its derivatives run this)
        # loop variables the body writes rows into run without the writes (the loop
        # runtime makes them in place: control.RowWrites)
        self.rows = row_writes(body_cf, n_vars)
        inner = body_cf if self.rows is None else self.rows.body
        self.body = _without_prints(inner)  # the gradient's reruns print nothing
        # (then the forward loop cannot run the variant in the body's place)
        self.quiet = self.body is not inner
        self.backward, self.slots, saved = backward_function(inner)
        variant = inner._forward_variant()
        position = {t.id: i for i, t in enumerate(variant._flat_outputs)}
        self.variant = _without_prints(variant)  # (a rebuild: same outputs, new tensors)
        self.saved_positions = [position[t.id] for t in saved]
        # what the loops can know once: the loop variables' shapes and the bytes an
        # iteration keeps for the gradient, when the graph knows them (else None)
        shapes = [tuple(t._shape) for t in body_cf.graph.inputs[:n_vars]]
        self.var_shapes = None if any(None in s for s in shapes) else shapes
        self.saved_bytes = None if any(None in t._shape for t in saved) else sum(
            math.prod(t._shape) * t.dtype.size for t in saved)
        ins = body_cf.graph.inputs
        self.n_vars, self.n_args = n_vars, len(ins) - n_vars
        self.var_trainable = [t.dtype.is_trainable for t in ins[:n_vars]]
        self.arg_trainable = [t.dtype.is_trainable for t in ins[n_vars:]]
        self.var_dtypes = [t.dtype for t in ins[:n_vars]]
        self.arg_dtypes = [t.dtype for t in ins[n_vars:]]
        trainable_res = [v for v in resources if v.dtype.is_trainable]
        self.n_resources = len(trainable_res)
        self.resource_specs = [(tuple(v._shape), v.dtype) for v in trainable_res]
        # the backward pass re-runs iterations: state changes would happen twice (prints
        # are left out of the rerun; a py_function's Python code runs again)
        self._sparse: dict = {}
        self.state_change = next((f"{n.op} (node {n.name})" for n in body_cf.graph.nodes
                                  if n.stateful and n.op not in _RERUNNABLE), None)
        body_vars = list(body_cf.graph.variables.values())
        self.resource_of_slot = {}
        for slot in self.slots:
            if slot >= len(ins):
                var = body_vars[slot - len(ins)]
                self.resource_of_slot[slot] = next(
                    i for i, v in enumerate(trainable_res) if v is var)

    def __repr__(self) -> str:
        return f"<gradient of {self.body.name}: {len(self.saved_positions)} saved per step>"

    def sparse_backward(self, deferred: bool = False):
        """(backward function, forms, bytes kept per iteration): the backward function
        returning, for an argument's gradient that is a segment sum (a gather's gradient) or a slice scatter (a
        slice's), the parts it is made of instead of the dense tensor; `forms` has per
        gradient slot None (dense) or (kernel adding the parts into a total, its input
        names, its attributes). The loop's WhileGrad adds each iteration's parts into the
        argument's total in place: reading row t of a loop-invariant [T, ...] input then
        costs O(row) per iteration instead of a dense [T, ...] temporary.

        With `deferred` (a WhileGrad keeping every iteration), also the operands of an
        argument's or variable's gradient that is a product of two matrices or a sum
        over the first axis, forms ("product" / "rowsum", ...): WhileGrad keeps them and
        makes the sum over iterations after the loop as one product (one sum) of the
        operands concatenated along the contracted axis, instead of a small product and
        an addition per iteration."""
        key = bool(deferred)
        if key not in self._sparse:
            self._sparse[key] = _sparse_backward(self.backward, self.slots, self.n_vars,
                                                 self.n_args, key)
        return self._sparse[key]

    def backward_captures(self, backend) -> list:
        return natives_of([ext for ext, _ in self.backward.graph.captures], backend)

_RERUNNABLE = ("ReadVariableOp", "PrintV2", "EagerPyFunc")


def _sparse_form(t: Tensor, deferred: bool, readers: set):
    """(kernel, input names, attrs, parts) adding the gradient `t` into a total of its
    shape without building it, when `t` is a segment sum along an axis or a slice
    scatter; with `deferred`, ("product" / "rowsum", names, attrs, operands) when it is a
    product of two matrices or a sum over axis 0 nothing else reads (ids in `readers`);
    else None."""
    node = getattr(t._native, "node", None)
    if node is None or node.outputs[0] is not t:
        return None
    if node.op == "UnsortedSegmentSum" and not node.attrs["batch_dims"]:
        return ("InplaceSegmentSum", ("data", "segment_ids"), {"axis": node.attrs["axis"]},
                [node.inputs["data"], node.inputs["segment_ids"]])
    if node.op == "StridedSliceGrad":
        attrs = {k: v for k, v in node.attrs.items() if k != "shape"}
        return ("InplaceStridedSliceAdd", ("dy",), attrs, [node.inputs["dy"]])
    if not deferred or t.id in readers or not t.dtype.is_floating:
        return None
    if node.op == "MatMul":
        a, b = node.inputs["a"], node.inputs["b"]
        if len(a._shape) == 2 and len(b._shape) == 2:
            return ("product", ("a", "b"), {"adjoint_a": bool(node.attrs["adjoint_a"]),
                                            "adjoint_b": bool(node.attrs["adjoint_b"])},
                    [a, b])
    if node.op == "Sum" and not node.attrs["keepdims"] and tuple(
            node.attrs["axis"] if isinstance(node.attrs["axis"], (list, tuple))
            else (node.attrs["axis"],)) == (0,):
        return ("rowsum", ("x",), {}, [node.inputs["x"]])
    return None


_DEFERRED = ("product", "rowsum")


def _sparse_backward(backward, slots: list, n_vars: int, n_args: int, deferred: bool):
    """See _LoopGrad.sparse_backward: `backward` with the parts of its sparse argument
    gradients (and, `deferred`, of its deferred sums) as outputs, the forms (None where
    nothing is sparse) and the bytes of the deferred operands one iteration keeps."""
    readers = {t.id for n in backward.graph.nodes for t in _tensor_inputs(n)}
    outs, forms, kept = [], [], {}
    for slot, t in zip(slots, backward._flat_outputs):
        form = None
        if slot >= n_vars:  # (a sum over iterations: an argument's or a variable's)
            form = _sparse_form(t, deferred, readers)
            if form is not None and form[0] not in _DEFERRED and slot >= n_vars + n_args:
                form = None  # (in-place row sums are made for arguments only)
        if form is not None and form[0] in _DEFERRED:
            if any(None in p._shape for p in form[3]):
                form = None  # (what keeping them costs must be known)
            else:
                kept.update((p.id, math.prod(p._shape) * p.dtype.size) for p in form[3])
        if form is None:
            outs.append(t)
            forms.append(None)
        else:
            outs.extend(form[3])
            forms.append(form[:3])
    if all(f is None for f in forms):
        return backward, None, 0
    cf = ConcreteFunction(backward.graph, backward.structured_input_signature, outs,
                          backward._n_args, backward.name + "_sparse")
    cf.jit_compile = backward.jit_compile
    return cf, forms, sum(kept.values())


def _without_prints(cf):
    """`cf` without its print nodes (they have no outputs), for recomputed iterations."""
    if not any(n.op == "PrintV2" for n in cf.graph.nodes):
        return cf
    new, env = start_rebuild(cf.graph)
    env = eval_graph(cf.graph, env, lambda node, ins: copy_node(new, node, ins, env),
                     [n for n in cf.graph.nodes if n.op != "PrintV2"])
    outs = finish_rebuild(cf.graph, new, env, list(cf._flat_outputs), "dropping prints")
    return ConcreteFunction(new, cf.structured_input_signature, outs, cf._n_args,
                            cf.name + "_quiet")


def _loop_grad(body_cf, n_vars, resources) -> _LoopGrad:
    return body_cf.derived("loop_grad", lambda: _LoopGrad(body_cf, n_vars, resources))


def _while_vjp(g, ans, loop_vars, args, resources, *, body, k, saves=None, **_):
    """A WhileGrad node: the loop run backwards from the final cotangents (None ones are
    zeros), over the initial loop variables, arguments and the iteration count. From now
    on the While keeps what its gradient reads when that is small (see control.py)."""
    n_vars = len(loop_vars)
    grad = _loop_grad(body, n_vars, resources)
    if saves is not None and not k:
        saves.grad = grad
    cots = [c if c is not None else _zeros_like(o)
            for c, o, tr in zip(g[:n_vars], ans[:n_vars], grad.var_trainable) if tr]
    outs = run_kernel("WhileGrad", {"cots": cots, "loop_vars": list(loop_vars),
                                    "args": list(args), "resources": list(resources),
                                    "count": ans[n_vars]}, {"grad": grad, "k": k})
    outs = outs if isinstance(outs, list) else [outs]
    return _split_grads(outs, grad, resources)


def _split_grads(outs, grad, resources) -> dict:
    """WhileGrad's flat outputs (gradients of the trainable inputs) by While input."""
    it = iter(outs)
    return {"loop_vars": [next(it) if tr else None for tr in grad.var_trainable],
            "args": [next(it) if tr else None for tr in grad.arg_trainable],
            "resources": [next(it) if v.dtype.is_trainable else None for v in resources],
            "maximum_iterations": None}


def _jvp_loop(body_cf, x0, t0, args, t_args, resources, t_res, limit, k,
              cond_cf=None, batch=_UNBATCHED) -> tuple[list, _Loop]:
    """Run the loop and its tangents together: loop variables (x, t) with t for every
    trainable x (t0: None where a variable starts without one); the body's arguments and
    the given tangents of arguments and variables are captured. Returns (final tangents,
    None for non-trainable variables; the doubled loop); `cond_cf` None runs exactly
    `limit` iterations; batched tangents carry `batch` members."""
    n_vars = len(x0)
    trainable = [x.dtype.is_trainable for x in x0]
    t_init = [t if t is not None else _tangent_zeros(x, batch)
              for x, t, tr in zip(x0, t0, trainable) if tr]
    var_on = [v for v, t in zip(resources, t_res) if t is not None]
    jvp_cf = _jvp_function(body_cf, trainable + [t is not None for t in t_args], var_on,
                           body_cf.name + "_jvp", batch)
    n_t = len(t_init)
    ins = body_cf.graph.inputs[:n_vars]
    specs = ([TensorSpec(t._shape, t.dtype) for t in ins]
             + [_batched(TensorSpec(t._shape, t.dtype), batch)
                for t, tr in zip(ins, trainable) if tr])
    tangent_args = [t for t in t_args if t is not None] + [t for t in t_res if t is not None]

    def aug_body(*params):
        xs, ts = list(params[:n_vars]), list(params[n_vars:])
        outs = jvp_cf._call_flat(xs + list(args) + ts + tangent_args)
        return outs[:n_vars] + outs[n_vars:n_vars + n_t]

    def aug_cond(*params):
        return cond_cf._call_flat(list(params[:n_vars]) + list(args))[0]

    body_sub = _Sub(aug_body, specs, body_cf.name + "_jvp_loop")
    cond_sub = None if cond_cf is None else _Sub(aug_cond, specs, body_cf.name + "_jvp_cond")
    loop = _while_node(cond_sub, body_sub, list(x0) + t_init, limit, k)
    it = iter(loop.outs[n_vars:n_vars + n_t])
    return [next(it) if tr else None for tr in trainable], loop


def _while_jvp(tangents, ans, loop_vars, args, resources, maximum_iterations, *, cond, body,
               k, **_):
    t_x, t_a = tangents["loop_vars"], tangents["args"]
    t_r = tangents["resources"] or [None] * len(resources)
    if all(t is None for t in list(t_x) + list(t_a) + list(t_r)):
        return None
    batch = _batch_size(list(loop_vars) + list(args) + list(resources),
                        list(t_x) + list(t_a) + list(t_r))
    tans, _ = _jvp_loop(body, loop_vars, t_x, args, t_a, resources, t_r,
                        list(maximum_iterations), k, cond_cf=cond, batch=batch)
    return list(tans) + [None]


define_op("While", ["loop_vars", "args", "resources", "maximum_iterations"],
          list_inputs=("loop_vars", "args", "resources", "maximum_iterations"),
          num_outputs=None, shape=_while_shape, vjp=_while_vjp, jvp=_while_jvp,
          native=run_while)


def _while_grad_shape(shapes, dtypes, attrs):
    out = [(s, d) for s, d in zip(shapes["loop_vars"], dtypes["loop_vars"]) if d.is_trainable]
    out += [(s, d) for s, d in zip(shapes["args"], dtypes["args"]) if d.is_trainable]
    out += [(s, d) for s, d in zip(shapes["resources"], dtypes["resources"]) if d.is_trainable]
    return out


def _curvature(grad, cots, loop_vars, args, resources, count, k, u_x, u_a, u_r):
    """For WhileGrad(c) = J^T c (J: the loop's Jacobian at state s = initial variables,
    arguments and variables) and a direction u of s: (J u, H_c u) where H_c is the Hessian
    of <c, loop(s)>. J u is the final tangent of the loop run in forward mode from u; H_c u
    = d/ds <c, J(s) u> is the VJP of that doubled loop (a WhileGrad of it) with cotangent c
    on its tangent part and 0 on its state. H_c u comes as gradients for (loop_vars, args,
    resources), None where nothing flows."""
    tans, loop = _jvp_loop(grad.source, loop_vars, u_x, args, u_a, resources, u_r, [count], k)
    n_vars = len(loop_vars)
    finals = loop.outs[:n_vars]
    aug_cots = [_zeros_like(f) for f, tr in zip(finals, grad.var_trainable) if tr] + list(cots)
    inner = _loop_grad(loop.body_cf, len(loop.init), loop.variables)
    outs = run_kernel("WhileGrad", {"cots": aug_cots, "loop_vars": loop.init,
                                    "args": list(loop.outside), "resources": loop.variables,
                                    "count": count}, {"grad": inner, "k": k})
    split = _split_grads(outs if isinstance(outs, list) else [outs], inner, loop.variables)
    return tans, (split["loop_vars"][:n_vars], _regroup(split["args"], loop.outside, args),
                  _regroup(split["resources"], loop.variables, resources))


def _while_grad_vjp(g, cots, loop_vars, args, resources, count, *, grad, k):
    """With output cotangents u: the gradient for the cotangents is J u, for the state
    H_c u (see `_curvature`)."""
    u = iter(g)
    u_x = [next(u) if tr else None for tr in grad.var_trainable]
    u_a = [next(u) if tr else None for tr in grad.arg_trainable]
    u_r = [next(u) if v.dtype.is_trainable else None for v in resources]
    tans, (gx, ga, gr) = _curvature(grad, cots, loop_vars, args, resources, count, k,
                                    u_x, u_a, u_r)
    return {"cots": [t for t, tr in zip(tans, grad.var_trainable) if tr], "count": None,
            "loop_vars": gx, "args": ga, "resources": gr}


def _while_grad_jvp(tangents, cots, loop_vars, args, resources, count, *, grad, k):
    """WhileGrad is linear in its cotangents: their tangents pass through another
    WhileGrad; a tangent v of the state adds H_c v (see `_curvature`). Batched tangents
    are taken one member at a time."""
    t_c = tangents["cots"]
    t_x, t_a = tangents["loop_vars"], tangents["args"]
    t_r = tangents["resources"] or [None] * len(resources)
    inputs = list(cots) + list(loop_vars) + list(args) + list(resources)
    flat = list(t_c) + list(t_x) + list(t_a) + list(t_r)
    batch = _batch_size(inputs, flat)
    if batch is not _UNBATCHED:
        if batch is None:
            raise InvalidArgumentError("WhileGrad: batched tangents need a known batch size")
        members = [array_ops.unstack(t, num=batch) if t is not None else [None] * batch
                   for t in flat]
        sizes = [len(t_c), len(t_x), len(t_a), len(t_r)]
        per = []
        for b in range(batch):
            one = [m[b] for m in members]
            parts, pos = [], 0
            for n in sizes:
                parts.append(one[pos:pos + n])
                pos += n
            per.append(_while_grad_jvp(
                {"cots": parts[0], "loop_vars": parts[1], "args": parts[2],
                 "resources": parts[3], "count": None},
                cots, loop_vars, args, resources, count, grad=grad, k=k))
        if all(p is None for p in per):
            return None
        n_out = len(next(p for p in per if p is not None))
        return [array_ops.stack([p[j] if p is not None else None for p in per])
                if all(p is not None for p in per) else None for j in range(n_out)]
    total = None
    if any(t is not None for t in t_c):
        outs = run_kernel("WhileGrad", {
            "cots": [t if t is not None else _zeros_like(c) for t, c in zip(t_c, cots)],
            "loop_vars": list(loop_vars), "args": list(args), "resources": list(resources),
            "count": count}, {"grad": grad, "k": k})
        total = outs if isinstance(outs, list) else [outs]
    if any(t is not None for t in list(t_x) + list(t_a) + list(t_r)):
        _, (gx, ga, gr) = _curvature(grad, cots, loop_vars, args, resources, count, k,
                                     t_x, t_a, t_r)
        inputs = list(loop_vars) + list(args) + list(resources)
        part = [g if g is not None else _zeros_like(x)
                for g, x in zip(gx + ga + gr, inputs) if x.dtype.is_trainable]
        total = part if total is None else [a + b for a, b in zip(total, part)]
    return total


def _regroup(grads: list, found: list, wanted: list) -> list:
    """Gradients for `wanted` (by identity) from gradients for `found`."""
    out = [None] * len(wanted)
    for g, f in zip(grads, found):
        if g is None:
            continue
        for i, w in enumerate(wanted):
            if w is f:
                out[i] = g if out[i] is None else out[i] + g
    return out


define_op("WhileGrad", ["cots", "loop_vars", "args", "resources", "count"],
          list_inputs=("cots", "loop_vars", "args", "resources"), num_outputs=None,
          shape=_while_grad_shape, vjp=_while_grad_vjp, jvp=_while_grad_jvp,
          native=run_while_grad)
# fuse.py declares FusedElementwise (it imports nothing of control flow); how a fused
# node runs is the same for every backend, defined with the other higher-order ops
_reg.OPS["FusedElementwise"].native = run_fused
