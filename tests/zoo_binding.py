"""The model zoo (bench/zoo_models.py) bound to tapeflow for tests, on tapeflow's NumPy
formulations with numba switched off (compiling the zoo's kernels takes minutes from an
empty cache; the kernels have their own tests)."""
from __future__ import annotations

import contextlib
import os
import sys

import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow.function import concrete

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import zoo_models  # noqa: E402


@contextlib.contextmanager
def bound_zoo():
    """The zoo's `tf` is tapeflow inside the block, with no kernel compiles."""
    zoo_models.bind(tf)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jit, "available", lambda: False)
        patch.setattr(concrete, "fuse_available", lambda: False, raising=False)
        yield zoo_models
    zoo_models.bind(None)
