"""Array-API kernels of linear algebra: matmul (the factorizations, solves and einsum
fall back to NumPy/LAPACK)."""
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
