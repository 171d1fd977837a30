"""Keras `fit`, `evaluate` and `predict` under tf.distribute: two MPI processes
(tests/distribute/keras_job.py, one `mpiexec -n 2` launch) and MirroredStrategy on two
logical CPUs train exactly as one replica does on the same global batches."""
import contextlib
import csv
import json
import pathlib
import re

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
    """The job's training in this process, with no strategy."""
    out = keras_job.train(None, str(tmp_path_factory.mktemp("single")), verbose=0)
    # the check can fail: training moved the loss, and early stopping ended it early
    assert out["history"]["loss"][-1] < 0.8 * out["history"]["loss"][0]
    assert 1 < len(out["epochs"]) < 8
    return out


@pytest.fixture(scope="module")
def single_batch_norm():
    return keras_job.batch_norm(None)


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


def _assert_batch_norm_combined(got: dict, want: dict) -> None:
    first_mean, first_variance = got["moving"][:2]
    np.testing.assert_allclose(first_mean, want["moving"][0], rtol=1e-5, atol=1e-6)
    # per-replica batch statistics: the variances (and what follows) differ from one
    # replica's, as in TensorFlow, but they were updated (not left at 1)
    assert not np.allclose(first_variance, 1.0)
    # a replica without rows in the last batch changed nothing (no NaN anywhere)
    assert all(np.isfinite(w).all() for w in got["weights"] + got["moving"])


def test_batch_norm_statistics_are_combined_across_workers(ranks, single_batch_norm):
    assert ranks[0]["batch_norm"] == ranks[1]["batch_norm"]
    _assert_batch_norm_combined(ranks[0]["batch_norm"], single_batch_norm)


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


def test_mirrored_on_two_logical_cpus_trains_as_one_replica(two_cpus, single, tmp_path):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _assert_same_training(keras_job.train(strategy, str(tmp_path), verbose=0), single)


def test_mirrored_batch_norm_replicas_start_each_step_alike(two_cpus, single_batch_norm):
    mirrored = keras_job.batch_norm(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    _assert_batch_norm_combined(mirrored, single_batch_norm)


def test_the_keras_example_trains_on_two_processes(tmp_path):
    example = pathlib.Path(keras_job.__file__).parents[2] / "examples" / \
        "keras_distributed.py"
    done = _launch("--epochs", "2", "--synthetic", "--out", str(tmp_path), script=example,
                   timeout=60)
    assert done.returncode == 0, done.stderr[-4000:]
    reports = dict(re.findall(r"rank (\d) of 2: (.*)\n", done.stdout))
    assert sorted(reports) == ["0", "1"], done.stdout
    assert reports["0"] == reports["1"]  # the same metrics and parameters on both
    assert done.stdout.count("Epoch 1/2") == 1  # the chief's progress only
    losses = [float(v) for v in re.findall(r" - loss: (\d+\.\d+)", done.stdout)]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.weights.h5"]


def _small_model():
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_a_model_remembers_the_strategy_it_was_made_under(two_cpus):
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with mirrored.scope():
        inside = _small_model()
    outside = _small_model()
    assert inside.distribute_strategy is mirrored
    assert outside.distribute_strategy is tf.distribute.get_strategy()  # the default
    assert outside.distribute_strategy.num_replicas_in_sync == 1
    other = tf.distribute.MultiWorkerMirroredStrategy()
    with other.scope():  # made outside any scope: it follows the current one (as Keras)
        assert outside.distribute_strategy is other
        assert inside.distribute_strategy is mirrored
    x, y = np.ones((5, 3), np.float32), np.zeros((5, 2), np.float32)
    # the replicas' scaled losses add up to the global batch's mean loss
    y_pred = inside.predict(x, verbose=0)
    per_replica = mirrored.run(lambda: inside.compute_loss(y=y, y_pred=y_pred))
    assert [float(v) for v in per_replica.values] == pytest.approx(
        [0.5 * float(np.mean(y_pred ** 2))] * 2)
    assert inside.evaluate(x, y, verbose=0) == pytest.approx(float(np.mean(y_pred ** 2)))
    with pytest.raises(ValueError, match="not a distributed dataset"):
        inside.fit(mirrored.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(2)), verbose=0)


def test_values_from_function_give_each_replica_its_value(two_cpus):
    def value_fn(context):
        return tf.constant([context.replica_id_in_sync_group,
                            context.num_replicas_in_sync])
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    values = mirrored.experimental_distribute_values_from_function(value_fn)
    assert isinstance(values, tf.distribute.PerReplica)
    assert [v.numpy().tolist() for v in values.values] == [[0, 2], [1, 2]]
    single = tf.distribute.MultiWorkerMirroredStrategy()
    assert single.experimental_distribute_values_from_function(value_fn).numpy().tolist() \
        == [0, 1]
    assert repr(tf.distribute.experimental.ValueContext(1, 2)) == \
        "ValueContext(replica_id_in_sync_group=1, num_replicas_in_sync=2)"


class _CustomStep(tf.keras.Model):
    """fit customized as TensorFlow's guides do it under a strategy: the per-example loss
    averaged with compute_average_loss in the replica context, a Mean tracker."""

    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2)
        self.tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x, training=None):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(self(x, training=True) - y), axis=1)
            loss = tf.nn.compute_average_loss(per_example)
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.tracker.update_state(per_example)
        return {"loss": self.tracker.result()}


def _fit_custom(strategy):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((24, 3)).astype(np.float32)
    y = rng.standard_normal((24, 2)).astype(np.float32)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        tf.keras.utils.set_random_seed(2)
        model = _CustomStep()
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    return history.history["loss"], model.get_weights()


def test_a_customized_train_step_runs_in_the_replica_context(two_cpus):
    plain_losses, plain = _fit_custom(None)  # no strategy: the default replica context
    assert plain_losses[-1] < plain_losses[0]
    for strategy in (tf.distribute.MultiWorkerMirroredStrategy(),  # one replica here
                     tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])):
        losses, weights = _fit_custom(strategy)
        np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
        for a, b in zip(weights, plain):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
