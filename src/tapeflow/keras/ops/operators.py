"""Installs KerasTensor's operators as the `keras.ops` functions (as ops/operators.py does
for Tensor): `h + a`, `x * 2.0`, `x[:, 1:4]`, `-x`, `a @ b` on KerasTensors record
Operations (Add, Multiply, GetItem, Negative, Matmul) in the functional graph.

Example:
    >>> x = tf.keras.Input((3,))
    >>> (x * 2.0 + x).shape
    (None, 3)
"""
from __future__ import annotations

from ..layer import KerasTensor
from . import core, nn, numpy as _np

__all__: list = []


def _swap(fn):
    return lambda self, other: fn(other, self)


def _refuse(what: str):
    def method(self, *args):
        raise TypeError(f"A KerasTensor is symbolic: it has no value, so it cannot be used as "
                        f"a Python {what}. Use keras.ops (e.g. keras.ops.cond) or a layer; "
                        f"got {self!r}")
    return method


_OPERATORS = {
    "__add__": _np.add, "__radd__": _swap(_np.add),
    "__sub__": _np.subtract, "__rsub__": _swap(_np.subtract),
    "__mul__": _np.multiply, "__rmul__": _swap(_np.multiply),
    "__truediv__": _np.true_divide, "__rtruediv__": _swap(_np.true_divide),
    "__div__": _np.true_divide, "__rdiv__": _swap(_np.true_divide),
    "__floordiv__": _np.floor_divide, "__rfloordiv__": _swap(_np.floor_divide),
    "__mod__": _np.mod, "__rmod__": _swap(_np.mod),
    "__pow__": _np.power, "__rpow__": _swap(_np.power),
    "__matmul__": _np.matmul, "__rmatmul__": _swap(_np.matmul),
    "__and__": _np.logical_and, "__rand__": _swap(_np.logical_and),
    "__or__": _np.logical_or, "__ror__": _swap(_np.logical_or),
    "__xor__": _np.logical_xor, "__rxor__": _swap(_np.logical_xor),
    # comparisons (not == / !=: a KerasTensor is a dict key and compares by identity)
    "__lt__": _np.less, "__le__": _np.less_equal, "__gt__": _np.greater,
    "__ge__": _np.greater_equal,
    "__neg__": _np.negative, "__abs__": _np.abs, "__invert__": _np.logical_not,
    "__round__": lambda self, ndigits=None: _np.round(self, ndigits or 0),
    "__getitem__": _np.get_item,
    "__bool__": _refuse("bool (in `if` or `while`)"), "__iter__": _refuse("iterable"),
    "__array__": _refuse("array (NumPy)"),
    "reshape": lambda self, newshape: _np.reshape(self, newshape),
    "squeeze": lambda self, axis=None: _np.squeeze(self, axis),
    "astype": lambda self, dtype: core.cast(self, dtype),
}
for _name, _fn in _OPERATORS.items():
    setattr(KerasTensor, _name, _fn)
del nn  # imported so every keras.ops function is registered before a model is loaded
