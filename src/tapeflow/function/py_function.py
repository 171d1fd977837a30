"""`py_function`: Python code called with eager tensors when the op runs.

Eagerly `func` is simply called (tapes see its ops, so gradients flow through it). While
tracing, the call becomes an "EagerPyFunc" node, stateful (it runs at every call, in
program order); its kernel wraps the input arrays as eager tensors, calls `func` and
converts the results to `Tout`. Its gradient is another EagerPyFunc whose function reruns
`func` under a GradientTape at run time, so it is differentiable again; its JVP, one
rerunning it under a ForwardAccumulator.

The graph IR has no tensors of unknown rank: an output's static shape is the TensorSpec
given in `Tout`, else unknown dimensions at the rank of the first input (0 without inputs);
the values at run time have whatever shape `func` returns.
"""
from __future__ import annotations

import functools

import numpy as np

from .._core import nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dispatch import no_recording, run_kernel
from .._core.dtypes import as_dtype, DType
from .._core.errors import describe, InvalidArgumentError
from .._core.memory import wrap_native
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from ..autodiff.forward import ForwardAccumulator
from ..autodiff.gradient_tape import GradientTape
from ..ops._define import defop
from ..ops.array import stack
from ..ops.creation import zeros_like


def _spec(t) -> tuple:
    """(dtype, shape or None) of a Tout entry: a TensorSpec, or a dtype (any shape)."""
    if isinstance(t, TensorSpec):
        return t.dtype, t
    return (t if isinstance(t, DType) else as_dtype(t)), None


def _results(name: str, func, result, specs: list) -> list:
    """func's result as a list of tensors of the `specs` dtypes (and shapes, if given)."""
    if not specs:
        return []
    if isinstance(result, (list, tuple)):
        values = list(result)
    else:
        values = [result]
    if len(values) != len(specs):
        raise InvalidArgumentError(
            f"py_function {name}: {getattr(func, '__name__', 'func')} returned "
            f"{len(values)} value(s) but Tout lists {len(specs)}")
    out = []
    for k, (v, (dtype, spec)) in enumerate(zip(values, specs)):
        if isinstance(v, Variable):
            v = v.read_value()
        if not isinstance(v, Tensor):
            try:
                v = convert_to_tensor(v, dtype=dtype) if not isinstance(
                    v, np.ndarray) else convert_to_tensor(v)
            except (TypeError, ValueError, InvalidArgumentError) as e:
                raise InvalidArgumentError(f"py_function {name}: value {k} returned is "
                                           f"{v!r:.60}, not a {dtype.name}: {e}") from None
        if v.dtype is not dtype:
            raise InvalidArgumentError(
                f"py_function {name}: value {k} returned is {describe(v)}, but Tout expects "
                f"{dtype.name}")
        if spec is not None and not spec.is_compatible_with(v):
            raise InvalidArgumentError(
                f"py_function {name}: value {k} returned is {describe(v)}, not compatible "
                f"with Tout's shape {list(spec.shape)}")
        out.append(v)
    return out


def _call(inputs: list, attrs: dict) -> list:
    """Run the user's function on eager tensors, invisible to tapes outside (the graph's
    own gradient stands for it)."""
    saved = ctx.graph
    if saved is not None:
        ctx.graph = None
        ctx.refresh()
    try:
        with no_recording():
            result = attrs["func"](*inputs)
        return _results(attrs["name"], attrs["func"], result, list(attrs["Tout"]))
    finally:
        if saved is not None:
            ctx.graph = saved
            ctx.refresh()


def _py_native(inputs, attrs, backend):
    outs = _call([wrap_native(a, backend) for a in inputs["inputs"]], attrs)
    natives = [o._native if o._nb is backend else np.asarray(o.numpy()) for o in outs]
    return natives if len(natives) != 1 else natives[0]


def _py_impl(inputs, attrs):
    outs = _call(list(inputs["inputs"]), attrs)
    return outs if len(outs) != 1 else outs[0]


def _py_shape(shapes, dtypes, attrs):
    ins = shapes["inputs"]
    rank = len(ins[0]) if ins else 0
    return [(tuple(s.shape) if s is not None else (None,) * rank, dtype)
            for dtype, s in attrs["Tout"]]


def _py_vjp(g, inputs, ans, *, func, Tout, name):
    """Another py_function: at run time it reruns `func` under a tape and returns the
    input gradients for the cotangents `g` (zeros where nothing flows)."""
    cots = g if isinstance(g, list) else [g]
    outs = ans if isinstance(ans, list) else [ans]
    n_in = len(inputs)
    wanted = [i for i, x in enumerate(inputs) if x.dtype.is_trainable]
    if not wanted:
        return {"inputs": [None] * n_in}
    live = [k for k, (c, o) in enumerate(zip(cots, outs)) if c is not None
            and o.dtype.is_trainable]

    def grad_func(*args):
        xs, cs = list(args[:n_in]), list(args[n_in:])
        with GradientTape() as tape:
            for i in wanted:
                tape.watch(xs[i])
            ys = func(*xs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        grads = tape.gradient([ys[k] for k in live], [xs[i] for i in wanted],
                              output_gradients=cs)
        return [gr if gr is not None else _zeros(xs[i]) for gr, i in zip(grads, wanted)]

    result = py_function(grad_func, list(inputs) + [cots[k] for k in live],
                         [TensorSpec(inputs[i]._shape, inputs[i].dtype) for i in wanted],
                         name=f"{name}_grad")
    result = result if isinstance(result, list) else [result]
    grads = [None] * n_in
    for i, r in zip(wanted, result):
        grads[i] = r
    return {"inputs": grads}


def _py_jvp(tangents, inputs, *, func, Tout, name):
    """Another py_function: at run time it reruns `func` under a forward accumulator."""
    given = tangents["inputs"]
    on = [i for i, t in enumerate(given) if t is not None]
    if not on:
        return None
    n_in = len(inputs)
    batched = any(given[i].ndim > inputs[i].ndim for i in on)
    live = [k for k, (dtype, _) in enumerate(Tout) if dtype.is_trainable]

    def jvp_func(*args):
        xs, ts = list(args[:n_in]), list(args[n_in:])
        with ForwardAccumulator([xs[i] for i in on], ts, use_batch=batched) as acc:
            ys = func(*xs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        out = []
        for k in live:
            t = acc.jvp(ys[k])
            if t is None:
                t = _zeros(ys[k])
                if batched:
                    t = stack([t] * int(ts[0].shape[0]))
            out.append(t)
        return out

    result = py_function(jvp_func, list(inputs) + [given[i] for i in on],
                         [Tout[k][0] for k in live], name=f"{name}_jvp")
    result = result if isinstance(result, list) else [result]
    out = [None] * len(Tout)
    for k, r in zip(live, result):
        out[k] = r
    return out


def _zeros(x):
    return zeros_like(x)


defop("EagerPyFunc", ["inputs"], list_inputs=("inputs",), num_outputs=lambda s, d, a: len(
    a["Tout"]), shape=_py_shape, impl=_py_impl, native=_py_native, vjp=_py_vjp,
      jvp=_py_jvp, stateful=True)


def py_function(func=None, inp=None, Tout=None, name=None):  # noqa: N803 - TF's name
    """Call `func(*inp)` with eager tensors when the op runs, also inside a traced
    function (then at every call); its results are converted to `Tout` (a dtype, a
    TensorSpec, or a list of them; a list gives a list back, None or [] nothing).
    Differentiable: eagerly through `func`'s own ops, traced through a py_function that
    reruns `func` under a tape. Without `inp` it is a decorator, as in TensorFlow:
    `@tf.py_function(Tout=tf.float32)` makes `f(x)` mean `tf.py_function(f, [x], ...)`.

    Example:
        >>> @tf.function
        ... def f(x):
        ...     return tf.py_function(lambda a: a.numpy().max() * a, [x], tf.float32)
        >>> f(tf.constant([1.0, 2.0])).numpy()
        array([2., 4.], dtype=float32)
    """
    if func is None or inp is None:
        def decorate(f):
            if not callable(f):
                raise TypeError(f"py_function: func must be callable, got {f!r:.60}")

            @functools.wraps(f)
            def call(*args):
                return py_function(f, list(args), Tout, name)
            call.__ag_do_not_convert__ = True  # autograph must not convert `f` in its place
            return call
        return decorate if func is None else decorate(func)
    if not callable(func):
        raise TypeError(f"py_function: func must be callable, got {func!r:.60}")
    label = name or getattr(func, "__name__", "py_function")
    single = Tout is not None and not isinstance(Tout, (list, tuple))
    specs = [] if Tout is None else [_spec(t) for t in ([Tout] if single else Tout)]
    values = inp if isinstance(inp, (list, tuple)) else [inp]
    tensors = []
    for v in nest.flatten(list(values)):
        tensors.append(v.read_value() if isinstance(v, Variable) else
                       v if isinstance(v, Tensor) else convert_to_tensor(v))
    if ctx.graph is None:  # eagerly: a plain call that tapes see into
        outs = _results(label, func, func(*tensors), specs)
    else:
        out = run_kernel("EagerPyFunc", {"inputs": tensors},
                         {"func": func, "Tout": tuple(specs), "name": label})
        outs = out if isinstance(out, list) else ([] if out is None else [out])
    if single:
        return outs[0]
    return outs if specs else None
