"""Primitive bindings: one plain function per registered op, calling `run_kernel` by
name with no validation (inputs positionally or by name, attributes as keywords). Rules,
Variable and the engine's helpers call these instead of the public ops of other families,
so nothing reaches up or sideways at run time.

Generated from the op registry by tools/gen_prims.py, checked in; do not edit by hand.
Example:
    >>> prims.sum(tf.ones([2, 3]), axis=(0,), keepdims=False).numpy()
    array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from .dispatch import run_kernel


def abs(x, **attrs):
    """Abs (tapeflow/ops/math.py)."""
    return run_kernel("Abs", {"x": x}, attrs)


def acos(x, **attrs):
    """Acos (tapeflow/ops/math.py)."""
    return run_kernel("Acos", {"x": x}, attrs)


def acosh(x, **attrs):
    """Acosh (tapeflow/ops/math.py)."""
    return run_kernel("Acosh", {"x": x}, attrs)


def add(x, y, **attrs):
    """Add (tapeflow/ops/math.py)."""
    return run_kernel("Add", {"x": x, "y": y}, attrs)


def add_n(inputs, **attrs):
    """AddN (tapeflow/ops/reduction.py)."""
    return run_kernel("AddN", {"inputs": inputs}, attrs)


def all(x, **attrs):
    """All (tapeflow/ops/reduction.py)."""
    return run_kernel("All", {"x": x}, attrs)


def angle(x, **attrs):
    """Angle (tapeflow/ops/math.py)."""
    return run_kernel("Angle", {"x": x}, attrs)


def anonymous_iterator(**attrs):
    """AnonymousIterator (tapeflow/data/iterator.py)."""
    return run_kernel("AnonymousIterator", {}, attrs)


def any(x, **attrs):
    """Any (tapeflow/ops/reduction.py)."""
    return run_kernel("Any", {"x": x}, attrs)


def arg_max(x, **attrs):
    """ArgMax (tapeflow/ops/reduction.py)."""
    return run_kernel("ArgMax", {"x": x}, attrs)


def arg_min(x, **attrs):
    """ArgMin (tapeflow/ops/reduction.py)."""
    return run_kernel("ArgMin", {"x": x}, attrs)


def arg_sort(x, **attrs):
    """ArgSort (tapeflow/ops/array.py)."""
    return run_kernel("ArgSort", {"x": x}, attrs)


def as_string(x, **attrs):
    """AsString (tapeflow/ops/strings.py)."""
    return run_kernel("AsString", {"x": x}, attrs)


def asin(x, **attrs):
    """Asin (tapeflow/ops/math.py)."""
    return run_kernel("Asin", {"x": x}, attrs)


def asinh(x, **attrs):
    """Asinh (tapeflow/ops/math.py)."""
    return run_kernel("Asinh", {"x": x}, attrs)


def assign_add_mat_mul(resource, a, b, alpha, **attrs):
    """AssignAddMatMul (tapeflow/ops/state.py)."""
    return run_kernel("AssignAddMatMul", {
        "resource": resource,
        "a": a,
        "b": b,
        "alpha": alpha}, attrs)


def assign_add_variable_op(resource, value, **attrs):
    """AssignAddVariableOp (tapeflow/ops/state.py)."""
    return run_kernel("AssignAddVariableOp", {"resource": resource, "value": value}, attrs)


def assign_sub_variable_op(resource, value, **attrs):
    """AssignSubVariableOp (tapeflow/ops/state.py)."""
    return run_kernel("AssignSubVariableOp", {"resource": resource, "value": value}, attrs)


def assign_variable_op(resource, value, **attrs):
    """AssignVariableOp (tapeflow/ops/state.py)."""
    return run_kernel("AssignVariableOp", {"resource": resource, "value": value}, attrs)


def atan(x, **attrs):
    """Atan (tapeflow/ops/math.py)."""
    return run_kernel("Atan", {"x": x}, attrs)


def atan2(y, x, **attrs):
    """Atan2 (tapeflow/ops/math.py)."""
    return run_kernel("Atan2", {"y": y, "x": x}, attrs)


def atanh(x, **attrs):
    """Atanh (tapeflow/ops/math.py)."""
    return run_kernel("Atanh", {"x": x}, attrs)


def avg_pool(x, **attrs):
    """AvgPool (tapeflow/ops/conv.py)."""
    return run_kernel("AvgPool", {"x": x}, attrs)


def avg_pool_grad(dy, **attrs):
    """AvgPoolGrad (tapeflow/ops/conv.py)."""
    return run_kernel("AvgPoolGrad", {"dy": dy}, attrs)


def bessel_i0e(x, **attrs):
    """BesselI0e (tapeflow/ops/math.py)."""
    return run_kernel("BesselI0e", {"x": x}, attrs)


def bessel_i1e(x, **attrs):
    """BesselI1e (tapeflow/ops/math.py)."""
    return run_kernel("BesselI1e", {"x": x}, attrs)


def betainc(a, b, x, **attrs):
    """Betainc (tapeflow/ops/math.py)."""
    return run_kernel("Betainc", {"a": a, "b": b, "x": x}, attrs)


def bias_add(value, bias, **attrs):
    """BiasAdd (tapeflow/ops/nn.py)."""
    return run_kernel("BiasAdd", {"value": value, "bias": bias}, attrs)


def broadcast_to(x, **attrs):
    """BroadcastTo (tapeflow/ops/array.py)."""
    return run_kernel("BroadcastTo", {"x": x}, attrs)


def bytes_split(x, **attrs):
    """BytesSplit (tapeflow/ops/strings.py)."""
    return run_kernel("BytesSplit", {"x": x}, attrs)


def cast(x, **attrs):
    """Cast (tapeflow/ops/math.py)."""
    return run_kernel("Cast", {"x": x}, attrs)


def ceil(x, **attrs):
    """Ceil (tapeflow/ops/math.py)."""
    return run_kernel("Ceil", {"x": x}, attrs)


def cholesky(input, **attrs):
    """Cholesky (tapeflow/ops/linalg.py)."""
    return run_kernel("Cholesky", {"input": input}, attrs)


def collective_all_gather(x, **attrs):
    """CollectiveAllGather (tapeflow/distribute/collective.py)."""
    return run_kernel("CollectiveAllGather", {"x": x}, attrs)


def collective_all_reduce(xs, **attrs):
    """CollectiveAllReduce (tapeflow/distribute/collective.py)."""
    return run_kernel("CollectiveAllReduce", {"xs": xs}, attrs)


def complex(real, imag, **attrs):
    """Complex (tapeflow/ops/math.py)."""
    return run_kernel("Complex", {"real": real, "imag": imag}, attrs)


def complex_abs(x, **attrs):
    """ComplexAbs (tapeflow/ops/math.py)."""
    return run_kernel("ComplexAbs", {"x": x}, attrs)


def complex_sign(x, **attrs):
    """ComplexSign (tapeflow/ops/math.py)."""
    return run_kernel("ComplexSign", {"x": x}, attrs)


def concat(values, **attrs):
    """Concat (tapeflow/ops/array.py)."""
    return run_kernel("Concat", {"values": values}, attrs)


def conj(x, **attrs):
    """Conj (tapeflow/ops/math.py)."""
    return run_kernel("Conj", {"x": x}, attrs)


def const(**attrs):
    """Const (tapeflow/ops/creation.py)."""
    return run_kernel("Const", {}, attrs)


def conv2d(x, filters, **attrs):
    """Conv2D (tapeflow/ops/conv.py)."""
    return run_kernel("Conv2D", {"x": x, "filters": filters}, attrs)


def conv2d_backprop_filter(x, dy, **attrs):
    """Conv2DBackpropFilter (tapeflow/ops/conv.py)."""
    return run_kernel("Conv2DBackpropFilter", {"x": x, "dy": dy}, attrs)


def conv2d_backprop_filter_with_bias(x, dy, **attrs):
    """Conv2DBackpropFilterWithBias (tapeflow/ops/conv.py)."""
    return run_kernel("Conv2DBackpropFilterWithBias", {"x": x, "dy": dy}, attrs)


def conv2d_backprop_input(dy, filters, **attrs):
    """Conv2DBackpropInput (tapeflow/ops/conv.py)."""
    return run_kernel("Conv2DBackpropInput", {"dy": dy, "filters": filters}, attrs)


def cos(x, **attrs):
    """Cos (tapeflow/ops/math.py)."""
    return run_kernel("Cos", {"x": x}, attrs)


def cosh(x, **attrs):
    """Cosh (tapeflow/ops/math.py)."""
    return run_kernel("Cosh", {"x": x}, attrs)


def cumprod(x, **attrs):
    """Cumprod (tapeflow/ops/reduction.py)."""
    return run_kernel("Cumprod", {"x": x}, attrs)


def cumsum(x, **attrs):
    """Cumsum (tapeflow/ops/reduction.py)."""
    return run_kernel("Cumsum", {"x": x}, attrs)


def custom_gradient(x, resources, **attrs):
    """CustomGradient (tapeflow/autodiff/custom.py)."""
    return run_kernel("CustomGradient", {"x": x, "resources": resources}, attrs)


def decode_csv(records, defaults, **attrs):
    """DecodeCSV (tapeflow/ops/io_files.py)."""
    return run_kernel("DecodeCSV", {"records": records, "defaults": defaults}, attrs)


def decode_raw(x, **attrs):
    """DecodeRaw (tapeflow/ops/io_files.py)."""
    return run_kernel("DecodeRaw", {"x": x}, attrs)


def delete_iterator(handle, **attrs):
    """DeleteIterator (tapeflow/data/iterator.py)."""
    return run_kernel("DeleteIterator", {"handle": handle}, attrs)


def digamma(x, **attrs):
    """Digamma (tapeflow/ops/math.py)."""
    return run_kernel("Digamma", {"x": x}, attrs)


def dropout(x, **attrs):
    """Dropout (tapeflow/ops/random.py)."""
    return run_kernel("Dropout", {"x": x}, attrs)


def eager_py_func(inputs, **attrs):
    """EagerPyFunc (tapeflow/function/py_function.py)."""
    return run_kernel("EagerPyFunc", {"inputs": inputs}, attrs)


def eig(input, **attrs):
    """Eig (tapeflow/ops/linalg.py)."""
    return run_kernel("Eig", {"input": input}, attrs)


def einsum(inputs, **attrs):
    """Einsum (tapeflow/ops/linalg.py)."""
    return run_kernel("Einsum", {"inputs": inputs}, attrs)


def elu(x, **attrs):
    """Elu (tapeflow/ops/nn.py)."""
    return run_kernel("Elu", {"x": x}, attrs)


def equal(x, y, **attrs):
    """Equal (tapeflow/ops/math.py)."""
    return run_kernel("Equal", {"x": x, "y": y}, attrs)


def erf(x, **attrs):
    """Erf (tapeflow/ops/math.py)."""
    return run_kernel("Erf", {"x": x}, attrs)


def erfc(x, **attrs):
    """Erfc (tapeflow/ops/math.py)."""
    return run_kernel("Erfc", {"x": x}, attrs)


def erfinv(x, **attrs):
    """Erfinv (tapeflow/ops/math.py)."""
    return run_kernel("Erfinv", {"x": x}, attrs)


def exp(x, **attrs):
    """Exp (tapeflow/ops/math.py)."""
    return run_kernel("Exp", {"x": x}, attrs)


def expand_dims(x, **attrs):
    """ExpandDims (tapeflow/ops/array.py)."""
    return run_kernel("ExpandDims", {"x": x}, attrs)


def expm1(x, **attrs):
    """Expm1 (tapeflow/ops/math.py)."""
    return run_kernel("Expm1", {"x": x}, attrs)


def eye(**attrs):
    """Eye (tapeflow/ops/creation.py)."""
    return run_kernel("Eye", {}, attrs)


def fft(x, **attrs):
    """FFT (tapeflow/ops/signal.py)."""
    return run_kernel("FFT", {"x": x}, attrs)


def fill(value, **attrs):
    """Fill (tapeflow/ops/creation.py)."""
    return run_kernel("Fill", {"value": value}, attrs)


def floor(x, **attrs):
    """Floor (tapeflow/ops/math.py)."""
    return run_kernel("Floor", {"x": x}, attrs)


def floor_div(x, y, **attrs):
    """FloorDiv (tapeflow/ops/math.py)."""
    return run_kernel("FloorDiv", {"x": x, "y": y}, attrs)


def floor_mod(x, y, **attrs):
    """FloorMod (tapeflow/ops/math.py)."""
    return run_kernel("FloorMod", {"x": x, "y": y}, attrs)


def fused_batch_norm(x, scale, offset, **attrs):
    """FusedBatchNorm (tapeflow/ops/nn.py)."""
    return run_kernel("FusedBatchNorm", {"x": x, "scale": scale, "offset": offset}, attrs)


def fused_batch_norm_grad(dy, x, scale, mean, variance, **attrs):
    """FusedBatchNormGrad (tapeflow/ops/nn.py)."""
    return run_kernel("FusedBatchNormGrad", {
        "dy": dy,
        "x": x,
        "scale": scale,
        "mean": mean,
        "variance": variance}, attrs)


def fused_conv2d(x, filters, bias, **attrs):
    """FusedConv2D (tapeflow/ops/conv.py)."""
    return run_kernel("FusedConv2D", {"x": x, "filters": filters, "bias": bias}, attrs)


def fused_elementwise(inputs, **attrs):
    """FusedElementwise (tapeflow/function/fuse.py)."""
    return run_kernel("FusedElementwise", {"inputs": inputs}, attrs)


def gather_last_axis(x, indices, **attrs):
    """GatherLastAxis (tapeflow/ops/reduction.py)."""
    return run_kernel("GatherLastAxis", {"x": x, "indices": indices}, attrs)


def gather_nd(params, indices, **attrs):
    """GatherNd (tapeflow/ops/indexing.py)."""
    return run_kernel("GatherNd", {"params": params, "indices": indices}, attrs)


def gather_v2(params, indices, **attrs):
    """GatherV2 (tapeflow/ops/indexing.py)."""
    return run_kernel("GatherV2", {"params": params, "indices": indices}, attrs)


def greater(x, y, **attrs):
    """Greater (tapeflow/ops/math.py)."""
    return run_kernel("Greater", {"x": x, "y": y}, attrs)


def greater_equal(x, y, **attrs):
    """GreaterEqual (tapeflow/ops/math.py)."""
    return run_kernel("GreaterEqual", {"x": x, "y": y}, attrs)


def ifft(x, **attrs):
    """IFFT (tapeflow/ops/signal.py)."""
    return run_kernel("IFFT", {"x": x}, attrs)


def irfft(x, **attrs):
    """IRFFT (tapeflow/ops/signal.py)."""
    return run_kernel("IRFFT", {"x": x}, attrs)


def identity(x, **attrs):
    """Identity (tapeflow/ops/array.py)."""
    return run_kernel("Identity", {"x": x}, attrs)


def if_(pred, args, resources, **attrs):
    """If (tapeflow/function/control_flow.py)."""
    return run_kernel("If", {"pred": pred, "args": args, "resources": resources}, attrs)


def igamma(a, x, **attrs):
    """Igamma (tapeflow/ops/math.py)."""
    return run_kernel("Igamma", {"a": a, "x": x}, attrs)


def igamma_grad_a(a, x, **attrs):
    """IgammaGradA (tapeflow/ops/math.py)."""
    return run_kernel("IgammaGradA", {"a": a, "x": x}, attrs)


def igammac(a, x, **attrs):
    """Igammac (tapeflow/ops/math.py)."""
    return run_kernel("Igammac", {"a": a, "x": x}, attrs)


def imag(x, **attrs):
    """Imag (tapeflow/ops/math.py)."""
    return run_kernel("Imag", {"x": x}, attrs)


def inplace_add(ref, value, **attrs):
    """InplaceAdd (tapeflow/ops/state.py)."""
    return run_kernel("InplaceAdd", {"ref": ref, "value": value}, attrs)


def inplace_add_mat_mul(ref, a, b, alpha, **attrs):
    """InplaceAddMatMul (tapeflow/ops/state.py)."""
    return run_kernel("InplaceAddMatMul", {"ref": ref, "a": a, "b": b, "alpha": alpha}, attrs)


def inplace_scatter_add(ref, indices, updates, **attrs):
    """InplaceScatterAdd (tapeflow/ops/state.py)."""
    return run_kernel("InplaceScatterAdd", {
        "ref": ref,
        "indices": indices,
        "updates": updates}, attrs)


def inplace_scatter_update(ref, indices, updates, **attrs):
    """InplaceScatterUpdate (tapeflow/ops/state.py)."""
    return run_kernel("InplaceScatterUpdate", {
        "ref": ref,
        "indices": indices,
        "updates": updates}, attrs)


def inplace_segment_sum(ref, data, segment_ids, **attrs):
    """InplaceSegmentSum (tapeflow/ops/indexing.py)."""
    return run_kernel("InplaceSegmentSum", {
        "ref": ref,
        "data": data,
        "segment_ids": segment_ids}, attrs)


def inplace_strided_slice_add(ref, dy, **attrs):
    """InplaceStridedSliceAdd (tapeflow/ops/indexing.py)."""
    return run_kernel("InplaceStridedSliceAdd", {"ref": ref, "dy": dy}, attrs)


def inplace_sub(ref, value, **attrs):
    """InplaceSub (tapeflow/ops/state.py)."""
    return run_kernel("InplaceSub", {"ref": ref, "value": value}, attrs)


def is_finite(x, **attrs):
    """IsFinite (tapeflow/ops/math.py)."""
    return run_kernel("IsFinite", {"x": x}, attrs)


def is_inf(x, **attrs):
    """IsInf (tapeflow/ops/math.py)."""
    return run_kernel("IsInf", {"x": x}, attrs)


def is_nan(x, **attrs):
    """IsNan (tapeflow/ops/math.py)."""
    return run_kernel("IsNan", {"x": x}, attrs)


def iterator_get_next(handle, **attrs):
    """IteratorGetNext (tapeflow/data/iterator.py)."""
    return run_kernel("IteratorGetNext", {"handle": handle}, attrs)


def iterator_get_next_as_optional(handle, **attrs):
    """IteratorGetNextAsOptional (tapeflow/data/iterator.py)."""
    return run_kernel("IteratorGetNextAsOptional", {"handle": handle}, attrs)


def l2_loss(x, **attrs):
    """L2Loss (tapeflow/ops/nn.py)."""
    return run_kernel("L2Loss", {"x": x}, attrs)


def leaky_relu(x, **attrs):
    """LeakyRelu (tapeflow/ops/nn.py)."""
    return run_kernel("LeakyRelu", {"x": x}, attrs)


def leaky_relu_grad(dy, x, **attrs):
    """LeakyReluGrad (tapeflow/ops/nn.py)."""
    return run_kernel("LeakyReluGrad", {"dy": dy, "x": x}, attrs)


def less(x, y, **attrs):
    """Less (tapeflow/ops/math.py)."""
    return run_kernel("Less", {"x": x, "y": y}, attrs)


def less_equal(x, y, **attrs):
    """LessEqual (tapeflow/ops/math.py)."""
    return run_kernel("LessEqual", {"x": x, "y": y}, attrs)


def lgamma(x, **attrs):
    """Lgamma (tapeflow/ops/math.py)."""
    return run_kernel("Lgamma", {"x": x}, attrs)


def log(x, **attrs):
    """Log (tapeflow/ops/math.py)."""
    return run_kernel("Log", {"x": x}, attrs)


def log1p(x, **attrs):
    """Log1p (tapeflow/ops/math.py)."""
    return run_kernel("Log1p", {"x": x}, attrs)


def log_matrix_determinant(input, **attrs):
    """LogMatrixDeterminant (tapeflow/ops/linalg.py)."""
    return run_kernel("LogMatrixDeterminant", {"input": input}, attrs)


def log_softmax(logits, **attrs):
    """LogSoftmax (tapeflow/ops/nn.py)."""
    return run_kernel("LogSoftmax", {"logits": logits}, attrs)


def log_softmax_grad(dy, y, **attrs):
    """LogSoftmaxGrad (tapeflow/ops/nn.py)."""
    return run_kernel("LogSoftmaxGrad", {"dy": dy, "y": y}, attrs)


def log_sum_exp(x, **attrs):
    """LogSumExp (tapeflow/ops/reduction.py)."""
    return run_kernel("LogSumExp", {"x": x}, attrs)


def logical_and(x, y, **attrs):
    """LogicalAnd (tapeflow/ops/math.py)."""
    return run_kernel("LogicalAnd", {"x": x, "y": y}, attrs)


def logical_not(x, **attrs):
    """LogicalNot (tapeflow/ops/math.py)."""
    return run_kernel("LogicalNot", {"x": x}, attrs)


def logical_or(x, y, **attrs):
    """LogicalOr (tapeflow/ops/math.py)."""
    return run_kernel("LogicalOr", {"x": x, "y": y}, attrs)


def logical_xor(x, y, **attrs):
    """LogicalXor (tapeflow/ops/math.py)."""
    return run_kernel("LogicalXor", {"x": x, "y": y}, attrs)


def lu(input, **attrs):
    """Lu (tapeflow/ops/linalg.py)."""
    return run_kernel("Lu", {"input": input}, attrs)


def mat_mul(a, b, **attrs):
    """MatMul (tapeflow/ops/linalg.py)."""
    return run_kernel("MatMul", {"a": a, "b": b}, attrs)


def mat_vec(a, b, **attrs):
    """MatVec (tapeflow/ops/linalg.py)."""
    return run_kernel("MatVec", {"a": a, "b": b}, attrs)


def matrix_band_part(input, **attrs):
    """MatrixBandPart (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixBandPart", {"input": input}, attrs)


def matrix_determinant(input, **attrs):
    """MatrixDeterminant (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixDeterminant", {"input": input}, attrs)


def matrix_diag(diagonal, **attrs):
    """MatrixDiag (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixDiag", {"diagonal": diagonal}, attrs)


def matrix_diag_part(input, **attrs):
    """MatrixDiagPart (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixDiagPart", {"input": input}, attrs)


def matrix_inverse(input, **attrs):
    """MatrixInverse (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixInverse", {"input": input}, attrs)


def matrix_logarithm(input, **attrs):
    """MatrixLogarithm (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixLogarithm", {"input": input}, attrs)


def matrix_solve(matrix, rhs, **attrs):
    """MatrixSolve (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixSolve", {"matrix": matrix, "rhs": rhs}, attrs)


def matrix_square_root(input, **attrs):
    """MatrixSquareRoot (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixSquareRoot", {"input": input}, attrs)


def matrix_triangular_solve(matrix, rhs, **attrs):
    """MatrixTriangularSolve (tapeflow/ops/linalg.py)."""
    return run_kernel("MatrixTriangularSolve", {"matrix": matrix, "rhs": rhs}, attrs)


def max(x, **attrs):
    """Max (tapeflow/ops/reduction.py)."""
    return run_kernel("Max", {"x": x}, attrs)


def max_pool(x, **attrs):
    """MaxPool (tapeflow/ops/conv.py)."""
    return run_kernel("MaxPool", {"x": x}, attrs)


def max_pool_grad(x, dy, **attrs):
    """MaxPoolGrad (tapeflow/ops/conv.py)."""
    return run_kernel("MaxPoolGrad", {"x": x, "dy": dy}, attrs)


def max_pool_grad_grad(x, dx, **attrs):
    """MaxPoolGradGrad (tapeflow/ops/conv.py)."""
    return run_kernel("MaxPoolGradGrad", {"x": x, "dx": dx}, attrs)


def maximum(x, y, **attrs):
    """Maximum (tapeflow/ops/math.py)."""
    return run_kernel("Maximum", {"x": x, "y": y}, attrs)


def mean(x, **attrs):
    """Mean (tapeflow/ops/reduction.py)."""
    return run_kernel("Mean", {"x": x}, attrs)


def min(x, **attrs):
    """Min (tapeflow/ops/reduction.py)."""
    return run_kernel("Min", {"x": x}, attrs)


def minimum(x, y, **attrs):
    """Minimum (tapeflow/ops/math.py)."""
    return run_kernel("Minimum", {"x": x, "y": y}, attrs)


def mul(x, y, **attrs):
    """Mul (tapeflow/ops/math.py)."""
    return run_kernel("Mul", {"x": x, "y": y}, attrs)


def multinomial(logits, **attrs):
    """Multinomial (tapeflow/ops/random.py)."""
    return run_kernel("Multinomial", {"logits": logits}, attrs)


def ndtri(x, **attrs):
    """Ndtri (tapeflow/ops/math.py)."""
    return run_kernel("Ndtri", {"x": x}, attrs)


def neg(x, **attrs):
    """Neg (tapeflow/ops/math.py)."""
    return run_kernel("Neg", {"x": x}, attrs)


def not_equal(x, y, **attrs):
    """NotEqual (tapeflow/ops/math.py)."""
    return run_kernel("NotEqual", {"x": x, "y": y}, attrs)


def one_hot(indices, **attrs):
    """OneHot (tapeflow/ops/creation.py)."""
    return run_kernel("OneHot", {"indices": indices}, attrs)


def ones(**attrs):
    """Ones (tapeflow/ops/creation.py)."""
    return run_kernel("Ones", {}, attrs)


def ones_like(x, **attrs):
    """OnesLike (tapeflow/ops/creation.py)."""
    return run_kernel("OnesLike", {"x": x}, attrs)


def pad(x, **attrs):
    """Pad (tapeflow/ops/array.py)."""
    return run_kernel("Pad", {"x": x}, attrs)


def pad_grad(x, **attrs):
    """PadGrad (tapeflow/ops/array.py)."""
    return run_kernel("PadGrad", {"x": x}, attrs)


def parse_example(serialized, dense_defaults, **attrs):
    """ParseExample (tapeflow/ops/io_files.py)."""
    return run_kernel("ParseExample", {
        "serialized": serialized,
        "dense_defaults": dense_defaults}, attrs)


def parse_tensor(serialized, **attrs):
    """ParseTensor (tapeflow/ops/io_files.py)."""
    return run_kernel("ParseTensor", {"serialized": serialized}, attrs)


def partitioned_call(args, resources, **attrs):
    """PartitionedCall (tapeflow/function/concrete.py)."""
    return run_kernel("PartitionedCall", {"args": args, "resources": resources}, attrs)


def permute_along_axis(x, indices, **attrs):
    """PermuteAlongAxis (tapeflow/ops/array.py)."""
    return run_kernel("PermuteAlongAxis", {"x": x, "indices": indices}, attrs)


def polygamma(a, x, **attrs):
    """Polygamma (tapeflow/ops/math.py)."""
    return run_kernel("Polygamma", {"a": a, "x": x}, attrs)


def pow(x, y, **attrs):
    """Pow (tapeflow/ops/math.py)."""
    return run_kernel("Pow", {"x": x, "y": y}, attrs)


def print_v2(inputs, **attrs):
    """PrintV2 (tapeflow/ops/io.py)."""
    return run_kernel("PrintV2", {"inputs": inputs}, attrs)


def prod(x, **attrs):
    """Prod (tapeflow/ops/reduction.py)."""
    return run_kernel("Prod", {"x": x}, attrs)


def qr(input, **attrs):
    """Qr (tapeflow/ops/linalg.py)."""
    return run_kernel("Qr", {"input": input}, attrs)


def rfft(x, **attrs):
    """RFFT (tapeflow/ops/signal.py)."""
    return run_kernel("RFFT", {"x": x}, attrs)


def random_shuffle(x, **attrs):
    """RandomShuffle (tapeflow/ops/random.py)."""
    return run_kernel("RandomShuffle", {"x": x}, attrs)


def random_standard_normal(**attrs):
    """RandomStandardNormal (tapeflow/ops/random.py)."""
    return run_kernel("RandomStandardNormal", {}, attrs)


def random_uniform(**attrs):
    """RandomUniform (tapeflow/ops/random.py)."""
    return run_kernel("RandomUniform", {}, attrs)


def random_uniform_int(**attrs):
    """RandomUniformInt (tapeflow/ops/random.py)."""
    return run_kernel("RandomUniformInt", {}, attrs)


def range(**attrs):
    """Range (tapeflow/ops/creation.py)."""
    return run_kernel("Range", {}, attrs)


def range_v2(start, limit, delta, **attrs):
    """RangeV2 (tapeflow/ops/creation.py)."""
    return run_kernel("RangeV2", {"start": start, "limit": limit, "delta": delta}, attrs)


def ravel_multi_index(indices, **attrs):
    """RavelMultiIndex (tapeflow/ops/indexing.py)."""
    return run_kernel("RavelMultiIndex", {"indices": indices}, attrs)


def read_file(filename, **attrs):
    """ReadFile (tapeflow/ops/io_files.py)."""
    return run_kernel("ReadFile", {"filename": filename}, attrs)


def read_variable_op(resource, **attrs):
    """ReadVariableOp (tapeflow/ops/state.py)."""
    return run_kernel("ReadVariableOp", {"resource": resource}, attrs)


def real(x, **attrs):
    """Real (tapeflow/ops/math.py)."""
    return run_kernel("Real", {"x": x}, attrs)


def real_div(x, y, **attrs):
    """RealDiv (tapeflow/ops/math.py)."""
    return run_kernel("RealDiv", {"x": x, "y": y}, attrs)


def reciprocal(x, **attrs):
    """Reciprocal (tapeflow/ops/math.py)."""
    return run_kernel("Reciprocal", {"x": x}, attrs)


def recompute_grad(x, resources, **attrs):
    """RecomputeGrad (tapeflow/autodiff/custom.py)."""
    return run_kernel("RecomputeGrad", {"x": x, "resources": resources}, attrs)


def reduce_join(x, **attrs):
    """ReduceJoin (tapeflow/ops/strings.py)."""
    return run_kernel("ReduceJoin", {"x": x}, attrs)


def regex_full_match(x, **attrs):
    """RegexFullMatch (tapeflow/ops/strings.py)."""
    return run_kernel("RegexFullMatch", {"x": x}, attrs)


def regex_replace(x, **attrs):
    """RegexReplace (tapeflow/ops/strings.py)."""
    return run_kernel("RegexReplace", {"x": x}, attrs)


def relu(x, **attrs):
    """Relu (tapeflow/ops/nn.py)."""
    return run_kernel("Relu", {"x": x}, attrs)


def relu6(x, **attrs):
    """Relu6 (tapeflow/ops/nn.py)."""
    return run_kernel("Relu6", {"x": x}, attrs)


def relu6_grad(dy, y, **attrs):
    """Relu6Grad (tapeflow/ops/nn.py)."""
    return run_kernel("Relu6Grad", {"dy": dy, "y": y}, attrs)


def relu_grad(dy, y, **attrs):
    """ReluGrad (tapeflow/ops/nn.py)."""
    return run_kernel("ReluGrad", {"dy": dy, "y": y}, attrs)


def reshape(x, **attrs):
    """Reshape (tapeflow/ops/array.py)."""
    return run_kernel("Reshape", {"x": x}, attrs)


def resource_scatter_add(resource, indices, updates, **attrs):
    """ResourceScatterAdd (tapeflow/ops/state.py)."""
    return run_kernel("ResourceScatterAdd", {
        "resource": resource,
        "indices": indices,
        "updates": updates}, attrs)


def resource_scatter_update(resource, indices, updates, **attrs):
    """ResourceScatterUpdate (tapeflow/ops/state.py)."""
    return run_kernel("ResourceScatterUpdate", {
        "resource": resource,
        "indices": indices,
        "updates": updates}, attrs)


def reverse(x, **attrs):
    """Reverse (tapeflow/ops/array.py)."""
    return run_kernel("Reverse", {"x": x}, attrs)


def round(x, **attrs):
    """Round (tapeflow/ops/math.py)."""
    return run_kernel("Round", {"x": x}, attrs)


def rsqrt(x, **attrs):
    """Rsqrt (tapeflow/ops/math.py)."""
    return run_kernel("Rsqrt", {"x": x}, attrs)


def scatter_last_axis(updates, indices, **attrs):
    """ScatterLastAxis (tapeflow/ops/reduction.py)."""
    return run_kernel("ScatterLastAxis", {"updates": updates, "indices": indices}, attrs)


def scatter_nd(indices, updates, **attrs):
    """ScatterNd (tapeflow/ops/indexing.py)."""
    return run_kernel("ScatterNd", {"indices": indices, "updates": updates}, attrs)


def search_sorted(sorted_sequence, values, **attrs):
    """SearchSorted (tapeflow/ops/array.py)."""
    return run_kernel("SearchSorted", {"sorted_sequence": sorted_sequence, "values": values}, attrs)


def segment_prod(data, segment_ids, **attrs):
    """SegmentProd (tapeflow/ops/segment.py)."""
    return run_kernel("SegmentProd", {"data": data, "segment_ids": segment_ids}, attrs)


def segment_sum(data, segment_ids, **attrs):
    """SegmentSum (tapeflow/ops/indexing.py)."""
    return run_kernel("SegmentSum", {"data": data, "segment_ids": segment_ids}, attrs)


def select_v2(condition, x, y, **attrs):
    """SelectV2 (tapeflow/ops/indexing.py)."""
    return run_kernel("SelectV2", {"condition": condition, "x": x, "y": y}, attrs)


def self_adjoint_eig(input, **attrs):
    """SelfAdjointEig (tapeflow/ops/linalg.py)."""
    return run_kernel("SelfAdjointEig", {"input": input}, attrs)


def sequence_mask(lengths, **attrs):
    """SequenceMask (tapeflow/ops/array.py)."""
    return run_kernel("SequenceMask", {"lengths": lengths}, attrs)


def serialize_tensor(x, **attrs):
    """SerializeTensor (tapeflow/ops/io_files.py)."""
    return run_kernel("SerializeTensor", {"x": x}, attrs)


def shape(x, **attrs):
    """Shape (tapeflow/ops/array.py)."""
    return run_kernel("Shape", {"x": x}, attrs)


def sigmoid(x, **attrs):
    """Sigmoid (tapeflow/ops/math.py)."""
    return run_kernel("Sigmoid", {"x": x}, attrs)


def sigmoid_cross_entropy_with_logits(labels, logits, **attrs):
    """SigmoidCrossEntropyWithLogits (tapeflow/ops/nn.py)."""
    return run_kernel("SigmoidCrossEntropyWithLogits", {"labels": labels, "logits": logits}, attrs)


def sigmoid_grad(y, dy, **attrs):
    """SigmoidGrad (tapeflow/ops/math.py)."""
    return run_kernel("SigmoidGrad", {"y": y, "dy": dy}, attrs)


def sign(x, **attrs):
    """Sign (tapeflow/ops/math.py)."""
    return run_kernel("Sign", {"x": x}, attrs)


def sin(x, **attrs):
    """Sin (tapeflow/ops/math.py)."""
    return run_kernel("Sin", {"x": x}, attrs)


def sinh(x, **attrs):
    """Sinh (tapeflow/ops/math.py)."""
    return run_kernel("Sinh", {"x": x}, attrs)


def size(x, **attrs):
    """Size (tapeflow/ops/array.py)."""
    return run_kernel("Size", {"x": x}, attrs)


def softmax(logits, **attrs):
    """Softmax (tapeflow/ops/nn.py)."""
    return run_kernel("Softmax", {"logits": logits}, attrs)


def softmax_cross_entropy_with_logits(labels, logits, **attrs):
    """SoftmaxCrossEntropyWithLogits (tapeflow/ops/nn.py)."""
    return run_kernel("SoftmaxCrossEntropyWithLogits", {"labels": labels, "logits": logits}, attrs)


def softmax_grad(dy, y, **attrs):
    """SoftmaxGrad (tapeflow/ops/nn.py)."""
    return run_kernel("SoftmaxGrad", {"dy": dy, "y": y}, attrs)


def softplus(x, **attrs):
    """Softplus (tapeflow/ops/math.py)."""
    return run_kernel("Softplus", {"x": x}, attrs)


def softsign(x, **attrs):
    """Softsign (tapeflow/ops/math.py)."""
    return run_kernel("Softsign", {"x": x}, attrs)


def sparse_softmax_cross_entropy_with_logits(labels, logits, **attrs):
    """SparseSoftmaxCrossEntropyWithLogits (tapeflow/ops/nn.py)."""
    return run_kernel("SparseSoftmaxCrossEntropyWithLogits", {
        "labels": labels,
        "logits": logits}, attrs)


def split(x, **attrs):
    """Split (tapeflow/ops/array.py)."""
    return run_kernel("Split", {"x": x}, attrs)


def sqrt(x, **attrs):
    """Sqrt (tapeflow/ops/math.py)."""
    return run_kernel("Sqrt", {"x": x}, attrs)


def square(x, **attrs):
    """Square (tapeflow/ops/math.py)."""
    return run_kernel("Square", {"x": x}, attrs)


def squared_difference(x, y, **attrs):
    """SquaredDifference (tapeflow/ops/math.py)."""
    return run_kernel("SquaredDifference", {"x": x, "y": y}, attrs)


def squeeze(x, **attrs):
    """Squeeze (tapeflow/ops/array.py)."""
    return run_kernel("Squeeze", {"x": x}, attrs)


def stack(values, **attrs):
    """Stack (tapeflow/ops/array.py)."""
    return run_kernel("Stack", {"values": values}, attrs)


def stateless_multinomial(logits, seed, **attrs):
    """StatelessMultinomial (tapeflow/ops/random.py)."""
    return run_kernel("StatelessMultinomial", {"logits": logits, "seed": seed}, attrs)


def stateless_random_binomial(seed, counts, probs, **attrs):
    """StatelessRandomBinomial (tapeflow/ops/random.py)."""
    return run_kernel("StatelessRandomBinomial", {
        "seed": seed,
        "counts": counts,
        "probs": probs}, attrs)


def stateless_random_poisson(seed, lam, **attrs):
    """StatelessRandomPoisson (tapeflow/ops/random.py)."""
    return run_kernel("StatelessRandomPoisson", {"seed": seed, "lam": lam}, attrs)


def stateless_random_standard_normal(seed, **attrs):
    """StatelessRandomStandardNormal (tapeflow/ops/random.py)."""
    return run_kernel("StatelessRandomStandardNormal", {"seed": seed}, attrs)


def stateless_random_uniform(seed, **attrs):
    """StatelessRandomUniform (tapeflow/ops/random.py)."""
    return run_kernel("StatelessRandomUniform", {"seed": seed}, attrs)


def stateless_random_uniform_int(seed, **attrs):
    """StatelessRandomUniformInt (tapeflow/ops/random.py)."""
    return run_kernel("StatelessRandomUniformInt", {"seed": seed}, attrs)


def stateless_truncated_normal(seed, **attrs):
    """StatelessTruncatedNormal (tapeflow/ops/random.py)."""
    return run_kernel("StatelessTruncatedNormal", {"seed": seed}, attrs)


def stop_gradient(x, **attrs):
    """StopGradient (tapeflow/ops/array.py)."""
    return run_kernel("StopGradient", {"x": x}, attrs)


def strided_slice(x, **attrs):
    """StridedSlice (tapeflow/ops/indexing.py)."""
    return run_kernel("StridedSlice", {"x": x}, attrs)


def strided_slice_grad(dy, **attrs):
    """StridedSliceGrad (tapeflow/ops/indexing.py)."""
    return run_kernel("StridedSliceGrad", {"dy": dy}, attrs)


def string_format(inputs, **attrs):
    """StringFormat (tapeflow/ops/strings.py)."""
    return run_kernel("StringFormat", {"inputs": inputs}, attrs)


def string_join(inputs, **attrs):
    """StringJoin (tapeflow/ops/strings.py)."""
    return run_kernel("StringJoin", {"inputs": inputs}, attrs)


def string_length(x, **attrs):
    """StringLength (tapeflow/ops/strings.py)."""
    return run_kernel("StringLength", {"x": x}, attrs)


def string_lower(x, **attrs):
    """StringLower (tapeflow/ops/strings.py)."""
    return run_kernel("StringLower", {"x": x}, attrs)


def string_split(x, **attrs):
    """StringSplit (tapeflow/ops/strings.py)."""
    return run_kernel("StringSplit", {"x": x}, attrs)


def string_strip(x, **attrs):
    """StringStrip (tapeflow/ops/strings.py)."""
    return run_kernel("StringStrip", {"x": x}, attrs)


def string_to_hash_bucket_fast(x, **attrs):
    """StringToHashBucketFast (tapeflow/ops/strings.py)."""
    return run_kernel("StringToHashBucketFast", {"x": x}, attrs)


def string_to_hash_bucket_strong(x, **attrs):
    """StringToHashBucketStrong (tapeflow/ops/strings.py)."""
    return run_kernel("StringToHashBucketStrong", {"x": x}, attrs)


def string_to_number(x, **attrs):
    """StringToNumber (tapeflow/ops/strings.py)."""
    return run_kernel("StringToNumber", {"x": x}, attrs)


def string_upper(x, **attrs):
    """StringUpper (tapeflow/ops/strings.py)."""
    return run_kernel("StringUpper", {"x": x}, attrs)


def sub(x, y, **attrs):
    """Sub (tapeflow/ops/math.py)."""
    return run_kernel("Sub", {"x": x, "y": y}, attrs)


def substr(x, pos, len, **attrs):
    """Substr (tapeflow/ops/strings.py)."""
    return run_kernel("Substr", {"x": x, "pos": pos, "len": len}, attrs)


def sum(x, **attrs):
    """Sum (tapeflow/ops/reduction.py)."""
    return run_kernel("Sum", {"x": x}, attrs)


def sum_to(x, **attrs):
    """SumTo (tapeflow/ops/reduction.py)."""
    return run_kernel("SumTo", {"x": x}, attrs)


def svd(input, **attrs):
    """Svd (tapeflow/ops/linalg.py)."""
    return run_kernel("Svd", {"input": input}, attrs)


def tan(x, **attrs):
    """Tan (tapeflow/ops/math.py)."""
    return run_kernel("Tan", {"x": x}, attrs)


def tanh(x, **attrs):
    """Tanh (tapeflow/ops/math.py)."""
    return run_kernel("Tanh", {"x": x}, attrs)


def tanh_grad(y, dy, **attrs):
    """TanhGrad (tapeflow/ops/math.py)."""
    return run_kernel("TanhGrad", {"y": y, "dy": dy}, attrs)


def tensor_list_resize(x, size, **attrs):
    """TensorListResize (tapeflow/ops/tensor_array.py)."""
    return run_kernel("TensorListResize", {"x": x, "size": size}, attrs)


def tensor_scatter_max(tensor, indices, updates, **attrs):
    """TensorScatterMax (tapeflow/ops/indexing.py)."""
    return run_kernel("TensorScatterMax", {
        "tensor": tensor,
        "indices": indices,
        "updates": updates}, attrs)


def tensor_scatter_min(tensor, indices, updates, **attrs):
    """TensorScatterMin (tapeflow/ops/indexing.py)."""
    return run_kernel("TensorScatterMin", {
        "tensor": tensor,
        "indices": indices,
        "updates": updates}, attrs)


def tensor_scatter_nd_update(tensor, indices, updates, **attrs):
    """TensorScatterNdUpdate (tapeflow/ops/indexing.py)."""
    return run_kernel("TensorScatterNdUpdate", {
        "tensor": tensor,
        "indices": indices,
        "updates": updates}, attrs)


def tile(x, **attrs):
    """Tile (tapeflow/ops/array.py)."""
    return run_kernel("Tile", {"x": x}, attrs)


def top_k(x, **attrs):
    """TopK (tapeflow/ops/reduction.py)."""
    return run_kernel("TopK", {"x": x}, attrs)


def transpose(x, **attrs):
    """Transpose (tapeflow/ops/array.py)."""
    return run_kernel("Transpose", {"x": x}, attrs)


def truncate_div(x, y, **attrs):
    """TruncateDiv (tapeflow/ops/math.py)."""
    return run_kernel("TruncateDiv", {"x": x, "y": y}, attrs)


def truncate_mod(x, y, **attrs):
    """TruncateMod (tapeflow/ops/math.py)."""
    return run_kernel("TruncateMod", {"x": x, "y": y}, attrs)


def truncated_normal(**attrs):
    """TruncatedNormal (tapeflow/ops/random.py)."""
    return run_kernel("TruncatedNormal", {}, attrs)


def unicode_decode(x, **attrs):
    """UnicodeDecode (tapeflow/ops/strings.py)."""
    return run_kernel("UnicodeDecode", {"x": x}, attrs)


def unicode_encode(x, **attrs):
    """UnicodeEncode (tapeflow/ops/strings.py)."""
    return run_kernel("UnicodeEncode", {"x": x}, attrs)


def unicode_split(x, **attrs):
    """UnicodeSplit (tapeflow/ops/strings.py)."""
    return run_kernel("UnicodeSplit", {"x": x}, attrs)


def unique(x, **attrs):
    """Unique (tapeflow/ops/array.py)."""
    return run_kernel("Unique", {"x": x}, attrs)


def unique_segment_sum(values, indices, **attrs):
    """UniqueSegmentSum (tapeflow/ops/state.py)."""
    return run_kernel("UniqueSegmentSum", {"values": values, "indices": indices}, attrs)


def unsorted_segment_sum(data, segment_ids, **attrs):
    """UnsortedSegmentSum (tapeflow/ops/indexing.py)."""
    return run_kernel("UnsortedSegmentSum", {"data": data, "segment_ids": segment_ids}, attrs)


def unstack(x, **attrs):
    """Unstack (tapeflow/ops/array.py)."""
    return run_kernel("Unstack", {"x": x}, attrs)


def where(condition, **attrs):
    """Where (tapeflow/ops/indexing.py)."""
    return run_kernel("Where", {"condition": condition}, attrs)


def while_(loop_vars, args, resources, maximum_iterations, **attrs):
    """While (tapeflow/function/control_flow.py)."""
    return run_kernel("While", {
        "loop_vars": loop_vars,
        "args": args,
        "resources": resources,
        "maximum_iterations": maximum_iterations}, attrs)


def while_grad(cots, loop_vars, args, resources, count, **attrs):
    """WhileGrad (tapeflow/function/control_flow.py)."""
    return run_kernel("WhileGrad", {
        "cots": cots,
        "loop_vars": loop_vars,
        "args": args,
        "resources": resources,
        "count": count}, attrs)


def write_file(filename, contents, **attrs):
    """WriteFile (tapeflow/ops/io_files.py)."""
    return run_kernel("WriteFile", {"filename": filename, "contents": contents}, attrs)


def write_summary(data, step, **attrs):
    """WriteSummary (tapeflow/summary/writer.py)."""
    return run_kernel("WriteSummary", {"data": data, "step": step}, attrs)


def zeros(**attrs):
    """Zeros (tapeflow/ops/creation.py)."""
    return run_kernel("Zeros", {}, attrs)


def zeros_like(x, **attrs):
    """ZerosLike (tapeflow/ops/creation.py)."""
    return run_kernel("ZerosLike", {"x": x}, attrs)
