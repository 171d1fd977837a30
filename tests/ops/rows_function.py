"""Rows for ops that exist as kernels only in traced graphs: the graph forms of
custom_gradient and recompute_grad (their eager forms are composites)."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row, uniform


@tf.custom_gradient
def _scaled_grad(x):
    return tf.tanh(x), lambda dy: dy * 3.0


# traced once per shape the generated cases use: they retrace on purpose (the retracing
# warning is a log record, given a couple of times per kind of change)
_custom = tf.function(lambda x: _scaled_grad(x), name="op_table_row")
_recompute = tf.function(lambda x: tf.recompute_grad(lambda z: tf.sin(z) * z)(x),
                         name="op_table_row")

ROWS = [
    # the gradient is the user's (3 dy), not tanh's: values only here; the rule is tested
    # in tests/function/test_function.py
    Row("function/custom_gradient", _custom, np.tanh, uniform((3, 2)),
        kernels=("CustomGradient",), grad=False, scalar=False),
    Row("function/recompute_grad", _recompute, lambda x: np.sin(x) * x, uniform((4,)),
        kernels=("RecomputeGrad",), order=1, scalar=False),
]
