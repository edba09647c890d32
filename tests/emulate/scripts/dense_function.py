"""A MODEL_SCRIPT whose model() is a plain function of TF ops (not Keras): a two-layer MLP."""
import numpy as np
import tensorflow as tf

_RNG = np.random.default_rng(3)
W1 = (_RNG.standard_normal((8, 16)) * 0.3).astype("float32")
B1 = (_RNG.standard_normal(16) * 0.1).astype("float32")
W2 = (_RNG.standard_normal((16, 4)) * 0.3).astype("float32")


def model():
    def forward(x):
        with tf.name_scope("mlp"):
            hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, W1, name="fc1"), B1, name="fc1_bias"), name="relu1")
            logits = tf.matmul(hidden, W2, name="fc2")
            return tf.nn.softmax(logits, name="prob")
    return forward


def inputs():
    return np.random.default_rng(5).standard_normal((4, 8)).astype("float32")
