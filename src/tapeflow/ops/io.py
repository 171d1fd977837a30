"""`print`: a stateful op writing its inputs when it runs, not when it is traced.

The tensors of the (nested) inputs are the op's inputs; everything else (strings, Python
numbers, the structure around them) is an attribute, so a traced function prints at every
call, in program order with its other stateful ops, even when nothing reads the result.
Tensors are summarized as TensorFlow's tf.print does: `[1 2 3]`, `[1 2 3 ... 8 9 10]` past
`summarize` elements per dimension, floats with the shortest of 6 (float32) or 15
(float64) significant digits that reads back exactly, else 9 or 17.
"""
from __future__ import annotations

import sys

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.dispatch import run_kernel
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..backends.numpy.strings import as_array, format_array
from ._define import defop


class _Slot:
    """Where a tensor input sits in the printed structure."""

    __slots__ = ()

    def __repr__(self) -> str:  # graph printing shows the template
        return "<tensor>"


_SLOT = _Slot()
_STDOUT, _STDERR = "stdout", "stderr"


# --------------------------------------------------------------------------- formatting


def _format_value(v, arrays, summarize: int, top: bool) -> str:
    if v is _SLOT:
        return format_array(next(arrays), summarize)
    if isinstance(v, str):
        return v if top else repr(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_format_value(v[k], arrays, summarize, False)}"
                               for k in nest._sorted_keys(v)) + "}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_format_value(m, arrays, summarize, False) for m in v)
        if isinstance(v, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(v) == 1 else ''})"
    return str(v)


def _render(natives: list, attrs: dict) -> str:
    template = attrs["template"]
    natives = [as_array(a) for a in natives]
    if len(template) == 1 and template[0] is _SLOT and natives[0].ndim == 0 \
            and natives[0].dtype == object:  # TF prints a lone string tensor as is
        return natives[0][()].decode("utf-8", "backslashreplace") + attrs["end"]
    arrays = iter(natives)
    parts = [_format_value(v, arrays, attrs["summarize"], True) for v in attrs["template"]]
    return attrs["sep"].join(parts) + attrs["end"]


def _write(text: str, stream) -> None:
    if stream == _STDOUT:
        sys.stdout.write(text)  # the stream of the moment: pytest's capsys swaps it
    elif stream == _STDERR:
        sys.stderr.write(text)
    elif isinstance(stream, str):  # "file://path": appended to
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    elif callable(getattr(stream, "write", None)):
        stream.write(text)
    else:  # a logging function such as logging.info
        stream(text[:-1] if text.endswith("\n") else text)


# --------------------------------------------------------------------------- the op


def _print_native(inputs, attrs, backend):
    _write(_render(list(inputs["inputs"]), attrs), attrs["output_stream"])


def _print_impl(inputs, attrs):
    _write(_render([t.numpy() for t in inputs["inputs"]], attrs), attrs["output_stream"])


defop("PrintV2", ["inputs"], list_inputs=("inputs",), num_outputs=0,
      shape=lambda shapes, dtypes, attrs: [], impl=_print_impl, native=_print_native,
      differentiable=False, stateful=True)


# the streams print's default argument holds (pytest and notebooks may swap sys.stdout
# later: the marker "stdout" writes to the stream of the moment)
_DEFAULT_STDOUT, _DEFAULT_STDERR = sys.stdout, sys.stderr


def _stream(output_stream):
    """What the op's attribute holds: "stdout"/"stderr", "file://path", or the object."""
    if output_stream is sys.stdout or output_stream is sys.__stdout__ \
            or output_stream is _DEFAULT_STDOUT:
        return _STDOUT
    if output_stream is sys.stderr or output_stream is sys.__stderr__ \
            or output_stream is _DEFAULT_STDERR:
        return _STDERR
    if isinstance(output_stream, str):
        if not output_stream.startswith("file://"):
            raise ValueError(f"print: output_stream string must be 'file://<path>', got "
                             f"{output_stream!r}")
        return output_stream
    if callable(getattr(output_stream, "write", None)) or callable(output_stream):
        return output_stream
    raise ValueError(f"print: unsupported output_stream {output_stream!r}; use sys.stdout, "
                     "sys.stderr, a file-like object, a logging function or 'file://path'")



def print(*inputs, sep: str = " ", end: str = "\n", output_stream=sys.stderr,  # noqa: A001
          summarize: int = 3, name=None) -> None:
    """Print `inputs` (tensors, strings, Python values, nested structures) when the op runs,
    to standard error by default, as TensorFlow does.

    Eagerly it prints at once; inside a traced `function` it prints at every call, in
    program order, and never while tracing. `summarize` elements are shown at each end of
    every dimension (-1 or None: all).

    Example:
        >>> tf.print("x:", tf.constant([1, 2, 3]), {"n": tf.constant(2.5)})
        x: [1 2 3] {'n': 2.5}
    """
    if not isinstance(sep, str) or not isinstance(end, str):
        raise TypeError(f"print: sep and end must be strings, got {sep!r} and {end!r}")
    if summarize is not None and (isinstance(summarize, bool) or not isinstance(summarize,
                                                                                 int)):
        raise TypeError(f"print: summarize must be an int, got {summarize!r}")
    tensors = []

    def slot(v):
        if isinstance(v, Variable):
            v = v.read_value()
        if isinstance(v, Tensor):
            tensors.append(v)
            return _SLOT
        if isinstance(v, np.ndarray):
            tensors.append(convert_to_tensor(v))
            return _SLOT
        return v
    template = tuple(nest.map_structure(slot, v) if nest.is_nested(v) else slot(v)
                     for v in inputs)
    run_kernel("PrintV2", {"inputs": tensors},
               {"template": template, "sep": sep, "end": end,
                "output_stream": _stream(output_stream),
                "summarize": -1 if summarize is None else summarize})
    return None


__all__ = ["print", "format_array"]
