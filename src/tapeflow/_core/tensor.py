"""Tensor, TensorShape, TensorSpec, the Buffer under tensors, Resource (variables' base)."""
from __future__ import annotations

import itertools
import weakref
from typing import Iterable

import numpy as np

from . import dtypes as _dt
from .backends import REGISTRY as _backends
from .context import ctx, hooks
from .device import devices
from .errors import DisposedError, InvalidArgumentError, OperatorNotAllowedInGraphError, user_site

_ids = itertools.count(1)  # tensor and variable ids: one sequence, never reused
# Engine accounting (all backends together): live tensors, live data buffers, bytes in
# those buffers. Module-level so that Tensor.__del__ updates it without a call.
counters = [0, 0, 0]
# Callables told the id of every tensor that dies (tapes' delete_trace, accumulators).
death_listeners: list = []
# Ids of engine constants (cached scalar operands): shared, never disposed.
pinned_ids: set = set()
# Ids of tensors made from Python or NumPy values while a function is traced: a graph
# holds them as constants (Const nodes), not as captured inputs. An entry goes when its
# tensor dies (ids are never reused).
traced_constants: dict = {}


def mark_traced_constant(t: "Tensor") -> None:
    """Note that `t` holds a value written in traced code (a graph constant)."""
    key = t.id
    traced_constants[key] = weakref.ref(t, lambda _, key=key: traced_constants.pop(key, None))
# The `_buf` of a symbolic tensor (traced, no value); falsy like None, but not disposed.
SYMBOLIC = ()


class SymbolicValueError(OperatorNotAllowedInGraphError, AttributeError):
    """`.numpy()` on a symbolic tensor (traced, or leaked out of a traced function)."""


def device_name(backend) -> str:
    """TF's full device name of the device a backend object serves ("" if none)."""
    for kind, index, name in devices():
        entry = _backends.entries.get(name)
        if entry is not None and entry.instance is backend:
            return f"/job:localhost/replica:0/task:0/device:{kind}:{index}"
    return ""


def is_tensor(x) -> bool:
    """True for tapeflow tensor types (Tensor, Variable, IndexedSlices), as `tf.is_tensor`.

    Example:
        >>> tf.is_tensor(tf.constant(1.0)), tf.is_tensor(1.0)
        (True, False)
    """
    # IndexedSlices (defined above, with conversion) says so itself, as TF's
    # `is_tensor_like` types do
    return isinstance(x, (Tensor, Resource)) or getattr(type(x), "_is_tensor_like", False)


class Resource:
    """Base of the stateful objects ops take as "resource" inputs (Variable): dispatch,
    memory and conversion recognise a variable by this type, and read its current value
    tensor as `_value`, without importing the class that gives it its methods."""

    __slots__ = ()


class Buffer:
    """Backend data shared by the tensors that view it (reshape, identity share one).

    Bytes are counted once per buffer; the data is freed in its backend when the last
    tensor viewing it lets go (Tensor.__del__), whether by dispose(), a tidy scope or
    the garbage collector.
    """

    __slots__ = ("native", "data_id", "backend", "nbytes", "refs")

    def __init__(self, native, data_id: int, backend, nbytes: int, refs: int = 1):
        self.native, self.data_id, self.backend = native, data_id, backend
        self.nbytes, self.refs = nbytes, refs



class TensorShape(tuple):
    """A tuple of dimensions, where `None` is an unknown dimension.

    Example:
        >>> s = TensorShape([2, None]); s.rank, s.as_list(), s == (2, None)
        (2, [2, None], True)
    """

    def __new__(cls, dims: Iterable | None = ()):
        if dims is None:
            dims = ()
        if isinstance(dims, int):
            dims = (dims,)
        return super().__new__(cls, (None if d is None else int(d) for d in dims))

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def ndims(self) -> int:
        return len(self)

    def as_list(self) -> list:
        return list(self)

    def __eq__(self, other):
        """Like TF: equal to a TensorShape, tuple or list with the same dimensions."""
        if isinstance(other, (list, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def num_elements(self) -> int | None:
        if any(d is None for d in self):
            return None
        n = 1
        for d in self:
            n *= d
        return n

    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self)

    def is_compatible_with(self, other) -> bool:
        other = TensorShape(other)
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return TensorShape(out) if isinstance(key, slice) else out

    def __repr__(self) -> str:
        return f"TensorShape({list(self)})"

    def __str__(self) -> str:
        """Like TF: `(None, 3)`, `(2,)`, `()`."""
        return str(tuple(self))


def numpy_text(arr: np.ndarray, is_repr: bool) -> str:
    """A value as TF prints it in a tensor's repr (`is_repr`) or str: NumPy's repr or str,
    a scalar as its plain value (`1.5`), and a multi-line array on a line of its own."""
    if arr.ndim == 0:
        text = str(arr[()])
    else:
        text = np.array_repr(arr) if is_repr else str(arr)
    return "\n" + text if "\n" in text else text


class _Ref:
    """What `Tensor.ref()` returns: hashable by identity, `.deref()` gives the tensor."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._t is self._t


class Tensor:
    """An immutable n-dimensional array living in a backend, tracked by the engine.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([1.0, 2.0]); (x * 2 + 1).numpy()
        array([3., 5.], dtype=float32)
    """

    # _native: the array in backend _nb (a view with this tensor's shape); _buf: the shared
    # buffer record used for accounting: None once disposed, SYMBOLIC (an empty tuple, so a
    # single truth test skips both) for a symbolic tensor of a graph being traced.
    # _keras_mask: unset unless a Keras layer attaches the [batch, time] mask of its output
    # (TensorFlow's tensors take that attribute too; keras/layer.py reads and writes it).
    # _keras_logits: unset unless a Keras softmax or sigmoid made this tensor from those
    # logits (as Keras 3's TensorFlow backend marks them): its cross-entropies use them
    __slots__ = ("_native", "_nb", "_buf", "_shape", "dtype", "id", "_kept", "_keras_mask",
                 "_keras_logits", "__weakref__")
    __array_priority__ = 100  # make `ndarray + Tensor` defer to Tensor.__radd__

    # --- identity and metadata
    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def rank(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def is_disposed(self) -> bool:
        return self._buf is None

    @property
    def device(self) -> str:
        """The full name of the device holding the value, as TF spells it
        ("/job:localhost/replica:0/task:0/device:CPU:0"); "" for a symbolic tensor."""
        return device_name(self._buf.backend) if self._buf else ""

    def get_shape(self) -> TensorShape:
        return self.shape

    def ref(self) -> _Ref:
        return _Ref(self)

    __hash__ = object.__hash__

    # --- data access
    def numpy(self) -> np.ndarray:
        """A NumPy copy of the value (a scalar tensor gives a 0-d array's item type)."""
        if ctx.tapes:
            hooks.note_event("numpy", self.id)
        if self._buf == SYMBOLIC:
            # TF's symbolic tensors have no `numpy` attribute: raise what code written for
            # TF catches (AttributeError), still an OperatorNotAllowedInGraphError
            try:
                self._read()
            except OperatorNotAllowedInGraphError as e:
                raise SymbolicValueError(str(e)) from None
        arr = self._read()
        if arr.ndim == 0:
            return arr[()]  # a NumPy scalar, like TF
        return arr.copy()

    def __array__(self, dtype=None, copy=None):
        if ctx.tapes:
            hooks.note_event("numpy", self.id)
        arr = self._read()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        if copy:
            return arr.copy()
        view = arr.view()  # tensors are immutable: NumPy sees a read-only view
        view.flags.writeable = False
        return view

    def __dlpack__(self, *args, **kwargs):
        return self._read().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._read().__dlpack_device__()

    def dispose(self) -> None:
        """Release this tensor's data now (further use raises)."""
        self._release()

    def __del__(self):
        # The one place a tensor lets go of its buffer (inline: it runs for every tensor).
        buf = self._buf
        if not buf:  # disposed, or symbolic
            return
        counters[0] -= 1
        refs = buf.refs = buf.refs - 1
        if refs == 0:
            buf.backend.dispose_data(buf.data_id)
            counters[1] -= 1
            counters[2] -= buf.nbytes
            buf.native = None
        if death_listeners:
            for listener in list(death_listeners):
                listener(self.id)

    def _release(self) -> None:
        """Let go of the buffer now (dispose(), tidy): later use raises DisposedError."""
        if self._buf and self.id not in pinned_ids:
            self.__del__()
            self._buf = self._native = self._nb = None

    def _read(self) -> np.ndarray:
        """The value as a NumPy array (no copy when the backend's arrays are NumPy's)."""
        buf = self._buf
        if not buf:
            if buf is None:
                raise DisposedError(f"tensor {self.id} (shape {self._shape}, dtype "
                                    f"{self.dtype.name}) was disposed (by dispose() or the "
                                    "tidy scope that created it)")
            raise OperatorNotAllowedInGraphError(
                f"the symbolic tensor {self.name} (shape {list(self._shape)}, dtype "
                f"{self.dtype.name}) has no value while a function is being traced, at "
                f"{user_site()}: a Python bool, .numpy() or int() needs one. Use tf ops on "
                "it, and tf.cond / tf.while_loop for branches and loops that depend on it")
        native = self._native
        if type(native) is np.ndarray:
            return native
        arr = buf.backend.read(buf.data_id)
        return arr.reshape(self._shape) if arr.shape != self._shape else arr

    def __repr__(self) -> str:
        """TF 2's form: `<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], ...)>`;
        a symbolic tensor shows its graph name and static shape, never a value."""
        if self._buf is None:
            return f"<tf.Tensor: shape={self._shape}, dtype={self.dtype.name}, disposed>"
        if self._buf == SYMBOLIC:
            return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"
        return (f"<tf.Tensor: shape={self._shape}, dtype={self.dtype.name}, "
                f"numpy={numpy_text(self._read(), True)}>")

    def __format__(self, format_spec: str) -> str:
        """Format the value as NumPy formats it, as TF does: `f"{t:.3f}"` on a scalar; a
        non-empty spec on a non-scalar raises NumPy's TypeError, "" gives NumPy's str."""
        if not self._buf:  # disposed or symbolic: no value to format
            return object.__format__(self, format_spec)
        arr = self._read()
        return (arr[()] if arr.ndim == 0 else arr).__format__(format_spec)

    @property
    def name(self) -> str:
        """TF-style name: in a graph, the producing node and output index ('Sin_3:0')."""
        if self._buf == SYMBOLIC:
            return self._native.name  # a symbolic tensor keeps its origin in _native
        return f"tensor_{self.id}"

    def __str__(self) -> str:
        """TF 2's `print(t)` form: `tf.Tensor([1. 2.], shape=(2,), dtype=float32)`."""
        if self._buf == SYMBOLIC:  # TF's graph-tensor form
            return f'Tensor("{self.name}", shape={self._shape}, dtype={self.dtype.name})'
        if self._buf is None:
            return repr(self)
        return (f"tf.Tensor({numpy_text(self._read(), False)}, shape={self._shape}, "
                f"dtype={self.dtype.name})")

    # --- Python protocol
    def _scalar(self, kind):
        if self._shape != () and self.size != 1:
            raise InvalidArgumentError(
                f"{kind}() needs a tensor with one element, got shape {self._shape}")
        return self._read().reshape(()).item()

    def __bool__(self):
        if self._shape != ():
            raise InvalidArgumentError(
                "The truth value of a non-scalar tensor is ambiguous; use tf.reduce_any or "
                f"tf.reduce_all (shape {self._shape})")
        return bool(self._read())

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if not self.dtype.is_integer or self._shape != ():
            raise TypeError(f"only scalar integer tensors can be used as an index "
                            f"(got {self.dtype.name} with shape {self._shape})")
        return int(self._read())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a scalar tensor")
        return self._shape[0]

    # Indexing, iteration and the arithmetic and comparison operators are the validating
    # public ops, installed on the class by tapeflow/ops/operators.py (as TensorFlow's
    # math_ops overrides Tensor's operators): the engine below the ops needs none of them.


class TensorSpec:
    """Shape (with `None` for unknown dimensions), dtype and name of an expected tensor.

    Example:
        >>> TensorSpec([None, 3], tf.float32).is_compatible_with(tf.zeros([5, 3]))
        True
    """

    def __init__(self, shape, dtype=_dt.float32, name: str | None = None):
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, t, name=None) -> "TensorSpec":
        return cls(t._shape, t.dtype, name)

    def is_compatible_with(self, other) -> bool:
        if isinstance(other, TensorSpec):
            return other.dtype is self.dtype and self.shape.is_compatible_with(other.shape)
        return (getattr(other, "dtype", None) is self.dtype
                and self.shape.is_compatible_with(tuple(other.shape)))

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype is other.dtype and self.name == other.name)

    def __hash__(self):
        return hash((tuple(self.shape), self.dtype.name, self.name))

    def __repr__(self):
        return (f"TensorSpec(shape={tuple(self.shape)}, dtype=tf.{self.dtype.name}, "
                f"name={self.name!r})")
