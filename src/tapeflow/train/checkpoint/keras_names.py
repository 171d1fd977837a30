"""Keras 3's object-graph names for the optimizers, as further names of their state
(`register_alias_children`): what `tf.train.Checkpoint(optimizer=opt)` of TensorFlow 2.21
(whose optimizers are Keras 3's) writes, so that either library restores the other's
files. tapeflow's own names ("iterations", "m/0") stay the keys it writes.

Keras 3's optimizer tracks `_iterations`, `_learning_rate` (a variable unless a schedule
gives it), `_trainable_variables` (the variables it was built for, in build order) and
`_variables`: the iteration count, the learning rate, then the state it made while
building, in the order it made it (the EMA averages, the gradient accumulators, then its
slots block by block: Adam's "m" and "v" interleaved per variable).
"""
from __future__ import annotations

from ..._core.variable import Variable
from ..optimizers import Optimizer
from .trackable import register_alias_children

__all__ = ["keras_optimizer_children", "keras_optimizer_variables"]


def keras_optimizer_variables(optimizer: Optimizer) -> list:
    """The optimizer's state in the order of Keras 3's `optimizer.variables`.

    Example:
        >>> opt = tf.keras.optimizers.Adam(); opt.build([tf.Variable([1.0])])
        >>> [v.name for v in keras_optimizer_variables(opt)]
        ['iteration:0', 'learning_rate:0', 'm/Variable:0', 'v/Variable:0']
    """
    state = [optimizer._iterations]
    if isinstance(optimizer._learning_rate, Variable):
        state.append(optimizer._learning_rate)
    for block in (optimizer._model_variables_moving_average,
                  optimizer._accumulated_gradients):
        state += list(block)
    # (slots by build index: while `build` runs, a variable may have no slots yet)
    slots = list(optimizer._slots)
    for names in optimizer._slot_blocks():
        state += [s[name] for s in slots for name in names if name in s]
    known = {id(v) for v in state}
    return state + [v for s in slots for v in s.values() if id(v) not in known]


def keras_optimizer_children(optimizer: Optimizer) -> dict:
    """{Keras 3's name: child} of an optimizer (its checkpoint's further names).

    Example:
        >>> sorted(keras_optimizer_children(tf.keras.optimizers.SGD()))
        ['_iterations', '_learning_rate', '_trainable_variables', '_variables']
    """
    children = {"_iterations": optimizer._iterations}
    if isinstance(optimizer._learning_rate, Variable):
        children["_learning_rate"] = optimizer._learning_rate
    children["_trainable_variables"] = list(optimizer._built)
    children["_variables"] = keras_optimizer_variables(optimizer)
    extra = getattr(optimizer, "_u_product", None)  # Nadam's, an attribute in Keras 3
    if isinstance(extra, Variable):
        children["_u_product"] = extra
    return children


register_alias_children(Optimizer, keras_optimizer_children)
