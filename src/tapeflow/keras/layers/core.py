"""Keras's core layers: Dense, Embedding, Masking, Activation."""
from __future__ import annotations

from ..._core.convert import convert_to_tensor
from ...ops import array as _array, math as _math, reduction as _reduction
from ...ops.creation import zeros_like as _zeros_like
from ...ops.indexing import where as _where
from ...train import initializers as _init, layers as _layers
from .. import regularizers as _regularizers
from ..layer import Layer, set_keras_mask, unique_name
from ._base import Stateless, activation_name, base_kwargs, kernel_config

__all__ = ["Activation", "Dense", "Embedding", "Masking"]


class Dense(Layer, _layers.Dense):
    """A densely connected layer: `activation(inputs @ kernel + bias)`.

    Example:
        >>> layer = tf.keras.layers.Dense(4, activation="relu")
        >>> layer(tf.ones([2, 3])).shape
        TensorShape([2, 4])
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        self._regularizer_for = {"kernel": _regularizers.get(kernel_regularizer),
                                 "bias": _regularizers.get(bias_regularizer)}
        _layers.Dense.__init__(self, units, activation, use_bias, kernel_initializer,
                               bias_initializer, name=unique_name(name, type(self)),
                               dtype=dtype)
        self._activation_id = activation_name(activation)
        self._keras_init(trainable, rest)

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                **kernel_config(self)}


class Embedding(Layer, _layers.Embedding):
    """Turns integer ids into dense vectors of size `output_dim`.

    Example:
        >>> tf.keras.layers.Embedding(10, 4)(tf.constant([[1, 2]])).shape
        TensorShape([1, 2, 4])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, mask_zero: bool = False, trainable: bool = True,
                 **kwargs):
        name, dtype, rest = base_kwargs(kwargs)
        self._regularizer_for = {"embeddings": _regularizers.get(embeddings_regularizer)}
        self.mask_zero = bool(mask_zero)
        rest.pop("input_length", None)  # Keras 2's argument, ignored as Keras 3 does
        _layers.Embedding.__init__(self, input_dim, output_dim, embeddings_initializer,
                                   name=unique_name(name, type(self)), dtype=dtype)
        self._keras_init(trainable, rest)

    @property
    def supports_masking(self) -> bool:
        return self.mask_zero

    def compute_mask(self, inputs, mask=None):
        """With `mask_zero=True`, True where the id is not 0 (the padding); else None."""
        if not self.mask_zero:
            return None
        return _math.not_equal(convert_to_tensor(inputs), 0)

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "embeddings_initializer": _init.serialize(self.embeddings_initializer)}


class Masking(Stateless):
    """Masks the time steps whose features all equal `mask_value`: the output is the
    input with those steps set to zero, carrying the [batch, time] mask (True: kept) that
    the layers after it (LSTM, GRU, GlobalAveragePooling1D, ...) use to skip them.

    Example:
        >>> x = np.array([[[1.0, 2.0], [0.0, 0.0], [0.0, 3.0]]])
        >>> out = tf.keras.layers.Masking(mask_value=0.0)(x)
        >>> out._keras_mask.numpy()
        array([[ True, False,  True]])
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs, previous_mask=None):
        return _reduction.reduce_any(_math.not_equal(
            self._convert_input(inputs), self.mask_value), axis=-1)

    def call(self, x):
        if x.ndim < 2:
            raise self._input_error("rank >= 2 ([batch, ..., features])", x)
        keep = _reduction.reduce_any(_math.not_equal(x, self.mask_value), axis=-1,
                                     keepdims=True)
        out = _where(keep, x, _zeros_like(x))
        set_keras_mask(out, _array.squeeze(keep, [-1]))  # made here: no second comparison
        return out

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}


class Activation(Stateless):
    """Applies an activation function given by name or as a callable.

    Example:
        >>> tf.keras.layers.Activation("relu")(tf.constant([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """
    supports_masking = True  # per step: a mask passes through, as in Keras


    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = _layers.get_activation(activation)
        self._activation_id = activation_name(activation)

    def call(self, x):
        return self.activation(x)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": self._activation_id}
