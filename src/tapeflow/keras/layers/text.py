"""Text preprocessing: TextVectorization (standardize, split, n-grams, then a
StringLookup), as Keras 3's.

The vocabulary (and idf weights) travel in the layer's config, learned ones included:
tapeflow's `.keras` files have no assets folder, where Keras writes a learned vocabulary.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtypes as _dt
from ..._core.convert import convert_to_tensor
from ..._core.tensor import Tensor
from ...data.dataset import Dataset
from ...ops import array as _array, creation as _creation, indexing as _indexing
from ...ops import math as _math, strings as _strings
from ...ops.ragged import RaggedTensor
from ..layer import Layer
from .preprocessing import StringLookup

__all__ = ["TextVectorization"]

# Keras's DEFAULT_STRIP_REGEX: ASCII punctuation
_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")
_MODES = ("int", "multi_hot", "count", "tf_idf")


def _ngram_widths(layer: str, ngrams) -> tuple:
    if ngrams is None:
        return ()
    if isinstance(ngrams, int) and not isinstance(ngrams, bool):
        return tuple(range(1, ngrams + 1))
    if isinstance(ngrams, (tuple, list)) and all(isinstance(n, int) for n in ngrams):
        return tuple(ngrams)
    raise ValueError(f"{layer}: `ngrams` must be None, an integer, or a tuple of integers. "
                     f"Received: ngrams={ngrams}")


def _ngrams(tokens: RaggedTensor, widths: tuple) -> RaggedTensor:
    """Each row's n-grams of every width, joined with spaces (all of one width, in order,
    before the next width), as `tf.strings.ngrams`."""
    values, rowids = tokens.values, tokens.value_rowids()
    grams, rows = [], []
    for k in widths:
        if k == 1:
            grams.append(values)
            rows.append(rowids)
            continue
        # the k shifted copies of the values: position i starts an n-gram of its row
        # when position i + k - 1 lies in the same row
        pieces = [values[i:-(k - 1 - i)] if k - 1 - i else values[i:] for i in range(k)]
        starts = rowids[:-(k - 1)]
        same = _math.equal(starts, rowids[k - 1:])
        grams.append(_indexing.boolean_mask(_strings.join(pieces, separator=" "), same))
        rows.append(_indexing.boolean_mask(starts, same))
    rows_all = _array.concat(rows, 0)
    order = _array.argsort(rows_all, stable=True)
    return RaggedTensor.from_value_rowids(
        _indexing.gather(_array.concat(grams, 0), order), _indexing.gather(rows_all, order),
        nrows=tokens.nrows(), validate=False)


class TextVectorization(Layer):
    """Turns strings into token indices or token-count vectors: each string is
    standardized (`"lower_and_strip_punctuation"`, `"lower"`, `"strip_punctuation"`, None
    or a callable), split into tokens (`"whitespace"`, `"character"`, None or a
    callable), optionally joined into `ngrams`, then looked up in a vocabulary (given, or
    learned by `adapt` from the most frequent tokens; index 0 is padding and 1 `"[UNK]"`
    in "int" mode). `output_mode` "int" gives index sequences (padded or cut to
    `output_sequence_length`; ragged with `ragged=True`), "multi_hot", "count" and
    "tf_idf" one vector per string.

    Example:
        >>> vectorize = tf.keras.layers.TextVectorization(output_sequence_length=4)
        >>> vectorize.adapt(["The cat sat.", "the dog sat"])
        >>> vectorize.get_vocabulary()
        ['', '[UNK]', 'the', 'sat', 'dog', 'cat']
        >>> vectorize(["the cat ran"]).numpy()
        array([[2, 5, 1, 0]])
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode: str = "int",
                 output_sequence_length=None, pad_to_max_tokens: bool = False,
                 vocabulary=None, idf_weights=None, sparse: bool = False,
                 ragged: bool = False, encoding: str = "utf-8", vocabulary_size=None,
                 name=None, **kwargs):
        # `vocabulary_size` comes back from Keras's config; the vocabulary decides it
        super().__init__(name=name, **kwargs)
        kind = "TextVectorization"
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in _MODES:
            raise ValueError(f"{kind}: invalid value for argument `output_mode`. Expected "
                             f"one of {_MODES}. Received: output_mode={output_mode!r}")
        if not (standardize is None or callable(standardize) or standardize in _STANDARDIZE):
            raise ValueError(f"{kind}: invalid value for argument `standardize`. Expected "
                             f"one of {(None,) + _STANDARDIZE} or a callable. Received: "
                             f"standardize={standardize!r}")
        if not (split is None or callable(split) or split in _SPLIT):
            raise ValueError(f"{kind}: invalid value for argument `split`. Expected one of "
                             f"{(None,) + _SPLIT} or a callable. Received: split={split!r}")
        widths = _ngram_widths(kind, ngrams)
        if output_sequence_length is not None and output_mode != "int":
            raise ValueError(f"{kind}: `output_sequence_length` must not be set if "
                             f"`output_mode` is not 'int'. Received output_sequence_length="
                             f"{output_sequence_length}.")
        if ragged and output_mode != "int":
            raise ValueError(f"{kind}: `ragged` must not be true if `output_mode` is "
                             f"'{output_mode}'. `ragged=True` is only supported when "
                             "`output_mode` is 'int'.")
        if ragged and output_sequence_length is not None:
            raise ValueError(f"{kind}: `output_sequence_length` must not be set if ragged "
                             f"is True. Received: output_sequence_length="
                             f"{output_sequence_length}")
        if sparse:
            raise NotImplementedError(f"{kind}: sparse=True is not supported yet (the "
                                      "outputs are dense)")
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams = list(ngrams) if isinstance(ngrams, (tuple, list)) else ngrams
        self._widths = widths
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.pad_to_max_tokens, self.sparse, self.ragged = bool(pad_to_max_tokens), False, \
            bool(ragged)
        self.encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            mask_token="" if output_mode == "int" else None, output_mode=output_mode,
            pad_to_max_tokens=pad_to_max_tokens, encoding=encoding,
            name=f"{self.name}_lookup")
        self._given_vocabulary = vocabulary is not None

    # ------------------------------------------------------------- vocabulary
    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """The tokens by index ("" and "[UNK]" first in "int" mode, "[UNK]" otherwise)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        """The number of indices, padding and OOV included."""
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        """Use `vocabulary` (a list, array or file path; a leading "" and "[UNK]" as
        `get_vocabulary` gives them are dropped) and, for "tf_idf", its `idf_weights`."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Learn the vocabulary (and idf weights) from `data`: strings as an array, a
        list, a tensor or a dataset of batches; each string is one document."""
        if isinstance(data, Dataset):
            batches = list(data.take(steps)) if steps is not None else list(data)
        elif isinstance(data, (list, tuple)) and data and not isinstance(data[0], str) and \
                hasattr(data[0], "__len__") and not isinstance(data[0], bytes):
            batches = list(data)
        else:
            batches = [data]
        rows = []
        for batch in batches:
            tokens = self._preprocess(convert_to_tensor(batch))
            if isinstance(tokens, RaggedTensor):
                rows.extend(tokens.to_list())
            else:
                tokens = np.asarray(tokens.numpy(), dtype=object)
                if self.split is None:  # each string is one token of its own document
                    rows.extend([t] for t in tokens.reshape(-1).tolist())
                elif tokens.ndim <= 1:  # the tokens of one 0-d string
                    rows.append(tokens.reshape(-1).tolist())
                else:
                    rows.extend(tokens.reshape(tokens.shape[0], -1).tolist())
        lookup = self._lookup_layer
        counts: dict = {}
        doc_counts: dict = {}
        for row in rows:
            row = [lookup._token(t) for t in row]
            for token in set(row):
                doc_counts[token] = doc_counts.get(token, 0) + 1
            for token in row:
                counts[token] = counts.get(token, 0) + 1
        lookup._learn(counts, doc_counts, len(rows))

    # ------------------------------------------------------------- calling
    def _convert_input(self, inputs):
        return inputs if isinstance(inputs, RaggedTensor) else convert_to_tensor(inputs)

    def _preprocess(self, x):
        """Standardized, split, n-grammed tokens: a RaggedTensor of rows (a 1-D tensor for
        a 0-d input), or the standardized strings when `split` is None."""
        if x.dtype is not _dt.string:
            raise ValueError(f"TextVectorization {self.name!r}: expected string inputs, got "
                             f"{x.dtype.name}")
        if self.standardize in ("lower_and_strip_punctuation", "lower"):
            x = _strings.lower(x)
        if self.standardize in ("lower_and_strip_punctuation", "strip_punctuation"):
            x = _strings.regex_replace(x, _PUNCTUATION, "")
        if callable(self.standardize):
            x = self.standardize(x)
        if self.split is None:
            return x
        if isinstance(x, Tensor) and x.ndim > 1:
            if x._shape[-1] != 1:
                raise ValueError("When using `TextVectorization` to tokenize strings, the "
                                 "input rank must be 1 or the last shape dimension must be "
                                 f"1. Received: inputs.shape={tuple(x._shape)} with rank="
                                 f"{x.ndim}")
            x = _array.squeeze(x, [-1])
        scalar = isinstance(x, Tensor) and x.ndim == 0
        if self.split == "whitespace":
            tokens = _strings.split(x)
        elif self.split == "character":
            tokens = _strings.unicode_split(x, "UTF-8")
        else:
            tokens = self.split(x)
        if not self._widths:
            return tokens
        if scalar:
            tokens = RaggedTensor.from_row_splits(
                tokens, _array.stack([_creation.constant(0, _dt.int64),
                                      _array.size(tokens, out_type=_dt.int64)]),
                validate=False)
        elif isinstance(tokens, Tensor):
            tokens = RaggedTensor.from_tensor(tokens)
        grams = _ngrams(tokens, self._widths)
        return grams.values if scalar else grams

    def call(self, inputs):
        lookup = self._lookup_layer
        lookup._need_vocabulary()
        tokens = self._preprocess(inputs)
        ragged = isinstance(tokens, RaggedTensor)
        flat = tokens.values if ragged else tokens
        ids = lookup._lookup(flat)
        if self.output_mode == "int":
            if not ragged:
                if ids.ndim == 1 and self.output_sequence_length is not None:
                    # one text's tokens: padded or cut to the length too, as Keras's
                    length = self.output_sequence_length
                    return _array.pad(ids, [[0, length]])[:length]
                return ids
            ids = tokens.with_values(ids)
            if self.ragged:
                return ids
            dense = ids.to_tensor(0)
            if self.output_sequence_length is None:
                return dense
            # pad by the full length (a static amount, so traced batches work), then cut
            length = self.output_sequence_length
            return _array.pad(dense, [[0, 0], [0, length]])[:, :length]
        depth = lookup.vocabulary_size()
        if self.pad_to_max_tokens and self.max_tokens is not None:
            depth = max(depth, self.max_tokens)
        if ragged:
            # padding takes an index past the last: its one-hot row is all zeros
            ids = tokens.with_values(ids).to_tensor(depth)
        elif ids.ndim == 0:
            ids = _array.reshape(ids, [1])
        else:
            ids = ids[..., None]
        return lookup._encode_ids(ids)

    def get_config(self) -> dict:
        lookup = self._lookup_layer
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": self.standardize, "split": self.split, "ngrams": self.ngrams,
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": self.sparse,
                "ragged": self.ragged, "vocabulary": lookup._vocab,
                "idf_weights": lookup._idf, "encoding": self.encoding,
                "vocabulary_size": None if lookup._vocab is None else
                self.vocabulary_size()}
