"""Graph optimization (API §6.5): before the executor compiles a traced graph, the graph is
rewritten by the rule tables of `function/rules/` with the one rewrite engine of
`function/rewrite.py`, in one walk that reaches their fixed point:
- dead-code elimination: only nodes the outputs need, and stateful nodes, are visited;
- common-subexpression elimination: a pure node equal to an earlier one (same op, inputs
  and attributes) reuses its outputs (the engine hash-conses the nodes it makes);
- simplification (rules.SIMPLIFY, IDENTITIES): x*1, x-0, x+zeros, double negation,
  transpose of transpose, reshape chains, casts to the same dtype, SumTo and BroadcastTo
  to the same shape, scalars spread out, Identity and StopGradient;
- constant folding (rules.FOLD): a pure node whose inputs are all constants runs now,
  through its kernel, and becomes Const nodes (never a stateful or random op);
- products (rules.PRODUCTS, UPDATES) and convolutions (rules.CONVOLUTIONS): algebra and
  fusions, as TensorFlow's remapper.

Rules are switched by TensorFlow's option names (`config.optimizer.
set_experimental_options`): "constant_folding", "arithmetic_optimization" (CSE,
simplification, products), "dependency_optimization" (Identity and StopGradient removal),
"remapping" (fused updates and convolutions, and elementwise fusion after),
"disable_model_pruning" (no dead-code elimination), "disable_meta_optimizer" (none).
The values computed are the eager ones: folding runs the same kernels, and the rules are
exact or equal to rounding where their docstrings say so.
"""
from __future__ import annotations

from .graph import FuncGraph, live_nodes
from .rewrite import graph_rewrite, PatternMatcher, Report
from .rules import (CONVOLUTIONS, FOLD, IDENTITIES, LOOPS, NORMALIZATION, PRODUCTS, SIMPLIFY,
                    UPDATES)

# TensorFlow's option names (tf.config.optimizer.set_experimental_options); the ones
# tapeflow has no pass for are accepted and kept, as settings with no effect.
OPTION_NAMES = ("layout_optimizer", "constant_folding", "shape_optimization", "remapping",
                "arithmetic_optimization", "dependency_optimization", "loop_optimization",
                "function_optimization", "debug_stripper", "disable_model_pruning",
                "scoped_allocator_optimization", "pin_to_host_optimization",
                "implementation_selector", "auto_mixed_precision", "disable_meta_optimizer",
                "min_graph_nodes", "auto_parallel")
DEFAULT_OPTIONS = {"disable_model_pruning": False, "disable_meta_optimizer": False}
_options: dict = dict(DEFAULT_OPTIONS)


def set_experimental_options(options: dict) -> None:
    """Switch graph optimizations by TensorFlow's names (values merge with earlier ones).

    Example:
        >>> tf.config.optimizer.set_experimental_options({"constant_folding": False})
        >>> tf.config.optimizer.get_experimental_options()["constant_folding"]
        False
    """
    if not isinstance(options, dict):
        raise TypeError(f"set_experimental_options: options must be a dict, got "
                        f"{type(options).__name__}")
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ValueError(f"set_experimental_options: unknown option(s) {unknown}; valid: "
                         f"{list(OPTION_NAMES)}")
    for key, value in options.items():
        if key == "min_graph_nodes":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"set_experimental_options: min_graph_nodes must be an "
                                f"int, got {value!r}")
        elif not isinstance(value, bool):
            raise TypeError(f"set_experimental_options: {key} must be True or False, got "
                            f"{value!r}")
    _options.update(options)
    _active.clear()


def get_experimental_options() -> dict:
    """The optimizer options set so far (TensorFlow's names), as a new dict.

    Example: `tf.config.optimizer.get_experimental_options()` ->
    `{'disable_model_pruning': False, 'disable_meta_optimizer': False}` by default.
    """
    return dict(_options)


def reset_options() -> None:
    """The options as a new process has them."""
    _options.clear()
    _options.update(DEFAULT_OPTIONS)
    _active.clear()


_active: list = []  # active_passes(), computed once per change of the options


def active_passes() -> tuple:
    """The passes the options leave on, in a hashable form (part of a program's key)."""
    if not _active:
        _active.append(_passes_on())
    return _active[0]


def _passes_on() -> tuple:
    if _options.get("disable_meta_optimizer"):
        return ()
    on = []
    if not _options.get("disable_model_pruning"):
        on.append("dce")
    if _options.get("arithmetic_optimization", True):
        on += ["simplify", "cse"]
    if _options.get("dependency_optimization", True):
        on.append("identity")
    if _options.get("constant_folding", True):
        on.append("fold")
    if _options.get("shape_optimization", True):  # graphs specialized to input shapes
        on.append("shape")
    if _options.get("remapping", True):  # TensorFlow's remapper is its op-fusion pass
        on.append("fuse")
    return tuple(on)


# (pass name from active_passes, its rule table), in the order rules are tried
TABLES = (("simplify", SIMPLIFY), ("identity", IDENTITIES), ("simplify", PRODUCTS),
          ("fuse", UPDATES), ("fuse", CONVOLUTIONS), ("fuse", NORMALIZATION),
          ("simplify", LOOPS), ("fold", FOLD))
_matchers: dict = {}


def matcher(passes: tuple) -> PatternMatcher:
    """The rule tables `passes` switch on, as one PatternMatcher (made once per set)."""
    found = _matchers.get(passes)
    if found is None:
        found = PatternMatcher()
        for name, table in TABLES:
            if name in passes:
                found = found + table
        _matchers[passes] = found
    return found


def optimize(graph: FuncGraph, outputs: list, passes: tuple,
             shapes: tuple | None = None) -> tuple:
    """(optimized graph, its outputs for `outputs`, Report): `graph` rewritten with the
    rules `passes` (names from `active_passes`) switch on. The inputs keep their order and
    specs, or take the static `shapes` given (a graph specialized to one call's shapes).

    Example: `graph, outs, report = optimize(cf.graph, cf.outputs, active_passes())`.
    """
    report = Report()
    nodes = live_nodes(graph.nodes, outputs) if "dce" in passes else [
        n for n in graph.nodes if n.op != "Placeholder"]
    report.removed = sum(n.op != "Placeholder" for n in graph.nodes) - len(nodes)
    new, new_outputs = graph_rewrite(graph, outputs, matcher(passes), nodes=nodes,
                                     shapes=shapes, report=report, cse="cse" in passes,
                                     doing="optimizing")
    return new, new_outputs, report
