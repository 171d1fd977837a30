"""Module (tf.Module semantics): variable and submodule discovery through attributes,
names and name scopes, the checkpoint-children protocol, traced methods."""
import threading

import numpy as np
import pytest

import tapeflow as tf


def var(value=0.0, name=None, trainable=True):
    return tf.Variable(value, name=name, trainable=trainable)


class Leaf(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = var(1.0, "w")
            self.b = var(2.0, "b", trainable=False)


class Tree(tf.Module):
    def __init__(self):
        super().__init__()
        self.z = var(0.0, "z")
        self.children_list = [Leaf("l0"), (Leaf("l1"), var(3.0, "in_tuple"))]
        self.table = {"b": var(4.0, "tb"), "a": [var(5.0, "ta0"), {"y": var(6.0, "tay")}]}
        self.a_first = var(7.0, "a_first")
        self.count = 3            # plain values are ignored
        self.label = "tree"


def names(vs):
    return [v.name for v in vs]


# --------------------------------------------------------------------------- discovery


def test_variables_sorted_by_attribute_then_submodules():
    t = Tree()
    # own attributes in sorted order ("a_first" < "children_list" < "table" < "z"), dicts by
    # sorted key, then the submodules found, each walked in turn
    assert names(t.variables) == ["a_first:0", "in_tuple:0", "ta0:0", "tay:0", "tb:0", "z:0",
                                  "l0/b:0", "l0/w:0", "l1/b:0", "l1/w:0"]
    assert names(t.trainable_variables) == ["a_first:0", "in_tuple:0", "ta0:0", "tay:0",
                                            "tb:0", "z:0", "l0/w:0", "l1/w:0"]
    assert names(t.non_trainable_variables) == ["l0/b:0", "l1/b:0"]
    assert [m.name for m in t.submodules] == ["l0", "l1"]


def test_no_duplicates_for_shared_variables_and_modules():
    class Shared(tf.Module):
        def __init__(self):
            super().__init__()
            self.leaf = Leaf()
            self.again = [self.leaf, self.leaf.w]
            self.alias = self.leaf.w
    s = Shared()
    assert len(s.variables) == 2
    assert [id(v) for v in s.variables] == [id(s.leaf.w), id(s.leaf.b)]
    assert s.submodules == (s.leaf,)


def test_cycles_end_the_walk():
    class Node(tf.Module):
        def __init__(self, name):
            super().__init__(name=name)
            with self.name_scope:
                self.v = var(1.0, "v")
            self.peers = []
    a, b = Node("a"), Node("b")
    a.peers.append(b)
    b.peers.append(a)          # child refers back to its parent
    a.peers.append(a.peers)    # a list containing itself
    assert names(a.variables) == ["a/v:0", "b/v:0"]
    assert a.submodules == (b,)
    assert b.submodules == (a,)


def test_depth_first_over_submodules():
    class Inner(tf.Module):
        def __init__(self, name):
            super().__init__(name=name)
            with self.name_scope:
                self.v = var(0.0, "v")
            self.sub = Leaf(name + "_leaf")
    class Outer(tf.Module):
        def __init__(self):
            super().__init__()
            self.first = Inner("first")
            self.second = Inner("second")
    o = Outer()
    # TensorFlow's order: a module's direct submodules are found first, then each is walked
    # (its own submodules follow it)
    assert [m.name for m in o.submodules] == ["first", "second", "first_leaf", "second_leaf"]
    assert names(o.variables) == ["first/v:0", "first_leaf/b:0", "first_leaf/w:0",
                                  "second/v:0", "second_leaf/b:0", "second_leaf/w:0"]


def test_empty_module_and_attributes_added_later():
    m = tf.Module()
    assert m.variables == () and m.submodules == () and m.trainable_variables == ()
    m.late = {"k": var(1.0, "late")}
    assert names(m.variables) == ["late:0"]
    assert isinstance(m.variables, tuple)


# --------------------------------------------------------------------------- names


def test_default_name_is_snake_case_of_the_class():
    class MyModule(tf.Module):
        pass
    class HTTPServer(tf.Module):
        pass
    assert MyModule().name == "my_module"
    assert HTTPServer().name == "http_server"
    assert tf.Module().name == "module"
    assert tf.Module(name="enc_1").name == "enc_1"


@pytest.mark.parametrize("bad", ["1abc", "a-b", "a/b", "", "has space", 5])
def test_invalid_module_names(bad):
    with pytest.raises(ValueError, match="not a valid name"):
        tf.Module(name=bad)


def test_name_scope_nesting_and_variable_names():
    with tf.name_scope("encoder") as s1:
        a = tf.Variable(1.0, name="w")
        with tf.name_scope("layer") as s2:
            b = tf.Variable(1.0)
        c = tf.Variable(1.0, name="after")
    d = tf.Variable(1.0, name="outside")
    assert (s1, s2) == ("encoder/", "encoder/layer/")
    assert names([a, b, c, d]) == ["encoder/w:0", "encoder/layer/Variable:0",
                                   "encoder/after:0", "outside:0"]


def test_name_scope_absolute_and_empty():
    with tf.name_scope("outer"):
        with tf.name_scope("abs/") as s:
            v = tf.Variable(1.0, name="v")
        with tf.name_scope("") as empty:
            u = tf.Variable(1.0, name="u")
    assert s == "abs/" and empty == ""
    assert (v.name, u.name) == ("abs/v:0", "u:0")


def test_name_scope_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with tf.name_scope("boom"):
            raise RuntimeError("x")
    assert tf.Variable(1.0, name="v").name == "v:0"


def test_name_scope_is_per_thread():
    seen = []
    started, release = threading.Event(), threading.Event()

    def worker():
        started.wait()
        seen.append(tf.Variable(1.0, name="t").name)
        release.set()

    th = threading.Thread(target=worker)
    th.start()
    with tf.name_scope("main_thread"):
        started.set()
        release.wait(10)
    th.join()
    assert seen == ["t:0"]


def test_name_scope_rejects_non_strings():
    with pytest.raises(ValueError, match="must be a string"):
        tf.name_scope(3)
    assert tf.name_scope("x").name == "x"


def test_module_name_scope():
    m = tf.Module(name="foo")
    assert m.name_scope.name == "foo/"
    with m.name_scope as scope:
        v = tf.Variable(1.0, name="v")
    assert scope == "foo/" and v.name == "foo/v:0"
    with tf.name_scope("outer"):
        inner = tf.Module(name="inner")
        with m.name_scope:   # a module's scope is absolute: fixed when it was made
            w = tf.Variable(1.0, name="w")
    assert inner.name_scope.name == "outer/inner/"
    assert w.name == "foo/w:0"


def test_with_name_scope_names_variables_made_in_the_method():
    class Lazy(tf.Module):
        @tf.Module.with_name_scope
        def __call__(self, x):
            """Doc kept."""
            if not hasattr(self, "w"):
                self.w = tf.Variable(tf.ones([x.shape[-1], 2]), name="w")
            return tf.matmul(x, self.w)
    m = Lazy()
    y = m(tf.ones([3, 4]))
    assert y.shape == (3, 2) and m.w.name == "lazy/w:0"
    assert Lazy.__call__.__name__ == "__call__" and Lazy.__call__.__doc__ == "Doc kept."
    assert tf.Variable(0.0, name="after").name == "after:0"


def test_submodule_made_inside_parent_scope_nests():
    class Parent(tf.Module):
        def __init__(self):
            super().__init__()
            with self.name_scope:
                self.child = tf.layers.Dense(2)
    p = Parent()
    p.child(tf.ones([1, 3]))
    assert names(p.variables) == ["parent/dense/kernel:0", "parent/dense/bias:0"]


# --------------------------------------------------------------------------- checkpoint children


class FakeOptimizer:
    def __init__(self):
        self.slot = tf.Variable(0.0)

    def _trackable_children(self):
        return {"slot": self.slot}


def test_trackable_children_paths_and_order():
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Leaf("l0"), Leaf("l1")]
            self.weights = {"key": var(1.0)}
            self.a = [{"b": var(3.0)}, (var(4.0),)]
            self.opt = FakeOptimizer()
            self.scalar = var(5.0)
            self.note = "text"
            self.n = 4
    net = Net()
    kids = net._trackable_children()
    assert list(kids) == ["a/0/b", "a/1/0", "layers/0", "layers/1", "opt", "scalar",
                          "weights/key"]
    assert kids["layers/1"] is net.layers[1] and kids["opt"] is net.opt
    assert kids["a/0/b"] is net.a[0]["b"] and kids["weights/key"] is net.weights["key"]
    assert list(net.layers[0]._trackable_children()) == ["b", "w"]


def test_trackable_children_name_each_object_once():
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = var(1.0)
            self.also_v = self.v
            self.me = self    # a module is not its own child
    kids = Net()._trackable_children()
    assert list(kids) == ["also_v"]


def test_layer_children_use_attribute_names():
    d = tf.layers.Dense(2)
    d(tf.ones([1, 3]))
    kids = d._trackable_children()
    assert list(kids) == ["bias", "kernel"]
    assert kids["kernel"] is d.kernel
    # creation order for `variables` (kernel before bias, as Keras)
    assert names(d.variables) == ["dense/kernel:0", "dense/bias:0"]


# --------------------------------------------------------------------------- traced methods


class TracedNet(tf.Module):
    def __init__(self):
        super().__init__()
        self.hidden = tf.layers.Dense(4, activation="tanh", kernel_initializer=
                                      tf.initializers.GlorotUniform(seed=1))
        self.out = tf.layers.Dense(1, kernel_initializer=tf.initializers.GlorotUniform(seed=2))

    @tf.function
    def __call__(self, x):
        return self.out(self.hidden(x))


def test_traced_method_creates_variables_once_and_gradients_flow():
    net = TracedNet()
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(3)]
    created = []
    for x in xs:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(net(tf.constant(x)) ** 2)
        grads = tape.gradient(loss, net.trainable_variables)
        created.append(tuple(id(v) for v in net.variables))
        # the same step eagerly, with NumPy, from the variables' values
        k1, b1, k2, b2 = (v.numpy() for v in net.trainable_variables)
        h = np.tanh(x @ k1 + b1)
        y = h @ k2 + b2
        np.testing.assert_allclose(loss.numpy(), (y ** 2).sum(), rtol=1e-5)
        gy = 2 * y
        gk2, gb2 = h.T @ gy, gy.sum(0)
        gh = gy @ k2.T * (1 - h ** 2)
        gk1, gb1 = x.T @ gh, gh.sum(0)
        for g, want in zip(grads, (gk1, gb1, gk2, gb2)):
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-5)
    assert len(set(created)) == 1 and len(created[0]) == 4
    assert names(net.variables) == ["dense/kernel:0", "dense/bias:0", "dense/kernel:0",
                                    "dense/bias:0"]
    assert net.__call__.experimental_get_tracing_count() == 1
    net(tf.ones([2, 3]))       # a new batch size retraces; no new variables
    assert net.__call__.experimental_get_tracing_count() == 2
    assert tuple(id(v) for v in net.variables) == created[0]


def test_flatten_with_predicate_and_paths():
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.leaf = Leaf("leaf")
            self.layers = [self.leaf, {"t": tf.constant(1.0)}]
            self.scale = tf.constant(2.0)
    net = Net()
    tensors = net._flatten(predicate=lambda o: isinstance(o, tf.Tensor))
    assert [float(t) for t in tensors] == [1.0, 2.0]
    paths = [(p, v.name) for p, v in net._flatten(
        predicate=lambda o: isinstance(o, tf.Variable), with_path=True)]
    # with paths nothing is deduplicated: the leaf is reached twice
    assert paths == [(("layers", 0, "b"), "leaf/b:0"), (("layers", 0, "w"), "leaf/w:0"),
                     (("leaf", "b"), "leaf/b:0"), (("leaf", "w"), "leaf/w:0")]
    shallow = net._flatten(recursive=False, predicate=lambda o: isinstance(o, tf.Variable))
    assert list(shallow) == []


def test_repr_of_a_subclass_that_never_called_module_init():
    class NoInit(tf.Module):
        def __init__(self):  # forgets super().__init__()
            self.w = tf.Variable([1.0, 2.0])

    m = NoInit()
    assert repr(m) == "<NoInit (Module.__init__ not called)>"
    assert [v.numpy().tolist() for v in m.variables] == [[1.0, 2.0]]
    assert repr(tf.Module(name="fine")) == "<Module name='fine'>"
