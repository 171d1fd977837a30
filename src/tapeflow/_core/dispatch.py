"""run_kernel: the one dispatch path of every op, built-in, composite or user-registered.

With nothing active (no tape, accumulator, watcher, profiler or debug check) an op costs
one context check, a table lookup, the kernel and one Tensor creation. Otherwise the
hooked path runs; it decides what to do from the execution context before any native
data is touched (where a tracing context will take over), then runs the kernel and hands
the call to the hooks autodiff installed (recording on tapes, forward-mode JVPs).

A *composite* op (registered with `define_op(..., impl=fn)`) is implemented by a Python
function over tensors, the same on every backend: variable reads and assignments,
custom_gradient and recompute_grad. It runs with tapes and accumulators hidden, so it is
recorded as one op with its own VJP rule; the variables it reads become its inputs.
"""
from __future__ import annotations

import time as _time
from typing import Any

import numpy as np

from . import registry as _reg
from .backends import Backend, REGISTRY as _backends
from .context import ctx, debug_on, hooks, set_debug_everywhere
from .convert import convert_to_tensor
from .errors import describe, DisposedError, InvalidArgumentError, NotFoundError, user_site
from .memory import counters, native_of, share, wrap_native
from .tensor import Resource, SYMBOLIC, Tensor

_EMPTY: dict = {}


class Alias:
    """Returned by a kernel whose output is input `name` viewed with `shape` (reshape,
    identity): the output tensor then shares that input's buffer instead of a copy."""

    __slots__ = ("name", "shape")

    def __init__(self, name: str, shape):
        self.name, self.shape = name, tuple(shape)


# --------------------------------------------------------------------------- kernels

_fast_kernels: dict = {}  # kernel name -> kernel function for the active backend


def _kernel_for(kernel_name: str, backend: Backend):
    per = _reg.KERNELS.get(kernel_name)
    entry = per.get(backend.name) if per is not None else None
    if entry is None:
        op = _reg.OPS.get(kernel_name)
        if op is not None and op.native is not None:
            # an op that runs the same way on every backend (If, While: function/control.py)
            func = _fast_kernels[kernel_name] = op.native
            return func
        where = sorted(per) if per else []
        raise NotFoundError(f"no kernel {kernel_name!r} for backend {backend.name!r}"
                            + (f" (registered for: {where})" if where else ""))
    func = _fast_kernels[kernel_name] = entry.func
    return func


def _forget_fast_kernels(*_) -> None:
    _fast_kernels.clear()


def _setup_kernels(name: str, backend: Backend) -> None:
    for entry in _reg.kernels_for_backend(name):
        if entry.setup_func is not None:
            entry.setup_func(backend)


def _dispose_kernels(name: str, backend: Backend) -> None:
    for entry in _reg.kernels_for_backend(name):
        if entry.dispose_func is not None:
            entry.dispose_func(backend)  # tfjs's KernelDisposeFunc(backend)


def _on_new_kernel(entry) -> None:
    if entry is not None and entry.setup_func is not None \
            and _backends.active_name == entry.backend:
        entry.setup_func(_backends.active)


_backends.on_activate += [_setup_kernels, _forget_fast_kernels]
_backends.on_remove += [_forget_fast_kernels, _dispose_kernels]
_reg.kernel_listeners += [_forget_fast_kernels, _on_new_kernel]


# --------------------------------------------------------------------------- dispatch


def run_kernel(kernel_name: str, inputs: dict, attrs: dict | None = None) -> Any:
    """Run op `kernel_name` on the active backend: the one dispatch path of every op.

    `inputs` maps input names to tensors (or lists of tensors); `attrs` holds static
    attributes. Returns a Tensor, or a list for multi-output kernels.
    Example:
        >>> tf.engine.run_kernel("Add", {"x": tf.ones([2]), "y": tf.ones([2])}).numpy()
        array([2., 2.], dtype=float32)
    """
    if attrs is None:
        attrs = _EMPTY
    # The one context check, made before any native data is touched: while a function is
    # being traced, the tracer takes the call and runs the op's shape rule instead.
    hooked = ctx.active
    if hooked and ctx.graph is not None:
        return hooks.trace(kernel_name, inputs, attrs)
    backend = _backends.active or _backends.ensure_active()
    func = _fast_kernels.get(kernel_name)
    if func is None:
        impl = _reg.COMPOSITES.get(kernel_name)
        if impl is not None:
            return _run_composite(kernel_name, impl, inputs, attrs)
        func = _kernel_for(kernel_name, backend)
    natives = {}
    for key, v in inputs.items():
        if type(v) is Tensor and v._nb is backend:
            natives[key] = v._native
        else:
            natives, inputs = _natives(inputs, backend)
            break
    if hooked:
        return _run_hooked(kernel_name, func, inputs, natives, attrs, backend)
    try:
        out = func(natives, attrs, backend)
    except DisposedError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised with the op's context
        raise _caused(_kernel_error(kernel_name, inputs, attrs, e), e)  # no local: no cycle
    if type(out) is list or type(out) is tuple:
        return [_wrap(o, inputs, backend) for o in out]
    if type(out) is Alias:
        return share(inputs[out.name], out.shape)
    return wrap_native(out, backend)


def _natives(inputs: dict, backend: Backend) -> tuple[dict, dict]:
    """Native arrays of every input (moving data between backends, converting Python
    values); returns them with the inputs dict, copied if something was converted."""
    natives = {}
    converted = None
    for key, v in inputs.items():
        if type(v) is Tensor:
            natives[key] = v._native if v._nb is backend else native_of(v, backend)
        elif type(v) is list and all(type(m) is Tensor for m in v):
            natives[key] = [m._native if m._nb is backend else native_of(m, backend)
                            for m in v]
        elif isinstance(v, Resource):  # a resource input: the variable's current value
            natives[key] = native_of(v._value, backend)
        else:
            if converted is None:
                converted = dict(inputs)
            if isinstance(v, (list, tuple)):
                vs = converted[key] = [x if type(x) is Tensor else convert_to_tensor(x)
                                       for x in v]
                natives[key] = [native_of(x, backend) for x in vs]
            else:
                t = converted[key] = convert_to_tensor(v)
                natives[key] = native_of(t, backend)
    return natives, (inputs if converted is None else converted)


def _wrap(o, inputs, backend):
    if type(o) is Alias:
        src = inputs[o.name]
        return share(src._value if isinstance(src, Resource) else src, o.shape)
    return wrap_native(o, backend)


def _run_hooked(name: str, func, inputs: dict, natives: dict, attrs: dict, backend: Backend):
    """The slow path: profiling, numeric checks, tape recording, forward accumulation."""
    c = ctx.__dict__  # one thread-local lookup instead of one per field
    profilers = c["profilers"]
    if profilers:
        b0, n0, t0 = counters[2], counters[0], _time.perf_counter()
    try:
        out = func(natives, attrs, backend)
    except DisposedError:
        raise
    except Exception as e:  # noqa: BLE001
        raise _caused(_kernel_error(name, inputs, attrs, e), e)  # no local: no frame cycle
    if profilers:
        kernel_ms = (_time.perf_counter() - t0) * 1e3
    multi = type(out) is list or type(out) is tuple
    outs = [_wrap(o, inputs, backend) for o in out] if multi else [
        _wrap(out, inputs, backend)]
    if c["debug"] or debug_on[0]:
        _check_outputs(name, inputs, attrs, outs)
    if profilers:
        for p in profilers:
            p.on_kernel(name, inputs, attrs, outs, kernel_ms, b0, n0)
    if c["tapes"] or c["watchers"]:
        hooks.record(name, inputs, attrs, outs)
    if c["accs"]:
        hooks.jvp(name, inputs, attrs, outs)
    return outs if multi else outs[0]


def _run_composite(name: str, impl, inputs: dict, attrs: dict):
    """Run a composite op: its implementation's own ops stay invisible to tapes and
    accumulators (the op is recorded once, with its own rules); variables read inside
    become the op's "resources" input."""
    c = ctx
    if not c.active:
        return _fresh(impl(inputs, attrs), inputs)[0]
    tapes, accs = c.tapes, c.accs
    c.tapes, c.accs = [], []
    try:
        with watch_variables() as seen:
            result = impl(inputs, attrs)
    finally:
        c.tapes, c.accs = tapes, accs
        c.refresh()
    inputs = with_resources(_reg.OPS[name], inputs, seen)
    packed, outs = _fresh(result, inputs)
    if c.tapes or c.watchers:
        hooks.record(name, inputs, attrs, outs)
    if c.accs:
        hooks.jvp(name, inputs, attrs, outs)
    return packed


def with_resources(op, inputs: dict, seen: dict) -> dict:
    """`inputs` with the variables a composite read (`seen`) added to its "resources"."""
    if not seen or "resources" not in op.inputs:
        return inputs
    given = list(inputs.get("resources", ()))
    return dict(inputs, resources=given + [v for v in seen.values()
                                           if all(v is not r for r in given)])


class watch_variables:
    """`with watch_variables() as seen:` collects the trainable variables read inside
    ({id: variable}), whatever tapes are active (TensorFlow's VariableWatcher)."""

    __slots__ = ("seen",)

    def __enter__(self) -> dict:
        self.seen = {}
        ctx.watchers.append(self.seen)
        ctx.refresh()
        return self.seen

    def __exit__(self, *exc):
        watchers = ctx.watchers
        for i in range(len(watchers) - 1, -1, -1):  # by identity: dicts compare by value
            if watchers[i] is self.seen:
                del watchers[i]
                break
        ctx.refresh()
        return False


def _fresh(result, inputs: dict):
    """(result as run_kernel returns it, flat outputs): outputs that are inputs, or repeat
    an earlier output, get a tensor of their own (sharing the buffer) so ids stay distinct."""
    multi = type(result) is list or type(result) is tuple
    outs = list(result) if multi else ([] if result is None else [result])
    taken = set()
    for v in inputs.values():
        for m in (v if isinstance(v, (list, tuple)) else (v,)):
            taken.add(id(m))
    for i, o in enumerate(outs):
        if id(o) in taken:
            outs[i] = o = share(o)
        taken.add(id(o))
    return (outs if multi or result is None else outs[0]), outs


class no_recording:
    """`with no_recording():` runs ops invisible to every tape and accumulator of this
    thread (a class, not a generator: variable updates use it on every step)."""

    __slots__ = ("saved",)

    def __enter__(self):
        c = ctx
        self.saved = (c.tapes, c.accs)
        if c.tapes or c.accs:
            c.tapes, c.accs = [], []
            c.refresh()
        return self

    def __exit__(self, *exc):
        c = ctx
        if c.tapes is not self.saved[0] or c.accs is not self.saved[1]:
            c.tapes, c.accs = self.saved
            c.refresh()
        return False


def set_debug(on: bool) -> None:
    """Check every kernel's outputs for NaN/Inf (config.set_debug), in every thread."""
    set_debug_everywhere(on)


# --------------------------------------------------------------------------- errors


def _caused(err, e):
    if err is not e:
        err.__cause__ = e
    return err


def describe_input(v) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(describe(x) for x in v) + "]"
    return describe(v)


def shape_args(inputs: dict, attrs: dict) -> tuple:
    """The arguments of a shape rule for one call: (shapes, dtypes, attrs) by input name."""
    shapes = {k: ([x._shape for x in v] if isinstance(v, (list, tuple)) else v._shape)
              for k, v in inputs.items()}
    dtypes = {k: ([x.dtype for x in v] if isinstance(v, (list, tuple)) else v.dtype)
              for k, v in inputs.items()}
    return shapes, dtypes, attrs


def _kernel_error(name, inputs, attrs, e):
    """The error to raise for a failing kernel: the shape rule's precise message when it
    rejects the inputs, else the kernel's error with the op, shapes and dtypes."""
    if isinstance(e, InvalidArgumentError):
        return e
    shape_rule = _reg.SHAPES.get(name)
    if shape_rule is not None:
        try:
            shape_rule(*shape_args(inputs, attrs))
        except InvalidArgumentError as precise:
            msg = str(precise)
            shapes = ", ".join(f"{k}: {describe_input(v)}" for k, v in inputs.items())
            if not msg.startswith(name):
                msg = f"{name}: {msg.split(': ', 1)[-1] if msg.startswith('binary op') else msg}"
            return InvalidArgumentError(f"{msg} (inputs {shapes})")
        except Exception:  # noqa: BLE001 - fall back to the generic message
            pass
    desc = ", ".join(f"{k}: {describe_input(v)}" for k, v in inputs.items())
    return InvalidArgumentError(f"{name}: {type(e).__name__}: {e} (inputs {desc}; "
                                f"attrs {dict(attrs)})")


def _check_outputs(name, inputs, attrs, outs):
    """Debug mode: NaN/Inf in the outputs, and the output count the op registered."""
    op = _reg.OPS.get(name)
    if op is not None:
        try:
            n = op.count_outputs(shape_args(inputs, attrs))
        except Exception:  # noqa: BLE001 - the kernel accepted the call: trust it
            n = None
        if n is not None and n != len(outs):
            raise InvalidArgumentError(f"{name}: the kernel returned {len(outs)} outputs but "
                                       f"the op is registered with {n}")
    check_numerics(name, inputs, outs, "forward", source=user_site)


def check_numerics(name, inputs, outs, phase, source=None) -> None:
    """Raise naming the op (and the user's line) if an output holds NaN or Inf."""
    for i, o in enumerate(outs):
        if o is None or type(o) is not Tensor or o._buf == SYMBOLIC:
            continue  # a traced tensor has no value yet: the executor checks it at run time
        if o.dtype.is_floating or o.dtype.is_complex:
            arr = o._read()
            if not np.all(np.isfinite(arr)):
                bad = "NaN" if np.any(np.isnan(arr)) else "Inf"
                shapes = {k: describe_input(v) for k, v in inputs.items()}
                if phase == "forward" and ctx.rule_of:
                    # an op run by a VJP or JVP rule: blame the op being differentiated
                    op_name, site, kind = ctx.rule_of[-1]
                    name = f"{name} in the {kind} rule of {op_name}"
                    phase, source = "backward" if kind == "backward" else "forward-mode", site
                if callable(source):
                    source = source()
                where = f"; the forward op was created at {source}" if source else ""
                raise InvalidArgumentError(
                    f"check_numerics: {bad} in output {i} of {name} ({phase} pass), input "
                    f"shapes {shapes}{where}")
