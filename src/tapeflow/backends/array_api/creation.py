"""Array-API kernels that create tensors (Range, Eye fall back to NumPy: host-made)."""
import math
import weakref

from ..numpy._kernel import check_rank
from ._kernel import xp_kernel


@xp_kernel("Fill")
def fill(inputs, attrs, b):
    check_rank("fill", len(attrs["shape"]))
    value = inputs["value"]
    return b.xp.zeros(tuple(attrs["shape"]), dtype=value.dtype) + value


@xp_kernel("ZerosLike")
def zeros_like(inputs, attrs, b):
    return b.xp.zeros_like(inputs["x"])


@xp_kernel("OnesLike")
def ones_like(inputs, attrs, b):
    return b.xp.ones_like(inputs["x"])


@xp_kernel("Zeros")
def zeros(inputs, attrs, b):
    check_rank("zeros", len(attrs["shape"]))
    return b.xp.zeros(tuple(attrs["shape"]), dtype=b.dtype(attrs["dtype"]))


@xp_kernel("Ones")
def ones(inputs, attrs, b):
    check_rank("ones", len(attrs["shape"]))
    return b.xp.ones(tuple(attrs["shape"]), dtype=b.dtype(attrs["dtype"]))


# A traced graph's constants are NumPy arrays: each is moved to a backend once, not on
# every call of the compiled function (on a GPU that is a host-to-device copy).
_moved: dict = {}


@xp_kernel("Const")
def const(inputs, attrs, b):
    value = attrs["value"]
    if type(value) is b.native_type:
        return value
    key = (id(value), b)
    hit = _moved.get(key)
    if hit is None or hit[0]() is not value:
        try:
            # (the dict bound now: at interpreter exit the module's globals are gone
            # when the last constants die)
            ref = weakref.ref(value, lambda _, k=key, moved=_moved: moved.pop(k, None))
        except TypeError:  # (a NumPy scalar cannot be referenced weakly: moved each time)
            return b.to_native(value)
        hit = _moved[key] = (ref, b.to_native(value))
    return hit[1]


@xp_kernel("OneHot")
def one_hot(inputs, attrs, b):
    xp, idx = b.xp, inputs["indices"]
    dt = b.dtype(attrs["dtype"])
    check_rank("one_hot", idx.ndim + 1)
    hot = idx[..., None] == xp.arange(attrs["depth"], dtype=idx.dtype)
    out = xp.where(hot, xp.asarray(attrs["on_value"], dtype=dt),
                   xp.asarray(attrs["off_value"], dtype=dt))
    if attrs["axis"] != idx.ndim:
        out = xp.moveaxis(out, -1, attrs["axis"])
    return out


@xp_kernel("Range")
def range_(inputs, attrs, b):
    xp = b.xp
    start, limit, delta = attrs["start"], attrs["limit"], attrs["delta"]
    dt = b.dtype(attrs["dtype"])
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return xp.arange(start, limit, delta, dtype=dt)
    n = max(int(math.ceil((limit - start) / delta)), 0)
    return xp.astype(start + xp.arange(n, dtype=xp.float64) * delta, dt)


@xp_kernel("Eye")
def eye(inputs, attrs, b):
    xp = b.xp
    rows, cols = attrs["num_rows"], attrs["num_columns"]
    check_rank("eye", len(attrs["batch_shape"]) + 2)
    dt = b.dtype(attrs["dtype"])
    return xp.zeros(tuple(attrs["batch_shape"]) + (rows, cols), dtype=dt) + xp.eye(
        rows, cols, dtype=dt)
