"""What the tape keeps for the backward pass of common ops.

A VJP rule that needs only an input's shape takes `<input>_shape`, so recording the op
keeps no tensor alive; these tests pin that down through `make_backward(...).env`.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.autodiff.record import make_backward

X = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4])
Y = tf.ones([3, 4])
IDX = tf.constant([2, 0, 2])
ND_IDX = tf.constant([[1, 0], [2, 3]])


def _backward(fn, inputs, needed):
    """The Backward of the last kernel `fn` runs, recorded for the `needed` inputs."""
    info = tf.profile(fn)
    name, attrs = info["kernels"][-1]["name"], info.details[-1]["attrs"]
    result = info["result"]
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    return name, make_backward(name, inputs, attrs, outs, set(needed))


# (label, op call, kernel inputs by name, inputs needing gradients, names kept)
CASES = [
    ("reduce_sum", lambda: tf.reduce_sum(X, axis=1), {"x": X}, {"x"}, set()),
    ("reduce_mean", lambda: tf.reduce_mean(X, axis=0, keepdims=True), {"x": X}, {"x"}, set()),
    ("reshape", lambda: tf.reshape(X, [4, 3]), {"x": X}, {"x"}, set()),
    ("transpose", lambda: tf.transpose(X), {"x": X}, {"x"}, set()),
    ("expand_dims", lambda: tf.expand_dims(X, 1), {"x": X}, {"x"}, set()),
    ("squeeze", lambda: tf.squeeze(tf.expand_dims(X, 0), 0),
     {"x": tf.expand_dims(X, 0)}, {"x"}, set()),
    ("broadcast_to", lambda: tf.broadcast_to(X, [2, 3, 4]), {"x": X}, {"x"}, set()),
    ("concat", lambda: tf.concat([X, Y], 0), {"values": [X, Y]}, {"values"}, set()),
    ("stack", lambda: tf.stack([X, Y], 1), {"values": [X, Y]}, {"values"}, set()),
    ("split", lambda: tf.split(X, 2, axis=1), {"x": X}, {"x"}, set()),
    ("tile", lambda: tf.tile(X, [2, 3]), {"x": X}, {"x"}, set()),
    ("pad", lambda: tf.pad(X, [[1, 0], [0, 2]]), {"x": X}, {"x"}, set()),
    ("reverse", lambda: tf.reverse(X, [1]), {"x": X}, {"x"}, set()),
    ("strided_slice", lambda: X[1:, ::2], {"x": X}, {"x"}, set()),
    ("add_n", lambda: tf.add_n([X, Y, X]), {"inputs": [X, Y, X]}, {"inputs"}, set()),
    ("bias_add", lambda: tf.nn.bias_add(X, tf.ones([4])),
     {"value": X, "bias": tf.ones([4])}, {"value", "bias"}, set()),
    ("gather", lambda: tf.gather(X, IDX), {"params": X, "indices": IDX}, {"params"},
     {"indices"}),
    ("gather_axis1", lambda: tf.gather(X, IDX, axis=1), {"params": X, "indices": IDX},
     {"params"}, {"indices"}),
    ("gather_nd", lambda: tf.gather_nd(X, ND_IDX), {"params": X, "indices": ND_IDX},
     {"params"}, {"indices"}),
    # only what the rule really reads: the other operand, the output, the indices
    ("multiply", lambda: tf.multiply(X, Y), {"x": X, "y": Y}, {"x"}, {"y"}),
    ("relu", lambda: tf.nn.relu(X), {"x": X}, {"x"}, {"ans"}),
    ("top_k", lambda: tf.math.top_k(X, 2), {"x": X}, {"x"}, {"ans"}),
]


@pytest.mark.parametrize("label,fn,inputs,needed,kept", CASES, ids=[c[0] for c in CASES])
def test_backward_keeps_only_what_the_rule_reads(label, fn, inputs, needed, kept):
    _, bwd = _backward(fn, inputs, needed)
    assert set(bwd.env) == kept


def test_shape_only_backward_still_computes_gradients():
    # Gradients from a Backward holding no input tensor (tile) or only the indices (gather).
    x = X.numpy()
    _, bwd = _backward(lambda: tf.tile(X, [2, 3]), {"x": X}, {"x"})
    g = np.arange(72, dtype=np.float32).reshape(6, 12)
    [dx] = bwd([tf.constant(g)], [True])
    want = g.reshape(2, 3, 3, 4).sum(axis=(0, 2))
    np.testing.assert_allclose(dx.numpy(), want)

    _, bwd = _backward(lambda: tf.gather(X, IDX, axis=1),
                       {"params": X, "indices": IDX}, {"params"})
    g = np.arange(9, dtype=np.float32).reshape(3, 3)
    dp, _ = bwd([tf.constant(g)], [True, False])
    want = np.zeros_like(x)
    np.add.at(want, (slice(None), [2, 0, 2]), g)
    np.testing.assert_allclose(tf.convert_to_tensor(dp).numpy(), want)

    _, bwd = _backward(lambda: tf.gather_nd(X, ND_IDX),
                       {"params": X, "indices": ND_IDX}, {"params"})
    dp, _ = bwd([tf.constant([5.0, 7.0])], [True, False])
    want = np.zeros_like(x)
    want[1, 0], want[2, 3] = 5.0, 7.0
    np.testing.assert_allclose(dp.numpy(), want)


def test_gather_axis0_gradient_is_indexed_slices_of_params_shape():
    _, bwd = _backward(lambda: tf.gather(X, IDX), {"params": X, "indices": IDX}, {"params"})
    dp, _ = bwd([tf.ones([3, 4])], [True, False])
    assert isinstance(dp, tf.IndexedSlices)
    assert tuple(dp.dense_shape) == (3, 4)
    np.testing.assert_array_equal(np.asarray(dp.indices), [2, 0, 2])
