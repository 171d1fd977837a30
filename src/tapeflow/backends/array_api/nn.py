"""Array-API kernels of the neural-network family: activations, softmax, losses."""
from ..._core.errors import InvalidArgumentError
from ._kernel import xp_kernel


@xp_kernel("Relu")
def relu(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.maximum(x, b.xp.zeros_like(x))


@xp_kernel("ReluGrad")
def relu_grad(inputs, attrs, b):
    dy, y = inputs["dy"], inputs["y"]
    return b.xp.where(y > 0, dy, b.xp.zeros_like(dy))


@xp_kernel("Relu6")
def relu6(inputs, attrs, b):
    return b.xp.clip(inputs["x"], 0, 6)


@xp_kernel("Relu6Grad")
def relu6_grad(inputs, attrs, b):
    dy, y = inputs["dy"], inputs["y"]
    return b.xp.where((y > 0) & (y < 6), dy, b.xp.zeros_like(dy))


@xp_kernel("LeakyRelu")
def leaky_relu(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    zero = xp.zeros_like(x)
    return xp.maximum(x, zero) + attrs["alpha"] * xp.minimum(x, zero)


@xp_kernel("LeakyReluGrad")
def leaky_relu_grad(inputs, attrs, b):
    dy = inputs["dy"]
    return b.xp.where(inputs["x"] > 0, dy, attrs["alpha"] * dy)


@xp_kernel("Elu")
def elu(inputs, attrs, b):
    xp, x = b.xp, inputs["x"]
    zero = xp.zeros_like(x)
    return xp.expm1(xp.minimum(x, zero)) + xp.maximum(x, zero)


def _log_softmax(xp, x, axis):
    if not x.size:
        return xp.asarray(x, copy=True)
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


@xp_kernel("Softmax")
def softmax(inputs, attrs, b):
    xp, x, axis = b.xp, inputs["logits"], attrs["axis"]
    if not x.size:
        return xp.asarray(x, copy=True)
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


@xp_kernel("SoftmaxGrad")
def softmax_grad(inputs, attrs, b):
    dy, y = inputs["dy"], inputs["y"]
    p = dy * y
    return p - y * b.xp.sum(p, axis=attrs["axis"], keepdims=True)


@xp_kernel("LogSoftmax")
def log_softmax(inputs, attrs, b):
    return _log_softmax(b.xp, inputs["logits"], attrs["axis"])


@xp_kernel("LogSoftmaxGrad")
def log_softmax_grad(inputs, attrs, b):
    xp, dy = b.xp, inputs["dy"]
    return dy - xp.exp(inputs["y"]) * xp.sum(dy, axis=attrs["axis"], keepdims=True)


@xp_kernel("BiasAdd")
def bias_add(inputs, attrs, b):
    value, bias = inputs["value"], inputs["bias"]
    if attrs["data_format"] == "NCHW":
        bias = b.xp.reshape(bias, bias.shape + (1,) * (value.ndim - 2))
    return value + bias


@xp_kernel("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy(inputs, attrs, b):
    xp, labels, axis = b.xp, inputs["labels"], attrs["axis"]
    logsm = _log_softmax(xp, inputs["logits"], axis)
    loss = -xp.sum(labels * logsm, axis=axis)
    # d loss / d logits = softmax * sum(labels) - labels (exact for unnormalized labels)
    return [loss, xp.exp(logsm) * xp.sum(labels, axis=axis, keepdims=True) - labels]


@xp_kernel("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy(inputs, attrs, b):
    xp, labels, logits = b.xp, inputs["labels"], inputs["logits"]
    classes = logits.shape[-1]
    flat = xp.reshape(labels, (-1,))
    n = flat.shape[0]
    if n and bool(xp.any((flat < 0) | (flat >= classes))):
        bad = flat[xp.nonzero((flat < 0) | (flat >= classes))[0][:1]]
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: labels must be in [0, {classes}) "
            f"(the number of classes, logits' last dimension), got label "
            f"{int(b.from_native(bad)[0])}")
    x = xp.reshape(logits, (n, classes))
    shifted = x - xp.max(x, axis=-1, keepdims=True) if n and classes else x
    hot = xp.astype(flat[:, None] == xp.arange(classes, dtype=flat.dtype), x.dtype)
    picked = xp.sum(shifted * hot, axis=-1)
    e = xp.exp(shifted)
    total = xp.sum(e, axis=-1)
    loss = xp.log(total) - picked
    return [xp.reshape(loss, labels.shape),
            xp.reshape(e / total[:, None] - hot, logits.shape)]


@xp_kernel("SigmoidCrossEntropyWithLogits")
def sigmoid_cross_entropy(inputs, attrs, b):
    xp, z, x = b.xp, inputs["labels"], inputs["logits"]
    # max(x, 0) - x z + log(1 + exp(-|x|)): never exponentiates a large positive number
    return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, xp.zeros_like(x)) - x * z


@xp_kernel("L2Loss")
def l2_loss(inputs, attrs, b):
    x = inputs["x"]
    return b.xp.sum(x * x, dtype=x.dtype) / 2
