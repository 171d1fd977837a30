"""`tapeflow.engine`: the dispatch path and engine controls."""
from ._core.backends import (backend_names, find_backend, get_backend,  # noqa: F401
                             register_backend, remove_backend, set_backend)
from ._core.convert import convert_to_tensor  # noqa: F401
from ._core.dispatch import run_kernel  # noqa: F401
from ._core.memory import dispose, keep, memory, tidy  # noqa: F401
from ._core.profiler import profile, time  # noqa: F401
