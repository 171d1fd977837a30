"""fit's protocol as Keras 3's: callback order with validation data, BackupAndRestore
resuming at the saved epoch, constrained weights, a functional model's input/output."""
import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras


def _model():
    x = keras.Input((2,))
    model = keras.Model(x, keras.layers.Dense(1)(x))
    model.compile(optimizer="sgd", loss="mse")
    return model


HOOKS = ["on_train_begin", "on_epoch_begin", "on_train_batch_end", "on_test_begin",
         "on_test_batch_begin", "on_test_batch_end", "on_test_end", "on_epoch_end",
         "on_train_end"]


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []
        for hook in HOOKS:
            setattr(self, hook, lambda *args, hook=hook: self.calls.append(hook))


def test_validation_hooks_come_before_on_epoch_end():
    data = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    rec = Recorder()
    _model().fit(*data, validation_data=data, epochs=1, batch_size=4, verbose=0,
                 callbacks=[rec])
    # Keras 3: fit's own callbacks see the validation pass before the epoch ends
    assert rec.calls == HOOKS


def test_backup_and_restore_resumes_at_the_interrupted_epoch(tmp_path):
    data = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    epochs_seen = []

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            epochs_seen.append(epoch)
            if epoch == 2 and len(epochs_seen) == 3:
                raise RuntimeError("interrupted")
    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    model = _model()
    with pytest.raises(RuntimeError, match="interrupted"):
        model.fit(*data, epochs=4, verbose=0, callbacks=[backup, Interrupt()])
    model.fit(*data, epochs=4, verbose=0, callbacks=[backup, Interrupt()])
    assert epochs_seen == [0, 1, 2, 2, 3]  # the second run starts where the first stopped


def test_constraints_of_add_weight_hold_after_each_update():
    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(2,), initializer="ones",
                                     constraint=keras.constraints.NonNeg())

        def call(self, x):
            return x * self.w
    x = keras.Input((2,))
    model = keras.Model(x, Scale()(x))
    model.compile(optimizer=keras.optimizers.SGD(10.0), loss="mse")
    model.fit(np.ones((2, 2), np.float32), np.array([[-5.0, 3.0]] * 2, np.float32),
              epochs=1, batch_size=2, verbose=0)
    w = model.layers[1].w.numpy()
    assert w[0] == 0.0 and w[1] > 1.0  # projected onto w >= 0, the other moved freely


def test_functional_input_and_output_are_the_keras_tensors():
    x = keras.Input((3,))
    y = keras.layers.Dense(2)(x)
    model = keras.Model(x, y)
    assert model.input is x and model.output is y
    extended = keras.Model(model.input, keras.layers.Dense(1)(model.output))
    assert extended.output_shape == (None, 1)


def test_dense_and_embedding_constraints_apply_and_round_trip():
    dense = keras.layers.Dense(2, kernel_constraint="non_neg",
                               bias_constraint=keras.constraints.MaxNorm(0.5))
    dense(np.ones((1, 3), np.float32))
    assert isinstance(dense.kernel.constraint, keras.constraints.NonNeg)
    config = dense.get_config()
    assert config["kernel_constraint"]["class_name"] == "NonNeg"
    assert config["bias_constraint"]["config"]["max_value"] == 0.5
    again = keras.layers.Dense.from_config(config)
    again(np.ones((1, 3), np.float32))
    assert isinstance(again.bias.constraint, keras.constraints.MaxNorm)
    emb = keras.layers.Embedding(4, 2, embeddings_constraint="unit_norm")
    emb(np.array([[1]]))
    keras.optimizers.SGD(1.0).apply_gradients([(tf.ones([4, 2]), emb.embeddings)])
    np.testing.assert_allclose(np.linalg.norm(emb.embeddings.numpy(), axis=0), 1.0, rtol=1e-5)
