"""The primitive bindings (_core/prims.py): the checked-in file is what tools/gen_prims.py
writes from the registry, there is one binding per registered op, and a binding runs its
op through dispatch exactly as the public op does (values, tapes, tracing)."""
from __future__ import annotations

import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow._core import prims, registry

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_prims", ROOT / "tools" / "gen_prims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checked_in_file_is_what_the_generator_writes():
    # a fresh process: this one holds ops that tests registered
    fresh = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_prims.py"), "--print"],
                           capture_output=True, text=True, check=True).stdout
    text = (ROOT / "src" / "tapeflow" / "_core" / "prims.py").read_text()
    assert text == fresh, "run: python tools/gen_prims.py"


def test_one_binding_per_op_tapeflow_defines():
    gen = _generator()
    bound = {name for name, fn in vars(prims).items()
             if inspect.isfunction(fn) and fn.__module__ == prims.__name__}
    ours = {op for op, d in registry.OPS.items()
            if f"{os.sep}tapeflow{os.sep}" in d.site and f"{os.sep}tests{os.sep}" not in d.site}
    assert len(ours) > 150
    assert bound == {gen.snake_name(op) for op in ours}


@pytest.mark.parametrize("op, expected", [("MatMul", "mat_mul"), ("Conv2D", "conv2d"),
                                          ("Conv2DBackpropInput", "conv2d_backprop_input"),
                                          ("SelectV2", "select_v2"), ("If", "if_"),
                                          ("ReadVariableOp", "read_variable_op")])
def test_binding_names(op, expected):
    assert _generator().snake_name(op) == expected


def test_a_binding_runs_its_op_with_attributes_and_records_on_tapes():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = prims.sum(prims.sin(x), axis=(0,), keepdims=False)
    np.testing.assert_allclose(y.numpy(), np.sin(x.numpy()).sum(0))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.cos(x.numpy()))


def test_a_binding_traces_like_the_public_op():
    @tf.function
    def f(x):
        return prims.mul(x, prims.exp(x))

    x = tf.constant([0.5, -1.0])
    np.testing.assert_allclose(f(x).numpy(), (x * tf.exp(x)).numpy(), rtol=1e-6)
    ops = [n.op for n in f.get_concrete_function(x).graph.nodes]
    assert "Mul" in ops and "Exp" in ops


def test_a_binding_validates_nothing_the_kernel_accepts():
    # no argument checking: a bad attribute reaches the kernel, whose error names the op
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sum"):
        prims.sum(tf.ones([2]), axis=(5,), keepdims=False)
