"""A MODEL_SCRIPT mixing op kinds: concat, average pool, layer norm (float32 statistics), reshape,
batched matmul (3-D FRACTAL_NZ), flatten, dropout and a tanh dense layer."""
import numpy as np
import keras
from keras import ops

def model():
    x_in = keras.Input((8, 8, 4), batch_size=2, name="x")
    a = keras.layers.Conv2D(8, 3, padding="same", activation="sigmoid", name="ca")(x_in)
    b = keras.layers.Conv2D(8, 1, name="cb")(x_in)
    c = keras.layers.Concatenate(name="cat")([a, b])
    c = keras.layers.AveragePooling2D(2, name="avg")(c)
    c = keras.layers.LayerNormalization(name="ln")(c)
    s = keras.layers.Reshape((16, 16), name="seq")(c)
    att = keras.layers.Lambda(lambda t: ops.matmul(t, ops.transpose(t, (0, 2, 1))), name="bmm")(s)
    f = keras.layers.Flatten(name="flat")(att)
    f = keras.layers.Dropout(0.5, name="drop")(f)
    y = keras.layers.Dense(5, activation="tanh", name="fc")(f)
    return keras.Model(x_in, y, name="variety")

def inputs():
    return np.random.default_rng(1).standard_normal((2, 8, 8, 4)).astype("float32")
