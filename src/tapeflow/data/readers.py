"""File-reading datasets: `TFRecordDataset` (the records of TFRecord files, CRCs checked)
and `TextLineDataset` (the lines of text files), each element a scalar string.

Example:
    >>> with tf.io.TFRecordWriter("/tmp/tapeflow_readers.tfrecord") as w:
    ...     w.write(b"x"); w.write(b"yz")
    >>> [r.numpy() for r in tf.data.TFRecordDataset("/tmp/tapeflow_readers.tfrecord")]
    [b'x', b'yz']
"""
from __future__ import annotations

import os

import numpy as np

from .._core.dtypes import string
from .._core.errors import InvalidArgumentError, NotFoundError
from .._core.tensor import Tensor, TensorSpec
from ..ops.io_files import compression_arg, open_compressed, read_records
from .dataset import Dataset

__all__ = ["TFRecordDataset", "TextLineDataset"]


def _filenames(op: str, filenames) -> list[str]:
    """File names from a str/bytes/PathLike, a list of them, a string tensor or a dataset
    of scalar strings (read when the pipeline is built, as its elements are names)."""
    if isinstance(filenames, Dataset):
        names = [f.numpy() if isinstance(f, Tensor) else f for f in filenames]
    elif isinstance(filenames, Tensor):
        if filenames.dtype is not string:
            raise TypeError(f"{op}: filenames must be a tf.string tensor, got "
                            f"{filenames.dtype.name}")
        names = np.asarray(filenames.numpy(), dtype=object).reshape(-1).tolist()
    elif isinstance(filenames, (str, bytes, os.PathLike)):
        names = [filenames]
    elif isinstance(filenames, (list, tuple, np.ndarray)):
        names = list(np.asarray(filenames, dtype=object).reshape(-1))
    else:
        raise TypeError(f"{op}: filenames must be a string, a list of strings, a string "
                        f"tensor or a dataset of strings, got {filenames!r:.60}")
    out = []
    for n in names:
        if isinstance(n, np.ndarray):
            n = n[()]
        if isinstance(n, bytes):
            n = n.decode("utf-8")
        if not isinstance(n, (str, os.PathLike)):
            raise TypeError(f"{op}: file names must be strings, got {n!r:.60}")
        out.append(os.fspath(n))
    return out


def _scalar(b: bytes) -> np.ndarray:
    a = np.empty((), dtype=object)
    a[()] = b
    return a


class _FileDataset(Dataset):
    """Records of several files, one after another or interleaved across
    `num_parallel_reads` files (a record from each in turn, in the order of TensorFlow's
    deterministic parallel interleave with block length 1)."""

    _OP = ""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        self._files = _filenames(self._OP, filenames)
        self._compression = compression_arg(self._OP, compression_type)
        if buffer_size is not None and int(buffer_size) < 0 and int(buffer_size) != -1:
            raise InvalidArgumentError(f"{self._OP}: buffer_size must be >= 0, got "
                                       f"{buffer_size}")
        if num_parallel_reads is not None and int(num_parallel_reads) < -1:
            raise InvalidArgumentError(f"{self._OP}: num_parallel_reads must be positive or "
                                       f"AUTOTUNE, got {num_parallel_reads}")
        n = 1 if num_parallel_reads is None else int(num_parallel_reads)
        self._cycle = max(1, len(self._files) if n == -1 else n)
        super().__init__((), TensorSpec([], string))

    def _read(self, path: str):
        raise NotImplementedError

    def _elements(self, ctx):
        if self._cycle == 1:
            for path in self._files:
                for rec in self._read(path):
                    yield [_scalar(rec)]
            return
        # TensorFlow's order: a slot found exhausted is emptied and its turn passes; an
        # empty slot takes the next file when its turn comes and yields from it at once
        pending = iter(self._files)
        slots: list = [None] * self._cycle
        more, i = True, 0
        while more or any(s is not None for s in slots):
            if slots[i] is None and more:
                nxt = next(pending, None)
                if nxt is None:
                    more = False
                else:
                    slots[i] = self._read(nxt)
            if slots[i] is not None:
                try:
                    rec = next(slots[i])
                except StopIteration:
                    slots[i] = None
                else:
                    yield [_scalar(rec)]
            i = (i + 1) % self._cycle


class TFRecordDataset(_FileDataset):
    """The records of TFRecord files as scalar strings; `compression_type` "", "ZLIB" or
    "GZIP"; `num_parallel_reads` interleaves that many files. A record whose CRC does not
    match raises DataLossError.

    Example:
        >>> with tf.io.TFRecordWriter("/tmp/tapeflow_tfrds.tfrecord", "GZIP") as w:
        ...     w.write(b"a")
        >>> ds = tf.data.TFRecordDataset(["/tmp/tapeflow_tfrds.tfrecord"], "GZIP")
        >>> [r.numpy() for r in ds]
        [b'a']
    """

    _OP = "TFRecordDataset"

    def _read(self, path: str):
        return read_records(path, self._compression)


class TextLineDataset(_FileDataset):
    """The lines of text files as scalar strings (without "\\n" or "\\r\\n"), file after
    file; `compression_type` as TFRecordDataset.

    Example:
        >>> tf.io.write_file("/tmp/tapeflow_lines.txt", "h\\nx,1\\n")
        >>> [r.numpy() for r in tf.data.TextLineDataset("/tmp/tapeflow_lines.txt").skip(1)]
        [b'x,1']
    """

    _OP = "TextLineDataset"

    def _read(self, path: str):
        try:
            f = open_compressed(path, "r", self._compression)
        except FileNotFoundError:
            raise NotFoundError(f"{path}; No such file or directory") from None
        with f:
            data = f.read()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for line in lines:
            yield line[:-1] if line.endswith(b"\r") else line
