"""An LSTM unrolled over 8 steps (Keras ``unroll=True``: one MatMul per gate block and step, no while loop)."""
import numpy as np
import keras


def model():
    sequence = keras.Input((8, 12), batch_size=4, name="sequence")
    hidden = keras.layers.LSTM(24, unroll=True, name="lstm")(sequence)
    return keras.Model(sequence, keras.layers.Dense(5, name="head")(hidden), name="recurrent")


def inputs():
    return np.random.default_rng(5).standard_normal((4, 8, 12)).astype("float32")
