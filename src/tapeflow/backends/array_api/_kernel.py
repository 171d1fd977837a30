"""The array-API kernel table, the NumPy fallback, and their installation per backend name.

Kernels are `f(inputs, attrs, backend)` like NumPy's, written against `backend.xp`, the
standard namespace. An op without one runs NumPy's kernel on its inputs moved to the host
(`numpy_fallback`), warning once per op and backend: the list of such ops is
`fallback_ops()`, and docs/backends.md prints it.
"""
from __future__ import annotations

import os
import warnings
from typing import Callable

from ..._core import registry as _reg
from ..._core.backends import REGISTRY
from ..._core.dispatch import Alias

# op name -> kernel written against the array API
XP_KERNELS: dict[str, Callable] = {}
# ops whose NumPy kernel writes into its input "ref" (variable updates): the fallback
# copies the result back into the native array
_WRITES_REF = {"InplaceAdd", "InplaceSub", "InplaceScatterAdd", "InplaceScatterUpdate"}
_warned: set = set()


class FallbackWarning(UserWarning):
    """An op ran NumPy's kernel on an array-API backend (data moved to the host)."""


def xp_kernel(name: str):
    """Make the decorated `f(inputs, attrs, backend)` op `name`'s array-API kernel."""
    def deco(f):
        XP_KERNELS[name] = f
        return f
    return deco


def unary(name: str, fn: str) -> None:
    """Op `name` is the namespace's elementwise function `fn` of input x."""
    XP_KERNELS[name] = lambda inputs, attrs, b: getattr(b.xp, fn)(inputs["x"])


def binary(name: str, fn: str) -> None:
    """Op `name` is the namespace's elementwise function `fn` of inputs x and y."""
    XP_KERNELS[name] = lambda inputs, attrs, b: getattr(b.xp, fn)(inputs["x"], inputs["y"])


_NUMPY_KERNELS = os.sep + os.path.join("tapeflow", "backends", "numpy") + os.sep


def library_ops() -> list[str]:
    """tapeflow's own ops with a NumPy kernel (a kernel a user registers for "numpy" runs
    there only: register it for another backend by that backend's name)."""
    return sorted(k for k, per in _reg.KERNELS.items()
                  if "numpy" in per and _NUMPY_KERNELS in per["numpy"].site)


def fallback_ops() -> list[str]:
    """tapeflow's ops with a NumPy kernel but no array-API one (they run through NumPy)."""
    return [k for k in library_ops() if k not in XP_KERNELS]


def _to_numpy(v, backend):
    if type(v) is backend.native_type:
        return backend.from_native(v)
    if isinstance(v, (list, tuple)):
        return [_to_numpy(m, backend) for m in v]
    return v


def _from_numpy(o, backend):
    return o if type(o) is Alias else backend.to_native(o)


def numpy_fallback(op: str) -> Callable:
    """A kernel running op's NumPy kernel on host copies of the inputs; its outputs come
    back as the backend's arrays. Warns once per (op, backend)."""
    def run(inputs, attrs, backend):
        key = (op, backend.name)
        if key not in _warned:
            _warned.add(key)
            warnings.warn(f"{op}: the {backend.name!r} backend has no array-API kernel for "
                          "this op; it runs NumPy's kernel, moving its data through the "
                          "host (warned once)", FallbackWarning, stacklevel=2)
        host = {k: _to_numpy(v, backend) for k, v in inputs.items()}
        out = _reg.KERNELS[op]["numpy"].func(host, attrs, REGISTRY.find("numpy"))
        if op in _WRITES_REF:  # the update happened on the host copy: write it back
            ref = inputs["ref"]
            ref[...] = backend.to_native(host["ref"])
        if type(out) is list or type(out) is tuple:
            return [_from_numpy(o, backend) for o in out]
        return _from_numpy(out, backend)
    run.fallback = True
    return run


def install_kernels(name: str) -> None:
    """Register, under backend name `name`, the array-API kernel of every tapeflow op, or
    the NumPy fallback where there is none."""
    for op in library_ops():
        current = _reg.KERNELS[op].get(name)
        if current is not None and not getattr(current.func, "array_api", False):
            continue  # a kernel the user registered for this backend wins
        func = XP_KERNELS.get(op)
        if func is None:
            func = numpy_fallback(op)
        func.array_api = True
        _reg.register_kernel(op, name, func, override=True)
