"""Variable: a mutable holder of a tensor value. Reads and assignments are ops (defined
in ops/state.py, run through their primitive bindings), so tapes and tracers see them."""
from __future__ import annotations

import itertools
import threading

import numpy as np

from . import dtypes as _dt, prims, registry as _reg
from .context import ctx, hooks
from .convert import convert_to_tensor
from .dispatch import run_kernel
from .errors import InvalidArgumentError
from .indexed_slices import IndexedSlices
from .memory import share
from .tensor import _ids, _Ref, numpy_text, Resource, Tensor, TensorShape


def own_copy(value, dtype=None) -> Tensor:
    """A variable's own copy of `value`: shares the buffer, owned by no tidy scope."""
    t = convert_to_tensor(value, dtype=dtype)
    own = share(t, track=False)
    own._kept = True
    return own


class Variable(Resource):
    """A mutable holder of a tensor value; reads are watched by tapes automatically.

    Example:
        >>> v = tf.Variable([1.0, 2.0]); v.assign_add([1.0, 1.0]).numpy()
        array([2., 3.], dtype=float32)
    """

    _counter = itertools.count()
    __array_priority__ = 100  # `ndarray + Variable` defers to Variable.__radd__, as for Tensor

    def __init__(self, initial_value=None, trainable: bool = True, name: str | None = None,
                 dtype=None, shape=None):
        if initial_value is None:
            raise ValueError("Variable: initial_value is required")
        lifting = ctx.graph is not None and hooks.lift is not None
        if lifting:  # created while a function is traced: made eagerly, once, outside it
            initial_value = hooks.lift(initial_value, self)
        elif callable(initial_value):
            initial_value = initial_value()
        self._value: Tensor = own_copy(initial_value, dtype)
        self.id = next(_ids)
        # held by the state ops (ops/state.py) while they read or replace `_value`, so
        # that updates from several threads are atomic (4 x 1000 assign_add(1) = 4000)
        self._lock = threading.RLock()  # re-entered: a deferred restore assigns on first read
        self.trainable = bool(trainable)
        # as in eager TF, the enclosing name scope prefixes the name ("dense/kernel")
        scope = ctx.name_scopes[-1] if ctx.name_scopes else ""
        self._name = scope + (name if name is not None else "Variable")
        self._declared_shape = TensorShape(shape) if shape is not None else None
        if ctx.variable_observers:  # a restore waiting for variables (deferred restoration)
            for observer in tuple(ctx.variable_observers):
                observer.variable_created(self)

    # --- metadata
    @property
    def name(self) -> str:
        """TF-style name with the output index, e.g. 'weights:0'."""
        return f"{self._name}:0"

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value._shape)

    @property
    def _shape(self):
        return self._value._shape

    @property
    def dtype(self) -> _dt.DType:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value._shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def device(self) -> str:
        """TF's full name of the device holding the value (read without recording)."""
        return self._value.device

    # --- reading
    def read_value(self) -> Tensor:
        """The current value as a Tensor (watched by active tapes if trainable)."""
        return prims.read_variable_op(self)

    def value(self) -> Tensor:
        return prims.read_variable_op(self)

    def numpy(self) -> np.ndarray:
        if ctx.tapes:  # tape.explain() names this NumPy round trip
            hooks.note_event("variable_numpy", self.id)
        return self._value.numpy()

    def __array__(self, dtype=None, copy=None):
        if ctx.tapes:
            hooks.note_event("variable_numpy", self.id)
        # a copy: the variable may later be updated in place
        return self._value.__array__(dtype, True)

    # --- writing
    def _check(self, value, what):
        t = convert_to_tensor(value, dtype=self.dtype)
        allowed = self._declared_shape
        if allowed is not None:
            if not allowed.is_compatible_with(t._shape):
                raise InvalidArgumentError(f"Variable.{what}: shape {t._shape} is not "
                                           f"compatible with the declared shape {allowed}")
        elif t._shape != self._value._shape:
            raise InvalidArgumentError(
                f"Variable.{what}: shape {t._shape} does not match variable {self.name!r} "
                f"of shape {self._value._shape}; create the variable with shape=[None, ...] "
                "to allow shape changes")
        return t

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        """Replace the value; returns the variable."""
        prims.assign_variable_op(self, self._check(value, "assign"))
        return self

    def assign_add(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        """Add `delta` (in place when no tensor shares the value); returns the variable."""
        prims.assign_add_variable_op(self, self._check(delta, "assign_add"))
        return self

    def assign_sub(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        """Subtract `delta` (in place when no tensor shares the value); returns the variable."""
        prims.assign_sub_variable_op(self, self._check(delta, "assign_sub"))
        return self

    def scatter_add(self, sparse_delta: "IndexedSlices", use_locking: bool = False,
                    name=None):
        """Add an IndexedSlices to the rows it names (duplicates add up); only those rows
        are touched. Returns the variable.

        Example:
            >>> v = tf.Variable(tf.zeros([3])); v.scatter_add(tf.IndexedSlices(
            ...     tf.constant([1., 2.]), tf.constant([2, 2]))).numpy()
            array([0., 0., 3.], dtype=float32)
        """
        return self._scatter(sparse_delta, "ResourceScatterAdd")

    def scatter_sub(self, sparse_delta: "IndexedSlices", use_locking: bool = False,
                    name=None):
        """Subtract an IndexedSlices from the rows it names; returns the variable."""
        _check_slices(sparse_delta, "scatter_sub")
        return self.scatter_add(-sparse_delta)

    def scatter_update(self, sparse_delta: "IndexedSlices", use_locking: bool = False,
                       name=None):
        """Replace the rows an IndexedSlices names by its values; returns the variable."""
        return self._scatter(sparse_delta, "ResourceScatterUpdate")

    def _scatter(self, sparse_delta, op: str) -> "Variable":
        """Run a sparse update op (`ResourceScatterAdd`/`ResourceScatterUpdate`) of
        `sparse_delta` (an IndexedSlices), checked by the op's shape rule first."""
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"{op}: sparse_delta must be an IndexedSlices, got "
                            f"{type(sparse_delta).__name__}")
        inputs = {"resource": self, "indices": sparse_delta.indices,
                  "updates": sparse_delta.values}
        _reg.SHAPES[op]({k: v._shape for k, v in inputs.items()},
                        {k: v.dtype for k, v in inputs.items()}, {})
        run_kernel(op, inputs)
        return self

    def __repr__(self):
        """TF 2's form: `<tf.Variable 'v:0' shape=(2,) dtype=float32, numpy=array([...])>`."""
        value = self._value
        if not value._buf:  # disposed value: describe the variable without reading it
            return f"<tf.Variable '{self.name}' shape={value._shape} dtype={self.dtype.name}>"
        return (f"<tf.Variable '{self.name}' shape={value._shape} dtype={self.dtype.name}, "
                f"numpy={numpy_text(value._read(), True)}>")

    def __hash__(self):
        return object.__hash__(self)

    def ref(self) -> _Ref:
        return _Ref(self)

    # tensors' operators and properties work on variables through a read
    def __getattr__(self, name):
        if name.startswith("__") or name in ("_value", "id", "_lock", "_binding", "default"):
            raise AttributeError(name)
        return getattr(self.read_value(), name)


class VariableSlot(Variable):
    """A variable argument of a traced function (tapeflow/function/trace.py): the graph
    reads and assigns this stand-in, which refers, for the duration of a call, to the
    variable that call passes, so a new variable of the same dtype and shape reuses the
    graph (TensorFlow keys variable arguments by dtype and shape). Outside a call it
    refers to the variable it was traced with.

    Example:
        >>> slot = VariableSlot(v1)
        >>> with bind_slots([(slot, v2)]):
        ...     slot.read_value()   # v2's value
    """

    def __init__(self, variable: Variable):  # noqa: super().__init__ would make a value
        self.id = next(_ids)
        self.default = variable
        self._binding = threading.local()

    def target(self) -> Variable:
        """The variable this slot refers to now (in this thread)."""
        bound = getattr(self._binding, "variable", None)
        return bound if bound is not None else self.default

    def _get_value(self):
        return self.target()._value

    def _set_value(self, value):
        self.target()._value = value

    _value = property(_get_value, _set_value)
    _lock = property(lambda self: self.target()._lock)
    trainable = property(lambda self: self.target().trainable)
    _name = property(lambda self: self.target()._name)
    _declared_shape = property(lambda self: self.target()._declared_shape)

    def __repr__(self):
        return f"<variable argument, now {self.target()!r}>"


class bind_slots:
    """`with bind_slots([(slot, variable), ...]):` makes each slot refer to its variable
    in this thread (restored after; nests)."""

    __slots__ = ("pairs", "saved")

    def __init__(self, pairs):
        self.pairs = pairs

    def __enter__(self):
        self.saved = [getattr(s._binding, "variable", None) for s, _ in self.pairs]
        for s, v in self.pairs:
            s._binding.variable = v
        return self

    def __exit__(self, *exc):
        for (s, _), old in zip(self.pairs, self.saved):
            s._binding.variable = old
        return False


def _forward_operator(name):
    def method(self, *args):
        return getattr(self.read_value(), name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
              "__getitem__", "__len__", "__iter__", "__float__", "__int__", "__bool__",
              "__index__", "__and__", "__or__", "__invert__", "__pos__", "__xor__",
              "__rand__", "__ror__", "__rxor__", "__complex__"):
    setattr(Variable, _name, _forward_operator(_name))
Variable.__hash__ = object.__hash__


def _check_slices(sparse_delta, what):
    if not isinstance(sparse_delta, IndexedSlices):
        raise TypeError(f"Variable.{what}: sparse_delta must be an IndexedSlices, got "
                        f"{type(sparse_delta).__name__}")
