"""`export(fn, path)`: a traced function as an ONNX model.

The graph exported is the one traced, before the optimization and fusion passes (those
rewrite into tapeflow's own fused ops, which ONNX does not know). Variables the function
reads and tensors it captures become initializers; every other node is lowered by its
op's ONNX rule (`registry.ONNX`, filled by each op's `define_op(..., onnx=)`, or by
`register_onnx` for the few kept in onnx/lowering.py).
"""
from __future__ import annotations

import numpy as np

from .._core.registry import ONNX, SHAPES
from .._core.shape import Dim
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from .._core.version import version as _version
from ..function.concrete import ConcreteFunction
from ..function.graph import live_nodes
from ..function.trace import Function, function
from . import proto

DEFAULT_OPSET = 17
MIN_OPSET = 13
# the IR version of the ONNX release that brought each opset (onnx's VERSIONS_TABLE)
_IR_VERSIONS = ((18, 8), (20, 9), (22, 10), (99, 11))


class Emitter:
    """What a lowering rule builds with: `input(node, name)` / `outputs(node)` give the
    ONNX names of a node's tensors, `add(op_type, inputs, outputs, **attrs)` appends an
    ONNX node, `const(value)` and `ints(values)` make initializers, `reduce(...)` and
    `unsqueeze/squeeze(...)` hide the opset differences, `dtype_code(dtype)` is ONNX's
    element type number of a dtype. `opset` is the target opset.

    Example:
        >>> rule = lambda e, node: e.add("Relu", [e.input(node, "x")], e.outputs(node))
    """

    def __init__(self, opset: int, fn_name: str):
        self.opset, self.fn_name = opset, fn_name
        self.nodes: list[bytes] = []
        self.initializers: list[bytes] = []
        self.names: dict[int, str] = {}   # tensor or variable id -> ONNX value name
        self._used: set[str] = set()
        self._variables: dict[int, str] = {}  # variable id -> its initializer
        self._count = 0

    # ---------------------------------------------------------------- names
    def fresh(self, base: str) -> str:
        """An ONNX value name no other value has."""
        name = base
        while name in self._used:
            self._count += 1
            name = f"{base}__{self._count}"
        self._used.add(name)
        return name

    def name_of(self, t) -> str:
        name = self.names.get(t.id)
        if name is not None:
            return name
        if isinstance(t, Variable):  # its value now, as an initializer (made on first use)
            name = self._variables.get(t.id)
            if name is None:
                name = self._variables[t.id] = self.initializer(
                    t.name.removesuffix(":0"), np.asarray(t.numpy()))
            return name
        raise ValueError(f"onnx.export({self.fn_name}): tensor {t.name} is used before it "
                         "is computed")

    def input(self, node, key: str):
        """The ONNX name(s) of input `key` of `node` (a list for a list input)."""
        v = node.inputs[key]
        if isinstance(v, (list, tuple)):
            return [self.name_of(m) for m in v]
        return self.name_of(v)

    def outputs(self, node) -> list[str]:
        """The ONNX names of `node`'s outputs, made on first use."""
        out = []
        for t in node.outputs:
            if t.id not in self.names:
                self.names[t.id] = self.fresh(t.name.removesuffix(":0"))
            out.append(self.names[t.id])
        return out

    def alias(self, t, name: str) -> None:
        """Make `t` stand for an existing ONNX value (no node: a variable read)."""
        self.names[t.id] = name

    # ---------------------------------------------------------------- graphs
    def lower(self, graph, outputs: list) -> None:
        """Lower the nodes `outputs` need (and every stateful one) by their ops' rules."""
        for node in live_nodes(graph.nodes, outputs):
            rule = ONNX.get(node.op)
            if rule is None:
                raise NotImplementedError(
                    f"onnx.export({self.fn_name}): op {node.op} (node {node.name}) has no "
                    f"ONNX lowering (tf.onnx.register_lowering adds one; {len(ONNX)} ops "
                    "have one)")
            rule(self, node)

    def inline(self, cf, inputs: list) -> list[str]:
        """Lower ConcreteFunction `cf` here, its inputs standing for the ONNX values
        `inputs` (its arguments, then its sealed captures); returns its outputs' names.
        Its tensors are named anew each time, so one body can be inlined twice."""
        graph = cf.graph
        if len(inputs) != len(graph.inputs):
            raise ValueError(f"onnx.export({self.fn_name}): {cf.name} takes "
                             f"{len(graph.inputs)} inputs, given {len(inputs)}")
        saved = dict(self.names)
        for t, name in zip(graph.inputs, inputs):
            self.names[t.id] = name
        outputs = [o for o in cf._flat_outputs if isinstance(o, Tensor)]
        self.lower(graph, outputs)
        result = [self.name_of(o) for o in outputs]
        self.names = saved
        return result

    def subgraph(self, name: str, build) -> bytes:
        """A GraphProto (a Loop's or If's body) of the nodes `build()` emits; `build`
        returns (input ValueInfos, output ValueInfos). Constants stay initializers of the
        main graph, which a subgraph reads by name."""
        outer, self.nodes = self.nodes, []
        try:
            inputs, outputs = build()
            return proto.graph(self.fresh(name), self.nodes, [], inputs, outputs)
        finally:
            self.nodes = outer

    # ---------------------------------------------------------------- building
    def add(self, op_type: str, inputs, outputs=None, **attrs) -> list[str]:
        """Append an ONNX node; `outputs` None: one fresh output. Returns the outputs."""
        if outputs is None:
            outputs = [self.fresh(op_type)]
        elif isinstance(outputs, str):
            outputs = [outputs]
        self.nodes.append(proto.node(op_type, list(inputs), list(outputs),
                                     name=self.fresh("node_" + outputs[0]), attrs=attrs))
        return list(outputs)

    def add1(self, op_type: str, inputs, **attrs) -> str:
        """`add` with one fresh output, returning its name."""
        return self.add(op_type, inputs, None, **attrs)[0]

    def initializer(self, name: str, value: np.ndarray) -> str:
        name = self.fresh(name)
        self.initializers.append(proto.tensor(name, np.asarray(value)))
        return name

    def const(self, value, dtype=None) -> str:
        """An initializer holding `value` (a Python float is float32)."""
        if dtype is None and isinstance(value, float):
            dtype = np.float32
        return self.initializer("const", np.asarray(value, dtype))

    def ints(self, values) -> str:
        """A 1-D int64 value of `values`, whose entries are ints or `Dim`s (run-time sizes
        of traced tensors: taken with Shape and Gather, a product of axes multiplied)."""
        values = list(values)
        if not any(type(v) is Dim for v in values):
            return self.const(np.asarray(values, np.int64))
        parts = []
        for v in values:
            if type(v) is not Dim:
                parts.append(self.const(np.asarray([v], np.int64)))
                continue
            shape = self.add1("Shape", [self.name_of(v.tensor)])
            axes = v.axis if isinstance(v.axis, tuple) else (v.axis,)
            size = self.add1("Gather", [shape, self.const(np.asarray(axes, np.int64))],
                             axis=0)
            if len(axes) > 1:
                size = self.reduce("ReduceProd", size, (0,), True)
            parts.append(size)
        return self.add1("Concat", parts, axis=0)

    def reduce(self, op_type: str, x: str, axes, keepdims: bool, outputs=None) -> str:
        """A Reduce* node over `axes` (an attribute before the op took axes as an input:
        ReduceSum at opset 13, the others at 18)."""
        axes = [int(a) for a in axes]
        if self.opset >= 18 or op_type == "ReduceSum":
            return self.add(op_type, [x, self.const(np.asarray(axes, np.int64))], outputs,
                            keepdims=int(keepdims))[0]
        return self.add(op_type, [x], outputs, axes=axes, keepdims=int(keepdims))[0]

    def dtype_code(self, dtype) -> int:
        """ONNX's element type number (TensorProto.DataType) of a DType or dtype name, for
        Cast's `to` (rules sit below this module and do not import its proto tables)."""
        return proto.elem_type(dtype if isinstance(dtype, str) else dtype.name)

    def unsqueeze(self, x: str, axes, outputs=None) -> str:
        return self.add("Unsqueeze", [x, self.const(np.asarray(axes, np.int64))], outputs)[0]

    def squeeze(self, x: str, axes, outputs=None) -> str:
        return self.add("Squeeze", [x, self.const(np.asarray(axes, np.int64))], outputs)[0]


def _concrete(fn, input_signature) -> ConcreteFunction:
    """The ConcreteFunction to export: `fn` itself, or `fn` traced on the signature (a
    Keras model is called with training=False, as for inference)."""
    if isinstance(fn, ConcreteFunction):
        return fn
    if isinstance(fn, Function):
        sig = input_signature if input_signature is not None else fn.input_signature
        if sig is None:
            raise ValueError(f"onnx.export({fn.__name__}): pass input_signature (TensorSpecs) "
                             "or give the function one")
        return fn.get_concrete_function(*sig)
    if input_signature is None:
        inputs = getattr(fn, "inputs", None)  # a built functional or Sequential model
        if not inputs:
            raise ValueError(f"onnx.export({_fn_name(fn)}): pass input_signature "
                             "(TensorSpecs: shapes and dtypes of the inputs)")
        input_signature = [TensorSpec(tuple(t.shape), t.dtype) for t in inputs]
    input_signature = list(input_signature)
    if hasattr(fn, "trainable_weights") and hasattr(fn, "call"):  # a Keras model or layer
        model = fn
        if len(input_signature) == 1:
            def call(x):
                return model(x, training=False)
        else:
            def call(*xs):
                return model(list(xs), training=False)
        return function(call, input_signature=input_signature).get_concrete_function()
    return function(fn, input_signature=input_signature).get_concrete_function()


def _fn_name(fn) -> str:
    return getattr(fn, "__name__", None) or getattr(fn, "name", None) or type(fn).__name__


def _ir_version(opset: int) -> int:
    return next(ir for top, ir in _IR_VERSIONS if opset <= top)


def _dim_names(graph) -> dict:
    """ONNX dim names for the unknown dims of the inputs: "batch" for the leading one
    (shared by all inputs, as one batch), `<input>_dim<axis>` for the others."""
    names = {}
    for t in graph.inputs:
        for axis, d in enumerate(t._shape):
            if d is None:
                base = t.name.removesuffix(":0")
                names[(t.id, axis)] = "batch" if axis == 0 else f"{base}_dim{axis}"
    return names


# Stand-ins for the named dynamic dims when output dims are traced through the shape
# rules: primes far from any size a model holds, so that an output dim equal to one
# (not a product or a sum of it, not a constant) is that input dim.
_PROBES = (1000003, 1000033, 1000037, 1000039, 1000081, 1000099, 1000117, 1000121)


def _probe_sizes(graph, given: dict) -> dict:
    """{tensor id: shape} of `graph`'s tensors, its inputs' shapes `given` ({tensor id:
    shape}, probe sizes standing for dynamic dims), through the ops' shape rules. A rule
    that fails leaves its outputs at their traced shapes; a While's loop variable keeps
    its initial probe size when one pass of the body keeps it (so every pass does)."""
    sizes = dict(given)

    def shape(t):
        return sizes.get(t.id, tuple(t.shape) if isinstance(t, Variable) else t._shape)

    def size(d):
        if type(d) is not Dim:
            return d
        s = sizes.get(d.tensor.id)
        axes = d.axis if isinstance(d.axis, tuple) else (d.axis,)
        if s is None or any(s[a] is None for a in axes):
            return None
        return int(np.prod([s[a] for a in axes]))

    def attr(v):
        if type(v) is Dim:
            return size(v)
        if type(v) in (tuple, list) and any(type(d) is Dim for d in v):
            return type(v)(size(d) for d in v)
        return v

    for node in graph.nodes:
        rule = SHAPES.get(node.op)
        if node.op == "Placeholder" or rule is None:
            continue
        try:
            if node.op == "While":
                specs = _while_sizes(node, shape)
            else:
                shapes = {k: [shape(m) for m in v] if isinstance(v, (list, tuple))
                          else shape(v) for k, v in node.inputs.items()}
                kinds = {k: [m.dtype for m in v] if isinstance(v, (list, tuple))
                         else v.dtype for k, v in node.inputs.items()}
                specs = [got for got, _ in rule(shapes, kinds,
                                                {k: attr(v) for k, v in node.attrs.items()})]
        except Exception:  # noqa: BLE001 - a rule that rejects probe sizes names nothing
            continue
        for got, out in zip(specs, node.outputs):
            if got is not None and len(got) == len(out._shape):
                sizes[out.id] = tuple(got)
    return sizes


def _while_sizes(node, shape) -> list:
    """The loop variables' shapes after a While: each dim the body carries unchanged."""
    body, init = node.attrs["body"], list(node.inputs["loop_vars"])
    outside = list(node.inputs["args"])
    given = {p.id: shape(t) for p, t in zip(body.graph.inputs, init + outside)}
    after = _probe_sizes(body.graph, given)
    out = []
    for t, o, spec in zip(init, body.graph.outputs, node.outputs):
        start, end = shape(t), after.get(o.id, o._shape)
        out.append(tuple(d if d == e and sd is None else sd
                         for d, e, sd in zip(start, end, spec._shape)))
    return out + [()]


def _output_dim_names(graph, outputs: list, dims: dict) -> dict:
    """{(output index, axis): name} for the outputs' unknown dims that are a named input
    dim: the ops' shape rules run again on the inputs' shapes with a distinct probe size
    for each name (a node whose rule does not carry the size through leaves its outputs'
    dims unnamed)."""
    probe_of: dict = {}
    for name in dims.values():
        if name not in probe_of and len(probe_of) < len(_PROBES):
            probe_of[name] = _PROBES[len(probe_of)]
    name_of = {p: n for n, p in probe_of.items()}
    given = {t.id: tuple(probe_of.get(dims.get((t.id, a))) if d is None else d
                         for a, d in enumerate(t._shape)) for t in graph.inputs}
    sizes = _probe_sizes(graph, given)
    named = {}
    for i, t in enumerate(outputs):
        for a, d in enumerate(sizes.get(t.id, ())):
            if t._shape[a] is None and d in name_of:
                named[(i, a)] = name_of[d]
    return named


def to_model_proto(fn, input_signature=None, opset: int | None = None) -> bytes:
    """The ONNX ModelProto (serialized) of `fn`; see `export`."""
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < MIN_OPSET:
        raise ValueError(f"onnx.export: opset must be >= {MIN_OPSET}, got {opset}")
    cf = _concrete(fn, input_signature)
    graph, fn_name = cf.graph, cf.name
    e = Emitter(opset, fn_name)
    captured = {ph.id: outside for outside, ph in graph.captures}
    dims = _dim_names(graph)
    inputs = []
    for t in graph.inputs:
        if t.id in captured:  # a captured tensor: its value now, as an initializer
            e.names[t.id] = e.initializer(t.name.removesuffix(":0"),
                                          np.asarray(captured[t.id].numpy()))
            continue
        name = e.fresh(t.name.removesuffix(":0"))
        e.names[t.id] = name
        shape = [dims.get((t.id, a), d) for a, d in enumerate(t._shape)]
        inputs.append(proto.value_info(name, t.dtype.name, shape))
    for var in graph.variables.values():
        e.name_of(var)  # initializers in the order the function reads its variables
    outputs = [o for o in cf._flat_outputs if isinstance(o, Tensor)]
    e.lower(graph, outputs)
    out_infos = []
    out_dims = _output_dim_names(graph, outputs, dims)
    for i, t in enumerate(outputs):
        name = e.fresh(f"output_{i}")
        e.add("Identity", [e.name_of(t)], [name])
        shape = [dims.get((t.id, a), out_dims.get((i, a))) if d is None else d
                 for a, d in enumerate(t._shape)]
        out_infos.append(proto.value_info(name, t.dtype.name, shape))
    g = proto.graph(fn_name, e.nodes, e.initializers, inputs, out_infos)
    return proto.model(g, opset, _ir_version(opset), "tapeflow", _version())


def export(fn, path: str, input_signature=None, opset: int | None = None) -> bytes:
    """Write `fn` (a `tf.function`, a ConcreteFunction, a Keras model or a Python callable)
    as an ONNX model to `path`: traced on `input_signature` (TensorSpecs; a None dim is a
    named dynamic dim, "batch" when leading, and an output dim that is one has its name),
    weights as initializers, each op by its ONNX lowering (an op without one raises
    NotImplementedError naming it). `opset` defaults to 17. Returns the serialized model.

    Example:
        >>> import tempfile, os
        >>> f = tf.function(lambda x: tf.nn.relu(x) * 2.0)
        >>> path = os.path.join(tempfile.mkdtemp(), "f.onnx")
        >>> data = tf.onnx.export(f, path, [tf.TensorSpec([None, 3], tf.float32)])
        >>> os.path.getsize(path) == len(data)
        True
    """
    data = to_model_proto(fn, input_signature, opset)
    with open(path, "wb") as fh:
        fh.write(data)
    return data

