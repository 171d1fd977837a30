"""NumPy kernels, one module per op family, registered for backend "numpy"."""
import warnings

# NumPy reports floating-point events (log(0), 1/0, sqrt(-1)) as RuntimeWarnings attributed
# to the calling frame, a kernel here. TensorFlow returns inf/nan silently, and so do these
# kernels; a filter by module costs nothing per call (np.errstate costs ~0.8 us a call).
# Users' own NumPy code keeps its warnings.
def silence_kernel_warnings() -> None:
    """Install the filter (done at import; pytest and `catch_warnings` replace filters)."""
    warnings.filterwarnings("ignore", category=RuntimeWarning,
                            module=r"tapeflow\.backends\.numpy")


silence_kernel_warnings()
# Importing the family modules registers their kernels.
from . import (array, conv, creation, indexing, linalg, math, nn,  # noqa: E402,F401
               random, reduction, signal, state, strings, tensor_array)
