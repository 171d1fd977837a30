"""Array-API kernels of reductions and add_n (top-k and the scans fall back to NumPy)."""
from ._kernel import numpy_fallback, xp_kernel


def _axis(attrs):
    axis = attrs["axis"]
    return tuple(axis) if isinstance(axis, list) else axis


@xp_kernel("Sum")
def sum_(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.sum(x, axis=_axis(attrs), keepdims=attrs["keepdims"], dtype=x.dtype)


@xp_kernel("Prod")
def prod(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.prod(x, axis=_axis(attrs), keepdims=attrs["keepdims"], dtype=x.dtype)


@xp_kernel("Mean")
def mean(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    axis, keepdims = _axis(attrs), attrs["keepdims"]
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        # TensorFlow divides integer sums with truncation toward zero
        n = 1
        for k in (range(x.ndim) if axis is None else axis):
            n *= x.shape[k]
        s = xp.sum(x, axis=axis, keepdims=keepdims)
        q = xp.abs(s) // max(n, 1)
        return xp.astype(xp.where(s < 0, -q, q), x.dtype)
    if x.size == 0:  # the mean of nothing is NaN, as in TensorFlow
        return xp.sum(x, axis=axis, keepdims=keepdims) / 0
    return xp.mean(x, axis=axis, keepdims=keepdims)


def _extreme(b, x, attrs, fn, empty_value):
    xp = b.xp
    axis, keepdims = _axis(attrs), attrs["keepdims"]
    if x.size == 0:  # like TensorFlow: an empty reduction gives the identity element
        shape = xp.sum(xp.zeros(x.shape, dtype=xp.int8), axis=axis, keepdims=keepdims).shape
        return xp.full(shape, empty_value, dtype=x.dtype)
    return fn(x, axis=axis, keepdims=keepdims)


@xp_kernel("Max")
def max_(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    low = xp.iinfo(x.dtype).min if xp.isdtype(x.dtype, "integral") else -float("inf")
    return _extreme(b, x, attrs, xp.max, low)


@xp_kernel("Min")
def min_(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    high = xp.iinfo(x.dtype).max if xp.isdtype(x.dtype, "integral") else float("inf")
    return _extreme(b, x, attrs, xp.min, high)


@xp_kernel("LogSumExp")
def logsumexp(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    axis, keepdims = _axis(attrs), attrs["keepdims"]
    if x.size == 0:
        return xp.log(xp.sum(xp.exp(x), axis=axis, keepdims=keepdims))
    m = xp.max(x, axis=axis, keepdims=True)
    # shift by the max for stability; an infinite max (all -inf, or +inf) is not shifted
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.reshape(out, xp.sum(m, axis=axis).shape)


@xp_kernel("Any")
def any_(inputs, attrs, b):
    return b.xp.any(inputs["x"], axis=_axis(attrs), keepdims=attrs["keepdims"])


@xp_kernel("All")
def all_(inputs, attrs, b):
    return b.xp.all(inputs["x"], axis=_axis(attrs), keepdims=attrs["keepdims"])


@xp_kernel("ArgMax")
def argmax(inputs, attrs, b):
    return b.xp.astype(b.xp.argmax(inputs["x"], axis=attrs["axis"]),
                       b.dtype(attrs["output_type"]))


@xp_kernel("ArgMin")
def argmin(inputs, attrs, b):
    return b.xp.astype(b.xp.argmin(inputs["x"], axis=attrs["axis"]),
                       b.dtype(attrs["output_type"]))


@xp_kernel("AddN")
def add_n(inputs, attrs, b):
    xs = inputs["inputs"]
    out = xs[0] if len(xs) > 1 else b.xp.asarray(xs[0], copy=True)
    for x in xs[1:]:
        out = out + x
    return out


def _scan(b, x, attrs, name, op):
    """cumulative_sum / cumulative_prod (array API 2023.12 / 2024.12) with TensorFlow's
    exclusive and reverse flags; NumPy's kernel where the namespace lacks the function."""
    xp = b.xp
    fn = getattr(xp, name, None)
    if fn is None:
        return numpy_fallback(op)({"x": x}, attrs, b)
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]
    if reverse:
        x = xp.flip(x, axis=axis)
    out = fn(x, axis=axis, dtype=x.dtype, include_initial=exclusive)
    if exclusive:  # the running totals before each element: drop the last
        out = out[(slice(None),) * axis + (slice(0, x.shape[axis]), ...)]
    return xp.flip(out, axis=axis) if reverse else out


@xp_kernel("Cumsum")
def cumsum(inputs, attrs, b):
    return _scan(b, inputs["x"], attrs, "cumulative_sum", "Cumsum")


@xp_kernel("Cumprod")
def cumprod(inputs, attrs, b):
    return _scan(b, inputs["x"], attrs, "cumulative_prod", "Cumprod")


@xp_kernel("TopK")
def top_k(inputs, attrs, b):
    xp, x, k = b.xp, inputs["x"], attrs["k"]
    if k == 0 or x.size == 0:
        idx = xp.zeros(x.shape[:-1] + (k,), dtype=xp.int64)
        values = xp.zeros(idx.shape, dtype=x.dtype)
    else:  # largest first; among equal values the lower index first, as TensorFlow
        idx = xp.argsort(x, axis=-1, descending=True, stable=True)[..., :k]
        values = xp.take_along_axis(x, idx, axis=-1)
    return [values, xp.astype(idx, b.dtype(attrs["index_type"]))]
