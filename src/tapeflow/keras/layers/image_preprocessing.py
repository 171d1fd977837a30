"""Image preprocessing and augmentation layers (Resizing, cropping, random transforms)."""
from __future__ import annotations

__all__: list = []
