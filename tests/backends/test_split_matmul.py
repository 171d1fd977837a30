"""MatMul's split over the intra-op threads (backends/numpy/linalg.py): the same values
as one BLAS call, for either choice of ThreadChoice, and only for products large enough."""
import os
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.backends.numpy import gemm, linalg


@pytest.fixture(autouse=True)
def one_blas_thread():
    """The split runs only over a BLAS of one thread (one with threads of its own splits
    large products itself)."""
    before = gemm.blas_threads()
    gemm.set_blas_threads(1)
    yield
    gemm.set_blas_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("adjoint_a", [False, True])
def test_split_matmul_equals_one_blas_call(dtype, adjoint_a, monkeypatch):
    monkeypatch.setattr(linalg, "SPLIT_FROM", 1 << 20)  # (small arrays: a fast test)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 130)).astype(dtype)
    b = rng.standard_normal((130, 70)).astype(dtype)
    if adjoint_a:
        a = np.ascontiguousarray(a.T)
    attrs = {"adjoint_a": adjoint_a, "adjoint_b": False}
    want = np.matmul(a.conj().T if adjoint_a else a, b)
    linalg._choices.clear()
    for _ in range(5):  # several threads, one thread (twice each), then the faster
        got = linalg.matmul({"a": a, "b": b}, attrs, None)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == dtype and got.flags.c_contiguous
    (choice,) = linalg._choices.values()
    assert choice.runs[0] >= 1 and choice.runs[1] >= 1


def test_small_products_and_one_thread_are_not_split():
    linalg._choices.clear()
    a = np.ones((8, 8), np.float32)
    linalg.matmul({"a": a, "b": a}, {"adjoint_a": False, "adjoint_b": False}, None)
    assert not linalg._choices
    big = np.ones((256, 256), np.float32)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        out = tf.matmul(big, big)
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(0)
    np.testing.assert_array_equal(out.numpy(), np.full((256, 256), 256.0))
    assert not linalg._choices


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="pinning needs Linux and at least two usable cores")
def test_pool_threads_keep_a_core_each():
    """The intra-op pool's threads are pinned to distinct cores (left free, the scheduler
    could put both parts of a split on one core)."""
    from tapeflow._core.threads import pool
    workers = min(2, pool()._max_workers)
    barrier = threading.Barrier(workers)

    def where():
        barrier.wait(timeout=10)  # (every task on a thread of its own)
        return threading.get_ident(), frozenset(os.sched_getaffinity(0))
    seen = dict(f.result() for f in [pool().submit(where) for _ in range(workers)])
    cores = list(seen.values())
    assert len(seen) == workers and all(len(c) == 1 for c in cores), cores
    assert len(set(cores)) == workers, cores  # one core each, all different
    assert len(os.sched_getaffinity(0)) >= 2  # the caller stays free
