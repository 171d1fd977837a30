"""SparseTensor and the `tf.sparse` ops, as composites of gathers, scatters and sorts.

A SparseTensor is three tensors (int64 `indices` [nnz, rank], `values` [nnz], int64
`dense_shape` [rank]) and a static shape: the dense shape as far as it is known without
running anything (all of it eagerly; what a `SparseTensorSpec` says when traced). It is a
`nest` composite, so loops, `function` signatures and `data` pipelines carry its tensors.
Gradients reach `values` (and dense operands) through the public ops these are made of.
"""
from __future__ import annotations

from .._core import dtypes as _dt
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.errors import InvalidArgumentError
from .._core.shape import dims_of, is_symbolic
from .._core.tensor import Tensor, TensorShape, TensorSpec
from .array import argsort, concat, shape as _shape, stack, transpose as _transpose, unique
from .creation import fill, ones_like, range as _range, zeros
from .indexing import (boolean_mask, gather, gather_nd, scatter_nd, segment_sum,
                       tensor_scatter_nd_add, tensor_scatter_nd_update, where)
from .math import (abs as _abs, cast, conj, floordiv, floormod, greater, greater_equal,
                   less, logical_and, maximum, minimum, not_equal)
from .reduction import (argmin, cumprod, cumsum, reduce_all, reduce_prod,
                        reduce_sum as _reduce_sum)

__all__ = ["SparseTensor", "SparseTensorSpec", "to_dense", "from_dense",
           "sparse_dense_matmul", "add", "reduce_sum", "reorder", "retain", "reshape_sparse",
           "transpose_sparse", "slice_sparse", "concat_sparse"]


def _static_dims(dense_shape: Tensor, rank: int | None) -> TensorShape:
    """The static shape a dense_shape tensor gives: its values eagerly, else unknown."""
    if not is_symbolic(dense_shape):
        return TensorShape([int(d) for d in dense_shape.numpy()])
    return TensorShape(None if rank is None else [None] * rank)


class SparseTensor:
    """A sparse tensor: `values[i]` sits at `indices[i]` of a `dense_shape` tensor of zeros.

    Example:
        >>> sp = tf.sparse.SparseTensor(indices=[[0, 1], [2, 3]], values=[1.0, 2.0],
        ...                             dense_shape=[3, 4])
        >>> sp.shape
        TensorShape([3, 4])
        >>> tf.sparse.to_dense(sp).numpy()[2]
        array([0., 0., 0., 2.], dtype=float32)
    """

    _is_tensor_like = True  # tf.is_tensor(sparse) is True, as in TensorFlow

    def __init__(self, indices, values, dense_shape):
        indices = convert_to_tensor(indices, dtype=_dt.int64)
        values = convert_to_tensor(values)
        dense_shape = convert_to_tensor(dense_shape, dtype=_dt.int64)
        if indices.ndim != 2:
            raise ValueError(f"SparseTensor: indices must have rank 2 ([nnz, rank]), got "
                             f"shape {list(indices._shape)}: Shape {tuple(indices._shape)} "
                             "must have rank 2")
        if values.ndim != 1:
            raise ValueError(f"SparseTensor: values must have rank 1, got shape "
                             f"{list(values._shape)}")
        if dense_shape.ndim != 1:
            raise ValueError(f"SparseTensor: dense_shape must have rank 1, got shape "
                             f"{list(dense_shape._shape)}")
        n_i, n_v = indices._shape[0], values._shape[0]
        if isinstance(n_i, int) and isinstance(n_v, int) and n_i != n_v:
            raise ValueError(f"SparseTensor: indices hold {n_i} entries but values {n_v}: "
                             f"Dimensions {n_i} and {n_v} are not compatible")
        rank = dense_shape._shape[0]
        rank = rank if isinstance(rank, int) else None
        r_i = indices._shape[1]
        if rank is not None and isinstance(r_i, int) and r_i != rank:
            raise ValueError(f"SparseTensor: indices have {r_i} columns but dense_shape "
                             f"has {rank} entries: Dimensions {r_i} and {rank} are not "
                             "compatible")
        self._init(indices, values, dense_shape, _static_dims(dense_shape, rank))

    def _init(self, indices, values, dense_shape, static_shape: TensorShape) -> None:
        self.indices, self.values, self.dense_shape = indices, values, dense_shape
        self._static_shape = static_shape

    @classmethod
    def _make(cls, indices, values, dense_shape, static_shape=None) -> "SparseTensor":
        """A SparseTensor of parts already checked (the ops' results), no conversion."""
        sp = cls.__new__(cls)
        if static_shape is None or not is_symbolic(dense_shape):
            rank = dense_shape._shape[0]
            static_shape = _static_dims(dense_shape, rank if isinstance(rank, int) else None)
        sp._init(indices, values, dense_shape, TensorShape(static_shape))
        return sp

    @classmethod
    def from_value(cls, value) -> "SparseTensor":
        """`value` itself when a SparseTensor (TensorFlow's `SparseTensor.from_value`)."""
        if isinstance(value, SparseTensor):
            return value
        raise TypeError(f"SparseTensor.from_value: expected a SparseTensor, got "
                        f"{type(value).__name__}")

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self) -> TensorShape:
        return self._static_shape

    def get_shape(self) -> TensorShape:
        return self._static_shape

    @property
    def _type_spec(self) -> "SparseTensorSpec":
        return SparseTensorSpec(self._static_shape, self.dtype)

    def with_values(self, new_values) -> "SparseTensor":
        """The same indices and shape with other values (as many, any dtype).

        Example: `sp.with_values(sp.values * 2)`.
        """
        new_values = convert_to_tensor(new_values)
        if new_values.ndim != 1:
            raise ValueError(f"SparseTensor.with_values: values must have rank 1, got "
                             f"shape {list(new_values._shape)}")
        return SparseTensor._make(self.indices, new_values, self.dense_shape,
                                  self._static_shape)

    # ------------------------------------------------------------ nest composite
    def _composite_flatten(self) -> list:
        return [self.indices, self.values, self.dense_shape]

    def _composite_unflatten(self, it):
        parts = [next(it), next(it), next(it)]
        if all(isinstance(p, TensorSpec) for p in parts):
            return SparseTensorSpec(self._static_shape, parts[1].dtype)
        if not all(isinstance(p, Tensor) for p in parts):  # tf.data's arrays
            parts = [convert_to_tensor(p) for p in parts]
        return SparseTensor._make(*parts, static_shape=self._static_shape)

    # ------------------------------------------------------------ operators
    def __mul__(self, other):
        return _cwise(self, other, "mul")

    def __truediv__(self, other):
        return _cwise(self, other, "truediv")

    __div__ = __truediv__

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self.indices!s}, values={self.values!s}, "
                f"dense_shape={self.dense_shape!s})")

    __str__ = __repr__


class SparseTensorSpec:
    """The type of a SparseTensor: its (static) dense shape and dtype, for `function`
    signatures and `data` element specs.

    Example:
        >>> tf.SparseTensorSpec([None, 4], tf.float32)
        SparseTensorSpec(TensorShape([None, 4]), tf.float32)
    """

    def __init__(self, shape=None, dtype=_dt.float32):
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)

    value_type = SparseTensor

    @classmethod
    def from_value(cls, value: SparseTensor) -> "SparseTensorSpec":
        return SparseTensorSpec(value.shape, value.dtype)

    def _rank(self):
        return None if self.shape.rank is None else self.shape.rank

    def _component_specs(self) -> list:
        r = self._rank()
        return [TensorSpec([None, r], _dt.int64), TensorSpec([None], self.dtype),
                TensorSpec([r], _dt.int64)]

    def _composite_flatten(self) -> list:
        return self._component_specs()

    def _composite_unflatten(self, it):
        parts = [next(it), next(it), next(it)]
        if all(isinstance(p, TensorSpec) for p in parts):
            return self
        if not all(isinstance(p, Tensor) for p in parts):
            parts = [convert_to_tensor(p) for p in parts]
        return SparseTensor._make(*parts, static_shape=self.shape)

    def is_compatible_with(self, other) -> bool:
        """Whether a SparseTensor (or spec) fits: same dtype, compatible shape."""
        if isinstance(other, SparseTensor):
            other = other._type_spec
        return (isinstance(other, SparseTensorSpec) and other.dtype is self.dtype
                and self.shape.is_compatible_with(other.shape))

    def _batch(self, size) -> "SparseTensorSpec":
        return SparseTensorSpec([size] + list(self.shape), self.dtype)

    def __eq__(self, other) -> bool:
        return (isinstance(other, SparseTensorSpec) and self.dtype is other.dtype
                and _shape_key(self.shape) == _shape_key(other.shape))

    def __hash__(self) -> int:
        return hash(("SparseTensorSpec", _shape_key(self.shape), self.dtype.name))

    def __repr__(self) -> str:
        return f"SparseTensorSpec({self.shape!r}, tf.{self.dtype.name})"


def _shape_key(shape: TensorShape):
    return None if shape.rank is None else tuple(shape)


# ---------------------------------------------------------------------- helpers


def _sparse(op: str, value, arg: str = "sp_input") -> SparseTensor:
    if not isinstance(value, SparseTensor):
        raise TypeError(f"{op}: {arg} must be a SparseTensor, got {type(value).__name__}")
    return value


def _dims(sp: SparseTensor) -> tuple:
    """The dense shape as ints where static, else run-time dims (traced)."""
    static = sp.shape
    rank = static.rank
    if rank is None:
        raise InvalidArgumentError("sparse: the rank of the dense shape must be known")
    out = []
    for i, d in enumerate(static):
        out.append(d if d is not None else dims_of(_range(sp.dense_shape[i]))[0])
    return tuple(out)


def _strides(dense_shape: Tensor) -> Tensor:
    """Row-major strides of a dense shape (int64)."""
    return cumprod(dense_shape, exclusive=True, reverse=True)


def _linear(indices: Tensor, dense_shape: Tensor) -> Tensor:
    return _reduce_sum(indices * _strides(dense_shape), axis=1)


def _unravel(linear: Tensor, dense_shape: Tensor) -> Tensor:
    return floormod(floordiv(linear[:, None], _strides(dense_shape)[None, :]),
                    dense_shape[None, :])


def _eager() -> bool:
    return ctx.graph is None


def _check_indices(op: str, sp: SparseTensor, ordered: bool) -> None:
    """Eagerly, TensorFlow's checks of indices: in bounds, and (if `ordered`) strictly
    increasing in row-major order. (Traced, no check: the graph has no assertion op.)"""
    if not _eager() or sp.indices._shape[0] == 0:
        return
    # the checks run as ops; only a failing entry is read back, for the message
    inside = reduce_all(logical_and(greater_equal(sp.indices, 0),
                                    less(sp.indices, sp.dense_shape[None, :])), axis=1)
    if not bool(reduce_all(inside)):
        i = int(argmin(cast(inside, _dt.int32)))
        raise InvalidArgumentError(
            f"{op}: indices[{i}] = {sp.indices[i].numpy().tolist()} is out of bounds: need "
            f"0 <= index < {sp.dense_shape.numpy().tolist()}")
    if ordered:
        lin = _linear(sp.indices, sp.dense_shape)
        steps = lin[1:] - lin[:-1]
        increasing = greater(steps, 0)
        if not bool(reduce_all(increasing)):
            i = int(argmin(cast(increasing, _dt.int32))) + 1
            what = "is repeated" if int(steps[i - 1]) == 0 else "is out of order"
            raise InvalidArgumentError(
                f"{op}: indices[{i}] = {sp.indices[i].numpy().tolist()} {what}. Many sparse "
                "ops require sorted indices. Use `tf.sparse.reorder` to create a correctly "
                "ordered copy.")


def _shape_from(dense_shape: Tensor, static) -> TensorShape:
    return _static_dims(dense_shape, len(static) if static is not None else None) \
        if not is_symbolic(dense_shape) else TensorShape(static)


# ---------------------------------------------------------------------- ops


def to_dense(sp_input, default_value=None, validate_indices=True, name=None) -> Tensor:
    """The dense tensor: `default_value` (0) everywhere but at the indices.

    Example: `tf.sparse.to_dense(tf.sparse.SparseTensor([[1]], [5.], [3]))` -> [0., 5., 0.].
    """
    sp = _sparse("sparse.to_dense", sp_input)
    _check_indices("SparseToDense", sp, ordered=bool(validate_indices))
    default = zeros([], sp.dtype) if default_value is None else \
        convert_to_tensor(default_value, dtype=sp.dtype)
    # (an update, not a sum: a repeated index keeps its last value, as TensorFlow)
    return tensor_scatter_nd_update(fill(_dims(sp), default), sp.indices, sp.values)


def from_dense(tensor, name=None) -> SparseTensor:
    """The nonzero entries of a dense tensor, in row-major order.

    Example: `tf.sparse.from_dense([[0., 1.], [2., 0.]]).values` -> [1., 2.].
    """
    x = convert_to_tensor(tensor)
    mask = x if x.dtype is _dt.bool else not_equal(x, zeros([], x.dtype))
    indices = where(mask)
    return SparseTensor._make(indices, gather_nd(x, indices), _shape(x, out_type=_dt.int64),
                              TensorShape(list(x._shape)) if all(
                                  isinstance(d, int) for d in x._shape) else None)


def _cwise(sp: SparseTensor, other, how: str) -> SparseTensor:
    """`sp * dense` / `sp / dense`: the dense operand (broadcast to the dense shape) read
    at the indices."""
    if isinstance(other, SparseTensor):
        sym = "*" if how == "mul" else "/"
        raise TypeError(f"unsupported operand type(s) for {sym}: 'SparseTensor' and "
                        "'SparseTensor'")
    y = convert_to_tensor(other, dtype=sp.dtype)
    if y.ndim:
        # broadcasting against the dense shape, read at each index
        rank = len(sp.shape)
        idx = sp.indices[:, rank - y.ndim:]
        keep = [d == 1 for d in y._shape]
        if any(keep):
            idx = idx * cast(stack([0 if k else 1 for k in keep]), _dt.int64)[None, :]
        y = gather_nd(y, idx)
    values = sp.values * y if how == "mul" else sp.values / y
    return SparseTensor._make(sp.indices, values, sp.dense_shape, sp.shape)


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None) -> Tensor:
    """The dense product of a sparse and a dense matrix (either may be the sparse one),
    with optional adjoints.

    Example: `tf.sparse.sparse_dense_matmul(sp, tf.ones([4, 2]))` for `sp` of shape [3, 4].
    """
    if isinstance(b, SparseTensor) and not isinstance(sp_a, SparseTensor):
        # A' B' = (B'^T A'^T)^T, with B'^T sparse (its adjoint, unconjugated)
        a = convert_to_tensor(sp_a)
        a_eff = conj(_transpose(a)) if adjoint_a else a
        bt = _transpose_2d(b, conjugate=not adjoint_b)
        return _transpose(_spmm(bt, _transpose(a_eff)))
    sp = _sparse("sparse.sparse_dense_matmul", sp_a, "sp_a")
    if len(sp.shape) != 2:
        raise InvalidArgumentError(f"SparseTensorDenseMatMul: sp_a must be a matrix, got "
                                   f"dense shape {sp.shape}")
    dense = convert_to_tensor(b, dtype=sp.dtype)
    if dense.ndim != 2:
        raise InvalidArgumentError(f"SparseTensorDenseMatMul: b must be a matrix, got "
                                   f"shape {list(dense._shape)}")
    if adjoint_b:
        dense = conj(_transpose(dense))
    if adjoint_a:
        sp = _transpose_2d(sp, conjugate=True)
    inner = sp.shape[1]
    if isinstance(inner, int) and isinstance(dense._shape[0], int) and \
            inner != dense._shape[0]:
        raise InvalidArgumentError(
            f"SparseTensorDenseMatMul: cannot multiply A of shape {list(sp.shape)} and B of "
            f"shape {list(dense._shape)} (adjoint_a={adjoint_a}, adjoint_b={adjoint_b}): "
            "the inner dimensions differ")
    return _spmm(sp, dense)


def _transpose_2d(sp: SparseTensor, conjugate: bool) -> SparseTensor:
    values = conj(sp.values) if conjugate and sp.dtype.is_complex else sp.values
    return SparseTensor._make(gather(sp.indices, [1, 0], axis=1), values,
                              gather(sp.dense_shape, [1, 0]), list(sp.shape)[::-1])


def _spmm(sp: SparseTensor, dense: Tensor) -> Tensor:
    rows, cols = sp.indices[:, 0], sp.indices[:, 1]
    contributions = sp.values[:, None] * gather(dense, cols)
    return scatter_nd(rows[:, None], contributions, [_dims(sp)[0], dims_of(dense)[1]])


def add(a, b, threshold=0, name=None):
    """`a + b`: sparse + sparse -> sparse (repeated positions summed; sums smaller than
    `threshold` in magnitude dropped), sparse + dense -> dense.

    Example: `tf.sparse.add(sp, tf.ones([3, 4]))` is dense.
    """
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not a_sparse and not b_sparse:
        return convert_to_tensor(a) + convert_to_tensor(b)
    if a_sparse != b_sparse:
        sp, dense = (a, b) if a_sparse else (b, a)
        dense = convert_to_tensor(dense, dtype=sp.dtype)
        return tensor_scatter_nd_add(dense, sp.indices, sp.values)
    if a.dtype is not b.dtype:
        raise TypeError(f"sparse.add: the operands have dtypes {a.dtype.name} and "
                        f"{b.dtype.name}")
    indices = concat([a.indices, b.indices], 0)
    values = concat([a.values, b.values], 0)
    linear = _linear(indices, a.dense_shape)
    order = argsort(linear, stable=True)
    found = unique(gather(linear, order), out_idx=_dt.int64)
    summed = segment_sum(gather(values, order), found.idx)
    positions = found.y
    thresh = convert_to_tensor(threshold)
    if not (thresh.ndim == 0 and not is_symbolic(thresh) and float(thresh.numpy()) <= 0):
        keep = greater_equal(_abs(summed), cast(thresh, summed.dtype if not
                                                summed.dtype.is_complex else _dt.float64))
        summed, positions = boolean_mask(summed, keep), boolean_mask(positions, keep)
    return SparseTensor._make(_unravel(positions, a.dense_shape), summed, a.dense_shape,
                              a.shape)


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """Sums of a sparse tensor's entries over `axis` (all when None); dense unless
    `output_is_sparse` (then the positions some entry reached).

    Example: `tf.sparse.reduce_sum(sp, axis=1)` -> the row sums.
    """
    sp = _sparse("sparse.reduce_sum", sp_input)
    dims = _dims(sp)
    keepdims = bool(keepdims)
    # scatter_nd adds repeated indices, as TensorFlow's sparse sums count each entry
    out = _reduce_sum(scatter_nd(sp.indices, sp.values, dims), axis, keepdims)
    if not output_is_sparse:
        return out
    reached = greater(_reduce_sum(scatter_nd(sp.indices, ones_like(sp.values, _dt.int32),
                                             dims), axis, keepdims), 0)
    indices = where(reached)
    return SparseTensor._make(indices, gather_nd(out, indices),
                              _shape(out, out_type=_dt.int64),
                              [d if isinstance(d, int) else None for d in out._shape])


def reorder(sp_input, name=None) -> SparseTensor:
    """The entries in row-major (canonical) order.

    Example: `tf.sparse.reorder(sp).indices` is sorted.
    """
    sp = _sparse("sparse.reorder", sp_input)
    order = argsort(_linear(sp.indices, sp.dense_shape), stable=True)
    return SparseTensor._make(gather(sp.indices, order), gather(sp.values, order),
                              sp.dense_shape, sp.shape)


def retain(sp_input, to_retain) -> SparseTensor:
    """The entries where the boolean vector `to_retain` is True.

    Example: `tf.sparse.retain(sp, [False, True])` keeps the second entry.
    """
    sp = _sparse("sparse.retain", sp_input)
    keep = convert_to_tensor(to_retain, dtype=_dt.bool)
    if keep.ndim != 1:
        raise ValueError(f"sparse.retain: to_retain must be a vector, got shape "
                         f"{list(keep._shape)}")
    return SparseTensor._make(boolean_mask(sp.indices, keep), boolean_mask(sp.values, keep),
                              sp.dense_shape, sp.shape)


def reshape_sparse(sp_input, shape, name=None) -> SparseTensor:
    """The same entries in a dense shape of as many elements (one entry may be -1).

    Example: `tf.sparse.reshape(sp, [-1])` flattens.
    """
    sp = _sparse("sparse.reshape", sp_input)
    new = convert_to_tensor(shape, dtype=_dt.int64)
    total = reduce_prod(sp.dense_shape)
    known = reduce_prod(where(less(new, 0), ones_like(new), new))
    new = where(less(new, 0), ones_like(new) * floordiv(total, known), new)
    static = None
    if not is_symbolic(new):
        static = [int(d) for d in new.numpy()]
        if _eager() and int(total.numpy()) != int(reduce_prod(new).numpy()):
            raise InvalidArgumentError(
                f"SparseReshape: cannot reshape a tensor of shape {list(sp.shape)} "
                f"({int(total.numpy())} elements) into shape {static}")
    return SparseTensor._make(_unravel(_linear(sp.indices, sp.dense_shape), new), sp.values,
                              new, static)


def transpose_sparse(sp_input, perm=None, name=None) -> SparseTensor:
    """The entries with their index columns permuted (reversed by default), reordered.

    Example: `tf.sparse.transpose(sp).shape` -> [4, 3] for `sp` of shape [3, 4].
    """
    sp = _sparse("sparse.transpose", sp_input)
    rank = len(sp.shape)
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise InvalidArgumentError(f"sparse.transpose: perm {perm} is not a permutation of "
                                   f"the {rank} axes")
    static = [list(sp.shape)[p] for p in perm]
    out = SparseTensor._make(gather(sp.indices, perm, axis=1), sp.values,
                             gather(sp.dense_shape, perm), static)
    return reorder(out)


def slice_sparse(sp_input, start, size, name=None) -> SparseTensor:
    """The entries inside the box `[start, start + size)`, shifted to start at 0 (the box
    clipped to the dense shape).

    Example: `tf.sparse.slice(sp, [1, 0], [2, 4])`.
    """
    sp = _sparse("sparse.slice", sp_input)
    start = convert_to_tensor(start, dtype=_dt.int64)
    size = convert_to_tensor(size, dtype=_dt.int64)
    end = start + size
    inside = reduce_all(logical_and(greater_equal(sp.indices, start[None, :]),
                                    less(sp.indices, end[None, :])), axis=1)
    shape = maximum(minimum(end, sp.dense_shape) - start, zeros([], _dt.int64))
    return SparseTensor._make(boolean_mask(sp.indices, inside) - start[None, :],
                              boolean_mask(sp.values, inside), shape,
                              _shape_from(shape, [None] * len(sp.shape)))


def concat_sparse(axis, sp_inputs, expand_nonconcat_dims=False, name=None) -> SparseTensor:
    """The sparse tensors side by side along `axis` (the other dims must agree), in
    row-major order.

    Example: `tf.sparse.concat(1, [a, b])`.
    """
    sps = [_sparse("sparse.concat", s, "sp_inputs") for s in sp_inputs]
    if not sps:
        raise ValueError("sparse.concat: sp_inputs is empty")
    rank = len(sps[0].shape)
    axis = int(axis) % rank
    sizes = stack([s.dense_shape[axis] for s in sps])
    offsets = cumsum(sizes, exclusive=True)
    onehot = cast(stack([1 if i == axis else 0 for i in range(rank)]), _dt.int64)
    indices = concat([s.indices + offsets[k] * onehot[None, :] for k, s in enumerate(sps)], 0)
    values = concat([s.values for s in sps], 0)
    if expand_nonconcat_dims:
        base = sps[0].dense_shape
        for s in sps[1:]:
            base = maximum(base, s.dense_shape)
    else:
        base = sps[0].dense_shape
    dense_shape = base * (1 - onehot) + _reduce_sum(sizes) * onehot
    static = list(sps[0].shape)
    static[axis] = None
    return reorder(SparseTensor._make(indices, values, dense_shape,
                                      _shape_from(dense_shape, static)))
