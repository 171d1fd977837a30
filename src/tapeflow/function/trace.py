"""`function`: Python functions traced into graphs, cached by input signature.

A `Function` keys its cache by the structure of the arguments with tensors (and NumPy
arrays) and variables replaced by their shape and dtype, objects with a
`__tf_tracing_type__` by their TraceType, and other values kept; a new key traces the
Python function once, with placeholders (and a VariableSlot per variable argument), into a
`ConcreteFunction`. Calling a concrete
function runs its compiled program; under a tape it is one recorded op
(`PartitionedCall`) whose gradient is itself a traced function (see backprop.py).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import logging
import re
import threading
import weakref
from typing import Callable

import numpy as np

from .._core import nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dtypes import DType
from .._core.errors import in_package, OpError, user_site
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable, VariableSlot
from ..ops.ragged import RaggedTensor, RaggedTensorSpec
from ..ops.sparse import SparseTensor, SparseTensorSpec
from .autograph import convert_entry
from .concrete import (_is_tensor_like, _leaf_key, _spec_of, _trace_type, ConcreteFunction,
                       SignatureMismatchError, TraceType)
from .graph import FuncGraph, tracing as _tracing

_log = logging.getLogger("tapeflow")
_run_eagerly = [False]
RETRACE_WARNING_AFTER = 5  # traces of one function before retracing is reported
RETRACE_WARNINGS_PER_KIND = 2  # then quiet, until the arguments change in a new way


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every `function` run its Python function eagerly (for debugging).

    Example: `tf.config.run_functions_eagerly(True)`.
    """
    _run_eagerly[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _run_eagerly[0]


@contextlib.contextmanager
def init_scope():
    """Leave every graph being traced, and pause tapes and forward accumulators, for the
    duration of the block (`tf.init_scope()`): what runs there runs eagerly, once per
    trace, as a variable's initializer does; the traced code captures its results.

    Example:
        >>> @tf.function
        ... def f(x):
        ...     with tf.init_scope():
        ...         table = tf.range(3.0)   # an eager tensor, captured by the graph
        ...     return x + table
    """
    saved = ctx.graph, ctx.tapes, ctx.accs
    ctx.graph, ctx.tapes, ctx.accs = None, [], []
    ctx.refresh()
    try:
        yield
    finally:
        ctx.graph, ctx.tapes, ctx.accs = saved
        ctx.refresh()


# ---------------------------------------------------------------------- the call op
# Argument specs remembered for the direct call path, per function: a function called with
# ever new shapes (under an input_signature with None dims) takes the general path after.
_DIRECT_SPECS = 256


class Function:
    """A Python function traced into graphs, one per input signature (`tf.function`).

    Example:
        >>> @tf.function
        ... def f(x):
        ...     return tf.sin(x) * 2.0
        >>> f(tf.constant([1.0])); f.experimental_get_tracing_count()
        1
    """

    converts_itself = True  # autograph converts its python_function when it traces

    def __init__(self, python_function: Callable, input_signature=None, autograph: bool = True,
                 reduce_retracing: bool = False, jit_compile=None, name: str | None = None):
        self.python_function = python_function
        self._signature = inspect.signature(python_function)
        self.input_signature = (tuple(input_signature) if input_signature is not None
                                else None)
        if self.input_signature is not None:
            for spec in nest.flatten(list(self.input_signature)):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"function: input_signature must hold TensorSpecs, got "
                                    f"{type(spec).__name__}")
        self.autograph = autograph
        self.reduce_retracing = reduce_retracing
        self.jit_compile = jit_compile
        functools.update_wrapper(self, python_function)
        self.__name__ = name or getattr(python_function, "__name__", "function")
        self._cache: dict = {}
        # (shape, dtype) of each argument, for calls of tensors alone -> the concrete
        # function (the cache key such a call would compute, found without binding)
        self._by_specs: dict = {}
        self._relaxed: list = []   # (structure key, specs, concrete) for reduce_retracing
        self._last_summary = None  # {argument: summary} of the latest trace
        self._general: dict = {}   # argument -> TensorSpec covering every trace (or None)
        self._warned: dict = {}    # kind of change -> retracing warnings given for it
        self._calls = 0
        self._lock = threading.RLock()
        self._tracing_count = 0
        self._converted = None     # the autograph-converted python_function, made once
        self._instances: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ methods
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:  # not weak-referenceable: one Function per call (no cache)
            bound = None
        if bound is None:
            bound = Function(self.python_function.__get__(instance, owner),
                             self.input_signature, self.autograph, self.reduce_retracing,
                             self.jit_compile, self.__name__)
            try:
                self._instances[instance] = bound
            except TypeError:
                pass
        return bound

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if not ctx.active and not kwargs and not _run_eagerly[0]:
            # the hot path of a training loop: tensors only, nothing recording; the
            # tensors' specs pick the concrete function an earlier call found
            key = []
            for a in args:
                if type(a) is not Tensor:
                    break
                key.append((a._shape, a.dtype))
            else:
                cf = self._by_specs.get(tuple(key))
                if cf is not None:
                    self._calls += 1
                    return cf._pack(cf._run_plain(args))
        if _run_eagerly[0] or ctx.graph is not None:
            # eagerly for debugging; inside another trace, traced into that graph
            fn = self.python_function if _run_eagerly[0] else self._traced_function()
            return fn(*args, **kwargs)
        self._calls += 1
        cf, flat, bind = self._concrete(args, kwargs, with_variables=True)
        if (not bind and not kwargs and len(flat) == len(args)
                and len(self._by_specs) < _DIRECT_SPECS
                and all(type(a) is Tensor and a is t for a, t in zip(args, flat))):
            with self._lock:
                self._by_specs[tuple([(a._shape, a.dtype) for a in args])] = cf
        return cf._pack(cf._call_flat(flat, bind))

    def _traced_function(self) -> Callable:
        """What tracing calls: with autograph, the function converted (once) so that its
        Python control flow on tensors becomes graph control flow."""
        if not self.autograph:
            return self.python_function
        if self._converted is None:
            self._converted = convert_entry(self.python_function)
        return self._converted

    def _bind(self, args, kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        return bound

    def _concrete(self, args, kwargs, with_variables: bool = False):
        """The concrete function for a call, tracing it if needed, and its flat tensors
        (and, `with_variables`, the variable each variable argument refers to)."""
        if self.input_signature is not None:
            cf, flat = self._concrete_for_signature(args, kwargs)
            return (cf, flat, None) if with_variables else (cf, flat)
        bound = self._bind(args, kwargs)
        items = list(bound.arguments.items())
        # composite tensors key and trace by their TypeSpec (placeholders of its component
        # specs), as TensorFlow: not by the sizes of their components
        spec_items = [(name, _as_specs(value)) for name, value in items]
        key = tuple((name, _tree(value), tuple(_leaf_key(v) for v in nest.flatten(value)))
                    for name, value in spec_items)
        variables = [v for _, value in items for v in nest.flatten(value)
                     if isinstance(v, Variable)]
        if len(variables) > 1:  # which variable arguments are the same variable
            key += (tuple(next(i for i, w in enumerate(variables) if w is v)
                          for v in variables),)
        with self._lock:
            cf = self._cache.get(key)
            if cf is None and self.reduce_retracing:
                cf = self._relaxed_match(spec_items)
            if cf is None:
                specs = self._specs_for(spec_items) if self.reduce_retracing else None
                cf = self._trace(spec_items, specs)
                self._cache[key] = cf
        flat = [_as_tensor(v) for _, value in items for v in nest.flatten(value)
                if _is_tensor_like(v)]
        if not with_variables:
            return cf, flat
        return cf, flat, dict(zip(cf.arg_slots, variables))

    def _concrete_for_signature(self, args, kwargs):
        sig = self.input_signature
        bound = self._bind(args, kwargs)
        values = list(bound.arguments.values())
        flat = []
        for i, spec_tree in enumerate(sig):
            if i >= len(values):
                raise TypeError(f"{self.__name__}: missing argument {i} of the input_signature")
            pairs = _pair_with_specs(spec_tree, values[i])
            if pairs is None:
                raise SignatureMismatchError(f"{self.__name__}: argument {i} does not match "
                                             f"the input_signature's structure {spec_tree}")
            for spec, leaf in pairs:
                t = leaf if isinstance(leaf, TensorSpec) else self._to_spec_dtype(leaf, spec, i)
                if not spec.is_compatible_with(t):
                    raise SignatureMismatchError(
                        f"{self.__name__}: argument {i} ({list(self._signature.parameters)[i]}"
                        f") of shape {list(t.shape)} and dtype {t.dtype.name} is not "
                        f"compatible with the input_signature's shape {list(spec.shape)} and "
                        f"dtype {spec.dtype.name}")
                flat.append(t)
        with self._lock:
            cf = self._cache.get("signature")
            if cf is None:
                names = list(self._signature.parameters)[:len(sig)]
                items = list(zip(names, sig)) + [(n, v) for n, v in
                                                 list(bound.arguments.items())[len(sig):]]
                cf = self._cache["signature"] = self._trace(items, None)
        return cf, [t for t in flat if isinstance(t, Tensor)]

    def _to_spec_dtype(self, value, spec: TensorSpec, i: int):
        """An argument given for a TensorSpec of input_signature, as TensorFlow converts it:
        NumPy arrays cast to the spec's dtype, Python values (lists, numbers) converted to
        it; tensors and variables are taken as they are (and must match)."""
        if isinstance(value, Variable):
            return value.read_value()
        if isinstance(value, Tensor):
            return value
        if isinstance(value, (np.ndarray, np.generic)):
            value = np.asarray(value).astype(spec.dtype.as_numpy_dtype, copy=False)
        try:
            return convert_to_tensor(value, dtype=spec.dtype)
        except (TypeError, ValueError) as e:
            raise SignatureMismatchError(
                f"{self.__name__}: argument {i} ({value!r:.60}) cannot be converted to the "
                f"input_signature's dtype {spec.dtype.name}: {e}") from None

    def _relaxed_match(self, items):
        structure = _structure_key(items)
        for skey, specs, cf in self._relaxed:
            if skey != structure:
                continue
            leaves = [v for _, value in items for v in nest.flatten(value)
                      if _is_tensor_like(v) or isinstance(v, TensorSpec)]
            if all(_covers(s, _spec_of(v)) for s, v in zip(specs, leaves)):
                return cf
        return None

    def _specs_for(self, items):
        """reduce_retracing: after a first trace of this structure, dims that differ from
        an earlier trace become None (one graph then serves both)."""
        structure = _structure_key(items)
        leaves = [_spec_of(v) for _, value in items for v in nest.flatten(value)
                  if _is_tensor_like(v) or isinstance(v, TensorSpec)]
        for skey, specs, _ in self._relaxed:
            if skey == structure:
                return [_generalize(a, b) for a, b in zip(specs, leaves)]
        return None

    # ------------------------------------------------------------------ tracing
    def _trace(self, items, relaxed_specs) -> ConcreteFunction:
        graph = FuncGraph(self.__name__)
        slots: dict = {}  # variable argument -> its VariableSlot
        result, sig_args, sig_kwargs, arg_names, n_args, order = self._run_python(
            graph, items, relaxed_specs, slots)
        if graph.created_variables:
            if self._tracing_count > 0:
                raise ValueError(_SINGLETON_VARIABLES)
            # As TF does: a function that creates variables is traced a second time, and
            # must create none then (`if self.w is None: self.w = tf.Variable(...)`), else
            # every call would need new ones
            check = FuncGraph(self.__name__)
            self._run_python(check, items, relaxed_specs, slots)
            if check.created_variables:
                raise ValueError(_SINGLETON_VARIABLES)
        self._tracing_count += 1
        self._note_trace(items)
        cf = ConcreteFunction(graph, (tuple(sig_args), sig_kwargs), result, n_args,
                              self.__name__, arg_names=arg_names)
        cf.jit_compile = self.jit_compile
        cf.arg_slots = order
        if self.reduce_retracing:
            specs = [s for s in (nest.flatten(list(sig_args)) + nest.flatten(sig_kwargs))
                     if isinstance(s, TensorSpec)]
            self._relaxed.append((_structure_key(items), specs, cf))
        return cf

    def _run_python(self, graph, items, relaxed_specs, slots: dict):
        """Call the (converted) Python function with placeholders for the tensor arguments
        and VariableSlots for the variable arguments (`slots`: made once per argument
        variable, in order) into `graph`; its result (graph tensors) and the signature."""
        leaf_specs = iter(relaxed_specs) if relaxed_specs is not None else None
        args, kwargs, sig_args, sig_kwargs, arg_names = [], {}, [], {}, []
        order: list = []  # the slot of each variable argument, in order
        n_args = 0
        kinds = {p.name: p.kind for p in self._signature.parameters.values()}

        def to_placeholder(v, arg_name):
            nonlocal n_args
            if _is_tensor_like(v) or isinstance(v, TensorSpec):
                spec = next(leaf_specs) if leaf_specs is not None else _spec_of(v)
                n_args += 1
                # named after the spec, else the argument, as TensorFlow names them
                label = getattr(spec, "name", None) or arg_name
                return graph.placeholder(spec.shape, spec.dtype, label), spec
            if isinstance(v, Variable) and not isinstance(v, VariableSlot):
                # a stand-in the graph reads and assigns: each call binds it to the
                # variable it passes, so one graph serves variables of this dtype and shape
                slot = slots.get(v)
                if slot is None:
                    slot = slots[v] = VariableSlot(v)
                order.append(slot)
                return slot, slot
            trace_type = _trace_type(v)
            if trace_type is not None:  # the value its TraceType traces with, as in TF
                return trace_type.placeholder_value(None), v
            return v, v

        for name, value in items:
            pairs = [to_placeholder(v, name) for v in nest.flatten(value)]
            if nest.is_nested(value):
                traced = nest.pack_sequence_as(value, [p for p, _ in pairs])
                spec = nest.pack_sequence_as(value, [s for _, s in pairs])
            else:
                traced, spec = pairs[0]
            kind = kinds.get(name)
            if kind == inspect.Parameter.VAR_POSITIONAL:
                args.extend(traced)
                sig_args.extend(spec)
                arg_names.extend([None] * len(spec))
            elif kind == inspect.Parameter.VAR_KEYWORD:
                kwargs.update(traced)
                sig_kwargs.update(spec)
            elif kind == inspect.Parameter.KEYWORD_ONLY:
                kwargs[name] = traced
                sig_kwargs[name] = spec
            else:
                args.append(traced)
                sig_args.append(spec)
                arg_names.append(name)
        with _tracing(graph):
            try:
                result = self._traced_function()(*args, **kwargs)
            except Exception as e:
                _name_user_code(e)
                raise
            if inspect.isgenerator(result):
                raise TypeError(
                    f"{self.__name__}: a tf.function must return zero or more Tensors or "
                    "None values, but the Python function is a generator (it returned a "
                    "generator object); return a tensor (e.g. collect the values with "
                    "tf.TensorArray) instead of yielding")
            result = nest.map_structure(lambda o: _own_output(graph, o), result) \
                if nest.is_nested(result) else _own_output(graph, result)
        return result, sig_args, sig_kwargs, arg_names, n_args, order

    def _note_trace(self, items):
        """The retracing warning (API §8.3), as TensorFlow gives it: after
        RETRACE_WARNING_AFTER traces, a warning naming the user's call and the argument
        change that caused this trace; at most RETRACE_WARNINGS_PER_KIND for one kind of
        change. Constant work per trace: only the previous trace's summary and a running
        generalized spec per argument are kept."""
        summary = {name: _summary(value) for name, value in items}
        previous, self._last_summary = self._last_summary, summary
        for name, value in summary.items():  # the spec covering every trace so far
            if name not in self._general:
                self._general[name] = value if isinstance(value, TensorSpec) else None
            else:  # after a change of rank or dtype: the spec of the calls since then
                self._general[name] = _merge_specs(self._general[name], value) or (
                    value if isinstance(value, TensorSpec) else None)
        if self._tracing_count <= RETRACE_WARNING_AFTER or previous is None:
            return
        changes = [(name, previous.get(name, _MISSING_ARG), value)
                   for name, value in summary.items()
                   if repr(previous.get(name, _MISSING_ARG)) != repr(value)]
        kind = tuple((name, _change_kind(old, new)) for name, old, new in changes)
        given = self._warned.get(kind, 0)
        if given >= RETRACE_WARNINGS_PER_KIND:
            return
        self._warned[kind] = given + 1
        _log.warning(retrace_advice(self.__name__, self._tracing_count, self._calls,
                                    user_site(), changes, self._general,
                                    last=given + 1 == RETRACE_WARNINGS_PER_KIND))

    # ------------------------------------------------------------------ public API
    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The concrete function for these arguments (tensors or TensorSpecs), traced if
        needed. Example: `f.get_concrete_function(tf.TensorSpec([None], tf.float32))`."""
        if self.input_signature is not None and not args and not kwargs:
            args = self.input_signature
        return self._concrete(args, kwargs)[0]

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function was traced."""
        return self._tracing_count

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        """Each concrete function in TensorFlow's layout: the call with its argument names,
        then its tensor arguments (`Args:`) and outputs (`Returns:`).

        Example:
            >>> @tf.function
            ... def scale(features):
            ...     return features * 2.0
            >>> _ = scale(tf.ones([2]))
            >>> print(scale.pretty_printed_concrete_signatures())
            scale(features)
              Args:
                features: float32 Tensor, shape=(2,)
              Returns:
                float32 Tensor, shape=(2,)
        """
        unique = {id(cf): cf for cf in self._cache.values()}  # relaxed ones serve many keys
        return "\n\n".join(_pretty_signature(self.__name__, self._signature, cf, verbose)
                           for cf in unique.values())

    def __repr__(self) -> str:
        return f"<tapeflow.function {self.__name__}>"


def _pair_with_specs(spec_tree, value) -> list | None:
    """(spec, value) for each TensorSpec of `spec_tree`, taking from `value` the part at
    the same place: a whole list where the signature has one TensorSpec (converted as one
    tensor). None where the structures differ."""
    if isinstance(spec_tree, TensorSpec):
        return [(spec_tree, value)]
    if isinstance(spec_tree, _COMPOSITE_SPECS):
        if not spec_tree.is_compatible_with(value):
            return None
        return list(zip(spec_tree._composite_flatten(), value._composite_flatten()))
    if isinstance(spec_tree, dict):
        if not isinstance(value, dict) or set(value) != set(spec_tree):
            return None
        keys = sorted(spec_tree, key=repr)
        parts = [_pair_with_specs(spec_tree[k], value[k]) for k in keys]
    elif isinstance(spec_tree, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec_tree):
            return None
        parts = [_pair_with_specs(s, v) for s, v in zip(spec_tree, value)]
    else:
        return []
    if any(p is None for p in parts):
        return None
    return [pair for p in parts for pair in p]


_GENERATED = re.compile(r"(loop_body|loop_test|if_true|if_false|extra_test)_\d+$")


def _name_user_code(error: Exception) -> None:
    """Prefix an error raised while tracing with the user's frames it passed through, as
    TensorFlow does ("in user code: File ..., line ..., in f"); once, at the outermost
    trace. The error keeps its type (its message is its first argument)."""
    if getattr(error, "_tapeflow_user_code", False) or not error.args or \
            not isinstance(error.args[0], str):
        return
    frames = []
    tb, function_name = error.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not in_package(code.co_filename):
            # a loop body or branch autograph made is shown as the function it came from
            name = code.co_name
            if _GENERATED.match(name) is None or function_name is None:
                function_name = name
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            frames.append(f'    File "{code.co_filename}", line {tb.tb_lineno}, in '
                          f"{function_name}\n        {line}")
        tb = tb.tb_next
    if not frames:
        return
    error.args = (f"in user code:\n\n" + "\n\n".join(frames)
                  + f"\n\n    {type(error).__name__}: {error.args[0]}",) + error.args[1:]
    if isinstance(error, OpError):  # (its message is kept apart from args: TF's form)
        error._message = error.args[0]
    error._tapeflow_user_code = True


def _as_tensor(v, dtype: DType | None = None):
    if isinstance(v, Tensor):
        return v
    return convert_to_tensor(v, dtype=dtype) if dtype is not None and not isinstance(
        v, np.ndarray) else convert_to_tensor(v)


def _own_output(graph: FuncGraph, o):
    """An output the graph can return: its own tensors; others are captured. A Python
    number is returned as a tensor, as TensorFlow does."""
    if isinstance(o, (bool, int, float, complex, np.generic)):
        o = convert_to_tensor(o)
    if isinstance(o, Tensor):
        return o if graph.owns(o) else graph.capture(o)
    if isinstance(o, Variable):
        return o.read_value()
    return o


_COMPOSITE_VALUES = (SparseTensor, RaggedTensor)
_COMPOSITE_SPECS = (SparseTensorSpec, RaggedTensorSpec)


def _as_specs(value):
    """`value` with its composite tensors (SparseTensor, RaggedTensor) replaced by their
    TypeSpecs."""
    if isinstance(value, _COMPOSITE_VALUES):
        return value._type_spec
    if not _holds_composites(value):  # (most arguments: returned as they are)
        return value
    if isinstance(value, dict):
        return type(value)((k, _as_specs(v)) for k, v in value.items()) \
            if type(value) is not dict else {k: _as_specs(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_as_specs(v) for v in value]
        if hasattr(value, "_fields"):
            return type(value)(*items)
        return type(value)(items)
    return value


def _holds_composites(value) -> bool:
    if isinstance(value, _COMPOSITE_VALUES):
        return True
    if isinstance(value, dict):
        return any(_holds_composites(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_composites(v) for v in value)
    return False


def _tree(value):
    """A hashable description of a nested structure's shape (not its leaves)."""
    if isinstance(value, _COMPOSITE_SPECS):
        return ("spec", value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _tree(v)) for k, v in sorted(value.items(), key=repr))
    if isinstance(value, (list, tuple)) and nest.is_nested(value):
        return (type(value).__name__,) + tuple(_tree(v) for v in value)
    return None


def _structure_key(items):
    """The cache key without tensor shapes (only ranks): calls reduce_retracing may serve
    with one generalized graph."""
    def leaf(v):
        if _is_tensor_like(v) or isinstance(v, TensorSpec):
            s = _spec_of(v)
            return ("T", len(s.shape), s.dtype.name)
        return _leaf_key(v)
    return tuple((name, _tree(value), tuple(leaf(v) for v in nest.flatten(value)))
                 for name, value in items)


def _covers(general: TensorSpec, spec: TensorSpec) -> bool:
    """Whether a graph traced for `general` serves every input matching `spec`."""
    return general.dtype is spec.dtype and len(general.shape) == len(spec.shape) and all(
        g is None or g == d for g, d in zip(general.shape, spec.shape))


def _generalize(a: TensorSpec, b: TensorSpec) -> TensorSpec:
    dims = [x if x == y else None for x, y in zip(a.shape, b.shape)]
    return TensorSpec(dims, a.dtype)


def _summary(value):
    if nest.is_nested(value):
        return nest.map_structure(_summary, value)
    if isinstance(value, Variable):  # its key, not its (possibly large) value
        return f"tf.Variable(shape={tuple(value._shape)}, dtype=tf.{value.dtype.name})"
    if _is_tensor_like(value) or isinstance(value, TensorSpec):
        s = _spec_of(value)
        return TensorSpec(s.shape, s.dtype)
    return value


_MISSING_ARG = "<not given>"

_SINGLETON_VARIABLES = (
    "tf.function only supports singleton tf.Variables created on the first call. Make "
    "sure the tf.Variable is only created once or created outside tf.function (e.g. `if "
    "self.v is None: self.v = tf.Variable(...)`); see "
    "https://www.tensorflow.org/guide/function#creating_tfvariables")


def _merge_specs(general, value):
    """The TensorSpec covering `general` and `value` (None dims where they differ), or
    None when no one spec covers both (a Python value, another rank or dtype)."""
    if not isinstance(general, TensorSpec) or not isinstance(value, TensorSpec) or \
            len(general.shape) != len(value.shape) or general.dtype is not value.dtype:
        return None
    return _generalize(general, value)


def _change_kind(old, new) -> str:
    """What changed in one argument, coarsely: the retracing warning is given again only
    when the kind of change is new."""
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        if old.dtype is not new.dtype:
            return "dtype"
        return "shape" if len(old.shape) == len(new.shape) else "rank"
    if isinstance(old, TensorSpec) or isinstance(new, TensorSpec):
        return "tensor/python"
    return "python value" if type(old) is type(new) else "python type"


def retrace_advice(name: str, traces: int, calls: int, site, changes: list, general: dict,
                   last: bool = False) -> str:
    """The retracing warning of API §8.3: where the call is, which arguments changed for
    this trace (old -> new) and an input_signature with None dims covering every call seen,
    or, for Python values, to pass tensors."""
    where = f"{site}: " if site else ""
    lines = [f"{where}{traces} out of the last {calls} calls to function {name!r} triggered "
             "tf.function retracing. Tracing is expensive; this trace was caused by:"]
    lines += [f"  argument {arg!r} changed from {old!r} to {new!r}" for arg, old, new in changes]
    def spec_text(spec):
        return f"tf.TensorSpec({list(spec.shape)}, tf.{spec.dtype.name})"
    specs = list(general.values())
    if specs and all(isinstance(spec, TensorSpec) for spec in specs):
        lines.append(f"  input_signature=[{', '.join(spec_text(s) for s in specs)}] would "
                     "cover the calls seen (or use reduce_retracing=True)")
    else:
        lines += [f"  for argument {arg!r}, tf.TensorSpec would cover the calls seen: "
                  f"{spec_text(general[arg])}" for arg, _, _ in changes
                  if isinstance(general.get(arg), TensorSpec)]
    if any(not isinstance(new, TensorSpec) for _, _, new in changes):
        lines.append("  Python values (and objects) in the arguments key the cache: pass "
                     "them as tensors, or define the tf.function outside the loop that "
                     "calls it, to avoid retracing")
    if last:
        lines.append("  (further retracing caused by this kind of change is not reported)")
    return "\n".join(lines)


def _describe_spec(value) -> str:
    """TensorFlow's words for one input or output of a signature."""
    if isinstance(value, TensorSpec):
        shape = "<unknown>" if value.shape is None else str(tuple(value.shape))
        return f"{value.dtype.name} Tensor, shape={shape}"
    if isinstance(value, Tensor):
        return _describe_spec(TensorSpec(value._shape, value.dtype))
    if isinstance(value, VariableSlot):
        return f"{value.dtype.name} Variable, shape={tuple(value._shape)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_describe_spec(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)) and nest.is_nested(value):
        inner = ", ".join(_describe_spec(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def _pretty_signature(name: str, signature: inspect.Signature, cf, verbose: bool) -> str:
    """One concrete function as TensorFlow prints it: `f(x, y=1)` (Python values given
    with their value), then `Args:` for tensor arguments and `Returns:`."""
    sig_args, sig_kwargs = cf.structured_input_signature
    names = cf._arg_names or [None] * len(sig_args)
    bound = [(n if n is not None else f"args_{i}", v) for i, (n, v) in
             enumerate(zip(names, sig_args))] + list(sig_kwargs.items())

    def has_tensor(v):
        return any(isinstance(x, (TensorSpec, VariableSlot)) for x in nest.flatten(v))
    header = ", ".join(n if has_tensor(v) else f"{n}={v!r}" for n, v in bound)
    lines = [f"{name}({header})"]
    tensors = [(n, v) for n, v in bound if has_tensor(v)]
    if tensors and verbose:
        lines.append("  Args:")
        lines += [f"    {n}: {_describe_spec(v)}" for n, v in tensors]
    lines.append("  Returns:")
    lines.append(f"    {_describe_spec(cf.structured_outputs)}")
    return "\n".join(lines)


def function(func: Callable | None = None, input_signature=None, autograph: bool = True,
             reduce_retracing: bool = False, jit_compile=None, experimental_relax_shapes=None,
             name: str | None = None):
    """Trace `func` into cached graphs (a decorator, with or without arguments).

    Example:
        >>> @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        ... def f(x):
        ...     return x * 2.0
        >>> f(tf.ones([3])).numpy()
        array([2., 2., 2.], dtype=float32)
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or bool(experimental_relax_shapes)

    def decorate(f):
        return Function(f, input_signature, autograph, reduce_retracing, jit_compile, name)
    return decorate if func is None else decorate(func)

