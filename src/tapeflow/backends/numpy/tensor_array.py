"""NumPy kernel of TensorListResize: the buffer op behind graph-mode TensorArrays."""
import numpy as np

from ..._core.errors import InvalidArgumentError
from ._kernel import kernel


@kernel("TensorListResize")
def resize(inputs, attrs, backend):
    x, axis = inputs["x"], attrs["axis"]
    n = int(inputs["size"])
    if n < 0:
        raise InvalidArgumentError(f"TensorArray: size must be >= 0, got {n}")
    have = x.shape[axis]
    if n <= have:
        return np.ascontiguousarray(x[(slice(None),) * axis + (slice(0, n),)])
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - have)
    return np.pad(x, pad)
