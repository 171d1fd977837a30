"""tapeflow changes nothing process-wide that the user did not ask for (API 6.7,
ARCHITECTURE rule 19): thread affinity, the recursion limit, sys.excepthook, NumPy's BLAS
threads and the environment stay as the program had them."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import threadpoolctl

import tapeflow as tf
from tapeflow._core import jit
from tapeflow._core.threads import pool
from tapeflow.function import fuse


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")
def test_pool_threads_are_not_pinned():
    mine = os.sched_getaffinity(0)
    seen = [f.result() for f in [pool().submit(os.sched_getaffinity, 0) for _ in range(4)]]
    assert all(s == mine for s in seen)


def test_compiles_leave_the_recursion_limit_as_it_was(monkeypatch, tmp_path):
    monkeypatch.setenv("TAPEFLOW_CACHE", str(tmp_path))  # cold: a real compile
    limit = sys.getrecursionlimit()
    before = jit.background()
    for background in (False, True):
        jit.set_background(background)
        try:
            g = tf.function(lambda x: tf.reduce_sum(x * 0.73 + x * x * (0.5 + background)))
            x = tf.constant(np.linspace(0, 1, 64))
            for _ in range(4):
                g(x)
                jit.wait_compiled()
        finally:
            jit.set_background(before)
        assert sys.getrecursionlimit() == limit
    assert fuse._deep_recursion(10_000) > limit  # (a large kernel does raise it meanwhile)


def _blas_threads() -> list:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"]


def test_blas_threads_stay_the_programs():
    before = _blas_threads()
    x = tf.random.normal([300, 300], seed=1)
    tf.matmul(x, x)
    tf.einsum("ij,jk->ik", x, x)
    tf.linalg.inv(x + 30 * tf.eye(300))
    assert _blas_threads() == before


def test_a_single_process_strategy_leaves_sys_excepthook_alone():
    script = textwrap.dedent("""
        import sys
        hook = sys.excepthook
        import tapeflow as tf
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        with strategy.scope():
            v = tf.Variable(1.0)
        assert sys.excepthook is hook, sys.excepthook
        print("ok", strategy.num_replicas_in_sync)
    """)
    env = {k: v for k, v in os.environ.items() if k not in (
        "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "1"]


def test_importing_tapeflow_changes_no_environment_variable():
    script = ("import os, json; before = dict(os.environ); import tapeflow as tf; "
              "tf.reduce_sum(tf.ones([3])); print(json.dumps(dict(os.environ) == before))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "true"
