"""`Model`: a Keras layer made of layers (subclassed, or functional: `Model(inputs,
outputs)` makes a `Functional`, functional.py), with the training loop of trainer.py,
`save`/`save_weights`/`load_weights` and `summary()` in Keras 3's table layout.
"""
from __future__ import annotations

import shutil
import sys
import textwrap

import numpy as np

from .._core import nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from ..distribute.collective import on_chief
from ..distribute.strategy import get_strategy
from ..ops.array import expand_dims, squeeze
from ..saved_model.export import export_model
from ..train.checkpoint import Checkpoint
from ._structure import map_leaves
from .data_adapters import as_array
from .layer import KerasTensor, Layer, is_several, is_symbolic, set_keras_mask
from .saving import load_weights_h5, optimizer_built, optimizer_state, save_model, save_weights_h5
from .trainer import Trainer


def with_masks(inputs, mask):
    """`inputs` with `mask` (a structure like theirs) attached, as Keras's models take a
    `mask=` argument."""
    if mask is not None:
        for x, m in zip(nest.flatten(inputs), nest.flatten(mask)):
            if m is not None:
                set_keras_mask(x, convert_to_tensor(m))
    return inputs


def adjust_rank(x, reference: KerasTensor, model: str):
    """An input one rank off its Input's, as Keras takes it: a missing trailing axis of
    size 1 is added (a (batch,) column for an Input of shape (1,)), an extra one removed."""
    if is_symbolic(x) or not hasattr(x, "shape") or len(x.shape) == len(reference.shape):
        return x
    rank, expected = len(x.shape), len(reference.shape)
    if rank == expected - 1 and reference.shape[-1] == 1:
        return expand_dims(x, -1)
    if rank == expected + 1 and x.shape[-1] == 1:
        return squeeze(x, -1)
    raise ValueError(f"Model {model!r}: invalid input shape {list(x.shape)} for input "
                     f"{reference.node.layer.name!r} of shape {list(reference.shape)}")


def _make_functional(cls: type) -> None:
    """Put Functional in place of Model among the bases of `cls` (and of its Model
    ancestors), so a subclass built as `MyModel(inputs, outputs)` is functional and keeps
    its own methods (`train_step`, ...) in front, as Keras 3 does."""
    functional = Model._functional
    if issubclass(cls, functional) or cls is Model:
        return
    bases = []
    for base in cls.__bases__:
        if base is Model:
            bases.append(functional)
        else:
            if isinstance(base, type) and issubclass(base, Model):
                _make_functional(base)
            bases.append(base)
    cls.__bases__ = tuple(bases)


# --------------------------------------------------------------------------- Model


class Model(Trainer, Layer):
    """A layer of layers that trains: subclass it (layers in `__init__`, the forward pass
    in `call(self, inputs, training=None)`) or build it from the functional API with
    `Model(inputs, outputs)`.

    Example:
        >>> inputs = tf.keras.Input((4,))
        >>> model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(np.ones((8, 4)), np.ones((8, 1)), epochs=2, verbose=0)
        >>> len(history.history["loss"])
        2
    """

    # the class `Model(inputs, outputs)` makes: Functional, which names itself with
    # `class Functional(Model, functional=True)` (functional.py builds on this module)
    _functional: type | None = None

    def __init_subclass__(cls, functional: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        if functional:
            Model._functional = cls

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Model._functional)
        return super().__new__(cls)

    def __init__(self, *args, trainable: bool = True, name: str | None = None, dtype=None,
                 **kwargs):
        if (args or "inputs" in kwargs or "outputs" in kwargs) and \
                not isinstance(self, Model._functional):
            # a subclass built functionally (`MyModel(inputs, outputs)`, to override
            # train_step): as Keras 3, the class becomes a Functional subclass
            _make_functional(type(self))
            Model._functional.__init__(self, *args, trainable=trainable, name=name, **kwargs)
            return
        if args:
            raise TypeError(f"{type(self).__name__}: unexpected positional arguments; a "
                            "functional model is Model(inputs, outputs)")
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
        self._init_trainer()

    def _convert_input(self, inputs):
        # the layers inside convert (and cast) their own inputs
        def convert(v):
            return v if isinstance(v, Tensor) else convert_to_tensor(as_array(v))
        if isinstance(inputs, (list, tuple)) and not is_several(inputs):
            return convert(inputs)  # one input written as nested Python numbers
        return map_leaves(convert, inputs)

    # ----------------------------------------------------------------- structure
    @property
    def layers(self) -> list:
        """The model's layers: in assignment order for a subclassed model."""
        return self._sublayers()

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """The layer named `name`, or at position `index` of `layers`."""
        if index is not None:
            if name is not None:
                raise ValueError("get_layer: give either `name` or `index`, not both")
            if not 0 <= index < len(self.layers):
                raise ValueError(f"get_layer: index {index} is out of range: the model has "
                                 f"{len(self.layers)} layers")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    @property
    def input_shape(self):
        """The shape of the model's input (a list of shapes for several), None for unknown
        dims, as Keras 3; an AttributeError before the model knows its inputs.

        Example:
            >>> tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)]).input_shape
            (None, 3)
        """
        return self._endpoint_shapes(getattr(self, "inputs", None), "input")

    @property
    def output_shape(self):
        """The shape of the model's output (a list of shapes for several), as Keras 3.

        Example:
            >>> tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)]).output_shape
            (None, 2)
        """
        return self._endpoint_shapes(getattr(self, "outputs", None), "output")

    def _endpoint_shapes(self, tensors, what: str):
        if not tensors:
            raise AttributeError(f"{type(self).__name__} model {self.name!r} has no defined "
                                 f"{what} shape yet.")
        shapes = [tuple(kt.shape) for kt in tensors]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_names(self) -> list:
        return [self.name]

    @property
    def distribute_strategy(self):
        """The `tf.distribute` strategy whose scope the model was created in (else the
        current one, by default the strategy of one replica): `fit`, `evaluate` and
        `predict` share each batch out among its replicas (keras/_distributed.py)."""
        return getattr(self, "_distribute_strategy", None) or get_strategy()

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """A model from its config: a functional config (layers with inbound nodes and
        endpoints, as `Model(inputs, outputs).get_config()` gives) is rebuilt as a graph
        (a subclass built functionally stays that subclass); any other config is the
        constructor's arguments, as Keras 3's `Model.from_config`.

        Example:
            >>> x = tf.keras.Input((2,))
            >>> m = tf.keras.Model(x, tf.keras.layers.Dense(1)(x))
            >>> tf.keras.Model.from_config(m.get_config()).output_shape
            (None, 1)
        """
        if {"layers", "input_layers", "output_layers"} <= set(config):
            return Model._functional.from_config.__func__(cls, config, custom_objects)
        return cls(**config)

    # ----------------------------------------------------------------- weights on disk
    def save(self, filepath: str, overwrite: bool = True, **kwargs) -> None:
        """Write the whole model (architecture, weights, compile arguments) as a Keras 3
        `.keras` file, which `keras.models.load_model` (tapeflow's or Keras's) reads, or in
        Keras's legacy HDF5 format for an `.h5` path (`include_optimizer=`); Sequential
        and functional models."""
        # under a multi-process strategy every worker holds the same model: one writes
        on_chief(lambda: save_model(self, filepath, overwrite=overwrite, **kwargs))

    def export(self, filepath, format: str = "tf_saved_model", verbose=None,
               input_signature=None, **kwargs) -> None:
        """Write the model for inference as a TensorFlow SavedModel whose `serve` endpoint
        (and "serve" / "serving_default" signatures) TensorFlow loads and runs, as Keras 3
        writes it; `format="tf_saved_model"` is the only format here."""
        if format != "tf_saved_model":
            raise ValueError(f"Model.export: format {format!r} is not supported; "
                             "supported: 'tf_saved_model'")
        on_chief(lambda: export_model(self, filepath, input_signature, verbose))

    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Write the weights: Keras 3's format for `*.weights.h5` paths (Sequential and
        functional models; needs h5py), otherwise a TensorFlow checkpoint (the files of
        `tf.train.Checkpoint`)."""
        path = str(filepath)
        if path.endswith(".h5"):
            if not path.endswith(".weights.h5"):
                raise ValueError(f"The filename must end in `.weights.h5`. Received: "
                                 f"filepath={path}")
            on_chief(save_weights_h5, self, path)  # the chief alone writes (as checkpoints)
            return
        Checkpoint(model=_Weights(self)).write(path)

    def load_weights(self, filepath: str) -> None:
        """Read weights that `save_weights` (or Keras's) wrote; the model must be built
        with the same architecture."""
        path = str(filepath)
        if path.endswith(".h5"):
            load_weights_h5(self, path)
            return
        Checkpoint(model=_Weights(self)).read(path).assert_consumed()

    # ----------------------------------------------------------------- summary
    def _check_input_keys(self, inputs: dict, names: list) -> None:
        """A dict of inputs must have exactly the model's input names as keys: a missing or
        unknown key raises, naming it, rather than feeding an input the wrong value."""
        missing = [n for n in names if n not in inputs]
        unknown = sorted(str(k) for k in inputs if k not in names)
        if missing or unknown:
            raise ValueError(f"Model {self.name!r} takes inputs named {names}; the dict "
                             f"given is missing {missing} and has unknown keys {unknown}")

    def _summary_rows(self) -> list:
        return [(layer, output_shape_text(layer), "") for layer in self.layers]

    def summary(self, line_length: int | None = None, print_fn=None) -> None:
        """Print the layers, their output shapes and parameter counts, and the totals, in
        Keras 3's table layout; a layer not built yet shows "?" and "0 (unbuilt)"."""
        print_fn = print_fn or (lambda line: sys.stdout.write(line + "\n"))
        rows = self._summary_rows()
        connected = isinstance(self, Model._functional) and self._has_branches()
        if connected:
            headers, positions, default = ["Layer (type)", "Output Shape", "Param #",
                                           "Connected to"], [0.3, 0.56, 0.74, 1.0], 108
        else:
            headers, positions, default = ["Layer (type)", "Output Shape", "Param #"], \
                [0.45, 0.80, 1.0], 88
        line_length = line_length or min(default, shutil.get_terminal_size().columns - 4)
        bounds = [int(p * line_length) for p in positions]
        widths = [b - a for a, b in zip([0] + bounds, bounds)]
        widths = [w - 1 for w in widths[:-1]] + [widths[-1] - 2]  # room for the borders
        right = {2}  # the counts are right-aligned

        def line(cells) -> list:
            wrapped = [textwrap.wrap(c, w - 2) or [""] for c, w in zip(cells, widths)]
            height = max(len(w) for w in wrapped)
            out = []
            for i in range(height):
                parts = []
                for col, (w, lines) in enumerate(zip(widths, wrapped)):
                    text = lines[i] if i < len(lines) else ""
                    parts.append(" " + (text.rjust(w - 2) if col in right else
                                        text.ljust(w - 2)) + " ")
                out.append(parts)
            return out

        print_fn(f'Model: "{self.name}"')
        print_fn("┏" + "┳".join("━" * w for w in widths) + "┓")
        for parts in line(headers):
            print_fn("┃" + "┃".join(parts) + "┃")
        print_fn("┡" + "╇".join("━" * w for w in widths) + "┩")
        for i, (layer, shape, links) in enumerate(rows):
            params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
            cells = [f"{layer.name} ({type(layer).__name__})", shape, params]
            if connected:
                cells.append(links or "-")
            for parts in line(cells):
                print_fn("│" + "│".join(parts) + "│")
            if i < len(rows) - 1:
                print_fn("├" + "┼".join("─" * w for w in widths) + "┤")
        print_fn("└" + "┴".join("─" * w for w in widths) + "┘")
        trainable, frozen = self.trainable_weights, self.non_trainable_weights
        # once the optimizer is built, Keras counts its state too (as in its files)
        state = optimizer_state(self) if optimizer_built(self) else []
        groups = [("Total", self.weights + state), ("Trainable", trainable),
                  ("Non-trainable", frozen)] + ([("Optimizer", state)] if state else [])
        for label, group in groups:
            count = sum(int(np.prod(v.shape)) for v in group)
            size = sum(int(np.prod(v.shape)) * v.dtype.size for v in group)
            print_fn(f" {label} params: {count:,} ({_readable_size(size)})")


class _Weights:
    """The checkpoint view of a model's weights alone (not its optimizer), named by their
    position in `weights`, as Keras's weight files match them by order."""

    def __init__(self, model: Model):
        self._model = model

    def _trackable_children(self) -> dict:
        return {f"weight-{i}": v for i, v in enumerate(self._model.weights)}


def _readable_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} GB"


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def output_shape_text(layer) -> str:
    if not layer._inbound_nodes:
        return "?"
    outputs = layer._inbound_nodes[0].outputs
    if isinstance(outputs, KerasTensor):
        return _shape_text(outputs.shape)
    return "[" + ", ".join(_shape_text(o.shape) for o in outputs) + "]"
