"""Tangent helpers of JVP rules: batched tangents (`ForwardAccumulator(use_batch=True)`)
carry leading batch dimensions that broadcasting ops must keep apart from the primal's."""
from __future__ import annotations

from .._core import prims
from .._core.tensor import Tensor

def batch_dims(t: Tensor, primal) -> int:
    """Leading batch dimensions of a (possibly batched) tangent `t` of `primal` (a tensor
    or its rank): 0 for an ordinary tangent, 1 under `ForwardAccumulator(use_batch=True)`."""
    return len(t._shape) - (primal if isinstance(primal, int) else len(primal._shape))


def align_tangent(t: Tensor, primal, rank: int) -> Tensor:
    """A batched tangent of `primal` with unit axes inserted after its batch dimensions,
    so that the primal's axes right-align under `rank` output axes when it broadcasts.

    The one helper every JVP rule of a broadcasting op uses for batched tangents.
    Example: a tangent [B, 3] of a [3] operand meeting a [2, 3] one becomes [B, 1, 3].
    """
    nb = batch_dims(t, primal)
    prank = len(t._shape) - nb
    if nb and rank > prank:
        s = t._shape
        return prims.reshape(t, shape=s[:nb] + (1,) * (rank - prank) + s[nb:])
    return t


