"""tf.saved_model: TensorFlow's SavedModel format (API §14). `save` writes a SavedModel
that TensorFlow 2.21 loads and serves.

Example:
    >>> tf.saved_model.save(module, "/tmp/m", signatures=module.__call__)
"""
from .save import DEFAULT_SIGNATURE, SERVING, SaveOptions, save

DEFAULT_SERVING_SIGNATURE_DEF_KEY = DEFAULT_SIGNATURE
SERVING_TAG = SERVING  # (TensorFlow spells the tag constant tf.saved_model.SERVING)

__all__ = ["save", "SaveOptions", "SERVING", "DEFAULT_SERVING_SIGNATURE_DEF_KEY"]
