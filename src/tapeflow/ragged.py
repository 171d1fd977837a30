"""tf.ragged: RaggedTensor factories and ops (see ops/ragged.py).

Example:
    >>> rt = tf.ragged.constant([[1, 2], [3]])
    >>> tf.ragged.map_flat_values(tf.multiply, rt, 10).to_list()
    [[10, 20], [30]]
"""
from .ops.ragged import RaggedTensorSpec, constant, map_flat_values  # noqa: F401

__all__ = ["RaggedTensorSpec", "constant", "map_flat_values"]
