"""The dataset cache Keras uses (`$KERAS_HOME/datasets`, by default `~/.keras/datasets`):
a file found there is read as it is; a missing one is downloaded from Keras's address when
the network allows, else a clear error says which file to place where.

Nothing read here is executed: pickled members (cifar10's batches, imdb's lists) go through
`RestrictedUnpickler`, which only rebuilds NumPy arrays.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile

import numpy as np

__all__ = ["ORIGIN", "cache_dir", "get_file", "RestrictedUnpickler", "load_npz"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
TIMEOUT_S = 10.0  # a short wait: an offline machine should fail fast, not hang


def cache_dir(subdir: str = "datasets") -> str:
    """Where Keras caches datasets: `$KERAS_HOME/<subdir>`, else `~/.keras/<subdir>`."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, subdir)


def _download(origin: str, target: str, file_hash: str | None) -> None:
    partial = target + ".part"
    try:
        with urllib.request.urlopen(origin, timeout=TIMEOUT_S) as response, \
                open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    if file_hash is not None:
        digest = hashlib.sha256()
        with open(partial, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != file_hash:
            os.remove(partial)
            raise ValueError(f"{origin}: the downloaded file's SHA-256 is "
                             f"{digest.hexdigest()}, expected {file_hash}")
    os.replace(partial, target)


def get_file(fname: str, origin: str, subdir: str = "datasets",
             file_hash: str | None = None) -> str:
    """The path of `fname` in the cache (an absolute `fname` is used as it is),
    downloading it from `origin` first if it is missing."""
    target = os.path.join(cache_dir(subdir), fname)
    if os.path.exists(target):
        return target
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _download(origin, target, file_hash)
    except (urllib.error.URLError, OSError) as e:
        raise OSError(
            f"Dataset file {fname!r} is not in the cache and could not be downloaded from "
            f"{origin} ({e}). Download it on a machine with network access and place it at "
            f"{target}") from None
    return target


def extract_tar(archive: str, directory: str) -> None:
    """Unpack a .tar.gz into `directory`, refusing members that would land outside it."""
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")


# (module, name) pairs a pickled NumPy array needs, and nothing else
_ALLOWED = frozenset({("numpy", "ndarray"), ("numpy", "dtype"),
                      ("numpy.core.multiarray", "_reconstruct"),
                      ("numpy._core.multiarray", "_reconstruct"),
                      ("numpy.core.multiarray", "scalar"),
                      ("numpy._core.multiarray", "scalar")})


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that only rebuilds NumPy arrays (and Python's plain containers, which
    need no class); any other class in the file is refused."""

    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"Refusing to load {module}.{name} from a dataset file: "
                                     "only NumPy arrays are allowed (corrupted or malicious?)")


def _npy_member(data: bytes) -> np.ndarray:
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version[0] == 1
                             else np.lib.format.read_array_header_2_0(f))
    if not dtype.hasobject:
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)
    return RestrictedUnpickler(f).load()  # an object array (imdb's lists of word ids)


def load_npz(path: str) -> dict:
    """The arrays of a .npz file; object arrays only through `RestrictedUnpickler`."""
    with zipfile.ZipFile(path) as archive:
        return {member[:-4]: _npy_member(archive.read(member))
                for member in archive.namelist() if member.endswith(".npy")}
