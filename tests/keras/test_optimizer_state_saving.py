"""A `.keras` file keeps an optimizer's EMA averages and gradient accumulators in Keras 3's
order (iteration, learning rate, averages, accumulators, slots), and loads again."""
import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras


@pytest.mark.parametrize("options", [{"gradient_accumulation_steps": 2}, {"use_ema": True},
                                     {"use_ema": True, "gradient_accumulation_steps": 3}])
def test_optimizer_options_state_round_trips(options, tmp_path):
    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(0.01, **options), loss="mse")
    x, y = rng.random((16, 3)).astype("float32"), rng.random((16, 2)).astype("float32")
    model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    before = [v.numpy() for v in model.optimizer.variables]
    after = [v.numpy() for v in loaded.optimizer.variables]
    assert len(before) == len(after) == 1 + 2 * 2 + 2 * sum(
        bool(options.get(k)) for k in ("use_ema", "gradient_accumulation_steps"))
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert int(loaded.optimizer._iterations.numpy()) == 8  # calls, not updates


def test_weighted_metrics_come_back_from_a_keras_file(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"], weighted_metrics=["mse"])
    x = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
    y = np.array([[1.0], [0.0]], "float32")
    weights = np.array([1.0, 3.0], "float32")
    path = str(tmp_path / "w.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    want = model.evaluate(x, y, sample_weight=weights, return_dict=True, verbose=0)
    got = loaded.evaluate(x, y, sample_weight=weights, return_dict=True, verbose=0)
    assert set(got) == set(want) and len(got) == 3
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
