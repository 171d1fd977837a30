"""Each op's ONNX lowering is part of its definition (issue #32): the rule is registered in
the file that defines the op (`defop(..., onnx=rule)`), as its other rules are. The only
rules registered elsewhere are the few onnx/lowering.py keeps, listed here."""
import os

import tapeflow as tf  # defines every op and registers every rule
from tapeflow._core import registry
from tapeflow.onnx import LOWERED

# control flow: the rules build ONNX subgraphs with tapeflow.onnx's proto module, which
# function/control_flow.py (a lower floor) cannot import
_CONTROL_FLOW = {"If", "While"}
# TensorFlow's other names of tapeflow ops: no op has the name; the rule is the op's own
_ALIASES = {"AddV2": "Add", "BatchMatMul": "MatMul", "BatchMatMulV2": "MatMul",
            "ConcatV2": "Concat", "Pack": "Stack", "ReverseV2": "Reverse",
            "Select": "SelectV2", "SplitV": "Split", "TopKV2": "TopK", "Unpack": "Unstack"}


def _file(site: str) -> str:
    return os.path.normpath(site.rsplit(":", 1)[0])


def _rule_site(name: str) -> str:
    return _file(registry._SITES[("onnx", name)])


_PACKAGE = os.path.dirname(os.path.normpath(tf.__file__)) + os.sep


def _library_rules() -> list:
    """The ops with a rule tapeflow registers (not one a test adds with register_lowering)."""
    return [n for n in registry.ONNX if _rule_site(n).startswith(_PACKAGE)]


def test_every_rule_is_registered_where_its_op_is_defined():
    misplaced = {}
    for name in _library_rules():
        if name in _CONTROL_FLOW or name in _ALIASES:
            continue
        op_site = registry._SITES.get(("op", name))
        assert op_site is not None, f"ONNX rule for {name}, which no op definition has"
        if _rule_site(name) != _file(op_site):
            misplaced[name] = (_rule_site(name), _file(op_site))
    assert not misplaced, misplaced


def test_the_exceptions_are_registered_in_onnx_lowering():
    lowering = os.path.join("tapeflow", "onnx", "lowering.py")
    for name in _CONTROL_FLOW | set(_ALIASES):
        assert _rule_site(name).endswith(lowering), (name, _rule_site(name))
    for name in _CONTROL_FLOW:  # defined with the other control flow, not in ops/
        assert _file(registry._SITES[("op", name)]).endswith(
            os.path.join("function", "control_flow.py"))


def test_an_alias_lowers_by_its_ops_rule():
    for alias, op in _ALIASES.items():
        assert ("op", alias) not in registry._SITES, alias
        assert registry.ONNX[alias] is registry.ONNX[op], (alias, op)


def test_the_rules_of_ops_live_in_ops_files():
    ops_dir = os.path.join("tapeflow", "ops") + os.sep
    outside = sorted(n for n in _library_rules()
                     if n not in _CONTROL_FLOW and n not in _ALIASES
                     and ops_dir not in _rule_site(n))
    assert outside == [], outside
    assert set(LOWERED) <= set(_library_rules())
    assert len(LOWERED) >= 103  # at least the table issue #32 moved, op for op
