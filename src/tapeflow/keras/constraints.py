"""`keras.constraints`: projections applied to a weight after each optimizer update."""
from __future__ import annotations

__all__: list = []
