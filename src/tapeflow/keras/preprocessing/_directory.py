"""Datasets from directories of files, one subdirectory per class, as Keras 3's
`image_dataset_from_directory` and `text_dataset_from_directory` make them: the same file
order (classes sorted, files walked in sorted order, then shuffled by NumPy's
RandomState(seed)), validation split (the last files) and label modes.

Files are read when the dataset is made (tf.data reads them as it iterates): the
contents are held in memory, which suits the small and medium corpora these functions
serve.
"""
from __future__ import annotations

import os

import numpy as np

from ...data.dataset import Dataset
from ...ops import array as _array, creation as _creation, image as _image
from .. import backend as _backend
from . import image as _keras_image

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory"]

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                   "gaussian", "mitchellcubic")


def _valid_files(directory: str, follow_links: bool, formats: tuple):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda w: w[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                yield root, name


def index_directory(directory: str, labels, formats: tuple, class_names=None,
                    shuffle: bool = True, seed=None, follow_links: bool = False,
                    verbose: bool = True) -> tuple:
    """(file paths, labels, class names) of the files under `directory` with one of
    `formats`; `labels="inferred"` takes classes from the subdirectories."""
    if labels == "inferred":
        found = [d for d in sorted(os.listdir(directory))
                 if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(found):
                raise ValueError(f"The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: "
                                 f"{found} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            found = list(class_names)   # the caller's order
        subdirs = found
    else:
        subdirs = [""]
        if class_names is not None:
            if labels is None:
                raise ValueError("When `labels=None` (no labels), argument `class_names` "
                                 "cannot be specified.")
            raise ValueError("When argument `labels` is specified, argument `class_names` "
                             "cannot be specified (the `class_names` will be the sorted "
                             "list of labels).")
    filenames, inferred = [], []
    for index, sub in enumerate(subdirs):
        top = os.path.join(directory, sub)
        base = os.path.basename(top)
        for root, name in _valid_files(top, follow_links, formats):
            filenames.append(os.path.join(base, os.path.relpath(os.path.join(root, name),
                                                                top)))
            inferred.append(index)
    names = subdirs
    if labels == "inferred":
        labels = np.asarray(inferred, dtype="int32")
    elif labels is None:
        names = None
    else:
        if len(labels) != len(filenames):
            raise ValueError(f"Expected the lengths of `labels` to match the number of "
                             f"files in the target directory. len(labels) is {len(labels)} "
                             f"while we found {len(filenames)} files in directory "
                             f"{directory}.")
        names = [str(label) for label in sorted(set(labels))]
    if verbose:
        if labels is None:
            print(f"Found {len(filenames)} files.")
        else:
            print(f"Found {len(filenames)} files belonging to {len(names)} classes.")
    paths = [os.path.join(directory, f) for f in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        # one seed for both, so each path keeps its label
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            labels = np.array(labels)
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, names


def _split(samples: list, labels, validation_split, subset: str) -> tuple:
    if not validation_split:
        return samples, labels
    held = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - held} files for training.")
        return samples[:-held], None if labels is None else labels[:-held]
    if subset == "validation":
        print(f"Using {held} files for validation.")
        return samples[-held:], None if labels is None else labels[-held:]
    raise ValueError(f'`subset` must be either "training" or "validation", received: '
                     f'{subset}')


def _check_split(validation_split, subset, shuffle, seed) -> None:
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and "
                         "inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or "both", '
                         f'received: {subset}')
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must "
                         "provide a `seed` argument, to make sure that there is no overlap "
                         "between the training and validation subset.")


def _check_labels(labels, label_mode, class_names, what: str) -> None:
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"`labels` argument should be a list/tuple of integer labels, "
                             f"of the same size as the number of {what} files in the target "
                             f'directory. If you wish to infer the labels from the '
                             f'subdirectory names in the target directory, pass '
                             f'`labels="inferred"`. If you wish to get a dataset that only '
                             f"contains {what} samples (no labels), pass `labels=None`. "
                             f"Received: labels={labels}")
        if class_names:
            raise ValueError(f'You can only pass `class_names` if `labels="inferred"`. '
                             f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(f'`label_mode` argument must be one of "int", "categorical", '
                         f'"binary", or None. Received: label_mode={label_mode}')


def _label_values(labels, label_mode: str, num_classes: int):
    labels = np.asarray(labels, dtype="int32")
    if label_mode == "binary":
        return labels.astype("float32")[:, None]
    if label_mode == "categorical":
        return _creation.one_hot(labels, num_classes).numpy()
    return labels


def _decode(Image, path: str, channels: int) -> np.ndarray:
    """The first frame of the image file as uint8 (height, width, channels), converted as
    tf.io.decode_image converts: alpha dropped for RGB, opaque alpha added for RGBA, and
    colour made grey by libpng's truncated 0.299 R + 0.587 G + 0.114 B (not Pillow's
    rounded conversion)."""
    with Image.open(path) as img:
        img.seek(0)
        if channels == 1:
            if img.mode in ("L", "LA"):
                pixels = np.asarray(img.getchannel(0))
            else:
                rgb = np.asarray(img.convert("RGB")).astype(np.int64)
                pixels = ((9798 * rgb[..., 0] + 19235 * rgb[..., 1] + 3735 * rgb[..., 2])
                          >> 15).astype(np.uint8)
            return pixels[:, :, None]
        mode = "RGB" if channels == 3 else "RGBA"
        return np.asarray(img if img.mode == mode else img.convert(mode))


def _make(contents, labels, label_mode, num_classes, shuffle, buffer, seed, batch_size):
    if label_mode:
        ds = Dataset.from_tensor_slices((contents, _label_values(labels, label_mode,
                                                                 num_classes)))
    else:
        ds = Dataset.from_tensor_slices(contents)
    if shuffle:
        ds = ds.shuffle(buffer_size=buffer, seed=seed)
    return ds.batch(batch_size) if batch_size is not None else ds


def _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle, seed,
                    validation_split, subset, follow_links, verbose, formats, noun, load):
    """The shared body: index, split, load the files with `load(paths)`, make datasets."""
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _check_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, class_names = index_directory(directory, labels, formats, class_names,
                                                 shuffle, seed, follow_links, verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={class_names}")
    buffer = batch_size * 8 if batch_size is not None else 1024
    num_classes = len(class_names) if class_names else 0
    allowed = f"Allowed format{'s' if len(formats) > 1 else ''}: " + \
        (str(formats) if len(formats) > 1 else formats[0][1:])

    def one(subset_name, shuffled):
        p, lab = _split(paths, labels, validation_split, subset_name)
        if not p:
            kind = f"{subset_name} " if subset_name and validation_split else ""
            raise ValueError(f"No {kind}{noun} found in directory {directory}. "
                             f"{allowed}")
        ds = _make(load(p), lab, label_mode, num_classes, shuffled, buffer, seed, batch_size)
        ds.class_names = class_names
        if formats is IMAGE_FORMATS:   # Keras gives image datasets their paths, not text
            ds.file_paths = p
        return ds

    if subset == "both":
        return [one("training", shuffle), one("validation", False)]
    return one(subset, shuffle)


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None,
                                shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """A dataset of (text, label) batches from the `.txt` files under `directory`, one
    subdirectory per class (`labels="inferred"`), as string tensors; `max_length` keeps
    each text's first bytes. `class_names` is set on the dataset.

    Example:
        >>> ds = tf.keras.preprocessing.text_dataset_from_directory(   # doctest: +SKIP
        ...     "reviews/", batch_size=32, validation_split=0.2, subset="training", seed=1)
    """
    _check_labels(labels, label_mode, class_names, "text")
    if format != "tf":
        raise ValueError(f'`format` should be either "tf" or "grain". Received: '
                         f'format={format}' if format != "grain" else
                         "text_dataset_from_directory: format='grain' needs the grain "
                         "package, which tapeflow does not use")

    def load(paths):
        texts = []
        for p in paths:
            with open(p, "rb") as f:
                data = f.read()
            texts.append(data if max_length is None else data[:max_length])
        return np.array(texts, dtype=object)

    return _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle,
                           seed, validation_split, subset, follow_links, verbose, (".txt",),
                           "text files", load)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, format="tf",
                                 verbose=True):
    """A dataset of (image, label) batches from the image files under `directory` (bmp,
    gif, jpeg, png; decoded with Pillow), one subdirectory per class, each image
    resized to `image_size` as float32 (cropped or padded to its aspect ratio first if
    asked). `class_names` and `file_paths` are set on the dataset.

    Example:
        >>> ds = tf.keras.preprocessing.image_dataset_from_directory(   # doctest: +SKIP
        ...     "photos/", image_size=(64, 64), batch_size=16)
    """
    _check_labels(labels, label_mode, class_names, "image")
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. '
                         f"Received: color_mode={color_mode}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"Invalid `image_size` value. Expected a tuple of 2 integers. "
                         f"Received: image_size={image_size}")
    interpolation = interpolation.lower()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if format != "tf":
        raise ValueError(f'`format` should be either "tf" or "grain". Received: '
                         f'format={format}' if format != "grain" else
                         "image_dataset_from_directory: format='grain' needs the grain "
                         "package, which tapeflow does not use")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio`, `crop_to_aspect_ratio` can be "
                         "set to `True`.")
    data_format = _backend.image_data_format() if data_format is None else data_format
    Image = _keras_image._pil_image("image_dataset_from_directory")

    def load_one(path):
        x = _creation.constant(_decode(Image, path, channels))
        if crop_to_aspect_ratio:
            x = _keras_image.smart_resize(x, image_size, interpolation=interpolation)
        elif pad_to_aspect_ratio:
            x = _image.resize_with_pad(x, image_size[0], image_size[1],
                                       method=interpolation)
        else:
            x = _image.resize(x, image_size, method=interpolation)
        # dtypes as tf.image.resize gives them: float32, or uint8 for "nearest"
        return (_array.transpose(x, [2, 0, 1]) if data_format == "channels_first" else x
                ).numpy()

    def load(paths):
        return np.stack([load_one(p) for p in paths])

    return _from_directory(directory, labels, label_mode, class_names, batch_size, shuffle,
                           seed, validation_split, subset, follow_links, verbose,
                           IMAGE_FORMATS, "images", load)
