"""TensorFlow's DataType enum values name dtypes (`tf.zeros(2, 1)` is float32), as in TF."""
import pytest

import tapeflow as tf


@pytest.mark.parametrize("enum,name", [(1, "float32"), (2, "float64"), (3, "int32"),
                                       (4, "uint8"), (7, "string"), (9, "int64"),
                                       (10, "bool"), (19, "float16"), (18, "complex128")])
def test_enum_values_name_dtypes(enum, name):
    assert tf.as_dtype(enum).name == name


def test_ops_take_enum_dtypes_and_refuse_the_rest():
    assert tf.zeros(2, 1).dtype == tf.float32 and tf.ones([1], 3).dtype == tf.int32
    for bad in (11, 99, True, -1):
        with pytest.raises(TypeError):
            tf.zeros(1, bad)


def test_as_datatype_enum_round_trips_every_dtype():
    for name in ["float32", "float64", "int32", "uint8", "int16", "int8", "string",
                 "complex64", "int64", "bool", "bfloat16", "uint16", "complex128", "float16",
                 "uint32", "uint64"]:
        dtype = tf.as_dtype(name)
        assert tf.as_dtype(dtype.as_datatype_enum) is dtype
