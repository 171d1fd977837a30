"""RaggedTensor and the `tf.ragged` ops, as composites of gathers, scatters and cumsums.

A RaggedTensor is `values` (a Tensor, or another RaggedTensor for more ragged dims) cut
into rows by `row_splits` (row i is `values[row_splits[i]:row_splits[i + 1]]`). It is a
`nest` composite of its flat values and its row splits (outer first), so loops,
`function` signatures and `data` pipelines carry it as those tensors. Elementwise math
runs on the flat values (`map_flat_values`), so gradients reach them through the public
ops.
"""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt
from .._core.convert import convert_to_tensor
from .._core.errors import InvalidArgumentError
from .._core.shape import dims_of, is_symbolic
from .._core.tensor import Tensor, TensorShape, TensorSpec
from .array import concat, reshape, searchsorted, sequence_mask, shape as _shape, stack
from .creation import fill, ones_like, range as _range, zeros
from .indexing import boolean_mask, gather, scatter_nd, tensor_scatter_nd_update, where
from .math import (cast, divide, greater_equal, less, logical_and, maximum, minimum,
                   not_equal)
from .reduction import (cumsum, reduce_all, reduce_any, reduce_max as _dense_max,
                        reduce_mean as _dense_mean, reduce_min as _dense_min,
                        reduce_prod as _dense_prod, reduce_sum as _dense_sum)

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant", "map_flat_values",
           "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


def _splits_tensor(row_splits, dtype=None) -> Tensor:
    t = convert_to_tensor(row_splits, dtype=dtype) if dtype is not None or isinstance(
        row_splits, Tensor) else convert_to_tensor(row_splits, dtype=_dt.int64)
    if t.dtype not in (_dt.int32, _dt.int64):
        raise ValueError(f"RaggedTensor: row partition tensors must be int32 or int64, got "
                         f"{t.dtype.name}")
    if t.ndim != 1:
        raise ValueError(f"RaggedTensor: row partition tensors must be vectors, got shape "
                         f"{list(t._shape)}")
    return t


def _dim(n: Tensor):
    """A scalar size tensor as a shape entry: an int eagerly, a run-time dim traced."""
    if not is_symbolic(n):
        return int(n.numpy())
    return dims_of(_range(n))[0]


class RaggedTensor:
    """Rows of different lengths: `values` cut at `row_splits`.

    Example:
        >>> rt = tf.ragged.constant([[1, 2, 3], [], [4, 5]])
        >>> rt.row_lengths().numpy()
        array([3, 0, 2])
        >>> rt.to_tensor().numpy()[2]
        array([4, 5, 0], dtype=int32)
    """

    _is_tensor_like = True  # tf.is_tensor(ragged) is True, as in TensorFlow

    def __init__(self, *args, **kwargs):
        raise ValueError("RaggedTensor constructor is private; use a factory method such "
                         "as RaggedTensor.from_row_splits, from_row_lengths or "
                         "tf.ragged.constant")

    @classmethod
    def _make(cls, values, row_splits: Tensor) -> "RaggedTensor":
        rt = cls.__new__(cls)
        rt._values, rt._row_splits = values, row_splits
        return rt

    # ------------------------------------------------------------ factories
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True) -> "RaggedTensor":
        """Row i is `values[row_splits[i]:row_splits[i + 1]]`.

        Example: `tf.RaggedTensor.from_row_splits([1, 2, 3, 4], [0, 2, 2, 4])` ->
        [[1, 2], [], [3, 4]].
        """
        values = _as_values(values)
        splits = _splits_tensor(row_splits)
        if validate and not is_symbolic(splits):
            nvals = _nvals(values)
            ok = splits._shape[0] > 0 and int(splits[0]) == 0 and bool(reduce_all(
                greater_equal(splits[1:] - splits[:-1], 0))) and (
                not isinstance(nvals, int) or int(splits[-1]) == nvals)
            if not ok:
                raise InvalidArgumentError(
                    f"RaggedTensor.from_row_splits: row_splits {splits.numpy().tolist()} "
                    f"must start at 0, not decrease and end at the number of values "
                    f"({nvals})")
        return cls._make(values, splits)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None,
                         validate=True) -> "RaggedTensor":
        """Row i holds the next `row_lengths[i]` values.

        Example: `tf.RaggedTensor.from_row_lengths([1, 2, 3, 4], [2, 0, 2])` ->
        [[1, 2], [], [3, 4]].
        """
        lengths = _splits_tensor(row_lengths)
        if validate and not is_symbolic(lengths) and not bool(reduce_all(
                greater_equal(lengths, 0))):
            raise InvalidArgumentError(f"RaggedTensor.from_row_lengths: row_lengths "
                                       f"{lengths.numpy().tolist()} must be >= 0")
        splits = concat([zeros([1], lengths.dtype), cumsum(lengths)], 0)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None,
                          validate=True) -> "RaggedTensor":
        """values[i] goes to row `value_rowids[i]` (sorted ids; `nrows` rows, default the
        largest id + 1).

        Example: `tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=4)` ->
        [[1, 2], [], [3], []].
        """
        rowids = _splits_tensor(value_rowids)
        if nrows is None:
            n = _dense_max(concat([rowids, -ones_like(rowids[:1])], 0)) + 1
        else:
            n = convert_to_tensor(nrows, dtype=rowids.dtype)
        lengths = scatter_nd(rowids[:, None], ones_like(rowids), [_dim(n)])
        return cls.from_row_lengths(values, lengths, validate=validate)

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None,
                    row_splits_dtype=_dt.int64) -> "RaggedTensor":
        """Rows of a dense tensor: all of each row, the first `lengths[i]`, or the row up
        to its trailing `padding` values.

        Example: `tf.RaggedTensor.from_tensor([[1, 2, 0], [3, 0, 0]], padding=0)` ->
        [[1, 2], [3]].
        """
        x = convert_to_tensor(tensor)
        if x.ndim < 2:
            raise ValueError(f"RaggedTensor.from_tensor: tensor must have rank >= 2, got "
                             f"shape {list(x._shape)}")
        if lengths is not None and padding is not None:
            raise ValueError("RaggedTensor.from_tensor: give lengths or padding, not both")
        row_splits_dtype = _dt.as_dtype(row_splits_dtype)
        nrows, ncols = dims_of(x)[0], dims_of(x)[1]
        if padding is not None:
            pad = convert_to_tensor(padding, dtype=x.dtype)
            keep = not_equal(x, pad)
            if x.ndim > 2:
                keep = reduce_any(keep, axis=list(range(2, x.ndim)))
            positions = cast(_range(ncols), row_splits_dtype) + 1
            lengths = _dense_max(where(keep, positions[None, :] * ones_like(
                cast(keep, row_splits_dtype)), zeros([], row_splits_dtype)), axis=1)
            if x._shape[1] == 0:
                lengths = zeros([nrows], row_splits_dtype)
        if lengths is None:
            flat = reshape(x, [-1] + list(dims_of(x)[2:]))
            lengths = fill([nrows], cast(_shape(x, out_type=row_splits_dtype)[1],
                                         row_splits_dtype))
            result = cls.from_row_lengths(flat, lengths, validate=False)
        else:
            lengths = minimum(convert_to_tensor(lengths, dtype=row_splits_dtype),
                              cast(_shape(x, out_type=row_splits_dtype)[1],
                                   row_splits_dtype))
            mask = sequence_mask(lengths, ncols)
            result = cls.from_row_lengths(boolean_mask(x, mask), lengths, validate=False)
        if ragged_rank > 1:
            inner = cls.from_tensor(result.values, ragged_rank=ragged_rank - 1,
                                    row_splits_dtype=row_splits_dtype)
            return cls._make(inner, result.row_splits)
        return result

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None,
                               validate=True) -> "RaggedTensor":
        """Ragged dims from the outermost row splits inwards."""
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None,
                                validate=True) -> "RaggedTensor":
        result = flat_values
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    # ------------------------------------------------------------ structure
    @property
    def values(self):
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return self._row_splits

    @property
    def flat_values(self) -> Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out, v = [self._row_splits], self._values
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return len(self.nested_row_splits)

    @property
    def dtype(self):
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self):
        return self._row_splits.dtype

    @property
    def uniform_row_length(self):
        return None

    @property
    def shape(self) -> TensorShape:
        n = self._row_splits._shape[0]
        nrows = n - 1 if isinstance(n, int) else None
        inner = list(self._values.shape)[1:] if isinstance(self._values, RaggedTensor) \
            else [d if isinstance(d, int) else None for d in self._values._shape[1:]]
        return TensorShape([nrows, None] + inner)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> "RaggedTensorSpec":
        return RaggedTensorSpec(self.shape, self.dtype, self.ragged_rank,
                                self.row_splits_dtype)

    def nrows(self, out_type=None, name=None) -> Tensor:
        """The number of rows, as a scalar tensor of the row splits' dtype."""
        n = _shape(self._row_splits, out_type=out_type or self.row_splits_dtype)[0] - 1
        return n

    def row_lengths(self, axis=1, name=None) -> Tensor:
        """The length of each row. Example: [[1, 2, 3], [], [4, 5]] -> [3, 0, 2]."""
        if axis != 1:
            if isinstance(self._values, RaggedTensor) and axis > 1:
                return self.with_values(self._values.row_lengths(axis - 1))
            raise ValueError(f"RaggedTensor.row_lengths: axis={axis} is not a ragged axis")
        return self._row_splits[1:] - self._row_splits[:-1]

    def row_starts(self, name=None) -> Tensor:
        return self._row_splits[:-1]

    def row_limits(self, name=None) -> Tensor:
        return self._row_splits[1:]

    def value_rowids(self, name=None) -> Tensor:
        """The row of each value. Example: [[1, 2, 3], [], [4, 5]] -> [0, 0, 0, 2, 2]."""
        n = _shape(_flat_leading(self._values), out_type=self.row_splits_dtype)[0]
        return searchsorted(self._row_splits[1:], _range(n, dtype=self.row_splits_dtype),
                            side="right", out_type=self.row_splits_dtype)

    def nested_row_lengths(self, name=None) -> tuple:
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v.row_lengths())
            v = v._values
        return tuple(out)

    def bounding_shape(self, axis=None, name=None, out_type=None) -> Tensor:
        """The smallest dense shape holding every row."""
        dtype = out_type or self.row_splits_dtype
        lengths = self.row_lengths()
        longest = _dense_max(concat([cast(lengths, dtype), zeros([1], dtype)], 0))
        inner = self._values.bounding_shape(out_type=dtype)[1:] \
            if isinstance(self._values, RaggedTensor) else \
            _shape(self._values, out_type=dtype)[1:]
        out = concat([stack([cast(self.nrows(), dtype), longest]), inner], 0)
        return out if axis is None else out[axis]

    def with_values(self, new_values) -> "RaggedTensor":
        """The same row splits over other values (as many)."""
        return RaggedTensor._make(_as_values(new_values), self._row_splits)

    def with_flat_values(self, new_values) -> "RaggedTensor":
        """The same nested row splits over other flat values (as many)."""
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype) -> "RaggedTensor":
        dtype = _dt.as_dtype(dtype)
        values = self._values.with_row_splits_dtype(dtype) \
            if isinstance(self._values, RaggedTensor) else self._values
        return RaggedTensor._make(values, cast(self._row_splits, dtype))

    # ------------------------------------------------------------ to dense / Python
    def to_tensor(self, default_value=None, name=None, shape=None) -> Tensor:
        """The dense tensor: rows padded with `default_value` (0) to the longest (or cut
        and padded to `shape`, whose None entries mean the bounding size).

        Example: `tf.ragged.constant([[1, 2], [3]]).to_tensor()` -> [[1, 2], [3, 0]].
        """
        default = zeros([], self.dtype) if default_value is None else \
            convert_to_tensor(default_value, dtype=self.dtype)
        want = None if shape is None else list(TensorShape(shape))
        inner_shape = None if want is None else [None] + want[2:]
        values = self._values.to_tensor(default, shape=inner_shape) \
            if isinstance(self._values, RaggedTensor) else self._values
        lengths = self.row_lengths()
        rowids = self.value_rowids()
        columns = _range(_shape(values, out_type=rowids.dtype)[0], dtype=rowids.dtype) - \
            gather(self._row_splits[:-1], rowids)
        nrows = want[0] if want is not None and want[0] is not None else \
            dims_of(self._row_splits)[0] - 1 if isinstance(self._row_splits._shape[0], int) \
            else _dim(self.nrows())
        if want is not None and want[1] is not None:
            ncols = want[1]
        else:
            ncols = _dim(maximum(_dense_max(concat([lengths, zeros([1], lengths.dtype)], 0)),
                                 zeros([], lengths.dtype)))
        inner = list(dims_of(values)[1:])
        if want is not None:
            for k, d in enumerate(want[2:]):
                if d is not None and isinstance(inner[k], int) and inner[k] < d:
                    raise ValueError(f"RaggedTensor.to_tensor: shape {want} is larger than "
                                     f"the values' inner shape {inner}")
        indices = stack([rowids, columns], 1)
        if want is not None and (want[0] is not None or want[1] is not None):
            keep = logical_and(less(rowids, cast(convert_to_tensor(nrows), rowids.dtype)),
                               less(columns, cast(convert_to_tensor(ncols), rowids.dtype)))
            indices, values = boolean_mask(indices, keep), boolean_mask(values, keep)
        out = fill([nrows, ncols] + inner, default)
        return tensor_scatter_nd_update(out, indices, values)

    def to_list(self) -> list:
        """The rows as nested Python lists (eagerly)."""
        values = self._values.to_list() if isinstance(self._values, RaggedTensor) \
            else self._values.numpy().tolist()
        splits = self._row_splits.numpy().tolist()
        return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]

    def numpy(self):
        """The rows as a NumPy array: an object array of rows when they differ in length
        (as TensorFlow gives them)."""
        values = self._values.numpy()
        splits = self._row_splits.numpy()
        rows = [values[a:b] for a, b in zip(splits[:-1], splits[1:])]
        if not rows:
            return np.zeros((0, 0) + tuple(values.shape[1:]), dtype=values.dtype)
        if any(len(r) != len(rows[0]) for r in rows):
            out = np.empty(len(rows), dtype=object)
            for i, r in enumerate(rows):
                out[i] = r
            return out
        return np.array(rows)

    # ------------------------------------------------------------ nest composite
    def _composite_flatten(self) -> list:
        return [self.flat_values] + list(self.nested_row_splits)

    def _composite_unflatten(self, it):
        return _unflatten(self.ragged_rank, self.shape, it)

    # ------------------------------------------------------------ indexing
    def __getitem__(self, key):
        return _getitem(self, key)

    # ------------------------------------------------------------ elementwise operators
    def __neg__(self):
        return self.with_flat_values(-self.flat_values)

    def __abs__(self):
        return self.with_flat_values(abs(self.flat_values))

    def __invert__(self):
        return self.with_flat_values(~self.flat_values)

    def __repr__(self) -> str:
        if is_symbolic(self.flat_values):
            return (f"tf.RaggedTensor(values={self._values!r}, "
                    f"row_splits={self._row_splits!r})")
        with np.printoptions(formatter={"all": _formatter}):
            text = _formatter(self.numpy())
        return f"<tf.RaggedTensor {text}>"

    __str__ = __repr__


def _formatter(x) -> str:
    """Elements separated by commas, recursively (object arrays of rows too)."""
    if isinstance(x, np.ndarray):
        return np.array2string(x, separator=", ") if x.size else repr(x.tolist())
    return str(x)


def _elementwise(name: str, reflected: bool = False):
    def op(self, other):
        if isinstance(other, RaggedTensor):
            _check_same_splits(f"RaggedTensor.__{name}__", self, other)
            other = other.flat_values
        else:
            other = convert_to_tensor(other, dtype=None if not isinstance(
                other, (int, float)) else self.dtype)
            if other.ndim:
                raise ValueError(f"RaggedTensor.__{name}__: only scalars and RaggedTensors "
                                 f"of the same row splits combine with a RaggedTensor "
                                 f"here, got a tensor of shape {list(other._shape)}")
        fn = getattr(Tensor, f"__{'r' if reflected else ''}{name}__")
        return self.with_flat_values(fn(self.flat_values, other))
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    setattr(RaggedTensor, f"__{_name}__", _elementwise(_name))
    setattr(RaggedTensor, f"__r{_name}__", _elementwise(_name, reflected=True))
for _name in ("lt", "le", "gt", "ge"):
    setattr(RaggedTensor, f"__{_name}__", _elementwise(_name))


def _check_same_splits(op: str, a: RaggedTensor, b: RaggedTensor) -> None:
    sa, sb = a.nested_row_splits, b.nested_row_splits
    if len(sa) != len(sb):
        raise ValueError(f"{op}: the RaggedTensors have ragged ranks {len(sa)} and {len(sb)}")
    for x, y in zip(sa, sb):
        if x is y:
            continue
        if x._shape != y._shape and all(isinstance(d, int) for d in x._shape + y._shape):
            raise InvalidArgumentError(f"{op}: the RaggedTensors have different row "
                                       f"partitions ({x._shape[0] - 1} and {y._shape[0] - 1} "
                                       "rows)")
        if not is_symbolic(x) and not is_symbolic(y) and not np.array_equal(
                x.numpy(), y.numpy()):
            raise InvalidArgumentError(f"{op}: the RaggedTensors have different row "
                                       f"splits {x.numpy().tolist()} and "
                                       f"{y.numpy().tolist()}; elementwise ops need the "
                                       "same row partitions")


def _as_values(values):
    if isinstance(values, RaggedTensor):
        return values
    v = convert_to_tensor(values)
    if v.ndim == 0:
        raise ValueError("RaggedTensor: values must have rank >= 1, got a scalar")
    return v


def _flat_leading(values) -> Tensor:
    """A tensor whose first dim is the number of `values` rows (its row splits' last
    entry for a RaggedTensor)."""
    return values._row_splits[1:] if isinstance(values, RaggedTensor) else values


def _nvals(values):
    if isinstance(values, RaggedTensor):
        n = values._row_splits._shape[0]
        return n - 1 if isinstance(n, int) else None
    return values._shape[0] if isinstance(values._shape[0], int) else None


def _unflatten(ragged_rank: int, shape: TensorShape, it):
    parts = [next(it) for _ in range(ragged_rank + 1)]
    if all(isinstance(p, TensorSpec) for p in parts):
        return RaggedTensorSpec(shape, parts[0].dtype, ragged_rank, parts[1].dtype
                                if ragged_rank else _dt.int64)
    if not all(isinstance(p, Tensor) for p in parts):  # tf.data's arrays
        parts = [convert_to_tensor(p) for p in parts]
    result = parts[0]
    for splits in reversed(parts[1:]):
        result = RaggedTensor._make(result, splits)
    return result


class RaggedTensorSpec:
    """The type of a RaggedTensor: shape (None for ragged dims), dtype, ragged rank and
    row splits dtype, for `function` signatures and `data` element specs.

    Example:
        >>> tf.RaggedTensorSpec([None, None], tf.float32, 1)
        RaggedTensorSpec(TensorShape([None, None]), tf.float32, 1, tf.int64)
    """

    def __init__(self, shape=None, dtype=_dt.float32, ragged_rank=None,
                 row_splits_dtype=_dt.int64, flat_values_spec=None):
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.row_splits_dtype = _dt.as_dtype(row_splits_dtype)
        if ragged_rank is None:
            if self.shape.rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = self.shape.rank - 1
        if self.shape.rank is not None and not 0 <= ragged_rank < max(self.shape.rank, 1):
            raise ValueError(f"RaggedTensorSpec: ragged_rank={ragged_rank} must be in "
                             f"[0, rank={self.shape.rank})")
        self.ragged_rank = int(ragged_rank)
        self.flat_values_spec = flat_values_spec

    value_type = RaggedTensor

    @classmethod
    def from_value(cls, value: RaggedTensor) -> "RaggedTensorSpec":
        return value._type_spec

    def _component_specs(self) -> list:
        dims = list(self.shape) if self.shape.rank is not None else None
        if dims is None:
            flat = TensorSpec([None], self.dtype)
        else:
            flat = TensorSpec([None] + dims[self.ragged_rank + 1:], self.dtype)
        if self.ragged_rank == 0:
            return [TensorSpec(dims, self.dtype)] if dims is not None else [flat]
        outer = dims[0] + 1 if dims is not None and dims[0] is not None else None
        return [flat, TensorSpec([outer], self.row_splits_dtype)] + [
            TensorSpec([None], self.row_splits_dtype) for _ in range(self.ragged_rank - 1)]

    def _composite_flatten(self) -> list:
        return self._component_specs()

    def _composite_unflatten(self, it):
        if self.ragged_rank == 0:  # (a dataset's rows of a ragged tensor: plain tensors)
            part = next(it)
            return self if isinstance(part, TensorSpec) else part if isinstance(
                part, Tensor) else convert_to_tensor(part)
        out = _unflatten(self.ragged_rank, self.shape, it)
        return self if isinstance(out, RaggedTensorSpec) else out

    def is_compatible_with(self, other) -> bool:
        """Whether a RaggedTensor (or spec) fits: dtype, ragged rank and shape."""
        if isinstance(other, RaggedTensor):
            other = other._type_spec
        return (isinstance(other, RaggedTensorSpec) and other.dtype is self.dtype
                and other.ragged_rank == self.ragged_rank
                and other.row_splits_dtype is self.row_splits_dtype
                and self.shape.is_compatible_with(other.shape))

    def _batch(self, size) -> "RaggedTensorSpec":
        return RaggedTensorSpec([size] + list(self.shape), self.dtype, self.ragged_rank + 1,
                                self.row_splits_dtype)

    def __eq__(self, other) -> bool:
        return (isinstance(other, RaggedTensorSpec) and self._key() == other._key())

    def _key(self):
        return (None if self.shape.rank is None else tuple(self.shape), self.dtype.name,
                self.ragged_rank, self.row_splits_dtype.name)

    def __hash__(self) -> int:
        return hash(("RaggedTensorSpec",) + self._key())

    def __repr__(self) -> str:
        return (f"RaggedTensorSpec({self.shape!r}, tf.{self.dtype.name}, {self.ragged_rank}, "
                f"tf.{self.row_splits_dtype.name})")


# ---------------------------------------------------------------------- constant


def _nested_depth(x) -> int:
    if isinstance(x, (list, tuple)):
        depths = [_nested_depth(v) for v in x]
        return 1 + (max(depths) if depths else 0)
    return 0


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=_dt.int64) -> RaggedTensor:
    """A RaggedTensor from nested Python lists (ragged in every dim up to `ragged_rank`,
    default the nesting depth - 1; deeper lists must be uniform).

    Example: `tf.ragged.constant([[1, 2], [3]]).row_lengths()` -> [2, 1].
    """
    depth = _nested_depth(pylist)
    if depth == 0:
        raise ValueError("ragged.constant: pylist must be a nested list, got a scalar")
    if ragged_rank is None:
        ragged_rank = max(depth - 1 - (len(inner_shape) if inner_shape else 0), 1) \
            if depth > 1 else 1
    ragged_rank = int(ragged_rank)
    splits_dtype = _dt.as_dtype(row_splits_dtype)
    nested_lengths = []
    level = [pylist]
    for _ in range(ragged_rank):
        lengths, nxt = [], []
        for row in level:
            for item in row:
                if not isinstance(item, (list, tuple)):
                    raise ValueError(f"ragged.constant: all scalar values must have the same "
                                     f"nesting depth (ragged_rank={ragged_rank})")
                lengths.append(len(item))
                nxt.extend(item)
        nested_lengths.append(lengths)
        level = [nxt]
    flat = level[0]
    if not flat and inner_shape is None:
        flat_values = convert_to_tensor(np.zeros([0], np.float32), dtype=dtype or _dt.float32)
    else:
        flat_values = convert_to_tensor(flat, dtype=dtype) if flat else \
            zeros([0] + list(inner_shape or []), dtype or _dt.float32)
    result = flat_values
    for lengths in reversed(nested_lengths[1:]):
        result = RaggedTensor.from_row_lengths(
            result, convert_to_tensor(lengths, dtype=splits_dtype), validate=False)
    outer = convert_to_tensor([len(r) for r in pylist], dtype=splits_dtype)
    return RaggedTensor.from_row_lengths(result, outer, validate=False)


# ---------------------------------------------------------------------- map_flat_values


def _ragged_in(structure, found: list):
    if isinstance(structure, RaggedTensor):
        found.append(structure)
        return structure.flat_values
    if isinstance(structure, (list, tuple)):
        return type(structure)(_ragged_in(v, found) for v in structure)
    if isinstance(structure, dict):
        return {k: _ragged_in(v, found) for k, v in structure.items()}
    return structure


def map_flat_values(op, *args, **kwargs):
    """`op` applied to the flat values of the RaggedTensors among the arguments (which
    must share their row partitions), as a RaggedTensor of the same rows.

    Example: `tf.ragged.map_flat_values(tf.multiply, rt, 10)` multiplies every value.
    """
    found: list = []
    args = _ragged_in(list(args), found)
    kwargs = _ragged_in(kwargs, found)
    if not found:
        return op(*args, **kwargs)
    for other in found[1:]:
        _check_same_splits("ragged.map_flat_values", found[0], other)
    out = op(*args, **kwargs)
    return found[0].with_flat_values(out)


# ---------------------------------------------------------------------- reductions


def _axes(op: str, rt: RaggedTensor, axis) -> list:
    rank = len(rt.shape)
    if axis is None:
        return list(range(rank))
    axes = [axis] if isinstance(axis, int) else [int(a) for a in axis]
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{op}: axis {a} is out of range for a RaggedTensor "
                                       f"of rank {rank}")
        out.append(a % rank)
    return sorted(set(out))


def _reduce(op: str, rt: RaggedTensor, axis, keepdims: bool, identity, dense_fn):
    axes = _axes(op, rt, axis)
    if axes == list(range(len(rt.shape))) and not keepdims:
        values = rt.flat_values
        if op == "reduce_mean" and values.dtype.is_integer:
            values = cast(values, _dt.float64)
        return dense_fn(values)
    if axes and axes[0] >= 2:  # within each row of the values: reduce the values
        return rt.with_values(_reduce(op, rt.values, [a - 1 for a in axes], keepdims,
                                      identity, dense_fn)
                              if isinstance(rt.values, RaggedTensor)
                              else dense_fn(rt.values, [a - 1 for a in axes], keepdims))
    if rt.ragged_rank > 1:
        raise InvalidArgumentError(f"{op}: reducing axis {axes} of a RaggedTensor with "
                                   f"ragged_rank {rt.ragged_rank} is not supported here; "
                                   "reduce the inner dims first or use to_tensor()")
    # ragged rank 1 over axis 0 and/or 1: pad with the reduction's identity, reduce dense
    if op == "reduce_mean":
        values = rt.values if not rt.dtype.is_integer else cast(rt.values, _dt.float64)
        padded = rt.with_values(values).to_tensor(zeros([], values.dtype))
        counts = rt.with_values(ones_like(values)).to_tensor(zeros([], values.dtype))
        return divide(_dense_sum(padded, axes, keepdims), _dense_sum(counts, axes, keepdims))
    padded = rt.to_tensor(identity(rt.dtype))
    return dense_fn(padded, axes, keepdims)


def _zero(dtype):
    return zeros([], dtype)


def _one(dtype):
    return convert_to_tensor(1, dtype=dtype)


def _lowest(dtype):
    if dtype.is_bool:
        return convert_to_tensor(False)
    info = np.finfo(dtype.as_numpy_dtype) if dtype.is_floating else np.iinfo(
        dtype.as_numpy_dtype)
    return convert_to_tensor(info.min, dtype=dtype)


def _highest(dtype):
    if dtype.is_bool:
        return convert_to_tensor(True)
    info = np.finfo(dtype.as_numpy_dtype) if dtype.is_floating else np.iinfo(
        dtype.as_numpy_dtype)
    return convert_to_tensor(info.max, dtype=dtype)


def _reduction(name: str, identity, dense_fn):
    def reduce(input_tensor, axis=None, keepdims=False, name=None):
        if not isinstance(input_tensor, RaggedTensor):
            return dense_fn(input_tensor, axis, keepdims)
        return _reduce(reduce.__name__, input_tensor, axis, bool(keepdims), identity, dense_fn)
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (f"`tf.{name}` that also reduces RaggedTensors (over ragged axes: "
                      "a dense result; empty rows give the reduction's identity).\n\n"
                      f"    Example: `tf.{name}(tf.ragged.constant([[1., 2.], [3.]]), "
                      "axis=1)`.")
    return reduce


reduce_sum = _reduction("reduce_sum", _zero, _dense_sum)
reduce_prod = _reduction("reduce_prod", _one, _dense_prod)
reduce_max = _reduction("reduce_max", _lowest, _dense_max)
reduce_min = _reduction("reduce_min", _highest, _dense_min)
reduce_mean = _reduction("reduce_mean", _zero, _dense_mean)


# ---------------------------------------------------------------------- indexing


def _getitem(rt: RaggedTensor, key):
    if not isinstance(key, tuple):
        key = (key,)
    if not key:
        return rt
    first, rest = key[0], key[1:]
    if isinstance(first, slice):
        rows = _slice_rows(rt, first)
        if not rest:
            return rows
        return _slice_inner(rows, rest)
    if isinstance(first, (int, np.integer)) or isinstance(first, Tensor):
        i = convert_to_tensor(first, dtype=rt.row_splits_dtype)
        n = rt.nrows()
        i = where(less(i, 0), i + n, i)
        start, stop = rt.row_splits[i], rt.row_splits[i + 1]
        values = rt.values
        row = values[start:stop]
        if not rest:
            return row
        return _getitem(row, rest) if isinstance(row, RaggedTensor) else row[rest]
    raise TypeError(f"RaggedTensor.__getitem__: unsupported key {key!r:.60} (ints, slices "
                    "and tuples of them are supported)")


def _slice_rows(rt: RaggedTensor, s: slice) -> RaggedTensor:
    if s.step not in (None, 1):
        raise ValueError("RaggedTensor.__getitem__: slices with a step are not supported "
                         "on the row axis")
    if s.start is None and s.stop is None:
        return rt
    splits = rt.row_splits[s.start:None if s.stop is None else (
        s.stop + 1 if s.stop >= 0 else s.stop + 1 or None)] if isinstance(
        s.stop, (int, type(None))) else None
    if splits is None:
        raise TypeError("RaggedTensor.__getitem__: slice bounds must be ints")
    if s.stop is not None and s.stop < 0 and s.stop + 1 == 0:
        splits = rt.row_splits[s.start:]
    splits = splits if splits._shape[0] != 0 else rt.row_splits[:1]
    values = rt.values
    sub = values[splits[0]:splits[-1]]
    return RaggedTensor._make(sub, splits - splits[0])


def _slice_inner(rt: RaggedTensor, key: tuple) -> RaggedTensor:
    """rt[:, s] (and deeper keys on uniform values): a per-row column slice."""
    col, rest = key[0], key[1:]
    if not isinstance(col, slice) or col.step not in (None, 1):
        raise TypeError("RaggedTensor.__getitem__: only slices (no step) are supported on "
                        "the ragged axis here")
    lengths = rt.row_lengths()
    dtype = lengths.dtype

    def bound(b, default):
        if b is None:
            return default
        b = convert_to_tensor(b, dtype=dtype)
        return minimum(maximum(where(less(b, 0), lengths + b, b * ones_like(lengths)),
                               zeros([], dtype)), lengths)

    start, stop = bound(col.start, lengths * 0), bound(col.stop, lengths)
    stop = maximum(stop, start)
    rowids = rt.value_rowids()
    columns = _range(_shape(_flat_leading(rt.values), out_type=dtype)[0], dtype=dtype) - \
        gather(rt.row_splits[:-1], rowids)
    keep = logical_and(greater_equal(columns, gather(start, rowids)),
                       less(columns, gather(stop, rowids)))
    if isinstance(rt.values, RaggedTensor):
        raise TypeError("RaggedTensor.__getitem__: column slices of nested ragged tensors "
                        "are not supported here")
    values = boolean_mask(rt.values, keep)
    if rest:
        values = values[(slice(None),) + tuple(rest)]
    return RaggedTensor.from_row_lengths(values, stop - start, validate=False)
