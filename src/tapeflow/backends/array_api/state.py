"""Array-API kernels of variable updates made in place (ops/state.py) and of the
custom_gradient / recompute_grad nodes of compiled graphs."""
from ..._core.dispatch import Alias
from ._kernel import xp_kernel


@xp_kernel("InplaceAdd")
def inplace_add(inputs, attrs, b):
    ref = inputs["ref"]
    ref[...] = b.xp.astype(ref + inputs["value"], ref.dtype)
    return Alias("ref", ref.shape)


@xp_kernel("InplaceSub")
def inplace_sub(inputs, attrs, b):
    ref = inputs["ref"]
    ref[...] = b.xp.astype(ref - inputs["value"], ref.dtype)
    return Alias("ref", ref.shape)


@xp_kernel("CustomGradient")
def custom_gradient_values(inputs, attrs, b):
    return list(inputs["values"])


@xp_kernel("RecomputeGrad")
def recompute_values(inputs, attrs, b):
    return list(inputs["values"])
