"""`keras.ops`: Keras 3's backend-agnostic functions (NumPy-style, `nn`, core, math,
linear algebra) over tapeflow's ops. Each works on tensors and on `KerasTensor`s: on the
latter it records an Operation in the functional graph (see operation.py), as Keras 3.

Example:
    >>> x = tf.keras.Input((4,))
    >>> y = tf.keras.ops.softmax(tf.keras.ops.reshape(x, (-1, 2, 2)))
    >>> tf.keras.Model(x, y)(tf.zeros([1, 4])).numpy()
    array([[[0.5, 0.5],
            [0.5, 0.5]]], dtype=float32)
"""
from . import core, image, linalg, math, nn, numpy, operation, operators  # noqa: F401
from .core import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .numpy import *  # noqa: F401,F403

# image functions stay under `keras.ops.image` only, as in Keras 3
__all__ = sorted({name for module in (core, linalg, math, nn, numpy)
                  for name in module.__all__} | {"image"})
