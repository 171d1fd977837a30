"""Linear algebra ops: public functions with their shape, VJP and JVP rules.

Matrices live in the last two axes; leading axes are batch axes and broadcast like NumPy.
Decompositions whose input must be symmetric/Hermitian (cholesky, eigh, logdet) read the
lower triangle, like TensorFlow. The derivatives of cholesky and logdet are those of
f((A + A^H) / 2), i.e. they assume symmetric perturbations (gradients come out symmetric,
as TensorFlow's Cholesky gradient); eigh's are those of the op as defined, which reads
only the lower triangle (as TensorFlow's SelfAdjointEigV2 gradient, and finite
differences): its gradient is zero above the diagonal.
"""
from __future__ import annotations

import functools
import numbers
import string
from collections import Counter

import numpy as np

from .._core import dtypes as _dt, prims
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError, UnimplementedError
from .._core.shape import broadcast_shapes, dims_of, dims_product, is_dim, is_symbolic
from .._core.tensor import Tensor
from .._core.variable import Variable
from ._args import (ArgumentTypeError, as_int, binary_operands, choice_arg, int_arg, int_list,
                    normalize_axis, show, to_tensor)
from . import _onnx
from ._define import composite, defop
from ._tangents import align_tangent, batch_dims
from .array import argsort, expand_dims, reshape, squeeze, stack, transpose
from ._batching import batch_broadcasting, batch_elementwise
from .creation import ones_like, zeros_like
from .indexing import gather, where
from .math import abs as _abs, cast, ceil, conj, greater, log, maximum, pow as _pow, real, sqrt, \
    square, subtract
from .reduction import add_n, reduce_max, reduce_sum

__all__ = ["matmul", "matvec", "tensordot", "einsum", "inv", "det", "slogdet", "solve",
           "cholesky", "cholesky_solve", "triangular_solve", "qr", "eigh", "eigvalsh", "svd",
           "norm", "trace", "logdet", "diag", "diag_part", "matrix_transpose", "adjoint",
           "band_part"]

_LETTERS = string.ascii_letters
_LAPACK = frozenset({_dt.float32, _dt.float64, _dt.complex64, _dt.complex128})


# --------------------------------------------------------------------------- helpers


def _operands(op: str, a, b, na: str = "a", nb: str = "b") -> tuple[Tensor, Tensor]:
    """Both operands as tensors of one dtype (Python values adapt; tensors must agree)."""
    if isinstance(a, (Tensor, Variable)):
        a = to_tensor(a, None, op, na)
        b = to_tensor(b, a.dtype, op, nb)
    else:
        b = to_tensor(b, None, op, nb) if isinstance(b, (Tensor, Variable)) else b
        a = to_tensor(a, b.dtype if type(b) is Tensor else None, op, na)
        b = to_tensor(b, a.dtype, op, nb)
    if a.dtype is not b.dtype:
        raise InvalidArgumentError(
            f"{op}: {na} and {nb} must have the same dtype, got {na}: {describe(a)} and "
            f"{nb}: {describe(b)}; cast one with tf.cast")
    return a, b


def _check_matrix(op: str, shape, arg: str, square: bool = False) -> None:
    """Raise unless `shape` is a (batch of) matrix, square if asked; None dims pass."""
    if len(shape) < 2:
        raise InvalidArgumentError(
            f"{op}: {arg} must have rank >= 2 (a matrix or a batch of matrices), got shape "
            f"{list(shape)}")
    if square and None not in shape[-2:] and shape[-1] != shape[-2]:
        raise InvalidArgumentError(
            f"{op}: {arg} must be a square matrix (or a batch of them), got shape {list(shape)}")


def _matrix(op: str, x, arg: str = "input", square: bool = True) -> Tensor:
    """A float32/float64/complex (LAPACK) matrix argument, validated."""
    x = to_tensor(x, None, op, arg)
    if x.dtype not in _LAPACK:
        raise InvalidArgumentError(
            f"{op}: {arg} must be float32, float64, complex64 or complex128, got {describe(x)}")
    _check_matrix(op, x._shape, arg, square)
    return x


def _same_dtype(op: str, dtypes: dict) -> None:
    ds = list(dtypes.items())
    for k, d in ds[1:]:
        if d is not ds[0][1]:
            raise InvalidArgumentError(
                f"{op}: inputs must have one dtype, got {ds[0][0]}: {ds[0][1].name} and "
                f"{k}: {d.name}")


def _mm(x: Tensor, y: Tensor, adj_x: bool = False, adj_y: bool = False) -> Tensor:
    """x @ y with conjugate-transpose flags (plain transposes for real dtypes): the one call
    of the MatMul kernel, matmul's and the rules'. Kept this thin rather than going through
    `matmul` because every dense layer's backward pass runs it twice."""
    return run_kernel("MatMul", {"a": x, "b": y},
                      _MM_ATTRS[adj_x, adj_y, len(y._shape) == 2 < len(x._shape)])


@functools.lru_cache(maxsize=None)
def _swap_perm(rank: int) -> tuple:
    return tuple(range(rank - 2)) + (rank - 1, rank - 2)


# Rules below build their tensors from these prims-based helpers, not from the public ops
# of other families (array, creation, math): those validate and normalise arguments the
# rules already have in canonical form (issue #15). Each does what the public op it stands
# for does with such arguments, real dtypes included.


def _conj(x: Tensor) -> Tensor:
    """conj(x): x itself for real dtypes, as the public conj."""
    return prims.conj(x) if x.dtype.is_complex else x


def _real(x: Tensor) -> Tensor:
    """real(x): x itself for real dtypes, as the public real."""
    return prims.real(x) if x.dtype.is_complex else x


def _imag(x: Tensor) -> Tensor:
    """imag(x): zeros for real dtypes, as the public imag."""
    return prims.imag(x) if x.dtype.is_complex else prims.zeros_like(x)


def _adj(x: Tensor) -> Tensor:
    """adjoint(x) of a tensor of rank >= 2 (a plain transpose for real dtypes)."""
    out = prims.transpose(x, perm=_swap_perm(len(x._shape)))
    return prims.conj(out) if x.dtype.is_complex else out


def _as_row(v: Tensor) -> Tensor:
    """v[..., None, :]: vectors as 1 x N matrices (expand_dims(v, -2))."""
    return prims.expand_dims(v, axis=(len(v._shape) - 1,))


def _as_col(v: Tensor) -> Tensor:
    """v[..., :, None]: vectors as N x 1 matrices (expand_dims(v, -1))."""
    return prims.expand_dims(v, axis=(len(v._shape),))


def _eye_like(d: Tensor) -> Tensor:
    """A (batch of) identity matrices sized by the last axis of the vector(s) `d`."""
    return diag(prims.ones_like(d))


def _gap_reciprocal(e: Tensor) -> Tensor:
    """F with F[..., i, j] = 1 / (e_j - e_i) off the diagonal and 0 on it."""
    eye_ = _eye_like(e)
    return 1.0 / (_as_row(e) - _as_col(e) + eye_) - eye_


def _real_only(op: str, x: Tensor, what: str) -> None:
    if x.dtype.is_complex:
        raise UnimplementedError(f"{op}: the {what} is implemented for real dtypes only, "
                                 f"got {describe(x)}")


def _phi(x: Tensor) -> Tensor:
    """The lower triangle of x with its diagonal halved."""
    return band_part(x, -1, 0) - 0.5 * band_part(x, 0, 0)


def _sym(x: Tensor) -> Tensor:
    return 0.5 * (x + _adj(x))


def _may_exceed(a, b) -> bool:
    """Whether dimension a may be larger than dimension b (True when either is unknown):
    terms that vanish unless a > b are skipped only when they are known to vanish."""
    return a is None or b is None or a > b


def _fold(x: Tensor, y: Tensor):
    """x [..., M] and y [..., N] (one batch) as (P, M) and (P, N) matrices, or None when a
    -1 in the reshape would be ambiguous or unknown (M or N zero or not known)."""
    if not (x._shape[-1] and y._shape[-1]):
        return None
    return (prims.reshape(x, shape=(-1, x._shape[-1])),
            prims.reshape(y, shape=(-1, y._shape[-1])))


# --------------------------------------------------------------------------- matmul

# shared_b: b is one matrix used by every matrix of the batched a (x @ W in a dense layer);
# b's gradient is then a single product over the folded batch (see _matmul_vjp_b).
_MM_ATTRS = {(p, q, r): {"adjoint_a": p, "adjoint_b": q, "shared_b": r}
             for p in (False, True) for q in (False, True) for r in (False, True)}


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None) -> Tensor:
    """Matrix product of the last two axes, batch axes broadcasting (rank >= 2).

    Example: `tf.matmul(tf.ones([2, 3]), tf.ones([3, 4])).shape` -> TensorShape([2, 4]).
    """
    if type(a) is not Tensor or type(b) is not Tensor or a.dtype is not b.dtype:
        a, b = _operands("MatMul", a, b)
    if len(a._shape) < 2 or len(b._shape) < 2 or a.dtype.is_bool:
        _matmul_check(a, b)
    if transpose_a or transpose_b or adjoint_a or adjoint_b:
        return _matmul_flags(a, b, transpose_a, transpose_b, adjoint_a, adjoint_b)
    return _mm(a, b)


def _matmul_check(a, b):
    if a.dtype.is_bool:
        raise InvalidArgumentError(f"MatMul: bool operands are not supported, got a: "
                                   f"{describe(a)}, b: {describe(b)}")
    raise InvalidArgumentError(
        f"MatMul: both operands must have rank >= 2, got a: {describe(a)} and b: "
        f"{describe(b)}; use tf.linalg.matvec for a vector or tf.tensordot for other ranks")


def _matmul_flags(a, b, transpose_a, transpose_b, adjoint_a, adjoint_b):
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise InvalidArgumentError("MatMul: only one of transpose_a and adjoint_a (and of "
                                   "transpose_b and adjoint_b) can be True")
    if a.dtype.is_complex:  # a plain transpose is no adjoint there: materialize it
        if transpose_a:
            a, transpose_a = matrix_transpose(a), False
        if transpose_b:
            b, transpose_b = matrix_transpose(b), False
    return _mm(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b))


def _matmul_shape(shapes, dtypes, attrs):
    sa, sb = shapes["a"], shapes["b"]
    _check_matrix("MatMul", sa, "a")
    _check_matrix("MatMul", sb, "b")
    _same_dtype("MatMul", dtypes)
    m, k = (sa[-1], sa[-2]) if attrs["adjoint_a"] else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if attrs["adjoint_b"] else (sb[-2], sb[-1])
    if k is not None and k2 is not None and k != k2:
        raise InvalidArgumentError(
            f"MatMul: inner dimensions do not match: a has shape {list(sa)}"
            f"{' (adjointed)' if attrs['adjoint_a'] else ''} and b has shape {list(sb)}"
            f"{' (adjointed)' if attrs['adjoint_b'] else ''}: {k} != {k2}")
    batch = broadcast_shapes("MatMul", sa[:-2], sb[:-2])
    return [(batch + (m, n), dtypes["a"])]


# C = op(A) op(B): dA and dB are themselves products with adjoint flags, nothing materialized.
def _matmul_vjp_a(g, b, *, adjoint_a, adjoint_b, **_):
    return _mm(b, g, adjoint_b, True) if adjoint_a else _mm(g, b, False, not adjoint_b)


def _matmul_vjp_b(g, a, *, adjoint_a, adjoint_b, shared_b=False):
    folded = _fold(a, g) if shared_b and not adjoint_a else None
    if folded is not None:
        # One (k x rows) @ (rows x n) product instead of a batch of k x n products summed
        # afterwards.
        a, g = folded
    return _mm(g, a, True, adjoint_a) if adjoint_b else _mm(a, g, not adjoint_a, False)


def _matmul_jvp_a(t, a, b, *, adjoint_a, adjoint_b, **_):
    return _mm(align_tangent(t, a, len(b._shape)), b, adjoint_a, adjoint_b)


def _matmul_jvp_b(t, a, b, *, adjoint_a, adjoint_b, **_):
    return _mm(a, align_tangent(t, b, len(a._shape)), adjoint_a, adjoint_b)


def _onnx_matmul(e, node):
    a, b = e.input(node, "a"), e.input(node, "b")
    ta = node.attrs.get("adjoint_a", False) or node.attrs.get("transpose_a", False)
    tb = node.attrs.get("adjoint_b", False) or node.attrs.get("transpose_b", False)
    if ta:
        a = _onnx.swap_last(e, a, len(node.inputs["a"]._shape))
    if tb:
        b = _onnx.swap_last(e, b, len(node.inputs["b"]._shape))
    e.add("MatMul", [a, b], e.outputs(node))


defop("MatMul", ["a", "b"], shape=_matmul_shape,
      vjp={"a": _matmul_vjp_a, "b": _matmul_vjp_b},
      jvp={"a": _matmul_jvp_a, "b": _matmul_jvp_b}, batch=batch_broadcasting, onnx=_onnx_matmul)


_MV_ATTRS = {False: {"adjoint_a": False}, True: {"adjoint_a": True}}


def _mv(a: Tensor, b: Tensor, adjoint_a: bool = False) -> Tensor:
    """op(a) @ b for (batches of) vectors b, op the conjugate transpose if `adjoint_a`:
    the one call of the MatVec kernel, kept thin like `_mm`."""
    return run_kernel("MatVec", {"a": a, "b": b}, _MV_ATTRS[adjoint_a])


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None) -> Tensor:
    """Matrix-vector product over the last axes: a [..., M, N], b [..., N] -> [..., M].

    Batch axes broadcast like NumPy. Example: `tf.linalg.matvec(tf.eye(2), [1.0, 2.0])`
    -> [1.0, 2.0].
    """
    if type(a) is not Tensor or type(b) is not Tensor or a.dtype is not b.dtype:
        a, b = _operands("MatVec", a, b)
    if len(a._shape) < 2 or len(b._shape) < 1 or a.dtype.is_bool:
        _matvec_check(a, b)
    if transpose_a:
        if adjoint_a:
            raise InvalidArgumentError("MatVec: only one of transpose_a and adjoint_a can be "
                                       "True")
        if a.dtype.is_complex:  # a plain transpose is no adjoint there: materialize it
            a = matrix_transpose(a)
        else:
            adjoint_a = True
    return _mv(a, b, bool(adjoint_a))


def _matvec_check(a, b):
    if len(a._shape) < 2:
        raise InvalidArgumentError(f"MatVec: a must have rank >= 2 (a matrix or a batch of "
                                   f"matrices), got {describe(a)}")
    if len(b._shape) < 1:
        raise InvalidArgumentError(f"MatVec: b must have rank >= 1, got {describe(b)}")
    raise InvalidArgumentError(f"MatVec: bool operands are not supported, got a: "
                               f"{describe(a)}, b: {describe(b)}")


def _matvec_shape(shapes, dtypes, attrs):
    sa, sb = shapes["a"], shapes["b"]
    _check_matrix("MatVec", sa, "a")
    if len(sb) < 1:
        raise InvalidArgumentError(f"MatVec: b must have rank >= 1, got shape {list(sb)}")
    _same_dtype("MatVec", dtypes)
    m, k = (sa[-1], sa[-2]) if attrs["adjoint_a"] else (sa[-2], sa[-1])
    if k is not None and sb[-1] is not None and k != sb[-1]:
        raise InvalidArgumentError(
            f"MatVec: inner dimensions do not match: a has shape {list(sa)}"
            f"{' (adjointed)' if attrs['adjoint_a'] else ''} and b has shape {list(sb)}: "
            f"{k} != {sb[-1]}")
    return [(broadcast_shapes("MatVec", sa[:-2], sb[:-1]) + (m,), dtypes["a"])]


def _outer(x: Tensor, y: Tensor) -> Tensor:
    """x y^H over the last axes: [..., M] and [..., N] -> [..., M, N] (batch broadcasting)."""
    return _as_col(x) * _as_row(_conj(y))


# c = op(A) b: dA = g b^H (or b g^H when A enters adjointed), db = op(A)^H g.
def _matvec_vjp_a(g, b, a_shape, *, adjoint_a):
    x, y = (b, g) if adjoint_a else (g, b)
    folded = _fold(x, y) if len(a_shape) == 2 and len(b._shape) > 1 else None
    if folded is not None:
        # One matrix for a batch of vectors: one (M x P) @ (P x N) product instead of a
        # batch of outer products summed afterwards; X^T conj(Y) = conj(X)^H conj(Y).
        return _mm(_conj(folded[0]), _conj(folded[1]), True, False)
    return _outer(x, y)


defop("MatVec", ["a", "b"], shape=_matvec_shape,
      vjp={"a": _matvec_vjp_a, "b": lambda g, a, *, adjoint_a: _mv(a, g, not adjoint_a)},
      jvp={"a": lambda t, a, b, *, adjoint_a:
           _mv(align_tangent(t, a, len(b._shape) + 1), b, adjoint_a),
           "b": lambda t, a, b, *, adjoint_a:
           _mv(a, align_tangent(t, b, len(a._shape) - 1), adjoint_a)})


# --------------------------------------------------------------------------- einsum


@functools.lru_cache(maxsize=2048)
def _einsum_equation(equation: str, ranks: tuple) -> str:
    """The equation with spaces removed, the output made explicit and every '...' replaced
    by explicit letters (right-aligned, so operands broadcast like NumPy)."""
    def bad(why):
        return InvalidArgumentError(f"Einsum: invalid equation {equation!r}: {why}")

    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise bad("more than one '->'")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise InvalidArgumentError(
            f"Einsum: equation {equation!r} names {len(terms)} operand(s) but "
            f"{len(ranks)} input(s) were given")
    for term in terms + ([out] if out is not None else []):
        rest = term.replace("...", "", 1)
        if any(c not in _LETTERS for c in rest):
            raise bad(f"subscripts {term!r} may hold letters and one '...' only")
    ell_ranks = []
    for i, (term, r) in enumerate(zip(terms, ranks)):
        named = len(term) - 3 if "..." in term else len(term)
        if ("..." in term and r < named) or ("..." not in term and r != named):
            raise InvalidArgumentError(
                f"Einsum: operand {i} has rank {r} but its subscripts {term!r} in "
                f"{equation!r} name {named} axes")
        ell_ranks.append(r - named if "..." in term else 0)
    n_ell = max(ell_ranks, default=0)
    used = set(eq)
    fresh = [c for c in _LETTERS if c not in used]
    if len(fresh) < n_ell:
        raise bad("too many dimensions for the available subscript letters")
    ell = "".join(fresh[:n_ell])
    new_terms = [t.replace("...", ell[n_ell - n:]) for t, n in zip(terms, ell_ranks)]
    if out is None:
        counts = Counter(c for t in terms for c in t if c != ".")
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    elif "..." in out:
        out = out.replace("...", ell)
    elif n_ell:
        raise bad("the inputs have '...' dimensions but the output has no '...'")
    if len(set(out)) != len(out):
        raise bad(f"output subscripts {out!r} repeat a letter")
    missing = set(out) - set("".join(new_terms))
    if missing:
        raise bad(f"output letters {sorted(missing)} appear in no input")
    return ",".join(new_terms) + "->" + out


def _split(equation: str) -> tuple[list, str]:
    lhs, out = equation.split("->")
    return lhs.split(","), out


def einsum(equation, *inputs, **kwargs) -> Tensor:
    """Einstein summation over the operands, with '...' broadcasting and implicit output.

    Example: `tf.einsum("ij,jk->ik", a, b)` is `tf.matmul(a, b)`.
    """
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not isinstance(equation, str):
        raise InvalidArgumentError(f"Einsum: equation must be a string, got {equation!r}")
    if not inputs:
        raise InvalidArgumentError("Einsum: at least one input is needed")
    xs = [to_tensor(x, None, "Einsum", f"inputs[{i}]") if isinstance(x, (Tensor, Variable))
          else x for i, x in enumerate(inputs)]
    hint = next((x.dtype for x in xs if type(x) is Tensor), None)
    xs = [x if type(x) is Tensor else to_tensor(x, hint, "Einsum", f"inputs[{i}]")
          for i, x in enumerate(xs)]
    for i, x in enumerate(xs):
        if x.dtype is not xs[0].dtype:
            raise InvalidArgumentError(
                f"Einsum: all inputs must have one dtype, got inputs[0]: {describe(xs[0])} "
                f"and inputs[{i}]: {describe(x)}")
    if xs[0].dtype.is_bool:
        raise InvalidArgumentError(f"Einsum: bool inputs are not supported, got "
                                   f"{describe(xs[0])}")
    eq = _einsum_equation(equation, tuple(len(x._shape) for x in xs))
    _check_subscript_sizes(equation, eq, xs)
    return run_kernel("Einsum", {"inputs": xs}, {"equation": eq})


def _check_subscript_sizes(equation: str, expanded: str, xs: list) -> None:
    """Each letter of the user's equation has one size wherever it appears (TensorFlow's
    rule); only the letters standing for '...' broadcast (size 1 against n). NumPy would
    broadcast any letter of size 1, giving a result whose gradient has the wrong shape."""
    named = set(equation)
    seen = {}
    for i, (term, x) in enumerate(zip(_split(expanded)[0], xs)):
        for c, d in zip(term, x._shape):
            if c not in named or d is None:
                continue
            j, size = seen.setdefault(c, (i, d))
            if size != d:
                raise InvalidArgumentError(
                    f"Einsum: subscript {c!r} has size {size} in inputs[{j}] "
                    f"({describe(xs[j])}) but {d} in inputs[{i}] ({describe(x)}) in "
                    f"{equation!r}: a letter must have one size in every input (only '...' "
                    f"dimensions broadcast)")


def _einsum_expanded(equation: str, *xs: Tensor) -> Tensor:
    """Einsum of an equation in the form the rules write ('...' already expanded into
    letters, so a size-1 axis of them may broadcast), skipping the public checks."""
    return run_kernel("Einsum", {"inputs": list(xs)}, {"equation": equation})


def _einsum_shape(shapes, dtypes, attrs):
    terms, out = _split(attrs["equation"])
    xs, ds = shapes["inputs"], dtypes["inputs"]
    if len(terms) != len(xs):
        raise InvalidArgumentError(f"Einsum: equation {attrs['equation']!r} names "
                                   f"{len(terms)} operands, got {len(xs)}")
    for d in ds[1:]:
        if d is not ds[0]:
            raise InvalidArgumentError(f"Einsum: all inputs must have one dtype, got "
                                       f"{[x.name for x in ds]}")
    big, unknown = {}, set()
    for i, (term, s) in enumerate(zip(terms, xs)):
        if len(term) != len(s):
            raise InvalidArgumentError(f"Einsum: operand {i} has shape {list(s)} but its "
                                       f"subscripts are {term!r}")
        for c, d in zip(term, s):
            if d is None:
                unknown.add(c)
            elif d != 1:
                if big.setdefault(c, d) != d:
                    raise InvalidArgumentError(
                        f"Einsum: subscript {c!r} has sizes {big[c]} and {d} in "
                        f"{attrs['equation']!r} (input shapes {[list(x) for x in xs]})")
    shape = tuple(big.get(c, None if c in unknown else 1) for c in out)
    return [(shape, ds[0])]


@functools.lru_cache(maxsize=2048)
def _einsum_grad_plan(equation: str, k: int):
    """How operand k's gradient is built: (the einsum equation giving it from g and the
    other operands over the letters they share with operand k, or None when that is g;
    the equation spreading that onto the diagonals of repeated letters, with the axes of
    operand k sizing its identity matrices, or None; the axes of letters found nowhere
    else, which are inserted and broadcast)."""
    terms, out = _split(equation)
    term = terms[k]
    others = terms[:k] + terms[k + 1:]
    avail = set(out).union(*others)
    keep = "".join(c for c in dict.fromkeys(term) if c in avail)
    grad_eq = None if not others and out == keep else ",".join([out] + others) + "->" + keep
    full, eyes, eye_axes = [], [], []
    fresh = iter(c for c in _LETTERS if c not in equation)
    for i, c in enumerate(term):
        if c in full:  # a repeated letter: the gradient lives on the diagonal
            f = next(fresh)
            eyes.append(c + f)
            eye_axes.append(i)
            c = f
        full.append(c)
    present = set(keep).union(*eyes)
    diag = None
    if eyes:
        diag = (",".join([keep] + eyes) + "->" + "".join(c for c in full if c in present),
                tuple(eye_axes))
    return grad_eq, diag, tuple(i for i, c in enumerate(full) if c not in present)


def _eye(n, dtype) -> Tensor:
    """The n x n identity (n an int or a traced run-time size), as eye(n, dtype=dtype)."""
    return prims.eye(num_rows=n, num_columns=n, batch_shape=(), dtype=dtype)


def _einsum_vjp(g, inputs, *, equation):
    grads = []
    for k, x in enumerate(inputs):
        grad_eq, diag, lonely = _einsum_grad_plan(equation, k)
        r = g if grad_eq is None else \
            _einsum_expanded(grad_eq, g, *[_conj(y) for j, y in enumerate(inputs) if j != k])
        if diag is not None:
            eq, axes = diag
            r = _einsum_expanded(eq, r, *[_eye(dims_of(x)[i], g.dtype) for i in axes])
        if lonely:  # letters summed away inside operand k alone: broadcast back
            # `lonely` is ascending: its entries are the output positions of the new axes
            r = prims.expand_dims(r, axis=lonely) * prims.ones_like(x)
        grads.append(r)
    return grads


@functools.lru_cache(maxsize=2048)
def _batched_equation(equation: str, k: int, nb: int) -> str:
    """The equation with `nb` new leading letters on operand k and on the output."""
    if not nb:
        return equation
    terms, out = _split(equation)
    lead = "".join([c for c in _LETTERS if c not in equation][:nb])
    terms[k] = lead + terms[k]
    return ",".join(terms) + "->" + lead + out


def _einsum_jvp(t, inputs, *, equation):
    total = None
    for k, tk in enumerate(t):
        if tk is not None:
            ops = list(inputs)
            ops[k] = tk
            c = _einsum_expanded(_batched_equation(equation, k, batch_dims(tk, inputs[k])),
                                 *ops)
            total = c if total is None else total + c
    return total


def _onnx_einsum(e, node):
    e.add("Einsum", e.input(node, "inputs"), e.outputs(node),
          equation=str(node.attrs["equation"]).replace(" ", ""))


defop("Einsum", ["inputs"], list_inputs=("inputs",), shape=_einsum_shape,
      vjp={"inputs": _einsum_vjp}, jvp={"inputs": _einsum_jvp}, onnx=_onnx_einsum)


def tensordot(a, b, axes, name=None) -> Tensor:
    """Sum of products over `axes` of a and b (an int N: a's last N with b's first N).

    Example: `tf.tensordot(tf.ones([2, 3]), tf.ones([3, 4]), 1).shape` -> [2, 4].
    """
    a, b = _operands("tensordot", a, b)
    if a.dtype.is_bool:
        raise InvalidArgumentError(f"tensordot: bool operands are not supported, got a: "
                                   f"{describe(a)}, b: {describe(b)}")
    ra, rb = len(a._shape), len(b._shape)
    n = as_int(axes)
    if isinstance(axes, (Tensor, Variable, np.ndarray)) and n is None:
        if axes.dtype.kind not in "iu" if isinstance(axes, np.ndarray) else \
                not axes.dtype.is_integer:
            raise ArgumentTypeError(f"tensordot: axes must be an int or a pair of axis lists, "
                                    f"got {show(axes)}")
        axes = np.asarray(axes if isinstance(axes, np.ndarray) else axes.numpy()).tolist()
    if n is not None:
        if not 0 <= n <= min(ra, rb):
            raise InvalidArgumentError(
                f"tensordot: axes={n} must be in [0, min(rank(a), rank(b))] for a: "
                f"{describe(a)} and b: {describe(b)}")
        ax_a, ax_b = list(range(ra - n, ra)), list(range(n))
    else:
        if not isinstance(axes, (list, tuple)) or len(axes) != 2:
            raise ArgumentTypeError(f"tensordot: axes must be an int or a pair of axis lists, "
                                    f"got {show(axes)}")
        ax_a = int_list("tensordot", axes[0], "axes[0]")
        ax_b = int_list("tensordot", axes[1], "axes[1]")
        if len(ax_a) != len(ax_b):
            raise InvalidArgumentError(f"tensordot: axes {axes!r} pair {len(ax_a)} axes of a "
                                       f"with {len(ax_b)} axes of b")
        ax_a = [normalize_axis("tensordot", x, ra, "axes[0]") for x in ax_a]
        ax_b = [normalize_axis("tensordot", x, rb, "axes[1]") for x in ax_b]
        if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
            raise InvalidArgumentError(f"tensordot: axes {axes!r} repeat an axis")
    for i, j in zip(ax_a, ax_b):
        da, db = a._shape[i], b._shape[j]
        if da is not None and db is not None and da != db:
            raise InvalidArgumentError(
                f"tensordot: contracted axis {i} of a (size {da}) does not match axis {j} "
                f"of b (size {db}); a: {describe(a)}, b: {describe(b)}")
    free_a = [i for i in range(ra) if i not in ax_a]
    free_b = [j for j in range(rb) if j not in ax_b]
    sa, sb = a._shape, b._shape
    if None in sa or None in sb:  # unknown sizes: let einsum work the shapes out
        la = list(_LETTERS[:ra])
        lb = list(_LETTERS[ra:ra + rb])
        for i, j in zip(ax_a, ax_b):
            lb[j] = la[i]
        eq = "".join(la) + "," + "".join(lb) + "->" + "".join(
            [la[i] for i in free_a] + [lb[j] for j in free_b])
        return einsum(eq, a, b)
    # As one matrix(-vector) product (BLAS, and a VJP that keeps only the operand it needs):
    # free axes of a by contracted axes, contracted axes by free axes of b.
    out_a = tuple(sa[i] for i in free_a)
    out_b = tuple(sb[j] for j in free_b)
    k = int(np.prod([sa[i] for i in ax_a], dtype=np.int64))
    m = int(np.prod(out_a, dtype=np.int64))
    n = int(np.prod(out_b, dtype=np.int64))
    perm_a = free_a + ax_a
    if free_a and not free_b:  # A b: a matrix-vector product
        b = _permuted(b, ax_b, (k,))
        if ax_a + free_a == list(range(ra)) and not a.dtype.is_complex:
            return _reshaped(_mv(_reshaped(a, (k, m)), b, True), out_a)
        return _reshaped(_mv(_permuted(a, perm_a, (m, k)), b), out_a)
    if not free_a and free_b:  # B^T a: b's contracted axes become the rows
        a = _permuted(a, ax_a, (k,))
        if ax_b + free_b == list(range(rb)) and not a.dtype.is_complex:
            return _reshaped(_mv(_reshaped(b, (k, n)), a, True), out_b)
        return _reshaped(_mv(_permuted(b, free_b + ax_b, (n, k)), a), out_b)
    if not free_a:  # both fully contracted: a (1 x k) matrix times a vector
        a, b = _permuted(a, perm_a, (1, k)), _permuted(b, ax_b, (k,))
        return _reshaped(_mv(a, b), ())
    out = matmul(_permuted(a, perm_a, (m, k)), _permuted(b, ax_b + free_b, (k, n)))
    return _reshaped(out, out_a + out_b)


def _reshaped(x: Tensor, shape: tuple) -> Tensor:
    """x with static `shape`, with no kernel when it has that shape already."""
    return x if x._shape == shape else reshape(x, shape)


def _permuted(x: Tensor, perm: list, shape: tuple) -> Tensor:
    """x with its axes in order `perm`, then reshaped to `shape` (skipping no-op steps)."""
    if perm != list(range(len(x._shape))):
        x = transpose(x, perm)
    return _reshaped(x, shape)


# --------------------------------------------------------------------------- transposes


def matrix_transpose(a, name="matrix_transpose", conjugate=False) -> Tensor:
    """Transpose of the last two axes (conjugated too if `conjugate`).

    Example: `tf.linalg.matrix_transpose(tf.zeros([5, 2, 3])).shape` -> [5, 3, 2].
    """
    x = a if type(a) is Tensor else to_tensor(a, None, "MatrixTranspose", "a")
    _check_matrix("MatrixTranspose", x._shape, "a")
    return transpose(x, _swap_perm(len(x._shape)), conjugate=conjugate)


def adjoint(matrix, name=None) -> Tensor:
    """Conjugate transpose of the last two axes. Example: `tf.linalg.adjoint(x)`."""
    x = matrix if type(matrix) is Tensor else to_tensor(matrix, None, "adjoint", "matrix")
    _check_matrix("adjoint", x._shape, "matrix")
    return _adj(x)


# --------------------------------------------------------------------------- diagonals

_DIAG0 = {"k": 0, "num_rows": -1, "num_cols": -1, "padding_value": 0}


_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _int_attr(op, v, arg):
    return v if is_dim(v) else int_arg(op, v, arg)  # a Dim: a traced run-time size


def _diag_dims(op, n, k, rows, cols):
    if rows == -1 and cols == -1:
        return (None, None) if n is None else (n + abs(k), n + abs(k))
    if n is None or rows is None or cols is None or is_dim(rows) or is_dim(cols):
        # sizes known when the graph runs (None here, Dims in attributes): the kernel checks
        def size(v, least):
            if v == -1:
                return None if n is None else least
            return None if is_dim(v) else v
        return size(rows, n and n + max(-k, 0)), size(cols, n and n + max(k, 0))
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    rows = min_rows if rows == -1 else rows
    cols = min_cols if cols == -1 else cols
    if rows < min_rows or cols < min_cols or (rows != min_rows and cols != min_cols):
        raise InvalidArgumentError(
            f"{op}: a diagonal of length {n} at k={k} does not fit a {rows}x{cols} matrix "
            f"(it needs num_rows={min_rows} or num_cols={min_cols})")
    return rows, cols


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT") -> Tensor:
    """(A batch of) matrices with `diagonal` on their k-th diagonal, `padding_value` elsewhere.

    Example: `tf.linalg.diag([1.0, 2.0])` -> [[1, 0], [0, 2]].
    """
    d = to_tensor(diagonal, None, "MatrixDiag", "diagonal")
    # only one diagonal is supported, so align changes nothing; it must still be valid
    choice_arg("MatrixDiag", align, "align", _ALIGNS)
    if len(d._shape) < 1:
        raise InvalidArgumentError(f"MatrixDiag: diagonal must have rank >= 1, got "
                                   f"{describe(d)}")
    k = _int_attr("MatrixDiag", k, "k (a single diagonal)")
    rows = _int_attr("MatrixDiag", num_rows, "num_rows")
    cols = _int_attr("MatrixDiag", num_cols, "num_cols")
    pad = padding_value.numpy().item() if isinstance(padding_value, Tensor) else padding_value
    if not isinstance(pad, numbers.Number):
        raise InvalidArgumentError(f"MatrixDiag: padding_value must be a number, got {pad!r}")
    if (k, rows, cols, pad) == (0, -1, -1, 0):
        attrs = _DIAG0
    else:
        _diag_dims("MatrixDiag", d._shape[-1], k, rows, cols)
        attrs = {"k": k, "num_rows": rows, "num_cols": cols, "padding_value": pad}
    return run_kernel("MatrixDiag", {"diagonal": d}, attrs)


def _diag_shape(shapes, dtypes, attrs):
    s = shapes["diagonal"]
    if len(s) < 1:
        raise InvalidArgumentError(f"MatrixDiag: diagonal must have rank >= 1, got {list(s)}")
    rows, cols = _diag_dims("MatrixDiag", s[-1], attrs["k"], attrs["num_rows"],
                            attrs["num_cols"])
    return [(tuple(s[:-1]) + (rows, cols), dtypes["diagonal"])]


# The padding is constant: it has no tangent.
defop("MatrixDiag", ["diagonal"], shape=_diag_shape,
      vjp={"diagonal": lambda g, *, k, **_: diag_part(g, k=k)},
      jvp={"diagonal": lambda t, *, k, num_rows, num_cols, **_:
           diag(t, k=k, num_rows=num_rows, num_cols=num_cols)})


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT") -> Tensor:
    """The k-th diagonal of (a batch of) matrices, which need not be square.

    Example: `tf.linalg.diag_part([[1.0, 2.0], [3.0, 4.0]])` -> [1.0, 4.0].
    """
    x = to_tensor(input, None, "MatrixDiagPart", "input")
    choice_arg("MatrixDiagPart", align, "align", _ALIGNS)  # one diagonal: no effect
    _check_matrix("MatrixDiagPart", x._shape, "input")
    k = _int_attr("MatrixDiagPart", k, "k (a single diagonal)")
    m, n = x._shape[-2:]
    if not _diag_in_range(m, n, k):
        raise InvalidArgumentError(
            f"MatrixDiagPart: k={k} is out of range for input {describe(x)} "
            f"(valid: ({-m}, {n}), or 0)")
    return run_kernel("MatrixDiagPart", {"input": x}, {"k": k})


def _diag_in_range(m, n, k) -> bool:
    """TensorFlow's bound on k: -m < k < n, and k=0 always (then an empty matrix has an
    empty diagonal, as in NumPy); unknown dimensions admit any k."""
    return k == 0 or m is None or n is None or -m < k < n


def _diag_part_shape(shapes, dtypes, attrs):
    s, k = shapes["input"], attrs["k"]
    _check_matrix("MatrixDiagPart", s, "input")
    m, n = s[-2:]
    if not _diag_in_range(m, n, k):
        raise InvalidArgumentError(f"MatrixDiagPart: k={k} is out of range for shape "
                                   f"{list(s)}")
    length = None if m is None or n is None else min(m - max(-k, 0), n - max(k, 0))
    return [(tuple(s[:-2]) + (length,), dtypes["input"])]


# The VJP reads only the input's shape: the matrix size is a kernel attribute.
defop("MatrixDiagPart", ["input"], shape=_diag_part_shape,
      vjp={"input": lambda g, input_shape, *, k:
           diag(g, k=k, num_rows=input_shape[-2], num_cols=input_shape[-1])},
      jvp={"input": lambda t, *, k: diag_part(t, k=k)})


def band_part(input, num_lower, num_upper, name=None) -> Tensor:
    """Keep the band of `num_lower` sub- and `num_upper` superdiagonals (-1: all), zero the
    rest. Example: `tf.linalg.band_part(x, -1, 0)` is the lower triangle of x."""
    x = to_tensor(input, None, "MatrixBandPart", "input")
    _check_matrix("MatrixBandPart", x._shape, "input")
    lo = _int_attr("MatrixBandPart", num_lower, "num_lower")
    up = _int_attr("MatrixBandPart", num_upper, "num_upper")
    if lo < -1 or up < -1:
        raise InvalidArgumentError(f"MatrixBandPart: num_lower and num_upper must be >= -1, "
                                   f"got {lo} and {up}")
    return run_kernel("MatrixBandPart", {"input": x}, {"num_lower": lo, "num_upper": up})


def _band_shape(shapes, dtypes, attrs):
    _check_matrix("MatrixBandPart", shapes["input"], "input")
    return [(shapes["input"], dtypes["input"])]


def _onnx_band_part(e, node):
    """matrix_band_part with static matrix sizes: a constant band mask."""
    rows, cols = node.inputs["input"]._shape[-2:]
    if rows is None or cols is None:
        _onnx.unsupported(e, node, "unknown matrix sizes")
    lower, upper = int(node.attrs["num_lower"]), int(node.attrs["num_upper"])
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    dt = node.outputs[0].dtype.name
    e.add("Where", [e.const(keep), e.input(node, "input"), e.const(np.zeros((), dt))],
          e.outputs(node))


defop("MatrixBandPart", ["input"], shape=_band_shape,
      vjp={"input": lambda g, *, num_lower, num_upper: band_part(g, num_lower, num_upper)},
      jvp={"input": lambda t, *, num_lower, num_upper: band_part(t, num_lower, num_upper)},
      batch=batch_elementwise, onnx=_onnx_band_part)


@composite("trace")  # diag_part's and reduce_sum's checks, with trace named first
def trace(x, name=None) -> Tensor:
    """Sum of the main diagonal of (a batch of) matrices. Example: `tf.linalg.trace(eye)`."""
    return reduce_sum(diag_part(x), axis=-1)


# --------------------------------------------------------------------------- inverse, det


def _square_shape(op):
    def rule(shapes, dtypes, attrs):
        _check_matrix(op, shapes["input"], "input", square=True)
        return [(shapes["input"], dtypes["input"])]
    return rule


def _batch_shape(op):
    def rule(shapes, dtypes, attrs):
        _check_matrix(op, shapes["input"], "input", square=True)
        return [(tuple(shapes["input"][:-2]), dtypes["input"])]
    return rule


def inv(input, adjoint=False, name=None) -> Tensor:
    """Inverse of (a batch of) square matrices (of their adjoints if `adjoint`).

    Example: `tf.linalg.inv([[2.0, 0.0], [0.0, 4.0]])` -> [[0.5, 0], [0, 0.25]].
    """
    x = _matrix("MatrixInverse", input)
    out = run_kernel("MatrixInverse", {"input": x})
    return matrix_transpose(out, conjugate=True) if adjoint else out


defop("MatrixInverse", ["input"], shape=_square_shape("MatrixInverse"),
      vjp={"input": lambda g, ans: -_mm(ans, _mm(g, ans, False, True), True, False)},
      jvp={"input": lambda t, ans: -_mm(ans, _mm(t, ans))}, batch=batch_elementwise)


def det(input, name=None) -> Tensor:
    """Determinant of (a batch of) square matrices. Example: `tf.linalg.det(tf.eye(3))` -> 1."""
    return run_kernel("MatrixDeterminant", {"input": _matrix("MatrixDeterminant", input)})


def _trace_inv_times(x, t):
    """tr(x^-1 t) over the last two axes (t may carry leading tangent-batch dims)."""
    return einsum("...ij,...ji->...", inv(x), t)


def _times_inv_adjoint(c, x):
    """c[..., None, None] * x^-H: the gradient of a function of det(x) with coefficient c."""
    r = len(c._shape)
    return prims.expand_dims(c, axis=(r, r + 1)) * _adj(inv(x))


defop("MatrixDeterminant", ["input"], shape=_batch_shape("MatrixDeterminant"),
      vjp={"input": lambda g, input, ans: _times_inv_adjoint(g * _conj(ans), input)},
      jvp={"input": lambda t, input, ans: ans * _trace_inv_times(input, t)})


def slogdet(input, name=None) -> tuple[Tensor, Tensor]:
    """(sign, log|det|) of (a batch of) square matrices; stable where det over/underflows.

    Example: `sign, logabs = tf.linalg.slogdet(x)`; det = sign * exp(logabs).
    """
    x = _matrix("LogMatrixDeterminant", input)
    sign, logabs = run_kernel("LogMatrixDeterminant", {"input": x})
    return sign, logabs


def _slogdet_shape(shapes, dtypes, attrs):
    _check_matrix("LogMatrixDeterminant", shapes["input"], "input", square=True)
    out = (tuple(shapes["input"][:-2]), dtypes["input"])
    return [out, out]


def _slogdet_vjp(g, input, ans):
    g_sign, g_log = g
    if not input.dtype.is_complex:
        if g_log is None:
            return None  # the sign is piecewise constant
        coef = g_log
    else:
        re = _real(g_log) if g_log is not None else None
        # The sign moves by i sign Im(tr(A^-1 dA)): its cotangent adds -Im(conj(g_sign) sign)
        # to the imaginary part of the coefficient of A^-H.
        im = -_imag(_conj(g_sign) * ans[0]) if g_sign is not None else None
        if re is None and im is None:
            return None
        coef = prims.complex(re if re is not None else prims.zeros_like(im),
                             im if im is not None else prims.zeros_like(re))
    return _times_inv_adjoint(coef, input)


def _slogdet_jvp(t, input, ans):
    tau = _trace_inv_times(input, t)
    if not input.dtype.is_complex:
        return [None, tau]
    re, im = _real(tau), _imag(tau)
    zero = prims.zeros_like(re)
    return [ans[0] * prims.complex(zero, im), prims.complex(re, zero)]


defop("LogMatrixDeterminant", ["input"], num_outputs=2, shape=_slogdet_shape,
      vjp={"input": _slogdet_vjp}, jvp={"input": _slogdet_jvp})


@composite("logdet")  # cholesky's checks, with logdet named first
def logdet(matrix, name=None) -> Tensor:
    """log(det(matrix)) of Hermitian positive definite matrices, via cholesky.

    Example: `tf.linalg.logdet(2.0 * tf.eye(3, dtype=tf.float64))` -> 3 log 2.
    """
    return 2.0 * reduce_sum(log(real(diag_part(cholesky(matrix)))), axis=-1)


# --------------------------------------------------------------------------- solves


def solve(matrix, rhs, adjoint=False, name=None) -> Tensor:
    """X with matrix @ X = rhs (adjoint(matrix) @ X = rhs if `adjoint`); batch axes
    broadcast. Example: `tf.linalg.solve(2.0 * tf.eye(2), [[1.0], [2.0]])` -> [[0.5], [1]].
    """
    a, b = _operands("MatrixSolve", matrix, rhs, "matrix", "rhs")
    _matrix("MatrixSolve", a, "matrix")
    _check_matrix("MatrixSolve", b._shape, "rhs")
    return run_kernel("MatrixSolve", {"matrix": a, "rhs": b}, {"adjoint": bool(adjoint)})


def _solve_shape(op):
    def rule(shapes, dtypes, attrs):
        sa, sb = shapes["matrix"], shapes["rhs"]
        _check_matrix(op, sa, "matrix", square=True)
        _check_matrix(op, sb, "rhs")
        _same_dtype(op, dtypes)
        if sa[-1] is not None and sb[-2] is not None and sa[-1] != sb[-2]:
            raise InvalidArgumentError(
                f"{op}: matrix has shape {list(sa)} but rhs has shape {list(sb)}: the rows "
                f"of rhs must match the matrix size {sa[-1]}")
        batch = broadcast_shapes(op, sa[:-2], sb[:-2])
        return [(batch + tuple(sb[-2:]), dtypes["rhs"])]
    return rule


# X = op(A)^-1 B: dB = op(A)^-H g, and dA = -dB X^H (or -X dB^H when A enters adjointed).
def _solve_vjp(g, matrix, ans, *, adjoint):
    grad_rhs = solve(matrix, g, adjoint=not adjoint)
    grad_matrix = -_mm(ans, grad_rhs, False, True) if adjoint else \
        -_mm(grad_rhs, ans, False, True)
    return {"matrix": grad_matrix, "rhs": grad_rhs}


def _solve_jvp_matrix(t, matrix, ans, *, adjoint):
    t = align_tangent(t, matrix, len(ans._shape))
    return -solve(matrix, _mm(t, ans, adjoint, False), adjoint=adjoint)


def _solve_jvp_rhs(t, matrix, rhs, *, adjoint):
    return solve(matrix, align_tangent(t, rhs, len(matrix._shape)), adjoint=adjoint)


defop("MatrixSolve", ["matrix", "rhs"], shape=_solve_shape("MatrixSolve"), vjp=_solve_vjp,
      jvp={"matrix": _solve_jvp_matrix, "rhs": _solve_jvp_rhs})


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None) -> Tensor:
    """X with T @ X = rhs for the lower (or upper) triangle T of `matrix` (adjoint(T) if
    `adjoint`); the other triangle is ignored.

    Example: `tf.linalg.triangular_solve([[2.0, 0.0], [1.0, 1.0]], [[2.0], [2.0]])` -> [[1], [1]].
    """
    a, b = _operands("MatrixTriangularSolve", matrix, rhs, "matrix", "rhs")
    _matrix("MatrixTriangularSolve", a, "matrix")
    _check_matrix("MatrixTriangularSolve", b._shape, "rhs")
    return run_kernel("MatrixTriangularSolve", {"matrix": a, "rhs": b},
                      {"lower": bool(lower), "adjoint": bool(adjoint)})


def _tri(x, lower):
    return band_part(x, -1, 0) if lower else band_part(x, 0, -1)


def _trisolve_vjp(g, matrix, ans, *, lower, adjoint):
    grad_rhs = triangular_solve(matrix, g, lower, not adjoint)
    grad_matrix = -_mm(ans, grad_rhs, False, True) if adjoint else \
        -_mm(grad_rhs, ans, False, True)
    return {"matrix": _tri(grad_matrix, lower), "rhs": grad_rhs}


def _trisolve_jvp_matrix(t, matrix, ans, *, lower, adjoint):
    t = _tri(align_tangent(t, matrix, len(ans._shape)), lower)
    return -triangular_solve(matrix, _mm(t, ans, adjoint, False), lower, adjoint)


def _trisolve_jvp_rhs(t, matrix, rhs, *, lower, adjoint):
    return triangular_solve(matrix, align_tangent(t, rhs, len(matrix._shape)), lower, adjoint)


defop("MatrixTriangularSolve", ["matrix", "rhs"], shape=_solve_shape("MatrixTriangularSolve"),
      vjp=_trisolve_vjp, jvp={"matrix": _trisolve_jvp_matrix, "rhs": _trisolve_jvp_rhs})


@composite("cholesky_solve")  # the solves report a row mismatch of chol and rhs
def cholesky_solve(chol, rhs, name=None) -> Tensor:
    """X with A @ X = rhs given chol = cholesky(A). Example:
    `tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b)`."""
    chol, rhs = _operands("cholesky_solve", chol, rhs, "chol", "rhs")
    _matrix("cholesky_solve", chol, "chol")
    _check_matrix("cholesky_solve", rhs._shape, "rhs")
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


# --------------------------------------------------------------------------- decompositions


def cholesky(input, name=None) -> Tensor:
    """Lower-triangular L with L @ adjoint(L) = input (Hermitian positive definite; only the
    lower triangle is read). Example: `tf.linalg.cholesky(4.0 * tf.eye(2))` -> 2 * eye.
    """
    return run_kernel("Cholesky", {"input": _matrix("Cholesky", input)})


def _cholesky_vjp(g, ans):
    # Murray (2016): S = L^-H Phi(L^H G) L^-1, gradient (S + S^H) / 2.
    y = triangular_solve(ans, _phi(_mm(ans, g, True, False)), adjoint=True)  # L^-H P
    return _sym(triangular_solve(ans, _adj(y), adjoint=True))                # S^H = L^-H Y^H


def _cholesky_jvp(t, ans):
    # dL = L Phi(L^-1 dA L^-H) for the symmetric part dA of the tangent.
    y = triangular_solve(ans, _sym(t))               # L^-1 dA
    w = triangular_solve(ans, _adj(y))               # L^-1 dA L^-H
    return _mm(ans, _phi(w))


defop("Cholesky", ["input"], shape=_square_shape("Cholesky"),
      vjp={"input": _cholesky_vjp}, jvp={"input": _cholesky_jvp}, batch=batch_elementwise)


def qr(input, full_matrices=False, name=None) -> tuple[Tensor, Tensor]:
    """(q, r) with input = q @ r, q orthonormal columns, r upper triangular.

    Derivatives exist for real dtypes, except with full_matrices=True for matrices with
    more rows than columns (q's extra columns are not unique), as in TensorFlow.
    Example: `q, r = tf.linalg.qr(tf.random.normal([4, 3]))`.
    """
    x = _matrix("Qr", input, square=False)
    q, r = run_kernel("Qr", {"input": x}, {"full_matrices": bool(full_matrices)})
    return q, r


def _qr_shape(shapes, dtypes, attrs):
    s = shapes["input"]
    _check_matrix("Qr", s, "input")
    m, n = s[-2:]
    k = None if m is None or n is None else min(m, n)
    batch = tuple(s[:-2])
    if attrs["full_matrices"]:
        return [(batch + (m, m), dtypes["input"]), (batch + (m, n), dtypes["input"])]
    return [(batch + (m, k), dtypes["input"]), (batch + (k, n), dtypes["input"])]


def _qr_dims(q, r, full_matrices, what):
    """(rows, columns) of the input, once the derivative is known to be implemented."""
    _real_only("Qr", q, what)
    m, n = q._shape[-2], r._shape[-1]
    if m is None or n is None:  # which formula applies (tall or wide) depends on them
        raise UnimplementedError(
            f"Qr: the {what} needs static matrix dimensions (as TensorFlow's QrGrad), got "
            f"q: {describe(q)}, r: {describe(r)} in a traced function; give the "
            "input_signature the matrix dims")
    if full_matrices and m > n:
        raise UnimplementedError(
            f"Qr: the {what} with full_matrices=True is implemented for matrices with rows "
            f"<= columns only, got q: {describe(q)}, r: {describe(r)}")
    return m, n


def _right_solve_adj(x, r):
    """x @ R^-H for upper-triangular R."""
    return _adj(triangular_solve(r, _adj(x), lower=False))


def _qr_grad_tall(q, r, gq, gr):
    """The gradient for rows >= columns (TensorFlow's QrGrad for square and deep matrices,
    real case): Q (gR + tril(M) R^-H) + (gQ - Q Q^H gQ) R^-H, M = P - P^H for
    P = Q^H gQ + R gR^H."""
    qdq = _mm(q, gq, True, False) if gq is not None else None
    rdr = _mm(r, gr, False, True) if gr is not None else None
    m = None
    for part in (qdq, rdr):
        if part is not None:
            part = part - _adj(part)
            m = part if m is None else m + part
    inner = _right_solve_adj(band_part(m, -1, 0), r)
    grad = _mm(q, inner if gr is None else gr + inner)
    if gq is not None and _may_exceed(q._shape[-2], r._shape[-1]):  # 0 for a square Q
        grad = grad + _right_solve_adj(gq - _mm(q, qdq), r)
    return grad


def _split_cols(x: Tensor, m: int) -> list:
    """x's first m columns and the rest (split(x, [m, -1], axis=-1)); the rest's size is
    resolved here when known, as split does."""
    ax, d = len(x._shape) - 1, x._shape[-1]
    return prims.split(x, axis=ax, sizes=(m, -1 if d is None else d - m))


def _concat_cols(x: Tensor, y: Tensor) -> Tensor:
    """x and y side by side (concat([x, y], -1)); `sizes`, the run-time column counts, lets
    Concat's VJP split the cotangent."""
    ax = len(x._shape) - 1
    return prims.concat([x, y], axis=ax, sizes=(dims_of(x)[ax], dims_of(y)[ax]))


def _qr_vjp(g, ans, *, full_matrices):
    q, r = ans
    gq, gr = g
    m, n = _qr_dims(q, r, full_matrices, "gradient")
    if m >= n:
        return _qr_grad_tall(q, r, gq, gr)
    # Wide: A = [X | Y] with X = Q U (square) and Y = Q V. V = Q^H Y gives Y the gradient
    # Q gV, and its dependence on Q adds Y gV^H = Q V gV^H to the cotangent of Q.
    u, v = _split_cols(r, m)
    if gr is None:
        return _concat_cols(_qr_grad_tall(q, u, gq, None), prims.zeros_like(v))
    gu, gv = _split_cols(gr, m)
    gq_x = _mm(q, _mm(v, gv, False, True))
    gq_x = gq_x if gq is None else gq + gq_x
    return _concat_cols(_qr_grad_tall(q, u, gq_x, gu), _mm(q, gv))


def _qr_jvp_tall(t, q, r):
    x = _adj(triangular_solve(r, _adj(t), lower=False, adjoint=True))        # dA R^-1
    c = _mm(q, x, True, False)                                               # Q^H dA R^-1
    low = band_part(c, -1, 0) - band_part(c, 0, 0)
    c_minus_omega = c - low + _adj(low)                                      # upper triangular
    return [x - _mm(q, c_minus_omega), _mm(c_minus_omega, r)]


def _qr_jvp(t, ans, *, full_matrices):
    q, r = ans
    m, n = _qr_dims(q, r, full_matrices, "JVP")
    if m >= n:
        return _qr_jvp_tall(t, q, r)
    # Wide, as in the VJP: dV = dQ^H Y + Q^H dY = Q^H (dY - dQ V), Q^H dQ being skew.
    u, v = _split_cols(r, m)
    tx, ty = _split_cols(t, m)
    dq, du = _qr_jvp_tall(tx, q, u)
    return [dq, _concat_cols(du, _mm(q, ty - _mm(dq, v), True, False))]


defop("Qr", ["input"], num_outputs=2, shape=_qr_shape,
      vjp={"input": _qr_vjp}, jvp={"input": _qr_jvp})


def eigh(tensor, name=None) -> tuple[Tensor, Tensor]:
    """(e, v): eigenvalues (ascending) and eigenvectors (columns) of Hermitian matrices;
    only the lower triangle is read. Derivatives assume distinct eigenvalues.

    Example: `e, v = tf.linalg.eigh(a)`; a @ v = v * e[..., None, :].
    """
    x = _matrix("SelfAdjointEig", tensor)
    e, v = run_kernel("SelfAdjointEig", {"input": x})
    return e, v


def eigvalsh(tensor, name=None) -> Tensor:
    """Eigenvalues (ascending) of Hermitian matrices. Example: `tf.linalg.eigvalsh(a)`."""
    return eigh(tensor)[0]


def _eigh_shape(shapes, dtypes, attrs):
    s = shapes["input"]
    _check_matrix("SelfAdjointEig", s, "input", square=True)
    return [(tuple(s[:-1]), dtypes["input"]), (tuple(s), dtypes["input"])]


def _eigh_vjp(g, ans):
    e, v = ans
    ge, gv = g
    _real_only("SelfAdjointEig", v, "gradient")
    inner = None
    if gv is not None:
        inner = _gap_reciprocal(e) * _mm(v, gv, True, False)
    if ge is not None:
        d = diag(ge)
        inner = d if inner is None else inner + d
    if inner is None:
        return None
    # G = V inner V^H is the gradient with respect to the Hermitian matrix the kernel
    # builds from the lower triangle, A_h = L + (L - D)^H (L = tril(A), D its diagonal);
    # only its Hermitian part counts, A_h's perturbations being Hermitian. An entry below
    # A's diagonal enters A_h twice (at ij and ji), a diagonal entry once, an entry above
    # not at all: the gradient is tril(G + G^H) with its diagonal halved, as TensorFlow's.
    return _lower_read_grad(_mm(v, _mm(inner, v, False, True)))


def _lower_read_grad(g: Tensor) -> Tensor:
    """The gradient with respect to A of an op that reads only A's lower triangle and sees
    the Hermitian A_h = tril(A) + tril(A, -1)^H, given the gradient g with respect to A_h."""
    return _phi(g + _adj(g))


def _lower_read_tangent(t: Tensor) -> Tensor:
    """The tangent of A_h = tril(A) + tril(A, -1)^H for a tangent t of A (the transpose of
    `_lower_read_grad`): entries above t's diagonal are not read."""
    low = band_part(t, -1, 0)
    return low + _adj(low - band_part(t, 0, 0))


def _eigh_jvp(t, ans):
    e, v = ans
    _real_only("SelfAdjointEig", v, "JVP")
    p = _mm(v, _mm(_lower_read_tangent(t), v), True, False)   # V^H dA_h V
    return [diag_part(p), _mm(v, _gap_reciprocal(e) * p)]


defop("SelfAdjointEig", ["input"], num_outputs=2, shape=_eigh_shape,
      vjp={"input": _eigh_vjp}, jvp={"input": _eigh_jvp})


def svd(tensor, full_matrices=False, compute_uv=True, name=None) -> "Tensor | tuple":
    """Singular values s (descending) and, if `compute_uv`, u and v with
    tensor = u @ diag(s) @ adjoint(v). Returns (s, u, v) like TensorFlow, or s.

    Derivatives assume distinct nonzero singular values (real dtypes; full_matrices only
    for square matrices). A matrix with a NaN or infinite entry (or whose SVD does not
    converge) gives NaN outputs, as TensorFlow's kernel. Example: `s, u, v = tf.linalg.svd(a)`.
    """
    x = _matrix("Svd", tensor, square=False)
    out = run_kernel("Svd", {"input": x}, {"full_matrices": bool(full_matrices),
                                           "compute_uv": bool(compute_uv)})
    return tuple(out) if compute_uv else out


def _svd_shape(shapes, dtypes, attrs):
    s = shapes["input"]
    _check_matrix("Svd", s, "input")
    m, n = s[-2:]
    k = None if m is None or n is None else min(m, n)
    batch, dt = tuple(s[:-2]), dtypes["input"]
    if not attrs["compute_uv"]:
        return [(batch + (k,), dt)]
    if attrs["full_matrices"]:
        return [(batch + (k,), dt), (batch + (m, m), dt), (batch + (n, n), dt)]
    return [(batch + (k,), dt), (batch + (m, k), dt), (batch + (n, k), dt)]


def _svd_parts(input, ans, full_matrices, compute_uv, what):
    _real_only("Svd", input, what)
    m, n = input._shape[-2:]
    if full_matrices and m != n:
        raise UnimplementedError(f"Svd: the {what} with full_matrices=True is implemented "
                                 f"for square matrices only, got {describe(input)}")
    if compute_uv:
        return ans
    return svd(input)


def _svd_vjp(g, input, ans, *, full_matrices, compute_uv):
    s, u, v = _svd_parts(input, ans, full_matrices, compute_uv, "gradient")
    gs, gu, gv = g if compute_uv else (g, None, None)
    inner = diag(gs) if gs is not None else None
    if gu is not None or gv is not None:
        f = _gap_reciprocal(s * s)
    if gu is not None:  # (F o (U^H gU - gU^H U)) S
        mu = _mm(u, gu, True, False)
        part = f * (mu - _adj(mu)) * _as_row(s)
        inner = part if inner is None else inner + part
    if gv is not None:  # S (F o (V^H gV - gV^H V))
        mv = _mm(v, gv, True, False)
        part = _as_col(s) * (f * (mv - _adj(mv)))
        inner = part if inner is None else inner + part
    grad = _mm(_mm(u, inner), v, False, True) if inner is not None else None
    m, n = input._shape[-2:]
    inv_s = _as_row(1.0 / s)
    extra = []  # terms that vanish for a square U (V), skipped when known to
    if gu is not None and _may_exceed(m, n):  # (I - U U^H) gU S^-1 V^H
        extra.append(_mm((gu - _mm(u, _mm(u, gu, True, False))) * inv_s, v, False, True))
    if gv is not None and _may_exceed(n, m):  # U S^-1 gV^H (I - V V^H)
        extra.append(_mm(u * inv_s, gv - _mm(v, _mm(v, gv, True, False)), False, True))
    for e in extra:
        grad = e if grad is None else grad + e
    return grad


def _svd_jvp(t, input, ans, *, full_matrices, compute_uv):
    s, u, v = _svd_parts(input, ans, full_matrices, compute_uv, "JVP")
    p = _mm(u, _mm(t, v), True, False)                 # U^H dA V
    ds = diag_part(p)
    if not compute_uv:
        return ds
    f = _gap_reciprocal(s * s)
    ps = p * _as_row(s)                                # dP S
    sp = _as_col(s) * p                                # S dP
    du = _mm(u, f * (ps + _adj(ps)))
    dv = _mm(v, f * (sp + _adj(sp)))
    m, n = input._shape[-2:]
    inv_s = _as_row(1.0 / s)
    if _may_exceed(m, n):  # as in the VJP: these vanish for a square U (V)
        y = _mm(t, v)
        du = du + (y - _mm(u, _mm(u, y, True, False))) * inv_s
    if _may_exceed(n, m):
        z = _mm(t, u, True, False)
        dv = dv + (z - _mm(v, _mm(v, z, True, False))) * inv_s
    return [ds, du, dv]


defop("Svd", ["input"], num_outputs=lambda s, d, attrs: 3 if attrs["compute_uv"] else 1,
      shape=_svd_shape,
      vjp={"input": _svd_vjp}, jvp={"input": _svd_jvp})


# --------------------------------------------------------------------------- norm


@composite("norm")  # an inner op's error (a traced run-time check) names norm first
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None) -> Tensor:
    """Vector norm (axis None or one axis) or matrix norm (axis a pair).

    ord: 'euclidean' (2-norm of vectors, Frobenius of matrices), 'fro' (matrices), 1, 2,
    np.inf, or any positive real for vectors. The gradient of the euclidean norm at 0 is
    NaN (the derivative of sqrt at 0), as in TensorFlow. The matrix 2-norm of a matrix
    with a NaN or infinite entry is NaN, as TensorFlow's (its SVD gives NaN there).
    Example: `tf.norm([3.0, 4.0])` -> 5.0.
    """
    x = to_tensor(tensor, None, "norm", "tensor")
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise InvalidArgumentError(f"norm: tensor must be floating or complex, got "
                                   f"{describe(x)}")
    rank = len(x._shape)
    keepdims = bool(keepdims)
    if axis is None:
        axes = tuple(range(rank))
        matrix = False
    else:
        raw = int_list("norm", axis, "axis")  # in order: a pair is (rows, columns)
        if len(raw) not in (1, 2):
            raise InvalidArgumentError(f"norm: axis must be None, an int or a pair of ints, "
                                       f"got {axis!r}")
        axes = tuple(normalize_axis("norm", a, rank) for a in raw)
        if len(set(axes)) != len(axes):
            raise InvalidArgumentError(f"norm: axis {axis!r} repeats an axis")
        matrix = len(axes) == 2
    is_num = isinstance(ord, numbers.Real) and not isinstance(ord, bool)
    if matrix:
        if not (ord in ("euclidean", "fro") or (is_num and ord in (1, 2, np.inf))):
            raise InvalidArgumentError(f"norm: ord={ord!r} is not a supported matrix norm "
                                       "('euclidean', 'fro', 1, 2, inf)")
    elif not (ord == "euclidean" or (is_num and ord > 0)):
        raise InvalidArgumentError(f"norm: ord={ord!r} is not a supported vector norm "
                                   "('euclidean' or a positive number)")

    def sq_abs(v):
        return real(v * conj(v)) if v.dtype.is_complex else v * v

    if ord in ("euclidean", "fro") or (ord == 2 and not matrix):
        out = sqrt(reduce_sum(sq_abs(x), axis=axes, keepdims=True))
    elif matrix and ord == 2:
        rest = [i for i in range(rank) if i not in axes]
        perm = rest + list(axes)
        s = svd(transpose(x, perm) if perm != list(range(rank)) else x, compute_uv=False)
        out = reduce_max(s, axis=-1)
        for a in sorted(axes):  # back to keepdims layout
            out = expand_dims(out, a)
    elif matrix:  # 1: max column sum; inf: max row sum
        rows, cols = axes
        inner, outer = (rows, cols) if ord == 1 else (cols, rows)
        out = reduce_max(reduce_sum(_abs(x), axis=inner, keepdims=True), axis=outer,
                         keepdims=True)
    elif ord == np.inf:
        out = reduce_max(_abs(x), axis=axes, keepdims=True)
    elif ord == 1:
        out = reduce_sum(_abs(x), axis=axes, keepdims=True)
    else:
        out = _pow(reduce_sum(_pow(_abs(x), float(ord)), axis=axes, keepdims=True),
                   1.0 / ord)
    if not keepdims:
        out = squeeze(out, axis=list(axes))
    return out


# --------------------------------------------------------------------------- composites

__all__ += ["cross", "global_norm", "set_diag", "pinv"]


@composite("Cross")
def cross(a, b, name=None) -> Tensor:
    """The cross product of the 3-vectors in the last dimension of `a` and `b` (batch
    dimensions broadcast).

    Example: `tf.linalg.cross([1., 0., 0.], [0., 1., 0.])` -> [0., 0., 1.].
    """
    x, y = binary_operands("Cross", a, b)
    if not x._shape or not y._shape or x._shape[-1] not in (3, None) or \
            y._shape[-1] not in (3, None):
        raise InvalidArgumentError(f"Cross: a {describe(x)} and b {describe(y)} must have "
                                   "a last dimension of size 3")
    x0, x1, x2 = (x[..., i] for i in range(3))
    y0, y1, y2 = (y[..., i] for i in range(3))
    return stack([subtract(x1 * y2, x2 * y1), subtract(x2 * y0, x0 * y2),
                  subtract(x0 * y1, x1 * y0)], axis=-1)


def global_norm(t_list, name=None) -> Tensor:
    """`sqrt(sum(l2norm(t)**2 for t in t_list))`; None entries are ignored.

    Example: `tf.linalg.global_norm([tf.constant([3.]), tf.constant([4.])])` -> 5.0.
    """
    if isinstance(t_list, (Tensor, Variable)) or not isinstance(t_list, (list, tuple)):
        raise TypeError(f"global_norm: t_list must be a sequence of tensors, got "
                        f"{type(t_list).__name__}")
    ts = [to_tensor(t.values if hasattr(t, "dense_shape") else t, None, "global_norm",
                    "t_list") for t in t_list if t is not None]
    if not ts:
        raise ValueError("global_norm: t_list holds no tensors")
    for t in ts:  # (checked here, or sqrt or add_n would name themselves)
        if not t.dtype.is_floating:
            raise InvalidArgumentError(f"global_norm: t_list must hold floating tensors (as "
                                       f"TensorFlow's l2_loss), got {describe(t)}")
        if t.dtype is not ts[0].dtype:
            raise InvalidArgumentError(f"global_norm: t_list must hold tensors of one dtype, "
                                       f"got {describe(ts[0])} and {describe(t)}")
    return sqrt(add_n([reduce_sum(square(t)) for t in ts]))


@composite("MatrixSetDiag")
def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT") -> Tensor:
    """A copy of the matrices in `input` ([..., M, N]) with main diagonal `diagonal`
    ([..., min(M, N)]); only k=0 is supported.

    Example: `tf.linalg.set_diag(tf.zeros([2, 2]), [1., 2.])` -> [[1., 0.], [0., 2.]].
    """
    x = to_tensor(input, None, "MatrixSetDiag", "input")
    d = diagonal if type(diagonal) is Tensor else to_tensor(diagonal, x.dtype,
                                                            "MatrixSetDiag", "diagonal")
    if k != 0:
        raise UnimplementedError("MatrixSetDiag: only k=0 (the main diagonal) is supported")
    if x.ndim < 2 or d.ndim != x.ndim - 1:
        raise InvalidArgumentError(f"MatrixSetDiag: input {describe(x)} must have rank >= 2 "
                                   f"and diagonal {describe(d)} one rank less")
    m, n = x._shape[-2:]
    rows = {} if None in (m, n) else {"num_rows": m, "num_cols": n}
    return diag(d, k=0, align=align, **rows) + subtract(x, diag(diag_part(x), **rows))


@composite("pinv")
def pinv(a, rcond=None, validate_args=False, name=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of the matrices in `a` ([..., M, N] -> [..., N, M]),
    from the SVD: singular values at most `rcond * max(s)` are treated as zero (default
    rcond: 10 * max(M, N) * machine epsilon).

    Example: `tf.linalg.pinv([[2., 0.], [0., 0.]])` -> [[0.5, 0.], [0., 0.]].
    """
    x = to_tensor(a, None, "pinv", "a")
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"pinv: a must be floating, got {describe(x)}")
    if x.ndim < 2:
        raise InvalidArgumentError(f"pinv: a must have rank >= 2, got {describe(x)}")
    if rcond is None:
        m, n = x._shape[-2:]
        size = max(m or 1, n or 1)
        rcond = 10.0 * size * float(np.finfo(x.dtype._np).eps)
    s, u, v = svd(x, full_matrices=False, compute_uv=True)
    cutoff = reduce_max(s, axis=-1, keepdims=True) * rcond
    keep = s > cutoff
    s_inv = where(keep, 1.0 / where(keep, s, ones_like(s)), zeros_like(s))
    return matmul(v * expand_dims(s_inv, -2), u, adjoint_b=True)


# --------------------------------------------------------------------------- further linalg
# TensorFlow's further linear algebra (issue 31): least squares, general eigenproblems,
# matrix functions, LU. Composites of the ops above where one exists (lstsq, expm,
# matrix_rank, lu_solve/reconstruct); kernels for general eigen-decomposition, LU, the
# principal square root and logarithm, with TensorFlow's gradients as composites.

__all__ += ["lstsq", "eig", "eigvals", "expm", "logm", "lu", "lu_reconstruct", "lu_solve",
            "lu_matrix_inverse", "matrix_rank", "sqrtm"]

_COMPLEX_OF = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128,
               _dt.complex64: _dt.complex64, _dt.complex128: _dt.complex128}


@composite("lstsq")
def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None) -> Tensor:
    """X minimizing ||matrix @ X - rhs||^2 + l2_regularizer ||X||^2 per matrix pair
    ([..., M, N] and [..., M, K] -> [..., N, K]).

    fast=True solves the regularized normal equations by Cholesky (the minimum-norm
    solution when M < N); fast=False uses the pseudo-inverse, which also copes with
    rank-deficient matrices, and like TensorFlow ignores l2_regularizer.

    Example: `tf.linalg.lstsq([[1.], [1.]], [[1.], [3.]])` -> [[2.]].
    """
    a, b = _operands("lstsq", matrix, rhs, "matrix", "rhs")
    _matrix("lstsq", a, "matrix", square=False)
    _check_matrix("lstsq", b._shape, "rhs")
    if a.ndim != b.ndim or not _may_equal(a._shape[-2], b._shape[-2]):
        raise InvalidArgumentError(
            f"lstsq: matrix [..., M, N] and rhs [..., M, K] must have one rank and one M, "
            f"got matrix: {describe(a)} and rhs: {describe(b)}")
    if not fast:
        return matmul(pinv(a), b)
    m, n = a._shape[-2:]
    l2 = float(l2_regularizer)
    if (m is None or n is None) and not l2:
        # which normal equations are regular is known only at run time: the
        # pseudo-inverse gives the same solution for either shape
        return matmul(pinv(a), b)
    if m is None or n is None or m >= n:  # (with l2 > 0 this form suits any shape)
        gram = _mm(a, a, True, False)
        if l2:
            gram = gram + l2 * _eye_like(diag_part(gram))
        return cholesky_solve(cholesky(gram), _mm(a, b, True, False))
    gram = _mm(a, a, False, True)
    if l2:
        gram = gram + l2 * _eye_like(diag_part(gram))
    return _mm(a, cholesky_solve(cholesky(gram), b), True, False)


def _may_equal(a, b) -> bool:
    return a is None or b is None or a == b


# ---- general eigenproblems


def eig(tensor, name=None) -> tuple[Tensor, Tensor]:
    """(e, v): eigenvalues and unit eigenvectors (columns) of general square matrices,
    complex (float32 -> complex64, float64 -> complex128); in LAPACK's order.

    Example: `e, v = tf.linalg.eig(a)`; a @ v = v * e[..., None, :].
    """
    x = _matrix("Eig", tensor)
    e, v = run_kernel("Eig", {"input": x}, {"compute_v": True})
    return e, v


def eigvals(tensor, name=None) -> Tensor:
    """Eigenvalues (complex) of general square matrices. Example:
    `tf.linalg.eigvals([[0., -1.], [1., 0.]])` -> [1j, -1j]."""
    x = _matrix("Eig", tensor)
    return run_kernel("Eig", {"input": x}, {"compute_v": False})


def _eig_shape(shapes, dtypes, attrs):
    s = shapes["input"]
    _check_matrix("Eig", s, "input", square=True)
    out = _COMPLEX_OF[dtypes["input"]]
    values = (tuple(s[:-1]), out)
    return [values, (tuple(s), out)] if attrs["compute_v"] else [values]


def _to_input_dtype(g: Tensor, x: Tensor) -> Tensor:
    # real input: the real part of the complex gradient (TensorFlow's cast)
    return g if x.dtype.is_complex else prims.real(g)


def _eig_vjp(g, input, ans, *, compute_v):
    """TensorFlow's: V^-H (diag(ge) + F * (V^H gv - V^H V diag(Re(diag(V^H gv))))) V^H,
    F = conj(1 / (e_j - e_i)) off the diagonal."""
    if compute_v:
        e, v = ans
        ge, gv = g
    else:
        e, v = run_kernel("Eig", {"input": input}, {"compute_v": True})
        ge, gv = g, None
    vt = _adj(v)
    mid = None if ge is None else diag(ge)
    if gv is not None:
        vgv = matmul(vt, gv)
        f = _conj(_gap_reciprocal(e))
        d = diag(prims.cast(_real(diag_part(vgv)), dtype=vgv.dtype,
                            source_dtype=vgv.dtype.real_dtype))
        part = f * (vgv - matmul(matmul(vt, v), d))
        mid = part if mid is None else mid + part
    if mid is None:
        return None
    return _to_input_dtype(solve(vt, matmul(mid, vt)), input)


def _eig_jvp(t, input, ans, *, compute_v):
    """de = diag(P) and dV = V (F * P) less each column's change of norm, for
    P = V^-1 dA V and F = 1 / (e_j - e_i) off the diagonal (distinct eigenvalues)."""
    e, v = ans if compute_v else run_kernel("Eig", {"input": input}, {"compute_v": True})
    tc = t if t.dtype is v.dtype else prims.cast(t, dtype=v.dtype, source_dtype=t.dtype)
    p = solve(v, matmul(tc, v))
    de = diag_part(p)
    if not compute_v:
        return de
    dv = matmul(v, _gap_reciprocal(e) * p)
    stretch = _real(diag_part(matmul(v, dv, adjoint_a=True)))
    stretch = prims.cast(stretch, dtype=v.dtype, source_dtype=stretch.dtype)
    return [de, dv - v * expand_dims(stretch, -2)]


defop("Eig", ["input"], num_outputs=lambda s, d, attrs: 2 if attrs["compute_v"] else 1,
      shape=_eig_shape, vjp={"input": _eig_vjp}, jvp={"input": _eig_jvp})


# ---- matrix functions


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152  # Higham (2005): Pade 13 suffices below this 1-norm
_TRACED_SQUARINGS = 24  # a traced graph squares under `where` up to this many times


@composite("expm")
def expm(input, name=None) -> Tensor:
    """The matrix exponential of square matrices: Pade 13 approximant with scaling and
    squaring (Higham 2005), differentiable through its matrix products and solve.

    Example: `tf.linalg.expm([[0., 1.], [0., 0.]])` -> [[1., 1.], [0., 1.]].
    """
    x = _matrix("expm", input)
    norm1 = reduce_max(reduce_sum(_abs(x), axis=-2), axis=-1)  # the largest 1-norm
    if x._shape[-1] == 0:
        return x
    if not is_symbolic(norm1):
        top = float(np.max(norm1.numpy())) if norm1.size else 0.0
        squarings = max(0, int(np.ceil(np.log2(top / _THETA13)))) if top > 0 else 0
        s = float(2.0 ** squarings)
        y = _pade13(x / s) if squarings else _pade13(x)
        for _ in range(squarings):
            y = matmul(y, y)
        return y
    ratio = reduce_max(norm1) / _THETA13
    count = ceil(log(maximum(ratio, 1.0)) / float(np.log(2.0)))
    y = _pade13(x / cast(_pow(2.0, count), x.dtype))
    for i in range(_TRACED_SQUARINGS):
        y = where(greater(count, float(i)), matmul(y, y), y)
    return y


def _pade13(a: Tensor) -> Tensor:
    b = _PADE13
    eye = _eye_like(diag_part(a))
    a2 = matmul(a, a)
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    u = matmul(a, matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
               + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 \
        + b[2] * a2 + b[0] * eye
    return solve(v - u, v + u)


def logm(input, name=None) -> Tensor:
    """The principal matrix logarithm of complex square matrices (TensorFlow takes
    complex64/complex128 only and has no gradient for it).

    Example: `tf.linalg.logm(tf.eye(2, dtype=tf.complex128))` -> zeros.
    """
    x = _matrix("MatrixLogarithm", input)
    if not x.dtype.is_complex:
        raise InvalidArgumentError(
            f"MatrixLogarithm: input must be complex64 or complex128, got {describe(x)}")
    return run_kernel("MatrixLogarithm", {"input": x})


defop("MatrixLogarithm", ["input"], shape=_square_shape("MatrixLogarithm"),
      differentiable=False)


def sqrtm(input, name=None) -> Tensor:
    """The principal square root S of square matrices (S @ S = input), for matrices with
    no eigenvalues on the closed negative real axis.

    Example: `tf.linalg.sqrtm([[4., 0.], [0., 9.]])` -> [[2., 0.], [0., 3.]].
    """
    return run_kernel("MatrixSquareRoot", {"input": _matrix("MatrixSquareRoot", input)})


def _sylvester_kron(s: Tensor) -> Tensor:
    """The [..., n*n, n*n] matrix of X -> s X + X s on row-major vec(X)."""
    dims = dims_of(s)  # (symbolic where unknown while tracing)
    n = dims[-1]
    eye = _eye(n, s.dtype)
    k = einsum("...ik,jl->...ijkl", s, eye) + einsum("ik,...lj->...ijkl", eye, s)
    nn = dims_product((n, n))
    return reshape(k, tuple(dims[:-2]) + (nn, nn))


def _sylvester_solve(s: Tensor, c: Tensor) -> Tensor:
    """X with s X + X s = c (row-major vec and one dense solve, as TensorFlow)."""
    dims = dims_of(c)
    vec = reshape(c, tuple(dims[:-2]) + (dims_product((dims[-1], dims[-1])), 1))
    return reshape(solve(_sylvester_kron(s), vec), tuple(dims))


# A = S S: dA = S dS + dS S, so dS solves a Sylvester equation; the VJP solves its adjoint.
defop("MatrixSquareRoot", ["input"], shape=_square_shape("MatrixSquareRoot"),
      vjp={"input": lambda g, ans: _sylvester_solve(_adj(ans), g)},
      jvp={"input": lambda t, ans: _sylvester_solve(ans, t)})


# ---- LU


def lu(input, output_idx_type=_dt.int32, name=None) -> tuple[Tensor, Tensor]:
    """(lu, p): the LU decomposition with partial pivoting of square matrices; `lu` holds
    U on and above the diagonal and L's strict lower part (unit diagonal), and
    input[..., p, :] = L @ U. No gradient (TensorFlow registers none).

    Example: `lu, p = tf.linalg.lu([[1., 2.], [3., 4.]])` -> p = [1, 0].
    """
    x = _matrix("Lu", input)
    idx = _dt.as_dtype(output_idx_type)
    if idx not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"Lu: output_idx_type must be int32 or int64, got {idx}")
    out, p = run_kernel("Lu", {"input": x}, {"output_idx_type": idx})
    return out, p


def _lu_shape(shapes, dtypes, attrs):
    s = shapes["input"]
    _check_matrix("Lu", s, "input", square=True)
    return [(tuple(s), dtypes["input"]), (tuple(s[:-1]), attrs["output_idx_type"])]


defop("Lu", ["input"], num_outputs=2, shape=_lu_shape, differentiable=False)


def _lu_factors(lower_upper: Tensor) -> tuple[Tensor, Tensor]:
    low = band_part(lower_upper, -1, 0)
    unit = _eye_like(diag_part(lower_upper))
    return low - band_part(low, 0, 0) + unit, band_part(lower_upper, 0, -1)


def _unpermute_rows(x: Tensor, perm: Tensor) -> Tensor:
    """y with y[..., perm, :] = x: x's rows gathered by the inverse permutation."""
    inverse = argsort(perm, axis=-1)
    return gather(x, inverse, axis=x.ndim - 2, batch_dims=perm.ndim - 1)


@composite("lu_reconstruct")
def lu_reconstruct(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """The matrix `lu` factored: P^-1 L U from (lower_upper, perm) of `tf.linalg.lu`.

    Example: `tf.linalg.lu_reconstruct(*tf.linalg.lu(a))` -> a.
    """
    x = _matrix("lu_reconstruct", lower_upper)
    p = to_tensor(perm, None, "lu_reconstruct", "perm")
    low, up = _lu_factors(x)
    return _unpermute_rows(matmul(low, up), p)


@composite("lu_solve")
def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None) -> Tensor:
    """X with A @ X = rhs given (lower_upper, perm) = tf.linalg.lu(A).

    Example: `tf.linalg.lu_solve(*tf.linalg.lu(a), b)`.
    """
    x = _matrix("lu_solve", lower_upper)
    p = to_tensor(perm, None, "lu_solve", "perm")
    b = to_tensor(rhs, x.dtype, "lu_solve", "rhs")
    low, up = _lu_factors(x)
    pb = gather(b, p, axis=b.ndim - 2, batch_dims=p.ndim - 1)
    y = triangular_solve(low, pb, lower=True)
    return triangular_solve(up, y, lower=False)


@composite("lu_matrix_inverse")
def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """The inverse of A from (lower_upper, perm) = tf.linalg.lu(A).

    Example: `tf.linalg.lu_matrix_inverse(*tf.linalg.lu(a))` -> inv(a).
    """
    x = _matrix("lu_matrix_inverse", lower_upper)
    return lu_solve(x, perm, _eye_like(diag_part(x)) + zeros_like(x))


# ---- rank


@composite("matrix_rank")
def matrix_rank(a, tol=None, validate_args=False, name=None) -> Tensor:
    """The number of singular values above `tol` (default: the largest singular value
    times max(M, N) times the dtype's epsilon), int32 per matrix.

    Example: `tf.linalg.matrix_rank([[1., 2.], [2., 4.]])` -> 1.
    """
    x = _matrix("matrix_rank", a, "a", square=False)
    s = svd(x, compute_uv=False)
    if tol is None:
        m, n = x._shape[-2:]
        eps = float(np.finfo(x.dtype.real_dtype._np).eps)
        limit = reduce_max(s, axis=-1, keepdims=True) * (max(m or 1, n or 1) * eps)
    else:
        limit = to_tensor(tol, s.dtype, "matrix_rank", "tol")
        if limit.ndim:
            limit = expand_dims(limit, -1)
    above = prims.cast(prims.greater(s, limit), dtype=_dt.int32, source_dtype=_dt.bool)
    return reduce_sum(above, axis=-1)
