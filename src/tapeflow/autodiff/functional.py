"""The functional API over tapes and accumulators: grad, value_and_grad, vjp, jacobian,
jvp, hvp, jacfwd, hessian and the eager-era names (gradients_function, make_vjp,
implicit_gradients ...)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.errors import describe, InvalidArgumentError
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..ops.array import identity, reshape, transpose
from ..ops.creation import zeros
from .forward import ForwardAccumulator
from .gradient_tape import GradientTape
from .unconnected import UnconnectedGradients


def _argnums(argnums, nargs: int, fname: str) -> tuple:
    """`argnums` (an int or a sequence) as non-negative positions, checked against nargs."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise InvalidArgumentError(f"{fname}: argnums {n} is out of range for {nargs} "
                                       "arguments")
    return tuple(n % nargs for n in nums)


def _fresh(leaf):
    """A distinct tensor for one differentiated argument: passing one tensor twice gives
    two gradients, and uses of it outside the argument do not count. Shares the buffer."""
    if isinstance(leaf, Variable):
        return leaf
    return identity(convert_to_tensor(leaf))


def _prepare(args, nums: tuple) -> tuple[list, list, list]:
    """The differentiated arguments made fresh: (flat leaves, per-argument (tree, start,
    count), the full argument list with the fresh leaves in place)."""
    args = list(args)
    leaves, trees = [], []
    for i in nums:
        flat = [_fresh(x) for x in nest.flatten(args[i])]
        trees.append((args[i], len(leaves), len(flat)))
        leaves.extend(flat)
        args[i] = nest.pack_sequence_as(args[i], flat) if nest.is_nested(args[i]) else flat[0]
    return leaves, trees, args


def _prepared(args, nums) -> list:
    return _prepare(args, nums)[2]


def _args_of(primals) -> tuple:
    return tuple(primals) if isinstance(primals, (list, tuple)) else (primals,)


def _split_aux(out, has_aux, fname):
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ValueError(f"{fname}(has_aux=True): the function must return (output, aux)")
    return out[0], out[1]


def _pick(grads, argnums):
    return grads[0] if isinstance(argnums, int) else tuple(grads)


def value_and_grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning `(f(*args), gradient of f w.r.t. args[argnums])`.

    With `has_aux=True`, `f` returns `(value, aux)` and the result is
    `((value, aux), gradient)`. Example:
        >>> tf.autodiff.value_and_grad(lambda x: x * x)(3.0)
        (<tf.Tensor ... 9.0>, <tf.Tensor ... 6.0>)
    """
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, len(args), "value_and_grad")
        args = _prepared(args, nums)
        with GradientTape() as tape:
            tape.watch([args[i] for i in nums])
            out = f(*args, **kwargs)
        value, aux = _split_aux(out, has_aux, "value_and_grad")
        grads = tape.gradient(value, [args[i] for i in nums])
        g = _pick(grads, argnums)
        return ((value, aux), g) if has_aux else (value, g)
    return wrapped


def grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of `f` w.r.t. `args[argnums]` (pytrees allowed).

    Example:
        >>> tf.autodiff.grad(lambda x: tf.reduce_sum(x ** 2))(tf.constant([1.0, 2.0]))
        <tf.Tensor: shape=(2,), dtype=float32, numpy=array([2., 4.], dtype=float32)>
    """
    vg = value_and_grad(f, argnums, has_aux)

    def wrapped(*args, **kwargs):
        (value_aux, g) = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g
    return wrapped


def vjp(f: Callable, *primals, has_aux: bool = False) -> tuple:
    """`(f(*primals), vjp_fn)` where `vjp_fn(cotangent)` returns one gradient per primal.

    `vjp_fn` may be called many times. Example:
        >>> out, pullback = tf.autodiff.vjp(tf.sin, tf.constant(0.0))
        >>> pullback(tf.constant(1.0))
        (<tf.Tensor ... 1.0>,)
    """
    nums = tuple(range(len(primals)))
    args = _prepared(primals, nums)
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(args)
        out = f(*args)
    value, aux = _split_aux(out, has_aux, "vjp")

    def vjp_fn(cotangent):
        grads = tape.gradient(value, args, output_gradients=cotangent)
        return tuple(grads)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jacobian(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning the Jacobian of `f` w.r.t. `args[argnums]` (reverse mode,
    vectorized); each has shape `out.shape + arg.shape`.

    Example:
        >>> tf.autodiff.jacobian(lambda x: x * x)(tf.constant([1.0, 2.0]))   # diag(2x)
    """
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, len(args), "jacobian")
        args = _prepared(args, nums)
        with GradientTape(persistent=True) as tape:
            tape.watch([args[i] for i in nums])
            out = f(*args, **kwargs)
        value, aux = _split_aux(out, has_aux, "jacobian")
        if nest.is_nested(value):
            jac = nest.map_structure(
                lambda v: _pick(tape.jacobian(v, [args[i] for i in nums]), argnums), value)
        else:
            jac = _pick(tape.jacobian(value, [args[i] for i in nums]), argnums)
        return (jac, aux) if has_aux else jac
    return wrapped


# ------------------------------------------------------------------ eager-era names


def _params(params, nargs):
    return tuple(range(nargs)) if params is None else tuple(params)


def value_and_gradients_function(f: Callable, params: Sequence[int] | None = None) -> Callable:
    """A function returning `(f(*args), [d f / d args[i] for i in params])` (all args when
    params is None). Example:
        >>> val, (dx, dy) = tf.autodiff.value_and_gradients_function(lambda x, y: x * y)(2., 3.)
    """
    def wrapped(*args, **kwargs):
        nums = _params(params, len(args))
        vg = value_and_grad(f, argnums=nums)
        value, grads = vg(*args, **kwargs)
        return value, list(grads)
    return wrapped


def gradients_function(f: Callable, params: Sequence[int] | None = None) -> Callable:
    """A function returning the list of gradients of `f` w.r.t. `args[i]` for i in params.

    Example:
        >>> dx, = tf.autodiff.gradients_function(lambda x: x ** 2)(3.0)
    """
    vg = value_and_gradients_function(f, params)
    return lambda *args, **kwargs: vg(*args, **kwargs)[1]


def make_vjp(f: Callable, params: Sequence[int] | None = None) -> Callable:
    """A function returning `(f(*args), vjp)` where `vjp(dy=None)` gives the gradients
    w.r.t. the selected args (dy defaults to ones). Example:
        >>> result, vjp = tf.autodiff.make_vjp(tf.sin)(0.5); vjp()
    """
    def wrapped(*args, **kwargs):
        nums = _params(params, len(args))
        args = _prepared(args, nums)
        tape = GradientTape(persistent=True)
        with tape:
            tape.watch([args[i] for i in nums])
            result = f(*args, **kwargs)

        def vjp_fn(dy=None):
            return list(tape.gradient(result, [args[i] for i in nums], output_gradients=dy))
        return result, vjp_fn
    return wrapped


def implicit_value_and_gradients(f: Callable) -> Callable:
    """A function returning `(f(*args), [(gradient, variable), ...])` for every trainable
    variable `f` reads. Example:
        >>> v = tf.Variable(2.0)
        >>> value, [(g, var)] = tf.autodiff.implicit_value_and_gradients(lambda: v * v)()
    """
    def wrapped(*args, **kwargs):
        with GradientTape() as tape:
            value = f(*args, **kwargs)
        variables = tape.watched_variables()
        if not variables:
            raise ValueError("implicit_gradients: the function read no trainable variables")
        grads = tape.gradient(value, list(variables))
        return value, list(zip(grads, variables))
    return wrapped


def implicit_gradients(f: Callable) -> Callable:
    """A function returning `[(gradient, variable), ...]` for the trainable variables `f`
    reads. Example: `tf.autodiff.implicit_gradients(loss_fn)(x)`."""
    ivg = implicit_value_and_gradients(f)
    return lambda *args, **kwargs: ivg(*args, **kwargs)[1]


# ------------------------------------------------------------------ forward mode


def jvp(f: Callable, primals, tangents) -> tuple[Any, Any]:
    """`(f(*primals), J t)`: the output and its Jacobian-vector product in one pass.

    `primals` is the tuple of positional arguments (a single tensor is allowed) and may
    hold nested structures; `tangents` has the same structure.
    Example:
        >>> out, t = tf.autodiff.jvp(tf.sin, (tf.constant(0.0),), (tf.constant(2.0),))
        >>> t.numpy()
        2.0
    """
    args = _args_of(primals)
    targs = _args_of(tangents)
    leaves, _, args = _prepare(args, tuple(range(len(args))))
    tleaves = nest.flatten(targs)
    if len(tleaves) != len(leaves):
        raise InvalidArgumentError(f"jvp: primals have {len(leaves)} leaves but tangents "
                                   f"have {len(tleaves)}")
    with ForwardAccumulator(leaves, tleaves) as acc:
        out = f(*args)
    tout = acc.jvp(out, unconnected_gradients=UnconnectedGradients.ZERO)
    return out, tout


def _gradient_under(acc_leaves, acc_tangents, f, args, leaves, use_batch):
    with ForwardAccumulator(acc_leaves, acc_tangents, use_batch=use_batch) as acc:
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(leaves)
            y = f(*args)
        if not isinstance(y, (Tensor, Variable)) or len(y._shape) != 0:
            raise InvalidArgumentError(
                f"hvp/hessian: f must return a scalar tensor, got "
                f"{describe(y) if isinstance(y, Tensor) else type(y).__name__}")
        grads = tape.gradient(y, leaves, unconnected_gradients=UnconnectedGradients.ZERO)
    return acc, grads


def hvp(f: Callable, primals, v) -> Any:
    """The Hessian-vector product H v of scalar `f` at `primals` (forward-over-reverse).

    `primals` is the tuple of positional arguments (a single tensor is allowed); the
    result and `v` have its structure.
    Example:
        >>> x = tf.constant([1.0, 2.0])
        >>> tf.autodiff.hvp(lambda x: tf.reduce_sum(x * x * x), x, tf.ones([2])).numpy()
        array([ 6., 12.], dtype=float32)
    """
    single = not isinstance(primals, (list, tuple))
    args = _args_of(primals)
    leaves, _, args = _prepare(args, tuple(range(len(args))))
    vleaves = nest.flatten(_args_of(v))
    if len(vleaves) != len(leaves):
        raise InvalidArgumentError(f"hvp: primals have {len(leaves)} leaves but v has "
                                   f"{len(vleaves)}")
    acc, grads = _gradient_under(leaves, vleaves, f, args, leaves, False)
    flat = [acc.jvp(g, UnconnectedGradients.ZERO) if g is not None else
            zeros(x._shape, x.dtype) for g, x in zip(grads, leaves)]
    if single and not nest.is_nested(primals):
        return flat[0]
    return nest.pack_sequence_as(primals, flat)


def _basis(leaves: list) -> list:
    """Tangents of the identity basis over all leaves: leaf j gets eye(N)[:, its columns]."""
    sizes = [int(np.prod(x._shape)) for x in leaves]
    total = sum(sizes)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        block = np.zeros((total, n), dtype=x.dtype.as_numpy_dtype)
        block[start + np.arange(n), np.arange(n)] = 1
        out.append(convert_to_tensor(block.reshape((total,) + tuple(x._shape))))
        start += n
    return out, sizes


def _block(t: Tensor, start: int, n: int, total: int, in_shape: tuple, out_ndim: int):
    """Rows [start, start+n) of a batched tangent [N] + out_shape, laid out as
    out_shape + in_shape (the Jacobian block of one input leaf)."""
    if n != total:
        t = t[start:start + n]
    t = reshape(t, tuple(in_shape) + tuple(t._shape[1:]))
    k = len(in_shape)
    if k and out_ndim:
        t = transpose(t, list(range(k, k + out_ndim)) + list(range(k)))
    return t


def jacfwd(f: Callable, argnums=0) -> Callable:
    """A function computing the Jacobian of `f` in forward mode, in one batched pass.

    Each output leaf's Jacobian has shape out_shape + in_shape; with a tuple `argnums` it
    is a tuple over those arguments; structured arguments give structured results.
    Example:
        >>> jac = tf.autodiff.jacfwd(lambda x: x * x)
        >>> jac(tf.constant([1.0, 2.0])).numpy()
        array([[2., 0.], [0., 4.]], dtype=float32)
    """

    def jacobian_fn(*args):
        leaves, trees, args = _prepare(args, _argnums(argnums, len(args), "jacfwd"))
        basis, sizes = _basis(leaves)
        with ForwardAccumulator(leaves, basis, use_batch=True) as acc:
            out = f(*args)
        total = sum(sizes)

        def per_output(o):
            if not isinstance(o, Tensor):
                return None
            t = acc.jvp(o)
            blocks = []
            start = 0
            for x, n in zip(leaves, sizes):
                if t is None or not o.dtype.is_trainable:
                    blocks.append(zeros(tuple(o._shape) + tuple(x._shape), x.dtype)
                                  if o.dtype.is_trainable else None)
                else:
                    blocks.append(_block(t, start, n, total, x._shape, len(o._shape)))
                start += n
            return _pack_trees(trees, blocks, isinstance(argnums, int))

        if not nest.is_nested(out):
            return per_output(out)
        return nest.map_structure(per_output, out)

    return jacobian_fn


def _pack_trees(trees, flat, single: bool):
    packed = [nest.pack_sequence_as(tree, flat[start:start + n]) if nest.is_nested(tree)
              else flat[start] for tree, start, n in trees]
    return packed[0] if single else tuple(packed)


def hessian(f: Callable, argnums=0) -> Callable:
    """A function computing the Hessian of scalar `f` (forward-over-reverse, one batched
    forward pass over the identity basis).

    For one argument of shape s the result has shape s + s; structured or several
    arguments give nested blocks H[i][j] of shape s_i + s_j.
    Example:
        >>> h = tf.autodiff.hessian(lambda x: tf.reduce_sum(x * x * x))
        >>> h(tf.constant([1.0, 2.0])).numpy()
        array([[ 6.,  0.], [ 0., 12.]], dtype=float32)
    """

    def hessian_fn(*args):
        leaves, trees, args = _prepare(args, _argnums(argnums, len(args), "hessian"))
        basis, sizes = _basis(leaves)
        acc, grads = _gradient_under(leaves, basis, f, args, leaves, True)
        total = sum(sizes)
        rows = []
        for g, xi in zip(grads, leaves):
            t = acc.jvp(g, UnconnectedGradients.ZERO) if g is not None else None
            blocks = []
            start = 0
            for xj, n in zip(leaves, sizes):
                if t is None:
                    blocks.append(zeros(tuple(xi._shape) + tuple(xj._shape), xi.dtype))
                else:
                    blocks.append(_block(t, start, n, total, xj._shape, len(xi._shape)))
                start += n
            rows.append(_pack_trees(trees, blocks, isinstance(argnums, int)))
        return _pack_trees(trees, rows, isinstance(argnums, int))

    return hessian_fn
