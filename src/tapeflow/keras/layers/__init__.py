"""`tf.keras.layers`: Keras 3's layers, one module per kind as Keras 3 splits them (core,
convolutional, pooling, normalization, regularization, reshaping, activations, merging,
preprocessing, rnn, attention); this namespace only re-exports their public names.

Example:
    >>> from tapeflow.keras.layers import Dense
    >>> Dense(3)(tf.ones([2, 4])).shape
    TensorShape([2, 3])
"""
from ..layer import Input, InputLayer, KerasTensor, Layer
from .activations import LeakyReLU, ReLU, Softmax
from .attention import MultiHeadAttention
from .convolutional import Conv1D, Conv2D, Convolution1D, Convolution2D
from .core import Activation, Dense, Embedding, Masking
from .merging import Add, Concatenate, Multiply
from .normalization import BatchNormalization, LayerNormalization
from .pooling import (AveragePooling1D, AveragePooling2D, AvgPool1D, AvgPool2D,
                      GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAvgPool1D,
                      GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPooling1D,
                      GlobalMaxPooling2D, MaxPool1D, MaxPool2D, MaxPooling1D, MaxPooling2D)
from .preprocessing import Normalization, Rescaling
from .regularization import Dropout
from .reshaping import Flatten, Reshape
from .rnn import GRU, LSTM, Bidirectional, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell

__all__ = ["Activation", "Add", "AveragePooling1D", "AveragePooling2D", "AvgPool1D",
           "AvgPool2D", "BatchNormalization", "Bidirectional", "Concatenate", "Conv1D",
           "Conv2D", "Convolution1D", "Convolution2D", "Dense", "Dropout", "Embedding",
           "Flatten", "GRU", "GRUCell", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPooling1D", "GlobalMaxPooling2D", "Input", "InputLayer", "KerasTensor",
           "LSTM", "LSTMCell", "Layer", "LayerNormalization", "LeakyReLU", "Masking",
           "MaxPool1D", "MaxPool2D", "MaxPooling1D", "MaxPooling2D", "MultiHeadAttention",
           "Multiply", "Normalization", "ReLU", "Rescaling", "Reshape", "SimpleRNN",
           "SimpleRNNCell", "Softmax"]
