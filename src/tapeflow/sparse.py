"""tf.sparse: SparseTensor and the ops on it (see ops/sparse.py).

Example:
    >>> sp = tf.sparse.SparseTensor([[0, 1]], [3.0], [2, 2])
    >>> tf.sparse.to_dense(sp).numpy().tolist()
    [[0.0, 3.0], [0.0, 0.0]]
"""
from .ops.sparse import (SparseTensor, add, concat_sparse as concat,  # noqa: F401
                         from_dense, reduce_sum, reorder, reshape_sparse as reshape, retain,
                         slice_sparse as slice, sparse_dense_matmul, to_dense,
                         transpose_sparse as transpose)

matmul = sparse_dense_matmul

__all__ = ["SparseTensor", "add", "concat", "from_dense", "reduce_sum", "reorder", "reshape",
           "retain", "slice", "sparse_dense_matmul", "matmul", "to_dense", "transpose"]
