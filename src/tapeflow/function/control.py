"""How the higher-order ops run: If, While, WhileGrad and FusedElementwise, defined once
here for every backend (as JAX defines cond_p and while_p once), the backends holding
array kernels only.

Where they run: an op declared with `define_op(..., native=f)` is executed by the
executor through `f(inputs, attrs, backend)` on any backend, instead of a kernel looked
up per backend (function/executor.py). These ops are made only in traced graphs (eager
`cond` and `while_loop` are Python control flow); the rare eager run of one node (a
graph slice evaluated for a variable's initial value, the op-table tests) finds the same
function, `run_kernel` falling back to an op's `native` where a backend has no kernel of
its own (_core/dispatch.py). Their graph-side definitions (shape rules, VJPs, JVPs) are
in control_flow.py and fuse.py.

What they do: the branch, body and loop-gradient functions (ConcreteFunctions in `attrs`)
are compiled with `ConcreteFunction.compile`, so a loop body is optimized and fused like
any graph and one iteration costs one call of its generated program. The few array
operations the algorithms need besides (zeros, a zero-cost stand-in, running sums) are the
active backend's own kernels from the kernel registry (Zeros, BroadcastTo, Add,
InplaceAdd), and reading a predicate or a count to Python is `bool`/`int` of a 0-d array,
which every array library supports.
"""
from __future__ import annotations

import math
import weakref
from typing import Callable

import numpy as np

from .._core import registry as _reg
from .._core.errors import InvalidArgumentError, NotFoundError
from .._core.tensor import TensorSpec
from .concrete import ConcreteFunction
from .graph import FuncGraph, tracing

__all__ = ["SaveForGradient", "checkpoint_stride", "run_fused", "run_if", "run_while",
           "run_while_grad"]


# ---------------------------------------------------------------------- array primitives


def _kernel(op: str, backend, user: str) -> Callable:
    """The backend's kernel of `op`, which higher-order op `user` needs."""
    per = _reg.KERNELS.get(op)
    entry = per.get(backend.name) if per else None
    if entry is None:
        raise NotFoundError(f"{user}: the backend {backend.name!r} has no kernel {op!r}, "
                            "which running it needs")
    return entry.func


def _native(x, backend):
    """`x` as the backend's array type (a NumPy ufunc's 0-d result is a NumPy scalar)."""
    return x if type(x) is backend.native_type else backend.to_native(x)


def _zeros(backend, shape, dtype, user: str):
    return _kernel("Zeros", backend, user)({}, {"shape": tuple(shape), "dtype": dtype}, backend)


def _stand_in(backend, spec):
    """A stand-in for an output the taken branch does not compute (the other branch's
    saved intermediates): one zero broadcast to the shape, so it costs no memory. Only
    the other branch's gradient would read it, and that gradient does not run."""
    shape, dtype = spec
    zero = _zeros(backend, (), dtype, "If")
    return _kernel("BroadcastTo", backend, "If")(
        {"x": zero}, {"shape": tuple(d or 0 for d in shape)}, backend)


def _count(n: int, backend):
    return backend.to_native(np.asarray(n, np.int32))


class _Runner:
    """Runs a ConcreteFunction's program on native arrays, compiled for their shapes:
    once for a graph whose input shapes are all known; for one with unknown dims,
    specialized to the shapes of the arrays (and compiled again, from the function's
    cache, when a loop variable changes shape), so its elementwise regions fuse."""

    __slots__ = ("cf", "backend", "program", "shapes")

    def __init__(self, cf, backend, natives: list):
        self.cf, self.backend = cf, backend
        self.program = cf.compile(backend, natives)
        self.shapes = [a.shape for a in natives] if cf.has_unknown_dims else None

    def __call__(self, natives: list) -> tuple:
        if self.shapes is not None and [a.shape for a in natives] != self.shapes:
            self.program = self.cf.compile(self.backend, natives)
            self.shapes = [a.shape for a in natives]
        return self.program(natives)


# ---------------------------------------------------------------------- If


def run_if(inputs: dict, attrs: dict, backend):
    """An If node: the taken branch's program on the node's arguments, then stand-ins
    for the other branch's saved intermediates (see control_flow._if_node).

    Example (a traced `tf.cond` runs through here):
        >>> f = tf.function(lambda x: tf.cond(x > 0, lambda: x * x, lambda: -x))
        >>> float(f(tf.constant(3.0)))
        9.0
    """
    take = bool(inputs["pred"])
    branch = attrs["then_branch" if take else "else_branch"]
    args = list(inputs["args"])
    outs = [_native(o, backend) for o in branch.compile(backend, args)(args)]
    n_out = attrs["n_out"]
    if take:
        outs += [_stand_in(backend, s) for s in attrs["else_pad"]]
    else:
        outs[n_out:n_out] = [_stand_in(backend, s) for s in attrs["then_pad"]]
    if not n_out:  # branches without outputs: the node returns the predicate
        return backend.to_native(np.asarray(take))
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------- While


def _limit(inputs: dict) -> int | None:
    limit = inputs.get("maximum_iterations")
    return int(limit[0]) if limit else None


def _step_function(cond_cf, body_cf, n_vars: int):
    """One iteration as one function: the body (or its forward variant: the `n_vars` new
    loop variables, then what the gradient keeps), then the cond on the new loop
    variables (with the same arguments), returning the body's outputs and whether to go
    on; so an iteration is one program call. None when the cond changes state (it then
    runs only where the loop asks it, as written)."""
    if any(n.stateful and n.op != "ReadVariableOp" for n in cond_cf.graph.nodes):
        return None

    def build():
        g = FuncGraph(body_cf.name + "_step")
        params = [g.placeholder(t._shape, t.dtype) for t in body_cf.graph.inputs]
        with tracing(g):  # both functions inlined: one graph to optimize and fuse
            outs = body_cf._call_flat(params)
            pred = cond_cf._call_flat(list(outs[:n_vars]) + params[n_vars:])[0]
        if g.captures:  # (sealed functions capture nothing: a safety net)
            return None
        specs = tuple(TensorSpec(t._shape, t.dtype) for t in params)
        step = ConcreteFunction(g, (specs, {}), list(outs) + [pred], len(params), g.name)
        step.jit_compile = body_cf.jit_compile
        return step
    return body_cf.derived(("step", cond_cf), build)


# The loop gradient keeps every iteration's saved tensors (no recomputation: k = n) when
# they take at most this many bytes; above it, k ~ sqrt(n) bounds the memory (API 8.5).
STORE_ALL_BYTES = 32 << 20


def _nbytes(a) -> int:
    size = getattr(a, "nbytes", None)
    return int(size) if size is not None else math.prod(a.shape) * 8


class SaveForGradient:
    """A While node's note that its gradient was asked for (`grad`: the loop's gradient
    data, set when the WhileGrad is built). Such a loop then runs the body's forward
    variant and keeps, per iteration, what the body's backward function reads, as long
    as it all fits in STORE_ALL_BYTES: its WhileGrad then recomputes nothing (as
    TensorFlow's loop accumulators). What a run kept is found by its iteration-count
    output (`kept`), and goes with it."""

    __slots__ = ("grad",)

    def __init__(self):
        self.grad = None

    def __repr__(self) -> str:
        return "<saves for gradient>" if self.grad is not None else "<no saves>"


# id(count array of a While run) -> (weak reference to it, what its gradient reads)
_KEPT: dict[int, tuple] = {}


def _keep(count, record) -> None:
    key = id(count)
    try:
        ref = weakref.ref(count, lambda _, key=key: _KEPT.pop(key, None))
    except TypeError:  # an array type without weak references: nothing is kept
        return
    _KEPT[key] = (ref, record)


def kept(count, x0: list, args: list):
    """(shapes, saved tensors) per iteration that the While run which returned `count`
    kept for its gradient, if it kept them and ran on exactly `x0` and `args`; else None."""
    hit = _KEPT.get(id(count))
    if hit is None or hit[0]() is not count:
        return None
    ins, steps = hit[1]
    if len(ins) != len(x0) + len(args) or any(a is not b for a, b in zip(ins, x0 + args)):
        return None
    return steps


def _run_saving(grad, xs: list, args: list, cond, limit, backend, cond_cf=None):
    """The loop through the body's forward variant, keeping each iteration's input shapes
    and saved tensors; gives up keeping (None) past STORE_ALL_BYTES. Returns (final loop
    variables, iteration count, kept steps or None). With `cond_cf` (the cond's function)
    an iteration is one call of the variant and the cond as one program."""
    saved_at, n_vars = grad.saved_positions, grad.n_vars
    step_cf = None if cond_cf is None else _step_function(cond_cf, grad.variant, n_vars)
    go = True
    if step_cf is not None:
        go = bool(cond(xs + args)[0])
        variant = _Runner(step_cf, backend, xs + args)
    else:
        variant = _Runner(grad.variant, backend, xs + args)
    steps, total, n = [], 0, 0
    while go and (limit is None or n < limit):
        if step_cf is not None:
            *outs, go = variant(xs + args)
        else:
            if cond is not None and not cond(xs + args)[0]:
                break
            outs = variant(xs + args)
        if steps is not None:
            saved = [outs[p] for p in saved_at]
            # (what is held per iteration: the saved tensors, with the loop variables'
            # shapes only; a loop variable the backward reads is among the saved)
            total += sum(_nbytes(a) for a in saved)
            if total <= STORE_ALL_BYTES:
                steps.append(([a.shape for a in xs], saved))
            else:  # too much to keep: the gradient will recompute with checkpoints
                steps = None
        xs = list(outs[:n_vars])
        n += 1
    return xs, n, steps


def run_while(inputs: dict, attrs: dict, backend) -> list:
    """A While node: the body's program while the cond's program says so (at most
    `maximum_iterations` times); the final loop variables, then the iteration count.

    Example (a traced `tf.while_loop` runs through here):
        >>> f = tf.function(lambda n: tf.while_loop(lambda i: i < n, lambda i: i + 1,
        ...                                         [tf.constant(0)]))
        >>> int(f(tf.constant(4))[0])
        4
    """
    xs, args = list(inputs["loop_vars"]), list(inputs["args"])
    x0, limit = xs, _limit(inputs)
    saves = attrs.get("saves")
    grad = saves.grad if saves is not None else None
    if grad is not None and not grad.state_change and not grad.quiet:
        cond = None if attrs["cond"] is None else _Runner(attrs["cond"], backend, xs + args)
        xs, n, steps = _run_saving(grad, xs, args, cond, limit, backend, attrs["cond"])
        count = _count(n, backend)
        if steps is not None:
            _keep(count, (x0 + args, steps))
        return [_native(x, backend) for x in xs] + [count]
    body = _Runner(attrs["body"], backend, xs + args)
    n = 0
    if attrs["cond"] is None:  # a loop of exactly `limit` iterations
        while n < limit:
            xs = list(body(xs + args))
            n += 1
    else:
        cond = _Runner(attrs["cond"], backend, xs + args)
        step_cf = _step_function(attrs["cond"], attrs["body"], len(xs))
        if step_cf is None:
            while (limit is None or n < limit) and cond(xs + args)[0]:
                xs = list(body(xs + args))
                n += 1
        elif cond(xs + args)[0]:
            step = _Runner(step_cf, backend, xs + args)
            while limit is None or n < limit:
                *xs, go = step(xs + args)
                n += 1
                if not go:
                    break
    return [_native(x, backend) for x in xs] + [_count(n, backend)]


# ---------------------------------------------------------------------- WhileGrad


def checkpoint_stride(n: int, given=None) -> int:
    """Iterations between stored loop states: `given`, else about sqrt(n), which makes the
    stored states and one recomputed segment both about sqrt(n) long.

    Example:
        >>> checkpoint_stride(100), checkpoint_stride(100, 7)
        (10, 7)
    """
    if given:
        return int(given)
    return max(1, math.isqrt(max(n - 1, 0)) + 1)


class _Sums:
    """Running sums of gradients: each sum starts as the first gradient given, becomes an
    array of its own at the second (a gradient a program returns may be one of its
    inputs, which must not change) and is added into in place from then on."""

    __slots__ = ("values", "owned", "add", "add_into", "backend")

    def __init__(self, n: int, backend):
        self.values: list = [None] * n
        self.owned: set = set()  # ids of the sums made here
        self.backend = backend
        self.add = _kernel("Add", backend, "WhileGrad")
        self.add_into = _kernel("InplaceAdd", backend, "WhileGrad")

    def __call__(self, j: int, g) -> None:
        total, b = self.values[j], self.backend
        if total is None:
            self.values[j] = g
        elif id(total) in self.owned:
            self.add_into({"ref": total, "value": g}, {}, b)
        else:
            total = self.values[j] = _native(self.add({"x": total, "y": g}, {}, b), b)
            self.owned.add(id(total))

    def add_parts(self, j: int, form: tuple, parts: list, shape, dtype) -> None:
        """Add a sparse gradient, given by its parts (control_flow._sparse_form), into
        sum j, which starts as zeros of `shape` and `dtype`."""
        total, b = self.values[j], self.backend
        if total is None:
            total = self.values[j] = _zeros(b, shape, dtype, "WhileGrad")
            self.owned.add(id(total))
        op, names, attrs = form
        inputs = dict(zip(names, parts))
        inputs["ref"] = total
        _kernel(op, b, "WhileGrad")(inputs, attrs, b)


class _ZeroFeeds:
    """Zero cotangents fed to the backward function for loop variables without a
    gradient: one array per shape and dtype for a whole WhileGrad run instead of one per
    iteration (programs take their inputs read-only: a shared array is never written)."""

    __slots__ = ("backend", "arrays")

    def __init__(self, backend):
        self.backend, self.arrays = backend, {}

    def __call__(self, shape, dtype):
        key = (tuple(shape), dtype)
        z = self.arrays.get(key)
        if z is None:
            z = self.arrays[key] = _zeros(self.backend, shape, dtype, "WhileGrad")
        return z

    def made(self, a) -> bool:
        return any(a is z for z in self.arrays.values())


def run_while_grad(inputs: dict, attrs: dict, backend) -> list:
    """Input gradients of a While from its final cotangents, running the loop backwards.

    The loop state is stored only every k iterations (a first pass from the initial
    state, up to the last stored state); then, segment by segment from the last, the
    segment's iterations are recomputed from its checkpoint with the body's forward
    variant (keeping what the body's backward function reads) and the body's backward
    function runs over them in reverse. Memory: n/k checkpoints plus one segment of k
    iterations' saved tensors. The automatic k is n when all iterations' saved tensors
    fit in STORE_ALL_BYTES (one segment: no first pass), else about sqrt(n), O(sqrt(n))
    memory.

    Example (the gradient of a traced `tf.while_loop` runs through here):
        >>> @tf.function
        ... def f(x):
        ...     with tf.GradientTape() as tape:
        ...         tape.watch(x)
        ...         y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
        ...                           (0, tf.constant(1.0)))[1]
        ...     return tape.gradient(y, x)
        >>> float(f(tf.constant(2.0)))  # d(x^3)/dx
        12.0
    """
    grad = attrs["grad"]
    if grad.state_change:
        raise InvalidArgumentError(
            f"while_loop: cannot differentiate the loop {grad.body.name}: its body changes "
            f"state ({grad.state_change}), and the gradient recomputes iterations from stored "
            "loop states, which would change it again. Make the values loop variables, or "
            "move the state change out of the loop")
    b = backend
    x0, args = list(inputs["loop_vars"]), list(inputs["args"])
    n = int(inputs["count"])
    n_vars = grad.n_vars
    saved_at, slots = grad.saved_positions, grad.slots
    variant = _Runner(grad.variant, b, x0 + args)
    steps = kept(inputs["count"], x0, args)  # what the forward loop kept, if it did
    k, first = (n if steps is not None else attrs["k"]), None
    if not k and n > 1:  # the first iteration's saved tensors tell what storing all costs
        first = variant(x0 + args)
        per_step = sum(_nbytes(first[p]) for p in saved_at)
        if per_step * n <= STORE_ALL_BYTES:
            k = n
        else:
            first = None
    k = checkpoint_stride(n, k)
    backward = None  # compiled at its first call (its inputs are the cotangents)
    backward_cf, forms = grad.backward, None
    if all(_own_kernel(op, b) for op in _SPARSE_KERNELS):
        backward_cf, forms, _ = grad.sparse_backward()
        # one segment: every iteration's saved tensors are kept anyway, so the operands
        # of the gradients' products can be too, when they are small (see
        # _LoopGrad.sparse_backward)
        if k >= n and all(_own_kernel(op, b) for op in _DEFERRED_KERNELS):
            cf, with_deferred, per_step = grad.sparse_backward(True)
            if per_step * n <= DEFER_BYTES:
                backward_cf, forms = cf, with_deferred
    deferred: dict = {}  # slot -> (form, every iteration's operands)
    captured = grad.backward_captures(b)
    # the cotangent of every loop variable (zeros for the non-trainable ones: the body's
    # backward function takes a cotangent for each output)
    given = iter(inputs["cots"])
    zeros = _ZeroFeeds(b)
    cot = [next(given) if trainable else zeros(x.shape, dt)
           for trainable, x, dt in zip(grad.var_trainable, x0, grad.var_dtypes)]
    arg_sums, res_sums = _Sums(grad.n_args, b), _Sums(grad.n_resources, b)
    checkpoints, x = [], x0
    body = None
    for step in range(n):
        if step % k == 0:
            checkpoints.append(x)
            if step + k >= n:  # the last stored state: no segment starts after it
                break
        if body is None:
            body = _Runner(grad.body, b, x + args)
        x = list(body(x + args))
    del x
    for start in range(k * (len(checkpoints) - 1), -1, -k):
        x = checkpoints.pop()
        if steps is not None:  # (k = n: the one segment, kept by the forward loop)
            segment, steps = list(steps), None
        else:
            segment = []
            for step in range(start, min(start + k, n)):
                if step == 0 and first is not None:  # already computed
                    outs, first = first, None
                else:
                    outs = variant(x + args)
                segment.append(([v.shape for v in x], [outs[p] for p in saved_at]))
                x = list(outs[:n_vars])
        del x
        while segment:
            shapes, saved = segment.pop()
            feed = cot + saved + captured
            if backward is None:
                backward = _Runner(backward_cf, b, feed)
            grads = backward(feed)
            new = [None] * n_vars
            if forms is not None:
                grads = _gather_parts(grads, forms, slots, grad, arg_sums, args, deferred)
            for slot, g in zip(slots, grads):
                if g is None:  # added into its sum already
                    continue
                if slot < n_vars:
                    new[slot] = g
                elif slot < n_vars + grad.n_args:
                    arg_sums(slot - n_vars, g)
                else:
                    res_sums(grad.resource_of_slot[slot], g)
            cot = [g if g is not None else zeros(s, dt)
                   for g, s, dt in zip(new, shapes, grad.var_dtypes)]
    if deferred:
        _sum_deferred(deferred, grad, arg_sums, res_sums, b)
    out = [c for c, trainable in zip(cot, grad.var_trainable) if trainable]
    # (an output is an array of its own, not a shared zero feed)
    out = [_zeros(b, c.shape, dt, "WhileGrad") if zeros.made(c) else c
           for c, dt in zip(out, [d for d, tr in zip(grad.var_dtypes, grad.var_trainable)
                                  if tr])]
    out += [g if g is not None else _zeros(b, x.shape, dt, "WhileGrad")
            for g, x, dt, trainable in zip(arg_sums.values, args, grad.arg_dtypes,
                                           grad.arg_trainable) if trainable]
    out += [g if g is not None else _zeros(b, shape, dt, "WhileGrad")
            for g, (shape, dt) in zip(res_sums.values, grad.resource_specs)]
    out = [_native(g, b) for g in out]
    return out[0] if len(out) == 1 else out


# the kernels adding sparse gradients into running sums (ops/indexing.py); a backend
# without them gets the dense gradients
_SPARSE_KERNELS = ("InplaceSegmentSum", "InplaceStridedSliceAdd")


def _own_kernel(op: str, backend) -> bool:
    """Whether `backend` has a kernel of its own for `op` (not one that runs another
    backend's on copies: an in-place update of a copy would be lost)."""
    per = _reg.KERNELS.get(op)
    entry = per.get(backend.name) if per else None
    return entry is not None and not getattr(entry.func, "fallback", False)


# what the sums deferred to the end of the loop gradient run (a backend without them: none)
_DEFERRED_KERNELS = ("Concat", "MatMul", "Sum")
# The most bytes of operands a loop gradient keeps to sum their products after the loop.
# One product over all iterations saves a small product's call and an addition per
# iteration, but reads every operand again after the loop, out of cache when they are
# large (2 cores, OpenBLAS, float32: an RNN's 24 steps of [64, 64] operands, 0.8 MB, 9%
# faster; an LSTM's 63 steps of [64, 256] ones, 5 MB, 35% slower). Shapes alone decide.
DEFER_BYTES = 1 << 20


def _gather_parts(grads, forms, slots, grad, sums: _Sums, args: list,
                  deferred: dict) -> list:
    """The backward function's results per slot: the sparse ones (given by their parts)
    added into their argument's sum here, the deferred ones kept in `deferred`; None for
    both in the list."""
    out, pos = [], 0
    for slot, form in zip(slots, forms):
        if form is None:
            out.append(grads[pos])
            pos += 1
            continue
        n = len(form[1])
        parts = grads[pos:pos + n]
        pos += n
        out.append(None)
        if form[0] in ("product", "rowsum"):
            deferred.setdefault(slot, (form, []))[1].append(parts)
        else:
            j = slot - grad.n_vars
            sums.add_parts(j, form, list(parts), args[j].shape, grad.arg_dtypes[j])
    return out


def _sum_deferred(deferred: dict, grad, arg_sums: _Sums, res_sums: _Sums, b) -> None:
    """The deferred sums over iterations: sum_t op(a_t) op(b_t) as one product of the a_t
    and of the b_t concatenated along the contracted axis, sum_t sum_rows(x_t) as one sum
    of the x_t concatenated (an operand several sums share is concatenated once). The
    order of the additions is fixed by the shapes (the iterations in reverse)."""
    concat = _kernel("Concat", b, "WhileGrad")
    joined: dict = {}

    def join(arrays: list, axis: int):
        key = (tuple(id(a) for a in arrays), axis)
        if key not in joined:
            joined[key] = arrays[0] if len(arrays) == 1 else _native(concat(
                {"values": arrays},
                {"axis": axis, "sizes": tuple(a.shape[axis] for a in arrays)}, b), b)
        return joined[key]

    for slot, ((op, _, attrs), steps) in deferred.items():
        if op == "product":
            x = join([p[0] for p in steps], 0 if attrs["adjoint_a"] else 1)
            y = join([p[1] for p in steps], 1 if attrs["adjoint_b"] else 0)
            g = _kernel("MatMul", b, "WhileGrad")({"a": x, "b": y},
                                                  {**attrs, "shared_b": False}, b)
        else:
            g = _kernel("Sum", b, "WhileGrad")({"x": join([p[0] for p in steps], 0)},
                                               {"axis": (0,), "keepdims": False}, b)
        g = _native(g, b)
        if slot < grad.n_vars + grad.n_args:
            arg_sums(slot - grad.n_vars, g)
        else:
            res_sums(grad.resource_of_slot[slot], g)


# ---------------------------------------------------------------------- FusedElementwise


def run_fused(inputs: dict, attrs: dict, backend):
    """A FusedElementwise node: its region's compiled loop (function/fuse.py) over the
    native inputs (the fusion pass makes such nodes only for backends whose arrays the
    loop takes)."""
    return attrs["kernel"](inputs["inputs"])
