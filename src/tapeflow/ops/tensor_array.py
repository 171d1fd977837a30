"""TensorListResize: a tensor's dimension `axis` cut or zero-padded to a run-time `size`.

The one op TensorArray needs beyond gather and tensor_scatter_nd_update: a graph-mode
TensorArray is a buffer [size, *element_shape] whose size may be a symbolic tensor (made
by resizing an empty buffer) and, with dynamic_size, grows when a write lands past its end.
It is linear in `x`: its VJP resizes the cotangent back to x's size, its JVP resizes the
tangent.
"""
from __future__ import annotations

from .._core.dispatch import run_kernel
from .._core.errors import InvalidArgumentError
from .._core.tensor import Tensor
from ._define import defop
from ._tangents import batch_dims
from .array import shape



def resize_axis(x: Tensor, size, axis: int = 0) -> Tensor:
    """`x` with dimension `axis` cut to `size` entries or padded with zeros up to it.

    Example: `resize_axis(tf.ones([2, 3]), 4)` -> shape [4, 3], the last two rows zero.
    """
    return run_kernel("TensorListResize", {"x": x, "size": size}, {"axis": axis})


def _resize_shape(shapes, dtypes, attrs):
    s, axis = shapes["x"], attrs["axis"]
    if not 0 <= axis < len(s):
        raise InvalidArgumentError(f"TensorListResize: axis {axis} is out of range for "
                                   f"shape {list(s)}")
    if tuple(shapes["size"]) != () or not dtypes["size"].is_integer:
        raise InvalidArgumentError(f"TensorListResize: size must be an integer scalar, got "
                                   f"{dtypes['size'].name}{list(shapes['size'])}")
    return [(tuple(s[:axis]) + (None,) + tuple(s[axis + 1:]), dtypes["x"])]


def _resize_vjp(g, x, *, axis):
    return resize_axis(g, shape(x)[axis], axis)


def _resize_jvp(t, x, size, *, axis):
    return resize_axis(t, size, axis + batch_dims(t, x))


defop("TensorListResize", ["x", "size"], shape=_resize_shape,
      vjp={"x": _resize_vjp}, jvp={"x": _resize_jvp})
