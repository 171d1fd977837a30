"""TensorFlow's "Basic text classification" tutorial (tutorials/keras/text_classification)
runs unchanged with `import tapeflow as tf`: its cells in order, with `tensorflow` spelled
`tapeflow`. The IMDB download (`tf.keras.utils.get_file` and untar) is replaced by an
`aclImdb/` folder of the same layout (train/pos, train/neg, train/unsup, test/pos,
test/neg) written here, with short reviews whose sentiment words decide the label; the
epochs are 10 as in the tutorial (the data is small). The plotting cells are left out."""
from __future__ import annotations

import os
import runpy

import numpy as np

from tapeflow import keras

TUTORIAL = '''
import os
import re
import shutil
import string
import tapeflow as tf

from tapeflow.keras import layers
from tapeflow.keras import losses

print(tf.__version__)
dataset_dir = os.path.join(os.path.dirname(dataset), 'aclImdb')
os.listdir(dataset_dir)
train_dir = os.path.join(dataset_dir, 'train')
os.listdir(train_dir)
sample_file = os.path.join(train_dir, 'pos/1181_9.txt')
with open(sample_file) as f:
  print(f.read())
remove_dir = os.path.join(train_dir, 'unsup')
shutil.rmtree(remove_dir)
batch_size = 32
seed = 42

raw_train_ds = tf.keras.utils.text_dataset_from_directory(
    'aclImdb/train',
    batch_size=batch_size,
    validation_split=0.2,
    subset='training',
    seed=seed)
for text_batch, label_batch in raw_train_ds.take(1):
  for i in range(3):
    print("Review", text_batch.numpy()[i])
    print("Label", label_batch.numpy()[i])
print("Label 0 corresponds to", raw_train_ds.class_names[0])
print("Label 1 corresponds to", raw_train_ds.class_names[1])
raw_val_ds = tf.keras.utils.text_dataset_from_directory(
    'aclImdb/train',
    batch_size=batch_size,
    validation_split=0.2,
    subset='validation',
    seed=seed)
raw_test_ds = tf.keras.utils.text_dataset_from_directory(
    'aclImdb/test',
    batch_size=batch_size)

def custom_standardization(input_data):
  lowercase = tf.strings.lower(input_data)
  stripped_html = tf.strings.regex_replace(lowercase, '<br />', ' ')
  return tf.strings.regex_replace(stripped_html,
                                  '[%s]' % re.escape(string.punctuation),
                                  '')

max_features = 10000
sequence_length = 250

vectorize_layer = layers.TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode='int',
    output_sequence_length=sequence_length)
train_text = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(train_text)

def vectorize_text(text, label):
  text = tf.expand_dims(text, -1)
  return vectorize_layer(text), label

text_batch, label_batch = next(iter(raw_train_ds))
first_review, first_label = text_batch[0], label_batch[0]
print("Review", first_review)
print("Label", raw_train_ds.class_names[first_label])
print("Vectorized review", vectorize_text(first_review, first_label))
print("1287 ---> ",vectorize_layer.get_vocabulary()[12])
print(" 313 ---> ",vectorize_layer.get_vocabulary()[13])
print('Vocabulary size: {}'.format(len(vectorize_layer.get_vocabulary())))
train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)
AUTOTUNE = tf.data.AUTOTUNE

train_ds = train_ds.cache().prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.cache().prefetch(buffer_size=AUTOTUNE)
test_ds = test_ds.cache().prefetch(buffer_size=AUTOTUNE)
embedding_dim = 16
model = tf.keras.Sequential([
  layers.Embedding(max_features, embedding_dim),
  layers.Dropout(0.2),
  layers.GlobalAveragePooling1D(),
  layers.Dropout(0.2),
  layers.Dense(1, activation='sigmoid')])

model.summary()
model.compile(loss=losses.BinaryCrossentropy(),
              optimizer='adam',
              metrics=[tf.metrics.BinaryAccuracy(threshold=0.5)])
epochs = 10
history = model.fit(
    train_ds,
    validation_data=val_ds,
    epochs=epochs)
loss, accuracy = model.evaluate(test_ds)

print("Loss: ", loss)
print("Accuracy: ", accuracy)
history_dict = history.history
history_dict.keys()
export_model = tf.keras.Sequential([
  vectorize_layer,
  model
])

export_model.compile(
    loss=losses.BinaryCrossentropy(from_logits=False), optimizer="adam", metrics=['accuracy']
)

metrics = export_model.evaluate(raw_test_ds, return_dict=True)
print(metrics)
examples = tf.constant([
  "The movie was great!",
  "The movie was okay.",
  "The movie was terrible..."
])

export_model.predict(examples)
'''

GOOD = ["great", "wonderful", "brilliant", "loved", "superb", "moving"]
BAD = ["terrible", "awful", "boring", "hated", "dull", "waste"]
FILLER = ["the", "movie", "film", "plot", "actors", "scene", "was", "and", "a", "story",
          "ending", "music", "director", "it", "this"]


def _write_imdb_like(root, rng) -> None:
    """aclImdb's layout; a review holds filler words and three words of its sentiment
    (with TF's "<br />" and punctuation, which the tutorial's standardization strips)."""
    for split, count in (("train", 1600), ("test", 200)):
        for label, words in (("pos", GOOD), ("neg", BAD)):
            folder = os.path.join(root, "aclImdb", split, label)
            os.makedirs(folder)
            for i in range(count // 2):
                text = list(rng.choice(FILLER, 12)) + list(rng.choice(words, 3))
                rng.shuffle(text)
                review = " ".join(text[:8]) + ".<br /><br />" + " ".join(text[8:]) + "!"
                with open(os.path.join(folder, f"{i}_{7 if label == 'pos' else 2}.txt"),
                          "w") as f:
                    f.write(review.capitalize())
    os.makedirs(os.path.join(root, "aclImdb", "train", "unsup"))
    with open(os.path.join(root, "aclImdb", "train", "pos", "1181_9.txt"), "w") as f:
        f.write("A wonderful film, a great story.<br /><br />Loved it!")


def test_basic_text_classification(tmp_path, monkeypatch, capsys):
    _write_imdb_like(str(tmp_path), np.random.RandomState(0))
    monkeypatch.chdir(tmp_path)  # the tutorial reads 'aclImdb/train' from its folder
    keras.utils.set_random_seed(0)
    program = tmp_path / "text_classification.py"
    program.write_text(TUTORIAL)
    scope = runpy.run_path(str(program), init_globals={
        "dataset": str(tmp_path / "aclImdb_v1.tar.gz")})
    out = capsys.readouterr().out
    assert "Found 1601 files belonging to 2 classes." in out  # 1600 + the sample file
    assert "Using 1281 files for training." in out and "Using 320 files for validation." in out
    assert "Label 0 corresponds to neg" in out and "Label 1 corresponds to pos" in out
    vocabulary = scope["vectorize_layer"].get_vocabulary()
    assert vocabulary[:2] == ["", "[UNK]"] and "br" not in vocabulary  # <br /> stripped
    assert set(GOOD + BAD) <= set(vocabulary)
    history = scope["history"].history
    assert sorted(history) == ["binary_accuracy", "loss", "val_binary_accuracy", "val_loss"]
    assert history["loss"][-1] < history["loss"][0]
    assert scope["accuracy"] > 0.9  # the sentiment words decide the label
    assert scope["metrics"]["accuracy"] == scope["accuracy"]  # same model, raw text in
    predictions = scope["export_model"].predict(scope["examples"])
    assert predictions.shape == (3, 1)
    assert predictions[0, 0] > 0.5 > predictions[2, 0]  # great vs terrible
