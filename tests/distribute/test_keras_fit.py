"""Keras `fit`, `evaluate` and `predict` under tf.distribute: two MPI processes
(tests/distribute/keras_job.py, one `mpiexec -n 2` launch) and MirroredStrategy on two
logical CPUs train exactly as one replica does on the same global batches."""
import csv
import json

import numpy as np
import pytest

import tapeflow as tf
from tests.distribute import keras_job
from tests.distribute.test_mpi import _launch


def _assert_same_training(got: dict, want: dict, rtol: float = 1e-5) -> None:
    assert got["epochs"] == want["epochs"]
    for part in ("history", "eager_history"):
        assert sorted(got[part]) == sorted(want[part])
        for key, values in want[part].items():
            np.testing.assert_allclose(got[part][key], values, rtol=rtol, err_msg=key)
    for key, value in want["evaluate"].items():
        np.testing.assert_allclose(got["evaluate"][key], value, rtol=rtol, err_msg=key)
    for part in ("traced_weights", "weights"):
        for a, b in zip(got[part], want[part]):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=part)
    np.testing.assert_allclose(got["predict"], want["predict"], rtol=rtol, atol=1e-6)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The job's training with one replica, in this process."""
    out = keras_job.train(tf.distribute.MultiWorkerMirroredStrategy(),
                          str(tmp_path_factory.mktemp("single")), verbose=0)
    # the check can fail: training moved the loss, and early stopping ended it early
    assert out["history"]["loss"][-1] < 0.8 * out["history"]["loss"][0]
    assert 1 < len(out["epochs"]) < 8
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("keras_mpi")
    done = _launch(str(out), script=keras_job.__file__, timeout=60)
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r, result in enumerate(results):
        result["printed"] = (out / f"rank{r}.out").read_text()
        result["dir"] = out
    return results


def test_two_workers_train_as_one_process_on_the_global_batches(ranks, single):
    assert [r["replicas"] for r in ranks] == [2, 2]
    for rank in ranks:
        _assert_same_training(rank, single)


def test_every_worker_reports_the_same_metrics_and_weights(ranks):
    a, b = ranks
    for part in ("epochs", "history", "eager_history", "evaluate", "predict", "weights"):
        assert a[part] == b[part], part  # aggregated, not each worker's own half


def test_only_the_chief_prints_and_writes_files(ranks):
    chief, other = ranks
    assert chief["printed"].count("Epoch 1/8") == 1 and "━" in chief["printed"]
    assert "val_loss:" in chief["printed"] and "Epoch 2/2" in chief["printed"]
    assert other["printed"] == ""
    # ModelCheckpoint(save_best_only): val_loss improved every epoch, written by one rank
    assert chief["writes"] == len(chief["epochs"]) and other["writes"] == 0
    with open(chief["dir"] / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == chief["epochs"]
    events = list((chief["dir"] / "tb" / "train").glob("events.out.tfevents.*"))
    assert len(events) == 1, events
    model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(16),
                                 tf.keras.layers.Dense(3)])
    model.load_weights(str(chief["dir"] / "best.weights.h5"))
    np.testing.assert_allclose(model.get_weights()[0], chief["traced_weights"][0], atol=1e-6)


@pytest.fixture
def two_cpus():
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    yield
    tf.config.set_logical_device_configuration(cpu, None)


def test_mirrored_on_two_logical_cpus_trains_as_one_replica(two_cpus, single, tmp_path):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _assert_same_training(keras_job.train(strategy, str(tmp_path), verbose=0), single)
