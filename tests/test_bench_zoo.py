"""Smoke test of the model zoo (bench/zoo_models.py): every model builds under tapeflow and
trains two steps, so the zoo cannot rot. No timing, no TensorFlow. The steps run on
tapeflow's NumPy formulations with numba switched off: compiling the zoo's kernels takes
minutes from an empty cache, and the kernels have their own tests."""
import numpy as np
import pytest

from tests.zoo_binding import bound_zoo, zoo_models


@pytest.fixture(scope="module", autouse=True)
def _bound():
    with bound_zoo():  # (NumPy formulations: no kernel compiles)
        yield


def _weights(trainer) -> list:
    model = getattr(trainer, "model", None)
    return [] if model is None else [v.numpy().copy() for v in model.trainable_variables]


@pytest.mark.parametrize("name", list(zoo_models.MODELS))
def test_model_trains_two_steps(name):
    data = zoo_models.make_data(name, 2)
    trainer = zoo_models.build(name, data)
    before = _weights(trainer)
    loss = trainer.train(2)
    assert np.isfinite(loss), (name, loss)
    assert len(trainer.step_end) == 2
    after = _weights(trainer)
    # every trained weight moved (Keras models; the loops' own variables are tested below)
    assert all(not np.array_equal(b, a) for b, a in zip(before, after)), name


def test_rnn_loop_loss_matches_numpy():
    """The hand-written RNN's first loss against the same forward pass in float64 NumPy
    (the weights drawn as rnn_loop draws them)."""
    data = zoo_models.make_data("rnn_loop", 1)
    trainer = zoo_models.build("rnn_loop", data)
    loss = trainer.train(1)
    init = np.random.default_rng(1)
    w_x = init.standard_normal((32, 64)).astype(np.float32) * 0.15
    w_h = init.standard_normal((64, 64)).astype(np.float32) * 0.1
    w_o = init.standard_normal((64, 10)).astype(np.float32) * 0.1
    xs, labels = data["batches"][0]
    h = np.zeros((xs.shape[1], 64))
    for x in xs.astype(np.float64):
        h = np.tanh(x @ w_x + h @ w_h)
    logits = h @ w_o
    logits -= logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    expected = -logp[np.arange(len(labels)), labels].mean()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
