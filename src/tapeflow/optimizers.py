"""`tapeflow.optimizers`: SGD, Adam, AdamW, Nadam, RMSprop, Adagrad, LazyAdam and
`schedules` (implemented in train/optimizers.py)."""
from .train.optimizers import *  # noqa: F401,F403
