"""`tf.keras.layers`: Keras 3's layers, one module per kind as Keras 3 splits them (core,
convolutional, pooling, normalization, regularization, reshaping, activations, merging,
preprocessing, rnn, attention, text); this namespace only re-exports the public names each
module lists in its `__all__`.

Example:
    >>> from tapeflow.keras.layers import Dense
    >>> Dense(3)(tf.ones([2, 4])).shape
    TensorShape([2, 3])
"""
from ..layer import Input, InputLayer, KerasTensor, Layer
from . import (activations, attention, convolutional, core, image_preprocessing, merging,
               normalization, pooling, preprocessing, regularization, reshaping, rnn, text,
               tfsm)
from .activations import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .convolutional import *  # noqa: F401,F403
from .core import *  # noqa: F401,F403
from .image_preprocessing import *  # noqa: F401,F403
from .merging import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .preprocessing import *  # noqa: F401,F403
from .regularization import *  # noqa: F401,F403
from .reshaping import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .text import *  # noqa: F401,F403
from .tfsm import *  # noqa: F401,F403

__all__ = ["Input", "InputLayer", "KerasTensor", "Layer"] + sorted(
    name for module in (activations, attention, convolutional, core, image_preprocessing, merging,
                        normalization, pooling, preprocessing, regularization, reshaping, rnn,
                        text, tfsm)
    for name in module.__all__)


def __dir__() -> list:
    """Only the public names, not the implementation modules."""
    return list(__all__)
