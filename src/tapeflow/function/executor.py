"""The executor: a graph compiled once into a flat Python program over native arrays.

The program is generated source (as torch.fx does): one line per node calling the kernel
found at compile time, locals for tensors, `del` after a tensor's last use. No Tensor
objects, registry lookups or tape checks run per node. Stateful composite nodes (variable
reads and assignments) call back into the eager path, in program order.
"""
from __future__ import annotations

import itertools
import sys
import time as _time
import traceback
from typing import Callable

import numpy as np

from .._core import dtypes as _dt, registry as _reg
from .._core.backends import Backend
from .._core.dispatch import Alias, _kernel_error, check_numerics, no_recording, run_kernel
from .._core.context import ctx
from .._core.errors import InvalidArgumentError, NotFoundError
from .._core.memory import counters, native_of, reshape_native, wrap_native
from .._core.tensor import Tensor
from .._core.threads import blas
from .._core.variable import Variable
from .graph import _rule_attrs, attr_resolver, late_attrs, live_nodes

_program_ids = itertools.count(1)

# Ops whose nodes the program calls directly, declared where the op is defined:
# op name -> `factory(attrs)`, which returns a callable taking the node's input arrays
# positionally (list inputs spread, in the order of the op's inputs) and returning a
# tuple of its native output arrays (no Alias): no inputs dict, no result checks.
DIRECT: dict[str, Callable] = {}


def _resolve(r, natives):
    """A kernel result with Alias outputs turned into views of the aliased input."""
    if type(r) is Alias:
        return reshape_native(natives[r.name], r.shape)
    return r


def _single(r, natives):
    """The one output of a kernel that returned something other than a native array: an
    Alias, or a list of one (a list-output op that made a single piece)."""
    if type(r) is Alias:  # (the common case first: a reshape's view)
        return reshape_native(natives[r.name], r.shape)
    if type(r) is list or type(r) is tuple:
        (r,) = r
    return _resolve(r, natives)


def _resolve_all(rs, natives):
    return [_resolve(r, natives) for r in rs]


def _eager(op: str, attrs: dict, inputs: dict, n_out: int):
    """Run a stateful composite node (variable read or assignment) through the eager path:
    native arrays in, native arrays out."""
    wrapped = {}
    for k, v in inputs.items():
        if isinstance(v, (list, tuple)):
            wrapped[k] = [m if isinstance(m, Variable) else wrap_native(m) for m in v]
        else:
            wrapped[k] = v if isinstance(v, Variable) else wrap_native(v)
    with no_recording():
        out = run_kernel(op, wrapped, attrs)
    if n_out == 0:
        return None
    outs = out if isinstance(out, list) else [out]
    return [o._native for o in outs] if n_out > 1 else outs[0]._native


def _checker(graph, nodes: list, backend: Backend) -> Callable:
    """Debug mode's check after node `j`: its floating outputs hold no NaN/Inf, else an
    error naming the op, forward or backward, and the user's line it is blamed on."""
    def check(j: int, *arrays) -> None:
        node = nodes[j]
        outs = [wrap_native(a, backend) for a in arrays]
        what, site = node.site or ("forward", None)
        name = node.op if what == "forward" else f"{node.op} in the {what}"
        phase = "forward" if what == "forward" else (
            "backward" if what.startswith("backward") else "forward-mode")
        try:
            check_numerics(name, node.inputs, outs, phase, source=site)
        except InvalidArgumentError as e:
            err = InvalidArgumentError(f"{e} (node {node.name} of function {graph.name})")
            err.checked = True  # already names the node: Program.__call__ passes it on
            raise err from None
    return check


def _reporter(nodes: list) -> Callable:
    """profile()'s report of node `j` of a program: its kernel time, input and output
    shapes, and the bytes its outputs hold, to every active profiler."""
    def report(j: int, t0: float, natives: dict, outs: list) -> None:
        ms = (_time.perf_counter() - t0) * 1e3
        node = nodes[j]
        inputs = {k: _run_time(v) for k, v in natives.items()}
        results = [_RunTime(o) for o in outs]
        added = sum(getattr(o, "nbytes", 0) for o in outs)
        for p in ctx.profilers:
            p.on_kernel(node.op, inputs, node.attrs, results, ms, counters[2] - added,
                        counters[0] - len(outs))
            if p.keep_records:
                p.kernels[-1]["node"] = node.name
                if "members" in node.attrs:  # a fused kernel: the ops it computes
                    p.kernels[-1]["members"] = node.attrs["members"]
    return report


def _alone() -> int:
    """References a local array nobody else holds shows to sys.getrefcount (measured, not
    assumed: it depends on the interpreter)."""
    probe = np.empty(1)
    return sys.getrefcount(probe)


_ALONE = _alone()


def _reusable(node, j: int, last: dict, keep: set, inputs: set):
    """(ufunc, names of its operands, the operand whose buffer the output may take) for a
    node that can write into an input dying at it, else None: an op whose kernel is
    exactly a ufunc (its declared `Pointwise.ufunc`) may run with `out=` into that input
    (memory planning: no new buffer when an old one is free). At run time the buffer is
    taken only if no one else holds it (see Program._compile)."""
    facts = _reg.POINTWISE.get(node.op)
    if facts is None or facts.ufunc is None or len(node.outputs) != 1:
        return None
    spec = (facts.ufunc, facts.inputs)
    out = node.outputs[0]
    if not (out.dtype.is_floating or out.dtype.is_complex) or None in out._shape:
        return None
    for name in spec[1]:
        t = node.inputs.get(name)
        if (isinstance(t, Tensor) and last.get(t.id) == j and t.id not in keep
                and t.id not in inputs and t.dtype is out.dtype
                and tuple(t._shape) == tuple(out._shape)):
            return spec[0], spec[1], name
    return None


class Program:
    """A compiled graph: `program(natives) -> natives of `outputs``. A debug program
    (config.set_debug) also checks every node's floating outputs for NaN/Inf."""

    def __init__(self, graph, outputs: list, backend: Backend, debug: bool = False,
                 profiled: bool = False):
        self.graph, self.backend, self.debug, self.profiled = graph, backend, debug, profiled
        self.name = f"<tapeflow program {next(_program_ids)}: {graph.name}>"
        self.line_nodes: dict[int, object] = {}
        # lines of direct calls (DIRECT): the names of their inputs' arrays, by input
        self.line_args: dict[int, dict] = {}
        # whether a run holds blas_threads(1) (it calls BLAS kernels without their own)
        self.scoped = False
        self.fn = self._compile(outputs)

    def _constant(self, node):
        """A Const node's native array (its kernel run once), or None without one."""
        op = _reg.OPS.get("Const")
        func = op.native if op is not None else None
        if func is None:
            entry = (_reg.KERNELS.get("Const") or {}).get(self.backend.name)
            if entry is None:
                return None
            func = entry.func
        with no_recording():
            value = func({}, node.attrs, self.backend)
        return _single(value, {}) if type(value) is not self.backend.native_type else value

    def _ufunc(self, node, native_impl):
        """The ufunc a node's kernel is (its op's declared `Pointwise.ufunc`), to call
        directly, or None: only on NumPy arrays, for one output and plain operands, with
        no attributes decided at run time, and not in a profiled program (which reports
        each kernel call)."""
        facts = _reg.POINTWISE.get(node.op)
        if (facts is None or facts.ufunc is None or native_impl is not None or self.profiled
                or self.backend.native_type is not np.ndarray or len(node.outputs) != 1
                or node.dims or late_attrs(node.attrs)
                or set(facts.inputs) != set(node.inputs)):
            return None
        if not all(isinstance(v, (Tensor, Variable)) for v in node.inputs.values()):
            return None
        return facts.ufunc

    def _direct(self, node, direct, native_impl) -> Callable | None:
        """The positional call `f(*input arrays) -> outputs` a node runs as: the op's
        (DIRECT), else its kernel's (`direct`: a factory of calls for the node's fixed
        attributes, which gives None where its attributes need the kernel); None for a
        kernel call. A BLAS kernel's call runs in the program's one-thread BLAS scope."""
        if direct is not None:
            return direct(node.attrs)
        if native_impl is not None or self.backend.native_type is not np.ndarray:
            return None  # (kernels' calls are NumPy's: another backend may share a kernel)
        per = _reg.KERNELS.get(node.op)
        entry = per.get(self.backend.name) if per else None
        make = getattr(entry.func, "direct", None) if entry is not None else None
        fast = make(node.attrs) if make is not None else None
        if fast is not None and getattr(entry.func, "unscoped", None) is not None:
            self.scoped = True
        return fast

    def _compile(self, outputs: list) -> Callable:
        graph, backend = self.graph, self.backend
        names: dict[int, str] = {}
        for i, t in enumerate(graph.inputs):
            names[t.id] = f"i{i}"
        env = {"_resolve": _resolve, "_resolve_all": _resolve_all, "_single": _single,
               "_eager": _eager, "Alias": Alias, "b": backend, "_nd": backend.native_type,
               "_rc": sys.getrefcount, "_ALONE": _ALONE}
        input_ids = {t.id for t in graph.inputs}
        # last use of every tensor (node index), so its buffer can go right after
        last: dict[int, int] = {}
        nodes = live_nodes(graph.nodes, outputs)
        self.pruned = sum(n.op != "Placeholder" for n in graph.nodes) - len(nodes)
        if self.debug:
            env["_chk"] = _checker(graph, nodes, backend)
        if self.profiled:  # profile(): each node reports its time and output bytes
            env["_clock"], env["_prof"] = _time.perf_counter, _reporter(nodes)
        for j, node in enumerate(nodes):
            for m in node.tensors():
                last[m.id] = j
        keep = {t.id for t in outputs if isinstance(t, Tensor)}
        lines = [f"def program({', '.join(names[t.id] for t in graph.inputs)}):"]
        count = itertools.count()

        def ref(m):
            if isinstance(m, Variable):
                key = f"r{next(count)}"
                env[key] = m
                return key
            return names[m.id]

        for j, node in enumerate(nodes):
            outs = [f"v{next(count)}" for _ in node.outputs]
            for o, nm in zip(node.outputs, outs):
                names[o.id] = nm
            items = []
            for k, v in node.inputs.items():
                if isinstance(v, (list, tuple)):
                    items.append(f"{k!r}: [{', '.join(ref(m) for m in v)}]")
                else:
                    items.append(f"{k!r}: {ref(v)}")
            natives = "{" + ", ".join(items) + "}"
            a = f"a{j}"
            env[a] = node.attrs
            self.line_nodes[len(lines) + 1] = node
            op = _reg.OPS.get(node.op)
            native_impl = op.native if op is not None else None
            direct = DIRECT.get(node.op)
            if node.op in _reg.COMPOSITES and native_impl is None:  # the eager path
                call = f"_eager({node.op!r}, {a}, {natives}, {len(outs)})"
                lines.append(f"    {', '.join(outs)} = {call}" if outs else f"    {call}")
            elif node.op == "Const" and len(outs) == 1 and not self.profiled:
                # its value bound once: the kernel returns the same array on every call
                value = self._constant(node)
                if value is None:
                    raise NotFoundError(f"no kernel 'Const' for backend {backend.name!r} "
                                        f"(node {node.name} of {graph.name})")
                env[f"c{j}"] = value
                lines.append(f"    {outs[0]} = c{j}")
            elif (outs and not self.profiled and not node.dims and not late_attrs(node.attrs)
                  and (fast := self._direct(node, direct, native_impl)) is not None):
                env[f"k{j}"] = fast
                given = {k: [ref(m) for m in v] if isinstance(v, (list, tuple)) else ref(v)
                         for k, v in node.inputs.items()}
                args = [m for v in given.values() for m in (v if type(v) is list else (v,))]
                lines.append(f"    {', '.join(outs)}, = k{j}({', '.join(args)})")
                self.line_nodes[len(lines)] = node
                self.line_args[len(lines)] = given
            else:
                profiled = self.profiled and node.op != "Const"  # (a constant does no work)
                if profiled:
                    lines.append("    _t = _clock()")
                per = _reg.KERNELS.get(node.op)
                entry = per.get(backend.name) if per else None
                if entry is None and native_impl is None:
                    raise NotFoundError(f"no kernel {node.op!r} for backend {backend.name!r} "
                                        f"(node {node.name} of {graph.name})")
                k = f"k{j}"
                func = native_impl if native_impl is not None else entry.func
                unscoped = getattr(func, "unscoped", None)
                if unscoped is not None:  # a BLAS kernel: the program holds its scope
                    func, self.scoped = unscoped, True
                env[k] = func
                reuse = None
                if backend.native_type is np.ndarray and not self.debug:
                    reuse = _reusable(node, j, last, keep, input_ids)
                indent = "    "
                if reuse is not None:
                    ufunc, operands, into = reuse
                    env[f"u{j}"] = ufunc
                    buf = names[node.inputs[into].id]
                    args = ", ".join(names[node.inputs[m].id] for m in operands)
                    lines.append(f"    if type({buf}) is _nd and {buf}.base is None and "
                                 f"_rc({buf}) == _ALONE and {buf}.flags.writeable:")
                    lines.append(f"        {outs[0]} = u{j}({args}, out={buf})")
                    self.line_nodes[len(lines)] = node
                    self.line_args[len(lines)] = {m: ref(v) for m, v in node.inputs.items()}
                    lines.append("    else:")
                    indent = "        "
                ufunc = self._ufunc(node, native_impl)
                if ufunc is not None:
                    # the op's kernel is this ufunc (its declared Pointwise.ufunc): called
                    # as the kernel calls it, with no inputs dict or kernel call around it
                    env[f"u{j}"] = ufunc
                    given = {m: ref(v) for m, v in node.inputs.items()}
                    operands = ", ".join(given[m] for m in _reg.POINTWISE[node.op].inputs)
                    lines.append(f"{indent}{outs[0]} = u{j}({operands})")
                    self.line_nodes[len(lines)] = node
                    self.line_args[len(lines)] = given
                else:
                    lines.append(f"{indent}n = {natives}")
                    if node.dims or late_attrs(node.attrs):  # attributes decided at run time
                        env[f"d{j}"] = attr_resolver(node.attrs, list(node.dims))
                        a = f"d{j}([{', '.join(names[m.id] for m in node.dims)}])"
                    if not outs:  # a stateful op run for its effect (an assignment)
                        lines.append(f"{indent}{k}(n, {a}, b)")
                    elif len(outs) == 1:
                        lines.append(f"{indent}{outs[0]} = {k}(n, {a}, b)")
                        lines.append(f"{indent}if type({outs[0]}) is not _nd: "
                                     f"{outs[0]} = _single({outs[0]}, n)")
                    else:
                        lines.append(f"{indent}{', '.join(outs)} = "
                                     f"_resolve_all({k}(n, {a}, b), n)")
                    for extra in (len(lines) - 1, len(lines)):
                        self.line_nodes[extra] = node
                if profiled:
                    lines.append(f"    _prof({j}, _t, {natives}, [{', '.join(outs)}])")
            floats = [nm for o, nm in zip(node.outputs, outs)
                      if o.dtype.is_floating or o.dtype.is_complex]
            if self.debug and floats:
                lines.append(f"    _chk({j}, {', '.join(floats)})")
            dead = sorted({m.id for m in node.tensors()
                           if last.get(m.id) == j and m.id not in keep})
            dead += [o.id for o in node.outputs if o.id not in last and o.id not in keep]
            if dead:
                lines.append(f"    del {', '.join(names[i] for i in dead)}")
        if "n = " in "\n".join(lines):
            lines.append("    n = None")
        rets = [names[t.id] for t in outputs]
        lines.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
        source = "\n".join(lines) + "\n"
        self.source = source
        code = compile(source, self.name, "exec")
        exec(code, env)  # noqa: S102 - our own generated program
        return env["program"]

    def __call__(self, natives: list) -> tuple:
        if self.scoped:
            # BLAS on one thread for the whole run, set once (not around each product);
            # kernels that want more threads ask inside, and the caller's setting is
            # back when the run ends
            blas.enter(1)
        try:
            return self.fn(*natives)
        except Exception as e:  # noqa: BLE001 - re-raised naming the node
            found = None if getattr(e, "checked", False) else self._failing_node(e)
            if found is None:
                raise
            node, given = found
            # the op's own message, with the shapes and dtypes it really got at run time
            # (not the traced ones, which may hold None) and the line that created it
            inputs = dict(given or node.inputs)
            err = _kernel_error(node.op, {k: _run_time(v) for k, v in inputs.items()},
                                _rule_attrs(node.attrs), e)
            what, site = node.site or ("forward", None)
            made = "" if site is None else (
                f", created at {site}" if what == "forward" else f", made by the {what} "
                f"(forward op at {site})")
            raise InvalidArgumentError(f"{err} (node {node.name} of function "
                                       f"{self.graph.name}{made})") from e
        finally:
            if self.scoped:
                blas.leave()

    def _failing_node(self, e):
        """(node, its native inputs when the failing line had built them) or None."""
        for frame, line in traceback.walk_tb(e.__traceback__):
            if frame.f_code.co_filename == self.name:
                node = self.line_nodes.get(line)
                if node is None:
                    return None
                names = self.line_args.get(line)
                if names is not None:  # a direct call: its arguments are named locals
                    scope = dict(frame.f_globals, **frame.f_locals)
                    return node, {k: [scope[m] for m in v] if type(v) is list else scope[v]
                                  for k, v in names.items()}
                given = frame.f_locals.get("n")
                return node, (given if isinstance(given, dict) and given.keys()
                              == node.inputs.keys() else None)
        return None


class _RunTime:
    """A native array as error messages and shape rules read a tensor: its real shape and
    dtype (`_shape`, `shape`, `dtype`)."""

    __slots__ = ("_shape", "shape", "dtype")

    def __init__(self, array):
        self._shape = self.shape = tuple(array.shape)
        d = array.dtype  # an array-API library's dtype object: matched by name
        self.dtype = _dt.from_numpy(d) if isinstance(d, np.dtype) else _dt.as_dtype(
            str(d).rsplit(".", 1)[-1])


def _run_time(v):
    if isinstance(v, (list, tuple)):
        return [_run_time(m) for m in v]
    if isinstance(v, (Tensor, Variable)) or not hasattr(v, "shape"):
        return v
    return _RunTime(v)


def natives_of(tensors: list, backend: Backend) -> list:
    """The native arrays of eager tensors (moving data to `backend` if needed)."""
    return [t._native if t._nb is backend else native_of(t, backend) for t in tensors]

