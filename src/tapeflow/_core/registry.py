"""Rule tables keyed by op name: kernels (per backend), shape rules, VJP, JVP and batching
rules, and the facts the compiler reads about elementwise ops (`Pointwise`).

Every registration remembers the source line that made it and a second one for the
same key is refused, naming both places, unless `override=True` is passed.

An elementwise op declares what the graph compiler may do with it where it is defined,
as `define_op(..., pointwise=Pointwise(...))` (or `declare_pointwise` beside an op
defined elsewhere): its expression over scalars for fused loops (function/fuse.py), the
ufunc that is its whole kernel and may write into a dying input (function/executor.py),
and whether float32 loops may use vectorized exp/tanh (function/vmath.py). The compiler
reads only `POINTWISE`: an op declared there fuses with no compiler edit.
"""
from __future__ import annotations

import inspect
import string
import sys
from operator import itemgetter
from typing import Any, Callable

from .errors import AlreadyExistsError, NotFoundError


def _caller_site(skip: int = 2) -> str:
    """'file:line' of the first frame outside tapeflow's registration helpers."""
    f = sys._getframe(skip)
    while f is not None and f.f_code.co_filename.endswith(("registry.py", "_define.py")):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


class KernelEntry:
    """A kernel registration: `kernel_name`, `backend_name`, `kernel_func`, `setup_func`,
    `dispose_func` (tfjs's KernelConfig fields, in Python spelling) and `site`."""

    __slots__ = ("name", "backend", "func", "setup_func", "dispose_func", "site")

    def __init__(self, name, backend, func, setup_func, dispose_func, site):
        self.name, self.backend, self.func = name, backend, func
        self.setup_func, self.dispose_func, self.site = setup_func, dispose_func, site

    kernel_name = property(lambda self: self.name)
    backend_name = property(lambda self: self.backend)
    kernel_func = property(lambda self: self.func)

    def __repr__(self):
        return f"KernelEntry({self.name!r}, {self.backend!r}, registered at {self.site})"


class LateAttr:
    """An attribute whose value is decided each time a compiled graph runs, not when it is
    traced (a random op's seed: every call of a traced function draws fresh numbers)."""

    def resolve(self):
        raise NotImplementedError


class OpDef:
    """What the engine knows of an op besides its kernels: input names, list inputs, the
    output count (known before any kernel runs) and, for composite ops, `impl`."""

    __slots__ = ("name", "inputs", "list_inputs", "num_outputs", "list_output", "impl",
                 "native", "stateful", "site")

    def __init__(self, name, inputs, list_inputs=(), num_outputs=1, impl=None, site=""):
        self.name, self.inputs = name, tuple(inputs)
        self.list_inputs = frozenset(list_inputs)
        # an int, or `fn(shapes, dtypes, attrs) -> int`, or None for a list output whose
        # length the shape rule gives (Split, Unstack); user kernels: None, no shape rule
        self.num_outputs = num_outputs
        # rules see the outputs (and cotangents) as a list even when a call made one piece
        self.list_output = False
        self.impl = impl
        # a composite's implementation on native arrays, `native(inputs, attrs, backend)`
        # like a kernel's: how a compiled graph runs it (variable reads and assignments)
        self.native = None
        # reads or changes state (variables, random streams): a graph keeps it, in
        # program order, even when no output depends on it
        self.stateful = False
        self.site = site

    def count_outputs(self, shape_args: tuple) -> int | None:
        """The number of outputs of one call, from (shapes, dtypes, attrs) alone: the
        declared count, else the length of the shape rule's answer (Split, Unstack, Svd);
        None only for ops whose count depends on user code (custom_gradient)."""
        n = self.num_outputs
        if n is None:
            rule = SHAPES.get(self.name)
            return len(rule(*shape_args)) if rule is not None else None
        return n(*shape_args) if callable(n) else n



# name -> backend name -> KernelEntry
KERNELS: dict[str, dict[str, KernelEntry]] = {}
# name -> OpDef / shape rule / VJP rule / JVP rule. A VJP or JVP value of None marks an
# op declared non-differentiable (integer or boolean outputs).
OPS: dict[str, OpDef] = {}
SHAPES: dict[str, Callable] = {}
GRADIENTS: dict[str, Any] = {}
JVPS: dict[str, Any] = {}
# name -> batching rule `rule(op, inputs, attrs, batched, size) -> outputs`: the op run
# on operands of which some carry one extra leading batch axis (vectorized_map). `inputs`
# and `attrs` are the traced call's, with batched operands in place of traced ones;
# `batched` maps each input name to whether it carries the batch axis (a list of flags
# for list inputs); `size` is the batch size, None when unknown while tracing. It returns
# what the op returns, every output batched. A rule that cannot batch a particular call
# raises errors.NoBatchingRule; an op missing here has no rule at all.
BATCHING: dict[str, Callable] = {}
# name -> ONNX lowering `rule(emitter, node)`: emits the ONNX nodes computing the traced
# node's outputs (tapeflow.onnx.export); an op missing here cannot be exported
ONNX: dict[str, Callable] = {}
# name -> implementation over tensors of composite ops (the same on every backend)
COMPOSITES: dict[str, Callable] = {}
# name -> the op's facts as an elementwise function (see Pointwise); an op missing here is
# never fused nor run in place
POINTWISE: dict[str, "Pointwise"] = {}
_SITES: dict[tuple, str] = {}
# Hooks the engine installs so kernels registered for an active backend get set up.
kernel_listeners: list[Callable[[KernelEntry], None]] = []


def _source_literal(value) -> str:
    """An attribute's value as source text (`repr`; inf and NaN as NumPy's names)."""
    if isinstance(value, float) and value != value:
        return "np.nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "np.inf" if value > 0 else "(-np.inf)"
    return repr(value)


class Pointwise:
    """What the graph compiler may rely on about an elementwise op (one output, each
    element a function of the operands' elements at the same index, after broadcasting).

    - `expression`: the element's value as Python source that numba compiles, with
      `{name}` for each operand (a scalar of the output's dtype) and for each attribute
      named in `attrs` (its `repr`); `T` is the dtype's scalar type (`T(0)`, `T(x > 0)`)
      and `np` is NumPy. Or a callable `expression(*operands, **attrs) -> str` given the
      operands' source text (for list inputs: AddN's `" + ".join(operands)`). The fused
      loop must give the same bits as the op's kernel: each arithmetic operation in the
      kernel's order and precision (`T(0.1)`, not a Python float mixed into float32).
    - `inputs`: the operands in the order `expression` reads them (default: the op's
      inputs); a list input contributes all its members.
    - `ufunc`: the NumPy ufunc that is the op's whole kernel on the operands in `inputs`
      order, when it is one: a compiled program may then run it with `out=` into an
      operand whose buffer dies there.
    - `multi_pass`: the op's kernel makes several passes and temporaries (`dy * (y > 0)`),
      so even alone it runs as one fused loop on large arrays.
    - `vector_math`: in float32 loops, `np.exp`, `np.tanh`, `np.log`, `np.log1p` and
      `np.expm1` in the region's expressions become vmath's vectorizable functions
      (function/vmath.py).

    Example:
        >>> define_op("Cube", ["x"], shape=same_shape,
        ...           pointwise=Pointwise("{x} * {x} * {x}"))
    """

    __slots__ = ("expression", "inputs", "attrs", "ufunc", "multi_pass", "vector_math")

    def __init__(self, expression: str | Callable[..., str], *, inputs=None, attrs=(),
                 ufunc: Callable | None = None, multi_pass: bool = False,
                 vector_math: bool = False):
        self.expression = expression
        self.inputs = None if inputs is None else tuple(inputs)
        self.attrs = tuple(attrs)
        self.ufunc, self.multi_pass, self.vector_math = ufunc, multi_pass, vector_math

    def source(self, operands: list, attrs: dict) -> str:
        """The expression over the operands' source text (`operands` in `inputs` order,
        list inputs flattened), the declared attributes filled in from `attrs`."""
        values = {name: attrs[name] for name in self.attrs}
        if callable(self.expression):
            return self.expression(*operands, **values)
        named = dict(zip(self.inputs, operands))
        named.update((name, _source_literal(value)) for name, value in values.items())
        return self.expression.format(**named)

    def _bind(self, op: OpDef) -> "Pointwise":
        """This declaration for `op`, checked (a copy: its inputs filled in when omitted)."""
        inputs = self.inputs or op.inputs
        where = f"the pointwise facts of {op.name}"
        unknown = [n for n in inputs if n not in op.inputs]
        if unknown:
            raise ValueError(f"{where}: inputs {unknown} are not among the op's inputs "
                             f"{list(op.inputs)}")
        if isinstance(self.expression, str):
            used = {f for _, f, _, _ in string.Formatter().parse(self.expression) if f}
            stray = sorted(used - set(inputs) - set(self.attrs))
            if stray:
                raise ValueError(f"{where}: the expression {self.expression!r} reads "
                                 f"{stray}, neither inputs {list(inputs)} nor attrs "
                                 f"{list(self.attrs)}")
        if self.ufunc is not None and (self.attrs or set(inputs) & op.list_inputs):
            raise ValueError(f"{where}: a ufunc kernel takes plain operands only (no "
                             "attributes, no list inputs)")
        return Pointwise(self.expression, inputs=inputs, attrs=self.attrs, ufunc=self.ufunc,
                         multi_pass=self.multi_pass, vector_math=self.vector_math)

    def __repr__(self):
        shown = self.expression if isinstance(self.expression, str) else \
            getattr(self.expression, "__name__", "<callable>")
        return f"Pointwise({shown!r}, inputs={self.inputs})"


def _claim(table: str, key, override: bool, site: str) -> None:
    old = _SITES.get((table, key))
    if old is not None and not override:
        raise AlreadyExistsError(
            f"{table} for {key!r} is already registered at {old}; second registration at "
            f"{site}. Pass override=True to replace it.")
    _SITES[(table, key)] = site


def register_kernel(kernel_name: str, backend_name: str, kernel_func: Callable,
                    setup_func: Callable | None = None, dispose_func: Callable | None = None,
                    override: bool = False) -> None:
    """Register `kernel_func(inputs, attrs, backend)` for op `kernel_name` on a backend.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.register_kernel("MyCube", "numpy", lambda inputs, attrs, b: inputs["x"] ** 3)
        >>> tf.engine.run_kernel("MyCube", {"x": tf.constant([2.0])}).numpy()
        array([8.], dtype=float32)
    """
    site = _caller_site()
    _claim("kernel", (kernel_name, backend_name), override, site)
    entry = KernelEntry(kernel_name, backend_name, kernel_func, setup_func, dispose_func, site)
    KERNELS.setdefault(kernel_name, {})[backend_name] = entry
    for listener in kernel_listeners:
        listener(entry)


def get_kernel(kernel_name: str, backend_name: str) -> KernelEntry | None:
    """The registered kernel entry (`kernel_name`, `backend_name`, `kernel_func`,
    `setup_func`, `dispose_func`, `site`), or None when there is none (as tfjs's getKernel).

    Example:
        >>> tf.get_kernel("Add", "numpy").kernel_func
        <function ...>
    """
    per = KERNELS.get(kernel_name)
    return per.get(backend_name) if per is not None else None


def unregister_kernel(kernel_name: str, backend_name: str) -> None:
    """Remove a kernel registration (raises NotFoundError if there is none)."""
    if get_kernel(kernel_name, backend_name) is None:
        raise NotFoundError(f"unregister_kernel: the kernel {kernel_name!r} for backend "
                            f"{backend_name!r} is not registered")
    del KERNELS[kernel_name][backend_name]
    if not KERNELS[kernel_name]:
        del KERNELS[kernel_name]
    _SITES.pop(("kernel", (kernel_name, backend_name)), None)
    for listener in kernel_listeners:
        listener(None)


def kernels_for_backend(backend_name: str) -> list[KernelEntry]:
    return [per[backend_name] for per in KERNELS.values() if backend_name in per]


# --------------------------------------------------------------------------- rules


class RuleFn:
    """A rule function called with its operands by parameter name.

    Positional parameters name what the rule reads (`g`/`t`, `ans`, input names); keyword
    ones receive the op's attributes. Knowing the names is what lets the tape save only
    what the rules of the *recordable* inputs actually read.
    """

    __slots__ = ("fn", "params", "kwonly", "var_kw", "_get", "_first")

    def __init__(self, fn: Callable, allowed: set[str] | None = None, where: str = ""):
        self.fn = fn
        self.params, self.kwonly, self.var_kw = [], [], False
        explicit = getattr(fn, "rule_params", None)  # set by shorthands that wrap a rule
        if explicit is not None:
            self.params, self.var_kw = list(explicit), True
        for p in (inspect.signature(fn).parameters.values() if explicit is None else ()):
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                self.params.append(p.name)
            elif p.kind == p.KEYWORD_ONLY:
                self.kwonly.append(p.name)
            elif p.kind == p.VAR_KEYWORD:
                self.var_kw = True
        if allowed is not None:
            bad = [p for p in self.params if p not in allowed]
            if bad:
                raise ValueError(
                    f"{where}: rule parameter(s) {bad} are not among {sorted(allowed)}")
        # operand fetchers made once: rules run on every backward/forward step
        self._first = self.params[0] if len(self.params) == 1 else None
        self._get = itemgetter(*self.params) if len(self.params) > 1 else None

    def __call__(self, env: dict, attrs: dict):
        first = self._first
        if first is not None:
            args = (env[first],)
        elif self._get is not None:
            args = self._get(env)
        else:
            args = ()
        if self.var_kw:
            return self.fn(*args, **attrs) if attrs else self.fn(*args)
        if self.kwonly:
            return self.fn(*args, **{k: attrs[k] for k in self.kwonly if k in attrs})
        return self.fn(*args)


def passthrough(g):
    """The VJP rule of an input whose gradient is the output's gradient (x + y, identity,
    broadcast_to: broadcasting is undone by the engine)."""
    return g


class VJPRule:
    """The one form of a reverse-mode rule, whatever form it was registered in.

    - `call(env, attrs, wanted) -> {input name: gradient or list}`: env holds `g` (a list
      for several outputs), the saved operands and the `<input>_shape` entries;
    - `saves(needed) -> (input names to keep, keep the outputs?)` for the inputs that need
      a gradient, so a tape keeps only what those inputs' rules read;
    - `shape_params`: inputs whose shapes the rule reads as `<input>_shape`;
    - `passthrough`: inputs whose gradient is `g` itself (no call needed);
    - `zeros_for_none`: the rule wants zeros, not None, for outputs without a gradient.

    The registration forms (per-input rules, one joint rule, the public
    `register_gradient` form) are adapted into `call`/`saves` once, here.
    """

    __slots__ = ("call", "_saves", "_cache", "shape_params", "passthrough", "zeros_for_none")

    def __init__(self, call, saves, shape_params=(), passthrough=frozenset(),
                 zeros_for_none=False):
        self.call, self._saves, self._cache = call, saves, {}
        self.shape_params, self.passthrough = tuple(shape_params), frozenset(passthrough)
        self.zeros_for_none = zeros_for_none

    def saves(self, needed: tuple) -> tuple[frozenset, bool]:
        hit = self._cache.get(needed)
        if hit is None:
            hit = self._cache[needed] = self._saves(needed)
        return hit

    @classmethod
    def from_rules(cls, op: OpDef, rule, zeros_for_none: bool = False) -> "VJPRule":
        """From a per-input dict `{input: fn}` or one joint `fn` (tapeflow's own form)."""
        allowed = {"g", "ans", *op.inputs, *(f"{i}_shape" for i in op.inputs)}
        if callable(rule):
            fns = {None: RuleFn(rule, allowed, f"VJP of {op.name}")}
            joint, names = fns[None], op.inputs

            def call(env, attrs, wanted):
                out = joint(env, attrs)
                if isinstance(out, dict):
                    return out
                if not isinstance(out, (tuple, list)) or len(names) == 1:
                    out = (out,)
                return dict(zip(names, out))

            def reads(needed):
                return set(joint.params)
        else:
            unknown = set(rule) - set(op.inputs)
            if unknown:
                raise ValueError(f"VJP of {op.name}: rules for unknown inputs {sorted(unknown)}")
            fns = {k: RuleFn(f, allowed, f"VJP of {op.name}[{k}]") for k, f in rule.items()}

            def call(env, attrs, wanted):
                return {k: fns[k](env, attrs) for k in wanted if k in fns}

            def reads(needed):
                return {p for k in needed if k in fns for p in fns[k].params}

        def saves(needed):
            names = reads(needed)
            return frozenset(n for n in names if n in op.inputs), "ans" in names

        shape_params = sorted({p[:-6] for f in fns.values() for p in f.params
                               if p.endswith("_shape") and p[:-6] in op.inputs})
        through = {k for k, f in (rule.items() if not callable(rule) else ())
                   if f is passthrough}
        return cls(call, saves, shape_params, through, zeros_for_none)

    @classmethod
    def from_grad_func(cls, grad_func: Callable, inputs_to_save=None,
                       outputs_to_save=None) -> "VJPRule":
        """From the public form `grad_func(dy, saved, attrs)` of API §5.4 (tfjs's)."""
        in_names = list(inputs_to_save or [])
        out_flags = list(outputs_to_save or [])
        kept = (frozenset(in_names), any(out_flags))

        def call(env, attrs, wanted):
            saved = [env[k] for k in in_names]
            if out_flags:
                ans = env.get("ans")
                outs = ans if isinstance(ans, list) else [ans]
                saved += [o for o, keep in zip(outs, out_flags) if keep]
            result = grad_func(env["g"], saved, attrs)
            return dict(result) if result is not None else {}

        return cls(call, lambda needed: kept)


class JVPRule:
    """The one form of a forward-mode rule: `call(primals, tangents, ans, attrs, add)`
    returns the output tangent (a list for several outputs). `primals` and `tangents` are
    dicts by input name (a tangent is None, a Tensor, or a list for list inputs, None
    where a member has none); `add` sums two contributions to one output (it knows about
    batched tangents).
    """

    __slots__ = ("call",)

    def __init__(self, call):
        self.call = call

    @classmethod
    def from_rules(cls, op: OpDef, rule) -> "JVPRule":
        """From a per-input dict `{input: fn(t, ...)}` (contributions summed) or one joint
        `fn(tangents, ...)` (tapeflow's own form)."""
        allowed = {"t", "tangents", "ans", *op.inputs}
        if callable(rule):
            joint = RuleFn(rule, allowed, f"JVP of {op.name}")

            def call(primals, tangents, ans, attrs, add):
                env = dict(primals)
                env["ans"], env["tangents"] = ans, tangents
                return joint(env, attrs)
            return cls(call)
        fns = {k: RuleFn(f, allowed, f"JVP of {op.name}[{k}]") for k, f in rule.items()}

        def call(primals, tangents, ans, attrs, add):
            env = None
            total = None
            for k, t in tangents.items():
                fn = fns.get(k)
                if t is None or fn is None:  # no tangent, or a non-differentiable input
                    continue
                if env is None:
                    env = dict(primals)
                    env["ans"] = ans
                env["t"] = t
                c = fn(env, attrs)
                total = c if total is None else add(total, c)
            return total
        return cls(call)

    @classmethod
    def from_jvp_func(cls, jvp_func: Callable) -> "JVPRule":
        """From the public form `jvp_func(primals, tangents, attrs)` of API §5.4."""
        def call(primals, tangents, ans, attrs, add):
            return jvp_func(dict(primals), tangents, attrs)
        return cls(call)


def define_op(name: str, inputs, *, list_inputs=(), num_outputs=1, shape=None, vjp=None,
              jvp=None, batch=None, impl=None, differentiable: bool = True,
              zeros_for_none: bool = False, stateful: bool = False, native=None,
              onnx=None, pointwise: Pointwise | None = None,
              override: bool = False) -> OpDef:
    """Declare an op: its inputs, output count, shape rule, its VJP and JVP rules and its
    batching rule (see `BATCHING`).

    `impl(inputs, attrs)` makes a composite op: implemented over tensors by other ops,
    the same on every backend, recorded as one op with its own rules. `onnx` is its ONNX
    lowering (see `ONNX`). `pointwise` declares an elementwise op's facts for the graph
    compiler (see `Pointwise`): with it the op fuses with its neighbours.

    Example:
        >>> define_op("Cube", ["x"], shape=same_shape, vjp={"x": lambda g, x: 3 * g * x * x},
        ...           pointwise=Pointwise("{x} * {x} * {x}"))
    """
    site = _caller_site()
    _claim("op", name, override, site)
    op = OpDef(name, inputs, list_inputs, num_outputs, impl, site)
    op.list_output = num_outputs is None and shape is not None  # Split, Unstack
    op.stateful = stateful
    op.native = native
    OPS[name] = op
    if shape is not None:
        SHAPES[name] = shape
    if impl is not None:
        COMPOSITES[name] = impl
    if batch is not None:
        _claim("batching", name, override, site)
        BATCHING[name] = batch
    if onnx is not None:
        _claim("onnx", name, override, site)
        ONNX[name] = onnx
    if pointwise is not None:
        _claim("pointwise", name, override, site)
        POINTWISE[name] = pointwise._bind(op)
    # the rules count as registrations too: replacing them needs override=True
    if not differentiable:
        _claim("gradient", name, override, site)
        _claim("jvp", name, override, site)
        GRADIENTS[name] = None
        JVPS[name] = None
        return op
    if vjp is not None:
        _claim("gradient", name, override, site)
        GRADIENTS[name] = VJPRule.from_rules(op, vjp, zeros_for_none)
    if jvp is not None:
        _claim("jvp", name, override, site)
        JVPS[name] = JVPRule.from_rules(op, jvp)
    return op


def declare_pointwise(op_name: str, facts: Pointwise, override: bool = False) -> None:
    """Declare the elementwise facts of an op already defined (the `pointwise=` slot of
    `define_op`, for an op whose definition cannot carry them). Example:
        >>> declare_pointwise("Cube", Pointwise("{x} * {x} * {x}"))
    """
    op = OPS.get(op_name)
    if op is None:
        raise NotFoundError(f"declare_pointwise: no op {op_name!r} is defined")
    _claim("pointwise", op_name, override, _caller_site())
    POINTWISE[op_name] = facts._bind(op)


def undefine_op(name: str) -> None:
    """Remove an op's definition and every rule and fact registered with it (its kernels
    stay: `unregister_kernel`). For tests and plugins that define ops for a while.
    Example:
        >>> define_op("Cube", ["x"]); undefine_op("Cube")
    """
    if name not in OPS:
        raise NotFoundError(f"undefine_op: no op {name!r} is defined")
    for table in (OPS, SHAPES, GRADIENTS, JVPS, BATCHING, ONNX, COMPOSITES, POINTWISE):
        table.pop(name, None)
    for key in [k for k in _SITES if k[1] == name]:
        del _SITES[key]


def ensure_op(name: str, inputs: dict) -> OpDef:
    """The OpDef of `name`, creating a plain one for user kernels declared only by kernel."""
    op = OPS.get(name)
    if op is None:
        lists = [k for k, v in inputs.items() if isinstance(v, (list, tuple))]
        op = OpDef(name, list(inputs), lists, None, None, "<implicit>")
        OPS[name] = op
    return op


def register_gradient(kernel_name: str, grad_func: Callable, inputs_to_save=None,
                      outputs_to_save=None, override: bool = False) -> None:
    """Register `grad_func(dy, saved, attrs) -> {input name: gradient}` for an op.

    `saved` holds the inputs named in `inputs_to_save`, then the outputs flagged in
    `outputs_to_save`, as Tensors. Example:
        >>> tf.register_gradient("MyCube", lambda dy, saved, attrs:
        ...     {"x": dy * 3.0 * tf.square(saved[0])}, inputs_to_save=["x"])
    """
    _claim("gradient", kernel_name, override, _caller_site())
    GRADIENTS[kernel_name] = VJPRule.from_grad_func(grad_func, inputs_to_save, outputs_to_save)


def register_onnx(op_name: str, rule: Callable, override: bool = False) -> None:
    """Register `rule(emitter, node)`, the ONNX lowering of op `op_name` (the `onnx=` slot
    of `define_op`, for ops defined elsewhere). Example:
        >>> tf.onnx.register_lowering("MyCube", lambda e, node: e.add(
        ...     "Pow", [e.input(node, "x"), e.const(3.0)], e.outputs(node)))
    """
    _claim("onnx", op_name, override, _caller_site())
    ONNX[op_name] = rule


def register_jvp(kernel_name: str, jvp_func: Callable, override: bool = False) -> None:
    """Register `jvp_func(primals, tangents, attrs) -> Tensor or list` for an op.

    `primals` and `tangents` are dicts keyed by input name; a missing tangent is None.
    Example:
        >>> tf.register_jvp("MyCube", lambda p, t, attrs:
        ...     3.0 * tf.square(p["x"]) * t["x"])
    """
    _claim("jvp", kernel_name, override, _caller_site())
    JVPS[kernel_name] = JVPRule.from_jvp_func(jvp_func)
