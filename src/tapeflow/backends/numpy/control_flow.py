"""NumPy kernels of graph control flow (see function/control_flow.py): If, While and
WhileGrad run the compiled programs of their branch and body functions on native arrays.

The sub-functions come in `attrs` as ConcreteFunctions; their programs are compiled once per
backend and cached by the function, so a loop iteration costs one Python call of the body's
generated program.
"""
import math

import numpy as np

from ..._core.errors import InvalidArgumentError
from ._kernel import ensure_array, kernel


def _placeholder(spec):
    """A stand-in for an output the taken branch does not compute (the other branch's saved
    intermediates): a zero-strided view of one zero, so it costs no memory. Only the other
    branch's gradient would read it, and that branch's gradient does not run."""
    shape, dtype = spec
    return np.broadcast_to(np.zeros((), dtype.as_numpy_dtype), [d or 0 for d in shape])


@kernel("If")
def _if(inputs, attrs, backend):
    take = bool(inputs["pred"])
    branch = attrs["then_branch" if take else "else_branch"]
    outs = list(branch._program(backend)(list(inputs["args"])))
    n_out = attrs["n_out"]
    if take:
        outs += [_placeholder(s) for s in attrs["else_pad"]]
    else:
        outs[n_out:n_out] = [_placeholder(s) for s in attrs["then_pad"]]
    if not n_out:  # branches without outputs: the node returns the predicate
        return np.asarray(take)
    outs = [ensure_array(o) for o in outs]  # a ufunc kernel's 0-d result is a scalar
    return outs[0] if len(outs) == 1 else outs


def _limit(i):
    limit = i.get("maximum_iterations")
    return int(limit[0]) if limit else None


@kernel("While")
def _while(inputs, attrs, backend):
    cond = attrs["cond"]._program(backend) if attrs["cond"] is not None else None
    body = attrs["body"]._program(backend)
    xs, args = list(inputs["loop_vars"]), list(inputs["args"])
    limit = _limit(inputs)
    n = 0
    while (limit is None or n < limit) and (cond is None or cond(xs + args)[0]):
        xs = list(body(xs + args))
        n += 1
    return [ensure_array(x) for x in xs] + [np.asarray(n, np.int32)]


def checkpoint_stride(n: int, given=None) -> int:
    """Iterations between stored loop states: `given`, else about sqrt(n), which makes the
    stored states and one recomputed segment both about sqrt(n) long."""
    if given:
        return int(given)
    return max(1, math.isqrt(max(n - 1, 0)) + 1)


def _accumulate(sums: list, j: int, g, owned: set) -> None:
    """sums[j] += g, in place once the sum is an array of our own (a gradient the backward
    program returns may be one of its inputs, which must not change)."""
    total = sums[j]
    if total is None:
        sums[j] = g
    elif id(total) in owned:
        np.add(total, g, out=total)
    else:
        total = sums[j] = ensure_array(total + g)
        owned.add(id(total))


@kernel("WhileGrad")
def _while_grad(inputs, attrs, backend):
    """Input gradients of a While from its final cotangents, running the loop backwards.

    The loop state is stored only every k iterations (a first pass from the initial state);
    then, segment by segment from the last, the segment's iterations are recomputed from
    its checkpoint with the body's forward variant (keeping what the body's backward
    function reads) and the body's backward function runs over them in reverse. Memory:
    n/k checkpoints plus one segment of k iterations' saved tensors, O(sqrt(n)) for the
    automatic k."""
    grad = attrs["grad"]
    if grad.state_change:
        raise InvalidArgumentError(
            f"while_loop: cannot differentiate the loop {grad.body.name}: its body changes "
            f"state ({grad.state_change}), and the gradient recomputes iterations from stored "
            "loop states, which would change it again. Make the values loop variables, or "
            "move the state change out of the loop")
    body = grad.body._program(backend)
    variant = grad.variant._program(backend)
    backward = grad.backward._program(backend)
    captured = grad.backward_captures(backend)
    saved_at, slots = grad.saved_positions, grad.slots
    n_vars, n_args = grad.n_vars, grad.n_args
    x0, args = list(inputs["loop_vars"]), list(inputs["args"])
    n = int(inputs["count"])
    k = checkpoint_stride(n, attrs["k"])
    # the cotangent of every loop variable (zeros for the non-trainable ones: the body's
    # backward function takes a cotangent for each output)
    given = iter(inputs["cots"])
    cot = [next(given) if trainable else np.zeros(np.shape(x), x.dtype)
           for trainable, x in zip(grad.var_trainable, x0)]
    arg_grads = [None] * n_args
    res_grads = [None] * grad.n_resources
    owned = set()  # ids of the sums made here, safe to add into in place
    checkpoints, x = [], x0
    for step in range(n):
        if step % k == 0:
            checkpoints.append(x)
        x = list(body(x + args))
    del x
    for start in range(k * (len(checkpoints) - 1), -1, -k):
        x = checkpoints.pop()
        segment = []
        for _ in range(start, min(start + k, n)):
            outs = variant(x + args)
            segment.append(([np.shape(v) for v in x], [outs[p] for p in saved_at]))
            x = list(outs[:n_vars])
        del x
        while segment:
            shapes, saved = segment.pop()
            grads = backward(cot + saved + captured)
            new = [None] * n_vars
            for slot, g in zip(slots, grads):
                if slot < n_vars:
                    new[slot] = g
                elif slot < n_vars + n_args:
                    _accumulate(arg_grads, slot - n_vars, g, owned)
                else:
                    _accumulate(res_grads, grad.resource_of_slot[slot], g, owned)
            cot = [g if g is not None else np.zeros(s, dt)
                   for g, s, dt in zip(new, shapes, grad.var_dtypes)]
    out = [c for c, trainable in zip(cot, grad.var_trainable) if trainable]
    out += [g if g is not None else np.zeros(np.shape(x), x.dtype)
            for g, x, trainable in zip(arg_grads, args, grad.arg_trainable) if trainable]
    out += [g if g is not None else np.zeros(shape, dt)
            for g, (shape, dt) in zip(res_grads, grad.resource_specs)]
    out = [ensure_array(g) for g in out]  # sums of 0-d gradients are NumPy scalars
    return out[0] if len(out) == 1 else out


@kernel("FusedElementwise")
def fused_elementwise(inputs, attrs, backend):
    """A fused region's compiled loop (function/fuse.py) over the native inputs."""
    return attrs["kernel"](inputs["inputs"])
