"""Matrix products split by rows from numba's parallel loop (backends/numpy/gemm.py): the
BLAS NumPy calls is found, the split product equals np.matmul bit for bit for every
layout BLAS reads in place, and products the path does not take come back as None."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends.numpy import gemm


@pytest.fixture
def two_threads(monkeypatch):
    """Two intra-op threads, and a BLAS of one thread (the split's condition: a BLAS
    with threads of its own splits products itself); the split loop from the first
    product on."""
    monkeypatch.setattr(gemm, "COMPILE_AFTER", 0)
    before, blas = tf.config.threading.get_intra_op_parallelism_threads(), gemm.blas_threads()
    tf.config.threading.set_intra_op_parallelism_threads(2)
    gemm.set_blas_threads(1)
    yield
    tf.config.threading.set_intra_op_parallelism_threads(before)
    gemm.set_blas_threads(blas)


def test_numpy_bundled_blas_is_found():
    # NumPy's wheels bundle OpenBLAS with 64-bit-int CBLAS symbols; if a NumPy release
    # renames them, products fall back to np.matmul (correct, slower): this says so
    assert gemm._BLAS is not None, "NumPy's bundled OpenBLAS symbols were not found"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["CC", "FC", "CF", "FF"])
def test_split_product_equals_matmul_bit_for_bit(dtype, layout, two_threads):
    rng = np.random.default_rng(3)
    m, k, n = 203, 150, 141  # (odd sizes: parts of unequal rows)
    x = rng.standard_normal((m, k)).astype(dtype)
    y = rng.standard_normal((k, n)).astype(dtype)
    x[5, 7] = np.nan
    y[3, 2] = np.inf
    if layout[0] == "F":
        x = np.ascontiguousarray(x.T).T  # the transpose of a row-major array
    if layout[1] == "F":
        y = np.ascontiguousarray(y.T).T
    want = np.matmul(x, y)
    gemm._choices.clear()
    for _ in range(6):  # ThreadChoice: split, one call (twice each), then the faster
        got = gemm.product(x, y)
        assert got is not None and got.dtype == dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    (choice,) = gemm._choices.values()
    assert min(choice.runs) >= 2  # both ways ran
    # and through the op, adjoints included
    a = tf.constant(np.ascontiguousarray(x.T))
    np.testing.assert_array_equal(tf.matmul(a, y, adjoint_a=True).numpy(), want)


def test_the_split_loop_compiles_after_a_few_large_products(monkeypatch, two_threads):
    """Not during a traced function's first call (its compile would hold numba's lock
    while the function's fused kernels load from the disk cache): until then each product
    is one call of the same BLAS, equal to np.matmul."""
    monkeypatch.setattr(gemm, "COMPILE_AFTER", 3)
    monkeypatch.setattr(gemm, "_seen", {})
    gemm._choices.clear()
    big = np.arange(256 * 256, dtype=np.float32).reshape(256, 256) / 65536
    want = big @ big
    for _ in range(3):
        np.testing.assert_array_equal(gemm.product(big, big), want)
    assert not gemm._choices  # no split tried yet
    np.testing.assert_array_equal(gemm.product(big, big), want)
    assert len(gemm._choices) == 1  # (compiled already in this session: it runs)


def test_products_the_path_does_not_take(two_threads):
    rng = np.random.default_rng(4)
    big = rng.standard_normal((256, 256)).astype(np.float32)
    assert gemm.product(big[:8], big) is None  # too small (fewer than SPLIT_FROM)
    assert gemm.product(big[:, ::2], big[::2]) is None  # strided: not in place
    assert gemm.product(big, big.astype(np.float64)) is None  # mixed dtypes
    assert gemm.product(big.astype(np.int64), big.astype(np.int64)) is None
    assert gemm.product(big.astype(np.complex64), big.astype(np.complex64)) is None
    big = rng.standard_normal((512, 512)).astype(np.float32)
    gemm.set_blas_threads(2)
    assert gemm.product(big, big) is None  # BLAS splits it with threads of its own
    gemm.set_blas_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    assert gemm.product(big, big) is None  # one thread: nothing to split


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_update_accumulates_the_product_into_ref(dtype, sign, two_threads):
    rng = np.random.default_rng(6)
    x = np.ascontiguousarray(rng.standard_normal((160, 130)).astype(dtype).T).T  # x^T layout
    y = rng.standard_normal((130, 190)).astype(dtype)
    ref0 = rng.standard_normal((160, 190)).astype(dtype)
    want = ref0 + sign * (x @ y)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    gemm._choices.clear()
    for _ in range(6):  # split and not (ThreadChoice tries both)
        ref = ref0.copy()
        assert gemm.update(ref, x, y, sign)
        np.testing.assert_allclose(ref, want, rtol=tol, atol=tol)
    assert all(min(c.runs) >= 2 for c in gemm._choices.values())
    # through the kernel, with adjoints, and where BLAS cannot read an operand in place
    ref = ref0.copy()
    attrs = {"adjoint_a": True, "adjoint_b": False, "sign": sign}
    out = tf.engine.run_kernel("InplaceAddMatMul", {"ref": tf.constant(ref), "a": tf.constant(
        np.ascontiguousarray(x.T)), "b": tf.constant(y), "alpha": tf.constant(dtype(0.5))},
        attrs)
    np.testing.assert_allclose(out.numpy(), ref0 + sign * 0.5 * (x @ y), rtol=tol, atol=tol)
    strided = np.asfortranarray(ref0)  # not row-major: the product, then an add
    assert not gemm.update(strided, x, y, sign)
