"""Readers and writers of every artifact: Ascend dumps, device layouts, Opdebug overflow records,
GE graph dumps, TensorFlow reference tensors. numpy and protobuf only; never TensorFlow."""
