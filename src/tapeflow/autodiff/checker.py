"""Numerical derivative checking: central differences against reverse and forward mode.

One checker drives the op table (ARCHITECTURE.md rule 15): a random input direction `v`
and output cotangent `u` reduce every check to comparing the scalar <u, J v> computed
analytically (VJP or JVP) with (<u, f(x + h v)> - <u, f(x - h v)>) / 2h. Order 2 applies
the same check to the analytic first derivative as a function of x.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.indexed_slices import IndexedSlices
from .._core.tensor import Tensor
from .._core.variable import Variable
from .forward import ForwardAccumulator
from .gradient_tape import GradientTape


def _as_tensors(args):
    # NumPy arrays keep their dtype; Python numbers and lists get TF's defaults (float32)
    return [a if isinstance(a, (Tensor, Variable)) else convert_to_tensor(a) for a in args]


def _float_leaves(out):
    leaves = [convert_to_tensor(o) if isinstance(o, IndexedSlices) else o
              for o in nest.flatten(out)]  # sparse gradients are checked densified
    return [o for o in leaves
            if isinstance(o, Tensor) and (o.dtype.is_floating or o.dtype.is_complex)]


def _inner(us, outs) -> float:
    total = 0.0
    for u, o in zip(us, outs):
        total += float(np.real(np.vdot(u, o.numpy())))
    return total


def _numeric(f, xs, vs, us, delta):
    plus = _float_leaves(f(*[convert_to_tensor(x.numpy() + delta * v) for x, v in zip(xs, vs)]))
    minus = _float_leaves(f(*[convert_to_tensor(x.numpy() - delta * v) for x, v in zip(xs, vs)]))
    return (_inner(us, plus) - _inner(us, minus)) / (2 * delta)


def _rand_like(rng, t):
    shape = t._shape
    if t.dtype.is_complex:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(
            t.dtype.as_numpy_dtype)
    return rng.standard_normal(shape).astype(t.dtype.as_numpy_dtype)


def _analytic(f, xs, vs, us, mode):
    if mode == "rev":
        with GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            outs = _float_leaves(f(*xs))
        grads = tape.gradient(outs, xs, output_gradients=[convert_to_tensor(u) for u in us])
        return sum(float(np.real(np.vdot(convert_to_tensor(g).numpy(), v)))
                   for g, v in zip(grads, vs) if g is not None)
    with ForwardAccumulator(xs, [convert_to_tensor(v) for v in vs]) as acc:
        outs = _float_leaves(f(*xs))
    tans = [acc.jvp(o) for o in outs]
    return sum(float(np.real(np.vdot(u, t.numpy()))) for u, t in zip(us, tans) if t is not None)


def _first_derivative_fn(f, us, vs, mode):
    """x -> the analytic first derivative as tensors (differentiable again)."""

    def rev(*xs):
        with GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            outs = _float_leaves(f(*xs))
        grads = tape.gradient(outs, list(xs), output_gradients=[convert_to_tensor(u) for u in us],
                              unconnected_gradients="zero")
        return grads

    def fwd(*xs):
        with ForwardAccumulator(list(xs), [convert_to_tensor(v) for v in vs]) as acc:
            outs = _float_leaves(f(*xs))
        return [acc.jvp(o, unconnected_gradients="zero") for o in outs]

    return rev if mode == "rev" else fwd


class GradientCheckError(AssertionError):
    """Analytic and numerical derivatives disagree."""


def check_gradients(f: Callable, args: Sequence[Any], order: int = 2,
                    modes: Sequence[str] = ("fwd", "rev"), delta: float = 1e-6,
                    rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0) -> None:
    """Check `f`'s derivatives at `args` to `order` in forward and/or reverse mode.

    Raises GradientCheckError with a readable report when they disagree.
    Example:
        >>> tf.test.check_gradients(tf.sin, [np.array([0.3, 1.2])], order=2)
    """
    rng = np.random.default_rng(seed)
    xs = _as_tensors(args)
    failures = []
    for mode in modes:
        _check_order(f, xs, mode, order, delta, rtol, atol, rng, failures, path=mode)
    if failures:
        raise GradientCheckError("gradient check failed:\n" + "\n".join(failures))


def _check_order(f, xs, mode, order, delta, rtol, atol, rng, failures, path):
    outs = _float_leaves(f(*xs))
    if not outs:
        return
    vs = [_rand_like(rng, x) for x in xs]
    us = [_rand_like(rng, o) for o in outs]
    analytic = _analytic(f, xs, vs, us, mode)
    numeric = _numeric(f, xs, vs, us, delta)
    if not abs(analytic - numeric) <= atol + rtol * max(abs(numeric), abs(analytic), 1.0):
        failures.append(f"  {path}: analytic <u, J v> = {analytic!r}, numerical = {numeric!r}, "
                        f"difference {abs(analytic - numeric):.3g} (input shapes "
                        f"{[list(x._shape) for x in xs]})")
    if order > 1:
        g = _first_derivative_fn(f, us, vs, mode)
        _check_order(g, xs, mode, order - 1, delta, rtol * 10, atol * 10, rng, failures,
                     path=f"{path}-over-{mode}")


def compute_gradient(f: Callable, x: Sequence[Any], delta: float | None = None) -> tuple:
    """Theoretical and numerical Jacobians of `f` at `x`, like tf.test.compute_gradient.

    Returns two tuples with one 2-D array per element of `x`, shaped
    (size of f's output, size of that x).
    Example:
        >>> theo, num = tf.test.compute_gradient(tf.square, [np.array([1.0, 2.0])])
    """
    if not isinstance(x, (list, tuple)):
        raise ValueError("compute_gradient: `x` must be a list or tuple of arguments of f "
                         f"(got {type(x).__name__}), as in TensorFlow")
    delta = 1e-3 if delta is None else delta
    xs = _as_tensors(x)
    y = f(*xs)
    y_size = int(np.prod(y._shape))
    theo, num = [], []
    for i, xi in enumerate(xs):
        x_size = int(np.prod(xi._shape))
        dt = xi.dtype.as_numpy_dtype
        jt = np.zeros((y_size, x_size), dtype=dt)
        jn = np.zeros((y_size, x_size), dtype=dt)
        for r in range(y_size):
            dy = np.zeros(y_size, dtype=y.dtype.as_numpy_dtype)
            dy[r] = 1
            with GradientTape() as tape:
                tape.watch(xs)
                out = f(*xs)
            g = tape.gradient(out, xs[i], output_gradients=convert_to_tensor(dy.reshape(y._shape)))
            if g is not None:
                jt[r] = convert_to_tensor(g).numpy().reshape(-1)
        base = xi.numpy()
        for c in range(x_size):
            step = np.zeros(x_size, dtype=dt)
            step[c] = delta
            args_p = list(xs)
            args_m = list(xs)
            args_p[i] = convert_to_tensor((base.reshape(-1) + step).reshape(base.shape))
            args_m[i] = convert_to_tensor((base.reshape(-1) - step).reshape(base.shape))
            diff = f(*args_p).numpy().reshape(-1) - f(*args_m).numpy().reshape(-1)
            jn[:, c] = diff / (2 * delta)
        theo.append(jt)
        num.append(jn)
    return tuple(theo), tuple(num)
