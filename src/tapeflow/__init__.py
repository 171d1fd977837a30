"""tapeflow: an eager tensor library with tape-based automatic differentiation.

Example:
    >>> import tapeflow as tf
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x).numpy()
    6.0
"""
from . import backends as _backends  # noqa: F401
from . import ops as _ops  # noqa: F401
from . import config, engine, errors, linalg, math, nn, random  # noqa: F401
from ._core import nest  # noqa: F401
from ._core.backends import (backend_names, find_backend, get_backend,  # noqa: F401
                             register_backend, remove_backend, set_backend)
from ._core.convert import (convert_to_tensor, from_dlpack,  # noqa: F401
                            register_tensor_conversion_function)
from ._core.dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128,  # noqa: F401
                           float16, float32, float64, int8, int16, int32, int64, uint8,
                           string, uint16, uint32, uint64)
from ._core.indexed_slices import IndexedSlices
from ._core.memory import dispose, keep, memory, tidy  # noqa: F401
from ._core.profiler import profile, time  # noqa: F401
from ._core.registry import (get_kernel, register_gradient, register_jvp,  # noqa: F401
                             register_kernel, unregister_kernel)
from ._core.tensor import Tensor, TensorShape, TensorSpec
from ._core.variable import Variable  # noqa: F401
from .backends import numpy as _numpy_kernels  # noqa: F401
from .ops.array import *  # noqa: F401,F403
from .ops.creation import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.math import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403

newaxis = None
from . import autodiff, test  # noqa: F401,E402
from .function import function, init_scope  # noqa: F401,E402
from .function.control_flow import cond, while_loop  # noqa: F401,E402
from .autodiff import (GradientTape, UnconnectedGradients, custom_gradient,  # noqa: F401,E402
                       recompute_grad)
from . import train  # noqa: F401,E402
from .train.module import Module, name_scope  # noqa: F401,E402
from . import initializers, layers  # noqa: F401,E402
from .ops.io import print  # noqa: F401,E402,A004
from .function.tensor_array import TensorArray  # noqa: F401,E402
from .function.map_fn import foldl, foldr, map_fn, scan, vectorized_map  # noqa: F401,E402
from .function.py_function import py_function  # noqa: F401,E402
from . import losses, optimizers  # noqa: F401,E402
from . import data, summary  # noqa: F401,E402
from . import distribute  # noqa: F401,E402
from . import keras  # noqa: F401,E402
from . import saved_model  # noqa: F401,E402
from . import onnx  # noqa: F401,E402
from .keras import metrics  # noqa: F401,E402  (tf.metrics is Keras's, as in TF 2)
from ._core.device import device  # noqa: F401,E402
from . import dtypes, image, strings, version  # noqa: F401,E402
from . import io  # noqa: F401,E402

from . import autograph  # noqa: F401,E402
from . import signal  # noqa: F401,E402
from ._core.tensor import is_tensor  # noqa: F401,E402
from . import types  # noqa: F401,E402
from . import debugging  # noqa: F401,E402
from .config import executing_eagerly  # noqa: F401,E402

from ._core.version import version as _version  # noqa: E402

__version__ = _version()
from .function.branching import case, control_dependencies, switch_case  # noqa: F401,E402
from . import sparse  # noqa: F401,E402
from .ops.sparse import SparseTensor, SparseTensorSpec  # noqa: F401,E402
from . import ragged  # noqa: F401,E402
from .ops.ragged import RaggedTensor, RaggedTensorSpec  # noqa: F401,E402
# (the reductions that also take RaggedTensors, as TensorFlow's dispatch does)
from .ops.ragged import (reduce_max, reduce_mean, reduce_min, reduce_prod,  # noqa: F401,E402
                         reduce_sum)
