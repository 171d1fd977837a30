"""`tapeflow.random`: seeded random tensors."""
import types

from .ops.random import *  # noqa: F401,F403
from .ops.random import fold_in, split

# the spellings of TensorFlow's random-number guide (older names of split and fold_in)
experimental = types.SimpleNamespace(stateless_split=split, stateless_fold_in=fold_in)
