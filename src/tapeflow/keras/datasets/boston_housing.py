"""`tf.keras.datasets.boston_housing`: 13 features and the median price of 506 houses
(`boston_housing.npz`)."""
from __future__ import annotations

import numpy as np

from ._files import ORIGIN, get_file

__all__ = ["load_data"]

_SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2,
              seed: int = 113) -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: float64 features (n, 13) and prices (n,),
    shuffled with `seed` as Keras does, the last `test_split` of them for testing.

    Example:
        >>> (x_train, y_train), (x_test, y_test) = \\
        ...     tf.keras.datasets.boston_housing.load_data()
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"Invalid `test_split` argument: {test_split}. It must be between "
                         "0 and 1 (exclusive of 1).")
    path = get_file(path, ORIGIN + "boston_housing.npz", file_hash=_SHA256)
    with np.load(path, allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    order = np.arange(len(x))
    np.random.RandomState(seed).shuffle(order)  # Keras's order, so the split is Keras's
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
