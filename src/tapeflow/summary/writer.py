"""`tf.summary`: file writers, the default writer and step, and the summary ops.

A summary call is one stateful op, `WriteSummary`, eagerly and inside traced functions
alike: while tracing it becomes a node that runs, in program order with the function's
other stateful ops, every time the graph runs (never pruned), reading the data and the
step (a Variable's value at that moment) at run time; its kernel encodes the event and
appends it to the writer's file. The writer and the default step are taken when the
call is made (traced), as in TensorFlow. Writers buffer events and flush every
`max_queue` events or `flush_millis`, and on `flush()`/`close()`/exit.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
import weakref

import numpy as np

from .._core.convert import convert_to_tensor
from .._core.dispatch import no_recording, run_kernel
from .._core.dtypes import bool as _bool, int64
from .._core.errors import InvalidArgumentError
from .._core.tensor import Tensor
from .._core.variable import Variable
from ..ops import math as math_ops
from ..ops._define import defop, eager_from_native
from . import event_file

_FILE_COUNTER = itertools.count()


class _State(threading.local):
    """The default writer and step, per thread (as TensorFlow keeps them)."""

    def __init__(self):
        self.writer = None
        self.step = None
        self.record_if = True


_state = _State()


class SummaryWriter:
    """Writes summaries to one TensorBoard event file in `logdir`
    (`create_file_writer`).

    Example:
        >>> writer = tf.summary.create_file_writer("/tmp/logs")
        >>> with writer.as_default(step=1):
        ...     tf.summary.scalar("loss", 0.5)
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: int = 120_000,
                 filename_suffix: str = ".v2"):
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise ValueError(f"create_file_writer: logdir must be a non-empty path, got "
                             f"{logdir!r:.60}")
        os.makedirs(logdir, exist_ok=True)
        self.logdir = str(logdir)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_FILE_COUNTER)}{filename_suffix}")
        self.path = os.path.join(self.logdir, name)
        self._file = open(self.path, "wb")
        self._lock = threading.Lock()
        self._max_queue, self._flush_seconds = max_queue, flush_millis / 1000.0
        self._pending, self._last_flush = 0, time.monotonic()
        self._closed = False
        self._file.write(event_file.record(event_file.file_version_event(time.time())))
        self._file.flush()
        self._finalizer = weakref.finalize(self, self._file.close)

    def write_event(self, payload: bytes) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._file.write(event_file.record(payload))
            self._pending += 1
            if (self._pending >= self._max_queue
                    or time.monotonic() - self._last_flush >= self._flush_seconds):
                self._flush_locked()
            return True

    def _flush_locked(self) -> None:
        self._file.flush()
        self._pending, self._last_flush = 0, time.monotonic()

    def flush(self) -> None:
        """Write the buffered events to the file."""
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self) -> None:
        """Flush and close the file; later summaries to this writer are dropped."""
        with self._lock:
            if not self._closed:
                self._flush_locked()
                self._file.close()
                self._closed = True

    def init(self) -> None:
        """Nothing to do: the file is opened when the writer is made (TensorFlow API)."""

    def set_as_default(self, step=None) -> None:
        """Make this the default writer (and `step` the default step, if given)."""
        _state.writer = self
        if step is not None:
            _state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """`with writer.as_default(step=...):` makes this the default writer (and `step`
        the default step) inside the block, flushing when it ends."""
        saved = (_state.writer, _state.step)
        self.set_as_default(step)
        try:
            yield self
        finally:
            _state.writer, _state.step = saved
            self.flush()

    def __repr__(self) -> str:
        return f"<SummaryWriter {self.path!r}>"


class _NoopWriter(SummaryWriter):
    def __init__(self):  # no file
        self._closed, self.path, self.logdir = True, None, None

    def write_event(self, payload: bytes) -> bool:
        return False

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False,
                       experimental_mesh=None) -> SummaryWriter:
    """A writer of a new event file in `logdir` (created if needed).

    Example:
        >>> writer = tf.summary.create_file_writer("/tmp/logs")
    """
    return SummaryWriter(logdir, 10 if max_queue is None else int(max_queue),
                         120_000 if flush_millis is None else int(flush_millis),
                         ".v2" if filename_suffix is None else str(filename_suffix))


def create_noop_writer() -> SummaryWriter:
    """A writer that writes nothing (to switch summaries off).

    Example:
        >>> with tf.summary.create_noop_writer().as_default(step=0):
        ...     tf.summary.scalar("x", 1.0).numpy()
        False
    """
    return _NoopWriter()


def flush(writer=None, name=None) -> None:
    """Flush `writer` (default: the default writer).

    Example:
        >>> tf.summary.flush()
    """
    writer = writer if writer is not None else _state.writer
    if writer is not None:
        writer.flush()


def set_step(step) -> None:
    """Set the default step of summaries (an int, a tensor or a Variable, read when each
    summary runs).

    Example:
        >>> tf.summary.experimental.set_step(3)
    """
    _state.step = step


def get_step():
    """The default step (None when unset)."""
    return _state.step


@contextlib.contextmanager
def record_if(condition):
    """Summaries inside the block are written only while `condition` holds (a bool, or a
    callable returning one, asked at each summary call).

    Example:
        >>> with tf.summary.create_file_writer("/tmp/logs").as_default(step=3):
        ...     with tf.summary.record_if(lambda: tf.summary.experimental.get_step() % 2 == 0):
        ...         tf.summary.scalar("x", 1.0).numpy()
        False
    """
    saved = _state.record_if
    _state.record_if = condition
    try:
        yield
    finally:
        _state.record_if = saved


def should_record_summaries() -> bool:
    """Whether a summary written now would be recorded (a default writer is set and the
    `record_if` condition holds).

    Example:
        >>> tf.summary.should_record_summaries()
        False
    """
    writer = _state.writer
    if writer is None or writer._closed:
        return False
    condition = _state.record_if
    return bool(condition() if callable(condition) else condition)


# --------------------------------------------------------------------------- the op


_PLUGINS = {"scalar": "scalars", "histogram": "histograms", "image": "images",
            "text": "text"}


def _write_summary(inputs, attrs, backend):
    data = inputs["data"]
    tensor = attrs["payload"] if not data else _payload(attrs, np.asarray(data[0]))
    event = event_file.summary_event(time.time(), int(inputs["step"]), attrs["tag"], tensor,
                                     attrs["metadata"])
    return np.array(attrs["writer"].write_event(event))


def _payload(attrs, data: np.ndarray) -> bytes:
    """The TensorProto of one summary, as TensorFlow 2's tf.summary stores each kind."""
    kind = attrs["kind"]
    if kind == "scalar":
        return event_file.tensor_proto(np.asarray(data, np.float32))
    if kind == "histogram":
        return event_file.tensor_proto(event_file.histogram_buckets(data, attrs["buckets"]))
    images = event_file.to_uint8_images(data)[:attrs["max_outputs"]]
    strings = [str(data.shape[2]).encode(), str(data.shape[1]).encode()]
    strings += [event_file.png(im) for im in images]
    return event_file.tensor_proto(np.array(strings, dtype=object))





defop("WriteSummary", ["data", "step"], list_inputs=("data",),
      shape=lambda s, d, a: [((), _bool)], impl=eager_from_native(_write_summary),
      native=_write_summary, differentiable=False, stateful=True)


def _step_tensor(op: str, step) -> Tensor:
    step = step if step is not None else _state.step
    if step is None:
        raise ValueError(f"summary.{op}: no step set. Give one with the `step` argument, "
                         "writer.as_default(step=...) or "
                         "tf.summary.experimental.set_step()")
    if isinstance(step, Variable):
        step = step.read_value()
    if isinstance(step, Tensor):
        if not step.dtype.is_integer:
            raise InvalidArgumentError(f"summary.{op}: step must be an integer, got "
                                       f"{step.dtype.name}")
        return math_ops.cast(step, int64) if step.dtype is not int64 else step
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"summary.{op}: step must be an integer, got {step!r:.60}")
    return convert_to_tensor(np.int64(step))


def _write(op: str, name: str, data, step, description, kind: str, **options) -> Tensor:
    if not isinstance(name, str) or not name:
        raise ValueError(f"summary.{op}: name must be a non-empty string, got {name!r:.60}")
    if not should_record_summaries():  # no default writer, or record_if says no
        return convert_to_tensor(False)
    writer = _state.writer
    step_t = _step_tensor(op, step)
    # what does not depend on the data is encoded once, here (at trace time in a graph)
    attrs = {"writer": writer, "tag": name, "kind": kind, "payload": None,
             "metadata": event_file.summary_metadata(_PLUGINS[kind], description), **options}
    inputs = {"data": [], "step": step_t}
    if kind == "text":
        attrs["payload"] = event_file.tensor_proto(np.array(data, dtype=object))
    else:
        inputs["data"] = [data]
    with no_recording():
        return run_kernel("WriteSummary", inputs, attrs)


def _as_tensor(op: str, data) -> Tensor:
    if isinstance(data, Variable):
        return data.read_value()
    if isinstance(data, Tensor):
        return data
    try:
        return convert_to_tensor(data)
    except (TypeError, ValueError) as e:
        raise TypeError(f"summary.{op}: data {data!r:.60} is not a tensor value: {e}") from None


def scalar(name: str, data, step=None, description: str | None = None) -> Tensor:
    """Record a scalar (converted to float32) under `name` at `step` (default: the
    default step); returns True when written (a bool tensor), False without a default
    writer.

    Example:
        >>> with tf.summary.create_file_writer("/tmp/logs").as_default(step=0):
        ...     tf.summary.scalar("loss", 0.25).numpy()
        True
    """
    data = _as_tensor("scalar", data)
    if len(data.shape) != 0:
        raise InvalidArgumentError(f"summary.scalar: data must be a scalar (rank 0), got "
                                   f"shape {list(data.shape)}")
    if not (data.dtype.is_floating or data.dtype.is_integer or data.dtype.is_bool):
        raise InvalidArgumentError(f"summary.scalar: data must be a real number, got "
                                   f"{data.dtype.name}")
    return _write("scalar", name, data, step, description, "scalar")


def histogram(name: str, data, step=None, buckets=None,
              description: str | None = None) -> Tensor:
    """Record the distribution of `data` (any shape) as `buckets` (default 30) equal-width
    buckets over its range.

    Example:
        >>> with tf.summary.create_file_writer("/tmp/logs").as_default(step=0):
        ...     tf.summary.histogram("weights", tf.random.normal([100])).numpy()
        True
    """
    data = _as_tensor("histogram", data)
    if not (data.dtype.is_floating or data.dtype.is_integer or data.dtype.is_bool):
        raise InvalidArgumentError(f"summary.histogram: data must be real numbers, got "
                                   f"{data.dtype.name}")
    return _write("histogram", name, data, step, description, "histogram",
                  buckets=30 if buckets is None else int(buckets))


def image(name: str, data, step=None, max_outputs: int = 3,
          description: str | None = None) -> Tensor:
    """Record up to `max_outputs` images from `data` of shape [k, h, w, c] (c = 1, 2, 3
    or 4; floats in [0, 1] or uint8) as PNGs.

    Example:
        >>> with tf.summary.create_file_writer("/tmp/logs").as_default(step=0):
        ...     tf.summary.image("digits", tf.zeros([2, 8, 8, 1])).numpy()
        True
    """
    data = _as_tensor("image", data)
    if len(data.shape) != 4 or data.shape[3] not in (1, 2, 3, 4):
        raise InvalidArgumentError(f"summary.image: data must have shape [k, h, w, c] with "
                                   f"c in 1..4, got {list(data.shape)}")
    return _write("image", name, data, step, description, "image",
                  max_outputs=int(max_outputs))


def text(name: str, data, step=None, description: str | None = None) -> Tensor:
    """Record a string (or a list/array of strings; Markdown in TensorBoard).

    Example:
        >>> with tf.summary.create_file_writer("/tmp/logs").as_default(step=0):
        ...     tf.summary.text("note", "hello").numpy()
        True
    """
    array = np.asarray(data, dtype=object)
    if not all(isinstance(x, (str, bytes)) for x in array.reshape(-1)):
        raise TypeError(f"summary.text: data must be strings, got {data!r:.60}")
    return _write("text", name, data, step, description, "text")
