"""Graph control flow has no array-API kernels: If, While, WhileGrad and FusedElementwise
run the same way on every backend, defined once in tapeflow/function/control.py (their
bodies compiled by the tracing compiler for this backend, so a traced loop stays on the
device; their few array operations this backend's own kernels). This module stays so
that the package's family imports keep one module per family."""
