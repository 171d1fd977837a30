"""tf.saved_model: TensorFlow's SavedModel format (API §14). `save` writes a SavedModel
that TensorFlow 2.21 loads and serves; `load` runs SavedModels written by TensorFlow or
tapeflow.

Example:
    >>> tf.saved_model.save(module, "/tmp/m", signatures=module.__call__)
    >>> tf.saved_model.load("/tmp/m").signatures["serving_default"](x=tf.ones([2, 4]))
"""
from .load import LoadOptions, load
from .save import DEFAULT_SIGNATURE, SERVING, SaveOptions, save

DEFAULT_SERVING_SIGNATURE_DEF_KEY = DEFAULT_SIGNATURE
SERVING_TAG = SERVING  # (TensorFlow spells the tag constant tf.saved_model.SERVING)

__all__ = ["save", "SaveOptions", "load", "LoadOptions", "SERVING",
           "DEFAULT_SERVING_SIGNATURE_DEF_KEY"]
