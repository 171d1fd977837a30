"""`tf.keras.models`: Model, Sequential."""
from .model import Functional, Model, Sequential  # noqa: F401

__all__ = ["Model", "Sequential"]
