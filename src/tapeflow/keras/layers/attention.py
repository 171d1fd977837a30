"""Keras's attention layers: `MultiHeadAttention` (attention over axis 1 of [batch, time,
features] inputs), and `Attention` (dot-product or "concat" scores) and
`AdditiveAttention` (Bahdanau-style scores), which take `[query, value]` or
`[query, value, key]` and mix `value` by the softmax of the query-key scores.

Its weights have Keras 3's names, shapes and order: four projections `query`, `key`,
`value` (kernel [features, num_heads, key_dim or value_dim], bias [num_heads, dim]) and
`attention_output` (kernel [num_heads, value_dim, output_dim], bias [output_dim]), which
Keras files hold under "query_dense", "key_dense", "value_dense" and "output_dense".

Example:
    >>> mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    >>> mha(tf.ones([1, 3, 8]), tf.ones([1, 5, 8])).shape
    TensorShape([1, 3, 8])
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ...ops import array as _array, linalg as _linalg, math as _math, nn as _nn
from ...ops import random as _random, reduction as _reduction
from ...ops.creation import range as _range
from ...ops.creation import zeros_like as _zeros_like
from ...ops.indexing import where as _where
from ...train import initializers as _init
from ..layer import Layer, get_keras_mask, is_symbolic

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]


class _Projection(Layer):
    """Keras's `EinsumDense` as MultiHeadAttention uses it: `einsum(equation, x, kernel)
    + bias` with a kernel of `kernel_shape` (its last `bias_rank` axes carry a bias)."""

    # the masks of MultiHeadAttention's inputs are its own business: its projections
    # neither use nor drop them (Keras clears them from the inputs instead)
    supports_masking = True

    def __init__(self, equation: str, kernel_shape: tuple, bias_rank: int, use_bias: bool,
                 kernel_initializer, bias_initializer, **kwargs):
        super().__init__(**kwargs)
        self.equation, self.kernel_shape = equation, tuple(kernel_shape)
        self.bias_rank, self.use_bias = bias_rank, use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=self.kernel_shape, name="kernel",
                                      initializer=self.kernel_initializer)
        self.bias = self.add_weight(shape=self.kernel_shape[-self.bias_rank:], name="bias",
                                    initializer=self.bias_initializer) \
            if self.use_bias else None

    def call(self, x):
        y = _linalg.einsum(self.equation, x, self.kernel)
        return y + self.bias if self.bias is not None else y


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention: `query` [B, T, dq] attends to `key`
    [B, S, dk] (default: `value`) and mixes `value` [B, S, dv]; the result has shape
    [B, T, output_shape or dq]. `attention_mask` [B, T, S] (True: may attend),
    `use_causal_mask` and the Keras masks of the inputs (`query_mask` [B, T] and
    `value_mask`/`key_mask` [B, S], read from the tensors as Keras does, e.g. from
    `Embedding(mask_zero=True)`) restrict what each query step sees; a fully masked query
    step attends to nothing, and the output carries the query's mask.
    `return_attention_scores=True` also returns the softmaxed scores [B, num_heads, T, S].
    `dropout` applies to the scores in training.

    Example:
        >>> mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
        >>> out, scores = mha(tf.ones([1, 3, 8]), tf.ones([1, 3, 8]),
        ...                   return_attention_scores=True)
        >>> scores.shape
        TensorShape([1, 2, 3, 3])
    """

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", seed=None, **kwargs):
        super().__init__(**kwargs)
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim),
                           ("value_dim", key_dim if value_dim is None else value_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value <= 0:
                raise ValueError(f"MultiHeadAttention: {arg} must be a positive integer, "
                                 f"got {value!r}")
        if attention_axes not in (None, 1, (1,), [1]):
            raise NotImplementedError("MultiHeadAttention: only attention over axis 1 "
                                      f"is supported, got attention_axes={attention_axes!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1), got {dropout}")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(key_dim if value_dim is None else value_dim)
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        self._output_shape = None if output_shape is None else (
            (int(output_shape),) if np.isscalar(output_shape) else tuple(output_shape))
        if self._output_shape is not None and len(self._output_shape) != 1:
            raise NotImplementedError("MultiHeadAttention: output_shape must be one "
                                      f"integer, got {output_shape!r}")
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)

    supports_masking = True

    def __call__(self, query, value=None, key=None, attention_mask=None,
                 return_attention_scores: bool = False, training=None,
                 use_causal_mask: bool = False, **kwargs):
        if value is None and isinstance(query, (list, tuple)) and len(query) == 3:
            query, value, key = query  # a functional model replays the call as one list
        if value is None:
            raise ValueError("MultiHeadAttention: `value` is required: "
                             "mha(query, value, key=None)")
        inputs = [query, value, value if key is None else key]
        if is_symbolic(inputs) and attention_mask is not None:
            raise NotImplementedError("MultiHeadAttention: attention_mask in a functional "
                                      "model is not supported yet; pass it eagerly")
        if not is_symbolic(inputs):  # Keras's `{argument}_mask` rule for several inputs
            found = {"query_mask": get_keras_mask(query), "value_mask": get_keras_mask(value),
                     "key_mask": None if key is None or key is value else get_keras_mask(key)}
            for name, mask in found.items():
                if mask is not None and kwargs.get(name) is None:
                    kwargs[name] = mask
        return super().__call__(inputs, attention_mask=attention_mask,
                                return_attention_scores=return_attention_scores,
                                training=training, use_causal_mask=use_causal_mask,
                                **kwargs)

    def build(self, input_shape):
        pass  # the projections are built on the first call, from the three inputs

    def _build_projections(self, query, value, key) -> None:
        for x, what in ((query, "query"), (value, "value"), (key, "key")):
            if x.ndim != 3 or x.shape[-1] is None:
                raise ValueError(f"MultiHeadAttention {self.name!r}: {what} must have shape "
                                 f"[batch, time, features] with known features, got "
                                 f"{list(x.shape)}")
        heads, common = self.num_heads, dict(
            use_bias=self.use_bias, kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer, dtype=self.dtype_policy)
        out_dim = self._output_shape[0] if self._output_shape else query.shape[-1]
        # assignment order is Keras's weight order: query, key, value, attention_output
        self.query_dense = _Projection("abc,cde->abde", (query.shape[-1], heads,
                                                         self.key_dim), 2, name="query",
                                       **common)
        self.key_dense = _Projection("abc,cde->abde", (key.shape[-1], heads, self.key_dim),
                                     2, name="key", **common)
        self.value_dense = _Projection("abc,cde->abde", (value.shape[-1], heads,
                                                         self.value_dim), 2, name="value",
                                       **common)
        self.output_dense = _Projection("abcd,cde->abe", (heads, self.value_dim, out_dim),
                                        1, name="attention_output", **common)

    def compute_mask(self, inputs, previous_mask=None):
        """The query's mask, for the output (none for the scores)."""
        query_mask = previous_mask[0] if isinstance(previous_mask, (list, tuple)) else None
        return [query_mask, None]

    def call(self, inputs, attention_mask=None, return_attention_scores: bool = False,
             training=None, use_causal_mask: bool = False, query_mask=None,
             value_mask=None, key_mask=None):
        query, value, key = inputs
        if "query_dense" not in self.__dict__:
            self._build_projections(query, value, key)
        q = self.query_dense(query) * (1.0 / math.sqrt(self.key_dim))
        k = self.key_dense(key)
        v = self.value_dense(value)
        scores = _linalg.einsum("aecd,abcd->acbe", k, q)  # [B, heads, T, S]
        mask = self._mask(attention_mask, use_causal_mask, query, value,
                          (query_mask, value_mask, key_mask))
        probs = _masked_softmax(scores, mask)
        if training and self.dropout > 0:
            dropped = _random.dropout(probs, self.dropout, seed=self.seed)
        else:
            dropped = probs
        context = _linalg.einsum("acbe,aecd->abcd", dropped, v)  # [B, T, heads, dv]
        out = self.output_dense(context)
        return [out, probs] if return_attention_scores else out

    def _mask(self, attention_mask, use_causal_mask: bool, query, value, input_masks):
        """Where each query step may attend, [B, 1, T, S] or [T, S]: the AND of the input
        masks (query [B, T, 1], value and key [B, 1, S]), `attention_mask` and the causal
        mask."""
        mask = None
        for m, axis in zip(input_masks, (-1, -2, -2)):
            if m is not None:
                m = _array.expand_dims(_math.cast(convert_to_tensor(m), _dt.bool), axis)
                mask = m if mask is None else _math.logical_and(mask, m)
        if attention_mask is not None:
            given = convert_to_tensor(attention_mask)
            if given.dtype.name != "bool":
                given = _math.not_equal(given, 0)
            mask = given if mask is None else _math.logical_and(mask, given)
        if mask is not None and mask.ndim == 3:  # [B, T, S] -> broadcast over the heads
            mask = _array.expand_dims(mask, 1)
        if use_causal_mask:
            t, s = query.shape[1], value.shape[1]
            if t is None or s is None:  # traced with unknown lengths: built by ops
                rows = _range(_array.shape(query)[1])
                cols = _range(_array.shape(value)[1])
                causal = _math.greater_equal(_array.expand_dims(rows, 1),
                                             _array.expand_dims(cols, 0))
            else:
                causal = convert_to_tensor(np.tril(np.ones((t, s), dtype=bool)))
            mask = causal if mask is None else _math.logical_and(mask, causal)
        return mask

    def get_config(self) -> dict:
        return {**super().get_config(), "num_heads": self.num_heads,
                "key_dim": self.key_dim, "value_dim": self.value_dim,
                "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self._output_shape, "attention_axes": (1,),
                "kernel_initializer": _init.serialize(self.kernel_initializer),
                "bias_initializer": _init.serialize(self.bias_initializer),
                "seed": self.seed}


def _masked_softmax(scores, mask):
    """softmax(scores) over the last axis where `mask` (broadcasting to scores) allows:
    masked positions get a large negative logit and no weight at all (a fully masked
    query step attends to nothing), as Keras's masked softmax. The mask enters as a 0/1
    factor and a bias added to the logits, elementwise arithmetic that fuses with the
    scores' neighbours (a select would run on its own, forward and backward); where a row
    keeps any position the probabilities equal a select's bits (exp of the masked logits
    is 0 either way)."""
    if mask is None:
        return _nn.softmax(scores, axis=-1)
    keep = _math.cast(mask, scores.dtype)
    # (float16 cannot hold -1e9: Keras's large negative number for it)
    large = 3e4 if scores.dtype.name == "float16" else 1e9
    return _nn.softmax(scores + (keep - 1.0) * large, axis=-1) * keep


class Attention(Layer):
    """Dot-product attention over `[query, value]` or `[query, value, key]` ([batch, Tq,
    dim], [batch, Tv, dim], key like value): scores [batch, Tq, Tv] are `query @ key^T`
    (`score_mode="dot"`) or `concat_score_weight * sum(tanh(query + key))`
    (`score_mode="concat"`), times the `scale` weight with `use_scale`; the output is
    `softmax(scores) @ value`. `mask=[query_mask, value_mask]` (or the inputs' Keras
    masks): masked value steps get no weight, masked query steps output zeros (and the
    output carries the query's mask). `use_causal_mask` keeps query step i from value
    steps after i; `return_attention_scores` also returns the softmaxed scores.
    `dropout` drops attention weights in training.

    Example:
        >>> att = tf.keras.layers.Attention()
        >>> att([tf.ones([2, 3, 4]), tf.ones([2, 5, 4])]).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot",
                 dropout: float = 0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode!r}")
        if not 0 <= float(dropout) <= 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1], got "
                             f"{dropout!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed

    supports_masking = True

    def _check(self, inputs, mask=None) -> None:
        kind = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{kind} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: {inputs!r}")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{kind} layer accepts inputs list of length 2 or 3, namely "
                             "[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None:
            if not isinstance(mask, (list, tuple)):
                raise ValueError(f"{kind} layer mask must be a list, namely [query_mask, "
                                 f"value_mask]. Received: mask={mask!r}.")
            if not 2 <= len(mask) <= 3:
                raise ValueError(f"{kind} layer accepts mask list of length 2 or 3. "
                                 f"Received: mask of length {len(mask)}.")

    def build(self, input_shape):
        self._check(input_shape)
        self.scale = self.add_weight(name="scale", shape=(), initializer="ones") \
            if self.use_scale else None
        self.concat_score_weight = self.add_weight(
            name="concat_score_weight", shape=(), initializer="ones") \
            if self.score_mode == "concat" else None

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = _linalg.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        pairs = _array.expand_dims(query, -2) + _array.expand_dims(key, -3)
        if self.scale is not None:
            pairs = self.scale * pairs
        return self.concat_score_weight * _reduction.reduce_sum(_math.tanh(pairs), axis=-1)

    def call(self, inputs, mask=None, training=None, return_attention_scores: bool = False,
             use_causal_mask: bool = False):
        self._check(inputs, mask)
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        query_mask = value_mask = None
        if mask is not None:
            query_mask, value_mask = mask[0], mask[1]
        scores = self._scores(query, key)
        allowed = None
        if value_mask is not None:  # [B, Tv] -> [B, 1, Tv]
            allowed = _array.expand_dims(_math.cast(convert_to_tensor(value_mask), _dt.bool),
                                         -2)
        if use_causal_mask:
            dynamic = _array.shape(scores)
            rows, cols = [d if d is not None else dynamic[i - 2]
                          for i, d in enumerate(scores.shape[-2:])]
            causal = _math.greater_equal(
                _array.expand_dims(_range(rows), -1),
                _array.expand_dims(_range(cols), 0))
            allowed = causal if allowed is None else _math.logical_and(allowed, causal)
        if allowed is not None:
            # a large negative offset, not -inf: a fully masked row stays finite, as Keras
            big = 65504.0 if scores.dtype.name == "float16" else 1.0e9
            scores = _where(allowed, scores, scores - big)
        weights = _nn.softmax(scores, axis=-1)
        dropped = _random.dropout(weights, self.dropout, seed=self.seed) \
            if training and self.dropout > 0 else weights
        out = _linalg.matmul(dropped, value)
        if query_mask is not None:
            keep = _array.expand_dims(_math.cast(convert_to_tensor(query_mask), _dt.bool), -1)
            out = _where(keep, out, _zeros_like(out))
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        """The query's mask, for the output."""
        if not isinstance(mask, (list, tuple)) or mask[0] is None:
            return None
        return convert_to_tensor(mask[0])

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention: scores [batch, Tq, Tv] are
    `sum(scale * tanh(query + key), axis=-1)`, with a learned `scale` of shape [dim]
    (`use_scale`, on by default); otherwise as `Attention`.

    Example:
        >>> att = tf.keras.layers.AdditiveAttention()
        >>> out, scores = att([tf.ones([2, 3, 4]), tf.ones([2, 5, 4])],
        ...                   return_attention_scores=True)
        >>> scores.shape
        TensorShape([2, 3, 5])
    """

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        self._check(input_shape)
        dim = input_shape[0][-1]
        self.scale = self.add_weight(name="scale", shape=(int(dim),),
                                     initializer="glorot_uniform") if self.use_scale else None

    def _scores(self, query, key):
        pairs = _math.tanh(_array.expand_dims(query, -2) + _array.expand_dims(key, -3))
        return _reduction.reduce_sum(pairs * self.scale if self.scale is not None else pairs,
                                axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["score_mode"]
        return config
