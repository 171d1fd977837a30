"""Rows for graph control flow. The If, While and WhileGrad kernels run inside traced
functions; here each row traces a function once and runs its control-flow node alone
through `run_kernel` on eager tensors, so the generated tests see the kernels, their shape
rules and their VJP/JVP rules directly (tests/function/test_control_flow.py covers them
inside tf.function). References are the same computations unrolled in NumPy."""
import numpy as np

import tapeflow as tf
from tests.ops.table import Row, uniform


def _node_alone(fn, op, *args):
    """Run the `op` node of `fn`'s graph for `args` eagerly; its inputs must be `fn`'s
    arguments or captures."""
    cf = fn.get_concrete_function(*args)
    feed = list(args) + [ext for ext, _ in cf.graph.captures]
    bound = {ph.id: t for ph, t in zip(cf.graph.inputs, feed)}
    node = next(n for n in cf.graph.get_operations() if n.op == op)
    inputs = {k: [bound[m.id] for m in v] if isinstance(v, list) else bound[v.id]
              for k, v in node.inputs.items()}
    out = tf.engine.run_kernel(op, inputs, node.attrs)
    return out if isinstance(out, list) else [out]


# The generated edge cases call these with many shapes: they retrace on purpose (the
# retracing warning is a log record, given a couple of times per kind of change).
_branches = tf.function(lambda p, x, y: tf.cond(p, lambda: tf.sin(x) * y,
                                                 lambda: x * x - y), name="op_table_row")


def _cond(x, y):
    out = _node_alone(_branches, "If", tf.reduce_sum(x) > 0.0, x, y)
    return out[0]


def _cond_ref(x, y):
    return np.sin(x) * y if x.sum() > 0 else x * x - y


def _body(i, a, b):
    a = tf.cond(tf.reduce_sum(a) > 0.0, lambda: tf.sin(a) * b, lambda: a * b + 0.5)
    return i + 1, a, b * 0.9


# the counter is an argument: a constant made while tracing would stay captured by the
# cached function, which the no-leak test would count when it traces first
_loop_fn = tf.function(lambda i, x, y: tf.while_loop(lambda i, a, b: i < 4, _body, (i, x, y)),
                       name="op_table_row")


def _loop(x, y):
    return _node_alone(_loop_fn, "While", tf.constant(0), x, y)[1:3]


def _loop_ref(x, y):
    for _ in range(4):
        x = np.sin(x) * y if x.sum() > 0 else x * y + 0.5
        y = y * 0.9
    return x, y


ROWS = [
    Row("cond/node", _cond, _cond_ref, uniform((3,), (3,)), kernels=("If",), scalar=False,
        batched_jvp=False),
    Row("while_loop/node", _loop, _loop_ref, uniform((3,), (3,), low=0.1),
        kernels=("While", "WhileGrad"), scalar=False, batched_jvp=False),
]
