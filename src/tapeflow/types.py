"""`tapeflow.types`: the type names TF code checks against (`tf.types.experimental`).

Example:
    >>> f = tf.function(lambda x: x + 1)
    >>> isinstance(f, tf.types.experimental.PolymorphicFunction)
    True
"""
from types import SimpleNamespace as _Namespace

from .function.trace import ConcreteFunction as _ConcreteFunction
from .function.trace import Function as _Function
from .function.trace import TraceType as _TraceType

# TF >= 2.15 calls `tf.function`'s result PolymorphicFunction; older code says GenericFunction
experimental = _Namespace(PolymorphicFunction=_Function, GenericFunction=_Function,
                          ConcreteFunction=_ConcreteFunction, TraceType=_TraceType)
