"""Defining ops: `defop`, the rule shorthands and `sum_to_shape`.

A rule is a function whose positional parameter names say what it reads: the cotangent
`g` (VJP) or tangent `t` (JVP), the output `ans`, and the op's input names; attributes
arrive as keyword arguments. Example (the whole definition of Sin, kernel aside):

    defop("Sin", ["x"], shape=same_shape, **elementwise(lambda x: cos(x)))
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from .._core import prims
from .._core.errors import InvalidArgumentError
from .._core.memory import wrap_native
from .._core.registry import define_op, passthrough  # noqa: F401  (re-exported for rules)
from .._core.shape import has_dims
from .._core.tensor import Tensor

defop = define_op


def derived(params, fn):
    """Mark `fn(*args, **attrs)` as a rule reading the named `params` (for shorthands)."""
    fn.rule_params = tuple(params)
    return fn


def _names(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def elementwise(dfdx: Callable, name: str = "x") -> dict:
    """VJP and JVP of a unary elementwise op from its local derivative `dfdx(x/ans...)`.

    Complex inputs follow TensorFlow's convention: the VJP multiplies by conj(dfdx).
    """
    params = _names(dfdx)

    def vjp(g, *args, **attrs):
        d = dfdx(*args)
        return g * conjugate(d)

    def jvp(t, *args, **attrs):
        return t * dfdx(*args)

    return {"vjp": {name: derived(["g", *params], vjp)},
            "jvp": {name: derived(["t", *params], jvp)}}


def linear(op: Callable, name: str = "x") -> dict:
    """The JVP of an op linear in input `name`: the op itself applied to the tangent.

    Example: `defop("Neg", ["x"], vjp={"x": lambda g: negative(g)}, **linear(negative))`.
    """
    return {"jvp": {name: derived(["t"], lambda t, **attrs: op(t))}}


def nondifferentiable() -> dict:
    """Marks an op whose outputs are integer or boolean: no VJP, no JVP, and tapes and
    accumulators stop there. Example: `defop("Equal", ["x", "y"], **nondifferentiable())`.
    """
    return {"differentiable": False}


def conjugate(x: Tensor) -> Tensor:
    """x's complex conjugate, x itself when real: the conj rules use (no argument checks)."""
    return prims.conj(x) if x.dtype.is_complex else x


def cast_to(x: Tensor, dtype) -> Tensor:
    """x as `dtype` (x itself when it has it): the cast rules use (no argument checks)."""
    return x if x.dtype is dtype else prims.cast(x, dtype=dtype, source_dtype=x.dtype)


def same_shape(shapes, dtypes, attrs):
    """Shape rule of unary elementwise ops: output is like input `x`."""
    (key,) = [k for k in shapes][:1]
    return [(shapes[key], dtypes[key])]

def composite(name: str) -> Callable:
    """Decorator of a public op built from other public ops (l2_normalize from reduce_sum,
    trace from diag_part...): an InvalidArgumentError from an inner op names that op, so it
    is raised again, of the same class, with `name: ` in front ("trace: MatrixDiagPart:
    input must have rank >= 2 ..."): the message starts with the op the user called.
    Check arguments up front where possible; this catches what the inner ops find. Not for
    hot ops: the wrapper costs a call."""
    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except InvalidArgumentError as e:
                message = str(e)
                if message.startswith(name + ":"):
                    raise
                raise type(e)(f"{name}: {message}") from None
        return op
    return decorate

# --------------------------------------------------------------------------- gradients


def sum_to_shape(g: Tensor, shape) -> Tensor:
    """Sum `g` down to `shape`, undoing NumPy broadcasting (the one place it is undone).

    Example:
        >>> sum_to_shape(tf.ones([2, 3]), (3,)).numpy()
        array([2., 2., 2.], dtype=float32)
    """
    shape = tuple(shape)
    gs = g._shape
    if gs == shape:
        return g
    if None in gs or has_dims(shape):
        # unknown dims (a traced graph): which axes were broadcast is known only when the
        # graph runs, so one kernel decides then
        return prims.sum_to(g, shape=shape)
    lead = len(gs) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape)
                                if d == 1 and gs[lead + i] != 1]
    out = prims.sum(g, axis=tuple(axes), keepdims=False) if axes else g
    if out._shape != shape:
        out = prims.reshape(out, shape=shape)
    return out


def eager_from_native(native):
    """An op's eager implementation (`impl`) from its kernel on NumPy arrays (`native`,
    which the graph executor calls directly): for stateful ops defined beside the code
    that owns their state (data/iterator.py, summary/writer.py)."""
    def impl(inputs, attrs):
        arrays = {k: [np.asarray(t) for t in v] if isinstance(v, (list, tuple))
                  else np.asarray(v) for k, v in inputs.items()}
        out = native(arrays, attrs, None)
        if isinstance(out, list):
            return [wrap_native(np.asarray(o)) for o in out]
        return wrap_native(np.asarray(out))
    return impl
