"""`tf.keras.preprocessing.sequence`: Keras 1's sequence utilities — `pad_sequences`
(the same function as `keras.utils.pad_sequences`), word2vec's `make_sampling_table` and
`skipgrams`, and `TimeseriesGenerator` (batches of sliding windows).

Example:
    >>> tf.keras.preprocessing.sequence.pad_sequences([[1, 2], [3]], maxlen=3)
    array([[0, 1, 2],
           [0, 0, 3]], dtype=int32)
"""
from __future__ import annotations

import json
import random

import numpy as np

from ..sequence_utils import pad_sequences

__all__ = ["TimeseriesGenerator", "make_sampling_table", "pad_sequences", "skipgrams"]


class TimeseriesGenerator:
    """Batches of windows over time-ordered `data` (axis 0 is time) with the target of
    the step that follows each window: sample `i` ends just before row `r` and takes
    `data[r - length:r:sampling_rate]` with `targets[r]`, rows `stride` apart from
    `start_index + length` to `end_index`; `shuffle` draws rows at random, `reverse`
    flips each window in time.

    Example:
        >>> gen = tf.keras.preprocessing.sequence.TimeseriesGenerator(
        ...     np.arange(10), np.arange(10), length=3, batch_size=2)
        >>> x, y = gen[0]
        >>> x.tolist(), y.tolist()
        ([[0, 1, 2], [1, 2, 3]], [3, 4])
    """

    def __init__(self, data, targets, length: int, sampling_rate: int = 1, stride: int = 1,
                 start_index: int = 0, end_index: int | None = None, shuffle: bool = False,
                 reverse: bool = False, batch_size: int = 128, **kwargs):
        # Keras's PyDataset options (workers, use_multiprocessing, max_queue_size) change
        # nothing here: batches are made on demand in the caller's thread
        unknown = sorted(set(kwargs) - {"workers", "use_multiprocessing", "max_queue_size"})
        if unknown:
            raise TypeError(f"TimeseriesGenerator: unexpected arguments {unknown}")
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is "
                             f"{len(data)} while target length is {len(targets)}")
        self.data, self.targets = data, targets
        self.length, self.sampling_rate, self.stride = length, sampling_rate, stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle, self.reverse, self.batch_size = shuffle, reverse, batch_size
        if self.start_index > self.end_index:
            raise ValueError(f"`start_index+length={self.start_index} > end_index="
                             f"{self.end_index}` is disallowed, as no part of the sequence "
                             "would be left to be used as current step.")

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index: int) -> tuple:
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1,
                                     size=self.batch_size)
        else:
            first = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(first, min(first + self.batch_size * self.stride,
                                        self.end_index + 1), self.stride)
        samples = np.array([self.data[r - self.length:r:self.sampling_rate] for r in rows])
        targets = np.array([self.targets[r] for r in rows])
        return (samples[:, ::-1, ...], targets) if self.reverse else (samples, targets)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def num_batches(self) -> int:
        """The number of batches (Keras's PyDataset property)."""
        return len(self)

    def get_config(self) -> dict:
        """The arguments, with `data` and `targets` as JSON text."""
        def as_json(value, what):
            value = value.tolist() if isinstance(value, np.ndarray) else value
            try:
                return json.dumps(value)
            except TypeError as e:
                raise TypeError(f"{what} not JSON Serializable: {value}") from e
        return {"data": as_json(self.data, "Data"),
                "targets": as_json(self.targets, "Targets"),
                "length": self.length, "sampling_rate": self.sampling_rate,
                "stride": self.stride, "start_index": self.start_index,
                "end_index": self.end_index, "shuffle": self.shuffle,
                "reverse": self.reverse, "batch_size": self.batch_size}

    def to_json(self, **kwargs) -> str:
        """`{"class_name": "TimeseriesGenerator", "config": get_config()}` as JSON."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """word2vec's probability of keeping the word of each frequency rank, assuming
    Zipf-distributed frequencies: `min(1, sqrt(f) / f)` for `f = sampling_factor *
    inverse frequency(rank)`.

    Example:
        >>> tf.keras.preprocessing.sequence.make_sampling_table(3, 0.1).round(4)
        array([0.3152, 0.3152, 0.5476])
    """
    euler_gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1   # rank 0 is not a word; it gets rank 1's value
    inverse_frequency = rank * (np.log(rank) + euler_gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inverse_frequency
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size: int, window_size: int = 4,
              negative_samples: float = 1.0, shuffle: bool = True, categorical: bool = False,
              sampling_table=None, seed=None) -> tuple:
    """Skip-gram pairs of a sequence of word indices: (word, neighbour within
    `window_size`) labelled 1, then `negative_samples` times as many (word, random word)
    pairs labelled 0 (`[0, 1]` / `[1, 0]` when `categorical`). Index 0 is not a word;
    `sampling_table[w]` is the chance of keeping word `w` as a centre.

    Draws from Python's `random` module in Keras's order, so `random.seed(...)` before
    the call and `seed` (the shuffle's) reproduce Keras's pairs exactly; like Keras, the
    shuffle reseeds `random` with `seed`.

    Example:
        >>> pairs, labels = tf.keras.preprocessing.sequence.skipgrams(
        ...     [1, 2, 3], 4, window_size=1, negative_samples=0, shuffle=False)
        >>> pairs, labels
        ([[1, 2], [2, 1], [2, 3], [3, 2]], [1, 1, 1, 1])
    """
    positive, negative = ([0, 1], [1, 0]) if categorical else (1, 0)
    couples, labels = [], []
    n = len(sequence)
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(n, i + window_size + 1)):
            wj = sequence[j]
            if j != i and wj:
                couples.append([wi, wj])
                labels.append(positive)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        centres = [c[0] for c in couples]
        random.shuffle(centres)
        couples += [[centres[k % len(centres)], random.randint(1, vocabulary_size - 1)]
                    for k in range(count)]
        labels += [negative] * count
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        # the same seed shuffles both lists, so pairs and labels stay aligned
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


def __dir__() -> list:
    """Only the public names."""
    return list(__all__)
