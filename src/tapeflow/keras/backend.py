"""`tf.keras.backend`: `clear_session` and `floatx`."""
from .layer import clear_session  # noqa: F401

__all__ = ["clear_session", "floatx"]


def floatx() -> str:
    """The default float type of layers: "float32"."""
    return "float32"
