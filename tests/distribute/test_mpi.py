"""tf.distribute across processes: `mpiexec -n 2` runs tests/distribute/mpi_job.py once
for all the checks (each rank reports what it saw), and once more for the fault case."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import tapeflow as tf
from tests.distribute import mpi_job

JOB = pathlib.Path(mpi_job.__file__)


def _mpiexec() -> str | None:
    beside = pathlib.Path(sys.executable).parent / "mpiexec"  # the mpich wheel's
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _launch(*args, timeout: float = 120, script=JOB) -> subprocess.CompletedProcess:
    pytest.importorskip("mpi4py", reason="the `mpi` extra (mpi4py, mpich) is not installed")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec: install the `mpi` extra (the mpich wheel provides it)")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(JOB.parents[2]))
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([mpiexec, "-n", "2", sys.executable, str(script), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi")
    ckpt, variables, _ = mpi_job.checkpoint_model(seed=1)  # for the job to restore
    ckpt.save(str(out / "from1" / "ckpt"))
    (out / "missing-dir").mkdir()
    (out / "missing-dir" / "file.txt").write_text("a file, not a directory")
    done = _launch(str(out))
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in results:
        r["dir"] = out
        r["from1"] = [v.numpy().tolist() for v in variables]
    return results


def test_two_replicas_on_halves_match_one_replica_on_the_whole_batch(ranks):
    single = mpi_job.train(tf.distribute.MultiWorkerMirroredStrategy(), traced=False)
    initial = {k: v.numpy() for k, v in mpi_job.make_model().items()}
    for mode in ("eager", "eager_blocking", "traced"):
        for rank in ranks:
            for name, value in single["params"].items():
                np.testing.assert_allclose(rank[mode]["params"][name], value, rtol=2e-5,
                                           atol=2e-6, err_msg=f"{mode} {name}")
                # the 20 steps moved every parameter (the check can fail)
                assert not np.allclose(value, initial[name], atol=1e-3), name
            # the reduced loss of each step is the global batch's mean loss
            np.testing.assert_allclose(rank[mode]["losses"], single["losses"], rtol=2e-5)
    assert len(single["losses"]) == mpi_job.STEPS
    # v (12 B), b (12 B) and w (60 B) complete in that order: with 64-byte buckets the
    # three go in one message, sent during the backward pass (before apply_gradients);
    # then emb's IndexedSlices in 2 gathers and the loss's reduction: 4 messages a step
    assert ranks[0]["eager_early"] == mpi_job.STEPS
    assert ranks[0]["eager_messages"] == mpi_job.STEPS * 4
    assert single["losses"][-1] < 0.5 * single["losses"][0]


def test_collectives_and_mirrored_variables(ranks):
    for r, rank in enumerate(ranks):
        c = rank["collectives"]
        assert c["mirrored"] == [10.0] * 3  # rank 0's initial value on both
        assert c["all_reduce_mean"] == [0.5, [1.5, 3.0]]
        assert c["kept_sums"] == [[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]]  # (2k + 1) * [1, 2]
        assert c["replica_id"] == r and c["task_id"] == r and c["num_replicas"] == 2
        assert c["reduce_sum"] == [[1.0, 2.0]]
        assert c["reduce_mean_axis0"] == pytest.approx(5.0 / 3.0)  # (1 + 2 + 2) / 3
        assert c["gather0"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert c["gather1"] == [[0.0, 1.0, 1.0, 1.0]]
        assert rank["after"] == 2.0


def test_each_worker_reads_its_own_shard(ranks):
    a, b = ranks[0]["datasets"], ranks[1]["datasets"]
    assert a["batches"] == [[0, 2], [4, 6], [8, 10]]
    assert b["batches"] == [[1, 3], [5, 7], [9, 11]]
    assert a["from_fn"] == [[0, 2], [4, 6]] and b["from_fn"] == [[1, 3], [5, 7]]
    assert a["unbatched"] == [0, 2, 4] and b["unbatched"] == [1, 3]


def test_mismatched_variables_fail_at_the_first_all_reduce_naming_them(ranks):
    for rank in ranks:
        shape, count = rank["mismatch"]["shape"], rank["mismatch"]["count"]
        assert "CollectiveAllReduce" in shape and "'shape_1:0' of shape [2]" in shape
        assert "replica 1 has 'shape_1:0' of shape [3]" in shape
        assert "replica 0 has 1 tensors and replica 1 has 2" in count
        assert "'count_1:0'" in count


def test_an_exception_on_one_rank_ends_the_job_naming_it():
    start = time.perf_counter()
    done = _launch("--fail", timeout=60)
    elapsed = time.perf_counter() - start
    assert done.returncode != 0
    assert "rank 1 of 2 failed" in done.stderr and "ValueError: boom on purpose" in done.stderr
    assert elapsed < 30, elapsed  # never a hang of rank 0 (it is waiting in an all-reduce)


def test_checkpoints_written_once_restore_across_process_counts(ranks):
    for rank in ranks:
        c = rank["checkpoints"]
        # N=1 -> N=2: both ranks restored the values one process saved
        assert c["restored"] == rank["from1"]
        assert c["saved"] == ranks[0]["checkpoints"]["saved"]
        assert c["saved"].endswith("ckpt-3") and c["checkpoints"] == [c["saved"]]
        assert c["saved_values"] == ranks[0]["checkpoints"]["saved_values"]
        assert "OSError" in c["write_error"] or "Error" in c["write_error"]
    # N=2 -> N=1: this process restores what the job's chief wrote, slots included
    ckpt, variables, opt = mpi_job.checkpoint_model(seed=5)
    ckpt.restore(ranks[0]["checkpoints"]["saved"]).assert_consumed()
    assert [v.numpy().tolist() for v in variables] == ranks[0]["checkpoints"]["saved_values"]
    assert int(opt.iterations.numpy()) == 3
    # max_to_keep=1: one checkpoint left, the index names it
    files = sorted(p.name for p in (rank["dir"] / "from2").iterdir())
    assert files == ["checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index"], files


def test_the_example_trains_the_demo_cnn_on_two_processes(tmp_path):
    done = _launch("--epochs", "2", "--synthetic", "--out", str(tmp_path),
                   script=JOB.parents[2] / "examples" / "distributed.py")
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = dict(re.findall(r"rank (\d) of 2: .*?checksum ([-\d.]+),", done.stdout))
    assert sorted(ranks) == ["0", "1"], done.stdout
    # the replicas end with the same parameters; the chief wrote one checkpoint
    assert ranks["0"] == ranks["1"]
    losses = [float(x) for x in re.findall(r"epoch \d+: loss (\d+\.\d{4})", done.stdout)]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]
