"""The op table, traced: every row's values, VJPs and JVPs agree between eager execution
and `tapeflow.function`, with static shapes and, where the op allows it, with every
dimension unknown (an input_signature of None dims)."""
from __future__ import annotations

import glob
import importlib
import os

import numpy as np
import pytest

import tapeflow as tf

ROWS = []
for _path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "rows_*.py"))):
    ROWS.extend(importlib.import_module(f"tests.ops.{os.path.basename(_path)[:-3]}").ROWS)

from tapeflow.ops.random import STATEFUL_KERNELS

# Known gaps of the tracer (both variants), run as strict xfails so a fix shows: none today
# (output sizes that depend on values, boolean masks and sequence_mask's default maxlen,
# are unknown dims decided when the graph runs).
KNOWN_GAPS: dict[str, str] = {}
_UNSTACK = ("unstack needs the size of the unstacked dim (num) as a Python int: TensorFlow "
            "refuses an unknown one too (cannot infer num from shape)")
_QR = ("the QR gradient and JVP pick the tall or the wide formula by the matrix dims: "
       "TensorFlow's QrGrad also refuses dynamic shapes (UnimplementedError)")
# Rows that cannot run with every dim unknown (the variant below), strict xfails with why.
UNKNOWN_DIMS_GAPS: dict[str, str] = {
    **dict.fromkeys(["scatter_add/in_place", "scatter_sub/in_place", "scatter_update/in_place"],
                    "the row makes a Variable of its input's shape inside the traced function: "
                    "a variable's shape must be known when it is created (as in TensorFlow)"),
    "squeeze/all": "axis=None: which dims are 1, so the output's rank, is known only at run "
                   "time (TensorFlow gives an unknown rank, which graphs here do not have); "
                   "only dims known to be 1 are squeezed, unknown ones kept",
    **dict.fromkeys(["unstack/axis0", "unstack/axis1", "unstack/one_used",
                     "unstack/size1_axis"], _UNSTACK),
    **dict.fromkeys(["iter", "iter/batch_of_one"],
                    "iterating a tensor unstacks its first dim: " + _UNSTACK),
    **dict.fromkeys(["qr/tall", "qr/square_batched", "qr/wide", "qr/wide_batched",
                     "qr/wide_full_matrices", "qr/wide_r_only", "qr/wide_q_only", "qr/empty",
                     "qr/empty_columns", "qr/empty_rows"], _QR),
    "set_diag/wide": "set_diag builds the [M, N] diagonal matrix with diag(num_rows, "
                     "num_cols), which take ints: with M, N unknown it assumes square",
}
# Rows that create variables from the function's arguments: TensorFlow refuses that in a
# traced function too (tests/function/test_function.py checks the error).
NOT_TRACED = {"assign_add/in_place", "assign_sub/in_place"}


def _args(row, dtype="float64"):
    rng = np.random.default_rng(3)
    return [tf.constant(a) if isinstance(a, np.ndarray) else a for a in row.sample(rng, dtype)]


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [m for v in x for m in _leaves(v)]
    return [x]


def _floats(xs):
    return [x for x in xs if isinstance(x, tf.Tensor) and x.dtype.is_floating]


def _traced(row, args, unknown: bool):
    """The row's fn traced with tensors as arguments (Python values closed over)."""
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, tf.Tensor)]

    def call(*tensors):
        full = list(args)
        for i, t in zip(tensor_pos, tensors):
            full[i] = t
        return row.fn(*full, **row.kwargs)
    if not unknown:
        return tf.function(call), [args[i] for i in tensor_pos]
    sig = [tf.TensorSpec([None] * args[i].ndim, args[i].dtype) for i in tensor_pos]
    # an input_signature binds named parameters (one per spec), not *args
    names = ", ".join(f"t{i}" for i in range(len(tensor_pos)))
    named = eval(f"lambda {names}: call({names})", {"call": call})
    return tf.function(named, input_signature=sig), [args[i] for i in tensor_pos]


def _check(row, unknown: bool):
    dtype = "float64" if "float64" in row.dtypes else row.dtypes[-1]
    args = _args(row, dtype)
    eager = _leaves(row.fn(*args, **row.kwargs))
    fn, tensors = _traced(row, args, unknown)
    traced = _leaves(fn(*tensors))
    assert len(traced) == len(eager)
    if set(row.kernels) & STATEFUL_KERNELS:  # fresh draws each call: shapes and dtypes
        for t, e in zip(traced, eager):
            assert (t.shape, t.dtype) == (e.shape, e.dtype), row.name
        return
    for t, e in zip(traced, eager):
        if isinstance(e, tf.Tensor) and e.dtype.is_string:
            np.testing.assert_array_equal(t.numpy(), e.numpy(), err_msg=row.name)
        elif isinstance(e, tf.Tensor):
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-14,
                                       err_msg=row.name)
    diff = _floats(tensors)
    outs = [i for i, e in enumerate(eager) if isinstance(e, tf.Tensor) and e.dtype.is_floating]
    if not (row.grad and diff and outs):
        return
    rng = np.random.default_rng(5)
    cots = [tf.constant(rng.standard_normal(eager[i].shape).astype(eager[i].dtype.name))
            for i in outs]

    def vjp(f, xs):
        with tf.GradientTape() as tape:
            tape.watch(_floats(xs))
            ys = _leaves(f(*xs))
        return tape.gradient([ys[i] for i in outs], xs, output_gradients=cots)
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, tf.Tensor)]

    def eager_fn(*ts):
        full = list(args)
        for i, t in zip(tensor_pos, ts):
            full[i] = t
        return row.fn(*full, **row.kwargs)
    for g_t, g_e in zip(vjp(fn, tensors), vjp(eager_fn, tensors)):
        if g_e is None:
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(g_t).numpy(),
                                   tf.convert_to_tensor(g_e).numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=f"{row.name} VJP")
    tangents = [tf.constant(rng.standard_normal(x.shape).astype(x.dtype.name))
                if x.dtype.is_floating else None for x in tensors]
    pairs = [(x, t) for x, t in zip(tensors, tangents) if t is not None]

    def jvp(f):
        with tf.autodiff.ForwardAccumulator([x for x, _ in pairs], [t for _, t in pairs]) as a:
            ys = _leaves(f(*tensors))
        return [a.jvp(ys[i]) for i in outs]
    for j_t, j_e in zip(jvp(fn), jvp(eager_fn)):
        if j_e is None:
            continue
        np.testing.assert_allclose(j_t.numpy(), j_e.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{row.name} JVP")


def _params(gaps: dict):
    return [pytest.param(r, id=r.name, marks=[pytest.mark.xfail(
        strict=True, reason=gaps[r.name])] if r.name in gaps else [])
        for r in ROWS if r.name not in NOT_TRACED]


@pytest.mark.parametrize("row", _params(KNOWN_GAPS))
def test_traced_equals_eager_static_shapes(row):
    _check(row, unknown=False)


@pytest.mark.parametrize("row", _params({**KNOWN_GAPS, **UNKNOWN_DIMS_GAPS}))
def test_traced_equals_eager_unknown_dims(row):
    """Every tensor argument traced with all dims None (rank known): one graph, its
    backward and its JVP graphs must not bake in a size."""
    _check(row, unknown=True)


def test_gap_lists_name_rows():
    names = {r.name for r in ROWS}
    assert set(KNOWN_GAPS) <= names and set(UNKNOWN_DIMS_GAPS) <= names


# --------------------------------------------------------------------------- other sizes
# One graph traced with unknown dims serves inputs of any compatible sizes: each case is
# traced once and called with two sets of sizes; values, VJPs and JVPs match eager ones.
# These are the rules that build shapes (gradients splitting, summing, reshaping by sizes).
# An Index(shape, high) argument is an int32 tensor of indices below `high`.
class Index(tuple):
    pass


OTHER_SIZES = [
    ("concat", lambda x, y: tf.concat([x, y], 0) * 2.0, [(2, 3), (1, 3)], [(5, 4), (2, 4)]),
    ("split_num", lambda x: tf.split(x, 2, axis=0)[1] * 1.5, [(4, 3)], [(6, 2)]),
    ("split_rest", lambda x: tf.split(x, [1, -1], axis=1)[1], [(2, 3)], [(3, 5)]),
    ("tile", lambda x: tf.tile(x, [2, 3]), [(2, 3)], [(3, 1)]),
    ("broadcast_add", lambda x, y: x * y + y, [(4, 1), (3,)], [(2, 5), (5,)]),
    ("reduce_mean", lambda x: tf.reduce_mean(x, axis=0), [(2, 3)], [(5, 4)]),
    ("reshape_flat", lambda x: tf.reshape(x, [-1]) ** 2, [(2, 3)], [(4, 5)]),
    ("gather_rows", lambda x, i: tf.gather(x, i), [(5, 3), Index([(2,), 5])],
     [(7, 2), Index([(4,), 7])]),
    ("gather_cols", lambda x, i: tf.gather(x, i, axis=1), [(2, 5), Index([(3,), 5])],
     [(4, 6), Index([(2,), 6])]),
    ("gather_of_product", lambda x, i: tf.gather(x * x, i), [(5, 3), Index([(4,), 5])],
     [(3, 2), Index([(2,), 3])]),  # gather's sparse gradient reaching Mul's rule
    ("sequence_mask_default", lambda x, n: x[:, :1] * tf.cast(tf.sequence_mask(n), x.dtype),
     [(3, 2), Index([(3,), 5])], [(4, 1), Index([(4,), 8])]),  # width: max(n) at run time
    ("getitem_arrays", lambda x, i: x[i, :2], [(4, 3), Index([(2,), 4])],
     [(6, 5), Index([(3,), 6])]),
    ("diag_part", lambda x: tf.linalg.diag_part(x), [(3, 3)], [(5, 4)]),
    ("trace", lambda x: tf.linalg.trace(x), [(3, 3)], [(5, 5)]),
    ("einsum_diag", lambda x: tf.einsum("ii->i", x), [(3, 3)], [(4, 4)]),
    ("top_k", lambda x: tf.math.top_k(x, 2).values, [(2, 5)], [(3, 7)]),
    ("softmax_xent", lambda y, z: tf.nn.softmax_cross_entropy_with_logits(tf.nn.softmax(y), z),
     [(2, 3), (2, 3)], [(4, 6), (4, 6)]),
    ("meshgrid", lambda x, y: tf.meshgrid(x, y)[0] * tf.meshgrid(x, y)[1], [(2,), (3,)],
     [(4,), (1,)]),
    ("zeros_like_cast", lambda x: x + tf.cast(tf.zeros_like(x, tf.float32), tf.float64),
     [(2, 3)], [(1, 4)]),
    ("dense_layer", lambda x, w: tf.nn.relu(tf.matmul(x, w)), [(4, 3), (3, 2)],
     [(1, 5), (5, 3)]),
]


def _sample(shapes, rng):
    return [tf.constant(rng.integers(0, s[1], s[0]).astype(np.int32)) if type(s) is Index
            else tf.constant(rng.standard_normal(s)) for s in shapes]


@pytest.mark.parametrize("name,fn,sizes_a,sizes_b", OTHER_SIZES, ids=[c[0] for c in OTHER_SIZES])
def test_unknown_dims_graph_serves_other_sizes(name, fn, sizes_a, sizes_b):
    rng = np.random.default_rng(7)
    first = _sample(sizes_a, rng)
    sig = [tf.TensorSpec([None] * t.ndim, t.dtype) for t in first]
    names = ", ".join(f"t{i}" for i in range(len(first)))
    traced = tf.function(eval(f"lambda {names}: fn({names})", {"fn": fn}), input_signature=sig)
    for xs in (first, _sample(sizes_b, rng)):
        want = fn(*xs)
        np.testing.assert_allclose(traced(*xs).numpy(), want.numpy(), rtol=1e-12, err_msg=name)
        floats = [x for x in xs if x.dtype.is_floating]
        cot = tf.constant(rng.standard_normal(want.shape))
        grads = []
        for f in (traced, fn):
            with tf.GradientTape() as tape:
                tape.watch(floats)
                y = f(*xs)
            grads.append(tape.gradient(y, floats, output_gradients=cot))
        for g_t, g_e in zip(*grads):
            np.testing.assert_allclose(tf.convert_to_tensor(g_t).numpy(),
                                       tf.convert_to_tensor(g_e).numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=f"{name} VJP")
        tangents = [tf.constant(rng.standard_normal(x.shape)) for x in floats]
        jvps = []
        for f in (traced, fn):
            with tf.autodiff.ForwardAccumulator(floats, tangents) as acc:
                y = f(*xs)
            jvps.append(acc.jvp(y))
        np.testing.assert_allclose(jvps[0].numpy(), jvps[1].numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} JVP")
    assert traced.experimental_get_tracing_count() == 1


# TensorFlow code sizes tensors by `tf.shape(x)` in graphs with unknown dims: as shape
# arguments, a traced shape (or a slice or element of one) stands for run-time sizes.
SHAPE_TENSOR_CASES = [
    ("reshape_to_shape", lambda x, y: tf.reshape(x, tf.shape(y)), (2, 6), (3, 4)),
    ("zeros_of_shape", lambda x, y: tf.zeros(tf.shape(x), tf.float64) + x, (2, 3), (3, 3)),
    ("reshape_lead_dim", lambda x, y: tf.reshape(x, [tf.shape(x)[0], -1]) * 2.0, (2, 3),
     (2, 3)),
    ("ones_lead_dim", lambda x, y: x[:, :1] * tf.ones([tf.shape(x)[0], 3], tf.float64),
     (4, 5), (1, 1)),
    ("broadcast_to_shape", lambda x, y: tf.broadcast_to(x[:1], tf.shape(y)), (2, 3), (4, 3)),
    ("fill_tail_dims", lambda x, y: tf.fill(tf.shape(y)[1:], tf.constant(2.0, tf.float64))
     * y[0], (1, 1), (3, 2)),
    ("reshape_stacked_dims", lambda x, y: tf.reshape(x, tf.stack([tf.shape(x)[0], -1])),
     (2, 6), (1, 1)),
    ("zeros_concat_dims", lambda x, y: x + tf.zeros(
        tf.concat([tf.shape(x)[:1], tf.constant([1], tf.int32)], 0), tf.float64), (3, 2),
     (1, 1)),
    ("reshape_stacked_with_constant", lambda x, y: tf.reshape(
        x, tf.stack([tf.shape(x)[1], tf.constant(-1)])), (2, 6), (1, 1)),
]


@pytest.mark.parametrize("name,fn,shape_x,shape_y", SHAPE_TENSOR_CASES,
                         ids=[c[0] for c in SHAPE_TENSOR_CASES])
def test_traced_shape_tensors_as_shapes(name, fn, shape_x, shape_y):
    rng = np.random.default_rng(11)
    spec = tf.TensorSpec([None, None], tf.float64)
    traced = tf.function(lambda x, y: fn(x, y), input_signature=[spec, spec])
    for scale in (1, 2):  # the second call: other sizes, the same graph
        x = tf.constant(rng.standard_normal((shape_x[0] * scale, shape_x[1])))
        y = tf.constant(rng.standard_normal((shape_y[0] * scale, shape_y[1])))
        np.testing.assert_allclose(traced(x, y).numpy(), fn(x, y).numpy(), err_msg=name)
    assert traced.experimental_get_tracing_count() == 1


SECOND_ORDER = [
    ("concat", lambda x: tf.reduce_sum(tf.concat([x, x * x], 0) ** 3)),
    ("tile", lambda x: tf.reduce_sum(tf.tile(x, [2, 3]) ** 3)),
    ("gather", lambda x: tf.reduce_sum(tf.gather(x * x, [0, 1, 0]) ** 2)),
    ("split", lambda x: tf.reduce_sum(tf.split(x ** 3, 2, axis=0)[0])),
    ("reduce_mean", lambda x: tf.reduce_mean(x ** 3, axis=0)[0]),
    ("trace", lambda x: tf.linalg.trace(tf.matmul(x, x) ** 2)),
]


@pytest.mark.parametrize("name,fn", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_unknown_dims_second_order(name, fn):
    """The gradient of a traced gradient, with unknown dims, at two sizes."""
    traced = tf.function(fn, input_signature=[tf.TensorSpec([None, None], tf.float64)])
    rng = np.random.default_rng(13)
    for n in (2, 4):
        x = tf.constant(rng.standard_normal((n, n)))
        results = []
        for f in (traced, fn):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = f(x)
                g = tf.convert_to_tensor(inner.gradient(y, x))
                s = tf.reduce_sum(g * g)
            results.append(outer.gradient(s, x).numpy())
        np.testing.assert_allclose(*results, rtol=1e-10, atol=1e-12, err_msg=name)
    assert traced.experimental_get_tracing_count() == 1
