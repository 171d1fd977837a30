"""Sequences as arrays and windows: `pad_sequences` and `timeseries_dataset_from_array`
(Keras 3's sequence and timeseries utilities), shared by `keras.utils` and
`keras.preprocessing`.

Example:
    >>> pad_sequences([[1], [2, 3]])
    array([[0, 1],
           [2, 3]], dtype=int32)
"""
from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor
from ..data.dataset import Dataset

__all__ = ["pad_sequences", "timeseries_dataset_from_array"]


def pad_sequences(sequences, maxlen: int | None = None, dtype="int32", padding: str = "pre",
                  truncating: str = "pre", value=0.0) -> np.ndarray:
    """The sequences as one `[len(sequences), maxlen, ...]` array: shorter ones padded
    with `value` (before them with `padding="pre"`, after with "post"), longer ones cut
    (their start dropped with `truncating="pre"`, their end with "post"); `maxlen`
    defaults to the longest.

    Example:
        >>> tf.keras.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post")
        array([[2, 3],
               [4, 0]], dtype=int32)
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths, sample_shape, found = [], (), False
    for s in sequences:
        try:
            lengths.append(len(s))
        except TypeError as e:
            raise ValueError("`sequences` must be a list of iterables. Found non-iterable: "
                             f"{s}") from e
        if not found and len(s):
            sample_shape, found = np.asarray(s).shape[1:], True
    if maxlen is None:
        maxlen = np.max(lengths)
    is_text = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_text:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         "strings.")
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            kept = s[-maxlen:]  # (maxlen=0 keeps all and fails below, as Keras)
        elif truncating == "post":
            kept = s[:maxlen]
        else:
            raise ValueError(f'Truncating type "{truncating}" not understood')
        kept = np.asarray(kept, dtype=dtype)
        if kept.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at position {i} "
                             f"is different from expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        elif padding == "pre":
            out[i, -len(kept):] = kept
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return out


def _numpy(value):
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def timeseries_dataset_from_array(data, targets, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> Dataset:
    """A dataset of sliding windows over `data` (`sequence_length` steps, `sampling_rate`
    apart, a window every `sequence_stride` steps), each paired with the target at its
    first step when `targets` is given, batched by `batch_size` (None: unbatched).

    Example:
        >>> ds = tf.keras.utils.timeseries_dataset_from_array(np.arange(10), None, 3,
        ...                                                   batch_size=None)
        >>> [w.numpy().tolist() for w in ds][:2]
        [[0, 1, 2], [1, 2, 3]]
    """
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data. "
                             f"Received: start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index} ")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data. "
                             f"Received: end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: "
                             f"end_index={end_index}")
    for arg, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{arg}` must be higher than 0. Received: {arg}={value}")
        if value >= n:
            raise ValueError(f"`{arg}` must be lower than the length of the data. Received: "
                             f"{arg}={value}, for data of length {n}")
    start = start_index or 0
    end = n if end_index is None else end_index
    count = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        count = min(count, len(targets))
    starts = np.arange(0, max(count, 0), sequence_stride)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    values = _numpy(data)[start:end]
    steps = np.arange(sequence_length) * sampling_rate
    windows = values[starts[:, None] + steps[None, :]] if len(starts) else \
        np.zeros((0, sequence_length) + values.shape[1:], values.dtype)
    if targets is not None:
        labels = _numpy(targets)[start:end][starts]
        dataset = Dataset.from_tensor_slices((windows, labels))
    else:
        dataset = Dataset.from_tensor_slices(windows)
    if batch_size is not None:
        if shuffle:
            dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
        return dataset.batch(batch_size)
    return dataset.shuffle(buffer_size=1024, seed=seed) if shuffle else dataset


# --------------------------------------------------------------------------- misc
