"""ConcreteFunction: one traced graph of a `function` for one input signature, callable
(by its structured or flat signature), differentiable (a PartitionedCall op with its own
VJP and JVP over the graph) and compiled by the executor (`compile`: the public step that
higher-order ops use for their branches and loop bodies)."""
from __future__ import annotations

import abc
from typing import Callable

import numpy as np

from .._core import nest
from .._core.backends import REGISTRY as _backends
from .._core.context import ctx, debug_on
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.errors import describe, InvalidArgumentError
from .._core.memory import native_of, wrap_native
from .._core.registry import define_op
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import bind_slots, Variable, VariableSlot
from .backprop import backward_function, jvp_function
from .executor import natives_of, Program
from .graph import FuncGraph
from .interpret import eval_graph, remap_dims
from .fuse import available as fuse_available, fuse
from .optimizer import active_passes, optimize


# Programs specialized to the input shapes of calls, per concrete function: enough for a
# training loop's batch sizes (the full batches and a last, smaller one) and evaluation.
SPECIALIZED_PROGRAMS = 8


def _call_impl(inputs: dict, attrs: dict) -> list:
    fn = attrs["fn"]
    backend = _backends.active or _backends.ensure_active()
    natives = natives_of(inputs["args"], backend)
    out = fn._program(backend, natives)(natives)
    return [wrap_native(a, backend) for a in out]


def _call_vjp(g, ans, args_shape, resources_shape, *, fn, bind=()):
    """Input gradients of a call: the concrete function's backward function, itself a
    traced function (so the gradient is differentiable again). It reads the tensors the
    rules need from the call's outputs: a recorded call runs the forward variant, which
    returns them beside the user's outputs. The inputs themselves are not kept."""
    bwd, grad_slots, saved = backward_function(fn)
    outs = ans if isinstance(ans, list) else [ans]
    position = {t.id: i for i, t in enumerate(fn._flat_outputs)}
    cots = g if isinstance(g, list) else [g]
    with bind_slots(bind):  # the variables the call was given (see VariableSlot)
        grads = bwd._call_flat(list(cots) + [outs[position[t.id]] for t in saved])
    n_args = len(args_shape)
    flat = [None] * (n_args + len(resources_shape))
    for slot, gr in zip(grad_slots, grads):
        flat[slot] = gr
    return {"args": flat[:n_args], "resources": flat[n_args:]}


def _call_jvp(tangents, args, resources, *, fn, bind=()):
    """Output tangents of a call: the concrete function's JVP function, a traced function
    of the primals and the tangents that runs the graph under a forward accumulator
    symbolically (built once per tangent pattern), so no VJP is transposed."""
    arg_t = list(tangents["args"])
    var_t = list(tangents.get("resources") or [])
    jvp_fn, slots = jvp_function(fn, [t is not None for t in arg_t + var_t],
                                 [t._shape for t in arg_t + var_t if t is not None])
    present = [t for t in arg_t + var_t if t is not None]
    with bind_slots(bind):
        outs = jvp_fn._call_flat(list(args) + present)
    result = [None] * len(fn._flat_outputs)
    for slot, t in zip(slots, outs):
        result[slot] = t
    return result


define_op("PartitionedCall", ["args", "resources"], list_inputs=("args", "resources"),
          num_outputs=None, impl=_call_impl, zeros_for_none=True, vjp=_call_vjp,
          jvp=_call_jvp)


# ---------------------------------------------------------------------- concrete functions


class ConcreteFunction:
    """One traced graph of a `function`, for one input signature.

    Example:
        >>> cf = f.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
        >>> cf(tf.ones([2, 3])); print(cf.graph)
    """

    def __init__(self, graph: FuncGraph, structured_input_signature, structured_outputs,
                 n_args: int, name: str, arg_names=None):
        self.graph = graph
        # the parameter name of each positional entry of the signature (None for *args
        # entries), so that a call may pass them by keyword
        self._arg_names = list(arg_names) if arg_names is not None else None
        self.name = name
        self.structured_input_signature = structured_input_signature
        self.structured_outputs = structured_outputs
        self._n_args = n_args
        self._flat_outputs = [o for o in nest.flatten(structured_outputs)
                              if isinstance(o, Tensor)]
        self._one_output = isinstance(structured_outputs, Tensor)
        if not graph.frozen:  # (a variant of another function shares its sealed graph)
            graph.seal(self._flat_outputs)
        self._programs: dict = {}
        self._specialized: dict = {}  # (program key, input shapes) -> specialized Program
        self._dynamic = any(None in t._shape for t in graph.inputs)
        # False: run without fused kernels (function(..., jit_compile=False)); what was
        # derived from this function (its gradient, its forward variant) follows it
        self.jit_compile = None
        self._slot_list = None
        self.arg_slots: list = []  # the VariableSlot of each variable argument, in order
        self._forward = None   # the forward variant (see _forward_variant)
        self._derived: dict = {}  # what transformations built from it, by their key

    def derived(self, key, build: Callable):
        """What `build()` makes of this function (its gradient, a JVP, a loop's gradient),
        built once and kept with it under `key`."""
        hit = self._derived.get(key)
        if hit is None:
            hit = self._derived[key] = build()
        return hit

    # ------------------------------------------------------------------ properties
    @property
    def inputs(self) -> list:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list:
        return list(self.graph.outputs)

    @property
    def captured_inputs(self) -> list:
        return [ext for ext, _ in self.graph.captures] + list(self.variables)

    @property
    def variables(self) -> tuple:
        """The variables the graph reads or assigns (a variable argument: the one it refers
        to now, by default the one it was traced with)."""
        return tuple(v.target() if isinstance(v, VariableSlot) else v
                     for v in self.graph.variables.values())

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)

    def _slots(self) -> list:
        """The variable arguments (VariableSlots) the graph reads or assigns."""
        if self._slot_list is None:
            self._slot_list = [v for v in self.graph.variables.values()
                               if isinstance(v, VariableSlot)]
        return self._slot_list

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.name}{_signature_text(self.structured_input_signature)}>"

    # ------------------------------------------------------------------ running
    @property
    def has_unknown_dims(self) -> bool:
        """Whether some input's shape has an unknown dimension: `compile` then specializes
        the program to the shapes of the arrays it is given."""
        return self._dynamic

    def compile(self, backend=None, inputs: list | None = None) -> Program:
        """The program that runs this function's graph on `backend` (the active backend by
        default): the graph optimized by the active passes, its elementwise regions fused,
        compiled by the executor to one Python function over native arrays. Called as
        `program(natives) -> tuple of natives`, with the flat inputs (the arguments, then
        the captured tensors) as the backend's arrays. For a graph with unknown input
        dims, `inputs` (the arrays of a call) specializes the program to their shapes.
        Programs are kept with the function: compiling again returns the same one.

        Example:
            >>> cf = tf.function(lambda x: x * 2.0 + 1.0).get_concrete_function(
            ...     tf.TensorSpec([3], tf.float32))
            >>> cf.compile()([np.ones(3, np.float32)])
            (array([3., 3., 3.], dtype=float32),)
        """
        return self._program(backend or _backends.active or _backends.ensure_active(),
                             inputs)

    def _program(self, backend, natives: list | None = None) -> Program:
        """The program that runs this function: optimized for the active options, and,
        for a graph with unknown input dims called with `natives`, specialized to their
        shapes (its shape arithmetic folded, its reshapes of the same shape removed,
        its elementwise regions fusible), up to SPECIALIZED_PROGRAMS shape sets."""
        passes = active_passes()
        # debug mode runs a program with NaN/Inf checks, profile() one reporting each
        # node; the optimizer options change it
        profiled = bool(ctx.profilers)
        key = (backend, debug_on[0], passes, profiled)
        if natives is not None and self._dynamic and "shape" in passes:
            shapes = tuple(a.shape for a in natives)
            prog = self._specialized.get((key, shapes))
            if prog is None:
                if len(self._specialized) >= SPECIALIZED_PROGRAMS:
                    return self._build(key, backend)  # (many shapes: the general one)
                try:
                    prog = self._build(key, backend, shapes)
                except (InvalidArgumentError, ValueError):
                    # shapes the ops refuse: the general program raises when it runs,
                    # naming the node, the real shapes and the user's line
                    prog = self._build(key, backend)
                self._specialized[(key, shapes)] = prog
            return prog
        return self._build(key, backend)

    def _build(self, key: tuple, backend, shapes: tuple | None = None) -> Program:
        """The program for `key` (specialized to `shapes` if given; the general one is
        kept in `_programs`)."""
        prog = self._programs.get(key) if shapes is None else None
        if prog is None:
            _, debug, passes, profiled = key
            graph, outputs, report = self.graph, self._flat_outputs, None
            if passes:
                graph, outputs, report = optimize(self.graph, self._flat_outputs, passes,
                                                  shapes)
            fused = 0
            # debug mode keeps one node per op, so a NaN is blamed on the op that made it;
            # fused kernels are numba loops over NumPy arrays: other backends run per op
            if ("fuse" in passes and self.jit_compile is not False and not debug
                    and backend.native_type is np.ndarray and fuse_available()):
                graph, outputs, fused = fuse(graph, outputs)
            prog = Program(graph, outputs, backend, debug, profiled)
            prog.report, prog.fused = report, fused
            if report is not None:
                prog.pruned += report.removed
            if shapes is None:
                self._programs[key] = prog
        return prog

    @property
    def optimized_graph(self) -> FuncGraph:
        """The graph that runs: `graph` after the optimization passes (API §6.5).

        Example:
            >>> cf = tf.function(lambda x: (x * 1.0) * 2.0).get_concrete_function(
            ...     tf.constant([1.0]))
            >>> [n.op for n in cf.optimized_graph.get_operations()]
            ['Placeholder', 'Const', 'Mul']
        """
        return self._program(_backends.active or _backends.ensure_active()).graph

    def __call__(self, *args, **kwargs):
        """Run the graph on arguments of the traced signature, by position or keyword:
        tensors where it has specs; Python values may be left out and must equal the
        traced ones when given. As in TF, the tensor arguments alone, in order, also
        work (`cf(x)` for a function traced as `f(model, x)`).

        Raises TypeError for missing, unexpected or different Python arguments, and
        InvalidArgumentError (a ValueError) for a tensor of the wrong dtype or shape."""
        bind: dict = {}
        try:
            flat = _flatten_call(self.structured_input_signature, args, kwargs, self.name,
                                 self._arg_names, bind)
        except TypeError as structured:
            if isinstance(structured, SignatureMismatchError):
                raise
            flat = _flat_signature_call(self, args, kwargs)
            if flat is None:
                raise
        return self._pack(self._call_flat(flat, bind))

    def _call_flat(self, tensors: list, bind: dict | None = None):
        """Outputs (flat list) for the flat argument tensors; `bind`: the variable each
        variable argument (VariableSlot) refers to in this call (else the one it refers
        to now)."""
        captured = [ext for ext, _ in self.graph.captures]
        if ctx.graph is not None:  # called while tracing another function: inline it
            return self._inline(list(tensors) + captured)
        slots = self._slots()
        given = bind or {}
        pairs = tuple((s, given[s] if s in given else s.target()) for s in slots)
        targets = dict(pairs)
        variables = [targets.get(v, v) for v in self.graph.variables.values()]
        # recorded by a tape or seen by an accumulator: run the forward variant, whose
        # extra outputs are what the backward function reads
        fn = self._forward_variant() if ctx.tapes or ctx.accs else self
        # the call's variables travel as an attr too: its gradient runs later
        attrs = {"fn": fn, "bind": pairs} if pairs else {"fn": fn}
        with bind_slots(pairs):
            outs = run_kernel("PartitionedCall", {"args": list(tensors) + captured,
                                                  "resources": variables}, attrs)
        outs = outs if isinstance(outs, list) else [outs]
        return outs[:len(self._flat_outputs)]

    def _run_plain(self, tensors: list) -> list:
        """`_call_flat` when nothing records, watches, profiles or traces (`ctx.active`
        is False): the program runs on the tensors' arrays directly."""
        if self._slots():  # variable arguments are bound for the call: the general path
            return self._call_flat(tensors)
        backend = _backends.active or _backends.ensure_active()
        natives = [t._native if t._nb is backend else native_of(t, backend)
                   for t in tensors]
        if self.graph.captures:
            natives += natives_of([ext for ext, _ in self.graph.captures], backend)
        out = self._program(backend, natives)(natives)
        return [wrap_native(a, backend) for a in out[:len(self._flat_outputs)]]

    def _forward_variant(self) -> "ConcreteFunction":
        """This function with the tensors its gradient needs as extra outputs (itself if
        it already returns them all)."""
        if self._forward is None:
            # the extra outputs get cotangents too, whose rules may read more tensors:
            # extend until the function returns everything its own gradient reads
            cf = self
            while True:
                have = {t.id for t in cf._flat_outputs}
                extra = [t for t in backward_function(cf)[2] if t.id not in have]
                if not extra:
                    break
                cf = ConcreteFunction(self.graph, self.structured_input_signature,
                                      list(cf._flat_outputs) + extra, self._n_args,
                                      self.name + "_forward")
                cf.jit_compile = self.jit_compile
            self._forward = cf
        return self._forward

    def _inline(self, tensors: list) -> list:
        """Replay the nodes through run_kernel (into the graph being traced, or under
        tapes): the interpreter of a graph."""
        env = {ph.id: t for ph, t in zip(self.graph.inputs, tensors)}

        def replay(node, ins):  # a Dim of this graph's tensor becomes one of its replacement
            return run_kernel(node.op, ins, remap_dims(node.attrs, env))
        eval_graph(self.graph, env, replay)
        return [env[o.id] for o in self._flat_outputs]

    def _pack(self, flat: list):
        if self._one_output:
            return flat[0]
        it = iter(flat)
        leaves = [next(it) if isinstance(o, Tensor) else o
                  for o in nest.flatten(self.structured_outputs)]
        return nest.pack_sequence_as(self.structured_outputs, leaves) \
            if nest.is_nested(self.structured_outputs) else leaves[0]


# ---------------------------------------------------------------------- signatures


def _is_tensor_like(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _spec_of(x) -> TensorSpec:
    if isinstance(x, TensorSpec):
        return x
    if isinstance(x, np.ndarray):
        x = convert_to_tensor(x)
    return TensorSpec(x._shape, x.dtype)


def _signature_text(sig) -> str:
    args, kwargs = sig
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"({', '.join(parts)})"


class TraceType(abc.ABC):
    """How `function` keys its trace cache on a Python object that says so itself
    (`tf.types.experimental.TraceType`): an object with a `__tf_tracing_type__(context)`
    method returning one of these is traced once per equal TraceType, and the trace
    sees `placeholder_value()` in its place.

    Example:
        >>> class FruitType(tf.types.experimental.TraceType):
        ...     def __init__(self, fruit): self.kind, self.fruit = type(fruit), fruit
        ...     def is_subtype_of(self, other): return self == other
        ...     def most_specific_common_supertype(self, others):
        ...         return self if all(self == o for o in others) else None
        ...     def placeholder_value(self, placeholder_context=None): return self.fruit
        ...     def __eq__(self, other):
        ...         return type(other) is FruitType and self.kind is other.kind
        ...     def __hash__(self): return hash(self.kind)
        >>> class Apple:
        ...     def __tf_tracing_type__(self, context): return FruitType(self)
    """

    @abc.abstractmethod
    def is_subtype_of(self, other: "TraceType") -> bool:
        """Whether a trace for `other` also serves values of this type."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The most specific type all of `self` and `others` are subtypes of, or None."""

    @abc.abstractmethod
    def placeholder_value(self, placeholder_context=None):
        """The value the traced function is given for an argument of this type."""

    @abc.abstractmethod
    def __eq__(self, other) -> bool:
        ...

    @abc.abstractmethod
    def __hash__(self) -> int:
        ...


def _trace_type(x) -> TraceType | None:
    """`x.__tf_tracing_type__(context)` for objects implementing the protocol, else None."""
    hook = getattr(type(x), "__tf_tracing_type__", None)
    if hook is None:
        return None
    trace_type = x.__tf_tracing_type__(None)
    if not isinstance(trace_type, TraceType):
        raise TypeError(f"function: {type(x).__name__}.__tf_tracing_type__ must return a "
                        f"tf.types.experimental.TraceType, got {type(trace_type).__name__}")
    return trace_type


def _leaf_key(x):
    if _is_tensor_like(x) or isinstance(x, TensorSpec):
        s = _spec_of(x)
        return ("T", tuple(s.shape), s.dtype.name)
    if isinstance(x, Variable):  # as TensorFlow: by dtype and shape, not identity
        return ("V", tuple(x._shape), x.dtype.name, bool(x.trainable))
    trace_type = _trace_type(x)
    if trace_type is not None:
        return ("TraceType", trace_type)
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"function: an argument of type {type(x).__name__} ({x!r:.60}) is "
                        "not hashable, so it cannot key the trace cache; pass it as a tensor "
                        "or make it hashable") from None
    return ("P", type(x).__name__, x)


class SignatureMismatchError(ValueError, TypeError):
    """A call's arguments do not fit a signature's structure, dtypes or shapes. TF raises
    TypeError ("Binding inputs to tf.function failed"); API.md promises ValueError for
    incompatible inputs: this is both."""


_MISSING = object()


def _flatten_call(sig, args, kwargs, name, arg_names=None, bind=None) -> list:
    """The flat tensors of a call of a concrete function, bound (by position or keyword)
    and checked against `sig`. Python values of the signature may be left out. A variable
    given for a variable argument of the same dtype and shape goes into `bind`."""
    sig_args, sig_kwargs = sig
    if len(args) > len(sig_args):
        raise TypeError(f"{name}: takes {len(sig_args)} positional arguments, got {len(args)}")
    names = arg_names if arg_names is not None else [None] * len(sig_args)
    labels = [n if n is not None else f"argument {i}" for i, n in enumerate(names)]
    values = list(args) + [_MISSING] * (len(sig_args) - len(args))
    kw_values = {k: _MISSING for k in sig_kwargs}
    for k, v in kwargs.items():
        if k in names:
            i = names.index(k)
            if values[i] is not _MISSING:
                raise TypeError(f"{name}: got multiple values for argument '{k}'")
            values[i] = v
        elif k in sig_kwargs:
            kw_values[k] = v
        else:
            raise TypeError(f"{name}: got an unexpected keyword argument '{k}'")
    flat = []
    pairs = list(zip(sig_args, values, labels)) + [(sig_kwargs[k], kw_values[k], k)
                                                   for k in sig_kwargs]
    for spec_tree, value, label in pairs:
        specs = nest.flatten(spec_tree)
        if value is _MISSING:
            if any(isinstance(s, TensorSpec) for s in specs):
                raise TypeError(f"{name}: missing required argument '{label}'")
            continue  # a Python value of the trace: the traced one
        values_ = nest.flatten(value)
        if len(specs) != len(values_):
            raise SignatureMismatchError(
                f"{name}: argument '{label}' has structure {value!r:.80}, the signature "
                f"expects {spec_tree!r:.80}")
        for spec, v in zip(specs, values_):
            if isinstance(spec, TensorSpec):
                flat.append(_checked_tensor(name, label, spec, v))
            elif isinstance(spec, VariableSlot) and isinstance(v, Variable) and \
                    _leaf_key(spec) == _leaf_key(v):
                if bind is not None:
                    bind[spec] = v
            elif not _same_python_value(spec, v):
                raise TypeError(
                    f"ConcreteFunction {name} was traced with {type(spec).__name__} value "
                    f"{spec!r:.60} in '{label}', but was called with {type(v).__name__} "
                    f"value {v!r:.60}; call the tf.function itself to trace for a new value")
    return flat


def _same_python_value(traced, given) -> bool:
    if traced is given:
        return True
    if isinstance(given, (Tensor, Variable, np.ndarray)):
        return False
    try:
        return bool(traced == given)
    except (TypeError, ValueError):
        return False


def _checked_tensor(name: str, label: str, spec: TensorSpec, v) -> Tensor:
    """`v` as a tensor fitting `spec`. A wrong dtype or shape raises InvalidArgumentError,
    as TF's graph does when it is given a tensor its placeholder does not take."""
    if isinstance(v, Variable):
        v = v.read_value()
    if not isinstance(v, Tensor):
        try:
            v = convert_to_tensor(v, dtype=spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name}: argument '{label}' expects a {spec.dtype.name} tensor, "
                            f"got {type(v).__name__} value {v!r:.60} ({e})") from None
    if v.dtype is not spec.dtype or not spec.shape.is_compatible_with(v._shape):
        raise InvalidArgumentError(
            f"{name}: argument '{label}': {describe(v)} is not compatible with the "
            f"signature's shape {list(spec.shape)} and dtype {spec.dtype.name}")
    return v


def _flat_signature_call(cf: ConcreteFunction, args, kwargs) -> list | None:
    """The call as TF's flat signature reads it: the tensor arguments alone, in order
    (keywords: the names of top-level tensor parameters); None if it does not fit."""
    sig_args, sig_kwargs = cf.structured_input_signature
    names = cf._arg_names or [None] * len(sig_args)
    slots = []  # (keyword or None, spec) of each flat tensor input
    for spec_tree, n in zip(sig_args, names):
        leaves = [s for s in nest.flatten(spec_tree) if isinstance(s, TensorSpec)]
        slots += [(n if isinstance(spec_tree, TensorSpec) else None, s) for s in leaves]
    for k, spec_tree in sig_kwargs.items():
        leaves = [s for s in nest.flatten(spec_tree) if isinstance(s, TensorSpec)]
        slots += [(k if isinstance(spec_tree, TensorSpec) else None, s) for s in leaves]
    if len(args) > len(slots) or not all(isinstance(a, (Tensor, Variable)) for a in args):
        return None
    given = list(args) + [_MISSING] * (len(slots) - len(args))
    keys = [k for k, _ in slots]
    for k, v in kwargs.items():
        if k not in keys or given[keys.index(k)] is not _MISSING \
                or not isinstance(v, (Tensor, Variable)):
            return None
        given[keys.index(k)] = v
    if any(v is _MISSING for v in given):
        return None
    return [_checked_tensor(cf.name, k or f"input {i}", s, v)
            for i, ((k, s), v) in enumerate(zip(slots, given))]


# ---------------------------------------------------------------------- Function
