"""The op table's row type. Each `rows_<family>.py` defines `ROWS`, a list of Row; the
generated tests in test_op_table.py expand every row into value-vs-reference, shape-rule,
VJP, JVP, second-order and batched-JVP tests (see ARCHITECTURE.md rule 15).

Edge cases are generated from the rows, so a new op inherits them. Each is the row with its
sampler wrapped to reshape the sampled arrays (the values stay the row's, so its domain and
its reference still hold), named "<row>/<variant>":

    0d        every array input 0-d (`at_scalar`); "0d_arg<k>": input k alone 0-d
    size1     every dimension of every array input 1 (`at_size1`); "size1_arg<k>": input k
              alone shrunk, broadcasting against the others at the same rank
    empty<n>  every dimension of size n set to 0 (`at_empty`), one size at a time: samplers
              give independent dims distinct sizes, so dims that must agree (matmul's inner
              dims, a square matrix) empty together while the others keep their sizes
    rank40    leading 1s on the array inputs of the largest rank, up to rank 40 (`at_rank`;
              past NumPy's 32-dim limit of sorting and broadcasting helpers, below its 64
              for what gradients add); it is also checked at NumPy's maximum rank

Which rows get which cases (the fields `scalar`, `size1`, `empty`, `rank`; None picks):
- 0-d: elementwise rows (every kernel's shape rule maps inputs of one shape to outputs of
  that shape), with the per-input cases; see `scalar` for the other values.
- size-1, size-0, high rank: every row whose NumPy reference accepts the case's inputs
  (run at collection on every draw the case makes: an op must then accept them too and
  agree); rows without a reference: elementwise rows only. "size1_arg<k>" cases:
  elementwise rows, for the inputs `scalar` lets broadcast alone. True forces a case,
  `empty` may name the sizes to empty, False leaves a case out: say why in `note`
  (typically the reference does what TensorFlow rejects, such as np.pad reflecting a
  size-1 dimension, or reads fixed shapes).
The rows and their 0-d cases run every test; the other cases run in test_edge_cases, one
test per row (values in every dtype, shape rules, and first-order VJP and JVP; inputs
without elements get shape-only derivative checks; at maximum rank values and VJP).
"""
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
    size1:    the size-1 cases (`at_size1`). None: when the reference accepts every input
              shrunk (no reference: elementwise rows), plus for elementwise rows one case
              per input shrunk alone. True: every input shrunk (no per-input cases).
              False: none.
    empty:    the size-0 cases (`at_empty`), one per dimension size: None when the
              reference accepts them (like `size1`), True all, a tuple: those sizes only
              (forced), False: none.
    rank:     the high-rank case (`at_rank`): None automatic (like `size1`), True, False.
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
    size1: bool | None = None
    empty: bool | tuple | None = None
    rank: bool | None = None
    note: str = ""


def uniform(*shapes, low=-2.0, high=2.0):
    """A sampler of arrays of the given shapes, uniform in [low, high)."""
    def sample(rng, dtype):
        return [rng.uniform(low, high, s).astype(dtype) for s in shapes]
    return sample


def positive(*shapes, low=0.5, high=2.0):
    return uniform(*shapes, low=low, high=high)


def _position(args, rng):
    """One random position of the array inputs' broadcast shape, and a function giving an
    input's index there (0 where it broadcasts). All inputs are read at one position, so
    inputs a sampler draws jointly (x = q * y with q off integers, for floordiv) stay
    consistent; inputs that do not broadcast together get independent positions."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    try:
        full = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:  # not broadcastable together: independent positions
        return lambda a: tuple(int(rng.integers(n)) if n else 0 for n in a.shape)
    pos = tuple(int(rng.integers(n)) if n else 0 for n in full)
    return lambda a: tuple(0 if n == 1 else p for n, p in zip(a.shape, pos[len(pos) - a.ndim:]))


def _reshaped(sample, change, only=None):
    """`sample` with `change(array, index_of)` applied to its array inputs (or input `only`)."""
    def draw(rng, dtype):
        args = list(sample(rng, dtype))
        index_of = _position(args, rng)
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray) and (only is None or k == only):
                args[k] = np.array(change(a, index_of), order="C")  # a copy, C order
        return args
    return draw


def at_scalar(sample, only=None):
    """`sample` with its array inputs replaced by 0-d arrays holding one of their elements
    (all from one position of the inputs' broadcast shape); `only`: the index of the one
    input to make 0-d (the others keep their shapes)."""
    return _reshaped(sample, lambda a, index_of: np.array(a[index_of(a)], dtype=a.dtype), only)


def at_size1(sample, only=None):
    """`sample` with every dimension of its array inputs shrunk to 1, keeping the elements
    at one position of their broadcast shape (the rank stays); `only`: as in at_scalar."""
    return _reshaped(sample, lambda a, index_of: a[tuple(slice(p, p + 1)
                                                         for p in index_of(a))], only)


def at_empty(sample, size):
    """`sample` with every dimension of size `size` of its array inputs set to 0."""
    return _reshaped(sample, lambda a, _: a[tuple(slice(0, 0) if n == size else slice(None)
                                                  for n in a.shape)])


def at_rank(sample, rank):
    """`sample` with its array inputs of the largest rank given leading 1s up to `rank`.

    Inputs of lower rank stay as they are: they broadcast against the new dimensions as
    they did before, and index arrays (whose rank adds to the result's) keep results
    within NumPy's maximum rank (np.take crashes the process on results past 64 dims).
    """
    def draw(rng, dtype):
        args = list(sample(rng, dtype))
        top = max((a.ndim for a in args if isinstance(a, np.ndarray)), default=0)
        return [a.reshape((1,) * (rank - top) + a.shape)
                if isinstance(a, np.ndarray) and a.ndim == top else a for a in args]
    return draw
