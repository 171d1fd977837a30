"""Generated modules import without numba (jit.Lazy): a program whose fused regions run
as NumPy blocks never imports numba; a compile request carries its arguments' types
without numba (jit.describe), and they are numba's types of the arguments."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tapeflow._core import jit

pytestmark = pytest.mark.skipif(not jit.available(), reason="fused loops need numba")

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def _run(script: str, tmp_path, **env) -> str:
    environment = dict(os.environ, TAPEFLOW_CACHE=str(tmp_path / "cache"), **env)
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {SRC!r})\n"
                           + script], env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_numpy_blocks_run_without_importing_numba_then_the_loop_compiles(tmp_path):
    script = """
import numpy as np
import tapeflow as tf
from tapeflow._core import jit
from tapeflow.function import fuse
f = tf.function(lambda x: tf.exp(x) * 2.0 + tf.tanh(x))
x = tf.constant(np.linspace(-3, 3, 1000, dtype=np.float32))
blocks = [f(x).numpy() for _ in range(3)][-1]
print("numba" in sys.modules)
kernel = [n.attrs["kernel"] for n in f.get_concrete_function(x).optimized_graph
          .get_operations() if n.op == "FusedElementwise"][0]
loop = jit.real(kernel._kernels[0])  # made now: numba imported, the loop compiled
print("numba" in sys.modules, type(loop).__name__)
n = 1000
out = np.empty(n, np.float32)
loop(0, n, x.numpy(), out)
print(np.array_equal(out.view(np.uint32), blocks.view(np.uint32)))
"""
    lines = _run(script, tmp_path, TAPEFLOW_JIT_AFTER_MS="1e9").split()
    assert lines == ["False", "True", "CPUDispatcher", "True"]


@pytest.mark.parametrize("make", [
    lambda: np.ones((3, 4), np.float32),
    lambda: np.asfortranarray(np.ones((3, 4))),
    lambda: np.ones((4, 6), np.int32)[:, ::2],
    lambda: np.ones(5, np.bool_),
    lambda: np.array(2.5),
    lambda: np.empty((0, 3), np.complex64),
    lambda: np.float32(1.5),
    lambda: 7,
    lambda: 2.0,
])
def test_described_arguments_type_as_numba_types_them(make):
    import numba  # (the test's own check against numba itself)
    value = make()
    assert jit.signature_of(jit.describe([value])) == (numba.typeof(value),)
    if isinstance(value, np.ndarray) and value.ndim:
        value.flags.writeable = False  # read-only: another numba type
        assert jit.signature_of(jit.describe([value])) == (numba.typeof(value),)


def test_nothing_compiles_until_all_regions_blocks_have_cost_the_first_compile(tmp_path):
    """numba and its worker are bought once per process: a region whose own blocks have
    cost enough still waits until all regions' blocks together have cost
    FIRST_COMPILE_AFTER_SECONDS (fuse.py), unless numba is in use already."""
    script = """
import numpy as np
import tapeflow as tf
from tapeflow._core import jit
from tapeflow.function import fuse
f = tf.function(lambda x: tf.exp(x) * 2.0 + 1.0)
x = tf.constant(np.linspace(-3, 3, 1000, dtype=np.float32))
first = [f(x).numpy() for _ in range(20)]
kernel = [n.attrs["kernel"] for n in f.get_concrete_function(x).optimized_graph
          .get_operations() if n.op == "FusedElementwise"][0]
print(kernel._rent > 0, 0 in kernel._ready, "numba" in sys.modules)
fuse.FIRST_COMPILE_AFTER_SECONDS = fuse._all_rent[0] / 2  # bought now
f(x)
jit.wait_compiled()
later = [f(x).numpy() for _ in range(2)]
print(kernel._ready.get(0) is True, kernel._loop is not None)
print(len({a.tobytes() for a in first + later}))
"""
    lines = _run(script, tmp_path, TAPEFLOW_JIT_AFTER_MS="0",
                 TAPEFLOW_JIT_FIRST_AFTER_MS="1e9").split()
    assert lines == ["True", "False", "False", "True", "True", "1"]
