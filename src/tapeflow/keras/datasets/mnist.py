"""`tf.keras.datasets.mnist`: 28x28 grayscale digits (`mnist.npz`)."""
from __future__ import annotations

import numpy as np

from ._files import ORIGIN, get_file

__all__ = ["load_data"]

_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def load_data(path: str = "mnist.npz") -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: uint8 images (60000, 28, 28) and
    (10000, 28, 28), uint8 labels 0-9; `path` is relative to `~/.keras/datasets`.

    Example:
        >>> (x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
    """
    path = get_file(path, ORIGIN + "mnist.npz", file_hash=_SHA256)
    with np.load(path, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
