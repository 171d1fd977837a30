"""Preprocessing layers: Rescaling, Normalization, CategoryEncoding, Discretization,
Hashing, IntegerLookup, StringLookup (TextVectorization is in `text`).

Vocabularies, bin boundaries and idf weights, given or learned by `adapt`,
travel in the layers' configs, so a `.keras` file rebuilds them.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ..._core.context import ctx
from ..._core.convert import convert_to_tensor
from ..._core.hashing import farmhash_fingerprint64, siphash64  # noqa: F401  (re-exported)
from ..._core.hashing import farmhash_fingerprint64_many
from ..._core.shape import dims_of
from ..._core.tensor import Tensor, TensorShape
from ...data.dataset import Dataset
from ...ops import array as _array, creation as _creation, indexing as _indexing
from ...ops import math as _math, nn as _nn, reduction as _reduction, strings as _strings
from ..layer import Layer
from ._base import Stateless

__all__ = ["CategoryEncoding", "Discretization", "Hashing", "IntegerLookup",
           "Normalization", "Rescaling", "StringLookup"]


class Rescaling(Stateless):
    """`inputs * scale + offset` (e.g. `Rescaling(1./255)` for pixels).

    Example:
        >>> tf.keras.layers.Rescaling(0.5, offset=1.0)(tf.constant([2.0])).numpy()
        array([2.], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def _convert_input(self, inputs):
        x = convert_to_tensor(inputs)
        return x if x.dtype is self._dtype else _math.cast(x, self._dtype)  # uint8 images

    def call(self, x):
        return x * _math.cast(self.scale, x.dtype) + _math.cast(self.offset, x.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Normalization(Layer):
    """Shifts and scales inputs to zero mean and unit variance per feature of `axis`:
    `(x - mean) / max(sqrt(variance), 1e-7)` (`invert=True`: back again), with `mean` and
    `variance` given or learned by `adapt(data)` from arrays or a dataset of batches.

    Example:
        >>> norm = tf.keras.layers.Normalization()
        >>> norm.adapt(np.array([[1.0, 2.0], [3.0, 6.0]]))
        >>> norm(np.array([[1.0, 2.0]])).numpy()
        array([[-1., -1.]], dtype=float32)
    """

    supports_masking = True  # elementwise: a mask passes through, as in Keras

    def __init__(self, axis=-1, mean=None, variance=None, invert: bool = False, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both `mean` and `variance`, or neither "
                             "(and call adapt())")
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        self.invert = bool(invert)
        self._given = None if mean is None else (mean, variance)

    def build(self, input_shape):
        ndim = len(input_shape)
        kept = tuple(sorted(a % ndim for a in self.axis))
        if any(input_shape[a] is None for a in kept):
            raise ValueError(f"Normalization {self.name!r}: the axes {self.axis} of the "
                             f"input need known sizes, got shape {input_shape.as_list()}")
        self._reduce = [a for a in range(ndim) if a not in kept]
        self._broadcast = [input_shape[a] if a in kept else 1 for a in range(ndim)]
        features = [input_shape[a] for a in kept]
        if self._given is not None:
            # as Keras: a scalar (or any broadcastable) mean and variance are broadcast
            # over the kept axes, then shaped to broadcast against the input
            self._given_arrays = tuple(
                np.broadcast_to(np.asarray(v, np.float64), features).reshape(self._broadcast)
                for v in self._given)
        if self._given is None:
            self.adapt_mean = self.add_weight("mean", features, "zeros", trainable=False)
            self.adapt_variance = self.add_weight("variance", features, "ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False,
                                         dtype=_dt.int64)

    @property
    def mean(self):
        """The mean, shaped to broadcast against the input."""
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[0].astype(self._dtype.name))
        return _array.reshape(self.adapt_mean, self._broadcast)

    @property
    def variance(self):
        if self._given is not None:
            return convert_to_tensor(self._given_arrays[1].astype(self._dtype.name))
        return _array.reshape(self.adapt_variance, self._broadcast)

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Learn the mean and variance of `data` (an array, or a dataset of batches) over
        every axis but `axis`."""
        if isinstance(data, Dataset):
            batches = [self._convert_input(b) for b in data]
            if not batches:
                raise ValueError(f"Normalization {self.name!r}: adapt() got no data")
            x = _array.concat(batches, axis=0)
        else:
            x = self._convert_input(data)
        if not self.built:
            with self.name_scope:
                self.build(TensorShape(x._shape))
            self.built = True
        if self._given is not None:
            raise ValueError(f"Normalization {self.name!r}: adapt() cannot be used with a "
                             "mean and variance given")
        mean, variance = _nn.moments(x, self._reduce)
        self.adapt_mean.assign(mean)
        self.adapt_variance.assign(variance)
        size = 1
        for a in self._reduce:
            size *= x._shape[a]
        self.count.assign(size)

    def call(self, x):
        scale = _math.maximum(_math.sqrt(self.variance), 1e-7)
        if self.invert:
            return x * scale + self.mean
        return (x - self.mean) / scale

    def get_config(self) -> dict:
        config = {**super().get_config(), "axis": self.axis, "invert": self.invert}
        if self._given is not None:  # as Keras: given values come back with the config
            config.update(mean=np.asarray(self._given[0]).tolist(),
                          variance=np.asarray(self._given[1]).tolist())
        return config


# --------------------------------------------------------------------------- encoding

_ENCODINGS = ("int", "one_hot", "multi_hot", "count")


def _encode(x: Tensor, mode: str, depth: int, dtype, count_weights=None,
            idf_weights=None) -> Tensor:
    """Keras's `encode_categorical_inputs`: indices as they are ("int"), one-hot rows
    ("one_hot": a trailing axis of size 1 is replaced), or one row per sample of the last
    axis ("multi_hot": presence, "count": occurrences, weighted by `count_weights`;
    "tf_idf": counts times `idf_weights`); a 0-d input is one sample."""
    if mode == "int":
        return _math.cast(x, dtype)
    if x.ndim == 0:
        x = _array.reshape(x, [1])
    if mode == "one_hot":
        if x.ndim > 1 and x._shape[-1] == 1:
            x = _array.squeeze(x, [-1])
        return _creation.one_hot(x, depth, dtype=dtype)
    hot = _creation.one_hot(x, depth, dtype=_dt.float32)
    if mode == "multi_hot":
        return _math.cast(_reduction.reduce_max(hot, axis=-2), dtype)
    if count_weights is not None:
        hot = hot * _math.cast(count_weights, _dt.float32)[..., None]
    counts = _reduction.reduce_sum(hot, axis=-2)
    if mode == "tf_idf":
        return _math.cast(counts * _math.cast(idf_weights, _dt.float32), dtype)
    return _math.cast(counts, dtype)


def _check_mode(layer: str, mode: str, accepted: tuple) -> None:
    if mode not in accepted:
        raise ValueError(f"{layer}: invalid value for argument `output_mode`. Expected one "
                         f"of {accepted}. Received: output_mode={mode!r}")


def _no_sparse(layer: str, sparse: bool) -> None:
    if sparse:
        raise NotImplementedError(f"{layer}: sparse=True is not supported yet (the outputs "
                                  "are dense)")


class CategoryEncoding(Stateless):
    """Encodes integer category ids in `[0, num_tokens)`: "one_hot" (one row per id),
    "multi_hot" (one row per sample: which ids occur) or "count" (how often, optionally
    weighted by `count_weights` in `call`).

    Example:
        >>> enc = tf.keras.layers.CategoryEncoding(num_tokens=4, output_mode="count")
        >>> enc(tf.constant([[0, 1, 1], [3, 3, 2]])).numpy()
        array([[1., 2., 0., 0.],
               [0., 0., 1., 2.]], dtype=float32)
    """

    def __init__(self, num_tokens=None, output_mode: str = "multi_hot", sparse: bool = False,
                 **kwargs):
        super().__init__(**kwargs)
        if output_mode == "binary":  # Keras's old name
            output_mode = "multi_hot"
        _check_mode("CategoryEncoding", output_mode, ("count", "one_hot", "multi_hot"))
        if num_tokens is None or int(num_tokens) < 1:
            raise ValueError("CategoryEncoding: `num_tokens` must be >= 1. Received: "
                             f"num_tokens={num_tokens}.")
        _no_sparse("CategoryEncoding", sparse)
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, False

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("CategoryEncoding: `count_weights` is not used when "
                             "`output_mode` is not 'count'. Received "
                             f"count_weights={count_weights}.")
        return _encode(inputs, self.output_mode, self.num_tokens, self._dtype,
                       count_weights=count_weights)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode}


# --------------------------------------------------------------------------- discretization


def _summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    """A quantile summary of `values` as Keras's Discretization keeps it: about
    1 / epsilon of the sorted values, evenly spaced, each weighted by the spacing."""
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size * epsilon, 1)
    kept = values[int(step - 1)::int(step)]
    return np.stack([kept, np.full(kept.shape, step, kept.dtype)])


def _compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """The summary resampled at the cumulative-weight fractions epsilon, 2 epsilon, ...,
    1 (unchanged when it already has fewer than 1 / epsilon points)."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    at = cumulative / cumulative[-1]
    points = np.interp(fractions, at, summary[0])
    cumulative = np.interp(fractions, at, cumulative)
    weights = np.diff(cumulative, prepend=0.0)
    return np.stack([points, weights]).astype(np.float32)


def _batches(data) -> list:
    """adapt()'s data as a list of NumPy batches: a dataset, an iterable of batches, or
    one array."""
    if isinstance(data, Dataset):
        return [np.asarray(b) for b in data]
    if isinstance(data, (np.ndarray, Tensor)) or not hasattr(data, "__iter__"):
        return [np.asarray(data)]
    if isinstance(data, (list, tuple)) and not any(hasattr(b, "shape") for b in data):
        return [np.asarray(data)]
    return [np.asarray(b) for b in data]


class Discretization(Stateless):
    """Buckets numbers by `bin_boundaries` (bucket `i` holds `b[i-1] <= x < b[i]`), or by
    `num_bins` quantile boundaries learned with `adapt(data)` (Keras's summary with
    tolerance `epsilon`); `output_mode` "int" gives bucket ids, "one_hot", "multi_hot",
    "count" encode them.

    Example:
        >>> disc = tf.keras.layers.Discretization(bin_boundaries=[0.0, 1.0])
        >>> disc(tf.constant([[-0.5, 0.0, 0.5, 2.0]])).numpy()
        array([[0, 1, 1, 2]], dtype=int32)
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon: float = 0.01,
                 output_mode: str = "int", sparse: bool = False, dtype=None, name=None,
                 **kwargs):
        super().__init__(dtype=dtype or ("int32" if output_mode == "int" else "float32"),
                         name=name, **kwargs)
        _check_mode("Discretization", output_mode, _ENCODINGS)
        _no_sparse("Discretization", sparse)
        if num_bins is not None and num_bins < 0:
            raise ValueError("Discretization: `num_bins` must be greater than or equal to "
                             f"0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            if len(bin_boundaries) != num_bins - 1:
                raise ValueError("Discretization: both `num_bins` and `bin_boundaries` "
                                 "should not be set. Received: `num_bins="
                                 f"{num_bins}` and `bin_boundaries={bin_boundaries}`")
        self.bin_boundaries = None if bin_boundaries is None else \
            [float(b) for b in bin_boundaries]
        self.num_bins, self.epsilon = num_bins, epsilon
        self.output_mode, self.sparse = output_mode, False
        self._summary = np.zeros([2, 0], np.float32)

    def _convert_input(self, inputs):
        return convert_to_tensor(inputs)

    def adapt(self, data, steps=None) -> None:
        """Learn `num_bins - 1` quantile boundaries of `data` (an array, a list of
        batches or a dataset)."""
        if self.num_bins is None:
            raise ValueError("Discretization: cannot adapt a Discretization layer that has "
                             "been initialized with `bin_boundaries`, use `num_bins` "
                             "instead.")
        batches = _batches(data)
        if steps is not None:
            batches = batches[:steps]
        summary = np.zeros([2, 0], np.float32)
        for batch in batches:
            part = _summarize(batch.astype(np.float32), self.epsilon)
            merged = np.concatenate([part, summary], axis=1)
            merged = merged[:, np.argsort(merged[0], kind="stable")]
            summary = _compress(merged, self.epsilon)
        self._summary = summary
        self.bin_boundaries = _compress(summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError("Discretization: you need to either pass the `bin_boundaries` "
                             "argument at construction time or call `adapt(dataset)` "
                             "before you can start using the `Discretization` layer.")
        x = _math.cast(inputs, _dt.float32)
        boundaries = _creation.constant([self.bin_boundaries], _dt.float32)
        flat = _array.reshape(x, [1, -1])
        ids = _array.reshape(_array.searchsorted(boundaries, flat, side="right"),
                             dims_of(x))
        return _encode(ids, self.output_mode, len(self.bin_boundaries) + 1, self._dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}


# --------------------------------------------------------------------------- hashing

class Hashing(Stateless):
    """Hashes strings (or integers, as their decimal strings) into `num_bins` buckets as
    Keras's (TensorFlow's) Hashing: FarmHash Fingerprint64, or SipHash-2-4 keyed by `salt`
    when given, modulo the bins; with `mask_value`, that value maps to 0 and the others
    to `1 + hash % (num_bins - 1)`. `output_mode` "one_hot", "multi_hot", "count" encode
    the buckets.

    Example:
        >>> tf.keras.layers.Hashing(num_bins=3)(tf.constant([[0, 1, 7]])).numpy()
        array([[1, 0, 1]])
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode: str = "int",
                 sparse: bool = False, dtype=None, **kwargs):
        dtype = dtype or ("int64" if output_mode == "int" else "float32")
        super().__init__(dtype=dtype, **kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("Hashing: the `num_bins` for `Hashing` cannot be `None` or "
                             f"non-positive values. Received: num_bins={num_bins}.")
        if output_mode == "int" and self._dtype not in (_dt.int32, _dt.int64):
            raise ValueError("Hashing: when `output_mode=\"int\"`, `dtype` should be an "
                             f"integer type, 'int32' or 'int64'. Received: dtype={dtype}")
        _check_mode("Hashing", output_mode, _ENCODINGS)
        if sparse and output_mode == "int":
            raise ValueError("Hashing: `sparse` may only be true if `output_mode` is "
                             "'one_hot', 'multi_hot', or 'count'.")
        _no_sparse("Hashing", sparse)
        if salt is not None and not (isinstance(salt, int) or (
                isinstance(salt, (tuple, list)) and len(salt) == 2)):
            raise ValueError("Hashing: the `salt` argument for `Hashing` can only be a "
                             "tuple of size 2 integers, or a single integer. Received: "
                             f"salt={salt}.")
        self.num_bins, self.mask_value = int(num_bins), mask_value
        self.salt = None if salt is None else \
            [salt, salt] if isinstance(salt, int) else list(salt)
        self.output_mode, self.sparse = output_mode, False

    def _convert_input(self, inputs):
        return convert_to_tensor(inputs)

    def call(self, inputs):
        x = inputs
        if self.output_mode == "one_hot" and x.ndim > 0 and x._shape[-1] == 1:
            x = _array.squeeze(x, [-1])
        if x.dtype is _dt.string:
            text = x
        elif x.dtype.is_integer or x.dtype.is_floating:
            # as TensorFlow's Hashing: a number is hashed as its decimal string
            text = _strings.as_string(_math.cast(x, _dt.int64))
        else:
            raise ValueError(f"Hashing {self.name!r}: expected string, integer (or float) "
                             f"inputs, got {x.dtype.name}")
        bins = self.num_bins
        masked = self.mask_value is not None and bins > 1
        if masked:
            bins -= 1
        if self.salt is None:
            hashed = _strings.to_hash_bucket_fast(text, bins)
        else:
            hashed = _strings.to_hash_bucket_strong(text, bins, list(self.salt))
        if masked:
            mask = self.mask_value
            if x.dtype is _dt.string:
                mask = mask.encode() if isinstance(mask, str) else mask
                hit = _math.equal(x, mask)
            else:
                hit = _math.equal(_math.cast(x, _dt.int64), _math.cast(mask, _dt.int64))
            hashed = _indexing.where(hit, _math.cast(0, _dt.int64), hashed + 1)
        return _encode(hashed, self.output_mode, self.num_bins, self._dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}


# --------------------------------------------------------------------------- lookup

# String lookups bucket by FarmHash modulo this prime-free bound, so every int64 hash of a
# vocabulary entry is found by a sorted search; equal strings are then confirmed.
_HASH_RANGE = (1 << 63) - 1


def _read_vocabulary_file(path: str, encoding: str = "utf-8") -> list:
    """A vocabulary file's tokens, one a line (Keras's format)."""
    with open(path, encoding=encoding) as f:
        return [line.rstrip("\r\n") for line in f]


class _IndexLookup(Stateless):
    """Keras's IndexLookup: a vocabulary of tokens mapped to indices (the mask token's 0
    when set, then `num_oov_indices` OOV indices, then the vocabulary), learned by
    `adapt` by frequency or given; `invert` maps back; `output_mode` encodes the
    indices. Subclasses say what a token is (`_token`) and how tokens are found."""

    _kind = "IndexLookup"

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, output_mode,
                 sparse, pad_to_max_tokens, vocabulary, idf_weights, invert, oov_method,
                 salt, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        kind = self._kind
        if output_mode == "binary":
            output_mode = "multi_hot"
        _check_mode(kind, output_mode, _ENCODINGS + ("tf_idf",))
        _no_sparse(kind, sparse)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"{kind}: if set, `max_tokens` must be greater than 1. "
                             f"Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"{kind}: `num_oov_indices` must be greater than or "
                             f"equal to 0. Received: num_oov_indices={num_oov_indices}")
        if invert and output_mode != "int":
            raise ValueError(f"{kind}: `output_mode` must be 'int' when `invert` is "
                             f"true. Received: output_mode={output_mode}")
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError(f"{kind}: `idf_weights` must be set if `output_mode` is "
                             "'tf_idf' and a vocabulary is given.")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(f"{kind}: `idf_weights` should only be set if "
                             f"`output_mode` is 'tf_idf'. Received: output_mode="
                             f"{output_mode}")
        if oov_method != "floormod":
            raise NotImplementedError(f"{kind}: only oov_method='floormod' is supported")
        self.max_tokens, self.num_oov_indices = max_tokens, int(num_oov_indices)
        self.mask_token, self.oov_token = mask_token, oov_token
        self.output_mode, self.sparse = output_mode, False
        self.pad_to_max_tokens, self.invert = bool(pad_to_max_tokens), bool(invert)
        self.oov_method, self.salt = oov_method, salt
        self._vocab: list | None = None
        self._idf: list | None = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # ------------------------------------------------------------- tokens
    def _token(self, value):
        """One vocabulary entry as this layer keeps it (int, or str)."""
        raise NotImplementedError

    def _tokens(self, values) -> list:
        if isinstance(values, str):
            values = _read_vocabulary_file(values, getattr(self, "encoding", "utf-8"))
        if isinstance(values, Tensor):
            values = values.numpy()
        return [self._token(v) for v in np.asarray(values, dtype=object).reshape(-1)]

    def _reserved(self) -> list:
        """The tokens before the vocabulary: the mask token, then the OOV tokens."""
        mask = [] if self.mask_token is None else [self.mask_token]
        return mask + [self.oov_token] * self.num_oov_indices

    # ------------------------------------------------------------- vocabulary
    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        """Use `vocabulary` (a list, array or file path of tokens, without the mask and
        OOV tokens; a leading copy of them, as `get_vocabulary` returns it, is dropped)
        and, for "tf_idf", its `idf_weights`."""
        vocab = self._tokens(vocabulary)
        reserved = self._reserved()
        if reserved and vocab[:len(reserved)] == reserved:
            vocab = vocab[len(reserved):]
            if idf_weights is not None and len(idf_weights) == len(vocab) + len(reserved):
                idf_weights = list(idf_weights)[len(reserved):]
        if len(set(vocab)) != len(vocab):
            seen, repeated = set(), []
            for v in vocab:
                if v in seen and v not in repeated:
                    repeated.append(v)
                seen.add(v)
            raise ValueError(f"{self._kind} {self.name!r}: the passed vocabulary has at "
                             f"least one repeated term. Please uniquify your dataset. The "
                             f"repeated terms are: {sorted(repeated)}")
        for token, what in ((self.mask_token, "mask_token"), (self.oov_token, "oov_token")):
            if token is not None and token in vocab and (what == "mask_token" or
                                                         self.num_oov_indices > 0):
                raise ValueError(f"{self._kind} {self.name!r}: found {what} {token!r} in "
                                 "the vocabulary; it must not be in it")
        if self.max_tokens is not None and len(vocab) + len(reserved) > self.max_tokens:
            raise ValueError(f"{self._kind} {self.name!r}: attempted to set a vocabulary "
                             f"larger than the maximum vocab size. Received vocabulary "
                             f"size is {len(vocab) + len(reserved)}; `max_tokens` is "
                             f"{self.max_tokens}.")
        if self.output_mode == "tf_idf":
            if idf_weights is None or len(idf_weights) != len(vocab):
                raise ValueError(f"{self._kind} {self.name!r}: `idf_weights` must be the "
                                 f"same length as the vocabulary ({len(vocab)}), got "
                                 f"{None if idf_weights is None else len(idf_weights)}")
            self._idf = [float(w) for w in np.asarray(idf_weights).reshape(-1)]
        self._vocab = vocab
        self._tables = self._make_tables(vocab)

    def _make_tables(self, vocab: list):
        """What `_find` needs to look tokens up (built once per vocabulary)."""
        raise NotImplementedError

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """The tokens by index: the mask token, the OOV tokens, then the vocabulary."""
        vocab = list(self._vocab or [])
        return self._reserved() + vocab if include_special_tokens else vocab

    def vocabulary_size(self) -> int:
        """The number of indices, the mask's and the OOV ones included."""
        return len(self.get_vocabulary())

    def adapt(self, data, steps=None) -> None:
        """Learn the vocabulary from `data` (an array, a list, or a dataset of batches):
        its tokens by frequency (ties: the larger token first, as Keras), at most
        `max_tokens` indices in all; "tf_idf" also learns each token's
        `log(1 + documents / (1 + documents holding it))`."""
        self._adapt_rows(self._adapt_batches(data, steps))

    def _adapt_batches(self, data, steps) -> list:
        batches = _batches(data)
        return batches[:steps] if steps is not None else batches

    def _adapt_rows(self, batches) -> None:
        """Count the tokens of `batches` (arrays whose rows are documents; a 1-D batch's
        elements are documents each)."""
        counts: dict = {}
        doc_counts: dict = {}
        documents = 0
        for batch in batches:
            rows = batch.reshape(batch.shape[0], -1) if batch.ndim > 1 else \
                batch.reshape(-1, 1)
            for row in rows.tolist():
                row = [self._token(t) for t in row]
                documents += 1
                for token in set(row):
                    doc_counts[token] = doc_counts.get(token, 0) + 1
                for token in row:
                    counts[token] = counts.get(token, 0) + 1
        self._learn(counts, doc_counts, documents)

    def _learn(self, counts: dict, doc_counts: dict, documents: int) -> None:
        for token in (self.mask_token, self.oov_token):
            counts.pop(token, None)
        vocab = sorted(sorted(counts, reverse=True), key=lambda t: -counts[t])
        if self.max_tokens is not None:
            vocab = vocab[:max(self.max_tokens - len(self._reserved()), 0)]
        idf = None
        if self.output_mode == "tf_idf":
            idf = [float(np.log(1.0 + documents / (1.0 + doc_counts[t]))) for t in vocab]
        self._vocab = None
        self.set_vocabulary(vocab, idf)

    # ------------------------------------------------------------- calling
    def _convert_input(self, inputs):
        return convert_to_tensor(inputs)

    def _need_vocabulary(self) -> None:
        if self._vocab is None:
            raise RuntimeError(f"{self._kind} {self.name!r}: when using "
                               "`output_mode=\"int\"` or others, a vocabulary is needed: "
                               "pass `vocabulary` or call `adapt()` first")

    def _check_input(self, x: Tensor) -> Tensor:
        """`x` as the dtype `_find` compares, else ValueError naming the layer."""
        raise NotImplementedError

    def call(self, inputs):
        self._need_vocabulary()
        if self.invert:
            if not inputs.dtype.is_integer:
                raise ValueError(f"{self._kind} {self.name!r}: with invert=True the inputs "
                                 f"are indices (integers), got {inputs.dtype.name}")
            return self._invert(_math.cast(inputs, _dt.int64))
        ids = self._lookup(self._check_input(inputs))
        return self._encode_ids(ids)

    def _encode_ids(self, ids: Tensor) -> Tensor:
        depth = self.vocabulary_size()
        if self.pad_to_max_tokens and self.max_tokens is not None:
            depth = self.max_tokens
        if self.output_mode == "int":
            return ids
        idf = None
        if self.output_mode == "tf_idf":
            # as Keras: the OOV indices weigh the mean idf; the mask and padding nothing
            weights = np.zeros([depth], np.float32)
            start = 0 if self.mask_token is None else 1
            mean = float(np.mean(self._idf)) if self._idf else 0.0
            weights[start:start + self.num_oov_indices] = mean
            weights[start + self.num_oov_indices:
                    start + self.num_oov_indices + len(self._idf)] = self._idf
            idf = _creation.constant(weights)
        dtype = _dt.float32 if self.output_mode == "tf_idf" else _dt.int64
        return _encode(ids, self.output_mode, depth, dtype, idf_weights=idf)

    def _find(self, flat: Tensor) -> tuple:
        """(found, index among the vocabulary) of each element of a [1, n] tensor."""
        raise NotImplementedError

    def _oov_bucket(self, flat: Tensor) -> Tensor:
        raise NotImplementedError

    def _lookup(self, x: Tensor) -> Tensor:
        """The index of each element of `x` (int64)."""
        start = 0 if self.mask_token is None else 1
        offset = start + self.num_oov_indices
        flat = _array.reshape(x, [1, -1])
        if self._vocab:
            found, ids = self._find(flat)
            ids = ids + offset
        else:
            found = _math.not_equal(_array.zeros_like(flat, dtype=_dt.int64), 0)
            ids = _array.zeros_like(flat, dtype=_dt.int64)
        if self.num_oov_indices > 0:
            oov = self._oov_bucket(flat) + start
        else:
            oov = ids * 0 - 1
        ids = _indexing.where(found, ids, oov)
        if self.mask_token is not None:
            ids = _indexing.where(_math.equal(flat, self.mask_token),
                                  _math.cast(0, _dt.int64), ids)
        if self.num_oov_indices == 0 and ctx.graph is None:  # traced: such values give -1
            if bool(_reduction.reduce_any(_math.less(ids, 0))):
                raise ValueError(f"{self._kind} {self.name!r}: a value is not in the "
                                 "vocabulary and num_oov_indices=0 leaves it no index")
        return _array.reshape(ids, dims_of(x))

    def _invert_table(self) -> tuple:
        """(every index's token, the OOV token) as tensors."""
        raise NotImplementedError

    def _invert(self, x: Tensor) -> Tensor:
        table, oov = self._invert_table()
        size = self.vocabulary_size()
        inside = _math.logical_and(_math.greater_equal(x, 0), _math.less(x, size))
        picked = _indexing.gather(table, _math.minimum(_math.maximum(x, 0),
                                                       max(size - 1, 0)))
        return _indexing.where(inside, picked, oov)

    def get_config(self) -> dict:
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode,
                "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "idf_weights": self._idf, "vocabulary": self._vocab,
                "vocabulary_size": None if self._vocab is None else self.vocabulary_size(),
                "oov_method": self.oov_method, "salt": self.salt}


class IntegerLookup(_IndexLookup):
    """Maps integers to indices of a vocabulary (given, or learned by `adapt` from the
    most frequent values): index 0 is the `mask_token`'s when one is set, then
    `num_oov_indices` indices for values outside the vocabulary (a value `v` takes
    `v mod num_oov_indices` of them), then the vocabulary. `invert=True` maps indices
    back. `output_mode` "one_hot", "multi_hot", "count", "tf_idf" encode the indices.

    Example:
        >>> lookup = tf.keras.layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
        >>> lookup(tf.constant([[12, 1138, 42], [42, 1000, 36]])).numpy()
        array([[1, 3, 4],
               [4, 0, 2]])
    """

    _kind = "IntegerLookup"

    def __init__(self, max_tokens=None, num_oov_indices: int = 1, mask_token=None,
                 oov_token=-1, output_mode: str = "int", sparse: bool = False,
                 pad_to_max_tokens: bool = False, vocabulary=None, vocabulary_dtype="int64",
                 idf_weights=None, invert: bool = False, oov_method: str = "floormod",
                 salt=None, vocabulary_size=None, name=None, **kwargs):
        # `vocabulary_size` comes back from Keras's config; the vocabulary decides it
        self.vocabulary_dtype = vocabulary_dtype
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, output_mode,
                         sparse, pad_to_max_tokens, vocabulary, idf_weights, invert,
                         oov_method, salt, name=name, **kwargs)

    def _token(self, value) -> int:
        if isinstance(value, (bytes, str)):
            value = int(value.decode() if isinstance(value, bytes) else value)
        return int(value)

    def _make_tables(self, vocab: list):
        vocab = np.asarray(vocab, np.int64)
        order = np.argsort(vocab, kind="stable")
        return vocab[order], order.astype(np.int64)

    def _check_input(self, x: Tensor) -> Tensor:
        if not x.dtype.is_integer:
            raise ValueError(f"IntegerLookup {self.name!r}: expected integer inputs, got "
                             f"{x.dtype.name}")
        return _math.cast(x, _dt.int64)

    def _find(self, flat: Tensor) -> tuple:
        ordered, order = self._tables
        table = _creation.constant(ordered[None, :])
        pos = _array.searchsorted(table, flat, side="left", out_type=_dt.int64)
        pos = _math.minimum(pos, ordered.size - 1)
        found = _math.equal(_indexing.gather(table[0], pos), flat)
        return found, _indexing.gather(_creation.constant(order), pos)

    def _oov_bucket(self, flat: Tensor) -> Tensor:
        return _math.floormod(flat, self.num_oov_indices)

    def _invert_table(self) -> tuple:
        tokens = np.asarray(self.get_vocabulary(), np.int64)
        return _creation.constant(tokens), _creation.constant(np.int64(self.oov_token))

    def get_config(self) -> dict:
        return {**super().get_config(), "vocabulary_dtype": self.vocabulary_dtype}


class StringLookup(_IndexLookup):
    """Maps strings to indices of a vocabulary (a list, a file of one token a line, or
    learned by `adapt` from the most frequent strings): index 0 is the `mask_token`'s
    when one is set, then `num_oov_indices` indices for strings outside the vocabulary
    (FarmHash buckets among them), then the vocabulary. `invert=True` maps indices back
    to strings. `output_mode` "one_hot", "multi_hot", "count", "tf_idf" encode the
    indices.

    Example:
        >>> lookup = tf.keras.layers.StringLookup(vocabulary=["a", "b", "c"])
        >>> lookup(tf.constant([["a", "c"], ["d", "b"]])).numpy()
        array([[1, 3],
               [0, 2]])
    """

    _kind = "StringLookup"

    def __init__(self, max_tokens=None, num_oov_indices: int = 1, mask_token=None,
                 oov_token: str = "[UNK]", vocabulary=None, idf_weights=None,
                 invert: bool = False, output_mode: str = "int", pad_to_max_tokens=False,
                 sparse: bool = False, encoding: str = "utf-8", oov_method: str = "floormod",
                 salt=None, vocabulary_size=None, name=None, **kwargs):
        # `vocabulary_size` comes back from Keras's config; the vocabulary decides it
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, output_mode,
                         sparse, pad_to_max_tokens, vocabulary, idf_weights, invert,
                         oov_method, salt, name=name, **kwargs)

    def _token(self, value) -> str:
        if isinstance(value, bytes):
            return value.decode(self.encoding)
        if isinstance(value, np.ndarray):
            value = value.item()
        return value.decode(self.encoding) if isinstance(value, bytes) else str(value)

    def _make_tables(self, vocab: list):
        encoded = [t.encode(self.encoding) for t in vocab]
        hashes = farmhash_fingerprint64_many(encoded) % np.uint64(_HASH_RANGE)
        hashes = hashes.astype(np.int64)
        order = np.argsort(hashes, kind="stable")
        if np.unique(hashes).size != hashes.size:  # a collision: compare every string
            return None, np.asarray(encoded, dtype=object)
        return (hashes[order], order.astype(np.int64),
                np.asarray(encoded, dtype=object)[order])

    def _check_input(self, x: Tensor) -> Tensor:
        if x.dtype is not _dt.string:
            raise ValueError(f"StringLookup {self.name!r}: expected string inputs, got "
                             f"{x.dtype.name}")
        return x

    def _find(self, flat: Tensor) -> tuple:
        if self._tables[0] is None:
            vocab = _creation.constant(self._tables[1])
            hits = _math.equal(flat[..., None], vocab)
            found = _reduction.reduce_any(hits, axis=-1)
            return found, _reduction.argmax(_math.cast(hits, _dt.int32), axis=-1,
                                       output_type=_dt.int64)
        hashes, order, strings = self._tables
        table = _creation.constant(hashes[None, :])
        keys = _strings.to_hash_bucket_fast(flat, _HASH_RANGE)
        pos = _array.searchsorted(table, keys, side="left", out_type=_dt.int64)
        pos = _math.minimum(pos, hashes.size - 1)
        found = _math.equal(_indexing.gather(_creation.constant(strings), pos), flat)
        return found, _indexing.gather(_creation.constant(order), pos)

    def _oov_bucket(self, flat: Tensor) -> Tensor:
        return _strings.to_hash_bucket_fast(flat, self.num_oov_indices)

    def _invert_table(self) -> tuple:
        tokens = [t.encode(self.encoding) for t in self.get_vocabulary()]
        return (_creation.constant(np.asarray(tokens, dtype=object)),
                _creation.constant(self.oov_token.encode(self.encoding)))

    def get_config(self) -> dict:
        config = super().get_config()
        return {**config, "encoding": self.encoding}
