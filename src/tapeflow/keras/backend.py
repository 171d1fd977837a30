"""`tf.keras.backend`: `clear_session` and `floatx`."""
from .layer import clear_session  # noqa: F401

__all__ = ["clear_session", "floatx"]


def floatx() -> str:
    """The default float type of layers: "float32"."""
    return "float32"


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
