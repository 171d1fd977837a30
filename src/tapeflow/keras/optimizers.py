"""`tf.keras.optimizers`: tapeflow's optimizers (train/optimizers.py) and `get` for the
names `compile` takes ("adam", "sgd", "rmsprop", "adagrad", "adamw", "nadam", "adamax",
"adadelta", "adafactor", "ftrl", "lamb", "lion"); `schedules` holds the learning-rate
schedules (with `serialize` / `deserialize`).

Example:
    >>> tf.keras.optimizers.get("adam").name
    'adam'
"""
from __future__ import annotations

from ..train.optimizers import *  # noqa: F401,F403
from ..train import optimizers as _optimizers
from ..train.optimizers import Optimizer
from .mixed_precision import LossScaleOptimizer

__all__ = list(_optimizers.__all__) + ["LossScaleOptimizer", "get"]

_BY_NAME = {"sgd": _optimizers.SGD, "adam": _optimizers.Adam, "adamw": _optimizers.AdamW,
            "rmsprop": _optimizers.RMSprop, "adagrad": _optimizers.Adagrad,
            "nadam": _optimizers.Nadam, "adamax": _optimizers.Adamax,
            "adadelta": _optimizers.Adadelta, "adafactor": _optimizers.Adafactor,
            "ftrl": _optimizers.Ftrl, "lamb": _optimizers.Lamb, "lion": _optimizers.Lion}


def get(identifier) -> Optimizer:
    """An optimizer with Keras's defaults for a name, an Optimizer as is, or one from a
    `{"class_name": ..., "config": ...}` dict (a `get_config()` under its class name, as
    Keras's `get` takes; every option in the config is honoured or refused)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict) and "class_name" in identifier:
        name = str(identifier["class_name"])
        cls = getattr(_optimizers, name, None) or _BY_NAME.get(name.lower()) or \
            (LossScaleOptimizer if name == "LossScaleOptimizer" else None)
        if not (isinstance(cls, type) and issubclass(cls, Optimizer)):
            raise ValueError(f"Unknown optimizer class {name!r}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer {identifier!r}; known names: "
                             f"{sorted(_BY_NAME)}")
        return cls(name=identifier.lower())
    raise ValueError(f"Could not interpret optimizer identifier {identifier!r}")


def __dir__() -> list:
    """Only the public names (what Keras's namespace lists), not this module's imports."""
    return list(__all__)
