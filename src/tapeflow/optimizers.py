"""`tapeflow.optimizers`: SGD, Adam, AdamW, Nadam, Adamax, RMSprop, Adagrad, Adadelta,
LazyAdam and `schedules` (implemented in train/optimizers.py)."""
from .train.optimizers import *  # noqa: F401,F403
