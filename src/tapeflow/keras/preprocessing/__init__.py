"""`tf.keras.preprocessing`: Keras 1's preprocessing utilities as TF 2.21's tf.keras keeps
them — `sequence` (pad_sequences, skipgrams, TimeseriesGenerator), `image` (array and
PIL conversions, smart_resize), `text` (Tokenizer), and datasets from directories and
arrays.

Example:
    >>> tf.keras.preprocessing.sequence.pad_sequences([[1], [2, 3]])
    array([[0, 1],
           [2, 3]], dtype=int32)
"""
from . import image, sequence, text  # noqa: F401
from ._directory import image_dataset_from_directory, text_dataset_from_directory
from ..sequence_utils import timeseries_dataset_from_array

__all__ = ["image", "image_dataset_from_directory", "sequence", "text",
           "text_dataset_from_directory", "timeseries_dataset_from_array"]


def __dir__() -> list:
    """Only the public names, not the implementation modules."""
    return list(__all__)
