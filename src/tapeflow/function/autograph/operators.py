"""The runtime of converted code (`ag__` in it): each operator is Python control flow when
a Python value (or an eager tensor) decides, and `cond` / `while_loop` when a symbolic
tensor of the graph being traced decides.

Errors about control flow name the variable and the user's line: the converted code is
compiled with the user's file name and line numbers, so the caller's frame is the site.
"""
from __future__ import annotations

import sys

from ..._core import nest
from ..._core.context import ctx
from ..._core.convert import convert_to_tensor
from ..._core.dtypes import bool as _bool, float32 as _float32, int32 as _int32
from ..._core.errors import describe
from ..._core.tensor import SYMBOLIC, Tensor, TensorShape
from ..._core.variable import Variable
from ...ops import (array as array_ops, creation as creation_ops, indexing as indexing_ops,
                    math as math_ops)
from ...ops.creation import _RANGE_ORDER
from ..control_flow import cond, while_loop
from ..graph import FuncGraph, tracing
from ..tensor_array import shape_loop_arrays


def _site(depth: int = 2) -> str:
    f = sys._getframe(depth)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


# ---------------------------------------------------------------------- undefined values


class Undefined:
    """The value of a variable that was never assigned on the path taken."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        self.symbol_name = symbol_name

    def __repr__(self) -> str:
        return f"<undefined {self.symbol_name}>"

    def _fail(self, *_, **__):
        raise UnboundLocalError(f"local variable '{self.symbol_name}' is used before it is "
                                "assigned (it is assigned only on some paths)")

    __getattr__ = __bool__ = __call__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = _fail
    __pow__ = __floordiv__ = __mod__ = _fail


class UndefinedReturnValue:
    """The return value before a `return` ran (placeholder where a branch has none)."""

    def __repr__(self) -> str:
        return "<no return value yet>"


def ld(getter, name: str):
    """The value of a possibly unbound local (an `Undefined` if it is unbound)."""
    try:
        return getter()
    except NameError:
        return Undefined(name)


def converted(fn):
    """Marks a function defined inside converted code (already converted)."""
    try:
        fn.__ag_converted__ = True
    except AttributeError:
        pass
    return fn


# ---------------------------------------------------------------------- predicates


def _value(x):
    return x.read_value() if isinstance(x, Variable) and ctx.graph is not None else x


def is_symbolic(x) -> bool:
    return isinstance(x, Tensor) and x._buf == SYMBOLIC


def _as_bool_tensor(x, what: str, site: str) -> Tensor:
    x = _value(x)
    if not isinstance(x, Tensor):
        x = convert_to_tensor(bool(x))
    if x.dtype is not _bool or x._shape not in ((), (1,)):
        raise TypeError(f"{what} at {site} must be a boolean scalar, got {describe(x)}")
    return x


# ---------------------------------------------------------------------- expressions


def not_(x):
    """`not x`: logical_not of a symbolic tensor, Python's `not` otherwise."""
    x = _value(x)
    if is_symbolic(x):
        return math_ops.logical_not(x)
    return not x


def not_any(*flags):
    """`not (f1 or f2 ...)` for the converter's flags (cheap names: evaluated eagerly)."""
    flags = [_value(f) for f in flags]
    if any(is_symbolic(f) for f in flags):
        acc = None
        for f in flags:
            f = f if isinstance(f, Tensor) else convert_to_tensor(bool(f))
            acc = f if acc is None else math_ops.logical_or(acc, f)
        return math_ops.logical_not(acc)
    return not any(bool(f) for f in flags)


def and_(*operands):
    """`a and b ...` with each operand a thunk: lazy like Python's, `cond` on tensors."""
    first = _value(operands[0]())
    if len(operands) == 1:
        return first
    if is_symbolic(first):
        return cond(first, lambda: and_(*operands[1:]), lambda: first)
    return and_(*operands[1:]) if first else first


def or_(*operands):
    """`a or b ...` with each operand a thunk: lazy like Python's, `cond` on tensors."""
    first = _value(operands[0]())
    if len(operands) == 1:
        return first
    if is_symbolic(first):
        return cond(first, lambda: first, lambda: or_(*operands[1:]))
    return first if first else or_(*operands[1:])


def if_exp(test, body, orelse):
    """`body() if test else orelse()`; a `cond` on a symbolic test."""
    test = _value(test)
    if is_symbolic(test):
        return cond(test, body, orelse)
    return body() if test else orelse()


# ---------------------------------------------------------------------- if


def if_stmt(test, true_fn, false_fn, init: tuple, names: tuple) -> tuple:
    """An `if` statement: the branch functions take the values in `init` (the names either
    branch assigns) and return the new values of `names` (those live after it)."""
    test = _value(test)
    if not is_symbolic(test):
        return true_fn(*init) if test else false_fn(*init)
    site = _site()
    # a TensorArray with no element shape yet (nothing written) gets the shape one branch
    # writes, so that both branches give the same structure
    for fn in (true_fn, false_fn):
        init = tuple(shape_loop_arrays(tuple(init), lambda s, fn=fn: tuple(fn(*s)),
                                       strict=False))
    branches = {}  # branch name -> its outputs (Undefined ones as they are)
    aside = {}     # branch name -> its outputs traced aside (before the branch's turn)
    filled = {}    # branch name -> its outputs with return-value placeholders

    def run(key, fn, other_fn):
        def branch():
            outs = list(fn(*init))
            branches[key] = list(outs)
            for i, v in enumerate(outs):
                if isinstance(v, UndefinedReturnValue):
                    outs[i] = _placeholder_like(_other_value(other_key(key), i, other_fn))
            filled[key] = outs
            if len(branches) == 2:
                _check_branches(branches, filled, names, site)
            return tuple(None if isinstance(v, Undefined) else v for v in outs)
        return branch

    def other_key(key):
        return "else" if key == "if" else "if"

    def _other_value(key, i, other_fn):
        if key in branches:
            value = branches[key][i]
        else:  # not traced yet: trace it aside (once) to learn its value
            if key not in aside:
                aside[key] = _trace_aside(lambda: other_fn(*init))
            value = aside[key][i]
        if isinstance(value, (UndefinedReturnValue, Undefined)):
            return None
        return value

    outs = cond(test, run("if", true_fn, false_fn), run("else", false_fn, true_fn))
    outs = outs if isinstance(outs, (list, tuple)) else (outs,)
    # a variable neither branch defines stays undefined (a return value: not returned)
    return tuple(branches["if"][i] if v is None and isinstance(
        branches["if"][i], (Undefined, UndefinedReturnValue)) else v
        for i, v in enumerate(outs))


def _check_branches(branches, filled, names, site) -> None:
    """Both branches of a graph `if` must define each live variable, with one structure
    and dtype (errors naming the variable and the user's line)."""
    for i, name in enumerate(names):
        a, b = (isinstance(branches[k][i], Undefined) for k in ("if", "else"))
        if a != b:
            missing = "if" if a else "else"
            raise ValueError(
                f"'{name}' must also be initialized in the {missing} branch: it is assigned "
                f"in only one branch of the tensor-dependent `if` at {site} and used after "
                "it (a graph `cond` must produce it either way)")
        if a:
            continue
        x, y = filled["if"][i], filled["else"][i]
        fx, fy = nest.flatten(x), nest.flatten(y)
        if nest.is_nested(x) != nest.is_nested(y) or len(fx) != len(fy):
            raise TypeError(f"'{name}' has a different structure in the two branches of the "
                            f"tensor-dependent `if` at {site}: {x!r:.80} and {y!r:.80}")
        for u, v in zip(fx, fy):
            du, dv = _dtype_of(u), _dtype_of(v)
            if du is not dv:
                raise TypeError(
                    f"'{name}' is {getattr(du, 'name', du)} in the if branch but "
                    f"{getattr(dv, 'name', dv)} in the else branch of the tensor-dependent "
                    f"`if` at {site}: both branches must give it one dtype (cast one)")


def _dtype_of(v):
    if v is None or isinstance(v, (Tensor, Variable)):
        return None if v is None else v.dtype
    try:
        return convert_to_tensor(v).dtype
    except Exception:  # noqa: BLE001 - not a tensor value: cond reports it
        return type(v).__name__


def _trace_aside(fn):
    """Run `fn` into a graph of its own that is then dropped (to learn what it returns)."""
    with tracing(FuncGraph("autograph_aside")):
        return list(fn())


def _placeholder_like(value):
    """A stand-in of the structure, shapes and dtypes of `value` (a return value on the
    path that does not return, never read)."""

    def leaf(v):
        if isinstance(v, (Tensor, Variable)):
            shape = tuple(v.shape)
            if None in shape:
                raise ValueError(f"a return value of unknown shape {list(shape)} inside "
                                 "tensor-dependent control flow needs a value on every path")
            return creation_ops.zeros(shape, v.dtype)
        return v
    return nest.map_structure(leaf, value) if value is not None else None


# ---------------------------------------------------------------------- loops


def while_stmt(test, body, init: tuple, names: tuple, **options) -> tuple:
    """A `while` loop over the loop variables `init` (named `names`): Python while the
    test is a Python value, a `while_loop` from the first time it is a symbolic tensor.
    `options`: those of `set_loop_options` (shape_invariants, maximum_iterations)."""
    values = tuple(init)
    while True:
        t = _value(test(*values))
        if is_symbolic(t):
            return _graph_loop(test, body, values, names, _site(), "while", options)
        if not t:
            return values
        values = tuple(body(*values))


class _SymbolicRange:
    """`range(start, limit, delta)` with symbolic arguments, as a for loop iterates it."""

    def __init__(self, start, limit=None, delta=1, dtype=None, name=None):
        if limit is None:
            start, limit = 0, start
        vals = [_value(v) for v in (start, limit, delta)]
        if dtype is None:
            kinds = [v.dtype if isinstance(v, Tensor) else
                     (_int32 if isinstance(v, int) else _float32) for v in vals]
            dtype = max(kinds, key=_RANGE_ORDER.index)
        self.dtype = dtype
        self.start, self.limit, self.delta = (
            math_ops.cast(v, dtype) if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype)
            for v in vals)

    def count(self) -> Tensor:
        if self.dtype.is_integer:
            n = -((self.start - self.limit) // self.delta)  # ceil((limit - start) / delta)
        else:
            n = math_ops.ceil((self.limit - self.start) / self.delta)
        return math_ops.maximum(math_ops.cast(n, _int32), 0)

    def at(self, i) -> Tensor:
        return self.start + math_ops.cast(i, self.dtype) * self.delta


def for_stmt(iterable, extra_test, body, init: tuple, names: tuple, **options) -> tuple:
    """A `for` loop: over a symbolic tensor's first axis (or a range with symbolic
    arguments) a `while_loop` counting iterations; over anything else a Python loop.
    `extra_test` (or None) stops it early (break, return)."""
    it = _value(iterable)
    if isinstance(it, _SymbolicRange) or is_symbolic(it):
        return _graph_for(it, extra_test, body, tuple(init), names, _site(), options)
    if ctx.graph is not None and hasattr(type(it), "_graph_iteration"):
        return _graph_for_iterator(it._graph_iteration(), extra_test, body, tuple(init),
                                   names, _site(), options)
    values = tuple(init)
    for item in it:
        if extra_test is not None:
            t = _value(extra_test(*values))
            if is_symbolic(t):  # a break decided by a tensor: the rest runs under conds
                values = _guarded(t, body, item, values)
                continue
            if not t:
                break
        values = tuple(body(item, *values))
    return values


def _guarded(t, body, item, values):
    outs = cond(t, lambda: tuple(body(item, *values)), lambda: values)
    return tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)


def _graph_for(it, extra_test, body, init, names, site, options):
    if isinstance(it, _SymbolicRange):
        n, at = it.count(), it.at
    else:
        node = it._native.node
        if node is not None and node.op == "Range" and it._shape != (0,):
            a = node.attrs
            n = it._shape[0]

            def at(i):
                i = i if a["dtype"] is _int32 else math_ops.cast(i, a["dtype"])
                if a["delta"] != 1:
                    i = i * a["delta"]
                return i + a["start"] if a["start"] != 0 else i
        else:
            if not it._shape:
                raise TypeError(f"for loop at {site}: cannot iterate over a scalar tensor "
                                f"{describe(it)}")
            n = it._shape[0] if it._shape[0] is not None else array_ops.shape(it)[0]

            def at(i):
                return indexing_ops.gather(it, i)

    def test(i, *values):
        more = i < n
        if extra_test is None:
            return more
        return math_ops.logical_and(more, _as_bool_tensor(extra_test(*values), "the loop's stop "
                                                                          "condition", site))

    def step(i, *values):
        return (i + 1,) + tuple(body(at(i), *values))

    counter = convert_to_tensor(0, dtype=_int32)
    out = _graph_loop(test, step, (counter,) + init, ("<iteration>",) + tuple(names), site,
                      "for", options)
    return tuple(out[1:])


def _graph_for_iterator(iteration, extra_test, body, init, names, site, options):
    """A `for` over an iterable that iterates in the graph (a tf.data dataset or
    iterator: `_graph_iteration()` gives an object with `get_next() -> (has_value,
    element)` and `close()`). The loop carries has_value beside its variables; each step
    asks for the next element and runs the body under a cond on has_value, so elements
    of any number (and shapes the element spec leaves open) flow through one trace."""

    def test(more, *values):
        if extra_test is None:
            return more
        return math_ops.logical_and(more, _as_bool_tensor(extra_test(*values), "the loop's "
                                                                          "stop condition", site))

    def step(more, *values):
        has_value, element = iteration.get_next()
        if any(isinstance(v, (Undefined, UndefinedReturnValue)) for v in values):
            # the aside trace that learns a return value's type: the body alone tells it
            return (has_value,) + tuple(body(element, *values))
        outs = cond(has_value, lambda: tuple(body(element, *values)), lambda: tuple(values))
        outs = tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)
        return (has_value,) + outs

    start = convert_to_tensor(True)
    out = _graph_loop(test, step, (start,) + init, ("<has_value>",) + tuple(names), site,
                      "for", options)
    iteration.close()
    return tuple(out[1:])


def _graph_loop(test, body, init, names, site, kind, options):
    """`while_loop(test, body, init)` with the loop variables checked by name."""
    if not init:  # a loop acting only through state (`while v > 0: v.assign_sub(1.0)`)
        counter = convert_to_tensor(0, dtype=_int32)
        _graph_loop(lambda _: test(), lambda k: tuple(body()) + (k,), (counter,),
                    ("<iteration>",), site, kind, options)
        return ()
    given = {id(_value(v)): TensorShape(shape) for v, shape in
             options.get("shape_invariants") or ()}
    wanted = [[given.get(id(_value(t))) for t in nest.flatten(v)] for v in init]
    init = _initial_values(body, init, names, site, kind)
    flat_specs = [[(tuple(s) if s is not None else tuple(t.shape), t.dtype)
                   for t, s in zip(nest.flatten(v), w)] for v, w in zip(init, wanted)]
    invariants = None
    if given:  # only then: composites (TensorArray) shape themselves in while_loop
        invariants = [nest.pack_sequence_as(v, [TensorShape(s) for s, _ in specs])
                      if nest.is_nested(v) else TensorShape(specs[0][0])
                      for v, specs in zip(init, flat_specs)]

    def cond_fn(*values):
        return _as_bool_tensor(test(*values), f"the condition of the {kind} loop", site)

    def body_fn(*values):
        outs = tuple(body(*values))
        for name, before, after, specs in zip(names, init, outs, flat_specs):
            _check_iteration(name, before, after, specs, site, kind)
        return outs

    out = while_loop(cond_fn, body_fn, list(init), shape_invariants=invariants,
                        maximum_iterations=options.get("maximum_iterations"))
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def _initial_values(body, init, names, site, kind):
    init = list(init)
    for i, (name, v) in enumerate(zip(names, init)):
        if isinstance(v, Undefined):
            raise ValueError(f"'{name}' must be defined before the tensor-dependent {kind} "
                             f"loop at {site}: the loop assigns it and it is used after the "
                             "loop (or in the next iteration)")
    pending = [i for i, v in enumerate(init) if isinstance(v, UndefinedReturnValue)]
    for i, v in enumerate(init):
        if i not in pending:
            init[i] = _loop_value(names[i], v, site, kind)
    if pending:  # a return inside the loop: run the body aside to learn the value's type
        aside = _trace_aside(lambda: body(*init))
        for i in pending:
            if isinstance(aside[i], (UndefinedReturnValue, Undefined)):
                raise ValueError(f"the return value inside the {kind} loop at {site} has no "
                                 "value on any path of the loop body")
            init[i] = _placeholder_like(aside[i])
    return init


def _loop_value(name, v, site, kind):
    def leaf(x):
        x = _value(x)
        if isinstance(x, Tensor):
            return x
        if x is None:
            raise ValueError(f"'{name}' is None before the tensor-dependent {kind} loop at "
                             f"{site}; a graph loop carries only tensors: give it a tensor "
                             "value before the loop")
        try:
            return convert_to_tensor(x)
        except Exception:  # noqa: BLE001 - reported with the variable's name
            raise TypeError(f"'{name}' ({type(x).__name__}) cannot be carried by the "
                            f"tensor-dependent {kind} loop at {site}: a graph loop carries "
                            "only tensors (and lists/tuples/dicts of them)") from None
    return nest.map_structure(leaf, v) if nest.is_nested(v) else leaf(v)


def _composite(x) -> bool:
    """A nest composite (a TensorArray): while_loop checks and shapes it itself."""
    return hasattr(type(x), "_composite_flatten")


def _check_iteration(name, before, after, specs, site, kind) -> None:
    if isinstance(after, Undefined) or _composite(before) or _composite(after):
        return
    flat = nest.flatten(after) if nest.is_nested(after) else [after]
    if len(flat) != len(specs) or (nest.is_nested(before) != nest.is_nested(after)):
        raise ValueError(f"'{name}' changes its structure in the {kind} loop at {site}: "
                         f"it enters as {before!r:.80} and becomes {after!r:.80}")
    for a, (shape, dtype) in zip(flat, specs):
        a = _value(a)
        if not isinstance(a, Tensor):
            continue  # a Python number: converted to the loop variable's dtype
        if a.dtype is not dtype:
            raise TypeError(f"'{name}' has dtype {dtype.name} before the {kind} loop at "
                            f"{site}, but dtype {a.dtype.name} after one iteration; a loop "
                            "variable must keep its dtype (cast it)")
        if len(a._shape) != len(shape) or any(s is not None and d != s
                                              for d, s in zip(a._shape, shape)):
            raise ValueError(
                f"'{name}' has shape {list(shape)} before the {kind} loop at {site}, but "
                f"shape {list(a._shape)} after one iteration. To let its shape vary, give it "
                "a shape invariant: tf.autograph.experimental.set_loop_options("
                f"shape_invariants=[({name}, TensorShape([...None where it varies]))]) as "
                "the loop body's first statement, or write the loop with "
                "while_loop(..., shape_invariants=...)")
