"""`function`: Python functions traced into graphs, cached by input signature.

A `Function` keys its cache by the structure of the arguments with tensors (and NumPy
arrays) replaced by their shape and dtype and other values kept; a new key traces the
Python function once, with placeholders, into a `ConcreteFunction`. Calling a concrete
function runs its compiled program; under a tape it is one recorded op
(`PartitionedCall`) whose gradient is itself a traced function (see backprop.py).
"""
from __future__ import annotations

import functools
import inspect
import logging
import threading
import warnings
import weakref
from typing import Callable

import numpy as np

from .._core import nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dtypes import DType
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from .autograph import convert_entry
from .concrete import (_is_tensor_like, _leaf_key, _signature_text, _spec_of, ConcreteFunction,
                       SignatureMismatchError)
from .graph import FuncGraph, tracing as _tracing

_log = logging.getLogger("tapeflow")
_run_eagerly = [False]
RETRACE_WARNING_AFTER = 5


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every `function` run its Python function eagerly (for debugging).

    Example: `tf.config.run_functions_eagerly(True)`.
    """
    _run_eagerly[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _run_eagerly[0]


# ---------------------------------------------------------------------- the call op
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
        self._history: list = []   # (bound arguments summary) of every trace
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
                    return cf._pack(cf._run_plain(args))
        if _run_eagerly[0] or ctx.graph is not None:
            # eagerly for debugging; inside another trace, traced into that graph
            fn = self.python_function if _run_eagerly[0] else self._traced_function()
            return fn(*args, **kwargs)
        cf, flat = self._concrete(args, kwargs)
        if not kwargs and len(flat) == len(args) and all(
                type(a) is Tensor and a is t for a, t in zip(args, flat)):
            with self._lock:
                self._by_specs[tuple([(a._shape, a.dtype) for a in args])] = cf
        return cf._pack(cf._call_flat(flat))

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

    def _concrete(self, args, kwargs, from_specs: bool = False):
        """The concrete function for a call, tracing it if needed, and its flat tensors."""
        if self.input_signature is not None:
            return self._concrete_for_signature(args, kwargs)
        bound = self._bind(args, kwargs)
        items = list(bound.arguments.items())
        key = tuple((name, _tree(value), tuple(_leaf_key(v) for v in nest.flatten(value)))
                    for name, value in items)
        with self._lock:
            cf = self._cache.get(key)
            if cf is None and self.reduce_retracing:
                cf = self._relaxed_match(items)
            if cf is None:
                specs = self._specs_for(items) if self.reduce_retracing else None
                cf = self._trace(items, specs)
                self._cache[key] = cf
        flat = [_as_tensor(v) for _, value in items for v in nest.flatten(value)
                if _is_tensor_like(v)]
        return cf, flat

    def _concrete_for_signature(self, args, kwargs):
        sig = self.input_signature
        bound = self._bind(args, kwargs)
        values = list(bound.arguments.values())
        flat = []
        for i, spec_tree in enumerate(sig):
            if i >= len(values):
                raise TypeError(f"{self.__name__}: missing argument {i} of the input_signature")
            specs, leaves = nest.flatten(spec_tree), nest.flatten(values[i])
            if len(specs) != len(leaves):
                raise SignatureMismatchError(f"{self.__name__}: argument {i} does not match "
                                             f"the input_signature's structure {spec_tree}")
            for spec, leaf in zip(specs, leaves):
                if isinstance(leaf, TensorSpec):
                    t = leaf
                    ok = spec.is_compatible_with(t)
                else:
                    t = _as_tensor(leaf, spec.dtype)
                    ok = spec.is_compatible_with(t)
                if not ok:
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
        leaf_specs = iter(relaxed_specs) if relaxed_specs is not None else None
        args, kwargs, sig_args, sig_kwargs, arg_names = [], {}, [], {}, []
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
            result = self._traced_function()(*args, **kwargs)
            result = nest.map_structure(lambda o: _own_output(graph, o), result) \
                if nest.is_nested(result) else _own_output(graph, result)
        if graph.created_variables and self._tracing_count > 0:
            raise ValueError(
                f"{self.__name__}: a tf.Variable was created on a trace after the first "
                f"(trace {self._tracing_count + 1}); a traced function may create variables "
                "only on its first call. Create them outside, or once (e.g. `if self.v is "
                "None: self.v = tf.Variable(...)`)")
        self._tracing_count += 1
        self._note_trace(items)
        cf = ConcreteFunction(graph, (tuple(sig_args), sig_kwargs), result, n_args,
                              self.__name__, arg_names=arg_names)
        cf.jit_compile = self.jit_compile
        if self.reduce_retracing:
            specs = [s for s in (nest.flatten(list(sig_args)) + nest.flatten(sig_kwargs))
                     if isinstance(s, TensorSpec)]
            self._relaxed.append((_structure_key(items), specs, cf))
        return cf

    def _note_trace(self, items):
        summary = {name: _summary(value) for name, value in items}
        self._history.append(summary)
        if self._tracing_count > RETRACE_WARNING_AFTER:
            message = retrace_advice(self.__name__, self._history)
            _log.warning(message)
            warnings.warn(message, stacklevel=4)

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

    def pretty_printed_concrete_signatures(self) -> str:
        """One line per concrete function: its input signature and outputs."""
        lines = []
        for cf in self._cache.values():
            outs = nest.map_structure(lambda o: TensorSpec(o._shape, o.dtype)
                                      if isinstance(o, Tensor) else o, cf.structured_outputs)
            lines.append(f"{self.__name__}{_signature_text(cf.structured_input_signature)}"
                         f" -> {outs!r}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<tapeflow.function {self.__name__}>"


def _as_tensor(v, dtype: DType | None = None):
    if isinstance(v, Tensor):
        return v
    return convert_to_tensor(v, dtype=dtype) if dtype is not None and not isinstance(
        v, np.ndarray) else convert_to_tensor(v)


def _own_output(graph: FuncGraph, o):
    """An output the graph can return: its own tensors; others are captured."""
    if isinstance(o, Tensor):
        return o if graph.owns(o) else graph.capture(o)
    if isinstance(o, Variable):
        return o.read_value()
    return o


def _tree(value):
    """A hashable description of a nested structure's shape (not its leaves)."""
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
    if _is_tensor_like(value) or isinstance(value, TensorSpec):
        s = _spec_of(value)
        return TensorSpec(s.shape, s.dtype)
    return value


def retrace_advice(name: str, history: list) -> str:
    """The retracing warning of API §8.3: which arguments changed between traces and an
    input_signature with None dims covering every call seen."""
    changed = []
    first = history[0]
    for arg in first:
        values = [h.get(arg) for h in history]
        for prev, cur in zip(values, values[1:]):
            if repr(prev) != repr(cur):
                changed.append(f"  argument {arg!r} changed from {prev!r} to {cur!r}")
                break
    proposal = []
    for arg in first:
        specs = [h.get(arg) for h in history]
        if all(isinstance(s, TensorSpec) for s in specs) and \
                len({len(s.shape) for s in specs}) == 1 and \
                len({s.dtype for s in specs}) == 1:
            spec = specs[0]
            for s in specs[1:]:
                spec = _generalize(spec, s)
            proposal.append(f"tf.TensorSpec({list(spec.shape)}, tf.{spec.dtype.name})")
    hint = (f"  input_signature=[{', '.join(proposal)}] would cover every call seen"
            if proposal and len(proposal) == len(first) else
            "  Python values in the arguments key the cache: pass them as tensors to avoid "
            "retracing")
    return (f"function {name!r} was traced {len(history)} times (more than "
            f"{RETRACE_WARNING_AFTER}); each new shape, dtype or Python value traces again:\n"
            + "\n".join(changed) + "\n" + hint)


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

