"""Batching rules as fields of op definitions (`defop(..., batch=...)`): which ops have one,
where they are registered, and vectorized_map through them against map_fn's loop (float64
values, no fallback)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow._core.errors import AlreadyExistsError, NoBatchingRule
from tapeflow.ops._batching import batch_elementwise

# Every op that had a batching rule when the rules moved into the op definitions: the
# explicit ones, the broadcasting ops, and the ops the old elementwise fallback took.
BATCHED_OPS = {
    "Abs", "Acos", "Acosh", "Add", "All", "Angle", "Any", "ArgMax", "ArgMin", "Asin",
    "Asinh", "Atan", "Atan2", "Atanh", "Cast", "Ceil", "Cholesky", "Complex", "ComplexAbs",
    "ComplexSign", "Concat", "Conj", "Cos", "Cosh", "Cumprod", "Cumsum", "Digamma",
    "Dropout", "Elu", "Equal", "Erf", "Erfc", "Exp", "ExpandDims", "Expm1", "Floor",
    "FloorDiv", "FloorMod", "GatherV2", "Greater", "GreaterEqual", "Identity", "Imag",
    "IsFinite", "IsInf", "IsNan", "L2Loss", "LeakyRelu", "Less", "LessEqual", "Lgamma",
    "Log", "Log1p", "LogSoftmax", "LogSumExp", "LogicalAnd", "LogicalNot", "LogicalOr",
    "LogicalXor", "MatMul", "MatrixBandPart", "MatrixInverse", "Max", "Maximum", "Mean",
    "Min", "Minimum", "Mul", "Neg", "NotEqual", "OnesLike", "Polygamma", "Pow", "Prod",
    "Real", "RealDiv", "Reciprocal", "Relu", "Relu6", "Reshape", "Reverse", "Round",
    "Rsqrt", "SelectV2", "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Softmax", "Softplus",
    "Softsign", "Sqrt", "Square", "SquaredDifference", "Squeeze", "Stack", "StopGradient",
    "StridedSlice", "Sub", "Sum", "Tan", "Tanh", "Transpose", "Unstack", "ZerosLike",
}


def test_which_ops_have_a_batching_rule():
    have = {name for name, rule in registry.BATCHING.items() if callable(rule)}
    assert sorted(BATCHED_OPS - have) == []
    assert set(registry.BATCHING) <= set(registry.OPS)


def test_batching_rules_are_registered_with_their_ops():
    # the rule is a field of the op's definition: recorded at the same defop call
    elsewhere = {name: (registry._SITES[("batching", name)], registry.OPS[name].site)
                 for name in registry.BATCHING
                 if registry._SITES[("batching", name)] != registry.OPS[name].site}
    assert elsewhere == {}


def test_a_second_batching_rule_is_refused_unless_overridden():
    name = "TestBatchingDuplicate"
    try:
        registry.define_op(name, ["x"], batch=batch_elementwise)
        with pytest.raises(AlreadyExistsError, match="already registered at"):
            registry.define_op(name, ["x"], batch=batch_elementwise)
        registry.define_op(name, ["x"], batch=batch_elementwise, override=True)
        assert registry.BATCHING[name] is batch_elementwise
    finally:
        registry.OPS.pop(name, None)
        registry.BATCHING.pop(name, None)
        for table in ("op", "batching"):
            registry._SITES.pop((table, name), None)


def c64(x):
    return tf.constant(np.asarray(x, dtype=np.float64))


RNG = np.random.default_rng(7)
MATRIX = c64(RNG.normal(size=(4, 2)))
ROWS = c64(RNG.normal(size=(3, 4)))
PARAMS = c64(RNG.normal(size=(6, 2)))

# name -> (fn, elems): one representative per kind of rule
CASES = {
    "unary_elementwise": (lambda r: tf.exp(tf.sin(r)), (5, 4)),
    "binary_broadcasting": (lambda r: tf.maximum(r, ROWS) - 2.0 * r, (5, 4)),
    "comparison_select": (lambda r: tf.where(r > 0.0, r, ROWS), (5, 4)),
    "reduction_axis": (lambda r: tf.reduce_sum(r, axis=1) + tf.reduce_max(r, axis=-1),
                       (5, 3, 4)),
    "reduction_all": (lambda r: tf.reduce_mean(r), (5, 3, 4)),
    "softmax_cumsum": (lambda r: tf.nn.softmax(r) + tf.cumsum(r, axis=0), (5, 3, 4)),
    "matmul_constant": (lambda r: tf.matmul(r, MATRIX), (5, 3, 4)),
    "matmul_both": (lambda r: tf.matmul(r, r, transpose_b=True), (5, 3, 4)),
    "transpose": (lambda r: tf.transpose(r, [2, 0, 1]), (5, 2, 3, 4)),
    "reshape": (lambda r: tf.reshape(r, [4, 3]) * 1.5, (5, 3, 4)),
    "gather_params": (lambda r: tf.gather(r, [2, 0, 2], axis=1), (5, 3, 4)),
    "strided_slice": (lambda r: r[1:, ::-2] + r[0, :2][None], (5, 3, 4)),
    "concat_stack": (lambda r: tf.stack([tf.concat([r, ROWS], 0), tf.concat([ROWS, r], 0)]),
                     (5, 3, 4)),
    "l2_loss_of_scalar": (lambda r: tf.nn.l2_loss(r), (5,)),
    "l2_loss": (lambda r: tf.nn.l2_loss(r), (5, 3)),
}


def _vectorized(fn, elems):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback would warn (once per op) ...
        # ... and, without the loop to fall back to, raise
        return tf.vectorized_map(fn, elems, fallback_to_while_loop=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorized_map_through_batching_rules_matches_map_fn(name):
    fn, shape = CASES[name]
    x = c64(np.random.default_rng(1).normal(size=shape))
    want = tf.map_fn(fn, x).numpy()
    got = _vectorized(fn, x)
    assert got.dtype == tf.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    traced = tf.function(lambda z: _vectorized(fn, z))
    np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-12, atol=1e-14)


def test_gather_with_batched_indices_and_with_both_batched():
    indices = tf.constant(np.array([[0, 5], [3, 3], [1, 4]], dtype=np.int32))
    got = _vectorized(lambda i: tf.gather(PARAMS, i, axis=0), indices)
    np.testing.assert_allclose(got.numpy(), PARAMS.numpy()[indices.numpy()])
    got = _vectorized(lambda i: tf.gather(tf.transpose(PARAMS), i, axis=1), indices)
    want = np.stack([PARAMS.numpy().T[:, i] for i in indices.numpy()])
    np.testing.assert_allclose(got.numpy(), want)
    params = c64(np.random.default_rng(2).normal(size=(3, 6, 2)))
    got = _vectorized(lambda pair: tf.gather(pair[0], pair[1]), (params, indices))
    want = np.stack([p[i] for p, i in zip(params.numpy(), indices.numpy())])
    np.testing.assert_allclose(got.numpy(), want)


def test_size_of_each_element():
    for shape in ((4,), (4, 3, 2)):
        x = c64(np.zeros(shape))
        got = _vectorized(tf.size, x)
        np.testing.assert_array_equal(got.numpy(), [int(np.prod(shape[1:]))] * 4)


def test_an_op_without_a_batching_rule_raises_no_batching_rule():
    from tapeflow.function.batching import batch_function
    x = c64(np.zeros((3, 4)))
    assert "TopKV2" not in registry.BATCHING and "Sort" not in registry.BATCHING
    with pytest.raises(NoBatchingRule, match="no batching rule"):
        batch_function(tf.sort, x, [x], 3)


def test_an_op_defined_with_a_batching_rule_needs_nothing_else():
    name = "TestBatchingCube"
    try:
        tf.register_kernel(name, "numpy", lambda inputs, attrs, backend: inputs["x"] ** 3)
        registry.define_op(name, ["x"], shape=lambda shapes, dtypes, attrs: [
            (shapes["x"], dtypes["x"])], batch=batch_elementwise)
        x = c64(np.arange(6.0).reshape(3, 2))
        got = _vectorized(lambda r: tf.engine.run_kernel(name, {"x": r}) + 1.0, x)
        np.testing.assert_allclose(got.numpy(), x.numpy() ** 3 + 1.0)
    finally:
        tf.unregister_kernel(name, "numpy")
        for table in (registry.OPS, registry.SHAPES, registry.BATCHING):
            table.pop(name, None)
        for table in ("op", "batching"):
            registry._SITES.pop((table, name), None)
