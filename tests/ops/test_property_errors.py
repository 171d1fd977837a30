"""Property: a public op given a malformed argument raises InvalidArgumentError or TypeError
whose message starts with the op's name, and leaves memory and engine state untouched.

Each op below is listed with a valid call, one (kind, valid value) per argument; a case
replaces one argument with a value of that kind that TensorFlow rejects for every op taking
such an argument (floats/bools/strings/None for ints, out-of-range or duplicate axes,
negative sizes, wrong dtypes, mismatched shapes, unknown enum strings...). Two tests use the
table: `test_every_malformed_argument_is_rejected` tries every case of an op once, and the
hypothesis test draws cases, corrupts several arguments at once and runs them under
tapes, tidy scopes and accumulators.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tests.engine_state import assert_engine_state_intact, frozen_heap

# the valid calls' values need not be in every op's domain (acosh of 0.5 is NaN)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module", autouse=True)
def _cheap_collections():
    with frozen_heap():  # each case collects garbage twice
        yield


# --------------------------------------------------------------------------- operands

F = tf.constant([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])          # float32[2, 3]
F64 = tf.cast(F, tf.float64)
I = tf.constant([[1, 2, 3], [4, 5, 6]])                       # int32[2, 3]
B = tf.constant([[True, False, True], [False, True, False]])
C = tf.complex(F, F)
V = tf.constant([0.5, 1.5, 2.5])                               # float32[3]
V5 = tf.ones([5])
ROW = tf.ones([1, 3])
SQ = tf.constant([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])  # SPD [3, 3]
LOWER = tf.constant([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.5, 0.5, 2.0]])
IDX = tf.constant([0, 1])                                      # int32[2]
IDX2 = tf.constant([[0, 1], [1, 2]])                           # gather_nd indices
IMG = tf.ones([1, 4, 4, 2])
SEQ = tf.ones([1, 5, 2])
FILT = tf.ones([2, 2, 2, 3])
FILT1 = tf.ones([2, 2, 3])
DFILT = tf.ones([2, 2, 2, 1])
RAGGED = [[1.0], [1.0, 2.0]]


class Opaque:
    """An object no op can take as any argument."""

    def __repr__(self):
        return "Opaque()"


OPAQUE = Opaque()

# --------------------------------------------------------------------------- bad values

# Values each kind of argument must reject (for every op taking one). Kinds ending in "?"
# are optional: there None is valid and not tried.
_NOT_TENSOR = ["abc", None, OPAQUE, RAGGED]
BAD = {
    # a tensor of any dtype: "abc" is one (a string tensor), as in TensorFlow
    "any": [None, OPAQUE, RAGGED],
    "any!": [OPAQUE, RAGGED],                         # ... where None means something
    "extra": [],                                      # only the op's own bad values
    "num": _NOT_TENSOR + [B],                         # numeric (not bool)
    "real": _NOT_TENSOR + [B, C],                     # int or float
    "float": _NOT_TENSOR + [B, I],                    # floating (or complex)
    "float?": ["abc", OPAQUE, RAGGED, B, I],          # optional: None is valid
    "bool": _NOT_TENSOR + [F, I],
    "index": ["abc", None, OPAQUE, [0.5, 1.5], RAGGED, V],     # integer tensor
    "tlist": ["abc", None, OPAQUE, [OPAQUE]],     # a list of tensors (["abc"] is one)
    "scalar": ["abc", OPAQUE, RAGGED, [[1.0, 2.0]] * 3],    # a number (broadcastable)
    "number": ["abc", OPAQUE, RAGGED],                      # a number or any tensor
    "int": [2.5, "2", True, [1, 2], OPAQUE, tf.constant(1.5), np.float64(1.0)],
    "size": [2.5, "3", True, -1, [2, 3], OPAQUE, tf.constant(2.5), np.float32(2.0), None],
    "size?": [2.5, "3", True, -1, [2, 3], OPAQUE, tf.constant(2.5)],
    "axis": [1.5, "0", True, 99, -99, [0, 1], OPAQUE, tf.constant(1.5), tf.constant([0, 1]),
             None],
    "axis?": [1.5, "0", True, 99, -99, [0, 1], OPAQUE, tf.constant(1.5), tf.constant([0, 1])],
    "axes?": [1.5, "0", True, 99, -99, [0, 0], [0, -2], [[0]], [0.5], OPAQUE,
              tf.constant([0.5]), tf.constant([0, 0])],
    "shape": [[2.5], "3", [-1], [True], [[2]], 2.5, None, OPAQUE, tf.constant([2.5]),
              [2, "3"], [None], np.array([1.5])],
    "newshape": [[2.5], "3", [True], [[2]], 2.5, None, OPAQUE, tf.constant([2.5]), [2, "3"],
                 [None], [-1, -1], [4], [-2, 3]],       # reshape's: one -1 may be inferred
    "shape?": [[2.5], "3", [-1], [True], [[2]], 2.5, OPAQUE, tf.constant([2.5]), [2, "3"]],
    "ints": [[1.5, 0], "ab", None, [True, 0], [[0, 0]], OPAQUE, tf.constant([0.5, 0.5])],
    "ints?": [[1.5, 0], "ab", [True, 0], [[0, 0]], OPAQUE, tf.constant([0.5, 0.5])],
    "dtype": [None, "foo", "int33", 99, OPAQUE, [tf.float32]],
    "dtype?": ["foo", "int33", 99, OPAQUE, [tf.float32]],
    "enum": ["FOO", 5, None, OPAQUE],
    "enum?": ["FOO", 5, OPAQUE],
    "ord": ["foo", None, OPAQUE, -1, 0, True],
    "str": [5, None, OPAQUE, ["ij"]],
    # tensordot of [2, 3] and [3, 2]
    "tdaxes": [1.5, "x", None, OPAQUE, True, 3, -1, [[0], [5]], [[0, 0], [1, 1]], [[0], [0]],
               [[1]], [0], [0, 1, 2], tf.constant([0.5]), [0.5, 1], [[0], "a"], [[0], [True]],
               {"a": 1}, [[[0]], [[1]]]],
}


@dataclasses.dataclass
class Op:
    """A public op: `fn(**{arg: valid value})` succeeds; `args[arg] = (kind, valid, extra)`
    where `extra` lists further bad values of that argument only (shape or dtype
    mismatches with the other arguments). `names`: what an error message may start with
    (the public name, and the kernel's where the op's messages use it)."""

    name: str
    fn: object
    args: dict
    names: tuple = ()

    def valid(self):
        return {k: v[1] for k, v in self.args.items()}

    def bad_values(self, arg):
        kind, _, *extra = self.args[arg]
        return BAD[kind] + (extra[0] if extra else [])


def _unary(names, kind="float", module=tf.math):
    """Ops taking one tensor argument `x` (or `features`)."""
    out = []
    for n in names.split():
        fn = getattr(module, n)
        arg = "features" if n in ("softplus", "softsign", "relu", "relu6", "elu", "selu",
                                  "gelu", "leaky_relu", "silu", "swish") else "x"
        if n in ("real", "imag", "angle"):
            arg = "input"
        out.append(Op(n, fn, {arg: (kind, F)}))
    return out


_ALIASES = {"divide": ("truediv",), "mod": ("floormod",)}  # TF's aliases


def _binary(names, kind="num", x=F, y=F, module=tf.math):
    return [Op(n, getattr(module, n), {"x": (kind, x), "y": (kind, y, [V5, F64, ROW[:, :2]])},
               _ALIASES.get(n, ())) for n in names.split()]


MATH = (
    _unary("exp expm1 log log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh asinh "
           "acosh atanh sigmoid softplus softsign erf erfc lgamma digamma floor ceil "
           "is_nan is_inf is_finite")
    + _unary("negative abs sign square reciprocal round real imag angle conj", "num")
    + [Op("logical_not", tf.math.logical_not, {"x": ("bool", B)})]
    + _binary("add subtract multiply divide truediv floordiv floormod mod pow "
              "squared_difference maximum minimum")
    + _binary("less less_equal greater greater_equal", "real")
    # `tensor == None` is False (TF's Tensor.__eq__ goes through tf.equal here): y=None passes
    + [Op(n, getattr(tf.math, n), {"x": ("any", F), "y": ("any!", F, [V5, F64])})
       for n in ("equal", "not_equal")]
    + _binary("logical_and logical_or logical_xor", "bool", B, B)
    + [Op("atan2", tf.math.atan2, {"y": ("float", F), "x": ("float", F, [V5, F64])}),
       Op("polygamma", tf.math.polygamma, {"a": ("float", F), "x": ("float", F, [V5, F64])}),
       Op("complex", tf.complex, {"real": ("float", F), "imag": ("float", F, [V5, F64])}),
       Op("cast", tf.cast, {"x": ("any", F), "dtype": ("dtype", tf.int32)}),
       Op("clip_by_value", tf.clip_by_value, {"t": ("real", F),
                                              "clip_value_min": ("scalar", 0.0, [V5]),
                                              "clip_value_max": ("scalar", 1.0, [V5])})]
)

REDUCTION = (
    [Op(n, getattr(tf.math, n), {"input_tensor": (kind, x), "axis": ("axes?", 1)})
     for n, kind, x in [("reduce_sum", "num", F), ("reduce_mean", "num", F),
                        ("reduce_max", "real", F), ("reduce_min", "real", F),
                        ("reduce_prod", "num", F), ("reduce_logsumexp", "float", F),
                        ("reduce_std", "float", F), ("reduce_variance", "float", F),
                        ("reduce_any", "bool", B), ("reduce_all", "bool", B)]]
    + [Op(n, getattr(tf.math, n), {"input": ("any", F, [C]), "axis": ("axis?", 1),
                                   "output_type": ("dtype", tf.int32, [tf.float32])})
       for n in ("argmax", "argmin")]
    + [Op("top_k", tf.math.top_k, {"input": ("real", F), "k": ("size", 2, [4]),
                                   "index_type": ("dtype", tf.int32, [tf.float32])}),
       Op("cumsum", tf.math.cumsum, {"x": ("num", F), "axis": ("axis", 1)}),
       Op("cumprod", tf.math.cumprod, {"x": ("num", F), "axis": ("axis", 1)}),
       Op("add_n", tf.add_n, {"inputs": ("tlist", [F, F], [F, [], [F, V5], [F, F64]])}),
       Op("l2_normalize", tf.math.l2_normalize, {"x": ("float", F), "axis": ("axes?", 1)}),
       Op("clip_by_norm", tf.clip_by_norm, {"t": ("float", F), "clip_norm": ("scalar", 1.0),
                                            "axes": ("axes?", 1)}),
       Op("clip_by_global_norm", tf.clip_by_global_norm,
          {"t_list": ("tlist", [F, V], [F]), "clip_norm": ("scalar", 1.0)})]
)

CREATION = [
    Op("constant", tf.constant, {"value": ("any", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
                                 "dtype": ("dtype?", tf.float32),
                                 "shape": ("shape?", [2, 3], [[4]])}),
    Op("zeros", tf.zeros, {"shape": ("shape", [2, 3]), "dtype": ("dtype", tf.float32)}),
    Op("ones", tf.ones, {"shape": ("shape", [2, 3]), "dtype": ("dtype", tf.float32)}),
    Op("zeros_like", tf.zeros_like, {"input": ("any", F), "dtype": ("dtype?", tf.int32)}),
    Op("ones_like", tf.ones_like, {"input": ("any", F), "dtype": ("dtype?", tf.int32)}),
    Op("fill", tf.fill, {"dims": ("shape", [2, 3]),  # a string value fills a string tensor
                         "value": ("any!", 7.0, [V, None, [[1.0, 2.0]] * 3])}),
    Op("range", tf.range, {"start": ("scalar", 1, [None, True, V]), "limit": ("scalar", 7),
                           "delta": ("scalar", 2, [0, -1]), "dtype": ("dtype?", tf.int64)}),
    Op("linspace", tf.linspace, {"start": ("number", 0.0, [None, I]),
                                 "stop": ("number", 1.0, [None]),
                                 "num": ("size", 5), "axis": ("axis", 0)}),
    Op("eye", tf.eye, {"num_rows": ("size", 2), "num_columns": ("size?", 3),
                       "batch_shape": ("shape?", [2]), "dtype": ("dtype", tf.float32)}),
    Op("one_hot", tf.one_hot, {"indices": ("index", IDX), "depth": ("size", 3),
                               "on_value": ("scalar", 5.0, [I]),
                               "off_value": ("scalar", -1.0),
                               "axis": ("axis?", 0, [-2, 2]), "dtype": ("dtype?", tf.float32)},
       ("OneHot",)),
]

ARRAY = [
    Op("reshape", tf.reshape, {"tensor": ("any", F),
                               "shape": ("newshape", [3, 2])}),
    Op("identity", tf.identity, {"input": ("any", F)}),
    Op("identity_n", tf.identity_n, {"input": ("tlist", [F, I], [F])}),
    Op("broadcast_to", tf.broadcast_to, {"input": ("any", F),
                                         "shape": ("shape", [4, 2, 3], [[5], [2, 1]])}),
    Op("transpose", tf.transpose, {"a": ("any", F),
                                   "perm": ("ints?", [1, 0], [[0, 0], [0], [0, 1, 2], [0, 2]])}),
    Op("expand_dims", tf.expand_dims, {"input": ("any", F), "axis": ("axis", 2)},
       ("ExpandDims",)),
    Op("squeeze", tf.squeeze, {"input": ("any", ROW),
                               "axis": ("axis?", 0, [1, [1], [0, 1], [[0]], [0.5], "ab"])}),
    Op("concat", tf.concat, {"values": ("tlist", [F, F], [[], [F, V], [F, F64],
                                                          [F, tf.ones([3, 3])]]),
                             "axis": ("axis", 1)}),
    Op("stack", tf.stack, {"values": ("tlist", [F, F], [[], [F, V5], [F, F64]]),
                           "axis": ("axis", 2)}),
    Op("unstack", tf.unstack, {"value": ("any", F), "num": ("size?", 2, [3]),
                               "axis": ("axis", 0)}),
    Op("split", tf.split, {"value": ("any", F),
                           "num_or_size_splits": ("ints", [1, 2], [2.5, "3", True, 0, 2,
                                                                   [-2, 5], [1, 1]]),
                           "axis": ("axis", 1)}),
    Op("tile", tf.tile, {"input": ("any", F), "multiples": ("ints", [2, 1], [[1], [-1, 1]])}),
    Op("pad", tf.pad, {"tensor": ("any", F),
                       "paddings": ("ints", [[1, 0], [0, 2]], [[[1, 1]], [[-1, 0], [0, 0]],
                                                                [[0.5, 0], [0, 0]]]),
                       "mode": ("enum", "CONSTANT"),
                       "constant_values": ("scalar", 0.0, [V])}),
    Op("reverse", tf.reverse, {"tensor": ("any", F),
                               "axis": ("ints", [1], [[0, 0], [0, -2], [99], 1.5])}),
    Op("stop_gradient", tf.stop_gradient, {"input": ("any", F)}),
    Op("shape", tf.shape, {"input": ("any", F), "out_type": ("dtype", tf.int64, [tf.float32])}),
    Op("size", tf.size, {"input": ("any", F), "out_type": ("dtype", tf.int64, [tf.float32])}),
    Op("rank", tf.rank, {"input": ("any", F)}),
    Op("sort", tf.sort, {"values": ("real", F), "axis": ("axis", 1),
                         "direction": ("enum", "DESCENDING")}),
    Op("argsort", tf.argsort, {"values": ("real", F), "axis": ("axis", 1),
                               "direction": ("enum", "DESCENDING")}, ("ArgSort",)),
    Op("meshgrid", lambda x, y, indexing: tf.meshgrid(x, y, indexing=indexing),
       {"x": ("any", V), "y": ("any", V5, [F64]), "indexing": ("enum", "ij")}),
    Op("sequence_mask", tf.sequence_mask, {"lengths": ("index", IDX), "maxlen": ("size?", 3),
                                           "dtype": ("dtype", tf.float32)}, ("SequenceMask",)),
]

INDEXING = [
    Op("slice", tf.slice, {"input_": ("any", F), "begin": ("ints", [0, 1], [[0], [-1, 0]]),
                           "size": ("ints", [2, 1], [[5, 5], [1], [-2, 1]])}),
    Op("strided_slice", tf.strided_slice,
       {"input_": ("any", F), "begin": ("ints", [0, 0], [[0, 0, 0, 0, 0, 0, 0, 0, 0]]),
        "end": ("ints", [2, 3]), "strides": ("ints?", [1, 2], [[0, 1]]),
        "begin_mask": ("int", 0), "end_mask": ("int", 0),
        "shrink_axis_mask": ("int", 0)}),
    Op("gather", tf.gather, {"params": ("any", F), "indices": ("index", IDX, [[5]]),
                             "axis": ("axis?", 1), "batch_dims": ("int", 0, [5, -5])},
       ("GatherV2",)),
    Op("gather_nd", tf.gather_nd, {"params": ("any", F), "indices": ("index", IDX2, [[[5, 5]]]),
                                   "batch_dims": ("int", 0, [5])}, ("GatherNd",)),
    Op("scatter_nd", tf.scatter_nd, {"indices": ("index", tf.constant([[0], [1]])),
                                     "updates": ("any", V[:2], [V5]),
                                     "shape": ("shape", [4], [[0]])}, ("ScatterNd",)),
    Op("tensor_scatter_nd_update", tf.tensor_scatter_nd_update,
       {"tensor": ("any", V), "indices": ("index", tf.constant([[0], [1]])),
        "updates": ("any", tf.constant([9.0, 8.0]), [V5, tf.constant([1, 2])])},
       ("TensorScatterNdUpdate",)),
    Op("where", tf.where, {"condition": ("bool", B), "x": ("any", F, [V5, I]),
                           "y": ("any", F, [V5, I])}, ("SelectV2",)),
    Op("boolean_mask", tf.boolean_mask, {"tensor": ("any", F),
                                         "mask": ("bool", tf.constant([True, False]),
                                                  [tf.constant([True])]),
                                         "axis": ("axis?", 0)}),
]

_MATRIX = ["abc", None, OPAQUE, RAGGED, B, V, F]     # not a float square matrix
LINALG = (
    [Op("matmul", tf.linalg.matmul, {"a": ("num", F), "b": ("num", tf.ones([3, 2]),
                                                            [F, tf.ones([3, 2], tf.float64)])},
        ("MatMul", "BatchMatMulV2")),
     Op("matvec", tf.linalg.matvec, {"a": ("num", F), "b": ("num", V, [V5, tf.ones([2, 2])])},
       ("MatVec",)),
     Op("tensordot", tf.tensordot, {"a": ("num", F), "b": ("num", tf.ones([3, 2]), [V5]),
                                    "axes": ("tdaxes", 1)}),
     Op("einsum", lambda equation, a, b: tf.einsum(equation, a, b),
        {"equation": ("str", "ij,jk->ik", ["ij,jk->ik,", "i,jk->ik", "ij,jk->q", "ij,jk->iik",
                                            "ij,jk->ik->", "ij,jk,kl->il", "i.j,jk->ik"]),
         "a": ("num", F), "b": ("num", tf.ones([3, 2]), [V5, tf.ones([2, 2])])}),
     Op("solve", tf.linalg.solve, {"matrix": ("float", SQ, [F]),
                                   "rhs": ("float", tf.ones([3, 2]), [V5])}, ("MatrixSolve",))]
    + [Op(n, getattr(tf.linalg, n), {arg: ("float", SQ, [V, F])}, kernel)
       for n, arg, kernel in [("inv", "input", ("MatrixInverse",)),
                              ("det", "input", ("MatrixDeterminant",)),
                              ("slogdet", "input", ("LogMatrixDeterminant",)),
                              ("cholesky", "input", ()), ("eigh", "tensor", ("SelfAdjointEig",)),
                              ("eigvalsh", "tensor", ("SelfAdjointEig",)),
                              ("logdet", "matrix", ())]]
    + [Op(n, getattr(tf.linalg, n), {"input" if n == "qr" else "tensor": ("float", F, [V])})
       for n in ("qr", "svd")]
    + [Op("triangular_solve", tf.linalg.triangular_solve,
          {"matrix": ("float", LOWER, [F]), "rhs": ("float", tf.ones([3, 2]), [V5])},
          ("MatrixTriangularSolve",)),
       Op("cholesky_solve", tf.linalg.cholesky_solve,
          {"chol": ("float", LOWER, [F]), "rhs": ("float", tf.ones([3, 2]), [V5])}),
       Op("norm", tf.linalg.norm, {"tensor": ("float", F), "ord": ("ord", "euclidean"),
                                   "axis": ("axes?", 1, [[0, 1, 0]])}),
       Op("trace", tf.linalg.trace, {"x": ("num", F, [V])}),
       Op("diag", tf.linalg.diag, {"diagonal": ("any", V), "k": ("int", 0),
                                   "num_rows": ("int", -1), "num_cols": ("int", -1),
                                   "padding_value": ("scalar", 0.0),
                                   "align": ("enum", "RIGHT_LEFT")}, ("MatrixDiag",)),
       Op("diag_part", tf.linalg.diag_part, {"input": ("any", F, [V]), "k": ("int", 0),
                                             "align": ("enum", "RIGHT_LEFT")},
          ("MatrixDiagPart",)),
       Op("matrix_transpose", tf.linalg.matrix_transpose, {"a": ("any", F, [V])},
          ("MatrixTranspose",)),
       Op("adjoint", tf.linalg.adjoint, {"matrix": ("any", F, [V])}),
       Op("band_part", tf.linalg.band_part, {"input": ("any", F, [V]),
                                             "num_lower": ("int", 1),
                                             "num_upper": ("int", -1)}, ("MatrixBandPart",))]
)

NN = (
    _unary("elu selu gelu", "float", module=tf.nn)
    + _unary("relu relu6", "real", module=tf.nn)
    + [Op("leaky_relu", tf.nn.leaky_relu, {"features": ("real", F),
                                           "alpha": ("scalar", 0.1)}),
       Op("silu", tf.nn.silu, {"features": ("float", F), "beta": ("scalar", 1.0)}),
       Op("softmax", tf.nn.softmax, {"logits": ("float", F), "axis": ("axis?", 0)}),
       Op("log_softmax", tf.nn.log_softmax, {"logits": ("float", F), "axis": ("axis?", 0)}),
       Op("bias_add", tf.nn.bias_add, {"value": ("num", F), "bias": ("num", V, [V5, F]),
                                       "data_format": ("enum?", "NHWC")}),
       Op("softmax_cross_entropy_with_logits", tf.nn.softmax_cross_entropy_with_logits,
          {"labels": ("float", F, [V5]), "logits": ("float", F), "axis": ("axis?", -1)}),
       Op("sparse_softmax_cross_entropy_with_logits",
          tf.nn.sparse_softmax_cross_entropy_with_logits,
          {"labels": ("index", IDX, [V5]), "logits": ("float", F, [V])}),
       Op("sigmoid_cross_entropy_with_logits", tf.nn.sigmoid_cross_entropy_with_logits,
          {"labels": ("float", F, [V5]), "logits": ("float", F)}),
       Op("l2_loss", tf.nn.l2_loss, {"t": ("float", F)}),
       Op("moments", tf.nn.moments, {"x": ("float", F), "axes": ("axes?", [0])}),
       Op("batch_normalization", tf.nn.batch_normalization,
          {"x": ("float", F), "mean": ("float", V, [V5]), "variance": ("float", V),
           "offset": ("float?", V), "scale": ("float?", V), "variance_epsilon": ("scalar", 1e-3)}),
       Op("embedding_lookup", tf.nn.embedding_lookup,
          # params may be a list of shards: RAGGED is two of them
          {"params": ("extra", F, ["abc", OPAQUE, None, [], [F, V]]),
           "ids": ("index", IDX, [[5]])})]
)

_STRIDES = [[1.5, 1], "ab", None, [0, 1], [-1, 1], [1, 1, 1], OPAQUE, True]
CONV = [
    Op("conv2d", tf.nn.conv2d, {"input": ("float", IMG, [F]), "filters": ("float", FILT, [F]),
                                "strides": ("ints", 1, _STRIDES[:6]),
                                "padding": ("enum", "SAME"),
                                "data_format": ("enum", "NHWC")}, ("Conv2D",)),
    Op("conv1d", tf.nn.conv1d, {"input": ("float", SEQ, [F]), "filters": ("float", FILT1, [F]),
                                "stride": ("ints", 1, [1.5, [0], [-1]]),
                                "padding": ("enum", "VALID")}, ("Conv1D",)),
    Op("conv2d_transpose", tf.nn.conv2d_transpose,
       {"input": ("float", tf.ones([1, 4, 4, 3]), [F]), "filters": ("float", FILT, [F]),
        "output_shape": ("shape", [1, 4, 4, 2], [[1, 5, 5, 2]]),
        "strides": ("ints", 1, [1.5, [0]]), "padding": ("enum", "SAME")},
       ("Conv2DBackpropInput", "Conv2DTranspose")),
    Op("depthwise_conv2d", tf.nn.depthwise_conv2d,
       {"input": ("float", IMG, [F]), "filter": ("float", DFILT, [F]),
        "strides": ("ints", [1, 1, 1, 1], [[1.5, 1, 1, 1], [1, 0, 0, 1]]),
        "padding": ("enum", "SAME")}, ("DepthwiseConv2dNative",)),
    Op("max_pool2d", tf.nn.max_pool2d, {"input": ("float", IMG, [F]),
                                        "ksize": ("ints", 2, [1.5, [0], [-1]]),
                                        "strides": ("ints", 2, [1.5, [0]]),
                                        "padding": ("enum", "VALID")}, ("MaxPool",)),
    Op("avg_pool2d", tf.nn.avg_pool2d, {"input": ("float", IMG, [F]),
                                        "ksize": ("ints", 2, [1.5, [0], [-1]]),
                                        "strides": ("ints", 2, [1.5, [0]]),
                                        "padding": ("enum", "VALID")}, ("AvgPool",)),
]

_SEED = [1.5, "a", [1], OPAQUE, True]
_GEN = tf.random.Generator.from_seed(1)
RANDOM = [
    Op("random.normal", tf.random.normal, {"shape": ("shape", [2, 3]),
                                           "mean": ("scalar", 0.0), "stddev": ("scalar", 1.0),
                                           "dtype": ("dtype", tf.float32, [tf.int32]),
                                           "seed": ("int", 3, _SEED)}),
    Op("random.uniform", tf.random.uniform, {"shape": ("shape", [2, 3]),
                                             "minval": ("scalar", 0.0),
                                             "maxval": ("scalar", 1.0),
                                             "dtype": ("dtype", tf.float32, [tf.bool]),
                                             "seed": ("int", 3, _SEED)}),
    Op("random.truncated_normal", tf.random.truncated_normal,
       {"shape": ("shape", [2, 3]), "dtype": ("dtype", tf.float32, [tf.int32]),
        "seed": ("int", 3, _SEED)}),
    Op("random.categorical", tf.random.categorical,
       {"logits": ("float", F, [V]), "num_samples": ("size", 2),
        "dtype": ("dtype?", tf.int32, [tf.float32]), "seed": ("int", 3, _SEED)}),
    Op("random.shuffle", tf.random.shuffle, {"value": ("any", F), "seed": ("int", 3, _SEED)}),
    Op("dropout", tf.nn.dropout, {"x": ("float", F), "rate": ("extra", 0.5, [
        "abc", None, OPAQUE, True, 1.0, -0.1, V]),
        "noise_shape": ("shape?", [2, 1], [[3, 3], [2]]), "seed": ("int", 3, _SEED)}),
    Op("Generator.normal", _GEN.normal, {"shape": ("shape", [2, 3]), "mean": ("scalar", 0.0),
                                         "dtype": ("dtype", tf.float32, [tf.int32])}),
    Op("Generator.uniform", _GEN.uniform, {"shape": ("shape", [2, 3]),
                                           "maxval": ("scalar", 2.0),
                                           "dtype": ("dtype", tf.float32, [tf.bool])}),
    Op("Generator.truncated_normal", _GEN.truncated_normal,
       {"shape": ("shape", [2, 3]), "stddev": ("scalar", 1.0),
        "dtype": ("dtype", tf.float32, [tf.int64])}),
]

OPS = MATH + REDUCTION + CREATION + ARRAY + INDEXING + LINALG + NN + CONV + RANDOM
BY_NAME = {op.name: op for op in OPS}
assert len(BY_NAME) == len(OPS), "duplicate op names in the table"


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def names_the_op(op: Op, message: str) -> bool:
    """The message starts with the op's public name, or with its TF kernel's (TF's style:
    "ExpandDims:" names expand_dims), up to case and underscores. An error found by a
    kernel's shape rule may carry the kernel's name before the op's ("Mul: multiply: ...")."""
    names = {_norm(n) for n in (op.name, op.name.split(".")[-1], *op.names)}
    heads = message.split(": ", 2)[:2]
    return _norm(heads[0]) in names or (len(heads) > 1 and _norm(heads[1]) in names)


def call_bad(op: Op, bad: dict):
    """Call `op` with the arguments in `bad` replaced; return the message of the
    InvalidArgumentError or TypeError it raises (None when it returns). Only the message
    leaves: the exception's traceback would keep the call's temporaries alive."""
    kwargs = op.valid()
    kwargs.update(bad)
    try:
        op.fn(**kwargs)
    except (InvalidArgumentError, TypeError) as e:
        return str(e)
    return None


def check(op: Op, bad: dict) -> None:
    """One property case: the call raises InvalidArgumentError or TypeError naming the op,
    and the memory counters and engine state are as before."""
    with assert_engine_state_intact(f"{op.name}({bad})"):
        message = call_bad(op, bad)
    assert message is not None, f"{op.name} accepted {bad!r}"
    assert names_the_op(op, message), \
        f"{op.name}({bad!r}): message does not start with the op's name: {message!r}"


# --------------------------------------------------------------------------- tests


def test_every_op_accepts_its_valid_call():
    failures = {}
    for op in OPS:
        try:
            op.fn(**op.valid())
        except Exception as e:  # noqa: BLE001 - collect them all for one report
            failures[op.name] = f"{type(e).__name__}: {e}"
    assert not failures, failures


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_malformed_argument_is_rejected(name):
    op = BY_NAME[name]
    for arg in op.args:
        for value in op.bad_values(arg):
            check(op, {arg: value})


def _contexts():
    """Where the bad call runs: plain, under a tape, in a tidy scope, under an accumulator."""
    def plain():
        return _Nothing()

    def tape():
        return tf.GradientTape(persistent=True)

    def tidy():
        return tf.tidy()

    def accumulator():
        return tf.autodiff.ForwardAccumulator(F, tf.ones_like(F))
    return [plain, tape, tidy, accumulator]


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@st.composite
def bad_calls(draw):
    op = draw(st.sampled_from(OPS))
    args = list(op.args)
    chosen = draw(st.lists(st.sampled_from(args), min_size=1, max_size=min(2, len(args)),
                           unique=True))
    bad = {a: draw(st.sampled_from(op.bad_values(a))) for a in chosen}
    return op, bad


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=bad_calls(), where=st.sampled_from(_contexts()))
def test_malformed_arguments_in_any_context(case, where):
    op, bad = case
    with assert_engine_state_intact(f"{op.name}({bad}) in {where.__name__}"):
        with where():
            message = call_bad(op, bad)
    assert message is not None, f"{op.name} accepted {bad!r}"
    # with several bad arguments any one may be named; the op must be
    assert names_the_op(op, message), f"{op.name}({bad!r}): {message!r}"
