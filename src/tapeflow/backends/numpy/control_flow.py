"""Graph control flow has no NumPy kernels: If, While, WhileGrad and FusedElementwise run
the same way on every backend, defined once in tapeflow/function/control.py (their bodies
compiled by the tracing compiler, their few array operations this backend's own kernels:
Zeros, BroadcastTo, Add, InplaceAdd). This module stays so that the package's family
imports keep one module per family."""
