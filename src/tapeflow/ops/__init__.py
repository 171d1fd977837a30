"""Op families. Each op is defined once in its family module: public function, shape
rule, VJP rule and JVP rule side by side; its kernels live in backends/<name>/."""
from __future__ import annotations

import importlib
import types

from .._core import tensor as _tensor
from .._core.convert import convert_to_tensor
from . import _op

FAMILIES = ("creation", "math", "reduction", "array", "indexing", "linalg", "nn", "conv", "random",
            "state", "control_flow")
modules = []
for _family in FAMILIES:
    try:
        modules.append(importlib.import_module(f"{__name__}.{_family}"))
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise

# The namespace tensors' operators and the engine dispatch through (see _core/tensor.py).
namespace = types.SimpleNamespace(sum_to_shape=_op.sum_to_shape,
                                  convert_to_tensor=convert_to_tensor)
for _m in modules:
    for _name, _obj in vars(_m).items():
        if getattr(_obj, "__module__", None) == _m.__name__ and callable(_obj):
            setattr(namespace, _name, _obj)
_tensor._ops = namespace
