"""Keras under tf.distribute as TensorFlow 2.21's Keras 3 behaves: metric states are
sync-on-read (each worker keeps its own, `result()` in the cross-replica context combines
every worker's), checked with two MPI processes (tests/keras/distribution_job.py, one
`mpiexec -n 2` launch); and a TF_CONFIG that names several workers in a process not
launched by mpiexec is warned about once."""
import json
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.distribute import strategy as strategy_module
from tests.distribute.test_mpi import _launch
from tests.keras import distribution_job

# real Keras 3.15 on all 12 rows (the truth both workers must report):
#   a = keras.metrics.AUC(num_thresholds=11); a.update_state(y_true, y_prob) -> 0.45833334
#   m = keras.metrics.Mean(); m.update_state((y_prob - y_true) ** 2, sample_weight=w)
#     -> 0.40533021; on worker 0's rows 0.23537913, on worker 1's rows 0.64480257
KERAS_AUC, KERAS_MEAN, KERAS_OWN_MEANS = 0.45833334, 0.40533021, [0.23537913, 0.64480257]


def numpy_truth() -> dict:
    y_true, y_prob, w = distribution_job.data()
    predicted = y_prob > 0.5
    return {"loss": np.sum(w * (y_prob - y_true) ** 2) / np.sum(w),
            "binary_accuracy": np.mean(predicted == (y_true == 1)),
            "precision": np.sum(predicted & (y_true == 1)) / np.sum(predicted),
            "true_positives": float(np.sum(predicted & (y_true == 1))),
            "auc": KERAS_AUC}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("keras_metrics_mpi")
    done = _launch(str(out), script=distribution_job.__file__, timeout=60)
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_metric_results_combine_every_workers_state(ranks):
    truth = numpy_truth()
    assert truth["loss"] == pytest.approx(KERAS_MEAN, rel=1e-6)
    for rank in ranks:
        assert rank["replicas"] == 2
        for part in ("eager", "traced"):
            assert sorted(rank[part]) == sorted(truth)
            for name, value in truth.items():
                assert rank[part][name] == pytest.approx(value, rel=1e-6), (part, name)
        # the worker's own state was put back after the combined read
        assert rank["again"] == pytest.approx(truth["loss"], rel=1e-6)
        assert rank["after_reset"] == 0.0
    assert ranks[0]["eager"] == ranks[1]["eager"]  # the same numbers on both workers


def test_inside_run_a_replica_reads_its_own_state(ranks):
    assert [r["own_mean"] for r in ranks] == pytest.approx(KERAS_OWN_MEANS, rel=1e-6)


def test_a_metric_made_outside_the_scope_stays_local(ranks):
    y_true, _, _ = distribution_job.data()
    # plain variables (no strategy): each worker sums its own labels
    assert [r["outside"] for r in ranks] == [float(y_true[0::2].sum()),
                                             float(y_true[1::2].sum())]


def test_one_worker_reads_its_state_unchanged():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # one replica: no collective
    with strategy.scope():
        m = tf.keras.metrics.Mean()
    strategy.run(lambda: m.update_state([1.0, 2.0, 6.0]))
    assert float(m.result()) == 3.0
    with pytest.raises(ValueError, match="aggregation"):
        m.add_variable("extra", aggregation="max")


# ------------------------------------------------------------------ TF_CONFIG without mpiexec


@pytest.fixture
def fresh_warning(monkeypatch):
    monkeypatch.setattr(strategy_module, "_tf_config_warned", False)
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _tf_config(workers: int, chief: int = 0) -> str:
    cluster = {"worker": [f"host{i}:2222" for i in range(workers)]}
    if chief:
        cluster["chief"] = ["chief:2222"]
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})


def test_tf_config_naming_several_workers_warns_once(fresh_warning, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", _tf_config(2, chief=1))
    with pytest.warns(UserWarning, match=r"TF_CONFIG names 3 workers.*mpiexec -n 3") as got:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    assert len(got) == 1 and "separate single-worker job" in str(got[0].message)
    assert strategy.num_replicas_in_sync == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second strategy does not warn again
        tf.distribute.MultiWorkerMirroredStrategy()


@pytest.mark.parametrize("value", [None, _tf_config(1), "not json", '{"cluster": 3}',
                                   json.dumps({"task": {"type": "worker", "index": 0}})])
def test_no_warning_for_one_worker_or_no_cluster(fresh_warning, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tf.distribute.MultiWorkerMirroredStrategy().num_replicas_in_sync == 1
