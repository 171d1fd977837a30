"""Iterators over datasets: eagerly, inside traced functions, and in checkpoints.

Eagerly an `Iterator` pulls the next element from the pipeline's Python iterators.

Inside a traced function, iteration is three stateful ops, as TensorFlow's iterator
resource is: `AnonymousIterator` makes an iterator when the graph runs (a fresh one per
call for a dataset, or the given eager iterator) and returns an int64 handle to it;
`IteratorGetNextAsOptional` returns (has_value, *components) for that handle; and
`DeleteIterator` drops it after the loop. Autograph turns `for x in dataset:` into a
`while_loop` whose body asks for the next element and runs the loop body under a `cond`
on has_value (see `GraphIteration`), so the graph is traced once and runs for any
number of elements. `next(iterator)` while tracing is an `IteratorGetNext` op that
raises OutOfRangeError at the end, as in TensorFlow.

Checkpoints save an iterator's position (elements produced) and the iteration numbers
its shuffles drew; restoring rebuilds the pipeline with those seeds and skips that many
elements, so a resumed run sees exactly the elements the interrupted one had not yet seen
(for pipelines whose order depends only on their seeds). The skip replays the input,
which costs as much as reading it.
"""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from .._core.context import ctx
from .._core.dtypes import bool as _bool, int64
from .._core.errors import InvalidArgumentError, OutOfRangeError
from .._core.dispatch import run_kernel
from .._core.tensor import Tensor
from ..ops._define import defop, eager_from_native
from . import structure
from .options import IterationContext


class Iterator:
    """An iterator over a dataset's elements (`iter(dataset)`).

    `next(it)` raises StopIteration at the end, `it.get_next()` OutOfRangeError;
    `tf.train.Checkpoint(it=it)` saves and restores its position.

    Example:
        >>> it = iter(tf.data.Dataset.range(2))
        >>> next(it).numpy(), it.get_next().numpy()
        (0, 1)
    """

    def __init__(self, dataset, iterations: list | None = None):
        self._dataset = dataset
        self._context = IterationContext(dataset, iterations)
        self._source = dataset._elements(self._context)
        self._position = 0
        self._lock = threading.Lock()
        self._handle = None  # its handle in graphs that use it (see _make_iterator)

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def __iter__(self) -> "Iterator":
        return self

    def _next_flat(self) -> list | None:
        with self._lock:
            flat = next(self._source, None)
            if flat is not None:
                self._position += 1
            return flat

    def __next__(self):
        if ctx.graph is not None:  # tracing: an op that reads the next element at run time
            return get_next_op(self)
        flat = self._next_flat()
        if flat is None:
            raise StopIteration
        return structure.pack(self.element_spec, structure.to_tensors(flat))

    def get_next(self, name=None):
        """The next element; OutOfRangeError at the end.

        Example:
            >>> iter(tf.data.Dataset.range(3)).get_next().numpy()
            0
        """
        if ctx.graph is not None:
            return get_next_op(self)
        flat = self._next_flat()
        if flat is None:
            raise OutOfRangeError("Iterator.get_next: End of sequence")
        return structure.pack(self.element_spec, structure.to_tensors(flat))

    def get_next_as_optional(self) -> "Optional":
        """The next element wrapped in an Optional that is empty at the end.

        Example:
            >>> it = iter(tf.data.Dataset.range(0))
            >>> it.get_next_as_optional().has_value().numpy()
            False
        """
        flat = self._next_flat()
        value = None if flat is None else structure.pack(self.element_spec,
                                                         structure.to_tensors(flat))
        return Optional(value, self.element_spec)

    def __repr__(self) -> str:
        return f"<Iterator element_spec={self.element_spec}>"

    # ------------------------------------------------------------ the trackable protocol

    def _trackable_children(self) -> dict:
        return {}

    def _serialize_to_tensors(self) -> dict:
        return {"position": np.int64(self._position),
                "shuffle_iterations": np.asarray(self._context.saved_iterations(),
                                                 np.int64)}

    def _restore_from_tensors(self, values: dict) -> None:
        position = int(values["position"])
        iterations = [int(i) for i in np.asarray(values["shuffle_iterations"])]
        with self._lock:
            context = IterationContext(self._dataset, iterations)
            source = self._dataset._elements(context)
            skipped = sum(1 for _ in itertools.islice(source, position))
            if skipped != position:
                raise InvalidArgumentError(
                    f"Iterator restore: the checkpoint's position is element {position}, "
                    f"but this dataset has only {skipped} elements")
            self._context, self._source, self._position = context, source, position

    # ------------------------------------------------------------ graph iteration

    def _graph_iteration(self) -> "GraphIteration":
        return GraphIteration(self)


class Optional:
    """A value that may be absent (what `get_next_as_optional` returns).

    Example:
        >>> opt = iter(tf.data.Dataset.range(1)).get_next_as_optional()
        >>> opt.has_value().numpy(), opt.get_value().numpy()
        (True, 0)
    """

    def __init__(self, value, element_spec):
        self._value, self.element_spec = value, element_spec

    def has_value(self) -> Tensor:
        return structure.to_tensors([np.array(self._value is not None)])[0]

    def get_value(self):
        if self._value is None:
            raise InvalidArgumentError("Optional.get_value: the optional has no value")
        return self._value


# ---------------------------------------------------------------------- graph ops

# Iterators made by a graph (one per run of a `for` over a dataset), dropped by
# DeleteIterator after the loop; and eager iterators a graph uses, by the handle each gets
# once, held weakly (their owner is the user's code).
_HANDLES: dict = {}
_EAGER_HANDLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_NEXT_HANDLE = itertools.count(1)


def _spec_outputs(specs) -> list:
    return [(tuple(s.shape), s.dtype) for s in specs]


def _make_iterator(inputs, attrs, backend):
    source = attrs["source"]
    if isinstance(source, Iterator):
        if source._handle is None:
            source._handle = next(_NEXT_HANDLE)
            _EAGER_HANDLES[source._handle] = source
        return np.array(source._handle, np.int64)
    handle = next(_NEXT_HANDLE)
    _HANDLES[handle] = Iterator(source)
    return np.array(handle, np.int64)


def _lookup(handle) -> Iterator:
    it = _HANDLES.get(int(handle)) or _EAGER_HANDLES.get(int(handle))
    if it is None:
        raise InvalidArgumentError(f"iterator handle {int(handle)} does not exist (the "
                                   "loop that made it has ended)")
    return it


def _get_next_optional(inputs, attrs, backend):
    flat = _lookup(inputs["handle"])._next_flat()
    if flat is None:  # stand-ins of the right dtypes, never read: the loop stops
        return [np.array(False)] + [np.zeros([d or 0 for d in s.shape],
                                             s.dtype.as_numpy_dtype)
                                    for s in attrs["specs"]]
    return [np.array(True)] + [np.array(a) for a in flat]


def _get_next(inputs, attrs, backend):
    flat = _lookup(inputs["handle"])._next_flat()
    if flat is None:
        error = OutOfRangeError("IteratorGetNext: End of sequence")
        error.checked = True  # the graph executor passes it on as is, as TensorFlow does
        raise error
    out = [np.array(a) for a in flat]
    return out if len(out) != 1 else out[0]


def _delete_iterator(inputs, attrs, backend):
    _HANDLES.pop(int(inputs["handle"]), None)
    return np.array(True)





defop("AnonymousIterator", [], shape=lambda s, d, a: [((), int64)],
      impl=eager_from_native(_make_iterator), native=_make_iterator, differentiable=False,
      stateful=True)
defop("IteratorGetNextAsOptional", ["handle"],
      num_outputs=lambda s, d, a: 1 + len(a["specs"]),
      shape=lambda s, d, a: [((), _bool)] + _spec_outputs(a["specs"]),
      impl=eager_from_native(_get_next_optional), native=_get_next_optional, differentiable=False,
      stateful=True)
defop("IteratorGetNext", ["handle"], num_outputs=lambda s, d, a: len(a["specs"]),
      shape=lambda s, d, a: _spec_outputs(a["specs"]), impl=eager_from_native(_get_next),
      native=_get_next, differentiable=False, stateful=True)
defop("DeleteIterator", ["handle"], shape=lambda s, d, a: [((), _bool)],
      impl=eager_from_native(_delete_iterator), native=_delete_iterator, differentiable=False,
      stateful=True)


def get_next_op(iterator: Iterator):
    """`next(iterator)` while tracing: the next element when the graph runs."""
    specs = tuple(structure.flat_specs(iterator.element_spec))
    handle = run_kernel("AnonymousIterator", {}, {"source": iterator})
    out = run_kernel("IteratorGetNext", {"handle": handle}, {"specs": specs})
    out = out if isinstance(out, list) else [out]
    return structure.pack(iterator.element_spec, out)


class GraphIteration:
    """One `for x in dataset:` loop inside a traced function: its iterator handle, made
    when the graph runs (the protocol autograph's for loop uses for iterables that have
    `_graph_iteration()`)."""

    def __init__(self, source):
        self.element_spec = source.element_spec
        self._specs = tuple(structure.flat_specs(self.element_spec))
        self._handle = run_kernel("AnonymousIterator", {}, {"source": source})

    def get_next(self):
        """(has_value, element): a bool scalar tensor and the element's tensors."""
        out = run_kernel("IteratorGetNextAsOptional", {"handle": self._handle},
                         {"specs": self._specs})
        return out[0], structure.pack(self.element_spec, list(out[1:]))

    def close(self) -> None:
        run_kernel("DeleteIterator", {"handle": self._handle}, {})
