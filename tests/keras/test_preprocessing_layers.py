"""Keras 3's preprocessing and augmentation layers (API.md §11.2, issue #30).

Deterministic layers are checked against real Keras outputs in
fixtures/keras_preprocessing.npz (written by fixtures/make_keras_preprocessing.py with
TF 2.21 + Keras 3.15); the random layers by properties: identity when not training,
per-image transforms in training, seeded reproducibility, exact flips and quarter turns.
"""
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.layers.preprocessing import farmhash_fingerprint64, siphash64
from tapeflow.ops.image import affine_transform

L = tf.keras.layers
FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "keras_preprocessing.npz"))
IMG = FIX["img"]


def close(a, b, atol=1e-4):
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=atol)
    return a


# --------------------------------------------------------------------------- Resizing


@pytest.mark.parametrize("interp", ["bilinear", "nearest", "bicubic", "area", "lanczos3",
                                    "lanczos5"])
def test_resizing_matches_keras(interp):
    close(L.Resizing(4, 5, interpolation=interp)(IMG), FIX[f"resize_{interp}"], atol=2e-3)


@pytest.mark.parametrize("case,kwargs", [
    ("resize_up_bilinear", dict(height=10, width=12)),
    ("resize_crop", dict(height=4, width=4, crop_to_aspect_ratio=True)),
    ("resize_crop_tall", dict(height=6, width=2, crop_to_aspect_ratio=True)),
    ("resize_pad", dict(height=4, width=4, pad_to_aspect_ratio=True, fill_value=3.0)),
    ("resize_pad_wide", dict(height=3, width=9, pad_to_aspect_ratio=True)),
    ("resize_antialias", dict(height=3, width=4, antialias=True)),
])
def test_resizing_options_match_keras(case, kwargs):
    close(L.Resizing(**kwargs)(IMG), FIX[case], atol=2e-3)


def test_resizing_dtypes_and_single_image():
    out = L.Resizing(4, 5)(FIX["img_u8"])
    assert out.dtype == tf.uint8
    np.testing.assert_array_equal(out.numpy(), FIX["resize_u8"])
    close(L.Resizing(4, 5)(IMG[0]), FIX["resize_single"], atol=2e-3)
    with pytest.raises(ValueError):
        L.Resizing(2, 2, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError):
        L.Resizing(2, 2, interpolation="cubic")


def test_center_crop_matches_keras():
    close(L.CenterCrop(4, 5)(IMG), FIX["center_crop"])
    close(L.CenterCrop(3, 3)(IMG[1]), FIX["center_crop_single"])
    close(L.CenterCrop(8, 6)(IMG), FIX["center_crop_up"], atol=2e-3)


# --------------------------------------------------------------------------- affine


@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "wrap"])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_affine_transform_matches_tf(mode, interp):
    out = affine_transform(IMG, FIX["affine_T"], interp, mode, 7.0)
    close(out, FIX[f"affine_{mode}_{interp}"], atol=1e-3)


def test_affine_transform_traced_with_unknown_sizes():
    f = tf.function(lambda x: affine_transform(x, FIX["affine_T"], "bilinear", "reflect"),
                    input_signature=[tf.TensorSpec([None, None, None, 3])])
    close(f(IMG), affine_transform(IMG, FIX["affine_T"], "bilinear", "reflect"))


# --------------------------------------------------------------------------- augmentation

AUGMENTERS = {
    "flip": lambda seed: L.RandomFlip(seed=seed),
    "rotation": lambda seed: L.RandomRotation(0.3, seed=seed),
    "zoom": lambda seed: L.RandomZoom(0.3, seed=seed),
    "translation": lambda seed: L.RandomTranslation(0.3, 0.3, seed=seed),
    "contrast": lambda seed: L.RandomContrast(0.8, seed=seed),
    "brightness": lambda seed: L.RandomBrightness(0.3, seed=seed),
}


@pytest.mark.parametrize("name", sorted(AUGMENTERS))
def test_augmentation_identity_unless_training(name):
    layer = AUGMENTERS[name](3)
    for training in (False, None):
        close(layer(IMG, training=training), IMG, atol=0)
        close(layer(IMG[0], training=training), IMG[0], atol=0)
    model = tf.keras.Sequential([tf.keras.Input((7, 9, 3)), AUGMENTERS[name](3)])
    close(model.predict(IMG, verbose=0), IMG, atol=0)


def _batch(n=8, seed=0):
    return np.random.default_rng(seed).uniform(0, 255, (n, 6, 6, 2)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(AUGMENTERS))
def test_augmentation_per_image_and_seeded(name):
    # the same image 8 times: a per-image transform gives different results
    x = np.repeat(_batch(1), 8, axis=0)
    out = AUGMENTERS[name](5)(x, training=True).numpy()   # Keras 3: direct call trains
    assert out.shape == x.shape and out.dtype == np.float32
    distinct = {out[i].tobytes() for i in range(8)}
    assert len(distinct) >= 2, name
    assert not np.allclose(out, x)
    # the same seed gives the same sequence; the next call differs
    a, b = AUGMENTERS[name](5), AUGMENTERS[name](5)
    first = a(x).numpy()
    close(b(x), first, atol=0)
    assert not np.array_equal(a(x).numpy(), first)
    # one image (3-D) in, one image out
    assert AUGMENTERS[name](5)(x[0]).shape == x[0].shape


def test_random_flip_flips_exactly():
    x = _batch(16)
    out = L.RandomFlip("horizontal", seed=1)(x).numpy()
    flipped = [np.array_equal(o, i[:, ::-1]) for o, i in zip(out, x)]
    kept = [np.array_equal(o, i) for o, i in zip(out, x)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    out = L.RandomFlip("vertical", seed=2)(x).numpy()
    assert all(np.array_equal(o, i[::-1]) or np.array_equal(o, i) for o, i in zip(out, x))
    out = L.RandomFlip(seed=3)(x).numpy()  # as Keras 3: one draw flips both axes
    assert all(np.array_equal(o, i[::-1, ::-1]) or np.array_equal(o, i)
               for o, i in zip(out, x))
    with pytest.raises(ValueError):
        L.RandomFlip("diagonal")


@pytest.mark.parametrize("turn,k", [(0.25, 1), (-0.25, -1), (0.5, 2)])
def test_random_rotation_quarter_turns(turn, k):
    x = _batch(3)
    layer = L.RandomRotation((turn, turn), fill_mode="constant", interpolation="nearest")
    # a positive factor turns counter-clockwise, as np.rot90 on (rows, columns)
    close(layer(x), np.rot90(x, k, axes=(1, 2)), atol=1e-3)
    bilinear = L.RandomRotation((turn, turn), fill_mode="constant")
    close(bilinear(x), np.rot90(x, k, axes=(1, 2)), atol=1e-2)


def test_random_rotation_fill_constant_on_non_square():
    x = np.ones((1, 3, 5, 1), np.float32)
    out = L.RandomRotation((0.25, 0.25), fill_mode="constant", fill_value=-1.0,
                           interpolation="nearest")(x).numpy()[0, :, :, 0]
    # a 3x5 image turned a quarter about its centre covers only the middle 3 columns
    np.testing.assert_array_equal(out[:, 1:4], 1.0)
    np.testing.assert_array_equal(out[:, [0, 4]], -1.0)


def test_random_translation_and_zoom_exact_cases():
    x = _batch(2)
    shift = L.RandomTranslation((0.5, 0.5), (0.0, 0.0), fill_mode="constant",
                                interpolation="nearest")
    out = shift(x).numpy()   # down by half of 6 rows = 3
    np.testing.assert_array_equal(out[:, 3:], x[:, :3])
    np.testing.assert_array_equal(out[:, :3], 0.0)
    zoom = L.RandomZoom((-0.5, -0.5), fill_mode="constant", interpolation="nearest")
    y = np.arange(36, dtype=np.float32).reshape(1, 6, 6, 1)
    out = zoom(y).numpy()[0, :, :, 0]   # zoom in x2 about the centre (2.5, 2.5)
    src = np.floor(np.abs(0.5 * np.arange(6) + 1.25) + 0.5).astype(int)
    np.testing.assert_array_equal(out, y[0, :, :, 0][np.ix_(src, src)])


def test_random_contrast_and_brightness_ranges():
    x = _batch(6)
    out = L.RandomContrast((0.5, 0.5), seed=1)(x).numpy()
    mean = x.mean(axis=(1, 2), keepdims=True)
    ratio = (out - mean) / (x - mean)
    ok = np.abs(x - mean) > 1
    assert np.all((ratio[ok] > 0.5 - 1e-3) & (ratio[ok] < 1.5 + 1e-3))  # before clipping
    y = np.full((6, 4, 4, 3), 0.5, np.float32)
    out = L.RandomBrightness(0.2, value_range=(0.0, 1.0), seed=1)(y).numpy()
    delta = out - 0.5
    assert np.all(np.abs(delta) <= 0.2 + 1e-6)
    assert np.allclose(delta, delta[:, :1, :1, :1])  # one delta per image
    assert len(np.unique(delta[:, 0, 0, 0].round(6))) == 6
    assert np.all(L.RandomBrightness(1.0, value_range=(0, 1), seed=2)(y).numpy() <= 1.0)
    with pytest.raises(ValueError):
        L.RandomBrightness(1.5)


def test_random_crop():
    x = _batch(4)
    layer = L.RandomCrop(3, 4, seed=1)
    out = layer(x).numpy()
    assert out.shape == (4, 3, 4, 2)
    found = [(i, j) for i in range(4) for j in range(3)
             if np.array_equal(out, x[:, i:i + 3, j:j + 4])]
    assert len(found) == 1   # one window, the same for the whole batch (Keras 3)
    close(layer(x, training=False), x, atol=0)   # Keras 3.15: unchanged at inference
    assert layer.get_config()["seed"] == 1 and L.RandomCrop(2, 2).get_config()["seed"]


def test_augmentation_traced_and_in_dataset():
    layer = L.RandomFlip("horizontal", seed=4)
    f = tf.function(lambda x: layer(x, training=True),
                    input_signature=[tf.TensorSpec([None, 6, 6, 2])])
    x = _batch(8)
    a, b = f(x).numpy(), f(x).numpy()
    assert a.shape == x.shape and not np.array_equal(a, b)  # fresh draws per run
    rot = L.RandomRotation(0.2, seed=1)
    ds = tf.data.Dataset.from_tensor_slices(x).batch(4).map(rot)
    outs = [o.numpy() for o in ds]
    assert [o.shape for o in outs] == [(4, 6, 6, 2)] * 2
    assert not np.allclose(np.concatenate(outs), x)


def test_augmentation_in_fit_and_saving(tmp_path):
    model = tf.keras.Sequential([
        tf.keras.Input((7, 9, 3)), L.RandomFlip("horizontal", seed=1),
        L.RandomRotation(0.1, seed=2), L.RandomZoom(0.1, seed=3),
        L.RandomTranslation(0.1, 0.1, seed=4), L.RandomContrast(0.2, seed=5),
        L.RandomBrightness(0.1, seed=6), L.Resizing(4, 4), L.CenterCrop(3, 3),
        L.Rescaling(1 / 255.0), L.Flatten(), L.Dense(2)])
    model.compile("sgd", "mse")
    history = model.fit(IMG, np.zeros((2, 2), np.float32), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    path = str(tmp_path / "aug.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    close(loaded.predict(IMG, verbose=0), model.predict(IMG, verbose=0))
    for a, b in zip(model.layers, loaded.layers):
        assert type(a) is type(b)
        assert json.loads(json.dumps(a.get_config())) == \
            json.loads(json.dumps(b.get_config()))


# --------------------------------------------------------------------------- encoding


def test_category_encoding_matches_keras():
    x = FIX["ce_x"]
    close(L.CategoryEncoding(4, "multi_hot")(x), FIX["ce_multi_hot"])
    close(L.CategoryEncoding(4, "count")(x), FIX["ce_count"])
    close(L.CategoryEncoding(4, "one_hot")(np.array([3, 0, 1])), FIX["ce_one_hot"])
    close(L.CategoryEncoding(4, "one_hot")(np.array([[3], [1]])), FIX["ce_one_hot_col"])
    close(L.CategoryEncoding(5, "multi_hot")(np.array([1, 4, 1])), FIX["ce_multi_hot_1d"])
    w = np.array([[0.5, 1.0, 2.0, 1.5], [1.0, 0.25, 3.0, 1.0]], np.float32)
    close(L.CategoryEncoding(4, "count")(x, count_weights=w), FIX["ce_count_weights"])
    assert L.CategoryEncoding(3).get_config()["output_mode"] == "multi_hot"
    with pytest.raises(ValueError):
        L.CategoryEncoding(3, "one_hot")(x, count_weights=w)


def test_discretization_matches_keras():
    x = FIX["disc_x"]
    out = L.Discretization(bin_boundaries=[0.0, 1.0, 2.5])(x)
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), FIX["disc_int"])
    for mode in ("multi_hot", "count"):
        close(L.Discretization(bin_boundaries=[0.0, 1.0], output_mode=mode)(x),
              FIX[f"disc_{mode}"])
    close(L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot")(x[0]),
          FIX["disc_one_hot"])


@pytest.mark.parametrize("bins", [2, 4, 7])
def test_discretization_adapt_matches_keras(bins):
    layer = L.Discretization(num_bins=bins, epsilon=0.01)
    layer.adapt(FIX["disc_adapt_data"])
    close(layer.bin_boundaries, FIX[f"disc_adapt_{bins}_boundaries"], atol=1e-6)
    small = L.Discretization(num_bins=3)
    small.adapt(FIX["disc_adapt_small_data"])
    close(small.bin_boundaries, FIX["disc_adapt_small_boundaries"], atol=0)
    # a dataset of batches gives the same summary as Keras merges them
    ds = tf.data.Dataset.from_tensor_slices(FIX["disc_adapt_data"]).batch(200)
    again = L.Discretization(num_bins=bins)
    again.adapt(ds)
    close(again.bin_boundaries, layer.bin_boundaries, atol=0)
    with pytest.raises(ValueError):
        L.Discretization(bin_boundaries=[0.0]).adapt(FIX["disc_adapt_data"])


# --------------------------------------------------------------------------- hashing


def test_hash_functions_reference_values():
    # FarmHash Fingerprint64 and SipHash-2-4 reference values (their published test
    # vectors: SipHash's paper, key 00..0f, message 00..0e; FarmHash of "")
    assert farmhash_fingerprint64(b"") == 0x9AE16A3B2F90404F
    key = (int.from_bytes(bytes(range(8)), "little"),
           int.from_bytes(bytes(range(8, 16)), "little"))
    assert siphash64(key, bytes(range(15))) == 0xA129CA6149BE45E5


@pytest.mark.parametrize("case,kwargs", [
    ("hash_3", dict(num_bins=3)), ("hash_1000", dict(num_bins=1000)),
    ("hash_big", dict(num_bins=2 ** 31 - 1)), ("hash_mask", dict(num_bins=5, mask_value=7)),
    ("hash_salt", dict(num_bins=1000, salt=133)),
    ("hash_salt_pair", dict(num_bins=97, salt=[5, 11])),
    ("hash_multi_hot", dict(num_bins=4, output_mode="multi_hot")),
    ("hash_count", dict(num_bins=4, output_mode="count")),
])
def test_hashing_matches_keras_bit_for_bit(case, kwargs):
    out = L.Hashing(**kwargs)(FIX["hash_x"])
    np.testing.assert_array_equal(out.numpy(), FIX[case])


def test_hashing_more():
    close(L.Hashing(4, output_mode="one_hot")(FIX["hash_x"][0]), FIX["hash_one_hot"])
    x32 = np.array([[5, -3, 2 ** 31 - 1]], np.int32)
    out = L.Hashing(1000)(x32)
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), FIX["hash_i32"])
    f = tf.function(L.Hashing(1000), input_signature=[tf.TensorSpec([None, 4], tf.int64)])
    np.testing.assert_array_equal(f(FIX["hash_x"]).numpy(), FIX["hash_1000"])
    assert L.Hashing(3, salt=4).get_config()["salt"] == [4, 4]
    with pytest.raises(ValueError):
        L.Hashing(0)


# --------------------------------------------------------------------------- lookup

VOCAB = [12, 36, 1138, 42]


def test_integer_lookup_matches_keras():
    x = FIX["lk_x"]
    out = L.IntegerLookup(vocabulary=VOCAB)(x)
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), FIX["lk_int"])
    eq = np.testing.assert_array_equal
    eq(L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=2)(
        np.array([[12, 1000, 1001, 7, 36]])).numpy(), FIX["lk_oov2"])
    eq(L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=0)(np.array([[12, 36]])).numpy(),
       FIX["lk_oov0_ok"])
    with pytest.raises(ValueError):
        L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=0)(np.array([[12, 5]]))
    eq(L.IntegerLookup(vocabulary=VOCAB, mask_token=0)(np.array([[12, 0, 1000, 42]])).numpy(),
       FIX["lk_mask"])
    eq(L.IntegerLookup(vocabulary=VOCAB, output_mode="one_hot")(
        np.array([12, 1000, 42])).numpy(), FIX["lk_one_hot"])
    eq(L.IntegerLookup(vocabulary=VOCAB, output_mode="multi_hot")(x).numpy(),
       FIX["lk_multi_hot"])
    eq(L.IntegerLookup(vocabulary=VOCAB, output_mode="count")(
        np.array([[12, 12, 1000, 1001]])).numpy(), FIX["lk_count"])
    close(L.IntegerLookup(vocabulary=VOCAB, output_mode="tf_idf",
                          idf_weights=[0.5, 0.25, 0.2, 0.125])(
        np.array([[12, 12, 1000, 42]])), FIX["lk_tf_idf"])
    eq(L.IntegerLookup(vocabulary=VOCAB, invert=True)(np.array([[1, 0, 4, 2]])).numpy(),
       FIX["lk_invert"])
    eq(L.IntegerLookup(vocabulary=VOCAB, invert=True, mask_token=0)(
        np.array([[2, 0, 1, 5]])).numpy(), FIX["lk_invert_mask"])
    masked = L.IntegerLookup(vocabulary=VOCAB, mask_token=0)
    eq(masked.get_vocabulary(), FIX["lk_vocab_mask_get"])
    assert masked.vocabulary_size() == int(FIX["lk_vocab_mask_size"])
    with pytest.raises(ValueError):
        L.IntegerLookup(vocabulary=[1, 2, 1])


@pytest.mark.parametrize("name,kwargs", [("plain", {}), ("max4", {"max_tokens": 4}),
                                         ("mask", {"mask_token": 0}),
                                         ("oov2", {"num_oov_indices": 2})])
def test_integer_lookup_adapt_matches_keras(name, kwargs):
    layer = L.IntegerLookup(**kwargs)
    layer.adapt(FIX["lk_adapt_data"])
    np.testing.assert_array_equal(layer.get_vocabulary(), FIX[f"lk_adapt_{name}_vocab"])
    assert layer.vocabulary_size() == int(FIX[f"lk_adapt_{name}_size"])
    np.testing.assert_array_equal(layer(np.array([[7, 3, 9, 1, 5]])).numpy(),
                                  FIX[f"lk_adapt_{name}"])


def test_integer_lookup_adapt_tf_idf_matches_keras():
    layer = L.IntegerLookup(output_mode="tf_idf")
    layer.adapt(FIX["lk_adapt_data"])
    close(layer(np.array([[7, 3, 9, 1, 5, 7]])), FIX["lk_adapt_tf_idf"])


# --------------------------------------------------------------------------- models, saving


def test_preprocessing_in_models_datasets_and_saving(tmp_path):
    lookup = L.IntegerLookup()
    lookup.adapt(FIX["lk_adapt_data"])
    disc = L.Discretization(num_bins=4)
    disc.adapt(FIX["disc_adapt_data"])
    ints = tf.keras.Input((3,), dtype="int64")
    nums = tf.keras.Input((4,))
    a = L.CategoryEncoding(lookup.vocabulary_size(), "multi_hot")(lookup(ints))
    b = L.CategoryEncoding(4, "count")(disc(nums))
    c = L.Hashing(8, output_mode="count")(ints)
    model = tf.keras.Model([ints, nums], L.Concatenate()([a, b, c]))
    xi = np.array([[7, 3, 5], [1, 1, 9]], np.int64)
    xn = FIX["disc_adapt_data"][:8].reshape(2, 4)
    expected = model.predict([xi, xn], verbose=0)
    assert expected.shape == (2, 5 + 4 + 8)
    path = str(tmp_path / "pre.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    close(loaded.predict([xi, xn], verbose=0), expected, atol=0)
    # tf.data maps
    ds = tf.data.Dataset.from_tensor_slices(xi).batch(2).map(lookup)
    np.testing.assert_array_equal(next(iter(ds)).numpy(), lookup(xi).numpy())
    hashed = tf.data.Dataset.from_tensor_slices(FIX["hash_x"]).map(L.Hashing(1000))
    np.testing.assert_array_equal(np.stack([h.numpy() for h in hashed]), FIX["hash_1000"])


def test_configs_round_trip():
    layers = [L.Resizing(3, 4, interpolation="nearest", crop_to_aspect_ratio=True),
              L.CenterCrop(2, 3), L.RandomCrop(2, 2, seed=3), L.RandomFlip("vertical"),
              L.RandomRotation(0.1, fill_mode="wrap"), L.RandomZoom(0.1, (-0.2, 0.3)),
              L.RandomTranslation(0.1, 0.2), L.RandomContrast(0.3),
              L.RandomBrightness(0.2, value_range=(0, 1)), L.CategoryEncoding(5, "count"),
              L.Discretization([0.0, 1.0]), L.Hashing(7, mask_value=0, salt=[1, 2]),
              L.IntegerLookup(vocabulary=VOCAB, mask_token=0)]
    for layer in layers:
        config = layer.get_config()
        again = type(layer).from_config(json.loads(json.dumps(config)))
        assert json.loads(json.dumps(again.get_config())) == \
            json.loads(json.dumps(config)), type(layer).__name__
    assert set(L.IntegerLookup().get_config()) >= {
        "invert", "max_tokens", "num_oov_indices", "oov_token", "mask_token", "output_mode",
        "sparse", "pad_to_max_tokens", "vocabulary_dtype", "idf_weights", "vocabulary"}
