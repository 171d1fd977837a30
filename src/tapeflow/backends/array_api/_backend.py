"""ArrayAPIBackend: one backend class over any array-API namespace (API 12).

Its native arrays are the namespace's own (CuPy's on a GPU, array-api-strict's in CI).
Kernels are looked up by the name a backend is registered under, so setting `name` (which
the registry does right after building a backend) installs this package's kernel set
under that name: `register_backend("mine", lambda: ArrayAPIBackend(xp))` is all a user
writes.
"""
from __future__ import annotations

import importlib
import types
from typing import Any

import numpy as np

from ..._core.backends import Backend
from ..._core.memory import native_meta
from ._kernel import install_kernels


def _standard_namespace(namespace):
    """The array-API namespace of `namespace` (a module, or a module's name): through
    array_api_compat when it is installed (CuPy and NumPy need its wrappers), else the
    module itself, which must then follow the standard."""
    if isinstance(namespace, str):
        namespace = importlib.import_module(namespace)
    try:  # optional extra: only needed for libraries that are not array-API as they are
        import array_api_compat
    except ImportError:
        array_api_compat = None
    if array_api_compat is not None:
        return array_api_compat.array_namespace(namespace.asarray(0))
    if not hasattr(namespace, "__array_api_version__"):
        raise TypeError(f"ArrayAPIBackend: {getattr(namespace, '__name__', namespace)!r} is "
                        "not an array-API namespace; install array-api-compat "
                        "(pip install 'tapeflow[array-api]')")
    return namespace


class ArrayAPIBackend(Backend):
    """A backend whose native arrays belong to an array-API namespace `xp`.

    Ops without a kernel written against the standard run NumPy's kernel on a copy moved
    through DLPack (or the host), with a one-time warning naming the op
    (docs/backends.md lists them).
    Example:
        >>> import array_api_strict
        >>> tf.register_backend("strict", lambda: tf.backends.ArrayAPIBackend(
        ...     array_api_strict), priority=0)
        True
        >>> tf.set_backend("strict"); float(tf.reduce_sum(tf.ones([3])))
        3.0
    """

    device_type: str | None = None  # "GPU" for CuPy: then listed as a device

    def __init__(self, namespace: types.ModuleType | str) -> None:
        super().__init__()
        self.xp = xp = _standard_namespace(namespace)
        probe = xp.asarray(0.0)  # arrays live on the namespace's default device
        self.native_type = type(probe)
        self._name = "array_api"
        self._dtypes: dict = {}
        # CuPy and other device libraries cannot hand their memory to NumPy: they copy
        # to the host with their own call
        self._host = getattr(probe, "get", None) is not None and not isinstance(probe,
                                                                               np.ndarray)

    # The registry names a backend after building it: install the kernels under that name.
    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        install_kernels(value)

    # ------------------------------------------------------------ conversions
    def dtype(self, dtype) -> Any:
        """The namespace's dtype for a tapeflow DType (TypeError when it has none)."""
        d = self._dtypes.get(dtype)
        if d is None:
            d = getattr(self.xp, dtype.name, None)
            if d is None:
                raise TypeError(f"the {self.name!r} backend ({self.xp.__name__}) has no "
                                f"dtype {dtype.name}")
            self._dtypes[dtype] = d
        return d

    def to_native(self, values):
        if type(values) is self.native_type:
            return values
        arr = np.asarray(values)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        try:
            if arr.dtype.kind == "V":  # ml_dtypes' bfloat16: no array library knows it
                raise TypeError(arr.dtype.name)
            return self.xp.asarray(arr)
        except TypeError:
            raise TypeError(f"the {self.name!r} backend ({self.xp.__name__}) has no dtype "
                            f"{arr.dtype.name}") from None

    def from_native(self, native) -> np.ndarray:
        """A NumPy copy of a native array (the tensor's value must not change with it)."""
        if self._host:
            return np.asarray(native.get())
        return np.array(np.from_dlpack(native), copy=True)

    def move_from(self, other: Backend, data_id: int, dtype) -> None:
        # through DLPack, without a copy where both sides allow it (NumPy into
        # array-api-strict, one GPU library into another); else through the host
        source = other.native(data_id)
        try:
            arr = self.xp.from_dlpack(source)
        except Exception:  # noqa: BLE001 - another device or no DLPack: copy via the host
            arr = None
        if arr is None or type(arr) is not self.native_type:
            arr = self.to_native(other.read(data_id))
        self._data[data_id] = arr

    def memory(self) -> dict:
        return {"num_data_ids": len(self._data),
                "num_bytes": sum(native_meta(v)[1] for v in self._data.values())}

    def __repr__(self) -> str:
        return f"ArrayAPIBackend({self.xp.__name__}, name={self.name!r})"

