"""`Sequential`: a plain stack of layers, each taking the previous one's output."""
from __future__ import annotations

import numpy as np

from .._core import dtypes as _dt, nest
from .._core.convert import convert_to_tensor
from .._core.tensor import Tensor
from .data_adapters import as_array
from .layer import Input, InputLayer, KerasTensor, Layer, is_symbolic
from .model import Model, adjust_rank, with_masks
from .saving import deserialize_layer, input_layer_entry, serialize_layer


class Sequential(Model):
    """A stack of layers, each feeding the next: `Sequential([layer, ...])` or `.add`.
    Starting with `keras.Input(shape)` (or a first layer given `input_shape=`) builds it
    at once, so `summary()` works before training.

    Example:
        >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
        >>> model.count_params()
        8
    """

    def __init__(self, layers=None, trainable: bool = True, name: str | None = None):
        super().__init__(trainable=trainable, name=name)
        self._stack: list = []
        self._input = None
        self._output = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer) -> None:
        """Append a layer (or start the model with a `keras.Input`)."""
        if isinstance(layer, KerasTensor):
            if self._stack or self._input is not None:
                raise ValueError("Sequential: an Input can only start the model")
            self._input = self._output = layer
            return
        if isinstance(layer, InputLayer):
            self.add(layer.output)
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: the added layer must be an instance of class "
                            f"Layer, found {layer!r}")
        if any(layer is other for other in self._stack):
            raise ValueError(f"Sequential: layer {layer.name!r} is already in the model")
        if not self._stack and self._input is None and layer._batch_input_shape is not None:
            self._input = self._output = Input(batch_shape=layer._batch_input_shape,
                                               dtype=layer._dtype)
        self._stack.append(layer)
        self._tracked_layers = list(self._stack)
        if self._output is not None:
            self._output = layer(self._output)
            self.built = True

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        self._tracked_layers = list(self._stack)
        return layer

    @property
    def layers(self) -> list:
        return list(self._stack)

    def build(self, input_shape=None) -> None:
        """Build with inputs of `input_shape` (the batch dimension first, may be None)."""
        if self._input is not None:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("Sequential.build: give an input_shape")
        shape = tuple(input_shape)
        self._input = self._output = Input(batch_shape=(None, *shape[1:]))
        for layer in self._stack:
            self._output = layer(self._output)
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        if not self.built and not is_symbolic(inputs):
            first = nest.flatten(inputs)[0]
            shape = first.shape if hasattr(first, "shape") else np.shape(first)
            # a traced input (first call inside tf.function) gives its spec, not a value
            dtype = first.dtype if isinstance(first, Tensor) else \
                convert_to_tensor(as_array(first)).dtype
            self._input = self._output = Input(batch_shape=(None, *tuple(shape)[1:]),
                                               dtype=dtype if not dtype.is_floating
                                               else _dt.float32)
            for layer in self._stack:
                self._output = layer(self._output)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None, mask=None):
        # masks ride on the tensors from layer to layer (Layer.__call__, keras/layer.py)
        x = inputs
        if self._input is not None:
            x = adjust_rank(x, self._input, self.name)
        x = with_masks(x, mask)
        for layer in self._stack:
            x = layer(x) if training is None else layer(x, training=training)
        return x

    @property
    def inputs(self) -> list:
        return [] if self._input is None else [self._input]

    @property
    def outputs(self) -> list:
        return [] if self._output is None else [self._output]

    @property
    def output_names(self) -> list:
        return [self._stack[-1].name] if self._stack else [self.name]

    def get_config(self) -> dict:
        """Keras's Sequential config: the layers (an Input first, as an InputLayer)."""
        layers = [serialize_layer(layer) for layer in self._stack]
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": self.dtype_policy.name}
        if self._input is not None:
            layers.insert(0, input_layer_entry(self._input))
            config["build_input_shape"] = list(self._input.shape)
        return {**config, "layers": layers}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuild a Sequential from `get_config` (Keras's too); layer classes by name
        from tapeflow's Keras layers and `custom_objects`."""
        layers = [deserialize_layer(item, custom_objects) for item in config["layers"]]
        model = cls(layers, name=config.get("name"), trainable=config.get("trainable", True))
        shape = config.get("build_input_shape")
        if not model.built and shape is not None:
            model.build(tuple(shape))
        return model
