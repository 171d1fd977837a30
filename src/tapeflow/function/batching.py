"""The batching transform of `vectorized_map`: `fn` traced once for one element, its nodes
run again on tensors with a leading batch axis through each op's batching rule (an
`eval_graph` whose `apply` batches).

Every tensor of the trace is either *batched* (it depends on the element: one more leading
axis than traced) or not (captures, constants, variables). A node none of whose inputs is
batched runs as traced; otherwise the rule its op declared (`defop(..., batch=...)`, kept
in `registry.BATCHING`; shorthands in ops/_batching.py) adapts the call. A node whose op
has no rule raises NoBatchingRule, and vectorized_map falls back to map_fn.
"""
from __future__ import annotations

from .._core import nest, registry as _reg
from .._core.dispatch import run_kernel
from .._core.errors import NoBatchingRule
from .._core.tensor import TensorSpec
from ..ops._batching import broadcast_batch
from .control_flow import _Sub
from .graph import late_attrs
from .interpret import eval_graph


def batch_function(fn, elems, flat: list, n):
    """`fn` mapped over the first axis of `flat` (the leaves of `elems`) in one pass."""
    specs = [TensorSpec(t._shape[1:], t.dtype) for t in flat]
    sub = _Sub(lambda *phs: fn(nest.pack_sequence_as(elems, list(phs))
                               if nest.is_nested(elems) else phs[0]),
               specs, "vectorized_map_fn")
    graph = sub.graph
    # every value is (tensor, batched): batched ones carry the leading batch axis
    env = {ph.id: (t, True) for ph, t in zip(sub.params, flat)}
    for ext, ph in graph.captures:
        env[ph.id] = (ext, False)

    def batched(node, ins: dict) -> list:
        if node.dims:
            raise NoBatchingRule(node.op, "has attributes that depend on run-time shapes")
        if late_attrs(node.attrs):  # random draws: one per element, as the loop makes
            raise NoBatchingRule(node.op, "draws random numbers")
        values, flags = {}, {}
        for k, v in ins.items():
            if type(v) is list:
                pairs = [m if type(m) is tuple else (m, False) for m in v]
                values[k], flags[k] = [p[0] for p in pairs], [p[1] for p in pairs]
            else:
                values[k], flags[k] = v if type(v) is tuple else (v, False)  # (a variable)
        any_batched = any(any(f) if type(f) is list else f for f in flags.values())
        if not any_batched:
            out = run_kernel(node.op, values, node.attrs)
        else:
            if node.stateful:
                raise NoBatchingRule(node.op, "is stateful")
            rule = _reg.BATCHING.get(node.op)
            if rule is None:
                raise NoBatchingRule(node.op, "has no batching rule")
            out = rule(node.op, values, node.attrs, flags, n)
        outs = out if isinstance(out, list) else ([] if out is None else [out])
        return [(o, any_batched) for o in outs]

    env = eval_graph(graph, env, batched)
    leaves = []
    for o in sub.flat:
        if o is None:
            leaves.append(None)
            continue
        value, b = env[o.id]
        leaves.append(value if b else broadcast_batch(value, n))
    return nest.pack_sequence_as(sub.result, leaves) if nest.is_nested(sub.result) \
        else leaves[0]
