"""`tapeflow.keras` (`tf.keras`)."""
from . import layers  # noqa: F401
from .layer import Input  # noqa: F401
