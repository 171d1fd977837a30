"""Variables' state as ops: reads and assignments go through `run_kernel` like any other
op, so tapes, accumulators and (later) the tracer see them.

ReadVariableOp and the Assign* ops are composites (the same on every backend): a read
shares the variable's current buffer; an assignment replaces it, or, when no tensor
shares that buffer, writes into it in place (InplaceAdd/InplaceSub kernels).
"""
from __future__ import annotations

import sys

import numpy as np

from .._core import registry as _reg
from .._core.backends import REGISTRY as _backends
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import InvalidArgumentError
from .._core.indexed_slices import IndexedSlices
from .._core.memory import native_of, share, wrap_native
from .._core.tensor import Tensor
from .._core.variable import own_copy, Variable
from ._define import defop, passthrough


def _value_shape(shapes, dtypes, attrs):
    return [(tuple(shapes["resource"]), dtypes["resource"])]


def _assign_shape(shapes, dtypes, attrs):
    if tuple(shapes["resource"]) != tuple(shapes["value"]) and shapes["value"] != ():
        raise InvalidArgumentError(f"AssignVariableOp: value shape {list(shapes['value'])} "
                                   f"does not match the variable's {list(shapes['resource'])}")
    return []


def _inplace_shape(shapes, dtypes, attrs):
    return [(tuple(shapes["ref"]), dtypes["ref"])]


# ---------------------------------------------------------------- reading


def _read(inputs, attrs):
    var = inputs["resource"]
    with var._lock:
        return share(var._value)


def _read_native(inputs, attrs, backend):
    var = inputs["resource"]
    with var._lock:
        return native_of(var._value, backend)


def _onnx_read_variable(e, node):
    e.alias(node.outputs[0], e.name_of(node.inputs["resource"]))


defop("ReadVariableOp", ["resource"], shape=_value_shape, impl=_read, native=_read_native,
      stateful=True,
      vjp={"resource": passthrough}, jvp={"resource": lambda t: t}, onnx=_onnx_read_variable)


def read_variable(var: Variable) -> Tensor:
    """A fresh tensor holding the variable's value (tapes watch trainable variables read).

    Example: `tf.Variable(1.0).read_value()` runs this op.
    """
    return run_kernel("ReadVariableOp", {"resource": var})


# ---------------------------------------------------------------- assigning


def _replace(var: Variable, t: Tensor) -> None:
    old = var._value
    var._value = own_copy(t)
    old._release()


def _assign(inputs, attrs):
    var = inputs["resource"]
    with var._lock:
        _replace(var, inputs["value"])


def _update(kernel: str, fallback: str):
    """An in-place update when nothing else sees the buffer, else a new value."""
    def impl(inputs, attrs):
        var, value = inputs["resource"], inputs["value"]
        with var._lock:  # read, compute and write back as one step for other threads
            if not _update_in_place(kernel, var._value, value):
                _replace(var, run_kernel(fallback, {"x": var._value, "y": value}))
    return impl


# How a compiled graph runs them: on native arrays, like kernels (function/executor.py).
def _assign_native(inputs, attrs, backend):
    var = inputs["resource"]
    with var._lock:
        _replace(var, wrap_native(inputs["value"], backend))


def _update_native(kernel: str, fallback: str):
    def run(inputs, attrs, backend):
        var, value = inputs["resource"], inputs["value"]
        with var._lock:
            target = var._value
            if _unshared(target, backend):
                _kernel(kernel, backend)({"ref": target._native, "value": value}, _NO_ATTRS,
                                         backend)
            else:
                new = _kernel(fallback, backend)({"x": native_of(target, backend),
                                                  "y": value}, _NO_ATTRS, backend)
                _replace(var, wrap_native(new, backend))
    return run


defop("AssignVariableOp", ["resource", "value"], num_outputs=0, shape=_assign_shape,
      impl=_assign, native=_assign_native, differentiable=False, stateful=True)
defop("AssignAddVariableOp", ["resource", "value"], num_outputs=0, shape=_assign_shape,
      impl=_update("InplaceAdd", "Add"), native=_update_native("InplaceAdd", "Add"),
      differentiable=False, stateful=True)
defop("AssignSubVariableOp", ["resource", "value"], num_outputs=0, shape=_assign_shape,
      impl=_update("InplaceSub", "Sub"), native=_update_native("InplaceSub", "Sub"),
      differentiable=False, stateful=True)
# Kernels writing into their input `ref`'s buffer; used only through _update_in_place.
defop("InplaceAdd", ["ref", "value"], shape=_inplace_shape, differentiable=False,
      stateful=True)
defop("InplaceSub", ["ref", "value"], shape=_inplace_shape, differentiable=False,
      stateful=True)


# ---------------------------------------------------------------- product updates
# `var += sign * alpha * (op(a) @ op(b))` (alpha a 0-d tensor), made by the optimizer
# (function/rules/products.py) from an assignment of a scaled matrix product, SGD's
# `w.assign_sub(lr * x^T dy)`: where nothing else shares the variable's buffer, one BLAS
# product accumulates into it (InplaceAddMatMul), with no product array and no second pass.


def _product_update_shape(shapes, dtypes, attrs):
    a, b = shapes["a"], shapes["b"]
    if len(a) != 2 or len(b) != 2 or shapes["alpha"] != ():
        raise InvalidArgumentError(f"AssignAddMatMul: operands must be matrices and alpha a "
                                   f"scalar, got shapes {list(a)}, {list(b)} and "
                                   f"{list(shapes['alpha'])}")
    m, k = (a[1], a[0]) if attrs["adjoint_a"] else (a[0], a[1])
    k2, n = (b[1], b[0]) if attrs["adjoint_b"] else (b[0], b[1])
    var = tuple(shapes["resource"])
    if (None not in (k, k2) and k != k2) or (None not in (m, n) and None not in var
                                             and var != (m, n)):
        raise InvalidArgumentError(f"AssignAddMatMul: a product of shapes {list(a)} and "
                                   f"{list(b)} does not update a variable of shape {list(var)}")
    return []


def _product_attrs(attrs) -> dict:
    return {"adjoint_a": attrs["adjoint_a"], "adjoint_b": attrs["adjoint_b"],
            "shared_b": False}


def _updates(attrs) -> tuple:
    return ("InplaceAdd", "Add") if attrs["sign"] > 0 else ("InplaceSub", "Sub")


def _product_update(inputs, attrs):
    product = run_kernel("MatMul", {"a": inputs["a"], "b": inputs["b"]}, _product_attrs(attrs))
    product = run_kernel("Mul", {"x": product, "y": inputs["alpha"]})
    _update(*_updates(attrs))({"resource": inputs["resource"], "value": product}, _NO_ATTRS)


def _product_update_native(inputs, attrs, backend):
    var = inputs["resource"]
    fused = _reg.KERNELS.get("InplaceAddMatMul", {}).get(backend.name)
    if fused is not None:
        with var._lock:
            target = var._value
            if _unshared(target, backend):
                fused.func({"ref": target._native, "a": inputs["a"], "b": inputs["b"],
                            "alpha": inputs["alpha"]}, attrs, backend)
                return
    product = _kernel("MatMul", backend)({"a": inputs["a"], "b": inputs["b"]},
                                         _product_attrs(attrs), backend)
    product = _kernel("Mul", backend)({"x": product, "y": inputs["alpha"]}, _NO_ATTRS, backend)
    _update_native(*_updates(attrs))({"resource": var, "value": product}, _NO_ATTRS, backend)


defop("AssignAddMatMul", ["resource", "a", "b", "alpha"], num_outputs=0,
      shape=_product_update_shape, impl=_product_update, native=_product_update_native,
      differentiable=False, stateful=True)
# ref += sign * alpha * (op(a) @ op(b)) in ref's buffer; used only through AssignAddMatMul
defop("InplaceAddMatMul", ["ref", "a", "b", "alpha"], shape=lambda shapes, dtypes, attrs: [
    (tuple(shapes["ref"]), dtypes["ref"])], differentiable=False, stateful=True)


_UNSHARED: list = []


def _unshared_refs() -> int:
    """References an array of a tensor nobody else sees has (measured once, as below)."""
    if not _UNSHARED:
        probe = wrap_native(np.zeros(1), _backends.active or _backends.ensure_active())
        native = probe._native
        _UNSHARED.append(sys.getrefcount(native))  # same pattern: buffer, tensor, local, arg
    return _UNSHARED[0]


def _unshared(target: Tensor, backend) -> bool:
    """Whether `target`'s buffer may be written in place: no other tensor shares it (so no
    tensor's value changes behind its back) and its data is on `backend`."""
    buf = target._buf
    if not buf or buf.refs != 1 or target._nb is not backend:
        return False
    native = target._native
    # Only memory the buffer owns outright: not a view (base set), not viewed by any other
    # array (a view holds a reference to its base), not writable-protected. References:
    # the buffer, the tensor, this local and getrefcount's argument.
    # (an array-API array has no `base`: never in place; CuPy's have no writeable flag)
    return (getattr(native, "base", 0) is None and getattr(native.flags, "writeable", True)
            and sys.getrefcount(native) <= _unshared_refs())


def _update_in_place(kernel: str, target: Tensor, value: Tensor) -> bool:
    """Run a kernel writing into `target`'s buffer when `_unshared`; False otherwise."""
    if not _unshared(target, _backends.active or _backends.ensure_active()):
        return False
    run_kernel(kernel, {"ref": target, "value": value})  # the kernel returns Alias("ref")
    return True


_NO_ATTRS: dict = {}


def _kernel(name: str, backend):
    return _reg.KERNELS[name][backend.name].func


# ---------------------------------------------------------------- sparse updates
# Optimizers' IndexedSlices updates touch only the rows they name: a scatter into the
# variable's buffer (in place when nothing else sees it), never a dense delta.


def _scatter_shape(op: str):
    def rule(shapes, dtypes, attrs):
        vs, ids, us = (tuple(shapes[k]) for k in ("resource", "indices", "updates"))
        if not dtypes["indices"].is_integer:
            raise InvalidArgumentError(f"{op}: indices must be integers, got "
                                       f"{dtypes['indices'].name}")
        if not vs or not _dims_fit(us, ids + vs[1:]):
            raise InvalidArgumentError(
                f"{op}: updates of shape {list(us)} must have shape indices.shape + "
                f"variable.shape[1:] = {list(ids + vs[1:])} (indices {list(ids)}, variable "
                f"{list(vs)}, which must be at least 1-D)")
        return []
    return rule


def _dims_fit(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _scatter(kernel: str):
    def impl(inputs, attrs):
        var = inputs["resource"]
        args = {"indices": inputs["indices"],
                "updates": convert_to_tensor(inputs["updates"], dtype=var.dtype)}
        with var._lock:
            if _unshared(var._value, _backends.active or _backends.ensure_active()):
                run_kernel(kernel, {"ref": var._value, **args})
            else:  # a tensor still shares the value: update a private copy, then swap it in
                copy = run_kernel("Add", {"x": var._value,
                                          "y": convert_to_tensor(0, dtype=var.dtype)})
                run_kernel(kernel, {"ref": copy, **args})
                _replace(var, copy)
    return impl


defop("InplaceScatterAdd", ["ref", "indices", "updates"], shape=_inplace_shape,
      differentiable=False, stateful=True)
defop("InplaceScatterUpdate", ["ref", "indices", "updates"], shape=_inplace_shape,
      differentiable=False, stateful=True)
defop("ResourceScatterAdd", ["resource", "indices", "updates"], num_outputs=0,
      shape=_scatter_shape("ResourceScatterAdd"), impl=_scatter("InplaceScatterAdd"),
      differentiable=False, stateful=True)
defop("ResourceScatterUpdate", ["resource", "indices", "updates"], num_outputs=0,
      shape=_scatter_shape("ResourceScatterUpdate"), impl=_scatter("InplaceScatterUpdate"),
      differentiable=False, stateful=True)


def _unique_sum_shape(shapes, dtypes, attrs):
    vs, ids = tuple(shapes["values"]), tuple(shapes["indices"])
    if len(ids) != 1 or not dtypes["indices"].is_integer or not _dims_fit(vs[:1], ids):
        raise InvalidArgumentError(
            f"UniqueSegmentSum: indices must be a 1-D integer tensor matching values' first "
            f"dimension; got indices {list(ids)} {dtypes['indices'].name}, values {list(vs)}")
    # How many distinct indices there are is only known from the data.
    return [((None,) + vs[1:], dtypes["values"]), ((None,), dtypes["indices"])]


defop("UniqueSegmentSum", ["values", "indices"], num_outputs=2, shape=_unique_sum_shape,
      differentiable=False)


def deduplicate_slices(slices):
    """The IndexedSlices `slices` with duplicate indices summed into one row each (sorted).

    Example: values [[1.], [2.], [3.]] at indices [2, 0, 2] -> [[2.], [4.]] at [0, 2].
    """
    values, indices = run_kernel("UniqueSegmentSum", {"values": slices.values,
                                                      "indices": slices.indices})
    return IndexedSlices(values, indices, slices.dense_shape)
