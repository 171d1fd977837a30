"""Tensor's Python operators: `+`, `@`, `<`, `[]`, iteration... are the validating public
ops, installed on the class once the op families exist (as TensorFlow's math_ops
overrides Tensor's operators), so `x + 1.0` converts and checks exactly like `tf.add`.

TensorFlow 2 semantics: `==` and `!=` are elementwise; `&`, `|`, `^`, `~` are logical.
"""
from __future__ import annotations

from .._core.tensor import Tensor
from .array import unstack
from .indexing import getitem
from .linalg import matmul
from .math import (abs, add, equal, floordiv, floormod, greater, greater_equal, less, less_equal,
                   logical_and, logical_not, logical_or, logical_xor, multiply, negative,
                   not_equal, pow, subtract, truediv)

# operator -> the public op of (self, other); reflected ones swap the operands
_BINARY = {"add": add, "sub": subtract, "mul": multiply, "truediv": truediv,
           "floordiv": floordiv, "mod": floormod, "pow": pow, "matmul": matmul,
           "and": logical_and, "or": logical_or, "xor": logical_xor}
_COMPARISONS = {"lt": less, "le": less_equal, "gt": greater, "ge": greater_equal,
                "eq": equal, "ne": not_equal}


def _reflected(op):
    def method(self, other):
        return op(other, self)
    return method


def _iterate(self):
    if not self._shape:
        raise TypeError("iteration over a scalar tensor")
    return iter(unstack(self, axis=0))


def _positive(self):
    return self


for _name, _op in _BINARY.items():
    setattr(Tensor, f"__{_name}__", _op)  # the function itself: (self, other) is (x, y)
    setattr(Tensor, f"__r{_name}__", _reflected(_op))
for _name, _op in _COMPARISONS.items():
    setattr(Tensor, f"__{_name}__", _op)
Tensor.__neg__ = negative
Tensor.__abs__ = abs
Tensor.__invert__ = logical_not
Tensor.__pos__ = _positive
Tensor.__getitem__ = getitem
Tensor.__iter__ = _iterate
