"""The Backend protocol, the NumPy backend's data store, and the backend registry."""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Callable

import numpy as np

from .errors import NotFoundError

_data_ids = itertools.count(1)  # globally unique, so a data id survives a move


class Backend:
    """Holds tensor data by data id; kernels run on its native arrays.

    Subclasses override `to_native`/`from_native` when their arrays are not NumPy's.
    Example:
        >>> b = NumpyBackend(); i = b.write(np.ones(2), (2,), None); b.read(i)
        array([1., 1.])
    """

    name = "?"
    native_type: type = np.ndarray

    def __init__(self) -> None:
        self._data: dict[int, Any] = {}

    # --- the protocol of API §5.3
    def write(self, values, shape, dtype) -> int:
        data_id = next(_data_ids)
        self._data[data_id] = values
        return data_id

    def read(self, data_id) -> np.ndarray:
        return self.from_native(self._data[data_id])

    def dispose_data(self, data_id) -> None:
        self._data.pop(data_id, None)

    def move(self, data_id, values, shape, dtype) -> None:
        self._data[data_id] = self.to_native(values)

    def num_data_ids(self) -> int:
        return len(self._data)

    def memory(self) -> dict:
        return {"num_data_ids": len(self._data),
                "num_bytes": sum(int(getattr(v, "nbytes", 0)) for v in self._data.values())}

    def dispose(self) -> None:
        self._data.clear()

    # --- native array conversion
    def native(self, data_id):
        return self._data[data_id]

    def to_native(self, values: np.ndarray):
        return values

    def from_native(self, native) -> np.ndarray:
        return native

    def move_from(self, other: "Backend", data_id: int, dtype) -> None:
        """Take over `data_id` from backend `other` (which then disposes its copy): the
        host round trip through NumPy here; backends that can exchange arrays through
        DLPack override it."""
        values = other.read(data_id)
        self.move(data_id, values, values.shape, dtype)


class NumpyBackend(Backend):
    """The default CPU backend: native arrays are `numpy.ndarray`."""

    name = "numpy"

    def to_native(self, values):
        if type(values) is bytes:  # a string tensor's element (np.asarray: a bytes_ array)
            out = np.empty((), dtype=object)
            out[()] = values
            return out
        return np.asarray(values)

    def move_from(self, other: Backend, data_id: int, dtype) -> None:
        # another CPU library's array (array-api-strict, a CPU torch tensor) comes over
        # through DLPack without a copy; a GPU array has to be copied to the host
        source = other.native(data_id)
        try:
            arr = np.from_dlpack(source)
        except Exception:  # noqa: BLE001 - not on the CPU, or no DLPack: the host copy
            super().move_from(other, data_id, dtype)
            return
        self._data[data_id] = arr if arr.flags.writeable else arr.copy()


def _complete_protocol(inst) -> None:
    """Give a backend written against API §5.3 alone (write/read/dispose_data/move/...)
    the engine's conveniences, with NumPy arrays as its native arrays."""
    defaults = {"native_type": np.ndarray, "to_native": np.asarray,
                "from_native": np.asarray, "native": getattr(inst, "read", None)}
    for attr, value in defaults.items():
        if not hasattr(inst, attr):
            try:
                setattr(inst, attr, value)
            except AttributeError:
                raise TypeError(f"backend {type(inst).__name__} lacks {attr!r} and does not "
                                "accept new attributes; subclass tapeflow's Backend") from None


class _Entry:
    __slots__ = ("name", "factory", "priority", "instance")

    def __init__(self, name, factory, priority):
        self.name, self.factory, self.priority, self.instance = name, factory, priority, None


class BackendRegistry:
    """Factories by name; backends are built lazily, highest priority first."""

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.active: Backend | None = None
        self.active_name: str | None = None
        self.on_activate: list[Callable[[str, Backend], None]] = []
        self.on_remove: list[Callable[[str, Backend], None]] = []

    def register(self, name: str, factory: Callable[[], Backend], priority: int = 1) -> bool:
        if name in self.entries:
            warnings.warn(f"register_backend: backend {name!r} is already registered; "
                          "remove it first to replace it", stacklevel=3)
            return False
        self.entries[name] = _Entry(name, factory, priority)
        return True

    def find(self, name: str) -> Backend | None:
        entry = self.entries.get(name)
        if entry is None:
            return None
        if entry.instance is None:
            try:
                inst = entry.factory()
            except Exception as e:  # noqa: BLE001 - any failing factory is skipped
                warnings.warn(f"backend {name!r} failed to initialize and is skipped: "
                              f"{type(e).__name__}: {e}", stacklevel=3)
                return None
            try:  # kernels are looked up by the name the backend was registered under
                inst.name = name
            except AttributeError:
                pass
            _complete_protocol(inst)
            entry.instance = inst
        return entry.instance

    def ensure_active(self) -> Backend:
        if self.active is None:
            for entry in sorted(self.entries.values(), key=lambda e: -e.priority):
                inst = self.find(entry.name)
                if inst is not None:
                    self.set(entry.name)
                    break
            else:
                raise NotFoundError("no backend could be initialized")
        return self.active

    def set(self, name: str) -> bool:
        if name not in self.entries:
            raise NotFoundError(f"set_backend: no backend named {name!r}; registered: "
                                f"{sorted(self.entries)}")
        inst = self.find(name)
        if inst is None:
            return False
        if self.active_name != name:
            self.active, self.active_name = inst, name
            for hook in self.on_activate:
                hook(name, inst)
        return True

    def remove(self, name: str) -> None:
        entry = self.entries.pop(name, None)
        if entry is None:
            raise NotFoundError(f"remove_backend: no backend named {name!r}")
        if entry.instance is not None:
            for hook in self.on_remove:
                hook(name, entry.instance)
            entry.instance.dispose()
        if self.active_name == name:
            self.active, self.active_name = None, None

    def names(self) -> list[str]:
        return list(self.entries)


REGISTRY = BackendRegistry()
REGISTRY.register("numpy", NumpyBackend, priority=1)


# --------------------------------------------------------------------------- public API


def register_backend(name: str, factory: Callable[[], Backend], priority: int = 1) -> bool:
    """Register a backend factory; the highest priority backend that builds is the default.

    Example:
        >>> tf.register_backend("numpy2", MyBackend, priority=0)
        True
    """
    return REGISTRY.register(name, factory, priority)


def set_backend(name: str) -> bool:
    """Make `name` the active backend (building it if needed); False if it fails to build.

    Example: `tf.set_backend("numpy")`.
    """
    return REGISTRY.set(name)


def get_backend() -> str:
    """The active backend's name. Example: `tf.get_backend()` -> 'numpy'."""
    REGISTRY.ensure_active()
    return REGISTRY.active_name


def backend_names() -> list[str]:
    """Names of all registered backends. Example: `tf.backend_names()` -> ['numpy']."""
    return REGISTRY.names()


def find_backend(name: str) -> Backend | None:
    """The backend object named `name`, initialized if needed (None if unknown/failing).

    Example: `tf.find_backend("numpy").num_data_ids()`.
    """
    return REGISTRY.find(name)


def remove_backend(name: str) -> None:
    """Remove a backend; tensors living there are moved to another backend first.

    Example: `tf.remove_backend("numpy2")`.
    """
    REGISTRY.remove(name)
