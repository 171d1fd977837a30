"""TensorFlow's and Keras's guides run with `import tapeflow as tf`: each program below is
the page's code cells in order with `tensorflow` spelled `tapeflow`. Where a page downloads
data (MNIST, CIFAR-10, pretrained weights) the program is given arrays of the same shapes
(fewer rows) as the variables the download made, and where it trains long the epochs are
fewer; each change is said in a comment next to it. Cells that need things this library
does not have (plotting with pydot, `tf.saved_model`, `!pip`) are left out and named.

Pages: tensorflow.org/tutorials/keras/save_and_load, tutorials/customization/custom_layers,
keras.io/guides/ making_new_layers_and_models_via_subclassing, functional_api,
customizing_what_happens_in_fit (TensorFlow), writing_a_training_loop_from_scratch
(TensorFlow), understanding_masking_and_padding, working_with_rnns, transfer_learning."""
from __future__ import annotations

import os
import runpy

import numpy as np
import pytest

from tapeflow import keras


def _run(program: str, path, **data) -> dict:
    """Run `program` as a user's script file (autograph reads its source), with `data`
    already in its globals under the names the page's download gave them."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)  # from outside the program: it is run unchanged
    path.write_text(program)
    return runpy.run_path(str(path), init_globals=data)


def _changed(program: str, *edits: tuple[str, str]) -> str:
    """`program` with each (old, new) edit made wherever `old` is (it must be)."""
    for old, new in edits:
        assert old in program, old
        program = program.replace(old, new)
    return program


def _digits_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images of MNIST's shape; the label is the brightest of ten row bands."""
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 200, (n, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, n)
    images[np.arange(n), labels * 2 + 4] = 255  # one bright row names the class
    return images, labels.astype(np.uint8)


# tutorials/keras/save_and_load. Left out: `!pip install`, and the SavedModel cells
# (`tf.saved_model.save/load`, TensorFlow's graph format). MNIST's first 1000 images are
# given as `train_images`... (256 train and 128 test rows of _digits_like). Epochs: 10 -> 4, 50 -> 10, 5 -> 3.
SAVE_AND_LOAD = '''
import os

import tapeflow as tf
from tapeflow import keras

print(tf.version.VERSION)
train_labels = train_labels[:1000]
test_labels = test_labels[:1000]

train_images = train_images[:1000].reshape(-1, 28 * 28) / 255.0
test_images = test_images[:1000].reshape(-1, 28 * 28) / 255.0
# Define a simple sequential model
def create_model():
  model = tf.keras.Sequential([
    keras.layers.Dense(512, activation='relu', input_shape=(784,)),
    keras.layers.Dropout(0.2),
    keras.layers.Dense(10)
  ])

  model.compile(optimizer='adam',
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=[tf.keras.metrics.SparseCategoricalAccuracy()])

  return model

# Create a basic model instance
model = create_model()

# Display the model's architecture
model.summary()
checkpoint_path = "training_1/cp.weights.h5"
checkpoint_dir = os.path.dirname(checkpoint_path)

# Create a callback that saves the model's weights
cp_callback = tf.keras.callbacks.ModelCheckpoint(filepath=checkpoint_path,
                                                 save_weights_only=True,
                                                 verbose=1)

# Train the model with the new callback
model.fit(train_images,
          train_labels,
          epochs=4,  # the tutorial: 10
          validation_data=(test_images, test_labels),
          callbacks=[cp_callback])  # Pass callback to training
listed_1 = os.listdir(checkpoint_dir)
trained_model = model
# Create a basic model instance
model = create_model()

# Evaluate the model
loss, acc = model.evaluate(test_images, test_labels, verbose=2)
print("Untrained model, accuracy: {:5.2f}%".format(100 * acc))
untrained_acc = acc
# Loads the weights
model.load_weights(checkpoint_path)

# Re-evaluate the model
loss, acc = model.evaluate(test_images, test_labels, verbose=2)
print("Restored model, accuracy: {:5.2f}%".format(100 * acc))
restored_acc = acc
# Include the epoch in the file name (uses `str.format`)
checkpoint_path = "training_2/cp-{epoch:04d}.weights.h5"
checkpoint_dir = os.path.dirname(checkpoint_path)
os.mkdir(checkpoint_dir)

batch_size = 32

# Calculate the number of batches per epoch
import math
n_batches = len(train_images) / batch_size
n_batches = math.ceil(n_batches)    # round up the number of batches to the nearest whole integer

# Create a callback that saves the model's weights every 5 epochs
cp_callback = tf.keras.callbacks.ModelCheckpoint(
    filepath=checkpoint_path,
    verbose=1,
    save_weights_only=True,
    save_freq=5*n_batches)

# Create a new model instance
model = create_model()

# Save the weights using the `checkpoint_path` format
model.save_weights(checkpoint_path.format(epoch=0))

# Train the model with the new callback
model.fit(train_images,
          train_labels,
          epochs=10,  # the tutorial: 50
          batch_size=batch_size,
          callbacks=[cp_callback],
          validation_data=(test_images, test_labels),
          verbose=0)
listed_2 = os.listdir(checkpoint_dir)
def load_latest_checkpoint(checkpoint_dir):
    latest = max(os.listdir(checkpoint_dir), key=lambda f: int(f.split('-')[1].split('.')[0]))
    return os.path.join(checkpoint_dir, latest)

latest = load_latest_checkpoint(checkpoint_dir)
latest
trained_2 = model
# Create a new model instance
model = create_model()

# Load the previously saved weights
model.load_weights(latest)

# Re-evaluate the model
loss, acc = model.evaluate(test_images, test_labels, verbose=2)
print("Restored model, accuracy: {:5.2f}%".format(100 * acc))
restored_2 = model
# Save the weights
os.mkdir('./checkpoints')
model.save_weights('./checkpoints/my_checkpoint.weights.h5')

# Create a new model instance
model = create_model()

# Restore the weights
model.load_weights('./checkpoints/my_checkpoint.weights.h5')

# Evaluate the model
loss, acc = model.evaluate(test_images, test_labels, verbose=2)
print("Restored model, accuracy: {:5.2f}%".format(100 * acc))
restored_3 = model
# Create and train a new model instance.
model = create_model()
model.fit(train_images, train_labels, epochs=3)  # the tutorial: 5

# Save the entire model as a `.keras` zip archive.
model.save('my_model.keras')
keras_model = model
new_model = tf.keras.models.load_model('my_model.keras')

# Show the model architecture
new_model.summary()
# Evaluate the restored model
loss, acc = new_model.evaluate(test_images, test_labels, verbose=2)
print('Restored model, accuracy: {:5.2f}%'.format(100 * acc))

print(new_model.predict(test_images).shape)
keras_reloaded = new_model
# Create and train a new model instance.
model = create_model()
model.fit(train_images, train_labels, epochs=3)  # the tutorial: 5

# Save the entire model to a HDF5 file.
# The '.h5' extension indicates that the model should be saved to HDF5.
model.save('my_model.h5')
# Recreate the exact same model, including its weights and the optimizer
new_model = tf.keras.models.load_model('my_model.h5')

# Show the model architecture
new_model.summary()
loss, acc = new_model.evaluate(test_images, test_labels, verbose=2)
print('Restored model, accuracy: {:5.2f}%'.format(100 * acc))
'''


def test_save_and_load(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tutorial writes its files under the working directory
    train_images, train_labels = _digits_like(256, seed=3)
    test_images, test_labels = _digits_like(128, seed=4)
    scope = _run(SAVE_AND_LOAD, tmp_path / "save_and_load.py", train_images=train_images,
                 train_labels=train_labels, test_images=test_images, test_labels=test_labels)
    out = capsys.readouterr().out
    assert scope["listed_1"] == ["cp.weights.h5"]
    # ModelCheckpoint's verbose=1 line, once per epoch
    assert out.count("Epoch 4: saving model to training_1/cp.weights.h5") == 1
    # 8 batches per epoch, saved every 40 batches: after epochs 5 and 10, plus epoch 0
    assert sorted(scope["listed_2"]) == ["cp-0000.weights.h5", "cp-0005.weights.h5",
                                         "cp-0010.weights.h5"]
    assert scope["latest"] == os.path.join("training_2", "cp-0010.weights.h5")
    x = scope["test_images"]
    assert scope["untrained_acc"] < 0.4 < 0.8 < scope["restored_acc"]
    for a, b in [("trained_model", None), ("trained_2", "restored_2"),
                 ("restored_2", "restored_3"), ("keras_model", "keras_reloaded"),
                 ("model", "new_model")]:
        if b is not None:
            np.testing.assert_allclose(scope[a].predict(x, verbose=0),
                                       scope[b].predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    assert scope["model"].count_params() == 407_050  # the tutorial's summary
    assert " Total params: 407,050 (1.55 MB)" in out
    # .keras keeps the optimizer: its step count goes on from 3 epochs of 8 batches
    assert int(scope["keras_reloaded"].optimizer.iterations.numpy()) == 24
    assert "(128, 10)" in out  # new_model.predict(test_images).shape



# tutorials/customization/custom_layers, whole.
CUSTOM_LAYERS = '''
import tapeflow as tf
print(tf.config.list_physical_devices('GPU'))
layer = tf.keras.layers.Dense(100)
layer = tf.keras.layers.Dense(10, input_shape=(None, 5))
layer(tf.zeros([10, 5]))
layer.variables
layer.kernel, layer.bias
class MyDenseLayer(tf.keras.layers.Layer):
  def __init__(self, num_outputs):
    super(MyDenseLayer, self).__init__()
    self.num_outputs = num_outputs

  def build(self, input_shape):
    self.kernel = self.add_weight("kernel",
                                  shape=[int(input_shape[-1]),
                                         self.num_outputs])

  def call(self, inputs):
    return tf.matmul(inputs, self.kernel)

layer = MyDenseLayer(10)
_ = layer(tf.zeros([10, 5])) # Calling the layer `.builds` it.
print([var.name for var in layer.trainable_variables])
class ResnetIdentityBlock(tf.keras.Model):
  def __init__(self, kernel_size, filters):
    super(ResnetIdentityBlock, self).__init__(name='')
    filters1, filters2, filters3 = filters

    self.conv2a = tf.keras.layers.Conv2D(filters1, (1, 1))
    self.bn2a = tf.keras.layers.BatchNormalization()

    self.conv2b = tf.keras.layers.Conv2D(filters2, kernel_size, padding='same')
    self.bn2b = tf.keras.layers.BatchNormalization()

    self.conv2c = tf.keras.layers.Conv2D(filters3, (1, 1))
    self.bn2c = tf.keras.layers.BatchNormalization()

  def call(self, input_tensor, training=False):
    x = self.conv2a(input_tensor)
    x = self.bn2a(x, training=training)
    x = tf.nn.relu(x)

    x = self.conv2b(x)
    x = self.bn2b(x, training=training)
    x = tf.nn.relu(x)

    x = self.conv2c(x)
    x = self.bn2c(x, training=training)

    x += input_tensor
    return tf.nn.relu(x)


block = ResnetIdentityBlock(1, [1, 2, 3])
_ = block(tf.zeros([1, 2, 3, 3])) 
block.layers
len(block.variables)
block.summary()
my_seq = tf.keras.Sequential([tf.keras.layers.Conv2D(1, (1, 1),
                                                    input_shape=(
                                                        None, None, 3)),
                             tf.keras.layers.BatchNormalization(),
                             tf.keras.layers.Conv2D(2, 1,
                                                    padding='same'),
                             tf.keras.layers.BatchNormalization(),
                             tf.keras.layers.Conv2D(3, (1, 1)),
                             tf.keras.layers.BatchNormalization()])
my_seq(tf.zeros([1, 2, 3, 3]))
my_seq.summary()
'''


# keras.io/guides/making_new_layers_and_models_via_subclassing (tf.keras edition), whole:
# MNIST is 512 rows of _digits_like (so 60000 -> 512 in the reshape).
SUBCLASSING = '''
import tapeflow as tf
from tapeflow import keras
class Linear(keras.layers.Layer):
    def __init__(self, units=32, input_dim=32):
        super().__init__()
        self.w = self.add_weight(
            shape=(input_dim, units), initializer="random_normal", trainable=True
        )
        self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b
x = tf.ones((2, 2))
linear_layer = Linear(4, 2)
y = linear_layer(x)
print(y)
assert linear_layer.weights == [linear_layer.w, linear_layer.b]
class ComputeSum(keras.layers.Layer):
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(
            initializer="zeros", shape=(input_dim,), trainable=False
        )

    def call(self, inputs):
        self.total.assign_add(tf.reduce_sum(inputs, axis=0))
        return self.total


x = tf.ones((2, 2))
my_sum = ComputeSum(2)
y = my_sum(x)
print(y.numpy())
y = my_sum(x)
print(y.numpy())
print("weights:", len(my_sum.weights))
print("non-trainable weights:", len(my_sum.non_trainable_weights))

# It's not included in the trainable weights:
print("trainable_weights:", my_sum.trainable_weights)
class Linear(keras.layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b
# At instantiation, we don't know on what inputs this is going to get called
linear_layer = Linear(32)

# The layer's weights are created dynamically the first time the layer is called
y = linear_layer(x)
class MLPBlock(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.linear_1 = Linear(32)
        self.linear_2 = Linear(32)
        self.linear_3 = Linear(1)

    def call(self, inputs):
        x = self.linear_1(inputs)
        x = tf.nn.relu(x)
        x = self.linear_2(x)
        x = tf.nn.relu(x)
        return self.linear_3(x)


mlp = MLPBlock()
y = mlp(tf.ones(shape=(3, 64)))  # The first call to the `mlp` will create the weights
print("weights:", len(mlp.weights))
print("trainable weights:", len(mlp.trainable_weights))
# A layer that creates an activity regularization loss
class ActivityRegularizationLayer(keras.layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * tf.reduce_mean(inputs))
        return inputs
class OuterLayer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


layer = OuterLayer()
assert len(layer.losses) == 0  # No losses yet since the layer has never been called

_ = layer(tf.zeros(1, 1))
assert len(layer.losses) == 1  # We created one loss value

# `layer.losses` gets reset at the start of each __call__
_ = layer(tf.zeros(1, 1))
assert len(layer.losses) == 1  # This is the loss created during the call above
class OuterLayerWithKernelRegularizer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(
            32, kernel_regularizer=keras.regularizers.l2(1e-3)
        )

    def call(self, inputs):
        return self.dense(inputs)


layer = OuterLayerWithKernelRegularizer()
_ = layer(tf.zeros((1, 1)))

# This is `1e-3 * sum(layer.dense.kernel ** 2)`,
# created by the `kernel_regularizer` above.
print(layer.losses)
regularized = layer
import numpy as np

inputs = keras.Input(shape=(3,))
outputs = ActivityRegularizationLayer()(inputs)
model = keras.Model(inputs, outputs)

# If there is a loss passed in `compile`, the regularization
# losses get added to it
model.compile(optimizer="adam", loss="mse")
model.fit(np.random.random((2, 3)), np.random.random((2, 3)))

# It's also possible not to pass any loss in `compile`,
# since the model already has a loss to minimize, via the `add_loss`
# call during the forward pass!
model.compile(optimizer="adam")
model.fit(np.random.random((2, 3)), np.random.random((2, 3)))
class Linear(keras.layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {"units": self.units}


# Now you can recreate the layer from its config:
layer = Linear(64)
config = layer.get_config()
print(config)
new_layer = Linear.from_config(config)
class Linear(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


layer = Linear(64)
config = layer.get_config()
print(config)
new_layer = Linear.from_config(config)
class CustomDropout(keras.layers.Layer):
    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs, training=False):
        if training:
            return tf.nn.dropout(inputs, rate=self.rate)
        return inputs
from tapeflow.keras import layers


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        epsilon = keras.backend.random_normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    """Maps MNIST digits to a triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Converts z, the encoded digit vector, back into a readable digit."""

    def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(keras.Model):
    """Combines the encoder and decoder into an end-to-end model for training."""

    def __init__(
        self,
        original_dim,
        intermediate_dim=64,
        latent_dim=32,
        name="autoencoder",
        **kwargs
    ):
        super().__init__(name=name, **kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        # Add KL divergence regularization loss.
        kl_loss = -0.5 * tf.reduce_mean(
            z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1
        )
        self.add_loss(kl_loss)
        return reconstructed
original_dim = 784
vae = VariationalAutoEncoder(original_dim, 64, 32)

optimizer = keras.optimizers.Adam(learning_rate=1e-3)
mse_loss_fn = keras.losses.MeanSquaredError()

loss_metric = keras.metrics.Mean()

x_train = x_train.reshape(512, 784).astype("float32") / 255  # MNIST: 60000

train_dataset = tf.data.Dataset.from_tensor_slices(x_train)
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(64)

epochs = 2

# Iterate over epochs.
for epoch in range(epochs):
    print("Start of epoch %d" % (epoch,))

    # Iterate over the batches of the dataset.
    for step, x_batch_train in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            reconstructed = vae(x_batch_train)
            # Compute reconstruction loss
            loss = mse_loss_fn(x_batch_train, reconstructed)
            loss += sum(vae.losses)  # Add KLD regularization loss

        grads = tape.gradient(loss, vae.trainable_weights)
        optimizer.apply_gradients(zip(grads, vae.trainable_weights))

        loss_metric(loss)

        if step % 100 == 0:
            print("step %d: mean loss = %.4f" % (step, loss_metric.result()))
vae = VariationalAutoEncoder(784, 64, 32)

optimizer = keras.optimizers.Adam(learning_rate=1e-3)

vae.compile(optimizer, loss=keras.losses.MeanSquaredError())
history = vae.fit(x_train, x_train, epochs=2, batch_size=64)
'''


# the GAN's convolutions with 16 filters, not 64 and 128, so it trains in seconds here
GAN_NARROWER = [("layers.Conv2D(64, (3, 3)", "layers.Conv2D(16, (3, 3)"),
                ("layers.Conv2D(128, (3, 3)", "layers.Conv2D(16, (3, 3)"),
                ("layers.Conv2DTranspose(128, (4, 4)", "layers.Conv2DTranspose(16, (4, 4)")]

def test_custom_layers(capsys, tmp_path):
    scope = _run(CUSTOM_LAYERS, tmp_path / "custom_layers.py")
    out = capsys.readouterr().out
    assert out.startswith("[]\n")  # no GPU listed
    dense = scope["layer"]
    assert [v.shape for v in scope["layer"].trainable_variables] == [(5, 10)]
    names = out.splitlines()[1]
    assert "kernel" in names and names.startswith("['") and names.count("'") == 2
    block = scope["block"]
    assert [type(layer).__name__ for layer in block.layers] == ["Conv2D",
                                                               "BatchNormalization"] * 3
    assert len(block.variables) == 18  # 3 convolutions (kernel, bias), 3 BN (4 each)
    assert block.count_params() == 41 and scope["my_seq"].count_params() == 41
    assert out.count(" Total params: 41 (164.00 B)") == 2
    assert out.count(" Non-trainable params: 12 (48.00 B)") == 2  # BN's moving statistics
    x = np.random.RandomState(0).rand(1, 2, 3, 3).astype(np.float32)
    # the block in inference mode: fresh BN is identity/sqrt(1+eps); the residual keeps
    # the input, so the relu of (x + something that is 0 for... ) is at least relu(x)
    y = block(x).numpy()
    assert y.shape == (1, 2, 3, 3) and (y >= 0).all()
    assert scope["my_seq"](x).shape == (1, 2, 3, 3)
    del dense


def test_subclassing_guide(capsys, tmp_path):
    x_train, _ = _digits_like(512, seed=5)
    scope = _run(SUBCLASSING,
                 tmp_path / "subclassing.py", x_train=x_train)
    out = capsys.readouterr().out
    assert "[2. 2.]\n[4. 4.]\n" in out  # ComputeSum's non-trainable total, twice
    assert "weights: 1\nnon-trainable weights: 1\ntrainable_weights: []\n" in out
    assert "weights: 6\ntrainable weights: 6\n" in out  # MLPBlock: 3 Linear layers
    kernel = scope["regularized"].dense.kernel.numpy()
    (penalty,) = scope["regularized"].losses
    np.testing.assert_allclose(float(penalty), 1e-3 * (kernel ** 2).sum(), rtol=1e-5)
    assert "{'units': 64}\n" in out
    assert "'trainable': True" in out and "'units': 64}" in out
    # compile() without a loss: fit minimizes the add_loss term alone, 0.01 * mean of
    # inputs drawn from [0, 1) (Keras 3.15 keeps the previous compile's "mse" instead)
    fit_losses = [float(line.rsplit("loss: ", 1)[1]) for line in out.splitlines()
                  if line.startswith("1/1 ")]
    assert len(fit_losses) == 2 and 0 < fit_losses[1] < 0.01 < fit_losses[0]
    steps = [float(line.split("= ")[1]) for line in out.splitlines() if "mean loss" in line]
    assert len(steps) == 2 and steps[1] < steps[0]
    history = scope["history"].history["loss"]
    assert len(history) == 2 and history[1] < history[0]
    vae = scope["vae"]
    # encoder 784->64, 64->32 twice; decoder 32->64->784
    assert vae.count_params() == (784 * 64 + 64) + 2 * (64 * 32 + 32) + (32 * 64 + 64) \
        + (64 * 784 + 784) == 107_472


# The custom objects save_and_load speaks of (its "Saving custom objects" section is prose
# only): the code of keras.io's serialization guide, "Custom layer and function example",
# then what that section says to do with files: save the model with the custom layer and
# activation to .keras and .h5 and load it back, giving the classes by `custom_objects`.
CUSTOM_OBJECTS = '''
import numpy as np
import tapeflow as tf
from tapeflow import keras
class CustomLayer(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super(CustomLayer, self).__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        config = super(CustomLayer, self).get_config()
        config.update({"units": self.units})
        return config


def custom_activation(x):
    return tf.nn.tanh(x) ** 2


# Make a model with the CustomLayer and custom_activation
inputs = keras.Input((32,))
x = CustomLayer(32)(inputs)
outputs = keras.layers.Activation(custom_activation)(x)
model = keras.Model(inputs, outputs)

# Retrieve the config
config = model.get_config()

# At loading time, register the custom objects with a `custom_object_scope`:
custom_objects = {"CustomLayer": CustomLayer, "custom_activation": custom_activation}
with keras.utils.custom_object_scope(custom_objects):
    new_model = keras.Model.from_config(config)
model.save("custom_model.keras")
model.save("custom_model.h5")
from_keras_file = keras.models.load_model("custom_model.keras", custom_objects=custom_objects)
from_h5_file = keras.models.load_model("custom_model.h5", custom_objects=custom_objects)
'''


def test_save_and_load_custom_objects(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope = _run(CUSTOM_OBJECTS, tmp_path / "custom.py")
    config = scope["model"].get_config()
    # as Keras 3 writes them: the user's function as a serialized entry, by its name
    assert config["layers"][2]["config"]["activation"] == {
        "module": "builtins", "class_name": "function", "config": "custom_activation",
        "registered_name": "function"}
    assert config["layers"][1]["config"]["units"] == 32
    x = np.random.RandomState(0).rand(4, 32).astype(np.float32)
    expected = scope["model"](x).numpy()
    w, b = scope["model"].layers[1].get_weights()
    np.testing.assert_allclose(expected, np.tanh(x @ w + b) ** 2, rtol=1e-5, atol=1e-6)
    for name in ("from_keras_file", "from_h5_file"):  # the same weights, the same outputs
        loaded = scope[name]
        assert type(loaded.layers[1]).__name__ == "CustomLayer"
        np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6, err_msg=name)
    new = scope["new_model"]  # from the config alone: new weights, the same function
    w2, b2 = new.layers[1].get_weights()
    np.testing.assert_allclose(new(x).numpy(), np.tanh(x @ w2 + b2) ** 2, rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ValueError):  # without custom_objects the layer class is unknown
        keras.models.load_model("custom_model.keras")


# keras.io/guides/functional_api (tf.keras edition), whole. Data: MNIST is 512 train and
# 128 test rows of _digits_like (60000 -> 512, 10000 -> 128 in the reshapes), CIFAR-10 20
# random images with labels given as `cifar10_data`; the tickets' dummy data has 64 rows,
# not 1280, and bodies of 20 words, not 100; VGG19 (an ImageNet download) is replaced by the toy ResNet built above, so
# the feature-extraction image is 32x32, not 224x224. Left out: the four plot_model
# cells (they need pydot, which raises ImportError as in Keras).
FUNCTIONAL = '''
import numpy as np
import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers
inputs = keras.Input(shape=(784,))
# Just for demonstration purposes.
img_inputs = keras.Input(shape=(32, 32, 3))
inputs.shape
inputs.dtype
dense = layers.Dense(64, activation="relu")
x = dense(inputs)
x = layers.Dense(64, activation="relu")(x)
outputs = layers.Dense(10)(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")
model.summary()
x_train = x_train.reshape(512, 784).astype("float32") / 255
x_test = x_test.reshape(128, 784).astype("float32") / 255

model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer=keras.optimizers.RMSprop(),
    metrics=["accuracy"],
)

history = model.fit(x_train, y_train, batch_size=64, epochs=2, validation_split=0.2)

test_scores = model.evaluate(x_test, y_test, verbose=2)
print("Test loss:", test_scores[0])
print("Test accuracy:", test_scores[1])
mnist_model, mnist_history = model, history
model.save("path_to_my_model.keras")  # Keras 3 wants the extension (a ValueError)
del model
# Recreate the exact same model purely from the file:
model = keras.models.load_model("path_to_my_model.keras")
reloaded_mnist_model = model
encoder_input = keras.Input(shape=(28, 28, 1), name="img")
x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
x = layers.Conv2D(32, 3, activation="relu")(x)
x = layers.MaxPooling2D(3)(x)
x = layers.Conv2D(32, 3, activation="relu")(x)
x = layers.Conv2D(16, 3, activation="relu")(x)
encoder_output = layers.GlobalMaxPooling2D()(x)

encoder = keras.Model(encoder_input, encoder_output, name="encoder")
encoder.summary()

x = layers.Reshape((4, 4, 1))(encoder_output)
x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
x = layers.UpSampling2D(3)(x)
x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)

autoencoder = keras.Model(encoder_input, decoder_output, name="autoencoder")
autoencoder.summary()
encoder_input = keras.Input(shape=(28, 28, 1), name="original_img")
x = layers.Conv2D(16, 3, activation="relu")(encoder_input)
x = layers.Conv2D(32, 3, activation="relu")(x)
x = layers.MaxPooling2D(3)(x)
x = layers.Conv2D(32, 3, activation="relu")(x)
x = layers.Conv2D(16, 3, activation="relu")(x)
encoder_output = layers.GlobalMaxPooling2D()(x)

encoder = keras.Model(encoder_input, encoder_output, name="encoder")
encoder.summary()

decoder_input = keras.Input(shape=(16,), name="encoded_img")
x = layers.Reshape((4, 4, 1))(decoder_input)
x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
x = layers.Conv2DTranspose(32, 3, activation="relu")(x)
x = layers.UpSampling2D(3)(x)
x = layers.Conv2DTranspose(16, 3, activation="relu")(x)
decoder_output = layers.Conv2DTranspose(1, 3, activation="relu")(x)

decoder = keras.Model(decoder_input, decoder_output, name="decoder")
decoder.summary()

autoencoder_input = keras.Input(shape=(28, 28, 1), name="img")
encoded_img = encoder(autoencoder_input)
decoded_img = decoder(encoded_img)
autoencoder = keras.Model(autoencoder_input, decoded_img, name="autoencoder")
autoencoder.summary()
def get_model():
    inputs = keras.Input(shape=(128,))
    outputs = layers.Dense(1)(inputs)
    return keras.Model(inputs, outputs)


model1 = get_model()
model2 = get_model()
model3 = get_model()

inputs = keras.Input(shape=(128,))
y1 = model1(inputs)
y2 = model2(inputs)
y3 = model3(inputs)
outputs = layers.average([y1, y2, y3])
ensemble_model = keras.Model(inputs=inputs, outputs=outputs)
num_tags = 12  # Number of unique issue tags
num_words = 10000  # Size of vocabulary obtained when preprocessing text data
num_departments = 4  # Number of departments for predictions

title_input = keras.Input(
    shape=(None,), name="title"
)  # Variable-length sequence of ints
body_input = keras.Input(shape=(None,), name="body")  # Variable-length sequence of ints
tags_input = keras.Input(
    shape=(num_tags,), name="tags"
)  # Binary vectors of size `num_tags`

# Embed each word in the title into a 64-dimensional vector
title_features = layers.Embedding(num_words, 64)(title_input)
# Embed each word in the text into a 64-dimensional vector
body_features = layers.Embedding(num_words, 64)(body_input)

# Reduce sequence of embedded words in the title into a single 128-dimensional vector
title_features = layers.LSTM(128)(title_features)
# Reduce sequence of embedded words in the body into a single 32-dimensional vector
body_features = layers.LSTM(32)(body_features)

# Merge all available features into a single large vector via concatenation
x = layers.concatenate([title_features, body_features, tags_input])

# Stick a logistic regression for priority prediction on top of the features
priority_pred = layers.Dense(1, name="priority")(x)
# Stick a department classifier on top of the features
department_pred = layers.Dense(num_departments, name="department")(x)

# Instantiate an end-to-end model predicting both priority and department
model = keras.Model(
    inputs=[title_input, body_input, tags_input],
    outputs=[priority_pred, department_pred],
)
model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=[
        keras.losses.BinaryCrossentropy(from_logits=True),
        keras.losses.CategoricalCrossentropy(from_logits=True),
    ],
    loss_weights=[1.0, 0.2],
)
model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss={
        "priority": keras.losses.BinaryCrossentropy(from_logits=True),
        "department": keras.losses.CategoricalCrossentropy(from_logits=True),
    },
    loss_weights={"priority": 1.0, "department": 0.2},
)
# Dummy input data (the guide: 1280 rows, bodies of 100 words)
title_data = np.random.randint(num_words, size=(64, 10))
body_data = np.random.randint(num_words, size=(64, 20))
tags_data = np.random.randint(2, size=(64, num_tags)).astype("float32")

# Dummy target data
priority_targets = np.random.random(size=(64, 1))
dept_targets = np.random.randint(2, size=(64, num_departments))

tickets_history = model.fit(
    {"title": title_data, "body": body_data, "tags": tags_data},
    {"priority": priority_targets, "department": dept_targets},
    epochs=2,
    batch_size=32,
)
tickets_model = model
inputs = keras.Input(shape=(32, 32, 3), name="img")
x = layers.Conv2D(32, 3, activation="relu")(inputs)
x = layers.Conv2D(64, 3, activation="relu")(x)
block_1_output = layers.MaxPooling2D(3)(x)

x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_1_output)
x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
block_2_output = layers.add([x, block_1_output])

x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_2_output)
x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
block_3_output = layers.add([x, block_2_output])

x = layers.Conv2D(64, 3, activation="relu")(block_3_output)
x = layers.GlobalAveragePooling2D()(x)
x = layers.Dense(256, activation="relu")(x)
x = layers.Dropout(0.5)(x)
outputs = layers.Dense(10)(x)

model = keras.Model(inputs, outputs, name="toy_resnet")
model.summary()
(x_train, y_train), (x_test, y_test) = cifar10_data

x_train = x_train.astype("float32") / 255.0
x_test = x_test.astype("float32") / 255.0
y_train = keras.utils.to_categorical(y_train, 10)
y_test = keras.utils.to_categorical(y_test, 10)

model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=keras.losses.CategoricalCrossentropy(from_logits=True),
    metrics=["acc"],
)
# We restrict the data to the first 1000 samples so as to limit execution time
# on Colab. Try to train on the entire dataset until convergence!
resnet_history = model.fit(x_train[:1000], y_train[:1000], batch_size=64, epochs=1,
                           validation_split=0.2)
# Embedding for 1000 unique words mapped to 128-dimensional vectors
shared_embedding = layers.Embedding(1000, 128)

# Variable-length sequence of integers
text_input_a = keras.Input(shape=(None,), dtype="int32")

# Variable-length sequence of integers
text_input_b = keras.Input(shape=(None,), dtype="int32")

# Reuse the same layer to encode both inputs
encoded_input_a = shared_embedding(text_input_a)
encoded_input_b = shared_embedding(text_input_b)
vgg19 = model  # the guide: tf.keras.applications.VGG19() (a download)
features_list = [layer.output for layer in vgg19.layers]
feat_extraction_model = keras.Model(inputs=vgg19.input, outputs=features_list)

img = np.random.random((1, 32, 32, 3)).astype("float32")  # the guide: 224x224
extracted_features = feat_extraction_model(img)
class CustomDense(layers.Layer):
    def __init__(self, units=32):
        super(CustomDense, self).__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b


inputs = keras.Input((4,))
outputs = CustomDense(10)(inputs)

model = keras.Model(inputs, outputs)
class CustomDense(layers.Layer):
    def __init__(self, units=32):
        super(CustomDense, self).__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,), initializer="random_normal", trainable=True
        )

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {"units": self.units}


inputs = keras.Input((4,))
outputs = CustomDense(10)(inputs)

model = keras.Model(inputs, outputs)
config = model.get_config()

new_model = keras.Model.from_config(config, custom_objects={"CustomDense": CustomDense})
units = 32
timesteps = 10
input_dim = 5

# Define a Functional model
inputs = keras.Input((None, units))
x = layers.GlobalAveragePooling1D()(inputs)
outputs = layers.Dense(1)(x)
model = keras.Model(inputs, outputs)


class CustomRNN(layers.Layer):
    def __init__(self):
        super(CustomRNN, self).__init__()
        self.units = units
        self.projection_1 = layers.Dense(units=units, activation="tanh")
        self.projection_2 = layers.Dense(units=units, activation="tanh")
        # Our previously-defined Functional model
        self.classifier = model

    def call(self, inputs):
        outputs = []
        state = tf.zeros(shape=(inputs.shape[0], self.units))
        for t in range(inputs.shape[1]):
            x = inputs[:, t, :]
            h = self.projection_1(x)
            y = h + self.projection_2(state)
            state = y
            outputs.append(y)
        features = tf.stack(outputs, axis=1)
        print(features.shape)
        return self.classifier(features)


rnn_model = CustomRNN()
_ = rnn_model(tf.zeros((1, timesteps, input_dim)))
units = 32
timesteps = 10
input_dim = 5
batch_size = 16


class CustomRNN(layers.Layer):
    def __init__(self):
        super(CustomRNN, self).__init__()
        self.units = units
        self.projection_1 = layers.Dense(units=units, activation="tanh")
        self.projection_2 = layers.Dense(units=units, activation="tanh")
        self.classifier = layers.Dense(1)

    def call(self, inputs):
        outputs = []
        state = tf.zeros(shape=(inputs.shape[0], self.units))
        for t in range(inputs.shape[1]):
            x = inputs[:, t, :]
            h = self.projection_1(x)
            y = h + self.projection_2(state)
            state = y
            outputs.append(y)
        features = tf.stack(outputs, axis=1)
        return self.classifier(features)


# Note that you specify a static batch size for the inputs with the `batch_shape`
# arg, because the inner computation of `CustomRNN` requires a static batch size
# (when you create the `state` zeros tensor).
inputs = keras.Input(batch_shape=(batch_size, timesteps, input_dim))
x = layers.Conv1D(32, 3)(inputs)
outputs = CustomRNN()(x)

model = keras.Model(inputs, outputs)

rnn_model = CustomRNN()
_ = rnn_model(tf.zeros((1, 10, 5)))
'''


def _cifar_like(n: int, seed: int):
    rng = np.random.RandomState(seed)
    return rng.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8), rng.randint(0, 10, (n, 1))


def test_functional_api_guide(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # model.save writes under the working directory
    (x_train, y_train), (x_test, y_test) = _digits_like(512, seed=6), _digits_like(128, seed=7)
    scope = _run(FUNCTIONAL, tmp_path / "functional.py",
                 x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test,
                 cifar10_data=(_cifar_like(20, 8), _cifar_like(4, 9)))
    out = capsys.readouterr().out
    # the parameter counts the guide's summaries print
    for name, total in [("mnist_model", "55,050 (215.04 KB)"),
                        ("encoder", "18,672 (72.94 KB)"), ("decoder", "9,569 (37.38 KB)"),
                        ("autoencoder", "28,241 (110.32 KB)"),
                        ("toy_resnet", "223,242 (872.04 KB)")]:
        at = out.index(f'Model: "{name}"')
        assert out[at:].split(" Total params: ", 1)[1].startswith(total), name
    assert "│ add (Add)" in out and "│ add_1 (Add)" in out  # the residual connections
    assert tuple(scope["inputs"].shape) == (16, 10, 5)  # the last Input (batch_shape)
    assert tuple(scope["img_inputs"].shape) == (None, 32, 32, 3)
    mnist = scope["mnist_history"].history
    assert len(mnist["loss"]) == 2 and mnist["loss"][1] < mnist["loss"][0]
    assert sorted(mnist) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    x = x_test.reshape(128, 784).astype("float32") / 255  # as the guide reshapes them
    np.testing.assert_allclose(scope["reloaded_mnist_model"].predict(x, verbose=0),
                               scope["mnist_model"].predict(x, verbose=0), rtol=1e-5,
                               atol=1e-6)
    # autoencoder: the decoder mirrors the encoder back to the input's shape
    assert tuple(scope["autoencoder"].output_shape) == (None, 28, 28, 1)
    ensemble, members = scope["ensemble_model"], [scope[f"model{i}"] for i in (1, 2, 3)]
    v = np.random.RandomState(0).rand(3, 128).astype(np.float32)
    np.testing.assert_allclose(ensemble(v).numpy(),
                               np.mean([m(v).numpy() for m in members], axis=0), rtol=1e-5)
    tickets = scope["tickets_history"].history
    assert sorted(tickets) == ["department_loss", "loss", "priority_loss"]
    assert tickets["loss"][1] < tickets["loss"][0]
    # the total is priority + 0.2 * department (the loss weights), per batch averaged
    np.testing.assert_allclose(tickets["loss"], np.add(tickets["priority_loss"],
                               np.multiply(0.2, tickets["department_loss"])), rtol=1e-4)
    priority, department = scope["tickets_model"].predict(
        {"title": scope["title_data"][:2], "body": scope["body_data"][:2, :7],
         "tags": scope["tags_data"][:2]}, verbose=0)  # any sequence lengths
    assert priority.shape == (2, 1) and department.shape == (2, 4)
    # shared layers: one Embedding, two nodes
    assert tuple(scope["encoded_input_a"].shape) == (None, None, 128)
    assert len(scope["shared_embedding"].weights) == 1
    # features of every layer of the (toy ResNet's) graph, from one call
    features = scope["extracted_features"]
    assert len(features) == len(scope["vgg19"].layers) == 15
    assert tuple(features[0].shape) == (1, 32, 32, 3)
    np.testing.assert_allclose(features[-1].numpy(), scope["vgg19"](scope["img"]).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert scope["new_model"].get_config()["layers"][1]["config"] == {"units": 10}
    assert "(1, 10, 32)\n" in out  # the first CustomRNN prints its features' shape
    assert tuple(scope["model"].output_shape) == (16, 8, 1)  # Conv1D(32, 3): 10 -> 8 steps


# keras.io/guides/custom_train_step_in_tensorflow ("Customizing what happens in fit()"),
# up to its GAN (left out: convolutions of 28x28x128 maps take too long here). Its random
# data has 256 rows, not 1000.
CUSTOM_FIT = '''
import os

# This guide can only be run with the TF backend.
os.environ["KERAS_BACKEND"] = "tensorflow"

import tapeflow as tf
import tapeflow.keras as keras
from tapeflow.keras import layers
import numpy as np
class CustomModel(keras.Model):
    def train_step(self, data):
        # Unpack the data. Its structure depends on your model and
        # on what you pass to `fit()`.
        x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute the loss value
            # (the loss function is configured in `compile()`)
            loss = self.compute_loss(y=y, y_pred=y_pred)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply(gradients, trainable_vars)

        # Update metrics (includes the metric that tracks the loss)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)

        # Return a dict mapping metric names to current value
        return {m.name: m.result() for m in self.metrics}
# Construct and compile an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse", metrics=["mae"])

# Just use `fit` as usual
x = np.random.random((256, 32))
y = np.random.random((256, 1))
history_1 = model.fit(x, y, epochs=3)
model_1 = model
class CustomModel(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = keras.losses.MeanSquaredError()

    def train_step(self, data):
        x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute our own loss
            loss = self.loss_fn(y, y_pred)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply(gradients, trainable_vars)

        # Compute our own metrics
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {
            "loss": self.loss_tracker.result(),
            "mae": self.mae_metric.result(),
        }

    @property
    def metrics(self):
        # We list our `Metric` objects here so that `reset_states()` can be
        # called automatically at the start of each epoch
        # or at the start of `evaluate()`.
        return [self.loss_tracker, self.mae_metric]


# Construct an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)

# We don't pass a loss or metrics here.
model.compile(optimizer="adam")

# Just use `fit` as usual -- you can use callbacks, etc.
x = np.random.random((256, 32))
y = np.random.random((256, 1))
history_2 = model.fit(x, y, epochs=5)
model_2 = model
class CustomModel(keras.Model):
    def train_step(self, data):
        # Unpack the data. Its structure depends on your model and
        # on what you pass to `fit()`.
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            sample_weight = None
            x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute the loss value.
            # The loss function is configured in `compile()`.
            loss = self.compute_loss(
                y=y,
                y_pred=y_pred,
                sample_weight=sample_weight,
            )

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply(gradients, trainable_vars)

        # Update the metrics.
        # Metrics are configured in `compile()`.
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred, sample_weight=sample_weight)

        # Return a dict mapping metric names to current value.
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}


# Construct and compile an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse", metrics=["mae"])

# You can now use sample_weight argument
x = np.random.random((256, 32))
y = np.random.random((256, 1))
sw = np.random.random((256, 1))
history_3 = model.fit(x, y, sample_weight=sw, epochs=3)
class CustomModel(keras.Model):
    def test_step(self, data):
        # Unpack the data
        x, y = data
        # Compute predictions
        y_pred = self(x, training=False)
        # Updates the metrics tracking the loss
        loss = self.compute_loss(y=y, y_pred=y_pred)
        # Update the metrics.
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        # Return a dict mapping metric names to current value.
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}


# Construct an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(loss="mse", metrics=["mae"])

# Evaluate with our custom test_step
x = np.random.random((256, 32))
y = np.random.random((256, 1))
scores = model.evaluate(x, y)
'''

# The same guide's GAN, trained on 32 MNIST-shaped images (all_digits from _digits_like,
# not MNIST's 70,000): one batch (the guide: 100), with narrower convolutions
# (GAN_NARROWER below).
CUSTOM_FIT_GAN = '''
import tapeflow as tf
import tapeflow.keras as keras
from tapeflow.keras import layers
import numpy as np
# Create the discriminator
discriminator = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.GlobalMaxPooling2D(),
        layers.Dense(1),
    ],
    name="discriminator",
)

# Create the generator
latent_dim = 128
generator = keras.Sequential(
    [
        keras.Input(shape=(latent_dim,)),
        # We want to generate 128 coefficients to reshape into a 7x7x128 map
        layers.Dense(7 * 7 * 128),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Reshape((7, 7, 128)),
        layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
    ],
    name="generator",
)
class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
        self.seed_generator = keras.random.SeedGenerator(1337)

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]
        # Sample random points in the latent space
        batch_size = tf.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Decode them to fake images
        generated_images = self.generator(random_latent_vectors)

        # Combine them with real images
        combined_images = tf.concat([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = tf.concat(
            [tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0
        )
        # Add random noise to the labels - important trick!
        labels += 0.05 * keras.random.uniform(
            tf.shape(labels), seed=self.seed_generator
        )

        # Train the discriminator
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply(grads, self.discriminator.trainable_weights)

        # Sample random points in the latent space
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Assemble labels that say "all real images"
        misleading_labels = tf.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply(grads, self.generator.trainable_weights)

        # Update metrics and return their value.
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {
            "d_loss": self.d_loss_tracker.result(),
            "g_loss": self.g_loss_tracker.result(),
        }
# Prepare the dataset. We use both the training & test MNIST digits.
batch_size = 64
all_digits = all_digits.astype("float32") / 255.0
all_digits = np.reshape(all_digits, (-1, 28, 28, 1))
dataset = tf.data.Dataset.from_tensor_slices(all_digits)
dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)

gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
gan.compile(
    d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
    g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
    loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
)

# To limit the execution time, we only train on 100 batches. You can train on
# the entire dataset. You will need about 20 epochs to get nice results.
history = gan.fit(dataset.take(2), epochs=1)  # the guide: take(100)
'''


# keras.io/guides/writing_a_custom_training_loop_in_tensorflow, up to its GAN (left out,
# as above). MNIST is 640 rows of _digits_like given as `x_train`... with 128 (not 10,000)
# of them kept for validation.
TRAINING_LOOP = '''
import time
import os

# This guide can only be run with the TensorFlow backend.
os.environ["KERAS_BACKEND"] = "tensorflow"

import tapeflow as tf
import tapeflow.keras as keras
import numpy as np
def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


model = get_model()
# Instantiate an optimizer.
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
# Instantiate a loss function.
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

# Prepare the training dataset.
batch_size = 32
x_train = np.reshape(x_train, (-1, 784))
x_test = np.reshape(x_test, (-1, 784))

# Reserve 128 samples for validation (the guide: 10,000).
x_val = x_train[-128:]
y_val = y_train[-128:]
x_train = x_train[:-128]
y_train = y_train[:-128]

# Prepare the training dataset.
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)

# Prepare the validation dataset.
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val))
val_dataset = val_dataset.batch(batch_size)
epochs = 3
for epoch in range(epochs):
    print(f"\\nStart of epoch {epoch}")

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        # Open a GradientTape to record the operations run
        # during the forward pass, which enables auto-differentiation.
        with tf.GradientTape() as tape:
            # Run the forward pass of the layer.
            # The operations that the layer applies
            # to its inputs are going to be recorded
            # on the GradientTape.
            logits = model(x_batch_train, training=True)  # Logits for this minibatch

            # Compute the loss value for this minibatch.
            loss_value = loss_fn(y_batch_train, logits)

        # Use the gradient tape to automatically retrieve
        # the gradients of the trainable variables with respect to the loss.
        grads = tape.gradient(loss_value, model.trainable_weights)

        # Run one step of gradient descent by updating
        # the value of the variables to minimize the loss.
        optimizer.apply(grads, model.trainable_weights)

        # Log every 100 batches.
        if step % 100 == 0:
            print(
                f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}"
            )
            print(f"Seen so far: {(step + 1) * batch_size} samples")
# Get a fresh model
model = get_model()

# Instantiate an optimizer to train the model.
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
# Instantiate a loss function.
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

# Prepare the metrics.
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()
epochs = 2
for epoch in range(epochs):
    print(f"\\nStart of epoch {epoch}")
    start_time = time.time()

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            logits = model(x_batch_train, training=True)
            loss_value = loss_fn(y_batch_train, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)

        # Update training metric.
        train_acc_metric.update_state(y_batch_train, logits)

        # Log every 100 batches.
        if step % 100 == 0:
            print(
                f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}"
            )
            print(f"Seen so far: {(step + 1) * batch_size} samples")

    # Display metrics at the end of each epoch.
    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")

    # Reset training metrics at the end of each epoch
    train_acc_metric.reset_state()

    # Run a validation loop at the end of each epoch.
    for x_batch_val, y_batch_val in val_dataset:
        val_logits = model(x_batch_val, training=False)
        # Update val metrics
        val_acc_metric.update_state(y_batch_val, val_logits)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")
    print(f"Time taken: {time.time() - start_time:.2f}s")
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    train_acc_metric.update_state(y, logits)
    return loss_value
@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)
epochs = 2
for epoch in range(epochs):
    print(f"\\nStart of epoch {epoch}")
    start_time = time.time()

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)

        # Log every 100 batches.
        if step % 100 == 0:
            print(
                f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}"
            )
            print(f"Seen so far: {(step + 1) * batch_size} samples")

    # Display metrics at the end of each epoch.
    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")

    # Reset training metrics at the end of each epoch
    train_acc_metric.reset_state()

    # Run a validation loop at the end of each epoch.
    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)

    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")
    print(f"Time taken: {time.time() - start_time:.2f}s")
class ActivityRegularizationLayer(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * tf.reduce_sum(inputs))
        return inputs
inputs = keras.Input(shape=(784,), name="digits")
x = keras.layers.Dense(64, activation="relu")(inputs)
# Insert activity regularization as a layer
x = ActivityRegularizationLayer()(x)
x = keras.layers.Dense(64, activation="relu")(x)
outputs = keras.layers.Dense(10, name="predictions")(x)

model = keras.Model(inputs=inputs, outputs=outputs)
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
        # Add any extra losses created during the forward pass.
        loss_value += sum(model.losses)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    train_acc_metric.update_state(y, logits)
    return loss_value
'''


def test_customizing_fit_guide(capsys, tmp_path):
    scope = _run(CUSTOM_FIT, tmp_path / "custom_fit.py")
    out = capsys.readouterr().out
    # compile(metrics=["mae"]) reaches a train_step that loops over self.metrics
    for name, epochs in [("history_1", 3), ("history_2", 5), ("history_3", 3)]:
        history = scope[name].history
        assert sorted(history) == ["loss", "mae"] and len(history["loss"]) == epochs
        assert history["loss"][-1] < history["loss"][0], name
    assert out.count(" - loss: ") == 12 and out.count(" - mae: ") == 12
    # the last model: a custom test_step under evaluate(), against NumPy
    model, x, y = scope["model"], scope["x"], scope["y"]
    p = model.predict(x, verbose=0)
    np.testing.assert_allclose(scope["scores"], [np.mean((y - p) ** 2),
                                                 np.mean(np.abs(y - p))], rtol=1e-5)
    # the low-level model lists its own trackers (its `metrics` property)
    assert [m.name for m in scope["model_2"].metrics] == ["loss", "mae"]


def test_training_loop_from_scratch_guide(capsys, tmp_path):
    (x_train, y_train), (x_test, y_test) = _digits_like(640, seed=10), _digits_like(64, 11)
    scope = _run(TRAINING_LOOP, tmp_path / "loop.py",
                 x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    out = capsys.readouterr().out
    assert out.count("Start of epoch") == 7 and out.count("Seen so far: 32 samples") == 7
    accs = [float(line.split(": ")[1]) for line in out.splitlines()
            if line.startswith("Training acc over epoch")]
    assert len(accs) == 4 and accs[-1] > accs[0]
    val = [float(line.split(": ")[1]) for line in out.splitlines()
           if line.startswith("Validation acc")]
    assert len(val) == 4 and val[-1] > 0.3  # 10 classes: chance is 0.1
    # the last model: activity regularization is part of the traced step's loss
    model, step = scope["model"], scope["train_step"]
    xb, yb = x_train[:32].reshape(32, 784), y_train[:32]
    hidden = model.layers[1](xb.astype(np.float32)).numpy()
    expected = float(scope["loss_fn"](yb, model(xb))) + 1e-2 * hidden.sum()
    np.testing.assert_allclose(float(step(xb, yb)), expected, rtol=1e-4)
    assert len(model.losses) == 1


def test_customizing_fit_guide_gan(capsys, tmp_path):
    scope = _run(_changed(CUSTOM_FIT_GAN, *GAN_NARROWER),
                 tmp_path / "gan.py", all_digits=_digits_like(32, seed=17)[0])
    out = capsys.readouterr().out
    gan = scope["gan"]
    history = scope["history"].history
    # a model with no call() of its own: fit runs its train_step alone
    assert sorted(history) == ["d_loss", "g_loss"] and " - d_loss: " in out
    # near ln 2 at the start: logits near 0 against labels 0/1
    assert 0.5 < history["d_loss"][0] < 1.0 and 0.5 < history["g_loss"][0] < 1.0
    assert int(gan.d_optimizer.iterations.numpy()) == 1
    assert int(gan.g_optimizer.iterations.numpy()) == 1
    assert gan.optimizer is not None  # super().compile() with no arguments
    images = scope["generator"](np.zeros((2, 128), np.float32)).numpy()
    assert images.shape == (2, 28, 28, 1) and ((images >= 0) & (images <= 1)).all()


# keras.io/guides/understanding_masking_and_padding (tf.keras edition), whole.
MASKING = '''
import numpy as np
import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers
raw_inputs = [
    [711, 632, 71],
    [73, 8, 3215, 55, 927],
    [83, 91, 1, 645, 1253, 927],
]

# By default, this will pad using 0s; it is configurable via the
# "value" parameter.
# Note that you could "pre" padding (at the beginning) or
# "post" padding (at the end).
# We recommend using "post" padding when working with RNN layers
# (in order to be able to use the
# CuDNN implementation of the layers).
padded_inputs = tf.keras.preprocessing.sequence.pad_sequences(
    raw_inputs, padding="post"
)
print(padded_inputs)
embedding = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)
masked_output = embedding(padded_inputs)

print(masked_output._keras_mask)

masking_layer = layers.Masking()
# Simulate the embedding lookup by expanding the 2D input to 3D,
# with embedding dimension of 10.
unmasked_embedding = tf.cast(
    tf.tile(tf.expand_dims(padded_inputs, axis=-1), [1, 1, 10]), tf.float32
)

masked_embedding = masking_layer(unmasked_embedding)
print(masked_embedding._keras_mask)
model = keras.Sequential(
    [layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True), layers.LSTM(32),]
)
sequential_lstm = model
inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)(inputs)
outputs = layers.LSTM(32)(x)

model = keras.Model(inputs, outputs)
functional_lstm = model
class MyLayer(layers.Layer):
    def __init__(self, **kwargs):
        super(MyLayer, self).__init__(**kwargs)
        self.embedding = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)
        self.lstm = layers.LSTM(32)

    def call(self, inputs):
        x = self.embedding(inputs)
        # Note that you could also prepare a `mask` tensor manually.
        # It only needs to be a boolean tensor
        # with the right shape, i.e. (batch_size, timesteps).
        mask = self.embedding.compute_mask(inputs)
        output = self.lstm(x, mask=mask)  # The layer will ignore the masked values
        return output


layer = MyLayer()
x = np.random.random((32, 10)) * 100
x = x.astype("int32")
layer(x)
my_layer = layer
class TemporalSplit(keras.layers.Layer):
    """Split the input tensor into 2 tensors along the time dimension."""

    def call(self, inputs):
        # Expect the input to be 3D and mask to be 2D, split the input tensor into 2
        # subtensors along the time axis (axis 1).
        return tf.split(inputs, 2, axis=1)

    def compute_mask(self, inputs, mask=None):
        # Also split the mask into 2 if it presents.
        if mask is None:
            return None
        return tf.split(mask, 2, axis=1)


first_half, second_half = TemporalSplit()(masked_embedding)
print(first_half._keras_mask)
print(second_half._keras_mask)
class CustomEmbedding(keras.layers.Layer):
    def __init__(self, input_dim, output_dim, mask_zero=False, **kwargs):
        super(CustomEmbedding, self).__init__(**kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.mask_zero = mask_zero

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            shape=(self.input_dim, self.output_dim),
            initializer="random_normal",
            dtype="float32",
        )

    def call(self, inputs):
        return tf.nn.embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return tf.not_equal(inputs, 0)


layer = CustomEmbedding(10, 32, mask_zero=True)
x = np.random.random((3, 10)) * 9
x = x.astype("int32")

y = layer(x)
mask = layer.compute_mask(x)

print(mask)
class MyActivation(keras.layers.Layer):
    def __init__(self, **kwargs):
        super(MyActivation, self).__init__(**kwargs)
        # Signal that the layer is safe for mask propagation
        self.supports_masking = True

    def call(self, inputs):
        return tf.nn.relu(inputs)
inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)(inputs)
x = MyActivation()(x)  # Will pass the mask along
print("Mask found:", x._keras_mask)
outputs = layers.LSTM(32)(x)  # Will receive the mask

model = keras.Model(inputs, outputs)
activation_model = model
class TemporalSoftmax(keras.layers.Layer):
    def call(self, inputs, mask=None):
        broadcast_float_mask = tf.expand_dims(tf.cast(mask, "float32"), -1)
        inputs_exp = tf.exp(inputs) * broadcast_float_mask
        inputs_sum = tf.reduce_sum(inputs * broadcast_float_mask, axis=1, keepdims=True)
        return inputs_exp / inputs_sum


inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(input_dim=10, output_dim=32, mask_zero=True)(inputs)
x = layers.Dense(1)(x)
outputs = TemporalSoftmax()(x)

model = keras.Model(inputs, outputs)
y = model(np.random.randint(0, 10, size=(32, 100)), np.random.random((32, 100, 1)))
'''


# keras.io/guides/working_with_rnns. MNIST (for the LSTM over image rows) is 256 train
# and 64 test rows of _digits_like. Left out: the matplotlib line, and the last section
# (an RNN over a cell with nested inputs), which Keras 3 (TF 2.21) cannot run either:
# RNN builds the cell with the first input's shape only (NestedCell.build: IndexError).
RNNS = '''
import numpy as np
import tapeflow as tf
import tapeflow.keras as keras
from tapeflow.keras import layers
model = keras.Sequential()
# Add an Embedding layer expecting input vocab of size 1000, and
# output embedding dimension of size 64.
model.add(layers.Embedding(input_dim=1000, output_dim=64))

# Add a LSTM layer with 128 internal units.
model.add(layers.LSTM(128))

# Add a Dense layer with 10 units.
model.add(layers.Dense(10))

model.summary()
model = keras.Sequential()
model.add(layers.Embedding(input_dim=1000, output_dim=64))

# The output of GRU will be a 3D tensor of shape (batch_size, timesteps, 256)
model.add(layers.GRU(256, return_sequences=True))

# The output of SimpleRNN will be a 2D tensor of shape (batch_size, 128)
model.add(layers.SimpleRNN(128))

model.add(layers.Dense(10))

model.summary()
gru_model = model
encoder_vocab = 1000
decoder_vocab = 2000

encoder_input = layers.Input(shape=(None,))
encoder_embedded = layers.Embedding(input_dim=encoder_vocab, output_dim=64)(
    encoder_input
)

# Return states in addition to output
output, state_h, state_c = layers.LSTM(64, return_state=True, name="encoder")(
    encoder_embedded
)
encoder_state = [state_h, state_c]

decoder_input = layers.Input(shape=(None,))
decoder_embedded = layers.Embedding(input_dim=decoder_vocab, output_dim=64)(
    decoder_input
)

# Pass the 2 states to a new LSTM layer, as initial state
decoder_output = layers.LSTM(64, name="decoder")(
    decoder_embedded, initial_state=encoder_state
)
output = layers.Dense(10)(decoder_output)

model = keras.Model([encoder_input, decoder_input], output)
model.summary()
seq2seq = model
paragraph1 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph2 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph3 = np.random.random((20, 10, 50)).astype(np.float32)

lstm_layer = layers.LSTM(64, stateful=True)
output = lstm_layer(paragraph1)
output = lstm_layer(paragraph2)
output = lstm_layer(paragraph3)

# reset_states() will reset the cached state to the original initial_state.
# If no initial_state was provided, zero-states will be used by default.
lstm_layer.reset_states()
paragraph1 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph2 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph3 = np.random.random((20, 10, 50)).astype(np.float32)

lstm_layer = layers.LSTM(64, stateful=True)
output = lstm_layer(paragraph1)
output = lstm_layer(paragraph2)

existing_state = lstm_layer.states

new_lstm_layer = layers.LSTM(64)
new_output = new_lstm_layer(paragraph3, initial_state=existing_state)
model = keras.Sequential()

model.add(
    layers.Bidirectional(layers.LSTM(64, return_sequences=True), input_shape=(5, 10))
)
model.add(layers.Bidirectional(layers.LSTM(32)))
model.add(layers.Dense(10))

model.summary()
bidirectional = model
batch_size = 64
# Each MNIST image batch is a tensor of shape (batch_size, 28, 28).
# Each input sequence will be of size (28, 28) (height is treated like time).
input_dim = 28

units = 64
output_size = 10  # labels are from 0 to 9


# Build the RNN model
def build_model(allow_cudnn_kernel=True):
    # CuDNN is only available at the layer level, and not at the cell level.
    # This means `LSTM(units)` will use the CuDNN kernel,
    # while RNN(LSTMCell(units)) will run on non-CuDNN kernel.
    if allow_cudnn_kernel:
        # The LSTM layer with default options uses CuDNN.
        lstm_layer = keras.layers.LSTM(units, input_shape=(None, input_dim))
    else:
        # Wrapping a LSTMCell in a RNN layer will not use CuDNN.
        lstm_layer = keras.layers.RNN(
            keras.layers.LSTMCell(units), input_shape=(None, input_dim)
        )
    model = keras.models.Sequential(
        [
            lstm_layer,
            keras.layers.BatchNormalization(),
            keras.layers.Dense(output_size),
        ]
    )
    return model
x_train, x_test = x_train / 255.0, x_test / 255.0
sample, sample_label = x_train[0], y_train[0]
model = build_model(allow_cudnn_kernel=True)

model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer="sgd",
    metrics=["accuracy"],
)


model.fit(
    x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size, epochs=1
)
noncudnn_model = build_model(allow_cudnn_kernel=False)
noncudnn_model.set_weights(model.get_weights())
noncudnn_model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer="sgd",
    metrics=["accuracy"],
)
noncudnn_model.fit(
    x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size, epochs=1
)
with tf.device("CPU:0"):
    cpu_model = build_model(allow_cudnn_kernel=True)
    cpu_model.set_weights(model.get_weights())
    result = tf.argmax(cpu_model.predict_on_batch(tf.expand_dims(sample, 0)), axis=1)
    print(
        "Predicted result is: %s, target result is: %s" % (result.numpy(), sample_label)
    )
'''


def test_masking_and_padding_guide(capsys, tmp_path):
    scope = _run(MASKING, tmp_path / "masking.py")
    out = capsys.readouterr().out
    padded = np.array([[711, 632, 71, 0, 0, 0], [73, 8, 3215, 55, 927, 0],
                       [83, 91, 1, 645, 1253, 927]])
    np.testing.assert_array_equal(scope["padded_inputs"], padded)
    assert out.startswith(str(padded) + "\n")
    np.testing.assert_array_equal(scope["masked_output"]._keras_mask.numpy(), padded != 0)
    np.testing.assert_array_equal(scope["masked_embedding"]._keras_mask.numpy(), padded != 0)
    np.testing.assert_array_equal(scope["first_half"]._keras_mask.numpy(), padded[:, :3] != 0)
    np.testing.assert_array_equal(scope["second_half"]._keras_mask.numpy(),
                                  padded[:, 3:] != 0)
    ints = np.array([[0, 3, 9, 0], [1, 0, 2, 5]], dtype=np.int32)
    assert scope["mask"].shape == (3, 10)  # CustomEmbedding's, from x != 0
    np.testing.assert_array_equal(scope["layer"].compute_mask(ints).numpy(), ints != 0)
    np.testing.assert_allclose(scope["layer"](ints).numpy(),
                               scope["layer"].embeddings.numpy()[ints])
    assert "Mask found: <KerasTensor shape=(None, None), dtype=bool" in out
    # padding changes nothing: a padded row gives what the row alone gives
    for name in ("sequential_lstm", "functional_lstm", "activation_model"):
        model = scope[name]
        np.testing.assert_allclose(model(padded).numpy()[:2],
                                   np.concatenate([model(padded[:1, :3]).numpy(),
                                                   model(padded[1:2, :5]).numpy()]),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    assert tuple(scope["my_layer"](ints).shape) == (2, 32)
    y = scope["y"].numpy()
    assert y.shape == (32, 100, 1) and np.isfinite(y).all()


def test_working_with_rnns_guide(capsys, tmp_path):
    (x_train, y_train), (x_test, y_test) = _digits_like(256, seed=12), _digits_like(64, 13)
    scope = _run(RNNS, tmp_path / "rnns.py", x_train=x_train, y_train=y_train,
                 x_test=x_test, y_test=y_test)
    out = capsys.readouterr().out
    # summaries as Keras 3 prints them: the Sequentials without an input are not built
    assert out.count(" Total params: 0 (0.00 B)") == 2
    assert " Total params: 258,698 (1010.54 KB)" in out  # the encoder-decoder
    assert " Total params: 80,266 (313.54 KB)" in out  # the Bidirectional stack
    assert tuple(scope["gru_model"](x_train[:2, 0, :5].astype("int32")).shape) == (2, 10)
    # the stateful LSTM keeps its states across calls, reset_states zeroes them, and
    # they seed a new LSTM as its initial state
    stateful = scope["lstm_layer"]
    assert all(np.any(v.numpy()) for v in stateful.states)
    new = scope["new_lstm_layer"]
    start = [s.numpy() for s in scope["existing_state"]]
    np.testing.assert_allclose(scope["new_output"].numpy(),
                               new(scope["paragraph3"], initial_state=start).numpy(),
                               rtol=1e-5, atol=1e-6)
    stateful.reset_states()
    assert not any(np.any(v.numpy()) for v in stateful.states)
    # RNN(LSTMCell) and LSTM compute the same thing, and the CPU copy predicts as the model
    x = scope["x_test"][:8]
    rebuilt = scope["build_model"](allow_cudnn_kernel=False)
    rebuilt.set_weights(scope["model"].get_weights())
    np.testing.assert_allclose(rebuilt.predict(x, verbose=0),
                               scope["model"].predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scope["cpu_model"].predict(x, verbose=0),
                               scope["model"].predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    assert "Predicted result is: [" in out and out.count("val_accuracy") == 2


# keras.io/guides/transfer_learning, but what needs downloads: the cats-vs-dogs dataset
# (tfds.load) is given as `train_ds`, `validation_ds`, `test_ds` of 40x40 random images
# whose label is whether the left half is brighter, resized to 32x32 (not 150x150); the
# ImageNet-pretrained Xception is a small Conv2D + BatchNormalization base (with moving
# statistics of its own), so the frozen base still holds BatchNormalization layers. Its
# matplotlib cells are left out; epochs 20 -> 2 and 10 -> 1.
TRANSFER = '''
import numpy as np
import tapeflow as tf
import tapeflow.keras as keras
layer = keras.layers.Dense(3)
layer.build((None, 4))  # Create the weights

print("weights:", len(layer.weights))
print("trainable_weights:", len(layer.trainable_weights))
print("non_trainable_weights:", len(layer.non_trainable_weights))
layer = keras.layers.BatchNormalization()
layer.build((None, 4))  # Create the weights

print("weights:", len(layer.weights))
print("trainable_weights:", len(layer.trainable_weights))
print("non_trainable_weights:", len(layer.non_trainable_weights))
layer = keras.layers.Dense(3)
layer.build((None, 4))  # Create the weights
layer.trainable = False  # Freeze the layer

print("weights:", len(layer.weights))
print("trainable_weights:", len(layer.trainable_weights))
print("non_trainable_weights:", len(layer.non_trainable_weights))
# Make a model with 2 layers
layer1 = keras.layers.Dense(3, activation="relu")
layer2 = keras.layers.Dense(3, activation="sigmoid")
model = keras.Sequential([keras.Input(shape=(3,)), layer1, layer2])

# Freeze the first layer
layer1.trainable = False

# Keep a copy of the weights of layer1 for later reference
initial_layer1_weights_values = layer1.get_weights()

# Train the model
model.compile(optimizer="adam", loss="mse")
model.fit(np.random.random((2, 3)), np.random.random((2, 3)))

# Check that the weights of layer1 have not changed during training
final_layer1_weights_values = layer1.get_weights()
np.testing.assert_allclose(
    initial_layer1_weights_values[0], final_layer1_weights_values[0]
)
np.testing.assert_allclose(
    initial_layer1_weights_values[1], final_layer1_weights_values[1]
)
inner_model = keras.Sequential(
    [
        keras.Input(shape=(3,)),
        keras.layers.Dense(3, activation="relu"),
        keras.layers.Dense(3, activation="relu"),
    ]
)

model = keras.Sequential(
    [
        keras.Input(shape=(3,)),
        inner_model,
        keras.layers.Dense(3, activation="sigmoid"),
    ]
)

model.trainable = False  # Freeze the outer model

assert inner_model.trainable == False  # All layers in `model` are now frozen
assert inner_model.layers[0].trainable == False  # `trainable` is propagated recursively
print("Number of training samples: %d" % tf.data.experimental.cardinality(train_ds))
print(
    "Number of validation samples: %d" % tf.data.experimental.cardinality(validation_ds)
)
print("Number of test samples: %d" % tf.data.experimental.cardinality(test_ds))
size = (32, 32)  # the guide: (150, 150)

train_ds = train_ds.map(lambda x, y: (tf.image.resize(x, size), y))
validation_ds = validation_ds.map(lambda x, y: (tf.image.resize(x, size), y))
test_ds = test_ds.map(lambda x, y: (tf.image.resize(x, size), y))
batch_size = 32

train_ds = train_ds.cache().batch(batch_size).prefetch(buffer_size=10)
validation_ds = validation_ds.cache().batch(batch_size).prefetch(buffer_size=10)
test_ds = test_ds.cache().batch(batch_size).prefetch(buffer_size=10)
from tapeflow import keras
from tapeflow.keras import layers

data_augmentation = keras.Sequential(
    [
        layers.RandomFlip("horizontal"),
        layers.RandomRotation(0.1),
    ]
)
base_model = pretrained_base  # the guide: keras.applications.Xception(weights="imagenet",
# input_shape=(150, 150, 3), include_top=False)

# Freeze the base_model
base_model.trainable = False

# Create new model on top
inputs = keras.Input(shape=(32, 32, 3))  # the guide: (150, 150, 3)
x = data_augmentation(inputs)  # Apply random data augmentation

# Pre-trained Xception weights requires that input be scaled
# from (0, 255) to a range of (-1., +1.), the rescaling layer
# outputs: `(inputs * scale) + offset`
scale_layer = keras.layers.Rescaling(scale=1 / 127.5, offset=-1)
x = scale_layer(x)

# The base model contains batchnorm layers. We want to keep them in inference mode
# when we unfreeze the base model for fine-tuning, so we make sure that the
# base_model is running in inference mode here.
x = base_model(x, training=False)
x = keras.layers.GlobalAveragePooling2D()(x)
x = keras.layers.Dropout(0.2)(x)  # Regularize with dropout
outputs = keras.layers.Dense(1)(x)
model = keras.Model(inputs, outputs)

model.summary()
model.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)

epochs = 2  # the guide: 20
top_history = model.fit(train_ds, epochs=epochs, validation_data=validation_ds)
frozen_base_weights = [w.copy() for w in base_model.get_weights()]
# Unfreeze the base_model. Note that it keeps running in inference mode
# since we passed `training=False` when calling it. This means that
# the batchnorm layers will not update their batch statistics.
# This prevents the batchnorm layers from undoing all the training
# we've done so far.
base_model.trainable = True
model.summary()

model.compile(
    optimizer=keras.optimizers.Adam(1e-5),  # Low learning rate
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)

epochs = 1  # the guide: 10
model.fit(train_ds, epochs=epochs, validation_data=validation_ds)
'''


def _pretrained_base():
    """The stand-in for ImageNet's Xception: Conv2D, BatchNormalization (moving statistics
    set away from their initial 0 and 1, as a trained network's are), ReLU."""
    base = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(8, 3),
                             keras.layers.BatchNormalization(), keras.layers.ReLU()],
                            name="base")
    bn = base.layers[1]
    bn.moving_mean.assign(np.linspace(-0.5, 0.5, 8).astype(np.float32))
    bn.moving_variance.assign(np.linspace(0.5, 2.0, 8).astype(np.float32))
    return base


def _halves_dataset(n: int, seed: int):
    """(image, label) pairs: 40x40 uint8 images; the label is 1 when the left half is the
    brighter one."""
    import tapeflow as tf
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 128, (n, 40, 40, 3)).astype(np.uint8)
    labels = rng.randint(0, 2, n)
    images[labels == 1, :, :20] += 100
    images[labels == 0, :, 20:] += 100
    return tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int64)))


def test_transfer_learning_guide(capsys, tmp_path):
    keras.backend.clear_session()
    base = _pretrained_base()
    initial = [w.copy() for w in base.get_weights()]
    scope = _run(TRANSFER, tmp_path / "transfer.py",
                 pretrained_base=base,
                 train_ds=_halves_dataset(64, 14), validation_ds=_halves_dataset(32, 15),
                 test_ds=_halves_dataset(32, 16))
    out = capsys.readouterr().out
    # Dense: 2 trainable; BatchNormalization: 2 trainable + 2 moving statistics; frozen
    # Dense: 2 non-trainable
    assert "weights: 2\ntrainable_weights: 2\nnon_trainable_weights: 0\n" in out
    assert "weights: 4\ntrainable_weights: 2\nnon_trainable_weights: 2\n" in out
    assert "weights: 2\ntrainable_weights: 0\nnon_trainable_weights: 2\n" in out
    assert "Number of training samples: 64\nNumber of validation samples: 32\n" in out
    assert "Number of test samples: 32\n" in out
    # frozen base: 8*27+8 conv + 4*8 BN = 256 parameters, none trainable; the top: 9
    first, second = out.split('Model: "functional"')[1:3]
    assert " Trainable params: 9 (36.00 B)" in first
    assert " Non-trainable params: 256 (1.00 KB)" in first
    assert " Trainable params: 249 (996.00 B)" in second  # unfrozen: all but BN's stats
    assert " Non-trainable params: 16 (64.00 B)" in second
    # training the top left the frozen base as it was, BN statistics included
    assert len(initial) == len(scope["frozen_base_weights"]) == 6
    for before, after in zip(initial, scope["frozen_base_weights"]):
        np.testing.assert_array_equal(before, after)
    bn = base.layers[1]
    # fine-tuning changed the base's trainable weights, but BN ran in inference mode
    # (training=False in the graph): its moving statistics never moved
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.linspace(-0.5, 0.5, 8)
                                  .astype(np.float32))
    np.testing.assert_array_equal(bn.moving_variance.numpy(), np.linspace(0.5, 2.0, 8)
                                  .astype(np.float32))
    kernel_before = scope["frozen_base_weights"][0]
    assert np.abs(base.layers[0].kernel.numpy() - kernel_before).max() > 0
    history = scope["top_history"].history
    assert sorted(history) == ["binary_accuracy", "loss", "val_binary_accuracy", "val_loss"]


def test_frozen_batch_normalization_runs_in_inference_mode():
    """The transfer-learning guide's rule for a BatchNormalization layer itself: frozen
    (trainable=False), it normalizes with its moving statistics even when training, and
    leaves them as they are."""
    keras.backend.clear_session()
    bn = keras.layers.BatchNormalization()
    x = np.random.RandomState(0).rand(4, 3).astype(np.float32) * 5
    bn.build(x.shape)
    bn.moving_mean.assign([1.0, 2.0, 3.0])
    bn.moving_variance.assign([4.0, 1.0, 0.25])
    bn.trainable = False
    y = bn(x, training=True).numpy()
    np.testing.assert_allclose(y, (x - [1.0, 2.0, 3.0]) / np.sqrt(np.add([4.0, 1.0, 0.25],
                                                                        1e-3)), rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), [1.0, 2.0, 3.0])
    bn.trainable = True  # unfrozen, training: the batch's statistics, and an update
    y = bn(x, training=True).numpy()
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.99 * np.array([1.0, 2.0, 3.0])
                               + 0.01 * x.mean(0), rtol=1e-6)


def test_batch_normalization_in_a_frozen_model_runs_in_inference_mode():
    keras.backend.clear_session()
    base = keras.Sequential([keras.Input((3,)), keras.layers.BatchNormalization()])
    base.trainable = False
    x = np.random.RandomState(0).rand(4, 3).astype(np.float32) * 5
    np.testing.assert_allclose(base(x, training=True).numpy(),
                               base(x, training=False).numpy(), rtol=1e-6)
