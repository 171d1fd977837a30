"""Keras's `Model.export(filepath)`: a SavedModel with a `serve` endpoint, as Keras 3
writes it (an export archive holding the model's variables in lists `variables`,
`trainable_variables`, `non_trainable_variables`, the traced `serve` function, and the
signatures "serve" and "serving_default" taking the inputs by name).

Example:
    >>> export_model(model, "/tmp/exported")   # TensorFlow: loaded.serve(x)
"""
from __future__ import annotations

import os

from .._core import nest
from .._core.tensor import TensorSpec
from ..function.trace import function
from .save import DEFAULT_SIGNATURE, save

__all__ = ["ExportArchive", "export_model"]


class ExportArchive:
    """What `Model.export` saves: the variables and the endpoints of a model.

    Example:
        >>> archive = ExportArchive(model.variables, model.trainable_variables,
        ...                         model.non_trainable_variables)
    """

    def __init__(self, variables, trainable, non_trainable):
        self.variables = list(variables)
        self.trainable_variables = list(trainable)
        self.non_trainable_variables = list(non_trainable)

    def _trackable_children(self) -> dict:
        return {"variables": self.variables,
                "trainable_variables": self.trainable_variables,
                "non_trainable_variables": self.non_trainable_variables}


def _spec_of(t, i: int) -> TensorSpec:
    name = getattr(t, "name", None) or f"input_{i}"
    return TensorSpec(tuple(t.shape), t.dtype, name=name.split(":")[0])


def _one(out):
    return out[0] if isinstance(out, (list, tuple)) and len(out) == 1 else out


def export_model(model, filepath, input_signature=None, verbose=None) -> None:
    """Write `model` (a built Keras model) as a SavedModel whose `serve` endpoint runs it
    in inference mode."""
    if input_signature is None:
        inputs = list(getattr(model, "inputs", None) or [])
        if not inputs:
            raise ValueError(f"Model.export: model {model.name!r} has no known inputs; "
                             "build it (call it once or give it an Input) or pass "
                             "input_signature=")
        specs = [_spec_of(t, i) for i, t in enumerate(inputs)]
    else:
        specs = [s if isinstance(s, TensorSpec) else _spec_of(s, i)
                 for i, s in enumerate(nest.flatten(input_signature))]
    if len(specs) == 1:
        def serve(x):
            return _one(model(x, training=False))
        signature = specs
    else:  # several inputs: one argument holding them all, as Keras's endpoint takes
        def serve(inputs):
            return _one(model(list(inputs), training=False))
        signature = [specs]

    archive = ExportArchive(model.variables, model.trainable_variables,
                            model.non_trainable_variables)
    archive.serve = function(serve, input_signature=signature)
    cf = archive.serve.get_concrete_function()
    save(archive, os.fspath(filepath), signatures={"serve": cf, DEFAULT_SIGNATURE: cf})
    if verbose:
        print(f"Saved artifact at '{os.fspath(filepath)}'. Endpoint: serve")
