"""`map_fn` and `vectorized_map`: a function applied to every slice of `elems`' first axis.

map_fn runs a Python loop eagerly and, while tracing, one `while_loop` writing
TensorArrays (a graph loop, not unrolled). vectorized_map traces `fn` once for one element
and runs the traced ops on the whole batch with batching rules (batching.py); when an op
has no rule it warns once and falls back to map_fn.
"""
from __future__ import annotations

import logging
import warnings

from .._core import nest
from .._core.context import ctx
from .._core.convert import convert_to_tensor
from .._core.dtypes import as_dtype, DType, int32
from .._core.errors import describe, NoBatchingRule, OutOfRangeError
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from ..ops import array as array_ops, creation as creation_ops, indexing as indexing_ops
from .batching import batch_function
from .control_flow import _Sub, while_loop
from .tensor_array import TensorArray

__all__ = ["map_fn", "vectorized_map", "scan", "foldl", "foldr"]
_log = logging.getLogger("tapeflow")


def _as_tensor(v) -> Tensor:
    if isinstance(v, Variable):
        return v.read_value()
    return v if isinstance(v, Tensor) else convert_to_tensor(v)


def _flat_elems(op: str, elems) -> tuple[list, object]:
    """The leaves of `elems` as tensors of rank >= 1 with one first dimension, and that
    dimension (an int, or None when unknown while tracing)."""
    flat = [_as_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{op}: elems must hold at least one tensor")
    for t in flat:
        if t.ndim < 1:
            raise ValueError(f"{op}: elements of elems must have rank >= 1 (they are sliced "
                             f"along their first axis), got {describe(t)}")
    sizes = {t._shape[0] for t in flat if t._shape[0] is not None}
    if len(sizes) > 1:
        raise ValueError(f"{op}: all tensors of elems must have the same first dimension, "
                         f"got {[describe(t) for t in flat]}")
    return flat, (sizes.pop() if sizes else None)


def _signature(fn_output_signature, dtype):
    sig = fn_output_signature if fn_output_signature is not None else dtype
    if sig is None:
        return None

    def leaf(s):  # a TensorSpec, or a dtype: any shape
        if isinstance(s, TensorSpec):
            return s
        return s if isinstance(s, DType) else as_dtype(s)
    return nest.map_structure(leaf, sig) if nest.is_nested(sig) else leaf(sig)


def _conform(op: str, out, sig):
    """`fn`'s result as a flat list of tensors matching `sig` (converted where Python
    values), checked against it."""
    flat = nest.flatten(out)
    specs = nest.flatten(sig) if sig is not None else [None] * len(flat)
    if len(specs) != len(flat):
        raise ValueError(f"{op}: fn returned {len(flat)} values ({out!r:.100}) but "
                         f"fn_output_signature has {len(specs)}")
    result = []
    for k, (v, spec) in enumerate(zip(flat, specs)):
        if isinstance(v, Variable):
            v = v.read_value()
        dtype = spec.dtype if isinstance(spec, TensorSpec) else spec
        if not isinstance(v, Tensor):
            v = convert_to_tensor(v, dtype=dtype)
        if spec is not None:
            if v.dtype is not dtype:
                raise TypeError(f"{op}: fn output {k} is {describe(v)} but "
                                f"fn_output_signature says {dtype.name}")
            if isinstance(spec, TensorSpec) and not spec.is_compatible_with(v):
                raise ValueError(f"{op}: fn output {k} is {describe(v)}, not compatible with "
                                 f"fn_output_signature's shape {list(spec.shape)}")
        result.append(v)
    return result


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """`fn` applied to each slice `elems[i]` (nested elems give nested slices), results
    stacked along a new first axis.

    `fn_output_signature` (a dtype, TensorSpec, or a structure of them) describes fn's
    result when it differs from `elems`. Eagerly this is a Python loop; while tracing it is
    one graph loop writing TensorArrays. Differentiable.

    Example:
        >>> tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0])).numpy()
        array([1., 4., 9.], dtype=float32)
    """
    if not callable(fn):
        raise TypeError(f"map_fn: fn must be callable, got {fn!r:.60}")
    flat, n = _flat_elems("map_fn", elems)
    sig = _signature(fn_output_signature, dtype)
    if ctx.graph is None:
        result = _map_eager(fn, elems, flat, n, sig)
    else:
        result = _map_graph(fn, elems, flat, n, sig, parallel_iterations or 10)
    if not back_prop:
        result = nest.map_structure(array_ops.stop_gradient, result)
    return result


def _slice(elems, flat, i):
    pieces = [t[i] if isinstance(i, int) else indexing_ops.gather(t, i) for t in flat]
    return nest.pack_sequence_as(elems, pieces) if nest.is_nested(elems) else pieces[0]


def _map_eager(fn, elems, flat, n, sig):
    outs, structure = [], None
    for i in range(n):
        out = fn(_slice(elems, flat, i))
        structure = out if sig is None else sig
        outs.append(_conform("map_fn", out, sig))
    if n == 0:  # nothing ran: the result's structure and shapes come from the signature
        template = sig if sig is not None else nest.map_structure(
            lambda t: TensorSpec(t._shape[1:], t.dtype), elems)
        specs = nest.flatten(template)
        leaves = [creation_ops.zeros((0,) + tuple(d or 0 for d in s.shape), s.dtype)
                  if isinstance(s, TensorSpec) else creation_ops.zeros((0,), s) for s in specs]
        return nest.pack_sequence_as(template, leaves) if nest.is_nested(template) \
            else leaves[0]
    stacked = [array_ops.stack([o[k] for o in outs]) for k in range(len(outs[0]))]
    return nest.pack_sequence_as(structure, stacked) if nest.is_nested(structure) \
        else stacked[0]


def _map_graph(fn, elems, flat, n, sig, parallel_iterations):
    # fn traced once into a throwaway graph: the structure, dtypes and shapes it returns
    specs = [TensorSpec(t._shape[1:], t.dtype) for t in flat]
    seen = []

    def probe_fn(*phs):
        seen.append(fn(nest.pack_sequence_as(elems, list(phs)) if nest.is_nested(elems)
                       else phs[0]))
        return _conform("map_fn", seen[0], sig)
    probe = _Sub(probe_fn, specs, "map_fn_probe")
    out_structure = seen[0] if sig is None else sig
    out_specs = [(o._shape, o.dtype) for o in probe.flat]
    for shape, dt in out_specs:
        if any(d is None for d in shape):
            raise ValueError(f"map_fn: inside a traced function fn must return tensors of a "
                             f"known shape, got {dt.name}{list(shape)}; give "
                             "fn_output_signature with a full shape")
    size = n if n is not None else array_ops.shape(flat[0], int32)[0]
    arrays = [TensorArray(dt, size=size, element_shape=shape) for shape, dt in out_specs]

    def body(i, arrays):
        out = _conform("map_fn", fn(_slice(elems, flat, i)), sig)
        return i + 1, [ta.write(i, o) for ta, o in zip(arrays, out)]

    _, arrays = while_loop(lambda i, _: i < size, body,
                           (convert_to_tensor(0, int32), arrays),
                           parallel_iterations=parallel_iterations, name="map_fn")
    stacked = [ta.stack() for ta in arrays]
    if n is not None:
        stacked = [array_ops.reshape(s, (n,) + tuple(s._shape[1:])) for s in stacked]
    return nest.pack_sequence_as(out_structure, stacked) if nest.is_nested(out_structure) \
        else stacked[0]


# ---------------------------------------------------------------------- vectorized_map

_warned: set = set()


def vectorized_map(fn, elems, fallback_to_while_loop: bool = True, warn: bool = True):
    """`map_fn(fn, elems)` computed on the whole batch at once where `fn`'s ops allow.

    `fn` is traced once for one element; its ops then run on the batch through batching
    rules (elementwise and broadcasting ops, matmul, reductions, reshape, transpose,
    concat, stack, ...). An op without a rule falls back to a map_fn loop (with a warning
    once per op) or, with `fallback_to_while_loop=False`, raises ValueError.

    Example:
        >>> tf.vectorized_map(lambda x: tf.reduce_sum(x * x), tf.ones([4, 3])).numpy()
        array([3., 3., 3., 3.], dtype=float32)
    """
    if not callable(fn):
        raise TypeError(f"vectorized_map: fn must be callable, got {fn!r:.60}")
    flat, n = _flat_elems("vectorized_map", elems)
    try:
        out = batch_function(fn, elems, flat, n)
    except NoBatchingRule as e:
        if not fallback_to_while_loop:
            raise ValueError(f"vectorized_map: {e}; pass fallback_to_while_loop=True to run "
                             "it as a map_fn loop") from None
        if warn and e.op not in _warned:
            _warned.add(e.op)
            message = (f"vectorized_map: using a while_loop for converting {e.op} ({e}); "
                       "the result is the same, computed one element at a time")
            _log.warning(message)
            warnings.warn(message, stacklevel=2)
        return map_fn(fn, elems)
    return out


# ---------------------------------------------------------------------- scan, foldl, foldr
# An accumulator threaded through the slices of `elems`: eagerly a Python loop (each step's
# ops are taped, so gradients flow), while tracing one while_loop over the slices whose
# results go to TensorArrays (a graph loop, not unrolled; its gradient is the loop's).


def _accumulate(op: str, fn, elems, initializer, reverse: bool, keep_all: bool):
    """The accumulators of `acc = fn(acc, elems[i])` in order (from the end if `reverse`):
    every one stacked along a new first axis (`keep_all`, scan) or only the last (folds)."""
    if not callable(fn):
        raise TypeError(f"{op}: fn must be callable, got {fn!r:.60}")
    flat, n = _flat_elems(op, elems)
    if initializer is None:
        if n == 0:
            raise OutOfRangeError(f"{op}: elems is empty and no initializer was given, so "
                                  "there is no first accumulator (pass initializer=)")
        acc_structure = elems
    else:
        acc_structure = initializer
    init = None if initializer is None else [_as_tensor(a) for a in nest.flatten(initializer)]
    if ctx.graph is None:
        return _accumulate_eager(op, fn, elems, flat, n, acc_structure, init, reverse,
                                 keep_all)
    return _accumulate_graph(op, fn, elems, flat, n, acc_structure, init, reverse, keep_all)


def _conform_acc(op: str, out, acc_structure, like: list) -> list:
    """fn's result as tensors matching the accumulator's structure and dtypes."""
    flat = nest.flatten(out)
    if len(flat) != len(like):
        raise ValueError(f"{op}: fn must return a value of the accumulator's structure "
                         f"({_describe(acc_structure)}), got {out!r:.100}")
    result = []
    for k, (v, a) in enumerate(zip(flat, like)):
        v = _as_tensor(v) if isinstance(v, (Tensor, Variable)) else \
            convert_to_tensor(v, dtype=a.dtype)
        if v.dtype is not a.dtype:
            raise TypeError(f"{op}: fn returned {describe(v)} for accumulator {k}, which is "
                            f"{describe(a)}; the dtypes must match")
        result.append(v)
    return result


def _describe(structure) -> str:
    return repr(nest.map_structure(lambda t: getattr(t, "dtype", t), structure))[:100]


def _pack(structure, flat: list):
    return nest.pack_sequence_as(structure, flat) if nest.is_nested(structure) else flat[0]


def _accumulate_eager(op, fn, elems, flat, n, acc_structure, init, reverse, keep_all):
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    if init is None:
        acc = [t[order[0]] for t in flat]
        order = order[1:]
    else:
        acc = init
    kept = [acc] if init is None else []
    for i in order:
        acc = _conform_acc(op, fn(_pack(acc_structure, acc), _slice(elems, flat, i)),
                           acc_structure, acc)
        kept.append(acc)
    if not keep_all:
        return _pack(acc_structure, acc)
    if not kept:  # no slices: an empty stack of accumulator-shaped values
        stacked = [creation_ops.zeros((0,) + tuple(a._shape), a.dtype) for a in acc]
    else:
        if reverse:
            kept = kept[::-1]
        stacked = [array_ops.stack([k[j] for k in kept]) for j in range(len(acc))]
    return _pack(acc_structure, stacked)


def _accumulate_graph(op, fn, elems, flat, n, acc_structure, init, reverse, keep_all):
    size = n if n is not None else array_ops.shape(flat[0], int32)[0]
    first = (size - 1) if reverse else 0
    step = -1 if reverse else 1
    if init is None:
        index = convert_to_tensor(first, int32)
        acc = [indexing_ops.gather(t, index) for t in flat]
        start = index + step
    else:
        acc = init
        start = convert_to_tensor(first, int32)
    arrays = []
    if keep_all:
        arrays = [TensorArray(a.dtype, size=size, element_shape=a._shape) for a in acc]
        if init is None:
            arrays = [ta.write(index, a) for ta, a in zip(arrays, acc)]
    done = (lambda i: i >= 0) if reverse else (lambda i: i < size)

    def body(i, acc, arrays):
        acc = _conform_acc(op, fn(_pack(acc_structure, acc), _slice(elems, flat, i)),
                           acc_structure, acc)
        return i + step, acc, [ta.write(i, a) for ta, a in zip(arrays, acc)]

    _, acc, arrays = while_loop(lambda i, acc, arrays: done(i), body,
                                (convert_to_tensor(start, int32), list(acc), arrays),
                                name=op)
    if not keep_all:
        return _pack(acc_structure, acc)
    stacked = [ta.stack() for ta in arrays]
    if n is not None:
        stacked = [array_ops.reshape(s, (n,) + tuple(a._shape)) for s, a in zip(stacked, acc)]
    return _pack(acc_structure, stacked)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every accumulator of `acc = fn(acc, x)` over the slices `x` of `elems`' first axis,
    stacked along a new first axis (nested `elems` and accumulators allowed).

    Without `initializer` the first slice is the first accumulator (and the first result);
    `reverse=True` scans from the last slice, results staying in `elems`' order.
    Differentiable; traced as one graph loop.

    Example:
        >>> tf.scan(lambda a, x: a + x, tf.constant([1.0, 2.0, 3.0])).numpy()
        array([1., 3., 6.], dtype=float32)
    """
    out = _accumulate("scan", fn, elems, initializer, bool(reverse), True)
    return out if back_prop else nest.map_structure(array_ops.stop_gradient, out)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of `acc = fn(acc, x)` over `elems`' slices from the first.

    Example:
        >>> tf.foldl(lambda a, x: a - x, tf.constant([1.0, 2.0, 3.0])).numpy()
        -4.0
    """
    out = _accumulate("foldl", fn, elems, initializer, False, False)
    return out if back_prop else nest.map_structure(array_ops.stop_gradient, out)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of `acc = fn(acc, x)` over `elems`' slices from the last.

    Example:
        >>> tf.foldr(lambda a, x: a - x, tf.constant([1.0, 2.0, 3.0])).numpy()
        0.0
    """
    out = _accumulate("foldr", fn, elems, initializer, True, False)
    return out if back_prop else nest.map_structure(array_ops.stop_gradient, out)
