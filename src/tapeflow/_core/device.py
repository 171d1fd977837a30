"""Devices: TF device strings mapped onto registered backends, and the device listings.

A device is a (type, index) pair such as CPU:0. Device type T's devices are the registered
backends that claim T, in registration order: a backend claims T with a `device_type`
attribute on its class (or factory); the built-in "numpy" backend is CPU:0. `device(name)`
makes the named device's backend the active one for the block (API §7.6).

Logical devices. A physical device is one logical device unless
`set_logical_device_configuration` splits it into several (TensorFlow's virtual devices,
used to run replicas of a distribution strategy on one CPU): logical devices of a type are
numbered across the physical ones in order, and each runs on its physical device's backend.

Soft placement (on by default, as in TensorFlow): a well-formed device string naming a
device that does not exist here ("GPU:0" without a GPU) places the block on the first
device of that type, or else on CPU:0; with it off, that raises InvalidArgumentError.
"""
from __future__ import annotations

import collections
import re
import threading

from .backends import REGISTRY
from .errors import InvalidArgumentError

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(collections.namedtuple(
        "LogicalDeviceConfiguration",
        ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """One logical device to make of a physical device (TF's; `memory_limit` in MB, GPUs
    only; the experimental fields are recorded, not used).

    Example:
        >>> cpu = tf.config.list_physical_devices("CPU")[0]
        >>> tf.config.set_logical_device_configuration(
        ...     cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        >>> [d.name for d in tf.config.list_logical_devices("CPU")]
        ['/device:CPU:0', '/device:CPU:1']
    """

    def __new__(cls, memory_limit=None, experimental_priority=None,
                experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority,
                               experimental_device_ordinal)

_BUILTIN_TYPES = {"numpy": "CPU"}
_TF_TYPES = frozenset({"CPU", "GPU", "TPU"})  # names soft placement may replace
_LOCAL = {"job": "localhost", "replica": "0", "task": "0"}


def _device_type_of(name: str, entry) -> str | None:
    claimed = getattr(entry.instance, "device_type", None) or getattr(
        entry.factory, "device_type", None)
    claimed = claimed if isinstance(claimed, str) else None
    return (claimed or _BUILTIN_TYPES.get(name) or "").upper() or None


def devices(visible_only: bool = False) -> list[tuple[str, int, str]]:
    """Every device as (type, index, backend name), types in first-registration order;
    with `visible_only`, those set_visible_devices left visible."""
    out, counts = [], {}
    for name, entry in REGISTRY.entries.items():
        kind = _device_type_of(name, entry)
        if kind is not None:
            index = counts.get(kind, 0)
            counts[kind] = index + 1
            if not (visible_only and f"/physical_device:{kind}:{index}" in _hidden):
                out.append((kind, index, name))
    return out


_hidden: set = set()  # physical device names hidden by set_visible_devices
_memory_growth: dict = {}  # physical device name -> bool
_logical_config: dict = {}  # physical device name -> [LogicalDeviceConfiguration]
_soft_placement = [True]
_placement = threading.local()  # .stack: the logical devices of the enclosing `device`s


def logical_devices() -> list[tuple[str, int, str]]:
    """Every visible logical device as (type, index, backend name): each physical device
    once, or as many times as its logical device configuration says."""
    out, counts = [], {}
    for kind, index, backend in devices(True):
        for _ in range(len(_logical_config.get(f"/physical_device:{kind}:{index}", ())) or 1):
            number = counts.get(kind, 0)
            counts[kind] = number + 1
            out.append((kind, number, backend))
    return out


def _known() -> str:
    return ", ".join(f"/device:{t}:{i}" for t, i, _ in logical_devices()) or "none"


def parse(spec: str) -> tuple[str | None, int | None]:
    """(device type, index) of a TF device string; None for parts it leaves open.

    Accepts "CPU:0", "/cpu:0", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"
    and "CPU:*"; raises ValueError naming the string for anything else.
    """
    kind = index = None
    for part in spec.split("/"):
        if not part:
            continue
        fields = part.split(":")
        key = fields[0].lower()
        if len(fields) == 2 and key in _LOCAL:
            if fields[1] != _LOCAL[key]:
                raise ValueError(f"device: {spec!r} names {key} {fields[1]!r}, but only the "
                                 f"local process ({key}:{_LOCAL[key]}) is available; known "
                                 f"devices: {_known()}")
            continue
        if len(fields) == 3 and key == "device":
            fields = fields[1:]
        elif len(fields) not in (1, 2) or not re.fullmatch(r"[A-Za-z_]+", fields[0]):
            raise ValueError(f"device: cannot parse {part!r} in device string {spec!r}; "
                             f"known devices: {_known()}")
        if kind is not None:
            raise ValueError(f"device: {spec!r} names more than one device type")
        kind = fields[0].upper()
        if len(fields) == 2 and fields[1] != "*":
            if not fields[1].isdigit():
                raise ValueError(f"device: bad device index {fields[1]!r} in {spec!r}; "
                                 f"known devices: {_known()}")
            index = int(fields[1])
    return kind, index


def resolve(spec: str) -> tuple[str, int, str] | None:
    """The logical device (type, index, backend name) that runs ops placed on `spec`; None
    when the spec names no device. A missing device is replaced under soft placement (see
    the module's docstring) and raises InvalidArgumentError without it."""
    kind, index = parse(spec)
    if kind is None:
        return None
    known = logical_devices()
    for found in known:
        if found[0] == kind and (index is None or found[1] == index):
            return found
    if kind not in _TF_TYPES and all(t != kind for t, _, _ in devices()):
        raise ValueError(f"device: unknown device type {kind!r} in device string {spec!r} "
                         f"(TensorFlow's are {sorted(_TF_TYPES)}, others come from backends); "
                         f"known devices: {_known()}")
    if not _soft_placement[0]:
        raise InvalidArgumentError(
            f"device: cannot place ops on {spec!r}: no device of type {kind}"
            f"{'' if index is None else f' with index {index}'} exists here and soft device "
            f"placement is off (tf.config.set_soft_device_placement(True) would run them on "
            f"another device); known devices: {_known()}")
    same_type = [d for d in known if d[0] == kind]
    return (same_type or [d for d in known if d[0] == "CPU"] or known)[0]


def backend_for(spec: str) -> str | None:
    """The backend name that runs ops placed on `spec` (None: the spec names no device)."""
    found = resolve(spec)
    return None if found is None else found[2]


def current_device() -> str:
    """The logical device of the innermost `device` block ("/device:CPU:1"), or "" outside
    any. Example: `with tf.device("CPU:0"): current_device()` -> "/device:CPU:0"."""
    stack = getattr(_placement, "stack", None)
    return stack[-1] if stack else ""


def set_soft_device_placement(enabled: bool) -> None:
    """Whether a device that does not exist here is replaced by one that does (True, the
    default, as in TensorFlow) or raises InvalidArgumentError.

    Example:
        >>> tf.config.set_soft_device_placement(False)
        >>> tf.device("GPU:0").__enter__()   # raises InvalidArgumentError without a GPU
    """
    _soft_placement[0] = bool(enabled)


def get_soft_device_placement() -> bool:
    """Whether soft device placement is on (the default)."""
    return _soft_placement[0]


class device:
    """Run the ops of a block on the named device's backend; the previous backend is
    restored on exit, also when the block raises. "CPU:0" is the numpy backend.

    Example:
        >>> with tf.device("/CPU:0"):
        ...     y = tf.constant([1.0]) * 2.0
    """

    def __init__(self, device_name):
        if callable(device_name):
            raise RuntimeError("tf.device does not support functions when eager execution "
                               "is enabled; use it as a context manager: with tf.device(...)")
        if device_name is not None and not isinstance(device_name, str):
            to_string = getattr(device_name, "to_string", None)  # a DeviceSpec-like object
            if to_string is None:
                raise TypeError(f"device: device_name must be a string, got "
                                f"{type(device_name).__name__}")
            device_name = to_string()
        self.name = device_name or ""
        parse(self.name)  # a malformed string raises here; a missing device on entry
        self._saved: list = []

    def __enter__(self) -> "device":
        found = resolve(self.name) if self.name else None
        REGISTRY.ensure_active()
        previous = REGISTRY.active_name
        if found is not None and found[2] != previous:
            if not REGISTRY.set(found[2]):
                raise ValueError(f"device: the backend {found[2]!r} of device "
                                 f"{self.name!r} failed to initialize")
        self._saved.append(previous)
        stack = _placement.__dict__.setdefault("stack", [])
        stack.append(f"/device:{found[0]}:{found[1]}" if found else current_device())
        return self

    def __exit__(self, *exc) -> bool:
        _placement.stack.pop()
        previous = self._saved.pop()
        if previous is not None and previous != REGISTRY.active_name \
                and previous in REGISTRY.entries:
            REGISTRY.set(previous)
        return False

    def __repr__(self) -> str:
        return f"device({self.name!r})"


def list_physical_devices(device_type: str | None = None) -> list:
    """The devices, as `PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")`,
    only those of `device_type` if given (e.g. "GPU": [] on the numpy backend)."""
    return [PhysicalDevice(f"/physical_device:{t}:{i}", t) for t, i, _ in devices()
            if device_type is None or t == device_type]


def list_logical_devices(device_type: str | None = None) -> list:
    """The logical devices, as `LogicalDevice(name="/device:CPU:0", device_type="CPU")`:
    each visible physical device once, or as split by set_logical_device_configuration."""
    return [LogicalDevice(f"/device:{t}:{i}", t) for t, i, _ in logical_devices()
            if device_type is None or t == device_type]


def set_logical_device_configuration(device, logical_devices) -> None:
    """Split the physical `device` into one logical device per LogicalDeviceConfiguration
    in `logical_devices` (an empty list or None: back to one). Unlike TensorFlow, which
    allows this only before its runtime starts, tapeflow allows it at any time; devices
    are looked up when a `device` block is entered.

    Example:
        >>> cpu = tf.config.list_physical_devices("CPU")[0]
        >>> tf.config.set_logical_device_configuration(
        ...     cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        >>> with tf.device("/CPU:1"):
        ...     y = tf.constant(1.0) + 1.0
    """
    name = _physical("set_logical_device_configuration", device)
    configs = list(logical_devices or ())
    for config in configs:
        if not isinstance(config, LogicalDeviceConfiguration):
            raise ValueError(f"set_logical_device_configuration: expected a list of "
                             f"LogicalDeviceConfiguration, got {type(config).__name__}")
        if device.device_type == "CPU" and config.memory_limit is not None:
            raise ValueError("Setting memory limit on CPU virtual devices is currently not "
                             "supported")
        if device.device_type != "CPU" and config.memory_limit is None:
            raise ValueError(f"set_logical_device_configuration: a memory_limit is required "
                             f"for the {device.device_type} virtual devices of {name}")
    if configs:
        _logical_config[name] = configs
    else:
        _logical_config.pop(name, None)


def get_logical_device_configuration(device) -> list | None:
    """The LogicalDeviceConfiguration list set for the physical `device`, or None."""
    configs = _logical_config.get(_physical("get_logical_device_configuration", device))
    return list(configs) if configs else None


def get_visible_devices(device_type: str | None = None) -> list:
    """The devices ops may be placed on (all, unless set_visible_devices hid some), as
    PhysicalDevice tuples, only those of `device_type` if given."""
    return [PhysicalDevice(f"/physical_device:{t}:{i}", t) for t, i, _ in devices(True)
            if device_type is None or t == device_type]


def _physical(op: str, device) -> str:
    names = [d.name for d in list_physical_devices()]
    name = getattr(device, "name", None)
    if name not in names:
        raise ValueError(f"{op}: unrecognized device {device!r}; physical devices: {names}")
    return name


def set_visible_devices(devices, device_type: str | None = None) -> None:
    """Make only `devices` (PhysicalDevice tuples; of `device_type` if given) visible:
    `tf.device` then refuses the hidden ones. The CPU cannot be hidden: it runs the numpy
    backend every op falls back to. Example: `tf.config.set_visible_devices([], "GPU")`."""
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    keep = {_physical("set_visible_devices", d) for d in devices}
    if device_type is not None and any(not n.split(":")[-2] == device_type for n in keep):
        raise ValueError(f"set_visible_devices: {sorted(keep)} are not all of type "
                         f"{device_type!r}")
    affected = {d.name for d in list_physical_devices(device_type)}
    hidden = (_hidden - affected) | (affected - keep)
    if any(":CPU:" in n for n in hidden):
        raise ValueError("set_visible_devices: the CPU device cannot be hidden (it runs the "
                         "numpy backend)")
    _hidden.clear()
    _hidden.update(hidden)


def set_memory_growth(device, enable: bool) -> None:
    """Record the memory-growth flag of a GPU-like device (backends allocate on demand, so
    it changes nothing); raises ValueError for CPU and unknown devices, as TF does."""
    name = _physical("set_memory_growth", device)
    if device.device_type == "CPU":
        raise ValueError("set_memory_growth: cannot set memory growth on non-GPU devices")
    _memory_growth[name] = bool(enable)


def get_memory_growth(device) -> bool:
    return _memory_growth.get(_physical("get_memory_growth", device), False)
