"""Keras's recurrent layers: `RNN`, a loop over any cell (`SimpleRNNCell`, `LSTMCell`,
`GRUCell`, a stack of cells, `StackedRNNCells`, or a user's cell: a layer with
`state_size` and `call(inputs, states) -> (output, new_states)`); `SimpleRNN`, `LSTM`
and `GRU`, RNNs over the cell their arguments make; and the wrappers `Bidirectional` and
`TimeDistributed` (a layer applied to every time step).

Weights have Keras 3's names, shapes and order, so weight files move between Keras and
tapeflow: the cell holds `kernel` (input, k*units), `recurrent_kernel` (units, k*units)
and `bias`, with the gates in Keras's order (LSTM: i, f, c, o; GRU: z, r, h, and with
`reset_after=True`, the default, a bias of shape (2, 3*units): input bias, then
recurrent bias).

The loop over time runs eagerly as a Python loop; under a traced `function` (as in
`fit`) it is a `while_loop` over one traced step, as Keras's default `unroll=False` (the
graph holds one step, which is optimized and fused once and runs as one program per
step); `unroll=True` unrolls it, one cell step per time step in the graph. A mask ([batch,
time] booleans: `mask=` of the call, or the `_keras_mask` the input carries, e.g. from
`Embedding(mask_zero=True)` or `Masking`) makes a masked step keep the previous state and
output (zeros with `zero_output_for_mask`, which Bidirectional sets), as Keras's.
`dropout` and `recurrent_dropout` act in training only, with one mask per sequence used at
every step (per gate for LSTM and GRU when `recurrent_dropout` is set, as Keras 3 draws
them).

Example:
    >>> lstm = tf.keras.layers.LSTM(4, return_sequences=True)
    >>> lstm(tf.ones([2, 5, 3])).shape
    TensorShape([2, 5, 4])
"""
from __future__ import annotations

import inspect

import numpy as np

from ..._core import dtypes as _dt, nest
from ..._core.context import ctx
from ..._core.convert import convert_to_tensor
from ..._core.shape import dims_of
from ..._core.tensor import TensorShape
from ..._core.variable import Variable
from ...ops import array as _array, linalg as _linalg, math as _math, random as _random
from ...ops.creation import ones_like as _ones_like, zeros as _zeros, zeros_like as _zeros_like
from ...function.control_flow import while_loop
from ...ops.indexing import (gather as _gather, tensor_scatter_nd_update as _scatter_update,
                             where as _where)
from ...train import initializers as _init
from ...train.module import name_scope
from ..layer import Layer, is_symbolic, set_keras_mask, snake_case
from ..saving import deserialize_layer
from ._base import activation_name, get_activation

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN",
           "LSTM", "GRU", "Bidirectional", "TimeDistributed"]


class Orthogonal(_init.Initializer):
    """Keras's default `recurrent_initializer`: a random orthogonal matrix (the Q of a
    normal matrix's QR decomposition, signs fixed by R's diagonal) times `gain`."""

    def __init__(self, gain: float = 1.0, seed=None):
        self.gain, self.seed = float(gain), seed

    def __call__(self, shape, dtype=None):
        shape = tuple(int(d) for d in shape)
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        normal = _init.RandomNormal(seed=self.seed)((max(rows, cols), min(rows, cols)),
                                                    dtype=_dt.float64).numpy()
        q, r = np.linalg.qr(normal)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        dtype = _dt.as_dtype(dtype or _dt.float32)
        return convert_to_tensor((self.gain * q).reshape(shape).astype(
            dtype.as_numpy_dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


def _initializer(identifier):
    if isinstance(identifier, str) and identifier.lower() == "orthogonal" or \
            isinstance(identifier, dict) and identifier.get("class_name") == "Orthogonal":
        return Orthogonal(**(identifier.get("config", {}) if isinstance(identifier, dict)
                             else {}))
    return _init.get(identifier)


def _serialize(initializer) -> dict:
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}




# --------------------------------------------------------------------------- cells


def _project(x, kernel, masks):
    """`x @ kernel`, x first multiplied by its dropout mask: one mask for every column, or
    one per gate (each mask for its block of columns), as Keras 3 draws them."""
    if masks is None:
        return _linalg.matmul(x, kernel)
    if len(masks) == 1:
        return _linalg.matmul(x * masks[0], kernel)
    width = kernel.shape[1] // len(masks)
    return _array.concat([_linalg.matmul(x * m, kernel[:, i * width:(i + 1) * width])
                          for i, m in enumerate(masks)], 1)


class _Cell(Layer):
    """What the three cells share: arguments, weights, dropout masks and config.
    `call(x, states, training)` computes one time step and returns `(output, new_states)`;
    `states=None` is the zero state (no recurrent product is computed, so no batch size
    needs to be known). The recurrent layers draw the dropout masks once per sequence
    (`dropout_masks`) and run `step` with them at every time step."""

    _GATES = 1

    def __init__(self, units: int, activation="tanh", recurrent_activation="sigmoid",
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"{type(self).__name__}: units must be a positive integer, "
                             f"got {units!r}")
        self.units = int(units)
        # clipped to [0, 1] as Keras's; a rate of 1 drops nothing there either
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self.activation = get_activation(activation)
        self.recurrent_activation = get_activation(recurrent_activation)
        self._activation_ids = (activation_name(activation),
                                activation_name(recurrent_activation))
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _initializer(kernel_initializer)
        self.recurrent_initializer = _initializer(recurrent_initializer)
        self.bias_initializer = _initializer(bias_initializer)

    @property
    def state_size(self) -> int:
        return self.units

    def dropout_masks(self, x, training=None) -> tuple:
        """The (input, recurrent) dropout masks for a sequence whose steps look like `x`
        [batch, features]: each None (no dropout: not training, or a rate of 0 or 1) or
        a list of masks of entries 0 and 1/(1-rate): one, or with `recurrent_dropout` one
        per gate (Keras 3's LSTM and GRU draw them so)."""
        if not training:
            return None, None
        count = self._GATES if self.recurrent_dropout else 1

        def draw(like, rate):
            if not 0.0 < rate < 1.0:
                return None
            return [_random.dropout(_ones_like(like), rate, seed=self.seed)
                    for _ in range(count)]
        # [batch, units] ones without knowing the batch size: x's first column, spread
        state_like = _ones_like(x[:, :1]) * _array.ones([self.units], x.dtype)
        return draw(x, self.dropout), draw(state_like, self.recurrent_dropout)

    def get_initial_state(self, batch_size=None) -> list:
        """Zero states, [batch_size, units] each (LSTM: [h, c])."""
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [_zeros([batch_size, size], self._dtype) for size in sizes]

    def call(self, x, states=None, training=None):
        return self.step(x, states, self.dropout_masks(x, training))

    def _bias_shape(self) -> tuple:
        return (self._GATES * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def build(self, input_shape):
        if input_shape[-1] is None:
            raise ValueError(f"{type(self).__name__}: the last input dimension must be "
                             f"known, got shape {tuple(input_shape)}")
        width = self._GATES * self.units
        self.kernel = self.add_weight(shape=(int(input_shape[-1]), width), name="kernel",
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight(shape=(self.units, width),
                                                name="recurrent_kernel",
                                                initializer=self.recurrent_initializer)
        self.bias = self.add_weight(shape=self._bias_shape(), name="bias",
                                    initializer=self._bias_init()) if self.use_bias else None

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": self._activation_ids[0],
                "recurrent_activation": self._activation_ids[1], "use_bias": self.use_bias,
                "kernel_initializer": _serialize(self.kernel_initializer),
                "recurrent_initializer": _serialize(self.recurrent_initializer),
                "bias_initializer": _serialize(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNCell(_Cell):
    """One step of `SimpleRNN`: `h = activation(x @ kernel + h_prev @ recurrent_kernel +
    bias)`.

    Example:
        >>> out, states = tf.keras.layers.SimpleRNNCell(3)(tf.ones([2, 4]))
        >>> out.shape
        TensorShape([2, 3])
    """

    def __init__(self, units: int, activation="tanh", use_bias: bool = True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)

    def step(self, x, states=None, masks=None, training=None):
        masks = masks or (None, None)
        z = _project(x, self.kernel, masks[0])
        if states is not None:
            z = z + _project(states[0], self.recurrent_kernel, masks[1])
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z)
        return h, [h]

    def get_config(self) -> dict:
        config = super().get_config()
        del config["recurrent_activation"]
        return config


class _ForgetBiasOnes(_init.Initializer):
    """LSTM's `unit_forget_bias`: the forget gate's bias starts at one, the rest from the
    bias initializer."""

    def __init__(self, units: int, rest):
        self.units, self.rest = units, rest

    def __call__(self, shape, dtype=None):
        u = self.units
        dtype = _dt.as_dtype(dtype or _dt.float32)
        rest = self.rest((3 * u,), dtype=dtype)
        return _array.concat([rest[:u], _array.ones([u], dtype), rest[u:]], 0)


class LSTMCell(_Cell):
    """One step of `LSTM` (gates i, f, c, o in the kernel's columns); states [h, c].

    Example:
        >>> out, (h, c) = tf.keras.layers.LSTMCell(2)(tf.ones([1, 3]))
        >>> c.shape
        TensorShape([1, 2])
    """

    _GATES = 4

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> list:
        return [self.units, self.units]

    def _bias_init(self):
        return _ForgetBiasOnes(self.units, self.bias_initializer) \
            if self.unit_forget_bias else self.bias_initializer

    def step(self, x, states=None, masks=None, training=None):
        masks = masks or (None, None)
        z = _project(x, self.kernel, masks[0])
        if states is not None:
            z = z + _project(states[0], self.recurrent_kernel, masks[1])
        if self.bias is not None:
            z = z + self.bias
        u = self.units
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        g = self.activation(z[:, 2 * u:3 * u])
        o = self.recurrent_activation(z[:, 3 * u:])
        c = i * g if states is None else f * states[1] + i * g
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self) -> dict:
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """One step of `GRU` (gates z, r, h in the kernel's columns). With `reset_after=True`
    (Keras 3's default) the reset gate multiplies the recurrent product after it is
    computed and the bias has shape (2, 3*units): the input bias, then the recurrent one.

    Example:
        >>> out, (h,) = tf.keras.layers.GRUCell(2)(tf.ones([1, 3]))
        >>> h.shape
        TensorShape([1, 2])
    """

    _GATES = 3

    def __init__(self, units: int, reset_after: bool = True, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> tuple:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def step(self, x, states=None, masks=None, training=None):
        masks = masks or (None, None)
        u = self.units
        xz = _project(x, self.kernel, masks[0])
        recurrent_masks = masks[1]
        if self.bias is not None:
            xz = xz + (self.bias[0] if self.reset_after else self.bias)
        h_prev = None if states is None else states[0]
        if self.reset_after:
            # the recurrent product (with its bias) is split across the three gates
            if h_prev is not None:
                inner = _project(h_prev, self.recurrent_kernel, recurrent_masks)
                inner = inner + self.bias[1] if self.bias is not None else inner
            else:
                inner = self.bias[1] if self.bias is not None else None
            if inner is None:
                z = self.recurrent_activation(xz[:, :u])
                r_h = 0.0
            else:
                z = self.recurrent_activation(xz[:, :u] + inner[..., :u])
                r = self.recurrent_activation(xz[:, u:2 * u] + inner[..., u:2 * u])
                r_h = r * inner[..., 2 * u:]
            hh = self.activation(xz[:, 2 * u:] + r_h)
        else:
            if h_prev is None:
                z = self.recurrent_activation(xz[:, :u])
                hh = self.activation(xz[:, 2 * u:])
            else:
                inner = _project(h_prev, self.recurrent_kernel[:, :2 * u],
                                 recurrent_masks and recurrent_masks[:2])
                z = self.recurrent_activation(xz[:, :u] + inner[:, :u])
                r = self.recurrent_activation(xz[:, u:2 * u] + inner[:, u:])
                h_dropped = h_prev * recurrent_masks[2] if recurrent_masks else h_prev
                hh = self.activation(xz[:, 2 * u:] + _linalg.matmul(
                    r * h_dropped, self.recurrent_kernel[:, 2 * u:]))
        h = (1.0 - z) * hh if h_prev is None else z * h_prev + (1.0 - z) * hh
        return h, [h]

    def get_config(self) -> dict:
        return {**super().get_config(), "reset_after": self.reset_after}


# --------------------------------------------------------------------------- any cell


def _output_size(cell) -> int:
    """What a cell outputs per step: its `output_size`, else its (first) state size."""
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size
        size = size[0] if isinstance(size, (list, tuple)) else size
    return int(size)


def _takes(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _zero_state(cell, batch_size, dtype) -> list:
    """A cell's initial states: its own `get_initial_state`, else zeros per state size."""
    make = getattr(cell, "get_initial_state", None)
    if make is not None:
        states = make(batch_size=batch_size)
        return list(states) if isinstance(states, (list, tuple)) else states
    size = cell.state_size
    if isinstance(size, (list, tuple)):
        return [_zeros([batch_size, int(s)], dtype) for s in size]
    return _zeros([batch_size, int(size)], dtype)


def _check_cell(owner: str, cell) -> None:
    if not hasattr(cell, "call"):
        raise ValueError(f"{owner}: argument `cell` should have a `call` method. "
                         f"Received: cell={cell!r}")
    if not hasattr(cell, "state_size"):
        raise ValueError(f"{owner}: the RNN cell should have a `state_size` attribute "
                         "(single integer or list of integers, one integer per RNN state). "
                         f"Received: cell={cell!r}")


def _cell_step(cell, x, states, masks, training):
    """One time step of any cell: `(output, new_states)`. The built-in cells run with
    the dropout masks drawn for the whole sequence; any other cell is called as Keras
    calls it, `cell(x, states, training=...)` (training only where `call` takes it)."""
    if isinstance(cell, (_Cell, StackedRNNCells)):
        return cell.step(x, states, masks, training)
    kwargs = {"training": training} if training is not None and \
        _takes(cell.call, "training") else {}
    out, new_states = (cell if callable(cell) else cell.call)(x, states, **kwargs)
    return out, new_states


def _sequence_masks(cell, x, training):
    """The dropout masks a built-in cell (or a stack of them) keeps for one sequence."""
    if isinstance(cell, (_Cell, StackedRNNCells)):
        return cell.dropout_masks(x, training)
    return None


def _stack_layers(cell) -> list:
    """Every layer inside a cell (the cells of a stack), for cloning by class."""
    found = [cell]
    for sub in getattr(cell, "cells", None) or []:
        found += _stack_layers(sub)
    return found


def _serialize_layer(layer) -> dict:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def _deserialize(item, custom_objects: dict | None = None):
    """A layer (or a list of them) from `{"class_name", "config"}` entries, or one given
    as a layer already."""
    if isinstance(item, (list, tuple)):
        return [_deserialize(i, custom_objects) for i in item]
    if isinstance(item, dict):
        return deserialize_layer(item, custom_objects)
    return item


class StackedRNNCells(Layer):
    """A stack of RNN cells behaving as one cell: at every step each cell reads the
    output of the cell below; the states are one entry per cell (each a cell's list of
    states). `RNN([cell, cell])` makes one.

    Example:
        >>> cells = [tf.keras.layers.LSTMCell(4), tf.keras.layers.GRUCell(3)]
        >>> rnn = tf.keras.layers.RNN(tf.keras.layers.StackedRNNCells(cells))
        >>> rnn(tf.ones([2, 5, 6])).shape
        TensorShape([2, 3])
    """

    def __init__(self, cells, **kwargs):
        cells = list(cells)
        if not cells:
            raise ValueError("StackedRNNCells: `cells` must hold at least one cell")
        for cell in cells:
            _check_cell("StackedRNNCells", cell)
        super().__init__(**kwargs)
        self.cells = cells

    @property
    def state_size(self) -> list:
        return [c.state_size for c in self.cells]

    @property
    def output_size(self) -> int:
        return _output_size(self.cells[-1])

    def get_initial_state(self, batch_size=None) -> list:
        """One entry per cell: the cell's own initial states (zeros by default)."""
        return [_zero_state(c, batch_size, self._dtype) for c in self.cells]

    def build(self, input_shape):
        shape = tuple(input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                with name_scope(cell.name):  # relative: "rnn/stacked_rnn_cells/lstm_cell/"
                    cell.build(shape)
                cell.built = True
            shape = (shape[0], _output_size(cell))

    def dropout_masks(self, x, training=None) -> list:
        """Each built-in cell's dropout masks (None for other cells)."""
        found, like = [], x
        for cell in self.cells:
            found.append(_sequence_masks(cell, like, training))
            # only the shape matters: [batch, what this cell outputs]
            like = _zeros_like(x[:, :1]) + _zeros([_output_size(cell)], x.dtype)
        return found

    def step(self, x, states, masks=None, training=None):
        new_states = []
        for i, cell in enumerate(self.cells):
            given = states[i]
            # as Keras: a cell whose state came as one tensor gets it back as one tensor
            was_list = isinstance(given, (list, tuple))
            x, produced = _cell_step(cell, x, list(given) if was_list else [given],
                                     None if masks is None else masks[i], training)
            produced = list(produced) if isinstance(produced, (list, tuple)) else [produced]
            new_states.append(produced[0] if len(produced) == 1 and not was_list
                              else produced)
        return x, new_states

    def call(self, inputs, states, training=None):
        return self.step(inputs, states, self.dropout_masks(inputs, training), training)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "cells": [_serialize_layer(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config: dict):
        return cls._from_config(config)

    @classmethod
    def _from_config(cls, config: dict, custom_objects: dict | None = None):
        config = dict(config)
        return cls(_deserialize(config.pop("cells"), custom_objects), **config)


# --------------------------------------------------------------------------- layers


def _check_static_batch(layer: Layer, inputs) -> None:
    """A stateful layer drawn into a functional graph needs its batch size."""
    shape = nest.flatten(inputs)[0].shape
    if shape[0] is None:
        raise ValueError(
            f"Layer {layer.name!r}: when using `stateful=True` in a RNN, the batch size "
            f"must be static. Found dynamic batch size: sequence.shape={shape}; give it "
            "with keras.Input(shape, batch_size=...)")


class _StateVariables:
    """Where a stateful layer keeps its state variables: out of the layer's weights and
    checkpoints (a plain object, which Module does not walk), as Keras keeps them."""

    def __init__(self):
        self.variables = None
        self.structure = None


def keeping_states(layers: list, run):
    """`run()`, with the stateful recurrent layers among `layers` left with the states
    they had before (zeros for states made during it): drawing a functional graph runs
    layers on probes, and `fit` runs a model once before tracing, neither of which may
    advance a sequence."""
    held = [layer for layer in layers if isinstance(layer, RNN) and layer.stateful]
    saved = [None if layer.states is None else [v.numpy() for v in layer.states]
             for layer in held]
    try:
        return run()
    finally:
        for layer, values in zip(held, saved):
            for i, v in enumerate(layer.states or []):
                v.assign(_zeros(v.shape, v.dtype) if values is None else values[i])


class RNN(Layer):
    """A recurrent layer over any cell, run along the time axis (axis 1) of [batch, time,
    features] inputs. A cell is `SimpleRNNCell`, `LSTMCell`, `GRUCell`, a list of cells
    (stacked: `StackedRNNCells`) or any layer with a `state_size` (an int or a list of
    ints), an optional `output_size` and `call(inputs, states) -> (output, new_states)`.

    The loop is a Python loop eagerly and a `while_loop` when traced (unrolled with
    `unroll=True`). A
    mask ([batch, time] booleans, `mask=` or the input's Keras mask) makes a masked step
    keep the previous states and output (zeros with `zero_output_for_mask`).
    `initial_state=` gives the first states (a list as `get_initial_state` returns it);
    with `return_state` the last states follow the output. With `go_backwards` the
    sequence is read from its end and the outputs come in that order.

    Example:
        >>> rnn = tf.keras.layers.RNN(tf.keras.layers.LSTMCell(4), return_sequences=True)
        >>> rnn(tf.ones([2, 5, 3])).shape
        TensorShape([2, 5, 4])
    """

    def __init__(self, cell, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 zero_output_for_mask: bool = False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        _check_cell(type(self).__name__, cell)
        size = cell.state_size
        if not isinstance(size, (list, tuple, int, np.integer)):
            raise ValueError(f"{type(self).__name__}: state_size must be an integer, or a "
                             f"list/tuple of integers (one for each state tensor), got "
                             f"{size!r}")
        super().__init__(**kwargs)
        # stateful: the last states of a call are the initial states of the next one, for
        # a batch size fixed when the layer is built (`states`, `reset_states`)
        self.stateful = bool(stateful)
        self._state_store = _StateVariables()
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.unroll = bool(unroll)  # traced: a while_loop unless True
        # a masked step outputs zeros rather than the previous output (Bidirectional
        # sets it for returned sequences, as Keras's)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.cell = cell

    supports_masking = True

    @property
    def state_size(self) -> list:
        """The cell's state sizes as a list (one entry per state; a stack's entries are
        its cells' sizes)."""
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [int(size)]

    def _state_list(self) -> list:
        return self.state_size

    def get_initial_state(self, batch_size) -> list:
        """The states a sequence starts from when no `initial_state` is given: the cell's
        `get_initial_state(batch_size=...)`, or zeros [batch_size, size] per state.

        Example:
            >>> rnn = tf.keras.layers.RNN(tf.keras.layers.LSTMCell(3))
            >>> [tuple(s.shape) for s in rnn.get_initial_state(2)]
            [(2, 3), (2, 3)]
        """
        if getattr(self.cell, "get_initial_state", None) is not None:
            states = self.cell.get_initial_state(batch_size=batch_size)
            return list(states) if isinstance(states, (list, tuple)) else [states]
        return [_zeros([batch_size, int(s)], self._dtype) for s in self.state_size]

    def build(self, input_shape):
        if isinstance(input_shape, list):  # [sequence, *initial states]
            input_shape = input_shape[0]
        if len(input_shape) != 3:
            raise ValueError(f"Input of layer {self.name!r} ({type(self).__name__}) must be "
                             f"[batch, time, features], got shape {tuple(input_shape)}")
        if isinstance(self.cell, Layer) and not self.cell.built:
            with name_scope(self.cell.name):  # relative: "lstm/lstm_cell/kernel", as Keras
                self.cell.build(input_shape[:1] + input_shape[2:])
            self.cell.built = True
        if self.stateful and self.states is None:
            initial = self.get_initial_state(int(input_shape[0]))
            self._state_store.structure = initial
            self._state_store.variables = [
                Variable(_math.cast(s, self._dtype), trainable=False, name="rnn_state")
                for s in nest.flatten(initial)]

    @property
    def states(self) -> list | None:
        """A stateful layer's state variables (LSTM: [h, c]), [batch, units] each; None
        for a layer that is not stateful (or not built yet).

        Example:
            >>> lstm = tf.keras.layers.LSTM(3, stateful=True)
            >>> _ = lstm(tf.ones([2, 4, 5]))
            >>> [tuple(s.shape) for s in lstm.states]
            [(2, 3), (2, 3)]
        """
        return self._state_store.variables

    def reset_states(self) -> None:
        """Set a stateful layer's states back to zeros (start new sequences)."""
        for v in self.states or []:
            v.assign(_zeros(v.shape, v.dtype))

    reset_state = reset_states  # Keras 3 has both spellings

    def __call__(self, inputs, *args, **kwargs):
        given = kwargs.get("initial_state")
        if given is not None and is_symbolic(given) and not isinstance(inputs, list):
            # symbolic initial states travel as inputs, so a functional graph links them
            # (and replays the call as `layer([sequence, *states])`)
            kwargs = {k: v for k, v in kwargs.items() if k != "initial_state"}
            inputs = [inputs, *nest.flatten(given)]
        if not self.stateful or not is_symbolic(inputs):
            return super().__call__(inputs, *args, **kwargs)
        _check_static_batch(self, inputs)
        return keeping_states([self], lambda: super(RNN, self).__call__(
            inputs, *args, **kwargs))

    def compute_mask(self, inputs, mask=None):
        """The input's mask for the sequence output (None when only the last step is
        returned); no masks for the states."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out] + [None] * len(self.state_size) if self.return_state else out

    def _initial_states(self, inputs, initial_state):
        """The first states as the cell takes them, or None for a built-in cell starting
        from zeros (its first step then skips the recurrent product)."""
        if initial_state is None and not self.stateful:
            if isinstance(self.cell, _Cell):
                return None
            batch = inputs.shape[0] if inputs.shape[0] is not None else \
                _array.shape(inputs)[0]
            return self.get_initial_state(batch)
        template = self._state_store.structure if self.stateful else None
        if initial_state is None:
            flat = [v.read_value() for v in self.states]
        else:
            given = initial_state if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            flat = [_math.cast(convert_to_tensor(s), inputs.dtype) for s in
                    nest.flatten(list(given))]
            expected = self._flat_state_count()
            if len(flat) != expected:
                raise ValueError(f"Layer {self.name!r}: expected {expected} initial "
                                 f"state tensors, got {len(flat)}")
            if template is None and not isinstance(self.cell, _Cell):
                template = self._state_template()
        return flat if template is None else nest.pack_sequence_as(template, flat)

    def _flat_state_count(self) -> int:
        return len(nest.flatten(self.state_size))

    def _state_template(self):
        """The nesting of the states (a stack: one list per cell), with sizes as leaves."""
        if isinstance(self.cell, StackedRNNCells):
            return [list(s) if isinstance(s, (list, tuple)) else [s]
                    for s in self.cell.state_size]
        return self.state_size

    def call(self, inputs, initial_state=None, mask=None, training=None):
        if isinstance(inputs, (list, tuple)):  # [sequence, *initial states]
            inputs, rest = inputs[0], list(inputs[1:])
            initial_state = rest or initial_state
            mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        if inputs.ndim != 3:
            raise self._input_error("rank 3 ([batch, time, features])", inputs)
        steps = inputs.shape[1]
        if steps == 0:
            raise ValueError(f"Layer {self.name!r}: the input has no time steps "
                             f"(shape {list(inputs.shape)})")
        if mask is not None:
            mask = convert_to_tensor(mask)
            if mask.ndim != 2 or any(a is not None and b is not None and a != b for a, b
                                     in zip(mask.shape, inputs.shape[:2])):
                raise ValueError(f"Layer {self.name!r}: the mask must be [batch, time] = "
                                 f"{list(inputs.shape[:2])}, got shape {list(mask.shape)}")
            mask = _array.expand_dims(_math.cast(mask, _dt.bool), -1)
        if self.stateful:
            expected = self.states[0].shape[0]
            if inputs.shape[0] != expected:
                raise ValueError(f"Layer {self.name!r}: if an RNN is stateful, the batch "
                                 "size of the input sequences must be the same as the batch "
                                 f"size of the states: expected {expected}, got input shape "
                                 f"{list(inputs.shape)}")
        states = self._initial_states(inputs, initial_state)
        # one dropout mask per sequence, the same at every step (Keras's)
        dropout_masks = _sequence_masks(self.cell, inputs[:, 0], training)
        if steps is None or (ctx.graph is not None and not self.unroll and steps > 1):
            # traced (as in `fit`), or a time length known only when run (a functional
            # model's Input(shape=(None, ...))): the steps in a while_loop, as Keras's
            # `unroll=False` (a graph of one step, not of every step: traced, optimized
            # and fused once, its body compiled as one program)
            result, states = self._dynamic_loop(inputs, states, mask, dropout_masks,
                                                training)
        else:
            order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
            outputs = []
            for t in order:
                before = outputs[-1] if outputs else None
                out, states = self._step(inputs[:, t], states, None if mask is None
                                         else mask[:, t], before, dropout_masks, training)
                outputs.append(out)
            # with go_backwards the sequence comes out in the order it was read (Keras's)
            result = _array.stack(outputs, axis=1) if self.return_sequences \
                else outputs[-1]
        if self.stateful:
            for v, state in zip(self.states, nest.flatten(states)):
                v.assign(state)
        return [result, *states] if self.return_state else result

    def _step(self, x, states, keep, before, dropout_masks, training):
        """One time step: the cell on `x` (one step's [batch, features]) and `states`;
        where `keep` ([batch, 1]) is False the step is masked and keeps the previous
        output (`before`; zeros at the first step or with `zero_output_for_mask`) and
        states. Returns (output, new states)."""
        out, new_states = _cell_step(self.cell, x, states, dropout_masks, training)
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) \
            else [new_states]
        if keep is None:
            return out, new_states
        if before is None or self.zero_output_for_mask:
            before = _zeros_like(out)
        flat_new = nest.flatten(new_states)
        flat_old = nest.flatten(states) if states is not None else \
            [_zeros_like(n) for n in flat_new]
        return _where(keep, out, before), nest.pack_sequence_as(
            new_states, [_where(keep, n, o) for n, o in zip(flat_new, flat_old)])

    def _dynamic_loop(self, inputs, states, mask, dropout_masks, training):
        """The loop over a time dimension known only when run: the first step as the
        unrolled loop takes it (it makes the states' structure, and a built-in cell's
        first step has no recurrent product), then a `while_loop` over the others, the
        outputs gathered in reading order. Returns (the sequence or
        the last output, the final states)."""
        steps = _array.shape(inputs)[1]

        def at(t):
            return steps - 1 - t if self.go_backwards else t

        def step(i, states, before):
            t = at(i)
            keep = None if mask is None else _gather(mask, t, axis=1)
            return self._step(_gather(inputs, t, axis=1), states, keep, before,
                              dropout_masks, training)

        out, states = step(0, states, None)
        template = states
        flat = nest.flatten(states)
        if not self.return_sequences:
            def body(i, before, flat_states):
                out, new = step(i, nest.pack_sequence_as(template, list(flat_states)),
                                before)
                return i + 1, out, nest.flatten(new)

            _, last, flat_states = while_loop(lambda i, *_: i < steps, body,
                                              (convert_to_tensor(1), out, flat))
            return last, nest.pack_sequence_as(template, list(flat_states))

        # the outputs in a [steps, batch, ...] buffer of a fixed shape, step i's written
        # as row i: the loop runtime writes the rows in place (control.RowWrites), so a
        # step costs O(output) and one program serves every sequence length; the buffer
        # becomes [batch, steps, ...] once, after the loop (Keras's TensorArray too)
        def row_at(i, out):
            return _array.reshape(i, [1, 1]), _array.expand_dims(out, 0)

        sequence = _zeros((dims_of(inputs)[1],) + tuple(dims_of(out)), out.dtype)
        sequence = _scatter_update(sequence, *row_at(convert_to_tensor(0), out))

        def body(i, before, flat_states, sequence):
            out, new = step(i, nest.pack_sequence_as(template, list(flat_states)), before)
            return i + 1, out, nest.flatten(new), _scatter_update(sequence, *row_at(i, out))

        _, last, flat_states, sequence = while_loop(
            lambda i, *_: i < steps, body, (convert_to_tensor(1), out, flat, sequence))
        states = nest.pack_sequence_as(template, list(flat_states))
        rank = len(sequence.shape)
        sequence = _array.transpose(sequence, [1, 0] + list(range(2, rank)))
        if inputs.shape[1] is not None:  # (a static length)
            sequence = _array.ensure_shape(sequence, [sequence.shape[0], inputs.shape[1],
                                                      *sequence.shape[2:]])
        return sequence, states

    def get_config(self) -> dict:
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": _serialize_layer(self.cell)}

    @classmethod
    def from_config(cls, config: dict):
        return cls._from_config(config)

    @classmethod
    def _from_config(cls, config: dict, custom_objects: dict | None = None):
        """`from_config` with the classes of cells not registered with tapeflow (a
        user's cell) given by name."""
        config = dict(config)
        return cls(_deserialize(config.pop("cell"), custom_objects), **config)


class _RNN(RNN):
    """SimpleRNN, LSTM and GRU: an RNN over the cell they make from their arguments
    (`self.cell`, whose weights Keras files hold under "cell"); their config is the
    cell's arguments and the RNN's, side by side, as Keras's."""

    _CELL: type = _Cell

    def __init__(self, units: int, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False,
                 stateful: bool = False, unroll: bool = False,
                 zero_output_for_mask: bool = False, **kwargs):
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                       if k not in ("name", "dtype", "trainable", "input_shape",
                                    "input_dim", "batch_size", "batch_input_shape")}
        # Keras names the cell by its class ("lstm_cell"), without a counter
        cell = self._CELL(units, name=snake_case(self._CELL.__name__),
                          dtype=kwargs.get("dtype"), **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences,
                         return_state=return_state, go_backwards=go_backwards,
                         stateful=stateful, unroll=unroll,
                         zero_output_for_mask=zero_output_for_mask, **kwargs)

    @property
    def units(self) -> int:
        return self.cell.units

    def get_config(self) -> dict:
        config = {**Layer.get_config(self), **self.cell.get_config()}
        config.update(name=self.name, trainable=self.trainable,
                      return_sequences=self.return_sequences,
                      return_state=self.return_state, go_backwards=self.go_backwards,
                      stateful=self.stateful, unroll=self.unroll,
                      zero_output_for_mask=self.zero_output_for_mask)
        return config

    # the plain rule again (a config of arguments), not RNN's nested cell
    from_config = Layer.__dict__["from_config"]


class SimpleRNN(_RNN):
    """A fully connected recurrent layer: `h_t = activation(x_t @ kernel +
    h_{t-1} @ recurrent_kernel + bias)`.

    Example:
        >>> tf.keras.layers.SimpleRNN(4)(tf.ones([2, 5, 3])).shape
        TensorShape([2, 4])
    """

    _CELL = SimpleRNNCell


class LSTM(_RNN):
    """Long short-term memory; with `return_state=True` returns `[output, h, c]`.

    Example:
        >>> out, h, c = tf.keras.layers.LSTM(4, return_state=True)(tf.ones([2, 5, 3]))
        >>> out.shape, c.shape
        (TensorShape([2, 4]), TensorShape([2, 4]))
    """

    _CELL = LSTMCell


class GRU(_RNN):
    """Gated recurrent unit (Keras 3's `reset_after=True` form by default); with
    `return_state=True` returns `[output, h]`.

    Example:
        >>> tf.keras.layers.GRU(4, return_sequences=True)(tf.ones([2, 5, 3])).shape
        TensorShape([2, 5, 4])
    """

    _CELL = GRUCell


_MERGES = ("concat", "sum", "mul", "ave", None)


def _clone(layer: Layer, **changes) -> Layer:
    """A new layer of `layer`'s class and config (with `changes`), fresh weights."""
    config = {**layer.get_config(), **changes}
    if isinstance(layer, RNN) and not isinstance(layer, _RNN):
        # the cells' classes come from the layer itself: a user's cell needs no registry
        known = {type(c).__name__: type(c) for c in _stack_layers(layer.cell)}
        return type(layer)._from_config(config, known)
    return type(layer).from_config(config)


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else name


class Bidirectional(Layer):
    """Runs a recurrent layer (any `RNN`: SimpleRNN, LSTM, GRU, `RNN(cell)`) forwards and
    a copy of it (or `backward_layer`) backwards over the sequence and merges the two
    outputs (`merge_mode`: "concat", "sum", "mul", "ave" or None for the list of both).
    The backward sequence is reversed back, so step t of both outputs belongs to input
    step t. `initial_state=` takes the forward layer's states, then the backward one's.

    Example:
        >>> bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4))
        >>> bi(tf.ones([2, 5, 3])).shape
        TensorShape([2, 8])
    """

    def __init__(self, layer: Layer, merge_mode: str | None = "concat", weights=None,
                 backward_layer: Layer | None = None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `Bidirectional` layer with a "
                             f"`keras.layers.Layer` instance. Received: {layer!r}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError("Bidirectional: `backward_layer` needs to be a "
                             f"`keras.layers.Layer` instance. Received: {backward_layer!r}")
        if merge_mode not in _MERGES:
            raise ValueError(f"Invalid merge mode. Received: merge_mode={merge_mode!r}. "
                             f"Merge mode should be one of {list(_MERGES)}")
        super().__init__(**kwargs)
        self.merge_mode = merge_mode
        # a given backward layer is part of the config; the default copy is not (it
        # follows from `layer`, and Keras reads configs without it as well)
        self._backward_given = backward_layer is not None
        # made in this layer's scope: "bidirectional/forward_lstm/lstm_cell/kernel", as Keras
        with self.name_scope:
            self.forward_layer = _clone(layer, name=f"forward_{_strip(layer.name, 'forward_')}")
            if backward_layer is None:
                backward_layer = _clone(
                    layer, name=f"backward_{_strip(layer.name, 'backward_')}",
                    go_backwards=True)
        self.backward_layer = backward_layer
        self._verify()
        for sub in (self.forward_layer, self.backward_layer):  # Keras's rule
            if getattr(sub, "zero_output_for_mask", None) is not None:
                sub.zero_output_for_mask = sub.return_sequences
        self.stateful = bool(getattr(layer, "stateful", False))
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        if weights is not None:
            raise NotImplementedError("Bidirectional: the `weights` argument is not "
                                      "supported; use set_weights after building")

    def _verify(self) -> None:
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise ValueError("Bidirectional: forward layer and backward layer should have "
                             "different `go_backwards` value. Received: "
                             f"forward_layer.go_backwards={fwd.go_backwards}, "
                             f"backward_layer.go_backwards={bwd.go_backwards}")
        for attribute in ("stateful", "return_sequences", "return_state"):
            if getattr(fwd, attribute) != getattr(bwd, attribute):
                raise ValueError(
                    "Bidirectional: forward layer and backward layer are expected to have "
                    f"the same value for attribute {attribute!r}, got "
                    f"{getattr(fwd, attribute)} for forward layer and "
                    f"{getattr(bwd, attribute)} for backward layer")

    supports_masking = True

    def __call__(self, inputs, *args, **kwargs):
        if self.forward_layer.stateful and is_symbolic(inputs):
            _check_static_batch(self, inputs)
            return keeping_states([self.forward_layer, self.backward_layer],
                                   lambda: super(Bidirectional, self).__call__(
                                       inputs, *args, **kwargs))
        return super().__call__(inputs, *args, **kwargs)

    @property
    def states(self) -> list | None:
        """The forward layer's states, then the backward one's (stateful layers only)."""
        if self.forward_layer.states is None:
            return None
        return [*self.forward_layer.states, *self.backward_layer.states]

    def reset_states(self) -> None:
        """Zero both directions' states (stateful layers only)."""
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    reset_state = reset_states

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if not self.return_state:
            return out if self.merge_mode else [out, out]
        states = len(self.forward_layer._state_list()) + \
            len(self.backward_layer._state_list())
        return [out] * (1 if self.merge_mode else 2) + [None] * states

    def call(self, inputs, initial_state=None, mask=None, training=None):
        extra = {} if mask is None else {"mask": mask}
        if training is not None:
            extra["training"] = training
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = list(initial_state[:half]), list(initial_state[half:])
        fwd = self.forward_layer(inputs, initial_state=fwd_state, **extra)
        bwd = self.backward_layer(inputs, initial_state=bwd_state, **extra)
        if self.return_state:
            fwd, fwd_states = fwd[0], fwd[1:]
            bwd, bwd_states = bwd[0], bwd[1:]
        if self.return_sequences:
            bwd = _array.reverse(bwd, [1])
        if self.merge_mode == "concat":
            out = _array.concat([fwd, bwd], -1)
        elif self.merge_mode == "sum":
            out = fwd + bwd
        elif self.merge_mode == "mul":
            out = fwd * bwd
        elif self.merge_mode == "ave":
            out = (fwd + bwd) * 0.5
        else:
            out = [fwd, bwd]
        if self.return_state:
            out = out if isinstance(out, list) else [out]
            return [*out, *fwd_states, *bwd_states]
        return out

    def get_config(self) -> dict:
        config = {**super().get_config(), "merge_mode": self.merge_mode,
                  "layer": _serialize_layer(self.forward_layer)}
        if self._backward_given:
            config["backward_layer"] = _serialize_layer(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        layer = _deserialize(config.pop("layer"))
        backward = config.pop("backward_layer", None)
        return cls(layer, backward_layer=None if backward is None else _deserialize(backward),
                   **config)


class TimeDistributed(Layer):
    """Applies `layer` to every time step (axis 1) of [batch, time, ...] inputs: the
    steps are folded into the batch ([batch * time, ...]), run through `layer` once, and
    unfolded. The same weights serve every step (they are `layer`'s). A mask [batch,
    time] passes to `layer` (per step) where its `call` takes one, and on to the output.
    (Keras 3 calls `layer` once per step instead; the results are the same except for
    layers that mix the batch, such as BatchNormalization in training.)

    Example:
        >>> td = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2))
        >>> td(tf.ones([4, 5, 3])).shape
        TensorShape([4, 5, 2])
    """

    def __init__(self, layer: Layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`keras.layers.Layer` instance. Received: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    supports_masking = True

    def _child_shape(self, input_shape) -> tuple:
        if len(input_shape) < 3:
            raise ValueError(f"TimeDistributed {self.name!r}: the input must have at least "
                             "3 dimensions ([batch, time, ...]), received shape "
                             f"{tuple(input_shape)}")
        return (None if input_shape[0] is None or input_shape[1] is None
                else int(input_shape[0]) * int(input_shape[1]), *input_shape[2:])

    def build(self, input_shape):
        if not self.layer.built:
            with name_scope(self.layer.name):  # relative: "time_distributed/dense/kernel"
                self.layer.build(TensorShape(self._child_shape(input_shape)))
            self.layer.built = True

    def call(self, inputs, training=None, mask=None):
        shape = inputs.shape
        self._child_shape(shape)
        dynamic = _array.shape(inputs)
        inner = [d if d is not None else dynamic[i + 2] for i, d in enumerate(shape[2:])]
        folded = _array.reshape(inputs, [-1, *inner])
        kwargs = {}
        if training is not None:
            kwargs["training"] = training
        if mask is not None:
            mask = convert_to_tensor(mask)
            if mask.ndim < 2 or any(
                    a is not None and b is not None and a != b
                    for a, b in zip(mask.shape[:2], shape[:2])):
                raise ValueError(f"TimeDistributed {self.name!r}: the mask must be "
                                 f"[batch, time] = {list(shape[:2])}, got shape "
                                 f"{list(mask.shape)}")
            if _takes(type(self.layer).call, "mask"):
                kwargs["mask"] = _array.reshape(mask, [-1, *mask.shape[2:]])
        outputs = self.layer(folded, **kwargs)
        batch = shape[0] if shape[0] is not None else dynamic[0]
        steps = shape[1] if shape[1] is not None else dynamic[1]

        def unfold(y):
            set_keras_mask(y, None)  # the step mask is not the output's: see compute_mask
            ys = _array.shape(y)
            rest = [d if d is not None else ys[i + 1] for i, d in enumerate(y.shape[1:])]
            return _array.reshape(y, [batch, steps, *rest])
        return nest.map_structure(unfold, outputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": _serialize_layer(self.layer)}

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        return cls(_deserialize(config.pop("layer")), **config)
