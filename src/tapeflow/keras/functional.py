"""Functional models: a graph of layer calls from `Input`s to outputs (what
`Model(inputs, outputs)` returns), run node by node, and its config as Keras 3 writes it
(layers with their inbound nodes, endpoints), rebuilt from a config.
"""
from __future__ import annotations

import numpy as np

from .._core import nest
from ._structure import map_leaves
from .layer import InputLayer, KerasTensor, map_keras_tensors
from .model import Model, adjust_rank, output_shape_text, with_masks
from .saving import deserialize_layer, serialize_layer


class Functional(Model, functional=True):
    """A model defined by a graph of layer calls from `Input`s to outputs (what
    `Model(inputs, outputs)` returns); inputs and outputs may be lists or dicts, and a
    layer called twice shares its weights."""

    def __init__(self, inputs, outputs, name: str | None = None, trainable: bool = True,
                 **kwargs):
        for kt in nest.flatten(inputs):
            if not isinstance(kt, KerasTensor) or not isinstance(kt.node.layer, InputLayer):
                raise ValueError(f"Model: every input must be a tensor from keras.Input, "
                                 f"got {kt!r}")
        for kt in nest.flatten(outputs):
            if not isinstance(kt, KerasTensor):
                raise ValueError(f"Model: every output must be the result of calling a "
                                 f"layer on keras.Input tensors, got {kt!r}")
        super().__init__(trainable=trainable, name=name or None, **kwargs)
        self._inputs, self._outputs = inputs, outputs
        self._nodes = self._topological_nodes()
        known = {id(n) for n in self._nodes}
        for kt in nest.flatten(inputs):
            if id(kt.node) not in known:
                self._nodes.insert(0, kt.node)
        missing = [n.layer.name for n in self._nodes if isinstance(n.layer, InputLayer)
                   and not any(n is kt.node for kt in nest.flatten(inputs))]
        if missing:
            raise ValueError(f"Graph disconnected: the outputs depend on the input(s) "
                             f"{missing}, which are not among the model's inputs")
        seen: list = []
        for node in self._nodes:
            if not any(node.layer is s for s in seen):
                seen.append(node.layer)
        self._model_layers = seen
        self._tracked_layers = [layer for layer in seen]
        self.built = True

    def _topological_nodes(self) -> list:
        order, visited = [], set()

        def visit(node):
            if id(node) in visited:
                return
            visited.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)
        for kt in nest.flatten(self._outputs):
            visit(kt.node)
        return order

    def _has_branches(self) -> bool:
        return len(nest.flatten(self._inputs)) > 1 or len(nest.flatten(self._outputs)) > 1 \
            or any(len(n.parents) > 1 for n in self._nodes)

    @property
    def layers(self) -> list:
        return list(self._model_layers)

    @property
    def inputs(self) -> list:
        return nest.flatten(self._inputs)

    @property
    def input(self):
        """The model's input KerasTensor(s), as given to `Model(inputs, outputs)`."""
        return self._inputs

    @property
    def output(self):
        """The model's output KerasTensor(s), as given to `Model(inputs, outputs)`."""
        return self._outputs

    @property
    def outputs(self) -> list:
        return nest.flatten(self._outputs)

    @property
    def output_names(self) -> list:
        return [kt.node.layer.name for kt in nest.flatten(self._outputs)]

    def call(self, inputs, training=None, mask=None):
        inputs = with_masks(inputs, mask)
        if isinstance(self._inputs, dict):
            if not isinstance(inputs, dict):
                raise ValueError("This model's inputs are a dict: call it with a dict keyed "
                                 f"by {sorted(self._inputs)}")
            self._check_input_keys(inputs, list(self._inputs))
            pairs = [(self._inputs[k], inputs[k]) for k in self._inputs]
        elif isinstance(inputs, dict):
            # as Keras 3: a dict given to a model of a list of Inputs goes by the Inputs'
            # names (not by the dict's sorted keys, which would pair them by chance)
            expected = nest.flatten(self._inputs)
            self._check_input_keys(inputs, [kt.name for kt in expected])
            pairs = [(kt, inputs[kt.name]) for kt in expected]
        else:
            given = nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) \
                else [inputs]
            expected = nest.flatten(self._inputs)
            if len(given) != len(expected):
                raise ValueError(f"Model {self.name!r} expects {len(expected)} input(s), got "
                                 f"{len(given)}")
            pairs = list(zip(expected, given))
        values = {id(kt): adjust_rank(value, kt, self.name) for kt, value in pairs}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            value_of = values.__getitem__
            args = map_keras_tensors(lambda kt: value_of(id(kt)), node.inputs)
            kwargs = map_keras_tensors(lambda kt: value_of(id(kt)), dict(node.kwargs))
            if training is not None:  # a training= given when the graph was drawn wins
                kwargs.setdefault("training", training)
            out = node.layer(args, *map_keras_tensors(lambda kt: value_of(id(kt)),
                                                      node.args), **kwargs)
            for kt, value in zip(nest.flatten(node.outputs), nest.flatten(out)):
                values[id(kt)] = value
        return map_leaves(lambda kt: values[id(kt)], self._outputs)

    def _summary_rows(self) -> list:
        rows = []
        for layer in self.layers:
            links = []
            for node in layer._inbound_nodes:
                if not any(node is n for n in self._nodes):
                    continue
                for kt in node.keras_inputs:
                    owner = kt.node.layer
                    position = next(i for i, n in enumerate(owner._inbound_nodes)
                                    if n is kt.node)
                    links.append(f"{owner.name}[{position}][{kt.index}]")
            rows.append((layer, output_shape_text(layer), ", ".join(links)))
        return rows

    def get_config(self) -> dict:
        """Keras's functional config: the layers, each with the calls (inbound nodes) that
        draw the graph, and the input and output endpoints."""
        return {"name": self.name, "trainable": self.trainable,
                "layers": functional_layer_entries(self),
                "input_layers": endpoint_config(self._inputs, self._nodes),
                "output_layers": endpoint_config(self._outputs, self._nodes)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuild the graph of `get_config` (Keras's too): new layers called as the config's
        inbound nodes say."""
        inputs, outputs, _ = rebuild_functional(config, custom_objects)
        return cls(inputs, outputs, name=config.get("name"),
                   trainable=config.get("trainable", True))


# --------------------------------------------------------------------------- config


def tensor_config(kt: KerasTensor, node_index: int) -> dict:
    """A functional graph's edge as Keras writes it: the layer, node and output index."""
    return {"class_name": "__keras_tensor__",
            "config": {"shape": list(kt.shape), "dtype": kt.dtype.name,
                       "keras_history": [kt.node.layer.name, node_index, kt.index]}}


def rebuild_functional(config: dict, custom_objects: dict | None):
    """(inputs, outputs, layers by name) of a functional model's config: each layer made
    once, then called node by node as its inbound nodes say, once their inputs exist."""
    layers, pending = {}, []
    for item in config["layers"]:
        layer = deserialize_layer(item, custom_objects)
        name = item.get("name", layer.name)
        layers[name] = layer
        for node in item.get("inbound_nodes", []):
            pending.append((name, node))
    tensors: dict = {}
    for name, layer in layers.items():
        if isinstance(layer, InputLayer):
            tensors[(name, 0, 0)] = layer.output
    made: dict = {}

    def resolve(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            key = tuple(value["config"]["keras_history"])
            if key not in tensors:
                raise KeyError(key)
            return tensors[key]
        if isinstance(value, dict) and value.get("class_name") in _PYTHON_VALUES:
            return _PYTHON_VALUES[value["class_name"]](value.get("config") or {})
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value
    while pending:
        waiting = []
        for name, node in pending:
            if any(n == name for n, _ in waiting):  # a layer's nodes keep their order
                waiting.append((name, node))
                continue
            try:
                args = resolve(node.get("args", []))
                kwargs = resolve(node.get("kwargs", {}))
            except KeyError:
                waiting.append((name, node))
                continue
            outputs = layers[name](*args, **kwargs)
            index = made.get(name, 0)
            made[name] = index + 1
            flat = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            for i, kt in enumerate(flat):
                tensors[(name, index, i)] = kt
        if len(waiting) == len(pending):
            raise ValueError(f"load_model: the graph of model {config.get('name')!r} cannot "
                             f"be rebuilt: layers {[n for n, _ in waiting]} wait for inputs "
                             "no layer makes")
        pending = waiting

    def endpoints(spec):
        if isinstance(spec, dict):
            return {k: endpoints(v) for k, v in spec.items()}
        if spec and isinstance(spec[0], str):
            return tensors[tuple(spec)]
        return [endpoints(s) for s in spec]
    return endpoints(config["input_layers"]), endpoints(config["output_layers"]), layers


def model_tensor_config(kt: KerasTensor, nodes: list) -> dict:
    """`tensor_config` with the node counted among the model's own calls of its layer."""
    own = [n for n in kt.node.layer._inbound_nodes if any(n is m for m in nodes)]
    index = next((i for i, n in enumerate(own) if n is kt.node), 0)
    return tensor_config(kt, index)


def functional_layer_entries(model) -> list:
    """A functional model's `layers` list as Keras writes it: each layer's config with
    its name and the inbound nodes (within this model) that call it."""
    entries = []
    for layer in model.layers:
        entry = serialize_layer(layer)
        entry["name"] = layer.name
        nodes = []
        for node in layer._inbound_nodes:
            if not any(node is n for n in model._nodes) or isinstance(layer, InputLayer):
                continue
            args = [_map_tensors(node.inputs, model._nodes),
                    *(_map_tensors(a, model._nodes) for a in node.args)]
            kwargs = {k: _map_tensors(v, model._nodes) for k, v in node.kwargs.items()}
            nodes.append({"args": args, "kwargs": kwargs})
        entry["inbound_nodes"] = nodes
        entries.append(entry)
    return entries


def _map_tensors(value, nodes: list):
    if isinstance(value, KerasTensor):
        return model_tensor_config(value, nodes)
    if isinstance(value, (list, tuple)):
        return [_map_tensors(v, nodes) for v in value]
    if isinstance(value, dict):
        return {k: _map_tensors(v, nodes) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, slice):  # `x[:, 1:4]` records a GetItem operation with its key
        return {"class_name": "__slice__", "config": {
            "start": value.start, "stop": value.stop, "step": value.step}}
    if value is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise ValueError(f"save: a layer call's argument {value!r} cannot be written to a "
                     ".keras file")


# Python values Keras writes among a call's arguments, as they come back
_PYTHON_VALUES = {"__slice__": lambda c: slice(c.get("start"), c.get("stop"), c.get("step")),
                  "__ellipsis__": lambda c: Ellipsis}


def endpoint_config(kts, nodes: list):
    """Keras's `input_layers`/`output_layers`: [name, node, index] per tensor, a single one
    unwrapped."""
    if isinstance(kts, KerasTensor):
        return model_tensor_config(kts, nodes)["config"]["keras_history"]
    if isinstance(kts, dict):
        return {k: endpoint_config(v, nodes) for k, v in kts.items()}
    return [endpoint_config(kt, nodes) for kt in kts]
