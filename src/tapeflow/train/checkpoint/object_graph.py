"""TensorFlow's object graph (`TrackableObjectGraph`), to and from tapeflow's value paths.

tapeflow names a saved value by its path from the checkpoint's root ("model/dense/kernel";
an object's own state "rng/state"). A TensorFlow checkpoint stores each value under a key
("model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", "rng/.ATTRIBUTES/state") and, under
`_CHECKPOINTABLE_OBJECT_GRAPH`, the object graph: every object as a node with its named
children and the keys of its values. Restoring follows the graph, not the keys, so a
variable reachable by several paths (stored once) is found by each.

`to_paths` turns a TensorFlow checkpoint into tapeflow's ({path: value}, {alias: path});
`to_keys` does the reverse for writing, building the object graph from the paths (a path
segment is a node, as TensorFlow tracks a list attribute "layers" as a node with children
"0", "1", ...).
"""
from __future__ import annotations

import numpy as np

from ..._core.wire import field, parse_message
from .tensor_bundle import Corrupt

__all__ = ["GRAPH_KEY", "VALUE", "key_of", "to_paths", "to_keys"]

GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE = "VARIABLE_VALUE"  # a variable's attribute name
_ATTRIBUTES = ".ATTRIBUTES"
_MAX_PATHS = 64  # paths recorded per node (a DAG can have exponentially many)


def _escape(name: str) -> str:
    # TensorFlow's escaping of a local name inside a key: "." doubles, "/" becomes ".S"
    return name.replace(".", "..").replace("/", ".S")


def key_of(node_path: str, attribute: str = VALUE) -> str:
    """TensorFlow's checkpoint key of an attribute of the object at `node_path`.

    Example:
        >>> key_of("model/dense/kernel")
        'model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE'
    """
    parts = [_escape(p) for p in node_path.split("/")] if node_path else []
    return "/".join(parts + [_ATTRIBUTES, _escape(attribute)])


def _decode(graph: bytes) -> list[dict]:
    """The nodes of a serialized TrackableObjectGraph: children [(id, name)] and
    attributes [(name, checkpoint key)]."""
    nodes = []
    for raw in parse_message(graph).get(1, []):
        node = parse_message(raw)
        children, attributes = [], []
        for ref in node.get(1, []):
            ref = parse_message(ref)
            children.append((ref.get(1, [0])[-1], ref.get(2, [b""])[-1].decode("utf-8")))
        for tensor in node.get(2, []):
            tensor = parse_message(tensor)
            attributes.append((tensor.get(1, [b""])[-1].decode("utf-8"),
                               tensor.get(3, [b""])[-1].decode("utf-8")))
        nodes.append({"children": children, "attributes": attributes})
    for node in nodes:
        for child, name in node["children"]:
            if not 0 <= child < len(nodes):
                raise Corrupt(f"the object graph names node {child} of {len(nodes)}")
    return nodes


def _node_paths(nodes: list[dict]) -> list[list[str]]:
    """Every node's paths from the root, shortest first (breadth-first, as TensorFlow
    picks the key of a shared value), without cycles."""
    paths: list[list[str]] = [[] for _ in nodes]
    if not nodes:
        return paths
    paths[0].append("")
    frontier = [(0, "", frozenset({0}))]
    while frontier:
        following = []
        for node_id, path, on_path in frontier:
            for child, name in nodes[node_id]["children"]:
                if child in on_path or len(paths[child]) >= _MAX_PATHS:
                    continue
                child_path = f"{path}/{name}" if path else name
                paths[child].append(child_path)
                following.append((child, child_path, on_path | {child}))
        frontier = following
    return paths


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def to_paths(values: dict[str, np.ndarray], keys: dict[str, str] | None = None
             ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A TensorFlow checkpoint's {key: value} as tapeflow's ({path: value}, {alias: path});
    given a dict `keys`, fills it with {path: the key it was stored under} (for errors).

    Values the object graph does not reach (optimizer slots, or a checkpoint without a
    graph) keep their key, less its "/.ATTRIBUTES/VARIABLE_VALUE" ending.

    Example:
        >>> to_paths(read_bundle(tf_written_prefix))[0]["model/dense/kernel"].shape
        (3, 2)
    """
    graph = values.get(GRAPH_KEY)
    by_path: dict[str, np.ndarray] = {}
    aliases: dict[str, str] = {}
    reached: set[str] = {GRAPH_KEY}
    if graph is not None:
        if graph.shape != () or not isinstance(graph[()], bytes):
            raise Corrupt(f"{GRAPH_KEY} is not a scalar string")
        nodes = _decode(graph[()])
        for node, paths in zip(nodes, _node_paths(nodes)):
            if not paths:
                continue
            for name, key in node["attributes"]:
                if key not in values:
                    raise Corrupt(f"the object graph names {key!r}, which is not stored")
                primary = paths[0] if name == VALUE else _join(paths[0], name)
                if primary not in by_path and keys is not None:
                    keys[primary] = key
                by_path.setdefault(primary, values[key])
                reached.add(key)
                for other in paths[1:]:
                    alias = other if name == VALUE else _join(other, name)
                    if alias != primary:
                        aliases.setdefault(alias, primary)
    suffix = f"/{_ATTRIBUTES}/{VALUE}"
    for key, value in values.items():
        if key not in reached:
            path = key[:-len(suffix)] if key.endswith(suffix) else key
            if path not in by_path and keys is not None:
                keys[path] = key
            by_path.setdefault(path, value)
    return by_path, {a: p for a, p in aliases.items() if a not in by_path}


def to_keys(values: dict[str, np.ndarray], aliases: dict[str, str],
            state_keys: dict[str, str]) -> dict[str, np.ndarray]:
    """tapeflow's {path: value} and {alias: path} as TensorFlow's {key: value}, with the
    object graph under `_CHECKPOINTABLE_OBJECT_GRAPH`. `state_keys` maps the path of each
    piece of object state to its name ("rng/state" -> "state"): it is an attribute of the
    object at "rng", where a variable is the object at its path.

    Example:
        >>> sorted(to_keys({"m/w": np.ones(2)}, {}, {}))
        ['_CHECKPOINTABLE_OBJECT_GRAPH', 'm/w/.ATTRIBUTES/VARIABLE_VALUE']
    """
    nodes: list[dict] = [{"children": {}, "attributes": []}]
    by_path: dict[str, int] = {"": 0}

    def node_at(path: str) -> int:
        if path in by_path:
            return by_path[path]
        parent, _, name = path.rpartition("/")
        parent_id = node_at(parent)
        node_id = nodes[parent_id]["children"].get(name)
        if node_id is None:
            node_id = len(nodes)
            nodes.append({"children": {}, "attributes": []})
            nodes[parent_id]["children"][name] = node_id
        by_path[path] = node_id
        return node_id

    out: dict[str, np.ndarray] = {}
    for path, value in values.items():
        if path in state_keys:
            name = state_keys[path]
            owner = path[:-len(name) - 1] if len(path) > len(name) else ""
        else:
            owner, name = path, VALUE
        key = key_of(owner, name)
        if key in out:
            raise ValueError(f"Checkpoint: {path!r} and another value share the key {key!r}")
        out[key] = value
        nodes[node_at(owner)]["attributes"].append((name, key))
    for alias, path in aliases.items():  # the same variable's node, reached by another path
        parent, _, name = alias.rpartition("/")
        nodes[node_at(parent)]["children"].setdefault(name, node_at(path))
    graph = b"".join(field(1, _encode(node)) for node in nodes)
    out[GRAPH_KEY] = np.array(graph, dtype=object)  # a string scalar
    return out


def _encode(node: dict) -> bytes:
    out = b"".join(field(1, field(1, child) + field(2, name))
                   for name, child in node["children"].items())
    for name, key in node["attributes"]:
        full = key[:-len(f"/{_ATTRIBUTES}/{VALUE}")] if name == VALUE else key
        out += field(2, field(1, name) + field(2, full) + field(3, key))
    if node["attributes"]:
        out += field(5, field(1, 1))  # has_checkpoint_values: true
    return out
