"""`tf.keras.datasets`: Keras's small datasets, read from the files Keras caches under
`~/.keras/datasets` (or `$KERAS_HOME/datasets`), in Keras's own file names and formats.
A missing file is downloaded where the network allows; offline, the error names the file
and the place to put it. Loading never executes code from a file.

Example:
    >>> (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    >>> x_train.shape, x_train.dtype
    ((60000, 28, 28), dtype('uint8'))
"""
from . import boston_housing, cifar10, fashion_mnist, imdb, mnist  # noqa: F401

__all__ = ["boston_housing", "cifar10", "fashion_mnist", "imdb", "mnist"]
