"""`keras.random`: Keras 3's random functions with seeds and `SeedGenerator`."""
from __future__ import annotations

__all__: list = []
