"""`tf.summary`: training logs as TensorBoard event files (scalars, histograms, images,
text), written eagerly or by traced functions at run time.

Example:
    >>> import tapeflow as tf
    >>> writer = tf.summary.create_file_writer("/tmp/logs")
    >>> with writer.as_default(step=0):
    ...     tf.summary.scalar("loss", 0.5).numpy()
    True
"""
import types as _types

from .writer import (SummaryWriter, create_file_writer, create_noop_writer, flush,  # noqa: F401
                     get_step as _get_step, histogram, image, record_if, scalar,
                     set_step as _set_step, should_record_summaries, text)

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "flush", "scalar",
           "histogram", "image", "text", "record_if", "should_record_summaries", "experimental"]

experimental = _types.SimpleNamespace(set_step=_set_step, get_step=_get_step)
