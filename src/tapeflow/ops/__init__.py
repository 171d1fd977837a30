"""Op families. Each op is defined once in its family module: public function, shape
rule, VJP rule and JVP rule side by side; its kernels live in backends/<name>/.

Importing this package defines every op family's ops and installs Tensor's operators.
"""
from __future__ import annotations

from . import (array, conv, creation, image, indexing, io, linalg, math, nn,  # noqa: F401
               random, reduction, signal, state, strings, tensor_array)
from . import operators  # noqa: F401  (after the families: it installs their functions)
