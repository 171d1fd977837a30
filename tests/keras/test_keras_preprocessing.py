"""`tf.keras.preprocessing` (sequence, image, datasets from directories and arrays).

Values come from real TensorFlow 2.21 / Keras 3: fixtures/make_keras_preprocessing_api.py
ran every call of fixtures/keras_preprocessing_api_cases.py over the same generated directory
tree into fixtures/keras_preprocessing_api.npz; here tapeflow runs the same calls.
"""
from __future__ import annotations

import json
import os
import random
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras

# the shared cases write and read images with Pillow (matplotlib, a test dependency,
# brings it); without it these tests are skipped
pytest.importorskip("PIL")

P = keras.preprocessing
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
sys.path.insert(0, HERE)
import keras_preprocessing_api_cases as cases  # noqa: E402

EXPECTED = dict(np.load(os.path.join(HERE, "keras_preprocessing_api.npz")))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("prep"))
    cases.build_tree(root)
    return root


@pytest.fixture(scope="module")
def ours(tree) -> dict:
    return cases.results(P, tf, tree)


def test_namespaces_list_tf_names():
    # dir(tf.keras.preprocessing) and its submodules in TF 2.21 (image lacks TF's
    # ImageDataGenerator and its iterators)
    assert dir(P) == ["image", "image_dataset_from_directory", "sequence", "text",
                      "text_dataset_from_directory", "timeseries_dataset_from_array"]
    assert dir(P.text) == ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence",
                           "tokenizer_from_json"]
    assert dir(P.sequence) == ["TimeseriesGenerator", "make_sampling_table", "pad_sequences",
                               "skipgrams"]
    assert dir(P.image) == ["apply_affine_transform", "apply_brightness_shift",
                            "apply_channel_shift", "array_to_img", "img_to_array", "load_img",
                            "random_brightness", "random_channel_shift", "random_rotation",
                            "random_shear", "random_shift", "random_zoom", "save_img",
                            "smart_resize"]
    assert P.sequence.pad_sequences is keras.utils.pad_sequences
    assert P.timeseries_dataset_from_array is keras.utils.timeseries_dataset_from_array
    assert "preprocessing" in dir(keras)


def test_same_keys_as_tensorflow(ours):
    assert sorted(ours) == sorted(EXPECTED)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_matches_tensorflow(ours, key):
    want, got = EXPECTED[key], ours[key]
    if want.dtype.kind in "US":
        assert got.tolist() == want.tolist(), key
        return
    assert got.shape == want.shape, (key, got.shape, want.shape)
    assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        # resizing in float32: a few ulps of pixel values
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3, err_msg=key)
    else:
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_skipgrams_closed_form_and_reseeding():
    pairs, labels = P.sequence.skipgrams([1, 0, 2], 3, window_size=2, negative_samples=0,
                                         shuffle=False)
    assert pairs == [[1, 2], [2, 1]] and labels == [1, 1]   # word 0 is skipped
    random.seed(5)
    a = P.sequence.skipgrams([1, 2, 3, 4], 10, seed=1)
    random.seed(5)
    b = P.sequence.skipgrams([1, 2, 3, 4], 10, seed=1)
    assert a == b
    pairs, labels = a
    assert len(pairs) == 24 and labels.count(1) == 12 and labels.count(0) == 12
    # each positive pair is a pair of neighbours; negatives pair a word with 1..9
    for (w, c), lab in zip(pairs, labels):
        assert 1 <= c <= 9 and (lab == 0 or w != c)


def test_timeseries_generator_errors_config_and_iteration():
    with pytest.raises(ValueError, match="same length"):
        P.sequence.TimeseriesGenerator(np.arange(5), np.arange(4), length=2)
    with pytest.raises(ValueError, match="is disallowed"):
        P.sequence.TimeseriesGenerator(np.arange(5), np.arange(5), length=5)
    gen = P.sequence.TimeseriesGenerator(np.arange(6), np.arange(6) * 2, length=2,
                                         batch_size=3)
    batches = list(gen)
    assert len(batches) == len(gen) == 2
    np.testing.assert_array_equal(batches[1][0], [[3, 4]])
    config = json.loads(gen.to_json())["config"]
    assert json.loads(config["data"]) == list(range(6)) and config["start_index"] == 2
    np.random.seed(0)
    shuffled = P.sequence.TimeseriesGenerator(np.arange(10), np.arange(10), length=3,
                                              shuffle=True, batch_size=4)
    x, y = shuffled[0]
    assert x.shape == (4, 3) and np.all(x[:, -1] + 1 == y)


def test_image_round_trip_and_errors(tmp_path):
    img = P.image.array_to_img(cases.RGB.astype("float32"), scale=False)
    path = str(tmp_path / "a.jpg")
    P.image.save_img(path, np.full((8, 8, 3), 100.0), scale=False, quality=100)
    back = P.image.img_to_array(P.image.load_img(path))
    assert back.shape == (8, 8, 3) and np.abs(back - 100).max() <= 2   # lossy, flat image
    png = str(tmp_path / "a.png")
    P.image.save_img(png, cases.RGB.astype("float32"), scale=False)
    np.testing.assert_array_equal(P.image.img_to_array(P.image.load_img(png)), cases.RGB)
    np.testing.assert_array_equal(np.asarray(img), cases.RGB)
    with pytest.warns(UserWarning, match="does not support RGBA"):
        P.image.save_img(str(tmp_path / "b.jpg"), cases.RGBA.astype("float32"))
    with pytest.raises(ValueError, match="rank 3"):
        P.image.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="Unsupported channel number: 2"):
        P.image.array_to_img(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="Unsupported image shape"):
        P.image.img_to_array(np.zeros((2, 2, 2, 2)))
    with pytest.raises(ValueError, match="color_mode"):
        P.image.load_img(png, color_mode="cmyk")
    with pytest.raises(ValueError, match="Invalid interpolation"):
        P.image.load_img(png, target_size=(2, 2), interpolation="cubic")
    with pytest.raises(TypeError, match="path should be path-like"):
        P.image.load_img(3)
    with pytest.raises(ValueError, match="incorrect rank"):
        P.image.smart_resize(np.zeros((4, 4)), (2, 2))
    with pytest.raises(ValueError, match="tuple of 2 integers"):
        P.image.smart_resize(np.zeros((4, 4, 1)), (2, 2, 2))
    # without Pillow the PIL functions name the package to install
    saved = sys.modules.get("PIL")
    sys.modules["PIL"] = None
    try:
        with pytest.raises(ImportError, match="Pillow"):
            P.image.array_to_img(np.zeros((2, 2, 3)))
        assert P.image.img_to_array(np.zeros((2, 2))).shape == (2, 2, 1)
    finally:
        if saved is None:
            del sys.modules["PIL"]
        else:
            sys.modules["PIL"] = saved


def test_smart_resize_traced():
    @tf.function(input_signature=[tf.TensorSpec([2, 6, 4, 1])])
    def resize(x):
        return P.image.smart_resize(x, (3, 3))

    x = np.arange(48, dtype="float32").reshape(2, 6, 4, 1)
    np.testing.assert_allclose(resize(tf.constant(x)).numpy(), P.image.smart_resize(x, (3, 3)))


def test_directory_dataset_errors(tree):
    im = os.path.join(tree, "images")
    with pytest.raises(ValueError, match="must provide a `seed`"):
        P.image_dataset_from_directory(im, validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="`validation_split` must be set"):
        P.image_dataset_from_directory(im, subset="training", seed=1)
    with pytest.raises(ValueError, match="exactly 2"):
        P.image_dataset_from_directory(im, labels=[0, 1, 1, 0, 2, 2], label_mode="binary",
                                       verbose=False)
    with pytest.raises(ValueError, match="did not match"):
        P.image_dataset_from_directory(im, class_names=["cow"], verbose=False)
    with pytest.raises(ValueError, match="`color_mode` must be one of"):
        P.image_dataset_from_directory(im, color_mode="cmyk")
    with pytest.raises(ValueError, match="No text files found"):
        P.text_dataset_from_directory(os.path.join(im, "cat"), verbose=False)
    with pytest.raises(ValueError, match="Only one of"):
        P.image_dataset_from_directory(im, crop_to_aspect_ratio=True,
                                       pad_to_aspect_ratio=True, verbose=False)
    with pytest.raises(ValueError, match="match the number of files"):
        P.image_dataset_from_directory(im, labels=[0, 1], verbose=False)
    ds = P.image_dataset_from_directory(im, labels=[0, 1, 1, 0, 2, 1], image_size=(2, 2),
                                        shuffle=False, verbose=False)
    assert ds.class_names == ["0", "1", "2"]
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in ds]), [0, 1, 1, 0, 2, 1])


def test_image_dataset_trains_a_model(tree):
    ds = P.image_dataset_from_directory(os.path.join(tree, "images"), image_size=(4, 4),
                                        batch_size=2, seed=0, verbose=False)
    model = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Rescaling(1 / 255),
                              keras.layers.Flatten(), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert np.isfinite(history.history["loss"]).all()


def test_text_dataset_gives_string_tensors(tree):
    ds = P.text_dataset_from_directory(os.path.join(tree, "texts"), shuffle=False,
                                       verbose=False)
    x, y = next(iter(ds))
    assert x.dtype == tf.string and y.dtype == tf.int32
    lengths = ds.map(lambda x, y: tf.strings.length(x))
    np.testing.assert_array_equal(next(iter(lengths)).numpy(),
                                  [9, 13, 3, 11, 8, 16, 4])   # the texts of build_tree


def test_tokenizer_errors_and_hash_ranges():
    with pytest.raises(ValueError, match="Specify a dimension"):
        P.text.Tokenizer().sequences_to_matrix([[1]])
    tok = P.text.Tokenizer(num_words=5)
    with pytest.raises(ValueError, match="tfidf"):
        tok.sequences_to_matrix([[1]], mode="tfidf")
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        P.text.Tokenizer(bogus=1)
    with pytest.warns(UserWarning, match="renamed `num_words`"):
        assert P.text.Tokenizer(nb_words=7).num_words == 7
    # Python's hash varies by process, so only the range is fixed: [1, n)
    indices = P.text.one_hot("a b c d e f g", 4)
    assert len(indices) == 7 and all(1 <= i < 4 for i in indices)


def test_augmentation_errors_and_missing_scipy():
    x = np.zeros((3, 4, 4))
    with pytest.raises(ValueError, match="must be distinct"):
        P.image.apply_affine_transform(x, theta=1, row_axis=1, col_axis=1)
    with pytest.raises(ValueError, match="multi-channel 2D"):
        P.image.apply_affine_transform(np.zeros((4, 4)), theta=1, channel_axis=0)
    with pytest.raises(ValueError, match="first and last"):
        P.image.apply_affine_transform(x, theta=1, row_axis=0, col_axis=2, channel_axis=1)
    with pytest.raises(ValueError, match="two floats"):
        P.image.random_zoom(x, (0.5,))
    with pytest.raises(ValueError, match="two floats"):
        P.image.random_brightness(x, (0.5, 1, 2))
    assert P.image.apply_affine_transform(x) is x   # nothing to do
    saved = sys.modules.get("scipy")
    sys.modules["scipy"] = None
    try:
        with pytest.raises(ImportError, match="SciPy"):
            P.image.apply_affine_transform(x, theta=1)
    finally:
        if saved is None:
            del sys.modules["scipy"]
        else:
            sys.modules["scipy"] = saved
