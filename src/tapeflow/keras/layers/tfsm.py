"""Keras 3's TFSMLayer: a SavedModel's endpoint as a layer (`Model.export`'s "serve", or
any restored function or signature), its variables as the layer's weights."""
from __future__ import annotations

import os

from ...saved_model import load
from ..layer import Layer
from ..saving import in_safe_mode

__all__ = ["TFSMLayer"]


def _endpoint(obj, name: str):
    if name in getattr(obj, "_children", {}):
        return obj._children[name]
    if hasattr(obj, name):
        return getattr(obj, name)
    signatures = getattr(obj, "signatures", {})
    if name in signatures:
        return signatures[name]
    raise ValueError(f"TFSMLayer: endpoint {name!r} is not a function of the loaded "
                     "SavedModel nor one of its signatures; pick another with "
                     f"`call_endpoint`. Its signatures: {list(signatures.keys())}")


class TFSMLayer(Layer):
    """A layer that calls an endpoint of a SavedModel (as Keras 3's): `call_endpoint`
    ("serve" for `Model.export`'s artifacts, "serving_default" for many others) runs in
    inference, `call_training_endpoint` (if given) when called with `training=True`. The
    endpoints' variables are the layer's weights, so the layer can be fine-tuned.

    Example:
        >>> model.export("/tmp/artifact")
        >>> layer = tf.keras.layers.TFSMLayer("/tmp/artifact")
        >>> layer(tf.ones([2, 4])).shape
        TensorShape([2, 3])
    """

    def __init__(self, filepath, call_endpoint: str = "serve",
                 call_training_endpoint: str | None = None, trainable: bool = True,
                 name: str | None = None, dtype=None):
        super().__init__(trainable=trainable, name=name, dtype=dtype)
        self._reloaded_obj = load(os.fspath(filepath))
        self.filepath = filepath
        self.call_endpoint = call_endpoint
        self.call_training_endpoint = call_training_endpoint
        self.call_endpoint_fn = _endpoint(self._reloaded_obj, call_endpoint)
        fns = [self.call_endpoint_fn]
        if call_training_endpoint:
            self.call_training_endpoint_fn = _endpoint(self._reloaded_obj,
                                                       call_training_endpoint)
            fns.append(self.call_training_endpoint_fn)
        # the endpoints' own variables (not copies): training the layer trains what the
        # restored functions read; trainable ones first, as Keras 3 adds them
        found: list = []
        for fn in fns:
            for v in getattr(fn, "variables", []):
                if not any(v is w for w in found):
                    found.append(v)
        for v in [v for v in found if v.trainable] + [v for v in found if not v.trainable]:
            self._weights.append(v)
        self.built = True

    def call(self, inputs, training=False, **kwargs):
        if training and self.call_training_endpoint:
            return self.call_training_endpoint_fn(inputs, **kwargs)
        return self.call_endpoint_fn(inputs, **kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), "filepath": self.filepath,
                "call_endpoint": self.call_endpoint,
                "call_training_endpoint": self.call_training_endpoint}

    @classmethod
    def from_config(cls, config: dict, custom_objects=None, safe_mode: bool | None = None):
        """A TFSMLayer from its config; as in Keras 3 only with `safe_mode=False` (here or
        from the loading scope), since the SavedModel it loads runs graph code."""
        safe = safe_mode if safe_mode is not None else in_safe_mode()
        if safe is not False:
            raise ValueError(
                f"TFSMLayer.from_config: rebuilding this layer loads the SavedModel at "
                f"{config.get('filepath')!r}, whose graph runs as code, so safe mode refuses "
                "it. For an artifact you trust pass `safe_mode=False` (to this call or to "
                "the loading function).")
        return cls(**config)
