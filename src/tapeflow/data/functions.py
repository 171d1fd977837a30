"""The user functions of a pipeline (`map`, `filter`, `flat_map`, `interleave`): traced.

As in TensorFlow, a function is traced once, when the transformation is created, into a
graph over the input's element_spec (autograph converts its Python control flow), and
the graph runs for every element; under `config.run_functions_eagerly(True)` (or
`data.experimental.enable_debug_mode()`) the Python function runs on eager tensors
instead, so `print` and `.numpy()` work inside it. Either way its ops are invisible to
gradient tapes (a pipeline is input, not part of the differentiated computation).
"""
from __future__ import annotations

import threading

import numpy as np

from .._core import nest
from .._core.backends import REGISTRY as _backends
from .._core.dispatch import no_recording
from .._core.errors import InvalidArgumentError
from .._core.tensor import Tensor, TensorSpec
from ..backends.numpy.strings import as_array
from ..function.autograph import convert_entry
from ..function.executor import natives_of
from ..function.trace import function, functions_run_eagerly
from . import structure

_debug_mode = threading.Event()


def enable_debug_mode() -> None:
    """Run every pipeline function eagerly, as `config.run_functions_eagerly(True)` does.

    Example:
        >>> tf.data.experimental.enable_debug_mode()
    """
    _debug_mode.set()


def runs_eagerly() -> bool:
    return _debug_mode.is_set() or functions_run_eagerly()


def call_with_element(fn, element):
    """`fn(*element)` for a plain tuple (TensorFlow unpacks it), else `fn(element)`."""
    return fn(*element) if type(element) is tuple else fn(element)


def _normalize_output(value):
    """Lists become tuples (as TensorFlow's map does); leaves become tensors."""
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, dict):
        return {k: _normalize_output(v) for k, v in value.items()} \
            if type(value) is dict else type(value)((k, _normalize_output(v))
                                                    for k, v in value.items())
    if isinstance(value, tuple):
        items = [_normalize_output(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def _leaf_spec(t) -> TensorSpec:
    return TensorSpec([d if isinstance(d, int) else None for d in t.shape], t.dtype)


class StructuredFunction:
    """A user function over elements of `input_spec`, traced once (or eager in debug
    mode); `output_spec` is the structure of TensorSpecs it returns.

    Example:
        >>> f = StructuredFunction(lambda x: x * 2, TensorSpec([], tf.int64), "map")
        >>> f.output_spec
        TensorSpec(shape=(), dtype=tf.int64, name=None)
    """

    def __init__(self, fn, input_spec, op: str, output_spec=None, peek=None):
        if not callable(fn):
            raise TypeError(f"{op}: the function must be callable, got {fn!r:.60}")
        self.fn, self.input_spec, self.op = fn, input_spec, op
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self._out = None  # the output structure, found while tracing
        self.eager = runs_eagerly()
        flat_in = structure.flat_specs(input_spec)
        if output_spec is not None:  # given (a function returning datasets): no trace
            self.output_spec, self._concrete = output_spec, None
            return
        # the user's function converted by autograph; the wrapper around it is library code
        self._converted = convert_entry(fn)
        self._traced = function(self._flat_call, autograph=False)
        try:
            self._concrete = self._traced.get_concrete_function(*flat_in)
        except Exception:  # noqa: BLE001 - eagerly, the first element tells instead
            if not self.eager or peek is None:
                raise
            self.output_spec = self._spec_from_first_element(peek)
            return
        self.output_spec = structure.pack(self._out, [_leaf_spec(t) for t in
                                                      self._concrete.outputs]) \
            if nest.is_nested(self._out) else _leaf_spec(self._concrete.outputs[0])

    def _spec_from_first_element(self, peek):
        """In debug mode a function that only runs eagerly (it calls `.numpy()`) is not
        traced: its output structure is what it returns for the input's first element."""
        first = peek()
        if first is None:
            raise ValueError(f"{self.op}: function {self.name} cannot be traced and the "
                             "input is empty, so its output structure is unknown")
        with no_recording():
            out = _normalize_output(call_with_element(
                self.fn, structure.pack(self.input_spec, structure.to_tensors(first))))
        leaves = nest.flatten(out) if nest.is_nested(out) else [out]
        specs = [_leaf_spec(structure.to_tensor(v, self.op)) for v in leaves]
        return structure.pack(out, specs) if nest.is_nested(out) else specs[0]

    def _flat_call(self, *flat):
        out = _normalize_output(call_with_element(
            self._converted, structure.pack(self.input_spec, list(flat))))
        if isinstance(out, Tensor) or not nest.is_nested(out):
            leaves = [out]
        else:
            leaves = nest.flatten(out)
        self._out = out
        return [structure.to_tensor(v, self.op) for v in leaves]

    def __call__(self, flat: list) -> list:
        """The outputs (flat NumPy arrays) for one element (flat NumPy arrays)."""
        with no_recording():
            if self.eager:
                out = _normalize_output(call_with_element(
                    self.fn, structure.pack(self.input_spec, structure.to_tensors(flat))))
                return self._check_eager(out)
            backend = _backends.active or _backends.ensure_active()
            if backend.native_type is np.ndarray:
                # the element's arrays straight into the compiled program: its argument
                # matching, tape hooks and tensor wrapping are what a pipeline, never
                # differentiated, does not need (a third of the cost of a call)
                captured = natives_of([ext for ext, _ in self._concrete.graph.captures],
                                      backend)
                # (a string element sliced from its column is a bare `bytes`: as a 0-d
                # object array, as kernels take it)
                outs = self._concrete._program(backend)(
                    [as_array(v) if type(v) is bytes else v for v in flat] + captured)
            else:
                outs = self._concrete._call_flat(structure.to_tensors(flat))
        return [as_array(o) for o in outs]

    def call_eager(self, flat: list):
        """The function's raw result on eager tensors (for functions returning datasets)."""
        with no_recording():
            return call_with_element(self.fn, structure.pack(self.input_spec,
                                                             structure.to_tensors(flat)))

    def _check_eager(self, out) -> list:
        specs = structure.flat_specs(self.output_spec)
        leaves = nest.flatten(out) if nest.is_nested(out) else [out]
        if (len(leaves) != len(specs)
                or not structure.same_structure(out, self.output_spec)):
            raise InvalidArgumentError(
                f"{self.op}: function {self.name} returned {out!r:.120}, whose structure "
                f"differs from the one it returned when traced: {self.output_spec}")
        arrays = [structure.to_array(v, self.op) for v in leaves]
        for k, (a, s) in enumerate(zip(arrays, specs)):
            structure.check_compatible(self.op, s, a, f"output {k} of {self.name}")
        return arrays
