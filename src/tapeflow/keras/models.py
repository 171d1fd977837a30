"""`tf.keras.models`: Model, Sequential, load_model."""
from .functional import Functional  # noqa: F401
from .model import Model
from .sequential import Sequential
from .saving import load_model, save_model  # noqa: F401

__all__ = ["Model", "Sequential", "load_model", "save_model"]


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
