"""`keras.ops` linear algebra (Keras 3's `keras.src.ops.linalg`): `norm`, ...

Example:
    >>> float(tf.keras.ops.norm(tf.constant([3.0, 4.0])))
    5.0
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt, nest
from ...autodiff import forward as _forward
from ...ops import (array as _array, creation as _creation, indexing as _indexing,
                    linalg as _linalg, math as _math, reduction as _reduction)
from .operation import floatx_of, keras_op, promoted, tensor

__all__ = ["norm", "cholesky", "cholesky_inverse", "det", "eigh", "inv", "lstsq",
           "matrix_rank", "pinv", "qr", "solve", "solve_triangular", "svd"]


@keras_op("linalg", config=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - Keras's name
    """NumPy's `linalg.norm`: the 2-norm of vectors (or of the flattened tensor when
    `axis` is None and `ord` is None), the Frobenius norm of matrices; `ord` as NumPy's."""
    x = tensor(x)
    x = x if x.dtype.is_floating else _math.cast(x, floatx_of(x.dtype))
    if axis is None and ord is None:
        return _reduction.reduce_euclidean_norm(x, None, keepdims) if not keepdims else \
            _math.sqrt(_reduction.reduce_sum(_math.square(x), None, keepdims=True))
    if isinstance(axis, int):
        axis = [axis]
    if axis is None:
        axis = list(range(x.ndim))
    if len(axis) == 1:
        a = axis[0]
        if ord is None or ord == 2:
            return _math.sqrt(_reduction.reduce_sum(_math.square(x), a, keepdims))
        if ord == float("inf"):
            return _reduction.reduce_max(_math.abs(x), a, keepdims)
        if ord == -float("inf"):
            return _reduction.reduce_min(_math.abs(x), a, keepdims)
        if ord == 0:
            return _reduction.reduce_sum(_math.cast(_math.not_equal(x, 0), x.dtype), a,
                                         keepdims)
        if isinstance(ord, str):
            raise ValueError(f"keras.ops.norm: invalid ord {ord!r} for a vector norm")
        p = float(ord)
        return _math.pow(_reduction.reduce_sum(_math.pow(_math.abs(x), p), a, keepdims),
                         1.0 / p)
    if len(axis) != 2:
        raise ValueError(f"keras.ops.norm: axis must be None, an int or a pair, got {axis}")
    if ord in (None, "fro"):
        return _math.sqrt(_reduction.reduce_sum(_math.square(x), list(axis), keepdims))
    if ord in ("nuc", 2, -2):
        # by the singular values of the matrices of `axis`, moved last
        a, b = (ax % x.ndim for ax in axis)
        rest = [i for i in range(x.ndim) if i not in (a, b)]
        s = _linalg.svd(_array.transpose(x, rest + [a, b]), compute_uv=False)
        out = _reduction.reduce_sum(s, -1) if ord == "nuc" else \
            _reduction.reduce_max(s, -1) if ord == 2 else _reduction.reduce_min(s, -1)
        if keepdims:
            for ax in sorted((a, b)):
                out = _array.expand_dims(out, ax)
        return out
    return _linalg.norm(x, ord=ord, axis=tuple(axis), keepdims=keepdims)


def _floats(x):
    x = tensor(x)
    return x if x.dtype.is_floating or x.dtype.is_complex else \
        _math.cast(x, floatx_of(x.dtype))


def _square(name, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"keras.ops.{name}: expected square matrices (..., n, n), got "
                         f"shape {x.shape}")
    return x


def _t(x):
    return _linalg.adjoint(x)


@keras_op("linalg", config=("upper",))
def cholesky(x, upper=False):
    """The Cholesky factor of Hermitian positive-definite matrices: lower `L` with
    `L L^H = x` (or upper `U = L^H` when `upper`).

    Example:
        >>> tf.keras.ops.cholesky(tf.constant([[4.0, 2.0], [2.0, 2.0]])).numpy()
        array([[2., 0.],
               [1., 1.]], dtype=float32)
    """
    low = _linalg.cholesky(_square("cholesky", _floats(x)))
    return _t(low) if upper else low


@keras_op("linalg", config=("upper",))
def cholesky_inverse(x, upper=False):
    """The inverse of `A` from its Cholesky factor `x` (`A = x x^H`, or `x^H x` when
    `upper`)."""
    factor = _square("cholesky_inverse", _floats(x))
    low = _t(factor) if upper else factor
    eye = _creation.eye(low.shape[-1], batch_shape=list(low.shape[:-2]), dtype=low.dtype)
    return _linalg.cholesky_solve(low, eye)


@keras_op("linalg")
def det(x):
    """The determinants of square matrices."""
    return _linalg.det(_square("det", _floats(x)))


@keras_op("linalg")
def eigh(x):
    """The eigenvalues (ascending) and eigenvectors (columns) of Hermitian matrices."""
    w, v = _linalg.eigh(_square("eigh", _floats(x)))
    return w, v


@keras_op("linalg")
def inv(x):
    """The inverses of square matrices."""
    return _linalg.inv(_square("inv", _floats(x)))


@keras_op("linalg", config=("rcond",))
def lstsq(a, b, rcond=None):
    """The least-squares solution `x` of `a x = b` (minimum norm, by the
    pseudo-inverse; singular values below `rcond` times the largest are dropped)."""
    a, b = promoted(a, b)
    a, b = _floats(a), _floats(b)
    if rcond is None:
        rcond = float(np.finfo(a.dtype.as_numpy_dtype).eps) * max(a.shape[-2:])
    vector = b.ndim == a.ndim - 1
    if vector:
        b = _array.expand_dims(b, -1)
    x = _linalg.matmul(_linalg.pinv(a, rcond=rcond), b)
    return _array.squeeze(x, [-1]) if vector else x


@keras_op("linalg", config=("tol",))
def matrix_rank(x, tol=None):
    """The number of singular values above `tol` (default: the largest times
    max(m, n) times the dtype's epsilon), int32."""
    x = _floats(x)
    s = _linalg.svd(x, compute_uv=False)
    if tol is None:
        eps = float(np.finfo(x.dtype.as_numpy_dtype).eps)
        tol = _reduction.reduce_max(s, -1, keepdims=True) * (max(x.shape[-2:]) * eps)
    else:
        tol = tensor(tol, s.dtype)
    return _reduction.reduce_sum(_math.cast(_math.greater(s, tol), _dt.int32), -1)


@keras_op("linalg", config=("rcond",))
def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse (singular values below `rcond` times the
    largest dropped; Keras's default 1e-15)."""
    x = _floats(x)
    return _linalg.pinv(x, rcond=1e-15 if rcond is None else rcond)


@keras_op("linalg", config=("mode",))
def qr(x, mode="reduced"):
    """The QR decomposition `x = q r` ('reduced': q (m, k), r (k, n), k = min(m, n);
    'complete': q (m, m), r (m, n))."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"keras.ops.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = _linalg.qr(_floats(x), full_matrices=mode == "complete")
    return q, r


@keras_op("linalg")
def solve(a, b):
    """The solution `x` of `a x = b` for square `a` (`b` a matrix, or a vector)."""
    a, b = promoted(a, b)
    a, b = _floats(a), _floats(b)
    if b.ndim == a.ndim - 1:
        return _array.squeeze(_linalg.solve(a, _array.expand_dims(b, -1)), [-1])
    return _linalg.solve(a, b)


@keras_op("linalg", config=("lower",))
def solve_triangular(a, b, lower=False):
    """The solution `x` of `a x = b` for triangular `a` (upper unless `lower`)."""
    a, b = promoted(a, b)
    a, b = _floats(a), _floats(b)
    if b.ndim == a.ndim - 1:
        return _array.squeeze(_linalg.triangular_solve(a, _array.expand_dims(b, -1),
                                                       lower=lower), [-1])
    return _linalg.triangular_solve(a, b, lower=lower)


@keras_op("linalg", config=("full_matrices", "compute_uv"), name="SVD")
def svd(x, full_matrices=True, compute_uv=True):
    """The singular value decomposition `x = u diag(s) vh`: `(u, s, vh)`, or `s` alone
    without `compute_uv`."""
    x = _floats(x)
    if not compute_uv:
        return _linalg.svd(x, compute_uv=False)
    s, u, v = _linalg.svd(x, full_matrices=full_matrices)
    return u, s, _t(v)


@keras_op("linalg")
def lu_factor(x):
    """The LU factorization with partial pivoting of square matrices: `lu` holds the
    unit-lower `L` (below the diagonal) and `U`, and `pivots` the inverse of the row
    permutation `p` with `x[p] = L U` (as Keras's TensorFlow backend gives it)."""
    a = _square("lu_factor", _floats(x))
    n = a.shape[-1]
    batch = a.ndim - 2
    rows = _creation.range(n)
    perm = rows + _creation.zeros_like(_math.cast(a[..., 0], _dt.int32))
    for k in range(n - 1):
        pivot = _math.cast(_reduction.argmax(_math.abs(a[..., k:, k]), axis=-1),
                           _dt.int32) + k
        pivot = _array.expand_dims(pivot, -1)
        # swap rows k and pivot
        order = _indexing.where(_math.equal(rows, k), pivot,
                                _indexing.where(_math.equal(rows, pivot), k + 0 * pivot,
                                                rows + 0 * pivot))
        a = _indexing.gather(a, order, axis=batch, batch_dims=batch)
        perm = _indexing.gather(perm, order, axis=batch, batch_dims=batch)
        factors = a[..., k + 1:, k] / a[..., k:k + 1, k]
        below = _array.concat([a[..., k + 1:, :k], _array.expand_dims(factors, -1),
                               a[..., k + 1:, k + 1:] - _array.expand_dims(factors, -1)
                               * a[..., k:k + 1, k + 1:]], axis=-1)
        a = _array.concat([a[..., :k + 1, :], below], axis=-2)
    pivots = _math.cast(_array.argsort(perm, axis=-1), _dt.int32)
    return a, pivots


__all__.append("lu_factor")


def jvp(fun, primals, tangents, has_aux=False):
    """The value of `fun(*primals)` and its directional derivative along `tangents`
    (forward mode), and `fun`'s auxiliary output when `has_aux`.

    Example:
        >>> out, tangent = tf.keras.ops.jvp(lambda x: x * x, (tf.constant(3.0),),
        ...                                 (tf.constant(1.0),))
        >>> float(out), float(tangent)
        (9.0, 6.0)
    """
    flat_primals = [tensor(p) for p in nest.flatten(primals)]
    flat_tangents = [tensor(t, p.dtype) for t, p in zip(nest.flatten(tangents),
                                                        flat_primals)]
    primals = nest.pack_sequence_as(primals, flat_primals)
    with _forward.ForwardAccumulator(flat_primals, flat_tangents) as acc:
        result = fun(*primals)
        out, aux = result if has_aux else (result, None)
        flat_out = nest.flatten(out)
        flat_tangent_out = [acc.jvp(o) for o in flat_out]
    tangents_out = nest.pack_sequence_as(out, [
        t if t is not None else _creation.zeros_like(o)
        for t, o in zip(flat_tangent_out, flat_out)])
    return (out, tangents_out, aux) if has_aux else (out, tangents_out)


__all__.append("jvp")
