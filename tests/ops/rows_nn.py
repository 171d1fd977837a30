"""Rows for the neural-network family (tapeflow.nn), checked against NumPy/SciPy formulas.

Rows named "<op>/vjp" differentiate inside `fn` so the gradient kernels (ReluGrad,
SoftmaxGrad, ...) get value, shape-rule and (higher-order) derivative tests of their own.
"""
import numpy as np
from scipy import special

import tapeflow as tf
from tapeflow.ops.nn import fused_batch_norm_training
from tests.ops.table import Row, uniform

ALL_REAL = ("float32", "float64", "int32", "int64")
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def away(*shapes, low=-2.0, high=2.0, kinks=(0.0,), gap=0.1):
    """Uniform samples pushed at least `gap` away from the kinks of piecewise ops."""
    def sample(rng, dtype):
        out = []
        for s in shapes:
            x = rng.uniform(low, high, s)
            for k in kinks:
                d = x - k
                x = np.where(np.abs(d) < gap, x + np.copysign(2 * gap, d), x)
            out.append(np.asarray(x).astype(dtype))
        return out
    return sample


def vjp_of(f, **kw):
    """fn(x, u) = the VJP of f at x with cotangent u (runs f's gradient kernels)."""
    def fn(x, u):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x, **kw)
        return tape.gradient(y, x, output_gradients=u)
    return fn


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    return np.log(np_softmax(x, axis))


def ref_xent(labels, logits, axis=-1):
    return -np.sum(labels * special.log_softmax(logits, axis=axis), axis=axis)


def xent_sample(shape, axis=-1):
    def sample(rng, dtype):
        labels = rng.uniform(0.1, 1.0, shape)
        labels /= labels.sum(axis=axis, keepdims=True)
        return [labels.astype(dtype), rng.uniform(-3, 3, shape).astype(dtype)]
    return sample


def sparse_sample(batch_shape, classes, label_dtype="int32"):
    def sample(rng, dtype):
        labels = np.asarray(rng.integers(0, classes, batch_shape)).astype(label_dtype)
        return [labels, rng.uniform(-3, 3, tuple(batch_shape) + (classes,)).astype(dtype)]
    return sample


def ref_sparse(labels, logits):
    logsm = special.log_softmax(logits, axis=-1)
    return -np.take_along_axis(logsm, labels[..., None].astype(np.int64), axis=-1)[..., 0]


def ref_bias_add(value, bias, data_format=None):
    if data_format is not None and data_format.startswith("NC"):
        bias = bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return value + bias


# Magnitudes where naive formulas overflow (exp(80) in float32 is inf) or cancel.
EXTREME = np.array([-1e4, -80.0, -1.5, 0.5, 80.0, 1e4])
EXTREME_LOGITS = np.array([[1e4, -1e4, 0.0, 3.0], [80.0, -80.0, 0.0, 1.0],
                           [-1e4, 1e4, 1e4, -3.0], [0.5, -80.0, 80.0, 80.0]])
INFS = np.array([-np.inf, -80.0, -1.0, 0.0, 1.0, 80.0, np.inf])


def fixed(*arrays, cotangent=False):
    """A sampler of these exact values (edge cases), plus a random cotangent shaped like
    the last one with `cotangent=True`."""
    def sample(rng, dtype):
        out = [np.asarray(a).astype(dtype) for a in arrays]
        if cotangent:
            out.append(rng.uniform(-2, 2, out[-1].shape).astype(dtype))
        return out
    return sample


def ref_selu(x):
    return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0)))


def loss_grads(f):
    """fn(labels, logits, u) = the VJP of the loss f in (labels, logits) with cotangent u;
    integer labels get no gradient."""
    def fn(labels, logits, u):
        xs = [labels, logits] if labels.dtype.is_floating else [logits]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            y = f(labels, logits)
        out = tape.gradient(y, xs, output_gradients=u)
        return out if len(out) == 2 else out[0]
    return fn


def distribution_sample(logits):
    def sample(rng, dtype):
        labels = rng.uniform(0.1, 1.0, logits.shape)
        labels /= labels.sum(axis=-1, keepdims=True)
        u = rng.uniform(-2, 2, logits.shape[:-1])
        return [labels.astype(dtype), logits.astype(dtype), u.astype(dtype)]
    return sample


def ref_moments(x, axes, keepdims=False):
    return (np.mean(x, axis=tuple(np.atleast_1d(axes)), keepdims=keepdims),
            np.var(x, axis=tuple(np.atleast_1d(axes)), keepdims=keepdims))


def ref_batch_norm(x, mean, variance, offset, scale, variance_epsilon):
    y = (x - mean) / np.sqrt(variance + variance_epsilon)
    if scale is not None:
        y = y * scale
    if offset is not None:
        y = y + offset
    return y


def bn_sample(x_shape, p_shape, with_affine=True):
    def sample(rng, dtype):
        out = [rng.uniform(-2, 2, x_shape), rng.uniform(-1, 1, p_shape),
               rng.uniform(0.5, 2.0, p_shape)]
        if with_affine:
            out += [rng.uniform(-1, 1, p_shape), rng.uniform(0.5, 2, p_shape)]
        else:
            out += [None, None]
        return [a.astype(dtype) if a is not None else None for a in out]
    return sample


def fbn_sample(x_shape, axis):
    def sample(rng, dtype):
        c = x_shape[axis]
        return [rng.uniform(-2, 2, x_shape).astype(dtype),
                rng.uniform(0.5, 2, c).astype(dtype), rng.uniform(-1, 1, c).astype(dtype)]
    return sample


def fbn_grad_sample(x_shape, axis):
    def sample(rng, dtype):
        return fbn_sample(x_shape, axis)(rng, dtype) + [
            rng.uniform(-1, 1, x_shape).astype(dtype)]
    return sample


def _fbn_stats(x, axis):
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    return axes, shape, mean, var


def ref_fused_bn(x, scale, offset, axis=-1, epsilon=1e-3):
    axis %= x.ndim
    _, shape, mean, var = _fbn_stats(x, axis)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    return [y * scale.reshape(shape) + offset.reshape(shape), mean, var]


def ref_fused_bn_vjp(x, scale, offset, u, axis=-1, epsilon=1e-3):
    axis %= x.ndim
    axes, shape, mean, var = _fbn_stats(x, axis)
    inv = 1 / np.sqrt(var + epsilon)
    xhat = (x - mean.reshape(shape)) * inv.reshape(shape)
    dx = (scale * inv).reshape(shape) * (u - u.mean(axis=axes, keepdims=True)
                                         - xhat * (u * xhat).mean(axis=axes, keepdims=True))
    return [dx, (u * xhat).sum(axis=axes), u.sum(axis=axes)]


def fused_bn(x, scale, offset, axis=-1, epsilon=1e-3):
    return fused_batch_norm_training(x, scale, offset, epsilon, axis)


def fused_bn_vjp(x, scale, offset, u, axis=-1, epsilon=1e-3):
    with tf.GradientTape() as tape:
        tape.watch([x, scale, offset])
        y = fused_bn(x, scale, offset, axis, epsilon)[0]
    return tape.gradient(y, [x, scale, offset], output_gradients=u)


def emb_sample(rows, dim, ids_shape, shards=1):
    def sample(rng, dtype):
        table = rng.uniform(-2, 2, (rows, dim)).astype(dtype)
        ids = rng.integers(0, rows, ids_shape).astype(np.int32)
        if shards == 1:
            return [table, ids]
        return np.array_split(table, shards) + [ids]
    return sample


def ref_clip_rows(x, max_norm):
    norm = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return x * np.minimum(1.0, max_norm / norm)


# Notes of rows left out of generated cases (see table.py).
CHANNELS_1 = "no high-rank case: the channel axis is axis 1, which leading 1s would move"
FIXED_ROWS = "the reference reads fixed rows ([:, None]) and labels (np.eye(4))"

ROWS = [
    # ---- relu family
    Row("nn.relu", tf.nn.relu, lambda x: np.maximum(x, 0), away((3, 4)), kernels=("Relu",),
        dtypes=ALL_REAL),
    Row("nn.relu/scalar", tf.nn.relu, lambda x: np.maximum(x, 0), away(()),
        kernels=("Relu",)),
    Row("nn.relu/vjp", vjp_of(tf.nn.relu), lambda x, u: u * (x > 0), away((3, 4), (3, 4)),
        kernels=("ReluGrad",), scalar=True),
    Row("nn.relu6", tf.nn.relu6, lambda x: np.clip(x, 0, 6), away((4, 5), low=-3, high=9,
                                                                   kinks=(0.0, 6.0)),
        kernels=("Relu6",), dtypes=ALL_REAL),
    Row("nn.relu6/vjp", vjp_of(tf.nn.relu6), lambda x, u: u * ((x > 0) & (x < 6)),
        away((4, 5), (4, 5), low=-3, high=9, kinks=(0.0, 6.0)), kernels=("Relu6Grad",),
        scalar=True),
    Row("nn.leaky_relu", tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x),
        away((3, 4)), kernels=("LeakyRelu",)),
    Row("nn.leaky_relu/alpha", tf.nn.leaky_relu,
        lambda x, alpha: np.where(x > 0, x, alpha * x), away((2, 3, 2)),
        kernels=("LeakyRelu",), kwargs={"alpha": 0.05}),
    Row("nn.leaky_relu/alpha_gt_1", tf.nn.leaky_relu,
        lambda x, alpha: np.where(x > 0, x, alpha * x), away((5,)),
        kernels=("LeakyRelu",), kwargs={"alpha": 1.5}),
    Row("nn.leaky_relu/int", tf.nn.leaky_relu,
        lambda x: np.where(x > 0, x, 0.2 * x).astype(np.float32), away((6,), low=-5, high=5),
        kernels=("LeakyRelu",), dtypes=("int32",), grad=False, out_dtype="float32"),
    Row("nn.leaky_relu/vjp", vjp_of(tf.nn.leaky_relu, alpha=0.3),
        lambda x, u: np.where(x > 0, u, 0.3 * u), away((3, 4), (3, 4)),
        kernels=("LeakyReluGrad",), scalar=True),
    Row("nn.elu", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        away((3, 4)), kernels=("Elu",)),
    Row("nn.elu/large", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        away((6,), low=-60, high=60), kernels=("Elu",), grad=False,
        note="large positive inputs must not overflow expm1"),
    Row("nn.selu", tf.nn.selu,
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
        away((3, 4)), kernels=("Elu",)),
    Row("nn.selu/inf", tf.nn.selu, ref_selu, fixed(INFS), kernels=("Elu",), grad=False,
        note="selu(inf) is inf (TensorFlow), not relu and elu terms giving inf - inf"),
    Row("nn.selu/vjp_inf", vjp_of(tf.nn.selu),
        lambda x, u: u * SELU_SCALE * np.where(x >= 0, 1.0, SELU_ALPHA * np.exp(x)),
        fixed(INFS, cotangent=True), kernels=("Elu",), grad=False, scalar=True,
        note="slope scale at x >= 0 (TensorFlow's SeluGrad), scale at inf"),
    Row("nn.elu/vjp_inf", vjp_of(tf.nn.elu), lambda x, u: u * np.where(x > 0, 1.0, np.exp(x)),
        fixed(INFS, cotangent=True), kernels=("Elu",), grad=False, scalar=True),
    # ---- smooth activations (composites)
    Row("nn.gelu", tf.nn.gelu, lambda x: 0.5 * x * (1 + special.erf(x / np.sqrt(2))),
        uniform((3, 4), low=-4, high=4), kernels=(), scalar=True),
    Row("nn.gelu/approximate", tf.nn.gelu,
        lambda x, approximate: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                      * (x + 0.044715 * x ** 3))),
        uniform((3, 4), low=-4, high=4), kwargs={"approximate": True}, scalar=True),
    Row("nn.silu", tf.nn.silu, lambda x: x * special.expit(x), uniform((3, 4), low=-4, high=4),
        scalar=True),
    Row("nn.swish/beta", tf.nn.swish, lambda x, beta: x * special.expit(beta * x),
        uniform((5,), low=-4, high=4), kwargs={"beta": 0.5}, scalar=True),
    Row("nn.sigmoid", tf.nn.sigmoid, special.expit, uniform((4,)), scalar=True),
    Row("nn.softplus", tf.nn.softplus, lambda x: np.logaddexp(0, x), uniform((4,)),
        scalar=True),
    Row("nn.softplus/extreme", tf.nn.softplus, lambda x: np.logaddexp(0, x), fixed(EXTREME)),
    Row("nn.softplus/vjp_extreme", vjp_of(tf.nn.softplus), lambda x, u: u * special.expit(x),
        fixed(EXTREME, cotangent=True)),
    # ---- softmax
    Row("nn.softmax", tf.nn.softmax, special.softmax, uniform((4,), low=-3, high=3),
        kernels=("Softmax",)),
    Row("nn.softmax/2d", tf.nn.softmax, lambda x: special.softmax(x, axis=-1),
        uniform((3, 5), low=-3, high=3), kernels=("Softmax",)),
    Row("nn.softmax/axis0", tf.nn.softmax, lambda x, axis: special.softmax(x, axis=axis),
        uniform((3, 4, 2), low=-3, high=3), kernels=("Softmax",), kwargs={"axis": 1}),
    Row("nn.softmax/neg_axis", tf.nn.softmax, lambda x, axis: special.softmax(x, axis=axis),
        uniform((3, 4, 2), low=-3, high=3), kernels=("Softmax",), kwargs={"axis": -3}),
    Row("nn.softmax/large", tf.nn.softmax, lambda x: special.softmax(x, axis=-1),
        uniform((2, 3), low=500, high=900), kernels=("Softmax",), grad=False,
        note="stability: large logits must not overflow"),
    Row("nn.softmax/vjp", vjp_of(tf.nn.softmax, axis=1),
        lambda x, u: (lambda y: y * (u - np.sum(u * y, axis=1, keepdims=True)))(
            np_softmax(x, 1)), uniform((2, 3, 4), (2, 3, 4)), kernels=("SoftmaxGrad",)),
    Row("nn.log_softmax", tf.nn.log_softmax, special.log_softmax,
        uniform((5,), low=-3, high=3), kernels=("LogSoftmax",)),
    Row("nn.log_softmax/axis", tf.nn.log_softmax,
        lambda x, axis: special.log_softmax(x, axis=axis), uniform((3, 4), low=-3, high=3),
        kernels=("LogSoftmax",), kwargs={"axis": 0}),
    Row("nn.log_softmax/large", tf.nn.log_softmax, lambda x: special.log_softmax(x, axis=-1),
        uniform((2, 3), low=-900, high=900), kernels=("LogSoftmax",), grad=False),
    Row("nn.log_softmax/extreme", tf.nn.log_softmax, lambda x: special.log_softmax(x, axis=-1),
        fixed(EXTREME_LOGITS), kernels=("LogSoftmax",)),
    Row("nn.log_softmax/vjp_extreme", vjp_of(tf.nn.log_softmax),
        lambda x, u: u - np_softmax(x) * np.sum(u, axis=-1, keepdims=True),
        fixed(EXTREME_LOGITS, cotangent=True), kernels=("LogSoftmaxGrad",)),
    Row("nn.softmax/empty_axis", tf.nn.softmax, lambda x: x, uniform((3, 0)),
        note="nothing to normalize: an empty result, as in NumPy and TensorFlow"),
    Row("nn.log_softmax/empty_axis", tf.nn.log_softmax, lambda x: x, uniform((0,))),
    Row("nn.log_softmax/empty_axis0", tf.nn.log_softmax, lambda x, axis: x, uniform((0, 2)),
        kwargs={"axis": 0}),
    Row("nn.log_softmax/vjp", vjp_of(tf.nn.log_softmax),
        lambda x, u: u - np_softmax(x) * np.sum(u, axis=-1, keepdims=True),
        uniform((3, 4), (3, 4)), kernels=("LogSoftmaxGrad",)),
    Row("nn.log_softmax/vjp_axis", vjp_of(tf.nn.log_softmax, axis=0),
        lambda x, u: u - np_softmax(x, 0) * np.sum(u, axis=0, keepdims=True),
        uniform((3, 2, 2), (3, 2, 2)), kernels=("LogSoftmaxGrad",)),
    # ---- bias_add
    Row("nn.bias_add", tf.nn.bias_add, ref_bias_add, uniform((4, 3), (3,)),
        kernels=("BiasAdd",), dtypes=("float32", "float64", "int32")),
    Row("nn.bias_add/nhwc", tf.nn.bias_add, ref_bias_add, uniform((2, 3, 2, 4), (4,)),
        kernels=("BiasAdd",)),
    Row("nn.bias_add/nchw", tf.nn.bias_add, ref_bias_add, uniform((2, 4, 3, 2), (4,)),
        kernels=("BiasAdd",), kwargs={"data_format": "NCHW"}, rank=False, note=CHANNELS_1),
    Row("nn.bias_add/ncw", tf.nn.bias_add, ref_bias_add, uniform((2, 3, 5), (3,)),
        kernels=("BiasAdd",), kwargs={"data_format": "NCW"}, rank=False, note=CHANNELS_1),
    Row("nn.bias_add/nc", tf.nn.bias_add, ref_bias_add, uniform((2, 3), (3,)),
        kernels=("BiasAdd",), kwargs={"data_format": "NCHW"}, rank=False, note=CHANNELS_1),
    # ---- cross-entropies
    Row("nn.softmax_cross_entropy_with_logits", tf.nn.softmax_cross_entropy_with_logits,
        ref_xent, xent_sample((4, 5)), kernels=("SoftmaxCrossEntropyWithLogits",)),
    Row("nn.softmax_cross_entropy_with_logits/axis0", tf.nn.softmax_cross_entropy_with_logits,
        ref_xent, xent_sample((3, 2, 2), axis=0), kernels=("SoftmaxCrossEntropyWithLogits",),
        kwargs={"axis": 0}),
    Row("nn.softmax_cross_entropy_with_logits/1d", tf.nn.softmax_cross_entropy_with_logits,
        ref_xent, xent_sample((6,)), kernels=("SoftmaxCrossEntropyWithLogits",)),
    Row("nn.softmax_cross_entropy_with_logits/unnormalized",
        tf.nn.softmax_cross_entropy_with_logits, ref_xent, uniform((3, 4), (3, 4)),
        kernels=("SoftmaxCrossEntropyWithLogits",),
        note="labels that are not distributions: the gradient is still exact"),
    Row("nn.softmax_cross_entropy_with_logits/extreme",
        tf.nn.softmax_cross_entropy_with_logits, ref_xent,
        lambda rng, dtype: distribution_sample(EXTREME_LOGITS)(rng, dtype)[:2],
        kernels=("SoftmaxCrossEntropyWithLogits",)),
    Row("nn.softmax_cross_entropy_with_logits/vjp_extreme",
        loss_grads(tf.nn.softmax_cross_entropy_with_logits),
        lambda z, x, u: [-u[:, None] * special.log_softmax(x, axis=-1),
                         u[:, None] * (np_softmax(x) - z)],
        distribution_sample(EXTREME_LOGITS), kernels=("SoftmaxCrossEntropyWithLogits",),
        size1=False, rank=False, note=FIXED_ROWS),
    Row("nn.softmax_cross_entropy_with_logits/no_classes",
        tf.nn.softmax_cross_entropy_with_logits, lambda z, x: np.zeros(x.shape[:-1], x.dtype),
        uniform((3, 0), (3, 0)), note="an empty class axis: a loss of 0, as in TensorFlow"),
    Row("nn.sparse_softmax_cross_entropy_with_logits",
        tf.nn.sparse_softmax_cross_entropy_with_logits, ref_sparse, sparse_sample((6,), 5),
        kernels=("SparseSoftmaxCrossEntropyWithLogits",)),
    Row("nn.sparse_softmax_cross_entropy_with_logits/int64_3d",
        tf.nn.sparse_softmax_cross_entropy_with_logits, ref_sparse,
        sparse_sample((2, 3), 4, "int64"), kernels=("SparseSoftmaxCrossEntropyWithLogits",)),
    Row("nn.sparse_softmax_cross_entropy_with_logits/1d",
        tf.nn.sparse_softmax_cross_entropy_with_logits, ref_sparse, sparse_sample((), 3),
        kernels=("SparseSoftmaxCrossEntropyWithLogits",)),
    Row("nn.sparse_softmax_cross_entropy_with_logits/large",
        tf.nn.sparse_softmax_cross_entropy_with_logits, ref_sparse,
        lambda rng, dtype: [np.array([0, 2], np.int32),
                            rng.uniform(-800, 800, (2, 3)).astype(dtype)],
        kernels=("SparseSoftmaxCrossEntropyWithLogits",), grad=False),
    Row("nn.sparse_softmax_cross_entropy_with_logits/vjp_extreme",
        loss_grads(tf.nn.sparse_softmax_cross_entropy_with_logits),
        lambda z, x, u: u[:, None] * (np_softmax(x) - np.eye(4)[z]),
        lambda rng, dtype: [np.array([0, 2, 1, 3], np.int32), EXTREME_LOGITS.astype(dtype),
                            rng.uniform(-2, 2, 4).astype(dtype)],
        kernels=("SparseSoftmaxCrossEntropyWithLogits",), size1=False, rank=False,
        note=FIXED_ROWS),
    Row("nn.sigmoid_cross_entropy_with_logits", tf.nn.sigmoid_cross_entropy_with_logits,
        lambda z, x: -(z * np.log(special.expit(x)) + (1 - z) * np.log(special.expit(-x))),
        lambda rng, dtype: [rng.uniform(0, 1, (3, 4)).astype(dtype),
                            rng.uniform(-5, 5, (3, 4)).astype(dtype)],
        kernels=("SigmoidCrossEntropyWithLogits",), scalar=True,
        note="labels and logits must have one shape: 0-d both, no broadcasting"),
    Row("nn.sigmoid_cross_entropy_with_logits/large", tf.nn.sigmoid_cross_entropy_with_logits,
        lambda z, x: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))),
        lambda rng, dtype: [rng.uniform(0, 1, (5,)).astype(dtype),
                            np.array([-200, -30, 0.5, 30, 200]).astype(dtype)],
        kernels=("SigmoidCrossEntropyWithLogits",), scalar=True),
    Row("nn.sigmoid_cross_entropy_with_logits/vjp_extreme",
        loss_grads(tf.nn.sigmoid_cross_entropy_with_logits),
        lambda z, x, u: [-u * x, u * (special.expit(x) - z)],
        lambda rng, dtype: [rng.uniform(0, 1, 6).astype(dtype), EXTREME.astype(dtype),
                            rng.uniform(-2, 2, 6).astype(dtype)],
        kernels=("SigmoidCrossEntropyWithLogits",), scalar=True),
    # ---- l2_loss, moments, batch_normalization
    Row("nn.l2_loss", tf.nn.l2_loss, lambda x: np.sum(x ** 2) / 2, uniform((3, 4)),
        kernels=("L2Loss",), scalar=True),
    Row("nn.l2_loss/scalar", tf.nn.l2_loss, lambda x: x ** 2 / 2, uniform(()),
        kernels=("L2Loss",)),
    Row("nn.moments", tf.nn.moments, ref_moments, uniform((4, 3)), kwargs={"axes": [0]}),
    Row("nn.moments/keepdims", tf.nn.moments, ref_moments, uniform((2, 3, 4)),
        kwargs={"axes": [0, 2], "keepdims": True}),
    Row("nn.moments/neg_axis", tf.nn.moments, ref_moments, uniform((2, 5)),
        kwargs={"axes": -1}),
    Row("nn.batch_normalization", tf.nn.batch_normalization, ref_batch_norm,
        bn_sample((4, 3), (3,)), kwargs={"variance_epsilon": 1e-3}, scalar=True),
    Row("nn.batch_normalization/no_affine", tf.nn.batch_normalization, ref_batch_norm,
        bn_sample((2, 3, 2), (1, 3, 1), with_affine=False), kwargs={"variance_epsilon": 1e-2},
        scalar=True),
    # ---- fused batch normalization (Keras's BatchNormalization in training)
    Row("nn.fused_batch_norm_training", fused_bn, ref_fused_bn, fbn_sample((3, 2, 2, 3), 3),
        kernels=("FusedBatchNorm",), scalar=False, size1=False, empty=False, rank=False),
    Row("nn.fused_batch_norm_training/axis1", fused_bn, ref_fused_bn,
        fbn_sample((3, 2, 4), 1), kwargs={"axis": 1, "epsilon": 1e-2},
        kernels=("FusedBatchNorm",), scalar=False, size1=False, empty=False, rank=False),
    Row("nn.fused_batch_norm_training/vjp", fused_bn_vjp, ref_fused_bn_vjp,
        fbn_grad_sample((4, 3), 1), kernels=("FusedBatchNormGrad",), scalar=False,
        size1=False, empty=False, rank=False),
    Row("nn.fused_batch_norm_training/vjp_axis0", fused_bn_vjp, ref_fused_bn_vjp,
        fbn_grad_sample((3, 2, 2), 0), kwargs={"axis": 0}, kernels=("FusedBatchNormGrad",),
        scalar=False, size1=False, empty=False, rank=False),
    # ---- embeddings
    Row("nn.embedding_lookup", tf.nn.embedding_lookup, lambda p, ids: p[ids],
        emb_sample(5, 3, (2, 4)), order=1),
    Row("nn.embedding_lookup/shards", lambda a, b, ids: tf.nn.embedding_lookup([a, b], ids),
        lambda a, b, ids: np.concatenate([a, b])[ids], emb_sample(5, 2, (3,), shards=2),
        order=1),
    Row("nn.embedding_lookup/max_norm", tf.nn.embedding_lookup,
        lambda p, ids, max_norm: ref_clip_rows(p[ids], max_norm), emb_sample(4, 3, (5,)),
        kwargs={"max_norm": 1.0}, order=1),
]


# --------------------------------------------------------------------------- generic pools


def _np_pool1d(x, k, s, reduce):
    n = (x.shape[1] - k) // s + 1
    return np.stack([reduce(x[:, i * s:i * s + k], axis=1) for i in range(n)], axis=1)


def _wce_ref(labels, logits, q=2.5):
    sig = 1 / (1 + np.exp(-logits))
    return (-(labels * np.log(sig) * q + (1 - labels) * np.log(1 - sig))).astype(logits.dtype)


ROWS += [
    Row("max_pool/1d_valid", lambda x: tf.nn.max_pool(x, 2, 2, "VALID"),
        lambda x: _np_pool1d(x, 2, 2, np.max), uniform((2, 6, 3)), kernels=(), order=1,
        size1=False, empty=False, rank=False, note="NWC input of rank 3"),
    Row("avg_pool/1d_valid", lambda x: tf.nn.avg_pool(x, [3], [1], "VALID"),
        lambda x: _np_pool1d(x, 3, 1, np.mean), uniform((2, 5, 2)), kernels=(),
        size1=False, empty=False, rank=False, note="NWC input of rank 3"),
    Row("avg_pool/1d_ncw", lambda x: tf.nn.avg_pool(x, 2, 2, "VALID", data_format="NCW"),
        lambda x: np.swapaxes(_np_pool1d(np.swapaxes(x, 1, 2), 2, 2, np.mean), 1, 2),
        uniform((2, 3, 4)), kernels=(), size1=False, empty=False, rank=False,
        note="NCW input of rank 3"),
    Row("max_pool/2d", lambda x: tf.nn.max_pool(x, 2, 2, "VALID"),
        lambda x: x.reshape(1, 2, 2, 2, 2, 1).max(axis=(2, 4)), uniform((1, 4, 4, 1)),
        kernels=(), order=1, size1=False, empty=False, rank=False, note="NHWC 4x4 input"),
    Row("weighted_cross_entropy_with_logits",
        lambda y, z: tf.nn.weighted_cross_entropy_with_logits(y, z, 2.5), _wce_ref,
        lambda rng, d: [rng.uniform(0, 1, (3, 4)).astype(d),
                        rng.uniform(-4, 4, (3, 4)).astype(d)], kernels=(), scalar=True),
]
