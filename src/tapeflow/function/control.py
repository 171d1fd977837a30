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
InplaceAdd; GatherNd, TensorScatterNdUpdate and InplaceScatterUpdate for row writes), and reading a predicate or a count to Python is `bool`/`int` of a 0-d array,
which every array library supports.

What a loop works out once: per loop body, the loop variables it writes one row of
(RowWrites: written in place by the runtime, in a buffer of the loop's own); per run, the
programs (called directly when the shapes are static), what an iteration keeps for the
gradient, and where each output of the backward function goes (_Routes): an iteration
then costs its program call and little else.
"""
from __future__ import annotations

import math
import weakref
from typing import Callable

import numpy as np

from .._core import registry as _reg
from .._core.errors import InvalidArgumentError, NotFoundError
from .._core.tensor import Tensor, TensorSpec
from .concrete import ConcreteFunction
from .graph import _dims_in, FuncGraph, tracing
from .interpret import copy_node, eval_graph, finish_rebuild, start_rebuild

__all__ = ["RowWrites", "SaveForGradient", "checkpoint_stride", "row_writes", "run_fused",
           "run_if", "run_while", "run_while_grad"]


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
    cache, when a loop variable changes shape), so its elementwise regions fuse.

    `call` is what a loop calls per iteration: the program itself when the shapes are
    all known (no check per call), else a check of the first `varying` arrays' shapes
    (the loop variables: a loop's other arguments keep theirs)."""

    __slots__ = ("cf", "backend", "program", "shapes", "varying", "call")

    def __init__(self, cf, backend, natives: list, varying: int | None = None):
        self.cf, self.backend = cf, backend
        self.program = cf.compile(backend, natives)
        self.varying = len(natives) if varying is None else varying
        if cf.has_unknown_dims:
            self.shapes = [a.shape for a in natives[:self.varying]]
            self.call = self._checked
        else:
            self.shapes = None
            self.call = self.program

    def _checked(self, natives: list) -> tuple:
        shapes = [a.shape for a in natives[:self.varying]]
        if shapes != self.shapes:
            self.program = self.cf.compile(self.backend, natives)
            self.shapes = shapes
        return self.program(natives)

    def __call__(self, natives: list) -> tuple:
        return self.call(natives)


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


# ---------------------------------------------------------------------- row writes


class RowWrites:
    """A loop body's loop variables whose only update is one row written at an index (a
    graph-mode TensorArray's write, a Keras RNN's output sequence): `x_j' =
    tensor_scatter_nd_update(x_j, [[i]], [row])`, x_j read by nothing else in the body
    and the new buffer by nothing but the loop. `body` is the body without those
    writes: it returns such a variable as it got it (unread) and, after its outputs, the
    row and the index of each (`at`: their positions). The loop runtime then writes the
    rows into a buffer of its own, in place (one copy of the initial value, at the first
    write), and the gradient loop feeds the body's backward function the cotangent's row
    and zeroes that row in the buffer's cotangent: each iteration costs O(row), not
    O(buffer), with the program compiled once for every sequence length (JAX's scan
    stacks its per-iteration outputs so).

    Example (a loop whose TensorArray writes are found):
        >>> @tf.function
        ... def f(x):
        ...     ta = tf.TensorArray(tf.float32, size=3)
        ...     return tf.while_loop(lambda i, ta: i < 3,
        ...                          lambda i, ta: (i + 1, ta.write(i, x * 2.0)),
        ...                          (0, ta))[1].stack()
        >>> f(tf.constant(1.0)).numpy()
        array([2., 2., 2.], dtype=float32)
    """

    __slots__ = ("body", "vars", "at")

    def __init__(self, body, variables: tuple, at: tuple):
        self.body, self.vars, self.at = body, variables, at

    def __repr__(self) -> str:
        return f"<row writes of loop variables {list(self.vars)} in {self.body.name}>"


def row_writes(body_cf, n_vars: int) -> RowWrites | None:
    """The row writes of a loop body's first `n_vars` (loop-variable) inputs, found once
    per body; None when there are none (see RowWrites)."""
    return body_cf.derived(("row_writes", n_vars), lambda: _find_row_writes(body_cf, n_vars))


def _producer(t):
    node = getattr(t._native, "node", None)
    return node if node is not None and node.outputs[0] is t else None


def _find_row_writes(body_cf, n_vars: int) -> RowWrites | None:
    graph, outs = body_cf.graph, list(body_cf._flat_outputs)
    if graph.captures or len(outs) != n_vars:
        return None
    uses: dict = {}  # tensor id -> how many reads (nodes' inputs and run-time dims, outputs)
    for node in graph.nodes:
        for v in node.inputs.values():
            for t in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(t, Tensor):
                    uses[t.id] = uses.get(t.id, 0) + 1
        for d in _dims_in(node.attrs):
            uses[d.tensor.id] = uses.get(d.tensor.id, 0) + 2
    for t in outs:
        if isinstance(t, Tensor):
            uses[t.id] = uses.get(t.id, 0) + 1
    found = []
    for j in range(n_vars):
        t, x = outs[j], graph.inputs[j]
        node = _producer(t) if isinstance(t, Tensor) else None
        if (node is None or node.op != "TensorScatterNdUpdate" or node.attrs["batch_dims"]
                or node.inputs["tensor"] is not x or uses.get(x.id) != 1
                or uses.get(t.id) != 1 or not x._shape):
            continue
        idx = node.inputs["indices"]
        # one index: [[i]] (updates [1, *row]) or [i] (updates the row itself)
        if tuple(idx._shape) in ((1, 1), (1,)) and idx.dtype.is_integer:
            found.append((j, node))
    if not found:
        return None
    skip = {id(node) for _, node in found}
    new, env = start_rebuild(graph)
    env = eval_graph(graph, env, lambda node, ins: copy_node(new, node, ins, env),
                     [n for n in graph.nodes if id(n) not in skip])
    written = dict(found)
    wanted = [graph.inputs[j] if j in written else t for j, t in enumerate(outs)]
    at = []
    for j, node in found:
        at.append((len(wanted), len(wanted) + 1))
        wanted += [node.inputs["updates"], node.inputs["indices"]]
    new_outs = finish_rebuild(graph, new, env, wanted, "finding row writes in")
    cf = ConcreteFunction(new, body_cf.structured_input_signature, new_outs, body_cf._n_args,
                          body_cf.name + "_rows")
    cf.jit_compile = body_cf.jit_compile
    return RowWrites(cf, tuple(j for j, _ in found), tuple(at))


def _reads_inputs(cf, positions: tuple) -> bool:
    """Whether function `cf` reads any of its inputs at `positions`."""
    def build():
        ids = {cf.graph.inputs[j].id for j in positions}
        return any(isinstance(t, Tensor) and t.id in ids for t in cf._flat_outputs) or any(
            t.id in ids for node in cf.graph.nodes for t in _tensor_inputs(node)) or any(
            d.tensor.id in ids for node in cf.graph.nodes for d in _dims_in(node.attrs))
    return cf.derived(("reads", positions), build)


def _tensor_inputs(node) -> list:
    return [t for v in node.inputs.values()
            for t in (v if isinstance(v, (list, tuple)) else [v]) if isinstance(t, Tensor)]


class _RowWriter:
    """Writes an iteration's rows (see RowWrites) into the loop's buffers: the first
    write of a buffer copies it (the loop's own from then on: the initial value is its
    input, which must not change), the others write in place. A backend without an
    in-place kernel gets a copy per write."""

    __slots__ = ("rows", "backend", "fresh", "into", "owned")

    def __init__(self, rows: RowWrites, backend, user: str):
        self.rows, self.backend = rows, backend
        self.fresh = _kernel("TensorScatterNdUpdate", backend, user)
        self.into = (_kernel("InplaceScatterUpdate", backend, user)
                     if _own_kernel("InplaceScatterUpdate", backend) else None)
        self.owned: list = [None] * len(rows.vars)  # the buffers made here

    def write(self, k: int, buffer, indices, updates):
        """`buffer` (the k-th written variable's) with `updates` at `indices`."""
        mine = self.owned[k]
        if mine is not None and buffer is mine and self.into is not None:
            try:
                self.into({"ref": buffer, "indices": indices, "updates": updates}, {},
                          self.backend)
                return buffer
            except InvalidArgumentError:
                pass  # (the functional kernel below says what is wrong, as the op would)
        out = self.owned[k] = _native(self.fresh(
            {"tensor": buffer, "indices": indices, "updates": updates}, {"batch_dims": 0},
            self.backend), self.backend)
        return out

    def __call__(self, xs: list, outs) -> None:
        """Write the rows the body returned in `outs` into the loop variables `xs`."""
        for k, (j, (u, i)) in enumerate(zip(self.rows.vars, self.rows.at)):
            xs[j] = self.write(k, xs[j], outs[i], outs[u])


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
    """What the While run which returned `count` kept for its gradient (see
    `_run_saving`), if it kept it and ran on exactly `x0` and `args`; else None."""
    hit = _KEPT.get(id(count))
    if hit is None or hit[0]() is not count:
        return None
    ins, steps = hit[1]
    if len(ins) != len(x0) + len(args) or any(a is not b for a, b in zip(ins, x0 + args)):
        return None
    return steps


def _cond_reads_rows(cond_cf, rows: RowWrites | None) -> bool:
    return rows is not None and cond_cf is not None and _reads_inputs(cond_cf, rows.vars)


def _run_saving(grad, xs: list, args: list, cond, limit, backend, cond_cf=None):
    """The loop through the body's forward variant, keeping what each iteration's
    backward reads (see `_step_record`); gives up keeping (None) past STORE_ALL_BYTES.
    Returns (final loop variables, iteration count, kept steps or None). With `cond_cf`
    (the cond's function) an iteration is one call of the variant and the cond as one
    program."""
    n_vars, rows = grad.n_vars, grad.rows
    step_cf = None if cond_cf is None else _step_function(cond_cf, grad.variant, n_vars)
    write = _RowWriter(rows, backend, "While") if rows is not None else None
    go = True
    if step_cf is not None:
        go = bool(cond(xs + args)[0])
        run = _Runner(step_cf, backend, xs + args, n_vars).call
    else:
        run = _Runner(grad.variant, backend, xs + args, n_vars).call
        cond = None if cond is None else cond.call
    record = _step_record(grad)
    # (bytes kept per iteration: known once when the saved tensors' shapes are)
    per_step = grad.saved_bytes
    steps, total, n = [], 0, 0
    while go and (limit is None or n < limit):
        if step_cf is not None:
            *outs, go = run(xs + args)
        else:
            if cond is not None and not cond(xs + args)[0]:
                break
            outs = run(xs + args)
        if steps is not None:
            step = record(xs, outs)
            total += per_step if per_step is not None else sum(_nbytes(a) for a in step[1])
            if total <= STORE_ALL_BYTES:
                steps.append(step)
            else:  # too much to keep: the gradient will recompute with checkpoints
                steps = None
        xs = list(outs[:n_vars])
        if write is not None:
            write(xs, outs)
        n += 1
    return xs, n, steps


def _step_record(grad) -> Callable:
    """`record(xs, outs)`: what the backward of an iteration needs of it, from its loop
    variables `xs` and its forward variant's outputs `outs`: (the loop variables' shapes,
    None when they are known from the graph; the saved tensors; the written rows'
    indices, see RowWrites)."""
    saved_at = grad.saved_positions
    index_at = [i for _, i in grad.rows.at] if grad.rows is not None else []
    if grad.var_shapes is None:
        return lambda xs, outs: ([a.shape for a in xs], [outs[p] for p in saved_at],
                                 [outs[p] for p in index_at])
    return lambda xs, outs: (None, [outs[p] for p in saved_at], [outs[p] for p in index_at])


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
    n_vars = len(xs)
    saves = attrs.get("saves")
    grad = saves.grad if saves is not None else None
    cond_cf = attrs["cond"]
    if grad is not None and not grad.state_change and not grad.quiet:
        cond = None if cond_cf is None else _Runner(cond_cf, backend, xs + args, n_vars)
        fused = None if _cond_reads_rows(cond_cf, grad.rows) else cond_cf
        xs, n, steps = _run_saving(grad, xs, args, cond, limit, backend, fused)
        count = _count(n, backend)
        if steps is not None:
            _keep(count, (x0 + args, steps))
        return [_native(x, backend) for x in xs] + [count]
    rows = row_writes(attrs["body"], n_vars)
    body_cf = attrs["body"] if rows is None else rows.body
    write = None if rows is None else _RowWriter(rows, backend, "While")
    run = _Runner(body_cf, backend, xs + args, n_vars).call
    n = 0
    if cond_cf is None:  # a loop of exactly `limit` iterations
        while n < limit:
            outs = run(xs + args)
            xs = list(outs[:n_vars])
            if write is not None:
                write(xs, outs)
            n += 1
    else:
        cond = _Runner(cond_cf, backend, xs + args, n_vars).call
        step_cf = None if _cond_reads_rows(cond_cf, rows) else _step_function(
            cond_cf, body_cf, n_vars)
        if step_cf is None:
            while (limit is None or n < limit) and cond(xs + args)[0]:
                outs = run(xs + args)
                xs = list(outs[:n_vars])
                if write is not None:
                    write(xs, outs)
                n += 1
        elif cond(xs + args)[0]:
            step = _Runner(step_cf, backend, xs + args, n_vars).call
            while limit is None or n < limit:
                *outs, go = step(xs + args)
                xs = outs[:n_vars]
                if write is not None:
                    write(xs, outs)
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
    variant = _Runner(grad.variant, b, x0 + args, n_vars)
    steps = kept(inputs["count"], x0, args)  # what the forward loop kept, if it did
    record = _step_record(grad)
    k, first = (n if steps is not None else attrs["k"]), None
    if not k and n > 1:  # the first iteration's saved tensors tell what storing all costs
        first = variant(x0 + args)
        per_step = sum(_nbytes(first[p]) for p in grad.saved_positions)
        if per_step * n <= STORE_ALL_BYTES:
            k = n
        else:
            first = None
    k = checkpoint_stride(n, k)
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
    captured = grad.backward_captures(b)
    zeros = _ZeroFeeds(b)
    # the cotangent of every loop variable (zeros for the non-trainable ones: the body's
    # backward function takes a cotangent for each output)
    given = iter(inputs["cots"])
    cot = [next(given) if trainable else zeros(x.shape, dt)
           for trainable, x, dt in zip(grad.var_trainable, x0, grad.var_dtypes)]
    arg_sums, res_sums = _Sums(grad.n_args, b), _Sums(grad.n_resources, b)
    route = _Routes(grad, forms, args, arg_sums, res_sums, b)
    rows = _BackRows(grad, zeros, b) if grad.rows is not None else None
    checkpoints, x = [], x0
    body = None
    for step in range(n):
        if step % k == 0:
            checkpoints.append(x)
            if step + k >= n:  # the last stored state: no segment starts after it
                break
        if body is None:
            body = _Runner(grad.body, b, x + args, n_vars)
        x = list(body(x + args)[:n_vars])  # (row writes: their buffers are not read)
    del x
    backward = None  # compiled at its first call (its inputs are the cotangents)
    fixed = grad.var_shapes
    for start in range(k * (len(checkpoints) - 1), -1, -k):
        x = checkpoints.pop()
        if steps is not None:  # (k = n: the one segment, kept by the forward loop)
            segment, steps = steps, None
        else:
            segment = []
            for step in range(start, min(start + k, n)):
                if step == 0 and first is not None:  # already computed
                    outs, first = first, None
                else:
                    outs = variant(x + args)
                segment.append(record(x, outs))
                x = list(outs[:n_vars])
        del x
        for shapes, saved, indices in reversed(segment):
            feed = cot + rows.feed(cot, indices) if rows is not None else list(cot)
            feed += saved
            feed += captured
            if backward is None:
                backward = _Runner(backward_cf, b, feed, len(feed) - len(captured))
            new = route(backward.call(feed), fixed or shapes, zeros)
            if rows is not None:
                rows.zero(new, cot, indices)
            cot = new
        del segment
    route.finish()
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


class _BackRows:
    """The gradient loop's side of RowWrites: per iteration, the backward function is fed
    each written row's cotangent (the row of the buffer's cotangent at the iteration's
    index), and that row of the buffer's cotangent is then zeroed (the write replaced
    what the buffer held there), in place in a cotangent of the loop's own."""

    __slots__ = ("vars", "trainable", "lead", "dtypes", "gather", "writer", "zeros",
                 "index_zeros")

    def __init__(self, grad, zeros: "_ZeroFeeds", backend):
        rows = grad.rows
        outs = rows.body._flat_outputs
        self.vars = rows.vars
        self.trainable = [grad.var_trainable[j] for j in rows.vars]
        # a row's shape: [1, *buffer row] for indices [[i]], the buffer row for [i]
        self.lead = [(1,) if len(outs[i]._shape) == 2 else () for _, i in rows.at]
        self.dtypes = [outs[u].dtype for u, _ in rows.at]
        self.gather = _kernel("GatherNd", backend, "WhileGrad")
        self.writer = _RowWriter(rows, backend, "WhileGrad")
        self.zeros = zeros
        self.index_zeros = [zeros(outs[i]._shape, outs[i].dtype) for _, i in rows.at]

    def _row_zeros(self, k: int, buffer):
        return self.zeros(self.lead[k] + tuple(buffer.shape[1:]), self.dtypes[k])

    def feed(self, cot: list, indices: list) -> list:
        """The cotangents of the body's row and index outputs."""
        out = []
        for k, j in enumerate(self.vars):
            if self.trainable[k]:
                out.append(self.gather({"params": cot[j], "indices": indices[k]},
                                       {"batch_dims": 0}, self.writer.backend))
            else:
                out.append(self._row_zeros(k, cot[j]))
            out.append(self.index_zeros[k])
        return out

    def zero(self, new: list, cot: list, indices: list) -> None:
        """Into `new`: the buffers' cotangents with the rows written zeroed."""
        for k, j in enumerate(self.vars):
            c = cot[j]
            new[j] = self.writer.write(k, c, indices[k], self._row_zeros(k, c)) \
                if self.trainable[k] else c


class _Routes:
    """Where each output of the body's backward function goes, worked out once per
    WhileGrad run: a loop variable's cotangent for the next (earlier) iteration, an
    argument's or variable's running sum (the sparse ones added in place from their
    parts, the deferred ones kept for one sum after the loop)."""

    __slots__ = ("n_vars", "to_var", "to_arg", "to_res", "sparse", "deferred", "kept",
                 "grad", "arg_sums", "res_sums", "backend", "missing")

    def __init__(self, grad, forms, args: list, arg_sums, res_sums, backend):
        self.n_vars, self.grad, self.backend = grad.n_vars, grad, backend
        self.arg_sums, self.res_sums = arg_sums, res_sums
        self.to_var, self.to_arg, self.to_res, self.sparse, self.deferred = [], [], [], [], []
        self.kept: dict = {}  # slot -> (form, every iteration's operands)
        n_vars, pos = grad.n_vars, 0
        for slot, form in zip(grad.slots, forms or [None] * len(grad.slots)):
            if form is None:
                if slot < n_vars:
                    self.to_var.append((pos, slot))
                elif slot < n_vars + grad.n_args:
                    self.to_arg.append((pos, slot - n_vars))
                else:
                    self.to_res.append((pos, grad.resource_of_slot[slot]))
                pos += 1
                continue
            size = len(form[1])
            if form[0] in _DEFERRED_FORMS:
                self.kept[slot] = (form, [])
                self.deferred.append((pos, pos + size, self.kept[slot][1]))
            else:
                j = slot - n_vars
                op, names, attrs = form
                self.sparse.append((pos, pos + size, j, _kernel(op, backend, "WhileGrad"),
                                    names, attrs, args[j].shape, grad.arg_dtypes[j]))
            pos += size
        routed = {slot for _, slot in self.to_var}
        self.missing = [j for j in range(n_vars) if j not in routed]

    def __call__(self, grads, shapes, zeros: "_ZeroFeeds") -> list:
        """The cotangents of the loop variables for the iteration before, from the
        backward function's results `grads` (the arguments' gradients summed)."""
        new = [None] * self.n_vars
        for pos, j in self.to_var:
            new[j] = grads[pos]
        for j in self.missing:  # no gradient: zeros (of the iteration's input shape)
            new[j] = zeros(shapes[j], self.grad.var_dtypes[j])
        for pos, j in self.to_arg:
            self.arg_sums(j, grads[pos])
        for pos, j in self.to_res:
            self.res_sums(j, grads[pos])
        b = self.backend
        for lo, hi, j, add, names, attrs, shape, dtype in self.sparse:
            total = self.arg_sums.values[j]
            if total is None:
                total = self.arg_sums.values[j] = _zeros(b, shape, dtype, "WhileGrad")
                self.arg_sums.owned.add(id(total))
            inputs = dict(zip(names, grads[lo:hi]))
            inputs["ref"] = total
            add(inputs, attrs, b)
        for lo, hi, operands in self.deferred:
            operands.append(grads[lo:hi])
        return new

    def finish(self) -> None:
        """The deferred sums, after the loop."""
        ran = {slot: kept for slot, kept in self.kept.items() if kept[1]}
        if ran:  # (no iterations: no operands)
            _sum_deferred(ran, self.grad, self.arg_sums, self.res_sums, self.backend)


# the kernels adding sparse gradients into running sums (ops/indexing.py); a backend
# without them gets the dense gradients
_SPARSE_KERNELS = ("InplaceSegmentSum", "InplaceStridedSliceAdd")


def _own_kernel(op: str, backend) -> bool:
    """Whether `backend` has a kernel of its own for `op` (not one that runs another
    backend's on copies: an in-place update of a copy would be lost)."""
    per = _reg.KERNELS.get(op)
    entry = per.get(backend.name) if per else None
    return entry is not None and not getattr(entry.func, "fallback", False)


# the sparse forms summed after the loop (control_flow._sparse_form), and the kernels
# those sums need (a backend without them: none deferred)
_DEFERRED_FORMS = ("product", "rowsum")
_DEFERRED_KERNELS = ("Concat", "MatMul", "Sum")
# The most bytes of operands a loop gradient keeps to sum their products after the loop.
# One product over all iterations saves a small product's call and an addition per
# iteration, but reads every operand again after the loop, out of cache when they are
# large (2 cores, OpenBLAS, float32: an RNN's 24 steps of [64, 64] operands, 0.8 MB, 9%
# faster; an LSTM's 63 steps of [64, 256] ones, 5 MB, 35% slower). Shapes alone decide.
DEFER_BYTES = 1 << 20


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
