"""`tf.keras.utils`: `to_categorical` and `set_random_seed`.

Example:
    >>> tf.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
"""
from __future__ import annotations

import random

import numpy as np

from ..ops.random import set_seed
from .callbacks import Progbar  # noqa: F401

__all__ = ["to_categorical", "set_random_seed", "Progbar"]


def to_categorical(x, num_classes: int | None = None) -> np.ndarray:
    """One-hot float32 rows for integer class ids (a trailing axis of size 1 is dropped,
    as Keras does); `num_classes` defaults to `max(x) + 1`."""
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if x.size and not np.issubdtype(x.dtype, np.integer):
        if not np.all(np.equal(np.mod(x, 1), 0)):
            raise ValueError(f"to_categorical: class ids must be integers, got {x.dtype}")
        x = x.astype(np.int64)
    shape = x.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    x = x.reshape(-1).astype(np.int64)
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: class ids must be in [0, {num_classes}), got "
                         f"values in [{x.min()}, {x.max()}]")
    out = np.zeros((x.size, num_classes), np.float32)
    out[np.arange(x.size), x] = 1.0
    return out.reshape(*shape, num_classes)


def set_random_seed(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and tapeflow's (`random.set_seed`)
    at once, as Keras does, so that a program runs the same twice."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"set_random_seed: expected an integer seed, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    set_seed(seed)
