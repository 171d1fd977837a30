"""`tapeflow.onnx`: traced functions as ONNX models (API §14).

Example:
    >>> f = tf.function(lambda x: tf.nn.relu(x))
    >>> data = tf.onnx.to_model_proto(f, [tf.TensorSpec([None, 2], tf.float32)])
    >>> data[:2] == bytes([8, 8])  # ir_version 8 first
    True
"""
from .._core.registry import register_onnx as register_lowering
from .exporter import Emitter, export, to_model_proto
from .lowering import LOWERED  # importing it registers the lowering table

__all__ = ["export", "to_model_proto", "register_lowering", "Emitter", "LOWERED"]
