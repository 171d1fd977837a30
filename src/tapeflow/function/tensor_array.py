"""`TensorArray`: a list of same-dtype tensors written one index at a time.

Eagerly it is a Python list (TensorFlow's eager TensorArray): `write` stores the tensor and
returns the array itself; a tape sees the ops that made the elements and `stack`.

While tracing it is a buffer tensor [size, *element_shape] updated functionally: `write`
returns a new TensorArray whose buffer is `tensor_scatter_nd_update(buffer, [[i]], [v]))`
(grown first with TensorListResize when `dynamic_size`), so gradients flow through
ordinary ops. It is a nest composite whose one leaf is its buffer: `while_loop` and `cond`
carry it as that tensor. An array whose element shape is unknown when it enters a loop gets
it from a probe trace of the loop body (`shape_loop_arrays`).

Limits in graph mode: every element has one shape (concat joins equal pieces), and reads
of unwritten elements give zeros.
"""
from __future__ import annotations

from .._core import nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dtypes import as_dtype, DType, int32
from .._core.errors import describe, InvalidArgumentError
from .._core.tensor import SYMBOLIC, Tensor, TensorShape
from .._core.variable import Variable
from ..ops import (array as array_ops, creation as creation_ops, indexing as indexing_ops,
                   math as math_ops, reduction as reduction_ops)
from ..ops.tensor_array import resize_axis
from .graph import FuncGraph, tracing

__all__ = ["TensorArray"]


def _static_int(x):
    """`x` as a Python int when its value is known now (a number or an eager tensor)."""
    if isinstance(x, Tensor):
        return None if x._buf == SYMBOLIC else int(x.numpy())
    return int(x)


def _shape_or_none(shape) -> TensorShape | None:
    if shape is None:
        return None
    s = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    return None if s.rank is None else s


class TensorArray:
    """A TensorArray (tf.TensorArray): `write`, `read`, `stack`, `unstack`, `gather`,
    `scatter`, `concat`, `size`; usable as a loop variable of `while_loop`.

    Writing past `size` raises unless `dynamic_size`; reading an element never written
    gives zeros when the element shape is known, else raises. `clear_after_read` is
    accepted and ignored: elements stay readable.

    Example:
        >>> ta = tf.TensorArray(tf.float32, size=3)
        >>> for i in range(3):
        ...     ta = ta.write(i, tf.constant(float(i)) * 2.0)
        >>> ta.stack().numpy()
        array([0., 2., 4.], dtype=float32)
    """

    def __init__(self, dtype, size=0, dynamic_size=False, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None or flow is not None:
            raise ValueError("TensorArray: handle and flow are TF1 graph details that "
                             "tapeflow does not support")
        self._dtype = dtype if isinstance(dtype, DType) else as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = _shape_or_none(element_shape)
        self._name = name or tensor_array_name or "TensorArray"
        self._graph = ctx.graph is not None
        if size is None:
            size = 0
        if isinstance(size, Variable):
            size = size.read_value()
        if isinstance(size, Tensor) and (size._shape != () or not size.dtype.is_integer):
            raise InvalidArgumentError(f"TensorArray: size must be an integer scalar, got "
                                       f"{describe(size)}")
        n = _static_int(size)
        if n is not None and n < 0:
            raise InvalidArgumentError(f"TensorArray: size must be >= 0, got {n}")
        self._size = size  # what was given: a number or a scalar tensor
        if self._graph:
            self._elements = None
            self._buffer = None
            if self._full_shape() is not None:
                self._buffer = self._new_buffer(self._full_shape())
        else:
            if n is None:
                raise InvalidArgumentError("TensorArray: a symbolic size outside a traced "
                                           "function")
            self._elements = [None] * n
            self._buffer = None

    # ------------------------------------------------------------------ properties
    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape if self._element_shape is not None else TensorShape(None)

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    @property
    def handle(self):
        return self._buffer

    @property
    def flow(self):
        return self._buffer

    def __repr__(self) -> str:
        return (f"<tf.TensorArray dtype={self._dtype.name} element_shape={self.element_shape}"
                f" dynamic_size={self._dynamic_size}>")

    # ------------------------------------------------------------------ nest composite
    def _composite_flatten(self) -> list:
        if not self._graph:
            return [self]  # eagerly a loop carries the array itself
        return [] if self._buffer is None else [self._buffer]

    def _composite_unflatten(self, leaves):
        if not self._graph:
            return next(leaves)
        if self._buffer is None:
            return self._with(None)
        buffer = next(leaves)
        return self._with(buffer if isinstance(buffer, Tensor) else convert_to_tensor(buffer))

    def _with(self, buffer) -> "TensorArray":
        new = object.__new__(TensorArray)
        new.__dict__.update(self.__dict__)
        new._buffer = buffer
        if buffer is not None and new._element_shape is None:
            new._element_shape = TensorShape(buffer._shape[1:])
        return new

    # ------------------------------------------------------------------ helpers
    def _full_shape(self) -> tuple | None:
        s = self._element_shape
        if s is None or any(d is None for d in s):
            return None
        return tuple(s)

    def _new_buffer(self, element_shape: tuple) -> Tensor:
        n = _static_int(self._size)
        if n is not None and not self._dynamic_size:
            return creation_ops.zeros((n,) + element_shape, self._dtype)
        size = self._size if isinstance(self._size, Tensor) else convert_to_tensor(n, int32)
        return resize_axis(creation_ops.zeros((0,) + element_shape, self._dtype), size)

    def _value(self, value, what: str) -> Tensor:
        if isinstance(value, Variable):
            value = value.read_value()
        if not isinstance(value, Tensor):
            try:
                value = convert_to_tensor(value, dtype=self._dtype)
            except (TypeError, ValueError, InvalidArgumentError) as e:
                raise TypeError(f"TensorArray.{what}: cannot convert {value!r:.60} to "
                                f"{self._dtype.name}: {e}") from None
        if value.dtype is not self._dtype:
            raise InvalidArgumentError(
                f"TensorArray.{what}: TensorArray dtype is {self._dtype.name} but the value "
                f"written is {describe(value)}")
        return value

    def _check_element(self, shape: tuple, what: str) -> None:
        if self._element_shape is not None:
            if not self._element_shape.is_compatible_with(TensorShape(shape)):
                raise ValueError(f"TensorArray.{what}: incompatible shape for value "
                                 f"({list(shape)}), expected ({self._element_shape})")
            return
        if self._infer_shape:
            self._element_shape = TensorShape(shape)

    def _index(self, index, what: str):
        if isinstance(index, Variable):
            index = index.read_value()
        if isinstance(index, Tensor):
            if index._shape != () or not index.dtype.is_integer:
                raise InvalidArgumentError(f"TensorArray.{what}: index must be an integer "
                                           f"scalar, got {describe(index)}")
        elif isinstance(index, bool) or not isinstance(index, int):
            try:
                index = int(index)
            except (TypeError, ValueError):
                raise TypeError(f"TensorArray.{what}: index must be an int, got "
                                f"{index!r:.60}") from None
        n = _static_int(index)
        if n is not None and n < 0:
            raise InvalidArgumentError(f"TensorArray.{what}: index {n} is negative")
        return index

    def _need_buffer(self, what: str) -> Tensor:
        if self._buffer is None:
            raise ValueError(f"TensorArray.{what}: the element shape is unknown and nothing "
                             "was written; give element_shape= or write first")
        return self._buffer

    def _eager_zeros(self, what: str, i: int) -> Tensor:
        shape = self._full_shape()
        if shape is None:
            raise InvalidArgumentError(
                f"TensorArray.{what}: could not read index {i}: it was never written and the "
                "element shape is not fully defined")
        return creation_ops.zeros(shape, self._dtype)

    def _check_range(self, i: int, n: int, what: str) -> None:
        if i >= n:
            raise InvalidArgumentError(
                f"TensorArray.{what}: tried to read from index {i} but array size is: {n}")

    # ------------------------------------------------------------------ writing
    def write(self, index, value, name=None) -> "TensorArray":
        """The array with `value` at `index` (eagerly: this array, updated)."""
        index = self._index(index, "write")
        value = self._value(value, "write")
        if not self._graph:
            if index >= len(self._elements) and not self._dynamic_size:
                raise InvalidArgumentError(
                    f"TensorArray.write: tried to write to index {index} but array is not "
                    f"resizeable and size is: {len(self._elements)}")
            self._check_element(value._shape, "write")
            if index >= len(self._elements):
                self._elements.extend([None] * (index + 1 - len(self._elements)))
            self._elements[index] = value
            return self
        self._check_element(value._shape, "write")
        buffer = self._buffer
        if buffer is None:
            buffer = self._new_buffer(tuple(value._shape))
        i = index if isinstance(index, Tensor) else convert_to_tensor(index, int32)
        n, k = _static_int(self._size), _static_int(i)
        if self._dynamic_size:
            size = math_ops.maximum(array_ops.shape(buffer, i.dtype)[0], i + 1)
            buffer = resize_axis(buffer, size)
        elif n is not None and k is not None and k >= n:
            raise InvalidArgumentError(
                f"TensorArray.write: tried to write to index {k} but array is not resizeable "
                f"and size is: {n}")
        buffer = indexing_ops.tensor_scatter_nd_update(buffer, array_ops.reshape(i, [1, 1]),
                                              array_ops.expand_dims(value, 0))
        return self._with(buffer)

    def unstack(self, value, name=None) -> "TensorArray":
        """The array holding the pieces of `value` along its first axis."""
        value = self._value(value, "unstack")
        if value.ndim < 1:
            raise InvalidArgumentError(f"TensorArray.unstack: value must have rank >= 1, got "
                                       f"{describe(value)}")
        self._check_element(value._shape[1:], "unstack")
        if not self._graph:
            pieces = array_ops.unstack(value)
            if len(pieces) > len(self._elements) and not self._dynamic_size:
                raise InvalidArgumentError(
                    f"TensorArray.unstack: cannot unstack {len(pieces)} elements into an "
                    f"array of size {len(self._elements)} (not resizeable)")
            if len(pieces) > len(self._elements):
                self._elements.extend([None] * (len(pieces) - len(self._elements)))
            self._elements[:len(pieces)] = pieces
            return self
        n, m = _static_int(self._size), value._shape[0]
        if n is not None and m is not None and m > n and not self._dynamic_size:
            raise InvalidArgumentError(
                f"TensorArray.unstack: cannot unstack {m} elements into an array of size {n}")
        if self._dynamic_size:
            value = resize_axis(value, array_ops.shape(value)[0])  # first dim unknown, as loops
        return self._with(value)

    def scatter(self, indices, value, name=None) -> "TensorArray":
        """The array with `value[k]` at `indices[k]`."""
        value = self._value(value, "scatter")
        if not self._graph:
            idx = [int(i) for i in (indices.numpy() if isinstance(indices, Tensor)
                                    else indices)]
            if value.ndim < 1 or value._shape[0] != len(idx):
                raise InvalidArgumentError(
                    f"TensorArray.scatter: value {describe(value)} must have {len(idx)} "
                    f"elements along its first axis, one per index")
            for i, piece in zip(idx, array_ops.unstack(value, num=len(idx))):
                self.write(i, piece)
            return self
        idx = indices if isinstance(indices, Tensor) else convert_to_tensor(indices, int32)
        self._check_element(value._shape[1:], "scatter")
        buffer = self._buffer
        if buffer is None:
            buffer = self._new_buffer(tuple(value._shape[1:]))
        if self._dynamic_size:
            top = reduction_ops.reduce_max(array_ops.concat([array_ops.reshape(idx, [-1]) + 1,
                                             array_ops.shape(buffer, idx.dtype)[:1]], 0))
            buffer = resize_axis(buffer, top)
        buffer = indexing_ops.tensor_scatter_nd_update(buffer, array_ops.expand_dims(idx, -1),
                                                       value)
        return self._with(buffer)

    # ------------------------------------------------------------------ reading
    def read(self, index, name=None) -> Tensor:
        """The element at `index` (zeros if never written and the shape is known)."""
        index = self._index(index, "read")
        if not self._graph:
            self._check_range(index, len(self._elements), "read")
            v = self._elements[index]
            return v if v is not None else self._eager_zeros("read", index)
        return indexing_ops.gather(self._need_buffer("read"), index)

    def stack(self, name=None) -> Tensor:
        """All elements stacked along a new first axis."""
        if not self._graph:
            if not self._elements:
                shape = self._full_shape()
                return creation_ops.zeros((0,) + (shape if shape is not None else ()), self._dtype)
            return array_ops.stack([v if v is not None else self._eager_zeros("stack", i)
                              for i, v in enumerate(self._elements)])
        return array_ops.identity(self._need_buffer("stack"))

    def gather(self, indices, name=None) -> Tensor:
        """The elements at `indices`, stacked."""
        if not self._graph:
            idx = [int(i) for i in (indices.numpy() if isinstance(indices, Tensor)
                                    else indices)]
            if not idx:
                shape = self._full_shape()
                return creation_ops.zeros((0,) + (shape if shape is not None else ()), self._dtype)
            return array_ops.stack([self.read(i) for i in idx])
        return indexing_ops.gather(self._need_buffer("gather"), indices)

    def concat(self, name=None) -> Tensor:
        """The elements joined along their first axis."""
        if not self._graph:
            pieces = [v if v is not None else self._eager_zeros("concat", i)
                      for i, v in enumerate(self._elements)]
            if any(p.ndim == 0 for p in pieces):
                raise InvalidArgumentError("TensorArray.concat: elements must have rank >= 1")
            if not pieces:
                shape = self._full_shape() or (0,)
                return creation_ops.zeros((0,) + tuple(shape[1:]), self._dtype)
            return array_ops.concat(pieces, 0) if len(pieces) > 1 else array_ops.identity(pieces[0])
        buffer = self._need_buffer("concat")
        if buffer.ndim < 2:
            raise InvalidArgumentError("TensorArray.concat: elements must have rank >= 1")
        return array_ops.reshape(buffer, [-1] + list(buffer._shape[2:]))

    def size(self, name=None) -> Tensor:
        """The number of elements, an int32 scalar."""
        if not self._graph:
            return convert_to_tensor(len(self._elements), int32)
        if self._buffer is not None:
            return array_ops.shape(self._buffer, int32)[0]
        n = _static_int(self._size)
        return convert_to_tensor(n, int32) if n is not None else math_ops.cast(self._size, int32)

    def close(self, name=None):
        return None

    def identity(self) -> "TensorArray":
        return self


# ---------------------------------------------------------------------- loops


def _arrays_in(structure) -> list:
    found = []

    def walk(s):
        if isinstance(s, TensorArray):
            found.append(s)
        elif isinstance(s, dict):
            for k in nest._sorted_keys(s):
                walk(s[k])
        elif isinstance(s, (list, tuple)):
            for v in s:
                walk(v)
    walk(structure)
    return found


def shape_loop_arrays(structure, run_body, strict: bool = True):
    """`structure` with graph-mode TensorArrays that have no buffer yet (unknown element
    shape) given one, shaped by what `run_body(structure)` writes into them: the body is
    traced once into a throwaway graph to find out. Not `strict` (a branch of an `if`,
    which may write nothing): an array the body leaves unshaped stays as it is."""
    pending = [ta for ta in _arrays_in(structure) if ta._graph and ta._buffer is None]
    if not pending:
        return structure
    probe = FuncGraph("tensor_array_probe")
    with tracing(probe):
        flat = [probe.placeholder(t._shape, t.dtype) if isinstance(t, Tensor) else t
                for t in nest.flatten(structure)]
        out = run_body(nest.pack_sequence_as(structure, flat))
    before, after = _arrays_in(structure), _arrays_in(out)
    if len(before) != len(after):
        return structure  # while_loop reports the structure mismatch
    shaped = {}
    for ta, new in zip(before, after):
        if ta._graph and ta._buffer is None:
            if new._buffer is None or any(d is None for d in new._buffer._shape[1:]):
                if not strict:
                    continue
                wrote = describe(new._buffer) if new._buffer is not None else "nothing"
                raise ValueError(
                    f"TensorArray used as a loop variable has no known element shape (the "
                    f"loop body writes {wrote}); give element_shape= when creating it")
            shaped[id(ta)] = ta._with(ta._new_buffer(tuple(new._buffer._shape[1:])))

    def swap(s):
        if isinstance(s, TensorArray):
            return shaped.get(id(s), s)
        if isinstance(s, dict):
            return type(s)((k, swap(v)) for k, v in s.items())
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[swap(v) for v in s])
        if isinstance(s, (list, tuple)):
            return type(s)(swap(v) for v in s)
        return s
    return swap(structure)
