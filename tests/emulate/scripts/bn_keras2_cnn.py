"""A Keras 2 (``tf_keras``) CNN whose batch norms are FusedBatchNormV3 ops: Conv2D + BN + ReLU (fused by
ConvBatchnormFusionPass), Conv2D with a bias + BN + ReLU6, DepthwiseConv2D + BN + ReLU (BNInfer on its
own: CANN does not merge a 4-parameter batch norm into a depthwise convolution), then pooling and a dense
layer. The batch-norm weights are set from a fixed generator, far from their defaults, so that a batch
norm computed by hand tests something."""
import numpy as np
import tf_keras as keras

EPSILON = 1e-3


def _set_batchnorm_weights(net):
    rng = np.random.default_rng(21)
    for layer in net.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            channels = layer.gamma.shape[0]
            layer.set_weights([rng.uniform(0.5, 1.5, channels).astype("float32"),   # gamma (scale)
                               rng.normal(0.0, 0.2, channels).astype("float32"),    # beta (offset)
                               rng.normal(0.0, 0.3, channels).astype("float32"),    # moving mean
                               rng.uniform(0.5, 2.0, channels).astype("float32")])  # moving variance


def model():
    image = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False, name="conv1")(image)
    x = keras.layers.BatchNormalization(epsilon=EPSILON, name="bn1")(x)
    x = keras.layers.ReLU(name="relu1")(x)
    x = keras.layers.Conv2D(16, 3, padding="same", name="conv2")(x)
    x = keras.layers.BatchNormalization(epsilon=EPSILON, name="bn2")(x)
    x = keras.layers.ReLU(6.0, name="relu2")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw")(x)
    x = keras.layers.BatchNormalization(epsilon=EPSILON, name="bn3")(x)
    x = keras.layers.ReLU(name="relu3")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    x = keras.layers.Dense(10, activation="softmax", name="prob")(x)
    net = keras.Model(image, x, name="k2cnn")
    _set_batchnorm_weights(net)
    return net


def inputs():
    return np.random.default_rng(4).uniform(-1.0, 1.0, (2, 16, 16, 3)).astype("float32")
