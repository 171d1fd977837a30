"""`tapeflow.math`: elementwise math, reductions and scans (re-exports only)."""
from .ops.math import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .ops.nn import log_softmax, softmax  # noqa: F401,E402  (TF has tf.math aliases)
from .ops.indexing import bincount, segment_sum, unsorted_segment_sum  # noqa: F401,E402
from .ops.segment import *  # noqa: F401,F403,E402
from .ops.nn import in_top_k, zero_fraction  # noqa: F401,E402  (tf.math aliases of tf.nn ops)
