"""AutoGraph: Python control flow on tensors inside `function`, by rewriting the traced
function's source (transformer.py) to call runtime operators (operators.py).

`convert(f)` gives the converted function (cached per function; None when `f` is left
alone); `converted_call` is how converted code calls other functions, converting user
code and calling library code (tapeflow, NumPy, the standard library, builtins,
`do_not_convert` functions, lambdas, functions without source) as it is.
"""
from __future__ import annotations

import ast
import functools
import inspect
import logging
import sys
import sysconfig
import textwrap
import types
import weakref

from ...ops import creation as creation_ops
from . import operators
from .transformer import AG, Converter, Lowering, Namer

_log = logging.getLogger("tapeflow")
_LIBRARIES = {"tapeflow", "numpy", "builtins", "_pytest", "pytest", "pluggy"}
_STDLIB = {p for p in (sysconfig.get_paths().get("stdlib"),
                       sysconfig.get_paths().get("platstdlib")) if p}
_SITE = {p for p in (sysconfig.get_paths().get("purelib"),
                     sysconfig.get_paths().get("platlib")) if p}
_NOT_CONVERTED = object()
_by_function: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_by_code: dict = {}  # code object -> (code of the converted function, converted source)


class ConversionError(Exception):
    """The converter cannot handle a function's source."""


def do_not_convert(func=None):
    """Mark `func` to be called as it is from converted code (a decorator).

    Example:
        >>> @tf.autograph.experimental.do_not_convert
        ... def helper(x):
        ...     return x + 1
    """
    if func is None:
        return do_not_convert
    try:
        func.__ag_do_not_convert__ = True
    except AttributeError:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        wrapper.__ag_do_not_convert__ = True
        return wrapper
    return func


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                     shape_invariants=None) -> None:
    """Options of the loop whose body this is the first statement of: the converter reads
    them (`shape_invariants=[(var, shape), ...]`, `maximum_iterations`); as a call it does
    nothing. Example: `tf.autograph.experimental.set_loop_options(shape_invariants=[(x,
    tf.TensorShape([None]))])`."""


def _is_library(f) -> bool:
    module = getattr(f, "__module__", None) or ""
    top = module.split(".")[0]
    if top in _LIBRARIES or top in getattr(sys, "stdlib_module_names", ()):
        return True
    code = getattr(f, "__code__", None)
    filename = getattr(code, "co_filename", "") or ""
    return any(filename.startswith(p) for p in _STDLIB) and not any(
        filename.startswith(p) for p in _SITE)


def _leave_alone(f) -> bool:
    return (getattr(f, "__ag_do_not_convert__", False) or getattr(f, "__ag_converted__", False)
            or f.__name__ == "<lambda>" or _is_library(f)
            or inspect.isgeneratorfunction(f) or inspect.iscoroutinefunction(f)
            or inspect.isasyncgenfunction(f))


def convert(f):
    """The converted version of the Python function `f`, or None if it is left alone (see
    module docstring) or cannot be converted (logged)."""
    if inspect.ismethod(f):
        inner = convert(f.__func__)
        return None if inner is None else types.MethodType(inner, f.__self__)
    if not inspect.isfunction(f):
        return None
    try:
        cached = _by_function.get(f)
    except TypeError:
        cached = None
    if cached is not None:
        return None if cached is _NOT_CONVERTED else cached
    result = None
    if not _leave_alone(f):
        try:
            result = _build(f)
        except ConversionError as e:
            _log.warning("autograph: %s is called unconverted: %s", f.__qualname__, e)
    try:
        _by_function[f] = _NOT_CONVERTED if result is None else result
    except TypeError:
        pass
    return result


def convert_entry(f):
    """What `function` traces for `f` with autograph on: the converted function (or
    method, partial, callable object's `__call__`), or `f` itself."""
    return _target(f)


def converted_call(f, /, *args, **kwargs):
    """Call `f` from converted code: user functions converted, everything else as is."""
    return _target(f)(*args, **kwargs)


def _target(f):
    if getattr(type(f), "converts_itself", False):
        return f  # a tapeflow.function: it converts its own function when it traces
    if isinstance(f, functools.partial):
        inner = _target(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if inspect.isfunction(f) or inspect.ismethod(f):
        return convert(f) or f
    call = getattr(type(f), "__call__", None)
    if inspect.isfunction(call) and not isinstance(f, type):
        converted = convert(call)
        if converted is not None:
            return types.MethodType(converted, f)
    return f


# ---------------------------------------------------------------------- building


def _parse(f):
    """The function's definition as an AST with its file's line numbers and columns."""
    try:
        source = inspect.getsource(f)
    except (OSError, TypeError) as e:
        raise ConversionError(f"its source is not available ({e})") from None
    dedented = textwrap.dedent(source)
    indent = len(source.splitlines()[0]) - len(dedented.splitlines()[0])
    try:
        tree = ast.parse(dedented)
    except SyntaxError as e:
        raise ConversionError(f"its source does not parse on its own ({e.msg})") from None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        raise ConversionError("its source is not a plain `def`")
    ast.increment_lineno(tree, f.__code__.co_firstlineno - 1)
    if indent:
        for n in ast.walk(tree):
            if hasattr(n, "col_offset"):
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    fn = tree.body[0]
    fn.decorator_list = []  # `function` and friends are applied by the caller already
    return fn


def transform(f):
    """The converted definition of `f` (an ast.FunctionDef)."""
    fn = _parse(f)
    namer = Namer(fn)
    Lowering(namer).function(fn)
    Converter(namer).function(fn, top=True)
    return fn


def _build(f):
    code = f.__code__
    entry = _by_code.get(code)
    if entry is None:
        fn = transform(f)
        source = ast.unparse(fn)
        # compiled under a name of its own: under its real name, a recursive call by name
        # (a module-level function calling itself) would find the factory's local instead
        # of the global, and fail with NameError
        fn.name = "ag__converted"
        freevars = list(code.co_freevars)
        # compiled inside a factory whose locals stand for the original's closure cells
        # (and ag__), so the converted function takes the same cells
        outer = ast.FunctionDef(
            name="ag__factory", args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                   kwonlyargs=[], kw_defaults=[],
                                                   kwarg=None, defaults=[]),
            body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                             value=ast.Constant(value=None)) for n in [AG] + freevars]
            + [fn, ast.Return(value=ast.Name(id=fn.name, ctx=ast.Load()))],
            decorator_list=[], returns=None, type_comment=None)
        ast.copy_location(outer, fn)
        module = ast.fix_missing_locations(ast.Module(body=[outer], type_ignores=[]))
        try:
            compiled = compile(module, code.co_filename, "exec")
        except SyntaxError as e:
            raise ConversionError(f"the converted code does not compile ({e})") from None
        factory = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
        inner = next(c for c in factory.co_consts
                     if isinstance(c, types.CodeType) and c.co_name == fn.name)
        names = {"co_name": code.co_name}
        if hasattr(code, "co_qualname"):  # Python 3.11+
            names["co_qualname"] = code.co_qualname
        inner = inner.replace(**names)
        entry = _by_code[code] = (inner, source)
    inner, _ = entry
    cells = dict(zip(code.co_freevars, f.__closure__ or ()))
    ag_cell = types.CellType(_AG)
    closure = tuple(ag_cell if n == AG else cells.get(n, types.CellType())
                    for n in inner.co_freevars)
    new = types.FunctionType(inner, f.__globals__, f.__name__, f.__defaults__, closure)
    new.__kwdefaults__ = f.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = f.__qualname__, f.__module__, f.__doc__
    new.__dict__.update(f.__dict__)
    new.__ag_converted__ = True
    new.__ag_source__ = entry[1]
    return new


def to_code(f) -> str:
    """The converted source of `f` (a Python function, method or `function`)."""
    if getattr(type(f), "converts_itself", False):  # a tapeflow.function
        f = f.python_function
    if inspect.ismethod(f):
        f = f.__func__
    if not inspect.isfunction(f):
        raise TypeError(f"to_code: expected a Python function, got {type(f).__name__}")
    try:
        return ast.unparse(transform(f)) + "\n"
    except ConversionError as e:
        raise ValueError(f"to_code: cannot convert {f.__qualname__}: {e}") from None


def for_iterable(fn, *args, **kwargs):
    """The iterable of a `for` statement: `range` (tapeflow's or Python's) with symbolic
    arguments is not built (the loop counts instead); anything else is called as
    converted code calls it."""
    if (fn is creation_ops.range or fn is range) and any(
            operators.is_symbolic(operators._value(a))
            for a in list(args) + list(kwargs.values())):
        return operators._SymbolicRange(*args, **kwargs)  # Python's range of a tensor too
    return converted_call(fn, *args, **kwargs)


# What converted code calls as `ag__.<name>`: the run-time operators, and the calls back
# into conversion (converted_call, for_iterable) defined here.
_AG = types.SimpleNamespace(**{name: value for name, value in vars(operators).items()
                               if not name.startswith("__")},
                            converted_call=converted_call, for_iterable=for_iterable)
