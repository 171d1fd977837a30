"""`fit` with Keras 3's optimizer options: `use_ema` leaves the weights at their moving
averages when training ends, `loss_scale_factor` scales the loss it differentiates (so the
update is the unscaled one)."""
import numpy as np

import tapeflow as tf

keras = tf.keras


def _trained(optimizer, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    return model


def test_use_ema_ends_fit_with_the_moving_averages():
    plain = _trained(keras.optimizers.SGD(0.1))
    ema = _trained(keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5))
    averages = [v.numpy() for v in ema.optimizer._model_variables_moving_average]
    weights = [w.numpy() for w in ema.trainable_weights]
    assert len(averages) == len(weights) == 2
    for w, a in zip(weights, averages):
        np.testing.assert_array_equal(w, a)
    # (the averages lag the raw weights, which equal the plain run's)
    assert not np.allclose(weights[0], plain.trainable_weights[0].numpy())


def test_loss_scale_factor_leaves_the_updates_as_they_were():
    plain = _trained(keras.optimizers.SGD(0.05))
    scaled = _trained(keras.optimizers.SGD(0.05, loss_scale_factor=64.0))
    for a, b in zip(plain.trainable_weights, scaled.trainable_weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
