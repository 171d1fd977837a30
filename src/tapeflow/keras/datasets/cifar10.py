"""`tf.keras.datasets.cifar10`: 32x32 colour images in 10 classes, from the pickled
batches of `cifar-10-python.tar.gz` that Keras unpacks under `~/.keras/datasets/`."""
from __future__ import annotations

import os

import numpy as np

from ._files import RestrictedUnpickler, cache_dir, extract_tar, get_file

__all__ = ["load_data"]

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_TARGET = "cifar-10-batches-py-target"  # Keras 3's folder; the batches are in a subfolder
_BATCHES = "cifar-10-batches-py"


def _batch_dir() -> str:
    root = cache_dir()
    for candidate in (os.path.join(root, _TARGET, _BATCHES),  # Keras 3
                      os.path.join(root, _BATCHES)):          # Keras 2
        if os.path.isfile(os.path.join(candidate, "test_batch")):
            return candidate
    archive = get_file(_TARGET + "_archive", _ORIGIN, file_hash=_SHA256)
    extract_tar(archive, os.path.join(root, _TARGET))
    return os.path.join(root, _TARGET, _BATCHES)


def load_batch(path: str) -> tuple:
    """(data (n, 3, 32, 32) uint8, labels) of one pickled CIFAR batch; only NumPy arrays
    are unpickled."""
    with open(path, "rb") as f:
        d = RestrictedUnpickler(f, encoding="bytes").load()
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}
    data = np.asarray(d["data"], np.uint8)
    return data.reshape(data.shape[0], 3, 32, 32), np.asarray(d["labels"], np.uint8)


def load_data() -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: uint8 images (50000, 32, 32, 3) and
    (10000, 32, 32, 3) (channels last), uint8 labels of shape (n, 1).

    Example:
        >>> (x_train, y_train), _ = tf.keras.datasets.cifar10.load_data()
    """
    folder = _batch_dir()
    parts = [load_batch(os.path.join(folder, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([x for x, _ in parts])
    y_train = np.concatenate([y for _, y in parts])
    x_test, y_test = load_batch(os.path.join(folder, "test_batch"))
    return ((x_train.transpose(0, 2, 3, 1), y_train.reshape(-1, 1)),
            (x_test.transpose(0, 2, 3, 1), y_test.reshape(-1, 1)))
