"""Array-API kernels of graph control flow: If and While run their branches' and body's
programs compiled for this backend (function/control_flow.py), so a traced loop stays on
the device. WhileGrad falls back: its NumPy kernel runs the programs on the host."""
from ..numpy.control_flow import _limit
from ._kernel import xp_kernel


def _placeholder(b, spec):
    """A stand-in for an output the taken branch does not compute (only the other
    branch's gradient, which does not run, would read it): one zero, broadcast."""
    shape, dtype = spec
    return b.xp.broadcast_to(b.xp.zeros((), dtype=b.dtype(dtype)), tuple(d or 0 for d in shape))


@xp_kernel("If")
def if_(inputs, attrs, b):
    take = bool(inputs["pred"])
    branch = attrs["then_branch" if take else "else_branch"]
    outs = list(branch._program(b)(list(inputs["args"])))
    n_out = attrs["n_out"]
    if take:
        outs += [_placeholder(b, s) for s in attrs["else_pad"]]
    else:
        outs[n_out:n_out] = [_placeholder(b, s) for s in attrs["then_pad"]]
    if not n_out:  # branches without outputs: the node returns the predicate
        return b.xp.asarray(take)
    return outs[0] if len(outs) == 1 else outs


@xp_kernel("While")
def while_(inputs, attrs, b):
    cond = attrs["cond"]._program(b) if attrs["cond"] is not None else None
    body = attrs["body"]._program(b)
    xs, args = list(inputs["loop_vars"]), list(inputs["args"])
    limit = _limit(inputs)
    n = 0
    while (limit is None or n < limit) and (cond is None or bool(cond(xs + args)[0])):
        xs = list(body(xs + args))
        n += 1
    return xs + [b.xp.asarray(n, dtype=b.xp.int32)]
