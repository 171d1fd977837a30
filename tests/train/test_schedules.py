"""Learning-rate schedules (`tf.keras.optimizers.schedules`, `tf.optimizers.schedules`):
PolynomialDecay, CosineDecayRestarts, CosineDecay with Keras 3's warmup, against values
recorded from real Keras 3.15 (fixtures/keras_optimizers_more.json, written by
fixtures/make_keras_optimizers_more.py); their configs, serialize / deserialize, and the
round trip through compile and a .keras file."""
from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest

import tapeflow as tf

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures"
                      / "keras_optimizers_more.json").read_text())
SCHEDULES = FIXTURE["schedules"]
STEPS = FIXTURE["schedule_steps"]
sch = tf.keras.optimizers.schedules


def make(key: str):
    case = SCHEDULES[key]
    return getattr(sch, case["cls"])(**case["kwargs"])


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_values_match_keras(key):
    schedule = make(key)
    got = [float(schedule(step)) for step in STEPS]
    np.testing.assert_allclose(got, SCHEDULES[key]["values"], rtol=1e-6, atol=1e-7)
    # the step as an int64 variable (the optimizer's `iterations`) and traced
    counter = tf.Variable(0, dtype=tf.int64)
    traced = tf.function(lambda: schedule(counter))
    for step, want in zip(STEPS, SCHEDULES[key]["values"]):
        counter.assign(step)
        assert float(traced()) == pytest.approx(want, rel=1e-6, abs=1e-7)


def test_closed_forms():
    """A few values by hand: the polynomial's end, a cycle's restart, the warmup's line."""
    poly = sch.PolynomialDecay(1.0, 4, end_learning_rate=0.2, power=2.0)
    assert float(poly(2)) == pytest.approx(0.8 * 0.25 + 0.2)
    assert float(poly(100)) == pytest.approx(0.2)
    cycle = sch.PolynomialDecay(1.0, 4, end_learning_rate=0.0, cycle=True)
    assert float(cycle(0)) == pytest.approx(1.0)
    assert float(cycle(6)) == pytest.approx(1 - 6 / 8)  # the second period is 8 steps
    restarts = sch.CosineDecayRestarts(1.0, 2, t_mul=2.0, m_mul=0.5)
    assert float(restarts(2)) == pytest.approx(0.5)  # restart 1 starts at m_mul
    assert float(restarts(4)) == pytest.approx(0.5 * 0.5 * (1 + math.cos(math.pi / 2)))
    warm = sch.CosineDecay(0.1, 10, warmup_target=0.5, warmup_steps=4)
    assert float(warm(1)) == pytest.approx(0.2)
    assert float(warm(4)) == pytest.approx(0.5)
    assert float(warm(14)) == pytest.approx(0.0, abs=1e-7)
    assert float(warm(1000)) == pytest.approx(0.0, abs=1e-7)
    # warmup_steps 0 with a target: the cosine from the target at once
    assert float(sch.CosineDecay(0.1, 10, warmup_target=0.5)(0)) == pytest.approx(0.5)


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_config_is_keras_s_and_round_trips(key):
    schedule = make(key)
    assert schedule.get_config() == SCHEDULES[key]["config"]
    again = type(schedule).from_config(schedule.get_config())
    assert again.get_config() == schedule.get_config()
    serialized = sch.serialize(schedule)
    assert serialized == {"module": "keras.optimizers.schedules",
                          "class_name": SCHEDULES[key]["cls"],
                          "config": SCHEDULES[key]["config"], "registered_name": None}
    back = sch.deserialize(json.loads(json.dumps(serialized)))
    assert type(back) is type(schedule) and back.get_config() == schedule.get_config()
    np.testing.assert_allclose([float(back(s)) for s in STEPS], SCHEDULES[key]["values"],
                               rtol=1e-6, atol=1e-7)


def test_older_schedules_configs_are_keras_s():
    """Keras 3's default names (from /tmp/tfv:
    `keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5).get_config()` etc.)."""
    assert sch.ExponentialDecay(0.1, 10, 0.5).get_config() == {
        "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5,
        "staircase": False, "name": "ExponentialDecay"}
    assert sch.PiecewiseConstantDecay([1], [1.0, 2.0]).get_config() == {
        "boundaries": [1], "values": [1.0, 2.0], "name": "PiecewiseConstant"}
    assert sch.InverseTimeDecay(0.1, 1, 1).get_config() == {
        "initial_learning_rate": 0.1, "decay_steps": 1, "decay_rate": 1,
        "staircase": False, "name": "InverseTimeDecay"}
    for schedule in (sch.ExponentialDecay(0.1, 10, 0.5, staircase=True),
                     sch.PiecewiseConstantDecay([1, 3], [1.0, 2.0, 0.5]),
                     sch.InverseTimeDecay(0.1, 2, 1.0)):
        back = sch.deserialize(sch.serialize(schedule))
        assert back.get_config() == schedule.get_config()
        assert [float(back(s)) for s in range(5)] == [float(schedule(s)) for s in range(5)]


def test_deserialize_fills_defaults_and_finds_custom_classes():
    """Keras's documented example: a config without every key."""
    s = sch.deserialize({"class_name": "PolynomialDecay",
                         "config": {"initial_learning_rate": 0.1, "decay_steps": 10,
                                    "power": 0.5, "cycle": False, "end_learning_rate": 0.01,
                                    "name": None}})
    assert float(s(10)) == pytest.approx(0.01)

    class Constant(sch.LearningRateSchedule):
        def __init__(self, value):
            self.value = value

        def __call__(self, step):
            return tf.constant(self.value)

        def get_config(self):
            return {"value": self.value}

    serialized = sch.serialize(Constant(0.3))
    assert serialized["class_name"] == "Constant"
    assert float(sch.deserialize(serialized, custom_objects={"Constant": Constant})(5)) == \
        pytest.approx(0.3)
    with pytest.raises(ValueError, match="Constant"):
        sch.deserialize(serialized)
    with pytest.raises(NotImplementedError, match="get_config"):
        sch.LearningRateSchedule().get_config()


def test_invalid_steps_are_refused():
    with pytest.raises(ValueError, match="decay_steps"):
        sch.PolynomialDecay(0.1, 0)
    with pytest.raises(ValueError, match="first_decay_steps"):
        sch.CosineDecayRestarts(0.1, -1)
    with pytest.raises(ValueError, match="decay_steps"):
        sch.CosineDecay(0.1, 0, warmup_target=1.0, warmup_steps=3)


def test_namespaces():
    assert tf.optimizers.schedules.PolynomialDecay is sch.PolynomialDecay
    assert tf.optimizers.schedules.CosineDecayRestarts is sch.CosineDecayRestarts
    assert sch.serialize is tf.optimizers.schedules.serialize


def test_optimizer_follows_the_schedule_and_its_config():
    schedule = sch.CosineDecay(0.0, 4, warmup_target=1.0, warmup_steps=2)
    v = tf.Variable(0.0)
    opt = tf.keras.optimizers.SGD(schedule)
    moves = []
    for _ in range(7):
        before = float(v)
        opt.apply_gradients([(tf.constant(-1.0), v)])
        moves.append(float(v) - before)
    np.testing.assert_allclose(moves, [float(schedule(s)) for s in range(7)], atol=1e-7)
    config = opt.get_config()
    assert config["learning_rate"] == {"class_name": "CosineDecay",
                                       "config": schedule.get_config()}
    again = tf.keras.optimizers.SGD.from_config(config)
    assert again._learning_rate.get_config() == schedule.get_config()


@pytest.mark.parametrize("key", ["poly_cycle", "restarts_opts", "cosine_warmup",
                                 "cosine_warmup_from"])
def test_round_trip_through_compile_and_a_keras_file(tmp_path, key):
    keras = tf.keras
    schedule = make(key)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Lamb(schedule), loss="mse")
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    model.fit(x, y, epochs=2, batch_size=2, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert type(loaded.optimizer) is keras.optimizers.Lamb
    restored = loaded.optimizer._learning_rate
    assert type(restored) is type(schedule)
    want = {k: v for k, v in schedule.get_config().items() if v is not None}
    assert {k: v for k, v in restored.get_config().items() if v is not None} == want
    assert int(loaded.optimizer.iterations) == 4
    assert float(loaded.optimizer.learning_rate) == pytest.approx(float(schedule(4)))
    for a, b in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
