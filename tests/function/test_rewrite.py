"""The rewrite engine (function/rewrite.py) and the general rules of function/rules/: patterns
and captures, a rule table reaching its fixed point in one walk, a rule added in a test,
and the general forms of the product-update, convolution and pooling rules (optimized
graphs printed on failure; values against the unoptimized graph and NumPy)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.function import optimizer
from tapeflow.function.rewrite import graph_rewrite, node_of, Pat, PatternMatcher, Report
from tapeflow.function.rules.cleanup import is_all


pytestmark = pytest.mark.usefixtures("optimizer_defaults")


def ops_of(graph) -> list:
    return [n.op for n in graph.get_operations() if n.op != "Placeholder"]


def traced(fn, *args):
    """(graph, its outputs) of `fn` traced, unoptimized."""
    graph = tf.function(fn).get_concrete_function(*args).graph
    return graph, list(graph.outputs)


X = tf.constant(np.array([[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]]))
Y = tf.constant(np.array([[1.0, 2.0, -3.0], [0.5, 0.75, -1.0]]))


# ------------------------------------------------------------------ the engine
def test_replacements_are_rewritten_in_turn_to_a_fixed_point():
    """x - y -> x + (-y) emits a Neg that the double-negation rule then removes: one walk
    leaves no node any rule matches."""
    neg_neg = (Pat("Neg", src={"x": Pat("Neg", src={"x": Pat(name="x")})}),
               lambda rw, node, x: x, "simplified")
    sub_to_add = (Pat("Sub", src={"x": Pat(name="a"), "y": Pat(name="b")}),
                  lambda rw, node, a, b: rw.emit(
                      "Add", {"x": a, "y": rw.emit("Neg", {"x": b}, {})[0]}, {}),
                  "simplified")
    rules = PatternMatcher([neg_neg, sub_to_add])
    graph, outs = traced(lambda x, y: -(-(-(-(x - (-y))))), X, Y)
    report = Report()
    new, new_outs = graph_rewrite(graph, outs, rules, report=report)
    assert ops_of(new) == ["Add"], new
    add = new.get_operations()[-1]
    assert [t.name for t in add.inputs.values()] == ["x:0", "y:0"], new
    assert report.simplified == 4  # two double negations, the Sub, the Neg(Neg(y))
    # a second walk finds nothing to do
    again = Report()
    graph_rewrite(new, new_outs, rules, report=again)
    assert again.simplified == 0


def test_patterns_capture_commute_and_test_uses():
    seen = []
    same_twice = PatternMatcher([(Pat("Sub", src={"x": Pat(name="a"), "y": Pat(name="a")}),
                                  lambda rw, node, a: seen.append(node.name))])
    graph, outs = traced(lambda x, y: (x - x, x - y), X, Y)
    graph_rewrite(graph, outs, same_twice)
    assert len(seen) == 1  # only x - x: a name captured twice is one tensor

    one = Pat(value=lambda t: is_all(t, 1))
    times_one = PatternMatcher([(Pat("Mul", src={"x": Pat(name="x"), "y": one}, commute=True),
                                 lambda rw, node, x: x)])
    graph, outs = traced(lambda x: (1.0 * x) + (x * 1.0), X)
    new, _ = graph_rewrite(graph, outs, times_one)
    assert ops_of(new) == ["AddV2"] or ops_of(new) == ["Add"], new

    fired = []
    once = PatternMatcher([(Pat("Exp", src={"x": Pat("Sin", once=True, name="s")}),
                            lambda rw, node, s: fired.append(rw.uses(s)))])
    graph, outs = traced(lambda x: (tf.exp(tf.sin(x)), tf.exp(tf.cos(x)) + tf.cos(x)), X)
    graph_rewrite(graph, outs, once)
    assert fired == [1]
    def shared(x):
        s = tf.sin(x)
        return tf.exp(s) + s
    graph, outs = traced(shared, X)
    fired.clear()
    graph_rewrite(graph, outs, once)
    assert fired == []  # sin(x) is read twice

    where = PatternMatcher([(Pat(lambda op: op.startswith("Si"),
                                 where=lambda n: n.out._shape == (2, 3)),
                             lambda rw, node: rw.emit("Cos", dict(node.inputs), {}))])
    graph, outs = traced(lambda x: tf.sin(x), X)
    new, new_outs = graph_rewrite(graph, outs, where)
    assert ops_of(new) == ["Cos"], new
    assert where.for_op("Sin") and not where.for_op("Cos")


def test_a_rule_added_to_a_table_rewrites_traced_functions(monkeypatch):
    """x * 2 -> x + x (exact): a table of one rule joins the optimizer's tables."""
    two = Pat(value=lambda t: is_all(t, 2) and t._shape == ())
    doubling = PatternMatcher([(Pat("Mul", src={"x": Pat(name="x"), "y": two}, commute=True),
                                lambda rw, node, x: rw.emit("Add", {"x": x, "y": x}, {}),
                                "simplified")])
    monkeypatch.setattr(optimizer, "TABLES", optimizer.TABLES + (("simplify", doubling),))
    monkeypatch.setattr(optimizer, "_matchers", {})
    optimizer.set_experimental_options({"remapping": False})
    cf = tf.function(lambda x: tf.sin(x) * 2.0).get_concrete_function(X)
    assert ops_of(cf.optimized_graph) == ["Sin", "Add"], cf.optimized_graph
    np.testing.assert_array_equal(cf(X).numpy(), np.sin(X.numpy()) * 2.0)


def test_a_node_made_twice_is_made_once():
    graph, outs = traced(lambda x: (tf.sin(x) + 1.0, tf.sin(x) + 1.0), X)
    report = Report()
    new, new_outs = graph_rewrite(graph, outs, PatternMatcher(), report=report)
    assert ops_of(new).count("Sin") == 1 and new_outs[0] is new_outs[1], new
    assert report.deduplicated == 2  # sin and the sum (1.0 is one constant when traced)
    new, new_outs = graph_rewrite(graph, outs, PatternMatcher(), cse=False)
    assert ops_of(new).count("Sin") == 2, new


# ------------------------------------------------------------------ product updates
def _train(make_optimizer, optimize: bool, steps: int = 3):
    optimizer.set_experimental_options({"remapping": optimize})
    rng = np.random.default_rng(11)
    x = tf.constant(rng.standard_normal((16, 5)))
    w = tf.Variable(rng.standard_normal((5, 3)))
    opt = make_optimizer()

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    losses = [float(step(x)) for _ in range(steps)]
    return w.numpy(), losses, ops_of(step.get_concrete_function(x).optimized_graph)


@pytest.mark.parametrize("name, make, accumulated", [
    ("sgd", lambda: tf.optimizers.SGD(0.01), True),
    ("momentum", lambda: tf.optimizers.SGD(0.01, momentum=0.9), False),
    ("adam", lambda: tf.optimizers.Adam(0.01), False),
])
def test_optimizer_updates_fuse_where_the_update_is_a_product(name, make, accumulated):
    """SGD's step subtracts a scaled product: one AssignAddMatMul. Momentum's and Adam's
    steps move the variable by a slot's value, not by a product: nothing to accumulate.
    Every one trains as it does unoptimized."""
    w_opt, losses_opt, ops = _train(make, True)
    w_plain, losses_plain, plain_ops = _train(make, False)
    assert ("AssignAddMatMul" in ops) == accumulated, ops
    assert "AssignAddMatMul" not in plain_ops
    np.testing.assert_allclose(w_opt, w_plain, rtol=1e-12)
    np.testing.assert_allclose(losses_opt, losses_plain, rtol=1e-12)


@pytest.mark.parametrize("form", ["add_negated", "assign_plus_scaled", "scaled_first",
                                  "negated_scaled"])
def test_every_way_of_writing_a_product_update_accumulates(form):
    optimizer.set_experimental_options({"remapping": True})
    rng = np.random.default_rng(12)
    x, g = rng.standard_normal((40, 6)), rng.standard_normal((40, 4))
    w0 = rng.standard_normal((6, 4))
    w = tf.Variable(w0)
    lr = tf.constant(0.5, tf.float64)

    def update(x, g):
        p = tf.matmul(x, g, transpose_a=True)
        if form == "add_negated":
            w.assign_add(-p)
        elif form == "assign_plus_scaled":
            w.assign(w + (-lr) * p)
        elif form == "scaled_first":
            w.assign(lr * p + w)
        else:
            w.assign_sub(-(p * lr))
        return tf.constant(0.0)

    step = tf.function(update)
    tx, tg = tf.constant(x), tf.constant(g)
    ops = ops_of(step.get_concrete_function(tx, tg).optimized_graph)
    assert ops.count("AssignAddMatMul") == 1 and "MatMul" not in ops, ops
    assert not {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                "ReadVariableOp"} & set(ops), ops
    step(tx, tg)
    p = x.T @ g
    want = {"add_negated": w0 - p, "assign_plus_scaled": w0 - 0.5 * p,
            "scaled_first": w0 + 0.5 * p, "negated_scaled": w0 + 0.5 * p}[form]
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------ convolutions
RNG = np.random.default_rng(13)
CX = tf.constant(RNG.standard_normal((2, 7, 8, 3)))
CW = tf.constant(RNG.standard_normal((3, 3, 3, 4)))
CB = tf.constant(RNG.standard_normal(4))


def both_ways(fn, *args, jit_compile=None):
    fused = tf.nest.map_structure(lambda t: t.numpy(),
                                  tf.function(fn, jit_compile=jit_compile)(*args))
    optimizer.set_experimental_options({"remapping": False})
    plain = tf.nest.map_structure(lambda t: t.numpy(),
                                  tf.function(fn, jit_compile=jit_compile)(*args))
    optimizer.set_experimental_options({"remapping": True})
    return fused, plain


@pytest.mark.parametrize("activation", [tf.nn.elu, tf.sigmoid, tf.tanh, tf.nn.softplus])
def test_a_convolution_with_any_activation_becomes_one_op(activation):
    def f(x, w, b):
        return activation(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))

    cf = tf.function(f).get_concrete_function(CX, CW, CB)
    graph = cf.optimized_graph
    assert ops_of(graph) == ["FusedConv2D"], graph
    op = graph.get_operations()[-1].attrs["activation"]
    assert op in ("Elu", "Sigmoid", "Tanh", "Softplus")
    got, want = both_ways(f, CX, CW, CB)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    z = tf.nn.bias_add(tf.nn.conv2d(CX, CW, 1, "SAME"), CB)
    np.testing.assert_allclose(got, activation(z).numpy(), rtol=1e-12, atol=1e-14)


def test_fused_convolutions_refuse_ops_that_are_no_activation():
    attrs = {"strides": (1, 1), "padding": "VALID", "dilations": (1, 1),
             "data_format": "NHWC", "groups": 1}
    for bad in ("MatMul", "Cast", "NoSuchOp", "ArgMax"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="FusedConv2D.*activation"):
            tf.engine.run_kernel("FusedConv2D", {"x": CX, "filters": CW, "bias": CB},
                                 dict(attrs, activation=bad))
    # an activation with attributes (leaky_relu's alpha) stays a node of its own
    cf = tf.function(lambda x, w, b: tf.nn.leaky_relu(tf.nn.conv2d(x, w, 1, "SAME") + b)
                     ).get_concrete_function(CX, CW, CB)
    ops = ops_of(cf.optimized_graph)
    assert "FusedConv2D" in ops and "LeakyRelu" in ops, cf.optimized_graph


def _pool_grad(activation, pool, size, stride, padding):
    def f(z, g):
        with tf.GradientTape() as tape:
            tape.watch(z)
            p = pool(activation(z), size, stride, padding)
        return tape.gradient(p, z, output_gradients=g), p
    return f


@pytest.mark.parametrize("activation, masked", [(tf.nn.relu, True), (tf.nn.relu6, True),
                                                (tf.tanh, False)])
@pytest.mark.parametrize("size, stride, padding", [(2, 2, "VALID"), (3, 2, "SAME")])
def test_max_pooling_gradients_take_the_mask_of_any_masking_activation_first(
        activation, masked, size, stride, padding):
    z = tf.constant(RNG.standard_normal((2, 6, 6, 3)) * 4)
    out = tf.nn.max_pool2d(z, size, stride, padding).shape
    g = tf.constant(RNG.standard_normal(out))
    f = _pool_grad(activation, tf.nn.max_pool2d, size, stride, padding)
    cf = tf.function(f, jit_compile=False).get_concrete_function(z, g)
    grad = [n for n in cf.optimized_graph.get_operations() if n.op == "MaxPoolGrad"][0]
    before = node_of(grad.inputs["dy"])
    assert (before is not None and before.op.endswith("Grad")
            and before.inputs["y"]._native.node.op == "MaxPool") == masked, cf.optimized_graph
    (got, _), (want, _) = both_ways(f, z, g, jit_compile=False)
    np.testing.assert_array_equal(got, want)  # exact: the same bits


def test_average_pooling_gradients_keep_the_activation_gradient_after():
    """An average's gradient spreads g over its window, whose elements a mask tells apart:
    nothing moves."""
    z = tf.constant(RNG.standard_normal((2, 6, 6, 3)))
    g = tf.constant(RNG.standard_normal((2, 3, 3, 3)))
    f = _pool_grad(tf.nn.relu, tf.nn.avg_pool2d, 2, 2, "VALID")
    cf = tf.function(f, jit_compile=False).get_concrete_function(z, g)
    ops = ops_of(cf.optimized_graph)
    assert ops.index("AvgPoolGrad") < ops.index("ReluGrad"), cf.optimized_graph
    (got, _), (want, _) = both_ways(f, z, g, jit_compile=False)
    np.testing.assert_array_equal(got, want)
    spread = np.repeat(np.repeat(g.numpy(), 2, axis=1), 2, axis=2) / 4
    np.testing.assert_allclose(got, spread * (z.numpy() > 0), rtol=1e-15)


def test_folding_a_chain_of_large_constants_frees_each_link_once_read():
    """Constant folding a long chain of large constants keeps a few of them alive at a
    time, not every intermediate until the walk ends; the graph keeps the last only."""
    c = np.linspace(-1.0, 1.0, 20_000)  # 160 KB a link

    def f(x):
        y = tf.constant(c)
        for _ in range(60):
            y = y * 0.999 + 0.001
        return x + y

    g = tf.function(f)
    x = tf.constant(np.ones(20_000))
    tracemalloc.start()
    try:
        cf = g.get_concrete_function(x)
        tracemalloc.reset_peak()
        graph = cf.optimized_graph
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * c.nbytes  # (all 120 links: 120 x 160 KB)
    consts = [n for n in graph.get_operations() if n.op == "Const"]
    assert len(consts) == 1
    want = c.copy()
    for _ in range(60):
        want = want * 0.999 + 0.001
    np.testing.assert_array_equal(g(x).numpy(), 1.0 + want)


@pytest.mark.parametrize("n, vectors, merged", [(64, 2, True), (500, 2, False),
                                                (500, 4, False), (500, 5, True)])
def test_matrix_vector_products_merge_where_shapes_say_one_product_wins(n, vectors, merged):
    """Products of one matrix by several vectors become one matrix product when the matrix
    stays in cache, or when there are enough vectors to repay packing a large one."""
    rng = np.random.default_rng(1)
    a = tf.constant(rng.standard_normal((n, n)))
    vs = [tf.constant(rng.standard_normal(n)) for _ in range(vectors)]
    g = tf.function(lambda a, *vs: tf.add_n([tf.linalg.matvec(a, v) for v in vs]))
    ops = [o.op for o in g.get_concrete_function(a, *vs).optimized_graph.get_operations()]
    assert (ops.count("MatVec"), "MatMul" in ops) == ((0, True) if merged else (vectors, False))
    want = sum(a.numpy() @ v.numpy() for v in vs)
    np.testing.assert_allclose(g(a, *vs).numpy(), want, rtol=1e-12, atol=1e-12)
