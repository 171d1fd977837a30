"""Op-table rows of the sparse variable updates (ops/state.py): scatters into a variable's
buffer and the deduplication of IndexedSlices optimizers run first. The indices are fixed
(rows of the sampled variable), so the reshaped edge cases do not apply; tests/train/
test_optimizers.py covers these ops' errors, empty slices and traced use."""
import numpy as np

import tapeflow as tf
from tapeflow.ops.state import deduplicate_slices
from tests.ops.table import Row, uniform

INDICES = [1, 3, 1, 0]
FIXED = dict(scalar=False, size1=False, empty=False, rank=False,
             note="fixed row indices: the sampled shapes cannot be reshaped")


def _scattered(method):
    made = {}

    def fn(x, updates):
        # one variable per shape and dtype, made once (a traced function may create
        # variables only on its first call, and not from its arguments), then assigned x
        key = (tuple(x.shape), x.dtype)
        if key not in made:
            made[key] = tf.Variable(tf.zeros(x.shape, x.dtype))
        v = made[key]
        v.assign(x)
        getattr(v, method)(tf.IndexedSlices(updates, tf.constant(INDICES)))
        return v.read_value()
    return fn


def _add_ref(x, updates):
    out = x.copy()
    np.add.at(out, INDICES, updates)
    return out


def _update_ref(x, updates):
    out = x.copy()
    out[INDICES] = updates  # the repeated row 1 gets its last update in both
    return out


def _dedup(values):
    return deduplicate_slices(tf.IndexedSlices(values, tf.constant(INDICES))).values


def _dedup_ref(values):
    out = np.zeros((3,) + values.shape[1:], values.dtype)
    np.add.at(out, np.searchsorted([0, 1, 3], INDICES), values)
    return out


ROWS = [
    Row("scatter_add/in_place", _scattered("scatter_add"), _add_ref,
        uniform((5, 3), (4, 3)), kernels=("InplaceScatterAdd",), grad=False,
        dtypes=("float32", "float64"), **FIXED),
    Row("scatter_sub/in_place", _scattered("scatter_sub"),
        lambda x, u: _add_ref(x, -u), uniform((5, 3), (4, 3)),
        kernels=("InplaceScatterAdd",), grad=False, **FIXED),
    Row("scatter_update/in_place", _scattered("scatter_update"), _update_ref,
        uniform((5, 2), (4, 2)), kernels=("InplaceScatterUpdate",), grad=False, **FIXED),
    Row("deduplicate_slices", _dedup, _dedup_ref, uniform((4, 2)),
        kernels=("UniqueSegmentSum",), grad=False, **FIXED),
]
