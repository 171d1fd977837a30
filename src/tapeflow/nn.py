"""`tapeflow.nn`: activations, losses, normalization, convolution and pooling."""
from .ops.nn import *  # noqa: F401,F403
from .ops.conv import *  # noqa: F401,F403
from .ops.random import dropout  # noqa: F401  (seeded; lives with the random ops)
from .ops.reduction import l2_normalize, top_k  # noqa: F401,E402  (TF has tf.nn aliases)
from .ops.math import softsign, tanh  # noqa: F401,E402  (tf.nn.softsign, tf.nn.tanh)
from .distribute.strategy import compute_average_loss  # noqa: F401,E402  (needs the strategy)
