"""`tf.keras.datasets.imdb`: 50,000 movie reviews as lists of word ids, labelled
positive or negative (`imdb.npz`, whose reviews are pickled object arrays: read with a
restricted unpickler that only rebuilds NumPy arrays)."""
from __future__ import annotations

import json

import numpy as np

from ._files import ORIGIN, get_file, load_npz

__all__ = ["load_data", "get_word_index"]

_SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"


def _shorter_than(maxlen: int, xs: list, labels: np.ndarray) -> tuple:
    keep = [i for i, x in enumerate(xs) if len(x) < maxlen]
    return [xs[i] for i in keep], labels[keep]


def load_data(path: str = "imdb.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, seed: int = 113, start_char: int | None = 1,
              oov_char: int | None = 2, index_from: int = 3) -> tuple:
    """`(x_train, y_train), (x_test, y_test)` as Keras returns them: object arrays of
    lists of word ids (each review shuffled with `seed`, starting with `start_char`, ids
    shifted by `index_from`; ids outside `[skip_top, num_words)` become `oov_char`, or
    are dropped when it is None; reviews of `maxlen` words or more are left out) and
    int labels 0/1.

    Example:
        >>> (x_train, y_train), _ = tf.keras.datasets.imdb.load_data(num_words=10000)
    """
    f = load_npz(get_file(path, ORIGIN + "imdb.npz", file_hash=_SHA256))
    rng = np.random.RandomState(seed)
    split = []
    for x_key, y_key in (("x_train", "y_train"), ("x_test", "y_test")):
        order = np.arange(len(f[x_key]))
        rng.shuffle(order)  # one generator for both halves, in Keras's order
        xs, labels = f[x_key][order], f[y_key][order]
        head = [start_char] if start_char is not None else []
        xs = [head + [w + index_from for w in x] for x in xs]
        if maxlen:
            xs, labels = _shorter_than(maxlen, xs, labels)
        split.append((xs, labels))
    (x_train, y_train), (x_test, y_test) = split
    if maxlen and (not x_train or not x_test):
        raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                         "sequence was kept. Increase maxlen.")
    xs = x_train + x_test
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    n = len(x_train)

    def as_objects(rows: list) -> np.ndarray:
        out = np.empty(len(rows), dtype=object)  # ragged lists, even when equally long
        out[:] = rows
        return out
    return (as_objects(xs[:n]), y_train), (as_objects(xs[n:]), y_test)


def get_word_index(path: str = "imdb_word_index.json") -> dict:
    """The word -> id index (`imdb_word_index.json`) of the reviews' ids."""
    with open(get_file(path, ORIGIN + "imdb_word_index.json")) as f:
        return json.load(f)
