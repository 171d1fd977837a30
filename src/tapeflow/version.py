"""`tapeflow.version`: the version strings tutorials print (`tf.version.VERSION`).

VERSION is the installed package's version, as `tapeflow.__version__`; GRAPH_DEF_VERSION and
its bounds are TensorFlow 2.21's (the graph format version tapeflow follows).

Example:
    >>> tf.version.VERSION == tf.__version__
    True
"""
from ._core.version import version as _version

__all__ = ["VERSION", "GIT_VERSION", "COMPILER_VERSION", "GRAPH_DEF_VERSION",
           "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER"]

VERSION: str = _version()
GIT_VERSION: str = "unknown"  # a source tree or wheel: no git describe is recorded
COMPILER_VERSION: str = "none"  # pure Python: nothing was compiled
GRAPH_DEF_VERSION: int = 2474
GRAPH_DEF_VERSION_MIN_CONSUMER: int = 0
GRAPH_DEF_VERSION_MIN_PRODUCER: int = 0
