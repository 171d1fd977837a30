"""`tf.keras.datasets.fashion_mnist`: 28x28 grayscale clothes, in the four gzipped IDX
files Keras caches under `~/.keras/datasets/fashion-mnist/`."""
from __future__ import annotations

import gzip
import os

import numpy as np

from ._files import ORIGIN, get_file

__all__ = ["load_data"]

_FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def _read(path: str, header: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def load_data() -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: uint8 images (60000, 28, 28) and
    (10000, 28, 28), uint8 labels 0-9.

    Example:
        >>> (x_train, y_train), _ = tf.keras.datasets.fashion_mnist.load_data()
    """
    subdir = os.path.join("datasets", "fashion-mnist")
    paths = [get_file(name, ORIGIN + name, subdir=subdir) for name in _FILES]
    y_train, y_test = _read(paths[0], 8), _read(paths[2], 8)  # IDX headers: 8 and 16 bytes
    x_train = _read(paths[1], 16).reshape(len(y_train), 28, 28)
    x_test = _read(paths[3], 16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)
