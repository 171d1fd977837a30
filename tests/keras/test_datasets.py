"""keras.datasets reads Keras's cache files (tiny fakes written here in each format, in a
temporary HOME) and never the network: urlopen is replaced in every test."""
from __future__ import annotations

import gzip
import io
import os
import pickle
import tarfile
import urllib.error

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.datasets import _files


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    calls = []

    def offline(url, timeout=None):
        calls.append((url, timeout))
        raise urllib.error.URLError("no network in tests")
    monkeypatch.setattr(_files.urllib.request, "urlopen", offline)
    cache = tmp_path / ".keras" / "datasets"
    cache.mkdir(parents=True)
    return cache, calls


def test_mnist_reads_the_cached_npz(home):
    cache, calls = home
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
              "y_train": np.array([0, 9, 3, 3, 1], np.uint8),
              "x_test": rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
              "y_test": np.array([7, 2], np.uint8)}
    np.savez(cache / "mnist.npz", **arrays)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    for got, key in ((x_train, "x_train"), (y_train, "y_train"), (x_test, "x_test"),
                     (y_test, "y_test")):
        assert got.dtype == np.uint8 and got.shape == arrays[key].shape
        np.testing.assert_array_equal(got, arrays[key])
    assert calls == []  # a cached file is never fetched again


def test_offline_error_names_the_file_and_the_place(home):
    cache, calls = home
    with pytest.raises(OSError) as e:
        tf.keras.datasets.mnist.load_data()
    message = str(e.value)
    assert "mnist.npz" in message and str(cache / "mnist.npz") in message
    assert "no network in tests" in message
    assert calls == [("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
                      _files.TIMEOUT_S)]
    assert not os.path.exists(cache / "mnist.npz") and os.listdir(cache) == []


def test_keras_home_overrides_home(home, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere"
    (other / "datasets").mkdir(parents=True)
    np.savez(other / "datasets" / "mnist.npz", x_train=np.ones((1, 28, 28), np.uint8),
             y_train=np.ones(1, np.uint8), x_test=np.zeros((1, 28, 28), np.uint8),
             y_test=np.zeros(1, np.uint8))
    monkeypatch.setenv("KERAS_HOME", str(other))
    (x_train, _), _ = tf.keras.datasets.mnist.load_data()
    assert x_train.sum() == 28 * 28


def test_a_download_is_checked_against_keras_hash(home, monkeypatch):
    cache, _ = home
    buffer = io.BytesIO()
    np.savez(buffer, x=np.zeros((2, 13)), y=np.zeros(2))

    def serve(url, timeout=None):
        return io.BytesIO(buffer.getvalue())
    monkeypatch.setattr(_files.urllib.request, "urlopen", serve)
    with pytest.raises(ValueError, match="SHA-256"):  # not Keras's file: refused, removed
        tf.keras.datasets.boston_housing.load_data()
    assert os.listdir(cache) == []
    # without an expected hash the download lands in the cache and is read from there
    path = _files.get_file("some.npz", "https://example.invalid/some.npz")
    assert path == str(cache / "some.npz")
    np.testing.assert_array_equal(np.load(path)["x"], np.zeros((2, 13)))


def _idx(path, header: bytes, values: np.ndarray):
    with gzip.open(path, "wb") as f:
        f.write(header + values.astype(np.uint8).tobytes())


def test_fashion_mnist_reads_the_gzipped_idx_files(home):
    cache, _ = home
    folder = cache / "fashion-mnist"
    folder.mkdir()
    rng = np.random.default_rng(1)
    images = {"train": rng.integers(0, 256, (3, 28, 28)), "t10k": rng.integers(0, 256, (2, 28, 28))}
    labels = {"train": np.array([4, 0, 9]), "t10k": np.array([1, 8])}
    for split in ("train", "t10k"):
        _idx(folder / f"{split}-labels-idx1-ubyte.gz", b"\0\0\x08\x01" + bytes(4), labels[split])
        _idx(folder / f"{split}-images-idx3-ubyte.gz", b"\0\0\x08\x03" + bytes(12),
             images[split])
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    assert x_train.shape == (3, 28, 28) and x_test.shape == (2, 28, 28)
    assert x_train.dtype == y_train.dtype == np.uint8
    np.testing.assert_array_equal(x_train, images["train"])
    np.testing.assert_array_equal(x_test, images["t10k"])
    np.testing.assert_array_equal(y_train, labels["train"])
    np.testing.assert_array_equal(y_test, labels["t10k"])


def _cifar_batches(folder, rng) -> dict:
    folder.mkdir(parents=True)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, 2)]
        batches[name] = (data, labels)
        with open(folder / name, "wb") as f:  # bytes keys as in CIFAR's own files
            pickle.dump({b"batch_label": b"fake", b"labels": labels, b"data": data}, f,
                        protocol=3)
    return batches


def _check_cifar(batches):
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
    assert x_train.shape == (10, 32, 32, 3) and x_test.shape == (2, 32, 32, 3)
    assert y_train.shape == (10, 1) and y_test.shape == (2, 1)
    assert x_train.dtype == y_train.dtype == x_test.dtype == y_test.dtype == np.uint8
    first = batches["data_batch_1"][0][0]
    # row-major red, green, blue planes of 32x32 -> channels last
    np.testing.assert_array_equal(x_train[0, :, :, 0], first[:1024].reshape(32, 32))
    np.testing.assert_array_equal(x_train[0, 5, 7], first[[5 * 32 + 7, 1024 + 5 * 32 + 7,
                                                           2048 + 5 * 32 + 7]])
    np.testing.assert_array_equal(x_train[8:10].transpose(0, 3, 1, 2).reshape(2, 3072),
                                  batches["data_batch_5"][0])
    np.testing.assert_array_equal(y_train[:, 0], sum((batches[f"data_batch_{i}"][1]
                                                      for i in range(1, 6)), []))
    np.testing.assert_array_equal(y_test[:, 0], batches["test_batch"][1])


def test_cifar10_reads_keras3_batches(home):
    cache, _ = home
    _check_cifar(_cifar_batches(cache / "cifar-10-batches-py-target" / "cifar-10-batches-py",
                                np.random.default_rng(2)))


def test_cifar10_unpacks_a_cached_archive(home, tmp_path):
    cache, _ = home
    batches = _cifar_batches(tmp_path / "src" / "cifar-10-batches-py", np.random.default_rng(3))
    with tarfile.open(cache / "cifar-10-batches-py-target_archive", "w:gz") as tar:
        tar.add(tmp_path / "src" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    _check_cifar(batches)


class Payload:  # what a malicious batch would smuggle in
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_cifar10_refuses_pickled_code(home):
    cache, _ = home
    folder = cache / "cifar-10-batches-py"
    _cifar_batches(folder, np.random.default_rng(4))
    with open(folder / "data_batch_3", "wb") as f:
        pickle.dump({b"data": Payload(), b"labels": [0]}, f, protocol=3)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        tf.keras.datasets.cifar10.load_data()


def _imdb(cache, x_train, y_train, x_test, y_test):
    ragged = [np.empty(len(x), dtype=object) for x in (x_train, x_test)]
    for target, rows in zip(ragged, (x_train, x_test)):
        target[:] = rows
    np.savez(cache / "imdb.npz", x_train=ragged[0], y_train=np.array(y_train),
             x_test=ragged[1], y_test=np.array(y_test))


def test_imdb_shuffles_shifts_and_caps_as_keras(home):
    cache, _ = home
    x_train = [[5, 1], [7, 8, 9], [2], [4, 4, 4, 4]]
    x_test = [[3, 6], [1]]
    _imdb(cache, x_train, [1, 0, 1, 0], x_test, [0, 1])
    (xa, ya), (xb, yb) = tf.keras.datasets.imdb.load_data()
    assert xa.dtype == object and xa.shape == (4,) and xb.shape == (2,)
    # Keras's order for seed 113 (one RandomState, train then test), start char 1, ids + 3
    rng = np.random.RandomState(113)
    order_a, order_b = np.arange(4), np.arange(2)
    rng.shuffle(order_a)
    rng.shuffle(order_b)
    # num_words defaults to the largest id, which Keras itself then maps to oov_char 2
    def shifted(x):
        return [1] + [w + 3 if w + 3 < 12 else 2 for w in x]
    assert [list(x) for x in xa] == [shifted(x_train[i]) for i in order_a]
    assert [list(x) for x in xb] == [shifted(x_test[i]) for i in order_b]
    np.testing.assert_array_equal(ya, np.array([1, 0, 1, 0])[order_a])
    np.testing.assert_array_equal(yb, np.array([0, 1])[order_b])
    # num_words: ids >= 8 become the out-of-vocabulary 2; maxlen drops reviews of 4+ ids
    (xa, ya), (xb, _) = tf.keras.datasets.imdb.load_data(num_words=8, maxlen=4, seed=0)
    assert sorted(map(list, xa)) == [[1, 2, 4], [1, 5]] and len(xb) == 2
    assert sorted(ya.tolist()) == [1, 1]
    (xa, _), _ = tf.keras.datasets.imdb.load_data(start_char=None, oov_char=None,
                                                  index_from=0, num_words=5, seed=0)
    assert sorted(map(list, xa)) == [[], [1], [2], [4, 4, 4, 4]]
    with pytest.raises(ValueError, match="maxlen=1"):
        tf.keras.datasets.imdb.load_data(maxlen=1)


def test_imdb_refuses_pickled_code(home):
    cache, _ = home
    bad = np.empty(1, dtype=object)
    bad[0] = Payload()
    np.savez(cache / "imdb.npz", x_train=bad, y_train=np.zeros(1), x_test=bad,
             y_test=np.zeros(1))
    with pytest.raises(Exception, match="Refusing to load posix.system|Refusing to load nt"):
        tf.keras.datasets.imdb.load_data()


def test_boston_housing_splits_as_keras(home):
    cache, _ = home
    x = np.arange(10 * 13, dtype=np.float64).reshape(10, 13)
    y = np.arange(10, dtype=np.float64) * 1.5
    np.savez(cache / "boston_housing.npz", x=x, y=y)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.boston_housing.load_data()
    order = np.arange(10)
    np.random.RandomState(113).shuffle(order)
    assert x_train.shape == (8, 13) and x_test.shape == (2, 13) and x_train.dtype == np.float64
    np.testing.assert_array_equal(x_train, x[order[:8]])
    np.testing.assert_array_equal(y_test, y[order[8:]])
    (x_train, _), (x_test, _) = tf.keras.datasets.boston_housing.load_data(test_split=0.0)
    assert len(x_train) == 10 and len(x_test) == 0
    with pytest.raises(ValueError, match="test_split"):
        tf.keras.datasets.boston_housing.load_data(test_split=1.0)


def test_datasets_are_modules():
    from tapeflow.keras.datasets import cifar10, mnist  # noqa: F401
    import tapeflow.keras.datasets.imdb as imdb
    assert callable(imdb.load_data) and callable(cifar10.load_data)
