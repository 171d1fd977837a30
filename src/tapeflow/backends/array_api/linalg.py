"""Array-API kernels of linear algebra: matmul (the factorizations, solves and einsum
fall back to NumPy/LAPACK)."""
from ..._core.dispatch import Alias
from ._kernel import xp_kernel


def _adjoint(xp, x):
    x = xp.matrix_transpose(x)
    return xp.conj(x) if xp.isdtype(x.dtype, "complex floating") else x


@xp_kernel("MatMul")
def matmul(inputs, attrs, b):
    xp, x, y = b.xp, inputs["a"], inputs["b"]
    if attrs["adjoint_a"]:
        x = _adjoint(xp, x)
    if attrs["adjoint_b"]:
        y = _adjoint(xp, y)
    return xp.matmul(x, y)


@xp_kernel("InplaceAddMatMul")
def inplace_add_matmul(inputs, attrs, b):
    """ref += sign * alpha * (op(a) @ op(b)) (ops/state.py's AssignAddMatMul)."""
    xp, ref = b.xp, inputs["ref"]
    product = matmul(inputs, attrs, b) * inputs["alpha"]
    ref[...] = xp.astype(ref + product if attrs["sign"] > 0 else ref - product, ref.dtype)
    return Alias("ref", ref.shape)


@xp_kernel("MatVec")
def matvec(inputs, attrs, b):
    xp, m, v = b.xp, inputs["a"], inputs["b"]
    if attrs["adjoint_a"]:
        m = _adjoint(xp, m)
    return xp.matmul(m, v[..., None])[..., 0]


@xp_kernel("MatrixBandPart")
def matrix_band_part(inputs, attrs, b):
    xp, x = b.xp, inputs["input"]
    lower, upper = attrs["num_lower"], attrs["num_upper"]
    m, n = x.shape[-2:]
    offset = xp.arange(n)[None, :] - xp.arange(m)[:, None]  # column minus row
    keep = xp.ones((m, n), dtype=xp.bool)
    if lower >= 0:
        keep = keep & (offset >= -lower)
    if upper >= 0:
        keep = keep & (offset <= upper)
    return xp.where(keep, x, xp.zeros_like(x))
