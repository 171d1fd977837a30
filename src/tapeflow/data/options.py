"""Pipeline options, the cardinality constants, and the state one iteration shares."""
from __future__ import annotations

import collections

import numpy as np

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


class Options:
    """Options of a pipeline (`Dataset.with_options`); unset ones are None.

    `deterministic`: whether parallel transformations must keep the input order (None:
    yes, as TensorFlow's default); False lets a parallel `map` yield elements as they
    finish.

    Example:
        >>> options = tf.data.Options()
        >>> options.deterministic = False
        >>> ds = tf.data.Dataset.range(4).with_options(options)
    """

    __slots__ = ("deterministic",)

    def __init__(self):
        self.deterministic = None

    def merge(self, other: "Options") -> "Options":
        out = Options()
        for name in Options.__slots__:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(out, name, theirs if theirs is not None else mine)
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, Options) and all(
            getattr(self, n) == getattr(other, n) for n in Options.__slots__)

    def __repr__(self) -> str:
        return f"Options(deterministic={self.deterministic})"


class IterationContext:
    """What one iterator's run of a pipeline shares: how many times each shuffle has been
    started (so `repeat` reshuffles every epoch), the iteration number each shuffle drew
    when the iterator was made (saved by checkpoints), and the pipeline's options."""

    def __init__(self, dataset: "Dataset", iterations: list | None = None):
        self.options = dataset.options()
        self.shuffles = [d for d in dataset._walk() if hasattr(d, "_next_iteration")]
        if iterations is None:
            iterations = [d._next_iteration() for d in self.shuffles]
        self.iterations = dict(zip(map(id, self.shuffles), iterations))
        self.epochs: dict = collections.Counter()

    def saved_iterations(self) -> list:
        return [self.iterations[id(d)] for d in self.shuffles]

    def shuffle_rng(self, node) -> np.random.Generator:
        epoch = self.epochs[id(node)]
        self.epochs[id(node)] += 1
        iteration = self.iterations.get(id(node))
        if iteration is None:  # a shuffle made inside flat_map/interleave's function
            iteration = node._next_iteration()
        words = list(node._seed) + ([iteration, epoch] if node._reshuffle else [])
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))
