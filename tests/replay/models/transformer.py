"""A one-block Transformer encoder (Keras): multi-head self-attention, layer norms, a feed-forward block."""
import numpy as np
import keras


def model():
    tokens = keras.Input((16, 32), batch_size=2, name="tokens")
    attended = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8, name="mha")(tokens, tokens)
    x = keras.layers.LayerNormalization(name="ln1")(keras.layers.Add(name="res1")([tokens, attended]))
    hidden = keras.layers.Dense(64, activation="relu", name="ff1")(x)
    projected = keras.layers.Dense(32, name="ff2")(hidden)
    x = keras.layers.LayerNormalization(name="ln2")(keras.layers.Add(name="res2")([x, projected]))
    pooled = keras.layers.GlobalAveragePooling1D(name="pool")(x)
    return keras.Model(tokens, keras.layers.Dense(10, activation="softmax", name="head")(pooled), name="encoder")


def inputs():
    return np.random.default_rng(3).standard_normal((2, 16, 32)).astype("float32")
