"""The tracing compiler: `function` traces Python functions into cached graphs (FuncGraph),
compiled to flat programs over native arrays and differentiable to any order."""
from .graph import FuncGraph, Node  # noqa: F401
from .trace import (ConcreteFunction, Function, function, functions_run_eagerly,  # noqa: F401
                    init_scope, run_functions_eagerly)
