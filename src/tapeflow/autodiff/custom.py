"""custom_gradient, recompute_grad and stop_gradient: user control over the backward pass.

Both decorators run the user's function as one composite op (`CustomGradient`,
`RecomputeGrad`) through the one dispatch path: its attrs carry the user's functions and
its VJP rule calls them (as JAX's custom_vjp_call and TensorFlow.js's runKernelFunc do).
Variables read inside become the op's "resources" input, so they get gradients too.
Forward mode transposes the VJP (there is no JVP rule), like for any op without one.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel, watch_variables
from .._core.errors import InvalidArgumentError
from .._core.registry import define_op
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..ops.array import stop_gradient as _stop_gradient
from .gradient_tape import GradientTape


def stop_gradient(input, name=None) -> Tensor:
    """The same value, but no gradient or tangent flows through it.

    Example: `tf.stop_gradient(x) * x` has gradient `x` with respect to `x`.
    """
    return _stop_gradient(input)


class _Call:
    """One call of a decorated function: the user's function and what its forward run
    left for the backward pass (custom_gradient's grad_fn, the output structure)."""

    __slots__ = ("f", "kwargs", "fname", "grad_fn", "structure")

    def __init__(self, f, kwargs, fname):
        self.f, self.kwargs, self.fname = f, kwargs, fname
        self.grad_fn = self.structure = None

    def outputs(self, result) -> list:
        flat = nest.flatten(result)
        for o in flat:
            if not isinstance(o, Tensor):
                raise InvalidArgumentError(
                    f"{self.fname}: outputs must be tensors, got {type(o).__name__}")
        # the structure alone (leaves dropped): the call object lives in the op's attrs,
        # which a tape or a graph keeps, and must not keep the outputs alive
        self.structure = nest.map_structure(lambda _: None, result) \
            if nest.is_nested(result) else None
        return flat

    def pack(self, outs):
        outs = outs if isinstance(outs, list) else [outs]
        return nest.pack_sequence_as(self.structure, outs) if nest.is_nested(
            self.structure) else outs[0]


def _tensor_args(args) -> list:
    return [a.read_value() if isinstance(a, Variable) else
            (a if isinstance(a, Tensor) else convert_to_tensor(a)) for a in args]


def _as_list(g) -> list:
    return g if isinstance(g, list) else [g]


# ---------------------------------------------------------------- custom_gradient


def _custom_forward(inputs, attrs):
    call = attrs["call"]
    with watch_variables() as seen:
        result, call.grad_fn = call.f(*inputs["x"], **call.kwargs)
    if seen:
        params = inspect.signature(call.grad_fn).parameters
        if "variables" not in params and not any(p.kind == p.VAR_KEYWORD
                                                 for p in params.values()):
            raise TypeError(f"custom_gradient: {call.f.__name__} reads variables "
                            f"{[v.name for v in seen.values()]}, so its grad_fn must accept "
                            "a `variables` keyword argument")
    return call.outputs(result)


def _custom_vjp(g, resources, *, call):
    """The user's grad_fn, with the variables read by f (the op's "resources")."""
    variables = list(resources or [])
    dys = _as_list(g)
    if variables:
        grads = call.grad_fn(*dys, variables=variables)
        if not isinstance(grads, (tuple, list)) or len(grads) != 2:
            raise ValueError("custom_gradient: with variables, grad_fn must return "
                             "(input_gradients, variable_gradients)")
        in_grads, var_grads = grads
    else:
        in_grads, var_grads = call.grad_fn(*dys), []
    in_grads = list(in_grads) if isinstance(in_grads, (tuple, list)) else [in_grads]
    if len(in_grads) != call.x_count:
        raise ValueError(f"custom_gradient: grad_fn returned {len(in_grads)} gradients for "
                         f"{call.x_count} inputs")
    grads = [None if v is None else convert_to_tensor(v) for v in in_grads + list(var_grads)]
    return {"x": grads[:call.x_count], "resources": grads[call.x_count:]}


class _CustomCall(_Call):
    __slots__ = ("x_count",)


def _values_shape(shapes, dtypes, attrs):
    """In a traced graph the op passes its implementation's results ("values") on."""
    return list(zip(shapes["values"], dtypes["values"]))


define_op("CustomGradient", ["x", "resources"], list_inputs=("x", "resources"),
          num_outputs=None, shape=_values_shape, impl=_custom_forward, zeros_for_none=True,
          vjp=_custom_vjp)


def custom_gradient(f: Callable | None = None) -> Callable:
    """Decorate `f(*x) -> (y, grad_fn)` so that the gradient of y is `grad_fn(*dy)`.

    `grad_fn` returns one gradient per input; if `f` reads variables, `grad_fn` must take
    a `variables=` keyword and return `(input_grads, variable_grads)`.
    Example:
        >>> @tf.custom_gradient
        ... def clip_grad(x):
        ...     return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        inputs = _tensor_args(args)
        call = _CustomCall(f, kwargs, "custom_gradient")
        call.x_count = len(inputs)
        outs = run_kernel("CustomGradient", {"x": inputs}, {"call": call})
        return call.pack(outs)
    return wrapped


# ---------------------------------------------------------------- recompute_grad


def _recompute_forward(inputs, attrs):
    call = attrs["call"]
    return call.outputs(call.f(*inputs["x"], **call.kwargs))


def _recompute_vjp(g, x, resources=None, *, call):
    resources = list(resources or [])
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        tape.watch(resources)
        again = nest.flatten(call.f(*x, **call.kwargs))
    grads = tape.gradient(again, list(x) + resources, output_gradients=_as_list(g))
    return {"x": grads[:len(x)], "resources": grads[len(x):]}


define_op("RecomputeGrad", ["x", "resources"], list_inputs=("x", "resources"),
          num_outputs=None, shape=_values_shape, impl=_recompute_forward,
          zeros_for_none=True, vjp=_recompute_vjp)


def recompute_grad(f: Callable) -> Callable:
    """Gradient checkpointing: `f`'s intermediate activations are not kept for the
    backward pass; `f` runs again during the backward pass to recompute them.

    Example:
        >>> block = tf.recompute_grad(lambda x: tf.tanh(tf.tanh(x) * 2.0))
        >>> with tf.GradientTape() as g:
        ...     g.watch(x); y = block(x)
    """
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        call = _Call(f, kwargs, "recompute_grad")
        outs = run_kernel("RecomputeGrad", {"x": _tensor_args(args)}, {"call": call})
        return call.pack(outs)
    return wrapped
