"""The Keras models of the model zoo (bench/zoo_models.py) as SavedModels: each is built by
the zoo's own builder under tapeflow (weights from NumPy seeds: models.zoo_model) and
written by `Model.export`. Truth: fixtures/saved_model_zoo_<name>.json, recorded by
fixtures/verify_tf.py after real TensorFlow 2.21 loaded what fixtures/write_models.py
wrote and served it (signatures, the session loader, TFSMLayer) with tapeflow's outputs.
Here the model is exported again: its structure is what TensorFlow read, tapeflow's
outputs are TensorFlow's, and tapeflow loads it back with the same outputs."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import jit
from tapeflow.function import concrete
from tapeflow.saved_model.export import export_model

from . import models
from .test_save import _describe, _fixture


@pytest.fixture(scope="module", autouse=True)
def _bound():
    # as in tests/test_bench_zoo.py: NumPy formulations, no kernel compiles
    zoo = models.zoo_module()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jit, "available", lambda: False)
        patch.setattr(concrete, "fuse_available", lambda: False, raising=False)
        yield
    zoo.bind(None)


@pytest.mark.parametrize("name", models.ZOO)
def test_zoo_model_is_served_by_tensorflow_and_loads_back(tmp_path, name):
    model, x = models.zoo_model(name)
    path = str(tmp_path / name)
    export_model(model, path)
    want = _fixture(f"zoo_{name}")
    got = _describe(path)
    for key in ("tags", "signatures", "function_ops", "objects"):
        assert got[key] == want[key], key
    y = model(x, training=False).numpy()
    for sig in ("serve", "serving_default"):  # what TensorFlow's signatures gave
        np.testing.assert_allclose(y, np.array(want["outputs"][f"{sig}/output_0"]),
                                   rtol=1e-5, atol=1e-5)
    loaded = tf.saved_model.load(path)
    np.testing.assert_allclose(loaded.serve(x).numpy(), y, rtol=1e-5, atol=1e-6)
    out = loaded.signatures["serving_default"](tf.constant(x))["output_0"]
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-5, atol=1e-6)
