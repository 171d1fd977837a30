"""Keras 3's Adafactor, Ftrl, Lamb and Lion (each with every base option),
`exclude_from_weight_decay` and variable constraints, against trajectories recorded from
real Keras 3.15 (fixtures/keras_optimizers_more.json, written by
fixtures/make_keras_optimizers_more.py): a float32 vector named "bias" and a 2x3 matrix
named "kernel", six steps of fixed gradients; then traced steps and IndexedSlices
gradients against the eager dense ones."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import tapeflow as tf

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures"
                      / "keras_optimizers_more.json").read_text())
CASES = FIXTURE["optimizers"]
SCHEDULES = FIXTURE["schedules"]
GRADS_VEC = [np.array(g, np.float32) for g in FIXTURE["grads_vec"]]
GRADS_MAT = [np.array(g, np.float32) for g in FIXTURE["grads_mat"]]
NEW = ["adafactor", "ftrl", "lamb", "lion"]


def make(key: str):
    """The tapeflow optimizer the fixture's case `key` ran in Keras."""
    case = CASES[key]
    kwargs = dict(case["kwargs"])
    if "schedule" in case:
        schedule = SCHEDULES[case["schedule"]]
        kwargs["learning_rate"] = getattr(tf.keras.optimizers.schedules,
                                          schedule["cls"])(**schedule["kwargs"])
    return getattr(tf.keras.optimizers, case["cls"])(**kwargs)


def variables(key: str):
    vec = tf.Variable(np.array(FIXTURE["vec0"], np.float32), name="bias")
    mat = tf.Variable(np.array(FIXTURE["mat0"], np.float32), name="kernel")
    case = CASES[key]
    if "constraint" in case:
        low, high = case["constraint"]
        vec.constraint = lambda x: tf.clip_by_value(x, low, high)
    return vec, mat


def run(key: str, traced: bool = False, sparse: bool = False):
    """(optimizer, variables, [(vec, mat) after each step]) for case `key`."""
    opt = make(key)
    vec, mat = variables(key)
    exclude = CASES[key].get("exclude")
    if exclude == "names":
        opt.exclude_from_weight_decay(var_names=["bias"])
    elif exclude == "list":
        opt.exclude_from_weight_decay(var_list=[mat])

    def step(gv, gm):
        if sparse:  # the matrix's gradient as rows, one of them split in two
            gm = tf.IndexedSlices(tf.concat([gm[1:] * 0.25, gm, gm[1:] * -0.25], 0),
                                  tf.constant([1, 0, 1, 1]), tf.constant([2, 3]))
        opt.apply_gradients([(gv, vec), (gm, mat)])

    if traced:
        step = tf.function(step)
    out = []
    for gv, gm in zip(GRADS_VEC, GRADS_MAT):
        step(tf.constant(gv), tf.constant(gm))
        out.append((vec.numpy().copy(), mat.numpy().copy()))
    return opt, (vec, mat), out


def keras_order(opt, vec, mat) -> list:
    """The optimizer's variables in the order Keras 3 lists them: iteration, learning
    rate, the EMA and accumulator blocks, then the slot blocks (`_slot_blocks`)."""
    out = [opt._iterations]
    if isinstance(opt._learning_rate, tf.Variable):
        out.append(opt._learning_rate)
    for block in (opt._model_variables_moving_average, opt._accumulated_gradients):
        out += block
    return out + [opt._slot(w, name) for names in opt._slot_blocks() for w in (vec, mat)
                  for name in names]


@pytest.mark.parametrize("key", sorted(CASES))
def test_trajectory_matches_keras(key):
    opt, (vec, mat), got = run(key)
    case = CASES[key]
    for i, (v, m) in enumerate(got):
        np.testing.assert_allclose(v, case["vec"][i], rtol=2e-5, atol=2e-6,
                                   err_msg=f"{key} step {i + 1} (bias)")
        np.testing.assert_allclose(m, case["mat"][i], rtol=2e-5, atol=2e-6,
                                   err_msg=f"{key} step {i + 1} (kernel)")
    state = keras_order(opt, vec, mat)
    shapes = [(list(v.shape), v.dtype.name) for v in state]
    assert shapes == [(shape, dtype) for _, shape, dtype in case["variables"]]
    for ours, theirs in zip(state, case["final_state"]):
        np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), theirs, rtol=2e-5,
                                   atol=1e-6, err_msg=f"{key}: {ours.name}")


@pytest.mark.parametrize("key", NEW + ["adafactor+accumulation", "lamb+ema",
                                       "lion_constraint", "adafactor_exclude_names",
                                       "adam_constraint_accumulation", "adafactor_restarts"])
def test_traced_steps_match_eager(key):
    _, _, eager = run(key)
    _, _, traced = run(key, traced=True)
    for (v1, m1), (v2, m2) in zip(eager, traced):
        np.testing.assert_allclose(v2, v1, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(m2, m1, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("key", NEW + ["ftrl_opts", "lion+weight_decay",
                                       "lamb+global_clipnorm", "adafactor+clipnorm"])
@pytest.mark.parametrize("traced", [False, True])
def test_indexed_slices_give_what_the_dense_gradient_gives(key, traced):
    _, _, dense = run(key)
    _, _, sparse = run(key, traced=traced, sparse=True)
    for (v1, m1), (v2, m2) in zip(dense, sparse):
        np.testing.assert_allclose(v2, v1, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(m2, m1, rtol=1e-6, atol=1e-6)


def test_untouched_rows_follow_the_rule_with_a_zero_gradient():
    """Lion moves a row the gradient does not name by its momentum's sign; Ftrl resets it
    from its `linear` slot (both, as a dense gradient with a zero row would)."""
    for cls, kwargs in ((tf.optimizers.Lion, {"learning_rate": 0.1}),
                        (tf.optimizers.Ftrl, {"learning_rate": 0.1})):
        a = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        b = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        opt_a, opt_b = cls(**kwargs), cls(**kwargs)
        for g in ([[1.0, -1.0], [0.5, 2.0]], [[0.0, 0.0], [-1.0, 1.0]]):
            opt_a.apply_gradients([(tf.constant(g), a)])
        opt_b.apply_gradients([(tf.constant([[1.0, -1.0], [0.5, 2.0]]), b)])
        opt_b.apply_gradients([(tf.IndexedSlices(tf.constant([[-1.0, 1.0]]),
                                                 tf.constant([1])), b)])
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_configs_are_keras_s():
    for key in ("adafactor_opts", "ftrl_opts", "lamb_opts", "lion_opts", "adafactor_default"):
        theirs = dict(FIXTURE["configs"][key])
        ours = make(key).get_config()
        assert list(ours) == list(theirs), key
        assert ours["learning_rate"] == pytest.approx(theirs.pop("learning_rate"))
        theirs.pop("name")
        assert {k: ours[k] for k in theirs} == theirs
        again = type(make(key)).from_config(ours).get_config()
        assert again == ours


def test_default_names_and_get():
    for name, cls in (("adafactor", tf.optimizers.Adafactor), ("ftrl", tf.optimizers.Ftrl),
                      ("lamb", tf.optimizers.Lamb), ("lion", tf.optimizers.Lion)):
        assert cls().name == name  # Keras 3's default: the class name in snake case
        assert type(tf.keras.optimizers.get(name)) is cls
        assert type(tf.keras.optimizers.get({"class_name": cls.__name__, "config": {}})) \
            is cls
    assert tf.optimizers.Lion is tf.keras.optimizers.Lion


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        tf.optimizers.Ftrl(initial_accumulator_value=-0.1)
    with pytest.raises(ValueError, match="learning_rate_power"):
        tf.optimizers.Ftrl(learning_rate_power=0.5)
    for key in ("l1_regularization_strength", "l2_regularization_strength",
                "l2_shrinkage_regularization_strength"):
        with pytest.raises(ValueError, match=key):
            tf.optimizers.Ftrl(**{key: -1.0})
    for beta_1 in (0.0, 1.5):
        with pytest.raises(ValueError, match="beta_1"):
            tf.optimizers.Lion(beta_1=beta_1)
    with pytest.raises(ValueError, match="not recognized"):
        tf.optimizers.Lamb(amsgrad=True)


def test_adafactor_slots_are_factored():
    """Rank >= 2: `r` over the leading axes, `c` without the second last; rank < 2: 0-d
    int32 placeholders (Keras's), the velocity doing the work; 3-d factors the last two."""
    opt = tf.optimizers.Adafactor(0.1)
    s, v, m, t = (tf.Variable(2.0), tf.Variable([1.0, 2.0]), tf.Variable(tf.ones([2, 3])),
                  tf.Variable(tf.ones([4, 2, 3])))
    opt.apply_gradients([(tf.constant(1.0), s), (tf.ones([2]), v), (tf.ones([2, 3]), m),
                         (tf.ones([4, 2, 3]), t)])
    shapes = [[(name, list(opt._slot(var, name).shape), opt._slot(var, name).dtype.name)
               for name in ("r", "c", "velocity")] for var in (s, v, m, t)]
    assert shapes == [
        [("r", [], "int32"), ("c", [], "int32"), ("velocity", [], "float32")],
        [("r", [], "int32"), ("c", [], "int32"), ("velocity", [2], "float32")],
        [("r", [2], "float32"), ("c", [3], "float32"), ("velocity", [2, 3], "float32")],
        [("r", [4, 2], "float32"), ("c", [4, 3], "float32"),
         ("velocity", [4, 2, 3], "float32")]]
    # a 0-d variable, by hand: t = 1, beta_2 = 0, v = g² + eps_1, u = g / |g| = 1,
    # alpha = max(eps_2, |x|) * min(lr, 1) = 0.2: 2 - 0.2
    assert float(s) == pytest.approx(1.8)


def test_exclude_from_weight_decay():
    # AdamW: the excluded variable moves as Adam moves it; the other decays first
    a, b = tf.Variable([1.0, -2.0], name="dense/bias"), tf.Variable([1.0, -2.0], name="k")
    plain = tf.Variable([1.0, -2.0])
    opt = tf.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    adam = tf.optimizers.Adam(learning_rate=0.1)
    for g in ([0.5, 1.0], [-1.0, 2.0]):
        opt.apply_gradients([(tf.constant(g), a), (tf.constant(g), b)])
        adam.apply_gradients([(tf.constant(g), plain)])
    np.testing.assert_array_equal(a.numpy(), plain.numpy())
    assert not np.allclose(b.numpy(), plain.numpy())
    # by variable, and a regular expression over names
    c, d = tf.Variable([3.0], name="gamma"), tf.Variable([3.0], name="beta")
    opt = tf.optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_list=[c], var_names=["^be"])
    opt.apply_gradients([(tf.constant([0.0]), c), (tf.constant([0.0]), d)])
    assert (float(c[0]), float(d[0])) == (3.0, 3.0)
    e = tf.Variable([3.0], name="kernel")
    opt = tf.optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["^be"])
    opt.apply_gradients([(tf.constant([0.0]), e)])
    assert float(e[0]) == pytest.approx(3.0 - 3.0 * 0.5 * 0.1)


def test_exclude_from_weight_decay_matches_keras_s_short_names():
    """Keras 3 matches `variable.name`, "kernel" for a Dense layer's kernel: a layer's
    name in the pattern excludes nothing."""
    layer = tf.keras.layers.Dense(2)
    layer.build((None, 3))
    kernel, bias = layer.kernel, layer.bias
    bias.assign([1.0, -2.0])  # not zeros, so a decay would show
    before = kernel.numpy().copy(), bias.numpy().copy()
    opt = tf.optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["dense", "bias"])
    opt.apply_gradients([(tf.zeros_like(kernel), kernel), (tf.zeros_like(bias), bias)])
    np.testing.assert_allclose(kernel.numpy(), before[0] * 0.95, rtol=1e-6)
    np.testing.assert_array_equal(bias.numpy(), before[1])


def test_exclude_from_weight_decay_after_build_is_refused():
    v = tf.Variable([1.0])
    opt = tf.optimizers.AdamW()
    opt.apply_gradients([(tf.constant([1.0]), v)])
    with pytest.raises(ValueError, match="before the optimizer is built"):
        opt.exclude_from_weight_decay(var_names=["bias"])


def test_constraints_apply_after_each_step():
    """`variable.constraint` (what layers set) projects the variable after the update;
    a variable without one, or with `constraint = None`, is left alone."""
    v = tf.Variable([0.5, -0.5, 2.0])
    v.constraint = lambda x: tf.maximum(x, 0.0)  # non-negative
    w = tf.Variable([0.5, -0.5])
    w.constraint = None
    opt = tf.optimizers.SGD(learning_rate=1.0)
    opt.apply_gradients([(tf.constant([1.0, -0.25, 1.0]), v), (tf.constant([1.0, 1.0]), w)])
    np.testing.assert_allclose(v.numpy(), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(w.numpy(), [-0.5, -1.5])
    # the constraint gets the variable, as Keras's does
    seen = []
    u = tf.Variable([1.0])
    u.constraint = lambda x: seen.append(x) or x * 2.0
    opt.apply_gradients([(tf.constant([0.5]), u)])
    assert seen[0] is u and float(u[0]) == pytest.approx(1.0)
    # skipped variables (None gradient) are not projected
    z = tf.Variable([-1.0])
    z.constraint = lambda x: tf.maximum(x, 0.0)
    with pytest.warns(UserWarning):
        opt.apply_gradients([(None, z), (tf.constant([0.0, 0.0, 0.0]), v)])
    assert float(z[0]) == -1.0


def test_slot_blocks_follow_keras():
    """Keras 3's variable order: one add_optimizer_variables call interleaves its slots
    per variable; separate calls make blocks (what saving's optimizer_state needs)."""
    assert tf.optimizers.Ftrl()._slot_blocks() == (("accumulator", "linear"),)
    assert tf.optimizers.Lamb()._slot_blocks() == (("momentum", "velocity"),)
    assert tf.optimizers.Adafactor()._slot_blocks() == (("r", "c", "velocity"),)
    assert tf.optimizers.Lion()._slot_blocks() == (("momentum",),)
    assert tf.optimizers.Adadelta()._slot_blocks() == (
        ("accumulated_grad", "accumulated_delta_var"),)
    assert tf.optimizers.Adam(amsgrad=True)._slot_blocks() == (("m", "v"), ("vhat",))
    assert tf.optimizers.RMSprop(momentum=0.5, centered=True)._slot_blocks() == (
        ("velocity",), ("momentum",), ("average_gradient",))
