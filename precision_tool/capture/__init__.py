"""TensorFlow-side capture and NPU emulation: the only code that imports TensorFlow (lazily)."""
