"""MultiHeadAttention's masks (keras/layers/attention.py): causal and given masks, a
fully masked query step attending to nothing, against a NumPy reference in float64, and
the masked layer's gradient against central differences."""
import numpy as np

import tapeflow as tf

L = tf.keras.layers


def _reference(mha, q, v, allowed):
    """Keras's MultiHeadAttention in NumPy from the layer's weights."""
    wq, bq, wk, bk, wv, bv, wo, bo = [w.numpy() for w in mha.weights]
    query = np.einsum("abc,cde->abde", q, wq) + bq
    key = np.einsum("abc,cde->abde", v, wk) + bk
    value = np.einsum("abc,cde->abde", v, wv) + bv
    scores = np.einsum("aecd,abcd->acbe", key, query / np.sqrt(wq.shape[-1]))
    scores = np.where(allowed, scores, -1e9)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    probs = np.where(allowed, e / e.sum(-1, keepdims=True), 0.0)
    return np.einsum("abcd,cde->abe", np.einsum("acbe,aecd->abcd", probs, value), wo) + bo


def _layer_and_inputs():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 5))
    v = rng.standard_normal((2, 6, 5))
    given = np.ones((2, 4, 6), bool)
    given[1, :, 3:] = False
    given[0, 0, :] = False  # query step 0 of example 0 may attend to nothing
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    mha(tf.constant(q), tf.constant(v))
    causal = np.tril(np.ones((4, 6), bool))
    return mha, q, v, given, (given & causal)[:, None]


def test_causal_and_given_masks_equal_the_reference():
    mha, q, v, given, allowed = _layer_and_inputs()
    got = mha(tf.constant(q), tf.constant(v), attention_mask=tf.constant(given),
              use_causal_mask=True).numpy()
    np.testing.assert_allclose(got, _reference(mha, q, v, allowed), rtol=1e-10,
                               atol=1e-12)
    traced = tf.function(lambda a, b: mha(a, b, attention_mask=tf.constant(given),
                                          use_causal_mask=True))
    np.testing.assert_array_equal(traced(tf.constant(q), tf.constant(v)).numpy(), got)


def test_masked_gradient_against_central_differences():
    mha, q, v, given, allowed = _layer_and_inputs()
    r = np.random.default_rng(4).standard_normal((2, 4, 5))
    x = tf.constant(q)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(mha(x, tf.constant(v), attention_mask=tf.constant(given),
                                 use_causal_mask=True) * r)
    got = tape.gradient(loss, x).numpy()
    want = np.zeros_like(q)
    eps = 1e-6
    for i in np.ndindex(q.shape):
        up, down = q.copy(), q.copy()
        up[i] += eps
        down[i] -= eps
        want[i] = np.sum((_reference(mha, up, v, allowed)
                          - _reference(mha, down, v, allowed)) * r) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
