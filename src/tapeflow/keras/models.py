"""`tf.keras.models`: Model, Sequential, load_model."""
from .model import Functional, Model, Sequential  # noqa: F401
from .saving import load_model, save_model  # noqa: F401

__all__ = ["Model", "Sequential", "load_model", "save_model"]
