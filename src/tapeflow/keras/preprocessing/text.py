"""`tf.keras.preprocessing.text`: Keras 1's text utilities — `Tokenizer` (a word index
by frequency, texts to index sequences or to count/binary/tf-idf matrices),
`text_to_word_sequence`, the hashing `one_hot` / `hashing_trick`, and
`tokenizer_from_json`. Plain Python over strings, as in Keras.

Example:
    >>> tok = tf.keras.preprocessing.text.Tokenizer()
    >>> tok.fit_on_texts(["the cat", "the dog"])
    >>> tok.texts_to_sequences(["the dog sat"])
    [[1, 3]]
"""
from __future__ import annotations

import collections
import hashlib
import json
import warnings

import numpy as np

__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence",
           "tokenizer_from_json"]

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text: str, filters: str = FILTERS, lower: bool = True,
                          split: str = " ") -> list:
    """The words of `input_text`: lower-cased if asked, every character of `filters`
    turned into `split`, split on `split`, empty pieces dropped.

    Example:
        >>> tf.keras.preprocessing.text.text_to_word_sequence("Hello, World!")
        ['hello', 'world']
    """
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in input_text.split(split) if w]


def hashing_trick(text: str, n: int, hash_function=None, filters: str = FILTERS,
                  lower: bool = True, split: str = " ", analyzer=None) -> list:
    """Each word of `text` hashed to an index in [1, n): `hash_function` is Python's
    `hash` by default (which varies between runs unless PYTHONHASHSEED is set), "md5"
    for a stable hash, or any function of a string.

    Example:
        >>> tf.keras.preprocessing.text.hashing_trick("a b a", 10, "md5")
        [2, 5, 2]
    """
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(word):
            return int(hashlib.md5(word.encode()).hexdigest(), 16)
    words = analyzer(text) if analyzer is not None else \
        text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    return [hash_function(w) % (n - 1) + 1 for w in words]


def one_hot(input_text: str, n: int, filters: str = FILTERS, lower: bool = True,
            split: str = " ", analyzer=None) -> list:
    """`hashing_trick` with Python's `hash`: word indices in [1, n) (not one-hot vectors,
    despite the name)."""
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split, analyzer=analyzer)


class Tokenizer:
    """A vocabulary indexed by frequency (1 is the most frequent word; 0 is never used;
    `oov_token`, if given, is 1 and stands for unknown words), learned by
    `fit_on_texts`; `num_words` keeps only indices below it when converting.

    Example:
        >>> tok = tf.keras.preprocessing.text.Tokenizer(num_words=3, oov_token="?")
        >>> tok.fit_on_texts(["a a b c"])
        >>> tok.word_index, tok.texts_to_sequences(["a b c d"])
        ({'?': 1, 'a': 2, 'b': 3, 'c': 4}, [[2, 1, 1, 1]])
    """

    def __init__(self, num_words: int | None = None, filters: str = FILTERS,
                 lower: bool = True, split: str = " ", char_level: bool = False,
                 oov_token=None, analyzer=None, **kwargs):
        if "nb_words" in kwargs:
            warnings.warn("The `nb_words` argument in `Tokenizer` has been renamed "
                          "`num_words`.")
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.index_docs = collections.defaultdict(int)
        self.filters, self.split, self.lower = filters, split, lower
        self.num_words, self.document_count = num_words, document_count
        self.char_level, self.oov_token, self.analyzer = char_level, oov_token, analyzer
        self.word_index: dict = {}
        self.index_word: dict = {}

    def _tokens(self, text) -> list:
        # a list is taken as tokens already, a string as characters when char_level
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower,
                                     split=self.split)

    def fit_on_texts(self, texts) -> None:
        """Count the words of `texts` (strings, or lists of tokens) and rebuild the index:
        by count, most frequent first, ties in order of first appearance."""
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for w in tokens:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(tokens):
                self.word_docs[w] += 1
        ranked = sorted(self.word_counts.items(), key=lambda wc: wc[1], reverse=True)
        vocabulary = ([] if self.oov_token is None else [self.oov_token]) + \
            [w for w, _ in ranked]
        self.word_index = {w: i for i, w in enumerate(vocabulary, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences) -> None:
        """Count in how many of `sequences` each index appears (for tf-idf)."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts) -> list:
        """Each text as its list of word indices."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        """`texts_to_sequences` one text at a time: unknown words (and indices at or
        past `num_words`) become the OOV index, or are dropped without `oov_token`."""
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            seq = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None and not (self.num_words and i >= self.num_words):
                    seq.append(i)
                elif oov is not None:
                    seq.append(oov)
            yield seq

    def sequences_to_texts(self, sequences) -> list:
        """Each index sequence as its words joined by spaces."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        """`sequences_to_texts` one sequence at a time (unknown indices: the OOV token,
        or dropped)."""
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            words = []
            for i in seq:
                w = self.index_word.get(i)
                if w is not None and not (self.num_words and i >= self.num_words):
                    words.append(w)
                elif oov is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts, mode: str = "binary") -> np.ndarray:
        """`sequences_to_matrix` of the texts' sequences."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode: str = "binary") -> np.ndarray:
        """One row per sequence, one column per index below `num_words` (or the
        vocabulary size + 1): "binary" presence, "count", "freq" (count / length) or
        "tfidf" ((1 + log count) * log(1 + documents / (1 + documents with the word)))."""
        if self.num_words:
            width = self.num_words
        elif self.word_index:
            width = len(self.word_index) + 1
        else:
            raise ValueError("Specify a dimension (`num_words` argument), or fit on some "
                             "text data first.")
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ValueError("Unknown vectorization mode:", mode)
        x = np.zeros((len(sequences), width))
        for row, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.Counter(j for j in seq if j < width)
            for j, c in counts.items():
                if mode == "count":
                    x[row, j] = c
                elif mode == "freq":
                    x[row, j] = c / len(seq)
                elif mode == "binary":
                    x[row, j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[row, j] = (1 + np.log(c)) * idf
        return x

    def get_config(self) -> dict:
        """The options and the learned tables (as JSON text, as Keras writes them)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs) -> str:
        """`{"class_name": "Tokenizer", "config": get_config()}` as JSON text."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The Tokenizer that `Tokenizer.to_json` wrote (Keras's JSON too).

    Example:
        >>> tok = tf.keras.preprocessing.text.Tokenizer()
        >>> tok.fit_on_texts(["x y y"])
        >>> tf.keras.preprocessing.text.tokenizer_from_json(tok.to_json()).word_index
        {'y': 1, 'x': 2}
    """
    config = dict(json.loads(json_string).get("config"))
    tables = {k: json.loads(config.pop(k)) for k in
              ("word_counts", "word_docs", "index_docs", "index_word", "word_index")}
    tok = Tokenizer(**config)
    tok.word_counts = tables["word_counts"]
    tok.word_docs = tables["word_docs"]
    # JSON keys are strings; the index tables key by integer
    tok.index_docs = {int(k): v for k, v in tables["index_docs"].items()}
    tok.index_word = {int(k): v for k, v in tables["index_word"].items()}
    tok.word_index = tables["word_index"]
    return tok


def __dir__() -> list:
    """Only the public names."""
    return list(__all__)
