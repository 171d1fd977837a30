"""NumPy kernels of variable updates made in place (see ops/state.py)."""
import numpy as np

from ..._core.dispatch import Alias
from ._kernel import kernel


@kernel("InplaceAdd")
def _inplace_add(i, a, b):
    np.add(i["ref"], i["value"], out=i["ref"], casting="unsafe")
    return Alias("ref", i["ref"].shape)


@kernel("InplaceSub")
def _inplace_sub(i, a, b):
    np.subtract(i["ref"], i["value"], out=i["ref"], casting="unsafe")
    return Alias("ref", i["ref"].shape)


# custom_gradient and recompute_grad in a compiled graph: their implementation's results
# ("values") were traced as nodes of their own; the op passes them on
@kernel("CustomGradient")
def _custom_gradient_values(i, a, b):
    return list(i["values"])


@kernel("RecomputeGrad")
def _recompute_values(i, a, b):
    return list(i["values"])
