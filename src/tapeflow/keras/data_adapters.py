"""What `fit`, `evaluate` and `predict` iterate: arrays (and nests of them) cut into
batches, shuffled each epoch, or datasets taken as they are (Keras 3's data adapters).

Example:
    >>> batches = Batches(np.ones((5, 2)), np.ones((5, 1)), None, batch_size=2)
    >>> batches.steps
    3
"""
from __future__ import annotations

import math

import numpy as np

from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..data.dataset import Dataset
from ..distribute.strategy import DistributedDataset
from ._structure import leaves, map_leaves

def as_array(value):
    """NumPy for the leaves of x, y and sample weights; floats become float32 as Keras's
    array adapter makes them."""
    if value is None:
        return None
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    return array.astype(np.float32) if array.dtype == np.float64 else array


def num_samples(x) -> int:
    sizes = {len(leaf) for leaf in leaves(x)}
    if len(sizes) != 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have sizes "
                         f"{sorted(sizes)}; make sure all arrays contain the same number of "
                         "samples.")
    return sizes.pop()


def unpack(data) -> tuple:
    """(x, y, sample_weight) from a batch: x, (x,), (x, y) or (x, y, sample_weight)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be (x,), (x, y) or (x, y, sample_weight), found "
                     f"a tuple of {len(data)} elements")


class Batches:
    """The batches of one `fit`/`evaluate`/`predict` call: arrays cut here, or a dataset."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps=None,
                 shuffle=False, class_weight=None, seed=None):
        self.steps_per_epoch = steps
        if isinstance(x, DistributedDataset):
            raise ValueError("Pass the tf.data.Dataset itself, not a distributed dataset: "
                             "under a strategy the model shares each global batch out "
                             "among the replicas")
        if isinstance(x, Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("`y` and `sample_weight` must not be given when `x` is a "
                                 "dataset (it yields them)")
            self.dataset = x
            size = int(x.cardinality())
            self.steps = steps if steps is not None else (size if size >= 0 else None)
            self._iterator = None
            return
        self.dataset = None
        self.arrays = (map_leaves(as_array, x), map_leaves(as_array, y),
                       as_array(sample_weight))
        if class_weight is not None:
            if y is None:
                raise ValueError("class_weight needs `y`")
            labels = np.asarray(leaves(self.arrays[1])[0])
            labels = labels.argmax(-1) if labels.ndim > 1 and labels.shape[-1] > 1 else \
                labels.reshape(len(labels), -1)[:, 0]
            weights = np.array([class_weight.get(int(c), 1.0) for c in labels], np.float32)
            base = self.arrays[2]
            self.arrays = (*self.arrays[:2], weights if base is None else base * weights)
        self.size = num_samples(list(self.arrays))
        self.batch_size = 32 if batch_size is None else int(batch_size)
        self.shuffle = shuffle
        self.steps = steps if steps is not None else max(math.ceil(self.size /
                                                                   self.batch_size), 1)
        # drawn from NumPy's global generator, so utils.set_random_seed fixes the order
        self._rng = np.random.default_rng(np.random.randint(2 ** 31) if seed is None
                                          else seed)

    def epoch(self):
        """The batches of one epoch, each (x, y, sample_weight) of tensors."""
        if self.dataset is not None:
            yield from self._dataset_epoch()
            return
        order = self._rng.permutation(self.size) if self.shuffle else np.arange(self.size)
        per_epoch = math.ceil(self.size / self.batch_size)
        for step in range(self.steps):
            start = (step % per_epoch) * self.batch_size
            index = order[start:start + self.batch_size]
            batch = [map_leaves(lambda a: convert_to_tensor(a[index]), part)
                     if part is not None else None for part in self.arrays]
            while len(batch) > 1 and batch[-1] is None:  # (x, y) as Keras gives it
                batch.pop()
            yield tuple(batch)

    def _dataset_epoch(self):
        # with steps_per_epoch, an epoch continues where the last one stopped (as Keras)
        if self.steps_per_epoch is None or self._iterator is None:
            self._iterator = iter(self.dataset)
        for step, element in enumerate(self._iterator):
            yield element
            if self.steps_per_epoch is not None and step + 1 >= self.steps_per_epoch:
                return
