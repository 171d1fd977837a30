"""TensorFlow's Keras tutorials run unchanged with `import tapeflow as tf`: each program
below is the tutorial's code (its notebook cells in order) with `tensorflow` spelled
`tapeflow`, and its dataset download (MNIST, Fashion-MNIST, CIFAR-10, Auto MPG, HIGGS)
replaced by data of the same shape (fewer rows, to stay fast) whose labels follow a rule a
model can learn, given to the program as the variables the download made. The CNN
tutorial's import of `keras.datasets` is left out (it only serves the download); what else
a test changed (only numbers, or plumbing outside Keras) its docstring says."""
from __future__ import annotations

import runpy

import numpy as np
import pytest

import tapeflow as tf
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


CLASSIFICATION = '''
# TensorFlow and tf.keras
import tapeflow as tf

# Helper libraries
import numpy as np
import pytest
import matplotlib.pyplot as plt

print(tf.__version__)
class_names = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
               'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot']
train_images.shape
len(train_labels)
train_labels
test_images.shape
len(test_labels)
plt.figure()
plt.imshow(train_images[0])
plt.colorbar()
plt.grid(False)
plt.show()
train_images = train_images / 255.0

test_images = test_images / 255.0
plt.figure(figsize=(10,10))
for i in range(25):
    plt.subplot(5,5,i+1)
    plt.xticks([])
    plt.yticks([])
    plt.grid(False)
    plt.imshow(train_images[i], cmap=plt.cm.binary)
    plt.xlabel(class_names[train_labels[i]])
plt.show()
model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(28, 28)),
    tf.keras.layers.Dense(128, activation='relu'),
    tf.keras.layers.Dense(10)
])
model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])
model.fit(train_images, train_labels, epochs=10)
test_loss, test_acc = model.evaluate(test_images,  test_labels, verbose=2)

print('\\nTest accuracy:', test_acc)
probability_model = tf.keras.Sequential([model, 
                                         tf.keras.layers.Softmax()])
predictions = probability_model.predict(test_images)
predictions[0]
np.argmax(predictions[0])
test_labels[0]
def plot_image(i, predictions_array, true_label, img):
  true_label, img = true_label[i], img[i]
  plt.grid(False)
  plt.xticks([])
  plt.yticks([])

  plt.imshow(img, cmap=plt.cm.binary)

  predicted_label = np.argmax(predictions_array)
  if predicted_label == true_label:
    color = 'blue'
  else:
    color = 'red'

  plt.xlabel("{} {:2.0f}% ({})".format(class_names[predicted_label],
                                100*np.max(predictions_array),
                                class_names[true_label]),
                                color=color)

def plot_value_array(i, predictions_array, true_label):
  true_label = true_label[i]
  plt.grid(False)
  plt.xticks(range(10))
  plt.yticks([])
  thisplot = plt.bar(range(10), predictions_array, color="#777777")
  plt.ylim([0, 1])
  predicted_label = np.argmax(predictions_array)

  thisplot[predicted_label].set_color('red')
  thisplot[true_label].set_color('blue')
i = 0
plt.figure(figsize=(6,3))
plt.subplot(1,2,1)
plot_image(i, predictions[i], test_labels, test_images)
plt.subplot(1,2,2)
plot_value_array(i, predictions[i],  test_labels)
plt.show()
i = 12
plt.figure(figsize=(6,3))
plt.subplot(1,2,1)
plot_image(i, predictions[i], test_labels, test_images)
plt.subplot(1,2,2)
plot_value_array(i, predictions[i],  test_labels)
plt.show()
# Plot the first X test images, their predicted labels, and the true labels.
# Color correct predictions in blue and incorrect predictions in red.
num_rows = 5
num_cols = 3
num_images = num_rows*num_cols
plt.figure(figsize=(2*2*num_cols, 2*num_rows))
for i in range(num_images):
  plt.subplot(num_rows, 2*num_cols, 2*i+1)
  plot_image(i, predictions[i], test_labels, test_images)
  plt.subplot(num_rows, 2*num_cols, 2*i+2)
  plot_value_array(i, predictions[i], test_labels)
plt.tight_layout()
plt.show()
# Grab an image from the test dataset.
img = test_images[1]

print(img.shape)
# Add the image to a batch where it's the only member.
img = (np.expand_dims(img,0))

print(img.shape)
predictions_single = probability_model.predict(img)

print(predictions_single)
plot_value_array(1, predictions_single[0], test_labels)
_ = plt.xticks(range(10), class_names, rotation=45)
plt.show()
np.argmax(predictions_single[0])
'''


def test_basic_classification(capsys, tmp_path):
    """"Basic classification: Classify images of clothing", with Fashion-MNIST replaced by
    256 + 100 images of its shape (the `fashion_mnist.load_data()` lines left out)."""
    import matplotlib  # optional plotting library the tutorial draws with
    matplotlib.use("Agg")  # no display in tests
    keras.backend.clear_session()
    (x_train, y_train), (x_test, y_test) = data = _digits_like(256, 100, seed=3)
    scope = _run(CLASSIFICATION, tmp_path / "classification.py", data,
                 names=("train_images", "train_labels", "test_images", "test_labels"))
    out = capsys.readouterr().out
    assert out.count("Epoch ") == 10 and "8/8 ━━━━━━━━━━━━━━━━━━━━" in out
    assert scope["test_acc"] > 0.9  # it learned the rule, on unseen images
    assert f"\nTest accuracy: {scope['test_acc']}" in out
    predictions = scope["predictions"]
    assert predictions.shape == (100, 10)
    np.testing.assert_allclose(predictions.sum(1), 1.0, rtol=1e-5)
    assert (np.argmax(predictions, 1) == y_test).mean() == pytest.approx(scope["test_acc"])
    assert scope["img"].shape == (1, 28, 28) and "(1, 28, 28)" in out
    assert scope["predictions_single"].shape == (1, 10)
    np.testing.assert_allclose(scope["predictions_single"][0], predictions[1], rtol=1e-5,
                               atol=1e-7)


REGRESSION = '''
import matplotlib.pyplot as plt
import numpy as np

# Make NumPy printouts easier to read.
np.set_printoptions(precision=3, suppress=True)
import tapeflow as tf

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

print(tf.__version__)
normalizer = tf.keras.layers.Normalization(axis=-1)
normalizer.adapt(np.array(train_features))
print(normalizer.mean.numpy())
first = np.array(train_features[:1])

with np.printoptions(precision=2, suppress=True):
  print('First example:', first)
  print()
  print('Normalized:', normalizer(first).numpy())
horsepower = np.array(train_features[:, HORSEPOWER])

horsepower_normalizer = layers.Normalization(input_shape=[1,], axis=None)
horsepower_normalizer.adapt(horsepower)
horsepower_model = tf.keras.Sequential([
    horsepower_normalizer,
    layers.Dense(units=1)
])

horsepower_model.summary()
horsepower_model.predict(horsepower[:10])
horsepower_model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
    loss='mean_absolute_error')
history = horsepower_model.fit(
    train_features[:, HORSEPOWER],
    train_labels,
    epochs=60,
    # Suppress logging.
    verbose=0,
    # Calculate validation results on 20% of the training data.
    validation_split = 0.2)
def plot_loss(history):
  plt.plot(history.history['loss'], label='loss')
  plt.plot(history.history['val_loss'], label='val_loss')
  plt.ylim([0, 10])
  plt.xlabel('Epoch')
  plt.ylabel('Error [MPG]')
  plt.legend()
  plt.grid(True)
plot_loss(history)
test_results = {}

test_results['horsepower_model'] = horsepower_model.evaluate(
    test_features[:, HORSEPOWER],
    test_labels, verbose=0)
x = tf.linspace(0.0, 250, 251)
y = horsepower_model.predict(x)
def plot_horsepower(x, y):
  plt.scatter(train_features[:, HORSEPOWER], train_labels, label='Data')
  plt.plot(x, y, color='k', label='Predictions')
  plt.xlabel('Horsepower')
  plt.ylabel('MPG')
  plt.legend()
plot_horsepower(x, y)
linear_model = tf.keras.Sequential([
    normalizer,
    layers.Dense(units=1)
])
linear_model.predict(train_features[:10])
linear_model.layers[1].kernel
linear_model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
    loss='mean_absolute_error')
history = linear_model.fit(
    train_features,
    train_labels,
    epochs=60,
    # Suppress logging.
    verbose=0,
    # Calculate validation results on 20% of the training data.
    validation_split = 0.2)
plot_loss(history)
test_results['linear_model'] = linear_model.evaluate(
    test_features, test_labels, verbose=0)
def build_and_compile_model(norm):
  model = keras.Sequential([
      norm,
      layers.Dense(64, activation='relu'),
      layers.Dense(64, activation='relu'),
      layers.Dense(1)
  ])

  model.compile(loss='mean_absolute_error',
                optimizer=tf.keras.optimizers.Adam(0.001))
  return model
dnn_horsepower_model = build_and_compile_model(horsepower_normalizer)
dnn_horsepower_model.summary()
history = dnn_horsepower_model.fit(
    train_features[:, HORSEPOWER],
    train_labels,
    validation_split=0.2,
    verbose=0, epochs=60)
plot_loss(history)
x = tf.linspace(0.0, 250, 251)
y = dnn_horsepower_model.predict(x)
plot_horsepower(x, y)
test_results['dnn_horsepower_model'] = dnn_horsepower_model.evaluate(
    test_features[:, HORSEPOWER], test_labels,
    verbose=0)
dnn_model = build_and_compile_model(normalizer)
dnn_model.summary()
history = dnn_model.fit(
    train_features,
    train_labels,
    validation_split=0.2,
    verbose=0, epochs=60)
plot_loss(history)
test_results['dnn_model'] = dnn_model.evaluate(test_features, test_labels, verbose=0)
print(test_results)
test_predictions = dnn_model.predict(test_features).flatten()

a = plt.axes(aspect='equal')
plt.scatter(test_labels, test_predictions)
plt.xlabel('True Values [MPG]')
plt.ylabel('Predictions [MPG]')
lims = [0, 50]
plt.xlim(lims)
plt.ylim(lims)
_ = plt.plot(lims, lims)

error = test_predictions - test_labels
plt.hist(error, bins=25)
plt.xlabel('Prediction Error [MPG]')
_ = plt.ylabel('Count')
dnn_model.save('dnn_model.keras')
reloaded = tf.keras.models.load_model('dnn_model.keras')

test_results['reloaded'] = reloaded.evaluate(
    test_features, test_labels, verbose=0)
print(test_results)
'''


def _auto_mpg_like(seed: int = 0):
    """Auto MPG's shape after the tutorial's pandas steps: 314 + 78 cars, 9 float features
    (Cylinders, Displacement, Horsepower, Weight, Acceleration, Model Year, and Origin
    one-hot as Europe, Japan, USA) and MPG, which falls with weight and horsepower and
    rises with the model year, plus noise."""
    rng = np.random.RandomState(seed)
    n = 392
    cylinders = rng.choice([4.0, 6.0, 8.0], n)
    displacement = cylinders * 40 + rng.normal(0, 20, n)
    horsepower = displacement * 0.45 + rng.normal(0, 10, n) + 20
    weight = displacement * 8 + rng.normal(0, 200, n) + 900
    acceleration = 22 - horsepower / 20 + rng.normal(0, 1, n)
    year = rng.randint(70, 83, n).astype(float)
    origin = np.eye(3)[rng.randint(0, 3, n)]
    mpg = 60 - weight / 200 - horsepower / 20 + (year - 70) * 0.8 + rng.normal(0, 1.5, n)
    features = np.column_stack([cylinders, displacement, horsepower, weight, acceleration,
                                year, origin])
    return (features[:314], mpg[:314]), (features[314:], mpg[314:])


def test_basic_regression(capsys, tmp_path, monkeypatch):
    """"Basic regression: Predict fuel efficiency", Keras calls unchanged. Replaced, as
    pandas and seaborn are not test dependencies: the pandas plumbing (reading the UCI CSV,
    `dropna`, the one-hot Origin columns, the 80/20 `sample`, `pop('MPG')`) by NumPy arrays
    of the same shapes given to the program, a column `train_features['Horsepower']` by
    `train_features[:, HORSEPOWER]`, the two `pd.DataFrame` displays by printing
    `test_results`; left out: seaborn's pairplot, the `describe()` tables, `%%time`. Numbers
    changed: 60 epochs instead of 100, to stay fast."""
    import matplotlib  # optional plotting library the tutorial draws with
    matplotlib.use("Agg")  # no display in tests
    keras.backend.clear_session()
    monkeypatch.chdir(tmp_path)  # the tutorial saves dnn_model.keras in its folder
    data = _auto_mpg_like()
    (train_x, train_y), (test_x, test_y) = data
    keras.utils.set_random_seed(0)
    path = tmp_path / "regression.py"
    path.write_text(REGRESSION)
    scope = runpy.run_path(str(path), init_globals={
        "train_features": train_x, "train_labels": train_y, "test_features": test_x,
        "test_labels": test_y, "HORSEPOWER": 2})
    out = capsys.readouterr().out
    np.testing.assert_allclose(scope["normalizer"].mean.numpy()[0], train_x.mean(0),
                               rtol=1e-5)
    results = scope["test_results"]
    baseline = np.abs(test_y - train_y.mean()).mean()  # predicting the mean MPG
    assert baseline > 5
    assert results["horsepower_model"] < 0.75 * baseline
    assert results["dnn_horsepower_model"] < 0.75 * baseline
    assert results["linear_model"] < 2.0 and results["dnn_model"] < 2.5
    assert results["reloaded"] == pytest.approx(results["dnn_model"], rel=1e-6)
    assert scope["history"].epoch == list(range(60))  # the tutorial's hist['epoch']
    history = scope["history"].history
    assert sorted(history) == ["loss", "val_loss"] and len(history["loss"]) == 60
    assert history["loss"][-1] < history["loss"][0] / 3
    assert scope["y"].shape == (251, 1) and scope["test_predictions"].shape == (78,)
    assert out.count('Model: "sequential') == 3 and " Total params: 5 (" in out
    assert "0 (unbuilt)" in out  # dnn_model's summary before its first fit, as Keras's


OVERFIT_AND_UNDERFIT = '''
import tapeflow as tf

from tapeflow.keras import layers
from tapeflow.keras import regularizers

print(tf.__version__)
from matplotlib import pyplot as plt

import numpy as np

import pathlib
import shutil
import tempfile

logdir = pathlib.Path(tempfile.mkdtemp())/"tensorboard_logs"
shutil.rmtree(logdir, ignore_errors=True)
FEATURES = 28
def pack_row(*row):
  label = row[0]
  features = tf.stack(row[1:],1)
  return features, label
packed_ds = ds.batch(10000).map(pack_row).unbatch()
for features,label in packed_ds.batch(1000).take(1):
  print(features[0])
  plt.hist(features.numpy().flatten(), bins = 101)
N_VALIDATION = int(2e2)
N_TRAIN = int(6e2)
BUFFER_SIZE = int(1e3)
BATCH_SIZE = 100
STEPS_PER_EPOCH = N_TRAIN//BATCH_SIZE
validate_ds = packed_ds.take(N_VALIDATION).cache()
train_ds = packed_ds.skip(N_VALIDATION).take(N_TRAIN).cache()
train_ds
validate_ds = validate_ds.batch(BATCH_SIZE)
train_ds = train_ds.shuffle(BUFFER_SIZE).repeat().batch(BATCH_SIZE)
lr_schedule = tf.keras.optimizers.schedules.InverseTimeDecay(
  0.001,
  decay_steps=STEPS_PER_EPOCH*1000,
  decay_rate=1,
  staircase=False)

def get_optimizer():
  return tf.keras.optimizers.Adam(lr_schedule)
step = np.linspace(0,100000)
lr = lr_schedule(step)
plt.figure(figsize = (8,6))
plt.plot(step/STEPS_PER_EPOCH, lr)
plt.ylim([0,max(plt.ylim())])
plt.xlabel('Epoch')
_ = plt.ylabel('Learning Rate')

def get_callbacks(name):
  return [
    tf.keras.callbacks.EarlyStopping(monitor='val_binary_crossentropy', patience=200),
    tf.keras.callbacks.TensorBoard(logdir/name),
  ]
def compile_and_fit(model, name, optimizer=None, max_epochs=5):
  if optimizer is None:
    optimizer = get_optimizer()
  model.compile(optimizer=optimizer,
                loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
                metrics=[
                  tf.keras.metrics.BinaryCrossentropy(
                      from_logits=True, name='binary_crossentropy'),
                  'accuracy'])

  model.summary()

  history = model.fit(
    train_ds.map(lambda x, y: (x, tf.expand_dims(y, axis=-1))),
    steps_per_epoch = STEPS_PER_EPOCH,
    epochs=max_epochs,
    validation_data=validate_ds.map(lambda x, y: (x, tf.expand_dims(y, axis=-1))),
    callbacks=get_callbacks(name),
    verbose=0)
  return history
tiny_model = tf.keras.Sequential([
    layers.Dense(16, activation='elu', input_shape=(FEATURES,)),
    layers.Dense(1)
])
size_histories = {}
size_histories['Tiny'] = compile_and_fit(tiny_model, 'sizes/Tiny')
small_model = tf.keras.Sequential([
    # `input_shape` is only required here so that `.summary` works.
    layers.Dense(16, activation='elu', input_shape=(FEATURES,)),
    layers.Dense(16, activation='elu'),
    layers.Dense(1)
])
size_histories['Small'] = compile_and_fit(small_model, 'sizes/Small')
medium_model = tf.keras.Sequential([
    layers.Dense(64, activation='elu', input_shape=(FEATURES,)),
    layers.Dense(64, activation='elu'),
    layers.Dense(64, activation='elu'),
    layers.Dense(1)
])
size_histories['Medium']  = compile_and_fit(medium_model, "sizes/Medium")
large_model = tf.keras.Sequential([
    layers.Dense(128, activation='elu', input_shape=(FEATURES,)),
    layers.Dense(128, activation='elu'),
    layers.Dense(128, activation='elu'),
    layers.Dense(128, activation='elu'),
    layers.Dense(1)
])
size_histories['large'] = compile_and_fit(large_model, "sizes/large")
shutil.rmtree(logdir/'regularizers/Tiny', ignore_errors=True)
shutil.copytree(logdir/'sizes/Tiny', logdir/'regularizers/Tiny')
regularizer_histories = {}
regularizer_histories['Tiny'] = size_histories['Tiny']
l2_model = tf.keras.Sequential([
    layers.Dense(128, activation='elu',
                 kernel_regularizer=regularizers.l2(0.001),
                 input_shape=(FEATURES,)),
    layers.Dense(128, activation='elu',
                 kernel_regularizer=regularizers.l2(0.001)),
    layers.Dense(128, activation='elu',
                 kernel_regularizer=regularizers.l2(0.001)),
    layers.Dense(128, activation='elu',
                 kernel_regularizer=regularizers.l2(0.001)),
    layers.Dense(1)
])

regularizer_histories['l2'] = compile_and_fit(l2_model, "regularizers/l2")
result = l2_model(features)
regularization_loss=tf.add_n(l2_model.losses)
dropout_model = tf.keras.Sequential([
    layers.Dense(128, activation='elu', input_shape=(FEATURES,)),
    layers.Dropout(0.5),
    layers.Dense(128, activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(128, activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(128, activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(1)
])

regularizer_histories['dropout'] = compile_and_fit(dropout_model, "regularizers/dropout")
combined_model = tf.keras.Sequential([
    layers.Dense(128, kernel_regularizer=regularizers.l2(0.0001),
                 activation='elu', input_shape=(FEATURES,)),
    layers.Dropout(0.5),
    layers.Dense(128, kernel_regularizer=regularizers.l2(0.0001),
                 activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(128, kernel_regularizer=regularizers.l2(0.0001),
                 activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(128, kernel_regularizer=regularizers.l2(0.0001),
                 activation='elu'),
    layers.Dropout(0.5),
    layers.Dense(1)
])

regularizer_histories['combined'] = compile_and_fit(combined_model, "regularizers/combined")
'''


def _higgs_like(rows: int, seed: int = 0):
    """The HIGGS CSV's rows as `CsvDataset` gives them: 29 float32 scalars, the label
    (0 or 1) first, then 28 features; the label follows a noisy rule on the features."""
    rng = np.random.RandomState(seed)
    features = rng.normal(size=(rows, 28)).astype(np.float32)
    score = features[:, 0] + features[:, 1] - 0.5 * features[:, 2]
    labels = (score + rng.normal(scale=0.3, size=rows) > 0).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(
        (labels, *[features[:, i] for i in range(28)]))


def test_overfit_and_underfit(capsys, tmp_path, recwarn):
    """"Overfit and underfit" (its regularization part), Keras and tf.data calls unchanged.
    Replaced: the HIGGS download and its `tf.data.experimental.CsvDataset` by a Dataset of
    the same rows (29 float32 scalars) given as `ds`. Left out: `tensorflow_docs` (its
    EpochDots callback and HistoryPlotter plots), IPython's display and the `%tensorboard`
    magics. Numbers changed, to stay fast: N_VALIDATION 1e3 -> 2e2, N_TRAIN 1e4 -> 6e2,
    BUFFER_SIZE 1e4 -> 1e3, BATCH_SIZE 500 -> 100, `max_epochs` 10000 -> 5, and the
    large models' 512 units per layer -> 128."""
    import matplotlib  # optional plotting library the tutorial draws with
    matplotlib.use("Agg")  # no display in tests
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    path = tmp_path / "overfit_and_underfit.py"
    path.write_text(OVERFIT_AND_UNDERFIT)
    scope = runpy.run_path(str(path), init_globals={"ds": _higgs_like(1500)})
    out = capsys.readouterr().out
    assert not [w for w in recwarn if "val_binary_crossentropy" in str(w.message)]
    assert out.count('Model: "sequential') == 7
    assert scope["features"].shape == (1000, 28)
    histories = {**scope["size_histories"], **scope["regularizer_histories"]}
    assert sorted(histories) == ["Medium", "Small", "Tiny", "combined", "dropout", "l2",
                                 "large"]
    for name, history in histories.items():
        logs = history.history
        assert sorted(logs) == ["accuracy", "binary_crossentropy", "loss", "val_accuracy",
                                "val_binary_crossentropy", "val_loss"], name
        assert len(logs["loss"]) == 5 and logs["loss"][-1] < logs["loss"][0], name
    # the learnable rule is learned; the L2 model's loss holds its penalties
    assert histories["large"].history["val_accuracy"][-1] > 0.75
    l2 = histories["l2"].history
    assert all(a > b for a, b in zip(l2["loss"], l2["binary_crossentropy"]))
    penalty = sum(0.001 * float(np.sum(np.square(layer.kernel.numpy())))
                  for layer in scope["l2_model"].layers[:4])
    assert float(scope["regularization_loss"]) == pytest.approx(penalty, rel=1e-4)
    tiny = histories["Tiny"].history  # no penalty: the loss is the metric
    assert tiny["loss"][-1] == pytest.approx(tiny["binary_crossentropy"][-1], rel=1e-5)
    logdir = scope["logdir"]
    assert (logdir / "regularizers" / "Tiny" / "train").is_dir()
    assert (logdir / "sizes" / "large" / "validation").is_dir()
    lr = scope["lr"].numpy()
    decay_steps = scope["STEPS_PER_EPOCH"] * 1000
    np.testing.assert_allclose(lr, 0.001 / (1 + scope["step"] / decay_steps), rtol=1e-5)
