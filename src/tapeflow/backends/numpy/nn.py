"""NumPy kernels of the neural-network family: activations, softmax, losses, bias_add."""
import numpy as np

from ..._core.errors import InvalidArgumentError
from ._kernel import ensure_array, kernel

# np.where with a data-dependent mask is several times slower than multiplying by the mask
# on random data (branch misprediction), so the masked kernels below multiply.


@kernel("Relu")
def relu(inputs, attrs, backend):
    return ensure_array(np.maximum(inputs["x"], 0))


@kernel("ReluGrad")
def relu_grad(inputs, attrs, backend):
    return ensure_array(inputs["dy"] * (inputs["y"] > 0))


@kernel("Relu6")
def relu6(inputs, attrs, backend):
    return ensure_array(np.clip(inputs["x"], 0, 6))


@kernel("Relu6Grad")
def relu6_grad(inputs, attrs, backend):
    y = inputs["y"]
    return ensure_array(inputs["dy"] * ((y > 0) & (y < 6)))


@kernel("LeakyRelu")
def leaky_relu(inputs, attrs, backend):
    x = inputs["x"]
    # exact for any alpha (maximum(x, alpha * x) is only right for alpha <= 1)
    return ensure_array(np.maximum(x, 0) + attrs["alpha"] * np.minimum(x, 0))


@kernel("LeakyReluGrad")
def leaky_relu_grad(inputs, attrs, backend):
    dy, alpha = inputs["dy"], attrs["alpha"]
    scale = (inputs["x"] > 0).astype(dy.dtype)
    scale *= 1.0 - alpha
    scale += alpha
    return ensure_array(dy * scale)


@kernel("Elu")
def elu(inputs, attrs, backend):
    x = inputs["x"]
    # expm1 of the negative part only: no overflow warnings for large positive inputs
    return ensure_array(np.expm1(np.minimum(x, 0)) + np.maximum(x, 0))


def _softmax(x, axis):
    if not x.size:  # an empty axis (in a traced graph; eager calls skip the kernel)
        return x.copy()
    e = x - np.max(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def _log_softmax(x, axis):
    if not x.size:
        return x.copy()
    s = x - np.max(x, axis=axis, keepdims=True)
    s -= np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    return s


@kernel("Softmax")
def softmax(inputs, attrs, backend):
    return _softmax(inputs["logits"], attrs["axis"])


@kernel("SoftmaxGrad")
def softmax_grad(inputs, attrs, backend):
    dy, y = inputs["dy"], inputs["y"]
    p = dy * y
    p -= y * np.sum(p, axis=attrs["axis"], keepdims=True)
    return p


@kernel("LogSoftmax")
def log_softmax(inputs, attrs, backend):
    return _log_softmax(inputs["logits"], attrs["axis"])


@kernel("LogSoftmaxGrad")
def log_softmax_grad(inputs, attrs, backend):
    dy = inputs["dy"]
    e = np.exp(inputs["y"]) * np.sum(dy, axis=attrs["axis"], keepdims=True)
    # in place unless dy and y broadcast (a batched tangent against y)
    return np.subtract(dy, e, out=e) if e.shape == dy.shape else dy - e


@kernel("BiasAdd")
def bias_add(inputs, attrs, backend):
    value, bias = inputs["value"], inputs["bias"]
    if attrs["data_format"] == "NCHW":
        bias = bias.reshape(bias.shape + (1,) * (value.ndim - 2))
    return value + bias


@kernel("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy(inputs, attrs, backend):
    labels, axis = inputs["labels"], attrs["axis"]
    logsm = _log_softmax(inputs["logits"], axis)
    loss = ensure_array(-np.sum(labels * logsm, axis=axis))  # a scalar for 1-D logits
    # d loss / d logits = softmax * sum(labels) - labels (exact even for unnormalized labels)
    np.exp(logsm, out=logsm)
    logsm *= np.sum(labels, axis=axis, keepdims=True)
    logsm -= labels
    return [loss, logsm]


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy(inputs, attrs, backend):
    labels, logits = inputs["labels"], inputs["logits"]
    classes = logits.shape[-1]
    flat = labels.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= classes):
        bad = flat[(flat < 0) | (flat >= classes)][0]
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: labels must be in [0, {classes}) "
            f"(the number of classes, logits' last dimension), got label {int(bad)}")
    x = logits.reshape(flat.size, classes)  # (not -1: ambiguous when classes is 0)
    rows = np.arange(x.shape[0])
    shifted = x - np.max(x, axis=-1, keepdims=True)
    picked = shifted[rows, flat]
    np.exp(shifted, out=shifted)
    total = np.sum(shifted, axis=-1)
    shifted /= total[:, None]
    loss = np.log(total)
    loss -= picked
    shifted[rows, flat] -= 1  # backprop = softmax - one_hot(labels)
    return [loss.reshape(labels.shape), shifted.reshape(logits.shape)]


@kernel("SigmoidCrossEntropyWithLogits")
def sigmoid_cross_entropy(inputs, attrs, backend):
    z, x = inputs["labels"], inputs["logits"]
    # max(x, 0) - x z + log(1 + exp(-|x|)): never exponentiates a large positive number
    out = ensure_array(np.log1p(np.exp(-np.abs(x))))
    out += np.maximum(x, 0)
    out -= x * z
    return out


@kernel("L2Loss")
def l2_loss(inputs, attrs, backend):
    x = inputs["x"]
    return np.asarray(np.sum(np.square(x), dtype=x.dtype) / 2, dtype=x.dtype)
