"""`Dataset`: TensorFlow's input pipelines, as a graph of lazily iterated Python objects.

Each dataset knows its inputs, its element_spec and its cardinality, and makes a fresh
Python iterator over its elements (flat lists of NumPy arrays, see structure.py) for
every iteration; nothing is computed before a loop asks for it, and every buffer is the
size asked for (shuffle, prefetch, parallel map), so memory does not grow with the
length of the data. `prefetch` and a parallel `map` run their input on background
threads (NumPy kernels release the GIL). Randomness (`shuffle`) takes its seeds when the
dataset is created, by TensorFlow's rules (global seed and op seed), so the same
program gives the same order in every process.
"""
from __future__ import annotations

import collections
import concurrent.futures as futures
import itertools
import os
import queue
import threading
import time
from typing import Callable, Iterator as PyIterator

import numpy as np

from .._core import nest
from .._core.context import op_determinism
from .._core.convert import convert_to_tensor
from .._core.dtypes import int64, bool as _bool, as_dtype
from .._core.errors import InvalidArgumentError, UnimplementedError
from .._core.tensor import TensorShape, TensorSpec
from ..ops import random as random_ops
from . import composite, structure
from .functions import StructuredFunction
from .iterator import GraphIteration, Iterator
from .options import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, IterationContext,
                      Options)

_AUTOTUNE_PREFETCH = 2  # what AUTOTUNE means for a prefetch buffer: double buffering
_WORTH_A_THREAD = 0.5e-3  # seconds per element above which AUTOTUNE prefetches on a thread
_THREADS = os.cpu_count() or 1


def _int_arg(op: str, name: str, value, minimum: int | None = None) -> int:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            and not (isinstance(value, np.ndarray) and value.ndim == 0
                     and value.dtype.kind in "iu"):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r:.60}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{op}: {name} must be at least {minimum}, got {value}")
    return value


class Dataset:
    """A sequence of elements (tensors or tuples/dicts of them) read lazily, with
    TensorFlow's transformations.

    Example:
        >>> ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).map(lambda x: x * 2)
        >>> list(ds.as_numpy_iterator())
        [2, 4, 6]
    """

    def __init__(self, inputs: tuple, spec):
        self._inputs = tuple(inputs)
        self._spec = spec
        self._options = Options()

    # ------------------------------------------------------------------ inspection

    @property
    def element_spec(self):
        """The structure of TensorSpecs of one element."""
        return self._spec

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def cardinality(self):
        """The number of elements as an int64 scalar tensor, or INFINITE_CARDINALITY (-1)
        or UNKNOWN_CARDINALITY (-2).

        Example:
            >>> tf.data.Dataset.range(10).batch(3).cardinality().numpy()
            4
        """
        return convert_to_tensor(np.int64(self._cardinality()))

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True  # not len(): an infinite or unknown dataset is still a dataset

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self._spec}>"

    def options(self) -> Options:
        """The options of this pipeline (those set on it or on its inputs)."""
        merged = Options()
        for d in reversed(list(self._walk())):
            merged = merged.merge(d._options)
        return merged

    def with_options(self, options: Options) -> "Dataset":
        """This dataset with `options` set (they win over its inputs' options)."""
        if not isinstance(options, Options):
            raise TypeError(f"with_options: expected tf.data.Options, got {options!r:.60}")
        out = _OptionsDataset(self)
        out._options = options
        return out

    def _walk(self):
        """This dataset and its inputs, depth first (a fixed order)."""
        yield self
        for d in self._inputs:
            yield from d._walk()

    # ------------------------------------------------------------------ iteration

    def _elements(self, ctx: IterationContext) -> PyIterator[list]:
        raise NotImplementedError

    def _slice_arrays(self) -> list | None:
        """The arrays whose rows this dataset's elements are, when it only slices, reorders,
        selects or repeats them (then `_index_stream` gives the row of each element);
        None otherwise. `batch` uses it to gather a batch with one copy per component."""
        return None

    def _index_stream(self, ctx: IterationContext) -> PyIterator[int]:
        raise NotImplementedError

    def __iter__(self) -> Iterator:
        """A new iterator from the first element (each iteration starts afresh)."""
        return Iterator(self)

    def _graph_iteration(self) -> GraphIteration:
        """Autograph's protocol for `for x in dataset:` inside a traced function."""
        return GraphIteration(self)

    def as_numpy_iterator(self):
        """An iterator over the elements as NumPy values (arrays, scalars for 0-d).

        Example:
            >>> list(tf.data.Dataset.range(3).as_numpy_iterator())
            [0, 1, 2]
        """
        ctx = IterationContext(self)
        for flat in self._elements(ctx):
            yield structure.as_numpy(self._spec, flat)

    def get_single_element(self, name=None):
        """The only element; InvalidArgumentError if there are none or several.

        Example:
            >>> tf.data.Dataset.range(5).take(1).get_single_element().numpy()
            0
        """
        source = self._elements(IterationContext(self))
        first = next(source, None)
        if first is None:
            raise InvalidArgumentError("get_single_element: Dataset was empty.")
        if next(source, None) is not None:
            raise InvalidArgumentError("get_single_element: Dataset had more than one "
                                       "element.")
        return structure.pack(self._spec, structure.to_tensors(first))

    def reduce(self, initial_state, reduce_func: Callable):
        """Fold the elements into a state with `reduce_func(state, element)` (eagerly).

        Example:
            >>> tf.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x).numpy()
            10
        """
        value = structure.normalize(initial_state, "reduce")
        flat = nest.flatten(value) if nest.is_nested(value) else [value]
        state = structure.pack(value, structure.to_tensors(flat))
        for element in self:
            state = reduce_func(state, element)
        return state

    # ------------------------------------------------------------------ sources

    @staticmethod
    def from_tensor_slices(tensors, name=None) -> "Dataset":
        """The slices of `tensors` along their first dimension (all components must have
        the same size there).

        Example:
            >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2], [3.0, 4.0]))
            >>> [(int(a), float(b)) for a, b in ds]
            [(1, 3.0), (2, 4.0)]
        """
        if composite.has_composites(tensors):  # SparseTensor / RaggedTensor components
            return _CompositeSliceDataset(tensors)
        return _TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None) -> "Dataset":
        """One element: `tensors`.

        Example:
            >>> tf.data.Dataset.from_tensors([1, 2]).element_spec
            TensorSpec(shape=(2,), dtype=tf.int32, name=None)
        """
        if composite.has_composites(tensors):
            return _CompositeSliceDataset(tensors, whole=True)
        return _TensorDataset(tensors)

    @staticmethod
    def range(*args, output_type=int64, name=None) -> "Dataset":
        """`range(stop)`, `range(start, stop[, step])` as int64 scalars (output_type).

        Example:
            >>> list(tf.data.Dataset.range(5, 1, -2).as_numpy_iterator())
            [5, 3]
        """
        return _RangeDataset(*args, output_type=output_type)

    @staticmethod
    def from_generator(generator: Callable, output_types=None, output_shapes=None,
                       args=None, output_signature=None, name=None) -> "Dataset":
        """The elements that `generator()` (a callable returning an iterator) yields,
        converted to `output_signature` (a structure of TensorSpecs); it is called again
        for every iteration.

        Example:
            >>> ds = tf.data.Dataset.from_generator(
            ...     lambda: iter([[1.0], [2.0, 3.0]]),
            ...     output_signature=tf.TensorSpec([None], tf.float32))
            >>> [x.shape for x in ds]
            [TensorShape([1]), TensorShape([2])]
        """
        return _GeneratorDataset(generator, output_types, output_shapes, args,
                                 output_signature)

    @staticmethod
    def zip(*datasets, name=None) -> "Dataset":
        """Elements of several datasets side by side (a tuple or dict of datasets, or
        several datasets), as long as the shortest.

        Example:
            >>> ds = tf.data.Dataset.zip(tf.data.Dataset.range(3), tf.data.Dataset.range(5))
            >>> [(int(a), int(b)) for a, b in ds]
            [(0, 0), (1, 1), (2, 2)]
        """
        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            datasets = datasets[0]
        return _ZipDataset(datasets)

    def concatenate(self, dataset: "Dataset", name=None) -> "Dataset":
        """This dataset's elements, then `dataset`'s (same structure and dtypes).

        Example:
            >>> a = tf.data.Dataset.range(2)
            >>> list(a.concatenate(tf.data.Dataset.range(5, 6)).as_numpy_iterator())
            [0, 1, 5]
        """
        return _ConcatenateDataset(self, dataset)

    # ------------------------------------------------------------------ transformations

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """`transformation_func(self)`, which must return a Dataset (to chain reusable
        pipeline pieces).

        Example:
            >>> evens = lambda ds: ds.filter(lambda x: x % 2 == 0)
            >>> list(tf.data.Dataset.range(5).apply(evens).as_numpy_iterator())
            [0, 2, 4]
        """
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"apply: transformation_func must return a Dataset, got "
                            f"{type(out).__name__}")
        return out

    def map(self, map_func: Callable, num_parallel_calls=None, deterministic=None,
            name=None) -> "Dataset":
        """`map_func` applied to every element (a tuple element is unpacked into
        arguments); traced once into a graph, run on `num_parallel_calls` threads
        (AUTOTUNE: one per core) when given.

        Example:
            >>> ds = tf.data.Dataset.range(3).map(lambda x: x * 10)
            >>> list(ds.as_numpy_iterator())
            [0, 10, 20]
        """
        if num_parallel_calls is None:
            return _MapDataset(self, map_func)
        return _ParallelMapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate: Callable, name=None) -> "Dataset":
        """The elements for which `predicate` returns True (a bool scalar).

        Example:
            >>> list(tf.data.Dataset.range(6).filter(lambda x: x % 2 == 0)
            ...      .as_numpy_iterator())
            [0, 2, 4]
        """
        return _FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder: bool = False, num_parallel_calls=None,
              deterministic=None, name=None) -> "Dataset":
        """Consecutive elements stacked into batches of `batch_size` (the last one
        smaller unless `drop_remainder`); elements must have equal shapes.

        Example:
            >>> [b.numpy().tolist() for b in tf.data.Dataset.range(5).batch(2)]
            [[0, 1], [2, 3], [4]]
        """
        return _BatchDataset(self, batch_size, drop_remainder)

    def ragged_batch(self, batch_size, drop_remainder: bool = False,
                     row_splits_dtype=int64, name=None) -> "Dataset":
        """As `batch`, but elements of different shapes batch into RaggedTensors.

        Example:
            >>> ds = tf.data.Dataset.range(3).map(lambda i: tf.range(i))
            >>> next(iter(ds.ragged_batch(3))).to_list()
            [[], [0], [0, 1]]
        """
        return _BatchDataset(self, batch_size, drop_remainder, ragged=True)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder: bool = False, name=None) -> "Dataset":
        """Batches whose elements are padded (with `padding_values`, default 0) to
        `padded_shapes` (default: the largest in each batch where the shape varies).

        Example:
            >>> ds = tf.data.Dataset.from_generator(
            ...     lambda: ([n] * n for n in (1, 2, 3)),
            ...     output_signature=tf.TensorSpec([None], tf.int64))
            >>> [b.tolist() for b in ds.padded_batch(2).as_numpy_iterator()]
            [[[1, 0], [2, 2]], [[3, 3, 3]]]
        """
        return _PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                   drop_remainder)

    def unbatch(self, name=None) -> "Dataset":
        """The rows of every element (the inverse of `batch`).

        Example:
            >>> list(tf.data.Dataset.from_tensors([1, 2]).unbatch().as_numpy_iterator())
            [1, 2]
        """
        return _UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True,
                name=None) -> "Dataset":
        """Elements in random order, drawn from a buffer of `buffer_size` elements that
        is refilled from the input (a buffer as large as the dataset shuffles it fully).
        A new order for every iteration unless `reshuffle_each_iteration=False`.

        Example:
            >>> ds = tf.data.Dataset.range(5).shuffle(5, seed=1)
            >>> sorted(ds.as_numpy_iterator())
            [0, 1, 2, 3, 4]
        """
        return _ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None) -> "Dataset":
        """The dataset `count` times (None or -1: forever).

        Example:
            >>> list(tf.data.Dataset.range(2).repeat(2).as_numpy_iterator())
            [0, 1, 0, 1]
        """
        return _RepeatDataset(self, count)

    def take(self, count, name=None) -> "Dataset":
        """The first `count` elements (-1: all).

        Example:
            >>> list(tf.data.Dataset.range(5).take(2).as_numpy_iterator())
            [0, 1]
        """
        return _TakeDataset(self, count)

    def skip(self, count, name=None) -> "Dataset":
        """All but the first `count` elements (-1: none).

        Example:
            >>> list(tf.data.Dataset.range(5).skip(3).as_numpy_iterator())
            [3, 4]
        """
        return _SkipDataset(self, count)

    def prefetch(self, buffer_size, name=None) -> "Dataset":
        """The same elements, produced ahead on a background thread into a buffer of
        `buffer_size` (AUTOTUNE: 2) while the consumer works.

        Example:
            >>> list(tf.data.Dataset.range(3).prefetch(tf.data.AUTOTUNE).as_numpy_iterator())
            [0, 1, 2]
        """
        return _PrefetchDataset(self, buffer_size)

    def cache(self, filename: str = "", name=None) -> "Dataset":
        """The same elements, kept in memory by the first complete iteration and replayed
        by the later ones.

        Example:
            >>> ds = tf.data.Dataset.range(3).map(lambda x: x + 1).cache()
            >>> list(ds.as_numpy_iterator()) == list(ds.as_numpy_iterator())
            True
        """
        if filename:
            raise UnimplementedError("cache: only the in-memory cache (filename='') is "
                                     f"implemented, got filename={filename!r}")
        return _CacheDataset(self)

    def enumerate(self, start=0, name=None) -> "Dataset":
        """(index, element) pairs, the index an int64 counting from `start`.

        Example:
            >>> [(int(i), int(x)) for i, x in tf.data.Dataset.range(5, 7).enumerate()]
            [(0, 5), (1, 6)]
        """
        return _EnumerateDataset(self, start)

    def shard(self, num_shards, index, name=None) -> "Dataset":
        """Every `num_shards`-th element, starting at `index` (one worker's part).

        Example:
            >>> list(tf.data.Dataset.range(7).shard(3, 1).as_numpy_iterator())
            [1, 4]
        """
        return _ShardDataset(self, num_shards, index)

    def flat_map(self, map_func: Callable, name=None) -> "Dataset":
        """The elements of the datasets `map_func` returns for each element, in order.

        Example:
            >>> ds = tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.range(x))
            >>> list(ds.as_numpy_iterator())
            [0, 0, 1]
        """
        return _InterleaveDataset(self, map_func, 1, 1, "flat_map", parallel=False)

    def interleave(self, map_func: Callable, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None) -> "Dataset":
        """Elements of the datasets `map_func` returns, `block_length` at a time from
        `cycle_length` of them open at once (TensorFlow's order); with
        `num_parallel_calls`, the open datasets are read ahead on threads.

        Example:
            >>> ds = tf.data.Dataset.range(1, 3).interleave(
            ...     lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2)
            >>> list(ds.as_numpy_iterator())
            [1, 2, 1, 2]
        """
        cycle = _THREADS if cycle_length in (None, AUTOTUNE) else _int_arg(
            "interleave", "cycle_length", cycle_length, 1)
        block = 1 if block_length is None else _int_arg("interleave", "block_length",
                                                        block_length, 1)
        return _InterleaveDataset(self, map_func, cycle, block, "interleave",
                                  parallel=num_parallel_calls is not None)


# ---------------------------------------------------------------------- sources


class _TensorSliceDataset(Dataset):
    def __init__(self, tensors):
        value = structure.normalize(tensors, "from_tensor_slices")
        flat = nest.flatten(value) if nest.is_nested(value) else [value]
        if not flat:
            raise ValueError("from_tensor_slices: the structure has no tensors")
        for a in flat:
            if a.ndim == 0:
                raise ValueError(f"from_tensor_slices: cannot slice a scalar (rank 0) "
                                 f"component {a!r:.60}: every component needs a first "
                                 "dimension to slice along")
        sizes = [a.shape[0] for a in flat]
        if len(set(sizes)) > 1:
            shapes = ", ".join(str(list(a.shape)) for a in flat)
            raise ValueError(f"from_tensor_slices: all components must have the same size "
                             f"in their first dimension, got shapes {shapes}: Dimensions "
                             f"{sizes[0]} and {next(s for s in sizes if s != sizes[0])} "
                             "are not compatible")
        self._arrays, self._n = flat, sizes[0]
        spec = nest.map_structure(lambda a: TensorSpec(a.shape[1:], as_dtype(a.dtype)),
                                  value) if nest.is_nested(value) else \
            TensorSpec(value.shape[1:], as_dtype(value.dtype))
        super().__init__((), spec)

    def _cardinality(self) -> int:
        return self._n

    def _elements(self, ctx):
        arrays = self._arrays
        for i in range(self._n):
            yield [a[i] for a in arrays]  # views, no copies

    def _slice_arrays(self) -> list:
        return self._arrays

    def _index_stream(self, ctx):
        return iter(range(self._n))

    def _blocks(self, size: int, drop_remainder: bool):
        """Consecutive slices as whole batches (views of the arrays): batch's fast path."""
        stop = self._n - self._n % size if drop_remainder else self._n
        for i in range(0, stop, size):
            yield [a[i:i + size] for a in self._arrays]


class _CompositeSliceDataset(Dataset):
    """from_tensor_slices of a structure holding SparseTensors/RaggedTensors: each
    element is the flat components of every leaf's row (see composite.py); `whole`:
    from_tensors, one element of every leaf's components."""

    def __init__(self, tensors, whole: bool = False):
        self._whole = whole
        providers: list = []
        spec = self._walk_value(tensors, providers)
        sizes = {len(rows) for rows in providers}
        if len(sizes) > 1:
            raise ValueError(f"from_tensor_slices: all components must have the same size "
                             f"in their first dimension, got {sorted(sizes)}")
        self._providers, self._n = providers, sizes.pop()
        super().__init__((), spec)

    def _walk_value(self, value, providers: list):
        if isinstance(value, dict):
            keys = sorted(value) if all(isinstance(k, str) for k in value) else list(value)
            specs = {k: self._walk_value(value[k], providers) for k in keys}
            return {k: specs[k] for k in value} if type(value) is dict else \
                type(value)((k, specs[k]) for k in value)
        if isinstance(value, tuple):
            items = [self._walk_value(v, providers) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        if composite.has_composites(value):
            if self._whole:
                providers.append([[np.asarray(t) for t in nest.flatten(value)]])
                return value._type_spec
            providers.append(composite.rows_of(value))
            return composite.slice_spec(value)
        array = structure.to_array(value, "from_tensor_slices")
        if self._whole:
            providers.append([[array]])
            return TensorSpec(array.shape, as_dtype(array.dtype))
        if array.ndim == 0:
            raise ValueError("from_tensor_slices: cannot slice a scalar (rank 0) component")
        providers.append([[row] for row in array])
        return TensorSpec(array.shape[1:], as_dtype(array.dtype))

    def _cardinality(self) -> int:
        return self._n

    def _elements(self, ctx):
        for i in range(self._n):
            yield [a for rows in self._providers for a in rows[i]]


class _TensorDataset(Dataset):
    def __init__(self, tensors):
        value = structure.normalize(tensors, "from_tensors")
        self._flat = nest.flatten(value) if nest.is_nested(value) else [value]
        super().__init__((), structure.spec_of(value))

    def _cardinality(self) -> int:
        return 1

    def _elements(self, ctx):
        yield list(self._flat)


class _RangeDataset(Dataset):
    def __init__(self, *args, output_type=int64):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range: expected 1 to 3 arguments (start, stop, step), got "
                            f"{len(args)}")
        values = [_int_arg("range", n, v) for n, v in zip(("start", "stop", "step")
                                                           if len(args) > 1 else ("stop",),
                                                           args)]
        start, stop, step = (0, values[0], 1) if len(values) == 1 else (
            values + [1] if len(values) == 2 else values)
        if step == 0:
            raise InvalidArgumentError("range: step must not be 0")
        self._range = range(start, stop, step)
        self._dtype = as_dtype(output_type)
        super().__init__((), TensorSpec([], self._dtype))

    def _cardinality(self) -> int:
        return len(self._range)

    def _elements(self, ctx):
        np_type = self._dtype.as_numpy_dtype
        for i in self._range:
            yield [np.array(i, np_type)]


def _signature_from(op, output_types, output_shapes, output_signature):
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError(f"{op}: give output_signature or output_types/output_shapes, "
                            "not both")
        for s in (nest.flatten(output_signature) if nest.is_nested(output_signature)
                  else [output_signature]):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"{op}: output_signature must be a structure of "
                                f"tf.TensorSpec, got {s!r:.60}")
        return output_signature
    if output_types is None:
        raise TypeError(f"{op}: output_signature is required")
    if output_shapes is None:
        raise TypeError(f"{op}: output_shapes is required with output_types (tapeflow "
                        "has no tensors of unknown rank)")
    return nest.map_structure(lambda t, s: TensorSpec(s, t), output_types, output_shapes) \
        if nest.is_nested(output_types) else TensorSpec(output_shapes, output_types)


class _GeneratorDataset(Dataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError(f"from_generator: generator must be a callable returning an "
                            f"iterator, got {generator!r:.60}")
        self._generator = generator
        self._args = tuple(np.asarray(structure.to_array(a, "from_generator"))
                           for a in (args or ()))
        spec = _signature_from("from_generator", output_types, output_shapes,
                               output_signature)
        super().__init__((), spec)

    def _elements(self, ctx):
        specs = structure.flat_specs(self._spec)
        for value in self._generator(*self._args):
            yield self._convert(value, specs)

    def _convert(self, value, specs) -> list:
        try:
            leaves = _flatten_up_to(self._spec, value)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"from_generator: `generator` yielded an element that did not match the "
                f"expected structure. The expected structure was {self._spec}, but the "
                f"yielded element was {value!r:.100}") from None
        out = []
        for k, (v, s) in enumerate(zip(leaves, specs)):
            if hasattr(v, "numpy"):
                v = v.numpy()
            try:
                a = np.asarray(v, dtype=s.dtype.as_numpy_dtype)
            except (TypeError, ValueError) as e:
                raise InvalidArgumentError(
                    f"from_generator: `generator` yielded {v!r:.60} for component {k}, "
                    f"which cannot be converted to the expected dtype {s.dtype.name} "
                    f"({e})") from None
            if not TensorShape(s.shape).is_compatible_with(a.shape):
                raise InvalidArgumentError(
                    f"from_generator: `generator` yielded an element of shape "
                    f"{tuple(a.shape)} where an element of shape {tuple(s.shape)} was "
                    f"expected (component {k}, dtype {s.dtype.name})")
            out.append(a)
        return out


def _up_to(op: str, name: str, spec, value) -> list:
    """`value` (shapes or values matching the element structure) flattened like `spec`;
    a single value stands for every component."""
    if not nest.is_nested(spec):
        return [value]
    try:
        return _flatten_up_to(spec, value)
    except TypeError:
        raise ValueError(f"{op}: {name} {value!r:.80} does not match the element structure "
                         f"{spec}") from None


def _flatten_up_to(spec, value) -> list:
    if isinstance(spec, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(spec):
            raise TypeError("structure")
        return [x for k in sorted(spec) for x in _flatten_up_to(spec[k], value[k])]
    if isinstance(spec, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec):
            raise TypeError("structure")
        return [x for s, v in zip(spec, value) for x in _flatten_up_to(s, v)]
    return [value]


class _ZipDataset(Dataset):
    def __init__(self, datasets):
        flat = nest.flatten(datasets) if nest.is_nested(datasets) else [datasets]
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"zip: expected datasets (or a tuple/dict of them), got "
                                f"{d!r:.60}")
        self._structure = datasets
        spec = nest.map_structure(lambda d: d.element_spec, datasets) \
            if nest.is_nested(datasets) else datasets.element_spec
        super().__init__(tuple(flat), spec)

    def _cardinality(self) -> int:
        cards = [d._cardinality() for d in self._inputs]
        known = [c for c in cards if c >= 0]
        if known:
            return min(known)
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in cards else INFINITE_CARDINALITY

    def _elements(self, ctx):
        sources = [d._elements(ctx) for d in self._inputs]
        for parts in zip(*sources):
            yield [a for part in parts for a in part]


class _ConcatenateDataset(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        if not isinstance(second, Dataset):
            raise TypeError(f"concatenate: expected a Dataset, got {second!r:.60}")
        a, b = first.element_spec, second.element_spec
        specs_a, specs_b = structure.flat_specs(a), structure.flat_specs(b)
        merged = [structure.most_specific_compatible(x, y) for x, y in zip(specs_a, specs_b)]
        if (not structure.same_structure(a, b) or len(specs_a) != len(specs_b)
                or any(m is None for m in merged)):
            raise TypeError(f"concatenate: incompatible dataset elements:\n  {a} vs.\n  {b}")
        super().__init__((first, second), structure.pack(a, merged))

    def _cardinality(self) -> int:
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in (a, b) else a + b

    def _elements(self, ctx):
        for d in self._inputs:
            yield from d._elements(ctx)


# ---------------------------------------------------------------------- transformations


class _UnaryDataset(Dataset):
    def __init__(self, source: Dataset, spec=None):
        if not isinstance(source, Dataset):
            raise TypeError(f"expected a Dataset, got {source!r:.60}")
        super().__init__((source,), source.element_spec if spec is None else spec)

    @property
    def _input(self) -> Dataset:
        return self._inputs[0]

    def _cardinality(self) -> int:
        return self._input._cardinality()


class _RowwiseDataset(_UnaryDataset):
    """A transformation that only reorders, selects or repeats its input's elements: it
    runs alike on the stream of elements and on the stream of row indices into the
    source's slices (see `_slice_arrays`), consuming the same random numbers."""

    def _select(self, ctx, stream: Callable[[], PyIterator]) -> PyIterator:
        raise NotImplementedError

    def _elements(self, ctx):
        return self._select(ctx, lambda: self._input._elements(ctx))

    def _index_stream(self, ctx):
        return self._select(ctx, lambda: self._input._index_stream(ctx))

    def _slice_arrays(self):
        return self._input._slice_arrays()


def _first(dataset: Dataset) -> list | None:
    return next(dataset._elements(IterationContext(dataset)), None)


class _OptionsDataset(_RowwiseDataset):
    def _select(self, ctx, stream):
        return stream()


class _MapDataset(_UnaryDataset):
    def __init__(self, source, map_func):
        self._fn = StructuredFunction(map_func, source.element_spec, "map",
                                      peek=lambda: _first(source))
        super().__init__(source, self._fn.output_spec)

    def _elements(self, ctx):
        fn = self._fn
        for flat in self._input._elements(ctx):
            yield fn(flat)


class _ParallelMapDataset(_MapDataset):
    def __init__(self, source, map_func, num_parallel_calls, deterministic):
        super().__init__(source, map_func)
        n = _int_arg("map", "num_parallel_calls", num_parallel_calls)
        if n != AUTOTUNE and n < 1:
            raise InvalidArgumentError(f"map: num_parallel_calls must be positive or "
                                       f"AUTOTUNE, got {n}")
        self._workers = _THREADS if n == AUTOTUNE else n
        self._deterministic = deterministic

    def _elements(self, ctx):
        fn, window = self._fn, 2 * self._workers
        ordered = op_determinism[0] or (
            self._deterministic if self._deterministic is not None
            else ctx.options.deterministic is not False)
        pool = futures.ThreadPoolExecutor(self._workers, thread_name_prefix="tapeflow-map")
        pending: collections.deque = collections.deque()
        try:
            source = self._input._elements(ctx)
            for flat in source:
                pending.append(pool.submit(fn, flat))
                if len(pending) >= window:
                    yield from self._ready(pending, ordered)
            while pending:
                yield from self._ready(pending, ordered)
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=False)

    @staticmethod
    def _ready(pending, ordered: bool):
        if ordered:
            yield pending.popleft().result()
            return
        done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        for f in list(pending):
            if f in done:
                pending.remove(f)
                yield f.result()


class _FilterDataset(_UnaryDataset):
    def __init__(self, source, predicate):
        self._fn = StructuredFunction(predicate, source.element_spec, "filter",
                                      peek=lambda: _first(source))
        out = self._fn.output_spec
        if not isinstance(out, TensorSpec) or out.dtype is not _bool or len(out.shape):
            raise ValueError(f"filter: invalid `predicate`: it must return a tf.bool scalar "
                             f"tensor, but it returns {out}")
        super().__init__(source)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else (
            0 if n == 0 else UNKNOWN_CARDINALITY)

    def _elements(self, ctx):
        fn = self._fn
        for flat in self._input._elements(ctx):
            if fn(flat)[0]:
                yield flat


def _batch_card(n: int, size: int, drop: bool) -> int:
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


class _BatchDataset(_UnaryDataset):
    def __init__(self, source, batch_size, drop_remainder, ragged: bool = False):
        self._size = _int_arg("batch", "batch_size", batch_size)
        if self._size <= 0:
            raise InvalidArgumentError(f"batch: batch_size must be greater than zero, got "
                                       f"{self._size}")
        self._drop = bool(drop_remainder)
        lead = self._size if self._drop else None
        # SparseTensor/RaggedTensor elements (and ragged_batch) batch leaf by leaf
        self._composite = ragged or composite.has_composites(source.element_spec)
        self._ragged = ragged
        if self._composite:
            super().__init__(source, composite.map_spec_leaves(
                lambda s: composite.batch_spec(s, lead, ragged), source.element_spec))
            return
        super().__init__(source, nest.map_structure(lambda s: structure.with_batch(s, lead),
                                                    source.element_spec)
                         if nest.is_nested(source.element_spec)
                         else structure.with_batch(source.element_spec, lead))

    def _cardinality(self) -> int:
        return _batch_card(self._input._cardinality(), self._size, self._drop)

    def _elements(self, ctx):
        if getattr(self, "_composite", False):
            yield from self._grouped(ctx)
            return
        if isinstance(self._input, _TensorSliceDataset):
            yield from self._input._blocks(self._size, self._drop)
            return
        arrays = self._input._slice_arrays()
        if arrays is not None:  # rows of arrays (shuffled, ...): gathered once per batch
            indices = self._input._index_stream(ctx)
            while True:
                chunk = np.fromiter(itertools.islice(indices, self._size), np.intp)
                if not len(chunk) or (self._drop and len(chunk) < self._size):
                    return
                yield [a[chunk] for a in arrays]
        yield from self._grouped(ctx)

    def _grouped(self, ctx):
        """Elements gathered `_size` at a time and stacked (`_stack`)."""
        rows: list = []
        for flat in self._input._elements(ctx):
            rows.append(flat)
            if len(rows) == self._size:
                yield self._stack(rows)
                rows = []
        if rows and not self._drop:
            yield self._stack(rows)

    def _stack(self, rows: list) -> list:
        if getattr(self, "_composite", False):
            return composite.stack_with_composites("batch", self._input.element_spec, rows,
                                                   self._ragged)
        out = []
        for k, column in enumerate(zip(*rows)):
            first = column[0].shape
            for j, a in enumerate(column):
                if a.shape != first:
                    raise InvalidArgumentError(
                        f"batch: cannot batch tensors with different shapes in component "
                        f"{k}: the first element of the batch has shape {list(first)} and "
                        f"element {j} has shape {list(a.shape)}. Use padded_batch to pad "
                        "elements of different shapes, or map them to one shape first")
            out.append(np.stack(column))
        return out


class _PaddedBatchDataset(_BatchDataset):
    def __init__(self, source, batch_size, padded_shapes, padding_values, drop_remainder):
        spec = source.element_spec
        specs = structure.flat_specs(spec)
        given = [None] * len(specs) if padded_shapes is None else \
            _up_to("padded_batch", "padded_shapes", spec, padded_shapes)
        self._shapes = []
        for s, g in zip(specs, given):
            dims = list(s.shape) if g is None else [
                None if d is None or d == -1 else int(d)
                for d in (g.shape if isinstance(g, TensorSpec) else TensorShape(g))]
            if len(dims) != len(s.shape) or any(
                    have is not None and want is not None and want < have
                    for have, want in zip(s.shape, dims)):
                raise ValueError(f"padded_batch: padded shape {dims} is not compatible with "
                                 f"the element shape {list(s.shape)}")
            self._shapes.append(dims)
        values = [None] * len(specs) if padding_values is None else \
            _up_to("padded_batch", "padding_values", spec, padding_values)
        # the default pads with 0, and strings with b"" (np.zeros of object would give 0)
        self._pads = [np.full((), b"" if s.dtype.is_string else 0, s.dtype.as_numpy_dtype)
                      if v is None else
                      np.asarray(structure.to_array(v, "padded_batch"), s.dtype.as_numpy_dtype)
                      for v, s in zip(values, specs)]
        super().__init__(source, batch_size, drop_remainder)
        lead = self._size if self._drop else None
        self._spec = structure.pack(spec, [TensorSpec([lead] + dims, s.dtype)
                                           for dims, s in zip(self._shapes, specs)])

    def _elements(self, ctx):
        return self._grouped(ctx)  # (no slicing fast path: rows are padded)

    def _stack(self, rows: list) -> list:
        out = []
        for k, column in enumerate(zip(*rows)):
            target = [max(a.shape[d] for a in column) if dim is None else dim
                      for d, dim in enumerate(self._shapes[k])]
            batch = np.full([len(column)] + target, self._pads[k], column[0].dtype)
            for j, a in enumerate(column):
                if any(n > t for n, t in zip(a.shape, target)):
                    raise InvalidArgumentError(
                        f"padded_batch: attempted to pad to a smaller size than the input "
                        f"element: component {k} of element {j} has shape {list(a.shape)}, "
                        f"the padded shape is {target}")
                batch[(j,) + tuple(slice(0, n) for n in a.shape)] = a
            out.append(batch)
        return out


class _UnbatchDataset(_UnaryDataset):
    def __init__(self, source):
        specs = structure.flat_specs(source.element_spec)
        for s in specs:
            if len(s.shape) == 0:
                raise ValueError(f"unbatch: Unbatching a tensor is only supported for rank "
                                 f">= 1, got an element spec {s}")
        spec = structure.pack(source.element_spec,
                              [TensorSpec(list(s.shape)[1:], s.dtype) for s in specs])
        super().__init__(source, spec)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY

    def _elements(self, ctx):
        for flat in self._input._elements(ctx):
            sizes = {a.shape[0] for a in flat}
            if len(sizes) > 1:
                raise InvalidArgumentError(f"unbatch: the components of an element have "
                                           f"different first dimensions "
                                           f"{[a.shape[0] for a in flat]}")
            for i in range(flat[0].shape[0]):
                yield [a[i] for a in flat]


class _ShuffleDataset(_RowwiseDataset):
    def __init__(self, source, buffer_size, seed, reshuffle_each_iteration):
        self._buffer = _int_arg("shuffle", "buffer_size", buffer_size)
        if self._buffer == UNKNOWN_CARDINALITY or self._buffer == AUTOTUNE:
            raise InvalidArgumentError(f"shuffle: buffer_size must be positive, got "
                                       f"{self._buffer}")
        if self._buffer <= 0:
            raise InvalidArgumentError(f"shuffle: buffer_size must be greater than zero, "
                                       f"got {self._buffer}")
        seed = None if seed is None else _int_arg("shuffle", "seed", seed)
        # drawn now, as TensorFlow takes a dataset's seeds when it is built
        self._seed = random_ops.draw_seed(seed)
        self._reshuffle = bool(reshuffle_each_iteration)
        self._iterations = itertools.count()
        super().__init__(source)

    def _next_iteration(self) -> int:
        return next(self._iterations)

    def _select(self, ctx, stream):
        rng = ctx.shuffle_rng(self)
        source = stream()
        buffer = list(itertools.islice(source, self._buffer))
        uniforms = _Uniforms(rng)
        for item in source:
            i = uniforms.index(len(buffer))
            yield buffer[i]
            buffer[i] = item
        while buffer:
            i = uniforms.index(len(buffer))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()


class _Uniforms:
    """Random indices below n from uniforms drawn a block at a time (a NumPy call per
    element would cost more than the rest of the shuffle)."""

    __slots__ = ("rng", "block", "at")

    def __init__(self, rng: np.random.Generator):
        self.rng, self.block, self.at = rng, [], 0

    def index(self, n: int) -> int:
        if self.at == len(self.block):
            self.block, self.at = self.rng.random(1024).tolist(), 0
        u = self.block[self.at]
        self.at += 1
        return int(u * n)


class _RepeatDataset(_RowwiseDataset):
    def __init__(self, source, count):
        self._count = -1 if count is None else _int_arg("repeat", "count", count)
        super().__init__(source)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count == 0 or n == 0:
            return 0
        if self._count < 0:
            return UNKNOWN_CARDINALITY if n == UNKNOWN_CARDINALITY else INFINITE_CARDINALITY
        return n if n < 0 else n * self._count

    def _select(self, ctx, stream):
        epochs = itertools.count() if self._count < 0 else range(self._count)
        for _ in epochs:
            produced = False
            for item in stream():
                produced = True
                yield item
            if not produced:  # an empty input repeated forever is still empty
                return


class _TakeDataset(_RowwiseDataset):
    def __init__(self, source, count):
        self._count = _int_arg("take", "count", count)
        super().__init__(source)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY if self._count else 0
        return self._count if n == INFINITE_CARDINALITY else min(n, self._count)

    def _select(self, ctx, stream):
        if self._count < 0:
            yield from stream()
        elif self._count:
            yield from itertools.islice(stream(), self._count)


class _SkipDataset(_RowwiseDataset):
    def __init__(self, source, count):
        self._count = _int_arg("skip", "count", count)
        super().__init__(source)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n if self._count >= 0 or n == UNKNOWN_CARDINALITY else 0
        return 0 if self._count < 0 else max(n - self._count, 0)

    def _select(self, ctx, stream):
        source = stream()
        if self._count < 0:
            for _ in source:
                pass
            return
        yield from itertools.islice(source, self._count, None)


_END = object()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


class _PrefetchDataset(_UnaryDataset):
    def __init__(self, source, buffer_size):
        n = _int_arg("prefetch", "buffer_size", buffer_size)
        if n != AUTOTUNE and n < 0:
            raise InvalidArgumentError(f"prefetch: buffer_size must be at least 0 or "
                                       f"AUTOTUNE, got {n}")
        self._autotune = n == AUTOTUNE
        self._size = _AUTOTUNE_PREFETCH if self._autotune else n
        super().__init__(source)

    def _elements(self, ctx):
        source = self._input._elements(ctx)
        if self._size == 0:
            return source
        if self._autotune:
            return self._tuned(source)
        return _background(source, self._size)

    def _tuned(self, source):
        """AUTOTUNE: elements are produced inline while they are cheap, and ahead on a
        background thread once producing one costs more than _WORTH_A_THREAD. A Python
        producer thread competes with the consumer for the GIL, and at every hand-over
        waits up to the interpreter's switch interval for it, so it pays only when the
        input does real work (a traced map, a generator, decoding), not for shuffled
        slices of an array."""
        spent = 0.0
        for count in itertools.count(1):
            start = time.perf_counter()
            flat = next(source, None)
            spent += time.perf_counter() - start
            if flat is None:
                return
            yield flat
            if count >= 4 and spent / count > _WORTH_A_THREAD:
                break
        yield from _background(source, self._size)


def _background(source, size: int):
    """The elements of `source`, produced on a background thread into a buffer of `size`."""
    buffer: queue.Queue = queue.Queue(size)
    stop = threading.Event()

    def produce():
        try:
            for flat in source:
                while not stop.is_set():
                    try:
                        buffer.put(flat, timeout=0.05)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            buffer.put(_Failure(e))

    worker = threading.Thread(target=produce, name="tapeflow-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = buffer.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()


class _CacheDataset(_UnaryDataset):
    def __init__(self, source):
        self._cache: list | None = None
        super().__init__(source)

    def _elements(self, ctx):
        if self._cache is not None:
            yield from self._cache
            return
        filling = []
        for flat in self._input._elements(ctx):
            filling.append(flat)
            yield flat
        self._cache = filling  # only a complete pass fills the cache


class _EnumerateDataset(_UnaryDataset):
    def __init__(self, source, start):
        self._start = _int_arg("enumerate", "start", start)
        super().__init__(source, (TensorSpec([], int64), source.element_spec))

    def _elements(self, ctx):
        for i, flat in enumerate(self._input._elements(ctx), self._start):
            yield [np.array(i, np.int64)] + flat


class _ShardDataset(_RowwiseDataset):
    def __init__(self, source, num_shards, index):
        self._num = _int_arg("shard", "num_shards", num_shards)
        self._index = _int_arg("shard", "index", index)
        if self._num <= 0:
            raise InvalidArgumentError(f"shard: num_shards must be greater than zero, got "
                                       f"{self._num}")
        if not 0 <= self._index < self._num:
            raise InvalidArgumentError(f"shard: index must be between 0 and "
                                       f"{self._num - 1} (currently index = {self._index})")
        super().__init__(source)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._num + (1 if self._index < n % self._num else 0)

    def _select(self, ctx, stream):
        return itertools.islice(stream(), self._index, None, self._num)


class _InterleaveDataset(_UnaryDataset):
    def __init__(self, source, map_func, cycle_length, block_length, op, parallel):
        self._op, self._cycle, self._block = op, cycle_length, block_length
        # with num_parallel_calls, every open dataset is read ahead on a thread of its own
        # (the order of the elements stays the sequential one)
        self._parallel = parallel
        self._map_func = map_func
        if not callable(map_func):
            raise TypeError(f"{op}: map_func must be callable, got {map_func!r:.60}")
        spec = self._inner_spec(source)
        self._fn = StructuredFunction(map_func, source.element_spec, op, output_spec=spec)
        super().__init__(source, spec)

    def _inner_spec(self, source):
        """The element_spec of the datasets map_func returns, from one call on a stand-in
        element (zeros; unknown dimensions of size 1)."""
        specs = structure.flat_specs(source.element_spec)
        dummy = [np.zeros([1 if d is None else d for d in s.shape], s.dtype.as_numpy_dtype)
                 for s in specs]
        fn = StructuredFunction(self._map_func, source.element_spec, self._op,
                                output_spec=())
        inner = fn.call_eager(dummy)
        if not isinstance(inner, Dataset):
            raise TypeError(f"{self._op}: map_func must return a Dataset, got "
                            f"{type(inner).__name__}")
        return inner.element_spec

    def _open(self, flat, ctx):
        inner = self._fn.call_eager(flat)
        if not isinstance(inner, Dataset):
            raise TypeError(f"{self._op}: map_func must return a Dataset, got "
                            f"{type(inner).__name__}")
        specs, got = structure.flat_specs(self._spec), structure.flat_specs(inner.element_spec)
        if len(specs) != len(got) or any(a.dtype is not b.dtype for a, b in zip(specs, got)):
            raise InvalidArgumentError(f"{self._op}: map_func returned a dataset of "
                                       f"{inner.element_spec}, expected {self._spec}")
        elements = inner._elements(ctx)
        return _background(elements, self._block) if self._parallel else elements

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return 0 if n == 0 else UNKNOWN_CARDINALITY

    def _elements(self, ctx):
        source = self._input._elements(ctx)
        slots: list = [None] * self._cycle
        index, taken, open_count, ended = 0, 0, 0, False
        while not ended or open_count:
            current = slots[index]
            if current is not None:
                flat = next(current, None)
                if flat is not None:
                    taken += 1
                    if taken == self._block:
                        index, taken = (index + 1) % self._cycle, 0
                    yield flat
                    continue
                slots[index] = None
                open_count -= 1
                index, taken = (index + 1) % self._cycle, 0
            elif not ended:
                flat = next(source, None)
                if flat is None:
                    ended = True
                else:
                    slots[index] = self._open(flat, ctx)
                    open_count += 1
            else:
                index, taken = (index + 1) % self._cycle, 0


def shard_for_replica(dataset: Dataset, num_replicas: int, index: int) -> Dataset:
    """Replica `index`'s part of `dataset` (what `tf.distribute` feeds each replica): a
    dataset that ends in `batch(global_batch)` (perhaps then `prefetch`) becomes
    `shard(num_replicas, index).batch(global_batch // num_replicas)` over its input, so
    the replicas' batches of one step together hold that step's global batch; any other
    dataset gives every `num_replicas`-th element. Shuffles must be seeded for the
    replicas to agree on the order they share out.

    Example:
        >>> ds = tf.data.Dataset.range(8).batch(4)
        >>> [b.tolist() for b in shard_for_replica(ds, 2, 1).as_numpy_iterator()]
        [[1, 3], [5, 7]]
    """
    if num_replicas == 1:
        return dataset
    if isinstance(dataset, _PrefetchDataset):
        inner = shard_for_replica(dataset._input, num_replicas, index)
        return inner.prefetch(AUTOTUNE if dataset._autotune else dataset._size)
    if type(dataset) is _BatchDataset:
        if dataset._size % num_replicas:
            raise ValueError(f"experimental_distribute_dataset: the global batch size "
                             f"{dataset._size} is not divisible by the {num_replicas} "
                             f"replicas")
        return dataset._input.shard(num_replicas, index).batch(
            dataset._size // num_replicas, drop_remainder=dataset._drop)
    return dataset.shard(num_replicas, index)
