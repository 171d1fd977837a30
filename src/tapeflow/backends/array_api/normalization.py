"""Array-API kernels of fused batch normalization (FusedBatchNorm, FusedBatchNormGrad:
ops/nn.py), written against the standard: the statistics over every axis but `axis`."""
import math

from ._kernel import xp_kernel


def _layout(x, axis: int) -> tuple:
    """(the reduced axes, the shape a per-feature vector broadcasts in, elements per
    feature)."""
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = tuple(d if i == axis else 1 for i, d in enumerate(x.shape))
    c = x.shape[axis]
    return axes, shape, (math.prod(x.shape) // c if c else 0)


@xp_kernel("FusedBatchNorm")
def fused_batch_norm(inputs, attrs, b):
    """(y, mean, biased variance), y = (x - mean) scale / sqrt(variance + epsilon) +
    offset."""
    xp, x, axis = b.xp, inputs["x"], attrs["axis"]
    axes, shape, _ = _layout(x, axis)
    mean = xp.mean(x, axis=axes)
    centred = x - xp.reshape(mean, shape)
    variance = xp.mean(centred * centred, axis=axes)
    k = inputs["scale"] / xp.sqrt(variance + attrs["epsilon"])
    y = centred * xp.reshape(k, shape) + xp.reshape(inputs["offset"], shape)
    return [y, mean, variance]


@xp_kernel("FusedBatchNormGrad")
def fused_batch_norm_grad(inputs, attrs, b):
    """(dx, dscale, doffset): with xc = x - mean and inv = 1 / sqrt(variance + epsilon),
    dx = scale inv (dy - mean(dy)) - xc scale inv^3 mean(dy xc)."""
    xp, dy, x, axis = b.xp, inputs["dy"], inputs["x"], attrs["axis"]
    axes, shape, n = _layout(x, axis)
    inv = 1 / xp.sqrt(inputs["variance"] + attrs["epsilon"])
    xc = x - xp.reshape(inputs["mean"], shape)
    d_offset = xp.sum(dy, axis=axes)
    s_gxc = xp.sum(dy * xc, axis=axes)
    u = inputs["scale"] * inv
    w = u * inv * inv * s_gxc / max(n, 1)
    dx = (dy - xp.reshape(d_offset / max(n, 1), shape)) * xp.reshape(u, shape) \
        - xc * xp.reshape(w, shape)
    return [dx, s_gxc * inv, d_offset]
