"""`tapeflow.config`: debugging switches."""
from __future__ import annotations

import os
import types

from ._core import dispatch as _dispatch
from ._core import context as _ctx
from ._core.context import ctx, debug_on
from ._core.convert import convert_to_tensor
from ._core.tensor import Tensor
from .autodiff import explain, gradient_tape
from .function import optimizer as _optimizer
from .function.trace import functions_run_eagerly, run_functions_eagerly  # noqa: F401


def set_debug(on: bool = True) -> None:
    """Check every kernel's outputs for NaN/Inf (forward and backward) and raise naming
    the op. Off by default; costs nothing when off. Example: `tf.config.set_debug(True)`."""
    _dispatch.set_debug(on)


def is_debug() -> bool:
    return debug_on[0]


def check_numerics(tensor, message: str = "") -> Tensor:
    """Return `tensor`, raising InvalidArgumentError if it holds NaN or Inf.

    Example: `tf.config.check_numerics(tf.constant([1.0]))`.
    """
    t = convert_to_tensor(tensor)
    try:
        _dispatch.check_numerics("CheckNumerics", {"tensor": t}, [t], "forward")
    except Exception as e:
        raise type(e)(f"{message}: {e}" if message else str(e)) from None
    return t


def executing_eagerly() -> bool:
    """False while a `function` is being traced (ops build a graph), True otherwise,
    including inside a function run eagerly by `run_functions_eagerly(True)`; as TF's
    `tf.executing_eagerly()`. Example: `tf.executing_eagerly()` -> True."""
    return ctx.graph is None


def explain_none_gradients(on: bool = True) -> None:
    """Log `tape.explain()`'s report as a warning whenever `gradient` returns None for a
    source, and record the user's source line of every op so reports can name it (off by
    default: it costs a stack walk per recorded op). Example:
    `tf.config.explain_none_gradients(True)`."""
    explain.explain_enabled[0] = bool(on)
    gradient_tape.record_sites[0] = bool(on)


if os.environ.get("TAPEFLOW_DEBUG", "") not in ("", "0"):
    set_debug(True)


# --------------------------------------------------------------------------- devices (API §7.6)
from ._core.device import (LogicalDevice, LogicalDeviceConfiguration,  # noqa: E402,F401
                           PhysicalDevice, get_logical_device_configuration,
                           get_soft_device_placement, get_visible_devices,
                           list_logical_devices, list_physical_devices,
                           set_logical_device_configuration, set_soft_device_placement,
                           set_visible_devices)
from ._core import device as _device  # noqa: E402

# The `tf.config.experimental` names of TF's usual GPU set-up code (the "virtual device"
# names are TensorFlow's older spellings of the logical device ones).
def enable_op_determinism() -> None:
    """Make every op deterministic, as TensorFlow's: the same inputs give the same bits on
    every run. tapeflow's ops already are (API 6.7: sums in orders fixed by shapes,
    choices made from shapes and the thread setting, never from timings); this adds
    TensorFlow's checks: a random op with neither a global nor an op seed raises
    RuntimeError, and `tf.data`'s parallel transformations keep their input order even
    with `deterministic=False`.

    Example:
        >>> tf.keras.utils.set_random_seed(1)
        >>> tf.config.experimental.enable_op_determinism()
    """
    _ctx.op_determinism[0] = True


def disable_op_determinism() -> None:
    """Undo `enable_op_determinism` (ops stay deterministic; the checks go)."""
    _ctx.op_determinism[0] = False


def is_op_determinism_enabled() -> bool:
    """Whether `enable_op_determinism` is in force."""
    return _ctx.op_determinism[0]


experimental = types.SimpleNamespace(
    enable_op_determinism=enable_op_determinism, disable_op_determinism=disable_op_determinism,
    is_op_determinism_enabled=is_op_determinism_enabled,
    list_physical_devices=list_physical_devices, list_logical_devices=list_logical_devices,
    get_visible_devices=get_visible_devices, set_visible_devices=set_visible_devices,
    set_memory_growth=_device.set_memory_growth, get_memory_growth=_device.get_memory_growth,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration,
    set_virtual_device_configuration=set_logical_device_configuration,
    get_virtual_device_configuration=get_logical_device_configuration)

# `tf.config.threading`: how many threads one op (intra) and independent ops (inter) use;
# 0 lets tapeflow choose. A multi-process distribution strategy divides the cores of a
# host among its processes unless the intra-op number was set.
threading = types.SimpleNamespace(
    set_intra_op_parallelism_threads=lambda num_threads: _ctx.set_parallelism(
        "intra_op", num_threads),
    get_intra_op_parallelism_threads=lambda: _ctx.parallelism["intra_op"],
    set_inter_op_parallelism_threads=lambda num_threads: _ctx.set_parallelism(
        "inter_op", num_threads),
    get_inter_op_parallelism_threads=lambda: _ctx.parallelism["inter_op"])

# `tf.config.optimizer`: graph optimization passes switched by TensorFlow's option names
# (API §6.5).
optimizer = types.SimpleNamespace(
    set_experimental_options=_optimizer.set_experimental_options,
    get_experimental_options=_optimizer.get_experimental_options)
