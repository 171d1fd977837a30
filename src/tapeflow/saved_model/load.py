"""`load`: a SavedModel (written by TensorFlow 2 or by `save`) as tapeflow objects.

The object graph's nodes come back as TensorFlow's loader makes them: user objects with
their children as attributes, lists/dicts/tuples, Variables restored from `variables/`,
restored tf.functions (callable with tensors; the concrete function matching the call's
inputs runs) and, on the root, `.signatures` whose functions return dicts. Each concrete
function runs its FunctionDef as tapeflow ops (graph_ops.Library) inside a tapeflow
`tf.function`, so a call traces once per function into a tapeflow graph and gradients flow
through it like any traced function.

Example:
    >>> loaded = tf.saved_model.load("/tmp/m")
    >>> loaded.signatures["serving_default"](x=tf.ones([2, 4]))["output_0"].shape
    TensorShape([2, 3])
"""
from __future__ import annotations

import collections
import inspect
import os
from collections.abc import Mapping

import numpy as np

from .._core import nest
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from ..function.trace import function
from ..ops import creation as K
from ..train.checkpoint import tensor_bundle
from . import proto as P
from .graph_ops import Library, as_tensor

__all__ = ["load", "LoadOptions"]

_VARIABLE_VALUE = "VARIABLE_VALUE"
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


class LoadOptions:
    """Options of `load`, as TensorFlow's `tf.saved_model.LoadOptions`: with
    `experimental_skip_checkpoint=True` variables keep zeros instead of the saved values;
    the others are accepted for compatibility.

    Example:
        >>> tf.saved_model.load("/tmp/m", options=tf.saved_model.LoadOptions())
    """

    def __init__(self, allow_partial_checkpoint: bool = False, experimental_io_device=None,
                 experimental_skip_checkpoint: bool = False,
                 experimental_variable_policy=None,
                 experimental_load_function_aliases: bool = False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_load_function_aliases = experimental_load_function_aliases


# ---------------------------------------------------------------- structures

def _structure(buf: bytes):
    """A StructuredValue as Python: TensorSpecs, None, numbers, strings, lists, tuples,
    dicts (named tuples as dicts of their fields' values)."""
    f = P.parse(buf)
    if 1 in f:
        return None
    if 11 in f:
        return float(np.frombuffer(int(f[11][-1]).to_bytes(8, "little"), "<f8")[0])
    if 12 in f:
        return P.signed(f[12][-1])
    if 13 in f:
        return f[13][-1].decode("utf-8")
    if 14 in f:
        return bool(f[14][-1])
    if 31 in f:
        return P.decode_shape(f[31][-1])
    if 32 in f:
        return P.dtype_of(f[32][-1])
    if 33 in f or 35 in f:
        spec = P.parse((f.get(33) or f[35])[-1])
        name = P.text(spec, 1) or None
        return TensorSpec(P.decode_shape(spec.get(2, [b""])[-1]),
                          P.dtype_of(spec.get(3, [1])[-1]), name=name)
    if 51 in f:
        return [_structure(v) for v in P.parse(f[51][-1]).get(1, [])]
    if 52 in f:
        return tuple(_structure(v) for v in P.parse(f[52][-1]).get(1, []))
    if 53 in f:
        return {k: _structure(v) for k, v in P.parse_map(P.parse(f[53][-1]).get(1, []))
                .items()}
    if 54 in f:  # a namedtuple: rebuilt as one of its name and fields (field order)
        nt = P.parse(f[54][-1])
        pairs = [P.parse(p) for p in nt.get(2, [])]
        kind = collections.namedtuple(P.text(nt, 1) or "NamedTuple",
                                      [P.text(p, 1) for p in pairs], rename=True)
        return kind(*(_structure(p.get(2, [b""])[-1]) for p in pairs))
    if 34 in f:
        raise ValueError("saved_model.load: a signature holds a composite tensor (TypeSpec); "
                         "only tensors are supported")
    return None  # an empty StructuredValue (TensorFlow writes none_value; old files don't)


def _flatten(structure) -> list:
    return nest.flatten(structure)


def _function_spec(buf: bytes) -> tuple[list, dict]:
    """(positional parameter names, {name: default}) of a FunctionSpec."""
    spec = P.parse(buf)
    full = _structure(spec.get(1, [b""])[-1]) if 1 in spec else None
    if not hasattr(full, "_asdict"):
        return [], {}
    full = full._asdict()
    args = list(full.get("args") or [])
    defaults = list(full.get("defaults") or [])
    named = dict(zip(args[len(args) - len(defaults):], defaults)) if defaults else {}
    if spec.get(2, [0])[-1] and args and args[0] == "self":  # is_method
        args = args[1:]
    named.update(full.get("kwonlydefaults") or {})
    return args, named


# ---------------------------------------------------------------- functions

def _named(spec, name: str):
    """A single TensorSpec renamed `name` (a signature's input key); structures as they
    are."""
    if isinstance(spec, TensorSpec):
        return TensorSpec(spec.shape, spec.dtype, name=name)
    return spec


def _compatible(spec: TensorSpec, value: Tensor) -> bool:
    if value.dtype != spec.dtype:
        return False
    if spec.shape.rank is None:
        return True
    shape = tuple(value.shape)
    want = tuple(spec.shape)
    return len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want))


class _Mismatch(Exception):
    pass


def _match(spec, value, path: str) -> list:
    """Tensors of `value` in the order of `spec`'s leaves; raises _Mismatch."""
    if isinstance(spec, TensorSpec):
        if isinstance(value, Variable):
            value = value.read_value()
        if not isinstance(value, Tensor):
            if value is None or isinstance(value, (str, bytes)):
                raise _Mismatch(path)
            try:
                value = K.constant(np.asarray(value), dtype=spec.dtype)
            except (TypeError, ValueError):
                raise _Mismatch(path) from None
        if not _compatible(spec, value):
            raise _Mismatch(path)
        return [value]
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise _Mismatch(path)
        return [t for k in sorted(spec) for t in _match(spec[k], value[k], f"{path}[{k!r}]")]
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise _Mismatch(path)
        return [t for i, (s, v) in enumerate(zip(spec, value))
                for t in _match(s, v, f"{path}[{i}]")]
    if isinstance(value, Tensor) or spec != value:
        raise _Mismatch(path)
    return []


class RestoredConcreteFunction:
    """One concrete function of a SavedModel: called with the structure it was traced
    for (positional arguments, or keywords; a signature function takes its inputs by
    name and returns a dict), it runs its FunctionDef as a tapeflow traced function.

    Example:
        >>> f = loaded.signatures["serving_default"]
        >>> f(x=tf.ones([2, 4]))
        {'output_0': <tf.Tensor: shape=(2, 3), dtype=float32, numpy=...>}
    """

    def __init__(self, name: str, library: Library, inputs, outputs, bound: list,
                 keywords: list | None = None, params: list | None = None,
                 defaults: dict | None = None):
        self.name = name
        self._param_names = list(params or [])  # the Python names of positional inputs
        self._defaults = dict(defaults or {})   # their defaults, from the FunctionSpec
        self._library = library
        self.structured_input_signature = inputs
        self.structured_outputs = outputs
        self._bound = bound
        self._keywords = list(keywords or [])
        self._specs = [s for s in _flatten(inputs) if isinstance(s, TensorSpec)]
        fdef = library.functions.get(name)
        if fdef is None:
            raise ValueError(f"saved_model.load: the object graph names function {name}, "
                             "which the SavedModel's library lacks")
        if len(fdef.inputs) != len(self._specs) + len(bound):
            raise ValueError(f"saved_model.load: function {name} takes {len(fdef.inputs)} "
                             f"inputs, its signature has {len(self._specs)} tensors and "
                             f"{len(bound)} captured values")
        self._traced = None      # one trace for the signature's shapes ...
        self._exact: dict = {}   # ... or, where that cannot trace, one per input shape

    @property
    def variables(self) -> list:
        """The variables the function reads or writes."""
        return [v for v in self._bound if isinstance(v, Variable)]

    @property
    def trainable_variables(self) -> list:
        return [v for v in self.variables if v.trainable]

    def _graph_function(self, specs: list):
        """A tapeflow tf.function running the FunctionDef, traced for `specs`."""
        lib, name, bound = self._library, self.name, self._bound

        def run(flat):
            outs = lib.call(name, list(flat) + bound)
            return [as_tensor(o) for o in outs]
        run.__name__ = name
        return function(run, input_signature=[[TensorSpec(s.shape, s.dtype) for s in specs]],
                        autograph=False)

    def _bind(self, args: tuple, kwargs: dict) -> list:
        """The call's tensors in the order of the FunctionDef's inputs; _Mismatch when
        the call does not fit this function."""
        kwargs = dict(kwargs)  # (consumed below; the caller tries other functions with it)
        sig_args, sig_kwargs = self.structured_input_signature
        sig_args, sig_kwargs = list(sig_args or ()), dict(sig_kwargs or {})
        if not sig_args and sig_kwargs and args:
            # a signature function: positional values in the order of its keywords
            names = self._keywords or sorted(sig_kwargs)
            if len(args) > len(names):
                raise _Mismatch("too many positional arguments")
            kwargs = {**dict(zip(names, args)), **kwargs}
            args = ()
        if len(args) > len(sig_args):
            raise _Mismatch("too many positional arguments")
        values = list(args)
        names = self._param_names
        for i in range(len(args), len(sig_args)):
            name = names[i] if i < len(names) else None
            if name is not None and name in kwargs:
                values.append(kwargs.pop(name))
            elif name in self._defaults:  # as the Python function would: its default
                values.append(self._defaults[name])
            elif not any(isinstance(s, TensorSpec) for s in _flatten(sig_args[i])):
                values.append(sig_args[i])  # a Python value traced as it is (training=False)
            else:
                raise _Mismatch(f"missing argument {name or i}")
        given_kw = {}
        for k, spec in sig_kwargs.items():
            if k in kwargs:
                given_kw[k] = kwargs.pop(k)
            elif k in self._defaults:
                given_kw[k] = self._defaults[k]
            elif not any(isinstance(s, TensorSpec) for s in _flatten(spec)):
                given_kw[k] = spec
            else:
                raise _Mismatch(f"missing argument {k}")
        if kwargs:
            raise _Mismatch(f"unexpected arguments {sorted(kwargs)}")
        return _match((tuple(sig_args), sig_kwargs), (tuple(values), given_kw), "")

    def __call__(self, *args, **kwargs):
        try:
            flat = self._bind(args, kwargs)
        except _Mismatch as e:
            raise TypeError(f"{self.name}: the call does not match its signature "
                            f"{self.structured_input_signature} ({e})") from None
        return self._call_flat(flat)

    def _run_traced(self, flat: list):
        if not self._exact:
            if self._traced is None:
                self._traced = self._graph_function(self._specs)
                try:
                    return self._traced(list(flat))
                except Exception:
                    # a graph that needs sizes the signature leaves open (a TensorArray
                    # loop over an unknown batch): traced per input shape instead
                    self._traced = None
                    self._exact[None] = None
                    return self._run_traced(flat)
            return self._traced(list(flat))
        key = tuple((tuple(t.shape), t.dtype.name) for t in flat)
        fn = self._exact.get(key)
        if fn is None:
            fn = self._exact[key] = self._graph_function(
                [TensorSpec(tuple(t.shape), t.dtype) for t in flat])
        return fn(list(flat))

    def _call_flat(self, flat: list):
        outs = self._run_traced(flat)
        if isinstance(outs, Tensor):
            outs = [outs]
        return nest.pack_sequence_as(self.structured_outputs, list(outs)) \
            if self.structured_outputs is not None else None

    def _parameters(self) -> tuple[list, list] | None:
        """(Python parameter names, their spec structures) of this function as a Python
        function of its inputs, or None when a Python value (not a tensor) is one."""
        sig_args, sig_kwargs = self.structured_input_signature
        sig_args, sig_kwargs = list(sig_args or ()), dict(sig_kwargs or {})
        for leaf in _flatten((sig_args, sig_kwargs)):
            if not isinstance(leaf, TensorSpec):
                return None
        names = [self._param_names[i] if i < len(self._param_names) else f"arg_{i}"
                 for i in range(len(sig_args))]
        keys = [k for k in (self._keywords or sorted(sig_kwargs)) if k in sig_kwargs]
        keys += [k for k in sorted(sig_kwargs) if k not in keys]
        specs = list(sig_args) + [_named(sig_kwargs[k], k) for k in keys]
        return names + keys, specs

    def as_function(self):
        """This function as a tapeflow `tf.function` with an input_signature (what
        `saved_model.save` writes again), or None when a Python value is one of its
        inputs."""
        params = self._parameters()
        if params is None:
            return None
        names, specs = params
        n_args = len(self.structured_input_signature[0] or ())

        def run(*values):
            return self(*values[:n_args], **dict(zip(names[n_args:], values[n_args:])))
        run.__signature__ = inspect.Signature([
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        run.__name__ = self.name.replace("__inference_", "").rsplit("_", 1)[0] or "restored"
        return function(run, input_signature=specs, autograph=False)

    def __repr__(self) -> str:
        return f"<RestoredConcreteFunction {self.name} {self.structured_input_signature}>"


class RestoredFunction:
    """A tf.function of a SavedModel: its traced concrete functions; a call runs the
    first one whose signature the arguments fit, as TensorFlow's restored functions do.

    Example:
        >>> loaded.__call__(tf.ones([2, 4]))
    """

    def __init__(self, name: str, concrete: list, input_signature=None):
        self.name = name
        self.concrete_functions = concrete
        self.input_signature = input_signature

    @property
    def variables(self) -> list:
        out, seen = [], set()
        for cf in self.concrete_functions:
            for v in cf.variables:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    @property
    def trainable_variables(self) -> list:
        return [v for v in self.variables if v.trainable]

    def get_concrete_function(self, *args, **kwargs) -> RestoredConcreteFunction:
        """The concrete function that a call with these arguments (or TensorSpecs) runs."""
        if not args and not kwargs and len(self.concrete_functions) == 1:
            return self.concrete_functions[0]
        for cf in self.concrete_functions:
            try:
                cf._bind(tuple(_spec_values(args)), _spec_values(kwargs))
                return cf
            except _Mismatch:
                continue
        raise ValueError(f"{self.name}: no restored concrete function fits these arguments")

    def __call__(self, *args, **kwargs):
        for cf in self.concrete_functions:
            try:
                flat = cf._bind(args, kwargs)
            except _Mismatch:
                continue
            return cf._call_flat(flat)
        sigs = "\n  ".join(str(cf.structured_input_signature)
                           for cf in self.concrete_functions)
        raise ValueError(f"Could not find matching concrete function to call loaded from "
                         f"the SavedModel: restored function {self.name} got "
                         f"args={args!r}, kwargs={kwargs!r}; it was traced for:\n  {sigs}")

    def __get__(self, instance, owner=None):
        return self

    def as_function(self):
        """A tapeflow `tf.function` running this function, traced for each restored
        concrete function whose inputs are all tensors (what `saved_model.save` writes
        again), or None when none is."""
        usable = [(cf, cf._parameters()) for cf in self.concrete_functions]
        usable = [(cf, p) for cf, p in usable if p is not None]
        if not usable:
            return None
        names, _ = usable[0][1]
        restored = self

        def run(*args, **kwargs):
            return restored(*args, **kwargs)
        run.__signature__ = inspect.Signature([
            inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        run.__name__ = self.name if self.name.isidentifier() else "restored"
        if len(usable) == 1:
            return function(run, input_signature=usable[0][1][1], autograph=False)
        fn = function(run, autograph=False)
        for cf, (_, specs) in usable:
            fn.get_concrete_function(*specs)
        return fn

    def __repr__(self) -> str:
        return f"<RestoredFunction {self.name}: {len(self.concrete_functions)} traces>"


def _spec_values(structure):
    """TensorSpecs in `structure` as zero tensors of their shapes (unknown dims 1), for
    matching a signature."""
    def one(x):
        if isinstance(x, TensorSpec):
            shape = [1 if d is None else d for d in (x.shape or ())]
            return K.zeros(shape, x.dtype)
        return x
    if isinstance(structure, dict):
        return {k: nest.map_structure(one, v) for k, v in structure.items()}
    return [nest.map_structure(one, v) for v in structure]


# ---------------------------------------------------------------- objects

class _UserObject:
    """An object of a SavedModel's object graph: its children as attributes.

    Example:
        >>> loaded.w1        # a restored Variable
    """

    def __init__(self):
        self.__dict__["_children"] = {}

    def _trackable_children(self) -> dict:
        return {k: v for k, v in self._children.items()
                if not isinstance(v, (RestoredFunction, RestoredConcreteFunction,
                                      _SignatureMap))}

    def _restored_functions(self) -> dict:
        """{name: tapeflow tf.function} of the restored functions this object holds,
        those `saved_model.save` can write again."""
        out = {}
        for name, value in self._children.items():
            if isinstance(value, (RestoredFunction, RestoredConcreteFunction)):
                fn = value.as_function()
                if fn is not None:
                    out[name] = fn
        return out

    def _restored_signatures(self) -> dict:
        """{key: concrete function} of this object's signatures, as tapeflow traces."""
        sigs = self._children.get("signatures")
        out = {}
        for key, value in (sigs.items() if isinstance(sigs, _SignatureMap) else ()):
            fn = value.as_function()
            if fn is not None:
                out[key] = fn.get_concrete_function()
        return out

    def _add_child(self, name: str, value) -> None:
        self._children[name] = value
        if name == "__call__":  # Python looks __call__ up on the class
            cls = type(self)
            if cls is _UserObject:
                self.__class__ = type("_UserObject", (_UserObject,), {})
            type(self).__call__ = lambda obj, *a, **k: obj._children["__call__"](*a, **k)
            return
        try:
            object.__setattr__(self, name, value)
        except (AttributeError, TypeError):
            pass  # a name Python cannot hold as an attribute: reachable via _children

    def __repr__(self) -> str:
        return f"<_UserObject with children {sorted(self._children)}>"


class _SignatureMap(Mapping):
    """The root's `.signatures`: {key: signature function}."""

    def __init__(self):
        self._functions: dict = {}

    def __getitem__(self, key):
        return self._functions[key]

    def __iter__(self):
        return iter(sorted(self._functions))

    def __len__(self) -> int:
        return len(self._functions)

    def __repr__(self) -> str:
        return f"_SignatureMap({sorted(self._functions)})"

    def _trackable_children(self) -> dict:
        return {}


# ---------------------------------------------------------------- the loader

def _meta_graph(saved_model: bytes, tags, where: str) -> dict:
    metas = [P.parse(m) for m in P.parse(saved_model).get(2, [])]
    if not metas:
        raise ValueError(f"saved_model.load: {where} holds no MetaGraphDef")
    if tags is None:
        return metas[0] if len(metas) == 1 else next(
            (m for m in metas if "serve" in _tags(m)), metas[0])
    want = {tags} if isinstance(tags, str) else set(tags)
    for m in metas:
        if set(_tags(m)) == want:
            return m
    raise RuntimeError(f"MetaGraphDef associated with tags {sorted(want)} could not be found "
                       f"in SavedModel {where}; available tag sets: "
                       f"{[sorted(_tags(m)) for m in metas]}")


def _tags(meta: dict) -> list:
    info = P.parse(meta.get(1, [b""])[-1])
    return [t.decode("utf-8") for t in info.get(4, [])]


def _checkpoint_values(export_dir: str, nodes: list) -> dict:
    """{saved object node id: value} of the variables in variables/, found by walking the
    checkpoint's object graph beside the SavedObjectGraph by child names."""
    prefix = os.path.join(export_dir, "variables", "variables")
    if not tensor_bundle.is_bundle(prefix):
        return {}
    values = tensor_bundle.read_bundle(prefix)
    raw = values.get(_GRAPH_KEY)
    if raw is None:
        return {}
    raw = raw[()] if raw.shape == () else raw.reshape(-1)[0]
    ckpt = []
    for node in P.parse(raw).get(1, []):
        f = P.parse(node)
        children = {P.text(P.parse(c), 2): P.parse(c).get(1, [0])[-1] for c in f.get(1, [])}
        attrs = {P.text(P.parse(a), 1): P.text(P.parse(a), 3) for a in f.get(2, [])}
        ckpt.append((children, attrs))
    out: dict[int, np.ndarray] = {}
    seen = {0}
    frontier = [(0, 0)]
    while frontier:
        nxt = []
        for saved_id, ckpt_id in frontier:
            children, attrs = ckpt[ckpt_id]
            key = attrs.get(_VARIABLE_VALUE)
            if key is not None and key in values:
                out[saved_id] = values[key]
            for name, child in nodes[saved_id]["children"]:
                if child not in seen and name in children:
                    seen.add(child)
                    nxt.append((child, children[name]))
        frontier = nxt
    return out


def _object_nodes(object_graph: dict) -> list:
    nodes = []
    for raw in object_graph.get(1, []):
        f = P.parse(raw)
        children = [(P.text(P.parse(c), 2), P.parse(c).get(1, [0])[-1])
                    for c in f.get(1, [])]
        kind = next((k for k in (4, 5, 6, 7, 8, 9, 10, 12) if k in f), None)
        nodes.append({"children": children, "kind": kind,
                      "body": P.parse(f[kind][-1]) if kind else {}})
    return nodes


def load(export_dir, tags=None, options: LoadOptions | None = None):
    """Load the SavedModel in `export_dir` (written by TensorFlow 2 or tapeflow).

    Returns the root object: its children as attributes (Variables restored from the
    checkpoint, restored tf.functions, submodules, lists, dicts) and `.signatures`. An op
    tapeflow lacks in any of its functions raises UnsupportedOpError naming the op, its node
    and the function.

    Example:
        >>> loaded = tf.saved_model.load("/tmp/m")
        >>> loaded.signatures["serving_default"](x=tf.ones([2, 4]))
    """
    export_dir = os.fspath(export_dir)
    path = os.path.join(export_dir, "saved_model.pb")
    if not os.path.exists(path):
        raise OSError(f"SavedModel file does not exist at: {export_dir}{os.sep}"
                      "{saved_model.pbtxt|saved_model.pb}")
    with open(path, "rb") as f:
        meta = _meta_graph(f.read(), tags, export_dir)
    graph = P.parse(meta.get(2, [b""])[-1])
    library = P.parse(graph.get(2, [b""])[-1])
    functions = {}
    for raw in library.get(1, []):
        fdef = P.FunctionDef(raw)
        functions[fdef.name] = fdef
    lib = Library(functions)
    if 7 not in meta:
        raise ValueError(f"saved_model.load: {export_dir} has no object graph (a TensorFlow "
                         "1 SavedModel); only TensorFlow 2 SavedModels can be loaded")
    object_graph = P.parse(meta[7][-1])
    nodes = _object_nodes(object_graph)
    concrete = {k: P.parse(v) for k, v in P.parse_map(object_graph.get(2, [])).items()}
    skip = options is not None and options.experimental_skip_checkpoint
    values = {} if skip else _checkpoint_values(export_dir, nodes)
    graph_nodes = {}
    for raw in graph.get(1, []):
        n = P.NodeDef(raw)
        graph_nodes[n.name] = n
    assets = [P.text(P.parse(a), 2) for a in meta.get(6, [])]

    built: dict[int, object] = {}

    def concrete_fn(name: str, keywords=None, params=None,
                    defaults=None) -> RestoredConcreteFunction:
        rec = concrete.get(name, {})
        inputs = _structure(rec[3][-1]) if 3 in rec else ((), {})
        outputs = _structure(rec[4][-1]) if 4 in rec else None
        bound = [build(i) for i in P.varints(rec.get(2, []))]
        bound = [b.numpy() if isinstance(b, Tensor) else b for b in bound]
        return RestoredConcreteFunction(name, lib, inputs, outputs, bound, keywords, params,
                                        defaults)

    def build(nid: int):
        if nid in built:
            return built[nid]
        node = nodes[nid]
        kind, body = node["kind"], node["body"]
        if kind == 4:
            ident = P.text(body, 1)
            if ident == "trackable_list_wrapper":
                obj = built[nid] = []
                for name, child in sorted(node["children"], key=lambda c: int(c[0])
                                          if c[0].isdigit() else 0):
                    obj.append(build(child))
                return obj
            if ident == "trackable_dict_wrapper":
                obj = built[nid] = {}
                for name, child in node["children"]:
                    obj[name] = build(child)
                return obj
            if ident == "trackable_tuple_wrapper":
                obj = built[nid] = tuple(build(c) for _, c in node["children"])
                return obj
            if ident == "signature_map":
                obj = built[nid] = _SignatureMap()
                for name, child in node["children"]:
                    obj._functions[name] = build(child)
                return obj
            obj = built[nid] = _UserObject()
            for name, child in node["children"]:
                obj._add_child(name, build(child))
            return obj
        if kind == 7:
            dtype = P.dtype_of(body.get(1, [1])[-1])
            shape = P.decode_shape(body.get(2, [b""])[-1]) or ()
            value = values.get(nid)
            if value is None:
                value = np.zeros([d or 0 for d in shape], dtype.as_numpy_dtype)
            name = P.text(body, 6) or None
            obj = built[nid] = Variable(np.asarray(value), dtype=dtype,
                                        trainable=bool(body.get(3, [1])[-1]), name=name)
            return obj
        if kind == 6:
            names = [n.decode("utf-8") for n in body.get(1, [])]
            params, defaults = _function_spec(body[2][-1]) if 2 in body else ([], {})
            spec = P.parse(body[2][-1]) if 2 in body else {}
            sig = _structure(spec[5][-1]) if 5 in spec else None
            label = next((n for n, c in _parents.get(nid, [])), "function")
            obj = built[nid] = RestoredFunction(
                label, [concrete_fn(n, params=params, defaults=defaults) for n in names], sig)
            return obj
        if kind == 8:
            keywords = [k.decode("utf-8") for k in body.get(2, [])]
            params, defaults = _function_spec(body[4][-1]) if 4 in body else ([], {})
            obj = built[nid] = concrete_fn(P.text(body, 1), keywords, params or keywords,
                                           defaults)
            return obj
        if kind == 9:
            const = graph_nodes.get(P.text(body, 1))
            value = np.asarray(const.attrs.get("value")) if const is not None else None
            obj = built[nid] = K.constant(value) if value is not None else None
            return obj
        if kind == 5:
            index = body.get(1, [0])[-1]
            obj = built[nid] = (os.path.join(export_dir, "assets", assets[index])
                                if index < len(assets) else None)
            return obj
        obj = built[nid] = _UserObject()  # resources and captured tensors: a placeholder
        for name, child in node["children"]:
            obj._add_child(name, build(child))
        return obj

    _parents: dict[int, list] = {}
    for pid, node in enumerate(nodes):
        for name, child in node["children"]:
            _parents.setdefault(child, []).append((name, pid))
    lib.check(sorted(concrete))
    root = build(0)
    if isinstance(root, _UserObject) and not isinstance(getattr(root, "signatures", None),
                                                          _SignatureMap):
        root._add_child("signatures", _SignatureMap())
    return root
