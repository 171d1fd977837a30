"""Rows for the seed ops written with the engine (the family helpers own the rest)."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row, uniform

ROWS = [
    Row("reshape", tf.reshape, np.reshape, uniform((2, 6)), kernels=("Reshape",),
        kwargs={"shape": (3, -1)}),
    Row("identity", tf.identity, lambda x: x, uniform((2,)), kernels=("Identity",)),
    Row("broadcast_to", tf.broadcast_to, np.broadcast_to, uniform((3, 1)),
        kernels=("BroadcastTo",), kwargs={"shape": (2, 3, 4)}, scalar=True),
]
