"""Facts about ops that the rule tables ask, one function per question: read from where
the ops declare them (the registry: `define_op`'s pointwise facts and batching rules),
except the one below that no declaration states yet (which gradients are masks).
"""
from __future__ import annotations

from ..._core import registry as _reg
from ...ops._batching import batch_elementwise


def _pointwise(op: str):
    """(operand names, attribute names) of `op`'s declared elementwise facts
    (`define_op(..., pointwise=...)`), or None."""
    facts = _reg.POINTWISE.get(op)
    return None if facts is None else (tuple(facts.inputs or ()), tuple(facts.attrs))


def unary_elementwise(op: str) -> bool:
    """Whether `op` is an elementwise function of its one input `x` with no attributes (an
    activation, when its output keeps the input's dtype): one with declared elementwise
    facts over `x`, or one whose batching rule is the elementwise one."""
    found = _pointwise(op)
    if found is not None:
        return found == (("x",), ())
    op_def = _reg.OPS.get(op)
    return (op_def is not None and list(op_def.inputs) == ["x"] and not op_def.stateful
            and _reg.BATCHING.get(op) is batch_elementwise)


# Gradient ops of an activation that pass dy where a predicate of the activation's output
# y holds and 0 elsewhere ((dy, y) -> dy * [p(y)]): multiplying by 0 or 1 commutes with
# the sums of a pooling's gradient, so the mask can be applied before it, exactly.
_MASKS = frozenset(("ReluGrad", "Relu6Grad"))


def output_mask_gradient(op: str) -> bool:
    """Whether `op(dy, y)` is `dy` masked by a predicate of y (see `_MASKS`)."""
    return op in _MASKS
