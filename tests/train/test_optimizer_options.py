"""The base optimizer's options (Keras 3's `BaseOptimizer`): `clipnorm`, `clipvalue`,
`global_clipnorm`, `use_ema` / `ema_momentum` / `ema_overwrite_frequency`,
`gradient_accumulation_steps`, `loss_scale_factor`, `weight_decay` on every optimizer, and
their configs. Each against NumPy references over several steps, eagerly and traced."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf

ALL = [tf.optimizers.SGD, tf.optimizers.Adam, tf.optimizers.AdamW, tf.optimizers.Nadam,
       tf.optimizers.Adamax, tf.optimizers.RMSprop, tf.optimizers.Adagrad,
       tf.optimizers.Adadelta, tf.optimizers.LazyAdam]

GRADS = [np.array([5.0, -0.05, 0.3], np.float32), np.array([-2.0, 4.0, 0.0], np.float32),
         np.array([0.02, 0.01, -0.5], np.float32), np.array([1.5, -1.5, 2.5], np.float32)]
GRADS_B = [np.array([[0.5, -3.0]], np.float32), np.array([[1.0, 1.0]], np.float32),
           np.array([[-0.2, 0.1]], np.float32), np.array([[6.0, -8.0]], np.float32)]
X0 = np.array([1.0, -2.0, 0.5], np.float32)
Y0 = np.array([[0.25, 3.0]], np.float32)


def run_steps(opt, grads, traced: bool, x0=X0, grads_b=None, y0=Y0) -> list:
    """Apply each gradient (and, with `grads_b`, a second variable's) in turn, eagerly or
    in one traced function; the variables' values after each step."""
    x = tf.Variable(x0)
    y = tf.Variable(y0) if grads_b is not None else None

    def step(g, h=None):
        pairs = [(g, x)] + ([(h, y)] if y is not None else [])
        opt.apply_gradients(pairs)

    fn = tf.function(step) if traced else step
    out = []
    for i, g in enumerate(grads):
        args = (tf.constant(g),) + ((tf.constant(grads_b[i]),) if y is not None else ())
        fn(*args)
        out.append((x.numpy().copy(), None if y is None else y.numpy().copy()))
    return out


MODES = pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])


# --------------------------------------------------------------------------- the issue


def test_issue_reproduction_clipvalue_moves_by_the_clipped_gradient():
    v = tf.Variable([1.0])
    tf.optimizers.SGD(1.0, clipvalue=0.1).apply_gradients([(tf.constant([5.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.9], rtol=1e-6)


# --------------------------------------------------------------------------- clipping


def _clip_norm(g, c):
    n = np.sqrt(np.sum(np.square(g.astype(np.float64))))
    return g * c / max(n, c)


@MODES
@pytest.mark.parametrize("option", ["clipvalue", "clipnorm", "global_clipnorm"])
def test_sgd_momentum_clipping_matches_numpy(traced, option):
    lr, mom, c = 0.1, 0.9, 1.0
    opt = tf.optimizers.SGD(lr, momentum=mom, **{option: c})
    got = run_steps(opt, GRADS, traced, grads_b=GRADS_B)
    x, y = X0.astype(np.float64), Y0.astype(np.float64)
    mx, my = np.zeros_like(x), np.zeros_like(y)
    for (gx, gy), (gotx, goty) in zip(zip(GRADS, GRADS_B), got):
        gx, gy = gx.astype(np.float64), gy.astype(np.float64)
        if option == "clipvalue":
            gx, gy = np.clip(gx, -c, c), np.clip(gy, -c, c)
        elif option == "clipnorm":
            gx, gy = _clip_norm(gx, c), _clip_norm(gy, c)
        else:
            norm = np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2))
            gx, gy = gx * c / max(norm, c), gy * c / max(norm, c)
        mx, my = mom * mx - lr * gx, mom * my - lr * gy
        x, y = x + mx, y + my
        np.testing.assert_allclose(gotx, x, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(goty, y, rtol=1e-5, atol=1e-6)


def _adam_reference(grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-7, x0=X0, wd=None,
                    clip=None) -> list:
    x = x0.astype(np.float64)
    m, v, out = np.zeros_like(x), np.zeros_like(x), []
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if clip is not None:
            g = clip(g)
        if wd:
            x = x - x * wd * lr
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        x = x - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
        out.append(x)
    return out


@MODES
@pytest.mark.parametrize("option", ["clipvalue", "clipnorm"])
def test_adam_clipping_matches_numpy(traced, option):
    c = 0.5
    clip = (lambda g: np.clip(g, -c, c)) if option == "clipvalue" else (
        lambda g: _clip_norm(g, c))
    got = run_steps(tf.optimizers.Adam(0.01, **{option: c}), GRADS, traced)
    for (gotx, _), ref in zip(got, _adam_reference(GRADS, clip=clip)):
        np.testing.assert_allclose(gotx, ref, rtol=1e-5, atol=1e-6)


def _np_clip(option: str, c: float, grads, grads_b):
    """The gradients as the option clips them, each step (float32, as the optimizer sees
    them)."""
    out = []
    for gx, gy in zip(grads, grads_b):
        gx, gy = gx.astype(np.float64), gy.astype(np.float64)
        if option == "clipvalue":
            gx, gy = np.clip(gx, -c, c), np.clip(gy, -c, c)
        elif option == "clipnorm":
            gx, gy = _clip_norm(gx, c), _clip_norm(gy, c)
        else:
            norm = np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2))
            gx, gy = gx * c / max(norm, c), gy * c / max(norm, c)
        out.append((gx.astype(np.float32), gy.astype(np.float32)))
    return out


@MODES
@pytest.mark.parametrize("option", ["clipvalue", "clipnorm", "global_clipnorm"])
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_optimizer_clips(cls, option, traced):
    """Each optimizer with a clip option gives what it gives without one on the gradients
    NumPy clipped, step after step (slots included through the updates)."""
    c = 0.7
    kwargs = {"learning_rate": 0.05}
    clipped = run_steps(cls(**kwargs, **{option: c}), GRADS, traced, grads_b=GRADS_B)
    pre = _np_clip(option, c, GRADS, GRADS_B)
    plain = run_steps(cls(**kwargs), [a for a, _ in pre], traced,
                      grads_b=[b for _, b in pre])
    unclipped = run_steps(cls(**kwargs), GRADS, traced, grads_b=GRADS_B)
    for (cx, cy), (px, py) in zip(clipped, plain):
        np.testing.assert_allclose(cx, px, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(cy, py, rtol=2e-5, atol=1e-6)
    assert not np.allclose(clipped[-1][0], unclipped[-1][0])  # the clip did something


@MODES
@pytest.mark.parametrize("option", ["clipvalue", "clipnorm", "global_clipnorm"])
def test_sparse_gradients_clip_as_their_dense_gradient(option, traced):
    """IndexedSlices (repeated rows summed) clip to what their dense gradient clips to."""
    values = np.array([[3.0, -1.0], [2.0, 0.5], [-0.2, 0.1]], np.float32)
    indices = np.array([1, 3, 1])
    dense = np.zeros([5, 2], np.float32)
    np.add.at(dense, indices, values)
    other = np.array([0.3, -4.0], np.float32)
    table0 = np.arange(10, dtype=np.float32).reshape(5, 2) / 10

    def final(sparse: bool):
        opt = tf.optimizers.SGD(0.5, momentum=0.5, **{option: 1.0})
        t, w = tf.Variable(table0), tf.Variable([1.0, 1.0])

        def step():
            g = (tf.IndexedSlices(tf.constant(values), tf.constant(indices), [5, 2])
                 if sparse else tf.constant(dense))
            opt.apply_gradients([(g, t), (tf.constant(other), w)])

        fn = tf.function(step) if traced else step
        for _ in range(3):
            fn()
        return t.numpy(), w.numpy()

    (ts, ws), (td, wd) = final(True), final(False)
    np.testing.assert_allclose(ts, td, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ws, wd, rtol=1e-6, atol=1e-7)


def test_clip_options_are_exclusive_and_non_negative():
    with pytest.raises(ValueError, match="Only one of"):
        tf.optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="Only one of"):
        tf.optimizers.Adam(global_clipnorm=1.0, clipnorm=1.0)
    with pytest.raises(ValueError, match="clipvalue"):
        tf.optimizers.SGD(clipvalue=-1.0)


def test_unknown_arguments_are_refused_by_name():
    for cls in ALL:
        with pytest.raises(ValueError, match="not_an_option"):
            cls(not_an_option=3)
    with pytest.warns(UserWarning, match="decay"):
        tf.optimizers.SGD(decay=0.1)  # Keras 3: dropped with a warning


# --------------------------------------------------------------------------- EMA


def _sgd_ema_reference(grads, lr, momentum, overwrite=None) -> list:
    x, avg, out = X0.astype(np.float64), np.zeros(3), []
    for i, g in enumerate(grads):
        x = x - lr * g.astype(np.float64)
        m = 0.0 if i == 0 else momentum
        avg = m * avg + (1 - m) * x
        if overwrite and (i + 1) % overwrite == 0:
            x = avg.copy()
        out.append((x, avg))
    return out


@MODES
@pytest.mark.parametrize("overwrite", [None, 2])
def test_sgd_ema_matches_numpy(traced, overwrite):
    opt = tf.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.8,
                            ema_overwrite_frequency=overwrite)
    x = tf.Variable(X0)

    def step(g):
        opt.apply_gradients([(g, x)])

    fn = tf.function(step) if traced else step
    for g, (ref_x, ref_avg) in zip(GRADS, _sgd_ema_reference(GRADS, 0.1, 0.8, overwrite)):
        fn(tf.constant(g))
        np.testing.assert_allclose(x.numpy(), ref_x, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(), ref_avg,
                                   rtol=1e-5, atol=1e-6)
    opt.finalize_variable_values([x])  # what Keras's fit does when training ends
    np.testing.assert_allclose(x.numpy(), ref_avg, rtol=1e-5, atol=1e-6)


@MODES
def test_adam_ema_matches_numpy(traced):
    opt = tf.optimizers.Adam(0.01, use_ema=True)  # ema_momentum 0.99, Keras's default
    got = run_steps(opt, GRADS, traced)
    avg = None
    for i, ((gotx, _), ref) in enumerate(zip(got, _adam_reference(GRADS))):
        np.testing.assert_allclose(gotx, ref, rtol=1e-5, atol=1e-6)
        avg = ref if i == 0 else 0.99 * avg + 0.01 * ref
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(), avg,
                               rtol=1e-5, atol=1e-6)
    assert opt.get_config()["ema_momentum"] == 0.99


def test_ema_options_are_checked():
    with pytest.raises(ValueError, match="ema_momentum"):
        tf.optimizers.SGD(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="ema_overwrite_frequency"):
        tf.optimizers.SGD(use_ema=True, ema_overwrite_frequency=0.5)


def test_finalize_without_ema_changes_nothing():
    x = tf.Variable(X0)
    opt = tf.optimizers.SGD(0.1)
    opt.apply_gradients([(tf.constant(GRADS[0]), x)])
    before = x.numpy().copy()
    opt.finalize_variable_values([x])
    np.testing.assert_array_equal(x.numpy(), before)


# --------------------------------------------------------------------------- accumulation


@MODES
def test_sgd_gradient_accumulation_matches_numpy(traced):
    n, lr = 3, 0.1
    grads = GRADS + GRADS[:2]  # 6 calls: 2 updates
    opt = tf.optimizers.SGD(lr, momentum=0.5, gradient_accumulation_steps=n)
    x = tf.Variable(X0)

    def step(g):
        opt.apply_gradients([(g, x)])

    fn = tf.function(step) if traced else step
    ref, m, acc = X0.astype(np.float64), np.zeros(3), np.zeros(3)
    for i, g in enumerate(grads):
        fn(tf.constant(g))
        acc = acc + g
        if (i + 1) % n == 0:
            m = 0.5 * m - lr * acc / n
            ref, acc = ref + m, np.zeros(3)
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(opt._accumulated_gradients[0].numpy(), acc, rtol=1e-5,
                                   atol=1e-6)
        assert int(opt.iterations) == (i + 1) // n  # updates, as Keras 3 counts
        assert int(opt._iterations) == i + 1        # calls


@MODES
def test_adam_gradient_accumulation_clips_the_mean_and_counts_updates(traced):
    """Adam's bias corrections count updates, not calls; the clip acts on the mean."""
    n, c = 2, 1.0
    grads = GRADS + GRADS  # 8 calls: 4 updates
    opt = tf.optimizers.Adam(0.01, clipnorm=c, gradient_accumulation_steps=n)
    got = run_steps(opt, grads, traced)
    means = [(grads[i] + grads[i + 1]) / 2 for i in range(0, len(grads), n)]
    ref = _adam_reference(means, clip=lambda g: _clip_norm(g, c))
    for k, r in enumerate(ref):
        np.testing.assert_allclose(got[2 * k][0], got[2 * k - 1][0] if k else X0)  # waits
        np.testing.assert_allclose(got[2 * k + 1][0], r, rtol=1e-5, atol=1e-6)
    assert int(opt.iterations) == 4


def test_gradient_accumulation_schedule_sees_calls():
    """Learning-rate schedules get the call counter, as Keras 3's `_iterations`."""
    seen = []
    opt = tf.optimizers.SGD(lambda step: seen.append(int(step)) or 0.1,
                            gradient_accumulation_steps=2)
    x = tf.Variable(X0)
    for g in GRADS:
        opt.apply_gradients([(tf.constant(g), x)])
    assert seen == [1, 3]
    np.testing.assert_allclose(
        x.numpy(), X0 - 0.1 * (GRADS[0] + GRADS[1]) / 2 - 0.1 * (GRADS[2] + GRADS[3]) / 2,
        rtol=1e-5)


@MODES
def test_sparse_gradients_accumulate(traced):
    table0 = np.ones([4, 2], np.float32)
    opt = tf.optimizers.SGD(1.0, gradient_accumulation_steps=2)
    t = tf.Variable(table0)

    def step(i):
        opt.apply_gradients([(tf.IndexedSlices(tf.ones([2, 2]), i, [4, 2]), t)])

    fn = tf.function(step) if traced else step
    fn(tf.constant([0, 2]))
    np.testing.assert_array_equal(t.numpy(), table0)
    fn(tf.constant([2, 2]))
    np.testing.assert_allclose(t.numpy()[:, 0], [0.5, 1.0, -0.5, 1.0])


def test_gradient_accumulation_steps_checked():
    for bad in (1, 2.5, -3):
        with pytest.raises(ValueError, match="gradient_accumulation_steps"):
            tf.optimizers.SGD(gradient_accumulation_steps=bad)


@MODES
def test_ema_with_accumulation_counts_updates(traced):
    """Keras 3: the average moves every call, its first-step copy and the overwrite
    schedule counting updates (`iterations`)."""
    opt = tf.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5,
                            gradient_accumulation_steps=2)
    got = run_steps(opt, GRADS, traced)
    x, avg = X0.astype(np.float64), np.zeros(3)
    for i, g in enumerate(GRADS):
        if i % 2 == 1:
            x = x - 0.1 * (GRADS[i - 1] + g) / 2
        m = 0.0 if i // 2 == 0 else 0.5
        avg = m * avg + (1 - m) * x
        np.testing.assert_allclose(got[i][0], x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(), avg,
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- weight decay


@MODES
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_optimizer_decays_weights(cls, traced):
    """With a zero gradient every rule leaves the variable as it is, so two steps leave
    it decoupled-decayed twice: `x (1 - wd lr)^2` (Keras 3 decays in the base)."""
    lr, wd = 0.1, 0.3
    opt = cls(learning_rate=lr, weight_decay=wd)
    got = run_steps(opt, [np.zeros(3, np.float32)] * 2, traced)
    np.testing.assert_allclose(got[-1][0], X0 * (1 - wd * lr) ** 2, rtol=1e-5)


@MODES
def test_sgd_weight_decay_and_clip_match_numpy(traced):
    lr, wd, c = 0.1, 0.2, 0.5
    got = run_steps(tf.optimizers.SGD(lr, weight_decay=wd, clipvalue=c), GRADS, traced)
    x = X0.astype(np.float64)
    for g, (gotx, _) in zip(GRADS, got):
        x = x - x * wd * lr - lr * np.clip(g, -c, c)
        np.testing.assert_allclose(gotx, x, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- loss scale


def test_loss_scale_factor_unscales_gradients():
    opt = tf.optimizers.SGD(0.1, loss_scale_factor=4.0)
    assert float(opt.scale_loss(tf.constant(2.0))) == 8.0
    x = tf.Variable(X0)
    opt.apply_gradients([(tf.constant(GRADS[0] * 4), x)])
    np.testing.assert_allclose(x.numpy(), X0 - 0.1 * GRADS[0], rtol=1e-6)


# --------------------------------------------------------------------------- configs


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_config_round_trip(cls):
    opt = cls(learning_rate=0.05, clipnorm=2.0, use_ema=True, ema_momentum=0.9,
              ema_overwrite_frequency=5, gradient_accumulation_steps=3, weight_decay=0.01)
    config = opt.get_config()
    for key, value in {"clipnorm": 2.0, "clipvalue": None, "global_clipnorm": None,
                       "use_ema": True, "ema_momentum": 0.9, "ema_overwrite_frequency": 5,
                       "gradient_accumulation_steps": 3, "weight_decay": 0.01,
                       "loss_scale_factor": None}.items():
        assert config[key] == value, key
    again = cls.from_config(config)
    assert type(again) is cls and again.get_config() == config
    assert tf.keras.optimizers.get({"class_name": cls.__name__,
                                    "config": config}).get_config() == config


def test_config_with_a_schedule():
    schedule = tf.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    config = tf.optimizers.Adam(schedule, global_clipnorm=1.0).get_config()
    again = tf.optimizers.Adam.from_config(config)
    assert isinstance(again._learning_rate, tf.optimizers.schedules.ExponentialDecay)
    assert again.global_clipnorm == 1.0


def test_state_holds_averages_and_accumulators():
    opt = tf.optimizers.Adam(use_ema=True, gradient_accumulation_steps=2)
    x = tf.Variable(X0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.apply_gradients([(tf.constant(GRADS[0]), x)])
    # iterations, average, accumulator, m, v (Keras 3's order)
    assert len(opt.variables) == 5
    assert opt.variables[1] is opt._model_variables_moving_average[0]
    assert opt.variables[2] is opt._accumulated_gradients[0]
