"""The op table's row type. Each `rows_<family>.py` defines `ROWS`, a list of Row; the
generated tests in test_op_table.py expand every row into value-vs-reference, shape-rule,
VJP, JVP, second-order and batched-JVP tests (see ARCHITECTURE.md rule 15), and rows whose
op accepts 0-d inputs into the same tests at shape () (see `Row.scalar`, `at_scalar`)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

FLOATS = ("float32", "float64")


@dataclasses.dataclass
class Row:
    """One op case.

    name:     test id (unique), e.g. "add/broadcast".
    fn:       the tapeflow call, taking the sampled arguments as tensors (`**kwargs` added).
    ref:      an independent NumPy/SciPy reference taking NumPy arrays, or None to skip the
              value test (only when no reference can be written; say why in `note`).
    sample:   `sample(rng, dtype) -> list` of NumPy arrays (or Python values) in the domain.
    kernels:  kernel names this row exercises (the coverage test needs every registered
              kernel to appear in some row).
    dtypes:   dtype names for the value test.
    grad:     check derivatives (VJP and JVP against central differences, float64).
    order:    highest derivative order checked (2 for smooth ops).
    diff:     indices of the arguments to differentiate (None: every floating argument).
    kwargs:   static keyword arguments passed to fn and ref.
    rtol/atol: value-test tolerances for float32 (float64 uses 1e-10 relative).
    grad_tol: tolerance of derivative checks.
    out_dtype: expected output dtype name when it differs from the first input's.
    scalar:   whether the row also runs with 0-d inputs (drawn by `at_scalar(sample)`).
              None: when every kernel in `kernels` is elementwise (its shape rule maps
              inputs of one shape to outputs of that shape); these rows also get
              scalar-vs-tensor cases, one per shaped array input made 0-d alone.
              True: all inputs 0-d only, for ops that take them but are not elementwise
              broadcasting ops (reductions over all axes, casts, composites with empty
              `kernels`, inputs that must match in shape). A tuple of argument indices:
              True plus scalar-vs-tensor cases for those arguments only. False: never.
    """

    name: str
    fn: Callable
    ref: Callable | None
    sample: Callable[[np.random.Generator, str], Sequence[Any]]
    kernels: tuple = ()
    dtypes: tuple = FLOATS
    grad: bool = True
    order: int = 2
    diff: tuple | None = None
    kwargs: dict = dataclasses.field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-6
    grad_tol: float = 1e-5
    out_dtype: str | None = None
    batched_jvp: bool = True
    scalar: bool | tuple | None = None
    note: str = ""


def uniform(*shapes, low=-2.0, high=2.0):
    """A sampler of arrays of the given shapes, uniform in [low, high)."""
    def sample(rng, dtype):
        return [rng.uniform(low, high, s).astype(dtype) for s in shapes]
    return sample


def positive(*shapes, low=0.5, high=2.0):
    return uniform(*shapes, low=low, high=high)


def at_scalar(sample, only=None):
    """`sample` with its array inputs replaced by 0-d arrays holding one of their elements.

    All elements come from one random position of the inputs' broadcast shape, so inputs a
    sampler draws jointly (x = q * y with q off integers, for floordiv) stay consistent.
    `only`: the index of the one input to make 0-d (the others keep their shapes).
    """
    def draw(rng, dtype):
        args = list(sample(rng, dtype))
        arrays = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]
        try:
            full = np.broadcast_shapes(*(args[k].shape for k in arrays))
        except ValueError:  # not broadcastable together: independent positions
            full = None
        pos = tuple(int(rng.integers(n)) for n in full) if full else ()
        for k in arrays if only is None else (only,):
            a = args[k]
            if full is None:
                at = tuple(int(rng.integers(n)) for n in a.shape)
            else:  # the position's trailing dims; 0 where `a` broadcasts
                at = tuple(0 if n == 1 else p for n, p in zip(a.shape, pos[len(pos) - a.ndim:]))
            args[k] = np.array(a[at], dtype=a.dtype)
        return args
    return draw
