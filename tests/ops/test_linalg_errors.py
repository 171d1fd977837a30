"""Validation of the linalg family: bad input raises InvalidArgumentError naming the op and
the offending shapes/dtypes, and leaves the engine's memory counters unchanged; shape rules
reject bad static shapes and accept unknown dimensions; unsupported gradients say so."""
import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import registry
from tapeflow.errors import InvalidArgumentError, UnimplementedError
from tests.ops.errors import check_raises, live_memory  # noqa: F401






@pytest.fixture
def t():
    """Ready-made tensors (made before the memory snapshot)."""
    return {
        "m34": tf.constant(np.ones((3, 4), np.float32)),
        "m56": tf.constant(np.ones((5, 6), np.float32)),
        "m33": tf.constant(np.eye(3, dtype=np.float32)),
        "m33_64": tf.constant(np.eye(3)),
        "b234": tf.constant(np.ones((2, 3, 4), np.float32)),
        "b345": tf.constant(np.ones((3, 4, 5), np.float32)),
        "v3": tf.constant(np.ones(3, np.float32)),
        "v4": tf.constant(np.ones(4, np.float32)),
        "s": tf.constant(1.0),
        "i33": tf.constant(np.eye(3, dtype=np.int32)),
        "bool33": tf.constant(np.eye(3, dtype=bool)),
        "singular": tf.constant(np.ones((3, 3), np.float32)),
        "indefinite": tf.constant(np.diag([1.0, -1.0, 2.0]).astype(np.float32)),
        "rhs32": tf.constant(np.ones((3, 2), np.float32)),
        "rhs42": tf.constant(np.ones((4, 2), np.float32)),
    }


# --------------------------------------------------------------------------- matmul


def test_matmul_inner_dimension_mismatch_names_both_shapes(t):
    check_raises(lambda: tf.matmul(t["m34"], t["m56"]), "MatMul", "[3, 4]", "[5, 6]")
    check_raises(lambda: t["m34"] @ t["m56"], "MatMul", "[3, 4]", "[5, 6]")
    check_raises(lambda: tf.matmul(t["m34"], t["m34"], transpose_a=True, transpose_b=True),
                 "MatMul", "[3, 4]")


def test_matmul_rank_dtype_and_flags(t):
    check_raises(lambda: tf.matmul(t["v3"], t["m34"]), "MatMul", "rank", "float32[3]")
    check_raises(lambda: tf.matmul(t["s"], t["s"]), "MatMul", "rank")
    check_raises(lambda: tf.matmul(t["m33"], t["m33_64"]), "MatMul", "float32[3, 3]",
                 "float64[3, 3]")
    check_raises(lambda: tf.matmul(t["bool33"], t["bool33"]), "MatMul", "bool")
    check_raises(lambda: tf.matmul(t["m33"], t["m33"], transpose_a=True, adjoint_a=True),
                 "MatMul", "transpose_a")
    check_raises(lambda: tf.matmul(t["b234"], t["b345"]), "MatMul", "[2]", "[3]")


def test_matmul_python_values_adapt_to_tensor_dtype(t):
    out = tf.matmul(t["m33_64"], [[1, 2], [3, 4], [5, 6]])
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), [[1, 2], [3, 4], [5, 6]])


def test_matvec_errors(t):
    check_raises(lambda: tf.linalg.matvec(t["m34"], t["v3"]), "MatVec", "[3, 4]", "[3]")
    check_raises(lambda: tf.linalg.matvec(t["m34"], t["s"]), "MatVec", "rank")
    check_raises(lambda: tf.linalg.matvec(t["v3"], t["v3"]), "MatVec", "rank")
    check_raises(lambda: tf.linalg.matvec(t["m34"], t["v3"], transpose_a=True,
                                          adjoint_a=True), "MatVec", "transpose_a")
    check_raises(lambda: tf.linalg.matvec(t["bool33"], t["bool33"][0]), "MatVec", "bool")
    check_raises(lambda: tf.linalg.matvec(t["m33"], t["m33_64"][0]), "MatVec", "float32",
                 "float64")
    check_raises(lambda: tf.linalg.matvec(t["b234"], t["m34"]), "MatVec", "[2, 3, 4]",
                 "[3, 4]")


def test_matvec_transpose_a_matches_numpy(t):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = tf.linalg.matvec(tf.constant(a), t["v3"], transpose_a=True)
    np.testing.assert_allclose(out.numpy(), a.T @ np.ones(3, np.float32))


def test_matvec_shape_rule():
    rule = registry.SHAPES["MatVec"]
    f32 = tf.float32
    assert rule({"a": (2, None, 4), "b": (None, 4)}, {"a": f32, "b": f32},
                {"adjoint_a": False}) == [((2, None), f32)]
    assert rule({"a": (4, 3), "b": (5, 4)}, {"a": f32, "b": f32},
                {"adjoint_a": True}) == [((5, 3), f32)]
    for shapes in ({"a": (3, 4), "b": (3,)}, {"a": (4,), "b": (4,)}, {"a": (3, 4), "b": ()},
                   {"a": (2, 3, 4), "b": (3, 4)}):
        with pytest.raises(InvalidArgumentError, match="MatVec"):
            rule(shapes, {"a": f32, "b": f32}, {"adjoint_a": False})
    with pytest.raises(InvalidArgumentError, match="MatVec"):
        rule({"a": (3, 4), "b": (4,)}, {"a": f32, "b": tf.float64}, {"adjoint_a": False})


# --------------------------------------------------------------------------- einsum, tensordot


def test_einsum_equation_errors(t):
    m34, m56 = t["m34"], t["m56"]
    check_raises(lambda: tf.einsum("ij,jk->ik", m34), "Einsum", "2 operand")
    check_raises(lambda: tf.einsum("ijk->i", m34), "Einsum", "rank 2")
    check_raises(lambda: tf.einsum("i1->i", m34), "Einsum", "letters")
    check_raises(lambda: tf.einsum("ij,jk->ik", m34, m56), "Einsum", "'j'", "4", "5")
    check_raises(lambda: tf.einsum("ij->ii", m34), "Einsum", "repeat")
    check_raises(lambda: tf.einsum("ij->k", m34), "Einsum", "'k'")
    check_raises(lambda: tf.einsum("...j->j", t["b234"]), "Einsum", "...")
    check_raises(lambda: tf.einsum("ij,jk->ik->i", m34, m34), "Einsum", "->")
    check_raises(lambda: tf.einsum("ij,jk", t["m33"], t["m33_64"]), "Einsum", "float32",
                 "float64")
    check_raises(lambda: tf.einsum("ij", t["bool33"]), "Einsum", "bool")


def test_tensordot_errors(t):
    check_raises(lambda: tf.tensordot(t["m34"], t["m56"], 1), "tensordot", "size 4",
                 "size 5")
    check_raises(lambda: tf.tensordot(t["m34"], t["m56"], 3), "tensordot", "axes=3")
    check_raises(lambda: tf.tensordot(t["m34"], t["m34"], ([0, 1], [0])), "tensordot")
    check_raises(lambda: tf.tensordot(t["m34"], t["m34"], ([5], [0])), "tensordot", "5")
    check_raises(lambda: tf.tensordot(t["m33"], t["m33_64"], 1), "tensordot", "float64")
    check_raises(lambda: tf.tensordot(t["bool33"], t["bool33"][0], 1), "tensordot", "bool")


# --------------------------------------------------------------------------- square-matrix ops


@pytest.mark.parametrize("op,name", [
    (tf.linalg.inv, "MatrixInverse"), (tf.linalg.det, "MatrixDeterminant"),
    (tf.linalg.slogdet, "LogMatrixDeterminant"), (tf.linalg.cholesky, "Cholesky"),
    (tf.linalg.eigh, "SelfAdjointEig"), (tf.linalg.logdet, "Cholesky"),
])
def test_square_ops_reject_bad_shapes_and_dtypes(t, op, name):
    check_raises(lambda: op(t["m34"]), name, "square", "[3, 4]")
    check_raises(lambda: op(t["v3"]), name, "rank")
    check_raises(lambda: op(t["i33"]), name, "int32")


def test_singular_and_indefinite_inputs(t):
    check_raises(lambda: tf.linalg.inv(t["singular"]), "MatrixInverse")
    check_raises(lambda: tf.linalg.cholesky(t["indefinite"]), "Cholesky")
    check_raises(lambda: tf.linalg.solve(t["singular"], t["rhs32"]), "MatrixSolve")


@pytest.mark.parametrize("op,name", [(tf.linalg.solve, "MatrixSolve"),
                                     (tf.linalg.triangular_solve, "MatrixTriangularSolve")])
def test_solves_check_shapes_and_dtypes(t, op, name):
    check_raises(lambda: op(t["m33"], t["rhs42"]), name, "[3, 3]", "[4, 2]")
    check_raises(lambda: op(t["m34"], t["rhs32"]), name, "square")
    check_raises(lambda: op(t["m33"], t["v3"]), name, "rhs", "rank")
    check_raises(lambda: op(t["m33_64"], t["rhs32"]), name, "float64", "float32")
    check_raises(lambda: op(t["i33"], [[1], [2], [3]]), name, "int32")


def test_decompositions_reject_vectors_and_integers(t):
    check_raises(lambda: tf.linalg.qr(t["v3"]), "Qr", "rank")
    check_raises(lambda: tf.linalg.svd(t["v3"]), "Svd", "rank")
    check_raises(lambda: tf.linalg.svd(t["i33"]), "Svd", "int32")
    check_raises(lambda: tf.linalg.qr(t["bool33"]), "Qr", "bool")


# --------------------------------------------------------------------------- diagonals


def test_diagonal_ops_errors(t):
    check_raises(lambda: tf.linalg.diag(t["s"]), "MatrixDiag", "rank")
    check_raises(lambda: tf.linalg.diag(t["v3"], num_rows=2, num_cols=2), "MatrixDiag",
                 "2x2")
    check_raises(lambda: tf.linalg.diag(t["v3"], k=0.5), "MatrixDiag", "k")
    check_raises(lambda: tf.linalg.diag_part(t["v3"]), "MatrixDiagPart", "rank")
    check_raises(lambda: tf.linalg.diag_part(t["m34"], k=4), "MatrixDiagPart", "k=4")
    check_raises(lambda: tf.linalg.band_part(t["m34"], -2, 0), "MatrixBandPart", "-2")
    check_raises(lambda: tf.linalg.matrix_transpose(t["v3"]), "MatrixTranspose", "rank")
    check_raises(lambda: tf.linalg.trace(t["v3"]), "MatrixDiagPart", "rank")


def test_diagonals_of_empty_matrices_are_empty_as_in_numpy():
    # k=0 is always in range (TensorFlow and NumPy): an empty matrix has an empty diagonal.
    assert tf.linalg.diag_part(tf.zeros([0, 0])).shape == [0]
    assert tf.linalg.diag_part(tf.zeros([2, 0, 3])).shape == [2, 0]
    assert tf.linalg.diag_part(tf.zeros([0, 3]), k=1).shape == [0]
    assert float(tf.linalg.trace(tf.zeros([0, 0]))) == 0.0
    assert float(tf.linalg.logdet(tf.zeros([0, 0], tf.float64))) == 0.0
    check_raises(lambda: tf.linalg.diag_part(tf.zeros([0, 3]), k=-1), "MatrixDiagPart",
                 "k=-1")
    rule = registry.SHAPES["MatrixDiagPart"]
    f32 = tf.float32
    assert rule({"input": (2, 0, 0)}, {"input": f32}, {"k": 0}) == [((2, 0), f32)]
    assert rule({"input": (None, 3)}, {"input": f32}, {"k": 5}) == [((None,), f32)]
    with pytest.raises(InvalidArgumentError, match="k=4"):
        rule({"input": (3, 4)}, {"input": f32}, {"k": 4})


def test_diag_part_backward_keeps_no_tensor():
    from tapeflow.autodiff.record import make_backward
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    bwd = make_backward("MatrixDiagPart", {"input": x}, {"k": 1},
                        [tf.linalg.diag_part(x, k=1)], {"input"})
    assert not bwd.env  # only the input's shape
    [dx] = bwd([tf.constant([1.0, 2.0])], [True])
    np.testing.assert_allclose(dx.numpy(), [[0, 1, 0], [0, 0, 2]])


# --------------------------------------------------------------------------- norm


def test_norm_errors(t):
    check_raises(lambda: tf.norm(t["v3"], ord="fro"), "norm", "fro")
    check_raises(lambda: tf.norm(t["v3"], ord=0), "norm", "ord=0")
    check_raises(lambda: tf.norm(t["m34"], ord=3, axis=(0, 1)), "norm", "ord=3")
    check_raises(lambda: tf.norm(t["b234"], axis=(0, 1, 2)), "norm", "axis")
    check_raises(lambda: tf.norm(t["m34"], axis=(1, -1)), "norm", "repeats")
    check_raises(lambda: tf.norm(t["m34"], axis=2), "norm", "axis=2")
    check_raises(lambda: tf.norm(t["i33"]), "norm", "int32")


# --------------------------------------------------------------------------- shape rules


def test_shape_rules_reject_bad_static_shapes_and_accept_unknown_dims():
    f32 = tf.float32
    mm = registry.SHAPES["MatMul"]
    plain = {"adjoint_a": False, "adjoint_b": False}
    with pytest.raises(InvalidArgumentError, match=r"MatMul.*\[3, 4\].*\[5, 6\]"):
        mm({"a": (3, 4), "b": (5, 6)}, {"a": f32, "b": f32}, plain)
    assert mm({"a": (None, 3, None), "b": (None, 7)}, {"a": f32, "b": f32}, plain) == \
        [((None, 3, 7), f32)]
    assert mm({"a": (4, 3), "b": (4, 5)}, {"a": f32, "b": f32},
              {"adjoint_a": True, "adjoint_b": False}) == [((3, 5), f32)]
    es = registry.SHAPES["Einsum"]
    assert es({"inputs": [(None, 4), (4, None)]}, {"inputs": [f32, f32]},
              {"equation": "ij,jk->ki"}) == [((None, None), f32)]
    assert es({"inputs": [(1, 3), (2, 3)]}, {"inputs": [f32, f32]},
              {"equation": "ij,ij->ij"}) == [((2, 3), f32)]
    with pytest.raises(InvalidArgumentError, match="Einsum"):
        es({"inputs": [(2, 3), (4, 3)]}, {"inputs": [f32, f32]}, {"equation": "ij,ij->ij"})
    with pytest.raises(InvalidArgumentError, match="square"):
        registry.SHAPES["MatrixInverse"]({"input": (3, 4)}, {"input": f32}, {})
    assert registry.SHAPES["Svd"]({"input": (2, None, 3)}, {"input": f32},
                                  {"full_matrices": False, "compute_uv": True}) == \
        [((2, None), f32), ((2, None, None), f32), ((2, 3, None), f32)]
    with pytest.raises(InvalidArgumentError, match="MatrixSolve"):
        registry.SHAPES["MatrixSolve"]({"matrix": (3, 3), "rhs": (4, 1)},
                                       {"matrix": f32, "rhs": f32}, {"adjoint": False})


# --------------------------------------------------------------------------- gradients


def test_unsupported_decomposition_gradients_say_so():
    tall = tf.constant(np.arange(6.0).reshape(3, 2) + np.eye(3, 2))
    with tf.GradientTape() as tape:
        tape.watch(tall)
        q, r = tf.linalg.qr(tall, full_matrices=True)  # q's last column is not unique
        loss = tf.reduce_sum(q)
    with pytest.raises(UnimplementedError, match="Qr.*full_matrices"):
        tape.gradient(loss, tall)
    with tf.GradientTape() as tape:
        tape.watch(tall)
        s, u, v = tf.linalg.svd(tall, full_matrices=True)
        loss = tf.reduce_sum(u)
    with pytest.raises(UnimplementedError, match="full_matrices"):
        tape.gradient(loss, tall)


def test_gradient_of_logdet_is_the_inverse():
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    x = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.linalg.logdet(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.linalg.inv(a), rtol=1e-10)


def test_matmul_gradient_keeps_only_the_other_operand():
    a = tf.constant(np.ones((2, 3)))
    b = tf.constant(np.ones((3, 4)))
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = tf.matmul(a, b)
    g = tape.gradient(y, a)
    np.testing.assert_allclose(g.numpy(), np.full((2, 3), 4.0))
    rule = registry.GRADIENTS["MatMul"]
    assert rule.saves(("a",)) == (frozenset({"b"}), False)
    assert rule.saves(("b",)) == (frozenset({"a"}), False)
