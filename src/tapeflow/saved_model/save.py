"""`save`: an object's variables and traced functions in TensorFlow's SavedModel format.

Written: `saved_model.pb` (a SavedModel with one MetaGraphDef tagged "serve": the
functions as a FunctionDefLibrary, a serving graph that calls each signature, the
SignatureDefs and the SavedObjectGraph that `tf.saved_model.load` rebuilds objects from),
`variables/variables.{index,data-00000-of-00001}` (a checkpoint with the object as root)
and an empty `assets/`.
"""
from __future__ import annotations

import itertools
import os

import numpy as np

from .._core import nest
from .._core.tensor import Tensor, TensorSpec
from .._core.variable import Variable
from ..function.concrete import ConcreteFunction
from ..function.trace import Function
from .._core.dtypes import as_dtype
from ..train.checkpoint import Checkpoint
from ..train.checkpoint.graph import collect
from ..train.checkpoint.object_graph import key_of
from ..train.checkpoint.trackable import is_trackable, named_children
from . import proto as P
from .lowering import arg_name, lower

__all__ = ["save", "SaveOptions", "SERVING", "DEFAULT_SIGNATURE"]

SERVING = "serve"
DEFAULT_SIGNATURE = "serving_default"
_PREDICT = "tensorflow/serving/predict"
_TF_VERSION = "2.21.0"
_PRODUCER = 2474  # GraphDef version of TensorFlow 2.21
_ids = itertools.count(1)


class SaveOptions:
    """Options of `save`, as TensorFlow's `tf.saved_model.SaveOptions`. Of these,
    `function_aliases` ({alias: tf.function}) is written (the MetaInfoDef's function
    aliases); the others are accepted for compatibility and change nothing here.

    Example:
        >>> opts = tf.saved_model.SaveOptions(function_aliases={"fwd": module.__call__})
        >>> tf.saved_model.save(module, "/tmp/m", options=opts)
    """

    def __init__(self, namespace_whitelist=None, save_debug_info: bool = False,
                 function_aliases=None, experimental_io_device=None,
                 experimental_variable_policy=None, **kwargs):
        self.namespace_whitelist = namespace_whitelist
        self.save_debug_info = save_debug_info
        self.function_aliases = dict(function_aliases or {})
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = experimental_variable_policy


# ---------------------------------------------------------------- structures

def _spec(name, shape, dtype) -> bytes:
    return P.msg(33, P.field(1, name or ""), P.msg(2, P.shape_proto(shape)),
                 P.field(3, P.dtype_enum(dtype)))


def structured(value, name: str = "") -> bytes:
    """StructuredValue of a nest of TensorSpecs / tensors / Python values."""
    if value is None:
        return P.msg(1)
    if isinstance(value, TensorSpec):
        return _spec(value.name, value.shape, value.dtype)
    if isinstance(value, (Tensor, Variable)):
        return _spec(name, value.shape, value.dtype)
    if isinstance(value, bool):
        return P.boolean(14, value)
    if isinstance(value, int):
        return P.field(12, value)
    if isinstance(value, str):
        return P.field(13, value)
    if isinstance(value, float):
        return P.field(11, ("double", value))
    if isinstance(value, dict):
        return P.msg(53, *(P.map_entry(1, str(k), structured(value[k], str(k)))
                           for k in sorted(value)))
    if isinstance(value, tuple):
        return P.msg(52, *(P.msg(1, structured(v)) for v in value))
    if isinstance(value, list):
        return P.msg(51, *(P.msg(1, structured(v)) for v in value))
    raise ValueError(f"saved_model: cannot record a {type(value).__name__} in a function's "
                     "signature")


def _fullargspec(args: list, kwonly: list = (), varargs: str | None = None) -> bytes:
    def pair(key, value: bytes) -> bytes:
        return P.msg(2, P.field(1, key), P.msg(2, value))
    strings = lambda xs: P.msg(51, *(P.msg(1, P.field(13, x)) for x in xs))  # noqa: E731
    return P.msg(54, P.field(1, "FullArgSpec"),
                 pair("args", strings(args)),
                 pair("varargs", P.field(13, varargs) if varargs else P.msg(1)),
                 pair("varkw", P.msg(1)), pair("defaults", P.msg(1)),
                 pair("kwonlyargs", strings(kwonly)), pair("kwonlydefaults", P.msg(1)),
                 pair("annotations", P.msg(53)))


def _function_spec(args: list, kwonly: list = (), input_signature=None,
                   varargs: str | None = None) -> bytes:
    sig = (structured(tuple(input_signature)) if input_signature is not None
           else P.msg(1))
    return P.msg(1, _fullargspec(args, kwonly, varargs)) + P.msg(5, sig)


# ---------------------------------------------------------------- the pieces

class _Exported:
    """One concrete function as written: its FunctionDef name, lowering and arguments."""

    def __init__(self, cf: ConcreteFunction, arg_names: list):
        self.cf = cf
        self.name = f"__inference_{_clean(cf.name)}_{next(_ids)}"
        self.arg_names = arg_names
        self.lowered = lower(cf, self.name, arg_names)


def _clean(text: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in text)


def _arg_names(cf: ConcreteFunction) -> list:
    args, kwargs = cf.structured_input_signature
    flat = nest.flatten((args, kwargs))
    names = list(cf._arg_names or [])
    out = []
    for i, spec in enumerate(flat):
        label = getattr(spec, "name", None) or (names[i] if i < len(names) and names[i]
                                                else f"arg_{i}")
        out.append(label)
    return out


def _param_names(cf: ConcreteFunction) -> list:
    """The Python parameter of each positional entry of `cf`'s signature."""
    args = cf.structured_input_signature[0]
    names = list(cf._arg_names or [])
    return [names[i] if i < len(names) and names[i] else f"arg_{i}"
            for i in range(len(args))]


def _output_keys(cf: ConcreteFunction) -> list:
    """Signature output names: a dict's keys (sorted, as TensorFlow flattens), else
    output_0, output_1, ..."""
    outs = cf.structured_outputs
    if isinstance(outs, dict):
        for k, v in outs.items():
            if not isinstance(v, Tensor):
                raise ValueError(f"saved_model: signature output {k!r} must be a tensor, "
                                 f"got {type(v).__name__}")
        return sorted(outs)
    flat = nest.flatten(outs)
    return [f"output_{i}" for i in range(len(flat))]


def _keyword_order(inner: _Exported) -> list:
    """The positions of `inner`'s arguments in the order a signature takes them:
    TensorFlow flattens a signature's keyword inputs sorted by key."""
    return sorted(range(len(inner.arg_names)), key=lambda i: inner.arg_names[i])


def _signature_wrapper(inner: _Exported, keys: list) -> tuple[bytes, str, list, list]:
    """A FunctionDef taking the signature's inputs by keyword (its arguments sorted by
    key) and returning the outputs under `keys`, which calls `inner` (as TensorFlow's
    signature wrappers do)."""
    name = f"__inference_signature_wrapper_{next(_ids)}"
    lw = inner.lowered
    taken: set = {"statefulpartitionedcall"}
    order = _keyword_order(inner)
    named = {i: arg_name(inner.arg_names[i], taken) for i in order}
    ins = [(named[i], *lw.inputs[i][1:]) for i in order]
    res = [arg_name("unknown", taken) for _ in lw.variables]
    out_names = [arg_name(k, taken) for k in keys]
    call = P.node_def("StatefulPartitionedCall", "StatefulPartitionedCall",
                      [named[i] for i in range(len(order))] + res, {
                          "f": P.Func(inner.name),
                          "Tin": ("types", [P.dtype_enum(d) for _, d, _ in lw.inputs]
                                  + [P.DT_RESOURCE] * len(res)),
                          "Tout": ("types", [P.dtype_enum(d) for _, d, _ in lw.outputs]),
                          "config": "", "config_proto": "", "executor_type": ""})
    sig = P.field(1, name)
    sig += b"".join(P.msg(2, P.arg_def(n, d)) for n, d, _ in ins)
    sig += b"".join(P.msg(2, P.arg_def(r, "resource", (v.dtype, v.shape)))
                    for r, v in zip(res, lw.variables))
    sig += b"".join(P.msg(3, P.arg_def(o, d)) for o, (_, d, _) in zip(out_names, lw.outputs))
    sig += P.boolean(17, True)
    body = P.msg(1, sig) + P.msg(3, call)
    body += b"".join(P.map_entry(4, o, f"StatefulPartitionedCall:output:{i}")
                     for i, o in enumerate(out_names))
    for k, i in enumerate(order):
        body += P.msg(7, P.field(1, k), P.field(2, P.map_entry(
            1, "_user_specified_name", P.attr_value(inner.arg_names[i]))))
    return body, name, [n for n, _, _ in ins], out_names


def _concrete_of(fn) -> list:
    """The concrete functions to export of a tf.function attribute: its input_signature
    trace, or those already traced."""
    if isinstance(fn, ConcreteFunction):
        return [fn]
    if fn.input_signature is not None:
        return [fn.get_concrete_function()]
    return [cf for cf in fn._cache.values() if isinstance(cf, ConcreteFunction)]


def _function_attrs(obj) -> dict:
    """The tf.function attributes of `obj` (public ones and `__call__`; its class's
    methods, bound, then its own attributes), and concrete functions it holds."""
    def public(name: str) -> bool:
        return not name.startswith("_") or name == "__call__"
    found = {}
    for klass in reversed(type(obj).__mro__):
        for k, v in vars(klass).items():
            if isinstance(v, Function) and public(k):
                found[k] = getattr(obj, k)
    for k, v in getattr(obj, "__dict__", {}).items():
        if isinstance(v, (Function, ConcreteFunction)) and public(k):
            found[k] = v
    restored = getattr(obj, "_restored_functions", None)  # an object `load` rebuilt
    if restored is not None:
        found.update((k, v) for k, v in restored().items() if public(k))
    return found


def _normalize_signatures(obj, signatures) -> dict:
    if signatures is None and hasattr(obj, "_restored_signatures"):
        # an object `load` rebuilt keeps the signatures it was loaded with (as TensorFlow)
        return obj._restored_signatures()
    if signatures is None:
        # as TensorFlow: exactly one tf.function with an input_signature is the default
        # signature; with none or several, the SavedModel has no signature
        found = [fn for fn in _function_attrs(obj).values()
                 if isinstance(fn, Function) and fn.input_signature is not None]
        return {DEFAULT_SIGNATURE: found[0].get_concrete_function()} if len(found) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SIGNATURE: signatures}
    out = {}
    for key, fn in signatures.items():
        if isinstance(fn, Function):
            if fn.input_signature is None:
                raise ValueError(f"saved_model.save: signature {key!r} is a tf.function "
                                 "without input_signature; pass a concrete function "
                                 "(f.get_concrete_function(...)) instead")
            fn = fn.get_concrete_function()
        if not isinstance(fn, ConcreteFunction):
            raise ValueError(f"saved_model.save: signature {key!r} must be a concrete "
                             f"function or a tf.function, got {type(fn).__name__}")
        out[key] = fn
    return out


class _Tree(dict):
    """Children grouped by the parts of their paths."""


class _Container:
    """A list or dict of children that a module names by paths ("layers/0")."""

    def __init__(self, kind: str):
        self.kind = kind


def _add_tree(tree: dict, add, nodes: list) -> list:
    """(name, node id) of each entry of `tree`; nested dicts become container nodes."""
    out = []
    for name, child in tree.items():
        if type(child) is _Tree:
            kind = "list" if all(k.isdigit() for k in child) else "dict"
            nid = len(nodes)
            nodes.append([_Container(kind), kind, [], None])
            nodes[nid][2].extend(_add_tree(child, add, nodes))
            out.append((name, nid))
        else:
            out.append((name, add(child)))
    return out


def _saver(obj, handle_names: dict) -> tuple[list, bytes]:
    """Graph nodes that save and restore the variables checkpoint, and the SaverDef
    naming them: what TensorFlow's session-based loaders (C++ SavedModelBundle, as in
    TensorFlow Serving, and tf.compat.v1.saved_model.loader) run to restore variables."""
    string = as_dtype("string")
    entries = [(key_of(path), target) for path, target in collect(Checkpoint(root=obj))[0]
               .items() if isinstance(target, Variable) and id(target) in handle_names]
    names = np.array([k.encode() for k, _ in entries], dtype=object)
    blanks = np.array([b""] * len(entries), dtype=object)
    nodes = [
        P.node_def("saver_filename", "Placeholder", (), {
            "dtype": string, "shape": ("shape", ())}),
        P.node_def("saver/tensor_names", "Const", (), {
            "dtype": string, "value": ("tensor", (names, string))}),
        P.node_def("saver/shape_and_slices", "Const", (), {
            "dtype": string, "value": ("tensor", (blanks, string))}),
    ]
    dtypes = [v.dtype for _, v in entries]
    reads = []
    for i, (_, v) in enumerate(entries):
        reads.append(f"saver/read_{i}")
        nodes.append(P.node_def(reads[-1], "ReadVariableOp", [handle_names[id(v)]],
                                {"dtype": v.dtype}))
    assigns = []
    if entries:  # (no variables: the save and restore ops have nothing to do)
        nodes.append(P.node_def("saver/SaveV2", "SaveV2", [
            "saver_filename", "saver/tensor_names", "saver/shape_and_slices", *reads],
            {"dtypes": dtypes}))
        nodes.append(P.node_def("saver/RestoreV2", "RestoreV2", [
            "saver_filename", "saver/tensor_names", "saver/shape_and_slices"],
            {"dtypes": dtypes}))
    nodes.append(P.node_def("saver/save", "Identity", ["saver_filename"]
                            + (["^saver/SaveV2"] if entries else []), {"T": string}))
    for i, (_, v) in enumerate(entries):
        assigns.append(f"saver/assign_{i}")
        nodes.append(P.node_def(assigns[-1], "AssignVariableOp", [
            handle_names[id(v)], f"saver/RestoreV2:{i}"], {"dtype": v.dtype}))
    nodes.append(P.node_def("saver/restore_all", "NoOp", [f"^{a}" for a in assigns]))
    saver_def = (P.field(1, "saver_filename:0") + P.field(2, "saver/save:0")
                 + P.field(3, "saver/restore_all") + P.field(7, 2))  # version: V2
    return nodes, saver_def


def save(obj, export_dir, signatures=None, options=None) -> None:
    """Write `obj` (a tf.Module or other trackable) as a SavedModel in `export_dir`.

    Example:
        >>> tf.saved_model.save(module, "/tmp/m")   # TensorFlow: tf.saved_model.load
    """
    if isinstance(obj, Variable) or not is_trackable(obj):
        raise ValueError(f"saved_model.save: expected a trackable object (tf.Module, "
                         f"Keras model), got {type(obj).__name__}")
    export_dir = os.fspath(export_dir)
    signatures = _normalize_signatures(obj, signatures)

    # object graph: the root, what it holds, its tf.functions, the signature map
    nodes: list = []          # [obj, kind, children [(name, node id)], extra]
    ids: dict[int, int] = {}
    exported: dict[int, _Exported] = {}  # id(cf) -> export
    functions_bytes: list[bytes] = []
    concrete_entries: list[bytes] = []

    def export(cf: ConcreteFunction) -> _Exported:
        ex = exported.get(id(cf))
        if ex is None:
            ex = exported[id(cf)] = _Exported(cf, _arg_names(cf))
            functions_bytes.extend(ex.lowered.library)  # what its control flow calls
            functions_bytes.append(ex.lowered.fdef)
        return ex

    def add(o) -> int:
        if id(o) in ids:
            return ids[id(o)]
        nid = len(nodes)
        ids[id(o)] = nid
        entry = [o, None, [], None]
        nodes.append(entry)
        if isinstance(o, Variable):
            entry[1] = "variable"
            return nid
        entry[1] = ("list" if isinstance(o, list) else "tuple" if isinstance(o, tuple)
                    else "dict" if isinstance(o, dict) else "user")
        # a module names what its lists hold "layers/0": TensorFlow's object graph has
        # the list itself as a node in between (a ListWrapper)
        tree = _Tree()
        for name, child in named_children(o, ""):
            *heads, last = name.split("/")
            level = tree
            for h in heads:
                level = level.setdefault(h, _Tree())
            level[last] = child
        entry[2].extend(_add_tree(tree, add, nodes))
        if entry[1] == "user":
            for name, fn in _function_attrs(o).items():
                if isinstance(fn, ConcreteFunction):  # held as it is: a bare function
                    entry[2].append((name, len(nodes)))
                    nodes.append([export(fn), "bare", [], None])
                    continue
                fid = len(nodes)
                fentry = [fn, "function", [], None]
                nodes.append(fentry)
                entry[2].append((name, fid))
                cfs = [export(cf) for cf in _concrete_of(fn)]
                fentry[3] = cfs
                for i, ex in enumerate(cfs):
                    bid = len(nodes)
                    nodes.append([ex, "bare", [], None])
                    fentry[2].append((f"trace_{i}", bid))
        return nid

    add(obj)
    sig_node = len(nodes)
    nodes.append([None, "signature_map", [], None])
    nodes[0][2].append(("signatures", sig_node))

    signature_defs: list[bytes] = []
    wrappers: dict[str, tuple] = {}
    for key in sorted(signatures):
        cf = signatures[key]
        inner = export(cf)
        keys = _output_keys(cf)
        body, wname, in_names, _ = _signature_wrapper(inner, keys)
        functions_bytes.append(body)
        wrappers[key] = (wname, inner, keys)
        bid = len(nodes)
        nodes.append([(wname, in_names), "signature_fn", [], None])
        nodes[sig_node][2].append((key, bid))

    def var_node(v: Variable, fname: str) -> int:
        nid = ids.get(id(v))
        if nid is None:
            raise ValueError(f"saved_model.save: function {fname} reads variable "
                             f"{v.name!r}, which the saved object does not hold (assign "
                             "it to an attribute so it is tracked)")
        return nid

    # concrete function records (bound_inputs: node ids of captured variables)
    for ex in exported.values():
        cf = ex.cf
        args, kwargs = cf.structured_input_signature
        bound = [var_node(v, cf.name) for v in ex.lowered.variables]
        rec = P.packed(2, bound) if bound else b""
        rec += P.msg(3, structured((tuple(args), dict(kwargs))))
        rec += P.msg(4, structured(cf.structured_outputs))
        concrete_entries.append(P.map_entry(2, ex.name, rec))
    for key, (wname, inner, keys) in wrappers.items():
        lw = inner.lowered
        kw = {label: TensorSpec(s, d, name=label)
              for label, (_, d, s) in zip(inner.arg_names, lw.inputs)}
        outs = {k: TensorSpec(s, d, name=k) for k, (_, d, s) in zip(keys, lw.outputs)}
        rec = (P.packed(2, [var_node(v, inner.cf.name) for v in lw.variables])
               if lw.variables else b"")
        rec += P.msg(3, structured(((), kw)))
        rec += P.msg(4, structured(outs))
        concrete_entries.append(P.map_entry(2, wname, rec))

    object_nodes = []
    for o, kind, children, extra in nodes:
        body = b"".join(P.msg(1, P.field(1, cid), P.field(2, name)) for name, cid in children)
        if kind == "variable":
            body += P.msg(7, P.field(1, P.dtype_enum(o.dtype)), P.msg(2, P.shape_proto(o.shape)),
                          P.boolean(3, o.trainable), P.field(6, o.name.split(":")[0]))
        elif kind in ("user", "list", "tuple", "dict", "signature_map"):
            ident = {"user": "_generic_user_object", "list": "trackable_list_wrapper",
                     "tuple": "trackable_tuple_wrapper", "dict": "trackable_dict_wrapper",
                     "signature_map": "signature_map"}[kind]
            body += P.msg(4, P.field(1, ident), P.msg(2, P.version_def(1, 1)))
        elif kind == "function":
            cfs = extra
            spec = b""
            if isinstance(o, Function):
                params = o._signature.parameters.values()
                star = [p.name for p in params if p.kind is p.VAR_POSITIONAL]
                spec = P.msg(2, _function_spec(
                    [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)],
                    (), o.input_signature, star[0] if star else None))
            body += P.msg(6, *(P.field(1, ex.name) for ex in cfs), spec)
            body += b"".join(P.msg(15, P.field(1, cid), P.field(2, name))
                             for name, cid in children)
        elif kind == "bare":
            ex = o
            params = _param_names(ex.cf)
            body += P.msg(8, P.field(1, ex.name),
                          *(P.field(2, n) for n in params),
                          P.field(3, len(params)),
                          P.msg(4, _function_spec(params)))
        elif kind == "signature_fn":
            wname, in_names = o
            body += P.msg(8, P.field(1, wname), *(P.field(2, n) for n in in_names),
                          P.field(3, len(in_names)),
                          P.msg(4, _function_spec([], in_names)))
        object_nodes.append(P.msg(1, body))
    object_graph = b"".join(object_nodes) + b"".join(concrete_entries)

    # the serving graph: variable handles, one placeholder per signature input, a call
    graph_nodes = []
    handle_names = {}
    for o, kind, _, _ in nodes:
        if kind == "variable":
            hname = arg_name(o.name.split(":")[0], set(handle_names.values()))
            handle_names[id(o)] = hname
            graph_nodes.append(P.node_def(hname, "VarHandleOp", (), {
                "dtype": o.dtype, "shape": ("shape", tuple(o.shape)), "shared_name": hname,
                "container": "", "allowed_devices": []}))
    for i, key in enumerate(sorted(wrappers)):
        wname, inner, keys = wrappers[key]
        lw = inner.lowered
        call_name = "StatefulPartitionedCall" + (f"_{i}" if i else "")
        ph_names, in_types = [], []
        inputs_info = []
        for j in _keyword_order(inner):  # the wrapper's argument order
            label, (_, d, s) = inner.arg_names[j], lw.inputs[j]
            in_types.append(P.dtype_enum(d))
            ph = f"{key}_{label}"
            ph_names.append(ph)
            graph_nodes.append(P.node_def(ph, "Placeholder", (), {
                "dtype": d, "shape": ("shape", tuple(s))}))
            inputs_info.append(P.map_entry(1, label, P.field(1, f"{ph}:0")
                                           + P.field(2, P.dtype_enum(d))
                                           + P.msg(3, P.shape_proto(s))))
        graph_nodes.append(P.node_def(call_name, "StatefulPartitionedCall",
                                      ph_names + [handle_names[id(v)] for v in lw.variables], {
            "f": P.Func(wname),
            "Tin": ("types", in_types + [P.DT_RESOURCE] * len(lw.variables)),
            "Tout": ("types", [P.dtype_enum(d) for _, d, _ in lw.outputs]),
            "config": "", "config_proto": "", "executor_type": ""}))
        outputs_info = [P.map_entry(2, k, P.field(1, f"{call_name}:{j}")
                                    + P.field(2, P.dtype_enum(d))
                                    + P.msg(3, P.shape_proto(s)))
                        for j, (k, (_, d, s)) in enumerate(zip(keys, lw.outputs))]
        signature_defs.append(P.map_entry(5, key, b"".join(inputs_info)
                                          + b"".join(outputs_info) + P.field(3, _PREDICT)))
    saver_nodes, saver_def = _saver(obj, handle_names)
    graph_nodes.extend(saver_nodes)
    library = b"".join(P.msg(1, f) for f in functions_bytes)
    graph_def = (b"".join(P.msg(1, n) for n in graph_nodes) + P.msg(2, library)
                 + P.msg(4, P.version_def(_PRODUCER, 12)))
    meta_info = P.field(4, SERVING) + P.field(5, _TF_VERSION)
    for alias, fn in sorted((options.function_aliases if options else {}).items()):
        for cf in _concrete_of(fn):
            ex = exported.get(id(cf))
            if ex is None:
                raise ValueError(f"saved_model.save: function_aliases[{alias!r}] is not a "
                                 "function of the saved object")
            meta_info += P.map_entry(8, ex.name, alias)
    meta_graph = (P.msg(1, meta_info) + P.msg(2, graph_def) + P.msg(3, saver_def)
                  + b"".join(signature_defs)
                  + P.msg(7, object_graph))
    saved_model = P.field(1, 1) + P.msg(2, meta_graph)

    os.makedirs(os.path.join(export_dir, "variables"), exist_ok=True)
    os.makedirs(os.path.join(export_dir, "assets"), exist_ok=True)
    Checkpoint(root=obj).write(os.path.join(export_dir, "variables", "variables"))
    with open(os.path.join(export_dir, "saved_model.pb"), "wb") as f:
        f.write(saved_model)
