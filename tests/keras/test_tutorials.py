"""TensorFlow's Keras tutorials run unchanged with `import tapeflow as tf`: each program
below is the tutorial's code with `tensorflow` spelled `tapeflow`, and its dataset download
(MNIST, CIFAR-10) replaced by random images of the same shape (fewer of them, to stay
fast) whose labels follow a rule a model can learn. The CNN tutorial's import of
`keras.datasets` is left out (it only serves the download)."""
from __future__ import annotations

import runpy

import numpy as np

from tapeflow import keras


def _run(program: str, path, data, names=("x_train", "y_train", "x_test", "y_test")) -> dict:
    """Run `program` as a user's script file (so autograph can read its source), with the
    dataset already loaded into its globals under the tutorial's `names`."""
    (train_x, train_y), (test_x, test_y) = data
    keras.utils.set_random_seed(0)  # from outside the program: it is run unchanged
    path.write_text(program)
    return runpy.run_path(str(path), init_globals=dict(zip(
        names, (train_x, train_y, test_x, test_y))))


def _digits_like(n_train: int, n_test: int, seed: int = 0):
    """uint8 images of MNIST's shape; the label is the brightest of ten row bands."""
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, (n_train + n_test, 28, 28)).astype(np.uint8)
    bands = np.arange(10) * 2 + 4
    boost = rng.randint(0, 10, n_train + n_test)
    images[np.arange(len(images)), bands[boost]] = 255  # one bright row per image
    labels = boost.astype(np.uint8)
    return (images[:n_train], labels[:n_train]), (images[n_train:], labels[n_train:])


QUICKSTART_BEGINNER = '''
import tapeflow as tf
print("TensorFlow version:", tf.__version__)
x_train, x_test = x_train / 255.0, x_test / 255.0
model = tf.keras.models.Sequential([
  tf.keras.layers.Flatten(input_shape=(28, 28)),
  tf.keras.layers.Dense(128, activation='relu'),
  tf.keras.layers.Dropout(0.2),
  tf.keras.layers.Dense(10)
])
predictions = model(x_train[:1]).numpy()
predictions
tf.nn.softmax(predictions).numpy()
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
loss_fn(y_train[:1], predictions).numpy()
model.compile(optimizer='adam',
              loss=loss_fn,
              metrics=['accuracy'])
model.fit(x_train, y_train, epochs=5)
model.evaluate(x_test,  y_test, verbose=2)
probability_model = tf.keras.Sequential([
  model,
  tf.keras.layers.Softmax()
])
probability_model(x_test[:5])
'''


def test_quickstart_for_beginners(capsys, tmp_path):
    keras.backend.clear_session()
    (x_train, y_train), (x_test, y_test) = data = _digits_like(1000, 200)
    scope = _run(QUICKSTART_BEGINNER, tmp_path / "quickstart_beginner.py", data)
    out = capsys.readouterr().out
    assert out.startswith("TensorFlow version: ") and out.count("Epoch ") == 5
    assert "32/32 ━━━━━━━━━━━━━━━━━━━━" in out  # 1000 samples in batches of 32
    loss, accuracy = scope["model"].evaluate(scope["x_test"], y_test, verbose=0)
    assert accuracy > 0.9 and loss < 0.5  # it learned the rule, on unseen images
    probs = scope["probability_model"](scope["x_test"][:5]).numpy()
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    assert scope["model"].count_params() == 101_770


QUICKSTART_EXPERTS = '''
import tapeflow as tf
from tapeflow.keras.layers import Dense, Flatten, Conv2D
from tapeflow.keras import Model
x_train, x_test = x_train / 255.0, x_test / 255.0
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices(
    (x_train, y_train)).shuffle(10000).batch(32)
test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)

class MyModel(Model):
  def __init__(self):
    super().__init__()
    self.conv1 = Conv2D(32, 3, activation='relu')
    self.flatten = Flatten()
    self.d1 = Dense(128, activation='relu')
    self.d2 = Dense(10)

  def call(self, x):
    x = self.conv1(x)
    x = self.flatten(x)
    x = self.d1(x)
    return self.d2(x)

model = MyModel()
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam()
train_loss = tf.keras.metrics.Mean(name='train_loss')
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='train_accuracy')
test_loss = tf.keras.metrics.Mean(name='test_loss')
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='test_accuracy')

@tf.function
def train_step(images, labels):
  with tf.GradientTape() as tape:
    predictions = model(images, training=True)
    loss = loss_object(labels, predictions)
  gradients = tape.gradient(loss, model.trainable_variables)
  optimizer.apply_gradients(zip(gradients, model.trainable_variables))
  train_loss(loss)
  train_accuracy(labels, predictions)

@tf.function
def test_step(images, labels):
  predictions = model(images, training=False)
  t_loss = loss_object(labels, predictions)
  test_loss(t_loss)
  test_accuracy(labels, predictions)

EPOCHS = 5
for epoch in range(EPOCHS):
  train_loss.reset_state()
  train_accuracy.reset_state()
  test_loss.reset_state()
  test_accuracy.reset_state()
  for images, labels in train_ds:
    train_step(images, labels)
  for test_images, test_labels in test_ds:
    test_step(test_images, test_labels)
  print(
    f'Epoch {epoch + 1}, '
    f'Loss: {train_loss.result():0.2f}, '
    f'Accuracy: {train_accuracy.result() * 100:0.2f}, '
    f'Test Loss: {test_loss.result():0.2f}, '
    f'Test Accuracy: {test_accuracy.result() * 100:0.2f}'
  )
'''


def test_quickstart_for_experts(capsys, tmp_path):
    keras.backend.clear_session()
    scope = _run(QUICKSTART_EXPERTS, tmp_path / "quickstart_experts.py",
                 _digits_like(256, 64, seed=1))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and lines[0].startswith("Epoch 1, Loss: ")
    last = dict(part.split(": ") for part in lines[-1].split(", ")[1:])
    assert float(last["Test Accuracy"]) > 80.0
    first_loss = float(lines[0].split("Loss: ")[1].split(",")[0])
    assert float(last["Loss"]) < first_loss
    assert len(scope["model"].trainable_variables) == 6


CNN_TUTORIAL = '''
import tapeflow as tf

from tapeflow.keras import layers, models
import matplotlib.pyplot as plt

# Normalize pixel values to be between 0 and 1
train_images, test_images = train_images / 255.0, test_images / 255.0

model = models.Sequential()
model.add(layers.Conv2D(32, (3, 3), activation='relu', input_shape=(32, 32, 3)))
model.add(layers.MaxPooling2D((2, 2)))
model.add(layers.Conv2D(64, (3, 3), activation='relu'))
model.add(layers.MaxPooling2D((2, 2)))
model.add(layers.Conv2D(64, (3, 3), activation='relu'))
model.summary()
model.add(layers.Flatten())
model.add(layers.Dense(64, activation='relu'))
model.add(layers.Dense(10))
model.summary()

model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])

history = model.fit(train_images, train_labels, epochs=10,
                    validation_data=(test_images, test_labels))

plt.plot(history.history['accuracy'], label='accuracy')
plt.plot(history.history['val_accuracy'], label = 'val_accuracy')
plt.xlabel('Epoch')
plt.ylabel('Accuracy')
plt.ylim([0.5, 1])
plt.legend(loc='lower right')

test_loss, test_acc = model.evaluate(test_images,  test_labels, verbose=2)
print(test_acc)
'''


def test_cnn_tutorial(capsys, tmp_path):
    import matplotlib
    matplotlib.use("Agg")  # no display in tests
    keras.backend.clear_session()
    rng = np.random.RandomState(2)
    images = rng.randint(0, 256, (96, 32, 32, 3)).astype(np.uint8)
    labels = rng.randint(0, 10, (96, 1)).astype(np.uint8)  # CIFAR-10's [N, 1] labels
    images[np.arange(96), labels[:, 0] * 3, :, :] = 255  # a bright row names the class
    scope = _run(CNN_TUTORIAL, tmp_path / "cnn.py",
                 ((images[:64], labels[:64]), (images[64:], labels[64:])),
                 names=("train_images", "train_labels", "test_images", "test_labels"))
    out = capsys.readouterr().out
    assert out.count("Epoch ") == 10 and out.count('Model: "sequential"') == 2
    assert "│ conv2d_2 (Conv2D)" in out and "(None, 4, 4, 64)" in out
    assert " Total params: 122,570 (478.79 KB)" in out  # the tutorial's count
    history = scope["history"].history
    assert sorted(history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert history["loss"][-1] < history["loss"][0]
    assert float(out.strip().splitlines()[-1]) == scope["test_acc"]
