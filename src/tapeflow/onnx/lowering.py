"""ONNX lowerings that do not live with their ops' definitions.

Each op's ONNX rule is part of its definition (`defop(..., onnx=rule)` in ops/*.py, with
the shared constructors in ops/_onnx.py). What stays here:

- If and While (defined in function/control_flow.py): their rules build ONNX subgraphs
  with this package's proto module, which the function floor cannot import.
- TensorFlow's other names of ops tapeflow defines once (AddV2, BatchMatMulV2, Pack...):
  no tapeflow op has these names; each lowers by its tapeflow op's rule.
"""
from __future__ import annotations

import numpy as np

from .._core.registry import ONNX, register_onnx
from . import proto


def _scalar_bool(e, name: str, shape) -> str:
    return e.squeeze(name, [0]) if tuple(shape) == (1,) else name


def _while(e, node):
    """tf.while_loop as an ONNX Loop: the condition is evaluated once before the loop and
    again at the end of each body (ONNX's body returns the next condition); the iteration
    count TensorFlow's While also returns is one more loop-carried value."""
    cond, body = node.attrs["cond"], node.attrs["body"]
    init, args = e.input(node, "loop_vars"), e.input(node, "args")
    limit = e.input(node, "maximum_iterations")
    trip = e.add1("Cast", [limit[0]], to=proto.INT64) if limit else ""
    if cond is not None:
        c0 = e.inline(cond, init + args)[0]
        c0 = _scalar_bool(e, c0, cond.outputs[0]._shape)
    else:
        c0 = e.const(np.asarray(True))
    specs = [(t.dtype.name, None) for t in node.outputs[:-1]] + [("int32", ())]

    def build():
        it, c_in = e.fresh("iteration"), e.fresh("cond_in")
        carried = [e.fresh("loop_var") for _ in specs]
        outs = e.inline(body, carried[:-1] + args)
        count = e.add1("Add", [carried[-1], e.const(np.asarray(1, np.int32))])
        if cond is not None:
            c_out = e.inline(cond, outs + args)[0]
            c_out = _scalar_bool(e, c_out, cond.outputs[0]._shape)
        else:
            c_out = c_in
        results = [e.fresh("cond_out")] + [e.fresh("loop_var_next") for _ in specs]
        for src, dst in zip([c_out] + outs + [count], results):
            e.add("Identity", [src], [dst])  # body outputs: distinct names of their own
        ins = [proto.value_info(it, "int64", ()), proto.value_info(c_in, "bool", ())]
        ins += [proto.value_info(n, d, s) for n, (d, s) in zip(carried, specs)]
        outs_info = [proto.value_info(results[0], "bool", ())]
        outs_info += [proto.value_info(n, d, s) for n, (d, s) in zip(results[1:], specs)]
        return ins, outs_info

    graph = proto.GraphAttr(e.subgraph("while_body", build))
    e.add("Loop", [trip, c0] + init + [e.const(np.asarray(0, np.int32))], e.outputs(node),
          body=graph)


def _if(e, node):
    """tf.cond as an ONNX If whose branches read the outer values by name. Only the
    first `n_out` outputs are the cond's results (the rest are what its gradient saves,
    which an exported forward function does not use)."""
    n_out = int(node.attrs["n_out"])
    args = e.input(node, "args")
    pred = _scalar_bool(e, e.input(node, "pred"), node.inputs["pred"]._shape)
    outs = e.outputs(node)[:n_out]
    types = [t.dtype.name for t in node.outputs[:n_out]]

    def branch(cf, label):
        def build():
            results = e.inline(cf, args)[:n_out]
            names = [e.fresh(f"{label}_out") for _ in results]
            for src, dst in zip(results, names):
                e.add("Identity", [src], [dst])
            return [], [proto.value_info(n, d, None) for n, d in zip(names, types)]
        return proto.GraphAttr(e.subgraph(label, build))

    e.add("If", [pred], outs, then_branch=branch(node.attrs["then_branch"], "then"),
          else_branch=branch(node.attrs["else_branch"], "else"))
    for t in node.outputs[n_out:]:  # no ONNX value: a use raises "used before computed"
        del e.names[t.id]


register_onnx("While", _while)
register_onnx("If", _if)

# TensorFlow's name -> the tapeflow op whose rule lowers it (tapeflow's __init__ has
# defined every op, with its rule, before it imports this package)
_ALIASES = {"AddV2": "Add", "BatchMatMul": "MatMul", "BatchMatMulV2": "MatMul",
            "ConcatV2": "Concat", "Pack": "Stack", "ReverseV2": "Reverse",
            "Select": "SelectV2", "SplitV": "Split", "TopKV2": "TopK", "Unpack": "Unstack"}
for _alias, _op in _ALIASES.items():
    register_onnx(_alias, ONNX[_op])
# every op with an ONNX lowering once tapeflow's ops and this module are loaded
LOWERED: tuple = tuple(sorted(ONNX))
