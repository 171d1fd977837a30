"""The graph IR's guarantees (#16 §1): nodes are immutable records with explicit fields
(run-time dims included), a graph's interface changes only through `FuncGraph.seal`, which
checks single assignment and that every tensor read is bound, and passes build new graphs
through the one interpreter `eval_graph`."""
from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.function.graph import FuncGraph, Node, tracing
from tapeflow.function.interpret import copy_node, eval_graph, finish_rebuild, start_rebuild

F64 = tf.float64


def _graph(scale=2.0):
    g = FuncGraph("g")
    x = g.placeholder([3], F64, "x")
    with tracing(g):
        y = tf.sin(x) * scale
    return g, x, y


def test_nodes_are_immutable_records():
    g, x, y = _graph()
    node = y._native.node
    for field, value in [("name", "other"), ("op", "Add"), ("stateful", True),
                         ("site", None), ("outputs", ()), ("dims", ())]:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(node, field, value)
    with pytest.raises(TypeError):
        node.inputs["x"] = x  # a read-only view
    with pytest.raises(TypeError):
        node.attrs["extra"] = 1
    assert node.op == "Mul" and node.outputs == (y,) and node.dims == ()


def test_run_time_dims_are_a_field_of_the_node_not_an_input():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], F64)])
    def f(x):
        with tf.GradientTape() as tape:  # the gradient broadcasts to x's run-time shape
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x))
        return tape.gradient(y, x)

    cf = f.get_concrete_function()
    with_dims = [n for n in cf.graph.get_operations() if n.dims]
    assert {n.op for n in with_dims} >= {"BroadcastTo"}, str(cf.graph)
    for node in cf.graph.get_operations():
        assert all(not k.startswith("__") for k in node.inputs)
        assert all(any(m is t for t in node.tensors()) for m in node.dims)
    for n in (2, 5):
        x = np.linspace(0, 1, 3 * n).reshape(n, 3)
        np.testing.assert_allclose(f(tf.constant(x)).numpy(), np.cos(x), rtol=1e-12)


def test_seal_checks_single_assignment_and_bound_inputs():
    g, x, y = _graph()
    other = FuncGraph("other")
    with tracing(other):
        tf.cos(other.placeholder([3], F64, "z"))
    stray = other.nodes[-1]
    g.nodes.append(stray)  # a node of another graph: reads tensors g never made
    with pytest.raises(InvalidArgumentError, match="no earlier node makes"):
        g.seal([y])
    g.nodes.pop()
    g.nodes.append(g.nodes[-1])  # the same node twice: its name and outputs again
    with pytest.raises(InvalidArgumentError, match="name another node has"):
        g.seal([y])
    g.nodes.pop()
    assert g.seal([y]) is g and g.frozen
    with pytest.raises(RuntimeError, match="finished"):
        g.placeholder([3], F64)


def test_seal_reorders_inputs_only_among_the_graphs_placeholders():
    g = FuncGraph("g")
    a = g.placeholder([2], F64, "a")
    b = g.placeholder([2], F64, "b")
    with tracing(g):
        y = a - b
    with pytest.raises(InvalidArgumentError, match="same placeholders"):
        g.seal([y], inputs=[a])
    g.seal([y], inputs=[b, a])
    assert g.inputs == [b, a]


def test_a_rebuild_through_eval_graph_is_a_new_checked_graph_with_the_same_names():
    g, x, y = _graph()
    g.seal([y])
    new, env = start_rebuild(g)
    env = eval_graph(g, env, lambda node, ins: copy_node(new, node, ins, env))
    outs = finish_rebuild(g, new, env, [y], "copying")
    assert new is not g and new.frozen
    assert [n.name for n in new.nodes] == [n.name for n in g.nodes]
    assert [n.site for n in new.nodes[1:]] == [n.site for n in g.nodes[1:]]
    assert all(o._native.graph is new for o in outs)


def test_stateful_calls_are_marked_by_their_attributes_and_survive_optimization():
    v = tf.Variable(0.0, dtype=F64)

    @tf.function
    def f(x):
        if x > 0:  # a branch with an effect: the If node must run even though unused
            v.assign_add(1.0)
        return x * 2.0

    f(tf.constant(1.0, F64))
    f(tf.constant(1.0, F64))
    assert float(v.numpy()) == 2.0
    cf = f.get_concrete_function(tf.constant(1.0, F64))
    ifs = [n for n in cf.optimized_graph.get_operations() if n.op == "If"]
    assert ifs and all(n.stateful for n in ifs)


def test_a_new_node_gets_an_unused_name_even_next_to_kept_names():
    g = FuncGraph("g")
    x = g.placeholder([2], F64, "x")
    with tracing(g):
        g.add_op("Neg", {"x": x}, {}, name="Neg_1")
        a = tf.negative(x)
        b = tf.negative(a)
    names = [n.name for n in g.nodes]
    assert len(set(names)) == len(names) and "Neg_1" in names
    assert isinstance(b._native.node, Node)
