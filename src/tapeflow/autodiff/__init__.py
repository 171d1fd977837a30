"""`tapeflow.autodiff`: reverse mode (tapes, functional API) and forward mode."""
from .custom import custom_gradient, recompute_grad, stop_gradient  # noqa: F401
from .forward import ForwardAccumulator  # noqa: F401
from .functional import (grad, gradients_function, hessian, hvp,  # noqa: F401
                         implicit_gradients, implicit_value_and_gradients, jacfwd, jacobian,
                         jvp, make_vjp, value_and_grad, value_and_gradients_function, vjp)
from .gradient_tape import GradientTape  # noqa: F401
from .unconnected import UnconnectedGradients  # noqa: F401
