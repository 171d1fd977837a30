"""Matrix products as the NumPy kernels run them (backends/numpy/gemm.py, _core/threads.py):
large products split by rows over the intra-op threads, where and how decided from shapes
and the thread setting alone; the same bits on every call; BLAS held to one thread inside
kernels and given back its own setting after. No test here asserts a property that depends
on which BLAS kernel the CPU selects (a split product may differ from one call in the last
bits on some CPUs): split results are compared with np.matmul to rounding."""
import threading

import numpy as np
import pytest
import threadpoolctl

import tapeflow as tf
from tapeflow._core import threads
from tapeflow.backends.numpy import gemm, linalg


@pytest.fixture
def two_threads(monkeypatch):
    before = tf.config.threading.get_intra_op_parallelism_threads()
    tf.config.threading.set_intra_op_parallelism_threads(2)
    monkeypatch.setattr(gemm, "SPLIT_FROM", 1 << 16)  # (small arrays: fast tests)
    yield
    tf.config.threading.set_intra_op_parallelism_threads(before)


def _tol(dtype):
    return 2e-5 if dtype in (np.float32, np.complex64) else 1e-12


def test_parts_come_from_shapes_and_the_thread_setting(two_threads):
    assert gemm.parts_for(1024, 64, 64) == 4  # two per thread (from 2^16 in these tests)
    assert gemm.parts_for(100, 1024, 1024) == 1  # fewer rows than two parts of ROWS
    assert gemm.parts_for(64, 16, 16) == 1  # small: one BLAS call
    tf.config.threading.set_intra_op_parallelism_threads(1)
    assert gemm.parts_for(1024, 64, 64) == 1
    tf.config.threading.set_intra_op_parallelism_threads(4)
    assert gemm.parts_for(4096, 64, 64) == 8


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("layout", ["CC", "FC", "CF"])
def test_split_products_are_the_same_bits_every_call(dtype, layout, two_threads):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((700, 130)) + (1j * rng.standard_normal((700, 130))
                                            if dtype == np.complex64 else 0)).astype(dtype)
    y = rng.standard_normal((130, 90)).astype(dtype)
    x = np.asfortranarray(x) if layout[0] == "F" else x
    y = np.asfortranarray(y) if layout[1] == "F" else y
    first = linalg.matmul({"a": x, "b": y}, {"adjoint_a": False, "adjoint_b": False}, None)
    assert first.dtype == dtype and first.flags.c_contiguous
    np.testing.assert_allclose(first, x @ y, rtol=_tol(dtype), atol=_tol(dtype) * 10)
    for _ in range(5):
        again = linalg.matmul({"a": x, "b": y}, {"adjoint_a": False, "adjoint_b": False}, None)
        assert again.tobytes() == first.tobytes()


def test_a_split_product_is_computed_in_parts_of_whole_rows(two_threads, monkeypatch):
    seen = []
    real = threads.run_parts

    def spy(run, parts, n):
        seen.append(list(parts))
        real(run, parts, n)
    monkeypatch.setattr(gemm, "run_parts", spy)
    x = np.ones((1000, 70))
    out = gemm.product(x, np.ones((70, 30)))
    np.testing.assert_array_equal(out, np.full((1000, 30), 70.0))
    (parts,) = seen
    assert parts[0][0] == 0 and parts[-1][1] == 1000 and len(parts) == 4
    assert all(a[1] == b[0] and a[1] % gemm.ROWS == 0 for a, b in zip(parts, parts[1:]))
    assert gemm.product(np.ones((8, 8)), np.ones((8, 8))) is None  # small: np.matmul


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("rows", [160, 900])  # one BLAS call; split
def test_update_accumulates_the_product_into_ref(dtype, sign, rows, two_threads,
                                                monkeypatch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((rows, 130)).astype(dtype)
    y = rng.standard_normal((130, 190)).astype(dtype)
    ref0 = rng.standard_normal((rows, 190)).astype(dtype)
    want = ref0 + sign * (x @ y)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    results = []
    for _ in range(3):
        ref = ref0.copy()
        assert gemm.update(ref, x, y, sign)
        np.testing.assert_allclose(ref, want, rtol=tol, atol=tol)
        results.append(ref.tobytes())
    assert len(set(results)) == 1
    # x^T as BLAS reads it (column-major), unsplit: in place too
    if rows == 160:
        monkeypatch.setattr(gemm, "SPLIT_FROM", 1 << 40)
        ref = ref0.copy()
        assert gemm.update(ref, np.asfortranarray(x), y, sign)
        np.testing.assert_allclose(ref, want, rtol=tol, atol=tol)
    # through the kernel, with adjoints
    attrs = {"adjoint_a": True, "adjoint_b": False, "sign": sign}
    out = tf.engine.run_kernel("InplaceAddMatMul", {"ref": tf.constant(ref0.copy()), "a":
                               tf.constant(np.ascontiguousarray(x.T)), "b": tf.constant(y),
                               "alpha": tf.constant(dtype(0.5))}, attrs)
    np.testing.assert_allclose(out.numpy(), ref0 + sign * 0.5 * (x @ y), rtol=tol, atol=tol)


def test_update_declines_what_blas_cannot_read_in_place(two_threads):
    x, y = np.ones((900, 30)), np.ones((30, 40))
    strided = np.asfortranarray(np.zeros((900, 40)))  # ref not row-major
    assert not gemm.update(strided, x, y, 1.0) and not strided.any()
    assert not gemm.update(np.zeros((900, 40)), np.asfortranarray(x), y, 1.0)  # split
    ints = np.zeros((900, 40), np.int64)
    assert not gemm.update(ints, x.astype(np.int64), y.astype(np.int64), 1.0)
    c = np.zeros((900, 40), np.complex64)
    assert not gemm.update(c, x.astype(np.complex64), y.astype(np.complex64), 1.0)
    # the kernel then takes two steps
    out = tf.engine.run_kernel("InplaceAddMatMul", {"ref": tf.constant(c), "a": tf.constant(
        x.astype(np.complex64)), "b": tf.constant(y.astype(np.complex64)),
        "alpha": tf.constant(np.complex64(1))}, {"adjoint_a": False, "adjoint_b": False,
                                                "sign": 1.0})
    np.testing.assert_array_equal(out.numpy(), np.full((900, 40), 30.0))


def test_run_parts_runs_each_part_once_and_raises_what_a_part_raised():
    done = []
    lock = threading.Lock()

    def run(k):
        with lock:
            done.append(k)
    threads.run_parts(run, [(k,) for k in range(9)], 2)
    assert sorted(done) == list(range(9))

    def fail(k):
        if k == 3:
            raise ValueError("part 3")
    with pytest.raises(ValueError, match="part 3"):
        threads.run_parts(fail, [(k,) for k in range(6)], 2)
    done.clear()
    threads.run_parts(run, [(k,) for k in range(3)], 1)
    assert done == [0, 1, 2]


def _blas_threads() -> list:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"]


def test_kernels_hold_blas_to_one_thread_and_give_its_setting_back():
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        assert set(_blas_threads()) == {2}
        seen = []
        real = np.matmul

        def spy(*args, **kwargs):
            seen.append(_blas_threads())
            return real(*args, **kwargs)
        np.matmul = spy
        try:
            tf.matmul(tf.ones([3, 3]), tf.ones([3, 3]))
        finally:
            np.matmul = real
        assert seen and all(set(s) == {1} for s in seen)
        assert set(_blas_threads()) == {2}  # the user's NumPy has its threads back
        # nested and concurrent scopes: the last to leave restores
        with threads.blas_threads(1):
            with threads.blas_threads(3):
                assert set(_blas_threads()) == {3}
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {2}


def test_blas_threads_come_from_the_products_size_and_the_thread_setting(two_threads,
                                                                          monkeypatch):
    monkeypatch.setattr(gemm, "SPLIT_FROM", 1 << 40)
    seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(set(_blas_threads()))
        return real(*args, **kwargs)
    monkeypatch.setattr(np, "matmul", spy)
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        small, large = tf.ones([64, 256]), tf.ones([512, 256])
        tf.matmul(small, tf.ones([256, 256]))  # 4.2 M multiply-adds: the calling thread
        tf.matmul(large, tf.ones([256, 256]))  # 33.5 M: BLAS's threads, one per intra-op
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.matmul(large, tf.ones([256, 256]))
    assert seen == [{1}, {2}, {1}]


def test_a_blas_threadpoolctl_knows_but_without_openblas_functions_is_set_through_it():
    class Controller:  # (as threadpoolctl describes MKL or BLIS: no OpenBLAS symbols)
        internal_api, dynlib = "mkl", None

        def __init__(self):
            self.threads = 4

        def get_num_threads(self):
            return self.threads

        def set_num_threads(self, n):
            self.threads = n
    controller = Controller()
    library = threads._Library(controller)
    assert library.get() == 4
    library.set(1)
    assert controller.threads == 1
    # NumPy's own OpenBLAS is found by its C functions
    (numpy_blas,) = [c for c in threadpoolctl.ThreadpoolController().select(
        user_api="blas").lib_controllers if "numpy" in c.filepath] or [None]
    if numpy_blas is not None and numpy_blas.internal_api == "openblas":
        assert "openblas_get_num_threads" in threads._Library(numpy_blas).get.__name__
