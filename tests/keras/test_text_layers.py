"""StringLookup, Hashing of strings and TextVectorization against Keras 3 (TF 2.21):
vocabularies after adapt (tie order included), every output mode, hashes; a text
classifier trained with fit from a dataset of strings, saved and reloaded.

The expected values come from fixtures/keras_text.json, written by
fixtures/make_keras_text.py with real Keras.
"""
import json
import os

import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers
with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_text.json"),
          encoding="utf-8") as _f:
    FIX = json.load(_f)
CORPUS, QUERIES = FIX["corpus"], FIX["queries"]


def _kwargs(case):
    kw = dict(case["kwargs"])
    if isinstance(kw.get("ngrams"), list):
        kw["ngrams"] = tuple(kw["ngrams"])
    return kw


def _text(x):
    return [[v.decode() for v in row] for row in x.tolist()]


# --------------------------------------------------------------------------- StringLookup

@pytest.mark.parametrize("name", sorted(FIX["lookup"]))
def test_string_lookup_matches_keras(name):
    case = FIX["lookup"][name]
    layer = L.StringLookup(**case["kwargs"])
    layer.adapt(np.array([["a", "c", "d"], ["d", "z", "b"], ["b", "b", "a"],
                          ["e", "é", "a"]]))
    assert layer.get_vocabulary() == case["vocabulary"]
    out = layer(np.array(case["probe"]))
    np.testing.assert_allclose(out.numpy(), np.array(case["output"]), rtol=1e-6)
    mode = case["kwargs"].get("output_mode", "int")
    assert out.dtype == (tf.float32 if mode == "tf_idf" else tf.int64)


def test_string_lookup_invert_matches_keras():
    layer = L.StringLookup(vocabulary=["x", "y", "z"], invert=True)
    assert _text(layer(np.array([[0, 1, 2], [3, 4, -1]])).numpy()) == FIX["lookup_invert"]
    layer = L.StringLookup(vocabulary=["x", "y"], mask_token="", invert=True)
    got = [v.decode() for v in layer(np.array([0, 1, 2, 3, 9])).numpy().tolist()]
    assert got == FIX["lookup_invert_mask"]


def test_string_lookup_vocabulary_sources(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("ant\nbee\ncat\n", encoding="utf-8")
    from_file = L.StringLookup(vocabulary=str(path))
    assert from_file.get_vocabulary() == ["[UNK]", "ant", "bee", "cat"]
    assert from_file.vocabulary_size() == 4
    np.testing.assert_array_equal(from_file(tf.constant(["cat", "dog", "ant"])).numpy(),
                                  [3, 0, 1])
    assert from_file(tf.constant("bee")).numpy() == 2  # 0-d in, 0-d out (as Keras)
    # a dataset of string batches
    adapted = L.StringLookup(max_tokens=3)
    adapted.adapt(tf.data.Dataset.from_tensor_slices(["q", "r", "r", "s", "s", "s"]).batch(4))
    assert adapted.get_vocabulary() == ["[UNK]", "s", "r"]
    # set_vocabulary takes get_vocabulary's output back
    adapted.set_vocabulary(from_file.get_vocabulary()[1:3])
    assert adapted.get_vocabulary() == ["[UNK]", "ant", "bee"]
    adapted.set_vocabulary(["[UNK]", "x"])
    assert adapted.get_vocabulary() == ["[UNK]", "x"]
    with pytest.raises(ValueError, match="repeated term"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="maximum vocab size"):
        L.StringLookup(vocabulary=["a", "b", "c"], max_tokens=3)


def test_string_lookup_traced_and_saved(tmp_path):
    layer = L.StringLookup(vocabulary=["a", "b", "c"], output_mode="multi_hot")
    fn = tf.function(layer, input_signature=[tf.TensorSpec([None, None], tf.string)])
    np.testing.assert_array_equal(fn(tf.constant([["a", "a"], ["c", "q"]])).numpy(),
                                  [[0, 1, 0, 0], [1, 0, 0, 1]])
    inp = tf.keras.Input(shape=(2,), dtype="string")
    model = tf.keras.Model(inp, layer(inp))
    model.save(tmp_path / "m.keras")
    back = tf.keras.models.load_model(tmp_path / "m.keras")
    x = np.array([["b", "zz"], ["a", "c"]])
    np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())
    config = layer.get_config()
    assert config["vocabulary"] == ["a", "b", "c"] and config["encoding"] == "utf-8"
    assert config["vocabulary_size"] == 4


def test_string_lookup_hash_collision_fallback():
    # a vocabulary whose search keys collide falls back to comparing every string
    layer = L.StringLookup(vocabulary=["a", "b"])
    layer._tables = (None, np.asarray([b"a", b"b"], dtype=object))
    np.testing.assert_array_equal(layer(tf.constant(["b", "x", "a"])).numpy(), [2, 0, 1])


# --------------------------------------------------------------------------- Hashing

def test_hashing_strings_matches_keras():
    h = FIX["hashing"]
    words = np.array(h["words"])
    np.testing.assert_array_equal(L.Hashing(7)(words).numpy(), h["plain"])
    np.testing.assert_array_equal(L.Hashing(7, salt=[133, 137])(words).numpy(), h["salted"])
    np.testing.assert_array_equal(L.Hashing(7, salt=42)(words).numpy(), h["salt_int"])
    np.testing.assert_array_equal(L.Hashing(7, mask_value="")(words).numpy(), h["masked"])
    rows = np.array([h["words"][:3], h["words"][3:]])
    np.testing.assert_array_equal(L.Hashing(5, output_mode="multi_hot")(rows).numpy(),
                                  h["multi_hot"])
    # integers hash as their decimal strings, the same buckets
    np.testing.assert_array_equal(L.Hashing(11)(tf.constant([0, 17, -3])).numpy(),
                                  L.Hashing(11)(tf.constant(["0", "17", "-3"])).numpy())


# --------------------------------------------------------------------------- TextVectorization

@pytest.mark.parametrize("name", sorted(FIX["tv"]))
def test_text_vectorization_matches_keras(name):
    case = FIX["tv"][name]
    layer = L.TextVectorization(**_kwargs(case))
    layer.adapt(CORPUS)
    assert layer.get_vocabulary() == case["vocabulary"]
    out = layer(QUERIES)
    np.testing.assert_allclose(out.numpy(), np.array(case["output"]), rtol=1e-6)
    mode = case["kwargs"].get("output_mode", "int")
    assert out.dtype == (tf.float32 if mode == "tf_idf" else tf.int64)


def test_text_vectorization_dataset_column_scalar_ragged():
    layer = L.TextVectorization(max_tokens=8)
    layer.adapt(tf.data.Dataset.from_tensor_slices(CORPUS).batch(4))
    want = FIX["tv_dataset"]
    assert layer.get_vocabulary() == want["vocabulary"]
    np.testing.assert_array_equal(layer(np.array(QUERIES)[:, None]).numpy(), want["column"])
    np.testing.assert_array_equal(layer(tf.constant("the cat the")).numpy(), want["scalar"])
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        layer(np.array([["a", "b"]]))
    ragged = L.TextVectorization(ragged=True)
    ragged.adapt(CORPUS)
    out = ragged(QUERIES)
    assert isinstance(out, tf.RaggedTensor)
    assert out.to_list() == FIX["tv_ragged"]["ragged"]


def test_text_vectorization_given_vocabulary_and_idf():
    layer = L.TextVectorization(vocabulary=["b", "a"], output_mode="tf_idf",
                                idf_weights=[0.5, 0.25])
    assert layer.get_vocabulary() == FIX["tv_given"]["vocabulary"]
    np.testing.assert_allclose(layer(["a b b c", "a"]).numpy(), FIX["tv_given"]["output"])
    layer = L.TextVectorization()
    layer.set_vocabulary(["", "[UNK]", "x", "y"])
    assert layer.get_vocabulary() == ["", "[UNK]", "x", "y"] and layer.vocabulary_size() == 4
    np.testing.assert_array_equal(layer(["y x q"]).numpy(), [[3, 2, 1]])


def test_text_vectorization_callables_and_errors():
    layer = L.TextVectorization(standardize=lambda s: tf.strings.regex_replace(s, "-", " "),
                                split=lambda s: tf.strings.split(s, sep=" "),
                                vocabulary=["x", "Y"])
    np.testing.assert_array_equal(layer(["x-Y-z"]).numpy(), [[2, 3, 1]])
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match="ragged"):
        L.TextVectorization(output_mode="count", ragged=True)
    with pytest.raises(ValueError, match="standardize"):
        L.TextVectorization(standardize="upper")
    with pytest.raises(ValueError, match="output_mode"):
        L.TextVectorization(output_mode="one_hot")
    with pytest.raises(ValueError, match="string inputs"):
        L.TextVectorization(vocabulary=["a"])(tf.constant([1, 2]))


def test_text_vectorization_traced_and_in_dataset_map():
    layer = L.TextVectorization(output_sequence_length=3, ngrams=2)
    layer.adapt(CORPUS)
    eager = layer(QUERIES).numpy()
    fn = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
    np.testing.assert_array_equal(fn(tf.constant(QUERIES)).numpy(), eager)
    mapped = tf.data.Dataset.from_tensor_slices(QUERIES).batch(2).map(layer)
    np.testing.assert_array_equal(np.concatenate([b.numpy() for b in mapped]), eager)


def test_text_classifier_fit_save_load(tmp_path):
    """The issue's pipeline in miniature: strings -> TextVectorization -> Embedding ->
    GlobalAveragePooling1D -> Dense, fit from a dataset of (text, label) batches."""
    rng = np.random.default_rng(0)
    good, bad = ["good", "great", "fine", "nice", "happy"], ["bad", "awful", "sad", "poor"]
    neutral = ["the", "movie", "was", "a", "plot"]
    texts, labels = [], []
    for i in range(96):
        words = list(rng.choice(good if i % 2 else bad, 2)) + list(rng.choice(neutral, 3))
        rng.shuffle(words)
        texts.append(" ".join(words).capitalize() + "!")
        labels.append(float(i % 2))
    vectorize = L.TextVectorization(max_tokens=30, output_sequence_length=6)
    vectorize.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(16))
    tf.keras.utils.set_random_seed(1)
    inp = tf.keras.Input(shape=(1,), dtype="string")
    x = L.Embedding(30, 8)(vectorize(inp))
    out = L.Dense(1, activation="sigmoid")(L.GlobalAveragePooling1D()(x))
    model = tf.keras.Model(inp, out)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    ds = tf.data.Dataset.from_tensor_slices((texts, np.array(labels, np.float32))).batch(16)
    history = model.fit(ds, epochs=8, verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert history["accuracy"][-1] > 0.9
    probe = np.array([["Good nice movie"], ["Awful plot, sad"]])
    before = model.predict(probe, verbose=0)
    assert before[0, 0] > 0.5 > before[1, 0]
    model.save(tmp_path / "clf.keras")
    back = tf.keras.models.load_model(tmp_path / "clf.keras")
    np.testing.assert_allclose(back.predict(probe, verbose=0), before, rtol=1e-6)
    assert back.layers[1].get_vocabulary() == vectorize.get_vocabulary()


def test_text_vectorization_scalar_input_model():
    layer = L.TextVectorization(vocabulary=["a", "b"], output_mode="count")
    inp = tf.keras.Input(shape=(), dtype="string")
    model = tf.keras.Model(inp, layer(inp))
    # count columns: [UNK], a, b
    np.testing.assert_array_equal(model(tf.constant(["a b a", "c"])).numpy(),
                                  [[0, 2, 1], [1, 0, 0]])


def test_one_text_is_padded_or_cut_to_the_sequence_length():
    # keras 3.15: TextVectorization(output_sequence_length=4) after adapt(["a b c",
    # "b c d e f"]) maps "a b c" to [7 3 2 0] and "a b c d e f g" to [7 3 2 6]
    vec = tf.keras.layers.TextVectorization(output_sequence_length=4)
    vec.adapt(["a b c", "b c d e f"])
    assert vec(tf.constant("a b c")).numpy().tolist() == [7, 3, 2, 0]
    assert vec(tf.constant("a b c d e f g")).numpy().tolist() == [7, 3, 2, 6]
    ds = tf.data.Dataset.from_tensor_slices(["a b", "c d e f g h"]).map(vec).batch(2)
    assert next(iter(ds)).numpy().tolist() == [[7, 3, 0, 0], [2, 6, 5, 4]]
